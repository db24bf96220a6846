/* cli_env.h — what every checking mode loads besides the module: the
 * machine model, the compiler profile (plus --defect options) and the
 * device backend.  --check, --sweep and --reproduce share it so that a
 * reproducer runs on exactly the device the finding came from. */
#ifndef TUNE_CLI_ENV_H
#define TUNE_CLI_ENV_H

#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"

typedef struct tn_check_env {
  dev_machine machine;
  dev_compiler compiler;
  const dev_backend *backend;
} tn_check_env;

/* Loads machine (NULL: TN_DEFAULT_MACHINE), compiler (NULL: "stable"),
 * the named defects and the backend (NULL: the built-in simulator).  A
 * profile with extra defects is named "NAME+d", which is what results
 * files record.  Prints `tune: reason` and returns -1 on failure. */
int tn_check_env_load(const char *machine, const char *compiler, const char *const *defects, int ndefects,
                      const char *backend, tn_check_env *e);

#endif
