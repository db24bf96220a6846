/* cli_env.c — loading the device a check runs on (cli_env.h). */
#include "cli_env.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

int tn_check_env_load(const char *machine, const char *compiler, const char *const *defects, int ndefects,
                      const char *backend, tn_check_env *e) {
  hlo_error err = {0};
  if (dev_machine_find(machine ? machine : TN_DEFAULT_MACHINE, &e->machine, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return -1;
  }
  if (dev_compiler_find(compiler ? compiler : "stable", &e->compiler, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return -1;
  }
  for (int i = 0; i < ndefects; i++) {
    int d = dev_defect_from_name(defects[i]);
    if (d < 0) {
      fprintf(stderr, "tune: unknown defect '%s' (see tune --list-defects)\n", defects[i]);
      return -1;
    }
    e->compiler.defects |= 1u << d;
  }
  if (ndefects > 0 && strlen(e->compiler.name) + 2 < sizeof e->compiler.name)
    strcat(e->compiler.name, "+d");
  if (backend) {
    if (dev_backend_load(backend, &e->backend, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      return -1;
    }
  } else {
    e->backend = dev_sim_backend();
  }
  return 0;
}
