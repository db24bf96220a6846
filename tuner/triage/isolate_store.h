/* isolate_store.h — `tune --isolate -o RESULTS.h5`: an isolation
 * (isolate.h) stored as a new run of a results file (store_isolate.h), so
 * that `tune --report` can render it. */
#ifndef TUNE_ISOLATE_STORE_H
#define TUNE_ISOLATE_STORE_H

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "isolate.h"
#include "store/store.h"

/* What the run records besides the isolation (store.h). */
typedef struct tn_iso_store_run {
  const char *command;
  const char *machine, *compiler;
  uint32_t defects;
  uint64_t seed;
  const char *source;   /* the module file as named */
  const char *inputs;   /* --inputs, or NULL */
} tn_iso_store_run;

/* Appends r (the isolation of m) to the results file at path as one new,
 * complete run.  0, or -1 with err; the file is then as it was. */
int tn_iso_store(const char *path, const hlo_module *m, const tn_iso_result *r, const tn_iso_store_run *run,
                 hlo_error *err);

#endif
