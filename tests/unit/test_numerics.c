/* test_numerics.c — the device's arithmetic: the approximations stay within
 * the error bounds documented in hlo_numerics.h over a dense sweep, FTZ
 * flushes where documented, and the bf16 dot passes behave as specified. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/hlo_numerics.h"
#include "hlo/hlo_dtype.h"

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
  assert_true(sweep(hlo_num_exp_f32, exp, -87.3f, 88.7f, 0) <= HLO_NUM_ULP_EXP);
  assert_true(sweep(hlo_num_expm1_f32, expm1, -87.3f, 88.7f, 0) <= HLO_NUM_ULP_EXPM1);
  assert_true(sweep(hlo_num_log_f32, log, FLT_MIN, FLT_MAX, 0) <= HLO_NUM_ULP_LOG);
  assert_true(sweep(hlo_num_log1p_f32, log1p, -0.99999f, 1e30f, 0) <= HLO_NUM_ULP_LOG1P);
  assert_true(sweep(hlo_num_tanh_f32, tanh, -FLT_MAX, FLT_MAX, 0) <= HLO_NUM_ULP_TANH);
  assert_true(sweep(hlo_num_logistic_f32, logistic64, -87.0f, 87.0f, 0) <= HLO_NUM_ULP_LOGISTIC);
  assert_true(sweep(hlo_num_sqrt_f32, sqrt, 0, FLT_MAX, 0) <= HLO_NUM_ULP_SQRT);
  assert_true(sweep(hlo_num_rsqrt_f32, rsqrt64, FLT_MIN, FLT_MAX, 0) <= HLO_NUM_ULP_RSQRT);
  assert_true(sweep(hlo_num_sin_f32, sin, -1e4f, 1e4f, 1) <= HLO_NUM_ULP_SINCOS);
  assert_true(sweep(hlo_num_cos_f32, cos, -1e4f, 1e4f, 1) <= HLO_NUM_ULP_SINCOS);
  assert_true(sweep(hlo_num_erf_f32, erf, -FLT_MAX, FLT_MAX, 0) <= HLO_NUM_ULP_ERF);
  /* and they are the device's own: not bit-identical to libm everywhere */
  int differs = 0;
  for (float x = -10; x < 10; x += 0.001f)
    differs += hlo_num_exp_f32(x) != expf(x);
  assert_true(differs > 0);
}

static void subnormals_flush_to_zero(void **state) {
  (void)state;
  float sub = 1e-40f, out;
  assert_true(sub != 0 && fabsf(sub) < FLT_MIN);
  assert_true(hlo_num_ftz_f32(sub) == 0 && !signbit(hlo_num_ftz_f32(sub)));
  assert_true(hlo_num_ftz_f32(-sub) == 0 && signbit(hlo_num_ftz_f32(-sub)));
  assert_true(hlo_num_ftz_f32(FLT_MIN) == FLT_MIN);
  /* input flushed: 1e-40 + 0 is 0, not 1e-40 */
  assert_int_equal(hlo_num_binary_f32(HLO_OP_ADD, sub, 0.0f, &out), 1);
  assert_true(out == 0);
  /* result flushed: 1e-20 * 1e-20 = 1e-40 would be subnormal */
  assert_int_equal(hlo_num_binary_f32(HLO_OP_MULTIPLY, 1e-20f, 1e-20f, &out), 1);
  assert_true(out == 0);
  /* max/min and compare are not arithmetic: not handled here */
  assert_int_equal(hlo_num_binary_f32(HLO_OP_MAXIMUM, 1.0f, 2.0f, &out), 0);
}

static void dot_passes(void **state) {
  (void)state;
  /* 1 + 2^-10 rounds to 1 in bf16 (7 fraction bits): one pass loses it */
  float a = 1.0f + 0x1p-10f;
  assert_true(hlo_num_dot_product(a, 1.0f, HLO_NUM_PREC_DEFAULT) == 1.0f);
  assert_true(hlo_num_dot_product(a, 1.0f, HLO_NUM_PREC_HIGH) == a);
  assert_true(hlo_num_dot_product(a, 1.0f, HLO_NUM_PREC_HIGHEST) == a);
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
      acc1 = hlo_num_dot_acc(acc1, x, y, HLO_NUM_PREC_DEFAULT);
      acc3 = hlo_num_dot_acc(acc3, x, y, HLO_NUM_PREC_HIGH);
      acc6 = hlo_num_dot_acc(acc6, x, y, HLO_NUM_PREC_HIGHEST);
    }
    e1 += fabs(acc1 - exact), e3 += fabs(acc3 - exact), e6 += fabs(acc6 - exact);
  }
  assert_true(e3 < e1 / 100);
  assert_true(e6 <= e3);
  /* the split of highest recovers x exactly: hi + mid + lo == x */
  float parts[3];
  hlo_num_dot_split(0.1f, HLO_NUM_PREC_HIGHEST, parts);
  assert_true(parts[0] + parts[1] + parts[2] == 0.1f);
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* hlo_num_round_f16_block / hlo_num_round_bf16_block against the conversions of
 * hlo_dtype.h (an independent, branchy implementation of the same
 * rounding), on every f32 high half with low halves around the rounding
 * boundaries of both types (ties, just below and above), and on a
 * pseudo-random sample: NaNs of every payload, infinities, overflow to
 * infinity, f16 subnormals and underflow to zero included. */
static void f16_bf16_rounding_blocks(void **state) {
  (void)state;
  static const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000,
                                  0x3000, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF};
  enum { NL = sizeof lows / sizeof lows[0] };
  static float x[65536], r16[65536], rb[65536], r16o[65536];
  uint32_t seed = 2024;
  for (int pass = 0; pass < NL + 4; pass++) {
    for (uint32_t hi = 0; hi < 65536; hi++) {
      uint32_t lo;
      if (pass < NL) {
        lo = lows[pass];
      } else {
        seed = seed * 1664525u + 1013904223u;
        lo = seed >> 16;
      }
      x[hi] = bitsf(hi << 16 | lo);
    }
    hlo_num_round_f16_block(x, r16, 65536);
    hlo_num_round_bf16_block(x, rb, 65536);
    /* again from an odd offset with an odd count: vector rows that start
     * unaligned and a tail the vector path leaves to the scalar one */
    hlo_num_round_f16_block(x + 5, r16o + 5, 65531);
    for (int i = 0; i < 65536; i++) {
      uint32_t w16 = fbits(hlo_f16_to_f32(hlo_f32_to_f16(x[i])));
      if (i >= 5 && fbits(r16o[i]) != w16)
        fail_msg("f16 rounding of 0x%08x at an odd offset: got 0x%08x, want 0x%08x", fbits(x[i]), fbits(r16o[i]), w16);
      uint32_t wb = fbits(hlo_bf16_to_f32(hlo_f32_to_bf16(x[i])));
      if (fbits(r16[i]) != w16)
        fail_msg("f16 rounding of 0x%08x: got 0x%08x, want 0x%08x", fbits(x[i]), fbits(r16[i]), w16);
      if (fbits(rb[i]) != wb)
        fail_msg("bf16 rounding of 0x%08x: got 0x%08x, want 0x%08x", fbits(x[i]), fbits(rb[i]), wb);
    }
  }
  /* a few by hand: the f16 tie 1 + 2^-11 goes to even 1; 65520 overflows */
  float h[4] = {1.0f + 0x1p-11f, 65520.0f, 0x1p-25f, 0x1.8p-25f}, o[4];
  hlo_num_round_f16_block(h, o, 4);
  assert_true(o[0] == 1.0f);
  assert_true(isinf(o[1]));
  assert_true(o[2] == 0.0f);        /* half the smallest subnormal: tie to 0 */
  assert_true(o[3] == 0x1p-24f);    /* above the tie: the smallest subnormal */
}

/* hlo_num_binary_f32_block is hlo_num_binary_f32 element by element, NaN operands
 * included: add and multiply keep the first operand's NaN (quieted) when
 * both are NaN, whatever order a vector loop computes in. */
static void binary_block_matches_scalar(void **state) {
  (void)state;
  const uint32_t special[] = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000,
                              0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA5A5A5,
                              0xFFB00001, 0x7F7FFFFF, 0x00800000, 0x40490FDB};
  enum { NS = sizeof special / sizeof special[0] };
  static const hlo_opcode ops[] = {HLO_OP_ADD, HLO_OP_SUBTRACT, HLO_OP_MULTIPLY, HLO_OP_DIVIDE,
                                   HLO_OP_POWER};
  float x[NS * NS + 3], y[NS * NS + 3], o[NS * NS + 3];
  int n = 0;
  for (int i = 0; i < NS; i++)
    for (int j = 0; j < NS; j++, n++)
      x[n] = bitsf(special[i]), y[n] = bitsf(special[j]);
  for (int k = 0; k < (int)(sizeof ops / sizeof ops[0]); k++) {
    assert_int_equal(hlo_num_binary_f32_block(ops[k], x, y, o, n), 1);
    for (int i = 0; i < n; i++) {
      float want;
      assert_int_equal(hlo_num_binary_f32(ops[k], x[i], y[i], &want), 1);
      if (fbits(o[i]) != fbits(want))
        fail_msg("op %d on 0x%08x, 0x%08x: got 0x%08x, want 0x%08x", (int)ops[k], fbits(x[i]), fbits(y[i]),
                 fbits(o[i]), fbits(want));
    }
  }
  /* both NaN: the first operand's payload, quieted */
  float a = bitsf(0x7FA5A5A5), b = bitsf(0xFFC00000), r;
  hlo_num_binary_f32_block(HLO_OP_ADD, &a, &b, &r, 1);
  assert_int_equal(fbits(r), 0x7FE5A5A5);
  hlo_num_binary_f32_block(HLO_OP_MULTIPLY, &b, &a, &r, 1);
  assert_int_equal(fbits(r), 0xFFC00000);
}

/* hlo_num_unary_f32_block's exp, logistic and log are hlo_num_unary_f32
 * element by element: the vector path and the scalar recomputation of the
 * arguments outside its domain meet at the edges, and NaN, infinities,
 * zeros, negatives and subnormals go the scalar way.  One f32 in every
 * 4,096 of all 2^32 bit patterns, plus both sides of each edge.  (An
 * exhaustive run over all 2^32 found no difference either.) */
static void transcendental_blocks_match_scalar(void **state) {
  (void)state;
  enum { N = 1 << 20 };
  float *x = malloc(N * sizeof *x), *o = malloc(N * sizeof *o);
  assert_non_null(x);
  assert_non_null(o);
  const float edge[] = {86.0f, -86.0f, 87.3365478515625f, -87.3365478515625f, 88.72283935546875f,
                        -88.72283935546875f, 0x1p-126f, -0x1p-126f, 0x1.fffffep127f, 0.70710678f, 1.0f};
  int n = 0;
  for (int e = 0; e < (int)(sizeof edge / sizeof edge[0]); e++)
    for (int d = -64; d < 64; d++)
      x[n++] = bitsf(fbits(edge[e]) + (uint32_t)d);
  for (uint64_t u = 0; u < (1ull << 32) && n < N; u += 4096)
    x[n++] = bitsf((uint32_t)u + (uint32_t)(u >> 12) % 4096);
  const hlo_opcode ops[] = {HLO_OP_EXP, HLO_OP_LOGISTIC, HLO_OP_LOG};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(hlo_num_unary_f32_block(ops[k], x, o, n), 1);
    for (int i = 0; i < n; i++) {
      float want;
      assert_int_equal(hlo_num_unary_f32(ops[k], x[i], &want), 1);
      if (fbits(o[i]) != fbits(want))
        fail_msg("op %d on 0x%08x: block 0x%08x, scalar 0x%08x", (int)ops[k], fbits(x[i]), fbits(o[i]), fbits(want));
    }
  }
  free(x);
  free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(approximations_within_documented_bounds),
      cmocka_unit_test(subnormals_flush_to_zero),
      cmocka_unit_test(dot_passes),
      cmocka_unit_test(f16_bf16_rounding_blocks),
      cmocka_unit_test(binary_block_matches_scalar),
      cmocka_unit_test(transcendental_blocks_match_scalar),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
