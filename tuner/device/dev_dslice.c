/* dev_dslice.c — the device's dynamic-slice and dynamic-update-slice
 * (dev_whole.h).
 *
 * Semantics: the start along dim d is the d-th start operand (or element d
 * of a single rank-1 start operand, the old form), clamped to
 * [0, dim - size] so the slice (or the update) lies inside the operand.
 *
 * Lowering: the starts are folded into the tile offsets.  A dynamic-slice
 * walks its output tiles and DMAs each element from the operand at
 * start + position; a dynamic-update-slice copies the operand to the
 * result, then walks the update's tiles, each staged in VMEM and written
 * back at start + position.  Each tile is one fetch through the ring of
 * dev_stage.h (where dma-race strikes).  The offset arithmetic runs modulo the
 * operand's extent (an address is a position inside the array); with
 * clamped starts it never wraps.
 *
 * Defect dynslice-clamp-lost (dev_defect.h; class: a semantic guard
 * dropped when an index computation is folded into address arithmetic):
 * the clamp step is left out of the folded offsets, so an out-of-range
 * start wraps around the array: the slice reads (or the update writes) rows
 * from the other end.  Starts in range are unaffected.
 */
#include "dev_whole.h"

#include <stdio.h>
#include <string.h>

#include "dev_defect.h"
#include "dev_hbm.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"

static int64_t floor_mod(int64_t a, int64_t m) {
  int64_t r = m ? a % m : 0;
  return r < 0 ? r + m : r;
}

/* DMAs the first `limit` elements of tile t (row-major in its box) into
 * the stage: from `from` at start + position (a dynamic-slice's operand,
 * the offsets wrapping modulo its extent), or at the position itself
 * (start NULL: a dynamic-update-slice's update). */
static void stage_tile(dev_stage *st, const hlo_value *from, const int64_t *str, const int64_t *start,
                       const dev_tiling *tl, int64_t t, int64_t limit) {
  int r = tl->rank;
  int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
  int64_t cnt = dev_tiling_box(tl, t, lo, n);
  cnt = cnt < limit ? cnt : limit;
  for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, n, p)) {
    int64_t g = 0;
    for (int d = 0; d < r; d++)
      g += (start ? floor_mod(start[d] + lo[d] + p[d], from->dims[d]) : lo[d] + p[d]) * str[d];
    dev_stage_put(st, l, (const char *)from->data + (size_t)g * from->elem_size);
  }
}

int dev_dslice_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  bool dus = ins->op == HLO_OP_DYNAMIC_UPDATE_SLICE;
  const hlo_value *op = ops[0], *upd = dus ? ops[1] : NULL;
  int first = dus ? 2 : 1, r = op->rank;
  const hlo_shape *rs = &ins->shape;
  if (ins->noperands < first || rs->type != op->type || (dus && (upd->type != op->type || upd->rank != r)) ||
      (!dus && (rs->rank != r || ins->attrs.dynamic_slice_sizes.n != r)))
    return DEV_WHOLE_UNSUPPORTED;
  bool vector_form = ins->noperands == first + 1 && ops[first]->rank == 1 && r != 1;
  if (!vector_form && ins->noperands != first + r)
    return DEV_WHOLE_UNSUPPORTED;
  bool lost = (ctx->defects >> DEV_DEFECT_DYNSLICE_CLAMP_LOST) & 1u;
  int64_t start[HLO_MAX_RANK], size[HLO_MAX_RANK];
  for (int d = 0; d < r; d++) {
    const hlo_value *s = vector_form ? ops[first] : ops[first + d];
    if (s->count < (vector_form ? r : 1))
      return DEV_WHOLE_UNSUPPORTED;
    int64_t v = dev_whole_index(s, vector_form ? d : 0);
    size[d] = dus ? upd->dims[d] : ins->attrs.dynamic_slice_sizes.v[d];
    if (size[d] < 0 || size[d] > op->dims[d] || (!dus && size[d] != rs->dims[d]))
      return DEV_WHOLE_UNSUPPORTED;
    int64_t hi = op->dims[d] - size[d];
    start[d] = lost ? v : v < 0 ? 0 : v > hi ? hi : v; /* the clamp the defect drops */
  }
  const hlo_value *walk_v = dus ? upd : NULL;
  const int64_t *wdims = dus ? walk_v->dims : rs->dims;
  dev_tiling tl;
  dev_tiling_plan(&tl, r, wdims, ctx->cfg);
  dev_race race = dev_whole_race(ctx); /* ring 0: the tiles walked, 1: the operand's copy */
  dev_stage st;
  dev_hbm res;
  bool have_res = false;
  hlo_value *val = NULL;
  int rc = 0;
  if (dev_stage_open(&st, dus ? "vmem update tile" : "vmem slice tile", op->type, tl.volume) != 0) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  if (dus) {
    if (dev_hbm_alloc(&res, "dynamic-update-slice result", op->type, r, op->dims) != 0) {
      snprintf(ctx->why, ctx->why_len, "out of memory");
      rc = -1;
    } else { /* the result starts as the operand, copied tile by tile (ring 1) */
      have_res = true;
      rc = dev_stage_copy_tiled(&res, op, ctx->cfg, &race, 1, ctx->why, ctx->why_len);
    }
  } else if (!(val = hlo_value_array_uninit(rs->type, r, rs->dims))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  int64_t ostr[HLO_MAX_RANK], ustr[HLO_MAX_RANK];
  hlo_value_strides(op, ostr);
  if (dus)
    hlo_value_strides(upd, ustr);
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    const hlo_value *from = dus ? upd : op;
    const int64_t *fstr = dus ? ustr : ostr;
    stage_tile(&st, from, fstr, dus ? NULL : start, &tl, t, cnt);
    int64_t src = dev_race_source(&race, 0, t, tl.ntiles);
    if (src != t) /* dma-race: tile src's fetch landed in this tile's buffer first */
      stage_tile(&st, from, fstr, dus ? NULL : start, &tl, src, cnt);
    rc = dev_stage_end(&st, ctx->why, ctx->why_len);
    if (rc != 0)
      break;
    if (!dus) {
      dev_stage_copy_out(&st, &tl, lo, n, val->data);
      continue;
    }
    memset(p, 0, sizeof p);
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, n, p)) {
      int64_t g = 0;
      for (int d = 0; d < r; d++)
        g += floor_mod(start[d] + lo[d] + p[d], op->dims[d]) * ostr[d];
      dev_hbm_store(&res, g, dev_stage_at(&st, l), false);
    }
  }
  if (rc == 0 && dus && dev_hbm_check(&res, ctx->why, ctx->why_len) != 0)
    rc = -1;
  if (rc == 0 && dus && !(val = dev_hbm_value(&res))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  if (have_res)
    dev_hbm_free(&res);
  dev_stage_close(&st);
  if (rc != 0) {
    hlo_value_unref(val);
    return -1;
  }
  *out = val;
  return 0;
}
