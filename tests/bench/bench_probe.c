/* bench_probe.c — what micro inspection's instrumented run costs next to
 * the plain run of the same kernel (issue 16 item 5).
 *
 * Usage: bench_probe REPS FILE.hlo...
 *
 * For each single-fusion file: the default config compiled once on the
 * built-in simulated device, the seeded inputs a sweep would make (seed
 * 0), then the best of REPS (after one warm-up) of
 *   plain   dev_sim_backend()->run, what every candidate pays;
 *   probed  dev_sim_run_probed with a new probe (dev_probe.h): what the
 *           one instrumented run per culprit pays, the probe's setup and
 *           its copy of every instruction's values included.
 * Both from the calling thread's CPU time, which neighbours on a shared
 * machine disturb less than wall time.  The outputs must be bitwise equal
 * (the probe only reads); a difference is an error, not a figure.
 *
 * Output, one line per file, key=value for tests/bench/run.sh:
 *   probe NAME plain_s=... probed_s=... ratio=...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/backend_host.h"
#include "bench_util.h"
#include "device/dev_backend.h"
#include "device/dev_probe.h"
#include "check/inputs.h"

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
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_CONSTRAINED};
  char why[512] = "";
  if (!args || dev_fusion_analyze(m, &f, &err) != 0 || chk_inputs_make(m, &io, args, &err) != 0 ||
      be->space(&f, mach, &cands, &ncands, &dflt, &err) != 0) {
    fprintf(stderr, "bench_probe: %s: %s\n", name, err.msg);
    goto done;
  }
  f.host = tn_backend_host();
  if (be->compile(&f, &dflt, mach, NULL, &k, why, sizeof why) != DEV_OK) {
    fprintf(stderr, "bench_probe: %s: the default does not compile: %s\n", name, why);
    goto done;
  }
  double plain = 1e30, probed = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    dev_run a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    double c0 = bench_thread_cpu_now();
    be->run(k, args, nargs, 1, &a);
    double c1 = bench_thread_cpu_now();
    dev_probe *p = dev_probe_new(f.comp);
    if (p)
      dev_sim_run_probed(k, args, nargs, 1, p, &b);
    dev_probe_free(p);
    double c2 = bench_thread_cpu_now();
    int same = p && a.status == DEV_OK && b.status == DEV_OK && hlo_value_equal(a.out, b.out);
    hlo_value_unref(a.out);
    hlo_value_unref(b.out);
    if (!same) {
      fprintf(stderr, "bench_probe: %s: the probed run does not give the plain run's output\n", name);
      goto done;
    }
    if (r > 0 && c1 - c0 < plain)
      plain = c1 - c0;
    if (r > 0 && c2 - c1 < probed)
      probed = c2 - c1;
  }
  printf("probe %-20s plain_s=%.6f probed_s=%.6f ratio=%.2f\n", name, plain, probed, probed / plain);
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
    fprintf(stderr, "usage: bench_probe REPS FILE.hlo...\n");
    return 2;
  }
  int reps = atoi(argv[1]);
  if (reps < 1)
    reps = 1;
  dev_machine mach;
  hlo_error err = {0};
  if (dev_machine_find("tpu-v5e", &mach, &err) != 0) {
    fprintf(stderr, "bench_probe: %s\n", err.msg);
    return 2;
  }
  int status = 0;
  for (int i = 2; i < argc; i++)
    if (bench_one(argv[i], reps, &mach) != 0)
      status = 1;
  return status;
}
