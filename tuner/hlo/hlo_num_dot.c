/* hlo_num_dot.c — the f32 dot inner loop, lanes side by side (see
 * hlo_num_dot.h). */
/* Nothing here may be contracted, each lane being the scalar loop: the
 * whole build has -ffp-contract=off (m4/tune_flags.m4). */

#include "hlo_num_dot.h"
#include "hlo/hlo_clones.h"

#include <string.h>

float hlo_num_dot_f32_line(const hlo_num_dot_planes *pl, float acc, int64_t a0, int64_t b0, int64_t len) {
  float x[3] = {0, 0, 0}, y[3] = {0, 0, 0};
  int np = hlo_num_dot_parts(pl->prec);
  for (int64_t r = 0; r < len; r++) {
    for (int p = 0; p < np; p++) {
      x[p] = pl->a[p][a0 + r * pl->sa];
      y[p] = pl->b[p][b0 + r * pl->sb];
    }
    acc = hlo_num_ftz_f32(acc + hlo_num_dot_parts_product(x, y, pl->prec));
  }
  return acc;
}

/* A part's exponent key for exp_min: its biased exponent, at least 1 (a
 * subnormal part is a multiple of the smallest subnormal bf16, as a part
 * of exponent 1 is); 255 for a zero or a non-finite part, which bound
 * nothing. */
static int part_key(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  int e = (int)((b >> 23) & 0xFF);
  if ((b & 0x7FFFFFFFu) == 0 || e == 255)
    return 255;
  return e ? e : 1;
}

/* Elements [i0, n) one at a time: the definition. */
static bool split_scalar(const float *x, int64_t i0, int64_t n, hlo_num_precision prec, float *const parts[3],
                         int *exp_min) {
  int np = hlo_num_dot_parts(prec), em = *exp_min;
  bool nan = false;
  for (int64_t i = i0; i < n; i++) {
    float t[3];
    hlo_num_dot_split(x[i], prec, t);
    for (int p = 0; p < np; p++) {
      parts[p][i] = t[p];
      nan = nan || t[p] != t[p];
      int k = part_key(t[p]);
      em = k < em ? k : em;
    }
  }
  *exp_min = em;
  return nan;
}

#if defined(__GNUC__) && !defined(__clang__)

#define INLINE static inline __attribute__((always_inline))
/* The helpers below are always inlined, so how a 32-byte vector would be
 * passed between functions never matters. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* GCC 12 takes the broadcast {a, a, ...} into an initialised array for a
 * read of it ("may be used uninitialized"). */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

/* hlo_num_ftz_f32 on 8 lanes: a zero or subnormal keeps only its sign.
 * tiny is all ones in such a lane; shifted right by one it is the
 * magnitude mask to clear.  Spelt so, the mask needs no constant beyond
 * the exponent field (and zero), which leaves registers for the sums of
 * the two-row kernels. */
INLINE v8f v_ftz(v8f x) {
  v8i b = (v8i)x;
  v8u tiny = (v8u)((b & 0x7F800000) == 0);
  return (v8f)(b & ~(v8i)(tiny >> 1));
}

/* hlo_f32_to_bf16 and back (hlo_dtype.h) on 8 lanes of f32 bits, the
 * scalar code's integer steps with its NaN branch as a select. */
INLINE v8u v_bf16(v8u b) {
  v8u nan = (v8u)((b & 0x7FFFFFFFu) > 0x7F800000u);
  v8u quiet = ((b >> 16) | 0x0040u) << 16;
  v8u near = ((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16) << 16;
  return (nan & quiet) | (~nan & near);
}

/* part_key on 8 lanes of f32 bits. */
INLINE v8u v_part_key(v8u b) {
  v8u e = (b >> 23) & 0xFFu;
  v8u none = (v8u)((b & 0x7FFFFFFFu) == 0) | (v8u)(e == 255u);
  e = e | (v8u)(e == 0u) >> 31; /* 0 becomes 1 */
  return (none & 255u) | (~none & e);
}

INLINE v8u v_min(v8u a, v8u b) {
  v8u lt = (v8u)(a < b);
  return (lt & a) | (~lt & b);
}

/* hlo_num_dot_split_block, 8 elements at a time: hlo_num_dot_split's
 * steps per lane (flush, hi, then mid and lo from the exact remainders,
 * zero for a non-finite x), selects for its branches. */
HLO_CLONES static bool split_vec(const float *x, int64_t n, hlo_num_precision prec, float *const parts[3],
                                 int *exp_min, int64_t *done) {
  v8u em = {255, 255, 255, 255, 255, 255, 255, 255};
  v8i nan = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8u b;
    memcpy(&b, x + i, sizeof b);
    v8u tiny = (v8u)((b & 0x7F800000u) == 0);
    b &= ~(tiny >> 1);
    v8u hi = v_bf16(b);
    nan |= (v8i)((v8f)hi != (v8f)hi);
    em = v_min(em, v_part_key(hi));
    memcpy(parts[0] + i, &hi, sizeof hi);
    if (prec == HLO_NUM_PREC_DEFAULT)
      continue;
    v8u finite = (v8u)((b & 0x7F800000u) != 0x7F800000u);
    v8f r = (v8f)b - (v8f)hi; /* exact: hi has the leading 8 bits of x */
    v8u mid = v_bf16((v8u)r) & finite;
    nan |= (v8i)((v8f)mid != (v8f)mid);
    em = v_min(em, v_part_key(mid));
    memcpy(parts[1] + i, &mid, sizeof mid);
    if (prec != HLO_NUM_PREC_HIGHEST)
      continue;
    v8u lo = v_bf16((v8u)(r - (v8f)mid)) & finite;
    nan |= (v8i)((v8f)lo != (v8f)lo);
    em = v_min(em, v_part_key(lo));
    memcpy(parts[2] + i, &lo, sizeof lo);
  }
  int m = 255;
  bool any = false;
  for (int j = 0; j < 8; j++) {
    m = (int)em[j] < m ? (int)em[j] : m;
    any = any || nan[j];
  }
  *exp_min = m;
  *done = i;
  return any;
}

bool hlo_num_dot_split_block(const float *x, int64_t n, hlo_num_precision prec, float *const parts[3], int *exp_min) {
  int64_t i0 = 0;
  bool nan = split_vec(x, n, prec, parts, exp_min, &i0);
  return split_scalar(x, i0, n, prec, parts, exp_min) || nan;
}

/* v_ftz when F; the kernels below come with F true and false (see "No
 * subnormals" further down), a constant after inlining. */
INLINE v8f v_ftz_if(bool f, v8f x) { return f ? v_ftz(x) : x; }

/* hlo_num_dot_parts_product on a vector of lanes, term for term, into T
 * (flushed by FTZ_IF when F); X(k) is the lhs part k as a vector, Y[k] the
 * rhs part k.  One spelling of the order for all kernels below, whatever
 * their vector width. */
#define V_PROD(P, F, FTZ_IF, X, Y, T)                                                                        \
  do {                                                                                                       \
    switch (P) {                                                                                             \
    case HLO_NUM_PREC_HIGH:                                                                                  \
      T = X(1) * Y[0];                                                                                       \
      T = T + X(0) * Y[1];                                                                                   \
      T = T + X(0) * Y[0];                                                                                   \
      break;                                                                                                 \
    case HLO_NUM_PREC_HIGHEST:                                                                               \
      T = X(2) * Y[0];                                                                                       \
      T = T + X(0) * Y[2];                                                                                   \
      T = T + X(1) * Y[1];                                                                                   \
      T = T + X(1) * Y[0];                                                                                   \
      T = T + X(0) * Y[1];                                                                                   \
      T = T + X(0) * Y[0];                                                                                   \
      break;                                                                                                 \
    default:                                                                                                 \
      T = X(0) * Y[0];                                                                                       \
      break;                                                                                                 \
    }                                                                                                        \
    T = FTZ_IF(F, T);                                                                                        \
  } while (0)

/* Lanes with their own lhs values. */
INLINE v8f v_prod(hlo_num_precision p, bool f, const v8f *x, const v8f *y) {
  v8f t;
#define X_LANES(k) x[k]
  V_PROD(p, f, v_ftz_if, X_LANES, y, t);
#undef X_LANES
  return t;
}

/* Lanes sharing one lhs value per part (x[k], a scalar), broadcast where it
 * is used: GCC 12 spells a broadcast stored into an array of vectors as
 * eight element inserts, but one used in place as a single vbroadcastss. */
INLINE v8f v_prod_bcast(hlo_num_precision p, bool f, const float *x, const v8f *y) {
  v8f t;
#define X_BCAST(k) ((v8f){x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k]})
  V_PROD(p, f, v_ftz_if, X_BCAST, y, t);
#undef X_BCAST
  return t;
}

/* NR result rows of NV * 8 lanes each: the rows share their rhs positions
 * (b0 + 8 * v), each row has its own lhs element (a0[i]), broadcast.  Every
 * accumulator is a lane group's own running sum, so the order of products
 * within a lane is the scalar loop's.  NR and NV are constants after
 * inlining and the loops over them unroll completely: the NR * NV sums
 * stay in registers (an array of sums indexed in a loop that does not
 * unroll lives on the stack, and each step then waits on a store and a
 * reload), and each rhs vector, loaded once, serves all NR rows. */
INLINE void rows_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, bool f, int nr, int nv, float *const *acc,
                       const int64_t *a0, int64_t b0, int64_t len) {
  v8f s[2][4];
#pragma GCC unroll 2
  for (int i = 0; i < nr; i++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
      memcpy(&s[i][v], acc[i] + 8 * v, sizeof(v8f));
  int np = hlo_num_dot_parts(prec);
  const int64_t sa = pl->sa, sb = pl->sb;
  const float *pa[2][3];
  for (int i = 0; i < nr; i++)
    for (int p = 0; p < np; p++)
      pa[i][p] = pl->a[p] + a0[i];
  for (int64_t r = 0; r < len; r++) {
    float x[2][3];
    v8f y[3];
#pragma GCC unroll 2
    for (int i = 0; i < nr; i++)
#pragma GCC unroll 3
      for (int p = 0; p < np; p++)
        x[i][p] = pa[i][p][r * sa];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
#pragma GCC unroll 3
      for (int p = 0; p < np; p++)
        memcpy(&y[p], pl->b[p] + b0 + r * sb + 8 * v, sizeof y[p]);
#pragma GCC unroll 2
      for (int i = 0; i < nr; i++)
        s[i][v] = v_ftz_if(f, s[i][v] + v_prod_bcast(prec, f, x[i], y));
    }
  }
#pragma GCC unroll 2
  for (int i = 0; i < nr; i++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
      memcpy(acc[i] + 8 * v, &s[i][v], sizeof(v8f));
}

/* One result row (see rows_lanes). */
INLINE void row_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, bool f, int nv, float *acc, int64_t a0,
                      int64_t b0, int64_t len) {
  float *const accs[1] = {acc};
  const int64_t a0s[1] = {a0};
  rows_lanes(pl, prec, f, 1, nv, accs, a0s, b0, len);
}

/* 32 lanes at arbitrary element offsets (oa[q], ob[q]), loaded one by one. */
INLINE void gather_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, bool f, float *acc, const int64_t *oa,
                         const int64_t *ob, int64_t len) {
  v8f s[4];
  memcpy(s, acc, sizeof s);
  int np = hlo_num_dot_parts(prec);
  const int64_t sa = pl->sa, sb = pl->sb;
  for (int64_t r = 0; r < len; r++) {
    int64_t ra = r * sa, rb = r * sb;
    for (int v = 0; v < 4; v++) {
      v8f x[3], y[3];
      for (int p = 0; p < np; p++)
        for (int j = 0; j < 8; j++) {
          x[p][j] = pl->a[p][oa[8 * v + j] + ra];
          y[p][j] = pl->b[p][ob[8 * v + j] + rb];
        }
      s[v] = v_ftz_if(f, s[v] + v_prod(prec, f, x, y));
    }
  }
  memcpy(acc, s, sizeof s);
}

/* No subnormals.  hlo_num_ftz_f32 changes a subnormal only.  Let every
 * part read be a multiple of 2^(e - 134), e its biased exponent counted
 * as at least 1 (a part is a bf16 value, 8 significant bits), and every
 * incoming sum a multiple of 2^(e - 150) (its ulp).  Then each product of
 * parts, exact in f32 or an overflow to inf, is a multiple of
 * Q = 2^(ea + eb - 268) with ea, eb the two sides' smallest such e, and a
 * rounded sum of two multiples of Q is one again (when it is inexact, the
 * ulp it rounds to is a larger power of two).  So when Q and every
 * incoming sum's ulp are at least 2^-126, the smallest normal, every
 * finite nonzero value a lane computes is at least 2^-126: nothing is
 * subnormal, every flush is the identity, and the kernels may leave them
 * out (F false) with the bits of the flushing loop.  Zeros, infinities and
 * NaNs pass a flush unchanged.  The caller states ea and eb (exp_min,
 * from hlo_num_dot_split_block); 0 there means unknown and keeps the
 * flushes. */
bool hlo_num_dot_parts_never_subnormal(int ea, int eb) {
  return ea > 0 && eb > 0 && ea + eb - 268 >= -126; /* Q at least 2^-126 */
}

/* The test's half on the parts. */
static bool parts_allow_nf(const hlo_num_dot_planes *pl) {
  return hlo_num_dot_parts_never_subnormal(pl->exp_min[0], pl->exp_min[1]);
}

/* The test, for nr rows of m lanes (acc[0..nr-1]) at once: one call and
 * one reduction of the vector for a block of rows, where the four-row
 * kernel would otherwise pay four of each on every call. */
HLO_CLONES static bool rows_no_subnormals(const hlo_num_dot_planes *pl, const float *const *acc, int nr, int64_t m) {
  if (!parts_allow_nf(pl))
    return false;
  /* a nonzero sum whose ulp is below 2^-126: exponent under 24 */
  v8u bad = {0, 0, 0, 0, 0, 0, 0, 0};
  uint32_t any = 0;
  for (int i = 0; i < nr; i++) {
    const float *a = acc[i];
    int64_t q = 0;
    for (; q + 8 <= m; q += 8) {
      v8u b;
      memcpy(&b, a + q, sizeof b);
      bad |= (v8u)((b & 0x7FFFFFFFu) != 0) & (v8u)(((b >> 23) & 0xFFu) < 24u);
    }
    for (; q < m; q++) {
      uint32_t b;
      memcpy(&b, &a[q], sizeof b);
      any |= (b & 0x7FFFFFFFu) != 0 && ((b >> 23) & 0xFF) < 24;
    }
  }
  for (int j = 0; j < 8; j++)
    any |= bad[j];
  return any == 0;
}

static bool no_subnormals(const hlo_num_dot_planes *pl, const float *acc, int64_t m) {
  const float *const rows[1] = {acc};
  return rows_no_subnormals(pl, rows, 1, m);
}

#define DEF_PREC(SUFFIX, PREC, F)                                                                           \
  HLO_CLONES static void row32_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0,      \
                                        int64_t len) {                                                     \
    row_lanes(pl, PREC, F, 4, acc, a0, b0, len);                                                           \
  }                                                                                                        \
  HLO_CLONES static void row8_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0,       \
                                       int64_t len) {                                                      \
    row_lanes(pl, PREC, F, 1, acc, a0, b0, len);                                                           \
  }                                                                                                        \
  HLO_CLONES static void gather32_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, const int64_t *oa,        \
                                           const int64_t *ob, int64_t len) {                               \
    gather_lanes(pl, PREC, F, acc, oa, ob, len);                                                           \
  }                                                                                                        \
  HLO_CLONES static void pair32_##SUFFIX(const hlo_num_dot_planes *pl, float *const *acc, const int64_t *a0,   \
                                         int64_t b0, int64_t len) {                                        \
    rows_lanes(pl, PREC, F, 2, 4, acc, a0, b0, len);                                                       \
  }                                                                                                        \
  HLO_CLONES static void pair8_##SUFFIX(const hlo_num_dot_planes *pl, float *const *acc, const int64_t *a0,    \
                                        int64_t b0, int64_t len) {                                         \
    rows_lanes(pl, PREC, F, 2, 1, acc, a0, b0, len);                                                       \
  }
DEF_PREC(default, HLO_NUM_PREC_DEFAULT, true)
DEF_PREC(high, HLO_NUM_PREC_HIGH, true)
DEF_PREC(highest, HLO_NUM_PREC_HIGHEST, true)
DEF_PREC(default_nf, HLO_NUM_PREC_DEFAULT, false)
DEF_PREC(high_nf, HLO_NUM_PREC_HIGH, false)
DEF_PREC(highest_nf, HLO_NUM_PREC_HIGHEST, false)

/* The kernel NAME for pl's precision, without flushes when nf, on ARGS. */
#define PICK(NAME, PL, NF, ARGS)                                                                            \
  switch ((PL)->prec) {                                                                                    \
  case HLO_NUM_PREC_HIGH: (NF) ? NAME##_high_nf ARGS : NAME##_high ARGS; break;                            \
  case HLO_NUM_PREC_HIGHEST: (NF) ? NAME##_highest_nf ARGS : NAME##_highest ARGS; break;                   \
  default: (NF) ? NAME##_default_nf ARGS : NAME##_default ARGS; break;                                     \
  }

static void row32(const hlo_num_dot_planes *pl, bool nf, float *acc, int64_t a0, int64_t b0, int64_t len) {
  PICK(row32, pl, nf, (pl, acc, a0, b0, len));
}

static void row8(const hlo_num_dot_planes *pl, bool nf, float *acc, int64_t a0, int64_t b0, int64_t len) {
  PICK(row8, pl, nf, (pl, acc, a0, b0, len));
}

static void gather32(const hlo_num_dot_planes *pl, bool nf, float *acc, const int64_t *oa, const int64_t *ob,
                     int64_t len) {
  PICK(gather32, pl, nf, (pl, acc, oa, ob, len));
}

static void pair32(const hlo_num_dot_planes *pl, bool nf, float *const *acc, const int64_t *a0, int64_t b0,
                   int64_t len) {
  PICK(pair32, pl, nf, (pl, acc, a0, b0, len));
}

static void pair8(const hlo_num_dot_planes *pl, bool nf, float *const *acc, const int64_t *a0, int64_t b0,
                  int64_t len) {
  PICK(pair8, pl, nf, (pl, acc, a0, b0, len));
}

/* Four rows at once, on machines with 512-bit vectors.  The two-row
 * kernels above use 8-lane vectors, of which a 32-lane block is four, and
 * all three clones have only sixteen such registers: two rows' eight sums
 * fill half and the rest go to operands.  With avx512f there are 32
 * registers of 16 lanes, so a 32-lane block is two, and four rows' eight
 * sums leave room for every operand: each rhs vector, loaded once, serves
 * four rows, and eight independent sums are in flight.  The lanes and
 * their order of operations are those of the row kernels (V_PROD, the same
 * flush), only more of them per instruction.  These kernels are built for
 * avx512f alone and run only where the processor has it (quad_ok); a
 * machine without runs the two-row kernels. */
#if defined(__x86_64__) && defined(__linux__)
#define HAVE_QUAD 1

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

/* v_ftz on 16 lanes. */
INLINE v16f v16_ftz(v16f x) {
  v16i b = (v16i)x;
  v16u tiny = (v16u)((b & 0x7F800000) == 0);
  return (v16f)(b & ~(v16i)(tiny >> 1));
}

INLINE v16f v16_ftz_if(bool f, v16f x) { return f ? v16_ftz(x) : x; }

/* v_prod_bcast on 16 lanes. */
INLINE v16f v16_prod_bcast(hlo_num_precision p, bool f, const float *x, const v16f *y) {
  v16f t;
#define X_BCAST16(k)                                                                                           \
  ((v16f){x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k], x[k]})
  V_PROD(p, f, v16_ftz_if, X_BCAST16, y, t);
#undef X_BCAST16
  return t;
}

/* rows_lanes with four rows of two 16-lane vectors: row i's 32 sums are
 * acc[i][0..31], its lhs element a0[i]; the loops over rows and vectors
 * unroll completely, so the eight sums stay in registers. */
INLINE void quad_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, bool f, float *const *acc,
                       const int64_t *a0, int64_t b0, int64_t len) {
  v16f s[4][2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++)
      memcpy(&s[i][v], acc[i] + 16 * v, sizeof(v16f));
  int np = hlo_num_dot_parts(prec);
  const int64_t sa = pl->sa, sb = pl->sb;
  const float *pa[4][3];
  for (int i = 0; i < 4; i++)
    for (int p = 0; p < np; p++)
      pa[i][p] = pl->a[p] + a0[i];
  for (int64_t r = 0; r < len; r++) {
    float x[4][3];
    v16f y[2][3];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 3
      for (int p = 0; p < np; p++)
        x[i][p] = pa[i][p][r * sa];
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++)
#pragma GCC unroll 3
      for (int p = 0; p < np; p++)
        memcpy(&y[v][p], pl->b[p] + b0 + r * sb + 16 * v, sizeof y[v][p]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 2
      for (int v = 0; v < 2; v++)
        s[i][v] = v16_ftz_if(f, s[i][v] + v16_prod_bcast(prec, f, x[i], y[v]));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++)
      memcpy(acc[i] + 16 * v, &s[i][v], sizeof(v16f));
}

/* rows_no_subnormals' scan of the four rows' 32 sums, on 16-lane vectors
 * inside the kernel's own function: the separate call and its reduction
 * cost about a tenth of a call of the kernel. */
INLINE bool quad_no_tiny(float *const *acc) {
  v16u bad = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++) {
      v16u b;
      memcpy(&b, acc[i] + 16 * v, sizeof b);
      bad |= (v16u)((b & 0x7FFFFFFFu) != 0) & (v16u)(((b >> 23) & 0xFFu) < 24u);
    }
  v8u lo, hi;
  memcpy(&lo, &bad, sizeof lo);
  memcpy(&hi, (const char *)&bad + sizeof lo, sizeof hi);
  lo |= hi;
  uint32_t any = 0;
  for (int j = 0; j < 8; j++)
    any |= lo[j];
  return any == 0;
}

/* The four-row kernel of one precision: without flushes when the parts
 * allow it (may_skip, parts_allow_nf) and no incoming sum is too small,
 * as rows_no_subnormals decides for the other kernels; else with them. */
#define DEF_QUAD(SUFFIX, PREC)                                                                             \
  __attribute__((target("avx512f"))) static void quad32_##SUFFIX(const hlo_num_dot_planes *pl,             \
                                                                 bool may_skip, float *const *acc,         \
                                                                 const int64_t *a0, int64_t b0,            \
                                                                 int64_t len) {                            \
    if (may_skip && quad_no_tiny(acc))                                                                     \
      quad_lanes(pl, PREC, false, acc, a0, b0, len);                                                       \
    else                                                                                                   \
      quad_lanes(pl, PREC, true, acc, a0, b0, len);                                                        \
  }
DEF_QUAD(default, HLO_NUM_PREC_DEFAULT)
DEF_QUAD(high, HLO_NUM_PREC_HIGH)
DEF_QUAD(highest, HLO_NUM_PREC_HIGHEST)

static void quad32(const hlo_num_dot_planes *pl, float *const *acc, const int64_t *a0, int64_t b0, int64_t len) {
  bool may_skip = parts_allow_nf(pl);
  switch (pl->prec) {
  case HLO_NUM_PREC_HIGH: quad32_high(pl, may_skip, acc, a0, b0, len); break;
  case HLO_NUM_PREC_HIGHEST: quad32_highest(pl, may_skip, acc, a0, b0, len); break;
  default: quad32_default(pl, may_skip, acc, a0, b0, len); break;
  }
}

/* Whether the processor (and the system, for the wider registers) runs
 * the kernels above: the test the target_clones resolver makes. */
static bool quad_ok(void) { return __builtin_cpu_supports("avx512f"); }
#else
#define HAVE_QUAD 0
#endif

void hlo_num_dot_f32_row_pair(const hlo_num_dot_planes *pl, float *acc0, float *acc1, int64_t m, int64_t a00,
                              int64_t a01, int64_t b0, int64_t len) {
  const int64_t a0[2] = {a00, a01};
  bool nf = no_subnormals(pl, acc0, m) && no_subnormals(pl, acc1, m);
  int64_t q = 0;
  for (; q + 32 <= m; q += 32) {
    float *const acc[2] = {acc0 + q, acc1 + q};
    pair32(pl, nf, acc, a0, b0 + q, len);
  }
  for (; q + 8 <= m; q += 8) {
    float *const acc[2] = {acc0 + q, acc1 + q};
    pair8(pl, nf, acc, a0, b0 + q, len);
  }
  /* fewer than 8 lanes left: each row on its own, gathered */
  if (q < m) {
    hlo_num_dot_f32_lanes(pl, acc0 + q, m - q, a00, 0, b0 + q, 1, len);
    hlo_num_dot_f32_lanes(pl, acc1 + q, m - q, a01, 0, b0 + q, 1, len);
  }
}

/* Blocks of 32 and 8 lanes, then the rest of each row on its own;
 * within a block, the rows four at a time where quad_ok, then two at a
 * time, over ROWS_R positions, then the next positions.  A lane's sum
 * goes through memory between two calls, which changes no bit, and each
 * call's flushes are its own lanes' choice (see no_subnormals), which
 * changes none either.  ROWS_R positions of a 32-lane block of the rhs
 * planes are 16 KiB, all parts together.
 *
 * With four rows or more, that block is first copied side by side into
 * tile, 32 floats a position, and the kernels read it there: in the
 * planes its positions are a plane row apart, and when that is a multiple
 * of a large power of two (a 512-wide rhs: 2 KiB) they all fall into a
 * few sets of the first-level cache and evict one another before the next
 * rows come back to them.  The copy holds the same parts (so exp_min
 * still bounds them) and reading a value from it changes no product. */
void hlo_num_dot_f32_rows(const hlo_num_dot_planes *pl, float *acc, int64_t nrows, int64_t m, const int64_t *a0,
                          int64_t b0, int64_t len) {
  enum { ROWS_R = 128 };
  /* on the stack: sweeps run candidates on several threads */
  float tile[ROWS_R * 32] __attribute__((aligned(64)));
  int np = hlo_num_dot_parts(pl->prec);
  int64_t rb = ROWS_R / np, q = 0;
  bool quad = HAVE_QUAD && nrows >= 4 && quad_ok();
  for (int w = 32; w >= 8; w -= 24)
    for (; q + w <= m; q += w)
      for (int64_t r0 = 0; r0 < len; r0 += rb) {
        int64_t n = len - r0 < rb ? len - r0 : rb, ra = r0 * pl->sa, rr = b0 + q + r0 * pl->sb;
        hlo_num_dot_planes bp = *pl;
        if (w == 32 && nrows >= 4) {
          for (int p = 0; p < np; p++) {
            float *t = tile + p * rb * 32;
            for (int64_t r = 0; r < n; r++)
              memcpy(t + r * 32, pl->b[p] + rr + r * pl->sb, 32 * sizeof(float));
            bp.b[p] = t;
          }
          bp.sb = 32;
          rr = 0;
        }
        int64_t i = 0;
#if HAVE_QUAD
        for (; w == 32 && quad && i + 4 <= nrows; i += 4) {
          float *const ac[4] = {acc + i * m + q, acc + (i + 1) * m + q, acc + (i + 2) * m + q, acc + (i + 3) * m + q};
          const int64_t a[4] = {a0[i] + ra, a0[i + 1] + ra, a0[i + 2] + ra, a0[i + 3] + ra};
          quad32(&bp, ac, a, rr, n);
        }
#endif
        for (; i < nrows; i += 2) {
          float *const ac[2] = {acc + i * m + q, i + 1 < nrows ? acc + (i + 1) * m + q : NULL};
          if (i + 1 < nrows) {
            const int64_t a[2] = {a0[i] + ra, a0[i + 1] + ra};
            const float *const cac[2] = {ac[0], ac[1]};
            bool nf = rows_no_subnormals(&bp, cac, 2, w);
            if (w == 32)
              pair32(&bp, nf, ac, a, rr, n);
            else
              pair8(&bp, nf, ac, a, rr, n);
          } else if (w == 32) {
            row32(&bp, no_subnormals(&bp, ac[0], w), ac[0], a0[i] + ra, rr, n);
          } else {
            row8(&bp, no_subnormals(&bp, ac[0], w), ac[0], a0[i] + ra, rr, n);
          }
        }
      }
  for (int64_t i = 0; q < m && i < nrows; i++)
    hlo_num_dot_f32_lanes(pl, acc + i * m + q, m - q, a0[i], 0, b0 + q, 1, len);
}

/* g <= 32 lanes that share their lhs line, lane j's rhs line starting at
 * b0 + j * db: the rhs lines are copied side by side into a tile of
 * TILE_R positions and 8 * ceil(g / 8) columns, the columns past g
 * zero, which the row kernels then read as a row; the sums of those
 * columns go to scratch and are dropped.  Each lane still takes its own
 * products in order, so the bits are the scalar loop's; the copy replaces
 * an element-by-element fill of every vector at every step (a transposed
 * rhs, or the few lanes a row leaves past its last 8). */
static void tile_lanes(const hlo_num_dot_planes *pl, bool nf, float *acc, int64_t g, int64_t a0, int64_t b0,
                       int64_t db, int64_t len) {
  enum { TILE_R = 64 };
  float tile[3][TILE_R * 32], s[32];
  int np = hlo_num_dot_parts(pl->prec);
  int64_t w = (g + 7) / 8 * 8;
  hlo_num_dot_planes tp = {.a = {pl->a[0], pl->a[1], pl->a[2]},
                           .sa = pl->sa,
                           .sb = w,
                           .prec = pl->prec,
                           .exp_min = {pl->exp_min[0], pl->exp_min[1]}};
  for (int p = 0; p < 3; p++)
    tp.b[p] = tile[p];
  memcpy(s, acc, sizeof(float) * (size_t)g);
  memset(s + g, 0, sizeof(float) * (size_t)(w - g));
  for (int64_t r0 = 0; r0 < len; r0 += TILE_R) {
    int64_t n = len - r0 < TILE_R ? len - r0 : TILE_R;
    for (int p = 0; p < np; p++) {
      for (int64_t j = 0; j < g; j++) {
        const float *src = pl->b[p] + b0 + j * db + r0 * pl->sb;
        for (int64_t r = 0; r < n; r++)
          tile[p][r * w + j] = src[r * pl->sb];
      }
      for (int64_t r = 0; g < w && r < n; r++)
        memset(&tile[p][r * w + g], 0, sizeof(float) * (size_t)(w - g));
    }
    if (w == 32)
      row32(&tp, nf, s, a0 + r0 * pl->sa, 0, n);
    else
      for (int64_t v = 0; v < w; v += 8)
        row8(&tp, nf, s + v, a0 + r0 * pl->sa, v, n);
  }
  memcpy(acc, s, sizeof(float) * (size_t)g);
}

void hlo_num_dot_f32_lanes(const hlo_num_dot_planes *pl, float *acc, int64_t m, int64_t a0, int64_t da, int64_t b0, int64_t db,
                       int64_t len) {
  bool nf = no_subnormals(pl, acc, m);
  int64_t q = 0;
  if (da == 0 && db == 1) {
    for (; q + 32 <= m; q += 32)
      row32(pl, nf, acc + q, a0, b0 + q, len);
    for (; q + 8 <= m; q += 8)
      row8(pl, nf, acc + q, a0, b0 + q, len);
  }
  /* Lanes that share their lhs line but not a row of the rhs (a result
   * row whose rhs lines are far apart, a transposed rhs), 32 at a time,
   * and the few a row leaves: through a tile. */
  for (; da == 0 && q < m; q += 32) {
    int64_t g = m - q < 32 ? m - q : 32;
    if (g < 2) { /* one lane: the copy would not pay */
      acc[q] = hlo_num_dot_f32_line(pl, acc[q], a0, b0 + q * db, len);
      continue;
    }
    tile_lanes(pl, nf, acc + q, g, a0, b0 + q * db, db, len);
  }
  /* Other steps 32 lanes at a time; spare lanes repeat the group's first
   * line into a scratch sum. */
  for (; q < m; q += 32) {
    int64_t g = m - q < 32 ? m - q : 32;
    int64_t oa[32], ob[32];
    float s[32];
    for (int64_t j = 0; j < 32; j++) {
      int64_t l = q + (j < g ? j : 0);
      oa[j] = a0 + l * da;
      ob[j] = b0 + l * db;
      s[j] = acc[l];
    }
    if (g < 4) { /* too few lanes to pay for the gather */
      for (int64_t j = 0; j < g; j++)
        acc[q + j] = hlo_num_dot_f32_line(pl, acc[q + j], oa[j], ob[j], len);
      continue;
    }
    gather32(pl, nf, s, oa, ob, len);
    memcpy(acc + q, s, sizeof(float) * (size_t)g);
  }
}

#else /* no vector extensions: the scalar loop per lane */

bool hlo_num_dot_split_block(const float *x, int64_t n, hlo_num_precision prec, float *const parts[3], int *exp_min) {
  *exp_min = 255;
  return split_scalar(x, 0, n, prec, parts, exp_min);
}

void hlo_num_dot_f32_row_pair(const hlo_num_dot_planes *pl, float *acc0, float *acc1, int64_t m, int64_t a00,
                              int64_t a01, int64_t b0, int64_t len) {
  hlo_num_dot_f32_lanes(pl, acc0, m, a00, 0, b0, 1, len);
  hlo_num_dot_f32_lanes(pl, acc1, m, a01, 0, b0, 1, len);
}

void hlo_num_dot_f32_rows(const hlo_num_dot_planes *pl, float *acc, int64_t nrows, int64_t m, const int64_t *a0,
                          int64_t b0, int64_t len) {
  for (int64_t i = 0; i < nrows; i++)
    hlo_num_dot_f32_lanes(pl, acc + i * m, m, a0[i], 0, b0, 1, len);
}

void hlo_num_dot_f32_lanes(const hlo_num_dot_planes *pl, float *acc, int64_t m, int64_t a0, int64_t da, int64_t b0, int64_t db,
                       int64_t len) {
  for (int64_t q = 0; q < m; q++)
    acc[q] = hlo_num_dot_f32_line(pl, acc[q], a0 + q * da, b0 + q * db, len);
}

#endif
