/* eval_partial_reduce.c — the PartialReduce custom-call: the first stage of
 * XLA's approximate top-k (ApproxTopK as TPUs lower it), followed in the
 * module by an exact sort and a slice to k.
 *
 * custom-call(x_1..x_n, init_1..init_n), called_computations={cmp},
 * backend_config={"reduction_dim": d, "top_k": k, "recall_target": r,
 * "log2_reduction": l, ...}: returns n arrays shaped like the x's but with
 * m <= len elements along d, which hold (a superset of, with the expected
 * recall r) the k elements of each line along d that cmp ranks first.
 * cmp takes interleaved (left, right) scalars of the n operands, as sort's
 * comparator, and says whether left goes first.
 *
 * Which elements besides the top k a device keeps depends on how it bins
 * the line, which XLA does not define: the op is approximate on purpose.
 * The reference keeps the m elements cmp ranks first, in rank order (ties
 * in index order): the exact result, which every recall target admits and
 * which is what ApproxTopK gives on CPU and GPU, where it falls back to an
 * exact sort-based top-k.  The module's top k then is exactly the top k.
 * A device that bins may legitimately differ below the k-th element, and
 * in the top k itself by up to the recall the module asks for.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_attr.h"
#include "eval_custom.h"
#include "eval_internal.h"

/* The first m elements along dimension d of v, a new value. */
static hlo_value *take_front(const hlo_value *v, int d, int64_t m) {
  int64_t dims[HLO_MAX_RANK];
  memcpy(dims, v->dims, sizeof(int64_t) * (size_t)v->rank);
  dims[d] = m;
  hlo_value *r = hlo_value_array_uninit(v->type, v->rank, dims);
  if (!r)
    return NULL;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; k++)
    outer *= v->dims[k];
  for (int k = d + 1; k < v->rank; k++)
    inner *= v->dims[k];
  size_t row = (size_t)(m * inner) * v->elem_size, src_row = (size_t)(v->dims[d] * inner) * v->elem_size;
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)r->data + (size_t)o * row, (const char *)v->data + (size_t)o * src_row, row);
  return r;
}

hlo_value *chk_custom_partial_reduce(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  int n = ins->noperands / 2;
  if (n < 1 || ins->noperands != 2 * n)
    return chk_fail(ev, ins, "PartialReduce takes n arrays and their n initial values");
  const hlo_computation *cmp = chk_custom_call_named(ev->m, ins);
  if (!cmp || cmp->nparams != 2 * n)
    return chk_fail(ev, ins, "PartialReduce needs a comparator of %d parameters in called_computations", 2 * n);
  char *cfg = chk_raw_attr(ins, "backend_config");
  double rd = -1;
  bool ok = cfg && chk_json_value(cfg, "reduction_dim") && chk_json_number(cfg, "reduction_dim", -1, &rd);
  free(cfg);
  const hlo_value *x0 = ops[0];
  if (!ok || !chk_is_array(x0) || rd < 0 || rd >= x0->rank || rd != (int)rd)
    return chk_fail(ev, ins, "PartialReduce's backend_config has no reduction_dim within the operands' rank");
  int d = (int)rd;
  const hlo_shape *rs = ins->shape.type == HLO_TUPLE ? ins->shape.elems : &ins->shape;
  if ((ins->shape.type == HLO_TUPLE ? ins->shape.ntuple : 1) != n)
    return chk_fail(ev, ins, "PartialReduce of %d arrays returns %d arrays", n, n);
  int64_t m = rs[0].type == HLO_TUPLE || rs[0].rank != x0->rank ? -1 : rs[0].dims[d];
  for (int k = 0; k < n; k++) {
    bool same = rs[k].type == ops[k]->type && rs[k].rank == x0->rank && rs[k].dims[d] == m;
    for (int j = 0; same && j < x0->rank; j++)
      same = j == d || rs[k].dims[j] == x0->dims[j];
    if (!same || m < 0 || m > x0->dims[d])
      return chk_fail(ev, ins, "PartialReduce's result %d must be operand %d with at most %lld elements along "
                      "dimension %d", k, k, (long long)x0->dims[d], d);
  }

  /* Sort every line along d by the comparator (stably), keep the front. */
  hlo_shape el[64];
  if (n > 64)
    return chk_fail(ev, ins, "more than 64 operands");
  for (int k = 0; k < n; k++)
    el[k] = ins->operands[k]->shape;
  hlo_instr srt = *ins;
  srt.op = HLO_OP_SORT;
  srt.noperands = n;
  srt.attrs.dimensions = (hlo_ints){1, (int64_t[]){d}};
  srt.attrs.calls.to_apply = (hlo_computation *)cmp; /* read only, by the sort */
  if (n == 1)
    srt.shape = el[0];
  else
    srt.shape = (hlo_shape){.type = HLO_TUPLE, .ntuple = n, .elems = el};
  hlo_value *sorted = chk_op_sort(ev, &srt, ops);
  if (!sorted)
    return NULL;
  hlo_value *parts[64] = {0};
  for (int k = 0; k < n; k++)
    if (!(parts[k] = take_front(n == 1 ? sorted : sorted->elems[k], d, m))) {
      for (int j = 0; j < k; j++)
        hlo_value_unref(parts[j]);
      return chk_fail_unref(ev, ins, sorted, "out of memory");
    }
  hlo_value_unref(sorted);
  if (ins->shape.type != HLO_TUPLE)
    return parts[0];
  hlo_value *t = hlo_value_tuple(n, parts);
  if (!t) {
    for (int k = 0; k < n; k++)
      hlo_value_unref(parts[k]);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}
