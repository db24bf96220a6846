/* dev_conv.c — the device's convolution (dev_whole.h).
 *
 * Semantics (XLA operation semantics, ConvWithGeneralPadding and dim_labels):
 * output element (batch n, feature f, spatial o) is the sum, over the
 * window positions w (row-major, spatial dim 0 slowest) and the input
 * features c of f's group (ascending), of input(n', c', pos) *
 * kernel(c, f, w'), where along each spatial dim pos = o*stride +
 * w*rhs_dilate - pad_lo in the input dilated by lhs_dilate (padding and
 * dilation holes contribute nothing), w' = size-1-w for a reversed window,
 * and the groups: with feature_group_count G, output feature f reads input
 * features g*KI + c, g = f / (F/G); with batch_group_count BG, output
 * batch n of feature group b = f / (F/BG) reads input batch b*N + n.
 *
 * Numerics: operands are converted to the compute type exactly (f32 for
 * f32, bf16, f16 and f8 results, f64 for f64; integers to the result type,
 * then 64-bit wrapping arithmetic); acc starts at 0 and takes acc + x*k,
 * the product and the sum each rounded (no fused multiply-add), in the
 * order above; the result is rounded once to the result type.  No bf16
 * passes: the device's convolution has full f32 products (unlike its dot at
 * DEFAULT precision).
 *
 * Lowering: output tiles as the config cuts them (over the output's own
 * dimension order); each tile is built in a poisoned VMEM buffer with
 * redzones, every element folding its whole contraction in one running
 * accumulator, chunk after chunk in ascending order as the dot does.
 * Mixed operand classes (an integer input with a float result, ...),
 * complex and pred types are not lowered here.
 */
#include "dev_whole.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_stage.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

typedef struct geom {
  int ns;
  int64_t xi[HLO_MAX_RANK], ki[HLO_MAX_RANK], oi[HLO_MAX_RANK]; /* batch, spatial..., feature */
  int64_t n_out, feat_out, kin, groups, bgroups;
  hlo_window_dim w[HLO_MAX_RANK];
} geom;

static bool is_float(hlo_etype t) { return hlo_etype_class(t) == HLO_CLASS_FLOAT; }
static bool is_int(hlo_etype t) {
  hlo_eclass c = hlo_etype_class(t);
  return c == HLO_CLASS_SINT || c == HLO_CLASS_UINT;
}

static int plan(const hlo_instr *ins, const hlo_value *x, const hlo_value *k, geom *g) {
  const hlo_conv_dnums *dn = &ins->attrs.conv;
  const hlo_shape *rs = &ins->shape;
  memset(g, 0, sizeof *g);
  g->ns = dn->input_spatial.n;
  int nd = g->ns + 2;
  if (!(ins->attrs.has & HLO_A_DIM_LABELS) || dn->kernel_spatial.n != g->ns || dn->output_spatial.n != g->ns ||
      x->rank != nd || k->rank != nd || rs->rank != nd || nd > HLO_MAX_RANK)
    return -1;
  g->xi[0] = dn->input_batch, g->ki[0] = dn->kernel_output_feature, g->oi[0] = dn->output_batch;
  for (int d = 0; d < g->ns; d++)
    g->xi[1 + d] = dn->input_spatial.v[d], g->ki[1 + d] = dn->kernel_spatial.v[d], g->oi[1 + d] = dn->output_spatial.v[d];
  g->xi[nd - 1] = dn->input_feature, g->ki[nd - 1] = dn->kernel_input_feature, g->oi[nd - 1] = dn->output_feature;
  for (int d = 0; d < nd; d++)
    if (g->xi[d] < 0 || g->xi[d] >= nd || g->ki[d] < 0 || g->ki[d] >= nd || g->oi[d] < 0 || g->oi[d] >= nd)
      return -1;
  g->groups = ins->attrs.has & HLO_A_FEATURE_GROUP_COUNT ? ins->attrs.feature_group_count : 1;
  g->bgroups = ins->attrs.has & HLO_A_BATCH_GROUP_COUNT ? ins->attrs.batch_group_count : 1;
  g->kin = k->dims[g->ki[nd - 1]];
  g->feat_out = k->dims[g->ki[0]];
  g->n_out = rs->dims[g->oi[0]];
  if (g->groups < 1 || g->bgroups < 1 || (g->groups > 1 && g->bgroups > 1) ||
      x->dims[g->xi[nd - 1]] != g->kin * g->groups || g->feat_out % g->groups || g->feat_out % g->bgroups ||
      x->dims[g->xi[0]] % g->bgroups || g->n_out != x->dims[g->xi[0]] / g->bgroups ||
      rs->dims[g->oi[nd - 1]] != g->feat_out)
    return -1;
  if ((ins->attrs.has & HLO_A_WINDOW) && ins->attrs.window.rank != g->ns)
    return -1;
  for (int d = 0; d < g->ns; d++) {
    int64_t ks = k->dims[g->ki[1 + d]];
    if (ins->attrs.has & HLO_A_WINDOW)
      g->w[d] = ins->attrs.window.dims[d];
    else
      g->w[d] = (hlo_window_dim){.size = ks, .stride = 1, .lhs_dilate = 1, .rhs_dilate = 1};
    if (g->w[d].size != ks || g->w[d].stride < 1 || g->w[d].lhs_dilate < 1 || g->w[d].rhs_dilate < 1)
      return -1;
  }
  return 0;
}

/* An operand as the products read it, for result type rt: f64 values (an
 * f64 result), f32 values (another float result: an f32 product of the two
 * values rounded to f32, as the loop forms it), or integers wrapped to rt.
 * One allocation, p, the caller frees. */
typedef struct conv_operand {
  void *p;
  double *d;
  float *f;
  uint64_t *u;
} conv_operand;

static int operand_of(const hlo_value *v, hlo_etype rt, conv_operand *o) {
  size_t n = (size_t)(v->count > 0 ? v->count : 1);
  bool f64 = rt == HLO_F64, fl = is_float(rt);
  *o = (conv_operand){0};
  o->p = malloc(n * (fl && !f64 ? sizeof(float) : 8));
  if (!o->p)
    return -1;
  o->d = o->p, o->f = o->p, o->u = o->p;
  for (int64_t i = 0; i < v->count; i++) {
    dev_slot a;
    dev_slot_from_host(v->type, v->data, i, &a);
    if (f64)
      o->d[i] = a.f;
    else if (fl)
      o->f[i] = (float)a.f;
    else
      o->u[i] = hlo_int_wrap(rt, (uint64_t)a.i);
  }
  return 0;
}

int dev_conv_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_value *x = ops[0], *k = ops[1];
  const hlo_shape *rs = &ins->shape;
  hlo_etype rt = rs->type;
  geom g;
  if (ins->noperands != 2 || rt == HLO_TUPLE || plan(ins, x, k, &g) != 0)
    return DEV_WHOLE_UNSUPPORTED;
  bool fl = is_float(rt);
  if (!(fl && is_float(x->type) && is_float(k->type)) && !(is_int(rt) && is_int(x->type) && is_int(k->type)))
    return DEV_WHOLE_UNSUPPORTED;
  bool f64 = rt == HLO_F64;
  int nd = g.ns + 2;
  int64_t xs[HLO_MAX_RANK], ks[HLO_MAX_RANK];
  hlo_value_strides(x, xs);
  hlo_value_strides(k, ks);
  int64_t wvol = 1, wsz[HLO_MAX_RANK];
  for (int d = 0; d < g.ns; d++)
    wvol *= (wsz[d] = g.w[d].size);
  hlo_value *res = hlo_value_array_uninit(rt, nd, rs->dims);
  dev_tiling tl;
  dev_tiling_plan(&tl, nd, rs->dims, ctx->cfg);
  dev_stage st;
  if (!res || dev_stage_open(&st, "vmem convolution tile", rt, tl.volume) != 0) {
    hlo_value_unref(res);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  int64_t fpg = g.feat_out / g.groups, fpb = g.feat_out / g.bgroups;
  /* Each operand element converted once to what the products read (the
   * f32 or f64 value, or the integer wrapped to the result type), not once
   * per product: the same values, so the same sums. */
  conv_operand xo, ko;
  int rc = operand_of(x, rt, &xo) | operand_of(k, rt, &ko);
  if (rc != 0) {
    free(xo.p);
    free(ko.p);
    dev_stage_close(&st);
    hlo_value_unref(res);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  const int64_t xcs = xs[g.xi[nd - 1]], kcs = ks[g.ki[nd - 1]];
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(nd, n, p)) {
      int64_t o[HLO_MAX_RANK];
      for (int d = 0; d < nd; d++)
        o[d] = lo[d] + p[d];
      int64_t nb = o[g.oi[0]], f = o[g.oi[nd - 1]];
      int64_t xn = g.bgroups > 1 ? (f / fpb) * g.n_out + nb : nb, c0 = (f / fpg) * g.kin;
      float af = 0;
      double ad = 0;
      uint64_t ai = 0;
      int64_t w[HLO_MAX_RANK] = {0};
      for (int64_t q = 0; q < wvol; q++, hlo_index_next(g.ns, wsz, w)) {
        int64_t xoff = xn * xs[g.xi[0]], koff = f * ks[g.ki[0]];
        bool inside = true;
        for (int d = 0; d < g.ns && inside; d++) {
          const hlo_window_dim *wd = &g.w[d];
          int64_t pos = o[g.oi[1 + d]] * wd->stride + w[d] * wd->rhs_dilate - wd->pad_lo;
          int64_t i = pos / wd->lhs_dilate;
          inside = pos >= 0 && pos % wd->lhs_dilate == 0 && i < x->dims[g.xi[1 + d]];
          xoff += i * xs[g.xi[1 + d]];
          koff += (wd->reversal ? wd->size - 1 - w[d] : w[d]) * ks[g.ki[1 + d]];
        }
        if (!inside)
          continue;
        const int64_t xa = xoff + c0 * xcs;
        if (f64) {
          for (int64_t c = 0; c < g.kin; c++) {
            double pr = xo.d[xa + c * xcs] * ko.d[koff + c * kcs];
            ad = ad + pr;
          }
        } else if (fl) {
          for (int64_t c = 0; c < g.kin; c++) {
            float pr = xo.f[xa + c * xcs] * ko.f[koff + c * kcs];
            af = af + pr;
          }
        } else {
          for (int64_t c = 0; c < g.kin; c++)
            ai = ai + xo.u[xa + c * xcs] * ko.u[koff + c * kcs];
        }
      }
      dev_slot v;
      if (f64)
        v.f = ad;
      else if (fl)
        v.f = af;
      else
        v.i = (int64_t)hlo_int_wrap(rt, ai);
      uint8_t tmp[16];
      if (fl && !f64) { /* one rounding from the f32 accumulator to the result type */
        uint8_t f32b[4];
        memcpy(f32b, &af, 4);
        hlo_convert_array(HLO_F32, f32b, rt, tmp, 1);
      } else {
        dev_slot_to_host(rt, v, tmp, 0);
      }
      dev_stage_put(&st, l, tmp);
    }
    rc = dev_stage_end(&st, ctx->why, ctx->why_len);
    if (rc == 0)
      dev_stage_copy_out(&st, &tl, lo, n, res->data);
  }
  dev_stage_close(&st);
  free(xo.p);
  free(ko.p);
  if (rc != 0) {
    hlo_value_unref(res);
    return -1;
  }
  *out = res;
  return 0;
}
