/* bench_util.h — what the benchmark programs share: clocks, loading a
 * verified module, and the short name of a dataset for the report. */
#ifndef TUNE_BENCH_UTIL_H
#define TUNE_BENCH_UTIL_H

#include <stddef.h>

#include "hlo/hlo.h"

/* Monotonic wall-clock seconds. */
double bench_now(void);
/* CPU seconds used by the whole process (every thread). */
double bench_cpu_now(void);
/* CPU seconds used by the calling thread. */
double bench_thread_cpu_now(void);
/* Parses and verifies the HLO text file at path; NULL after printing
 * "path:line:col: error: ..." (or the open error) to stderr. */
hlo_module *bench_load(const char *path);
/* The file's base name without ".hlo", into out (n bytes). */
void bench_short_name(const char *path, char *out, size_t n);

#endif
