/* store_read.h — reading a results file (store.h) back into memory.
 *
 * The writer's data model is reused on the way back: a stored fusion is a
 * tn_fusion_result again (candidates, the default-vs-reference row, error
 * maps, counts), so the modes that read results — the reports, and the
 * reproducer — work on the same structures that `tune --check` printed.
 * What the file holds beyond that (the run's attributes, the fusion's group
 * name) travels beside it.
 *
 * Schema "tune-results" versions TN_STORE_SCHEMA_VERSION_OLDEST to
 * TN_STORE_SCHEMA_VERSION are read (what differs between them is outside
 * what is read here, store.h); a file written by a newer tune is refused
 * with a message that names both versions, rather than half-read.  Reading never modifies the
 * file, and nothing is printed: errors come back in an hlo_error whose
 * message starts with the path.
 */
#ifndef TUNE_STORE_READ_H
#define TUNE_STORE_READ_H

#include "hlo/hlo_error.h"
#include "run/result.h"
#include "store.h"

typedef struct tn_stored_fusion {
  char group[64];        /* the group name under fusions/: "<fp>" or "<fp>-2" */
  tn_fusion_result r;    /* everything the writer stored, error maps included */
} tn_stored_fusion;

typedef struct tn_stored_run {
  tn_run_info info;      /* the run's attributes */
  int nfusions;
  tn_stored_fusion *fusions; /* ordered by source path, then name, then group */
} tn_stored_run;

/* A results file's runs: their attributes only, oldest first (by the
 * started attribute, then by id).  *runs is malloc'd (free() it), *nruns
 * may be 0.  tool_version (may be NULL) receives the file's attribute. */
int tn_results_list_runs(const char *path, tn_run_info **runs, int *nruns, char *tool_version,
                         size_t tool_version_len, hlo_error *err);

/* Reads one whole run: run_id, or the latest run (the last of
 * tn_results_list_runs) when run_id is NULL or "".  An unknown id is an
 * error that lists the ids the file does have.  Free with
 * tn_stored_run_free. */
int tn_results_read_run(const char *path, const char *run_id, tn_stored_run *out, hlo_error *err);

void tn_stored_run_free(tn_stored_run *run);

/* The schema_version of a results file this tune reads (1 or 2), or -1
 * with err. */
int tn_results_schema_version(const char *path, hlo_error *err);

/* The fusion whose name or group name is `key`; NULL when none. */
const tn_stored_fusion *tn_stored_run_find_fusion(const tn_stored_run *run, const char *key);

/* The candidate with id `id` in r, or NULL. */
const tn_cand_result *tn_fusion_result_find_cand(const tn_fusion_result *r, int id);

/* The error map of candidate `id` in r, or NULL. */
const tn_error_map *tn_fusion_result_find_map(const tn_fusion_result *r, int id);

#endif
