/* hlo_num_dot.c — the f32 dot inner loop, lanes side by side (see
 * hlo_num_dot.h). */
/* Nothing here may be contracted, each lane being the scalar loop: the
 * whole build has -ffp-contract=off (m4/tune_flags.m4). */

#include "hlo_num_dot.h"

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

#if defined(__GNUC__) && !defined(__clang__)

#if defined(__x86_64__) && defined(__linux__)
#define DOT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DOT_CLONES
#endif
#define INLINE static inline __attribute__((always_inline))
/* The helpers below are always inlined, so how a 32-byte vector would be
 * passed between functions never matters. */
#pragma GCC diagnostic ignored "-Wpsabi"
/* GCC 12 takes the broadcast {a, a, ...} into an initialised array for a
 * read of it ("may be used uninitialized"). */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* hlo_num_ftz_f32 on 8 lanes: a zero or subnormal keeps only its sign. */
INLINE v8f v_ftz(v8f x) {
  v8i b = (v8i)x;
  v8i tiny = (b & 0x7F800000) == 0;
  return (v8f)(b & (~tiny | (v8i){INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                                  INT32_MIN}));
}

/* hlo_num_dot_parts_product on 8 lanes, term for term. */
INLINE v8f v_prod(hlo_num_precision p, const v8f *x, const v8f *y) {
  v8f t;
  switch (p) {
  case HLO_NUM_PREC_HIGH:
    t = x[1] * y[0];
    t = t + x[0] * y[1];
    t = t + x[0] * y[0];
    break;
  case HLO_NUM_PREC_HIGHEST:
    t = x[2] * y[0];
    t = t + x[0] * y[2];
    t = t + x[1] * y[1];
    t = t + x[1] * y[0];
    t = t + x[0] * y[1];
    t = t + x[0] * y[0];
    break;
  default:
    t = x[0] * y[0];
    break;
  }
  return v_ftz(t);
}

/* NV * 8 lanes of one result row: the lhs element is shared (broadcast),
 * the rhs elements are contiguous.  NV independent sums hide the add
 * latency. */
INLINE void row_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, int nv, float *acc, int64_t a0, int64_t b0,
                      int64_t len) {
  v8f s[4];
  memcpy(s, acc, sizeof(v8f) * (size_t)nv);
  int np = hlo_num_dot_parts(prec);
  const int64_t sa = pl->sa, sb = pl->sb;
  for (int64_t r = 0; r < len; r++) {
    v8f x[3], y[3];
    for (int p = 0; p < np; p++) {
      float a = pl->a[p][a0 + r * sa];
      x[p] = (v8f){a, a, a, a, a, a, a, a};
    }
    for (int v = 0; v < nv; v++) {
      for (int p = 0; p < np; p++)
        memcpy(&y[p], pl->b[p] + b0 + r * sb + 8 * v, sizeof y[p]);
      s[v] = v_ftz(s[v] + v_prod(prec, x, y));
    }
  }
  memcpy(acc, s, sizeof(v8f) * (size_t)nv);
}

/* 32 lanes at arbitrary element offsets (oa[q], ob[q]), loaded one by one. */
INLINE void gather_lanes(const hlo_num_dot_planes *pl, hlo_num_precision prec, float *acc, const int64_t *oa,
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
      s[v] = v_ftz(s[v] + v_prod(prec, x, y));
    }
  }
  memcpy(acc, s, sizeof s);
}

#define DEF_PREC(SUFFIX, PREC)                                                                              \
  DOT_CLONES static void row32_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0,      \
                                        int64_t len) {                                                     \
    row_lanes(pl, PREC, 4, acc, a0, b0, len);                                                              \
  }                                                                                                        \
  DOT_CLONES static void row8_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0,       \
                                       int64_t len) {                                                      \
    row_lanes(pl, PREC, 1, acc, a0, b0, len);                                                              \
  }                                                                                                        \
  DOT_CLONES static void gather32_##SUFFIX(const hlo_num_dot_planes *pl, float *acc, const int64_t *oa,        \
                                           const int64_t *ob, int64_t len) {                               \
    gather_lanes(pl, PREC, acc, oa, ob, len);                                                              \
  }
DEF_PREC(default, HLO_NUM_PREC_DEFAULT)
DEF_PREC(high, HLO_NUM_PREC_HIGH)
DEF_PREC(highest, HLO_NUM_PREC_HIGHEST)

static void row32(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0, int64_t len) {
  switch (pl->prec) {
  case HLO_NUM_PREC_HIGH: row32_high(pl, acc, a0, b0, len); break;
  case HLO_NUM_PREC_HIGHEST: row32_highest(pl, acc, a0, b0, len); break;
  default: row32_default(pl, acc, a0, b0, len); break;
  }
}

static void row8(const hlo_num_dot_planes *pl, float *acc, int64_t a0, int64_t b0, int64_t len) {
  switch (pl->prec) {
  case HLO_NUM_PREC_HIGH: row8_high(pl, acc, a0, b0, len); break;
  case HLO_NUM_PREC_HIGHEST: row8_highest(pl, acc, a0, b0, len); break;
  default: row8_default(pl, acc, a0, b0, len); break;
  }
}

static void gather32(const hlo_num_dot_planes *pl, float *acc, const int64_t *oa, const int64_t *ob, int64_t len) {
  switch (pl->prec) {
  case HLO_NUM_PREC_HIGH: gather32_high(pl, acc, oa, ob, len); break;
  case HLO_NUM_PREC_HIGHEST: gather32_highest(pl, acc, oa, ob, len); break;
  default: gather32_default(pl, acc, oa, ob, len); break;
  }
}

void hlo_num_dot_f32_lanes(const hlo_num_dot_planes *pl, float *acc, int64_t m, int64_t a0, int64_t da, int64_t b0, int64_t db,
                       int64_t len) {
  int64_t q = 0;
  if (da == 0 && db == 1) {
    for (; q + 32 <= m; q += 32)
      row32(pl, acc + q, a0, b0 + q, len);
    for (; q + 8 <= m; q += 8)
      row8(pl, acc + q, a0, b0 + q, len);
  }
  /* Lanes that share their lhs line but not a row of the rhs (a result
   * row whose rhs lines are far apart, a transposed rhs): 32 lanes at a
   * time, the rhs lines are copied side by side into a tile of TILE_R
   * positions, which row32 then reads as a row.  Each lane still takes its
   * own products in order, so the bits are the gather's below; the copy
   * only replaces the element-by-element vector fill of every step. */
  if (da == 0 && db != 1) {
    enum { TILE_R = 64 };
    float tile[3][TILE_R * 32];
    int np = hlo_num_dot_parts(pl->prec);
    hlo_num_dot_planes tp = {.a = {pl->a[0], pl->a[1], pl->a[2]}, .sa = pl->sa, .sb = 32, .prec = pl->prec};
    for (int p = 0; p < 3; p++)
      tp.b[p] = tile[p];
    for (; q + 32 <= m; q += 32)
      for (int64_t r0 = 0; r0 < len; r0 += TILE_R) {
        int64_t n = len - r0 < TILE_R ? len - r0 : TILE_R;
        for (int p = 0; p < np; p++)
          for (int64_t j = 0; j < 32; j++) {
            const float *src = pl->b[p] + b0 + (q + j) * db + r0 * pl->sb;
            for (int64_t r = 0; r < n; r++)
              tile[p][r * 32 + j] = src[r * pl->sb];
          }
        row32(&tp, acc + q, a0 + r0 * pl->sa, 0, n);
      }
  }
  /* The rest (or everything, for other steps) 32 lanes at a time; spare
   * lanes repeat the group's first line into a scratch sum. */
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
    gather32(pl, s, oa, ob, len);
    memcpy(acc + q, s, sizeof(float) * (size_t)g);
  }
}

#else /* no vector extensions: the scalar loop per lane */

void hlo_num_dot_f32_lanes(const hlo_num_dot_planes *pl, float *acc, int64_t m, int64_t a0, int64_t da, int64_t b0, int64_t db,
                       int64_t len) {
  for (int64_t q = 0; q < m; q++)
    acc[q] = hlo_num_dot_f32_line(pl, acc[q], a0 + q * da, b0 + q * db, len);
}

#endif
