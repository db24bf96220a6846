/* eval_scaled_dot.c — scaled-dot(lhs, rhs, lhs_scale, rhs_scale): the
 * block-scaled dot of narrow formats (MX and the like).
 *
 * Semantics: each operand is dequantized by its scale, then the two are
 * multiplied as by dot with the instruction's dimension numbers.  A scale
 * has its operand's rank (or is a scalar, one scale for everything); each
 * of its dimensions divides the operand's, and operand element i uses the
 * scale element whose index is i divided, dimension by dimension, by the
 * block size operand_dim / scale_dim.  So an f32[1024,1024] lhs with an
 * f32[1024,8] scale scales blocks of 128 along the contracting dimension.
 *
 * Numerics: operand and scale are converted to the dot's compute type for
 * the result (eval_dot.c: f32 below f64, f64 for f64) and multiplied there,
 * one rounding; the products feed the reference dot unchanged.  A scale of
 * an integer result type is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_index.h"

/* x * broadcast(scale) in type ct, or NULL after chk_fail. */
static hlo_value *dequantize(chk_eval *ev, const hlo_instr *ins, const hlo_value *x, const hlo_value *scale,
                             hlo_etype ct, const char *which) {
  if (scale->rank != 0 && scale->rank != x->rank)
    return chk_fail(ev, ins, "%s scale must be a scalar or have its operand's rank", which);
  int64_t block[HLO_MAX_RANK];
  for (int d = 0; d < scale->rank; d++) {
    if (scale->dims[d] == 0 ? x->dims[d] != 0 : x->dims[d] % scale->dims[d] != 0)
      return chk_fail(ev, ins, "%s scale dimension %d (%lld) does not divide the operand's (%lld)", which, d,
                      (long long)scale->dims[d], (long long)x->dims[d]);
    block[d] = scale->dims[d] ? x->dims[d] / scale->dims[d] : 1;
  }
  hlo_value *r = hlo_value_array_uninit(ct, x->rank, x->dims);
  if (!r)
    return chk_fail(ev, ins, "out of memory");
  int64_t idx[HLO_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->count; i++) {
    int64_t s = 0;
    for (int d = 0; d < scale->rank; d++)
      s = s * scale->dims[d] + idx[d] / block[d];
    double v = hlo_value_get_f64(x, i), f = hlo_value_get_f64(scale, s);
    if (ct == HLO_F32)
      ((float *)r->data)[i] = (float)v * (float)f;
    else
      ((double *)r->data)[i] = v * f;
    hlo_index_next(x->rank, x->dims, idx);
  }
  return r;
}

hlo_value *chk_op_scaled_dot(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 4 || ins->shape.type == HLO_TUPLE)
    return chk_fail(ev, ins, "scaled-dot takes (lhs, rhs, lhs_scale, rhs_scale) and returns an array");
  for (int k = 0; k < 4; k++)
    if (!chk_is_array(ops[k]))
      return chk_fail(ev, ins, "operand %d is not an array", k);
  hlo_etype ct = chk_dot_compute_type(ins->shape.type);
  if (ct != HLO_F32 && ct != HLO_F64)
    return chk_fail(ev, ins, "scaled-dot with a %s result is not supported by the evaluator",
                    hlo_etype_name(ins->shape.type));
  hlo_value *a = dequantize(ev, ins, ops[0], ops[2], ct, "lhs");
  hlo_value *b = a ? dequantize(ev, ins, ops[1], ops[3], ct, "rhs") : NULL;
  hlo_value *r = NULL;
  if (a && b) {
    hlo_instr dot = *ins;
    dot.op = HLO_OP_DOT;
    dot.noperands = 2;
    hlo_value *d[2] = {a, b};
    r = chk_op_dot(ev, &dot, d);
  }
  hlo_value_unref(a);
  hlo_value_unref(b);
  return r;
}
