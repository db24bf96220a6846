/* cli_merge.c — `tune --merge OUT.h5 IN.h5...`: combine results files,
 * typically the shards of one sweep (`tune --sweep --shard K/N`).
 *
 * Every run of every input lands in OUT under its own id.  Shards of one
 * sweep share their run id (it comes from the date and the machine, not
 * from the process), so they merge into one run: a fusion whose
 * fingerprint and source the run already holds is not added twice, which
 * also makes merging the same file again harmless.  The merged run keeps
 * the earliest start, the latest finish, and "complete" only when every
 * part is complete.  OUT is locked like a sweep's output while merging.
 *
 * A merge marks the run it is adding to "merging" before its first
 * fusion (in the same atomic write that creates the run, or in one of its
 * own before adding to an existing run, together with the status the run
 * had, kept as `merge_base`).  So a merge killed half-way leaves a run
 * that says so, and the next merge of the same parts knows that status is
 * its own leftover, not a part's: it combines merge_base with the parts
 * instead, and the run ends "complete" when every part is.
 *
 * Then, like a sweep, every run the merge touched gets "what changed since
 * the previous run" of OUT (sweep_state.h) computed, printed and stored in
 * its changes group, with the slowdown threshold its sweep recorded
 * (0.10 when the parts do not say), so a sharded daily sweep merged into
 * the month's file reports exactly what an unsharded one would.  Merging
 * shard after shard recomputes the changes each time; the last merge
 * leaves those of the whole run.  Exit status as for --sweep: 2 on error,
 * else 1 when a merged run has new divergences, else 0.
 */
#define _DEFAULT_SOURCE /* timegm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sweep/lock.h"
#include "outpath.h"
#include "store/store.h"
#include "store/store_read.h"
#include "sweep/sweep_cfg.h"
#include "sweep/sweep_state.h"

static int holds(const tn_stored_run *run, const tn_fusion_result *r) {
  for (int i = 0; run && i < run->nfusions; i++)
    if (run->fusions[i].r.fingerprint == r->fingerprint && strcmp(run->fusions[i].r.source, r->source) == 0)
      return 1;
  return 0;
}

/* A run of OUT with this id: 1 and *existing read, 0 absent, -1 error. */
static int read_existing(const char *out, const char *id, tn_stored_run *existing, hlo_error *err) {
  tn_run_info *runs = NULL;
  int nruns = 0, found = 0;
  FILE *probe = fopen(out, "rb");
  if (!probe)
    return 0;
  fclose(probe);
  if (tn_results_list_runs(out, &runs, &nruns, NULL, 0, err) != 0)
    return -1;
  for (int i = 0; i < nruns; i++)
    found |= strcmp(runs[i].id, id) == 0;
  free(runs);
  if (!found)
    return 0;
  return tn_results_read_run(out, id, existing, err) == 0 ? 1 : -1;
}

/* The slowdown threshold a run's sweep recorded, or the sweep default. */
static double run_threshold(const char *path, const char *run_id) {
  char buf[64];
  hlo_error ignored = {0};
  if (tn_sweep_run_attr(path, run_id, "slowdown_threshold", buf, sizeof buf, &ignored) == 1) {
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end && end != buf && *end == '\0' && v >= 0)
      return v;
  }
  return 0.10;
}

/* The status the run had before a merge that was killed half-way:
 * "merging" is that merge's own mark, not a part's status. */
static void base_status(const char *out, const tn_run_info *existing, char *buf, size_t n) {
  snprintf(buf, n, "%s", existing->status);
  if (strcmp(existing->status, "merging") != 0)
    return;
  hlo_error ignored = {0};
  if (tn_sweep_run_attr(out, existing->id, "merge_base", buf, n, &ignored) != 1)
    snprintf(buf, n, "complete"); /* the killed merge created the run */
}

/* The attributes a sweep adds to its run (cli_sweep.c), carried into the
 * merged run: from the part that brings the run, or, for a run that lacks
 * them (an earlier merge that did not carry them), from the first part
 * that has them.  `shard` names every shard merged in, space-separated,
 * so a run of merged shards does not claim to be the first alone. */
static const char *const sweep_keys[] = {"sweep_identity", "sweep_config", "inputs", "shard", "cover_rotation",
                                         "cover_seed"};
#define NSWEEP_KEYS (sizeof sweep_keys / sizeof sweep_keys[0])

typedef struct sweep_attrs {
  char text[NSWEEP_KEYS][2 * 1024 + 2]; /* room for a shard list and one more */
  tn_store_value vals[NSWEEP_KEYS];
  int n;
} sweep_attrs;

/* Whether the space-separated list has word w. */
static int lists(const char *list, const char *w) {
  size_t n = strlen(w);
  for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

/* The values of sweep_keys to set on the merged run (a->vals, a->n). */
static void carried_sweep_attrs(const char *out, int have, const char *in, const char *run_id, sweep_attrs *a) {
  hlo_error ignored = {0};
  char mine[1024], theirs[1024];
  a->n = 0;
  if (tn_sweep_run_attr(in, run_id, "sweep_identity", theirs, sizeof theirs, &ignored) != 1)
    return; /* not a sweep's run */
  for (size_t k = 0; k < NSWEEP_KEYS; k++) {
    const char *key = sweep_keys[k];
    /* Absent and empty read alike; only an unsharded run's shard is
     * empty on purpose. */
    if (tn_sweep_run_attr(in, run_id, key, theirs, sizeof theirs, &ignored) < 0 ||
        (!theirs[0] && strcmp(key, "shard") != 0))
      continue;
    int present = have && tn_sweep_run_attr(out, run_id, key, mine, sizeof mine, &ignored) == 1;
    char *text = a->text[a->n];
    if (!present)
      snprintf(text, sizeof a->text[0], "%s", theirs);
    else if (strcmp(key, "shard") == 0 && theirs[0] && !lists(mine, theirs))
      snprintf(text, sizeof a->text[0], "%s %s", mine, theirs);
    else
      continue;
    tn_store_value *v = &a->vals[a->n++];
    memset(v, 0, sizeof *v);
    v->key = key;
    if (strcmp(key, "cover_seed") == 0) {
      v->kind = TN_STORE_U64;
      v->u = strtoull(text, NULL, 10);
    } else {
      v->kind = TN_STORE_STR;
      v->s = text;
    }
  }
}

static int merge_run(const char *out, const char *in, const tn_stored_run *src, double threshold) {
  hlo_error err = {0};
  tn_stored_run existing;
  memset(&existing, 0, sizeof existing);
  int have = read_existing(out, src->info.id, &existing, &err);
  if (have < 0) {
    tn_log("%s", err.msg);
    return -1;
  }
  char base[sizeof existing.info.status] = "complete";
  static sweep_attrs sweep; /* large; merges run one at a time */
  carried_sweep_attrs(out, have, in, src->info.id, &sweep);
  tn_run_info run = src->info;
  tn_store *s = NULL;
  if (have) {
    base_status(out, &existing.info, base, sizeof base);
    s = tn_store_reopen_run(out, src->info.id, &run, &err);
    const char *keys[] = {"status", "merge_base"};
    const char *vals[] = {"merging", base};
    if (s && tn_store_set_run_attrs(s, NULL, 2, keys, vals, &err) != 0) {
      tn_store_close(s);
      s = NULL;
    }
  } else {
    snprintf(run.status, sizeof run.status, "merging");
    s = tn_store_begin_run(out, &run, &err);
  }
  int rc = s ? 0 : -1, added = 0;
  for (int i = 0; rc == 0 && i < src->nfusions; i++) {
    if (holds(have ? &existing : NULL, &src->fusions[i].r))
      continue;
    rc = tn_store_add_fusion(s, &src->fusions[i].r, &err);
    added += rc == 0;
  }
  if (rc == 0) {
    const tn_run_info *a = have ? &existing.info : &src->info, *b = &src->info;
    const char *started = strcmp(a->started, b->started) <= 0 ? a->started : b->started;
    const char *finished = strcmp(a->finished, b->finished) >= 0 ? a->finished : b->finished;
    const char *status = strcmp(base, "complete") != 0 ? base : b->status;
    const tn_store_value vals[] = {
        {"started", TN_STORE_STR, started, 0, 0, 0},
        {"finished", TN_STORE_STR, finished, 0, 0, 0},
        {"status", TN_STORE_STR, status, 0, 0, 0},
        {"host", TN_STORE_STR, b->host, 0, 0, 0},
        {"slowdown_threshold", TN_STORE_F64, NULL, 0, 0, threshold},
    };
    rc = tn_store_set_run_values(s, NULL, 5, vals, &err);
    if (rc == 0 && sweep.n > 0)
      rc = tn_store_set_run_values(s, NULL, sweep.n, sweep.vals, &err);
  }
  if (rc != 0)
    tn_log("%s", err.msg);
  else
    printf("%s: run %s: %d fusions added%s\n", in, src->info.id, added, have ? " to the existing run" : "");
  tn_store_close(s);
  if (have)
    tn_stored_run_free(&existing);
  return rc;
}

/* Computes, prints and stores what changed in run_id of out. *nnew
 * receives its new divergences; 0, or -1 after printing the error. */
static int merged_changes(const char *out, const char *run_id, double threshold, int *nnew) {
  hlo_error err = {0};
  tn_changes ch;
  if (tn_sweep_changes(out, run_id, threshold, &ch, &err) != 0) {
    tn_log("%s", err.msg);
    return -1;
  }
  tn_run_info run;
  tn_store *s = tn_store_reopen_run(out, run_id, &run, &err);
  int rc = s ? tn_changes_store(s, &ch, threshold, &err) : -1;
  if (rc != 0)
    tn_log("%s", err.msg);
  else
    tn_changes_print(stdout, &run, &ch, threshold);
  tn_store_close(s);
  *nnew += ch.nnew;
  tn_changes_free(&ch);
  return rc;
}

/* The reports the sweep file of a part asks for, of the whole merged run,
 * under the names an unsharded sweep started at the run's start would
 * give them.  A run no sweep made (no sweep_config) has none. */
static int merged_reports(const char *out, const char *run_id, const char *sweep_file) {
  if (!sweep_file[0])
    return 0;
  hlo_error err = {0};
  tn_sweep_cfg cfg;
  if (tn_sweep_cfg_load(sweep_file, &cfg, &err) != 0) {
    tn_log("run %s: cannot write its reports: %s", run_id, err.msg);
    return -1;
  }
  tn_run_info *runs = NULL;
  int nruns = 0;
  time_t when = time(NULL);
  if (tn_results_list_runs(out, &runs, &nruns, NULL, 0, &err) == 0) {
    for (int i = 0; i < nruns; i++) {
      struct tm tm;
      memset(&tm, 0, sizeof tm);
      char z = 0;
      if (strcmp(runs[i].id, run_id) == 0 &&
          sscanf(runs[i].started, "%d-%d-%dT%d:%d:%d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                 &tm.tm_min, &tm.tm_sec, &z) == 7 && z == 'Z') {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        when = timegm(&tm);
      }
    }
    free(runs);
  }
  return tn_sweep_write_reports(&cfg, out, run_id, 0, 0, when);
}

int tn_cmd_merge(const tn_opts *o, int nfiles, char *const *files) {
  if (nfiles < 1) {
    fputs("tune: --merge needs OUT.h5 and at least one IN.h5\nTry 'tune --help' for more information.\n", stderr);
    return TN_EXIT_USAGE;
  }
  hlo_error err = {0};
  /* OUT as a link: the merge goes into its target (outpath.h). */
  char *out = tn_out_resolve(o->file, &err);
  if (!out || tn_out_refuse_input(out, nfiles, (const char *const *)files, &err) != 0) {
    tn_log("%s", err.msg);
    free(out);
    return TN_EXIT_USAGE;
  }
  int lock = -1;
  if (tn_lock_take(out, &lock, &err) != 0) {
    tn_log("%s", err.msg);
    free(out);
    return TN_EXIT_USAGE;
  }
  int failed = 0;
  /* The runs of OUT this merge touched, in order, each once, with the
   * threshold of the first part that brought it. */
  char (*touched)[64] = NULL;
  char (*sweep_files)[1024] = NULL; /* the sweep file a part records, or "" */
  double *thresholds = NULL;
  int ntouched = 0;
  for (int f = 0; f < nfiles; f++) {
    tn_run_info *runs = NULL;
    int nruns = 0;
    if (tn_results_list_runs(files[f], &runs, &nruns, NULL, 0, &err) != 0) {
      tn_log("%s", err.msg);
      failed = 1;
      continue;
    }
    for (int i = 0; i < nruns; i++) {
      tn_stored_run src;
      if (tn_results_read_run(files[f], runs[i].id, &src, &err) != 0) {
        tn_log("%s", err.msg);
        failed = 1;
        continue;
      }
      int idx = -1;
      for (int t = 0; t < ntouched && idx < 0; t++)
        if (strcmp(touched[t], src.info.id) == 0)
          idx = t;
      if (idx < 0) {
        char (*grown)[64] = realloc(touched, sizeof *touched * (size_t)(ntouched + 1));
        double *gt = grown ? realloc(thresholds, sizeof *thresholds * (size_t)(ntouched + 1)) : NULL;
        char (*gs)[1024] = gt ? realloc(sweep_files, sizeof *sweep_files * (size_t)(ntouched + 1)) : NULL;
        if (grown)
          touched = grown;
        if (gt)
          thresholds = gt;
        if (gs)
          sweep_files = gs;
        if (!grown || !gt || !gs) {
          tn_log("out of memory");
          failed = 1;
          tn_stored_run_free(&src);
          continue;
        }
        snprintf(touched[ntouched], sizeof touched[ntouched], "%s", src.info.id);
        thresholds[ntouched] = run_threshold(files[f], src.info.id);
        hlo_error ignored = {0};
        if (tn_sweep_run_attr(files[f], src.info.id, "sweep_config", sweep_files[ntouched], sizeof *sweep_files,
                              &ignored) != 1)
          sweep_files[ntouched][0] = '\0';
        idx = ntouched++;
      }
      if (merge_run(out, files[f], &src, thresholds[idx]) != 0)
        failed = 1;
      tn_stored_run_free(&src);
    }
    free(runs);
  }
  int nnew = 0;
  for (int t = 0; t < ntouched; t++)
    if (merged_changes(out, touched[t], thresholds[t], &nnew) != 0 ||
        merged_reports(out, touched[t], sweep_files[t]) != 0)
      failed = 1;
  free(touched);
  free(sweep_files);
  free(thresholds);
  tn_lock_release(lock);
  free(out);
  if (failed)
    return TN_EXIT_USAGE;
  return nnew ? TN_EXIT_DIVERGED : TN_EXIT_OK;
}
