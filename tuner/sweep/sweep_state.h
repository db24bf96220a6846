/* sweep_state.h — what a sweep reads back from its results file: a run to
 * resume, the fusions it already holds, and what changed since the
 * previous run.
 *
 * Resuming.  A sweep records, on its run group, the string attributes
 *   sweep_identity  tn_sweep_identity(): corpus, machine, compiler, inputs,
 *                   budgets, seed and shard
 *   sweep_config    the sweep file's path
 *   inputs          the input profile of this run
 *   inputs_rotation the sweep file's profiles, joined by ','
 *   shard           "K/N", or "" for the whole corpus
 * A later sweep with the same identity that finds such a run still
 * "running" (its process was killed: a live one would hold the lock)
 * appends to that run instead of starting a new one, and skips every
 * unit (units.h) the run already has a fusion group for, so a sweep killed
 * in the middle of a module redoes none of that module's finished units.
 * Fusion groups are written atomically (store.h), so a group that exists
 * is complete.
 *
 * The sweep also records slowdown_threshold (the sweep file's value, "%.17g")
 * so that `tune --merge` computes the merged run's changes with it.
 *
 * What changed.  The previous run is the latest other run of the file with
 * the same machine and compiler that started before this one, and with the
 * same input profile when both runs record one (`inputs`; a sweep that
 * rotates profiles compares a day with the last day of its profile, since
 * a finding only one profile's inputs expose would otherwise be "fixed"
 * and "new" again on alternate days).  A finding
 * is a (fusion fingerprint, candidate config) pair with a divergent
 * verdict.  New: a finding of this run that the previous run did not have.
 * Fixed: a finding of the previous run whose fusion and config this run
 * checked again without a divergence.  Slowdown: a fusion in both runs
 * whose default config's simulated time grew by more than the threshold
 * (0.10 = 10%).  Still open: a finding of this run that the previous run
 * had too.  Without a previous run every finding is new.
 */
#ifndef TUNE_SWEEP_STATE_H
#define TUNE_SWEEP_STATE_H

#include <stdint.h>

#include "device/dev_config.h"
#include "hlo/hlo_error.h"
#include "store/store.h"

/* The latest run of path with status "running" and this identity (and,
 * when want_id is not NULL, the id want_id: a sweep given --run-id resumes
 * only its own run, never a killed run of another day): 1 with run_id
 * filled, 0 when none (or no file), -1 with err. */
int tn_sweep_find_resumable(const char *path, const char *identity, const char *want_id, char *run_id, size_t n,
                            hlo_error *err);

/* The attribute `key` of runs/<run_id> as text (a number formatted, so a
 * schema 1 string and a schema 2 number read alike): 1 with buf filled, 0 when
 * the run or the attribute is absent, -1 with err when the file cannot be
 * read. */
int tn_sweep_run_attr(const char *path, const char *run_id, const char *key, char *buf, size_t n, hlo_error *err);

/* The units run_id already holds: (*sources)[i] is the corpus file of unit
 * (*names)[i], its result's name (two malloc'd arrays of *n malloc'd
 * strings; free each with tn_sweep_files_free). */
int tn_sweep_done_units(const char *path, const char *run_id, char ***sources, char ***names, int *n,
                        hlo_error *err);

typedef struct tn_change {
  char fusion[1280];       /* FILE:FUSION: the corpus path as the run saw it
                              and the fusion's name (names alone collide
                              across modules: every module has a "main") */
  uint64_t fingerprint;
  char config[DEV_CONFIG_TEXT_MAX];
  char verdict[32];        /* new: this run's verdict; fixed: the previous one */
  double before, after;    /* slowdowns: default sim_time in the previous and this run */
} tn_change;

typedef struct tn_changes {
  char previous[64];       /* "" when there is no previous run */
  int nnew, nfixed, nslow;
  int nopen;               /* findings of this run the previous run had too
                              (still open); without a previous run, 0 */
  tn_change *news, *fixed, *slow; /* malloc'd */
} tn_changes;

int tn_sweep_changes(const char *path, const char *run_id, double slowdown_threshold, tn_changes *out,
                     hlo_error *err);
void tn_changes_free(tn_changes *c);

/* Stores the changes in the open run's subgroup "changes" (README, "What
 * changed"; store.h: tn_store_set_changes): counts as integers and the
 * lists new, fixed and slowdowns as tables.  Replaces what an earlier call
 * stored, so a run merged shard by shard ends with the changes of all its
 * parts. */
int tn_changes_store(tn_store *s, const tn_changes *ch, double slowdown_threshold, hlo_error *err);

#endif
