/* test_config.c — candidate configs: canonical text round trip, parse
 * errors with columns, and fingerprints (expected hashes computed with an
 * independent FNV-1a implementation in Python). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_config.h"

static void round_trip(const char *text) {
  dev_config c;
  hlo_error err;
  if (dev_config_parse(text, &c, &err) != 0)
    fail_msg("'%s' refused: %d: %s", text, err.col, err.msg);
  char back[DEV_CONFIG_TEXT_MAX];
  dev_config_print(&c, back, sizeof back);
  assert_string_equal(back, text);
}

static void canonical_text_round_trips(void **state) {
  (void)state;
  round_trip("tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts");
  round_trip("tile=1 k=0 buf=1 order=- pack=1 prec=default flags=none");
  round_trip("tile=8x128x3 k=0 buf=4 order=210 pack=1 prec=highest flags=none");
  round_trip("tile=16 k=64 buf=3 order=k0 pack=4 prec=high "
             "flags=fuse-converts,split-reduction,vec-scatter,two-stage-sort");
}

static void fields_decode(void **state) {
  (void)state;
  dev_config c;
  hlo_error err;
  assert_int_equal(dev_config_parse("tile=8x256 k=512 buf=2 order=1k0 pack=2 prec=high flags=vec-scatter", &c, &err), 0);
  assert_int_equal(c.rank, 2);
  assert_int_equal(c.tile[0], 8);
  assert_int_equal(c.tile[1], 256);
  assert_int_equal(c.k, 512);
  assert_int_equal(c.buf, 2);
  assert_int_equal(c.norder, 3);
  assert_int_equal(c.order[0], 1);
  assert_int_equal(c.order[1], DEV_ORDER_K);
  assert_int_equal(c.order[2], 0);
  assert_int_equal(c.pack, 2);
  assert_int_equal(c.prec, DEV_PREC_HIGH);
  assert_int_equal(c.flags, DEV_FLAG_VEC_SCATTER);
}

static void fingerprints_are_fnv1a_of_the_text(void **state) {
  (void)state;
  dev_config c;
  hlo_error err;
  assert_int_equal(dev_config_parse("tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts", &c, &err), 0);
  assert_true(dev_config_fingerprint(&c) == 0xa438a115212644f1ull);
  assert_int_equal(dev_config_parse("tile=1 k=0 buf=1 order=- pack=1 prec=default flags=none", &c, &err), 0);
  assert_true(dev_config_fingerprint(&c) == 0x4147bbce07311891ull);
}

static void expect_refused(const char *text, int col, const char *msg) {
  dev_config c;
  hlo_error err;
  assert_int_equal(dev_config_parse(text, &c, &err), -1);
  if (col)
    assert_int_equal(err.col, col);
  if (!strstr(err.msg, msg))
    fail_msg("'%s': message '%s' lacks '%s'", text, err.msg, msg);
}

static void bad_text_is_refused_with_a_column(void **state) {
  (void)state;
  expect_refused("", 1, "expected 'tile='");
  expect_refused("tile=8x k=0 buf=1 order=0 pack=1 prec=default flags=none", 8, "number");
  expect_refused("tile=8 buf=1 k=0 order=0 pack=1 prec=default flags=none", 8, "expected 'k='");
  expect_refused("tile=8 k=0 buf=5 order=0 pack=1 prec=default flags=none", 0, "buf must be 1..4");
  expect_refused("tile=8 k=0 buf=1 order=0 pack=3 prec=default flags=none", 0, "pack must be");
  expect_refused("tile=8x8 k=0 buf=1 order=00 pack=1 prec=default flags=none", 26, "permutation");
  expect_refused("tile=8 k=4 buf=1 order=0 pack=1 prec=default flags=none", 0, "order must name");
  expect_refused("tile=8 k=0 buf=1 order=0 pack=1 prec=fast flags=none", 38, "prec must be");
  expect_refused("tile=8 k=0 buf=1 order=0 pack=1 prec=default flags=bogus", 52, "unknown flag");
  expect_refused("tile=8 k=0 buf=1 order=0 pack=1 prec=default flags=vec-scatter,fuse-converts", 64,
                 "canonical order");
  expect_refused("tile=8 k=0 buf=1 order=0 pack=1 prec=default flags=none extra", 56, "unexpected text");
  expect_refused("tile=99999999999999999999 k=0 buf=1 order=0 pack=1 prec=default flags=none", 6, "too large");
  expect_refused("tile=0 k=0 buf=1 order=0 pack=1 prec=default flags=none", 0, "at least 1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(canonical_text_round_trips),
      cmocka_unit_test(fields_decode),
      cmocka_unit_test(fingerprints_are_fnv1a_of_the_text),
      cmocka_unit_test(bad_text_is_refused_with_a_column),
  };
  return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
