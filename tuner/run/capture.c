/* capture.c — one reference evaluation of a whole module, recording each
 * unit's operands at its Nth execution (capture.h). */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_fusion.h"
#include "check/accum.h"
#include "check/eval.h"
#include "hlo/hlo_mem.h"
#include "fusion_run.h"

typedef struct {
  const tn_units *u;
  tn_capture *caps;
  int *calls;            /* hook calls per unit so far */
  int replicas;
  int iteration;
  int *pos;              /* scratch: parameter -> operand position */
  int failed;
  bool trace;            /* some unit has a kernel to trace */
  /* The walk of the dot provide() just evaluated, for its trace call. */
  const hlo_instr *walked;
  chk_dot_walk walk;
} hook_state;

static void drop_trace(tn_capture *c) {
  for (int k = 0; k < c->ncalls; k++) {
    for (int j = 0; j < c->calls[k].nops; j++)
      hlo_value_unref(c->calls[k].ops[j]);
    free(c->calls[k].ops);
    hlo_value_unref(c->calls[k].value);
    chk_dot_walk_free(&c->calls[k].walk);
  }
  free(c->calls);
  c->calls = NULL;
  c->ncalls = c->calls_cap = 0;
  hlo_value_unref(c->out);
  c->out = NULL;
  free(c->reads);
  c->reads = NULL;
}

/* Records a call of the hook on instruction ins of c's kernel during the
 * captured execution (the unit's hook has run call - 1 times before it).
 * The evaluator shows a computation's instructions in increasing order;
 * anything else (the kernel evaluated twice before the unit's own call)
 * gives up the trace rather than guess which evaluation is the unit's. */
static void trace_call(tn_capture *c, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value *value,
                       chk_dot_walk *walk) {
  if (c->trace_failed || c->out)
    return;
  if (c->ncalls > 0 && c->calls[c->ncalls - 1].index >= ins->index) {
    c->trace_failed = true;
    return;
  }
  if (c->ncalls == c->calls_cap) {
    int cap = c->calls_cap ? 2 * c->calls_cap : 16;
    tn_trace_call *v = realloc(c->calls, sizeof *v * (size_t)cap);
    if (!v) {
      c->trace_failed = true;
      return;
    }
    c->calls = v;
    c->calls_cap = cap;
  }
  tn_trace_call *t = &c->calls[c->ncalls];
  /* Held values cost the evaluation fresh memory: only what the probe reads. */
  unsigned char reads = c->reads[ins->index];
  if (reads != CHK_PROBE_READS_ALL)
    n = 0;
  t->ops = n > 0 ? calloc((size_t)n, sizeof *t->ops) : NULL;
  if (n > 0 && !t->ops) {
    c->trace_failed = true;
    return;
  }
  t->index = ins->index;
  t->nops = n;
  for (int k = 0; k < n; k++)
    t->ops[k] = ops[k] ? hlo_value_ref(ops[k]) : NULL;
  t->value = value && reads ? hlo_value_ref(value) : NULL;
  t->walk = *walk; /* handed over */
  memset(walk, 0, sizeof *walk);
  c->ncalls++;
}

/* The unit whose traced kernel ins belongs to, or -1. */
static int traced_unit(const hook_state *h, const hlo_instr *ins) {
  for (int i = 0; i < h->u->n; i++) {
    const hlo_computation *k = h->caps[i].kernel;
    if (k && ins->index >= 0 && ins->index < k->ninstrs && k->instrs[ins->index] == ins)
      return i;
  }
  return -1;
}

/* chk_eval_provider: a dot of a traced kernel, in the execution the trace
 * records, whose operands and value the probe reads, is evaluated by the
 * probe's walk (chk_accums_dot_eval): the walk it would make of the traced
 * call in tn_check_fusion comes with the value, and the evaluator's own
 * pass over the same products is saved. */
static int provide(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  hook_state *h = ctx; /* installed only when h->trace */
  if (ins->op != HLO_OP_DOT)
    return 0;
  int i = traced_unit(h, ins);
  if (i < 0)
    return 0;
  tn_capture *c = &h->caps[i];
  if (c->trace_failed || c->out || h->calls[i] != h->iteration - 1 || c->reads[ins->index] != CHK_PROBE_READS_ALL)
    return 0;
  chk_dot_walk_free(&h->walk);
  int rc = chk_accums_dot_eval(ins, ops, n, value, &h->walk);
  h->walked = rc > 0 ? ins : NULL;
  return rc;
}

static void hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  hook_state *h = ctx;
  if (h->trace) {
    int i = traced_unit(h, ins);
    chk_dot_walk none = {0}, *walk = h->walked == ins ? &h->walk : &none;
    if (i >= 0 && h->calls[i] == h->iteration - 1)
      trace_call(&h->caps[i], ins, ops, n, *value, walk);
    h->walked = NULL;
    chk_dot_walk_free(&h->walk);
  }
  for (int i = 0; i < h->u->n; i++) {
    if (h->u->v[i].ins != ins)
      continue;
    /* The hook runs once per replica: execution k is calls k*R .. k*R+R-1,
     * and replica 0 comes first. */
    int call = h->calls[i]++;
    tn_capture *c = &h->caps[i];
    if (c->args || call != (h->iteration - 1) * h->replicas)
      return;
    if (c->kernel && !c->trace_failed && c->ncalls > 0 && *value)
      c->out = hlo_value_ref(*value);
    int np = tn_unit_param_operands(&h->u->v[i], h->pos);
    c->args = calloc((size_t)(np ? np : 1), sizeof *c->args);
    if (!c->args) {
      h->failed = 1;
      return;
    }
    c->nargs = np;
    for (int k = 0; k < np; k++)
      c->args[k] = h->pos[k] < n ? hlo_value_ref(ops[h->pos[k]]) : NULL;
    return;
  }
}

/* The sum of the units' estimated flops: a cheap bound on the work of
 * evaluating the module once (loops aside). */
static int64_t module_flops(const hlo_module *m, const tn_units *u) {
  int64_t total = 0;
  for (int i = 0; i < u->n; i++) {
    if (!u->v[i].ins)
      continue;
    hlo_error err;
    hlo_module *um = tn_unit_module(m, &u->v[i], &err);
    dev_fusion f;
    if (um && dev_fusion_analyze(um, &f, &err) == 0)
      total = f.flops > INT64_MAX / 2 - total ? INT64_MAX / 2 : total + f.flops;
    hlo_module_free(um);
  }
  return total;
}

/* The fused computation of unit i when it can be traced: a fusion whose
 * computation no other unit calls, holding no instruction whose value
 * depends on state outside its operands (rng is keyed by the run's seed
 * and the instruction's name, the same in the unit's own module). */
static const hlo_computation *trace_kernel(const tn_units *u, int i) {
  const hlo_instr *ins = u->v[i].ins;
  if (!ins || ins->op != HLO_OP_FUSION || !ins->attrs.calls.calls)
    return NULL;
  const hlo_computation *k = ins->attrs.calls.calls;
  for (int j = 0; j < u->n; j++)
    if (j != i && u->v[j].ins && u->v[j].ins->op == HLO_OP_FUSION && u->v[j].ins->attrs.calls.calls == k)
      return NULL;
  for (int q = 0; q < k->ninstrs; q++)
    switch (k->instrs[q]->op) {
    case HLO_OP_RNG_GET_AND_UPDATE_STATE:
    case HLO_OP_INFEED:
    case HLO_OP_OUTFEED:
    case HLO_OP_SEND:
    case HLO_OP_RECV:
      return NULL;
    default:
      break;
    }
  return k;
}

static void note_all(const tn_units *u, tn_capture *caps, const char *why, const char *detail) {
  for (int i = 0; i < u->n; i++)
    if (!caps[i].args)
      snprintf(caps[i].note, sizeof caps[i].note, "%s%.200s", why, detail);
}

int tn_capture_units(const hlo_module *m, const tn_units *u, const tn_capture_opts *o, tn_capture *caps) {
  memset(caps, 0, sizeof *caps * (size_t)u->n);
  hlo_error err = {0};
  int64_t flops = o->max_flops > 0 ? module_flops(m, u) : 0;
  if (o->max_flops > 0 && flops > o->max_flops) {
    char what[96];
    snprintf(what, sizeof what, "%.3g flops", (double)flops);
    note_all(u, caps, "the module is too large to evaluate whole: ", what);
    return 0;
  }
  int64_t held = 0;
  for (int c = 0; (o->max_memory > 0 || o->trace) && c < m->ncomps; c++)
    for (int i = 0; i < m->comps[c]->ninstrs; i++) {
      int64_t b = hlo_shape_bytes(&m->comps[c]->instrs[i]->shape);
      held = b > INT64_MAX / 2 - held ? INT64_MAX / 2 : held + b;
    }
  /* every simulated replica holds its own values */
  int nrep = o->replicas > 0 ? o->replicas : tn_replicas_needed(m);
  if (nrep > 64)
    nrep = 64;
  held = held > INT64_MAX / 2 / nrep ? INT64_MAX / 2 : held * nrep;
  if (o->max_memory > 0 && held > o->max_memory) {
    char what[96];
    snprintf(what, sizeof what, "its values take %lld bytes, above --max-memory", (long long)held);
    note_all(u, caps, "the module is too large to evaluate whole: ", what);
    return 0;
  }
  if (chk_eval_supported(m, &err) != 0) {
    note_all(u, caps, "the module cannot be evaluated whole: ", err.msg);
    return 0;
  }
  int nargs = m->entry->nparams;
  hlo_value **args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  int *calls = calloc((size_t)(u->n ? u->n : 1), sizeof *calls);
  int maxops = 1;
  for (int i = 0; i < u->n; i++)
    if (u->v[i].ins && u->v[i].ins->noperands > maxops)
      maxops = u->v[i].ins->noperands;
  int *pos = calloc((size_t)maxops, sizeof *pos);
  int captured = 0;
  if (!args || !calls || !pos) {
    note_all(u, caps, "out of memory", "");
    goto done;
  }
  chk_inputs_opts io = {.seed = o->seed, .profile = o->profile};
  if (o->entry_args)
    for (int k = 0; k < nargs; k++)
      args[k] = hlo_value_ref(o->entry_args[k]);
  else if (chk_inputs_make(m, &io, args, &err) != 0) {
    note_all(u, caps, "the module's arguments cannot be synthesised: ", err.msg);
    goto done;
  }
  hook_state h = {.u = u, .caps = caps, .calls = calls, .replicas = o->replicas > 0 ? o->replicas : tn_replicas_needed(m),
                  .iteration = o->iteration > 0 ? o->iteration : 1, .pos = pos};
  if (h.replicas > 64)
    h.replicas = 64;
  /* Traces hold the fusions' intermediate values until the units are
   * checked: only while every value of the module would take a small part
   * of --max-memory, so what the checks may hold is hardly changed. */
  if (o->trace && h.replicas == 1 && (o->max_memory <= 0 || held <= o->max_memory / 64))
    for (int i = 0; i < u->n; i++) {
      const hlo_computation *k = trace_kernel(u, i);
      if (k && (caps[i].reads = chk_accums_probe_reads(k)) != NULL) {
        caps[i].kernel = k;
        h.trace = true;
      }
    }
  chk_eval_opts eo = {.replicas = h.replicas, .emulate_device = 1, .hook = hook, .hook_ctx = &h,
                      .time_budget = o->time_budget, .rng_seed = o->seed};
  if (h.trace && !o->plain_dots) {
    eo.provide = provide;
    eo.provide_ctx = &h;
  }
  if (!(eo.time_budget > 0))
    eo.time_budget = TN_CAPTURE_TIME_BUDGET;
  hlo_value *outs[64] = {0};
  /* Evaluation is in program order, so the operands a unit received
   * before a later failure (a loop that never ends meeting the deadline)
   * are exactly those of the whole run: they are kept, and only the units
   * not reached yet fall back. */
  uint64_t refused = hlo_mem_refusals();
  bool failed = chk_eval_module(m, nargs, args, &eo, outs, &err) != 0;
  chk_dot_walk_free(&h.walk); /* a walk whose dot failed after it */
  if (failed && hlo_mem_refusals() != refused && strstr(err.msg, "out of memory"))
    hlo_error_set(&err, 0, 0, "its values reached --max-memory %lld bytes", (long long)hlo_mem_limit());
  for (int r = 0; !failed && r < h.replicas && r < 64; r++)
    hlo_value_unref(outs[r]);
  for (int i = 0; i < u->n; i++) {
    tn_capture *c = &caps[i];
    bool whole = c->args != NULL;
    for (int k = 0; whole && k < c->nargs; k++)
      whole = c->args[k] != NULL;
    if (!c->out || c->trace_failed)
      drop_trace(c);
    if (whole) {
      captured++;
      continue;
    }
    if (c->args) {
      for (int k = 0; k < c->nargs; k++)
        hlo_value_unref(c->args[k]);
      free(c->args);
      c->args = NULL;
    }
    drop_trace(c);
    int execs = calls[i] / (h.replicas > 0 ? h.replicas : 1);
    if (failed)
      snprintf(c->note, sizeof c->note, "the module cannot be evaluated whole: %.200s", err.msg);
    else if (execs == 0)
      snprintf(c->note, sizeof c->note, "it never ran when the module was evaluated");
    else
      snprintf(c->note, sizeof c->note, "it ran %d time%s when the module was evaluated, not %d", execs,
               execs == 1 ? "" : "s", h.iteration);
  }
done:
  for (int i = 0; args && i < nargs; i++)
    hlo_value_unref(args[i]);
  free(args);
  free(calls);
  free(pos);
  return captured;
}

void tn_capture_free(tn_capture *caps, int n) {
  for (int i = 0; caps && i < n; i++) {
    for (int k = 0; caps[i].args && k < caps[i].nargs; k++)
      hlo_value_unref(caps[i].args[k]);
    free(caps[i].args);
    caps[i].args = NULL;
    caps[i].nargs = 0;
    drop_trace(&caps[i]);
  }
}

void tn_capture_note(const tn_capture *cap, int iteration, tn_fusion_result *r) {
  r->iteration = cap && cap->args ? iteration : 0;
  if (cap && !cap->args)
    snprintf(r->inputs_note, sizeof r->inputs_note, "%s", cap->note);
}
