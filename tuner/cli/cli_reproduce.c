/* cli_reproduce.c — `tune --reproduce RESULTS.h5 [--run ID] --fusion NAME
 * --candidate ID -o DIR [--minimize]`: a hermetic bundle of one finding
 * (reproduce.h), optionally shrunk by delta debugging (minimize.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <hdf5.h>

#include "cli.h"
#include "cli_env.h"
#include "hlo/hlo_parse.h"
#include "triage/minimize.h"
#include "outpath.h"
#include "triage/reproduce.h"
#include "triage/shquote.h"
#include "store/h5util.h"
#include "store/h5values.h"
#include "store/store_isolate.h"
#include "store/store_read.h"
#include "run/fusion_run.h"

/* The inputs a stored fusion was checked on, when the store kept them
 * (graph-captured or --inputs: fusions/<group>/inputs), read against the
 * parameters of its module.  0 with *args NULL when there are none. */
static int stored_inputs(const char *path, const char *run_id, const tn_stored_fusion *sf, hlo_value ***args,
                         int *nargs, hlo_error *err) {
  *args = NULL;
  *nargs = 0;
  char where[512];
  snprintf(where, sizeof where, "runs/%s/fusions/%s", run_id, sf->group);
  hid_t f = tn_h5_open_read(path, err);
  if (f < 0)
    return -1;
  int rc = -1;
  hlo_module *m = NULL;
  hid_t g = H5Gopen2(f, where, H5P_DEFAULT);
  if (g < 0) {
    hlo_error_set(err, 0, 0, "%s: %s: not a group", path, where);
    goto done;
  }
  /* A failed look-up must not read as "no stored inputs": the fusion would
   * then be reproduced on generated inputs, not on the ones it failed on. */
  int has = tn_h5_exists(g, "inputs", err);
  if (has <= 0) {
    if (has < 0)
      tn_h5_prefix_error(err, path);
    rc = has;
    goto done;
  }
  if (!(m = hlo_parse(sf->r.hlo, strlen(sf->r.hlo), err)))
    goto done;
  *nargs = m->entry->nparams;
  *args = calloc((size_t)(*nargs ? *nargs : 1), sizeof **args);
  if (!*args) {
    hlo_error_set(err, 0, 0, "out of memory");
  } else if (tn_h5_read_inputs(g, "inputs", m->entry, *args, err) != 0) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    hlo_error_set(err, 0, 0, "%s: %s/%s", path, where, msg);
    free(*args);
    *args = NULL;
  } else {
    rc = 0;
  }
done:
  if (g >= 0)
    H5Gclose(g);
  hlo_error cerr = {0};
  tn_h5_close(f, &cerr);
  hlo_module_free(m);
  if (rc != 0)
    *nargs = 0;
  return rc;
}

/* The file's tool_version attribute ("" when absent). */
static void results_version(const char *path, char *buf, size_t len) {
  hlo_error err = {0};
  buf[0] = '\0';
  hid_t f = tn_h5_open_read(path, &err);
  if (f < 0)
    return;
  if (tn_h5_attr_get_str(f, "tool_version", buf, len, &err) != 0)
    buf[0] = '\0';
  tn_h5_close(f, &err);
}

/* An isolation run that stored no operands of culprit `name` (a run by an
 * older tune): say how to get a bundle of that unit alone the two-step way
 * (a --check of one unit of a module runs on the operands the module's
 * evaluation gives it, as the isolation did). */
static void isolation_hint(const tn_opts *o, const tn_stored_run *run, const char *name) {
  tn_stored_isolation iso;
  hlo_error err = {0};
  if (tn_results_read_isolation(o->file, run->info.id, &iso, &err) != 1)
    return;
  for (int i = 0; i < iso.nunits; i++) {
    const tn_siso_unit *u = &iso.units[i];
    if (strcmp(u->name, name) != 0)
      continue;
    tn_repro_device d;
    tn_repro_device_of_run(&run->info, &d);
    fprintf(stderr, "tune: run %s is an isolation of %s, where %s is %s; to bundle it alone, check it with -o, then"
                    " --reproduce that run (tune --report names the candidate):\n  tune --check ",
            run->info.id, iso.source, u->name, u->cls);
    tn_sh_quote(stderr, iso.source);
    fputs(" --fusion ", stderr);
    tn_sh_quote(stderr, u->name);
    fputs(" --only ", stderr);
    tn_sh_quote(stderr, u->config);
    fprintf(stderr, " --seed %llu", (unsigned long long)run->info.seed);
    if (d.machine[0]) {
      fputs(" --machine ", stderr);
      tn_sh_quote(stderr, d.machine);
    }
    if (d.compiler[0]) {
      fputs(" --compiler ", stderr);
      tn_sh_quote(stderr, d.compiler);
    }
    for (int k = 0; k < d.ndefects; k++) {
      fputs(" --defect ", stderr);
      tn_sh_quote(stderr, d.defects[k]);
    }
    fputs(" -o CHECK.h5\n", stderr);
    break;
  }
  tn_stored_isolation_free(&iso);
}

/* The operands stored with isolation culprit c of run run_id (its group
 * culprits/<unit index>/inputs), read against the parameters of m. */
static int culprit_inputs(const char *path, const char *run_id, const tn_stored_isolation *iso,
                          const tn_siso_culprit *c, const hlo_module *m, hlo_value **args, hlo_error *err) {
  char where[512];
  snprintf(where, sizeof where, "runs/%s/isolation/culprits/%d", run_id, (int)iso->units[c->unit].index);
  hid_t f = tn_h5_open_read(path, err);
  if (f < 0)
    return -1;
  int rc = -1;
  int has = tn_h5_exists(f, where, err);
  hid_t g = has > 0 ? H5Gopen2(f, where, H5P_DEFAULT) : -1;
  if (has < 0)
    tn_h5_prefix_error(err, path);
  else if (g < 0)
    hlo_error_set(err, 0, 0, "%s: %s: not a group", path, where);
  else if (tn_h5_read_inputs(g, "inputs", m->entry, args, err) != 0) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    hlo_error_set(err, 0, 0, "%s: %s/inputs: %s", path, where, msg);
  } else {
    rc = 0;
  }
  if (g >= 0)
    H5Gclose(g);
  hlo_error cerr = {0};
  tn_h5_close(f, &cerr);
  return rc;
}

/* --reproduce of an isolation run: a bundle of one culprit alone (--fusion
 * NAME, or the worst), on the operands macro isolation ran it on, with
 * its config.  Exit status as tn_cmd_reproduce's. */
static int reproduce_culprit(const tn_opts *o, const tn_stored_run *run, const tn_stored_isolation *iso,
                             const char *tool_path) {
  const tn_siso_culprit *c = NULL;
  for (int k = 0; k < iso->nculprits && !c; k++)
    if (!o->fusion || strcmp(iso->units[iso->culprits[k].unit].name, o->fusion) == 0)
      c = &iso->culprits[k];
  if (!c) {
    if (o->fusion)
      fprintf(stderr, "tune: %s: run %s is an isolation of %s where '%s' is no culprit; nothing to bundle\n",
              o->file, run->info.id, iso->source, o->fusion);
    else
      fprintf(stderr, "tune: %s: run %s is an isolation of %s with no culprit; nothing to bundle\n", o->file,
              run->info.id, iso->source);
    return TN_EXIT_USAGE;
  }
  const tn_siso_unit *u = &iso->units[c->unit];
  if (!c->hlo) {
    /* a propagated culprit is right on its own operands, and a run by an
     * older tune kept none */
    fprintf(stderr, "tune: %s: run %s stored no operands of %s (%s) to bundle it with\n", o->file, run->info.id,
            u->name, u->cls);
    if (strcmp(u->cls, "propagated") != 0)
      isolation_hint(o, run, u->name);
    return TN_EXIT_USAGE;
  }
  hlo_error err = {0};
  int rc = TN_EXIT_USAGE;
  hlo_value **args = NULL;
  int nargs = 0;
  hlo_module *m = hlo_parse(c->hlo, strlen(c->hlo), &err);
  if (!m) {
    fprintf(stderr, "tune: %s: run %s: the module of %s: %d:%d: %s\n", o->file, run->info.id, u->name, err.line,
            err.col, err.msg);
    return TN_EXIT_USAGE;
  }
  nargs = m->entry->nparams;
  if (!(args = calloc((size_t)nargs + 1, sizeof *args))) {
    fputs("tune: out of memory\n", stderr);
    goto done;
  }
  if (culprit_inputs(o->file, run->info.id, iso, c, m, args, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    goto done;
  }
  char version[64];
  results_version(o->file, version, sizeof version);
  tn_fusion_result r;
  memset(&r, 0, sizeof r);
  snprintf(r.name, sizeof r.name, "%s", u->name);
  snprintf(r.inputs_from, sizeof r.inputs_from, "graph");
  r.seed = run->info.seed;
  r.hlo = c->hlo;
  tn_cand_result cand;
  memset(&cand, 0, sizeof cand);
  snprintf(cand.config, sizeof cand.config, "%s", u->config);
  cand.leaf = u->fr.leaf;
  cand.vs_reference.count = u->fr.count;
  cand.vs_reference.mismatches = u->fr.mismatches;
  cand.vs_reference.max_abs = u->fr.max_abs;
  cand.vs_reference.max_rel = u->fr.max_rel;
  cand.tol.atol = u->atol;
  cand.tol.rtol = u->rtol;
  tn_repro_bundle b = {
      .dir = o->output,
      .results_path = o->file,
      .run = &run->info,
      .r = &r,
      .c = &cand,
      .hlo = c->hlo,
      .instrs_before = -1,
      .instrs_after = -1,
      .ninputs = nargs,
      .inputs = args,
      .tool_path = tool_path,
      .run_tool_version = version,
      .isolation_class = u->cls,
  };
  if (tn_repro_write(&b, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    goto done;
  }
  if (!o->quiet)
    printf("wrote %s/ (fusion.hlo, config.txt, seed, inputs.h5, README, run.sh): %s alone, %s of the isolation of %s\n",
           o->output, u->name, u->cls, iso->source);
  rc = TN_EXIT_OK;
done:
  for (int i = 0; args && i < nargs; i++)
    hlo_value_unref(args[i]);
  free(args);
  hlo_module_free(m);
  return rc;
}

int tn_cmd_reproduce(const tn_opts *o) {
  if (!o->output) {
    fputs("tune: --reproduce needs -o DIR (and --fusion NAME --candidate ID for a run of --check)\n"
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
  /* A bundle replays the run's device, which this tune cannot build
   * without the defects it does not model. */
  if (run.info.defects_unknown[0]) {
    fprintf(stderr, "tune: %s: run %s: defects: %s: not a defect this tune models (a newer tune wrote the run)\n",
            o->file, run.info.id, run.info.defects_unknown);
    tn_stored_run_free(&run);
    return TN_EXIT_USAGE;
  }
  /* run.sh falls back to this very binary when no tune is on PATH. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  const char *tool_path = n > 0 && self[0] == '/' && !tn_sh_has_control(self) ? self : NULL;
  /* An isolation run holds culprits, not candidates. */
  if (run.nfusions == 0 || !o->has_candidate) {
    tn_stored_isolation iso;
    int has = tn_results_read_isolation(o->file, run.info.id, &iso, &err);
    if (has < 0) {
      fprintf(stderr, "tune: %s\n", err.msg);
      tn_stored_run_free(&run);
      return TN_EXIT_USAGE;
    }
    if (has == 1) {
      rc = reproduce_culprit(o, &run, &iso, tool_path);
      tn_stored_isolation_free(&iso);
      tn_stored_run_free(&run);
      return rc;
    }
  }
  if (!o->fusion || !o->has_candidate) {
    fputs("tune: --reproduce of a --check run needs --fusion NAME and --candidate ID\n"
          "Try 'tune --help' for more information.\n",
          stderr);
    tn_stored_run_free(&run);
    return TN_EXIT_USAGE;
  }
  char *minimized = NULL;
  tn_fusion_result minr; /* the minimized module checked again */
  memset(&minr, 0, sizeof minr);
  hlo_value **inputs = NULL; /* the stored inputs of the fusion, if any */
  int ninputs = 0;
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
  char version[64];
  results_version(o->file, version, sizeof version);
  if (stored_inputs(o->file, run.info.id, sf, &inputs, &ninputs, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
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
      .ninputs = ninputs,
      .inputs = inputs,
      .tool_path = tool_path,
      .run_tool_version = version,
  };
  char shrunk[sizeof ((tn_min_result *)0)->shrunk] = "";
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
    tn_min_config mc = {.so = {.backend = env.backend,
                               .machine = &env.machine,
                               .compiler = &env.compiler,
                               .seed = sf->r.seed,
                               .profile = (chk_inputs_profile)sf->r.profile,
                               .threads = o->threads,
                               .only = c->config}};
    if (!tn_min_config_diverges(sf->r.hlo, &mc)) {
      fprintf(stderr, "tune: --minimize: candidate %d of %s does not diverge when checked again; "
                      "writing the bundle unminimized\n", c->id, o->fusion);
    } else {
      tn_min_result mr;
      if (tn_minimize(sf->r.hlo, tn_min_config_diverges, &mc, &mr, &err) != 0) {
        fprintf(stderr, "tune: --minimize: %s\n", err.msg);
        goto done;
      }
      minimized = mr.text;
      b.hlo = minimized;
      /* The minimizer checked the smaller module on synthesised inputs
       * (its parameters may differ from the original's): so does run.sh. */
      b.inputs = NULL;
      b.ninputs = 0;
      b.instrs_before = mr.instrs_before;
      b.instrs_after = mr.instrs_after;
      /* The README quotes the minimized module's figures (issue 18). */
      int k = tn_min_config_check(minimized, &mc, &minr, &err);
      b.min_c = k >= 0 ? &minr.cands[k] : NULL;
      snprintf(shrunk, sizeof shrunk, "%s", mr.shrunk);
      b.shrunk = shrunk;
      printf("minimized %s: %d -> %d instructions%s%s (%d checks)\n", sf->r.name, mr.instrs_before,
             mr.instrs_after, mr.shrunk[0] ? ", shapes " : "", mr.shrunk, mr.tests);
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
  for (int i = 0; i < ninputs; i++)
    hlo_value_unref(inputs[i]);
  free(inputs);
  free(minimized);
  tn_fusion_result_free(&minr);
  tn_stored_run_free(&run);
  return rc;
}
