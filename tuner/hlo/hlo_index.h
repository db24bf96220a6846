/* hlo_index.h — stepping a multi-dimensional index through a box in
 * row-major order (the "odometer"), the one definition that the parser,
 * the device and the reference evaluator all use.
 *
 * A position is an array idx[0..rank) of int64_t.  One step adds one to
 * the last dimension; a dimension that reaches its end goes back to its
 * start and carries one into the dimension before it.  So the positions of
 * the box come out in the order of their row-major offsets, which is the
 * order in which the arrays of HLO values lie in memory: a caller that
 * counts i = 0, 1, 2, ... alongside reads element i at idx.
 *
 * Why this shape:
 *
 * - It returns whether the step stayed inside the box.  After the last
 *   position it has carried out of dimension 0, every dimension is back at
 *   its start and it returns false.  Loops of the form
 *   `do { ... } while (hlo_index_next(...))` need that; loops that already
 *   count their elements ignore it.  The wrap also leaves idx ready for the
 *   next pass over the same box, which some callers rely on.
 *
 * - It never looks at the element count.  A box with a zero extent has no
 *   elements, yet stepping it still moves the other dimensions (the empty
 *   one carries at once): callers that may see such a box count elements
 *   (the count is 0) rather than wait for false.  Rank 0 has one position,
 *   the empty index; its first step returns false.
 *
 * - Stepping all but the last dimension is the same call with rank - 1:
 *   callers that handle a whole row at a time (a memcpy of the innermost
 *   run) step the rows that way.
 *
 * - Four forms, for the ways callers hold their box: from zero with the
 *   extents (hlo_index_next), from an origin lo with extents n
 *   (hlo_index_next_box, for tiles and regions inside a larger array),
 *   from zero keeping a linear offset with per-dimension strides in step
 *   (hlo_index_next_off, for walking a strided array without recomputing
 *   the offset from idx), and the same with two offsets
 *   (hlo_index_next_off2, for a copy between two differently strided
 *   arrays).
 *
 * - static inline: several callers step once per element in the device's
 *   inner loops, where a call per element would cost more than the step. */
#ifndef TUNE_HLO_INDEX_H
#define TUNE_HLO_INDEX_H

#include <stdbool.h>
#include <stdint.h>

/* Steps idx to the next position of the box [0, dims) of rank dims;
 * false, with idx back at all zeros, after the last. */
static inline bool hlo_index_next(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d])
      return true;
    idx[d] = 0;
  }
  return false;
}

/* Steps idx to the next position of the box [lo, lo + n); false, with idx
 * back at lo, after the last. */
static inline bool hlo_index_next_box(int rank, const int64_t *lo, const int64_t *n, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < lo[d] + n[d])
      return true;
    idx[d] = lo[d];
  }
  return false;
}

/* hlo_index_next that also keeps *off equal to the sum of idx[d] *
 * stride[d] (plus whatever base it started from): a step adds a stride,
 * a wrap takes back a whole dimension's worth.  false, with idx and *off
 * back where they started, after the last. */
static inline bool hlo_index_next_off(int rank, const int64_t *dims, const int64_t *stride, int64_t *idx,
                                      int64_t *off) {
  for (int d = rank - 1; d >= 0; d--) {
    *off += stride[d];
    if (++idx[d] < dims[d])
      return true;
    *off -= stride[d] * dims[d];
    idx[d] = 0;
  }
  return false;
}

/* hlo_index_next_off for two strided arrays walked together. */
static inline bool hlo_index_next_off2(int rank, const int64_t *dims, const int64_t *stride_a,
                                       const int64_t *stride_b, int64_t *idx, int64_t *off_a, int64_t *off_b) {
  for (int d = rank - 1; d >= 0; d--) {
    *off_a += stride_a[d];
    *off_b += stride_b[d];
    if (++idx[d] < dims[d])
      return true;
    *off_a -= stride_a[d] * dims[d];
    *off_b -= stride_b[d] * dims[d];
    idx[d] = 0;
  }
  return false;
}

#endif
