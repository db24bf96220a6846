/* test_mem_account.c — the process's account of values and device buffers
 * (tuner/hlo/hlo_mem.h): what is taken, given back and refused.
 *
 * Expected byte counts follow from the documented storage: a value's
 * elements take count x element size rounded up to 64 bytes (64 for an
 * empty array, nothing for a tuple), a device buffer its bytes, two
 * redzones of DEV_REDZONE bytes and a shadow byte per element.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "device/dev_hbm.h"
#include "hlo/hlo_mem.h"
#include "hlo/hlo_value.h"

static int reset(void **state) {
  (void)state;
  hlo_mem_set_limit(0);
  return 0;
}

static void values_are_counted(void **state) {
  (void)state;
  int64_t base = hlo_mem_held();
  int64_t d1[1] = {1000}; /* 4000 bytes -> 4032 */
  hlo_value *a = hlo_value_array(HLO_F32, 1, d1);
  assert_non_null(a);
  assert_int_equal(hlo_mem_held() - base, 4032);
  int64_t d2[2] = {3, 5}; /* 15 bytes of bf16 = 30 -> 64 */
  hlo_value *b = hlo_value_array_uninit(HLO_BF16, 2, d2);
  assert_non_null(b);
  assert_int_equal(hlo_mem_held() - base, 4096);
  hlo_value *both[2] = {hlo_value_ref(a), hlo_value_ref(b)};
  hlo_value *t = hlo_value_tuple(2, both); /* shares its elements */
  assert_non_null(t);
  assert_int_equal(hlo_mem_held() - base, 4096);
  hlo_value *c = hlo_value_clone(a);
  assert_non_null(c);
  assert_int_equal(hlo_mem_held() - base, 8128);
  hlo_value_unref(a);
  hlo_value_unref(b);
  assert_int_equal(hlo_mem_held() - base, 8128); /* the tuple still holds them */
  hlo_value_unref(t);
  assert_int_equal(hlo_mem_held() - base, 4032);
  hlo_value_unref(c);
  assert_int_equal(hlo_mem_held(), base);
}

static void the_limit_refuses(void **state) {
  (void)state;
  int64_t base = hlo_mem_held();
  hlo_mem_set_limit(base + 10000);
  uint64_t refused = hlo_mem_refusals();
  int64_t d[1] = {2000}; /* 8000 bytes: fits once, not twice */
  hlo_value *a = hlo_value_array(HLO_F32, 1, d);
  assert_non_null(a);
  hlo_value *b = hlo_value_array(HLO_F32, 1, d);
  assert_null(b);
  assert_int_equal(hlo_mem_refusals(), refused + 1);
  assert_int_equal(hlo_mem_held() - base, 8000); /* the refused take left no trace */
  hlo_value_unref(a);
  b = hlo_value_array(HLO_F32, 1, d); /* room again once a is gone */
  assert_non_null(b);
  hlo_value_unref(b);
  assert_int_equal(hlo_mem_held(), base);
  hlo_mem_set_limit(0);
}

static void device_buffers_are_counted(void **state) {
  (void)state;
  int64_t base = hlo_mem_held();
  hlo_mem_reset_peak();
  int64_t d[2] = {8, 128};
  dev_hbm h;
  assert_int_equal(dev_hbm_alloc(&h, "param 0", HLO_F32, 2, d), 0);
  int64_t want = 8 * 128 * 4 + 2 * DEV_REDZONE + 8 * 128;
  assert_int_equal(hlo_mem_held() - base, want);
  dev_hbm_free(&h);
  assert_int_equal(hlo_mem_held(), base);
  assert_int_equal(hlo_mem_peak() - base, want);
  /* One byte short of room for it: refused, nothing held. */
  hlo_mem_set_limit(base + want - 1);
  assert_int_equal(dev_hbm_alloc(&h, "param 0", HLO_F32, 2, d), -1);
  assert_int_equal(hlo_mem_held(), base);
  dev_hbm_free(&h); /* what a caller does after a failure: harmless */
  assert_int_equal(hlo_mem_held(), base);
  hlo_mem_set_limit(0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(values_are_counted, reset),
      cmocka_unit_test_setup(the_limit_refuses, reset),
      cmocka_unit_test_setup(device_buffers_are_counted, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
