/* intent.c — non-finite intent analysis (rules in intent.h).
 *
 * The hook keeps, per instruction, which non-finite kinds its value holds,
 * whether they are tainted (made by arithmetic out of values the inputs
 * chose, or read from the inputs) and whether the value depends on the
 * entry parameters at all, indexed [computation][instruction].  Evaluation
 * runs operands before users, so an instruction's operands are classified
 * when the hook sees it.
 *
 * Called computations (fusions, calls) may be called from several sites,
 * each with its own operands.  A parameter's value is the very value
 * object its caller passed (eval.c hands the operand's reference on), so
 * the hook remembers the value object each instruction produced, per
 * replica, and a parameter takes its classification from the call sites
 * whose operand produced that object — whichever site is calling, however
 * many there are.  After a call the callee's records are stale: the next
 * call starts them afresh, so one call's taint does not leak into another
 * call of the same computation.
 */
#include "intent.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_types.h"

enum { K_NAN = 1, K_POS = 2, K_NEG = 4 };

typedef struct info {
  uint8_t kinds;             /* K_* present in the value */
  bool tainted;
  bool varies;               /* depends on an entry parameter */
  const hlo_instr *origin;   /* where the taint was created */
} info;

typedef struct state {
  const hlo_module *m;
  int nrep;
  info **at;                 /* [comp->index][ins->index] */
  /* [comp->index][ins->index * nrep + r]: the value object replica r of
   * the instruction produced last.  Compared by address only (to find a
   * parameter's caller), never dereferenced: it may have been freed. */
  const hlo_value ***seen;
  const hlo_instr ***sites;  /* [comp->index]: the fusions and calls calling it */
  int *nsites;
  bool *dataflow;            /* computations whose ops carry values (not reducers) */
  bool *stale;               /* a call of the computation ended: reset its records */
  bool deliberate;           /* the inputs' own NaN and Inf are meant */
  const hlo_instr *last;     /* the instruction of the previous hook call */
  int rep;                   /* its replica (hook calls run r = 0 .. nrep-1) */
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
  if (v->type == HLO_F32) {
    /* widening to f64 keeps finiteness: the same count, without a call
     * per element (every unit's reference is counted) */
    const float *p = v->data;
    int64_t n = 0;
    for (int64_t i = 0; i < v->count; i++)
      n += !isfinite(p[i]);
    *nonfinite += n;
    return;
  }
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
  case HLO_OP_COLLECTIVE_BROADCAST: case HLO_OP_RAGGED_ALL_TO_ALL:
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

static const hlo_computation *callee_of(const hlo_instr *u) {
  if (u->op == HLO_OP_FUSION)
    return u->attrs.calls.calls;
  if (u->op == HLO_OP_CALL)
    return u->attrs.calls.to_apply ? u->attrs.calls.to_apply : u->attrs.calls.calls;
  return NULL;
}

/* Whether each non-finite element of v is explained by its operands at the
 * same position:
 *   inherited   an operand holds an Inf where v holds an Inf, or a NaN
 *               where v holds a NaN (-inf + x = -inf keeps a mask a mask);
 *   constant    every operand is either independent of the inputs or holds
 *               an untainted non-finite value there, so no input could
 *               have changed the result (-inf - -inf = NaN of a mask with
 *               itself, a NaN the module computes from its own constants).
 * Operands of another element count only as scalars (a broadcast scalar,
 * the predicate of a select when it is one). */
static bool explained_elementwise(state *s, const hlo_instr *u, const hlo_value *v, hlo_value *const *ops, int n) {
  for (int64_t i = 0; i < v->count; i++) {
    double x = hlo_value_get_f64(v, i);
    if (isfinite(x))
      continue;
    bool found = false, fixed = true;
    for (int j = 0; j < n; j++) {
      const hlo_value *o = ops[j];
      const info *oi = j < u->noperands ? info_of(s, u->operands[j]) : NULL;
      bool varies = !oi || oi->varies;
      if (!o || o->type == HLO_TUPLE || (o->count != v->count && o->count != 1)) {
        fixed &= !varies;
        continue;
      }
      if (!is_real(o)) {
        fixed &= !varies;
        continue;
      }
      double y = hlo_value_get_f64(o, o->count == 1 ? 0 : i);
      found |= isnan(x) ? isnan(y) : isinf(y);
      fixed &= !varies || (oi && !isfinite(y) && !oi->tainted);
    }
    if (!found && !fixed)
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

/* Values that do not depend on the entry parameters: what the module's
 * author wrote (constants, iota) or the device's own coordinates. */
static bool fixed_source(hlo_opcode op) {
  return op == HLO_OP_CONSTANT || op == HLO_OP_IOTA || op == HLO_OP_REPLICA_ID || op == HLO_OP_PARTITION_ID;
}

/* A parameter of a called computation: the classification of the call
 * sites' operands that produced `value` (every match, so that two
 * instructions sharing one value object both count).  No match cannot
 * happen when eval.c passes operands on by reference; should it, the
 * parameter is taken as an input (tainted when it holds non-finite values,
 * varying), which may flag but never excuses. */
static void param_from_callers(state *s, const hlo_instr *u, const hlo_value *value, info *me, bool nonfinite) {
  const hlo_computation *c = u->parent;
  bool matched = false;
  for (int i = 0; i < s->nsites[c->index]; i++) {
    const hlo_instr *site = s->sites[c->index][i];
    if (u->parameter_number < 0 || u->parameter_number >= site->noperands)
      continue;
    const hlo_instr *from = site->operands[u->parameter_number];
    info *o = info_of(s, from);
    const hlo_value *const *seen = s->seen[from->parent->index];
    if (!o || !seen || seen[(size_t)from->index * (size_t)s->nrep + (size_t)s->rep] != value)
      continue;
    matched = true;
    me->varies |= o->varies;
    if (o->tainted && !me->tainted) {
      me->tainted = true;
      me->origin = o->origin;
    }
  }
  if (!matched) {
    me->varies = true;
    if (nonfinite && !me->tainted) {
      me->tainted = true;
      me->origin = u;
    }
  }
}

static void hook(void *ctx, const hlo_instr *u, hlo_value *const *ops, int n, hlo_value **value) {
  state *s = ctx;
  const hlo_computation *c = u->parent;
  info *me = info_of(s, u);
  if (!me || !s->dataflow[c->index])
    return;
  /* The hook runs once per replica, r = 0 .. nrep-1, for each instruction. */
  if (u == s->last) {
    s->rep = (s->rep + 1) % s->nrep;
  } else {
    s->last = u;
    s->rep = 0;
  }
  if (s->stale[c->index]) { /* a new call of c begins */
    memset(s->at[c->index], 0, sizeof **s->at * (size_t)c->ninstrs);
    s->stale[c->index] = false;
  }
  const hlo_value *v = *value;
  s->seen[c->index][(size_t)u->index * (size_t)s->nrep + (size_t)s->rep] = v;
  uint8_t k = kinds_of(v);
  me->kinds |= k;

  /* Dependence on the inputs, for every value (finite ones included). */
  const hlo_computation *callee = callee_of(u);
  if (u->op == HLO_OP_PARAMETER) {
    if (c == s->m->entry) {
      me->varies = true;
      if (k && !me->tainted && !s->deliberate) { /* an entry input holding NaN or Inf */
        me->tainted = true;
        me->origin = u;
      }
    } else {
      param_from_callers(s, u, v, me, k != 0);
    }
    return;
  }
  if (callee) {
    /* The callee's root is this call's value; its records are then done
     * with, and the next call of it starts afresh. */
    info *o = info_of(s, callee->root);
    if (o) {
      me->varies |= o->varies;
      if (o->tainted && k && !me->tainted) {
        me->tainted = true;
        me->origin = o->origin;
      }
    } else {
      me->varies = true;
    }
    s->stale[callee->index] = true;
    return;
  }
  if (fixed_source(u->op))
    return; /* a source the module's author wrote: never varies, never tainted */
  if (u->noperands == 0)
    me->varies = true; /* rng and the like */
  for (int j = 0; j < u->noperands; j++) {
    info *o = info_of(s, u->operands[j]);
    me->varies |= !o || o->varies;
  }
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
  bool created;
  if (carries(u->op) || max_min_reduce(u)) {
    created = false;
  } else if (elementwise(u, v, ops, n)) {
    created = !explained_elementwise(s, u, v, ops, n);
  } else {
    /* Mixing ops: a kind no operand holds was created here, and is the
     * inputs' doing unless no operand depends on them at all. */
    uint8_t have = 0;
    bool varies = false;
    for (int j = 0; j < n; j++)
      have |= kinds_of(ops[j]);
    for (int j = 0; j < u->noperands; j++) {
      info *o = info_of(s, u->operands[j]);
      varies |= !o || o->varies;
    }
    created = varies && ((k & ~have) != 0 || ((k & K_NAN) && !(have & K_NAN)));
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
  for (int c = 0; c < s->m->ncomps; c++) {
    if (s->at)
      free(s->at[c]);
    if (s->seen)
      free((void *)s->seen[c]);
    if (s->sites)
      free((void *)s->sites[c]);
  }
  free(s->at);
  free((void *)s->seen);
  free((void *)s->sites);
  free(s->nsites);
  free(s->dataflow);
  free(s->stale);
}

/* Marks c and what its fusions and calls call as dataflow computations,
 * and records every call site of each.  `visited` keeps a computation
 * called from several sites from being walked (and its sites recorded)
 * more than once. */
static int map_calls(state *s, const hlo_computation *c, int depth) {
  if (!c || depth > 16 || s->dataflow[c->index])
    return 0;
  s->dataflow[c->index] = true;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *u = c->instrs[i];
    const hlo_computation *callee = callee_of(u);
    if (!callee)
      continue;
    const hlo_instr **grown = realloc((void *)s->sites[callee->index],
                                      sizeof *grown * (size_t)(s->nsites[callee->index] + 1));
    if (!grown)
      return -1;
    grown[s->nsites[callee->index]++] = u;
    s->sites[callee->index] = grown;
    if (map_calls(s, callee, depth + 1) != 0)
      return -1;
  }
  return 0;
}

static int state_init(state *s, const hlo_module *m, int nrep) {
  s->m = m;
  s->nrep = nrep;
  int nc = m->ncomps > 0 ? m->ncomps : 1;
  s->at = calloc((size_t)nc, sizeof *s->at);
  s->seen = calloc((size_t)nc, sizeof *s->seen);
  s->sites = calloc((size_t)nc, sizeof *s->sites);
  s->nsites = calloc((size_t)nc, sizeof *s->nsites);
  s->dataflow = calloc((size_t)nc, sizeof *s->dataflow);
  s->stale = calloc((size_t)nc, sizeof *s->stale);
  if (!s->at || !s->seen || !s->sites || !s->nsites || !s->dataflow || !s->stale)
    return -1;
  for (int c = 0; c < m->ncomps; c++) {
    size_t n = (size_t)(m->comps[c]->ninstrs > 0 ? m->comps[c]->ninstrs : 1);
    s->at[c] = calloc(n, sizeof **s->at);
    s->seen[c] = calloc(n * (size_t)nrep, sizeof **s->seen);
    if (!s->at[c] || !s->seen[c])
      return -1;
  }
  return map_calls(s, m->entry, 0);
}

int chk_intent_classify(const hlo_module *m, int nargs, hlo_value *const *args, const chk_eval_opts *base,
                        bool deliberate, const hlo_value *outs, chk_intent_result *r, hlo_error *err) {
  memset(r, 0, sizeof *r);
  chk_intent_count(outs, &r->nonfinite, &r->count);
  if (r->nonfinite == 0)
    return 0;
  state s = {0};
  int nrep = base->replicas > 0 ? base->replicas : 1;
  s.deliberate = deliberate;
  if (state_init(&s, m, nrep) != 0) {
    state_free(&s);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  chk_eval_opts eo = *base;
  eo.hook = hook;
  eo.hook_ctx = &s;
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
