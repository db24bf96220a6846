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

#include "hlo/hlo_num_dot.h"
#include "hlo/hlo_numerics.h"
#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"
#include "tolerance.h"

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

static int64_t kept_index(const hlo_value *x, const bool *red, int64_t i);

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
  for (int64_t i = 0; i < x->count && one; i++) {
    double t = hlo_value_get_f64(x, i);
    if (t == 0)
      continue;
    int64_t o = kept_index(x, red, i);
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

/* The output element input element i of a reduce adds to: its kept
 * coordinates, row-major (red: the reduced dims). */
static int64_t kept_index(const hlo_value *x, const bool *red, int64_t i) {
  int64_t o = 0, scale = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    int64_t n = x->dims[d] ? x->dims[d] : 1, c = i % n;
    i /= n;
    if (!red[d]) {
      o += c * scale;
      scale *= n;
    }
  }
  return o;
}

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
  for (int64_t i = 0; i < x->count; i++) {
    int64_t o = kept_index(x, red, i);
    if (o < 0 || o >= n)
      goto done;
    int64_t c = count[o]++;
    float t = (float)hlo_value_get_f64(x, i);
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
  for (int64_t i = x->count - 1; i >= 0; i--)
    rev[kept_index(x, red, i)] += (float)hlo_value_get_f64(x, i);
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

/* A dot's operands in the reference's canonical order, lhs [B][M][K] and
 * rhs [B][K][N] (eval_dot.c: batch dims in their listed order, free dims
 * ascending, k row-major over the contracting dims in their listed order),
 * twice: the f64 values dot_f64 multiplies, and the bf16 parts the
 * emulating reference multiplies (chk_op_dot with emulate_device: each
 * operand converted to f32, then hlo_num_dot_split at the dot's precision). */
typedef struct {
  int64_t B, M, K, N;
  hlo_num_precision prec;
  double *a64, *b64;
  float *a32[3], *b32[3]; /* hlo_num_dot_parts(prec) planes */
  /* Every flush of the walk provably changes nothing ("No subnormals" in
   * hlo_num_dot.c; the lanes start at zero), so it may leave them out. */
  bool no_flush;
} dot_terms;

static void dot_terms_free(dot_terms *t) {
  free(t->a64);
  free(t->b64);
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

/* src (esz-byte elements) copied in the canonical order; NULL: no memory. */
static void *canon_copy(const void *src, size_t esz, int nd, const int64_t *size, const int64_t *stride,
                        int64_t count) {
  void *dst = malloc((size_t)(count > 0 ? count : 1) * esz);
  if (dst)
    chk_permute_copy(dst, src, esz, nd, size, stride);
  return dst;
}

/* One operand's two forms: f64 values into *x64, bf16 parts into x32. */
static int canon_operand(const hlo_value *v, bool bf16_pass, hlo_num_precision prec, int nd, const int64_t *size,
                         const int64_t *stride, int64_t count, double **x64, float **x32, int *exp_min) {
  hlo_value *f = dot_operand_f64(v, bf16_pass);
  if (!f)
    return -1;
  *x64 = canon_copy(f->data, sizeof(double), nd, size, stride, count);
  hlo_value_unref(f);
  void *owned = NULL;
  const float *s = chk_dot_operand(v, HLO_F32, HLO_F32, &owned);
  float *c = s ? canon_copy(s, sizeof(float), nd, size, stride, count) : NULL;
  free(owned);
  int np = hlo_num_dot_parts(prec);
  for (int q = 0; q < np; q++)
    x32[q] = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
  bool ok = *x64 && c;
  for (int q = 0; q < np; q++)
    ok = ok && x32[q];
  *exp_min = 0;
  if (ok) {
    float *const parts[3] = {x32[0], np > 1 ? x32[1] : x32[0], np > 2 ? x32[2] : x32[0]};
    hlo_num_dot_split_block(c, count, prec, parts, exp_min);
  }
  free(c);
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
  t->prec = hlo_num_dot_precision(ins, HLO_NUM_PREC_DEFAULT);
  bool bf16_pass = t->prec == HLO_NUM_PREC_DEFAULT; /* as dot_f64 for an f32 accumulation */
  int ea, eb;
  if (canon_operand(ops[0], bf16_pass, t->prec, lnd, ls, lst, B * M * K, &t->a64, t->a32, &ea) != 0 ||
      canon_operand(ops[1], bf16_pass, t->prec, rnd, rs, rst, B * K * N, &t->b64, t->b32, &eb) != 0) {
    dot_terms_free(t);
    return -1;
  }
  t->no_flush = hlo_num_dot_parts_never_subnormal(ea, eb);
  return 0;
}

/* The walk below runs in the widest vectors the host has; each column is
 * its own sum, so the width changes no bit. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define DOT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DOT_CLONES
#endif

/* Columns per block: the block's accumulators (LANES f32 and one f64
 * each) stay in L1, and its share of the rhs (K rows of COL_BLOCK f64 and
 * bf16 parts) in L2 while every row of the lhs passes over it. */
enum { COL_BLOCK = 64 };

#define INLINE static inline __attribute__((always_inline))

/* hlo_num_ftz_f32 when F, else x (a flush known to change nothing). */
INLINE float ftz(bool F, float x) {
  return F ? hlo_num_ftz_f32(x) : x;
}

/* The product of lhs parts x and the rhs parts y[q][j], as
 * hlo_num_dot_parts_product forms it (term for term), flushed. */
INLINE float part_product(hlo_num_precision prec, bool F, const float *x, const float *const *y, int64_t j) {
  float t;
  switch (prec) {
  case HLO_NUM_PREC_HIGH:
    t = x[1] * y[0][j];
    t = t + x[0] * y[1][j];
    t = t + x[0] * y[0][j];
    break;
  case HLO_NUM_PREC_HIGHEST:
    t = x[2] * y[0][j];
    t = t + x[0] * y[2][j];
    t = t + x[1] * y[1][j];
    t = t + x[1] * y[0][j];
    t = t + x[0] * y[1][j];
    t = t + x[0] * y[0][j];
    break;
  default:
    t = x[0] * y[0][j];
    break;
  }
  return ftz(F, t);
}

/* One step of the walk (dot_block) for the block's columns: product k
 * into the f64 sums and into lanes k % 2, 2 + k % 4 and 6 + k % 8, each
 * add as the emulating reference does it, acc = ftz(acc + product)
 * (hlo_num_dot.h). */
INLINE void walk1(hlo_num_precision prec, bool F, double a, const double *y64, const float *x, const float *const *y,
                  int64_t k, int64_t nj, double *restrict x64, float *restrict lane) {
  float *restrict l2 = lane + (k % 2) * COL_BLOCK, *restrict l4 = lane + (2 + k % 4) * COL_BLOCK;
  float *restrict l8 = lane + (6 + k % 8) * COL_BLOCK;
#pragma omp simd
  for (int64_t j = 0; j < nj; j++) {
    x64[j] = x64[j] + a * y64[j];
    float p = part_product(prec, F, x, y, j);
    l2[j] = ftz(F, l2[j] + p);
    l4[j] = ftz(F, l4[j] + p);
    l8[j] = ftz(F, l8[j] + p);
  }
}

/* Eight steps k0 .. k0 + 7 at once, k0 a multiple of 8, so that step u
 * goes to lanes u % 2, 2 + u % 4 and 6 + u; the same adds in the same
 * order as eight walk1 steps, with the sums kept in registers between. */
INLINE void walk8(hlo_num_precision prec, bool F, const double *a, const double *y64, const float (*x)[3],
                  const float *const *y, int64_t N, int64_t nj, double *restrict x64, float *restrict lane) {
#pragma omp simd
  for (int64_t j = 0; j < nj; j++) {
    double s = x64[j];
    float p[8];
#pragma GCC unroll 8
    for (int u = 0; u < 8; u++) {
      s = s + a[u] * y64[u * N + j];
      p[u] = part_product(prec, F, x[u], y, u * N + j);
    }
    x64[j] = s;
#pragma GCC unroll 2
    for (int q = 0; q < 2; q++) {
      float l = lane[q * COL_BLOCK + j];
#pragma GCC unroll 4
      for (int u = q; u < 8; u += 2)
        l = ftz(F, l + p[u]);
      lane[q * COL_BLOCK + j] = l;
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
      float l = lane[(2 + q) * COL_BLOCK + j];
      l = ftz(F, l + p[q]);
      l = ftz(F, l + p[q + 4]);
      lane[(2 + q) * COL_BLOCK + j] = l;
    }
#pragma GCC unroll 8
    for (int q = 0; q < 8; q++)
      lane[(6 + q) * COL_BLOCK + j] = ftz(F, lane[(6 + q) * COL_BLOCK + j] + p[q]);
  }
}

/* dot_block at precision prec, flushing when F (constants once inlined). */
INLINE void walk(hlo_num_precision prec, bool F, const dot_terms *t, int64_t row, int64_t j0, int64_t nj,
                 double *restrict x64, float *restrict lane) {
  const int64_t K = t->K, N = t->N, b = row / t->M;
  const int np = hlo_num_dot_parts(prec);
  const int64_t a0 = row * K, b0 = b * K * N + j0;
  for (int64_t j = 0; j < nj; j++)
    x64[j] = 0;
  memset(lane, 0, sizeof *lane * LANES * COL_BLOCK);
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    double a[8];
    float x[8][3] = {{0}};
    const float *y[3] = {NULL, NULL, NULL};
    for (int u = 0; u < 8; u++) {
      a[u] = t->a64[a0 + k + u];
      for (int q = 0; q < np; q++)
        x[u][q] = t->a32[q][a0 + k + u];
    }
    for (int q = 0; q < np; q++)
      y[q] = t->b32[q] + b0 + k * N;
    walk8(prec, F, a, t->b64 + b0 + k * N, (const float(*)[3])x, y, N, nj, x64, lane);
  }
  for (; k < K; k++) {
    float x[3] = {0, 0, 0};
    const float *y[3] = {NULL, NULL, NULL};
    for (int q = 0; q < np; q++) {
      x[q] = t->a32[q][a0 + k];
      y[q] = t->b32[q] + b0 + k * N;
    }
    walk1(prec, F, t->a64[a0 + k], t->b64 + b0 + k * N, x, y, k, nj, x64, lane);
  }
}

/* Output elements (row, j0 .. j0 + nj - 1), row = b M + i, in one walk of
 * their products, k ascending: x64[j] the f64 sum (c = c + a b from 0, as
 * gemm_f64 forms it) and lane[l COL_BLOCK + j] the f32 accumulators, lane
 * p of P (l = P - 2 + p) taking the products whose k % P == p.  A lane is
 * then, up to the sign of a zero, the emulating reference's dot of the
 * lhs with the other lanes' products zeroed (adding a zero product to a
 * flushed sum changes no magnitude); a lane that meets an Inf or NaN is
 * not finite on either route, and such elements are not compared. */
DOT_CLONES
static void dot_block(const dot_terms *t, int64_t row, int64_t j0, int64_t nj, double *restrict x64,
                      float *restrict lane) {
  bool F = !t->no_flush;
  switch (t->prec) {
  case HLO_NUM_PREC_HIGH:
    F ? walk(HLO_NUM_PREC_HIGH, true, t, row, j0, nj, x64, lane) : walk(HLO_NUM_PREC_HIGH, false, t, row, j0, nj, x64, lane);
    break;
  case HLO_NUM_PREC_HIGHEST:
    F ? walk(HLO_NUM_PREC_HIGHEST, true, t, row, j0, nj, x64, lane)
      : walk(HLO_NUM_PREC_HIGHEST, false, t, row, j0, nj, x64, lane);
    break;
  default:
    F ? walk(HLO_NUM_PREC_DEFAULT, true, t, row, j0, nj, x64, lane)
      : walk(HLO_NUM_PREC_DEFAULT, false, t, row, j0, nj, x64, lane);
    break;
  }
}

/* The block's sums of 2, 4 and 8 lanes, each lane added in order in f32
 * from 0: sums[i COL_BLOCK + j] for P = 2 << i and column j.  Columns
 * side by side, one vector of them at a time: each column's adds are its
 * own, in the same order. */
static void combine_lanes(const float *lane, int64_t nj, float *sums) {
  for (int i = 0, l0 = 0; i < 3; l0 += 2 << i, i++) {
    float *out = sums + i * COL_BLOCK;
#pragma omp simd
    for (int64_t j = 0; j < nj; j++) {
      float s = 0;
      for (int p = 0; p < 2 << i; p++)
        s += lane[(l0 + p) * COL_BLOCK + j];
      out[j] = s;
    }
  }
}

int chk_accums_dot_sums(const hlo_instr *dot, hlo_value *const *ops, double *exact, float *sums, hlo_error *err) {
  dot_terms t;
  int rc = dot_terms_init(&t, dot, ops);
  if (rc != 0) {
    hlo_error_set(err, 0, 0, "%s: %s", dot->name, rc == -1 ? "out of memory" : "dimension numbers do not fit the operands");
    return -1;
  }
  double *x64 = malloc(sizeof *x64 * COL_BLOCK);
  float *lane = malloc(sizeof *lane * LANES * COL_BLOCK), *psum = malloc(sizeof *psum * 3 * COL_BLOCK);
  if (!x64 || !lane || !psum) {
    hlo_error_set(err, 0, 0, "%s: out of memory", dot->name);
    rc = -1;
  }
  for (int64_t j0 = 0; rc == 0 && j0 < t.N; j0 += COL_BLOCK)
    for (int64_t row = 0; row < t.B * t.M; row++) {
      int64_t nj = t.N - j0 < COL_BLOCK ? t.N - j0 : COL_BLOCK;
      dot_block(&t, row, j0, nj, x64, lane);
      combine_lanes(lane, nj, psum);
      for (int64_t j = 0; j < nj; j++) {
        int64_t e = row * t.N + j0 + j;
        exact[e] = x64[j];
        for (int i = 0; i < 3; i++)
          sums[3 * e + i] = psum[i * COL_BLOCK + j];
      }
    }
  free(x64);
  free(lane);
  free(psum);
  dot_terms_free(&t);
  return rc;
}

/* |s - exact| / w where both are finite and w a finite positive width;
 * 0 (no larger rho) elsewhere. */
static double noise_of(double s, double exact, double w) {
  if (!(w > 0) || !isfinite(w) || !isfinite(exact) || !isfinite(s))
    return 0;
  return fabs(exact - s) / w;
}

/* max(rho, noise_of(s, exact, w)), bit for bit, dividing only when the
 * quotient can exceed rho: the probe meets four quotients per element of
 * a dot, and the division was a good part of the noise walk's own cost.
 * Below the threshold the exact quotient is below rho: fl(rho w) is at
 * most rho w (1 + 2^-53) and the factor 1 - 2^-50 takes the threshold
 * under rho w; the rounded quotient, rounding being monotone, is then at
 * most rho, which leaves the maximum as it is. */
static inline double raise_noise(double rho, double s, double exact, double w) {
  if (!(w > 0) || !isfinite(w) || !isfinite(exact) || !isfinite(s))
    return rho;
  double d = fabs(exact - s);
  if (d <= rho * w * (1.0 - 0x1p-50))
    return rho;
  double q = d / w;
  return q > rho ? q : rho;
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

/* rho of one evaluation of an f32 dot (accum.h): the reference's own
 * sequential sum v and 2, 4 and 8 interleaved accumulators (f32 result
 * only: a narrower result would round each lane) against the f64 sum of
 * the same products, all formed in one walk of each element's products
 * (dot_block).  Up to 2^28 products: a larger dot measures its sequential
 * order alone. */
static double dot_noise(const chk_accum *a, hlo_value *const *ops, const hlo_value *v, const double *abs_sum,
                        double g, bool *oom) {
  bool lanes = v->type == HLO_F32 && (double)a->n * (double)a->k <= 268435456.0;
  if (!lanes)
    return seq_noise(a, ops, v, abs_sum, g, oom);
  dot_terms t;
  int rc = dot_terms_init(&t, a->ins, ops);
  if (rc != 0 || t.B * t.M * t.N != a->n) {
    if (rc == 0)
      dot_terms_free(&t);
    *oom = true; /* as dot_f64's failure */
    return -1;
  }
  /* The lane counts P = 2, 4, 8 compared: those up to the depth. */
  int nsums = a->k >= 8 ? 3 : a->k >= 4 ? 2 : a->k >= 2 ? 1 : 0;
  int64_t rows = t.B * t.M, nblocks = (t.N + COL_BLOCK - 1) / COL_BLOCK;
  double rho = 0;
  bool failed = false;
  /* Every element is its own walk, so threads change no bit, and the
   * largest of the elements' ratios does not depend on their order. */
#pragma omp parallel reduction(max : rho) reduction(|| : failed) if (rows * t.N * t.K >= (1 << 18))
  {
    double *x64 = malloc(sizeof *x64 * COL_BLOCK);
    float *lane = malloc(sizeof *lane * LANES * COL_BLOCK), *psum = malloc(sizeof *psum * 3 * COL_BLOCK);
    if (!x64 || !lane || !psum)
      failed = true;
#pragma omp for collapse(2) schedule(static)
    for (int64_t jb = 0; jb < nblocks; jb++) {
      for (int64_t row = 0; row < rows; row++) {
        if (!x64 || !lane || !psum)
          continue;
        int64_t j0 = jb * COL_BLOCK, nj = t.N - j0 < COL_BLOCK ? t.N - j0 : COL_BLOCK;
        dot_block(&t, row, j0, nj, x64, lane);
        combine_lanes(lane, nj, psum);
        for (int64_t j = 0; j < nj; j++) {
          int64_t e = row * t.N + j0 + j;
          double w = g * abs_sum[e];
          rho = raise_noise(rho, value_at(v, e), x64[j], w);
          for (int i = 0; i < nsums; i++)
            rho = raise_noise(rho, psum[i * COL_BLOCK + j], x64[j], w);
        }
      }
    }
    free(x64);
    free(lane);
    free(psum);
  }
  dot_terms_free(&t);
  if (failed) {
    *oom = true;
    return -1;
  }
  return rho;
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

void chk_accums_probe(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  chk_accums *A = ctx;
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
    for (int i = 0; i < ins->attrs.dot.lhs_contracting.n; i++) {
      int64_t d = ins->attrs.dot.lhs_contracting.v[i];
      if (d >= 0 && d < ops[0]->rank)
        k *= ops[0]->dims[d];
    }
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
  int rc = 0;
  if (dot)
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
  double u_res = chk_unit_roundoff(v->type), u_acc = chk_unit_roundoff(a->acc_type);
  /* The noise-floor measurement (accum.h): f32 accumulations only. */
  double rho = -1;
  if (a->acc_type == HLO_F32 && (dot || (rop == HLO_OP_ADD && ops[0]->type == HLO_F32))) {
    double g = chk_tol_coef(CHK_TOL_NOISE_FLOOR, u_acc, k, 0, 0, 0, 0);
    bool oom = false;
    rho = dot ? dot_noise(a, ops, v, s, g, &oom) : reduce_noise(ins, ops[0], ops[1], s, g, v->count, &oom);
    if (oom) {
      /* Unmeasured would mean the probabilistic bound, far looser than
       * the clean run's: a bug it hides must not depend on the host's
       * memory.  The caller's out-of-memory error instead. */
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

/* The hook of the measurement: shifts one accumulation's value. */
typedef struct {
  const chk_accum *a;
  double scale; /* of the shift at a->h: 1, or the small shift's fraction */
  double sign;
} shift_state;

static void shift_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  shift_state *st = ctx;
  const chk_accum *a = st->a;
  if (ins != a->ins || !*value || (*value)->type == HLO_TUPLE || (*value)->count != a->n)
    return;
  hlo_value *c = hlo_value_clone(*value);
  if (!c)
    return;
  /* both sides of a comparison with coefficient a->h, each as far as
   * its bound allows */
  if (c->type == HLO_F32) { /* hlo_value_set_f64's f32 store, inline */
    float *p = c->data;
    for (int64_t e = 0; e < a->n; e++) {
      double x = p[e];
      double d = st->scale * 2.0 * (a->h * a->abs_sum[e] + (a->round ? a->round[e] : 0));
      if (isfinite(x))
        p[e] = (float)(x + st->sign * d);
    }
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
      for (int64_t i = 0; i < y->count; i++) {
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
