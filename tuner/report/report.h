/* report.h — divergence reports of one stored run, for triage.
 *
 * One run of a results file (store_read.h) is rendered in one of four
 * formats, one writer per file:
 *
 *   html   report_html.c   one self-contained page to look at: per fusion a
 *                          chart of simulated time per candidate, heatmaps
 *                          of the worst error maps, the verdict table
 *   md     report_md.c     to paste into a compiler bug tracker: each
 *                          finding with its tolerance, metrics, reproducer
 *                          commands and the files to attach
 *   json   report_json.c   for tools: every row and metric, stable keys
 *   junit  report_junit.c  for CI dashboards: a testsuite per fusion, a
 *                          testcase per candidate, divergences as failures
 *
 * Writers write only to the FILE* they are given and return 0, or -1 with
 * err (a failed write is an error too: the caller may be writing to a full
 * disk or a closed pipe).
 */
#ifndef TUNE_REPORT_H
#define TUNE_REPORT_H

#include <stdio.h>

#include "hlo/hlo_error.h"
#include "store/store_isolate.h"
#include "store/store_read.h"

typedef enum tn_report_format {
  TN_REPORT_HTML = 0,
  TN_REPORT_MD,
  TN_REPORT_JSON,
  TN_REPORT_JUNIT,
} tn_report_format;

/* What a report is made from. */
typedef struct tn_report_input {
  const char *results_path;  /* the results file as the user named it: it
                                appears in reproducer commands and in the
                                list of files to attach */
  const tn_stored_run *run;  /* the run reported on */
  const tn_run_info *runs;   /* every run in the file, oldest first (may be
                                NULL): json lists them, and reproducer
                                commands name the run when it is not the
                                latest */
  int nruns;
  const char *tool_version;  /* the tune that wrote the file ("" unknown) */
  int schema_version;        /* the file's schema_version; 0: the current */
  const tn_stored_isolation *isolation; /* the run's isolation (tune
                                           --isolate -o), or NULL */
} tn_report_input;

/* "html", "md", "json", "junit" (also "markdown" and "xml"); -1 when the
 * name is none of them. */
int tn_report_format_from_name(const char *name);
const char *tn_report_format_name(tn_report_format f);

/* Writes the report of in->run in format fmt to f. */
int tn_report_write(FILE *f, tn_report_format fmt, const tn_report_input *in, hlo_error *err);

int tn_report_html(FILE *f, const tn_report_input *in, hlo_error *err);
int tn_report_md(FILE *f, const tn_report_input *in, hlo_error *err);
int tn_report_json(FILE *f, const tn_report_input *in, hlo_error *err);
int tn_report_junit(FILE *f, const tn_report_input *in, hlo_error *err);

#endif
