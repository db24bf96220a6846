/* cli_defects.c — `tune --list-defects`: the modelled miscompilations, one
 * per line, name first, then its trigger and its symptom, tab-separated:
 *
 *   NAME<TAB>trigger: ...<TAB>symptom: ...
 */
#include <stdio.h>

#include "cli.h"
#include "device/dev_defect.h"

int tn_cmd_list_defects(const tn_opts *o) {
  (void)o;
  for (int d = 0; d < DEV_DEFECT_COUNT; d++)
    printf("%s\ttrigger: %s\tsymptom: %s\n", dev_defect_name((dev_defect)d), dev_defect_trigger((dev_defect)d),
           dev_defect_symptom((dev_defect)d));
  if (fflush(stdout) != 0) {
    fputs("tune: stdout: write error\n", stderr);
    return TN_EXIT_USAGE;
  }
  return TN_EXIT_OK;
}
