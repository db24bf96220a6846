/* test_intent.c — non-finite intent analysis (check/intent.c).
 *
 * Each module is small enough to say by hand where its NaN or Inf comes
 * from: a -inf constant selected, padded or scaled in, or combined with
 * itself, is intended; a log of a value arithmetic made negative, an exp
 * that overflows or a mask times a zero the inputs made is the inputs'
 * doing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"
#include "check/intent.h"

static chk_intent_result classify_as(const char *text, chk_inputs_profile p, bool deliberate) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  hlo_value *args[4] = {0}, *out = NULL;
  chk_inputs_opts io = {.seed = 0, .profile = p};
  assert_true(m->entry->nparams <= 4);
  if (chk_inputs_make(m, &io, args, &err) != 0)
    fail_msg("inputs: %s", err.msg);
  chk_eval_opts eo = {.replicas = 1};
  if (chk_eval_module(m, m->entry->nparams, args, &eo, &out, &err) != 0)
    fail_msg("eval: %s", err.msg);
  chk_intent_result r;
  if (chk_intent_classify(m, m->entry->nparams, args, &eo, deliberate, out, &r, &err) != 0)
    fail_msg("classify: %s", err.msg);
  hlo_value_unref(out);
  for (int i = 0; i < m->entry->nparams; i++)
    hlo_value_unref(args[i]);
  hlo_module_free(m);
  return r;
}

/* As the tuner calls it: the special profile's NaN and Inf are deliberate. */
static chk_intent_result classify(const char *text, chk_inputs_profile p) {
  return classify_as(text, p, p == CHK_INPUTS_SPECIAL);
}

/* A causal mask: -inf above the diagonal through select, inside a fusion
 * (so the fusion parameter's origin is followed to the entry). */
static const char *mask = "HloModule m\n"
                          "k {\n"
                          "  x = f32[4,4] parameter(0)\n"
                          "  r = s32[4,4] iota(), iota_dimension=0\n"
                          "  c = s32[4,4] iota(), iota_dimension=1\n"
                          "  keep = pred[4,4] compare(r, c), direction=GE\n"
                          "  ninf = f32[] constant(-inf)\n"
                          "  b = f32[4,4] broadcast(ninf), dimensions={}\n"
                          "  ROOT s = f32[4,4] select(keep, x, b)\n"
                          "}\n"
                          "ENTRY e {\n"
                          "  p = f32[4,4] parameter(0)\n"
                          "  ROOT f = f32[4,4] fusion(p), kind=kLoop, calls=k\n"
                          "}\n";

/* Pad with -inf, then scale: -inf * 0.5 is still the mask. */
static const char *pad = "HloModule p\n"
                         "ENTRY e {\n"
                         "  x = f32[2,3] parameter(0)\n"
                         "  ninf = f32[] constant(-inf)\n"
                         "  p = f32[2,4] pad(x, ninf), padding=0_0x0_1\n"
                         "  h = f32[] constant(0.5)\n"
                         "  b = f32[2,4] broadcast(h), dimensions={}\n"
                         "  ROOT m = f32[2,4] multiply(p, b)\n"
                         "}\n";

/* log(x - 2) with x in [-1, 1): the argument is always negative, so every
 * output is NaN, made by the log from finite values. */
static const char *bad_log = "HloModule l\n"
                             "ENTRY e {\n"
                             "  x = f32[8] parameter(0)\n"
                             "  two = f32[] constant(2)\n"
                             "  b = f32[8] broadcast(two), dimensions={}\n"
                             "  d = f32[8] subtract(x, b)\n"
                             "  ROOT l = f32[8] log(d)\n"
                             "}\n";

/* A mask subtracted from itself: -inf - -inf = NaN at the two padded
 * positions, whatever x holds: the module computes it from its own
 * constant, so it is expected (and checked: NaN must meet NaN). */
static const char *inf_minus_inf = "HloModule n\n"
                                   "ENTRY e {\n"
                                   "  x = f32[4] parameter(0)\n"
                                   "  ninf = f32[] constant(-inf)\n"
                                   "  p = f32[6] pad(x, ninf), padding=0_2\n"
                                   "  ROOT d = f32[6] subtract(p, p)\n"
                                   "}\n";

/* A -inf-padded column reaching a dot (corpus module 0111's pattern, a
 * convolution there): out[i, 3] = sum_k w[i, k] * -inf over 8 terms.
 * With weights of both signs the sum is -inf + inf = NaN: the inputs'
 * doing, made by the dot.  Naive weights are uniform in [-1, 1): a row
 * keeps one sign with probability 2 / 2^8, so some of the 16 rows mix.
 * Constrained weights are >= 1/16 (intervals.c, backward_inf_factor):
 * every masked output is -inf, the mask itself, 16 of 64 elements. */
static const char *masked_dot = "HloModule d\n"
                                "ENTRY e {\n"
                                "  x = f32[8,3] parameter(0)\n"
                                "  w = f32[16,8] parameter(1)\n"
                                "  ninf = f32[] constant(-inf)\n"
                                "  p = f32[8,4] pad(x, ninf), padding=0_0x0_1\n"
                                "  ROOT d = f32[16,4] dot(w, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                                "}\n";

/* -inf * (y - y): a mask times a zero the inputs made.  NaN, the inputs'
 * doing (y - y varies with y, and is finite), made by the multiply. */
static const char *mask_times_zero = "HloModule z\n"
                                     "ENTRY e {\n"
                                     "  x = f32[4] parameter(0)\n"
                                     "  y = f32[6] parameter(1)\n"
                                     "  ninf = f32[] constant(-inf)\n"
                                     "  p = f32[6] pad(x, ninf), padding=0_2\n"
                                     "  z = f32[6] subtract(y, y)\n"
                                     "  ROOT m = f32[6] multiply(p, z)\n"
                                     "}\n";

/* One computation k called from two sites.  The first call passes log(x -
 * 2), NaN everywhere (the inputs' doing); the second a -inf mask.  The
 * root holds both calls' values: INPUTS, first made by the log l.  (A
 * parameter classified from the last call site only would take the mask's
 * record for the first call and call the NaN expected.) */
static const char *two_callers = "HloModule t\n"
                                 "k {\n"
                                 "  a = f32[6] parameter(0)\n"
                                 "  ROOT n = f32[6] negate(a)\n"
                                 "}\n"
                                 "ENTRY e {\n"
                                 "  x = f32[6] parameter(0)\n"
                                 "  two = f32[] constant(2)\n"
                                 "  b = f32[6] broadcast(two), dimensions={}\n"
                                 "  d = f32[6] subtract(x, b)\n"
                                 "  l = f32[6] log(d)\n"
                                 "  f1 = f32[6] fusion(l), kind=kLoop, calls=k\n"
                                 "  y = f32[4] parameter(1)\n"
                                 "  ninf = f32[] constant(-inf)\n"
                                 "  p = f32[6] pad(y, ninf), padding=0_2\n"
                                 "  f2 = f32[6] fusion(p), kind=kLoop, calls=k\n"
                                 "  ROOT t = (f32[6], f32[6]) tuple(f1, f2)\n"
                                 "}\n";

/* The same two calls, but only the second one's values reach the root
 * (the first only decides a predicate, and is-finite of a NaN is a
 * finite false).  The root's two +inf (negated mask) are expected: the
 * first call's taint must not stick to k's records into the second call. */
static const char *second_call_only = "HloModule s\n"
                                      "k {\n"
                                      "  a = f32[6] parameter(0)\n"
                                      "  ROOT n = f32[6] negate(a)\n"
                                      "}\n"
                                      "ENTRY e {\n"
                                      "  x = f32[6] parameter(0)\n"
                                      "  two = f32[] constant(2)\n"
                                      "  b = f32[6] broadcast(two), dimensions={}\n"
                                      "  d = f32[6] subtract(x, b)\n"
                                      "  l = f32[6] log(d)\n"
                                      "  f1 = f32[6] fusion(l), kind=kLoop, calls=k\n"
                                      "  fin = pred[6] is-finite(f1)\n"
                                      "  y = f32[4] parameter(1)\n"
                                      "  ninf = f32[] constant(-inf)\n"
                                      "  p = f32[6] pad(y, ninf), padding=0_2\n"
                                      "  f2 = f32[6] fusion(p), kind=kLoop, calls=k\n"
                                      "  ROOT s = f32[6] select(fin, f2, f2)\n"
                                      "}\n";

/* exp(1000 x): overflows for x > 0.09, a sum of it is +inf. */
static const char *overflow = "HloModule o\n"
                              "add {\n"
                              "  a = f32[] parameter(0)\n"
                              "  b = f32[] parameter(1)\n"
                              "  ROOT s = f32[] add(a, b)\n"
                              "}\n"
                              "ENTRY e {\n"
                              "  x = f32[64] parameter(0)\n"
                              "  k = f32[] constant(1000)\n"
                              "  b = f32[64] broadcast(k), dimensions={}\n"
                              "  m = f32[64] multiply(x, b)\n"
                              "  y = f32[64] exponential(m)\n"
                              "  z = f32[] constant(0)\n"
                              "  ROOT s = f32[] reduce(y, z), dimensions={0}, to_apply=add\n"
                              "}\n";

static void test_mask_through_select_is_intended(void **state) {
  (void)state;
  chk_intent_result r = classify(mask, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_int_equal(r.nonfinite, 6); /* above the diagonal of 4x4 */
  assert_int_equal(r.count, 16);
}

static void test_pad_then_scale_is_intended(void **state) {
  (void)state;
  chk_intent_result r = classify(pad, CHK_INPUTS_CONSTRAINED);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_int_equal(r.nonfinite, 2);
}

static void test_log_of_negative_is_flagged(void **state) {
  (void)state;
  chk_intent_result r = classify(bad_log, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_int_equal(r.nonfinite, 8);
  assert_string_equal(r.origin, "l");
  /* Constrained: the demand x - 2 >= 1/16 shifts past the constant to
   * x >= 2 + 1/16, drawn in [2.0625, 4.125]; every output is finite. */
  r = classify(bad_log, CHK_INPUTS_CONSTRAINED);
  assert_int_equal(r.kind, CHK_NONFINITE_NONE);
}

static void test_nan_of_constants_is_intended(void **state) {
  (void)state;
  chk_intent_result r = classify(inf_minus_inf, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_int_equal(r.nonfinite, 2);
}

static void test_nan_of_mask_and_inputs_is_flagged(void **state) {
  (void)state;
  chk_intent_result r = classify(mask_times_zero, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_int_equal(r.nonfinite, 2);
  assert_string_equal(r.origin, "m");
}

static void test_masked_dot(void **state) {
  (void)state;
  chk_intent_result r = classify(masked_dot, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_string_equal(r.origin, "d");
  r = classify(masked_dot, CHK_INPUTS_CONSTRAINED);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_int_equal(r.nonfinite, 16);
  assert_int_equal(r.count, 64);
}

static void test_every_call_site_counts(void **state) {
  (void)state;
  chk_intent_result r = classify(two_callers, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_int_equal(r.nonfinite, 8); /* six NaN from the log, two +inf */
  assert_string_equal(r.origin, "l");
  r = classify(second_call_only, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_int_equal(r.nonfinite, 2);
}

static void test_overflow_is_flagged_and_constrained_away(void **state) {
  (void)state;
  chk_intent_result r = classify(overflow, CHK_INPUTS_NAIVE);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_string_equal(r.origin, "y");
  /* exp(1000 x) summed over 64: x <= ln(cap / 64) / 1000. */
  r = classify(overflow, CHK_INPUTS_CONSTRAINED);
  assert_int_equal(r.kind, CHK_NONFINITE_NONE);
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(chk_nonfinite_name(CHK_NONFINITE_NONE), "none");
  assert_string_equal(chk_nonfinite_name(CHK_NONFINITE_INTENDED), "intended");
  assert_string_equal(chk_nonfinite_name(CHK_NONFINITE_INPUTS), "inputs");
}

/* The special profile puts NaN and infinities into the operands of a
 * maximum on purpose: they are sources like the module's constants, and
 * the outputs they reach are intended.  The same inputs, not declared
 * deliberate, are the inputs' doing. */
static void test_special_inputs_are_deliberate(void **state) {
  (void)state;
  const char *mx = "HloModule mx\n"
                   "ENTRY main {\n"
                   "  p0 = f32[4096] parameter(0)\n"
                   "  p1 = f32[4096] parameter(1)\n"
                   "  ROOT m = f32[4096] maximum(p0, p1)\n"
                   "}\n";
  chk_intent_result r = classify(mx, CHK_INPUTS_SPECIAL);
  assert_int_equal(r.kind, CHK_NONFINITE_INTENDED);
  assert_true(r.nonfinite > 0);
  r = classify_as(mx, CHK_INPUTS_SPECIAL, false);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  r = classify(mx, CHK_INPUTS_CONSTRAINED);
  assert_int_equal(r.kind, CHK_NONFINITE_NONE);
}

/* The counts of non-finite elements, by hand: NaN, +Inf and -Inf are
 * not finite; the largest float, a subnormal and -0 are.  The same in
 * f32 and f64, and in a tuple of both. */
static void test_count_nonfinite(void **state) {
  (void)state;
  const double vals[7] = {1.5, NAN, INFINITY, -INFINITY, 3.4028234663852886e38, 1e-45, -0.0};
  int64_t dims[1] = {7};
  hlo_value *f = hlo_value_array(HLO_F32, 1, dims), *d = hlo_value_array(HLO_F64, 1, dims);
  assert_non_null(f);
  assert_non_null(d);
  for (int i = 0; i < 7; i++) {
    ((float *)f->data)[i] = (float)vals[i];
    ((double *)d->data)[i] = vals[i];
  }
  int64_t nonfinite = 0, count = 0;
  chk_intent_count(f, &nonfinite, &count);
  assert_int_equal(nonfinite, 3);
  assert_int_equal(count, 7);
  nonfinite = count = 0;
  chk_intent_count(d, &nonfinite, &count);
  assert_int_equal(nonfinite, 3);
  assert_int_equal(count, 7);
  hlo_value *el[2] = {f, d};
  hlo_value *t = hlo_value_tuple(2, el); /* takes both references */
  assert_non_null(t);
  nonfinite = count = 0;
  chk_intent_count(t, &nonfinite, &count);
  assert_int_equal(nonfinite, 6);
  assert_int_equal(count, 14);
  hlo_value_unref(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mask_through_select_is_intended),
      cmocka_unit_test(test_pad_then_scale_is_intended),
      cmocka_unit_test(test_log_of_negative_is_flagged),
      cmocka_unit_test(test_nan_of_constants_is_intended),
      cmocka_unit_test(test_nan_of_mask_and_inputs_is_flagged),
      cmocka_unit_test(test_masked_dot),
      cmocka_unit_test(test_every_call_site_counts),
      cmocka_unit_test(test_overflow_is_flagged_and_constrained_away),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_count_nonfinite),
      cmocka_unit_test(test_special_inputs_are_deliberate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
