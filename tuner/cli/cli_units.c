/* cli_units.c — `tune --list-fusions FILE...`: the tuning units of each
 * module (units.h), one line each, so that a user sees what --check will
 * check and can pick some with --fusion. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "device/dev_fusion.h"
#include "hlo/hlo_print.h"
#include "run/units.h"

/* FILE:NAME kind=K hero=H shape=S flops=N bytes=N in=COMPUTATION */
static void list_unit(const char *file, const hlo_module *m, const tn_unit *u) {
  hlo_error err = {0};
  hlo_module *um = u->ins ? tn_unit_module(m, u, &err) : NULL;
  const char *in = u->where ? u->where->name : "?";
  dev_fusion f;
  if ((u->ins && !um) || dev_fusion_analyze(um ? um : m, &f, &err) != 0) {
    printf("%s:%s kind=%s hero=? shape=? flops=? bytes=? in=%s unsupported: %s\n", file, u->name, tn_unit_kind(u), in,
           err.msg);
    hlo_module_free(um);
    return;
  }
  char *shape = hlo_print_shape(&f.comp->root->shape);
  printf("%s:%s kind=%s hero=%s shape=%s flops=%lld bytes=%lld in=%s\n", file, u->name, tn_unit_kind(u),
         dev_hero_name(f.kind), shape ? shape : "?", (long long)f.flops, (long long)(f.in_bytes + f.out_bytes), in);
  free(shape);
  hlo_module_free(um);
}

int tn_cmd_list_fusions(const tn_opts *o, int nfiles, char *const *files) {
  int rc = TN_EXIT_OK, listed = 0;
  for (int i = 0; i < nfiles; i++) {
    hlo_module *m = tn_load_module(files[i], 0);
    if (!m) {
      rc = TN_EXIT_USAGE;
      continue;
    }
    tn_units units;
    hlo_error err = {0};
    if (tn_units_find(m, &units, &err) != 0) {
      fprintf(stderr, "tune: %s: error: %s\n", files[i], err.msg);
      rc = TN_EXIT_USAGE;
    } else if (units.n == 0) {
      printf("%s: nothing to tune (no fusion and no op that runs as a kernel of its own)\n", files[i]);
    }
    for (int u = 0; u < units.n; u++) {
      bool want = o->nfusions == 0;
      for (int k = 0; k < o->nfusions && !want; k++)
        want = tn_unit_selected(o->fusions[k], files[i], units.v[u].name);
      if (want) {
        list_unit(files[i], m, &units.v[u]);
        listed++;
      }
    }
    tn_units_free(&units);
    hlo_module_free(m);
  }
  if (o->nfusions > 0 && listed == 0 && rc == TN_EXIT_OK) {
    fputs("tune: --fusion: no unit matches\n", stderr);
    rc = TN_EXIT_USAGE;
  }
  return rc;
}
