/* report_internal.h — what the four report writers share (report.c):
 * escaping, the reproducer commands, and the small texts every format
 * prints the same way.  Not part of the public interface. */
#ifndef TUNE_REPORT_INTERNAL_H
#define TUNE_REPORT_INTERNAL_H

#include <stdio.h>

#include "report.h"

/* Text for XML and HTML element content and attribute values: & < > " '
 * escaped, control characters XML 1.0 cannot carry and invalid UTF-8
 * bytes replaced by '?', so the output always parses. */
void tn_rep_xml(FILE *f, const char *s);

/* The number of divergent candidates of r (chk_verdict_is_divergent). */
int tn_rep_ndivergent(const tn_fusion_result *r);

/* Candidate indices of r in report order: the divergent ones first, worst
 * first (mismatch count, then id), then the others fastest first, the
 * ones that did not run last.  idx holds r->ncands entries. */
void tn_rep_order(const tn_fusion_result *r, int *idx);

/* The metrics that describe a candidate's divergence: against the
 * default, unless it matches the default but not the reference. */
const chk_metrics *tn_rep_metrics(const tn_cand_result *c);

/* "(1,2)" or "-" (peak); "[1:8, 0:400]" half-open per dimension, or "-". */
void tn_rep_peak(char *buf, size_t n, const chk_metrics *m);
void tn_rep_bbox(char *buf, size_t n, const chk_metrics *m);
/* A duration for people: "812 ns", "12.4 us", "3.05 ms", "1.20 s"; "-"
 * when it did not run (0). */
void tn_rep_time(char *buf, size_t n, double seconds);

/* The reproducer commands of candidate c of fusion r, shell-quoted:
 *   tune --check SOURCE --only 'CONFIG' --seed N [--profile P] --machine M
 *        --compiler C [--defect D]... [--fusion NAME]
 *   tune --reproduce RESULTS.h5 --fusion NAME --candidate ID -o DIR
 *   tune --isolate SOURCE --config 'NAME=CONFIG' --seed N [--profile P]
 *        --machine M --compiler C [--defect D]...
 * The defects are the run's additions to its profile, as --reproduce
 * names them (tn_repro_device_of_run).  The --isolate command is "" for a
 * fusion that is not a unit of a larger module: --isolate refuses a file
 * that is one kernel. */
void tn_rep_check_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                      const tn_cand_result *c);
void tn_rep_reproduce_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                          const tn_cand_result *c);
void tn_rep_isolate_cmd(char *buf, size_t n, const tn_report_input *in, const tn_fusion_result *r,
                        const tn_cand_result *c);
/* The device options of the run's reproducers: " --machine M --compiler C
 * [--defect D]...", the device part of tn_rep_check_cmd. */
void tn_rep_device_args(char *buf, size_t n, const tn_report_input *in);
/* s as one word for a POSIX shell, quoted only when it needs to be. */
void tn_rep_shell_word(char *buf, size_t n, const char *s);
/* The bundle folder tn_rep_reproduce_cmd names: "repro-NAME-ID". */
void tn_rep_bundle_dir(char *buf, size_t n, const tn_fusion_result *r, const tn_cand_result *c);

/* Knob attribution (report_attr.c): the divergent candidates of a fusion
 * in groups, each named by the smallest set of knob values ("flags=fuse-
 * converts") that its candidates share and no matching candidate has in
 * full.  rep is the group's worst candidate (an index into r->cands);
 * separates is 0 for a candidate no set of up to three knobs separates,
 * alone in its group.  Returns the number of groups (*groups malloc'd),
 * -1 when out of memory.  group_of (NULL, or r->ncands entries) receives
 * each candidate's group, -1 for one that does not diverge. */
typedef struct tn_rep_group {
  int nkeys;
  char keys[3][96];
  int count;
  int rep;
  int separates;
} tn_rep_group;
int tn_rep_attribute(const tn_fusion_result *r, tn_rep_group **groups, int *group_of);
/* The knob words of config that differ from dflt, space-separated. */
void tn_rep_config_diff(char *buf, size_t n, const char *config, const char *dflt);

/* The values around the peak of candidate c's error map (result.h), or
 * NULL when none is stored; *map gets the map. */
const tn_peak_window *tn_rep_window(const tn_fusion_result *r, const tn_cand_result *c, const tn_error_map **map);
/* Window element (i, j) as text: "2.5" when expected and actual are the
 * same number, else the expected and the actual value each with as many
 * digits as it takes to tell them apart; both written in e and a. */
void tn_rep_window_cell(char *e, char *a, size_t n, const tn_peak_window *w, int i, int j);
/* "rows: dim 0, columns: dim 1, the others at the peak": which
 * dimensions the window spans, for a caption. */
void tn_rep_window_axes(char *buf, size_t n, const tn_error_map *map);
/* The index of window row i (dim rank-2) or column j (dim rank-1). */
int64_t tn_rep_window_row(const tn_error_map *map, int i);
int64_t tn_rep_window_col(const tn_error_map *map, int j);

/* Writes a w x h RGB image (3 bytes a pixel, rows top first) as a
 * "data:image/png;base64,..." URI (report_png.c); -1, writing nothing,
 * when out of memory. */
int tn_rep_png_uri(FILE *f, const unsigned char *rgb, int w, int h);

/* 0, or -1 with err when f has seen a write error. */
int tn_rep_check_stream(FILE *f, hlo_error *err);

/* The run's isolation, in->isolation (report_isolate.c): 1 when
 * written, 0 when there is none. */
int tn_rep_isolate_html(FILE *f, const tn_report_input *in, hlo_error *err);
int tn_rep_isolate_md(FILE *f, const tn_report_input *in, hlo_error *err);

#endif
