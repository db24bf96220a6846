/* dev_acc.c — the hero's accumulators: their set-up, the initialisation of
 * an output window (packed-reduce-init0), the revisit tracker that spills
 * and reloads them when the k loop leaves a window (revisit-no-reinit),
 * the fresh slots of a split chunk, and the final combination of pack
 * slots and split partials that the epilogue reads.  The folds that fill
 * them are in dev_fold_*.c.  (dev_accum.c is another thing: the
 * accumulation depth of a config, for the checker's tolerance.)
 */
#include <stdlib.h>
#include <string.h>

#include "dev_exec_internal.h"

/* The hero result box the current output tile needs (the lowering's
 * dev_hero_box, which knows the runs of merged dimensions). */
static void hero_region(const exec *x, dev_box *b) {
  memset(b, 0, sizeof *b);
  b->rank = x->s->hero_rank;
  dev_hero_box(x->s, x->t, b->lo, b->n);
  b->count = 1;
  for (int d = 0; d < b->rank; d++)
    b->count *= b->n[d];
}

static int64_t acc_span(const exec *x) { return x->rcap * x->P; }

static bool is_float_t(hlo_etype t) { return hlo_etype_class(t) == HLO_CLASS_FLOAT; }

/* Starts a fresh output window: accumulator 0 of each element holds the
 * init value; the other pack slots start empty (the first element that
 * lands in one becomes its value), so the init value is applied exactly
 * once whatever P is.  A dot starts every slot at zero. */
static int acc_init_window(exec *x) {
  int64_t n = x->region.count;
  int nv = x->nv;
  dev_slot init[DEV_VRED_MAX];
  uint8_t ipoison = 0;
  if (x->is_dot) {
    if (is_float_t(x->acc_t))
      init[0].f = 0.0;
    else
      init[0].i = 0;
  } else {
    /* the inits are the hero's operands nv..2nv-1 (one for a plain reduce) */
    for (int j = 0; j < nv; j++) {
      dev_box want = {.rank = 0, .count = 1}, b;
      if (dev_elem_eval(x->el, x->f->hero->operands[nv + j], &want, false, dev_x_window_read, NULL, x, &b, x->why,
                        x->why_len) != 0)
        return -1;
      init[j] = b.v[0];
      ipoison |= b.poison[0];
      dev_elem_box_release(x->el, &b);
    }
  }
  /* Defect packed-reduce-init0 (class: a loop-boundary check emitted for
   * index 0 only; the paper's packed windowed-reduction bug): only pack
   * slot 0 is initialised, slots 1..P-1 keep what VMEM holds, i.e. the
   * previous output window's partials (slot for slot, all nv values of a
   * variadic reduce's slot); the first window of a run finds them cleared
   * and is right. */
  int slots = dev_x_on(x, DEV_DEFECT_PACKED_REDUCE_INIT0) ? 1 : x->P;
  if (x->is_dot && nv == 1 && slots == x->P) {
    /* the loop below when every slot is live and holds one value: the
     * n * P slots in a row, filled as such */
    int64_t ns = n * x->P;
    for (int64_t k = 0; k < ns; k++)
      x->acc[k] = init[0];
    memset(x->acc_valid, 1, (size_t)ns);
    memset(x->acc_poison, ipoison, (size_t)ns);
    n = 0;
  }
  for (int64_t i = 0; i < n; i++)
    for (int p = 0; p < slots; p++) {
      int64_t k = i * x->P + p;
      bool live = x->is_dot || p == 0;
      for (int j = 0; j < nv; j++)
        x->acc[k * nv + j] = init[j];
      x->acc_valid[k] = live;
      x->acc_poison[k] = live ? ipoison : 0;
    }
  if (x->split)
    for (int64_t i = 0; i < n * x->s->nk; i++)
      x->part_valid[i] = 0, x->part_poison[i] = 0;
  return 0;
}

static int ensure_spill(exec *x) {
  if (x->spill)
    return 0;
  int64_t per = acc_span(x) + (x->split ? x->rcap * x->s->nk : 0);
  size_t n = (size_t)(x->ntiles * per);
  x->spill = malloc((n ? n * (size_t)x->nv : 1) * sizeof *x->spill);
  x->spill_valid = malloc(n ? n : 1);
  x->spill_poison = malloc(n ? n : 1);
  return x->spill && x->spill_valid && x->spill_poison ? 0 : dev_x_fail(x, "out of memory");
}

/* Saves (dir = 0) or restores (dir = 1) the VMEM accumulators of tile id. */
static int acc_move(exec *x, int64_t id, int dir) {
  if (ensure_spill(x) != 0)
    return -1;
  int64_t a = acc_span(x), pp = x->split ? x->rcap * x->s->nk : 0, nv = x->nv;
  int64_t base = id * (a + pp);
  dev_slot *sv = x->spill + base * nv;
  uint8_t *svv = x->spill_valid + base, *svp = x->spill_poison + base;
  if (dir == 0) {
    memcpy(sv, x->acc, sizeof *sv * (size_t)(a * nv));
    memcpy(svv, x->acc_valid, (size_t)a);
    memcpy(svp, x->acc_poison, (size_t)a);
    if (pp) {
      memcpy(sv + a * nv, x->part, sizeof *sv * (size_t)(pp * nv));
      memcpy(svv + a, x->part_valid, (size_t)pp);
      memcpy(svp + a, x->part_poison, (size_t)pp);
    }
  } else {
    memcpy(x->acc, sv, sizeof *sv * (size_t)(a * nv));
    memcpy(x->acc_valid, svv, (size_t)a);
    memcpy(x->acc_poison, svp, (size_t)a);
    if (pp) {
      memcpy(x->part, sv + a * nv, sizeof *sv * (size_t)(pp * nv));
      memcpy(x->part_valid, svv + a, (size_t)pp);
      memcpy(x->part_poison, svp + a, (size_t)pp);
    }
  }
  return 0;
}

/* The revisit tracker: makes the current tile's accumulators live. */
int dev_x_acc_enter(exec *x) {
  int64_t id = dev_x_tile_id(x);
  if (id == x->acc_tile)
    return 0;
  if (x->acc_tile >= 0 && x->acc_open && acc_move(x, x->acc_tile, 0) != 0)
    return -1;
  hero_region(x, &x->region);
  int64_t prev = x->acc_tile;
  x->acc_tile = id;
  x->acc_open = true;
  if (x->visited[id])
    return acc_move(x, id, 1);
  x->visited[id] = 1;
  /* Defect revisit-no-reinit (class: a guard folded away by a wrong
   * loop-bound simplification): the revisit tracker is elided, so a new
   * window starts from the accumulators in VMEM — the partials of the
   * window that was live before it — instead of the init value.  The first
   * window of the run has nothing before it and is initialised. */
  if (prev >= 0 && dev_x_on(x, DEV_DEFECT_REVISIT_NO_REINIT))
    return 0;
  return acc_init_window(x);
}

/* Combines pack slots 0..P-1 of region element i into one value. */
static bool combine_packs(exec *x, const dev_slot *acc, const uint8_t *valid, const uint8_t *poison, int64_t i,
                          dev_slot *out, uint8_t *p) {
  bool any = false;
  if (x->vred) { /* out holds nv values; slot k's are acc[k * nv ...] */
    int nv = x->nv;
    for (int q = 0; q < x->P; q++) {
      int64_t k = i * x->P + q;
      if (!valid[k])
        continue;
      if (!any) {
        memcpy(out, acc + k * nv, sizeof *out * (size_t)nv);
        *p = poison[k];
        any = true;
      } else {
        dev_vred_step(x->vred, 1, &out, acc + k * nv);
        *p |= poison[k];
      }
    }
    return any;
  }
  for (int q = 0; q < x->P; q++) {
    int64_t k = i * x->P + q;
    if (!valid[k])
      continue;
    if (!any) {
      *out = acc[k];
      *p = poison[k];
      any = true;
    } else {
      *out = x->is_dot ? dev_elem_dot_combine(x->acc_t, *out, acc[k])
                       : dev_elem_reduce_step(x->red_op, x->acc_t, *out, acc[k]);
      *p |= poison[k];
    }
  }
  return any;
}

int dev_x_compute_chunk(exec *x) {
  if (!x->split)
    return dev_x_fold_chunk(x, x->acc, x->acc_valid, x->acc_poison);
  /* split: fresh slots for this chunk, then its partial */
  int64_t n = x->region.count * x->P;
  dev_slot *a = malloc(sizeof *a * (size_t)(n ? n * x->nv : 1));
  uint8_t *v = calloc((size_t)(n ? n : 1), 1), *p = calloc((size_t)(n ? n : 1), 1);
  int rc = a && v && p ? 0 : dev_x_fail(x, "out of memory");
  if (rc == 0 && x->is_dot)
    for (int64_t i = 0; i < n; i++) {
      if (is_float_t(x->acc_t))
        a[i].f = 0.0;
      else
        a[i].i = 0;
      v[i] = 1;
    }
  if (rc == 0)
    rc = dev_x_fold_chunk(x, a, v, p);
  for (int64_t i = 0; rc == 0 && i < x->region.count; i++) {
    int64_t k = i * x->s->nk + x->chunk;
    x->part_valid[k] = combine_packs(x, a, v, p, i, &x->part[k * x->nv], &x->part_poison[k]);
  }
  free(a);
  free(v);
  free(p);
  return rc;
}

/* dev_x_acc_finalize of a variadic reduce: x->fin holds nv values per element. */
static void acc_finalize_vred(exec *x) {
  int nv = x->nv;
  for (int64_t i = 0; i < x->region.count; i++) {
    dev_slot *r = x->fin + i * nv;
    uint8_t p = 0;
    if (!x->split) {
      combine_packs(x, x->acc, x->acc_valid, x->acc_poison, i, r, &p);
    } else {
      memcpy(r, x->acc + i * x->P * nv, sizeof *r * (size_t)nv);
      p = x->acc_poison[i * x->P];
      for (int64_t c = 0; c < x->s->nk; c++) {
        int64_t k = i * x->s->nk + c;
        if (!x->part_valid[k])
          continue;
        dev_vred_step(x->vred, 1, &r, x->part + k * nv);
        p |= x->part_poison[k];
      }
    }
    x->fin_poison[i] = p;
  }
  x->acc_open = false;
}

/* The hero's final value per region element. */
void dev_x_acc_finalize(exec *x) {
  if (x->vred) {
    acc_finalize_vred(x);
    return;
  }
  int64_t n = x->region.count;
  if (x->is_dot && !x->split && x->P == 1 && n > 0 && !memchr(x->acc_valid, 0, (size_t)n)) {
    /* one valid slot per element, which combine_packs gives as it is:
     * the loop below as a block */
    dev_elem_dot_finish_block(x->acc_t, x->res_t, x->acc, x->fin, n);
    memcpy(x->fin_poison, x->acc_poison, (size_t)n);
    x->acc_open = false;
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    dev_slot r;
    uint8_t p = 0;
    if (!x->split && x->P == 1 && x->acc_valid[i]) {
      /* combine_packs of one valid slot, without the call */
      r = x->acc[i];
      p = x->acc_poison[i];
    } else if (!x->split) {
      combine_packs(x, x->acc, x->acc_valid, x->acc_poison, i, &r, &p);
    } else {
      /* init (slot 0 of acc), then the partials in chunk order */
      r = x->acc[i * x->P];
      p = x->acc_poison[i * x->P];
      for (int64_t c = 0; c < x->s->nk; c++) {
        int64_t k = i * x->s->nk + c;
        if (!x->part_valid[k])
          continue;
        r = x->is_dot ? dev_elem_dot_combine(x->acc_t, r, x->part[k])
                      : dev_elem_reduce_step(x->red_op, x->acc_t, r, x->part[k]);
        p |= x->part_poison[k];
      }
    }
    x->fin[i] = x->is_dot ? dev_elem_dot_finish(x->acc_t, x->res_t, r) : r;
    x->fin_poison[i] = p;
  }
  x->acc_open = false;
}

void dev_x_hero_read(void *ctx, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  const dev_box *b = &x->region;
  int64_t off = 0;
  bool inside = true;
  for (int d = 0; d < b->rank; d++) {
    int64_t l = idx[d] - b->lo[d];
    if (l < 0 || l >= b->n[d] || (d == b->rank - 1 && l + n > b->n[d]))
      inside = false;
    off = off * b->n[d] + l;
  }
  if (inside) { /* a run of n elements in the region: copied as such */
    memcpy(v, x->fin + off, sizeof *v * (size_t)n);
    memcpy(poison, x->fin_poison + off, (size_t)n);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    v[i].i = 0;
    poison[i] = 1;
  }
}

int dev_x_setup_hero(exec *x) {
  const dev_fusion *f = x->f;
  const hlo_instr *h = f->hero;
  x->hero_native = false;
  if (!h || f->k_total <= 0)
    return 0;
  dev_elem_kind k = dev_elem_classify(h);
  x->nv = 1;
  if (f->kind == DEV_HERO_REDUCE && k == DEV_EK_OPAQUE && h->shape.type == HLO_TUPLE) {
    /* a variadic reduce: chunked when dev_vred_native admits it */
    x->vred = dev_vred_new(f);
    if (!x->vred)
      return dev_vred_native(f) ? dev_x_fail(x, "out of memory") : 0;
    x->nv = dev_vred_count(x->vred);
  } else if (!((f->kind == DEV_HERO_REDUCE && k == DEV_EK_REDUCE) || (f->kind == DEV_HERO_DOT && k == DEV_EK_DOT))) {
    return 0;
  }
  x->hero_native = true;
  x->is_dot = f->kind == DEV_HERO_DOT;
  x->res_t = x->vred ? dev_vred_type(x->vred, 0) : h->shape.type;
  x->acc_t = x->is_dot ? dev_elem_dot_ctype(x->res_t) : x->res_t;
  x->red_op = x->is_dot ? HLO_OP_ADD : x->vred ? HLO_OP_INVALID : hlo_simple_reducer(h->attrs.calls.to_apply);
  x->P = x->s->cfg.pack > 0 ? x->s->cfg.pack : 1;
  x->split = (x->s->cfg.flags & DEV_FLAG_SPLIT_REDUCTION) != 0;
  x->kchunk = x->s->cfg.k > 0 ? x->s->cfg.k : f->k_total;
  /* the largest region: tiles at index 0 */
  for (int d = 0; d < f->rank; d++)
    x->t[d] = 0;
  hero_region(x, &x->region);
  x->rcap = x->region.count ? x->region.count : 1;
  size_t a = (size_t)(x->rcap * x->P);
  size_t pp = x->split ? (size_t)(x->rcap * x->s->nk) : 1;
  x->acc = calloc(a * (size_t)x->nv, sizeof *x->acc);
  x->acc_valid = calloc(a, 1);
  x->acc_poison = calloc(a, 1);
  x->part = calloc(pp * (size_t)x->nv, sizeof *x->part);
  x->part_valid = calloc(pp, 1);
  x->part_poison = calloc(pp, 1);
  x->fin = calloc((size_t)x->rcap * (size_t)x->nv, sizeof *x->fin);
  x->fin_poison = calloc((size_t)x->rcap, 1);
  x->visited = calloc((size_t)(x->ntiles ? x->ntiles : 1), 1);
  if (!x->acc || !x->acc_valid || !x->acc_poison || !x->part || !x->part_valid || !x->part_poison || !x->fin ||
      !x->fin_poison || !x->visited)
    return dev_x_fail(x, "out of memory");
  x->acc_tile = -1;
  return 0;
}
