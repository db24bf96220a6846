/* test_eval_ragged_dot.c — ragged-dot in the reference evaluator
 * (eval_ragged_dot.c).
 *
 * Expected values are worked out by hand: rows of the ragged dimension
 * are cut into consecutive groups by group_sizes, each group multiplies
 * its own rhs (non-contracting ragged dimension) or contracts only its
 * own range (contracting ragged dimension), and rows past the last group
 * are zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eval_fixture.h"

/* lhs rows [1,2] [3,4] [5,6] [7,8]; rhs group 0 the identity, group 1 the
 * swap [[0,1],[1,0]]; sizes [1,2]: row 0 in group 0 -> [1,2], rows 1 and 2
 * in group 1 -> [4,3] and [6,5], row 3 in no group -> [0,0]. */
static void two_groups_non_contracting(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = f32[4,2] parameter(0)\n b = f32[2,2,2] parameter(1)\n"
      " g = s64[2] parameter(2)\n"
      " ROOT r = f32[4,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1},"
      " lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)),
                    fx_array(HLO_F32, 3, DIMS(2, 2, 2), VALS(1, 0, 0, 1, 0, 1, 1, 0)),
                    fx_array(HLO_S64, 1, DIMS(2), VALS(1, 2))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 4, 3, 6, 5, 0, 0));
}

/* The corpus's form: group sizes per index of an outer lhs dimension.
 * lhs [2,2,1] = [[1],[2]], [[3],[4]]; rhs group 0 = 10, group 1 = 100;
 * sizes [[2,0],[0,2]]: outer 0 is all group 0 (10, 20), outer 1 all
 * group 1 (300, 400). */
static void group_sizes_per_outer_index(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = f32[2,2,1] parameter(0)\n b = f32[2,1,1] parameter(1)\n"
      " g = s64[2,2] parameter(2)\n"
      " ROOT r = f32[2,2,1] ragged-dot(a, b, g), lhs_contracting_dims={2}, rhs_contracting_dims={1},"
      " lhs_ragged_dims={1}, rhs_group_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 3, DIMS(2, 2, 1), VALS(1, 2, 3, 4)),
                    fx_array(HLO_F32, 3, DIMS(2, 1, 1), VALS(10, 100)),
                    fx_array(HLO_S64, 2, DIMS(2, 2), VALS(2, 0, 0, 2))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 3, DIMS(2, 2, 1), VALS(10, 20, 300, 400));
}

/* Ragged contracting dimension: lhs [1,4] = [1,2,3,4], rhs [4,1] = [1,10,
 * 100,1000]; sizes [1,3,0]: group 0 contracts k = 0 (1*1 = 1), group 1
 * k = 1..3 (2*10 + 3*100 + 4*1000 = 4320), group 2 nothing (0). */
static void contracting_groups(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = f32[1,4] parameter(0)\n b = f32[4,1] parameter(1)\n"
      " g = s32[3] parameter(2)\n"
      " ROOT r = f32[3,1,1] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={0},"
      " lhs_ragged_dims={1}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(1, 4), VALS(1, 2, 3, 4)),
                    fx_array(HLO_F32, 2, DIMS(4, 1), VALS(1, 10, 100, 1000)),
                    fx_array(HLO_S32, 1, DIMS(3), VALS(1, 3, 0))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 3, DIMS(3, 1, 1), VALS(1, 4320, 0));
}

/* XLA leaves a negative size undefined; here it is an empty group: sizes
 * [-1, 2] put rows 0 and 1 in group 1 (the swap): [2,1], [4,3], then
 * zeros. */
static void negative_group_size_is_empty(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n a = f32[4,2] parameter(0)\n b = f32[2,2,2] parameter(1)\n"
                  " g = s64[2] parameter(2)\n"
                  " ROOT r = f32[4,2] ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1},"
                  " lhs_ragged_dims={0}, rhs_group_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)),
                    fx_array(HLO_F32, 3, DIMS(2, 2, 2), VALS(1, 0, 0, 1, 0, 1, 1, 0)),
                    fx_array(HLO_S64, 1, DIMS(2), VALS(-1, 2))};
  fx_expect(fx_eval(t, 3, a), HLO_F32, 2, DIMS(4, 2), VALS(2, 1, 4, 3, 0, 0, 0, 0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(two_groups_non_contracting),
      cmocka_unit_test(group_sizes_per_outer_index),
      cmocka_unit_test(contracting_groups),
      cmocka_unit_test(negative_group_size_is_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
