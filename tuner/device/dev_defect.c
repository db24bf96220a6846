/* dev_defect.c — defect names and compiler profile files. */
#include "dev_defect.h"

#include <errno.h>
#include <libconfig.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dev_cfgfile.h"
#include "dev_machine.h"

typedef struct {
  const char *name, *trigger, *symptom;
} defect_info;

static const defect_info infos[DEV_DEFECT_COUNT] = {
#define X(e, name, trig, sym) {name, trig, sym},
    DEV_DEFECT_LIST(X)
#undef X
};

const char *dev_defect_name(dev_defect d) { return (unsigned)d < DEV_DEFECT_COUNT ? infos[d].name : "invalid"; }
const char *dev_defect_trigger(dev_defect d) { return (unsigned)d < DEV_DEFECT_COUNT ? infos[d].trigger : ""; }
const char *dev_defect_symptom(dev_defect d) { return (unsigned)d < DEV_DEFECT_COUNT ? infos[d].symptom : ""; }

int dev_defect_from_name(const char *name) {
  for (int d = 0; d < DEV_DEFECT_COUNT; d++)
    if (strcmp(infos[d].name, name) == 0)
      return d;
  return -1;
}

int dev_compiler_load(const char *path, dev_compiler *out, hlo_error *err) {
  config_t cfg;
  memset(out, 0, sizeof *out);
  int rc = 0;
  config_setting_t *c = dev_cfgfile_open(&cfg, path, "compiler profile", "compiler", err);
  if (!c) {
    rc = -1;
    goto done;
  }
  for (int i = 0; i < config_setting_length(c); i++) {
    config_setting_t *s = config_setting_get_elem(c, (unsigned)i);
    const char *nm = config_setting_name(s);
    int line = config_setting_source_line(s);
    if (strcmp(nm, "name") == 0) {
      const char *v = config_setting_get_string(s);
      if (!v) {
        rc = hlo_error_set(err, line, 0, "%s:%d: 'compiler.name' must be a string", path, line);
        goto done;
      }
      snprintf(out->name, sizeof out->name, "%s", v);
    } else if (strcmp(nm, "defects") == 0) {
      if (config_setting_type(s) != CONFIG_TYPE_ARRAY && config_setting_type(s) != CONFIG_TYPE_LIST) {
        rc = hlo_error_set(err, line, 0, "%s:%d: 'compiler.defects' must be a list of names", path, line);
        goto done;
      }
      for (int j = 0; j < config_setting_length(s); j++) {
        const char *d = config_setting_get_string_elem(s, j);
        int id = d ? dev_defect_from_name(d) : -1;
        if (id < 0) {
          rc = hlo_error_set(err, line, 0, "%s:%d: unknown defect '%s' in 'compiler.defects' (see tune --list-defects)",
                             path, line, d ? d : "?");
          goto done;
        }
        out->defects |= 1u << id;
      }
    } else {
      rc = hlo_error_set(err, line, 0, "%s:%d: unknown key 'compiler.%s'", path, line, nm);
      goto done;
    }
  }
  if (!out->name[0]) {
    int line = config_setting_source_line(c);
    rc = hlo_error_set(err, line, 0, "%s:%d: missing key 'compiler.name'", path, line);
  }
done:
  config_destroy(&cfg);
  return rc;
}

int dev_compiler_find(const char *name, dev_compiler *out, hlo_error *err) {
  if (strchr(name, '/'))
    return dev_compiler_load(name, out, err);
  char path[4096];
  snprintf(path, sizeof path, "%s/compilers/%s.cfg", dev_configs_dir(), name);
  /* access(), not fopen(): fopen allocates, and a host out of memory
   * must not pass for a mistyped name. */
  if (access(path, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return hlo_error_set(err, 0, 0, "unknown compiler profile '%s' (no %s)", name, path);
  return dev_compiler_load(path, out, err);
}
