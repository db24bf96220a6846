/* dev_materialize.c — the whole values of the kernel's opaque instructions
 * (dev_elem_materialize), computed once per run before the grid: by the
 * device's whole-array lowerings (dev_whole.h), by its collectives with
 * every replica's values side by side in lockstep (dev_collective.h), or,
 * for what the device does not lower, by the host evaluator the fusion
 * carries (dev_host.h).
 *
 * Apart from the evaluator (dev_elemental.c) because it works on whole
 * arrays, not boxes: it asks the evaluator for an operand's whole value and
 * hands back the result as a leaf, and what it depends on (the config, the
 * jitter seed, the host, the replicas) plays no part in evaluating a tile.
 */
#include "dev_elemental_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_collective.h"
#include "dev_host.h"
#include "dev_probe.h"
#include "dev_whole.h"


const hlo_value *dev_elem_value(const dev_elem *e, const hlo_instr *ins) {
  return e->mat[ins->index] ? e->val[ins->index] : NULL;
}

/* Whole parameters while materialising. */
static void whole_param_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  dev_elem *e = ctx;
  const hlo_value *p = e->params[param];
  int64_t off = 0;
  for (int d = 0; d < p->rank; d++)
    off = off * p->dims[d] + idx[d];
  dev_slots_from_host(p->type, p->data, off, n, v);
  memset(poison, 0, (size_t)n);
}

static hlo_value *box_to_value(const hlo_shape *s, const dev_box *b) {
  hlo_value *v = hlo_value_from_shape(s);
  if (!v)
    return NULL;
  if (s->type == HLO_S32 || s->type == HLO_U32) { /* dev_slot_to_host's case, typed: index arrays */
    uint32_t *o = v->data;
    for (int64_t i = 0; i < b->count; i++)
      o[i] = (uint32_t)b->v[i].i;
    return v;
  }
  dev_slots_to_host(s->type, b->v, b->count, v->data, 0);
  return v;
}

/* A broadcast of a scalar constant of a plain type (a scatter's zero-filled
 * operand), when no probe watches the evaluator's boxes: every element is
 * the constant's one slot, stored as the box would store it, so the slot
 * is made and stored once and its bytes are repeated.  Evaluating it as a
 * box wrote a slot and a poison byte per element and converted them back
 * one by one, a fifth of a small scatter's run.  NULL when ins is not such
 * a broadcast (or out of memory: the box path then reports it). */
static hlo_value *broadcast_constant(const dev_elem *e, const hlo_instr *ins) {
  const hlo_shape *s = &ins->shape;
  if (ins->op != HLO_OP_BROADCAST || e->kind[ins->index] != DEV_EK_BROADCAST || e->probe || ins->noperands != 1)
    return NULL;
  const hlo_instr *o = ins->operands[0];
  const hlo_value *c = e->val[o->index];
  if (e->kind[o->index] != DEV_EK_CONST || !c || c->type != s->type || c->count != 1 || o->shape.rank != 0)
    return NULL;
  switch (s->type) {
  case HLO_F32: case HLO_F64: case HLO_BF16: case HLO_F16: case HLO_PRED:
  case HLO_S8: case HLO_S16: case HLO_S32: case HLO_S64:
  case HLO_U8: case HLO_U16: case HLO_U32: case HLO_U64:
    break;
  default:
    return NULL;
  }
  hlo_value *v = hlo_value_array_uninit(s->type, s->rank, s->dims);
  if (!v || v->count == 0)
    return v;
  dev_slot one;
  dev_slot_from_host(c->type, c->data, 0, &one);
  dev_slot_to_host(s->type, one, v->data, 0);
  /* element 0 doubled until the array is full */
  size_t total = (size_t)v->count * v->elem_size;
  for (size_t have = v->elem_size; have < total; have *= 2)
    memcpy((char *)v->data + have, v->data, have < total - have ? have : total - have);
  return v;
}

/* The whole value of ins (one reference), for an opaque op's operand. */
static hlo_value *whole_value(dev_elem *e, const hlo_instr *ins, char *why, size_t why_len) {
  if (e->mat[ins->index]) {
    if (!e->val[ins->index])
      snprintf(why, why_len, "%s is not materialised yet", ins->name);
    return e->val[ins->index] ? hlo_value_ref(e->val[ins->index]) : NULL;
  }
  /* A parameter is already a whole value: going through a box of slots
   * and back would give the same elements at the cost of two copies. */
  if (e->kind[ins->index] == DEV_EK_PARAM && e->params)
    return hlo_value_ref(e->params[ins->parameter_number]);
  if (ins->op == HLO_OP_TUPLE) {
    hlo_value *el[64];
    if (ins->noperands > 64) {
      snprintf(why, why_len, "%s: tuple of more than 64 elements", ins->name);
      return NULL;
    }
    for (int j = 0; j < ins->noperands; j++) {
      el[j] = whole_value(e, ins->operands[j], why, why_len);
      if (!el[j]) {
        while (j-- > 0)
          hlo_value_unref(el[j]);
        return NULL;
      }
    }
    return hlo_value_tuple(ins->noperands, el);
  }
  hlo_value *bc = broadcast_constant(e, ins);
  if (bc)
    return bc;
  const hlo_shape *s = &ins->shape;
  dev_box want = {.rank = s->rank};
  for (int d = 0; d < s->rank; d++)
    want.n[d] = s->dims[d];
  dev_box b;
  if (dev_elem_eval(e, ins, &want, false, whole_param_read, NULL, e, &b, why, why_len) != 0)
    return NULL;
  hlo_value *v = box_to_value(s, &b);
  dev_box_free(&b);
  if (!v)
    snprintf(why, why_len, "out of memory");
  return v;
}

/* Evaluates mod's entry on args with the host the fusion was given
 * (dev_host.h): replica 0's root value, with the device's numerics and the
 * run's replicas and rng seed, or NULL with why. */
static hlo_value *host_eval(const dev_elem *e, const hlo_module *mod, const hlo_instr *ins, int nargs,
                            hlo_value *const *args, char *why, size_t why_len) {
  const dev_host *h = e->f->host;
  if (!h || !h->evaluate) {
    snprintf(why, why_len, "%s: %s needs a host evaluator, and the fusion was given none", ins->name,
             hlo_opcode_name(ins->op));
    return NULL;
  }
  dev_host_opts o = {.replicas = e->f->replicas > 1 ? e->f->replicas : 1,
                     .emulate_device = 1,
                     .rng_seed = e->f->rng_seed};
  hlo_error err = {0};
  hlo_value *res = NULL;
  if (h->evaluate(mod, nargs, args, &o, &res, &err) != 0) {
    snprintf(why, why_len, "%s", err.msg[0] ? err.msg : "the host evaluator failed");
    return NULL;
  }
  return res;
}

/* A collective sees every replica's operand, and those differ when the
 * kernel reads replica-id: so it is evaluated, for all replicas in
 * lockstep, as the kernel computation cut at the collective (the kernel's
 * instructions with the collective as root), on the whole parameters. */
static hlo_value *eval_prefix(const dev_elem *e, const hlo_instr *ins, hlo_value *const *params, char *why,
                              size_t why_len) {
  hlo_computation comp = *e->c;
  comp.root = (hlo_instr *)ins;
  comp.is_entry = true;
  comp.ninstrs = ins->index + 1;
  hlo_module mod = *e->f->m;
  mod.entry = &comp;
  return host_eval(e, &mod, ins, e->c->nparams, params, why, why_len);
}

/* Evaluates one opaque instruction with the host evaluator: a module
 * whose entry is parameters plus a shallow copy of ins reading them.  Called
 * computations (to_apply, ...) are shared with the kernel's module. */
static hlo_value *eval_single(const dev_elem *e, const hlo_instr *ins, hlo_value **ops, char *why, size_t why_len) {
  int n = ins->noperands;
  hlo_instr *params = calloc((size_t)n + 1, sizeof *params);
  hlo_instr **pp = calloc((size_t)n + 1, sizeof *pp);
  hlo_instr **all = calloc((size_t)n + 2, sizeof *all);
  hlo_value *res = NULL;
  if (!params || !pp || !all)
    goto done;
  hlo_computation comp;
  memset(&comp, 0, sizeof comp);
  hlo_instr clone = *ins;
  comp.name = "device_opaque";
  comp.is_entry = true;
  for (int j = 0; j < n; j++) {
    hlo_instr *p = &params[j];
    p->name = ins->operands[j]->name;
    p->op = HLO_OP_PARAMETER;
    p->async_wrapped = HLO_OP_INVALID;
    p->shape = ins->operands[j]->shape;
    p->parameter_number = j;
    p->parent = &comp;
    p->index = j;
    p->line = ins->line;
    p->col = ins->col;
    pp[j] = p;
    all[j] = p;
  }
  clone.operands = pp;
  clone.parent = &comp;
  clone.index = n;
  all[n] = &clone;
  comp.ninstrs = n + 1;
  comp.instrs = all;
  comp.root = &clone;
  comp.root_marked = true;
  comp.nparams = n;
  comp.params = pp;
  hlo_module mod = *e->f->m;
  mod.entry = &comp;
  res = host_eval(e, &mod, ins, n, ops, why, why_len);
done:
  if (!res && why[0] == 0)
    snprintf(why, why_len, "out of memory");
  free(params);
  free(pp);
  free(all);
  return res;
}

/* Does a computation reachable from c read the replica or partition id or
 * hold a collective?  depth bounds the walk (a cycle is not valid HLO, but
 * the text could still hold one). */
static bool reads_replica(const hlo_computation *c, int depth) {
  if (!c || depth > 16)
    return c != NULL;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    const hlo_calls *k = &ins->attrs.calls;
    if (ins->op == HLO_OP_REPLICA_ID || ins->op == HLO_OP_PARTITION_ID || dev_collective_op(ins->op))
      return true;
    if ((k->to_apply && reads_replica(k->to_apply, depth + 1)) || (k->calls && reads_replica(k->calls, depth + 1)) ||
        (k->condition && reads_replica(k->condition, depth + 1)) || (k->body && reads_replica(k->body, depth + 1)))
      return true;
    for (int b = 0; b < k->nbranches; b++)
      if (reads_replica(k->branches[b], depth + 1))
        return true;
  }
  return false;
}

/* A fusion nested in the kernel (XLA nests them: a Triton fusion's nested
 * dots, constants sunk into a fusion of their own...).  The device computes
 * its called computation with its own evaluator, as a kernel of its own
 * on the whole operands, the way it computes an opaque op's operands; what
 * that computation holds that the device does not lower goes to the host
 * as usual.  Not when anything it reaches reads the replica id or holds a
 * collective: the inner evaluator runs as replica 0 alone.  Then, and on
 * a malformed call, NULL with why empty, and the host computes it all;
 * NULL with why set on a real failure. */
static hlo_value *nested_fusion(dev_elem *e, const hlo_instr *ins, hlo_value **ops, char *why, size_t why_len) {
  const hlo_computation *callee = ins->attrs.calls.calls;
  why[0] = '\0';
  if (!callee || !callee->root || callee->nparams != ins->noperands || reads_replica(callee, 0))
    return NULL;
  for (int j = 0; j < callee->nparams; j++)
    if (!callee->params[j] || !hlo_value_matches(ops[j], &callee->params[j]->shape))
      return NULL;
  dev_fusion inner = *e->f;
  inner.comp = callee;
  inner.launch = NULL;
  inner.hero = NULL;
  inner.kinds = NULL; /* unprepared: the inner evaluator works its own out */
  inner.lower = NULL;
  inner.spares = NULL;
  dev_elem *n = dev_elem_new(&inner, e->prec);
  if (!n) {
    snprintf(why, why_len, "out of memory");
    return NULL;
  }
  dev_elem_set_config(n, e->cfg);
  dev_elem_set_jitter(n, e->jitter);
  hlo_value *v = NULL;
  if (dev_elem_materialize(n, ops, why, why_len) == 0) {
    n->params = ops; /* the root's evaluation reads the whole operands */
    v = whole_value(n, callee->root, why, why_len);
    n->params = NULL;
  }
  dev_elem_free(n);
  if (!v && !why[0])
    snprintf(why, why_len, "%s: the nested fusion failed", ins->name);
  return v;
}

/* replica-id (the replica whose values e->val holds) or partition-id
 * (partitions are not simulated: always 0), as the device computes them. */
static hlo_value *id_value(const dev_elem *e, const hlo_instr *ins, char *why, size_t why_len) {
  hlo_value *v = hlo_value_from_shape(&ins->shape);
  /* The host's failure says "out of memory" first and nothing else: the
   * sweep tells it from the device's own errors by that (fusion_run.c). */
  if (!v) {
    snprintf(why, why_len, "out of memory");
    return NULL;
  }
  if (v->count != 1 || hlo_etype_class(v->type) == HLO_CLASS_FLOAT) {
    hlo_value_unref(v);
    snprintf(why, why_len, "%s: not an integer scalar", ins->name);
    return NULL;
  }
  hlo_value_set_i64(v, 0, ins->op == HLO_OP_REPLICA_ID ? e->replica : 0);
  return v;
}

/* Materialises instruction ins for the replica e->replica, whose values
 * e->val holds.  A collective met here has no lockstep to run in (see
 * lockstep_possible): it goes to the host evaluator, cut at the
 * collective, for replica 0. */
static int materialize_one(dev_elem *e, const hlo_instr *ins, char *why, size_t why_len) {
  int i = ins->index;
  hlo_value_unref(e->val[i]);
  e->val[i] = NULL;
  if (ins->op == HLO_OP_PARAMETER) {
    e->val[i] = hlo_value_ref(e->params[ins->parameter_number]);
    return 0;
  }
  if (ins->op == HLO_OP_REPLICA_ID || ins->op == HLO_OP_PARTITION_ID)
    return (e->val[i] = id_value(e, ins, why, why_len)) ? 0 : -1;
  if (e->kind[i] == DEV_EK_GTE) {
    hlo_value *t = whole_value(e, ins->operands[0], why, why_len);
    if (!t)
      return -1;
    if (t->type != HLO_TUPLE || ins->attrs.index < 0 || ins->attrs.index >= t->ntuple) {
      hlo_value_unref(t);
      snprintf(why, why_len, "%s: get-tuple-element of a non-tuple", ins->name);
      return -1;
    }
    e->val[i] = hlo_value_ref(t->elems[ins->attrs.index]);
    hlo_value_unref(t);
    return 0;
  }
  if (dev_collective_op(ins->op)) {
    e->val[i] = eval_prefix(e, ins, e->params, why, why_len);
    return e->val[i] ? 0 : -1;
  }
  hlo_value *ops[64];
  if (ins->noperands > 64) {
    snprintf(why, why_len, "%s: more than 64 operands", ins->name);
    return -1;
  }
  for (int j = 0; j < ins->noperands; j++) {
    ops[j] = whole_value(e, ins->operands[j], why, why_len);
    if (!ops[j]) {
      while (j-- > 0)
        hlo_value_unref(ops[j]);
      return -1;
    }
  }
  int wr = DEV_WHOLE_UNSUPPORTED;
  if (ins->op == HLO_OP_FUSION) {
    e->val[i] = nested_fusion(e, ins, ops, why, why_len);
    if (e->val[i] || why[0])
      wr = e->val[i] ? 0 : -1;
  } else if (dev_whole_handles(ins->op)) {
    /* the lowering defects the executor found triggered belong to the
     * hero, and to an fft (whose defect's trigger names the fft) */
    dev_whole_ctx wc = {e->cfg, ins == e->f->hero || ins->op == HLO_OP_FFT ? e->defects : 0, why, why_len, e->jitter,
                        e->f->m};
    wr = dev_whole_run(ins, ops, &wc, &e->val[i]);
  }
  if (wr == DEV_WHOLE_UNSUPPORTED) {
    e->val[i] = eval_single(e, ins, ops, why, why_len);
    if (!e->val[i] && ins->op == HLO_OP_CUSTOM_CALL && hlo_instr_unread(ins)) {
      /* A target the evaluator cannot run, whose result nothing reads:
       * the reference gives it zeros (eval_custom.c, since no output can
       * depend on it), and so does the device, where the call alone,
       * taken out of its computation, was refused. */
      e->val[i] = hlo_value_from_shape(&ins->shape);
      if (e->val[i])
        why[0] = '\0';
      else
        snprintf(why, why_len, "out of memory");
    }
  }
  for (int j = 0; j < ins->noperands; j++)
    hlo_value_unref(ops[j]);
  return e->val[i] ? 0 : -1;
}

/* Does the kernel hold a collective, and can the device run all of them
 * itself, every replica in lockstep?  Not when one is a form it does not
 * lower, nor when a computation the kernel calls reads replica-id: those
 * are evaluated by the host for replica 0 alone, which would give every
 * replica replica 0's number. */
static bool lockstep_possible(const dev_elem *e) {
  bool any = false;
  for (int i = 0; i < e->c->ninstrs; i++) {
    const hlo_instr *ins = e->c->instrs[i];
    if (!dev_collective_op(ins->op))
      continue;
    if (!dev_collective_lowers(ins))
      return false;
    any = true;
  }
  const hlo_module *m = e->f->m;
  for (int k = 0; any && k < m->ncomps; k++) {
    const hlo_computation *cc = m->comps[k];
    for (int i = 0; cc != e->c && i < cc->ninstrs; i++)
      if (cc->instrs[i]->op == HLO_OP_REPLICA_ID)
        return false;
  }
  return any;
}

/* The device's collectives: every replica's values are computed side by
 * side, instruction by instruction, so that each collective finds all its
 * operands ready (the replicas of a real machine meet there the same way).
 * Values that cannot differ between replicas (nothing upstream reads
 * replica-id or a collective) are computed once and shared.  On return
 * e->val holds replica 0's values, which are the kernel's. */
static int materialize_lockstep(dev_elem *e, char *why, size_t why_len) {
  const hlo_computation *c = e->c;
  int nrep = e->f->replicas > 1 ? e->f->replicas : 1, n = c->ninstrs, rc = 0;
  hlo_value **own = e->val;
  hlo_value ***vals = calloc((size_t)nrep, sizeof *vals);
  bool *varies = dev_collective_varying(c);
  hlo_value **ops = calloc((size_t)nrep * 64, sizeof *ops), **outs = calloc((size_t)nrep, sizeof *outs);
  if (!vals || !varies || !ops || !outs)
    rc = -1;
  for (int r = 0; rc == 0 && r < nrep; r++)
    if (!(vals[r] = r ? calloc((size_t)n, sizeof **vals) : own))
      rc = -1;
  if (rc != 0)
    snprintf(why, why_len, "out of memory");
  for (int i = 0; rc == 0 && i < n; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (e->kind[i] == DEV_EK_CONST) { /* every replica reads the one literal */
      for (int r = 1; r < nrep; r++)
        vals[r][i] = hlo_value_ref(own[i]);
      continue;
    }
    if (!e->mat[i])
      continue;
    if (!varies[i]) {
      e->val = own;
      e->replica = 0;
      rc = materialize_one(e, ins, why, why_len);
      for (int r = 1; rc == 0 && r < nrep; r++) {
        hlo_value_unref(vals[r][i]);
        vals[r][i] = hlo_value_ref(own[i]);
      }
      continue;
    }
    if (!dev_collective_op(ins->op)) {
      for (int r = nrep - 1; rc == 0 && r >= 0; r--) {
        e->val = vals[r];
        e->replica = r;
        rc = materialize_one(e, ins, why, why_len);
      }
      continue;
    }
    int k = ins->noperands;
    if (k > 64) {
      snprintf(why, why_len, "%s: more than 64 operands", ins->name);
      rc = -1;
      break;
    }
    for (int r = 0; rc == 0 && r < nrep; r++)
      for (int j = 0; rc == 0 && j < k; j++) {
        e->val = vals[r];
        e->replica = r;
        hlo_value **slot = &ops[(size_t)r * k + j];
        *slot = r && !varies[ins->operands[j]->index] ? hlo_value_ref(ops[j])
                                                      : whole_value(e, ins->operands[j], why, why_len);
        rc = *slot ? 0 : -1;
      }
    if (rc == 0) {
      /* the lowering defects the executor found triggered belong to the hero */
      dev_whole_ctx wc = {e->cfg, ins == e->f->hero ? e->defects : 0, why, why_len, e->jitter,
                        e->f->m};
      rc = dev_collective_run(ins, nrep, ops, &wc, outs) == 0 ? 0 : -1;
      if (rc != 0 && !why[0])
        snprintf(why, why_len, "%s: the device does not lower this collective", ins->name);
    }
    for (size_t q = 0; q < (size_t)nrep * k; q++) {
      hlo_value_unref(ops[q]);
      ops[q] = NULL;
    }
    for (int r = 0; rc == 0 && r < nrep; r++) {
      hlo_value_unref(vals[r][i]);
      vals[r][i] = outs[r];
    }
  }
  e->val = own;
  e->replica = 0;
  for (int r = 1; vals && r < nrep; r++) {
    for (int i = 0; vals[r] && i < n; i++)
      hlo_value_unref(vals[r][i]);
    free(vals[r]);
  }
  free(vals);
  free(varies);
  free(ops);
  free(outs);
  return rc;
}

int dev_elem_materialize(dev_elem *e, hlo_value *const *params, char *why, size_t why_len) {
  const hlo_computation *c = e->c;
  e->params = params;
  e->replica = 0;
  why[0] = 0;
  if (lockstep_possible(e)) {
    if (materialize_lockstep(e, why, why_len) != 0)
      return -1;
  } else {
    for (int i = 0; i < c->ninstrs; i++)
      if (e->mat[i] && e->kind[i] != DEV_EK_CONST && materialize_one(e, c->instrs[i], why, why_len) != 0)
        return -1;
  }
  e->params = NULL;
  for (int i = 0; e->probe && i < c->ninstrs; i++) /* dev_probe.h: read-only */
    if (e->mat[i])
      dev_probe_value(e->probe, c->instrs[i], e->val[i]);
  return 0;
}
