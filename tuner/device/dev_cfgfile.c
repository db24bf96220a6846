/* dev_cfgfile.c — the one way tune opens a libconfig file. */
#include "dev_cfgfile.h"

#include <string.h>

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
