/* report_md.c — the Markdown report: findings ready to paste into a
 * compiler bug tracker.
 *
 * A bug report is acted on when it carries everything needed to see the
 * failure without asking (paper §5.2.1): what was compiled, with which
 * config, what "wrong" means (the tolerance), how wrong (the metrics), a
 * command that shows it, and the files to attach.  So each fusion with a
 * divergence gets a section with a table of all its divergent candidates
 * and, for the worst few, a self-contained block with exactly that.
 * Fusions without a divergence get one line each at the end: they are
 * evidence of coverage, not findings.
 *
 * GitHub-flavoured Markdown: pipes in table cells are escaped, code spans
 * use a fence longer than any backtick run inside them.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* Blocks with full detail per fusion; the table lists every one. */
enum { DETAILED = 5 };

/* s as a code span.  In a table cell a pipe would end the cell even
 * inside backticks, so it is escaped there; newlines become spaces. */
static void md_code_in(FILE *f, const char *s, bool cell) {
  int run = 0, longest = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    longest = run > longest ? run : longest;
  }
  bool pad = s[0] == '`' || (s[0] && s[strlen(s) - 1] == '`');
  for (int i = 0; i <= longest; i++)
    fputc('`', f);
  if (pad)
    fputc(' ', f);
  for (const char *p = s; *p; p++) {
    if (*p == '\n' || *p == '\r')
      fputc(' ', f);
    else if (*p == '|' && cell)
      fputs("\\|", f);
    else
      fputc(*p, f);
  }
  if (pad)
    fputc(' ', f);
  for (int i = 0; i <= longest; i++)
    fputc('`', f);
}

static void md_code(FILE *f, const char *s) { md_code_in(f, s, false); }
static void md_cell_code(FILE *f, const char *s) { md_code_in(f, s, true); }

/* Plain text with Markdown's active characters escaped (messages). */
static void md_text(FILE *f, const char *s) {
  for (const char *p = s; *p; p++) {
    if (*p == '\n' || *p == '\r')
      fputc(' ', f);
    else if (strchr("\\`*_[]<>|#~", *p))
      fprintf(f, "\\%c", *p);
    else
      fputc(*p, f);
  }
}

static const char *verdict_meaning(chk_verdict v) {
  switch (v) {
  case CHK_VERDICT_MISMATCH_CANDIDATE:
    return "this config's output disagrees with the default config's, beyond the tolerance";
  case CHK_VERDICT_MISMATCH_DEFAULT:
    return "the default config's output disagrees with the reference evaluator; this config agrees with it";
  case CHK_VERDICT_MISMATCH_BOTH: return "both this config's and the default config's outputs disagree with the reference evaluator";
  case CHK_VERDICT_RUNTIME_ERROR: return "the kernel failed at run time";
  case CHK_VERDICT_NONDETERMINISTIC: return "two runs of this config on the same input gave different outputs";
  default: return "";
  }
}

/* "mismatch-candidate x3, runtime-error x1" */
static void verdict_summary(FILE *f, const tn_fusion_result *r, bool divergent_only) {
  bool first = true;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++) {
    if (!r->verdict_counts[v] || (divergent_only && !chk_verdict_is_divergent((chk_verdict)v)))
      continue;
    fprintf(f, "%s%s ×%" PRId64, first ? "" : ", ", chk_verdict_name((chk_verdict)v), r->verdict_counts[v]);
    first = false;
  }
  if (first)
    fputs("none", f);
}

static void run_header(FILE *f, const tn_report_input *in) {
  const tn_run_info *run = &in->run->info;
  fputs("# tune divergence report\n\n| | |\n|---|---|\n", f);
  fputs("| results file | ", f);
  md_cell_code(f, in->results_path ? in->results_path : "");
  fputs(" |\n| run | ", f);
  md_cell_code(f, run->id);
  /* Every stored field is the file's, not ours: escaped like any text. */
  fputs(" (", f);
  md_text(f, run->status);
  fputs("; started ", f);
  md_text(f, run->started);
  if (run->finished[0]) {
    fputs(", finished ", f);
    md_text(f, run->finished);
  }
  fputs(") |\n", f);
  fputs("| machine | ", f);
  md_cell_code(f, run->machine);
  fputs(" |\n| compiler | ", f);
  md_cell_code(f, run->compiler);
  if (run->defects_unknown[0]) {
    fputs(" |\n| defects not recognised | ", f);
    md_cell_code(f, run->defects_unknown);
  }
  fprintf(f, " |\n| seed | %" PRIu64 " |\n| command | ", run->seed);
  md_cell_code(f, run->command);
  fputs(" |\n| host | ", f);
  md_cell_code(f, run->host);
  fputs(" |\n", f);
  if (in->tool_version && in->tool_version[0]) {
    fputs("| written by | tune ", f);
    md_text(f, in->tool_version);
    fputs(" |\n", f);
  }
  fputc('\n', f);
}

static void num_cell(FILE *f, double x) { fprintf(f, " %.6g |", x); }

/* One row of the metrics table, for each side that was compared. */
static void metrics_table(FILE *f, const tn_cand_result *c) {
  const chk_metrics *d = &c->vs_default, *r = c->has_vs_reference ? &c->vs_reference : NULL;
  char a[160], b[160];
  fputs(r ? "| metric | vs the default | vs the reference |\n|---|---|---|\n" : "| metric | vs the default |\n|---|---|\n",
        f);
  fprintf(f, "| mismatches | %" PRId64 " of %" PRId64 " |", d->mismatches, d->count);
  if (r)
    fprintf(f, " %" PRId64 " of %" PRId64 " |", r->mismatches, r->count);
  fputs("\n| max abs error |", f);
  num_cell(f, d->max_abs);
  if (r)
    num_cell(f, r->max_abs);
  fputs("\n| max rel error |", f);
  num_cell(f, d->max_rel);
  if (r)
    num_cell(f, r->max_rel);
  fprintf(f, "\n| max ULP distance | %" PRIu64 " |", d->max_ulp);
  if (r)
    fprintf(f, " %" PRIu64 " |", r->max_ulp);
  fputs("\n| RMS error |", f);
  num_cell(f, d->rms);
  if (r)
    num_cell(f, r->rms);
  fprintf(f, "\n| NaN / Inf mismatches | %" PRId64 " / %" PRId64 " |", d->nan_mismatches, d->inf_mismatches);
  if (r)
    fprintf(f, " %" PRId64 " / %" PRId64 " |", r->nan_mismatches, r->inf_mismatches);
  tn_rep_peak(a, sizeof a, d);
  fprintf(f, "\n| peak error at | `%s` (flat %" PRId64 ") |", a, d->peak_index);
  if (r) {
    tn_rep_peak(b, sizeof b, r);
    fprintf(f, " `%s` (flat %" PRId64 ") |", b, r->peak_index);
  }
  tn_rep_bbox(a, sizeof a, d);
  fprintf(f, "\n| mismatch bounding box | `%s` |", a);
  if (r) {
    tn_rep_bbox(b, sizeof b, r);
    fprintf(f, " `%s` |", b);
  }
  fprintf(f, "\n| this config: min / max / mean | %.6g / %.6g / %.6g |", d->a.min, d->a.max, d->a.mean);
  if (r)
    fprintf(f, " %.6g / %.6g / %.6g |", r->a.min, r->a.max, r->a.mean);
  fprintf(f, "\n| expected: min / max / mean | %.6g / %.6g / %.6g |", d->b.min, d->b.max, d->b.mean);
  if (r)
    fprintf(f, " %.6g / %.6g / %.6g |", r->b.min, r->b.max, r->b.mean);
  fputs("\n\n", f);
}

/* Expected and actual values around the peak of c's error map, when the
 * results file has them: equal cells once, differing ones as
 * "expected → actual", the peak in bold. */
static void peak_values(FILE *f, const tn_fusion_result *r, const tn_cand_result *c) {
  const tn_error_map *e = NULL;
  const tn_peak_window *w = tn_rep_window(r, c, &e);
  if (!w)
    return;
  char axes[96], ev[40], av[40];
  tn_rep_window_axes(axes, sizeof axes, e);
  fputs("- **Expected → actual around the peak** `[", f);
  for (int d = 0; d < e->rank; d++)
    fprintf(f, "%s%" PRId64, d ? "," : "", w->peak[d]);
  fprintf(f, "]` (%s):\n\n  | |", axes);
  for (int j = 0; j < w->cols; j++)
    fprintf(f, " %" PRId64 " |", tn_rep_window_col(e, j));
  fputs("\n  |---:|", f);
  for (int j = 0; j < w->cols; j++)
    fputs("---:|", f);
  for (int i = 0; i < w->rows; i++) {
    int64_t row = tn_rep_window_row(e, i);
    fprintf(f, "\n  | %" PRId64 " |", row);
    for (int j = 0; j < w->cols; j++) {
      tn_rep_window_cell(ev, av, sizeof ev, w, i, j);
      bool peak = (e->rank < 2 || row == w->peak[e->rank - 2]) &&
                  (e->rank < 1 || tn_rep_window_col(e, j) == w->peak[e->rank - 1]);
      const char *b = peak ? "**" : "";
      if (strcmp(ev, av) != 0)
        fprintf(f, " %s%s → %s%s |", b, ev, av, b);
      else
        fprintf(f, " %s%s%s |", b, ev, b);
    }
  }
  fputs("\n\n", f);
}

static void finding(FILE *f, const tn_report_input *in, const tn_stored_fusion *sf, const tn_cand_result *c) {
  const tn_fusion_result *r = &sf->r;
  char cmd[4096], dir[256], t[32];
  fprintf(f, "#### Candidate %d: ", c->id);
  md_code(f, c->config);
  fprintf(f, "\n\n- **Verdict:** %s — %s", chk_verdict_name(c->verdict), verdict_meaning(c->verdict));
  if (c->message[0]) {
    fputs(": ", f);
    md_text(f, c->message);
  }
  fputs("\n- **Fusion:** ", f);
  md_code(f, r->name);
  fputs(" (hero ", f);
  md_code(f, r->hero);
  fputs(") from ", f);
  md_code(f, r->source);
  fprintf(f, ", output %d\n", c->leaf);
  fputs("- **Config:** ", f);
  md_code(f, c->config);
  tn_rep_time(t, sizeof t, c->sim_time);
  fprintf(f, " (simulated %s, %.2fx the default's speed)\n", t, c->speedup);
  fprintf(f,
          "- **Tolerance:** atol = %.6g, rtol = %.6g (a pair passes when `|a - b| <= atol + rtol * |b|`, "
          "b the expected side; NaN or Inf on one side only always fails)\n",
          c->tol.atol, c->tol.rtol);
  fputs("- **Metrics:**\n\n", f);
  metrics_table(f, c);
  peak_values(f, r, c);
  fprintf(f, "- **Reproduce** (the first command checks just this config; the second writes a hermetic bundle%s):\n\n"
          "  ```sh\n  ",
          r->part ? "; the third runs the whole module with it and names the culprit fusion" : "");
  tn_rep_check_cmd(cmd, sizeof cmd, in, r, c);
  fprintf(f, "%s\n  ", cmd);
  tn_rep_reproduce_cmd(cmd, sizeof cmd, in, r, c);
  fprintf(f, "%s\n", cmd);
  tn_rep_isolate_cmd(cmd, sizeof cmd, in, r, c);
  if (cmd[0])
    fprintf(f, "  %s\n", cmd);
  fputs("  ```\n\n", f);
  tn_rep_bundle_dir(dir, sizeof dir, r, c);
  fputs("- **Attach:**\n  - ", f);
  md_code(f, r->source);
  fputs(" — the fusion's HLO (also stored in the results file as ", f);
  char where[512];
  snprintf(where, sizeof where, "/runs/%s/fusions/%s/hlo", in->run->info.id, sf->group);
  md_code(f, where);
  fputs(")\n  - ", f);
  md_code(f, in->results_path ? in->results_path : "RESULTS.h5");
  fputs(" — the results file (run ", f);
  md_code(f, in->run->info.id);
  fputs(")\n  - ", f);
  md_code(f, dir);
  fputs(" — the reproducer bundle written by the `tune --reproduce` command above (zip it)\n\n", f);
}

/* Knob attribution (report_internal.h): one line per group of divergent
 * candidates, with a representative and its reproducer. */
static void attribution(FILE *f, const tn_report_input *in, const tn_fusion_result *r) {
  tn_rep_group *g = NULL;
  int ng = tn_rep_attribute(r, &g, NULL);
  if (ng <= 0) {
    free(g);
    return;
  }
  fputs("\n\n**Knob attribution** (the smallest set of knob values that separates the divergent candidates "
        "from the matching ones):\n\n",
        f);
  char diff[512], cmd[4096];
  for (int i = 0; i < ng; i++) {
    const tn_cand_result *c = &r->cands[g[i].rep];
    if (g[i].separates) {
      fprintf(f, "- **%d** divergent candidate%s ha%s ", g[i].count, g[i].count == 1 ? "" : "s",
              g[i].count == 1 ? "s" : "ve");
      for (int k = 0; k < g[i].nkeys; k++) {
        fputs(k ? " and " : "", f);
        md_code(f, g[i].keys[k]);
      }
      fputs("; no matching candidate does.", f);
    } else {
      fputs("- **1** divergent candidate that no set of up to three knob values separates from the matching "
            "ones.",
            f);
    }
    tn_rep_config_diff(diff, sizeof diff, c->config, r->ncands > 0 ? r->cands[0].config : "");
    fprintf(f, " Representative: candidate %d (%s), which differs from the default in ", c->id,
            chk_verdict_name(c->verdict));
    md_code(f, diff);
    tn_rep_check_cmd(cmd, sizeof cmd, in, r, c);
    fputs(".\n  Reproduce: ", f);
    md_code(f, cmd);
    fputc('\n', f);
  }
  free(g);
}

static void divergent_fusion(FILE *f, const tn_report_input *in, const tn_stored_fusion *sf, int *order) {
  const tn_fusion_result *r = &sf->r;
  int nd = tn_rep_ndivergent(r);
  char t[32], box[160], peak[160];
  fputs("### ", f);
  md_code(f, r->name);
  fprintf(f, ": %d divergent candidate%s of %d (", nd, nd == 1 ? "" : "s", r->ncands);
  verdict_summary(f, r, true);
  fputs(")\n\n- **Source:** ", f);
  md_code(f, r->source);
  fprintf(f, ", hero ");
  md_code(f, r->hero);
  fprintf(f, ", fingerprint `%016" PRIx64 "`, input seed %" PRIu64 "\n", r->fingerprint, r->seed);
  if (r->ncands > 0) {
    const tn_cand_result *d = &r->cands[0];
    tn_rep_time(t, sizeof t, d->sim_time);
    fputs("- **Default config:** ", f);
    md_code(f, d->config);
    fprintf(f, " (%s, simulated %s)\n", chk_verdict_name(d->verdict), t);
  }
  fprintf(f, "- **Default vs the reference evaluator:** %s (max abs %.6g; atol %.6g, rtol %.6g)\n",
          !r->default_ran ? "the default did not run" : r->default_vs_reference_ok ? "agrees" : "DISAGREES",
          r->default_vs_reference.max_abs, r->reference_tol.atol, r->reference_tol.rtol);
  if (r->best >= 0) {
    fputs("- **Best correct config:** ", f);
    md_code(f, r->cands[r->best].config);
    fprintf(f, " (%.2fx the default's speed)\n", r->cands[r->best].speedup);
  } else {
    fputs("- **Best correct config:** none ran correctly\n", f);
  }
  fputs("- **All verdicts:** ", f);
  verdict_summary(f, r, false);
  attribution(f, in, r);
  fputs("\n\n| id | config | verdict | mismatches | max abs | max rel | max ULP | peak | bounding box |\n"
        "|---:|---|---|---:|---:|---:|---:|---|---|\n",
        f);
  tn_rep_order(r, order);
  for (int k = 0; k < r->ncands; k++) {
    const tn_cand_result *c = &r->cands[order[k]];
    if (!chk_verdict_is_divergent(c->verdict))
      break;
    const chk_metrics *m = tn_rep_metrics(c);
    tn_rep_peak(peak, sizeof peak, m);
    tn_rep_bbox(box, sizeof box, m);
    fprintf(f, "| %d | ", c->id);
    md_cell_code(f, c->config);
    fprintf(f, " | %s | %" PRId64 " of %" PRId64 " | %.6g | %.6g | %" PRIu64 " | `%s` | `%s` |\n",
            chk_verdict_name(c->verdict), m->mismatches, m->count, m->max_abs, m->max_rel, m->max_ulp, peak, box);
  }
  fputc('\n', f);
  for (int k = 0; k < r->ncands && k < DETAILED; k++) {
    const tn_cand_result *c = &r->cands[order[k]];
    if (!chk_verdict_is_divergent(c->verdict))
      break;
    finding(f, in, sf, c);
  }
  if (nd > DETAILED)
    fprintf(f,
            "%d more divergent candidate%s in the table above: reproduce one with the commands of a block "
            "above, its config and its id.\n\n",
            nd - DETAILED, nd - DETAILED == 1 ? " is" : "s are");
}

int tn_report_md(FILE *f, const tn_report_input *in, hlo_error *err) {
  const tn_stored_run *run = in->run;
  int maxc = 1, nbad = 0, ndiv = 0, ncand = 0;
  for (int i = 0; i < run->nfusions; i++) {
    const tn_fusion_result *r = &run->fusions[i].r;
    maxc = r->ncands > maxc ? r->ncands : maxc;
    int nd = tn_rep_ndivergent(r);
    nbad += nd > 0;
    ndiv += nd;
    ncand += r->ncands;
  }
  int *order = malloc(sizeof *order * (size_t)maxc);
  if (!order)
    return hlo_error_set(err, 0, 0, "out of memory");

  run_header(f, in);
  int iso = tn_rep_isolate_md(f, in, err);
  if (iso < 0 || (iso > 0 && run->nfusions == 0)) {
    free(order);
    return iso < 0 ? -1 : tn_rep_check_stream(f, err);
  }
  fprintf(f, "**%d fusion%s, %d candidates checked: ", run->nfusions, run->nfusions == 1 ? "" : "s", ncand);
  if (nbad)
    fprintf(f, "%d divergent candidate%s in %d fusion%s.**\n\n", ndiv, ndiv == 1 ? "" : "s", nbad,
            nbad == 1 ? "" : "s");
  else
    fputs("no divergence.**\n\n", f);

  if (nbad) {
    fputs("## Divergences\n\n", f);
    for (int i = 0; i < run->nfusions; i++)
      if (tn_rep_ndivergent(&run->fusions[i].r) > 0)
        divergent_fusion(f, in, &run->fusions[i], order);
  }
  if (nbad < run->nfusions) {
    fputs("## Fusions without divergence\n\n", f);
    for (int i = 0; i < run->nfusions; i++) {
      const tn_fusion_result *r = &run->fusions[i].r;
      if (tn_rep_ndivergent(r) > 0)
        continue;
      fputs("- ", f);
      md_code(f, r->name);
      fputs(" (", f);
      md_code(f, r->source);
      fprintf(f, "): %d candidates, no divergence", r->ncands);
      if (r->best >= 0) {
        fputs("; best ", f);
        md_code(f, r->cands[r->best].config);
        fprintf(f, " at %.2fx the default's speed", r->cands[r->best].speedup);
      }
      fputs(".\n", f);
    }
    fputc('\n', f);
  }
  free(order);
  return tn_rep_check_stream(f, err);
}
