/* bench_check.c — the figures issue 5 asks of `tune --check`, each next to
 * a peer measured in the same run.
 *
 * Usage: bench_check WORKDIR BUDGET REPS [FILE.hlo...]
 *        (without files only the CPU probe and the comparator run)
 *
 * 1. Sweep throughput.  tn_check_fusion on each fusion with the built-in
 *    device, seed 0, at most BUDGET candidates, threads=1 and threads=2,
 *    best of REPS: candidates per second and the 2-thread speedup (target
 *    >= 1.7x).  A speedup means little on a loaded machine, so the peer is
 *    the speedup a pure CPU spin loop gets on the same two threads right
 *    before (what the machine can give now), and the CPU time the 2-thread
 *    sweep actually received per wall second.
 * 2. HDF5 share.  The three fusions' results are written as one run to
 *    WORKDIR/bench_check.h5 (begin, add each fusion, end: what `tune
 *    --check A B C -o FILE` pays on top of the sweeps), and the store's time
 *    is given as a share of the whole (2-thread sweeps + store; target <=
 *    5%).
 * 3. Comparator throughput.  chk_compare on two 64M-element f32 arrays,
 *    identical and then with 1% of the elements different, in GB/s of bytes
 *    read, next to memcpy of the same 256 MB array (read + written) in the
 *    same run (target >= 50% of copy).  The comparator is single-threaded,
 *    like the memcpy.
 *
 * Output is `key=value` lines for tests/bench/run.sh:
 *   cpu      online=N loadavg=L spin_speedup=S
 *   check    NAME threads=T cands=N time_s=... cps=... cpu_per_wall=...
 *   speedup  NAME value=... spin=...
 *   store    time_s=... sweeps_s=... share=...
 *   copy     rate=GB/s
 *   compare  CASE time_s=... rate=GB/s copy_frac=... mismatches=N
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_util.h"
#include "check/compare.h"
#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "store/store.h"
#include "run/fusion_run.h"

/* ---- what the machine can give two threads right now ----------------------- */

/* A fixed amount of dependent integer work that stays in registers, so its
 * time depends only on how much CPU the thread gets. */
static uint64_t spin(uint64_t iters, uint64_t seed) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < iters; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

/* Speedup of `threads` spinning threads over one doing the same per-thread
 * work: 2.0 on two idle cores, less when neighbours take CPU.  Best of 3. */
static double spin_speedup(int threads) {
  const uint64_t iters = 200u * 1000u * 1000u;
  volatile uint64_t sink = 0;
  double t1 = 1e30, tn = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = bench_now();
    sink += spin(iters, (uint64_t)r);
    double t = bench_now() - t0;
    if (t < t1)
      t1 = t;
    t0 = bench_now();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
      uint64_t v = spin(iters, (uint64_t)r + 7);
#ifdef _OPENMP
#pragma omp atomic
#endif
      sink += v;
    }
    t = bench_now() - t0;
    if (t < tn)
      tn = t;
  }
  (void)sink;
  return threads * t1 / tn;
}

/* ---- sweeps and the store ---------------------------------------------------- */

typedef struct {
  char name[128];
  hlo_module *m;
  double best[3];         /* best wall time with 1 and 2 threads (index = threads) */
  int ncands;
  tn_fusion_result kept;  /* the last 2-thread result, written to the store */
} fusion_case;

/* Best of reps sweeps of one fusion with `threads` threads; the last
 * result is kept in c->kept when keep is set. */
static int sweep(fusion_case *c, const tn_sweep_opts *base, int threads, int reps, bool keep) {
  tn_sweep_opts o = *base;
  o.threads = threads;
  double best = 1e30, cpu_ratio = 0;
  for (int r = 0; r < reps; r++) {
    tn_fusion_result res;
    hlo_error err = {0};
    double c0 = bench_cpu_now(), t0 = bench_now();
    if (tn_check_fusion(c->m, c->name, &o, &res, &err) != 0) {
      fprintf(stderr, "bench_check: %s: %d:%d: %s\n", c->name, err.line, err.col, err.msg);
      return -1;
    }
    double t = bench_now() - t0, cpu = bench_cpu_now() - c0;
    if (t < best) {
      best = t;
      cpu_ratio = cpu / t;
    }
    c->ncands = res.ncands;
    if (keep && r == reps - 1)
      c->kept = res;
    else
      tn_fusion_result_free(&res);
  }
  c->best[threads] = best;
  printf("check    %-22s threads=%d cands=%d time_s=%.4f cps=%.1f cpu_per_wall=%.2f\n", c->name, threads, c->ncands,
         best, c->ncands / best, cpu_ratio);
  fflush(stdout);
  return 0;
}

/* Writes every kept result as one run; returns the seconds it took. */
static double store_all(const char *workdir, fusion_case *cs, int n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_check.h5", workdir);
  remove(path);
  tn_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.command, sizeof run.command, "bench_check");
  snprintf(run.machine, sizeof run.machine, "tpu-v5e");
  snprintf(run.compiler, sizeof run.compiler, "stable");
  hlo_error err = {0};
  double t0 = bench_now();
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s) {
    fprintf(stderr, "bench_check: %s\n", err.msg);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    double a0 = bench_now();
    if (tn_store_add_fusion(s, &cs[i].kept, &err) != 0) {
      fprintf(stderr, "bench_check: %s: %s\n", cs[i].name, err.msg);
      tn_store_close(s);
      return -1;
    }
    printf("store    %-22s add_s=%.4f\n", cs[i].name, bench_now() - a0);
  }
  if (tn_store_end_run(s, "complete", &err) != 0) {
    fprintf(stderr, "bench_check: %s\n", err.msg);
    return -1;
  }
  double t = bench_now() - t0;
  remove(path);
  return t;
}

/* ---- comparator vs copy -------------------------------------------------------- */

static int bench_compare(void) {
  const int64_t n = (int64_t)64 << 20;
  const double bytes = 4.0 * (double)n;
  hlo_value *a = hlo_value_array(HLO_F32, 1, &n), *b = hlo_value_array(HLO_F32, 1, &n);
  if (!a || !b) {
    fprintf(stderr, "bench_check: no memory for two 256 MB arrays\n");
    hlo_value_unref(a);
    hlo_value_unref(b);
    return -1;
  }
  /* Values spread over many magnitudes and both signs, as outputs are. */
  float *x = a->data, *y = b->data;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((int64_t)(s >> 40) - (1 << 23)) / (float)(1 << (int)(s & 15));
  }
  /* The peer: memcpy of the same array into already-touched memory. */
  memset(y, 0, (size_t)bytes);
  double copy = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = bench_now();
    memcpy(y, x, (size_t)bytes);
    double t = bench_now() - t0;
    if (t < copy)
      copy = t;
  }
  double copy_rate = 2 * bytes / copy / 1e9;
  printf("copy     rate=%.2f GB/s (memcpy of a 256 MB f32 array, read + written, best of 3)\n", copy_rate);

  /* A tolerance typical of a float sum over a few thousand terms. */
  chk_tol tol = {.atol = 1e-6, .rtol = 1e-5};
  struct {
    const char *what;
    chk_rule rule;
    int perturb;
  } cases[] = {
      {"identical", CHK_RULE_TOLERANCE, 0},
      {"identical-bitwise", CHK_RULE_BITWISE, 0},
      {"1%-different", CHK_RULE_TOLERANCE, 1},
  };
  int rc = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (cases[c].perturb) /* every 100th element off by 0.1%: a mismatch */
      for (int64_t i = 0; i < n; i += 100)
        y[i] = x[i] * 1.001f + 1e-3f;
    double best = 1e30;
    chk_metrics m;
    for (int r = 0; r < 3; r++) {
      hlo_error err = {0};
      double t0 = bench_now();
      if (chk_compare(b, a, cases[c].rule, tol, &m, &err) != 0) {
        fprintf(stderr, "bench_check: compare: %s\n", err.msg);
        rc = -1;
        break;
      }
      double t = bench_now() - t0;
      if (t < best)
        best = t;
    }
    double rate = 2 * bytes / best / 1e9;
    printf("compare  %-18s time_s=%.4f rate=%.2f GB/s copy_frac=%.3f mismatches=%lld\n", cases[c].what, best, rate,
           rate / copy_rate, (long long)m.mismatches);
  }
  hlo_value_unref(a);
  hlo_value_unref(b);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_check WORKDIR BUDGET REPS [FILE.hlo...]\n");
    return 2;
  }
  const char *workdir = argv[1];
  int budget = atoi(argv[2]), reps = atoi(argv[3]);
  if (reps < 1)
    reps = 1;
  int n = argc - 4;

  double loadavg[3] = {0, 0, 0};
  FILE *lf = fopen("/proc/loadavg", "r");
  if (lf) {
    if (fscanf(lf, "%lf %lf %lf", &loadavg[0], &loadavg[1], &loadavg[2]) != 3)
      loadavg[0] = -1;
    fclose(lf);
  }
  printf("cpu      online=%ld loadavg=%.2f spin_speedup=%.2f (2 threads of pure CPU work vs 1)\n",
         sysconf(_SC_NPROCESSORS_ONLN), loadavg[0], spin_speedup(2));
  fflush(stdout);

  dev_machine mach;
  dev_compiler cc;
  hlo_error err = {0};
  if (dev_machine_find("tpu-v5e", &mach, &err) != 0 || dev_compiler_find("stable", &cc, &err) != 0) {
    fprintf(stderr, "bench_check: %s\n", err.msg);
    return 2;
  }
  tn_sweep_opts base = {
      .backend = dev_sim_backend(),
      .machine = &mach,
      .compiler = &cc,
      .seed = 0,
      .profile = CHK_INPUTS_NAIVE,
      .budget = budget,
      .error_maps = 3, /* what tune --check keeps */
  };
  fusion_case *cs = calloc((size_t)n, sizeof *cs);
  if (!cs)
    return 2;
  int status = 0;
  double sweeps = 0;
  for (int i = 0; i < n; i++) {
    bench_short_name(argv[4 + i], cs[i].name, sizeof cs[i].name);
    cs[i].m = bench_load(argv[4 + i]);
    if (!cs[i].m || sweep(&cs[i], &base, 1, reps, false) != 0 || sweep(&cs[i], &base, 2, reps, true) != 0) {
      status = 1;
      n = i; /* store what was swept so far, then stop */
      if (cs[i].m)
        hlo_module_free(cs[i].m);
      break;
    }
    /* Measured again right after, because the load on a shared machine
     * changes from one fusion to the next. */
    printf("speedup  %-22s value=%.2f spin=%.2f\n", cs[i].name, cs[i].best[1] / cs[i].best[2], spin_speedup(2));
    fflush(stdout);
    sweeps += cs[i].best[2];
  }
  if (n > 0) {
    double st = store_all(workdir, cs, n);
    if (st < 0)
      status = 1;
    else
      printf("store    time_s=%.4f sweeps_s=%.4f share=%.4f (begin + %d adds + end, vs 2-thread sweeps + store)\n", st,
             sweeps, st / (sweeps + st), n);
  }
  for (int i = 0; i < n; i++) {
    tn_fusion_result_free(&cs[i].kept);
    hlo_module_free(cs[i].m);
  }
  free(cs);
  fflush(stdout);
  if (bench_compare() != 0)
    status = 1;
  return status;
}
