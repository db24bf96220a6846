/* cascade.c — comparison rules by producing op, and verdict attribution. */
#include "cascade.h"

#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_numerics.h"

/* Ops that only move or select data: what comes out was computed elsewhere,
 * so the comparison rule is the rule of what fed them. */
static bool moves_data(hlo_opcode op) {
  switch (op) {
  case HLO_OP_BITCAST: case HLO_OP_COPY: case HLO_OP_RESHAPE: case HLO_OP_TRANSPOSE:
  case HLO_OP_BROADCAST: case HLO_OP_SLICE: case HLO_OP_REVERSE: case HLO_OP_DYNAMIC_SLICE:
  case HLO_OP_GATHER: case HLO_OP_GET_TUPLE_ELEMENT: case HLO_OP_ALL_GATHER:
  case HLO_OP_ALL_TO_ALL: case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_COLLECTIVE_BROADCAST:
  case HLO_OP_RAGGED_ALL_TO_ALL: case HLO_OP_OPT_BARRIER:
    return true;
  default:
    return false;
  }
}

/* Leaves are numbered depth first over the whole (possibly nested) tuple,
 * as hlo_shape_leaf numbers them, so tuple instructions are walked down to
 * the operand that holds the leaf; a tuple-shaped op that is not a tuple
 * instruction (a variadic sort, a while) is the producer of all its leaves. */
const hlo_instr *chk_leaf_producer(const hlo_computation *c, int leaf) {
  const hlo_instr *r = c->root;
  for (int depth = 0; r->op == HLO_OP_TUPLE && depth < 64; depth++) {
    const hlo_instr *next = NULL;
    for (int k = 0; k < r->noperands && !next; k++) {
      int n = hlo_shape_leaf_count(&r->operands[k]->shape);
      if (leaf < n)
        next = r->operands[k];
      else
        leaf -= n;
    }
    if (!next)
      break;
    r = next;
  }
  return r;
}

/* Does converting from `from` to `to` keep every value exactly?  A float
 * into a float type with a wider exponent range and mantissa, and an
 * integer of at most 8 bits (16 bits, 32 bits) into bf16 or f16 (f32,
 * f64), whose mantissas hold every such integer. */
static bool widens_exactly(hlo_etype from, hlo_etype to) {
  if (from == to)
    return true;
  if (from == HLO_PRED)
    return true;
  bool ffrom = hlo_etype_is_float(from) && hlo_etype_class(from) != HLO_CLASS_COMPLEX;
  bool fto = hlo_etype_is_float(to) && hlo_etype_class(to) != HLO_CLASS_COMPLEX;
  if (!fto)
    return false;
  if (ffrom)
    return to == HLO_F64 ? from == HLO_F32 || from == HLO_BF16 || from == HLO_F16
                         : to == HLO_F32 && (from == HLO_BF16 || from == HLO_F16);
  int bits = hlo_etype_bits(from);
  if (hlo_etype_class(from) != HLO_CLASS_SINT && hlo_etype_class(from) != HLO_CLASS_UINT)
    return false;
  switch (to) {
  case HLO_BF16: case HLO_F16: return bits <= 8;
  case HLO_F32: return bits <= 16;
  case HLO_F64: return bits <= 32;
  default: return false;
  }
}

/* Is the scatter's combiner "keep the update" (its root is its second
 * parameter)? */
static bool overwrites(const hlo_instr *ins) {
  const hlo_computation *c = ins->attrs.calls.to_apply;
  return c && c->root && c->root->op == HLO_OP_PARAMETER && c->nparams == 2 && c->params[1] == c->root;
}

/* A scalar float zero, seen through broadcasts: +0 or -0. */
static bool zero_constant(const hlo_instr *ins) {
  while (ins->op == HLO_OP_BROADCAST && ins->noperands == 1)
    ins = ins->operands[0];
  return ins->op == HLO_OP_CONSTANT && ins->literal && !ins->literal->elided && ins->literal->count == 1 &&
         ins->literal->f && ins->literal->f[0] == 0;
}

/* Does pred hold at most once along dimension d: an equality of an iota
 * counting along d with a broadcast that does not vary along d? */
static bool once_along(const hlo_instr *pred, int64_t d) {
  if (pred->op != HLO_OP_COMPARE || pred->noperands != 2 || pred->attrs.direction != HLO_CMP_EQ)
    return false;
  const hlo_instr *a = pred->operands[0], *b = pred->operands[1];
  if (a->op != HLO_OP_IOTA) {
    const hlo_instr *t = a;
    a = b;
    b = t;
  }
  if (a->op != HLO_OP_IOTA || a->attrs.iota_dimension != d || hlo_etype_is_float(a->shape.type) ||
      b->op != HLO_OP_BROADCAST)
    return false;
  for (int i = 0; i < b->attrs.dimensions.n; i++)
    if (b->attrs.dimensions.v[i] == d)
      return false;
  return true;
}

/* The value a one-hot pick picks from, or NULL when ins is none: an
 * add-reduce from a zero init, over one dimension d, of select(p, x, 0)
 * with p true at most once along d.  Each output is then one x (or +0
 * where p never holds) plus zeros, the same bits in every order. */
static const hlo_instr *one_hot_source(const hlo_instr *ins) {
  if (ins->op != HLO_OP_REDUCE || ins->noperands != 2 || ins->attrs.dimensions.n != 1 ||
      hlo_simple_reducer(ins->attrs.calls.to_apply) != HLO_OP_ADD || !zero_constant(ins->operands[1]))
    return NULL;
  const hlo_instr *sel = ins->operands[0];
  if (sel->op != HLO_OP_SELECT || sel->noperands != 3 || !zero_constant(sel->operands[2]) ||
      !once_along(sel->operands[0], ins->attrs.dimensions.v[0]))
    return NULL;
  return sel->operands[1];
}

/* Does no path from the parameters to ins pass through an op that rounds?
 * Then every correct implementation computes the same bits (issue 13 item
 * 3): data movement, select, max/min/clamp, abs, negate, integer and pred
 * values, converts that widen exactly, dynamic-update-slice, a scatter
 * that overwrites, and a one-hot pick of such a value. */
static bool bitwise_source(const hlo_instr *ins, int depth) {
  if (depth > 64)
    return false;
  hlo_etype t = ins->shape.type;
  if (t != HLO_TUPLE && !hlo_etype_is_float(t) && hlo_etype_class(t) != HLO_CLASS_COMPLEX)
    return true; /* integer and pred arithmetic does not round */
  if (ins->op == HLO_OP_PARAMETER || ins->op == HLO_OP_CONSTANT || ins->op == HLO_OP_IOTA)
    return true;
  if (ins->op == HLO_OP_REDUCE || ins->op == HLO_OP_REDUCE_WINDOW) {
    hlo_opcode r = hlo_simple_reducer(ins->attrs.calls.to_apply);
    const hlo_instr *picked = one_hot_source(ins);
    if (picked)
      return bitwise_source(picked, depth + 1);
    /* A max or min only chooses among its operands, so it is exact when
     * they are: the max of exp(x) differs by an ulp wherever exp(x) does. */
    if (r != HLO_OP_MAXIMUM && r != HLO_OP_MINIMUM)
      return false;
    for (int k = 0; k < ins->noperands; k++)
      if (!bitwise_source(ins->operands[k], depth + 1))
        return false;
    return true;
  }
  if (ins->op == HLO_OP_SORT) {
    /* Sorting permutes values and computes none; but keys rounded
     * differently may sort differently, and rounded values stay rounded. */
    for (int k = 0; k < ins->noperands; k++)
      if (!bitwise_source(ins->operands[k], depth + 1))
        return false;
    return true;
  }
  if (moves_data(ins->op) && ins->noperands >= 1)
    return bitwise_source(ins->operands[0], depth + 1);
  if (ins->op == HLO_OP_CONVERT)
    return ins->noperands == 1 && widens_exactly(ins->operands[0]->shape.type, t) &&
           bitwise_source(ins->operands[0], depth + 1);
  bool all_operands = false;
  switch (ins->op) {
  case HLO_OP_CONCATENATE: case HLO_OP_PAD: case HLO_OP_SELECT: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM:
  case HLO_OP_CLAMP: case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_DYNAMIC_UPDATE_SLICE:
    all_operands = true;
    break;
  case HLO_OP_SCATTER:
    all_operands = overwrites(ins);
    break;
  default:
    break;
  }
  if (!all_operands)
    return false;
  /* Every data operand must itself be a bitwise source (select's predicate
   * and the index operands are data too: they only choose). */
  for (int k = 0; k < ins->noperands; k++)
    if (!bitwise_source(ins->operands[k], depth + 1))
      return false;
  return true;
}

chk_rule chk_leaf_rule(const hlo_computation *c, int leaf) {
  const hlo_shape *s = hlo_shape_leaf(&c->root->shape, leaf);
  if (!s || (!hlo_etype_is_float(s->type) && hlo_etype_class(s->type) != HLO_CLASS_COMPLEX))
    return CHK_RULE_BITWISE;
  return bitwise_source(chk_leaf_producer(c, leaf), 0) ? CHK_RULE_BITWISE : CHK_RULE_TOLERANCE;
}

/* chk_leaf_round_rel for the value of ins.  Why the approximations need
 * their own bound: an approximation is neither correctly rounded nor
 * monotone at the ulp level, so an input change far below any
 * accumulation's error can move its result by several ulps.  The device's
 * tanh (hlo_numerics.c) is t = e / (e + 2), e = expm1(2|x|): for |x| in
 * [8.6, 9.1) e is above 2^25, e + 2 rounds to e or to e + 4, and t steps
 * between 1 - 2^-23 and 1 (two ulps of the value below 1) wherever the
 * rounding of e + 2 flips.  Its documented bound, 2.5 ulps of the exact
 * tanh, covers those steps: each side is within 2.5 ulp(tanh x) <=
 * 5 u_f32 |tanh x| of the exact value at its own input, however close the
 * two inputs are.  The one ulp (2 u_t) that the correctly rounded rule
 * allows falls just short of a two-ulp step below 1. */
static double round_rel(const hlo_instr *ins, int depth) {
  hlo_etype t = ins->shape.type;
  double u = chk_unit_roundoff(t);
  if (depth > 64 || u == 0)
    return u;
  if (moves_data(ins->op) && ins->noperands >= 1)
    return round_rel(ins->operands[0], depth + 1);
  if (ins->op == HLO_OP_CONVERT && ins->noperands == 1) {
    double r = round_rel(ins->operands[0], depth + 1);
    if (widens_exactly(ins->operands[0]->shape.type, t))
      return r;
    return u + r * (1.0 + u);
  }
  switch (ins->op) {
  case HLO_OP_SELECT: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_CLAMP: case HLO_OP_CONCATENATE:
  case HLO_OP_PAD: case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_DYNAMIC_UPDATE_SLICE: {
    /* the value is one of the float operands' values, unchanged */
    double r = 0;
    for (int k = 0; k < ins->noperands; k++)
      if (ins->operands[k]->shape.type == t) {
        double rk = round_rel(ins->operands[k], depth + 1);
        if (rk > r)
          r = rk;
      }
    return r > 0 ? r : u;
  }
  default:
    break;
  }
  double e = hlo_num_ulp_bound(ins->op);
  if (e <= 0.5)
    return u; /* correctly rounded: |y~ - y| <= u |y~| */
  double u32 = chk_unit_roundoff(HLO_F32), r32 = 2.0 * e * u32 / (1.0 - 2.0 * e * u32);
  /* bf16 and f16 ops compute in f32 and round the result to their type */
  return t == HLO_F32 ? r32 : u > u32 ? u + r32 * (1.0 + u) : r32;
}

double chk_leaf_round_rel(const hlo_computation *c, int leaf) {
  const hlo_shape *s = hlo_shape_leaf(&c->root->shape, leaf);
  if (!s || !hlo_etype_is_float(s->type))
    return 0;
  double r = round_rel(chk_leaf_producer(c, leaf), 0);
  /* the leaf's own type rounds last (a tuple leaf of a variadic op) */
  double u = chk_unit_roundoff(s->type);
  return r > u ? r : u;
}

static bool depends(const hlo_instr *ins, const hlo_instr *hero, unsigned char *seen) {
  if (ins == hero)
    return true;
  if (seen[ins->index])
    return false;
  seen[ins->index] = 1;
  for (int k = 0; k < ins->noperands; k++)
    if (depends(ins->operands[k], hero, seen))
      return true;
  return false;
}

bool chk_leaf_depends_on(const hlo_computation *c, int leaf, const hlo_instr *hero) {
  if (!hero || hero->parent != c)
    return hero != NULL; /* a hero in a called computation: assume it feeds */
  unsigned char *seen = calloc((size_t)c->ninstrs, 1);
  if (!seen)
    return true;
  bool d = depends(chk_leaf_producer(c, leaf), hero, seen);
  free(seen);
  return d;
}

static int leaves(const hlo_value *v, const hlo_value **out, int n, int cap) {
  if (v->type != HLO_TUPLE) {
    if (n < cap)
      out[n] = v;
    return n + 1;
  }
  for (int i = 0; i < v->ntuple; i++)
    n = leaves(v->elems[i], out, n, cap);
  return n;
}

enum { MAX_LEAVES = 256 };

int chk_compare_values(const hlo_value *a, const hlo_value *b, const chk_leaf_check *checks, int nchecks,
                       chk_metrics *worst, bool *identical, bool *within, hlo_error *err) {
  const hlo_value *la[MAX_LEAVES], *lb[MAX_LEAVES];
  int na = leaves(a, la, 0, MAX_LEAVES), nb = leaves(b, lb, 0, MAX_LEAVES);
  if (na != nb)
    return hlo_error_set(err, 0, 0, "outputs have %d and %d leaves", na, nb);
  if (na > MAX_LEAVES)
    return hlo_error_set(err, 0, 0, "more than %d output leaves", MAX_LEAVES);
  /* A leaf without a rule would be judged by whatever the caller's array
   * happened to hold: refuse rather than guess. */
  if (na != nchecks)
    return hlo_error_set(err, 0, 0, "outputs have %d leaves but %d comparison rules were given", na, nchecks);
  int worst_leaf = -1;
  *identical = true;
  *within = true;
  memset(worst, 0, sizeof *worst);
  worst->peak_index = -1;
  for (int i = 0; i < na; i++) {
    chk_metrics m;
    if (chk_compare_map(la[i], lb[i], checks[i].rule, checks[i].tol, checks[i].atol_map, &m, err) != 0)
      return -1;
    bool same = la[i]->count == 0 ||
                memcmp(la[i]->data, lb[i]->data, (size_t)la[i]->count * la[i]->elem_size) == 0;
    *identical = *identical && same;
    if (checks[i].checked && m.mismatches > 0)
      *within = false;
    bool worse = worst_leaf < 0 || m.mismatches > worst->mismatches ||
                 (m.mismatches == worst->mismatches && m.max_abs > worst->max_abs);
    if (worse) {
      *worst = m;
      worst_leaf = i;
    }
  }
  return worst_leaf < 0 ? 0 : worst_leaf;
}

chk_verdict chk_attribute(bool identical, bool cand_vs_default_within, bool cand_vs_ref_within,
                          bool default_vs_ref_within) {
  if (identical)
    return CHK_VERDICT_MATCH;
  if (cand_vs_default_within)
    return CHK_VERDICT_BENIGN;
  if (cand_vs_ref_within && !default_vs_ref_within)
    return CHK_VERDICT_MISMATCH_DEFAULT;
  if (!cand_vs_ref_within && default_vs_ref_within)
    return CHK_VERDICT_MISMATCH_CANDIDATE;
  if (!cand_vs_ref_within && !default_vs_ref_within)
    return CHK_VERDICT_MISMATCH_BOTH;
  return CHK_VERDICT_BENIGN;
}
