/* report_junit.c — the JUnit XML report, for CI dashboards.
 *
 * The mapping follows what Jenkins, GitLab and their kin display:
 *
 *   <testsuites>            the run
 *     <testsuite>           a fusion (tests, failures, errors, skipped)
 *       <testcase>          a candidate: name = its config, classname =
 *                           the fusion, time = host seconds it took
 *         <failure>         a divergent candidate; message "verdict: ...",
 *                           the metrics and reproducer in the body
 *         <skipped>         a candidate that could not run for a reason
 *                           that is not a finding (compile-error, timeout)
 *
 * Dashboards key history on classname + name, so a config keeps its
 * history from one nightly run to the next.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "report_internal.h"

typedef struct counts {
  int tests, failures, skipped;
  double time;
} counts;

static bool is_skipped(chk_verdict v) {
  return v == CHK_VERDICT_COMPILE_ERROR || v == CHK_VERDICT_TIMEOUT || v == CHK_VERDICT_TOOL_ERROR;
}

static counts count_fusion(const tn_fusion_result *r) {
  counts k = {r->ncands, 0, 0, r->wall_time};
  for (int i = 0; i < r->ncands; i++) {
    k.failures += chk_verdict_is_divergent(r->cands[i].verdict) != 0;
    k.skipped += is_skipped(r->cands[i].verdict);
  }
  return k;
}

static void attr(FILE *f, const char *name, const char *value) {
  fprintf(f, " %s=\"", name);
  tn_rep_xml(f, value);
  fputc('"', f);
}

static void property(FILE *f, const char *name, const char *value) {
  fputs("      <property", f);
  attr(f, "name", name);
  attr(f, "value", value);
  fputs("/>\n", f);
}

static void metrics_body(FILE *f, const char *what, const chk_metrics *m) {
  char peak[160], box[160];
  tn_rep_peak(peak, sizeof peak, m);
  tn_rep_bbox(box, sizeof box, m);
  fprintf(f,
          "%s: %" PRId64 " of %" PRId64 " elements differ; max abs %.6g, max rel %.6g, max ulp %" PRIu64
          ", rms %.6g, NaN/Inf mismatches %" PRId64 "/%" PRId64 "; peak at %s, box %s\n",
          what, m->mismatches, m->count, m->max_abs, m->max_rel, m->max_ulp, m->rms, m->nan_mismatches,
          m->inf_mismatches, peak, box);
}

static void failure(FILE *f, const tn_report_input *in, const tn_fusion_result *r, const tn_cand_result *c) {
  char msg[640], cmd[4096];
  snprintf(msg, sizeof msg, "verdict: %s", chk_verdict_name(c->verdict));
  fputs("      <failure", f);
  attr(f, "message", msg);
  attr(f, "type", chk_verdict_name(c->verdict));
  fputs(">", f);
  /* The body is text; escaped like an attribute it stays valid XML and
   * reads the same in every dashboard. */
  char *body = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&body, &len);
  if (m) {
    fprintf(m, "config: %s\n", c->config);
    if (c->message[0])
      fprintf(m, "message: %s\n", c->message);
    fprintf(m, "tolerance: atol %.6g, rtol %.6g\n", c->tol.atol, c->tol.rtol);
    metrics_body(m, "vs the default", &c->vs_default);
    if (c->has_vs_reference)
      metrics_body(m, "vs the reference", &c->vs_reference);
    tn_rep_check_cmd(cmd, sizeof cmd, in, r, c);
    fprintf(m, "reproduce: %s\n", cmd);
    tn_rep_reproduce_cmd(cmd, sizeof cmd, in, r, c);
    fprintf(m, "bundle: %s\n", cmd);
    if (fclose(m) == 0 && body)
      tn_rep_xml(f, body);
    free(body);
  }
  fputs("</failure>\n", f);
}

static void testcase(FILE *f, const tn_report_input *in, const tn_fusion_result *r, const tn_cand_result *c) {
  fputs("    <testcase", f);
  attr(f, "name", c->config);
  attr(f, "classname", r->name);
  fprintf(f, " time=\"%.6f\"", c->wall_time);
  if (chk_verdict_is_divergent(c->verdict)) {
    fputs(">\n", f);
    failure(f, in, r, c);
    fputs("    </testcase>\n", f);
  } else if (is_skipped(c->verdict)) {
    char msg[640];
    snprintf(msg, sizeof msg, "%s: %s", chk_verdict_name(c->verdict), c->message);
    fputs(">\n      <skipped", f);
    attr(f, "message", msg);
    fputs("/>\n    </testcase>\n", f);
  } else {
    fputs("/>\n", f);
  }
}

static void testsuite(FILE *f, const tn_report_input *in, const tn_stored_fusion *sf) {
  const tn_fusion_result *r = &sf->r;
  const tn_run_info *run = &in->run->info;
  counts k = count_fusion(r);
  char buf[64];
  fputs("  <testsuite", f);
  attr(f, "name", r->name);
  fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.6f\"", k.tests, k.failures,
          k.skipped, k.time);
  attr(f, "timestamp", run->started);
  attr(f, "hostname", run->host);
  fputs(">\n    <properties>\n", f);
  property(f, "source", r->source);
  property(f, "hero", r->hero);
  property(f, "group", sf->group);
  property(f, "machine", run->machine);
  property(f, "compiler", run->compiler);
  if (run->defects_unknown[0])
    property(f, "defects_unknown", run->defects_unknown);
  snprintf(buf, sizeof buf, "%" PRIu64, r->seed);
  property(f, "seed", buf);
  property(f, "default_config", r->ncands > 0 ? r->cands[0].config : "");
  property(f, "best_config", r->best >= 0 ? r->cands[r->best].config : "");
  snprintf(buf, sizeof buf, "%.4g", r->best >= 0 ? r->cands[r->best].speedup : 0.0);
  property(f, "best_speedup", buf);
  property(f, "default_vs_reference", !r->default_ran ? "not-run" : r->default_vs_reference_ok ? "ok" : "mismatch");
  fputs("    </properties>\n", f);
  for (int i = 0; i < r->ncands; i++)
    testcase(f, in, r, &r->cands[i]);
  fputs("  </testsuite>\n", f);
}

int tn_report_junit(FILE *f, const tn_report_input *in, hlo_error *err) {
  const tn_stored_run *run = in->run;
  counts all = {0, 0, 0, 0};
  for (int i = 0; i < run->nfusions; i++) {
    counts k = count_fusion(&run->fusions[i].r);
    all.tests += k.tests;
    all.failures += k.failures;
    all.skipped += k.skipped;
    all.time += k.time;
  }
  char name[128];
  snprintf(name, sizeof name, "tune %s", run->info.id);
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
  attr(f, "name", name);
  fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.6f\">\n", all.tests,
          all.failures, all.skipped, all.time);
  for (int i = 0; i < run->nfusions; i++)
    testsuite(f, in, &run->fusions[i]);
  fputs("</testsuites>\n", f);
  return tn_rep_check_stream(f, err);
}
