/* bench_device.c — what simulating one candidate costs, next to evaluating
 * the same fusion with the reference evaluator.
 *
 * Usage: bench_device REPS FILE.hlo...
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
 * Output, one line per fusion, `key=value` for tests/bench/run.sh:
 *   device NAME hero=H elements=N compile_s=... sim_s=... eval_s=... eval1_s=...
 *          ratio=... ratio1=...
 * where ratio = sim_s / eval_s and ratio1 = sim_s / eval1_s (issue 4's
 * target: at most 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_util.h"
#include "dev_backend.h"
#include "eval.h"
#include "inputs.h"

/* Best of reps reference evaluations (after one warm-up) with `threads`
 * OpenMP threads (0: the default); -1 with err on failure. */
static double best_eval(const hlo_module *m, int nargs, hlo_value *const *args, int reps, int threads,
                        hlo_error *err) {
#ifdef _OPENMP
  int saved = omp_get_max_threads();
  if (threads > 0)
    omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  chk_eval_opts eo = {.replicas = 1, .emulate_device = 1};
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    hlo_value *out = NULL;
    double t0 = bench_now();
    int rc = chk_eval_module(m, nargs, args, &eo, &out, err);
    double t = bench_now() - t0;
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
  return best;
}

static int bench_one(const char *path, int reps, const dev_machine *mach) {
  hlo_module *m = bench_load(path);
  if (!m)
    return -1;
  char name[128];
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

  char why[512] = "";
  double t0 = bench_now();
  if (be->compile(&f, &dflt, mach, NULL, &k, why, sizeof why) != DEV_OK) {
    fprintf(stderr, "bench_device: %s: the default does not compile: %s\n", name, why);
    goto done;
  }
  double compile_s = bench_now() - t0;

  double sim = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    dev_run run;
    memset(&run, 0, sizeof run);
    t0 = bench_now();
    be->run(k, args, nargs, (uint64_t)r, &run);
    double t = bench_now() - t0;
    hlo_value_unref(run.out);
    if (run.status != DEV_OK) {
      fprintf(stderr, "bench_device: %s: the default fails: %s\n", name, run.message);
      goto done;
    }
    if (r > 0 && t < sim)
      sim = t;
  }

  double eval = best_eval(m, nargs, args, reps, 0, &err), eval1 = -1;
  if (eval >= 0)
    eval1 = best_eval(m, nargs, args, reps, 1, &err);
  if (eval < 0 || eval1 < 0) {
    fprintf(stderr, "bench_device: %s: %d:%d: %s\n", name, err.line, err.col, err.msg);
    goto done;
  }

  int64_t elems = 1;
  for (int d = 0; d < f.rank; d++)
    elems *= f.dims[d];
  char cfg[DEV_CONFIG_TEXT_MAX];
  dev_config_print(&dflt, cfg, sizeof cfg);
  printf("device %-20s hero=%-6s elements=%-7lld compile_s=%.6f sim_s=%.6f eval_s=%.6f eval1_s=%.6f ratio=%.2f "
         "ratio1=%.2f  (default %s)\n",
         name, dev_hero_name(f.kind), (long long)elems, compile_s, sim, eval, eval1, sim / eval, sim / eval1, cfg);
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
    fprintf(stderr, "usage: bench_device REPS FILE.hlo...\n");
    return 2;
  }
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
  for (int i = 2; i < argc; i++)
    if (bench_one(argv[i], reps, &mach) != 0)
      status = 1;
  return status;
}
