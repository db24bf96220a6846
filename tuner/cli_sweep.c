/* cli_sweep.c — `tune --sweep FILE.cfg [-o OUT.h5] [--shard K/N]`: the
 * daily sweep, meant to run unattended from cron or a systemd timer.
 *
 * Order of work: read the sweep file (sweep_cfg.h), expand the corpus,
 * take the results file's lock (lock.h), then per machine: resume the
 * killed run of the same sweep or begin a new one, check every corpus file
 * of the shard that the run does not hold yet, storing each fusion as soon
 * as it is checked, end the run, compare it with the previous run
 * (sweep_state.h), and write the reports.  Every log line on stderr starts
 * with a UTC timestamp, so a cron mail or the journal says when each step
 * happened.
 *
 * Exit status: 2 on any error (bad sweep file, lock held, a file that does
 * not check), else 1 when a run found new divergences, else 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_env.h"
#include "expected.h"
#include "lock.h"
#include "outpath.h"
#include "progress.h"
#include "store/store.h"
#include "sweep.h"
#include "units.h"
#include "sweep_cfg.h"
#include "sweep_state.h"

/* Every line on stderr is timestamped (cli.h). */
#define logf_ tn_log

/* Creates the directories above path (mkdir -p of its dirname). */
static int make_parents(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
      logf_("%s: cannot create it: %s", buf, strerror(errno));
      return -1;
    }
    *p = '/';
  }
  return 0;
}

static int has_source(char *const *done, int ndone, const char *file) {
  for (int i = 0; i < ndone; i++)
    if (strcmp(done[i], file) == 0)
      return 1;
  return 0;
}

void tn_changes_print(FILE *f, const tn_run_info *run, const tn_changes *ch, double threshold) {
  fprintf(f, "run %s (%s, %s): ", run->id, run->machine, run->compiler);
  if (ch->previous[0])
    fprintf(f, "since run %s: %d new divergences, %d fixed, %d still open, %d default-config slowdowns over %.0f%%\n",
            ch->previous, ch->nnew, ch->nfixed, ch->nopen, ch->nslow, threshold * 100);
  else
    fprintf(f, "no previous run: %d divergences\n", ch->nnew);
  if (ch->nnew == 0 && ch->nfixed == 0 && ch->nslow == 0)
    fprintf(f, "  nothing new; %d still open\n", ch->nopen);
  for (int i = 0; i < ch->nnew; i++)
    fprintf(f, "  new    %-18s %s  %s\n", ch->news[i].verdict, ch->news[i].fusion, ch->news[i].config);
  for (int i = 0; i < ch->nfixed; i++)
    fprintf(f, "  fixed  %-18s %s  %s\n", ch->fixed[i].verdict, ch->fixed[i].fusion, ch->fixed[i].config);
  for (int i = 0; i < ch->nslow; i++) {
    const tn_change *c = &ch->slow[i];
    fprintf(f, "  slower %s: default %.3f us -> %.3f us (%+.1f%%)\n", c->fusion, c->before * 1e6, c->after * 1e6,
            (c->after / c->before - 1) * 100);
  }
}

/* Prints and stores the changes of the open run s. */
static int report_changes(tn_store *s, const tn_changes *ch, double threshold) {
  tn_changes_print(stdout, tn_store_run(s), ch, threshold);
  hlo_error err = {0};
  if (tn_changes_store(s, ch, threshold, &err) != 0) {
    logf_("%s", err.msg);
    return -1;
  }
  return 0;
}

/* Where report i of the run goes: its pattern expanded at `now`, with
 * "-RUNID" before the extension when the sweep has several machines (one
 * file per run), and "-shardKofN" when the run is one shard (a shard must
 * not replace the day's report with a part of it; --merge writes the
 * whole run's under the plain name). */
static int report_path(const tn_sweep_cfg *cfg, int i, const char *run_id, int shard_k, int shard_n, time_t now,
                       char *path, size_t n, hlo_error *err) {
  if (tn_sweep_expand(cfg->reports[i].output, now, path, n, err) != 0)
    return -1;
  if (cfg->nmachines > 1 || shard_n > 0) {
    char *dot = strrchr(path, '.');
    char tail[64] = "";
    if (dot && !strchr(dot, '/') && strlen(dot) < sizeof tail) {
      snprintf(tail, sizeof tail, "%s", dot);
      *dot = '\0';
    }
    char part[96] = "";
    if (cfg->nmachines > 1)
      snprintf(part, sizeof part, "-%s", run_id);
    if (shard_n > 0)
      snprintf(part + strlen(part), sizeof part - strlen(part), "-shard%dof%d", shard_k, shard_n);
    size_t len = strlen(path);
    if ((size_t)snprintf(path + len, n - len, "%s%s", part, tail) >= n - len)
      return hlo_error_set(err, 0, 0, "'%s' expands to more than %zu bytes", cfg->reports[i].output, n - 1);
  }
  return 0;
}

/* A report must not be written over what the sweep reads or writes: the
 * results file, the sweep file or a corpus file (outpath.h). */
static int check_report_paths(const tn_opts *o, const tn_sweep_cfg *cfg, const char *out, const char *run_id,
                              char *const *files, int nfiles, time_t now) {
  for (int i = 0; i < cfg->nreports; i++) {
    char path[4096];
    hlo_error err = {0};
    if (report_path(cfg, i, run_id, o->shard_k, o->shard_n, now, path, sizeof path, &err) != 0) {
      logf_("%s: report %d: %s", o->file, i + 1, err.msg);
      return -1;
    }
    const char *mine[2] = {out, o->file};
    if (tn_out_refuse_input(path, 2, mine, &err) != 0 ||
        tn_out_refuse_input(path, nfiles, (const char *const *)files, &err) != 0) {
      logf_("%s: report %d: %s", o->file, i + 1, err.msg);
      return -1;
    }
  }
  return 0;
}

int tn_sweep_write_reports(const tn_sweep_cfg *cfg, const char *out, const char *run_id, int shard_k, int shard_n,
                           time_t now) {
  int rc = 0;
  for (int i = 0; i < cfg->nreports; i++) {
    char path[4096];
    hlo_error err = {0};
    if (report_path(cfg, i, run_id, shard_k, shard_n, now, path, sizeof path, &err) != 0) {
      logf_("report %d: %s", i + 1, err.msg);
      rc = -1;
      continue;
    }
    if (make_parents(path) != 0) {
      rc = -1;
      continue;
    }
    tn_opts ro = {.mode = TN_MODE_REPORT, .file = out, .output = path, .format = cfg->reports[i].format,
                  .run_id = run_id};
    if (tn_cmd_report(&ro) != TN_EXIT_OK)
      rc = -1;
    else
      logf_("wrote the %s report %s", cfg->reports[i].format, path);
  }
  return rc;
}

/* A refusal of a corpus file (unit NULL) or of one of its units, `what`
 * saying why: excused when the expected failures list it, logged either
 * way.  Returns 1 when it counts against the run: always when unlisted
 * and a list is in use (a new refusal), else `counts` (the status the
 * refusal had before expected failures existed). */
static int refused(tn_expected *xf, const char *file, const char *unit, const char *what, int counts) {
  const tn_expected_entry *e = xf ? tn_expected_match(xf, file, unit) : NULL;
  if (e) {
    logf_("%s (expected failure: %s)", what, e->reason);
    return 0;
  }
  logf_("%s%s", what, xf ? " (a new refusal: not in the expected failures)" : "");
  return xf ? 1 : counts;
}

/* One run of the sweep on one machine.  *new_findings receives the number
 * of new divergences; returns 0, or -1 after logging an error. */
static int sweep_machine(const tn_opts *o, const tn_sweep_cfg *cfg, const char *machine, char *const *files,
                         int nfiles, const char *out, time_t now, tn_expected *xf, int *new_findings) {
  tn_check_env env;
  if (tn_check_env_load(machine, cfg->compiler, NULL, 0, NULL, &env) != 0)
    return -1;
  char identity[32], run_id[64];
  tn_sweep_identity(cfg, env.machine.name, o->shard_k, o->shard_n, identity, sizeof identity);
  hlo_error err = {0};
  tn_store *s = NULL;
  tn_run_info run;
  memset(&run, 0, sizeof run);
  /* The run's id: --run-id when given (every shard of a batch job gets the
   * same one whatever the time each starts), else the sweep file's pattern
   * expanded now; "-MACHINE" tells the machines of one sweep apart. */
  char stamp[48];
  if (o->sweep_run_id)
    snprintf(stamp, sizeof stamp, "%s", o->sweep_run_id);
  else if (tn_sweep_expand(cfg->run_id, now, stamp, sizeof stamp, &err) != 0) {
    logf_("%s: 'sweep.run_id': %s", o->file, err.msg);
    return -1;
  }
  char want[sizeof run.id];
  int w = snprintf(want, sizeof want, "%s-%.*s", stamp, (int)sizeof want, env.machine.name);
  if (w < 0 || (size_t)w >= sizeof want) {
    logf_("%s: the run id %s-%s is too long", o->file, stamp, env.machine.name);
    return -1;
  }
  int found = tn_sweep_find_resumable(out, identity, o->sweep_run_id ? want : NULL, run_id, sizeof run_id, &err);
  if (found < 0) {
    logf_("%s", err.msg);
    return -1;
  }
  /* Checked now, not after the run: a report that would replace the
   * results file must not cost the night's sweep first. */
  if (check_report_paths(o, cfg, out, found ? run_id : want, files, nfiles, now) != 0)
    return -1;
  char **done = NULL;
  int ndone = 0;
  if (found) {
    s = tn_store_reopen_run(out, run_id, &run, &err);
    if (s && tn_sweep_done_sources(out, run_id, &done, &ndone, &err) != 0) {
      tn_store_close(s);
      s = NULL;
    }
    if (s)
      logf_("resuming run %s of %s: %d fusions already checked", run_id, out, ndone);
  } else {
    snprintf(run.id, sizeof run.id, "%s", want);
    snprintf(run.command, sizeof run.command, "%s", o->command_line ? o->command_line : "tune --sweep");
    snprintf(run.machine, sizeof run.machine, "%s", env.machine.name);
    snprintf(run.compiler, sizeof run.compiler, "%s", env.compiler.name);
    run.seed = cfg->seed;
    s = tn_store_begin_run(out, &run, &err);
    char shard[32] = "";
    if (o->shard_n)
      snprintf(shard, sizeof shard, "%d/%d", o->shard_k, o->shard_n);
    char thr[32];
    snprintf(thr, sizeof thr, "%.17g", cfg->slowdown_threshold);
    const char *keys[] = {"sweep_identity", "sweep_config", "inputs", "shard", "slowdown_threshold"};
    const char *vals[] = {identity, o->file, cfg->inputs, shard, thr};
    if (s && tn_store_set_run_attrs(s, NULL, 5, keys, vals, &err) != 0) {
      tn_store_close(s);
      s = NULL;
    }
    if (s)
      logf_("run %s: %d corpus files, machine %s, compiler %s, into %s", run.id, nfiles, env.machine.name,
            env.compiler.name, out);
  }
  if (!s) {
    logf_("%s", err.msg);
    return -1;
  }
  chk_inputs_profile profile = CHK_INPUTS_CONSTRAINED;
  (void)chk_inputs_profile_from_name(cfg->inputs, &profile); /* validated when the file was read */
  tn_sweep_opts so = {
      .backend = env.backend,
      .machine = &env.machine,
      .compiler = &env.compiler,
      .seed = cfg->seed,
      .profile = profile,
      .threads = cfg->threads,
      .budget = cfg->budget,
      .time_budget = cfg->time_budget,
      .error_maps = 3,
      .max_memory = o->max_memory,
      .on_progress = tn_progress_update,
      .progress_ctx = tn_progress_begin(isatty(STDERR_FILENO), tn_progress_interval()),
  };
  int errors = 0, checked = 0;
  for (int i = 0; i < nfiles; i++) {
    if (o->shard_n && tn_sweep_shard_of(files[i], o->shard_n) != o->shard_k)
      continue;
    if (has_source(done, ndone, files[i]))
      continue;
    hlo_module *m = tn_load_module_err(files[i], 0, &err);
    if (!m) {
      errors += refused(xf, files[i], NULL, err.msg, 1);
      continue;
    }
    /* Every tuning unit of the module (units.h); one that cannot be
     * checked is logged with its status, and is not an error of the run
     * unless an expected-failures list is in use and does not name it. */
    tn_units units;
    if (tn_units_find(m, &units, &err) != 0) {
      char what[sizeof err.msg + 300];
      snprintf(what, sizeof what, "%s: error: %s", files[i], err.msg);
      errors += refused(xf, files[i], NULL, what, 1);
      hlo_module_free(m);
      continue;
    }
    if (units.n == 0)
      logf_("%s: nothing to tune", files[i]);
    for (int u = 0; u < units.n; u++) {
      const tn_unit *un = &units.v[u];
      hlo_module *um = un->ins ? tn_unit_module(m, un, &err) : NULL;
      if (un->ins && !um) {
        char what[sizeof err.msg + 600];
        snprintf(what, sizeof what, "%s: %s: unsupported: %s", files[i], un->name, err.msg);
        errors += refused(xf, files[i], un->name, what, 0);
        continue;
      }
      so.unit_name = units.n > 1 || un->ins ? un->name : NULL;
      tn_fusion_result r;
      tn_unit_status why;
      tn_progress_unit(so.progress_ctx, files[i], un->name);
      int rc = tn_check_unit(um ? um : m, files[i], &so, &r, &why, &err);
      tn_progress_unit_done(so.progress_ctx);
      hlo_module_free(um);
      if (rc != 0) {
        char what[sizeof err.msg + 600];
        if (err.line > 0 && !un->ins && (why == TN_UNIT_BAD_INPUT || why == TN_UNIT_TOOL_ERROR))
          snprintf(what, sizeof what, "%s:%d:%d: error: %s", files[i], err.line, err.col, err.msg);
        else
          snprintf(what, sizeof what, "%s: %s: %s: %s", files[i], un->name, tn_unit_status_name(why), err.msg);
        /* A unit cut by the time budget is not a refusal. */
        if (why == TN_UNIT_TIMED_OUT)
          logf_("%s", what);
        else
          errors += refused(xf, files[i], un->name, what, why == TN_UNIT_BAD_INPUT || why == TN_UNIT_TOOL_ERROR);
        continue;
      }
      int divergent = 0;
      for (int v = 0; v < CHK_VERDICT_COUNT; v++)
        if (chk_verdict_is_divergent((chk_verdict)v))
          divergent += (int)r.verdict_counts[v];
      if (tn_store_add_fusion(s, &r, &err) != 0) {
        logf_("%s", err.msg);
        errors++;
      } else {
        checked++;
        logf_("%s: %s, %d of %d candidates, %d divergent, %.2f s", files[i], r.name, r.ncands, r.space_size, divergent,
              r.wall_time);
      }
      tn_fusion_result_free(&r);
    }
    tn_units_free(&units);
    hlo_module_free(m);
  }
  tn_sweep_files_free(done, ndone);
  tn_progress_end(so.progress_ctx);
  char id[64];
  snprintf(id, sizeof id, "%s", tn_store_run(s)->id);
  logf_("run %s: %d fusions checked now, %d errors", id, checked, errors);
  int rc = errors ? -1 : 0;
  tn_changes ch;
  if (tn_sweep_changes(out, id, cfg->slowdown_threshold, &ch, &err) != 0) {
    logf_("%s", err.msg);
    rc = -1;
  } else {
    if (report_changes(s, &ch, cfg->slowdown_threshold) != 0)
      rc = -1;
    *new_findings += ch.nnew;
    tn_changes_free(&ch);
  }
  /* Ended last: a run marked complete has its changes stored. */
  if (tn_store_end_run(s, errors ? "errors" : "complete", &err) != 0) {
    logf_("%s", err.msg);
    rc = -1;
  }
  if (tn_sweep_write_reports(cfg, out, id, o->shard_k, o->shard_n, now) != 0)
    rc = -1;
  return rc;
}

int tn_cmd_sweep(const tn_opts *o) {
  tn_sweep_cfg cfg;
  hlo_error err = {0};
  if (tn_sweep_cfg_load(o->file, &cfg, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    return TN_EXIT_USAGE;
  }
  if (cfg.threads > tn_threads_max()) {
    fprintf(stderr, "%s: 'sweep.threads' is %d, more than %d (4 per core, at least 64): more only take memory\n",
            o->file, cfg.threads, tn_threads_max());
    return TN_EXIT_USAGE;
  }
  chk_inputs_profile profile;
  if (chk_inputs_profile_from_name(cfg.inputs, &profile) != 0) {
    fprintf(stderr, "%s: unknown input profile '%s' (naive, constrained, edge, oob-indices)\n", o->file,
            cfg.inputs);
    return TN_EXIT_USAGE;
  }
  time_t now = time(NULL);
  char expanded[4096];
  if (o->output) {
    snprintf(expanded, sizeof expanded, "%s", o->output);
  } else if (tn_sweep_expand(cfg.output, now, expanded, sizeof expanded, &err) != 0) {
    fprintf(stderr, "%s: 'sweep.output': %s\n", o->file, err.msg);
    return TN_EXIT_USAGE;
  }
  char **files = NULL;
  int nfiles = 0;
  if (tn_sweep_corpus(&cfg, &files, &nfiles, &err) != 0) {
    fprintf(stderr, "%s: %s\n", o->file, err.msg);
    return TN_EXIT_USAGE;
  }
  if (make_parents(expanded) != 0) {
    tn_sweep_files_free(files, nfiles);
    return TN_EXIT_USAGE;
  }
  /* An output that is a link: the run goes into its target (outpath.h). */
  char *out = tn_out_resolve(expanded, &err);
  int lock = -1;
  if (!out || tn_out_refuse_input(out, 1, &o->file, &err) != 0 ||
      tn_out_refuse_input(out, nfiles, (const char *const *)files, &err) != 0 ||
      tn_lock_take(out, &lock, &err) != 0) {
    logf_("%s", err.msg);
    free(out);
    tn_sweep_files_free(files, nfiles);
    return TN_EXIT_USAGE;
  }
  tn_expected xf = {0};
  if (cfg.expected_failures[0] && tn_expected_load(cfg.expected_failures, &xf, &err) != 0) {
    logf_("%s", err.msg);
    tn_lock_release(lock);
    free(out);
    tn_sweep_files_free(files, nfiles);
    return TN_EXIT_USAGE;
  }
  char shard[48] = "";
  if (o->shard_n)
    snprintf(shard, sizeof shard, ", shard %d/%d", o->shard_k, o->shard_n);
  logf_("sweep %s%s: %d corpus files, %d machine%s, output %s", o->file, shard, nfiles, cfg.nmachines,
        cfg.nmachines == 1 ? "" : "s", out);
  if (cfg.expected_failures[0])
    logf_("expected failures: %d entries in %s", xf.n, cfg.expected_failures);
  int failed = 0, new_findings = 0;
  for (int i = 0; i < cfg.nmachines; i++)
    if (sweep_machine(o, &cfg, cfg.machines[i], files, nfiles, out, now, cfg.expected_failures[0] ? &xf : NULL,
                      &new_findings) != 0)
      failed = 1;
  tn_lock_release(lock);
  free(out);
  tn_sweep_files_free(files, nfiles);
  /* An entry that excused nothing may be fixed: say so, without failing
   * the run (another shard may hold its file). */
  int excused = 0;
  for (int i = 0; i < xf.n; i++) {
    excused += xf.v[i].hits;
    if (xf.v[i].hits == 0 && !o->shard_n) /* a shard may not hold its file */
      logf_("%s:%d: expected failure '%s' refused nothing in this run: remove it once it is fixed",
            cfg.expected_failures, xf.v[i].line, xf.v[i].pattern);
  }
  tn_expected_free(&xf);
  logf_("sweep done: %d new divergences%s%s", new_findings, failed ? ", with errors" : "",
        excused ? ", expected failures excused" : "");
  if (failed)
    return TN_EXIT_USAGE;
  return new_findings ? TN_EXIT_DIVERGED : TN_EXIT_OK;
}
