/* capture.c — one reference evaluation of a whole module, recording each
 * unit's operands at its Nth execution (capture.h). */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_fusion.h"
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
} hook_state;

static void hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  (void)value;
  hook_state *h = ctx;
  for (int i = 0; i < h->u->n; i++) {
    if (h->u->v[i].ins != ins)
      continue;
    /* The hook runs once per replica: execution k is calls k*R .. k*R+R-1,
     * and replica 0 comes first. */
    int call = h->calls[i]++;
    tn_capture *c = &h->caps[i];
    if (c->args || call != (h->iteration - 1) * h->replicas)
      return;
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
  for (int c = 0; o->max_memory > 0 && c < m->ncomps; c++)
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
  chk_eval_opts eo = {.replicas = h.replicas, .emulate_device = 1, .hook = hook, .hook_ctx = &h,
                      .time_budget = o->time_budget, .rng_seed = o->seed};
  if (!(eo.time_budget > 0))
    eo.time_budget = TN_CAPTURE_TIME_BUDGET;
  hlo_value *outs[64] = {0};
  /* Evaluation is in program order, so the operands a unit received
   * before a later failure (a loop that never ends meeting the deadline)
   * are exactly those of the whole run: they are kept, and only the units
   * not reached yet fall back. */
  uint64_t refused = hlo_mem_refusals();
  bool failed = chk_eval_module(m, nargs, args, &eo, outs, &err) != 0;
  if (failed && hlo_mem_refusals() != refused && strstr(err.msg, "out of memory"))
    hlo_error_set(&err, 0, 0, "its values reached --max-memory %lld bytes", (long long)hlo_mem_limit());
  for (int r = 0; !failed && r < h.replicas && r < 64; r++)
    hlo_value_unref(outs[r]);
  for (int i = 0; i < u->n; i++) {
    tn_capture *c = &caps[i];
    bool whole = c->args != NULL;
    for (int k = 0; whole && k < c->nargs; k++)
      whole = c->args[k] != NULL;
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
  }
}

void tn_capture_note(const tn_capture *cap, int iteration, tn_fusion_result *r) {
  r->iteration = cap && cap->args ? iteration : 0;
  if (cap && !cap->args)
    snprintf(r->inputs_note, sizeof r->inputs_note, "%s", cap->note);
}
