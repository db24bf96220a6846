/* test_eval_movement.c — data movement ops of the reference evaluator.
 *
 * Every test goes through the public path: HLO text -> hlo_parse ->
 * chk_eval_module, with parameters built as hlo_values.  Expected outputs
 * are worked out by hand from XLA's operation semantics; the only
 * computed expectations are the large transposes, checked against the
 * definition out[i][j] = in[j][i] element by element. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"

static const double k23[] = {1, 2, 3, 4, 5, 6}; /* a 2x3 array, row-major */

/* ---- broadcast --------------------------------------------------------- */

static void broadcast_scalar(void **state) {
  (void)state;
  hlo_value *a[] = {fx_scalar(HLO_F32, 2.5)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[] parameter(0)\n"
                    " ROOT b = f32[2,3] broadcast(p), dimensions={}\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(2, 3), VALS(2.5, 2.5, 2.5, 2.5, 2.5, 2.5));
}

static void broadcast_row_and_column(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_S32, 1, DIMS(3), VALS(7, 8, 9))};
  fx_expect(fx_eval("ENTRY e {\n p = s32[3] parameter(0)\n"
                    " ROOT b = s32[2,3] broadcast(p), dimensions={1}\n}\n",
                    1, a),
            HLO_S32, 2, DIMS(2, 3), VALS(7, 8, 9, 7, 8, 9));
  hlo_value *c[] = {fx_array(HLO_S32, 1, DIMS(2), VALS(7, 8))};
  fx_expect(fx_eval("ENTRY e {\n p = s32[2] parameter(0)\n"
                    " ROOT b = s32[2,3] broadcast(p), dimensions={0}\n}\n",
                    1, c),
            HLO_S32, 2, DIMS(2, 3), VALS(7, 7, 7, 8, 8, 8));
}

static void broadcast_rank3_middle(void **state) {
  (void)state;
  /* [2,3] into [2,2,3] along dims {0,2}: the middle dim repeats. */
  hlo_value *a[] = {fx_array(HLO_F16, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f16[2,3] parameter(0)\n"
                    " ROOT b = f16[2,2,3] broadcast(p), dimensions={0,2}\n}\n",
                    1, a),
            HLO_F16, 3, DIMS(2, 2, 3), VALS(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6));
}

static void broadcast_pred(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_PRED, 1, DIMS(2), VALS(1, 0))};
  fx_expect(fx_eval("ENTRY e {\n p = pred[2] parameter(0)\n"
                    " ROOT b = pred[2,2] broadcast(p), dimensions={1}\n}\n",
                    1, a),
            HLO_PRED, 2, DIMS(2, 2), VALS(1, 0, 1, 0));
}

/* ---- reshape, bitcast, copy ------------------------------------------- */

static void reshape_and_copy(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n r = f32[3,2] reshape(p)\n"
                    " ROOT c = f32[3,2] copy(r)\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(3, 2), k23);
  hlo_value *b[] = {fx_array(HLO_S8, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = s8[2,3] parameter(0)\n ROOT r = s8[6] reshape(p)\n}\n", 1, b),
            HLO_S8, 1, DIMS(6), k23);
}

static void copy_of_tuple(void **state) {
  (void)state;
  hlo_value *a[] = {fx_scalar(HLO_F32, 1), fx_scalar(HLO_S32, 2)};
  hlo_value *v = fx_eval("ENTRY e {\n a = f32[] parameter(0)\n b = s32[] parameter(1)\n"
                         " t = (f32[], s32[]) tuple(a, b)\n ROOT c = (f32[], s32[]) copy(t)\n}\n",
                         2, a);
  assert_int_equal(v->type, HLO_TUPLE);
  assert_int_equal(v->ntuple, 2);
  assert_true(hlo_value_get_f64(v->elems[0], 0) == 1);
  assert_true(hlo_value_get_i64(v->elems[1], 0) == 2);
  hlo_value_unref(v);
}

static void bitcast_row_major(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3]{1,0} parameter(0)\n"
                    " ROOT b = f32[6]{0} bitcast(p)\n}\n",
                    1, a),
            HLO_F32, 1, DIMS(6), k23);
}

static void bitcast_type_change(void **state) {
  (void)state;
  /* 1.0f is 0x3F800000, -2.0f is 0xC0000000: same bytes read as u32. */
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1.0, -2.0))};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2] parameter(0)\n ROOT b = u32[2] bitcast(p)\n}\n", 1, a),
            HLO_U32, 1, DIMS(2), VALS(0x3F800000u, 0xC0000000u));
}

static void bitcast_column_major(void **state) {
  (void)state;
  /* f32[2,3]{0,1} is stored column-major: A00 A10 A01 A11 A02 A12.  Those
   * bytes read as row-major f32[3,2] are the transpose of A. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3]{0,1} parameter(0)\n"
                    " ROOT b = f32[3,2]{1,0} bitcast(p)\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6));
}

/* ---- transpose ------------------------------------------------------- */

static void transpose_2d(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n"
                    " ROOT t = f32[3,2] transpose(p), dimensions={1,0}\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6));
}

static void transpose_rank3(void **state) {
  (void)state;
  /* A[i][j][k] = 100i + 10j + k over [2,3,2]; perm {2,0,1}: result dims
   * [2,2,3] and R[k][i][j] = A[i][j][k]. */
  double v[12];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        v[i * 6 + j * 2 + k] = 100 * i + 10 * j + k;
  hlo_value *a[] = {fx_array(HLO_S32, 3, DIMS(2, 3, 2), v)};
  fx_expect(fx_eval("ENTRY e {\n p = s32[2,3,2] parameter(0)\n"
                    " ROOT t = s32[2,2,3] transpose(p), dimensions={2,0,1}\n}\n",
                    1, a),
            HLO_S32, 3, DIMS(2, 2, 3), VALS(0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121));
}

/* Large enough to take the tiled path, with ragged tile edges. */
static void transpose_large_tiled(void **state) {
  (void)state;
  enum { R = 67, C = 45 };
  hlo_value *p = hlo_value_array(HLO_BF16, 2, DIMS(R, C));
  assert_non_null(p);
  uint16_t *src = p->data;
  for (int i = 0; i < R * C; i++)
    src[i] = (uint16_t)(i * 7 + 3);
  uint16_t copy[R * C];
  memcpy(copy, src, sizeof copy);
  hlo_value *a[] = {p};
  hlo_value *t = fx_eval("ENTRY e {\n p = bf16[67,45] parameter(0)\n"
                         " ROOT t = bf16[45,67] transpose(p), dimensions={1,0}\n}\n",
                         1, a);
  assert_int_equal(t->dims[0], C);
  assert_int_equal(t->dims[1], R);
  const uint16_t *out = t->data;
  for (int j = 0; j < C; j++)
    for (int i = 0; i < R; i++)
      assert_int_equal(out[j * R + i], copy[i * C + j]);
  hlo_value_unref(t);
  /* rank 3 with the batch dim kept in front: [3,20,33] -> [3,33,20] */
  hlo_value *q = hlo_value_array(HLO_S64, 3, DIMS(3, 20, 33));
  int64_t *qs = q->data;
  for (int i = 0; i < 3 * 20 * 33; i++)
    qs[i] = i;
  hlo_value *b[] = {q};
  t = fx_eval("ENTRY e {\n p = s64[3,20,33] parameter(0)\n"
              " ROOT t = s64[3,33,20] transpose(p), dimensions={0,2,1}\n}\n",
              1, b);
  const int64_t *o = t->data;
  for (int n = 0; n < 3; n++)
    for (int k = 0; k < 33; k++)
      for (int j = 0; j < 20; j++)
        assert_int_equal(o[(n * 33 + k) * 20 + j], (n * 20 + j) * 33 + k);
  hlo_value_unref(t);
}

/* ---- slice --------------------------------------------------------------- */

static void slice_strided(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_S32, 1, DIMS(10), VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))};
  fx_expect(fx_eval("ENTRY e {\n p = s32[10] parameter(0)\n"
                    " ROOT s = s32[3] slice(p), slice={[1:8:3]}\n}\n",
                    1, a),
            HLO_S32, 1, DIMS(3), VALS(1, 4, 7));
  /* 2-D: rows 1..2, every other column; the limit need not be reached. */
  double v[12];
  for (int i = 0; i < 12; i++)
    v[i] = i;
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(3, 4), v)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[3,4] parameter(0)\n"
                    " ROOT s = f32[2,2] slice(p), slice={[1:3], [0:3:2]}\n}\n",
                    1, b),
            HLO_F32, 2, DIMS(2, 2), VALS(4, 6, 8, 10));
}

static void slice_contiguous_rows(void **state) {
  (void)state;
  double v[12];
  for (int i = 0; i < 12; i++)
    v[i] = i;
  hlo_value *a[] = {fx_array(HLO_U16, 2, DIMS(3, 4), v)};
  fx_expect(fx_eval("ENTRY e {\n p = u16[3,4] parameter(0)\n"
                    " ROOT s = u16[2,2] slice(p), slice={[0:2], [1:3]}\n}\n",
                    1, a),
            HLO_U16, 2, DIMS(2, 2), VALS(1, 2, 5, 6));
}

static void slice_empty(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 2, 3, 4))};
  hlo_value *v = fx_eval("ENTRY e {\n p = f32[4] parameter(0)\n"
                         " ROOT s = f32[0] slice(p), slice={[2:2]}\n}\n",
                         1, a);
  assert_int_equal(v->count, 0);
  hlo_value_unref(v);
}

/* ---- dynamic-slice / dynamic-update-slice ------------------------------ */

#define DS_TEXT(T)                                                                                 \
  "ENTRY e {\n p = f32[5] parameter(0)\n i = " T "[] parameter(1)\n"                               \
  " ROOT d = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}\n}\n"

static void dynamic_slice_clamps(void **state) {
  (void)state;
  const double v[] = {10, 11, 12, 13, 14};
  struct {
    const char *text;
    hlo_etype t;
    double start;
    double w0;
  } cases[] = {
      {DS_TEXT("s32"), HLO_S32, 1, 11},   /* in range */
      {DS_TEXT("s32"), HLO_S32, 3, 12},   /* 3 + 3 > 5: clamped to 2 */
      {DS_TEXT("s32"), HLO_S32, 100, 12}, /* far out: clamped to 2 */
      {DS_TEXT("s32"), HLO_S32, -2, 10},  /* negative: clamped to 0 */
      {DS_TEXT("s8"), HLO_S8, -128, 10},
      {DS_TEXT("s8"), HLO_S8, 127, 12},
      {DS_TEXT("u8"), HLO_U8, 255, 12},
      {DS_TEXT("s64"), HLO_S64, 2, 12},
      {DS_TEXT("u32"), HLO_U32, 4294967295.0, 12},
      {DS_TEXT("s16"), HLO_S16, 0, 10},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(5), v), fx_scalar(cases[c].t, cases[c].start)};
    double w[3] = {cases[c].w0, cases[c].w0 + 1, cases[c].w0 + 2};
    fx_expect(fx_eval(cases[c].text, 2, a), HLO_F32, 1, DIMS(3), w);
  }
}

static void dynamic_slice_2d(void **state) {
  (void)state;
  double v[12];
  for (int i = 0; i < 12; i++)
    v[i] = i;
  /* start (5, -1) on [3,4] with sizes [2,2]: clamped to (1, 0). */
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(3, 4), v), fx_scalar(HLO_S64, 5),
                    fx_scalar(HLO_S64, -1)};
  fx_expect(fx_eval("ENTRY e {\n p = s32[3,4] parameter(0)\n i = s64[] parameter(1)\n"
                    " j = s64[] parameter(2)\n"
                    " ROOT d = s32[2,2] dynamic-slice(p, i, j), dynamic_slice_sizes={2,2}\n}\n",
                    3, a),
            HLO_S32, 2, DIMS(2, 2), VALS(4, 5, 8, 9));
}

#define DUS_TEXT                                                                                   \
  "ENTRY e {\n p = f32[5] parameter(0)\n u = f32[2] parameter(1)\n"                                \
  " i = s32[] parameter(2)\n ROOT d = f32[5] dynamic-update-slice(p, u, i)\n}\n"

static void dynamic_update_slice_clamps(void **state) {
  (void)state;
  const double z[] = {0, 0, 0, 0, 0};
  struct {
    double start;
    double want[5];
  } cases[] = {
      {1, {0, 7, 8, 0, 0}},
      {4, {0, 0, 0, 7, 8}},  /* clamped to 3 */
      {-1, {7, 8, 0, 0, 0}}, /* clamped to 0 */
      {1000, {0, 0, 0, 7, 8}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(5), z), fx_array(HLO_F32, 1, DIMS(2), VALS(7, 8)),
                      fx_scalar(HLO_S32, cases[c].start)};
    fx_expect(fx_eval(DUS_TEXT, 3, a), HLO_F32, 1, DIMS(5), cases[c].want);
  }
}

static void dynamic_update_slice_2d(void **state) {
  (void)state;
  double z[12] = {0};
  /* update [2,2] at (2, 3) on [3,4]: clamped to (1, 2). */
  hlo_value *a[] = {fx_array(HLO_S16, 2, DIMS(3, 4), z),
                    fx_array(HLO_S16, 2, DIMS(2, 2), VALS(1, 2, 3, 4)), fx_scalar(HLO_U8, 2),
                    fx_scalar(HLO_U8, 3)};
  fx_expect(fx_eval("ENTRY e {\n p = s16[3,4] parameter(0)\n u = s16[2,2] parameter(1)\n"
                    " i = u8[] parameter(2)\n j = u8[] parameter(3)\n"
                    " ROOT d = s16[3,4] dynamic-update-slice(p, u, i, j)\n}\n",
                    4, a),
            HLO_S16, 2, DIMS(3, 4), VALS(0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4));
}

/* ---- concatenate ----------------------------------------------------------- */

static void concatenate_dims(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23),
                    fx_array(HLO_F32, 2, DIMS(1, 3), VALS(7, 8, 9))};
  fx_expect(fx_eval("ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[1,3] parameter(1)\n"
                    " ROOT c = f32[3,3] concatenate(a, b), dimensions={0}\n}\n",
                    2, a),
            HLO_F32, 2, DIMS(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23),
                    fx_array(HLO_F32, 2, DIMS(2, 1), VALS(7, 8)),
                    fx_array(HLO_F32, 2, DIMS(2, 0), NULL)};
  fx_expect(fx_eval("ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[2,1] parameter(1)\n"
                    " z = f32[2,0] parameter(2)\n"
                    " ROOT c = f32[2,4] concatenate(a, z, b), dimensions={1}\n}\n",
                    3, b),
            HLO_F32, 2, DIMS(2, 4), VALS(1, 2, 3, 7, 4, 5, 6, 8));
}

/* ---- pad -------------------------------------------------------------------- */

static void pad_interior_and_negative(void **state) {
  (void)state;
  /* {1,2,3} with lo=-1 hi=2 interior=1: 1 p 2 p 3, crop the first, add 2. */
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 3)), fx_scalar(HLO_F32, -9)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[3] parameter(0)\n v = f32[] parameter(1)\n"
                    " ROOT r = f32[6] pad(p, v), padding=-1_2_1\n}\n",
                    2, a),
            HLO_F32, 1, DIMS(6), VALS(-9, 2, -9, 3, -9, -9));
  /* negative hi crops from the end; lo=2 pads in front */
  hlo_value *b[] = {fx_array(HLO_S8, 1, DIMS(4), VALS(1, 2, 3, 4)), fx_scalar(HLO_S8, 0)};
  fx_expect(fx_eval("ENTRY e {\n p = s8[4] parameter(0)\n v = s8[] parameter(1)\n"
                    " ROOT r = s8[4] pad(p, v), padding=2_-2\n}\n",
                    2, b),
            HLO_S8, 1, DIMS(4), VALS(0, 0, 1, 2));
}

static void pad_2d(void **state) {
  (void)state;
  /* [2,2] {a b; c d}: dim 0 lo=1; dim 1 interior 1 then hi=-1 crops the
   * trailing element:  row -> a p b -> a p. */
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(2, 2), VALS(1, 2, 3, 4)), fx_scalar(HLO_S32, 5)};
  fx_expect(fx_eval("ENTRY e {\n p = s32[2,2] parameter(0)\n v = s32[] parameter(1)\n"
                    " ROOT r = s32[3,2] pad(p, v), padding=1_0x0_-1_1\n}\n",
                    2, a),
            HLO_S32, 2, DIMS(3, 2), VALS(5, 5, 1, 5, 3, 5));
  /* plain edge padding of a 2x3 on all sides */
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23), fx_scalar(HLO_F32, 0)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n v = f32[] parameter(1)\n"
                    " ROOT r = f32[3,5] pad(p, v), padding=0_1x1_1\n}\n",
                    2, b),
            HLO_F32, 2, DIMS(3, 5), VALS(0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0));
}

static void pad_crop_everything(void **state) {
  (void)state;
  /* lo=-3 on 3 elements leaves only the hi padding. */
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 3)), fx_scalar(HLO_F32, 4)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[3] parameter(0)\n v = f32[] parameter(1)\n"
                    " ROOT r = f32[2] pad(p, v), padding=-3_2\n}\n",
                    2, a),
            HLO_F32, 1, DIMS(2), VALS(4, 4));
}

/* Issue 11: extreme attribute and index values, each worked out from the
 * op's semantics; each overflowed int64 somewhere in the old code. */
static void extreme_starts_pads_strides(void **state) {
  (void)state;
  double v[40];
  for (int i = 0; i < 40; i++)
    v[i] = i;
  /* dynamic-slice starts u64 max (clamps to 10 - 3 = 7) and s64 min (to
   * 0): rows 7..9.  dynamic-update-slice writes them at (0, 0): the
   * start s64 min clamps to 0 and u64 max to 4 - 4 = 0. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(10, 4), v)};
  double w[40];
  for (int i = 0; i < 40; i++)
    w[i] = i < 12 ? 28 + i : i;
  fx_expect(fx_eval("ENTRY e {\n p = f32[10,4] parameter(0)\n i = u64[] constant(18446744073709551615)\n"
                    " j = s64[] constant(-9223372036854775808)\n"
                    " d = f32[3,4] dynamic-slice(p, i, j), dynamic_slice_sizes={3,4}\n"
                    " ROOT u = f32[10,4] dynamic-update-slice(p, d, j, i)\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(10, 4), w);
  /* pad with lo = s64 min, hi = s64 max: size 4 - 1 = 3, every operand
   * element lands before position 0, so all three are the pad value. */
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 2, 3, 4))};
  fx_expect(fx_eval("ENTRY e {\n p = f32[4] parameter(0)\n z = f32[] constant(7)\n"
                    " ROOT r = f32[3] pad(p, z), padding=-9223372036854775808_9223372036854775807\n}\n",
                    1, b),
            HLO_F32, 1, DIMS(3), VALS(7, 7, 7));
  /* interior s64 max between the elements of a one-element dim: no gap. */
  hlo_value *c[] = {fx_array(HLO_F32, 1, DIMS(1), VALS(5))};
  fx_expect(fx_eval("ENTRY e {\n p = f32[1] parameter(0)\n z = f32[] constant(7)\n"
                    " ROOT r = f32[3] pad(p, z), padding=1_1_9223372036854775807\n}\n",
                    1, c),
            HLO_F32, 1, DIMS(3), VALS(7, 5, 7));
  /* slice stride s64 max takes the first element of [1:4) only. */
  hlo_value *d[] = {fx_array(HLO_F32, 2, DIMS(4, 3), v)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[4,3] parameter(0)\n"
                    " ROOT s = f32[1,2] slice(p), slice={[1:4:9223372036854775807], [0:3:2]}\n}\n",
                    1, d),
            HLO_F32, 2, DIMS(1, 2), VALS(3, 5));
}

/* ---- reverse, iota ---------------------------------------------------------- */

static void reverse_dims(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n"
                    " ROOT r = f32[2,3] reverse(p), dimensions={0,1}\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(2, 3), VALS(6, 5, 4, 3, 2, 1));
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n"
                    " ROOT r = f32[2,3] reverse(p), dimensions={1}\n}\n",
                    1, b),
            HLO_F32, 2, DIMS(2, 3), VALS(3, 2, 1, 6, 5, 4));
  hlo_value *c[] = {fx_array(HLO_F32, 2, DIMS(2, 3), k23)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n"
                    " ROOT r = f32[2,3] reverse(p), dimensions={0}\n}\n",
                    1, c),
            HLO_F32, 2, DIMS(2, 3), VALS(4, 5, 6, 1, 2, 3));
}

static void iota_dim1(void **state) {
  (void)state;
  fx_expect(fx_eval("ENTRY e {\n ROOT i = s32[2,3] iota(), iota_dimension=1\n}\n", 0, NULL),
            HLO_S32, 2, DIMS(2, 3), VALS(0, 1, 2, 0, 1, 2));
  fx_expect(fx_eval("ENTRY e {\n ROOT i = f32[3,2] iota(), iota_dimension=0\n}\n", 0, NULL),
            HLO_F32, 2, DIMS(3, 2), VALS(0, 0, 1, 1, 2, 2));
}

static void iota_rounding(void **state) {
  (void)state;
  /* bf16 has 8 significant bits: 257 is a tie between 256 and 258 and goes
   * to the even 256; 259 goes to 260; u8 iota wraps at 256. */
  hlo_value *v = fx_eval("ENTRY e {\n ROOT i = bf16[300] iota(), iota_dimension=0\n}\n", 0, NULL);
  assert_true(hlo_value_get_f64(v, 255) == 255);
  assert_true(hlo_value_get_f64(v, 257) == 256);
  assert_true(hlo_value_get_f64(v, 259) == 260);
  assert_true(hlo_value_get_f64(v, 299) == 300);
  hlo_value_unref(v);
  v = fx_eval("ENTRY e {\n ROOT i = u8[300] iota(), iota_dimension=0\n}\n", 0, NULL);
  assert_int_equal(hlo_value_get_i64(v, 256), 0);
  assert_int_equal(hlo_value_get_i64(v, 299), 43);
  hlo_value_unref(v);
}

/* ---- errors -------------------------------------------------------------------- */

static void bad_bitcast_is_an_error(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 3))};
  hlo_error err = {0};
  hlo_value *v = fx_eval_err(
      "ENTRY e {\n p = f32[3] parameter(0)\n ROOT b = f32[4] bitcast(p)\n}\n", 1, a, &err);
  assert_null(v);
  assert_non_null(strstr(err.msg, "bitcast"));
  assert_int_equal(err.line, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(broadcast_scalar),
      cmocka_unit_test(broadcast_row_and_column),
      cmocka_unit_test(broadcast_rank3_middle),
      cmocka_unit_test(broadcast_pred),
      cmocka_unit_test(reshape_and_copy),
      cmocka_unit_test(copy_of_tuple),
      cmocka_unit_test(bitcast_row_major),
      cmocka_unit_test(bitcast_type_change),
      cmocka_unit_test(bitcast_column_major),
      cmocka_unit_test(transpose_2d),
      cmocka_unit_test(transpose_rank3),
      cmocka_unit_test(transpose_large_tiled),
      cmocka_unit_test(slice_strided),
      cmocka_unit_test(slice_contiguous_rows),
      cmocka_unit_test(slice_empty),
      cmocka_unit_test(dynamic_slice_clamps),
      cmocka_unit_test(dynamic_slice_2d),
      cmocka_unit_test(dynamic_update_slice_clamps),
      cmocka_unit_test(dynamic_update_slice_2d),
      cmocka_unit_test(concatenate_dims),
      cmocka_unit_test(pad_interior_and_negative),
      cmocka_unit_test(pad_2d),
      cmocka_unit_test(pad_crop_everything),
      cmocka_unit_test(reverse_dims),
      cmocka_unit_test(iota_dim1),
      cmocka_unit_test(iota_rounding),
      cmocka_unit_test(bad_bitcast_is_an_error),
      cmocka_unit_test(extreme_starts_pads_strides),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
