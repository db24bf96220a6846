/* tmpdir_fixture.c — see tmpdir_fixture.h. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include "tmpdir_fixture.h"

#include <stdio.h>
#include <stdlib.h>

static char dir[256];

int tdf_make(const char *name) {
  snprintf(dir, sizeof dir, "/tmp/%s.XXXXXX", name);
  return mkdtemp(dir) ? 0 : -1;
}

const char *tdf_dir(void) { return dir; }

const char *tdf_path(const char *file) {
  static char path[2][600];
  static int which;
  which ^= 1;
  snprintf(path[which], sizeof path[which], "%s/%s", dir, file);
  return path[which];
}

int tdf_teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", dir, dir);
  return system(cmd) == 0 ? 0 : -1;
}
