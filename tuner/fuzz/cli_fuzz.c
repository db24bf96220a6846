/* cli_fuzz.c — `tune --fuzz [--seconds S | --count N] [--seed N]
 * [--template T]... [-o RESULTS.h5]`: generate fusions (fuzz/gen.h), prove
 * each is well formed (verifier, print/parse round trip), check it like
 * --check (constrained inputs, the budget chosen by pairwise cover), and
 * keep every finding, minimized, in a results file that --report and
 * --reproduce read.
 *
 * Draws run one after another: the coverage map that steers draw i+1 is
 * updated with draw i's results, so the sequence is a function of the seed
 * alone; --threads only parallelises the candidates of one fusion, whose
 * results do not depend on it (fusion_run.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_env.h"
#include "covmap.h"
#include "gen.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_verify.h"
#include "triage/minimize.h"
#include "store/store.h"
#include "run/fusion_run.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Coverage keys of one generated module: each instruction's op and type. */
static void cover_module(tn_covmap *cov, const hlo_module *m) {
  for (int c = 0; c < m->ncomps; c++) {
    const hlo_computation *comp = m->comps[c];
    if (comp->is_entry)
      continue;
    for (int i = 0; i < comp->ninstrs; i++) {
      const hlo_instr *in = comp->instrs[i];
      char key[96];
      snprintf(key, sizeof key, "op:%s:%s", hlo_opcode_name(in->op), hlo_etype_name(in->shape.type));
      tn_covmap_add(cov, key);
    }
  }
}

/* ... and of its check: the hero, and each knob value a candidate had. */
static void cover_result(tn_covmap *cov, const tn_fusion_result *r) {
  char key[DEV_CONFIG_TEXT_MAX + 64];
  snprintf(key, sizeof key, "hero:%s", r->hero);
  tn_covmap_add(cov, key);
  for (int i = 0; i < r->ncands; i++) {
    char cfg[DEV_CONFIG_TEXT_MAX];
    snprintf(cfg, sizeof cfg, "%s", r->cands[i].config);
    for (char *save = NULL, *tok = strtok_r(cfg, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
      snprintf(key, sizeof key, "knob:%s:%s", r->hero, tok);
      tn_covmap_add(cov, key);
    }
  }
}

/* The first divergent candidate: the one a finding is minimized on. */
static int first_divergent(const tn_fusion_result *r) {
  for (int i = 1; i < r->ncands; i++)
    if (chk_verdict_is_divergent(r->cands[i].verdict))
      return i;
  return r->ncands > 0 && chk_verdict_is_divergent(r->cands[0].verdict) ? 0 : -1;
}

typedef struct {
  int64_t fusions, invalid, roundtrip, uncheckable, candidates, findings;
  int64_t first_at;      /* draw of the first finding; -1 none */
  double first_s;        /* seconds to it */
  int first_before, first_after; /* its kernel instructions, before and after minimizing */
} fuzz_stats;

static void progress(const tn_opts *o, const fuzz_stats *st, const tn_covmap *cov, double t0, bool done) {
  if (o->quiet || !isatty(STDERR_FILENO))
    return;
  double dt = now_s() - t0;
  fprintf(stderr, "\r\033[Kfuzz: %lld fusions (%.1f/s), %lld candidates, coverage %lld keys, %lld findings",
          (long long)st->fusions, dt > 0 ? (double)st->fusions / dt : 0.0, (long long)st->candidates,
          (long long)tn_covmap_size(cov), (long long)st->findings);
  if (done)
    fputs("\r\033[K", stderr);
}

/* Minimizes finding r (module text, divergent candidate ci), prints it and
 * stores both forms when a store is open.  Returns -1 when the store fails. */
static int keep_finding(const tn_opts *o, const tn_check_env *env, tn_store *s, const tn_fusion_result *r, int ci,
                        uint64_t index, const char *tmpl, fuzz_stats *st) {
  const tn_cand_result *c = &r->cands[ci];
  tn_min_config mc = {.so = {.backend = env->backend,
                             .machine = &env->machine,
                             .compiler = &env->compiler,
                             .seed = o->seed,
                             .profile = CHK_INPUTS_CONSTRAINED,
                             .threads = o->threads,
                             .only = c->config},
                      .verify = true};
  tn_min_result mr = {0};
  hlo_error err = {0};
  int before = tn_min_count(r->hlo, &err), after = before;
  if (tn_minimize(r->hlo, tn_min_config_diverges, &mc, &mr, &err) == 0) {
    before = mr.instrs_before;
    after = mr.instrs_after;
  }
  if (st->findings == 1) {
    st->first_before = before;
    st->first_after = after;
  }
  printf("finding %lld: draw %llu (%s, %s): %s with %s; minimized from %d to %d instructions\n",
         (long long)st->findings, (unsigned long long)index, tmpl, r->name, chk_verdict_name(c->verdict), c->config,
         before, after);
  int rc = 0;
  if (s) {
    /* what --reproduce takes: the minimized module when there is one (its
     * candidate 1 is the config, 0 the default), else the module as drawn */
    char repro_name[sizeof r->name + 8];
    int repro_id = c->id;
    snprintf(repro_name, sizeof repro_name, "%s", r->name);
    rc = tn_store_add_fusion(s, r, &err);
    if (rc == 0 && mr.text && after < before) {
      /* The minimized module, checked with the one config, under its own name. */
      hlo_module *m = hlo_parse(mr.text, strlen(mr.text), &err);
      tn_sweep_opts so = {.backend = env->backend, .machine = &env->machine, .compiler = &env->compiler,
                          .seed = o->seed, .profile = CHK_INPUTS_CONSTRAINED, .threads = o->threads,
                          .only = c->config, .error_maps = 1};
      char name[sizeof r->name + 8];
      snprintf(name, sizeof name, "%s-min", r->name);
      so.unit_name = name;
      tn_fusion_result rm;
      if (m && tn_check_fusion(m, "fuzz (minimized)", &so, &rm, &err) == 0) {
        rc = tn_store_add_fusion(s, &rm, &err);
        for (int k = 0; k < rm.ncands; k++)
          if (strcmp(rm.cands[k].config, c->config) == 0 && chk_verdict_is_divergent(rm.cands[k].verdict)) {
            snprintf(repro_name, sizeof repro_name, "%s", name);
            repro_id = rm.cands[k].id;
          }
        tn_fusion_result_free(&rm);
      }
      hlo_module_free(m);
    }
    if (rc != 0)
      fprintf(stderr, "tune: %s: %s\n", o->output, err.msg);
    else
      printf("  reproduce: tune --reproduce %s --fusion %s --candidate %d -o DIR\n", o->output, repro_name, repro_id);
  }
  free(mr.text);
  return rc;
}

int tn_cmd_fuzz(const tn_opts *o) {
  if (o->fuzz_count == 0 && o->fuzz_seconds <= 0) {
    fputs("tune: --fuzz needs --count N or --seconds S\nTry 'tune --help' for more information.\n", stderr);
    return TN_EXIT_USAGE;
  }
  tn_check_env env;
  if (tn_check_env_load(o->machine, o->compiler, o->defects, o->ndefects, o->backend, &env) != 0)
    return TN_EXIT_USAGE;
  tn_covmap *cov = tn_covmap_new();
  if (!cov) {
    fputs("tune: out of memory\n", stderr);
    return TN_EXIT_USAGE;
  }
  hlo_error err = {0};
  tn_store *s = NULL;
  tn_run_info run;
  memset(&run, 0, sizeof run);
  if (o->output) {
    snprintf(run.command, sizeof run.command, "%s", o->command_line ? o->command_line : "tune --fuzz");
    snprintf(run.machine, sizeof run.machine, "%s", env.machine.name);
    snprintf(run.compiler, sizeof run.compiler, "%s", env.compiler.name);
    run.defects = env.compiler.defects;
    run.defects_known = 1;
    run.seed = o->seed;
    if (!(s = tn_store_begin_run(o->output, &run, &err))) {
      fprintf(stderr, "tune: %s\n", err.msg);
      tn_covmap_free(cov);
      return TN_EXIT_USAGE;
    }
  }
  tn_sweep_opts so = {
      .backend = env.backend,
      .machine = &env.machine,
      .compiler = &env.compiler,
      .seed = o->seed,
      .profile = CHK_INPUTS_CONSTRAINED,
      .threads = o->threads,
      .budget = o->budget > 0 ? o->budget : TN_FUZZ_DEFAULT_BUDGET,
      .cover_seed = o->has_cover_seed ? o->cover_seed : o->seed,
      .error_maps = 1,
      .max_memory = o->max_memory,
  };
  fuzz_stats st = {.first_at = -1};
  double t0 = now_s(), last_progress = 0;
  int status = TN_EXIT_OK;
  char first_invalid[600] = "";
  for (uint64_t i = 0;; i++) {
    if (o->fuzz_count > 0 ? i >= (uint64_t)o->fuzz_count : now_s() - t0 >= o->fuzz_seconds)
      break;
    tn_fuzz_template tmpl;
    char *text = tn_fuzz_generate(o->seed, i, o->fuzz_templates, cov, &tmpl);
    if (!text) {
      fputs("tune: out of memory\n", stderr);
      status = TN_EXIT_USAGE;
      break;
    }
    st.fusions++;
    char key[64];
    snprintf(key, sizeof key, "tmpl:%s", tn_fuzz_template_name(tmpl));
    tn_covmap_add(cov, key);
    /* Well formed: parses, verifies, and prints back to the same module. */
    hlo_module *m = hlo_parse(text, strlen(text), &err);
    if (m && hlo_verify(m, &err) != 0) {
      hlo_module_free(m);
      m = NULL;
    }
    if (!m) {
      if (!st.invalid++)
        snprintf(first_invalid, sizeof first_invalid, "draw %llu (%s): %d:%d: %s", (unsigned long long)i,
                 tn_fuzz_template_name(tmpl), err.line, err.col, err.msg);
      free(text);
      continue;
    }
    size_t plen = 0;
    char *printed = hlo_print_module(m, &plen);
    hlo_module *back = printed ? hlo_parse(printed, plen, &err) : NULL;
    if (!back || !hlo_module_equal(m, back, NULL, 0))
      st.roundtrip++;
    hlo_module_free(back);
    free(printed);
    cover_module(cov, m);

    tn_fusion_result r;
    tn_unit_status why;
    char source[64];
    snprintf(source, sizeof source, "fuzz:%llu:%llu", (unsigned long long)o->seed, (unsigned long long)i);
    if (tn_check_unit(m, source, &so, &r, &why, &err) != 0) {
      st.uncheckable++;
      if (o->fuzz_verbose)
        fprintf(stderr, "fuzz: draw %llu (%s): %s: %s\n", (unsigned long long)i, tn_fuzz_template_name(tmpl),
                tn_unit_status_name(why), err.msg);
    } else {
      st.candidates += r.ncands;
      cover_result(cov, &r);
      int ci = first_divergent(&r);
      if (ci >= 0) {
        st.findings++;
        if (st.first_at < 0) {
          st.first_at = (int64_t)i;
          st.first_s = now_s() - t0;
        }
        if (keep_finding(o, &env, s, &r, ci, i, tn_fuzz_template_name(tmpl), &st) != 0)
          status = TN_EXIT_USAGE;
      }
      tn_fusion_result_free(&r);
    }
    hlo_module_free(m);
    free(text);
    if (now_s() - last_progress > 0.5) {
      progress(o, &st, cov, t0, false);
      last_progress = now_s();
    }
    if (status != TN_EXIT_OK || (o->stop_on_mismatch && st.findings > 0))
      break;
  }
  progress(o, &st, cov, t0, true);
  double dt = now_s() - t0;
  printf("fuzz: seed %llu, machine %s, compiler %s: %lld fusions generated, %lld rejected by the verifier, "
         "%lld failed the print round trip, %lld not checkable, %lld candidates checked, %lld findings "
         "in %.1f s (%.1f fusions/s), coverage %lld keys\n",
         (unsigned long long)o->seed, env.machine.name, env.compiler.name, (long long)st.fusions,
         (long long)st.invalid, (long long)st.roundtrip, (long long)st.uncheckable, (long long)st.candidates,
         (long long)st.findings, dt, dt > 0 ? (double)st.fusions / dt : 0.0, (long long)tn_covmap_size(cov));
  if (st.first_at >= 0)
    printf("first finding: after %lld fusions and %.1f s, minimized from %d to %d instructions\n",
           (long long)st.first_at + 1, st.first_s, st.first_before, st.first_after);
  if (st.invalid)
    printf("first invalid module: %s\n", first_invalid);
  if (s) {
    if (tn_store_end_run(s, status == TN_EXIT_OK ? "complete" : "interrupted", &err) != 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      status = TN_EXIT_USAGE;
    } else if (!o->quiet) {
      printf("results: %s, run %s\n", o->output, run.id);
    }
  }
  tn_covmap_free(cov);
  /* A module the generator got wrong is the tool's error, not the device's. */
  if (status == TN_EXIT_OK && (st.invalid || st.roundtrip))
    status = TN_EXIT_USAGE;
  if (status == TN_EXIT_OK && st.findings)
    status = TN_EXIT_DIVERGED;
  return status;
}
