/* test_eval_scaled_dot.c — scaled-dot in the reference evaluator
 * (eval_scaled_dot.c).
 *
 * Expected values are worked out by hand: every operand element is
 * multiplied by the scale of its block (operand_dim / scale_dim elements
 * per scale along each dimension), then the dequantized operands are
 * multiplied as a dot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eval_fixture.h"

/* lhs [[1,1,1,1],[1,2,3,4]] with blocks of 2 along k scaled by [[2,3],
 * [1,10]] is [[2,2,3,3],[1,2,30,40]]; rhs ones scaled by [1, 0.5] per two
 * rows is [1,1,0.5,0.5]; the dot is [2+2+1.5+1.5, 1+2+15+20] = [7, 38]. */
static void blocks_along_the_contracting_dimension(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = f32[2,4] parameter(0)\n b = f32[4,1] parameter(1)\n"
      " as = f32[2,2] parameter(2)\n bs = f32[2,1] parameter(3)\n"
      " ROOT r = f32[2,1] scaled-dot(a, b, as, bs), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 4), VALS(1, 1, 1, 1, 1, 2, 3, 4)),
                    fx_array(HLO_F32, 2, DIMS(4, 1), VALS(1, 1, 1, 1)),
                    fx_array(HLO_F32, 2, DIMS(2, 2), VALS(2, 3, 1, 10)),
                    fx_array(HLO_F32, 2, DIMS(2, 1), VALS(1, 0.5))};
  fx_expect(fx_eval(t, 4, a), HLO_F32, 2, DIMS(2, 1), VALS(7, 38));
}

/* Scalar scales: [3,4] * 2 = [6,8]; [1,1] * 0.25; 6/4 + 8/4 = 3.5.  The
 * operands are bf16, the result f32. */
static void scalar_scales(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = bf16[1,2] parameter(0)\n b = bf16[2,1] parameter(1)\n"
      " as = f32[] parameter(2)\n bs = f32[] parameter(3)\n"
      " ROOT r = f32[1,1] scaled-dot(a, b, as, bs), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_BF16, 2, DIMS(1, 2), VALS(3, 4)),
                    fx_array(HLO_BF16, 2, DIMS(2, 1), VALS(1, 1)), fx_scalar(HLO_F32, 2),
                    fx_scalar(HLO_F32, 0.25)};
  fx_expect(fx_eval(t, 4, a), HLO_F32, 2, DIMS(1, 1), VALS(3.5));
}

static void scale_that_does_not_divide_fails(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n a = f32[2,4] parameter(0)\n b = f32[4,1] parameter(1)\n"
      " as = f32[2,3] parameter(2)\n bs = f32[2,1] parameter(3)\n"
      " ROOT r = f32[2,1] scaled-dot(a, b, as, bs), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 4), NULL), fx_array(HLO_F32, 2, DIMS(4, 1), NULL),
                    fx_array(HLO_F32, 2, DIMS(2, 3), NULL), fx_array(HLO_F32, 2, DIMS(2, 1), NULL)};
  fx_eval_fails(t, 4, a, "does not divide");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocks_along_the_contracting_dimension),
      cmocka_unit_test(scalar_scales),
      cmocka_unit_test(scale_that_does_not_divide_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
