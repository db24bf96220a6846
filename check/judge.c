/* judge.c — the cascade's verdict for one candidate (judge.h). */
#include "judge.h"

#include <stdio.h>

/* out against expected, with the checks of a comparison between sides a
 * and b (*vacuous as chk_tol_plan_checks sets it; may be NULL): the
 * worst leaf's metrics into *m, its effective tolerance into *tol and each
 * checked leaf's into output_tol[0..nleaves) (either may be NULL).
 * Returns the worst leaf; -1 when memory ran out deriving the tolerance;
 * -2 when the outputs cannot be compared (err says why). */
static int compare(const chk_tol_plan *p, const chk_tol_side *a, const chk_tol_side *b, const hlo_value *out,
                   const hlo_value *expected, bool *vacuous, chk_metrics *m, bool *identical, bool *within,
                   chk_tol *tol, chk_tol *output_tol, hlo_error *err) {
  chk_leaf_check checks[256];
  if (chk_tol_plan_checks(p, a, b, checks, vacuous) != 0) {
    chk_tol_plan_free_maps(p, checks);
    return -1;
  }
  int leaf = chk_compare_values(out, expected, checks, p->nleaves, m, identical, within, err);
  if (leaf >= 0 && tol)
    *tol = chk_tol_plan_effective(p, leaf, &checks[leaf]);
  for (int i = 0; leaf >= 0 && output_tol && i < p->nleaves; i++)
    output_tol[i] = checks[i].checked ? chk_tol_plan_effective(p, i, &checks[i]) : (chk_tol){0, 0};
  chk_tol_plan_free_maps(p, checks);
  return leaf >= 0 ? leaf : -2;
}

void chk_judge_candidate(const chk_tol_plan *p, const chk_tol_side *cand, const chk_tol_side *exp,
                         const hlo_value *out, const hlo_value *expected, chk_judgement *j) {
  hlo_error err;
  bool identical, within;
  j->rerun = false;
  chk_tol tol;
  int leaf = compare(p, cand, exp, out, expected, &j->unverifiable, &j->vs_default, &identical, &within, &tol, NULL,
                     &err);
  if (leaf == -1) {
    /* the host's memory, not the config: a tool error (issue 11 bug 6) */
    j->verdict = CHK_VERDICT_TOOL_ERROR;
    snprintf(j->message, sizeof j->message, "out of memory while deriving the tolerance");
    return;
  }
  if (leaf < 0) {
    j->verdict = CHK_VERDICT_RUNTIME_ERROR;
    snprintf(j->message, sizeof j->message, "output cannot be compared: %.400s", err.msg);
    return;
  }
  j->leaf = leaf;
  j->tol = tol;
  if (identical || within)
    j->verdict = chk_attribute(identical, within, true, true);
  else
    j->rerun = true;
}

void chk_judge_rerun(const chk_tol_plan *p, const chk_tol_side *cand, const chk_tol_side *ref, const hlo_value *out,
                     const hlo_value *rerun, const char *rerun_message, bool has_default, bool default_within,
                     chk_judgement *j) {
  j->rerun = false;
  if (chk_judge_nondeterministic(out, rerun, rerun_message, j))
    return;
  hlo_error err;
  bool identical, within;
  int leaf = compare(p, cand, ref, out, p->reference, NULL, &j->vs_reference, &identical, &within, NULL, NULL, &err);
  if (leaf == -1) {
    j->verdict = CHK_VERDICT_TOOL_ERROR;
    snprintf(j->message, sizeof j->message, "out of memory while deriving the tolerance");
    return;
  }
  j->has_vs_reference = leaf >= 0;
  j->verdict = has_default ? chk_attribute(false, false, leaf >= 0 && within, default_within)
                           : CHK_VERDICT_MISMATCH_CANDIDATE;
}

bool chk_judge_nondeterministic(const hlo_value *out, const hlo_value *rerun, const char *rerun_message,
                                chk_judgement *j) {
  if (rerun && hlo_value_equal(out, rerun))
    return false;
  j->rerun = false;
  j->verdict = CHK_VERDICT_NONDETERMINISTIC;
  if (!rerun)
    snprintf(j->message, sizeof j->message, "rerun with another timing seed failed: %.400s", rerun_message);
  else
    snprintf(j->message, sizeof j->message, "rerun with another timing seed gave different output");
  return true;
}

int chk_judge_default(const chk_tol_plan *p, const chk_tol_side *dflt, const chk_tol_side *ref, const hlo_value *out,
                      chk_tol *output_tol, chk_judgement *j, hlo_error *err) {
  j->rerun = false;
  bool identical, within;
  chk_tol tol;
  int leaf = compare(p, dflt, ref, out, p->reference, &j->unverifiable, &j->vs_reference, &identical, &within, &tol,
                     output_tol, err);
  if (leaf == -1)
    return hlo_error_set(err, 0, 0, "out of memory while deriving the tolerance");
  if (leaf < 0)
    return -1;
  j->has_vs_reference = true;
  j->leaf = leaf;
  j->tol = tol;
  j->verdict = within ? (identical ? CHK_VERDICT_MATCH : CHK_VERDICT_BENIGN) : CHK_VERDICT_MISMATCH_DEFAULT;
  j->rerun = !within;
  return 0;
}
