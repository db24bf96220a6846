/* dev_exec_fold.c — f32 reduction folds, many lines side by side (see
 * dev_exec_fold.h). */
#include "dev_exec_fold.h"

#include <math.h>
#include <string.h>

#include "hlo/hlo_minmax.h"
#include "hlo/hlo_clones.h"
#include "hlo/hlo_v8.h"

/* elements of each slot line narrowed and folded at a time (slot_rows8) */
#define SLOT_CHUNK 64

static inline float quiet(float a) {
  uint32_t b;
  memcpy(&b, &a, sizeof b);
  b |= 0x00400000u;
  memcpy(&a, &b, sizeof a);
  return a;
}

static inline float f_add(float a, float b) { return a != a ? quiet(a) : a + b; }
static inline float f_mul(float a, float b) { return a != a ? quiet(a) : a * b; }

float dev_fold_f32_step(hlo_opcode op, float acc, float x) {
  switch (op) {
  case HLO_OP_ADD: return f_add(acc, x);
  case HLO_OP_MULTIPLY: return f_mul(acc, x);
  case HLO_OP_MAXIMUM: return hlo_max_f32(acc, x);
  case HLO_OP_MINIMUM: return hlo_min_f32(acc, x);
  default: return acc;
  }
}

/* ---- scalar: 8 chains in named registers ------------------------------------ */

#define CHAINS8(OP, LOAD)                                                          \
  do {                                                                             \
    float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];                              \
    float a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];                              \
    for (int64_t i = 0; i < len; i++) {                                            \
      int64_t o = i * s;                                                           \
      a0 = OP(a0, LOAD(b[0] + o));                                                 \
      a1 = OP(a1, LOAD(b[1] + o));                                                 \
      a2 = OP(a2, LOAD(b[2] + o));                                                 \
      a3 = OP(a3, LOAD(b[3] + o));                                                 \
      a4 = OP(a4, LOAD(b[4] + o));                                                 \
      a5 = OP(a5, LOAD(b[5] + o));                                                 \
      a6 = OP(a6, LOAD(b[6] + o));                                                 \
      a7 = OP(a7, LOAD(b[7] + o));                                                 \
    }                                                                              \
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;                                    \
    a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;                                    \
  } while (0)

#define BY_OP(LOAD)                                                                \
  do {                                                                             \
    switch (op) {                                                                  \
    case HLO_OP_ADD: CHAINS8(f_add, LOAD); break;                                  \
    case HLO_OP_MULTIPLY: CHAINS8(f_mul, LOAD); break;                             \
    case HLO_OP_MAXIMUM: CHAINS8(hlo_max_f32, LOAD); break;                              \
    case HLO_OP_MINIMUM: CHAINS8(hlo_min_f32, LOAD); break;                              \
    default: break;                                                                \
    }                                                                              \
  } while (0)

#define LOAD_F(i) (x[i])
#define LOAD_SLOT(i) ((float)x[i].f)

/* Spare lanes (q >= m) repeat line 0 into a scratch accumulator. */
static void pad8(float *a, int64_t *b, const float *acc, int m, const int64_t *base) {
  for (int q = 0; q < 8; q++) {
    a[q] = acc[q < m ? q : 0];
    b[q] = base[q < m ? q : 0];
  }
}

void dev_fold_f32_lines(hlo_opcode op, float *acc, int m, const float *x, const int64_t *base, int64_t s,
                        int64_t len) {
  float a[8];
  int64_t b[8];
  pad8(a, b, acc, m, base);
  BY_OP(LOAD_F);
  memcpy(acc, a, sizeof(float) * (size_t)m);
}

static void slot_lines_scalar(hlo_opcode op, float *acc, int m, const dev_slot *x, const int64_t *base, int64_t s,
                              int64_t len) {
  float a[8];
  int64_t b[8];
  pad8(a, b, acc, m, base);
  BY_OP(LOAD_SLOT);
  memcpy(acc, a, sizeof(float) * (size_t)m);
}

/* ---- vector: 8 lines in the lanes of one register --------------------------
 * 8 consecutive elements of 8 lines are loaded and transposed, and each
 * column is applied to the lanes in turn, so lane q sees line q's elements
 * in order.  Two groups of 8 lines are in flight to overlap their chains.
 * The vector max/min pick the very operand hlo_max_f32/hlo_min_f32 return;
 * add and multiply run plain, and a line that ends in NaN is folded again
 * with f_add/f_mul, which carry a NaN accumulator explicitly.  The lanes
 * and the rules: hlo/hlo_v8.h. */

#if defined(__GNUC__) && !defined(__clang__)
/* Two 4-float halves into one register: lines a and b side by side (a
 * 128-bit load and an insert). */
typedef float v4f __attribute__((vector_size(16)));
#define LOAD_HALVES(a, b)                                                                       \
  ({                                                                                            \
    v4f lo_, hi_;                                                                               \
    memcpy(&lo_, (a), 16);                                                                      \
    memcpy(&hi_, (b), 16);                                                                      \
    __builtin_shufflevector(lo_, hi_, 0, 1, 2, 3, 4, 5, 6, 7);                                  \
  })

/* acc = OP(acc, column j) for the 4 columns of the 8x4 block at p (rows L
 * apart).  Lines q and q + 4 are loaded into the two halves of one
 * register, so a 4x4 transpose within the halves (8 in-lane shuffles)
 * leaves column j of the 8 lines in one register, line q in lane q: no
 * shuffle crosses the halves. */
#define STEP4(VOP, acc, p, L)                                                                   \
  do {                                                                                          \
    hlo_v8f r0 = LOAD_HALVES((p), (p) + 4 * (L)), r1 = LOAD_HALVES((p) + (L), (p) + 5 * (L));      \
    hlo_v8f r2 = LOAD_HALVES((p) + 2 * (L), (p) + 6 * (L)), r3 = LOAD_HALVES((p) + 3 * (L), (p) + 7 * (L)); \
    hlo_v8f t0 = HLO_V8_SHUF(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13), t1 = HLO_V8_SHUF(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15); \
    hlo_v8f t2 = HLO_V8_SHUF(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13), t3 = HLO_V8_SHUF(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15); \
    acc = VOP(acc, HLO_V8_SHUF(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13));                                     \
    acc = VOP(acc, HLO_V8_SHUF(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15));                                   \
    acc = VOP(acc, HLO_V8_SHUF(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13));                                     \
    acc = VOP(acc, HLO_V8_SHUF(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15));                                   \
  } while (0)

/* The same for the 8 columns of the 8x8 block at p. */
#define STEP8(VOP, acc, p, L)                                                                   \
  do {                                                                                          \
    STEP4(VOP, acc, (p), L);                                                                    \
    STEP4(VOP, acc, (p) + 4, L);                                                                \
  } while (0)

/* 16 lines (two registers) over the first len8 = len rounded down to 8
 * elements; returns len8. */
#define DEF_ROWS16(NAME, VOP)                                                                   \
  HLO_CLONES static int64_t NAME(float *acc, const float *x, int64_t L, int64_t len) {         \
    hlo_v8f a, b;                                                                                   \
    memcpy(&a, acc, 32);                                                                        \
    memcpy(&b, acc + 8, 32);                                                                    \
    const float *p = x, *q = x + 8 * L;                                                         \
    int64_t k = 0;                                                                              \
    for (; k + 8 <= len; k += 8) {                                                              \
      STEP8(VOP, a, p + k, L);                                                                  \
      STEP8(VOP, b, q + k, L);                                                                  \
    }                                                                                           \
    memcpy(acc, &a, 32);                                                                        \
    memcpy(acc + 8, &b, 32);                                                                    \
    return k;                                                                                   \
  }
/* add and multiply without the NaN select: NaN is absorbing for both, so
 * a lane that ends without NaN never met one and its sums are HLO_V8_ADD's;
 * a lane that ends in NaN is folded again by the caller (rows16). */
#define V_ADD_PLAIN(A, B) ((A) + (B))
#define V_MUL_PLAIN(A, B) ((A) * (B))
DEF_ROWS16(rows16_add, V_ADD_PLAIN)
DEF_ROWS16(rows16_mul, V_MUL_PLAIN)
DEF_ROWS16(rows16_max, HLO_V8_MAX)
DEF_ROWS16(rows16_min, HLO_V8_MIN)

/* A lane of rows16_add/rows16_mul that ends in NaN: its line again from
 * the accumulator it started with (a0), the scalar way, whose NaN rules
 * (the accumulator's NaN first) the plain vector op need not follow. */
static void redo_nan_lanes(hlo_opcode op, float *acc, const float *a0, const float *x, int64_t L, int64_t done) {
  for (int q = 0; q < 16; q++) {
    if (acc[q] == acc[q])
      continue;
    int64_t base = (int64_t)q * L;
    acc[q] = a0[q];
    dev_fold_f32_lines(op, acc + q, 1, x, &base, 1, done);
  }
}

/* 8 lines (one register) of len (a multiple of 8) columns, L apart; add
 * and multiply with the NaN select, so no lane needs folding again. */
#define DEF_ROWS8(NAME, VOP)                                                                    \
  HLO_CLONES static void NAME(float *acc, const float *x, int64_t L, int64_t len) {            \
    hlo_v8f a;                                                                                      \
    memcpy(&a, acc, 32);                                                                        \
    for (int64_t k = 0; k + 8 <= len; k += 8)                                                   \
      STEP8(VOP, a, x + k, L);                                                                  \
    memcpy(acc, &a, 32);                                                                        \
  }
DEF_ROWS8(rows8_add, HLO_V8_ADD)
DEF_ROWS8(rows8_mul, HLO_V8_MUL)
DEF_ROWS8(rows8_max, HLO_V8_MAX)
DEF_ROWS8(rows8_min, HLO_V8_MIN)

/* Slot lines a chunk at a time: SLOT_CHUNK elements of each of 8 lines
 * narrowed to f32 (the cast LOAD_SLOT makes) into a
 * scratch block, folded in vector lanes by rows8; returns how many
 * elements of each line were folded (a multiple of SLOT_CHUNK). */
static int64_t slot_rows8(hlo_opcode op, float *a, const dev_slot *x, const int64_t *b, int64_t len) {
  float buf[8 * SLOT_CHUNK];
  int64_t c = 0;
  for (; c + SLOT_CHUNK <= len; c += SLOT_CHUNK) {
    for (int q = 0; q < 8; q++) {
      const dev_slot *xq = x + b[q] + c;
      float *bq = buf + q * SLOT_CHUNK;
      for (int i = 0; i < SLOT_CHUNK; i++) /* a known count: vectorised */
        bq[i] = (float)xq[i].f;
    }
    switch (op) {
    case HLO_OP_ADD: rows8_add(a, buf, SLOT_CHUNK, SLOT_CHUNK); break;
    case HLO_OP_MULTIPLY: rows8_mul(a, buf, SLOT_CHUNK, SLOT_CHUNK); break;
    case HLO_OP_MAXIMUM: rows8_max(a, buf, SLOT_CHUNK, SLOT_CHUNK); break;
    case HLO_OP_MINIMUM: rows8_min(a, buf, SLOT_CHUNK, SLOT_CHUNK); break;
    default: return c;
    }
  }
  return c;
}

static int64_t rows16(hlo_opcode op, float *acc, const float *x, int64_t L, int64_t len) {
  float a0[16];
  int64_t done;
  switch (op) {
  case HLO_OP_ADD:
    memcpy(a0, acc, sizeof a0);
    done = rows16_add(acc, x, L, len);
    redo_nan_lanes(op, acc, a0, x, L, done);
    return done;
  case HLO_OP_MULTIPLY:
    memcpy(a0, acc, sizeof a0);
    done = rows16_mul(acc, x, L, len);
    redo_nan_lanes(op, acc, a0, x, L, done);
    return done;
  case HLO_OP_MAXIMUM: return rows16_max(acc, x, L, len);
  case HLO_OP_MINIMUM: return rows16_min(acc, x, L, len);
  default: return 0;
  }
}
#else
static int64_t rows16(hlo_opcode op, float *acc, const float *x, int64_t L, int64_t len) {
  (void)op, (void)acc, (void)x, (void)L, (void)len;
  return 0;
}
static int64_t slot_rows8(hlo_opcode op, float *a, const dev_slot *x, const int64_t *b, int64_t len) {
  (void)op, (void)a, (void)x, (void)b, (void)len;
  return 0;
}
#endif

/* Contiguous slot lines (s == 1) go through slot_rows8 a chunk at a time,
 * the rest of each line (and strided lines) through the scalar chains:
 * either way each line in order from its accumulator. */
void dev_fold_f32_slot_lines(hlo_opcode op, float *acc, int m, const dev_slot *x, const int64_t *base, int64_t s,
                             int64_t len) {
  int64_t done = 0;
  if (s == 1 && len >= SLOT_CHUNK) {
    float a[8];
    int64_t b[8];
    pad8(a, b, acc, m, base);
    done = slot_rows8(op, a, x, b, len);
    memcpy(acc, a, sizeof(float) * (size_t)m);
    for (int q = 0; q < 8; q++)
      b[q] += done;
    slot_lines_scalar(op, acc, m, x, b, 1, len - done);
    return;
  }
  slot_lines_scalar(op, acc, m, x, base, s, len);
}

void dev_fold_f32_rows(hlo_opcode op, float *acc, int m, const float *x, int64_t L, int64_t len) {
  int q = 0;
  int64_t base[8];
  for (; q + 16 <= m && len >= 8; q += 16) {
    const float *xq = x + (int64_t)q * L;
    int64_t done = rows16(op, acc + q, xq, L, len);
    /* the columns past the last multiple of 8, line by line in order */
    for (int h = 0; h < 16; h += 8) {
      for (int j = 0; j < 8; j++)
        base[j] = (int64_t)(h + j) * L + done;
      dev_fold_f32_lines(op, acc + q + h, 8, xq, base, 1, len - done);
    }
  }
  for (; q < m; q += 8) {
    int g = m - q < 8 ? m - q : 8;
    for (int j = 0; j < g; j++)
      base[j] = (int64_t)(q + j) * L;
    dev_fold_f32_lines(op, acc + q, g, x, base, 1, len);
  }
}
