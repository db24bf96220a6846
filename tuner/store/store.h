/* store.h — the results file: runs, fusions and candidates in HDF5.
 *
 * One file holds many runs (README "HDF5 results schema" documents every
 * attribute and column; schema_version 1):
 *
 *   /                         attrs schema="tune-results", schema_version,
 *                                   tool_version
 *   /runs/<run-id>/           attrs started, finished, status, command,
 *                                   machine, compiler, seed, host
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

#include "hlo_error.h"
#include "result.h"

#define TN_STORE_SCHEMA "tune-results"
#define TN_STORE_SCHEMA_VERSION 1

typedef struct tn_run_info {
  char id[64];          /* e.g. "20261129T081500Z-1234"; made unique in the file */
  char started[32];     /* ISO 8601 UTC */
  char finished[32];    /* "" until the run finishes */
  char status[16];      /* "running", "complete", "interrupted" */
  char command[1024];
  char machine[64];
  char compiler[64];
  uint64_t seed;
  char host[128];
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
/* The run's attributes as they are now (id, status...). */
const tn_run_info *tn_store_run(const tn_store *s);

#endif
