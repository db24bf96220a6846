/* eval_conv.c — convolution for the reference evaluator.
 *
 * Semantics (XLA's ConvWithGeneralDimensions): dim_labels name the input's
 * batch/feature/spatial dims, the kernel's input-feature/output-feature/
 * spatial dims and the output's batch/feature/spatial dims.  For output
 * spatial position o and window element w of spatial dim d, the position in
 * the padded, base-dilated input is
 *     pos = o * stride + w * rhs_dilate - pad_lo
 * and it reads input index pos / lhs_dilate when 0 <= pos <= (in-1) *
 * lhs_dilate and pos is a multiple of lhs_dilate; otherwise it is padding
 * (or a dilation hole) and contributes nothing.  With window reversal the
 * kernel element is size-1-w.
 *   feature_group_count G: the input features split into G groups of KI
 *     (the kernel's input-feature size); output feature f belongs to group
 *     f / (F/G) and reads input features g*KI .. g*KI+KI-1.
 *   batch_group_count BG: the input batch splits into BG contiguous groups
 *     of N_in/BG; output feature f belongs to group f / (F/BG) and output
 *     batch n reads input batch bg*(N_in/BG) + n.  (XLA's HloEvaluator
 *     agrees when the output batch is 1, the case batch-grouped convolutions
 *     come from; for a larger output batch it assigns groups differently.)
 *
 * Numerics: the compute type follows the result type as for dot (f32 for
 * f32/bf16/f16/f8, f64 for f64, wrapping 64-bit integers, operands
 * converted to the result type first for integer results), with dot's own
 * helpers (chk_dot_compute_type, chk_dot_operand).  Every output
 * element is acc = 0, then for the window elements in row-major order
 * (spatial dim 0 slowest) and, within each, the group's input features in
 * ascending order: acc = acc + x * k, product and sum each rounded (no FMA);
 * the result is rounded once to the result type.  Threads split output
 * elements, so the result does not depend on their number.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

/* Dot products of the feature runs at the listed (input, kernel) offsets. */
#define DEF_ACCUM(NAME, C)                                                              \
  static C NAME(const C *restrict x, const C *restrict k, const int64_t *xo, const int64_t *ko, \
                int64_t npos, int64_t ki) {                                            \
    C acc = 0;                                                                         \
    for (int64_t p = 0; p < npos; p++) {                                               \
      const C *restrict xp = x + xo[p], *restrict kp = k + ko[p];                      \
      for (int64_t c = 0; c < ki; c++)                                                 \
        acc = acc + xp[c] * kp[c];                                                     \
    }                                                                                  \
    return acc;                                                                        \
  }
DEF_ACCUM(accum_f32, float)
DEF_ACCUM(accum_f64, double)
DEF_ACCUM(accum_u64, uint64_t)

typedef struct conv_geom {
  int ns;                           /* spatial dims */
  int64_t n_in, c_in, n_out, f_out, ki;
  int64_t s_in[HLO_MAX_RANK], ks[HLO_MAX_RANK], os[HLO_MAX_RANK];
  int64_t g, bg;                    /* feature and batch group counts */
  hlo_window_dim w[HLO_MAX_RANK];
} conv_geom;

hlo_value *chk_op_convolution(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op != HLO_OP_CONVOLUTION || ins->noperands != 2)
    return chk_fail(ev, ins, "expects a convolution with two operands");
  const hlo_value *x = ops[0], *k = ops[1];
  if (x->type == HLO_TUPLE || k->type == HLO_TUPLE)
    return chk_fail(ev, ins, "operands must be arrays");
  if (!(ins->attrs.has & HLO_A_DIM_LABELS))
    return chk_fail(ev, ins, "no dim_labels");
  const hlo_conv_dnums *dn = &ins->attrs.conv;
  conv_geom g = {0};
  g.ns = dn->input_spatial.n;
  if (dn->kernel_spatial.n != g.ns || dn->output_spatial.n != g.ns || x->rank != g.ns + 2 ||
      k->rank != g.ns + 2 || g.ns > HLO_MAX_RANK - 2)
    return chk_fail(ev, ins, "dim_labels do not match the operand ranks");
  hlo_value *out = chk_result(ev, ins);
  if (!out)
    return NULL;
  const char *bad = NULL;
  if (out->rank != g.ns + 2)
    bad = "dim_labels do not match the result rank";
  /* every dimension number in range (dim_labels decoding guarantees distinct) */
  int64_t xi[HLO_MAX_RANK], kid[HLO_MAX_RANK], oi[HLO_MAX_RANK];
  if (!bad) {
    xi[0] = dn->input_batch, kid[0] = dn->kernel_output_feature, oi[0] = dn->output_batch;
    for (int d = 0; d < g.ns; d++)
      xi[1 + d] = dn->input_spatial.v[d], kid[1 + d] = dn->kernel_spatial.v[d],
      oi[1 + d] = dn->output_spatial.v[d];
    xi[g.ns + 1] = dn->input_feature, kid[g.ns + 1] = dn->kernel_input_feature,
    oi[g.ns + 1] = dn->output_feature;
    for (int d = 0; d < g.ns + 2; d++)
      if (xi[d] < 0 || xi[d] >= x->rank || kid[d] < 0 || kid[d] >= k->rank || oi[d] < 0 || oi[d] >= out->rank)
        bad = "dim_labels name a dimension out of range";
  }
  if (!bad) {
    g.n_in = x->dims[xi[0]], g.c_in = x->dims[xi[g.ns + 1]];
    g.f_out = k->dims[kid[0]], g.ki = k->dims[kid[g.ns + 1]];
    g.n_out = out->dims[oi[0]];
    g.g = ins->attrs.has & HLO_A_FEATURE_GROUP_COUNT ? ins->attrs.feature_group_count : 1;
    g.bg = ins->attrs.has & HLO_A_BATCH_GROUP_COUNT ? ins->attrs.batch_group_count : 1;
    for (int d = 0; d < g.ns; d++) {
      g.s_in[d] = x->dims[xi[1 + d]], g.ks[d] = k->dims[kid[1 + d]], g.os[d] = out->dims[oi[1 + d]];
      if (ins->attrs.has & HLO_A_WINDOW && ins->attrs.window.rank == g.ns)
        g.w[d] = ins->attrs.window.dims[d];
      else
        g.w[d] = (hlo_window_dim){.size = g.ks[d], .stride = 1, .lhs_dilate = 1, .rhs_dilate = 1};
      if (g.w[d].size != g.ks[d])
        bad = "window size differs from the kernel's spatial size";
      if (g.w[d].stride < 1 || g.w[d].lhs_dilate < 1 || g.w[d].rhs_dilate < 1)
        bad = "window stride and dilations must be >= 1";
    }
    if ((ins->attrs.has & HLO_A_WINDOW) && ins->attrs.window.rank != g.ns)
      bad = "window rank differs from the number of spatial dimensions";
    if (g.g < 1 || g.bg < 1 || (g.g > 1 && g.bg > 1))
      bad = "bad feature_group_count / batch_group_count";
    else if (g.c_in != g.ki * g.g)
      bad = "input features != kernel input features * feature_group_count";
    else if (g.f_out % g.g != 0 || g.f_out % g.bg != 0)
      bad = "kernel output features not divisible by the group count";
    else if (g.n_in % g.bg != 0 || g.n_out != g.n_in / g.bg)
      bad = "output batch != input batch / batch_group_count";
    else if (out->dims[oi[g.ns + 1]] != g.f_out)
      bad = "output features != kernel output features";
  }
  hlo_etype ct = chk_dot_compute_type(out->type);
  if (!bad && (ct == HLO_INVALID || hlo_etype_class(x->type) == HLO_CLASS_COMPLEX ||
               hlo_etype_class(k->type) == HLO_CLASS_COMPLEX || hlo_etype_host_size(x->type) == 0 ||
               hlo_etype_host_size(k->type) == 0))
    bad = "element type not supported";
  if (bad) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "%s", bad);
  }

  size_t esz = hlo_etype_host_size(ct);
  int nd = g.ns + 2;
  void *xown = NULL, *kown = NULL;
  const void *xc = chk_dot_operand(x, out->type, ct, &xown);
  const void *kc = chk_dot_operand(k, out->type, ct, &kown);
  int64_t nx = x->count, nk = k->count, no = out->count;
  void *xp = malloc((size_t)(nx > 0 ? nx : 1) * esz), *kp = malloc((size_t)(nk > 0 ? nk : 1) * esz);
  void *op = malloc((size_t)(no > 0 ? no : 1) * esz);
  int64_t *tab[HLO_MAX_RANK] = {0};
  int rc = xc && kc && xp && kp && op ? 0 : -1;
  /* canonical layouts: input [N][S...][C], kernel [F][KS...][KI], output [N][OS...][F] */
  if (rc == 0) {
    int64_t st[HLO_MAX_RANK], size[HLO_MAX_RANK], sst[HLO_MAX_RANK];
    hlo_value_strides(x, st);
    for (int d = 0; d < nd; d++)
      size[d] = x->dims[xi[d]], sst[d] = st[xi[d]];
    chk_permute_copy(xp, xc, esz, nd, size, sst);
    hlo_value_strides(k, st);
    for (int d = 0; d < nd; d++)
      size[d] = k->dims[kid[d]], sst[d] = st[kid[d]];
    chk_permute_copy(kp, kc, esz, nd, size, sst);
  }
  /* per spatial dim: input index read by (output o, window w), -1 for padding */
  for (int d = 0; rc == 0 && d < g.ns; d++) {
    const hlo_window_dim *w = &g.w[d];
    tab[d] = malloc(sizeof(int64_t) * (size_t)(g.os[d] * w->size > 0 ? g.os[d] * w->size : 1));
    if (!tab[d]) {
      rc = -1;
      break;
    }
    int64_t extent = g.s_in[d] > 0 ? (g.s_in[d] - 1) * w->lhs_dilate + 1 : 0;
    for (int64_t o = 0; o < g.os[d]; o++)
      for (int64_t j = 0; j < w->size; j++) {
        int64_t pos = o * w->stride + j * w->rhs_dilate - w->pad_lo;
        tab[d][o * w->size + j] =
            pos >= 0 && pos < extent && pos % w->lhs_dilate == 0 ? pos / w->lhs_dilate : -1;
      }
  }
  int64_t wcount = 1, ospat = 1, sin_prod = 1, ks_prod = 1;
  for (int d = 0; d < g.ns; d++)
    wcount *= g.ks[d], ospat *= g.os[d], sin_prod *= g.s_in[d];
  ks_prod = wcount;
  if (rc == 0) {
    int64_t fpg = g.f_out / g.g, fpb = g.f_out / g.bg, nper = g.n_in / g.bg;
    int64_t total = g.n_out * ospat;
    /* Output positions in slices of about CHK_SLICE_WORK multiply-adds
     * (at least 16 positions, for the threads), the deadline asked between
     * them; each position is computed alone, so slicing changes no bit. */
    int64_t pos_work = g.f_out * wcount * g.ki, step = chk_slice_rows(pos_work);
    if (step < 16)
      step = 16;
    for (int64_t t0 = 0; rc == 0 && t0 < total; t0 += step) {
      int64_t t1 = total - t0 < step ? total : t0 + step;
#pragma omp parallel if ((t1 - t0) * pos_work >= (1 << 16)) reduction(| : rc)
      {
        int64_t *xo = malloc(sizeof(int64_t) * (size_t)(wcount > 0 ? wcount : 1));
        int64_t *ko = malloc(sizeof(int64_t) * (size_t)(wcount > 0 ? wcount : 1));
        int64_t *sp = malloc(sizeof(int64_t) * (size_t)(wcount > 0 ? wcount : 1)); /* input spatial linear */
        if (!xo || !ko || !sp)
          rc = -1;
#pragma omp for schedule(dynamic, 16)
        for (int64_t t = t0; t < t1; t++) {
          if (!xo || !ko || !sp)
            continue;
          int64_t n = t / (ospat > 0 ? ospat : 1), r = t % (ospat > 0 ? ospat : 1);
          int64_t opos[HLO_MAX_RANK];
          for (int d = g.ns - 1; d >= 0; d--)
            opos[d] = r % g.os[d], r /= g.os[d];
          /* the window positions that hit the input, in row-major order */
          int64_t npos = 0, widx[HLO_MAX_RANK] = {0};
          for (int64_t wl = 0; wl < wcount; wl++) {
            int64_t s_lin = 0, k_lin = 0;
            bool hit = true;
            for (int d = 0; d < g.ns; d++) {
              int64_t iv = tab[d][opos[d] * g.w[d].size + widx[d]];
              if (iv < 0) {
                hit = false;
                break;
              }
              int64_t kidx = g.w[d].reversal ? g.ks[d] - 1 - widx[d] : widx[d];
              s_lin = s_lin * g.s_in[d] + iv;
              k_lin = k_lin * g.ks[d] + kidx;
            }
            if (hit) {
              sp[npos] = s_lin;
              ko[npos] = k_lin * g.ki;
              npos++;
            }
            hlo_index_next(g.ns, g.ks, widx);
          }
          for (int64_t f = 0; f < g.f_out; f++) {
            int64_t in_n = (f / fpb) * nper + n, c0 = (f / fpg) * g.ki;
            int64_t xbase = in_n * sin_prod;
            for (int64_t p = 0; p < npos; p++)
              xo[p] = (xbase + sp[p]) * g.c_in + c0;
            int64_t kbase = f * ks_prod * g.ki, oidx = t * g.f_out + f;
            /* ko[] holds offsets within one output feature's kernel */
            if (ct == HLO_F32)
              ((float *)op)[oidx] = accum_f32(xp, (const float *)kp + kbase, xo, ko, npos, g.ki);
            else if (ct == HLO_F64)
              ((double *)op)[oidx] = accum_f64(xp, (const double *)kp + kbase, xo, ko, npos, g.ki);
            else
              ((uint64_t *)op)[oidx] = accum_u64(xp, (const uint64_t *)kp + kbase, xo, ko, npos, g.ki);
          }
        }
        free(xo);
        free(ko);
        free(sp);
      }
      if (rc == 0 && chk_time_up(ev, ins))
        rc = -1;
    }
  }
  if (rc == 0) {
    /* canonical output -> the result's dimension order */
    int64_t cst[HLO_MAX_RANK], sst[HLO_MAX_RANK], s = 1;
    for (int d = nd - 1; d >= 0; d--) {
      cst[d] = s;
      s *= out->dims[oi[d]];
    }
    for (int d = 0; d < nd; d++)
      sst[oi[d]] = cst[d];
    void *cb = out->type == ct ? out->data : malloc((size_t)(no > 0 ? no : 1) * esz);
    if (!cb)
      rc = -1;
    else {
      chk_permute_copy(cb, op, esz, nd, out->dims, sst);
      if (cb != out->data) {
        rc = hlo_convert_array(ct, cb, out->type, out->data, (size_t)no);
        free(cb);
      }
    }
  }
  for (int d = 0; d < g.ns; d++)
    free(tab[d]);
  free(xown);
  free(kown);
  free(xp);
  free(kp);
  free(op);
  if (rc != 0) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "out of memory");
  }
  return out;
}
