/* test_capture_cache.c — the store of graph captures an MPI rank reuses
 * across the jobs of one module (tuner/run/capture_cache.c).
 *
 * Captures are made by hand: f32 arrays of a chosen size, so that the
 * byte counts are known (4 bytes an element).  What is checked: a stored
 * capture comes back under its key and only its key and unit count; the
 * fifth module pushes out the least recently used one, not the oldest
 * stored; a capture larger than the limit is refused and stays the
 * caller's; the byte limit evicts as the slot limit does.  ASan checks
 * that every value is freed exactly once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "run/capture_cache.h"
#include "hlo/hlo_value.h"

/* n units, each with one f32[elems] argument whose first element is tag. */
static tn_capture *make_caps(int n, int64_t elems, float tag) {
  tn_capture *caps = calloc((size_t)n, sizeof *caps);
  assert_non_null(caps);
  for (int i = 0; i < n; i++) {
    caps[i].nargs = 1;
    caps[i].args = calloc(1, sizeof *caps[i].args);
    assert_non_null(caps[i].args);
    caps[i].args[0] = hlo_value_array(HLO_F32, 1, &elems);
    assert_non_null(caps[i].args[0]);
    ((float *)caps[i].args[0]->data)[0] = tag + (float)i;
  }
  return caps;
}

static float first(const tn_capture *caps, int unit) { return ((const float *)caps[unit].args[0]->data)[0]; }

static void test_get_by_key_and_count(void **state) {
  (void)state;
  tn_capture_cache c = {0};
  assert_int_equal(tn_capture_cache_put(&c, "a.hlo|1", make_caps(3, 4, 10.0f), 3), 0);
  const tn_capture *got = tn_capture_cache_get(&c, "a.hlo|1", 3);
  assert_non_null(got);
  assert_true(first(got, 0) == 10.0f && first(got, 2) == 12.0f);
  assert_null(tn_capture_cache_get(&c, "a.hlo|2", 3)); /* another seed */
  assert_null(tn_capture_cache_get(&c, "a.hlo|1", 2)); /* the file's units changed */
  assert_null(tn_capture_cache_get(&c, "a.hlo", 3));   /* a prefix is not the key */
  tn_capture_cache_clear(&c);
  assert_null(tn_capture_cache_get(&c, "a.hlo|1", 3));
}

static void test_least_recently_used_goes(void **state) {
  (void)state;
  tn_capture_cache c = {0};
  const char *keys[] = {"m0", "m1", "m2", "m3", "m4"};
  for (int i = 0; i < 4; i++)
    assert_int_equal(tn_capture_cache_put(&c, keys[i], make_caps(1, 2, (float)i), 1), 0);
  /* m0 was stored first but used last: m1 is the one to go. */
  assert_non_null(tn_capture_cache_get(&c, "m0", 1));
  assert_int_equal(tn_capture_cache_put(&c, keys[4], make_caps(1, 2, 4.0f), 1), 0);
  assert_null(tn_capture_cache_get(&c, "m1", 1));
  for (int i = 0; i < 5; i++)
    if (i != 1) {
      const tn_capture *got = tn_capture_cache_get(&c, keys[i], 1);
      assert_non_null(got);
      assert_true(first(got, 0) == (float)i);
    }
  tn_capture_cache_clear(&c);
}

static void test_byte_limit(void **state) {
  (void)state;
  /* A limit of 1000 bytes; an f32 element is 4 bytes. */
  tn_capture_cache c = {.max_bytes = 1000};
  tn_capture *big = make_caps(3, 100, 0.0f); /* 1200 bytes: refused */
  assert_int_equal(tn_capture_cache_put(&c, "big", big, 3), -1);
  assert_null(tn_capture_cache_get(&c, "big", 3));
  tn_capture_free(big, 3); /* still the caller's */
  free(big);
  assert_int_equal(tn_capture_cache_put(&c, "x", make_caps(2, 100, 1.0f), 2), 0); /* 800 B */
  assert_int_equal(tn_capture_cache_put(&c, "y", make_caps(1, 50, 2.0f), 1), 0);  /* 200 B: fits */
  assert_non_null(tn_capture_cache_get(&c, "x", 2));
  assert_non_null(tn_capture_cache_get(&c, "y", 1));
  /* 400 B more does not fit beside 1000: x, the least recently used, goes. */
  assert_int_equal(tn_capture_cache_put(&c, "z", make_caps(1, 100, 3.0f), 1), 0);
  assert_null(tn_capture_cache_get(&c, "x", 2));
  assert_non_null(tn_capture_cache_get(&c, "y", 1));
  assert_non_null(tn_capture_cache_get(&c, "z", 1));
  tn_capture_cache_clear(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_by_key_and_count),
      cmocka_unit_test(test_least_recently_used_goes),
      cmocka_unit_test(test_byte_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
