/* eval_select_scatter.c — select-and-scatter(operand, source, init), the
 * gradient of a max-pool.
 *
 * Semantics (XLA's operation semantics):
 *   - The window (size, stride, padding, dilations) slides over the operand
 *     as in reduce-window; the source has one element per window position.
 *   - In each window the select computation picks one operand element:
 *     the window's valid elements are visited in row-major order of the
 *     window, the first is the current pick, and each later element e
 *     replaces the pick p when select(p, e) is false.  Padding and the holes
 *     of a base dilation are not elements: a window holding none of the
 *     operand's elements selects nothing and its source value is dropped.
 *   - The result has the operand's shape, every element init; then, window
 *     by window in row-major order of the source, the picked position
 *     becomes scatter(result[pick], source[window]).
 * select and scatter are scalar computations named by raw attributes
 * (`select=%f, scatter=%g`); each is called per element through chk_call,
 * which is slow but exact for any computation.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_index.h"

/* A rank-0 value holding element i of v, bit for bit. */
static hlo_value *element(const hlo_value *v, int64_t i) {
  hlo_value *s = hlo_value_array_uninit(v->type, 0, NULL);
  if (s)
    memcpy(s->data, (const char *)v->data + (size_t)i * v->elem_size, v->elem_size);
  return s;
}

/* Calls a two-parameter scalar computation on elements a[i] and b[j]. */
static hlo_value *call2(chk_eval *ev, const hlo_instr *ins, const hlo_computation *c, const hlo_value *a,
                        int64_t i, const hlo_value *b, int64_t j) {
  hlo_value *args[2] = {element(a, i), element(b, j)};
  hlo_value *r = NULL;
  if (!args[0] || !args[1])
    chk_fail(ev, ins, "out of memory");
  else
    r = chk_call(ev, ins, c, 2, args);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  return r;
}

/* The operand's flat index at window position w of source position s, or
 * -1 when it falls in padding or a dilation hole. */
static int64_t operand_index(const hlo_value *x, const hlo_window *win, const int64_t *s, const int64_t *w) {
  int64_t flat = 0;
  for (int d = 0; d < x->rank; d++) {
    const hlo_window_dim *wd = &win->dims[d];
    int64_t p = s[d] * wd->stride + w[d] * wd->rhs_dilate - wd->pad_lo;
    if (p < 0 || p % wd->lhs_dilate != 0)
      return -1;
    p /= wd->lhs_dilate;
    if (p >= x->dims[d])
      return -1;
    flat = flat * x->dims[d] + p;
  }
  return flat;
}

hlo_value *chk_op_select_and_scatter(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 3)
    return chk_fail(ev, ins, "select-and-scatter takes (operand, source, init_value)");
  const hlo_value *x = ops[0], *src = ops[1], *init = ops[2];
  if (!chk_is_array(x) || !chk_is_array(src) || !chk_is_array(init) || init->rank != 0 ||
      src->type != x->type || init->type != x->type)
    return chk_fail(ev, ins, "operand, source and a scalar init_value of one element type expected");
  const hlo_computation *sel = hlo_instr_named_computation(ev->m, ins, "select");
  const hlo_computation *sct = hlo_instr_named_computation(ev->m, ins, "scatter");
  if (!sel || !sct || sel->nparams != 2 || sct->nparams != 2)
    return chk_fail(ev, ins, "select and scatter must name computations of two parameters");
  const hlo_window *win = &ins->attrs.window;
  int rank = x->rank;
  if (win->rank != rank || src->rank != rank)
    return chk_fail(ev, ins, "window, operand and source must have the same rank");
  int64_t wdims[HLO_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    const hlo_window_dim *w = &win->dims[d];
    if (w->size < 1 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1)
      return chk_fail(ev, ins, "window dimension %d: size, stride and dilations must be >= 1", d);
    /* The number of window positions reduce-window would give. */
    int64_t span = (x->dims[d] - 1) * w->lhs_dilate + 1 + w->pad_lo + w->pad_hi;
    int64_t extent = (w->size - 1) * w->rhs_dilate + 1;
    int64_t positions = span >= extent ? (span - extent) / w->stride + 1 : 0;
    if (x->dims[d] == 0)
      positions = 0;
    if (src->dims[d] != positions)
      return chk_fail(ev, ins, "source dimension %d is %lld, the window has %lld positions there", d,
                      (long long)src->dims[d], (long long)positions);
    wdims[d] = w->size;
  }
  hlo_value *out = chk_result_uninit(ev, ins);
  if (!out)
    return NULL;
  if (out->type != x->type || out->count != x->count)
    return chk_fail_unref(ev, ins, out, "the result must have the operand's shape");
  for (int64_t i = 0; i < out->count; i++)
    memcpy((char *)out->data + (size_t)i * out->elem_size, init->data, out->elem_size);

  int64_t s[HLO_MAX_RANK] = {0};
  for (int64_t si = 0; si < src->count; si++) {
    if (chk_tick(ev, ins, 1)) {
      hlo_value_unref(out);
      return NULL;
    }
    int64_t w[HLO_MAX_RANK] = {0}, pick = -1;
    do {
      int64_t e = operand_index(x, win, s, w);
      if (e < 0)
        continue;
      if (pick < 0) {
        pick = e;
        continue;
      }
      hlo_value *keep = call2(ev, ins, sel, x, pick, x, e);
      if (!keep) {
        hlo_value_unref(out);
        return NULL;
      }
      bool k = chk_is_array(keep) && keep->count == 1 && hlo_value_get_i64(keep, 0) != 0;
      hlo_value_unref(keep);
      if (!k)
        pick = e;
    } while (hlo_index_next(rank, wdims, w));
    if (pick >= 0) {
      hlo_value *r = call2(ev, ins, sct, out, pick, src, si);
      if (!r) {
        hlo_value_unref(out);
        return NULL;
      }
      if (!chk_is_array(r) || r->type != out->type || r->count != 1) {
        hlo_value_unref(r);
        return chk_fail_unref(ev, ins, out, "scatter must return a scalar of the operand's type");
      }
      memcpy((char *)out->data + (size_t)pick * out->elem_size, r->data, out->elem_size);
      hlo_value_unref(r);
    }
    hlo_index_next(rank, src->dims, s);
  }
  return out;
}
