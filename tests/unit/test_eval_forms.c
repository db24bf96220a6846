/* test_eval_forms.c — forms of supported ops that the evaluator refuses
 * (ones XLA's verifier rejects, or that need what the module lacks) say
 * why, after the usual "op 'OP' is not supported by the evaluator". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "check/eval.h"
#include "hlo/hlo_parse.h"

static void refused_because(const char *text, const char *why) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  assert_int_equal(chk_eval_supported(m, &err), -1);
  if (!strstr(err.msg, "is not supported by the evaluator in this form: ") || !strstr(err.msg, why))
    fail_msg("message '%s' does not say '%s'", err.msg, why);
  hlo_module_free(m);
}

static void rng_of_three_operands(void **state) {
  (void)state;
  refused_because("ENTRY e {\n a = f32[] constant(0)\n b = f32[] constant(1)\n s = u64[1] constant({2})\n"
                  " ROOT r = f32[] rng(a, b, s), distribution=rng_uniform\n}\n",
                  "rng takes two operands");
}

static void rng_bit_generator_of_a_tuple_state(void **state) {
  (void)state;
  refused_because("ENTRY e {\n a = u32[2] parameter(0)\n t = (u32[2], u32[2]) tuple(a, a)\n"
                  " ROOT r = u32[8] rng-bit-generator(t), algorithm=rng_default\n}\n",
                  "one u64[N] state");
}

static void in_place_collective_permute(void **state) {
  (void)state;
  refused_because("ENTRY e {\n x = f32[4] parameter(0)\n z = u32[] constant(0)\n t = (u32[]) tuple(z)\n"
                  " ROOT c = f32[4] collective-permute(x, x, t, t), source_target_pairs={{0,1}}\n}\n",
                  "in-place collective-permute");
}

static void send_of_another_type(void **state) {
  (void)state;
  refused_because("ENTRY e {\n x = bf16[4] parameter(0)\n t = token[] after-all()\n"
                  " s = (s32[4], u32[], token[]) send(x, t), channel_id=1, is_host_transfer=true\n"
                  " ROOT d = token[] send-done(s), channel_id=1, is_host_transfer=true\n}\n",
                  "whose data has the operand's shape");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rng_of_three_operands),
      cmocka_unit_test(rng_bit_generator_of_a_tuple_state),
      cmocka_unit_test(in_place_collective_permute),
      cmocka_unit_test(send_of_another_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
