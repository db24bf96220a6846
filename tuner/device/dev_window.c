/* dev_window.c — the device's reduce-window (dev_whole.h).
 *
 * Semantics (XLA operation semantics, ReduceWindow): output element o, in
 * each dimension, covers the window positions o*stride + k*window_dilation
 * - pad_lo (k < size) of the base dilated by base_dilation; a position in
 * the padding or in a hole of the dilation contributes nothing.  The
 * accumulator starts at the init value and takes the window's elements in
 * row-major order of the window, acc = f(acc, x), rounded to the type
 * after every step.
 *
 * Lowering, for one operand and a simple reducer (add, multiply, maximum,
 * minimum, and, or, xor of the two parameters): output tiles as the config
 * cuts them.  For each tile, the input box its windows reach (the tile plus
 * its halo, clipped to the array) is DMA'd into a poisoned VMEM buffer with
 * redzones; the tile's outputs are folded from that buffer into a VMEM
 * output tile, which is checked (redzones, every element written) and
 * copied out.  Other forms (variadic, general reducers, reversed windows)
 * are not lowered here.
 */
#include "dev_whole.h"

#include <stdio.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"

/* The input index range [*a, *b] that the windows of outputs [lo, lo+n)
 * reach along one dimension of input extent in; empty when *a > *b. */
static void halo(const hlo_window_dim *w, int64_t in, int64_t lo, int64_t n, int64_t *a, int64_t *b) {
  int64_t ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1, rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1;
  int64_t first = lo * w->stride - w->pad_lo, last = (lo + n - 1) * w->stride + (w->size - 1) * rd - w->pad_lo;
  int64_t extent = in > 0 ? (in - 1) * ld + 1 : 0;
  if (first < 0)
    first = 0;
  if (last > extent - 1)
    last = extent - 1;
  *a = (first + ld - 1) / ld; /* first >= 0 */
  *b = last >= 0 ? last / ld : -1;
}

/* The halo box of the outputs of tile t: its origin a and extents hn;
 * returns its element count. */
static int64_t tile_halo(const hlo_window *win, const hlo_value *op, const dev_tiling *tl, int64_t t, int64_t *lo,
                         int64_t *n, int64_t *a, int64_t *hn) {
  int64_t vol = 1;
  dev_tiling_box(tl, t, lo, n);
  for (int d = 0; d < op->rank; d++) {
    int64_t b;
    halo(&win->dims[d], op->dims[d], lo[d], n[d], &a[d], &b);
    hn[d] = b >= a[d] ? b - a[d] + 1 : 0;
    vol *= hn[d];
  }
  return vol;
}

/* DMAs the first `count` elements of the box (origin a, extents hn) of op
 * into the stage, row-major. */
static void stage_box(dev_stage *in, const hlo_value *op, const int64_t *ostr, const int64_t *a, const int64_t *hn,
                      int64_t count) {
  int64_t p[HLO_MAX_RANK] = {0};
  for (int64_t l = 0; l < count; l++, hlo_index_next(op->rank, hn, p)) {
    int64_t g = 0;
    for (int d = 0; d < op->rank; d++)
      g += (a[d] + p[d]) * ostr[d];
    dev_stage_put(in, l, (const char *)op->data + (size_t)g * op->elem_size);
  }
}

int dev_window_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_window *win = &ins->attrs.window;
  const hlo_shape *rs = &ins->shape;
  if (ins->noperands != 2 || rs->type == HLO_TUPLE)
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *op = ops[0], *init = ops[1];
  int r = op->rank;
  hlo_opcode red = hlo_simple_reducer(ins->attrs.calls.to_apply);
  hlo_eclass cls = hlo_etype_class(op->type);
  if (red == HLO_OP_INVALID || init->count != 1 || init->type != op->type || rs->type != op->type ||
      rs->rank != r || win->rank != r || cls == HLO_CLASS_COMPLEX || cls == HLO_CLASS_OTHER)
    return DEV_WHOLE_UNSUPPORTED;
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &win->dims[d];
    if (w->reversal || w->size < 1 || w->stride < 1 || w->lhs_dilate < 0 || w->rhs_dilate < 0)
      return DEV_WHOLE_UNSUPPORTED;
  }
  dev_slot init_v;
  dev_slot_from_host(init->type, init->data, 0, &init_v);
  dev_tiling tl;
  dev_tiling_plan(&tl, r, rs->dims, ctx->cfg);
  /* the largest halo box of a full tile bounds the input buffer */
  int64_t incap = 1;
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &win->dims[d];
    int64_t rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1, ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1;
    int64_t span = (tl.tile[d] - 1) * w->stride + (w->size - 1) * rd + 1;
    int64_t e = span / ld + 1;
    incap *= e < op->dims[d] ? e : op->dims[d] > 0 ? op->dims[d] : 1;
  }
  hlo_value *res = hlo_value_array_uninit(rs->type, r, rs->dims);
  dev_stage in, ot;
  bool have_in = false;
  int rc = -1;
  if (res && dev_stage_open(&in, "vmem reduce-window input", op->type, incap) == 0) {
    have_in = true;
    if (dev_stage_open(&ot, "vmem reduce-window tile", rs->type, tl.volume) == 0)
      rc = 0;
  }
  if (rc != 0) {
    if (have_in)
      dev_stage_close(&in);
    hlo_value_unref(res);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  int64_t ostr[HLO_MAX_RANK];
  hlo_value_strides(op, ostr);
  dev_race race = dev_whole_race(ctx);
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], a[HLO_MAX_RANK], hn[HLO_MAX_RANK];
    int64_t hvol = tile_halo(win, op, &tl, t, lo, n, a, hn), cnt = 1;
    for (int d = 0; d < r; d++)
      cnt *= n[d];
    /* DMA the halo box in */
    dev_stage_begin(&in, hvol);
    stage_box(&in, op, ostr, a, hn, hvol);
    int64_t src = dev_race_source(&race, 0, t, tl.ntiles);
    if (src != t) {
      /* dma-race: the box of tile src, fetched into this tile's ring
       * buffer before this tile read it, overwrites it element by element
       * in its own layout (as far as the buffer holds this tile's box) */
      int64_t slo[HLO_MAX_RANK], sn[HLO_MAX_RANK], sa[HLO_MAX_RANK], shn[HLO_MAX_RANK];
      int64_t svol = tile_halo(win, op, &tl, src, slo, sn, sa, shn);
      stage_box(&in, op, ostr, sa, shn, svol < hvol ? svol : hvol);
    }
    if ((rc = dev_stage_end(&in, ctx->why, ctx->why_len)) != 0)
      break;
    /* fold each output of the tile from VMEM */
    dev_stage_begin(&ot, cnt);
    int64_t p[HLO_MAX_RANK] = {0};
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, n, p)) {
      dev_slot acc = init_v;
      /* window positions, row-major */
      int64_t k[HLO_MAX_RANK] = {0}, wsize[HLO_MAX_RANK], wvol = 1;
      for (int d = 0; d < r; d++)
        wvol *= (wsize[d] = win->dims[d].size);
      for (int64_t q = 0; q < wvol; q++, hlo_index_next(r, wsize, k)) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < r && inside; d++) {
          const hlo_window_dim *w = &win->dims[d];
          int64_t ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1, rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1;
          int64_t pos = (lo[d] + p[d]) * w->stride + k[d] * rd - w->pad_lo;
          int64_t i = pos / ld;
          inside = pos >= 0 && pos % ld == 0 && i < op->dims[d];
          off = off * hn[d] + (i - a[d]);
        }
        if (!inside)
          continue; /* padding or a dilation hole */
        dev_slot x;
        dev_slot_from_host(op->type, in.vmem.data, off, &x);
        acc = dev_elem_reduce_step(red, op->type, acc, x);
      }
      uint8_t tmp[16];
      dev_slot_to_host(rs->type, acc, tmp, 0);
      dev_stage_put(&ot, l, tmp);
    }
    if ((rc = dev_stage_end(&ot, ctx->why, ctx->why_len)) == 0)
      dev_stage_copy_out(&ot, &tl, lo, n, res->data);
  }
  dev_stage_close(&in);
  dev_stage_close(&ot);
  if (rc != 0) {
    hlo_value_unref(res);
    return -1;
  }
  *out = res;
  return 0;
}
