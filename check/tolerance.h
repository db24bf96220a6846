/* tolerance.h — deriving the tolerance of one output from what produced it.
 *
 * Two configs of one device compute the same fused ops with the same
 * numerics; what legitimately differs is the order of accumulation (tile
 * and chunk shapes, pack factors, split reductions) and, when a precision
 * flag differs, how many bf16 passes an f32 dot takes.  The tolerance bounds
 * exactly those differences and nothing else, so anything beyond it is a
 * finding.
 *
 * Reordering.  A sum of terms t_i (the K elements, and a reduce's init
 * value) computed in a format with unit roundoff u, in a summation tree in
 * which every term passes through at most d roundings, satisfies
 * |s_hat - s| <= gamma_d sum|t_i| with gamma_d = d u / (1 - d u) when
 * d u < 1 (Higham, Accuracy and Stability of Numerical Algorithms, §4.2;
 * rigorous, no O(u^2) dropped).  Two computations a and b of the same sum
 * differ by at most (gamma_{d_a} + gamma_{d_b}) S with
 * S = K T + |init| >= sum|t_i|, T the largest |t_i|.  That is the absolute
 * part:
 *
 *     atol = (gamma_{d_a} + gamma_{d_b}) (K T + init_abs)
 *
 * d comes from the order each side actually uses: a device config's from
 * dev_accum_depth (tuner/device/dev_accum.h: about K/P + P + nk for pack P
 * and nk chunks), the reference's from its documented sequential order
 * (check/eval_reduce.c: the init, then the K terms one at a time, d = K;
 * a dot from 0, d = K - 1).  A side whose order is unknown (depth 0 here:
 * an external backend, a hero the device materialises whole) gets d = K,
 * which holds for every order of K terms and an init.
 *
 * Vacuous bounds.  When d u >= 1 for either side (a bf16 sum of more than
 * 256 terms one at a time) gamma_d has no finite value: atol is +inf.  When
 * atol >= S the check accepts even an output of 0 for every element, so it
 * cannot see a wrong accumulation at all: chk_tolerance_vacuous says so, and
 * the sweep reports such an output as unverifiable rather than ok.
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

#include <stdbool.h>
#include <stdint.h>

#include "compare.h"
#include "hlo_types.h"

typedef struct chk_tol_basis {
  hlo_etype out_type; /* the output's element type */
  hlo_etype acc_type; /* the accumulator's type (f32 for bf16/f16 reductions) */
  int64_t k;          /* accumulation length; 0 when the output has none */
  double term_max;    /* largest |term| accumulated (a dot: max|a| * max|b|) */
  double init_abs;    /* |init value| of a reduce (a term too); 0 for a dot */
  int passes_a;       /* bf16 passes of side a's f32 dot; 0 = not an f32 dot */
  int passes_b;
  int64_t depth_a;    /* most roundings a term takes on side a (dev_accum.h); */
  int64_t depth_b;    /* 0 = order unknown: K is used */
} chk_tol_basis;

/* Unit roundoff of a float type (2^-24 for f32, 2^-8 for bf16, 2^-11 for
 * f16, 2^-53 for f64, per the mantissa width); 0 for non-float types. */
double chk_unit_roundoff(hlo_etype t);

/* gamma_d = d u / (1 - d u); +inf when d u >= 1. */
double chk_gamma(int64_t d, double u);

chk_tol chk_tolerance(const chk_tol_basis *b);

/* true when t (from chk_tolerance(b)) admits any output of the
 * accumulation: atol >= K T + init_abs, the largest |exact sum|, so even an
 * all-zero output would pass.  false without an accumulation (K = 0) or
 * for a non-float output. */
bool chk_tolerance_vacuous(const chk_tol_basis *b, chk_tol t);

#endif
