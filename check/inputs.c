/* inputs.c — counter-based input synthesis (see inputs.h for the rules).
 *
 * The generator is three rounds of the splitmix64 finaliser, one per
 * coordinate (seed, stream, counter).  Each round is a bijection with full
 * avalanche, so nearby coordinates (element 7 and 8, seed 0 and 1) give
 * unrelated bits, and nothing is carried from one element to the next —
 * which is what makes filling in parallel give the same bytes.
 */
#include "inputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_dtype.h"

/* ---- profiles ----------------------------------------------------------- */

static const char *const profile_names[CHK_INPUTS_PROFILE_COUNT] = {"naive", "constrained", "edge", "oob-indices",
                                                                    "special"};

const char *chk_inputs_profile_name(chk_inputs_profile p) {
  return (unsigned)p < CHK_INPUTS_PROFILE_COUNT ? profile_names[p] : "?";
}

int chk_inputs_profile_from_name(const char *name, chk_inputs_profile *p) {
  for (int i = 0; i < CHK_INPUTS_PROFILE_COUNT; i++)
    if (strcmp(name, profile_names[i]) == 0) {
      *p = (chk_inputs_profile)i;
      return 0;
    }
  return -1;
}

/* ---- bits --------------------------------------------------------------- */

static uint64_t mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

uint64_t chk_inputs_bits(uint64_t seed, uint64_t stream, uint64_t counter) {
  /* Distinct odd constants keep (s, k, i) and (k, s, i) apart. */
  uint64_t h = mix64(seed + 0x9E3779B97F4A7C15ull);
  h = mix64(h ^ (stream * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  return mix64(h ^ (counter * 0xAEF17502108EF2D9ull + 0x2545F4914F6CDD1Dull));
}

/* Uniform integer in [0, n) from the top 32 bits (n <= 2^32): a multiply
 * instead of a modulo, so the bias is below 2^-32 and no division is done. */
static uint64_t below(uint64_t h, uint64_t n) { return ((h >> 32) * n) >> 32; }

/* ---- index analysis ---------------------------------------------------- */

#define MAX_DEPTH 16
#define WALK_BUDGET 4096

/* The bound one use asks for, in the coordinates of the value used. */
static void bound_set(chk_inputs_index *b, int axis, int ncomp, const int64_t *hi) {
  b->set = true;
  b->axis = axis;
  b->ncomp = ncomp;
  for (int c = 0; c < ncomp; c++)
    b->hi[c] = hi[c] < 0 ? 0 : hi[c];
}

/* One bound for every element: the tightest of the components, which keeps
 * every element in range whatever component it turns out to be. */
static void bound_collapse(chk_inputs_index *b) {
  if (!b->set || b->axis < 0)
    return;
  int64_t lo = b->hi[0];
  for (int c = 1; c < b->ncomp; c++)
    if (b->hi[c] < lo)
      lo = b->hi[c];
  b->axis = -1;
  b->ncomp = 1;
  b->hi[0] = lo;
}

/* Intersects use bound u into the parameter's bound out. */
static void bound_merge(chk_inputs_index *out, chk_inputs_index u) {
  if (!u.set)
    return;
  if (!out->set) {
    *out = u;
    return;
  }
  if (out->axis != u.axis || out->ncomp != u.ncomp) {
    bound_collapse(out);
    bound_collapse(&u);
  }
  for (int c = 0; c < out->ncomp; c++)
    if (u.hi[c] < out->hi[c])
      out->hi[c] = u.hi[c];
}

/* Index vectors along dimension ivd of an index array of rank `rank`:
 * component c indexes operand dimension dim_of[c] and may start at most at
 * max_start[dim_of[c]]. */
static chk_inputs_index index_vector_bound(int rank, int64_t ivd, int ncomp, const int64_t *dim_of,
                                           const int64_t *max_start, int operand_rank) {
  chk_inputs_index b = {0};
  int64_t hi[CHK_INPUTS_MAX_COMPONENTS];
  int n = ncomp < CHK_INPUTS_MAX_COMPONENTS ? ncomp : CHK_INPUTS_MAX_COMPONENTS;
  if (n <= 0)
    return b;
  for (int c = 0; c < n; c++)
    hi[c] = dim_of[c] >= 0 && dim_of[c] < operand_rank ? max_start[dim_of[c]] : 0;
  bound_set(&b, ivd < rank ? (int)ivd : -1, n, hi);
  /* An implicit trailing index vector of one component covers all. */
  if (ivd >= rank || ncomp > CHK_INPUTS_MAX_COMPONENTS)
    bound_collapse(&b);
  return b;
}

static chk_inputs_index gather_bound(const hlo_instr *g) {
  chk_inputs_index none = {0};
  const hlo_gather_dnums *d = &g->attrs.gather;
  const hlo_shape *op = &g->operands[0]->shape, *ix = &g->operands[1]->shape;
  if (op->type == HLO_TUPLE || ix->type == HLO_TUPLE || g->attrs.slice_sizes.n != op->rank ||
      op->rank > HLO_MAX_RANK)
    return none;
  int64_t max_start[HLO_MAX_RANK];
  for (int i = 0; i < op->rank; i++)
    max_start[i] = op->dims[i] - g->attrs.slice_sizes.v[i];
  return index_vector_bound(ix->rank, d->index_vector_dim, d->start_index_map.n, d->start_index_map.v, max_start,
                            op->rank);
}

static bool contains(const hlo_ints *s, int64_t x) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == x)
      return true;
  return false;
}

static chk_inputs_index scatter_bound(const hlo_instr *s) {
  chk_inputs_index none = {0};
  int n = (s->noperands - 1) / 2;
  const hlo_scatter_dnums *d = &s->attrs.scatter;
  if (n < 1)
    return none;
  const hlo_shape *op = &s->operands[0]->shape, *ix = &s->operands[n]->shape, *up = &s->operands[n + 1]->shape;
  if (op->type == HLO_TUPLE || ix->type == HLO_TUPLE || up->type == HLO_TUPLE || op->rank > HLO_MAX_RANK)
    return none;
  /* The update window's extent in each operand dimension: inserted and
   * batching dimensions have extent 1; the others take the update window
   * dimensions in increasing order. */
  int64_t max_start[HLO_MAX_RANK];
  int w = 0;
  for (int i = 0; i < op->rank; i++) {
    int64_t extent = 1;
    if (!contains(&d->inserted_window_dims, i) && !contains(&d->input_batching_dims, i)) {
      if (w >= d->update_window_dims.n)
        return none;
      int64_t ud = d->update_window_dims.v[w++];
      if (ud < 0 || ud >= up->rank)
        return none;
      extent = up->dims[ud];
    }
    max_start[i] = op->dims[i] - extent;
  }
  return index_vector_bound(ix->rank, d->index_vector_dim, d->scatter_dims_to_operand_dims.n,
                            d->scatter_dims_to_operand_dims.v, max_start, op->rank);
}

/* A scalar start index of dynamic-slice (operand j >= 1) or
 * dynamic-update-slice (j >= 2) into operand 0's dimension. */
static chk_inputs_index start_bound(const hlo_instr *u, int j) {
  chk_inputs_index none = {0};
  const hlo_shape *op = &u->operands[0]->shape;
  int dim = u->op == HLO_OP_DYNAMIC_SLICE ? j - 1 : j - 2;
  if (op->type == HLO_TUPLE || dim < 0 || dim >= op->rank)
    return none;
  int64_t size;
  if (u->op == HLO_OP_DYNAMIC_SLICE) {
    if (u->attrs.dynamic_slice_sizes.n != op->rank)
      return none;
    size = u->attrs.dynamic_slice_sizes.v[dim];
  } else {
    const hlo_shape *up = &u->operands[1]->shape;
    if (up->type == HLO_TUPLE || up->rank != op->rank)
      return none;
    size = up->dims[dim];
  }
  int64_t hi = op->dims[dim] - size;
  chk_inputs_index b = {0};
  bound_set(&b, -1, 1, &hi);
  return b;
}

/* Ops whose result holds operand values unchanged, only moved (or, for
 * convert of small integers, re-typed). */
static bool moves_values(hlo_opcode op, bool *same_positions) {
  switch (op) {
  case HLO_OP_CONVERT:
  case HLO_OP_COPY:
    *same_positions = true;
    return true;
  case HLO_OP_RESHAPE:
  case HLO_OP_BITCAST:
  case HLO_OP_BROADCAST:
  case HLO_OP_TRANSPOSE:
  case HLO_OP_SLICE:
  case HLO_OP_CONCATENATE:
  case HLO_OP_REVERSE:
    *same_positions = false;
    return true;
  default:
    return false;
  }
}

/* Collects into out the bounds asked by every use of x (an instruction
 * whose values are the parameter's).  `exact` says x's elements sit where
 * the parameter's do, so per-component bounds still apply to it. */
static void collect_uses(const hlo_instr *x, chk_inputs_index *out, bool exact, int depth, int *budget) {
  const hlo_computation *c = x->parent;
  /* The budget bounds the walk on graphs where values fan out and join
   * again many times (a diamond of converts would otherwise be walked
   * once per path). */
  if (!c || depth > MAX_DEPTH || --*budget < 0)
    return;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *u = c->instrs[i];
    for (int j = 0; j < u->noperands; j++) {
      if (u->operands[j] != x)
        continue;
      chk_inputs_index b = {0};
      bool same = false;
      const hlo_computation *callee = NULL;
      switch (u->op) {
      case HLO_OP_GATHER:
        if (j == 1)
          b = gather_bound(u);
        break;
      case HLO_OP_SCATTER:
        if (u->noperands % 2 == 1 && j == (u->noperands - 1) / 2)
          b = scatter_bound(u);
        break;
      case HLO_OP_DYNAMIC_SLICE:
        if (j >= 1)
          b = start_bound(u, j);
        break;
      case HLO_OP_DYNAMIC_UPDATE_SLICE:
        if (j >= 2)
          b = start_bound(u, j);
        break;
      case HLO_OP_FUSION:
        callee = u->attrs.calls.calls;
        break;
      case HLO_OP_CALL:
        callee = u->attrs.calls.to_apply ? u->attrs.calls.to_apply : u->attrs.calls.calls;
        break;
      default:
        if (moves_values(u->op, &same)) {
          chk_inputs_index through = {0};
          collect_uses(u, &through, exact && same, depth + 1, budget);
          if (!(exact && same))
            bound_collapse(&through);
          b = through;
        }
        break;
      }
      if (callee && j < callee->nparams && callee->params[j]) {
        collect_uses(callee->params[j], &b, exact, depth + 1, budget);
        if (!exact)
          bound_collapse(&b);
      }
      if (!exact)
        bound_collapse(&b);
      bound_merge(out, b);
    }
  }
}

void chk_inputs_find_index_params(const hlo_module *m, chk_inputs_index *idx) {
  const hlo_computation *e = m->entry;
  if (!e)
    return;
  for (int k = 0; k < e->nparams; k++) {
    memset(&idx[k], 0, sizeof idx[k]);
    const hlo_instr *p = e->params[k];
    if (!p || p->shape.type == HLO_TUPLE || !hlo_etype_is_int(p->shape.type))
      continue;
    int budget = WALK_BUDGET;
    collect_uses(p, &idx[k], true, 0, &budget);
    if (idx[k].set && idx[k].axis >= p->shape.rank)
      bound_collapse(&idx[k]);
  }
}

/* ---- special-value analysis -------------------------------------------- */

/* What the uses of a value allow (special_uses). */
enum {
  SP_ORDER = 1,   /* some use orders or picks values: max, min, clamp, ... */
  SP_BAD = 2,     /* some use computes with them, or is not understood */
  SP_ROOT = 4,    /* the value reaches its computation's root unchanged */
  SP_NO_NAN = 8,  /* a sort compares it with a FLOAT compare: NaN breaks the
                     comparator's strict weak order, and so the sort itself */
};

/* A sort's comparator as a single compare: its comparison type, or
 * HLO_CMPT_NONE when the comparator is anything else. */
static hlo_cmp_type sort_cmp_type(const hlo_instr *u) {
  const hlo_computation *c = u->attrs.calls.to_apply;
  if (!c || !c->root || c->root->op != HLO_OP_COMPARE)
    return HLO_CMPT_NONE;
  return c->root->attrs.cmp_type;
}

/* Or of SP_* over every use of x, followed through ops that only move
 * values, into called computations and, from a called computation's root,
 * back out to the uses of its call.  An ordering use ends the walk: what
 * the program does with the maximum of a NaN is its own semantics.  A
 * reduction whose reducer is anything but maximum or minimum (argmax's
 * compare-and-select) does not qualify: with two NaNs in a row, which
 * index it returns depends on the order it combines them in. */
static int special_uses(const hlo_instr *x, int depth, int *budget) {
  const hlo_computation *c = x->parent;
  if (!c || depth > MAX_DEPTH || --*budget < 0)
    return SP_BAD;
  int f = c->root == x ? SP_ROOT : 0;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *u = c->instrs[i];
    for (int j = 0; j < u->noperands; j++) {
      if (u->operands[j] != x)
        continue;
      bool same = false;
      const hlo_computation *callee = NULL;
      switch (u->op) {
      case HLO_OP_MAXIMUM:
      case HLO_OP_MINIMUM:
      case HLO_OP_CLAMP:
      case HLO_OP_COMPARE:
        f |= SP_ORDER;
        break;
      case HLO_OP_SELECT:
        f |= j >= 1 ? SP_ORDER : SP_BAD;
        break;
      case HLO_OP_SORT:
        f |= SP_ORDER | (sort_cmp_type(u) == HLO_CMPT_TOTALORDER ? 0 : SP_NO_NAN);
        break;
      case HLO_OP_REDUCE:
      case HLO_OP_REDUCE_WINDOW: {
        /* The reduced operands of a max or min reduction, not its inits. */
        const hlo_computation *r = u->attrs.calls.to_apply;
        bool picks = r && r->root && (r->root->op == HLO_OP_MAXIMUM || r->root->op == HLO_OP_MINIMUM);
        f |= picks && j < u->noperands / 2 ? SP_ORDER : SP_BAD;
        break;
      }
      case HLO_OP_FUSION:
        callee = u->attrs.calls.calls;
        break;
      case HLO_OP_CALL:
        callee = u->attrs.calls.to_apply ? u->attrs.calls.to_apply : u->attrs.calls.calls;
        break;
      case HLO_OP_ABS:
      case HLO_OP_NEGATE:
        /* Exact, and NaN stays NaN, an infinity infinite, a zero zero. */
        f |= special_uses(u, depth + 1, budget);
        break;
      case HLO_OP_CONVERT:
        /* Between floats a NaN stays NaN and an infinity infinite; into an
         * integer type both become ordinary numbers. */
        if (hlo_etype_class(u->shape.type) != HLO_CLASS_FLOAT) {
          f |= SP_BAD;
          break;
        }
        /* fall through */
      default:
        if (moves_values(u->op, &same)) {
          int g = special_uses(u, depth + 1, budget);
          f |= g;
        } else {
          f |= SP_BAD;
        }
        break;
      }
      if (callee) {
        if (j >= callee->nparams || !callee->params[j]) {
          f |= SP_BAD;
          continue;
        }
        int g = special_uses(callee->params[j], depth + 1, budget);
        f |= g & ~SP_ROOT;
        if (g & SP_ROOT)
          f |= special_uses(u, depth + 1, budget);
      }
    }
  }
  return f;
}

/* Types whose NaN, infinities and subnormals are all encodable. */
static bool has_specials(hlo_etype t) { return t == HLO_F16 || t == HLO_BF16 || t == HLO_F32 || t == HLO_F64; }

/* SPECIAL: 0 for a parameter that gets no special values, otherwise
 * SP_ORDER, with SP_NO_NAN when NaN must be left out.  A parameter
 * qualifies when it is a float type that has them, nothing is demanded of
 * its range beyond the headroom cap (no log, divide or exp downstream
 * cares about its magnitude), and every use orders or picks
 * values, directly or after moving them. */
static int special_param(const hlo_instr *p, const chk_range *r) {
  if (!p || p->shape.type == HLO_TUPLE || !has_specials(p->shape.type))
    return 0;
  /* Every float value is asked to stay under the headroom cap; anything
   * tighter is a real demand. */
  double cap = chk_intervals_cap(p->shape.type);
  if (r->lo > -cap || r->hi < cap || r->min_mag != 0)
    return 0;
  int budget = WALK_BUDGET;
  int f = special_uses(p, 0, &budget);
  if ((f & SP_BAD) || !(f & SP_ORDER))
    return 0;
  return f & (SP_ORDER | SP_NO_NAN);
}

/* ---- filling ------------------------------------------------------------ */

/* Fills above this many elements are split over OpenMP threads; below it
 * the threads cost more than they save. */
#define PARALLEL_MIN 65536

/* x in [-1, 1) with 53 random bits. */
static double unit_f64(uint64_t h) { return (double)(h >> 11) * 0x1p-52 - 1.0; }

static void fill_real(hlo_value *v, uint64_t seed, uint64_t stream) {
  int64_t n = v->count;
  if (v->type == HLO_F32) {
    /* 24 random bits: every value of the grid is exact in f32. */
    float *p = v->data;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++)
      p[i] = (float)(chk_inputs_bits(seed, stream, (uint64_t)i) >> 40) * 0x1p-23f - 1.0f;
    return;
  }
  if (v->type == HLO_F64) {
    double *p = v->data;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++)
      p[i] = unit_f64(chk_inputs_bits(seed, stream, (uint64_t)i));
    return;
  }
  if (v->type == HLO_F8E8M0FNU) {
    uint8_t *p = v->data;
    for (int64_t i = 0; i < n; i++) /* 2^-8 .. 2^-1: biased exponents 119..126 */
      p[i] = (uint8_t)(119 + below(chk_inputs_bits(seed, stream, (uint64_t)i), 8));
    return;
  }
  /* Narrow types: round once to the type; the top bin rounds up to 1.0,
   * which is folded onto -1.0 (whose own bin is half as wide), so the
   * range stays [-1, 1) and the grid stays evenly weighted. */
  hlo_etype t = v->type;
  uint64_t one = hlo_float_encode(t, 1.0), minus_one = hlo_float_encode(t, -1.0);
  if (t == HLO_BF16 || t == HLO_F16) {
    /* From the exact 24-bit f32 grid value, rounded once by the inline
     * converters: a single rounding, and ten times faster than the
     * generic encoder on the large bf16 operands of real modules. */
    uint16_t *p = v->data;
    bool bf = t == HLO_BF16;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
      float x = (float)(chk_inputs_bits(seed, stream, (uint64_t)i) >> 40) * 0x1p-23f - 1.0f;
      uint16_t b16 = bf ? hlo_f32_to_bf16(x) : hlo_f32_to_f16(x);
      p[i] = b16 == one ? (uint16_t)minus_one : b16;
    }
    return;
  }
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) {
    uint64_t bits = hlo_float_encode(t, unit_f64(chk_inputs_bits(seed, stream, (uint64_t)i)));
    if (bits == one)
      bits = minus_one;
    if (v->elem_size == 2) {
      uint16_t b16 = (uint16_t)bits;
      memcpy((char *)v->data + 2 * i, &b16, 2);
    } else {
      ((uint8_t *)v->data)[i] = (uint8_t)bits;
    }
  }
}

static void fill_complex(hlo_value *v, uint64_t seed, uint64_t stream) {
  int64_t n = v->count;
  if (v->type == HLO_C64) {
    float *p = v->data;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < 2 * n; i++)
      p[i] = (float)(chk_inputs_bits(seed, stream, (uint64_t)i) >> 40) * 0x1p-23f - 1.0f;
  } else {
    double *p = v->data;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < 2 * n; i++)
      p[i] = unit_f64(chk_inputs_bits(seed, stream, (uint64_t)i));
  }
}

/* The type's own value range, for cutting the default ranges down. */
static void fill_int(hlo_value *v, uint64_t seed, uint64_t stream, const chk_inputs_index *idx) {
  int64_t tlo, thi;
  hlo_etype_int_range(v->type, &tlo, &thi);
  bool sgn = hlo_etype_class(v->type) == HLO_CLASS_SINT;
  int64_t lo = sgn ? -8 : 0, hi = sgn ? 8 : 15;
  bool indexed = idx && idx->set;
  int64_t stride = 1, extent = 1;
  if (indexed) {
    lo = 0;
    if (idx->axis >= 0) {
      for (int d = v->rank - 1; d > idx->axis; d--)
        stride *= v->dims[d];
      extent = v->dims[idx->axis];
    }
  }
  if (lo < tlo)
    lo = tlo;
  int64_t n = v->count;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) {
    int64_t top = hi;
    if (indexed) {
      int c = idx->axis >= 0 ? (int)((i / stride) % extent) : 0;
      top = c < idx->ncomp ? idx->hi[c] : 0;
    }
    if (top > thi)
      top = thi;
    if (top < lo)
      top = lo;
    /* Ranges here are small (< 2^32) except an index bound into a huge
     * dimension, which below() still covers up to 2^32. */
    uint64_t span = (uint64_t)(top - lo) + 1;
    if (span > UINT32_MAX)
      span = UINT32_MAX;
    int64_t x = lo + (int64_t)below(chk_inputs_bits(seed, stream, (uint64_t)i), span);
    /* x is within the type's range, so a plain store of the low bytes is
     * the host form (sub-byte signed values sign-extended in their byte). */
    switch (v->elem_size) {
    case 1: ((uint8_t *)v->data)[i] = (uint8_t)x; break;
    case 2: ((uint16_t *)v->data)[i] = (uint16_t)x; break;
    case 4: ((uint32_t *)v->data)[i] = (uint32_t)x; break;
    default: ((uint64_t *)v->data)[i] = (uint64_t)x; break;
    }
  }
}

/* ---- ranged filling (every profile but NAIVE) --------------------------- */

/* Salts for the second, independent draw of EDGE (which special value, and
 * whether to use one) and for the sort-key permutation. */
#define EDGE_SALT 0x5DEECE66Dull
#define PERM_SALT 0xB5297A4D3F84D5B5ull

/* The set a ranged parameter draws from: [nlo, nhi] and [plo, phi] (either
 * may be empty, nlo > nhi), or the point `point` when is_point. */
typedef struct draw_set {
  bool is_point;
  double point;
  double nlo, nhi, plo, phi;
} draw_set;

static double len_of(double lo, double hi) { return hi > lo ? hi - lo : 0; }

/* The demanded range met with the naive one [dlo, dhi]; a demand that lies
 * wholly outside the naive range keeps its own near edge and a width of
 * max(1, |edge|), so log(x) with x >= 4 gets [4, 8]. */
static draw_set make_set(const chk_range *r, double dlo, double dhi) {
  draw_set s = {0};
  if (r->lo == r->hi) {
    s.is_point = true;
    s.point = r->lo;
    return s;
  }
  double lo = fmax(r->lo, dlo), hi = fmin(r->hi, dhi);
  if (lo > hi) {
    if (r->lo > dhi) {
      lo = r->lo;
      hi = fmin(r->hi, lo + fmax(1, fabs(lo)));
    } else {
      hi = r->hi;
      lo = fmax(r->lo, hi - fmax(1, fabs(hi)));
    }
  }
  double m = r->min_mag;
  /* No demand on magnitude, or one that cannot be met inside [lo, hi]:
   * a single piece, held in [plo, phi] with the other piece empty. */
  if (m == 0 || (lo > -m && hi < m)) {
    s.nlo = 1;
    s.nhi = 0;
    s.plo = lo;
    s.phi = hi;
    return s;
  }
  s.nlo = lo;
  s.nhi = fmin(hi, -m);
  s.plo = fmax(lo, m);
  s.phi = hi;
  return s;
}

static double set_min(const draw_set *s) {
  return s->is_point ? s->point : s->nlo <= s->nhi ? s->nlo : s->plo;
}

static double set_max(const draw_set *s) {
  return s->is_point ? s->point : s->plo <= s->phi ? s->phi : s->nhi;
}

/* u in [0, 1) mapped evenly onto the set. */
static double set_at(const draw_set *s, double u) {
  if (s->is_point)
    return s->point;
  double ln = len_of(s->nlo, s->nhi), lp = len_of(s->plo, s->phi);
  if (ln + lp == 0) /* a single value */
    return s->nlo <= s->nhi ? s->nlo : s->plo;
  double t = u * (ln + lp);
  return t < ln ? s->nlo + t : s->plo + (t - ln);
}

static bool set_has(const draw_set *s, double x) {
  if (s->is_point)
    return x == s->point;
  return (x >= s->nlo && x <= s->nhi) || (x >= s->plo && x <= s->phi);
}

/* An EDGE value for element i, or false to draw normally.  One element in
 * four is special; among the specials, each kind the set allows is equally
 * likely. */
static bool edge_value(const draw_set *s, const chk_range *r, hlo_etype t, uint64_t h, double *out) {
  if ((h & 3) != 0 || s->is_point)
    return false;
  double tiny = hlo_etype_class(t) == HLO_CLASS_FLOAT ? hlo_float_decode(t, 1) : 1;
  /* The extremes come from the demand itself, not the naive range: with
   * no domain demand they are the headroom cap, near overflow. */
  double cap = chk_intervals_cap(t);
  double lo = set_min(s) < 0 ? fmax(r->lo, -cap) : set_min(s), hi = set_max(s) > 0 ? fmin(r->hi, cap) : set_max(s);
  double cand[7];
  int n = 0;
  if (set_has(s, 0.0)) {
    cand[n++] = 0.0;
    cand[n++] = -0.0;
  }
  if (set_has(s, tiny))
    cand[n++] = tiny;
  if (set_has(s, -tiny))
    cand[n++] = -tiny;
  cand[n++] = hi; /* the largest magnitudes allowed: near overflow when */
  cand[n++] = lo; /* only the headroom cap bounds them */
  cand[n++] = set_at(s, 0.5); /* a repeated value: ties */
  *out = cand[((h >> 2) & 0xffff) % (uint64_t)n];
  return true;
}

/* The naive range of a type, which demands are met with. */
static void naive_range(hlo_etype t, double *lo, double *hi) {
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_SINT: *lo = -8; *hi = 8; break;
  case HLO_CLASS_UINT: *lo = 0; *hi = 15; break;
  case HLO_CLASS_PRED: *lo = 0; *hi = 1; break;
  default: *lo = -1; *hi = 1; break;
  }
  if (t == HLO_F8E8M0FNU) { /* no sign, no zero */
    *lo = 0x1p-8;
    *hi = 0x1p-1;
  }
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* A seeded bijection of [0, n): i -> (a i + b) mod n with a coprime to n.
 * Not a strong shuffle, but it is a pure function of (seed, stream, i),
 * which is what distinct sort keys need; the seed picks a and b. */
typedef struct perm {
  uint64_t n, a, b;
} perm;

static perm perm_make(uint64_t seed, uint64_t stream, uint64_t n) {
  uint64_t h = chk_inputs_bits(seed ^ PERM_SALT, stream, 0);
  perm p = {n, n > 1 ? 1 + (h >> 33) % (n - 1) : 1, n ? (h & 0xffffffff) % n : 0};
  while (n > 1 && gcd64(p.a, n) != 1)
    p.a = p.a % (n - 1) + 1;
  return p;
}

static uint64_t perm_at(const perm *p, uint64_t i) {
  /* a, i < n and arrays hold far fewer than 2^32 elements: no overflow. */
  return (p->a * i + p->b) % p->n;
}

/* Whether n evenly spaced values in [lo, hi] stay distinct in type t: the
 * grid step must exceed the type's spacing at the range's largest
 * magnitude (twice, for the rounding of both neighbours). */
static bool distinct_fits(hlo_etype t, double lo, double hi, int64_t n) {
  if (hlo_etype_class(t) != HLO_CLASS_FLOAT || n < 2)
    return false;
  int mant = t == HLO_F64 ? 52 : t == HLO_F32 ? 23 : t == HLO_F16 ? 10 : t == HLO_BF16 ? 7 : 0;
  if (mant == 0)
    return false;
  double step = (hi - lo) / (double)n, top = fmax(fabs(lo), fabs(hi));
  return step > 2 * ldexp(top, -mant);
}

/* Integer sort keys.  CONSTRAINED: distinct keys, a seeded permutation of
 * n consecutive integers centred on 0 (from 0 for unsigned types) and
 * moved inside the demanded range; when the range holds fewer than n
 * integers, the permutation taken modulo its width, so every value repeats
 * as evenly as it can (the fewest ties).  EDGE: ties wherever possible,
 * eight values spread over the naive draw set [nl, nh] u [pl, ph] (fewer
 * when it has fewer). */
static void fill_int_keys(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_range *r, int64_t tlo,
                          int64_t thi, int64_t nl, int64_t nh, int64_t pl, int64_t ph) {
  uint64_t seed = o->seed;
  int64_t n = v->count;
  if (o->profile == CHK_INPUTS_EDGE) {
    uint64_t cn = nl <= nh ? (uint64_t)(nh - nl) + 1 : 0, cp = pl <= ph ? (uint64_t)(ph - pl) + 1 : 0;
    uint64_t w = cn + cp;
    if (w == 0) { /* the demand holds no integer of the naive range */
      nl = nh = tlo > 0 ? tlo : 0;
      cn = w = 1;
      cp = 0;
    }
    uint64_t kinds = w < 8 ? w : 8;
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
      uint64_t k = below(chk_inputs_bits(seed, stream, (uint64_t)i), kinds) * w / kinds;
      hlo_value_set_i64(v, i, k < cn ? nl + (int64_t)k : pl + (int64_t)(k - cn));
    }
    return;
  }
  double lo = fmax(r->lo == -INFINITY ? (double)tlo : ceil(r->lo), (double)tlo);
  double hi = fmin(r->hi == INFINITY ? (double)thi : floor(r->hi), (double)thi);
  if (lo > hi) { /* an impossible demand: the type's range */
    lo = (double)tlo;
    hi = (double)thi;
  }
  double width = hi - lo + 1;
  uint64_t span = width >= (double)n ? (uint64_t)n : (uint64_t)width;
  /* The first value: -n/2 for signed types, moved into [lo, hi - span + 1]. */
  double start = hlo_etype_class(v->type) == HLO_CLASS_SINT ? -floor((double)span / 2) : 0;
  start = fmin(fmax(start, lo), hi - (double)span + 1);
  int64_t first = (int64_t)start;
  perm p = perm_make(seed, stream, (uint64_t)(n > 0 ? n : 1));
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++)
    hlo_value_set_i64(v, i, first + (int64_t)(perm_at(&p, (uint64_t)i) % span));
}

static void fill_ranged(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_inputs_index *idx,
                        const chk_range *r) {
  uint64_t seed = o->seed;
  bool edge = o->profile == CHK_INPUTS_EDGE;
  double dlo, dhi;
  naive_range(v->type, &dlo, &dhi);
  draw_set s = make_set(r, dlo, dhi);
  int64_t n = v->count;
  hlo_eclass cls = hlo_etype_class(v->type);
  if (cls == HLO_CLASS_FLOAT) {
    /* Sort keys: distinct under CONSTRAINED (a permuted even grid), eight
     * values under EDGE (ties everywhere). */
    bool distinct = r->sort_key && !edge && !s.is_point && distinct_fits(v->type, set_min(&s), set_max(&s), n);
    perm p = perm_make(seed, stream, (uint64_t)(n > 0 ? n : 1));
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
      uint64_t h = chk_inputs_bits(seed, stream, (uint64_t)i);
      double u = (double)(h >> 11) * 0x1p-53, x;
      if (distinct)
        x = set_at(&s, ((double)perm_at(&p, (uint64_t)i) + 0.5) / (double)n);
      else if (r->sort_key && edge)
        x = set_at(&s, ((double)(h >> 61) + 0.5) / 8);
      else if (!(edge && edge_value(&s, r, v->type, chk_inputs_bits(seed ^ EDGE_SALT, stream, (uint64_t)i), &x)))
        x = set_at(&s, u);
      hlo_value_set_f64(v, i, x);
    }
    return;
  }
  if (cls == HLO_CLASS_SINT || cls == HLO_CLASS_UINT || cls == HLO_CLASS_PRED) {
    int64_t tlo, thi;
    hlo_etype_int_range(v->type, &tlo, &thi);
    /* Integer pieces of the set, cut to the type. */
    int64_t nl = (int64_t)fmax(ceil(s.nlo), (double)tlo), nh = (int64_t)fmin(floor(s.nhi), (double)thi);
    int64_t pl = (int64_t)fmax(ceil(s.plo), (double)tlo), ph = (int64_t)fmin(floor(s.phi), (double)thi);
    if (nl <= nh && pl <= ph && pl <= nh) /* overlapping pieces: merge */
      pl = nh + 1;
    uint64_t cn = nl <= nh ? (uint64_t)(nh - nl) + 1 : 0, cp = pl <= ph ? (uint64_t)(ph - pl) + 1 : 0;
    int64_t point = s.is_point ? (int64_t)fmin(fmax(s.point, (double)tlo), (double)thi) : 0;
    if (r->sort_key && cls != HLO_CLASS_PRED && !s.is_point) {
      fill_int_keys(v, o, stream, r, tlo, thi, nl, nh, pl, ph);
      return;
    }
    if (!s.is_point && cn + cp == 0) { /* no integer fits the demand: naive */
      chk_inputs_opts naive = *o;
      naive.profile = CHK_INPUTS_NAIVE;
      chk_inputs_fill(v, &naive, stream, idx);
      return;
    }
#pragma omp parallel for schedule(static) if (n > PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
      int64_t x = point;
      if (!s.is_point) {
        uint64_t k = below(chk_inputs_bits(seed, stream, (uint64_t)i), cn + cp);
        x = k < cn ? nl + (int64_t)k : pl + (int64_t)(k - cn);
      }
      hlo_value_set_i64(v, i, x);
    }
    return;
  }
  chk_inputs_fill(v, o, stream, idx); /* complex: no demands are derived */
}

/* Index parameters under OOB_INDICES: two below 0 to two past the largest
 * valid start, so clamping and skipping are what gets tested.  Drawn
 * uniformly over that span, a start into a long dimension would almost
 * never leave it (4 chances in 1013 for a 16-row update of 1024 rows), so
 * the first element is always one of the out-of-range values and every
 * other element is one with probability 1/2; the rest are uniform over
 * the valid starts. */
static void fill_oob_index(hlo_value *v, uint64_t seed, uint64_t stream, const chk_inputs_index *idx) {
  int64_t tlo, thi, stride = 1, extent = 1;
  hlo_etype_int_range(v->type, &tlo, &thi);
  if (idx->axis >= 0) {
    for (int d = v->rank - 1; d > idx->axis; d--)
      stride *= v->dims[d];
    extent = v->dims[idx->axis];
  }
  int64_t n = v->count;
  for (int64_t i = 0; i < n; i++) {
    int c = idx->axis >= 0 ? (int)((i / stride) % extent) : 0;
    int64_t valid = c < idx->ncomp ? idx->hi[c] : 0; /* the largest valid start */
    int64_t top = valid + 2 < thi ? valid + 2 : thi, lo = tlo > -2 ? tlo : -2;
    uint64_t bits = chk_inputs_bits(seed, stream, (uint64_t)i);
    /* the out-of-range values this type can hold: lo..-1 and valid+1..top;
     * bit 0 tosses the coin, below() reads the high half */
    uint64_t below0 = lo < 0 ? (uint64_t)-lo : 0, above = top > valid ? (uint64_t)(top - valid) : 0;
    int64_t x;
    if ((i == 0 || (bits & 1)) && below0 + above > 0) {
      uint64_t k = below(bits, below0 + above);
      x = k < below0 ? lo + (int64_t)k : valid + 1 + (int64_t)(k - below0);
    } else {
      int64_t most = valid < thi ? valid : thi; /* a narrow type may not reach the last start */
      uint64_t span = most >= 0 ? (uint64_t)most + 1 : 1;
      if (span > UINT32_MAX)
        span = UINT32_MAX;
      x = valid >= 0 ? (int64_t)below(bits, span) : valid;
    }
    hlo_value_set_i64(v, i, x);
  }
}

void chk_inputs_fill_range(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_inputs_index *idx,
                           const chk_range *range) {
  chk_inputs_opts def = {0};
  if (!o)
    o = &def;
  bool indexed = idx && idx->set;
  if (o->profile == CHK_INPUTS_OOB_INDICES && indexed && hlo_etype_is_int(v->type)) {
    fill_oob_index(v, o->seed, stream, idx);
    return;
  }
  /* Index bounds come from the index analysis, which knows more than the
   * intervals; a parameter with no demand draws its naive bits. */
  if (o->profile == CHK_INPUTS_NAIVE || indexed || !range ||
      (chk_range_is_any(range) && o->profile != CHK_INPUTS_EDGE)) {
    chk_inputs_fill(v, o, stream, idx);
    return;
  }
  /* A demand the naive range already meets keeps the naive bits, so
   * constraining one parameter does not reshuffle the others. */
  double dlo, dhi;
  naive_range(v->type, &dlo, &dhi);
  if (o->profile != CHK_INPUTS_EDGE && !range->sort_key && range->lo <= dlo && range->hi >= dhi &&
      range->min_mag == 0 && range->lo < range->hi) {
    chk_inputs_fill(v, o, stream, idx);
    return;
  }
  fill_ranged(v, o, stream, idx, range);
}

void chk_inputs_fill(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_inputs_index *idx) {
  uint64_t seed = o ? o->seed : 0;
  /* The naive distribution (inputs.h); ranged profiles build on it. */
  switch (hlo_etype_class(v->type)) {
  case HLO_CLASS_FLOAT:
    fill_real(v, seed, stream);
    break;
  case HLO_CLASS_COMPLEX:
    fill_complex(v, seed, stream);
    break;
  case HLO_CLASS_SINT:
  case HLO_CLASS_UINT:
    fill_int(v, seed, stream, idx);
    break;
  case HLO_CLASS_PRED: {
    uint8_t *p = v->data;
    for (int64_t i = 0; i < v->count; i++)
      p[i] = (uint8_t)(chk_inputs_bits(seed, stream, (uint64_t)i) >> 63);
    break;
  }
  default:
    break;
  }
}

/* Salt of SPECIAL's draw, apart from EDGE's. */
#define SPECIAL_SALT 0x2F8B3C1D5A7E9064ull

/* SPECIAL: one element in four of a qualifying parameter (special_param)
 * is overwritten with a signed zero or the smallest subnormal of either
 * sign, each equally likely.  NaN, +inf and -inf are rarer, about
 * max(4, n/4096) each of the n elements: they win every maximum or
 * minimum they meet, so at one in 12 every column of a 1000-row max
 * reduction would be inf or NaN and nothing else in it would be seen.
 * `flags` may leave NaN out. */
static void place_specials(hlo_value *v, uint64_t seed, uint64_t stream, int flags) {
  double tiny = hlo_float_decode(v->type, 1);
  const double rare[3] = {NAN, INFINITY, -INFINITY}, common[4] = {0.0, -0.0, tiny, -tiny};
  uint64_t n = (uint64_t)v->count, nrare = n / 4096 > 4 ? n / 4096 : 4;
  int first = flags & SP_NO_NAN ? 1 : 0;
  for (int64_t i = 0; i < v->count; i++) {
    uint64_t h = chk_inputs_bits(seed ^ SPECIAL_SALT, stream, (uint64_t)i);
    uint64_t r = below(h, n);
    if (r < 3 * nrare && (int)(r / nrare) >= first)
      hlo_value_set_f64(v, i, rare[r / nrare]);
    else if ((h & 3) == 0)
      hlo_value_set_f64(v, i, common[below(h << 16, 4)]);
  }
}

/* Fills the array leaves of a tuple parameter, each on its own stream. */
static int fill_leaves(hlo_value *v, const chk_inputs_opts *o, uint64_t k, uint64_t *leaf, const char *pname,
                       hlo_error *err, int line, int col) {
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      if (fill_leaves(v->elems[i], o, k, leaf, pname, err, line, col) != 0)
        return -1;
    return 0;
  }
  if (v->type == HLO_TOKEN)
    return 0; /* a token orders side effects and holds no data */
  if (v->elem_size == 0)
    return hlo_error_set(err, line, col, "%s: cannot make inputs of type %s", pname, hlo_etype_name(v->type));
  /* Leaf j of parameter k: stream (j + 1) * 2^32 + k, apart from every
   * array parameter's stream k. */
  chk_inputs_fill(v, o, ((++*leaf) << 32) | k, NULL);
  return 0;
}

int chk_inputs_make(const hlo_module *m, const chk_inputs_opts *o, hlo_value **args, hlo_error *err) {
  const hlo_computation *e = m->entry;
  if (!e)
    return hlo_error_set(err, 0, 0, "module has no entry computation");
  int n = e->nparams;
  chk_inputs_index *idx = calloc((size_t)(n ? n : 1), sizeof *idx);
  hlo_value **made = calloc((size_t)(n ? n : 1), sizeof *made);
  chk_range *ranges = malloc(sizeof *ranges * (size_t)(n ? n : 1));
  if (!idx || !made || !ranges) {
    free(idx);
    free(made);
    free(ranges);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  chk_inputs_find_index_params(m, idx);
  bool ranged = o && o->profile != CHK_INPUTS_NAIVE;
  if (!ranged || chk_intervals_analyze(m, o->profile == CHK_INPUTS_EDGE, ranges) != 0)
    for (int k = 0; k < n; k++)
      ranges[k] = chk_range_any();
  int k;
  for (k = 0; k < n; k++) {
    const hlo_instr *p = e->params[k];
    if (!p) {
      hlo_error_set(err, e->line, e->col, "%s: no parameter %d", e->name, k);
      break;
    }
    made[k] = hlo_value_from_shape(&p->shape);
    if (!made[k]) {
      hlo_error_set(err, p->line, p->col, "%s: out of memory for an input of this shape", p->name);
      break;
    }
    if (p->shape.type == HLO_TUPLE) {
      uint64_t leaf = 0;
      if (fill_leaves(made[k], o, (uint64_t)k, &leaf, p->name, err, p->line, p->col) != 0)
        break;
    } else if (made[k]->type == HLO_TOKEN) {
      continue; /* a token orders side effects and holds no data */
    } else if (made[k]->elem_size == 0) {
      hlo_error_set(err, p->line, p->col, "%s: cannot make inputs of type %s", p->name,
                    hlo_etype_name(p->shape.type));
      break;
    } else {
      chk_inputs_fill_range(made[k], o, (uint64_t)k, &idx[k], &ranges[k]);
      int sp = o && o->profile == CHK_INPUTS_SPECIAL && !idx[k].set ? special_param(p, &ranges[k]) : 0;
      if (sp)
        place_specials(made[k], o->seed, (uint64_t)k, sp);
    }
  }
  free(idx);
  free(ranges);
  if (k < n) {
    for (int j = 0; j <= k && j < n; j++)
      hlo_value_unref(made[j]);
    free(made);
    return -1;
  }
  for (k = 0; k < n; k++)
    args[k] = made[k];
  free(made);
  return 0;
}
