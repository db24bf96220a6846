/* hlo_num_dot.h — the f32 dot inner loop of the device's numerics, many
 * output elements side by side.  It sits with the numerics below both
 * layers because both run it: the device's executor for its chunks, and
 * the reference evaluator when it emulates the device (emulate_device).
 *
 * The caller splits each f32 dot operand once per chunk into its bf16
 * parts (hlo_num_dot_split) and then, for every output element, accumulates
 * the products of its contracting line strictly in contracting order:
 *   acc = ftz(acc + hlo_num_dot_parts_product(a[r], b[r], prec)),  r = 0..len-1.
 * One running sum waits on each add, so this kernel runs many output
 * elements (lanes) at once, each lane exactly the scalar sequence above:
 * the same products in the same order with the same roundings, no fused
 * multiply-add (the file is compiled with contraction off), so the result
 * is the scalar loop's bit for bit.
 *
 * One caveat, which the caller handles: when both operands of an add are
 * NaN, which payload survives depends on the operand order the compiler
 * picked, in the scalar loop as here.  The caller uses this kernel only
 * when no operand part and no incoming accumulator is a NaN: then every
 * NaN that can arise is the machine's one default NaN, and the order no
 * longer matters.
 */
#ifndef TUNE_HLO_NUM_DOT_H
#define TUNE_HLO_NUM_DOT_H

#include <stdbool.h>
#include <stdint.h>

#include "hlo_numerics.h"

/* The split operands, one plane per bf16 part: part p of operand element
 * i is a[p][i] (b[p][i]).  Planes past the precision's part count are not
 * read.  sa and sb are the element steps along the contraction. */
typedef struct hlo_num_dot_planes {
  const float *a[3], *b[3];
  int64_t sa, sb;
  hlo_num_precision prec;
  /* Optional, 0 when unknown: exp_min[0] (exp_min[1]) is at most what
   * hlo_num_dot_split_block returned for every part the lanes read from the
   * a (b) planes.  Known and large enough, it lets the kernels leave out
   * flushes that cannot change a bit (see "No subnormals" in
   * hlo_num_dot.c). */
  int exp_min[2];
} hlo_num_dot_planes;

/* Whether, with ea and eb the two sides' exp_min (hlo_num_dot_split_block;
 * 0: unknown), every product of their parts and every sum of such
 * products that starts from zero is zero, at least the smallest normal,
 * inf or NaN, so that no flush can change a bit ("No subnormals" in
 * hlo_num_dot.c). */
bool hlo_num_dot_parts_never_subnormal(int ea, int eb);

/* hlo_num_dot_split of x[i] into parts[p][i] for i < n and the
 * precision's parts p < hlo_num_dot_parts(prec) (the other planes are
 * not written; parts[0] may be x itself), bit for bit, eight elements at
 * a time.  *exp_min becomes the smallest biased exponent, counted as at
 * least 1, of a nonzero finite part written, 255 when there is none.
 * Returns true when some part is a NaN. */
bool hlo_num_dot_split_block(const float *x, int64_t n, hlo_num_precision prec, float *const parts[3], int *exp_min);

/* Lanes q = 0..m-1: lane q's line starts at element a0 + q * da of the lhs
 * planes and b0 + q * db of the rhs planes; acc[q] takes len products in
 * order as above.  da == 0 and db == 1 (a row of a row-major result) is the
 * fast case; any other steps work too. */
void hlo_num_dot_f32_lanes(const hlo_num_dot_planes *pl, float *acc, int64_t m, int64_t a0, int64_t da, int64_t b0, int64_t db,
                       int64_t len);

/* Two rows of a row-major result that read the same rhs positions (two
 * output rows of one column block): row i's m lanes start at lhs element
 * a0i, shared by the row, and rhs element b0 + q.  Bit for bit
 *   hlo_num_dot_f32_lanes(pl, acc0, m, a00, 0, b0, 1, len);
 *   hlo_num_dot_f32_lanes(pl, acc1, m, a01, 0, b0, 1, len);
 * but with twice the independent sums in flight and each rhs vector
 * loaded once for both rows. */
void hlo_num_dot_f32_row_pair(const hlo_num_dot_planes *pl, float *acc0, float *acc1, int64_t m, int64_t a00,
                              int64_t a01, int64_t b0, int64_t len);

/* nrows rows of a row-major result that read the same rhs positions (the
 * rows of one column block): row i's m lanes are acc[i * m + q], take the
 * lhs element a0[i], shared by the row, and the rhs element b0 + q.  Bit
 * for bit the nrows calls
 *   hlo_num_dot_f32_lanes(pl, acc + i * m, m, a0[i], 0, b0, 1, len);
 * but run a block of lanes and of positions at a time over all rows, so
 * that the rhs block stays in the first-level cache for all of them (with
 * four rows or more, from a copy of it side by side), four rows at a time
 * where the processor has 512-bit vectors. */
void hlo_num_dot_f32_rows(const hlo_num_dot_planes *pl, float *acc, int64_t nrows, int64_t m, const int64_t *a0,
                          int64_t b0, int64_t len);

/* One lane, the plain scalar loop: the definition the lanes above follow. */
float hlo_num_dot_f32_line(const hlo_num_dot_planes *pl, float acc, int64_t a0, int64_t b0, int64_t len);

#endif
