/* test_eval_dot.c — dot and convolution of the reference evaluator, through
 * the public path: HLO text -> hlo_parse -> chk_eval_module.
 *
 * Small cases are computed by hand (in the comments).  Larger cases are
 * compared bitwise with a plain triple loop written here in the order the
 * evaluator documents (c = 0; for k ascending: c = c + a*b in f32), which
 * checks that blocking, vector width and threads never change a bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"
#include "hlo/hlo_numerics.h"
#include "hlo/hlo_dtype.h"

/* ---- helpers ----------------------------------------------------------- */

static float rnd(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((int)(*s >> 8) % 2001 - 1000) * 1.0e-3f + 1.0e-7f * (float)(*s & 255u);
}

/* ---- dot --------------------------------------------------------------- */

static void test_dot_matrix_vector(void **state) {
  (void)state;
  /* [[1,2,3],[4,5,6]] . [1,0,-1] = [-2, -2] */
  const char *t = "HloModule m\nENTRY e { a = f32[2,3] parameter(0)\n b = f32[3] parameter(1)\n"
                  " ROOT d = f32[2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n";
  int64_t da[2] = {2, 3}, db[1] = {3};
  hlo_value *args[2] = {fx_f32_array(2, da, (const float[]){1, 2, 3, 4, 5, 6}),
                        fx_f32_array(1, db, (const float[]){1, 0, -1})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 2, (const float[]){-2, -2});
  hlo_value_unref(o);
}

static void test_dot_batch_matmul(void **state) {
  (void)state;
  /* batch 0: [[1,2],[3,4]] x [[1,0],[0,1]] = same;
   * batch 1: [[1,1],[1,1]] x [[1,2],[3,4]] = [[4,6],[4,6]] */
  const char *t =
      "HloModule m\nENTRY e { a = f32[2,2,2] parameter(0)\n b = f32[2,2,2] parameter(1)\n"
      " ROOT d = f32[2,2,2] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
      " rhs_batch_dims={0}, rhs_contracting_dims={1} }\n";
  int64_t d[3] = {2, 2, 2};
  hlo_value *args[2] = {fx_f32_array(3, d, (const float[]){1, 2, 3, 4, 1, 1, 1, 1}),
                        fx_f32_array(3, d, (const float[]){1, 0, 0, 1, 1, 2, 3, 4})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 8, (const float[]){1, 2, 3, 4, 4, 6, 4, 6});
  hlo_value_unref(o);
}

static void test_dot_contract_dim0(void **state) {
  (void)state;
  /* A^T B with A = [[1,2],[3,4],[5,6]], B = [[1,0],[0,1],[1,1]]:
   * (A^T B)[i][j] = sum_k A[k][i] B[k][j]
   * [0][0] = 1 + 0 + 5 = 6, [0][1] = 0 + 3 + 5 = 8,
   * [1][0] = 2 + 0 + 6 = 8, [1][1] = 0 + 4 + 6 = 10 */
  const char *t = "HloModule m\nENTRY e { a = f32[3,2] parameter(0)\n b = f32[3,2] parameter(1)\n"
                  " ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d[2] = {3, 2};
  hlo_value *args[2] = {fx_f32_array(2, d, (const float[]){1, 2, 3, 4, 5, 6}),
                        fx_f32_array(2, d, (const float[]){1, 0, 0, 1, 1, 1})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 4, (const float[]){6, 8, 8, 10});
  hlo_value_unref(o);
}

static void test_dot_int8(void **state) {
  (void)state;
  /* s8 x s8 -> s32: 127*127 + (-128)*(-128) + (-128)*127 = 16129 + 16384 - 16256 = 16257 */
  const char *t = "HloModule m\nENTRY e { a = s8[3] parameter(0)\n b = s8[3] parameter(1)\n"
                  " ROOT d = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d[1] = {3};
  hlo_value *args[2] = {hlo_value_array(HLO_S8, 1, d), hlo_value_array(HLO_S8, 1, d)};
  memcpy(args[0]->data, (const int8_t[]){127, -128, -128}, 3);
  memcpy(args[1]->data, (const int8_t[]){127, -128, 127}, 3);
  hlo_value *o = fx_eval(t, 2, args);
  assert_int_equal(((int32_t *)o->data)[0], 16257);
  hlo_value_unref(o);
  /* s8 result wraps: 100*2 + 100*1 = 300 = 44 (mod 256) */
  const char *t8 = "HloModule m\nENTRY e { a = s8[2] parameter(0)\n b = s8[2] parameter(1)\n"
                   " ROOT d = s8[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d2[1] = {2};
  args[0] = hlo_value_array(HLO_S8, 1, d2);
  args[1] = hlo_value_array(HLO_S8, 1, d2);
  memcpy(args[0]->data, (const int8_t[]){100, 100}, 2);
  memcpy(args[1]->data, (const int8_t[]){2, 1}, 2);
  o = fx_eval(t8, 2, args);
  assert_int_equal(((int8_t *)o->data)[0], 44);
  hlo_value_unref(o);
}

static void test_dot_bf16(void **state) {
  (void)state;
  /* [1, 2^-8, 2^-8] . [1, 1, 1]: accumulated in f32 the sum is 1 + 2^-7,
   * exactly a bf16, so the result is 1.0078125 (per-step bf16 rounding would
   * have given 1.0). */
  const char *t = "HloModule m\nENTRY e { a = bf16[3] parameter(0)\n b = bf16[3] parameter(1)\n"
                  " ROOT d = bf16[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d[1] = {3};
  hlo_value *args[2] = {hlo_value_array(HLO_BF16, 1, d), hlo_value_array(HLO_BF16, 1, d)};
  uint16_t *a = args[0]->data, *b = args[1]->data;
  a[0] = hlo_f32_to_bf16(1.0f), a[1] = a[2] = hlo_f32_to_bf16(0x1p-8f);
  b[0] = b[1] = b[2] = hlo_f32_to_bf16(1.0f);
  hlo_value *o = fx_eval(t, 2, args);
  assert_int_equal(o->type, HLO_BF16);
  assert_true(hlo_bf16_to_f32(((uint16_t *)o->data)[0]) == 1.0078125f);
  hlo_value_unref(o);
  /* bf16 operands, f32 result: 1.5 * 1.5 + 0.25 * 4 = 2.25 + 1 = 3.25 */
  const char *tf = "HloModule m\nENTRY e { a = bf16[2] parameter(0)\n b = bf16[2] parameter(1)\n"
                   " ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d2[1] = {2};
  args[0] = hlo_value_array(HLO_BF16, 1, d2);
  args[1] = hlo_value_array(HLO_BF16, 1, d2);
  a = args[0]->data, b = args[1]->data;
  a[0] = hlo_f32_to_bf16(1.5f), a[1] = hlo_f32_to_bf16(0.25f);
  b[0] = hlo_f32_to_bf16(1.5f), b[1] = hlo_f32_to_bf16(4.0f);
  o = fx_eval(tf, 2, args);
  fx_expect_f32(o, 1, (const float[]){3.25f});
  hlo_value_unref(o);
}

/* Ragged sizes (not multiples of any tile), a batch dim, transposed rhs
 * (contracting on its last dim) and K > one k block: bitwise equal to a
 * naive loop in the documented order. */
static void test_dot_blocked_matches_naive(void **state) {
  (void)state;
  enum { B = 2, M = 37, K = 300, N = 45 };
  static float a[B * M * K], bt[B * N * K], want[B * M * N];
  uint32_t s = 7;
  for (int i = 0; i < B * M * K; i++)
    a[i] = rnd(&s);
  for (int i = 0; i < B * N * K; i++)
    bt[i] = rnd(&s);
  for (int b = 0; b < B; b++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float c = 0.0f;
        for (int k = 0; k < K; k++)
          c = c + a[(b * M + i) * K + k] * bt[(b * N + j) * K + k];
        want[(b * M + i) * N + j] = c;
      }
  const char *t =
      "HloModule m\nENTRY e { a = f32[2,37,300] parameter(0)\n b = f32[2,45,300] parameter(1)\n"
      " ROOT d = f32[2,37,45] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
      " rhs_batch_dims={0}, rhs_contracting_dims={2} }\n";
  int64_t da[3] = {B, M, K}, db[3] = {B, N, K};
  hlo_value *args[2] = {fx_f32_array(3, da, a), fx_f32_array(3, db, bt)};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, B * M * N, want);
  hlo_value_unref(o);
}

/* With emulate_device an f32 dot follows the device's numerics (the bf16
 * passes its precision asks for, FTZ of every product and partial sum), k
 * ascending from 0: c = hlo_num_dot_acc(c, a, b, p).  That definition is written
 * out here as the plain loop; the evaluator's vectorised rows must give its
 * bits at each precision, for a width that is not a multiple of 8, for
 * operands whose products are subnormal, and with a NaN among them (which
 * takes the scalar path).  The M x N shapes cover row blocks that a batch
 * ends inside (M = 37: 16 + 16 + 5 rows) and rows of 32 + 8 + 1 lanes;
 * tiny = false leaves every product normal, where the kernels skip the
 * flushes they can prove idle; tiny = true also makes every third row of a
 * and every fourth column of b tiny, so whole sums are made of subnormal
 * products that the device flushes to zero. */
enum { EM_B = 2, EM_MAX_M = 37, EM_K = 37, EM_MAX_N = 41 };
static void emulated_case(const char *prec, hlo_num_precision p, bool with_nan, int M, int N, bool tiny) {
  enum { B = EM_B, K = EM_K };
  static float a[B * EM_MAX_M * K], bm[B * K * EM_MAX_N], want[B * EM_MAX_M * EM_MAX_N];
  uint32_t s = 11;
  for (int i = 0; i < B * M * K; i++)
    a[i] = rnd(&s) * (tiny && (i % 7 == 0 || i / K % 3 == 0) ? 1e-20f : 1.0f);
  for (int i = 0; i < B * K * N; i++)
    bm[i] = rnd(&s) * (tiny && (i % 5 == 0 || i % N % 4 == 0) ? 1e-19f : 1.0f);
  if (with_nan)
    a[3 * K + 4] = NAN;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float c = 0.0f;
        for (int k = 0; k < K; k++)
          c = hlo_num_dot_acc(c, a[(b * M + i) * K + k], bm[(b * K + k) * N + j], p);
        want[(b * M + i) * N + j] = c;
      }
  char t[512];
  snprintf(t, sizeof t,
           "HloModule m\nENTRY e { a = f32[2,%d,37] parameter(0)\n b = f32[2,37,%d] parameter(1)\n"
           " ROOT d = f32[2,%d,%d] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
           " rhs_batch_dims={0}, rhs_contracting_dims={1}%s%s%s }\n",
           M, N, M, N, prec ? ", operand_precision={" : "", prec ? prec : "", prec ? "}" : "");
  hlo_error err = {0};
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  int64_t da[3] = {B, M, K}, db[3] = {B, K, N};
  hlo_value *args[2] = {fx_f32_array(3, da, a), fx_f32_array(3, db, bm)};
  chk_eval_opts o = {.replicas = 1, .emulate_device = 1};
  hlo_value *out = NULL;
  assert_int_equal(chk_eval_module(m, 2, args, &o, &out, &err), 0);
  fx_expect_f32(out, B * M * N, want);
  /* the case can tell: the plain f32 loop (no passes, no FTZ) differs */
  int differ = 0;
  for (int b = 0; b < B; b++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float c = 0.0f;
        for (int k = 0; k < K; k++)
          c = c + a[(b * M + i) * K + k] * bm[(b * K + k) * N + j];
        differ += memcmp(&c, &want[(b * M + i) * N + j], sizeof c) != 0;
      }
  if (!with_nan || p != HLO_NUM_PREC_HIGHEST)
    assert_true(differ > 0);
  hlo_value_unref(out);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

static void test_dot_emulated_device_numerics(void **state) {
  (void)state;
  for (int shape = 0; shape < 2; shape++) {
    int M = shape ? 37 : 5, N = shape ? 41 : 19;
    for (int tiny = 0; tiny < 2; tiny++) {
      emulated_case(NULL, HLO_NUM_PREC_DEFAULT, false, M, N, tiny);
      emulated_case("high,high", HLO_NUM_PREC_HIGH, false, M, N, tiny);
      emulated_case("highest,highest", HLO_NUM_PREC_HIGHEST, false, M, N, tiny);
    }
    emulated_case(NULL, HLO_NUM_PREC_DEFAULT, true, M, N, true);
    emulated_case("highest,highest", HLO_NUM_PREC_HIGHEST, true, M, N, true);
  }
}

static void test_dot_f64_and_shape_errors(void **state) {
  (void)state;
  /* f64: [0.1, 0.2] . [1, 1] = 0.1 + 0.2 in double = 0.30000000000000004 */
  const char *t = "HloModule m\nENTRY e { a = f64[2] parameter(0)\n b = f64[2] parameter(1)\n"
                  " ROOT d = f64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n";
  int64_t d[1] = {2};
  hlo_value *args[2] = {hlo_value_array(HLO_F64, 1, d), hlo_value_array(HLO_F64, 1, d)};
  memcpy(args[0]->data, (const double[]){0.1, 0.2}, 16);
  memcpy(args[1]->data, (const double[]){1, 1}, 16);
  hlo_value *o = fx_eval(t, 2, args);
  assert_true(((double *)o->data)[0] == 0.1 + 0.2);
  hlo_value_unref(o);
}

/* An f64 dot is each element's products added k ascending from zero, one
 * rounding per add and per product (no multiply-add): the plain loop below
 * is that definition.  9 x 70 covers the evaluator's register blocks of
 * 4 rows by 32 columns and the rows and columns they leave over. */
static void test_dot_f64_order(void **state) {
  (void)state;
  enum { M = 9, K = 13, N = 70 };
  static double a[M * K], b[K * N], want[M * N];
  uint32_t s = 5;
  for (int i = 0; i < M * K; i++)
    a[i] = (double)rnd(&s) * 1e3 + (double)rnd(&s) * 1e-9;
  for (int i = 0; i < K * N; i++)
    b[i] = (double)rnd(&s) * 1e-3 + (double)rnd(&s) * 1e-12;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      volatile double c = 0.0; /* one rounding per step, whatever the flags */
      for (int k = 0; k < K; k++) {
        volatile double p = a[i * K + k] * b[k * N + j];
        c = c + p;
      }
      want[i * N + j] = c;
    }
  const char *t = "HloModule m\nENTRY e { a = f64[9,13] parameter(0)\n b = f64[13,70] parameter(1)\n"
                  " ROOT d = f64[9,70] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n";
  int64_t da[2] = {M, K}, db[2] = {K, N};
  hlo_value *args[2] = {hlo_value_array(HLO_F64, 2, da), hlo_value_array(HLO_F64, 2, db)};
  memcpy(args[0]->data, a, sizeof a);
  memcpy(args[1]->data, b, sizeof b);
  hlo_value *o = fx_eval(t, 2, args);
  assert_int_equal(o->count, M * N);
  assert_memory_equal(o->data, want, sizeof want);
  hlo_value_unref(o); /* fx_eval took the arguments */
}

/* ---- convolution ------------------------------------------------------- */

static hlo_value *conv1(const char *window, const char *outshape, const float *x, int64_t nx,
                        const float *k, int64_t nk, const char *extra) {
  char t[1024];
  snprintf(t, sizeof t,
           "HloModule m\nENTRY e { x = f32[1,%lld,1] parameter(0)\n k = f32[%lld,1,1] parameter(1)\n"
           " ROOT c = f32[%s] convolution(x, k), window={%s}, dim_labels=b0f_0io->b0f%s }\n",
           (long long)nx, (long long)nk, outshape, window, extra);
  int64_t dx[3] = {1, nx, 1}, dk[3] = {nk, 1, 1};
  hlo_value *args[2] = {fx_f32_array(3, dx, x), fx_f32_array(3, dk, k)};
  return fx_eval(t, 2, args);
}

static void test_conv_1d(void **state) {
  (void)state;
  const float x[5] = {1, 2, 3, 4, 5};
  /* valid, kernel [1,0,-1]: y[i] = x[i] - x[i+2] = -2 -2 -2 */
  hlo_value *o = conv1("size=3", "1,3,1", x, 5, (const float[]){1, 0, -1}, 3, "");
  fx_expect_f32(o, 3, (const float[]){-2, -2, -2});
  hlo_value_unref(o);
  /* pad 1_1: y0 = 0*1 + x0*0 + x1*-1 = -2, middle -2, y4 = x3*1 + x4*0 + 0 = 4 */
  o = conv1("size=3 pad=1_1", "1,5,1", x, 5, (const float[]){1, 0, -1}, 3, "");
  fx_expect_f32(o, 5, (const float[]){-2, -2, -2, -2, 4});
  hlo_value_unref(o);
  /* stride 2, kernel [1,2,3]: y0 = 1+4+9 = 14, y1 = 3+8+15 = 26 */
  o = conv1("size=3 stride=2", "1,2,1", x, 5, (const float[]){1, 2, 3}, 3, "");
  fx_expect_f32(o, 2, (const float[]){14, 26});
  hlo_value_unref(o);
  /* rhs_dilate 2, kernel [1,2]: y[o] = x[o] + 2 x[o+2] = 7, 10, 13 */
  o = conv1("size=2 rhs_dilate=2", "1,3,1", x, 5, (const float[]){1, 2}, 2, "");
  fx_expect_f32(o, 3, (const float[]){7, 10, 13});
  hlo_value_unref(o);
  /* lhs_dilate 2 on [1,2,3] -> 1 0 2 0 3, kernel [1,10]: 1, 20, 2, 30 */
  o = conv1("size=2 lhs_dilate=2", "1,4,1", x, 3, (const float[]){1, 10}, 2, "");
  fx_expect_f32(o, 4, (const float[]){1, 20, 2, 30});
  hlo_value_unref(o);
}

static void test_conv_2d(void **state) {
  (void)state;
  /* x = 1..9 as 3x3, k = [[1,2],[3,4]] (cross-correlation, no flip):
   * y00 = 1*1+2*2+4*3+5*4 = 37, y01 = 2+6+15+24 = 47,
   * y10 = 4+10+21+32 = 67, y11 = 5+12+24+36 = 77 */
  const char *t =
      "HloModule m\nENTRY e { x = f32[1,3,3,1] parameter(0)\n k = f32[2,2,1,1] parameter(1)\n"
      " ROOT c = f32[1,2,2,1] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->b01f }\n";
  int64_t dx[4] = {1, 3, 3, 1}, dk[4] = {2, 2, 1, 1};
  hlo_value *args[2] = {fx_f32_array(4, dx, (const float[]){1, 2, 3, 4, 5, 6, 7, 8, 9}),
                        fx_f32_array(4, dk, (const float[]){1, 2, 3, 4})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 4, (const float[]){37, 47, 67, 77});
  hlo_value_unref(o);
  /* NCHW / OIHW layout, 2 input features, 2 output features, stride 2 and
   * padding 1_0 on both dims over a 3x3 image:
   * input features: c0 = 1..9, c1 = all 1; kernel 1x1 spatial? no: 2x2.
   * Output position (0,0) covers rows -1..0, cols -1..0 -> only (0,0) hits:
   *   o0 = c0[0,0]*k[0][0][1][1] + c1[0,0]*k[0][1][1][1]
   * with k[o][i][h][w] = 1 for o=0 and h=w=1, i any; k for o=1 all 2.
   * (0,0): o0 = 1 + 1 = 2; o1 = 2*(1 + 1) = 4
   * (0,1): cols 1..2 rows -1..0: row 0, cols 1,2 -> o0 uses w=1 -> col 2:
   *   c0[0,2] + c1[0,2] = 3 + 1 = 4; o1 = 2*(2+3) + 2*(1+1) = 14
   * (1,0): rows 1..2, cols -1..0 -> o0: (h=1,w=1) = row 2 col 0: 7 + 1 = 8;
   *   o1 = 2*(4+7) + 2*2 = 26
   * (1,1): rows 1..2, cols 1..2 -> o0: row 2 col 2: 9 + 1 = 10;
   *   o1 = 2*(5+6+8+9) + 2*4 = 64 */
  const char *tn =
      "HloModule m\nENTRY e { x = f32[1,2,3,3] parameter(0)\n k = f32[2,2,2,2] parameter(1)\n"
      " ROOT c = f32[1,2,2,2] convolution(x, k), window={size=2x2 stride=2x2 pad=1_0x1_0},"
      " dim_labels=bf01_oi01->bf01 }\n";
  int64_t dxn[4] = {1, 2, 3, 3}, dkn[4] = {2, 2, 2, 2};
  float xn[18], kn[16];
  for (int i = 0; i < 9; i++)
    xn[i] = (float)(i + 1), xn[9 + i] = 1.0f;
  for (int i = 0; i < 16; i++)
    kn[i] = i < 8 ? ((i % 4) == 3 ? 1.0f : 0.0f) : 2.0f;
  args[0] = fx_f32_array(4, dxn, xn);
  args[1] = fx_f32_array(4, dkn, kn);
  o = fx_eval(tn, 2, args);
  /* output [1][f][h][w] */
  fx_expect_f32(o, 8, (const float[]){2, 4, 8, 10, 4, 14, 26, 64});
  hlo_value_unref(o);
}

static void test_conv_groups(void **state) {
  (void)state;
  /* feature_group_count=2: features (f0, f1) at two positions
   * [[1,10],[2,20]]; kernel size 1, in 1, out 2 = [3, 5]: output feature 0
   * reads f0 (group 0), output feature 1 reads f1 (group 1):
   * [[3, 50], [6, 100]] */
  const char *t =
      "HloModule m\nENTRY e { x = f32[1,2,2] parameter(0)\n k = f32[1,1,2] parameter(1)\n"
      " ROOT c = f32[1,2,2] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f,"
      " feature_group_count=2 }\n";
  int64_t dx[3] = {1, 2, 2}, dk[3] = {1, 1, 2};
  hlo_value *args[2] = {fx_f32_array(3, dx, (const float[]){1, 10, 2, 20}), fx_f32_array(3, dk, (const float[]){3, 5})};
  hlo_value *o = fx_eval(t, 2, args);
  fx_expect_f32(o, 4, (const float[]){3, 50, 6, 100});
  hlo_value_unref(o);
  /* batch_group_count=2: input batch [1, 2], kernel out features [10, 100]:
   * output feature 0 reads batch 0 (1*10), feature 1 reads batch 1 (2*100) */
  const char *tb =
      "HloModule m\nENTRY e { x = f32[2,1,1] parameter(0)\n k = f32[1,1,2] parameter(1)\n"
      " ROOT c = f32[1,1,2] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f,"
      " batch_group_count=2 }\n";
  int64_t dxb[3] = {2, 1, 1};
  args[0] = fx_f32_array(3, dxb, (const float[]){1, 2});
  args[1] = fx_f32_array(3, dk, (const float[]){10, 100});
  o = fx_eval(tb, 2, args);
  fx_expect_f32(o, 2, (const float[]){10, 200});
  hlo_value_unref(o);
}

static void test_conv_int_and_errors(void **state) {
  (void)state;
  /* s8 input and kernel, s32 result: [100, 100, 100] . [100, 100] windows:
   * 20000, 20000 (would wrap in s8, not in s32) */
  const char *t =
      "HloModule m\nENTRY e { x = s8[1,3,1] parameter(0)\n k = s8[2,1,1] parameter(1)\n"
      " ROOT c = s32[1,2,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f }\n";
  int64_t dx[3] = {1, 3, 1}, dk[3] = {2, 1, 1};
  hlo_value *args[2] = {hlo_value_array(HLO_S8, 3, dx), hlo_value_array(HLO_S8, 3, dk)};
  memset(args[0]->data, 100, 3);
  memset(args[1]->data, 100, 2);
  hlo_value *o = fx_eval(t, 2, args);
  assert_int_equal(((int32_t *)o->data)[0], 20000);
  assert_int_equal(((int32_t *)o->data)[1], 20000);
  hlo_value_unref(o);
  /* a kernel whose input features do not match is refused, not crashed on */
  const char *tbad =
      "HloModule m\nENTRY e { x = f32[1,3,2] parameter(0)\n k = f32[2,1,1] parameter(1)\n"
      " ROOT c = f32[1,2,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f }\n";
  int64_t dxb[3] = {1, 3, 2};
  args[0] = hlo_value_array(HLO_F32, 3, dxb);
  args[1] = hlo_value_array(HLO_F32, 3, dk);
  fx_eval_fails(tbad, 2, args, "feature");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dot_matrix_vector),
      cmocka_unit_test(test_dot_batch_matmul),
      cmocka_unit_test(test_dot_contract_dim0),
      cmocka_unit_test(test_dot_int8),
      cmocka_unit_test(test_dot_bf16),
      cmocka_unit_test(test_dot_blocked_matches_naive),
      cmocka_unit_test(test_dot_emulated_device_numerics),
      cmocka_unit_test(test_dot_f64_and_shape_errors),
      cmocka_unit_test(test_dot_f64_order),
      cmocka_unit_test(test_conv_1d),
      cmocka_unit_test(test_conv_2d),
      cmocka_unit_test(test_conv_groups),
      cmocka_unit_test(test_conv_int_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
