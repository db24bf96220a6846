/* dev_selscat.c — the device's select-and-scatter (dev_whole.h).
 *
 * Semantics (XLA operation semantics, SelectAndScatter): operands
 * (operand, source, init_value) and two scalar computations, select and
 * scatter, named by the `select=` and `scatter=` attributes.
 *   - The window slides over the operand as in reduce-window (dev_window.h);
 *     the source has one element per window position.
 *   - In each window, select picks one operand element: the window's
 *     elements are visited in row-major order of the window, the first is
 *     the current pick, and a later element e replaces the pick p when
 *     select(p, e) is false (so a tie, select true, keeps the earlier one).
 *     Padding and dilation holes are no elements and are never picked; a
 *     window holding none selects nothing, and its source value is dropped.
 *   - The result has the operand's shape, every element init_value; the
 *     source value of each window is combined into the picked position:
 *     result[pick] = scatter(result[pick], source[window]), the windows
 *     taken in row-major order of the source.
 *
 * Lowering, in two passes, each tiled as the config cuts it (dev_stage.h):
 *   1. select: the source positions are tiled; for each tile the operand
 *      box its windows reach is DMA'd into a poisoned VMEM buffer with
 *      redzones (one fetch through the ring where dma-race strikes), each
 *      window's pick (a flat operand index, -1 for none) is computed from
 *      that buffer into a VMEM tile of picks, checked and written out;
 *   2. scatter: the result is tiled; each result tile is built in a
 *      poisoned VMEM buffer, first filled with init_value, then the source
 *      windows that can reach the tile (dev_win_reach) are walked in
 *      row-major order, their picks and source values DMA'd into VMEM
 *      buffers of their own, and every pick inside the tile is combined
 *      there.  A position's updates thus come in the source's row-major
 *      order, whatever the tiles.
 * select and scatter run as lane programs of the device's own (dev_lane.h);
 * when either is none (complex numbers, an op with no lane form), or the
 * window is reversed, the op is not lowered here.
 */
#include "dev_whole.h"
#include "dev_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"

/* c compiled as a lane program of two scalar parameters of type t and one
 * result of type rt (any type when rt is HLO_INVALID), else NULL. */
static dev_lane *binary_lane(const hlo_computation *c, hlo_etype t, hlo_etype rt) {
  if (!c || c->nparams != 2 || !c->root || c->root->shape.type == HLO_TUPLE || c->root->shape.rank != 0 ||
      (rt != HLO_INVALID && c->root->shape.type != rt))
    return NULL;
  for (int j = 0; j < 2; j++)
    if (!c->params[j] || c->params[j]->shape.type != t || c->params[j]->shape.rank != 0)
      return NULL;
  char why[160];
  dev_lane *p = dev_lane_compile(c, why, sizeof why);
  if (p && (dev_lane_nparams(p) != 2 || dev_lane_nresults(p) != 1)) {
    dev_lane_free(p);
    p = NULL;
  }
  return p;
}

/* Does the source have one element per window position (the count
 * reduce-window would give)? */
static bool source_fits(const hlo_window *win, const hlo_value *x, const hlo_value *src) {
  for (int d = 0; d < x->rank; d++) {
    const hlo_window_dim *w = &win->dims[d];
    int64_t ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1, rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1;
    int64_t span = x->dims[d] > 0 ? (x->dims[d] - 1) * ld + 1 + w->pad_lo + w->pad_hi : 0;
    int64_t extent = (w->size - 1) * rd + 1;
    int64_t positions = x->dims[d] > 0 && span >= extent ? (span - extent) / w->stride + 1 : 0;
    if (src->dims[d] != positions)
      return false;
  }
  return true;
}

typedef struct selscat {
  const hlo_instr *ins;
  const hlo_window *win;
  const hlo_value *x, *src;
  hlo_etype t;
  int r;
  dev_lane *sel, *sct;
  const dev_whole_ctx *ctx;
} selscat;

/* Pass 1: the pick of every window into picks (s64, the source's dims). */
static int select_pass(const selscat *s, hlo_value *picks) {
  const hlo_value *x = s->x;
  int r = s->r;
  dev_tiling tl;
  dev_tiling_plan(&tl, r, s->src->dims, s->ctx->cfg);
  dev_stage in, pk;
  if (dev_stage_open(&in, "vmem select-and-scatter operand", s->t, dev_win_halo_cap(s->win, r, x->dims, &tl)) != 0) {
    snprintf(s->ctx->why, s->ctx->why_len, "out of memory");
    return -1;
  }
  if (dev_stage_open(&pk, "vmem select-and-scatter picks", HLO_S64, tl.volume) != 0) {
    dev_stage_close(&in);
    snprintf(s->ctx->why, s->ctx->why_len, "out of memory");
    return -1;
  }
  int64_t xstr[HLO_MAX_RANK], wsize[HLO_MAX_RANK], wvol = 1;
  hlo_value_strides(x, xstr);
  for (int d = 0; d < r; d++)
    wvol *= (wsize[d] = s->win->dims[d].size);
  dev_race race = dev_whole_race(s->ctx);
  int rc = 0;
  for (int64_t tt = 0; tt < tl.ntiles && rc == 0; tt++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], a[HLO_MAX_RANK], hn[HLO_MAX_RANK];
    int64_t hvol = dev_win_tile_halo(s->win, r, x->dims, &tl, tt, lo, n, a, hn), cnt = 1;
    for (int d = 0; d < r; d++)
      cnt *= n[d];
    dev_stage_begin(&in, hvol);
    dev_win_stage_box(&in, x, xstr, a, hn, hvol);
    int64_t from = dev_race_source(&race, 0, tt, tl.ntiles);
    if (from != tt) { /* dma-race: tile `from`'s box landed in this tile's buffer first */
      int64_t slo[HLO_MAX_RANK], sn[HLO_MAX_RANK], sa[HLO_MAX_RANK], shn[HLO_MAX_RANK];
      int64_t svol = dev_win_tile_halo(s->win, r, x->dims, &tl, from, slo, sn, sa, shn);
      dev_win_stage_box(&in, x, xstr, sa, shn, svol < hvol ? svol : hvol);
    }
    if ((rc = dev_stage_end(&in, s->ctx->why, s->ctx->why_len)) != 0)
      break;
    dev_stage_begin(&pk, cnt);
    int64_t p[HLO_MAX_RANK] = {0};
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, n, p)) {
      int64_t o[HLO_MAX_RANK], k[HLO_MAX_RANK] = {0}, idx[HLO_MAX_RANK], pick = -1;
      dev_slot best = {0};
      for (int d = 0; d < r; d++)
        o[d] = lo[d] + p[d];
      for (int64_t q = 0; q < wvol; q++, hlo_index_next(r, wsize, k)) {
        if (!dev_win_element(s->win, r, x->dims, o, k, idx))
          continue; /* padding is never picked */
        int64_t off = 0, flat = 0;
        for (int d = 0; d < r; d++) {
          off = off * hn[d] + (idx[d] - a[d]);
          flat += idx[d] * xstr[d];
        }
        dev_slot args[2], keep;
        dev_slot_from_host(s->t, in.vmem.data, off, &args[1]);
        if (pick >= 0) {
          args[0] = best;
          dev_lane_run(s->sel, args, &keep);
          if (keep.i != 0)
            continue; /* select(pick, e) holds: the pick stays */
        }
        pick = flat;
        best = args[1];
      }
      dev_stage_put(&pk, l, &pick);
    }
    if ((rc = dev_stage_end(&pk, s->ctx->why, s->ctx->why_len)) == 0)
      dev_stage_copy_out(&pk, &tl, lo, n, picks->data);
  }
  dev_stage_close(&in);
  dev_stage_close(&pk);
  return rc;
}

/* Pass 2: the result, tile by tile, from init_value, the picks and the
 * source. */
static int scatter_pass(const selscat *s, const hlo_value *picks, const hlo_value *init, hlo_value *res) {
  const hlo_value *x = s->x, *src = s->src;
  int r = s->r;
  dev_tiling tl;
  dev_tiling_plan(&tl, r, x->dims, s->ctx->cfg);
  /* the largest box of windows that can reach a full tile */
  int64_t scap = 1;
  for (int d = 0; d < r; d++) {
    const hlo_window_dim *w = &s->win->dims[d];
    int64_t ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1, rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1;
    int64_t e = ((tl.tile[d] - 1) * ld + (w->size - 1) * rd) / w->stride + 1;
    scap *= e < src->dims[d] ? e : src->dims[d] > 0 ? src->dims[d] : 1;
  }
  dev_stage ot, sv, pk;
  int nopen = 0;
  if (dev_stage_open(&ot, "vmem select-and-scatter tile", s->t, tl.volume) == 0 && ++nopen &&
      dev_stage_open(&sv, "vmem select-and-scatter source", s->t, scap) == 0 && ++nopen &&
      dev_stage_open(&pk, "vmem select-and-scatter pick box", HLO_S64, scap) == 0)
    ++nopen;
  int rc = nopen == 3 ? 0 : -1;
  if (rc != 0)
    snprintf(s->ctx->why, s->ctx->why_len, "out of memory");
  int64_t xstr[HLO_MAX_RANK], sstr[HLO_MAX_RANK];
  hlo_value_strides(x, xstr);
  hlo_value_strides(src, sstr);
  for (int64_t tt = 0; tt < tl.ntiles && rc == 0; tt++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], b[HLO_MAX_RANK], bn[HLO_MAX_RANK], bvol = 1;
    int64_t cnt = dev_tiling_box(&tl, tt, lo, n);
    for (int d = 0; d < r; d++) {
      int64_t first, last;
      dev_win_reach(&s->win->dims[d], lo[d], n[d], src->dims[d], &first, &last);
      b[d] = first;
      bn[d] = last >= first ? last - first + 1 : 0;
      bvol *= bn[d];
    }
    /* the windows' picks and source values into VMEM */
    dev_stage_begin(&sv, bvol);
    dev_stage_begin(&pk, bvol);
    dev_win_stage_box(&sv, src, sstr, b, bn, bvol);
    dev_win_stage_box(&pk, picks, sstr, b, bn, bvol);
    if ((rc = dev_stage_end(&sv, s->ctx->why, s->ctx->why_len)) != 0 ||
        (rc = dev_stage_end(&pk, s->ctx->why, s->ctx->why_len)) != 0)
      break;
    /* the tile starts at init_value */
    dev_stage_begin(&ot, cnt);
    for (int64_t l = 0; l < cnt; l++)
      dev_stage_put(&ot, l, init->data);
    for (int64_t q = 0; q < bvol; q++) {
      int64_t pick;
      memcpy(&pick, dev_stage_at(&pk, q), sizeof pick);
      if (pick < 0)
        continue; /* a window of padding alone */
      int64_t off = 0;
      bool inside = true;
      for (int d = 0; d < r && inside; d++) {
        int64_t i = pick / xstr[d] % x->dims[d] - lo[d];
        inside = i >= 0 && i < n[d];
        off = off * n[d] + i;
      }
      if (!inside)
        continue; /* another tile's */
      dev_slot args[2], v;
      dev_slot_from_host(s->t, ot.vmem.data, off, &args[0]);
      dev_slot_from_host(s->t, sv.vmem.data, q, &args[1]);
      dev_lane_run(s->sct, args, &v);
      uint8_t tmp[16];
      dev_slot_to_host(s->t, v, tmp, 0);
      dev_stage_put(&ot, off, tmp);
    }
    if ((rc = dev_stage_end(&ot, s->ctx->why, s->ctx->why_len)) == 0)
      dev_stage_copy_out(&ot, &tl, lo, n, res->data);
  }
  if (nopen > 0)
    dev_stage_close(&ot);
  if (nopen > 1)
    dev_stage_close(&sv);
  if (nopen > 2)
    dev_stage_close(&pk);
  return rc;
}

int dev_selscat_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  if (ins->noperands != 3 || ins->shape.type == HLO_TUPLE)
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *x = ops[0], *src = ops[1], *init = ops[2];
  hlo_eclass k = hlo_etype_class(x->type);
  int r = x->rank;
  if (src->type != x->type || init->type != x->type || init->count != 1 || src->rank != r ||
      ins->shape.type != x->type || ins->shape.rank != r || k == HLO_CLASS_COMPLEX || k == HLO_CLASS_OTHER ||
      hlo_etype_host_size(x->type) > 8 || !dev_win_lowers(&ins->attrs.window, r) ||
      !source_fits(&ins->attrs.window, x, src))
    return DEV_WHOLE_UNSUPPORTED;
  for (int d = 0; d < r; d++)
    if (ins->shape.dims[d] != x->dims[d])
      return DEV_WHOLE_UNSUPPORTED;
  selscat s = {ins, &ins->attrs.window, x, src, x->type, r, NULL, NULL, ctx};
  s.sel = binary_lane(hlo_instr_named_computation(ctx->m, ins, "select"), x->type, HLO_PRED);
  s.sct = binary_lane(hlo_instr_named_computation(ctx->m, ins, "scatter"), x->type, x->type);
  if (!s.sel || !s.sct) {
    dev_lane_free(s.sel);
    dev_lane_free(s.sct);
    return DEV_WHOLE_UNSUPPORTED;
  }
  hlo_value *picks = hlo_value_array_uninit(HLO_S64, r, src->dims);
  hlo_value *res = hlo_value_array_uninit(x->type, r, x->dims);
  int rc = -1;
  if (!picks || !res)
    snprintf(ctx->why, ctx->why_len, "out of memory");
  else if (select_pass(&s, picks) == 0 && scatter_pass(&s, picks, init, res) == 0)
    rc = 0;
  dev_lane_free(s.sel);
  dev_lane_free(s.sct);
  hlo_value_unref(picks);
  if (rc != 0) {
    hlo_value_unref(res);
    return -1;
  }
  *out = res;
  return 0;
}
