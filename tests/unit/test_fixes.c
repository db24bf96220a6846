/* test_fixes.c — regression tests for fixes that landed without one
 * (issue 14 item 6).  Each test names the commit it guards; each fails (or
 * crashes) on the code before that commit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check/eval.h"
#include "hlo/hlo.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_value.h"
#include "check/intent.h"

/* d1824a7: the product of the dims overflowed int64 (undefined behaviour;
 * in practice it wrapped, to 0 for 2^32 x 2^32 and to a negative count for
 * 3037000500^2), so a huge shape passed every "too large?" limit. */
static int64_t elements(int rank, const int64_t *dims) {
  hlo_shape s = {.type = HLO_F32, .rank = rank, .dims = (int64_t *)dims};
  return hlo_shape_elements(&s);
}

static void test_shape_elements_saturates(void **state) {
  (void)state;
  const int64_t small[] = {3, 4, 5};
  assert_int_equal(elements(3, small), 60);
  assert_int_equal(elements(0, NULL), 1); /* a scalar */
  const int64_t two32[] = {INT64_C(1) << 32, INT64_C(1) << 32};
  assert_true(elements(2, two32) == INT64_MAX);
  const int64_t sq[] = {INT64_C(3037000500), INT64_C(3037000500)}; /* 9.2233720e18 > 2^63 - 1 */
  assert_true(elements(2, sq) == INT64_MAX);
  const int64_t just[] = {INT64_C(3037000499), INT64_C(3037000499)}; /* fits: 9223372030926249001 */
  assert_true(elements(2, just) == INT64_C(9223372030926249001));
  const int64_t three[] = {INT64_C(1) << 31, INT64_C(1) << 31, 2}; /* exactly 2^63 */
  assert_true(elements(3, three) == INT64_MAX);
  /* a zero (or a negative, counted as zero) anywhere makes the shape empty,
   * even after the product saturated */
  const int64_t zero_last[] = {INT64_C(1) << 40, INT64_C(1) << 40, 0};
  assert_int_equal(elements(3, zero_last), 0);
  const int64_t neg[] = {7, -3};
  assert_int_equal(elements(2, neg), 0);
}

/* 21c0b28: in the intent analysis (check/intent.c), an operand without a
 * record counted as "varies", and then the test for "holds an untainted
 * non-finite value" read that record anyway: a null read whenever such an
 * operand held NaN or Inf at a non-finite output element.  The parser and
 * evaluator give every instruction of a module a record, so the only way to
 * meet the case is an operand from outside the analysed computations: here
 * q is detached from its computation (parent = NULL) after evaluation,
 * which is what "no record" means to the analysis.
 *
 * s = add(q, ninf) with q = -p = +inf: +inf + -inf = NaN.  The NaN repeats
 * no operand's NaN (so it is not inherited), and q cannot be shown independent
 * of the inputs (an operand without a record never counts as fixed, the
 * fixed rule), so the NaN was created by s from what the inputs chose:
 * INPUTS, with s as its origin (intent.h). */
static void test_intent_operand_without_record(void **state) {
  (void)state;
  static const char *text = "HloModule m\n"
                            "ENTRY e {\n"
                            "  p = f32[2] parameter(0)\n"
                            "  q = f32[2] negate(p)\n"
                            "  ninf = f32[2] constant({-inf, -inf})\n"
                            "  ROOT s = f32[2] add(q, ninf)\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  int64_t two = 2;
  hlo_value *arg = hlo_value_array(HLO_F32, 1, &two);
  assert_non_null(arg);
  float pin[2] = {-__builtin_inff(), -1.0f};
  memcpy(arg->data, pin, sizeof pin);
  chk_eval_opts eo = {.replicas = 1};
  hlo_value *out = NULL;
  if (chk_eval_module(m, 1, &arg, &eo, &out, &err) != 0)
    fail_msg("eval: %s", err.msg);
  float got[2];
  memcpy(got, out->data, sizeof got);
  assert_true(got[0] != got[0]); /* NaN */
  assert_true(got[1] == -__builtin_inff());

  hlo_instr *q = m->entry->instrs[1];
  assert_string_equal(q->name, "q");
  hlo_computation *home = q->parent;
  q->parent = NULL;
  chk_intent_result r;
  int rc = chk_intent_classify(m, 1, &arg, &eo, false, out, &r, &err);
  q->parent = home;
  assert_int_equal(rc, 0);
  assert_int_equal(r.nonfinite, 2);
  assert_int_equal(r.kind, CHK_NONFINITE_INPUTS);
  assert_string_equal(r.origin, "s");

  hlo_value_unref(out);
  hlo_value_unref(arg);
  hlo_module_free(m);
}

/* 1b43366: a while loop whose condition never turns false hung the
 * checker; it now fails after CHK_EVAL_MAX_WHILE iterations (when no
 * deadline stops it first).  The cap is lowered here so that the test
 * reaches it: a loop of exactly the cap's iterations still ends (0 counted
 * up to 1000 is 1000), one more fails, and so does a constant-true
 * condition, each with the message naming the count. */
static int run_counting_loop(const char *cond_root, int64_t cap, int32_t *result, hlo_error *err) {
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule m\n"
           "cond {\n"
           "  c = s32[] parameter(0)\n"
           "  lim = s32[] constant(1000)\n"
           "  more = s32[] constant(1001)\n"
           "  %s\n"
           "}\n"
           "body {\n"
           "  b = s32[] parameter(0)\n"
           "  one = s32[] constant(1)\n"
           "  ROOT n = s32[] add(b, one)\n"
           "}\n"
           "ENTRY e {\n"
           "  z = s32[] constant(0)\n"
           "  ROOT w = s32[] while(z), condition=cond, body=body\n"
           "}\n",
           cond_root);
  hlo_module *m = hlo_parse(text, strlen(text), err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err->line, err->col, err->msg);
  chk_eval_opts eo = {.replicas = 1, .max_while_iterations = cap};
  hlo_value *out = NULL;
  int rc = chk_eval_module(m, 0, NULL, &eo, &out, err);
  if (rc == 0) {
    memcpy(result, out->data, sizeof *result);
    hlo_value_unref(out);
  }
  hlo_module_free(m);
  return rc;
}

static void test_while_cap(void **state) {
  (void)state;
  hlo_error err = {0};
  int32_t got = -1;
  assert_int_equal(run_counting_loop("ROOT lt = pred[] compare(c, lim), direction=LT", 1000, &got, &err), 0);
  assert_int_equal(got, 1000);
  assert_int_equal(run_counting_loop("ROOT lt = pred[] compare(c, more), direction=LT", 1000, &got, &err), -1);
  assert_non_null(strstr(err.msg, "while loop ran 1000 iterations without its condition turning false"));
  memset(&err, 0, sizeof err);
  assert_int_equal(run_counting_loop("ROOT t = pred[] constant(true)", 1000, &got, &err), -1);
  assert_non_null(strstr(err.msg, "while loop ran 1000 iterations without its condition turning false"));
  /* The same loop of 1001 iterations with the cap at its default. */
  assert_int_equal(run_counting_loop("ROOT lt = pred[] compare(c, more), direction=LT", 0, &got, &err), 0);
  assert_int_equal(got, 1001);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape_elements_saturates),
      cmocka_unit_test(test_intent_operand_without_record),
      cmocka_unit_test(test_while_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
