/* test_tolerance.c — the derived tolerance: hand-computed values of the
 * documented formula, and the property it exists for: legitimate
 * reorderings of real sums pass, injected bugs of the kinds the defect
 * catalog models do not. */
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/tolerance.h"

static void unit_roundoffs(void **state) {
  (void)state;
  assert_true(chk_unit_roundoff(HLO_F32) == ldexp(1, -24));
  assert_true(chk_unit_roundoff(HLO_BF16) == ldexp(1, -8));
  assert_true(chk_unit_roundoff(HLO_F16) == ldexp(1, -11));
  assert_true(chk_unit_roundoff(HLO_F64) == ldexp(1, -53));
  assert_true(chk_unit_roundoff(HLO_S32) == 0);
}

/* gamma_d = d u / (1 - d u), by hand. */
static double gam(double d, double u) { return d * u / (1.0 - d * u); }

static bool close_to(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static void formula_by_hand(void **state) {
  (void)state;
  /* f32 sum of K = 1024 terms of magnitude <= 2, order unknown on both
   * sides (d = K): atol = 2 gamma_1024 * 1024 * 2 with u = 2^-24, i.e.
   * 2 * (2^-14 / (1 - 2^-14)) * 2048; rtol = 2 * 2^-24. */
  double u = ldexp(1, -24), g1024 = ldexp(1, -14) / (1.0 - ldexp(1, -14));
  chk_tol_basis b = {.out_type = HLO_F32, .acc_type = HLO_F32, .k = 1024, .term_max = 2.0};
  chk_tol t = chk_tolerance(&b);
  assert_true(close_to(t.atol, 2.0 * g1024 * 2048.0));
  assert_true(t.rtol == ldexp(1, -23));
  assert_false(chk_tolerance_vacuous(&b, t));
  /* bf16 output of an f32 accumulator: rtol is one bf16 ulp, 2^-7. */
  b.out_type = HLO_BF16;
  t = chk_tolerance(&b);
  assert_true(t.rtol == ldexp(1, -7));
  /* Different dot passes widen by K*T*(e1 + e6) = 1024*2*(2^-7 + 2^-23). */
  b.out_type = HLO_F32;
  b.passes_a = 1;
  b.passes_b = 6;
  t = chk_tolerance(&b);
  assert_true(close_to(t.atol, 2.0 * g1024 * 2048.0 + 2048.0 * (ldexp(1, -7) + ldexp(1, -23))));
  /* Equal passes widen nothing. */
  b.passes_b = 1;
  assert_true(close_to(chk_tolerance(&b).atol, 2.0 * g1024 * 2048.0));
  /* Known depths replace K side by side: d = 66 and 1023. */
  b.passes_a = b.passes_b = 0;
  b.depth_a = 66;
  b.depth_b = 1023;
  assert_true(close_to(chk_tolerance(&b).atol, (gam(66, u) + gam(1023, u)) * 2048.0));
  /* The init value is one more term: K T + |init| = 10 * 1 + 5. */
  chk_tol_basis r = {.out_type = HLO_F32, .acc_type = HLO_F32, .k = 10, .term_max = 1.0, .init_abs = 5.0,
                     .depth_a = 3, .depth_b = 3};
  assert_true(close_to(chk_tolerance(&r).atol, 2.0 * (3.0 * u / (1.0 - 3.0 * u)) * 15.0));
  /* No accumulation, or an integer output: exact. */
  chk_tol_basis e = {.out_type = HLO_F32, .acc_type = HLO_F32, .k = 0, .term_max = 5};
  t = chk_tolerance(&e);
  assert_true(t.atol == 0 && t.rtol == 0);
  assert_false(chk_tolerance_vacuous(&e, t));
  chk_tol_basis i = {.out_type = HLO_S32, .acc_type = HLO_S32, .k = 100, .term_max = 5};
  t = chk_tolerance(&i);
  assert_true(t.atol == 0 && t.rtol == 0);
}

static void gamma_by_hand(void **state) {
  (void)state;
  double u = ldexp(1, -8);
  assert_true(chk_gamma(0, u) == 0);
  assert_true(close_to(chk_gamma(42, u), 42.0 / 214.0)); /* 42/256 / (1 - 42/256) */
  assert_true(isinf(chk_gamma(256, u)));                 /* d u = 1 */
  assert_true(isinf(chk_gamma(1000, u)));
}

/* bf16_row_sum's case: bf16[.,1000] summed with a bf16 add, T = 4. */
static void bf16_long_sums_are_vacuous(void **state) {
  (void)state;
  chk_tol_basis b = {.out_type = HLO_BF16, .acc_type = HLO_BF16, .k = 1000, .term_max = 4.0};
  /* one at a time (d = 1000, or unknown): 1000 * 2^-8 > 1, no finite bound */
  b.depth_a = b.depth_b = 1000;
  chk_tol t = chk_tolerance(&b);
  assert_true(isinf(t.atol));
  assert_true(chk_tolerance_vacuous(&b, t));
  b.depth_a = b.depth_b = 0;
  assert_true(isinf(chk_tolerance(&b).atol));
  /* split k = 256, P = 2 (d = 132): gamma = 132/124 > 1, finite but
   * 2 * 132/124 * 4000 = 8516 >= K T = 4000: still admits any output */
  b.depth_a = b.depth_b = 132;
  t = chk_tolerance(&b);
  assert_true(close_to(t.atol, 2.0 * 132.0 / 124.0 * 4000.0));
  assert_true(chk_tolerance_vacuous(&b, t));
  /* split k = 128, P = 4 (d = 42): 2 * 42/214 * 4000 = 1570.09 < 4000 */
  b.depth_a = b.depth_b = 42;
  t = chk_tolerance(&b);
  assert_true(close_to(t.atol, 2.0 * 42.0 / 214.0 * 4000.0));
  assert_false(chk_tolerance_vacuous(&b, t));
  /* all terms zero: no error whatever the depth (and no 0 * inf = NaN) */
  b.term_max = 0;
  b.depth_a = 1000;
  t = chk_tolerance(&b);
  assert_true(t.atol == 0);
  assert_false(chk_tolerance_vacuous(&b, t));
}

/* Deterministic pseudo-random terms in [-1, 1). */
static float term(uint64_t i) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + 12345;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 11) * ldexp(1, -53) * 2.0 - 1.0);
}

/* f32 sum of t[0..n) in chunks of `chunk`, chunk partials added in order,
 * or with `pack` interleaved accumulators — the orders the device uses. */
static float sum_order(const float *t, int n, int chunk, int pack) {
  float total = 0;
  for (int c0 = 0; c0 < n; c0 += chunk) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = c0; i < n && i < c0 + chunk; i++)
      acc[(i - c0) % pack] += t[i];
    float part = 0;
    for (int p = 0; p < pack; p++)
      part += acc[p];
    total += part;
  }
  return total;
}

static void reorderings_pass_and_bugs_fail(void **state) {
  (void)state;
  enum { N = 4096 };
  float *t = malloc(sizeof(float) * N);
  double tmax = 0;
  for (int i = 0; i < N; i++) {
    t[i] = term((uint64_t)i) * 3.0f;
    if (fabs(t[i]) > tmax)
      tmax = fabs(t[i]);
  }
  chk_tol_basis b = {.out_type = HLO_F32, .acc_type = HLO_F32, .k = N, .term_max = tmax};
  chk_tol tol = chk_tolerance(&b);
  float ref = sum_order(t, N, N, 1);
  const int chunks[] = {1, 7, 128, 300, 512, 4096};
  const int packs[] = {1, 2, 4};
  for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
    for (size_t p = 0; p < 3; p++) {
      float s = sum_order(t, N, chunks[c], packs[p]);
      assert_true(fabs((double)s - ref) <= tol.atol + tol.rtol * fabs((double)ref));
    }
  /* A chunk counted twice (accumulator not re-initialised): the first 512
   * terms sum to about 20.6 (computed independently in Python), far beyond
   * atol ~ 6.0. */
  float doubled = ref + sum_order(t, 512, 512, 1);
  assert_true(fabs((double)doubled - ref) > tol.atol + tol.rtol * fabs((double)ref));

  /* Positive terms (exp sums in softmax): losing a ragged tail of 300 terms
   * of mean ~1.5 moves the sum by ~450, far beyond the bound. */
  for (int i = 0; i < N; i++)
    t[i] = fabsf(t[i]);
  float pref = sum_order(t, N, N, 1);
  float dropped = sum_order(t, N - 300, 512, 1);
  assert_true(fabs((double)dropped - pref) > tol.atol + tol.rtol * fabs((double)pref));
  for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
    float s = sum_order(t, N, chunks[c], 2);
    assert_true(fabs((double)s - pref) <= tol.atol + tol.rtol * fabs((double)pref));
  }
  free(t);
}

/* The probabilistic g(d) of tolerance.h, by hand: for K = d = 4096 in f32,
 * lambda = sqrt(2 ln(2 * 4096 / 1e-16)) = sqrt(2 * 45.852) = 9.576 (to
 * three decimals), so gamma~ = exp(9.576 * 64 * 2^-24 + ...) - 1 =
 * 3.653e-5, against the rigorous gamma_4096 = 2.441e-4. */
static void probabilistic_by_hand(void **state) {
  (void)state;
  double u = ldexp(1, -24);
  double p = chk_tol_g(CHK_TOL_PROBABILISTIC, 4096, 4096, u);
  assert_true(fabs(p - 3.653e-5) <= 0.001 * 3.653e-5);
  assert_true(close_to(chk_tol_g(CHK_TOL_WORST_CASE, 4096, 4096, u), gam(4096, u)));
  /* d = 0 stands for d = K */
  assert_true(chk_tol_g(CHK_TOL_PROBABILISTIC, 0, 4096, u) == p);
  /* d = 10 < lambda^2: the rigorous bound is the smaller and is kept */
  assert_true(close_to(chk_tol_g(CHK_TOL_PROBABILISTIC, 10, 4096, u), gam(10, u)));
  /* bf16, d = 100: d u = 0.39 > 1/64, the rigorous bound; d = 1000: none */
  double ub = ldexp(1, -8);
  assert_true(close_to(chk_tol_g(CHK_TOL_PROBABILISTIC, 100, 100, ub), gam(100, ub)));
  assert_true(isinf(chk_tol_g(CHK_TOL_PROBABILISTIC, 1000, 1000, ub)));
  /* The coefficient adds both sides, and the pass errors when the passes
   * differ: 1 pass 2^-7, 6 passes 2^-23. */
  assert_true(close_to(chk_tol_coef(CHK_TOL_WORST_CASE, u, 512, 100, 512, 1, 6),
                       gam(100, u) + gam(512, u) + ldexp(1, -7) + ldexp(1, -23)));
  assert_true(close_to(chk_tol_coef(CHK_TOL_WORST_CASE, u, 512, 100, 512, 3, 3), gam(100, u) + gam(512, u)));
  chk_tol_criterion c;
  assert_int_equal(chk_tol_criterion_parse("worst-case", &c), 0);
  assert_int_equal(c, CHK_TOL_WORST_CASE);
  assert_int_equal(chk_tol_criterion_parse("probabilistic", &c), 0);
  assert_int_equal(c, CHK_TOL_PROBABILISTIC);
  assert_int_equal(chk_tol_criterion_parse("tight", &c), -1);
}

/* The per-element probabilistic bound G S with S = sum|t_i| still admits
 * every legitimate order of a real sum, and still rejects a chunk counted
 * twice and a dropped ragged tail. */
static void probabilistic_admits_reorderings(void **state) {
  (void)state;
  enum { N = 4096 };
  float *t = malloc(sizeof(float) * N);
  for (int pos = 0; pos < 2; pos++) {
    double S = 0;
    for (int i = 0; i < N; i++) {
      t[i] = term((uint64_t)i) * 3.0f;
      if (pos)
        t[i] = fabsf(t[i]);
      S += fabs(t[i]);
    }
    double u = ldexp(1, -24);
    /* the reference's sequential order against any config (d <= K + 1) */
    double bound = chk_tol_coef(CHK_TOL_PROBABILISTIC, u, N, N + 1, N + 1, 0, 0) * S;
    float ref = sum_order(t, N, N, 1);
    const int chunks[] = {1, 7, 128, 300, 512, 4096};
    const int packs[] = {1, 2, 4};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
      for (size_t p = 0; p < 3; p++) {
        float s = sum_order(t, N, chunks[c], packs[p]);
        assert_true(fabs((double)s - ref) <= bound);
      }
    float doubled = ref + sum_order(t, 512, 512, 1);
    assert_true(fabs((double)doubled - ref) > bound);
    float dropped = sum_order(t, N - 300, 512, 1);
    assert_true(fabs((double)dropped - ref) > bound);
  }
  free(t);
}

/* The noise-floor scale of tolerance.h by hand: c = min(1, max(8 rho,
 * 1/256)), and 1 when rho was not measured. */
static void noise_scale_by_hand(void **state) {
  (void)state;
  assert_true(chk_tol_noise_scale(0.01) == 0.08);
  assert_true(chk_tol_noise_scale(0.0) == 1.0 / 256);
  assert_true(chk_tol_noise_scale(0.2) == 1.0);
  assert_true(chk_tol_noise_scale(-1) == 1.0);
  assert_true(chk_tol_noise_scale(NAN) == 1.0);
  chk_tol_criterion c;
  assert_int_equal(chk_tol_criterion_parse("noise-floor", &c), 0);
  assert_int_equal(c, CHK_TOL_NOISE_FLOOR);
  assert_string_equal(chk_tol_criterion_name(CHK_TOL_NOISE_FLOOR), "noise-floor");
  /* the default criterion is the zero value */
  assert_int_equal(CHK_TOL_NOISE_FLOOR, 0);
}

/* The noise-floor criterion on the device's orders (sum_order): rho is
 * measured as check/accum.h does, from the f32 sums in six orders
 * (sequential, reverse, 2, 4 and 8 interleaved accumulators, chunks of 128)
 * against the f64 sum; c W, W the bound of two K-deep orders, must admit
 * every other chunk and pack order (against the reference and against
 * each other), and must see a scale by 1 + 1e-3 and a dropped chunk.  Three
 * kinds of terms: mixed signs, all positive, and signs alternating element
 * by element, where two interleaved accumulators each see one sign and
 * their partial sums grow while the sequential order's stay small (measured
 * from the sequential order alone, rho misses that and pack 2 fails). */
static void noise_floor_admits_reorderings(void **state) {
  (void)state;
  enum { N = 4096 };
  float *t = malloc(sizeof(float) * N);
  for (int kind = 0; kind < 3; kind++) {
    double S = 0, exact = 0;
    for (int i = 0; i < N; i++) {
      t[i] = term((uint64_t)i + 7 * (uint64_t)kind) * 3.0f;
      if (kind == 1)
        t[i] = fabsf(t[i]);
      if (kind == 2)
        t[i] = (i % 2 ? -1.0f : 1.0f) * fabsf(t[i]);
      S += fabs(t[i]);
      exact += t[i];
    }
    double u = ldexp(1, -24);
    double W = chk_tol_coef(CHK_TOL_NOISE_FLOOR, u, N, 0, 0, 0, 0) * S;
    float ref = sum_order(t, N, N, 1), rev = 0;
    for (int i = N - 1; i >= 0; i--)
      rev += t[i];
    float measured[6] = {ref, rev, sum_order(t, N, N, 2), sum_order(t, N, N, 4), sum_order(t, N, N, 8),
                         sum_order(t, N, 128, 1)};
    double rho = 0;
    for (int j = 0; j < 6; j++)
      if (fabs((double)measured[j] - exact) / W > rho)
        rho = fabs((double)measured[j] - exact) / W;
    double allow = chk_tol_noise_scale(rho) * W;
    const int chunks[] = {1, 7, 128, 300, 512, 4096};
    const int packs[] = {1, 2, 4};
    float s[6][3];
    for (size_t c = 0; c < 6; c++)
      for (size_t p = 0; p < 3; p++) {
        s[c][p] = sum_order(t, N, chunks[c], packs[p]);
        assert_true(fabs((double)s[c][p] - ref) <= allow + 2 * u * fabs((double)ref));
      }
    for (size_t c = 0; c < 6; c++)
      for (size_t p = 0; p < 3; p++)
        assert_true(fabs((double)s[c][p] - s[5 - c][2 - p]) <= allow + 2 * u * fabs((double)ref));
    /* The alternating sum (about -21) cancels 300-fold against sum|t_i|
     * (about 6240), and pack 2 legitimately moves it by 0.0028: there a
     * scale by 1 + 1e-3 (0.021) sits at the allowance (0.022), one by
     * 1 + 1e-2 is far beyond it. */
    double scaled = (double)ref * (kind == 2 ? 1 + 1e-2 : 1 + 1e-3);
    assert_true(fabs(scaled - ref) > allow + 2 * u * fabs((double)ref));
    float dropped = sum_order(t + 512, N - 512, 512, 1);
    assert_true(fabs((double)dropped - ref) > allow + 2 * u * fabs((double)ref));
  }
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(unit_roundoffs),
      cmocka_unit_test(formula_by_hand),
      cmocka_unit_test(gamma_by_hand),
      cmocka_unit_test(bf16_long_sums_are_vacuous),
      cmocka_unit_test(reorderings_pass_and_bugs_fail),
      cmocka_unit_test(probabilistic_by_hand),
      cmocka_unit_test(probabilistic_admits_reorderings),
      cmocka_unit_test(noise_scale_by_hand),
      cmocka_unit_test(noise_floor_admits_reorderings),
  };
  return cmocka_run_group_tests_name("tolerance", tests, NULL, NULL);
}
