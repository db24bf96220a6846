/* expected.c — reading and matching expected failures (expected.h). */
#include "expected.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/units.h"

void tn_expected_free(tn_expected *e) {
  for (int i = 0; i < e->n; i++) {
    free(e->v[i].pattern);
    free(e->v[i].reason);
  }
  free(e->v);
  e->v = NULL;
  e->n = 0;
}

static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* One line (without its newline): 0 and nothing added for a blank or a
 * comment line, 0 with an entry added, -1 with err. */
static int parse_line(const char *path, int lineno, const char *s, tn_expected *out, hlo_error *err) {
  while (*s == ' ' || *s == '\t')
    s++;
  if (*s == '\0' || *s == '#')
    return 0;
  const char *p = s;
  while (*p && *p != ' ' && *p != '\t')
    p++;
  size_t plen = (size_t)(p - s);
  while (*p == ' ' || *p == '\t')
    p++;
  size_t rlen = strlen(p);
  while (rlen > 0 && isspace((unsigned char)p[rlen - 1]))
    rlen--;
  if (rlen == 0)
    return hlo_error_set(err, lineno, 0, "%s:%d: error: '%.*s' has no reason (write PATTERN REASON)", path, lineno,
                         (int)plen, s);
  tn_expected_entry *grown = realloc(out->v, sizeof *grown * (size_t)(out->n + 1));
  if (!grown)
    return hlo_error_set(err, lineno, 0, "%s: out of memory", path);
  out->v = grown;
  tn_expected_entry *e = &grown[out->n];
  e->pattern = dup_range(s, plen);
  e->reason = dup_range(p, rlen);
  e->hits = 0;
  e->line = lineno;
  if (!e->pattern || !e->reason) {
    free(e->pattern);
    free(e->reason);
    return hlo_error_set(err, lineno, 0, "%s: out of memory", path);
  }
  out->n++;
  return 0;
}

int tn_expected_load(const char *path, tn_expected *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f)
    return hlo_error_set(err, 0, 0, "%s: cannot read the expected failures: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0, rc = 0;
  while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (len > 0 && line[len - 1] == '\n')
      line[len - 1] = '\0';
    rc = parse_line(path, lineno, line, out, err);
  }
  free(line);
  fclose(f);
  if (rc != 0)
    tn_expected_free(out);
  return rc;
}

/* Does the file part of a pattern (no ':') select file? */
static int file_matches(const char *pat, const char *file) {
  const char *base = strrchr(file, '/');
  return fnmatch(pat, file, 0) == 0 || fnmatch(pat, base ? base + 1 : file, 0) == 0;
}

const tn_expected_entry *tn_expected_match(tn_expected *e, const char *file, const char *unit) {
  for (int i = 0; i < e->n; i++) {
    tn_expected_entry *x = &e->v[i];
    int hit;
    if (!strchr(x->pattern, ':'))
      hit = file_matches(x->pattern, file);
    else
      hit = unit && tn_unit_selected(x->pattern, file, unit);
    if (hit) {
      x->hits++;
      return x;
    }
  }
  return NULL;
}
