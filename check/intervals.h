/* intervals.h — backward interval analysis: the values each entry parameter
 * may take so that no op of the module leaves its domain (paper §3.2.1).
 *
 * Random inputs break isolated kernels in boring ways: rsqrt of a negative,
 * a zero divisor, exp of a large sum.  The NaN and Inf that result invent
 * mismatches (NaN != NaN) and hide real ones (Inf == Inf).  This pass asks,
 * for every op, what its operands must satisfy for its result to be finite
 * and to lie within what its consumers demand, and pushes those demands
 * from the root back to the parameters:
 *
 *   log, rsqrt          argument >= CHK_POS_MIN (log(x), rsqrt(x) stay O(1))
 *   sqrt, log1p         argument >= 0, >= -1 + CHK_POS_MIN
 *   divide, remainder   divisor magnitude >= 0.5, sign kept random
 *   exp, expm1, power   argument <= ln(what the consumer accepts), base > 0
 *   sine, cosine        |argument| <= 2^24 (where f32 angles still mean one)
 *   convert             within the destination type's finite range
 *   reduce (add)        each of the K terms gets the sum's demand / K
 *   reduce (multiply)   each of the K factors |x| <= demand^(1/K)
 *   dot, convolution    each factor gets sqrt(demand / K)
 *   add, subtract       a demand is split in halves between two varying
 *                       operands, or shifted exactly past a fixed one
 *   multiply            signs and magnitudes split (squares are >= 0 free)
 *   reduce init         a parameter init value must be the reducer's neutral
 *                       element (0 for add, 1 for multiply, lowest for max,
 *                       all ones for a bitwise and); each init of a
 *                       variadic reduction its part's (argmax: the lowest
 *                       value, and the largest index when the smaller
 *                       index wins ties)
 *   sort                the operands the comparator compares are keys
 *   mask factors        a factor of a value that may hold a constant's -inf
 *                       (or +inf) — a mask padded or selected in — is
 *                       >= CHK_POS_MIN, so that products stay the mask's
 *                       infinity: 0 * inf and, in a dot or convolution,
 *                       -inf * w1 + -inf * w2 with w1 > 0 > w2 are NaN the
 *                       inputs made, not the mask.  Against infinities of
 *                       both signs an elementwise factor only needs
 *                       |x| >= CHK_POS_MIN.
 *
 * Demands are sufficient conditions, computed with forward ranges of the
 * other operands (interval arithmetic from the default input ranges), so a
 * demand that already holds costs nothing: a softmax denominator is a sum
 * of exp terms that the forward pass already knows to be positive.
 *
 * One forward and one backward pass per computation, each linear in its
 * instructions; called computations (fusions, calls) are analysed once per
 * call site with the ranges of that site.  Demands on values that do not
 * depend on parameters (constants, iota) are dropped: they are what they
 * are, and a -inf mask is the intent analysis's business (intent.h).
 */
#ifndef TUNE_CHECK_INTERVALS_H
#define TUNE_CHECK_INTERVALS_H

#include <stdbool.h>

#include "hlo/hlo.h"

/* The smallest value a positive-domain argument gets (log, rsqrt). */
#define CHK_POS_MIN 0x1p-4
/* The largest sine or cosine argument magnitude. */
#define CHK_TRIG_MAX 0x1p24
/* The smallest divisor magnitude. */
#define CHK_DIVISOR_MIN 0.5

/* What one parameter's elements must satisfy: lo <= x <= hi, |x| >= min_mag
 * (min_mag 0: no such demand).  lo == hi is a point (a neutral init value).
 * sort_key: the parameter is (through moves and negations) a key operand
 * of a sort (profiles choose distinct keys or deliberate ties). */
typedef struct chk_range {
  double lo, hi, min_mag;
  bool sort_key;
} chk_range;

/* The range that demands nothing. */
chk_range chk_range_any(void);
bool chk_range_is_any(const chk_range *r);

/* The largest magnitude a float of type t is asked to stay under: the
 * type's largest finite value, divided by 16 for types of 16 bits or more
 * (headroom for what the analysis does not model).  INFINITY for others. */
double chk_intervals_cap(hlo_etype t);

/* Fills out[k] for each entry parameter k (m->entry->nparams entries).
 * Tuple parameters get chk_range_any().  The forward ranges start from what
 * parameters are drawn from before any demand: the naive ranges, or with
 * `wide` (the EDGE profile, whose float draws reach the headroom cap
 * wherever no demand bounds them) [-cap, cap] for floats, so that a sum
 * or a square of two unbounded parameters is bounded too.  0, or -1 when
 * out of memory (out then holds chk_range_any() everywhere). */
int chk_intervals_analyze(const hlo_module *m, bool wide, chk_range *out);

#endif
