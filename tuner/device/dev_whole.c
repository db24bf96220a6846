/* dev_whole.c — dispatch of the ops the device computes from whole
 * operands, and what they share (dev_whole.h). */
#include "dev_whole.h"

#include "dev_collective.h"
#include "dev_defect.h"
#include "hlo/hlo_dtype.h"

bool dev_whole_handles(hlo_opcode op) {
  switch (op) {
  case HLO_OP_GATHER: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_DYNAMIC_UPDATE_SLICE: case HLO_OP_SCATTER:
  case HLO_OP_SORT: case HLO_OP_REDUCE_WINDOW: case HLO_OP_CONVOLUTION: case HLO_OP_REDUCE: case HLO_OP_FFT:
  case HLO_OP_MAP: case HLO_OP_SELECT_AND_SCATTER:
    return true;
  default:
    return false;
  }
}

int dev_whole_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  *out = NULL;
  for (int j = 0; j < ins->noperands; j++)
    if (!ops[j] || ops[j]->type == HLO_TUPLE)
      return DEV_WHOLE_UNSUPPORTED;
  switch (ins->op) {
  case HLO_OP_GATHER: return dev_gather_run(ins, ops, ctx, out);
  case HLO_OP_DYNAMIC_SLICE: case HLO_OP_DYNAMIC_UPDATE_SLICE: return dev_dslice_run(ins, ops, ctx, out);
  case HLO_OP_SCATTER: return dev_scatter_run(ins, ops, ctx, out);
  case HLO_OP_SORT: return dev_sort_run(ins, ops, ctx, out);
  case HLO_OP_REDUCE_WINDOW: return dev_window_run(ins, ops, ctx, out);
  case HLO_OP_CONVOLUTION: return dev_conv_run(ins, ops, ctx, out);
  case HLO_OP_REDUCE: return dev_reduce_run(ins, ops, ctx, out);
  case HLO_OP_FFT: return dev_fft_run(ins, ops, ctx, out);
  case HLO_OP_MAP: return dev_map_run(ins, ops, ctx, out);
  case HLO_OP_SELECT_AND_SCATTER: return dev_selscat_run(ins, ops, ctx, out);
  default: return DEV_WHOLE_UNSUPPORTED;
  }
}

dev_race dev_whole_race(const dev_whole_ctx *ctx) {
  dev_race r = {.on = (ctx->defects >> DEV_DEFECT_DMA_RACE) & 1u, .buf = ctx->cfg ? ctx->cfg->buf : 1,
                .seed = ctx->jitter};
  return r;
}

static int64_t tiles(const hlo_shape *s, const dev_config *cfg) {
  if (!s || s->type == HLO_TUPLE)
    return 0;
  dev_tiling tl;
  dev_tiling_plan(&tl, s->rank, s->dims, cfg);
  return tl.ntiles;
}

int64_t dev_whole_fetches(const hlo_instr *ins, const dev_config *cfg) {
  switch (ins->op) {
  case HLO_OP_GATHER: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_REDUCE_WINDOW:
    return tiles(&ins->shape, cfg);
  case HLO_OP_DYNAMIC_UPDATE_SLICE: { /* the update's tiles, and the operand's copy */
    if (ins->noperands < 2)
      return 0;
    int64_t u = tiles(&ins->operands[1]->shape, cfg), o = tiles(&ins->operands[0]->shape, cfg);
    return u > o ? u : o;
  }
  case HLO_OP_SCATTER:
    return dev_scatter_fetches(ins, cfg);
  case HLO_OP_SELECT_AND_SCATTER: /* one operand halo per source tile */
    return ins->noperands == 3 ? tiles(&ins->operands[1]->shape, cfg) : 0;
  default:
    return dev_collective_op(ins->op) ? tiles(hlo_shape_leaf(&ins->shape, 0), cfg) : 0;
  }
}

int64_t dev_whole_index(const hlo_value *v, int64_t i) {
  if (hlo_etype_class(v->type) == HLO_CLASS_UINT) {
    uint64_t u = hlo_value_get_u64(v, i);
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  return hlo_value_get_i64(v, i);
}
