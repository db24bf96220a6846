/* dev_gather.c — the device's gather (dev_whole.h).
 *
 * Semantics (XLA operation semantics, Gather): an output position splits
 * into batch dims (every output dim not in offset_dims; in order they are
 * the index array's dims other than index_vector_dim) and offset dims
 * (offset_dims[j] runs along the j-th operand dim that is neither in
 * collapsed_slice_dims nor in operand_batching_dims).  The batch position
 * selects an index vector; component k is the start along operand dim
 * start_index_map[k], clamped to [0, dim - slice_size]; an
 * operand_batching_dims[i] starts at the batch coordinate of index dim
 * start_indices_batching_dims[i].
 *
 * Lowering: output tiles as the config cuts them; per tile the address of
 * every element is computed from its index vector and the element is DMA'd
 * from the operand into the tile's VMEM buffer, one fetch per tile through
 * the ring of dev_stage.h (where dma-race strikes).
 */
#include "dev_whole.h"

#include <stdio.h>
#include <string.h>

#include "dev_stage.h"
#include "hlo/hlo_index.h"

static bool in_list(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return true;
  return false;
}

/* What every element of a tile needs: the op, its operands and the map of
 * output dims onto index (batch) and operand (offset) dims. */
typedef struct gather_plan {
  const hlo_instr *ins;
  const hlo_value *op, *ind;
  const dev_tiling *tl;
  const int *batch_of, *off_of;
  int64_t nvec, ivd;
  int64_t istr[HLO_MAX_RANK], ostr[HLO_MAX_RANK];
  bool linear; /* linear_offset applies */
} gather_plan;

/* The operand offset of the element at lo + p of the output, from its
 * multi-index: the index position of each batch dim, the operand start of
 * each dim (batching dims, then the clamped index vector, later entries
 * overwriting earlier ones), the offset dims added on top. */
static int64_t general_offset(const gather_plan *g, const int64_t *lo, const int64_t *p) {
  const hlo_gather_dnums *dn = &g->ins->attrs.gather;
  int rr = g->tl->rank, ri = g->ind->rank, ro = g->op->rank;
  /* only the ranks in use are cleared: zeroing both whole arrays per
   * element was a large part of the gather's time */
  int64_t ipos[HLO_MAX_RANK + 1], src[HLO_MAX_RANK];
  memset(ipos, 0, sizeof ipos[0] * (size_t)(ri + 1));
  memset(src, 0, sizeof src[0] * (size_t)ro);
  for (int d = 0; d < rr; d++)
    if (g->batch_of[d] >= 0 && g->batch_of[d] < ri)
      ipos[g->batch_of[d]] = lo[d] + p[d];
  for (int i = 0; i < dn->operand_batching_dims.n; i++)
    src[dn->operand_batching_dims.v[i]] = ipos[dn->start_indices_batching_dims.v[i]];
  for (int k = 0; k < g->nvec; k++) {
    int64_t at = 0;
    for (int d = 0; d < ri; d++)
      at += (d == g->ivd ? k : ipos[d]) * g->istr[d];
    int64_t od = dn->start_index_map.v[k], hi = g->op->dims[od] - g->ins->attrs.slice_sizes.v[od];
    int64_t s = dev_whole_index(g->ind, at);
    src[od] = s < 0 ? 0 : s > hi ? hi : s;
  }
  for (int d = 0; d < rr; d++)
    if (g->off_of[d] >= 0)
      src[g->off_of[d]] += lo[d] + p[d];
  int64_t off = 0;
  for (int d = 0; d < ro; d++)
    off += src[d] * g->ostr[d];
  return off;
}

/* general_offset when g->linear holds (no operand batching dims, and
 * start_index_map names distinct dims: nothing is overwritten), as the sum
 * of its terms: an index dim no batch dim sets is 0 there, and so is an
 * operand dim no start and no offset dim sets.  Building and clearing the
 * two index arrays, by a libc memset call each, per row, was most of an
 * embedding lookup's gather. */
static int64_t linear_offset(const gather_plan *g, const int64_t *lo, const int64_t *p) {
  const hlo_gather_dnums *dn = &g->ins->attrs.gather;
  int rr = g->tl->rank;
  int64_t base = 0, off = 0;
  for (int d = 0; d < rr; d++) {
    int64_t at = lo[d] + p[d];
    if (g->batch_of[d] >= 0 && g->batch_of[d] < g->ind->rank)
      base += at * g->istr[g->batch_of[d]];
    if (g->off_of[d] >= 0)
      off += at * g->ostr[g->off_of[d]];
  }
  for (int k = 0; k < g->nvec; k++) {
    int64_t at = base + (g->ivd < g->ind->rank ? k * g->istr[g->ivd] : 0);
    int64_t od = dn->start_index_map.v[k], hi = g->op->dims[od] - g->ins->attrs.slice_sizes.v[od];
    /* s32 indices (the common type) read directly, as dev_whole_index reads them */
    int64_t s = g->ind->type == HLO_S32 ? ((const int32_t *)g->ind->data)[at] : dev_whole_index(g->ind, at);
    off += (s < 0 ? 0 : s > hi ? hi : s) * g->ostr[od];
  }
  return off;
}

/* DMAs the first `limit` elements of tile t (row-major in its box) into
 * the stage, each from the operand at its clamped start plus offset.  When
 * the tile's last dim is an offset dim along the operand's innermost one,
 * a row of the tile shares one index vector and reads consecutive operand
 * elements, so the address is formed once per row and the row moves as
 * one run (an embedding lookup: a table row per index); otherwise per
 * element. */
static void stage_tile(const gather_plan *g, dev_stage *st, int64_t t, int64_t limit) {
  int rr = g->tl->rank, last = rr - 1;
  int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
  int64_t cnt = dev_tiling_box(g->tl, t, lo, n);
  cnt = cnt < limit ? cnt : limit;
  bool rows = rr > 0 && g->off_of[last] >= 0 && g->ostr[g->off_of[last]] == 1;
  for (int64_t l = 0; l < cnt;) {
    int64_t off = g->linear ? linear_offset(g, lo, p) : general_offset(g, lo, p);
    const char *from = (const char *)g->op->data + (size_t)off * g->op->elem_size;
    if (!rows) {
      dev_stage_put(st, l, from);
      l++;
      hlo_index_next(rr, n, p);
      continue;
    }
    int64_t m = n[last] - p[last] < cnt - l ? n[last] - p[last] : cnt - l;
    dev_stage_put_run(st, l, from, m);
    l += m;
    p[last] += m;
    if (p[last] == n[last]) {
      p[last] = 0;
      hlo_index_next(last, n, p);
    }
  }
}

int dev_gather_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_gather_dnums *dn = &ins->attrs.gather;
  const hlo_value *op = ops[0], *ind = ops[1];
  const hlo_shape *rs = &ins->shape;
  int ro = op->rank, ri = ind->rank, rr = rs->rank;
  int64_t ivd = dn->index_vector_dim;
  if (ins->noperands != 2 || rs->type != op->type || ivd < 0 || ivd > ri || ins->attrs.slice_sizes.n != ro ||
      dn->start_indices_batching_dims.n != dn->operand_batching_dims.n)
    return DEV_WHOLE_UNSUPPORTED;
  int64_t nvec = ivd < ri ? ind->dims[ivd] : 1;
  if (nvec != dn->start_index_map.n)
    return DEV_WHOLE_UNSUPPORTED;
  /* output dim -> index dim (batch) or operand dim (offset) */
  int batch_of[HLO_MAX_RANK], off_of[HLO_MAX_RANK], win[HLO_MAX_RANK], nwin = 0, nb = 0;
  for (int d = 0; d < ro; d++)
    if (!in_list(&dn->collapsed_slice_dims, d) && !in_list(&dn->operand_batching_dims, d))
      win[nwin++] = d;
  if (nwin != dn->offset_dims.n)
    return DEV_WHOLE_UNSUPPORTED;
  for (int d = 0, j = 0; d < rr; d++) {
    batch_of[d] = off_of[d] = -1;
    if (in_list(&dn->offset_dims, d)) {
      off_of[d] = win[j++];
    } else {
      if (nb == ivd)
        nb++; /* skip the index vector's own dim */
      batch_of[d] = nb++;
    }
  }
  for (int d = 0; d < rr; d++)
    if (batch_of[d] >= ri)
      return DEV_WHOLE_UNSUPPORTED; /* more batch dims than index dims */
  for (int k = 0; k < nvec; k++)
    if (dn->start_index_map.v[k] < 0 || dn->start_index_map.v[k] >= ro)
      return DEV_WHOLE_UNSUPPORTED;
  for (int i = 0; i < dn->operand_batching_dims.n; i++)
    if (dn->operand_batching_dims.v[i] < 0 || dn->operand_batching_dims.v[i] >= ro ||
        dn->start_indices_batching_dims.v[i] < 0 || dn->start_indices_batching_dims.v[i] >= ri)
      return DEV_WHOLE_UNSUPPORTED;
  hlo_value *res = hlo_value_array_uninit(rs->type, rr, rs->dims);
  dev_tiling tl;
  dev_stage st;
  if (!res || (dev_tiling_plan(&tl, rr, rs->dims, ctx->cfg), dev_stage_open(&st, "vmem gather tile", rs->type, tl.volume)) != 0) {
    hlo_value_unref(res);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  gather_plan g = {.ins = ins, .op = op, .ind = ind, .tl = &tl, .batch_of = batch_of, .off_of = off_of,
                   .nvec = nvec, .ivd = ivd};
  hlo_value_strides(ind, g.istr);
  hlo_value_strides(op, g.ostr);
  g.linear = dn->operand_batching_dims.n == 0;
  for (int k = 0; k < nvec; k++)
    for (int q = 0; q < k; q++)
      g.linear = g.linear && dn->start_index_map.v[q] != dn->start_index_map.v[k];
  dev_race race = dev_whole_race(ctx);
  int rc = 0;
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK];
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    stage_tile(&g, &st, t, cnt);
    int64_t src = dev_race_source(&race, 0, t, tl.ntiles);
    if (src != t) /* dma-race: tile src's gather landed in this tile's buffer first */
      stage_tile(&g, &st, src, cnt);
    rc = dev_stage_end(&st, ctx->why, ctx->why_len);
    if (rc == 0)
      dev_stage_copy_out(&st, &tl, lo, n, res->data);
  }
  dev_stage_close(&st);
  if (rc != 0) {
    hlo_value_unref(res);
    return -1;
  }
  *out = res;
  return 0;
}
