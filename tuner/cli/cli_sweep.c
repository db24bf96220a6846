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
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run/capture.h"
#include "cli.h"
#include "cli_env.h"
#include "run/cover.h"
#include "sweep/expected.h"
#include "sweep/lock.h"
#include "sweep/mpi_sweep.h"
#include "outpath.h"
#include "progress.h"
#include "store/store.h"
#include "run/fusion_run.h"
#include "run/units.h"
#include "sweep/sweep_cfg.h"
#include "sweep/sweep_state.h"

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

/* What a resumed run already holds (sweep_state.h): unit names[i] of
 * corpus file sources[i]. */
typedef struct {
  char **sources, **names;
  int n;
} done_units;

/* Is unit u of file (one of n units) in the run already?  A whole-module
 * unit is stored under its kernel computation's name, so any unit of its
 * file stands for it; a unit cut out of a module goes by its name. */
static bool unit_done(const done_units *d, const char *file, const tn_unit *u, int n) {
  bool whole = n == 1 && !u->ins;
  for (int i = 0; i < d->n; i++)
    if (strcmp(d->sources[i], file) == 0 && (whole || strcmp(d->names[i], u->name) == 0))
      return true;
  return false;
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

/* What one run did so far: the serial loop and the MPI ranks' results
 * (mpi_unit_done) go through the same two functions below. */
typedef struct sweep_tally {
  tn_store *s;
  int errors, checked;
  const done_units *done; /* what a resumed run already holds */
  tn_expected *xf;        /* the expected failures, or NULL */
} sweep_tally;

/* A unit tn_check_unit (or building its module) refused; `whole`: the
 * unit is the file itself, so err's position is the file's.  `where`
 * ends the line ("" in one process).  A unit cut by the time budget is
 * not a refusal; the others count as refused() says. */
static void unit_failed(sweep_tally *t, const char *file, const char *name, bool whole, tn_unit_status why,
                        const hlo_error *err, const char *where) {
  bool severe = why == TN_UNIT_BAD_INPUT || why == TN_UNIT_TOOL_ERROR;
  char what[sizeof err->msg + 1200];
  if (err->line > 0 && whole && severe)
    snprintf(what, sizeof what, "%s:%d:%d: error: %s%s", file, err->line, err->col, err->msg, where);
  else
    snprintf(what, sizeof what, "%s: %s: %s: %s%s", file, name, tn_unit_status_name(why), err->msg, where);
  if (why == TN_UNIT_TIMED_OUT)
    logf_("%s", what);
  else
    t->errors += refused(t->xf, file, name, what, severe);
}

/* Stores a checked unit and logs it. */
static void unit_store(sweep_tally *t, const char *file, const tn_fusion_result *r, const char *where) {
  int divergent = 0;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (chk_verdict_is_divergent((chk_verdict)v))
      divergent += (int)r->verdict_counts[v];
  hlo_error err = {0};
  if (tn_store_add_fusion(t->s, r, &err) != 0) {
    logf_("%s", err.msg);
    t->errors++;
  } else {
    t->checked++;
    logf_("%s: %s, %d of %d candidates, %d divergent, %s inputs, %.2f s%s", file, r->name, r->ncands,
          r->space_size, divergent, r->inputs_from[0] ? r->inputs_from : "synthetic", r->wall_time, where);
    /* As with --check: a candidate the host could not run even alone
     * fails the run (exit 2), and the fusion is checked again next
     * time (a run with errors is not resumed). */
    int oom = 0;
    for (int c = 0; c < r->ncands; c++)
      if (r->cands[c].verdict == CHK_VERDICT_TOOL_ERROR && strncmp(r->cands[c].message, "out of memory", 13) == 0)
        oom++;
    if (oom) {
      logf_("%s: %s: %d candidates could not be run: the host ran out of memory (tool-error)", file, r->name, oom);
      t->errors++;
    }
  }
}

/* A unit checked by some rank (mpi_sweep.h): logged with the rank, its
 * host, the verdict counts and the run's progress, then stored. */
static void mpi_unit_done(void *ctx, const tn_mpi_done *d) {
  sweep_tally *t = ctx;
  if (d->event == TN_MPI_FILE_ERROR) {
    char what[sizeof d->err.msg + 300];
    snprintf(what, sizeof what, "%s: error: %s", d->file, d->err.msg[0] ? d->err.msg : "does not load");
    t->errors += refused(t->xf, d->file, NULL, what, 1);
    return;
  }
  if (d->event == TN_MPI_FILE_EMPTY) {
    logf_("%s: nothing to tune", d->file);
    return;
  }
  char where[512];
  int len = snprintf(where, sizeof where, " [rank %d on %s, %.2f s", d->rank, d->host, d->elapsed);
  for (int v = 0; d->r && v < CHK_VERDICT_COUNT && len > 0 && (size_t)len < sizeof where; v++)
    if (d->r->verdict_counts[v])
      len += snprintf(where + len, sizeof where - (size_t)len, "%s%s=%lld", v ? " " : ", ",
                      chk_verdict_name((chk_verdict)v), (long long)d->r->verdict_counts[v]);
  if (len > 0 && (size_t)len < sizeof where) {
    if (d->eta >= 0)
      snprintf(where + len, sizeof where - (size_t)len, "; unit %d of %d, ETA %.0f s]", d->ndone, d->njobs, d->eta);
    else
      snprintf(where + len, sizeof where - (size_t)len, "; unit %d of %d]", d->ndone, d->njobs);
  }
  if (d->rc != 0)
    unit_failed(t, d->file, d->job->name, !d->job->named, d->why, &d->err, where);
  else
    unit_store(t, d->file, d->r, where);
}

/* Resume under MPI (mpi_sweep.h): the plan leaves out the units the
 * run already holds, as the serial loop does. */
static bool mpi_unit_skip(void *ctx, const char *file, const tn_unit *u, int n) {
  const sweep_tally *t = ctx;
  return unit_done(t->done, file, u, n);
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
  /* The budget's choice rotates with the UTC date the run started on
   * (cover.h); a resumed run keeps the seed it recorded, so that every
   * fusion of one run was chosen alike. */
  char rotation[40], cover_text[32];
  struct tm day;
  gmtime_r(&now, &day);
  snprintf(rotation, sizeof rotation, "%04d%02d%02d", day.tm_year + 1900, day.tm_mon + 1, day.tm_mday);
  uint64_t cover_seed = tn_cover_rotate(cfg->seed, atoi(rotation));
  if (found && tn_sweep_run_attr(out, run_id, "cover_seed", cover_text, sizeof cover_text, &err) == 1)
    cover_seed = strtoull(cover_text, NULL, 10);
  /* The input profile rotates by day too, and a resumed run keeps its own. */
  char inputs[32], inputs_list[TN_SWEEP_MAX_PROFILES * 32];
  chk_inputs_profile profile = CHK_INPUTS_CONSTRAINED;
  if (!found || tn_sweep_run_attr(out, run_id, "inputs", inputs, sizeof inputs, &err) != 1 ||
      chk_inputs_profile_from_name(inputs, &profile) != 0) {
    snprintf(inputs, sizeof inputs, "%s", tn_sweep_inputs_of_day(cfg, now));
    (void)chk_inputs_profile_from_name(inputs, &profile); /* validated when the file was read */
  }
  tn_sweep_inputs_text(cfg, inputs_list, sizeof inputs_list);
  done_units done = {0};
  if (found) {
    s = tn_store_reopen_run(out, run_id, &run, &err);
    if (s && tn_sweep_done_units(out, run_id, &done.sources, &done.names, &done.n, &err) != 0) {
      tn_store_close(s);
      s = NULL;
    }
    if (s)
      logf_("resuming run %s of %s: %d fusions already checked", run_id, out, done.n);
  } else {
    snprintf(run.id, sizeof run.id, "%s", want);
    snprintf(run.command, sizeof run.command, "%s", o->command_line ? o->command_line : "tune --sweep");
    snprintf(run.machine, sizeof run.machine, "%s", env.machine.name);
    snprintf(run.compiler, sizeof run.compiler, "%s", env.compiler.name);
    run.defects = env.compiler.defects;
    run.defects_known = 1;
    run.seed = cfg->seed;
    s = tn_store_begin_run(out, &run, &err);
    char shard[32] = "";
    if (o->shard_n)
      snprintf(shard, sizeof shard, "%d/%d", o->shard_k, o->shard_n);
    const tn_store_value vals[] = {
        {"sweep_identity", TN_STORE_STR, identity, 0, 0, 0},
        {"sweep_config", TN_STORE_STR, o->file, 0, 0, 0},
        {"inputs", TN_STORE_STR, inputs, 0, 0, 0},
        {"inputs_rotation", TN_STORE_STR, inputs_list, 0, 0, 0},
        {"shard", TN_STORE_STR, shard, 0, 0, 0},
        {"slowdown_threshold", TN_STORE_F64, NULL, 0, 0, cfg->slowdown_threshold},
        {"cover_rotation", TN_STORE_STR, rotation, 0, 0, 0},
        {"cover_seed", TN_STORE_U64, NULL, 0, cover_seed, 0},
    };
    if (s && tn_store_set_run_values(s, NULL, (int)(sizeof vals / sizeof vals[0]), vals, &err) != 0) {
      tn_store_close(s);
      s = NULL;
    }
    if (s)
      logf_("run %s: %d corpus files, machine %s, compiler %s, inputs %s, into %s", run.id, nfiles,
            env.machine.name, env.compiler.name, inputs, out);
  }
  if (!s) {
    logf_("%s", err.msg);
    return -1;
  }
  tn_sweep_opts so = {
      .backend = env.backend,
      .machine = &env.machine,
      .compiler = &env.compiler,
      .seed = cfg->seed,
      .profile = profile,
      .threads = cfg->threads,
      .budget = cfg->budget,
      .cover_seed = cover_seed,
      .time_budget = cfg->time_budget,
      .error_maps = 3,
      .max_memory = o->max_memory,
      .on_progress = tn_progress_update,
      .progress_ctx = tn_progress_begin(isatty(STDERR_FILENO), tn_progress_interval()),
  };
  sweep_tally t = {.s = s, .done = &done, .xf = xf};
  if (tn_mpi_size() > 1) {
    /* Under mpirun or srun: the same files, handed out (mpi_sweep.h). */
    char **todo = malloc(sizeof *todo * (size_t)(nfiles ? nfiles : 1));
    int ntodo = 0;
    for (int i = 0; todo && i < nfiles; i++)
      if (!(o->shard_n && tn_sweep_shard_of(files[i], o->shard_n) != o->shard_k))
        todo[ntodo++] = files[i];
    if (!todo || tn_mpi_sweep(machine, cfg->compiler, &env.machine, &so, todo, ntodo, mpi_unit_done, mpi_unit_skip, &t, &err) != 0) {
      logf_("%s", todo ? err.msg : "out of memory");
      t.errors++;
    }
    free(todo);
  } else
  for (int i = 0; i < nfiles; i++) {
    if (o->shard_n && tn_sweep_shard_of(files[i], o->shard_n) != o->shard_k)
      continue;
    hlo_module *m = tn_load_module_err(files[i], 0, &err);
    if (!m) {
      t.errors += refused(xf, files[i], NULL, err.msg, 1);
      continue;
    }
    /* Every tuning unit of the module (units.h); one that cannot be
     * checked is logged with its status, and is not an error of the run
     * unless an expected-failures list is in use and does not name it. */
    tn_units units;
    if (tn_units_find(m, &units, &err) != 0) {
      char what[sizeof err.msg + 300];
      snprintf(what, sizeof what, "%s: error: %s", files[i], err.msg);
      t.errors += refused(xf, files[i], NULL, what, 1);
      hlo_module_free(m);
      continue;
    }
    if (units.n == 0)
      logf_("%s: nothing to tune", files[i]);
    /* A killed run resumed: the units it stored are not checked again. */
    bool *skip = calloc((size_t)(units.n ? units.n : 1), sizeof *skip);
    if (!skip) {
      logf_("%s: out of memory", files[i]);
      tn_units_free(&units);
      hlo_module_free(m);
      t.errors++;
      continue;
    }
    bool want_graph = false;
    for (int u = 0; u < units.n; u++) {
      skip[u] = unit_done(&done, files[i], &units.v[u], units.n);
      want_graph |= units.v[u].ins && !skip[u];
    }
    /* The same input rule as --check (capture.h): the operands that reach
     * each unit when the whole module is evaluated, synthesised only when
     * that cannot be done (the unit's inputs_note says why). */
    tn_capture *caps = want_graph ? calloc((size_t)units.n, sizeof *caps) : NULL;
    if (caps) {
      tn_capture_opts co = {.seed = cfg->seed, .profile = profile, .iteration = 1,
                            .max_flops = TN_CAPTURE_MAX_FLOPS, .max_memory = o->max_memory,
                            .time_budget = cfg->time_budget};
      tn_capture_units(m, &units, &co, caps);
    }
    for (int u = 0; u < units.n; u++) {
      const tn_unit *un = &units.v[u];
      if (skip[u])
        continue;
      hlo_module *um = un->ins ? tn_unit_module(m, un, &err) : NULL;
      if (un->ins && !um) {
        unit_failed(&t, files[i], un->name, false, TN_UNIT_UNSUPPORTED, &err, "");
        continue;
      }
      const tn_capture *cap = caps && un->ins ? &caps[u] : NULL;
      so.unit_name = units.n > 1 || un->ins ? un->name : NULL;
      so.args = cap && cap->args ? cap->args : NULL;
      so.nargs = cap && cap->args ? cap->nargs : 0;
      tn_fusion_result r;
      tn_unit_status why;
      tn_progress_unit(so.progress_ctx, files[i], un->name);
      int rc = tn_check_unit(um ? um : m, files[i], &so, &r, &why, &err);
      tn_progress_unit_done(so.progress_ctx);
      so.args = NULL;
      so.nargs = 0;
      if (rc == 0)
        tn_capture_note(cap, 1, &r);
      hlo_module_free(um);
      if (rc != 0) {
        unit_failed(&t, files[i], un->name, !un->ins, why, &err, "");
        continue;
      }
      unit_store(&t, files[i], &r, "");
      tn_fusion_result_free(&r);
    }
    tn_capture_free(caps, caps ? units.n : 0);
    free(caps);
    free(skip);
    tn_units_free(&units);
    hlo_module_free(m);
  }
  int errors = t.errors, checked = t.checked;
  tn_sweep_files_free(done.sources, done.n);
  tn_sweep_files_free(done.names, done.n);
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
  /* Ended last: a run marked complete has its changes stored; one whose
   * changes could not be worked out or stored ends as "errors", so that
   * rerunning the sweep finishes it. */
  if (tn_store_end_run(s, errors || rc != 0 ? "errors" : "complete", &err) != 0) {
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
  if (tn_mpi_size() > 1)
    tn_threads_warn(cfg.threads, tn_mpi_local_size());
  tn_threads_use(cfg.threads);
  for (int i = 0; i < cfg.ninputs; i++) {
    chk_inputs_profile profile;
    if (chk_inputs_profile_from_name(cfg.inputs[i], &profile) != 0) {
      fprintf(stderr, "%s: unknown input profile '%s' (naive, constrained, edge, oob-indices, special)\n", o->file,
              cfg.inputs[i]);
      return TN_EXIT_USAGE;
    }
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
