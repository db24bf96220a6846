/* cli_space.c — `tune --space FILE [--machine NAME]`: the candidate space of
 * a fusion, one config per line in canonical text, so scripts can read it
 * back with dev_config_parse.
 *
 *   default <config>     the compiler's own pick (dev_space.h)
 *   <config>             every candidate, the default first
 *
 * The machine defaults to TN_DEFAULT_MACHINE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "device/dev_fusion.h"
#include "device/dev_machine.h"
#include "device/dev_space.h"

int tn_cmd_space(const tn_opts *o) {
  const char *mname = o->machine ? o->machine : TN_DEFAULT_MACHINE;
  dev_machine m;
  hlo_error err = {0};
  if (dev_machine_find(mname, &m, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return TN_EXIT_USAGE;
  }
  hlo_module *mod = tn_load_module(o->file, 0);
  if (!mod)
    return TN_EXIT_USAGE;
  dev_fusion f;
  dev_config *cands = NULL, dflt;
  int n = 0;
  if (dev_fusion_analyze(mod, &f, &err) != 0 || dev_space_enumerate(&f, &m, &cands, &n, &dflt, &err) != 0) {
    fprintf(stderr, "%s:%d:%d: error: %s\n", strcmp(o->file, "-") == 0 ? "<stdin>" : o->file, err.line,
            err.col, err.msg);
    hlo_module_free(mod);
    return TN_EXIT_USAGE;
  }
  tn_text_output to;
  if (tn_text_output_open(&to, o->output, 1, &o->file) != 0) {
    free(cands);
    hlo_module_free(mod);
    return TN_EXIT_USAGE;
  }
  FILE *out = to.f;
  char text[DEV_CONFIG_TEXT_MAX];
  dev_config_print(&dflt, text, sizeof text);
  fprintf(out, "default %s\n", text);
  for (int i = 0; i < n; i++) {
    dev_config_print(&cands[i], text, sizeof text);
    fprintf(out, "%s\n", text);
  }
  if (!o->quiet)
    fprintf(stderr, "tune: %s: %s fusion %s, %d candidate%s on %s\n", o->file, dev_hero_name(f.kind),
            f.name ? f.name : "?", n, n == 1 ? "" : "s", m.name);
  int rc = tn_text_output_close(&to, 1) == 0 ? TN_EXIT_OK : TN_EXIT_USAGE;
  free(cands);
  hlo_module_free(mod);
  return rc;
}
