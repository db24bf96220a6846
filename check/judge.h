/* judge.h — the cascade (cascade.h) applied to the default and to each
 * candidate that ran.
 *
 * The caller runs the device; check/ decides.  Judging takes up to two
 * questions, because ruling out nondeterminism needs the device again:
 *   1. chk_judge_candidate compares the candidate's output with the
 *      expected one (the default's, or the reference's when the default
 *      did not run or was set aside).  A match, a benign difference or a
 *      failure to compare is a verdict; a divergence is not yet one
 *      (rerun set): the caller reruns the candidate with another timing
 *      seed.
 *   2. chk_judge_rerun takes that rerun's output: a different (or no)
 *      output is nondeterminism; the same output is compared with the
 *      reference, and the attribution table of cascade.h says whose
 *      mismatch it is.
 * A rerun the host could not run (its own failure, not the candidate's) is
 * the caller's tool error and no question for check/.
 */
#ifndef TUNE_CHECK_JUDGE_H
#define TUNE_CHECK_JUDGE_H

#include <stdbool.h>

#include "cascade.h"
#include "compare.h"
#include "hlo/hlo_value.h"
#include "tol_plan.h"
#include "verdict.h"

/* What judging found.  The caller fills it first with what it already
 * holds for the candidate (a fresh result: leaf 0, zero metrics with
 * peak_index -1, an empty message); each call updates only what its step
 * decides, so a failed step leaves the rest as it was. */
typedef struct chk_judgement {
  chk_verdict verdict;
  bool rerun;               /* set by step 1: divergent, verdict pending */
  int leaf;                 /* the output leaf the metrics describe */
  chk_tol tol;              /* the tolerance that leaf was compared with */
  bool unverifiable;        /* tol admits any output of an accumulation */
  chk_metrics vs_default;   /* the worst leaf vs the expected output */
  bool has_vs_reference;
  chk_metrics vs_reference;
  char message[512];        /* why, for a verdict that needs saying */
} chk_judgement;

/* Step 1: out (the candidate, computed by side cand) against expected
 * (computed by side exp: the default, or the plan's reference side). */
void chk_judge_candidate(const chk_tol_plan *p, const chk_tol_side *cand, const chk_tol_side *exp,
                         const hlo_value *out, const hlo_value *expected, chk_judgement *j);

/* Step 2, after step 1 set rerun: rerun is the candidate's output under
 * another timing seed (NULL when that run failed, rerun_message saying
 * why).  When it equals out, out is compared with the plan's reference
 * (computed by side ref) and attributed: has_default says whether candidates were compared with
 * a default, default_within whether that default is within the
 * reference's bound. */
void chk_judge_rerun(const chk_tol_plan *p, const chk_tol_side *cand, const chk_tol_side *ref, const hlo_value *out,
                     const hlo_value *rerun, const char *rerun_message, bool has_default, bool default_within,
                     chk_judgement *j);

/* Cascade step 2, once per fusion: the default's output out (computed by
 * side dflt) against the plan's reference (side ref).  Within the
 * reference's bound it is a match or benign; otherwise mismatch-default
 * with rerun set, because a racy default is nondeterministic rather than
 * wrong: the caller reruns it and asks chk_judge_nondeterministic.  Sets
 * leaf, tol, unverifiable and vs_reference; output_tol[0..nleaves) (may
 * be NULL) gets each checked leaf's effective tolerance, 0 for a leaf
 * --ops leaves out.  0, or -1 with err when memory ran out deriving the
 * tolerance or the outputs cannot be compared: then nothing of the fusion
 * can be judged. */
int chk_judge_default(const chk_tol_plan *p, const chk_tol_side *dflt, const chk_tol_side *ref, const hlo_value *out,
                      chk_tol *output_tol, chk_judgement *j, hlo_error *err);

/* Whether a rerun under another timing seed gave out again.  When it did
 * not (rerun NULL: it failed, rerun_message saying why), j becomes
 * nondeterministic with the reason, and true is returned. */
bool chk_judge_nondeterministic(const hlo_value *out, const hlo_value *rerun, const char *rerun_message,
                                chk_judgement *j);

#endif
