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

/* What the loops over output elements read: the geometry, the operands as
 * the products read them, their strides and the result's number class. */
typedef struct conv_loop {
  const geom *g;
  const hlo_value *x;
  const conv_operand *xo, *ko;
  int nd;
  bool f64, fl;
  hlo_etype rt;
  int64_t xs[HLO_MAX_RANK], ks[HLO_MAX_RANK], wsz[HLO_MAX_RANK];
  int64_t wvol, fpg, fpb;
} conv_loop;

/* The input batch output element o of feature f reads, and the first input
 * feature of f's group. */
static void conv_sources(const conv_loop *lp, const int64_t *o, int64_t f, int64_t *xn, int64_t *c0) {
  const geom *g = lp->g;
  int64_t nb = o[g->oi[0]];
  *xn = g->bgroups > 1 ? (f / lp->fpb) * g->n_out + nb : nb;
  *c0 = (f / lp->fpg) * g->kin;
}

/* Where window position w of output element o reads: the element offset
 * of the input at input batch xn (before the input feature), and of the
 * kernel at output feature f (before the input feature); false when the
 * position falls in padding or a dilation hole. */
static bool window_at(const conv_loop *lp, const int64_t *o, const int64_t *w, int64_t xn, int64_t f, int64_t *xoff,
                      int64_t *koff) {
  const geom *g = lp->g;
  *xoff = xn * lp->xs[g->xi[0]], *koff = f * lp->ks[g->ki[0]];
  bool inside = true;
  for (int d = 0; d < g->ns && inside; d++) {
    const hlo_window_dim *wd = &g->w[d];
    int64_t pos = o[g->oi[1 + d]] * wd->stride + w[d] * wd->rhs_dilate - wd->pad_lo;
    int64_t i = pos / wd->lhs_dilate;
    inside = pos >= 0 && pos % wd->lhs_dilate == 0 && i < lp->x->dims[g->xi[1 + d]];
    *xoff += i * lp->xs[g->xi[1 + d]];
    *koff += (wd->reversal ? wd->size - 1 - w[d] : w[d]) * lp->ks[g->ki[1 + d]];
  }
  return inside;
}

/* Output element o with one running accumulator, in the order of the
 * header.  A float result's f32 accumulator is returned (v unset); an f64
 * or integer result's accumulator is in *v. */
static float conv_one(const conv_loop *lp, const int64_t *o, dev_slot *v) {
  const geom *g = lp->g;
  int nd = lp->nd;
  int64_t f = o[g->oi[nd - 1]], xn, c0;
  conv_sources(lp, o, f, &xn, &c0);
  const int64_t xcs = lp->xs[g->xi[nd - 1]], kcs = lp->ks[g->ki[nd - 1]];
  float af = 0;
  double ad = 0;
  uint64_t ai = 0;
  int64_t w[HLO_MAX_RANK] = {0};
  for (int64_t q = 0; q < lp->wvol; q++, hlo_index_next(g->ns, lp->wsz, w)) {
    int64_t xoff, koff;
    if (!window_at(lp, o, w, xn, f, &xoff, &koff))
      continue;
    const int64_t xa = xoff + c0 * xcs;
    if (lp->f64) {
      for (int64_t c = 0; c < g->kin; c++) {
        double pr = lp->xo->d[xa + c * xcs] * lp->ko->d[koff + c * kcs];
        ad = ad + pr;
      }
    } else if (lp->fl) {
      for (int64_t c = 0; c < g->kin; c++) {
        float pr = lp->xo->f[xa + c * xcs] * lp->ko->f[koff + c * kcs];
        af = af + pr;
      }
    } else {
      for (int64_t c = 0; c < g->kin; c++)
        ai = ai + lp->xo->u[xa + c * xcs] * lp->ko->u[koff + c * kcs];
    }
  }
  if (lp->f64)
    v->f = ad;
  else if (!lp->fl)
    v->i = (int64_t)hlo_int_wrap(lp->rt, ai);
  return af;
}

/* CONV_LANES output elements o, o + 1, ... along the output feature (the
 * output's last dimension; the kernel's output features adjacent), each in
 * its own lane with conv_one's order and arithmetic: acc = acc + x * k,
 * product and sum each rounded.  A single chain waits on every add; the
 * lanes run side by side.  The lanes' features must read the same input
 * batch and input features (one feature group): false when they do not,
 * and false when a lane ends in NaN, whose payload (when two NaNs meet) a
 * vector operation need not pick as the scalar one does — both for
 * conv_one to compute.  Otherwise no NaN arose in any lane, and IEEE
 * arithmetic on the rest is the same in a lane as in conv_one. */
#define CONV_LANES 8
static bool conv_f32_lanes(const conv_loop *lp, const int64_t *o, float *out) {
  const geom *g = lp->g;
  int nd = lp->nd;
  int64_t f = o[g->oi[nd - 1]], xn, c0, xn1, c01;
  conv_sources(lp, o, f, &xn, &c0);
  conv_sources(lp, o, f + CONV_LANES - 1, &xn1, &c01);
  if (xn1 != xn || c01 != c0)
    return false;
  const int64_t xcs = lp->xs[g->xi[nd - 1]], kcs = lp->ks[g->ki[nd - 1]];
  float acc[CONV_LANES] = {0};
  int64_t w[HLO_MAX_RANK] = {0};
  for (int64_t q = 0; q < lp->wvol; q++, hlo_index_next(g->ns, lp->wsz, w)) {
    int64_t xoff, koff;
    if (!window_at(lp, o, w, xn, f, &xoff, &koff))
      continue;
    const float *xp = lp->xo->f + xoff + c0 * xcs, *kp = lp->ko->f + koff;
    for (int64_t c = 0; c < g->kin; c++) {
      float xv = xp[c * xcs];
      const float *kc = kp + c * kcs;
      for (int j = 0; j < CONV_LANES; j++) {
        float pr = xv * kc[j];
        acc[j] = acc[j] + pr;
      }
    }
  }
  for (int j = 0; j < CONV_LANES; j++) {
    if (acc[j] != acc[j])
      return false;
    out[j] = acc[j];
  }
  return true;
}

/* Stores f32 accumulator af at offset l of the tile, rounded once to the
 * result type rt. */
static void put_f32(dev_stage *st, int64_t l, hlo_etype rt, float af) {
  uint8_t f32b[4], tmp[16];
  memcpy(f32b, &af, 4);
  hlo_convert_array(HLO_F32, f32b, rt, tmp, 1);
  dev_stage_put(st, l, tmp);
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
  conv_loop lp = {.g = &g, .x = x, .xo = &xo, .ko = &ko, .nd = nd, .f64 = f64, .fl = fl, .rt = rt,
                  .wvol = wvol, .fpg = fpg, .fpb = fpb};
  memcpy(lp.xs, xs, sizeof xs);
  memcpy(lp.ks, ks, sizeof ks);
  memcpy(lp.wsz, wsz, sizeof wsz);
  /* Output features side by side (conv_f32_lanes) when the result is
   * f32-computed, the feature is the output's last dimension, so a row of
   * the tile is a run of features, and consecutive features are adjacent
   * in the kernel. */
  bool lanes = fl && !f64 && g.oi[nd - 1] == nd - 1 && ks[g.ki[0]] == 1;
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    for (int64_t l = 0; l < cnt;) {
      int64_t o[HLO_MAX_RANK];
      for (int d = 0; d < nd; d++)
        o[d] = lo[d] + p[d];
      float lf[CONV_LANES];
      if (lanes && p[nd - 1] + CONV_LANES <= n[nd - 1] && conv_f32_lanes(&lp, o, lf)) {
        for (int q = 0; q < CONV_LANES; q++, l++, hlo_index_next(nd, n, p))
          put_f32(&st, l, rt, lf[q]);
        continue;
      }
      dev_slot v;
      float af = conv_one(&lp, o, &v);
      if (fl && !f64) {
        put_f32(&st, l, rt, af);
      } else {
        uint8_t tmp[16];
        dev_slot_to_host(rt, v, tmp, 0);
        dev_stage_put(&st, l, tmp);
      }
      l++;
      hlo_index_next(nd, n, p);
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
