/* only.c — completing a partial --only config (only.h). */
#include "only.h"

#include <stdio.h>
#include <string.h>

static const char *const keys[] = {"tile", "k", "buf", "order", "pack", "prec", "flags"};
enum { NKEYS = 7 };

static int key_index(const char *w, size_t n) {
  for (int i = 0; i < NKEYS; i++)
    if (strlen(keys[i]) == n && strncmp(w, keys[i], n) == 0)
      return i;
  return -1;
}

/* Splits a config line into its KEY=VALUE words by key: val[i] points at
 * the value of keys[i] (len[i] bytes), or stays NULL.  col receives the
 * 1-based column of the offending word on failure. */
static int split(const char *text, const char *what, const char **val, size_t *len, hlo_error *err) {
  const char *p = text;
  for (;;) {
    while (*p == ' ')
      p++;
    if (!*p)
      return 0;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    size_t wn = (size_t)(p - w);
    const char *eq = memchr(w, '=', wn);
    int col = (int)(w - text) + 1;
    if (!eq)
      return hlo_error_set(err, 0, col, "%s: column %d: '%.*s' is not KEY=VALUE (keys: tile, k, buf, order, pack, "
                           "prec, flags)", what, col, (int)wn, w);
    int k = key_index(w, (size_t)(eq - w));
    if (k < 0)
      return hlo_error_set(err, 0, col, "%s: column %d: unknown knob '%.*s' (tile, k, buf, order, pack, prec, flags)",
                           what, col, (int)(eq - w), w);
    if (val[k])
      return hlo_error_set(err, 0, col, "%s: column %d: %s is given twice", what, col, keys[k]);
    val[k] = eq + 1;
    len[k] = wn - (size_t)(eq + 1 - w);
  }
}

int tn_only_complete(const char *only, const char *dflt, char *out, size_t n, hlo_error *err) {
  const char *mine[NKEYS] = {0}, *theirs[NKEYS] = {0};
  size_t mlen[NKEYS] = {0}, tlen[NKEYS] = {0};
  if (split(only, "--only", mine, mlen, err) != 0)
    return -1;
  if (split(dflt, "the default config", theirs, tlen, err) != 0)
    return -1;
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < NKEYS; i++) {
    const char *v = mine[i] ? mine[i] : theirs[i];
    size_t vn = mine[i] ? mlen[i] : tlen[i];
    if (!v)
      continue;
    int w = snprintf(out + at, n - at, "%s%s=%.*s", at ? " " : "", keys[i], (int)vn, v);
    if (w < 0 || (size_t)w >= n - at)
      return hlo_error_set(err, 0, 0, "--only: the completed config is too long");
    at += (size_t)w;
  }
  return 0;
}

int tn_only_check(const char *only, hlo_error *err) {
  const char *val[NKEYS] = {0};
  size_t len[NKEYS] = {0};
  return split(only, "--only", val, len, err) != 0 ? -1 : 0;
}
