/* eval_movement.c — data movement ops of the reference evaluator:
 * broadcast, reshape, bitcast, copy, transpose, slice, dynamic-slice,
 * dynamic-update-slice, concatenate, pad, reverse and iota.
 *
 * None of these ops computes anything: each output element is a copy of
 * one input element (or of the padding value).  So every op here is phrased
 * as one or more *strided block copies* — "copy a box of these dims from a
 * source with these element strides to a destination with those strides" —
 * and one kernel (block_copy) does all of them on raw bytes, whatever the
 * element type.  Before copying, the kernel merges dimensions that are
 * contiguous on both sides, so a row of a slice, a broadcast row, a
 * concatenated block or a padded interior becomes a single memcpy; only
 * the innermost dimension of a transpose (or a reversed or strided last
 * dimension) falls back to an element-by-element loop, and even that loop
 * is a fixed-size move, never a per-element conversion.
 *
 * Strides may be zero (broadcast: the same source element repeats) or
 * negative (reverse).
 */
#include <stdint.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

/* ---- the block copy kernel ------------------------------------------- */

typedef struct block {
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int64_t src[HLO_MAX_RANK]; /* element strides in the source */
  int64_t dst[HLO_MAX_RANK]; /* element strides in the destination */
} block;

/* Drops size-1 dimensions and merges neighbours that are contiguous on
 * both sides (stride[d] == stride[d+1] * dims[d+1]), so the innermost
 * dimension is as long as possible.  Returns false when the block is empty. */
static bool block_simplify(block *b) {
  block o = {0};
  for (int d = 0; d < b->rank; d++) {
    if (b->dims[d] == 0)
      return false;
    if (b->dims[d] == 1)
      continue;
    if (o.rank > 0) {
      int k = o.rank - 1;
      if (o.src[k] == b->src[d] * b->dims[d] && o.dst[k] == b->dst[d] * b->dims[d]) {
        o.dims[k] *= b->dims[d];
        o.src[k] = b->src[d];
        o.dst[k] = b->dst[d];
        continue;
      }
    }
    o.dims[o.rank] = b->dims[d];
    o.src[o.rank] = b->src[d];
    o.dst[o.rank] = b->dst[d];
    o.rank++;
  }
  *b = o;
  return true;
}

/* Copies one innermost run of n elements. */
static void copy_run(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t es) {
  if (ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  if (ds == 1 && ss == 0) {
    /* Replicate one element by doubling: log(n) memcpys instead of n. */
    memcpy(dst, src, es);
    int64_t have = 1;
    while (have < n) {
      int64_t c = have < n - have ? have : n - have;
      memcpy(dst + (size_t)have * es, dst, (size_t)c * es);
      have += c;
    }
    return;
  }
  /* Strided: a fixed-size move per element.  Switching on the size once
   * lets the compiler emit plain loads and stores. */
  ptrdiff_t sb = (ptrdiff_t)(ss * (int64_t)es), db = (ptrdiff_t)(ds * (int64_t)es);
  switch (es) {
  case 1:
    for (int64_t i = 0; i < n; i++, dst += db, src += sb)
      *dst = *src;
    break;
  case 2:
    for (int64_t i = 0; i < n; i++, dst += db, src += sb)
      memcpy(dst, src, 2);
    break;
  case 4:
    for (int64_t i = 0; i < n; i++, dst += db, src += sb)
      memcpy(dst, src, 4);
    break;
  case 8:
    for (int64_t i = 0; i < n; i++, dst += db, src += sb)
      memcpy(dst, src, 8);
    break;
  default:
    for (int64_t i = 0; i < n; i++, dst += db, src += sb)
      memcpy(dst, src, es);
    break;
  }
}

/* A transpose-like 2-D copy: dims (m, n), where the source is contiguous
 * along m (sm == 1) and the destination along n (dn == 1).  Reading one
 * side with a large stride touches a new cache line per element, so the
 * copy walks square tiles small enough that both sides stay in L1. */
enum { TILE = 32 };
static void copy_2d_tiled(char *dst, const char *src, int64_t m, int64_t n, int64_t sn,
                          int64_t dm, size_t es) {
  for (int64_t i0 = 0; i0 < m; i0 += TILE) {
    int64_t i1 = i0 + TILE < m ? i0 + TILE : m;
    for (int64_t j0 = 0; j0 < n; j0 += TILE) {
      int64_t j1 = j0 + TILE < n ? j0 + TILE : n;
      for (int64_t i = i0; i < i1; i++)
        copy_run(dst + (size_t)(i * dm + j0) * es, 1, src + (size_t)(i + j0 * sn) * es, sn,
                 j1 - j0, es);
    }
  }
}

/* Copies the box b from src to dst (both pointing at the box's first
 * element).  b is simplified in place. */
static void block_copy(char *dst, const char *src, block *b, size_t es) {
  if (!block_simplify(b))
    return;
  if (b->rank == 0) {
    memcpy(dst, src, es);
    return;
  }
  int inner = b->rank - 1;
  /* Transpose pattern: the destination is contiguous innermost but the
   * source is not, and some outer dim is contiguous in the source.  Move
   * that dim next to the innermost (the order of the outer loops does not
   * change the result) and copy each 2-D plane in tiles. */
  if (b->rank >= 2 && b->dst[inner] == 1 && b->src[inner] > 1) {
    int k = -1;
    for (int d = 0; d < inner; d++)
      if (b->src[d] == 1)
        k = d;
    if (k >= 0 && b->dims[k] >= 8 && b->dims[inner] >= 8) {
      block o = {.rank = 0};
      for (int d = 0; d < b->rank; d++)
        if (d != k && d != inner) {
          o.dims[o.rank] = b->dims[d];
          o.src[o.rank] = b->src[d];
          o.dst[o.rank] = b->dst[d];
          o.rank++;
        }
      int64_t m = b->dims[k], n = b->dims[inner], sn = b->src[inner], dm = b->dst[k];
      int64_t idx[HLO_MAX_RANK] = {0}, so = 0, dof = 0;
      do
        copy_2d_tiled(dst + dof * (int64_t)es, src + so * (int64_t)es, m, n, sn, dm, es);
      while (hlo_index_next_off2(o.rank, o.dims, o.src, o.dst, idx, &so, &dof));
      return;
    }
  }
  /* The runs along the innermost dimension, stepping the outer ones. */
  int64_t idx[HLO_MAX_RANK] = {0}, so = 0, dof = 0;
  do
    copy_run(dst + dof * (int64_t)es, b->dst[inner], src + so * (int64_t)es, b->src[inner], b->dims[inner], es);
  while (hlo_index_next_off2(inner, b->dims, b->src, b->dst, idx, &so, &dof));
}

static void row_major_strides(int rank, const int64_t *dims, int64_t *out) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    out[i] = s;
    s *= dims[i];
  }
}

/* Fills all n elements of dst with the element at `one`. */
static void fill(char *dst, const char *one, int64_t n, size_t es) {
  if (n > 0)
    copy_run(dst, 1, one, 0, n, es);
}

/* An index operand's value as a signed integer.  Unsigned values above
 * INT64_MAX saturate rather than wrap, so they clamp high like XLA does;
 * gather and scatter read their indices the same way (eval_internal.h). */
int64_t chk_index_value(const hlo_value *v, int64_t i) {
  if (hlo_etype_class(v->type) == HLO_CLASS_UINT) {
    uint64_t u = hlo_value_get_u64(v, i);
    return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
  }
  return hlo_value_get_i64(v, i);
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* ---- ops ---------------------------------------------------------------- */

/* broadcast: operand dim i becomes result dim dimensions[i]; every other
 * result dim repeats (source stride 0). */
static hlo_value *op_broadcast(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  const hlo_ints *map = &ins->attrs.dimensions;
  if (map->n != a->rank)
    return chk_fail(ev, ins, "dimensions has %d entries, operand rank is %d", map->n, a->rank);
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "result type %s differs from operand type %s",
                      hlo_etype_name(r->type), hlo_etype_name(a->type));
  }
  block b = {.rank = r->rank};
  int64_t as[HLO_MAX_RANK];
  hlo_value_strides(a, as);
  hlo_value_strides(r, b.dst);
  for (int d = 0; d < r->rank; d++) {
    b.dims[d] = r->dims[d];
    b.src[d] = 0;
  }
  for (int i = 0; i < map->n; i++) {
    int64_t d = map->v[i];
    if (d < 0 || d >= r->rank || r->dims[d] != a->dims[i]) {
      return chk_fail_unref(ev, ins, r, "dimensions[%d] = %lld does not map operand dim %d", i,
                        (long long)d, i);
    }
    b.src[d] = as[i];
  }
  if (r->count > 0)
    block_copy(r->data, a->data, &b, r->elem_size);
  return r;
}

/* reshape: the row-major element sequence is unchanged. */
static hlo_value *op_same_bytes(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->type != a->type || r->count != a->count) {
    return chk_fail_unref(ev, ins, r, "%s[%lld] cannot be reshaped into %s[%lld]",
                      hlo_etype_name(a->type),
                      (long long)a->count, hlo_etype_name(r->type), (long long)r->count);
  }
  if (r->count > 0)
    memcpy(r->data, a->data, (size_t)r->count * r->elem_size);
  return r;
}

/* Is this layout the default row-major one (or absent)? */
static bool layout_is_row_major(const hlo_shape *s) {
  const hlo_layout *l = s->layout;
  if (!l || l->minor_to_major.n == 0)
    return true;
  if (l->minor_to_major.n != s->rank)
    return true; /* malformed: the verifier's business, not ours */
  for (int i = 0; i < s->rank; i++)
    if (l->minor_to_major.v[i] != s->rank - 1 - i)
      return false;
  return true;
}

/* Builds the block that copies logical (row-major) array `dims` into its
 * physical order given by minor_to_major (or back, with `to_logical`). */
static void physical_block(const hlo_shape *s, const int64_t *dims, bool to_logical, block *b) {
  int rank = s->rank;
  int64_t logical[HLO_MAX_RANK], phys_dims[HLO_MAX_RANK], phys[HLO_MAX_RANK];
  row_major_strides(rank, dims, logical);
  /* Physical position p (major first) holds logical dim m2m[rank-1-p]. */
  int64_t order[HLO_MAX_RANK];
  for (int p = 0; p < rank; p++) {
    order[p] = s->layout->minor_to_major.v[rank - 1 - p];
    phys_dims[p] = dims[order[p]];
  }
  row_major_strides(rank, phys_dims, phys);
  b->rank = rank;
  for (int p = 0; p < rank; p++) {
    /* Iterate in physical order: the physical side is contiguous. */
    b->dims[p] = phys_dims[p];
    if (to_logical) {
      b->src[p] = phys[p];
      b->dst[p] = logical[order[p]];
    } else {
      b->src[p] = logical[order[p]];
      b->dst[p] = phys[p];
    }
  }
}

/* bitcast: the result reinterprets the operand's bytes.  Values here are
 * row-major, so when both shapes use the default layout (or none) this is a
 * byte copy, also when the element type changes with the total byte size
 * kept (f32[4] -> u32[4], f32[2] -> u16[2,2] on a little-endian host, as
 * on the device).  When a layout is not row-major, the bytes are first put
 * in the operand's physical order and then read back in the result's, which
 * is what a bitcast means on the device.  Tiled layouts (T(8,128)) are
 * treated as untiled: a bitcast between differently tiled shapes is not
 * modelled. */
static hlo_value *op_bitcast(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  size_t ab = (size_t)a->count * a->elem_size, rb = (size_t)r->count * r->elem_size;
  bool sub_byte = hlo_etype_bits(a->type) < 8 || hlo_etype_bits(r->type) < 8;
  if (ab != rb || (sub_byte && a->type != r->type)) {
    return chk_fail_unref(ev, ins, r, "bitcast of %s[%lld] to %s[%lld] does not keep the byte size",
                      hlo_etype_name(a->type), (long long)a->count, hlo_etype_name(r->type),
                      (long long)r->count);
  }
  if (rb == 0)
    return r;
  const hlo_shape *as = &ins->operands[0]->shape, *rs = &ins->shape;
  bool a_rm = as->type == HLO_TUPLE || as->rank != a->rank || layout_is_row_major(as);
  bool r_rm = layout_is_row_major(rs);
  if (a_rm && r_rm) {
    memcpy(r->data, a->data, rb);
    return r;
  }
  if (a->type != r->type) {
    return chk_fail_unref(ev, ins, r,
                      "a bitcast that changes the element type needs row-major layouts");
  }
  /* Through a physical buffer of the operand's bytes. */
  hlo_value *phys = hlo_value_array(a->type, 1, &a->count);
  if (!phys) {
    return chk_fail_unref(ev, ins, r, "out of memory");
  }
  block b;
  if (a_rm) {
    memcpy(phys->data, a->data, ab);
  } else {
    physical_block(as, a->dims, false, &b);
    block_copy(phys->data, a->data, &b, a->elem_size);
  }
  if (r_rm) {
    memcpy(r->data, phys->data, rb);
  } else {
    physical_block(rs, r->dims, true, &b);
    block_copy(r->data, phys->data, &b, r->elem_size);
  }
  hlo_value_unref(phys);
  return r;
}

/* transpose: result dim i is operand dim perm[i]. */
static hlo_value *op_transpose(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  const hlo_ints *perm = &ins->attrs.dimensions;
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (perm->n != a->rank || r->rank != a->rank || r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "permutation does not match the operand");
  }
  int64_t as[HLO_MAX_RANK];
  hlo_value_strides(a, as);
  block b = {.rank = r->rank};
  hlo_value_strides(r, b.dst);
  for (int i = 0; i < r->rank; i++) {
    int64_t p = perm->v[i];
    if (p < 0 || p >= a->rank || a->dims[p] != r->dims[i]) {
      return chk_fail_unref(ev, ins, r, "dimensions[%d] = %lld is not a valid permutation entry", i,
                        (long long)p);
    }
    b.dims[i] = r->dims[i];
    b.src[i] = as[p];
  }
  if (r->count > 0)
    block_copy(r->data, a->data, &b, r->elem_size);
  return r;
}

/* slice: start/limit/stride per dimension. */
static hlo_value *op_slice(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  const hlo_attrs *at = &ins->attrs;
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (at->nslice != a->rank || r->rank != a->rank || r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "slice has %d dimensions, operand rank is %d", at->nslice,
                      a->rank);
  }
  int64_t as[HLO_MAX_RANK], off = 0;
  hlo_value_strides(a, as);
  block b = {.rank = r->rank};
  hlo_value_strides(r, b.dst);
  for (int d = 0; d < a->rank; d++) {
    const hlo_slice_dim *s = &at->slice[d];
    int64_t stride = s->stride > 0 ? s->stride : 1;
    if (s->start < 0 || s->limit > a->dims[d]) {
      return chk_fail_unref(ev, ins, r, "slice [%lld:%lld:%lld] does not fit dimension %d of size %lld",
                        (long long)s->start, (long long)s->limit, (long long)s->stride, d,
                        (long long)a->dims[d]);
    }
    /* the count without start + stride - 1, which a huge stride overflows */
    int64_t n = s->limit > s->start ? (s->limit - s->start - 1) / stride + 1 : 0;
    if (n != r->dims[d]) {
      return chk_fail_unref(ev, ins, r, "slice [%lld:%lld:%lld] does not fit dimension %d of size %lld",
                        (long long)s->start, (long long)s->limit, (long long)s->stride, d,
                        (long long)a->dims[d]);
    }
    off += s->start * as[d];
    b.dims[d] = n;
    b.src[d] = n > 1 ? as[d] * stride : 0; /* a stride past the end takes one element */
  }
  if (r->count > 0)
    block_copy(r->data, (const char *)a->data + (size_t)off * a->elem_size, &b, a->elem_size);
  return r;
}

/* Reads the start indices of dynamic-slice / dynamic-update-slice from
 * operands first.. (one scalar per dimension, or the old form: one rank-1
 * vector), clamping each to [0, dim - size] as XLA does. */
static int dynamic_starts(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops, int first,
                          const hlo_value *a, const int64_t *sizes, int64_t *starts) {
  int nidx = ins->noperands - first;
  /* The old form passes all starts as one rank-1 vector; the current form
   * one scalar per dimension.  The index's rank tells them apart. */
  bool vector_form = nidx == 1 && chk_is_array(ops[first]) && ops[first]->rank == 1;
  if (vector_form && ops[first]->count != a->rank) {
    chk_fail(ev, ins, "start index vector has %lld entries, operand rank is %d",
             (long long)ops[first]->count, a->rank);
    return -1;
  }
  if (!vector_form && nidx != a->rank) {
    chk_fail(ev, ins, "%d start indices for an operand of rank %d", nidx, a->rank);
    return -1;
  }
  for (int d = 0; d < a->rank; d++) {
    const hlo_value *iv = vector_form ? ops[first] : ops[first + d];
    if (!chk_is_array(iv) || !hlo_etype_is_int(iv->type) || iv->count < 1) {
      chk_fail(ev, ins, "start index %d is not an integer", d);
      return -1;
    }
    int64_t s = chk_index_value(iv, vector_form ? d : 0);
    starts[d] = clamp64(s, 0, a->dims[d] - sizes[d]);
  }
  return 0;
}

static hlo_value *op_dynamic_slice(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->rank != a->rank || r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "result does not match the operand's rank and type");
  }
  for (int d = 0; d < a->rank; d++)
    if (r->dims[d] > a->dims[d]) {
      return chk_fail_unref(ev, ins, r, "slice size %lld exceeds dimension %d of size %lld",
                        (long long)r->dims[d], d, (long long)a->dims[d]);
    }
  int64_t starts[HLO_MAX_RANK];
  if (dynamic_starts(ev, ins, ops, 1, a, r->dims, starts) < 0) {
    hlo_value_unref(r);
    return NULL;
  }
  int64_t as[HLO_MAX_RANK], off = 0;
  hlo_value_strides(a, as);
  block b = {.rank = r->rank};
  hlo_value_strides(r, b.dst);
  for (int d = 0; d < a->rank; d++) {
    off += starts[d] * as[d];
    b.dims[d] = r->dims[d];
    b.src[d] = as[d];
  }
  if (r->count > 0)
    block_copy(r->data, (const char *)a->data + (size_t)off * a->elem_size, &b, a->elem_size);
  return r;
}

static hlo_value *op_dynamic_update_slice(chk_eval *ev, const hlo_instr *ins,
                                          hlo_value *const *ops) {
  const hlo_value *a = ops[0], *u = ops[1];
  if (!chk_is_array(u) || u->rank != a->rank || u->type != a->type)
    return chk_fail(ev, ins, "update does not match the operand's rank and type");
  for (int d = 0; d < a->rank; d++)
    if (u->dims[d] > a->dims[d])
      return chk_fail(ev, ins, "update size %lld exceeds dimension %d of size %lld",
                      (long long)u->dims[d], d, (long long)a->dims[d]);
  int64_t starts[HLO_MAX_RANK];
  if (dynamic_starts(ev, ins, ops, 2, a, u->dims, starts) < 0)
    return NULL;
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->count != a->count || r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "result does not match the operand");
  }
  if (r->count == 0)
    return r;
  memcpy(r->data, a->data, (size_t)a->count * a->elem_size);
  int64_t rs[HLO_MAX_RANK], off = 0;
  hlo_value_strides(r, rs);
  block b = {.rank = u->rank};
  hlo_value_strides(u, b.src);
  for (int d = 0; d < u->rank; d++) {
    off += starts[d] * rs[d];
    b.dims[d] = u->dims[d];
    b.dst[d] = rs[d];
  }
  if (u->count > 0)
    block_copy((char *)r->data + (size_t)off * r->elem_size, u->data, &b, r->elem_size);
  return r;
}

/* concatenate: each operand is one block of the result, placed at a
 * running offset along dimension dimensions[0]. */
static hlo_value *op_concatenate(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->attrs.dimensions.n != 1)
    return chk_fail(ev, ins, "needs exactly one concatenate dimension");
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  int64_t cd = ins->attrs.dimensions.v[0];
  if (cd < 0 || cd >= r->rank) {
    return chk_fail_unref(ev, ins, r, "dimension %lld out of range", (long long)cd);
  }
  int64_t rs[HLO_MAX_RANK], at = 0;
  hlo_value_strides(r, rs);
  for (int k = 0; k < ins->noperands; k++) {
    const hlo_value *a = ops[k];
    bool ok = chk_is_array(a) && a->type == r->type && a->rank == r->rank;
    for (int d = 0; ok && d < r->rank; d++)
      ok = d == cd || a->dims[d] == r->dims[d];
    if (!ok || at + a->dims[cd] > r->dims[cd]) {
      return chk_fail_unref(ev, ins, r, "operand %d does not fit the result", k);
    }
    block b = {.rank = r->rank};
    hlo_value_strides(a, b.src);
    for (int d = 0; d < r->rank; d++) {
      b.dims[d] = a->dims[d];
      b.dst[d] = rs[d];
    }
    if (a->count > 0)
      block_copy((char *)r->data + (size_t)(at * rs[cd]) * r->elem_size, a->data, &b,
                 r->elem_size);
    at += a->dims[cd];
  }
  if (at != r->dims[cd]) {
    return chk_fail_unref(ev, ins, r, "operands cover %lld of %lld along dimension %lld", (long long)at,
                      (long long)r->dims[cd], (long long)cd);
  }
  return r;
}

/* pad: fill with the padding value, then place operand element i of each
 * dimension at lo + i * (interior + 1).  A negative lo or hi crops: the
 * operand elements that would land outside the result are not copied. */
static hlo_value *op_pad(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0], *pv = ops[1];
  const hlo_attrs *at = &ins->attrs;
  if (!chk_is_array(pv) || pv->count != 1 || pv->type != a->type)
    return chk_fail(ev, ins, "padding value must be a scalar of the operand's type");
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (at->npad != a->rank || r->rank != a->rank || r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "padding has %d dimensions, operand rank is %d", at->npad,
                      a->rank);
  }
  int64_t as[HLO_MAX_RANK], rs[HLO_MAX_RANK];
  hlo_value_strides(a, as);
  hlo_value_strides(r, rs);
  block b = {.rank = a->rank};
  int64_t src_off = 0, dst_off = 0;
  bool empty = false;
  for (int d = 0; d < a->rank; d++) {
    const hlo_pad_dim *p = &at->pad[d];
    if (p->interior < 0) {
      return chk_fail_unref(ev, ins, r, "negative interior padding in dimension %d", d);
    }
    int64_t n = a->dims[d], want;
    /* Interior padding goes between elements: n - 1 gaps, none for n = 0. */
    if (!hlo_pad_size(n, p, &want))
      return chk_fail_unref(ev, ins, r, "padding of dimension %d gives a size beyond 2^63", d);
    if (want < 0)
      want = 0;
    if (want != r->dims[d]) {
      return chk_fail_unref(ev, ins, r, "padding gives size %lld in dimension %d, result has %lld",
                        (long long)want, d, (long long)r->dims[d]);
    }
    /* First operand index whose position lo + i*step is >= 0, and one past
     * the last whose position is < result size.  lo and hi may be extreme
     * (a huge negative lo against a huge hi still gives a small size), so
     * this runs in unsigned arithmetic: |lo| + step - 1 and
     * size - 1 + |lo| stay below 2^64 for any int64 lo, step <= 2^63. */
    uint64_t step = (uint64_t)p->interior + 1;
    uint64_t mag_lo = p->lo < 0 ? 0 - (uint64_t)p->lo : (uint64_t)p->lo;
    uint64_t first = p->lo >= 0 ? 0 : (mag_lo + step - 1) / step;
    uint64_t end; /* one past the last operand index inside */
    if (r->dims[d] == 0 || (p->lo >= 0 && mag_lo > (uint64_t)r->dims[d] - 1))
      end = 0;
    else
      end = ((uint64_t)r->dims[d] - 1 + (p->lo < 0 ? mag_lo : 0) - (p->lo >= 0 ? mag_lo : 0)) / step + 1;
    if (end > (uint64_t)n)
      end = (uint64_t)n;
    if (first >= end) {
      empty = true;
      continue;
    }
    /* Inside the result now, so each product below is an offset into it. */
    b.dims[d] = (int64_t)(end - first);
    b.src[d] = as[d];
    b.dst[d] = b.dims[d] > 1 ? rs[d] * (int64_t)step : 0; /* huge steps fit only one element */
    src_off += (int64_t)first * as[d];
    dst_off += (int64_t)((uint64_t)p->lo + first * step) * rs[d];
  }
  fill(r->data, pv->data, r->count, r->elem_size);
  if (!empty && a->count > 0)
    block_copy((char *)r->data + (size_t)dst_off * r->elem_size,
               (const char *)a->data + (size_t)src_off * a->elem_size, &b, r->elem_size);
  return r;
}

/* reverse: reversed dimensions are read from their end with a negative
 * stride. */
static hlo_value *op_reverse(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->count != a->count || r->type != a->type || r->rank != a->rank) {
    return chk_fail_unref(ev, ins, r, "result does not match the operand");
  }
  block b = {.rank = a->rank};
  hlo_value_strides(a, b.src);
  hlo_value_strides(r, b.dst);
  int64_t off = 0;
  for (int d = 0; d < a->rank; d++)
    b.dims[d] = a->dims[d];
  for (int i = 0; i < ins->attrs.dimensions.n; i++) {
    int64_t d = ins->attrs.dimensions.v[i];
    if (d < 0 || d >= a->rank) {
      return chk_fail_unref(ev, ins, r, "dimension %lld out of range", (long long)d);
    }
    if (b.src[d] > 0) { /* listed twice counts once */
      off += (a->dims[d] - 1) * b.src[d];
      b.src[d] = -b.src[d];
    }
  }
  if (r->count > 0)
    block_copy(r->data, (const char *)a->data + (size_t)off * a->elem_size, &b, a->elem_size);
  return r;
}

/* iota: the values 0..n-1 along iota_dimension, converted with the element
 * type's rounding (hlo_value_set_i64: round to nearest even for floats, so
 * bf16 iota of 257 is 256; wrap for narrow integers).  One row is built and
 * broadcast. */
static hlo_value *op_iota(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  (void)ops;
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  int64_t d = ins->attrs.iota_dimension;
  if (r->rank == 0 || d < 0 || d >= r->rank) {
    return chk_fail_unref(ev, ins, r, "iota_dimension %lld out of range", (long long)d);
  }
  if (r->count == 0)
    return r;
  hlo_value *row = hlo_value_array(r->type, 1, &r->dims[d]);
  if (!row) {
    return chk_fail_unref(ev, ins, r, "out of memory");
  }
  for (int64_t i = 0; i < r->dims[d]; i++)
    hlo_value_set_i64(row, i, i);
  block b = {.rank = r->rank};
  hlo_value_strides(r, b.dst);
  for (int k = 0; k < r->rank; k++) {
    b.dims[k] = r->dims[k];
    b.src[k] = k == d ? 1 : 0;
  }
  block_copy(r->data, row->data, &b, r->elem_size);
  hlo_value_unref(row);
  return r;
}

hlo_value *chk_op_movement(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  /* copy: values are immutable once shared, so a copy is one more
   * reference to the same value — tuples included, no bytes move. */
  if (ins->op == HLO_OP_COPY) {
    if (ins->noperands != 1 || !ops[0])
      return chk_fail(ev, ins, "needs one operand");
    return hlo_value_ref(ops[0]);
  }
  if (ins->shape.type == HLO_TUPLE)
    return chk_fail(ev, ins, "a tuple-shaped result is not supported for this op");
  if (ins->op != HLO_OP_IOTA) {
    if (ins->noperands < 1 || !chk_is_array(ops[0]))
      return chk_fail(ev, ins, "operand 0 must be an array");
  }
  switch (ins->op) {
  case HLO_OP_BROADCAST:
    return op_broadcast(ev, ins, ops);
  case HLO_OP_RESHAPE:
    return op_same_bytes(ev, ins, ops);
  case HLO_OP_BITCAST:
    return op_bitcast(ev, ins, ops);
  case HLO_OP_TRANSPOSE:
    return op_transpose(ev, ins, ops);
  case HLO_OP_SLICE:
    return op_slice(ev, ins, ops);
  case HLO_OP_DYNAMIC_SLICE:
    return op_dynamic_slice(ev, ins, ops);
  case HLO_OP_DYNAMIC_UPDATE_SLICE:
    if (ins->noperands < 2)
      return chk_fail(ev, ins, "needs an operand, an update and start indices");
    return op_dynamic_update_slice(ev, ins, ops);
  case HLO_OP_CONCATENATE:
    return op_concatenate(ev, ins, ops);
  case HLO_OP_PAD:
    if (ins->noperands != 2)
      return chk_fail(ev, ins, "needs an operand and a padding value");
    return op_pad(ev, ins, ops);
  case HLO_OP_REVERSE:
    return op_reverse(ev, ins, ops);
  case HLO_OP_IOTA:
    return op_iota(ev, ins, ops);
  default:
    return chk_fail(ev, ins, "not a data movement op");
  }
}
