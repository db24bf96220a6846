/* tolerance.c — the formula documented in tolerance.h. */
#include "tolerance.h"

#include <math.h>
#include <string.h>

double chk_unit_roundoff(hlo_etype t) {
  int mant;
  switch (t) {
  case HLO_F64: mant = 52; break;
  case HLO_F32: mant = 23; break;
  case HLO_F16: mant = 10; break;
  case HLO_BF16: mant = 7; break;
  case HLO_F8E4M3FN: case HLO_F8E4M3: case HLO_F8E4M3FNUZ: case HLO_F8E4M3B11FNUZ: mant = 3; break;
  case HLO_F8E5M2: case HLO_F8E5M2FNUZ: mant = 2; break;
  case HLO_F8E3M4: mant = 4; break;
  case HLO_F4E2M1FN: mant = 1; break;
  case HLO_F8E8M0FNU: mant = 0; break;
  case HLO_C64: mant = 23; break;
  case HLO_C128: mant = 52; break;
  default: return 0;
  }
  return ldexp(1.0, -(mant + 1));
}

double chk_pass_error(int passes) {
  switch (passes) {
  case 1: return ldexp(1.0, -7);
  case 3: return ldexp(1.0, -15);
  case 6: return ldexp(1.0, -23);
  default: return 0;
  }
}

double chk_gamma(int64_t d, double u) {
  if (d <= 0)
    return 0;
  double du = (double)d * u;
  return du < 1.0 ? du / (1.0 - du) : INFINITY;
}

/* S of tolerance.h: a bound on sum|t_i|. */
static double abs_sum_bound(const chk_tol_basis *b) { return (double)b->k * fabs(b->term_max) + fabs(b->init_abs); }

chk_tol chk_tolerance(const chk_tol_basis *b) {
  chk_tol t = {0, 0};
  if (b->k <= 0 || chk_unit_roundoff(b->out_type) == 0)
    return t;
  double k = (double)b->k, tm = fabs(b->term_max);
  double u_acc = chk_unit_roundoff(b->acc_type);
  if (u_acc == 0)
    u_acc = chk_unit_roundoff(b->out_type);
  int64_t da = b->depth_a > 0 ? b->depth_a : b->k, db = b->depth_b > 0 ? b->depth_b : b->k;
  double g = chk_gamma(da, u_acc) + chk_gamma(db, u_acc);
  double s = abs_sum_bound(b);
  /* 0 * inf is NaN: an all-zero sum has no error whatever the depth */
  t.atol = s > 0 ? g * s : 0;
  if (b->passes_a != b->passes_b)
    t.atol += k * tm * (chk_pass_error(b->passes_a) + chk_pass_error(b->passes_b));
  t.rtol = 2.0 * chk_unit_roundoff(b->out_type);
  return t;
}

bool chk_tolerance_vacuous(const chk_tol_basis *b, chk_tol t) {
  if (b->k <= 0 || chk_unit_roundoff(b->out_type) == 0)
    return false;
  double s = abs_sum_bound(b);
  return s > 0 && t.atol >= s;
}

/* Higham and Mary's gamma~_d(lambda), lambda for a failure probability of
 * CHK_TOL_FAILURE over k terms (tolerance.h). */
static double gamma_prob(int64_t d, int64_t k, double u) {
  double kk = k > 1 ? (double)k : 1.0;
  double lambda = sqrt(2.0 * log(2.0 * kk / CHK_TOL_FAILURE)) / (1.0 - u);
  double dd = (double)d;
  return expm1(lambda * sqrt(dd) * u + dd * u * u / (1.0 - u));
}

double chk_tol_g(chk_tol_criterion c, int64_t d, int64_t k, double u) {
  if (d <= 0)
    d = k;
  double g = chk_gamma(d, u);
  if (c != CHK_TOL_WORST_CASE && (double)d * u <= 1.0 / 64) {
    double p = gamma_prob(d, k, u);
    if (p < g)
      g = p;
  }
  return g;
}

double chk_tol_coef(chk_tol_criterion c, double u, int64_t k, int64_t d_a, int64_t d_b, int p_a, int p_b) {
  double g = chk_tol_g(c, d_a, k, u) + chk_tol_g(c, d_b, k, u);
  if (p_a != p_b)
    g += chk_pass_error(p_a) + chk_pass_error(p_b);
  return g;
}

double chk_tol_noise_scale(double rho) {
  if (!(rho >= 0) || !isfinite(rho))
    return 1.0;
  double c = CHK_NOISE_K * rho;
  if (c < CHK_NOISE_MIN)
    c = CHK_NOISE_MIN;
  return c < 1.0 ? c : 1.0;
}

const char *chk_tol_criterion_name(chk_tol_criterion c) {
  return c == CHK_TOL_WORST_CASE ? "worst-case" : c == CHK_TOL_NOISE_FLOOR ? "noise-floor" : "probabilistic";
}

int chk_tol_criterion_parse(const char *name, chk_tol_criterion *c) {
  if (strcmp(name, "worst-case") == 0)
    *c = CHK_TOL_WORST_CASE;
  else if (strcmp(name, "probabilistic") == 0)
    *c = CHK_TOL_PROBABILISTIC;
  else if (strcmp(name, "noise-floor") == 0)
    *c = CHK_TOL_NOISE_FLOOR;
  else
    return -1;
  return 0;
}
