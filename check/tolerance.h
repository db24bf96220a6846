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
 *
 * Per-element bounds (check/accum.h).  The formula above, with K T + init
 * in place of sum|t_i|, is what chk_tolerance computes for one whole
 * output.  The sweep uses instead, for every float accumulation of the
 * fusion (each add-reduce and each dot, not only the hero) and every one of
 * its output elements e, the reference's own sum of the absolute values of
 * e's terms, S_e = sum|t_i| (for a dot, sum|a_i b_i|): the bound is
 * G S_e with the coefficient
 *
 *     G = g(d_a) + g(d_b)  [+ e(p_a) + e(p_b) when the passes differ]
 *
 * from chk_tol_coef.  S_e is usually far below K T: a term as large as the
 * largest is rare, and one output row's terms need not resemble another's.
 *
 * The criterion, g(d).  Three are available (tune --tolerance):
 *
 *   worst-case     g(d) = gamma_d, the rigorous bound above: it holds for
 *                  every input and every rounding, and assumes every
 *                  rounding error has the largest size u and the same sign.
 *
 *   probabilistic  g(d) = min(gamma_d, gamma~_d(lambda)) with
 *                  gamma~_d(lambda) = exp(lambda sqrt(d) u + d u^2/(1-u)) - 1
 *                  (Higham and Mary, "A new approach to probabilistic
 *                  rounding error analysis", SIAM J. Sci. Comput. 41(5),
 *                  2019, Theorem 2.4 and §3): when the rounding errors are
 *                  independent, mean-zero random variables, a sum of K
 *                  terms in which every term takes at most d roundings is
 *                  within gamma~_d(lambda) sum|t_i| of the exact sum with
 *                  probability at least 1 - 2 K exp(-lambda^2 (1-u)^2 / 2).
 *                  lambda is chosen per accumulation from its K so that this
 *                  failure probability is at most CHK_TOL_FAILURE = 1e-16 per
 *                  output element: lambda = sqrt(2 ln(2 K / 1e-16)) / (1 - u),
 *                  8.9 for K = 64, 9.6 for K = 4096.  A daily sweep compares
 *                  some 1e9 elements, so the chance of one false alarm from
 *                  this bound in a whole sweep stays below 1e-6.
 *                  Independence fails when the terms are so small against the
 *                  running sum that they round the same way every time
 *                  (stagnation: d u near 1); the probabilistic bound is
 *                  therefore used only while d u <= 1/64 (an f32 sum of up
 *                  to 2^18 terms, never a long bf16 one) and the rigorous
 *                  gamma_d beyond.  Where d < lambda^2 the rigorous bound is
 *                  the smaller one and is kept: the min above.
 *
 *   noise-floor    (the default) the probabilistic g(d), lowered per
 *                  accumulation to what its actual terms show: the probe
 *                  (accum.h) sums each f32 accumulation's terms exactly (f64)
 *                  and in f32 in several legitimate orders, and rho is the
 *                  largest |f32 order - exact| / (g_K,K S_e) over its
 *                  elements, g_K,K = g(K) + g(K) the probabilistic
 *                  coefficient of two K-deep orders.  The order part of
 *                  every comparison's coefficient becomes
 *                      min(g(d_a) + g(d_b), c g_K,K),
 *                      c = min(1, max(CHK_NOISE_K rho, CHK_NOISE_MIN)).
 *                  This is PyTorch's same() idea (an error against an f64
 *                  value judged against the reference's own error) made
 *                  per element: S_e carries each element's scale, rho the
 *                  cancellation and structure of the data, which the
 *                  a-priori bound must assume away (it takes every
 *                  rounding error as large as u S_e, while mixed signs keep
 *                  partial sums near sqrt(K) of that).
 *                  CHK_NOISE_K = 8: two sides each at most the largest
 *                  measured order's error give 2; the other factor 4 covers
 *                  orders not measured (other chunk sizes, the tile's own
 *                  pack).  Its false-alarm rate is measured, not derived:
 *                  README "Comparison rules" gives the runs (every
 *                  candidate of the datasets, the mutation harness's
 *                  legitimate variations).
 *                  CHK_NOISE_MIN = 1/256 keeps an allowance where the
 *                  measured orders happen to agree with the exact sum.
 *                  Unmeasured accumulations (bf16 or f64 ones, reducers
 *                  other than add) keep c = 1: the probabilistic bound.
 *                  No failure probability can be stated for it: it is
 *                  as good as the measured orders resemble the device's.
 *
 * The bf16 pass error e(p) of an f32 dot stays rigorous in all criteria:
 * it is a per-product bound, and it widens by e(p) S_e per element, not
 * by e(p) K T.
 */
#ifndef TUNE_CHECK_TOLERANCE_H
#define TUNE_CHECK_TOLERANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "compare.h"
#include "hlo/hlo_types.h"

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

/* Which g(d) of the per-element bound (see above); the zero value is the
 * default. */
typedef enum chk_tol_criterion { CHK_TOL_NOISE_FLOOR = 0, CHK_TOL_PROBABILISTIC, CHK_TOL_WORST_CASE } chk_tol_criterion;

/* The failure probability per output element of the probabilistic bound. */
#define CHK_TOL_FAILURE 1e-16

/* g(d) for a sum of k terms with unit roundoff u under criterion c; +inf
 * when no finite bound exists; d <= 0 stands for d = k (an unknown order). */
double chk_tol_g(chk_tol_criterion c, int64_t d, int64_t k, double u);

/* The relative product error e(p) of an f32 dot taking p bf16 passes (1,
 * 3 or 6); 0 for p = 0 (not an f32 dot). */
double chk_pass_error(int passes);

/* The coefficient G of the per-element bound G S_e between a side with
 * depth d_a and passes p_a and one with d_b and p_b, for a sum of k terms
 * accumulated with unit roundoff u. */
double chk_tol_coef(chk_tol_criterion c, double u, int64_t k, int64_t d_a, int64_t d_b, int p_a, int p_b);

/* The noise-floor scale c of one output leaf from its measured rho
 * (accum.h: chk_accums_leaf_noise; negative when unmeasured):
 * min(1, max(CHK_NOISE_K rho, CHK_NOISE_MIN)), and 1 when unmeasured. */
#define CHK_NOISE_K 8.0
#define CHK_NOISE_MIN (1.0 / 256)
double chk_tol_noise_scale(double rho);

/* "worst-case", "probabilistic" or "noise-floor"; chk_tol_criterion_parse returns 0 and
 * sets *c, or -1 for another name. */
const char *chk_tol_criterion_name(chk_tol_criterion c);
int chk_tol_criterion_parse(const char *name, chk_tol_criterion *c);

#endif
