/* test_numerics.c — the device's arithmetic: the approximations stay within
 * the error bounds documented in dev_numerics.h over a dense sweep, FTZ
 * flushes where documented, and the bf16 dot passes behave as specified. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "dev_numerics.h"

static double ulp_err(float got, double exact) {
  if (isnan(exact))
    return isnan(got) ? 0 : 1e30;
  if (isinf(exact) || isinf(got))
    return got == exact ? 0 : 1e30;
  double a = fabs(exact);
  if (a < FLT_MIN) /* flushed results */
    return fabs((double)got) <= FLT_MIN ? 0 : 1e30;
  int e;
  frexp(a, &e);
  return fabs((double)got - exact) / ldexp(1.0, e - 24);
}

typedef float fn32(float);
typedef double fn64(double);

/* Every 997th f32 bit pattern in [lo, hi], subnormal inputs skipped (they
 * are flushed by design).  abs_near_zero: results below 1e-3 are judged by
 * absolute error in units of 2^-24 (sin, cos near their zeros). */
static double sweep(fn32 *f, fn64 *g, float lo, float hi, int abs_near_zero) {
  double worst = 0;
  for (uint64_t b = 0; b < 0x100000000ull; b += 997) {
    uint32_t u = (uint32_t)b;
    float x;
    memcpy(&x, &u, 4);
    if (!(x >= lo && x <= hi) || (x != 0 && fabsf(x) < FLT_MIN))
      continue;
    double ex = g(x), e;
    float got = f(x);
    if (abs_near_zero && fabs(ex) < 1e-3) {
      e = fabs(got - ex) / 0x1p-24;
      e = e <= 1 ? 0 : e;
    } else {
      e = ulp_err(got, ex);
    }
    if (e > worst)
      worst = e;
  }
  return worst;
}

static double logistic64(double x) { return 1 / (1 + exp(-x)); }
static double rsqrt64(double x) { return 1 / sqrt(x); }

static void approximations_within_documented_bounds(void **state) {
  (void)state;
  assert_true(sweep(dev_exp_f32, exp, -87.3f, 88.7f, 0) <= DEV_ULP_EXP);
  assert_true(sweep(dev_expm1_f32, expm1, -87.3f, 88.7f, 0) <= DEV_ULP_EXPM1);
  assert_true(sweep(dev_log_f32, log, FLT_MIN, FLT_MAX, 0) <= DEV_ULP_LOG);
  assert_true(sweep(dev_log1p_f32, log1p, -0.99999f, 1e30f, 0) <= DEV_ULP_LOG1P);
  assert_true(sweep(dev_tanh_f32, tanh, -FLT_MAX, FLT_MAX, 0) <= DEV_ULP_TANH);
  assert_true(sweep(dev_logistic_f32, logistic64, -87.0f, 87.0f, 0) <= DEV_ULP_LOGISTIC);
  assert_true(sweep(dev_sqrt_f32, sqrt, 0, FLT_MAX, 0) <= DEV_ULP_SQRT);
  assert_true(sweep(dev_rsqrt_f32, rsqrt64, FLT_MIN, FLT_MAX, 0) <= DEV_ULP_RSQRT);
  assert_true(sweep(dev_sin_f32, sin, -1e4f, 1e4f, 1) <= DEV_ULP_SINCOS);
  assert_true(sweep(dev_cos_f32, cos, -1e4f, 1e4f, 1) <= DEV_ULP_SINCOS);
  assert_true(sweep(dev_erf_f32, erf, -FLT_MAX, FLT_MAX, 0) <= DEV_ULP_ERF);
  /* and they are the device's own: not bit-identical to libm everywhere */
  int differs = 0;
  for (float x = -10; x < 10; x += 0.001f)
    differs += dev_exp_f32(x) != expf(x);
  assert_true(differs > 0);
}

static void subnormals_flush_to_zero(void **state) {
  (void)state;
  float sub = 1e-40f, out;
  assert_true(sub != 0 && fabsf(sub) < FLT_MIN);
  assert_true(dev_ftz_f32(sub) == 0 && !signbit(dev_ftz_f32(sub)));
  assert_true(dev_ftz_f32(-sub) == 0 && signbit(dev_ftz_f32(-sub)));
  assert_true(dev_ftz_f32(FLT_MIN) == FLT_MIN);
  /* input flushed: 1e-40 + 0 is 0, not 1e-40 */
  assert_int_equal(dev_binary_f32(HLO_OP_ADD, sub, 0.0f, &out), 1);
  assert_true(out == 0);
  /* result flushed: 1e-20 * 1e-20 = 1e-40 would be subnormal */
  assert_int_equal(dev_binary_f32(HLO_OP_MULTIPLY, 1e-20f, 1e-20f, &out), 1);
  assert_true(out == 0);
  /* max/min and compare are not arithmetic: not handled here */
  assert_int_equal(dev_binary_f32(HLO_OP_MAXIMUM, 1.0f, 2.0f, &out), 0);
}

static void dot_passes(void **state) {
  (void)state;
  /* 1 + 2^-10 rounds to 1 in bf16 (7 fraction bits): one pass loses it */
  float a = 1.0f + 0x1p-10f;
  assert_true(dev_dot_product(a, 1.0f, DEV_PREC_DEFAULT) == 1.0f);
  assert_true(dev_dot_product(a, 1.0f, DEV_PREC_HIGH) == a);
  assert_true(dev_dot_product(a, 1.0f, DEV_PREC_HIGHEST) == a);
  /* 3 and 6 passes are closer to the f64 dot than 1 pass */
  uint32_t s = 12345;
  double e1 = 0, e3 = 0, e6 = 0;
  for (int t = 0; t < 200; t++) {
    float acc1 = 0, acc3 = 0, acc6 = 0;
    double exact = 0;
    for (int k = 0; k < 64; k++) {
      s = s * 1664525u + 1013904223u;
      float x = (float)(s >> 8) / 16777216.0f - 0.5f;
      s = s * 1664525u + 1013904223u;
      float y = (float)(s >> 8) / 16777216.0f - 0.5f;
      exact += (double)x * y;
      acc1 = dev_dot_acc(acc1, x, y, DEV_PREC_DEFAULT);
      acc3 = dev_dot_acc(acc3, x, y, DEV_PREC_HIGH);
      acc6 = dev_dot_acc(acc6, x, y, DEV_PREC_HIGHEST);
    }
    e1 += fabs(acc1 - exact), e3 += fabs(acc3 - exact), e6 += fabs(acc6 - exact);
  }
  assert_true(e3 < e1 / 100);
  assert_true(e6 <= e3);
  /* the split of highest recovers x exactly: hi + mid + lo == x */
  float parts[3];
  dev_dot_split(0.1f, DEV_PREC_HIGHEST, parts);
  assert_true(parts[0] + parts[1] + parts[2] == 0.1f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(approximations_within_documented_bounds),
      cmocka_unit_test(subnormals_flush_to_zero),
      cmocka_unit_test(dot_passes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
