/* test_leaf_rule.c — check/cascade.h's chk_leaf_rule: which outputs are
 * compared bitwise, decided by the ops on every path from the parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "check/cascade.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  return m;
}

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
  hlo_module *m = parse(text);
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

/* A one-hot pick (select(label == iota, x, 0) summed over the iota's
 * dimension from 0) adds one x to zeros: x in every order, and +0 where
 * no label matches, so it is exact when x is.  Summed over a dimension the
 * label varies along, or picking from a rounded value, or with a compare
 * other than ==, it is a sum like any other. */
static void one_hot_pick(void **state) {
  (void)state;
  static const char *text =
      "HloModule t\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(a, b)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[4,10] parameter(0)\n"
      "  lab = s32[4] parameter(1)\n"
      "  io = s32[4,10] iota(), iota_dimension=1\n"
      "  lb = s32[4,10] broadcast(lab), dimensions={0}\n"
      "  hit = pred[4,10] compare(io, lb), direction=EQ\n"
      "  hit2 = pred[4,10] compare(lb, io), direction=EQ\n"
      "  le = pred[4,10] compare(io, lb), direction=LE\n"
      "  z = f32[] constant(0)\n"
      "  zb = f32[4,10] broadcast(z), dimensions={}\n"
      "  sel = f32[4,10] select(hit, x, zb)\n"
      "  sel2 = f32[4,10] select(hit2, x, zb)\n"
      "  sle = f32[4,10] select(le, x, zb)\n"
      "  ex = f32[4,10] exponential(x)\n"
      "  sex = f32[4,10] select(hit, ex, zb)\n"
      "  pick = f32[4] reduce(sel, z), dimensions={1}, to_apply=add\n"
      "  pick2 = f32[4] reduce(sel2, z), dimensions={1}, to_apply=add\n"
      "  rows = f32[10] reduce(sel, z), dimensions={0}, to_apply=add\n"
      "  many = f32[4] reduce(sle, z), dimensions={1}, to_apply=add\n"
      "  pex = f32[4] reduce(sex, z), dimensions={1}, to_apply=add\n"
      "  ROOT t = (f32[4], f32[4], f32[10], f32[4], f32[4]) tuple(pick, pick2, rows, many, pex)\n"
      "}\n";
  hlo_module *m = parse(text);
  const hlo_computation *c = m->entry;
  assert_int_equal(chk_leaf_rule(c, 0), CHK_RULE_BITWISE);   /* one x per row, plus zeros */
  assert_int_equal(chk_leaf_rule(c, 1), CHK_RULE_BITWISE);   /* the compare's operands the other way */
  assert_int_equal(chk_leaf_rule(c, 2), CHK_RULE_TOLERANCE); /* down a column: four picks add */
  assert_int_equal(chk_leaf_rule(c, 3), CHK_RULE_TOLERANCE); /* <= holds many times along a row */
  assert_int_equal(chk_leaf_rule(c, 4), CHK_RULE_TOLERANCE); /* picks a rounded value */
  hlo_module_free(m);
}

/* A max-reduce and a sort only choose among their operands: exact when the
 * operands are, rounded when one is (an exp differs by an ulp between two
 * correct implementations, and so does the max of it). */
static void choosing_ops_follow_their_operands(void **state) {
  (void)state;
  static const char *text =
      "HloModule t\n"
      "mx {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT r = f32[] maximum(a, b)\n"
      "}\n"
      "lt {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT r = pred[] compare(a, b), direction=LT\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  ninf = f32[] constant(-inf)\n"
      "  ex = f32[4,8] exponential(x)\n"
      "  r0 = f32[4] reduce(x, ninf), dimensions={1}, to_apply=mx\n"
      "  r1 = f32[4] reduce(ex, ninf), dimensions={1}, to_apply=mx\n"
      "  s0 = f32[4,8] sort(x), dimensions={1}, to_apply=lt\n"
      "  s1 = f32[4,8] sort(ex), dimensions={1}, to_apply=lt\n"
      "  ROOT t = (f32[4], f32[4], f32[4,8], f32[4,8]) tuple(r0, r1, s0, s1)\n"
      "}\n";
  hlo_module *m = parse(text);
  const hlo_computation *c = m->entry;
  assert_int_equal(chk_leaf_rule(c, 0), CHK_RULE_BITWISE);   /* max of parameters */
  assert_int_equal(chk_leaf_rule(c, 1), CHK_RULE_TOLERANCE); /* max of exp */
  assert_int_equal(chk_leaf_rule(c, 2), CHK_RULE_BITWISE);   /* sorted parameters */
  assert_int_equal(chk_leaf_rule(c, 3), CHK_RULE_TOLERANCE); /* sorted exp */
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exact_outputs_by_dataflow),
      cmocka_unit_test(one_hot_pick),
      cmocka_unit_test(choosing_ops_follow_their_operands),
  };
  return cmocka_run_group_tests_name("leaf_rule", tests, NULL, NULL);
}
