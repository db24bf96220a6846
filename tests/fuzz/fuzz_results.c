/* fuzz_results.c — libFuzzer target for the results-file reader.
 *
 * The input is written to a file and read the way `tune --report` reads
 * it: the list of runs, then every run, each rendered in all four report
 * formats.  Every input must either be refused with an error value or be
 * read and reported; a crash, a leak, a sanitizer report, a huge
 * allocation or an HDF5 identifier left open is a bug.  The reader checks
 * a file in a child process before HDF5 decodes it (h5probe.h), so a
 * crash inside HDF5 itself, or an object HDF5 cannot open (whose error
 * path leaks inside HDF5 1.10), shows as a refusal here, and what is left
 * to find is in tune's own code.  See tests/fuzz/run_results.sh for the command.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "report/report.h"
#include "store/store_read.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(path, sizeof path, "/tmp/fuzz_results.%ld.h5", (long)getpid());
  sink = fopen("/dev/null", "w");
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return sink ? 0 : 1;
}

static void report_run(const tn_stored_run *run, const tn_run_info *runs, int nruns, const char *tv) {
  tn_report_input in = {.results_path = path, .run = run, .runs = runs, .nruns = nruns, .tool_version = tv};
  for (int fmt = TN_REPORT_HTML; fmt <= TN_REPORT_JUNIT; fmt++) {
    hlo_error err = {0};
    (void)tn_report_write(sink, (tn_report_format)fmt, &in, &err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  size_t w = fwrite(data, 1, size, f);
  if (fclose(f) != 0 || w != size)
    return 0;
  hlo_error err = {0};
  tn_run_info *runs = NULL;
  int nruns = 0;
  char tv[64] = "";
  if (tn_results_list_runs(path, &runs, &nruns, tv, sizeof tv, &err) == 0) {
    for (int i = 0; i < nruns; i++) {
      tn_stored_run run;
      if (tn_results_read_run(path, runs[i].id, &run, &err) == 0) {
        report_run(&run, runs, nruns, tv);
        tn_stored_run_free(&run);
      }
    }
    free(runs);
  }
  unlink(path);
  /* A handle tune forgets to close stays reachable from HDF5's table of
   * identifiers, where the leak checker cannot see it: count them. */
  ssize_t open_ids = H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open_ids != 0) {
    fprintf(stderr, "fuzz_results: %zd HDF5 identifiers left open after one input\n", open_ids);
    abort();
  }
  return 0;
}
