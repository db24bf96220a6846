/* test_eval_paper.c — the paper's reproducers in datasets/, evaluated.
 *
 * The four modules of the paper's Listing 1 and the QAT residual of its
 * Figure 4 are read from datasets/ (under $TUNE_SRCDIR, which make check
 * sets; "." otherwise), parsed, verified and run through chk_eval_module.
 * Every expected value below is derived by hand from XLA's semantics (the
 * derivation sits next to each assertion), never from running the evaluator,
 * so a wrong evaluator cannot make its own test pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_walk.h"
#include "check/eval.h"
#include "eval_fixture.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_verify.h"
#include "check/inputs.h"

/* ---- loading and evaluating ------------------------------------------- */

/* Parses and verifies datasets/<name>; any failure fails the test. */
static hlo_module *load(const char *name) {
  const char *src = getenv("TUNE_SRCDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/datasets/%s", src && *src ? src : ".", name);
  size_t len = 0;
  char *text = cw_read_file(path, &len);
  if (!text)
    fail_msg("%s: cannot read (is TUNE_SRCDIR set?)", path);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, len, &err);
  free(text);
  if (!m)
    fail_msg("%s:%d:%d: parse: %s", path, err.line, err.col, err.msg);
  if (hlo_verify(m, &err) != 0) {
    hlo_module_free(m);
    fail_msg("%s:%d:%d: verify: %s", path, err.line, err.col, err.msg);
  }
  return m;
}

/* Evaluates m on one replica; returns the root (the caller unrefs).  The
 * args keep their references.  An unsupported op or an evaluation error
 * fails the test loudly: none of these reproducers may be skipped. */
static hlo_value *run(const hlo_module *m, int nargs, hlo_value *const *args) {
  hlo_error err = {0};
  if (chk_eval_supported(m, &err) != 0)
    fail_msg("%s: not supported by the evaluator: %d:%d: %s", m->name, err.line, err.col, err.msg);
  chk_eval_opts o = {.replicas = 1};
  hlo_value *out = NULL;
  if (chk_eval_module(m, nargs, args, &o, &out, &err) != 0)
    fail_msg("%s: evaluation failed: %d:%d: %s", m->name, err.line, err.col, err.msg);
  assert_non_null(out);
  return out;
}

static void expect_array(const hlo_value *v, hlo_etype t, int rank, const int64_t *dims) {
  assert_non_null(v);
  assert_int_equal(v->type, t);
  assert_int_equal(v->rank, rank);
  for (int d = 0; d < rank; d++)
    assert_int_equal(v->dims[d], dims[d]);
}

/* ---- bug4: cumsum of convert(convert(1.75 -> s32) -> f32) -------------- */

/* XLA's f32 -> s32 convert truncates toward zero (C's cast, saturated):
 * 1.75 -> 1, and s32 1 -> f32 1.0 exactly.  The reduce-window has size 4,
 * stride 1 and padding 3 low / 0 high with init 0 over f32[4] of ones: the
 * padded array is [0,0,0,1,1,1,1] and output i sums padded[i..i+3], which
 * holds i+1 ones.  So the cumsum is exactly [1,2,3,4] (small integers, every
 * partial sum exact in f32 whatever the order). */
static void bug4_cumsum_cast(void **state) {
  (void)state;
  hlo_module *m = load("cumsum_cast_bug4.hlo");
  assert_int_equal(m->entry->nparams, 0);
  hlo_value *out = run(m, 0, NULL);
  expect_array(out, HLO_F32, 1, (const int64_t[]){4});
  const float *y = out->data;
  for (int i = 0; i < 4; i++)
    if (y[i] != (float)(i + 1))
      fail_msg("cumsum[%d] = %.9g, want %d", i, (double)y[i], i + 1);
  hlo_value_unref(out);
  hlo_module_free(m);
}

/* ---- bug2: singleton scatter of one f32 at an s8 index ------------------ */

/* scatter with update_window_dims={}, inserted_window_dims={0},
 * scatter_dims_to_operand_dims={0}, index_vector_dim=0 on a reshaped s8[1]
 * index: one scatter window of one element, at operand index idx.  The
 * combiner returns its second parameter (the update), so element idx
 * becomes v and nothing else changes.  The index is an s8 value taken as
 * the signed integer it is: idx=5 writes element 5 and never its 8-bit
 * wrap twin 261 = 5 + 256.  A window that does not fit in the operand is
 * skipped by XLA (scatter's out-of-bounds rule: no clamping, unlike
 * dynamic-update-slice), so idx=-1 leaves the operand unchanged; 300 cannot
 * be written in s8, and 127 (the s8 maximum) is in range and written. */
static hlo_value *scatter_case(const hlo_module *m, double idx, double v) {
  hlo_value *x = hlo_value_array(HLO_F32, 1, (const int64_t[]){300});
  assert_non_null(x);
  /* A recognisable operand (x[i] = i) so "untouched" is a real check. */
  for (int i = 0; i < 300; i++)
    ((float *)x->data)[i] = (float)i;
  hlo_value *args[3] = {x, fx_scalar(HLO_S8, idx), fx_scalar(HLO_F32, v)};
  hlo_value *out = run(m, 3, args);
  for (int k = 0; k < 3; k++)
    hlo_value_unref(args[k]);
  expect_array(out, HLO_F32, 1, (const int64_t[]){300});
  return out;
}

static void expect_scatter(const hlo_value *out, int at, float v) {
  const float *y = out->data;
  for (int i = 0; i < 300; i++) {
    float want = i == at ? v : (float)i;
    if (y[i] != want)
      fail_msg("scatter at %d: element %d = %.9g, want %.9g", at, i, (double)y[i], (double)want);
  }
}

static void bug2_scatter_s8(void **state) {
  (void)state;
  hlo_module *m = load("scatter_s8_set_bug2.hlo");
  assert_int_equal(m->entry->nparams, 3);
  hlo_value *out = scatter_case(m, 5, 7);
  expect_scatter(out, 5, 7.0f);
  assert_true(((const float *)out->data)[261] == 261.0f); /* the wrap twin */
  hlo_value_unref(out);
  out = scatter_case(m, 127, -3.5); /* the largest s8 index, in range */
  expect_scatter(out, 127, -3.5f);
  hlo_value_unref(out);
  out = scatter_case(m, 0, 42);
  expect_scatter(out, 0, 42.0f);
  hlo_value_unref(out);
  out = scatter_case(m, -1, 7); /* out of bounds: skipped */
  expect_scatter(out, -1, 0.0f);
  hlo_value_unref(out);
  out = scatter_case(m, -128, 7);
  expect_scatter(out, -1, 0.0f);
  hlo_value_unref(out);
  hlo_module_free(m);
}

/* ---- bug3: top-k through a key/value sort along axis 0 ------------------ */

/* The sort orders each column of f32[1024,4] (dimension 0) by the key
 * operand with comparator compare(a, b) LT TOTALORDER on the keys only, so
 * each column is ascending; the s32 iota along dimension 0 is carried as
 * values, so after the sort row k of the second output holds the original
 * row of the k-th smallest key.  The module keeps rows 0..7: the 8 smallest
 * keys of each column and where they came from.  Keys are distinct, so
 * is_stable=false cannot change the answer.
 *
 * Input: column c is the permutation r -> (a_c * r + b_c) mod 1024 with
 * a_c odd (odd multipliers are units mod 2^10, so it is a bijection of
 * 0..1023), mapped to keys 0.25 * p - 100 (exact in f32; negative and
 * positive keys both occur).  The k-th smallest key is 0.25 * k - 100 and
 * came from the row r with (a_c * r + b_c) mod 1024 = k, found here by
 * search. */
static void bug3_topk_axis0(void **state) {
  (void)state;
  static const int a[4] = {1, 3, 517, 1023}, b[4] = {0, 11, 700, 5};
  hlo_module *m = load("topk_sort_axis0_bug3.hlo");
  assert_int_equal(m->entry->nparams, 1);
  hlo_value *x = hlo_value_array(HLO_F32, 2, (const int64_t[]){1024, 4});
  assert_non_null(x);
  float *xd = x->data;
  for (int r = 0; r < 1024; r++)
    for (int c = 0; c < 4; c++)
      xd[r * 4 + c] = 0.25f * (float)((a[c] * r + b[c]) % 1024) - 100.0f;
  hlo_value *out = run(m, 1, &x);
  hlo_value_unref(x);
  assert_int_equal(out->type, HLO_TUPLE);
  assert_int_equal(out->ntuple, 2);
  const hlo_value *keys = out->elems[0], *idx = out->elems[1];
  expect_array(keys, HLO_F32, 2, (const int64_t[]){8, 4});
  expect_array(idx, HLO_S32, 2, (const int64_t[]){8, 4});
  for (int c = 0; c < 4; c++)
    for (int k = 0; k < 8; k++) {
      int row = -1;
      for (int r = 0; r < 1024; r++)
        if ((a[c] * r + b[c]) % 1024 == k)
          row = r;
      float key = ((const float *)keys->data)[k * 4 + c];
      int32_t got = ((const int32_t *)idx->data)[k * 4 + c];
      if (key != 0.25f * (float)k - 100.0f || got != row)
        fail_msg("column %d rank %d: key %.9g from row %d, want %.9g from row %d", c, k, (double)key,
                 (int)got, 0.25 * k - 100.0, row);
    }
  hlo_value_unref(out);
  hlo_module_free(m);
}

/* ---- bug1: complex tan and tanh (c64) ---------------------------------- */

/* tan(x + iy) = (sin 2x + i sinh 2y) / (cos 2x + cosh 2y).  For z = 45i
 * (x = 0): real part 0 / (1 + cosh 90) = 0 exactly, imaginary part
 * sinh 90 / (1 + cosh 90) = tanh 45 = 1 - 2e^-90 (about 1 - 1.6e-39), which
 * rounds to 1.0f since f32's spacing below 1 is 2^-24.  The textbook formula
 * evaluated in f32 overflows (cosh 90 ~ 6e38 > FLT_MAX) and gives inf/inf =
 * NaN: the bug.  tanh(44 + 0i) is tanh 44 + 0i = (1 - 1.6e-38) + 0i, which is
 * 1.0f + 0i.  "Within 1 ulp": the real part of the first may be +-0 or the
 * smallest subnormal, the ones may be 1.0f or a neighbour. */
static void expect_c64(const hlo_value *v, float re, float im, const char *what) {
  expect_array(v, HLO_C64, 0, NULL);
  const float *z = v->data;
  if (isnan(z[0]) || isnan(z[1]))
    fail_msg("%s = (%g, %g): NaN", what, (double)z[0], (double)z[1]);
  float lo_re = nextafterf(re, -INFINITY), hi_re = nextafterf(re, INFINITY);
  float lo_im = nextafterf(im, -INFINITY), hi_im = nextafterf(im, INFINITY);
  if (!(z[0] >= lo_re && z[0] <= hi_re && z[1] >= lo_im && z[1] <= hi_im))
    fail_msg("%s = (%.9g, %.9g), want (%.9g, %.9g) within 1 ulp", what, (double)z[0], (double)z[1], (double)re,
             (double)im);
}

static void check_bug1_outputs(hlo_value *out) {
  assert_int_equal(out->type, HLO_TUPLE);
  assert_int_equal(out->ntuple, 2);
  expect_c64(out->elems[0], 0.0f, 1.0f, "tan(45i)");
  expect_c64(out->elems[1], 1.0f, 0.0f, "tanh(44+0i)");
}

static void bug1_complex_tan_tanh_const(void **state) {
  (void)state;
  hlo_module *m = load("complex_tan_tanh_bug1_const.hlo");
  hlo_value *out = run(m, 0, NULL);
  check_bug1_outputs(out);
  hlo_value_unref(out);
  hlo_module_free(m);
}

static hlo_value *c64(float re, float im) {
  hlo_value *v = hlo_value_array(HLO_C64, 0, NULL);
  assert_non_null(v);
  ((float *)v->data)[0] = re;
  ((float *)v->data)[1] = im;
  return v;
}

static void bug1_complex_tan_tanh_params(void **state) {
  (void)state;
  hlo_module *m = load("complex_tan_tanh_bug1.hlo");
  assert_int_equal(m->entry->nparams, 2);
  hlo_value *args[2] = {c64(0, 45), c64(44, 0)};
  hlo_value *out = run(m, 2, args);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  check_bug1_outputs(out);
  hlo_value_unref(out);
  /* The odd symmetries give the mirrored cases: tan(-45i) = -i and
   * tanh(-44) = -1, with the same overflow hazard. */
  args[0] = c64(0, -45);
  args[1] = c64(-44, 0);
  out = run(m, 2, args);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  assert_int_equal(out->type, HLO_TUPLE);
  expect_c64(out->elems[0], 0.0f, -1.0f, "tan(-45i)");
  expect_c64(out->elems[1], -1.0f, 0.0f, "tanh(-44+0i)");
  hlo_value_unref(out);
  hlo_module_free(m);
}

/* ---- QAT residual x - f32(f16(x)) and x - f32(bf16(x)) ------------------ */

/* Round-to-nearest-even of x to a binary float format with p significant
 * bits (implicit bit included), minimum normal exponent emin and largest
 * finite value maxv; overflow gives infinity (IEEE RNE).  Written from the
 * definition and independent of hlo_dtype: below 2^emin the quantum stays
 * 2^(emin-p+1) (subnormals, gradual underflow); otherwise it is
 * 2^(e-p+1) for x in [2^e, 2^(e+1)).  Scaling by powers of two is exact in
 * double and rint() rounds ties to even in the default rounding mode; a
 * value that rounds up into the next binade lands on 2^(e+1), which is
 * representable, so no second step is needed. */
static double round_to_format(double x, int p, int emin, double maxv) {
  if (x == 0 || !isfinite(x))
    return x;
  int ex;
  frexp(x, &ex); /* |x| in [2^(ex-1), 2^ex) */
  int e = ex - 1 < emin ? emin : ex - 1;
  double q = ldexp(1.0, e - p + 1);
  double r = rint(x / q) * q;
  if (fabs(r) > maxv)
    return copysign(INFINITY, x);
  return r;
}

static double rne_f16(double x) { return round_to_format(x, 11, -14, 65504.0); }
static double rne_bf16(double x) { return round_to_format(x, 8, -126, ldexp(255.0, 120)); }

/* A hand table for the rounding helper: each entry worked out on paper. */
static void qat_rounding_table(void **state) {
  (void)state;
  /* f16: 0.1f = 0.100000001490116; the f16 quantum in [2^-4, 2^-3) is
   * 2^-14, 0.1f / 2^-14 = 1638.4 -> 1638, 1638 * 2^-14 = 0.0999755859375
   * (bits 0x2E66). */
  assert_true(rne_f16((double)0.1f) == 0.0999755859375);
  /* 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even, 1.  1 + 3*2^-11
   * lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): 1 + 2^-9. */
  assert_true(rne_f16(1 + ldexp(1, -11)) == 1.0);
  assert_true(rne_f16(1 + 3 * ldexp(1, -11)) == 1 + ldexp(1, -9));
  /* Subnormals: the smallest f16 subnormal is 2^-24; 2^-25 ties to 0 and
   * 3 * 2^-25 (1.5 quanta) to 2^-23 (2 quanta, even). */
  assert_true(rne_f16(ldexp(1, -25)) == 0.0);
  assert_true(rne_f16(3 * ldexp(1, -25)) == ldexp(1, -23));
  /* Overflow: 65504 is the largest f16; 65519 rounds down to it, 65520 is
   * the midpoint to 65536 and ties to the even 2^16, which overflows. */
  assert_true(rne_f16(65519) == 65504.0);
  assert_true(isinf(rne_f16(65520)));
  /* bf16 keeps 8 significant bits: 0.1f -> quantum 2^-11 in [2^-4, 2^-3),
   * 0.1 * 2048 = 204.8 -> 205, 205/2048 = 0.10009765625 (bits 0x3DCD). */
  assert_true(rne_bf16((double)0.1f) == 0.10009765625);
  assert_true(rne_bf16(1 + ldexp(1, -8)) == 1.0);
  assert_true(rne_bf16(1 + 3 * ldexp(1, -8)) == 1 + ldexp(1, -6));
  /* -1/3 in [2^-2, 2^-1): quantum 2^-9, 512/3 = 170.67 -> 171, so
   * -171/512 = -0.333984375. */
  assert_true(rne_bf16(-1.0 / 3.0) == -0.333984375);
}

/* For x in f32 and r its rounding to the narrow type, x - r in f32 is exact:
 * r is within half a narrow ulp of x, so r/2 <= x <= 2r (Sterbenz) unless
 * r = 0, where the difference is x itself.  The expected residual is thus
 * (float)(x - r) computed in double, with no rounding question left. */
static void qat_case(const char *file, double (*rne)(double), const char *what) {
  hlo_module *m = load(file);
  assert_int_equal(m->entry->nparams, 1);
  hlo_value *x = NULL;
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_NAIVE};
  hlo_error err = {0};
  if (chk_inputs_make(m, &io, &x, &err) != 0)
    fail_msg("%s: inputs: %s", file, err.msg);
  hlo_value *out = run(m, 1, &x);
  expect_array(out, HLO_F32, x->rank, x->dims);
  const float *xd = x->data, *y = out->data;
  int64_t n = x->count, nonzero = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = rne((double)xd[i]);
    float want = (float)((double)xd[i] - r);
    if (memcmp(&y[i], &want, sizeof want) != 0 && !(y[i] == 0 && want == 0))
      fail_msg("%s element %lld: x = %.9g, residual %.9g, want %.9g", what, (long long)i, (double)xd[i],
               (double)y[i], (double)want);
    nonzero += y[i] != 0;
  }
  /* Inputs are uniform in [-1, 1) with f32 resolution; only x exactly
   * representable in the narrow type gives 0, a fraction of about 2^-12
   * (f16) or 2^-15 (bf16) of the draws, so 90% non-zero is a loose bound. */
  if (nonzero * 10 < n * 9)
    fail_msg("%s: only %lld of %lld residuals are non-zero", what, (long long)nonzero, (long long)n);
  hlo_value_unref(out);
  hlo_value_unref(x);
  hlo_module_free(m);
}

static void qat_residual_f16(void **state) {
  (void)state;
  qat_case("qat_residual_f16.hlo", rne_f16, "f16");
}

static void qat_residual_bf16(void **state) {
  (void)state;
  qat_case("qat_residual_bf16.hlo", rne_bf16, "bf16");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bug4_cumsum_cast),
      cmocka_unit_test(bug2_scatter_s8),
      cmocka_unit_test(bug3_topk_axis0),
      cmocka_unit_test(bug1_complex_tan_tanh_const),
      cmocka_unit_test(bug1_complex_tan_tanh_params),
      cmocka_unit_test(qat_rounding_table),
      cmocka_unit_test(qat_residual_f16),
      cmocka_unit_test(qat_residual_bf16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
