/* cli_print.c — `tune --print FILE`: parse, verify, print canonical text. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlo_print.h"

int tn_cmd_print(const tn_opts *o) {
  hlo_module *m = tn_load_module(o->file, o->no_verify);
  if (!m)
    return TN_EXIT_USAGE;
  FILE *out = stdout;
  if (o->output && strcmp(o->output, "-") != 0) {
    out = tn_open_text_output(o->output, o->file);
    if (!out) {
      hlo_module_free(m);
      return TN_EXIT_USAGE;
    }
  }
  errno = 0;
  int rc = hlo_print_module_to(m, out);
  /* Out of memory (the print buffer) or the write's own error, e.g. ENOSPC. */
  int why = rc != 0 ? errno : 0;
  if (out != stdout) {
    if (fclose(out) != 0 && rc == 0) {
      rc = -1;
      why = errno;
    }
  } else if (fflush(out) != 0 && rc == 0) {
    rc = -1;
    why = errno;
  }
  hlo_module_free(m);
  if (rc != 0) {
    if (why)
      fprintf(stderr, "tune: cannot print the module: %s\n", strerror(why));
    else
      fprintf(stderr, "tune: write error\n");
    return TN_EXIT_USAGE;
  }
  return TN_EXIT_OK;
}
