/* cli_compilers.c — `tune --list-compilers`: one compiler profile per
 * line, name first, then the modelled defects it carries. */
#include <stdio.h>

#include "cli.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "suggest.h"

int tn_cmd_list_compilers(const tn_opts *o) {
  (void)o;
  const char **names = NULL;
  char **owned = NULL;
  int n = tn_names_compilers(&names, &owned);
  if (n == 0) {
    fprintf(stderr, "tune: no compiler profiles found in %s/compilers\n", dev_configs_dir());
    return TN_EXIT_USAGE;
  }
  int rc = TN_EXIT_OK;
  for (int i = 0; i < n; i++) {
    dev_compiler c;
    hlo_error err = {0};
    if (dev_compiler_find(names[i], &c, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      rc = TN_EXIT_USAGE;
      continue;
    }
    printf("%-10s", names[i]);
    int any = 0;
    for (int d = 0; d < DEV_DEFECT_COUNT; d++)
      if (dev_compiler_has(&c, (dev_defect)d))
        printf("%s%s", any++ ? "," : " defects: ", dev_defect_name((dev_defect)d));
    if (!any)
      fputs(" no modelled defect", stdout);
    putchar('\n');
  }
  tn_names_free(names, owned, n);
  return rc;
}
