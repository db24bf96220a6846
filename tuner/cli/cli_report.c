/* cli_report.c — `tune --report RESULTS.h5 [--run ID] --format FMT [-o FILE]`:
 * one run of a results file as an html, md, json or junit report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outpath.h"
#include "report/report.h"
#include "store/store_read.h"

/* Writes the report to path through a temporary beside it, renamed into
 * place once complete (tn_text_output): a failed or interrupted report
 * never leaves a half-written file where a CI job or a browser would pick
 * it up. */
static int write_to_file(const char *path, tn_report_format fmt, const tn_report_input *in) {
  tn_text_output out;
  if (tn_text_output_open(&out, path, 0, NULL) != 0)
    return -1;
  hlo_error err = {0};
  if (tn_report_write(out.f, fmt, in, &err) != 0) {
    fprintf(stderr, "tune: %s: %s\n", path, err.msg);
    tn_text_output_close(&out, 0);
    return -1;
  }
  return tn_text_output_close(&out, 1);
}

int tn_cmd_report(const tn_opts *o) {
  if (!o->format) {
    fputs("tune: --report needs --format html, md, json or junit\n", stderr);
    return TN_EXIT_USAGE;
  }
  int fmt = tn_report_format_from_name(o->format);
  if (fmt < 0) {
    fprintf(stderr, "tune: --format: unknown format '%s' (html, md, json or junit)\n", o->format);
    return TN_EXIT_USAGE;
  }
  hlo_error err = {0};
  /* The report replaces its output: never the results file it reads, and
   * through a link, the link's target (outpath.h). */
  char *out = NULL;
  if (o->output && strcmp(o->output, "-") != 0) {
    out = tn_out_resolve(o->output, &err);
    if (!out || tn_out_refuse_input(out, 1, &o->file, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      free(out);
      return TN_EXIT_USAGE;
    }
  }
  tn_run_info *runs = NULL;
  int nruns = 0;
  char tool_version[64] = "";
  if (tn_results_list_runs(o->file, &runs, &nruns, tool_version, sizeof tool_version, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    free(out);
    return TN_EXIT_USAGE;
  }
  tn_stored_run run;
  if (tn_results_read_run(o->file, o->run_id, &run, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    free(runs);
    free(out);
    return TN_EXIT_USAGE;
  }
  /* The run is reported anyway; the report names them too. */
  if (run.info.defects_unknown[0])
    fprintf(stderr, "tune: %s: run %s: defects not recognised by this tune (a newer tune wrote the run): %s\n",
            o->file, run.info.id, run.info.defects_unknown);
  tn_stored_isolation iso;
  int has_iso = tn_results_read_isolation(o->file, run.info.id, &iso, &err);
  if (has_iso < 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    tn_stored_run_free(&run);
    free(runs);
    free(out);
    return TN_EXIT_USAGE;
  }
  int version = tn_results_schema_version(o->file, &err);
  tn_report_input in = {.results_path = o->file,
                        .isolation = has_iso ? &iso : NULL,
                        .run = &run,
                        .runs = runs,
                        .nruns = nruns,
                        .tool_version = tool_version,
                        .schema_version = version > 0 ? version : 0};
  int rc;
  if (out) {
    rc = write_to_file(out, (tn_report_format)fmt, &in);
  } else {
    rc = tn_report_write(stdout, (tn_report_format)fmt, &in, &err);
    if (rc != 0)
      fprintf(stderr, "tune: %s\n", err.msg);
  }
  if (has_iso)
    tn_stored_isolation_free(&iso);
  tn_stored_run_free(&run);
  free(runs);
  free(out);
  return rc == 0 ? TN_EXIT_OK : TN_EXIT_USAGE;
}
