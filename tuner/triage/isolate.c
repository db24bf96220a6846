/* isolate.c — macro isolation of a module (isolate.h says what and why). */
#include "isolate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/backend_host.h"
#include "run/capture.h"
#include "check/cascade.h"
#include "isolate_chain.h"
#include "isolate_same.h"
#include "device/dev_fusion.h"
#include "check/eval.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_hash.h"
#include "hlo/hlo_value.h"
#include "run/only.h"
#include "run/result.h"
#include "run/fusion_run.h"
#include "run/units.h"

static const char *const class_names[] = {
#define X(e, name) name,
    TN_ISO_CLASS_LIST(X)
#undef X
};

const char *tn_iso_class_name(tn_iso_class c) {
  return (unsigned)c < TN_ISO_CLASS_COUNT ? class_names[c] : "?";
}

bool tn_iso_class_is_culprit(tn_iso_class c) {
  return c == TN_ISO_FUSION_BUG || c == TN_ISO_LOWERING_BUG || c == TN_ISO_REFERENCE_DISAGREES ||
         c == TN_ISO_PROPAGATED;
}

/* Timing-jitter seeds depend only on the run's seed and which run this
 * is, so an isolation is reproducible. */
uint64_t tn_iso_jitter(uint64_t seed, const dev_config *cfg) { return hlo_mix64(seed, dev_config_fingerprint(cfg)); }

/* What every unit's runs share. */
typedef struct {
  const tn_iso_opts *o;
  const char *source;
} iso_ctx;

/* The default config of analysed fusion f, or -1 with why. */
static int default_config(const iso_ctx *c, const dev_fusion *f, dev_config *dflt, char *why, size_t n) {
  hlo_error err = {0};
  int rc = tn_default_config(c->o->backend, f, c->o->machine, dflt, &err);
  if (rc != 0)
    snprintf(why, n, "no candidate space: %.400s", err.msg);
  return rc;
}

/* Compiles and runs module um (analysed as f) with cfg on args.  The
 * output (one reference), or NULL with why. */
static hlo_value *run_kernel(const iso_ctx *c, const dev_fusion *f, const dev_config *cfg, hlo_value *const *args,
                             int nargs, uint64_t jitter, char *why, size_t n) {
  dev_kernel *k = NULL;
  char msg[512] = "";
  dev_status st = c->o->backend->compile(f, cfg, c->o->machine, c->o->compiler, &k, msg, sizeof msg);
  if (st != DEV_OK) {
    snprintf(why, n, "compile error: %.400s", msg);
    return NULL;
  }
  dev_run run;
  memset(&run, 0, sizeof run);
  c->o->backend->run(k, args, nargs, jitter, &run);
  c->o->backend->release(k);
  if (run.status != DEV_OK) {
    snprintf(why, n, "%s: %.400s", run.status == DEV_TIMEOUT ? "timeout" : "runtime error", run.message);
    hlo_value_unref(run.out);
    return NULL;
  }
  return run.out;
}

/* The value a fusion parameter stands for: the operand of the unit
 * module's root (the fusion) at that position, an entry parameter or a
 * constant kept in the cut-out module (units.h). */
static hlo_value *fusion_operand(const hlo_module *um, hlo_value *const *args, int nargs, int64_t pos, char *why,
                                 size_t n) {
  const hlo_instr *root = um->entry->root;
  if (pos < 0 || pos >= root->noperands) {
    snprintf(why, n, "fusion parameter %lld has no operand", (long long)pos);
    return NULL;
  }
  const hlo_instr *op = root->operands[pos];
  if (op->op == HLO_OP_PARAMETER && op->parameter_number < nargs)
    return hlo_value_ref(args[op->parameter_number]);
  if (op->op == HLO_OP_CONSTANT) {
    char e[256] = "";
    hlo_value *v = hlo_value_from_literal(&op->shape, op->literal, e, sizeof e);
    if (!v)
      snprintf(why, n, "constant operand %s: %.200s", op->name, e);
    return v;
  }
  snprintf(why, n, "fusion operand %s is neither a parameter nor a constant", op->name);
  return NULL;
}

/* The fused run as the unfused run may take it over (takes_fused). */
typedef struct {
  hlo_value *out;         /* the fused output */
  const dev_fusion *f;    /* the unit module's analysis it ran */
  const dev_config *cfg;  /* the config it ran */
} iso_fused;

/* May the single-op kernel of ins (module om, analysed as f, default
 * dflt, parameter k bound to ins->operands[pos[k]]) take the fused output
 * fz instead of running?  Only when it provably is the fused run again:
 *  - the same kernel: um's fusion is a launch of its fused computation,
 *    om's entry is the kernel itself, and the two computations are equal
 *    as isolate_same.h says (so ins is the fused computation's one op and
 *    the unfused run has no other kernel);
 *  - the same config: om's default equals the fused run's config (a
 *    --config that differs from it does not);
 *  - the same analysis where the callers set it: replicas, rng seed (the
 *    host's rng draws are keyed by it and the instruction's name, equal
 *    here), the host;
 *  - the same operands: parameter k of om is the fused computation's
 *    parameter k (the comparison implies it; the loop below states the
 *    binding this rests on), whose value run_unfused took from the
 *    fusion's operand k (fusion_operand), the value the launch binds to
 *    it: the same entry argument, or a value of the same literal;
 *  - a run whose output cannot depend on what still differs: the timing
 *    seed, which isolate_unit allows only where it cannot matter
 *    (timing_may_matter), and what only the backend knows (fz is NULL
 *    unless the backend is the built-in device: isolate_unit).
 * Anything else, or any doubt, runs the kernel as before. */
static bool takes_fused(const iso_fused *fz, const hlo_module *um, const hlo_module *om, const dev_fusion *f,
                        const dev_config *dflt, const hlo_instr *ins, const int *pos, int np) {
  if (!fz || !fz->out)
    return false;
  const hlo_instr *launch = um->entry->root;
  if (fz->f->launch != launch || fz->f->comp != launch->attrs.calls.calls || f->launch || f->comp != om->entry)
    return false;
  if (!dev_config_equal(dflt, fz->cfg))
    return false;
  if (f->replicas != fz->f->replicas || f->rng_seed != fz->f->rng_seed || f->host != fz->f->host)
    return false;
  for (int k = 0; k < np; k++) {
    const hlo_instr *p = ins->operands[pos[k]];
    if (p->op != HLO_OP_PARAMETER || p->parameter_number != k)
      return false;
  }
  return tn_iso_same_kernel(um, om, NULL, 0);
}

/* One instruction of a fusion as its own kernel: cut it out like a unit
 * (units.h keeps constant operands inline), run it with its default
 * config on the values its operands took in this unfused run, or take
 * the fused output where that run would repeat the fused one
 * (takes_fused; *reused then counts it). */
static hlo_value *run_single_op(const iso_ctx *c, const hlo_module *um, const hlo_computation *fc,
                                const hlo_instr *ins, hlo_value **vals, uint64_t jitter, const iso_fused *fz,
                                int *reused, char *why, size_t n) {
  tn_unit t = {.name = ins->name, .ins = ins, .where = fc};
  hlo_error err = {0};
  hlo_module *om = tn_unit_module(um, &t, &err);
  if (!om) {
    snprintf(why, n, "%s cannot stand alone: %.400s", ins->name, err.msg);
    return NULL;
  }
  int *pos = calloc((size_t)ins->noperands + 1, sizeof *pos);
  hlo_value **args = calloc((size_t)ins->noperands + 1, sizeof *args);
  hlo_value *out = NULL;
  if (!pos || !args) {
    snprintf(why, n, "out of memory");
    goto done;
  }
  int np = tn_unit_param_operands(&t, pos);
  for (int k = 0; k < np; k++) {
    args[k] = vals[ins->operands[pos[k]]->index];
    if (!args[k]) {
      snprintf(why, n, "%s: operand %s has no value", ins->name, ins->operands[pos[k]]->name);
      goto done;
    }
  }
  dev_fusion f;
  dev_config dflt;
  char msg[448] = "";
  if (dev_fusion_analyze(om, &f, &err) != 0) {
    snprintf(why, n, "%s alone: %.400s", ins->name, err.msg);
    goto done;
  }
  f.rng_seed = c->o->seed;
  f.host = tn_backend_host();
  if (default_config(c, &f, &dflt, msg, sizeof msg) != 0) {
    snprintf(why, n, "%s alone: %s", ins->name, msg);
  } else if (takes_fused(fz, um, om, &f, &dflt, ins, pos, np)) {
    out = hlo_value_ref(fz->out);
    (*reused)++;
  } else if (!(out = run_kernel(c, &f, &dflt, args, np, jitter, msg, sizeof msg))) {
    snprintf(why, n, "%s alone: %s", ins->name, msg);
  }
done:
  free(pos);
  free(args);
  hlo_module_free(om);
  return out;
}

/* The unfused run of fusion unit um: every instruction of the fused
 * computation in order, parameters and constants as values, tuples and
 * get-tuple-elements as the host's bookkeeping (they move no data), every
 * other op a kernel, or the fused output where that kernel is the fused
 * run again (fz, NULL for none: takes_fused; *reused counts them, and
 * *nkernels counts them as kernels all the same).  The root's value, or
 * NULL with why. */
static hlo_value *run_unfused(const iso_ctx *c, const hlo_module *um, hlo_value *const *args, int nargs,
                              const iso_fused *fz, int *nkernels, int *reused, char *why, size_t n) {
  const hlo_computation *fc = um->entry->root->attrs.calls.calls;
  *nkernels = 0;
  *reused = 0;
  if (!fc) {
    snprintf(why, n, "the fusion calls no computation");
    return NULL;
  }
  hlo_value **vals = calloc((size_t)fc->ninstrs + 1, sizeof *vals);
  int *last = calloc((size_t)fc->ninstrs + 1, sizeof *last);
  if (!vals || !last) {
    free(vals);
    free(last);
    snprintf(why, n, "out of memory");
    return NULL;
  }
  /* Each value is dropped once its last reader has run (the root's is
   * kept): the intermediates of a long fusion then reuse the memory of
   * those before them instead of growing the heap by all of them. */
  for (int i = 0; i < fc->ninstrs; i++) {
    last[i] = fc->instrs[i] == fc->root ? fc->ninstrs : i;
    for (int k = 0; k < fc->instrs[i]->noperands; k++) {
      int j = fc->instrs[i]->operands[k]->index;
      if (j >= 0 && j < fc->ninstrs && last[j] < i)
        last[j] = i;
    }
  }
  hlo_value *out = NULL;
  bool failed = false;
  for (int i = 0; i < fc->ninstrs && !failed; i++) {
    const hlo_instr *ins = fc->instrs[i];
    hlo_value *v = NULL;
    switch (ins->op) {
    case HLO_OP_PARAMETER:
      v = fusion_operand(um, args, nargs, ins->parameter_number, why, n);
      break;
    case HLO_OP_CONSTANT: {
      char e[256] = "";
      if (!(v = hlo_value_from_literal(&ins->shape, ins->literal, e, sizeof e)))
        snprintf(why, n, "constant %s: %.200s", ins->name, e);
      break;
    }
    case HLO_OP_TUPLE: {
      hlo_value **el = calloc((size_t)ins->noperands + 1, sizeof *el);
      bool ok = el != NULL;
      for (int k = 0; ok && k < ins->noperands; k++)
        ok = (el[k] = vals[ins->operands[k]->index]) != NULL;
      if (ok) {
        for (int k = 0; k < ins->noperands; k++)
          hlo_value_ref(el[k]);
        v = hlo_value_tuple(ins->noperands, el);
      }
      if (!v)
        snprintf(why, n, "tuple %s: no value", ins->name);
      free(el);
      break;
    }
    case HLO_OP_GET_TUPLE_ELEMENT: {
      hlo_value *t = vals[ins->operands[0]->index];
      if (t && t->type == HLO_TUPLE && ins->attrs.index >= 0 && ins->attrs.index < t->ntuple)
        v = hlo_value_ref(t->elems[ins->attrs.index]);
      else
        snprintf(why, n, "get-tuple-element %s: no value", ins->name);
      break;
    }
    default:
      v = run_single_op(c, um, fc, ins, vals, hlo_mix64(c->o->seed, (uint64_t)i + 1), fz, reused, why, n);
      if (v)
        (*nkernels)++;
      break;
    }
    if (!v)
      failed = true;
    vals[i] = v;
    for (int k = 0; k < ins->noperands; k++) {
      int j = ins->operands[k]->index;
      if (j >= 0 && j < fc->ninstrs && last[j] == i) {
        hlo_value_unref(vals[j]);
        vals[j] = NULL;
      }
    }
  }
  if (!failed && fc->root)
    out = hlo_value_ref(vals[fc->root->index]);
  for (int i = 0; i < fc->ninstrs; i++)
    hlo_value_unref(vals[i]);
  free(vals);
  free(last);
  return out;
}

/* Compares a (actual) with b (expected) under checks; fills *cmp. */
static void compare(const hlo_value *a, const hlo_value *b, const chk_leaf_check *checks, int nchecks, tn_iso_cmp *cmp) {
  memset(cmp, 0, sizeof *cmp);
  if (!a || !b)
    return;
  hlo_error err = {0};
  int leaf = chk_compare_values(a, b, checks, nchecks, &cmp->m, &cmp->identical, &cmp->within, &err);
  if (leaf < 0)
    return;
  cmp->done = true;
  cmp->leaf = leaf;
}

static double rel_key(const tn_iso_cmp *c) {
  if (!c->done)
    return 0;
  if (c->m.nan_mismatches > 0 || c->m.inf_mismatches > 0)
    return INFINITY;
  return c->m.max_rel;
}

/* Attribution (isolate.h's table). */
static void classify(tn_iso_unit *r, bool fusion, bool have_unfused) {
  bool fr = r->fused_ref.within;
  bool ur = r->unfused_ref.within;
  if (!fusion) {
    r->cls = fr ? TN_ISO_OK : TN_ISO_LOWERING_BUG;
  } else if (!have_unfused) {
    r->cls = fr ? TN_ISO_OK : TN_ISO_FUSION_BUG;
  } else if (fr && ur) {
    r->cls = TN_ISO_OK;
  } else if (!fr && ur) {
    r->cls = TN_ISO_FUSION_BUG;
  } else if (!fr) {
    r->cls = r->fused_unfused.within ? TN_ISO_REFERENCE_DISAGREES : TN_ISO_LOWERING_BUG;
  } else {
    r->cls = TN_ISO_LOWERING_BUG;
  }
  double kf = rel_key(&r->fused_ref), ku = rel_key(&r->unfused_ref);
  r->max_rel = !fr ? kf : ku;
}

/* Which --config applies to unit name (the last one given wins). */
static const char *override_for(const tn_iso_opts *o, const char *name) {
  const char *cfg = NULL;
  for (int i = 0; i < o->noverrides; i++)
    if (strcmp(o->override_units[i], name) == 0)
      cfg = o->override_configs[i];
  return cfg;
}

/* Keeps culprit r's module and operands for a bundle of it alone; out of
 * memory keeps neither (the bundle is then refused, the isolation stands). */
static void keep_operands(tn_iso_unit *r, const hlo_module *um, const tn_capture *cap) {
  size_t len = 0;
  r->hlo = hlo_print_module(um, &len);
  r->inputs = calloc((size_t)cap->nargs + 1, sizeof *r->inputs);
  if (!r->hlo || !r->inputs) {
    free(r->hlo);
    free(r->inputs);
    r->hlo = NULL;
    r->inputs = NULL;
    return;
  }
  r->ninputs = cap->nargs;
  for (int k = 0; k < cap->nargs; k++)
    r->inputs[k] = hlo_value_ref(cap->args[k]);
}

/* Can a unit's fused output change with the run's timing seed?  Not on a
 * backend that declares it changes only through the dma-race defect
 * (DEV_BACKEND_CAP_TIMING_BY_RACE) when the compiler does not carry that
 * defect: a second seed's run could only repeat the first's bits, and is
 * not made.  A backend that promises nothing always gets the second run. */
static bool timing_may_matter(const tn_iso_opts *o) {
  return !(o->backend->caps & DEV_BACKEND_CAP_TIMING_BY_RACE) || dev_compiler_has(o->compiler, DEV_DEFECT_DMA_RACE);
}

/* The tolerance --check derives for unit um on cap's operands, its
 * default against the reference: checks[l].tol per output leaf, the
 * loosest into r->tol; with ref and dflt_out, one reference each to the
 * reference's output and the default's (NULL when it had none).  given:
 * the default's output where isolate_unit has it already, made where the
 * timing seed cannot change it (tn_sweep_opts.default_given), or NULL.
 * 0, or -1 with why. */
static int derive_tolerance(const iso_ctx *c, const hlo_module *um, const tn_unit *u, const tn_capture *cap,
                            chk_leaf_check *checks, int nleaves, tn_iso_unit *r, hlo_value *given,
                            hlo_value **ref, hlo_value **dflt_out, char *why, size_t n) {
  const tn_iso_opts *o = c->o;
  tn_fusion_result fr;
  memset(&fr, 0, sizeof fr);
  tn_sweep_opts so = {.backend = o->backend, .machine = o->machine, .compiler = o->compiler, .seed = o->seed,
                      .profile = o->profile, .threads = 1, .budget = 1, .default_only = true, .error_maps = 0,
                      .replicas = o->replicas, .unit_name = u->name, .args = cap->args, .nargs = cap->nargs,
                      .max_memory = o->max_memory, .time_budget = o->time_budget, .default_out = dflt_out,
                      .default_given = given, .reference_out = ref, .traced = cap};
  hlo_error serr = {0};
  if (tn_check_fusion(um, c->source, &so, &fr, &serr) != 0) {
    snprintf(why, n, "%.500s", serr.msg);
    tn_fusion_result_free(&fr);
    return -1;
  }
  r->tol = (chk_tol){0, 0};
  r->tol_skipped = false;
  for (int l = 0; l < nleaves; l++) {
    checks[l].tol = l < fr.noutputs ? fr.output_tol[l] : (chk_tol){0, 0};
    if (checks[l].tol.atol > r->tol.atol)
      r->tol.atol = checks[l].tol.atol;
    if (checks[l].tol.rtol > r->tol.rtol)
      r->tol.rtol = checks[l].tol.rtol;
  }
  tn_fusion_result_free(&fr);
  return 0;
}

/* The output leaves' rules of unit um's fused computation (analysed as
 * f), tolerances zero until derived; their count, or -1 when there are
 * more than isolation compares (256). */
static int leaf_checks(const hlo_module *um, const dev_fusion *f, chk_leaf_check *checks) {
  int nleaves = hlo_shape_leaf_count(&um->entry->root->shape);
  if (nleaves > 256)
    return -1;
  memset(checks, 0, sizeof *checks * 256);
  for (int l = 0; l < nleaves; l++) {
    checks[l].rule = chk_leaf_rule(f->comp, l);
    checks[l].checked = true;
  }
  return nleaves;
}

/* Isolates one unit.  0, or -1 with err for bad input (a bad --config);
 * every other failure makes the unit NOT_ISOLATED with the reason.  With
 * r->tol_skipped (its tolerance not derived), cap must stay for
 * derive_skipped. */
static int isolate_unit(const iso_ctx *c, const hlo_module *m, const tn_unit *u, const tn_capture *cap,
                        tn_iso_unit *r, hlo_error *err) {
  const tn_iso_opts *o = c->o;
  r->cls = TN_ISO_NOT_ISOLATED;
  if (!u->ins) {
    snprintf(r->note, sizeof r->note, "the file is one kernel, not a module of fusions: use tune --check");
    return 0;
  }
  if (!cap->args) {
    snprintf(r->note, sizeof r->note, "no operands from the reference's evaluation of the module: %.400s", cap->note);
    return 0;
  }
  hlo_error uerr = {0};
  hlo_module *um = tn_unit_module(m, u, &uerr);
  if (!um) {
    snprintf(r->note, sizeof r->note, "%.500s", uerr.msg);
    return 0;
  }
  int rc = 0;
  hlo_value *ref = NULL, *fused = NULL, *fused2 = NULL, *unfused = NULL, *dflt_out = NULL;
  hlo_value *outs[64] = {0};
  dev_fusion f;
  dev_config cfg;
  char why[448] = "";
  chk_leaf_check checks[256];
  if (dev_fusion_analyze(um, &f, &uerr) != 0) {
    snprintf(r->note, sizeof r->note, "%.500s", uerr.msg);
    goto done;
  }
  f.rng_seed = o->seed;
  f.host = tn_backend_host();
  if (default_config(c, &f, &cfg, why, sizeof why) != 0) {
    snprintf(r->note, sizeof r->note, "%s", why);
    goto done;
  }
  const char *ov = override_for(o, u->name);
  if (ov) {
    char dtext[DEV_CONFIG_TEXT_MAX], full[DEV_CONFIG_TEXT_MAX];
    dev_config_print(&cfg, dtext, sizeof dtext);
    hlo_error cerr = {0};
    if (tn_only_complete(ov, dtext, full, sizeof full, &cerr) != 0 || dev_config_parse(full, &cfg, &cerr) != 0) {
      hlo_error_set(err, 0, 0, "--config %s='%.200s': %.300s", u->name, ov, cerr.msg);
      rc = -1;
      goto done;
    }
    r->overridden = true;
  }
  dev_config_print(&cfg, r->config, sizeof r->config);
  int nleaves = leaf_checks(um, &f, checks);
  if (nleaves < 0) {
    snprintf(r->note, sizeof r->note, "%d output leaves: more than isolation compares",
             hlo_shape_leaf_count(&um->entry->root->shape));
    goto done;
  }

  int replicas = o->replicas > 0 ? o->replicas : tn_replicas_needed(um);
  /* the replicas of --check's default run (fusion_run.c) and of f */
  bool same_replicas = replicas == f.replicas;
  if (replicas < 1)
    replicas = 1;
  if (replicas > 64) {
    snprintf(r->note, sizeof r->note, "%d replicas: more than isolation simulates", replicas);
    goto done;
  }
  /* The reference's value of the unit from the capture's trace, which
   * --check takes as its reference too (fusion_run.c's
   * reference_from_trace): the tolerance may then wait until a comparison
   * is not bit for bit equal.  Only where the timing seed cannot change a
   * run (timing_may_matter): --check's default runs with a timing of its
   * own, so its output is then this unit's fused output again. */
  bool lazy = !o->all_tolerances && !timing_may_matter(o) && cap->out && replicas == 1 &&
              hlo_value_matches(cap->out, &um->entry->root->shape);
  if (lazy) {
    ref = hlo_value_ref(cap->out);
  } else if (derive_tolerance(c, um, u, cap, checks, nleaves, r, NULL, &ref, ov ? NULL : &dflt_out, r->note,
                              sizeof r->note) != 0) {
    goto done;
  }
  chk_eval_opts eo = {.replicas = replicas, .emulate_device = 1, .rng_seed = o->seed,
                      .time_budget = o->time_budget > 0 ? o->time_budget : TN_CAPTURE_TIME_BUDGET};
  /* --check evaluated the reference on these operands with these options
   * (its deadline aside): its output is taken as it is */
  if (!ref) {
    hlo_error serr = {0};
    if (chk_eval_module(um, cap->nargs, cap->args, &eo, outs, &serr) != 0) {
      snprintf(r->note, sizeof r->note, "reference: %.480s", serr.msg);
      goto done;
    }
    ref = outs[0];
    for (int k = 1; k < replicas; k++)
      hlo_value_unref(outs[k]);
  }

  /* Two timing seeds: a race (dma-race) may show under either. */
  uint64_t jitter = tn_iso_jitter(o->seed, &cfg), shown = jitter;
  /* Without --config the fused run is --check's default run: same
   * kernel, operands and timing seed, so its output is taken as it is. */
  fused = dflt_out ? hlo_value_ref(dflt_out)
                   : run_kernel(c, &f, &cfg, cap->args, cap->nargs, jitter, why, sizeof why);
  if (!fused) {
    snprintf(r->note, sizeof r->note, "fused: %s", why);
    goto done;
  }
  if (timing_may_matter(o))
    fused2 = run_kernel(c, &f, &cfg, cap->args, cap->nargs, hlo_mix64(jitter, 0x5EED), why, sizeof why);
  if (fused2 && !hlo_value_equal(fused, fused2))
    r->nondeterministic = true;

  bool fusion = u->ins->op == HLO_OP_FUSION;
  char uwhy[448] = "";
  /* The unfused run may take the fused output for a kernel that is the
   * fused run again (takes_fused), where nothing outside what it compares
   * can tell the runs apart: the built-in device, whose kernel reads the
   * fusion's module only as takes_fused compares it (another backend
   * might read names or the fusion's attributes); a timing seed that
   * cannot change the output (the unfused kernel runs with a seed of its
   * own); and a fused output made with f's replicas, whichever run made
   * it. */
  iso_fused fz = {.out = fused, .f = &f, .cfg = &cfg};
  bool may_take = o->backend == dev_sim_backend() && !timing_may_matter(o) && same_replicas;
  if (fusion)
    unfused = run_unfused(c, um, cap->args, cap->nargs, may_take ? &fz : NULL, &r->nkernels, &r->nreused, uwhy,
                          sizeof uwhy);

  if (lazy) {
    /* Every output the unit's verdict reads bit for bit the reference's
     * (one timing seed ran: it cannot matter here): each comparison is
     * within under any tolerance (zero ones below), and none is derived.
     * Anything else derives it now. */
    if (hlo_value_equal(fused, ref) && (!unfused || hlo_value_equal(unfused, ref))) {
      r->tol = (chk_tol){NAN, NAN};
      r->tol_skipped = true;
    } else if (derive_tolerance(c, um, u, cap, checks, nleaves, r, ov ? NULL : fused, NULL, NULL, r->note,
                                sizeof r->note) != 0) {
      goto done;
    }
  }
  compare(fused, ref, checks, nleaves, &r->fused_ref);
  if (r->nondeterministic && r->fused_ref.done && r->fused_ref.within) {
    /* the other timing seed's output is the one that shows the race */
    tn_iso_cmp again;
    compare(fused2, ref, checks, nleaves, &again);
    if (again.done && !again.within) {
      hlo_value_unref(fused);
      fused = hlo_value_ref(fused2);
      r->fused_ref = again;
      shown = hlo_mix64(jitter, 0x5EED);
    }
  }
  if (!r->fused_ref.done) {
    snprintf(r->note, sizeof r->note, "the fused output cannot be compared with the reference");
    goto done;
  }
  /* A comparison is a function of its two values and the checks alone:
   * an unfused output bit for bit the reference compares with the fused
   * one as the reference did, and one bit for bit the fused output
   * compares with the reference as the fused one did. */
  if (unfused && hlo_value_equal(unfused, ref))
    r->fused_unfused = r->fused_ref;
  else
    compare(fused, unfused, checks, nleaves, &r->fused_unfused);
  if (unfused && hlo_value_equal(fused, unfused))
    r->unfused_ref = r->fused_ref;
  else
    compare(unfused, ref, checks, nleaves, &r->unfused_ref);
  classify(r, fusion, unfused != NULL && r->unfused_ref.done);
  if (tn_iso_class_is_culprit(r->cls)) {
    tn_iso_micro_opts mo = {.backend = o->backend, .machine = o->machine, .compiler = o->compiler,
                            .jitter = shown, .seed = o->seed, .replicas = replicas,
                            .time_budget = eo.time_budget, .tol = r->tol};
    tn_iso_inspect(um, &f, &cfg, cap->args, cap->nargs, &mo, &r->micro);
    keep_operands(r, um, cap);
  }
  if (fusion && !unfused)
    snprintf(r->note, sizeof r->note, "no unfused run: %s", uwhy);
  else if (r->nondeterministic)
    snprintf(r->note, sizeof r->note, "nondeterministic: two timing seeds gave different fused outputs");

done:
  if (r->cls == TN_ISO_NOT_ISOLATED && r->tol_skipped) { /* compared nothing after all */
    r->tol_skipped = false;
    r->tol = (chk_tol){0, 0};
  }
  hlo_value_unref(ref);
  hlo_value_unref(fused);
  hlo_value_unref(fused2);
  hlo_value_unref(unfused);
  hlo_value_unref(dflt_out);
  hlo_module_free(um);
  return rc;
}

/* Derives the tolerance of unit r, whose isolation skipped it
 * (tol_skipped), on cap as isolate_unit would have: every comparison was
 * bit for bit identical, so only r->tol changes.  Its fused run, when it
 * had the default config, gave the reference's bits, cap->out: the
 * default's output, given instead of run again.  A failure leaves it
 * skipped, with the reason in the note. */
static void derive_skipped(const iso_ctx *c, const hlo_module *m, const tn_unit *u, const tn_capture *cap,
                           tn_iso_unit *r) {
  hlo_error uerr = {0};
  hlo_module *um = tn_unit_module(m, u, &uerr);
  dev_fusion f;
  chk_leaf_check checks[256];
  char why[512] = "";
  int nleaves;
  if (!um)
    snprintf(why, sizeof why, "%.500s", uerr.msg);
  else if (dev_fusion_analyze(um, &f, &uerr) != 0)
    snprintf(why, sizeof why, "%.500s", uerr.msg);
  else if ((nleaves = leaf_checks(um, &f, checks)) >= 0)
    derive_tolerance(c, um, u, cap, checks, nleaves, r, r->overridden ? NULL : cap->out, NULL, NULL, why,
                     sizeof why);
  if (r->tol_skipped && why[0])
    snprintf(r->note, sizeof r->note, "tolerance not derived: %.480s", why);
  hlo_module_free(um);
}

/* Is unit a worse than unit b: larger max relative error, ties in
 * program order? */
static bool worse(const tn_iso_unit *a, const tn_iso_unit *b) {
  if (a->max_rel != b->max_rel)
    return a->max_rel > b->max_rel;
  return a->index < b->index;
}

/* Insertion sort of the culprits, worst first: a module has few. */
static void rank_culprits(tn_iso_result *r) {
  for (int i = 1; i < r->nculprits; i++) {
    int k = r->ranked[i], j = i;
    for (; j > 0 && worse(&r->v[k], &r->v[r->ranked[j - 1]]); j--)
      r->ranked[j] = r->ranked[j - 1];
    r->ranked[j] = k;
  }
}

int tn_isolate(const hlo_module *m, const char *source, const tn_iso_opts *o, tn_iso_result *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  tn_units units;
  if (tn_units_find(m, &units, err) != 0)
    return -1;
  if (units.n == 0) {
    tn_units_free(&units);
    return hlo_error_set(err, 0, 0, "no fusion or heavy op to isolate");
  }
  for (int i = 0; i < o->noverrides; i++) {
    bool found = false;
    for (int k = 0; k < units.n && !found; k++)
      found = strcmp(units.v[k].name, o->override_units[i]) == 0;
    if (!found) {
      tn_units_free(&units);
      return hlo_error_set(err, 0, 0, "--config %s: no such unit (tune --list-fusions lists them)",
                           o->override_units[i]);
    }
  }
  tn_capture *caps = calloc((size_t)units.n, sizeof *caps);
  out->v = calloc((size_t)units.n, sizeof *out->v);
  out->ranked = calloc((size_t)units.n, sizeof *out->ranked);
  if (!caps || !out->v || !out->ranked) {
    free(caps);
    tn_units_free(&units);
    tn_iso_result_free(out);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  out->n = units.n;
  tn_capture_opts co = {.seed = o->seed, .profile = o->profile, .iteration = 1, .max_flops = TN_CAPTURE_MAX_FLOPS,
                        .max_memory = o->max_memory, .replicas = o->replicas, .time_budget = o->time_budget,
                        .entry_args = o->entry_args, .trace = true,
                        /* a unit may need no tolerance (isolate.h): the
                         * probe walks a dot only for a unit that does */
                        .plain_dots = !o->all_tolerances};
  tn_capture_units(m, &units, &co, caps);
  iso_ctx c = {.o = o, .source = source};
  int rc = 0;
  for (int i = 0; i < units.n && rc == 0; i++) {
    tn_iso_unit *r = &out->v[i];
    snprintf(r->name, sizeof r->name, "%s", units.v[i].name);
    r->index = i;
    r->micro.first = -1;
    rc = isolate_unit(&c, m, &units.v[i], &caps[i], r, err);
    /* Nothing reads a unit's capture after its isolation (a culprit keeps
     * references of its own to the operands), unless its tolerance was
     * skipped and the program run below may need it: its trace and
     * operands go back to the heap for the units after it, and leave the
     * bytes the memory account holds, which their estimates count
     * (fusion_run.c).  tn_capture_free leaves the entry empty for the
     * call below. */
    if (!r->tol_skipped)
      tn_capture_free(&caps[i], 1);
    if (tn_iso_class_is_culprit(r->cls))
      out->ranked[out->nculprits++] = i;
  }
  /* Every unit right on its own inputs: is the program's output right? */
  int isolated = 0;
  for (int i = 0; i < out->n; i++)
    isolated += out->v[i].cls == TN_ISO_OK;
  out->program.amplifier = out->program.origin = -1;
  if (rc == 0 && out->nculprits == 0 && isolated > 0) {
    /* A program run that is not the reference's again compares under the
     * units' tolerances: the skipped ones are derived first. */
    if (!tn_iso_chain_is_reference(m, &units, o, out))
      for (int i = 0; i < out->n; i++)
        if (out->v[i].tol_skipped) {
          derive_skipped(&c, m, &units.v[i], &caps[i], &out->v[i]);
          tn_capture_free(&caps[i], 1);
        }
    tn_iso_chain_run(m, &units, o, out);
    tn_iso_program *p = &out->program;
    int blamed = p->amplifier >= 0 ? p->amplifier : p->origin;
    if (p->done && p->differs && blamed >= 0) {
      tn_iso_unit *b = &out->v[blamed];
      b->cls = TN_ISO_PROPAGATED;
      b->max_rel = b->chain_out_rel;
      out->ranked[out->nculprits++] = blamed;
    }
  }
  rank_culprits(out);
  tn_capture_free(caps, units.n);
  free(caps);
  tn_units_free(&units);
  if (rc != 0)
    tn_iso_result_free(out);
  return rc;
}

void tn_iso_result_free(tn_iso_result *r) {
  for (int i = 0; r->v && i < r->n; i++) {
    tn_iso_unit *u = &r->v[i];
    tn_iso_micro_free(&u->micro);
    for (int k = 0; k < u->ninputs; k++)
      hlo_value_unref(u->inputs[k]);
    free(u->inputs);
    free(u->hlo);
  }
  free(r->v);
  free(r->ranked);
  memset(r, 0, sizeof *r);
}
