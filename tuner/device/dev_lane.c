/* dev_lane.c — compiling and running scalar computations (dev_lane.h).
 *
 * Compiling walks the computation once, in program order (already a valid
 * evaluation order), and gives every value it meets a compile-time shape:
 * a scalar or a small array is a list of references to its elements, a
 * tuple a list of such values.  A reference is a register (>= 0) or, for
 * the program's own parameters, the argument itself (-1 - its number), so
 * a parameter is read in place and never copied.  Only the elementwise
 * ops become steps that compute; everything that merely moves values
 * (tuple, get-tuple-element, broadcast, reshape, the parameters of an
 * inlined call) is resolved at compile time into references, and calls
 * (call, fusion, a reduce's reducer) are inlined with their parameters
 * bound to the caller's values.  A conditional is the one construct that
 * needs control flow: a branch step on its selector, the code of each
 * branch copying its result into the conditional's registers, and a jump
 * to the end after each branch.
 *
 * A program runs once per comparison of a sort (tens of thousands of times
 * for one line of a thousand elements), so running is a short loop over
 * plain integers, and a program without a conditional is a straight list
 * of elementwise steps.
 */
#include "dev_lane.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_value.h"

#define DEV_LANE_MAX_OPERANDS 3 /* select and clamp are the widest */
/* Limits of what compiles (exceeding one is refused with its name): */
#define DEV_LANE_MAX_DEPTH 16      /* calls nested in calls (a cycle is no
                                      valid HLO, but text can hold one) */
#define DEV_LANE_MAX_ELEMS 64      /* elements of one array value */
#define DEV_LANE_MAX_STEPS 65536   /* steps of the whole inlined program */
#define DEV_LANE_MAX_INLINED 262144 /* instructions compiled, counting each
                                       inlined copy: bounds the compile even
                                       where copies emit no step (moves,
                                       constants) */
#define DEV_LANE_MAX_REDUCE_INPUTS 8 /* operands of a variadic reduce */

enum { LS_OP, LS_COPY, LS_BRANCH, LS_JUMP };

/* One step.  LS_OP: dst = op(ins, src...).  LS_COPY: dst = src[0].
 * LS_BRANCH: on the selector src[0] (a pred when pred, else an s32 index),
 * go to step targets[target + branch] of ntarget branches.  LS_JUMP: go to
 * step target. */
typedef struct lane_step {
  int kind;
  const hlo_instr *ins;
  dev_elem_scalar_fn *op; /* dev_elem_scalar_lowering(ins) */
  int dst, nsrc;
  int src[DEV_LANE_MAX_OPERANDS];
  int target, ntarget;
  bool pred;
} lane_step;

struct dev_lane {
  int nparams, nres;
  dev_slot *reg; /* constants decoded at compile time, then the rest */
  int nreg;
  int *res;      /* register of each result */
  lane_step *steps;
  int nsteps;
  int *targets;  /* the branch tables */
  int ntargets;
  bool control;  /* holds a branch */
  /* the real-valued instructions the parts of complex ops run as (one per
   * opcode and part type), and the operands they name for their types */
  hlo_instr **syn;
  int nsyn;
  hlo_instr part[2]; /* an f32 and an f64 scalar */
};

void dev_lane_free(dev_lane *p) {
  if (!p)
    return;
  free(p->reg);
  free(p->res);
  free(p->steps);
  free(p->targets);
  for (int i = 0; i < p->nsyn; i++) {
    free(p->syn[i]->operands);
    free(p->syn[i]);
  }
  free(p->syn);
  free(p);
}

/* ---- compile-time values --------------------------------------------- */

/* An array (rank 0 for a scalar) of n elements in row-major order, or a
 * tuple of n values.  An element is one reference, or for a complex type
 * two (its real and imaginary parts, of the part type), so ref holds
 * n * lane_width(type) references. */
typedef struct lane_val {
  bool tuple;
  hlo_etype type;
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int n;
  int *ref;
  struct lane_val **el;
} lane_val;

typedef struct lane_cc {
  dev_lane *p;
  int capreg, capsteps, captargets;
  void **blocks; /* everything the compile allocates for itself */
  int nblocks, capblocks;
  char *why;
  size_t why_len;
  bool complex_ok; /* dev_lane_compile_complex */
  long inlined;    /* instructions compiled so far */
} lane_cc;

static int lane_width(hlo_etype t) { return hlo_etype_class(t) == HLO_CLASS_COMPLEX ? 2 : 1; }

static void *cc_alloc(lane_cc *cc, size_t n) {
  if (cc->nblocks == cc->capblocks) {
    int cap = cc->capblocks ? 2 * cc->capblocks : 64;
    void **b = realloc(cc->blocks, (size_t)cap * sizeof *b);
    if (!b)
      return NULL;
    cc->blocks = b;
    cc->capblocks = cap;
  }
  void *m = calloc(1, n ? n : 1);
  if (m)
    cc->blocks[cc->nblocks++] = m;
  return m;
}

static void cc_free(lane_cc *cc) {
  for (int i = 0; i < cc->nblocks; i++)
    free(cc->blocks[i]);
  free(cc->blocks);
}

static int oom(lane_cc *cc) {
  snprintf(cc->why, cc->why_len, "out of memory");
  return -1;
}

static int new_reg(lane_cc *cc) {
  dev_lane *p = cc->p;
  if (p->nreg == cc->capreg) {
    int cap = cc->capreg ? 2 * cc->capreg : 32;
    dev_slot *r = realloc(p->reg, (size_t)cap * sizeof *r);
    if (!r)
      return oom(cc);
    memset(r + cc->capreg, 0, (size_t)(cap - cc->capreg) * sizeof *r);
    p->reg = r;
    cc->capreg = cap;
  }
  return p->nreg++;
}

static lane_step *new_step(lane_cc *cc) {
  dev_lane *p = cc->p;
  if (p->nsteps >= DEV_LANE_MAX_STEPS) {
    snprintf(cc->why, cc->why_len, "the inlined program exceeds DEV_LANE_MAX_STEPS (%d steps)",
             DEV_LANE_MAX_STEPS);
    return NULL;
  }
  if (p->nsteps == cc->capsteps) {
    int cap = cc->capsteps ? 2 * cc->capsteps : 16;
    lane_step *s = realloc(p->steps, (size_t)cap * sizeof *s);
    if (!s) {
      oom(cc);
      return NULL;
    }
    p->steps = s;
    cc->capsteps = cap;
  }
  lane_step *st = &p->steps[p->nsteps++];
  memset(st, 0, sizeof *st);
  return st;
}

static lane_val *val_array(lane_cc *cc, hlo_etype type, int rank, const int64_t *dims) {
  lane_val *v = cc_alloc(cc, sizeof *v);
  if (!v)
    return NULL;
  v->type = type;
  v->rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    v->dims[d] = dims[d];
    n *= dims[d];
    if (dims[d] < 0 || n > DEV_LANE_MAX_ELEMS)
      break;
  }
  if (n > DEV_LANE_MAX_ELEMS || n < 0) {
    snprintf(cc->why, cc->why_len, "an array of more than DEV_LANE_MAX_ELEMS (%d) elements", DEV_LANE_MAX_ELEMS);
    return NULL;
  }
  v->n = (int)n;
  if (!(v->ref = cc_alloc(cc, (size_t)(n * lane_width(type)) * sizeof *v->ref))) {
    oom(cc);
    return NULL;
  }
  return v;
}

/* A type whose values a lane program holds: the real types the device
 * computes, and c64 / c128 as pairs of f32 / f64 parts when compiling
 * with dev_lane_compile_complex. */
/* A tuple value of n elements: el's when el is not NULL, else left for
 * the caller to fill. */
static lane_val *val_tuple(lane_cc *cc, int n, lane_val *const *el) {
  lane_val *t = cc_alloc(cc, sizeof *t);
  if (!t || (n > 0 && !(t->el = cc_alloc(cc, (size_t)n * sizeof *t->el)))) {
    oom(cc);
    return NULL;
  }
  t->tuple = true;
  t->type = HLO_TUPLE;
  t->n = n;
  for (int j = 0; el && j < n; j++)
    t->el[j] = el[j];
  return t;
}

static bool value_type(const lane_cc *cc, hlo_etype t) {
  hlo_eclass k = hlo_etype_class(t);
  if (k == HLO_CLASS_COMPLEX)
    return cc->complex_ok && (t == HLO_C64 || t == HLO_C128);
  return t > HLO_INVALID && t < HLO_ETYPE_COUNT && t != HLO_TUPLE && k != HLO_CLASS_OTHER;
}

/* A value of shape s whose elements are fresh registers (a conditional's
 * result, written by whichever branch runs). */
static lane_val *val_fresh(lane_cc *cc, const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    lane_val *v = val_tuple(cc, s->ntuple, NULL);
    if (!v)
      return NULL;
    for (int k = 0; k < s->ntuple; k++)
      if (!(v->el[k] = val_fresh(cc, &s->elems[k])))
        return NULL;
    return v;
  }
  if (!value_type(cc, s->type) || s->rank > HLO_MAX_RANK) {
    snprintf(cc->why, cc->why_len, "a value of type %s", hlo_etype_name(s->type));
    return NULL;
  }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  for (int e = 0; v && e < v->n * lane_width(v->type); e++)
    if ((v->ref[e] = new_reg(cc)) < 0)
      return NULL;
  return v;
}

/* Does v have shape s (types and dimensions, through tuples)? */
static bool val_fits(const lane_val *v, const hlo_shape *s) {
  if (v->tuple != (s->type == HLO_TUPLE))
    return false;
  if (v->tuple) {
    if (v->n != s->ntuple)
      return false;
    for (int k = 0; k < v->n; k++)
      if (!val_fits(v->el[k], &s->elems[k]))
        return false;
    return true;
  }
  if (v->type != s->type || v->rank != s->rank)
    return false;
  for (int d = 0; d < v->rank; d++)
    if (v->dims[d] != s->dims[d])
      return false;
  return true;
}

/* Steps copying src's elements into dst's (of the same shape). */
static int val_copy(lane_cc *cc, const lane_val *dst, const lane_val *src) {
  if (dst->tuple) {
    for (int k = 0; k < dst->n; k++)
      if (val_copy(cc, dst->el[k], src->el[k]) != 0)
        return -1;
    return 0;
  }
  for (int e = 0; e < dst->n * lane_width(dst->type); e++) {
    lane_step *st = new_step(cc);
    if (!st)
      return -1;
    st->kind = LS_COPY;
    st->dst = dst->ref[e];
    st->nsrc = 1;
    st->src[0] = src->ref[e];
  }
  return 0;
}

/* ---- compiling a computation ----------------------------------------- */

static lane_val *compile_comp(lane_cc *cc, const hlo_computation *c, lane_val *const *args, int depth);

/* Row-major multi-index of flat position e in dims. */
static void unflatten(int rank, const int64_t *dims, int64_t e, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = dims[d] ? e % dims[d] : 0;
    e = dims[d] ? e / dims[d] : 0;
  }
}

static int64_t flatten(int rank, const int64_t *dims, const int64_t *idx) {
  int64_t e = 0;
  for (int d = 0; d < rank; d++)
    e = e * dims[d] + idx[d];
  return e;
}

/* The real-valued scalar instruction op on operands of part type pt (f32
 * or f64) that a part of a complex op runs as, made once per lane. */
static const hlo_instr *part_instr(lane_cc *cc, hlo_opcode op, hlo_etype pt) {
  dev_lane *p = cc->p;
  for (int i = 0; i < p->nsyn; i++)
    if (p->syn[i]->op == op && p->syn[i]->shape.type == pt)
      return p->syn[i];
  hlo_instr **grown = realloc(p->syn, (size_t)(p->nsyn + 1) * sizeof *grown);
  if (!grown)
    return NULL;
  p->syn = grown;
  hlo_instr *ins = calloc(1, sizeof *ins);
  hlo_instr **ops = calloc(2, sizeof *ops);
  if (!ins || !ops) {
    free(ins);
    free(ops);
    return NULL;
  }
  hlo_instr *holder = &p->part[pt == HLO_F64];
  holder->name = "part";
  holder->op = HLO_OP_PARAMETER;
  holder->async_wrapped = HLO_OP_INVALID;
  holder->shape.type = pt;
  ins->name = hlo_opcode_name(op);
  ins->op = op;
  ins->async_wrapped = HLO_OP_INVALID;
  ins->shape.type = pt;
  ins->noperands = op == HLO_OP_NEGATE ? 1 : 2;
  ops[0] = ops[1] = holder;
  ins->operands = ops;
  p->syn[p->nsyn++] = ins;
  return ins;
}

/* A step dst = op(a[, b]) on parts of type pt; the new register, or -1. */
static int part_step(lane_cc *cc, hlo_opcode op, hlo_etype pt, int a, int b) {
  const hlo_instr *ins = part_instr(cc, op, pt);
  if (!ins)
    return oom(cc);
  int dst = new_reg(cc);
  lane_step *st = dst < 0 ? NULL : new_step(cc);
  if (!st)
    return -1;
  st->kind = LS_OP;
  st->ins = ins;
  st->op = dev_elem_scalar_lowering(ins);
  st->dst = dst;
  st->nsrc = ins->noperands;
  st->src[0] = a;
  st->src[1] = b;
  return dst;
}

/* An elementwise op with a complex operand or result, as steps on the
 * parts (XLA's elemental lowering of complex arithmetic, each part op
 * rounded to the part type):
 *   add, subtract  (a ± c, b ± d)
 *   multiply       (a c - b d, a d + b c)
 *   negate         (-a, -b)
 *   real, imag     a, b;  complex(x, y)  (x, y);  copy  (a, b)
 * for (a + bi) and (c + di).  Any other op is refused. */
static lane_val *compile_complex(lane_cc *cc, const hlo_instr *ins, lane_val *const *ov) {
  const hlo_shape *s = &ins->shape;
  hlo_opcode op = ins->op;
  hlo_etype ct = lane_width(s->type) == 2 ? s->type : ins->noperands > 0 ? ins->operands[0]->shape.type : s->type;
  hlo_etype pt = ct == HLO_C128 ? HLO_F64 : HLO_F32;
  bool binary = op == HLO_OP_ADD || op == HLO_OP_SUBTRACT || op == HLO_OP_MULTIPLY;
  bool ok = ins->noperands == (binary || op == HLO_OP_COMPLEX ? 2 : 1);
  switch (op) {
  case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_NEGATE: case HLO_OP_COPY:
    for (int j = 0; ok && j < ins->noperands; j++)
      ok = ins->operands[j]->shape.type == s->type;
    break;
  case HLO_OP_REAL: case HLO_OP_IMAG:
    ok = ok && s->type == pt;
    break;
  case HLO_OP_COMPLEX:
    ok = ok && ins->operands[0]->shape.type == pt && ins->operands[1]->shape.type == pt;
    break;
  default:
    snprintf(cc->why, cc->why_len, "%s: complex %s has no lane form", ins->name, hlo_opcode_name(op));
    return NULL;
  }
  if (!ok || (ct != HLO_C64 && ct != HLO_C128)) {
    snprintf(cc->why, cc->why_len, "%s: malformed complex %s", ins->name, hlo_opcode_name(op));
    return NULL;
  }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  if (!v)
    return NULL;
  int wv = lane_width(s->type);
  for (int j = 0; j < ins->noperands; j++)
    if (ov[j]->tuple || (ov[j]->n != v->n && !(ov[j]->rank == 0 && ov[j]->n == 1))) {
      snprintf(cc->why, cc->why_len, "%s: operand %d does not match its shape", ins->name, j);
      return NULL;
    }
  for (int e = 0; e < v->n; e++) {
    const int *x = ov[0]->ref + (ov[0]->n == 1 ? 0 : e) * lane_width(ov[0]->type);
    const int *y = ins->noperands > 1 ? ov[1]->ref + (ov[1]->n == 1 ? 0 : e) * lane_width(ov[1]->type) : NULL;
    int *r = v->ref + e * wv, ac, bd, ad, bc;
    switch (op) {
    case HLO_OP_ADD: case HLO_OP_SUBTRACT:
      r[0] = part_step(cc, op, pt, x[0], y[0]);
      r[1] = r[0] < 0 ? -1 : part_step(cc, op, pt, x[1], y[1]);
      break;
    case HLO_OP_MULTIPLY:
      ac = part_step(cc, HLO_OP_MULTIPLY, pt, x[0], y[0]);
      bd = ac < 0 ? -1 : part_step(cc, HLO_OP_MULTIPLY, pt, x[1], y[1]);
      ad = bd < 0 ? -1 : part_step(cc, HLO_OP_MULTIPLY, pt, x[0], y[1]);
      bc = ad < 0 ? -1 : part_step(cc, HLO_OP_MULTIPLY, pt, x[1], y[0]);
      r[0] = bc < 0 ? -1 : part_step(cc, HLO_OP_SUBTRACT, pt, ac, bd);
      r[1] = r[0] < 0 ? -1 : part_step(cc, HLO_OP_ADD, pt, ad, bc);
      break;
    case HLO_OP_NEGATE:
      r[0] = part_step(cc, op, pt, x[0], 0);
      r[1] = r[0] < 0 ? -1 : part_step(cc, op, pt, x[1], 0);
      break;
    case HLO_OP_REAL: r[0] = x[0]; break;
    case HLO_OP_IMAG: r[0] = x[1]; break;
    case HLO_OP_COMPLEX: r[0] = x[0]; r[1] = y[0]; break;
    default: r[0] = x[0]; r[1] = x[1]; break; /* copy */
    }
    if (cc->why[0]) /* a step was refused (a limit, or out of memory) */
      return NULL;
  }
  return v;
}

static lane_val *compile_elementwise(lane_cc *cc, const hlo_instr *ins, lane_val *const *ov) {
  const hlo_shape *s = &ins->shape;
  bool complex = false;
  for (int j = -1; j < ins->noperands; j++) {
    hlo_etype t = j < 0 ? s->type : ins->operands[j]->shape.type;
    if (!value_type(cc, t)) {
      snprintf(cc->why, cc->why_len, "%s: %s values have no lane form", ins->name, hlo_etype_name(t));
      return NULL;
    }
    complex = complex || lane_width(t) == 2;
  }
  if (complex)
    return compile_complex(cc, ins, ov);
  if (dev_elem_classify(ins) != DEV_EK_ELEMENTWISE || ins->noperands > DEV_LANE_MAX_OPERANDS) {
    snprintf(cc->why, cc->why_len, "%s: %s has no lane form", ins->name, hlo_opcode_name(ins->op));
    return NULL;
  }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  if (!v)
    return NULL;
  for (int j = 0; j < ins->noperands; j++)
    if (ov[j]->tuple || (ov[j]->n != v->n && !(ov[j]->rank == 0 && ov[j]->n == 1))) {
      snprintf(cc->why, cc->why_len, "%s: operand %d does not match its shape", ins->name, j);
      return NULL;
    }
  dev_elem_scalar_fn *fn = dev_elem_scalar_lowering(ins);
  for (int e = 0; e < v->n; e++) {
    int dst = new_reg(cc);
    lane_step *st = dst < 0 ? NULL : new_step(cc);
    if (!st)
      return NULL;
    st->kind = LS_OP;
    st->ins = ins;
    st->op = fn;
    st->dst = v->ref[e] = dst;
    st->nsrc = ins->noperands;
    for (int j = 0; j < ins->noperands; j++)
      st->src[j] = ov[j]->ref[ov[j]->n == 1 ? 0 : e];
  }
  return v;
}

static lane_val *compile_constant(lane_cc *cc, const hlo_instr *ins) {
  const hlo_shape *s = &ins->shape;
  if (s->type == HLO_TUPLE || !value_type(cc, s->type) || !ins->literal || ins->literal->elided) {
    snprintf(cc->why, cc->why_len, "constant %s has no value of a type the device computes", ins->name);
    return NULL;
  }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  if (!v)
    return NULL;
  char msg[128];
  hlo_value *hv = hlo_value_from_literal(s, ins->literal, msg, sizeof msg);
  if (!hv || hv->count != v->n) {
    hlo_value_unref(hv);
    snprintf(cc->why, cc->why_len, "constant %s has no value", ins->name);
    return NULL;
  }
  /* a complex element is two parts of the part type, stored in turn */
  int w = lane_width(s->type);
  hlo_etype pt = w == 1 ? hv->type : s->type == HLO_C128 ? HLO_F64 : HLO_F32;
  for (int e = 0; e < v->n * w; e++) {
    int r = new_reg(cc);
    if (r < 0) {
      hlo_value_unref(hv);
      return NULL;
    }
    dev_slot_from_host(pt, hv->data, e, &cc->p->reg[r]);
    v->ref[e] = r;
  }
  hlo_value_unref(hv);
  return v;
}

/* broadcast: output element idx reads operand element idx[dimensions[k]]
 * along operand dimension k (HLO broadcast semantics). */
static lane_val *compile_broadcast(lane_cc *cc, const hlo_instr *ins, const lane_val *o) {
  const hlo_shape *s = &ins->shape;
  const hlo_ints *bd = &ins->attrs.dimensions;
  if (o->tuple || bd->n != o->rank || o->type != s->type) {
    snprintf(cc->why, cc->why_len, "%s: malformed broadcast", ins->name);
    return NULL;
  }
  for (int k = 0; k < bd->n; k++)
    if (bd->v[k] < 0 || bd->v[k] >= s->rank || s->dims[bd->v[k]] != o->dims[k]) {
      snprintf(cc->why, cc->why_len, "%s: malformed broadcast", ins->name);
      return NULL;
    }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  for (int e = 0; v && e < v->n; e++) {
    int64_t idx[HLO_MAX_RANK], oi[HLO_MAX_RANK];
    unflatten(s->rank, s->dims, e, idx);
    for (int k = 0; k < bd->n; k++)
      oi[k] = idx[bd->v[k]];
    int w = lane_width(s->type);
    memcpy(v->ref + e * w, o->ref + flatten(o->rank, o->dims, oi) * w, (size_t)w * sizeof *v->ref);
  }
  return v;
}

/* reshape (and a bitcast of one element): the same elements in the same
 * row-major order under new dimensions. */
static lane_val *compile_reshape(lane_cc *cc, const hlo_instr *ins, const lane_val *o) {
  const hlo_shape *s = &ins->shape;
  if (o->tuple || o->type != s->type) {
    snprintf(cc->why, cc->why_len, "%s: malformed %s", ins->name, hlo_opcode_name(ins->op));
    return NULL;
  }
  lane_val *v = val_array(cc, s->type, s->rank, s->dims);
  if (!v)
    return NULL;
  if (v->n != o->n) {
    snprintf(cc->why, cc->why_len, "%s: malformed %s", ins->name, hlo_opcode_name(ins->op));
    return NULL;
  }
  if (ins->op == HLO_OP_BITCAST && v->n != 1) {
    /* a bitcast of an array keeps the physical buffer through the
     * layouts, which a lane program does not model */
    snprintf(cc->why, cc->why_len, "%s: bitcast of an array has no lane form", ins->name);
    return NULL;
  }
  memcpy(v->ref, o->ref, (size_t)(v->n * lane_width(v->type)) * sizeof *v->ref);
  return v;
}

/* reduce(inputs..., inits...) with to_apply: each output element starts
 * from the init values and folds the input elements of its reduced
 * dimensions in row-major order, the reducer inlined per element as
 * reducer(accumulators..., elements...) (HLO reduce semantics; the order
 * is the device's choice, as XLA leaves it unspecified). */
static lane_val *compile_reduce(lane_cc *cc, const hlo_instr *ins, lane_val *const *ov, int depth) {
  int k = ins->noperands / 2;
  const hlo_computation *f = ins->attrs.calls.to_apply;
  const hlo_ints *rd = &ins->attrs.dimensions;
  if (ins->noperands % 2 || k < 1 || k > DEV_LANE_MAX_REDUCE_INPUTS || !f || f->nparams != 2 * k) {
    snprintf(cc->why, cc->why_len, "%s: malformed reduce", ins->name);
    return NULL;
  }
  const lane_val *in0 = ov[0];
  for (int j = 0; j < 2 * k; j++)
    if (ov[j]->tuple || (j >= k && ov[j]->n != 1) ||
        (j < k && (ov[j]->rank != in0->rank || memcmp(ov[j]->dims, in0->dims, sizeof in0->dims) != 0))) {
      snprintf(cc->why, cc->why_len, "%s: malformed reduce", ins->name);
      return NULL;
    }
  bool reduced[HLO_MAX_RANK] = {false};
  for (int q = 0; q < rd->n; q++) {
    if (rd->v[q] < 0 || rd->v[q] >= in0->rank || reduced[rd->v[q]]) {
      snprintf(cc->why, cc->why_len, "%s: malformed reduce", ins->name);
      return NULL;
    }
    reduced[rd->v[q]] = true;
  }
  int kr = 0, rr = 0;
  int64_t kd[HLO_MAX_RANK], rdims[HLO_MAX_RANK];
  int kmap[HLO_MAX_RANK], rmap[HLO_MAX_RANK];
  for (int d = 0; d < in0->rank; d++) {
    if (reduced[d]) {
      rmap[rr] = d;
      rdims[rr++] = in0->dims[d];
    } else {
      kmap[kr] = d;
      kd[kr++] = in0->dims[d];
    }
  }
  lane_val *out[DEV_LANE_MAX_REDUCE_INPUTS];
  for (int j = 0; j < k; j++)
    if (!(out[j] = val_array(cc, ov[k + j]->type, kr, kd)))
      return NULL;
  int64_t nred = 1;
  for (int q = 0; q < rr; q++)
    nred *= rdims[q];
  lane_val *sc[2 * DEV_LANE_MAX_REDUCE_INPUTS];
  for (int j = 0; j < 2 * k; j++) { /* the reducer's scalar arguments */
    const hlo_instr *fp = f->params[j];
    /* accumulator j has the type of init j, element j that of input j */
    hlo_etype want = j < k ? ov[k + j]->type : ov[j - k]->type;
    if (!fp || fp->shape.type != want || fp->shape.rank != 0) {
      snprintf(cc->why, cc->why_len, "%s: reducer %s parameter %d is no scalar of its operand's type", ins->name,
               f->name, j);
      return NULL;
    }
    if (!(sc[j] = val_array(cc, fp->shape.type, 0, NULL)))
      return NULL;
  }
  for (int e = 0; e < out[0]->n; e++) {
    int acc[DEV_LANE_MAX_REDUCE_INPUTS][2]; /* the parts of a complex one */
    for (int j = 0; j < k; j++)
      memcpy(acc[j], ov[k + j]->ref, (size_t)lane_width(ov[k + j]->type) * sizeof acc[j][0]);
    int64_t ki[HLO_MAX_RANK], ri[HLO_MAX_RANK], idx[HLO_MAX_RANK];
    unflatten(kr, kd, e, ki);
    for (int q = 0; q < kr; q++)
      idx[kmap[q]] = ki[q];
    for (int64_t r = 0; r < nred; r++) {
      unflatten(rr, rdims, r, ri);
      for (int q = 0; q < rr; q++)
        idx[rmap[q]] = ri[q];
      int64_t at = flatten(in0->rank, in0->dims, idx);
      for (int j = 0; j < k; j++) {
        int wa = lane_width(sc[j]->type), wx = lane_width(sc[k + j]->type);
        memcpy(sc[j]->ref, acc[j], (size_t)wa * sizeof acc[j][0]);
        memcpy(sc[k + j]->ref, ov[j]->ref + at * wx, (size_t)wx * sizeof acc[j][0]);
      }
      lane_val *res = compile_comp(cc, f, sc, depth + 1);
      if (!res)
        return NULL;
      for (int j = 0; j < k; j++) {
        const lane_val *rj = k == 1 && !res->tuple ? res : (res->tuple && res->n == k ? res->el[j] : NULL);
        if (!rj || rj->tuple || rj->n != 1 || rj->rank != 0 || rj->type != out[j]->type) {
          snprintf(cc->why, cc->why_len, "%s: reducer %s does not return %d scalars", ins->name, f->name, k);
          return NULL;
        }
        memcpy(acc[j], rj->ref, (size_t)lane_width(rj->type) * sizeof acc[j][0]);
      }
    }
    for (int j = 0; j < k; j++) {
      int w = lane_width(out[j]->type);
      memcpy(out[j]->ref + e * w, acc[j], (size_t)w * sizeof acc[j][0]);
    }
  }
  return k == 1 ? out[0] : val_tuple(cc, k, out);
}

/* conditional(selector, operands...): branch b runs on operand 1 + b.  A
 * pred selector picks branch 0 (true_computation) when true, else branch
 * 1; an s32 index outside [0, N) picks the last branch (HLO conditional
 * semantics). */
static lane_val *compile_conditional(lane_cc *cc, const hlo_instr *ins, lane_val *const *ov, int depth) {
  const hlo_calls *k = &ins->attrs.calls;
  int nb = k->nbranches;
  if (nb < 1 || ins->noperands != nb + 1 || ov[0]->tuple || ov[0]->n != 1 || ov[0]->rank != 0 ||
      (ov[0]->type != HLO_PRED && ov[0]->type != HLO_S32) || (ov[0]->type == HLO_PRED && nb != 2)) {
    snprintf(cc->why, cc->why_len, "%s: malformed conditional", ins->name);
    return NULL;
  }
  lane_val *v = val_fresh(cc, &ins->shape);
  if (!v)
    return NULL;
  dev_lane *p = cc->p;
  if (p->ntargets + nb > cc->captargets) {
    int cap = 2 * (p->ntargets + nb) + 8;
    int *t = realloc(p->targets, (size_t)cap * sizeof *t);
    if (!t) {
      oom(cc);
      return NULL;
    }
    p->targets = t;
    cc->captargets = cap;
  }
  int table = p->ntargets;
  p->ntargets += nb;
  lane_step *br = new_step(cc);
  if (!br)
    return NULL;
  br->kind = LS_BRANCH;
  br->src[0] = ov[0]->ref[0];
  br->nsrc = 1;
  br->pred = ov[0]->type == HLO_PRED;
  br->target = table;
  br->ntarget = nb;
  p->control = true;
  int *jumps = cc_alloc(cc, (size_t)nb * sizeof *jumps);
  if (!jumps) {
    oom(cc);
    return NULL;
  }
  for (int b = 0; b < nb; b++) {
    const hlo_computation *bc = k->branches[b];
    if (!bc || bc->nparams != 1) {
      snprintf(cc->why, cc->why_len, "%s: branch %d must take one parameter", ins->name, b);
      return NULL;
    }
    p->targets[table + b] = p->nsteps;
    lane_val *r = compile_comp(cc, bc, &ov[1 + b], depth + 1);
    if (!r)
      return NULL;
    if (!val_fits(r, &ins->shape)) {
      snprintf(cc->why, cc->why_len, "%s: branch %s returns another shape", ins->name, bc->name);
      return NULL;
    }
    if (val_copy(cc, v, r) != 0)
      return NULL;
    lane_step *j = new_step(cc);
    if (!j)
      return NULL;
    j->kind = LS_JUMP;
    jumps[b] = p->nsteps - 1;
  }
  for (int b = 0; b < nb; b++)
    p->steps[jumps[b]].target = p->nsteps;
  return v;
}

static lane_val *compile_instr(lane_cc *cc, const hlo_instr *ins, lane_val *const *ov, int depth) {
  switch (ins->op) {
  case HLO_OP_CONSTANT:
    return compile_constant(cc, ins);
  case HLO_OP_TUPLE:
    return val_tuple(cc, ins->noperands, ov);
  case HLO_OP_GET_TUPLE_ELEMENT:
    if (ins->noperands != 1 || !ov[0]->tuple || ins->attrs.index < 0 || ins->attrs.index >= ov[0]->n) {
      snprintf(cc->why, cc->why_len, "%s: get-tuple-element of no such element", ins->name);
      return NULL;
    }
    return ov[0]->el[ins->attrs.index];
  case HLO_OP_CALL:
  case HLO_OP_FUSION: {
    const hlo_computation *f = ins->op == HLO_OP_CALL ? ins->attrs.calls.to_apply : ins->attrs.calls.calls;
    if (!f && ins->op == HLO_OP_CALL)
      f = ins->attrs.calls.calls;
    if (!f || f->nparams != ins->noperands) {
      snprintf(cc->why, cc->why_len, "%s: malformed %s", ins->name, hlo_opcode_name(ins->op));
      return NULL;
    }
    return compile_comp(cc, f, ov, depth + 1);
  }
  case HLO_OP_BROADCAST:
    return ins->noperands == 1 ? compile_broadcast(cc, ins, ov[0]) : NULL;
  case HLO_OP_RESHAPE:
  case HLO_OP_BITCAST:
    return ins->noperands == 1 ? compile_reshape(cc, ins, ov[0]) : NULL;
  case HLO_OP_REDUCE:
    return compile_reduce(cc, ins, ov, depth);
  case HLO_OP_CONDITIONAL:
    return compile_conditional(cc, ins, ov, depth);
  default:
    if (ins->shape.type == HLO_TUPLE) {
      snprintf(cc->why, cc->why_len, "%s: %s has no lane form", ins->name, hlo_opcode_name(ins->op));
      return NULL;
    }
    return compile_elementwise(cc, ins, ov);
  }
}

/* Compiles c with its parameters bound to args[0..nparams); its root's
 * value, or NULL with cc->why. */
static lane_val *compile_comp(lane_cc *cc, const hlo_computation *c, lane_val *const *args, int depth) {
  if (depth > DEV_LANE_MAX_DEPTH) {
    snprintf(cc->why, cc->why_len, "%s: calls nested deeper than DEV_LANE_MAX_DEPTH (%d)", c->name,
             DEV_LANE_MAX_DEPTH);
    return NULL;
  }
  if (!c->root || c->ninstrs < 1) {
    snprintf(cc->why, cc->why_len, "%s: empty computation", c->name);
    return NULL;
  }
  lane_val **val = cc_alloc(cc, (size_t)c->ninstrs * sizeof *val);
  if (!val) {
    oom(cc);
    return NULL;
  }
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (++cc->inlined > DEV_LANE_MAX_INLINED) {
      snprintf(cc->why, cc->why_len, "%s: the inlined program exceeds DEV_LANE_MAX_INLINED (%d instructions)",
               c->name, DEV_LANE_MAX_INLINED);
      return NULL;
    }
    if (ins->op == HLO_OP_PARAMETER) {
      if (ins->parameter_number < 0 || ins->parameter_number >= c->nparams) {
        snprintf(cc->why, cc->why_len, "%s: parameter %s out of range", c->name, ins->name);
        return NULL;
      }
      val[i] = args[ins->parameter_number];
      if (!val_fits(val[i], &ins->shape)) {
        snprintf(cc->why, cc->why_len, "%s: parameter %s gets a value of another shape", c->name, ins->name);
        return NULL;
      }
      continue;
    }
    lane_val *ov[64];
    if (ins->noperands > 64) {
      snprintf(cc->why, cc->why_len, "%s: %s has more than 64 operands", c->name, ins->name);
      return NULL;
    }
    for (int j = 0; j < ins->noperands; j++) {
      const hlo_instr *o = ins->operands[j];
      if (o->parent != c || o->index >= i || !val[o->index]) {
        snprintf(cc->why, cc->why_len, "%s: %s reads outside its computation", c->name, ins->name);
        return NULL;
      }
      ov[j] = val[o->index];
    }
    cc->why[0] = '\0';
    if (!(val[i] = compile_instr(cc, ins, ov, depth))) {
      if (strcmp(cc->why, "out of memory") == 0)
        return NULL;
      if (!cc->why[0])
        snprintf(cc->why, cc->why_len, "%s: %s has no lane form", ins->name, hlo_opcode_name(ins->op));
      /* the reason, led by where it arose: this computation, and the
       * instruction unless the reason starts with it (a refusal inside a
       * call then reads as a path: f: c: callee: x: ...) */
      size_t nl = strlen(ins->name);
      bool named = strncmp(cc->why, ins->name, nl) == 0 && (cc->why[nl] == ':' || cc->why[nl] == ' ');
      char tmp[512];
      snprintf(tmp, sizeof tmp, "%s: %s%s%s", c->name, named ? "" : ins->name, named ? "" : ": ", cc->why);
      snprintf(cc->why, cc->why_len, "%s", tmp);
      return NULL;
    }
    if (!val_fits(val[i], &ins->shape)) {
      snprintf(cc->why, cc->why_len, "%s: %s does not compute its shape", c->name, ins->name);
      return NULL;
    }
  }
  return val[c->root->index];
}

/* Compiles c; a complex parameter or result (complex_ok only) takes two
 * argument or result slots, its real part first. */
static dev_lane *compile_top(const hlo_computation *c, bool complex_ok, char *why, size_t why_len) {
  if (!c || !c->root || c->ninstrs < 1) {
    snprintf(why, why_len, "no computation to run per element");
    return NULL;
  }
  dev_lane *p = calloc(1, sizeof *p);
  lane_cc cc = {.p = p, .why = why, .why_len = why_len, .complex_ok = complex_ok};
  why[0] = '\0';
  if (!p) {
    snprintf(why, why_len, "out of memory");
    return NULL;
  }
  lane_val **args = cc_alloc(&cc, (size_t)(c->nparams ? c->nparams : 1) * sizeof *args);
  if (!args) {
    oom(&cc);
    goto refuse;
  }
  for (int j = 0; j < c->nparams; j++) {
    const hlo_instr *pj = c->params[j];
    if (!pj || pj->shape.type == HLO_TUPLE || pj->shape.rank != 0 || !value_type(&cc, pj->shape.type)) {
      snprintf(why, why_len, "%s: parameter %d (%s) is not a scalar of a type the lane computes", c->name, j,
               pj ? (pj->shape.type == HLO_TUPLE ? "a tuple" : hlo_etype_name(pj->shape.type)) : "missing");
      goto refuse;
    }
    if (!(args[j] = val_array(&cc, pj->shape.type, 0, NULL)))
      goto refuse;
    for (int w = 0; w < lane_width(pj->shape.type); w++)
      args[j]->ref[w] = -1 - p->nparams++;
  }
  lane_val *root = compile_comp(&cc, c, args, 0);
  if (!root)
    goto refuse;
  int nv = root->tuple ? root->n : 1;
  for (int k = 0; k < nv; k++) {
    const lane_val *v = root->tuple ? root->el[k] : root;
    if (v->tuple || v->rank != 0 || v->n != 1) {
      snprintf(why, why_len, "%s: result %d is not a scalar", c->name, k);
      goto refuse;
    }
    p->nres += lane_width(v->type);
  }
  if (p->nres < 1 || !(p->res = calloc((size_t)p->nres, sizeof *p->res))) {
    snprintf(why, why_len, p->nres < 1 ? "%s: empty tuple root" : "out of memory", c->name);
    goto refuse;
  }
  for (int k = 0, slot = 0; k < nv; k++) {
    const lane_val *v = root->tuple ? root->el[k] : root;
    for (int w = 0; w < lane_width(v->type); w++) {
      int r = v->ref[w];
      if (r < 0) {
        /* a result that is an argument is copied last: results may be
         * written over the arguments (a fold's accumulators), and another
         * result may still read this one */
        int dst = new_reg(&cc);
        lane_step *st = dst < 0 ? NULL : new_step(&cc);
        if (!st)
          goto refuse;
        st->kind = LS_COPY;
        st->dst = dst;
        st->nsrc = 1;
        st->src[0] = r;
        r = dst;
      }
      p->res[slot++] = r;
    }
  }
  if (p->nreg == 0 && new_reg(&cc) < 0) /* run reads reg[] even when empty */
    goto refuse;
  cc_free(&cc);
  return p;
refuse:
  cc_free(&cc);
  dev_lane_free(p);
  return NULL;
}

dev_lane *dev_lane_compile(const hlo_computation *c, char *why, size_t why_len) {
  return compile_top(c, false, why, why_len);
}

dev_lane *dev_lane_compile_complex(const hlo_computation *c, char *why, size_t why_len) {
  return compile_top(c, true, why, why_len);
}

int dev_lane_nparams(const dev_lane *p) { return p->nparams; }
int dev_lane_nresults(const dev_lane *p) { return p->nres; }

static inline dev_slot fetch(const dev_lane *p, const dev_slot *args, int r) {
  return r >= 0 ? p->reg[r] : args[-1 - r];
}

void dev_lane_run(dev_lane *p, const dev_slot *args, dev_slot *res) {
  /* the steps never write the arguments (res may be args: results are
   * written last) */
  const lane_step *steps = p->steps;
  if (p->nsteps == 1 && p->nres == 1 && p->res[0] == steps[0].dst && steps[0].kind == LS_OP) {
    /* one op on the arguments (a sort's compare): its result needs no
     * register */
    const lane_step *st = steps;
    dev_slot x[DEV_LANE_MAX_OPERANDS];
    for (int j = 0; j < st->nsrc; j++)
      x[j] = fetch(p, args, st->src[j]);
    res[0] = st->op(st->ins, x);
    return;
  }
  for (int q = 0; q < p->nsteps;) {
    const lane_step *st = &steps[q];
    if (st->kind == LS_OP) {
      dev_slot x[DEV_LANE_MAX_OPERANDS];
      for (int j = 0; j < st->nsrc; j++)
        x[j] = fetch(p, args, st->src[j]);
      p->reg[st->dst] = st->op(st->ins, x);
      q++;
    } else if (st->kind == LS_COPY) {
      p->reg[st->dst] = fetch(p, args, st->src[0]);
      q++;
    } else if (st->kind == LS_BRANCH) {
      int64_t s = fetch(p, args, st->src[0]).i, b;
      if (st->pred)
        b = s != 0 ? 0 : 1;
      else
        b = s < 0 || s >= st->ntarget ? st->ntarget - 1 : s;
      q = p->targets[st->target + b];
    } else {
      q = st->target;
    }
  }
  for (int k = 0; k < p->nres; k++)
    res[k] = p->reg[p->res[k]];
}

bool dev_lane_single_compare(const dev_lane *p, const hlo_instr **cmp, int *a, int *b) {
  if (p->nsteps != 1 || p->nres != 1 || p->res[0] != p->steps[0].dst || p->steps[0].kind != LS_OP)
    return false;
  const lane_step *st = p->steps;
  if (st->ins->op != HLO_OP_COMPARE || st->nsrc != 2 || st->src[0] >= 0 || st->src[1] >= 0)
    return false;
  *cmp = st->ins;
  *a = -1 - st->src[0];
  *b = -1 - st->src[1];
  return true;
}

bool dev_lane_componentwise(const dev_lane *p, int n, const hlo_instr **ops) {
  if (n < 1 || p->nparams != 2 * n || p->nres != n || p->nsteps != n || p->control)
    return false;
  for (int j = 0; j < n; j++) {
    const lane_step *st = NULL;
    for (int q = 0; q < p->nsteps && !st; q++)
      if (p->steps[q].kind == LS_OP && p->steps[q].dst == p->res[j])
        st = &p->steps[q];
    if (!st || st->nsrc != 2 || st->src[0] != -1 - j || st->src[1] != -1 - (n + j))
      return false;
    for (int k = 0; k < j; k++) /* each result its own step */
      if (ops[k] == st->ins)
        return false;
    ops[j] = st->ins;
  }
  return true;
}
