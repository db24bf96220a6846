/* dev_store.c — stores to the output buffers: the tiled leaves of an
 * output tile evaluated (in strips) and written back, the ragged part of a
 * tile discarded by the store mask (and ragged-store-mask's stale row),
 * materialised values copied, a variadic reduce's leaves taken from its
 * accumulators.  Every write to an output goes through here, which is
 * where a wild store is caught.
 */
#include <stdlib.h>
#include <string.h>

#include "dev_exec_internal.h"
#include "dev_slot_f32.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_clones.h"

static void tile_box(const exec *x, dev_box *b) {
  memset(b, 0, sizeof *b);
  b->rank = x->f->rank;
  for (int d = 0; d < b->rank; d++) {
    int64_t tile = x->s->cfg.tile[d];
    b->lo[d] = x->t[d] * tile;
    b->n[d] = x->f->dims[d] - b->lo[d] < tile ? x->f->dims[d] - b->lo[d] : tile;
  }
}

/* Defect ragged-store-mask (class: an off-by-one in an edge mask).  The
 * store mask of a tile that is ragged along the second-minor output
 * dimension is one sublane short: the last valid row of the array is not
 * written by the tile.  A real output buffer keeps whatever it held there;
 * the simulated one is poisoned before the run, which would turn the
 * finding into an "uninitialized read", so the model leaves a finite stale
 * value instead: what the row one tile above holds (the same sublane of the
 * previous tile along that dimension, always stored before: tile indices
 * along a dimension grow in every loop order), or the row just above when
 * the ragged tile is the only one.  Returns the flat offset of that stale
 * source for the element at idx of a box of leaf h, -1 when the element is
 * stored normally. */
static int64_t ragged_store_stale_source(const exec *x, const dev_hbm *h, const dev_box *b, const int64_t *idx) {
  if (!dev_x_on(x, DEV_DEFECT_RAGGED_STORE_MASK) || b->rank < 2 || b->rank != x->f->rank)
    return -1;
  int d = b->rank - 2;
  int64_t tile = x->s->cfg.tile[d], rows = h->dims[d], last = rows - 1;
  if (tile <= 0 || rows % tile == 0 || idx[d] != last || b->lo[d] + b->n[d] != rows || b->n[d] >= tile)
    return -1;
  int64_t src = last - tile >= 0 ? last - tile : last - 1;
  if (src < 0)
    return -1;
  int64_t off = 0;
  for (int k = 0; k < h->rank; k++)
    off = off * h->dims[k] + (k == d ? src : idx[k]);
  return off;
}

/* Leaf k (depth first) of a possibly nested tuple value, NULL if none. */
static const hlo_value *value_leaf(const hlo_value *v, int *k) {
  if (v->type != HLO_TUPLE)
    return (*k)-- == 0 ? v : NULL;
  for (int i = 0; i < v->ntuple; i++) {
    const hlo_value *l = value_leaf(v->elems[i], k);
    if (l)
      return l;
  }
  return NULL;
}

/* Stores element i (at flat offset off) of leaf j: the value at src, or,
 * under ragged-store-mask, the stale element at stale. */
static int store_elem(exec *x, int j, int64_t off, const void *src, bool poisoned, int64_t stale) {
  dev_hbm *h = &x->out[j];
  uint8_t tmp[16];
  if (stale >= 0) {
    memcpy(tmp, h->data + (size_t)stale * h->esz, h->esz);
    src = tmp;
    poisoned = h->shadow[stale] != 0;
  }
  if (dev_hbm_store(h, off, src, poisoned) != 0)
    return dev_x_fail(x, "wild store: %s element offset %lld is beyond its redzones", h->name, (long long)off);
  return 0;
}

/* The row-major offset in leaf h of index idx, whose first rank dims
 * count (the box's rank, which is h's wherever a store lands in bounds). */
static int64_t hbm_off(const dev_hbm *h, int rank, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < rank; d++)
    off = off * h->dims[d] + idx[d];
  return off;
}

/* Whether box b of leaf h is stored row by row as plain copies: it lies
 * inside the array, so no store reaches a redzone; no test hook shifts the
 * stores; and no stale row can stand in for one (ragged-store-mask, where
 * stale says the box may have them).  Then dev_hbm_store would only copy
 * each element and set its shadow. */
static bool rows_plain(const exec *x, const dev_hbm *h, const dev_box *b, bool stale) {
  bool inside = b->rank == h->rank && b->rank > 0 && b->n[b->rank - 1] > 0 && x->hooks.store_shift == 0 &&
                !(stale && dev_x_on(x, DEV_DEFECT_RAGGED_STORE_MASK));
  for (int d = 0; inside && d < b->rank; d++)
    inside = b->lo[d] >= 0 && b->lo[d] + b->n[d] <= h->dims[d];
  return inside;
}

/* The contiguous runs of box b inside leaf h (rows_plain holds): a row of
 * the box, or where the box spans whole rows (planes, ...) of h, as many
 * as lie back to back.  Returns the run's length; *outer is the number of
 * leading dims the runs step through (hlo_index_next_box over b). */
static int64_t box_run(const dev_hbm *h, const dev_box *b, int *outer) {
  int k = b->rank - 1;
  int64_t run = b->n[k];
  while (k > 0 && b->lo[k] == 0 && b->n[k] == h->dims[k]) {
    k--;
    run *= b->n[k];
  }
  *outer = k;
  return run;
}

/* A run of f32 slots stored as dev_slots_to_host stores it, compiled also
 * for AVX2 (as dev_elemental.c's rows: the same conversion at any width,
 * so the same values).  An AVX-512 build of this loop, whose stores go to
 * the output buffer, measured slower than the AVX2 one on a small gather. */

/* sh[k] = pz[k] != 0 for k < n, as a vector loop (the two buffers never
 * overlap: a box's poison and an output's shadow).  A byte loop through
 * the box and buffer pointers, reloaded per element because bytes may
 * alias them, was most of a small gather's store time; eight bytes at a
 * time in a general register, still a tenth of it. */
HLO_CLONES_AVX2 static void shadow_from_poison(uint8_t *sh, const uint8_t *pz, int64_t n) {
#pragma omp simd
  for (int64_t k = 0; k < n; k++)
    sh[k] = pz[k] != 0;
}

HLO_CLONES_AVX2 static void store_f32_run(const dev_slot *v, int64_t n, float *o) { (void)dev_slots_to_f32(v, n, o); }

/* Writes box b of leaf j to HBM: only the valid (in-array) part is stored,
 * the ragged remainder of a tile is discarded. */
static int store_tile(exec *x, int j, const dev_box *b) {
  dev_hbm *h = &x->out[j];
  uint8_t tmp[16];
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  if (rows_plain(x, h, b, true)) { /* the common case */
    int outer;
    int64_t run = box_run(h, b, &outer);
    for (int64_t i = 0; i < b->count; i += run) {
      int64_t off = hbm_off(h, b->rank, idx);
      if (h->type == HLO_F32)
        store_f32_run(b->v + i, run, (float *)(void *)h->data + off);
      else
        dev_slots_to_host(h->type, b->v + i, run, h->data, off);
      shadow_from_poison(h->shadow + off, b->poison + i, run);
      hlo_index_next_box(outer, b->lo, b->n, idx); /* next run */
    }
    return 0;
  }
  for (int64_t i = 0; i < b->count; i++) {
    int64_t off = hbm_off(h, b->rank, idx) + x->hooks.store_shift;
    dev_slot_to_host(h->type, b->v[i], tmp, 0);
    if (store_elem(x, j, off, tmp, b->poison[i] != 0, ragged_store_stale_source(x, h, b, idx)) != 0)
      return -1;
    hlo_index_next_box(b->rank, b->lo, b->n, idx);
  }
  return 0;
}

/* store_tile's common case (rows_plain holds) for a box whose values are
 * f32 rows: element i of b is f[i]. */
static void store_f32_rows(dev_hbm *h, const dev_box *b, const float *f) {
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  int outer;
  int64_t run = box_run(h, b, &outer);
  for (int64_t i = 0; i < b->count; i += run) {
    int64_t off = hbm_off(h, b->rank, idx);
    memcpy((float *)(void *)h->data + off, f + i, (size_t)run * sizeof *f);
    shadow_from_poison(h->shadow + off, b->poison + i, run);
    hlo_index_next_box(outer, b->lo, b->n, idx); /* next run */
  }
}

/* Stores box b of leaf j straight from a materialised value (any element
 * type, complex included): the bytes are copied, nothing is converted. */
static int store_value(exec *x, int j, const hlo_value *v, const dev_box *b) {
  dev_hbm *h = &x->out[j];
  if (v->type != h->type || v->count != h->count)
    return dev_x_fail(x, "%s: materialised value does not match the output", h->name);
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  int64_t count = 1;
  for (int d = 0; d < b->rank; d++)
    count *= b->n[d];
  if (rows_plain(x, h, b, x->out_tiled[j])) { /* the common case, as in store_tile */
    int outer;
    int64_t run = box_run(h, b, &outer);
    for (int64_t i = 0; i < count; i += run) {
      int64_t off = hbm_off(h, b->rank, idx);
      memcpy(h->data + (size_t)off * h->esz, (const char *)v->data + (size_t)off * v->elem_size,
             (size_t)run * h->esz);
      memset(h->shadow + off, 0, (size_t)run);
      hlo_index_next_box(outer, b->lo, b->n, idx); /* next run */
    }
    return 0;
  }
  for (int64_t i = 0; i < count; i++) {
    int64_t off = hbm_off(h, b->rank, idx);
    if (store_elem(x, j, off + x->hooks.store_shift, (const char *)v->data + (size_t)off * v->elem_size, false,
                   x->out_tiled[j] ? ragged_store_stale_source(x, h, b, idx) : -1) != 0)
      return -1;
    hlo_index_next_box(b->rank, b->lo, b->n, idx);
  }
  return 0;
}

/* Elements per strip of an output tile (see dev_x_eval_store). */
#define STRIP_ELEMS 2048

/* Evaluates leaf j over box want and stores it.  A large tile is evaluated
 * and stored in strips of whole rows along its first dimension, each of
 * about STRIP_ELEMS elements: the evaluator keeps a dense box per fused
 * instruction, and a strip's boxes stay in cache where a whole tile's
 * (8 bytes of value and one of poison per element per instruction) stream
 * through memory.  A box's values do not depend on the box around it (the
 * evaluator infers every operand box from the requested one; parameter
 * rows are read whole from the same VMEM block), so the bits are those of
 * one evaluation of the tile.  Strips are not used where the store itself
 * looks at the tile's extent: the store-shift hook and ragged-store-mask,
 * whose stale row depends on the tile being ragged. */
int dev_x_eval_store(exec *x, int j, const dev_box *want, bool hero_leaf) {
  const hlo_value *mv = dev_elem_value(x->el, x->out_node[j]);
  if (x->out_sub[j] >= 0) {
    int k = x->out_sub[j];
    const hlo_value *leaf = mv ? value_leaf(mv, &k) : NULL;
    if (!leaf)
      return dev_x_fail(x, "output %d: leaf %d of %s is not materialised", j, x->out_sub[j], x->out_node[j]->name);
    return store_value(x, j, leaf, want);
  }
  if (mv)
    return store_value(x, j, mv, want);
  int64_t count = 1;
  for (int d = 0; d < want->rank; d++)
    count *= want->n[d];
  int64_t rows = want->rank > 0 ? want->n[0] : 1, per = rows > 0 ? count / rows : 1;
  int64_t step = rows;
  if (x->out_tiled[j] && want->rank > 0 && x->hooks.store_shift == 0 && !dev_x_on(x, DEV_DEFECT_RAGGED_STORE_MASK))
    step = per > 0 && per < STRIP_ELEMS ? STRIP_ELEMS / per : 1;
  if (step < 1)
    step = 1;
  /* An f32 leaf's values may come back as f32 rows (dev_elem_eval_f32),
   * stored as they are; without room for them, as slots. */
  float *f32 = NULL;
  if (x->out[j].type == HLO_F32) {
    int64_t most = (step < rows ? step : rows) * per;
    f32 = malloc(sizeof *f32 * (size_t)(most > 0 ? most : 1));
  }
  int rc = 0;
  for (int64_t r = 0; rc == 0 && (r < rows || (rows == 0 && r == 0)); r += step) {
    dev_box sub = *want, b;
    if (want->rank > 0) {
      sub.lo[0] = want->lo[0] + r;
      sub.n[0] = rows - r < step ? rows - r : step;
      sub.count = sub.n[0] * per;
    }
    bool in_f32 = false;
    rc = f32 ? dev_elem_eval_f32(x->el, x->out_node[j], &sub, hero_leaf, dev_x_window_read, dev_x_hero_read, x, &b,
                                 f32, &in_f32, x->why, x->why_len)
             : dev_elem_eval(x->el, x->out_node[j], &sub, hero_leaf, dev_x_window_read, dev_x_hero_read, x, &b,
                             x->why, x->why_len);
    if (rc != 0)
      break;
    if (in_f32 && rows_plain(x, &x->out[j], &b, true)) {
      store_f32_rows(&x->out[j], &b, f32);
    } else {
      if (in_f32) /* the slots a store reads: each f32 value widened, as they would have held */
        dev_f32_to_slots(f32, b.count, b.v);
      rc = store_tile(x, j, &b);
    }
    dev_elem_box_release(x->el, &b);
  }
  free(f32);
  return rc;
}

/* Stores leaf j, get-tuple-element g of a variadic reduce hero, on output
 * tile tb: value g of the finalised accumulators (the hero's region is the
 * tile: dev_vred_native admits only such leaves). */
static int store_vred_leaf(exec *x, int j, int g, const dev_box *tb) {
  const dev_box *rg = &x->region;
  bool same = rg->rank == tb->rank; /* (tile_box leaves count unset) */
  for (int d = 0; same && d < tb->rank; d++)
    same = rg->lo[d] == tb->lo[d] && rg->n[d] == tb->n[d];
  if (!same)
    return dev_x_fail(x, "%s: variadic reduce region does not match the output tile", x->f->name);
  dev_box b = *tb;
  b.count = rg->count;
  b.v = malloc(sizeof *b.v * (size_t)(b.count ? b.count : 1));
  b.poison = x->fin_poison;
  if (!b.v)
    return dev_x_fail(x, "out of memory");
  for (int64_t i = 0; i < b.count; i++)
    b.v[i] = x->fin[i * x->nv + g];
  int rc = store_tile(x, j, &b);
  free(b.v);
  return rc;
}

/* Evaluates and stores the tiled leaves on the current output tile. */
int dev_x_finish_tile(exec *x) {
  if (x->hero_native)
    dev_x_acc_finalize(x);
  if (dev_x_tile_id(x) == x->hooks.skip_tile)
    return 0;
  dev_box tb;
  tile_box(x, &tb);
  for (int j = 0; j < x->nout; j++) {
    if (!x->out_tiled[j])
      continue;
    const hlo_instr *o = x->out_node[j];
    int rc = x->vred && o->op == HLO_OP_GET_TUPLE_ELEMENT && o->operands[0] == x->f->hero
                 ? store_vred_leaf(x, j, (int)o->attrs.index, &tb)
                 : dev_x_eval_store(x, j, &tb, x->hero_native);
    if (rc != 0)
      return -1;
  }
  return 0;
}
