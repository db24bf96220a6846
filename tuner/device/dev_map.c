/* dev_map.c — the device's map (dev_whole.h).
 *
 * Semantics: output element i is to_apply(operand_0[i], ..., operand_n-1[i]);
 * every operand has the output's dimensions, and to_apply takes one scalar
 * of each operand's type and returns one of the output's.
 *
 * Lowering: to_apply is compiled once into a lane program of the device's
 * own (dev_lane.h), so the values come from the device's scalar lowering,
 * never from the reference evaluator.  The output is walked tile by tile as
 * the config cuts it; each tile's operand elements are fetched through the
 * ring of dev_stage.h (where dma-race strikes: a tile may compute on the
 * operands of the tile buf further on), run through the program a lane at a
 * time and staged in a poisoned VMEM buffer with redzones.  A to_apply that
 * is no lane program (complex numbers, a while loop, an op with no lane
 * form: dev_lane.h) is not lowered: DEV_WHOLE_UNSUPPORTED.
 */
#include "dev_whole.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"

#define MAP_MAX_OPERANDS 16

/* Does to_apply take one scalar of each operand's type and return a scalar
 * of the output's type? */
static bool signature_fits(const hlo_instr *ins, hlo_value *const *ops, const hlo_computation *f) {
  if (f->nparams != ins->noperands || !f->root || f->root->shape.type != ins->shape.type || f->root->shape.rank != 0)
    return false;
  for (int j = 0; j < ins->noperands; j++) {
    const hlo_instr *p = f->params[j];
    if (!p || p->shape.rank != 0 || p->shape.type != ops[j]->type)
      return false;
  }
  return true;
}

/* Computes the first `limit` elements of the box (lo, n) row-major into the
 * stage, at positions 0.. (a raced tile computes another tile's box). */
static void stage_box(dev_stage *st, dev_lane *lane, const hlo_instr *ins, hlo_value *const *ops, hlo_etype rt,
                      const int64_t *str, const int64_t *lo, const int64_t *n, int64_t limit, unsigned char *one) {
  int r = ins->shape.rank, nops = ins->noperands;
  int64_t p[HLO_MAX_RANK] = {0};
  dev_slot args[MAP_MAX_OPERANDS], res;
  for (int64_t l = 0; l < limit; l++, hlo_index_next(r, n, p)) {
    int64_t g = 0;
    for (int d = 0; d < r; d++)
      g += (lo[d] + p[d]) * str[d];
    for (int j = 0; j < nops; j++)
      dev_slot_from_host(ops[j]->type, ops[j]->data, g, &args[j]);
    dev_lane_run(lane, args, &res);
    dev_slot_to_host(rt, res, one, 0);
    dev_stage_put(st, l, one);
  }
}

int dev_map_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_shape *rs = &ins->shape;
  const hlo_computation *f = ins->attrs.calls.to_apply;
  int nops = ins->noperands, r = rs->rank;
  if (!f || nops < 1 || nops > MAP_MAX_OPERANDS || rs->type == HLO_TUPLE)
    return DEV_WHOLE_UNSUPPORTED;
  for (int j = 0; j < nops; j++) {
    if (ops[j]->rank != r)
      return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < r; d++)
      if (ops[j]->dims[d] != rs->dims[d])
        return DEV_WHOLE_UNSUPPORTED;
  }
  if (!signature_fits(ins, ops, f))
    return DEV_WHOLE_UNSUPPORTED;
  char lane_why[160];
  dev_lane *lane = dev_lane_compile(f, lane_why, sizeof lane_why);
  if (!lane)
    return DEV_WHOLE_UNSUPPORTED;
  if (dev_lane_nparams(lane) != nops || dev_lane_nresults(lane) != 1) {
    dev_lane_free(lane);
    return DEV_WHOLE_UNSUPPORTED;
  }
  dev_tiling tl;
  dev_tiling_plan(&tl, r, rs->dims, ctx->cfg);
  dev_race race = dev_whole_race(ctx);
  dev_stage st;
  hlo_value *val = hlo_value_array_uninit(rs->type, r, rs->dims);
  unsigned char one[16];
  if (!val || dev_stage_open(&st, "vmem map tile", rs->type, tl.volume) != 0) {
    hlo_value_unref(val);
    dev_lane_free(lane);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  int64_t str[HLO_MAX_RANK];
  hlo_value_strides(val, str);
  int rc = 0;
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK];
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    stage_box(&st, lane, ins, ops, rs->type, str, lo, n, cnt, one);
    int64_t src = dev_race_source(&race, 0, t, tl.ntiles);
    if (src != t) { /* dma-race: tile src's operands landed in this tile's buffers first */
      int64_t slo[HLO_MAX_RANK], sn[HLO_MAX_RANK];
      int64_t scnt = dev_tiling_box(&tl, src, slo, sn);
      stage_box(&st, lane, ins, ops, rs->type, str, slo, sn, scnt < cnt ? scnt : cnt, one);
    }
    rc = dev_stage_end(&st, ctx->why, ctx->why_len);
    if (rc == 0)
      dev_stage_copy_out(&st, &tl, lo, n, val->data);
  }
  dev_stage_close(&st);
  dev_lane_free(lane);
  if (rc != 0) {
    hlo_value_unref(val);
    return -1;
  }
  *out = val;
  return 0;
}
