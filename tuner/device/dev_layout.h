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

#endif
