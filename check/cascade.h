/* cascade.h — judging one candidate of one fusion (paper §3.2.1).
 *
 * The cascade compares, cheapest first:
 *   1. the candidate with the default, leaf by leaf;
 *   2. the default with the reference, once per fusion (the caller does it
 *      once and passes the outcome in);
 *   3. the candidate with the reference, only when 1 found a divergence.
 * Attribution follows from the three:
 *   cand == default (bitwise)           match
 *   cand ~ default (within tolerance)   benign
 *   cand !~ default, cand ~ ref,  default !~ ref   mismatch-default
 *   cand !~ default, cand !~ ref, default ~ ref    mismatch-candidate
 *   cand !~ default, cand !~ ref, default !~ ref   mismatch-both
 *   cand !~ default, cand ~ ref,  default ~ ref    benign (both within the
 *       bound of the reference, just not of each other)
 * Nondeterminism is ruled out with a rerun under another jitter seed, which
 * the caller runs; judge.h puts the steps together for one candidate.
 */
#ifndef TUNE_CHECK_CASCADE_H
#define TUNE_CHECK_CASCADE_H

#include <stdbool.h>

#include "compare.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"
#include "tolerance.h"
#include "verdict.h"

/* How output leaf `leaf` of computation c must be compared: bitwise when its
 * producer (seen through data movement) is a parameter, a constant, a
 * min/max reduction, or when the type is not floating point; by tolerance
 * otherwise. */
chk_rule chk_leaf_rule(const hlo_computation *c, int leaf);

/* The instruction that produces output leaf `leaf` of c (leaves numbered
 * depth first through nested tuples, as hlo_shape_leaf does). */
const hlo_instr *chk_leaf_producer(const hlo_computation *c, int leaf);

/* The relative error r of the last rounding of output leaf `leaf` of c on
 * one side: the leaf's value y~ lies within r |y~| of the exact result of
 * the op that produces it (seen through data movement, converts and the
 * ops that pick one of their operands), applied to that side's own
 * operands.  u_t of the leaf's type t for an op the device rounds
 * correctly; for one of the device's approximations of E ulps
 * (hlo_num_ulp_bound), 2 E u_f32 / (1 - 2 E u_f32), plus u_t (1 + that)
 * when the f32 result is then rounded to a narrower t.  Two sides whose
 * operands differ only by a reordered sum may then differ by the change of
 * the exact op (what check/accum.h measures) plus r |y~_a| + r |y~_b|: the
 * tolerance's rtol is 2 r.  0 for a leaf that is not floating point. */
double chk_leaf_round_rel(const hlo_computation *c, int leaf);

/* Does leaf `leaf` of c depend on instruction `hero` (so the hero's
 * accumulation length applies to its tolerance)? */
bool chk_leaf_depends_on(const hlo_computation *c, int leaf, const hlo_instr *hero);

/* Per-leaf tolerance bases for a fusion: filled by the caller from the
 * fusion analysis and the reference probe. */
typedef struct chk_leaf_check {
  chk_rule rule;
  chk_tol tol;
  const double *atol_map; /* per-element atol added to tol.atol, or NULL */
  bool checked;           /* false when --ops excluded this leaf's op */
} chk_leaf_check;

/* Compares every leaf of a (actual) with b (expected) under checks[leaf]
 * (nchecks rules: exactly one per leaf, or the call fails);
 * returns the index of the worst leaf (most mismatches, then largest
 * max_abs) with its metrics in *worst, and sets *identical when every leaf
 * is bitwise equal and *within when no leaf has a mismatch.  -1 with err
 * when the values cannot be compared. */
int chk_compare_values(const hlo_value *a, const hlo_value *b, const chk_leaf_check *checks, int nchecks,
                       chk_metrics *worst, bool *identical, bool *within, hlo_error *err);

/* The attribution table above; cand_vs_default_within is the result of
 * step 1 (false means divergent). */
chk_verdict chk_attribute(bool identical, bool cand_vs_default_within, bool cand_vs_ref_within,
                          bool default_vs_ref_within);

#endif
