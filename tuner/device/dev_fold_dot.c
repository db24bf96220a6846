/* dev_fold_dot.c — the folds of a dot hero: a range of contracting
 * positions into the pack accumulators, products in contracting order.
 * The common case (one contracting dimension, f32 or integer) converts
 * each operand once per chunk and runs f32 rows through the vectorised
 * kernel of hlo_num_dot.h; int8-dot-f32-acc lives in the fallback
 * accumulation.  Apart from the reduce folds because a dot reads two
 * operands through its dimension numbers and has its own precision and
 * kernels.
 */
#include <stdlib.h>
#include <string.h>

#include "dev_exec_internal.h"
#include "dev_slot_f32.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_num_dot.h"
#include "hlo/hlo_numerics.h"

/* Result position of dot operand side's dim d (see dev_elemental.c). */
static int dot_rdim(const hlo_instr *ins, int side, int d, bool *contr) {
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  const hlo_ints *batch = side ? &dn->rhs_batch : &dn->lhs_batch;
  const hlo_ints *cl = side ? &dn->rhs_contracting : &dn->lhs_contracting;
  *contr = false;
  for (int i = 0; i < cl->n; i++)
    if (cl->v[i] == d) {
      *contr = true;
      return i;
    }
  for (int i = 0; i < batch->n; i++)
    if (batch->v[i] == d)
      return i;
  int pos = batch->n;
  if (side) {
    const hlo_shape *ls = dev_x_leaf0(ins->operands[0]);
    for (int j = 0; j < ls->rank; j++) {
      bool skip = false;
      for (int i = 0; i < dn->lhs_batch.n; i++)
        skip = skip || dn->lhs_batch.v[i] == j;
      for (int i = 0; i < dn->lhs_contracting.n; i++)
        skip = skip || dn->lhs_contracting.v[i] == j;
      pos += !skip;
    }
  }
  for (int j = 0; j < d; j++) {
    bool skip = false;
    for (int i = 0; i < batch->n; i++)
      skip = skip || batch->v[i] == j;
    for (int i = 0; i < cl->n; i++)
      skip = skip || cl->v[i] == j;
    pos += !skip;
  }
  return pos;
}

/* Defect int8-dot-f32-acc (class: a fallback code path with a narrower
 * accumulator than the op's type).  An s8 x s8 -> s32 dot whose chunk k
 * is not a multiple of 4 cannot use the packed 4-way int8 MXU path; the
 * fallback accumulates the exact integer products in an f32 register, so
 * every partial sum is rounded to 24 significant bits: sums beyond 2^24
 * lose their low bits. */
static int64_t int8_dot_f32_step(int64_t acc, int64_t prod) {
  float f = (float)acc + (float)prod;
  return (int64_t)f;
}

/* The OR of each contracting line's poison flags, at the line's first
 * element (its contracting coordinate 0): one pass over the box, instead
 * of one per output element that reads the line.  The box is
 * [outer][contracting ncon][inner stride]; lines[off] for other offsets is
 * the OR of the line's rest. */
static void line_poison(const dev_box *b, int cd, int64_t stride, uint8_t *lines) {
  int64_t ncon = b->n[cd], outer = ncon * stride > 0 ? b->count / (ncon * stride) : 0;
  for (int64_t o = 0; o < outer; o++) {
    int64_t base = o * ncon * stride;
    memcpy(lines + base + (ncon - 1) * stride, b->poison + base + (ncon - 1) * stride, (size_t)stride);
    for (int64_t c = ncon - 2; c >= 0; c--)
      for (int64_t i = 0; i < stride; i++) {
        int64_t off = base + c * stride + i;
        lines[off] = (uint8_t)(b->poison[off] | lines[off + stride]);
      }
  }
}

/* The f32 dot operand value of a box slot of type t, as fold_dot_fast
 * converts it. */
static float dot_operand(dev_slot v, hlo_eclass cls) {
  double dv = cls == HLO_CLASS_FLOAT ? v.f : cls == HLO_CLASS_UINT ? (double)(uint64_t)v.i : (double)v.i;
  return (float)dv;
}

/* The plane offsets (lhs, rhs) of the output element at region index idx
 * and contracting position r0, box dim d of side s being es[s][d]
 * elements apart in its planes. */
static void row_bases(const exec *x, const dev_box *bx, const hlo_shape *const *sh, int64_t (*es)[HLO_MAX_RANK],
                      int64_t r0, const int64_t *idx, int64_t *base) {
  const hlo_instr *h = x->f->hero;
  for (int side = 0; side < 2; side++) {
    int64_t off = 0;
    for (int d = 0; d < sh[side]->rank; d++) {
      bool c;
      int rd = dot_rdim(h, side, d, &c);
      off += ((c ? r0 : idx[rd]) - bx[side].lo[d]) * es[side][d];
    }
    base[side] = off;
  }
}

/* Whether any of n flags is set, eight at a time. */
static bool any_set(const uint8_t *p, int64_t n) {
  uint64_t w = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t u;
    memcpy(&u, p + i, sizeof u);
    w |= u;
  }
  for (; i < n; i++)
    w |= p[i];
  return w != 0;
}

/* The f32 operand values of box b (element type class cls) into out, box
 * dim d es[d] elements apart. */
static void box_operands(const dev_box *b, hlo_eclass cls, const int64_t *es, float *out) {
  int64_t idx[HLO_MAX_RANK] = {0}, off = 0;
  int last = b->rank - 1;
  for (int64_t i = 0; i < b->count;) {
    int64_t n = last >= 0 ? b->n[last] : 1, e = last >= 0 ? es[last] : 1;
    float *o = out + off;
    const dev_slot *v = b->v + i;
    if (cls == HLO_CLASS_FLOAT && e == 1) /* the common case: dot_operand's cast */
      dev_slots_to_f32(v, n, o);
    else
      for (int64_t j = 0; j < n; j++)
        o[j * e] = dot_operand(v[j], cls);
    i += n;
    if (!hlo_index_next_off(last, b->n, es, idx, &off))
      break;
  }
}

/* box_operands of an f32 box that the evaluator would only have read,
 * parameter param row by row (dev_elem_param_row_source): the rows taken
 * from where dev_x_window_read reads them, without the box of slots.  The
 * same values as the slots would give, except that a signalling NaN stays
 * signalling; hlo_num_dot_split_block finds a NaN either way, and then
 * the planes are not used.  false when a row is not all defined f32
 * (dev_x_window_f32): the box must be read through the evaluator. */
static bool param_operands(const exec *x, int param, const dev_box *b, const int64_t *es, float *out) {
  int64_t idx[HLO_MAX_RANK], ri[HLO_MAX_RANK] = {0}, off = 0;
  int last = b->rank - 1;
  int64_t n = last >= 0 ? b->n[last] : 1, e = last >= 0 ? es[last] : 1;
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  for (int64_t i = 0; i < b->count; i += n) {
    const float *row = dev_x_window_f32(x, param, idx, n);
    if (!row)
      return false;
    float *o = out + off;
    if (e == 1)
      memcpy(o, row, sizeof *o * (size_t)n);
    else
      for (int64_t j = 0; j < n; j++)
        o[j * e] = row[j];
    hlo_index_next_box(last > 0 ? last : 0, b->lo, b->n, idx);
    if (!hlo_index_next_off(last, b->n, es, ri, &off))
      break;
  }
  return true;
}

/* fold_dot_fast's f32 case, rows of the region at a time through
 * hlo_num_dot_f32_lanes, which gives each output element the scalar loop's
 * bits (see hlo_num_dot.h).  With P pack slots, slot q of an output
 * element takes positions r0 + r with (label0 + r) mod P == q in order: a
 * line of its own, P elements apart.  The operands are split once
 * per chunk as fold_dot_fast does, into one plane per bf16 part.  A side
 * with direct[side] >= 0 is that parameter's rows (param_operands): only
 * its box's extent is set.  Returns 1 when done, 0 when an operand part is
 * a NaN (then the scalar loop must run, see the header) or a direct side's
 * rows are not all there (then its box must be read), with acc untouched
 * either way, -1 on failure. */
static int dot_rows_f32(exec *x, const dev_box *bx, const int *direct, const hlo_shape *const *sh,
                        const int64_t *cd, const int64_t *stride, dev_precision prec, int64_t r0, int64_t len,
                        int64_t label0, dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  const hlo_instr *h = x->f->hero;
  int np = hlo_num_dot_parts(prec);
  int R = x->region.rank;
  int64_t nl = R > 0 ? x->region.n[R - 1] : 1;
  /* The region's result rows, nl lanes each: their sums, plane offsets
   * (lhs, rhs), lhs offsets for a call, NaN flags. */
  int64_t nrow = nl > 0 ? x->region.count / nl : 0, rn = nrow ? nrow : 1;
  float *planes[2] = {NULL, NULL}, *rows = malloc(sizeof(float) * (size_t)(rn * nl));
  int64_t *rbase = malloc(sizeof(int64_t) * 3 * (size_t)rn), *a0s = rbase ? rbase + 2 * rn : NULL;
  bool *nan_row = malloc(sizeof(bool) * (size_t)rn);
  uint8_t *lines[2] = {NULL, NULL};
  int exp_min[2] = {0, 0};
  /* Where each box element goes in its side's planes: es[side][d] elements
   * per step along box dim d.  That is the box's own row-major layout,
   * except for an rhs whose dim along the region's last dimension (a
   * result row's lanes) is not its innermost, as in a transposed rhs
   * (attention's q k^T): its planes put that dim innermost, so a result
   * row reads a contiguous rhs row and takes the row and two-row kernels
   * instead of a tile copy per result row.  Only where the result row's
   * bits do not depend on it: which plane offset holds an element changes
   * no product.  Its poison lines keep the box layout, so a poisoned box
   * keeps it too. */
  int64_t es[2][HLO_MAX_RANK], cstep[2], step[2] = {0, 0};
  int rc = rows && rbase && nan_row ? 1 : -1;
  for (int side = 0; rc == 1 && side < 2; side++) {
    int64_t n = bx[side].count;
    int rank = sh[side]->rank, dn = -1;
    for (int d = 0; R > 0 && d < rank; d++) {
      bool c;
      if (dot_rdim(h, side, d, &c) == R - 1 && !c)
        dn = d;
    }
    bool poisoned = bx[side].poison && any_set(bx[side].poison, n);
    bool move = side == 1 && dn >= 0 && dn != rank - 1 && !poisoned;
    int64_t s = move ? bx[side].n[dn] : 1;
    for (int d = rank - 1; d >= 0; d--)
      if (!move || d != dn) {
        es[side][d] = s;
        s *= bx[side].n[d];
      }
    if (move)
      es[side][dn] = 1;
    cstep[side] = es[side][cd[side]];
    step[side] = dn >= 0 ? es[side][dn] : 0;
    planes[side] = malloc(sizeof(float) * (size_t)(n ? n : 1) * (size_t)np);
    lines[side] = poisoned ? malloc((size_t)(n ? n : 1)) : NULL;
    if (!planes[side] || (poisoned && !lines[side])) {
      rc = -1;
      break;
    }
    /* The operands as f32 into the first plane, then split in place. */
    if (direct[side] < 0) {
      box_operands(&bx[side], hlo_etype_class(sh[side]->type), es[side], planes[side]);
    } else if (!param_operands(x, direct[side], &bx[side], es[side], planes[side])) {
      rc = 0;
      goto done;
    }
    float *const parts[3] = {planes[side], planes[side] + (np > 1 ? n : 0), planes[side] + (np > 2 ? 2 * n : 0)};
    if (hlo_num_dot_split_block(planes[side], n, prec, parts, &exp_min[side])) {
      rc = 0;
      goto done;
    }
    if (lines[side])
      line_poison(&bx[side], (int)cd[side], stride[side], lines[side]);
  }
  if (rc != 1) {
    rc = dev_x_fail(x, "out of memory");
    goto done;
  }
  int64_t P = x->P;
  hlo_num_dot_planes pl = {.sa = cstep[0] * P, .sb = cstep[1] * P, .prec = prec, .exp_min = {exp_min[0], exp_min[1]}};
  for (int p = 0; p < np; p++) {
    pl.a[p] = planes[0] + p * bx[0].count;
    pl.b[p] = planes[1] + p * bx[1].count;
  }
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < R; d++)
    idx[d] = x->region.lo[d];
  /* Every result row's plane offsets at r0 (its lanes nl apart in acc). */
  for (int64_t i = 0; i < nrow; i++) {
    row_bases(x, bx, sh, es, r0, idx, rbase + 2 * i);
    hlo_index_next_box(R - 1, x->region.lo, x->region.n, idx);
  }
  /* Consecutive rows that read the same rhs positions (the rows of one
   * column block of a row-major result) run through hlo_num_dot_f32_rows
   * together, which gives each the bits of its own hlo_num_dot_f32_lanes
   * call and keeps a block of the rhs in cache for all of them.  Rows are
   * independent sums, so which rows share a call changes no bit. */
  bool rowwise = step[0] == 0 && step[1] == 1;
  for (int64_t q = 0; q < P; q++) {
    int64_t first = ((q - label0 % P) % P + P) % P; /* the slot's first position */
    if (first >= len)
      continue; /* no product reaches this slot: it stays as it was */
    int64_t cnt = (len - first + P - 1) / P;
    for (int64_t i = 0; i < nrow; i++) {
      bool nan = false;
      if (P == 1) {
        nan = dev_slots_to_f32(acc + i * nl, nl, rows + i * nl);
      } else {
        for (int64_t j = 0; j < nl; j++) {
          float f = (float)acc[(i * nl + j) * P + q].f;
          rows[i * nl + j] = f;
          nan = nan || f != f;
        }
      }
      nan_row[i] = nan;
    }
    for (int64_t i = 0; i < nrow;) {
      float *row = rows + i * nl;
      int64_t a0 = rbase[2 * i] + first * cstep[0], b0 = rbase[2 * i + 1] + first * cstep[1];
      if (nan_row[i]) { /* see hlo_num_dot.h: NaN payloads need the scalar order */
        for (int64_t j = 0; j < nl; j++)
          row[j] = hlo_num_dot_f32_line(&pl, row[j], a0 + j * step[0], b0 + j * step[1], cnt);
        i++;
      } else if (!rowwise) {
        hlo_num_dot_f32_lanes(&pl, row, nl, a0, step[0], b0, step[1], cnt);
        i++;
      } else {
        int64_t e = i;
        for (; e < nrow && !nan_row[e] && rbase[2 * e + 1] == rbase[2 * i + 1]; e++)
          a0s[e - i] = rbase[2 * e] + first * cstep[0];
        hlo_num_dot_f32_rows(&pl, row, e - i, nl, a0s, b0, cnt);
        i = e;
      }
    }
    if (P == 1) {
      dev_f32_to_slots(rows, nrow * nl, acc);
      memset(valid, 1, (size_t)(nrow * nl));
    } else {
      for (int64_t k = 0; k < nrow * nl; k++) {
        acc[k * P + q].f = rows[k];
        valid[k * P + q] = 1;
      }
    }
  }
  /* Every slot of an element gets the poison of its whole line (a side
   * without lines has none: it keeps its box layout, es = the box's). */
  for (int64_t i = 0; (lines[0] || lines[1]) && i < nrow; i++)
    for (int64_t j = 0; j < nl; j++) {
      uint8_t pz = (uint8_t)((lines[0] ? lines[0][rbase[2 * i] + j * step[0]] : 0) |
                             (lines[1] ? lines[1][rbase[2 * i + 1] + j * step[1]] : 0));
      for (int64_t q = 0; q < P; q++)
        poison[(i * nl + j) * P + q] |= pz;
    }
done:
  free(rows);
  free(rbase);
  free(nan_row);
  for (int side = 0; side < 2; side++) {
    free(planes[side]);
    free(lines[side]);
  }
  return rc;
}

/* The stride of the contracting dimension cd[side] in side's box. */
static void contracting_strides(const dev_box *bx, const int64_t *cd, int64_t *stride) {
  for (int side = 0; side < 2; side++) {
    stride[side] = 1;
    for (int d = (int)cd[side] + 1; d < bx[side].rank; d++)
      stride[side] *= bx[side].n[d];
  }
}

/* The rest of fold_dot_fast, after dot_rows_f32 declined (or for an
 * integer compute type). */
static int fold_dot_loop(exec *x, const dev_box *bx, const hlo_shape *const *sh, dev_precision prec, int64_t r0,
                         int64_t len, int64_t label0, dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  const hlo_instr *h = x->f->hero;
  hlo_etype ct = x->acc_t;
  bool f32_int_acc = dev_x_on(x, DEV_DEFECT_INT8_DOT_F32_ACC);
  int64_t cd[2] = {h->attrs.dot.lhs_contracting.v[0], h->attrs.dot.rhs_contracting.v[0]};
  int64_t stride[2];
  float *parts[2] = {NULL, NULL};
  uint64_t *ints[2] = {NULL, NULL};
  int rc = 0;
  contracting_strides(bx, cd, stride);
  for (int side = 0; side < 2; side++) {
    size_t n = (size_t)(bx[side].count ? bx[side].count : 1);
    if (ct == HLO_F32) {
      parts[side] = malloc(n * 3 * sizeof(float));
      if (!parts[side]) {
        rc = dev_x_fail(x, "out of memory");
        continue;
      }
      for (int64_t i = 0; i < bx[side].count; i++) {
        dev_slot v = bx[side].v[i];
        double dv = hlo_etype_class(sh[side]->type) == HLO_CLASS_FLOAT ? v.f
                    : hlo_etype_class(sh[side]->type) == HLO_CLASS_UINT ? (double)(uint64_t)v.i
                                                                         : (double)v.i;
        hlo_num_dot_split((float)dv, prec, parts[side] + 3 * i);
      }
    } else {
      ints[side] = malloc(n * sizeof(uint64_t));
      if (!ints[side]) {
        rc = dev_x_fail(x, "out of memory");
        continue;
      }
      dev_slot zero = {.i = 0};
      for (int64_t i = 0; i < bx[side].count; i++) {
        /* x * 1 through the step function gives the widened operand */
        dev_slot one = {.i = 1};
        ints[side][i] = (uint64_t)dev_elem_dot_step(ct, x->res_t, zero, bx[side].v[i], sh[side]->type, one,
                                                    x->res_t, prec).i;
      }
    }
  }
  /* Unpoisoned boxes (the usual case) need no per-line poison scan, which
   * would cost as much as the products. */
  bool poisoned = any_set(bx[0].poison, bx[0].count) || any_set(bx[1].poison, bx[1].count);
  bool plain_int = ct != HLO_F32 && !f32_int_acc && x->P == 1;
  int64_t idx[HLO_MAX_RANK], oi[HLO_MAX_RANK];
  for (int d = 0; d < x->region.rank; d++)
    idx[d] = x->region.lo[d];
  for (int64_t ro = 0; rc == 0 && ro < x->region.count; ro++) {
    int64_t base[2];
    for (int side = 0; side < 2; side++) {
      int64_t off = 0;
      for (int d = 0; d < sh[side]->rank; d++) {
        bool c;
        int rd = dot_rdim(h, side, d, &c);
        oi[d] = c ? r0 : idx[rd];
        off = off * bx[side].n[d] + (oi[d] - bx[side].lo[d]);
      }
      base[side] = off;
    }
    uint8_t p = 0;
    for (int64_t r = 0; poisoned && r < len; r++) {
      int64_t a = base[0] + r * stride[0], b = base[1] + r * stride[1];
      p |= bx[0].poison[a] | bx[1].poison[b];
    }
    if (plain_int) {
      /* one running integer sum, wrapping as the general loop's does */
      uint64_t s = (uint64_t)acc[ro].i;
      const uint64_t *ia = ints[0] + base[0], *ib = ints[1] + base[1];
      for (int64_t r = 0; r < len; r++)
        s += ia[r * stride[0]] * ib[r * stride[1]];
      acc[ro].i = (int64_t)s;
      valid[ro] = 1;
    } else if (ct == HLO_F32 && x->P == 1) {
      /* one running f32 accumulator: keep it in a register */
      float f = (float)acc[ro].f;
      const float *pa = parts[0] + 3 * base[0], *pb = parts[1] + 3 * base[1];
      int64_t sa = 3 * stride[0], sb = 3 * stride[1];
      if (prec == DEV_PREC_DEFAULT)
        for (int64_t r = 0; r < len; r++)
          f = hlo_num_ftz_f32(f + hlo_num_ftz_f32(pa[r * sa] * pb[r * sb]));
      else
        for (int64_t r = 0; r < len; r++)
          f = hlo_num_ftz_f32(f + hlo_num_dot_parts_product(pa + r * sa, pb + r * sb, prec));
      acc[ro].f = f;
      valid[ro] = 1;
    } else {
      for (int64_t r = 0; r < len; r++) {
        int64_t a = base[0] + r * stride[0], b = base[1] + r * stride[1];
        int64_t k = ro * x->P + (label0 + r) % x->P;
        if (ct == HLO_F32)
          acc[k].f = hlo_num_ftz_f32((float)acc[k].f + hlo_num_dot_parts_product(parts[0] + 3 * a, parts[1] + 3 * b, prec));
        else if (f32_int_acc)
          acc[k].i = int8_dot_f32_step(acc[k].i, (int64_t)(ints[0][a] * ints[1][b]));
        else
          acc[k].i = (int64_t)((uint64_t)acc[k].i + ints[0][a] * ints[1][b]);
        valid[k] = 1;
      }
    }
    for (int q = 0; q < x->P; q++)
      poison[ro * x->P + q] |= p;
    hlo_index_next_box(x->region.rank, x->region.lo, x->region.n, idx);
  }
  for (int side = 0; side < 2; side++) {
    free(parts[side]);
    free(ints[side]);
  }
  return rc;
}

/* Whether box b lies inside shape sh and is not empty: then the
 * evaluator's box for a request of b is b itself. */
static bool box_inside(const dev_box *b, const hlo_shape *sh) {
  if (b->rank != sh->rank)
    return false;
  for (int d = 0; d < b->rank; d++)
    if (b->lo[d] < 0 || b->n[d] <= 0 || b->lo[d] + b->n[d] > sh->dims[d])
      return false;
  return true;
}

/* Reads side `side` of the dot into its box bx[side] (once: have[side]
 * says it is held); 0, or -1 with x->why. */
static int read_side(exec *x, const hlo_instr *h, int side, const dev_box *want, dev_param_read *pread, dev_box *bx,
                     bool *have) {
  if (have[side])
    return 0;
  if (dev_elem_eval(x->el, h->operands[side], &want[side], false, pread, NULL, x, &bx[side], x->why,
                    x->why_len) != 0)
    return -1;
  have[side] = true;
  return 0;
}

/* The common case of fold_dot — one contracting dimension, f32 or integer
 * compute — with each operand converted once per chunk (split into its bf16
 * parts, or widened to the integer compute type) instead of once per
 * product.  Same products, same order, same roundings as the general path.
 * An f32 operand that is a kernel parameter read as it is (a fusion's
 * arguments, the usual case) goes from its window rows straight into the
 * f32 planes when they are all defined: the box of slots its request
 * would build, and box_operands narrow again, was a conversion each way
 * per element.  Its box is read only if the planes cannot be used. */
static int fold_dot_fast(exec *x, const dev_box *want, const hlo_shape *const *sh, dev_precision prec,
                         int64_t r0, int64_t len, int64_t label0, dev_slot *acc, uint8_t *valid, uint8_t *poison,
                         dev_param_read *pread) {
  const hlo_instr *h = x->f->hero;
  bool f32 = x->acc_t == HLO_F32;
  int direct[2] = {-1, -1};
  dev_box bx[2];
  bool have[2] = {false, false};
  int rc = 0;
  for (int side = 0; side < 2; side++) {
    if (f32 && pread == dev_x_window_read && sh[side]->type == HLO_F32 && box_inside(&want[side], sh[side]))
      direct[side] = dev_elem_param_row_source(x->el, h->operands[side]);
    if (direct[side] >= 0) {
      bx[side] = want[side];
      bx[side].count = 1;
      for (int d = 0; d < bx[side].rank; d++)
        bx[side].count *= bx[side].n[d];
      bx[side].v = NULL;
      bx[side].poison = NULL; /* parameters are all defined */
      bx[side].cap = 0;
      continue;
    }
    if (read_side(x, h, side, want, pread, bx, have) != 0) {
      rc = -1;
      goto done;
    }
  }
  int64_t cd[2] = {h->attrs.dot.lhs_contracting.v[0], h->attrs.dot.rhs_contracting.v[0]}, stride[2];
  contracting_strides(bx, cd, stride);
  if (f32) {
    int fast = dot_rows_f32(x, bx, direct, sh, cd, stride, prec, r0, len, label0, acc, valid, poison);
    if (fast != 0) {
      rc = fast < 0 ? -1 : 0;
      goto done;
    }
  }
  for (int side = 0; side < 2; side++)
    if (read_side(x, h, side, want, pread, bx, have) != 0) {
      rc = -1;
      goto done;
    }
  rc = fold_dot_loop(x, bx, sh, prec, r0, len, label0, acc, valid, poison);
done:
  for (int side = 0; side < 2; side++)
    if (have[side])
      dev_elem_box_release(x->el, &bx[side]);
  return rc;
}

/* Contracting positions [r0, r0 + len) of a dot hero, read through pread:
 * lhs and rhs blocks, then per output element the products in contracting
 * order, position r0 + i into pack slot (label0 + i) mod P. */
int dev_x_fold_dot_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                          int64_t label0, dev_param_read *pread) {
  const hlo_instr *h = x->f->hero;
  int nc = h->attrs.dot.lhs_contracting.n;
  const hlo_shape *sh[2] = {dev_x_leaf0(h->operands[0]), dev_x_leaf0(h->operands[1])};
  int64_t csz[HLO_MAX_RANK];
  for (int j = 0; j < nc; j++)
    csz[j] = sh[0]->dims[h->attrs.dot.lhs_contracting.v[j]];
  if (len <= 0)
    return 0;
  int64_t clo[HLO_MAX_RANK], cn[HLO_MAX_RANK];
  dev_x_chunk_bbox(csz, nc, r0, r0 + len, clo, cn);
  dev_box want[2], bx[2];
  for (int side = 0; side < 2; side++) {
    want[side] = (dev_box){.rank = sh[side]->rank};
    for (int d = 0; d < sh[side]->rank; d++) {
      bool c;
      int rd = dot_rdim(h, side, d, &c);
      if (c)
        want[side].lo[d] = clo[rd], want[side].n[d] = cn[rd];
      else
        want[side].lo[d] = x->region.lo[rd], want[side].n[d] = x->region.n[rd];
    }
  }
  hlo_etype ct = x->acc_t;
  dev_precision prec = hlo_num_dot_precision(h, x->s->cfg.prec);
  if (nc == 1 && ct != HLO_F64)
    return fold_dot_fast(x, want, sh, prec, r0, len, label0, acc, valid, poison, pread);
  for (int side = 0; side < 2; side++)
    if (dev_elem_eval(x->el, h->operands[side], &want[side], false, pread, NULL, x, &bx[side], x->why,
                      x->why_len) != 0) {
      if (side)
        dev_box_free(&bx[0]);
      return -1;
    }
  int64_t idx[HLO_MAX_RANK], ci[HLO_MAX_RANK], oi[2][HLO_MAX_RANK];
  for (int d = 0; d < x->region.rank; d++)
    idx[d] = x->region.lo[d];
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    for (int side = 0; side < 2; side++)
      for (int d = 0; d < sh[side]->rank; d++) {
        bool c;
        int rd = dot_rdim(h, side, d, &c);
        oi[side][d] = c ? -1 - rd : idx[rd];
      }
    for (int64_t r = r0; r < r0 + len; r++) {
      dev_x_unflatten_red(csz, nc, r, ci);
      int64_t off[2];
      uint8_t p = 0;
      for (int side = 0; side < 2; side++) {
        off[side] = 0;
        for (int d = 0; d < sh[side]->rank; d++) {
          int64_t v = oi[side][d] < 0 ? ci[-1 - oi[side][d]] : oi[side][d];
          off[side] = off[side] * bx[side].n[d] + (v - bx[side].lo[d]);
        }
        p |= bx[side].poison[off[side]];
      }
      int64_t k = ro * x->P + (label0 + (r - r0)) % x->P;
      if (dev_x_on(x, DEV_DEFECT_INT8_DOT_F32_ACC)) {
        dev_slot zero = {.i = 0};
        dev_slot prod = dev_elem_dot_step(ct, x->res_t, zero, bx[0].v[off[0]], sh[0]->type, bx[1].v[off[1]],
                                          sh[1]->type, prec);
        acc[k].i = int8_dot_f32_step(acc[k].i, prod.i);
      } else {
        acc[k] = dev_elem_dot_step(ct, x->res_t, acc[k], bx[0].v[off[0]], sh[0]->type, bx[1].v[off[1]],
                                   sh[1]->type, prec);
      }
      valid[k] = 1;
      poison[k] |= p;
    }
    hlo_index_next_box(x->region.rank, x->region.lo, x->region.n, idx);
  }
  dev_elem_box_release(x->el, &bx[0]);
  dev_elem_box_release(x->el, &bx[1]);
  return 0;
}
