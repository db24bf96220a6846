/* bench_eval.c — reference evaluator throughput, next to copy bandwidth.
 *
 * Usage: bench_eval [REPS [CASES]]   (REPS timed runs per case, default 5;
 *                                   CASES a subset of "abc", default all)
 *
 * Three cases, each an HLO module built here as text, parsed, given seeded
 * inputs (chk_inputs_make, seed 0) and evaluated through chk_eval_module, so
 * the figure is what `tune --eval` pays, output allocation included:
 *   a  a 16M-element f32 elementwise chain of 8 ops with broadcast scalar
 *      constants, inside a kLoop fusion as XLA writes it (memory bound:
 *      64 MB read, 64 MB written)
 *   b  a row reduction f32[4096,4096] -> f32[4096] with an add reducer
 *      (memory bound: 64 MB read)
 *   c  a dot f32[1024,1024] x f32[1024,1024] (compute bound: 2^31 flops)
 * Each case runs once to warm up (page faults, thread start) and then REPS
 * times; the best time is reported, which on a shared machine is the figure
 * least disturbed by neighbours.
 *
 * The peer is memcpy of a 256 MB buffer measured in the same run, counted as
 * read + written bytes like the cases are.  Lines are `key=value` so that
 * tests/bench/run.sh can compare them with tests/bench/bench_eval_numpy.py:
 *   copy          rate=GB/s
 *   eval a        time_s=... rate=GB/s copy_frac=...
 *   eval b        time_s=... rate=GB/s copy_frac=...
 *   eval c        time_s=... rate=GFLOP/s
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Best of reps memcpy's of a 256 MB buffer, in GB/s of read + written bytes.
 * Both buffers are written first so page faults stay out of the timing. */
static double copy_bandwidth(int reps) {
  size_t n = (size_t)256 << 20;
  char *src = malloc(n), *dst = malloc(n);
  if (!src || !dst) {
    free(src);
    free(dst);
    return 0;
  }
  memset(src, 1, n);
  memset(dst, 2, n);
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    double t0 = now();
    memcpy(dst, src, n);
    double t = now() - t0;
    if (r > 0 && t < best)
      best = t;
    src[r] = dst[n - 1 - (size_t)r]; /* keep the copies observable */
  }
  free(src);
  free(dst);
  return 2.0 * (double)n / best / 1e9;
}

/* ---- the modules ---------------------------------------------------------- */

static const char chain_hlo[] =
    "HloModule bench_chain\n\n"
    "fused_chain {\n"
    "  x = f32[16777216]{0} parameter(0)\n"
    "  c0 = f32[] constant(1.0001)\n"
    "  b0 = f32[16777216]{0} broadcast(c0), dimensions={}\n"
    "  v0 = f32[16777216]{0} multiply(x, b0)\n"
    "  c1 = f32[] constant(0.5)\n"
    "  b1 = f32[16777216]{0} broadcast(c1), dimensions={}\n"
    "  v1 = f32[16777216]{0} add(v0, b1)\n"
    "  c2 = f32[] constant(-0.75)\n"
    "  b2 = f32[16777216]{0} broadcast(c2), dimensions={}\n"
    "  v2 = f32[16777216]{0} maximum(v1, b2)\n"
    "  c3 = f32[] constant(0.25)\n"
    "  b3 = f32[16777216]{0} broadcast(c3), dimensions={}\n"
    "  v3 = f32[16777216]{0} subtract(v2, b3)\n"
    "  c4 = f32[] constant(0.999)\n"
    "  b4 = f32[16777216]{0} broadcast(c4), dimensions={}\n"
    "  v4 = f32[16777216]{0} multiply(v3, b4)\n"
    "  c5 = f32[] constant(0.125)\n"
    "  b5 = f32[16777216]{0} broadcast(c5), dimensions={}\n"
    "  v5 = f32[16777216]{0} add(v4, b5)\n"
    "  c6 = f32[] constant(2)\n"
    "  b6 = f32[16777216]{0} broadcast(c6), dimensions={}\n"
    "  v6 = f32[16777216]{0} minimum(v5, b6)\n"
    "  c7 = f32[] constant(0.5)\n"
    "  b7 = f32[16777216]{0} broadcast(c7), dimensions={}\n"
    "  ROOT v7 = f32[16777216]{0} multiply(v6, b7)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  p = f32[16777216]{0} parameter(0)\n"
    "  ROOT f = f32[16777216]{0} fusion(p), kind=kLoop, calls=fused_chain\n"
    "}\n";

static const char reduce_hlo[] =
    "HloModule bench_row_reduce\n\n"
    "add_f32 {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  p = f32[4096,4096]{1,0} parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  ROOT r = f32[4096]{0} reduce(p, z), dimensions={1}, to_apply=add_f32\n"
    "}\n";

static const char dot_hlo[] =
    "HloModule bench_dot\n\n"
    "ENTRY main {\n"
    "  a = f32[1024,1024]{1,0} parameter(0)\n"
    "  b = f32[1024,1024]{1,0} parameter(1)\n"
    "  ROOT d = f32[1024,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

/* Parses text, makes inputs, evaluates once to warm up and then reps times;
 * returns the best time in seconds, or a negative value after printing the
 * error. */
static double bench(const char *what, const char *text, int reps) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m) {
    fprintf(stderr, "bench_eval: %s: parse %d:%d: %s\n", what, err.line, err.col, err.msg);
    return -1;
  }
  int nargs = m->entry->nparams;
  hlo_value *args[2] = {NULL, NULL};
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_NAIVE};
  double best = -1;
  if (chk_inputs_make(m, &io, args, &err) != 0) {
    fprintf(stderr, "bench_eval: %s: inputs: %s\n", what, err.msg);
    goto done;
  }
  chk_eval_opts eo = {.replicas = 1};
  best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    hlo_value *out = NULL;
    double t0 = now();
    int rc = chk_eval_module(m, nargs, args, &eo, &out, &err);
    double t = now() - t0;
    hlo_value_unref(out);
    if (rc != 0) {
      fprintf(stderr, "bench_eval: %s: %d:%d: %s\n", what, err.line, err.col, err.msg);
      best = -1;
      break;
    }
    if (r > 0 && t < best)
      best = t;
  }
done:
  for (int k = 0; k < nargs; k++)
    hlo_value_unref(args[k]);
  hlo_module_free(m);
  return best;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1)
    reps = 1;
  double copy = copy_bandwidth(reps);
  printf("copy   rate=%.2f GB/s (memcpy of 256 MB, read + written, best of %d)\n", copy, reps);

  const char *cases = argc > 2 ? argv[2] : "abc";
  const double n_a = 16777216.0, n_b = 4096.0 * 4096.0, n_c = 1024.0;
  int status = 0;
  /* a reads and writes 16M f32; b reads 16M f32 and writes 4096. */
  if (strchr(cases, 'a')) {
    double t = bench("a", chain_hlo, reps), r = 2 * 4 * n_a / t / 1e9;
    if (t < 0)
      status = 1;
    else
      printf("eval a time_s=%.6f rate=%.2f GB/s copy_frac=%.3f  (f32[16M] chain of 8 elementwise ops)\n", t, r,
             r / copy);
  }
  if (strchr(cases, 'b')) {
    double t = bench("b", reduce_hlo, reps), r = 4 * (n_b + 4096) / t / 1e9;
    if (t < 0)
      status = 1;
    else
      printf("eval b time_s=%.6f rate=%.2f GB/s copy_frac=%.3f  (row reduce f32[4096,4096] -> [4096])\n", t, r,
             r / copy);
  }
  if (strchr(cases, 'c')) {
    double t = bench("c", dot_hlo, reps);
    if (t < 0)
      status = 1;
    else
      printf("eval c time_s=%.6f rate=%.2f GFLOP/s  (dot f32[1024,1024] x f32[1024,1024])\n", t,
             2 * n_c * n_c * n_c / t / 1e9);
  }
  return status;
}
