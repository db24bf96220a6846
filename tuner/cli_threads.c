/* cli_threads.c — the most threads a sweep may ask for (cli.h).
 *
 * Candidates are checked by CPU-bound threads, so threads beyond the cores
 * mostly wait, while each holds its own candidate's buffers: --threads 1000
 * on a small fusion took 1.2 GB (issue 11).  Four per core leaves room to
 * oversubscribe a machine on purpose; the floor of 64 means a command line
 * or sweep file asking for up to 64 threads runs on any machine.
 */
#include <unistd.h>

#include "cli.h"

int tn_threads_max(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1)
    cores = 1;
  if (cores > 4096) /* keeps 4 * cores an int and the limit sane */
    cores = 4096;
  return 4 * cores > 64 ? (int)(4 * cores) : 64;
}
