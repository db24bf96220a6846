/* test_eval_reduce.c — reduce, reduce-window and map of the reference
 * evaluator, through the public path: HLO text -> hlo_parse ->
 * chk_eval_module.
 *
 * Every expected value is computed by hand in the comment next to it, from
 * XLA's semantics and the order of accumulation documented in
 * check/eval_reduce.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_fixture.h"
#include "hlo/hlo_dtype.h"

/* ---- helpers ----------------------------------------------------------- */

#define ADD_F32 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
#define MAX_F32 "max { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] maximum(a, b) }\n"
#define MIN_F32 "min { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] minimum(a, b) }\n"

/* ---- reduce ------------------------------------------------------------ */

static const float k23[6] = {1, 2, 3, 4, 5, 6}; /* [[1,2,3],[4,5,6]] */

static void test_reduce_sum_dims(void **state) {
  (void)state;
  int64_t d[2] = {2, 3};
  const char *t0 = "HloModule m\n" ADD_F32
                   "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(0)\n"
                   " ROOT r = f32[3] reduce(p, z), dimensions={0}, to_apply=add }\n";
  hlo_value *a = fx_f32_array(2, d, k23);
  hlo_value *o = fx_eval(t0, 1, &a);
  fx_expect_f32(o, 3, (const float[]){5, 7, 9});
  hlo_value_unref(o);

  const char *t1 = "HloModule m\n" ADD_F32
                   "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(10)\n"
                   " ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=add }\n";
  a = fx_f32_array(2, d, k23);
  o = fx_eval(t1, 1, &a);
  fx_expect_f32(o, 2, (const float[]){16, 25}); /* init 10 + 6, 10 + 15 */
  hlo_value_unref(o);

  const char *t01 = "HloModule m\n" ADD_F32
                    "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(0)\n"
                    " ROOT r = f32[] reduce(p, z), dimensions={0,1}, to_apply=add }\n";
  a = fx_f32_array(2, d, k23);
  o = fx_eval(t01, 1, &a);
  fx_expect_f32(o, 1, (const float[]){21});
  hlo_value_unref(o);
}

static void test_reduce_max_min_nan(void **state) {
  (void)state;
  int64_t d[2] = {2, 3};
  const float x[6] = {1, NAN, 3, -4, -5, -6};
  const char *tmax = "HloModule m\n" MAX_F32
                     "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(-inf)\n"
                     " ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=max }\n";
  hlo_value *a = fx_f32_array(2, d, x);
  hlo_value *o = fx_eval(tmax, 1, &a);
  fx_expect_f32(o, 2, (const float[]){NAN, -4}); /* NaN propagates */
  hlo_value_unref(o);
  const char *tmin = "HloModule m\n" MIN_F32
                     "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(inf)\n"
                     " ROOT r = f32[3] reduce(p, z), dimensions={0}, to_apply=min }\n";
  a = fx_f32_array(2, d, x);
  o = fx_eval(tmin, 1, &a);
  fx_expect_f32(o, 3, (const float[]){-4, NAN, -6});
  hlo_value_unref(o);
}

static void test_reduce_rank3_middle(void **state) {
  (void)state;
  /* x[i][j][k] = 100 i + 10 j + k, shape [2,3,2]; sum over j:
   * out[i][k] = 3 * (100 i + k) + 10 * (0 + 1 + 2) = 300 i + 3 k + 30 */
  int64_t d[3] = {2, 3, 2};
  float x[12];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        x[(i * 3 + j) * 2 + k] = (float)(100 * i + 10 * j + k);
  const char *t = "HloModule m\n" ADD_F32
                  "ENTRY e { p = f32[2,3,2] parameter(0)\n z = f32[] constant(0)\n"
                  " ROOT r = f32[2,2] reduce(p, z), dimensions={1}, to_apply=add }\n";
  hlo_value *a = fx_f32_array(3, d, x);
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 4, (const float[]){30, 33, 330, 333});
  hlo_value_unref(o);
}

/* Rows longer than the 8-row interleave plus a ragged tail, and column
 * reduction over many rows: compared bitwise with a sequential loop in the
 * documented order (each output element from init, elements ascending). */
static void test_reduce_order_matches_sequential(void **state) {
  (void)state;
  enum { R = 37, C = 301 };
  static float x[R * C];
  uint32_t s = 12345;
  for (int i = 0; i < R * C; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((int)(s >> 8) % 20001 - 10000) * 1.37e-3f;
  }
  int64_t d[2] = {R, C};
  const char *trow = "HloModule m\n" ADD_F32
                     "ENTRY e { p = f32[37,301] parameter(0)\n z = f32[] constant(0.5)\n"
                     " ROOT r = f32[37] reduce(p, z), dimensions={1}, to_apply=add }\n";
  hlo_value *a = fx_f32_array(2, d, x);
  hlo_value *o = fx_eval(trow, 1, &a);
  float want[C];
  for (int i = 0; i < R; i++) {
    float acc = 0.5f;
    for (int j = 0; j < C; j++)
      acc = acc + x[i * C + j];
    want[i] = acc;
  }
  fx_expect_f32(o, R, want);
  hlo_value_unref(o);
  const char *tcol = "HloModule m\n" ADD_F32
                     "ENTRY e { p = f32[37,301] parameter(0)\n z = f32[] constant(0.5)\n"
                     " ROOT r = f32[301] reduce(p, z), dimensions={0}, to_apply=add }\n";
  a = fx_f32_array(2, d, x);
  o = fx_eval(tcol, 1, &a);
  for (int j = 0; j < C; j++) {
    float acc = 0.5f;
    for (int i = 0; i < R; i++)
      acc = acc + x[i * C + j];
    want[j] = acc;
  }
  fx_expect_f32(o, C, want);
  hlo_value_unref(o);
}

/* Variadic reduce: argmax over (value, index) with a general comparator,
 * which takes the per-element chk_call path.  Ties keep the lower index. */
/* f32 row reductions with add/multiply/maximum/minimum run 16 rows at a time
 * in vector lanes (eval_reduce.c), the rest by the scalar kernels.  Every
 * row must still be folded strictly in order, acc = f(acc, x), bit for bit:
 * checked against a plain sequential loop for ragged shapes (1..33 rows,
 * 1..100 columns), NaNs of both signs and payloads (a NaN accumulator is
 * kept, as acc = acc + x on x86 keeps it), -0 and infinities. */
static float quiet_f(float a) {
  uint32_t b;
  memcpy(&b, &a, 4);
  b |= 0x00400000u;
  memcpy(&a, &b, 4);
  return a;
}
static float seq_step(int op, float a, float b) {
  switch (op) {
  case 0: return a != a ? quiet_f(a) : b != b ? quiet_f(b) : a + b;
  case 1: return a != a ? quiet_f(a) : b != b ? quiet_f(b) : a * b;
  /* maximum(-0, +0) = +0 and minimum(-0, +0) = -0 in either order
   * (IEEE 754-2019, StableHLO) */
  case 2: return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a;
  default: return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a;
  }
}

/* maximum(-0, +0) = +0 and minimum(-0, +0) = -0 whichever comes first
 * (IEEE 754-2019 maximum/minimum, the StableHLO spec), in a reduction as
 * in the elementwise op: rows {-0, +0} and {+0, -0} both reduce to +0 under
 * maximum and to -0 under minimum, on the scalar path (2 columns) and the
 * lane path (16 rows). */
static void test_reduce_minmax_signed_zero(void **state) {
  (void)state;
  static const char *const ops[] = {"maximum", "minimum"};
  for (int op = 0; op < 2; op++)
    for (int rows = 2; rows <= 16; rows += 14) {
      char text[512];
      snprintf(text, sizeof text,
               "HloModule m\nf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] %s(a, b) }\n"
               "ENTRY e { p = f32[%d,2] parameter(0)\n z = f32[] constant(%s)\n"
               " ROOT r = f32[%d] reduce(p, z), dimensions={1}, to_apply=f }\n",
               ops[op], rows, op == 0 ? "-inf" : "inf", rows);
      float v[32];
      for (int r = 0; r < rows; r++) {
        v[2 * r] = r % 2 ? 0.0f : -0.0f;
        v[2 * r + 1] = r % 2 ? -0.0f : 0.0f;
      }
      int64_t d[2] = {rows, 2};
      hlo_value *x = fx_f32_array(2, d, v);
      hlo_value *o = fx_eval(text, 1, &x);
      for (int r = 0; r < rows; r++) {
        float got = ((const float *)o->data)[r];
        if (got != 0.0f || (signbit(got) != 0) != (op == 1))
          fail_msg("%s row %d (%s first): got %g with sign bit %d", ops[op], r, r % 2 ? "+0" : "-0", (double)got,
                   signbit(got) != 0);
      }
      hlo_value_unref(o);
    }
}

static void test_reduce_rows_lanes(void **state) {
  (void)state;
  static const char *const ops[] = {"add", "multiply", "maximum", "minimum"};
  static const int64_t Ms[] = {1, 7, 8, 9, 15, 16, 17, 33};
  static const int64_t Ls[] = {1, 7, 8, 9, 15, 16, 17, 40, 100};
  uint32_t nanbits[3] = {0x7fc00000u, 0xffc00001u, 0x7fc12345u};
  float nans[3];
  memcpy(nans, nanbits, sizeof nans);
  const float special[] = {nans[0], nans[1], nans[2], -0.0f, 0.0f, INFINITY, -INFINITY, 1e-45f, -2.5f, 1.0f};
  for (int op = 0; op < 4; op++)
    for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
      for (size_t b = 0; b < sizeof Ls / sizeof *Ls; b++) {
        int64_t M = Ms[a], L = Ls[b], d[2] = {M, L};
        char text[1024];
        snprintf(text, sizeof text,
                 "HloModule m\nf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] %s(a, b) }\n"
                 "ENTRY e { p = f32[%lld,%lld] parameter(0)\n z = f32[] constant(%s)\n"
                 " ROOT r = f32[%lld] reduce(p, z), dimensions={1}, to_apply=f }\n",
                 ops[op], (long long)M, (long long)L, op == 1 ? "1" : "-0", (long long)M);
        float *v = malloc(sizeof(float) * (size_t)(M * L));
        assert_non_null(v);
        uint32_t sd = 17u + (uint32_t)(op * 1000 + (int)a * 10 + (int)b);
        for (int64_t i = 0; i < M * L; i++) {
          sd = sd * 1664525u + 1013904223u;
          /* about one element in 16 is special; the rest near 1 in size */
          v[i] = (sd >> 28) == 0 ? special[(sd >> 8) % 10] : (float)((double)(sd >> 8) / (1 << 24) * 2.2 - 1.1);
        }
        float *want = malloc(sizeof(float) * (size_t)M);
        assert_non_null(want);
        for (int64_t m = 0; m < M; m++) {
          float acc = op == 1 ? 1.0f : -0.0f;
          for (int64_t k = 0; k < L; k++)
            acc = seq_step(op, acc, v[m * L + k]);
          want[m] = acc;
        }
        hlo_value *x = fx_f32_array(2, d, v);
        hlo_value *o = fx_eval(text, 1, &x);
        assert_int_equal(o->count, M);
        for (int64_t m = 0; m < M; m++)
          if (memcmp((const float *)o->data + m, want + m, sizeof(float)) != 0)
            fail_msg("%s [%lld,%lld] row %lld: got %.9g, want %.9g", ops[op], (long long)M, (long long)L,
                     (long long)m, ((const float *)o->data)[m], want[m]);
        hlo_value_unref(o);
        free(v);
        free(want);
      }
}

static void test_reduce_variadic_argmax(void **state) {
  (void)state;
  const char *t =
      "HloModule m\n"
      "argmax {\n"
      " av = f32[] parameter(0)\n ai = s32[] parameter(1)\n"
      " bv = f32[] parameter(2)\n bi = s32[] parameter(3)\n"
      " gt = pred[] compare(bv, av), direction=GT\n"
      " eq = pred[] compare(bv, av), direction=EQ\n"
      " lt = pred[] compare(bi, ai), direction=LT\n"
      " tie = pred[] and(eq, lt)\n"
      " take = pred[] or(gt, tie)\n"
      " v = f32[] select(take, bv, av)\n"
      " i = s32[] select(take, bi, ai)\n"
      " ROOT r = (f32[], s32[]) tuple(v, i)\n}\n"
      "ENTRY e {\n p = f32[2,5] parameter(0)\n q = s32[2,5] parameter(1)\n"
      " z = f32[] constant(-inf)\n zi = s32[] constant(-1)\n"
      " ROOT r = (f32[2], s32[2]) reduce(p, q, z, zi), dimensions={1}, to_apply=argmax\n}\n";
  int64_t d[2] = {2, 5};
  const float v[10] = {3, 9, 2, 9, 1, -1, -5, -0.5f, -7, -2};
  hlo_value *args[2] = {fx_f32_array(2, d, v), hlo_value_array(HLO_S32, 2, d)};
  for (int i = 0; i < 10; i++)
    ((int32_t *)args[1]->data)[i] = i % 5;
  hlo_value *o = fx_eval(t, 2, args);
  assert_int_equal(o->type, HLO_TUPLE);
  assert_int_equal(o->ntuple, 2);
  fx_expect_f32(o->elems[0], 2, (const float[]){9, -0.5f});
  const int32_t *idx = o->elems[1]->data;
  assert_int_equal(idx[0], 1); /* first of the two 9s */
  assert_int_equal(idx[1], 2);
  hlo_value_unref(o);
}

/* bf16 add rounds every partial sum: 1 + 2^-8 is a tie between 1 and
 * 1 + 2^-7 and goes to the even 1, so 1 followed by 256 copies of 2^-8 stays
 * at 1.0 (f32 accumulation would give 2.0). */
static void test_reduce_bf16_step_rounding(void **state) {
  (void)state;
  const char *t =
      "HloModule m\n"
      "addbf { a = bf16[] parameter(0)\n b = bf16[] parameter(1)\n ROOT c = bf16[] add(a, b) }\n"
      "ENTRY e { p = bf16[257] parameter(0)\n z = bf16[] constant(0)\n"
      " ROOT r = bf16[] reduce(p, z), dimensions={0}, to_apply=addbf }\n";
  int64_t d[1] = {257};
  hlo_value *a = hlo_value_array(HLO_BF16, 1, d);
  uint16_t *p = a->data;
  p[0] = hlo_f32_to_bf16(1.0f);
  for (int i = 1; i < 257; i++)
    p[i] = hlo_f32_to_bf16(0x1p-8f);
  hlo_value *o = fx_eval(t, 1, &a);
  assert_int_equal(o->type, HLO_BF16);
  assert_true(hlo_bf16_to_f32(((uint16_t *)o->data)[0]) == 1.0f);
  hlo_value_unref(o);
  /* the same values in the other order: 256 * 2^-8 = 1 exactly, + 1 = 2 */
  a = hlo_value_array(HLO_BF16, 1, d);
  p = a->data;
  for (int i = 0; i < 256; i++)
    p[i] = hlo_f32_to_bf16(0x1p-8f);
  p[256] = hlo_f32_to_bf16(1.0f);
  o = fx_eval(t, 1, &a);
  assert_true(hlo_bf16_to_f32(((uint16_t *)o->data)[0]) == 2.0f);
  hlo_value_unref(o);
}

static void test_reduce_int_and_pred(void **state) {
  (void)state;
  /* s8 add wraps: 100 + 100 + 100 = 300 = 44 mod 256 */
  const char *t =
      "HloModule m\n"
      "add8 { a = s8[] parameter(0)\n b = s8[] parameter(1)\n ROOT c = s8[] add(a, b) }\n"
      "ENTRY e { p = s8[3] parameter(0)\n z = s8[] constant(0)\n"
      " ROOT r = s8[] reduce(p, z), dimensions={0}, to_apply=add8 }\n";
  int64_t d[1] = {3};
  hlo_value *a = hlo_value_array(HLO_S8, 1, d);
  memset(a->data, 100, 3);
  hlo_value *o = fx_eval(t, 1, &a);
  assert_int_equal(((int8_t *)o->data)[0], 44);
  hlo_value_unref(o);
  /* pred and / or over rows [[1,1,0],[1,1,1]] */
  const char *tp =
      "HloModule m\n"
      "andp { a = pred[] parameter(0)\n b = pred[] parameter(1)\n ROOT c = pred[] and(a, b) }\n"
      "ENTRY e { p = pred[2,3] parameter(0)\n z = pred[] constant(true)\n"
      " ROOT r = pred[2] reduce(p, z), dimensions={1}, to_apply=andp }\n";
  int64_t d2[2] = {2, 3};
  a = hlo_value_array(HLO_PRED, 2, d2);
  memcpy(a->data, (const uint8_t[]){1, 1, 0, 1, 1, 1}, 6);
  o = fx_eval(tp, 1, &a);
  assert_int_equal(((uint8_t *)o->data)[0], 0);
  assert_int_equal(((uint8_t *)o->data)[1], 1);
  hlo_value_unref(o);
  /* s32 max with an init above everything */
  const char *tm =
      "HloModule m\n"
      "mx { a = s32[] parameter(0)\n b = s32[] parameter(1)\n ROOT c = s32[] maximum(a, b) }\n"
      "ENTRY e { p = s32[2,3] parameter(0)\n z = s32[] constant(-2147483648)\n"
      " ROOT r = s32[3] reduce(p, z), dimensions={0}, to_apply=mx }\n";
  a = hlo_value_array(HLO_S32, 2, d2);
  memcpy(a->data, (const int32_t[]){-5, 7, 0, -6, 8, -1}, 24);
  o = fx_eval(tm, 1, &a);
  const int32_t *r = o->data;
  assert_int_equal(r[0], -5);
  assert_int_equal(r[1], 8);
  assert_int_equal(r[2], 0);
  hlo_value_unref(o);
}

static void test_reduce_empty_gives_init(void **state) {
  (void)state;
  const char *t = "HloModule m\n" ADD_F32
                  "ENTRY e { p = f32[3,0] parameter(0)\n z = f32[] constant(7)\n"
                  " ROOT r = f32[3] reduce(p, z), dimensions={1}, to_apply=add }\n";
  int64_t d[2] = {3, 0};
  hlo_value *a = hlo_value_array(HLO_F32, 2, d);
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 3, (const float[]){7, 7, 7});
  hlo_value_unref(o);
}

/* A reducer that is not a plain binary op (a - b... here 2a + b) runs
 * through chk_call: from init 0 over [1,2,3]: 2*0+1 = 1, 2*1+2 = 4,
 * 2*4+3 = 11 — the value pins the order of accumulation. */
static void test_reduce_general_reducer_order(void **state) {
  (void)state;
  const char *t =
      "HloModule m\n"
      "f { a = f32[] parameter(0)\n b = f32[] parameter(1)\n two = f32[] constant(2)\n"
      " m = f32[] multiply(a, two)\n ROOT c = f32[] add(m, b) }\n"
      "ENTRY e { p = f32[3] parameter(0)\n z = f32[] constant(0)\n"
      " ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=f }\n";
  int64_t d[1] = {3};
  hlo_value *a = fx_f32_array(1, d, (const float[]){1, 2, 3});
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 1, (const float[]){11});
  hlo_value_unref(o);
}

/* ---- reduce-window ----------------------------------------------------- */

/* The paper's reproducer: cumsum (reduce-window, size N, padding N-1_0) of
 * convert(convert(1.75 -> s32) -> f32) must be 1, 2, 3, ... */
static void test_reduce_window_cumsum(void **state) {
  (void)state;
  const char *t = "HloModule m\n" ADD_F32
                  "ENTRY e { p = f32[8] parameter(0)\n i = s32[8] convert(p)\n f = f32[8] convert(i)\n"
                  " z = f32[] constant(0)\n"
                  " ROOT r = f32[8] reduce-window(f, z), window={size=8 pad=7_0}, to_apply=add }\n";
  int64_t d[1] = {8};
  float x[8];
  for (int i = 0; i < 8; i++)
    x[i] = 1.75f;
  hlo_value *a = fx_f32_array(1, d, x);
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 8, (const float[]){1, 2, 3, 4, 5, 6, 7, 8});
  hlo_value_unref(o);
}

static void test_reduce_window_maxpool(void **state) {
  (void)state;
  /* 4x4 = 0..15 row-major; 2x2 stride 2 max: 5 7 13 15 */
  float x[16];
  for (int i = 0; i < 16; i++)
    x[i] = (float)i;
  int64_t d[2] = {4, 4};
  const char *t = "HloModule m\n" MAX_F32
                  "ENTRY e { p = f32[4,4] parameter(0)\n z = f32[] constant(-inf)\n"
                  " ROOT r = f32[2,2] reduce-window(p, z), window={size=2x2 stride=2x2}, to_apply=max }\n";
  hlo_value *a = fx_f32_array(2, d, x);
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 4, (const float[]){5, 7, 13, 15});
  hlo_value_unref(o);
}

static void test_reduce_window_padding(void **state) {
  (void)state;
  /* max over size 3, pad 1_1 of [-3,-1,-2] with init -inf: padding is skipped,
   * so the edges are max(-3,-1) = -1 and max(-1,-2) = -1, never 0 */
  int64_t d[1] = {3};
  const char *t = "HloModule m\n" MAX_F32
                  "ENTRY e { p = f32[3] parameter(0)\n z = f32[] constant(-inf)\n"
                  " ROOT r = f32[3] reduce-window(p, z), window={size=3 pad=1_1}, to_apply=max }\n";
  hlo_value *a = fx_f32_array(1, d, (const float[]){-3, -1, -2});
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 3, (const float[]){-1, -1, -1});
  hlo_value_unref(o);
  /* sum, size 2, stride 1, pad 1_1, init 100 over [1,2,3]:
   * [100+1, 100+1+2, 100+2+3, 100+3] (init counted once) */
  const char *ts = "HloModule m\n" ADD_F32
                   "ENTRY e { p = f32[3] parameter(0)\n z = f32[] constant(100)\n"
                   " ROOT r = f32[4] reduce-window(p, z), window={size=2 pad=1_1}, to_apply=add }\n";
  a = fx_f32_array(1, d, (const float[]){1, 2, 3});
  o = fx_eval(ts, 1, &a);
  fx_expect_f32(o, 4, (const float[]){101, 103, 105, 103});
  hlo_value_unref(o);
}

static void test_reduce_window_dilations(void **state) {
  (void)state;
  /* window dilation 2, size 2 over [1,2,3,4,5]: pairs (0,2) (1,3) (2,4):
   * 4, 6, 8 */
  int64_t d[1] = {5};
  const char *t = "HloModule m\n" ADD_F32
                  "ENTRY e { p = f32[5] parameter(0)\n z = f32[] constant(0)\n"
                  " ROOT r = f32[3] reduce-window(p, z), window={size=2 rhs_dilate=2}, to_apply=add }\n";
  hlo_value *a = fx_f32_array(1, d, (const float[]){1, 2, 3, 4, 5});
  hlo_value *o = fx_eval(t, 1, &a);
  fx_expect_f32(o, 3, (const float[]){4, 6, 8});
  hlo_value_unref(o);
  /* base dilation 2 over [1,2,3] -> 1 _ 2 _ 3 (holes skipped), size 2:
   * windows {1,_} {_,2} {2,_} {_,3} -> 1, 2, 2, 3 */
  int64_t d3[1] = {3};
  const char *tb = "HloModule m\n" ADD_F32
                   "ENTRY e { p = f32[3] parameter(0)\n z = f32[] constant(0)\n"
                   " ROOT r = f32[4] reduce-window(p, z), window={size=2 lhs_dilate=2}, to_apply=add }\n";
  a = fx_f32_array(1, d3, (const float[]){1, 2, 3});
  o = fx_eval(tb, 1, &a);
  fx_expect_f32(o, 4, (const float[]){1, 2, 2, 3});
  hlo_value_unref(o);
}

/* Variadic reduce-window through chk_call: running (max value, its index). */
static void test_reduce_window_variadic(void **state) {
  (void)state;
  const char *t =
      "HloModule m\n"
      "argmax {\n"
      " av = f32[] parameter(0)\n ai = s32[] parameter(1)\n"
      " bv = f32[] parameter(2)\n bi = s32[] parameter(3)\n"
      " gt = pred[] compare(bv, av), direction=GT\n"
      " v = f32[] select(gt, bv, av)\n i = s32[] select(gt, bi, ai)\n"
      " ROOT r = (f32[], s32[]) tuple(v, i)\n}\n"
      "ENTRY e {\n p = f32[4] parameter(0)\n q = s32[4] parameter(1)\n"
      " z = f32[] constant(-inf)\n zi = s32[] constant(-1)\n"
      " ROOT r = (f32[3], s32[3]) reduce-window(p, q, z, zi), window={size=2}, to_apply=argmax\n}\n";
  int64_t d[1] = {4};
  hlo_value *args[2] = {fx_f32_array(1, d, (const float[]){1, 5, 2, 3}), hlo_value_array(HLO_S32, 1, d)};
  for (int i = 0; i < 4; i++)
    ((int32_t *)args[1]->data)[i] = i;
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o->elems[0], 3, (const float[]){5, 5, 3});
  const int32_t *idx = o->elems[1]->data;
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 1);
  assert_int_equal(idx[2], 3);
  hlo_value_unref(o);
}

/* ---- map --------------------------------------------------------------- */

static void test_map(void **state) {
  (void)state;
  int64_t d[1] = {3};
  const char *t = "HloModule m\n" ADD_F32
                  "ENTRY e { p = f32[3] parameter(0)\n q = f32[3] parameter(1)\n"
                  " ROOT r = f32[3] map(p, q), dimensions={0}, to_apply=add }\n";
  hlo_value *args[2] = {fx_f32_array(1, d, (const float[]){1, 2, 3}), fx_f32_array(1, d, (const float[]){10, 20, 30})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 3, (const float[]){11, 22, 33});
  hlo_value_unref(o);
  /* a general computation: a * b - 1 */
  const char *tg =
      "HloModule m\n"
      "f { a = f32[] parameter(0)\n b = f32[] parameter(1)\n one = f32[] constant(1)\n"
      " m = f32[] multiply(a, b)\n ROOT c = f32[] subtract(m, one) }\n"
      "ENTRY e { p = f32[3] parameter(0)\n q = f32[3] parameter(1)\n"
      " ROOT r = f32[3] map(p, q), dimensions={0}, to_apply=f }\n";
  args[0] = fx_f32_array(1, d, (const float[]){1, 2, 3});
  args[1] = fx_f32_array(1, d, (const float[]){10, 20, 30});
  o = fx_eval(tg, 2, args);
  fx_expect_f32(o, 3, (const float[]){9, 39, 89});
  hlo_value_unref(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_sum_dims),
      cmocka_unit_test(test_reduce_max_min_nan),
      cmocka_unit_test(test_reduce_rank3_middle),
      cmocka_unit_test(test_reduce_order_matches_sequential),
      cmocka_unit_test(test_reduce_minmax_signed_zero),
      cmocka_unit_test(test_reduce_rows_lanes),
      cmocka_unit_test(test_reduce_variadic_argmax),
      cmocka_unit_test(test_reduce_bf16_step_rounding),
      cmocka_unit_test(test_reduce_int_and_pred),
      cmocka_unit_test(test_reduce_empty_gives_init),
      cmocka_unit_test(test_reduce_general_reducer_order),
      cmocka_unit_test(test_reduce_window_cumsum),
      cmocka_unit_test(test_reduce_window_maxpool),
      cmocka_unit_test(test_reduce_window_padding),
      cmocka_unit_test(test_reduce_window_dilations),
      cmocka_unit_test(test_reduce_window_variadic),
      cmocka_unit_test(test_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
