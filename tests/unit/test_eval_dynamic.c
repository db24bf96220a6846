/* test_eval_dynamic.c — dynamic dimensions in the reference evaluator
 * (eval_dynamic.c, and the refusals of eval.c).
 *
 * A dynamic dimension is kept padded to its bound; set-dimension-size
 * zeroes what lies past the size, so the expected values are the operand
 * with those elements replaced by 0, worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "eval_fixture.h"

static void set_dimension_size_masks_past_the_size(void **state) {
  (void)state;
  const char *rows = "ENTRY e {\n x = f32[4,2] parameter(0)\n n = s32[] parameter(1)\n"
                     " ROOT r = f32[<=4,2] set-dimension-size(x, n), dimensions={0}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)), fx_scalar(HLO_S32, 3)};
  fx_expect(fx_eval(rows, 2, a), HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 0, 0));
  const char *cols = "ENTRY e {\n x = f32[2,3] parameter(0)\n n = s32[] parameter(1)\n"
                     " ROOT r = f32[2,<=3] set-dimension-size(x, n), dimensions={1}\n}\n";
  hlo_value *b[] = {fx_array(HLO_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), fx_scalar(HLO_S32, 1)};
  fx_expect(fx_eval(cols, 2, b), HLO_F32, 2, DIMS(2, 3), VALS(1, 0, 0, 4, 0, 0));
  /* Out of [0, 4] the size is clamped: 5 keeps all, -1 none. */
  hlo_value *c[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)), fx_scalar(HLO_S32, 5)};
  fx_expect(fx_eval(rows, 2, c), HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  hlo_value *n[] = {fx_array(HLO_F32, 2, DIMS(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)), fx_scalar(HLO_S32, -1)};
  fx_expect(fx_eval(rows, 2, n), HLO_F32, 2, DIMS(4, 2), VALS(0, 0, 0, 0, 0, 0, 0, 0));
}

/* A sum over the dynamic dimension sees only the first size elements:
 * [1,2,3,4] with size 2 sums to 3. */
static void sum_over_a_dynamic_dimension(void **state) {
  (void)state;
  const char *t = "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"
                  "ENTRY e {\n x = f32[4] parameter(0)\n n = s32[] parameter(1)\n"
                  " d = f32[<=4] set-dimension-size(x, n), dimensions={0}\n z = f32[] constant(0)\n"
                  " ROOT r = f32[] reduce(d, z), dimensions={0}, to_apply=add\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 2, 3, 4)), fx_scalar(HLO_S32, 2)};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 0, NULL, VALS(3));
}

static void get_dimension_size_of_a_static_dimension(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[4,3] parameter(0)\n"
                  " ROOT r = s32[] get-dimension-size(x), dimensions={1}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(4, 3), NULL)};
  fx_expect(fx_eval(t, 1, a), HLO_S32, 0, NULL, VALS(3));
}

static void refused(const char *t, const char *needle) {
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  assert_int_equal(chk_eval_supported(m, &err), -1);
  if (!strstr(err.msg, needle))
    fail_msg("'%s' does not say '%s'", err.msg, needle);
  hlo_module_free(m);
}

/* What zero padding cannot answer is refused before evaluation. */
static void what_padding_cannot_answer_is_refused(void **state) {
  (void)state;
  refused("ENTRY e {\n x = f32[4] parameter(0)\n n = s32[] parameter(1)\n"
          " d = f32[<=4] set-dimension-size(x, n), dimensions={0}\n"
          " ROOT r = s32[] get-dimension-size(d), dimensions={0}\n}\n",
          "runtime size is not tracked");
  refused("max {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b)\n}\n"
          "ENTRY e {\n x = f32[4] parameter(0)\n n = s32[] parameter(1)\n"
          " d = f32[<=4] set-dimension-size(x, n), dimensions={0}\n z = f32[] constant(0)\n"
          " ROOT r = f32[] reduce(d, z), dimensions={0}, to_apply=max\n}\n",
          "reduce other than a sum over a dynamic dimension");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(set_dimension_size_masks_past_the_size),
      cmocka_unit_test(sum_over_a_dynamic_dimension),
      cmocka_unit_test(get_dimension_size_of_a_static_dimension),
      cmocka_unit_test(what_padding_cannot_answer_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
