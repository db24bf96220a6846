/* test_fuzz_gen.c — the fusion generator (fuzz/gen.h) on 1,000 draws:
 * every module parses and the verifier accepts it, its canonical print
 * parses back to an equal module, a draw is a pure function of (seed,
 * index, templates, coverage counts), and --template restricts the draws. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz/covmap.h"
#include "fuzz/gen.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_verify.h"

#define DRAWS 1000

/* Feeds the coverage map the way `tune --fuzz` does with a module's ops. */
static void cover(tn_covmap *cov, const hlo_module *m, tn_fuzz_template t) {
  char key[96];
  snprintf(key, sizeof key, "tmpl:%s", tn_fuzz_template_name(t));
  assert_int_equal(tn_covmap_add(cov, key), 0);
  for (int c = 0; c < m->ncomps; c++)
    for (int i = 0; i < m->comps[c]->ninstrs; i++) {
      const hlo_instr *in = m->comps[c]->instrs[i];
      snprintf(key, sizeof key, "op:%s:%s", hlo_opcode_name(in->op), hlo_etype_name(in->shape.type));
      assert_int_equal(tn_covmap_add(cov, key), 0);
    }
}

static void thousand_draws_verify_and_round_trip(void **state) {
  (void)state;
  tn_covmap *cov = tn_covmap_new(), *cov2 = tn_covmap_new();
  assert_non_null(cov);
  int used[TN_FUZZ_TEMPLATE_COUNT] = {0};
  for (uint64_t i = 0; i < DRAWS; i++) {
    tn_fuzz_template t, t2;
    char *text = tn_fuzz_generate(42, i, 0, cov, &t);
    assert_non_null(text);
    /* the same draw from a map with the same counts is the same text */
    char *again = tn_fuzz_generate(42, i, 0, cov2, &t2);
    assert_non_null(again);
    assert_string_equal(text, again);
    assert_int_equal(t, t2);
    used[t]++;
    hlo_error err = {0};
    hlo_module *m = hlo_parse(text, strlen(text), &err);
    if (!m)
      fail_msg("draw %llu: %d:%d: %s\n%s", (unsigned long long)i, err.line, err.col, err.msg, text);
    if (hlo_verify(m, &err) != 0)
      fail_msg("draw %llu: verifier: %d:%d: %s\n%s", (unsigned long long)i, err.line, err.col, err.msg, text);
    size_t len = 0;
    char *printed = hlo_print_module(m, &len);
    assert_non_null(printed);
    hlo_module *back = hlo_parse(printed, len, &err);
    if (!back)
      fail_msg("draw %llu: the print does not parse: %d:%d: %s", (unsigned long long)i, err.line, err.col, err.msg);
    char why[256] = "";
    if (!hlo_module_equal(m, back, why, sizeof why))
      fail_msg("draw %llu: print round trip differs: %s", (unsigned long long)i, why);
    /* and printing the reparsed module gives the same text again */
    size_t len2 = 0;
    char *printed2 = hlo_print_module(back, &len2);
    assert_non_null(printed2);
    assert_string_equal(printed, printed2);
    cover(cov, m, t);
    cover(cov2, m, t);
    free(printed2);
    hlo_module_free(back);
    free(printed);
    hlo_module_free(m);
    free(again);
    free(text);
  }
  /* steering by coverage spreads the draws over every template */
  for (int t = 0; t < TN_FUZZ_TEMPLATE_COUNT; t++)
    if (used[t] < DRAWS / TN_FUZZ_TEMPLATE_COUNT / 2)
      fail_msg("template %s drawn only %d times of %d", tn_fuzz_template_name((tn_fuzz_template)t), used[t], DRAWS);
  tn_covmap_free(cov);
  tn_covmap_free(cov2);
}

static void seeds_and_indices_differ(void **state) {
  (void)state;
  char *a = tn_fuzz_generate(1, 0, 0, NULL, NULL), *b = tn_fuzz_generate(2, 0, 0, NULL, NULL),
       *c = tn_fuzz_generate(1, 1, 0, NULL, NULL);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_string_not_equal(a, b);
  assert_string_not_equal(a, c);
  free(a);
  free(b);
  free(c);
}

static void template_restricts_the_draws(void **state) {
  (void)state;
  int q = tn_fuzz_template_from_name("quant");
  assert_true(q >= 0);
  assert_int_equal(tn_fuzz_template_from_name("no-such"), -1);
  for (uint64_t i = 0; i < 20; i++) {
    tn_fuzz_template t;
    char *text = tn_fuzz_generate(7, i, 1u << q, NULL, &t);
    assert_non_null(text);
    assert_int_equal((int)t, q);
    /* a quantise-dequantise round trip converts twice */
    const char *first = strstr(text, "convert(");
    assert_non_null(first);
    assert_non_null(strstr(first + 1, "convert("));
    free(text);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(thousand_draws_verify_and_round_trip),
      cmocka_unit_test(seeds_and_indices_differ),
      cmocka_unit_test(template_restricts_the_draws),
  };
  return cmocka_run_group_tests_name("fuzz_gen", tests, NULL, NULL);
}
