/* cli_machines.c — `tune --list-machines`: one model per line, name first,
 * so scripts can take the first field. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "device/dev_machine.h"

int tn_cmd_list_machines(const tn_opts *o) {
  (void)o;
  char **names = NULL;
  hlo_error err = {0};
  int n = dev_machine_list(&names, &err);
  if (n < 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return TN_EXIT_USAGE;
  }
  int rc = TN_EXIT_OK;
  for (int i = 0; i < n; i++) {
    dev_machine m;
    if (dev_machine_find(names[i], &m, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      rc = TN_EXIT_USAGE;
    } else {
      printf("%-10s %2d core%s  VMEM %4lld MiB  HBM %6.0f GB/s  MXU %dx%dx%d  bf16 %6.1f TFLOP/s  %s\n",
             m.name, m.cores, m.cores == 1 ? " " : "s", (long long)(m.vmem_bytes >> 20), m.hbm_gbps,
             m.mxu_count, m.mxu_rows, m.mxu_cols, m.mxu_bf16_tflops, m.description);
    }
    free(names[i]);
  }
  free(names);
  return rc;
}
