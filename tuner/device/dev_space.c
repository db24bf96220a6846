/* dev_space.c — knob lists, the default heuristic and the bounded,
 * deterministic candidate list of a fusion (the rules are in dev_space.h). */
#include "dev_space.h"

#include <stdlib.h>
#include <string.h>

#include "dev_lower.h"
#include "hlo/hlo_index.h"

/* ---- value lists ----------------------------------------------------------- */

static void add_value(dev_space_values *v, int64_t x) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == x)
      return;
  if (v->n < DEV_SPACE_MAX_VALUES)
    v->v[v->n++] = x;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void sort_values(dev_space_values *v) { qsort(v->v, (size_t)v->n, sizeof v->v[0], cmp_i64); }

static int index_of(const dev_space_values *v, int64_t x) {
  for (int i = 0; i < v->n; i++)
    if (v->v[i] == x)
      return i;
  return 0;
}

/* ---- types and alignment ------------------------------------------------- */

/* Sublanes a block's second-minor dimension must be a multiple of: packed
 * types fill a 32-bit sublane with 2 (16-bit) or 4 (8-bit) rows. */
static int type_sublanes(const dev_machine *m, hlo_etype t) {
  int bits = hlo_etype_bits(t);
  if (bits <= 0 || bits >= 32)
    return m->sublanes;
  return m->sublanes * 32 / (bits < 8 ? 8 : bits);
}

static int fusion_sublanes(const dev_fusion *f, const dev_machine *m) {
  int s = type_sublanes(m, f->out_type);
  for (int i = 0; i < f->comp->nparams; i++) {
    const hlo_instr *p = f->comp->params[i];
    if (p && p->shape.type != HLO_TUPLE && p->shape.rank >= 2) {
      int ps = type_sublanes(m, p->shape.type);
      if (ps > s)
        s = ps;
    }
  }
  return s;
}

static bool has_op(const hlo_computation *c, hlo_opcode op) {
  for (int i = 0; i < c->ninstrs; i++)
    if (c->instrs[i]->op == op)
      return true;
  return false;
}

/* Reductions are the fusions with a k loop. */
static bool is_reduction(const dev_fusion *f) {
  return (f->kind == DEV_HERO_REDUCE || f->kind == DEV_HERO_DOT) && f->k_total > 0;
}

/* Only an f32 dot has a precision choice: other types have one MXU path. */
static bool is_f32_dot(const dev_fusion *f) {
  if (f->kind != DEV_HERO_DOT || !f->hero || f->hero->noperands < 2)
    return false;
  return f->hero->operands[0]->shape.type == HLO_F32 && f->hero->operands[1]->shape.type == HLO_F32;
}

/* ---- the default ----------------------------------------------------------- */

/* D itself when small; else the largest aligned divisor in [lo, cap] (no
 * ragged edge to mask); else D when it is not too large; else cap. */
static int64_t pick_tile(int64_t d, int64_t align, int64_t lo, int64_t cap, int64_t full_cap) {
  if (d <= cap)
    return d;
  for (int64_t t = cap / align * align; t >= lo && t >= align; t -= align)
    if (d % t == 0)
      return t;
  return d <= full_cap ? d : cap;
}

static int64_t pick_k(int64_t k_total) {
  if (k_total <= 512)
    return k_total;
  for (int64_t p = 512; p >= 128; p /= 2)
    if (k_total % p == 0)
      return p;
  return k_total <= 8192 ? k_total : 512;
}

#define LEADING_BLOCK_BYTES (512 << 10)

/* Small minor tiles leave a grid of many tiny steps, each paying the step
 * overhead: grow the leading dims, innermost first, to the largest divisor
 * of the dim that keeps the output block within LEADING_BLOCK_BYTES. */
static void grow_leading(const dev_fusion *f, dev_config *c) {
  int bits = hlo_etype_bits(f->out_type);
  int64_t elem_bytes = bits >= 8 ? bits / 8 : 1;
  for (int i = f->rank - 3; i >= 0; i--) {
    int64_t rest = elem_bytes;
    for (int j = 0; j < f->rank && rest <= LEADING_BLOCK_BYTES; j++)
      if (j != i)
        rest *= c->tile[j]; /* stops past the cap: every factor is >= 1 */
    if (rest > LEADING_BLOCK_BYTES)
      continue;
    /* Search down from the cap, not from the dim: a dim of 10^12 would
     * otherwise cost 10^12 trials (the cap bounds them by 2^19). */
    int64_t cap = LEADING_BLOCK_BYTES / rest;
    for (int64_t t = f->dims[i] < cap ? f->dims[i] : cap; t > 1; t--)
      if (f->dims[i] % t == 0) {
        c->tile[i] = t;
        break;
      }
  }
}

static void natural_order(dev_config *c) {
  c->norder = 0;
  for (int i = 0; i < c->rank; i++)
    c->order[c->norder++] = i;
  if (c->k > 0)
    c->order[c->norder++] = DEV_ORDER_K;
}

/* One step down the shrinking ladder; false when nothing can shrink. */
static bool shrink(dev_config *c, int lanes, int sub) {
  int r = c->rank;
  if (r >= 1 && c->tile[r - 1] > lanes) {
    int64_t t = c->tile[r - 1] / 2 / lanes * lanes;
    c->tile[r - 1] = t < lanes ? lanes : t;
    return true;
  }
  if (r >= 2 && c->tile[r - 2] > sub) {
    int64_t t = c->tile[r - 2] / 2 / sub * sub;
    c->tile[r - 2] = t < sub ? sub : t;
    return true;
  }
  if (c->k > 128) {
    int64_t t = c->k / 2 / 128 * 128;
    c->k = t < 128 ? 128 : t;
    return true;
  }
  for (int i = 0; i + 2 < r; i++)
    if (c->tile[i] > 1) {
      c->tile[i] /= 2;
      return true;
    }
  return false;
}

static int check_rank(const dev_fusion *f, hlo_error *err) {
  if (f->rank < 0 || f->rank > DEV_MAX_RANK)
    return hlo_error_set(err, 0, 0, "output rank %d exceeds the device's limit of %d", f->rank,
                         DEV_MAX_RANK);
  return 0;
}

/* f with the lowering's analyses (dev_lower_plan_new), which every
 * estimate reads (dev_lower_param_block), made once here when f is not
 * prepared instead of once per estimate; *own is what to free
 * (dev_lower_plan_free), NULL when f was prepared or memory ran out (the
 * estimates then make their own). */
static dev_fusion with_plan(const dev_fusion *f, dev_lower_plan **own) {
  dev_fusion g = *f;
  *own = NULL;
  if (!g.lower)
    g.lower = *own = dev_lower_plan_new(f);
  return g;
}

static int space_default(const dev_fusion *f, const dev_machine *m, dev_config *c, hlo_error *err) {
  if (check_rank(f, err) != 0)
    return -1;
  memset(c, 0, sizeof *c);
  int lanes = m->lanes, sub = fusion_sublanes(f, m);
  c->rank = f->rank;
  for (int i = 0; i < f->rank; i++)
    c->tile[i] = 1;
  if (f->rank >= 1)
    c->tile[f->rank - 1] = pick_tile(f->dims[f->rank - 1], lanes, 128, 1024, 4096);
  if (f->rank >= 2)
    c->tile[f->rank - 2] = pick_tile(f->dims[f->rank - 2], sub, 64, 256, 1024);
  for (int i = 0; i < f->rank; i++)
    if (c->tile[i] < 1) /* a zero-sized dimension */
      c->tile[i] = 1;
  grow_leading(f, c);
  c->k = is_reduction(f) ? pick_k(f->k_total) : 0;
  c->buf = 2;
  c->pack = 1;
  c->prec = DEV_PREC_DEFAULT;
  c->flags = 0;
  natural_order(c);
  while (dev_space_vmem_estimate(f, m, c) > m->vmem_bytes / 2 && shrink(c, lanes, sub)) {
  }
  /* A leading tile of 1 can land on a parameter's second-minor dim (a
   * transpose, an index array): widen dims to their full extent, outermost
   * first, until the blocks are legal.  A whole dim is always a legal block
   * dim. */
  for (int i = 0; i < c->rank && !dev_space_plausible(f, m, c); i++) {
    dev_config wider = *c;
    wider.tile[i] = f->dims[i] < 1 ? 1 : f->dims[i];
    if (dev_space_vmem_estimate(f, m, &wider) <= m->vmem_bytes / 2)
      *c = wider;
  }
  return 0;
}

int dev_space_default(const dev_fusion *f, const dev_machine *m, dev_config *c, hlo_error *err) {
  dev_lower_plan *own;
  dev_fusion g = with_plan(f, &own);
  int rc = space_default(&g, m, c, err);
  dev_lower_plan_free(own);
  return rc;
}

/* ---- knob lists ------------------------------------------------------------ */

/* The smallest multiple of align that leaves a remainder: below d when one
 * exists, else one padded tile past d.  0 for tiny dims (nothing to learn). */
static int64_t ragged(int64_t d, int64_t align) {
  if (d <= 8)
    return 0;
  for (int64_t t = align;; t += align)
    if (d % t != 0)
      return t;
}

static void minor_tiles(dev_space_values *v, int64_t d, int lanes) {
  for (int64_t p = lanes; p < d && p <= 2048; p *= 2)
    add_value(v, p);
  if (3 * lanes < d)
    add_value(v, 3 * lanes);
  add_value(v, d);
  int64_t r = ragged(d, lanes);
  if (r)
    add_value(v, r);
  if (d > lanes)
    add_value(v, lanes / 2);
}

static void second_minor_tiles(dev_space_values *v, int64_t d, int sub) {
  for (int64_t p = 8; p < d && p <= 512; p *= 2)
    add_value(v, p);
  if (3 * sub < d)
    add_value(v, 3 * sub);
  add_value(v, d);
  int64_t r = ragged(d, sub);
  if (r)
    add_value(v, r);
}

static void leading_tiles(dev_space_values *v, int64_t d) {
  add_value(v, 1);
  if (d >= 2)
    add_value(v, 2);
  if (d <= 8)
    add_value(v, d);
}

static void k_values(dev_space_values *v, int64_t k_total) {
  for (int64_t p = 128; p < k_total && p <= 4096; p *= 2)
    add_value(v, p);
  add_value(v, k_total);
  /* Ragged chunks: lane-aligned (one padded chunk past k_total when every
   * multiple of 128 below it divides it), and for short reductions a
   * sublane-aligned one as well. */
  int64_t r = ragged(k_total, 128);
  if (r)
    add_value(v, r);
  for (int64_t t = 8; t < k_total && k_total < 128; t += 8)
    if (k_total % t != 0) {
      add_value(v, t);
      break;
    }
  if (k_total > 32)
    add_value(v, 32);
}

static void add_order(dev_space_knobs *kn, const int *ord) {
  for (int i = 0; i < kn->norders; i++)
    if (memcmp(kn->order[i], ord, sizeof(int) * (size_t)kn->order_len) == 0)
      return;
  memcpy(kn->order[kn->norders++], ord, sizeof(int) * (size_t)kn->order_len);
}

static int knobs_of(const dev_fusion *f, const dev_machine *m, dev_space_knobs *kn, hlo_error *err) {
  dev_config d;
  if (space_default(f, m, &d, err) != 0)
    return -1;
  memset(kn, 0, sizeof *kn);
  int r = f->rank;
  kn->rank = r;
  kn->sublanes = fusion_sublanes(f, m);
  for (int i = 0; i < r; i++) {
    int64_t dim = f->dims[i] < 1 ? 1 : f->dims[i];
    if (i == r - 1)
      minor_tiles(&kn->tile[i], dim, m->lanes);
    else if (i == r - 2)
      second_minor_tiles(&kn->tile[i], dim, kn->sublanes);
    else
      leading_tiles(&kn->tile[i], dim);
    add_value(&kn->tile[i], d.tile[i]);
    sort_values(&kn->tile[i]);
  }
  bool red = is_reduction(f);
  if (red)
    k_values(&kn->k, f->k_total);
  add_value(&kn->k, d.k);
  sort_values(&kn->k);
  for (int b = 1; b <= 4; b++)
    add_value(&kn->buf, b);
  add_value(&kn->pack, 1);
  if (red) {
    add_value(&kn->pack, 2);
    add_value(&kn->pack, 4);
  }
  add_value(&kn->prec, DEV_PREC_DEFAULT);
  if (is_f32_dot(f)) {
    add_value(&kn->prec, DEV_PREC_HIGH);
    add_value(&kn->prec, DEV_PREC_HIGHEST);
  }

  /* Orders: the natural one, k outermost, the last two output dims swapped. */
  kn->order_len = d.norder;
  add_order(kn, d.order);
  if (red && r >= 1) {
    int o[DEV_MAX_RANK + 1];
    o[0] = DEV_ORDER_K;
    for (int i = 0; i < r; i++)
      o[i + 1] = i;
    add_order(kn, o);
  }
  if (r >= 2) {
    int o[DEV_MAX_RANK + 1];
    memcpy(o, d.order, sizeof o);
    o[r - 2] = r - 1;
    o[r - 1] = r - 2;
    add_order(kn, o);
  }

  if (has_op(f->comp, HLO_OP_CONVERT))
    kn->flags |= DEV_FLAG_FUSE_CONVERTS;
  if (red)
    kn->flags |= DEV_FLAG_SPLIT_REDUCTION;
  if (f->kind == DEV_HERO_SCATTER)
    kn->flags |= DEV_FLAG_VEC_SCATTER;
  if (f->kind == DEV_HERO_SORT)
    kn->flags |= DEV_FLAG_TWO_STAGE_SORT;
  if (has_op(f->comp, HLO_OP_FFT))
    kn->flags |= DEV_FLAG_FOUR_STEP;
  return 0;
}

int dev_space_knobs_of(const dev_fusion *f, const dev_machine *m, dev_space_knobs *kn, hlo_error *err) {
  dev_lower_plan *own;
  dev_fusion g = with_plan(f, &own);
  int rc = knobs_of(&g, m, kn, err);
  dev_lower_plan_free(own);
  return rc;
}

/* ---- axes: the knobs as one mixed-radix index space ------------------------- */

enum { AX_TILE, AX_K, AX_BUF, AX_ORDER, AX_PACK, AX_PREC, AX_FLAG };
#define MAX_AXES (DEV_MAX_RANK + 5 + DEV_FLAG_COUNT)

typedef struct axis {
  int what;  /* AX_* */
  int which; /* the tile dim, or the flag bit */
  int n;     /* number of values */
} axis;

typedef struct space {
  const dev_space_knobs *kn;
  axis ax[MAX_AXES];
  int nax;
} space;

static void add_axis(space *s, int what, int which, int n) {
  s->ax[s->nax].what = what;
  s->ax[s->nax].which = which;
  s->ax[s->nax].n = n;
  s->nax++;
}

static void make_axes(space *s, const dev_space_knobs *kn) {
  s->kn = kn;
  s->nax = 0;
  for (int i = 0; i < kn->rank; i++)
    add_axis(s, AX_TILE, i, kn->tile[i].n);
  add_axis(s, AX_K, 0, kn->k.n);
  add_axis(s, AX_BUF, 0, kn->buf.n);
  add_axis(s, AX_ORDER, 0, kn->norders);
  add_axis(s, AX_PACK, 0, kn->pack.n);
  add_axis(s, AX_PREC, 0, kn->prec.n);
  for (int b = 0; b < DEV_FLAG_COUNT; b++)
    if (kn->flags & (1u << b))
      add_axis(s, AX_FLAG, b, 2);
}

static void build(const space *s, const int *idx, dev_config *c) {
  const dev_space_knobs *kn = s->kn;
  memset(c, 0, sizeof *c);
  c->rank = kn->rank;
  for (int a = 0; a < s->nax; a++) {
    int i = idx[a];
    switch (s->ax[a].what) {
    case AX_TILE: c->tile[s->ax[a].which] = kn->tile[s->ax[a].which].v[i]; break;
    case AX_K: c->k = kn->k.v[i]; break;
    case AX_BUF: c->buf = (int)kn->buf.v[i]; break;
    case AX_ORDER:
      c->norder = kn->order_len;
      memcpy(c->order, kn->order[i], sizeof(int) * (size_t)kn->order_len);
      break;
    case AX_PACK: c->pack = (int)kn->pack.v[i]; break;
    case AX_PREC: c->prec = (dev_precision)kn->prec.v[i]; break;
    default:
      if (i)
        c->flags |= 1u << s->ax[a].which;
      break;
    }
  }
}

/* The default's position on every axis. */
static void default_index(const space *s, const dev_config *d, int *idx) {
  const dev_space_knobs *kn = s->kn;
  for (int a = 0; a < s->nax; a++) {
    switch (s->ax[a].what) {
    case AX_TILE: idx[a] = index_of(&kn->tile[s->ax[a].which], d->tile[s->ax[a].which]); break;
    case AX_K: idx[a] = index_of(&kn->k, d->k); break;
    case AX_BUF: idx[a] = index_of(&kn->buf, d->buf); break;
    case AX_PACK: idx[a] = index_of(&kn->pack, d->pack); break;
    case AX_PREC: idx[a] = index_of(&kn->prec, d->prec); break;
    default: idx[a] = 0; break; /* natural order first; flags off */
    }
  }
}

/* ---- the list ------------------------------------------------------------- */

typedef struct list {
  dev_config *v;
  int n, implausible;
} list;

static bool contains(const list *l, const dev_config *c) {
  for (int i = 0; i < l->n; i++)
    if (dev_config_equal(&l->v[i], c))
      return true;
  return false;
}

static bool push(list *l, const dev_config *c) {
  if (l->n >= DEV_SPACE_MAX || contains(l, c))
    return false;
  l->v[l->n++] = *c;
  return true;
}

/* Adds a config past the coverage part: one the device would most likely
 * refuse is kept only while such configs stay within 1/8 of the list, so
 * that most of the sweep's time goes to candidates that compile. */
static void offer(list *l, const dev_fusion *f, const dev_machine *m, const dev_config *c) {
  if (dev_space_plausible(f, m, c)) {
    push(l, c);
  } else if ((l->implausible + 1) * 8 <= l->n + 1 && push(l, c)) {
    l->implausible++;
  }
}

/* splitmix64: a tiny, well-mixed generator, so the sample is reproducible
 * everywhere without depending on the C library's rand(). */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#define SPACE_SEED 0x74756e6573706163ull /* "tunespac" */

/* One round of Latin hypercube sampling: nsamp samples, each axis's values
 * spread evenly over them, in an order shuffled per axis. */
static int lhs_round(const space *s, const dev_fusion *f, const dev_machine *m, list *l, int nsamp,
                     int round) {
  int *perm = malloc(sizeof(int) * (size_t)nsamp * (size_t)s->nax);
  if (!perm)
    return -1;
  for (int a = 0; a < s->nax; a++) {
    int *p = perm + (size_t)a * (size_t)nsamp;
    uint64_t st = SPACE_SEED ^ ((uint64_t)(a + 1) << 32) ^ (uint64_t)round;
    for (int j = 0; j < nsamp; j++)
      p[j] = j;
    for (int j = nsamp - 1; j > 0; j--) {
      int r = (int)(splitmix64(&st) % (uint64_t)(j + 1));
      int t = p[j];
      p[j] = p[r];
      p[r] = t;
    }
  }
  for (int j = 0; j < nsamp && l->n < DEV_SPACE_MAX; j++) {
    int idx[MAX_AXES];
    for (int a = 0; a < s->nax; a++)
      idx[a] = (int)((int64_t)perm[(size_t)a * (size_t)nsamp + (size_t)j] * s->ax[a].n / nsamp);
    dev_config c;
    build(s, idx, &c);
    offer(l, f, m, &c);
  }
  free(perm);
  return 0;
}

/* Product of the axis sizes, saturating just above the cap. */
static int64_t product(const space *s) {
  int64_t t = 1;
  for (int a = 0; a < s->nax; a++) {
    t *= s->ax[a].n;
    if (t > DEV_SPACE_MAX)
      return DEV_SPACE_MAX + 1;
  }
  return t;
}

static int enumerate(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *n, dev_config *dflt,
                     hlo_error *err) {
  *cands = NULL;
  *n = 0;
  dev_space_knobs kn;
  dev_config d;
  if (knobs_of(f, m, &kn, err) != 0 || space_default(f, m, &d, err) != 0)
    return -1;
  space s;
  make_axes(&s, &kn);
  list l = {malloc(sizeof(dev_config) * DEV_SPACE_MAX), 0, 0};
  if (!l.v)
    return hlo_error_set(err, 0, 0, "out of memory for the candidate space");
  push(&l, &d);

  /* Coverage: every value of every knob, each on top of the default. */
  int base[MAX_AXES], idx[MAX_AXES];
  default_index(&s, &d, base);
  for (int a = 0; a < s.nax; a++)
    for (int v = 0; v < s.ax[a].n; v++) {
      memcpy(idx, base, sizeof idx);
      idx[a] = v;
      dev_config c;
      build(&s, idx, &c);
      if (push(&l, &c) && !dev_space_plausible(f, m, &c))
        l.implausible++;
    }

  int64_t total = product(&s);
  if (total <= DEV_SPACE_MAX) {
    /* Small enough: the rest of the product, last axis fastest. */
    int64_t pos[MAX_AXES] = {0}, ext[MAX_AXES];
    for (int a = 0; a < s.nax; a++)
      ext[a] = s.ax[a].n;
    for (int64_t i = 0; i < total; i++, hlo_index_next(s.nax, ext, pos)) {
      for (int a = 0; a < s.nax; a++)
        idx[a] = (int)pos[a];
      dev_config c;
      build(&s, idx, &c);
      offer(&l, f, m, &c);
    }
  } else {
    /* The rest: stratified samples of the product.  Duplicates and skipped
     * implausible samples leave holes, so a few more rounds fill them. */
    for (int round = 0; round < 8 && l.n < DEV_SPACE_MAX; round++)
      if (lhs_round(&s, f, m, &l, DEV_SPACE_MAX - l.n, round) != 0) {
        free(l.v);
        return hlo_error_set(err, 0, 0, "out of memory for the candidate space");
      }
  }
  *cands = l.v;
  *n = l.n;
  *dflt = d;
  return 0;
}

int dev_space_enumerate(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *n,
                        dev_config *dflt, hlo_error *err) {
  dev_lower_plan *own;
  dev_fusion g = with_plan(f, &own);
  int rc = enumerate(&g, m, cands, n, dflt, err);
  dev_lower_plan_free(own);
  return rc;
}

/* ---- the estimate ----------------------------------------------------------- */

/* The block one grid step of c needs of kernel parameter pi, of shape p
 * (see dev_space_vmem_estimate for the matching rule). */
static void param_block(const dev_fusion *f, const dev_machine *m, const dev_config *c, int pi, const hlo_shape *p,
                        int64_t *block) {
  bool used[DEV_MAX_RANK] = {false};
  bool k_used = false;
  for (int j = p->rank - 1; j >= 0; j--) {
    int64_t d = p->dims[j];
    int same = c->rank - (p->rank - j);
    int o = -1;
    if (same >= 0 && same < c->rank && same < f->rank && !used[same] && f->dims[same] == d)
      o = same;
    for (int i = c->rank - 1; i >= 0 && o < 0; i--)
      if (i < f->rank && !used[i] && f->dims[i] == d)
        o = i;
    if (o >= 0) {
      used[o] = true;
      block[j] = c->tile[o];
    } else if (c->k > 0 && !k_used && d == f->k_total) {
      k_used = true;
      block[j] = c->k < d ? c->k : d;
    } else {
      block[j] = d;
    }
  }
  /* A dimension the lowering follows through a pad's padding or a
   * reshape's merge has no output dimension of its size to match: it
   * stages what the lowering stages there (sized whole, a padded operand
   * was refused where it fits, or a merged one admitted where it does not) */
  int64_t lb[DEV_MAX_RANK];
  unsigned special = dev_lower_param_block(f, c, m, pi, lb);
  for (int j = 0; j < p->rank; j++)
    if ((special >> j) & 1u)
      block[j] = lb[j];
}

static int64_t block_bytes(const int64_t *block, int rank, hlo_etype t) {
  int64_t e = 1;
  for (int i = 0; i < rank; i++)
    e *= block[i];
  int bits = hlo_etype_bits(t);
  return (e * (bits > 0 ? bits : 8) + 7) / 8;
}

int64_t dev_space_vmem_estimate(const dev_fusion *f, const dev_machine *m, const dev_config *c) {
  int64_t total = 0;
  for (int i = 0; i < f->comp->nparams; i++) {
    const hlo_instr *p = f->comp->params[i];
    if (!p)
      continue;
    if (p->shape.type == HLO_TUPLE || p->shape.rank > DEV_MAX_RANK) {
      total += c->buf * (int64_t)hlo_shape_elements(&p->shape) * 4;
      continue;
    }
    int64_t block[DEV_MAX_RANK];
    param_block(f, m, c, i, &p->shape, block);
    total += c->buf * block_bytes(block, p->shape.rank, p->shape.type);
  }
  int64_t out = block_bytes(c->tile, c->rank, f->out_type);
  total += out;
  if (c->k > 0) {
    int64_t tile_elems = 1;
    for (int i = 0; i < c->rank; i++)
      tile_elems *= c->tile[i];
    total += (int64_t)c->pack * tile_elems * 4;
  }
  return total;
}

static bool block_ok(const dev_machine *m, const int64_t *block, const int64_t *dims, int rank,
                     hlo_etype t) {
  if (rank >= 1) {
    int64_t b = block[rank - 1], d = dims[rank - 1];
    if (b != d && b % m->lanes != 0)
      return false;
  }
  if (rank >= 2) {
    int64_t b = block[rank - 2], d = dims[rank - 2];
    if (b != d && b % type_sublanes(m, t) != 0)
      return false;
  }
  return true;
}

bool dev_space_plausible(const dev_fusion *f, const dev_machine *m, const dev_config *c) {
  if (c->rank != f->rank || !block_ok(m, c->tile, f->dims, c->rank, f->out_type) ||
      !dev_lower_runs_contiguous(f, c))
    return false;
  for (int i = 0; i < f->comp->nparams; i++) {
    const hlo_instr *p = f->comp->params[i];
    if (!p || p->shape.type == HLO_TUPLE || p->shape.rank > DEV_MAX_RANK)
      continue;
    int64_t block[DEV_MAX_RANK];
    param_block(f, m, c, i, &p->shape, block);
    if (!block_ok(m, block, p->shape.dims, p->shape.rank, p->shape.type))
      return false;
  }
  return dev_space_vmem_estimate(f, m, c) <= m->vmem_bytes;
}
