/* cli_env.c — loading the device a check runs on (cli_env.h). */
#include "cli_env.h"

#include <stdio.h>
#include <string.h>

#include "run/backend_host.h"
#include "cli.h"
#include "suggest.h"

/* " (did you mean 'X'?)" for a mistyped name of a kind, or "". */
static void hint(char *buf, size_t n, const char *word, int kind) {
  const char **names = NULL;
  char **owned = NULL;
  int k = kind == 0 ? tn_names_machines(&names, &owned)
        : kind == 1 ? tn_names_compilers(&names, &owned)
                    : tn_names_defects(&names);
  const char *s = strchr(word, '/') ? NULL : tn_suggest(word, names, k);
  if (s)
    snprintf(buf, n, " (did you mean '%s'?)", s);
  else
    buf[0] = '\0';
  tn_names_free(names, owned, k);
}

int tn_check_env_load(const char *machine, const char *compiler, const char *const *defects, int ndefects,
                      const char *backend, tn_check_env *e) {
  hlo_error err = {0};
  char h[160];
  if (dev_machine_find(machine ? machine : TN_DEFAULT_MACHINE, &e->machine, &err) != 0) {
    hint(h, sizeof h, machine ? machine : TN_DEFAULT_MACHINE, 0);
    fprintf(stderr, "tune: %s%s\n", err.msg, strncmp(err.msg, "unknown", 7) == 0 ? h : "");
    return -1;
  }
  if (dev_compiler_find(compiler ? compiler : "stable", &e->compiler, &err) != 0) {
    hint(h, sizeof h, compiler ? compiler : "stable", 1);
    fprintf(stderr, "tune: %s%s%s\n", err.msg, strncmp(err.msg, "unknown", 7) == 0 ? h : "",
            strncmp(err.msg, "unknown", 7) == 0 ? " (see tune --list-compilers)" : "");
    return -1;
  }
  for (int i = 0; i < ndefects; i++) {
    int d = dev_defect_from_name(defects[i]);
    if (d < 0) {
      hint(h, sizeof h, defects[i], 2);
      fprintf(stderr, "tune: unknown defect '%s'%s (see tune --list-defects)\n", defects[i], h);
      return -1;
    }
    e->compiler.defects |= 1u << d;
  }
  if (ndefects > 0 && strlen(e->compiler.name) + 2 < sizeof e->compiler.name)
    strcat(e->compiler.name, "+d");
  if (backend) {
    if (dev_backend_load(backend, tn_backend_host(), &e->backend, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      return -1;
    }
  } else {
    e->backend = dev_sim_backend();
  }
  return 0;
}
