/* dev_cfgfile.c — the one way tune opens a libconfig file. */
#include "dev_cfgfile.h"

#include <string.h>

/* libconfig does not check its own strdup: when copying a key or a string
 * value fails for lack of memory, it keeps the setting with a NULL name or
 * value and reports success.  Grammar gives every member of a group a name
 * and every string a value, so a NULL there can only mean that. */
static int intact(const config_setting_t *s) {
  int n = config_setting_length(s);
  int group = config_setting_type(s) == CONFIG_TYPE_GROUP;
  if (config_setting_type(s) == CONFIG_TYPE_STRING && !config_setting_get_string(s))
    return 0;
  for (int i = 0; i < n; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (!e || (group && !config_setting_name(e)) || !intact(e))
      return 0;
  }
  return 1;
}

int dev_cfgfile_intact(const config_t *cfg) { return intact(config_root_setting(cfg)); }

config_setting_t *dev_cfgfile_open(config_t *cfg, const char *path, const char *what, const char *group,
                                   hlo_error *err) {
  config_init(cfg);
  if (!config_read_file(cfg, path)) {
    if (config_error_type(cfg) == CONFIG_ERR_FILE_IO)
      hlo_error_set(err, 0, 0, "%s: cannot read %s", path, what);
    else
      hlo_error_set(err, config_error_line(cfg), 0, "%s:%d: %s", path, config_error_line(cfg),
                    config_error_text(cfg));
    return NULL;
  }
  if (!dev_cfgfile_intact(cfg)) {
    hlo_error_set(err, 0, 0, "%s: out of memory reading the %s", path, what);
    return NULL;
  }
  config_setting_t *root = config_root_setting(cfg);
  config_setting_t *g = config_setting_get_member(root, group);
  if (!g || config_setting_type(g) != CONFIG_TYPE_GROUP) {
    hlo_error_set(err, 1, 0, "%s:1: missing group '%s'", path, group);
    return NULL;
  }
  for (int i = 0; i < config_setting_length(root); i++) {
    config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
    if (strcmp(config_setting_name(s), group) != 0) {
      int line = config_setting_source_line(s);
      hlo_error_set(err, line, 0, "%s:%d: unknown key '%s'", path, line, config_setting_name(s));
      return NULL;
    }
  }
  return g;
}
