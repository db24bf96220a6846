/* dev_cfgfile.h — opening a libconfig file that holds exactly one
 * top-level group (`machine: { ... };`, `compiler: { ... };`), with errors
 * that name the file and line.  Shared by every config file reader so they
 * all refuse the same mistakes the same way. */
#ifndef TUNE_DEV_CFGFILE_H
#define TUNE_DEV_CFGFILE_H

#include <libconfig.h>

#include "hlo/hlo_error.h"

/* Reads path into cfg (the caller config_destroy()s it whatever happens)
 * and returns the group named `group`; NULL with err when the file cannot
 * be read, does not parse ("FILE:LINE: what"), lacks the group, or has any
 * other top-level key.  `what` names the kind of file for messages. */
config_setting_t *dev_cfgfile_open(config_t *cfg, const char *path, const char *what, const char *group,
                                   hlo_error *err);

/* False when libconfig ran out of memory while reading cfg without saying
 * so (a member of a group without a name, a string without a value).
 * dev_cfgfile_open checks it; a reader that calls config_read_file itself
 * must too. */
int dev_cfgfile_intact(const config_t *cfg);

#endif
