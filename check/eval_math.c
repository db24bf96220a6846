/* eval_math.c — the special functions of XLA's math library that JAX emits
 * as composite custom-calls with no decomposition attached
 * (xla_builder.math.IgammaGradA, .Polygamma, .RegularizedIncompleteBeta).
 *
 * Each is elementwise over operands of the result's shape (a scalar
 * operand is broadcast) and computed in double from the mathematical
 * definition, then rounded once to the result type, so the reference is the
 * function itself rather than XLA's float32 expansion of it.
 *
 *   IgammaGradA(a, x)   d/da P(a, x), P the regularized lower incomplete
 *                       gamma function.  NaN when a <= 0 or x < 0 (P's own
 *                       domain, as XLA's igamma), 0 at x = 0 and x = +inf.
 *                       For x <= a + 1 the derivative of P's power series
 *                       term by term; above, Q = 1 - P from its continued
 *                       fraction: dP/da = -Q (ln x - digamma(a) + dlnF/da),
 *                       F the fraction, whose weak dependence on a is
 *                       differentiated numerically (Richardson, step 1e-3).
 *   Polygamma(n, x)     the n-th derivative of digamma; NaN unless n is a
 *                       non-negative integer.  n = 0: digamma (NaN at
 *                       0, -1, -2, ...); n >= 1: (-1)^(n+1) n! zeta(n+1, x),
 *                       +inf at those poles for odd n (both sides tend to
 *                       +inf) and NaN for even n (the sides differ).
 *   RegularizedIncompleteBeta(a, b, x)
 *                       I_x(a, b); NaN when a <= 0, b <= 0, x < 0 or x > 1
 *                       (as XLA's), from the continued fraction of
 *                       DLMF 8.17.22, on the side of x where it converges
 *                       fast (I_x(a, b) = 1 - I_{1-x}(b, a)).
 */
#include <math.h>
#include <stdbool.h>

#include "eval_custom.h"
#include "eval_internal.h"

#define MAX_TERMS 10000000
static const double PI = 3.14159265358979323846;

static bool is_int(double x) { return isfinite(x) && x == floor(x); }

double chk_digamma(double x) {
  if (isnan(x) || x == -INFINITY)
    return NAN;
  if (x == INFINITY)
    return INFINITY;
  if (x <= 0 && is_int(x))
    return NAN;
  if (x < 0) /* reflection: psi(1 - x) - psi(x) = pi cot(pi x) */
    return chk_digamma(1 - x) - PI / tan(PI * x);
  double r = 0;
  while (x < 10) { /* psi(x) = psi(x + 1) - 1/x */
    r -= 1 / x;
    x += 1;
  }
  /* Asymptotic series: ln x - 1/(2x) - sum B_2k / (2k x^2k). */
  double z = 1 / (x * x);
  double s = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return r + log(x) - 0.5 / x - s;
}

/* Hurwitz zeta(s, q) for an integer s >= 2, q not a pole (caller checks). */
static double hurwitz_zeta(int s, double q) {
  double shift = 0;
  if (q < 0) {
    if (q < -1e7)
      return NAN; /* beyond the evaluator's range (the shift sum below) */
    /* zeta(s, q) = sum_{k<m} (q + k)^-s + zeta(s, q + m) */
    while (q < 1) {
      shift += pow(q, -s);
      q += 1;
    }
  }
  /* Euler-Maclaurin with N terms summed directly. */
  int n = 20 + 2 * s;
  double sum = 0;
  for (int k = 0; k < n; k++)
    sum += pow(q + k, -s);
  double w = q + n;
  sum += pow(w, 1 - s) / (s - 1) + 0.5 * pow(w, -s);
  /* B_2j / (2j)! for j = 1..10. */
  static const double b2j_fact[] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                                    -691.0 / 1307674368000.0, 1.0 / 74724249600.0,
                                    -3617.0 / 10670622842880000.0, 43867.0 / 5109094217170944000.0,
                                    -174611.0 / 802857662698291200000.0};
  double rising = s; /* s (s+1) ... (s + 2j - 2) */
  double wp = pow(w, -s - 1);
  for (int j = 0; j < 10; j++) {
    sum += b2j_fact[j] * rising * wp;
    rising *= (double)(s + 2 * j + 1) * (s + 2 * j + 2);
    wp /= w * w;
  }
  return sum + shift;
}

double chk_polygamma(double n, double x) {
  if (isnan(n) || isnan(x) || !is_int(n) || n < 0)
    return NAN;
  if (n == 0)
    return chk_digamma(x);
  bool odd = fmod(n, 2) == 1;
  if (x <= 0 && is_int(x))
    return odd ? INFINITY : NAN;
  if (x == INFINITY)
    return 0;
  if (x == -INFINITY)
    return NAN;
  if (n > 170)
    return odd ? INFINITY : -INFINITY; /* n! overflows double; so does the value */
  double fact = exp(lgamma(n + 1));
  return (odd ? 1 : -1) * fact * hurwitz_zeta((int)n + 1, x);
}

/* ln of the continued fraction F(a, x) with Q(a, x) = e^-x x^a F / Gamma(a)
 * (modified Lentz on DLMF 8.9.2's even form); x > 0. */
static double log_upper_cf(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, f = d;
  for (int i = 1; i < MAX_TERMS; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny)
      d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny)
      c = tiny;
    d = 1 / d;
    double delta = c * d;
    f *= delta;
    if (fabs(delta - 1) < 1e-16)
      break;
  }
  return log(f);
}

double chk_igamma_grad_a(double a, double x) {
  if (isnan(a) || isnan(x) || a <= 0 || x < 0)
    return NAN;
  if (x == 0 || x == INFINITY || a == INFINITY)
    return 0;
  double lx = log(x);
  if (x <= a + 1) {
    /* P = sum_k exp(lt_k), lt_k = -x + (a + k) ln x - lgamma(a + k + 1);
     * d lt_k / da = ln x - digamma(a + k + 1). */
    double lt = -x + a * lx - lgamma(a + 1), psi = chk_digamma(a + 1), sum = 0, p = 0;
    for (int k = 0; k < MAX_TERMS; k++) {
      double t = exp(lt);
      sum += t * (lx - psi);
      p += t;
      if (k > 0 && t < 1e-17 * p) /* the terms fall from k = 1 on (x <= a + 1) */
        break;
      lt += lx - log(a + k + 1);
      psi += 1 / (a + k + 1);
      if (lt < -745) /* exp underflows: the rest adds nothing */
        break;
    }
    return sum;
  }
  double lq = -x + a * lx - lgamma(a) + log_upper_cf(a, x);
  double q = exp(lq);
  if (q == 0)
    return 0;
  double h = 1e-3;
  double d1 = (log_upper_cf(a + h, x) - log_upper_cf(a - h, x)) / (2 * h);
  double d2 = (log_upper_cf(a + h / 2, x) - log_upper_cf(a - h / 2, x)) / h;
  double dlf = (4 * d2 - d1) / 3;
  return -q * (lx - chk_digamma(a) + dlf);
}

/* The continued fraction of I_x(a, b) (DLMF 8.17.22), modified Lentz. */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (fabs(d) < tiny)
    d = tiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m < MAX_TERMS; m++) {
    for (int odd = 0; odd < 2; odd++) {
      double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                       : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      if (fabs(d) < tiny)
        d = tiny;
      c = 1 + num / c;
      if (fabs(c) < tiny)
        c = tiny;
      d = 1 / d;
      f *= c * d;
      if (odd && fabs(c * d - 1) < 1e-16)
        return f;
    }
  }
  return f;
}

double chk_betainc(double a, double b, double x) {
  if (isnan(a) || isnan(b) || isnan(x) || a <= 0 || b <= 0 || x < 0 || x > 1)
    return NAN;
  if (x == 0 || x == 1)
    return x;
  if (a == INFINITY || b == INFINITY)
    return NAN; /* no limit common to every x */
  bool flip = x > (a + 1) / (a + b + 2);
  if (flip) {
    double t = a;
    a = b;
    b = t;
    x = 1 - x;
  }
  double lpre = a * log(x) + b * log1p(-x) - log(a) - (lgamma(a) + lgamma(b) - lgamma(a + b));
  double v = exp(lpre) * beta_cf(a, b, x);
  return flip ? 1 - v : v;
}

/* ---- the custom-call wrappers ---------------------------------------------- */

static bool same_dims(const hlo_value *v, const hlo_shape *s) {
  if (v->rank != s->rank)
    return false;
  for (int d = 0; d < s->rank; d++)
    if (v->dims[d] != s->dims[d])
      return false;
  return true;
}

typedef double fn2(double, double);
typedef double fn3(double, double, double);

static hlo_value *elementwise(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops, int arity, fn2 *f2,
                              fn3 *f3) {
  const char *t = ins->attrs.custom_call_target;
  if (ins->noperands != arity || ins->shape.type == HLO_TUPLE || hlo_etype_class(ins->shape.type) != HLO_CLASS_FLOAT)
    return chk_fail(ev, ins, "%s takes %d operands and returns a float array", t, arity);
  int64_t n = hlo_shape_elements(&ins->shape);
  for (int k = 0; k < arity; k++)
    if (!chk_is_array(ops[k]) || hlo_etype_class(ops[k]->type) != HLO_CLASS_FLOAT ||
        (ops[k]->rank != 0 && !same_dims(ops[k], &ins->shape)))
      return chk_fail(ev, ins, "%s: operand %d must be a float array of the result's shape or a scalar", t, k);
  hlo_value *r = chk_result_uninit(ev, ins);
  if (!r)
    return NULL;
  for (int64_t i = 0; i < n; i++) {
    double v[3];
    for (int k = 0; k < arity; k++)
      v[k] = hlo_value_get_f64(ops[k], ops[k]->rank == 0 ? 0 : i);
    hlo_value_set_f64(r, i, arity == 2 ? f2(v[0], v[1]) : f3(v[0], v[1], v[2]));
  }
  return r;
}

hlo_value *chk_custom_igamma_grad_a(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  return elementwise(ev, ins, ops, 2, chk_igamma_grad_a, NULL);
}

hlo_value *chk_custom_polygamma(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  return elementwise(ev, ins, ops, 2, chk_polygamma, NULL);
}

hlo_value *chk_custom_betainc(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  return elementwise(ev, ins, ops, 3, NULL, chk_betainc);
}
