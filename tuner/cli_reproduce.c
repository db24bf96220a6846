/* cli_reproduce.c — `tune --reproduce RESULTS.h5 [--run ID] --fusion NAME
 * --candidate ID -o DIR [--minimize]`: a hermetic bundle of one finding
 * (reproduce.h), optionally shrunk by delta debugging (minimize.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_env.h"
#include "hlo_parse.h"
#include "minimize.h"
#include "outpath.h"
#include "reproduce.h"
#include "store/store_read.h"
#include "sweep.h"

/* What the minimizer's test needs: the device of the run and the finding. */
typedef struct {
  const tn_check_env *env;
  const char *config;
  uint64_t seed;
  int threads;
  int profile; /* the run's input profile (chk_inputs_profile) */
} min_ctx;

/* Does the candidate with this config still diverge on this module? */
static int still_diverges(const char *text, void *vctx) {
  const min_ctx *c = vctx;
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    return 0;
  tn_sweep_opts so = {
      .backend = c->env->backend,
      .machine = &c->env->machine,
      .compiler = &c->env->compiler,
      .seed = c->seed,
      .profile = (chk_inputs_profile)c->profile,
      .threads = c->threads,
      .only = c->config,
  };
  tn_fusion_result r;
  int holds = 0;
  if (tn_check_fusion(m, "minimize", &so, &r, &err) == 0) {
    for (int i = 0; i < r.ncands; i++)
      if (strcmp(r.cands[i].config, c->config) == 0 && chk_verdict_is_divergent(r.cands[i].verdict))
        holds = 1;
    tn_fusion_result_free(&r);
  }
  hlo_module_free(m);
  return holds;
}

int tn_cmd_reproduce(const tn_opts *o) {
  if (!o->fusion || !o->has_candidate || !o->output) {
    fputs("tune: --reproduce needs --fusion NAME, --candidate ID and -o DIR\n"
          "Try 'tune --help' for more information.\n",
          stderr);
    return TN_EXIT_USAGE;
  }
  hlo_error err = {0};
  /* The bundle's files replace what DIR holds (reproduce.c); DIR itself
   * must not be the results file. */
  if (tn_out_refuse_input(o->output, 1, &o->file, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return TN_EXIT_USAGE;
  }
  tn_stored_run run;
  if (tn_results_read_run(o->file, o->run_id, &run, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return TN_EXIT_USAGE;
  }
  int rc = TN_EXIT_USAGE;
  char *minimized = NULL;
  const tn_stored_fusion *sf = tn_stored_run_find_fusion(&run, o->fusion);
  const tn_cand_result *c = sf ? tn_fusion_result_find_cand(&sf->r, o->candidate) : NULL;
  if (!sf) {
    fprintf(stderr, "tune: %s: run %s has no fusion named '%s'\n", o->file, run.info.id, o->fusion);
    goto done;
  }
  if (!c) {
    fprintf(stderr, "tune: %s: fusion %s has no candidate %d\n", o->file, o->fusion, o->candidate);
    goto done;
  }
  tn_repro_bundle b = {
      .dir = o->output,
      .results_path = o->file,
      .run = &run.info,
      .r = &sf->r,
      .c = c,
      .hlo = sf->r.hlo,
      .instrs_before = -1,
      .instrs_after = -1,
  };
  if (o->minimize) {
    if (!chk_verdict_is_divergent(c->verdict)) {
      fprintf(stderr, "tune: --minimize: candidate %d of %s is not divergent (%s); nothing to keep\n", c->id,
              o->fusion, chk_verdict_name(c->verdict));
      goto done;
    }
    tn_repro_device d;
    tn_repro_device_of_run(&run.info, &d);
    const char *defects[TN_REPRO_MAX_DEFECTS];
    for (int i = 0; i < d.ndefects; i++)
      defects[i] = d.defects[i];
    tn_check_env env;
    if (tn_check_env_load(d.machine[0] ? d.machine : NULL, d.compiler[0] ? d.compiler : NULL, defects, d.ndefects,
                          o->backend, &env) != 0)
      goto done;
    min_ctx mc = {&env, c->config, sf->r.seed, o->threads, sf->r.profile};
    if (!still_diverges(sf->r.hlo, &mc)) {
      fprintf(stderr, "tune: --minimize: candidate %d of %s does not diverge when checked again; "
                      "writing the bundle unminimized\n", c->id, o->fusion);
    } else {
      tn_min_result mr;
      if (tn_minimize(sf->r.hlo, still_diverges, &mc, &mr, &err) != 0) {
        fprintf(stderr, "tune: --minimize: %s\n", err.msg);
        goto done;
      }
      minimized = mr.text;
      b.hlo = minimized;
      b.instrs_before = mr.instrs_before;
      b.instrs_after = mr.instrs_after;
      printf("minimized %s: %d -> %d instructions (%d checks)\n", sf->r.name, mr.instrs_before, mr.instrs_after,
             mr.tests);
    }
  }
  if (tn_repro_write(&b, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    goto done;
  }
  if (!o->quiet)
    printf("wrote %s/ (fusion.hlo, config.txt, seed, inputs.h5, README, run.sh): %s candidate %d, %s\n", o->output,
           sf->r.name, c->id, chk_verdict_name(c->verdict));
  rc = TN_EXIT_OK;
done:
  free(minimized);
  tn_stored_run_free(&run);
  return rc;
}
