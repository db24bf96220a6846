/* result_fixture.c — see result_fixture.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "result_fixture.h"

void rfx_result(tn_fusion_result *r, const char *name, const char *source, const char *hero,
                const char *hlo, uint64_t fp, int ncands) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->source, sizeof r->source, "%s", source);
  snprintf(r->hero, sizeof r->hero, "%s", hero);
  r->hlo = strdup(hlo);
  assert_non_null(r->hlo);
  r->fingerprint = fp;
  r->seed = 42;
  r->ncands = ncands;
  r->cands = calloc((size_t)ncands, sizeof *r->cands);
  assert_non_null(r->cands);
}

void rfx_cand(tn_cand_result *c, int id, const char *cfg, chk_verdict v) {
  hlo_error err = {0};
  memset(c, 0, sizeof *c);
  c->id = id;
  assert_int_equal(dev_config_parse(cfg, &c->cfg, &err), 0);
  dev_config_print(&c->cfg, c->config, sizeof c->config);
  assert_string_equal(c->config, cfg);
  c->fingerprint = dev_config_fingerprint(&c->cfg);
  c->verdict = v;
  c->vs_default.peak_index = -1;
  c->vs_default.rank = 2;
  c->vs_default.count = 120000;
}

void rfx_divergent(tn_cand_result *c) {
  chk_metrics *m = &c->vs_default;
  m->mismatches = 5;
  m->max_abs = 0.25;
  m->max_rel = 0.5;
  m->max_ulp = 123456789012ull;
  m->rms = 1e-3;
  m->nan_mismatches = 1;
  m->peak_index = 401;
  m->peak[0] = 1;
  m->peak[1] = 1;
  m->bbox_lo[0] = 1;
  m->bbox_lo[1] = 0;
  m->bbox_hi[0] = 7;
  m->bbox_hi[1] = 399;
  for (int i = 0; i < CHK_HIST_BUCKETS; i++)
    m->hist[i] = 100 + i;
  m->a = (chk_side_stats){-1.5, 2.5, 0.125, 0.75};
  m->b = (chk_side_stats){-1.0, 2.0, 0.25, 0.5};
  c->has_vs_reference = true;
  c->vs_reference = *m;
  c->vs_reference.mismatches = 6;
}

tn_error_map *rfx_error_map(tn_fusion_result *r, int cand_id) {
  r->nerror_maps = 1;
  r->error_maps = calloc(1, sizeof *r->error_maps);
  assert_non_null(r->error_maps);
  tn_error_map *e = &r->error_maps[0];
  e->cand_id = cand_id;
  e->rank = 2;
  e->dims[0] = 300;
  e->dims[1] = 400;
  e->data = calloc(300 * 400, sizeof *e->data);
  assert_non_null(e->data);
  return e;
}
