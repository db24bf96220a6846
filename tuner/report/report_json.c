/* report_json.c — the JSON report: one run, every fusion and candidate row
 * with every stored metric, for tools.
 *
 * Stability is the point: key names are those of the HDF5 schema (README
 * "HDF5 results schema") without the d_/r_ prefixes, nested instead; a key
 * is never renamed without bumping "report_version".  64-bit fingerprints
 * are hex strings (JSON readers often hold numbers as doubles, which would
 * round them); NaN and Inf, which JSON lacks, are null.  Arrays that the
 * metric's rank limits (peak, bounding box) hold exactly rank entries.
 */
#include <inttypes.h>
#include <stdbool.h>

#include "json_out.h"
#include "report_internal.h"

#define REPORT_VERSION 1

static void key(FILE *f, int indent, const char *k, bool first) {
  fprintf(f, "%s\n%*s\"%s\": ", first ? "" : ",", indent, "", k);
}

static void kstr(FILE *f, int indent, const char *k, const char *v, bool first) {
  key(f, indent, k, first);
  tn_json_str(f, v);
}

static void knum(FILE *f, int indent, const char *k, double v) {
  key(f, indent, k, false);
  tn_json_num(f, v);
}

static void kint(FILE *f, int indent, const char *k, int64_t v) {
  key(f, indent, k, false);
  fprintf(f, "%" PRId64, v);
}

static void kbool(FILE *f, int indent, const char *k, bool v) {
  key(f, indent, k, false);
  fputs(v ? "true" : "false", f);
}

static void i64_array(FILE *f, const int64_t *v, int n, int add) {
  fputc('[', f);
  for (int i = 0; i < n; i++)
    fprintf(f, "%s%" PRId64, i ? ", " : "", v[i] + add);
  fputc(']', f);
}

static void side(FILE *f, int indent, const char *k, const chk_side_stats *s) {
  key(f, indent, k, false);
  fputs("{\"min\": ", f);
  tn_json_num(f, s->min);
  fputs(", \"max\": ", f);
  tn_json_num(f, s->max);
  fputs(", \"mean\": ", f);
  tn_json_num(f, s->mean);
  fputs(", \"std\": ", f);
  tn_json_num(f, s->std);
  fputc('}', f);
}

static void metrics(FILE *f, int indent, const chk_metrics *m) {
  int in = indent + 2;
  fputc('{', f);
  key(f, in, "count", true);
  fprintf(f, "%" PRId64, m->count);
  kint(f, in, "excluded", m->excluded);
  kint(f, in, "mismatches", m->mismatches);
  knum(f, in, "max_abs", m->max_abs);
  knum(f, in, "max_rel", m->max_rel);
  key(f, in, "max_ulp", false);
  fprintf(f, "%" PRIu64, m->max_ulp);
  knum(f, in, "rms", m->rms);
  kint(f, in, "nan_mismatches", m->nan_mismatches);
  kint(f, in, "inf_mismatches", m->inf_mismatches);
  kint(f, in, "peak_index", m->peak_index);
  kint(f, in, "rank", m->rank);
  key(f, in, "peak", false);
  i64_array(f, m->peak, m->peak_index >= 0 ? m->rank : 0, 0);
  /* Inclusive bounds, as stored; empty when nothing mismatched. */
  key(f, in, "bbox_lo", false);
  i64_array(f, m->bbox_lo, m->mismatches > 0 ? m->rank : 0, 0);
  key(f, in, "bbox_hi", false);
  i64_array(f, m->bbox_hi, m->mismatches > 0 ? m->rank : 0, 0);
  key(f, in, "hist", false);
  i64_array(f, m->hist, CHK_HIST_BUCKETS, 0);
  side(f, in, "a", &m->a);
  side(f, in, "b", &m->b);
  fprintf(f, "\n%*s}", indent, "");
}

static const char *status_name(dev_status s) {
  switch (s) {
  case DEV_OK: return "ok";
  case DEV_COMPILE_ERROR: return "compile-error";
  case DEV_RUNTIME_ERROR: return "runtime-error";
  case DEV_TIMEOUT: return "timeout";
  }
  return "unknown";
}

static void candidate(FILE *f, const tn_report_input *in, const tn_fusion_result *r, const tn_cand_result *c) {
  const int ind = 10;
  char buf[4096];
  fputc('{', f);
  key(f, ind, "id", true);
  fprintf(f, "%d", c->id);
  kstr(f, ind, "config", c->config, false);
  key(f, ind, "fingerprint", false);
  fprintf(f, "\"%016" PRIx64 "\"", c->fingerprint);
  kstr(f, ind, "status", status_name(c->status), false);
  kstr(f, ind, "verdict", chk_verdict_name(c->verdict), false);
  kbool(f, ind, "divergent", chk_verdict_is_divergent(c->verdict));
  kbool(f, ind, "default", c->id == r->cands[0].id);
  kbool(f, ind, "best", r->best >= 0 && c == &r->cands[r->best]);
  kstr(f, ind, "message", c->message, false);
  knum(f, ind, "sim_time", c->sim_time);
  knum(f, ind, "wall_time", c->wall_time);
  knum(f, ind, "speedup", c->speedup);
  knum(f, ind, "atol", c->tol.atol);
  knum(f, ind, "rtol", c->tol.rtol);
  kint(f, ind, "leaf", c->leaf);
  key(f, ind, "vs_default", false);
  metrics(f, ind, &c->vs_default);
  key(f, ind, "vs_reference", false);
  if (c->has_vs_reference)
    metrics(f, ind, &c->vs_reference);
  else
    fputs("null", f);
  if (chk_verdict_is_divergent(c->verdict)) {
    tn_rep_check_cmd(buf, sizeof buf, in, r, c);
    kstr(f, ind, "reproduce_check", buf, false);
    tn_rep_reproduce_cmd(buf, sizeof buf, in, r, c);
    kstr(f, ind, "reproduce_bundle", buf, false);
  }
  fprintf(f, "\n%*s}", ind - 2, "");
}

static void fusion(FILE *f, const tn_report_input *in, const tn_stored_fusion *sf) {
  const tn_fusion_result *r = &sf->r;
  const int ind = 6;
  fputc('{', f);
  kstr(f, ind, "group", sf->group, true);
  kstr(f, ind, "name", r->name, false);
  kstr(f, ind, "source", r->source, false);
  kstr(f, ind, "hero", r->hero, false);
  key(f, ind, "fingerprint", false);
  fprintf(f, "\"%016" PRIx64 "\"", r->fingerprint);
  key(f, ind, "seed", false);
  fprintf(f, "%" PRIu64, r->seed);
  kint(f, ind, "ncandidates", r->ncands);
  kint(f, ind, "ndivergent", tn_rep_ndivergent(r));
  knum(f, ind, "wall_time", r->wall_time);
  kstr(f, ind, "default_config", r->ncands > 0 ? r->cands[0].config : "", false);
  knum(f, ind, "default_sim_time", r->ncands > 0 ? r->cands[0].sim_time : 0.0);
  key(f, ind, "best_config", false);
  if (r->best >= 0)
    tn_json_str(f, r->cands[r->best].config);
  else
    fputs("null", f);
  key(f, ind, "best_speedup", false);
  if (r->best >= 0)
    tn_json_num(f, r->cands[r->best].speedup);
  else
    fputs("null", f);
  key(f, ind, "verdict_counts", false);
  fputc('{', f);
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    fprintf(f, "%s\"%s\": %" PRId64, v ? ", " : "", chk_verdict_name((chk_verdict)v), r->verdict_counts[v]);
  fputc('}', f);
  key(f, ind, "reference", false);
  fputc('{', f);
  key(f, ind + 2, "ran", true);
  fputs(r->default_ran ? "true" : "false", f);
  kbool(f, ind + 2, "ok", r->default_vs_reference_ok);
  knum(f, ind + 2, "atol", r->reference_tol.atol);
  knum(f, ind + 2, "rtol", r->reference_tol.rtol);
  key(f, ind + 2, "metrics", false);
  metrics(f, ind + 2, &r->default_vs_reference);
  fprintf(f, "\n%*s}", ind, "");
  key(f, ind, "error_maps", false);
  fputc('[', f);
  for (int i = 0; i < r->nerror_maps; i++) {
    const tn_error_map *e = &r->error_maps[i];
    fprintf(f, "%s{\"candidate\": %d, \"dims\": ", i ? ", " : "", e->cand_id);
    i64_array(f, e->dims, e->rank, 0);
    fputc('}', f);
  }
  fputc(']', f);
  key(f, ind, "candidates", false);
  fputc('[', f);
  for (int i = 0; i < r->ncands; i++) {
    fprintf(f, "%s\n%*s", i ? "," : "", ind + 2, "");
    candidate(f, in, r, &r->cands[i]);
  }
  fprintf(f, "\n%*s]\n%*s}", ind, "", ind - 2, "");
}

static void run_info(FILE *f, int ind, const tn_run_info *ri) {
  fputc('{', f);
  kstr(f, ind, "id", ri->id, true);
  kstr(f, ind, "started", ri->started, false);
  kstr(f, ind, "finished", ri->finished, false);
  kstr(f, ind, "status", ri->status, false);
  kstr(f, ind, "command", ri->command, false);
  kstr(f, ind, "machine", ri->machine, false);
  kstr(f, ind, "compiler", ri->compiler, false);
  if (ri->defects_unknown[0])
    kstr(f, ind, "defects_unknown", ri->defects_unknown, false);
  key(f, ind, "seed", false);
  fprintf(f, "%" PRIu64, ri->seed);
  kstr(f, ind, "host", ri->host, false);
  fprintf(f, "\n%*s}", ind - 2, "");
}

int tn_report_json(FILE *f, const tn_report_input *in, hlo_error *err) {
  const tn_stored_run *run = in->run;
  int ndiv = 0;
  for (int i = 0; i < run->nfusions; i++)
    ndiv += tn_rep_ndivergent(&run->fusions[i].r);
  fputc('{', f);
  kstr(f, 2, "report", "tune", true);
  kint(f, 2, "report_version", REPORT_VERSION);
  kstr(f, 2, "results_file", in->results_path ? in->results_path : "", false);
  kint(f, 2, "schema_version", in->schema_version ? in->schema_version : TN_STORE_SCHEMA_VERSION);
  kstr(f, 2, "tool_version", in->tool_version ? in->tool_version : "", false);
  key(f, 2, "runs", false);
  fputc('[', f);
  for (int i = 0; in->runs && i < in->nruns; i++) {
    fprintf(f, "%s{\"id\": ", i ? ", " : "");
    tn_json_str(f, in->runs[i].id);
    fputs(", \"started\": ", f);
    tn_json_str(f, in->runs[i].started);
    fputs(", \"status\": ", f);
    tn_json_str(f, in->runs[i].status);
    fputc('}', f);
  }
  fputc(']', f);
  key(f, 2, "run", false);
  run_info(f, 4, &run->info);
  kint(f, 2, "nfusions", run->nfusions);
  kint(f, 2, "ndivergent", ndiv);
  key(f, 2, "fusions", false);
  fputc('[', f);
  for (int i = 0; i < run->nfusions; i++) {
    fprintf(f, "%s\n    ", i ? "," : "");
    fusion(f, in, &run->fusions[i]);
  }
  fputs("\n  ]\n}\n", f);
  return tn_rep_check_stream(f, err);
}
