/* test_eval_select_scatter.c — select-and-scatter in the reference
 * evaluator (eval_select_scatter.c).
 *
 * Expected values are worked out by hand from XLA's semantics: each window
 * picks the element select keeps (the first of a tie under GE, the last
 * under GT), the source value of the window is scattered there with the
 * scatter computation onto a result filled with init, and a window that
 * lies wholly in the padding picks nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "eval_fixture.h"

#define COMPS(DIR)                                                                                           \
  "sel {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=" DIR   \
  "\n}\n"                                                                                                    \
  "sct {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"

/* Max-pool gradient, 2x2 windows, stride 2 over a 4x4:
 *   1 5 2 0      windows: {1,5,3,4} -> 5 at (0,1)   {2,0,8,1} -> 8 at (1,2)
 *   3 4 8 1               {9,2,0,1} -> 9 at (2,0)   {6,7,3,4} -> 7 at (2,3)
 *   9 2 6 7
 *   0 1 3 4
 * source [[10,20],[30,40]] lands on those four positions. */
static void max_pool_gradient_4x4(void **state) {
  (void)state;
  const char *t = COMPS("GE") "ENTRY e {\n x = f32[4,4] parameter(0)\n s = f32[2,2] parameter(1)\n"
                              " z = f32[] constant(0)\n"
                              " ROOT r = f32[4,4] select-and-scatter(x, s, z), window={size=2x2 stride=2x2},"
                              " select=sel, scatter=sct\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 4), VALS(1, 5, 2, 0, 3, 4, 8, 1, 9, 2, 6, 7, 0, 1, 3, 4)),
                    fx_array(HLO_F32, 2, DIMS(2, 2), VALS(10, 20, 30, 40))};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 2, DIMS(4, 4),
            VALS(0, 10, 0, 0, 0, 0, 20, 0, 30, 0, 0, 40, 0, 0, 0, 0));
}

/* Overlapping windows of 2, stride 1, over [1,3,3,2]: (1,3) picks index
 * 1, the tie (3,3) keeps the first (index 1) under GE, (3,2) picks index
 * 2.  With init 1 and source [1,2,4]: [1, 1+1+2, 1+4, 1] = [1,4,5,1].
 * Under GT the tie goes to the later element (index 2): [1, 2, 7, 1]. */
static void overlap_ties_and_init(void **state) {
  (void)state;
  const char *ge = COMPS("GE") "ENTRY e {\n x = f32[4] parameter(0)\n s = f32[3] parameter(1)\n"
                               " i = f32[] constant(1)\n"
                               " ROOT r = f32[4] select-and-scatter(x, s, i), window={size=2 stride=1},"
                               " select=sel, scatter=sct\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 3, 3, 2)), fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 4))};
  fx_expect(fx_eval(ge, 2, a), HLO_F32, 1, DIMS(4), VALS(1, 4, 5, 1));
  const char *gt = COMPS("GT") "ENTRY e {\n x = f32[4] parameter(0)\n s = f32[3] parameter(1)\n"
                               " i = f32[] constant(1)\n"
                               " ROOT r = f32[4] select-and-scatter(x, s, i), window={size=2 stride=1},"
                               " select=sel, scatter=sct\n}\n";
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 3, 3, 2)), fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 4))};
  fx_expect(fx_eval(gt, 2, b), HLO_F32, 1, DIMS(4), VALS(1, 2, 7, 1));
}

/* The corpus's out-of-bounds regression: 1x1 windows with padding 1 over a
 * 3x3 give 5x5 windows; the 16 border windows hold only padding and are
 * dropped, window (i,j) inside picks operand (i-1,j-1).  Source 1..25
 * row-major: result[r][c] = source[r+1][c+1]. */
static void padding_only_windows_drop_their_source(void **state) {
  (void)state;
  const char *t = COMPS("GE") "ENTRY e {\n x = f32[3,3] parameter(0)\n s = f32[5,5] parameter(1)\n"
                              " z = f32[] constant(0)\n"
                              " ROOT r = f32[3,3] select-and-scatter(x, s, z), window={size=1x1 pad=1_1x1_1},"
                              " select=sel, scatter=sct\n}\n";
  double src[25];
  for (int i = 0; i < 25; i++)
    src[i] = i + 1;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(3, 3), NULL), fx_array(HLO_F32, 2, DIMS(5, 5), src)};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 2, DIMS(3, 3), VALS(7, 8, 9, 12, 13, 14, 17, 18, 19));
}

static void source_of_the_wrong_shape_fails(void **state) {
  (void)state;
  const char *t = COMPS("GE") "ENTRY e {\n x = f32[4] parameter(0)\n s = f32[2] parameter(1)\n"
                              " z = f32[] constant(0)\n"
                              " ROOT r = f32[4] select-and-scatter(x, s, z), window={size=2 stride=1},"
                              " select=sel, scatter=sct\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), NULL), fx_array(HLO_F32, 1, DIMS(2), NULL)};
  fx_eval_fails(t, 2, a, "positions");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(max_pool_gradient_4x4),
      cmocka_unit_test(overlap_ties_and_init),
      cmocka_unit_test(padding_only_windows_drop_their_source),
      cmocka_unit_test(source_of_the_wrong_shape_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
