/* bench_util.c — shared helpers of the benchmark programs. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID */

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlo/hlo_parse.h"
#include "hlo/hlo_verify.h"

static double seconds(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double bench_now(void) { return seconds(CLOCK_MONOTONIC); }

double bench_cpu_now(void) { return seconds(CLOCK_PROCESS_CPUTIME_ID); }

double bench_thread_cpu_now(void) { return seconds(CLOCK_THREAD_CPUTIME_ID); }

hlo_module *bench_load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return NULL;
  }
  char *text = NULL;
  size_t len = 0, cap = 0, got;
  char chunk[65536];
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + got > cap) {
      cap = (len + got) * 2;
      char *t = realloc(text, cap);
      if (!t) {
        free(text);
        fclose(f);
        return NULL;
      }
      text = t;
    }
    memcpy(text + len, chunk, got);
    len += got;
  }
  fclose(f);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text ? text : "", len, &err);
  free(text);
  if (m && hlo_verify(m, &err) != 0) {
    hlo_module_free(m);
    m = NULL;
  }
  if (!m)
    fprintf(stderr, "%s:%d:%d: error: %s\n", path, err.line, err.col, err.msg);
  return m;
}

void bench_short_name(const char *path, char *out, size_t n) {
  const char *b = strrchr(path, '/');
  snprintf(out, n, "%s", b ? b + 1 : path);
  char *dot = strstr(out, ".hlo");
  if (dot)
    *dot = '\0';
}
