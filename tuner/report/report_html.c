/* report_html.c — the HTML report: one self-contained page per run.
 *
 * Self-contained means the page fetches nothing: the styles are inline,
 * the charts are inline SVG drawn here, fonts are the reader's own, and
 * there is no script.  It opens from a mail attachment, an air-gapped
 * machine or a CI artifact store the same way, and shows nothing a
 * third party could change.
 *
 * Per fusion the page shows, top to bottom, what an engineer reads in
 * that order: the header (what was tuned, where, and the outcome), the
 * simulated time of every candidate that ran, fastest first, with the
 * divergent ones in red — divergences cluster where the speed is, which is
 * the autotuner's temptation — then heatmaps of the stored error maps of
 * the worst candidates, and the verdict table, divergent rows first.
 *
 * All text from the results file goes through tn_rep_xml.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* ---- page ------------------------------------------------------------------ */

static const char *const STYLE =
    ":root{--bad:#d62728;--ok:#4c78a8;--best:#2ca02c;--muted:#5f6b7a;--line:#d8dee4}"
    "*{box-sizing:border-box}"
    "body{margin:0;background:#f4f6f8;color:#1f2328;"
    "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue','DejaVu Sans',Arial,sans-serif}"
    "main{max-width:1320px;margin:0 auto;padding:20px 24px 40px}"
    "h1{font-size:22px;margin:4px 0 2px}h2{font-size:19px;margin:0 0 6px}"
    "h3{font-size:14px;margin:18px 0 6px;color:#374151;text-transform:uppercase;letter-spacing:.04em}"
    ".sub{color:var(--muted);margin:0 0 8px}"
    ".card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}"
    ".fusion.divergent{border-left:5px solid var(--bad)}.fusion.clean{border-left:5px solid var(--best)}"
    "code,.mono{font-family:ui-monospace,'SFMono-Regular','DejaVu Sans Mono',Menlo,Consolas,monospace;"
    "font-size:12.5px}"
    "table{border-collapse:collapse}"
    "table.kv td{padding:2px 14px 2px 0;vertical-align:top}table.kv td:first-child{color:var(--muted);"
    "white-space:nowrap}"
    "table.grid{width:100%;font-size:12.5px}"
    "table.grid th{background:#eef1f4;text-align:left;padding:5px 8px;position:sticky;top:0;"
    "border-bottom:1px solid var(--line);white-space:nowrap}"
    "table.grid td{padding:3px 8px;border-bottom:1px solid #edf0f2;vertical-align:top}"
    "table.grid td.n,table.verdicts td:nth-child(n+4):nth-child(-n+9){text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}table.verdicts td:first-child{text-align:right}"
    "table.verdicts td[colspan]{text-align:left}"
    "table.grid tr.div td{background:#fff2f1}table.grid td.cfg,table.grid td.mono{overflow-wrap:anywhere}"
    "table.grid td.note{min-width:160px}"
    "pre.hlo,pre.cmd{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:8px 10px;"
    "font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}"
    "pre.hlo .root{background:#fde2e1;font-weight:600}pre.hlo .hero{background:#fff3c4}"
    "ul.groups li{margin:0 0 10px}ul.groups li.brief{margin:0 0 2px}"
    "table.peak{font-size:12px;margin:0 0 14px}table.peak td,table.peak th{padding:2px 8px;"
    "border:1px solid #edf0f2;text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "table.peak th{background:#eef1f4}table.peak td.d{background:#fff2f1}"
    "table.peak td.pk{outline:2px solid #000;font-weight:600}table.peak caption{text-align:left;"
    "font-size:12.5px;color:#374151;padding:0 0 4px}"
    "@media print{body{background:#fff}.card{break-inside:avoid-page}table.grid th{position:static}}"
    ".chip{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;margin:0 4px 3px 0;"
    "border:1px solid;white-space:nowrap}"
    ".v-match{color:#1b5e20;border-color:#a5d6a7;background:#f1f8f1}"
    ".v-benign{color:#33691e;border-color:#c5e1a5;background:#f6faf0}"
    ".v-mismatch-candidate,.v-mismatch-default,.v-mismatch-both{color:#b71c1c;border-color:#ef9a9a;"
    "background:#fdecea}"
    ".v-runtime-error{color:#880e4f;border-color:#f48fb1;background:#fce4ec}"
    ".v-nondeterministic{color:#4a148c;border-color:#ce93d8;background:#f3e5f5}"
    ".v-compile-error{color:#555;border-color:#ccc;background:#f5f5f5}"
    ".v-timeout{color:#e65100;border-color:#ffcc80;background:#fff3e0}"
    ".tag{font-size:11px;padding:0 5px;border-radius:4px;margin-left:4px;color:#fff}"
    ".tag.default{background:#222}.tag.best{background:var(--best)}"
    ".status-bad{color:var(--bad);font-weight:600}.status-ok{color:#1b7f3b;font-weight:600}"
    ".note{color:var(--muted);font-size:12px}"
    "figure{margin:8px 0 14px}figcaption{font-size:12.5px;color:#374151;margin:0 0 4px}"
    "svg{display:block;max-width:100%;height:auto}"
    "svg text{font-family:inherit;font-size:11px;fill:#374151}"
    "a{color:#0b5cad;text-decoration:none}a:hover{text-decoration:underline}"
    "footer{color:var(--muted);font-size:12px;margin-top:24px}";

static void x(FILE *f, const char *s) { tn_rep_xml(f, s); }

static void chip(FILE *f, chk_verdict v, int64_t n) {
  fprintf(f, "<span class=\"chip v-%s\">%s", chk_verdict_name(v), chk_verdict_name(v));
  if (n >= 0)
    fprintf(f, " %" PRId64, n);
  fputs("</span>", f);
}

static void kv_code(FILE *f, const char *k, const char *v) {
  fprintf(f, "<tr><td>%s</td><td><code>", k);
  x(f, v);
  fputs("</code></td></tr>\n", f);
}

static void kv_text(FILE *f, const char *k, const char *v) {
  fprintf(f, "<tr><td>%s</td><td>", k);
  x(f, v);
  fputs("</td></tr>\n", f);
}

/* ---- the chart of simulated times ---------------------------------------------------- */

enum { CW = 1240, CH = 300, CL = 76, CR = 16, CT = 34, CB = 40 };

static const char *bar_colour(const tn_fusion_result *r, int i) {
  const tn_cand_result *c = &r->cands[i];
  if (chk_verdict_is_divergent(c->verdict))
    return "#d62728";
  if (i == 0)
    return "#222222";
  if (i == r->best)
    return "#2ca02c";
  return "#4c78a8";
}

static double chart_y(double v, double lo, double hi) {
  return CT + (CH - CT - CB) * (1.0 - (log10(v) - lo) / (hi - lo));
}

/* A label above bar i: a small triangle and a word. */
static void chart_marker(FILE *f, double cx, double top, double lift, const char *word, const char *colour) {
  fprintf(f,
          "<path d=\"M%.1f %.1f l-4 -7 h8 z\" fill=\"%s\"/>"
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" style=\"fill:%s;font-weight:600\">%s</text>\n",
          cx, top - 2, colour, cx, top - 12 - lift, colour, word);
}

static void legend_item(FILE *f, int xpos, const char *colour, const char *label) {
  fprintf(f, "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"18\">%s</text>\n",
          xpos, colour, xpos + 17, label);
}

static void time_chart(FILE *f, const tn_fusion_result *r) {
  int *ran = malloc(sizeof *ran * (size_t)(r->ncands ? r->ncands : 1));
  if (!ran)
    return;
  int n = 0;
  double mn = INFINITY, mx = 0;
  for (int i = 0; i < r->ncands; i++) {
    double t = r->cands[i].sim_time;
    if (t > 0 && isfinite(t)) {
      ran[n++] = i;
      mn = t < mn ? t : mn;
      mx = t > mx ? t : mx;
    }
  }
  if (n == 0) {
    fputs("<p class=\"note\">No candidate ran, so there are no times to chart.</p>\n", f);
    free(ran);
    return;
  }
  /* Fastest first; insertion sort keeps equal times in id order. */
  for (int i = 1; i < n; i++) {
    int v = ran[i], j = i;
    for (; j > 0 && r->cands[ran[j - 1]].sim_time > r->cands[v].sim_time; j--)
      ran[j] = ran[j - 1];
    ran[j] = v;
  }
  double lo = floor(log10(mn)), hi = ceil(log10(mx));
  if (hi - lo < 1)
    hi = lo + 1;
  const double pw = CW - CL - CR, bottom = CH - CB, bw = pw / n;

  fprintf(f, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"simulated time per candidate\">\n",
          CW, CH, CW, CH);
  /* Grid: every decade, and 2x and 5x when the range is narrow. */
  for (double d = lo; d <= hi + 1e-9; d++) {
    static const double sub[] = {1, 2, 5};
    for (int k = 0; k < 3; k++) {
      if (k > 0 && hi - lo > 2)
        break;
      double v = sub[k] * pow(10, d);
      if (log10(v) > hi + 1e-9)
        break;
      double y = chart_y(v, lo, hi);
      char t[32];
      tn_rep_time(t, sizeof t, v);
      fprintf(f,
              "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
              "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
              CL, CW - CR, y, y, k ? "#eef0f3" : "#d5dae0", CL - 6, y + 4, t);
    }
  }
  /* The bars as one path per colour: a bar with its own element and hover
   * text cost ~200 bytes, a tenth of the page for ten fusions; the
   * verdict table has each candidate's numbers. */
  double gap = bw > 4 ? 1 : 0, w = bw - gap > 0.6 ? bw - gap : 0.6;
  static const char *const colours[] = {"#4c78a8", "#d62728", "#222222", "#2ca02c"};
  for (size_t ci = 0; ci < sizeof colours / sizeof colours[0]; ci++) {
    bool open = false;
    for (int k = 0; k < n; k++) {
      if (strcmp(bar_colour(r, ran[k]), colours[ci]) != 0)
        continue;
      double y = chart_y(r->cands[ran[k]].sim_time, lo, hi);
      if (!open)
        fprintf(f, "<path fill=\"%s\" d=\"", colours[ci]);
      open = true;
      fprintf(f, "M%.1f %.1fh%.2fV%.1fh-%.2fz", CL + k * bw, y, w, bottom, w);
    }
    if (open)
      fputs("\"/>\n", f);
  }
  for (int k = 0; k < n; k++) {
    double cx = CL + (k + 0.5) * bw, top = chart_y(r->cands[ran[k]].sim_time, lo, hi);
    if (ran[k] == 0)
      chart_marker(f, cx, top, 0, "default", "#222222");
    else if (ran[k] == r->best)
      chart_marker(f, cx, top, 13, "best", "#2ca02c");
  }
  fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#8a939e\"/>\n", CL, CW - CR, bottom, bottom);
  fprintf(f,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d candidates that ran, fastest first"
          " (%d did not run and are not shown)</text>\n",
          CL + (int)pw / 2, CH - 12, n, r->ncands - n);
  fprintf(f, "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">simulated time (log)</text>\n",
          (CT + CH - CB) / 2, (CT + CH - CB) / 2);
  legend_item(f, CL, "#4c78a8", "correct (match, benign)");
  legend_item(f, CL + 190, "#d62728", "divergent");
  legend_item(f, CL + 290, "#222222", "default config");
  legend_item(f, CL + 420, "#2ca02c", "best correct config");
  fputs("</svg>\n", f);
  free(ran);
}

/* ---- heatmaps of error maps ------------------------------------------------------------ */

/* At most this many cells (a larger map is downsampled into blocks, each
 * drawn as its largest error), and per-cell hover texts only up to
 * HM_MAX_TITLES nonzero cells. */
enum { HM_MAX_ROWS = 32, HM_MAX_COLS = 64, HM_MAX_TITLES = 256 };

/* The colour of t in [0, 1] on a light-yellow to dark-purple ramp (small
 * errors pale, large ones dark), interpolated in RGB between five stops. */
static void ramp(double t, char *buf, size_t n) {
  static const unsigned char stops[5][3] = {
      {0xfc, 0xf4, 0xa3}, {0xfd, 0xb4, 0x4b}, {0xf0, 0x66, 0x3d}, {0xb3, 0x19, 0x4a}, {0x3b, 0x0f, 0x4f}};
  if (!(t >= 0))
    t = 0;
  if (t > 1)
    t = 1;
  double s = t * 4;
  int i = (int)s;
  if (i > 3)
    i = 3;
  double u = s - i;
  int rgb[3];
  for (int k = 0; k < 3; k++)
    rgb[k] = (int)lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * u);
  snprintf(buf, n, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

static const char *const HM_ZERO = "#eceff3", *const HM_NAN = "#1565c0";

/* Which part of an error map is drawn: rows of dim rd and columns of dim
 * cd (rd < 0: a single row), inside [r0, r1] x [c0, c1], every other
 * dimension fixed at fix[d]. */
typedef struct hm_view {
  int rd, cd;
  int64_t r0, r1, c0, c1;
  int64_t fix[HLO_MAX_RANK];
  int64_t br, bc;  /* elements per cell, down and across */
  int rows, cols;  /* cells */
} hm_view;

/* The metrics whose box and peak describe this map, or NULL. */
static const chk_metrics *map_metrics(const tn_cand_result *c, const tn_error_map *e) {
  if (c->vs_default.mismatches > 0 && c->vs_default.rank == e->rank)
    return &c->vs_default;
  if (c->has_vs_reference && c->vs_reference.mismatches > 0 && c->vs_reference.rank == e->rank)
    return &c->vs_reference;
  return NULL;
}

static int plan_view(const tn_error_map *e, const chk_metrics *m, hm_view *v) {
  memset(v, 0, sizeof *v);
  for (int d = 0; d < e->rank; d++)
    if (e->dims[d] <= 0)
      return -1;
  int64_t lo[HLO_MAX_RANK], hi[HLO_MAX_RANK];
  for (int d = 0; d < e->rank; d++) {
    lo[d] = m ? m->bbox_lo[d] : 0;
    hi[d] = m ? m->bbox_hi[d] : e->dims[d] - 1;
    if (lo[d] < 0 || hi[d] >= e->dims[d] || lo[d] > hi[d]) {
      lo[d] = 0;
      hi[d] = e->dims[d] - 1;
    }
    /* The slice goes through the peak: the worst element is always drawn. */
    v->fix[d] = m && m->peak_index >= 0 && m->peak[d] >= lo[d] && m->peak[d] <= hi[d] ? m->peak[d] : lo[d];
  }
  v->rd = -1;
  v->cd = -1;
  if (e->rank == 1) {
    v->cd = 0;
  } else if (e->rank >= 2) {
    /* The two dimensions along which the mismatches spread most (the
     * innermost on ties), kept in their order. */
    int a = -1, b = -1;
    for (int d = e->rank - 1; d >= 0; d--) {
      int64_t ext = hi[d] - lo[d];
      if (a < 0 || ext > hi[a] - lo[a]) {
        b = a;
        a = d;
      } else if (b < 0 || ext > hi[b] - lo[b]) {
        b = d;
      }
    }
    v->rd = a < b ? a : b;
    v->cd = a < b ? b : a;
  }
  v->r0 = v->rd >= 0 ? lo[v->rd] : 0;
  v->r1 = v->rd >= 0 ? hi[v->rd] : 0;
  v->c0 = v->cd >= 0 ? lo[v->cd] : 0;
  v->c1 = v->cd >= 0 ? hi[v->cd] : 0;
  int64_t nr = v->r1 - v->r0 + 1, nc = v->c1 - v->c0 + 1;
  v->br = (nr + HM_MAX_ROWS - 1) / HM_MAX_ROWS;
  v->bc = (nc + HM_MAX_COLS - 1) / HM_MAX_COLS;
  v->rows = (int)((nr + v->br - 1) / v->br);
  v->cols = (int)((nc + v->bc - 1) / v->bc);
  return 0;
}

/* The largest |error| over one cell's block; NaN (a one-sided NaN/Inf)
 * wins, since it is the worst kind of error. */
static double cell_value(const tn_error_map *e, const hm_view *v, int row, int col) {
  int64_t idx[HLO_MAX_RANK];
  memcpy(idx, v->fix, sizeof idx);
  double best = 0;
  for (int64_t i = 0; i < v->br; i++) {
    int64_t ri = v->r0 + row * v->br + i;
    if (ri > v->r1)
      break;
    for (int64_t j = 0; j < v->bc; j++) {
      int64_t ci = v->c0 + col * v->bc + j;
      if (ci > v->c1)
        break;
      if (v->rd >= 0)
        idx[v->rd] = ri;
      if (v->cd >= 0)
        idx[v->cd] = ci;
      int64_t flat = 0;
      for (int d = 0; d < e->rank; d++)
        flat = flat * e->dims[d] + idx[d];
      double a = fabs((double)e->data[flat]);
      if (isnan(a))
        return NAN;
      if (a > best)
        best = a;
    }
  }
  return best;
}

/* The elements under cell (row, col): "1,5" for one element, "1,0:5"
 * (half-open) along a dimension whose cells are blocks. */
static void cell_text(char *buf, size_t n, const hm_view *v, int rank, int row, int col) {
  size_t at = 0;
  buf[0] = '\0';
  for (int d = 0; d < rank && at + 1 < n; d++) {
    int64_t first = v->fix[d], last = v->fix[d];
    if (d == v->rd) {
      first = v->r0 + row * v->br;
      last = first + v->br - 1 < v->r1 ? first + v->br - 1 : v->r1;
    } else if (d == v->cd) {
      first = v->c0 + col * v->bc;
      last = first + v->bc - 1 < v->c1 ? first + v->bc - 1 : v->c1;
    }
    int w = first == last ? snprintf(buf + at, n - at, "%s%" PRId64, d ? "," : "", first)
                          : snprintf(buf + at, n - at, "%s%" PRId64 ":%" PRId64, d ? "," : "", first, last + 1);
    if (w < 0)
      break;
    at += (size_t)w < n - at ? (size_t)w : n - at - 1;
  }
}

static void heatmap(FILE *f, const tn_fusion_result *r, const tn_error_map *e) {
  const tn_cand_result *c = tn_fusion_result_find_cand(r, e->cand_id);
  if (!c || !e->data)
    return;
  const chk_metrics *m = map_metrics(c, e);
  hm_view v;
  if (plan_view(e, m, &v) != 0)
    return;
  double *vals = malloc(sizeof *vals * (size_t)v.rows * (size_t)v.cols);
  if (!vals)
    return;
  double mn = INFINITY, mx = 0;
  int nnan = 0;
  for (int i = 0; i < v.rows; i++)
    for (int j = 0; j < v.cols; j++) {
      double a = cell_value(e, &v, i, j);
      vals[i * v.cols + j] = a;
      if (isnan(a))
        nnan++;
      else if (a > 0 && isfinite(a)) {
        mn = a < mn ? a : mn;
        mx = a > mx ? a : mx;
      }
    }
  double lo = mx > 0 ? log10(mn) : 0, hi = mx > 0 ? log10(mx) : 0;

  /* Square cells, as large as fit in about 1000 x 300 pixels. */
  int s = 1000 / v.cols;
  if (300 / v.rows < s)
    s = 300 / v.rows;
  s = s > 18 ? 18 : s < 3 ? 3 : s;
  const int L = 64, T = 30, gw = v.cols * s, gh = v.rows * s;
  const int barx = L + gw + 36, bary = T, barh = gh > 140 ? gh : 140;
  const int W = barx + 150, H = T + (gh > barh ? gh : barh) + 56;

  char dims[160], peak[160], box[160];
  size_t at = 0;
  dims[0] = '\0';
  for (int d = 0; d < e->rank && at + 1 < sizeof dims; d++)
    at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%" PRId64, d ? "," : "", e->dims[d]);
  fputs("<figure>\n<figcaption>", f);
  fprintf(f, "<b>#%d</b> ", c->id);
  chip(f, c->verdict, -1);
  fputs("<code>", f);
  x(f, c->config);
  fprintf(f, "</code><br>|candidate &#8722; expected| over output %d [%s]", c->leaf, dims);
  if (m) {
    tn_rep_peak(peak, sizeof peak, m);
    tn_rep_bbox(box, sizeof box, m);
    fprintf(f, "; mismatch box %s, peak %s", box, peak);
  }
  if (e->rank > 2) {
    fprintf(f, "; slice of dims %d (rows) and %d (columns), the others fixed at the peak", v.rd, v.cd);
  }
  if (v.br > 1 || v.bc > 1)
    fprintf(f, "; each cell is the largest error of a %" PRId64 "&#215;%" PRId64 " block", v.br, v.bc);
  fputs("</figcaption>\n", f);

  fprintf(f, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"error heatmap\">\n", W,
          H, W, H);
  /* The cells as one image, a pixel each, scaled up without smoothing: as
   * SVG elements a 2000-cell map of scattered errors cost 30 KB, as a PNG
   * it costs 8 KB whatever the errors (issue 18: ten fusions under
   * 500 KB).  Hover texts are kept while there are few nonzero cells. */
  char colour[16], where[200];
  unsigned char *rgb = malloc((size_t)v.rows * (size_t)v.cols * 3);
  int nonzero = 0;
  for (int k = 0; rgb && k < v.rows * v.cols; k++) {
    double a = vals[k];
    if (isnan(a))
      snprintf(colour, sizeof colour, "%s", HM_NAN);
    else if (a == 0)
      snprintf(colour, sizeof colour, "%s", HM_ZERO);
    else
      ramp(hi > lo ? (log10(a) - lo) / (hi - lo) : 1.0, colour, sizeof colour);
    unsigned int cr = 0, cg = 0, cb = 0;
    sscanf(colour, "#%2x%2x%2x", &cr, &cg, &cb);
    rgb[3 * k] = (unsigned char)cr;
    rgb[3 * k + 1] = (unsigned char)cg;
    rgb[3 * k + 2] = (unsigned char)cb;
    nonzero += a != 0;
  }
  fprintf(f, "<image x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" preserveAspectRatio=\"none\" "
             "style=\"image-rendering:pixelated\" href=\"",
          L, T, gw, gh);
  if (!rgb || tn_rep_png_uri(f, rgb, v.cols, v.rows) != 0)
    fputs("data:,", f);
  fputs("\"/>\n", f);
  free(rgb);
  if (nonzero <= HM_MAX_TITLES)
    for (int i = 0; i < v.rows; i++)
      for (int j = 0; j < v.cols; j++) {
        double a = vals[i * v.cols + j];
        if (a == 0)
          continue;
        cell_text(where, sizeof where, &v, e->rank, i, j);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill-opacity=\"0\">", L + j * s,
                T + i * s, s, s);
        if (isnan(a))
          fprintf(f, "<title>[%s] NaN/Inf on one side</title></rect>\n", where);
        else
          fprintf(f, "<title>[%s] %s%.4g</title></rect>\n", where, v.br * v.bc > 1 ? "max " : "", a);
      }
  /* The peak cell, outlined. */
  if (m && m->peak_index >= 0) {
    int64_t pr = v.rd >= 0 ? m->peak[v.rd] : 0, pc = v.cd >= 0 ? m->peak[v.cd] : 0;
    if (pr >= v.r0 && pr <= v.r1 && pc >= v.c0 && pc <= v.c1)
      fprintf(f,
              "<rect x=\"%" PRId64 "\" y=\"%" PRId64 "\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#000\" "
              "stroke-width=\"2\"><title>peak</title></rect>\n",
              L + (pc - v.c0) / v.bc * s, T + (pr - v.r0) / v.br * s, s, s);
  }
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#8a939e\"/>\n", L, T, gw, gh);
  /* Axis labels: the first and last index of each axis. */
  fprintf(f, "<text x=\"%d\" y=\"%d\">%" PRId64 "</text>", L, T - 6, v.c0);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRId64 "</text>", L + gw, T - 6, v.c1);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", L + gw / 2, T - 6,
          v.cd >= 0 ? "columns" : "");
  if (v.cd >= 0)
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">dim %d</text>\n", L + gw / 2, T + gh + 16, v.cd);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRId64 "</text>", L - 6, T + 10, v.r0);
  if (v.rows > 1)
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%" PRId64 "</text>", L - 6, T + gh - 2, v.r1);
  if (v.rd >= 0)
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">dim %d</text>\n", L - 6, T + gh / 2 + 4, v.rd);

  /* The colour scale: log10 |error| from the smallest to the largest
   * nonzero error drawn, then swatches for zero and for NaN. */
  fprintf(f,
          "<defs><linearGradient id=\"ramp%d\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", e->cand_id);
  for (int k = 0; k <= 4; k++) {
    ramp(k / 4.0, colour, sizeof colour);
    fprintf(f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", k * 25, colour);
  }
  fputs("</linearGradient></defs>\n", f);
  int sh = barh - 60;
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" fill=\"url(#ramp%d)\" stroke=\"#8a939e\"/>\n", barx,
          bary, sh, e->cand_id);
  if (mx > 0) {
    fprintf(f, "<text x=\"%d\" y=\"%d\">%.3g</text>", barx + 20, bary + 9, mx);
    fprintf(f, "<text x=\"%d\" y=\"%d\">%.3g</text>", barx + 20, bary + sh, mn);
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"note\">log10 |err|</text>\n", barx + 20, bary + sh / 2 + 4);
  } else {
    fprintf(f, "<text x=\"%d\" y=\"%d\">no nonzero error</text>\n", barx + 20, bary + sh / 2);
  }
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\" stroke=\"#8a939e\"/>"
             "<text x=\"%d\" y=\"%d\">0 (equal)</text>\n",
          barx, bary + sh + 12, HM_ZERO, barx + 20, bary + sh + 23);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
             "<text x=\"%d\" y=\"%d\">NaN/Inf on one side (%d)</text>\n",
          barx, bary + sh + 32, HM_NAN, barx + 20, bary + sh + 43, nnan);
  fputs("</svg>\n</figure>\n", f);
  free(vals);
}

/* The expected and actual values around the peak of c's map: a cell
 * that differs shows both, one that agrees shows the value once. */
static void peak_table(FILE *f, const tn_fusion_result *r, const tn_cand_result *c) {
  const tn_error_map *e = NULL;
  const tn_peak_window *w = tn_rep_window(r, c, &e);
  if (!w)
    return;
  char axes[96], ev[40], av[40];
  tn_rep_window_axes(axes, sizeof axes, e);
  fprintf(f, "<table class=\"peak\"><caption>Candidate %d: expected &#8594; actual around the peak [", c->id);
  for (int d = 0; d < e->rank; d++)
    fprintf(f, "%s%" PRId64, d ? "," : "", w->peak[d]);
  fprintf(f, "] (%s)</caption>\n<tr><th></th>", axes);
  for (int j = 0; j < w->cols; j++)
    fprintf(f, "<th>%" PRId64 "</th>", tn_rep_window_col(e, j));
  fputs("</tr>\n", f);
  for (int i = 0; i < w->rows; i++) {
    int64_t row = tn_rep_window_row(e, i);
    fprintf(f, "<tr><th>%" PRId64 "</th>", row);
    for (int j = 0; j < w->cols; j++) {
      tn_rep_window_cell(ev, av, sizeof ev, w, i, j);
      bool differs = strcmp(ev, av) != 0;
      bool peak = (e->rank < 2 || row == w->peak[e->rank - 2]) &&
                  (e->rank < 1 || tn_rep_window_col(e, j) == w->peak[e->rank - 1]);
      fprintf(f, "<td class=\"%s%s\">", differs ? "d" : "", peak ? " pk" : "");
      x(f, ev);
      if (differs) {
        fputs(" &#8594; ", f);
        x(f, av);
      }
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</table>\n", f);
}

/* Two maps with the same shape and the same bytes: drawing the second
 * would repeat the first (issue 18 saw three identical heatmaps). */
static bool same_map(const tn_error_map *a, const tn_error_map *b) {
  if (a->rank != b->rank || !a->data || !b->data)
    return false;
  int64_t n = 1;
  for (int d = 0; d < a->rank; d++) {
    if (a->dims[d] != b->dims[d])
      return false;
    n *= a->dims[d];
  }
  return memcmp(a->data, b->data, sizeof(float) * (size_t)n) == 0;
}

/* ---- the verdict table ----------------------------------------------------------------- */

/* Rows kept in full: the divergent ones with distinct errors, then the
 * fastest correct ones.  The rest are named by id in one line each, so a
 * 256-candidate fusion costs tens of kilobytes, not hundreds; every row
 * stays in the results file and in the json report. */
enum { VT_MAX_DIVERGENT = 20, VT_MAX_CORRECT = 8 };

/* Two candidates whose errors are the same in every number the table
 * shows: one row, the other's id in its note. */
static bool same_errors(const tn_cand_result *a, const tn_cand_result *b) {
  const chk_metrics *x = tn_rep_metrics(a), *y = tn_rep_metrics(b);
  return a->verdict == b->verdict && x->count == y->count && x->mismatches == y->mismatches &&
         x->max_abs == y->max_abs && x->max_rel == y->max_rel && x->max_ulp == y->max_ulp &&
         x->peak_index == y->peak_index && x->rank == y->rank &&
         memcmp(x->bbox_lo, y->bbox_lo, sizeof x->bbox_lo) == 0 && memcmp(x->bbox_hi, y->bbox_hi, sizeof x->bbox_hi) == 0;
}

static void verdict_row(FILE *f, const tn_fusion_result *r, int i, const int *same, int nsame) {
  char t[32], peak[160], box[160];
  const tn_cand_result *c = &r->cands[i];
  const chk_metrics *m = tn_rep_metrics(c);
  bool div = chk_verdict_is_divergent(c->verdict);
  fprintf(f, "<tr%s><td>%d</td><td class=\"cfg\"><code>", div ? " class=\"div\"" : "", c->id);
  x(f, c->config);
  fputs("</code>", f);
  if (i == 0)
    fputs("<span class=\"tag default\">default</span>", f);
  if (i == r->best)
    fputs("<span class=\"tag best\">best</span>", f);
  fputs("</td><td>", f);
  chip(f, c->verdict, -1);
  tn_rep_time(t, sizeof t, c->sim_time);
  fprintf(f, "</td><td>%s</td>", t);
  if (c->sim_time > 0)
    fprintf(f, "<td>%.3gx</td>", c->speedup);
  else
    fputs("<td>-</td>", f);
  if (m->count > 0) {
    tn_rep_peak(peak, sizeof peak, m);
    tn_rep_bbox(box, sizeof box, m);
    fprintf(f,
            "<td>%" PRId64 " / %" PRId64 "</td><td>%.3g</td><td>%.3g</td><td>%" PRIu64 "</td><td class=\"mono\">%s</td>"
            "<td class=\"mono\">%s</td>",
            m->mismatches, m->count, m->max_abs, m->max_rel, m->max_ulp, peak, box);
  } else {
    fputs("<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>", f);
  }
  fputs("<td class=\"note\">", f);
  if (m == &c->vs_reference)
    fputs("vs the reference. ", f);
  x(f, c->message);
  if (nsame > 0) {
    fprintf(f, "%sThe same errors: %d more candidate%s, #", c->message[0] ? " " : "", nsame, nsame == 1 ? "" : "s");
    for (int k = 0; k < nsame; k++)
      fprintf(f, "%s%d", k ? ", " : "", r->cands[same[k]].id);
    fputc('.', f);
  }
  fputs("</td></tr>\n", f);
}

/* One full-width row naming candidates by id. */
static void ids_row(FILE *f, const tn_fusion_result *r, const int *idx, int n, const char *what) {
  if (n <= 0)
    return;
  fprintf(f, "<tr><td colspan=\"12\" class=\"note\">%d %s: #", n, what);
  for (int k = 0; k < n; k++)
    fprintf(f, "%s%d", k ? ", " : "", r->cands[idx[k]].id);
  fputs("</td></tr>\n", f);
}

static void verdict_table(FILE *f, const tn_fusion_result *r, int *order) {
  tn_rep_order(r, order);
  int n = r->ncands;
  /* kind[i] of order position k: 1 shown, 2 folded into an earlier row,
   * 0 left for a line of ids. */
  int *rest = malloc(sizeof *rest * (size_t)(n ? n : 1) * 2);
  if (!rest)
    return;
  int *same = rest + n;
  fputs("<table class=\"grid verdicts\">\n<thead><tr><th>id</th><th>config</th>"
        "<th>verdict</th><th>sim time</th><th>speedup</th><th>mismatches</th><th>max abs</th>"
        "<th>max rel</th><th>max ULP</th><th>peak</th><th>bounding box</th><th>note</th></tr></thead>\n<tbody>\n",
        f);
  /* Divergent, worst first, identical errors folded together. */
  int k = 0, shown = 0, nrest = 0;
  unsigned char *done = calloc((size_t)(n ? n : 1), 1);
  if (!done) {
    free(rest);
    return;
  }
  for (; k < n && chk_verdict_is_divergent(r->cands[order[k]].verdict); k++) {
    int i = order[k];
    if (done[k])
      continue;
    if (shown >= VT_MAX_DIVERGENT) {
      rest[nrest++] = i;
      continue;
    }
    int nsame = 0;
    for (int j = k + 1; j < n && chk_verdict_is_divergent(r->cands[order[j]].verdict); j++)
      if (!done[j] && same_errors(&r->cands[i], &r->cands[order[j]])) {
        same[nsame++] = order[j];
        done[j] = 1;
      }
    verdict_row(f, r, i, same, nsame);
    shown++;
  }
  ids_row(f, r, rest, nrest, "more divergent candidates, with other errors (every row is in the json report)");
  /* The rest: the default, the best and the fastest few correct ones;
   * the others, and those that did not run, by id. */
  nrest = 0;
  int correct = 0;
  for (; k < n && r->cands[order[k]].sim_time > 0; k++) {
    int i = order[k];
    if (i == 0 || i == r->best || correct < VT_MAX_CORRECT) {
      correct += i != 0 && i != r->best;
      verdict_row(f, r, i, NULL, 0);
    } else {
      rest[nrest++] = i;
    }
  }
  ids_row(f, r, rest, nrest, "more candidates that ran without diverging, slower");
  /* Those that did not run, one row per reason. */
  for (int a = k; a < n; a++) {
    int i = order[a];
    if (done[a])
      continue;
    if (i == 0) {
      verdict_row(f, r, i, NULL, 0);
      continue;
    }
    int nsame = 0;
    for (int j = a + 1; j < n; j++) {
      const tn_cand_result *p = &r->cands[i], *q = &r->cands[order[j]];
      if (!done[j] && order[j] != 0 && p->verdict == q->verdict && strcmp(p->message, q->message) == 0) {
        same[nsame++] = order[j];
        done[j] = 1;
      }
    }
    verdict_row(f, r, i, same, nsame);
  }
  fputs("</tbody></table>\n", f);
  free(done);
  free(rest);
}

/* ---- the HLO, knob attribution ------------------------------------------------------------- */

/* The opcode the hero kind names, to mark it in the HLO ("reduce(" in a
 * reduction fusion); NULL when the kind names none. */
static const char *hero_opcode(const char *hero) {
  static const char *const ops[][2] = {{"reduc", " reduce("}, {"dot", " dot("},     {"matmul", " dot("},
                                       {"conv", " convolution("}, {"sort", " sort("}, {"scatter", " scatter("},
                                       {"gather", " gather("}, {"window", " reduce-window("}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strstr(hero, ops[i][0]))
      return ops[i][1];
  return NULL;
}

/* The module's HLO text, its ROOT lines (the outputs that diverge) and the
 * hero's lines highlighted. */
static void hlo_block(FILE *f, const tn_fusion_result *r) {
  if (!r->hlo || !r->hlo[0])
    return;
  const char *hero = hero_opcode(r->hero);
  fputs("<h3>HLO</h3>\n<p class=\"note\">The outputs (<span class=\"root\">ROOT</span> lines) are where the "
        "divergence shows",
        f);
  if (hero)
    fputs("; the hero op is marked", f);
  fputs(".</p>\n<pre class=\"hlo\">", f);
  const char *p = r->hlo;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    const char *cls = strstr(line, "ROOT ") ? "root" : hero && strstr(line, hero) ? "hero" : NULL;
    if (cls)
      fprintf(f, "<span class=\"%s\">", cls);
    x(f, line);
    fputs(cls ? "</span>\n" : "\n", f);
    p += len + (e ? 1 : 0);
  }
  fputs("</pre>\n", f);
}

/* Groups shown with their representative's diff and commands; the rest
 * get a line each (groups come in the order of their worst candidate). */
enum { GROUPS_DETAILED = 6 };

/* The groups of divergent candidates (report_internal.h) with a
 * representative each: its diff against the default and its commands.
 * group_of[i] receives candidate i's group (-1: not divergent). */
static void groups_block(FILE *f, const tn_report_input *in, const tn_fusion_result *r, int *group_of) {
  tn_rep_group *g = NULL;
  int ng = tn_rep_attribute(r, &g, group_of);
  if (ng <= 0) {
    free(g);
    return;
  }
  fputs("<h3>Knob attribution</h3>\n<p class=\"note\">The divergent candidates, grouped by the smallest set of "
        "knob values that separates them from the matching ones; one representative (the worst) per group."
        "</p>\n<ul class=\"groups\">\n",
        f);
  char diff[512], cmd[4096];
  for (int i = 0; i < ng; i++) {
    const tn_cand_result *c = &r->cands[g[i].rep];
    if (i >= GROUPS_DETAILED) {
      /* Past the largest few, one line each: the commands of a group
       * differ from those above only in the config and the id. */
      fprintf(f, "<li class=\"brief\"><b>%d</b> ", g[i].count);
      for (int k = 0; k < g[i].nkeys && g[i].separates; k++) {
        fputs(k ? " and <code>" : "<code>", f);
        x(f, g[i].keys[k]);
        fputs("</code>", f);
      }
      if (!g[i].separates)
        fputs("not separated by up to three knob values", f);
      fprintf(f, "; representative #%d</li>\n", c->id);
      continue;
    }
    fputs("<li>", f);
    if (g[i].separates) {
      fprintf(f, "<b>%d</b> divergent candidate%s ha%s ", g[i].count, g[i].count == 1 ? "" : "s",
              g[i].count == 1 ? "s" : "ve");
      for (int k = 0; k < g[i].nkeys; k++) {
        fputs(k ? " and <code>" : "<code>", f);
        x(f, g[i].keys[k]);
        fputs("</code>", f);
      }
      fputs("; no matching candidate does.", f);
    } else {
      fputs("<b>1</b> divergent candidate that no set of up to three knob values separates from the matching "
            "ones.",
            f);
    }
    tn_rep_config_diff(diff, sizeof diff, c->config, r->ncands > 0 ? r->cands[0].config : "");
    fprintf(f, "<br>Representative: candidate %d, ", c->id);
    chip(f, c->verdict, -1);
    fputs(" differs from the default in <code>", f);
    x(f, diff);
    fputs("</code>\n<pre class=\"cmd\">", f);
    tn_rep_check_cmd(cmd, sizeof cmd, in, r, c);
    x(f, cmd);
    fputc('\n', f);
    tn_rep_reproduce_cmd(cmd, sizeof cmd, in, r, c);
    x(f, cmd);
    tn_rep_isolate_cmd(cmd, sizeof cmd, in, r, c);
    if (cmd[0]) {
      fputc('\n', f);
      x(f, cmd);
    }
    fputs("</pre></li>\n", f);
  }
  fputs("</ul>\n", f);
  free(g);
}

/* ---- one fusion ------------------------------------------------------------------------- */

static void fusion_section(FILE *f, const tn_report_input *in, const tn_stored_fusion *sf, int *order) {
  const tn_fusion_result *r = &sf->r;
  const tn_run_info *run = &in->run->info;
  int nd = tn_rep_ndivergent(r);
  char t[32], buf[64];
  fprintf(f, "<section class=\"card fusion %s\" id=\"f-", nd ? "divergent" : "clean");
  x(f, sf->group);
  fputs("\">\n<h2>", f);
  x(f, r->name);
  if (nd)
    fprintf(f, " <span class=\"status-bad\">&#8212; %d divergent</span>", nd);
  else
    fputs(" <span class=\"status-ok\">&#8212; no divergence</span>", f);
  fputs("</h2>\n<table class=\"kv\">\n", f);
  kv_code(f, "source", r->source);
  kv_text(f, "hero op", r->hero);
  kv_text(f, "machine", run->machine);
  kv_text(f, "compiler", run->compiler);
  snprintf(buf, sizeof buf, "%" PRIu64, r->seed);
  kv_text(f, "input seed", buf);
  if (r->ncands > 0) {
    const tn_cand_result *d = &r->cands[0];
    tn_rep_time(t, sizeof t, d->sim_time);
    fputs("<tr><td>default config</td><td><code>", f);
    x(f, d->config);
    fprintf(f, "</code> &#8212; %s, ", t);
    chip(f, d->verdict, -1);
    fputs("</td></tr>\n", f);
  }
  fprintf(f, "<tr><td>default vs reference</td><td>%s (max abs %.3g; atol %.3g, rtol %.3g)</td></tr>\n",
          !r->default_ran                ? "<span class=\"status-bad\">the default did not run</span>"
          : r->default_vs_reference_ok ? "<span class=\"status-ok\">agrees</span>"
                                       : "<span class=\"status-bad\">DISAGREES</span>",
          r->default_vs_reference.max_abs, r->reference_tol.atol, r->reference_tol.rtol);
  if (r->best >= 0) {
    const tn_cand_result *b = &r->cands[r->best];
    tn_rep_time(t, sizeof t, b->sim_time);
    fputs("<tr><td>best correct config</td><td><code>", f);
    x(f, b->config);
    fprintf(f, "</code> &#8212; %s, <b>%.2fx</b> the default's speed</td></tr>\n", t, b->speedup);
  } else {
    fputs("<tr><td>best correct config</td><td>none ran correctly</td></tr>\n", f);
  }
  fprintf(f, "<tr><td>verdicts</td><td>");
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (r->verdict_counts[v])
      chip(f, (chk_verdict)v, r->verdict_counts[v]);
  fprintf(f, " <span class=\"note\">(%d candidates, %.2f s)</span></td></tr>\n</table>\n", r->ncands, r->wall_time);

  int n = r->ncands > 0 ? r->ncands : 1;
  int *group_of = malloc(sizeof *group_of * (size_t)n);
  bool *group_drawn = calloc((size_t)n, sizeof *group_drawn);
  hlo_block(f, r);
  if (group_of)
    groups_block(f, in, r, group_of);
  fputs("<h3>Simulated time per candidate</h3>\n", f);
  time_chart(f, r);
  /* One map per group, the worst stored one (its representative's when
   * that is stored): the others would repeat it. */
  int shown = 0;
  bool *drawn = calloc((size_t)(r->nerror_maps > 0 ? r->nerror_maps : 1), sizeof *drawn);
  for (int i = 0; i < r->nerror_maps; i++) {
    const tn_cand_result *c = tn_fusion_result_find_cand(r, r->error_maps[i].cand_id);
    int idx = c ? (int)(c - r->cands) : -1;
    int gi = idx >= 0 && group_of ? group_of[idx] : -1;
    if (gi >= 0 && group_drawn && group_drawn[gi])
      continue;
    if (gi >= 0 && group_drawn)
      group_drawn[gi] = true;
    if (shown++ == 0)
      fputs("<h3>Error maps, one per group</h3>\n", f);
    const tn_error_map *same = NULL;
    for (int k = 0; k < i && !same; k++)
      if (drawn && drawn[k] && same_map(&r->error_maps[k], &r->error_maps[i]))
        same = &r->error_maps[k];
    if (same) {
      fprintf(f, "<p class=\"note\">Candidate %d: the same error map as candidate %d above, element for element.</p>\n",
              r->error_maps[i].cand_id, same->cand_id);
    } else {
      heatmap(f, r, &r->error_maps[i]);
      if (drawn)
        drawn[i] = true;
    }
    if (c)
      peak_table(f, r, c);
  }
  free(group_of);
  free(group_drawn);
  free(drawn);
  fputs("<h3 id=\"v-", f);
  x(f, sf->group);
  fputs("\">Verdicts</h3>\n", f);
  verdict_table(f, r, order);
  fputs("</section>\n", f);
}

/* ---- the run ----------------------------------------------------------------------------- */

static const char *culprit_class(const tn_stored_isolation *iso, int k) {
  int u = iso->culprits[k].unit;
  return u >= 0 && u < iso->nunits ? iso->units[u].cls : "?";
}

/* What an isolation run found, for the overview of a run that checked no
 * fusion: the culprits by class, or that there is none. */
static void isolation_status(FILE *f, const tn_stored_isolation *iso) {
  if (iso->nculprits == 0) {
    fprintf(f, "<span class=\"status-ok\">isolation: no culprit in %d unit%s</span>", iso->nunits,
            iso->nunits == 1 ? "" : "s");
    return;
  }
  fprintf(f, "<span class=\"status-bad\">isolation: %d culprit%s in %d unit%s (", iso->nculprits,
          iso->nculprits == 1 ? "" : "s", iso->nunits, iso->nunits == 1 ? "" : "s");
  /* classes in the order of their first culprit, worst first */
  for (int k = 0; k < iso->nculprits; k++) {
    const char *cls = culprit_class(iso, k);
    bool seen = false;
    for (int j = 0; j < k && !seen; j++)
      seen = strcmp(culprit_class(iso, j), cls) == 0;
    if (seen)
      continue;
    int n = 0;
    for (int j = k; j < iso->nculprits; j++)
      n += strcmp(culprit_class(iso, j), cls) == 0;
    fprintf(f, "%s%d ", k ? ", " : "", n);
    x(f, cls);
  }
  fputs(")</span>", f);
}

static void overview(FILE *f, const tn_report_input *in) {
  const tn_stored_run *run = in->run;
  const tn_run_info *ri = &run->info;
  int nbad = 0, ndiv = 0, ncand = 0;
  for (int i = 0; i < run->nfusions; i++) {
    int nd = tn_rep_ndivergent(&run->fusions[i].r);
    nbad += nd > 0;
    ndiv += nd;
    ncand += run->fusions[i].r.ncands;
  }
  fputs("<header class=\"card\">\n<h1>tune report</h1>\n<p class=\"sub\">", f);
  bool isolation_only = run->nfusions == 0 && in->isolation;
  if (isolation_only)
    isolation_status(f, in->isolation);
  else if (nbad)
    fprintf(f, "<span class=\"status-bad\">%d divergent candidate%s in %d of %d fusion%s</span>", ndiv,
            ndiv == 1 ? "" : "s", nbad, run->nfusions, run->nfusions == 1 ? "" : "s");
  else
    fprintf(f, "<span class=\"status-ok\">no divergence in %d fusion%s</span>", run->nfusions,
            run->nfusions == 1 ? "" : "s");
  if (!isolation_only)
    fprintf(f, " &#183; %d candidates checked", ncand);
  fputs("</p>\n<table class=\"kv\">\n", f);
  kv_code(f, "results file", in->results_path ? in->results_path : "");
  fputs("<tr><td>run</td><td><code>", f);
  x(f, ri->id);
  fputs("</code> &#8212; ", f);
  x(f, ri->status);
  fputs(", started ", f);
  x(f, ri->started);
  if (ri->finished[0]) {
    fputs(", finished ", f);
    x(f, ri->finished);
  }
  fputs("</td></tr>\n", f);
  kv_text(f, "machine", ri->machine);
  kv_text(f, "compiler", ri->compiler);
  if (ri->defects_unknown[0])
    kv_text(f, "defects not recognised", ri->defects_unknown);
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64, ri->seed);
  kv_text(f, "seed", buf);
  kv_text(f, "host", ri->host);
  kv_code(f, "command", ri->command);
  if (in->tool_version && in->tool_version[0])
    kv_text(f, "written by tune", in->tool_version);
  fputs("</table>\n", f);
  if (isolation_only) {
    fputs("</header>\n", f);
    return;
  }

  fputs("<h3>Fusions</h3>\n<table class=\"grid\"><thead><tr><th>fusion</th><th>source</th><th>hero</th>"
        "<th>candidates</th><th>divergent</th><th>default time</th><th>best speedup</th>"
        "<th>default vs reference</th></tr></thead>\n<tbody>\n",
        f);
  for (int i = 0; i < run->nfusions; i++) {
    const tn_stored_fusion *sf = &run->fusions[i];
    const tn_fusion_result *r = &sf->r;
    int nd = tn_rep_ndivergent(r);
    char t[32];
    tn_rep_time(t, sizeof t, r->ncands > 0 ? r->cands[0].sim_time : 0);
    fprintf(f, "<tr%s><td><a href=\"#f-", nd ? " class=\"div\"" : "");
    x(f, sf->group);
    fputs("\">", f);
    x(f, r->name);
    fputs("</a></td><td><code>", f);
    x(f, r->source);
    fputs("</code></td><td>", f);
    x(f, r->hero);
    fprintf(f, "</td><td class=\"n\">%d</td><td class=\"n\">%s%d%s</td><td class=\"n\">%s</td>", r->ncands,
            nd ? "<span class=\"status-bad\">" : "", nd, nd ? "</span>" : "", t);
    if (r->best >= 0)
      fprintf(f, "<td class=\"n\">%.2fx</td>", r->cands[r->best].speedup);
    else
      fputs("<td class=\"n\">-</td>", f);
    fprintf(f, "<td>%s</td></tr>\n",
            !r->default_ran ? "did not run" : r->default_vs_reference_ok ? "agrees" : "<b>disagrees</b>");
  }
  fputs("</tbody></table>\n</header>\n", f);
}

int tn_report_html(FILE *f, const tn_report_input *in, hlo_error *err) {
  const tn_stored_run *run = in->run;
  int maxc = 1;
  for (int i = 0; i < run->nfusions; i++)
    maxc = run->fusions[i].r.ncands > maxc ? run->fusions[i].r.ncands : maxc;
  int *order = malloc(sizeof *order * (size_t)maxc);
  if (!order)
    return hlo_error_set(err, 0, 0, "out of memory");
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>tune report: ",
        f);
  x(f, run->info.id);
  fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", STYLE);
  overview(f, in);
  if (tn_rep_isolate_html(f, in, err) < 0) {
    free(order);
    return -1;
  }
  for (int i = 0; i < run->nfusions; i++)
    fusion_section(f, in, &run->fusions[i], order);
  fputs("<footer>Written by <code>tune --report</code> from <code>", f);
  x(f, in->results_path ? in->results_path : "");
  fputs("</code>. This page is self-contained: it loads no script, font, style sheet or image.</footer>\n"
        "</main>\n</body>\n</html>\n",
        f);
  free(order);
  return tn_rep_check_stream(f, err);
}
