/* outpath.c — where a command may write its output (outpath.h). */
#define _DEFAULT_SOURCE /* realpath */
#include "outpath.h"
#include "store/h5values.h"
#include "store/libguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

char *tn_out_resolve(const char *path, hlo_error *err) {
  struct stat st;
  char *r = NULL;
  if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) {
    r = strdup(path);
  } else {
    r = realpath(path, NULL);
    if (!r) {
      hlo_error_set(err, 0, 0, "%s: a symbolic link to a file that cannot be reached (%s); not creating it", path,
                    strerror(errno));
      return NULL;
    }
  }
  if (!r)
    hlo_error_set(err, 0, 0, "out of memory");
  return r;
}

/* The absolute name of path with every link and "." or ".." resolved, also
 * when the file (or its folder) does not exist yet: the canonical folder
 * plus the last component.  NULL when that cannot be worked out. */
static char *canonical(const char *path) {
  char *r = realpath(path, NULL);
  if (r || (errno != ENOENT && errno != ENOTDIR))
    return r;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  char *dir = NULL;
  if (!slash)
    dir = strdup(".");
  else if (slash == path)
    dir = strdup("/");
  else
    dir = strndup(path, (size_t)(slash - path));
  char *cdir = dir ? canonical(dir) : NULL;
  free(dir);
  if (!cdir)
    return NULL;
  /* "DIR/." or "DIR/.." that did not resolve: DIR does not exist, so it
   * is no link, and "." and ".." mean what they say. */
  if (!*base || strcmp(base, ".") == 0)
    return cdir;
  if (strcmp(base, "..") == 0) {
    char *up = strrchr(cdir, '/');
    if (up && up != cdir)
      *up = '\0';
    else if (up)
      up[1] = '\0';
    return cdir;
  }
  size_t n = strlen(cdir) + strlen(base) + 2;
  char *out = malloc(n);
  if (out)
    snprintf(out, n, "%s%s%s", cdir, strcmp(cdir, "/") == 0 ? "" : "/", base);
  free(cdir);
  return out;
}

int tn_out_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  int ha = stat(a, &sa) == 0, hb = stat(b, &sb) == 0;
  if (ha && hb)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ha || hb)
    return 0;
  char *ca = canonical(a), *cb = canonical(b);
  int same = ca && cb ? strcmp(ca, cb) == 0 : strcmp(a, b) == 0;
  free(ca);
  free(cb);
  return same;
}

int tn_out_refuse_input(const char *out, int n, const char *const *inputs, hlo_error *err) {
  for (int i = 0; i < n; i++)
    if (inputs[i] && strcmp(inputs[i], "-") != 0 && tn_out_same_file(out, inputs[i]))
      return hlo_error_set(err, 0, 0, "%s: the output is also an input (%s); refusing to write over it", out,
                           inputs[i]);
  return 0;
}

char *tn_out_temp_name(const char *path, unsigned k) {
  size_t n = strlen(path) + 48;
  char *name = malloc(n);
  if (name)
    snprintf(name, n, "%s.tmp.%ld.%u", path, (long)getpid(), k);
  return name;
}

int tn_out_open_temp(const char *path, char **tmp, hlo_error *err) {
  for (unsigned k = 0; k < 1000; k++) {
    char *name = tn_out_temp_name(path, k);
    if (!name)
      return hlo_error_set(err, 0, 0, "out of memory");
    /* O_EXCL: a name that exists, a planted link included, is skipped. */
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    int saved = errno;
    if (fd >= 0) {
      *tmp = name;
      return fd;
    }
    free(name);
    if (saved != EEXIST)
      return hlo_error_set(err, 0, 0, "%s: cannot create a temporary file beside it: %s", path, strerror(saved));
  }
  return hlo_error_set(err, 0, 0, "%s: cannot create a temporary file beside it: %s", path, strerror(EEXIST));
}

/* The temporary an HDF5 file is being built for (one at a time). */
static char crash_tmp[PATH_MAX];

static void unlink_tmp_on_crash(void) { unlink(crash_tmp); }

hid_t tn_out_create_h5_temp(const char *path, char **tmp, hlo_error *err) {
  /* The name is reserved by tn_out_open_temp (O_EXCL, mode 0666 less the
   * umask); the HDF5 file lives in memory and tn_h5_close writes it over
   * that name with O_NOFOLLOW (h5values.h), so a failed create or write
   * leaves nothing half-made and a link swapped in meanwhile is refused. */
  int fd = tn_out_open_temp(path, tmp, err);
  if (fd < 0)
    return -1;
  close(fd);
  /* HDF5 may crash while it builds the file (libguard.h): the reserved
   * name then goes too.  The name holds our pid, so unlinking it once it
   * was renamed into place (or removed) removes nothing. */
  if (strlen(*tmp) < sizeof crash_tmp) {
    strcpy(crash_tmp, *tmp);
    tn_libguard_add_cleanup(unlink_tmp_on_crash);
  }
  hid_t f = tn_h5_create(*tmp, err);
  if (f < 0) {
    unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
  }
  return f;
}
