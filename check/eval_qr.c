/* eval_qr.c — the Householder QR custom-calls XLA's QR decomposition emits
 * before its QrExpander pass runs: "Qr" and
 * "ProductOfElementaryHouseholderReflectors", with XLA's conventions
 * (LAPACK's geqrf and orgqr layout).
 *
 *   Qr(a: [..., m, n]) -> (a': [..., m, n], taus: [..., min(m, n)])
 *     For j = 0 .. min(m, n) - 1, the reflection H_j = I - tau_j v_j v_j^T
 *     of column j below row j: alpha = a[j][j], sigma = the sum of squares
 *     of a[j+1:][j], mu = sqrt(alpha^2 + sigma).  When sigma = 0: beta =
 *     alpha, tau = 0, v = e_j.  Otherwise beta = -mu for alpha >= 0 and mu
 *     for alpha < 0, tau = (beta - alpha) / beta, v = e_j +
 *     a[j+1:][j] / (alpha - beta).  Columns right of j become H_j times
 *     themselves; a'[j][j] = beta, a'[j+1:][j] = v[j+1:] (the implicit 1
 *     is not stored), rows above j of column j stay.  So a' holds R in and
 *     above the diagonal and the reflectors below it; taus[j] = tau_j.
 *   ProductOfElementaryHouseholderReflectors(a': [..., m, n],
 *     taus: [..., k]) -> Q: [..., m, n], the first n columns of
 *     H_0 H_1 ... H_{k-1}, v_j read from a' as above.
 * Real float types only; computed in double, each result rounded once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_custom.h"
#include "eval_internal.h"

static bool is_real_float(const hlo_shape *s) {
  return s->type != HLO_TUPLE && hlo_etype_class(s->type) == HLO_CLASS_FLOAT && s->rank >= 2;
}

/* Householder QR of the m x n row-major matrix a, in place; taus[p]. */
static void householder_qr(double *a, double *taus, int64_t m, int64_t n) {
  int64_t p = m < n ? m : n;
  for (int64_t j = 0; j < p; j++) {
    double alpha = a[j * n + j], sigma = 0;
    for (int64_t i = j + 1; i < m; i++)
      sigma += a[i * n + j] * a[i * n + j];
    if (sigma == 0) {
      taus[j] = 0; /* H_j = I: nothing moves */
      continue;
    }
    double mu = sqrt(alpha * alpha + sigma);
    double beta = alpha < 0 ? mu : -mu;
    double tau = (beta - alpha) / beta, div = alpha - beta;
    for (int64_t i = j + 1; i < m; i++)
      a[i * n + j] /= div; /* v below the diagonal */
    for (int64_t c = j + 1; c < n; c++) {
      double dot = a[j * n + c];
      for (int64_t i = j + 1; i < m; i++)
        dot += a[i * n + j] * a[i * n + c];
      a[j * n + c] -= tau * dot;
      for (int64_t i = j + 1; i < m; i++)
        a[i * n + c] -= tau * dot * a[i * n + j];
    }
    a[j * n + j] = beta;
    taus[j] = tau;
  }
}

/* q (m x n) = the first n columns of H_0 ... H_{k-1}, from v (m x n, as
 * Qr leaves it) and taus[k]. */
static void reflector_product(const double *v, const double *taus, double *q, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < n; c++)
      q[i * n + c] = i == c;
  for (int64_t j = k - 1; j >= 0; j--) { /* q = H_j q */
    for (int64_t c = 0; c < n; c++) {
      double dot = q[j * n + c];
      for (int64_t i = j + 1; i < m; i++)
        dot += v[i * n + j] * q[i * n + c];
      q[j * n + c] -= taus[j] * dot;
      for (int64_t i = j + 1; i < m; i++)
        q[i * n + c] -= taus[j] * dot * v[i * n + j];
    }
  }
}

static bool dims_equal(const hlo_shape *s, const hlo_value *v) {
  if (s->rank != v->rank)
    return false;
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] != v->dims[d])
      return false;
  return true;
}

hlo_value *chk_custom_qr(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_shape *s = &ins->shape;
  const hlo_value *x = ops[0];
  if (ins->noperands != 1 || s->type != HLO_TUPLE || s->ntuple != 2 || !is_real_float(&s->elems[0]) ||
      !chk_is_array(x) || x->type != s->elems[0].type || !dims_equal(&s->elems[0], x))
    return chk_fail(ev, ins, "Qr takes a real float matrix [..., m, n] and returns (the same shape, taus)");
  int r = x->rank;
  int64_t m = x->dims[r - 2], n = x->dims[r - 1], p = m < n ? m : n;
  const hlo_shape *ts = &s->elems[1];
  bool taus_ok = ts->type == x->type && ts->rank == r - 1 && ts->dims[r - 2] == p;
  for (int d = 0; taus_ok && d < r - 2; d++)
    taus_ok = ts->dims[d] == x->dims[d];
  if (!taus_ok)
    return chk_fail(ev, ins, "Qr's taus must have shape [..., %lld]", (long long)p);
  hlo_value *e[2] = {hlo_value_from_shape(&s->elems[0]), hlo_value_from_shape(ts)};
  double *a = malloc(sizeof *a * (size_t)(m * n + p + 1));
  if (!e[0] || !e[1] || !a) {
    free(a);
    hlo_value_unref(e[0]);
    hlo_value_unref(e[1]);
    return chk_fail(ev, ins, "out of memory");
  }
  double *taus = a + m * n;
  int64_t batches = m > 0 && n > 0 ? x->count / (m * n) : 0;
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < m * n; i++)
      a[i] = hlo_value_get_f64(x, b * m * n + i);
    householder_qr(a, taus, m, n);
    for (int64_t i = 0; i < m * n; i++)
      hlo_value_set_f64(e[0], b * m * n + i, a[i]);
    for (int64_t j = 0; j < p; j++)
      hlo_value_set_f64(e[1], b * p + j, taus[j]);
  }
  free(a);
  hlo_value *t = hlo_value_tuple(2, e);
  if (!t) {
    hlo_value_unref(e[0]);
    hlo_value_unref(e[1]);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}

hlo_value *chk_custom_householder_product(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_shape *s = &ins->shape;
  if (ins->noperands != 2 || !is_real_float(s) || !chk_is_array(ops[0]) || !chk_is_array(ops[1]) ||
      !dims_equal(s, ops[0]))
    return chk_fail(ev, ins, "ProductOfElementaryHouseholderReflectors takes (a: [..., m, n], taus: [..., k]) "
                             "and returns a's shape");
  const hlo_value *v = ops[0], *tv = ops[1];
  int r = v->rank;
  int64_t m = v->dims[r - 2], n = v->dims[r - 1], k = tv->rank == r - 1 ? tv->dims[r - 2] : -1;
  bool ok = k >= 0 && k <= n && n <= m;
  for (int d = 0; ok && d < r - 2; d++)
    ok = tv->dims[d] == v->dims[d];
  if (!ok)
    return chk_fail(ev, ins, "ProductOfElementaryHouseholderReflectors needs m >= n >= k and taus [..., k]");
  hlo_value *q = chk_result_uninit(ev, ins);
  if (!q)
    return NULL;
  double *buf = malloc(sizeof *buf * (size_t)(2 * m * n + k + 1));
  if (!buf)
    return chk_fail_unref(ev, ins, q, "out of memory");
  double *a = buf, *out = buf + m * n, *taus = buf + 2 * m * n;
  int64_t batches = m > 0 && n > 0 ? v->count / (m * n) : 0;
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t i = 0; i < m * n; i++)
      a[i] = hlo_value_get_f64(v, b * m * n + i);
    for (int64_t j = 0; j < k; j++)
      taus[j] = hlo_value_get_f64(tv, b * k + j);
    reflector_product(a, taus, out, m, n, k);
    for (int64_t i = 0; i < m * n; i++)
      hlo_value_set_f64(q, b * m * n + i, out[i]);
  }
  free(buf);
  return q;
}
