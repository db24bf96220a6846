/* store.h — the results file: runs, fusions and candidates in HDF5.
 *
 * One file holds many runs (README "HDF5 results schema" documents every
 * attribute and column; schema_version 2):
 *
 *   /                         attrs schema="tune-results", schema_version,
 *                                   tool_version
 *   /runs/<run-id>/           attrs started, finished, status, command,
 *                                   machine, compiler, compiler_profile,
 *                                   defects (a list), seed, host, and
 *                                   `attributes`: what each one means
 *     changes/                what changed since the previous run: counts
 *                             as integers, and the tables new, fixed and
 *                             slowdowns
 *     fusions/<fp>/           <fp>: 16 hex digits of the fusion's fingerprint
 *                             attrs name, source, hero, seed, fingerprint,
 *                                   ncandidates, default_config, default_ran,
 *                                   default_vs_reference_ok, best_config,
 *                                   best_speedup, wall_time, count_<verdict>
 *       hlo                   string dataset: the module's canonical text
 *       candidates            compound table, one row per candidate: id,
 *                             config text, one column per knob, status,
 *                             verdict, sim_time, wall_time, speedup, the
 *                             tolerance, and every metric of compare.h
 *                             (vs the default, and vs the reference)
 *       reference             one-row compound: default-vs-reference metrics
 *       errors/<cand-id>      error maps of the worst divergent candidates
 *                             (f32, chunked, gzip-compressed)
 *
 * Crash safety: a writer never modifies the live file in place.  Each
 * call below (begin, add, end) reads the file into memory, appends there,
 * writes the result to a temporary in the same folder, fsyncs it and
 * renames it over the original.  A failed write (a full disk) is an error
 * that leaves the original untouched.  A process killed at any moment therefore
 * leaves either the previous complete file or the new complete file, never
 * a half-written one, and every fusion already added survives.
 */
#ifndef TUNE_STORE_H
#define TUNE_STORE_H

#include <stdint.h>

#include "hlo/hlo_error.h"
#include "run/result.h"

#define TN_STORE_SCHEMA "tune-results"
/* Version 2 (issue 18): run attributes carry descriptions, numbers are
 * numbers (slowdown_threshold, cover_seed, the changes' counts), lists are
 * lists (defects, the changes' tables).  Readers read versions 1 and 2;
 * the writer appends only to a version 2 file (a version 1 file is
 * refused with a message saying how to carry it over: --merge). */
#define TN_STORE_SCHEMA_VERSION 2
#define TN_STORE_SCHEMA_VERSION_OLDEST 1

typedef struct tn_run_info {
  char id[64];          /* e.g. "20261129T081500Z-1234"; made unique in the file */
  char started[32];     /* ISO 8601 UTC */
  int64_t created_ns;   /* when the run was made in this file (ns since the
                           epoch); 0 in a file written before it was kept */
  char finished[32];    /* "" until the run finishes */
  char status[16];      /* "running", "complete", "interrupted" */
  char command[1024];
  char machine[64];
  char compiler[64];
  uint64_t seed;
  char host[128];
  /* Every modelled defect of the run's device, the profile's and
   * --defect's (a bit per dev_defect), stored as the list `defects`.
   * defects_known is 0 for a run read from a schema 1 file, which
   * recorded them only inside `command`: such a run is written back
   * without the list rather than with a guessed one. */
  uint32_t defects;
  int defects_known;
  /* The names in `defects` that this tune does not model (a newer tune
   * wrote them), joined by ", "; "" when none.  A report shows the run and
   * names them; whatever must rebuild the run's device or write the run
   * back (--reproduce, tn_store_begin_run, tn_store_reopen_run) refuses
   * it rather than drop them. */
  char defects_unknown[256];
} tn_run_info;

typedef struct tn_store tn_store; /* an open results file (path + run) */

/* Opens PATH for appending a new run (creating the file when absent) and
 * records the run group with status "running" (or the status the caller
 * put in run->status).  The caller fills command, machine, compiler and
 * seed; this fills started, status when empty, and host, and the
 * id (time and pid unless the caller set one; a -2, -3... suffix keeps it
 * unique in the file).  NULL with err; the file is then left as it was. */
tn_store *tn_store_begin_run(const char *path, tn_run_info *run, hlo_error *err);
/* The same, for a run that is all or nothing (`tune --check -o`): the file
 * as it was is kept under a second name (a hard link, so it costs no
 * space) until the run ends, so that tn_store_undo can put it back. */
tn_store *tn_store_begin_run_undoable(const char *path, tn_run_info *run, hlo_error *err);
/* Puts the file of an undoable run back as it was before the run began
 * (removes it when the run created it) and frees s.  For when a write
 * failed: a full disk leaves the old file, not a half-recorded run. */
int tn_store_undo(tn_store *s, hlo_error *err);
/* Appends one fusion's results to the run, atomically (see above). */
int tn_store_add_fusion(tn_store *s, const tn_fusion_result *r, hlo_error *err);
/* Marks the run finished with the given status and closes (s is freed
 * whether or not the marking succeeds; an undoable run whose marking
 * fails is undone). */
int tn_store_end_run(tn_store *s, const char *status, hlo_error *err);
/* Closes without marking (the run stays "running"); NULL is fine. */
void tn_store_close(tn_store *s);

/* ---- sweeps (issue 7): resuming, merging, what changed ---------------- */

/* Opens an existing run of PATH for appending more fusions (a sweep that
 * resumes after being killed, or a merge into a run of the same id).
 * run receives the run's attributes.  NULL with err when absent. */
tn_store *tn_store_reopen_run(const char *path, const char *run_id, tn_run_info *run, hlo_error *err);
/* Sets string attributes keys[i] = values[i] (replacing existing ones) on
 * the run group, or on its subgroup `sub` (created when absent) when sub
 * is not NULL, in one atomic step like every other write. */
int tn_store_set_run_attrs(tn_store *s, const char *sub, int n, const char *const *keys,
                           const char *const *values, hlo_error *err);

/* One typed attribute for tn_store_set_run_values: a number is stored as
 * a number, so that h5py reads it as one. */
typedef enum tn_store_kind { TN_STORE_STR, TN_STORE_I64, TN_STORE_U64, TN_STORE_F64 } tn_store_kind;
typedef struct tn_store_value {
  const char *key;
  tn_store_kind kind;
  const char *s;
  int64_t i;
  uint64_t u;
  double f;
} tn_store_value;
/* As tn_store_set_run_attrs, with typed values. */
int tn_store_set_run_values(tn_store *s, const char *sub, int n, const tn_store_value *values, hlo_error *err);

/* One finding or slowdown of "what changed" (sweep_state.h). */
typedef struct tn_store_change {
  uint64_t fingerprint;
  const char *unit;    /* FILE:FUSION */
  const char *config;
  const char *verdict; /* new: this run's; fixed: the previous run's */
  double before, after; /* slowdowns: the default's sim_time, seconds */
} tn_store_change;
typedef struct tn_store_changes {
  const char *previous_run; /* "" when none */
  double slowdown_threshold;
  int64_t nopen;
  int nnew, nfixed, nslow;
  const tn_store_change *news, *fixed, *slow;
} tn_store_changes;
/* Replaces the run's group `changes`: attributes previous_run,
 * slowdown_threshold (f64), count_new, count_fixed, count_slowdowns,
 * count_open (int64), and the compound tables new, fixed (fingerprint,
 * unit, config, verdict) and slowdowns (fingerprint, unit, config, before,
 * after), each with its `columns` description; one atomic step. */
int tn_store_set_changes(tn_store *s, const tn_store_changes *c, hlo_error *err);
/* The run's attributes as they are now (id, status...). */
const tn_run_info *tn_store_run(const tn_store *s);

#endif
