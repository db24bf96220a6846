/* dev_layout.h — where an array element sits in device memory under its
 * shape's layout.
 *
 * Values are held in logical row-major order whatever the layout (see
 * hlo_value.h), which is right for every op that reads elements by index.
 * A bitcast is the exception: XLA defines it as a reinterpretation of the
 * physical buffer, so element i of the result is the element at physical
 * offset i' of the operand, where i' is found through both shapes'
 * {minor_to_major} layouts.  These functions give that mapping; a shape
 * without a layout (or with a malformed one, which the verifier reports)
 * is row-major, for which the physical offset is the row-major index.
 * Tiled layouts (T(8,128)) are treated as untiled, as the reference does.
 */
#ifndef TUNE_DEV_LAYOUT_H
#define TUNE_DEV_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_value.h" /* HLO_MAX_RANK */

/* Is s laid out row-major (no layout, or minor_to_major = {rank-1,...,0})? */
bool dev_layout_row_major(const hlo_shape *s);

/* The physical offset of the element at logical index idx of s. */
int64_t dev_layout_offset(const hlo_shape *s, const int64_t *idx);

/* The logical index of s whose element sits at physical offset off. */
void dev_layout_index(const hlo_shape *s, int64_t off, int64_t *idx);

/* For a bitcast from `from` to `to` (the same element count): the logical
 * index of `from` that logical index idx of `to` reads. */
void dev_layout_bitcast_source(const hlo_shape *to, const int64_t *idx, const hlo_shape *from, int64_t *src);

/* ---- row-major reshapes ----------------------------------------------------
 * A reshape keeps the row-major order of the elements (so does a bitcast
 * between row-major layouts).  Its dimensions then fall into factor groups:
 * the shortest runs of dimensions of either shape whose extents multiply to
 * the same number, so that a group's elements are the same, in the same
 * order, on both sides.  [768,96,320] -> [73728,320] has two: {0,1} -> {0}
 * and {2} -> {1}.  A unit dimension joins the group before it (the first
 * group when it leads). */

/* The factor groups of a reshape from `from` to `to`: group g holds dims
 * [fa[g], fa[g+1]) of from and [ta[g], ta[g+1]) of to (fa and ta have room
 * for HLO_MAX_RANK + 1 entries).  Returns the number of groups, or -1 when
 * the element counts differ, a rank exceeds HLO_MAX_RANK or an extent is 0
 * (no element to order). */
int dev_layout_reshape_groups(const hlo_shape *from, const hlo_shape *to, int *fa, int *ta);

/* The bounding box (flo, fn) of the elements of `from` that the box (lo, n)
 * of `to` reads through a row-major reshape: per factor group, the elements
 * between the group's first and last position in the box, in row-major
 * order within the group (every position of the box lies between them).
 * Along a group whose box is one contiguous run that is the run itself.
 * Returns false (and leaves the output alone) when the reshape has no
 * factor groups (dev_layout_reshape_groups returns -1). */
bool dev_layout_reshape_box(const hlo_shape *to, const int64_t *lo, const int64_t *n, const hlo_shape *from,
                            int64_t *flo, int64_t *fn);

#endif
