/* report_attr.c — knob attribution: which knob values set the divergent
 * candidates of a fusion apart (report_internal.h).
 *
 * A compiler engineer fixing a miscompilation wants the lowering choice that
 * triggers it, not 28 rows that say the same thing.  The divergent
 * candidates are grouped greedily: take the worst one left, try every set
 * of one, two, then three of its knob values, and keep the smallest set
 * that no matching candidate has in full, preferring the one that most
 * remaining divergent candidates share.  Those candidates form a group;
 * repeat.  When even three knobs do not separate the worst candidate from
 * every matching one (a rerun that differs, a data-dependent bug), it is
 * a group of one and says so.
 */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

enum { NK = 8 }; /* a config line has seven knob words */

typedef struct {
  int n;
  char w[NK][96];
} words;

static void split(const char *config, words *out) {
  out->n = 0;
  const char *p = config;
  while (*p && out->n < NK) {
    while (*p == ' ')
      p++;
    const char *s = p;
    while (*p && *p != ' ')
      p++;
    size_t len = (size_t)(p - s);
    if (len == 0)
      break;
    if (len >= sizeof out->w[0])
      len = sizeof out->w[0] - 1;
    memcpy(out->w[out->n], s, len);
    out->w[out->n][len] = '\0';
    out->n++;
  }
}

static bool has(const words *c, const char *w) {
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->w[i], w) == 0)
      return true;
  return false;
}

static bool has_all(const words *c, const char *const *set, int n) {
  for (int i = 0; i < n; i++)
    if (!has(c, set[i]))
      return false;
  return true;
}

void tn_rep_config_diff(char *buf, size_t n, const char *config, const char *dflt) {
  words c, d;
  split(config, &c);
  split(dflt, &d);
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < c.n && at < n; i++)
    if (!has(&d, c.w[i])) {
      int k = snprintf(buf + at, n - at, "%s%s", at ? " " : "", c.w[i]);
      if (k < 0)
        break;
      at += (size_t)k;
    }
  if (!buf[0])
    snprintf(buf, n, "(the default's config)");
}

static bool matching(const tn_cand_result *c) {
  return c->verdict == CHK_VERDICT_MATCH || c->verdict == CHK_VERDICT_BENIGN;
}

int tn_rep_attribute(const tn_fusion_result *r, tn_rep_group **groups, int *group_of) {
  *groups = NULL;
  for (int i = 0; group_of && i < r->ncands; i++)
    group_of[i] = -1;
  int n = r->ncands, ng = 0;
  int *order = malloc(sizeof *order * (size_t)(n ? n : 1));
  words *w = malloc(sizeof *w * (size_t)(n ? n : 1));
  bool *left = calloc((size_t)(n ? n : 1), sizeof *left);
  tn_rep_group *g = malloc(sizeof *g * (size_t)(n ? n : 1));
  if (!order || !w || !left || !g) {
    free(order), free(w), free(left), free(g);
    return -1;
  }
  tn_rep_order(r, order);
  for (int i = 0; i < n; i++) {
    split(r->cands[i].config, &w[i]);
    left[i] = chk_verdict_is_divergent(r->cands[i].verdict);
  }
  for (int k = 0; k < n; k++) {
    int worst = order[k];
    if (!left[worst])
      continue;
    const words *ww = &w[worst];
    const char *best[3] = {0};
    int best_n = 0, best_cover = 0;
    /* Subsets of the worst candidate's knob words, smallest first. */
    for (int size = 1; size <= 3 && best_n == 0; size++)
      for (unsigned mask = 1; mask < (1u << ww->n); mask++) {
        if (__builtin_popcount(mask) != size)
          continue;
        const char *set[3];
        int m = 0;
        for (int b = 0; b < ww->n; b++)
          if (mask >> b & 1u)
            set[m++] = ww->w[b];
        bool separates = true;
        for (int i = 0; i < n && separates; i++)
          if (matching(&r->cands[i]) && has_all(&w[i], set, size))
            separates = false;
        if (!separates)
          continue;
        int cover = 0;
        for (int i = 0; i < n; i++)
          cover += left[i] && has_all(&w[i], set, size);
        if (cover > best_cover) {
          best_cover = cover;
          best_n = size;
          memcpy(best, set, sizeof set);
        }
      }
    tn_rep_group *x = &g[ng++];
    memset(x, 0, sizeof *x);
    x->rep = worst;
    x->separates = best_n > 0;
    x->nkeys = best_n;
    for (int s = 0; s < best_n; s++)
      snprintf(x->keys[s], sizeof x->keys[s], "%s", best[s]);
    for (int i = 0; i < n; i++)
      if (left[i] && (i == worst || (best_n > 0 && has_all(&w[i], best, best_n)))) {
        left[i] = false;
        x->count++;
        if (group_of)
          group_of[i] = ng - 1;
      }
  }
  free(order);
  free(w);
  free(left);
  *groups = g;
  return ng;
}
