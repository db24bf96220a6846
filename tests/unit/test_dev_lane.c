/* test_dev_lane.c — the device's lane programs (dev_lane.h) through what
 * a scalar computation can call: nested calls and fusions, tuples and
 * get-tuple-element, a conditional (pred and index forms), a reduce of a
 * small array inside, complex values (dev_lane_compile_complex), and the
 * forms and limits it refuses with a reason.
 *
 * Every expected value is worked out by hand from HLO semantics in the
 * comment above its test; inputs are small integers or halves, so every
 * f32 result below is exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_lane.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  return m;
}

/* The computation named name of m compiled; fails the test with the
 * refusal's reason if it does not compile. */
static dev_lane *compile(const hlo_module *m, const char *name) {
  const hlo_computation *c = hlo_module_find(m, name);
  assert_non_null(c);
  char why[256] = "";
  dev_lane *p = dev_lane_compile(c, why, sizeof why);
  if (!p)
    fail_msg("%s refused: %s", name, why);
  return p;
}

static dev_slot fs(double f) { return (dev_slot){.f = f}; }
static dev_slot is(int64_t i) { return (dev_slot){.i = i}; }

/* f(a, b) = call(twice, call(plus_sq, a, b)) with plus_sq(x, y) = x*x + y
 * (itself calling sq) and twice(v) = v + v: a call chain three deep.
 * f(3, 4) = 2 (9 + 4) = 26; f(-0.5, 1) = 2 (0.25 + 1) = 2.5. */
static const char *const call_chain_text =
    "HloModule m\n"
    "sq {\n  x = f32[] parameter(0)\n  ROOT s = f32[] multiply(x, x)\n}\n"
    "plus_sq {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  s = f32[] call(x), to_apply=sq\n"
    "  ROOT r = f32[] add(s, y)\n}\n"
    "twice {\n  v = f32[] parameter(0)\n  ROOT r = f32[] add(v, v)\n}\n"
    "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] call(a, b), to_apply=plus_sq\n"
    "  ROOT d = f32[] call(c), to_apply=twice\n}\n"
    "ENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[4] parameter(1)\n"
    "  ROOT m = f32[4] map(p, q), dimensions={0}, to_apply=f\n}\n";

static void call_chain(void **state) {
  (void)state;
  hlo_module *m = parse(call_chain_text);
  dev_lane *p = compile(m, "f");
  assert_int_equal(dev_lane_nparams(p), 2);
  assert_int_equal(dev_lane_nresults(p), 1);
  const double in[2][2] = {{3, 4}, {-0.5, 1}}, want[2] = {26, 2.5};
  for (int t = 0; t < 2; t++) {
    dev_slot args[2] = {fs(in[t][0]), fs(in[t][1])}, r;
    dev_lane_run(p, args, &r);
    assert_true(r.f == want[t]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* 0367's map computation: a nested fusion returning (p < p*p, p*p), read
 * through get-tuple-element into select(lt, sq, 0).  p = 2: 2 < 4, so 4;
 * p = 0.5: 0.5 < 0.25 is false, so 0; p = -1: -1 < 1, so 1; p = 0: 0 < 0
 * is false, so 0. */
static const char *const fusion_tuple_text =
    "HloModule m\n"
    "fused {\n  p = f32[] parameter(0)\n  mul = f32[] multiply(p, p)\n"
    "  lt = pred[] compare(p, mul), direction=LT\n  ROOT t = (pred[], f32[]) tuple(lt, mul)\n}\n"
    "f {\n  p0 = f32[] parameter(0)\n  fu = (pred[], f32[]) fusion(p0), kind=kLoop, calls=fused\n"
    "  g0 = pred[] get-tuple-element(fu), index=0\n  g1 = f32[] get-tuple-element(fu), index=1\n"
    "  z = f32[] constant(0)\n  ROOT s = f32[] select(g0, g1, z)\n}\n"
    "ENTRY e {\n  x = f32[3] parameter(0)\n  ROOT m = f32[3] map(x), dimensions={0}, to_apply=f\n}\n";

static void fusion_through_tuple(void **state) {
  (void)state;
  hlo_module *m = parse(fusion_tuple_text);
  dev_lane *p = compile(m, "f");
  const double in[4] = {2, 0.5, -1, 0}, want[4] = {4, 0, 1, 0};
  for (int t = 0; t < 4; t++) {
    dev_slot a = fs(in[t]), r;
    dev_lane_run(p, &a, &r);
    if (r.f != want[t])
      fail_msg("f(%g) = %g, want %g", in[t], r.f, want[t]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* conditional(a < b, (a, b), (a, b)): true_computation gives b - a, the
 * false one a * b.  f(1, 5) = 4 (true); f(5, 1) = 5 (false); f(2, 2) = 4
 * (2 < 2 is false).  The branches run on a tuple operand each. */
static const char *const cond_pred_text =
    "HloModule m\n"
    "yes {\n  t = (f32[], f32[]) parameter(0)\n  a = f32[] get-tuple-element(t), index=0\n"
    "  b = f32[] get-tuple-element(t), index=1\n  ROOT d = f32[] subtract(b, a)\n}\n"
    "no {\n  t = (f32[], f32[]) parameter(0)\n  a = f32[] get-tuple-element(t), index=0\n"
    "  b = f32[] get-tuple-element(t), index=1\n  ROOT d = f32[] multiply(a, b)\n}\n"
    "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  lt = pred[] compare(a, b), direction=LT\n"
    "  t = (f32[], f32[]) tuple(a, b)\n"
    "  ROOT c = f32[] conditional(lt, t, t), true_computation=yes, false_computation=no\n}\n"
    "ENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[4] parameter(1)\n"
    "  ROOT m = f32[4] map(p, q), dimensions={0}, to_apply=f\n}\n";

static void conditional_pred(void **state) {
  (void)state;
  hlo_module *m = parse(cond_pred_text);
  dev_lane *p = compile(m, "f");
  const double in[3][2] = {{1, 5}, {5, 1}, {2, 2}}, want[3] = {4, 5, 4};
  for (int t = 0; t < 3; t++) {
    dev_slot args[2] = {fs(in[t][0]), fs(in[t][1])}, r;
    dev_lane_run(p, args, &r);
    if (r.f != want[t])
      fail_msg("f(%g, %g) = %g, want %g", in[t][0], in[t][1], r.f, want[t]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* conditional on an s32 index over three branches, each adding its own
 * constant to x: 100, 200, 300.  An index outside [0, 3) runs the last
 * branch (HLO semantics).  The results come back as a tuple with the
 * index itself, so both a conditional and a parameter are results:
 * (i, x) = (0, 1) -> (101, 0); (1, 1) -> (201, 1); (2, 1) -> (301, 2);
 * (-1, 1) -> (301, -1); (7, 1) -> (301, 7). */
static const char *const cond_index_text =
    "HloModule m\n"
    "b0 {\n  x = f32[] parameter(0)\n  k = f32[] constant(100)\n  ROOT r = f32[] add(x, k)\n}\n"
    "b1 {\n  x = f32[] parameter(0)\n  k = f32[] constant(200)\n  ROOT r = f32[] add(x, k)\n}\n"
    "b2 {\n  x = f32[] parameter(0)\n  k = f32[] constant(300)\n  ROOT r = f32[] add(x, k)\n}\n"
    "f {\n  i = s32[] parameter(0)\n  x = f32[] parameter(1)\n"
    "  c = f32[] conditional(i, x, x, x), branch_computations={b0, b1, b2}\n"
    "  ROOT t = (f32[], s32[]) tuple(c, i)\n}\n"
    "ENTRY e {\n  i = s32[] parameter(0)\n  x = f32[] parameter(1)\n  ROOT c = (f32[], s32[]) call(i, x), to_apply=f\n}\n";

static void conditional_index(void **state) {
  (void)state;
  hlo_module *m = parse(cond_index_text);
  dev_lane *p = compile(m, "f");
  assert_int_equal(dev_lane_nresults(p), 2);
  const int64_t idx[5] = {0, 1, 2, -1, 7};
  const double want[5] = {101, 201, 301, 301, 301};
  for (int t = 0; t < 5; t++) {
    dev_slot args[2] = {is(idx[t]), fs(1)}, r[2];
    dev_lane_run(p, args, r);
    if (r[0].f != want[t] || r[1].i != idx[t])
      fail_msg("index %lld: (%g, %lld), want (%g, %lld)", (long long)idx[t], r[0].f, (long long)r[1].i, want[t],
               (long long)idx[t]);
    /* results written over the arguments (a fold's accumulators) */
    dev_lane_run(p, args, args);
    assert_true(args[0].f == want[t]);
    assert_true(args[1].i == idx[t]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* 0151's map computation, with its two branches told apart: a < b picks a
 * f32[2,2] broadcast of 1, else of 3; the array is reduced over both
 * dimensions with a reducer that itself calls add, from init 0.5:
 * a < b -> 0.5 + 4 * 1 = 4.5; else 0.5 + 4 * 3 = 12.5. */
static const char *const cond_array_text =
    "HloModule m\n"
    "if {\n  p = () parameter(0)\n  one = f32[] constant(1)\n"
    "  ROOT b = f32[2,2]{1,0} broadcast(one), dimensions={}\n}\n"
    "else {\n  p = () parameter(0)\n  three = f32[] constant(3)\n"
    "  ROOT b = f32[2,2]{1,0} broadcast(three), dimensions={}\n}\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
    "viacall {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] call(x, y), to_apply=add\n}\n"
    "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  lt = pred[] compare(a, b), direction=LT\n"
    "  t = () tuple()\n"
    "  c = f32[2,2]{1,0} conditional(lt, t, t), true_computation=if, false_computation=else\n"
    "  init = f32[] constant(0.5)\n  ROOT r = f32[] reduce(c, init), dimensions={0,1}, to_apply=viacall\n}\n"
    "ENTRY e {\n  p = f32[4] parameter(0)\n  q = f32[4] parameter(1)\n"
    "  ROOT m = f32[4] map(p, q), dimensions={0}, to_apply=f\n}\n";

static void conditional_of_arrays_reduced(void **state) {
  (void)state;
  hlo_module *m = parse(cond_array_text);
  dev_lane *p = compile(m, "f");
  const double in[2][2] = {{1, 2}, {2, 1}}, want[2] = {4.5, 12.5};
  for (int t = 0; t < 2; t++) {
    dev_slot args[2] = {fs(in[t][0]), fs(in[t][1])}, r;
    dev_lane_run(p, args, &r);
    if (r.f != want[t])
      fail_msg("f(%g, %g) = %g, want %g", in[t][0], in[t][1], r.f, want[t]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* A reduce inside a scalar computation, of small arrays built there:
 * x f32[2,3] = a + [[1,2,3],[4,5,6]] (a broadcast, a constant array and
 * an elementwise add).  Reducing dimension 1 from 0 gives the row sums
 * (3a + 6, 3a + 15); reshaped to f32[2,1] and reduced again, lo = 6a + 21.
 * A variadic reduce of (x, x) from (0, -inf) whose reducer sums the first
 * (through a call) and takes the max of the second gives (6a + 21, a + 6),
 * so d = max - sum = -5a - 15.  a = 2: (33, -25); a = -1: (15, -10).
 * f holds a slice, which has no lane form. */
static const char *const reduce_dims_text =
    "HloModule m\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
    "summax {\n  as = f32[] parameter(0)\n  am = f32[] parameter(1)\n  xs = f32[] parameter(2)\n"
    "  xm = f32[] parameter(3)\n  s = f32[] call(as, xs), to_apply=add\n  mx = f32[] maximum(am, xm)\n"
    "  ROOT t = (f32[], f32[]) tuple(s, mx)\n}\n"
    "f {\n  a = f32[] parameter(0)\n  ab = f32[2] broadcast(a), dimensions={}\n"
    "  r0 = f32[1] slice(ab), slice={[0:1]}\n  ROOT r = f32[] reshape(r0)\n}\n"
    "g {\n  a = f32[] parameter(0)\n  ab = f32[2,3] broadcast(a), dimensions={}\n"
    "  k = f32[2,3] constant({{1,2,3},{4,5,6}})\n  x = f32[2,3] add(ab, k)\n  z = f32[] constant(0)\n"
    "  rows = f32[2] reduce(x, z), dimensions={1}, to_apply=add\n"
    "  rs = f32[2,1] reshape(rows)\n"
    "  lo = f32[] reduce(rs, z), dimensions={0,1}, to_apply=add\n"
    "  ninf = f32[] constant(-inf)\n"
    "  sm = (f32[], f32[]) reduce(x, x, z, ninf), dimensions={0,1}, to_apply=summax\n"
    "  s = f32[] get-tuple-element(sm), index=0\n  mx = f32[] get-tuple-element(sm), index=1\n"
    "  d = f32[] subtract(mx, s)\n  ROOT t = (f32[], f32[]) tuple(lo, d)\n}\n"
    "ENTRY e {\n  a = f32[] parameter(0)\n  ROOT c = (f32[], f32[]) call(a), to_apply=g\n}\n";

static void reduce_inside(void **state) {
  (void)state;
  hlo_module *m = parse(reduce_dims_text);
  /* f holds a slice, which has no lane form: refused, naming it */
  const hlo_computation *f = hlo_module_find(m, "f");
  char why[256] = "";
  assert_null(dev_lane_compile(f, why, sizeof why));
  if (!strstr(why, "f: r0: slice has no lane form"))
    fail_msg("unexpected reason: %s", why);
  dev_lane *p = compile(m, "g");
  const double in[2] = {2, -1}, want[2][2] = {{33, -25}, {15, -10}};
  for (int t = 0; t < 2; t++) {
    dev_slot a = fs(in[t]), r[2];
    dev_lane_run(p, &a, r);
    if (r[0].f != want[t][0] || r[1].f != want[t][1])
      fail_msg("g(%g) = (%g, %g), want (%g, %g)", in[t], r[0].f, r[1].f, want[t][0], want[t][1]);
  }
  dev_lane_free(p);
  hlo_module_free(m);
}

/* A reducer that calls another computation is still a single elementwise
 * step when inlined: the componentwise form (dev_lane_componentwise)
 * sees through the call, and running it adds. */
static void reducer_through_call(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m\n"
                        "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
                        "viacall {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                        "  ROOT s = f32[] call(x, y), to_apply=add\n}\n"
                        "ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                        "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=viacall\n}\n");
  dev_lane *p = compile(m, "viacall");
  const hlo_instr *ops[1] = {NULL};
  assert_true(dev_lane_componentwise(p, 1, ops));
  assert_non_null(ops[0]);
  assert_int_equal(ops[0]->op, HLO_OP_ADD);
  dev_slot args[2] = {fs(1.5), fs(2.25)}, r;
  dev_lane_run(p, args, &r);
  assert_true(r.f == 3.75);
  dev_lane_free(p);
  hlo_module_free(m);
}

/* What a lane program does not take is refused with the reason: a while
 * loop, complex numbers, an array over DEV_LANE_MAX_ELEMS elements, more
 * inlined instructions than DEV_LANE_MAX_INLINED, and calls nested deeper
 * than DEV_LANE_MAX_DEPTH. */
static void expect_refused(const char *text, const char *comp, const char *what) {
  hlo_module *m = parse(text);
  const hlo_computation *c = hlo_module_find(m, comp);
  assert_non_null(c);
  char why[256] = "";
  dev_lane *p = dev_lane_compile(c, why, sizeof why);
  if (p)
    fail_msg("%s compiled, want refused for %s", comp, what);
  if (!strstr(why, what))
    fail_msg("reason '%s' does not say '%s'", why, what);
  hlo_module_free(m);
}

static void refusals(void **state) {
  (void)state;
  expect_refused("HloModule m\n"
                 "cond {\n  t = (s32[], f32[]) parameter(0)\n  i = s32[] get-tuple-element(t), index=0\n"
                 "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
                 "body {\n  t = (s32[], f32[]) parameter(0)\n  i = s32[] get-tuple-element(t), index=0\n"
                 "  x = f32[] get-tuple-element(t), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n"
                 "  y = f32[] add(x, x)\n  ROOT r = (s32[], f32[]) tuple(j, y)\n}\n"
                 "f {\n  x = f32[] parameter(0)\n  z = s32[] constant(0)\n  t = (s32[], f32[]) tuple(z, x)\n"
                 "  w = (s32[], f32[]) while(t), condition=cond, body=body\n"
                 "  ROOT r = f32[] get-tuple-element(w), index=1\n}\n"
                 "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT m = f32[4] map(p), dimensions={0}, to_apply=f\n}\n",
                 "f", "w: while has no lane form");
  expect_refused("HloModule m\n"
                 "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = c64[] complex(a, b)\n"
                 "  ROOT r = f32[] real(c)\n}\n"
                 "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT m = f32[4] map(p, p), dimensions={0}, to_apply=f\n}\n",
                 "f", "f: c: c64 values have no lane form");
  expect_refused("HloModule m\n"
                 "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
                 "f {\n  a = f32[] parameter(0)\n  b = f32[65] broadcast(a), dimensions={}\n"
                 "  ROOT r = f32[] reduce(b, a), dimensions={0}, to_apply=add\n}\n"
                 "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT m = f32[4] map(p), dimensions={0}, to_apply=f\n}\n",
                 "f", "DEV_LANE_MAX_ELEMS");
  /* reduces nested 4 deep, each over a broadcast of 64 elements, the
   * innermost reducer returning its element: 64^4 inlined copies that
   * emit no step, refused by their count long before they are made */
  expect_refused("HloModule m\n"
                 "r4 {\n  a = f32[] parameter(0)\n  ROOT x = f32[] parameter(1)\n}\n"
                 "r3 {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n  b = f32[64] broadcast(x), dimensions={}\n"
                 "  ROOT r = f32[] reduce(b, x), dimensions={0}, to_apply=r4\n}\n"
                 "r2 {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n  b = f32[64] broadcast(x), dimensions={}\n"
                 "  ROOT r = f32[] reduce(b, x), dimensions={0}, to_apply=r3\n}\n"
                 "r1 {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n  b = f32[64] broadcast(x), dimensions={}\n"
                 "  ROOT r = f32[] reduce(b, x), dimensions={0}, to_apply=r2\n}\n"
                 "f {\n  a = f32[] parameter(0)\n  b = f32[64] broadcast(a), dimensions={}\n"
                 "  ROOT r = f32[] reduce(b, a), dimensions={0}, to_apply=r1\n}\n"
                 "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT m = f32[4] map(p), dimensions={0}, to_apply=f\n}\n",
                 "f", "DEV_LANE_MAX_INLINED");
  /* c0 calls c1 ... calls c17: 17 calls deep */
  char text[4096];
  int n = snprintf(text, sizeof text, "HloModule m\nc17 {\n  x = f32[] parameter(0)\n  ROOT r = f32[] negate(x)\n}\n");
  for (int k = 16; k >= 0; k--)
    n += snprintf(text + n, sizeof text - (size_t)n,
                  "c%d {\n  x = f32[] parameter(0)\n  ROOT r = f32[] call(x), to_apply=c%d\n}\n", k, k + 1);
  snprintf(text + n, sizeof text - (size_t)n,
           "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT m = f32[4] map(p), dimensions={0}, to_apply=c0\n}\n");
  expect_refused(text, "c0", "DEV_LANE_MAX_DEPTH");
  /* ... while 16 deep still compiles, and negates */
  hlo_module *m = parse(text);
  dev_lane *p = compile(m, "c1");
  dev_slot a = fs(2), r;
  dev_lane_run(p, &a, &r);
  assert_true(r.f == -2);
  dev_lane_free(p);
  hlo_module_free(m);
}

/* Complex values, with dev_lane_compile_complex only: f(a, b) = (a * b,
 * complex(imag(a), real(b)), -a + k) with the constant k = 0.5 - 1.5i, on
 * c64, each complex value two slots (real part first), so 4 arguments and
 * 6 results.  a = 1 + 2i, b = 3 + 4i: a * b = (3 - 8) + (4 + 6)i = -5 +
 * 10i; complex(2, 3) = 2 + 3i; -a + k = -0.5 - 3.5i.  dev_lane_compile refuses it, and a complex divide has no
 * lane form in either. */
static const char *const complex_text =
    "HloModule m\n"
    "f {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n  m = c64[] multiply(a, b)\n"
    "  ia = f32[] imag(a)\n  rb = f32[] real(b)\n  c = c64[] complex(ia, rb)\n  n = c64[] negate(a)\n"
    "  k = c64[] constant((0.5, -1.5))\n  nk = c64[] add(n, k)\n"
    "  ROOT t = (c64[], c64[], c64[]) tuple(m, c, nk)\n}\n"
    "g {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n  ROOT d = c64[] divide(a, b)\n}\n"
    "ENTRY e {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
    "  ROOT r = (c64[], c64[], c64[]) call(a, b), to_apply=f\n}\n";

static void complex_parts(void **state) {
  (void)state;
  hlo_module *m = parse(complex_text);
  const hlo_computation *f = hlo_module_find(m, "f"), *g = hlo_module_find(m, "g");
  char why[256] = "";
  assert_null(dev_lane_compile(f, why, sizeof why));
  if (!strstr(why, "c64"))
    fail_msg("unexpected reason: %s", why);
  dev_lane *p = dev_lane_compile_complex(f, why, sizeof why);
  if (!p)
    fail_msg("refused: %s", why);
  assert_int_equal(dev_lane_nparams(p), 4);
  assert_int_equal(dev_lane_nresults(p), 6);
  dev_slot args[4] = {fs(1), fs(2), fs(3), fs(4)}, r[6];
  dev_lane_run(p, args, r);
  const double want[6] = {-5, 10, 2, 3, -0.5, -3.5};
  for (int k = 0; k < 6; k++)
    if (r[k].f != want[k])
      fail_msg("slot %d: %g, want %g", k, r[k].f, want[k]);
  dev_lane_free(p);
  assert_null(dev_lane_compile_complex(g, why, sizeof why));
  if (!strstr(why, "g: d: complex divide has no lane form"))
    fail_msg("unexpected reason: %s", why);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(call_chain),        cmocka_unit_test(fusion_through_tuple),
      cmocka_unit_test(conditional_pred),  cmocka_unit_test(conditional_index),
      cmocka_unit_test(conditional_of_arrays_reduced), cmocka_unit_test(reduce_inside),
      cmocka_unit_test(reducer_through_call), cmocka_unit_test(refusals),
      cmocka_unit_test(complex_parts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
