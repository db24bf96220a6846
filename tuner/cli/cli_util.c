/* cli_util.c — file reading, module loading and text outputs shared by
 * every mode. */
#define _POSIX_C_SOURCE 200809L /* fdopen, fileno, fsync */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outpath.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_verify.h"

/* The whole file into *buf; -1 with err ("PATH: reason"). */
static int read_all(const char *path, char **buf, size_t *len, hlo_error *err) {
  int is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f)
    return hlo_error_set(err, 0, 0, "%s: %s", path, strerror(errno));
  /* Read in growing blocks rather than trusting a size from stat: stdin and
   * pipes have none, and a file may change while we read it. */
  size_t cap = 1 << 16, n = 0;
  char *p = malloc(cap);
  while (p) {
    size_t got = fread(p + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    char *q = cap > ((size_t)-1) / 2 ? NULL : realloc(p, cap * 2);
    if (!q) {
      free(p);
      p = NULL;
      break;
    }
    p = q;
    cap *= 2;
  }
  int failed = !p || ferror(f);
  int saved = errno;
  if (!is_stdin)
    fclose(f);
  if (failed) {
    hlo_error_set(err, 0, 0, "%s: %s", path, p ? strerror(saved) : "out of memory");
    free(p);
    return -1;
  }
  *buf = p;
  *len = n;
  return 0;
}

int tn_read_file(const char *path, char **buf, size_t *len) {
  hlo_error err = {0};
  if (read_all(path, buf, len, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static const char *display_name(const char *path) { return strcmp(path, "-") == 0 ? "<stdin>" : path; }

hlo_module *tn_load_module_err(const char *path, int no_verify, hlo_error *err) {
  char *text;
  size_t len;
  if (read_all(path, &text, &len, err) != 0) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    hlo_error_set(err, 0, 0, "tune: %s", msg);
    return NULL;
  }
  hlo_error e = {0};
  hlo_module *m = hlo_parse(text, len, &e);
  free(text);
  if (m && !no_verify && hlo_verify(m, &e) != 0) {
    hlo_module_free(m);
    m = NULL;
  }
  if (!m)
    hlo_error_set(err, e.line, e.col, "%s:%d:%d: error: %s", display_name(path), e.line, e.col, e.msg);
  return m;
}

hlo_module *tn_load_module(const char *path, int no_verify) {
  hlo_error err = {0};
  hlo_module *m = tn_load_module_err(path, no_verify, &err);
  if (!m && err.msg[0])
    fprintf(stderr, "%s\n", err.msg);
  return m;
}

int tn_text_output_open(tn_text_output *o, const char *path, int n, const char *const *inputs) {
  o->f = NULL;
  o->path = NULL;
  o->tmp = NULL;
  if (!path || strcmp(path, "-") == 0) {
    o->f = stdout;
    return 0;
  }
  hlo_error err = {0};
  char *out = tn_out_resolve(path, &err);
  if (!out || tn_out_refuse_input(out, n, inputs, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    free(out);
    return -1;
  }
  struct stat st;
  if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
    o->f = fopen(out, "w");
    if (!o->f) {
      fprintf(stderr, "tune: %s: %s\n", path, strerror(errno));
      free(out);
      return -1;
    }
    o->path = out;
    return 0;
  }
  int fd = tn_out_open_temp(out, &o->tmp, &err);
  if (fd < 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    free(out);
    return -1;
  }
  o->f = fdopen(fd, "w");
  if (!o->f) {
    fprintf(stderr, "tune: %s: %s\n", path, strerror(errno));
    close(fd);
    unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    free(out);
    return -1;
  }
  o->path = out;
  return 0;
}

int tn_text_output_close(tn_text_output *o, int keep) {
  if (!o->f)
    return -1;
  const char *name = o->path ? o->path : "standard output";
  int rc = 0, why = 0;
  if (fflush(o->f) != 0 || ferror(o->f)) {
    rc = -1;
    why = errno;
  }
  /* Once renamed, the file must also survive a power cut: its bytes
   * reach the disk before the name does.  EINVAL: a file system that
   * cannot sync, which has nothing to lose. */
  if (rc == 0 && keep && o->tmp && fsync(fileno(o->f)) != 0 && errno != EINVAL) {
    rc = -1;
    why = errno;
  }
  if (o->f != stdout) {
    if (fclose(o->f) != 0 && rc == 0) {
      rc = -1;
      why = errno;
    }
  }
  if (rc == 0 && keep && o->tmp && rename(o->tmp, o->path) != 0) {
    fprintf(stderr, "tune: %s: cannot rename %s over it: %s\n", name, o->tmp, strerror(errno));
    rc = -1;
  } else if (rc != 0 && keep) {
    fprintf(stderr, "tune: %s: write error%s%s\n", name, why ? ": " : "", why ? strerror(why) : "");
  }
  if (o->tmp && (rc != 0 || !keep))
    unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  o->f = NULL;
  o->tmp = NULL;
  o->path = NULL;
  return keep ? rc : 0;
}
