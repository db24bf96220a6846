/* intent.c — non-finite intent analysis (rules in intent.h).
 *
 * The hook keeps, per instruction, which non-finite kinds its value holds
 * and whether they are tainted (made by arithmetic from finite values, or
 * read from the inputs), indexed [computation][instruction].  Evaluation
 * runs operands before users, so an instruction's operands are classified
 * when the hook sees it.  A parameter of a called computation takes the
 * classification of the caller's operand, found through a map built once
 * from the module's fusion and call sites.
 */
#include "intent.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_types.h"

enum { K_NAN = 1, K_POS = 2, K_NEG = 4 };

typedef struct info {
  uint8_t kinds;             /* K_* present in the value */
  bool tainted;
  const hlo_instr *origin;   /* where the taint was created */
} info;

typedef struct state {
  const hlo_module *m;
  info **at;                 /* [comp->index][ins->index] */
  const hlo_instr ***caller; /* [comp->index][param number]: the caller's operand */
  bool *dataflow;            /* computations whose ops carry values (not reducers) */
  bool oom;
} state;

const char *chk_nonfinite_name(chk_nonfinite k) {
  switch (k) {
  case CHK_NONFINITE_NONE: return "none";
  case CHK_NONFINITE_INTENDED: return "intended";
  case CHK_NONFINITE_INPUTS: return "inputs";
  }
  return "?";
}

static uint8_t kind_of(double x) {
  return isnan(x) ? K_NAN : isinf(x) ? (x > 0 ? K_POS : K_NEG) : 0;
}

static bool is_real(const hlo_value *v) {
  hlo_eclass c = hlo_etype_class(v->type);
  return c == HLO_CLASS_FLOAT || c == HLO_CLASS_COMPLEX;
}

/* The kinds a value holds; f32 scanned directly (the common case). */
static uint8_t kinds_of(const hlo_value *v) {
  if (!v)
    return 0;
  if (v->type == HLO_TUPLE) {
    uint8_t k = 0;
    for (int i = 0; i < v->ntuple; i++)
      k |= kinds_of(v->elems[i]);
    return k;
  }
  if (!is_real(v))
    return 0;
  uint8_t k = 0;
  if (v->type == HLO_F32) {
    const float *p = v->data;
    for (int64_t i = 0; i < v->count; i++)
      if (!isfinite(p[i]))
        k |= kind_of(p[i]);
    return k;
  }
  for (int64_t i = 0; i < v->count; i++)
    k |= kind_of(hlo_value_get_f64(v, i));
  return k;
}

void chk_intent_count(const hlo_value *v, int64_t *nonfinite, int64_t *count) {
  if (!v)
    return;
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      chk_intent_count(v->elems[i], nonfinite, count);
    return;
  }
  if (!is_real(v))
    return;
  *count += v->count;
  for (int64_t i = 0; i < v->count; i++)
    *nonfinite += !isfinite(hlo_value_get_f64(v, i));
}

/* Ops that only move, copy or order values: they create no element. */
static bool carries(hlo_opcode op) {
  switch (op) {
  case HLO_OP_COPY: case HLO_OP_RESHAPE: case HLO_OP_BITCAST: case HLO_OP_BROADCAST:
  case HLO_OP_TRANSPOSE: case HLO_OP_SLICE: case HLO_OP_REVERSE: case HLO_OP_CONCATENATE:
  case HLO_OP_PAD: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_DYNAMIC_UPDATE_SLICE: case HLO_OP_GATHER:
  case HLO_OP_SORT: case HLO_OP_TUPLE: case HLO_OP_GET_TUPLE_ELEMENT: case HLO_OP_OPT_BARRIER:
  case HLO_OP_ALL_GATHER: case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

static bool max_min_reduce(const hlo_instr *u) {
  if (u->op != HLO_OP_REDUCE && u->op != HLO_OP_REDUCE_WINDOW)
    return false;
  const hlo_computation *c = u->attrs.calls.to_apply;
  return c && c->root && (c->root->op == HLO_OP_MAXIMUM || c->root->op == HLO_OP_MINIMUM);
}

static info *info_of(state *s, const hlo_instr *x) {
  if (!x || !x->parent || !s->at[x->parent->index])
    return NULL;
  return &s->at[x->parent->index][x->index];
}

/* Whether every non-finite element of v repeats one of the operands at the
 * same position: an Inf where an operand has an Inf, a NaN where an operand
 * has a NaN.  Operands of another element count (a select's predicate, a
 * scalar) only count when they are scalars. */
static bool inherited_elementwise(const hlo_value *v, hlo_value *const *ops, int n) {
  for (int64_t i = 0; i < v->count; i++) {
    double x = hlo_value_get_f64(v, i);
    if (isfinite(x))
      continue;
    bool found = false;
    for (int j = 0; j < n && !found; j++) {
      const hlo_value *o = ops[j];
      if (!o || o->type == HLO_TUPLE || !is_real(o) || (o->count != v->count && o->count != 1))
        continue;
      double y = hlo_value_get_f64(o, o->count == 1 ? 0 : i);
      found = isnan(x) ? isnan(y) : isinf(y);
    }
    if (!found)
      return false;
  }
  return true;
}

static bool elementwise(const hlo_instr *u, const hlo_value *v, hlo_value *const *ops, int n) {
  if (v->type == HLO_TUPLE || u->op == HLO_OP_REDUCE || u->op == HLO_OP_REDUCE_WINDOW || u->op == HLO_OP_DOT ||
      u->op == HLO_OP_CONVOLUTION || u->op == HLO_OP_SCATTER)
    return false;
  for (int j = 0; j < n; j++)
    if (ops[j] && ops[j]->type != HLO_TUPLE && ops[j]->count != v->count && ops[j]->count != 1 &&
        is_real(ops[j]))
      return false;
  return true;
}

static void hook(void *ctx, const hlo_instr *u, hlo_value *const *ops, int n, hlo_value **value) {
  state *s = ctx;
  info *me = info_of(s, u);
  if (!me || !s->dataflow[u->parent->index])
    return;
  const hlo_value *v = *value;
  uint8_t k = kinds_of(v);
  me->kinds |= k;
  if (k == 0)
    return;
  /* The origin of what the operands carry. */
  bool in_tainted = false;
  const hlo_instr *in_origin = NULL;
  for (int j = 0; j < u->noperands; j++) {
    info *o = info_of(s, u->operands[j]);
    if (o && o->kinds && o->tainted && !in_tainted) {
      in_tainted = true;
      in_origin = o->origin;
    }
  }
  switch (u->op) {
  case HLO_OP_CONSTANT:
  case HLO_OP_IOTA:
    return; /* a source the module's author wrote */
  case HLO_OP_PARAMETER: {
    const hlo_instr *from =
        u->parameter_number >= 0 && s->caller[u->parent->index] ? s->caller[u->parent->index][u->parameter_number]
                                                                 : NULL;
    info *o = from ? info_of(s, from) : NULL;
    if (o) {
      me->tainted |= o->tainted;
      if (o->tainted && !me->origin)
        me->origin = o->origin;
    } else if (!me->tainted) { /* an entry input holding NaN or Inf */
      me->tainted = true;
      me->origin = u;
    }
    return;
  }
  case HLO_OP_FUSION:
  case HLO_OP_CALL: {
    const hlo_computation *c = u->op == HLO_OP_FUSION ? u->attrs.calls.calls
                               : u->attrs.calls.to_apply ? u->attrs.calls.to_apply
                                                         : u->attrs.calls.calls;
    info *o = c ? info_of(s, c->root) : NULL;
    if (o && o->tainted && !me->tainted) {
      me->tainted = true;
      me->origin = o->origin;
    }
    return;
  }
  default:
    break;
  }
  bool created;
  if (carries(u->op) || max_min_reduce(u)) {
    created = false;
  } else if (elementwise(u, v, ops, n)) {
    created = !inherited_elementwise(v, ops, n);
  } else { /* mixing ops: a kind no operand holds was created here */
    uint8_t have = 0;
    for (int j = 0; j < n; j++)
      have |= kinds_of(ops[j]);
    created = (k & ~have) != 0 || ((k & K_NAN) && !(have & K_NAN));
  }
  if (me->tainted)
    return;
  if (created) {
    me->tainted = true;
    me->origin = u;
  } else if (in_tainted) {
    me->tainted = true;
    me->origin = in_origin;
  }
}

static void state_free(state *s) {
  if (s->at)
    for (int c = 0; c < s->m->ncomps; c++)
      free(s->at[c]);
  if (s->caller)
    for (int c = 0; c < s->m->ncomps; c++)
      free(s->caller[c]);
  free(s->at);
  free(s->caller);
  free(s->dataflow);
}

/* Marks c and what its fusions and calls call as dataflow computations,
 * and records which operand feeds each of their parameters. */
static int map_calls(state *s, const hlo_computation *c, int depth) {
  if (!c || depth > 16)
    return 0;
  s->dataflow[c->index] = true;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *u = c->instrs[i];
    if (u->op != HLO_OP_FUSION && u->op != HLO_OP_CALL)
      continue;
    const hlo_computation *callee = u->op == HLO_OP_FUSION ? u->attrs.calls.calls
                                    : u->attrs.calls.to_apply ? u->attrs.calls.to_apply
                                                              : u->attrs.calls.calls;
    if (!callee)
      continue;
    if (!s->caller[callee->index]) {
      s->caller[callee->index] = calloc((size_t)(callee->nparams > 0 ? callee->nparams : 1), sizeof(hlo_instr *));
      if (!s->caller[callee->index])
        return -1;
    }
    /* A computation called from several sites keeps the last one: the
     * analysis is then approximate, never wrong about a value it saw. */
    for (int k = 0; k < callee->nparams && k < u->noperands; k++)
      s->caller[callee->index][k] = u->operands[k];
    if (map_calls(s, callee, depth + 1) != 0)
      return -1;
  }
  return 0;
}

static int state_init(state *s, const hlo_module *m) {
  s->m = m;
  int nc = m->ncomps > 0 ? m->ncomps : 1;
  s->at = calloc((size_t)nc, sizeof *s->at);
  s->caller = calloc((size_t)nc, sizeof *s->caller);
  s->dataflow = calloc((size_t)nc, sizeof *s->dataflow);
  if (!s->at || !s->caller || !s->dataflow)
    return -1;
  for (int c = 0; c < m->ncomps; c++) {
    int n = m->comps[c]->ninstrs;
    s->at[c] = calloc((size_t)(n > 0 ? n : 1), sizeof **s->at);
    if (!s->at[c])
      return -1;
  }
  return map_calls(s, m->entry, 0);
}

int chk_intent_classify(const hlo_module *m, int nargs, hlo_value *const *args, const chk_eval_opts *base,
                        const hlo_value *outs, chk_intent_result *r, hlo_error *err) {
  memset(r, 0, sizeof *r);
  chk_intent_count(outs, &r->nonfinite, &r->count);
  if (r->nonfinite == 0)
    return 0;
  state s = {0};
  if (state_init(&s, m) != 0) {
    state_free(&s);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  chk_eval_opts eo = *base;
  eo.hook = hook;
  eo.hook_ctx = &s;
  int nrep = eo.replicas > 0 ? eo.replicas : 1;
  hlo_value **again = calloc((size_t)nrep, sizeof *again);
  if (!again || chk_eval_module(m, nargs, args, &eo, again, err) != 0) {
    if (!again)
      hlo_error_set(err, 0, 0, "out of memory");
    free(again);
    state_free(&s);
    return -1;
  }
  for (int i = 0; i < nrep; i++)
    hlo_value_unref(again[i]);
  free(again);
  const info *root = info_of(&s, m->entry->root);
  if (root && root->tainted) {
    r->kind = CHK_NONFINITE_INPUTS;
    snprintf(r->origin, sizeof r->origin, "%s", root->origin ? root->origin->name : "?");
  } else {
    r->kind = CHK_NONFINITE_INTENDED;
  }
  state_free(&s);
  return 0;
}
