/* sweep_state.c — resuming and comparing sweeps (sweep_state.h). */
#include "sweep_state.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "store/h5values.h"
#include "store/store_read.h"
#include "sweep_cfg.h"
#include "check/verdict.h"

/* An attribute of runs/<id> as text (a number in a schema 2 file, a
 * string in a schema 1 file); "" when absent. */
static void run_attr(hid_t file, const char *run_id, const char *key, char *buf, size_t n) {
  char path[256];
  buf[0] = '\0';
  snprintf(path, sizeof path, "runs/%s", run_id);
  H5E_BEGIN_TRY {
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    if (g >= 0) {
      hlo_error ignored = {0};
      if (tn_h5_attr_get_text(g, key, buf, n, &ignored) != 0)
        buf[0] = '\0';
      H5Gclose(g);
    }
  }
  H5E_END_TRY;
}

int tn_sweep_find_resumable(const char *path, const char *identity, const char *want_id, char *run_id, size_t n,
                            hlo_error *err) {
  if (access(path, F_OK) != 0)
    return 0;
  tn_run_info *runs = NULL;
  int nruns = 0;
  if (tn_results_list_runs(path, &runs, &nruns, NULL, 0, err) != 0)
    return -1;
  hid_t f = tn_h5_open_read(path, err);
  if (f < 0) {
    free(runs);
    return -1;
  }
  int found = 0;
  for (int i = nruns - 1; i >= 0 && !found; i--) {
    if (strcmp(runs[i].status, "running") != 0 || (want_id && strcmp(runs[i].id, want_id) != 0))
      continue;
    char id[64];
    run_attr(f, runs[i].id, "sweep_identity", id, sizeof id);
    if (strcmp(id, identity) == 0) {
      snprintf(run_id, n, "%s", runs[i].id);
      found = 1;
    }
  }
  hlo_error cerr = {0};
  tn_h5_close(f, &cerr);
  free(runs);
  return found;
}

int tn_sweep_run_attr(const char *path, const char *run_id, const char *key, char *buf, size_t n, hlo_error *err) {
  buf[0] = '\0';
  hid_t f = tn_h5_open_read(path, err);
  if (f < 0)
    return -1;
  run_attr(f, run_id, key, buf, n);
  hlo_error cerr = {0};
  tn_h5_close(f, &cerr);
  return buf[0] != '\0';
}

int tn_sweep_done_units(const char *path, const char *run_id, char ***sources, char ***names, int *n,
                        hlo_error *err) {
  tn_stored_run run;
  *sources = NULL;
  *names = NULL;
  *n = 0;
  if (tn_results_read_run(path, run_id, &run, err) != 0)
    return -1;
  char **s = calloc((size_t)run.nfusions + 1, sizeof *s);
  char **u = calloc((size_t)run.nfusions + 1, sizeof *u);
  int rc = s && u ? 0 : hlo_error_set(err, 0, 0, "out of memory");
  for (int i = 0; rc == 0 && i < run.nfusions; i++)
    if (!(s[i] = strdup(run.fusions[i].r.source)) || !(u[i] = strdup(run.fusions[i].r.name)))
      rc = hlo_error_set(err, 0, 0, "out of memory");
  if (rc == 0) {
    *sources = s;
    *names = u;
    *n = run.nfusions;
  } else {
    tn_sweep_files_free(s, s ? run.nfusions : 0);
    tn_sweep_files_free(u, u ? run.nfusions : 0);
  }
  tn_stored_run_free(&run);
  return rc;
}

static const tn_stored_fusion *find_fp(const tn_stored_run *run, uint64_t fp) {
  for (int i = 0; i < run->nfusions; i++)
    if (run->fusions[i].r.fingerprint == fp)
      return &run->fusions[i];
  return NULL;
}

static const tn_cand_result *find_config(const tn_fusion_result *r, const char *config) {
  for (int i = 0; i < r->ncands; i++)
    if (strcmp(r->cands[i].config, config) == 0)
      return &r->cands[i];
  return NULL;
}

static int push(tn_change **list, int *n, const tn_fusion_result *r, const tn_cand_result *c) {
  tn_change *grown = realloc(*list, sizeof **list * (size_t)(*n + 1));
  if (!grown)
    return -1;
  *list = grown;
  tn_change *e = &grown[(*n)++];
  memset(e, 0, sizeof *e);
  snprintf(e->fusion, sizeof e->fusion, "%s:%s", r->source, r->name);
  e->fingerprint = r->fingerprint;
  if (c) {
    snprintf(e->config, sizeof e->config, "%s", c->config);
    snprintf(e->verdict, sizeof e->verdict, "%s", chk_verdict_name(c->verdict));
  }
  return 0;
}

/* The previous run of `cur` (see the header), or -1.  Runs are listed
 * oldest first by their start time, which has one-second resolution; a
 * run that started in the same second as cur counts as earlier (ties
 * in the listing fall back to the ids' order, which says nothing about
 * time: a sweep run "new" right after a run "old" would otherwise find
 * no previous run). */
static int previous_run(const char *path, const tn_run_info *runs, int nruns, const tn_run_info *cur,
                        hlo_error *err) {
  char mine[32], theirs[32];
  int has = tn_sweep_run_attr(path, cur->id, "inputs", mine, sizeof mine, err);
  if (has < 0)
    return -2;
  for (int i = nruns - 1; i >= 0; i--) {
    const tn_run_info *r = &runs[i];
    if (strcmp(r->id, cur->id) == 0 || strcmp(r->started, cur->started) > 0)
      continue;
    if (strcmp(r->machine, cur->machine) != 0 || strcmp(r->compiler, cur->compiler) != 0)
      continue;
    int other = has ? tn_sweep_run_attr(path, r->id, "inputs", theirs, sizeof theirs, err) : 0;
    if (other < 0)
      return -2;
    if (!has || !other || strcmp(mine, theirs) == 0)
      return i;
  }
  return -1;
}

int tn_sweep_changes(const char *path, const char *run_id, double threshold, tn_changes *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  tn_run_info *runs = NULL;
  int nruns = 0;
  if (tn_results_list_runs(path, &runs, &nruns, NULL, 0, err) != 0)
    return -1;
  tn_stored_run cur, prev;
  memset(&prev, 0, sizeof prev);
  if (tn_results_read_run(path, run_id, &cur, err) != 0) {
    free(runs);
    return -1;
  }
  int p = previous_run(path, runs, nruns, &cur.info, err);
  int rc = p < -1 ? -1 : 0;
  if (p >= 0) {
    snprintf(out->previous, sizeof out->previous, "%s", runs[p].id);
    rc = tn_results_read_run(path, runs[p].id, &prev, err);
  }
  free(runs);
  for (int i = 0; rc == 0 && i < cur.nfusions; i++) {
    const tn_fusion_result *r = &cur.fusions[i].r;
    const tn_stored_fusion *before = p >= 0 ? find_fp(&prev, r->fingerprint) : NULL;
    for (int k = 0; rc == 0 && k < r->ncands; k++) {
      const tn_cand_result *c = &r->cands[k];
      if (!chk_verdict_is_divergent(c->verdict))
        continue;
      const tn_cand_result *old = before ? find_config(&before->r, c->config) : NULL;
      if (!old || !chk_verdict_is_divergent(old->verdict))
        rc = push(&out->news, &out->nnew, r, c);
      else
        out->nopen++;
    }
    if (!before)
      continue;
    for (int k = 0; rc == 0 && k < before->r.ncands; k++) {
      const tn_cand_result *old = &before->r.cands[k];
      if (!chk_verdict_is_divergent(old->verdict))
        continue;
      const tn_cand_result *now = find_config(r, old->config);
      if (now && !chk_verdict_is_divergent(now->verdict))
        rc = push(&out->fixed, &out->nfixed, r, old);
    }
    double t0 = before->r.cands[0].sim_time, t1 = r->ncands > 0 ? r->cands[0].sim_time : 0;
    if (rc == 0 && before->r.default_ran && r->default_ran && t0 > 0 && t1 > t0 * (1 + threshold)) {
      rc = push(&out->slow, &out->nslow, r, &r->cands[0]);
      if (rc == 0) {
        out->slow[out->nslow - 1].before = t0;
        out->slow[out->nslow - 1].after = t1;
      }
    }
  }
  if (rc != 0 && !err->msg[0])
    hlo_error_set(err, 0, 0, "out of memory");
  tn_stored_run_free(&cur);
  if (p >= 0)
    tn_stored_run_free(&prev);
  if (rc != 0)
    tn_changes_free(out);
  return rc;
}

/* The store's view of a list of changes (pointers into the list). */
static tn_store_change *store_list(const tn_change *list, int n) {
  tn_store_change *out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
  for (int i = 0; out && i < n; i++)
    out[i] = (tn_store_change){list[i].fingerprint, list[i].fusion, list[i].config, list[i].verdict,
                               list[i].before, list[i].after};
  return out;
}

int tn_changes_store(tn_store *s, const tn_changes *ch, double threshold, hlo_error *err) {
  tn_store_changes c = {ch->previous, threshold, ch->nopen, ch->nnew, ch->nfixed, ch->nslow, NULL, NULL, NULL};
  tn_store_change *news = store_list(ch->news, ch->nnew), *fixed = store_list(ch->fixed, ch->nfixed),
                  *slow = store_list(ch->slow, ch->nslow);
  int rc;
  if (!news || !fixed || !slow) {
    rc = hlo_error_set(err, 0, 0, "out of memory");
  } else {
    c.news = news;
    c.fixed = fixed;
    c.slow = slow;
    rc = tn_store_set_changes(s, &c, err);
  }
  free(news);
  free(fixed);
  free(slow);
  return rc;
}

void tn_changes_free(tn_changes *c) {
  free(c->news);
  free(c->fixed);
  free(c->slow);
  c->news = c->fixed = c->slow = NULL;
  c->nnew = c->nfixed = c->nslow = c->nopen = 0;
}
