/* test_eval_gather.c — gather and scatter in the reference evaluator.
 *
 * Through the public path (hlo_parse, chk_eval_module).  Every expected
 * array is worked out by hand from XLA's operation semantics for Gather and
 * Scatter: window starts, clamping (gather), skipping of windows that do not
 * fit (scatter), batching dims, and the order in which to_apply is applied
 * to repeated indices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"

/* ---- gather ------------------------------------------------------------ */

#define EMBED(IT, N)                                                                               \
  "ENTRY e {\n p = f32[5,3] parameter(0)\n i = " IT "[" #N "] parameter(1)\n"                      \
  " ROOT g = f32[" #N ",3] gather(p, i), offset_dims={1}, collapsed_slice_dims={0},"               \
  " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}\n"

static const double k53[] = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};

static void gather_embedding_rows(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53),
                    fx_array(HLO_S32, 1, DIMS(4), VALS(4, 0, 2, 0))};
  fx_expect(fx_eval(EMBED("s32", 4), 2, a), HLO_F32, 2, DIMS(4, 3),
            VALS(40, 41, 42, 0, 1, 2, 20, 21, 22, 0, 1, 2));
}

static void gather_clamps_starts(void **state) {
  (void)state;
  /* Out-of-range rows are clamped to [0, 5 - 1], with any index type. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53),
                    fx_array(HLO_S8, 1, DIMS(3), VALS(7, -3, 127))};
  fx_expect(fx_eval(EMBED("s8", 3), 2, a), HLO_F32, 2, DIMS(3, 3),
            VALS(40, 41, 42, 0, 1, 2, 40, 41, 42));
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53),
                    fx_array(HLO_U8, 1, DIMS(2), VALS(255, 1))};
  fx_expect(fx_eval(EMBED("u8", 2), 2, b), HLO_F32, 2, DIMS(2, 3), VALS(40, 41, 42, 10, 11, 12));
  hlo_value *c[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53),
                    fx_array(HLO_S64, 1, DIMS(2), VALS(-1e15, 3))};
  fx_expect(fx_eval(EMBED("s64", 2), 2, c), HLO_F32, 2, DIMS(2, 3), VALS(0, 1, 2, 30, 31, 32));
}

static void gather_2d_windows(void **state) {
  (void)state;
  double v[16];
  for (int i = 0; i < 16; i++)
    v[i] = i;
  /* windows of 2x2 at (1,2) and at (3,3), the latter clamped to (2,2). */
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(4, 4), v),
                    fx_array(HLO_S64, 2, DIMS(2, 2), VALS(1, 2, 3, 3))};
  fx_expect(fx_eval("ENTRY e {\n p = s32[4,4] parameter(0)\n i = s64[2,2] parameter(1)\n"
                    " ROOT g = s32[2,2,2] gather(p, i), offset_dims={1,2}, collapsed_slice_dims={},"
                    " start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}\n}\n",
                    2, a),
            HLO_S32, 3, DIMS(2, 2, 2), VALS(6, 7, 10, 11, 10, 11, 14, 15));
}

static void gather_index_vector_dim_first(void **state) {
  (void)state;
  /* index_vector_dim=0 of s32[1,2]: the vectors are the columns {3} and {1}. */
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(5), VALS(10, 11, 12, 13, 14)),
                    fx_array(HLO_S32, 2, DIMS(1, 2), VALS(3, 1))};
  fx_expect(fx_eval("ENTRY e {\n p = f32[5] parameter(0)\n i = s32[1,2] parameter(1)\n"
                    " ROOT g = f32[2] gather(p, i), offset_dims={}, collapsed_slice_dims={0},"
                    " start_index_map={0}, index_vector_dim=0, slice_sizes={1}\n}\n",
                    2, a),
            HLO_F32, 1, DIMS(2), VALS(13, 11));
}

static void gather_columns_offset_first(void **state) {
  (void)state;
  /* Gather columns: the window (a column of 2) comes first in the output. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                    fx_array(HLO_S32, 1, DIMS(2), VALS(2, 0))};
  fx_expect(fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n i = s32[2] parameter(1)\n"
                    " ROOT g = f32[2,2] gather(p, i), offset_dims={0}, collapsed_slice_dims={1},"
                    " start_index_map={1}, index_vector_dim=1, slice_sizes={2,1}\n}\n",
                    2, a),
            HLO_F32, 2, DIMS(2, 2), VALS(3, 1, 6, 4));
}

static void gather_batching_dims(void **state) {
  (void)state;
  /* operand [2,3]: batch b picks operand[b][idx[b][k]]; index_vector_dim=2
   * is the implicit trailing 1. */
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                    fx_array(HLO_S32, 2, DIMS(2, 2), VALS(2, 1, 0, 9))};
  fx_expect(
      fx_eval("ENTRY e {\n p = f32[2,3] parameter(0)\n i = s32[2,2] parameter(1)\n"
              " ROOT g = f32[2,2] gather(p, i), offset_dims={}, collapsed_slice_dims={1},"
              " start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0},"
              " index_vector_dim=2, slice_sizes={1,1}\n}\n",
              2, a),
      HLO_F32, 2, DIMS(2, 2), VALS(3, 2, 4, 6)); /* 9 clamps to 2 */
}

static void gather_batching_dims_not_leading(void **state) {
  (void)state;
  /* operand [3,2] with its batch dim last; indices [2(k),2(b)] with the
   * batch dim last too: out[k][b] = operand[idx[k][b]][b]. */
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(3, 2), VALS(10, 11, 20, 21, 30, 31)),
                    fx_array(HLO_S32, 2, DIMS(2, 2), VALS(2, 0, 1, 1))};
  fx_expect(
      fx_eval("ENTRY e {\n p = s32[3,2] parameter(0)\n i = s32[2,2] parameter(1)\n"
              " ROOT g = s32[2,2] gather(p, i), offset_dims={}, collapsed_slice_dims={0},"
              " start_index_map={0}, operand_batching_dims={1}, start_indices_batching_dims={1},"
              " index_vector_dim=2, slice_sizes={1,1}\n}\n",
              2, a),
      HLO_S32, 2, DIMS(2, 2), VALS(30, 11, 20, 21));
}

/* ---- scatter ------------------------------------------------------------ */

#define ADD_F32                                                                                    \
  "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"
#define LAST_F32 "last {\n a = f32[] parameter(0)\n ROOT b = f32[] parameter(1)\n}\n"
#define FIRST_F32 "first {\n ROOT a = f32[] parameter(0)\n b = f32[] parameter(1)\n}\n"
/* new = update - old: not commutative, and not recognised, so it is called
 * per element and shows the order of application. */
#define SUBR_F32                                                                                   \
  "subr {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] subtract(b, a)\n}\n"

#define SCATTER1(COMB, NAME, IT)                                                                   \
  COMB "ENTRY e {\n p = f32[4] parameter(0)\n i = " IT "[3] parameter(1)\n"                        \
       " u = f32[3] parameter(2)\n"                                                                \
       " ROOT s = f32[4] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"       \
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=" NAME "\n}\n"

static hlo_value **scatter_args(hlo_value **a, hlo_etype it, const double *idx) {
  a[0] = fx_array(HLO_F32, 1, DIMS(4), VALS(0, 0, 0, 0));
  a[1] = fx_array(it, 1, DIMS(3), idx);
  a[2] = fx_array(HLO_F32, 1, DIMS(3), VALS(5, 6, 7));
  return a;
}

static void scatter_add_repeated(void **state) {
  (void)state;
  hlo_value *a[3];
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "s32"), 3, scatter_args(a, HLO_S32, VALS(1, 1, 2))),
            HLO_F32, 1, DIMS(4), VALS(0, 11, 7, 0));
}

static void scatter_overwrite_last_wins(void **state) {
  (void)state;
  hlo_value *a[3];
  fx_expect(fx_eval(SCATTER1(LAST_F32, "last", "s32"), 3, scatter_args(a, HLO_S32, VALS(1, 1, 2))),
            HLO_F32, 1, DIMS(4), VALS(0, 6, 7, 0));
  fx_expect(fx_eval(SCATTER1(LAST_F32, "last", "s32"), 3, scatter_args(a, HLO_S32, VALS(2, 1, 1))),
            HLO_F32, 1, DIMS(4), VALS(0, 7, 5, 0));
  /* keeping the old value leaves the operand alone */
  fx_expect(
      fx_eval(SCATTER1(FIRST_F32, "first", "s32"), 3, scatter_args(a, HLO_S32, VALS(2, 1, 1))),
      HLO_F32, 1, DIMS(4), VALS(0, 0, 0, 0));
}

static void scatter_general_combiner_in_order(void **state) {
  (void)state;
  hlo_value *a[3];
  /* index 1 gets 5 - 0 = 5, then 6 - 5 = 1; index 2 gets 7. */
  fx_expect(fx_eval(SCATTER1(SUBR_F32, "subr", "s32"), 3, scatter_args(a, HLO_S32, VALS(1, 1, 2))),
            HLO_F32, 1, DIMS(4), VALS(0, 1, 7, 0));
  /* reversed updates: 7 - 0 at 1? no: indices {2,1,1}: 2 <- 5, 1 <- 6 then 7 - 6 = 1 */
  fx_expect(fx_eval(SCATTER1(SUBR_F32, "subr", "s32"), 3, scatter_args(a, HLO_S32, VALS(2, 1, 1))),
            HLO_F32, 1, DIMS(4), VALS(0, 1, 5, 0));
}

static void scatter_skips_out_of_bounds(void **state) {
  (void)state;
  hlo_value *a[3];
  /* -1 and 4 are outside f32[4]: those updates are dropped, not clamped. */
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "s32"), 3, scatter_args(a, HLO_S32, VALS(-1, 3, 4))),
            HLO_F32, 1, DIMS(4), VALS(0, 0, 0, 6));
}

/* The paper's reproducer: a singleton scatter with an s8 index into
 * f32[300].  s8 reaches 127 but not 128..299; -1 is skipped. */
#define S8_SCATTER                                                                                 \
  ADD_F32 "ENTRY e {\n p = f32[300] parameter(0)\n i = s8[1,1] parameter(1)\n"                     \
          " u = f32[1] parameter(2)\n"                                                             \
          " ROOT s = f32[300] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"  \
          " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n"

static void scatter_s8_index_into_300(void **state) {
  (void)state;
  const double idx[] = {127, -1, -128, 0};
  const int64_t hit[] = {127, -1, -1, 0};
  for (int c = 0; c < 4; c++) {
    hlo_value *a[3];
    a[0] = hlo_value_array(HLO_F32, 1, DIMS(300));
    float *p = a[0]->data;
    for (int k = 0; k < 300; k++)
      p[k] = (float)k;
    a[1] = fx_array(HLO_S8, 2, DIMS(1, 1), &idx[c]);
    a[2] = fx_array(HLO_F32, 1, DIMS(1), VALS(0.5));
    hlo_value *v = fx_eval(S8_SCATTER, 3, a);
    assert_int_equal(v->count, 300);
    const float *o = v->data;
    for (int k = 0; k < 300; k++)
      assert_true(o[k] == (float)k + (k == hit[c] ? 0.5f : 0.0f));
    hlo_value_unref(v);
  }
}

static void scatter_index_types(void **state) {
  (void)state;
  hlo_value *a[3];
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "u8"), 3, scatter_args(a, HLO_U8, VALS(255, 3, 0))),
            HLO_F32, 1, DIMS(4), VALS(7, 0, 0, 6));
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "s16"), 3, scatter_args(a, HLO_S16, VALS(2, 2, -300))),
            HLO_F32, 1, DIMS(4), VALS(0, 0, 11, 0));
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "s64"), 3, scatter_args(a, HLO_S64, VALS(0, 1, 3e12))),
            HLO_F32, 1, DIMS(4), VALS(5, 6, 0, 0));
  fx_expect(fx_eval(SCATTER1(ADD_F32, "add", "u64"), 3, scatter_args(a, HLO_U64, VALS(3, 2, 1))),
            HLO_F32, 1, DIMS(4), VALS(0, 7, 6, 5));
}

static void scatter_window_skipped_whole(void **state) {
  (void)state;
  /* Windows of 2 into f32[5]: start 4 would cover 4..5, so it is skipped as
   * a whole (element 4 stays 0); start 3 covers 3..4. */
  const char *t =
      ADD_F32 "ENTRY e {\n p = f32[5] parameter(0)\n i = s32[2,1] parameter(1)\n"
              " u = f32[2,2] parameter(2)\n"
              " ROOT s = f32[5] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={},"
              " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(5), VALS(0, 0, 0, 0, 0)),
                    fx_array(HLO_S32, 2, DIMS(2, 1), VALS(4, 0)),
                    fx_array(HLO_F32, 2, DIMS(2, 2), VALS(1, 2, 3, 4))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 1, DIMS(5), VALS(3, 4, 0, 0, 0));
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(5), VALS(0, 0, 0, 0, 0)),
                    fx_array(HLO_S32, 2, DIMS(2, 1), VALS(3, -1)),
                    fx_array(HLO_F32, 2, DIMS(2, 2), VALS(1, 2, 3, 4))};
  fx_expect(fx_eval(t, 3, b), HLO_F32, 1, DIMS(5), VALS(0, 0, 0, 1, 2));
}

static void scatter_2d_window(void **state) {
  (void)state;
  const char *t =
      "mx {\n a = s32[] parameter(0)\n b = s32[] parameter(1)\n ROOT m = s32[] maximum(a, b)\n}\n"
      "ENTRY e {\n p = s32[3,3] parameter(0)\n i = s32[1,2] parameter(1)\n"
      " u = s32[1,2,2] parameter(2)\n"
      " ROOT s = s32[3,3] scatter(p, i, u), update_window_dims={1,2}, inserted_window_dims={},"
      " scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=mx\n}\n";
  hlo_value *a[] = {fx_array(HLO_S32, 2, DIMS(3, 3), VALS(5, 5, 5, 5, 5, 5, 5, 5, 5)),
                    fx_array(HLO_S32, 2, DIMS(1, 2), VALS(1, 1)),
                    fx_array(HLO_S32, 3, DIMS(1, 2, 2), VALS(1, 9, -4, 7))};
  fx_expect(fx_eval(t, 3, a), HLO_S32, 2, DIMS(3, 3), VALS(5, 5, 5, 5, 5, 9, 5, 5, 7));
}

static void scatter_batching_dims(void **state) {
  (void)state;
  /* operand [2,3]; batch b adds its update at column idx[b] of row b. */
  const char *t = ADD_F32
      "ENTRY e {\n p = f32[2,3] parameter(0)\n i = s32[2] parameter(1)\n"
      " u = f32[2] parameter(2)\n"
      " ROOT s = f32[2,3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={1},"
      " input_batching_dims={0}, scatter_indices_batching_dims={0},"
      " scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 3), VALS(0, 0, 0, 0, 0, 0)),
                    fx_array(HLO_S32, 1, DIMS(2), VALS(2, 0)),
                    fx_array(HLO_F32, 1, DIMS(2), VALS(10, 20))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 2, DIMS(2, 3), VALS(0, 0, 10, 20, 0, 0));
}

static void scatter_variadic(void **state) {
  (void)state;
  /* Two operands combined by one computation returning a tuple: the sum of
   * the first and the product of the second. */
  const char *t = "comb {\n a0 = f32[] parameter(0)\n a1 = s32[] parameter(1)\n"
                  " b0 = f32[] parameter(2)\n b1 = s32[] parameter(3)\n"
                  " s = f32[] add(a0, b0)\n m = s32[] multiply(a1, b1)\n"
                  " ROOT t = (f32[], s32[]) tuple(s, m)\n}\n"
                  "ENTRY e {\n p0 = f32[3] parameter(0)\n p1 = s32[3] parameter(1)\n"
                  " i = s32[3] parameter(2)\n u0 = f32[3] parameter(3)\n u1 = s32[3] parameter(4)\n"
                  " ROOT s = (f32[3], s32[3]) scatter(p0, p1, i, u0, u1), update_window_dims={},"
                  " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                  " to_apply=comb\n}\n";
  hlo_value *a[] = {
      fx_array(HLO_F32, 1, DIMS(3), VALS(1, 1, 1)), fx_array(HLO_S32, 1, DIMS(3), VALS(1, 1, 1)),
      fx_array(HLO_S32, 1, DIMS(3), VALS(0, 2, 0)), fx_array(HLO_F32, 1, DIMS(3), VALS(2, 3, 4)),
      fx_array(HLO_S32, 1, DIMS(3), VALS(2, 3, 4))};
  hlo_value *v = fx_eval(t, 5, a);
  assert_int_equal(v->type, HLO_TUPLE);
  assert_int_equal(v->ntuple, 2);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 1, DIMS(3), VALS(7, 1, 4));
  fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 1, DIMS(3), VALS(8, 1, 3));
  hlo_value_unref(v);
}

static void scatter_variadic_overwrite(void **state) {
  (void)state;
  const char *t = "last2 {\n a0 = f32[] parameter(0)\n a1 = s32[] parameter(1)\n"
                  " b0 = f32[] parameter(2)\n b1 = s32[] parameter(3)\n"
                  " ROOT t = (f32[], s32[]) tuple(b0, b1)\n}\n"
                  "ENTRY e {\n p0 = f32[3] parameter(0)\n p1 = s32[3] parameter(1)\n"
                  " i = s32[3] parameter(2)\n u0 = f32[3] parameter(3)\n u1 = s32[3] parameter(4)\n"
                  " ROOT s = (f32[3], s32[3]) scatter(p0, p1, i, u0, u1), update_window_dims={},"
                  " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                  " to_apply=last2\n}\n";
  hlo_value *a[] = {
      fx_array(HLO_F32, 1, DIMS(3), VALS(1, 1, 1)), fx_array(HLO_S32, 1, DIMS(3), VALS(1, 1, 1)),
      fx_array(HLO_S32, 1, DIMS(3), VALS(0, 2, 0)), fx_array(HLO_F32, 1, DIMS(3), VALS(2, 3, 4)),
      fx_array(HLO_S32, 1, DIMS(3), VALS(5, 6, 7))};
  hlo_value *v = fx_eval(t, 5, a);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 1, DIMS(3), VALS(4, 1, 3));
  fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 1, DIMS(3), VALS(7, 1, 6));
  hlo_value_unref(v);
}

static void scatter_typed_fast_paths(void **state) {
  (void)state;
  /* bf16 add rounds once to bf16: 256 + 1 is a tie and stays 256 (even),
   * twice.  s8 add wraps: 100 + 100 = -56. u8 max is unsigned. */
  const char *bf =
      "add {\n a = bf16[] parameter(0)\n b = bf16[] parameter(1)\n ROOT s = bf16[] add(a, b)\n}\n"
      "ENTRY e {\n p = bf16[2] parameter(0)\n i = s32[3] parameter(1)\n u = bf16[3] parameter(2)\n"
      " ROOT s = bf16[2] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"
      " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";
  hlo_value *a[] = {fx_array(HLO_BF16, 1, DIMS(2), VALS(256, 1)),
                    fx_array(HLO_S32, 1, DIMS(3), VALS(0, 0, 1)),
                    fx_array(HLO_BF16, 1, DIMS(3), VALS(1, 1, 0.5))};
  fx_expect(fx_eval(bf, 3, a), HLO_BF16, 1, DIMS(2), VALS(256, 1.5));
  const char *s8 =
      "add {\n a = s8[] parameter(0)\n b = s8[] parameter(1)\n ROOT s = s8[] add(a, b)\n}\n"
      "ENTRY e {\n p = s8[1] parameter(0)\n i = s32[1] parameter(1)\n u = s8[1] parameter(2)\n"
      " ROOT s = s8[1] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"
      " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";
  hlo_value *b[] = {fx_array(HLO_S8, 1, DIMS(1), VALS(100)), fx_array(HLO_S32, 1, DIMS(1), VALS(0)),
                    fx_array(HLO_S8, 1, DIMS(1), VALS(100))};
  fx_expect(fx_eval(s8, 3, b), HLO_S8, 1, DIMS(1), VALS(-56));
  const char *u8 =
      "mx {\n a = u8[] parameter(0)\n b = u8[] parameter(1)\n ROOT s = u8[] maximum(a, b)\n}\n"
      "ENTRY e {\n p = u8[2] parameter(0)\n i = s32[2] parameter(1)\n u = u8[2] parameter(2)\n"
      " ROOT s = u8[2] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"
      " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mx\n}\n";
  hlo_value *c[] = {fx_array(HLO_U8, 1, DIMS(2), VALS(3, 200)),
                    fx_array(HLO_S32, 1, DIMS(2), VALS(0, 1)),
                    fx_array(HLO_U8, 1, DIMS(2), VALS(250, 100))};
  fx_expect(fx_eval(u8, 3, c), HLO_U8, 1, DIMS(2), VALS(250, 200));
}

/* Issue 11: start indices at the ends of s64 and u64.  Gather clamps each
 * start to [0, 5 - 1] (u64 values above INT64_MAX clamp high, not wrap);
 * scatter skips every window that does not fit, so only index 2 adds.
 * The old code multiplied the raw index by the operand's stride before
 * testing it: signed overflow, which the sanitizer build aborts on. */
static void gather_scatter_extreme_indices(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[5,3] parameter(0)\n"
                    " i = s64[4] constant({-9223372036854775808, 9223372036854775807, -1, 1000})\n"
                    " ROOT g = f32[4,3] gather(p, i), offset_dims={1}, collapsed_slice_dims={0},"
                    " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}\n",
                    1, a),
            HLO_F32, 2, DIMS(4, 3), VALS(0, 1, 2, 40, 41, 42, 0, 1, 2, 40, 41, 42));
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53)};
  fx_expect(fx_eval("ENTRY e {\n p = f32[5,3] parameter(0)\n"
                    " i = u64[2] constant({18446744073709551615, 9223372036854775808})\n"
                    " ROOT g = f32[2,3] gather(p, i), offset_dims={1}, collapsed_slice_dims={0},"
                    " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}\n",
                    1, b),
            HLO_F32, 2, DIMS(2, 3), VALS(40, 41, 42, 40, 41, 42));
  hlo_value *c[] = {fx_array(HLO_F32, 2, DIMS(5, 3), k53),
                    fx_array(HLO_F32, 2, DIMS(4, 3), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1))};
  fx_expect(fx_eval("add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                    " ROOT s = f32[] add(a, b)\n}\n"
                    "ENTRY e {\n p = f32[5,3] parameter(0)\n u = f32[4,3] parameter(1)\n"
                    " i = s64[4] constant({-9223372036854775808, 9223372036854775807, 2, -1})\n"
                    " ROOT s = f32[5,3] scatter(p, i, u), update_window_dims={1},"
                    " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                    " to_apply=add\n}\n",
                    2, c),
            HLO_F32, 2, DIMS(5, 3), VALS(0, 1, 2, 10, 11, 12, 21, 22, 23, 30, 31, 32, 40, 41, 42));
}

static void scatter_max_nan(void **state) {
  (void)state;
  /* maximum propagates NaN whichever side it is on. */
  const char *t =
      "mx {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b)\n}\n"
      "ENTRY e {\n p = f32[3] parameter(0)\n i = s32[3] parameter(1)\n u = f32[3] parameter(2)\n"
      " ROOT s = f32[3] scatter(p, i, u), update_window_dims={}, inserted_window_dims={0},"
      " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mx\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(NAN, 1, 1)),
                    fx_array(HLO_S32, 1, DIMS(3), VALS(0, 1, 2)),
                    fx_array(HLO_F32, 1, DIMS(3), VALS(5, NAN, 0))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 1, DIMS(3), VALS(NAN, NAN, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gather_embedding_rows),
      cmocka_unit_test(gather_clamps_starts),
      cmocka_unit_test(gather_2d_windows),
      cmocka_unit_test(gather_index_vector_dim_first),
      cmocka_unit_test(gather_columns_offset_first),
      cmocka_unit_test(gather_batching_dims),
      cmocka_unit_test(gather_batching_dims_not_leading),
      cmocka_unit_test(scatter_add_repeated),
      cmocka_unit_test(scatter_overwrite_last_wins),
      cmocka_unit_test(scatter_general_combiner_in_order),
      cmocka_unit_test(scatter_skips_out_of_bounds),
      cmocka_unit_test(scatter_s8_index_into_300),
      cmocka_unit_test(scatter_index_types),
      cmocka_unit_test(scatter_window_skipped_whole),
      cmocka_unit_test(scatter_2d_window),
      cmocka_unit_test(scatter_batching_dims),
      cmocka_unit_test(scatter_variadic),
      cmocka_unit_test(scatter_variadic_overwrite),
      cmocka_unit_test(scatter_typed_fast_paths),
      cmocka_unit_test(scatter_max_nan),
      cmocka_unit_test(gather_scatter_extreme_indices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
