/* test_eval_sort.c — sort in the reference evaluator.
 *
 * Through the public path (hlo_parse, chk_eval_module).  Expected orders are
 * written out by hand; for the paper's top-k reproducer (a key/value sort
 * along axis 0 of f32[1024,4]) the keys are a known permutation of 0..1023
 * per column, so the expected rows follow from the definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"

/* Comparators.  LT2/GT2: two operands, key is operand 0. */
#define LT1(T)                                                                                     \
  "lt {\n a = " T "[] parameter(0)\n b = " T                                                       \
  "[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=LT\n}\n"
#define GT1(T)                                                                                     \
  "gt {\n a = " T "[] parameter(0)\n b = " T                                                       \
  "[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=GT\n}\n"

static void sort_ascending_descending(void **state) {
  (void)state;
  const double v[] = {3, -1, 2.5, 0, 7};
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(5), v)};
  fx_expect(fx_eval(LT1("f32") "ENTRY e {\n p = f32[5] parameter(0)\n"
                               " ROOT s = f32[5] sort(p), dimensions={0}, to_apply=lt\n}\n",
                    1, a),
            HLO_F32, 1, DIMS(5), VALS(-1, 0, 2.5, 3, 7));
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(5), v)};
  fx_expect(fx_eval(GT1("f32") "ENTRY e {\n p = f32[5] parameter(0)\n"
                               " ROOT s = f32[5] sort(p), dimensions={0}, to_apply=gt\n}\n",
                    1, b),
            HLO_F32, 1, DIMS(5), VALS(7, 3, 2.5, 0, -1));
  /* compare(rhs, lhs) LT is a descending sort too */
  hlo_value *c[] = {fx_array(HLO_S32, 1, DIMS(5), v)};
  fx_expect(fx_eval("rev {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
                    " ROOT c = pred[] compare(b, a), direction=LT\n}\n"
                    "ENTRY e {\n p = s32[5] parameter(0)\n"
                    " ROOT s = s32[5] sort(p), dimensions={0}, to_apply=rev\n}\n",
                    1, c),
            HLO_S32, 1, DIMS(5), VALS(7, 3, 2, 0, -1));
}

static void sort_integer_types(void **state) {
  (void)state;
  /* u8 is unsigned: 200 > 5; s8 is signed: -56 < 5. */
  hlo_value *a[] = {fx_array(HLO_U8, 1, DIMS(3), VALS(200, 5, 17))};
  fx_expect(fx_eval(LT1("u8") "ENTRY e {\n p = u8[3] parameter(0)\n"
                              " ROOT s = u8[3] sort(p), dimensions={0}, to_apply=lt\n}\n",
                    1, a),
            HLO_U8, 1, DIMS(3), VALS(5, 17, 200));
  hlo_value *b[] = {fx_array(HLO_S8, 1, DIMS(3), VALS(-56, 5, 17))};
  fx_expect(fx_eval(GT1("s8") "ENTRY e {\n p = s8[3] parameter(0)\n"
                              " ROOT s = s8[3] sort(p), dimensions={0}, to_apply=gt\n}\n",
                    1, b),
            HLO_S8, 1, DIMS(3), VALS(17, 5, -56));
  hlo_value *c[] = {fx_array(HLO_BF16, 1, DIMS(4), VALS(1.5, -2, 0.25, 100))};
  fx_expect(fx_eval(LT1("bf16") "ENTRY e {\n p = bf16[4] parameter(0)\n"
                                " ROOT s = bf16[4] sort(p), dimensions={0}, to_apply=lt\n}\n",
                    1, c),
            HLO_BF16, 1, DIMS(4), VALS(-2, 0.25, 1.5, 100));
}

static void sort_along_last_dim_2d(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(2, 3), VALS(3, 1, 2, 9, 7, 8))};
  fx_expect(fx_eval(GT1("s32") "ENTRY e {\n p = s32[2,3] parameter(0)\n"
                               " ROOT s = s32[2,3] sort(p), dimensions={1}, to_apply=gt\n}\n",
                    1, a),
            HLO_S32, 2, DIMS(2, 3), VALS(3, 2, 1, 9, 8, 7));
}

#define KV_GT(T)                                                                                   \
  "kv {\n a = " T "[] parameter(0)\n b = " T "[] parameter(1)\n"                                   \
  " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"                                             \
  " ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"

#define KV_GT_F32 KV_GT("f32")

static void sort_key_value_dim0(void **state) {
  (void)state;
  /* keys [4,2], values = row numbers: each column sorted on its own. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 8, 4, 5, 2, 7, 3, 6)),
                    fx_array(HLO_S32, 2, DIMS(4, 2), VALS(0, 0, 1, 1, 2, 2, 3, 3))};
  hlo_value *v = fx_eval(
      KV_GT_F32 "ENTRY e {\n k = f32[4,2] parameter(0)\n v = s32[4,2] parameter(1)\n"
                " ROOT s = (f32[4,2], s32[4,2]) sort(k, v), dimensions={0}, to_apply=kv\n}\n",
      2, a);
  assert_int_equal(v->type, HLO_TUPLE);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 2, DIMS(4, 2), VALS(4, 8, 3, 7, 2, 6, 1, 5));
  fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 2, DIMS(4, 2), VALS(1, 0, 3, 2, 2, 3, 0, 1));
  hlo_value_unref(v);
}

/* The paper's reproducer: top-k through a key/value sort along axis 0 of
 * f32[1024,4].  Column j holds the keys (37 i + 101 j) mod 1024, a
 * permutation of 0..1023 since 37 is odd; values are the row numbers.  After
 * a descending sort row r of column j has key 1023 - r and value i with
 * 37 i + 101 j = 1023 - r (mod 1024). */
static void sort_topk_reproducer(void **state) {
  (void)state;
  enum { N = 1024, C = 4 };
  const char *texts[] = {
      KV_GT_F32 "ENTRY e {\n k = f32[1024,4] parameter(0)\n v = s32[1024,4] parameter(1)\n"
                " ROOT s = (f32[1024,4], s32[1024,4]) sort(k, v), dimensions={0}, is_stable=true,"
                " to_apply=kv\n}\n",
      /* the same comparator behind and(c, c): called per comparison */
      "kv {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n c = s32[] parameter(2)\n"
      " d = s32[] parameter(3)\n r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n"
      " ROOT q = pred[] and(r, r)\n}\n"
      "ENTRY e {\n k = f32[1024,4] parameter(0)\n v = s32[1024,4] parameter(1)\n"
      " ROOT s = (f32[1024,4], s32[1024,4]) sort(k, v), dimensions={0}, is_stable=true,"
      " to_apply=kv\n}\n"};
  for (int t = 0; t < 2; t++) {
    hlo_value *k = hlo_value_array(HLO_F32, 2, DIMS(N, C));
    hlo_value *iv = hlo_value_array(HLO_S32, 2, DIMS(N, C));
    float *kd = k->data;
    int32_t *vd = iv->data;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < C; j++) {
        kd[i * C + j] = (float)((37 * i + 101 * j) % N);
        vd[i * C + j] = i;
      }
    hlo_value *a[] = {k, iv};
    hlo_value *v = fx_eval(texts[t], 2, a);
    const float *sk = v->elems[0]->data;
    const int32_t *sv = v->elems[1]->data;
    for (int r = 0; r < N; r++)
      for (int j = 0; j < C; j++) {
        assert_true(sk[r * C + j] == (float)(N - 1 - r));
        int i = sv[r * C + j];
        assert_true(i >= 0 && i < N);
        assert_int_equal((37 * i + 101 * j) % N, N - 1 - r);
      }
    hlo_value_unref(v);
  }
}

#define KV_LT_S32                                                                                  \
  "kv {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"                                       \
  " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"                                             \
  " ROOT r = pred[] compare(a, b), direction=LT\n}\n"

static void sort_stable_ties(void **state) {
  (void)state;
  const char *texts[] = {
      KV_LT_S32
      "ENTRY e {\n k = s32[7] parameter(0)\n v = s32[7] parameter(1)\n"
      " ROOT s = (s32[7], s32[7]) sort(k, v), dimensions={0}, is_stable=true, to_apply=kv\n}\n",
      /* without is_stable the evaluator still keeps ties in input order */
      KV_LT_S32 "ENTRY e {\n k = s32[7] parameter(0)\n v = s32[7] parameter(1)\n"
                " ROOT s = (s32[7], s32[7]) sort(k, v), dimensions={0}, to_apply=kv\n}\n"};
  for (int t = 0; t < 2; t++) {
    hlo_value *a[] = {fx_array(HLO_S32, 1, DIMS(7), VALS(2, 1, 2, 1, 0, 2, 1)),
                      fx_array(HLO_S32, 1, DIMS(7), VALS(0, 1, 2, 3, 4, 5, 6))};
    hlo_value *v = fx_eval(texts[t], 2, a);
    fx_expect(hlo_value_ref(v->elems[0]), HLO_S32, 1, DIMS(7), VALS(0, 1, 1, 1, 2, 2, 2));
    fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 1, DIMS(7), VALS(4, 1, 3, 6, 0, 2, 5));
    hlo_value_unref(v);
  }
}

static void sort_stable_long(void **state) {
  (void)state;
  /* 100 elements with keys i % 3: long enough for merges across runs; the
   * values of equal keys must come out increasing. */
  enum { N = 100 };
  double k[N], val[N];
  for (int i = 0; i < N; i++) {
    k[i] = (i * 7) % 3;
    val[i] = i;
  }
  hlo_value *a[] = {fx_array(HLO_S32, 1, DIMS(N), k), fx_array(HLO_S32, 1, DIMS(N), val)};
  hlo_value *v = fx_eval(
      KV_LT_S32 "ENTRY e {\n k = s32[100] parameter(0)\n v = s32[100] parameter(1)\n"
                " ROOT s = (s32[100], s32[100]) sort(k, v), dimensions={0}, to_apply=kv\n}\n",
      2, a);
  const int32_t *sk = v->elems[0]->data, *sv = v->elems[1]->data;
  for (int i = 1; i < N; i++) {
    assert_true(sk[i - 1] <= sk[i]);
    if (sk[i - 1] == sk[i])
      assert_true(sv[i - 1] < sv[i]);
    assert_int_equal(sk[i], ((int)sv[i] * 7) % 3);
  }
  hlo_value_unref(v);
}

static hlo_value *f32_bits(int n, const uint32_t *bits) {
  hlo_value *v = hlo_value_array(HLO_F32, 1, DIMS(n));
  memcpy(v->data, bits, sizeof(uint32_t) * (size_t)n);
  return v;
}

#define KV_TOTAL_LT                                                                                \
  "kv {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"                                       \
  " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"                                             \
  " ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n"

/* The same comparator hidden behind and(c, c), so it is called per
 * comparison instead of taking the fast path. */
#define KV_TOTAL_LT_CALLED                                                                         \
  "kv {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"                                       \
  " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"                                             \
  " r = pred[] compare(a, b), direction=LT, type=TOTALORDER\n"                                     \
  " ROOT q = pred[] and(r, r)\n}\n"

static void sort_nan_totalorder(void **state) {
  (void)state;
  /* +NaN, 1, -NaN, -inf, +0, -0, +inf  ->  -NaN -inf -0 +0 1 +inf +NaN,
   * on the fast path and through the comparator alike. */
  const uint32_t keys[] = {0x7FC00000u, 0x3F800000u, 0xFFC00000u, 0xFF800000u,
                           0x00000000u, 0x80000000u, 0x7F800000u};
  const char *texts[] = {
      KV_TOTAL_LT "ENTRY e {\n k = f32[7] parameter(0)\n v = s32[7] parameter(1)\n"
                  " ROOT s = (f32[7], s32[7]) sort(k, v), dimensions={0}, to_apply=kv\n}\n",
      KV_TOTAL_LT_CALLED "ENTRY e {\n k = f32[7] parameter(0)\n v = s32[7] parameter(1)\n"
                         " ROOT s = (f32[7], s32[7]) sort(k, v), dimensions={0}, to_apply=kv\n}\n"};
  for (int t = 0; t < 2; t++) {
    hlo_value *a[] = {f32_bits(7, keys), fx_array(HLO_S32, 1, DIMS(7), VALS(0, 1, 2, 3, 4, 5, 6))};
    hlo_value *v = fx_eval(texts[t], 2, a);
    fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 1, DIMS(7), VALS(2, 3, 5, 4, 1, 6, 0));
    const uint32_t *sk = v->elems[0]->data;
    const uint32_t want[] = {0xFFC00000u, 0xFF800000u, 0x80000000u, 0x00000000u,
                             0x3F800000u, 0x7F800000u, 0x7FC00000u};
    for (int i = 0; i < 7; i++)
      assert_int_equal(sk[i], want[i]);
    hlo_value_unref(v);
  }
}

static void sort_general_comparator(void **state) {
  (void)state;
  /* Not a single compare, so it is called per comparison: ascending by key,
   * ties broken by value descending. */
  const char *t =
      "cmp {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
      " c = f32[] parameter(2)\n d = f32[] parameter(3)\n"
      " lt = pred[] compare(a, b), direction=LT\n eq = pred[] compare(a, b), direction=EQ\n"
      " gt = pred[] compare(c, d), direction=GT\n"
      " ROOT r = pred[] select(eq, gt, lt)\n}\n"
      "ENTRY e {\n k = s32[6] parameter(0)\n v = f32[6] parameter(1)\n"
      " ROOT s = (s32[6], f32[6]) sort(k, v), dimensions={0}, to_apply=cmp\n}\n";
  hlo_value *a[] = {fx_array(HLO_S32, 1, DIMS(6), VALS(2, 1, 2, 1, 0, 2)),
                    fx_array(HLO_F32, 1, DIMS(6), VALS(0.5, 1, 2, 3, 4, 5))};
  hlo_value *v = fx_eval(t, 2, a);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_S32, 1, DIMS(6), VALS(0, 1, 1, 2, 2, 2));
  fx_expect(hlo_value_ref(v->elems[1]), HLO_F32, 1, DIMS(6), VALS(4, 3, 1, 5, 2, 0.5));
  hlo_value_unref(v);
}

static void sort_general_comparator_dim0(void **state) {
  (void)state;
  /* A comparator on the second operand (values), through chk_call, along
   * dim 0 of [3,2]: the key is operand 1. */
  const char *t = "cmp {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                  " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"
                  " n = s32[] negate(c)\n m = s32[] negate(d)\n"
                  " ROOT r = pred[] compare(n, m), direction=LT\n}\n"
                  "ENTRY e {\n k = f32[3,2] parameter(0)\n v = s32[3,2] parameter(1)\n"
                  " ROOT s = (f32[3,2], s32[3,2]) sort(k, v), dimensions={0}, to_apply=cmp\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(3, 2), VALS(1, 2, 3, 4, 5, 6)),
                    fx_array(HLO_S32, 2, DIMS(3, 2), VALS(5, 0, 7, 2, 6, 1))};
  hlo_value *v = fx_eval(t, 2, a);
  /* descending by value: column 0 values 5,7,6 -> 7,6,5; column 1 0,2,1 -> 2,1,0 */
  fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 2, DIMS(3, 2), VALS(7, 2, 6, 1, 5, 0));
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 2, DIMS(3, 2), VALS(3, 4, 5, 6, 1, 2));
  hlo_value_unref(v);
}

static void sort_float_nan_default_compare(void **state) {
  (void)state;
  /* With a plain (partial order) LT, NaN compares false both ways.  The
   * result is not a sorted order but it is deterministic, and the fast
   * path must agree with calling the comparator: compare against the same
   * sort with a comparator the fast path does not recognise. */
  const double k[] = {3, NAN, 1, 2, NAN, 0};
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(6), k)};
  hlo_value *fast = fx_eval(LT1("f32") "ENTRY e {\n p = f32[6] parameter(0)\n"
                                       " ROOT s = f32[6] sort(p), dimensions={0}, to_apply=lt\n}\n",
                            1, a);
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(6), k)};
  hlo_value *slow =
      fx_eval("lt2 {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
              " c = pred[] compare(a, b), direction=LT\n ROOT n = pred[] and(c, c)\n}\n"
              "ENTRY e {\n p = f32[6] parameter(0)\n"
              " ROOT s = f32[6] sort(p), dimensions={0}, to_apply=lt2\n}\n",
              1, b);
  assert_memory_equal(fast->data, slow->data, 6 * sizeof(float));
  hlo_value_unref(fast);
  hlo_value_unref(slow);
}

static void sort_bad_dimension_is_an_error(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 3))};
  hlo_error err = {0};
  hlo_value *v =
      fx_eval_err(LT1("f32") "ENTRY e {\n p = f32[3] parameter(0)\n"
                             " ROOT s = f32[3] sort(p), dimensions={1}, to_apply=lt\n}\n",
                  1, a, &err);
  assert_null(v);
  assert_true(err.msg[0] != 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sort_ascending_descending),
      cmocka_unit_test(sort_integer_types),
      cmocka_unit_test(sort_along_last_dim_2d),
      cmocka_unit_test(sort_key_value_dim0),
      cmocka_unit_test(sort_topk_reproducer),
      cmocka_unit_test(sort_stable_ties),
      cmocka_unit_test(sort_stable_long),
      cmocka_unit_test(sort_nan_totalorder),
      cmocka_unit_test(sort_general_comparator),
      cmocka_unit_test(sort_general_comparator_dim0),
      cmocka_unit_test(sort_float_nan_default_compare),
      cmocka_unit_test(sort_bad_dimension_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
