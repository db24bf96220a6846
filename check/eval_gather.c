/* eval_gather.c — gather and scatter for the reference evaluator.
 *
 * Both ops pair a "batch" space (the positions of the index array other
 * than index_vector_dim) with a "window" (a box of the operand).  Gather
 * copies, for every batch position, one window of the operand into the
 * output; scatter combines, for every batch position, one window of the
 * updates into the result.  The index arithmetic follows XLA's operation
 * semantics (openxla.org/xla/operation_semantics, Gather / Scatter):
 *
 *   gather   output dims = batch dims (every dim not in offset_dims, in
 *            order, matching the index dims other than index_vector_dim)
 *            + offset dims (the operand dims that are neither collapsed nor
 *            operand_batching_dims, in order).  The start of a window is
 *            start_index_map[k] <- index vector[k], then clamped to
 *            [0, operand_dim - slice_size] so the window stays in bounds;
 *            operand_batching_dims[i] takes the batch coordinate of index
 *            dim start_indices_batching_dims[i].
 *   scatter  the same with update_window_dims / inserted_window_dims /
 *            scatter_dims_to_operand_dims / input_batching_dims /
 *            scatter_indices_batching_dims, except that start indices are
 *            not clamped: a window that would reach outside the operand is
 *            skipped entirely (what XLA's evaluator and backends do).
 *
 * index_vector_dim may equal the rank of the index array; the index vector
 * is then an implicit trailing dimension of size 1.  Index arrays may have
 * any integer type (the paper's reproducer uses s8).
 *
 * Scatter applies to_apply in index order: batch positions in row-major
 * order of the update scatter dims, and within each window in row-major
 * order, so with repeated indices the last update is combined last.
 * Combiners that are a single add/multiply/max/min/and/or/xor of the two
 * parameters, or that return the update (`ROOT u = parameter(1)`, an
 * overwrite) or the old value (`ROOT o = parameter(0)`), are applied
 * directly; any other combiner, and every variadic scatter that is not an
 * overwrite, calls the computation once per element.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_minmax.h"

/* ---- small helpers ------------------------------------------------------ */

static bool contains(const hlo_ints *s, int64_t x) {
  for (int i = 0; i < s->n; i++)
    if (s->v[i] == x)
      return true;
  return false;
}

/* Maps the index array's batch dims (all but index_vector_dim) to their
 * positions.  idx_dim[j] is the index dim of batch dim j. */
static int index_batch_dims(const hlo_value *idx, int64_t ivd, int64_t *idx_dim) {
  int n = 0;
  for (int d = 0; d < idx->rank; d++)
    if (d != ivd)
      idx_dim[n++] = d;
  return n;
}

/* Copies a box of n dims from src to dst with element strides ss / ds.
 * The innermost run is a memcpy when both sides are contiguous there. */
static void box_copy(char *dst, const int64_t *ds, const char *src, const int64_t *ss, int n,
                     const int64_t *dims, size_t es) {
  for (int d = 0; d < n; d++)
    if (dims[d] == 0)
      return;
  if (n == 0) {
    memcpy(dst, src, es);
    return;
  }
  int64_t pos[HLO_MAX_RANK] = {0};
  int inner = n - 1;
  bool contiguous = ds[inner] == 1 && ss[inner] == 1;
  do {
    int64_t so = 0, doff = 0;
    for (int d = 0; d < inner; d++) {
      so += pos[d] * ss[d];
      doff += pos[d] * ds[d];
    }
    if (contiguous) {
      memcpy(dst + (size_t)doff * es, src + (size_t)so * es, (size_t)dims[inner] * es);
    } else {
      for (int64_t i = 0; i < dims[inner]; i++)
        memcpy(dst + (size_t)(doff + i * ds[inner]) * es, src + (size_t)(so + i * ss[inner]) * es,
               es);
    }
  } while (hlo_index_next(inner, dims, pos));
}

/* ---- gather --------------------------------------------------------------- */

static hlo_value *op_gather(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0], *idx = ops[1];
  const hlo_gather_dnums *dn = &ins->attrs.gather;
  const hlo_ints *sizes = &ins->attrs.slice_sizes;
  if (!chk_is_array(a) || !chk_is_array(idx) || !hlo_etype_is_int(idx->type))
    return chk_fail(ev, ins, "needs an array operand and integer start indices");
  if (sizes->n != a->rank)
    return chk_fail(ev, ins, "slice_sizes has %d entries, operand rank is %d", sizes->n, a->rank);
  int64_t ivd = dn->index_vector_dim;
  if (ivd < 0 || ivd > idx->rank)
    return chk_fail(ev, ins, "index_vector_dim %lld out of range", (long long)ivd);
  int64_t nvec = ivd < idx->rank ? idx->dims[ivd] : 1;
  if (nvec != dn->start_index_map.n)
    return chk_fail(ev, ins, "index vectors have %lld entries, start_index_map has %d",
                    (long long)nvec, dn->start_index_map.n);
  if (dn->operand_batching_dims.n != dn->start_indices_batching_dims.n)
    return chk_fail(ev, ins,
                    "operand_batching_dims and start_indices_batching_dims differ in length");
  for (int d = 0; d < a->rank; d++) {
    if (sizes->v[d] < 0 || sizes->v[d] > a->dims[d])
      return chk_fail(ev, ins, "slice_sizes[%d] = %lld does not fit dimension size %lld", d,
                      (long long)sizes->v[d], (long long)a->dims[d]);
    if ((contains(&dn->collapsed_slice_dims, d) || contains(&dn->operand_batching_dims, d)) &&
        sizes->v[d] != 1)
      return chk_fail(ev, ins, "collapsed or batching dim %d must have slice size 1", d);
  }
  for (int k = 0; k < dn->start_index_map.n; k++)
    if (dn->start_index_map.v[k] < 0 || dn->start_index_map.v[k] >= a->rank)
      return chk_fail(ev, ins, "start_index_map[%d] out of range", k);

  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  if (r->type != a->type) {
    return chk_fail_unref(ev, ins, r, "result type differs from the operand's");
  }

  /* Window: operand dims kept in the output, matched in order with
   * offset_dims. */
  int nwin = 0;
  int64_t win_dims[HLO_MAX_RANK], win_src[HLO_MAX_RANK], win_dst[HLO_MAX_RANK];
  int64_t as[HLO_MAX_RANK], rs[HLO_MAX_RANK], is[HLO_MAX_RANK];
  hlo_value_strides(a, as);
  hlo_value_strides(r, rs);
  hlo_value_strides(idx, is);
  for (int d = 0; d < a->rank; d++) {
    if (contains(&dn->collapsed_slice_dims, d) || contains(&dn->operand_batching_dims, d))
      continue;
    if (nwin >= dn->offset_dims.n)
      break;
    int64_t od = dn->offset_dims.v[nwin];
    if (od < 0 || od >= r->rank || r->dims[od] != sizes->v[d]) {
      return chk_fail_unref(ev, ins, r, "offset_dims[%d] does not match slice size of operand dim %d",
                        nwin, d);
    }
    win_dims[nwin] = sizes->v[d];
    win_src[nwin] = as[d];
    win_dst[nwin] = rs[od];
    nwin++;
  }
  if (nwin != dn->offset_dims.n) {
    return chk_fail_unref(ev, ins, r, "offset_dims has %d entries, but %d operand dims are kept",
                      dn->offset_dims.n, nwin);
  }

  /* Batch: output dims not in offset_dims, matched in order with the index
   * dims other than index_vector_dim. */
  int64_t idx_dim[HLO_MAX_RANK], out_dim[HLO_MAX_RANK], bdims[HLO_MAX_RANK];
  int nb = index_batch_dims(idx, ivd, idx_dim);
  int nbo = 0;
  for (int d = 0; d < r->rank; d++)
    if (!contains(&dn->offset_dims, d))
      out_dim[nbo++] = d;
  if (nbo != nb) {
    return chk_fail_unref(ev, ins, r, "output has %d batch dims, indices have %d", nbo, nb);
  }
  for (int j = 0; j < nb; j++) {
    bdims[j] = idx->dims[idx_dim[j]];
    if (r->dims[out_dim[j]] != bdims[j]) {
      return chk_fail_unref(ev, ins, r, "output batch dim %lld does not match index dim %lld",
                        (long long)out_dim[j], (long long)idx_dim[j]);
    }
  }
  if (r->count == 0)
    return r;

  int64_t pos[HLO_MAX_RANK] = {0};  /* batch position, one entry per batch dim */
  int64_t ipos[HLO_MAX_RANK] = {0}; /* the same, indexed by index dim */
  do {
    int64_t ioff = 0, doff = 0;
    for (int j = 0; j < nb; j++) {
      ioff += pos[j] * is[idx_dim[j]];
      doff += pos[j] * rs[out_dim[j]];
      ipos[idx_dim[j]] = pos[j];
    }
    int64_t start[HLO_MAX_RANK] = {0};
    for (int k = 0; k < dn->start_index_map.n; k++) {
      int64_t d = dn->start_index_map.v[k];
      int64_t v = chk_index_value(idx, ioff + (ivd < idx->rank ? k * is[ivd] : 0));
      int64_t hi = a->dims[d] - sizes->v[d];
      start[d] = v < 0 ? 0 : v > hi ? hi : v;
    }
    for (int i = 0; i < dn->operand_batching_dims.n; i++)
      start[dn->operand_batching_dims.v[i]] = ipos[dn->start_indices_batching_dims.v[i]];
    int64_t soff = 0;
    for (int d = 0; d < a->rank; d++)
      soff += start[d] * as[d];
    box_copy((char *)r->data + (size_t)doff * r->elem_size, win_dst,
             (const char *)a->data + (size_t)soff * a->elem_size, win_src, nwin, win_dims,
             a->elem_size);
  } while (hlo_index_next(nb, bdims, pos));
  return r;
}

/* ---- scatter combiners ----------------------------------------------------- */

typedef enum combine_kind {
  COMBINE_CALL,      /* general: call to_apply per element */
  COMBINE_OVERWRITE, /* returns the update(s) */
  COMBINE_KEEP,      /* returns the old value(s) */
  COMBINE_BINARY     /* one elementwise op of the two parameters */
} combine_kind;

/* Recognises `ROOT p = parameter(k)` for N = 1 and `ROOT t = tuple(p_k...)`
 * with every element parameter(first + i), for any N. */
static bool returns_params(const hlo_computation *c, int n, int first) {
  const hlo_instr *root = c->root;
  if (!root)
    return false;
  if (n == 1 && root->op == HLO_OP_PARAMETER)
    return root->parameter_number == first;
  if (root->op != HLO_OP_TUPLE || root->noperands != n)
    return false;
  for (int i = 0; i < n; i++)
    if (root->operands[i]->op != HLO_OP_PARAMETER ||
        root->operands[i]->parameter_number != first + i)
      return false;
  return true;
}

static void store_bits(void *p, size_t es, uint64_t x) {
  switch (es) {
  case 1: *(uint8_t *)p = (uint8_t)x; break;
  case 2: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); break; }
  case 4: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); break; }
  default: memcpy(p, &x, 8); break;
  }
}

/* Sign-extends the low `bits` bits. */
static int64_t sext(uint64_t x, int bits) {
  if (bits >= 64)
    return (int64_t)x;
  uint64_t m = 1ull << (bits - 1);
  x &= (1ull << bits) - 1;
  return (int64_t)((x ^ m) - m);
}

/* maximum/minimum propagate NaN (the first NaN seen); on equal values
 * (+0 and -0 included) the accumulator is kept. */

/* acc = acc OP u for one element of type t.  Floats are computed exactly
 * in double and rounded once into t (f32 natively: float + and * are
 * correctly rounded); integers wrap; pred treats add/max/or as OR and
 * multiply/min/and as AND. */
static void combine_binary(hlo_opcode op, hlo_etype t, size_t es, void *acc, const void *u) {
  hlo_eclass cls = hlo_etype_class(t);
  if (t == HLO_F32) {
    float x, y, z;
    memcpy(&x, acc, 4);
    memcpy(&y, u, 4);
    switch (op) {
    case HLO_OP_ADD: z = x + y; break;
    case HLO_OP_MULTIPLY: z = x * y; break;
    case HLO_OP_MAXIMUM: z = (float)hlo_max_f64(x, y); break;
    case HLO_OP_MINIMUM: z = (float)hlo_min_f64(x, y); break;
    default: return;
    }
    memcpy(acc, &z, 4);
    return;
  }
  if (cls == HLO_CLASS_FLOAT) {
    uint64_t xb = chk_load_bits(acc, es), yb = chk_load_bits(u, es);
    double x = hlo_float_decode(t, xb), y = hlo_float_decode(t, yb), z;
    switch (op) {
    case HLO_OP_ADD: z = x + y; break;
    case HLO_OP_MULTIPLY: z = x * y; break;
    case HLO_OP_MAXIMUM:
    case HLO_OP_MINIMUM: {
      /* Pick one operand and keep its exact bits (NaN payload, sign of 0). */
      bool take_y = isnan(x)   ? false
                    : isnan(y) ? true
                    : op == HLO_OP_MAXIMUM ? y > x : y < x;
      store_bits(acc, es, take_y ? yb : xb);
      return;
    }
    default: return;
    }
    store_bits(acc, es, hlo_float_encode(t, z));
    return;
  }
  if (cls == HLO_CLASS_PRED) {
    uint8_t x = *(uint8_t *)acc != 0, y = *(const uint8_t *)u != 0, z;
    switch (op) {
    case HLO_OP_ADD: case HLO_OP_MAXIMUM: case HLO_OP_OR: z = x | y; break;
    case HLO_OP_MULTIPLY: case HLO_OP_MINIMUM: case HLO_OP_AND: z = x & y; break;
    case HLO_OP_XOR: z = x ^ y; break;
    default: return;
    }
    *(uint8_t *)acc = z;
    return;
  }
  /* Integers: work on 64-bit values, wrap into t on store. */
  int bits = hlo_etype_bits(t);
  bool sgn = cls == HLO_CLASS_SINT;
  uint64_t xb = chk_load_bits(acc, es), yb = chk_load_bits(u, es), z;
  switch (op) {
  case HLO_OP_ADD: z = xb + yb; break;
  case HLO_OP_MULTIPLY: z = xb * yb; break;
  case HLO_OP_AND: z = xb & yb; break;
  case HLO_OP_OR: z = xb | yb; break;
  case HLO_OP_XOR: z = xb ^ yb; break;
  case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM: {
    bool ygt = sgn ? sext(yb, bits) > sext(xb, bits) : yb > xb;
    bool take_y = op == HLO_OP_MAXIMUM ? ygt : (!ygt && yb != xb);
    z = take_y ? yb : xb;
    break;
  }
  default: return;
  }
  store_bits(acc, es, hlo_int_wrap(t, z));
}

static bool binary_supported(hlo_opcode op, hlo_etype t) {
  hlo_eclass cls = hlo_etype_class(t);
  switch (op) {
  case HLO_OP_ADD: case HLO_OP_MULTIPLY: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM:
    return cls == HLO_CLASS_FLOAT || cls == HLO_CLASS_SINT || cls == HLO_CLASS_UINT ||
           cls == HLO_CLASS_PRED;
  case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
    return cls == HLO_CLASS_SINT || cls == HLO_CLASS_UINT || cls == HLO_CLASS_PRED;
  default:
    return false;
  }
}

/* A reusable scalar argument for per-element calls.  Once a call has
 * returned and we hold the only reference again, nobody else can observe
 * the value, so it may be overwritten for the next call instead of
 * allocating a new one per element. */
static hlo_value *scalar_slot(hlo_value **slot, hlo_etype t) {
  if (*slot && (*slot)->refs == 1)
    return *slot;
  hlo_value_unref(*slot);
  *slot = hlo_value_array(t, 0, NULL);
  return *slot;
}

/* ---- scatter ------------------------------------------------------------- */

typedef struct scatter_ctx {
  chk_eval *ev;
  const hlo_instr *ins;
  int n;                 /* operands (and updates) */
  hlo_value **out;       /* n results, being updated */
  hlo_value *const *upd; /* n updates */
  combine_kind kind;
  hlo_opcode binop;
  hlo_value **args;      /* 2n scalar slots for COMBINE_CALL */
} scatter_ctx;

/* Combines update element ui into result element oi of every output. */
static int combine_at(scatter_ctx *c, int64_t oi, int64_t ui) {
  size_t es;
  switch (c->kind) {
  case COMBINE_KEEP:
    return 0;
  case COMBINE_OVERWRITE:
    for (int k = 0; k < c->n; k++) {
      es = c->out[k]->elem_size;
      memcpy((char *)c->out[k]->data + (size_t)oi * es,
             (const char *)c->upd[k]->data + (size_t)ui * es, es);
    }
    return 0;
  case COMBINE_BINARY:
    es = c->out[0]->elem_size;
    combine_binary(c->binop, c->out[0]->type, es, (char *)c->out[0]->data + (size_t)oi * es,
                   (const char *)c->upd[0]->data + (size_t)ui * es);
    return 0;
  case COMBINE_CALL:
    break;
  }
  hlo_value *argv[2 * 64];
  for (int k = 0; k < c->n; k++) {
    hlo_value *o = scalar_slot(&c->args[k], c->out[k]->type);
    hlo_value *u = scalar_slot(&c->args[c->n + k], c->upd[k]->type);
    if (!o || !u) {
      chk_fail(c->ev, c->ins, "out of memory");
      return -1;
    }
    es = c->out[k]->elem_size;
    memcpy(o->data, (const char *)c->out[k]->data + (size_t)oi * es, es);
    memcpy(u->data, (const char *)c->upd[k]->data + (size_t)ui * c->upd[k]->elem_size,
           c->upd[k]->elem_size);
    argv[k] = o;
    argv[c->n + k] = u;
  }
  const hlo_computation *f = c->ins->attrs.calls.to_apply;
  hlo_value *res = chk_call(c->ev, c->ins, f, 2 * c->n, argv);
  if (!res)
    return -1;
  int rc = 0;
  for (int k = 0; k < c->n; k++) {
    const hlo_value *e = c->n == 1 && res->type != HLO_TUPLE ? res
                         : res->type == HLO_TUPLE && res->ntuple == c->n ? res->elems[k]
                                                                           : NULL;
    if (!chk_is_array(e) || e->type != c->out[k]->type || e->count != 1) {
      chk_fail(c->ev, c->ins, "to_apply %s must return %d scalar(s) of the operand types",
               f->name, c->n);
      rc = -1;
      break;
    }
    es = c->out[k]->elem_size;
    memcpy((char *)c->out[k]->data + (size_t)oi * es, e->data, es);
  }
  hlo_value_unref(res);
  return rc;
}

static int scatter_run(scatter_ctx *c, const hlo_value *idx) {
  const hlo_instr *ins = c->ins;
  chk_eval *ev = c->ev;
  const hlo_scatter_dnums *dn = &ins->attrs.scatter;
  const hlo_value *a = c->out[0], *u = c->upd[0];
  int64_t ivd = dn->index_vector_dim;
  if (ivd < 0 || ivd > idx->rank) {
    chk_fail(ev, ins, "index_vector_dim %lld out of range", (long long)ivd);
    return -1;
  }
  int64_t nvec = ivd < idx->rank ? idx->dims[ivd] : 1;
  if (nvec != dn->scatter_dims_to_operand_dims.n) {
    chk_fail(ev, ins, "index vectors have %lld entries, scatter_dims_to_operand_dims has %d",
             (long long)nvec, dn->scatter_dims_to_operand_dims.n);
    return -1;
  }
  for (int k = 0; k < dn->scatter_dims_to_operand_dims.n; k++)
    if (dn->scatter_dims_to_operand_dims.v[k] < 0 ||
        dn->scatter_dims_to_operand_dims.v[k] >= a->rank) {
      chk_fail(ev, ins, "scatter_dims_to_operand_dims[%d] out of range", k);
      return -1;
    }
  if (dn->input_batching_dims.n != dn->scatter_indices_batching_dims.n) {
    chk_fail(ev, ins, "input_batching_dims and scatter_indices_batching_dims differ in length");
    return -1;
  }

  int64_t as[HLO_MAX_RANK], us[HLO_MAX_RANK], is[HLO_MAX_RANK];
  hlo_value_strides(a, as);
  hlo_value_strides(u, us);
  hlo_value_strides(idx, is);

  /* Window: operand dims that are neither inserted nor batching, matched in
   * order with update_window_dims.  wsize is the window extent in every
   * operand dim (1 for inserted and batching dims), for the bounds check. */
  int nwin = 0;
  int64_t win_dims[HLO_MAX_RANK], win_a[HLO_MAX_RANK], win_u[HLO_MAX_RANK];
  int64_t wsize[HLO_MAX_RANK];
  for (int d = 0; d < a->rank; d++) {
    wsize[d] = 1;
    if (contains(&dn->inserted_window_dims, d) || contains(&dn->input_batching_dims, d))
      continue;
    if (nwin >= dn->update_window_dims.n) {
      chk_fail(ev, ins, "update_window_dims has %d entries, fewer than the window dims",
               dn->update_window_dims.n);
      return -1;
    }
    int64_t ud = dn->update_window_dims.v[nwin];
    if (ud < 0 || ud >= u->rank || u->dims[ud] > a->dims[d]) {
      chk_fail(ev, ins, "update_window_dims[%d] does not fit operand dim %d", nwin, d);
      return -1;
    }
    wsize[d] = win_dims[nwin] = u->dims[ud];
    win_a[nwin] = as[d];
    win_u[nwin] = us[ud];
    nwin++;
  }
  if (nwin != dn->update_window_dims.n) {
    chk_fail(ev, ins, "update_window_dims has %d entries, but %d operand dims are window dims",
             dn->update_window_dims.n, nwin);
    return -1;
  }

  /* Scatter dims of the updates, matched in order with the index dims
   * other than index_vector_dim. */
  int64_t idx_dim[HLO_MAX_RANK], upd_dim[HLO_MAX_RANK], bdims[HLO_MAX_RANK];
  int nb = index_batch_dims(idx, ivd, idx_dim);
  int nbu = 0;
  for (int d = 0; d < u->rank; d++)
    if (!contains(&dn->update_window_dims, d))
      upd_dim[nbu++] = d;
  if (nbu != nb) {
    chk_fail(ev, ins, "updates have %d scatter dims, indices have %d", nbu, nb);
    return -1;
  }
  for (int j = 0; j < nb; j++) {
    bdims[j] = idx->dims[idx_dim[j]];
    if (u->dims[upd_dim[j]] != bdims[j]) {
      chk_fail(ev, ins, "update scatter dim %lld does not match index dim %lld",
               (long long)upd_dim[j], (long long)idx_dim[j]);
      return -1;
    }
  }
  for (int j = 0; j < nb; j++)
    if (bdims[j] == 0)
      return 0;
  for (int k = 0; k < nwin; k++)
    if (win_dims[k] == 0)
      return 0;

  int64_t pos[HLO_MAX_RANK] = {0}, ipos[HLO_MAX_RANK] = {0};
  do {
    int64_t ioff = 0, uoff = 0;
    for (int j = 0; j < nb; j++) {
      ioff += pos[j] * is[idx_dim[j]];
      uoff += pos[j] * us[upd_dim[j]];
      ipos[idx_dim[j]] = pos[j];
    }
    int64_t start[HLO_MAX_RANK] = {0};
    for (int k = 0; k < dn->scatter_dims_to_operand_dims.n; k++)
      start[dn->scatter_dims_to_operand_dims.v[k]] =
          chk_index_value(idx, ioff + (ivd < idx->rank ? k * is[ivd] : 0));
    for (int i = 0; i < dn->input_batching_dims.n; i++)
      start[dn->input_batching_dims.v[i]] = ipos[dn->scatter_indices_batching_dims.v[i]];
    /* The whole window must fit, else it is skipped (no partial update). */
    bool inside = true;
    int64_t aoff = 0;
    for (int d = 0; d < a->rank && inside; d++) {
      /* Indices may be anything an s64/u64 holds: test before using one
       * in an offset, where an extreme value would overflow. */
      inside = start[d] >= 0 && start[d] <= a->dims[d] - wsize[d];
      if (inside)
        aoff += start[d] * as[d];
    }
    if (!inside)
      continue;
    int64_t w[HLO_MAX_RANK] = {0};
    do {
      int64_t oi = aoff, ui = uoff;
      for (int k = 0; k < nwin; k++) {
        oi += w[k] * win_a[k];
        ui += w[k] * win_u[k];
      }
      if (combine_at(c, oi, ui) != 0)
        return -1;
    } while (hlo_index_next(nwin, win_dims, w));
  } while (hlo_index_next(nb, bdims, pos));
  return 0;
}

static hlo_value *op_scatter(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands < 3 || ins->noperands % 2 != 1)
    return chk_fail(ev, ins, "needs N operands, indices and N updates");
  int n = (ins->noperands - 1) / 2;
  if (n > 64)
    return chk_fail(ev, ins, "more than 64 operands are not supported");
  const hlo_value *idx = ops[n];
  if (!chk_is_array(idx) || !hlo_etype_is_int(idx->type))
    return chk_fail(ev, ins, "scatter indices must be an integer array");
  const hlo_computation *f = ins->attrs.calls.to_apply;
  if (!f)
    return chk_fail(ev, ins, "missing to_apply");
  for (int k = 0; k < n; k++) {
    const hlo_value *o = ops[k], *u = ops[n + 1 + k];
    if (!chk_is_array(o) || !chk_is_array(u))
      return chk_fail(ev, ins, "operands and updates must be arrays");
    bool same = o->rank == ops[0]->rank && u->rank == ops[n + 1]->rank;
    for (int d = 0; same && d < o->rank; d++)
      same = o->dims[d] == ops[0]->dims[d];
    for (int d = 0; same && d < u->rank; d++)
      same = u->dims[d] == ops[n + 1]->dims[d];
    if (!same)
      return chk_fail(ev, ins, "operand %d or update %d differs in shape from the first", k, k);
    if (u->type != o->type)
      return chk_fail(ev, ins, "update %d has type %s, operand has %s", k,
                      hlo_etype_name(u->type), hlo_etype_name(o->type));
  }

  scatter_ctx c = {.ev = ev, .ins = ins, .n = n, .upd = ops + n + 1, .kind = COMBINE_CALL};
  if (f->nparams == 2 * n && returns_params(f, n, n))
    c.kind = COMBINE_OVERWRITE;
  else if (f->nparams == 2 * n && returns_params(f, n, 0))
    c.kind = COMBINE_KEEP;
  else if (n == 1) {
    hlo_opcode op = hlo_simple_reducer(f);
    if (op != HLO_OP_INVALID && binary_supported(op, ops[0]->type) &&
        f->root->shape.type == ops[0]->type) {
      c.kind = COMBINE_BINARY;
      c.binop = op;
    }
  }

  hlo_value *out[64] = {0}, *args[128] = {0};
  c.out = out;
  c.args = args;
  hlo_value *result = NULL;
  for (int k = 0; k < n; k++) {
    out[k] = hlo_value_clone(ops[k]);
    if (!out[k]) {
      chk_fail(ev, ins, "out of memory");
      goto done;
    }
  }
  if (scatter_run(&c, idx) != 0)
    goto done;
  result = chk_variadic_result(ev, ins, n, out, "scatter");
done:
  for (int k = 0; k < n; k++)
    hlo_value_unref(out[k]);
  for (int k = 0; k < 2 * n; k++)
    hlo_value_unref(args[k]);
  return result;
}

hlo_value *chk_op_gather(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  switch (ins->op) {
  case HLO_OP_GATHER:
    if (ins->noperands != 2)
      return chk_fail(ev, ins, "needs an operand and start indices");
    return op_gather(ev, ins, ops);
  case HLO_OP_SCATTER:
    return op_scatter(ev, ins, ops);
  default:
    return chk_fail(ev, ins, "not a gather or scatter");
  }
}
