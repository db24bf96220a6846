/* dev_trigger.c — which of the compiler profile's defects a run's config
 * triggers: one predicate per defect, in config terms (dev_defect.h says
 * the same in words), in one table that dev_x_triggered_defects walks.
 * Apart from the executor's steps because a trigger is decided once, before
 * the grid, from the config and the fusion; the lowering defects of
 * dev_elemental.c/dev_scalar.c, dev_scatter.c and dev_sort.c get their
 * config-level condition here and check their op-level one where they act.
 */
#include "dev_exec_internal.h"
#include "dev_fft.h"
#include "dev_whole.h"
#include "hlo/hlo_fft.h"

/* revisit-no-reinit: a reduction whose k loop sits outside an output loop
 * of bound > 1 (windows are left and revisited, nk > 1), while another
 * output loop has a bound of 1. */
static bool trig_revisit_no_reinit(const exec *x) {
  const dev_schedule *s = x->s;
  if (!x->hero_native || s->nk < 2)
    return false;
  bool k_seen = false, revisited = false, bound1 = false;
  for (int j = 0; j < s->cfg.norder; j++) {
    int o = s->cfg.order[j];
    if (o == DEV_ORDER_K)
      k_seen = true;
    else if (k_seen && s->tiles[o] > 1)
      revisited = true;
  }
  for (int d = 0; d < x->f->rank; d++)
    bound1 = bound1 || s->tiles[d] == 1;
  return revisited && bound1;
}

/* packed-reduce-init0: pack > 1 without split-reduction (whose per-chunk
 * partials are initialised apart), over more than one output window. */
static bool trig_packed_reduce_init0(const exec *x) { return x->hero_native && x->P > 1 && !x->split && x->ntiles > 1; }

/* ragged-store-mask: the second-minor output tile does not divide that
 * dimension (of at least two rows). */
static bool trig_ragged_store_mask(const exec *x) {
  int r = x->f->rank;
  if (r < 2)
    return false;
  int64_t dim = x->f->dims[r - 2], tile = x->s->cfg.tile[r - 2];
  return dim >= 2 && tile > 0 && dim % tile != 0;
}

/* ragged-chunk-pad: k does not divide the length of the (single) reduced or
 * contracting dimension. */
static bool trig_ragged_chunk_pad(const exec *x) {
  if (!x->hero_native)
    return false;
  const hlo_instr *h = x->f->hero;
  int nred = x->is_dot ? h->attrs.dot.lhs_contracting.n : h->attrs.dimensions.n;
  return nred == 1 && x->f->k_total % x->kchunk != 0;
}

/* dma-race: buf >= 2 and a window fetched more than buf times; a hero
 * computed from whole operands fetches its operand boxes through its own
 * ring (dev_stage.h), so those fetches count too. */
static bool trig_dma_race(const exec *x) {
  if (x->s->cfg.buf < 2)
    return false;
  for (int p = 0; p < x->nin; p++)
    if (x->win[p].plan && x->win[p].nplan > x->s->cfg.buf)
      return true;
  return x->f->hero && dev_whole_fetches(x->f->hero, &x->s->cfg) > x->s->cfg.buf;
}

/* int8-dot-f32-acc: an s8 x s8 -> s32 dot hero with a chunk k that is not
 * a multiple of 4. */
static bool trig_int8_dot_f32_acc(const exec *x) {
  if (!x->hero_native || !x->is_dot)
    return false;
  const hlo_instr *h = x->f->hero;
  return dev_x_leaf0(h->operands[0])->type == HLO_S8 && dev_x_leaf0(h->operands[1])->type == HLO_S8 && x->res_t == HLO_S32 &&
         x->kchunk % 4 != 0;
}

/* dynslice-clamp-lost: a dynamic-(update-)slice hero whose starts are folded
 * into tile offsets: along some dimension that it really slices (slice
 * smaller than the array), the output tile it follows is smaller than the
 * slice (for an update: than the update). */
static bool trig_dynslice_clamp_lost(const exec *x) {
  const dev_fusion *f = x->f;
  if (f->kind != DEV_HERO_DYNAMIC_SLICE && f->kind != DEV_HERO_DYNAMIC_UPDATE_SLICE)
    return false;
  const hlo_instr *h = f->hero;
  bool dus = f->kind == DEV_HERO_DYNAMIC_UPDATE_SLICE;
  if (h->noperands < (dus ? 2 : 1))
    return false;
  const hlo_shape *op = dev_x_leaf0(h->operands[0]), *sl = dus ? dev_x_leaf0(h->operands[1]) : dev_x_leaf0(h);
  for (int d = 0; d < op->rank && d < sl->rank; d++) {
    int fo = x->follow[h->index * HLO_MAX_RANK + d];
    if (sl->dims[d] < op->dims[d] && fo >= 0 && fo < f->rank && x->s->cfg.tile[fo] < sl->dims[d])
      return true;
  }
  return false;
}

/* fft-tile-twiddle: a four-step fft (N1 > 1) cut into more than one tile
 * along the minor output dimension. */
static bool trig_fft_tile_twiddle(const exec *x) {
  const dev_config *cfg = &x->s->cfg;
  if (!(cfg->flags & DEV_FLAG_FOUR_STEP) || cfg->rank < 1)
    return false;
  const hlo_computation *c = x->f->comp;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->op != HLO_OP_FFT || dev_fft_depth(ins, cfg) == 0 || ins->shape.rank < 1)
      continue;
    hlo_fft fa;
    hlo_error err;
    if (hlo_fft_of(ins, &fa, &err) != 0)
      continue;
    int64_t out_len = ins->shape.dims[ins->shape.rank - 1];
    int64_t tile = cfg->tile[cfg->rank - 1];
    int64_t n = fa.len[fa.rank - 1]; /* the innermost axis: the one the config tiles */
    if (n / dev_fft_inner(n, tile, cfg->flags) > 1 && tile < out_len)
      return true;
  }
  return false;
}

/* scatter-s8-iota-wrap: a scatter hero and flag vec-scatter (the index
 * type, the operand dimension and the combiner: dev_scatter.c). */
static bool trig_scatter_s8_iota_wrap(const exec *x) {
  return (x->s->cfg.flags & DEV_FLAG_VEC_SCATTER) && x->f->kind == DEV_HERO_SCATTER;
}

/* sort-lane-index: a sort hero and flag two-stage-sort (stability, axis,
 * length and carried operands: dev_sort.c). */
static bool trig_sort_lane_index(const exec *x) {
  return (x->s->cfg.flags & DEV_FLAG_TWO_STAGE_SORT) && x->f->kind == DEV_HERO_SORT;
}

/* elide-convert and unsigned-cmp-signed: flag fuse-converts (the convert
 * pair: found by dev_elemental.c, skipped by dev_scalar.c; the unsigned
 * compare: dev_scalar.c). */
static bool trig_fuse_converts(const exec *x) { return (x->s->cfg.flags & DEV_FLAG_FUSE_CONVERTS) != 0; }

/* Each defect and the predicate of its trigger: one entry per defect. */
static const struct {
  dev_defect defect;
  bool (*fires)(const exec *x);
} triggers[] = {
    {DEV_DEFECT_REVISIT_NO_REINIT, trig_revisit_no_reinit},
    {DEV_DEFECT_PACKED_REDUCE_INIT0, trig_packed_reduce_init0},
    {DEV_DEFECT_SCATTER_S8_IOTA_WRAP, trig_scatter_s8_iota_wrap},
    {DEV_DEFECT_SORT_LANE_INDEX, trig_sort_lane_index},
    {DEV_DEFECT_ELIDE_CONVERT, trig_fuse_converts},
    {DEV_DEFECT_RAGGED_STORE_MASK, trig_ragged_store_mask},
    {DEV_DEFECT_RAGGED_CHUNK_PAD, trig_ragged_chunk_pad},
    {DEV_DEFECT_DMA_RACE, trig_dma_race},
    {DEV_DEFECT_INT8_DOT_F32_ACC, trig_int8_dot_f32_acc},
    {DEV_DEFECT_DYNSLICE_CLAMP_LOST, trig_dynslice_clamp_lost},
    {DEV_DEFECT_UNSIGNED_CMP_SIGNED, trig_fuse_converts},
    {DEV_DEFECT_FFT_TILE_TWIDDLE, trig_fft_tile_twiddle},
};
_Static_assert(sizeof triggers / sizeof triggers[0] == DEV_DEFECT_COUNT, "every defect needs a trigger entry");

/* The defects of the compiler profile that this run's config triggers. */
uint32_t dev_x_triggered_defects(const exec *x) {
  uint32_t act = 0;
  for (size_t i = 0; i < sizeof triggers / sizeof triggers[0]; i++)
    if (dev_compiler_has(x->cc, triggers[i].defect) && triggers[i].fires(x))
      act |= 1u << triggers[i].defect;
  return act;
}
