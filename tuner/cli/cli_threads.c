/* cli_threads.c — how many threads check candidates (cli.h).
 *
 * Candidates are checked by CPU-bound threads, so threads beyond the cores
 * mostly wait, while each holds its own candidate's buffers: --threads 1000
 * on a small fusion took 1.2 GB (issue 11).  Four per core leaves room to
 * oversubscribe a machine on purpose; the floor of 64 means a command line
 * or sweep file asking for up to 64 threads runs on any machine.
 *
 * The same results come out whatever the thread count (fusion_run.h), so the
 * count only trades time against memory, and the policy follows from who
 * chose it:
 *  - --threads and a sweep file's threads are the user's words: beyond the
 *    limit they are refused (exit 2), within it they are obeyed.
 *  - OMP_NUM_THREADS is the environment's, often set for other programs
 *    too: beyond the limit tune uses the limit and says so, since refusing
 *    to run over an ambient variable would be hostile and obeying it is
 *    issue 11's memory blow-up again.
 *  - With neither, tune chooses, so it must choose well: OpenMP would give
 *    each process every core, which under mpirun means every rank on a
 *    node takes them all (ranks x cores threads).  So the node's cores are
 *    divided among its ranks (at least one each).
 *  - An explicit count with ranks x threads above the node's cores is
 *    obeyed (a test, or a node partly idle, may want it) but warned about
 *    once, since under MPI it is easy to do by mistake and only costs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"

static long node_cores(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1)
    cores = 1;
  if (cores > 4096) /* keeps 4 * cores an int and the limit sane */
    cores = 4096;
  return cores;
}

int tn_threads_max(void) {
  long cores = node_cores();
  return 4 * cores > 64 ? (int)(4 * cores) : 64;
}

void tn_threads_setup(int local_ranks, bool speak) {
#ifdef _OPENMP
  const char *env = getenv("OMP_NUM_THREADS");
  if (env && *env) {
    int n = omp_get_max_threads(); /* OpenMP's reading of it */
    if (n > tn_threads_max()) {
      if (speak)
        fprintf(stderr, "tune: OMP_NUM_THREADS=%s: more than %d threads (4 per core, at least 64) only take memory; "
                        "using %d\n", env, tn_threads_max(), tn_threads_max());
      omp_set_num_threads(tn_threads_max());
    }
    return;
  }
  if (local_ranks > 1) {
    long share = node_cores() / local_ranks;
    int own = omp_get_num_procs(); /* the cores this process may run on */
    if (share > own)
      share = own;
    omp_set_num_threads(share > 1 ? (int)share : 1);
  }
#else
  (void)local_ranks, (void)speak;
#endif
}

/* `--threads 1` used to bound only the candidates' loop: the reference
 * evaluation before it still ran its loops on every core, and on a busy
 * machine libgomp's waiting threads spun (layernorm at load 3: 0.59-0.91 s
 * of CPU against 0.56-0.59 s with one thread). */
void tn_threads_use(int threads) {
#ifdef _OPENMP
  if (threads > 0)
    omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

void tn_threads_warn(int threads, int local_ranks) {
  if (threads <= 0 || local_ranks <= 1)
    return;
  long cores = node_cores();
  if ((long)threads * local_ranks > cores)
    fprintf(stderr, "tune: %d ranks on this node x %d threads each = %ld threads on %ld cores: the candidates are "
                    "CPU-bound, so the extra threads only take memory and time (results are the same)\n",
            local_ranks, threads, (long)threads * local_ranks, cores);
}
