/* test_dev_ew_row.c — the row forms of dev_el_ew_row (a select, a
 * compare, binary u32 ops) give, element for element, what the device's
 * per-element lowering dev_el_ew_apply gives, on the values where the two
 * could part: NaNs, -0 against +0, infinities, u32 values at and above
 * 2^31, products and sums that wrap, shifts by 31, 32 and more, and a
 * scalar operand (step 0), and integer and pred compares: s32 and u32
 * across the top bit, an explicit type= overriding the signedness, with
 * and without the defect unsigned-cmp-signed.  A few elements are also
 * checked against what HLO semantics say by hand: u32 arithmetic is
 * modulo 2^32, a logical shift by the width or more gives 0, every
 * ordered compare with a NaN is false while NE is true, s32 orders signed
 * and u32 unsigned unless type= says otherwise, the defect makes an
 * unsigned compare signed, and false < true.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "device/dev_elemental_internal.h"
#include "hlo/hlo_parse.h"

static const char *const text =
    "HloModule m\n"
    "ENTRY e {\n"
    "  a = f32[16] parameter(0)\n  b = f32[16] parameter(1)\n"
    "  u = u32[16] parameter(2)\n  v = u32[16] parameter(3)\n  c = pred[16] parameter(4)\n"
    "  eq = pred[16] compare(a, b), direction=EQ\n"
    "  ne = pred[16] compare(a, b), direction=NE\n"
    "  lt = pred[16] compare(a, b), direction=LT\n"
    "  le = pred[16] compare(a, b), direction=LE\n"
    "  gt = pred[16] compare(a, b), direction=GT\n"
    "  ge = pred[16] compare(a, b), direction=GE\n"
    "  tlt = pred[16] compare(a, b), direction=LT, type=TOTALORDER\n"
    "  teq = pred[16] compare(a, b), direction=EQ, type=TOTALORDER\n"
    "  sel = f32[16] select(c, a, b)\n"
    "  add = u32[16] add(u, v)\n  sub = u32[16] subtract(u, v)\n  mul = u32[16] multiply(u, v)\n"
    "  and = u32[16] and(u, v)\n  or = u32[16] or(u, v)\n  xor = u32[16] xor(u, v)\n"
    "  shl = u32[16] shift-left(u, v)\n  shr = u32[16] shift-right-logical(u, v)\n"
    "  s = s32[16] parameter(5)\n  q = s32[16] parameter(6)\n  d = pred[16] parameter(7)\n"
    "  slt = pred[16] compare(s, q), direction=LT\n  sge = pred[16] compare(s, q), direction=GE\n"
    "  seq = pred[16] compare(s, q), direction=EQ\n"
    "  sltu = pred[16] compare(s, q), direction=LT, type=UNSIGNED\n"
    "  ult = pred[16] compare(u, v), direction=LT\n  ugt = pred[16] compare(u, v), direction=GT\n"
    "  une = pred[16] compare(u, v), direction=NE\n"
    "  ults = pred[16] compare(u, v), direction=LT, type=SIGNED\n"
    "  plt = pred[16] compare(c, d), direction=LT\n  peq = pred[16] compare(c, d), direction=EQ\n"
    "  ROOT t = (pred[16], u32[16]) tuple(eq, add)\n"
    "}\n";

enum { N = 16 };

static const hlo_instr *find(const hlo_module *m, const char *name) {
  for (int i = 0; i < m->entry->ninstrs; i++)
    if (strcmp(m->entry->instrs[i]->name, name) == 0)
      return m->entry->instrs[i];
  fail_msg("no instruction %s", name);
  return NULL;
}

static dev_slot fs(double f) {
  dev_slot s;
  s.f = f;
  return s;
}

static dev_slot is(int64_t i) {
  dev_slot s;
  s.i = i;
  return s;
}

/* s32 pairs covering both signs, equal values and the extremes; a second
 * pred operand whose pattern differs from c's */
static void int_operands(dev_slot *s, dev_slot *q, dev_slot *d) {
  const int64_t sa[N] = {-5, 3, 0, -1, INT32_MIN, INT32_MAX, 7, -7, 1, 0, -2147483647, 100, -100, 42, 2, -3};
  const int64_t sb[N] = {3, -5, 0, 0, INT32_MAX, INT32_MIN, 7, 7, -1, -1, -2147483648, 99, -99, 42, -2, -3};
  for (int i = 0; i < N; i++) {
    s[i] = is(sa[i]);
    q[i] = is(sb[i]);
    d[i] = is(i % 2);
  }
}

/* operands: float pairs covering NaN, signed zeros, infinities, equal and
 * ordered values; u32 pairs covering wrap, the top bit and shift counts */
static void operands(dev_slot *a, dev_slot *b, dev_slot *u, dev_slot *v, dev_slot *c) {
  const double fa[N] = {NAN, 1, NAN, -0.0, 0.0, INFINITY, -INFINITY, 2, 3, -1, 1e30, -NAN, 5, 0.5, -2, 7};
  const double fb[N] = {1, NAN, NAN, 0.0, -0.0, INFINITY, 1, 2, 2, -1, -1e30, 4, -NAN, 0.25, -3, 7};
  const int64_t ua[N] = {0xFFFFFFFF, 0x80000000, 3, 1, 1, 1, 0xDEADBEEF, 0, 5, 0x7FFFFFFF, 0x12345678,
                         0xFFFFFFFF, 8, 0x80000001, 9, 0xCAFEBABE};
  const int64_t ub[N] = {2, 0x80000000, 31, 32, 33, 0xFFFFFFFF, 13, 0, 7, 1, 0x9E3779B9, 0xFFFFFFFF, 3, 31,
                         64, 16};
  for (int i = 0; i < N; i++) {
    a[i] = fs(fa[i]);
    b[i] = fs(fb[i]);
    u[i] = is(ua[i]);
    v[i] = is(ub[i]);
    c[i] = is(i % 3 == 0);
  }
}

/* dev_el_ew_row against dev_el_ew_apply element by element, operands
 * stepped (1) and, for the second, held at its element k (0), both with
 * the defects of `clean` */
static void same_as_apply_with(const dev_elem *clean, const hlo_instr *ins, const dev_slot *const *x);

static void same_as_apply(const hlo_instr *ins, const dev_slot *const *x) {
  static const dev_elem clean; /* no defect, nothing elided */
  same_as_apply_with(&clean, ins, x);
}

static void same_as_apply_with(const dev_elem *clean, const hlo_instr *ins, const dev_slot *const *x) {
  int nop = ins->noperands;
  dev_slot row[N];
  int64_t step[3] = {1, 1, 1};
  assert_true(dev_el_ew_row(clean, ins, x, step, row, N));
  for (int i = 0; i < N; i++) {
    dev_slot in[3];
    for (int j = 0; j < nop; j++)
      in[j] = x[j][i];
    dev_slot one = dev_el_ew_apply(clean, ins, in);
    if (memcmp(&one, &row[i], sizeof one) != 0)
      fail_msg("%s element %d: row %lld, per element %lld", ins->name, i, (long long)row[i].i, (long long)one.i);
  }
  for (int k = 0; k < N; k += 5) {
    step[nop - 1] = 0;
    const dev_slot *y[3] = {x[0], x[1], nop > 2 ? x[2] : NULL};
    y[nop - 1] = x[nop - 1] + k;
    assert_true(dev_el_ew_row(clean, ins, y, step, row, N));
    for (int i = 0; i < N; i++) {
      dev_slot in[3];
      for (int j = 0; j < nop; j++)
        in[j] = x[j][i];
      in[nop - 1] = x[nop - 1][k];
      dev_slot one = dev_el_ew_apply(clean, ins, in);
      if (memcmp(&one, &row[i], sizeof one) != 0)
        fail_msg("%s element %d, scalar %d: row %lld, per element %lld", ins->name, i, k, (long long)row[i].i,
                 (long long)one.i);
    }
    step[nop - 1] = 1;
  }
}

static void test_rows_match_the_per_element_lowering(void **state) {
  (void)state;
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  dev_slot a[N], b[N], u[N], v[N], c[N];
  operands(a, b, u, v, c);
  const dev_slot *fab[2] = {a, b}, *uv[2] = {u, v}, *sel[3] = {c, a, b};
  const char *fcmp[] = {"eq", "ne", "lt", "le", "gt", "ge", "tlt", "teq"};
  for (size_t i = 0; i < sizeof fcmp / sizeof fcmp[0]; i++)
    same_as_apply(find(m, fcmp[i]), fab);
  same_as_apply(find(m, "sel"), sel);
  const char *uops[] = {"add", "sub", "mul", "and", "or", "xor", "shl", "shr"};
  for (size_t i = 0; i < sizeof uops / sizeof uops[0]; i++)
    same_as_apply(find(m, uops[i]), uv);
  dev_slot s[N], q[N], d[N];
  int_operands(s, q, d);
  const dev_slot *sq[2] = {s, q}, *cd[2] = {c, d};
  const char *scmp[] = {"slt", "sge", "seq", "sltu"}, *ucmp[] = {"ult", "ugt", "une", "ults"};
  dev_elem bug; /* the defect unsigned-cmp-signed */
  memset(&bug, 0, sizeof bug);
  bug.defects = 1u << DEV_DEFECT_UNSIGNED_CMP_SIGNED;
  for (size_t i = 0; i < 4; i++) {
    same_as_apply(find(m, scmp[i]), sq);
    same_as_apply(find(m, ucmp[i]), uv);
    same_as_apply_with(&bug, find(m, scmp[i]), sq);
    same_as_apply_with(&bug, find(m, ucmp[i]), uv);
  }
  same_as_apply(find(m, "plt"), cd);
  same_as_apply(find(m, "peq"), cd);
  hlo_module_free(m);
}

static dev_slot row_at_with(const dev_elem *e, const hlo_module *m, const char *name, const dev_slot *const *x,
                            int i) {
  const int64_t step[3] = {1, 1, 1};
  dev_slot row[N];
  assert_true(dev_el_ew_row(e, find(m, name), x, step, row, N));
  return row[i];
}

static dev_slot row_at(const hlo_module *m, const char *name, const dev_slot *const *x, int i) {
  static const dev_elem clean;
  return row_at_with(&clean, m, name, x, i);
}

/* Values worked out from HLO semantics, not from either lowering. */
static void test_rows_by_hand(void **state) {
  (void)state;
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  dev_slot a[N], b[N], u[N], v[N], c[N];
  operands(a, b, u, v, c);
  const dev_slot *fab[2] = {a, b}, *uv[2] = {u, v}, *sel[3] = {c, a, b};
  /* NaN against 1: only NE holds */
  assert_int_equal(row_at(m, "eq", fab, 0).i, 0);
  assert_int_equal(row_at(m, "lt", fab, 0).i, 0);
  assert_int_equal(row_at(m, "ge", fab, 1).i, 0);
  assert_int_equal(row_at(m, "ne", fab, 2).i, 1);
  /* -0 == +0 in the partial order; -0 < +0 in the total order */
  assert_int_equal(row_at(m, "eq", fab, 3).i, 1);
  assert_int_equal(row_at(m, "tlt", fab, 3).i, 1);
  assert_int_equal(row_at(m, "teq", fab, 3).i, 0);
  assert_int_equal(row_at(m, "le", fab, 8).i, 0); /* 3 <= 2 */
  assert_int_equal(row_at(m, "gt", fab, 10).i, 1); /* 1e30 > -1e30 */
  /* select: c is true at 0, 3, 6, ... */
  assert_true(row_at(m, "sel", sel, 3).f == -0.0 && signbit(row_at(m, "sel", sel, 3).f));
  assert_true(row_at(m, "sel", sel, 4).f == 0.0 && signbit(row_at(m, "sel", sel, 4).f));
  /* u32 modulo 2^32 */
  assert_int_equal(row_at(m, "add", uv, 0).i, 1);          /* 0xFFFFFFFF + 2 */
  assert_int_equal(row_at(m, "mul", uv, 0).i, 0xFFFFFFFE); /* 0xFFFFFFFF * 2 */
  assert_int_equal(row_at(m, "add", uv, 1).i, 0);          /* 2^31 + 2^31 */
  assert_int_equal(row_at(m, "sub", uv, 5).i, 2);          /* 1 - 0xFFFFFFFF */
  assert_int_equal(row_at(m, "mul", uv, 11).i, 1);         /* (2^32 - 1)^2 = 1 mod 2^32 */
  /* shifts: by 31 keeps one bit; by 32 or more gives 0 */
  assert_int_equal(row_at(m, "shl", uv, 2).i, 0x80000000); /* 3 << 31 */
  assert_int_equal(row_at(m, "shl", uv, 3).i, 0);          /* 1 << 32 */
  assert_int_equal(row_at(m, "shr", uv, 13).i, 1);         /* 0x80000001 >> 31 */
  assert_int_equal(row_at(m, "shr", uv, 14).i, 0);         /* 9 >> 64 */
  assert_int_equal(row_at(m, "xor", uv, 11).i, 0);
  /* s32 compares in the signed order, unless type=UNSIGNED */
  dev_slot s[N], q[N], d[N];
  int_operands(s, q, d);
  const dev_slot *sq[2] = {s, q}, *cd[2] = {c, d};
  assert_int_equal(row_at(m, "slt", sq, 0).i, 1);  /* -5 < 3 */
  assert_int_equal(row_at(m, "sltu", sq, 0).i, 0); /* 2^32 - 5 < 3 unsigned: no */
  assert_int_equal(row_at(m, "slt", sq, 4).i, 1);  /* INT32_MIN < INT32_MAX */
  assert_int_equal(row_at(m, "sge", sq, 5).i, 1);  /* INT32_MAX >= INT32_MIN */
  assert_int_equal(row_at(m, "sge", sq, 10).i, 1); /* -2147483647 >= -2147483648 */
  assert_int_equal(row_at(m, "seq", sq, 13).i, 1); /* 42 == 42 */
  assert_int_equal(row_at(m, "seq", sq, 11).i, 0); /* 100 == 99 */
  assert_int_equal(row_at(m, "sltu", sq, 8).i, 1); /* 1 < 2^32 - 1 unsigned */
  /* u32 compares in the unsigned order, unless type=SIGNED */
  assert_int_equal(row_at(m, "ult", uv, 0).i, 0);  /* 0xFFFFFFFF < 2: no */
  assert_int_equal(row_at(m, "ults", uv, 0).i, 1); /* -1 < 2 signed */
  assert_int_equal(row_at(m, "ugt", uv, 6).i, 1);  /* 0xDEADBEEF > 13 */
  assert_int_equal(row_at(m, "une", uv, 1).i, 0);  /* 2^31 != 2^31: no */
  /* unsigned-cmp-signed: the unsigned compare made signed; s32 unchanged */
  dev_elem bug;
  memset(&bug, 0, sizeof bug);
  bug.defects = 1u << DEV_DEFECT_UNSIGNED_CMP_SIGNED;
  assert_int_equal(row_at_with(&bug, m, "ult", uv, 0).i, 1);  /* -1 < 2 */
  assert_int_equal(row_at_with(&bug, m, "ugt", uv, 6).i, 0);  /* 0xDEADBEEF < 0 signed: not > 13 */
  assert_int_equal(row_at_with(&bug, m, "slt", sq, 0).i, 1);
  assert_int_equal(row_at_with(&bug, m, "sltu", sq, 0).i, 0); /* an explicit UNSIGNED on s32 stays */
  /* pred: false < true */
  assert_int_equal(row_at(m, "plt", cd, 1).i, 1); /* c[1] = 0, d[1] = 1 */
  assert_int_equal(row_at(m, "plt", cd, 3).i, 0); /* c[3] = 1, d[3] = 1 */
  assert_int_equal(row_at(m, "peq", cd, 0).i, 0); /* c[0] = 1, d[0] = 0 */
  assert_int_equal(row_at(m, "peq", cd, 3).i, 1); /* c[3] = 1, d[3] = 1 */
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_match_the_per_element_lowering),
      cmocka_unit_test(test_rows_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
