/* dev_elemental.c — box-by-box evaluation of a fused computation.
 *
 * Two passes per request (see dev_elemental.h): box inference walks back
 * from the requested node in reverse program order and unions into every
 * operand the bounding box it needs; evaluation then runs forward in program
 * order over exactly the instructions that received a box.  Boxes of shared
 * operands are bounding boxes of all their users' needs, so every op reads
 * its operands through offsets (box_off) rather than assuming equal boxes.
 *
 * Which ops are native (classification) stays here, beside the box
 * inference and evaluation whose cases follow its kinds one to one.  What
 * one element of an op computes is dev_scalar.c, the opaque instructions' whole
 * values dev_materialize.c (dev_elemental_internal.h).
 */
#include "dev_elemental_internal.h"
#include "dev_layout.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dev_defect.h"
#include "dev_probe.h"
#include "dev_slot_f32.h"
#include "hlo/hlo_numerics.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_minmax.h"
#include "hlo/hlo_clones.h"

/* ---- classification ------------------------------------------------------- */

static bool is_value_type(hlo_etype t) {
  hlo_eclass k = hlo_etype_class(t);
  return t > HLO_INVALID && t < HLO_ETYPE_COUNT && k != HLO_CLASS_OTHER && k != HLO_CLASS_COMPLEX;
}

static bool is_ew_op(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_SIGN: case HLO_OP_FLOOR: case HLO_OP_CEIL:
  case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN: case HLO_OP_CBRT: case HLO_OP_ERF: case HLO_OP_IS_FINITE:
  case HLO_OP_REDUCE_PRECISION: case HLO_OP_ATAN2: case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_LOG:
  case HLO_OP_LOG1P: case HLO_OP_LOGISTIC: case HLO_OP_TANH: case HLO_OP_SQRT: case HLO_OP_RSQRT:
  case HLO_OP_SINE: case HLO_OP_COSINE: case HLO_OP_TAN: case HLO_OP_NOT: case HLO_OP_AND: case HLO_OP_OR:
  case HLO_OP_XOR: case HLO_OP_POPCNT: case HLO_OP_CLZ: case HLO_OP_SHIFT_LEFT:
  case HLO_OP_SHIFT_RIGHT_ARITHMETIC: case HLO_OP_SHIFT_RIGHT_LOGICAL: case HLO_OP_ADD: case HLO_OP_MULTIPLY:
  case HLO_OP_POWER: case HLO_OP_SUBTRACT: case HLO_OP_DIVIDE: case HLO_OP_REMAINDER: case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM: case HLO_OP_CLAMP: case HLO_OP_COMPARE: case HLO_OP_SELECT: case HLO_OP_CONVERT:
  case HLO_OP_COPY: case HLO_OP_REAL: case HLO_OP_IMAG:
    return true;
  default:
    return false;
  }
}

dev_elem_kind dev_elem_classify(const hlo_instr *ins) {
  const hlo_shape *s = &ins->shape;
  if (ins->op == HLO_OP_TUPLE)
    return DEV_EK_TUPLE;
  if (ins->op == HLO_OP_GET_TUPLE_ELEMENT)
    return DEV_EK_GTE;
  if (ins->op == HLO_OP_PARAMETER)
    return s->type == HLO_TUPLE || !is_value_type(s->type) ? DEV_EK_OPAQUE : DEV_EK_PARAM;
  if (s->type == HLO_TUPLE || !is_value_type(s->type) || s->rank > HLO_MAX_RANK)
    return DEV_EK_OPAQUE;
  for (int j = 0; j < ins->noperands; j++) {
    const hlo_shape *o = &ins->operands[j]->shape;
    if (o->type == HLO_TUPLE || !is_value_type(o->type))
      return DEV_EK_OPAQUE;
  }
  if (is_ew_op(ins->op)) {
    if (ins->op == HLO_OP_REDUCE_PRECISION &&
        (ins->attrs.exponent_bits < 1 || ins->attrs.mantissa_bits < 0))
      return DEV_EK_OPAQUE;
    return DEV_EK_ELEMENTWISE;
  }
  switch (ins->op) {
  case HLO_OP_CONSTANT: return ins->literal && !ins->literal->elided ? DEV_EK_CONST : DEV_EK_OPAQUE;
  case HLO_OP_IOTA: return DEV_EK_IOTA;
  case HLO_OP_BROADCAST: return DEV_EK_BROADCAST;
  case HLO_OP_TRANSPOSE: return DEV_EK_TRANSPOSE;
  case HLO_OP_RESHAPE: return DEV_EK_RESHAPE;
  case HLO_OP_BITCAST:
    return ins->noperands == 1 && ins->operands[0]->shape.type == s->type &&
                   hlo_shape_elements(&ins->operands[0]->shape) == hlo_shape_elements(s)
               ? DEV_EK_RESHAPE
               : DEV_EK_OPAQUE;
  case HLO_OP_SLICE: return ins->attrs.nslice == s->rank ? DEV_EK_SLICE : DEV_EK_OPAQUE;
  case HLO_OP_REVERSE: return DEV_EK_REVERSE;
  case HLO_OP_PAD: return ins->attrs.npad == s->rank ? DEV_EK_PAD : DEV_EK_OPAQUE;
  case HLO_OP_CONCATENATE: return ins->attrs.dimensions.n == 1 ? DEV_EK_CONCAT : DEV_EK_OPAQUE;
  case HLO_OP_REDUCE:
    return ins->noperands == 2 && hlo_simple_reducer(ins->attrs.calls.to_apply) != HLO_OP_INVALID
               ? DEV_EK_REDUCE
               : DEV_EK_OPAQUE;
  case HLO_OP_DOT:
    return ins->noperands == 2 && ins->attrs.dot.lhs_batch.n == ins->attrs.dot.rhs_batch.n &&
                   ins->attrs.dot.lhs_contracting.n == ins->attrs.dot.rhs_contracting.n
               ? DEV_EK_DOT
               : DEV_EK_OPAQUE;
  default:
    return DEV_EK_OPAQUE;
  }
}

uint8_t *dev_elem_classify_all(const hlo_computation *c) {
  uint8_t *k = malloc((size_t)(c->ninstrs ? c->ninstrs : 1));
  for (int i = 0; k && i < c->ninstrs; i++)
    k[i] = (uint8_t)dev_elem_classify(c->instrs[i]);
  return k;
}

dev_elem_kind dev_elem_kind_of(const dev_fusion *f, const hlo_instr *ins) {
  /* The index is only ins's position in its own computation: an
   * instruction of another one (a reducer's) must not read the kernel's
   * entry at that position. */
  const hlo_computation *c = f ? f->comp : NULL;
  if (f && f->kinds && ins->index >= 0 && ins->index < c->ninstrs && c->instrs[ins->index] == ins)
    return (dev_elem_kind)f->kinds[ins->index];
  return dev_elem_classify(ins);
}

/* ---- boxes ---------------------------------------------------------------------- */

void dev_box_free(dev_box *b) {
  free(b->v);
  free(b->poison);
  b->v = NULL;
  b->poison = NULL;
}

static int box_alloc(dev_box *b) {
  b->count = 1;
  for (int d = 0; d < b->rank; d++)
    b->count *= b->n[d];
  size_t n = (size_t)(b->count ? b->count : 1);
  b->v = malloc(n * sizeof *b->v);
  b->poison = calloc(n, 1);
  b->cap = (int64_t)n;
  if (b->v && b->poison)
    return 0;
  /* the caller stops at a failed box and does not free it: neither half
   * may stay allocated */
  free(b->v);
  free(b->poison);
  b->v = NULL;
  b->poison = NULL;
  return -1;
}

/* box_alloc from e's recycled buffers when one is large enough (the
 * smallest such), else fresh.  Poison starts cleared either way: the ops
 * that never poison (constants, iota, materialised values) rely on it. */
static int box_take(dev_elem *e, dev_box *b) {
  b->count = 1;
  for (int d = 0; d < b->rank; d++)
    b->count *= b->n[d];
  int64_t n = b->count ? b->count : 1;
  int best = -1;
  for (int k = 0; k < e->npool; k++)
    if (e->pool[k].cap >= n && (best < 0 || e->pool[k].cap < e->pool[best].cap))
      best = k;
  if (best < 0)
    return box_alloc(b);
  b->v = e->pool[best].v;
  b->poison = e->pool[best].poison;
  b->cap = e->pool[best].cap;
  e->pool[best] = e->pool[--e->npool];
  memset(b->poison, 0, (size_t)n);
  return 0;
}

/* Returns b's buffers to e's pool (when full, the smallest buffer goes). */
static void box_give(dev_elem *e, dev_box *b) {
  if (!b->v || !b->poison) {
    dev_box_free(b);
    return;
  }
  int64_t cap = b->cap > 0 ? b->cap : (b->count ? b->count : 1);
  if (e->npool == DEV_ELEM_POOL) {
    int small = 0;
    for (int k = 1; k < e->npool; k++)
      if (e->pool[k].cap < e->pool[small].cap)
        small = k;
    if (e->pool[small].cap >= cap) {
      dev_box_free(b);
      return;
    }
    free(e->pool[small].v);
    free(e->pool[small].poison);
    e->pool[small] = e->pool[--e->npool];
  }
  e->pool[e->npool].v = b->v;
  e->pool[e->npool].poison = b->poison;
  e->pool[e->npool].cap = cap;
  e->npool++;
  b->v = NULL;
  b->poison = NULL;
}

void dev_elem_box_release(dev_elem *e, dev_box *b) {
  if (e)
    box_give(e, b);
  else
    dev_box_free(b);
}

/* The element steps of box b's dims: box_off's offset is the sum of
 * (idx[d] - lo[d]) * str[d]. */
static void box_strides(const dev_box *b, int64_t *str) {
  int64_t s = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    str[d] = s;
    s *= b->n[d];
  }
}

static int64_t box_off(const dev_box *b, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < b->rank; d++)
    off = off * b->n[d] + (idx[d] - b->lo[d]);
  return off;
}

static const hlo_shape *leaf0(const hlo_instr *ins) { return hlo_shape_leaf0(&ins->shape); }

/* Unions box (lo, n) into the need of instruction o, clipped to its dims. */
static void need(dev_elem *e, const hlo_instr *o, const int64_t *lo, const int64_t *n) {
  const hlo_shape *s = leaf0(o);
  int r = s ? s->rank : 0;
  dev_box *b = &e->bx[o->index];
  int64_t l[HLO_MAX_RANK], h[HLO_MAX_RANK];
  for (int d = 0; d < r; d++) {
    l[d] = lo[d] < 0 ? 0 : lo[d];
    h[d] = lo[d] + n[d] > s->dims[d] ? s->dims[d] : lo[d] + n[d];
    if (h[d] <= l[d])
      return; /* empty: nothing needed */
  }
  if (!e->need[o->index]) {
    e->need[o->index] = true;
    b->rank = r;
    for (int d = 0; d < r; d++)
      b->lo[d] = l[d], b->n[d] = h[d] - l[d];
    return;
  }
  for (int d = 0; d < r; d++) {
    int64_t nl = b->lo[d] < l[d] ? b->lo[d] : l[d];
    int64_t nh = b->lo[d] + b->n[d] > h[d] ? b->lo[d] + b->n[d] : h[d];
    b->lo[d] = nl;
    b->n[d] = nh - nl;
  }
}

static void need_full(dev_elem *e, const hlo_instr *o) {
  const hlo_shape *s = leaf0(o);
  int64_t lo[HLO_MAX_RANK] = {0};
  need(e, o, lo, s ? s->dims : lo);
}

static bool in_list(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return true;
  return false;
}

static int list_pos(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return i;
  return -1;
}

/* Dot: the result position of operand `side`'s dimension d (batch, lhs
 * free, rhs free), or -1 for a contracting dimension. */
static int dot_result_dim(const hlo_instr *ins, int side, int d) {
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  const hlo_ints *batch = side ? &dn->rhs_batch : &dn->lhs_batch;
  const hlo_ints *contr = side ? &dn->rhs_contracting : &dn->lhs_contracting;
  if (in_list(contr, d))
    return -1;
  int bp = list_pos(batch, d);
  if (bp >= 0)
    return bp;
  int pos = batch->n;
  if (side) {
    const hlo_shape *ls = leaf0(ins->operands[0]);
    for (int j = 0; j < ls->rank; j++)
      pos += !in_list(&dn->lhs_batch, j) && !in_list(&dn->lhs_contracting, j);
  }
  const hlo_shape *os = leaf0(ins->operands[side]);
  for (int j = 0; j < d && j < os->rank; j++)
    pos += !in_list(batch, j) && !in_list(contr, j);
  return pos;
}

/* Operand needs of ins over its box b (the inference step). */
static void infer(dev_elem *e, const hlo_instr *ins, const dev_box *b) {
  int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK];
  switch (e->kind[ins->index]) {
  case DEV_EK_ELEMENTWISE:
    for (int j = 0; j < ins->noperands; j++) {
      const hlo_instr *o = ins->operands[j];
      if (leaf0(o)->rank == b->rank)
        need(e, o, b->lo, b->n);
      else
        need_full(e, o);
    }
    return;
  case DEV_EK_BROADCAST: {
    const hlo_ints *dims = &ins->attrs.dimensions;
    for (int j = 0; j < dims->n; j++)
      lo[j] = b->lo[dims->v[j]], n[j] = b->n[dims->v[j]];
    need(e, ins->operands[0], lo, n);
    return;
  }
  case DEV_EK_TRANSPOSE: {
    const hlo_ints *p = &ins->attrs.dimensions;
    for (int d = 0; d < p->n; d++)
      lo[p->v[d]] = b->lo[d], n[p->v[d]] = b->n[d];
    need(e, ins->operands[0], lo, n);
    return;
  }
  case DEV_EK_SLICE:
    for (int d = 0; d < b->rank; d++) {
      const hlo_slice_dim *sd = &ins->attrs.slice[d];
      int64_t st = sd->stride > 0 ? sd->stride : 1;
      lo[d] = sd->start + b->lo[d] * st;
      n[d] = (b->n[d] - 1) * st + 1;
    }
    need(e, ins->operands[0], lo, n);
    return;
  case DEV_EK_REVERSE:
    for (int d = 0; d < b->rank; d++) {
      bool rev = in_list(&ins->attrs.dimensions, d);
      int64_t dim = leaf0(ins)->dims[d];
      lo[d] = rev ? dim - (b->lo[d] + b->n[d]) : b->lo[d];
      n[d] = b->n[d];
    }
    need(e, ins->operands[0], lo, n);
    return;
  case DEV_EK_REDUCE: {
    const hlo_instr *o = ins->operands[0];
    const hlo_shape *os = leaf0(o);
    int r = 0;
    for (int d = 0; d < os->rank; d++) {
      if (in_list(&ins->attrs.dimensions, d)) {
        lo[d] = 0, n[d] = os->dims[d];
      } else {
        lo[d] = b->lo[r], n[d] = b->n[r];
        r++;
      }
    }
    need(e, o, lo, n);
    need_full(e, ins->operands[1]);
    return;
  }
  case DEV_EK_DOT:
    for (int side = 0; side < 2; side++) {
      const hlo_instr *o = ins->operands[side];
      const hlo_shape *os = leaf0(o);
      for (int d = 0; d < os->rank; d++) {
        int rd = dot_result_dim(ins, side, d);
        if (rd < 0)
          lo[d] = 0, n[d] = os->dims[d];
        else
          lo[d] = b->lo[rd], n[d] = b->n[rd];
      }
      need(e, o, lo, n);
    }
    return;
  case DEV_EK_GTE:
    if (ins->operands[0]->op == HLO_OP_TUPLE && !e->mat[ins->index]) {
      const hlo_instr *t = ins->operands[0];
      if (ins->attrs.index >= 0 && ins->attrs.index < t->noperands)
        need(e, t->operands[ins->attrs.index], b->lo, b->n);
    }
    return;
  case DEV_EK_PAD: {
    /* operand positions q with lo + q * step inside the box; need() clips
     * them to the operand */
    for (int d = 0; d < b->rank; d++) {
      const hlo_pad_dim *pd = &ins->attrs.pad[d];
      int64_t step = pd->interior + 1, a = b->lo[d] - pd->lo, z = a + b->n[d] - 1;
      int64_t first = a <= 0 ? 0 : (a + step - 1) / step, last = z < 0 ? -1 : z / step;
      lo[d] = first, n[d] = last - first + 1;
    }
    need(e, ins->operands[0], lo, n);
    need_full(e, ins->operands[1]);
    return;
  }
  case DEV_EK_CONCAT: {
    int64_t cd = ins->attrs.dimensions.v[0], at = 0;
    for (int j = 0; j < ins->noperands; j++) {
      for (int d = 0; d < b->rank; d++)
        lo[d] = b->lo[d], n[d] = b->n[d];
      lo[cd] -= at; /* need() clips to this operand's part */
      at += leaf0(ins->operands[j])->dims[cd];
      need(e, ins->operands[j], lo, n);
    }
    return;
  }
  case DEV_EK_RESHAPE: {
    /* A reshape (or a bitcast between row-major layouts) keeps the
     * row-major order: the box reads the operand elements of its factor
     * groups' ranges (dev_layout.h), not the whole operand, which a tile of
     * a kernel whose windows follow the reshape (dev_lower.h) does not
     * hold.  A bitcast that moves elements between layouts reads whole. */
    const hlo_instr *o = ins->operands[0];
    const hlo_shape *s = leaf0(ins), *os = leaf0(o);
    bool relayout = ins->op == HLO_OP_BITCAST && (!dev_layout_row_major(s) || !dev_layout_row_major(os));
    if (!relayout && ins->noperands == 1 && dev_layout_reshape_box(s, b->lo, b->n, os, lo, n))
      need(e, o, lo, n);
    else
      for (int j = 0; j < ins->noperands; j++)
        need_full(e, ins->operands[j]);
    return;
  }
  default:
    return;
  }
}

/* ---- evaluation ------------------------------------------------------------------ */

/* Instructions a request reads through instead of evaluating (e->virt):
 *   VIRT_SPLAT     a broadcast of a scalar: its readers read the scalar's
 *                  box as a scalar operand (the same element and poison
 *                  byte everywhere, which is what the broadcast's box
 *                  would hold);
 *   VIRT_F32_LEAF  a materialised f32 value: its readers read the floats
 *                  in place (row_f32_through_slot gives what a box of
 *                  slots would have), nothing poisoned, as a box of a
 *                  materialised value has nothing poisoned;
 *   VIRT_F32_PARAM an f32 parameter whose box the request's reader has in
 *                  place (dev_elem_set_f32_params; e->vf32): read as an
 *                  f32 leaf, and as its box of slots would be, since its
 *                  rows are all defined.
 * Set by mark_virtual only where every reader is an elementwise op that
 * eval_elementwise's direct path serves. */
enum { VIRT_NONE = 0, VIRT_SPLAT, VIRT_F32_LEAF, VIRT_F32_PARAM };

/* Operand o's value at idx (which lies in its box). */
static dev_slot opv(const dev_elem *e, const hlo_instr *o, const int64_t *idx, uint8_t *poison) {
  const dev_box *ob = &e->bx[o->index];
  int64_t off = box_off(ob, idx);
  *poison |= ob->poison[off];
  return ob->v[off];
}

/* Whether box b covers all of shape s. */
static bool box_is_whole(const dev_box *b, const hlo_shape *s) {
  if (b->rank != s->rank)
    return false;
  for (int d = 0; d < b->rank; d++)
    if (b->lo[d] != 0 || b->n[d] != s->dims[d])
      return false;
  return true;
}

/* The contiguous runs of box b in a row-major array of shape s: a row of
 * the box, and where the box spans whole rows (planes, ...) of s, as many
 * as lie back to back.  Returns the run's length; *outer is the number of
 * leading dims the runs step through (hlo_index_next_box over b). */
static int64_t box_run_in(const dev_box *b, const hlo_shape *s, int *outer) {
  int k = b->rank - 1;
  if (k < 0) {
    *outer = 0;
    return 1;
  }
  int64_t run = b->n[k];
  while (k > 0 && b->lo[k] == 0 && b->n[k] == s->dims[k]) {
    k--;
    run *= b->n[k];
  }
  *outer = k;
  return run;
}

static int64_t flat_in(const hlo_shape *s, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < s->rank; d++)
    off = off * s->dims[d] + idx[d];
  return off;
}

static void unflat(const hlo_shape *s, int64_t flat, int64_t *idx) {
  for (int d = s->rank - 1; d >= 0; d--) {
    int64_t n = s->dims[d] ? s->dims[d] : 1;
    idx[d] = flat % n;
    flat /= n;
  }
}

typedef struct eval_ctx {
  dev_param_read *pread;
  dev_hero_read *hread;
  void *ctx;
  bool hero_leaf;
} eval_ctx;

/* Reads a leaf row by row through a callback (params and the hero). */
static void read_rows(const dev_box *b, int which, bool hero, const eval_ctx *x) {
  int64_t row = b->rank ? b->n[b->rank - 1] : 1;
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  for (int64_t off = 0; off < b->count; off += row) {
    if (hero)
      x->hread(x->ctx, idx, row, b->v + off, b->poison + off);
    else
      x->pread(x->ctx, which, idx, row, b->v + off, b->poison + off);
    hlo_index_next_box(b->rank - 1, b->lo, b->n, idx); /* next row: all but the last dimension */
  }
}

/* A broadcast (transposed false: operand dim j is output dim dims[j]) or
 * a transpose (true: output dim d is operand dim dims[d]) into box b: every
 * element is a copy of the operand element opv would read, whose box
 * offset is linear in the output index, so it is stepped along with it
 * instead of being formed from a multi-index per element. */
static void move_strided(dev_elem *e, const hlo_instr *o, const hlo_ints *dims, bool transposed, dev_box *b) {
  const dev_box *ob = &e->bx[o->index];
  int64_t ostr[HLO_MAX_RANK], st[HLO_MAX_RANK] = {0}, ri[HLO_MAX_RANK] = {0}, off = 0;
  box_strides(ob, ostr);
  for (int j = 0; j < dims->n; j++) {
    int od = transposed ? j : (int)dims->v[j], id = transposed ? (int)dims->v[j] : j; /* output, operand dim */
    st[od] += ostr[id];
    off += (b->lo[od] - ob->lo[id]) * ostr[id];
  }
  bool scalar = true; /* every output element reads the same operand element */
  for (int d = 0; d < b->rank; d++)
    scalar = scalar && st[d] == 0;
  if (scalar && b->count > 0) {
    /* the one slot, then the filled part copied onto the rest, doubling:
     * a slot per iteration of a loop that reloaded it (the boxes may
     * alias for all the compiler knows) was a tenth of a small gather's
     * run, for its broadcast constant */
    b->v[0] = ob->v[off];
    for (int64_t have = 1; have < b->count; have *= 2)
      memcpy(b->v + have, b->v, (size_t)(have < b->count - have ? have : b->count - have) * sizeof *b->v);
    memset(b->poison, ob->poison[off], (size_t)b->count);
    return;
  }
  /* row by row along the last dim, whose step is the same throughout: a
   * row of one element repeated (a broadcast along it), a run copied
   * (the operand's rows), or stepped; the offset moves on over the outer
   * dims only.  Per element, stepping the multi-index was a fifth of a
   * softmax's run. */
  int last = b->rank - 1;
  int64_t row = b->rank ? b->n[last] : 1, step = b->rank ? st[last] : 0;
  if (row <= 0)
    return;
  for (int64_t i = 0; i < b->count; i += row, hlo_index_next_off(last > 0 ? last : 0, b->n, st, ri, &off)) {
    dev_slot *v = b->v + i;
    uint8_t *p = b->poison + i;
    if (step == 0) {
      int64_t one = ob->v[off].i; /* the slot's bits */
#pragma omp simd
      for (int64_t k = 0; k < row; k++)
        v[k].i = one;
      memset(p, ob->poison[off], (size_t)row);
    } else if (step == 1) {
      memcpy(v, ob->v + off, (size_t)row * sizeof *v);
      memcpy(p, ob->poison + off, (size_t)row);
    } else {
      for (int64_t k = 0; k < row; k++) {
        v[k] = ob->v[off + k * step];
        p[k] = ob->poison[off + k * step];
      }
    }
  }
}

static void eval_dot(dev_elem *e, const hlo_instr *ins, dev_box *b) {
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  const hlo_instr *l = ins->operands[0], *r = ins->operands[1];
  const hlo_shape *ls = leaf0(l), *rs = leaf0(r);
  hlo_etype rt = ins->shape.type, ct = dev_elem_dot_ctype(rt);
  dev_precision prec = hlo_num_dot_precision(ins, e->prec);
  int nc = dn->lhs_contracting.n;
  int64_t csz[HLO_MAX_RANK], total = 1;
  for (int j = 0; j < nc; j++) {
    csz[j] = ls->dims[dn->lhs_contracting.v[j]];
    total *= csz[j];
  }
  int64_t idx[HLO_MAX_RANK], li[HLO_MAX_RANK], ri[HLO_MAX_RANK], c[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  for (int64_t i = 0; i < b->count; i++, hlo_index_next_box(b->rank, b->lo, b->n, idx)) {
    for (int d = 0; d < ls->rank; d++) {
      int rd = dot_result_dim(ins, 0, d);
      li[d] = rd >= 0 ? idx[rd] : 0;
    }
    for (int d = 0; d < rs->rank; d++) {
      int rd = dot_result_dim(ins, 1, d);
      ri[d] = rd >= 0 ? idx[rd] : 0;
    }
    for (int j = 0; j < nc; j++)
      c[j] = 0;
    dev_slot acc = dev_el_islot(0);
    if (ct == HLO_F32 || ct == HLO_F64)
      acc = dev_el_fslot(0.0);
    uint8_t p = 0;
    for (int64_t k = 0; k < total; k++) {
      for (int j = 0; j < nc; j++) {
        li[dn->lhs_contracting.v[j]] = c[j];
        ri[dn->rhs_contracting.v[j]] = c[j];
      }
      dev_slot a = opv(e, l, li, &p), bb = opv(e, r, ri, &p);
      acc = dev_elem_dot_step(ct, rt, acc, a, ls->type, bb, rs->type, prec);
      hlo_index_next(nc, csz, c);
    }
    b->v[i] = dev_elem_dot_finish(ct, rt, acc);
    b->poison[i] = p;
  }
}

/* ---- elementwise ops ------------------------------------------------------------
 * The per-element work of dev_el_ew_apply is small next to finding the
 * operands, so the operand boxes are resolved once per op: an operand whose
 * box is exactly b is read at the same flat index, a scalar at index 0,
 * anything else (a shared operand with a larger bounding box) by
 * multi-index.  When every operand is direct, the common cases run as typed
 * loops in rows of EW_ROW elements: f32 arithmetic through the device's
 * block forms (the same per-element functions as float_op in dev_scalar.c)
 * and converts through hlo_convert_array on a row (the same conversion as
 * convert_lowering there, which calls it on one element). */

#define EW_ROW 256

typedef struct ew_src {
  const dev_slot *v;
  const uint8_t *p; /* NULL: nothing poisoned */
  int64_t step;     /* 1: same box as the result; 0: a scalar */
  const float *f;   /* not NULL: an f32 leaf read in place (VIRT_F32_LEAF),
                       element k of the box at f[k] */
} ew_src;

/* Rows of slots to and from f32 (dev_slot_f32.h), compiled also for the
 * wider vector units, picked at load time: the conversions are the same
 * IEEE operations at any width, so the values are the same.  An f32
 * elementwise op converts each operand row and its result row, and these
 * were the larger part of its time. */

HLO_CLONES static void row_to_f32(const dev_slot *v, int64_t n, float *o) { (void)dev_slots_to_f32(v, n, o); }

HLO_CLONES static void row_from_f32(const float *o, int64_t n, dev_slot *v) { dev_f32_to_slots(o, n, v); }

/* o[i] |= p[i] for i < n, eight bytes at a time (a byte loop through
 * two byte pointers, which may alias as far as the compiler knows, went
 * one byte per load and store: most of a small elementwise op's time). */
static void poison_or(uint8_t *o, const uint8_t *p, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t a, c;
    memcpy(&a, o + i, 8);
    memcpy(&c, p + i, 8);
    a |= c;
    memcpy(o + i, &a, 8);
  }
  for (; i < n; i++)
    o[i] |= p[i];
}

/* x[k] = f[k] as it comes back from a slot, for k < n: a float widened
 * to double and narrowed again is itself, except that a signalling NaN
 * comes back quiet (the widening sets its quiet bit, the payload kept). */
HLO_CLONES static void row_f32_through_slot(const float *f, int64_t n, float *x) {
#pragma omp simd
  for (int64_t k = 0; k < n; k++) {
    uint32_t u;
    memcpy(&u, &f[k], sizeof u);
    uint32_t nan = 0u - (uint32_t)((u & 0x7FFFFFFFu) > 0x7F800000u);
    u |= nan & 0x00400000u;
    memcpy(&x[k], &u, sizeof u);
  }
}

/* x[k] = (float) of source s's element i0 + k, for k < n: the cast the
 * per-element loop made, as a vector conversion for a same-box operand
 * and one cast for a scalar; an f32 leaf read in place gives what its box
 * of slots would have. */
static void f32_row(const ew_src *s, int64_t i0, int64_t n, float *x) {
  if (s->f) {
    row_f32_through_slot(s->f + i0, n, x);
    return;
  }
  if (s->step == 1) {
    row_to_f32(s->v + i0, n, x);
    return;
  }
  float c = (float)s->v[0].f;
#pragma omp simd
  for (int64_t k = 0; k < n; k++)
    x[k] = c;
}

static bool same_box(const dev_box *a, const dev_box *b) {
  if (a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->lo[d] != b->lo[d] || a->n[d] != b->n[d])
      return false;
  return true;
}

/* f32 operands, f32 result, an op of the device's f32 block forms. */
static bool ew_f32_block_op(const hlo_instr *ins) {
  if (ins->shape.type != HLO_F32 || ins->noperands < 1 || ins->noperands > 2)
    return false;
  for (int j = 0; j < ins->noperands; j++)
    if (leaf0(ins->operands[j])->type != HLO_F32)
      return false;
  float r;
  return ins->noperands == 1 ? hlo_num_unary_f32(ins->op, 0.0f, &r) != 0 : hlo_num_binary_f32(ins->op, 1.0f, 1.0f, &r) != 0;
}

static void eval_elementwise(dev_elem *e, const hlo_instr *ins, dev_box *b) {
  int nop = ins->noperands < 3 ? ins->noperands : 3;
  ew_src src[3];
  bool direct = true;
  for (int j = 0; j < nop; j++) {
    const hlo_instr *o = ins->operands[j];
    const dev_box *ob = &e->bx[o->index];
    src[j].v = ob->v;
    src[j].p = ob->poison;
    src[j].f = NULL;
    if (e->virt[o->index] == VIRT_SPLAT) { /* the broadcast scalar's own box */
      const dev_box *sb = &e->bx[o->operands[0]->index];
      src[j].v = sb->v;
      src[j].p = sb->poison;
      src[j].step = 0;
    } else if (e->virt[o->index] == VIRT_F32_LEAF || e->virt[o->index] == VIRT_F32_PARAM) {
      /* mark_virtual checked the box */
      src[j].f = e->virt[o->index] == VIRT_F32_PARAM ? e->vf32[o->index]
                                                     : (const float *)e->val[o->index]->data + flat_in(leaf0(o), ob->lo);
      src[j].v = NULL;
      src[j].p = NULL;
      src[j].step = 1;
    } else if (ob->rank == 0) {
      src[j].step = 0;
    } else if (same_box(ob, b)) {
      src[j].step = 1;
    } else {
      direct = false;
    }
  }
  if (!direct) { /* general: operands by multi-index */
    dev_slot in[3];
    int64_t idx[HLO_MAX_RANK], zero[HLO_MAX_RANK] = {0};
    for (int d = 0; d < b->rank; d++)
      idx[d] = b->lo[d];
    for (int64_t i = 0; i < b->count; i++, hlo_index_next_box(b->rank, b->lo, b->n, idx)) {
      uint8_t p = 0;
      for (int j = 0; j < nop; j++) {
        const hlo_instr *o = ins->operands[j];
        in[j] = opv(e, o, leaf0(o)->rank == b->rank ? idx : zero, &p);
      }
      b->v[i] = dev_el_ew_apply(e, ins, in);
      b->poison[i] = p;
    }
    return;
  }
  /* poison: the OR of the operands' (a scalar's byte applies to all) */
  if (nop == 0)
    memset(b->poison, 0, (size_t)b->count);
  for (int j = 0; j < nop; j++) {
    const uint8_t *p = src[j].p;
    uint8_t *o = b->poison;
    if (!p) { /* an f32 leaf read in place: nothing poisoned */
      if (j == 0)
        memset(o, 0, (size_t)b->count);
    } else if (src[j].step == 0) {
      if (j == 0)
        memset(o, p[0], (size_t)b->count);
      else if (p[0])
        for (int64_t i = 0; i < b->count; i++)
          o[i] |= p[0];
    } else if (j == 0) {
      memcpy(o, p, (size_t)b->count);
    } else {
      poison_or(o, p, b->count);
    }
  }
  bool convert = ins->op == HLO_OP_CONVERT && !(e->elide && e->elide[ins->index]);
  if (convert) {
    hlo_etype st = leaf0(ins->operands[0])->type, dt = ins->shape.type;
    _Alignas(8) uint8_t hin[EW_ROW * 8], hout[EW_ROW * 8]; /* host arrays: at most 8 bytes an element */
    /* f32 <-> f16/bf16, either way: dev_slot_to_host, hlo_convert_array
     * (its fast path) and dev_slot_from_host per element come to
     * hlo_f16_to_f32(hlo_f32_to_f16(x)) (bf16 alike) of the f32 value,
     * which hlo_num_round_f16_block computes for a whole row */
    bool f16 = (st == HLO_F32 && dt == HLO_F16) || (st == HLO_F16 && dt == HLO_F32);
    bool bf16 = (st == HLO_F32 && dt == HLO_BF16) || (st == HLO_BF16 && dt == HLO_F32);
    if (f16 || bf16) {
      float xr[EW_ROW], rr[EW_ROW];
      for (int64_t i0 = 0; i0 < b->count; i0 += EW_ROW) {
        int64_t n = b->count - i0 < EW_ROW ? b->count - i0 : EW_ROW;
        const dev_slot *sv = src[0].v + i0 * src[0].step;
        if (src[0].step == 1) /* the same casts, four at a time */
          (void)dev_slots_to_f32(sv, n, xr);
        else
          for (int64_t k = 0; k < n; k++)
            xr[k] = (float)sv[k * src[0].step].f;
        if (f16)
          hlo_num_round_f16_block(xr, rr, n);
        else
          hlo_num_round_bf16_block(xr, rr, n);
        dev_f32_to_slots(rr, n, b->v + i0);
      }
      return;
    }
    for (int64_t i0 = 0; i0 < b->count; i0 += EW_ROW) {
      int64_t n = b->count - i0 < EW_ROW ? b->count - i0 : EW_ROW;
      const dev_slot *sv = src[0].v + i0 * src[0].step;
      if (st == HLO_F32) /* dev_slot_to_host's f32 case, typed */
        for (int64_t k = 0; k < n; k++)
          ((float *)(void *)hin)[k] = (float)sv[k * src[0].step].f;
      else
        for (int64_t k = 0; k < n; k++)
          dev_slot_to_host(st, sv[k * src[0].step], hin, k);
      hlo_convert_array(st, hin, dt, hout, (size_t)n);
      dev_slot *dv = b->v + i0;
      if (dt == HLO_F32) /* dev_slot_from_host's f32, f16 and bf16 cases, typed */
        for (int64_t k = 0; k < n; k++)
          dv[k].f = ((const float *)(const void *)hout)[k];
      else if (dt == HLO_F16)
        for (int64_t k = 0; k < n; k++)
          dv[k].f = hlo_f16_to_f32(((const uint16_t *)(const void *)hout)[k]);
      else if (dt == HLO_BF16)
        for (int64_t k = 0; k < n; k++)
          dv[k].f = hlo_bf16_to_f32(((const uint16_t *)(const void *)hout)[k]);
      else
        for (int64_t k = 0; k < n; k++)
          dev_slot_from_host(dt, hout, k, &dv[k]);
    }
    return;
  }
  if (ew_f32_block_op(ins)) {
    bool to_f32 = e->f32_out && ins == e->f32_node;
    e->f32_done = e->f32_done || to_f32;
    float xa[EW_ROW], xb[EW_ROW], r[EW_ROW];
    for (int64_t i0 = 0; i0 < b->count; i0 += EW_ROW) {
      int64_t n = b->count - i0 < EW_ROW ? b->count - i0 : EW_ROW;
      f32_row(&src[0], i0, n, xa);
      if (nop == 1) {
        hlo_num_unary_f32_block(ins->op, xa, r, n);
      } else {
        f32_row(&src[1], i0, n, xb);
        hlo_num_binary_f32_block(ins->op, xa, xb, r, n);
      }
      if (to_f32) /* what the slot's conversion back to f32 gives */
        row_f32_through_slot(r, n, e->f32_out + i0);
      else
        row_from_f32(r, n, b->v + i0);
    }
    return;
  }
  const dev_slot *rows[3] = {NULL, NULL, NULL};
  int64_t steps[3] = {0, 0, 0};
  for (int j = 0; j < nop; j++) {
    rows[j] = src[j].v;
    steps[j] = src[j].step;
  }
  if (nop == ins->noperands && dev_el_ew_row(e, ins, rows, steps, b->v, b->count))
    return;
  dev_slot in[3];
  for (int64_t i = 0; i < b->count; i++) {
    for (int j = 0; j < nop; j++)
      in[j] = src[j].v[i * src[j].step];
    b->v[i] = dev_el_ew_apply(e, ins, in);
  }
}

/* Floats in their total order (-0 below +0), as int32 keys that order the
 * same way: a negative float's magnitude bits are flipped.  The map is
 * its own inverse.  NaNs are not ordered by it; minmax_line finds them
 * separately. */
static inline int32_t order_key(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) & 0x7FFFFFFFu));
}

static inline float key_float(int32_t k) {
  uint32_t u = (uint32_t)k ^ ((uint32_t)(k >> 31) & 0x7FFFFFFFu);
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

/* The largest (max) or smallest key of f[0..n), and whether one of them
 * is a NaN, as a vector reduction (integer max and min do not care about
 * the order). */
HLO_CLONES static int32_t minmax_keys(bool max, int32_t init, int32_t *bad, const float *f, int64_t n) {
  int32_t m = init, nb = 0;
  if (max) {
#pragma omp simd reduction(max : m) reduction(| : nb)
    for (int64_t r = 0; r < n; r++) {
      uint32_t u;
      memcpy(&u, &f[r], sizeof u);
      nb |= (u & 0x7FFFFFFFu) > 0x7F800000u;
      int32_t key = (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) & 0x7FFFFFFFu));
      m = key > m ? key : m;
    }
  } else {
#pragma omp simd reduction(min : m) reduction(| : nb)
    for (int64_t r = 0; r < n; r++) {
      uint32_t u;
      memcpy(&u, &f[r], sizeof u);
      nb |= (u & 0x7FFFFFFFu) > 0x7F800000u;
      int32_t key = (int32_t)(u ^ ((uint32_t)((int32_t)u >> 31) & 0x7FFFFFFFu));
      m = key < m ? key : m;
    }
  }
  *bad |= nb;
  return m;
}

/* a folded with hlo_max_f32 (max true) or hlo_min_f32 over (float)
 * x[r * s].f for r < n, in that order, computed in any order: a NaN
 * operand (the first NaN when both are) wins every step, so the result is
 * the first NaN of the sequence a, x[0], x[1], ...; without one, both
 * order -0 below +0 and every other pair by value, a total order, and the
 * result is its largest (smallest) element whatever the order of the
 * steps, found here as the extreme integer key.  One step after another,
 * each waiting for the last, a row max was most of a softmax's run. */
static float minmax_line(bool max, float a, const dev_slot *x, int64_t s, int64_t n) {
  if (a != a)
    return a;
  int32_t m = order_key(a), bad = 0;
  float f[EW_ROW];
  for (int64_t r0 = 0; r0 < n; r0 += EW_ROW) {
    int64_t c = n - r0 < EW_ROW ? n - r0 : EW_ROW;
    if (s == 1)
      row_to_f32(x + r0, c, f);
    else
      for (int64_t r = 0; r < c; r++)
        f[r] = (float)x[(r0 + r) * s].f;
    m = minmax_keys(max, m, &bad, f, c);
  }
  if (bad) /* the first NaN, as the steps in order give it */
    for (int64_t r = 0; r < n; r++) {
      float v = (float)x[r * s].f;
      if (v != v)
        return v;
    }
  return key_float(m);
}

/* The OR of poison bytes p[r * s] for r < n (a contiguous line as a
 * vector reduction). */
static uint8_t poison_any(const uint8_t *p, int64_t s, int64_t n) {
  uint8_t any = 0;
  if (s == 1) {
#pragma omp simd reduction(| : any)
    for (int64_t r = 0; r < n; r++)
      any |= p[r];
    return any;
  }
  for (int64_t r = 0; r < n; r++)
    any |= p[r * s];
  return any;
}

static void eval_reduce(dev_elem *e, const hlo_instr *ins, dev_box *b) {
  const hlo_instr *o = ins->operands[0];
  const hlo_shape *os = leaf0(o);
  hlo_opcode op = hlo_simple_reducer(ins->attrs.calls.to_apply);
  hlo_etype t = ins->shape.type;
  const dev_box *ib = &e->bx[ins->operands[1]->index];
  int red[HLO_MAX_RANK], nred = 0, kept[HLO_MAX_RANK], nkept = 0;
  for (int d = 0; d < os->rank; d++) {
    if (in_list(&ins->attrs.dimensions, d))
      red[nred++] = d;
    else
      kept[nkept++] = d;
  }
  int64_t total = 1;
  for (int j = 0; j < nred; j++)
    total *= os->dims[red[j]];
  /* The operand's box offsets (as box_off forms them): each output
   * element's first term from its kept index, then the reduced dimensions
   * stepped row-major, the last fastest, with the offset kept in step. */
  const dev_box *ob = &e->bx[o->index];
  int64_t ostr[HLO_MAX_RANK], rdims[HLO_MAX_RANK], rstr[HLO_MAX_RANK];
  box_strides(ob, ostr);
  int64_t red0 = 0;
  for (int j = 0; j < nred; j++) {
    rdims[j] = os->dims[red[j]];
    rstr[j] = ostr[red[j]];
    red0 -= ob->lo[red[j]] * ostr[red[j]];
  }
  int64_t idx[HLO_MAX_RANK], ri[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  /* f32 add, multiply, maximum and minimum over one reduced dim: a line
   * of the operand with one stride, and dev_elem_reduce_step's f32 branch
   * with the op chosen once.  Its accumulator, widened to a slot and
   * narrowed back at every step, is the f32 result of the step before
   * (an operation's result, or a value narrowed from a slot: never a
   * signalling NaN), so it is kept in f32. */
  bool f32_line = t == HLO_F32 && nred == 1 &&
                  (op == HLO_OP_ADD || op == HLO_OP_MULTIPLY || op == HLO_OP_MAXIMUM || op == HLO_OP_MINIMUM);
  for (int64_t i = 0; i < b->count; i++, hlo_index_next_box(b->rank, b->lo, b->n, idx)) {
    uint8_t p = ib->poison[0];
    dev_slot acc = ib->v[0];
    int64_t off = red0;
    for (int j = 0; j < nkept; j++)
      off += (idx[j] - ob->lo[kept[j]]) * ostr[kept[j]];
    if (f32_line) {
      const dev_slot *x = ob->v + off;
      const uint8_t *xp = ob->poison + off;
      int64_t s = rstr[0];
      float a = (float)acc.f;
#define F32_LINE(EXPR)                       \
  for (int64_t r = 0; r < total; r++) {      \
    float bb = (float)x[r * s].f;            \
    p |= xp[r * s];                          \
    a = EXPR;                                \
  }                                          \
  break;
      switch (op) {
      case HLO_OP_ADD: F32_LINE(a + bb)
      case HLO_OP_MULTIPLY: F32_LINE(a * bb)
      default:
        a = minmax_line(op == HLO_OP_MAXIMUM, a, x, s, total);
        p |= poison_any(xp, s, total);
        break;
      }
#undef F32_LINE
      b->v[i] = dev_el_fslot(a);
      b->poison[i] = p;
      continue;
    }
    for (int j = 0; j < nred; j++)
      ri[j] = 0;
    for (int64_t r = 0; r < total; r++, hlo_index_next_off(nred, rdims, rstr, ri, &off)) {
      p |= ob->poison[off];
      acc = dev_elem_reduce_step(op, t, acc, ob->v[off]);
    }
    b->v[i] = acc;
    b->poison[i] = p;
  }
}

static void eval_node(dev_elem *e, const hlo_instr *ins, dev_box *b, const eval_ctx *x) {
  const hlo_shape *s = leaf0(ins);
  hlo_etype t = s->type;
  int64_t idx[HLO_MAX_RANK], oi[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
#define EACH for (int64_t i = 0; i < b->count; i++, hlo_index_next_box(b->rank, b->lo, b->n, idx))
  if (e->mat[ins->index]) { /* run by run: a row of the box, or rows back to back, is a run of the value */
    const hlo_value *v = e->val[ins->index];
    int outer;
    int64_t run = box_run_in(b, s, &outer);
    for (int64_t i = 0; i < b->count; i += run, hlo_index_next_box(outer, b->lo, b->n, idx)) {
      if (v->type == HLO_F32) /* dev_slots_from_host's f32 case */
        row_from_f32((const float *)v->data + flat_in(s, idx), run, b->v + i);
      else
        dev_slots_from_host(v->type, v->data, flat_in(s, idx), run, b->v + i);
    }
    return;
  }
  if (x->hero_leaf && ins == e->f->hero) {
    read_rows(b, 0, true, x);
    return;
  }
  switch (e->kind[ins->index]) {
  case DEV_EK_PARAM:
    read_rows(b, (int)ins->parameter_number, false, x);
    return;
  case DEV_EK_CONST: {
    const hlo_value *v = e->val[ins->index];
    EACH dev_slot_from_host(v->type, v->data, flat_in(s, idx), &b->v[i]);
    return;
  }
  case DEV_EK_IOTA: {
    int64_t dim = ins->attrs.iota_dimension;
    if (hlo_etype_class(t) != HLO_CLASS_FLOAT && b->rank > 0) {
      /* the loop below a row of the box at a time: along the iota's
       * dimension a row counts up from its start, across it a row
       * repeats one index (a mask's iota is most of a small kernel) */
      int last = b->rank - 1;
      int64_t run = b->n[last], hi = b->lo[last] + run - 1;
      /* wrapping keeps every index 0 <= k <= hi when it keeps hi (the
       * type's range starts at 0 and is contiguous) */
      bool kept = dev_el_wrap(t, (uint64_t)hi).i == hi;
      for (int64_t i = 0; i < b->count; i += run, hlo_index_next_box(last, b->lo, b->n, idx)) {
        if (dim == last && kept)
          for (int64_t j = 0; j < run; j++)
            b->v[i + j] = dev_el_islot(b->lo[last] + j);
        else if (dim == last)
          for (int64_t j = 0; j < run; j++)
            b->v[i + j] = dev_el_wrap(t, (uint64_t)(b->lo[last] + j));
        else {
          dev_slot one = dev_el_wrap(t, (uint64_t)(dim >= 0 && dim < b->rank ? idx[dim] : 0));
          for (int64_t j = 0; j < run; j++)
            b->v[i + j] = one;
        }
      }
      return;
    }
    EACH {
      int64_t k = dim >= 0 && dim < b->rank ? idx[dim] : 0;
      if (hlo_etype_class(t) == HLO_CLASS_FLOAT)
        b->v[i] = dev_el_fslot(hlo_float_decode(t, hlo_float_encode_s64(t, k)));
      else
        b->v[i] = dev_el_wrap(t, (uint64_t)k);
    }
    return;
  }
  case DEV_EK_ELEMENTWISE:
    eval_elementwise(e, ins, b);
    return;
  case DEV_EK_BROADCAST: /* operand dim j is output dim dims[j] */
    move_strided(e, ins->operands[0], &ins->attrs.dimensions, false, b);
    return;
  case DEV_EK_TRANSPOSE: /* output dim d is operand dim pm[d] */
    move_strided(e, ins->operands[0], &ins->attrs.dimensions, true, b);
    return;
  case DEV_EK_RESHAPE: {
    /* A reshape keeps the row-major order; a bitcast keeps the physical
     * buffer, which differs from it when a layout is not row-major. */
    const hlo_shape *os = leaf0(ins->operands[0]);
    bool relayout = ins->op == HLO_OP_BITCAST && (!dev_layout_row_major(s) || !dev_layout_row_major(os));
    const dev_box *ob = &e->bx[ins->operands[0]->index];
    if (!relayout && box_is_whole(ob, os)) {
      /* The operand's box is all of it (infer needs it whole), so its box
       * offset is the row-major flat index, which is the result's: a row
       * of b is a run of the operand's box.  Per element, unflat and
       * box_off made a small reshape of indices (a gather's) cost more
       * than the gather. */
      int outer;
      int64_t run = box_run_in(b, s, &outer);
      for (int64_t i = 0; i < b->count; i += run, hlo_index_next_box(outer, b->lo, b->n, idx)) {
        int64_t at = flat_in(s, idx);
        memcpy(b->v + i, ob->v + at, (size_t)run * sizeof *b->v);
        memcpy(b->poison + i, ob->poison + at, (size_t)run);
      }
      return;
    }
    EACH {
      if (relayout)
        dev_layout_bitcast_source(s, idx, os, oi);
      else
        unflat(os, flat_in(s, idx), oi);
      uint8_t p = 0;
      b->v[i] = opv(e, ins->operands[0], oi, &p);
      b->poison[i] = p;
    }
    return;
  }
  case DEV_EK_SLICE:
    EACH {
      for (int d = 0; d < b->rank; d++) {
        const hlo_slice_dim *sd = &ins->attrs.slice[d];
        oi[d] = sd->start + idx[d] * (sd->stride > 0 ? sd->stride : 1);
      }
      uint8_t p = 0;
      b->v[i] = opv(e, ins->operands[0], oi, &p);
      b->poison[i] = p;
    }
    return;
  case DEV_EK_REVERSE:
    EACH {
      for (int d = 0; d < b->rank; d++)
        oi[d] = in_list(&ins->attrs.dimensions, d) ? s->dims[d] - 1 - idx[d] : idx[d];
      uint8_t p = 0;
      b->v[i] = opv(e, ins->operands[0], oi, &p);
      b->poison[i] = p;
    }
    return;
  case DEV_EK_PAD: {
    const hlo_shape *os = leaf0(ins->operands[0]);
    int64_t zero[HLO_MAX_RANK] = {0};
    EACH {
      bool inside = true;
      for (int d = 0; d < b->rank && inside; d++) {
        const hlo_pad_dim *pd = &ins->attrs.pad[d];
        int64_t q = idx[d] - pd->lo, step = pd->interior + 1;
        if (q < 0 || q % step != 0 || q / step >= os->dims[d])
          inside = false;
        else
          oi[d] = q / step;
      }
      uint8_t p = 0;
      b->v[i] = inside ? opv(e, ins->operands[0], oi, &p) : opv(e, ins->operands[1], zero, &p);
      b->poison[i] = p;
    }
    return;
  }
  case DEV_EK_CONCAT: {
    int64_t cd = ins->attrs.dimensions.v[0];
    EACH {
      int64_t at = idx[cd];
      int j = 0;
      while (j < ins->noperands - 1 && at >= leaf0(ins->operands[j])->dims[cd])
        at -= leaf0(ins->operands[j++])->dims[cd];
      for (int d = 0; d < b->rank; d++)
        oi[d] = idx[d];
      oi[cd] = at;
      uint8_t p = 0;
      b->v[i] = opv(e, ins->operands[j], oi, &p);
      b->poison[i] = p;
    }
    return;
  }
  case DEV_EK_REDUCE:
    eval_reduce(e, ins, b);
    return;
  case DEV_EK_DOT:
    eval_dot(e, ins, b);
    return;
  case DEV_EK_GTE: {
    const hlo_instr *o = ins->operands[0]->operands[ins->attrs.index];
    EACH {
      uint8_t p = 0;
      b->v[i] = opv(e, o, idx, &p);
      b->poison[i] = p;
    }
    return;
  }
  default:
    return;
  }
#undef EACH
}

static bool is_leaf(const dev_elem *e, const hlo_instr *ins, bool hero_leaf) {
  return e->mat[ins->index] || (hero_leaf && ins == e->f->hero);
}

/* Gives back the boxes instruction ins was the last to read (last_use),
 * except keep's, in ascending instruction order as a scan of every
 * earlier box would.  Only ins's operands, and for a get-tuple-element
 * of an in-kernel tuple that tuple's operand, can have ins as their last
 * reader, so only they are looked at: a scan of all earlier boxes made a
 * kernel of n instructions cost n^2 / 2 steps (a 200,000-instruction
 * chain took 66 s against 1.1 s for 20,000). */
static void recycle_read(dev_elem *e, const hlo_instr *ins, int keep) {
  enum { MAX_READ = 64 };
  int i = ins->index, k[MAX_READ + 1], n = 0;
  if (ins->noperands > MAX_READ) { /* rare: the plain scan */
    for (int j = 0; j < i; j++)
      if (e->need[j] && e->last_use[j] == i && j != keep && e->bx[j].v)
        box_give(e, &e->bx[j]);
    return;
  }
  for (int j = 0; j < ins->noperands; j++)
    k[n++] = ins->operands[j]->index;
  if (e->kind[i] == DEV_EK_GTE && ins->operands[0]->op == HLO_OP_TUPLE && ins->attrs.index >= 0 &&
      ins->attrs.index < ins->operands[0]->noperands)
    k[n++] = ins->operands[0]->operands[ins->attrs.index]->index;
  for (int a = 1; a < n; a++) /* insertion sort: a handful of entries */
    for (int b = a; b > 0 && k[b - 1] > k[b]; b--) {
      int t = k[b];
      k[b] = k[b - 1];
      k[b - 1] = t;
    }
  for (int a = 0; a < n; a++) {
    int j = k[a];
    if ((a == 0 || k[a - 1] != j) && j < i && e->need[j] && e->last_use[j] == i && j != keep && e->bx[j].v)
      box_give(e, &e->bx[j]);
  }
}

/* How many instructions ahead the walks below ask for the next ones.  An
 * hlo_instr is some 800 bytes (mostly attributes) and a large kernel's do
 * not fit in the caches: each walk then waited on memory for every
 * instruction, whose address the hardware cannot guess while c->instrs
 * already says it.  A hint only: what is computed does not change. */
#define PREFETCH_AHEAD 16

/* Starts loading the lines of ins the walks read first: its opcode and
 * shape, and its operand list. */
static inline void prefetch_instr(const hlo_instr *ins) {
  __builtin_prefetch(ins);
  __builtin_prefetch(&ins->operands);
}

/* Whether elementwise instruction r, over its inferred box, takes
 * eval_elementwise's direct path when its operands marked in e->virt are
 * read through (a splat as a scalar, an f32 leaf at r's own box), and
 * whether an f32 leaf operand is then read by the f32 block path, the only
 * one that reads leaves in place. */
static bool reader_direct(const dev_elem *e, const hlo_instr *r) {
  const dev_box *b = &e->bx[r->index];
  bool leaf = false;
  int nop = r->noperands < 3 ? r->noperands : 3;
  if (e->kind[r->index] != DEV_EK_ELEMENTWISE || r->noperands > 3)
    return false;
  for (int j = 0; j < nop; j++) {
    const hlo_instr *o = r->operands[j];
    if (!e->need[o->index])
      return false;
    if (e->virt[o->index] == VIRT_SPLAT)
      continue;
    if (e->virt[o->index] == VIRT_F32_LEAF || e->virt[o->index] == VIRT_F32_PARAM)
      leaf = true;
    const dev_box *ob = &e->bx[o->index];
    if (ob->rank != 0 && !same_box(ob, b))
      return false;
  }
  return !leaf || (r->op != HLO_OP_CONVERT && ew_f32_block_op(r));
}

/* Marks (e->virt) the needed instructions below the requested node that
 * can be read through (see VIRT_SPLAT), then unmarks any with a reader that
 * would not read it so, until none is left: unmarking one can take another
 * reader off the direct path.  A probe watches every box: nothing is marked
 * then. */
static void mark_virtual(dev_elem *e, const hlo_instr *node, bool hero_leaf, dev_param_read *pread, void *ctx) {
  const hlo_computation *c = e->c;
  bool any = false;
  bool params = e->f32_param && pread == e->f32_pread;
  if (e->probe)
    return;
  for (int i = 0; i < node->index; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (!e->need[i])
      continue;
    const dev_box *b = &e->bx[i];
    if (e->mat[i]) {
      const hlo_value *v = e->val[i];
      const hlo_shape *s = leaf0(ins);
      int outer;
      int64_t count = 1;
      for (int d = 0; d < b->rank; d++)
        count *= b->n[d];
      /* rank 0 is left as a box: a splat reads its scalar's box */
      if (v && v->type == HLO_F32 && s && s->type == HLO_F32 && v->count == hlo_shape_elements(s) &&
          b->rank > 0 && b->rank == s->rank && box_run_in(b, s, &outer) >= count)
        e->virt[i] = VIRT_F32_LEAF;
    } else if (params && e->kind[i] == DEV_EK_PARAM && !(hero_leaf && ins == e->f->hero) && b->rank > 0 &&
               leaf0(ins)->type == HLO_F32) {
      /* rank 0 is left as a box, as for a leaf */
      e->vf32[i] = e->f32_param(ctx, (int)ins->parameter_number, b->lo, b->n);
      if (e->vf32[i])
        e->virt[i] = VIRT_F32_PARAM;
    } else if (!(hero_leaf && ins == e->f->hero) && e->kind[i] == DEV_EK_BROADCAST && ins->noperands == 1 &&
               ins->attrs.dimensions.n == 0 && b->rank > 0 && e->need[ins->operands[0]->index] &&
               e->bx[ins->operands[0]->index].rank == 0) {
      /* (a broadcast to rank 0 keeps its box: it may be another splat's
       * scalar) */
      e->virt[i] = VIRT_SPLAT;
    }
    any = any || e->virt[i] != VIRT_NONE;
  }
  for (bool changed = any; changed;) {
    changed = false;
    for (int i = 0; i <= node->index; i++) {
      const hlo_instr *ins = c->instrs[i];
      if (!e->need[i] || e->virt[i] || is_leaf(e, ins, hero_leaf))
        continue;
      bool reads = false;
      for (int j = 0; j < ins->noperands && !reads; j++)
        reads = e->virt[ins->operands[j]->index] != VIRT_NONE;
      if (e->kind[i] == DEV_EK_GTE && ins->operands[0]->op == HLO_OP_TUPLE && ins->attrs.index >= 0 &&
          ins->attrs.index < ins->operands[0]->noperands &&
          e->virt[ins->operands[0]->operands[ins->attrs.index]->index]) {
        e->virt[ins->operands[0]->operands[ins->attrs.index]->index] = VIRT_NONE;
        changed = true;
      }
      if (!reads || reader_direct(e, ins))
        continue;
      for (int j = 0; j < ins->noperands; j++)
        e->virt[ins->operands[j]->index] = VIRT_NONE;
      changed = true;
    }
  }
}

int dev_elem_eval(dev_elem *e, const hlo_instr *node, const dev_box *want, bool hero_leaf, dev_param_read *pread,
                  dev_hero_read *hread, void *ctx, dev_box *out, char *why, size_t why_len) {
  const hlo_computation *c = e->c;
  memset(out, 0, sizeof *out);
  for (int i = 0; i < c->ninstrs; i++) {
    e->need[i] = false;
    e->virt[i] = VIRT_NONE;
    e->bx[i].v = NULL;
    e->bx[i].poison = NULL;
  }
  if (!is_leaf(e, node, hero_leaf) && e->kind[node->index] == DEV_EK_OPAQUE) {
    snprintf(why, why_len, "%s: %s is not materialised", node->name, hlo_opcode_name(node->op));
    return -1;
  }
  need(e, node, want->lo, want->n);
  if (!e->need[node->index]) { /* an empty box */
    out->rank = want->rank;
    for (int d = 0; d < want->rank; d++)
      out->lo[d] = want->lo[d], out->n[d] = 0;
    return box_alloc(out);
  }
  for (int i = node->index; i >= 0; i--) {
    const hlo_instr *ins = c->instrs[i];
    if (i >= PREFETCH_AHEAD)
      prefetch_instr(c->instrs[i - PREFETCH_AHEAD]);
    if (e->need[i] && !is_leaf(e, ins, hero_leaf))
      infer(e, ins, &e->bx[i]);
  }
  mark_virtual(e, node, hero_leaf, pread, ctx);
  /* Liveness: the last evaluated reader of every box.  A get-tuple-element
   * of an in-kernel tuple reads the tuple's operand directly, and a reader
   * of a splat reads the broadcast's scalar. */
  for (int i = 0; i <= node->index; i++)
    e->last_use[i] = -1;
  for (int i = 0; i <= node->index; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (i + PREFETCH_AHEAD <= node->index)
      prefetch_instr(c->instrs[i + PREFETCH_AHEAD]);
    if (!e->need[i] || is_leaf(e, ins, hero_leaf) || e->virt[i])
      continue;
    for (int j = 0; j < ins->noperands; j++) {
      const hlo_instr *o = ins->operands[j];
      e->last_use[o->index] = i;
      if (e->virt[o->index] == VIRT_SPLAT)
        e->last_use[o->operands[0]->index] = i;
    }
    if (e->kind[i] == DEV_EK_GTE && ins->operands[0]->op == HLO_OP_TUPLE && ins->attrs.index >= 0 &&
        ins->attrs.index < ins->operands[0]->noperands)
      e->last_use[ins->operands[0]->operands[ins->attrs.index]->index] = i;
  }
  eval_ctx x = {pread, hread, ctx, hero_leaf};
  int rc = 0;
  for (int i = 0; i <= node->index && rc == 0; i++) {
    if (i + PREFETCH_AHEAD <= node->index)
      prefetch_instr(c->instrs[i + PREFETCH_AHEAD]);
    if (!e->need[i] || e->virt[i])
      continue;
    const hlo_instr *ins = c->instrs[i];
    if (box_take(e, &e->bx[i]) != 0) {
      snprintf(why, why_len, "out of memory evaluating %s", ins->name);
      rc = -1;
      break;
    }
    eval_node(e, ins, &e->bx[i], &x);
    if (e->probe) /* dev_probe.h: read-only */
      dev_probe_box(e->probe, ins, &e->bx[i]);
    recycle_read(e, ins, node->index);
  }
  for (int i = 0; i < c->ninstrs; i++) {
    if (i == node->index && rc == 0)
      continue;
    if (e->need[i] && e->bx[i].v)
      box_give(e, &e->bx[i]);
  }
  if (rc != 0)
    return rc;
  *out = e->bx[node->index];
  /* The request's box may be larger than the node (clipped); callers
   * index by the box they get back. */
  e->bx[node->index].v = NULL;
  e->bx[node->index].poison = NULL;
  return 0;
}

int dev_elem_eval_f32(dev_elem *e, const hlo_instr *node, const dev_box *want, bool hero_leaf,
                      dev_param_read *pread, dev_hero_read *hread, void *ctx, dev_box *out, float *f32,
                      bool *in_f32, char *why, size_t why_len) {
  /* only an f32 node evaluated natively; eval_elementwise decides whether
   * its path writes f32 rows (f32_done) */
  bool try = !e->probe && !e->mat[node->index] && !(hero_leaf && node == e->f->hero) &&
             e->kind[node->index] == DEV_EK_ELEMENTWISE && node->shape.type == HLO_F32;
  e->f32_out = try ? f32 : NULL;
  e->f32_node = node;
  e->f32_done = false;
  int rc = dev_elem_eval(e, node, want, hero_leaf, pread, hread, ctx, out, why, why_len);
  *in_f32 = rc == 0 && e->f32_done;
  e->f32_out = NULL;
  e->f32_node = NULL;
  e->f32_done = false;
  return rc;
}

int dev_elem_param_row_source(const dev_elem *e, const hlo_instr *node) {
  /* eval_node's DEV_EK_PARAM case, with nothing else watching the box */
  if (e->probe || e->mat[node->index] || e->kind[node->index] != DEV_EK_PARAM)
    return -1;
  return (int)node->parameter_number;
}

/* ---- setup ------------------------------------------------------------------ */

/* One spare array per thread that may be running a candidate is enough;
 * an array given back when every place is taken is freed.  The places are
 * swapped atomically, so taking and giving need no lock. */
#define DEV_ELEM_SPARES 8

struct dev_elem_spares {
  _Atomic(dev_box *) v[DEV_ELEM_SPARES]; /* each of the fusion's ninstrs boxes */
};

dev_elem_spares *dev_elem_spares_new(void) {
  dev_elem_spares *s = malloc(sizeof *s);
  for (int k = 0; s && k < DEV_ELEM_SPARES; k++)
    atomic_init(&s->v[k], NULL);
  return s;
}

void dev_elem_spares_free(dev_elem_spares *s) {
  if (!s)
    return;
  for (int k = 0; k < DEV_ELEM_SPARES; k++)
    free(atomic_load(&s->v[k]));
  free(s);
}

static dev_box *spare_take(dev_elem_spares *s) {
  for (int k = 0; s && k < DEV_ELEM_SPARES; k++) {
    dev_box *b = atomic_exchange(&s->v[k], NULL);
    if (b)
      return b;
  }
  return NULL;
}

static void spare_give(dev_elem_spares *s, dev_box *b) {
  for (int k = 0; s && b && k < DEV_ELEM_SPARES; k++) {
    dev_box *none = NULL;
    if (atomic_compare_exchange_strong(&s->v[k], &none, b))
      return;
  }
  free(b);
}

dev_elem *dev_elem_new(const dev_fusion *f, dev_precision prec) {
  const hlo_computation *c = f->comp;
  dev_elem *e = calloc(1, sizeof *e);
  if (!e)
    return NULL;
  size_t n = (size_t)(c->ninstrs ? c->ninstrs : 1);
  e->f = f;
  e->c = c;
  e->prec = prec;
  e->kind = calloc(n, sizeof *e->kind);
  e->mat = calloc(n, sizeof *e->mat);
  e->val = calloc(n, sizeof *e->val);
  e->bx = spare_take(f->spares);
  if (!e->bx)
    e->bx = calloc(n, sizeof *e->bx);
  e->need = calloc(n, sizeof *e->need);
  e->virt = calloc(n, sizeof *e->virt);
  e->last_use = calloc(n, sizeof *e->last_use);
  if (!e->kind || !e->mat || !e->val || !e->bx || !e->need || !e->virt || !e->last_use) {
    dev_elem_free(e);
    return NULL;
  }
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    e->kind[i] = dev_elem_kind_of(f, ins);
    if (e->kind[i] == DEV_EK_OPAQUE)
      e->mat[i] = true;
    else if (e->kind[i] == DEV_EK_GTE)
      e->mat[i] = ins->operands[0]->op != HLO_OP_TUPLE || e->mat[ins->operands[0]->index];
    if (e->kind[i] == DEV_EK_CONST) {
      char msg[128];
      e->val[i] = hlo_value_from_literal(&ins->shape, ins->literal, msg, sizeof msg);
      if (!e->val[i])
        e->mat[i] = true, e->kind[i] = DEV_EK_OPAQUE;
    }
  }
  return e;
}

void dev_elem_free(dev_elem *e) {
  if (!e)
    return;
  for (int i = 0; e->val && i < e->c->ninstrs; i++)
    hlo_value_unref(e->val[i]);
  free(e->kind);
  free(e->elide);
  free(e->mat);
  free(e->val);
  spare_give(e->f->spares, e->bx);
  free(e->need);
  free(e->virt);
  free(e->last_use);
  free(e->vf32);
  for (int k = 0; k < e->npool; k++) {
    free(e->pool[k].v);
    free(e->pool[k].poison);
  }
  free(e);
}

/* dev_probe.h */
void dev_elem_set_probe(dev_elem *e, dev_probe *p) { e->probe = p; }

int dev_elem_set_f32_params(dev_elem *e, dev_param_read *pread, dev_param_f32 *f32) {
  if (f32 && !e->vf32) {
    e->vf32 = calloc((size_t)(e->c->ninstrs ? e->c->ninstrs : 1), sizeof *e->vf32);
    if (!e->vf32)
      return -1;
  }
  e->f32_pread = pread;
  e->f32_param = f32;
  return 0;
}

/* ---- defects and config ---------------------------------------------------------- */

void dev_elem_set_config(dev_elem *e, const dev_config *cfg) { e->cfg = cfg; }

void dev_elem_set_jitter(dev_elem *e, uint64_t seed) { e->jitter = seed; }

int dev_elem_set_defects(dev_elem *e, uint32_t active) {
  e->defects = active;
  free(e->elide);
  e->elide = NULL;
  if (!dev_el_has_defect(e, DEV_DEFECT_ELIDE_CONVERT))
    return 0;
  e->elide = calloc((size_t)(e->c->ninstrs ? e->c->ninstrs : 1), sizeof *e->elide);
  if (!e->elide)
    return -1;
  /* A round trip: W = convert(N), N = convert(x), x of float type S, N of
   * a narrower float type, W of type S again. */
  for (int i = 0; i < e->c->ninstrs; i++) {
    const hlo_instr *w = e->c->instrs[i];
    if (w->op != HLO_OP_CONVERT || e->kind[i] != DEV_EK_ELEMENTWISE)
      continue;
    const hlo_instr *n = w->operands[0];
    if (n->op != HLO_OP_CONVERT || e->kind[n->index] != DEV_EK_ELEMENTWISE)
      continue;
    hlo_etype src = n->operands[0]->shape.type, mid = n->shape.type, dst = w->shape.type;
    if (hlo_etype_class(src) != HLO_CLASS_FLOAT || hlo_etype_class(mid) != HLO_CLASS_FLOAT || dst != src ||
        hlo_etype_bits(mid) >= hlo_etype_bits(src))
      continue;
    e->elide[n->index] = true;
    e->elide[w->index] = true;
  }
  return 0;
}
