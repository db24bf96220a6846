/* test_compare.c — the comparators: NaN, Inf, -0, subnormals, ulp edges,
 * bounding boxes and histograms, each against hand-worked expectations. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/compare.h"

static hlo_value *f32(int rank, const int64_t *dims, const float *v) {
  hlo_value *x = hlo_value_array(HLO_F32, rank, dims);
  memcpy(x->data, v, sizeof(float) * (size_t)x->count);
  return x;
}

static const chk_tol TIGHT = {0.0, 0.0};

static void identical_arrays_match_with_zero_metrics(void **state) {
  (void)state;
  int64_t d[1] = {4};
  float v[4] = {1, -2, 3.5f, 0};
  hlo_value *a = f32(1, d, v), *b = f32(1, d, v);
  chk_metrics m;
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 0);
  assert_int_equal(m.count, 4);
  assert_true(m.max_abs == 0 && m.max_rel == 0 && m.rms == 0);
  assert_int_equal(m.max_ulp, 0);
  assert_int_equal(m.peak_index, -1);
  assert_int_equal(m.hist[0], 4);
  /* side stats: min -2, max 3.5, mean 2.5/4 */
  assert_true(m.a.min == -2 && m.a.max == 3.5 && m.a.mean == 0.625);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void tolerance_rule_uses_atol_plus_rtol_of_expected(void **state) {
  (void)state;
  int64_t d[1] = {3};
  float va[3] = {1.0f, 100.5f, 10.0f};
  float vb[3] = {1.0f, 100.0f, 10.2f};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  chk_metrics m;
  /* |100.5-100| = 0.5 <= 0 + 0.01*100 = 1 passes; |10-10.2| = 0.2 > 0.102 fails */
  chk_tol tol = {0.0, 0.01};
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, tol, &m, NULL), 0);
  assert_int_equal(m.mismatches, 1);
  assert_int_equal(m.bbox_lo[0], 2);
  assert_int_equal(m.bbox_hi[0], 2);
  assert_true(m.max_abs == 0.5);           /* the largest error is the passing one */
  assert_int_equal(m.peak_index, 1);
  /* max_rel: 0.5/100 = 0.005 vs 0.2/10.2 ~ 0.0196 (computed in double from the f32 values) */
  assert_true(fabs(m.max_rel - fabs(10.0 - (double)10.2f) / (double)10.2f) < 1e-15);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void nan_rules(void **state) {
  (void)state;
  int64_t d[1] = {3};
  float va[3] = {NAN, NAN, 1.0f};
  float vb[3] = {NAN, 2.0f, NAN};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  chk_metrics m;
  chk_tol loose = {1e9, 1e9};
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, loose, &m, NULL), 0);
  assert_int_equal(m.excluded, 1);        /* NaN at the same position on both sides */
  assert_int_equal(m.nan_mismatches, 2);  /* one-sided NaN mismatches whatever the tolerance */
  assert_int_equal(m.mismatches, 2);
  assert_int_equal(m.hist[CHK_HIST_BUCKETS - 1], 2);
  assert_int_equal(m.bbox_lo[0], 1);
  assert_int_equal(m.bbox_hi[0], 2);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void inf_rules(void **state) {
  (void)state;
  int64_t d[1] = {4};
  float va[4] = {INFINITY, -INFINITY, INFINITY, 1e30f};
  float vb[4] = {INFINITY, INFINITY, 3.0f, INFINITY};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  chk_metrics m;
  chk_tol loose = {1e38, 1e9};
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, loose, &m, NULL), 0);
  assert_int_equal(m.excluded, 1);       /* same-signed Inf */
  assert_int_equal(m.inf_mismatches, 3); /* opposite signs, and one-sided twice */
  assert_int_equal(m.mismatches, 3);
  assert_int_equal(m.nan_mismatches, 0);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void negative_zero(void **state) {
  (void)state;
  int64_t d[1] = {1};
  float va[1] = {-0.0f}, vb[1] = {0.0f};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  chk_metrics m;
  /* Numerically equal: passes a tolerance check with zero tolerance ... */
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 0);
  assert_int_equal(m.max_ulp, 1); /* +0 and -0 are adjacent */
  /* ... but not a bitwise check. */
  assert_int_equal(chk_compare(a, b, CHK_RULE_BITWISE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 1);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void subnormals_and_ulps(void **state) {
  (void)state;
  /* Smallest f32 subnormal 2^-149 vs +0: one ulp apart.  vs -2^-149: -0
   * and +0 lie strictly between them, so 2 + 1 = 3 by the documented rule. */
  assert_int_equal(chk_ulp_distance(HLO_F32, ldexp(1, -149), 0.0), 1);
  assert_int_equal(chk_ulp_distance(HLO_F32, ldexp(1, -149), -ldexp(1, -149)), 3);
  /* 1.0 and the next f32 (1 + 2^-23): 1 ulp; 1.0 and 1 + 2^-22: 2. */
  assert_int_equal(chk_ulp_distance(HLO_F32, 1.0, 1.0 + ldexp(1, -23)), 1);
  assert_int_equal(chk_ulp_distance(HLO_F32, 1.0, 1.0 + ldexp(1, -22)), 2);
  /* Across a binade: 1 - 2^-24 is the f32 just below 1. */
  assert_int_equal(chk_ulp_distance(HLO_F32, 1.0 - ldexp(1, -24), 1.0), 1);
  /* Largest finite to +inf is one ulp. */
  assert_int_equal(chk_ulp_distance(HLO_F32, 3.4028234663852886e38, INFINITY), 1);
  /* bf16: 1 and 1 + 2^-7 are adjacent; f16: 1 and 1 + 2^-10. */
  assert_int_equal(chk_ulp_distance(HLO_BF16, 1.0, 1.0 + ldexp(1, -7)), 1);
  assert_int_equal(chk_ulp_distance(HLO_F16, 1.0, 1.0 + ldexp(1, -10)), 1);
  assert_true(chk_ulp_distance(HLO_F32, NAN, 1.0) == UINT64_MAX);

  int64_t d[1] = {2};
  float va[2] = {0x1p-149f, 1.0f}, vb[2] = {0.0f, 0x1.000004p0f};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  chk_metrics m;
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 2);
  assert_int_equal(m.max_ulp, 2); /* 1.0 vs 1 + 2^-22 */
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void bounding_box_and_peak_in_2d(void **state) {
  (void)state;
  int64_t d[2] = {3, 4};
  float va[12] = {0}, vb[12] = {0};
  va[1 * 4 + 1] = 1.0f;  /* (1,1) off by 1 */
  va[2 * 4 + 3] = -5.0f; /* (2,3) off by 5: the peak */
  hlo_value *a = f32(2, d, va), *b = f32(2, d, vb);
  chk_metrics m;
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 2);
  assert_int_equal(m.bbox_lo[0], 1);
  assert_int_equal(m.bbox_lo[1], 1);
  assert_int_equal(m.bbox_hi[0], 2);
  assert_int_equal(m.bbox_hi[1], 3);
  assert_int_equal(m.peak_index, 11);
  assert_int_equal(m.peak[0], 2);
  assert_int_equal(m.peak[1], 3);
  assert_true(m.max_abs == 5.0);
  /* rms over 12 pairs: sqrt((1 + 25) / 12) */
  assert_true(fabs(m.rms - sqrt(26.0 / 12.0)) < 1e-15);
  /* histogram: 10 exact; |err| 1 is bucket floor(log10 1)+14 = 14; 5 too */
  assert_int_equal(m.hist[0], 10);
  assert_int_equal(m.hist[14], 2);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void integers_are_always_bitwise(void **state) {
  (void)state;
  int64_t d[1] = {3};
  hlo_value *a = hlo_value_array(HLO_S32, 1, d), *b = hlo_value_array(HLO_S32, 1, d);
  int32_t x[3] = {1, 2, 3}, y[3] = {1, 2, 4};
  memcpy(a->data, x, sizeof x);
  memcpy(b->data, y, sizeof y);
  chk_metrics m;
  chk_tol loose = {10, 10};
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, loose, &m, NULL), 0);
  assert_int_equal(m.mismatches, 1);
  assert_true(m.max_abs == 1.0);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void bf16_compare_uses_its_own_ulps(void **state) {
  (void)state;
  int64_t d[1] = {1};
  hlo_value *a = hlo_value_array(HLO_BF16, 1, d), *b = hlo_value_array(HLO_BF16, 1, d);
  uint16_t x = 0x3F80, y = 0x3F82; /* 1.0 and 1 + 2^-6: two bf16 ulps */
  memcpy(a->data, &x, 2);
  memcpy(b->data, &y, 2);
  chk_metrics m;
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.max_ulp, 2);
  assert_true(m.max_abs == ldexp(1, -6));
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void shape_mismatch_is_an_error(void **state) {
  (void)state;
  int64_t d1[1] = {3}, d2[1] = {4};
  hlo_value *a = hlo_value_array(HLO_F32, 1, d1), *b = hlo_value_array(HLO_F32, 1, d2);
  chk_metrics m;
  hlo_error err;
  assert_int_equal(chk_compare(a, b, CHK_RULE_BITWISE, TIGHT, &m, &err), -1);
  assert_non_null(strstr(err.msg, "dimension 0"));
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void per_element_tolerance_map(void **state) {
  (void)state;
  int64_t d[1] = {3};
  float va[3] = {1.5f, 2.5f, 3.0f}, vb[3] = {1.0f, 2.0f, 3.0f};
  hlo_value *a = f32(1, d, va), *b = f32(1, d, vb);
  /* element 0 may be off by 0.5 (passes exactly at the bound), element 1
   * by 0.25 (off by 0.5: fails), element 2 by nothing (equal: passes). */
  const double map[3] = {0.5, 0.25, 0.0};
  chk_metrics m;
  assert_int_equal(chk_compare_map(a, b, CHK_RULE_TOLERANCE, TIGHT, map, &m, NULL), 0);
  assert_int_equal(m.mismatches, 1);
  assert_int_equal(m.bbox_lo[0], 1);
  assert_int_equal(m.bbox_hi[0], 1);
  /* Without the map both differing elements fail. */
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
  assert_int_equal(m.mismatches, 2);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

/* A complex element is within tolerance only when both its parts are: an
 * error in the imaginary part alone, behind an equal real part, is a
 * mismatch (the comparison once looked at the real part only). */
static void complex_imaginary_part_counts(void **state) {
  (void)state;
  int64_t d[1] = {3};
  /* (re, im) pairs: equal; imaginary off by 0.5; real off by 0.25 */
  float va[6] = {1, 2, 3, 4.5f, 5.25f, 6};
  float vb[6] = {1, 2, 3, 4, 5, 6};
  hlo_value *a = hlo_value_array(HLO_C64, 1, d), *b = hlo_value_array(HLO_C64, 1, d);
  memcpy(a->data, va, sizeof va);
  memcpy(b->data, vb, sizeof vb);
  chk_metrics m;
  chk_tol tol = {0.3, 0.0}; /* admits 0.25, not 0.5 */
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, tol, &m, NULL), 0);
  assert_int_equal(m.mismatches, 1);
  assert_int_equal(m.bbox_lo[0], 1);
  assert_int_equal(m.bbox_hi[0], 1);
  assert_true(m.max_abs == 0.5);
  assert_int_equal(m.peak_index, 1);
  hlo_value_unref(a);
  hlo_value_unref(b);
}

/* The histogram's buckets, the ulp maximum and the side statistics of a
 * chunk where most pairs are equal and some differ, against the header's
 * definitions worked here: bucket floor(log10|a-b|) + 14, clamped to
 * 1..16; ulps from chk_ulp_distance pair by pair; each side's mean as the
 * plain sum of its finite values in order, over their count. */
static int bucket_by_definition(double err) {
  if (err == 0)
    return 1;
  int b = (int)floor(log10(err)) + 14;
  return b < 1 ? 1 : b > CHK_HIST_BUCKETS - 1 ? CHK_HIST_BUCKETS - 1 : b;
}

static void histogram_by_decade(void **state) {
  (void)state;
  /* By hand first: 0.5 -> -1 + 14; 1 -> 14; 100 -> 16 (2 + 14); 99.99
   * -> 15; the float nearest 0.1 (0.1000000015) -> 13; the float below
   * it (0.0999999940) -> 12; 2e-13 -> 1; 1e5 -> 16 (clamped). */
  const float by_hand[] = {0.5f, 1.0f, 100.0f, 99.99f, 0.1f, 0.099999994f, 2e-13f, 1e5f};
  const int want[] = {13, 14, 16, 15, 13, 12, 1, 16};
  for (size_t k = 0; k < sizeof by_hand / sizeof *by_hand; k++) {
    int64_t d[1] = {1};
    float zero = 0;
    hlo_value *a = f32(1, d, &by_hand[k]), *b = f32(1, d, &zero);
    chk_metrics m;
    assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, TIGHT, &m, NULL), 0);
    for (int i = 0; i < CHK_HIST_BUCKETS; i++)
      if (m.hist[i] != (i == want[k]))
        fail_msg("error %.9g: bucket %d holds %lld, want bucket %d", (double)by_hand[k], i, (long long)m.hist[i],
                 want[k]);
    hlo_value_unref(a);
    hlo_value_unref(b);
  }
  /* Then 5,000 pairs: two in three equal, the others apart by errors
   * around every power of ten from 1e-14 to 1e3 (a few ulps either side
   * of each), so most chunks hold both kinds. */
  enum { N = 5000 };
  int64_t d[1] = {N};
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
  assert_non_null(x);
  assert_non_null(y);
  uint64_t r = 12345;
  for (int i = 0; i < N; i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((int64_t)(r >> 40) - (1 << 23)) / (float)(1 << (int)(r & 7));
    y[i] = x[i];
    if (i % 3 == 2) {
      double p = pow(10, (double)((int)(r >> 20) % 18 - 14));
      float e = (float)p;
      for (int u = (int)((r >> 8) % 7) - 3; u > 0; u--)
        e = nextafterf(e, INFINITY);
      for (int u = (int)((r >> 8) % 7) - 3; u < 0; u++)
        e = nextafterf(e, 0);
      y[i] = 0;
      x[i] = (r >> 30) & 1 ? e : -e;
    }
  }
  hlo_value *a = f32(1, d, x), *b = f32(1, d, y);
  int64_t hist[CHK_HIST_BUCKETS] = {0};
  uint64_t max_ulp = 0;
  double suma = 0;
  for (int i = 0; i < N; i++) {
    double err = fabs((double)x[i] - (double)y[i]);
    hist[x[i] == y[i] ? 0 : bucket_by_definition(err)]++;
    uint64_t u = chk_ulp_distance(HLO_F32, x[i], y[i]);
    max_ulp = u > max_ulp ? u : max_ulp;
    suma += x[i];
  }
  chk_metrics m;
  chk_tol tol = {1e-3, 0};
  assert_int_equal(chk_compare(a, b, CHK_RULE_TOLERANCE, tol, &m, NULL), 0);
  for (int i = 0; i < CHK_HIST_BUCKETS; i++)
    if (m.hist[i] != hist[i])
      fail_msg("bucket %d: %lld, by definition %lld", i, (long long)m.hist[i], (long long)hist[i]);
  assert_true(m.max_ulp == max_ulp);
  assert_true(m.a.mean == suma / N);
  hlo_value_unref(a);
  hlo_value_unref(b);
  free(x);
  free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(identical_arrays_match_with_zero_metrics),
      cmocka_unit_test(complex_imaginary_part_counts),
      cmocka_unit_test(tolerance_rule_uses_atol_plus_rtol_of_expected),
      cmocka_unit_test(nan_rules),
      cmocka_unit_test(inf_rules),
      cmocka_unit_test(negative_zero),
      cmocka_unit_test(subnormals_and_ulps),
      cmocka_unit_test(bounding_box_and_peak_in_2d),
      cmocka_unit_test(integers_are_always_bitwise),
      cmocka_unit_test(bf16_compare_uses_its_own_ulps),
      cmocka_unit_test(shape_mismatch_is_an_error),
      cmocka_unit_test(per_element_tolerance_map),
      cmocka_unit_test(histogram_by_decade),
  };
  return cmocka_run_group_tests_name("compare", tests, NULL, NULL);
}
