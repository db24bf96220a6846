/* eval_ragged_dot.c — ragged-dot(lhs, rhs, group_sizes): a dot whose lhs
 * has one ragged dimension cut into g consecutive groups.
 *
 * Semantics (XLA / StableHLO's ragged dot), by the kind of the lhs ragged
 * dimension named by lhs_ragged_dims:
 *   non-contracting (mode 1): [b..,m..,k..] x [g,b..,k..,n..] -> [b..,m..,n..].
 *     The rhs has a group dimension (rhs_group_dims); the rows of the
 *     ragged dimension in group i multiply the rhs's group i.  group_sizes
 *     is [g], or [b.., x.., g] where x are the lhs non-contracting
 *     dimensions before the ragged one, each such index with its own
 *     groups.  Rows past the last group are zero.
 *   contracting (mode 2): [b..,m..,k..] x [b..,k..,n..] -> [g,b..,m..,n..].
 *     Result i contracts only the ragged dimension's range of group i
 *     (zero for an empty group).  Only group_sizes of shape [g] is
 *     evaluated here.
 *   batch (mode 3) is refused.
 * Groups are consecutive from index 0: group i covers
 * [sizes[0] + .. + sizes[i-1], + sizes[i]), clipped to the dimension.  XLA
 * leaves a negative size undefined; here it is an empty group, so that any
 * input (the naive and edge profiles draw negative integers) evaluates.
 *
 * Numerics are the reference dot's (eval_dot.c): each group is computed by
 * chk_op_dot on the group's operands and its elements are copied into the
 * result, so a ragged-dot rounds exactly like the dot of its group.  Mode 1
 * runs one full dot per group (g times the work of the dot), which keeps the
 * code simple; the corpus's ragged dots are small.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_attr.h"
#include "eval_internal.h"

static bool has(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return true;
  return false;
}

/* v's elements [start, start + len) along dimension dim; that dimension is
 * removed when drop (len must then be 1). */
static hlo_value *take(const hlo_value *v, int dim, int64_t start, int64_t len, bool drop) {
  int64_t dims[HLO_MAX_RANK] = {0};
  int rank = 0;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < v->rank; d++) {
    if (d < dim)
      outer *= v->dims[d];
    if (d > dim)
      inner *= v->dims[d];
    if (d == dim && drop)
      continue;
    dims[rank++] = d == dim ? len : v->dims[d];
  }
  hlo_value *r = hlo_value_array_uninit(v->type, rank, dims);
  if (!r)
    return NULL;
  size_t block = (size_t)(len * inner) * v->elem_size;
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)r->data + (size_t)o * block,
           (const char *)v->data + ((size_t)(o * v->dims[dim] + start) * (size_t)inner) * v->elem_size,
           block);
  return r;
}

/* The dot of a and b with ins's contracting and batch dimensions (rhs ones
 * above rhs_drop shifted down by one: that dimension was taken out), into
 * a result of shape (type, rank, dims). */
static hlo_value *group_dot(chk_eval *ev, const hlo_instr *ins, const hlo_value *a, const hlo_value *b,
                            int rhs_drop, int rank, const int64_t *dims) {
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  int64_t rb[HLO_MAX_RANK], rc[HLO_MAX_RANK];
  for (int i = 0; i < dn->rhs_batch.n; i++)
    rb[i] = dn->rhs_batch.v[i] - (rhs_drop >= 0 && dn->rhs_batch.v[i] > rhs_drop);
  for (int i = 0; i < dn->rhs_contracting.n; i++)
    rc[i] = dn->rhs_contracting.v[i] - (rhs_drop >= 0 && dn->rhs_contracting.v[i] > rhs_drop);
  hlo_instr dot = *ins;
  dot.op = HLO_OP_DOT;
  dot.noperands = 2;
  dot.shape.rank = rank;
  dot.shape.dims = (int64_t *)dims;
  dot.shape.dynamic = NULL;
  dot.attrs.dot =
      (hlo_dot_dnums){dn->lhs_batch, {dn->rhs_batch.n, rb}, dn->lhs_contracting, {dn->rhs_contracting.n, rc}};
  hlo_value *ops[2] = {(hlo_value *)a, (hlo_value *)b};
  return chk_op_dot(ev, &dot, ops);
}

/* Which group holds row r under the g sizes at sizes[0..g-1]: its index,
 * or -1 for a row past every group. */
/* Group size i at base, as a count: negative is empty, and a size past
 * limit (a row count) is limit, so sums of sizes cannot overflow. */
static int64_t group_size(const hlo_value *gs, int64_t i, int64_t limit) {
  int64_t n = hlo_value_get_i64(gs, i);
  if (hlo_etype_class(gs->type) == HLO_CLASS_UINT && hlo_value_get_u64(gs, i) > (uint64_t)limit)
    return limit;
  return n < 0 ? 0 : n > limit ? limit : n;
}

static int64_t group_of(const hlo_value *gs, int64_t base, int64_t g, int64_t r) {
  int64_t start = 0;
  for (int64_t i = 0; i < g; i++) {
    int64_t n = group_size(gs, base + i, r + 1);
    if (r < start + n)
      return i;
    start += n;
  }
  return -1;
}

static hlo_value *non_contracting(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops, int64_t lr,
                                  int64_t rg) {
  const hlo_value *lhs = ops[0], *rhs = ops[1], *gs = ops[2];
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  int64_t g = rhs->dims[rg];
  /* The ragged dimension's place in the result: after the batch dims and
   * the lhs free dims before it, which (with the batch dims) index the
   * group sizes when they are more than [g]. */
  int outer = dn->lhs_batch.n;
  for (int64_t d = 0; d < lr; d++)
    outer += !has(&dn->lhs_batch, d) && !has(&dn->lhs_contracting, d);
  hlo_value *out = chk_result(ev, ins);
  if (!out)
    return NULL;
  if (gs->rank != 1 && gs->rank != outer + 1)
    return chk_fail_unref(ev, ins, out, "group_sizes must be [g] or [batch.., outer.., g], rank %d",
                          outer + 1);
  if (gs->dims[gs->rank - 1] != g)
    return chk_fail_unref(ev, ins, out, "group_sizes has %lld groups, the rhs group dimension %lld",
                          (long long)gs->dims[gs->rank - 1], (long long)g);
  for (int d = 0; d + 1 < gs->rank; d++)
    if (gs->dims[d] != out->dims[d])
      return chk_fail_unref(ev, ins, out, "group_sizes dimension %d differs from the result's", d);
  /* Elements per step of the ragged dimension and of the outer prefix. */
  int64_t after = 1;
  for (int d = outer + 1; d < out->rank; d++)
    after *= out->dims[d];
  int64_t rows = out->dims[outer];
  for (int64_t i = 0; i < g; i++) {
    hlo_value *rhs_i = take(rhs, (int)rg, i, 1, true);
    if (!rhs_i)
      return chk_fail_unref(ev, ins, out, "out of memory");
    hlo_value *d = group_dot(ev, ins, lhs, rhs_i, (int)rg, out->rank, out->dims);
    hlo_value_unref(rhs_i);
    if (!d) {
      hlo_value_unref(out);
      return NULL;
    }
    for (int64_t e = 0; e < out->count; e++) {
      int64_t prefix = e / after / rows, r = e / after % rows;
      if (group_of(gs, gs->rank == 1 ? 0 : prefix * g, g, r) == i)
        memcpy((char *)out->data + (size_t)e * out->elem_size, (char *)d->data + (size_t)e * d->elem_size,
               out->elem_size);
    }
    hlo_value_unref(d);
  }
  return out;
}

static hlo_value *contracting(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops, int64_t lr) {
  const hlo_value *lhs = ops[0], *rhs = ops[1], *gs = ops[2];
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  int64_t rr = -1;
  for (int i = 0; i < dn->lhs_contracting.n && i < dn->rhs_contracting.n; i++)
    if (dn->lhs_contracting.v[i] == lr)
      rr = dn->rhs_contracting.v[i];
  if (rr < 0 || rr >= rhs->rank)
    return chk_fail(ev, ins, "the ragged contracting dimension has no rhs partner");
  if (gs->rank != 1)
    return chk_fail(ev, ins,
                    "ragged contracting dimension with group_sizes of rank %d is not supported by the "
                    "evaluator (only [g])",
                    gs->rank);
  hlo_value *out = chk_result(ev, ins);
  if (!out)
    return NULL;
  int64_t g = gs->dims[0];
  if (out->rank < 1 || out->dims[0] != g)
    return chk_fail_unref(ev, ins, out, "the result's first dimension must be the %lld groups", (long long)g);
  int64_t n = lhs->dims[lr], start = 0;
  size_t part = (size_t)(g ? out->count / g : 0) * out->elem_size;
  for (int64_t i = 0; i < g; i++) {
    int64_t size = group_size(gs, i, n);
    int64_t lo = start < n ? start : n, hi = start + size < n ? start + size : n;
    start += size;
    hlo_value *a = take(lhs, (int)lr, lo, hi - lo, false), *b = take(rhs, (int)rr, lo, hi - lo, false);
    hlo_value *d = a && b ? group_dot(ev, ins, a, b, -1, out->rank - 1, out->dims + 1) : NULL;
    hlo_value_unref(a);
    hlo_value_unref(b);
    if (!d) {
      if (!ev->failed)
        chk_fail(ev, ins, "out of memory");
      hlo_value_unref(out);
      return NULL;
    }
    memcpy((char *)out->data + (size_t)i * part, d->data, part);
    hlo_value_unref(d);
  }
  return out;
}

hlo_value *chk_op_ragged_dot(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 3 || !chk_is_array(ops[0]) || !chk_is_array(ops[1]) || !chk_is_array(ops[2]) ||
      ins->shape.type == HLO_TUPLE)
    return chk_fail(ev, ins, "ragged-dot takes (lhs, rhs, group_sizes) arrays");
  hlo_eclass gc = hlo_etype_class(ops[2]->type);
  if ((gc != HLO_CLASS_SINT && gc != HLO_CLASS_UINT) || ops[2]->rank < 1)
    return chk_fail(ev, ins, "group_sizes must be an integer array");
  int64_t lr[2], rg[2];
  int nlr = chk_raw_ints(ins, "lhs_ragged_dims", lr, 2), nrg = chk_raw_ints(ins, "rhs_group_dims", rg, 2);
  if (nlr != 1 || lr[0] < 0 || lr[0] >= ops[0]->rank)
    return chk_fail(ev, ins, "lhs_ragged_dims must name one lhs dimension");
  if (nrg < 0)
    nrg = 0;
  if (nrg > 1 || (nrg == 1 && (rg[0] < 0 || rg[0] >= ops[1]->rank)))
    return chk_fail(ev, ins, "rhs_group_dims must name at most one rhs dimension");
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  if (has(&dn->lhs_batch, lr[0]))
    return chk_fail(ev, ins, "a ragged batch dimension is not supported by the evaluator");
  if (has(&dn->lhs_contracting, lr[0])) {
    if (nrg)
      return chk_fail(ev, ins, "a ragged contracting dimension takes no rhs group dimension");
    return contracting(ev, ins, ops, lr[0]);
  }
  if (!nrg)
    return chk_fail(ev, ins, "a ragged non-contracting dimension needs rhs_group_dims");
  return non_contracting(ev, ins, ops, lr[0], rg[0]);
}
