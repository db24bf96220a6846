/* test_peak.c — the window of expected and actual values around an error
 * map's peak (tuner/run/peak.c).
 *
 * Each case builds two small arrays by hand, an error map |a - b| of them,
 * and checks the window's place and values against what the definition
 * (result.h) gives: at most 5 x 5 over the last two dimensions, centred on
 * the peak unless an edge is nearer, the other dimensions at the peak.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hlo/hlo_value.h"
#include "run/peak.h"

/* b[i] = i, a = b except at the given flat indices; the map is |a - b|. */
static void make(int rank, const int64_t *dims, const int64_t *at, const double *by, int nat, hlo_value **a,
                 hlo_value **b, tn_error_map *e) {
  *a = hlo_value_array(HLO_F32, rank, dims);
  *b = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(*a);
  assert_non_null(*b);
  float *pa = (*a)->data, *pb = (*b)->data;
  for (int64_t i = 0; i < (*a)->count; i++)
    pa[i] = pb[i] = (float)i;
  for (int k = 0; k < nat; k++)
    pa[at[k]] += (float)by[k];
  *e = (tn_error_map){.rank = rank};
  for (int d = 0; d < rank; d++)
    e->dims[d] = dims[d];
  e->data = malloc(sizeof(float) * (size_t)(*a)->count);
  assert_non_null(e->data);
  for (int64_t i = 0; i < (*a)->count; i++)
    e->data[i] = fabsf(pa[i] - pb[i]);
}

static void done(hlo_value *a, hlo_value *b, tn_error_map *e) {
  hlo_value_unref(a);
  hlo_value_unref(b);
  free(e->data);
}

/* f32[7,6], the peak in the last corner (6,5): the window is shifted in
 * to rows 2..6 and columns 1..5. A smaller error elsewhere is not it. */
static void corner_peak(void **state) {
  (void)state;
  int64_t dims[2] = {7, 6}, at[2] = {41, 3};
  double by[2] = {4, 1};
  hlo_value *a, *b;
  tn_error_map e;
  make(2, dims, at, by, 2, &a, &b, &e);
  tn_peak_window_fill(&e, a, b);
  const tn_peak_window *w = &e.peak;
  assert_int_equal(w->rows, 5);
  assert_int_equal(w->cols, 5);
  assert_int_equal(w->peak[0], 6);
  assert_int_equal(w->peak[1], 5);
  assert_int_equal(w->origin[0], 2);
  assert_int_equal(w->origin[1], 1);
  /* (0,0) is [2,1] = flat 13, (1,2) is [3,3] = 21, (4,4) is [6,5] = 41 */
  assert_true(w->expected[0] == 13 && w->actual[0] == 13);
  assert_true(w->expected[1 * 5 + 2] == 21 && w->actual[1 * 5 + 2] == 21);
  assert_true(w->expected[24] == 41 && w->actual[24] == 45);
  done(a, b, &e);
}

/* f32[3]: one row of all three elements, the peak in the middle. */
static void short_vector(void **state) {
  (void)state;
  int64_t dims[1] = {3}, at[1] = {1};
  double by[1] = {-0.5};
  hlo_value *a, *b;
  tn_error_map e;
  make(1, dims, at, by, 1, &a, &b, &e);
  tn_peak_window_fill(&e, a, b);
  assert_int_equal(e.peak.rows, 1);
  assert_int_equal(e.peak.cols, 3);
  assert_int_equal(e.peak.peak[0], 1);
  assert_int_equal(e.peak.origin[0], 0);
  assert_true(e.peak.expected[1] == 1 && e.peak.actual[1] == 0.5);
  assert_true(e.peak.expected[2] == 2 && e.peak.actual[2] == 2);
  done(a, b, &e);
}

/* f32[2,10,10], the peak at [1,5,5]: the window is rows 3..7 and columns
 * 3..7 of the slice [1,:,:]; a NaN in the map wins over any number. */
static void rank3_and_nan(void **state) {
  (void)state;
  int64_t dims[3] = {2, 10, 10}, at[2] = {155, 0};
  double by[2] = {1, 1000};
  hlo_value *a, *b;
  tn_error_map e;
  make(3, dims, at, by, 2, &a, &b, &e);
  e.data[155] = NAN; /* a one-sided NaN there */
  tn_peak_window_fill(&e, a, b);
  assert_int_equal(e.peak.peak[0], 1);
  assert_int_equal(e.peak.peak[1], 5);
  assert_int_equal(e.peak.peak[2], 5);
  assert_int_equal(e.peak.origin[0], 1);
  assert_int_equal(e.peak.origin[1], 3);
  assert_int_equal(e.peak.origin[2], 3);
  /* (0,0) is [1,3,3] = 133; the peak (2,2) is [1,5,5] = 155 */
  assert_true(e.peak.expected[0] == 133);
  assert_true(e.peak.expected[12] == 155 && e.peak.actual[12] == 156);
  done(a, b, &e);
}

/* A scalar: the one element. */
static void scalar(void **state) {
  (void)state;
  int64_t at[1] = {0};
  double by[1] = {2};
  hlo_value *a, *b;
  tn_error_map e;
  make(0, NULL, at, by, 1, &a, &b, &e);
  tn_peak_window_fill(&e, a, b);
  assert_int_equal(e.peak.rows, 1);
  assert_int_equal(e.peak.cols, 1);
  assert_true(e.peak.expected[0] == 0 && e.peak.actual[0] == 2);
  done(a, b, &e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(corner_peak),
      cmocka_unit_test(short_vector),
      cmocka_unit_test(rank3_and_nan),
      cmocka_unit_test(scalar),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
