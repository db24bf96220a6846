/* eval_tridiagonal.c — xla_builder.tridiagonal.TridiagonalSolver, the
 * composite custom-call JAX emits for lax.linalg.tridiagonal_solve with no
 * decomposition attached.
 *
 * Operands (lower, main, upper, rhs) as XLA's TridiagonalSolver defines
 * them: the three diagonals have shape [..., 1, M], rhs and the result
 * [..., K, M] (K right-hand sides, each a row of M unknowns: the system is
 * along the last dimension).  lower[..., 0] and upper[..., M-1] lie outside
 * the matrix and are ignored.  Row i of the system is
 *   lower[i] x[i-1] + main[i] x[i] + upper[i] x[i+1] = rhs[i].
 * Solved by the Thomas algorithm (forward elimination, back substitution)
 * without pivoting, as XLA's solver does, so a system that needs pivoting
 * gives the same infinities and NaNs; in double, rounded once to the
 * result type.
 */
#include <stdlib.h>

#include "eval_custom.h"
#include "eval_internal.h"

/* Solves one system in place: x holds rhs on entry; w is scratch of m. */
static void thomas(int64_t m, const double *lo, const double *di, const double *up, double *x, double *w) {
  w[0] = di[0];
  for (int64_t i = 1; i < m; i++) {
    double f = lo[i] / w[i - 1];
    w[i] = di[i] - f * up[i - 1];
    x[i] -= f * x[i - 1];
  }
  x[m - 1] /= w[m - 1];
  for (int64_t i = m - 2; i >= 0; i--)
    x[i] = (x[i] - up[i] * x[i + 1]) / w[i];
}

hlo_value *chk_custom_tridiagonal_solve(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_shape *s = &ins->shape;
  if (ins->noperands != 4 || s->type == HLO_TUPLE || hlo_etype_class(s->type) != HLO_CLASS_FLOAT || s->rank < 2)
    return chk_fail(ev, ins, "TridiagonalSolver takes (lower, main, upper, rhs) and returns a float array of rank >= 2");
  int rank = s->rank;
  int64_t m = s->dims[rank - 1], k = s->dims[rank - 2];
  for (int op = 0; op < 4; op++) {
    const hlo_value *v = ops[op];
    bool ok = chk_is_array(v) && hlo_etype_class(v->type) == HLO_CLASS_FLOAT && v->rank == rank;
    for (int d = 0; ok && d < rank; d++)
      ok = v->dims[d] == (op < 3 && d == rank - 2 ? 1 : s->dims[d]);
    if (!ok)
      return chk_fail(ev, ins, "TridiagonalSolver: operand %d must have shape [..., %s, %lld] like the result", op,
                      op < 3 ? "1" : "K", (long long)m);
  }
  hlo_value *r = chk_result_uninit(ev, ins);
  if (!r)
    return NULL;
  if (m == 0 || k == 0)
    return r;
  double *buf = malloc(sizeof *buf * (size_t)m * 5);
  if (!buf)
    return chk_fail_unref(ev, ins, r, "out of memory");
  double *lo = buf, *di = buf + m, *up = buf + 2 * m, *x = buf + 3 * m, *w = buf + 4 * m;
  int64_t batches = r->count / (m * k);
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < m; i++) {
      lo[i] = hlo_value_get_f64(ops[0], b * m + i);
      di[i] = hlo_value_get_f64(ops[1], b * m + i);
      up[i] = hlo_value_get_f64(ops[2], b * m + i);
    }
    for (int64_t j = 0; j < k; j++) {
      int64_t base = (b * k + j) * m;
      for (int64_t i = 0; i < m; i++)
        x[i] = hlo_value_get_f64(ops[3], base + i);
      thomas(m, lo, di, up, x, w);
      for (int64_t i = 0; i < m; i++)
        hlo_value_set_f64(r, base + i, x[i]);
    }
  }
  free(buf);
  return r;
}
