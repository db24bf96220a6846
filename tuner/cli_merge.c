/* cli_merge.c — `tune --merge OUT.h5 IN.h5...` (being written). */
#include <stdio.h>

#include "cli.h"

int tn_cmd_merge(const tn_opts *o, int nfiles, char *const *files) {
  (void)o, (void)nfiles, (void)files;
  fputs("tune: --merge is not available yet\n", stderr);
  return TN_EXIT_USAGE;
}
