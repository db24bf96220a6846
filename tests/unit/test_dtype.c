/* test_dtype.c — unit tests for tuner/hlo/hlo_dtype.
 *
 * Expected values are hand computed from the format definitions (bias,
 * widths, ties-to-even) or are documented facts (max finite values, XLA's
 * convert and reduce-precision rules); none is produced by the code under
 * test.  The brute-force tests check properties that follow from the
 * definitions: decode then encode is the identity, and the exact midpoint of
 * two neighbours rounds to the one with an even pattern. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "hlo/hlo_dtype.h"

static uint32_t fbits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float bitsf(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static uint64_t enc(hlo_etype t, double x) { return hlo_float_encode(t, x); }
static double dec(hlo_etype t, uint64_t b) { return hlo_float_decode(t, b); }

static const hlo_etype kSmallFloats[] = {
    HLO_F8E5M2,     HLO_F8E4M3,     HLO_F8E4M3FN, HLO_F8E4M3FNUZ, HLO_F8E5M2FNUZ,
    HLO_F8E4M3B11FNUZ, HLO_F8E3M4, HLO_F8E8M0FNU, HLO_F4E2M1FN,
};
#define N_SMALL (sizeof kSmallFloats / sizeof kSmallFloats[0])

/* ---- ties to even ------------------------------------------------------- */

static void test_bf16_ties(void **state) {
  (void)state;
  /* 1 + 2^-8 is halfway between bf16 0x3F80 (1) and 0x3F81: even is 0x3F80. */
  assert_int_equal(hlo_f32_to_bf16(bitsf(0x3F808000u)), 0x3F80);
  /* halfway between 0x3F81 and 0x3F82: even is 0x3F82. */
  assert_int_equal(hlo_f32_to_bf16(bitsf(0x3F818000u)), 0x3F82);
  /* a hair above the halfway point rounds up. */
  assert_int_equal(hlo_f32_to_bf16(bitsf(0x3F808001u)), 0x3F81);
  assert_int_equal(hlo_f32_to_bf16(bitsf(0x3F807FFFu)), 0x3F80);
  /* the same through the double encoder */
  assert_int_equal(enc(HLO_BF16, 1.0 + 0x1p-8), 0x3F80);
  assert_int_equal(enc(HLO_BF16, 1.0 + 3 * 0x1p-8), 0x3F82);
  assert_int_equal(enc(HLO_BF16, 1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
  assert_int_equal(enc(HLO_BF16, -(1.0 + 0x1p-8)), 0xBF80);
}

static void test_f16_ties(void **state) {
  (void)state;
  /* f16 spacing at 1 is 2^-10. */
  assert_int_equal(hlo_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
  assert_int_equal(hlo_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
  assert_int_equal(hlo_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  assert_int_equal(enc(HLO_F16, 1.0 + 0x1p-11), 0x3C00);
  assert_int_equal(enc(HLO_F16, 1.0 + 3 * 0x1p-11), 0x3C02);
  /* 1 + 2^-11 + 2^-40 is not representable in f32 but is in f64: one
   * rounding must see it is above the tie. */
  assert_int_equal(enc(HLO_F16, 1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  assert_int_equal(enc(HLO_F16, 2048.0 + 1.0), 0x6800); /* 2049: tie, 2048 even */
  assert_int_equal(enc(HLO_F16, 2048.0 + 3.0), 0x6802); /* 2051: tie to 2052 */
}

static void test_f8_ties(void **state) {
  (void)state;
  /* e4m3fn: 1.0 = 0x38, spacing 1/8. */
  assert_int_equal(enc(HLO_F8E4M3FN, 1.0625), 0x38);
  assert_int_equal(enc(HLO_F8E4M3FN, 1.1875), 0x3A);
  assert_int_equal(enc(HLO_F8E4M3FN, 1.0625 + 0x1p-30), 0x39);
  /* e5m2: 1.0 = 0x3C, spacing 1/4. */
  assert_int_equal(enc(HLO_F8E5M2, 1.125), 0x3C);
  assert_int_equal(enc(HLO_F8E5M2, 1.375), 0x3E);
  assert_int_equal(enc(HLO_F8E5M2, -1.375), 0xBE);
  /* e4m3fnuz: bias 8, 1.0 = 0x40. */
  assert_int_equal(enc(HLO_F8E4M3FNUZ, 1.0625), 0x40);
  assert_int_equal(enc(HLO_F8E4M3FNUZ, 1.1875), 0x42);
  /* e3m4: bias 3, 1.0 = 0x30, spacing 1/16. */
  assert_int_equal(enc(HLO_F8E3M4, 1.03125), 0x30);
  assert_int_equal(enc(HLO_F8E3M4, 1.09375), 0x32);
  /* f4e2m1fn values 0 .5 1 1.5 2 3 4 6: 2.5 ties to 2 (0x4), 3.5 to 4 (0x6),
   * 5 to 4 (0x6), 1.25 to 1 (0x2), 0.25 to 0 */
  assert_int_equal(enc(HLO_F4E2M1FN, 2.5), 0x4);
  assert_int_equal(enc(HLO_F4E2M1FN, 3.5), 0x6);
  assert_int_equal(enc(HLO_F4E2M1FN, 5.0), 0x6);
  assert_int_equal(enc(HLO_F4E2M1FN, 1.25), 0x2);
  assert_int_equal(enc(HLO_F4E2M1FN, 0.25), 0x0);
  assert_int_equal(enc(HLO_F4E2M1FN, 0.75), 0x2);
  assert_int_equal(enc(HLO_F4E2M1FN, -3.0), 0xD);
  /* e8m0fnu: 1.0 = 0x7F; ml_dtypes breaks ties upward. */
  assert_int_equal(enc(HLO_F8E8M0FNU, 1.0), 0x7F);
  assert_int_equal(enc(HLO_F8E8M0FNU, 1.5), 0x80);
  assert_int_equal(enc(HLO_F8E8M0FNU, 3.0), 0x81);
  assert_int_equal(enc(HLO_F8E8M0FNU, 0.75), 0x7F);
  assert_int_equal(enc(HLO_F8E8M0FNU, 1.4999), 0x7F);
  assert_int_equal(enc(HLO_F8E8M0FNU, 2.9), 0x80);
}

/* ---- subnormals, max values --------------------------------------------- */

static void test_subnormals(void **state) {
  (void)state;
  assert_int_equal(enc(HLO_F16, 0x1p-24), 0x0001);
  assert_true(dec(HLO_F16, 0x0001) == 0x1p-24);
  assert_true(hlo_f16_to_f32(0x0001) == 0x1p-24f);
  assert_int_equal(hlo_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(hlo_f32_to_f16(0x1p-25f), 0x0000);          /* tie to 0 */
  assert_int_equal(hlo_f32_to_f16(0x1p-25f + 0x1p-40f), 0x0001);
  assert_int_equal(hlo_f32_to_f16(3 * 0x1p-25f), 0x0002);      /* tie to 2 */
  assert_int_equal(hlo_f32_to_f16(-0x1p-24f), 0x8001);
  assert_int_equal(enc(HLO_F16, 0x3FFp-24), 0x03FF);           /* largest subnormal */
  assert_int_equal(enc(HLO_F16, 0x3FFp-24 + 0x1p-25), 0x0400); /* tie rounds into normal */
  assert_int_equal(enc(HLO_BF16, 0x1p-133), 0x0001);
  assert_true(dec(HLO_BF16, 0x0001) == 0x1p-133);
  assert_int_equal(hlo_f32_to_bf16(0x1p-133f), 0x0001);
  assert_int_equal(enc(HLO_F8E4M3FN, 0x1p-9), 0x01);
  assert_true(dec(HLO_F8E4M3FN, 0x01) == 0x1p-9);
  assert_true(dec(HLO_F8E4M3FN, 0x07) == 7 * 0x1p-9);
  assert_int_equal(enc(HLO_F8E4M3FN, 0x1p-10), 0x00);
  assert_int_equal(enc(HLO_F8E4M3FN, 3 * 0x1p-10), 0x02);
  assert_int_equal(enc(HLO_F8E5M2, 0x1p-16), 0x01);
  assert_true(dec(HLO_F8E5M2, 0x01) == 0x1p-16);
  assert_true(dec(HLO_F8E4M3FNUZ, 0x01) == 0x1p-10);
  assert_true(dec(HLO_F8E5M2FNUZ, 0x01) == 0x1p-17);
  assert_true(dec(HLO_F8E4M3B11FNUZ, 0x01) == 0x1p-13);
  assert_true(dec(HLO_F8E3M4, 0x01) == 0x1p-6);
  assert_true(dec(HLO_F8E4M3, 0x01) == 0x1p-9);
  assert_true(dec(HLO_F4E2M1FN, 0x1) == 0.5);
  /* a double subnormal is far below every format: rounds to signed zero */
  assert_int_equal(enc(HLO_F16, -0x1p-1074), 0x8000);
  assert_int_equal(enc(HLO_BF16, 0x1p-1074), 0x0000);
}

static void test_max_values(void **state) {
  (void)state;
  assert_true(dec(HLO_F16, 0x7BFF) == 65504.0);
  assert_int_equal(enc(HLO_F16, 65504.0), 0x7BFF);
  assert_true(dec(HLO_BF16, 0x7F7F) == 3.3895313892515355e38);
  assert_int_equal(enc(HLO_BF16, 3.3895313892515355e38), 0x7F7F);
  assert_true(dec(HLO_F8E4M3FN, 0x7E) == 448.0);
  assert_int_equal(enc(HLO_F8E4M3FN, 448.0), 0x7E);
  assert_true(dec(HLO_F8E5M2, 0x7B) == 57344.0);
  assert_int_equal(enc(HLO_F8E5M2, 57344.0), 0x7B);
  assert_true(dec(HLO_F8E4M3, 0x77) == 240.0);
  assert_true(dec(HLO_F8E3M4, 0x6F) == 15.5);
  assert_true(dec(HLO_F8E4M3FNUZ, 0x7F) == 240.0);
  assert_true(dec(HLO_F8E5M2FNUZ, 0x7F) == 57344.0);
  assert_true(dec(HLO_F8E4M3B11FNUZ, 0x7F) == 30.0);
  assert_true(dec(HLO_F8E8M0FNU, 0xFE) == 0x1p127);
  assert_true(dec(HLO_F8E8M0FNU, 0x00) == 0x1p-127);
  assert_true(dec(HLO_F8E8M0FNU, 0x7F) == 1.0);
  assert_true(dec(HLO_F4E2M1FN, 0x7) == 6.0);
  assert_true(dec(HLO_F4E2M1FN, 0xF) == -6.0);
  assert_true(dec(HLO_F32, 0x7F7FFFFF) == (double)3.40282346638528859811704183484516925e38f);
}

/* ---- overflow, NaN, inf, -0 --------------------------------------------- */

static void test_overflow(void **state) {
  (void)state;
  /* with inf: the RNE result above max becomes inf */
  assert_int_equal(enc(HLO_F16, 65519.99), 0x7BFF);
  assert_int_equal(enc(HLO_F16, 65520.0), 0x7C00); /* tie, rounds to 65536 */
  assert_int_equal(hlo_f32_to_f16(65520.0f), 0x7C00);
  assert_int_equal(hlo_f32_to_f16(65519.0f), 0x7BFF);
  assert_int_equal(enc(HLO_F16, -1e300), 0xFC00);
  assert_int_equal(enc(HLO_BF16, 3.4e38), 0x7F80);
  assert_int_equal(hlo_f32_to_bf16(3.4e38f), 0x7F80);
  assert_int_equal(enc(HLO_F8E5M2, 61439.0), 0x7B);
  assert_int_equal(enc(HLO_F8E5M2, 61440.0), 0x7C); /* tie to 65536 -> inf */
  assert_int_equal(enc(HLO_F8E4M3, 247.0), 0x77);
  assert_int_equal(enc(HLO_F8E4M3, 248.0), 0x78);   /* tie to 256 -> inf */
  assert_int_equal(enc(HLO_F8E3M4, 16.0), 0x70);
  /* e4m3fn: no inf, overflow is NaN with the sign (ml_dtypes infinity()) */
  assert_int_equal(enc(HLO_F8E4M3FN, 463.99), 0x7E);
  assert_int_equal(enc(HLO_F8E4M3FN, 464.0), 0x7E); /* tie: 448 has the even mantissa */
  assert_int_equal(enc(HLO_F8E4M3FN, 464.0 + 0x1p-40), 0x7F); /* rounds to 480 > 448 */
  assert_int_equal(enc(HLO_F8E4M3FN, -500.0), 0xFF);
  assert_int_equal(enc(HLO_F8E4M3FN, 1e300), 0x7F);
  /* fnuz: the single NaN 0x80, whatever the sign */
  assert_int_equal(enc(HLO_F8E4M3FNUZ, 247.99), 0x7F);
  assert_int_equal(enc(HLO_F8E4M3FNUZ, 248.0), 0x80);
  assert_int_equal(enc(HLO_F8E4M3FNUZ, -1000.0), 0x80);
  assert_int_equal(enc(HLO_F8E5M2FNUZ, 61440.0), 0x80);
  assert_int_equal(enc(HLO_F8E4M3B11FNUZ, 31.0), 0x80);
  assert_int_equal(enc(HLO_F8E4M3B11FNUZ, 30.9), 0x7F);
  /* e8m0: NaN */
  assert_int_equal(enc(HLO_F8E8M0FNU, 0x1p127), 0xFE);
  assert_int_equal(enc(HLO_F8E8M0FNU, 0x1.8p127), 0xFF);
  assert_int_equal(enc(HLO_F8E8M0FNU, 0x1p128), 0xFF);
  /* f4e2m1fn: saturates to +-6 */
  assert_int_equal(enc(HLO_F4E2M1FN, 7.0), 0x7);
  assert_int_equal(enc(HLO_F4E2M1FN, 1e300), 0x7);
  assert_int_equal(enc(HLO_F4E2M1FN, -100.0), 0xF);
}

static void test_nan_inf_zero(void **state) {
  (void)state;
  double nan = NAN, mnan = copysign(NAN, -1.0);
  /* IEEE-like: quiet NaN keeps the sign */
  assert_int_equal(enc(HLO_F16, nan) & 0x7C00, 0x7C00);
  assert_true((enc(HLO_F16, nan) & 0x03FF) != 0);
  assert_int_equal(enc(HLO_F16, mnan) & 0x8000, 0x8000);
  assert_int_equal(enc(HLO_BF16, mnan) & 0xFF80, 0xFF80);
  assert_true((enc(HLO_BF16, mnan) & 0x7F) != 0);
  assert_int_equal(hlo_f32_to_bf16(-NAN) & 0x8000, 0x8000);
  assert_true(isnan(hlo_bf16_to_f32(hlo_f32_to_bf16(NAN))));
  assert_int_equal(enc(HLO_F8E5M2, nan) & 0x7C, 0x7C);
  assert_true((enc(HLO_F8E5M2, mnan) & 0x83) > 0x80);
  assert_int_equal(enc(HLO_F16, INFINITY), 0x7C00);
  assert_int_equal(enc(HLO_F16, -INFINITY), 0xFC00);
  assert_int_equal(enc(HLO_F8E5M2, -INFINITY), 0xFC);
  assert_int_equal(enc(HLO_F8E4M3, INFINITY), 0x78);
  assert_int_equal(enc(HLO_F8E3M4, -INFINITY), 0xF0);
  /* no-inf types */
  assert_int_equal(enc(HLO_F8E4M3FN, nan), 0x7F);
  assert_int_equal(enc(HLO_F8E4M3FN, mnan), 0xFF);
  assert_int_equal(enc(HLO_F8E4M3FN, INFINITY), 0x7F);
  assert_int_equal(enc(HLO_F8E4M3FN, -INFINITY), 0xFF);
  assert_int_equal(enc(HLO_F8E4M3FNUZ, nan), 0x80);
  assert_int_equal(enc(HLO_F8E5M2FNUZ, mnan), 0x80);
  assert_int_equal(enc(HLO_F8E4M3B11FNUZ, -INFINITY), 0x80);
  assert_int_equal(enc(HLO_F8E8M0FNU, nan), 0xFF);
  assert_int_equal(enc(HLO_F8E8M0FNU, INFINITY), 0xFF);
  assert_int_equal(enc(HLO_F8E8M0FNU, -1.0), 0xFF);
  assert_int_equal(enc(HLO_F8E8M0FNU, -0.0), 0xFF);
  assert_int_equal(enc(HLO_F8E8M0FNU, 0.0), 0x00);
  assert_int_equal(enc(HLO_F8E8M0FNU, 0x1p-140), 0x00);
  assert_int_equal(enc(HLO_F4E2M1FN, nan), 0x8);
  assert_int_equal(enc(HLO_F4E2M1FN, mnan), 0x0);
  assert_int_equal(enc(HLO_F4E2M1FN, -INFINITY), 0xF);
  /* decode of specials */
  assert_true(isnan(dec(HLO_F8E4M3FN, 0x7F)));
  assert_true(isnan(dec(HLO_F8E4M3FN, 0xFF)) && signbit(dec(HLO_F8E4M3FN, 0xFF)));
  assert_true(dec(HLO_F8E4M3FN, 0x78) == 256.0); /* no inf in fn */
  assert_true(isinf(dec(HLO_F8E5M2, 0x7C)) && dec(HLO_F8E5M2, 0xFC) < 0);
  assert_true(isnan(dec(HLO_F8E5M2, 0x7D)));
  assert_true(isinf(dec(HLO_F8E4M3, 0x78)));
  assert_true(isnan(dec(HLO_F8E4M3, 0x79)));
  assert_true(isinf(dec(HLO_F8E3M4, 0x70)));
  assert_true(isnan(dec(HLO_F8E4M3FNUZ, 0x80)));
  assert_true(isnan(dec(HLO_F8E5M2FNUZ, 0x80)));
  assert_true(isnan(dec(HLO_F8E4M3B11FNUZ, 0x80)));
  assert_true(dec(HLO_F8E4M3FNUZ, 0xFF) == -240.0);
  assert_true(isnan(dec(HLO_F8E8M0FNU, 0xFF)));
  assert_true(isinf(dec(HLO_F16, 0xFC00)) && dec(HLO_F16, 0xFC00) < 0);
  assert_true(isnan(dec(HLO_F16, 0x7C01)));
  assert_true(isnan(hlo_f16_to_f32(0xFE00)) && signbit(hlo_f16_to_f32(0xFE00)));
  /* negative zero */
  assert_int_equal(enc(HLO_F16, -0.0), 0x8000);
  assert_int_equal(hlo_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(enc(HLO_BF16, -0.0), 0x8000);
  assert_int_equal(enc(HLO_F8E4M3FN, -0.0), 0x80);
  assert_int_equal(enc(HLO_F8E4M3FN, -0x1p-20), 0x80);
  assert_int_equal(enc(HLO_F8E5M2, -0.0), 0x80);
  assert_int_equal(enc(HLO_F4E2M1FN, -0.0), 0x8);
  assert_int_equal(enc(HLO_F8E4M3FNUZ, -0.0), 0x00);      /* fnuz: no -0 */
  assert_int_equal(enc(HLO_F8E5M2FNUZ, -0x1p-30), 0x00);
  assert_int_equal(enc(HLO_F8E4M3B11FNUZ, -0.0), 0x00);
  assert_true(signbit(dec(HLO_F8E4M3FN, 0x80)) && dec(HLO_F8E4M3FN, 0x80) == 0.0);
  assert_true(signbit(dec(HLO_F4E2M1FN, 0x8)));
}

/* ---- integers ----------------------------------------------------------- */

static void test_float_to_int(void **state) {
  (void)state;
  assert_int_equal(hlo_double_to_sint(1e10, 32), 2147483647);
  assert_int_equal(hlo_double_to_sint(-1e10, 32), INT32_MIN);
  assert_int_equal(hlo_double_to_uint(300.7, 8), 255);
  assert_int_equal(hlo_double_to_uint(-1.5, 8), 0);
  assert_int_equal(hlo_double_to_sint(1.75, 32), 1);
  assert_int_equal(hlo_double_to_sint(-1.75, 32), -1);
  assert_int_equal(hlo_double_to_sint(NAN, 32), 0);
  assert_int_equal(hlo_double_to_uint(NAN, 16), 0);
  assert_true(hlo_double_to_sint(0x1p63, 64) == INT64_MAX);
  assert_true(hlo_double_to_sint(-0x1p63, 64) == INT64_MIN);
  assert_true(hlo_double_to_sint(-INFINITY, 64) == INT64_MIN);
  assert_true(hlo_double_to_uint(1.5e19, 64) == 15000000000000000000ull);
  assert_true(hlo_double_to_uint(1e20, 64) == UINT64_MAX);
  assert_true(hlo_double_to_uint(INFINITY, 32) == UINT32_MAX);
  assert_int_equal(hlo_double_to_sint(9.9, 4), 7);
  assert_int_equal(hlo_double_to_sint(-9.9, 4), -8);
  assert_int_equal(hlo_double_to_uint(1.9, 1), 1);
  assert_int_equal(hlo_double_to_sint(-0.99, 1), 0);
  assert_int_equal(hlo_double_to_sint(-1.0, 1), -1);

  /* same rules through the array converter, from f32 and bf16 */
  float in[7] = {1e10f, -1e10f, 300.7f, -1.5f, 1.75f, NAN, -2.5f};
  int32_t s32[7];
  uint8_t u8[7];
  int8_t s4[7];
  uint8_t pred[7];
  assert_int_equal(hlo_convert_array(HLO_F32, in, HLO_S32, s32, 7), 0);
  assert_int_equal(s32[0], INT32_MAX);
  assert_int_equal(s32[1], INT32_MIN);
  assert_int_equal(s32[2], 300);
  assert_int_equal(s32[4], 1);
  assert_int_equal(s32[5], 0);
  assert_int_equal(s32[6], -2);
  assert_int_equal(hlo_convert_array(HLO_F32, in, HLO_U8, u8, 7), 0);
  assert_int_equal(u8[2], 255);
  assert_int_equal(u8[3], 0);
  assert_int_equal(u8[4], 1);
  assert_int_equal(u8[5], 0);
  assert_int_equal(hlo_convert_array(HLO_F32, in, HLO_S4, s4, 7), 0);
  assert_int_equal(s4[0], 7);
  assert_int_equal(s4[1], -8);
  assert_int_equal(s4[6], -2);
  /* to pred: x != 0, so NaN is true */
  assert_int_equal(hlo_convert_array(HLO_F32, in, HLO_PRED, pred, 7), 0);
  assert_int_equal(pred[5], 1);
  float zeros[2] = {0.0f, -0.0f};
  assert_int_equal(hlo_convert_array(HLO_F32, zeros, HLO_PRED, pred, 2), 0);
  assert_int_equal(pred[0], 0);
  assert_int_equal(pred[1], 0);
  uint16_t bf[2] = {0x4049 /* 3.140625 */, 0xC0B0 /* -5.5 */};
  int64_t s64[2];
  assert_int_equal(hlo_convert_array(HLO_BF16, bf, HLO_S64, s64, 2), 0);
  assert_int_equal(s64[0], 3);
  assert_int_equal(s64[1], -5);
  double big[2] = {1e30, -1e30};
  uint64_t u64[2];
  assert_int_equal(hlo_convert_array(HLO_F64, big, HLO_U64, u64, 2), 0);
  assert_true(u64[0] == UINT64_MAX && u64[1] == 0);
}

static void test_int_wrap(void **state) {
  (void)state;
  int32_t a[6] = {300, -129, 17, 18, -1, 8};
  int8_t s8[6], s4[6], s2[6], s1[6];
  uint8_t u4[6], u1[6], pred[6];
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_S8, s8, 6), 0);
  assert_int_equal(s8[0], 44);
  assert_int_equal(s8[1], 127);
  assert_int_equal(s8[4], -1);
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_S4, s4, 6), 0);
  assert_int_equal(s4[2], 1);   /* 17 = 0b1'0001 */
  assert_int_equal(s4[3], 2);
  assert_int_equal(s4[5], -8);  /* 8 = 0b1000 */
  assert_int_equal(s4[0], -4);  /* 300 = 0x12C, low nibble 0xC */
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_U4, u4, 6), 0);
  assert_int_equal(u4[3], 2);   /* 18 = 0b1'0010 */
  assert_int_equal(u4[4], 15);
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_S2, s2, 6), 0);
  assert_int_equal(s2[3], -2);  /* 18: low bits 10 */
  assert_int_equal(s2[2], 1);
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_S1, s1, 6), 0);
  assert_int_equal(s1[2], -1);
  assert_int_equal(s1[3], 0);
  assert_int_equal(hlo_convert_array(HLO_S32, a, HLO_U1, u1, 6), 0);
  assert_int_equal(u1[0], 0);
  assert_int_equal(u1[1], 1);
  int32_t z[3] = {0, 5, -1};
  assert_int_equal(hlo_convert_array(HLO_S32, z, HLO_PRED, pred, 3), 0);
  assert_int_equal(pred[0], 0);
  assert_int_equal(pred[1], 1);
  assert_int_equal(pred[2], 1);
  /* widening keeps the value; sub-byte signed sources are sign-extended */
  int8_t n4[2] = {-8, 7};
  int64_t w[2];
  assert_int_equal(hlo_convert_array(HLO_S4, n4, HLO_S64, w, 2), 0);
  assert_int_equal(w[0], -8);
  assert_int_equal(w[1], 7);
  uint16_t u16[2];
  assert_int_equal(hlo_convert_array(HLO_S4, n4, HLO_U16, u16, 2), 0);
  assert_int_equal(u16[0], 0xFFF8);
  uint64_t umax = UINT64_MAX;
  int8_t m1;
  assert_int_equal(hlo_convert_array(HLO_U64, &umax, HLO_S8, &m1, 1), 0);
  assert_int_equal(m1, -1);
  int64_t sm;
  assert_int_equal(hlo_convert_array(HLO_U64, &umax, HLO_S64, &sm, 1), 0);
  assert_int_equal(sm, -1);
  /* pred source: any nonzero byte reads as 1 */
  uint8_t p[3] = {0, 1, 7};
  float pf[3];
  int32_t pi[3];
  assert_int_equal(hlo_convert_array(HLO_PRED, p, HLO_F32, pf, 3), 0);
  assert_true(pf[0] == 0.0f && pf[1] == 1.0f && pf[2] == 1.0f);
  assert_int_equal(hlo_convert_array(HLO_PRED, p, HLO_S32, pi, 3), 0);
  assert_int_equal(pi[2], 1);
  assert_int_equal((int64_t)hlo_int_wrap(HLO_S4, 17), 1);
  assert_int_equal(hlo_int_wrap(HLO_U4, 18), 2);
  assert_int_equal((int64_t)hlo_int_wrap(HLO_S8, (uint64_t)-129), 127);
  assert_int_equal(hlo_int_wrap(HLO_PRED, 256), 1);
}

static void test_int_to_float_single_rounding(void **state) {
  (void)state;
  /* 2^53 + 1 -> f32: f32 spacing at 2^53 is 2^30, nearest is 2^53. */
  int64_t v = ((int64_t)1 << 53) + 1;
  assert_int_equal(hlo_float_encode_s64(HLO_F32, v), fbits(0x1p53f));
  /* -> f64: tie between 2^53 and 2^53+2; even is 2^53. */
  assert_true(hlo_float_encode_s64(HLO_F64, v) == 0x4340000000000000ull);
  /* (1<<62)+(1<<38)+1: f32 spacing at 2^62 is 2^39, so this is just above
   * the midpoint and rounds up to 2^62+2^39.  Via double it would become
   * 2^62+2^38 (an exact tie) and then round down to 2^62. */
  v = ((int64_t)1 << 62) + ((int64_t)1 << 38) + 1;
  uint32_t want = fbits(0x1p62f + 0x1p39f);
  assert_int_equal(want, 0x5E800001u);
  assert_int_equal(hlo_float_encode_s64(HLO_F32, v), want);
  assert_int_equal(hlo_float_encode_s64(HLO_F32, -v), want | 0x80000000u);
  assert_int_equal(hlo_float_encode_u64(HLO_F32, (uint64_t)v), want);
  float f;
  assert_int_equal(hlo_convert_array(HLO_S64, &v, HLO_F32, &f, 1), 0);
  assert_int_equal(fbits(f), want);
  /* bf16: spacing at 2^62 is 2^55; 2^62+2^54+1 is above the midpoint.
   * Via double: 2^62+2^54 (tie) -> 2^62.  Correct: 2^62+2^55 = 0x5E81. */
  v = ((int64_t)1 << 62) + ((int64_t)1 << 54) + 1;
  assert_int_equal(hlo_float_encode_s64(HLO_BF16, v), 0x5E81);
  assert_int_equal(hlo_float_encode_s64(HLO_BF16, -v), 0xDE81);
  uint16_t b16;
  assert_int_equal(hlo_convert_array(HLO_S64, &v, HLO_BF16, &b16, 1), 0);
  assert_int_equal(b16, 0x5E81);
  /* u64 max -> f32 is 2^64 (0x5F800000); -> f16 overflows to inf. */
  assert_int_equal(hlo_float_encode_u64(HLO_F32, UINT64_MAX), 0x5F800000u);
  assert_int_equal(hlo_float_encode_u64(HLO_F16, UINT64_MAX), 0x7C00);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, INT64_MIN), 0xFC00);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, 65520), 0x7C00);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, 65519), 0x7BFF);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, 2049), 0x6800);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, 3), 0x4200);
  assert_int_equal(hlo_float_encode_s64(HLO_F16, 0), 0x0000);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E4M3FN, 464), 0x7E);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E4M3FN, 465), 0x7F);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E4M3FN, -448), 0xFE);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E4M3FNUZ, INT64_MIN), 0x80);
  assert_int_equal(hlo_float_encode_s64(HLO_F4E2M1FN, 5), 0x6);
  assert_int_equal(hlo_float_encode_s64(HLO_F4E2M1FN, -1000), 0xF);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E8M0FNU, 3), 0x81);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E8M0FNU, 5), 0x81);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E8M0FNU, -1), 0xFF);
  assert_int_equal(hlo_float_encode_s64(HLO_F8E8M0FNU, 0), 0x00);
  /* int arrays to f8 */
  int32_t ints[4] = {1, -2, 17, 1000};
  uint8_t f8[4];
  assert_int_equal(hlo_convert_array(HLO_S32, ints, HLO_F8E5M2, f8, 4), 0);
  assert_int_equal(f8[0], 0x3C);
  assert_int_equal(f8[1], 0xC0);
  assert_int_equal(f8[2], 0x4C); /* 17 -> 16 (spacing 4 there) */
  assert_int_equal(f8[3], 0x64); /* 1000 -> 1024 = 2^10: (10+15) << 2 */
}

/* ---- reduce precision --------------------------------------------------- */

static void test_reduce_precision(void **state) {
  (void)state;
  /* hand computed */
  assert_true(hlo_reduce_precision_f32(1.0f + 0x1p-8f, 8, 7) == 1.0f);
  assert_true(hlo_reduce_precision_f32(1.0f + 3 * 0x1p-8f, 8, 7) == 1.0f + 0x1p-6f);
  assert_true(hlo_reduce_precision(65519.0, 5, 10) == 65504.0);
  assert_true(isinf(hlo_reduce_precision(65520.0, 5, 10)));
  assert_true(hlo_reduce_precision(-65520.0, 5, 10) == -INFINITY);
  assert_true(hlo_reduce_precision(1.0 + 0x1p-11, 5, 10) == 1.0);
  assert_true(hlo_reduce_precision(0x1p-14, 5, 10) == 0x1p-14);
  /* XLA flushes the reduced format's subnormals to signed zero */
  assert_true(hlo_reduce_precision(0x1p-15, 5, 10) == 0.0);
  assert_true(signbit(hlo_reduce_precision(-0x1p-15, 5, 10)));
  /* ... but a value that rounds up into the smallest normal survives */
  assert_true(hlo_reduce_precision(0x1p-14 - 0x1p-30, 5, 10) == 0x1p-14);
  assert_true(isnan(hlo_reduce_precision(NAN, 5, 10)));
  assert_true(isnan(hlo_reduce_precision_f32(NAN, 8, 7)));
  assert_true(hlo_reduce_precision(NAN, 5, 0) == INFINITY); /* XLA: m == 0 */
  assert_true(hlo_reduce_precision(INFINITY, 5, 10) == INFINITY);
  assert_true(hlo_reduce_precision(3.0, 11, 52) == 3.0);
  assert_true(isnan(hlo_reduce_precision(1.0, 0, 3)));

  /* (8,7) on f32 equals a bf16 round trip; (5,10) equals an f16 round trip
   * on values in the f16 normal range. */
  const float vals[] = {1.0f,        1.0f + 0x1p-8f, 3.14159265f, -2.71828f, 1e-30f,
                        6.5504e4f,   123456.789f,    -0.1f,       3.3e38f,   0x1p-126f,
                        0x1.7fp-130f, 1e-3f,         0.33333334f, 65519.f,   -7.77e-5f};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    float x = vals[i];
    float rb = hlo_reduce_precision_f32(x, 8, 7);
    assert_int_equal(fbits(rb), fbits(hlo_bf16_to_f32(hlo_f32_to_bf16(x))));
    assert_true(hlo_reduce_precision((double)x, 8, 7) == hlo_bf16_to_f32(hlo_f32_to_bf16(x)) ||
                fabsf(x) < 0x1p-126f);
    if (fabsf(x) >= 0x1p-14f && fabsf(x) < 65520.f) {
      double rh = hlo_reduce_precision((double)x, 5, 10);
      assert_true(rh == (double)hlo_f16_to_f32(hlo_f32_to_f16(x)));
      assert_true(hlo_reduce_precision_f32(x, 5, 10) == hlo_f16_to_f32(hlo_f32_to_f16(x)));
    }
  }
}

/* ---- brute force -------------------------------------------------------- */

static void check_roundtrip16(hlo_etype t) {
  for (uint32_t p = 0; p < 65536; p++) {
    double d = dec(t, p);
    uint64_t back = enc(t, d);
    if (isnan(d)) {
      assert_true(isnan(dec(t, back)));
      assert_int_equal(back & 0x8000, p & 0x8000); /* sign kept */
    } else {
      assert_int_equal(back, p);
    }
    /* the inline helpers and the generic decoder agree */
    float f = t == HLO_BF16 ? hlo_bf16_to_f32((uint16_t)p) : hlo_f16_to_f32((uint16_t)p);
    uint16_t b2 = t == HLO_BF16 ? hlo_f32_to_bf16(f) : hlo_f32_to_f16(f);
    if (isnan(d)) {
      assert_true(isnan(f));
    } else {
      assert_true((double)f == d && !signbit(f) == !signbit(d));
      assert_int_equal(b2, p);
    }
  }
}

static void test_bruteforce_bf16_f16(void **state) {
  (void)state;
  check_roundtrip16(HLO_BF16);
  check_roundtrip16(HLO_F16);
  /* whole-array round trips through f32 and f64 */
  static uint16_t in[65536], back[65536];
  static float f32[65536];
  static double f64[65536];
  const hlo_etype ts[2] = {HLO_BF16, HLO_F16};
  for (int k = 0; k < 2; k++) {
    for (uint32_t p = 0; p < 65536; p++)
      in[p] = (uint16_t)p;
    assert_int_equal(hlo_convert_array(ts[k], in, HLO_F32, f32, 65536), 0);
    assert_int_equal(hlo_convert_array(HLO_F32, f32, ts[k], back, 65536), 0);
    for (uint32_t p = 0; p < 65536; p++)
      assert_true(back[p] == p || (isnan(f32[p]) && isnan(dec(ts[k], back[p]))));
    assert_int_equal(hlo_convert_array(ts[k], in, HLO_F64, f64, 65536), 0);
    assert_int_equal(hlo_convert_array(HLO_F64, f64, ts[k], back, 65536), 0);
    for (uint32_t p = 0; p < 65536; p++)
      assert_true(back[p] == p || (isnan(f64[p]) && isnan(dec(ts[k], back[p]))));
  }
}

static void test_bruteforce_f8(void **state) {
  (void)state;
  for (size_t k = 0; k < N_SMALL; k++) {
    hlo_etype t = kSmallFloats[k];
    uint32_t count = t == HLO_F4E2M1FN ? 16 : 256;
    uint8_t in[256], back[256];
    double d[256];
    for (uint32_t p = 0; p < count; p++) {
      double v = dec(t, p);
      uint64_t b = enc(t, v);
      if (isnan(v))
        assert_true(isnan(dec(t, b)));
      else
        assert_int_equal(b, p);
      in[p] = (uint8_t)p;
    }
    /* and through arrays: f8 -> f64 -> f8, f8 -> f32 -> f8 */
    assert_int_equal(hlo_convert_array(t, in, HLO_F64, d, count), 0);
    assert_int_equal(hlo_convert_array(HLO_F64, d, t, back, count), 0);
    for (uint32_t p = 0; p < count; p++)
      assert_true(back[p] == p || isnan(d[p]));
    float f[256];
    assert_int_equal(hlo_convert_array(t, in, HLO_F32, f, count), 0);
    assert_int_equal(hlo_convert_array(HLO_F32, f, t, back, count), 0);
    for (uint32_t p = 0; p < count; p++)
      assert_true(back[p] == p || isnan(f[p]));
  }
}

/* The exact midpoint of two neighbouring finite values encodes to the one
 * whose pattern is even; a nudge either way picks the nearer one.  (f8e8m0fnu
 * is excluded: its ties go up, checked in test_f8_ties.) */
static void check_midpoints(hlo_etype t, uint32_t count) {
  for (uint32_t p = 0; p + 1 < count; p++) {
    uint32_t sign = count == 16 ? 0x8 : (count == 256 ? 0x80 : 0x8000);
    if ((p & sign) != ((p + 1) & sign))
      continue;
    double a = dec(t, p), b = dec(t, p + 1);
    if (!isfinite(a) || !isfinite(b))
      continue;
    double mid = (a + b) / 2; /* exact: both have few significant bits */
    uint32_t even = (p & 1) ? p + 1 : p;
    if (t == HLO_F8E4M3FNUZ || t == HLO_F8E5M2FNUZ || t == HLO_F8E4M3B11FNUZ)
      if (even == 0x80) /* -0 does not exist: the tie at -0 rounds to +0 */
        even = 0x00;
    assert_int_equal(enc(t, mid), even);
    double lo = fabs(a) < fabs(b) ? a : b, hi = fabs(a) < fabs(b) ? b : a;
    uint32_t plo = lo == a ? p : p + 1, phi = lo == a ? p + 1 : p;
    double nudge = fabs(hi - lo) * 0x1p-20;
    double toward_lo = mid + (lo < hi ? -nudge : nudge);
    double toward_hi = mid + (lo < hi ? nudge : -nudge);
    uint32_t want_lo = plo;
    if ((t == HLO_F8E4M3FNUZ || t == HLO_F8E5M2FNUZ || t == HLO_F8E4M3B11FNUZ) && plo == 0x80)
      want_lo = 0;
    assert_int_equal(enc(t, toward_lo), want_lo);
    assert_int_equal(enc(t, toward_hi), phi);
  }
}

static void test_midpoints_all_formats(void **state) {
  (void)state;
  check_midpoints(HLO_F16, 65536);
  check_midpoints(HLO_BF16, 65536);
  for (size_t k = 0; k < N_SMALL; k++) {
    hlo_etype t = kSmallFloats[k];
    if (t == HLO_F8E8M0FNU)
      continue;
    check_midpoints(t, t == HLO_F4E2M1FN ? 16 : 256);
  }
  /* the fast f32 -> f16 / bf16 paths agree with the generic encoder on
   * midpoints (all representable in f32) */
  for (uint32_t p = 0; p < 0x7BFF; p++) {
    float mid = (float)((dec(HLO_F16, p) + dec(HLO_F16, p + 1)) / 2);
    assert_int_equal(hlo_f32_to_f16(mid), enc(HLO_F16, mid));
    assert_int_equal(hlo_f32_to_f16(-mid), enc(HLO_F16, -(double)mid));
  }
  for (uint32_t p = 0; p < 0x7F7F; p++) {
    float mid = (float)((dec(HLO_BF16, p) + dec(HLO_BF16, p + 1)) / 2);
    assert_int_equal(hlo_f32_to_bf16(mid), enc(HLO_BF16, mid));
  }
}

/* ---- arrays ------------------------------------------------------------- */

static void test_array_complex_and_misc(void **state) {
  (void)state;
  float c64[4] = {1.5f, 2.5f, -3.75f, 9.0f};
  float re[2];
  int32_t ri[2];
  double c128[4];
  assert_int_equal(hlo_convert_array(HLO_C64, c64, HLO_F32, re, 2), 0);
  assert_true(re[0] == 1.5f && re[1] == -3.75f);
  assert_int_equal(hlo_convert_array(HLO_C64, c64, HLO_S32, ri, 2), 0);
  assert_int_equal(ri[0], 1);
  assert_int_equal(ri[1], -3);
  assert_int_equal(hlo_convert_array(HLO_C64, c64, HLO_C128, c128, 2), 0);
  assert_true(c128[0] == 1.5 && c128[1] == 2.5 && c128[2] == -3.75 && c128[3] == 9.0);
  double r[2] = {0.1, -2.0};
  float out64[4];
  assert_int_equal(hlo_convert_array(HLO_F64, r, HLO_C64, out64, 2), 0);
  assert_true(out64[0] == 0.1f && out64[1] == 0.0f && out64[2] == -2.0f && out64[3] == 0.0f);
  int16_t i16[2] = {-7, 300};
  assert_int_equal(hlo_convert_array(HLO_S16, i16, HLO_C128, c128, 2), 0);
  assert_true(c128[0] == -7.0 && c128[1] == 0.0 && c128[2] == 300.0 && c128[3] == 0.0);
  uint16_t bf[2];
  assert_int_equal(hlo_convert_array(HLO_C128, c128, HLO_BF16, bf, 2), 0);
  assert_int_equal(bf[0], 0xC0E0); /* -7 */
  assert_int_equal(bf[1], 0x4396); /* 300 */

  /* f8 <-> 16-bit floats directly */
  uint8_t e5[3] = {0x3C, 0x7B, 0xFC}; /* 1, 57344, -inf */
  uint16_t h[3];
  assert_int_equal(hlo_convert_array(HLO_F8E5M2, e5, HLO_F16, h, 3), 0);
  assert_int_equal(h[0], 0x3C00);
  assert_int_equal(h[1], 0x7B00);
  assert_int_equal(h[2], 0xFC00);
  uint8_t e4[3];
  assert_int_equal(hlo_convert_array(HLO_F16, h, HLO_F8E4M3FN, e4, 3), 0);
  assert_int_equal(e4[0], 0x38);
  assert_int_equal(e4[1], 0x7F); /* 57344 overflows e4m3fn: NaN */
  assert_int_equal(e4[2], 0xFF); /* -inf: NaN with sign */
  uint8_t f4[2] = {0x07, 0x09}; /* 6, -0.5 */
  double fd[2];
  assert_int_equal(hlo_convert_array(HLO_F4E2M1FN, f4, HLO_F64, fd, 2), 0);
  assert_true(fd[0] == 6.0 && fd[1] == -0.5);

  /* more than one chunk */
  enum { N = 1000 };
  static int32_t big[N];
  static double bd[N];
  static uint16_t bh[N];
  for (int i = 0; i < N; i++)
    big[i] = i * 3 - 1500;
  assert_int_equal(hlo_convert_array(HLO_S32, big, HLO_F64, bd, N), 0);
  for (int i = 0; i < N; i++)
    assert_true(bd[i] == (double)(i * 3 - 1500));
  assert_int_equal(hlo_convert_array(HLO_S32, big, HLO_F16, bh, N), 0);
  for (int i = 0; i < N; i++) /* |v| <= 1500 < 2048: exact in f16 */
    assert_true(hlo_f16_to_f32(bh[i]) == (float)(i * 3 - 1500));

  /* same type copies; zero length; errors */
  int32_t cp[2];
  assert_int_equal(hlo_convert_array(HLO_S32, big, HLO_S32, cp, 2), 0);
  assert_int_equal(cp[1], big[1]);
  assert_int_equal(hlo_convert_array(HLO_F32, NULL, HLO_F16, NULL, 0), 0);
  assert_int_equal(hlo_convert_array(HLO_TOKEN, big, HLO_F32, cp, 1), -1);
  assert_int_equal(hlo_convert_array(HLO_F32, big, HLO_TUPLE, cp, 1), -1);
  assert_int_equal(hlo_convert_array(HLO_OPAQUE, big, HLO_S32, cp, 1), -1);
  assert_int_equal(hlo_convert_array(HLO_INVALID, big, HLO_S32, cp, 1), -1);
  assert_int_equal(hlo_convert_array((hlo_etype)999, big, HLO_S32, cp, 1), -1);
  assert_int_equal(hlo_convert_array(HLO_S32, NULL, HLO_F32, cp, 1), -1);
  assert_int_equal(hlo_float_encode(HLO_S32, 1.0), 0);
  assert_true(isnan(hlo_float_decode(HLO_PRED, 1)));
  assert_true(hlo_float_encode(HLO_F64, -2.0) == 0xC000000000000000ull);
  assert_true(hlo_float_decode(HLO_F32, 0x3FC00000u) == 1.5);
}

/* The integer ranges, by hand: two's complement for signed types, 2^bits - 1
 * for unsigned ones (u64 clipped to INT64_MAX, as documented). */
static void test_int_range(void **state) {
  (void)state;
  static const struct { hlo_etype t; int64_t lo, hi; } want[] = {
      {HLO_S4, -8, 7},          {HLO_U4, 0, 15},           {HLO_S8, -128, 127},
      {HLO_U8, 0, 255},         {HLO_S16, -32768, 32767},  {HLO_U16, 0, 65535},
      {HLO_S32, -2147483648LL, 2147483647LL},              {HLO_U32, 0, 4294967295LL},
      {HLO_S64, INT64_MIN, INT64_MAX},                     {HLO_U64, 0, INT64_MAX},
      {HLO_PRED, 0, 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int64_t lo = 1, hi = -1;
    assert_true(hlo_etype_int_range(want[i].t, &lo, &hi));
    if (lo != want[i].lo || hi != want[i].hi)
      fail_msg("%s: [%lld, %lld], want [%lld, %lld]", hlo_etype_name(want[i].t), (long long)lo, (long long)hi,
               (long long)want[i].lo, (long long)want[i].hi);
  }
  int64_t lo = 1, hi = 1;
  assert_false(hlo_etype_int_range(HLO_F32, &lo, &hi));
  assert_true(lo == 0 && hi == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_ties),
      cmocka_unit_test(test_f16_ties),
      cmocka_unit_test(test_f8_ties),
      cmocka_unit_test(test_subnormals),
      cmocka_unit_test(test_max_values),
      cmocka_unit_test(test_int_range),
      cmocka_unit_test(test_overflow),
      cmocka_unit_test(test_nan_inf_zero),
      cmocka_unit_test(test_float_to_int),
      cmocka_unit_test(test_int_wrap),
      cmocka_unit_test(test_int_to_float_single_rounding),
      cmocka_unit_test(test_reduce_precision),
      cmocka_unit_test(test_bruteforce_bf16_f16),
      cmocka_unit_test(test_bruteforce_f8),
      cmocka_unit_test(test_midpoints_all_formats),
      cmocka_unit_test(test_array_complex_and_misc),
  };
  return cmocka_run_group_tests_name("hlo_dtype", tests, NULL, NULL);
}
