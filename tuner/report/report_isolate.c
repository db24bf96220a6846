/* report_isolate.c — an isolation run (`tune --isolate -o`,
 * store_isolate.h) in the HTML and Markdown reports.
 *
 * HTML: the module's fusion graph as inline SVG (units top to bottom in
 * program order, which is topological; an edge on the left from each
 * unit to the units that read its output), culprits red and the worst
 * one's first diverging instruction named in its box; then per culprit
 * its comparisons, the instructions of its fused kernel with both sides'
 * summaries (the first diverging row marked) and a tensor inspector: for
 * the first diverging instruction and its operands, the mismatch box, the
 * peak, and the values around the peak, expected against actual.
 * Markdown: per culprit a paragraph to paste into a bug, and the two
 * commands that reproduce it. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"
#include "store/store_isolate.h"

static void x(FILE *f, const char *s) {
  tn_rep_xml(f, s);
}

static bool is_culprit(const tn_siso_unit *u) {
  return u->rank > 0;
}

static int find_unit(const tn_stored_isolation *iso, const char *name, size_t len) {
  for (int i = 0; i < iso->nunits; i++)
    if (strlen(iso->units[i].name) == len && strncmp(iso->units[i].name, name, len) == 0)
      return i;
  return -1;
}

/* "[128..255, 0..999]": the inclusive box, or "-" when nothing differs. */
static void box_text(char *buf, size_t n, const tn_siso_tmetrics *m) {
  size_t at = 0;
  buf[0] = '\0';
  if (m->mismatches <= 0 || m->rank < 0) {
    snprintf(buf, n, "-");
    return;
  }
  at += (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < m->rank && at < n; d++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld..%lld", d ? ", " : "", (long long)m->bbox_lo[d],
                           (long long)m->bbox_hi[d]);
  if (at < n)
    snprintf(buf + at, n - at, "]");
}

static void peak_text(char *buf, size_t n, const int64_t *peak, int rank) {
  size_t at = (size_t)snprintf(buf, n, "(");
  for (int d = 0; d < rank && at < n; d++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? "," : "", (long long)peak[d]);
  if (at < n)
    snprintf(buf + at, n - at, ")");
}

/* The commands that reproduce culprit u: the isolation with its config,
 * and the --check of the fusion alone with it. */
static void iso_cmd(char *buf, size_t n, const tn_report_input *in, const tn_stored_isolation *iso,
                    const tn_siso_unit *u) {
  char src[600], kv[600], dev[512], inputs[600] = "";
  tn_rep_shell_word(src, sizeof src, iso->source);
  char pair[sizeof u->name + sizeof u->config + 2];
  snprintf(pair, sizeof pair, "%s=%s", u->name, u->config);
  tn_rep_shell_word(kv, sizeof kv, pair);
  tn_rep_device_args(dev, sizeof dev, in);
  if (iso->inputs[0]) {
    char w[560];
    tn_rep_shell_word(w, sizeof w, iso->inputs);
    snprintf(inputs, sizeof inputs, " --inputs %s", w);
  }
  snprintf(buf, n, "tune --isolate %s --config %s%s --seed %llu%s", src, kv, inputs,
           (unsigned long long)in->run->info.seed, dev);
}

static void check_cmd(char *buf, size_t n, const tn_report_input *in, const tn_stored_isolation *iso,
                      const tn_siso_unit *u) {
  char src[600], name[300], cfg[600], dev[512];
  tn_rep_shell_word(src, sizeof src, iso->source);
  tn_rep_shell_word(name, sizeof name, u->name);
  tn_rep_shell_word(cfg, sizeof cfg, u->config);
  tn_rep_device_args(dev, sizeof dev, in);
  snprintf(buf, n, "tune --check %s --fusion %s --only %s --seed %llu%s", src, name, cfg,
           (unsigned long long)in->run->info.seed, dev);
}

/* ---- HTML ------------------------------------------------------------------ */

#define ROW_H 34
#define NODE_X 240
#define NODE_W 420

static void graph_svg(FILE *f, const tn_stored_isolation *iso) {
  int h = iso->nunits * ROW_H + 16;
  fprintf(f,
          "<svg class=\"isograph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"%d\" "
          "viewBox=\"0 0 1000 %d\" role=\"img\" aria-label=\"fusion graph\">\n"
          "<defs><marker id=\"iso-arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"7\" "
          "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#8a94a0\"/></marker></defs>\n",
          h, h);
  /* edges first, under the boxes: producer's left edge to consumer's */
  for (int i = 0; i < iso->nunits; i++) {
    const char *p = iso->units[i].inputs;
    while (*p) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      int src = find_unit(iso, p, len);
      if (src >= 0 && src != i) {
        double y0 = 8 + src * ROW_H + ROW_H / 2.0, y1 = 8 + i * ROW_H + ROW_H / 2.0;
        double bend = NODE_X - 14 - 9.0 * abs(i - src);
        if (bend < 8)
          bend = 8;
        bool hot = is_culprit(&iso->units[src]);
        fprintf(f,
                "<path class=\"edge%s\" d=\"M%d,%.1f C%.1f,%.1f %.1f,%.1f %d,%.1f\" fill=\"none\" "
                "stroke=\"%s\" stroke-width=\"%s\" marker-end=\"url(#iso-arrow)\"/>\n",
                hot ? " hot" : "", NODE_X, y0, bend, y0, bend, y1, NODE_X, y1, hot ? "#d62728" : "#8a94a0",
                hot ? "2" : "1.2");
      }
      p += len;
      if (*p == ',')
        p++;
    }
  }
  for (int i = 0; i < iso->nunits; i++) {
    const tn_siso_unit *u = &iso->units[i];
    bool bad = is_culprit(u), other = !bad && strcmp(u->cls, "ok") != 0;
    int y = 8 + i * ROW_H;
    fprintf(f, "<g class=\"node%s\" data-unit=\"", bad ? " culprit" : "");
    x(f, u->name);
    fprintf(f,
            "\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\" fill=\"%s\" stroke=\"%s\" "
            "stroke-width=\"%s\"/>\n",
            NODE_X, y + 3, NODE_W, ROW_H - 6, bad ? "#fdecea" : other ? "#fff7e0" : "#f1f8f1",
            bad ? "#d62728" : other ? "#b58900" : "#a5d6a7", bad ? "2.5" : "1");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#5f6b7a\">%d</text>\n", NODE_X + 8,
            y + ROW_H / 2 + 4, (int)u->index);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-family=\"monospace\">", NODE_X + 34, y + ROW_H / 2 + 5);
    x(f, u->name);
    fputs("</text>\n", f);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"%s\">", NODE_X + NODE_W + 10, y + ROW_H / 2 + 5,
            bad ? "#b71c1c" : "#5f6b7a");
    x(f, u->cls);
    if (bad) {
      fprintf(f, " #%d, max rel %.3g", (int)u->rank, u->max_rel);
      for (int k = 0; k < iso->nculprits; k++)
        if (iso->culprits[k].unit == i && iso->culprits[k].first[0]) {
          fputs("; first diverging: ", f);
          x(f, iso->culprits[k].first);
        }
    }
    fputs("</text>\n</g>\n", f);
  }
  fputs("</svg>\n", f);
}

static void cmp_cell(FILE *f, const tn_siso_cmp *c) {
  if (!c->done)
    fputs("<td>-</td>", f);
  else if (c->identical)
    fputs("<td>identical</td>", f);
  else if (c->within)
    fprintf(f, "<td>within (max rel %.3g)</td>", c->max_rel);
  else
    fprintf(f, "<td class=\"bad\">differs: %lld of %lld, max rel %.3g</td>", (long long)c->mismatches,
            (long long)c->count, c->max_rel);
}

/* One side's 16-byte summary in one cell, so that the table fits a page. */
static void summary_cell(FILE *f, const tn_siso_summary *s) {
  fprintf(f, "<td class=\"n\">%.6g .. %.6g<br>mean %.6g, std %.6g", s->min, s->max, s->mean, s->std);
  if (s->nan || s->inf)
    fprintf(f, "<br>%lld NaN, %lld Inf", (long long)s->nan, (long long)s->inf);
  fputs("</td>", f);
}

static double value(const hlo_value *v, int64_t i) {
  if (!v || i < 0 || i >= v->count)
    return NAN;
  return hlo_etype_class(v->type) == HLO_CLASS_FLOAT ? hlo_value_get_f64(v, i) : (double)hlo_value_get_i64(v, i);
}

/* The values around the peak: rows of the second-to-last dimension and
 * columns of the last (one row for a vector), the others at the peak;
 * cells inside the mismatch box shaded, the peak outlined. */
static void window(FILE *f, const tn_siso_tensor *t) {
  const tn_siso_tmetrics *m = &t->m;
  const hlo_value *d = t->dev, *r = t->ref;
  if (!d || !r || m->peak_index < 0 || m->rank < 1 || m->rank > HLO_MAX_RANK || d->rank != m->rank ||
      r->rank != m->rank || d->count != r->count)
    return;
  int rank = m->rank;
  int rd = rank >= 2 ? rank - 2 : -1, cd = rank - 1;
  int64_t rows = rd >= 0 ? d->dims[rd] : 1, cols = d->dims[cd];
  int64_t r0 = rd >= 0 ? m->peak[rd] - 3 : 0, c0 = m->peak[cd] - 3;
  if (r0 < 0)
    r0 = 0;
  if (c0 < 0)
    c0 = 0;
  int64_t r1 = rd >= 0 ? (r0 + 7 < rows ? r0 + 7 : rows) : 1, c1 = c0 + 7 < cols ? c0 + 7 : cols;
  fputs("<table class=\"peak\"><caption>reference &#8594; device around the peak", f);
  if (rank > 2)
    fputs(" (rows: second-to-last dimension, columns: last; the others at the peak)", f);
  fputs("</caption>\n<tr><th></th>", f);
  for (int64_t c = c0; c < c1; c++)
    fprintf(f, "<th>%lld</th>", (long long)c);
  fputs("</tr>\n", f);
  int64_t idx[HLO_MAX_RANK];
  for (int k = 0; k < rank; k++)
    idx[k] = m->peak[k];
  for (int64_t rr = r0; rr < r1; rr++) {
    fprintf(f, "<tr><th>%lld</th>", (long long)rr);
    for (int64_t c = c0; c < c1; c++) {
      if (rd >= 0)
        idx[rd] = rr;
      idx[cd] = c;
      int64_t flat = 0;
      bool inbox = m->mismatches > 0;
      for (int k = 0; k < rank; k++) {
        flat = flat * d->dims[k] + idx[k];
        inbox = inbox && idx[k] >= m->bbox_lo[k] && idx[k] <= m->bbox_hi[k];
      }
      double e = value(r, flat), a = value(d, flat);
      bool same = e == a || (isnan(e) && isnan(a));
      bool pk = flat == m->peak_index;
      fprintf(f, "<td class=\"%s%s\">", pk ? "pk " : "", !same ? "d" : inbox ? "box" : "");
      if (same)
        fprintf(f, "%.9g", e);
      else
        fprintf(f, "%.9g &#8594; %.9g", e, a);
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</table>\n", f);
}

static void culprit_html(FILE *f, const tn_report_input *in, const tn_stored_isolation *iso,
                         const tn_siso_culprit *c) {
  const tn_siso_unit *u = &iso->units[c->unit];
  char cmd[4096];
  fprintf(f, "<section class=\"card fusion divergent iso-culprit\" id=\"iso-%d\">\n<h2>#%d <code>", (int)u->index,
          (int)u->rank);
  x(f, u->name);
  fputs("</code>: ", f);
  x(f, u->cls);
  fprintf(f, "</h2>\n<p class=\"sub\">max relative error against the reference %.3g &#183; config <code>",
          u->max_rel);
  x(f, u->config);
  fputs("</code></p>\n<table class=\"grid\"><tr><th>fused vs unfused</th><th>fused vs reference</th>"
        "<th>unfused vs reference</th></tr>\n<tr>",
        f);
  cmp_cell(f, &u->fu);
  cmp_cell(f, &u->fr);
  cmp_cell(f, &u->ur);
  fputs("</tr></table>\n", f);
  if (u->note[0]) {
    fputs("<p>", f);
    x(f, u->note);
    fputs("</p>\n", f);
  }
  fputs("<h3>Reproduce</h3>\n<pre class=\"cmd\">", f);
  iso_cmd(cmd, sizeof cmd, in, iso, u);
  x(f, cmd);
  fputs("\n", f);
  check_cmd(cmd, sizeof cmd, in, iso, u);
  x(f, cmd);
  fputs("</pre>\n<h3>Inside the fused kernel</h3>\n", f);
  if (!c->inspected) {
    fputs("<p>Not inspected: ", f);
    x(f, c->note[0] ? c->note : "no instrumented run");
    fputs("</p>\n</section>\n", f);
    return;
  }
  if (c->first[0]) {
    fputs("<p>First diverging instruction: <code class=\"first\">", f);
    x(f, c->first);
    fputs("</code></p>\n", f);
  } else {
    fputs("<p>No instruction diverges", f);
    if (c->store_diffs > 0)
      fprintf(f, "; %lld elements of the stored output differ from the root's values as the kernel computed them:"
                 " the store is wrong",
              (long long)c->store_diffs);
    fputs(".</p>\n", f);
  }
  fputs("<table class=\"grid isoinstr\"><tr><th>instruction</th><th>op</th><th>elements</th><th>produced</th>"
        "<th>mismatches</th><th>max rel</th><th>device: min .. max, mean, std</th>"
        "<th>reference: min .. max, mean, std</th></tr>\n",
        f);
  for (int k = 0; k < c->ninstrs; k++) {
    const tn_siso_instr *e = &c->instrs[k];
    bool first = strcmp(e->name, c->first) == 0;
    fprintf(f, "<tr%s><td class=\"mono\">", first ? " class=\"div first\"" : e->compared && !e->within ? " class=\"div\"" : "");
    x(f, e->name);
    fputs("</td><td>", f);
    x(f, e->op);
    fprintf(f, "</td><td class=\"n\">%lld</td><td class=\"n\">%lld</td>", (long long)e->count, (long long)e->observed);
    if (e->compared)
      fprintf(f, "<td class=\"n\">%lld</td><td class=\"n\">%.3g</td>", (long long)e->mismatches, e->max_rel);
    else
      fputs("<td class=\"n\">-</td><td class=\"n\">-</td>", f);
    summary_cell(f, &e->dev);
    summary_cell(f, &e->ref);
    fputs("</tr>\n", f);
  }
  fputs("</table>\n", f);
  if (c->ntensors > 0)
    fputs("<h3>Tensor inspector</h3>\n", f);
  for (int k = 0; k < c->ntensors; k++) {
    const tn_siso_tensor *t = &c->tensors[k];
    char box[512], peak[256];
    box_text(box, sizeof box, &t->m);
    peak_text(peak, sizeof peak, t->m.peak, t->m.rank);
    fprintf(f, "<div class=\"tensor %s\"><p><b>%s</b> <code>", t->role,
            strcmp(t->role, "diverging") == 0 ? "first diverging instruction" : "operand");
    x(f, t->name);
    fprintf(f, "</code>: %lld of %lld elements differ", (long long)t->m.mismatches, (long long)t->m.count);
    if (t->m.mismatches > 0) {
      fputs(", mismatch box <code class=\"box\">", f);
      x(f, box);
      fputs("</code>, peak <code class=\"peakat\">", f);
      x(f, peak);
      fprintf(f, "</code>: expected %.9g, actual %.9g, max rel %.3g", t->m.reference_at_peak, t->m.device_at_peak,
              t->m.max_rel);
    }
    fputs("</p>\n", f);
    if (t->m.mismatches > 0)
      window(f, t);
    fputs("</div>\n", f);
  }
  fputs("</section>\n", f);
}

int tn_rep_isolate_html(FILE *f, const tn_report_input *in, hlo_error *err) {
  (void)err;
  const tn_stored_isolation *iso = in->isolation;
  if (!iso)
    return 0;
  fputs("<style>svg.isograph{display:block;max-width:100%;height:auto}"
        "table.isoinstr tr.first td{background:#fcd5d2;font-weight:600}td.bad{color:#b71c1c}"
        "table.peak td.box{background:#fff8e1}code.first{background:#fcd5d2;padding:0 4px}"
        ".tensor{margin:0 0 10px}</style>\n",
        f);
  fputs("<section class=\"card isolation\" id=\"isolation\">\n<h2>Isolation of <code>", f);
  x(f, iso->source);
  fprintf(f, "</code></h2>\n<p class=\"sub\">%d unit%s, %d culprit%s", iso->nunits, iso->nunits == 1 ? "" : "s",
          iso->nculprits, iso->nculprits == 1 ? "" : "s");
  if (iso->program.done)
    fprintf(f, " &#183; program vs reference: %s (max rel %.3g)", iso->program.differs ? "differs" : "within",
            iso->program.max_rel);
  fputs("</p>\n<h3>Fusion graph (program order; edges: which unit reads which)</h3>\n", f);
  graph_svg(f, iso);
  fputs("</section>\n", f);
  for (int k = 0; k < iso->nculprits; k++)
    culprit_html(f, in, iso, &iso->culprits[k]);
  return 1;
}

/* ---- Markdown ------------------------------------------------------------------ */

int tn_rep_isolate_md(FILE *f, const tn_report_input *in, hlo_error *err) {
  (void)err;
  const tn_stored_isolation *iso = in->isolation;
  if (!iso)
    return 0;
  fprintf(f, "## Isolation of `%s`\n\n", iso->source);
  fprintf(f, "**%d unit%s isolated: %d culprit%s.**\n\n", iso->nunits, iso->nunits == 1 ? "" : "s", iso->nculprits,
          iso->nculprits == 1 ? "" : "s");
  for (int k = 0; k < iso->nculprits; k++) {
    const tn_siso_culprit *c = &iso->culprits[k];
    const tn_siso_unit *u = &iso->units[c->unit];
    fprintf(f, "### %d. `%s`: %s\n\n", (int)u->rank, u->name, u->cls);
    fprintf(f, "Fusion `%s` of `%s` is a %s: with config `%s`, its output differs from the reference by a max "
               "relative error of %.3g",
            u->name, iso->source, u->cls, u->config, u->max_rel);
    if (u->fr.done && !u->fr.within)
      fprintf(f, " (%lld of %lld elements)", (long long)u->fr.mismatches, (long long)u->fr.count);
    if (u->ur.done)
      fprintf(f, ", while its unfused run (one kernel per instruction) %s the reference",
              u->ur.within ? "agrees with" : "differs from");
    fputs(".", f);
    if (c->inspected && c->first[0]) {
      const tn_siso_tensor *t = c->ntensors > 0 ? &c->tensors[0] : NULL;
      const char *op = t && t->instr >= 0 && t->instr < c->ninstrs ? c->instrs[t->instr].op : "?";
      fprintf(f, " Inside the intact fused kernel the first diverging instruction is `%s` (%s)", c->first, op);
      if (t && t->m.mismatches > 0) {
        char box[512], peak[256];
        box_text(box, sizeof box, &t->m);
        peak_text(peak, sizeof peak, t->m.peak, t->m.rank);
        fprintf(f, ": %lld of %lld elements differ, mismatch box %s, peak at %s where the reference has %.9g and "
                   "the device %.9g",
                (long long)t->m.mismatches, (long long)t->m.count, box, peak, t->m.reference_at_peak,
                t->m.device_at_peak);
      }
      int bad = 0;
      for (int j = 1; j < c->ntensors; j++)
        bad += c->tensors[j].m.mismatches > 0;
      if (c->ntensors > 1)
        fputs(bad ? "; some of its operands differ too." : "; its operands are right.", f);
      else
        fputs(".", f);
    } else if (c->inspected && c->store_diffs > 0) {
      fprintf(f, " Every instruction inside the fused kernel is right, but %lld elements of its stored output are "
                 "not: the store is wrong.",
              (long long)c->store_diffs);
    } else if (!c->inspected && c->note[0]) {
      fprintf(f, " Not inspected inside: %s.", c->note);
    }
    char cmd[4096];
    fputs("\n\nReproduce:\n\n```sh\n", f);
    iso_cmd(cmd, sizeof cmd, in, iso, u);
    fprintf(f, "%s\n", cmd);
    check_cmd(cmd, sizeof cmd, in, iso, u);
    fprintf(f, "%s\n```\n\n", cmd);
  }
  if (iso->nculprits == 0)
    fputs("Every unit is `ok`.\n\n", f);
  return 1;
}
