/* dev_window.c — the device's reduce-window (dev_whole.h), and the window
 * geometry it shares with select-and-scatter (dev_window.h).
 *
 * Semantics (XLA operation semantics, ReduceWindow): N operands of one
 * shape and N scalar inits; output element o, in each dimension, covers the
 * window positions o*stride + k*window_dilation - pad_lo (k < size) of the
 * base dilated by base_dilation; a position in the padding or in a hole of
 * the dilation contributes nothing.  The N accumulators start at the inits
 * and take the window's elements in the device's window order, row-major
 * over the window: acc = f(acc..., x...), the reducer's first N parameters
 * being the accumulators, its results (a tuple when N > 1) the new ones,
 * rounded to the type after every step.  The result is the N accumulators
 * (a tuple of N arrays when N > 1).
 *
 * Lowering: output tiles as the config cuts them.  For each tile, the input
 * box its windows reach (the tile plus its halo, clipped to the array) of
 * every operand is DMA'd into a poisoned VMEM buffer with redzones, one
 * buffer and one ring per operand; the tile's outputs are folded from those
 * buffers into N VMEM output tiles, which are checked (redzones, every
 * element written) and copied out.  One operand with a simple reducer (add,
 * multiply, maximum, minimum, and, or, xor of the two parameters) folds
 * with the device's reduce step (dev_elem_reduce_step), and so does each
 * operand of a variadic reducer whose lane program folds every operand on
 * its own with such an op (the max and min of a running range); any other
 * reducer runs as a lane program of the device's own (dev_lane.h), once
 * per window element.  A reducer that
 * is no lane program, and reversed windows, are not lowered here.
 */
#include "dev_whole.h"
#include "dev_window.h"

#include <stdio.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_minmax.h"

#define WINDOW_MAX_OPERANDS 8

static int64_t base_dilation(const hlo_window_dim *w) { return w->lhs_dilate > 0 ? w->lhs_dilate : 1; }
static int64_t window_dilation(const hlo_window_dim *w) { return w->rhs_dilate > 0 ? w->rhs_dilate : 1; }

bool dev_win_lowers(const hlo_window *win, int r) {
  if (win->rank != r)
    return false;
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &win->dims[d];
    if (w->reversal || w->size < 1 || w->stride < 1 || w->lhs_dilate < 0 || w->rhs_dilate < 0)
      return false;
  }
  return true;
}

/* The input index range [*a, *b] that the windows of outputs [lo, lo+n)
 * reach along one dimension of input extent in; empty when *a > *b. */
static void halo(const hlo_window_dim *w, int64_t in, int64_t lo, int64_t n, int64_t *a, int64_t *b) {
  int64_t ld = base_dilation(w), rd = window_dilation(w);
  int64_t first = lo * w->stride - w->pad_lo, last = (lo + n - 1) * w->stride + (w->size - 1) * rd - w->pad_lo;
  int64_t extent = in > 0 ? (in - 1) * ld + 1 : 0;
  if (first < 0)
    first = 0;
  if (last > extent - 1)
    last = extent - 1;
  *a = (first + ld - 1) / ld; /* first >= 0 */
  *b = last >= 0 ? last / ld : -1;
}

int64_t dev_win_tile_halo(const hlo_window *win, int r, const int64_t *in, const dev_tiling *tl, int64_t t,
                          int64_t *lo, int64_t *n, int64_t *a, int64_t *hn) {
  int64_t vol = 1;
  dev_tiling_box(tl, t, lo, n);
  for (int d = 0; d < r; d++) {
    int64_t b;
    halo(&win->dims[d], in[d], lo[d], n[d], &a[d], &b);
    hn[d] = b >= a[d] ? b - a[d] + 1 : 0;
    vol *= hn[d];
  }
  return vol;
}

int64_t dev_win_halo_cap(const hlo_window *win, int r, const int64_t *in, const dev_tiling *tl) {
  int64_t cap = 1;
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &win->dims[d];
    int64_t span = (tl->tile[d] - 1) * w->stride + (w->size - 1) * window_dilation(w) + 1;
    int64_t e = span / base_dilation(w) + 1;
    cap *= e < in[d] ? e : in[d] > 0 ? in[d] : 1;
  }
  return cap;
}

void dev_win_stage_box(dev_stage *st, const hlo_value *op, const int64_t *ostr, const int64_t *a, const int64_t *hn,
                       int64_t count) {
  int64_t p[HLO_MAX_RANK] = {0};
  for (int64_t l = 0; l < count; l++, hlo_index_next(op->rank, hn, p)) {
    int64_t g = 0;
    for (int d = 0; d < op->rank; d++)
      g += (a[d] + p[d]) * ostr[d];
    dev_stage_put(st, l, (const char *)op->data + (size_t)g * op->elem_size);
  }
}

bool dev_win_element(const hlo_window *win, int r, const int64_t *in, const int64_t *o, const int64_t *k,
                     int64_t *idx) {
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &win->dims[d];
    int64_t ld = base_dilation(w);
    int64_t pos = o[d] * w->stride + k[d] * window_dilation(w) - w->pad_lo;
    if (pos < 0 || pos % ld != 0 || pos / ld >= in[d])
      return false; /* padding or a dilation hole */
    idx[d] = pos / ld;
  }
  return true;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void dev_win_reach(const hlo_window_dim *w, int64_t lo, int64_t n, int64_t nout, int64_t *first, int64_t *last) {
  /* window o reaches dilated positions [o*stride - pad_lo, o*stride -
   * pad_lo + (size-1)*rd]; operand i sits at dilated position i*ld */
  int64_t ld = base_dilation(w), rd = window_dilation(w);
  int64_t p0 = lo * ld + w->pad_lo, p1 = (lo + n - 1) * ld + w->pad_lo;
  *first = -floor_div(-(p0 - (w->size - 1) * rd), w->stride); /* ceil */
  *last = floor_div(p1, w->stride);
  if (*first < 0)
    *first = 0;
  if (*last > nout - 1)
    *last = nout - 1;
}

/* The reducer: simple folds, one per operand (red[j] != HLO_OP_INVALID:
 * one operand with a simple reducer, or a lane program that folds each
 * operand on its own with such an op, dev_lane_componentwise), run with
 * the device's reduce step (dev_elem_reduce_step, as the one-operand form
 * always was); or else a lane program of 2n parameters, accumulators
 * first, and n results. */
typedef struct reducer {
  int n;
  hlo_etype t[WINDOW_MAX_OPERANDS];
  hlo_opcode red[WINDOW_MAX_OPERANDS];
  dev_lane *lane;
} reducer;

/* Is op a fold of two values of type t that dev_elem_reduce_step lowers? */
static bool simple_step(const hlo_instr *op, hlo_etype t) {
  switch (op->op) {
  case HLO_OP_ADD: case HLO_OP_MULTIPLY: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_AND:
  case HLO_OP_OR: case HLO_OP_XOR:
    return op->shape.type == t && op->shape.rank == 0 && op->noperands == 2 &&
           op->operands[0]->shape.type == t && op->operands[1]->shape.type == t;
  default:
    return false;
  }
}

static bool reducer_open(reducer *rd, const hlo_computation *c, int n, const hlo_etype *t) {
  memset(rd, 0, sizeof *rd);
  rd->n = n;
  memcpy(rd->t, t, sizeof t[0] * (size_t)n);
  rd->red[0] = n == 1 ? hlo_simple_reducer(c) : HLO_OP_INVALID;
  if (rd->red[0] != HLO_OP_INVALID)
    return true;
  if (!c || c->nparams != 2 * n)
    return false;
  for (int j = 0; j < 2 * n; j++)
    if (!c->params[j] || c->params[j]->shape.type != t[j % n] || c->params[j]->shape.rank != 0)
      return false;
  char why[160];
  rd->lane = dev_lane_compile(c, why, sizeof why);
  if (rd->lane && (dev_lane_nparams(rd->lane) != 2 * n || dev_lane_nresults(rd->lane) != n)) {
    dev_lane_free(rd->lane);
    rd->lane = NULL;
  }
  const hlo_instr *ops[WINDOW_MAX_OPERANDS];
  if (rd->lane && dev_lane_componentwise(rd->lane, n, ops)) {
    bool simple = true;
    for (int j = 0; j < n && simple; j++)
      simple = simple_step(ops[j], t[j]);
    for (int j = 0; j < n && simple; j++)
      rd->red[j] = ops[j]->op;
    if (simple) {
      dev_lane_free(rd->lane);
      rd->lane = NULL;
      return true;
    }
  }
  return rd->lane != NULL;
}

/* acc folded with the count elements of data at off, off + step, ...:
 * dev_elem_reduce_step(op, t, ...) element by element, its f32 branch
 * with the op chosen once. */
static dev_slot fold_line(hlo_opcode op, hlo_etype t, dev_slot acc, const uint8_t *data, int64_t off, int64_t step,
                          int64_t count) {
#define F32_LINE(EXPR)                                          \
  for (int64_t k = 0; k < count; k++, off += step) {            \
    float b;                                                    \
    memcpy(&b, data + (size_t)off * sizeof b, sizeof b);        \
    a = (EXPR);                                                 \
  }                                                             \
  acc.f = a;                                                    \
  return acc;
  if (t == HLO_F32) {
    float a = (float)acc.f;
    switch (op) {
    case HLO_OP_ADD: F32_LINE(a + b)
    case HLO_OP_MULTIPLY: F32_LINE(a * b)
    case HLO_OP_MAXIMUM: F32_LINE(hlo_max_f32(a, b))
    case HLO_OP_MINIMUM: F32_LINE(hlo_min_f32(a, b))
    default: break;
    }
  }
#undef F32_LINE
  for (int64_t k = 0; k < count; k++, off += step) {
    dev_slot x;
    dev_slot_from_host(t, data, off, &x);
    acc = dev_elem_reduce_step(op, t, acc, x);
  }
  return acc;
}

/* Folds the element at offset off of the input stages into the
 * accumulators args[0..n) (args[n..2n) take the elements). */
static inline void fold_at(const reducer *rd, const dev_stage *in, int64_t off, dev_slot *args) {
  int n = rd->n;
  if (rd->lane) {
    for (int j = 0; j < n; j++)
      dev_slot_from_host(rd->t[j], in[j].vmem.data, off, &args[n + j]);
    dev_lane_run(rd->lane, args, args); /* results land on the accumulators */
  } else {
    for (int j = 0; j < n; j++) {
      dev_slot x;
      dev_slot_from_host(rd->t[j], in[j].vmem.data, off, &x);
      args[j] = dev_elem_reduce_step(rd->red[j], rd->t[j], args[j], x);
    }
  }
}

/* fold_at over count elements at off, off + step, ...; simple folds take
 * the run operand by operand (each accumulator sees its elements in the
 * same order). */
static void fold_run(const reducer *rd, const dev_stage *in, int64_t off, int64_t step, int64_t count,
                     dev_slot *args) {
  if (rd->lane) {
    for (int64_t k = 0; k < count; k++, off += step)
      fold_at(rd, in, off, args);
    return;
  }
  for (int j = 0; j < rd->n; j++)
    args[j] = fold_line(rd->red[j], rd->t[j], args[j], in[j].vmem.data, off, step, count);
}

/* Folds the window of output position o, its elements read from the input
 * stages (halo box origin a, extents hn), in row-major order of the window.
 * Without base dilation the window positions holding an element form a
 * box (per dimension, the k whose position falls inside the operand), so
 * that box alone is walked, in the same order, its last dimension as a
 * strided run of the stage; with base dilation every position is tested. */
static void fold_window(const reducer *rd, const dev_stage *in, const hlo_window *win, int r, const int64_t *dims,
                        const int64_t *o, const int64_t *a, const int64_t *hn, dev_slot *args) {
  bool dilated = r == 0;
  for (int d = 0; d < r; d++)
    dilated |= base_dilation(&win->dims[d]) > 1;
  if (dilated) {
    int64_t k[HLO_MAX_RANK] = {0}, idx[HLO_MAX_RANK], wsize[HLO_MAX_RANK], wvol = 1;
    for (int d = 0; d < r; d++)
      wvol *= (wsize[d] = win->dims[d].size);
    for (int64_t q = 0; q < wvol; q++, hlo_index_next(r, wsize, k)) {
      if (!dev_win_element(win, r, dims, o, k, idx))
        continue; /* padding or a dilation hole */
      int64_t off = 0;
      for (int d = 0; d < r; d++)
        off = off * hn[d] + (idx[d] - a[d]);
      fold_at(rd, in, off, args);
    }
    return;
  }
  int64_t kn[HLO_MAX_RANK] = {0}, step[HLO_MAX_RANK] = {0}, hstr = 1, base = 0, outer = 1;
  for (int d = r - 1; d >= 0; d--) {
    const hlo_window_dim *w = &win->dims[d];
    int64_t rdl = window_dilation(w), start = o[d] * w->stride - w->pad_lo; /* position of k = 0 */
    int64_t klo = start >= 0 ? 0 : (-start + rdl - 1) / rdl;
    int64_t khi = dims[d] - 1 - start < 0 ? -1 : (dims[d] - 1 - start) / rdl;
    if (khi > w->size - 1)
      khi = w->size - 1;
    if (khi < klo)
      return; /* the window holds no element */
    kn[d] = khi - klo + 1;
    step[d] = rdl * hstr;
    base += (start + klo * rdl - a[d]) * hstr;
    hstr *= hn[d];
    if (d < r - 1)
      outer *= kn[d];
  }
  int64_t c[HLO_MAX_RANK] = {0}, last = kn[r - 1], lstep = step[r - 1];
  for (int64_t q = 0; q < outer; q++, hlo_index_next(r - 1, kn, c)) {
    int64_t off = base;
    for (int d = 0; d < r - 1; d++)
      off += c[d] * step[d];
    fold_run(rd, in, off, lstep, last, args);
  }
}

/* The operand and result shapes a lowering needs: n arrays of one shape,
 * scalar inits of their types, results of their types and one shape. */
static int shapes_fit(const hlo_instr *ins, hlo_value *const *ops, int n, hlo_etype *t) {
  const hlo_shape *rs = &ins->shape;
  if (rs->type == HLO_TUPLE ? rs->ntuple != n : n != 1)
    return 0;
  const hlo_shape *r0 = rs->type == HLO_TUPLE ? &rs->elems[0] : rs;
  const hlo_value *a0 = ops[0];
  for (int j = 0; j < n; j++) {
    const hlo_value *o = ops[j], *init = ops[n + j];
    const hlo_shape *r = rs->type == HLO_TUPLE ? &rs->elems[j] : rs;
    hlo_eclass k = hlo_etype_class(o->type);
    if (o->rank != a0->rank || init->count != 1 || init->type != o->type || r->type != o->type ||
        r->rank != a0->rank || k == HLO_CLASS_COMPLEX || k == HLO_CLASS_OTHER || hlo_etype_host_size(o->type) > 8)
      return 0;
    for (int d = 0; d < a0->rank; d++)
      if (o->dims[d] != a0->dims[d] || r->dims[d] != r0->dims[d])
        return 0;
    t[j] = o->type;
  }
  return 1;
}

int dev_window_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_window *win = &ins->attrs.window;
  int n = ins->noperands / 2;
  hlo_etype t[WINDOW_MAX_OPERANDS];
  if (n < 1 || n > WINDOW_MAX_OPERANDS || ins->noperands != 2 * n || !shapes_fit(ins, ops, n, t))
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *op = ops[0];
  int r = op->rank;
  const hlo_shape *rs = ins->shape.type == HLO_TUPLE ? &ins->shape.elems[0] : &ins->shape;
  if (!dev_win_lowers(win, r))
    return DEV_WHOLE_UNSUPPORTED;
  reducer red;
  if (!reducer_open(&red, ins->attrs.calls.to_apply, n, t))
    return DEV_WHOLE_UNSUPPORTED;
  dev_slot init[WINDOW_MAX_OPERANDS];
  for (int j = 0; j < n; j++)
    dev_slot_from_host(t[j], ops[n + j]->data, 0, &init[j]);
  dev_tiling tl;
  dev_tiling_plan(&tl, r, rs->dims, ctx->cfg);
  int64_t incap = dev_win_halo_cap(win, r, op->dims, &tl);
  hlo_value *res[WINDOW_MAX_OPERANDS] = {0};
  dev_stage in[WINDOW_MAX_OPERANDS], ot[WINDOW_MAX_OPERANDS];
  int nin = 0, nout = 0, rc = 0;
  for (int j = 0; j < n && rc == 0; j++) {
    /* the names of the one-operand form are kept: its errors read the same */
    char iname[48], oname[48];
    snprintf(iname, sizeof iname, n == 1 ? "vmem reduce-window input" : "vmem reduce-window input %d", j);
    snprintf(oname, sizeof oname, n == 1 ? "vmem reduce-window tile" : "vmem reduce-window tile %d", j);
    if (!(res[j] = hlo_value_array_uninit(t[j], r, rs->dims)) || dev_stage_open(&in[j], iname, t[j], incap) != 0)
      rc = -1;
    else if (nin++, dev_stage_open(&ot[j], oname, t[j], tl.volume) != 0)
      rc = -1;
    else
      nout++;
  }
  if (rc != 0)
    snprintf(ctx->why, ctx->why_len, "out of memory");
  int64_t ostr[HLO_MAX_RANK];
  hlo_value_strides(op, ostr);
  dev_race race = dev_whole_race(ctx);
  for (int64_t tt = 0; tt < tl.ntiles && rc == 0; tt++) {
    int64_t lo[HLO_MAX_RANK], nn[HLO_MAX_RANK], a[HLO_MAX_RANK], hn[HLO_MAX_RANK];
    int64_t hvol = dev_win_tile_halo(win, r, op->dims, &tl, tt, lo, nn, a, hn), cnt = 1;
    for (int d = 0; d < r; d++)
      cnt *= nn[d];
    /* DMA the halo box of every operand in, each through its own ring */
    for (int j = 0; j < n && rc == 0; j++) {
      dev_stage_begin(&in[j], hvol);
      dev_win_stage_box(&in[j], ops[j], ostr, a, hn, hvol);
      int64_t src = dev_race_source(&race, (uint64_t)j, tt, tl.ntiles);
      if (src != tt) {
        /* dma-race: the box of tile src, fetched into this tile's ring
         * buffer before this tile read it, overwrites it element by element
         * in its own layout (as far as the buffer holds this tile's box) */
        int64_t slo[HLO_MAX_RANK], sn[HLO_MAX_RANK], sa[HLO_MAX_RANK], shn[HLO_MAX_RANK];
        int64_t svol = dev_win_tile_halo(win, r, op->dims, &tl, src, slo, sn, sa, shn);
        dev_win_stage_box(&in[j], ops[j], ostr, sa, shn, svol < hvol ? svol : hvol);
      }
      rc = dev_stage_end(&in[j], ctx->why, ctx->why_len);
    }
    if (rc != 0)
      break;
    /* fold each output of the tile from VMEM */
    for (int j = 0; j < n; j++)
      dev_stage_begin(&ot[j], cnt);
    int64_t p[HLO_MAX_RANK] = {0};
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, nn, p)) {
      dev_slot args[2 * WINDOW_MAX_OPERANDS]; /* accumulators, then the elements */
      memcpy(args, init, sizeof init[0] * (size_t)n);
      int64_t o[HLO_MAX_RANK];
      for (int d = 0; d < r; d++)
        o[d] = lo[d] + p[d];
      fold_window(&red, in, win, r, op->dims, o, a, hn, args);
      for (int j = 0; j < n; j++) {
        uint8_t tmp[16];
        dev_slot_to_host(t[j], args[j], tmp, 0);
        dev_stage_put(&ot[j], l, tmp);
      }
    }
    for (int j = 0; j < n && rc == 0; j++)
      if ((rc = dev_stage_end(&ot[j], ctx->why, ctx->why_len)) == 0)
        dev_stage_copy_out(&ot[j], &tl, lo, nn, res[j]->data);
  }
  for (int j = 0; j < nin; j++)
    dev_stage_close(&in[j]);
  for (int j = 0; j < nout; j++)
    dev_stage_close(&ot[j]);
  dev_lane_free(red.lane);
  if (rc == 0 && ins->shape.type != HLO_TUPLE) {
    *out = res[0];
    return 0;
  }
  if (rc == 0 && !(*out = hlo_value_tuple(n, res))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  if (rc != 0)
    for (int j = 0; j < n; j++)
      hlo_value_unref(res[j]);
  return rc;
}
