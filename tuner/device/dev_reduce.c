/* dev_reduce.c — the device's reduce with a general or variadic reducer
 * (dev_whole.h); a reduce with a simple reducer is evaluated elementally
 * (dev_elemental.h) and never reaches this file.
 *
 * Semantics: N operands of one shape and N scalar inits; every output
 * element (a position of the kept dims) starts at the inits and takes the
 * reduced elements in row-major order of the reduced dims (the lowest
 * dimension number slowest): acc = f(acc..., x...), the reducer's first N
 * parameters being the accumulators.
 *
 * Lowering: output tiles as the config cuts them, each built in N poisoned
 * VMEM buffers with redzones; the reducer runs as a lane program of the
 * device's own (dev_lane.h).
 */
#include "dev_whole.h"

#include <stdio.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_index.h"

#define DEV_REDUCE_MAX_OPERANDS 8

int dev_reduce_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  int n = ins->noperands / 2;
  const hlo_computation *c = ins->attrs.calls.to_apply;
  if (n < 1 || n > DEV_REDUCE_MAX_OPERANDS || ins->noperands != 2 * n || !c || c->nparams != 2 * n)
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *a0 = ops[0];
  int r = a0->rank;
  bool reduced[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->attrs.dimensions.n; i++) {
    int64_t d = ins->attrs.dimensions.v[i];
    if (d < 0 || d >= r || reduced[d])
      return DEV_WHOLE_UNSUPPORTED;
    reduced[d] = true;
  }
  int kept[HLO_MAX_RANK], red[HLO_MAX_RANK], nk = 0, nr = 0;
  int64_t kdims[HLO_MAX_RANK], rdims[HLO_MAX_RANK], rvol = 1;
  for (int d = 0; d < r; d++) {
    if (reduced[d])
      red[nr] = d, rvol *= (rdims[nr++] = a0->dims[d]);
    else
      kept[nk] = d, kdims[nk++] = a0->dims[d];
  }
  hlo_etype t[DEV_REDUCE_MAX_OPERANDS];
  for (int j = 0; j < n; j++) {
    const hlo_value *o = ops[j], *init = ops[n + j];
    const hlo_shape *rs = ins->shape.type == HLO_TUPLE ? &ins->shape.elems[j] : &ins->shape;
    hlo_eclass k = hlo_etype_class(o->type);
    if ((ins->shape.type == HLO_TUPLE ? ins->shape.ntuple != n : n != 1) || o->rank != r || init->count != 1 ||
        init->type != o->type || rs->type != o->type || rs->rank != nk || k == HLO_CLASS_COMPLEX ||
        k == HLO_CLASS_OTHER || !c->params[j] || !c->params[n + j] || c->params[j]->shape.type != o->type ||
        c->params[n + j]->shape.type != o->type)
      return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < r; d++)
      if (o->dims[d] != a0->dims[d])
        return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < nk; d++)
      if (rs->dims[d] != kdims[d])
        return DEV_WHOLE_UNSUPPORTED;
    t[j] = o->type;
  }
  char why[160];
  dev_lane *prog = dev_lane_compile(c, why, sizeof why);
  if (!prog)
    return DEV_WHOLE_UNSUPPORTED;
  if (dev_lane_nresults(prog) != n) {
    dev_lane_free(prog);
    return DEV_WHOLE_UNSUPPORTED;
  }
  dev_tiling tl;
  dev_tiling_plan(&tl, nk, kdims, ctx->cfg);
  dev_stage st[DEV_REDUCE_MAX_OPERANDS];
  hlo_value *res[DEV_REDUCE_MAX_OPERANDS] = {0};
  int nst = 0, rc = 0;
  for (int j = 0; j < n && rc == 0; j++) {
    char name[48];
    snprintf(name, sizeof name, "vmem reduce tile %d", j);
    if (!(res[j] = hlo_value_array_uninit(t[j], nk, kdims)) || dev_stage_open(&st[j], name, t[j], tl.volume) != 0)
      rc = -1;
    else
      nst++;
  }
  if (rc != 0)
    snprintf(ctx->why, ctx->why_len, "out of memory");
  dev_slot init[DEV_REDUCE_MAX_OPERANDS];
  for (int j = 0; j < n; j++)
    dev_slot_from_host(t[j], ops[n + j]->data, 0, &init[j]);
  int64_t str[HLO_MAX_RANK];
  hlo_value_strides(a0, str);
  for (int64_t tt = 0; tt < tl.ntiles && rc == 0; tt++) {
    int64_t lo[HLO_MAX_RANK], nn[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
    int64_t cnt = dev_tiling_box(&tl, tt, lo, nn);
    for (int j = 0; j < n; j++)
      dev_stage_begin(&st[j], cnt);
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(nk, nn, p)) {
      int64_t base = 0;
      for (int d = 0; d < nk; d++)
        base += (lo[d] + p[d]) * str[kept[d]];
      dev_slot args[2 * DEV_REDUCE_MAX_OPERANDS];
      memcpy(args, init, sizeof init[0] * (size_t)n);
      int64_t q[HLO_MAX_RANK] = {0};
      for (int64_t e = 0; e < rvol; e++, hlo_index_next(nr, rdims, q)) {
        int64_t off = base;
        for (int d = 0; d < nr; d++)
          off += q[d] * str[red[d]];
        for (int j = 0; j < n; j++)
          dev_slot_from_host(t[j], ops[j]->data, off, &args[n + j]);
        dev_lane_run(prog, args, args); /* results land on the accumulators */
      }
      for (int j = 0; j < n; j++) {
        uint8_t tmp[16];
        dev_slot_to_host(t[j], args[j], tmp, 0);
        dev_stage_put(&st[j], l, tmp);
      }
    }
    for (int j = 0; j < n && rc == 0; j++)
      if ((rc = dev_stage_end(&st[j], ctx->why, ctx->why_len)) == 0)
        dev_stage_copy_out(&st[j], &tl, lo, nn, res[j]->data);
  }
  for (int j = 0; j < nst; j++)
    dev_stage_close(&st[j]);
  dev_lane_free(prog);
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
