/* test_eval_math.c — the math-library composites with no decomposition
 * (eval_math.c) and the tridiagonal solver (eval_tridiagonal.c), through
 * HLO text, in f64 so the double results are seen unrounded.
 *
 * Expected values come from closed forms, not from the code:
 *   psi(1) = -gamma, psi(-1/2) = psi(1/2) + 2 = 2 - gamma - 2 ln 2,
 *   psi'(1) = pi^2/6, psi'(1/2) = pi^2/2, psi'(-1/2) = psi'(1/2) + 4,
 *   psi''(1) = -2 zeta(3);
 *   I_x(1, 1) = x, I_x(a, 1) = x^a, I_x(1, b) = 1 - (1-x)^b,
 *   I_x(2, 2) = x^2 (3 - 2x);
 *   dP/da at a = 1: P(1, x) = 1 - e^-x and d gamma(a, x)/da at a = 1 is
 *   the integral of ln t e^-t over [0, x] = -gamma - e^-x ln x - E1(x), so
 *   dP/da = -e^-x ln x - E1(x) - gamma e^-x, with E1(1), E1(2), E1(5)
 *   from Abramowitz and Stegun's table 5.1;
 *   a tridiagonal system whose solution was chosen first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "eval_fixture.h"

static const double EG = 0.57721566490153286061; /* Euler's gamma */
static const double PI = 3.14159265358979323846;

/* target(p0, p1[, p2]) on f64 scalars. */
static double call(const char *target, int n, double x0, double x1, double x2) {
  char t[600];
  snprintf(t, sizeof t,
           "ENTRY e {\n a = f64[] parameter(0)\n b = f64[] parameter(1)\n c = f64[] parameter(2)\n"
           " ROOT r = f64[] custom-call(a, b%s), custom_call_target=\"xla_builder.math.%s\"\n}\n",
           n == 3 ? ", c" : "", target);
  hlo_value *a[] = {fx_scalar(HLO_F64, x0), fx_scalar(HLO_F64, x1), fx_scalar(HLO_F64, x2)};
  hlo_value *v = fx_eval(t, 3, a);
  double r = hlo_value_get_f64(v, 0);
  hlo_value_unref(v);
  return r;
}

static void near(double got, double want, double rel) {
  if (!(fabs(got - want) <= rel * fabs(want)))
    fail_msg("got %.17g, want %.17g (relative %.1e)", got, want, rel);
}

static void polygamma_closed_forms(void **state) {
  (void)state;
  near(call("Polygamma", 2, 0, 1, 0), -EG, 1e-14);
  near(call("Polygamma", 2, 0, -0.5, 0), 2 - EG - 2 * log(2), 1e-12);
  near(call("Polygamma", 2, 1, 1, 0), PI * PI / 6, 1e-14);
  near(call("Polygamma", 2, 1, 0.5, 0), PI * PI / 2, 1e-14);
  near(call("Polygamma", 2, 1, -0.5, 0), PI * PI / 2 + 4, 1e-14);
  near(call("Polygamma", 2, 2, 1, 0), -2 * 1.2020569031595942854, 1e-14);
  /* n must be a non-negative integer; poles: +inf for odd n, NaN else. */
  assert_true(isnan(call("Polygamma", 2, 1.5, 1, 0)));
  assert_true(isnan(call("Polygamma", 2, -1, 1, 0)));
  assert_true(isnan(call("Polygamma", 2, 0, 0, 0)));
  assert_true(isnan(call("Polygamma", 2, 0, -2, 0)));
  assert_true(call("Polygamma", 2, 1, -3, 0) == INFINITY);
  assert_true(isnan(call("Polygamma", 2, 2, 0, 0)));
}

static void betainc_closed_forms(void **state) {
  (void)state;
  near(call("RegularizedIncompleteBeta", 3, 1, 1, 0.3), 0.3, 1e-14);
  near(call("RegularizedIncompleteBeta", 3, 2, 1, 0.25), 0.0625, 1e-14);
  near(call("RegularizedIncompleteBeta", 3, 1, 3, 0.5), 0.875, 1e-14);
  near(call("RegularizedIncompleteBeta", 3, 2, 2, 0.4), 0.16 * 2.2, 1e-14);
  near(call("RegularizedIncompleteBeta", 3, 2, 2, 0.9), 0.81 * 1.2, 1e-14); /* the flipped side */
  assert_true(call("RegularizedIncompleteBeta", 3, 2, 3, 0) == 0);
  assert_true(call("RegularizedIncompleteBeta", 3, 2, 3, 1) == 1);
  assert_true(isnan(call("RegularizedIncompleteBeta", 3, 0, 1, 0.5)));
  assert_true(isnan(call("RegularizedIncompleteBeta", 3, 1, -1, 0.5)));
  assert_true(isnan(call("RegularizedIncompleteBeta", 3, 1, 1, 1.5)));
  assert_true(isnan(call("RegularizedIncompleteBeta", 3, 1, 1, -0.1)));
}

static void igamma_grad_a_at_one(void **state) {
  (void)state;
  const double x[] = {0.5, 1, 2, 5}; /* 0.5, 1, 2: series side; 5: fraction side */
  const double e1[] = {0.55977359477616081, 0.21938393439552026, 0.048900510708061118, 0.0011482955912753257};
  for (int i = 0; i < 4; i++)
    near(call("IgammaGradA", 2, 1, x[i], 0), -exp(-x[i]) * log(x[i]) - e1[i] - EG * exp(-x[i]), 1e-9);
  assert_true(call("IgammaGradA", 2, 1, 0, 0) == 0);
  assert_true(isnan(call("IgammaGradA", 2, 0, 1, 0)));
  assert_true(isnan(call("IgammaGradA", 2, 1, -1, 0)));
}

/* Elementwise over f32 arrays with a scalar operand broadcast: polygamma
 * of order [0, 1] at 1, rounded to f32. */
static void elementwise_f32_with_scalar(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n n = f32[2] parameter(0)\n x = f32[] parameter(1)\n"
                  " ROOT r = f32[2] custom-call(n, x), custom_call_target=\"xla_builder.math.Polygamma\"\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(0, 1)), fx_scalar(HLO_F32, 1)};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 1, DIMS(2), VALS((float)-EG, (float)(PI * PI / 6)));
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(2), NULL), fx_array(HLO_F32, 1, DIMS(3), NULL)};
  fx_eval_fails("ENTRY e {\n n = f32[2] parameter(0)\n x = f32[3] parameter(1)\n"
                " ROOT r = f32[2] custom-call(n, x), custom_call_target=\"xla_builder.math.Polygamma\"\n}\n",
                2, b, "operand 1 must be a float array of the result's shape");
}

/* A = [[2,1,0],[1,2,1],[0,1,2]]: A [1,2,3] = [4,8,8], A [1,0,0] = [2,1,0].
 * lower[0] and upper[2] are outside the matrix: 99 there must not matter. */
static void tridiagonal_solves_rows(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n l = f32[1,3] parameter(0)\n d = f32[1,3] parameter(1)\n u = f32[1,3] parameter(2)\n"
                  " b = f32[2,3] parameter(3)\n ROOT x = f32[2,3] custom-call(l, d, u, b),"
                  " custom_call_target=\"xla_builder.tridiagonal.TridiagonalSolver\"\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(1, 3), VALS(99, 1, 1)), fx_array(HLO_F32, 2, DIMS(1, 3), VALS(2, 2, 2)),
                    fx_array(HLO_F32, 2, DIMS(1, 3), VALS(1, 1, 99)),
                    fx_array(HLO_F32, 2, DIMS(2, 3), VALS(4, 8, 8, 2, 1, 0))};
  fx_expect(fx_eval(t, 4, a), HLO_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 1, 0, 0));
}

static void tridiagonal_shape_mismatch_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), NULL), fx_array(HLO_F32, 2, DIMS(1, 3), NULL),
                    fx_array(HLO_F32, 2, DIMS(1, 3), NULL), fx_array(HLO_F32, 2, DIMS(2, 3), NULL)};
  fx_eval_fails("ENTRY e {\n l = f32[2,3] parameter(0)\n d = f32[1,3] parameter(1)\n u = f32[1,3] parameter(2)\n"
                " b = f32[2,3] parameter(3)\n ROOT x = f32[2,3] custom-call(l, d, u, b),"
                " custom_call_target=\"xla_builder.tridiagonal.TridiagonalSolver\"\n}\n",
                4, a, "operand 0 must have shape");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(polygamma_closed_forms),
      cmocka_unit_test(betainc_closed_forms),
      cmocka_unit_test(igamma_grad_a_at_one),
      cmocka_unit_test(elementwise_f32_with_scalar),
      cmocka_unit_test(tridiagonal_solves_rows),
      cmocka_unit_test(tridiagonal_shape_mismatch_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
