/* mutation_backend.c — a backend (dev_backend.h, loaded with `tune
 * --backend PATH.so`) that tests the checker by mutation: its kernels are
 * the reference evaluator, and one of them is changed the way a real bug,
 * or a real legitimate variation, changes an output.  The checker must
 * flag every bug and none of the variations (tests/mutation_report.sh).
 *
 * Its space has two configs, whole-output tiles differing in the buffer
 * count: buf=1 is the default, buf=2 the candidate.  The environment
 * variable TUNE_MUTATION names what to do (unset: nothing):
 *
 * Bugs, applied to the candidate's output (every array leaf):
 *   one-ulp       the middle element moves to its next representable value
 *   ragged-zero   the last 7 elements (a ragged tile) read 0
 *   ragged-stale  the last 7 elements keep the 7 values before them
 *   nan           the middle element of a float leaf is NaN
 *   swap          the first two distinct elements trade places
 *   bf16          every f32 element is rounded through bf16
 *   scale         every float element times (1 + 1e-3)
 *   sign-zero     every zero of a float leaf flips its sign
 *   race          the middle element of a float leaf changes on every
 *                 other run of the candidate (the output changes on a rerun)
 *   default-only  one-ulp's change, scale's and ragged-zero's, on the
 *                 default instead of the candidate
 *   default-race  race's change on the default instead of the candidate:
 *                 on its first run and every other one after it
 *   dropped-chunk in every add-reduce of the kernel, the first eighth of
 *                 each output's terms is left out
 *   max-nan       every float maximum and minimum of the candidate (the
 *                 reducers' included) returns the other operand when one
 *                 is NaN (C's fmax and fmin), instead of propagating NaN
 *   max-zero      every float maximum and minimum of the candidate returns
 *                 its first operand when the two compare equal, so
 *                 max(-0, +0) is -0 and min(+0, -0) is +0 (a >= b ? a : b)
 * These two change nothing unless the inputs hold NaN or a zero of each
 * sign in one maximum or minimum: under the constrained profile they do
 * not apply, under `--profile special` they must be caught.
 *
 * Where one-ulp and sign-zero are bugs.  Both are bugs only on an output
 * that HLO semantics determine to the bit.  On the output of a sum, a dot
 * or an approximation a legitimate reordering already moves a value by
 * more than one ulp (so no honest tolerance sees one), and there the
 * arithmetic rule lets +0 and -0 compare equal.  So the backend classifies
 * every output leaf itself, and TUNE_MUTATION_LEAF restricts these two
 * mutations to one class (unset: every leaf, as the others):
 *   exact    every instruction on every path from the entry parameters
 *            and constants to the leaf is one that does not round: data
 *            movement (reshape, transpose, broadcast, slice, concatenate,
 *            pad, gather, dynamic-slice, dynamic-update-slice, copy,
 *            bitcast, bitcast-convert, reverse, iota, and the collectives
 *            that only move data: all-gather, all-to-all,
 *            collective-permute, collective-broadcast), select, compare,
 *            maximum, minimum, clamp, arithmetic whose operands and result
 *            are all integer or pred (a dot or a sum of integers
 *            included), a convert into a type that holds every value of
 *            the source (bf16/f16 to f32/f64, f32 to f64, a narrow
 *            integer to a wider one or to a float whose significand holds
 *            it, pred to anything), a reduce, reduce-window, scatter,
 *            all-reduce or reduce-scatter whose combiner is itself exact
 *            on exact operands (max, min, an integer add, a scatter that
 *            overwrites), an add-reduce over one dimension d of
 *            select(compare(iota along d, a broadcast constant along d),
 *            x, 0) from 0 (a one-hot pick: x plus zeros is x in any
 *            order), tuples, get-tuple-element, fusion and call
 *            (followed into the called computation), constants and
 *            parameters;
 *   rounded  every other leaf (anything not in that list is taken to
 *            round: float arithmetic, every approximation, sort, while,
 *            conditional, custom-call, rng...).
 * The classification is this file's own reading of HLO semantics
 * (issue 13, item 3), written apart from check/'s: the mutation report
 * measures the checker, so it must not share its analysis.  A fusion with
 * no leaf of the chosen class is left unchanged, and the report counts it
 * as a fusion the mutation did not apply to.
 *
 * Legitimate variations, applied to the candidate's accumulations (every
 * add-reduce of an f32 array with an f32 result; a dot is left as the
 * reference computes it):
 *   reorder       the terms summed in reverse order
 *   f64-acc       the terms summed in f64, rounded once
 *   rel-1e-7      the sum times (1 + 1e-7) where it has at least 256
 *                 non-zero terms (a sum of fewer, one picked value plus
 *                 zeros above all, is no long sum: no order moves it so)
 *
 * The reference evaluator is the host's (dev_host, handed over through
 * tune_backend_attach_v1), as in example_backend.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_backend.h"
#include "hlo/hlo_dtype.h"

extern const dev_backend tune_backend_v1;
dev_backend_attach_fn tune_backend_attach_v1;

/* What tune offers; set once when tune loads this object. */
static const dev_host *host;

void tune_backend_attach_v1(const dev_host *h) { host = h; }

struct dev_kernel {
  const hlo_module *m;
  const hlo_computation *kernel;
  bool is_default;
  uint64_t rng_seed; /* the run's --seed, as the reference draws rng */
  int replicas;      /* as the reference simulates them (dev_fusion) */
};

static const char *mutation(void) {
  const char *s = getenv("TUNE_MUTATION");
  return s ? s : "";
}

static bool is(const char *name) { return strcmp(mutation(), name) == 0; }

static void whole_output_config(const dev_fusion *f, int buf, dev_config *c) {
  *c = (dev_config){0};
  c->rank = f->rank;
  for (int d = 0; d < f->rank; d++) {
    c->tile[d] = f->dims[d];
    c->order[c->norder++] = d;
  }
  c->k = f->k_total;
  if (c->k > 0)
    c->order[c->norder++] = DEV_ORDER_K;
  c->buf = buf;
  c->pack = 1;
  c->prec = DEV_PREC_DEFAULT;
}

static int mut_space(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *ncands, dev_config *dflt,
                     hlo_error *err) {
  (void)m;
  dev_config *c = malloc(2 * sizeof *c);
  if (!c)
    return hlo_error_set(err, 0, 0, "mutation backend: out of memory");
  whole_output_config(f, 1, &c[0]);
  whole_output_config(f, 2, &c[1]);
  *dflt = c[0];
  *cands = c;
  *ncands = 2;
  return 0;
}

static dev_status mut_compile(const dev_fusion *f, const dev_config *cfg, const dev_machine *m,
                              const dev_compiler *cc, dev_kernel **out, char *why, size_t why_len) {
  (void)m;
  (void)cc;
  dev_kernel *k = malloc(sizeof *k);
  if (!k) {
    snprintf(why, why_len, "mutation backend: out of memory");
    return DEV_COMPILE_ERROR;
  }
  k->m = f->m;
  k->rng_seed = f->rng_seed;
  k->replicas = f->replicas > 0 ? f->replicas : 1;
  k->kernel = f->comp;
  k->is_default = cfg->buf == 1;
  *out = k;
  return DEV_OK;
}

/* An add-reduce of one f32 array recomputed from its operands: `skip`
 * leaves out the terms whose first reduced coordinate is below an eighth
 * of that dimension; mode 'r' sums in reverse order in f32, 'd' in f64. */
static void resum(const hlo_instr *ins, const hlo_value *x, const hlo_value *init, hlo_value *v, char mode, bool skip) {
  bool red[HLO_MAX_RANK] = {false};
  int first = -1;
  for (int i = 0; i < ins->attrs.dimensions.n; i++) {
    int64_t d = ins->attrs.dimensions.v[i];
    if (d < 0 || d >= x->rank)
      return;
    red[d] = true;
    if (first < 0 || d < first)
      first = (int)d;
  }
  if (first < 0)
    return;
  int64_t cut = skip ? (x->dims[first] + 7) / 8 : 0;
  double *acc64 = calloc((size_t)(v->count ? v->count : 1), sizeof *acc64);
  float *acc32 = calloc((size_t)(v->count ? v->count : 1), sizeof *acc32);
  if (!acc64 || !acc32) {
    free(acc64);
    free(acc32);
    return;
  }
  int64_t idx[HLO_MAX_RANK];
  for (int64_t step = 0; step < x->count; step++) {
    int64_t i = mode == 'r' ? x->count - 1 - step : step;
    int64_t rem = i;
    for (int d = x->rank - 1; d >= 0; d--) {
      idx[d] = x->dims[d] ? rem % x->dims[d] : 0;
      rem = x->dims[d] ? rem / x->dims[d] : 0;
    }
    if (idx[first] < cut)
      continue;
    int64_t o = 0;
    for (int d = 0; d < x->rank; d++)
      if (!red[d])
        o = o * x->dims[d] + idx[d];
    if (o >= v->count)
      continue;
    double t = hlo_value_get_f64(x, i);
    acc64[o] += t;
    acc32[o] += (float)t;
  }
  double a0 = hlo_value_get_f64(init, 0);
  for (int64_t o = 0; o < v->count; o++)
    hlo_value_set_f64(v, o, mode == 'd' ? (double)(float)(acc64[o] + a0) : (double)(acc32[o] + (float)a0));
  free(acc64);
  free(acc32);
}

/* How many non-zero terms each output element of a reduce of x adds;
 * false when the dimensions make no sense. */
static bool nonzero_terms(const hlo_instr *ins, const hlo_value *x, int64_t n, int64_t *terms) {
  bool red[HLO_MAX_RANK] = {false};
  for (int i = 0; i < ins->attrs.dimensions.n; i++) {
    int64_t d = ins->attrs.dimensions.v[i];
    if (d < 0 || d >= x->rank)
      return false;
    red[d] = true;
  }
  int64_t idx[HLO_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->count; i++) {
    int64_t o = 0;
    for (int d = 0; d < x->rank; d++)
      if (!red[d])
        o = o * x->dims[d] + idx[d];
    if (o < n && hlo_value_get_f64(x, i) != 0)
      terms[o]++;
    for (int d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < x->dims[d])
        break;
      idx[d] = 0;
    }
  }
  return true;
}

static bool in_kernel(const hlo_computation *c, const hlo_instr *ins) {
  return ins->index >= 0 && ins->index < c->ninstrs && c->instrs[ins->index] == ins;
}

/* Is the reducer of a reduce a plain add of its two parameters? */
static bool add_reducer(const hlo_instr *ins) {
  const hlo_computation *c = ins->attrs.calls.to_apply;
  return c && c->root && c->root->op == HLO_OP_ADD && c->nparams == 2 && c->root->noperands == 2 &&
         c->root->operands[0]->op == HLO_OP_PARAMETER && c->root->operands[1]->op == HLO_OP_PARAMETER;
}

/* max-nan and max-zero: maximum and minimum of two float operands of one
 * shape recomputed the defective way. */
static void minmax_hook(const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  hlo_value *v = *value;
  if ((ins->op != HLO_OP_MAXIMUM && ins->op != HLO_OP_MINIMUM) || nops != 2 || !v || v->type == HLO_TUPLE ||
      !hlo_etype_is_float(v->type) || hlo_etype_class(v->type) == HLO_CLASS_COMPLEX || ops[0]->count != v->count ||
      ops[1]->count != v->count)
    return;
  hlo_value *c = hlo_value_clone(v);
  if (!c)
    return;
  bool mx = ins->op == HLO_OP_MAXIMUM;
  for (int64_t i = 0; i < c->count; i++) {
    double a = hlo_value_get_f64(ops[0], i), b = hlo_value_get_f64(ops[1], i), r;
    if (is("max-nan"))
      r = mx ? fmax(a, b) : fmin(a, b);
    else
      r = a == b ? a : mx ? (a > b ? a : b) : (a < b ? a : b);
    if (is("max-nan") && !isnan(a) && !isnan(b))
      continue; /* only the NaN handling is defective */
    hlo_value_set_f64(c, i, r);
  }
  hlo_value_unref(v);
  *value = c;
}

static void accum_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  const hlo_computation *kernel = ctx;
  if (is("max-nan") || is("max-zero")) {
    minmax_hook(ins, ops, nops, value);
    return;
  }
  hlo_value *v = *value;
  if (!in_kernel(kernel, ins) || ins->op != HLO_OP_REDUCE || nops != 2 || !v || v->type != HLO_F32 ||
      ops[0]->type != HLO_F32 || !add_reducer(ins))
    return;
  hlo_value *c = hlo_value_clone(v);
  if (!c)
    return;
  if (is("dropped-chunk")) {
    resum(ins, ops[0], ops[1], c, 'f', true);
  } else if (is("reorder")) {
    resum(ins, ops[0], ops[1], c, 'r', false);
  } else if (is("f64-acc")) {
    resum(ins, ops[0], ops[1], c, 'd', false);
  } else if (is("rel-1e-7")) {
    int64_t *terms = calloc((size_t)(c->count ? c->count : 1), sizeof *terms);
    if (terms && nonzero_terms(ins, ops[0], c->count, terms))
      for (int64_t i = 0; i < c->count; i++)
        if (terms[i] >= 256)
          hlo_value_set_f64(c, i, (double)(float)(hlo_value_get_f64(c, i) * (1 + 1e-7)));
    free(terms);
  }
  hlo_value_unref(v);
  *value = c;
}

/* ---- which output leaves HLO semantics determine exactly ------------ */

/* Where a called computation's parameters come from: the call (fusion or
 * call instruction) and the frame it sits in.  NULL: the entry, or a
 * combiner analysed on its own (its operands are then taken as exact). */
typedef struct frame {
  const hlo_instr *call;
  const struct frame *up;
} frame;

/* A memo of the analysis, keyed by instruction, tuple element and the
 * chain of calls above it; a full table only stops memoising. */
enum { MEMO_SIZE = 1 << 14, MAX_VISITS = 1 << 22 };
typedef struct memo_entry {
  const hlo_instr *ins;
  uint64_t chain;
  int idx;
  bool exact;
} memo_entry;
typedef struct exact_ctx {
  memo_entry *memo; /* MEMO_SIZE entries, or NULL */
  long visits;      /* past MAX_VISITS every answer is "rounded" */
} exact_ctx;

static uint64_t chain_hash(const frame *fr) {
  uint64_t h = 0x9E3779B97F4A7C15u;
  for (; fr; fr = fr->up)
    h = (h ^ (uint64_t)(uintptr_t)fr->call) * 0x100000001B3u;
  return h;
}

static bool is_intlike(hlo_etype t) {
  hlo_eclass c = hlo_etype_class(t);
  return c == HLO_CLASS_PRED || c == HLO_CLASS_SINT || c == HLO_CLASS_UINT;
}

/* The significand bits (the implicit one included) of the float types a
 * widening convert may end in; 0 for the others. */
static int significand_bits(hlo_etype t) {
  switch (t) {
  case HLO_BF16: return 8;
  case HLO_F16: return 11;
  case HLO_F32: return 24;
  case HLO_F64: return 53;
  default: return 0;
  }
}

/* Does every value of src have an exact image in dst? */
static bool widens_exactly(hlo_etype src, hlo_etype dst) {
  if (src == dst)
    return true;
  hlo_eclass cs = hlo_etype_class(src), cd = hlo_etype_class(dst);
  int bs = hlo_etype_bits(src), bd = hlo_etype_bits(dst);
  if (cs == HLO_CLASS_PRED)
    return cd != HLO_CLASS_COMPLEX && cd != HLO_CLASS_OTHER;
  if (cs == HLO_CLASS_UINT) {
    if (cd == HLO_CLASS_UINT)
      return bd >= bs;
    if (cd == HLO_CLASS_SINT)
      return bd > bs;
    if (cd == HLO_CLASS_FLOAT)
      return bs <= significand_bits(dst);
    return false;
  }
  if (cs == HLO_CLASS_SINT) {
    if (cd == HLO_CLASS_SINT)
      return bd >= bs;
    if (cd == HLO_CLASS_FLOAT)
      return bs - 1 <= significand_bits(dst);
    return false;
  }
  if (cs == HLO_CLASS_FLOAT) {
    if (src == HLO_BF16 || src == HLO_F16)
      return dst == HLO_F32 || dst == HLO_F64;
    if (src == HLO_F32)
      return dst == HLO_F64;
  }
  return false;
}

static bool exact_value(exact_ctx *cx, const hlo_instr *ins, int idx, const frame *fr);

/* Is a combiner (reducer, scatter update) exact when its operands are? */
static bool exact_combiner(exact_ctx *cx, const hlo_computation *c) {
  return c && c->root && exact_value(cx, c->root, -1, NULL);
}

static bool operands_exact(exact_ctx *cx, const hlo_instr *ins, const frame *fr) {
  for (int i = 0; i < ins->noperands; i++)
    if (!exact_value(cx, ins->operands[i], -1, fr))
      return false;
  return true;
}

static bool all_intlike(const hlo_instr *ins) {
  if (ins->shape.type == HLO_TUPLE || !is_intlike(ins->shape.type))
    return false;
  for (int i = 0; i < ins->noperands; i++)
    if (ins->operands[i]->shape.type == HLO_TUPLE || !is_intlike(ins->operands[i]->shape.type))
      return false;
  return true;
}

/* Is ins a float zero: a constant 0, or a broadcast of one? */
static bool is_zero(const hlo_instr *ins) {
  if (ins->op == HLO_OP_BROADCAST && ins->noperands == 1)
    ins = ins->operands[0];
  const hlo_literal *l = ins->literal;
  if (ins->op != HLO_OP_CONSTANT || !l || l->elided || l->ntuple || l->count < 1)
    return false;
  for (int64_t i = 0; i < l->count; i++)
    if (!(l->f ? l->f[i] == 0 : l->i ? l->i[i] == 0 : l->u ? l->u[i] == 0 : false))
      return false;
  return true;
}

/* compare(iota along d, v) == (or the operands the other way), where v
 * is a broadcast that does not vary along d: true at most once along d. */
static bool one_hit_along(const hlo_instr *cmp, int64_t d) {
  if (cmp->op != HLO_OP_COMPARE || cmp->noperands != 2 || cmp->attrs.direction != HLO_CMP_EQ)
    return false;
  for (int side = 0; side < 2; side++) {
    const hlo_instr *io = cmp->operands[side], *v = cmp->operands[1 - side];
    if (io->op != HLO_OP_IOTA || io->attrs.iota_dimension != d || !is_intlike(io->shape.type) ||
        v->op != HLO_OP_BROADCAST)
      continue;
    bool varies = false;
    for (int i = 0; i < v->attrs.dimensions.n; i++)
      varies = varies || v->attrs.dimensions.v[i] == d;
    if (!varies)
      return true;
  }
  return false;
}

/* An add-reduce over one dimension d of select(one hit along d, x, 0)
 * from 0 (a one-hot pick): at most one term per output is not +0, and x
 * plus zeros is x in any order, so the sum does not round (issue 13 item
 * 3).  Exact when x and the predicate's inputs are; the plain form only. */
static bool exact_one_hot_pick(exact_ctx *cx, const hlo_instr *ins, const frame *fr) {
  const hlo_computation *r = ins->attrs.calls.to_apply;
  if (ins->op != HLO_OP_REDUCE || ins->noperands != 2 || ins->attrs.dimensions.n != 1 || !r || !r->root ||
      r->root->op != HLO_OP_ADD || r->nparams != 2 || r->root->operands[0]->op != HLO_OP_PARAMETER ||
      r->root->operands[1]->op != HLO_OP_PARAMETER || r->root->operands[0] == r->root->operands[1])
    return false;
  const hlo_instr *sel = ins->operands[0];
  if (sel->op != HLO_OP_SELECT || sel->noperands != 3 || !is_zero(ins->operands[1]) || !is_zero(sel->operands[2]) ||
      !one_hit_along(sel->operands[0], ins->attrs.dimensions.v[0]))
    return false;
  return exact_value(cx, sel, -1, fr);
}

/* Does this instruction, given exact operands, produce an exact value? */
static bool op_keeps_exact(exact_ctx *cx, const hlo_instr *ins) {
  switch (ins->op) {
  case HLO_OP_CONSTANT:
  case HLO_OP_IOTA:
  case HLO_OP_RESHAPE:
  case HLO_OP_TRANSPOSE:
  case HLO_OP_BROADCAST:
  case HLO_OP_SLICE:
  case HLO_OP_CONCATENATE:
  case HLO_OP_PAD:
  case HLO_OP_GATHER:
  case HLO_OP_DYNAMIC_SLICE:
  case HLO_OP_DYNAMIC_UPDATE_SLICE:
  case HLO_OP_COPY:
  case HLO_OP_BITCAST:
  case HLO_OP_BITCAST_CONVERT:
  case HLO_OP_REVERSE:
  case HLO_OP_ALL_GATHER:
  case HLO_OP_ALL_TO_ALL:
  case HLO_OP_COLLECTIVE_PERMUTE:
  case HLO_OP_COLLECTIVE_BROADCAST:
  case HLO_OP_SELECT:
  case HLO_OP_COMPARE:
  case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM:
  case HLO_OP_CLAMP:
    return true;
  case HLO_OP_CONVERT:
    return ins->noperands == 1 && widens_exactly(ins->operands[0]->shape.type, ins->shape.type);
  case HLO_OP_REDUCE:
  case HLO_OP_REDUCE_WINDOW:
  case HLO_OP_SCATTER:
  case HLO_OP_ALL_REDUCE:
  case HLO_OP_REDUCE_SCATTER:
    return exact_combiner(cx, ins->attrs.calls.to_apply);
  case HLO_OP_ADD:
  case HLO_OP_SUBTRACT:
  case HLO_OP_MULTIPLY:
  case HLO_OP_DIVIDE:
  case HLO_OP_REMAINDER:
  case HLO_OP_POWER:
  case HLO_OP_NEGATE:
  case HLO_OP_ABS:
  case HLO_OP_SIGN:
  case HLO_OP_AND:
  case HLO_OP_OR:
  case HLO_OP_XOR:
  case HLO_OP_NOT:
  case HLO_OP_SHIFT_LEFT:
  case HLO_OP_SHIFT_RIGHT_ARITHMETIC:
  case HLO_OP_SHIFT_RIGHT_LOGICAL:
  case HLO_OP_POPCNT:
  case HLO_OP_CLZ:
  case HLO_OP_DOT:
  case HLO_OP_CONVOLUTION:
    return all_intlike(ins);
  default:
    return false;
  }
}

/* Is the value of ins (idx >= 0: only its tuple element idx) exact?
 * Conservative: whatever it does not recognise rounds. */
static bool exact_value(exact_ctx *cx, const hlo_instr *ins, int idx, const frame *fr) {
  if (++cx->visits > MAX_VISITS)
    return false;
  uint64_t chain = chain_hash(fr);
  memo_entry *slot = NULL;
  if (cx->memo) {
    uint64_t h = (chain ^ (uint64_t)(uintptr_t)ins ^ (uint64_t)(idx + 1) * 0xC2B2AE3D27D4EB4Fu) * 0x9E3779B97F4A7C15u;
    for (uint64_t probe = 0; probe < 8; probe++) {
      memo_entry *e = &cx->memo[((h >> 40) + probe) % MEMO_SIZE];
      if (e->ins == ins && e->chain == chain && e->idx == idx)
        return e->exact;
      if (!e->ins) {
        slot = e;
        break;
      }
    }
  }
  bool r;
  switch (ins->op) {
  case HLO_OP_PARAMETER:
    if (fr) {
      int64_t p = ins->parameter_number;
      r = p >= 0 && p < fr->call->noperands && exact_value(cx, fr->call->operands[p], idx, fr->up);
    } else {
      r = true; /* an input of the module, or an operand of an exact-fed combiner */
    }
    break;
  case HLO_OP_TUPLE:
    if (idx >= 0)
      r = idx < ins->noperands && exact_value(cx, ins->operands[idx], -1, fr);
    else
      r = operands_exact(cx, ins, fr);
    break;
  case HLO_OP_GET_TUPLE_ELEMENT:
    r = ins->noperands == 1 && exact_value(cx, ins->operands[0], (int)ins->attrs.index, fr);
    break;
  case HLO_OP_FUSION:
  case HLO_OP_CALL: {
    const hlo_computation *c = ins->attrs.calls.calls ? ins->attrs.calls.calls : ins->attrs.calls.to_apply;
    frame inner = {ins, fr};
    r = c && c->root && exact_value(cx, c->root, idx, &inner);
    break;
  }
  default:
    r = (op_keeps_exact(cx, ins) && operands_exact(cx, ins, fr)) || exact_one_hot_pick(cx, ins, fr);
    break;
  }
  if (slot)
    *slot = (memo_entry){ins, chain, idx, r};
  return r;
}

/* One flag per array leaf of the entry root's value, depth first: is the
 * leaf exact?  A leaf under tuple element j of the root takes element j's
 * class (a deeper nesting is judged as a whole, which only errs towards
 * "rounded"). */
static void classify_leaves(const hlo_module *m, bool *exact, int nleaves) {
  const hlo_instr *root = m->entry ? m->entry->root : NULL;
  for (int i = 0; i < nleaves; i++)
    exact[i] = false;
  if (!root)
    return;
  exact_ctx cx = {calloc(MEMO_SIZE, sizeof(memo_entry)), 0};
  if (root->shape.type != HLO_TUPLE) {
    if (nleaves > 0)
      exact[0] = exact_value(&cx, root, -1, NULL);
  } else {
    int k = 0;
    for (int j = 0; j < root->shape.ntuple && k < nleaves; j++) {
      int n = hlo_shape_leaf_count(&root->shape.elems[j]);
      bool e = exact_value(&cx, root, j, NULL);
      for (int t = 0; t < n && k < nleaves; t++)
        exact[k++] = e;
    }
  }
  free(cx.memo);
}

/* TUNE_MUTATION_LEAF: 'e' exact, 'r' rounded, 0 every leaf. */
static char leaf_class(void) {
  const char *s = getenv("TUNE_MUTATION_LEAF");
  if (!s || !*s)
    return 0;
  return strcmp(s, "exact") == 0 ? 'e' : strcmp(s, "rounded") == 0 ? 'r' : '?';
}

/* The next representable value above element i, for any type. */
static void bump(hlo_value *v, int64_t i) {
  unsigned char *p = (unsigned char *)v->data + (size_t)i * v->elem_size;
  uint64_t bits = 0;
  memcpy(&bits, p, v->elem_size); /* little-endian hosts: the low bytes */
  bits += 1;
  memcpy(p, &bits, v->elem_size);
}

/* pick (NULL: every leaf) says which leaves one-ulp and sign-zero change,
 * indexed by *k, the leaf's depth-first position (npick entries, a leaf
 * past them is not picked). */
static void mutate_leaf(hlo_value *v, uint64_t jitter, bool dflt, const bool *pick, int npick, int *k) {
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      mutate_leaf(v->elems[i], jitter, dflt, pick, npick, k);
    return;
  }
  bool picked = !pick || (*k < npick && pick[*k]);
  (*k)++;
  int64_t n = v->count;
  bool fl = hlo_etype_is_float(v->type) && hlo_etype_class(v->type) != HLO_CLASS_COMPLEX;
  if (n == 0 || v->elem_size > 8 || hlo_etype_class(v->type) == HLO_CLASS_COMPLEX)
    return;
  size_t es = v->elem_size;
  char *d = v->data;
  if (dflt) {
    if (is("default-race") && fl && (jitter & 1))
      hlo_value_set_f64(v, n / 2, 2 * hlo_value_get_f64(v, n / 2) + 1);
    if (!is("default-only"))
      return;
    bump(v, n / 2);
    if (fl)
      for (int64_t i = 0; i < n; i++)
        hlo_value_set_f64(v, i, hlo_value_get_f64(v, i) * (1 + 1e-3));
    for (int64_t i = n > 7 ? n - 7 : 0; i < n; i++)
      memset(d + (size_t)i * es, 0, es);
    return;
  }
  if (is("one-ulp")) {
    if (picked)
      bump(v, n / 2);
  } else if (is("ragged-zero")) {
    for (int64_t i = n > 7 ? n - 7 : 0; i < n; i++)
      memset(d + (size_t)i * es, 0, es);
  } else if (is("ragged-stale")) {
    for (int64_t i = n - 1; i >= 7 && i >= n - 7; i--)
      memcpy(d + (size_t)i * es, d + (size_t)(i - 7) * es, es);
  } else if (is("nan") && fl) {
    hlo_value_set_f64(v, n / 2, NAN);
  } else if (is("swap")) {
    for (int64_t i = 1; i < n; i++)
      if (memcmp(d, d + (size_t)i * es, es) != 0) {
        char tmp[8];
        memcpy(tmp, d, es);
        memcpy(d, d + (size_t)i * es, es);
        memcpy(d + (size_t)i * es, tmp, es);
        break;
      }
  } else if (is("bf16") && v->type == HLO_F32) {
    for (int64_t i = 0; i < n; i++)
      hlo_value_set_f64(v, i, hlo_bf16_to_f32(hlo_f32_to_bf16((float)hlo_value_get_f64(v, i))));
  } else if (is("scale") && fl) {
    for (int64_t i = 0; i < n; i++)
      hlo_value_set_f64(v, i, hlo_value_get_f64(v, i) * (1 + 1e-3));
  } else if (is("sign-zero") && fl && picked) {
    for (int64_t i = 0; i < n; i++) {
      double x = hlo_value_get_f64(v, i);
      if (x == 0)
        hlo_value_set_f64(v, i, signbit(x) ? 0.0 : -0.0);
    }
  } else if (is("race") && fl && (jitter & 1)) { /* jitter: the run's parity */
    hlo_value_set_f64(v, n / 2, 2 * hlo_value_get_f64(v, n / 2) + 1);
  }
}

static void mut_run(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t jitter_seed, dev_run *out) {
  *out = (dev_run){0};
  bool variation =
      is("reorder") || is("f64-acc") || is("rel-1e-7") || is("dropped-chunk") || is("max-nan") || is("max-zero");
  dev_host_opts eo = {.replicas = k->replicas, .emulate_device = 1, .rng_seed = k->rng_seed};
  if (variation && !k->is_default) {
    eo.hook = accum_hook;
    eo.hook_ctx = (void *)k->kernel;
  }
  hlo_error err = {0};
  hlo_value *v = NULL;
  if (!host) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "mutation backend: loaded by a host that offers no evaluator");
    return;
  }
  if (host->evaluate(k->m, nargs, args, &eo, &v, &err) != 0) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "mutation backend: %d:%d: %.400s", err.line, err.col, err.msg);
    return;
  }
  /* The root may be an argument itself: mutate a copy. */
  hlo_value *c = hlo_value_clone(v);
  hlo_value_unref(v);
  if (!c) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "mutation backend: out of memory");
    return;
  }
  v = c;
  /* A race: runs of the candidate alternate between two outputs whatever
   * their timing seeds. */
  static unsigned runs, default_runs;
  (void)jitter_seed;
  uint64_t parity = __atomic_fetch_add(k->is_default ? &default_runs : &runs, 1, __ATOMIC_RELAXED) & 1;
  if (k->is_default && !is("default-race"))
    parity = 0;
  /* one-ulp and sign-zero may be limited to one class of leaves */
  char cls = leaf_class();
  bool *pick = NULL;
  if (cls == '?') {
    hlo_value_unref(v);
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "mutation backend: TUNE_MUTATION_LEAF is neither exact nor rounded");
    return;
  }
  int nleaves = k->m->entry && k->m->entry->root ? hlo_shape_leaf_count(&k->m->entry->root->shape) : 0;
  if (cls && nleaves > 0) {
    pick = malloc((size_t)nleaves * sizeof *pick);
    if (!pick) {
      hlo_value_unref(v);
      out->status = DEV_RUNTIME_ERROR;
      snprintf(out->message, sizeof out->message, "mutation backend: out of memory");
      return;
    }
    classify_leaves(k->m, pick, nleaves);
    if (cls == 'r')
      for (int i = 0; i < nleaves; i++)
        pick[i] = !pick[i];
  }
  bool none = false; /* a class asked for, and no leaf classified: none picked */
  int leaf = 0;
  mutate_leaf(v, parity ^ 1, k->is_default, pick ? pick : cls ? &none : NULL, pick ? nleaves : 0, &leaf);
  free(pick);
  out->status = DEV_OK;
  out->out = v;
  out->steps = 1;
}

static double mut_cost(const dev_kernel *k) { return k->is_default ? 2e-6 : 1e-6; }

static void mut_release(dev_kernel *k) { free(k); }

const dev_backend tune_backend_v1 = {
    .abi = DEV_BACKEND_ABI,
    .name = "mutation",
    .space = mut_space,
    .compile = mut_compile,
    .run = mut_run,
    .cost = mut_cost,
    .release = mut_release,
    /* none: its variations reorder sums in ways no config's depth describes */
    .caps = 0,
};
