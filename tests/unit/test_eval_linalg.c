/* test_eval_linalg.c — the Householder QR custom-calls (eval_qr.c) and
 * triangular-solve (eval_triangular_solve.c), in f64.
 *
 * Hand computations:
 *   Qr([[3, 1], [4, 2]]): column 0 has alpha = 3, sigma = 16, mu = 5, so
 *   beta = -5, tau = (-5 - 3) / -5 = 1.6, v = [1, 4 / (3 + 5)] = [1, 0.5];
 *   column 1 becomes [1, 2] - 1.6 (v . [1, 2]) v = [-2.2, 0.4]; column 1
 *   has nothing below the diagonal (sigma = 0): tau = 0, beta = 0.4.  So
 *   a' = [[-5, -2.2], [0.5, 0.4]], taus = [1.6, 0], and
 *   Q = I - 1.6 v v^T = [[-0.6, -0.8], [-0.8, 0.6]]; Q R = [[3, 1], [4, 2]].
 *   Qr([[-3, 1], [4, 2]]): alpha < 0, beta = +5, tau = 1.6, v = [1, -0.5];
 *   v . [1, 2] = 0, column 1 stays: a' = [[5, 1], [-0.5, 2]].
 *   triangular-solve with a = [[2, 99], [1, 4]] (99 lies outside the lower
 *   triangle and must not be read), b = [2, 9]:
 *   lower:                 2 y0 = 2, y0 + 4 y1 = 9      -> [1, 2]
 *   lower, TRANSPOSE:      2 y0 + y1 = 2, 4 y1 = 9      -> [-0.125, 2.25]
 *   lower, right side:     [y0 y1] a = [2 y0 + y1, 4 y1] -> [-0.125, 2.25]
 *   lower, unit_diagonal:  y0 = 2, y0 + y1 = 9          -> [2, 7] */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "eval_fixture.h"

static void expect_near(const hlo_value *v, int64_t n, const double *want) {
  assert_int_equal(v->count, n);
  for (int64_t i = 0; i < n; i++) {
    double got = hlo_value_get_f64(v, i);
    if (!(fabs(got - want[i]) <= 1e-14 * (fabs(want[i]) + 1)))
      fail_msg("element %lld: got %.17g, want %.17g", (long long)i, got, want[i]);
  }
}

#define QR_TEXT                                                                                       \
  "ENTRY e {\n a = f64[2,2] parameter(0)\n"                                                           \
  " ROOT q = (f64[2,2], f64[2]) custom-call(a), custom_call_target=\"Qr\"\n}\n"

static void qr_two_by_two(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F64, 2, DIMS(2, 2), VALS(3, 1, 4, 2))};
  hlo_value *v = fx_eval(QR_TEXT, 1, a);
  expect_near(v->elems[0], 4, VALS(-5, -2.2, 0.5, 0.4));
  expect_near(v->elems[1], 2, VALS(1.6, 0));
  hlo_value_unref(v);
  hlo_value *b[] = {fx_array(HLO_F64, 2, DIMS(2, 2), VALS(-3, 1, 4, 2))};
  v = fx_eval(QR_TEXT, 1, b);
  expect_near(v->elems[0], 4, VALS(5, 1, -0.5, 2));
  expect_near(v->elems[1], 2, VALS(1.6, 0));
  hlo_value_unref(v);
}

static void householder_product_two_by_two(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n a = f64[2,2] parameter(0)\n t = f64[2] parameter(1)\n"
                  " ROOT q = f64[2,2] custom-call(a, t),"
                  " custom_call_target=\"ProductOfElementaryHouseholderReflectors\"\n}\n";
  hlo_value *a[] = {fx_array(HLO_F64, 2, DIMS(2, 2), VALS(-5, -2.2, 0.5, 0.4)), fx_array(HLO_F64, 1, DIMS(2), VALS(1.6, 0))};
  hlo_value *v = fx_eval(t, 2, a);
  expect_near(v, 4, VALS(-0.6, -0.8, -0.8, 0.6));
  hlo_value_unref(v);
}

static void qr_of_a_vector_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F64, 1, DIMS(2), NULL)};
  fx_eval_fails("ENTRY e {\n a = f64[2] parameter(0)\n"
                " ROOT q = (f64[2], f64[1]) custom-call(a), custom_call_target=\"Qr\"\n}\n",
                1, a, "Qr takes a real float matrix");
}

static void solve(const char *attrs, int64_t k, const double *b, const double *want) {
  char t[500];
  snprintf(t, sizeof t,
           "ENTRY e {\n a = f64[2,2] parameter(0)\n b = f64[%s] parameter(1)\n"
           " ROOT x = f64[%s] triangular-solve(a, b), %s\n}\n",
           k == 2 ? "1,2" : "2,1", k == 2 ? "1,2" : "2,1", attrs);
  hlo_value *a[] = {fx_array(HLO_F64, 2, DIMS(2, 2), VALS(2, 99, 1, 4)),
                    fx_array(HLO_F64, 2, k == 2 ? DIMS(1, 2) : DIMS(2, 1), b)};
  fx_expect(fx_eval(t, 2, a), HLO_F64, 2, k == 2 ? DIMS(1, 2) : DIMS(2, 1), want);
}

static void triangular_solve_forms(void **state) {
  (void)state;
  solve("left_side=true, lower=true, transpose_a=NO_TRANSPOSE", 1, VALS(2, 9), VALS(1, 2));
  solve("left_side=true, lower=true, transpose_a=TRANSPOSE", 1, VALS(2, 9), VALS(-0.125, 2.25));
  solve("lower=true, transpose_a=NO_TRANSPOSE", 2, VALS(2, 9), VALS(-0.125, 2.25));
  solve("left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE", 1, VALS(2, 9), VALS(2, 7));
}

static void triangular_solve_bad_attribute_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F64, 2, DIMS(2, 2), NULL), fx_array(HLO_F64, 2, DIMS(2, 1), NULL)};
  fx_eval_fails("ENTRY e {\n a = f64[2,2] parameter(0)\n b = f64[2,1] parameter(1)\n"
                " ROOT x = f64[2,1] triangular-solve(a, b), left_side=true, transpose_a=SIDEWAYS\n}\n",
                2, a, "transpose_a");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(qr_two_by_two),
      cmocka_unit_test(householder_product_two_by_two),
      cmocka_unit_test(qr_of_a_vector_refused),
      cmocka_unit_test(triangular_solve_forms),
      cmocka_unit_test(triangular_solve_bad_attribute_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
