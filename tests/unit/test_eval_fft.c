/* test_eval_fft.c — fft in the reference evaluator (eval_fft.c, FFTW).
 *
 * Expected values come from the DFT's definition, X[k] = sum_n x[n]
 * exp(-2 pi i k n / N): an impulse at 0 has a flat spectrum of ones, an
 * impulse at 1 the roots of unity exp(-2 pi i k / N), cos(2 pi m n / N)
 * has N/2 at frequencies m and N - m; the inverses divide by N; and
 * Parseval's identity sum |x|^2 = (1/N) sum |X|^2 holds for any input.
 * Each is checked in single (c64/f32) and double (c128/f64) precision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"

static const double two_pi = 6.283185307179586;

/* A complex array (c64 or c128) of n elements from re/im pairs. */
static hlo_value *cplx(hlo_etype t, int rank, const int64_t *dims, const double *reim) {
  hlo_value *v = hlo_value_array(t, rank, dims);
  assert_non_null(v);
  for (int64_t i = 0; i < 2 * v->count; i++) {
    if (t == HLO_C64)
      ((float *)v->data)[i] = (float)reim[i];
    else
      ((double *)v->data)[i] = reim[i];
  }
  return v;
}

/* Element i (re or im part j) of a c64/c128/f32/f64 value as double. */
static double part(const hlo_value *v, int64_t i, int j) {
  switch (v->type) {
  case HLO_C64: return ((const float *)v->data)[2 * i + j];
  case HLO_C128: return ((const double *)v->data)[2 * i + j];
  case HLO_F32: return j ? 0 : ((const float *)v->data)[i];
  default: return j ? 0 : ((const double *)v->data)[i];
  }
}

static double tol(hlo_etype t) { return t == HLO_C64 || t == HLO_F32 ? 1e-5 : 1e-12; }

static void expect_close(const hlo_value *v, int64_t n, const double *reim, double eps) {
  assert_int_equal(v->count, n);
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 2; j++)
      if (fabs(part(v, i, j) - reim[2 * i + j]) > eps)
        fail_msg("element %lld part %d: got %.17g, want %.17g", (long long)i, j, part(v, i, j), reim[2 * i + j]);
}

static hlo_value *fft(const char *in_shape, const char *out_shape, const char *type, const char *len, hlo_value *x) {
  char t[300];
  snprintf(t, sizeof t, "ENTRY e {\n x = %s parameter(0)\n ROOT f = %s fft(x), fft_type=%s, fft_length={%s}\n}\n",
           in_shape, out_shape, type, len);
  hlo_value *a[] = {x};
  return fx_eval(t, 1, a);
}

static void impulses(hlo_etype t, const char *ty) {
  char s[40];
  snprintf(s, sizeof s, "%s[8]", ty);
  double x[16] = {1}, want[16];
  for (int k = 0; k < 8; k++) {
    want[2 * k] = 1;
    want[2 * k + 1] = 0;
  }
  hlo_value *y = fft(s, s, "FFT", "8", cplx(t, 1, DIMS(8), x));
  expect_close(y, 8, want, tol(t));
  hlo_value_unref(y);
  /* An impulse at 1: exp(-2 pi i k / 8) = cos - i sin. */
  double x1[16] = {0, 0, 1, 0};
  for (int k = 0; k < 8; k++) {
    want[2 * k] = cos(two_pi * k / 8);
    want[2 * k + 1] = -sin(two_pi * k / 8);
  }
  y = fft(s, s, "FFT", "8", cplx(t, 1, DIMS(8), x1));
  expect_close(y, 8, want, tol(t));
  hlo_value_unref(y);
  /* IFFT of the flat spectrum is the impulse again (divided by N). */
  double ones[16];
  for (int k = 0; k < 8; k++) {
    ones[2 * k] = 1;
    ones[2 * k + 1] = 0;
  }
  y = fft(s, s, "IFFT", "8", cplx(t, 1, DIMS(8), ones));
  double imp[16] = {1};
  expect_close(y, 8, imp, tol(t));
  hlo_value_unref(y);
}

static void impulse_c64(void **state) {
  (void)state;
  impulses(HLO_C64, "c64");
}

static void impulse_c128(void **state) {
  (void)state;
  impulses(HLO_C128, "c128");
}

static void cosines(hlo_etype rt, const char *r, const char *c) {
  /* x[n] = cos(2 pi 2 n / 8) + 0.5: RFFT has 4 at k = 2 and 4 at k = 0. */
  double x[8];
  for (int n = 0; n < 8; n++)
    x[n] = cos(two_pi * 2 * n / 8) + 0.5;
  char in[40], out[40];
  snprintf(in, sizeof in, "%s[8]", r);
  snprintf(out, sizeof out, "%s[5]", c);
  hlo_value *y = fft(in, out, "RFFT", "8", fx_array(rt, 1, DIMS(8), x));
  const double want[10] = {4, 0, 0, 0, 4, 0, 0, 0, 0, 0};
  expect_close(y, 5, want, 10 * tol(rt));
  /* IRFFT of that half spectrum is the cosine again. */
  hlo_value *back = fft(out, in, "IRFFT", "8", y);
  double wantx[16];
  for (int n = 0; n < 8; n++) {
    wantx[2 * n] = x[n];
    wantx[2 * n + 1] = 0;
  }
  expect_close(back, 8, wantx, 10 * tol(rt));
  hlo_value_unref(back);
}

static void cosine_f32(void **state) {
  (void)state;
  cosines(HLO_F32, "f32", "c64");
}

static void cosine_f64(void **state) {
  (void)state;
  cosines(HLO_F64, "f64", "c128");
}

/* A fixed pseudo-random sequence in [-1, 1) (a 32-bit LCG). */
static double noise(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (*s >> 8) * 0x1p-23 - 1;
}

static void parseval(hlo_etype t, const char *ty) {
  /* A 3-d transform over [4,6,5] of a batch of 2. */
  double x[2 * 2 * 120];
  uint32_t s = 12345;
  double ex = 0;
  for (int i = 0; i < 2 * 240; i++)
    x[i] = noise(&s);
  char sh[40];
  snprintf(sh, sizeof sh, "%s[2,4,6,5]", ty);
  hlo_value *xv = cplx(t, 4, DIMS(2, 4, 6, 5), x);
  for (int i = 0; i < 240; i++) /* the stored values, rounded to the type */
    ex += part(xv, i, 0) * part(xv, i, 0) + part(xv, i, 1) * part(xv, i, 1);
  hlo_value *y = fft(sh, sh, "FFT", "4,6,5", xv);
  double ey = 0;
  for (int i = 0; i < 240; i++)
    ey += part(y, i, 0) * part(y, i, 0) + part(y, i, 1) * part(y, i, 1);
  hlo_value_unref(y);
  if (fabs(ey / 120 - ex) > ex * (t == HLO_C64 ? 1e-5 : 1e-13))
    fail_msg("Parseval: sum |x|^2 = %.17g, sum |X|^2 / N = %.17g", ex, ey / 120);
}

static void parseval_c64(void **state) {
  (void)state;
  parseval(HLO_C64, "c64");
}

static void parseval_c128(void **state) {
  (void)state;
  parseval(HLO_C128, "c128");
}

static void rfft_2d_batched_constant(void **state) {
  (void)state;
  /* Two batches of a constant 2x4 field (1 and 3): only DC is non-zero,
   * 8 x the constant; the last dimension keeps 4/2 + 1 = 3 frequencies. */
  double x[16];
  for (int i = 0; i < 16; i++)
    x[i] = i < 8 ? 1 : 3;
  hlo_value *y = fft("f64[2,2,4]", "c128[2,2,3]", "RFFT", "2,4", fx_array(HLO_F64, 3, DIMS(2, 2, 4), x));
  double want[24] = {0};
  want[0] = 8;
  want[12] = 24;
  expect_close(y, 12, want, 1e-12);
  hlo_value_unref(y);
}

static void bad_lengths_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(8), NULL)};
  fx_eval_fails("ENTRY e {\n x = f32[8] parameter(0)\n ROOT f = c64[5] fft(x), fft_type=RFFT, fft_length={6}\n}\n",
                1, a, "fft_length 6 needs 6 in and 4 out");
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(8), NULL)};
  fx_eval_fails("ENTRY e {\n x = f32[8] parameter(0)\n ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={8}\n}\n",
                1, b, "FFT takes c64 and returns c64");
  /* the attributes go through the one fft parser (hlo_fft.h), which
   * refuses anything after the closing brace; the evaluator's own copy
   * read "{8}x" as {8} */
  hlo_value *c[] = {fx_array(HLO_C64, 1, DIMS(8), NULL)};
  fx_eval_fails("ENTRY e {\n x = c64[8] parameter(0)\n ROOT f = c64[8] fft(x), fft_type=FFT, fft_length={8}x\n}\n",
                1, c, "fft_length must list 1 to 3 positive sizes");
  hlo_value *d[] = {fx_array(HLO_C64, 1, DIMS(8), NULL)};
  fx_eval_fails("ENTRY e {\n x = c64[8] parameter(0)\n ROOT f = c64[8] fft(x), fft_type=DFT, fft_length={8}\n}\n",
                1, d, "fft_type must be FFT, IFFT, RFFT or IRFFT");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(impulse_c64),
      cmocka_unit_test(impulse_c128),
      cmocka_unit_test(cosine_f32),
      cmocka_unit_test(cosine_f64),
      cmocka_unit_test(parseval_c64),
      cmocka_unit_test(parseval_c128),
      cmocka_unit_test(rfft_2d_batched_constant),
      cmocka_unit_test(bad_lengths_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
