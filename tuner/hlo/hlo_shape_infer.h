/* hlo_shape_infer.h — the result shape an HLO op must have.
 *
 * Given an instruction's operands and typed attributes, hlo_infer_shape()
 * checks that they are consistent (operand count, ranks, element types,
 * dimension numbers in range, slice bounds, ...) and works out the shape the
 * result must have.  The verifier compares that with the declared shape; the
 * evaluator and the device use the same arithmetic (window output sizes, dot
 * and convolution result dimensions) so the three can never disagree.
 *
 * Layouts are ignored throughout.  A dynamic dimension `<=N` is compared by
 * its bound N, and an unbounded `?` (size -1) matches any size.
 *
 * Some result properties are not determined by the operands: the element
 * type of convert or dot (preferred_element_type), the dimensions of reshape,
 * iota or broadcast, the size of a collective's gathered dimension when the
 * replica group size is unknown.  For those ops inference checks what can be
 * checked against the declared shape and reports that nothing further is
 * inferred.  Elementwise ops are checked operand by operand against the
 * declared result, because that names the operand that is wrong.
 *
 * Calls to other computations (to_apply, body, ...) are not looked at here:
 * the verifier checks them, and inference stays a function of one
 * instruction's operands and attributes.
 */
#ifndef TUNE_HLO_SHAPE_INFER_H
#define TUNE_HLO_SHAPE_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo.h"
#include "hlo_arena.h"
#include "hlo_error.h"

/* Checks `in` and infers its result shape.
 *   1  *out holds the shape the result must have (layout NULL, dims and
 *      tuple elements allocated in `scratch`); compare it with in->shape.
 *   0  consistent, and the op leaves nothing more to compare (no rule, or
 *      every rule was checked against the declared shape directly).
 *  -1  inconsistent: err is set at the instruction's line/col with a message
 *      that starts with the instruction's name.
 * Never crashes on malformed IR (operands are still assumed non-NULL). */
int hlo_infer_shape(const hlo_instr *in, hlo_arena *scratch, hlo_shape *out, hlo_error *err);

/* Output size of one window dimension over an input of n elements: the
 * input is dilated (lhs_dilate), padded (pad_lo/pad_hi, may be negative),
 * and a window of `size` taps dilated by rhs_dilate slides by `stride`.
 * Returns -1 when the parameters are invalid (size, stride or a dilation
 * below 1, or a padded input with negative size), -2 when the dilated,
 * padded or window sizes do not fit in int64. */
int64_t hlo_window_out_size(int64_t n, const hlo_window_dim *w);

/* Same rank and the same size in every dimension; element type, layout and
 * dynamic-ness ignored; a `?` dimension matches anything.  Tuples compare
 * element by element. */
bool hlo_shape_same_dims(const hlo_shape *a, const hlo_shape *b);

/* As hlo_shape_same_dims, and element types equal too. */
bool hlo_shape_compatible(const hlo_shape *a, const hlo_shape *b);

/* Writes a shape without layout, such as `f32[2,<=3]` or `(f32[], s32[4])`,
 * for messages.  Always NUL-terminates (when n > 0), truncating with "...";
 * returns buf. */
char *hlo_shape_format(const hlo_shape *s, char *buf, size_t n);

#endif
