/* cli_check.c — `tune --check FILE...`: sweep every candidate of each
 * fusion, print what an engineer acts on, store everything in HDF5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_env.h"
#include "dev_backend.h"
#include "dev_defect.h"
#include "dev_machine.h"
#include "store/store.h"
#include "sweep.h"

/* Single-quotes s for a shell command line. */
static void shell_quote(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

static void print_repro(FILE *f, const tn_opts *o, const char *file, const tn_cand_result *r) {
  fputs("tune --check ", f);
  shell_quote(f, file);
  fputs(" --only ", f);
  shell_quote(f, r->config);
  fprintf(f, " --seed %llu", (unsigned long long)o->seed);
  if (o->profile != CHK_INPUTS_CONSTRAINED)
    fprintf(f, " --profile %s", chk_inputs_profile_name((chk_inputs_profile)o->profile));
  if (o->machine)
    fprintf(f, " --machine %s", o->machine);
  if (o->compiler)
    fprintf(f, " --compiler %s", o->compiler);
  for (int i = 0; i < o->ndefects; i++)
    fprintf(f, " --defect %s", o->defects[i]);
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

static void print_summary(FILE *f, const tn_opts *o, const char *file, const tn_fusion_result *r,
                          const dev_machine *mach, const dev_compiler *cc) {
  const tn_cand_result *d = &r->cands[0];
  fprintf(f, "fusion %s (%s) from %s\n", r->name, r->hero, file);
  fprintf(f, "  machine %s, compiler %s, seed %llu, %d candidates checked in %.2f s\n", mach->name, cc->name,
          (unsigned long long)r->seed, r->ncands, r->wall_time);
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
  /* Issue 6: non-finite reference outputs, meant or not (intent.h). */
  bool artefact = r->nonfinite.kind == CHK_NONFINITE_INPUTS;
  if (r->nonfinite.kind == CHK_NONFINITE_INTENDED)
    fprintf(f, "  non-finite %lld of %lld reference output elements, from the module's own constants (expected)\n",
            (long long)r->nonfinite.nonfinite, (long long)r->nonfinite.count);
  else if (artefact)
    fprintf(f,
            "  non-finite %lld of %lld reference output elements: inputs produced non-finite values (first made "
            "by %s, %s inputs); divergences are not reported as compiler bugs\n",
            (long long)r->nonfinite.nonfinite, (long long)r->nonfinite.count, r->nonfinite.origin,
            chk_inputs_profile_name((chk_inputs_profile)r->profile));
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
    print_repro(f, o, file, c);
    fputc('\n', f);
  }
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.17g", x);
  else
    fputs("null", f);
}

static void json_metrics(FILE *f, const chk_metrics *m) {
  fprintf(f, "{\"mismatches\": %lld, \"count\": %lld, \"max_abs\": ", (long long)m->mismatches, (long long)m->count);
  json_num(f, m->max_abs);
  fputs(", \"max_rel\": ", f);
  json_num(f, m->max_rel);
  fprintf(f, ", \"max_ulp\": %llu, \"rms\": ", (unsigned long long)m->max_ulp);
  json_num(f, m->rms);
  fprintf(f, ", \"nan_mismatches\": %lld, \"inf_mismatches\": %lld, \"peak_index\": %lld, \"peak\": [",
          (long long)m->nan_mismatches, (long long)m->inf_mismatches, (long long)m->peak_index);
  for (int d = 0; m->peak_index >= 0 && d < m->rank; d++)
    fprintf(f, "%s%lld", d ? ", " : "", (long long)m->peak[d]);
  fputs("], \"bbox\": [", f);
  for (int d = 0; m->mismatches > 0 && d < m->rank; d++)
    fprintf(f, "%s[%lld, %lld]", d ? ", " : "", (long long)m->bbox_lo[d], (long long)m->bbox_hi[d] + 1);
  fputs("]}", f);
}

static void print_json(FILE *f, const tn_opts *o, const char *file, const tn_fusion_result *r, int last) {
  fputs("  {\"file\": ", f);
  json_str(f, file);
  fputs(", \"fusion\": ", f);
  json_str(f, r->name);
  fputs(", \"hero\": ", f);
  json_str(f, r->hero);
  fprintf(f, ", \"seed\": %llu, \"profile\": \"%s\", \"nonfinite\": \"%s\"", (unsigned long long)r->seed,
          chk_inputs_profile_name((chk_inputs_profile)r->profile), chk_nonfinite_name(r->nonfinite.kind));
  fprintf(f, ", \"candidates\": %d, \"default\": ", r->ncands);
  json_str(f, r->cands[0].config);
  fputs(", \"default_sim_time\": ", f);
  json_num(f, r->cands[0].sim_time);
  fprintf(f, ", \"tolerance\": \"%s\"", chk_tol_criterion_name((chk_tol_criterion)r->criterion));
  fprintf(f, ", \"default_vs_reference_ok\": %s, \"reference_unverifiable\": %s, \"unverifiable\": %lld, \"best\": ",
          r->default_vs_reference_ok ? "true" : "false", r->reference_unverifiable ? "true" : "false",
          (long long)r->unverifiable);
  if (r->best >= 0) {
    json_str(f, r->cands[r->best].config);
    fputs(", \"best_speedup\": ", f);
    json_num(f, r->cands[r->best].speedup);
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
    json_str(f, c->config);
    fprintf(f, ", \"verdict\": \"%s\", \"message\": ", chk_verdict_name(c->verdict));
    json_str(f, c->message);
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
      print_repro(mf, o, file, c);
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
  fprintf(f, "%s]}%s\n", first ? "" : "\n  ", last ? "" : ",");
}

int tn_cmd_check(const tn_opts *o, int nfiles, char *const *files) {
  tn_check_env env; /* cli_env.h (shared with --sweep and --reproduce) */
  if (tn_check_env_load(o->machine, o->compiler, o->defects, o->ndefects, o->backend, &env) != 0)
    return TN_EXIT_USAGE;
  tn_sweep_opts so = {
      .backend = env.backend,
      .machine = &env.machine,
      .compiler = &env.compiler,
      .seed = o->seed,
      .profile = (chk_inputs_profile)o->profile,
      .threads = o->threads,
      .budget = o->budget,
      .time_budget = o->time_budget,
      .only = o->only,
      .stop_on_mismatch = o->stop_on_mismatch,
      .tol_override = o->has_atol || o->has_rtol,
      .tol = {o->atol, o->rtol},
      .ops = o->ops,
      .criterion = (chk_tol_criterion)o->tolerance,
      .progress = !o->quiet && !o->json && isatty(STDERR_FILENO),
      .error_maps = 3,
  };
  tn_store *store = NULL;
  if (o->output) {
    hlo_error err = {0};
    tn_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.command, sizeof run.command, "%s", o->command_line ? o->command_line : "tune --check");
    snprintf(run.machine, sizeof run.machine, "%s", env.machine.name);
    snprintf(run.compiler, sizeof run.compiler, "%s", env.compiler.name);
    run.seed = o->seed;
    store = tn_store_begin_run(o->output, &run, &err);
    if (!store) {
      fprintf(stderr, "tune: %s\n", err.msg);
      return TN_EXIT_USAGE;
    }
  }
  int rc = TN_EXIT_OK, any_divergent = 0, stopped = 0;
  if (o->json)
    fputs("[\n", stdout);
  for (int i = 0; i < nfiles && !stopped; i++) {
    hlo_module *m = tn_load_module(files[i], 0);
    if (!m) {
      rc = TN_EXIT_USAGE;
      continue;
    }
    hlo_error err = {0};
    tn_fusion_result r;
    if (tn_check_fusion(m, files[i], &so, &r, &err) != 0) {
      if (err.line > 0)
        fprintf(stderr, "%s:%d:%d: error: %s\n", files[i], err.line, err.col, err.msg);
      else
        fprintf(stderr, "tune: %s: error: %s\n", files[i], err.msg);
      hlo_module_free(m);
      rc = TN_EXIT_USAGE;
      continue;
    }
    int divergent = 0;
    for (int v = 0; v < CHK_VERDICT_COUNT; v++)
      if (chk_verdict_is_divergent((chk_verdict)v))
        divergent += (int)r.verdict_counts[v];
    /* Issue 6: divergences of a fusion whose inputs drove the reference to
     * NaN or Inf are the inputs' artefacts: shown with that flag, stored
     * with their verdicts, but they do not fail the run. */
    if (r.nonfinite.kind == CHK_NONFINITE_INPUTS)
      divergent = 0;
    any_divergent |= divergent > 0;
    if (o->json)
      print_json(stdout, o, files[i], &r, i == nfiles - 1);
    else if (!o->quiet || divergent)
      print_summary(stdout, o, files[i], &r, &env.machine, &env.compiler);
    if (store && tn_store_add_fusion(store, &r, &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      rc = TN_EXIT_USAGE;
    }
    if (o->stop_on_mismatch && divergent) {
      for (int c = 0; c < r.ncands; c++)
        if (chk_verdict_is_divergent(r.cands[c].verdict)) {
          fprintf(stderr, "tune: stopping at the first divergence: %s candidate '%s' of %s (%s)\n",
                  chk_verdict_name(r.cands[c].verdict), r.cands[c].config, files[i], r.name);
          break;
        }
      stopped = 1;
    }
    tn_fusion_result_free(&r);
    hlo_module_free(m);
  }
  if (o->json)
    fputs("]\n", stdout);
  if (store) {
    hlo_error err = {0};
    if (tn_store_end_run(store, stopped ? "stopped" : (rc == TN_EXIT_USAGE ? "errors" : "complete"), &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      rc = TN_EXIT_USAGE;
    }
  }
  if (rc == TN_EXIT_USAGE)
    return rc;
  return any_divergent ? TN_EXIT_DIVERGED : TN_EXIT_OK;
}
