/* test_leaf_rule.c — check/cascade.h's chk_leaf_rule: which outputs are
 * compared bitwise, decided by the ops on every path from the parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cascade.h"
#include "hlo_parse.h"

/* Exactness by dataflow (issue 13 item 3): an output that no rounding op
 * reaches is compared bitwise (+0 and -0 differ); one that a rounding op
 * reaches is compared by tolerance. */
static void exact_outputs_by_dataflow(void **state) {
  (void)state;
  static const char *text =
      "HloModule t\n"
      "set {\n"
      "  a = f32[] parameter(0)\n"
      "  ROOT b = f32[] parameter(1)\n"
      "}\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(a, b)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[8] parameter(0)\n"
      "  y = f32[8] parameter(1)\n"
      "  h = bf16[2] parameter(2)\n"
      "  i = s32[1] parameter(3)\n"
      "  w = f32[2] convert(h)\n"
      "  dus = f32[8] dynamic-update-slice(x, w, i)\n"
      "  mx = f32[8] maximum(x, y)\n"
      "  lo = f32[] constant(-1)\n"
      "  hi = f32[] constant(1)\n"
      "  cl = f32[8] clamp(lo, x, hi)\n"
      "  neg = f32[8] negate(cl)\n"
      "  idx = s32[1,1] reshape(i)\n"
      "  upd = f32[1] slice(y), slice={[0:1]}\n"
      "  sset = f32[8] scatter(x, idx, upd), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set\n"
      "  sadd = f32[8] scatter(x, idx, upd), update_window_dims={}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
      "  nb = bf16[8] convert(x)\n"
      "  sum = f32[8] add(x, y)\n"
      "  ROOT t = (f32[8], f32[8], f32[8], f32[8], f32[8], bf16[8], f32[8]) tuple(dus, mx, neg, sset, sadd, nb, sum)\n"
      "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  const hlo_computation *c = m->entry;
  assert_int_equal(chk_leaf_rule(c, 0), CHK_RULE_BITWISE);   /* dynamic-update-slice of a widened bf16 */
  assert_int_equal(chk_leaf_rule(c, 1), CHK_RULE_BITWISE);   /* maximum */
  assert_int_equal(chk_leaf_rule(c, 2), CHK_RULE_BITWISE);   /* negate of a clamp */
  assert_int_equal(chk_leaf_rule(c, 3), CHK_RULE_BITWISE);   /* overwriting scatter */
  assert_int_equal(chk_leaf_rule(c, 4), CHK_RULE_TOLERANCE); /* scatter-add rounds */
  assert_int_equal(chk_leaf_rule(c, 5), CHK_RULE_TOLERANCE); /* f32 -> bf16 rounds */
  assert_int_equal(chk_leaf_rule(c, 6), CHK_RULE_TOLERANCE); /* add rounds */
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exact_outputs_by_dataflow),
  };
  return cmocka_run_group_tests_name("leaf_rule", tests, NULL, NULL);
}
