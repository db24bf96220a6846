/* eval_topk.c — the k largest (or smallest) elements of each row of the
 * last dimension: the topk op, and the __gpu$TopK custom-call
 * (eval_custom.c).
 *
 * Order: descending for largest (ascending for smallest), ties in index
 * order, so the result is one fixed permutation whatever sort runs it.  NaN
 * ranks above every number for largest (below for smallest), as a total
 * order puts a positive NaN above +inf.  Values are copied bit for bit.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

/* A row element's sort key: class 0 (NaN for largest) before class 1
 * (numbers, larger key first) before class 2 (NaN for smallest). */
typedef struct ranked {
  int cls;
  double key;
  int64_t i;
} ranked;

static int by_rank(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->cls != b->cls)
    return a->cls < b->cls ? -1 : 1;
  if (a->cls == 1 && a->key != b->key)
    return a->key > b->key ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

hlo_value *chk_topk(chk_eval *ev, const hlo_instr *ins, const hlo_value *x, bool largest) {
  const hlo_shape *s = &ins->shape;
  if (!chk_is_array(x) || x->rank < 1 || s->type != HLO_TUPLE || s->ntuple != 2 ||
      s->elems[0].type != x->type || s->elems[0].rank != x->rank || s->elems[1].type != HLO_S32 ||
      s->elems[1].rank != x->rank)
    return chk_fail(ev, ins, "top-k takes an array and returns (values, s32 indices) of its rank");
  for (int d = 0; d + 1 < x->rank; d++)
    if (s->elems[0].dims[d] != x->dims[d] || s->elems[1].dims[d] != x->dims[d])
      return chk_fail(ev, ins, "top-k keeps every dimension but the last; dimension %d differs", d);
  int64_t n = x->dims[x->rank - 1], k = s->elems[0].dims[x->rank - 1];
  if (k > n || s->elems[1].dims[x->rank - 1] != k)
    return chk_fail(ev, ins, "k = %lld exceeds the row length %lld", (long long)k, (long long)n);
  hlo_value *vals = hlo_value_from_shape(&s->elems[0]), *idx = hlo_value_from_shape(&s->elems[1]);
  ranked *row = malloc(sizeof *row * (size_t)(n ? n : 1));
  if (!vals || !idx || !row) {
    hlo_value_unref(vals);
    hlo_value_unref(idx);
    free(row);
    return chk_fail(ev, ins, "out of memory");
  }
  int64_t rows = n ? x->count / n : 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t j = 0; j < n; j++) {
      double v = hlo_value_get_f64(x, r * n + j);
      if (v != v)
        row[j] = (ranked){largest ? 0 : 2, 0, j};
      else
        row[j] = (ranked){1, largest ? v : -v, j};
    }
    qsort(row, (size_t)n, sizeof *row, by_rank);
    for (int64_t j = 0; j < k; j++) {
      /* Copy the element's own bits: no float round trip. */
      memcpy((char *)vals->data + (size_t)(r * k + j) * vals->elem_size,
             (const char *)x->data + (size_t)(r * n + row[j].i) * x->elem_size, x->elem_size);
      hlo_value_set_i64(idx, r * k + j, row[j].i);
    }
  }
  free(row);
  hlo_value *e[2] = {vals, idx};
  hlo_value *t = hlo_value_tuple(2, e);
  if (!t) {
    hlo_value_unref(vals);
    hlo_value_unref(idx);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}


hlo_value *chk_op_topk(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 1)
    return chk_fail(ev, ins, "topk takes one operand");
  bool largest = true;
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "largest") == 0 && ins->raw[i].value)
      largest = strcmp(ins->raw[i].value, "false") != 0;
  return chk_topk(ev, ins, ops[0], largest);
}
