/* cli_sweep.c — `tune --sweep FILE.cfg` (being written). */
#include <stdio.h>

#include "cli.h"

int tn_cmd_sweep(const tn_opts *o) {
  (void)o;
  fputs("tune: --sweep is not available yet\n", stderr);
  return TN_EXIT_USAGE;
}
