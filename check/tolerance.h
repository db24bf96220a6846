/* tolerance.h — deriving the tolerance of one output from what produced it.
 *
 * Two configs of one device compute the same fused ops with the same
 * numerics; what legitimately differs is the order of accumulation (tile
 * and chunk shapes, pack factors, split reductions) and, when a precision
 * flag differs, how many bf16 passes an f32 dot takes.  The tolerance bounds
 * exactly those differences and nothing else, so anything beyond it is a
 * finding.
 *
 * Reordering.  A sum of K terms t_i computed in any order in a format with
 * unit roundoff u satisfies |s_hat - s| <= (K-1) u sum|t_i| + O(u^2) (the
 * classic recursive-summation bound; it holds for every order, blocked and
 * pairwise included).  Two orders are each within that of the exact sum, so
 * they differ by at most 2 (K-1) u sum|t_i| <= 2 (K-1) u K T where T is the
 * largest |t_i|.  That is the absolute part:
 *
 *     atol = 2 (K-1) u_acc K T
 *
 * Final rounding.  When the accumulator is rounded to the output type, two
 * accumulators that differ by less than atol can round to neighbouring
 * values of the output type, one ulp apart: rtol = 2 u_out (one ulp of the
 * output type relative to the value) when K > 0, 0 otherwise.
 *
 * Precision flags.  An f32 dot with p bf16 passes has a relative product
 * error e(p): 1 pass rounds both operands to bf16, e = 2 * 2^-8; 3 passes
 * drop the lo*lo term, e = 2^-16 * 2 = 2^-15; 6 passes keep all but third-
 * order terms, e = 2^-23.  When the two sides use different passes the
 * tolerance widens by K T (e(p_a) + e(p_b)); with equal passes both sides
 * round identically and nothing widens.
 *
 * Elementwise-only outputs (K = 0) get atol = rtol = 0: the same device
 * computes them bit-identically whatever the tiling.
 */
#ifndef TUNE_CHECK_TOLERANCE_H
#define TUNE_CHECK_TOLERANCE_H

#include <stdint.h>

#include "compare.h"
#include "hlo_types.h"

typedef struct chk_tol_basis {
  hlo_etype out_type; /* the output's element type */
  hlo_etype acc_type; /* the accumulator's type (f32 for bf16/f16 reductions) */
  int64_t k;          /* accumulation length; 0 when the output has none */
  double term_max;    /* largest |term| accumulated (a dot: max|a| * max|b|) */
  int passes_a;       /* bf16 passes of side a's f32 dot; 0 = not an f32 dot */
  int passes_b;
} chk_tol_basis;

/* Unit roundoff of a float type (2^-24 for f32, 2^-8 for bf16, 2^-11 for
 * f16, 2^-53 for f64, per the mantissa width); 0 for non-float types. */
double chk_unit_roundoff(hlo_etype t);

chk_tol chk_tolerance(const chk_tol_basis *b);

#endif
