/* replay.c — recording a kernel's values and replaying only what a changed
 * value reaches (replay.h). */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

static bool in_kernel(const chk_replay *R, const hlo_instr *ins) {
  const hlo_computation *c = R->kernel;
  return c && ins && ins->index >= 0 && ins->index < c->ninstrs && c->instrs[ins->index] == ins;
}

/* Ops whose value depends on what the evaluation did before them (a host
 * transfer counter, a peer's data, a generator state), not only on their
 * operands: skipping an earlier one would change a later one. */
static bool history_dependent(hlo_opcode op) {
  switch (op) {
  case HLO_OP_INFEED:
  case HLO_OP_OUTFEED:
  case HLO_OP_SEND:
  case HLO_OP_SEND_DONE:
  case HLO_OP_RECV:
  case HLO_OP_RECV_DONE:
  case HLO_OP_RNG_GET_AND_UPDATE_STATE:
    return true;
  default:
    return false;
  }
}

/* down[i] = 1 for changed and every instruction that reads it, directly
 * or through others.  Instructions come in an order in which every
 * operand precedes its readers (the evaluator's own order). */
static void downstream(const hlo_computation *c, int changed, unsigned char *down) {
  memset(down, 0, (size_t)c->ninstrs);
  down[changed] = 1;
  for (int i = changed + 1; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    for (int k = 0; k < ins->noperands && !down[i]; k++)
      if (down[ins->operands[k]->index])
        down[i] = 1;
  }
}

/* The steps of a replay of a change of `changed`, into plan: what it
 * evaluates, and what it reads from the recording (the changed value,
 * every other value an evaluated instruction reads, the root). */
static void steps(const hlo_computation *c, int changed, unsigned char *plan) {
  downstream(c, changed, plan);
  for (int i = 0; i < c->ninstrs; i++)
    plan[i] = plan[i] ? CHK_REPLAY_EVALUATE : CHK_REPLAY_SKIP;
  for (int i = changed + 1; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (plan[i] != CHK_REPLAY_EVALUATE)
      continue;
    for (int k = 0; k < ins->noperands; k++)
      if (plan[ins->operands[k]->index] == CHK_REPLAY_SKIP)
        plan[ins->operands[k]->index] = CHK_REPLAY_RECORDED;
  }
  plan[changed] = CHK_REPLAY_RECORDED;
  if (plan[c->root->index] == CHK_REPLAY_SKIP)
    plan[c->root->index] = CHK_REPLAY_RECORDED;
}

static void drop_values(chk_replay *R) {
  if (!R->val)
    return;
  for (int i = 0; i < R->kernel->ninstrs; i++) {
    hlo_value_unref(R->val[i]);
    R->val[i] = NULL;
  }
}

void chk_replay_init(chk_replay *R, const hlo_computation *kernel, const hlo_instr *const *targets, int ntargets) {
  R->kernel = kernel;
  int n = kernel && kernel->root ? kernel->ninstrs : 0;
  if (n == 0) {
    R->off = true;
    return;
  }
  for (int i = 0; i < n; i++)
    if (history_dependent(kernel->instrs[i]->op)) {
      R->off = true;
      return;
    }
  R->want = calloc((size_t)n, 1);
  R->val = calloc((size_t)n, sizeof *R->val);
  R->seen = calloc((size_t)n, sizeof *R->seen);
  unsigned char *plan = malloc((size_t)n);
  if (!R->want || !R->val || !R->seen || !plan) {
    free(plan);
    chk_replay_free(R);
    R->off = true;
    return;
  }
  for (int t = 0; t < ntargets; t++) {
    if (!in_kernel(R, targets[t]))
      continue;
    steps(kernel, targets[t]->index, plan);
    for (int i = 0; i < n; i++)
      if (plan[i] == CHK_REPLAY_RECORDED)
        R->want[i] = 1;
  }
  free(plan);
}

void chk_replay_record(chk_replay *R, const hlo_instr *ins, hlo_value *value) {
  if (R->off || !R->seen || !in_kernel(R, ins))
    return;
  if (++R->seen[ins->index] > 1) {
    /* Evaluated twice (a loop, several replicas): one recorded value
     * cannot stand for every evaluation. */
    drop_values(R);
    R->off = true;
    return;
  }
  if (R->want[ins->index] && value)
    R->val[ins->index] = hlo_value_ref(value);
}

bool chk_replay_plan(chk_replay *R, const hlo_instr *changed, chk_eval_hook *hook, void *ctx) {
  free(R->plan);
  R->plan = NULL;
  if (R->off || !R->val || !in_kernel(R, changed))
    return false;
  int n = R->kernel->ninstrs;
  unsigned char *plan = malloc((size_t)n);
  if (!plan)
    return false;
  steps(R->kernel, changed->index, plan);
  for (int i = 0; i < n; i++)
    if (plan[i] == CHK_REPLAY_RECORDED && !R->val[i]) {
      free(plan);
      return false;
    }
  R->plan = plan;
  R->hook = hook;
  R->hook_ctx = ctx;
  return true;
}

void chk_replay_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  chk_replay *R = ctx;
  if (R->hook)
    R->hook(R->hook_ctx, ins, ops, nops, value);
}

const chk_replay *chk_replay_active(const chk_eval_opts *o, const hlo_computation *c, int nrep) {
  if (o->hook != chk_replay_hook || !o->hook_ctx)
    return NULL;
  const chk_replay *R = o->hook_ctx;
  return R->plan && R->kernel == c && nrep == 1 ? R : NULL;
}

chk_replay_step chk_replay_step_of(const chk_replay *R, int i) { return (chk_replay_step)R->plan[i]; }

hlo_value *chk_replay_value(const chk_replay *R, int i) { return hlo_value_ref(R->val[i]); }

void chk_replay_free(chk_replay *R) {
  drop_values(R);
  free(R->want);
  free(R->val);
  free(R->seen);
  free(R->plan);
  R->want = NULL;
  R->val = NULL;
  R->seen = NULL;
  R->plan = NULL;
}
