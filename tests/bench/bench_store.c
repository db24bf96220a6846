/* bench_store.c — appending one fusion to a results file that is empty
 * against one that already holds a gigabyte (issue 14 item 5).
 *
 *   bench_store DIR [MB]
 *
 * The fusion is the store tests' hand-made result with its 300x400 error
 * map filled with noise (so that no compression makes it small): about
 * half a megabyte per fusion.  The big file is grown to MB megabytes
 * (default 1024) by appending such fusions through the same store, in
 * place.  Printed: the median wall and CPU time of 15 appends to each
 * file, made in turn, their ratio (target: at most 2), and, as the previous version's
 * figure, one append to the big file by copy-and-rename.  While the big
 * file grows, the CPU of its first and last 100 appends are compared
 * (the allocator's policy, heap_policy.h, is what keeps them equal);
 * --default-heap leaves glibc's default policy, to show the difference.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "cli/heap_policy.h"
#include "result_fixture.h"
#include "store/store.h"

enum { APPENDS = 15 };

static double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void make_fusion(tn_fusion_result *r, uint64_t fp) {
  rfx_result(r, "fused_thing", "datasets/thing.hlo", "reduce", RFX_THING_HLO, fp, 2);
  rfx_cand(&r->cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH);
  rfx_cand(&r->cands[1], 1, RFX_DIVERGENT_CONFIG, CHK_VERDICT_MISMATCH_CANDIDATE);
  rfx_divergent(&r->cands[1]);
  tn_error_map *e = rfx_error_map(r, 1);
  uint32_t x = (uint32_t)fp * 2654435761u + 1;
  for (int i = 0; i < 300 * 400; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    e->data[i] = (float)(x >> 8) * 0x1p-24f;
  }
}

static tn_store *begin(const char *path) {
  hlo_error err = {0};
  tn_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.command, sizeof run.command, "bench_store");
  snprintf(run.machine, sizeof run.machine, "tpu-v5e");
  snprintf(run.compiler, sizeof run.compiler, "stable");
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s) {
    fprintf(stderr, "bench_store: %s\n", err.msg);
    exit(1);
  }
  return s;
}

static void add(tn_store *s, uint64_t fp) {
  hlo_error err = {0};
  tn_fusion_result r;
  make_fusion(&r, fp);
  if (tn_store_add_fusion(s, &r, &err) != 0) {
    fprintf(stderr, "bench_store: %s\n", err.msg);
    exit(1);
  }
  tn_fusion_result_free(&r);
}

/* Times one append to s. */
static void time_append(tn_store *s, uint64_t fp, double *wall, double *cpu) {
  double w0 = wall_now(), c0 = cpu_now();
  add(s, fp);
  *wall = wall_now() - w0;
  *cpu = cpu_now() - c0;
}

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_store DIR [MB]\n");
    return 2;
  }
  long mb = argc > 2 ? atol(argv[2]) : 1024;
  bool default_heap = argc > 3 && strcmp(argv[3], "--default-heap") == 0;
  if (!default_heap)
    tn_heap_policy_setup(); /* as tune does */
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  char small[4096], big[4096];
  snprintf(small, sizeof small, "%s/bench-store-empty.h5", argv[1]);
  snprintf(big, sizeof big, "%s/bench-store-big.h5", argv[1]);
  unlink(small);
  unlink(big);

  tn_store *big_s = begin(big);
  double g0 = wall_now();
  uint64_t fp = 1000000;
  /* CPU of each block of 100 appends while growing: the first block and
   * the last whole one. */
  double block0 = 0, block_last = 0, c_block = cpu_now();
  int blocks = 0;
  while (file_size(big) < mb * 1024 * 1024) {
    add(big_s, fp++);
    if ((fp - 1000000) % 100 == 0) {
      double c = cpu_now();
      block_last = c - c_block;
      if (blocks++ == 0)
        block0 = block_last;
      c_block = c;
    }
  }
  double grow = wall_now() - g0;

  /* The two files' appends alternate, so that both meet the same
   * machine (and the same state of this process's allocator). */
  tn_store *small_s = begin(small);
  add(small_s, 1); /* the run's first fusion group */
  double ws[APPENDS], cs[APPENDS], wb[APPENDS], cb[APPENDS];
  for (int i = 0; i < APPENDS; i++) {
    time_append(small_s, 100 + (uint64_t)i, &ws[i], &cs[i]);
    time_append(big_s, 100 + (uint64_t)i, &wb[i], &cb[i]);
  }
  tn_store_close(small_s);
  tn_store_close(big_s);
  double w_small = median(ws, APPENDS), c_small = median(cs, APPENDS);
  double w_big = median(wb, APPENDS), c_big = median(cb, APPENDS);
  long long bytes = file_size(big);
  printf("store: grew a results file to %.0f MB with %llu fusions in %.1f s (%.1f MB/s through the store)\n",
         (double)bytes / 1048576.0, (unsigned long long)(fp - 1000000), grow, (double)bytes / 1048576.0 / grow);
  if (blocks >= 2)
    printf("store growing (%s heap policy): cpu per append, appends 1-100 %.2f ms, %d01-%d00 %.2f ms: %.2fx\n",
           default_heap ? "glibc's default" : "tune's", 10 * block0, blocks - 1, blocks, 10 * block_last,
           block_last / block0);
  printf("store append empty: wall %.2f ms, cpu %.2f ms (median of %d)\n", 1e3 * w_small, 1e3 * c_small, APPENDS);
  printf("store append %.0fMB: wall %.2f ms, cpu %.2f ms (median of %d)\n", (double)bytes / 1048576.0, 1e3 * w_big,
         1e3 * c_big, APPENDS);
  printf("store append big/empty: wall %.2fx, cpu %.2fx; target <= 2x: %s\n", w_big / w_small, c_big / c_small,
         w_big / w_small <= 2.0 ? "met" : "NOT met");

  /* The previous version's way, one append, for scale. */
  setenv("TUNE_TEST_STORE_BY_COPY", "1", 1);
  tn_store *s = begin(big);
  double w0 = wall_now(), c0 = cpu_now();
  add(s, 5);
  double w_copy = wall_now() - w0, c_copy = cpu_now() - c0;
  tn_store_close(s);
  printf("store append %.0fMB by copy (before this change): wall %.2f ms, cpu %.2f ms: %.0fx the in-place append\n",
         (double)bytes / 1048576.0, 1e3 * w_copy, 1e3 * c_copy, w_copy / w_big);
  unlink(small);
  unlink(big);
  return 0;
}
