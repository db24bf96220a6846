/* compare.c — one pass over two arrays computing every metric at once.
 *
 * The hot path is f32 (most fusion outputs): it reads both arrays once,
 * keeps all accumulators in registers, and only touches the multi-index
 * bookkeeping when an element actually mismatches, so a clean comparison
 * runs close to memory bandwidth.  Other types go through one generic loop
 * over doubles (every float type, and integers up to 2^53, convert to double
 * exactly; wider integers compare bitwise anyway).
 */
#include "compare.h"

#include <math.h>
#include <string.h>

#include "hlo/hlo_dtype.h"

/* Maps a float's bits to an integer that orders like the float itself
 * (negatives reversed), so ulp distance is a difference of keys. */
static int64_t ordered_key(uint64_t bits, int width) {
  uint64_t sign = 1ull << (width - 1);
  uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -(int64_t)mag - 1 : (int64_t)mag;
}

uint64_t chk_ulp_distance(hlo_etype t, double a, double b) {
  if (isnan(a) || isnan(b))
    return UINT64_MAX;
  if (a == b && signbit(a) == signbit(b))
    return 0;
  int width = hlo_etype_bits(t);
  uint64_t ba, bb;
  if (t == HLO_F64) {
    memcpy(&ba, &a, 8);
    memcpy(&bb, &b, 8);
  } else if (t == HLO_F32) {
    float fa = (float)a, fb = (float)b;
    uint32_t x, y;
    memcpy(&x, &fa, 4);
    memcpy(&y, &fb, 4);
    ba = x;
    bb = y;
  } else if (hlo_etype_is_float(t)) {
    ba = hlo_float_encode(t, a);
    bb = hlo_float_encode(t, b);
  } else {
    return 0;
  }
  int64_t ka = ordered_key(ba, width), kb = ordered_key(bb, width);
  /* +0 and -0 map to 0 and -1: one apart, as documented. */
  return ka > kb ? (uint64_t)(ka - kb) : (uint64_t)(kb - ka);
}

/* The histogram's bucket of a nonzero error: floor(log10(err)) + 14,
 * clamped to 1..CHK_HIST_BUCKETS-1.  Defined by log10, as the header says,
 * but a log10 per differing element was a third of a whole check's time
 * (layernorm's candidates differ from the reference in most elements), so
 * the bucket is counted against the powers of ten instead.  Away from a
 * power of ten that count is what floor(log10(err)) gives, since libm's
 * log10 is off by an ulp or two at most; within a relative 1e-9 of one
 * the two could disagree, so there log10 still decides. */
static const double decade[CHK_HIST_BUCKETS - 2] = {1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5,
                                                     1e-4,  1e-3,  1e-2,  1e-1, 1e0,  1e1,  1e2};

static int bucket_by_log10(double err) {
  double l = floor(log10(err));
  int b = (int)l + 14;
  if (b < 1)
    b = 1;
  if (b > CHK_HIST_BUCKETS - 1)
    b = CHK_HIST_BUCKETS - 1;
  return b;
}

static int bucket_of(double err) {
  if (err == 0)
    return 1; /* equal values with different bits (e.g. +0/-0): smallest bucket */
  int above = 0; /* how many decades err has reached: bucket above + 1 */
  for (int k = 0; k < CHK_HIST_BUCKETS - 2; k++)
    above += err >= decade[k];
  if ((above > 0 && err - decade[above - 1] <= 1e-9 * decade[above - 1]) ||
      (above < CHK_HIST_BUCKETS - 2 && decade[above] - err <= 1e-9 * decade[above]) || !(err == err))
    return bucket_by_log10(err);
  return above + 1;
}

typedef struct {
  double sum, sumsq, min, max;
  int64_t n;
} running;

static void run_add(running *r, double x) {
  if (!isfinite(x))
    return;
  if (r->n == 0 || x < r->min)
    r->min = x;
  if (r->n == 0 || x > r->max)
    r->max = x;
  r->sum += x;
  r->sumsq += x * x;
  r->n++;
}

static void run_finish(const running *r, chk_side_stats *s) {
  if (r->n == 0) {
    memset(s, 0, sizeof *s);
    return;
  }
  s->min = r->min;
  s->max = r->max;
  s->mean = r->sum / (double)r->n;
  double var = r->sumsq / (double)r->n - s->mean * s->mean;
  s->std = var > 0 ? sqrt(var) : 0;
}

typedef struct {
  const hlo_value *a;
  const double *atol_map;
  chk_metrics *m;
  double peak_err; /* the error at peak_index; +inf for NaN/Inf mismatches */
  double sq_sum;
  int64_t finite_pairs;
  running ra, rb;
} state;

static void mark_mismatch(state *st, int64_t i) {
  chk_metrics *m = st->m;
  int64_t rem = i;
  for (int d = m->rank - 1; d >= 0; d--) {
    int64_t dim = st->a->dims[d];
    int64_t x = dim ? rem % dim : 0;
    rem = dim ? rem / dim : 0;
    if (m->mismatches == 0 || x < m->bbox_lo[d])
      m->bbox_lo[d] = x;
    if (m->mismatches == 0 || x > m->bbox_hi[d])
      m->bbox_hi[d] = x;
  }
  m->mismatches++;
}

static void note_peak(state *st, int64_t i, double err) {
  if (st->m->peak_index < 0 || err > st->peak_err) {
    st->peak_err = err;
    st->m->peak_index = i;
  }
}

/* One element pair as doubles; `same_bits` says whether the raw bits agree. */
/* A complex element is judged by its worse part: the real and imaginary
 * parts of a and b at i, whichever differ more (a NaN or Inf first), so an
 * error in the imaginary part alone is not hidden behind an equal real
 * part. */
static void complex_part(const hlo_value *a, const hlo_value *b, int64_t i, double *x, double *y) {
  double p[2][2];
  for (int k = 0; k < 2; k++) {
    if (a->type == HLO_C128) {
      p[k][0] = ((const double *)a->data)[2 * i + k];
      p[k][1] = ((const double *)b->data)[2 * i + k];
    } else {
      p[k][0] = ((const float *)a->data)[2 * i + k];
      p[k][1] = ((const float *)b->data)[2 * i + k];
    }
  }
  int pick = 0;
  double d0 = fabs(p[0][0] - p[0][1]), d1 = fabs(p[1][0] - p[1][1]);
  bool odd1 = !isfinite(p[1][0]) || !isfinite(p[1][1]), odd0 = !isfinite(p[0][0]) || !isfinite(p[0][1]);
  if ((odd1 && !odd0) || (!odd0 && !odd1 && d1 > d0))
    pick = 1;
  *x = p[pick][0];
  *y = p[pick][1];
}

/* chk_ulp_distance for two finite f32 values given as bits: the same
 * ordered keys, without the round trip through double. */
static uint64_t ulp_f32_bits(uint32_t bx, uint32_t by) {
  int64_t ka = ordered_key(bx, 32), kb = ordered_key(by, 32);
  return ka > kb ? (uint64_t)(ka - kb) : (uint64_t)(kb - ka);
}

/* ulp is the pair's ulp distance, read only when both values are finite. */
static inline void visit(state *st, int64_t i, double x, double y, bool same_bits, chk_rule rule, chk_tol tol,
                         uint64_t ulp) {
  chk_metrics *m = st->m;
  run_add(&st->ra, x);
  run_add(&st->rb, y);
  bool nx = isnan(x), ny = isnan(y);
  if (nx || ny) {
    if (nx && ny) {
      m->excluded++;
      m->hist[0]++;
      return;
    }
    m->nan_mismatches++;
    m->hist[CHK_HIST_BUCKETS - 1]++;
    note_peak(st, i, INFINITY);
    mark_mismatch(st, i);
    return;
  }
  bool ix = isinf(x), iy = isinf(y);
  if (ix || iy) {
    if (ix && iy && x == y) {
      m->excluded++;
      m->hist[0]++;
      return;
    }
    m->inf_mismatches++;
    m->hist[CHK_HIST_BUCKETS - 1]++;
    note_peak(st, i, INFINITY);
    mark_mismatch(st, i);
    return;
  }
  double err = fabs(x - y);
  double rel = y != 0 ? err / fabs(y) : (err != 0 ? INFINITY : 0);
  st->sq_sum += err * err;
  st->finite_pairs++;
  if (err > m->max_abs)
    m->max_abs = err;
  if (rel > m->max_rel)
    m->max_rel = rel;
  if (ulp > m->max_ulp)
    m->max_ulp = ulp;
  m->hist[same_bits ? 0 : bucket_of(err)]++;
  if (!same_bits)
    note_peak(st, i, err);
  double bound = tol.atol + (st->atol_map ? st->atol_map[i] : 0) + tol.rtol * fabs(y);
  bool bad = rule == CHK_RULE_BITWISE ? !same_bits : !(err <= bound);
  if (bad)
    mark_mismatch(st, i);
}

/* Folds a run of n finite values (their sum, sum of squares, min and max)
 * into a side's running statistics. */
static void run_merge(running *r, double sum, double sumsq, double mn, double mx, int64_t n) {
  if (n == 0)
    return;
  if (r->n == 0 || mn < r->min)
    r->min = mn;
  if (r->n == 0 || mx > r->max)
    r->max = mx;
  r->sum += sum;
  r->sumsq += sumsq;
  r->n += n;
}

enum { F32_CHUNK = 1024 };

/* Is every pair in [i, i+n) bitwise equal and finite?  Written as a pure
 * reduction so the compiler vectorises it. */
static int chunk_clean(const uint32_t *a, const uint32_t *b, int64_t n) {
  uint32_t diff = 0, nonfinite = 0;
#pragma omp simd reduction(| : diff, nonfinite)
  for (int64_t i = 0; i < n; i++) {
    diff |= a[i] ^ b[i];
    nonfinite |= (uint32_t)((a[i] & 0x7f800000u) == 0x7f800000u);
  }
  return diff == 0 && nonfinite == 0;
}

static void compare_f32(state *st, const float *a, const float *b, int64_t n, chk_rule rule, chk_tol tol) {
  chk_metrics *m = st->m;
  for (int64_t i = 0; i < n; i += F32_CHUNK) {
    int64_t len = n - i < F32_CHUNK ? n - i : F32_CHUNK;
    const float *x = a + i, *y = b + i;
    if (chunk_clean((const uint32_t *)(const void *)x, (const uint32_t *)(const void *)y, len)) {
      /* The common case: identical finite values.  Both sides hold the same
       * numbers, so one set of sums serves both, kept in registers and
       * folded in once per chunk. */
      /* Partial sums of one chunk in f32 lanes (they only feed the
       * reported mean and std), folded into doubles per chunk. */
      float sumf = 0, sumsqf = 0;
      float mn = x[0], mx = x[0];
#pragma omp simd reduction(+ : sumf, sumsqf) reduction(min : mn) reduction(max : mx)
      for (int64_t j = 0; j < len; j++) {
        sumf += x[j];
        sumsqf += x[j] * x[j];
        mn = x[j] < mn ? x[j] : mn;
        mx = x[j] > mx ? x[j] : mx;
      }
      double sum = sumf, sumsq = sumsqf;
      run_merge(&st->ra, sum, sumsq, mn, mx, len);
      run_merge(&st->rb, sum, sumsq, mn, mx, len);
      st->finite_pairs += len;
      m->hist[0] += len;
      continue;
    }
    /* A chunk with a difference somewhere: its equal finite pairs (most
     * of them, usually) only add to the sums and the exact bucket, which
     * is all visit would do with them, in the same order. */
    const uint32_t *ux = (const uint32_t *)(const void *)x, *uy = (const uint32_t *)(const void *)y;
    for (int64_t j = 0; j < len; j++) {
      uint32_t bx = ux[j], by = uy[j];
      if (bx == by && (bx & 0x7f800000u) != 0x7f800000u) {
        double v = x[j];
        run_add(&st->ra, v);
        run_add(&st->rb, v);
        st->finite_pairs++;
        m->hist[0]++;
        if (rule == CHK_RULE_TOLERANCE &&
            !(0 <= tol.atol + (st->atol_map ? st->atol_map[i + j] : 0) + tol.rtol * fabs(v)))
          mark_mismatch(st, i + j);
        continue;
      }
      visit(st, i + j, x[j], y[j], bx == by, rule, tol, ulp_f32_bits(bx, by));
    }
  }
}

int chk_compare(const hlo_value *a, const hlo_value *b, chk_rule rule, chk_tol tol, chk_metrics *m,
                hlo_error *err) {
  return chk_compare_map(a, b, rule, tol, NULL, m, err);
}

int chk_compare_map(const hlo_value *a, const hlo_value *b, chk_rule rule, chk_tol tol, const double *atol_map,
                    chk_metrics *m, hlo_error *err) {
  memset(m, 0, sizeof *m);
  m->peak_index = -1;
  if (a->type == HLO_TUPLE || b->type == HLO_TUPLE)
    return hlo_error_set(err, 0, 0, "tuples are compared leaf by leaf");
  if (a->type != b->type || a->rank != b->rank)
    return hlo_error_set(err, 0, 0, "cannot compare %s rank %d with %s rank %d", hlo_etype_name(a->type),
                         a->rank, hlo_etype_name(b->type), b->rank);
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return hlo_error_set(err, 0, 0, "dimension %d differs: %lld vs %lld", d, (long long)a->dims[d],
                           (long long)b->dims[d]);
  m->rank = a->rank;
  m->count = a->count;
  state st = {.a = a, .atol_map = atol_map, .m = m};
  hlo_etype t = a->type;
  /* Integers and pred have no tolerance: equal or not. */
  if (!hlo_etype_is_float(t) && hlo_etype_class(t) != HLO_CLASS_COMPLEX)
    rule = CHK_RULE_BITWISE;
  if (t == HLO_F32) {
    compare_f32(&st, a->data, b->data, a->count, rule, tol);
  } else {
    size_t es = a->elem_size;
    for (int64_t i = 0; i < a->count; i++) {
      bool same = memcmp((const char *)a->data + (size_t)i * es, (const char *)b->data + (size_t)i * es, es) == 0;
      double x, y;
      if (hlo_etype_class(t) == HLO_CLASS_UINT && hlo_etype_bits(t) == 64) {
        x = (double)hlo_value_get_u64(a, i);
        y = (double)hlo_value_get_u64(b, i);
      } else if (hlo_etype_class(t) == HLO_CLASS_COMPLEX) {
        complex_part(a, b, i, &x, &y);
      } else {
        x = hlo_value_get_f64(a, i);
        y = hlo_value_get_f64(b, i);
      }
      visit(&st, i, x, y, same, rule, tol, hlo_etype_is_float(t) ? chk_ulp_distance(t, x, y) : 0);
    }
  }
  m->rms = st.finite_pairs ? sqrt(st.sq_sum / (double)st.finite_pairs) : 0;
  run_finish(&st.ra, &m->a);
  run_finish(&st.rb, &m->b);
  if (m->peak_index >= 0) {
    int64_t rem = m->peak_index;
    for (int d = m->rank - 1; d >= 0; d--) {
      int64_t dim = a->dims[d];
      m->peak[d] = dim ? rem % dim : 0;
      rem = dim ? rem / dim : 0;
    }
  }
  return 0;
}
