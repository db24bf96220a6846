/* test_hlo_index.c — unit tests for tuner/hlo/hlo_index.h.
 *
 * Every expected sequence is written out by hand from the definition
 * (row-major order, last dimension fastest); none is produced by the code
 * under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hlo/hlo_index.h"

/* Steps idx once and checks the result and the new position. */
static void step_to(int rank, const int64_t *dims, int64_t *idx, bool more, const int64_t *want) {
  assert_int_equal(hlo_index_next(rank, dims, idx), more);
  for (int d = 0; d < rank; d++)
    assert_int_equal(idx[d], want[d]);
}

static void test_from_zero(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3};
  int64_t idx[2] = {0, 0};
  static const int64_t seq[][2] = {{0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  for (int i = 0; i < 5; i++)
    step_to(2, dims, idx, true, seq[i]);
  step_to(2, dims, idx, false, (const int64_t[]){0, 0}); /* wrapped: ready again */
  step_to(2, dims, idx, true, seq[0]);
}

static void test_rank3_carries_twice(void **state) {
  (void)state;
  const int64_t dims[3] = {2, 2, 2};
  int64_t idx[3] = {0, 1, 1};
  step_to(3, dims, idx, true, (const int64_t[]){1, 0, 0});
  idx[1] = 1, idx[2] = 1;
  step_to(3, dims, idx, false, (const int64_t[]){0, 0, 0});
}

static void test_box(void **state) {
  (void)state;
  const int64_t lo[2] = {1, 0}, n[2] = {2, 3};
  int64_t idx[2] = {1, 0};
  static const int64_t seq[][2] = {{1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
  for (int i = 0; i < 5; i++) {
    assert_true(hlo_index_next_box(2, lo, n, idx));
    assert_int_equal(idx[0], seq[i][0]);
    assert_int_equal(idx[1], seq[i][1]);
  }
  assert_false(hlo_index_next_box(2, lo, n, idx));
  assert_int_equal(idx[0], 1); /* back at lo */
  assert_int_equal(idx[1], 0);
}

/* Rows of a box: the same call with rank - 1 leaves the last dimension. */
static void test_box_rows(void **state) {
  (void)state;
  const int64_t lo[3] = {0, 5, 7}, n[3] = {2, 2, 4};
  int64_t idx[3] = {0, 5, 7};
  static const int64_t seq[][2] = {{0, 6}, {1, 5}, {1, 6}};
  for (int i = 0; i < 3; i++) {
    assert_true(hlo_index_next_box(2, lo, n, idx));
    assert_int_equal(idx[0], seq[i][0]);
    assert_int_equal(idx[1], seq[i][1]);
    assert_int_equal(idx[2], 7);
  }
  assert_false(hlo_index_next_box(2, lo, n, idx));
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[1], 5);
}

/* Rank 0 has one position; stepping from it ends at once.  So does
 * stepping the rows of a rank-1 box (rank - 1 == 0) and rank -1 (the
 * rows of a rank-0 box), which callers can pass. */
static void test_rank0(void **state) {
  (void)state;
  int64_t idx[1] = {42}, off = 9;
  const int64_t one[1] = {3};
  assert_false(hlo_index_next(0, one, idx));
  assert_false(hlo_index_next(-1, one, idx));
  assert_false(hlo_index_next_box(0, one, one, idx));
  assert_false(hlo_index_next_box(-1, one, one, idx));
  assert_false(hlo_index_next_off(0, one, one, idx, &off));
  assert_int_equal(idx[0], 42); /* untouched */
  assert_int_equal(off, 9);
}

/* A zero extent carries at once: the other dimensions still step, which
 * is why callers count elements (0 here) instead of waiting for false. */
static void test_zero_extent(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 0};
  int64_t idx[2] = {0, 0};
  step_to(2, dims, idx, true, (const int64_t[]){1, 0});
  step_to(2, dims, idx, false, (const int64_t[]){0, 0});
  const int64_t first0[2] = {0, 3};
  step_to(2, first0, idx, true, (const int64_t[]){0, 1});
  step_to(2, first0, idx, true, (const int64_t[]){0, 2});
  step_to(2, first0, idx, false, (const int64_t[]){0, 0});
  const int64_t lo[2] = {4, 4}, n[2] = {0, 1};
  int64_t b[2] = {4, 4};
  assert_false(hlo_index_next_box(2, lo, n, b));
  assert_int_equal(b[0], 4);
  assert_int_equal(b[1], 4);
}

/* The offset follows idx: dims {2, 3} with strides {10, 1} from base 100
 * visits 100, 101, 102, 110, 111, 112, then wraps back to 100. */
static void test_offset(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3}, stride[2] = {10, 1};
  int64_t idx[2] = {0, 0}, off = 100;
  static const int64_t offs[] = {101, 102, 110, 111, 112};
  for (int i = 0; i < 5; i++) {
    assert_true(hlo_index_next_off(2, dims, stride, idx, &off));
    assert_int_equal(off, offs[i]);
    assert_int_equal(off, 100 + idx[0] * 10 + idx[1]);
  }
  assert_false(hlo_index_next_off(2, dims, stride, idx, &off));
  assert_int_equal(off, 100);
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[1], 0);
  /* A zero stride (a dimension the offset ignores, as a reduced one). */
  const int64_t zs[2] = {0, 1};
  static const int64_t zoffs[] = {1, 2, 0, 1, 2};
  for (int i = 0; i < 5; i++) {
    assert_true(hlo_index_next_off(2, dims, zs, idx, &off));
    assert_int_equal(off, 100 + zoffs[i]);
  }
  assert_false(hlo_index_next_off(2, dims, zs, idx, &off));
  assert_int_equal(off, 100);
}

/* Two offsets in step: dims {2, 3} read row-major (strides {3, 1}) and
 * written transposed (strides {1, 2}) pair source 0..5 with destination
 * 0, 2, 4, 1, 3, 5; a negative stride (a reversed row) walks down from
 * its base. */
static void test_offset2(void **state) {
  (void)state;
  const int64_t dims[2] = {2, 3}, sa[2] = {3, 1}, sb[2] = {1, 2};
  int64_t idx[2] = {0, 0}, a = 0, b = 0;
  static const int64_t bs[] = {2, 4, 1, 3, 5};
  for (int i = 0; i < 5; i++) {
    assert_true(hlo_index_next_off2(2, dims, sa, sb, idx, &a, &b));
    assert_int_equal(a, i + 1);
    assert_int_equal(b, bs[i]);
  }
  assert_false(hlo_index_next_off2(2, dims, sa, sb, idx, &a, &b));
  assert_int_equal(a, 0);
  assert_int_equal(b, 0);
  const int64_t rev[2] = {3, -1};
  int64_t c = 2, d = 0;
  static const int64_t cs[] = {1, 0, 5, 4, 3};
  for (int i = 0; i < 5; i++) {
    assert_true(hlo_index_next_off2(2, dims, rev, sa, idx, &c, &d));
    assert_int_equal(c, cs[i]);
    assert_int_equal(d, i + 1);
  }
  assert_false(hlo_index_next_off2(2, dims, rev, sa, idx, &c, &d));
  assert_int_equal(c, 2);
  assert_int_equal(d, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_zero), cmocka_unit_test(test_rank3_carries_twice),
      cmocka_unit_test(test_box),       cmocka_unit_test(test_box_rows),
      cmocka_unit_test(test_rank0),     cmocka_unit_test(test_zero_extent),
      cmocka_unit_test(test_offset),    cmocka_unit_test(test_offset2),
  };
  return cmocka_run_group_tests_name("hlo_index", tests, NULL, NULL);
}
