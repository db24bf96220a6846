/* test_utf8.c — stored text made valid UTF-8 (tuner/store/utf8.c).
 *
 * Expected outputs are written out by hand from RFC 3629's table of
 * well-formed sequences: each byte that does not begin one becomes
 * U+FFFD (EF BF BD), and valid text is copied unchanged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/utf8.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

static void fixes_to(const char *in, const char *want) {
  char *got = tn_utf8_fix(in);
  assert_non_null(got);
  assert_string_equal(got, want);
  assert_true(tn_utf8_valid(got));
  free(got);
}

static void test_valid_unchanged(void **state) {
  (void)state;
  const char *ok[] = {"", "plain ascii", "\xC3\xA9t\xC3\xA9",           /* é */
                      "\xE2\x82\xAC",                                    /* € */
                      "\xF0\x9F\x98\x80",                                /* U+1F600 */
                      "\xEF\xBF\xBD", "\xF4\x8F\xBF\xBF",                /* U+10FFFF */
                      "\xED\x9F\xBF"};                                   /* U+D7FF */
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    assert_true(tn_utf8_valid(ok[i]));
    fixes_to(ok[i], ok[i]);
  }
}

static void test_invalid_replaced(void **state) {
  (void)state;
  /* The bytes of the reproducer's op_name: FF, an overlong C0 80, and the
   * surrogate ED A0 80: six bytes, none of which begins a valid sequence. */
  assert_false(tn_utf8_valid("\xFF\xC0\x80\xED\xA0\x80"));
  fixes_to("a\xFF\xC0\x80\xED\xA0\x80z", "a" R R R R R R "z");
  fixes_to("\x80", R);                          /* a lone continuation byte */
  fixes_to("\xC3", R);                          /* cut short by the end */
  fixes_to("\xE2\x82", R R);                    /* cut short: E2 then a lone 82 */
  fixes_to("\xE0\x80\xAF", R R R);              /* overlong '/' */
  fixes_to("\xF4\x90\x80\x80", R R R R);        /* above U+10FFFF */
  fixes_to("\xF5x", R "x");                     /* never a lead byte */
  fixes_to("\xC3\xA9\xFF\xC3\xA9", "\xC3\xA9" R "\xC3\xA9");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_unchanged),
      cmocka_unit_test(test_invalid_replaced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
