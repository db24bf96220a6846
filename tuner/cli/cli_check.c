/* cli_check.c — `tune --check FILE...`: sweep every candidate of each
 * fusion, print what an engineer acts on, store everything in HDF5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_env.h"
#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "report/json_out.h"
#include "sweep/lock.h"
#include "outpath.h"
#include "triage/shquote.h"
#include "store/store.h"
#include "run/fusion_run.h"
#include "run/unit_cost.h"
#include "run/units.h"
#include "run/capture.h"
#include "progress.h"
#include "store/h5values.h"
#include "sweep/mpi_sweep.h"

static void print_repro(FILE *f, const tn_opts *o, const char *file, const tn_fusion_result *fr,
                        const tn_cand_result *r) {
  fputs("tune --check ", f);
  tn_sh_quote(f, file);
  fputs(" --only ", f);
  tn_sh_quote(f, r->config);
  fprintf(f, " --seed %llu", (unsigned long long)o->seed);
  if (o->profile != CHK_INPUTS_CONSTRAINED)
    fprintf(f, " --profile %s", chk_inputs_profile_name((chk_inputs_profile)o->profile));
  /* Names given on the command line may be paths: quoted like the rest. */
  if (o->machine) {
    fputs(" --machine ", f);
    tn_sh_quote(f, o->machine);
  }
  if (o->compiler) {
    fputs(" --compiler ", f);
    tn_sh_quote(f, o->compiler);
  }
  for (int i = 0; i < o->ndefects; i++) {
    fputs(" --defect ", f);
    tn_sh_quote(f, o->defects[i]);
  }
  if (o->replicas > 0)
    fprintf(f, " --replicas %d", o->replicas);
  if (o->inputs) {
    fputs(" --inputs ", f);
    tn_sh_quote(f, o->inputs);
  }
  /* a unit of a larger module: only it takes the --only config */
  if (fr->part) {
    fputs(" --fusion ", f);
    tn_sh_quote(f, fr->name);
  }
}

static void print_box(FILE *f, const chk_metrics *m) {
  if (m->mismatches == 0) {
    fputs("-", f);
    return;
  }
  fputc('[', f);
  for (int d = 0; d < m->rank; d++)
    fprintf(f, "%s%lld:%lld", d ? "," : "", (long long)m->bbox_lo[d], (long long)m->bbox_hi[d] + 1);
  fputc(']', f);
}

static void print_index(FILE *f, const chk_metrics *m) {
  if (m->peak_index < 0) {
    fputs("-", f);
    return;
  }
  fputc('(', f);
  for (int d = 0; d < m->rank; d++)
    fprintf(f, "%s%lld", d ? "," : "", (long long)m->peak[d]);
  fputc(')', f);
}

static bool host_oom(const char *message) { return strncmp(message, "out of memory", 13) == 0; }

/* The unit's status from its result (result.h). */
static tn_unit_status unit_status(const tn_fusion_result *r) {
  const tn_cand_result *d = r->ncands > 0 ? &r->cands[0] : NULL;
  if (d && d->verdict == CHK_VERDICT_TOOL_ERROR && !host_oom(d->message))
    return TN_UNIT_UNSUPPORTED;
  if (r->nonfinite.kind != CHK_NONFINITE_INPUTS)
    for (int v = 0; v < CHK_VERDICT_COUNT; v++)
      if (r->verdict_counts[v] && chk_verdict_is_divergent((chk_verdict)v))
        return TN_UNIT_DIVERGED;
  return r->default_ran ? TN_UNIT_VERIFIED : TN_UNIT_NOT_VERIFIED;
}

static const char *cut_name(tn_cut c) {
  return c == TN_CUT_BUDGET ? "budget" : c == TN_CUT_TIME ? "time-budget" : c == TN_CUT_STOP ? "stop" : "none";
}

static const char *cut_text(tn_cut c) {
  return c == TN_CUT_BUDGET ? " (the space was cut by --budget)"
         : c == TN_CUT_TIME ? " (the space was cut by --time-budget)"
         : c == TN_CUT_STOP ? " (stopped at the first divergence)"
                            : "";
}

static void print_summary(FILE *f, const tn_opts *o, const char *file, const tn_fusion_result *r,
                          const dev_machine *mach, const dev_compiler *cc) {
  const tn_cand_result *d = &r->cands[0];
  fprintf(f, "fusion %s (%s) from %s: %s\n", r->name, r->hero, file, tn_unit_status_name(unit_status(r)));
  fprintf(f, "  machine %s, compiler %s, seed %llu, %d of %d candidates checked in %.2f s%s\n", mach->name, cc->name,
          (unsigned long long)r->seed, r->ncands, r->space_size, r->wall_time, cut_text(r->cut));
  if (r->covered)
    fprintf(f, "  cover     chosen by pairwise cover, cover seed %llu: %d of %d knob values, %lld of %lld pairs\n",
            (unsigned long long)r->cover.seed, r->cover.values_covered, r->cover.values,
            (long long)r->cover.pairs_covered, (long long)r->cover.pairs);
  if (strcmp(r->inputs_from, "file") == 0)
    fprintf(f, "  inputs    file %s (/inputs/<k>)\n", o->inputs);
  else if (r->part) {
    if (r->inputs_from[0] == 'g')
      fprintf(f, "  inputs    graph: the operands of its execution %d when the whole module is evaluated\n",
              r->iteration);
    else if (r->inputs_note[0])
      fprintf(f, "  inputs    synthetic: no graph inputs, %s\n", r->inputs_note);
    else
      fputs("  inputs    synthetic\n", f);
  }
  fprintf(f, "  default   %s\n", d->config);
  if (d->status == DEV_OK)
    fprintf(f, "            simulated %.3f us; vs reference: %s (max abs %.3g, tolerance atol %.3g rtol %.3g, %s)\n",
            d->sim_time * 1e6, r->default_vs_reference_ok ? "ok" : "MISMATCH", r->default_vs_reference.max_abs,
            r->reference_tol.atol, r->reference_tol.rtol, chk_tol_criterion_name((chk_tol_criterion)r->criterion));
  else
    fprintf(f, "            %s: %s\n", chk_verdict_name(d->verdict), d->message);
  /* A tolerance that admits any output of the accumulation is no check:
   * say so instead of letting "ok" stand for it (check/tolerance.h). */
  if (d->status == DEV_OK && r->reference_unverifiable)
    fputs("  warning   unverifiable vs reference: the error bound of this accumulation's order (see README, "
          "Tolerance) admits any output, so \"ok\" above proves nothing\n",
          f);
  int ran = 0;
  for (int i = 1; i < r->ncands; i++)
    ran += r->cands[i].status == DEV_OK;
  if (r->unverifiable > 0)
    fprintf(f,
            "  warning   unverifiable: %lld of the %d candidates that ran were compared with a tolerance that admits any "
            "output of the accumulation; a wrong sum there cannot be seen\n",
            (long long)r->unverifiable, ran);
  if (r->best >= 0) {
    const tn_cand_result *b = &r->cands[r->best];
    fprintf(f, "  best      %s\n            simulated %.3f us, speedup %.2fx over the default\n", b->config,
            b->sim_time * 1e6, b->speedup);
  } else {
    fputs("  best      none: no candidate ran correctly\n", f);
  }
  fputs("  verdicts ", f);
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (r->verdict_counts[v])
      fprintf(f, " %s=%lld", chk_verdict_name((chk_verdict)v), (long long)r->verdict_counts[v]);
  fputc('\n', f);
  /* --only asked for this one config: when the compiler refused it, the
   * reason is the answer (otherwise only the results file has it). */
  if (o->only)
    for (int i = 1; i < r->ncands; i++)
      if (r->cands[i].verdict == CHK_VERDICT_COMPILE_ERROR)
        fprintf(f, "  only      %s\n            compile-error: %s\n", r->cands[i].config, r->cands[i].message);
  /* Issue 6: non-finite reference outputs, meant or not (intent.h). */
  bool artefact = r->nonfinite.kind == CHK_NONFINITE_INPUTS;
  if (r->nonfinite.kind == CHK_NONFINITE_INTENDED)
    fprintf(f, "  non-finite %lld of %lld reference output elements, from the module's own constants%s (expected)\n",
            (long long)r->nonfinite.nonfinite, (long long)r->nonfinite.count,
            r->profile == CHK_INPUTS_SPECIAL ? " or the special profile's inputs" : "");
  else if (artefact)
    fprintf(f,
            "  non-finite %lld of %lld reference output elements: inputs produced non-finite values (first made "
            "by %s, %s inputs); divergences are not reported as compiler bugs\n",
            (long long)r->nonfinite.nonfinite, (long long)r->nonfinite.count, r->nonfinite.origin,
            chk_inputs_profile_name((chk_inputs_profile)r->profile));
  /* Host failures are the tool's, not the device's (issue 11 bug 6). */
  if (r->verdict_counts[CHK_VERDICT_TOOL_ERROR] > 0)
    for (int i = 0; i < r->ncands; i++)
      if (r->cands[i].verdict == CHK_VERDICT_TOOL_ERROR) {
        fprintf(f, "  tool-error %lld candidates could not be run by the tool (first: %s: %s); not a verdict about "
                   "the device\n",
                (long long)r->verdict_counts[CHK_VERDICT_TOOL_ERROR], r->cands[i].config, r->cands[i].message);
        break;
      }
  int shown = 0;
  for (int i = 0; i < r->ncands; i++) {
    const tn_cand_result *c = &r->cands[i];
    if (!chk_verdict_is_divergent(c->verdict))
      continue;
    if (shown++ == 0)
      fputs(artefact ? "  divergent candidates (inputs produced non-finite values, not compiler bugs):\n"
                     : "  divergent candidates:\n",
            f);
    /* The default is judged against the reference, not against itself. */
    const chk_metrics *m = c->id == 0 ? &c->vs_reference : &c->vs_default;
    fprintf(f, "  - %-18s %s\n", chk_verdict_name(c->verdict), c->config);
    if (c->status != DEV_OK) {
      fprintf(f, "      %s\n", c->message);
    } else {
      fprintf(f, "      output %d: %lld of %lld elements differ; max abs %.6g, max rel %.6g, peak at ", c->leaf,
              (long long)m->mismatches, (long long)m->count, m->max_abs, m->max_rel);
      print_index(f, m);
      fputs(", box ", f);
      print_box(f, m);
      fputc('\n', f);
      if (c->message[0])
        fprintf(f, "      %s\n", c->message);
    }
    fputs("      reproduce: ", f);
    print_repro(f, o, file, r, c);
    fputc('\n', f);
  }
}

static void json_metrics(FILE *f, const chk_metrics *m) {
  fprintf(f, "{\"mismatches\": %lld, \"count\": %lld, \"max_abs\": ", (long long)m->mismatches, (long long)m->count);
  tn_json_num(f, m->max_abs);
  fputs(", \"max_rel\": ", f);
  tn_json_num(f, m->max_rel);
  fprintf(f, ", \"max_ulp\": %llu, \"rms\": ", (unsigned long long)m->max_ulp);
  tn_json_num(f, m->rms);
  fprintf(f, ", \"nan_mismatches\": %lld, \"inf_mismatches\": %lld, \"peak_index\": %lld, \"peak\": [",
          (long long)m->nan_mismatches, (long long)m->inf_mismatches, (long long)m->peak_index);
  for (int d = 0; m->peak_index >= 0 && d < m->rank; d++)
    fprintf(f, "%s%lld", d ? ", " : "", (long long)m->peak[d]);
  fputs("], \"bbox\": [", f);
  for (int d = 0; m->mismatches > 0 && d < m->rank; d++)
    fprintf(f, "%s[%lld, %lld]", d ? ", " : "", (long long)m->bbox_lo[d], (long long)m->bbox_hi[d] + 1);
  fputs("]}", f);
}

static void print_json(FILE *f, const tn_opts *o, const char *file, const tn_fusion_result *r) {
  fputs("  {\"file\": ", f);
  tn_json_str(f, file);
  fputs(", \"fusion\": ", f);
  tn_json_str(f, r->name);
  fputs(", \"hero\": ", f);
  tn_json_str(f, r->hero);
  fputs(", \"inputs\": ", f);
  tn_json_str(f, r->inputs_from[0] ? r->inputs_from : "synthetic");
  fputs(", \"inputs_note\": ", f);
  tn_json_str(f, r->inputs_note);
  fprintf(f, ", \"seed\": %llu, \"profile\": \"%s\", \"nonfinite\": \"%s\"", (unsigned long long)r->seed,
          chk_inputs_profile_name((chk_inputs_profile)r->profile), chk_nonfinite_name(r->nonfinite.kind));
  fprintf(f, ", \"status\": \"%s\"", tn_unit_status_name(unit_status(r)));
  if (unit_status(r) == TN_UNIT_UNSUPPORTED) { /* the feature the tool lacks */
    fputs(", \"reason\": ", f);
    tn_json_str(f, r->cands[0].message);
  }
  fprintf(f, ", \"candidates\": %d, \"space\": %d, \"cut\": \"%s\"", r->ncands, r->space_size, cut_name(r->cut));
  if (r->covered)
    fprintf(f, ", \"cover_seed\": %llu, \"cover_values\": [%d, %d], \"cover_pairs\": [%lld, %lld]",
            (unsigned long long)r->cover.seed, r->cover.values_covered, r->cover.values,
            (long long)r->cover.pairs_covered, (long long)r->cover.pairs);
  fputs(", \"default\": ", f);
  tn_json_str(f, r->cands[0].config);
  fputs(", \"default_sim_time\": ", f);
  tn_json_num(f, r->cands[0].sim_time);
  fprintf(f, ", \"tolerance\": \"%s\"", chk_tol_criterion_name((chk_tol_criterion)r->criterion));
  fprintf(f, ", \"default_vs_reference_ok\": %s, \"reference_unverifiable\": %s, \"unverifiable\": %lld, \"best\": ",
          r->default_vs_reference_ok ? "true" : "false", r->reference_unverifiable ? "true" : "false",
          (long long)r->unverifiable);
  if (r->best >= 0) {
    tn_json_str(f, r->cands[r->best].config);
    fputs(", \"best_speedup\": ", f);
    tn_json_num(f, r->cands[r->best].speedup);
  } else {
    fputs("null, \"best_speedup\": null", f);
  }
  fputs(", \"verdicts\": {", f);
  int first = 1;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (r->verdict_counts[v]) {
      fprintf(f, "%s\"%s\": %lld", first ? "" : ", ", chk_verdict_name((chk_verdict)v), (long long)r->verdict_counts[v]);
      first = 0;
    }
  fputs("}, \"divergent\": [", f);
  first = 1;
  for (int i = 0; i < r->ncands; i++) {
    const tn_cand_result *c = &r->cands[i];
    if (!chk_verdict_is_divergent(c->verdict))
      continue;
    fputs(first ? "\n    {" : ",\n    {", f);
    first = 0;
    fprintf(f, "\"id\": %d, \"config\": ", c->id);
    tn_json_str(f, c->config);
    fprintf(f, ", \"verdict\": \"%s\", \"message\": ", chk_verdict_name(c->verdict));
    tn_json_str(f, c->message);
    fprintf(f, ", \"output\": %d, \"vs_default\": ", c->leaf);
    json_metrics(f, &c->vs_default);
    if (c->has_vs_reference) {
      fputs(", \"vs_reference\": ", f);
      json_metrics(f, &c->vs_reference);
    }
    fputs(", \"reproduce\": \"", f);
    /* The reproducer inside a JSON string: quote for the shell, then escape. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) {
      print_repro(mf, o, file, r, c);
      fclose(mf);
      for (size_t k = 0; k < len; k++) {
        if (buf[k] == '"' || buf[k] == '\\')
          fputc('\\', f);
        fputc(buf[k], f);
      }
      free(buf);
    }
    fputs("\"}", f);
  }
  fprintf(f, "%s]}", first ? "" : "\n  ");
}

/* What the units of a --check run came to: the exit status follows. */
typedef struct {
  int rc;          /* TN_EXIT_USAGE once anything was bad usage or input */
  int verified;    /* units whose default ran, with no divergence */
  int diverged;    /* units with a finding */
  int selected;    /* units --fusion selected (all without it) */
  int stopped;     /* --stop-on-mismatch fired */
  int printed;     /* JSON objects written so far */
  double t0;       /* when the run started (--run-time-budget) */
  FILE *out, *err; /* where a unit's lines go: stdout and stderr, or under
                      MPI the buffers that keep them until their turn */
  int deferred;    /* JSON objects written to `out` without their
                      separator (under MPI: given when flushed in order) */
  bool defer;
} tn_check_tally;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool unit_wanted(const tn_opts *o, const char *file, const char *name) {
  if (o->nfusions == 0)
    return true;
  for (int k = 0; k < o->nfusions; k++)
    if (tn_unit_selected(o->fusions[k], file, name))
      return true;
  return false;
}

static void json_sep(tn_check_tally *t) {
  if (t->defer)
    t->deferred++;
  else
    fputs(t->printed++ ? ",\n" : "\n", t->out);
}

static void print_nothing(const tn_opts *o, const char *file, tn_check_tally *t) {
  if (o->json) {
    json_sep(t);
    fputs("  {\"file\": ", t->out);
    tn_json_str(t->out, file);
    fputs(", \"status\": \"nothing to tune\"}", t->out);
  } else {
    fprintf(t->out, "%s: nothing to tune (no fusion and no op that runs as a kernel of its own)\n", file);
  }
}

/* A unit that was not checked: one line (one JSON object) saying why. */
static void print_unchecked(const tn_opts *o, const char *file, const char *name, tn_unit_status st,
                            const char *why, tn_check_tally *t) {
  if (o->json) {
    json_sep(t);
    fputs("  {\"file\": ", t->out);
    tn_json_str(t->out, file);
    fputs(", \"fusion\": ", t->out);
    tn_json_str(t->out, name);
    fprintf(t->out, ", \"status\": \"%s\", \"reason\": ", tn_unit_status_name(st));
    tn_json_str(t->out, why);
    fputs("}", t->out);
  } else {
    fprintf(t->out, "fusion %s from %s: %s: %s\n", name, file, tn_unit_status_name(st), why);
  }
}

static void unit_outcome(const tn_opts *o, const tn_check_env *env, tn_store **store, const char *file,
                         const char *name, bool part, int rc, tn_unit_status why, const hlo_error *uerr,
                         const tn_fusion_result *r, tn_check_tally *t);

/* The order in which the units of m run.  Under --run-time-budget the
 * cheapest first (unit_cost.h): a run that runs out of time then leaves
 * only its costliest units unchecked, instead of spending the whole budget
 * on a first unit that cannot finish (a real module's 137-GFLOP dot before
 * its scalar all-reduces).  Otherwise, and when out of memory, program
 * order.  NULL means program order; else a malloc'd permutation. */
typedef struct {
  double cost;
  int u;
} unit_rank;

static int by_cost_then_order(const void *a, const void *b) {
  const unit_rank *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return (x->u > y->u) - (x->u < y->u);
}

static int *unit_order(const tn_opts *o, const tn_check_env *env, const char *file, const hlo_module *m,
                       const tn_units *units) {
  if (o->run_time_budget <= 0 || units->n < 2)
    return NULL;
  unit_rank *r = malloc(sizeof *r * (size_t)units->n);
  int *order = malloc(sizeof *order * (size_t)units->n);
  if (!r || !order) {
    free(r);
    free(order);
    return NULL;
  }
  for (int u = 0; u < units->n; u++) {
    r[u].u = u;
    /* a unit --fusion leaves out is skipped wherever it sorts */
    r[u].cost = unit_wanted(o, file, units->v[u].name) ? tn_unit_cost(m, &units->v[u], &env->machine, o->budget) : 0;
  }
  qsort(r, (size_t)units->n, sizeof *r, by_cost_then_order);
  for (int u = 0; u < units->n; u++)
    order[u] = r[u].u;
  free(r);
  return order;
}

/* Checks one unit of module m (the whole of m when u->ins is NULL). */
static void check_one(const tn_opts *o, tn_sweep_opts *so, const tn_check_env *env, tn_store **store,
                      const char *file, const hlo_module *m, const tn_unit *u, bool split, const tn_capture *cap,
                      tn_check_tally *t) {
  t->selected++;
  hlo_error err = {0};
  /* --run-time-budget: a unit gets what is left of the run, and none once
   * it has run out (issue 12 item 5). */
  double unit_budget = o->time_budget;
  if (o->run_time_budget > 0) {
    double left = o->run_time_budget - (now_s() - t->t0);
    if (left <= 0) {
      char why[128];
      snprintf(why, sizeof why, "the run's time budget (--run-time-budget %g s) ran out before this unit",
               o->run_time_budget);
      print_unchecked(o, file, u->name, TN_UNIT_TIMED_OUT, why, t);
      return;
    }
    if (unit_budget <= 0 || left < unit_budget)
      unit_budget = left;
  }
  so->time_budget = unit_budget;
  hlo_module *um = NULL;
  if (u->ins && !(um = tn_unit_module(m, u, &err))) {
    print_unchecked(o, file, u->name, TN_UNIT_UNSUPPORTED, err.msg, t);
    return;
  }
  so->unit_name = split ? u->name : NULL;
  so->args = cap && cap->args ? cap->args : NULL;
  so->nargs = cap && cap->args ? cap->nargs : 0;
  tn_fusion_result r;
  tn_unit_status why;
  tn_progress_unit(so->progress_ctx, file, u->name);
  int rc = tn_check_unit(um ? um : m, file, so, &r, &why, &err);
  tn_progress_unit_done(so->progress_ctx);
  so->unit_name = NULL;
  so->args = NULL;
  so->nargs = 0;
  if (rc == 0) {
    tn_capture_note(cap, o->iteration > 0 ? o->iteration : 1, &r);
    /* --inputs: the args came from a file, not from the graph */
    if (o->inputs) {
      r.iteration = 0;
      snprintf(r.inputs_from, sizeof r.inputs_from, "file");
    }
  }
  hlo_module_free(um);
  unit_outcome(o, env, store, file, u->name, u->ins != NULL, rc, why, &err, rc == 0 ? &r : NULL, t);
  if (rc == 0)
    tn_fusion_result_free(&r);
}

/* What one unit came to (rc, why and err as tn_check_unit's; r its
 * results when rc is 0, which the caller frees): printed to t->out and t->err,
 * counted in t, stored.  part: the unit is cut out of its file. */
static void unit_outcome(const tn_opts *o, const tn_check_env *env, tn_store **store, const char *file,
                         const char *name, bool part, int rc, tn_unit_status why, const hlo_error *uerr,
                         const tn_fusion_result *r, tn_check_tally *t) {
  hlo_error err = *uerr;
  if (rc != 0) {
    if (why == TN_UNIT_BAD_INPUT) {
      /* positions are the file's only when the unit is the file itself */
      if (err.line > 0 && !part)
        fprintf(t->err, "%s:%d:%d: error: %s\n", file, err.line, err.col, err.msg);
      else
        fprintf(t->err, "tune: %s: error: %s\n", file, err.msg);
      t->rc = TN_EXIT_USAGE;
      return;
    }
    if (why == TN_UNIT_TOOL_ERROR) {
      fprintf(t->err, "tune: %s: %s: the host failed (tool-error): %s\n", file, name, err.msg);
      t->rc = TN_EXIT_USAGE;
    }
    print_unchecked(o, file, name, why, err.msg, t);
    return;
  }
  int divergent = 0;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (chk_verdict_is_divergent((chk_verdict)v))
      divergent += (int)r->verdict_counts[v];
  /* Issue 6: divergences of a fusion whose inputs drove the reference to
   * NaN or Inf are the inputs' artefacts: shown with that flag, stored
   * with their verdicts, but they do not fail the run. */
  if (r->nonfinite.kind == CHK_NONFINITE_INPUTS)
    divergent = 0;
  if (divergent)
    t->diverged++;
  else if (r->default_ran)
    t->verified++;
  if (o->json) {
    json_sep(t);
    print_json(t->out, o, file, r);
  } else if (!o->quiet || divergent) {
    print_summary(t->out, o, file, r, &env->machine, &env->compiler);
  } else if (!r->default_ran) {
    fprintf(t->out, "fusion %s from %s: not verified: the default config did not run\n", r->name, file);
  }
  if (!o->json && o->quiet && !divergent && o->only)
    for (int c = 1; c < r->ncands; c++)
      if (r->cands[c].verdict == CHK_VERDICT_COMPILE_ERROR)
        fprintf(t->out, "fusion %s from %s: --only %s: compile-error: %s\n", r->name, file, r->cands[c].config,
               r->cands[c].message);
  /* A host that ran out of memory fails the run (exit 2); a feature the
   * simulator lacks leaves the unit unsupported (unit_status). */
  if (r->verdict_counts[CHK_VERDICT_TOOL_ERROR] > 0)
    for (int c = 0; c < r->ncands; c++)
      if (r->cands[c].verdict == CHK_VERDICT_TOOL_ERROR && host_oom(r->cands[c].message)) {
        fprintf(t->err, "tune: %s: %s: %lld candidates could not be run: the host ran out of memory (tool-error)\n", file, r->name,
                (long long)r->verdict_counts[CHK_VERDICT_TOOL_ERROR]);
        t->rc = TN_EXIT_USAGE;
        break;
      }
  if (*store && tn_store_add_fusion(*store, r, &err) != 0) {
    fprintf(t->err, "tune: %s\n", err.msg);
    t->rc = TN_EXIT_USAGE;
    /* A write that failed (a full disk) leaves the file as it was. */
    if (tn_store_undo(*store, &err) != 0)
      fprintf(t->err, "tune: %s\n", err.msg);
    *store = NULL;
  }
  if (o->stop_on_mismatch && divergent) {
    for (int c = 0; c < r->ncands; c++)
      if (chk_verdict_is_divergent(r->cands[c].verdict)) {
        fprintf(t->err, "tune: stopping at the first divergence: %s candidate '%s' of %s (%s)\n",
                chk_verdict_name(r->cands[c].verdict), r->cands[c].config, file, r->name);
        break;
      }
    t->stopped = 1;
  }
}

/* The seed inputs are synthesised from.  TUNE_TEST_SYNTH_SALT, a test
 * hook only, changes that rule the way another tune version might, so a
 * test can show a reproducer that does not depend on it (README, Reproducer
 * bundles). */
static uint64_t synth_seed(uint64_t seed) {
  const char *salt = getenv("TUNE_TEST_SYNTH_SALT");
  return salt && *salt ? seed ^ strtoull(salt, NULL, 0) : seed;
}

/* --inputs IN.h5: the inputs of the one unit selected in m, read into
 * cap (as if captured).  Prints why and returns -1 on any failure. */
static int read_unit_inputs(const tn_opts *o, const char *file, const hlo_module *m, const tn_units *units,
                            tn_capture *cap) {
  int which = -1, nsel = 0;
  for (int u = 0; u < units->n; u++)
    if (unit_wanted(o, file, units->v[u].name)) {
      nsel++;
      if (which < 0)
        which = u;
    }
  if (nsel != 1) {
    fprintf(stderr, "tune: --inputs: %s holds the inputs of one unit, but %d units of %s are selected; "
                    "choose one with --fusion NAME (tune --list-fusions %s lists them)\n",
            o->inputs, nsel, file, file);
    return -1;
  }
  hlo_error err = {0};
  const tn_unit *u = &units->v[which];
  hlo_module *um = u->ins ? tn_unit_module(m, u, &err) : NULL;
  if (u->ins && !um) {
    fprintf(stderr, "tune: %s: %s: %s\n", file, u->name, err.msg);
    return -1;
  }
  const hlo_computation *entry = um ? um->entry : m->entry;
  int rc = -1;
  cap->nargs = entry->nparams;
  cap->args = calloc((size_t)(cap->nargs ? cap->nargs : 1), sizeof *cap->args);
  hid_t f = cap->args ? tn_h5_open_read(o->inputs, &err) : -1;
  if (!cap->args)
    fputs("tune: out of memory\n", stderr);
  else if (f < 0)
    fprintf(stderr, "tune: --inputs: %s\n", err.msg);
  else if (tn_h5_read_inputs(f, "inputs", entry, cap->args, &err) != 0)
    fprintf(stderr, "tune: --inputs: %s: %s (inputs of unit %s of %s)\n", o->inputs, err.msg, u->name, file);
  else
    rc = 0;
  if (f >= 0) {
    hlo_error cerr = {0};
    tn_h5_close(f, &cerr);
  }
  hlo_module_free(um);
  if (rc != 0) {
    free(cap->args);
    cap->args = NULL;
  }
  return rc;
}

/* ---- under mpirun or srun: the units shared out (mpi_sweep.h) ------------- */

/* What one process would print for one unit, or for a file that yields
 * none, in its place in that process's order.  Units come back from the
 * ranks in any order; each one's lines wait in its slot until every
 * earlier slot has been printed, so the output is one process's.  Results
 * are stored as they arrive (a job that dies keeps what it stored), which
 * changes only the order in which fusion groups were added to the file. */
typedef struct check_slot {
  char *name;        /* the unit's (malloc'd); NULL for a file's slot */
  bool part;         /* the unit is cut out of its file */
  bool ready;
  char *out, *err;   /* its stdout and stderr text (malloc'd, or NULL) */
  size_t outlen, errlen;
  int objects;       /* JSON objects in out, their separators not yet given */
} check_slot;

typedef struct mpi_check {
  const tn_opts *o;
  const tn_check_env *env;
  tn_store **store;
  tn_check_tally *t;
  check_slot *slots;
  int nslots, cap;
  int next;          /* the first slot not printed yet */
} mpi_check;

/* A new slot, or -1 when out of memory. */
static int slot_add(mpi_check *mc) {
  if (mc->nslots == mc->cap) {
    int cap = mc->cap ? 2 * mc->cap : 64;
    check_slot *v = realloc(mc->slots, sizeof *v * (size_t)cap);
    if (!v)
      return -1;
    mc->slots = v;
    mc->cap = cap;
  }
  memset(&mc->slots[mc->nslots], 0, sizeof *mc->slots);
  return mc->nslots++;
}

/* Sends what the tally prints into slot k's text, until slot_end.  When
 * no buffer can be had it is printed now: out of order, but not lost. */
static void slot_begin(mpi_check *mc, int k, FILE **out, FILE **err) {
  check_slot *sl = &mc->slots[k];
  *out = open_memstream(&sl->out, &sl->outlen);
  *err = *out ? open_memstream(&sl->err, &sl->errlen) : NULL;
  if (!*out || !*err) {
    if (*out)
      fclose(*out);
    free(sl->out);
    sl->out = NULL;
    *out = *err = NULL;
    return;
  }
  mc->t->out = *out;
  mc->t->err = *err;
  mc->t->defer = true;
  mc->t->deferred = 0;
}

static void slot_end(mpi_check *mc, int k, FILE *out, FILE *err) {
  check_slot *sl = &mc->slots[k];
  if (out) {
    fclose(out);
    fclose(err);
    sl->objects = mc->t->deferred;
  }
  mc->t->out = stdout;
  mc->t->err = stderr;
  mc->t->defer = false;
  sl->ready = true;
}

/* Prints every ready slot that no unready one precedes. */
static void slots_flush(mpi_check *mc) {
  for (; mc->next < mc->nslots && mc->slots[mc->next].ready; mc->next++) {
    check_slot *sl = &mc->slots[mc->next];
    if (sl->err)
      fwrite(sl->err, 1, sl->errlen, stderr);
    for (int i = 0; i < sl->objects; i++)
      json_sep(mc->t);
    if (sl->out)
      fwrite(sl->out, 1, sl->outlen, stdout);
    fflush(stdout);
    free(sl->out), free(sl->err), free(sl->name);
    sl->out = sl->err = sl->name = NULL;
  }
}

/* A unit came back from some rank (tn_mpi_done_fn). */
static void mpi_check_done(void *ctx, const tn_mpi_done *d) {
  mpi_check *mc = ctx;
  if (d->event != TN_MPI_UNIT || !d->job || d->job->tag < 0 || d->job->tag >= mc->nslots)
    return; /* --check plans its own files: only units come back */
  int k = d->job->tag;
  FILE *out, *err;
  slot_begin(mc, k, &out, &err);
  unit_outcome(mc->o, mc->env, mc->store, d->file, mc->slots[k].name, mc->slots[k].part, d->rc, d->why, &d->err,
               d->rc == 0 ? d->r : NULL, mc->t);
  slot_end(mc, k, out, err);
  /* The output waits for its turn; this says the run is alive. */
  if (!mc->o->quiet) {
    fprintf(stderr, "tune: %s: %s: rank %d on %s, %.2f s; unit %d of %d", d->file, mc->slots[k].name, d->rank,
            d->host, d->elapsed, d->ndone, d->njobs);
    if (d->eta >= 0)
      fprintf(stderr, ", ETA %.0f s", d->eta);
    fputc('\n', stderr);
  }
  slots_flush(mc);
}

/* A slot for a file that yields no unit: the line one process prints
 * to stderr for it (what, and then why when why is not NULL). */
static void file_slot(mpi_check *mc, const char *what, const char *why) {
  int k = slot_add(mc);
  FILE *out = NULL, *err = NULL;
  if (k >= 0)
    slot_begin(mc, k, &out, &err);
  fprintf(mc->t->err, "%s%s%s\n", what, why ? ": " : "", why ? why : "");
  if (k >= 0)
    slot_end(mc, k, out, err);
}

/* --check's units checked by every rank (mpi_sweep.h): planned here in
 * one process's order, handed out by the sweep's dispatcher largest
 * first, printed back in that order and stored by this rank alone. */
static void check_mpi(const tn_opts *o, const tn_check_env *env, tn_store **store, int nfiles, char *const *files,
                      tn_check_tally *t) {
  mpi_check mc = {.o = o, .env = env, .store = store, .t = t};
  tn_mpi_job *jobs = NULL;
  int njobs = 0, jcap = 0;
  bool oom = false;
  for (int i = 0; i < nfiles && !oom; i++) {
    hlo_error err = {0};
    hlo_module *m = tn_load_module_err(files[i], 0, &err);
    if (!m) {
      if (err.msg[0])
        file_slot(&mc, err.msg, NULL);
      t->rc = TN_EXIT_USAGE;
      continue;
    }
    int named = tn_replicas_named(m);
    if (o->replicas > 0 && o->replicas < named) {
      char what[4096];
      snprintf(what, sizeof what, "tune: %s: --replicas %d: a replica group names replica %d but only %d replicas "
               "would be simulated", files[i], o->replicas, named - 1, o->replicas);
      file_slot(&mc, what, NULL);
      t->rc = TN_EXIT_USAGE;
      hlo_module_free(m);
      continue;
    }
    tn_units units;
    if (tn_units_find(m, &units, &err) != 0) {
      char what[4096];
      snprintf(what, sizeof what, "tune: %s: error", files[i]);
      file_slot(&mc, what, err.msg);
      t->rc = TN_EXIT_USAGE;
      hlo_module_free(m);
      continue;
    }
    if (units.n == 0) {
      int k = slot_add(&mc);
      FILE *out = NULL, *ferr = NULL;
      if (k >= 0)
        slot_begin(&mc, k, &out, &ferr);
      print_nothing(o, files[i], t);
      if (k >= 0)
        slot_end(&mc, k, out, ferr);
      oom |= k < 0;
    }
    for (int u = 0; u < units.n && !oom; u++) {
      const tn_unit *un = &units.v[u];
      if (!unit_wanted(o, files[i], un->name))
        continue;
      t->selected++;
      int k = slot_add(&mc);
      if (k >= 0 && njobs == jcap) {
        jcap = jcap ? 2 * jcap : 64;
        tn_mpi_job *v = realloc(jobs, sizeof *v * (size_t)jcap);
        if (v)
          jobs = v;
        else
          k = -1;
      }
      if (k < 0 || !(mc.slots[k].name = strdup(un->name))) {
        oom = true;
        break;
      }
      mc.slots[k].part = un->ins != NULL;
      tn_mpi_job *j = &jobs[njobs++];
      memset(j, 0, sizeof *j);
      j->file = files[i];
      j->unit = u;
      snprintf(j->name, sizeof j->name, "%s", un->name);
      j->named = units.n > 1 || un->ins;
      j->cost = tn_unit_cost(m, un, &env->machine, o->budget);
      j->tag = k;
    }
    tn_units_free(&units);
    hlo_module_free(m);
  }
  if (oom) {
    fputs("tune: out of memory planning the check\n", stderr);
    t->rc = TN_EXIT_USAGE;
    njobs = 0;
  }
  /* Every rank checks a unit with exactly what this one would. */
  tn_mpi_settings s = {
      .machine = o->machine,
      .compiler = o->compiler,
      .defects = o->defects,
      .ndefects = o->ndefects,
      .backend = o->backend,
      .seed = synth_seed(o->seed),
      .profile = o->profile,
      .threads = o->threads,
      .budget = o->budget,
      .cover_seed = o->has_cover_seed ? o->cover_seed : o->seed,
      .time_budget = o->time_budget,
      .max_memory = o->max_memory,
      .error_maps = 3,
      .only = o->only,
      .tol_override = o->has_atol || o->has_rtol,
      .atol = o->atol,
      .rtol = o->rtol,
      .criterion = o->tolerance,
      .ops = o->ops,
      .replicas = o->replicas,
      .iteration = o->iteration,
      .graph_inputs = !o->inputs_synthetic,
  };
  hlo_error err = {0};
  if (njobs > 0 && tn_mpi_dispatch(&s, jobs, njobs, mpi_check_done, &mc, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    t->rc = TN_EXIT_USAGE;
  }
  /* Slots whose unit never came back (none, unless planning failed). */
  for (int k = mc.next; k < mc.nslots; k++)
    mc.slots[k].ready = true;
  slots_flush(&mc);
  free(mc.slots);
  free(jobs);
}

/* Whether --check shares its units out: under mpirun or srun with more
 * than one rank, unless an option ties the run to one process's order or
 * to rank 0's own input (said once, then rank 0 checks alone). */
static bool check_shared(const tn_opts *o, int nfiles, char *const *files) {
  if (tn_mpi_size() <= 1)
    return false;
  const char *why = o->inputs ? "--inputs"
                    : o->stop_on_mismatch ? "--stop-on-mismatch"
                    : o->run_time_budget > 0 ? "--run-time-budget" : NULL;
  for (int i = 0; !why && i < nfiles; i++)
    if (strcmp(files[i], "-") == 0)
      why = "standard input ('-')";
  if (why)
    fprintf(stderr, "tune: %s: rank 0 checks every unit alone; the other %d ranks stay idle\n", why,
            tn_mpi_size() - 1);
  return !why;
}

int tn_cmd_check(const tn_opts *o, int nfiles, char *const *files) {
  if (o->inputs && nfiles != 1) {
    fputs("tune: --inputs: give exactly one FILE (the inputs are those of one unit)\n", stderr);
    return TN_EXIT_USAGE;
  }
  if (o->inputs && o->inputs_synthetic) {
    fputs("tune: --inputs and --inputs-from synthetic cannot be given together\n", stderr);
    return TN_EXIT_USAGE;
  }
  tn_check_env env; /* cli_env.h (shared with --sweep and --reproduce) */
  if (tn_check_env_load(o->machine, o->compiler, o->defects, o->ndefects, o->backend, &env) != 0)
    return TN_EXIT_USAGE;
  tn_sweep_opts so = {
      .backend = env.backend,
      .machine = &env.machine,
      .compiler = &env.compiler,
      .seed = synth_seed(o->seed),
      .profile = (chk_inputs_profile)o->profile,
      .threads = o->threads,
      .budget = o->budget,
      .cover_seed = o->has_cover_seed ? o->cover_seed : o->seed,
      .time_budget = o->time_budget,
      .only = o->only,
      .stop_on_mismatch = o->stop_on_mismatch,
      .tol_override = o->has_atol || o->has_rtol,
      .tol = {o->atol, o->rtol},
      .ops = o->ops,
      .criterion = (chk_tol_criterion)o->tolerance,
      /* On a terminal a line redrawn in place; in a log, a line every
       * 30 s (progress.h).  -q asks for errors and divergences only. */
      .on_progress = tn_progress_update,
      .error_maps = 3,
      .replicas = o->replicas,
      .max_memory = o->max_memory,
  };
  tn_store *store = NULL;
  char *out = NULL;
  int lock = -1;
  if (o->output) {
    /* Like every writer of a results file: through a link into its
     * target, never over an input, and under the file's lock (lock.h). */
    hlo_error err = {0};
    out = tn_out_resolve(o->output, &err);
    if (!out || tn_out_refuse_input(out, nfiles, (const char *const *)files, &err) != 0 ||
        tn_lock_take(out, &lock, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      free(out);
      return TN_EXIT_USAGE;
    }
    tn_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.command, sizeof run.command, "%s", o->command_line ? o->command_line : "tune --check");
    snprintf(run.machine, sizeof run.machine, "%s", env.machine.name);
    snprintf(run.compiler, sizeof run.compiler, "%s", env.compiler.name);
    run.defects = env.compiler.defects;
    run.defects_known = 1;
    run.seed = o->seed;
    store = tn_store_begin_run_undoable(out, &run, &err);
    if (!store) {
      fprintf(stderr, "tune: %s\n", err.msg);
      tn_lock_release(lock);
      free(out);
      return TN_EXIT_USAGE;
    }
  }
  bool shared = check_shared(o, nfiles, files);
  if (shared)
    tn_threads_warn(o->threads, tn_mpi_local_size());
  bool terminal = isatty(STDERR_FILENO);
  if (!o->quiet && !(o->json && terminal) && !shared)
    so.progress_ctx = tn_progress_begin(terminal, tn_progress_interval());
  tn_check_tally t = {.rc = TN_EXIT_OK, .t0 = now_s(), .out = stdout, .err = stderr};
  if (o->json)
    fputs("[", stdout);
  if (shared)
    check_mpi(o, &env, &store, nfiles, files, &t);
  for (int i = 0; !shared && i < nfiles && !t.stopped; i++) {
    hlo_module *m = tn_load_module(files[i], 0);
    if (!m) {
      t.rc = TN_EXIT_USAGE;
      continue;
    }
    /* Too few --replicas for the module's own replica groups is a usage
     * error of the whole file, not a limit of one unit. */
    int named = tn_replicas_named(m);
    if (o->replicas > 0 && o->replicas < named) {
      fprintf(stderr, "tune: %s: --replicas %d: a replica group names replica %d but only %d replicas "
                      "would be simulated\n", files[i], o->replicas, named - 1, o->replicas);
      t.rc = TN_EXIT_USAGE;
      hlo_module_free(m);
      continue;
    }
    hlo_error err = {0};
    tn_units units;
    if (tn_units_find(m, &units, &err) != 0) {
      fprintf(stderr, "tune: %s: error: %s\n", files[i], err.msg);
      t.rc = TN_EXIT_USAGE;
      hlo_module_free(m);
      continue;
    }
    if (units.n == 0)
      print_nothing(o, files[i], &t);
    /* Inputs from the real graph (capture.h) for the units cut out of
     * the module, when at least one of them is selected. */
    tn_capture *caps = NULL;
    bool want_graph = false;
    for (int u = 0; u < units.n; u++)
      want_graph |= units.v[u].ins && unit_wanted(o, files[i], units.v[u].name);
    tn_capture from_file = {0};
    if (o->inputs && read_unit_inputs(o, files[i], m, &units, &from_file) != 0) {
      t.rc = TN_EXIT_USAGE;
      tn_units_free(&units);
      hlo_module_free(m);
      continue;
    }
    if (o->inputs) {
      for (int u = 0; u < units.n && !t.stopped; u++)
        if (unit_wanted(o, files[i], units.v[u].name))
          check_one(o, &so, &env, &store, files[i], m, &units.v[u], units.n > 1 || units.v[u].ins, &from_file,
                    &t);
      tn_capture_free(&from_file, 1);
    } else if (want_graph && !o->inputs_synthetic && (caps = calloc((size_t)units.n, sizeof *caps))) {
      tn_capture_opts co = {.seed = synth_seed(o->seed), .profile = (chk_inputs_profile)o->profile,
                            .iteration = o->iteration, .max_flops = TN_CAPTURE_MAX_FLOPS,
                            .max_memory = o->max_memory, .replicas = o->replicas,
                            .time_budget = o->time_budget};
      tn_capture_units(m, &units, &co, caps);
    }
    /* Each unit's lines leave as soon as it is checked: a run killed by
     * its caller's time limit still tells which units it finished. */
    int *order = o->inputs ? NULL : unit_order(o, &env, files[i], m, &units);
    for (int q = 0; q < units.n && !t.stopped && !o->inputs; q++) {
      int u = order ? order[q] : q;
      if (unit_wanted(o, files[i], units.v[u].name)) {
        check_one(o, &so, &env, &store, files[i], m, &units.v[u], units.n > 1 || units.v[u].ins,
                  caps && units.v[u].ins ? &caps[u] : NULL, &t);
        fflush(stdout);
      }
    }
    free(order);
    tn_capture_free(caps, caps ? units.n : 0);
    free(caps);
    tn_units_free(&units);
    hlo_module_free(m);
  }
  if (o->json)
    fputs(t.printed ? "\n]\n" : "]\n", stdout);
  if (o->nfusions > 0 && t.selected == 0 && t.rc != TN_EXIT_USAGE) {
    fputs("tune: --fusion: no unit matches", stderr);
    for (int k = 0; k < o->nfusions; k++)
      fprintf(stderr, " '%s'", o->fusions[k]);
    fputs(" (tune --list-fusions FILE lists them)\n", stderr);
    t.rc = TN_EXIT_USAGE;
  }
  if (store) {
    hlo_error err = {0};
    if (tn_store_end_run(store, t.stopped ? "stopped" : (t.rc == TN_EXIT_USAGE ? "errors" : "complete"), &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      t.rc = TN_EXIT_USAGE;
    }
  }
  tn_progress_end(so.progress_ctx);
  tn_lock_release(lock);
  free(out);
  if (t.rc == TN_EXIT_USAGE)
    return t.rc;
  if (t.diverged)
    return TN_EXIT_DIVERGED;
  return t.verified > 0 ? TN_EXIT_OK : TN_EXIT_UNVERIFIED;
}
