/* test_dev_window.c — the device's own windowed ops (dev_whole.h) against
 * hand-computed values: reduce-window with several operand/init pairs and
 * a tuple result (an argmax whose ties show the device's window order, a
 * 2-D pair of a sum and a max, each operand folded on its own, and a
 * reducer whose results cross the operands), reduce-window with a general reducer
 * (2*acc + x, which shows the order too), and select-and-scatter (a 1-D
 * pool with overlapping windows and a scatter that shows the combine
 * order, XLA's max-pool gradient in 2-D with ties, and windows of padding
 * alone, as the corpus's regression module has them).  Each case runs
 * with a config that cuts the op into several tiles (ragged ones where
 * the shapes allow) and with no config (one tile): both must give the
 * hand values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_whole.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  return m;
}

static dev_config config(const char *text) {
  dev_config c;
  hlo_error err;
  if (dev_config_parse(text, &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  return c;
}

static hlo_value *f32s(int rank, const int64_t *dims, const float *v) {
  hlo_value *a = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(a);
  memcpy(a->data, v, (size_t)a->count * sizeof *v);
  return a;
}

static hlo_value *s32s(int rank, const int64_t *dims, const int32_t *v) {
  hlo_value *a = hlo_value_array(HLO_S32, rank, dims);
  assert_non_null(a);
  memcpy(a->data, v, (size_t)a->count * sizeof *v);
  return a;
}

/* Runs the entry root of m on ops; returns the result (one reference). */
static hlo_value *run(const hlo_module *m, hlo_value **ops, const dev_config *cfg) {
  char why[256] = "";
  dev_whole_ctx ctx = {.cfg = cfg, .why = why, .why_len = sizeof why, .m = m};
  hlo_value *out = NULL;
  int rc = dev_whole_run(m->entry->root, ops, &ctx, &out);
  if (rc != 0)
    fail_msg("dev_whole_run: %d %s", rc, why);
  return out;
}

static void expect_f32(const hlo_value *v, const float *want, int64_t n) {
  assert_int_equal(v->type, HLO_F32);
  assert_int_equal(v->count, n);
  for (int64_t i = 0; i < n; i++)
    if (((const float *)v->data)[i] != want[i])
      fail_msg("element %lld: %g, want %g", (long long)i, ((const float *)v->data)[i], want[i]);
}

static void expect_s32(const hlo_value *v, const int32_t *want, int64_t n) {
  assert_int_equal(v->type, HLO_S32);
  assert_int_equal(v->count, n);
  for (int64_t i = 0; i < n; i++)
    if (((const int32_t *)v->data)[i] != want[i])
      fail_msg("element %lld: %d, want %d", (long long)i, ((const int32_t *)v->data)[i], want[i]);
}

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

/* ---- variadic reduce-window ------------------------------------------------ */

/* An argmax over windows of 3 (pad 1_1) of values {3 3 1 5 5} with their
 * indices {0 1 2 3 4}, init (-inf, -1); the reducer takes the new pair
 * only when its value is greater, so a tie keeps the window's first
 * element in row-major window order:
 *   o=0 {pad 3 3} -> (3, 0)   o=1 {3 3 1} -> (3, 0)   o=2 {3 1 5} -> (5, 3)
 *   o=3 {1 5 5}  -> (5, 3)    o=4 {5 5 pad} -> (5, 3)
 * (the window walked backwards would give indices {1 1 3 4 4}). */
static const char *ARGMAX =
    "HloModule w\n"
    "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
    "  bi = s32[] parameter(3)\n  gt = pred[] compare(bv, av), direction=GT\n  v = f32[] select(gt, bv, av)\n"
    "  i = s32[] select(gt, bi, ai)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
    "ENTRY e {\n  p0 = f32[5] parameter(0)\n  p1 = s32[5] parameter(1)\n  p2 = f32[] parameter(2)\n"
    "  p3 = s32[] parameter(3)\n"
    "  ROOT w = (f32[5], s32[5]) reduce-window(p0, p1, p2, p3), window={size=3 pad=1_1}, to_apply=argmax\n}\n";

static void variadic_argmax_window_order(void **state) {
  (void)state;
  hlo_module *m = parse(ARGMAX);
  int64_t d[1] = {5};
  float v[5] = {3, 3, 1, 5, 5}, ninf = -1.0f / 0.0f;
  int32_t ix[5] = {0, 1, 2, 3, 4}, none = -1;
  hlo_value *ops[4] = {f32s(1, d, v), s32s(1, d, ix), f32s(0, NULL, &ninf), s32s(0, NULL, &none)};
  static const float wv[5] = {3, 3, 5, 5, 5};
  static const int32_t wi[5] = {0, 0, 3, 3, 3};
  dev_config cuts[2] = {config("tile=2 k=0 buf=2 order=0 pack=1 prec=default flags=none"),
                        config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none")};
  for (int c = 0; c < 3; c++) {
    hlo_value *r = run(m, ops, c < 2 ? &cuts[c] : NULL);
    assert_int_equal(r->type, HLO_TUPLE);
    assert_int_equal(r->ntuple, 2);
    expect_f32(r->elems[0], wv, 5);
    expect_s32(r->elems[1], wi, 5);
    hlo_value_unref(r);
  }
  unref_all(ops, 4);
  hlo_module_free(m);
}

/* A sum of one operand and a max of the other (here the same array) over
 * 2x2 windows with strides 1x2 of
 *   [[1 2 3 4] [5 6 7 8] [9 10 11 12]]
 * gives the sums [[14 22] [30 38]] and the maxima [[6 8] [10 12]]. */
static void variadic_sum_and_max_2d(void **state) {
  (void)state;
  hlo_module *m = parse(
      "HloModule w\n"
      "summax {\n  as = f32[] parameter(0)\n  am = f32[] parameter(1)\n  xs = f32[] parameter(2)\n"
      "  xm = f32[] parameter(3)\n  s = f32[] add(as, xs)\n  mx = f32[] maximum(am, xm)\n"
      "  ROOT t = (f32[], f32[]) tuple(s, mx)\n}\n"
      "ENTRY e {\n  p0 = f32[3,4] parameter(0)\n  p1 = f32[3,4] parameter(1)\n  z = f32[] parameter(2)\n"
      "  n = f32[] parameter(3)\n"
      "  ROOT w = (f32[2,2], f32[2,2]) reduce-window(p0, p1, z, n), window={size=2x2 stride=1x2}, "
      "to_apply=summax\n}\n");
  int64_t d[2] = {3, 4};
  float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, zero = 0, ninf = -1.0f / 0.0f;
  hlo_value *ops[4] = {f32s(2, d, a), f32s(2, d, a), f32s(0, NULL, &zero), f32s(0, NULL, &ninf)};
  static const float ws[4] = {14, 22, 30, 38}, wm[4] = {6, 8, 10, 12};
  dev_config cut = config("tile=1x1 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops, c ? NULL : &cut);
    assert_int_equal(r->type, HLO_TUPLE);
    expect_f32(r->elems[0], ws, 4);
    expect_f32(r->elems[1], wm, 4);
    hlo_value_unref(r);
  }
  unref_all(ops, 4);
  hlo_module_free(m);
}

/* A reducer whose results cross the operands: the first accumulator sums
 * the second operand and the second the first (r0 = acc0 + x1, r1 = acc1
 * + x0), over windows of 2 with pad 1_0 of A = {1 2 3 4}, B = {10 20 30
 * 40}, inits 0: r0 = {10 30 50 70}, r1 = {1 3 5 7}.  Folding each operand
 * on its own would swap them. */
static void variadic_crossed_reducer(void **state) {
  (void)state;
  hlo_module *m = parse(
      "HloModule w\n"
      "cross {\n  a0 = f32[] parameter(0)\n  a1 = f32[] parameter(1)\n  x0 = f32[] parameter(2)\n"
      "  x1 = f32[] parameter(3)\n  r0 = f32[] add(a0, x1)\n  r1 = f32[] add(a1, x0)\n"
      "  ROOT t = (f32[], f32[]) tuple(r0, r1)\n}\n"
      "ENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n  z = f32[] parameter(2)\n"
      "  ROOT w = (f32[4], f32[4]) reduce-window(p0, p1, z, z), window={size=2 pad=1_0}, to_apply=cross\n}\n");
  int64_t d[1] = {4};
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, zero = 0;
  hlo_value *ops[4] = {f32s(1, d, a), f32s(1, d, b), f32s(0, NULL, &zero), NULL};
  ops[3] = hlo_value_ref(ops[2]);
  static const float w0[4] = {10, 30, 50, 70}, w1[4] = {1, 3, 5, 7};
  dev_config cut = config("tile=3 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops, c ? NULL : &cut);
    expect_f32(r->elems[0], w0, 4);
    expect_f32(r->elems[1], w1, 4);
    hlo_value_unref(r);
  }
  unref_all(ops, 4);
  hlo_module_free(m);
}

/* One operand, a general reducer acc*2 + x (not a simple one: a lane
 * program), windows of 3 with pad 1_1 over {1 0 1 1 0}, init 0: each
 * output reads its window's bits as a binary number, first element most
 * significant: {pad 1 0} -> 2, {1 0 1} -> 5, {0 1 1} -> 3, {1 1 0} -> 6,
 * {1 0 pad} -> 2.  And with base dilation, whose holes hold no element. */
static void general_reducer_window_order(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule w\nbits {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n"
                        "  two = f32[] constant(2)\n  a2 = f32[] multiply(a, two)\n  ROOT s = f32[] add(a2, x)\n}\n"
                        "ENTRY e {\n  p0 = f32[5] parameter(0)\n  p1 = f32[] parameter(1)\n"
                        "  ROOT w = f32[5] reduce-window(p0, p1), window={size=3 pad=1_1}, to_apply=bits\n}\n");
  int64_t d[1] = {5};
  float v[5] = {1, 0, 1, 1, 0}, zero = 0;
  hlo_value *ops[2] = {f32s(1, d, v), f32s(0, NULL, &zero)};
  static const float want[5] = {2, 5, 3, 6, 2};
  dev_config cut = config("tile=2 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops, c ? NULL : &cut);
    expect_f32(r, want, 5);
    hlo_value_unref(r);
  }
  unref_all(ops, 2);
  hlo_module_free(m);

  /* The same reducer with base dilation 2 over {1 1 0}: the dilated base
   * {1 h 1 h 0} (h a hole, no element) under windows of 3 gives
   * {1 h 1} -> 3, {h 1 h} -> 1, {1 h 0} -> 2. */
  m = parse("HloModule w\nbits {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n"
            "  two = f32[] constant(2)\n  a2 = f32[] multiply(a, two)\n  ROOT s = f32[] add(a2, x)\n}\n"
            "ENTRY e {\n  p0 = f32[3] parameter(0)\n  p1 = f32[] parameter(1)\n"
            "  ROOT w = f32[3] reduce-window(p0, p1), window={size=3 lhs_dilate=2}, to_apply=bits\n}\n");
  int64_t d3[1] = {3};
  float v3[3] = {1, 1, 0};
  hlo_value *ops3[2] = {f32s(1, d3, v3), f32s(0, NULL, &zero)};
  static const float want3[3] = {3, 1, 2};
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops3, c ? NULL : &cut);
    expect_f32(r, want3, 3);
    hlo_value_unref(r);
  }
  unref_all(ops3, 2);
  hlo_module_free(m);
}

/* A reducer that is no lane program (it computes on complex numbers) is
 * left to the caller, and so is a variadic reducer returning fewer values
 * than it has accumulators. */
static void unlowered_reducers(void **state) {
  (void)state;
  const char *texts[2] = {
      "HloModule w\n"
      "r {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
      "  ac = c64[] complex(a, c)\n  x = f32[] real(ac)\n  y = f32[] add(b, d)\n"
      "  ROOT t = (f32[], f32[]) tuple(x, y)\n}\n"
      "ENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n  z = f32[] parameter(2)\n"
      "  ROOT w = (f32[4], f32[4]) reduce-window(p0, p1, z, z), window={size=2 pad=1_0}, to_apply=r\n}\n",
      "HloModule w\n"
      "r {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
      "  ROOT x = f32[] add(a, c)\n}\n"
      "ENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n  z = f32[] parameter(2)\n"
      "  ROOT w = (f32[4], f32[4]) reduce-window(p0, p1, z, z), window={size=2 pad=1_0}, to_apply=r\n}\n"};
  for (int t = 0; t < 2; t++) {
    hlo_module *m = parse(texts[t]);
    int64_t d[1] = {4};
    float v[4] = {1, 2, 3, 4}, zero = 0;
    hlo_value *ops[4] = {f32s(1, d, v), f32s(1, d, v), f32s(0, NULL, &zero), NULL};
    ops[3] = hlo_value_ref(ops[2]);
    char why[256] = "";
    dev_whole_ctx ctx = {.why = why, .why_len = sizeof why, .m = m};
    hlo_value *out = NULL;
    assert_int_equal(dev_whole_run(m->entry->root, ops, &ctx, &out), DEV_WHOLE_UNSUPPORTED);
    assert_null(out);
    unref_all(ops, 4);
    hlo_module_free(m);
  }
}

/* ---- select-and-scatter ---------------------------------------------------- */

/* Overlapping windows of 3 with stride 1 and pad 1_1 over {2 7 7 1},
 * select = (a >= b) (the pick stays on ties), scatter = a*10 + b (which
 * shows the order the updates come in), source {1 2 3 4}, init 0:
 *   o=0 {pad 2 7} picks 1, o=1 {2 7 7} picks 1 (a tie keeps the first),
 *   o=2 {7 7 1} picks 1, o=3 {7 1 pad} picks 2;
 * position 1 takes 1, 2, 3 in the source's order: ((0*10+1)*10+2)*10+3 =
 * 123; position 2 takes 4. */
static const char *POOL1D =
    "HloModule s\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
    "shift {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ten = f32[] constant(10)\n"
    "  a10 = f32[] multiply(a, ten)\n  ROOT s = f32[] add(a10, b)\n}\n"
    "ENTRY e {\n  x = f32[4] parameter(0)\n  src = f32[4] parameter(1)\n  i = f32[] parameter(2)\n"
    "  ROOT r = f32[4] select-and-scatter(x, src, i), window={size=3 pad=1_1}, select=ge, scatter=shift\n}\n";

static void select_and_scatter_overlap_order(void **state) {
  (void)state;
  hlo_module *m = parse(POOL1D);
  int64_t d[1] = {4};
  float x[4] = {2, 7, 7, 1}, src[4] = {1, 2, 3, 4}, zero = 0;
  hlo_value *ops[3] = {f32s(1, d, x), f32s(1, d, src), f32s(0, NULL, &zero)};
  static const float want[4] = {0, 123, 4, 0};
  dev_config cuts[2] = {config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none"),
                        config("tile=3 k=0 buf=2 order=0 pack=1 prec=default flags=none")};
  for (int c = 0; c < 3; c++) {
    hlo_value *r = run(m, ops, c < 2 ? &cuts[c] : NULL);
    expect_f32(r, want, 4);
    hlo_value_unref(r);
  }
  unref_all(ops, 3);
  hlo_module_free(m);
}

/* XLA's max-pool gradient: 2x2 windows with stride 2 over
 *   [[1 2 3 4] [8 7 6 5] [0 1 1 0] [1 0 9 9]]
 * select = (a >= b), scatter = add, source [[1 2] [3 4]], init 0.5.  The
 * windows pick 8 at (1,0), 6 at (1,2), the first 1 at (2,1) (before the
 * tie at (3,0)) and the first 9 at (3,2); every other element keeps
 * 0.5. */
static void select_and_scatter_maxpool_2d(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule s\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                        "ENTRY e {\n  x = f32[4,4] parameter(0)\n  src = f32[2,2] parameter(1)\n"
                        "  i = f32[] parameter(2)\n  ROOT r = f32[4,4] select-and-scatter(x, src, i), "
                        "window={size=2x2 stride=2x2}, select=ge, scatter=add\n}\n");
  int64_t dx[2] = {4, 4}, ds[2] = {2, 2};
  float x[16] = {1, 2, 3, 4, 8, 7, 6, 5, 0, 1, 1, 0, 1, 0, 9, 9}, src[4] = {1, 2, 3, 4}, half = 0.5f;
  hlo_value *ops[3] = {f32s(2, dx, x), f32s(2, ds, src), f32s(0, NULL, &half)};
  static const float want[16] = {0.5f, 0.5f, 0.5f, 0.5f, 1.5f, 0.5f, 2.5f, 0.5f,
                                 0.5f, 3.5f, 0.5f, 0.5f, 0.5f, 0.5f, 4.5f, 0.5f};
  dev_config cut = config("tile=1x3 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops, c ? NULL : &cut);
    expect_f32(r, want, 16);
    hlo_value_unref(r);
  }
  unref_all(ops, 3);
  hlo_module_free(m);
}

/* The corpus's regression module (0255): 1x1 windows with pad 1_1 in both
 * dims over a [3,3] operand give a [5,5] source; the windows on the
 * padding ring hold no element and their source values are dropped, the
 * others each pick the one element under them.  With source element (i,j)
 * = 5i + j + 1, result (a,b) = source (a+1,b+1) = 5a + b + 7.  And
 * windows partly in the padding pick among their elements alone. */
static void select_and_scatter_padding_never_picked(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule s\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                        "ENTRY e {\n  x = f32[3,3] parameter(0)\n  src = f32[5,5] parameter(1)\n"
                        "  i = f32[] parameter(2)\n  ROOT r = f32[3,3] select-and-scatter(x, src, i), "
                        "window={size=1x1 pad=1_1x1_1}, select=ge, scatter=add\n}\n");
  int64_t dx[2] = {3, 3}, ds[2] = {5, 5};
  float x[9] = {9, 8, 7, 6, 5, 4, 3, 2, 1}, src[25], zero = 0;
  for (int i = 0; i < 25; i++)
    src[i] = (float)(i + 1);
  hlo_value *ops[3] = {f32s(2, dx, x), f32s(2, ds, src), f32s(0, NULL, &zero)};
  static const float want[9] = {7, 8, 9, 12, 13, 14, 17, 18, 19};
  dev_config cut = config("tile=2x2 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops, c ? NULL : &cut);
    expect_f32(r, want, 9);
    hlo_value_unref(r);
  }
  unref_all(ops, 3);
  hlo_module_free(m);

  /* Windows partly in the padding: a padding position is no candidate, so
   * negative elements are picked over it whatever value a padding might be
   * given.  Windows of 2 with pad 1_1 over {-3 -1 -2}: {pad -3} picks 0,
   * {-3 -1} picks 1, {-1 -2} picks 1, {-2 pad} picks 2; source {1 2 3 4},
   * init 0, add: {1 5 4}. */
  m = parse("HloModule s\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
            "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
            "ENTRY e {\n  x = f32[3] parameter(0)\n  src = f32[4] parameter(1)\n  i = f32[] parameter(2)\n"
            "  ROOT r = f32[3] select-and-scatter(x, src, i), window={size=2 pad=1_1}, select=ge, scatter=add\n}\n");
  int64_t d3[1] = {3}, d4[1] = {4};
  float neg[3] = {-3, -1, -2}, s4[4] = {1, 2, 3, 4};
  hlo_value *ops3[3] = {f32s(1, d3, neg), f32s(1, d4, s4), f32s(0, NULL, &zero)};
  static const float want3[3] = {1, 5, 4};
  dev_config one = config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  for (int c = 0; c < 2; c++) {
    hlo_value *r = run(m, ops3, c ? NULL : &one);
    expect_f32(r, want3, 3);
    hlo_value_unref(r);
  }
  unref_all(ops3, 3);
  hlo_module_free(m);
}

/* Forms the device does not lower are left to the caller: a select that
 * is no lane program (it compares complex numbers), and no module to
 * find the computations in. */
static void select_and_scatter_unlowered(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule s\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
                        "viacall {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ca = c64[] complex(a, b)\n  cb = c64[] complex(b, a)\n"
                        "  ROOT c = pred[] compare(ca, cb), direction=EQ\n}\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                        "ENTRY e {\n  x = f32[4] parameter(0)\n  src = f32[2] parameter(1)\n  i = f32[] parameter(2)\n"
                        "  ROOT r = f32[4] select-and-scatter(x, src, i), window={size=2 stride=2}, select=viacall, "
                        "scatter=add\n}\n");
  int64_t d[1] = {4}, ds[1] = {2};
  float x[4] = {1, 2, 3, 4}, src[2] = {1, 2}, zero = 0;
  hlo_value *ops[3] = {f32s(1, d, x), f32s(1, ds, src), f32s(0, NULL, &zero)};
  char why[256] = "";
  dev_whole_ctx ctx = {.why = why, .why_len = sizeof why, .m = m};
  hlo_value *out = NULL;
  assert_int_equal(dev_whole_run(m->entry->root, ops, &ctx, &out), DEV_WHOLE_UNSUPPORTED);
  assert_null(out);
  unref_all(ops, 3);
  hlo_module_free(m);

  m = parse(POOL1D);
  float src4[4] = {1, 2, 3, 4};
  hlo_value *ops4[3] = {f32s(1, d, x), f32s(1, d, src4), f32s(0, NULL, &zero)};
  dev_whole_ctx none = {.why = why, .why_len = sizeof why};
  assert_int_equal(dev_whole_run(m->entry->root, ops4, &none, &out), DEV_WHOLE_UNSUPPORTED);
  assert_null(out);
  unref_all(ops4, 3);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(variadic_argmax_window_order),
      cmocka_unit_test(variadic_sum_and_max_2d),
      cmocka_unit_test(variadic_crossed_reducer),
      cmocka_unit_test(general_reducer_window_order),
      cmocka_unit_test(unlowered_reducers),
      cmocka_unit_test(select_and_scatter_overlap_order),
      cmocka_unit_test(select_and_scatter_maxpool_2d),
      cmocka_unit_test(select_and_scatter_padding_never_picked),
      cmocka_unit_test(select_and_scatter_unlowered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
