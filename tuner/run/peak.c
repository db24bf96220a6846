/* peak.c — the values around an error map's peak (peak.h).
 *
 * The window is centred on the peak where the array allows and shifted
 * inwards at an edge, so that it always holds TN_PEAK_SIDE elements along a
 * dimension that has that many: a peak in a corner still shows its
 * neighbours, which is where a wrong tile edge or accumulator shows. */
#include "peak.h"

#include <math.h>
#include <string.h>

static int64_t flat_index(const tn_error_map *e, const int64_t *idx) {
  int64_t flat = 0;
  for (int d = 0; d < e->rank; d++)
    flat = flat * e->dims[d] + idx[d];
  return flat;
}

/* The first index of a window of `side` elements along a dimension of n
 * that holds p, as near the middle as the edges allow. */
static int64_t window_start(int64_t p, int64_t n, int side) {
  int64_t s = p - side / 2;
  if (s + side > n)
    s = n - side;
  return s < 0 ? 0 : s;
}

void tn_peak_window_fill(tn_error_map *e, const hlo_value *actual, const hlo_value *expected) {
  tn_peak_window *w = &e->peak;
  memset(w, 0, sizeof *w);
  int64_t count = 1;
  for (int d = 0; d < e->rank; d++)
    count *= e->dims[d];
  if (!e->data || count <= 0 || actual->count != count || expected->count != count)
    return;
  int64_t best = 0;
  for (int64_t i = 0; i < count; i++) {
    if (isnan(e->data[i])) {
      best = i;
      break;
    }
    if (e->data[i] > e->data[best])
      best = i;
  }
  for (int d = e->rank - 1; d >= 0; d--) {
    w->peak[d] = best % e->dims[d];
    best /= e->dims[d];
  }
  memcpy(w->origin, w->peak, sizeof w->origin);
  int rd = e->rank >= 2 ? e->rank - 2 : -1, cd = e->rank >= 1 ? e->rank - 1 : -1;
  w->rows = 1;
  w->cols = 1;
  if (rd >= 0) {
    w->rows = (int)(e->dims[rd] < TN_PEAK_SIDE ? e->dims[rd] : TN_PEAK_SIDE);
    w->origin[rd] = window_start(w->peak[rd], e->dims[rd], w->rows);
  }
  if (cd >= 0) {
    w->cols = (int)(e->dims[cd] < TN_PEAK_SIDE ? e->dims[cd] : TN_PEAK_SIDE);
    w->origin[cd] = window_start(w->peak[cd], e->dims[cd], w->cols);
  }
  int64_t idx[HLO_MAX_RANK];
  memcpy(idx, w->origin, sizeof idx);
  for (int i = 0; i < w->rows; i++)
    for (int j = 0; j < w->cols; j++) {
      if (rd >= 0)
        idx[rd] = w->origin[rd] + i;
      if (cd >= 0)
        idx[cd] = w->origin[cd] + j;
      int64_t at = flat_index(e, idx);
      w->actual[i * w->cols + j] = hlo_value_get_f64(actual, at);
      w->expected[i * w->cols + j] = hlo_value_get_f64(expected, at);
    }
}
