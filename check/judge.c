/* judge.c — the cascade's verdict for one candidate (judge.h). */
#include "judge.h"

#include <stdio.h>

void chk_judge_candidate(const chk_tol_plan *p, const chk_tol_side *cand, const chk_tol_side *exp,
                         const hlo_value *out, const hlo_value *expected, chk_judgement *j) {
  chk_leaf_check checks[256];
  hlo_error err;
  bool identical, within;
  j->rerun = false;
  if (chk_tol_plan_checks(p, cand, exp, checks, &j->unverifiable) != 0) {
    /* the host's memory, not the config: a tool error (issue 11 bug 6) */
    chk_tol_plan_free_maps(p, checks);
    j->verdict = CHK_VERDICT_TOOL_ERROR;
    snprintf(j->message, sizeof j->message, "out of memory while deriving the tolerance");
    return;
  }
  int leaf = chk_compare_values(out, expected, checks, p->nleaves, &j->vs_default, &identical, &within, &err);
  if (leaf < 0) {
    chk_tol_plan_free_maps(p, checks);
    j->verdict = CHK_VERDICT_RUNTIME_ERROR;
    snprintf(j->message, sizeof j->message, "output cannot be compared: %.400s", err.msg);
    return;
  }
  j->leaf = leaf;
  j->tol = chk_tol_plan_effective(p, leaf, &checks[leaf]);
  chk_tol_plan_free_maps(p, checks);
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
  chk_leaf_check checks[256];
  if (chk_tol_plan_checks(p, cand, ref, checks, NULL) != 0) {
    chk_tol_plan_free_maps(p, checks);
    j->verdict = CHK_VERDICT_TOOL_ERROR;
    snprintf(j->message, sizeof j->message, "out of memory while deriving the tolerance");
    return;
  }
  hlo_error err;
  bool identical, within;
  int leaf = chk_compare_values(out, p->reference, checks, p->nleaves, &j->vs_reference, &identical, &within, &err);
  chk_tol_plan_free_maps(p, checks);
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
  chk_leaf_check checks[256];
  j->rerun = false;
  if (chk_tol_plan_checks(p, dflt, ref, checks, &j->unverifiable) != 0) {
    chk_tol_plan_free_maps(p, checks);
    return hlo_error_set(err, 0, 0, "out of memory while deriving the tolerance");
  }
  bool identical, within;
  int leaf = chk_compare_values(out, p->reference, checks, p->nleaves, &j->vs_reference, &identical, &within, err);
  if (leaf < 0) {
    chk_tol_plan_free_maps(p, checks);
    return -1;
  }
  j->has_vs_reference = true;
  j->leaf = leaf;
  j->tol = chk_tol_plan_effective(p, leaf, &checks[leaf]);
  for (int i = 0; output_tol && i < p->nleaves; i++)
    output_tol[i] = checks[i].checked ? chk_tol_plan_effective(p, i, &checks[i]) : (chk_tol){0, 0};
  chk_tol_plan_free_maps(p, checks);
  j->verdict = within ? (identical ? CHK_VERDICT_MATCH : CHK_VERDICT_BENIGN) : CHK_VERDICT_MISMATCH_DEFAULT;
  j->rerun = !within;
  return 0;
}
