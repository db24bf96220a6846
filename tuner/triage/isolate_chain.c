/* isolate_chain.c — the device's program against the reference's, for the
 * `propagated` class (isolate_chain.h says what and why). */
#include "isolate_chain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/backend_host.h"
#include "device/dev_fusion.h"
#include "check/eval.h"
#include "run/fusion_run.h"

/* One unit ready to run on the device. */
typedef struct {
  hlo_module *um;
  dev_fusion f;
  dev_config cfg;
  bool ready;
  int nargs;
  hlo_value **ref_in;  /* the reference run's operands (first execution) */
  hlo_value *ref_out;
  double in_rel, out_rel;
  bool ran;
} chain_unit;

typedef struct {
  const tn_units *u;
  chain_unit *cu;
  const tn_iso_opts *o;
  int *pos;
  bool device;         /* the chained run (else the reference run) */
  char why[256];       /* the first kernel failure */
} chain_ctx;

/* Largest relative error of a against b over every leaf (inf for a NaN or
 * Inf on one side; integers compared bitwise count as relative error 1
 * when they differ). */
static double max_rel(const hlo_value *a, const hlo_value *b) {
  if (!a || !b)
    return NAN;
  if (a->type == HLO_TUPLE || b->type == HLO_TUPLE) {
    if (a->type != b->type || a->ntuple != b->ntuple)
      return INFINITY;
    double w = 0;
    for (int k = 0; k < a->ntuple; k++) {
      double x = max_rel(a->elems[k], b->elems[k]);
      if (x > w)
        w = x;
    }
    return w;
  }
  chk_metrics m;
  hlo_error err = {0};
  bool fl = hlo_etype_class(a->type) == HLO_CLASS_FLOAT;
  chk_tol zero = {0, 0};
  if (chk_compare(a, b, fl ? CHK_RULE_TOLERANCE : CHK_RULE_BITWISE, zero, &m, &err) != 0)
    return INFINITY;
  if (m.nan_mismatches || m.inf_mismatches)
    return INFINITY;
  if (!fl)
    return m.mismatches ? 1 : 0;
  return m.max_rel;
}

/* Compares the program outputs a (device) and b (reference) leaf by leaf
 * under tol, accumulating into c. */
static void compare_program(const hlo_value *a, const hlo_value *b, tn_iso_program *c) {
  if (a->type == HLO_TUPLE) {
    for (int k = 0; k < a->ntuple && k < b->ntuple; k++)
      compare_program(a->elems[k], b->elems[k], c);
    return;
  }
  chk_metrics m;
  hlo_error err = {0};
  chk_rule rule = hlo_etype_class(a->type) == HLO_CLASS_FLOAT ? CHK_RULE_TOLERANCE : CHK_RULE_BITWISE;
  if (chk_compare(a, b, rule, c->tol, &m, &err) != 0) {
    c->differs = true;
    return;
  }
  c->count += m.count;
  c->mismatches += m.mismatches;
  if (m.mismatches)
    c->differs = true;
  double r = m.nan_mismatches || m.inf_mismatches ? INFINITY : m.max_rel;
  if (r > c->max_rel)
    c->max_rel = r;
  if (m.max_abs > c->max_abs)
    c->max_abs = m.max_abs;
}

static void hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  chain_ctx *c = ctx;
  int i = 0;
  while (i < c->u->n && c->u->v[i].ins != ins)
    i++;
  if (i == c->u->n || !c->cu[i].ready)
    return;
  chain_unit *cu = &c->cu[i];
  int np = tn_unit_param_operands(&c->u->v[i], c->pos);
  if (np != cu->nargs)
    return;
  hlo_value *args[64];
  for (int k = 0; k < np && k < 64; k++)
    args[k] = c->pos[k] < n ? ops[c->pos[k]] : NULL;
  if (!c->device) {
    if (cu->ref_out)
      return;
    cu->ref_out = hlo_value_ref(*value);
    for (int k = 0; k < np; k++)
      cu->ref_in[k] = args[k] ? hlo_value_ref(args[k]) : NULL;
    return;
  }
  dev_kernel *k = NULL;
  char why[256] = "";
  if (c->o->backend->compile(&cu->f, &cu->cfg, c->o->machine, c->o->compiler, &k, why, sizeof why) != DEV_OK) {
    if (!c->why[0])
      snprintf(c->why, sizeof c->why, "%s: %.200s", c->u->v[i].name, why);
    return;
  }
  dev_run run;
  memset(&run, 0, sizeof run);
  c->o->backend->run(k, args, np, tn_iso_jitter(c->o->seed, &cu->cfg), &run);
  c->o->backend->release(k);
  if (run.status != DEV_OK || !run.out) {
    if (!c->why[0])
      snprintf(c->why, sizeof c->why, "%s: %.200s", c->u->v[i].name, run.message);
    hlo_value_unref(run.out);
    return;
  }
  if (!cu->ran) {
    cu->ran = true;
    cu->in_rel = 0;
    for (int j = 0; j < np; j++) {
      double r = max_rel(args[j], cu->ref_in[j]);
      if (isnan(r) || r > cu->in_rel)
        cu->in_rel = isnan(r) ? INFINITY : r;
    }
    cu->out_rel = max_rel(run.out, cu->ref_out);
  }
  hlo_value_unref(*value);
  *value = run.out;
}

/* Does evaluating m draw on the run's seed (random numbers, infeed)?  The
 * capture's evaluation uses seed 0, the chained runs --seed. */
static bool draws_on_seed(const hlo_module *m) {
  for (int c = 0; c < m->ncomps; c++)
    for (int i = 0; i < m->comps[c]->ninstrs; i++) {
      hlo_opcode op = m->comps[c]->instrs[i]->op;
      if (op == HLO_OP_RNG || op == HLO_OP_RNG_BIT_GENERATOR || op == HLO_OP_RNG_GET_AND_UPDATE_STATE ||
          op == HLO_OP_INFEED)
        return true;
    }
  return false;
}

/* Elements of every leaf of s, or -1 when a leaf has a dynamic dimension
 * (its value may hold fewer). */
static int64_t leaf_elements(const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    int64_t n = 0;
    for (int k = 0; k < s->ntuple; k++) {
      int64_t e = leaf_elements(&s->elems[k]);
      if (e < 0)
        return -1;
      n += e;
    }
    return n;
  }
  return s->dynamic ? -1 : hlo_shape_elements(s);
}

/* Is the device's program the reference's, value for value, without
 * running it?  It is when every unit it would run sits in the entry (runs
 * once), on one replica, with the capture's entry arguments, and its fused
 * kernel gave bitwise the reference's output on the reference's operands
 * under two timing seeds: by induction over program order each unit then
 * receives exactly those operands again, runs with the same config and
 * timing seed, and returns the same bits.  Both whole-module evaluations
 * are skipped, the costliest part of isolating a clean module (issue 16:
 * isolation costs about 3 reference evaluations). */
static bool chain_is_reference(const hlo_module *m, const tn_units *u, const tn_iso_opts *o, const tn_iso_result *r,
                               int replicas) {
  if (replicas != 1 || (o->seed != 0 && draws_on_seed(m)) || leaf_elements(&m->entry->root->shape) < 0)
    return false;
  for (int i = 0; i < u->n; i++) {
    if (!u->v[i].ins || r->v[i].cls == TN_ISO_NOT_ISOLATED || u->v[i].ins->noperands > 64)
      continue;
    const tn_iso_unit *x = &r->v[i];
    if (u->v[i].where != m->entry || x->nondeterministic || !x->fused_ref.done || !x->fused_ref.identical)
      return false;
  }
  return true;
}

/* The replicas the program runs with: --replicas, else what m needs. */
static int program_replicas(const hlo_module *m, const tn_iso_opts *o) {
  int replicas = o->replicas > 0 ? o->replicas : tn_replicas_needed(m);
  return replicas < 1 ? 1 : replicas;
}

bool tn_iso_chain_is_reference(const hlo_module *m, const tn_units *u, const tn_iso_opts *o, const tn_iso_result *r) {
  return chain_is_reference(m, u, o, r, program_replicas(m, o));
}

void tn_iso_chain_run(const hlo_module *m, const tn_units *u, const tn_iso_opts *o, tn_iso_result *r) {
  tn_iso_program *out = &r->program;
  memset(out, 0, sizeof *out);
  out->amplifier = out->origin = -1;
  int skipped = -1; /* a unit whose tolerance was not derived */
  for (int i = 0; i < r->n; i++) {
    if (r->v[i].tol_skipped) {
      skipped = i;
      continue;
    }
    if (r->v[i].tol.atol > out->tol.atol)
      out->tol.atol = r->v[i].tol.atol;
    if (r->v[i].tol.rtol > out->tol.rtol)
      out->tol.rtol = r->v[i].tol.rtol;
  }
  int nargs = m->entry->nparams;
  chain_unit *cu = calloc((size_t)u->n + 1, sizeof *cu);
  hlo_value **args = calloc((size_t)nargs + 1, sizeof *args);
  int *pos = calloc(65, sizeof *pos);
  hlo_value *ref[64] = {0}, *dev[64] = {0};
  int replicas = program_replicas(m, o);
  if (!cu || !args || !pos) {
    snprintf(out->note, sizeof out->note, "out of memory");
    goto done;
  }
  if (replicas > 64) {
    snprintf(out->note, sizeof out->note, "%d replicas: more than isolation simulates", replicas);
    goto done;
  }
  if (chain_is_reference(m, u, o, r, replicas)) {
    /* bit for bit the reference's: no tolerance is read */
    if (skipped >= 0) {
      out->tol = (chk_tol){NAN, NAN};
      out->tol_skipped = true;
    }
    out->done = true;
    out->count = leaf_elements(&m->entry->root->shape);
    for (int i = 0; i < u->n; i++) {
      bool ran = u->v[i].ins && r->v[i].cls != TN_ISO_NOT_ISOLATED && u->v[i].ins->noperands <= 64;
      r->v[i].chain_in_rel = r->v[i].chain_out_rel = ran ? 0 : NAN;
    }
    goto done;
  }
  if (skipped >= 0) {
    /* tn_isolate derives them before a program run like this one: one it
     * could not derive leaves the program's tolerance unknown */
    snprintf(out->note, sizeof out->note, "the tolerance of %.150s could not be derived", r->v[skipped].name);
    for (int i = 0; i < u->n; i++)
      r->v[i].chain_in_rel = r->v[i].chain_out_rel = NAN;
    goto done;
  }
  for (int i = 0; i < u->n; i++) {
    r->v[i].chain_in_rel = r->v[i].chain_out_rel = NAN;
    /* only units macro isolation could run, each with its config */
    if (!u->v[i].ins || r->v[i].cls == TN_ISO_NOT_ISOLATED || u->v[i].ins->noperands > 64)
      continue;
    hlo_error err = {0};
    if (!(cu[i].um = tn_unit_module(m, &u->v[i], &err)) || dev_fusion_analyze(cu[i].um, &cu[i].f, &err) != 0 ||
        dev_config_parse(r->v[i].config, &cu[i].cfg, &err) != 0)
      continue;
    cu[i].f.rng_seed = o->seed;
    cu[i].f.host = tn_backend_host();
    cu[i].nargs = cu[i].um->entry->nparams;
    if (!(cu[i].ref_in = calloc((size_t)cu[i].nargs + 1, sizeof *cu[i].ref_in)))
      continue;
    cu[i].ready = true;
  }
  hlo_error err = {0};
  chk_inputs_opts io = {.seed = o->seed, .profile = o->profile};
  if (o->entry_args)
    for (int k = 0; k < nargs; k++)
      args[k] = hlo_value_ref(o->entry_args[k]);
  else if (chk_inputs_make(m, &io, args, &err) != 0) {
    snprintf(out->note, sizeof out->note, "the module's arguments cannot be synthesised: %.200s", err.msg);
    goto done;
  }
  chain_ctx c = {.u = u, .cu = cu, .o = o, .pos = pos};
  chk_eval_opts eo = {.replicas = replicas, .emulate_device = 1, .rng_seed = o->seed, .hook = hook, .hook_ctx = &c,
                      .time_budget = o->time_budget > 0 ? o->time_budget : TN_CAPTURE_TIME_BUDGET};
  if (chk_eval_module(m, nargs, args, &eo, ref, &err) != 0) {
    snprintf(out->note, sizeof out->note, "reference: %.200s", err.msg);
    goto done;
  }
  c.device = true;
  if (chk_eval_module(m, nargs, args, &eo, dev, &err) != 0) {
    snprintf(out->note, sizeof out->note, "the device's program: %.200s", err.msg);
    goto done;
  }
  if (c.why[0]) {
    snprintf(out->note, sizeof out->note, "a unit failed on the device: %.200s", c.why);
    goto done;
  }
  out->done = true;
  compare_program(dev[0], ref[0], out);
  for (int i = 0; i < u->n; i++) {
    if (!cu[i].ran)
      continue;
    r->v[i].chain_in_rel = cu[i].in_rel;
    r->v[i].chain_out_rel = cu[i].out_rel;
    if (out->origin < 0 && cu[i].in_rel == 0 && cu[i].out_rel > 0)
      out->origin = i;
    if (cu[i].in_rel > 0 && cu[i].out_rel > cu[i].in_rel) {
      double g = cu[i].out_rel / cu[i].in_rel;
      if (out->amplifier < 0 || g > out->gain) {
        out->amplifier = i;
        out->gain = g;
      }
    }
  }

done:
  for (int i = 0; cu && i < u->n; i++) {
    for (int k = 0; cu[i].ref_in && k < cu[i].nargs; k++)
      hlo_value_unref(cu[i].ref_in[k]);
    free(cu[i].ref_in);
    hlo_value_unref(cu[i].ref_out);
    hlo_module_free(cu[i].um);
  }
  for (int k = 0; k < 64; k++) {
    hlo_value_unref(ref[k]);
    hlo_value_unref(dev[k]);
  }
  for (int k = 0; args && k < nargs; k++)
    hlo_value_unref(args[k]);
  free(args);
  free(pos);
  free(cu);
}
