/* report.c — format names, dispatch, and what the four writers share. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/inputs.h"
#include "report_internal.h"
#include "triage/reproduce.h"
#include "triage/shquote.h"
#include "store/utf8.h"

static const char *const format_names[] = {
    [TN_REPORT_HTML] = "html", [TN_REPORT_MD] = "md", [TN_REPORT_JSON] = "json", [TN_REPORT_JUNIT] = "junit"};

int tn_report_format_from_name(const char *name) {
  if (!name)
    return -1;
  for (int i = 0; i < (int)(sizeof format_names / sizeof format_names[0]); i++)
    if (strcmp(name, format_names[i]) == 0)
      return i;
  if (strcmp(name, "markdown") == 0)
    return TN_REPORT_MD;
  if (strcmp(name, "xml") == 0)
    return TN_REPORT_JUNIT;
  return -1;
}

const char *tn_report_format_name(tn_report_format f) {
  return (unsigned)f < sizeof format_names / sizeof format_names[0] ? format_names[f] : "?";
}

int tn_report_write(FILE *f, tn_report_format fmt, const tn_report_input *in, hlo_error *err) {
  if (!f || !in || !in->run)
    return hlo_error_set(err, 0, 0, "report: nothing to write");
  switch (fmt) {
  case TN_REPORT_HTML: return tn_report_html(f, in, err);
  case TN_REPORT_MD: return tn_report_md(f, in, err);
  case TN_REPORT_JSON: return tn_report_json(f, in, err);
  case TN_REPORT_JUNIT: return tn_report_junit(f, in, err);
  }
  return hlo_error_set(err, 0, 0, "report: unknown format %d", (int)fmt);
}

int tn_rep_check_stream(FILE *f, hlo_error *err) {
  if (fflush(f) != 0 || ferror(f))
    return hlo_error_set(err, 0, 0, "cannot write the report: %s", errno ? strerror(errno) : "write error");
  return 0;
}

/* ---- escaping -------------------------------------------------------------- */

/* One ASCII byte of element content or of an attribute value. */
static void xml_ascii(FILE *f, unsigned char c) {
  switch (c) {
  case '&': fputs("&amp;", f); break;
  case '<': fputs("&lt;", f); break;
  case '>': fputs("&gt;", f); break;
  case '"': fputs("&quot;", f); break;
  case '\'': fputs("&#39;", f); break;
  default:
    /* XML 1.0 has no way to carry the other C0 controls, even escaped. */
    fputc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : c, f);
  }
}

void tn_rep_xml(FILE *f, const char *s) { tn_utf8_write(f, s, xml_ascii); }

/* ---- candidates ----------------------------------------------------------------- */

int tn_rep_ndivergent(const tn_fusion_result *r) {
  int n = 0;
  for (int i = 0; i < r->ncands; i++)
    n += chk_verdict_is_divergent(r->cands[i].verdict) != 0;
  return n;
}

const chk_metrics *tn_rep_metrics(const tn_cand_result *c) {
  if (c->vs_default.mismatches == 0 && c->has_vs_reference && c->vs_reference.mismatches > 0)
    return &c->vs_reference;
  return &c->vs_default;
}

/* Report order (see report_internal.h); a strict total order, so equal
 * inputs give equal reports. */
static bool cand_before(const tn_cand_result *a, const tn_cand_result *b) {
  bool da = chk_verdict_is_divergent(a->verdict), db = chk_verdict_is_divergent(b->verdict);
  if (da != db)
    return da;
  if (da) {
    int64_t ma = tn_rep_metrics(a)->mismatches, mb = tn_rep_metrics(b)->mismatches;
    if (ma != mb)
      return ma > mb;
  } else {
    bool ra = a->sim_time > 0, rb = b->sim_time > 0;
    if (ra != rb)
      return ra;
    if (ra && a->sim_time != b->sim_time)
      return a->sim_time < b->sim_time;
  }
  return a->id < b->id;
}

void tn_rep_order(const tn_fusion_result *r, int *idx) {
  /* Insertion sort: stable, no context pointer needed, and a few hundred
   * candidates at most. */
  for (int i = 0; i < r->ncands; i++) {
    int j = i;
    for (; j > 0 && cand_before(&r->cands[i], &r->cands[idx[j - 1]]); j--)
      idx[j] = idx[j - 1];
    idx[j] = i;
  }
}

/* ---- small texts --------------------------------------------------------------------- */

/* Appends printf output at *at without overrunning buf[n]. */
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...) {
  if (*at >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *at, n - *at, fmt, ap);
  va_end(ap);
  if (w > 0)
    *at = *at + (size_t)w < n ? *at + (size_t)w : n - 1;
}

void tn_rep_peak(char *buf, size_t n, const chk_metrics *m) {
  size_t at = 0;
  buf[0] = '\0';
  if (m->peak_index < 0) {
    append(buf, n, &at, "-");
    return;
  }
  append(buf, n, &at, "(");
  for (int d = 0; d < m->rank; d++)
    append(buf, n, &at, "%s%lld", d ? "," : "", (long long)m->peak[d]);
  append(buf, n, &at, ")");
}

void tn_rep_bbox(char *buf, size_t n, const chk_metrics *m) {
  size_t at = 0;
  buf[0] = '\0';
  if (m->mismatches <= 0) {
    append(buf, n, &at, "-");
    return;
  }
  append(buf, n, &at, "[");
  for (int d = 0; d < m->rank; d++)
    append(buf, n, &at, "%s%lld:%lld", d ? ", " : "", (long long)m->bbox_lo[d], (long long)m->bbox_hi[d] + 1);
  append(buf, n, &at, "]");
}

void tn_rep_time(char *buf, size_t n, double s) {
  if (!(s > 0) || !isfinite(s))
    snprintf(buf, n, "-");
  else if (s < 1e-6)
    snprintf(buf, n, "%.0f ns", s * 1e9);
  else if (s < 1e-3)
    snprintf(buf, n, "%.3g us", s * 1e6);
  else if (s < 1)
    snprintf(buf, n, "%.3g ms", s * 1e3);
  else
    snprintf(buf, n, "%.3g s", s);
}

/* ---- reproducer commands ----------------------------------------------------------------- */

/* Appends s as one shell word (shquote.h's rule, shared with run.sh). */
static void append_word(char *buf, size_t n, size_t *at, const char *s) {
  if (*at >= n)
    return;
  size_t w = tn_sh_word(buf + *at, n - *at, s);
  *at = *at + w < n ? *at + w : n - 1;
}

/* " --seed N [--profile P]": how the inputs were synthesised (the
 * profile only when it is not --check's default). */
static void append_inputs(char *buf, size_t n, size_t *at, const tn_fusion_result *r) {
  append(buf, n, at, " --seed %llu", (unsigned long long)r->seed);
  if (r->profile != CHK_INPUTS_CONSTRAINED)
    append(buf, n, at, " --profile %s", chk_inputs_profile_name((chk_inputs_profile)r->profile));
}

/* " --machine M --compiler C --defect D...": the run's device, the
 * profile and its --defect additions as --reproduce names them. */
static void append_device(char *buf, size_t n, size_t *at, const tn_run_info *run) {
  if (run->machine[0]) {
    append(buf, n, at, " --machine ");
    append_word(buf, n, at, run->machine);
  }
  tn_repro_device d;
  tn_repro_device_of_run(run, &d);
  if (d.compiler[0]) {
    append(buf, n, at, " --compiler ");
    append_word(buf, n, at, d.compiler);
  }
  for (int i = 0; i < d.ndefects; i++) {
    append(buf, n, at, " --defect ");
    append_word(buf, n, at, d.defects[i]);
  }
}

void tn_rep_device_args(char *buf, size_t n, const tn_report_input *in) {
  size_t at = 0;
  buf[0] = '\0';
  append_device(buf, n, &at, &in->run->info);
}

void tn_rep_shell_word(char *buf, size_t n, const char *s) {
  size_t at = 0;
  buf[0] = '\0';
  append_word(buf, n, &at, s);
}

void tn_rep_check_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                      const tn_cand_result *c) {
  size_t at = 0;
  buf[0] = '\0';
  append(buf, n, &at, "tune --check ");
  append_word(buf, n, &at, r->source);
  append(buf, n, &at, " --only ");
  append_word(buf, n, &at, c->config);
  append_inputs(buf, n, &at, r);
  append_device(buf, n, &at, &in->run->info);
  /* A unit of a larger module: only it takes the --only config. */
  if (r->part) {
    append(buf, n, &at, " --fusion ");
    append_word(buf, n, &at, r->name);
  }
}

void tn_rep_isolate_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                        const tn_cand_result *c) {
  size_t at = 0;
  buf[0] = '\0';
  if (!r->part)
    return;
  char unit[sizeof r->name + DEV_CONFIG_TEXT_MAX + 2];
  snprintf(unit, sizeof unit, "%s=%s", r->name, c->config);
  append(buf, n, &at, "tune --isolate ");
  append_word(buf, n, &at, r->source);
  append(buf, n, &at, " --config ");
  append_word(buf, n, &at, unit);
  append_inputs(buf, n, &at, r);
  append_device(buf, n, &at, &in->run->info);
}

/* The name --reproduce looks the fusion up by: its name, or its group
 * when another fusion of the run has the same name. */
static const char *fusion_key(const tn_report_input *in, const tn_fusion_result *r) {
  const tn_stored_run *run = in->run;
  const char *group = NULL;
  int same = 0;
  for (int i = 0; i < run->nfusions; i++) {
    if (strcmp(run->fusions[i].r.name, r->name) == 0)
      same++;
    if (&run->fusions[i].r == r)
      group = run->fusions[i].group;
  }
  return same > 1 && group ? group : r->name;
}

void tn_rep_bundle_dir(char *buf, size_t n, const tn_fusion_result *r, const tn_cand_result *c) {
  size_t at = 0;
  buf[0] = '\0';
  append(buf, n, &at, "repro-");
  /* Keep the folder name to characters that need no quoting. */
  for (const char *p = r->name; *p && at + 1 < n; p++) {
    char ch = *p;
    bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                ch == '-' || ch == '.';
    append(buf, n, &at, "%c", keep ? ch : '_');
  }
  append(buf, n, &at, "-%d", c->id);
}

void tn_rep_reproduce_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                          const tn_cand_result *c) {
  size_t at = 0;
  char dir[256];
  buf[0] = '\0';
  append(buf, n, &at, "tune --reproduce ");
  append_word(buf, n, &at, in->results_path ? in->results_path : "RESULTS.h5");
  /* The reader defaults to the latest run; an older one must be named. */
  if (in->runs && in->nruns > 0 && strcmp(in->runs[in->nruns - 1].id, in->run->info.id) != 0) {
    append(buf, n, &at, " --run ");
    append_word(buf, n, &at, in->run->info.id);
  }
  append(buf, n, &at, " --fusion ");
  append_word(buf, n, &at, fusion_key(in, r));
  append(buf, n, &at, " --candidate %d -o ", c->id);
  tn_rep_bundle_dir(dir, sizeof dir, r, c);
  append_word(buf, n, &at, dir);
}

/* ---- the values around the peak --------------------------------------------------- */

const tn_peak_window *tn_rep_window(const tn_fusion_result *r, const tn_cand_result *c, const tn_error_map **map) {
  const tn_error_map *e = tn_fusion_result_find_map(r, c->id);
  if (map)
    *map = e;
  return e && e->peak.rows > 0 && e->peak.cols > 0 ? &e->peak : NULL;
}

/* Two values that differ get the fewest significant digits (at least 7,
 * an f32's) that print them differently, so a last-bit difference shows
 * without every other cell carrying 17 digits. */
void tn_rep_window_cell(char *e, char *a, size_t n, const tn_peak_window *w, int i, int j) {
  double x = w->expected[i * w->cols + j], y = w->actual[i * w->cols + j];
  bool same = x == y || (isnan(x) && isnan(y));
  for (int p = 7; p <= 17; p++) {
    snprintf(e, n, "%.*g", p, x);
    snprintf(a, n, "%.*g", p, y);
    if (same || strcmp(e, a) != 0)
      break;
  }
}

void tn_rep_window_axes(char *buf, size_t n, const tn_error_map *map) {
  if (map->rank >= 2)
    snprintf(buf, n, "rows: dim %d, columns: dim %d%s", map->rank - 2, map->rank - 1,
             map->rank > 2 ? ", the other dims at the peak" : "");
  else if (map->rank == 1)
    snprintf(buf, n, "columns: dim 0");
  else
    snprintf(buf, n, "a scalar output");
}

int64_t tn_rep_window_row(const tn_error_map *map, int i) {
  return map->rank >= 2 ? map->peak.origin[map->rank - 2] + i : 0;
}

int64_t tn_rep_window_col(const tn_error_map *map, int j) {
  return map->rank >= 1 ? map->peak.origin[map->rank - 1] + j : 0;
}
