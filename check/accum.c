/* accum.c — recording the kernel's accumulations and measuring how they
 * reach the outputs (accum.h).
 *
 * An accumulation past CHK_ACCUM_MAX in one kernel is counted in `dropped`
 * and gets no allowance: its outputs are compared as the reference computes
 * them, which can over-report but never hides a bug.
 */
#include "accum.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "hlo/hlo_num_dot.h"
#include "hlo/hlo_numerics.h"
#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"
#include "tolerance.h"
#include "hlo/hlo_clones.h"

static bool in_kernel(const chk_accums *A, const hlo_instr *ins) {
  const hlo_computation *c = A->kernel;
  return c && ins->index >= 0 && ins->index < c->ninstrs && c->instrs[ins->index] == ins;
}

static bool is_real_float(hlo_etype t) { return hlo_etype_is_float(t) && hlo_etype_class(t) != HLO_CLASS_COMPLEX; }

/* Element i of v as hlo_value_get_f64 reads it, without the call for
 * f32, the type almost every probed sum and measured output has: the
 * probe and the measurement read every element of them, several times. */
static inline double value_at(const hlo_value *v, int64_t i) {
  if (v->type == HLO_F32)
    return ((const float *)v->data)[i];
  return hlo_value_get_f64(v, i);
}

/* The output element each input element of a reduce adds to (red: the
 * reduced dims), element after element: the coordinates of element i and
 * o, its kept coordinates row-major, moved to the next element
 * (kept_next) or the previous one (kept_prev) in row-major order, without
 * a division. */
typedef struct {
  int rank;
  int64_t dims[HLO_MAX_RANK], step[HLO_MAX_RANK], idx[HLO_MAX_RANK];
  int64_t o;
} kept_iter;

/* At element 0, or at the last element when `last`. */
static void kept_start(kept_iter *it, const hlo_value *x, const bool *red, bool last) {
  it->rank = x->rank;
  it->o = 0;
  int64_t scale = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    int64_t n = x->dims[d] ? x->dims[d] : 1;
    it->dims[d] = n;
    it->step[d] = red[d] ? 0 : scale;
    if (!red[d])
      scale *= n;
    it->idx[d] = last ? n - 1 : 0;
    it->o += it->idx[d] * it->step[d];
  }
}

static inline void kept_next(kept_iter *it) {
  (void)hlo_index_next_off(it->rank, it->dims, it->step, it->idx, &it->o);
}

static inline void kept_prev(kept_iter *it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    if (it->idx[d] > 0) {
      it->idx[d]--;
      it->o -= it->step[d];
      return;
    }
    it->idx[d] = it->dims[d] - 1;
    it->o += (it->dims[d] - 1) * it->step[d];
  }
}

/* Marks in red (HLO_MAX_RANK entries) the dimensions of x a reduce sums
 * over; false when the instruction names one x does not have. */
static bool reduced_dims(const hlo_instr *ins, const hlo_value *x, bool *red) {
  for (int d = 0; d < HLO_MAX_RANK; d++)
    red[d] = false;
  for (int i = 0; i < ins->attrs.dimensions.n; i++) {
    int64_t d = ins->attrs.dimensions.v[i];
    if (d < 0 || d >= x->rank)
      return false;
    red[d] = true;
  }
  return true;
}

/* Per output element of a reduce with the add reducer, exactly in f64:
 * the sum of its terms' |x| (S_e) or, with `signed_sum`, of the terms
 * themselves.  Every input element adds to the output element its kept
 * coordinates name; the init is a term of every element. */
static int reduce_sums(const hlo_instr *ins, const hlo_value *x, const hlo_value *init, bool signed_sum, double *s,
                       int64_t n) {
  bool red[HLO_MAX_RANK];
  if (!reduced_dims(ins, x, red))
    return -1;
  double a0 = hlo_value_get_f64(init, 0);
  for (int64_t e = 0; e < n; e++)
    s[e] = signed_sum ? a0 : fabs(a0);
  int64_t idx[HLO_MAX_RANK] = {0};
  for (int64_t i = 0; i < x->count; i++) {
    int64_t o = 0;
    for (int d = 0; d < x->rank; d++)
      if (!red[d])
        o = o * x->dims[d] + idx[d];
    if (o >= n)
      return -1;
    double t = hlo_value_get_f64(x, i);
    s[o] += signed_sum ? t : fabs(t);
    hlo_index_next(x->rank, x->dims, idx);
  }
  return 0;
}

/* Does every output element of an add-reduce take at most one non-zero
 * term, with a zero init (a one-hot pick: select(label == iota, x, 0)
 * summed over the iota's dimension)?  Then every order of the sum gives
 * that term exactly (x + 0 = x), so the reduce rounds nothing and
 * legitimate configs agree on it to the bit (issue 13, item 3).  A
 * subnormal term is not trusted to survive the device's flush to zero in
 * every order, and NaN counts as a term.  False when memory runs out: the
 * reduce is then an accumulation, as before. */
static bool picks_one_term(const hlo_instr *ins, const hlo_value *x, const hlo_value *init, int64_t n) {
  if (hlo_value_get_f64(init, 0) != 0 || n < 1)
    return false;
  bool red[HLO_MAX_RANK];
  if (!reduced_dims(ins, x, red))
    return false;
  unsigned char *seen = calloc((size_t)n, 1);
  if (!seen)
    return false;
  bool one = true;
  kept_iter it;
  kept_start(&it, x, red, false);
  for (int64_t i = 0; i < x->count && one; i++, kept_next(&it)) {
    double t = value_at(x, i);
    if (t == 0)
      continue;
    int64_t o = it.o;
    one = o >= 0 && o < n && !seen[o] && fpclassify(t) != FP_SUBNORMAL;
    if (one)
      seen[o] = 1;
  }
  free(seen);
  return one;
}

/* |v| as an f64 array of v's dims. */
static hlo_value *abs_f64(const hlo_value *v) {
  hlo_value *a = hlo_value_array_uninit(HLO_F64, v->rank, v->dims);
  if (!a)
    return NULL;
  double *p = a->data;
  for (int64_t i = 0; i < v->count; i++)
    p[i] = fabs(hlo_value_get_f64(v, i));
  return a;
}

/* S_e of a dot: the same dot of |a| and |b| in f64 (its own evaluator,
 * without device numerics), widened by 1 + 2^-6 (accum.h). */
static int dot_abs_sums(const hlo_instr *ins, hlo_value *const *ops, double *s, int64_t n) {
  hlo_instr tmp = *ins;
  tmp.shape.type = HLO_F64;
  hlo_value *a = abs_f64(ops[0]), *b = abs_f64(ops[1]);
  hlo_error err;
  chk_eval ev;
  memset(&ev, 0, sizeof ev);
  ev.o.replicas = 1;
  ev.err = &err;
  hlo_value *absops[2] = {a, b};
  hlo_value *r = a && b ? chk_op_dot(&ev, &tmp, absops) : NULL;
  hlo_value_unref(a);
  hlo_value_unref(b);
  if (!r || r->count != n) {
    hlo_value_unref(r);
    return -1;
  }
  const double *p = r->data;
  for (int64_t e = 0; e < n; e++)
    s[e] = p[e] * (1.0 + ldexp(1.0, -6));
  hlo_value_unref(r);
  return 0;
}

/* K max|x| + |init| for every element: a reducer whose terms are not a
 * plain sum. */
static void uniform_abs_sums(const hlo_value *x, const hlo_value *init, int64_t k, double *s, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < x->count; i++) {
    double v = fabs(hlo_value_get_f64(x, i));
    if (isfinite(v) && v > m)
      m = v;
  }
  double a0 = fabs(hlo_value_get_f64(init, 0));
  for (int64_t e = 0; e < n; e++)
    s[e] = (double)k * m + a0;
}

/* A dot operand as the device multiplies it, in f64: flushed and, at
 * DEFAULT precision of an f32 dot, rounded to bf16 (accum.h). */
static hlo_value *dot_operand_f64(const hlo_value *v, bool bf16_pass) {
  hlo_value *a = hlo_value_array_uninit(HLO_F64, v->rank, v->dims);
  if (!a)
    return NULL;
  double *p = a->data;
  for (int64_t i = 0; i < v->count; i++) {
    double x = hlo_value_get_f64(v, i);
    if (bf16_pass) {
      float f = hlo_num_ftz_f32((float)x);
      x = isfinite(f) ? hlo_bf16_to_f32(hlo_f32_to_bf16(f)) : f;
    }
    p[i] = x;
  }
  return a;
}

/* The dot's f64 sum of the products (accum.h), n elements, or NULL. */
static hlo_value *dot_f64(const chk_accum *a, hlo_value *const *ops) {
  bool emulated = a->acc_type == HLO_F32;
  bool bf16_pass = emulated && hlo_num_dot_precision(a->ins, HLO_NUM_PREC_DEFAULT) == HLO_NUM_PREC_DEFAULT;
  hlo_value *x = dot_operand_f64(ops[0], bf16_pass), *y = dot_operand_f64(ops[1], bf16_pass);
  hlo_instr tmp = *a->ins;
  tmp.shape.type = HLO_F64;
  hlo_error err;
  chk_eval ev;
  memset(&ev, 0, sizeof ev);
  ev.o.replicas = 1;
  ev.err = &err;
  hlo_value *xy[2] = {x, y};
  hlo_value *r = x && y ? chk_op_dot(&ev, &tmp, xy) : NULL;
  hlo_value_unref(x);
  hlo_value_unref(y);
  if (r && r->count != a->n) {
    hlo_value_unref(r);
    r = NULL;
  }
  return r;
}


/* The orders whose f32 sums measure a reduce's noise (accum.h): the
 * sequential one, the reverse, 2, 4 and 8 interleaved accumulators, and
 * chunks of 128 added in order. */
enum { LANES = 2 + 4 + 8 };



/* rho of one evaluation of an f32 add-reduce (accum.h): the largest
 * |s_order - s_f64| / (g S_e) over its elements and the orders above. */
static double reduce_noise(const hlo_instr *ins, const hlo_value *x, const hlo_value *init, const double *abs_sum,
                           double g, int64_t n, bool *oom) {
  bool red[HLO_MAX_RANK];
  if (!reduced_dims(ins, x, red))
    return -1;
  size_t nn = (size_t)(n ? n : 1);
  double *exact = calloc(nn, sizeof *exact);
  float *seq = calloc(nn, sizeof *seq), *rev = calloc(nn, sizeof *rev), *lane = calloc(nn * LANES, sizeof *lane);
  float *chunk = calloc(nn, sizeof *chunk), *chunks = calloc(nn, sizeof *chunks);
  int64_t *count = calloc(nn, sizeof *count);
  double rho = -1;
  if (!exact || !seq || !rev || !lane || !chunk || !chunks || !count) {
    *oom = true;
    goto done;
  }
  float a0 = (float)hlo_value_get_f64(init, 0);
  for (int64_t e = 0; e < n; e++) {
    exact[e] = a0;
    seq[e] = rev[e] = chunks[e] = a0;
    lane[e * LANES] = lane[e * LANES + 2] = lane[e * LANES + 6] = a0;
  }
  kept_iter it;
  kept_start(&it, x, red, false);
  const float *xv = x->data; /* the probe measures f32 add-reduces only */
  for (int64_t i = 0; i < x->count; i++, kept_next(&it)) {
    int64_t o = it.o;
    if (o < 0 || o >= n)
      goto done;
    int64_t c = count[o]++;
    float t = xv[i];
    exact[o] += t;
    seq[o] += t;
    float *l = lane + o * LANES;
    l[c % 2] += t;
    l[2 + c % 4] += t;
    l[6 + c % 8] += t;
    chunk[o] += t;
    if (c % 128 == 127) {
      chunks[o] += chunk[o];
      chunk[o] = 0;
    }
  }
  kept_start(&it, x, red, true);
  for (int64_t i = x->count - 1; i >= 0; i--, kept_prev(&it))
    rev[it.o] += xv[i];
  rho = 0;
  for (int64_t e = 0; e < n; e++) {
    const float *l = lane + e * LANES;
    float p2 = l[0] + l[1], p4 = 0, p8 = 0;
    for (int j = 0; j < 4; j++)
      p4 += l[2 + j];
    for (int j = 0; j < 8; j++)
      p8 += l[6 + j];
    float sums[6] = {seq[e], rev[e], p2, p4, p8, chunks[e] + chunk[e]};
    double w = g * abs_sum[e];
    if (!(w > 0) || !isfinite(w) || !isfinite(exact[e]))
      continue;
    for (int j = 0; j < 6; j++) {
      double r = fabs((double)sums[j] - exact[e]) / w;
      if (isfinite(r) && r > rho)
        rho = r;
    }
  }
done:
  free(exact);
  free(seq);
  free(rev);
  free(lane);
  free(chunk);
  free(chunks);
  free(count);
  return rho;
}

/* ---- the noise of an f32 dot, in one pass --------------------------------- */

/* Columns of one walk: a vector of f32 lanes, two of f64. */
enum { VW = 16 };

/* A dot's operands in the reference's canonical order, lhs [B][M][K] and
 * rhs [B][K][N] (eval_dot.c: batch dims in their listed order, free dims
 * ascending, k row-major over the contracting dims in their listed order),
 * three times: the f64 values dot_f64 multiplies, the bf16 parts the
 * emulating reference multiplies (chk_op_dot with emulate_device: each
 * operand converted to f32, then hlo_num_dot_split at the dot's
 * precision), and |x| in f64 as dot_abs_sums multiplies it.
 *
 * Stored padded: each lhs row to Kp (K up to a multiple of 8) and the rhs
 * to Kp rows of Np (N up to a multiple of VW), with zeros.  A padded
 * column is computed and never read.  A padded k adds the product of two
 * zeros, +0, to every sum of its element: x + 0 is x for every x but -0,
 * which becomes +0, flushed or not, so each sum is the unpadded one up to
 * the sign of a zero.  S_e adds non-negative terms from +0 and has no -0;
 * the noise reads the others only through |exact - s| and isfinite. */
typedef struct {
  int64_t B, M, K, N, Kp, Np;
  hlo_num_precision prec;
  double *a64, *b64;
  /* |x| before any bf16 rounding (dot_abs_sums' operands); NULL when the
   * f64 values above are not rounded (HIGH, HIGHEST): |a64| then. */
  double *aabs, *babs;
  float *a32[3], *b32[3]; /* hlo_num_dot_parts(prec) planes */
  /* Every flush of the walk provably changes nothing ("No subnormals" in
   * hlo_num_dot.c; the lanes start at zero), so it may leave them out. */
  bool no_flush;
  /* Every f64 value above is finite and an f32 value, so each f64
   * product is exact and a fused multiply-add gives the bits of the
   * multiply and the add (f32_valued, checked as canon_operand writes
   * them). */
  bool exact_products;
  /* Some bf16 part of an operand is a NaN (hlo_num_dot_split_block). */
  bool nan;
} dot_terms;

static void dot_terms_free(dot_terms *t) {
  free(t->a64);
  free(t->b64);
  free(t->aabs);
  free(t->babs);
  for (int q = 0; q < 3; q++) {
    free(t->a32[q]);
    free(t->b32[q]);
  }
}

/* One side's dims in canonical order (batch, free, contracting for the lhs;
 * batch, contracting, free for the rhs) as sizes and element strides, as
 * the reference's dot orders them (chk_dot_side_order), and the product of
 * its free sizes in *nfree; the number of dims, or -1 when the dimension
 * numbers are bad. */
static int canon_side(const hlo_value *v, const hlo_ints *batch, const hlo_ints *contr, bool lhs, int64_t *size,
                      int64_t *stride, int64_t *nfree) {
  int64_t free_sizes[HLO_MAX_RANK];
  *nfree = 1;
  int nf = chk_dot_side_order(v, batch, contr, lhs, size, stride, free_sizes);
  if (nf < 0)
    return -1;
  for (int i = 0; i < nf; i++)
    *nfree *= free_sizes[i];
  return batch->n + nf + contr->n;
}

/* The padded layout of one operand: `outer` blocks of `rows` rows of
 * `cols` elements, stored as blocks of rows_p rows (the rest zero); with
 * `panels`, each block's columns in panels of VW, one panel's rows after
 * another, cols rounded up to whole panels (the rhs: a walk reads one
 * panel from top to bottom, contiguous), else rows of cols_p. */
typedef struct {
  int nd;
  const int64_t *size, *stride; /* canon_side's */
  int64_t count, outer, rows, cols, rows_p, cols_p;
  bool panels;
} canon_shape;

/* Is the canonical order v's own (chk_permute_copy would copy it as is)? */
static bool canon_is_identity(const canon_shape *s) {
  int64_t want = 1;
  for (int d = s->nd - 1; d >= 0; d--) {
    if (s->size[d] != 1 && s->stride[d] != want)
      return false;
    want *= s->size[d];
  }
  return true;
}

/* The segments of the padded layout: a row of the block, or a panel's
 * part of it.  Segment g: n elements from dense offset *di to padded
 * offset *pi; false past the last. */
static bool canon_segment(const canon_shape *s, int64_t g, int64_t *di, int64_t *pi, int64_t *n) {
  int64_t per = s->panels && s->cols > VW ? (s->cols + VW - 1) / VW : 1, row = g / per, c0 = (g % per) * VW;
  if (row >= s->outer * s->rows)
    return false;
  int64_t o = row / s->rows, r = row % s->rows;
  *di = row * s->cols + (s->panels ? c0 : 0);
  if (s->panels) {
    *n = s->cols - c0 < VW ? s->cols - c0 : VW;
    *pi = ((o * (s->cols_p / VW) + c0 / VW) * s->rows_p + r) * VW;
  } else {
    *n = s->cols;
    *pi = (o * s->rows_p + r) * s->cols_p;
  }
  return true;
}

/* Is every x[i] finite and an f32 value (its conversion to f32 and back
 * gives it)?  Then the product of two of them has at most 48 significant
 * bits and lies between 2^-298 and 2^256: exact in f64, never
 * subnormal, never Inf; and a sum of at most 2^28 such products stays
 * finite.  fma(a, b, c) rounds a b + c once, the add rounds fl(a b) + c
 * once, and fl(a b) = a b: the same bits, the sign of a zero sum
 * included (IEEE 754 gives an fma's zero the sign the add of the exact
 * product would have). */
static bool f32_valued(const double *x, size_t n) {
  bool ok = true;
  for (size_t i = 0; i < n; i++)
    ok &= fabs(x[i]) < INFINITY && (double)(float)x[i] == x[i];
  return ok;
}

/* Zeros where the padded layout of s holds no element of the operand:
 * columns cols..cols_p of each row (of each panel's last, when ragged)
 * and rows rows..rows_p of each block.  With the segments canon_operand
 * writes, every element of the buffer is written once. */
static void canon_pad(const canon_shape *s, void *buf, size_t size) {
  char *b = buf;
  int64_t width = s->panels ? VW : s->cols_p, npan = s->panels ? s->cols_p / VW : 1;
  for (int64_t o = 0; o < s->outer; o++)
    for (int64_t p = 0; p < npan; p++) {
      int64_t used = s->panels ? s->cols - p * VW : s->cols;
      used = used < 0 ? 0 : used > width ? width : used;
      char *blk = b + (size_t)((o * npan + p) * s->rows_p * width) * size;
      for (int64_t r = 0; r < s->rows_p; r++) {
        int64_t from = r < s->rows ? used : 0;
        if (from < width)
          memset(blk + (size_t)(r * width + from) * size, 0, (size_t)(width - from) * size);
      }
    }
}

/* The f64 forms of n elements cs of an f32 operand: o64[i] as
 * dot_operand_f64 makes it and, when oab is not NULL, oab[i] = |cs[i]|
 * as abs_f64 does.  dot_operand_f64's bf16 pass, bf16(ftz(x)) where
 * ftz(x) is finite (where x is) and x elsewhere, is the hi part the
 * split wrote (hlo_num_dot_split's parts[0], bit for bit) or x; without
 * the pass, x.  The f32 value is chosen on the bits and then widened, so
 * that the loop vectorises.  Every value written is an f32 value (an f32
 * widened), and |x| is finite where x is: nonzero when some o64[i] is
 * not finite, which is when f32_valued fails for either form (where
 * cs[i] is finite, o64[i] is hi[i] or cs[i]; where it is not, cs[i]). */
HLO_CLONES
static int widen_f32(const float *restrict cs, const float *restrict hi, int64_t n, bool bf16_pass,
                     double *restrict o64, double *restrict oab) {
  int bad = 0;
  if (oab) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
      oab[i] = fabs((double)cs[i]);
  }
  const uint32_t top = 0x7F800000u; /* the exponent of an Inf or NaN */
  if (bf16_pass) {
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; i++) {
      uint32_t xb, hb;
      memcpy(&xb, &cs[i], sizeof xb);
      memcpy(&hb, &hi[i], sizeof hb);
      uint32_t fin = -(uint32_t)((xb & top) != top), fb = (hb & fin) | (xb & ~fin);
      float f;
      memcpy(&f, &fb, sizeof f);
      o64[i] = f;
      bad |= (fb & top) == top;
    }
  } else {
#pragma omp simd reduction(| : bad)
    for (int64_t i = 0; i < n; i++) {
      uint32_t xb;
      memcpy(&xb, &cs[i], sizeof xb);
      o64[i] = cs[i];
      bad |= (xb & top) == top;
    }
  }
  return bad;
}

/* One operand's forms in the padded layout: f64 values into *x64, bf16
 * parts into x32 and, when xabs is not NULL, |x| into *xabs.  Each form
 * is written once, segment by segment, from the operand in canonical
 * order (a copy only when that order is not v's own), and its padding
 * once (canon_pad), into malloc'd buffers: a zeroed allocation would
 * write every byte twice.  *nan is set when some bf16 part is a NaN
 * (hlo_num_dot_split_block), and left as it was otherwise.  *f32_ok:
 * every value of *x64 and *xabs is finite and an f32 value (f32_valued;
 * the padding's zeros are). */
static int canon_operand(const hlo_value *v, bool bf16_pass, hlo_num_precision prec, const canon_shape *s,
                         double **x64, float **x32, double **xabs, int *exp_min, bool *nan, bool *f32_ok) {
  size_t count = (size_t)(s->count > 0 ? s->count : 1), padded = (size_t)(s->outer * s->rows_p * s->cols_p);
  int np = hlo_num_dot_parts(prec);
  void *owned = NULL;
  float *perm = NULL;
  const float *c = chk_dot_operand(v, HLO_F32, HLO_F32, &owned);
  if (c && !canon_is_identity(s)) {
    perm = malloc(sizeof *perm * count);
    if (perm)
      chk_permute_copy(perm, c, sizeof *perm, s->nd, s->size, s->stride);
    c = perm;
  }
  /* dot_operand_f64's and abs_f64's values, dense, unless v is f32: then
   * c holds v's own values (chk_dot_operand converts nothing), and their
   * steps from hlo_value_get_f64 start from c[i] exactly */
  double *d64 = NULL, *dabs = NULL;
  bool ok = c != NULL, fast = v->type == HLO_F32;
  if (ok && !fast) {
    hlo_value *f = dot_operand_f64(v, bf16_pass), *a = xabs ? abs_f64(v) : NULL;
    d64 = f ? malloc(sizeof *d64 * count) : NULL;
    dabs = a ? malloc(sizeof *dabs * count) : NULL;
    if (d64)
      chk_permute_copy(d64, f->data, sizeof *d64, s->nd, s->size, s->stride);
    if (dabs)
      chk_permute_copy(dabs, a->data, sizeof *dabs, s->nd, s->size, s->stride);
    hlo_value_unref(f);
    hlo_value_unref(a);
    ok = d64 && (dabs || !xabs);
  }
  *x64 = ok ? malloc((padded ? padded : 1) * sizeof **x64) : NULL;
  ok = *x64 != NULL;
  if (ok && xabs)
    ok = (*xabs = malloc((padded ? padded : 1) * sizeof **xabs)) != NULL;
  for (int q = 0; ok && q < np; q++)
    ok = (x32[q] = malloc((padded ? padded : 1) * sizeof *x32[q])) != NULL;
  if (ok) {
    canon_pad(s, *x64, sizeof **x64);
    if (xabs)
      canon_pad(s, *xabs, sizeof **xabs);
    for (int q = 0; q < np; q++)
      canon_pad(s, x32[q], sizeof *x32[q]);
  }
  /* Not v an f32 array: its f64 values checked as they are (dense, the
   * padding's zeros being f32 values). */
  *f32_ok = ok && (fast || (f32_valued(d64, count) && (!dabs || f32_valued(dabs, count))));
  int bad = 0; /* a non-finite value of *x64 on the f32 path (below) */
  *exp_min = 255;
  int64_t di, pi, n;
  for (int64_t g = 0; ok && canon_segment(s, g, &di, &pi, &n); g++) {
    float *const parts[3] = {x32[0] + pi, np > 1 ? x32[1] + pi : x32[0] + pi, np > 2 ? x32[2] + pi : x32[0] + pi};
    int em = 255;
    *nan |= hlo_num_dot_split_block(c + di, n, prec, parts, &em);
    *exp_min = em < *exp_min ? em : *exp_min;
    double *o64 = *x64 + pi, *oab = xabs ? *xabs + pi : NULL;
    if (!fast) {
      memcpy(o64, d64 + di, sizeof *o64 * (size_t)n);
      if (oab)
        memcpy(oab, dabs + di, sizeof *oab * (size_t)n);
      continue;
    }
    bad |= widen_f32(c + di, parts[0], n, bf16_pass, o64, oab);
  }
  *f32_ok = *f32_ok && !bad;
  free(owned);
  free(perm);
  free(d64);
  free(dabs);
  return ok ? 0 : -1;
}

/* 0, -1 when memory ran out, -2 when the dot's dimensions do not fit its
 * operands (the reference's own evaluation would have failed). */
static int dot_terms_init(dot_terms *t, const hlo_instr *ins, hlo_value *const *ops) {
  memset(t, 0, sizeof *t);
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  if (ops[0]->type == HLO_TUPLE || ops[1]->type == HLO_TUPLE || dn->lhs_batch.n != dn->rhs_batch.n ||
      dn->lhs_contracting.n != dn->rhs_contracting.n)
    return -2;
  int64_t ls[HLO_MAX_RANK], lst[HLO_MAX_RANK], rs[HLO_MAX_RANK], rst[HLO_MAX_RANK], M, N;
  int lnd = canon_side(ops[0], &dn->lhs_batch, &dn->lhs_contracting, true, ls, lst, &M);
  int rnd = canon_side(ops[1], &dn->rhs_batch, &dn->rhs_contracting, false, rs, rst, &N);
  if (lnd < 0 || rnd < 0)
    return -2;
  int nb = dn->lhs_batch.n, nc = dn->lhs_contracting.n;
  int64_t B = 1, K = 1;
  for (int i = 0; i < nb; i++) {
    if (ls[i] != rs[i])
      return -2;
    B *= ls[i];
  }
  for (int i = 0; i < nc; i++) {
    if (ls[lnd - nc + i] != rs[nb + i])
      return -2;
    K *= rs[nb + i];
  }
  t->B = B, t->M = M, t->K = K, t->N = N;
  t->Kp = (K + 7) / 8 * 8;
  t->Np = (N + VW - 1) / VW * VW;
  t->prec = hlo_num_dot_precision(ins, HLO_NUM_PREC_DEFAULT);
  bool bf16_pass = t->prec == HLO_NUM_PREC_DEFAULT; /* as dot_f64 for an f32 accumulation */
  canon_shape lsh = {.nd = lnd, .size = ls, .stride = lst, .count = B * M * K, .outer = B * M, .rows = 1,
                     .cols = K, .rows_p = 1, .cols_p = t->Kp};
  canon_shape rsh = {.nd = rnd, .size = rs, .stride = rst, .count = B * K * N, .outer = B, .rows = K,
                     .cols = N, .rows_p = t->Kp, .cols_p = t->Np, .panels = true};
  int ea, eb;
  bool fa, fb;
  if (canon_operand(ops[0], bf16_pass, t->prec, &lsh, &t->a64, t->a32, bf16_pass ? &t->aabs : NULL, &ea, &t->nan,
                    &fa) != 0 ||
      canon_operand(ops[1], bf16_pass, t->prec, &rsh, &t->b64, t->b32, bf16_pass ? &t->babs : NULL, &eb, &t->nan,
                    &fb) != 0) {
    dot_terms_free(t);
    return -1;
  }
  t->no_flush = hlo_num_dot_parts_never_subnormal(ea, eb);
  t->exact_products = fa && fb;
  return 0;
}
/* The walk below runs in the widest vectors the host has; each column is
 * its own sum, so the width changes no bit.  Nothing in it may be
 * contracted into a multiply-add: the whole build has -ffp-contract=off
 * (m4/tune_flags.m4). */

#define INLINE static inline __attribute__((always_inline))
/* The vector helpers are always inlined, so how a 64-byte vector would be
 * passed between functions never matters. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef double v8d __attribute__((vector_size(64)));
typedef uint64_t v8u64 __attribute__((vector_size(64)));

INLINE v16f ld16(const float *p) {
  v16f v;
  memcpy(&v, p, sizeof v);
  return v;
}

INLINE v8d ld8(const double *p) {
  v8d v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* hlo_num_ftz_f32 on every lane when F (a zero or subnormal keeps only
 * its sign), else x: a flush known to change nothing. */
INLINE v16f v_ftz(bool F, v16f x) {
  if (!F)
    return x;
  v16i b = (v16i)x;
  v16u tiny = (v16u)((b & 0x7F800000) == 0);
  return (v16f)(b & ~(v16i)(tiny >> 1));
}

/* fabs on every lane: the sign bit cleared. */
INLINE v8d v_abs(v8d x) { return (v8d)((v8u64)x & 0x7FFFFFFFFFFFFFFFull); }

/* The product of lhs parts x and the rhs parts' row y[q], as
 * hlo_num_dot_parts_product forms it (term for term), flushed. */
INLINE v16f v_product(hlo_num_precision prec, bool F, const float *x, const float *const *y) {
  v16f t;
  switch (prec) {
  case HLO_NUM_PREC_HIGH:
    t = x[1] * ld16(y[0]);
    t = t + x[0] * ld16(y[1]);
    t = t + x[0] * ld16(y[0]);
    break;
  case HLO_NUM_PREC_HIGHEST:
    t = x[2] * ld16(y[0]);
    t = t + x[0] * ld16(y[2]);
    t = t + x[1] * ld16(y[1]);
    t = t + x[1] * ld16(y[0]);
    t = t + x[0] * ld16(y[1]);
    t = t + x[0] * ld16(y[0]);
    break;
  default:
    t = x[0] * ld16(y[0]);
    break;
  }
  return v_ftz(F, t);
}

/* What one walk (dot_block) leaves for its VW columns, when asked. */
typedef struct {
  double x64[VW];     /* the f64 sum of the products as the device forms them */
  double abs[VW];     /* S_e: sum |a| |b| in f64, widened as dot_abs_sums does */
  float sums[3][VW];  /* the lanes of P = 2 << i added in order */
} dot_walked;

/* What the probe makes of a block's sums (dot_walk). */
typedef struct {
  const float *v;  /* the reference's values of the block's nj elements */
  double g;        /* the coefficient rho is a fraction of */
  int nsums;       /* lane counts compared: P = 2 << i for i < nsums */
  double *abs_sum; /* where the block's nj values of S_e go */
  double known;    /* a rho already found (at first OpenMP's identity of
                      max, the least double): the block returns
                      max(known, its own), and forms no quotient below */
  float *vout;     /* when not NULL: the block forms the reference's values
                      itself (walk_lanes' seq lane), stores its nj of them
                      here and reads them instead of v */
} block_use;

/* S_e's widening of sum |a| |b| (accum.h), as dot_abs_sums multiplies. */
#define ABS_WIDEN (1.0 + 0x1p-6)

/* Rows of one f64 walk: they share each rhs vector it loads. */
enum { WR = 4 };

/* One step of the lanes' walk (walk_lanes) for the block's columns, the
 * pointers at k and moved on to k + 1: product k into lanes L2 = k % 2,
 * L4 = 2 + k % 4 and L8 = 6 + k % 8, each add as the emulating reference
 * does it, acc = ftz(acc + product) (hlo_num_dot.h). */
#define LANES_STEP(L2, L4, L8)                                                                                 \
  do {                                                                                                          \
    float x[3] = {*xa0, np > 1 ? *xa1 : 0.0f, np > 2 ? *xa2 : 0.0f};                                            \
    const float *y[3] = {yb0, yb1, yb2};                                                                        \
    v16f pr = v_product(prec, F, x, y);                                                                         \
    L2 = v_ftz(F, L2 + pr);                                                                                     \
    L4 = v_ftz(F, L4 + pr);                                                                                     \
    L8 = v_ftz(F, L8 + pr);                                                                                     \
    if (seq)                                                                                                    \
      ls = v_ftz(F, ls + pr);                                                                                   \
    xa0++, yb0 += VW;                                                                                           \
    if (np > 1)                                                                                                 \
      xa1++, yb1 += VW;                                                                                         \
    if (np > 2)                                                                                                 \
      xa2++, yb2 += VW;                                                                                         \
  } while (0)

/* The f32 lanes of one row over the block's columns, every lane in a
 * register across the whole k loop; p[i] the lanes of P = 2 << i added in
 * order in f32 from 0, unflushed (as the reference route adds them).
 * With seq, p[3] is one more lane that takes every product: the
 * emulating reference's own sum, c = ftz(c + product) from c = +0, k
 * ascending (eval_dot.c, hlo_num_dot.h).  The padded products (+0) it
 * adds after k = K - 1 change that sum only where it is -0, which takes
 * a flush (a sum from +0 is -0 only where a negative subnormal was
 * flushed): walk_dot asks for it only when no flush can happen or
 * nothing is padded. */
INLINE void walk_lanes(hlo_num_precision prec, bool F, bool seq, const dot_terms *t, int64_t row, int64_t panel,
                       v16f *p) {
  const int64_t Kp = t->Kp;
  const int np = hlo_num_dot_parts(prec);
  const float *xa0 = t->a32[0] + row * Kp, *yb0 = t->b32[0] + panel;
  const float *xa1 = np > 1 ? t->a32[1] + row * Kp : NULL, *yb1 = np > 1 ? t->b32[1] + panel : NULL;
  const float *xa2 = np > 2 ? t->a32[2] + row * Kp : NULL, *yb2 = np > 2 ? t->b32[2] + panel : NULL;
  v16f l0 = {0}, l1 = {0}, l2 = {0}, l3 = {0}, l4 = {0}, l5 = {0}, l6 = {0};
  v16f l7 = {0}, l8 = {0}, l9 = {0}, l10 = {0}, l11 = {0}, l12 = {0}, l13 = {0}, ls = {0};
  for (int64_t k = 0; k < Kp; k += 8) {
    LANES_STEP(l0, l2, l6);
    LANES_STEP(l1, l3, l7);
    LANES_STEP(l0, l4, l8);
    LANES_STEP(l1, l5, l9);
    LANES_STEP(l0, l2, l10);
    LANES_STEP(l1, l3, l11);
    LANES_STEP(l0, l4, l12);
    LANES_STEP(l1, l5, l13);
  }
  const v16f zero = {0};
  p[0] = (zero + l0) + l1;
  p[1] = (((zero + l2) + l3) + l4) + l5;
  p[2] = (((((((zero + l6) + l7) + l8) + l9) + l10) + l11) + l12) + l13;
  if (seq)
    p[3] = ls;
}

/* a b + c on every lane, rounded once.  Used only where each product is
 * exact (dot_terms.exact_products), so it is the add of the product the
 * plain walk makes; in the AVX-512 clone a vector instruction.  (Nothing
 * else in the build contracts: -ffp-contract=off, hlo_clones.h.) */
INLINE v8d v_fma(double a, v8d b, v8d c) {
  v8d r;
  for (int i = 0; i < 8; i++)
    r[i] = __builtin_fma(a, b[i], c[i]);
  return r;
}

/* The f64 sums of WR rows (row[r]) over the block's columns, k ascending
 * from 0, one add per product as gemm_f64 makes them: s the products as
 * the device forms them, m = |a| |b| (dot_abs_sums' sum; where the f64
 * values are not rounded, at HIGH and HIGHEST, |b| is |y64|, loaded
 * once).  [r][0] columns 0..7, [r][1] 8..15.  With fused, each product
 * and its add are one fused multiply-add, the same bits where every
 * product is exact (dot_terms.exact_products) and half the vector
 * operations: the multiplies and the adds went to separate units, and the
 * walk waited on both. */
INLINE void walk_f64(bool rounded, bool fused, const dot_terms *t, const int64_t *row, int64_t panel, v8d (*s)[2],
                     v8d (*m)[2]) {
  const int64_t Kp = t->Kp;
  const double *y64 = t->b64 + panel, *yab = rounded ? t->babs + panel : NULL;
  const double *a64[WR], *aab[WR];
  v8d s0[WR], s1[WR], m0[WR], m1[WR];
  for (int r = 0; r < WR; r++) {
    a64[r] = t->a64 + row[r] * Kp;
    aab[r] = rounded ? t->aabs + row[r] * Kp : a64[r];
    s0[r] = s1[r] = m0[r] = m1[r] = (v8d){0};
  }
  for (int64_t k = 0; k < Kp; k++) {
    v8d y0 = ld8(y64), y1 = ld8(y64 + 8);
    v8d b0 = rounded ? ld8(yab) : v_abs(y0), b1 = rounded ? ld8(yab + 8) : v_abs(y1);
#pragma GCC unroll 4
    for (int r = 0; r < WR; r++) {
      double a = a64[r][k], aa = rounded ? aab[r][k] : fabs(a);
      if (fused) {
        s0[r] = v_fma(a, y0, s0[r]);
        s1[r] = v_fma(a, y1, s1[r]);
        m0[r] = v_fma(aa, b0, m0[r]);
        m1[r] = v_fma(aa, b1, m1[r]);
      } else {
        s0[r] = s0[r] + a * y0;
        s1[r] = s1[r] + a * y1;
        m0[r] = m0[r] + aa * b0;
        m1[r] = m1[r] + aa * b1;
      }
    }
    y64 += VW;
    if (rounded)
      yab += VW;
  }
  for (int r = 0; r < WR; r++) {
    s[r][0] = s0[r], s[r][1] = s1[r];
    m[r][0] = m0[r], m[r][1] = m1[r];
  }
}

/* f32 lanes as f64 (exact), the low and the high half. */
INLINE v8d lo8(v16f x) { return __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7), v8d); }
INLINE v8d hi8(v16f x) {
  return __builtin_convertvector(__builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15), v8d);
}

/* Is any lane of m set? */
INLINE bool v_any(v8u64 m) {
  uint64_t a[8], o = 0;
  memcpy(a, &m, sizeof a);
  for (int l = 0; l < 8; l++)
    o |= a[l];
  return o != 0;
}

/* max(rho, |x - s| / w) on every lane where `cols` is all ones and s, x
 * and w are finite, w > 0 (noise_of's conditions): the quotient exactly as
 * noise_of forms it, so the largest over the lanes is the largest
 * noise_of.  A quotient is formed only where it can exceed rho: where
 * |x - s| <= fl(fl(rho w) (1 - 2^-50)), |x - s| < rho w exactly (fl(rho w)
 * is at most rho w (1 + 2^-53), and the factor with its own rounding
 * takes the product under rho w; an overflow to Inf means rho w exceeds
 * every finite |x - s|), so the quotient, rounding being monotone, is at
 * most rho and leaves the maximum as it is. */
INLINE v8d v_noise(v8d rho, v8d s, v8d x, v8d w, v8u64 cols) {
  const double inf = __builtin_inf();
  v8u64 ok = cols & (v8u64)(w > 0) & (v8u64)(v_abs(w) < inf) & (v8u64)(v_abs(x) < inf) & (v8u64)(v_abs(s) < inf);
  v8d d = v_abs(x - s);
  v8u64 may = ok & (v8u64)(d > rho * w * (1.0 - 0x1p-50));
  if (!v_any(may))
    return rho;
  v8d q = d / w;
  v8u64 up = may & (v8u64)(q > rho);
  return (v8d)((up & (v8u64)q) | (~up & (v8u64)rho));
}

/* One row's results from its sums: to out when asked; with u, S_e to
 * u->abs_sum and max(known, the row's rho) returned; with seq (u->vout
 * set), p[3], the row's own sequential sum, stored to u->vout and taken
 * as the reference's values. */
INLINE double finish_row(bool seq, const v16f *p, const v8d *s, v8d m0, v8d m1, int64_t nj, const block_use *u,
                         double known, dot_walked *out) {
  m0 = m0 * ABS_WIDEN;
  m1 = m1 * ABS_WIDEN;
  if (out) {
    for (int i = 0; i < 3; i++)
      memcpy(out->sums[i], &p[i], sizeof p[i]);
    memcpy(out->x64, &s[0], sizeof s[0]);
    memcpy(out->x64 + 8, &s[1], sizeof s[1]);
    memcpy(out->abs, &m0, sizeof m0);
    memcpy(out->abs + 8, &m1, sizeof m1);
  }
  if (!u)
    return 0;
  v16f ref;
  if (seq) { /* u->vout: the block's own sum is the reference's */
    ref = p[3];
    memcpy(u->vout, &ref, sizeof *u->vout * (size_t)nj);
  }
  if (nj == VW) { /* a whole block of columns: vector stores and a load, no calls */
    memcpy(u->abs_sum, &m0, sizeof m0);
    memcpy(u->abs_sum + 8, &m1, sizeof m1);
    if (!seq)
      memcpy(&ref, u->v, sizeof ref);
  } else {
    double sv[VW];
    memcpy(sv, &m0, sizeof m0);
    memcpy(sv + 8, &m1, sizeof m1);
    memcpy(u->abs_sum, sv, sizeof *sv * (size_t)nj);
    if (!seq) {
      float vv[VW] = {0};
      memcpy(vv, u->v, sizeof *vv * (size_t)nj);
      memcpy(&ref, vv, sizeof ref);
    }
  }
  const v8u64 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  v8u64 c0 = (v8u64)(lane < (uint64_t)nj), c1 = (v8u64)(lane + 8 < (uint64_t)nj);
  /* from the largest rho found so far, which no quotient below it can
   * change (v_noise) */
  v8d w0 = u->g * m0, w1 = u->g * m1, r0 = (v8d){0} + known, r1 = r0;
  r0 = v_noise(r0, lo8(ref), s[0], w0, c0);
  r1 = v_noise(r1, hi8(ref), s[1], w1, c1);
  for (int i = 0; i < u->nsums; i++) {
    r0 = v_noise(r0, lo8(p[i]), s[0], w0, c0);
    r1 = v_noise(r1, hi8(p[i]), s[1], w1, c1);
  }
  double rr[VW], rho = known;
  memcpy(rr, &r0, sizeof r0);
  memcpy(rr + 8, &r1, sizeof r1);
  for (int j = 0; j < VW; j++)
    rho = rr[j] > rho ? rr[j] : rho;
  return rho;
}

/* dot_block at precision prec, flushing when F, the f64 sums fused when
 * FMA, the reference's own sum formed when SEQ (constants once inlined). */
INLINE double walk(hlo_num_precision prec, bool F, bool FMA, bool SEQ, const dot_terms *t, int64_t row0,
                   int64_t nrows, int64_t j0, int64_t nj, const block_use *u, dot_walked *out) {
  const int64_t b = row0 / t->M, panel = (b * (t->Np / VW) + j0 / VW) * t->Kp * VW; /* canon_segment's panels */
  int64_t row[WR];
  for (int r = 0; r < WR; r++)
    row[r] = row0 + (r < nrows ? r : nrows - 1); /* a repeated row's results are dropped */
  v8d s[WR][2], m[WR][2];
  walk_f64(prec == HLO_NUM_PREC_DEFAULT, FMA, t, row, panel, s, m);
  double rho = u ? u->known : 0;
  for (int r = 0; r < nrows; r++) {
    v16f p[4];
    walk_lanes(prec, F, SEQ, t, row[r], panel, p);
    rho = finish_row(SEQ, p, s[r], m[r][0], m[r][1], nj, u ? &u[r] : NULL, rho, out ? &out[r] : NULL);
  }
  return rho;
}

/* Does this process run dot_block's AVX-512 clone, where v_fma is a
 * vector instruction?  The clones are those of hlo_clones.h, and the
 * loader binds that one exactly when the CPU has AVX-512F.  Elsewhere
 * __builtin_fma is a call into the C library, correctly rounded as well
 * (the same bits) but far slower than the plain multiply and add. */
static bool fma_in_vectors(void) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

/* Output elements (row, j0 .. j0 + nj - 1), row0 <= row < row0 + nrows
 * (nrows <= WR, rows of one batch b: row = b M + i), nj <= VW, each a
 * walk of its products, k ascending: the f64 sum (c = c + a b from 0, as
 * gemm_f64 forms it), S_e from the f64 sum of |a| |b| formed the same way
 * (dot_abs_sums takes that sum from gemm_f64), and the f32 accumulators,
 * lane p of P taking the products whose k % P == p.  A lane is then, up
 * to the sign of a zero, the emulating reference's dot of the lhs with
 * the other lanes' products zeroed (adding a zero product to a flushed
 * sum changes no magnitude); a lane that meets an Inf or NaN is not finite
 * on either route, and such elements are not compared.
 *
 * With out (nrows of them), each row's sums go there.  With u (nrows of
 * them), each row's S_e goes to its abs_sum, and the largest rho of the
 * rows (accum.h; 0 when no element counts) is returned. */
HLO_CLONES
static double dot_block(const dot_terms *t, int64_t row0, int64_t nrows, int64_t j0, int64_t nj, const block_use *u,
                        dot_walked *out) {
  bool F = !t->no_flush, FMA = t->exact_products && fma_in_vectors(), S = u && u[0].vout;
#define WALK_S(P, F_, FMA_) (S ? walk(P, F_, FMA_, true, t, row0, nrows, j0, nj, u, out)                           \
                               : walk(P, F_, FMA_, false, t, row0, nrows, j0, nj, u, out))
#define WALK(P) (F ? (FMA ? WALK_S(P, true, true) : WALK_S(P, true, false))                                       \
                   : (FMA ? WALK_S(P, false, true) : WALK_S(P, false, false)))
  switch (t->prec) {
  case HLO_NUM_PREC_HIGH:
    return WALK(HLO_NUM_PREC_HIGH);
  case HLO_NUM_PREC_HIGHEST:
    return WALK(HLO_NUM_PREC_HIGHEST);
  default:
    return WALK(HLO_NUM_PREC_DEFAULT);
  }
#undef WALK
#undef WALK_S
}

/* The row groups of a dot's walk: WR rows at a time within each batch. */
static int64_t row_groups(const dot_terms *t) { return t->B * ((t->M + WR - 1) / WR); }

/* Group gi's first row and its row count. */
static int64_t group_rows(const dot_terms *t, int64_t gi, int64_t *nrows) {
  int64_t per = (t->M + WR - 1) / WR, b = gi / per, i0 = (gi % per) * WR;
  *nrows = t->M - i0 < WR ? t->M - i0 : WR;
  return b * t->M + i0;
}

int chk_accums_dot_sums(const hlo_instr *dot, hlo_value *const *ops, double *exact, float *sums, double *abs_sum,
                        hlo_error *err) {
  dot_terms t;
  int rc = dot_terms_init(&t, dot, ops);
  if (rc != 0) {
    hlo_error_set(err, 0, 0, "%s: %s", dot->name, rc == -1 ? "out of memory" : "dimension numbers do not fit the operands");
    return -1;
  }
  dot_walked w[WR];
  for (int64_t j0 = 0; j0 < t.N; j0 += VW)
    for (int64_t gi = 0; gi < row_groups(&t); gi++) {
      int64_t nj = t.N - j0 < VW ? t.N - j0 : VW, nrows, row0 = group_rows(&t, gi, &nrows);
      dot_block(&t, row0, nrows, j0, nj, NULL, w);
      for (int64_t r = 0; r < nrows; r++)
        for (int64_t j = 0; j < nj; j++) {
          int64_t e = (row0 + r) * t.N + j0 + j;
          exact[e] = w[r].x64[j];
          if (abs_sum)
            abs_sum[e] = w[r].abs[j];
          for (int i = 0; i < 3; i++)
            sums[3 * e + i] = w[r].sums[i][j];
        }
    }
  dot_terms_free(&t);
  return 0;
}

/* |s - exact| / w where both are finite and w a finite positive width;
 * 0 (no larger rho) elsewhere. */
static double noise_of(double s, double exact, double w) {
  if (!(w > 0) || !isfinite(w) || !isfinite(exact) || !isfinite(s))
    return 0;
  return fabs(exact - s) / w;
}

/* rho of a dot measured in its sequential order alone: dot_f64's sum
 * against v. */
static double seq_noise(const chk_accum *a, hlo_value *const *ops, const hlo_value *v, const double *abs_sum,
                        double g, bool *oom) {
  hlo_value *r = dot_f64(a, ops);
  if (!r) {
    *oom = true; /* its operands' copies or its result */
    return -1;
  }
  const double *x64 = r->data;
  double rho = 0;
  for (int64_t e = 0; e < a->n; e++) {
    double q = noise_of(hlo_value_get_f64(v, e), x64[e], g * abs_sum[e]);
    if (q > rho)
      rho = q;
  }
  hlo_value_unref(r);
  return rho;
}

/* Does the probe walk the lanes of an f32 dot of n elements of k terms
 * each?  Up to 2^28 products: a larger dot measures its sequential order
 * alone (seq_noise). */
static bool lanes_fit(int64_t n, int64_t k) { return (double)n * (double)k <= 268435456.0; }

/* Does the probe measure dot a's noise with its lanes (dot_walk)?  An f32
 * result (a narrower one would round each lane) within lanes_fit. */
static bool walks_lanes(const chk_accum *a, const hlo_value *v) { return v->type == HLO_F32 && lanes_fit(a->n, a->k); }

/* S_e and rho of one evaluation of an f32 dot ins (n elements, k terms
 * each; accum.h) on ops, all formed in one walk of each element's
 * products (dot_block): abs_sum[e] as dot_abs_sums gives it, and rho from
 * the reference's own sequential sum and 2, 4 and 8 interleaved
 * accumulators against the f64 sum of the same products.  The
 * reference's sum is ref, its values; or, when ref is NULL, the walk
 * forms it and stores it to vout (chk_accums_dot_eval), where that gives
 * the reference's bits: no operand part is a NaN (eval_dot.c leaves a
 * NaN's payload to the scalar loop's operand order) and no padded product
 * can change a sum (walk_lanes).  0; -1 when memory ran out; -2 when
 * the dimension numbers do not fit the operands or n, or vout's
 * conditions do not hold.
 *
 * dot_abs_sums could fail otherwise only where chk_op_dot refuses the
 * dot's dimension numbers or result shape, and with ref the reference's
 * result for this instruction on these operands, dot_terms_init's checks
 * hold (it answers -2 only where chk_op_dot would have failed). */
static int walk_dot(const hlo_instr *ins, int64_t n, int64_t k, hlo_value *const *ops, const float *ref,
                    float *vout, double g, double *abs_sum, double *rho_out) {
  dot_terms t;
  int rc = dot_terms_init(&t, ins, ops);
  if (rc != 0)
    return rc;
  if (t.B * t.M * t.N != n || (!ref && (t.nan || (!t.no_flush && t.K != t.Kp)))) {
    dot_terms_free(&t);
    return -2;
  }
  /* The lane counts P = 2, 4, 8 compared: those up to the depth. */
  int nsums = k >= 8 ? 3 : k >= 4 ? 2 : k >= 2 ? 1 : 0;
  int64_t groups = row_groups(&t), nblocks = (t.N + VW - 1) / VW;
  double rho = 0;
  /* Every element is its own walk, so threads change no bit, and the
   * largest of the elements' ratios does not depend on their order.  A
   * block of columns outside, so that its rhs panel stays in cache while
   * the rows pass over it. */
#pragma omp parallel for collapse(2) schedule(static) reduction(max : rho) if (t.B * t.M * t.N * t.K >= (1 << 18))
  for (int64_t jb = 0; jb < nblocks; jb++) {
    for (int64_t gi = 0; gi < groups; gi++) {
      int64_t j0 = jb * VW, nj = t.N - j0 < VW ? t.N - j0 : VW, nrows, row0 = group_rows(&t, gi, &nrows);
      block_use u[WR];
      for (int64_t r = 0; r < nrows; r++) {
        int64_t e = (row0 + r) * t.N + j0;
        u[r] = (block_use){.v = ref ? ref + e : NULL, .g = g, .nsums = nsums, .abs_sum = abs_sum + e, .known = rho,
                           .vout = ref ? NULL : vout + e};
      }
      double q = dot_block(&t, row0, nrows, j0, nj, u, NULL);
      rho = q > rho ? q : rho;
    }
  }
  dot_terms_free(&t);
  *rho_out = rho;
  return 0;
}

/* dot_walk of the probe: v is the reference's value of a->ins. */
static int dot_walk(const chk_accum *a, hlo_value *const *ops, const hlo_value *v, double g, double *abs_sum,
                    double *rho_out) {
  /* walks_lanes: an f32 array */
  return walk_dot(a->ins, a->n, a->k, ops, v->data, NULL, g, abs_sum, rho_out) == 0 ? 0 : -1;
}

static chk_accum *find(chk_accums *A, const hlo_instr *ins) {
  for (int j = 0; j < A->n; j++)
    if (A->a[j].ins == ins)
      return &A->a[j];
  return NULL;
}

/* Whether ins can be an accumulation the probe records (a superset of
 * what chk_accums_probe takes, judged from the instruction alone). */
static bool may_accumulate(const hlo_instr *ins) {
  if (ins->noperands != 2 || ins->shape.type == HLO_TUPLE || !is_real_float(ins->shape.type))
    return false;
  if (ins->op == HLO_OP_DOT)
    return true;
  if (ins->op != HLO_OP_REDUCE)
    return false;
  hlo_opcode rop = hlo_simple_reducer(ins->attrs.calls.to_apply);
  return rop != HLO_OP_MAXIMUM && rop != HLO_OP_MINIMUM;
}

/* Prepares the recording of what replays of the kernel's accumulations
 * will read. */
static void start_recording(chk_accums *A) {
  const hlo_computation *c = A->kernel;
  const hlo_instr **targets = malloc(sizeof *targets * (size_t)(c->ninstrs ? c->ninstrs : 1));
  if (!targets) {
    A->replay.off = true; /* the measurement evaluates in full */
    return;
  }
  int n = 0;
  for (int i = 0; i < c->ninstrs; i++)
    if (may_accumulate(c->instrs[i]))
      targets[n++] = c->instrs[i];
  chk_replay_init(&A->replay, c, targets, n);
  free(targets);
}

unsigned char *chk_accums_probe_reads(const hlo_computation *c) {
  int n = c->ninstrs;
  unsigned char *reads = calloc((size_t)(n ? n : 1), 1);
  const hlo_instr **targets = malloc(sizeof *targets * (size_t)(n ? n : 1));
  if (!reads || !targets) {
    free(reads);
    free(targets);
    return NULL;
  }
  /* the targets start_recording gives the replay */
  int nt = 0;
  for (int i = 0; i < n; i++)
    if (may_accumulate(c->instrs[i])) {
      targets[nt++] = c->instrs[i];
      reads[i] = CHK_PROBE_READS_ALL;
    }
  chk_replay R;
  memset(&R, 0, sizeof R);
  chk_replay_init(&R, c, targets, nt);
  free(targets);
  for (int i = 0; R.want && i < n; i++)
    if (R.want[i] && !reads[i])
      reads[i] = CHK_PROBE_READS_VALUE;
  chk_replay_free(&R);
  return reads;
}

/* The probe's coefficient g for an f32 accumulation of k terms. */
static double noise_coef(hlo_etype acc_type, int64_t k) {
  return chk_tol_coef(CHK_TOL_NOISE_FLOOR, chk_unit_roundoff(acc_type), k, 0, 0, 0, 0);
}

/* The terms per element of dot ins on lhs: the product of its
 * contracting sizes. */
static int64_t dot_depth(const hlo_instr *ins, const hlo_value *lhs) {
  int64_t k = 1;
  for (int i = 0; i < ins->attrs.dot.lhs_contracting.n; i++) {
    int64_t d = ins->attrs.dot.lhs_contracting.v[i];
    if (d >= 0 && d < lhs->rank)
      k *= lhs->dims[d];
  }
  return k;
}

/* chk_accums_probe, with w (when not NULL) the walk chk_accums_dot_eval
 * made of this dot on these operands: its S_e and rho are the walk's
 * below, which is the same walk. */
static void probe(chk_accums *A, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value,
                  const chk_dot_walk *w) {
  if (!in_kernel(A, ins))
    return;
  if (!A->replay.kernel && !A->replay.off)
    start_recording(A);
  chk_replay_record(&A->replay, ins, *value);
  const hlo_value *v = *value;
  if (!v || v->type == HLO_TUPLE || !is_real_float(v->type))
    return;
  bool dot = ins->op == HLO_OP_DOT && nops == 2;
  bool reduce = ins->op == HLO_OP_REDUCE && nops == 2;
  if (!dot && !reduce)
    return;
  if (dot && (ops[0]->type == HLO_TUPLE || ops[1]->type == HLO_TUPLE))
    return;
  hlo_opcode rop = HLO_OP_INVALID;
  int64_t k = 1;
  if (reduce) {
    if (ops[0]->type == HLO_TUPLE || ops[1]->type == HLO_TUPLE || ops[1]->count < 1)
      return;
    rop = hlo_simple_reducer(ins->attrs.calls.to_apply);
    if (rop == HLO_OP_MAXIMUM || rop == HLO_OP_MINIMUM)
      return; /* picks one of its terms: rounds nothing */
    if (rop == HLO_OP_ADD && picks_one_term(ins, ops[0], ops[1], v->count))
      return; /* adds one term to zeros: rounds nothing either */
    for (int i = 0; i < ins->attrs.dimensions.n; i++) {
      int64_t d = ins->attrs.dimensions.v[i];
      if (d >= 0 && d < ops[0]->rank)
        k *= ops[0]->dims[d];
    }
  } else {
    k = dot_depth(ins, ops[0]);
  }
  chk_accum *a = find(A, ins);
  bool fresh = a == NULL;
  if (fresh) {
    if (A->n == CHK_ACCUM_MAX) {
      A->dropped++;
      return;
    }
    a = &A->a[A->n];
    memset(a, 0, sizeof *a);
    a->ins = ins;
    a->is_dot = dot;
    a->k = k;
    a->n = v->count;
    a->acc_type = dot ? chk_dot_compute_type(v->type) : v->type;
  } else if (a->n != v->count) {
    return; /* evaluated again with another shape: keep the first */
  }
  double *s = malloc(sizeof *s * (size_t)(v->count ? v->count : 1));
  if (!s) {
    A->failed = true;
    return;
  }
  double u_res = chk_unit_roundoff(v->type), u_acc = chk_unit_roundoff(a->acc_type);
  /* The noise-floor measurement (accum.h): f32 accumulations only. */
  bool measured = a->acc_type == HLO_F32 && (dot || (rop == HLO_OP_ADD && ops[0]->type == HLO_F32));
  double g = measured ? noise_coef(a->acc_type, k) : 0;
  double rho = -1;
  /* An f32 dot whose lanes are measured takes S_e in the same walk. */
  bool walked = measured && dot && walks_lanes(a, v);
  int rc = 0;
  if (walked && w && w->abs_sum && w->n == v->count) {
    memcpy(s, w->abs_sum, sizeof *s * (size_t)v->count);
    rho = w->rho;
  } else if (walked)
    rc = dot_walk(a, ops, v, g, s, &rho);
  else if (dot)
    rc = dot_abs_sums(ins, ops, s, v->count);
  else if (rop == HLO_OP_ADD)
    rc = reduce_sums(ins, ops[0], ops[1], false, s, v->count);
  else
    uniform_abs_sums(ops[0], ops[1], k, s, v->count);
  if (rc != 0) {
    free(s);
    A->failed = true;
    return;
  }
  if (measured && !walked) {
    bool oom = false;
    rho = dot ? seq_noise(a, ops, v, s, g, &oom) : reduce_noise(ins, ops[0], ops[1], s, g, v->count, &oom);
    if (oom) {
      /* Unmeasured would mean the probabilistic bound, far looser than
       * the clean run's: a bug it hides must not depend on the host's
       * memory.  The caller's out-of-memory error instead (dot_walk's
       * failure above is that error too). */
      free(s);
      A->failed = true;
      return;
    }
  }
  if (fresh)
    a->noise = rho;
  else if (a->noise >= 0) /* once unmeasured, always */
    a->noise = rho < 0 ? -1 : rho > a->noise ? rho : a->noise;
  if (fresh) {
    a->abs_sum = s;
    if (u_res > u_acc) {
      a->round = malloc(sizeof *a->round * (size_t)(v->count ? v->count : 1));
      if (!a->round) {
        free(s);
        A->failed = true;
        return;
      }
      for (int64_t e = 0; e < v->count; e++)
        a->round[e] = 2.0 * u_res * fabs(hlo_value_get_f64(v, e));
    }
    A->n++;
    return;
  }
  /* The same instruction evaluated again (inside a loop): the largest of
   * its evaluations bounds each. */
  for (int64_t e = 0; e < v->count; e++) {
    if (s[e] > a->abs_sum[e])
      a->abs_sum[e] = s[e];
    if (a->round) {
      double r = 2.0 * u_res * fabs(hlo_value_get_f64(v, e));
      if (r > a->round[e])
        a->round[e] = r;
    }
  }
  free(s);
}

void chk_accums_probe(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  probe(ctx, ins, ops, nops, value, NULL);
}

void chk_accums_probe_walked(chk_accums *A, const hlo_instr *ins, hlo_value *const *ops, int nops,
                             hlo_value **value, const chk_dot_walk *w) {
  probe(A, ins, ops, nops, value, w);
}

int chk_accums_dot_eval(const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value, chk_dot_walk *w) {
  memset(w, 0, sizeof *w);
  *value = NULL;
  const hlo_shape *sh = &ins->shape;
  /* the probe's conditions for walking it (chk_accums_probe, walks_lanes) */
  if (ins->op != HLO_OP_DOT || nops != 2 || !ops[0] || !ops[1] || ops[0]->type == HLO_TUPLE ||
      ops[1]->type == HLO_TUPLE || sh->type != HLO_F32 || sh->dynamic || sh->rank > HLO_MAX_RANK)
    return 0;
  /* the result chk_op_dot makes: [batch, lhs free, rhs free] */
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  int64_t ls[HLO_MAX_RANK], lst[HLO_MAX_RANK], rs[HLO_MAX_RANK], rst[HLO_MAX_RANK], M, N;
  int lnd = canon_side(ops[0], &dn->lhs_batch, &dn->lhs_contracting, true, ls, lst, &M);
  int rnd = canon_side(ops[1], &dn->rhs_batch, &dn->rhs_contracting, false, rs, rst, &N);
  if (lnd < 0 || rnd < 0)
    return 0;
  int nb = dn->lhs_batch.n, nc = dn->lhs_contracting.n, nlf = lnd - nb - nc, nrf = rnd - nb - nc;
  if (sh->rank != nb + nlf + nrf)
    return 0;
  for (int i = 0; i < nb + nlf; i++)
    if (sh->dims[i] != ls[i])
      return 0;
  for (int i = 0; i < nrf; i++)
    if (sh->dims[nb + nlf + i] != rs[nb + nc + i])
      return 0;
  int64_t n = 1, k = dot_depth(ins, ops[0]);
  for (int i = 0; i < sh->rank; i++)
    n *= sh->dims[i];
  if (n < 1 || k < 1 || !lanes_fit(n, k))
    return 0;
  hlo_value *v = hlo_value_array_uninit(HLO_F32, sh->rank, sh->dims);
  double *s = malloc(sizeof *s * (size_t)n);
  if (!v || !s) {
    hlo_value_unref(v);
    free(s);
    return -1;
  }
  double rho = 0;
  int rc = walk_dot(ins, n, k, ops, NULL, v->data, noise_coef(HLO_F32, k), s, &rho);
  if (rc != 0) {
    hlo_value_unref(v);
    free(s);
    return rc == -1 ? -1 : 0;
  }
  *value = v;
  w->abs_sum = s;
  w->n = n;
  w->rho = rho;
  return 1;
}

void chk_dot_walk_free(chk_dot_walk *w) {
  free(w->abs_sum);
  memset(w, 0, sizeof *w);
}

/* The hook of the measurement: shifts one accumulation's value. */
typedef struct {
  const chk_accum *a;
  double scale; /* of the shift at a->h: 1, or the small shift's fraction */
  double sign;
} shift_state;

/* One element of shift_f32: x + sign * d rounded to f32 where x is
 * finite, x itself (its bits) where it is not.  The choice is made on
 * the bits, after both are formed: written as a choice between an
 * arithmetic result and x, GCC moved the arithmetic into a branch and,
 * since it may trap, left the loop unvectorised. */
static inline float shifted_f32(float x, double d, double sign) {
  float y = (float)((double)x + sign * d);
  uint32_t xb, yb;
  memcpy(&xb, &x, sizeof xb);
  memcpy(&yb, &y, sizeof yb);
  uint32_t keep = -(uint32_t)((xb & 0x7F800000u) == 0x7F800000u); /* Inf or NaN */
  yb = (yb & ~keep) | (xb & keep);
  memcpy(&y, &yb, sizeof y);
  return y;
}

/* shift_hook on an f32 value: q[e] = p[e] + sign * scale * 2 (h S_e +
 * R_e) rounded to f32 where p[e] is finite, p[e] elsewhere; q may be p.
 * Every element is its own arithmetic, the same operations in the same
 * order as element by element, so the vectors the clones use change no
 * bit. */
HLO_CLONES
static void shift_f32(float *q, const float *p, int64_t n, const double *restrict S, const double *restrict R,
                      double h, double scale, double sign) {
  if (R) {
#pragma omp simd
    for (int64_t e = 0; e < n; e++)
      q[e] = shifted_f32(p[e], scale * 2.0 * (h * S[e] + R[e]), sign);
  } else {
#pragma omp simd
    for (int64_t e = 0; e < n; e++)
      q[e] = shifted_f32(p[e], scale * 2.0 * (h * S[e] + 0), sign);
  }
}

static void shift_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  shift_state *st = ctx;
  const chk_accum *a = st->a;
  if (ins != a->ins || !*value || (*value)->type == HLO_TUPLE || (*value)->count != a->n)
    return;
  /* both sides of a comparison with coefficient a->h, each as far as
   * its bound allows */
  hlo_value *c;
  if ((*value)->type == HLO_F32) { /* hlo_value_set_f64's f32 store, inline */
    /* A value the hook holds the only reference to (eval.h: it is handed
     * over) is shifted where it is; one the replay's recording holds too
     * is shifted into a copy, written once. */
    hlo_value *v = *value;
    c = v->refs == 1 ? v : hlo_value_array_uninit(HLO_F32, v->rank, v->dims);
    if (!c)
      return;
    shift_f32(c->data, v->data, a->n, a->abs_sum, a->round, a->h, st->scale, st->sign);
    if (c == v)
      return;
  } else if (!(c = hlo_value_clone(*value))) {
    return;
  } else {
    for (int64_t e = 0; e < a->n; e++) {
      double x = hlo_value_get_f64(c, e);
      double d = st->scale * 2.0 * (a->h * a->abs_sum[e] + (a->round ? a->round[e] : 0));
      if (isfinite(x))
        hlo_value_set_f64(c, e, x + st->sign * d);
    }
  }
  hlo_value_unref(*value);
  *value = c;
}

/* The reference's outputs with accumulation a shifted up and down by
 * scale times its full shift: moved[0] and moved[1], one reference each.
 * 0, or -1 with err (moved[] then holds nothing). */
static int shifted(chk_accums *A, const chk_accum *a, double scale, chk_accums_eval_fn *eval, void *eval_ctx,
                   hlo_value **moved, hlo_error *err) {
  moved[0] = moved[1] = NULL;
  for (int s = 0; s < 2; s++) {
    shift_state st = {.a = a, .scale = scale, .sign = s == 0 ? 1.0 : -1.0};
    int rc = chk_replay_plan(&A->replay, a->ins, shift_hook, &st)
                 ? eval(eval_ctx, chk_replay_hook, &A->replay, &moved[s], err)
                 : eval(eval_ctx, shift_hook, &st, &moved[s], err);
    if (rc != 0) {
      hlo_value_unref(moved[0]);
      moved[0] = NULL;
      return -1;
    }
  }
  return 0;
}

/* How far output element i moved under the larger of the two shifts. */
static double moved_by(const hlo_value *y, const hlo_value *yp, const hlo_value *ym, int64_t i) {
  double v = value_at(y, i);
  double dp = fabs(value_at(yp, i) - v), dm = fabs(value_at(ym, i) - v);
  double d = dp > dm ? dp : dm;
  /* A shift that turns a finite output non-finite marks an
   * ill-conditioned element: no finite allowance applies there. */
  return isfinite(d) ? d : (isfinite(v) ? INFINITY : 0);
}

/* The second, small shift as a fraction of the full one: small enough that
 * a saturating output is still near its slope there, large enough that the
 * output moves by many of its ulps (a shift of 1/256, the least the noise
 * floor scales a bound to, moved softmax's outputs by one or two ulps, and
 * their rounding alone then read as a steeper slope). */
#define SMALL_SHIFT (1.0 / 16)

/* Ulps of an output the small shift's move is discounted by: both values
 * round once, and the ops after the sum round again on each side. */
#define SMALL_SHIFT_ULPS 4.0

/* moved_by of moves dp and dm from value v: the larger, or where that
 * is not finite, Inf (v finite) or 0.  Every operand formed first and
 * then chosen from, so that GCC vectorises the loops below (a choice
 * that guards arithmetic is a branch to it). */
static inline double moved_f32(double dp, double dm, double v) {
  double d = dp > dm ? dp : dm;
  double alt = fabs(v) < INFINITY ? INFINITY : 0;
  bool fin = fabs(d) < INFINITY;
  return fin ? d : alt;
}

/* The loop of chk_accums_measure below over f32 leaves: dy[i] for every
 * element as that loop forms it (moved_by, then the small shift's move
 * when sp is not NULL), element by element the same operations in the
 * same order, so the vectors the clones use change no bit.  The small
 * shift's move is formed for every element and used where the wide one
 * is finite: its value elsewhere is never read.  Whether any
 * dy[i] > 0. */
HLO_CLONES
static bool moves_f32(const float *restrict y, const float *restrict yp, const float *restrict ym,
                      const float *restrict sp, const float *restrict sm, int64_t n, double ulps, double *restrict dy) {
  int any = 0;
  if (!sp) {
#pragma omp simd reduction(| : any)
    for (int64_t i = 0; i < n; i++) {
      double v = y[i];
      double d = moved_f32(fabs((double)yp[i] - v), fabs((double)ym[i] - v), v);
      dy[i] = d;
      any |= d > 0;
    }
    return any != 0;
  }
#pragma omp simd reduction(| : any)
  for (int64_t i = 0; i < n; i++) {
    double v = y[i];
    double d = moved_f32(fabs((double)yp[i] - v), fabs((double)ym[i] - v), v);
    double av = fabs(v), vp = fabs((double)sp[i]), vm = fabs((double)sm[i]);
    double top = av > vp ? av : vp;
    top = top > vm ? top : vm;
    double sd = moved_f32(fabs((double)sp[i] - v), fabs((double)sm[i] - v), v);
    double up = (sd - ulps * top) / SMALL_SHIFT;
    d = fabs(d) < INFINITY && up > d ? up : d;
    dy[i] = d;
    any |= d > 0;
  }
  return any != 0;
}

int chk_accums_measure(chk_accums *A, const hlo_value *reference, const double *g_max, chk_accums_eval_fn *eval,
                       void *eval_ctx, hlo_error *err) {
  A->nleaves = hlo_value_leaf_count(reference);
  if (A->nleaves > CHK_ACCUM_MAX_LEAVES)
    A->nleaves = CHK_ACCUM_MAX_LEAVES;
  for (int j = 0; j < A->n; j++) {
    chk_accum *a = &A->a[j];
    /* A vacuous or infinite coefficient: the scale of the sum itself. */
    a->h = g_max[j] < 1.0 ? g_max[j] : 1.0;
    hlo_value *moved[2], *small[2] = {NULL, NULL};
    if (shifted(A, a, 1.0, eval, eval_ctx, moved, err) != 0) {
      chk_replay_free(&A->replay);
      return -1;
    }
    if (a->h > 0 && shifted(A, a, SMALL_SHIFT, eval, eval_ctx, small, err) != 0) {
      hlo_value_unref(moved[0]);
      hlo_value_unref(moved[1]);
      chk_replay_free(&A->replay);
      return -1;
    }
    for (int leaf = 0; leaf < A->nleaves; leaf++) {
      const hlo_value *y = hlo_value_leaf(reference, leaf), *yp = hlo_value_leaf(moved[0], leaf),
                      *ym = hlo_value_leaf(moved[1], leaf);
      const hlo_value *sp = small[0] ? hlo_value_leaf(small[0], leaf) : NULL,
                      *sm = small[1] ? hlo_value_leaf(small[1], leaf) : NULL;
      if (!y || !yp || !ym || !hlo_etype_is_float(y->type) || yp->count != y->count || ym->count != y->count)
        continue;
      bool two = sp && sm && sp->count == y->count && sm->count == y->count;
      double ulp = 2.0 * chk_unit_roundoff(y->type);
      double *dy = malloc(sizeof *dy * (size_t)(y->count ? y->count : 1));
      if (!dy) {
        A->failed = true;
        break;
      }
      bool moves = false;
      int64_t i0 = 0;
      if (y->type == HLO_F32 && yp->type == HLO_F32 && ym->type == HLO_F32 &&
          (!two || (sp->type == HLO_F32 && sm->type == HLO_F32))) {
        moves = moves_f32(y->data, yp->data, ym->data, two ? sp->data : NULL, two ? sm->data : NULL, y->count,
                          SMALL_SHIFT_ULPS * ulp, dy);
        i0 = y->count;
      }
      for (int64_t i = i0; i < y->count; i++) {
        dy[i] = moved_by(y, yp, ym, i);
        /* The move is scaled to each comparison's coefficient linearly
         * (chk_accums_leaf_map), which holds only as far as the output is
         * linear in the sum over the shift.  Past a saturating op (tanh,
         * logistic, a clamp) a shift as wide as the widest comparison's
         * moves the output less than proportionally, and a narrow
         * comparison then got too little: the small shift's move, less
         * what rounding alone can make of it and scaled up to the full
         * shift, stands when it is larger. */
        if (two && isfinite(dy[i])) {
          double v = fabs(value_at(y, i)), vp = fabs(value_at(sp, i)), vm = fabs(value_at(sm, i));
          double top = v > vp ? v : vp;
          top = top > vm ? top : vm;
          double up = (moved_by(y, sp, sm, i) - SMALL_SHIFT_ULPS * ulp * top) / SMALL_SHIFT;
          if (up > dy[i])
            dy[i] = up;
        }
        if (dy[i] > 0)
          moves = true;
      }
      if (moves)
        a->dy[leaf] = dy;
      else
        free(dy);
    }
    hlo_value_unref(moved[0]);
    hlo_value_unref(moved[1]);
    hlo_value_unref(small[0]);
    hlo_value_unref(small[1]);
  }
  chk_replay_free(&A->replay);
  return 0;
}

int chk_accums_leaf_map(const chk_accums *A, int leaf, int64_t n, const double *g, double **out) {
  *out = NULL;
  if (leaf < 0 || leaf >= A->nleaves)
    return 0;
  double *map = NULL;
  for (int j = 0; j < A->n; j++) {
    const chk_accum *a = &A->a[j];
    if (!a->dy[leaf])
      continue;
    if (!map) {
      map = calloc((size_t)(n ? n : 1), sizeof *map);
      if (!map)
        return -1;
    }
    double r = a->h > 0 ? g[j] / a->h : 0;
    if (a->round && r < 1.0)
      r = 1.0;
    for (int64_t i = 0; i < n; i++)
      if (a->dy[leaf][i] > 0) /* 0 * inf would be NaN */
        map[i] += 2.0 * a->dy[leaf][i] * r;
  }
  *out = map;
  return 0;
}

void chk_accums_free(chk_accums *A) {
  for (int j = 0; j < A->n; j++) {
    free(A->a[j].abs_sum);
    free(A->a[j].round);
    for (int l = 0; l < CHK_ACCUM_MAX_LEAVES; l++)
      free(A->a[j].dy[l]);
  }
  A->n = 0;
  chk_replay_free(&A->replay);
}
