/* eval_triangular_solve.c — triangular-solve, as XLA's operation semantics
 * define it.
 *
 * triangular-solve(a: [..., M, M], b), left_side, lower, unit_diagonal,
 * transpose_a (NO_TRANSPOSE, TRANSPOSE or ADJOINT): solves op(a) x = b
 * (left_side=true, b and x [..., M, K]) or x op(a) = b (left_side=false,
 * b and x [..., K, M]), op(a) being a or its transpose (the adjoint is the
 * transpose for the real types supported here).  Only the triangle lower
 * names is read (the other may hold anything, as in the QR-based inverse
 * XLA emits); with unit_diagonal the diagonal is taken as ones and not
 * read.  Absent attributes are false and NO_TRANSPOSE.
 *
 * Each right-hand side is one system T y = c with T = op(a) (left side) or
 * op(a)^T (right side, from x op(a) = b transposed), solved by forward or
 * back substitution in double and rounded once.  A zero pivot gives the
 * infinities and NaNs the division gives.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

static const char *raw_value(const hlo_instr *ins, const char *name) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, name) == 0)
      return ins->raw[i].value ? ins->raw[i].value : "";
  return NULL;
}

/* A boolean attribute: absent is false; NULL *ok when malformed. */
static bool raw_flag(const hlo_instr *ins, const char *name, bool *ok) {
  const char *v = raw_value(ins, name);
  if (!v)
    return false;
  if (strcmp(v, "true") == 0)
    return true;
  if (strcmp(v, "false") != 0)
    *ok = false;
  return false;
}

hlo_value *chk_op_triangular_solve(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0], *b = ops[1];
  bool ok = true;
  bool left = raw_flag(ins, "left_side", &ok), lower = raw_flag(ins, "lower", &ok);
  bool unit = raw_flag(ins, "unit_diagonal", &ok);
  const char *tr = raw_value(ins, "transpose_a");
  bool transpose = tr && (strcmp(tr, "TRANSPOSE") == 0 || strcmp(tr, "ADJOINT") == 0);
  if (!ok || (tr && !transpose && strcmp(tr, "NO_TRANSPOSE") != 0))
    return chk_fail(ev, ins, "left_side, lower and unit_diagonal take true or false, transpose_a "
                             "NO_TRANSPOSE, TRANSPOSE or ADJOINT");
  if (ins->noperands != 2 || !chk_is_array(a) || !chk_is_array(b) || hlo_etype_class(a->type) != HLO_CLASS_FLOAT ||
      b->type != a->type || a->rank < 2 || b->rank != a->rank)
    return chk_fail(ev, ins, "triangular-solve takes two real float arrays of the same type and rank >= 2");
  int r = a->rank;
  int64_t m = a->dims[r - 1];
  bool shapes = a->dims[r - 2] == m && b->dims[left ? r - 2 : r - 1] == m;
  for (int d = 0; shapes && d < r - 2; d++)
    shapes = a->dims[d] == b->dims[d];
  if (!shapes)
    return chk_fail(ev, ins, "a must be [..., M, M] and b [..., M, K] (left_side) or [..., K, M]");
  int64_t k = b->dims[left ? r - 1 : r - 2];
  hlo_value *x = chk_result_uninit(ev, ins);
  if (!x)
    return NULL;
  if (!hlo_value_matches(x, &ins->shape) || x->count != b->count)
    return chk_fail_unref(ev, ins, x, "the result must have b's shape");
  /* T(i, j) = a[i][j], or a[j][i] when transposed once (op or right side). */
  bool flip = transpose != !left;
  bool t_lower = lower != flip;
  double *t = malloc(sizeof *t * (size_t)(m * m + m + 1));
  if (!t)
    return chk_fail_unref(ev, ins, x, "out of memory");
  double *y = t + m * m;
  int64_t batches = m > 0 && k > 0 ? b->count / (m * k) : 0;
  for (int64_t bt = 0; bt < batches; bt++) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < m; j++)
        t[i * m + j] = hlo_value_get_f64(a, bt * m * m + (flip ? j * m + i : i * m + j));
    for (int64_t c = 0; c < k; c++) {
      /* Right-hand side c: column c of b (left side) or row c. */
      int64_t base = bt * m * k, step = left ? k : 1, off = left ? c : c * m;
      for (int64_t i = 0; i < m; i++)
        y[i] = hlo_value_get_f64(b, base + off + i * step);
      for (int64_t s = 0; s < m; s++) {
        int64_t i = t_lower ? s : m - 1 - s;
        double v = y[i];
        if (t_lower)
          for (int64_t j = 0; j < i; j++)
            v -= t[i * m + j] * y[j];
        else
          for (int64_t j = i + 1; j < m; j++)
            v -= t[i * m + j] * y[j];
        y[i] = unit ? v : v / t[i * m + i];
      }
      for (int64_t i = 0; i < m; i++)
        hlo_value_set_f64(x, base + off + i * step, y[i]);
    }
  }
  free(t);
  return x;
}
