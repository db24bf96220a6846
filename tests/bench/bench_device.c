/* bench_device.c — what simulating one candidate costs, next to evaluating
 * the same fusion with the reference evaluator.
 *
 * Usage: bench_device REPS {FILE.hlo | --dot N}...
 *
 * For each fusion: parse and verify it, synthesise the seeded inputs the
 * sweep would (seed 0), then time
 *   sim   one run of the default config on the built-in simulated device
 *         (dev_sim_backend()->run: the launch and the tiled executor, with
 *         redzones, poison and device numerics), compile excluded because
 *         a sweep compiles each candidate once and the target is
 *         about the run;
 *   eval  chk_eval_module with device emulation, exactly the reference
 *         evaluation a sweep does once per fusion, with OpenMP's default
 *         thread count (what tune pays) and with one thread (eval1).
 * A sweep runs one candidate per thread, so one simulated run on one thread
 * against one evaluation on one thread is the like-for-like ratio; the
 * all-threads ratio is printed next to it.
 * Each side runs once to warm up and then REPS times; the best time is kept
 * (the figure least disturbed by neighbours on a shared machine).  The two
 * outputs are compared bitwise-or-within-tolerance by the sweep, not here:
 * this only checks that the run succeeded, so the time is of real work.
 *
 * Besides, plain1 is one plain reference evaluation (no device emulation)
 * on one thread: issue 15's yardstick, what checking would cost if the
 * simulator ran at evaluator speed.  Both sides of that ratio run on the
 * calling thread, so it is taken from that thread's CPU time (best of
 * REPS), which neighbours on a loaded machine distort far less than wall
 * time.
 *
 * Output, one line per fusion, `key=value` for tests/bench/run.sh:
 *   device NAME hero=H elements=N compile_s=... sim_s=... eval_s=... eval1_s=...
 *          plain1_s=... ratio=... ratio1=... ratio_plain=...
 * where ratio = sim_s / eval_s, ratio1 = sim_s / eval1_s (issue 4's
 * target: at most 3) and ratio_plain = sim_s / plain1_s (issue 15's: at
 * most 2, from CPU times).
 *
 * With `--dot N` as the file, an f32 dot [N,N]x[N,N] built here is timed
 * the same way and the line is
 *   dotflops N=N sim_gflops=... plain1_gflops=... frac=...
 * with 2N^3 flops per run (rates from CPU times) and frac = sim / plain
 * (issue 15's target: at least 0.5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "run/backend_host.h"
#include "bench_util.h"
#include "cli/heap_policy.h"
#include "device/dev_backend.h"
#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_verify.h"
#include "check/inputs.h"

/* Best of reps reference evaluations (after one warm-up) with `threads`
 * OpenMP threads (0: the default); -1 with err on failure. */
static double best_eval(const hlo_module *m, int nargs, hlo_value *const *args, int reps, int threads, int emulate,
                        double *cpu_best, hlo_error *err) {
#ifdef _OPENMP
  int saved = omp_get_max_threads();
  if (threads > 0)
    omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  chk_eval_opts eo = {.replicas = 1, .emulate_device = emulate};
  double best = 1e30, cbest = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    hlo_value *out = NULL;
    double t0 = bench_now(), c0 = bench_thread_cpu_now();
    int rc = chk_eval_module(m, nargs, args, &eo, &out, err);
    double t = bench_now() - t0, c = bench_thread_cpu_now() - c0;
    if (r > 0 && c < cbest)
      cbest = c;
    hlo_value_unref(out);
    if (rc != 0) {
      best = -1;
      break;
    }
    if (r > 0 && t < best)
      best = t;
  }
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  if (cpu_best)
    *cpu_best = cbest;
  return best;
}

/* An f32 dot [n,n] x [n,n] as a module, parsed and verified; NULL after
 * printing the error. */
static hlo_module *dot_module(int n) {
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule bench_dot\n\n"
           "ENTRY main {\n"
           "  a = f32[%d,%d]{1,0} parameter(0)\n"
           "  b = f32[%d,%d]{1,0} parameter(1)\n"
           "  ROOT d = f32[%d,%d]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
           "}\n",
           n, n, n, n, n, n);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (m && hlo_verify(m, &err) != 0) {
    hlo_module_free(m);
    m = NULL;
  }
  if (!m)
    fprintf(stderr, "bench_device: --dot %d: %d:%d: %s\n", n, err.line, err.col, err.msg);
  return m;
}

/* path is a file, or "--dot" with the size in dot_n (> 0). */
static int bench_one(const char *path, int dot_n, int reps, const dev_machine *mach) {
  hlo_module *m = dot_n > 0 ? dot_module(dot_n) : bench_load(path);
  if (!m)
    return -1;
  char name[128];
  if (dot_n > 0)
    snprintf(name, sizeof name, "dot%d", dot_n);
  else
    bench_short_name(path, name, sizeof name);
  int rc = -1;
  hlo_error err = {0};
  dev_fusion f;
  dev_config *cands = NULL, dflt;
  int ncands = 0;
  dev_kernel *k = NULL;
  const dev_backend *be = dev_sim_backend();
  int nargs = m->entry->nparams;
  hlo_value **args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_NAIVE};
  if (!args || dev_fusion_analyze(m, &f, &err) != 0 || chk_inputs_make(m, &io, args, &err) != 0 ||
      be->space(&f, mach, &cands, &ncands, &dflt, &err) != 0) {
    fprintf(stderr, "bench_device: %s: %s\n", name, err.msg);
    goto done;
  }
  f.host = tn_backend_host();

  char why[512] = "";
  double t0 = bench_now();
  if (be->compile(&f, &dflt, mach, NULL, &k, why, sizeof why) != DEV_OK) {
    fprintf(stderr, "bench_device: %s: the default does not compile: %s\n", name, why);
    goto done;
  }
  double compile_s = bench_now() - t0;

  double sim = 1e30, sim_cpu = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    dev_run run;
    memset(&run, 0, sizeof run);
    t0 = bench_now();
    double c0 = bench_thread_cpu_now();
    be->run(k, args, nargs, (uint64_t)r, &run);
    double t = bench_now() - t0, c = bench_thread_cpu_now() - c0;
    if (r > 0 && c < sim_cpu)
      sim_cpu = c;
    hlo_value_unref(run.out);
    if (run.status != DEV_OK) {
      fprintf(stderr, "bench_device: %s: the default fails: %s\n", name, run.message);
      goto done;
    }
    if (r > 0 && t < sim)
      sim = t;
  }

  double plain1_cpu = 0, eval = -1, eval1 = -1, plain1 = best_eval(m, nargs, args, reps, 1, 0, &plain1_cpu, &err);
  if (plain1 >= 0 && dot_n > 0) {
    double flops = 2.0 * dot_n * (double)dot_n * dot_n;
    printf("dotflops N=%d sim_s=%.6f plain1_s=%.6f sim_cpu_s=%.6f plain1_cpu_s=%.6f sim_gflops=%.3f plain1_gflops=%.3f "
           "frac=%.3f\n",
           dot_n, sim, plain1, sim_cpu, plain1_cpu, flops / sim_cpu / 1e9, flops / plain1_cpu / 1e9, plain1_cpu / sim_cpu);
    fflush(stdout);
    rc = 0;
    goto done;
  }
  if (plain1 >= 0)
    eval = best_eval(m, nargs, args, reps, 0, 1, NULL, &err);
  if (eval >= 0)
    eval1 = best_eval(m, nargs, args, reps, 1, 1, NULL, &err);
  if (plain1 < 0 || eval < 0 || eval1 < 0) {
    fprintf(stderr, "bench_device: %s: %d:%d: %s\n", name, err.line, err.col, err.msg);
    goto done;
  }

  int64_t elems = 1;
  for (int d = 0; d < f.rank; d++)
    elems *= f.dims[d];
  char cfg[DEV_CONFIG_TEXT_MAX];
  dev_config_print(&dflt, cfg, sizeof cfg);
  printf("device %-20s hero=%-6s elements=%-7lld compile_s=%.6f sim_s=%.6f eval_s=%.6f eval1_s=%.6f plain1_s=%.6f "
         "sim_cpu_s=%.6f plain1_cpu_s=%.6f ratio=%.2f ratio1=%.2f ratio_plain=%.2f  (default %s)\n",
         name, dev_hero_name(f.kind), (long long)elems, compile_s, sim, eval, eval1, plain1, sim_cpu, plain1_cpu,
         sim / eval, sim / eval1, sim_cpu / plain1_cpu, cfg);
  fflush(stdout);
  rc = 0;
done:
  if (k)
    be->release(k);
  free(cands);
  for (int i = 0; args && i < nargs; i++)
    hlo_value_unref(args[i]);
  free(args);
  hlo_module_free(m);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_device REPS {FILE.hlo | --dot N}...\n");
    return 2;
  }
  /* the allocator's policy as tune sets it first thing (heap_policy.h):
   * without it glibc hands a run's freed buffers back to the kernel and
   * the next run faults them in again, a cost tune never pays */
  tn_heap_policy_setup();
  int reps = atoi(argv[1]);
  if (reps < 1)
    reps = 1;
  dev_machine mach;
  hlo_error err = {0};
  if (dev_machine_find("tpu-v5e", &mach, &err) != 0) {
    fprintf(stderr, "bench_device: %s\n", err.msg);
    return 2;
  }
  hlo_opcode_from_name("add", 3); /* build the opcode table once, outside the timings */
  int status = 0;
  for (int i = 2; i < argc; i++) {
    int dot_n = 0;
    if (strcmp(argv[i], "--dot") == 0) {
      dot_n = i + 1 < argc ? atoi(argv[++i]) : 0;
      if (dot_n <= 0) {
        fprintf(stderr, "bench_device: --dot wants a size\n");
        return 2;
      }
    }
    if (bench_one(argv[i], dot_n, reps, &mach) != 0)
      status = 1;
  }
  return status;
}
