/* dev_layout.c — logical index <-> physical offset under {minor_to_major},
 * and the factor groups of row-major reshapes. */
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

int dev_layout_reshape_groups(const hlo_shape *from, const hlo_shape *to, int *fa, int *ta) {
  int rf = from->rank, rt = to->rank;
  if (rf > HLO_MAX_RANK || rt > HLO_MAX_RANK || hlo_shape_elements(from) != hlo_shape_elements(to))
    return -1;
  for (int d = 0; d < rf; d++)
    if (from->dims[d] <= 0)
      return -1;
  for (int d = 0; d < rt; d++)
    if (to->dims[d] <= 0)
      return -1;
  int i = 0, j = 0, g = 0;
  while (i < rf || j < rt) {
    fa[g] = i;
    ta[g] = j;
    /* take one dimension from each side, then grow the side with the
     * smaller product until both agree: the counts are equal, so the last
     * group ends with both sides exhausted */
    int64_t a = i < rf ? from->dims[i++] : 1, b = j < rt ? to->dims[j++] : 1;
    while (a != b) {
      if (a < b && i < rf)
        a *= from->dims[i++];
      else if (b < a && j < rt)
        b *= to->dims[j++];
      else
        return -1;
    }
    while (i < rf && from->dims[i] == 1)
      i++;
    while (j < rt && to->dims[j] == 1)
      j++;
    g++;
  }
  fa[g] = i;
  ta[g] = j;
  return g;
}

/* Row-major position, within dims [a, b) of s, of index idx. */
static int64_t flat_of(const int64_t *dims, int a, int b, const int64_t *idx) {
  int64_t f = 0;
  for (int d = a; d < b; d++)
    f = f * dims[d] + idx[d];
  return f;
}

bool dev_layout_reshape_box(const hlo_shape *to, const int64_t *lo, const int64_t *n, const hlo_shape *from,
                            int64_t *flo, int64_t *fn) {
  int fa[HLO_MAX_RANK + 1], ta[HLO_MAX_RANK + 1];
  int ng = dev_layout_reshape_groups(from, to, fa, ta);
  if (ng < 0)
    return false;
  for (int g = 0; g < ng; g++) {
    /* the group's first and last position in the box */
    int64_t last[HLO_MAX_RANK], a[HLO_MAX_RANK], b[HLO_MAX_RANK];
    for (int d = ta[g]; d < ta[g + 1]; d++)
      last[d] = lo[d] + (n[d] > 0 ? n[d] - 1 : 0);
    int64_t p = flat_of(to->dims, ta[g], ta[g + 1], lo), q = flat_of(to->dims, ta[g], ta[g + 1], last);
    for (int d = fa[g + 1] - 1; d >= fa[g]; d--) {
      a[d] = p % from->dims[d], p /= from->dims[d];
      b[d] = q % from->dims[d], q /= from->dims[d];
    }
    /* the dims down to the first that differs keep their range; every one
     * after it is whole */
    bool whole = false;
    for (int d = fa[g]; d < fa[g + 1]; d++) {
      flo[d] = whole ? 0 : a[d];
      fn[d] = whole ? from->dims[d] : b[d] - a[d] + 1;
      whole = whole || a[d] != b[d];
    }
  }
  return true;
}
