/* intervals.c — the backward interval analysis (rules in intervals.h).
 *
 * Per computation (per call site for called ones):
 *   forward   fwd[i]: the values instruction i can take given the ranges of
 *             the parameters, and whether it depends on them at all;
 *   backward  dem[i]: what instruction i's values must satisfy, pushed from
 *             the root towards the parameters in reverse source order (HLO
 *             text lists operands before users, so every user of i has
 *             added its demand before i passes its own on).
 * Demands are intersected; when two demands on one value contradict, the
 * first one kept wins, so the result is always a usable range.
 */
#include "intervals.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_types.h"

#define MAX_DEPTH 8

typedef struct fwd {
  double lo, hi;
  bool varies; /* depends on a parameter */
  /* May hold -inf / +inf put there on purpose: a constant of the module
   * (a mask) moved, selected or added in.  Kept apart from lo/hi, which
   * are also infinite when a range is merely unknown. */
  bool ninf, pinf;
} fwd;

chk_range chk_range_any(void) { return (chk_range){-INFINITY, INFINITY, 0, false}; }

bool chk_range_is_any(const chk_range *r) {
  return r->lo == -INFINITY && r->hi == INFINITY && r->min_mag == 0 && !r->sort_key;
}

static const fwd UNKNOWN = {.lo = -INFINITY, .hi = INFINITY, .varies = true};

/* A range with no infinity flags. */
static fwd range3(double lo, double hi, bool varies) { return (fwd){.lo = lo, .hi = hi, .varies = varies}; }

/* ---- type limits ---------------------------------------------------------- */

static double max_finite(hlo_etype t) {
  switch (t) {
  case HLO_F16: return 65504.0;
  case HLO_BF16: return 3.3895313892515355e38;
  case HLO_F32: return 3.4028234663852886e38;
  case HLO_F64: return 1.7976931348623157e308;
  case HLO_F8E5M2: case HLO_F8E5M2FNUZ: return 57344.0;
  case HLO_F8E4M3: case HLO_F8E4M3FNUZ: return 240.0;
  case HLO_F8E4M3FN: return 448.0;
  case HLO_F8E4M3B11FNUZ: return 30.0;
  case HLO_F8E3M4: return 15.5;
  case HLO_F8E8M0FNU: return 0x1p127;
  case HLO_F4E2M1FN: return 6.0;
  default: return INFINITY;
  }
}

/* The largest magnitude a float value of type t is asked to stay under.
 * Wide types keep a factor 16 of headroom, so that the few ops the analysis
 * does not model (a sum the reference and a candidate order differently, a
 * scale applied after) do not reach overflow either; fp8 and fp4 have too
 * little range to spare, and their converts are usually clamped anyway. */
double chk_intervals_cap(hlo_etype t) {
  double m = max_finite(t);
  return hlo_etype_bits(t) >= 16 ? m / 16 : m;
}

/* ---- demands -------------------------------------------------------------- */

static chk_range between(double lo, double hi) { return (chk_range){lo, hi, 0, false}; }

/* Intersects d into *into; a contradiction keeps *into as it was. */
static void meet(chk_range *into, chk_range d) {
  chk_range r = *into;
  if (d.lo > r.lo)
    r.lo = d.lo;
  if (d.hi < r.hi)
    r.hi = d.hi;
  if (d.min_mag > r.min_mag)
    r.min_mag = d.min_mag;
  r.sort_key |= d.sort_key;
  bool empty = r.lo > r.hi || (r.min_mag > 0 && r.lo > -r.min_mag && r.hi < r.min_mag);
  if (empty) {
    into->sort_key |= d.sort_key;
    return;
  }
  *into = r;
}

/* ---- one computation ------------------------------------------------------ */

typedef struct frame {
  const hlo_computation *c;
  fwd *f;          /* per instruction index */
  chk_range *dem;  /* per instruction index; NULL in a forward-only frame */
  int depth;
} frame;

static int analyze(const hlo_computation *c, const fwd *params, const chk_range *root_demand,
                   chk_range *param_out, fwd *root_out, int depth);

static fwd F(const frame *fr, const hlo_instr *x) {
  if (x->parent != fr->c || x->index < 0 || x->index >= fr->c->ninstrs)
    return UNKNOWN;
  return fr->f[x->index];
}

static fwd hull(fwd a, fwd b) {
  return range3(fmin(a.lo, b.lo), fmax(a.hi, b.hi), a.varies || b.varies);
}

static fwd literal_range(const hlo_literal *l) {
  fwd r = range3(INFINITY, -INFINITY, false);
  if (!l || l->elided || l->ntuple > 0 || l->count <= 0)
    return range3(-INFINITY, INFINITY, false);
  for (int64_t i = 0; i < l->count; i++) {
    double x = l->f ? l->f[i] : l->i ? (double)l->i[i] : l->u ? (double)l->u[i] : 0;
    if (isnan(x))
      return range3(-INFINITY, INFINITY, false);
    r.lo = fmin(r.lo, x);
    r.hi = fmax(r.hi, x);
  }
  return r;
}

/* Which of a and b a select keeps, read from an ordering compare of the
 * two anywhere in the reducer: MAXIMUM when it keeps the greater, MINIMUM
 * when the lesser, SELECT when no compare orders them (a payload chosen
 * along with another element's key, like argmax's index when the index
 * plays no tie-break). */
static hlo_opcode select_kind(const hlo_computation *c, const hlo_instr *sel, const hlo_instr *a,
                              const hlo_instr *b) {
  const hlo_instr *x = sel->operands[1];
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *u = c->instrs[i];
    if (u->op != HLO_OP_COMPARE || u->noperands != 2)
      continue;
    const hlo_instr *p = u->operands[0], *q = u->operands[1];
    if (!((p == a && q == b) || (p == b && q == a)))
      continue;
    bool greater;
    switch (u->attrs.direction) {
    case HLO_CMP_GT: case HLO_CMP_GE: greater = true; break;
    case HLO_CMP_LT: case HLO_CMP_LE: greater = false; break;
    default: continue;
    }
    /* The predicate holds when p is the greater (GT) one; the select then
     * keeps its first branch x.  (The predicate may be an or/and of this
     * compare with NaN checks and tie-breaks: it still follows it.) */
    return greater == (x == p) ? HLO_OP_MAXIMUM : HLO_OP_MINIMUM;
  }
  return HLO_OP_SELECT;
}

/* What element j of an n-operand reducer c computes from a_j (parameter j)
 * and b_j (parameter n + j): the opcode of an op combining exactly those
 * two (add, multiply, maximum, minimum, and, or), or for a select of the
 * two what select_kind says.  A single reducer's root is the op itself, a
 * variadic one's a tuple of n of them.  INVALID for anything else. */
static hlo_opcode reducer_elem(const hlo_computation *c, int n, int j) {
  if (!c || !c->root || n < 1 || c->nparams != 2 * n || j < 0 || j >= n)
    return HLO_OP_INVALID;
  const hlo_instr *e = c->root;
  if (e->op == HLO_OP_TUPLE) {
    if (e->noperands != n)
      return HLO_OP_INVALID;
    e = e->operands[j];
  } else if (n != 1) {
    return HLO_OP_INVALID;
  }
  const hlo_instr *a = c->params[j], *b = c->params[n + j];
  if (!a || !b || a == b)
    return HLO_OP_INVALID;
  if (e->op == HLO_OP_SELECT && e->noperands == 3) {
    const hlo_instr *x = e->operands[1], *y = e->operands[2];
    return (x == a && y == b) || (x == b && y == a) ? select_kind(c, e, a, b) : HLO_OP_INVALID;
  }
  if (e->noperands != 2)
    return HLO_OP_INVALID;
  const hlo_instr *x = e->operands[0], *y = e->operands[1];
  return (x == a && y == b) || (x == b && y == a) ? e->op : HLO_OP_INVALID;
}

/* The reducer of a single-operand reduce-like op. */
static hlo_opcode reducer_of(const hlo_computation *c) {
  hlo_opcode r = reducer_elem(c, 1, 0);
  return r == HLO_OP_SELECT ? HLO_OP_INVALID : r;
}

/* Number of elements each reduce result sums over. */
static int64_t reduce_len(const hlo_instr *u) {
  const hlo_shape *s = &u->operands[0]->shape;
  int64_t k = 1;
  if (s->type == HLO_TUPLE)
    return 1;
  for (int i = 0; i < u->attrs.dimensions.n; i++) {
    int64_t d = u->attrs.dimensions.v[i];
    if (d >= 0 && d < s->rank)
      k *= s->dims[d];
  }
  return k > 0 ? k : 1;
}

static int64_t window_len(const hlo_instr *u) {
  int64_t k = 1;
  for (int i = 0; i < u->attrs.window.rank; i++)
    k *= u->attrs.window.dims[i].size > 0 ? u->attrs.window.dims[i].size : 1;
  return k;
}

static int64_t dot_len(const hlo_instr *u) {
  const hlo_shape *s = &u->operands[0]->shape;
  int64_t k = 1;
  for (int i = 0; i < u->attrs.dot.lhs_contracting.n; i++) {
    int64_t d = u->attrs.dot.lhs_contracting.v[i];
    if (d >= 0 && d < s->rank)
      k *= s->dims[d];
  }
  return k > 0 ? k : 1;
}

static int64_t conv_len(const hlo_instr *u) {
  const hlo_shape *s = &u->operands[1]->shape;
  int64_t k = 1;
  for (int d = 0; d < s->rank; d++)
    if (d != u->attrs.conv.kernel_output_feature)
      k *= s->dims[d];
  return k > 0 ? k : 1;
}

static fwd mul_range(fwd a, fwd b) {
  double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  fwd r = range3(INFINITY, -INFINITY, a.varies || b.varies);
  for (int i = 0; i < 4; i++) {
    if (isnan(p[i])) /* 0 * inf */
      return range3(-INFINITY, INFINITY, r.varies);
    r.lo = fmin(r.lo, p[i]);
    r.hi = fmax(r.hi, p[i]);
  }
  return r;
}

static fwd scale_range(fwd a, double k) { return range3(a.lo * k, a.hi * k, a.varies); }

/* Forward range of one instruction from its operands' ranges (the
 * infinity flags are forward_one's). */
static fwd forward_range(const frame *fr, const hlo_instr *u, const fwd *params) {
  fwd a = u->noperands > 0 ? F(fr, u->operands[0]) : UNKNOWN;
  fwd b = u->noperands > 1 ? F(fr, u->operands[1]) : UNKNOWN;
  bool any = false;
  for (int j = 0; j < u->noperands; j++)
    any |= F(fr, u->operands[j]).varies;
  switch (u->op) {
  case HLO_OP_PARAMETER:
    return u->parameter_number >= 0 && u->parameter_number < fr->c->nparams ? params[u->parameter_number]
                                                                             : UNKNOWN;
  case HLO_OP_CONSTANT:
    return literal_range(u->literal);
  case HLO_OP_IOTA: {
    int64_t d = u->attrs.iota_dimension;
    double n = d >= 0 && d < u->shape.rank ? (double)u->shape.dims[d] : 1;
    return range3(0, n - 1, false);
  }
  case HLO_OP_COPY: case HLO_OP_RESHAPE: case HLO_OP_BITCAST: case HLO_OP_BROADCAST:
  case HLO_OP_TRANSPOSE: case HLO_OP_SLICE: case HLO_OP_REVERSE: case HLO_OP_CONVERT:
  case HLO_OP_REDUCE_PRECISION: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_GATHER:
    return range3(a.lo, a.hi, any);
  /* Tuples are tracked as the hull of their elements, and a demand on one
   * element is asked of all: coarse, but it carries the ranges and demands
   * of multi-output fusions (a tuple root read back through
   * get-tuple-element) instead of losing them. */
  case HLO_OP_GET_TUPLE_ELEMENT:
    return range3(a.lo, a.hi, any);
  case HLO_OP_TUPLE:
  case HLO_OP_CONCATENATE: {
    if (u->noperands == 0)
      return range3(-INFINITY, INFINITY, false);
    fwd r = a;
    for (int j = 1; j < u->noperands; j++)
      r = hull(r, F(fr, u->operands[j]));
    return r;
  }
  case HLO_OP_PAD: case HLO_OP_DYNAMIC_UPDATE_SLICE:
    return hull(a, b);
  case HLO_OP_SELECT:
    return u->noperands == 3 ? hull(b, F(fr, u->operands[2])) : UNKNOWN;
  case HLO_OP_CLAMP: {
    fwd x = b, hi = u->noperands == 3 ? F(fr, u->operands[2]) : UNKNOWN;
    return range3(fmax(a.lo, fmin(x.lo, hi.lo)), fmin(hi.hi, fmax(x.hi, a.hi)), any);
  }
  case HLO_OP_ADD: return range3(a.lo + b.lo, a.hi + b.hi, any);
  case HLO_OP_SUBTRACT: return range3(a.lo - b.hi, a.hi - b.lo, any);
  case HLO_OP_NEGATE: return range3(-a.hi, -a.lo, any);
  case HLO_OP_MULTIPLY:
    if (u->operands[0] == u->operands[1]) {
      double m = fmax(a.lo * a.lo, a.hi * a.hi);
      return range3(a.lo <= 0 && a.hi >= 0 ? 0 : fmin(a.lo * a.lo, a.hi * a.hi), m, any);
    }
    return mul_range(a, b);
  case HLO_OP_DIVIDE:
    if (b.lo > 0 || b.hi < 0)
      return mul_range(a, range3(1 / b.hi, 1 / b.lo, b.varies));
    return range3(-INFINITY, INFINITY, any);
  case HLO_OP_MAXIMUM: return range3(fmax(a.lo, b.lo), fmax(a.hi, b.hi), any);
  case HLO_OP_MINIMUM: return range3(fmin(a.lo, b.lo), fmin(a.hi, b.hi), any);
  case HLO_OP_ABS:
    return range3(a.lo <= 0 && a.hi >= 0 ? 0 : fmin(fabs(a.lo), fabs(a.hi)), fmax(fabs(a.lo), fabs(a.hi)), any);
  case HLO_OP_EXP: return range3(exp(a.lo), exp(a.hi), any);
  case HLO_OP_EXPM1: return range3(expm1(a.lo), expm1(a.hi), any);
  case HLO_OP_LOG: return a.lo > 0 ? range3(log(a.lo), log(a.hi), any) : range3(-INFINITY, INFINITY, any);
  case HLO_OP_LOG1P: return a.lo > -1 ? range3(log1p(a.lo), log1p(a.hi), any) : range3(-INFINITY, INFINITY, any);
  case HLO_OP_SQRT: return a.lo >= 0 ? range3(sqrt(a.lo), sqrt(a.hi), any) : range3(-INFINITY, INFINITY, any);
  case HLO_OP_RSQRT: return a.lo > 0 ? range3(1 / sqrt(a.hi), 1 / sqrt(a.lo), any) : range3(-INFINITY, INFINITY, any);
  case HLO_OP_TANH: case HLO_OP_SINE: case HLO_OP_COSINE: case HLO_OP_ERF: case HLO_OP_SIGN:
    return range3(-1, 1, any);
  case HLO_OP_LOGISTIC: return range3(0, 1, any);
  case HLO_OP_COMPARE: case HLO_OP_IS_FINITE: return range3(0, 1, any);
  case HLO_OP_FLOOR: case HLO_OP_CEIL: case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN:
    return range3(floor(a.lo), ceil(a.hi), any);
  case HLO_OP_REDUCE:
  case HLO_OP_REDUCE_WINDOW: {
    if (u->noperands != 2)
      return range3(-INFINITY, INFINITY, any);
    double k = (double)(u->op == HLO_OP_REDUCE ? reduce_len(u) : window_len(u));
    switch (reducer_of(u->attrs.calls.to_apply)) {
    case HLO_OP_ADD: return range3(fmin(a.lo * k, a.lo) + b.lo, fmax(a.hi * k, a.hi) + b.hi, any);
    case HLO_OP_MAXIMUM: return range3(fmax(a.lo, b.lo), fmax(a.hi, b.hi), any);
    case HLO_OP_MINIMUM: return range3(fmin(a.lo, b.lo), fmin(a.hi, b.hi), any);
    default: return range3(-INFINITY, INFINITY, any);
    }
  }
  case HLO_OP_DOT:
    return scale_range(mul_range(a, b), (double)dot_len(u));
  case HLO_OP_CONVOLUTION:
    return scale_range(mul_range(a, b), (double)conv_len(u));
  case HLO_OP_FUSION:
  case HLO_OP_CALL: {
    const hlo_computation *callee = u->op == HLO_OP_FUSION ? u->attrs.calls.calls
                                    : u->attrs.calls.to_apply ? u->attrs.calls.to_apply
                                                              : u->attrs.calls.calls;
    if (!callee || fr->depth >= MAX_DEPTH || callee->nparams > u->noperands)
      return range3(-INFINITY, INFINITY, any);
    fwd *pf = calloc((size_t)(callee->nparams > 0 ? callee->nparams : 1), sizeof *pf);
    if (!pf)
      return range3(-INFINITY, INFINITY, any);
    for (int k = 0; k < callee->nparams; k++)
      pf[k] = F(fr, u->operands[k]);
    fwd root = range3(-INFINITY, INFINITY, any);
    if (analyze(callee, pf, NULL, NULL, &root, fr->depth + 1) != 0)
      root = range3(-INFINITY, INFINITY, any);
    free(pf);
    return root;
  }
  default:
    return range3(-INFINITY, INFINITY, any || u->noperands == 0);
  }
}

/* Whether a literal holds -inf or +inf. */
static void literal_infs(const hlo_literal *l, bool *ninf, bool *pinf) {
  if (!l || l->elided || l->ntuple > 0 || !l->f)
    return;
  for (int64_t i = 0; i < l->count; i++)
    if (isinf(l->f[i]))
      *(l->f[i] < 0 ? ninf : pinf) = true;
}

/* The infinities a product can hold when factor a may be infinite: the
 * sign of a's infinity times the signs b can take.  (A zero b makes NaN,
 * which is no infinity: the demand of backward_inf_factor prevents it.) */
static void product_infs(fwd a, fwd b, bool *ninf, bool *pinf) {
  if (a.ninf) {
    *ninf |= b.hi > 0;
    *pinf |= b.lo < 0;
  }
  if (a.pinf) {
    *pinf |= b.hi > 0;
    *ninf |= b.lo < 0;
  }
}

/* The forward range and the infinity flags of one instruction.  Flags
 * follow the ops that move, select or add a constant's infinity in; any
 * other op is taken to make finite values of it (exp(-inf) = 0) or to be
 * none of the analysis's business (intent.h judges what it makes). */
static fwd forward_one(const frame *fr, const hlo_instr *u, const fwd *params) {
  fwd r = forward_range(fr, u, params);
  fwd a = u->noperands > 0 ? F(fr, u->operands[0]) : UNKNOWN;
  fwd b = u->noperands > 1 ? F(fr, u->operands[1]) : UNKNOWN;
  bool ninf = false, pinf = false;
  switch (u->op) {
  case HLO_OP_PARAMETER:
    if (u->parameter_number >= 0 && u->parameter_number < fr->c->nparams) {
      ninf = params[u->parameter_number].ninf;
      pinf = params[u->parameter_number].pinf;
    }
    break;
  case HLO_OP_CONSTANT:
    literal_infs(u->literal, &ninf, &pinf);
    break;
  case HLO_OP_COPY: case HLO_OP_RESHAPE: case HLO_OP_BITCAST: case HLO_OP_BROADCAST:
  case HLO_OP_TRANSPOSE: case HLO_OP_SLICE: case HLO_OP_REVERSE: case HLO_OP_CONVERT:
  case HLO_OP_REDUCE_PRECISION: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_GATHER:
    ninf = a.ninf;
    pinf = a.pinf;
    break;
  case HLO_OP_GET_TUPLE_ELEMENT:
    ninf = a.ninf;
    pinf = a.pinf;
    break;
  case HLO_OP_CONCATENATE: case HLO_OP_PAD: case HLO_OP_DYNAMIC_UPDATE_SLICE: case HLO_OP_ADD:
  case HLO_OP_TUPLE:
    for (int j = 0; j < u->noperands; j++) {
      ninf |= F(fr, u->operands[j]).ninf;
      pinf |= F(fr, u->operands[j]).pinf;
    }
    break;
  /* max(x, -inf) is x: a -inf survives a maximum only from both sides. */
  case HLO_OP_MAXIMUM:
    ninf = a.ninf && b.ninf;
    pinf = a.pinf || b.pinf;
    break;
  case HLO_OP_MINIMUM:
    ninf = a.ninf || b.ninf;
    pinf = a.pinf && b.pinf;
    break;
  case HLO_OP_REDUCE:
  case HLO_OP_REDUCE_WINDOW: {
    /* The reduced values' infinities; an init's too, unless the reducer
     * is a maximum or minimum, for which a -inf (+inf) init is the neutral
     * element that no output keeps while there is anything to reduce. */
    int n = u->noperands / 2;
    hlo_opcode red = n == 1 ? reducer_of(u->attrs.calls.to_apply) : HLO_OP_INVALID;
    bool extreme = red == HLO_OP_MAXIMUM || red == HLO_OP_MINIMUM;
    for (int j = 0; j < u->noperands; j++) {
      if (j >= n && extreme)
        continue;
      ninf |= F(fr, u->operands[j]).ninf;
      pinf |= F(fr, u->operands[j]).pinf;
    }
    break;
  }
  case HLO_OP_SELECT: case HLO_OP_CLAMP:
    for (int j = 1; j < u->noperands; j++) {
      ninf |= F(fr, u->operands[j]).ninf;
      pinf |= F(fr, u->operands[j]).pinf;
    }
    break;
  case HLO_OP_SUBTRACT:
    ninf = a.ninf || b.pinf;
    pinf = a.pinf || b.ninf;
    break;
  case HLO_OP_NEGATE:
    ninf = a.pinf;
    pinf = a.ninf;
    break;
  case HLO_OP_MULTIPLY: case HLO_OP_DOT: case HLO_OP_CONVOLUTION:
    product_infs(a, b, &ninf, &pinf);
    product_infs(b, a, &ninf, &pinf);
    break;
  case HLO_OP_FUSION: case HLO_OP_CALL:
    ninf = r.ninf; /* from the callee's root (forward_range) */
    pinf = r.pinf;
    break;
  default:
    break;
  }
  r.ninf = ninf;
  r.pinf = pinf;
  return r;
}

/* ---- backward rules ------------------------------------------------------- */

/* Adds demand d on x (ignored when x does not depend on parameters). */
static void ask(frame *fr, const hlo_instr *x, chk_range d) {
  if (x->parent != fr->c || x->index < 0 || x->index >= fr->c->ninstrs || !fr->f[x->index].varies)
    return;
  meet(&fr->dem[x->index], d);
}

/* A demand for "|v| >= m" on a value whose sign an op cannot keep random
 * (a sum, a product of sums): asking it to be >= m instead suffices. */
static chk_range positive_for_mag(chk_range d) {
  if (d.min_mag > 0 && d.lo < d.min_mag && d.hi >= d.min_mag)
    d.lo = d.min_mag;
  d.min_mag = 0;
  return d;
}

/* a + b with demand d: a sufficient pair of demands on a and b. */
static void split_sum(fwd fa, fwd fb, chk_range d, chk_range *da, chk_range *db) {
  *da = *db = chk_range_any();
  if (!fb.varies) { /* exact shift past a fixed operand */
    *da = between(d.lo - fb.lo, d.hi - fb.hi);
    return;
  }
  if (!fa.varies) {
    *db = between(d.lo - fa.lo, d.hi - fa.hi);
    return;
  }
  if (d.lo > -INFINITY) {
    if (fb.lo >= d.lo / 2)
      da->lo = d.lo - fb.lo;
    else if (fa.lo >= d.lo / 2)
      db->lo = d.lo - fa.lo;
    else
      da->lo = db->lo = d.lo / 2;
  }
  if (d.hi < INFINITY) {
    if (fb.hi <= d.hi / 2)
      da->hi = d.hi - fb.hi;
    else if (fa.hi <= d.hi / 2)
      db->hi = d.hi - fa.hi;
    else
      da->hi = db->hi = d.hi / 2;
  }
}

/* x * c for a fixed c of range fc that excludes 0: the demand on x. */
static chk_range div_by_fixed(chk_range d, fwd fc) {
  double cmin = fmin(fabs(fc.lo), fabs(fc.hi)), cmax = fmax(fabs(fc.lo), fabs(fc.hi));
  chk_range r = chk_range_any();
  if (fc.hi < 0) { /* negative factor: flip the demand */
    double t = d.lo;
    d.lo = d.hi == INFINITY ? -INFINITY : -d.hi;
    d.hi = t == -INFINITY ? INFINITY : -t;
  }
  r.lo = d.lo >= 0 ? d.lo / cmin : d.lo / cmax;
  r.hi = d.hi >= 0 ? d.hi / cmax : d.hi / cmin;
  r.min_mag = d.min_mag / cmin;
  return r;
}

/* Two varying factors, or the K terms of a dot: each factor's demand so
 * that the product (times k) meets d. */
static chk_range factor_demand(chk_range d, double k) {
  d = positive_for_mag(d);
  chk_range r = chk_range_any();
  double m = fmax(fabs(d.lo), fabs(d.hi));
  if (d.lo <= 0 && d.hi >= 0 && isfinite(m))
    r = between(-sqrt(m / k), sqrt(m / k));
  else if (d.lo > 0) /* both factors positive */
    r = between(sqrt(d.lo / k), isfinite(d.hi) ? sqrt(d.hi / k) : INFINITY);
  else if (d.hi < 0) /* sign split: left to the caller's a >= 0 rule */
    r = chk_range_any();
  return r;
}

/* The lowest and highest values of an integer or pred type. */
static void int_limits(hlo_etype t, double *lo, double *hi) {
  int bits = hlo_etype_bits(t);
  if (hlo_etype_class(t) == HLO_CLASS_PRED) {
    *lo = 0;
    *hi = 1;
  } else if (hlo_etype_class(t) == HLO_CLASS_SINT) {
    *lo = -ldexp(1, bits - 1);
    *hi = ldexp(1, bits - 1) - 1;
  } else {
    *lo = 0;
    *hi = ldexp(1, bits) - 1;
  }
}

/* The neutral element of a reducer (an element of one, reducer_elem), as a
 * point demand on a parameter init. */
static bool neutral(hlo_opcode red, hlo_etype t, chk_range *out) {
  bool fl = hlo_etype_is_float(t);
  double lo = -INFINITY, hi = INFINITY;
  if (fl) { /* the finite extremes rather than -inf: neutral for every
             * finite input, and the inputs stay finite */
    lo = -max_finite(t);
    hi = max_finite(t);
  } else if (hlo_etype_class(t) == HLO_CLASS_SINT || hlo_etype_class(t) == HLO_CLASS_UINT ||
             hlo_etype_class(t) == HLO_CLASS_PRED) {
    int_limits(t, &lo, &hi);
  }
  switch (red) {
  case HLO_OP_ADD: case HLO_OP_OR: *out = between(0, 0); return true;
  case HLO_OP_MULTIPLY: *out = between(1, 1); return true;
  case HLO_OP_AND: /* all bits set: true, -1, or an unsigned type's largest */
    if (fl)
      return false;
    *out = hlo_etype_class(t) == HLO_CLASS_SINT ? between(-1, -1) : between(hi, hi);
    return isfinite(hi);
  case HLO_OP_MAXIMUM: *out = between(lo, lo); return isfinite(lo);
  case HLO_OP_MINIMUM: *out = between(hi, hi); return isfinite(hi);
  /* A payload selected with a key (argmax's index): never kept while the
   * key's init is neutral, so any value does; 0, as frameworks write it. */
  case HLO_OP_SELECT: *out = between(0, 0); return true;
  default: return false;
  }
}

/* x multiplies a value that may hold a constant's infinity (a -inf mask
 * padded or selected in).  0 * inf is NaN, and so is a sum of products in
 * which infinities of both signs meet (-inf * w1 + -inf * w2 with w1 > 0 >
 * w2): NaN the inputs made, not the mask.  A factor >= CHK_POS_MIN keeps
 * every product an infinity of the mask's own sign, so the mask reaches the
 * outputs as the mask.  When the other value holds infinities of both
 * signs, an elementwise product only needs x away from zero; a sum of
 * products cannot be helped (the module mixes them itself). */
static void backward_inf_factor(frame *fr, const hlo_instr *x, fwd other, bool sums) {
  if (other.ninf != other.pinf) {
    ask(fr, x, between(CHK_POS_MIN, INFINITY));
  } else if (other.ninf && !sums) {
    chk_range m = chk_range_any();
    m.min_mag = CHK_POS_MIN;
    ask(fr, x, m);
  }
}

static void backward_reduce(frame *fr, const hlo_instr *u, chk_range d) {
  int n = u->noperands / 2;
  if (n < 1 || u->noperands != 2 * n)
    return;
  /* Each init gets the neutral element of its part of the reducer.  A
   * variadic argmax keeping the greater value and, on ties, the smaller
   * index gets (lowest value, largest index): neither is ever kept over an
   * element.  An index with no tie-break gets 0. */
  for (int j = 0; j < n; j++) {
    chk_range init;
    if (neutral(reducer_elem(u->attrs.calls.to_apply, n, j), u->operands[n + j]->shape.type, &init))
      ask(fr, u->operands[n + j], init);
  }
  if (n != 1)
    return; /* the values of a variadic reduction are selected, not summed */
  hlo_opcode red = reducer_of(u->attrs.calls.to_apply);
  fwd fi = F(fr, u->operands[1]);
  double k = (double)(u->op == HLO_OP_REDUCE ? reduce_len(u) : window_len(u));
  switch (red) {
  case HLO_OP_ADD: {
    d = positive_for_mag(d);
    ask(fr, u->operands[0], between(d.lo / k, d.hi / k));
    break;
  }
  case HLO_OP_MAXIMUM: {
    chk_range t = between(-INFINITY, d.hi);
    if (!(fi.lo >= d.lo))
      t.lo = d.lo;
    ask(fr, u->operands[0], t);
    break;
  }
  case HLO_OP_MINIMUM: {
    chk_range t = between(d.lo, INFINITY);
    if (!(fi.hi <= d.hi))
      t.hi = d.hi;
    ask(fr, u->operands[0], t);
    break;
  }
  case HLO_OP_MULTIPLY: {
    /* A product of K terms stays within m when each |term| <= m^(1/K). */
    double m = fmax(fabs(d.lo), fabs(d.hi));
    if (isfinite(m) && m > 0)
      ask(fr, u->operands[0], between(-pow(m, 1 / k), pow(m, 1 / k)));
    break;
  }
  default:
    break;
  }
}

/* Whether a sort's comparator compares operand j (its parameters 2j and
 * 2j + 1 feed a compare): the sort keys, operand 0 alone in the common
 * case, more with tie-breaks.  Without a comparator to read, operand 0. */
static bool sort_compares(const hlo_computation *cmp, int j) {
  if (!cmp || cmp->nparams < 2)
    return j == 0;
  for (int i = 0; i < cmp->ninstrs; i++) {
    const hlo_instr *u = cmp->instrs[i];
    if (u->op != HLO_OP_COMPARE)
      continue;
    for (int k = 0; k < u->noperands; k++) {
      const hlo_instr *p = u->operands[k];
      /* Through a convert or bitcast (total-order compares of floats). */
      while ((p->op == HLO_OP_CONVERT || p->op == HLO_OP_BITCAST_CONVERT || p->op == HLO_OP_BITCAST) &&
             p->noperands == 1)
        p = p->operands[0];
      if (p->op == HLO_OP_PARAMETER && (p->parameter_number == 2 * j || p->parameter_number == 2 * j + 1))
        return true;
    }
  }
  return false;
}

static void backward_one(frame *fr, const hlo_instr *u) {
  chk_range d = fr->dem[u->index];
  if (hlo_etype_is_float(u->shape.type)) {
    double cap = chk_intervals_cap(u->shape.type);
    meet(&d, between(-cap, cap));
  }
  const hlo_instr *a = u->noperands > 0 ? u->operands[0] : NULL, *b = u->noperands > 1 ? u->operands[1] : NULL;
  fwd fa = a ? F(fr, a) : UNKNOWN, fb = b ? F(fr, b) : UNKNOWN;
  chk_range pass = d;
  pass.sort_key = false;
  switch (u->op) {
  /* ---- values moved or re-typed: the demand passes through ---- */
  case HLO_OP_COPY: case HLO_OP_RESHAPE: case HLO_OP_BITCAST: case HLO_OP_BROADCAST:
  case HLO_OP_TRANSPOSE: case HLO_OP_SLICE: case HLO_OP_REVERSE: case HLO_OP_REDUCE_PRECISION:
    ask(fr, a, d);
    break;
  case HLO_OP_CONVERT:
    /* Within the destination's range: the headroom cap above did it. */
    ask(fr, a, pass);
    break;
  case HLO_OP_CONCATENATE:
  case HLO_OP_TUPLE:
    for (int j = 0; j < u->noperands; j++)
      ask(fr, u->operands[j], pass);
    break;
  case HLO_OP_GET_TUPLE_ELEMENT:
    ask(fr, a, pass);
    break;
  case HLO_OP_PAD: case HLO_OP_DYNAMIC_SLICE: case HLO_OP_GATHER:
    ask(fr, a, pass);
    if (u->op == HLO_OP_PAD)
      ask(fr, b, pass);
    break;
  case HLO_OP_DYNAMIC_UPDATE_SLICE:
    ask(fr, a, pass);
    ask(fr, b, pass);
    break;
  case HLO_OP_SELECT:
    if (u->noperands == 3) {
      ask(fr, b, pass);
      ask(fr, u->operands[2], pass);
    }
    break;
  case HLO_OP_CLAMP: {
    fwd r = fr->f[u->index];
    if (!(r.lo >= d.lo && r.hi <= d.hi) || d.min_mag > 0)
      ask(fr, b, pass);
    break;
  }
  /* ---- domains ---- */
  case HLO_OP_LOG:
    ask(fr, a, between(fmax(CHK_POS_MIN, d.lo > -INFINITY ? exp(d.lo) : 0), d.hi < INFINITY ? exp(d.hi) : INFINITY));
    break;
  case HLO_OP_LOG1P:
    ask(fr, a, between(fmax(CHK_POS_MIN - 1, d.lo > -INFINITY ? expm1(d.lo) : -1),
                       d.hi < INFINITY ? expm1(d.hi) : INFINITY));
    break;
  case HLO_OP_SQRT:
    ask(fr, a, between(d.lo > 0 ? d.lo * d.lo : 0, d.hi >= 0 && d.hi < INFINITY ? d.hi * d.hi : INFINITY));
    break;
  case HLO_OP_RSQRT:
    ask(fr, a, between(fmax(CHK_POS_MIN, d.hi > 0 && d.hi < INFINITY ? 1 / (d.hi * d.hi) : 0),
                       d.lo > 0 ? 1 / (d.lo * d.lo) : INFINITY));
    break;
  case HLO_OP_EXP:
    ask(fr, a, between(d.lo > 0 ? log(d.lo) : -INFINITY, d.hi < INFINITY ? log(d.hi) : INFINITY));
    break;
  case HLO_OP_EXPM1:
    ask(fr, a, between(d.lo > -1 ? log1p(d.lo) : -INFINITY, d.hi < INFINITY ? log1p(d.hi) : INFINITY));
    break;
  case HLO_OP_TAN:
    ask(fr, a, between(-1.2, 1.2)); /* away from the pole at pi/2 */
    break;
  case HLO_OP_SINE:
  case HLO_OP_COSINE:
    /* Within the range the device's argument reduction holds (|x| < 2^24,
     * hlo_numerics.c; past it an f32 angle's ulp exceeds pi/2 and sin is
     * noise anyway): beyond, its polynomial returns values far outside
     * [-1, 1], which the forward range assumes (an edge angle near the
     * cap made rotary_embedding's products overflow). */
    ask(fr, a, between(-CHK_TRIG_MAX, CHK_TRIG_MAX));
    break;
  case HLO_OP_POWER: {
    /* A positive base keeps fractional exponents real; the exponent is
     * bounded so that base^e stays under the cap for a base in
     * [CHK_POS_MIN, 1 + headroom]. */
    ask(fr, a, between(CHK_POS_MIN, INFINITY));
    double lim = isfinite(d.hi) && d.hi > 1 ? log(d.hi) / log(1 / CHK_POS_MIN) : INFINITY;
    ask(fr, b, between(-lim, lim));
    break;
  }
  case HLO_OP_DIVIDE:
  case HLO_OP_REMAINDER: {
    bool is_int = hlo_etype_is_int(u->shape.type);
    double m = is_int ? 1 : CHK_DIVISOR_MIN;
    /* A divisor the forward pass already keeps away from zero (a sum of
     * exp terms, x + eps with x >= 0) needs nothing. */
    bool safe = fb.lo >= (is_int ? 1 : 0x1p-10) || fb.hi <= -(is_int ? 1 : 0x1p-10);
    if (!safe) {
      chk_range db = chk_range_any();
      db.min_mag = m;
      ask(fr, b, db);
    }
    if (u->op == HLO_OP_DIVIDE && !is_int) {
      double bmin = safe ? fmin(fabs(fb.lo), fabs(fb.hi)) : m;
      chk_range da = chk_range_any();
      if (d.hi < INFINITY && d.hi > 0)
        da.hi = d.hi * bmin;
      if (d.lo > -INFINITY && d.lo < 0)
        da.lo = d.lo * bmin;
      if (d.lo >= 0 && fb.lo > 0) /* a nonnegative quotient of a positive divisor */
        da.lo = d.lo * fb.hi;
      ask(fr, a, da);
    }
    break;
  }
  /* ---- arithmetic ---- */
  case HLO_OP_NEGATE: {
    chk_range n = between(d.hi == INFINITY ? -INFINITY : -d.hi, d.lo == -INFINITY ? INFINITY : -d.lo);
    n.min_mag = d.min_mag;
    n.sort_key = d.sort_key; /* distinct stays distinct */
    ask(fr, a, n);
    break;
  }
  case HLO_OP_ABS: {
    chk_range n = between(-d.hi, d.hi);
    n.min_mag = fmax(d.min_mag, d.lo > 0 ? d.lo : 0);
    ask(fr, a, n);
    break;
  }
  case HLO_OP_ADD:
  case HLO_OP_SUBTRACT: {
    chk_range da, db;
    d = positive_for_mag(d);
    if (u->op == HLO_OP_ADD) {
      split_sum(fa, fb, d, &da, &db);
    } else { /* a - b = a + (-b) */
      fwd nb = range3(-fb.hi, -fb.lo, fb.varies);
      split_sum(fa, nb, d, &da, &db);
      db = between(-db.hi, -db.lo);
    }
    ask(fr, a, da);
    ask(fr, b, db);
    break;
  }
  case HLO_OP_MULTIPLY: {
    if (a == b) { /* a square is never negative */
      chk_range s = chk_range_any();
      if (d.hi >= 0 && d.hi < INFINITY)
        s = between(-sqrt(d.hi), sqrt(d.hi));
      s.min_mag = sqrt(fmax(d.min_mag, d.lo > 0 ? d.lo : 0));
      ask(fr, a, s);
    } else if (!fb.varies && (fb.lo > 0 || fb.hi < 0) && isfinite(fb.lo) && isfinite(fb.hi)) {
      ask(fr, a, div_by_fixed(d, fb));
    } else if (!fa.varies && (fa.lo > 0 || fa.hi < 0) && isfinite(fa.lo) && isfinite(fa.hi)) {
      ask(fr, b, div_by_fixed(d, fa));
    } else if (fa.varies && fb.varies) {
      chk_range f = factor_demand(d, 1);
      if (d.lo >= 0 && !(fa.lo >= 0 && fb.lo >= 0)) { /* same signs: both nonnegative */
        f.lo = fmax(f.lo, 0);
        f.hi = fmax(f.hi, 0);
      }
      if (d.min_mag > 0)
        f.min_mag = sqrt(d.min_mag);
      ask(fr, a, f);
      ask(fr, b, f);
    }
    if (a != b) {
      backward_inf_factor(fr, a, fb, false);
      backward_inf_factor(fr, b, fa, false);
    }
    break;
  }
  case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM: {
    bool mx = u->op == HLO_OP_MAXIMUM;
    chk_range da = between(mx ? -INFINITY : d.lo, mx ? d.hi : INFINITY), db = da;
    if (mx && d.lo > -INFINITY && !(fb.lo >= d.lo) && !(fa.lo >= d.lo))
      da.lo = d.lo; /* max(a, b) >= a */
    if (!mx && d.hi < INFINITY && !(fb.hi <= d.hi) && !(fa.hi <= d.hi))
      da.hi = d.hi;
    ask(fr, a, da);
    ask(fr, b, db);
    break;
  }
  /* ---- reductions ---- */
  case HLO_OP_REDUCE:
  case HLO_OP_REDUCE_WINDOW:
    backward_reduce(fr, u, d);
    break;
  case HLO_OP_DOT:
  case HLO_OP_CONVOLUTION: {
    double k = (double)(u->op == HLO_OP_DOT ? dot_len(u) : conv_len(u));
    chk_range f = factor_demand(d, k);
    ask(fr, a, f);
    ask(fr, b, f);
    backward_inf_factor(fr, a, fb, true);
    backward_inf_factor(fr, b, fa, true);
    break;
  }
  case HLO_OP_SET_DIMENSION_SIZE:
    /* The data passes through; the size lies within the bound. */
    ask(fr, a, d);
    if (u->noperands == 2 && u->attrs.dimensions.n == 1 && u->attrs.dimensions.v[0] >= 0 &&
        u->attrs.dimensions.v[0] < a->shape.rank)
      ask(fr, b, between(0, (double)a->shape.dims[u->attrs.dimensions.v[0]]));
    break;
  case HLO_OP_RAGGED_DOT: {
    /* As a dot for the factors; group sizes are counts that together
     * cover at most the ragged dimension: each in [0, rows / groups]. */
    double k = (double)dot_len(u);
    chk_range f = factor_demand(d, k);
    ask(fr, a, f);
    ask(fr, b, f);
    const hlo_shape *gs = u->noperands == 3 ? &u->operands[2]->shape : NULL;
    long lr = -1;
    for (int j = 0; j < u->nraw; j++)
      if (strcmp(u->raw[j].name, "lhs_ragged_dims") == 0 && u->raw[j].value && u->raw[j].value[0] == '{')
        lr = strtol(u->raw[j].value + 1, NULL, 10);
    if (gs && gs->rank >= 1 && gs->dims[gs->rank - 1] > 0 && lr >= 0 && lr < a->shape.rank)
      ask(fr, u->operands[2], between(0, floor((double)a->shape.dims[lr] / (double)gs->dims[gs->rank - 1])));
    break;
  }
  case HLO_OP_SORT: {
    chk_range key = chk_range_any();
    key.sort_key = true;
    for (int j = 0; j < u->noperands; j++)
      if (sort_compares(u->attrs.calls.to_apply, j))
        ask(fr, u->operands[j], key);
    break;
  }
  /* ---- calls ---- */
  case HLO_OP_FUSION:
  case HLO_OP_CALL: {
    const hlo_computation *callee = u->op == HLO_OP_FUSION ? u->attrs.calls.calls
                                    : u->attrs.calls.to_apply ? u->attrs.calls.to_apply
                                                              : u->attrs.calls.calls;
    if (!callee || fr->depth >= MAX_DEPTH || callee->nparams > u->noperands)
      break;
    int n = callee->nparams;
    fwd *pf = calloc((size_t)(n > 0 ? n : 1), sizeof *pf);
    chk_range *pd = malloc(sizeof *pd * (size_t)(n > 0 ? n : 1));
    if (pf && pd) {
      for (int k = 0; k < n; k++)
        pf[k] = F(fr, u->operands[k]);
      if (analyze(callee, pf, &d, pd, NULL, fr->depth + 1) == 0)
        for (int k = 0; k < n; k++)
          ask(fr, u->operands[k], pd[k]);
    }
    free(pf);
    free(pd);
    break;
  }
  default:
    break;
  }
}

/* Forward, then (when root_demand is given) backward over c.  param_out
 * receives the demands on c's parameters, root_out the root's range. */
static int analyze(const hlo_computation *c, const fwd *params, const chk_range *root_demand,
                   chk_range *param_out, fwd *root_out, int depth) {
  int n = c->ninstrs;
  frame fr = {.c = c, .depth = depth};
  fr.f = malloc(sizeof *fr.f * (size_t)(n > 0 ? n : 1));
  fr.dem = root_demand ? malloc(sizeof *fr.dem * (size_t)(n > 0 ? n : 1)) : NULL;
  if (!fr.f || (root_demand && !fr.dem)) {
    free(fr.f);
    free(fr.dem);
    return -1;
  }
  for (int i = 0; i < n; i++)
    fr.f[i] = forward_one(&fr, c->instrs[i], params);
  if (root_out && c->root)
    *root_out = F(&fr, c->root);
  if (root_demand) {
    for (int i = 0; i < n; i++)
      fr.dem[i] = chk_range_any();
    if (c->root && c->root->index >= 0 && c->root->index < n)
      fr.dem[c->root->index] = *root_demand;
    for (int i = n - 1; i >= 0; i--)
      backward_one(&fr, c->instrs[i]);
    for (int k = 0; k < c->nparams; k++) {
      const hlo_instr *p = c->params[k];
      param_out[k] = p && p->index >= 0 && p->index < n ? fr.dem[p->index] : chk_range_any();
    }
  }
  free(fr.f);
  free(fr.dem);
  return 0;
}

/* The default range of a parameter's elements before any demand: what the
 * naive profile draws (inputs.h), or for wide analyses (EDGE, which draws
 * up to the headroom cap wherever no demand bounds it) the cap. */
static fwd default_range(const hlo_shape *s, bool wide) {
  switch (hlo_etype_class(s->type)) {
  case HLO_CLASS_FLOAT:
    return wide ? range3(-chk_intervals_cap(s->type), chk_intervals_cap(s->type), true) : range3(-1, 1, true);
  case HLO_CLASS_SINT: return range3(-8, 8, true);
  case HLO_CLASS_UINT: return range3(0, 15, true);
  case HLO_CLASS_PRED: return range3(0, 1, true);
  default: return UNKNOWN;
  }
}

int chk_intervals_analyze(const hlo_module *m, bool wide, chk_range *out) {
  const hlo_computation *e = m->entry;
  if (!e)
    return 0;
  int n = e->nparams;
  for (int k = 0; k < n; k++)
    out[k] = chk_range_any();
  fwd *pf = calloc((size_t)(n > 0 ? n : 1), sizeof *pf);
  if (!pf)
    return -1;
  for (int k = 0; k < n; k++)
    pf[k] = e->params[k] ? default_range(&e->params[k]->shape, wide) : UNKNOWN;
  chk_range root = chk_range_any();
  int rc = analyze(e, pf, &root, out, NULL, 0);
  free(pf);
  for (int k = 0; k < n; k++)
    if (rc != 0 || !e->params[k] || e->params[k]->shape.type == HLO_TUPLE)
      out[k] = chk_range_any();
  return rc;
}
