/* eval_dynamic.c — dynamic dimensions: set-dimension-size and
 * get-dimension-size.
 *
 * The evaluator keeps a dynamic dimension padded to its bound (`<=N` is an
 * array of N).  set-dimension-size(x, size), dimensions={d}, returns x with
 * the elements at index >= size along d set to zero: XLA leaves them
 * undefined, and zero is the padding that keeps a sum or a dot over the
 * dimension what it would be over the first size elements.  Reductions with
 * another reducer over such a dimension are refused (eval.c), since their
 * padding would need that reducer's identity.  XLA leaves a size outside
 * [0, bound] undefined; here it is clamped into that range, so that any
 * input (the naive and edge profiles draw negative integers) evaluates.
 *
 * get-dimension-size returns the size of a static dimension.  The runtime
 * size of a dynamic one is not tracked through the ops that carry it, so
 * asking for it is refused rather than answered with the bound.
 */
#include <string.h>

#include "eval_internal.h"

static int one_dimension(const hlo_instr *ins, int rank) {
  if (ins->attrs.dimensions.n != 1)
    return -1;
  int64_t d = ins->attrs.dimensions.v[0];
  return d >= 0 && d < rank ? (int)d : -1;
}

static hlo_value *set_dimension_size(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *x = ops[0], *sz = ops[1];
  int d = one_dimension(ins, x->rank);
  if (d < 0)
    return chk_fail(ev, ins, "dimensions must name one dimension of the operand");
  if (!chk_is_array(sz) || sz->count != 1 || hlo_etype_class(sz->type) != HLO_CLASS_SINT)
    return chk_fail(ev, ins, "the size must be a signed integer scalar");
  int64_t size = hlo_value_get_i64(sz, 0);
  size = size < 0 ? 0 : size > x->dims[d] ? x->dims[d] : size;
  hlo_value *out = chk_result_uninit(ev, ins);
  if (!out)
    return NULL;
  if (out->type != x->type || out->count != x->count)
    return chk_fail_unref(ev, ins, out, "the result must have the operand's type and bounds");
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < x->rank; k++) {
    if (k < d)
      outer *= x->dims[k];
    if (k > d)
      inner *= x->dims[k];
  }
  size_t kept = (size_t)(size * inner) * x->elem_size, row = (size_t)(x->dims[d] * inner) * x->elem_size;
  for (int64_t o = 0; o < outer; o++) {
    memcpy((char *)out->data + (size_t)o * row, (const char *)x->data + (size_t)o * row, kept);
    memset((char *)out->data + (size_t)o * row + kept, 0, row - kept);
  }
  return out;
}

static hlo_value *get_dimension_size(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_shape *s = &ins->operands[0]->shape;
  int d = one_dimension(ins, s->rank);
  if (d < 0)
    return chk_fail(ev, ins, "dimensions must name one dimension of the operand");
  if (s->dynamic && s->dynamic[d] != HLO_DIM_STATIC)
    return chk_fail(ev, ins, "the runtime size of dynamic dimension %d is not tracked by the evaluator", d);
  (void)ops;
  hlo_value *out = chk_result(ev, ins);
  if (out)
    hlo_value_set_i64(out, 0, s->dims[d]);
  return out;
}

hlo_value *chk_op_dynamic(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op == HLO_OP_SET_DIMENSION_SIZE && ins->noperands == 2 && chk_is_array(ops[0]))
    return set_dimension_size(ev, ins, ops);
  if (ins->op == HLO_OP_GET_DIMENSION_SIZE && ins->noperands == 1 && chk_is_array(ops[0]))
    return get_dimension_size(ev, ins, ops);
  return chk_fail(ev, ins, "set-dimension-size takes (array, size), get-dimension-size one array");
}
