/* bench_hbm.c — the device's HBM buffers for a big operand, allocated and
 * written once per candidate as a sweep does (dev_hbm.h), against the same
 * bytes taken with plain malloc and calloc, written the same way and freed,
 * in the same run.  Prints, for each, the minor page faults per MiB and the
 * CPU seconds (kernel time included: faulting pages in is the cost).
 *
 *   bench_hbm [MIB] [REPEATS]     default 256 MiB of f32, 4 repeats
 */
#define _DEFAULT_SOURCE /* getrusage's ru_minflt */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "device/dev_hbm.h"

/* Tells the compiler the buffer is read: without it, stores into a block
 * that is then freed may be dropped, and the plain side measured nothing. */
static void keep(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* What dev_hbm_alloc did before it asked for huge pages: the data with
 * its redzones from malloc, the shadow from calloc, then the poison
 * written over both (dev_hbm_poison's pattern and shadow). */
static int plain_round(int64_t count) {
  size_t bytes = (size_t)count * 4;
  uint8_t *raw = malloc(bytes + 2 * DEV_REDZONE);
  uint8_t *shadow = calloc((size_t)count, 1);
  if (!raw || !shadow) {
    free(raw);
    free(shadow);
    return -1;
  }
  uint32_t *d = (uint32_t *)(void *)(raw + DEV_REDZONE);
  for (int64_t i = 0; i < count; i++)
    d[i] = 0x7FA5A5A5u;
  memset(shadow, 1, (size_t)count);
  keep(raw);
  keep(shadow);
  free(raw);
  free(shadow);
  return 0;
}

static int hbm_round(int64_t count) {
  dev_hbm b;
  int64_t dims[1] = {count};
  if (dev_hbm_alloc(&b, "param 0", HLO_F32, 1, dims) != 0)
    return -1;
  dev_hbm_poison(&b);
  keep(b.raw);
  keep(b.shadow);
  dev_hbm_free(&b);
  return 0;
}

int main(int argc, char **argv) {
  long mib = argc > 1 ? atol(argv[1]) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 4;
  if (mib <= 0 || reps <= 0) {
    fprintf(stderr, "usage: bench_hbm [MIB] [REPEATS]\n");
    return 2;
  }
  int64_t count = (int64_t)mib * (1 << 20) / 4;
  /* Alternated, so that a change in the machine's load hits both. */
  double cpu[2] = {0, 0};
  long faults[2] = {0, 0};
  for (int r = 0; r < reps; r++)
    for (int which = 0; which < 2; which++) {
      long f0 = minor_faults();
      double c0 = bench_cpu_now();
      int rc = which ? hbm_round(count) : plain_round(count);
      cpu[which] += bench_cpu_now() - c0;
      faults[which] += minor_faults() - f0;
      if (rc != 0) {
        fprintf(stderr, "bench_hbm: out of memory\n");
        return 1;
      }
    }
  double per = (double)mib * reps;
  printf("hbm mib=%ld repeats=%d plain_faults_per_mib=%.1f hbm_faults_per_mib=%.1f plain_cpu_s=%.3f hbm_cpu_s=%.3f "
         "ratio=%.2f\n",
         mib, reps, faults[0] / per, faults[1] / per, cpu[0], cpu[1], cpu[1] > 0 ? cpu[0] / cpu[1] : 0.0);
  return 0;
}
