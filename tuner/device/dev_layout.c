/* dev_layout.c — logical index <-> physical offset under {minor_to_major}. */
#include "dev_layout.h"

/* Fills order[p] with the logical dimension at physical position p, major
 * first; false when s has no usable layout (row-major then applies). */
static bool physical_order(const hlo_shape *s, int *order) {
  const hlo_layout *l = s->layout;
  if (!l || l->minor_to_major.n != s->rank || s->rank > HLO_MAX_RANK)
    return false;
  bool seen[HLO_MAX_RANK] = {false};
  for (int p = 0; p < s->rank; p++) {
    int64_t d = l->minor_to_major.v[s->rank - 1 - p];
    if (d < 0 || d >= s->rank || seen[d])
      return false;
    seen[d] = true;
    order[p] = (int)d;
  }
  return true;
}

static void row_major_order(const hlo_shape *s, int *order) {
  for (int p = 0; p < s->rank; p++)
    order[p] = p;
}

bool dev_layout_row_major(const hlo_shape *s) {
  int order[HLO_MAX_RANK];
  if (!physical_order(s, order))
    return true;
  for (int p = 0; p < s->rank; p++)
    if (order[p] != p)
      return false;
  return true;
}

int64_t dev_layout_offset(const hlo_shape *s, const int64_t *idx) {
  int order[HLO_MAX_RANK];
  if (!physical_order(s, order))
    row_major_order(s, order);
  int64_t off = 0;
  for (int p = 0; p < s->rank; p++)
    off = off * s->dims[order[p]] + idx[order[p]];
  return off;
}

void dev_layout_index(const hlo_shape *s, int64_t off, int64_t *idx) {
  int order[HLO_MAX_RANK];
  if (!physical_order(s, order))
    row_major_order(s, order);
  for (int p = s->rank - 1; p >= 0; p--) {
    int64_t n = s->dims[order[p]] ? s->dims[order[p]] : 1;
    idx[order[p]] = off % n;
    off /= n;
  }
}

void dev_layout_bitcast_source(const hlo_shape *to, const int64_t *idx, const hlo_shape *from, int64_t *src) {
  dev_layout_index(from, dev_layout_offset(to, idx), src);
}
