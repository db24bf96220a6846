/* test_verify.c — the verifier and shape inference, rule by rule.
 *
 * Each rule has a small valid module that must pass and a broken one that
 * must fail at the expected line and column with the expected message.  The
 * expectations are worked out by hand from HLO semantics.
 *
 * Most shape cases share one template (MOD below): three setup lines, then
 * the instruction under test on line 6, column 3, then a ROOT that uses
 * nothing, then any helper computations.  Structural faults that the parser
 * refuses to produce (duplicate names, forward operands) are made by
 * editing a parsed module.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/hlo.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_shape_infer.h"
#include "hlo/hlo_verify.h"

/* Three setup lines (lines 3-5), the tested instruction (line 6, col 3). */
#define L(s) "  " s "\n"
#define MOD(a, b, c, tested, rest)                                                       \
  "HloModule m\nENTRY e {\n" L(a) L(b) L(c) L(tested) L("ROOT done = pred[] constant(true)") \
  "}\n" rest
#define FILL1 "q1 = pred[] constant(false)"
#define FILL2 "q2 = pred[] constant(false)"

/* Helper computations, appended after the entry. */
#define ADD_F32                                                                    \
  "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"                    \
  "  ROOT s = f32[] add(x, y)\n}\n"
#define ADD3_F32                                                                   \
  "add3 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"                   \
  "  w = f32[] parameter(2)\n  ROOT s = f32[] add(x, y)\n}\n"
#define ARGMAX                                                                     \
  "argmax {\n  a = f32[] parameter(0)\n  i = s32[] parameter(1)\n"                 \
  "  b = f32[] parameter(2)\n  j = s32[] parameter(3)\n"                           \
  "  gt = pred[] compare(a, b), direction=GT\n  m = f32[] select(gt, a, b)\n"      \
  "  k = s32[] select(gt, i, j)\n  ROOT t = (f32[], s32[]) tuple(m, k)\n}\n"
#define CMP4                                                                       \
  "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                    \
  "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"                           \
  "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
#define CMP2                                                                       \
  "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                    \
  "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
#define GE_F32                                                                     \
  "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                     \
  "  ROOT g = pred[] compare(a, b), direction=GE\n}\n"

/* ---- helpers ----------------------------------------------------------- */

static hlo_module *parse_ok(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    print_error("parse failed at %d:%d: %s\n--\n%s", err.line, err.col, err.msg, text);
  assert_non_null(m);
  return m;
}

static void expect_valid(const char *text) {
  hlo_module *m = parse_ok(text);
  hlo_error err = {0};
  int rc = hlo_verify(m, &err);
  if (rc != 0)
    print_error("unexpected: %d:%d: %s\n--\n%s", err.line, err.col, err.msg, text);
  assert_int_equal(rc, 0);
  hlo_module_free(m);
}

static void expect_error_in(hlo_module *m, int line, int col, const char *msg) {
  hlo_error err = {0};
  int rc = hlo_verify(m, &err);
  assert_int_equal(rc, -1);
  if (!strstr(err.msg, msg) || err.line != line || err.col != col)
    print_error("got %d:%d: %s\nwant %d:%d: ...%s...\n", err.line, err.col, err.msg, line, col,
                msg);
  assert_non_null(strstr(err.msg, msg));
  assert_int_equal(err.line, line);
  assert_int_equal(err.col, col);
}

static void expect_error(const char *text, int line, int col, const char *msg) {
  hlo_module *m = parse_ok(text);
  expect_error_in(m, line, col, msg);
  hlo_module_free(m);
}

/* ---- structure ---------------------------------------------------------- */

static const char *const three_line =
    "HloModule m\n"                 /* 1 */
    "ENTRY e {\n"                   /* 2 */
    "  a = f32[2] parameter(0)\n"   /* 3 */
    "  b = f32[2] parameter(1)\n"   /* 4 */
    "  c = f32[2] add(a, b)\n"      /* 5 */
    "  ROOT d = f32[2] negate(c)\n" /* 6: name at column 8 */
    "}\n";

static void test_structure_valid(void **state) {
  (void)state;
  expect_valid(three_line);
}

static void test_duplicate_name(void **state) {
  (void)state;
  hlo_module *m = parse_ok(three_line);
  m->entry->instrs[2]->name = m->entry->instrs[1]->name; /* c renamed b */
  expect_error_in(m, 5, 3, "b: name is defined twice in computation e");
  hlo_module_free(m);
}

static void test_use_before_definition(void **state) {
  (void)state;
  hlo_module *m = parse_ok(three_line);
  hlo_instr *c = m->entry->instrs[2], *d = m->entry->instrs[3];
  c->operands[1] = d; /* c = add(a, d) with d defined after c */
  expect_error_in(m, 5, 3, "c: operand 1 (d) is used before it is defined");
  hlo_module_free(m);
}

static void test_self_operand(void **state) {
  (void)state;
  hlo_module *m = parse_ok(three_line);
  hlo_instr *c = m->entry->instrs[2];
  c->operands[0] = c;
  expect_error_in(m, 5, 3, "c: uses itself as operand 0");
  hlo_module_free(m);
}

static void test_parameter_numbers(void **state) {
  (void)state;
  hlo_module *m = parse_ok(three_line);
  m->entry->instrs[1]->parameter_number = 0; /* b claims a's number */
  expect_error_in(m, 4, 3, "b: parameter number 0 is also used by a");
  hlo_module_free(m);

  m = parse_ok(three_line);
  m->entry->instrs[1]->parameter_number = 2; /* leaves a gap at 1 */
  expect_error_in(m, 4, 3, "b: parameter number 2 is out of range");
  hlo_module_free(m);
}

static void test_entry_root(void **state) {
  (void)state;
  hlo_module *m = parse_ok(three_line);
  m->entry->root = NULL;
  expect_error_in(m, m->entry->line, m->entry->col, "entry computation e has no root");
  hlo_module_free(m);
}

static void test_missing_callee(void **state) {
  (void)state;
  const char *text = MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                         "red = f32[2] reduce(x, z), dimensions={1}, to_apply=add", ADD_F32);
  expect_valid(text);
  hlo_module *m = parse_ok(text);
  m->entry->instrs[3]->attrs.calls.to_apply = NULL;
  expect_error_in(m, 6, 3, "red: to_apply computation is missing");
  hlo_module_free(m);
}

/* ---- operand counts and elementwise ops --------------------------------- */

static void test_operand_count(void **state) {
  (void)state;
  const char *text = MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", FILL1,
                         "add.1 = f32[2] add(a, b)", "");
  hlo_module *m = parse_ok(text);
  m->entry->instrs[3]->noperands = 1; /* add(a) */
  expect_error_in(m, 6, 3, "add.1: expects 2 operands, got 1");
  hlo_module_free(m);
}

static void test_elementwise(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", FILL1,
                   "add.3 = f32[2] add(a, b)", ""));
  expect_error(MOD("a = f32[2] parameter(0)", "b = f32[3] parameter(1)", FILL1,
                   "add.3 = f32[2] add(a, b)", ""),
               6, 3, "add.3: operand 1 has shape f32[3] but the result is f32[2]");
  expect_error(MOD("a = f32[2] parameter(0)", "b = s32[2] parameter(1)", FILL1,
                   "mul = f32[2] multiply(a, b)", ""),
               6, 3, "mul: operand 1 has shape s32[2] but the result is f32[2]");
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2, "n = f32[3,2] negate(a)", ""), 6,
               3, "n: operand 0 has shape f32[2,3] but the result is f32[3,2]");
}

static void test_compare_and_convert(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", FILL1,
                   "c = pred[2] compare(a, b), direction=LT, type=TOTALORDER", ""));
  expect_error(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", FILL1,
                   "c = f32[2] compare(a, b), direction=LT", ""),
               6, 3, "c: the result is f32[2] but compare of f32 gives pred");
  expect_error(MOD("a = f32[2] parameter(0)", "b = s32[2] parameter(1)", FILL1,
                   "c = pred[2] compare(a, b), direction=EQ", ""),
               6, 3, "c: operand 1 has type s32 but operand 0 has f32");
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "v = s8[2] convert(a)", ""));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "v = s32[3] convert(a)", ""), 6, 3,
               "v: operand 0 has shape f32[2] but the result is s32[3]");
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "f = pred[2] is-finite(a)", ""));
}

static void test_select(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", "p = pred[2] parameter(2)",
                   "s = f32[2] select(p, a, b)", ""));
  expect_valid(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", "p = pred[] parameter(2)",
                   "s = f32[2] select(p, a, b)", ""));
  expect_error(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)",
                   "p = pred[3] parameter(2)", "s = f32[2] select(p, a, b)", ""),
               6, 3, "s: operand 0 (the predicate) has shape pred[3] but the result is f32[2]");
  expect_error(MOD("a = f32[2] parameter(0)", "b = f32[2] parameter(1)", "p = s32[2] parameter(2)",
                   "s = f32[2] select(p, a, b)", ""),
               6, 3, "s: operand 0 (the predicate) must be pred, got s32[2]");
  expect_error(MOD("a = f32[2] parameter(0)", "b = f32[] parameter(1)", "p = pred[2] parameter(2)",
                   "s = f32[2] select(p, a, b)", ""),
               6, 3, "s: operand 2 has shape f32[] but the result is f32[2]");
}

static void test_clamp(void **state) {
  (void)state;
  expect_valid(MOD("lo = f32[] parameter(0)", "x = f32[4] parameter(1)", "hi = f32[] parameter(2)",
                   "c = f32[4] clamp(lo, x, hi)", ""));
  expect_valid(MOD("lo = f32[4] parameter(0)", "x = f32[4] parameter(1)",
                   "hi = f32[4] parameter(2)", "c = f32[4] clamp(lo, x, hi)", ""));
  expect_error(MOD("lo = f32[3] parameter(0)", "x = f32[4] parameter(1)",
                   "hi = f32[] parameter(2)", "c = f32[4] clamp(lo, x, hi)", ""),
               6, 3, "c: operand 0 has shape f32[3] but the result is f32[4]");
  expect_error(MOD("lo = s32[] parameter(0)", "x = f32[4] parameter(1)", "hi = f32[] parameter(2)",
                   "c = f32[4] clamp(lo, x, hi)", ""),
               6, 3, "c: operand 0 has shape s32[] but the result is f32[4]");
}

static void test_dynamic_dims(void **state) {
  (void)state;
  /* A bounded dynamic dimension compares by its bound. */
  expect_valid(MOD("a = f32[<=4,2] parameter(0)", "b = f32[4,2] parameter(1)", FILL1,
                   "s = f32[<=4,2] add(a, b)", ""));
  expect_error(MOD("a = f32[<=4,2] parameter(0)", "b = f32[4,2] parameter(1)", FILL1,
                   "s = f32[<=5,2] add(a, b)", ""),
               6, 3, "s: operand 0 has shape f32[<=4,2] but the result is f32[<=5,2]");
}

/* ---- data movement -------------------------------------------------------- */

static void test_broadcast(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "b = f32[2,3] broadcast(a), dimensions={0}", ""));
  expect_valid(MOD("a = f32[] parameter(0)", FILL1, FILL2, "b = f32[2,3] broadcast(a), dimensions={}",
                   ""));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "b = f32[3,2] broadcast(a), dimensions={0}", ""),
               6, 3, "b: operand dimension 0 has size 2 but result dimension 0 has 3");
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2,
                   "b = f32[3,2] broadcast(a), dimensions={1,0}", ""),
               6, 3, "b: dimensions must be strictly increasing, got 0 after 1");
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2,
                   "b = f32[2,3,4] broadcast(a), dimensions={0}", ""),
               6, 3, "b: dimensions has 1 entry but operand 0 has rank 2");
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "b = f32[2,3] broadcast(a), dimensions={2}", ""),
               6, 3, "b: dimensions entry 2 is out of range for the result's rank 2");
}

static void test_reshape_and_bitcast(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2, "r = f32[6] reshape(a)", ""));
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2, "r = f32[5] reshape(a)", ""), 6, 3,
               "r: operand 0 has shape f32[2,3] (6 elements) but the result is f32[5] (5 "
               "elements)");
  /* bitcast may change the layout and the element type of the same width. */
  expect_valid(MOD("a = f32[2,3]{1,0} parameter(0)", FILL1, FILL2, "r = f32[3,2]{0,1} bitcast(a)",
                   ""));
  expect_valid(MOD("a = f32[6] parameter(0)", FILL1, FILL2, "r = s32[2,3] bitcast(a)", ""));
  /* Even a size-changing bitcast is accepted: real dumps contain them. */
  expect_valid(MOD("a = s32[] parameter(0)", FILL1, FILL2, "r = s32[32] bitcast(a)", ""));
  expect_error(MOD("a = f32[6] parameter(0)", "b = f32[6] parameter(1)", FILL1,
                   "r = f32[6] bitcast(a, b)", ""),
               6, 3, "r: expects 1 operand, got 2");
  /* bitcast-convert to a narrower type adds a minor dimension. */
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "r = u16[2,2] bitcast-convert(a)", ""));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "r = u16[2] bitcast-convert(a)", ""), 6,
               3, "r: operand 0 has shape f32[2] (64 bits) but the result u16[2] has 32 bits");
}

static void test_transpose(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2,3,4] parameter(0)", FILL1, FILL2,
                   "t = f32[4,2,3] transpose(a), dimensions={2,0,1}", ""));
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2,
                   "t = f32[2,3] transpose(a), dimensions={1,0}", ""),
               6, 3, "t: the result is f32[2,3] but the operands and attributes give f32[3,2]");
  expect_error(MOD("a = f32[2,3] parameter(0)", FILL1, FILL2,
                   "t = f32[2,2] transpose(a), dimensions={0,0}", ""),
               6, 3, "t: dimensions lists dimension 0 twice");
}

static void test_slice(void **state) {
  (void)state;
  /* [2:9:3] takes 2, 5, 8: ceil(7/3) = 3 elements. */
  expect_valid(MOD("a = f32[10] parameter(0)", FILL1, FILL2, "s = f32[3] slice(a), slice={[2:9:3]}",
                   ""));
  expect_error(MOD("a = f32[10] parameter(0)", FILL1, FILL2, "s = f32[4] slice(a), slice={[2:9:3]}",
                   ""),
               6, 3, "s: the result is f32[4] but the operands and attributes give f32[3]");
  expect_error(MOD("a = f32[10] parameter(0)", FILL1, FILL2, "s = f32[9] slice(a), slice={[2:11]}",
                   ""),
               6, 3, "s: slice dimension 0 [2:11] is out of bounds for size 10");
  expect_error(MOD("a = f32[10] parameter(0)", FILL1, FILL2, "s = f32[0] slice(a), slice={[5:4]}",
                   ""),
               6, 3, "s: slice dimension 0 [5:4] is out of bounds for size 10");
}

static void test_dynamic_slice(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[4,4] parameter(0)", "i = s32[] parameter(1)", "j = s32[] parameter(2)",
                   "ds = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}", ""));
  expect_error(MOD("x = f32[4,4] parameter(0)", "i = s32[] parameter(1)", "j = f32[] parameter(2)",
                   "ds = f32[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}", ""),
               6, 3, "ds: operand 2 (a start index) must be an integer scalar, got f32[]");
  expect_error(MOD("x = f32[4,4] parameter(0)", "i = s32[] parameter(1)", "j = s32[] parameter(2)",
                   "ds = f32[5,2] dynamic-slice(x, i, j), dynamic_slice_sizes={5,2}", ""),
               6, 3, "ds: dynamic_slice_sizes[0] = 5 does not fit in size 4");
  expect_error(MOD("x = f32[4,4] parameter(0)", "i = s32[] parameter(1)", "j = s32[] parameter(2)",
                   "ds = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}", ""),
               6, 3, "ds: the result is f32[2,3] but the operands and attributes give f32[2,2]");
}

static void test_dynamic_update_slice(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[4,4] parameter(0)", "y = f32[2,2] parameter(1)",
                   "i = s32[] parameter(2)", "u = f32[4,4] dynamic-update-slice(x, y, i, i)", ""));
  expect_error(MOD("x = f32[4,4] parameter(0)", "y = f32[5,2] parameter(1)",
                   "i = s32[] parameter(2)", "u = f32[4,4] dynamic-update-slice(x, y, i, i)", ""),
               6, 3, "u: update dimension 0 has size 5, larger than the operand's 4");
  expect_error(MOD("x = f32[4,4] parameter(0)", "y = f32[2,2] parameter(1)",
                   "i = s32[] parameter(2)", "u = f32[4,4] dynamic-update-slice(x, y, i)", ""),
               6, 3, "u: expects 2 start indices for rank 2, got 1");
  expect_error(MOD("x = f32[4,4] parameter(0)", "y = f32[2,2] parameter(1)",
                   "i = s32[] parameter(2)", "u = f32[4,2] dynamic-update-slice(x, y, i, i)", ""),
               6, 3, "u: the result is f32[4,2] but the operands and attributes give f32[4,4]");
}

static void test_concatenate(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2,3] parameter(0)", "b = f32[4,3] parameter(1)", FILL1,
                   "c = f32[6,3] concatenate(a, b), dimensions={0}", ""));
  expect_error(MOD("a = f32[2,3] parameter(0)", "b = f32[4,3] parameter(1)", FILL1,
                   "c = f32[7,3] concatenate(a, b), dimensions={0}", ""),
               6, 3, "c: the result is f32[7,3] but the operands and attributes give f32[6,3]");
  expect_error(MOD("a = f32[2,3] parameter(0)", "b = f32[4,2] parameter(1)", FILL1,
                   "c = f32[6,3] concatenate(a, b), dimensions={0}", ""),
               6, 3, "c: operand 1 has shape f32[4,2], which cannot be concatenated with f32[2,3] "
                     "along 0");
  expect_error(MOD("a = f32[2,3] parameter(0)", "b = f32[4,3] parameter(1)", FILL1,
                   "c = f32[6,3] concatenate(a, b), dimensions={2}", ""),
               6, 3, "c: dimensions must name one dimension below rank 2");
}

static void test_pad(void **state) {
  (void)state;
  /* 1 low + 3 elements + 2 interior gaps of 1 + 2 high = 8. */
  expect_valid(MOD("x = f32[3] parameter(0)", "v = f32[] parameter(1)", FILL1,
                   "p = f32[8] pad(x, v), padding=1_2_1", ""));
  /* Negative edge padding removes elements. */
  expect_valid(MOD("x = f32[3] parameter(0)", "v = f32[] parameter(1)", FILL1,
                   "p = f32[2] pad(x, v), padding=-1_0", ""));
  expect_error(MOD("x = f32[3] parameter(0)", "v = f32[] parameter(1)", FILL1,
                   "p = f32[7] pad(x, v), padding=1_2_1", ""),
               6, 3, "p: the result is f32[7] but the operands and attributes give f32[8]");
  expect_error(MOD("x = f32[3] parameter(0)", "v = f32[] parameter(1)", FILL1,
                   "p = f32[0] pad(x, v), padding=-4_0", ""),
               6, 3, "p: padding dimension 0 gives negative size -1");
  expect_error(MOD("x = f32[3] parameter(0)", "v = s32[] parameter(1)", FILL1,
                   "p = f32[3] pad(x, v), padding=0_0", ""),
               6, 3, "p: operand 1 (the padding value) must be a f32 scalar, got s32[]");
}

static void test_reverse_and_iota(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[3,2] parameter(0)", FILL1, FILL2,
                   "v = f32[3,2] reverse(x), dimensions={0,1}", ""));
  expect_error(MOD("x = f32[3] parameter(0)", FILL1, FILL2, "v = f32[3] reverse(x), dimensions={1}",
                   ""),
               6, 3, "v: dimensions entry 1 is out of range for rank 1");
  expect_valid(MOD(FILL1, FILL2, "q3 = pred[] constant(true)",
                   "io = s32[4,3] iota(), iota_dimension=1", ""));
  expect_error(MOD(FILL1, FILL2, "q3 = pred[] constant(true)",
                   "io = s32[4,3] iota(), iota_dimension=2", ""),
               6, 3, "io: iota_dimension 2 is out of range for rank 2");
}

/* ---- tuples --------------------------------------------------------------- */

static void test_tuples(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2] parameter(0)", "i = s32[] parameter(1)",
                   "t = (f32[2], s32[]) tuple(a, i)", "g = s32[] get-tuple-element(t), index=1", ""));
  expect_error(MOD("a = f32[2] parameter(0)", "i = s32[] parameter(1)",
                   "t = (f32[2], s32[]) tuple(a, i)", "g = s32[] get-tuple-element(t), index=2", ""),
               6, 3, "g: index 2 is out of range for a tuple of 2 elements");
  expect_error(MOD("a = f32[2] parameter(0)", "i = s32[] parameter(1)",
                   "t = (f32[2], s32[]) tuple(a, i)", "g = f32[] get-tuple-element(t), index=1", ""),
               6, 3, "g: the result is f32[] but the operands and attributes give s32[]");
  expect_error(MOD("a = f32[2] parameter(0)", "i = s32[] parameter(1)", FILL1,
                   "t = (f32[2], f32[]) tuple(a, i)", ""),
               6, 3, "t: the result is (f32[2], f32[]) but the operands and attributes give "
                     "(f32[2], s32[])");
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "g = f32[2] get-tuple-element(a), index=0", ""),
               6, 3, "g: operand 0 must be a tuple, got f32[2]");
}

/* ---- reductions ----------------------------------------------------------- */

static void test_reduce(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "red = f32[2] reduce(x, z), dimensions={1}, to_apply=add", ADD_F32));
  expect_valid(MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "red = f32[] reduce(x, z), dimensions={0,1}, to_apply=add", ADD_F32));
  expect_error(MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "red = f32[3] reduce(x, z), dimensions={1}, to_apply=add", ADD_F32),
               6, 3, "red: the result is f32[3] but the operands and attributes give f32[2]");
  expect_error(MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "red = f32[2] reduce(x, z), dimensions={1}, to_apply=add3", ADD3_F32),
               6, 3, "red: to_apply computation add3 has 3 parameters, expected 2");
  expect_error(MOD("x = f32[2,3] parameter(0)", "z = f32[2] parameter(1)", FILL1,
                   "red = f32[2] reduce(x, z), dimensions={1}, to_apply=add", ADD_F32),
               6, 3, "red: operand 1 (an initial value) must be a scalar, got f32[2]");
  expect_error(MOD("x = f32[2,3] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "red = f32[2] reduce(x, z), dimensions={2}, to_apply=add", ADD_F32),
               6, 3, "red: dimensions entry 2 is out of range for rank 2");
}

static void test_reduce_variadic(void **state) {
  (void)state;
  /* argmax over dimension 1: two inputs, two initial values, a tuple. */
  expect_valid("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
               "  k = s32[2,3] parameter(1)\n  z = f32[] constant(0)\n  q = s32[] constant(0)\n"
               "  ROOT r = (f32[2], s32[2]) reduce(x, k, z, q), dimensions={1}, to_apply=argmax\n"
               "}\n" ARGMAX);
  /* Same module, reducer with 2 parameters: 2 inputs need 4. */
  expect_error("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
               "  k = s32[2,3] parameter(1)\n  z = f32[] constant(0)\n  q = s32[] constant(0)\n"
               "  ROOT r = (f32[2], s32[2]) reduce(x, k, z, q), dimensions={1}, to_apply=add\n"
               "}\n" ADD_F32,
               7, 8, "r: to_apply computation add has 2 parameters, expected 4");
  /* Inputs of different dimensions. */
  expect_error("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
               "  k = s32[3,2] parameter(1)\n  z = f32[] constant(0)\n  q = s32[] constant(0)\n"
               "  ROOT r = (f32[2], s32[2]) reduce(x, k, z, q), dimensions={1}, to_apply=argmax\n"
               "}\n" ARGMAX,
               7, 8, "r: input 1 has shape s32[3,2] but input 0 is f32[2,3]");
}

static void test_reduce_window(void **state) {
  (void)state;
  /* 4/2 = 2 windows along dimension 0, 6/3 = 2 along dimension 1. */
  expect_valid(MOD("x = f32[4,6] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "rw = f32[2,2] reduce-window(x, z), window={size=2x3 stride=2x3}, to_apply=add",
                   ADD_F32));
  /* Padding 1 on each side keeps size 5 for a window of 3. */
  expect_valid(MOD("x = f32[5] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "rw = f32[5] reduce-window(x, z), window={size=3 pad=1_1}, to_apply=add", ADD_F32));
  /* lhs dilation 2 turns 4 into 7; a window of 2 dilated by 2 spans 3: 5. */
  expect_valid(MOD("x = f32[4] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "rw = f32[5] reduce-window(x, z), window={size=2 lhs_dilate=2 rhs_dilate=2}, "
                   "to_apply=add",
                   ADD_F32));
  expect_error(MOD("x = f32[4,6] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "rw = f32[3,2] reduce-window(x, z), window={size=2x3 stride=2x3}, to_apply=add",
                   ADD_F32),
               6, 3, "rw: the result is f32[3,2] but the operands and attributes give f32[2,2]");
  expect_error(MOD("x = f32[4,6] parameter(0)", "z = f32[] constant(0)", FILL1,
                   "rw = f32[3,6] reduce-window(x, z), window={size=2}, to_apply=add", ADD_F32),
               6, 3, "rw: window has 1 dimensions but the input has rank 2");
}

static void test_select_and_scatter(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[4] parameter(0)", "s = f32[2] parameter(1)", "z = f32[] constant(0)",
                   "ss = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, "
                   "select=ge, scatter=add",
                   ADD_F32 GE_F32));
  expect_error(MOD("x = f32[4] parameter(0)", "s = f32[3] parameter(1)", "z = f32[] constant(0)",
                   "ss = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, "
                   "select=ge, scatter=add",
                   ADD_F32 GE_F32),
               6, 3, "ss: operand 1 (the source) has shape f32[3] but the window over operand 0 "
                     "gives f32[2]");
  expect_error(MOD("x = f32[4] parameter(0)", "s = f32[2] parameter(1)", "z = f32[] constant(0)",
                   "ss = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, "
                   "select=add3, scatter=add",
                   ADD_F32 ADD3_F32),
               6, 3, "ss: select computation add3 has 3 parameters, expected 2");
}

/* ---- dot and convolution -------------------------------------------------- */

#define DOT_DIMS \
  "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"

static void test_dot(void **state) {
  (void)state;
  /* batch 2, lhs free 3, rhs free 5. */
  expect_valid(MOD("l = f32[2,3,4] parameter(0)", "r = f32[2,4,5] parameter(1)", FILL1,
                   "d = f32[2,3,5] dot(l, r), " DOT_DIMS, ""));
  /* The result type may differ (preferred_element_type). */
  expect_valid(MOD("l = bf16[2,3,4] parameter(0)", "r = bf16[2,4,5] parameter(1)", FILL1,
                   "d = f32[2,3,5] dot(l, r), " DOT_DIMS ", operand_precision={highest,highest}",
                   ""));
  expect_valid(MOD("l = f32[4] parameter(0)", "r = f32[4] parameter(1)", FILL1,
                   "d = f32[] dot(l, r), lhs_contracting_dims={0}, rhs_contracting_dims={0}", ""));
  expect_error(MOD("l = f32[2,3,4] parameter(0)", "r = f32[2,6,5] parameter(1)", FILL1,
                   "d = f32[2,3,5] dot(l, r), " DOT_DIMS, ""),
               6, 3, "d: contracting dimension 0 has size 4 on lhs (dimension 2) but 6 on rhs "
                     "(dimension 1)");
  expect_error(MOD("l = f32[2,3,4] parameter(0)", "r = f32[3,4,5] parameter(1)", FILL1,
                   "d = f32[2,3,5] dot(l, r), " DOT_DIMS, ""),
               6, 3, "d: batch dimension 0 has size 2 on lhs but 3 on rhs");
  expect_error(MOD("l = f32[2,3,4] parameter(0)", "r = f32[2,4,5] parameter(1)", FILL1,
                   "d = f32[2,5,3] dot(l, r), " DOT_DIMS, ""),
               6, 3, "d: the result is f32[2,5,3] but the operands and attributes give f32[2,3,5]");
}

static void test_convolution(void **state) {
  (void)state;
  /* 3x3 kernel, padding 1: spatial sizes kept; 4 -> 8 features. */
  expect_valid(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,4,8] parameter(1)", FILL1,
                   "c = f32[1,5,5,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                   "dim_labels=b01f_01io->b01f",
                   ""));
  /* Stride 2 without padding: (5-3)/2+1 = 2. */
  expect_valid(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,4,8] parameter(1)", FILL1,
                   "c = f32[1,2,2,8] convolution(x, k), window={size=3x3 stride=2x2}, "
                   "dim_labels=b01f_01io->b01f",
                   ""));
  /* Two feature groups: the kernel sees 4/2 = 2 input features. */
  expect_valid(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,2,8] parameter(1)", FILL1,
                   "c = f32[1,5,5,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                   "dim_labels=b01f_01io->b01f, feature_group_count=2",
                   ""));
  expect_error(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,4,8] parameter(1)", FILL1,
                   "c = f32[1,5,5,8] convolution(x, k), window={size=2x2 pad=1_1x1_1}, "
                   "dim_labels=b01f_01io->b01f",
                   ""),
               6, 3, "c: window size 2 in spatial dimension 0 differs from the kernel's 3");
  expect_error(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,4,8] parameter(1)", FILL1,
                   "c = f32[1,5,5,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                   "dim_labels=b01f_01io->b01f, feature_group_count=3",
                   ""),
               6, 3, "c: input feature size 4 divided by feature_group_count 3 must equal the "
                     "kernel's input feature size 4");
  expect_error(MOD("x = f32[1,5,5,4] parameter(0)", "k = f32[3,3,4,8] parameter(1)", FILL1,
                   "c = f32[1,4,4,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                   "dim_labels=b01f_01io->b01f",
                   ""),
               6, 3, "c: the result is f32[1,4,4,8] but the operands and attributes give "
                     "f32[1,5,5,8]");
}

/* ---- gather, scatter, sort --------------------------------------------- */

#define GATHER_DIMS                                                                  \
  "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1"

static void test_gather(void **state) {
  (void)state;
  /* Three rows of 4 picked by three indices. */
  expect_valid(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)", FILL1,
                   "g = f32[3,4] gather(x, i), " GATHER_DIMS ", slice_sizes={1,4}", ""));
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)", FILL1,
                   "g = f32[3,5] gather(x, i), " GATHER_DIMS ", slice_sizes={1,5}", ""),
               6, 3, "g: slice_sizes[1] = 5 does not fit in size 4");
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)", FILL1,
                   "g = f32[4,3] gather(x, i), " GATHER_DIMS ", slice_sizes={1,4}", ""),
               6, 3, "g: the result is f32[4,3] but the operands and attributes give f32[3,4]");
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)", FILL1,
                   "g = f32[3,4] gather(x, i), " GATHER_DIMS ", slice_sizes={2,4}", ""),
               6, 3, "g: slice_sizes[0] = 2 but a collapsed or batching dimension must be 1");
}

#define SCATTER_DIMS                                                                     \
  "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, " \
  "index_vector_dim=1"

static void test_scatter(void **state) {
  (void)state;
  expect_valid(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)",
                   "u = f32[3,4] parameter(2)",
                   "s = f32[5,4] scatter(x, i, u), " SCATTER_DIMS ", to_apply=add", ADD_F32));
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)",
                   "u = f32[2,4] parameter(2)",
                   "s = f32[5,4] scatter(x, i, u), " SCATTER_DIMS ", to_apply=add", ADD_F32),
               6, 3, "s: update 0 dimension 0 has size 2 but indices dimension 0 has 3");
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)",
                   "u = f32[3,6] parameter(2)",
                   "s = f32[5,4] scatter(x, i, u), " SCATTER_DIMS ", to_apply=add", ADD_F32),
               6, 3, "s: update 0 dimension 1 has size 6, larger than operand dimension 1 (4)");
  expect_error(MOD("x = f32[5,4] parameter(0)", "i = s32[3,1] parameter(1)",
                   "u = f32[3,4] parameter(2)",
                   "s = f32[5,4] scatter(x, i, u), " SCATTER_DIMS ", to_apply=add3", ADD3_F32),
               6, 3, "s: to_apply computation add3 has 3 parameters, expected 2");
}

static void test_sort(void **state) {
  (void)state;
  expect_valid(MOD("k = f32[4] parameter(0)", "v = s32[4] parameter(1)", FILL1,
                   "s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp", CMP4));
  expect_error(MOD("k = f32[4] parameter(0)", "v = s32[4] parameter(1)", FILL1,
                   "s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp", CMP2),
               6, 3, "s: comparator computation cmp has 2 parameters, expected 4");
  expect_error(MOD("k = f32[4] parameter(0)", FILL1, FILL2,
                   "s = f32[4] sort(k), dimensions={1}, to_apply=cmp", CMP2),
               6, 3, "s: dimensions must name one dimension below rank 1");
  expect_error(MOD("k = f32[4] parameter(0)", "v = s32[5] parameter(1)", FILL1,
                   "s = (f32[4], s32[5]) sort(k, v), dimensions={0}, to_apply=cmp", CMP4),
               6, 3, "s: operand 1 has shape s32[5] but operand 0 is f32[4]");
}

/* ---- control flow and calls -------------------------------------------------- */

#define WHILE_COMPS(cond_root)                                                           \
  "cond {\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n" \
  "  n = s32[] constant(3)\n  " cond_root "\n}\n"                                        \
  "body {\n  p = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n" \
  "  x = f32[2] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n"              \
  "  j = s32[] add(i, one)\n  ROOT t = (s32[], f32[2]) tuple(j, x)\n}\n"

static void test_while(void **state) {
  (void)state;
  expect_valid(MOD("i = s32[] constant(0)", "x = f32[2] parameter(0)",
                   "t = (s32[], f32[2]) tuple(i, x)",
                   "w = (s32[], f32[2]) while(t), condition=cond, body=body",
                   WHILE_COMPS("ROOT lt = pred[] compare(i, n), direction=LT")));
  expect_error(MOD("i = s32[] constant(0)", "x = f32[2] parameter(0)",
                   "t = (s32[], f32[2]) tuple(i, x)",
                   "w = (s32[], f32[2]) while(t), condition=cond, body=body",
                   WHILE_COMPS("ROOT lt = s32[] add(i, n)")),
               6, 3, "w: condition computation cond must return pred[], returns s32[]");
  /* The loop state does not match what body and condition take. */
  expect_error(MOD("i = s32[] constant(0)", "x = f32[3] parameter(0)",
                   "t = (s32[], f32[3]) tuple(i, x)",
                   "w = (s32[], f32[3]) while(t), condition=cond, body=body",
                   WHILE_COMPS("ROOT lt = pred[] compare(i, n), direction=LT")),
               6, 3, "w: parameter 0 of computation cond has shape (s32[], f32[2]) but operand 0 "
                     "is (s32[], f32[3])");
}

#define BRANCHES                                                                        \
  "b0 {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"                   \
  "b1 {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] abs(p)\n}\n"                      \
  "b2 {\n  p = f32[2] parameter(0)\n  q = f32[2] parameter(1)\n  ROOT n = f32[2] add(p, q)\n}\n"

static void test_conditional(void **state) {
  (void)state;
  expect_valid(MOD("k = s32[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x, x), branch_computations={b0, b1}", BRANCHES));
  expect_valid(MOD("k = pred[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x, x), true_computation=b0, false_computation=b1",
                   BRANCHES));
  expect_error(MOD("k = pred[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x, x, x), branch_computations={b0, b1, b0}",
                   BRANCHES),
               6, 3, "c: a pred branch index needs 2 branches, got 3");
  expect_error(MOD("k = s32[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x, x), branch_computations={b0, b2}", BRANCHES),
               6, 3, "c: branch 1 computation b2 has 2 parameters, expected 1");
  expect_error(MOD("k = s32[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x), branch_computations={b0, b1}", BRANCHES),
               6, 3, "c: has 2 branch computations, so it expects 3 operands, got 2");
  expect_error(MOD("k = f32[] parameter(0)", "x = f32[2] parameter(1)", FILL1,
                   "c = f32[2] conditional(k, x, x), branch_computations={b0, b1}", BRANCHES),
               6, 3, "c: operand 0 (the branch index) must be pred[] or s32[], got f32[]");
}

#define FUSED(p1shape)                                                                  \
  "fused {\n  p0 = f32[2] parameter(0)\n  p1 = " p1shape " parameter(1)\n"              \
  "  ROOT m = f32[2] multiply(p0, p0)\n}\n"

static void test_fusion_and_call(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2]{0} parameter(0)", "b = s32[4] parameter(1)", FILL1,
                   "f = f32[2] fusion(a, b), kind=kLoop, calls=fused", FUSED("s32[4]{0}")));
  expect_error(MOD("a = f32[2] parameter(0)", "b = s32[4] parameter(1)", FILL1,
                   "f = f32[2] fusion(a, b), kind=kLoop, calls=fused", FUSED("s32[3]")),
               6, 3, "f: parameter 1 of computation fused has shape s32[3] but operand 1 is s32[4]");
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "f = f32[2] fusion(a), kind=kLoop, calls=fused", FUSED("s32[4]")),
               6, 3, "f: fused computation fused has 2 parameters, expected 1");
  expect_error(MOD("a = f32[2] parameter(0)", "b = s32[4] parameter(1)", FILL1,
                   "f = f32[3] fusion(a, b), kind=kLoop, calls=fused", FUSED("s32[4]")),
               6, 3, "f: computation fused returns f32[2] but the result is f32[3]");
  expect_valid(MOD("a = f32[2] parameter(0)", "b = s32[4] parameter(1)", FILL1,
                   "f = f32[2] call(a, b), to_apply=fused", FUSED("s32[4]")));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2, "f = f32[2] call(a), to_apply=fused",
                   FUSED("s32[4]")),
               6, 3, "f: called computation fused has 2 parameters, expected 1");
}

static void test_map(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[4] parameter(0)", "b = f32[4] parameter(1)", FILL1,
                   "m = f32[4] map(a, b), dimensions={0}, to_apply=add", ADD_F32));
  expect_error(MOD("a = f32[4] parameter(0)", FILL1, FILL2,
                   "m = f32[4] map(a), dimensions={0}, to_apply=add", ADD_F32),
               6, 3, "m: to_apply computation add has 2 parameters, expected 1");
  expect_error(MOD("a = f32[4] parameter(0)", "b = f32[5] parameter(1)", FILL1,
                   "m = f32[4] map(a, b), dimensions={0}, to_apply=add", ADD_F32),
               6, 3, "m: operand 1 has shape f32[5] but the result is f32[4]");
}

/* ---- collectives ---------------------------------------------------------- */

static void test_collectives(void **state) {
  (void)state;
  expect_valid(MOD("a = f32[2,4] parameter(0)", FILL1, FILL2,
                   "ag = f32[8,4] all-gather(a), replica_groups={{0,1,2,3}}, dimensions={0}", ""));
  expect_error(MOD("a = f32[2,4] parameter(0)", FILL1, FILL2,
                   "ag = f32[6,4] all-gather(a), replica_groups={{0,1,2,3}}, dimensions={0}", ""),
               6, 3, "ag: operand 0 has shape f32[2,4] but the result is f32[6,4] for replica "
                     "groups of that size");
  /* No explicit groups: the size is unknown, so any multiple passes. */
  expect_valid(MOD("a = f32[2,4] parameter(0)", FILL1, FILL2,
                   "ag = f32[6,4] all-gather(a), replica_groups={}, dimensions={0}", ""));
  expect_error(MOD("a = f32[2,4] parameter(0)", FILL1, FILL2,
                   "ag = f32[2,5] all-gather(a), replica_groups={}, dimensions={0}", ""),
               6, 3, "ag: operand 0 has shape f32[2,4] but the result is f32[2,5]");
  /* Two operands gather into a tuple. */
  expect_valid(MOD("a = f32[2] parameter(0)", "b = s32[1,3] parameter(1)", FILL1,
                   "ag = (f32[4], s32[2,3]) all-gather(a, b), replica_groups={{0,1}}, "
                   "dimensions={0}",
                   ""));
  expect_valid(MOD("a = f32[8] parameter(0)", FILL1, FILL2,
                   "rs = f32[2] reduce-scatter(a), replica_groups={{0,1,2,3}}, dimensions={0}, "
                   "to_apply=add",
                   ADD_F32));
  expect_error(MOD("a = f32[8] parameter(0)", FILL1, FILL2,
                   "rs = f32[4] reduce-scatter(a), replica_groups={{0,1,2,3}}, dimensions={0}, "
                   "to_apply=add",
                   ADD_F32),
               6, 3, "rs: operand 0 has shape f32[8] but the result is f32[4]");
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "ar = f32[2] all-reduce(a), replica_groups={}, to_apply=add", ADD_F32));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "ar = f32[3] all-reduce(a), replica_groups={}, to_apply=add", ADD_F32),
               6, 3, "ar: the result is f32[3] but the operands and attributes give f32[2]");
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "ar = f32[2] all-reduce(a), replica_groups={}, to_apply=add3", ADD3_F32),
               6, 3, "ar: to_apply computation add3 has 3 parameters, expected 2");
  expect_valid(MOD("a = f32[8,2] parameter(0)", FILL1, FILL2,
                   "aa = f32[8,2] all-to-all(a), replica_groups={{0,1,2,3}}, dimensions={0}", ""));
  expect_error(MOD("a = f32[6,2] parameter(0)", FILL1, FILL2,
                   "aa = f32[6,2] all-to-all(a), replica_groups={{0,1,2,3}}, dimensions={0}", ""),
               6, 3, "aa: split dimension size 6 is not divisible by the group size 4");
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "cp = f32[2] collective-permute(a), source_target_pairs={{0,1},{1,0}}", ""));
  expect_error(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "cp = f32[4] collective-permute(a), source_target_pairs={{0,1},{1,0}}", ""),
               6, 3, "cp: the result is f32[4] but the operands and attributes give f32[2]");
}

/* ragged-all-to-all(input, output, input_offsets, send_sizes,
 * output_offsets, recv_sizes), per XLA's RaggedAllToAll: the result is the
 * output's shape; input and output differ at most in dimension 0; the
 * metadata are rank-1 s32/s64 arrays of one length that a group divides. */
#define RAGGED(in, out, meta5, res)                                                              \
  "HloModule m\nENTRY e {\n  x = " in " parameter(0)\n  o = " out " parameter(1)\n"              \
  "  io = s32[4] parameter(2)\n  ss = s32[4] parameter(3)\n  oo = s64[4] parameter(4)\n"          \
  "  rs = " meta5 " parameter(5)\n"                                                               \
  "  ROOT ra = " res " ragged-all-to-all(x, o, io, ss, oo, rs), replica_groups={{0,1}}\n}\n"

static void test_ragged_all_to_all(void **state) {
  (void)state;
  expect_valid(RAGGED("f32[3,2]", "f32[5,2]", "s32[4]", "f32[5,2]"));
  /* line 9, the name at column 8 after "  ROOT " */
  expect_error(RAGGED("f32[3,2]", "f32[5,2]", "s32[4]", "f32[3,2]"), 9, 8,
               "ra: the result is f32[3,2] but the operands and attributes give f32[5,2]");
  expect_error(RAGGED("f32[3,3]", "f32[5,2]", "s32[4]", "f32[5,2]"), 9, 8,
               "ra: input f32[3,3] and output f32[5,2] must have one element type");
  expect_error(RAGGED("f32[3,2]", "f32[5,2]", "f32[4]", "f32[5,2]"), 9, 8,
               "operands 2 to 5 must be rank-1 s32 or s64 arrays of one length, operand 5 is f32[4]");
  expect_error(RAGGED("f32[3,2]", "f32[5,2]", "s32[3]", "f32[5,2]"), 9, 8,
               "operand 5 is s32[3]");
  /* 3 entries cannot give two members the same number of updates */
  expect_error("HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  o = f32[5] parameter(1)\n"
               "  io = s32[3] parameter(2)\n  ss = s32[3] parameter(3)\n  oo = s32[3] parameter(4)\n"
               "  ROOT ra = f32[5] ragged-all-to-all(x, o, io, ss, oo, oo), replica_groups={{0,1}}\n}\n",
               8, 8, "ra: 3 metadata entries do not divide among groups of 2");
}

static void test_constant(void **state) {
  (void)state;
  expect_valid(MOD(FILL1, FILL2, "q3 = pred[] constant(true)", "c = f32[3] constant({1, 2, 3})",
                   ""));
  /* A single value fills the whole shape (splat). */
  expect_valid(MOD(FILL1, FILL2, "q3 = pred[] constant(true)", "c = f32[4,4] constant(0)", ""));
  /* The parser refuses a short literal, so shorten a parsed one. */
  hlo_module *m = parse_ok(MOD(FILL1, FILL2, "q3 = pred[] constant(true)",
                               "c = f32[3] constant({1, 2, 3})", ""));
  m->entry->instrs[3]->literal->count = 2;
  expect_error_in(m, 6, 3, "c: the literal has 2 elements but the shape needs 3");
  hlo_module_free(m);
}

static void test_no_rule_accepted(void **state) {
  (void)state;
  /* custom-call has no shape rule: anything goes. */
  expect_valid(MOD("a = f32[2] parameter(0)", FILL1, FILL2,
                   "cc = (s8[7], f32[]) custom-call(a), custom_call_target=\"foo\"", ""));
}

/* ---- the public helpers ------------------------------------------------- */

static void test_window_out_size(void **state) {
  (void)state;
  hlo_window_dim w = {.size = 3, .stride = 1, .pad_lo = 0, .pad_hi = 0, .lhs_dilate = 1,
                      .rhs_dilate = 1};
  assert_int_equal(hlo_window_out_size(5, &w), 3);
  w.stride = 2;
  assert_int_equal(hlo_window_out_size(5, &w), 2);
  w.stride = 1;
  w.pad_lo = w.pad_hi = 1;
  assert_int_equal(hlo_window_out_size(5, &w), 5);
  w.pad_lo = w.pad_hi = 0;
  w.lhs_dilate = 2; /* 4 -> 7 */
  assert_int_equal(hlo_window_out_size(4, &w), 5);
  w.lhs_dilate = 1;
  w.rhs_dilate = 3; /* span 7 > 5 */
  assert_int_equal(hlo_window_out_size(5, &w), 0);
  w.stride = 0;
  assert_int_equal(hlo_window_out_size(5, &w), -1);
}

static void test_shape_format(void **state) {
  (void)state;
  int64_t dims[2] = {3, 4};
  uint8_t dyn[2] = {HLO_DIM_STATIC, HLO_DIM_BOUNDED};
  hlo_shape a = {.type = HLO_F32, .rank = 2, .dims = dims, .dynamic = dyn};
  hlo_shape b = {.type = HLO_S32};
  hlo_shape elems[2] = {a, b};
  hlo_shape t = {.type = HLO_TUPLE, .ntuple = 2, .elems = elems};
  char buf[64];
  assert_string_equal(hlo_shape_format(&a, buf, sizeof buf), "f32[3,<=4]");
  assert_string_equal(hlo_shape_format(&t, buf, sizeof buf), "(f32[3,<=4], s32[])");
  assert_string_equal(hlo_shape_format(&t, buf, 8), "(f32...");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structure_valid),
      cmocka_unit_test(test_duplicate_name),
      cmocka_unit_test(test_use_before_definition),
      cmocka_unit_test(test_self_operand),
      cmocka_unit_test(test_parameter_numbers),
      cmocka_unit_test(test_entry_root),
      cmocka_unit_test(test_missing_callee),
      cmocka_unit_test(test_operand_count),
      cmocka_unit_test(test_elementwise),
      cmocka_unit_test(test_compare_and_convert),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_clamp),
      cmocka_unit_test(test_dynamic_dims),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_reshape_and_bitcast),
      cmocka_unit_test(test_transpose),
      cmocka_unit_test(test_slice),
      cmocka_unit_test(test_dynamic_slice),
      cmocka_unit_test(test_dynamic_update_slice),
      cmocka_unit_test(test_concatenate),
      cmocka_unit_test(test_pad),
      cmocka_unit_test(test_reverse_and_iota),
      cmocka_unit_test(test_tuples),
      cmocka_unit_test(test_reduce),
      cmocka_unit_test(test_reduce_variadic),
      cmocka_unit_test(test_reduce_window),
      cmocka_unit_test(test_select_and_scatter),
      cmocka_unit_test(test_dot),
      cmocka_unit_test(test_convolution),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_scatter),
      cmocka_unit_test(test_sort),
      cmocka_unit_test(test_while),
      cmocka_unit_test(test_conditional),
      cmocka_unit_test(test_fusion_and_call),
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_collectives),
      cmocka_unit_test(test_ragged_all_to_all),
      cmocka_unit_test(test_constant),
      cmocka_unit_test(test_no_rule_accepted),
      cmocka_unit_test(test_window_out_size),
      cmocka_unit_test(test_shape_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
