/* test_eval_rng.c — rng-bit-generator and rng (eval_rng.c).
 *
 * The block functions are checked against Random123's published
 * known-answer vectors (kat_vectors: Threefry-2x32-20, Philox-4x32-10).
 * The op is then checked by choosing states whose blocks are exactly
 * those known-answer inputs, so each output element's value follows from
 * the published answer and XLA's documented layout (eval_rng.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"
#include "check/eval_rng.h"

static void threefry_known_answers(void **state) {
  (void)state;
  static const uint32_t kat[3][6] = {
      /* ctr0, ctr1, key0, key1 -> out0, out1 */
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t out[2];
    chk_threefry2x32(kat[i], kat[i] + 2, out);
    assert_int_equal(out[0], kat[i][4]);
    assert_int_equal(out[1], kat[i][5]);
  }
}

static void philox_known_answers(void **state) {
  (void)state;
  static const uint32_t kat[3][10] = {
      /* ctr0..3, key0, key1 -> out0..3 */
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
       0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
       0x5001e420, 0x24126ea1},
  };
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    chk_philox4x32(kat[i], kat[i] + 4, out);
    for (int w = 0; w < 4; w++)
      assert_int_equal(out[w], kat[i][6 + w]);
  }
}

static hlo_value *u64_state(int n, const uint64_t *words) {
  hlo_value *v = hlo_value_array(HLO_U64, 1, (const int64_t[]){n});
  assert_non_null(v);
  memcpy(v->data, words, sizeof *words * (size_t)n);
  return v;
}

/* Evaluates rng-bit-generator on state; returns element k of the result. */
static hlo_value *generate(const char *alg, int nstate, const uint64_t *words, const char *data_shape, int k) {
  char t[400];
  snprintf(t, sizeof t,
           "ENTRY e {\n s = u64[%d] parameter(0)\n"
           " g = (u64[%d], %s) rng-bit-generator(s), algorithm=%s\n"
           " ROOT r = %s get-tuple-element(g), index=%d\n}\n",
           nstate, nstate, data_shape, alg, k == 0 ? (nstate == 3 ? "u64[3]" : "u64[2]") : data_shape, k);
  hlo_value *a[] = {u64_state(nstate, words)};
  return fx_eval(t, 1, a);
}

/* Key (0x13198a2e, 0x03707344) and counter (0x243f6a88, 0x85a308d3), low
 * words first: block 0 is the third Threefry known answer. */
static const uint64_t tf_state[2] = {0x0370734413198a2eull, 0x85a308d3243f6a88ull};

static void three_fry_layout(void **state) {
  (void)state;
  /* 32-bit data of 2 elements: one block, word 0 then word 1. */
  fx_expect(generate("rng_three_fry", 2, tf_state, "u32[2]", 1), HLO_U32, 1, DIMS(2),
            VALS(0xc4923a9c, 0x483df7a0));
  /* 64-bit data: word 0 is the low half. */
  hlo_value *v = generate("rng_three_fry", 2, tf_state, "u64[1]", 1);
  assert_true(((const uint64_t *)v->data)[0] == 0x483df7a0c4923a9cull);
  hlo_value_unref(v);
  /* The counter advances by the blocks used: 1 for two u32, 3 for three u64. */
  v = generate("rng_three_fry", 2, tf_state, "u32[2]", 0);
  assert_true(((const uint64_t *)v->data)[0] == tf_state[0]);
  assert_true(((const uint64_t *)v->data)[1] == tf_state[1] + 1);
  hlo_value_unref(v);
  v = generate("rng_three_fry", 2, tf_state, "u64[3]", 0);
  assert_true(((const uint64_t *)v->data)[1] == tf_state[1] + 3);
  hlo_value_unref(v);
}

static void three_fry_odd_count_splits_words(void **state) {
  (void)state;
  /* 3 elements use 2 blocks: word 0 of blocks 0 and 1, then word 1 of
   * block 0.  Block 0 is the known answer; block 1 only has to be
   * consistent between the two layouts. */
  hlo_value *two = generate("rng_three_fry", 2, tf_state, "u32[4]", 1);
  hlo_value *three = generate("rng_three_fry", 2, tf_state, "u32[3]", 1);
  const uint32_t *a = two->data, *b = three->data;
  assert_int_equal(a[0], 0xc4923a9c);
  assert_int_equal(b[0], 0xc4923a9c);
  assert_int_equal(b[1], a[1]); /* block 1, word 0 */
  assert_int_equal(b[2], 0x483df7a0);
  assert_int_equal(a[2], 0x483df7a0);
  hlo_value_unref(two);
  hlo_value_unref(three);
}

static void philox_layout(void **state) {
  (void)state;
  /* Key (0xa4093822, 0x299f31d0), counter words 0x243f6a88 0x85a308d3
   * 0x13198a2e 0x03707344: block 0 is the third Philox known answer. */
  const uint64_t s[3] = {0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull};
  fx_expect(generate("rng_philox", 3, s, "u32[4]", 1), HLO_U32, 1, DIMS(4),
            VALS(0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1));
  hlo_value *v = generate("rng_philox", 3, s, "u64[2]", 1);
  assert_true(((const uint64_t *)v->data)[0] == 0x94fdccebd16cfe09ull);
  assert_true(((const uint64_t *)v->data)[1] == 0x24126ea15001e420ull);
  hlo_value_unref(v);
}

static void philox_counter_carries(void **state) {
  (void)state;
  /* All ones: block 0 is the second known answer, and the 128-bit counter
   * wraps to zero after it. */
  const uint64_t s[3] = {~0ull, ~0ull, ~0ull};
  fx_expect(generate("rng_philox", 3, s, "u32[4]", 1), HLO_U32, 1, DIMS(4),
            VALS(0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd));
  hlo_value *v = generate("rng_philox", 3, s, "u32[4]", 0);
  const uint64_t *n = v->data;
  assert_true(n[0] == ~0ull && n[1] == 0 && n[2] == 0);
  hlo_value_unref(v);
}

/* rng_default is philox, as XLA's CPU and GPU compilers expand it: the
 * philox known answer of philox_layout. */
static void default_algorithm_is_philox(void **state) {
  (void)state;
  const uint64_t s[3] = {0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull};
  fx_expect(generate("rng_default", 3, s, "u32[4]", 1), HLO_U32, 1, DIMS(4),
            VALS(0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1));
}

/* rng of n f32 elements with the given seed and distribution. */
static hlo_value *draw(uint64_t seed, const char *dist, double a, double b) {
  char t[300];
  snprintf(t, sizeof t,
           "ENTRY e {\n a = f32[] constant(%g)\n b = f32[] constant(%g)\n"
           " ROOT r = f32[4000] rng(a, b), distribution=%s\n}\n",
           a, b, dist);
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  chk_eval_opts o = {.replicas = 1, .rng_seed = seed};
  hlo_value *out = NULL;
  if (chk_eval_module(m, 0, NULL, &o, &out, &err) != 0)
    fail_msg("%s", err.msg);
  hlo_module_free(m);
  return out;
}

static void rng_uniform_seeded(void **state) {
  (void)state;
  hlo_value *x = draw(7, "rng_uniform", -1, 3), *y = draw(7, "rng_uniform", -1, 3), *z = draw(8, "rng_uniform", -1, 3);
  assert_true(hlo_value_equal(x, y)); /* same seed, same values */
  assert_false(hlo_value_equal(x, z));
  const float *f = x->data;
  double sum = 0;
  for (int i = 0; i < 4000; i++) {
    assert_true(f[i] >= -1 && f[i] < 3);
    sum += f[i];
  }
  /* The mean of U[-1, 3) is 1; 4000 draws have a standard error of 0.018. */
  assert_true(fabs(sum / 4000 - 1) < 0.1);
  hlo_value_unref(x);
  hlo_value_unref(y);
  hlo_value_unref(z);
}

static void rng_normal_seeded(void **state) {
  (void)state;
  hlo_value *x = draw(3, "rng_normal", 2, 0.5);
  const float *f = x->data;
  double sum = 0, sq = 0;
  for (int i = 0; i < 4000; i++) {
    sum += f[i];
    sq += (f[i] - 2.0) * (f[i] - 2.0);
  }
  /* N(2, 0.5): standard errors 0.008 for the mean, about 0.006 for sigma. */
  assert_true(fabs(sum / 4000 - 2) < 0.05);
  assert_true(fabs(sqrt(sq / 4000) - 0.5) < 0.05);
  hlo_value_unref(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(threefry_known_answers),
      cmocka_unit_test(philox_known_answers),
      cmocka_unit_test(three_fry_layout),
      cmocka_unit_test(three_fry_odd_count_splits_words),
      cmocka_unit_test(philox_layout),
      cmocka_unit_test(philox_counter_carries),
      cmocka_unit_test(default_algorithm_is_philox),
      cmocka_unit_test(rng_uniform_seeded),
      cmocka_unit_test(rng_normal_seeded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
