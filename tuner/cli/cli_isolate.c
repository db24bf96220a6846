/* cli_isolate.c — `tune --isolate FILE.hlo`: which fusion of a module is
 * wrong, and how (isolate.h).  Prints one line per unit, then the culprits
 * worst first, then a summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_env.h"
#include "triage/isolate.h"
#include "triage/isolate_store.h"
#include "sweep/lock.h"
#include "outpath.h"
#include "triage/shquote.h"
#include "store/h5values.h"
#include "store/store_read.h"
#include "run/units.h"
#include "check/verdict.h"
#include "run/fusion_run.h"

static void print_cmp(FILE *f, const char *what, const tn_iso_cmp *c) {
  if (!c->done) {
    fprintf(f, "; %s -", what);
    return;
  }
  if (c->identical)
    fprintf(f, "; %s identical", what);
  else if (c->within)
    fprintf(f, "; %s within", what);
  else
    fprintf(f, "; %s differs (%lld of %lld, max abs %.3g, max rel %.3g)", what, (long long)c->m.mismatches,
            (long long)c->m.count, c->m.max_abs, c->m.max_rel);
}

static void print_peak(FILE *f, const tn_iso_cmp *c) {
  if (!c->done || c->within || c->m.peak_index < 0)
    return;
  fprintf(f, ", output %d peak at (", c->leaf);
  for (int d = 0; d < c->m.rank; d++)
    fprintf(f, "%s%lld", d ? "," : "", (long long)c->m.peak[d]);
  fputs(")", f);
}

static void print_summary(FILE *f, const char *side, const tn_iso_summary *s) {
  fprintf(f, "         %-9s min %.6g, max %.6g, mean %.6g, std %.6g, %lld NaN, %lld Inf\n", side, s->min, s->max,
          s->mean, s->std, (long long)s->nan, (long long)s->inf);
}

static double at(const hlo_value *v, int64_t i) {
  return hlo_etype_class(v->type) == HLO_CLASS_FLOAT ? hlo_value_get_f64(v, i) : (double)hlo_value_get_i64(v, i);
}

/* One captured tensor: its comparison, box and peak. */
static void print_tensor(FILE *f, const tn_iso_tensor *t, const tn_iso_instr *e) {
  const chk_metrics *m = &t->m;
  fprintf(f, "       %s %s (%s): ", t->diverging ? "first diverging instruction" : "operand", t->name, e->op);
  if (m->mismatches == 0) {
    fprintf(f, "%s", hlo_value_equal(t->dev, t->ref) ? "identical" : "within the tolerance");
  } else {
    fprintf(f, "%lld of %lld elements differ, max rel %.3g, box [", (long long)m->mismatches, (long long)m->count,
            e->max_rel);
    for (int d = 0; d < m->rank; d++)
      fprintf(f, "%s%lld..%lld", d ? ", " : "", (long long)m->bbox_lo[d], (long long)m->bbox_hi[d]);
    fputs("], peak at (", f);
    for (int d = 0; d < m->rank; d++)
      fprintf(f, "%s%lld", d ? "," : "", (long long)m->peak[d]);
    fputs(")", f);
    if (m->peak_index >= 0)
      fprintf(f, ": device %.9g, reference %.9g", at(t->dev, m->peak_index), at(t->ref, m->peak_index));
  }
  if (e->observed < e->count)
    fprintf(f, " (%lld of %lld elements produced by the kernel)", (long long)e->observed, (long long)e->count);
  fputc('\n', f);
  print_summary(f, "device", &e->dev);
  print_summary(f, "reference", &e->ref);
}

static void print_micro(FILE *f, const tn_iso_micro *mi) {
  if (!mi->done) {
    if (mi->note[0])
      fprintf(f, "     %s\n", mi->note);
    return;
  }
  if (mi->first < 0) {
    int compared = 0;
    for (int i = 0; i < mi->n; i++)
      compared += mi->v[i].compared;
    fprintf(f, "     inside the fused kernel: no instruction diverges (%d compared with the reference)\n", compared);
    if (mi->store_diffs > 0)
      fprintf(f, "     but %lld elements of the stored output differ from the root's values as the kernel computed them:"
                 " the store is wrong\n",
              (long long)mi->store_diffs);
    return;
  }
  fprintf(f, "     inside the fused kernel, in program order:\n");
  for (int k = 0; k < mi->ntensors; k++)
    print_tensor(f, &mi->tensors[k], &mi->v[mi->tensors[k].instr]);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* --from RESULTS.h5 [--run ID]: per unit of file that the run checked, the
 * config of its first divergent candidate other than the default (a wrong
 * default is what --isolate runs anyway).  Units a --config names keep
 * it.  Appends to units/configs (n entries so far, at most max); returns
 * the new count, or -1 after printing why. */
static int from_results(const tn_opts *o, const char *file, const hlo_module *m, char (*units)[128],
                        char (*configs)[DEV_CONFIG_TEXT_MAX], int n, int max) {
  tn_stored_run run;
  tn_units mu;
  hlo_error err = {0};
  if (tn_units_find(m, &mu, &err) != 0) {
    fprintf(stderr, "tune: %s: error: %s\n", file, err.msg);
    return -1;
  }
  if (tn_results_read_run(o->from, o->run_id, &run, &err) != 0) {
    fprintf(stderr, "tune: --from: %s\n", err.msg);
    tn_units_free(&mu);
    return -1;
  }
  int found = 0;
  for (int i = 0; i < run.nfusions && n < max; i++) {
    const tn_fusion_result *r = &run.fusions[i].r;
    if (strcmp(base_name(r->source), base_name(file)) != 0)
      continue;
    bool unit = false; /* a unit of this module, not the file checked whole */
    for (int k = 0; k < mu.n && !unit; k++)
      unit = mu.v[k].ins && strcmp(mu.v[k].name, r->name) == 0;
    bool named = !unit;
    for (int c = 0; unit && c < r->ncands; c++)
      if (r->cands[c].id != 0 && chk_verdict_is_divergent(r->cands[c].verdict)) {
        found++; /* even when a --config names the unit */
        break;
      }
    for (int k = 0; k < o->nconfigs && !named; k++)
      named = (int)strlen(r->name) == o->config_unit_len[k] &&
              strncmp(o->config_units[k], r->name, (size_t)o->config_unit_len[k]) == 0;
    for (int k = 0; k < n && !named; k++)
      named = strcmp(units[k], r->name) == 0;
    for (int c = 0; c < r->ncands && !named; c++) {
      const tn_cand_result *cd = &r->cands[c];
      if (cd->id == 0 || !chk_verdict_is_divergent(cd->verdict))
        continue;
      snprintf(units[n], sizeof units[n], "%s", r->name);
      snprintf(configs[n], sizeof configs[n], "%s", cd->config);
      n++;
      break;
    }
  }
  if (found == 0) {
    fprintf(stderr, "tune: --from: %s, run %s: no divergent candidate of a unit of %s\n", o->from,
            run.info.id, base_name(file));
    n = -1;
  }
  tn_stored_run_free(&run);
  tn_units_free(&mu);
  return n;
}

/* -o RESULTS.h5: the isolation as a new run, written like every results
 * file: through a link into its target, never over the module, and under
 * the file's lock (lock.h). */
static int store_result(const tn_opts *o, const hlo_module *m, const tn_iso_result *r, const tn_check_env *env) {
  hlo_error err = {0};
  int lock = -1, rc = -1;
  char *out = tn_out_resolve(o->output, &err);
  if (out && tn_out_refuse_input(out, 1, &o->file, &err) == 0 && tn_lock_take(out, &lock, &err) == 0) {
    tn_iso_store_run run = {.command = o->command_line ? o->command_line : "tune --isolate",
                            .machine = env->machine.name, .compiler = env->compiler.name,
                            .defects = env->compiler.defects, .seed = o->seed, .source = o->file,
                            .inputs = o->inputs};
    rc = tn_iso_store(out, m, r, &run, &err);
    tn_lock_release(lock);
  }
  if (rc != 0)
    fprintf(stderr, "tune: %s\n", err.msg);
  free(out);
  return rc;
}

int tn_cmd_isolate(const tn_opts *o) {
  tn_check_env env;
  if (tn_check_env_load(o->machine, o->compiler, o->defects, o->ndefects, NULL, &env) != 0)
    return TN_EXIT_USAGE;
  /* --config overrides, then those --from adds */
  static char units[2 * TN_MAX_FUSIONS][128];
  static char from_configs[2 * TN_MAX_FUSIONS][DEV_CONFIG_TEXT_MAX];
  const char *unit_ptrs[2 * TN_MAX_FUSIONS], *config_ptrs[2 * TN_MAX_FUSIONS];
  for (int i = 0; i < o->nconfigs; i++) {
    snprintf(units[i], sizeof units[i], "%.*s", o->config_unit_len[i], o->config_units[i]);
    unit_ptrs[i] = units[i];
    config_ptrs[i] = o->config_texts[i];
  }
  hlo_module *m = tn_load_module(o->file, 0);
  if (!m)
    return TN_EXIT_USAGE;
  int noverrides = o->nconfigs;
  if (o->from) {
    noverrides = from_results(o, o->file, m, units, from_configs, o->nconfigs, 2 * TN_MAX_FUSIONS);
    if (noverrides < 0) {
      hlo_module_free(m);
      return TN_EXIT_USAGE;
    }
    for (int i = o->nconfigs; i < noverrides; i++) {
      unit_ptrs[i] = units[i];
      config_ptrs[i] = from_configs[i];
    }
  }
  int named = tn_replicas_named(m);
  if (o->replicas > 0 && o->replicas < named) {
    fprintf(stderr, "tune: %s: --replicas %d: a replica group names replica %d\n", o->file, o->replicas, named - 1);
    hlo_module_free(m);
    return TN_EXIT_USAGE;
  }
  /* --inputs IN.h5: the module's entry arguments, as --eval writes them */
  hlo_value **args = NULL;
  int nargs = m->entry->nparams;
  if (o->inputs) {
    hlo_error ierr = {0};
    args = calloc((size_t)nargs + 1, sizeof *args);
    hid_t f = args ? tn_h5_open_read(o->inputs, &ierr) : -1;
    int bad = !args || f < 0 || tn_h5_read_inputs(f, "inputs", m->entry, args, &ierr) != 0;
    if (f >= 0) {
      hlo_error cerr = {0};
      tn_h5_close(f, &cerr);
    }
    if (bad) {
      fprintf(stderr, "tune: --inputs: %s: %s\n", o->inputs, args ? ierr.msg : "out of memory");
      for (int k = 0; args && k < nargs; k++)
        hlo_value_unref(args[k]);
      free(args);
      hlo_module_free(m);
      return TN_EXIT_USAGE;
    }
  }
  tn_iso_opts io = {.backend = env.backend, .machine = &env.machine, .compiler = &env.compiler, .seed = o->seed,
                    .profile = (chk_inputs_profile)o->profile, .replicas = o->replicas,
                    .max_memory = o->max_memory, .time_budget = o->time_budget, .noverrides = noverrides,
                    .override_units = unit_ptrs, .override_configs = config_ptrs, .entry_args = args,
                    .all_tolerances = o->all_tolerances != 0};
  tn_iso_result r;
  hlo_error err = {0};
  if (tn_isolate(m, o->file, &io, &r, &err) != 0) {
    fprintf(stderr, "tune: %s: error: %s\n", o->file, err.msg);
    for (int k = 0; args && k < nargs; k++)
      hlo_value_unref(args[k]);
    free(args);
    hlo_module_free(m);
    return TN_EXIT_USAGE;
  }
  int counts[TN_ISO_CLASS_COUNT] = {0};
  printf("isolate %s: %d units, machine %s, compiler %s, ", o->file, r.n, env.machine.name, env.compiler.name);
  if (o->inputs)
    printf("inputs %s\n", o->inputs);
  else
    printf("seed %llu\n", (unsigned long long)o->seed);
  for (int i = 0; i < r.n; i++) {
    const tn_iso_unit *u = &r.v[i];
    counts[u->cls]++;
    printf("  %s: %s", u->name, tn_iso_class_name(u->cls));
    if (u->cls != TN_ISO_NOT_ISOLATED) {
      print_cmp(stdout, "fused vs unfused", &u->fused_unfused);
      print_cmp(stdout, "fused vs reference", &u->fused_ref);
      print_cmp(stdout, "unfused vs reference", &u->unfused_ref);
      bool from = false;
      for (int k = o->nconfigs; k < noverrides && !from; k++)
        from = strcmp(unit_ptrs[k], u->name) == 0;
      printf("; config %s%s", u->config, from ? " (--from)" : u->overridden ? " (--config)" : "");
      if (u->nkernels)
        printf("; %d single-op kernels", u->nkernels);
    }
    if (u->note[0])
      printf("; %s", u->note);
    putchar('\n');
  }
  const tn_iso_program *pg = &r.program;
  if (pg->done) {
    printf("program (every unit's fused kernel on what reaches it) vs reference: ");
    if (pg->differs)
      printf("differs (%lld of %lld, max abs %.3g, max rel %.3g)", (long long)pg->mismatches, (long long)pg->count,
             pg->max_abs, pg->max_rel);
    else
      printf("within (max rel %.3g)", pg->max_rel);
    if (pg->tol_skipped)
      printf(", bit for bit; tolerance not derived (--all-tolerances derives it)\n");
    else
      printf(", tolerance atol %.3g rtol %.3g\n", pg->tol.atol, pg->tol.rtol);
  } else if (pg->note[0]) {
    printf("program vs reference: not run: %s\n", pg->note);
  }
  if (r.nculprits) {
    puts("culprits, worst first (max relative error against the reference):");
    for (int k = 0; k < r.nculprits; k++) {
      const tn_iso_unit *u = &r.v[r.ranked[k]];
      const tn_iso_cmp *c = u->fused_ref.within ? &u->unfused_ref : &u->fused_ref;
      printf("  %d. %s: %s, max rel %.3g", k + 1, u->name, tn_iso_class_name(u->cls), u->max_rel);
      if (u->cls == TN_ISO_PROPAGATED)
        printf(" in the device's program: its operands arrive with max rel %.3g, its output leaves with %.3g"
               " (gain %.3g); the error starts at %s",
               u->chain_in_rel, u->chain_out_rel, pg->amplifier == r.ranked[k] ? pg->gain : 0.0,
               pg->origin >= 0 ? r.v[pg->origin].name : "no single unit");
      else
        print_peak(stdout, c);
      if (u->cls == TN_ISO_PROPAGATED) {
        /* no unit alone shows it: the program does */
        fputs("\n     reproduce: tune --isolate ", stdout);
        tn_sh_quote(stdout, o->file);
        for (int i = 0; i < r.n; i++) {
          if (!r.v[i].overridden)
            continue;
          fputs(" --config ", stdout);
          char kv[512];
          snprintf(kv, sizeof kv, "%s=%s", r.v[i].name, r.v[i].config);
          tn_sh_quote(stdout, kv);
        }
        if (o->inputs) {
          fputs(" --inputs ", stdout);
          tn_sh_quote(stdout, o->inputs);
        }
      } else {
        fputs("\n     reproduce: tune --check ", stdout);
        tn_sh_quote(stdout, o->file);
        fputs(" --fusion ", stdout);
        tn_sh_quote(stdout, u->name);
        fputs(" --only ", stdout);
        tn_sh_quote(stdout, u->config);
      }
      printf(" --seed %llu", (unsigned long long)o->seed);
      if (o->machine) {
        fputs(" --machine ", stdout);
        tn_sh_quote(stdout, o->machine);
      }
      if (o->compiler) {
        fputs(" --compiler ", stdout);
        tn_sh_quote(stdout, o->compiler);
      }
      for (int d = 0; d < o->ndefects; d++) {
        fputs(" --defect ", stdout);
        tn_sh_quote(stdout, o->defects[d]);
      }
      putchar('\n');
      print_micro(stdout, &u->micro);
    }
  }
  printf("summary: %d units: %d ok, %d fusion-bug, %d lowering-bug, %d reference-disagrees, %d not isolated", r.n,
         counts[TN_ISO_OK], counts[TN_ISO_FUSION_BUG], counts[TN_ISO_LOWERING_BUG], counts[TN_ISO_REFERENCE_DISAGREES],
         counts[TN_ISO_NOT_ISOLATED]);
  if (counts[TN_ISO_PROPAGATED])
    printf(", %d propagated", counts[TN_ISO_PROPAGATED]);
  putchar('\n');
  int rc = r.nculprits ? TN_EXIT_DIVERGED : TN_EXIT_OK;
  if (counts[TN_ISO_NOT_ISOLATED] == r.n) {
    fprintf(stderr, "tune: %s: no unit could be isolated\n", o->file);
    rc = TN_EXIT_USAGE;
  }
  if (o->output && store_result(o, m, &r, &env) != 0)
    rc = TN_EXIT_USAGE;
  tn_iso_result_free(&r);
  for (int k = 0; args && k < nargs; k++)
    hlo_value_unref(args[k]);
  free(args);
  hlo_module_free(m);
  return rc;
}
