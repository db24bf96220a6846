/* cover.c — greedy pairwise covering of a candidate space (cover.h). */
#include "cover.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_hash.h"

/* Knob columns: these, then one per flag that has a column (flag_has_column),
 * one per tile dimension, and `loops` and `ring` last when the shape is
 * known. */
enum { KNOB_K, KNOB_BUF, KNOB_ORDER, KNOB_PACK, KNOB_PREC, KNOB_FIXED };

/* The flags that had a column before four-step joined.  A flag no candidate
 * sets is a constant column: it never changes a pick (it adds the same
 * count to every candidate's gain) but it does add a value and a pair per
 * other value to the totals a sweep reports (cover_values, cover_pairs,
 * covered_pairs).  These four keep their column always so that the totals
 * of every space stay what they were; a later flag, which only some ops
 * have (four-step: fft), gets a column only in a space where some
 * candidate sets it, so it changes nothing for the spaces of other ops. */
#define COVER_ALWAYS_FLAGS                                                                            \
  (DEV_FLAG_FUSE_CONVERTS | DEV_FLAG_SPLIT_REDUCTION | DEV_FLAG_VEC_SCATTER | DEV_FLAG_TWO_STAGE_SORT)

typedef struct {
  int n, nk, rank;
  int nflag;              /* flag columns */
  int flag_bit[DEV_FLAG_COUNT]; /* the flag bit of each flag column */
  int64_t *raw;       /* n * nk raw knob values */
  int *val;           /* n * nk dense value ids, per knob */
  int *nv;            /* values per knob */
  int *voff;          /* first global value id of each knob */
  int64_t *poff;      /* nk * nk: first global pair id of knob pair (a < b) */
  int nvals;
  int64_t npairs;     /* product-space pair ids (most never occur) */
  int64_t **vtab;     /* per knob: its distinct raw values, sorted */
} space;

/* The order as one number, so equal orders compare equal. */
static int64_t order_code(const dev_config *c) {
  int64_t code = c->norder;
  for (int i = 0; i < c->norder; i++)
    code = code * (DEV_MAX_RANK + 2) + (c->order[i] == DEV_ORDER_K ? 0 : c->order[i] + 1);
  return code;
}

/* The loop nest as base-4 digits, outermost first: 1 single-step, 2 an
 * output loop of more than one step, 3 a reduction of more than one chunk. */
static int64_t loops_code(const dev_config *c, const tn_cover_shape *sh) {
  if (!sh)
    return 0;
  int64_t code = 0;
  for (int i = 0; i < c->norder; i++) {
    int o = c->order[i], digit = 1;
    if (o == DEV_ORDER_K)
      digit = c->k > 0 && sh->k_total > c->k ? 3 : 1;
    else if (o >= 0 && o < sh->rank && o < c->rank)
      digit = c->tile[o] > 0 && sh->dims[o] > c->tile[o] ? 2 : 1;
    code = code * 4 + digit;
  }
  return code;
}

/* How many blocks of blk cover len, saturated below 2^31 (1 without a
 * block, or when one covers it). */
static int64_t blocks_of(int64_t len, int64_t blk) {
  if (blk <= 0 || len <= blk)
    return 1;
  int64_t b = (len - 1) / blk + 1;
  return b < INT32_MAX ? b : INT32_MAX;
}

/* The grid's steps: the reduction chunks times the output tiles, saturated
 * (only its comparison with buf matters; two factors below 2^31 cannot
 * overflow). */
static int64_t grid_steps(const dev_config *c, const tn_cover_shape *sh) {
  int64_t steps = blocks_of(sh->k_total, c->k);
  for (int d = 0; d < sh->rank && d < c->rank && steps < INT32_MAX; d++)
    steps *= blocks_of(sh->dims[d], c->tile[d]);
  return steps;
}

/* The ring: RING_SINGLE when one buffer leaves nothing to overlap; with
 * two or more, RING_FITS when the grid fetches a window no more times than
 * the ring has buffers, so no buffer is refilled, and RING_WRAPS when a
 * buffer is refilled while the pipeline runs.  A missing wait in a
 * software pipeline corrupts a refilled buffer only, and which configs
 * wrap is a product of tile, k and buf (three knobs at once) that a
 * pairwise cover of the raw knobs can step around: scatter_u8_set_slot's
 * 16 picks held every pair, yet its only wrapping configs without
 * vec-scatter were left out. */
enum { RING_SINGLE, RING_FITS, RING_WRAPS };

static int64_t ring_code(const dev_config *c, const tn_cover_shape *sh) {
  if (c->buf < 2)
    return RING_SINGLE;
  return grid_steps(c, sh) > c->buf ? RING_WRAPS : RING_FITS;
}

static void knob_values(const space *s, const dev_config *c, const tn_cover_shape *sh, int64_t *out) {
  int rank = s->rank, tiles = KNOB_FIXED + s->nflag;
  if (sh) {
    out[tiles + rank] = loops_code(c, sh);
    out[tiles + rank + 1] = ring_code(c, sh);
  }
  out[KNOB_K] = c->k;
  out[KNOB_BUF] = c->buf;
  out[KNOB_ORDER] = order_code(c);
  out[KNOB_PACK] = c->pack;
  out[KNOB_PREC] = c->prec;
  for (int f = 0; f < s->nflag; f++)
    out[KNOB_FIXED + f] = (c->flags >> s->flag_bit[f]) & 1u;
  for (int d = 0; d < rank; d++)
    out[tiles + d] = d < c->rank ? c->tile[d] : -1;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void space_free(space *s) {
  if (s->vtab)
    for (int j = 0; j < s->nk; j++)
      free(s->vtab[j]);
  free(s->vtab);
  free(s->raw);
  free(s->val);
  free(s->nv);
  free(s->voff);
  free(s->poff);
}

static int space_build(space *s, const dev_config *list, int n, const tn_cover_shape *sh) {
  memset(s, 0, sizeof *s);
  s->n = n;
  for (int i = 0; i < n; i++)
    if (list[i].rank > s->rank)
      s->rank = list[i].rank;
  unsigned set = 0;
  for (int i = 0; i < n; i++)
    set |= list[i].flags;
  for (int f = 0; f < DEV_FLAG_COUNT; f++)
    if (((COVER_ALWAYS_FLAGS | set) >> f) & 1u)
      s->flag_bit[s->nflag++] = f;
  s->nk = KNOB_FIXED + s->nflag + s->rank + (sh != NULL ? 2 : 0);
  size_t cells = (size_t)n * (size_t)s->nk;
  s->raw = malloc(sizeof *s->raw * cells);
  s->val = malloc(sizeof *s->val * cells);
  s->nv = calloc((size_t)s->nk, sizeof *s->nv);
  s->voff = calloc((size_t)s->nk, sizeof *s->voff);
  s->poff = calloc((size_t)s->nk * (size_t)s->nk, sizeof *s->poff);
  s->vtab = calloc((size_t)s->nk, sizeof *s->vtab);
  int64_t *col = malloc(sizeof *col * (size_t)n);
  if (!s->raw || !s->val || !s->nv || !s->voff || !s->poff || !s->vtab || !col) {
    free(col);
    return -1;
  }
  for (int i = 0; i < n; i++)
    knob_values(s, &list[i], sh, s->raw + (size_t)i * s->nk);
  for (int j = 0; j < s->nk; j++) {
    for (int i = 0; i < n; i++)
      col[i] = s->raw[(size_t)i * s->nk + j];
    qsort(col, (size_t)n, sizeof *col, cmp_i64);
    int m = 0;
    for (int i = 0; i < n; i++)
      if (m == 0 || col[i] != col[m - 1])
        col[m++] = col[i];
    s->vtab[j] = malloc(sizeof **s->vtab * (size_t)m);
    if (!s->vtab[j]) {
      free(col);
      return -1;
    }
    memcpy(s->vtab[j], col, sizeof *col * (size_t)m);
    s->nv[j] = m;
    s->voff[j] = s->nvals;
    s->nvals += m;
    for (int i = 0; i < n; i++) {
      int64_t *hit = bsearch(&s->raw[(size_t)i * s->nk + j], s->vtab[j], (size_t)m, sizeof *col, cmp_i64);
      s->val[(size_t)i * s->nk + j] = (int)(hit - s->vtab[j]);
    }
  }
  free(col);
  for (int a = 0; a < s->nk; a++)
    for (int b = a + 1; b < s->nk; b++) {
      s->poff[a * s->nk + b] = s->npairs;
      s->npairs += (int64_t)s->nv[a] * s->nv[b];
    }
  return 0;
}

static int64_t pair_id(const space *s, const int *v, int a, int b) {
  return s->poff[a * s->nk + b] + (int64_t)v[a] * s->nv[b] + v[b];
}

/* Marks candidate i's values and pairs in vset/pset. */
static void mark(const space *s, int i, unsigned char *vset, unsigned char *pset) {
  const int *v = s->val + (size_t)i * s->nk;
  for (int a = 0; a < s->nk; a++) {
    vset[s->voff[a] + v[a]] = 1;
    for (int b = a + 1; b < s->nk; b++)
      pset[pair_id(s, v, a, b)] = 1;
  }
}

static void gain(const space *s, int i, const unsigned char *vset, const unsigned char *pset, int *nv, int64_t *np) {
  const int *v = s->val + (size_t)i * s->nk;
  *nv = 0;
  *np = 0;
  for (int a = 0; a < s->nk; a++) {
    *nv += !vset[s->voff[a] + v[a]];
    for (int b = a + 1; b < s->nk; b++)
      *np += !pset[pair_id(s, v, a, b)];
  }
}

/* "knob=value" for value id v of knob j. */
static int knob_text(const space *s, int j, int v, char *buf, size_t n) {
  int64_t x = s->vtab[j][v];
  if (j == KNOB_FIXED + s->nflag + s->rank + 1) /* ring */
    return snprintf(buf, n, "ring=%s", x == RING_SINGLE ? "single" : x == RING_FITS ? "fits" : "wraps");
  if (j == KNOB_FIXED + s->nflag + s->rank) { /* loops */
    char d[DEV_MAX_RANK + 2];
    int len = 0;
    for (int64_t code = x; code > 0 && len < DEV_MAX_RANK + 1; code /= 4)
      d[len++] = code % 4 == 3 ? 'k' : code % 4 == 2 ? 'n' : '1';
    int w = snprintf(buf, n, "loops=");
    for (int i = len - 1; i >= 0 && (size_t)w + 1 < n; i--)
      buf[w++] = d[i];
    buf[w < (int)n ? w : (int)n - 1] = 0;
    return w;
  }
  if (j >= KNOB_FIXED + s->nflag)
    return snprintf(buf, n, "tile[%d]=%lld", j - KNOB_FIXED - s->nflag, (long long)x);
  if (j >= KNOB_FIXED)
    return snprintf(buf, n, "%s=%s", dev_flag_name((unsigned)s->flag_bit[j - KNOB_FIXED]), x ? "on" : "off");
  switch (j) {
  case KNOB_K:
    return snprintf(buf, n, "k=%lld", (long long)x);
  case KNOB_BUF:
    return snprintf(buf, n, "buf=%lld", (long long)x);
  case KNOB_PACK:
    return snprintf(buf, n, "pack=%lld", (long long)x);
  case KNOB_PREC:
    return snprintf(buf, n, "prec=%s", dev_precision_name((dev_precision)x));

  default: { /* the order: decode the digits back, outermost first */
    char d[DEV_MAX_RANK + 2];
    int len = 0;
    int64_t code = x;
    while (code >= DEV_MAX_RANK + 2 && len < DEV_MAX_RANK + 1) {
      int digit = (int)(code % (DEV_MAX_RANK + 2));
      d[len++] = digit == 0 ? 'k' : (char)('0' + digit - 1);
      code /= DEV_MAX_RANK + 2;
    }
    int w = snprintf(buf, n, "order=");
    for (int i = len - 1; i >= 0 && (size_t)w + 1 < n; i--)
      buf[w++] = d[i];
    buf[w < (int)n ? w : (int)n - 1] = 0;
    return w;
  }
  }
}

/* The covered pairs as text, one a line. */
static char *pairs_text(const space *s, const unsigned char *pset) {
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  out[0] = 0;
  for (int a = 0; a < s->nk; a++)
    for (int b = a + 1; b < s->nk; b++)
      for (int x = 0; x < s->nv[a]; x++)
        for (int y = 0; y < s->nv[b]; y++) {
          if (!pset[s->poff[a * s->nk + b] + (int64_t)x * s->nv[b] + y])
            continue;
          char l[160], r[160];
          knob_text(s, a, x, l, sizeof l);
          knob_text(s, b, y, r, sizeof r);
          size_t need = strlen(l) + strlen(r) + 3;
          if (len + need > cap) {
            char *p = realloc(out, cap = 2 * cap + need);
            if (!p) {
              free(out);
              return NULL;
            }
            out = p;
          }
          len += (size_t)sprintf(out + len, "%s %s\n", l, r);
        }
  return out;
}

uint64_t tn_cover_rotate(uint64_t seed, int yyyymmdd) { return hlo_mix64(seed, (uint64_t)yyyymmdd); }

void tn_cover_free(tn_cover *c) {
  if (c) {
    free(c->pairs_text);
    c->pairs_text = NULL;
  }
}

int tn_cover_select(dev_config *list, int n, int budget, uint64_t seed, const tn_cover_shape *shape,
                    const bool *compiles, tn_cover *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  out->seed = seed;
  if (n <= 0)
    return 0;
  if (budget <= 0 || budget > n)
    budget = n;
  space s;
  unsigned char *vset = NULL, *pset = NULL, *vall = NULL, *pall = NULL, *vsum = NULL, *psum = NULL;
  uint64_t *h = malloc(sizeof *h * (size_t)n);
  int *order = malloc(sizeof *order * (size_t)n);
  bool *chosen = calloc((size_t)n, sizeof *chosen);
  dev_config *tmp = malloc(sizeof *tmp * (size_t)n);
  int rc = -1;
  if (space_build(&s, list, n, shape) != 0 || !h || !order || !chosen || !tmp)
    goto done;
  vset = calloc((size_t)s.nvals + 1, 1);
  vall = calloc((size_t)s.nvals + 1, 1);
  vsum = calloc((size_t)s.nvals + 1, 1);
  pset = calloc((size_t)s.npairs + 1, 1);
  pall = calloc((size_t)s.npairs + 1, 1);
  psum = calloc((size_t)s.npairs + 1, 1);
  if (!vset || !vall || !vsum || !pset || !pall || !psum)
    goto done;
  int runnable = 0; /* candidates that compile, the default aside */
  for (int i = 0; i < n; i++) {
    h[i] = hlo_mix64(seed, dev_config_fingerprint(&list[i]));
    if (!compiles || compiles[i]) {
      mark(&s, i, vall, pall);
      runnable += i > 0;
    }
  }

  /* The default first, then greedy picks; a pick adding nothing means the
   * layer is complete, and the next one starts from an empty cover. */
  int k = 0;
  order[k++] = 0;
  chosen[0] = true;
  if (!compiles || compiles[0])
    mark(&s, 0, vset, pset);
  if (budget == n) /* no choice to make: keep the space's order */
    for (; k < n; k++) {
      order[k] = k;
      chosen[k] = true;
    }
  while (k < budget) {
    int best = -1, bv = 0;
    int64_t bp = 0;
    /* A candidate that does not compile runs nothing, so it covers
     * nothing: it is picked only once every one that compiles is. */
    bool any = runnable > 0;
    for (int pass = 0; pass < 2 && (best < 0 || (bv == 0 && bp == 0)); pass++) {
      if (pass == 1) { /* a new layer */
        memset(vset, 0, (size_t)s.nvals);
        memset(pset, 0, (size_t)s.npairs);
      }
      best = -1;
      for (int i = 1; i < n; i++) {
        if (chosen[i] || (any && compiles && !compiles[i]))
          continue;
        int gv;
        int64_t gp;
        gain(&s, i, vset, pset, &gv, &gp);
        if (best < 0 || gv > bv || (gv == bv && (gp > bp || (gp == bp && h[i] < h[best])))) {
          best = i;
          bv = gv;
          bp = gp;
        }
      }
    }
    if (best < 0)
      break;
    chosen[best] = true;
    order[k++] = best;
    if (!compiles || compiles[best]) {
      mark(&s, best, vset, pset);
      runnable--;
    }
  }

  for (int i = 0; i < k; i++)
    if (!compiles || compiles[order[i]])
      mark(&s, order[i], vsum, psum);
  for (int v = 0; v < s.nvals; v++) {
    out->values += vall[v];
    out->values_covered += vsum[v];
  }
  for (int64_t p = 0; p < s.npairs; p++) {
    out->pairs += pall[p];
    out->pairs_covered += psum[p];
  }
  if (!(out->pairs_text = pairs_text(&s, psum)))
    goto done;

  if (k < n) {
    int w = 0;
    for (int i = 0; i < k; i++)
      tmp[w++] = list[order[i]];
    for (int i = 0; i < n; i++)
      if (!chosen[i])
        tmp[w++] = list[i];
    memcpy(list, tmp, sizeof *list * (size_t)n);
  }
  rc = 0;
done:
  space_free(&s);
  free(h);
  free(order);
  free(chosen);
  free(tmp);
  free(vset);
  free(pset);
  free(vall);
  free(pall);
  free(vsum);
  free(psum);
  if (rc != 0)
    return hlo_error_set(err, 0, 0, "out of memory choosing the candidates of the budget");
  return 0;
}
