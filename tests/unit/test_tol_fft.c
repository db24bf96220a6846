/* test_tol_fft.c — the derived tolerance of an fft (check/tol_fft.h) is
 * loose enough for every legitimate split of the device's DFT and tight
 * enough for a real bug.
 *
 * The exact transform of a pseudo-random c64 row of N = 256 is computed in
 * double from the definition.  Every split the device can choose (direct,
 * four-step 2 x 128, 16 x 16, 128 x 2) must lie within the bound of it, and
 * of each other; an output with one wrong twiddle (W^(f (n+1)) in place of
 * W^(f n), for the largest |x[n]|: a change of |x[n]| |W^f - 1|, the
 * smallest for f = 1) or one dropped term (a change of |x[n]|) must not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/compare.h"
#include "device/dev_fft.h"
#include "device/dev_whole.h"
#include "hlo/hlo_parse.h"
#include "check/tol_fft.h"

#define N 256

static const char *text =
    "ENTRY e {\n x = c64[256] parameter(0)\n ROOT f = c64[256] fft(x), fft_type=FFT, fft_length={256}\n}\n";

typedef struct fixture {
  hlo_module *m;
  hlo_value *x;             /* the input */
  double complex xs[N];     /* the same, exactly */
  double complex exact[N];  /* its DFT in double */
  hlo_value *ref;           /* exact, rounded to c64: the reference's stand-in */
  int64_t big;              /* the n of the largest |x[n]| */
} fixture;

static dev_config cfg_of(int64_t tile, unsigned flags) {
  dev_config c;
  memset(&c, 0, sizeof c);
  c.rank = 1;
  c.tile[0] = tile;
  c.buf = 1;
  c.norder = 1;
  c.pack = 1;
  c.flags = flags;
  return c;
}

static const int64_t splits[][2] = {{256, 0}, {128, DEV_FLAG_FOUR_STEP}, {16, DEV_FLAG_FOUR_STEP}, {2, DEV_FLAG_FOUR_STEP}};
#define NSPLITS 4

static double complex w(int64_t m) { return cexp(-2.0 * M_PI * I * (double)(m % N) / N); }

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  hlo_error err;
  fx->m = hlo_parse(text, strlen(text), &err);
  assert_non_null(fx->m);
  fx->x = hlo_value_array(HLO_C64, 1, (const int64_t[]){N});
  fx->ref = hlo_value_array(HLO_C64, 1, (const int64_t[]){N});
  uint32_t r = 777;
  float *xv = fx->x->data;
  for (int i = 0; i < 2 * N; i++) {
    r = r * 1664525u + 1013904223u;
    xv[i] = (float)((double)(r >> 8) / 16777216.0 - 0.5);
  }
  for (int n = 0; n < N; n++) {
    fx->xs[n] = xv[2 * n] + I * xv[2 * n + 1];
    if (cabs(fx->xs[n]) > cabs(fx->xs[fx->big]))
      fx->big = n;
  }
  for (int f = 0; f < N; f++) {
    double complex s = 0;
    for (int n = 0; n < N; n++)
      s += fx->xs[n] * w((int64_t)f * n);
    fx->exact[f] = s;
    ((float *)fx->ref->data)[2 * f] = (float)creal(s);
    ((float *)fx->ref->data)[2 * f + 1] = (float)cimag(s);
  }
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  hlo_value_unref(fx->x);
  hlo_value_unref(fx->ref);
  hlo_module_free(fx->m);
  free(fx);
  return 0;
}

static hlo_value *device(const fixture *fx, const dev_config *c) {
  char why[256] = "";
  dev_whole_ctx ctx = {c, 0, why, sizeof why};
  hlo_value *ops[1] = {fx->x}, *out = NULL;
  assert_int_equal(dev_whole_run(fx->m->entry->root, ops, &ctx, &out), 0);
  return out;
}

/* Mismatches of a against b under the bound for depths da and db. */
static int64_t mismatches(const fixture *fx, const hlo_value *a, const hlo_value *b, int64_t da, int64_t db) {
  double map[N] = {0};
  hlo_error err;
  assert_int_equal(chk_tol_fft_map(fx->m->entry->root, fx->ref, da, db, map, &err), 0);
  chk_metrics m;
  chk_tol none = {0, 0};
  assert_int_equal(chk_compare_map(a, b, CHK_RULE_TOLERANCE, none, map, &m, &err), 0);
  return m.mismatches;
}

static void every_split_is_within_the_bound(void **state) {
  fixture *fx = *state;
  hlo_value *out[NSPLITS];
  for (int k = 0; k < NSPLITS; k++) {
    dev_config c = cfg_of(splits[k][0], (unsigned)splits[k][1]);
    out[k] = device(fx, &c);
    int64_t dk = dev_fft_depth(fx->m->entry->root, &c);
    assert_int_equal(mismatches(fx, out[k], fx->ref, dk, CHK_FFT_DEPTH_REFERENCE), 0);
    for (int j = 0; j < k; j++) {
      dev_config cj = cfg_of(splits[j][0], (unsigned)splits[j][1]);
      assert_int_equal(mismatches(fx, out[k], out[j], dk, dev_fft_depth(fx->m->entry->root, &cj)), 0);
    }
  }
  for (int k = 0; k < NSPLITS; k++)
    hlo_value_unref(out[k]);
}

/* out with output f replaced by exact[f] + delta, rounded to c64. */
static hlo_value *broken(const fixture *fx, int f, double complex delta) {
  hlo_value *v = hlo_value_clone(fx->ref);
  double complex y = fx->exact[f] + delta;
  ((float *)v->data)[2 * f] = (float)creal(y);
  ((float *)v->data)[2 * f + 1] = (float)cimag(y);
  return v;
}

static void one_wrong_twiddle_or_dropped_term_is_caught(void **state) {
  fixture *fx = *state;
  dev_config direct = cfg_of(256, 0), four = cfg_of(16, DEV_FLAG_FOUR_STEP);
  int64_t dd = dev_fft_depth(fx->m->entry->root, &direct), d4 = dev_fft_depth(fx->m->entry->root, &four);
  int64_t n = fx->big;
  const int fs[] = {1, 3, 64, 200};
  for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) {
    int f = fs[i];
    /* the wrong twiddle: x[n] W^(f (n+1)) instead of x[n] W^(f n) */
    double complex dt = fx->xs[n] * (w((int64_t)f * (n + 1)) - w((int64_t)f * n));
    hlo_value *a = broken(fx, f, dt), *b = broken(fx, f, -fx->xs[n] * w((int64_t)f * n));
    /* against the reference (FFTW's depth) and against another config */
    assert_int_equal(mismatches(fx, a, fx->ref, dd, CHK_FFT_DEPTH_REFERENCE), 1);
    assert_int_equal(mismatches(fx, a, fx->ref, dd, d4), 1);
    assert_int_equal(mismatches(fx, b, fx->ref, dd, CHK_FFT_DEPTH_REFERENCE), 1);
    assert_int_equal(mismatches(fx, b, fx->ref, dd, d4), 1);
    hlo_value_unref(a);
    hlo_value_unref(b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(every_split_is_within_the_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(one_wrong_twiddle_or_dropped_term_is_caught, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
