/* cli_ops.c — validating `--ops LIST` (issue 11 bug 12).
 *
 * A name that matches no opcode would silently match no output, so every
 * output would go unchecked and a real divergence would pass as benign.
 * Every name must therefore be an opcode; the closest one is suggested,
 * since the usual cause is a typo. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlo/hlo_opcode.h"

/* Levenshtein distance of a[0..na) and b, capped at 64 characters each:
 * longer names are never close to an opcode anyway. */
static int distance(const char *a, size_t na, const char *b) {
  size_t nb = strlen(b);
  if (na > 64 || nb > 64)
    return 1000;
  int row[65];
  for (size_t j = 0; j <= nb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[nb];
}

/* The opcode nearest to s[0..n) when it is within a third of its length
 * (at least 2 edits), else NULL. */
static const char *closest(const char *s, size_t n) {
  const char *best = NULL;
  int bestd = (int)(n / 3 > 2 ? n / 3 : 2) + 1;
  for (int op = 1; op < HLO_OP_COUNT; op++) {
    const char *name = hlo_opcode_name((hlo_opcode)op);
    int d = distance(s, n, name);
    if (d < bestd) {
      bestd = d;
      best = name;
    }
  }
  return best;
}

int tn_ops_validate(const char *list) {
  const char *p = list;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0) {
      fprintf(stderr, "tune: --ops: empty opcode name in '%s'\n", list);
      return -1;
    }
    if (hlo_opcode_from_name(p, len) == HLO_OP_INVALID) {
      const char *near = closest(p, len);
      fprintf(stderr, "tune: --ops: unknown opcode '%.*s'", (int)len, p);
      if (near)
        fprintf(stderr, " (did you mean '%s'?)", near);
      fputc('\n', stderr);
      return -1;
    }
    if (!e)
      return 0;
    p = e + 1;
  }
}
