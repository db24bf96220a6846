/* cli_print.c — `tune --print FILE`: parse, verify, print canonical text. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hlo/hlo_print.h"

int tn_cmd_print(const tn_opts *o) {
  hlo_module *m = tn_load_module(o->file, o->no_verify);
  if (!m)
    return TN_EXIT_USAGE;
  tn_text_output out;
  if (tn_text_output_open(&out, o->output, 1, &o->file) != 0) {
    hlo_module_free(m);
    return TN_EXIT_USAGE;
  }
  errno = 0;
  int rc = hlo_print_module_to(m, out.f);
  hlo_module_free(m);
  if (rc != 0) {
    /* Out of memory (the print buffer) or the write's own error, e.g.
     * ENOSPC: what was written so far is thrown away. */
    int why = errno;
    tn_text_output_close(&out, 0);
    fprintf(stderr, "tune: cannot print the module: %s\n", why ? strerror(why) : "write error");
    return TN_EXIT_USAGE;
  }
  return tn_text_output_close(&out, 1) == 0 ? TN_EXIT_OK : TN_EXIT_USAGE;
}
