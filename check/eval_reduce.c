/* eval_reduce.c — reduce, reduce-window and map for the reference evaluator.
 *
 * Order of accumulation (the reference's definition, relied on by tests and
 * by the tolerance policy):
 *   reduce         for each output element the accumulator starts at the
 *                  init value and takes the reduced elements one at a time in
 *                  row-major order of the reduced dimensions (lowest dimension
 *                  number slowest): acc = f(acc, x).
 *   reduce-window  for each output element acc starts at init and takes the
 *                  window positions in row-major order of the window.
 *                  Positions that fall into padding or into the holes of base
 *                  dilation are skipped (XLA's HloEvaluator does the same), so
 *                  the init value is applied exactly once.
 *   map            f(a[i], b[i], ...) per element.
 * Each step applies the reducer as the computation says, so it rounds to
 * the reducer's result type: a bf16 add rounds every partial sum to bf16
 * (computed in f32 and rounded once; f32 has more than 2p+2 bits for bf16
 * and f16, so this equals a correctly rounded bf16 add).  Integer adds and
 * multiplies wrap.  maximum/minimum propagate NaN; between equal values
 * (+0 and -0 included) the accumulator is kept.  pred add is or and pred
 * multiply is and (what C++ bool arithmetic gives in XLA's evaluator).
 *
 * Fast paths: when to_apply is a plain add/multiply/maximum/minimum/and/or/
 * xor of its two parameters (hlo_simple_reducer) and the element type has a
 * kernel, the data is read in place (or converted once to a compute array:
 * f32 for bf16/f16, 64-bit for integers, whose wrap-around commutes with
 * the final narrowing) and folded by one loop per (type, op).  Any other
 * reducer made of scalar elementwise ops (an argmax's compare/select
 * reducer over (value, index) pairs, for one) is compiled once into a lane
 * program (eval_reduce_prog.h) that folds CHK_RPROG_LANES output elements
 * side by side, each in the order above (map: CHK_RPROG_LANES elements per
 * run); what remains (nested calls, type mismatches the per-element path
 * reports) calls the computation per element through chk_call: slow but
 * exact.
 *
 * Parallelism never changes results: threads split output elements, and each
 * output element is folded by one thread in the order above.
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "eval_internal.h"
#include "eval_reduce_prog.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"
#include "hlo/hlo_v8.h"
#include "hlo/hlo_clones.h"

/* ---- scalar operations, one per (compute type, op) ------------------------ */

static inline float rbf16(float x) { return hlo_bf16_to_f32(hlo_f32_to_bf16(x)); }
static inline float rf16(float x) { return hlo_f16_to_f32(hlo_f32_to_f16(x)); }

static inline float f32_add(float a, float b) { return a + b; }
static inline float f32_mul(float a, float b) { return a * b; }
static inline float bf_add(float a, float b) { return rbf16(a + b); }
static inline float bf_mul(float a, float b) { return rbf16(a * b); }
static inline float h_add(float a, float b) { return rf16(a + b); }
static inline float h_mul(float a, float b) { return rf16(a * b); }
static inline float f32_max(float a, float b) { return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a; }
static inline float f32_min(float a, float b) { return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a; }

static inline double f64_add(double a, double b) { return a + b; }
static inline double f64_mul(double a, double b) { return a * b; }
static inline double f64_max(double a, double b) { return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a; }
static inline double f64_min(double a, double b) { return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a; }

/* Signed arithmetic goes through uint64_t so overflow wraps instead of
 * being undefined; the narrowing at the end keeps the low bits, which is
 * what accumulating in the narrow type would have given. */
static inline int64_t s_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t s_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t s_max(int64_t a, int64_t b) { return b > a ? b : a; }
static inline int64_t s_min(int64_t a, int64_t b) { return b < a ? b : a; }
static inline int64_t s_and(int64_t a, int64_t b) { return a & b; }
static inline int64_t s_or(int64_t a, int64_t b) { return a | b; }
static inline int64_t s_xor(int64_t a, int64_t b) { return a ^ b; }

static inline uint64_t u_add(uint64_t a, uint64_t b) { return a + b; }
static inline uint64_t u_mul(uint64_t a, uint64_t b) { return a * b; }
static inline uint64_t u_max(uint64_t a, uint64_t b) { return b > a ? b : a; }
static inline uint64_t u_min(uint64_t a, uint64_t b) { return b < a ? b : a; }
static inline uint64_t u_and(uint64_t a, uint64_t b) { return a & b; }
static inline uint64_t u_or(uint64_t a, uint64_t b) { return a | b; }
static inline uint64_t u_xor(uint64_t a, uint64_t b) { return a ^ b; }

/* ---- kernels ---------------------------------------------------------------
 * rows:   out[m] = fold(out[m], x[m*L + 0 .. L-1])        (reduce the last dim)
 * cols:   out[j] = fold(out[j], x[0*L + j], x[1*L + j]...) (reduce an outer dim)
 * gather: out[0] = fold(out[0], x[off[0]], x[off[1]]...)   (one window)
 * rows folds 8 rows side by side: each row is still summed strictly in order,
 * but 8 independent dependency chains keep the adder busy, which is what
 * lets a sequential sum run at memory bandwidth. */

#define ROWS_MIN_PAR (1 << 15) /* elements below which threads cost more */

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

#define DEF_KERNELS(NAME, C, OP, ROWS)                                                 \
  static void NAME##_rows8(void *out_, const void *x_, int64_t M, int64_t L) {         \
    C *out = out_;                                                                     \
    const C *x = x_;                                                                   \
    int64_t nb = (M + 7) / 8;                                                          \
    _Pragma("omp parallel for schedule(static) if (M * L >= ROWS_MIN_PAR && nb > 1)")  \
    for (int64_t blk = 0; blk < nb; blk++) {                                           \
      int64_t m0 = blk * 8;                                                            \
      if (m0 + 8 <= M) {                                                               \
        const C *p = x + m0 * L;                                                       \
        C a0 = out[m0], a1 = out[m0 + 1], a2 = out[m0 + 2], a3 = out[m0 + 3];          \
        C a4 = out[m0 + 4], a5 = out[m0 + 5], a6 = out[m0 + 6], a7 = out[m0 + 7];      \
        for (int64_t k = 0; k < L; k++) {                                              \
          a0 = OP(a0, p[k]);                                                           \
          a1 = OP(a1, p[L + k]);                                                       \
          a2 = OP(a2, p[2 * L + k]);                                                   \
          a3 = OP(a3, p[3 * L + k]);                                                   \
          a4 = OP(a4, p[4 * L + k]);                                                   \
          a5 = OP(a5, p[5 * L + k]);                                                   \
          a6 = OP(a6, p[6 * L + k]);                                                   \
          a7 = OP(a7, p[7 * L + k]);                                                   \
        }                                                                              \
        out[m0] = a0, out[m0 + 1] = a1, out[m0 + 2] = a2, out[m0 + 3] = a3;            \
        out[m0 + 4] = a4, out[m0 + 5] = a5, out[m0 + 6] = a6, out[m0 + 7] = a7;        \
      } else {                                                                         \
        for (int64_t m = m0; m < M; m++) {                                             \
          C a = out[m];                                                                \
          for (int64_t k = 0; k < L; k++)                                              \
            a = OP(a, x[m * L + k]);                                                   \
          out[m] = a;                                                                  \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  }                                                                                    \
  static void NAME##_cols(void *out_, const void *x_, int64_t M, int64_t L) {          \
    C *restrict out = out_;                                                            \
    const C *restrict x = x_;                                                          \
    /* one wide column strip per thread, each strip all rows in order */            \
    int64_t w = (L + max_threads() - 1) / max_threads();                               \
    w = w < 64 ? 64 : (w + 15) / 16 * 16;                                              \
    int64_t nb = (L + w - 1) / w;                                                      \
    _Pragma("omp parallel for schedule(static) if (M * L >= ROWS_MIN_PAR && nb > 1)")  \
    for (int64_t b = 0; b < nb; b++) {                                                 \
      int64_t j0 = b * w, j1 = j0 + w < L ? j0 + w : L;                                \
      for (int64_t m = 0; m < M; m++) {                                                \
        const C *restrict p = x + m * L;                                               \
        _Pragma("omp simd")                                                            \
        for (int64_t j = j0; j < j1; j++)                                              \
          out[j] = OP(out[j], p[j]);                                                   \
      }                                                                                \
    }                                                                                  \
  }                                                                                    \
  static void NAME##_gather(void *out_, const void *x_, const int64_t *off, int64_t n) { \
    C *out = out_;                                                                     \
    const C *x = x_;                                                                   \
    C a = *out;                                                                        \
    for (int64_t i = 0; i < n; i++)                                                    \
      a = OP(a, x[off[i]]);                                                            \
    *out = a;                                                                          \
  }                                                                                    \
  static const red_kernel NAME##_k = {NAME##_##ROWS, NAME##_cols, NAME##_gather};

typedef struct red_kernel {
  void (*rows)(void *out, const void *x, int64_t M, int64_t L);
  void (*cols)(void *out, const void *x, int64_t M, int64_t L);
  void (*gather)(void *out, const void *x, const int64_t *off, int64_t n);
} red_kernel;

/* ---- f32 rows, 16 at a time in SIMD lanes --------------------------------
 * For an f32 add/multiply/maximum/minimum reducer over rows of L >= 16, each
 * group of 16 rows is folded with one vector lane per row: 8 consecutive
 * elements of 8 rows are loaded, transposed in registers, and applied to the
 * lanes' accumulators one column after the other.  Lane r therefore does
 * exactly acc_r = OP(acc_r, x[r][k]) for k = 0, 1, ... in order: the same
 * operations as the scalar loop, in the same order, on every row (and the
 * vector max/min select the very operand the scalar f32_max/f32_min return).
 * Two groups of 8 rows are in flight so two dependency chains overlap.  The
 * columns past the last multiple of 8, and rows past the last multiple of 16,
 * go through the scalar code.  The kernels also come in AVX2 and AVX-512
 * builds picked at load time (the same lane operations; no FMA). */

/* The vector lanes and their fold rules: hlo/hlo_v8.h.  The scalar
 * columns after the last multiple of 8 carry a NaN accumulator as
 * HLO_V8_ADD and HLO_V8_MUL do. */
static inline float f32_quiet(float a) {
  uint32_t b;
  memcpy(&b, &a, sizeof b);
  b |= 0x00400000u;
  memcpy(&a, &b, sizeof a);
  return a;
}
static inline float f32_add_acc(float a, float b) { return a != a ? f32_quiet(a) : a + b; }
static inline float f32_mul_acc(float a, float b) { return a != a ? f32_quiet(a) : a * b; }

/* c0..c7 = columns of the 8x8 block r0..r7 (r_i: 8 elements of row i). */
#define V_TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                                        \
  hlo_v8f t0 = HLO_V8_SHUF(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13), t1 = HLO_V8_SHUF(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15); \
  hlo_v8f t2 = HLO_V8_SHUF(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13), t3 = HLO_V8_SHUF(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15); \
  hlo_v8f t4 = HLO_V8_SHUF(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13), t5 = HLO_V8_SHUF(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15); \
  hlo_v8f t6 = HLO_V8_SHUF(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13), t7 = HLO_V8_SHUF(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15); \
  hlo_v8f u0 = HLO_V8_SHUF(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13), u1 = HLO_V8_SHUF(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15); \
  hlo_v8f u2 = HLO_V8_SHUF(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13), u3 = HLO_V8_SHUF(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15); \
  hlo_v8f u4 = HLO_V8_SHUF(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13), u5 = HLO_V8_SHUF(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15); \
  hlo_v8f u6 = HLO_V8_SHUF(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13), u7 = HLO_V8_SHUF(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15); \
  hlo_v8f c0 = HLO_V8_SHUF(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11), c4 = HLO_V8_SHUF(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15); \
  hlo_v8f c1 = HLO_V8_SHUF(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11), c5 = HLO_V8_SHUF(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15); \
  hlo_v8f c2 = HLO_V8_SHUF(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11), c6 = HLO_V8_SHUF(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15); \
  hlo_v8f c3 = HLO_V8_SHUF(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11), c7 = HLO_V8_SHUF(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15)

/* acc = OP(acc, column) for the 8 columns of rows p[0], p[L], ... p[7L] at k. */
#define V_STEP8(VOP, acc, p, L, k)                                                         \
  do {                                                                                     \
    hlo_v8f r0, r1, r2, r3, r4, r5, r6, r7;                                                    \
    memcpy(&r0, (p) + (k), 32);                                                            \
    memcpy(&r1, (p) + (L) + (k), 32);                                                      \
    memcpy(&r2, (p) + 2 * (L) + (k), 32);                                                  \
    memcpy(&r3, (p) + 3 * (L) + (k), 32);                                                  \
    memcpy(&r4, (p) + 4 * (L) + (k), 32);                                                  \
    memcpy(&r5, (p) + 5 * (L) + (k), 32);                                                  \
    memcpy(&r6, (p) + 6 * (L) + (k), 32);                                                  \
    memcpy(&r7, (p) + 7 * (L) + (k), 32);                                                  \
    V_TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7);                                          \
    acc = VOP(acc, c0);                                                                    \
    acc = VOP(acc, c1);                                                                    \
    acc = VOP(acc, c2);                                                                    \
    acc = VOP(acc, c3);                                                                    \
    acc = VOP(acc, c4);                                                                    \
    acc = VOP(acc, c5);                                                                    \
    acc = VOP(acc, c6);                                                                    \
    acc = VOP(acc, c7);                                                                    \
  } while (0)

/* NAME##_rows: rows of 16 in lanes, the rest by NAME##_rows8. */
#define DEF_WIDE_ROWS(NAME, VOP, OP)                                                       \
  HLO_CLONES                                                                           \
  static void NAME##_w16(float *out, const float *x, int64_t L) {                          \
    hlo_v8f a, b;                                                                              \
    memcpy(&a, out, 32);                                                                   \
    memcpy(&b, out + 8, 32);                                                               \
    const float *p = x, *q = x + 8 * L;                                                    \
    int64_t k = 0;                                                                         \
    for (; k + 8 <= L; k += 8) {                                                           \
      V_STEP8(VOP, a, p, L, k);                                                            \
      V_STEP8(VOP, b, q, L, k);                                                            \
    }                                                                                      \
    float t[16];                                                                           \
    memcpy(t, &a, 32);                                                                     \
    memcpy(t + 8, &b, 32);                                                                 \
    for (int r = 0; r < 16; r++)                                                           \
      for (int64_t j = k; j < L; j++)                                                      \
        t[r] = OP(t[r], x[r * L + j]);                                                     \
    memcpy(out, t, sizeof t);                                                              \
  }                                                                                        \
  static void NAME##_rows(void *out_, const void *x_, int64_t M, int64_t L) {              \
    float *out = out_;                                                                     \
    const float *x = x_;                                                                   \
    int64_t nb = L >= 16 ? M / 16 : 0;                                                     \
    /* dynamic: a thread held up by a neighbour on a shared machine leaves its             \
     * groups to the others; each group is still folded by one thread */                  \
    _Pragma("omp parallel for schedule(dynamic, 4) if (nb * 16 * L >= ROWS_MIN_PAR && nb > 1)") \
    for (int64_t g = 0; g < nb; g++)                                                       \
      NAME##_w16(out + g * 16, x + g * 16 * L, L);                                         \
    if (nb * 16 < M)                                                                       \
      NAME##_rows8(out + nb * 16, x + nb * 16 * L, M - nb * 16, L);                        \
  }

static void kf32_add_rows(void *out_, const void *x_, int64_t M, int64_t L);
static void kf32_mul_rows(void *out_, const void *x_, int64_t M, int64_t L);
static void kf32_max_rows(void *out_, const void *x_, int64_t M, int64_t L);
static void kf32_min_rows(void *out_, const void *x_, int64_t M, int64_t L);
DEF_KERNELS(kf32_add, float, f32_add, rows)
DEF_KERNELS(kf32_mul, float, f32_mul, rows)
DEF_KERNELS(kbf_add, float, bf_add, rows8)
DEF_KERNELS(kbf_mul, float, bf_mul, rows8)
DEF_KERNELS(kh_add, float, h_add, rows8)
DEF_KERNELS(kh_mul, float, h_mul, rows8)
DEF_KERNELS(kf32_max, float, f32_max, rows)
DEF_KERNELS(kf32_min, float, f32_min, rows)
DEF_KERNELS(kf64_add, double, f64_add, rows8)
DEF_KERNELS(kf64_mul, double, f64_mul, rows8)
DEF_KERNELS(kf64_max, double, f64_max, rows8)
DEF_KERNELS(kf64_min, double, f64_min, rows8)
DEF_KERNELS(ks_add, int64_t, s_add, rows8)
DEF_KERNELS(ks_mul, int64_t, s_mul, rows8)
DEF_KERNELS(ks_max, int64_t, s_max, rows8)
DEF_KERNELS(ks_min, int64_t, s_min, rows8)
DEF_KERNELS(ks_and, int64_t, s_and, rows8)
DEF_KERNELS(ks_or, int64_t, s_or, rows8)
DEF_KERNELS(ks_xor, int64_t, s_xor, rows8)
DEF_KERNELS(ku_add, uint64_t, u_add, rows8)
DEF_KERNELS(ku_mul, uint64_t, u_mul, rows8)
DEF_KERNELS(ku_max, uint64_t, u_max, rows8)
DEF_KERNELS(ku_min, uint64_t, u_min, rows8)
DEF_KERNELS(ku_and, uint64_t, u_and, rows8)
DEF_KERNELS(ku_or, uint64_t, u_or, rows8)
DEF_KERNELS(ku_xor, uint64_t, u_xor, rows8)

DEF_WIDE_ROWS(kf32_add, HLO_V8_ADD, f32_add_acc)
DEF_WIDE_ROWS(kf32_mul, HLO_V8_MUL, f32_mul_acc)
DEF_WIDE_ROWS(kf32_max, HLO_V8_MAX, f32_max)
DEF_WIDE_ROWS(kf32_min, HLO_V8_MIN, f32_min)

/* A fast path: the kernel and the type it computes in. */
typedef struct fast_red {
  const red_kernel *k;
  hlo_etype ctype; /* HLO_F32, HLO_F64, HLO_S64 or HLO_U64 */
} fast_red;

/* Picks the kernel for reducer op on element type t; 0 when there is one. */
static int pick_kernel(hlo_opcode op, hlo_etype t, fast_red *fr) {
  const red_kernel *k = NULL;
  switch (t) {
  case HLO_F32: case HLO_BF16: case HLO_F16: {
    int w = t == HLO_F32 ? 0 : t == HLO_BF16 ? 1 : 2;
    static const red_kernel *const adds[3] = {&kf32_add_k, &kbf_add_k, &kh_add_k};
    static const red_kernel *const muls[3] = {&kf32_mul_k, &kbf_mul_k, &kh_mul_k};
    fr->ctype = HLO_F32;
    k = op == HLO_OP_ADD ? adds[w] : op == HLO_OP_MULTIPLY ? muls[w]
      : op == HLO_OP_MAXIMUM ? &kf32_max_k : op == HLO_OP_MINIMUM ? &kf32_min_k : NULL;
    break;
  }
  case HLO_F64:
    fr->ctype = HLO_F64;
    k = op == HLO_OP_ADD ? &kf64_add_k : op == HLO_OP_MULTIPLY ? &kf64_mul_k
      : op == HLO_OP_MAXIMUM ? &kf64_max_k : op == HLO_OP_MINIMUM ? &kf64_min_k : NULL;
    break;
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: case HLO_S16: case HLO_S32: case HLO_S64:
    fr->ctype = HLO_S64;
    k = op == HLO_OP_ADD ? &ks_add_k : op == HLO_OP_MULTIPLY ? &ks_mul_k
      : op == HLO_OP_MAXIMUM ? &ks_max_k : op == HLO_OP_MINIMUM ? &ks_min_k
      : op == HLO_OP_AND ? &ks_and_k : op == HLO_OP_OR ? &ks_or_k
      : op == HLO_OP_XOR ? &ks_xor_k : NULL;
    break;
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: case HLO_U16: case HLO_U32: case HLO_U64:
  case HLO_PRED:
    fr->ctype = HLO_U64;
    /* pred values are 0/1: add is or, multiply is and, max is or, min is and */
    if (t == HLO_PRED && op == HLO_OP_ADD)
      op = HLO_OP_OR;
    if (t == HLO_PRED && op == HLO_OP_MULTIPLY)
      op = HLO_OP_AND;
    k = op == HLO_OP_ADD ? &ku_add_k : op == HLO_OP_MULTIPLY ? &ku_mul_k
      : op == HLO_OP_MAXIMUM ? &ku_max_k : op == HLO_OP_MINIMUM ? &ku_min_k
      : op == HLO_OP_AND ? &ku_and_k : op == HLO_OP_OR ? &ku_or_k
      : op == HLO_OP_XOR ? &ku_xor_k : NULL;
    break;
  default:
    break;
  }
  fr->k = k;
  return k ? 0 : -1;
}

/* The fast path applies when the reducer is a simple binary op and input,
 * init, result and the reducer's own parameter types all agree. */
static int fast_path(const hlo_computation *c, hlo_etype t, fast_red *fr) {
  hlo_opcode op = hlo_simple_reducer(c);
  if (op == HLO_OP_INVALID)
    return -1;
  for (int i = 0; i < 2; i++)
    if (!c->params[i] || c->params[i]->shape.type != t || c->params[i]->shape.rank != 0)
      return -1;
  if (c->root->shape.type != t)
    return -1;
  return pick_kernel(op, t, fr);
}

/* Data of v in compute type ct: v's own buffer when the types agree, else a
 * converted copy that *owned receives (free it). */
static const void *as_compute(const hlo_value *v, hlo_etype ct, void **owned) {
  *owned = NULL;
  if (v->type == ct)
    return v->data;
  size_t n = (size_t)(v->count ? v->count : 1);
  void *p = malloc(n * hlo_etype_host_size(ct));
  if (!p)
    return NULL;
  if (hlo_convert_array(v->type, v->data, ct, p, (size_t)v->count) != 0) {
    free(p);
    return NULL;
  }
  *owned = p;
  return p;
}

/* A rank-0 copy of element i of v. */
static hlo_value *scalar_at(const hlo_value *v, int64_t i) {
  hlo_value *s = hlo_value_array(v->type, 0, NULL);
  if (s)
    memcpy(s->data, (const char *)v->data + (size_t)i * v->elem_size, v->elem_size);
  return s;
}

/* Result values of ins: one array per leaf (N = 1: the array itself). */
static hlo_value *make_results(chk_eval *ev, const hlo_instr *ins, int n, hlo_value **arr) {
  if (ins->shape.type != HLO_TUPLE) {
    if (n != 1)
      return chk_fail(ev, ins, "%d results expected, the shape is an array", n);
    arr[0] = chk_result(ev, ins);
    return arr[0];
  }
  if (ins->shape.ntuple != n)
    return chk_fail(ev, ins, "%d results expected, the shape is a %d-tuple", n, ins->shape.ntuple);
  for (int i = 0; i < n; i++) {
    const hlo_shape *s = &ins->shape.elems[i];
    arr[i] = s->type == HLO_TUPLE || s->rank > HLO_MAX_RANK ? NULL : hlo_value_from_shape(s);
    if (!arr[i]) {
      for (int j = 0; j < i; j++)
        hlo_value_unref(arr[j]);
      return chk_fail(ev, ins, "out of memory for result %d", i);
    }
  }
  /* the tuple takes over the references; arr[] stays valid (borrowed) for
   * as long as the tuple lives */
  hlo_value *t = hlo_value_tuple(n, arr);
  if (!t) {
    for (int i = 0; i < n; i++)
      hlo_value_unref(arr[i]);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}

/* Calls the reducer with (acc[0..n-1], x[0..n-1]) and replaces acc with its
 * results.  Takes over the references in x. */
static int call_step(chk_eval *ev, const hlo_instr *ins, const hlo_computation *c, int n,
                     hlo_value **acc, hlo_value **x) {
  hlo_value *args[2 * 64] = {0};
  for (int i = 0; i < n; i++) {
    args[i] = acc[i];
    args[n + i] = x[i];
  }
  hlo_value *r = chk_call(ev, ins, c, 2 * n, args);
  for (int i = 0; i < n; i++)
    hlo_value_unref(x[i]);
  if (!r)
    return -1;
  if (n == 1 && r->type != HLO_TUPLE) {
    if (r->rank != 0 || r->type != acc[0]->type) {
      hlo_value_unref(r);
      chk_fail(ev, ins, "%s must return a %s scalar", c->name, hlo_etype_name(acc[0]->type));
      return -1;
    }
    hlo_value_unref(acc[0]);
    acc[0] = r;
    return 0;
  }
  if (r->type != HLO_TUPLE || r->ntuple != n) {
    hlo_value_unref(r);
    chk_fail(ev, ins, "%s must return a %d-tuple of scalars", c->name, n);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    hlo_value *e = r->elems[i];
    if (e->type == HLO_TUPLE || e->rank != 0 || e->type != acc[i]->type) {
      hlo_value_unref(r);
      chk_fail(ev, ins, "%s: result %d must be a %s scalar", c->name, i, hlo_etype_name(acc[i]->type));
      return -1;
    }
  }
  for (int i = 0; i < n; i++) {
    hlo_value_unref(acc[i]);
    acc[i] = hlo_value_ref(r->elems[i]);
  }
  hlo_value_unref(r);
  return 0;
}

/* Checks the operand/init structure shared by reduce and reduce-window:
 * n arrays of one shape followed by n scalars.  Returns n or -1. */
static int check_variadic(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands < 2 || ins->noperands % 2 != 0 || ins->noperands > 2 * 64) {
    chk_fail(ev, ins, "expects N inputs and N init values (N <= 64), got %d operands", ins->noperands);
    return -1;
  }
  int n = ins->noperands / 2;
  for (int i = 0; i < 2 * n; i++)
    if (ops[i]->type == HLO_TUPLE) {
      chk_fail(ev, ins, "operand %d is a tuple", i);
      return -1;
    }
  for (int i = 1; i < n; i++) {
    if (ops[i]->rank != ops[0]->rank || memcmp(ops[i]->dims, ops[0]->dims, sizeof(int64_t) * (size_t)ops[0]->rank)) {
      chk_fail(ev, ins, "input %d has a different shape from input 0", i);
      return -1;
    }
  }
  for (int i = n; i < 2 * n; i++)
    if (ops[i]->rank != 0) {
      chk_fail(ev, ins, "init value %d is not a scalar", i - n);
      return -1;
    }
  if (!ins->attrs.calls.to_apply) {
    chk_fail(ev, ins, "no to_apply computation");
    return -1;
  }
  return n;
}

/* ---- reduce ---------------------------------------------------------------- */

/* Fast reduce: walk the input in memory order, folding each element into its
 * output slot.  Restricted to one output element, memory order visits the
 * reduced elements in row-major order of the reduced dims, so this is the
 * documented order.  Dimensions of size 1 are dropped and neighbours of the
 * same kind (kept / reduced) merged, leaving alternating groups; the last
 * two groups run in a kernel (rows when the innermost is reduced, cols when
 * it is kept) and the groups before them are walked here. */
static int reduce_fast(const hlo_value *x, const bool *red, const fast_red *fr, void *acc) {
  int64_t gsize[HLO_MAX_RANK];
  bool gred[HLO_MAX_RANK];
  int ng = 0;
  for (int d = 0; d < x->rank; d++) {
    if (x->dims[d] == 1)
      continue;
    if (ng > 0 && gred[ng - 1] == red[d]) {
      gsize[ng - 1] *= x->dims[d];
    } else {
      gsize[ng] = x->dims[d];
      gred[ng] = red[d];
      ng++;
    }
  }
  void *owned;
  const void *xd = as_compute(x, fr->ctype, &owned);
  if (!xd)
    return -1;
  size_t esz = hlo_etype_host_size(fr->ctype);
  /* innermost L, next M (with the opposite kind), prefix groups before */
  int64_t L = 1, M = 1;
  bool inner_red = true;
  int np = ng;
  if (ng >= 1) {
    L = gsize[ng - 1];
    inner_red = gred[ng - 1];
    np = ng - 1;
    if (ng >= 2) {
      M = gsize[ng - 2];
      np = ng - 2;
    }
  }
  /* output strides of the kept prefix groups */
  int64_t ostride[HLO_MAX_RANK];
  int64_t s = inner_red ? M : L; /* the kept group among the last two (M = 1 when absent) */
  for (int g = np - 1; g >= 0; g--) {
    ostride[g] = gred[g] ? 0 : s;
    if (!gred[g])
      s *= gsize[g];
  }
  int64_t P = 1;
  for (int g = 0; g < np; g++)
    P *= gsize[g];
  int64_t idx[HLO_MAX_RANK] = {0};
  int64_t obase = 0;
  for (int64_t p = 0; p < P; p++) {
    const char *xp = (const char *)xd + (size_t)(p * M * L) * esz;
    char *op = (char *)acc + (size_t)obase * esz;
    if (inner_red)
      fr->k->rows(op, xp, M, L);
    else
      fr->k->cols(op, xp, M, L);
    hlo_index_next_off(np, gsize, ostride, idx, &obase); /* over the prefix */
  }
  free(owned);
  return 0;
}

/* The lane program of a variadic reducer called as acc = f(acc, x): arguments
 * are the n accumulators (the init values' types) and then the n inputs,
 * results the n new accumulators.  NULL: use the per-element path. */
static chk_rprog *fold_program(chk_eval *ev, const hlo_instr *ins, int n, hlo_value *const *ops,
                               hlo_value *const *res) {
  hlo_etype argt[128];
  for (int i = 0; i < n; i++) {
    if (res[i]->type != ops[n + i]->type) /* the per-element path reports it */
      return NULL;
    argt[i] = ops[n + i]->type;
    argt[n + i] = ops[i]->type;
  }
  return chk_rprog_compile(ev, ins->attrs.calls.to_apply, 2 * n, argt, n, argt);
}

/* The kept or the reduced dimensions of x, in order, as a box to step
 * through with hlo_index_next_off: their extents and x's strides. */
typedef struct {
  int n;
  int64_t ext[HLO_MAX_RANK], st[HLO_MAX_RANK];
} dim_walk;

/* Splits x's dimensions into the kept ones (k) and the reduced ones (r);
 * returns how many elements one output folds. */
static int64_t split_dims(const hlo_value *x, const bool *red, dim_walk *k, dim_walk *r) {
  int64_t st[HLO_MAX_RANK], nred = 1;
  hlo_value_strides(x, st);
  k->n = r->n = 0;
  for (int d = 0; d < x->rank; d++) {
    dim_walk *w = red[d] ? r : k;
    w->ext[w->n] = x->dims[d];
    w->st[w->n++] = st[d];
    if (red[d])
      nred *= x->dims[d];
  }
  return nred;
}

/* General reduce with a lane program: blocks of CHK_RPROG_LANES output
 * elements (row-major over the kept dims) are folded side by side, each
 * output element taking the reduced elements in row-major order of the
 * reduced dims, as reduce_general does one at a time.  Threads split the
 * blocks. */
static int reduce_lanes(chk_eval *ev, const hlo_instr *ins, const chk_rprog *prog, int n, hlo_value *const *ops,
                        const bool *red, hlo_value **res) {
  dim_walk kw, rw;
  int64_t nred = split_dims(ops[0], red, &kw, &rw);
  int64_t nout = res[0]->count;
  int64_t nblocks = (nout + CHK_RPROG_LANES - 1) / CHK_RPROG_LANES;
  int failed = 0;
  (void)nblocks;
#pragma omp parallel if (nout * nred >= ROWS_MIN_PAR && nblocks > 1) reduction(| : failed)
  {
    chk_rprog_lanes *l = chk_rprog_lanes_new(prog);
    int64_t base[CHK_RPROG_LANES], offs[CHK_RPROG_LANES], oidx[CHK_RPROG_LANES];
    if (!l)
      failed = 1;
#pragma omp for schedule(dynamic, 4)
    for (int64_t b = 0; b < nblocks; b++) {
      if (!l)
        continue;
      int64_t o0 = b * CHK_RPROG_LANES;
      int m = (int)(nout - o0 < CHK_RPROG_LANES ? nout - o0 : CHK_RPROG_LANES);
      /* input offset of each output element's first reduced element */
      int64_t kidx[HLO_MAX_RANK], q = o0, off = 0;
      for (int j = kw.n - 1; j >= 0; j--) {
        kidx[j] = q % kw.ext[j];
        q /= kw.ext[j];
      }
      for (int j = 0; j < kw.n; j++)
        off += kidx[j] * kw.st[j];
      for (int i = 0; i < m; i++) {
        base[i] = off;
        oidx[i] = o0 + i;
        (void)hlo_index_next_off(kw.n, kw.ext, kw.st, kidx, &off);
      }
      for (int i = 0; i < n; i++)
        chk_rprog_load(l, i, ops[n + i]->data, NULL, m);
      int64_t ridx[HLO_MAX_RANK] = {0}, roff = 0;
      for (int64_t r = 0; r < nred; r++) {
        for (int i = 0; i < m; i++)
          offs[i] = base[i] + roff;
        for (int i = 0; i < n; i++)
          chk_rprog_load(l, n + i, ops[i]->data, offs, m);
        chk_rprog_run(l, m);
        chk_rprog_feedback(l, m, NULL);
        (void)hlo_index_next_off(rw.n, rw.ext, rw.st, ridx, &roff);
      }
      for (int i = 0; i < n; i++)
        chk_rprog_store_arg(l, i, res[i]->data, oidx, m);
    }
    chk_rprog_lanes_free(l);
  }
  if (failed) {
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  return 0;
}

/* General reduce: per output element, per reduced element, one call. */
static int reduce_general(chk_eval *ev, const hlo_instr *ins, int n, hlo_value *const *ops,
                          const bool *red, hlo_value **res) {
  dim_walk kw, rw;
  int64_t nred = split_dims(ops[0], red, &kw, &rw);
  int64_t nout = res[0]->count;
  int64_t kidx[HLO_MAX_RANK] = {0}, base = 0;
  hlo_value *acc[64], *xs[64];
  for (int64_t o = 0; o < nout; o++) {
    for (int i = 0; i < n; i++)
      acc[i] = hlo_value_ref(ops[n + i]);
    int64_t ridx[HLO_MAX_RANK] = {0}, roff = 0;
    for (int64_t r = 0; r < nred; r++) {
      for (int i = 0; i < n; i++) {
        xs[i] = scalar_at(ops[i], base + roff);
        if (!xs[i]) {
          for (int j = 0; j < i; j++)
            hlo_value_unref(xs[j]);
          for (int j = 0; j < n; j++)
            hlo_value_unref(acc[j]);
          chk_fail(ev, ins, "out of memory");
          return -1;
        }
      }
      if (call_step(ev, ins, ins->attrs.calls.to_apply, n, acc, xs) != 0) {
        for (int j = 0; j < n; j++)
          hlo_value_unref(acc[j]);
        return -1;
      }
      (void)hlo_index_next_off(rw.n, rw.ext, rw.st, ridx, &roff);
    }
    for (int i = 0; i < n; i++) {
      if (acc[i]->type != res[i]->type) {
        for (int j = 0; j < n; j++)
          hlo_value_unref(acc[j]);
        chk_fail(ev, ins, "result %d: reducer gives %s, the shape says %s", i,
                 hlo_etype_name(acc[i]->type), hlo_etype_name(res[i]->type));
        return -1;
      }
      memcpy((char *)res[i]->data + (size_t)o * res[i]->elem_size, acc[i]->data, res[i]->elem_size);
      hlo_value_unref(acc[i]);
    }
    (void)hlo_index_next_off(kw.n, kw.ext, kw.st, kidx, &base);
  }
  return 0;
}

static hlo_value *op_reduce(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  int n = check_variadic(ev, ins, ops);
  if (n < 0)
    return NULL;
  const hlo_value *x = ops[0];
  bool red[HLO_MAX_RANK] = {false};
  const hlo_ints *dims = &ins->attrs.dimensions;
  int64_t nkept = x->rank;
  for (int i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= x->rank || red[d])
      return chk_fail(ev, ins, "dimensions: bad or repeated dimension %lld", (long long)d);
    red[d] = true;
    nkept--;
  }
  hlo_value *res[64];
  hlo_value *out = make_results(ev, ins, n, res);
  if (!out)
    return NULL;
  /* the result leaves must be the kept dims of the input, in order */
  for (int i = 0; i < n; i++) {
    bool ok = res[i]->rank == nkept;
    for (int d = 0, k = 0; ok && d < x->rank; d++)
      if (!red[d])
        ok = res[i]->dims[k++] == x->dims[d];
    if (!ok) {
      hlo_value_unref(out);
      return chk_fail(ev, ins, "result %d does not have the input's kept dimensions", i);
    }
  }
  fast_red fr;
  if (n == 1 && ops[1]->type == x->type && res[0]->type == x->type &&
      fast_path(ins->attrs.calls.to_apply, x->type, &fr) == 0) {
    size_t esz = hlo_etype_host_size(fr.ctype);
    int64_t nout = res[0]->count;
    void *acc = res[0]->type == fr.ctype ? res[0]->data : malloc((size_t)(nout ? nout : 1) * esz);
    int rc = acc ? 0 : -1;
    if (acc) {
      char init[16];
      rc = hlo_convert_array(x->type, ops[1]->data, fr.ctype, init, 1);
      for (int64_t i = 0; i < nout; i++)
        memcpy((char *)acc + (size_t)i * esz, init, esz);
      if (rc == 0 && x->count > 0)
        rc = reduce_fast(x, red, &fr, acc);
      if (rc == 0 && acc != res[0]->data)
        rc = hlo_convert_array(fr.ctype, acc, res[0]->type, res[0]->data, (size_t)nout);
      if (acc != res[0]->data)
        free(acc);
    }
    if (rc != 0) {
      hlo_value_unref(out);
      return chk_fail(ev, ins, "out of memory");
    }
    return out;
  }
  chk_rprog *prog = fold_program(ev, ins, n, ops, res);
  int rc = prog ? reduce_lanes(ev, ins, prog, n, ops, red, res) : reduce_general(ev, ins, n, ops, red, res);
  chk_rprog_free(prog);
  if (rc != 0) {
    hlo_value_unref(out);
    return NULL;
  }
  return out;
}

/* ---- reduce-window ----------------------------------------------------------- */

/* Where window element k of output position o reads along one dimension.
 * It is computed, not tabulated: a table of every (o, k) pair takes
 * out * size entries, which for a prefix scan written as a window as long
 * as its input (size n, padding n-1) is n^2 words, 17 GB at n = 46592. */
typedef struct {
  int64_t size, stride, pad_lo, rd, ld, extent, elem_stride;
} win_dim;

static win_dim win_dim_make(const hlo_window_dim *w, int64_t in, int64_t stride) {
  win_dim g = {.size = w->size, .stride = w->stride, .pad_lo = w->pad_lo, .elem_stride = stride};
  g.ld = w->lhs_dilate > 0 ? w->lhs_dilate : 1;
  g.rd = w->rhs_dilate > 0 ? w->rhs_dilate : 1;
  g.extent = in > 0 ? (in - 1) * g.ld + 1 : 0; /* dilated input length */
  return g;
}

/* The input offset (index times stride), or -1 in padding or a base-dilation hole. */
static inline int64_t win_at(const win_dim *g, int64_t o, int64_t k) {
  int64_t pos = o * g->stride + k * g->rd - g->pad_lo;
  if (pos < 0 || pos >= g->extent)
    return -1;
  if (g->ld == 1)
    return pos * g->elem_stride;
  return pos % g->ld == 0 ? pos / g->ld * g->elem_stride : -1;
}

/* Offsets read by output element with per-dim position opos, in window
 * row-major order, padding skipped.  Returns how many. */
static int64_t window_offsets(int rank, const win_dim *wd, const int64_t *opos, int64_t *off) {
  int64_t widx[HLO_MAX_RANK] = {0}, wsz[HLO_MAX_RANK];
  int64_t n = 0;
  for (int d = 0; d < rank; d++) {
    if (wd[d].size <= 0)
      return 0;
    wsz[d] = wd[d].size;
  }
  for (;;) {
    int64_t sum = 0;
    int d;
    for (d = 0; d < rank; d++) {
      int64_t t = win_at(&wd[d], opos[d], widx[d]);
      if (t < 0)
        break;
      sum += t;
    }
    if (d == rank)
      off[n++] = sum;
    if (!hlo_index_next(rank, wsz, widx))
      return n;
  }
}

/* The window indices k of one dimension whose position falls inside the
 * input for output position o: [*lo, *hi], empty when *lo > *hi.  Without
 * base dilation (ld == 1) these are exactly the k for which win_at is not
 * -1: a contiguous run, with no holes. */
static void win_krange(const win_dim *g, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t base = o * g->stride - g->pad_lo; /* position of k = 0 */
  *lo = base >= 0 ? 0 : (-base + g->rd - 1) / g->rd;
  int64_t top = g->extent - 1 - base; /* room above position base */
  *hi = top < 0 ? -1 : top / g->rd;
  if (*hi > g->size - 1)
    *hi = g->size - 1;
}

/* Per-thread scratch of window_lanes. */
typedef struct {
  int64_t offs[CHK_RPROG_LANES], oidx[CHK_RPROG_LANES], base[CHK_RPROG_LANES];
  int64_t opos[CHK_RPROG_LANES][HLO_MAX_RANK];
  int64_t klo[CHK_RPROG_LANES][HLO_MAX_RANK], khi[CHK_RPROG_LANES][HLO_MAX_RANK];
  uint8_t keep[CHK_RPROG_LANES];
} win_scratch;

/* One fold step over lanes [0, m) at the current window position: the
 * program runs when a lane is kept, and only kept lanes take its result
 * (keep NULL: every lane). */
static void window_step(chk_rprog_lanes *l, int n, hlo_value *const *ops, const int64_t *offs, int m,
                        const uint8_t *keep) {
  for (int i = 0; i < n; i++)
    chk_rprog_load(l, n + i, ops[i]->data, offs, m);
  chk_rprog_run(l, m);
  chk_rprog_feedback(l, m, keep);
}

/* The window positions of one block when no dimension has base dilation.
 * A lane is inside at window index k exactly when k lies in its
 * [klo, khi] in every dimension (win_krange), and its offset is then
 * base + sum of k * rd * elem_stride: both are computed once per block
 * instead of per lane and position.  Positions outside the box that
 * bounds every lane's ranges keep no lane, so they are not visited; the
 * box is walked in row-major order, so each lane still takes its
 * positions in the window's row-major order, the same steps as the
 * general walk below. */
static void window_block_direct(chk_eval *ev, chk_rprog_lanes *l, int n, hlo_value *const *ops, int rank,
                                const win_dim *wd, win_scratch *s, int m) {
  int64_t blo[HLO_MAX_RANK], bhi[HLO_MAX_RANK]; /* union of the lanes' ranges */
  /* the intersection: every lane inside (empty when a lane never is,
   * since that lane's range is empty in some dimension) */
  int64_t alo[HLO_MAX_RANK], ahi[HLO_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    blo[d] = INT64_MAX;
    bhi[d] = INT64_MIN;
    alo[d] = 0;
    ahi[d] = wd[d].size - 1;
  }
  for (int i = 0; i < m; i++) {
    bool never = false;
    s->base[i] = 0;
    for (int d = 0; d < rank; d++) {
      win_krange(&wd[d], s->opos[i][d], &s->klo[i][d], &s->khi[i][d]);
      never |= s->klo[i][d] > s->khi[i][d];
      s->base[i] += (s->opos[i][d] * wd[d].stride - wd[d].pad_lo) * wd[d].elem_stride;
    }
    for (int d = 0; d < rank; d++) {
      if (!never) { /* a lane that is never inside widens no bound */
        blo[d] = s->klo[i][d] < blo[d] ? s->klo[i][d] : blo[d];
        bhi[d] = s->khi[i][d] > bhi[d] ? s->khi[i][d] : bhi[d];
      }
      alo[d] = s->klo[i][d] > alo[d] ? s->klo[i][d] : alo[d];
      ahi[d] = s->khi[i][d] < ahi[d] ? s->khi[i][d] : ahi[d];
    }
  }
  for (int d = 0; d < rank; d++)
    if (blo[d] > bhi[d])
      return; /* no lane has a position: every accumulator stays the init */
  int64_t widx[HLO_MAX_RANK], bn[HLO_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    widx[d] = blo[d];
    bn[d] = bhi[d] - blo[d] + 1;
  }
  for (int64_t w = 0;; w++) {
    /* a block of a huge window is long itself */
    if (w % 4096 == 4095 && chk_past_deadline(ev))
      break;
    int64_t delta = 0;
    bool all = true;
    for (int d = 0; d < rank; d++) {
      delta += widx[d] * wd[d].rd * wd[d].elem_stride;
      all &= widx[d] >= alo[d] && widx[d] <= ahi[d];
    }
    if (all) {
      for (int i = 0; i < m; i++)
        s->offs[i] = s->base[i] + delta;
      window_step(l, n, ops, s->offs, m, NULL);
    } else {
      int any = 0;
      for (int i = 0; i < m; i++) {
        bool in = true;
        for (int d = 0; d < rank; d++)
          in &= widx[d] >= s->klo[i][d] && widx[d] <= s->khi[i][d];
        s->keep[i] = in;
        s->offs[i] = in ? s->base[i] + delta : 0;
        any |= in;
      }
      if (any) /* then the input has elements, and offset 0 is one */
        window_step(l, n, ops, s->offs, m, s->keep);
    }
    if (!hlo_index_next_box(rank, blo, bn, widx))
      break;
  }
}

/* The window positions of one block, any dilation: every position of the
 * window in row-major order, each lane's offset from win_at. */
static void window_block_general(chk_eval *ev, chk_rprog_lanes *l, int n, hlo_value *const *ops, int rank,
                                 const win_dim *wd, int64_t wcount, win_scratch *s, int m) {
  int64_t widx[HLO_MAX_RANK] = {0}, wsz[HLO_MAX_RANK];
  for (int d = 0; d < rank; d++)
    wsz[d] = wd[d].size;
  for (int64_t w = 0; w < wcount; w++) {
    /* a block of a huge window is long itself */
    if (w % 4096 == 4095 && chk_past_deadline(ev))
      break;
    int any = 0;
    for (int i = 0; i < m; i++) {
      int64_t sum = 0;
      int d;
      for (d = 0; d < rank; d++) {
        int64_t t = win_at(&wd[d], s->opos[i][d], widx[d]);
        if (t < 0)
          break;
        sum += t;
      }
      s->keep[i] = d == rank;
      s->offs[i] = s->keep[i] ? sum : 0;
      any |= s->keep[i];
    }
    if (any) /* then the input has elements, and offset 0 is one */
      window_step(l, n, ops, s->offs, m, s->keep);
    (void)hlo_index_next(rank, wsz, widx);
  }
}

/* General reduce-window with a lane program: blocks of CHK_RPROG_LANES
 * output elements step through the window positions together, in row-major
 * order of the window; a lane whose position falls into padding or a
 * dilation hole keeps its accumulator (the program still runs on it, on
 * any element: the reducer is a pure function, so only the kept lanes
 * matter).  Each output element thus takes exactly the positions, in the
 * order, that the per-element path gives it. */
static int window_lanes(chk_eval *ev, const hlo_instr *ins, const chk_rprog *prog, int n, hlo_value *const *ops,
                        const win_dim *wd, hlo_value **res) {
  const hlo_value *x = ops[0];
  const hlo_window *win = &ins->attrs.window;
  int rank = x->rank;
  int64_t nout = res[0]->count, wcount = 1;
  bool direct = true;
  for (int d = 0; d < rank; d++) {
    wcount *= win->dims[d].size;
    direct &= wd[d].ld == 1;
  }
  int64_t nblocks = (nout + CHK_RPROG_LANES - 1) / CHK_RPROG_LANES;
  int failed = 0;
  /* Blocks in slices of about CHK_SLICE_WORK window positions, the
   * deadline asked between them (each block is folded alone). */
  int64_t step = chk_slice_rows(wcount * CHK_RPROG_LANES);
  if (step < max_threads())
    step = max_threads(); /* one block per thread at least */
  for (int64_t b0 = 0; !failed && b0 < nblocks; b0 += step) {
    int64_t b1 = nblocks - b0 < step ? nblocks : b0 + step;
#pragma omp parallel if ((b1 - b0) * CHK_RPROG_LANES * wcount >= ROWS_MIN_PAR && b1 - b0 > 1) \
      reduction(| : failed)
    {
      chk_rprog_lanes *l = chk_rprog_lanes_new(prog);
      win_scratch *s = malloc(sizeof *s);
      if (!l || !s)
        failed = 1;
#pragma omp for schedule(dynamic, 4)
      for (int64_t b = b0; b < b1; b++) {
        if (!l || !s)
          continue;
        int64_t o0 = b * CHK_RPROG_LANES;
        int m = (int)(nout - o0 < CHK_RPROG_LANES ? nout - o0 : CHK_RPROG_LANES);
        for (int i = 0; i < m; i++) {
          int64_t r = s->oidx[i] = o0 + i;
          for (int d = rank - 1; d >= 0; d--) {
            s->opos[i][d] = r % res[0]->dims[d];
            r /= res[0]->dims[d];
          }
        }
        for (int i = 0; i < n; i++)
          chk_rprog_load(l, i, ops[n + i]->data, NULL, m);
        if (x->count == 0)
          ; /* no position is inside: the accumulators stay the init */
        else if (direct)
          window_block_direct(ev, l, n, ops, rank, wd, s, m);
        else
          window_block_general(ev, l, n, ops, rank, wd, wcount, s, m);
        for (int i = 0; i < n; i++)
          chk_rprog_store_arg(l, i, res[i]->data, s->oidx, m);
      }
      free(s);
      chk_rprog_lanes_free(l);
    }
    if (!failed && chk_time_up(ev, ins))
      return -1;
  }
  if (failed) {
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  return 0;
}

static hlo_value *op_reduce_window(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  int n = check_variadic(ev, ins, ops);
  if (n < 0)
    return NULL;
  const hlo_value *x = ops[0];
  const hlo_window *win = &ins->attrs.window;
  if (!(ins->attrs.has & HLO_A_WINDOW) && x->rank > 0)
    return chk_fail(ev, ins, "no window attribute");
  if ((ins->attrs.has & HLO_A_WINDOW) && win->rank != x->rank)
    return chk_fail(ev, ins, "window has %d dimensions, the input %d", win->rank, x->rank);
  for (int d = 0; d < x->rank; d++) {
    const hlo_window_dim *w = &win->dims[d];
    if (w->size < 1 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1)
      return chk_fail(ev, ins, "window dimension %d: size, stride and dilations must be >= 1", d);
  }
  hlo_value *res[64];
  hlo_value *out = make_results(ev, ins, n, res);
  if (!out)
    return NULL;
  if (res[0]->rank != x->rank) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "result rank %d differs from the input rank %d", res[0]->rank, x->rank);
  }
  int rank = x->rank;
  int64_t st[HLO_MAX_RANK];
  hlo_value_strides(x, st);
  win_dim wd[HLO_MAX_RANK];
  int64_t wcount = 1;
  int rc = 0;
  for (int d = 0; d < rank; d++) {
    wd[d] = win_dim_make(&win->dims[d], x->dims[d], st[d]);
    wcount *= win->dims[d].size;
  }
  int64_t nout = res[0]->count;
  fast_red fr;
  chk_rprog *prog = NULL;
  if (rc != 0) {
    chk_fail(ev, ins, "out of memory");
  } else if (n == 1 && ops[1]->type == x->type && res[0]->type == x->type &&
             fast_path(ins->attrs.calls.to_apply, x->type, &fr) == 0) {
    size_t esz = hlo_etype_host_size(fr.ctype);
    void *owned = NULL;
    const void *xd = x->count > 0 ? as_compute(x, fr.ctype, &owned) : x->data;
    void *acc = res[0]->type == fr.ctype ? res[0]->data : malloc((size_t)(nout ? nout : 1) * esz);
    char init[16];
    if (!xd || !acc || hlo_convert_array(x->type, ops[1]->data, fr.ctype, init, 1) != 0)
      rc = -1;
    /* Outputs in slices of about CHK_SLICE_WORK window positions, the
     * deadline asked between them (each output is folded alone). */
    int64_t step = chk_slice_rows(wcount);
    if (step < max_threads())
      step = max_threads(); /* one output per thread at least */
    for (int64_t o0 = 0; rc == 0 && o0 < nout; o0 += step) {
      int64_t o1 = nout - o0 < step ? nout : o0 + step;
#pragma omp parallel if ((o1 - o0) * wcount >= ROWS_MIN_PAR) reduction(| : rc)
      {
        int64_t *off = malloc(sizeof *off * (size_t)wcount);
        if (!off)
          rc = -1;
#pragma omp for schedule(static)
        for (int64_t o = o0; o < o1; o++) {
          if (!off)
            continue;
          int64_t opos[HLO_MAX_RANK], r = o;
          for (int d = rank - 1; d >= 0; d--) {
            opos[d] = r % res[0]->dims[d];
            r /= res[0]->dims[d];
          }
          char *slot = (char *)acc + (size_t)o * esz;
          memcpy(slot, init, esz);
          int64_t cnt = window_offsets(rank, wd, opos, off);
          fr.k->gather(slot, xd, off, cnt);
        }
        free(off);
      }
      if (rc == 0 && chk_time_up(ev, ins))
        rc = -1; /* chk_fail keeps this first error, not the "out of memory" below */
    }
    if (rc == 0 && acc != res[0]->data)
      rc = hlo_convert_array(fr.ctype, acc, res[0]->type, res[0]->data, (size_t)nout);
    if (acc && acc != res[0]->data)
      free(acc);
    free(owned);
    if (rc != 0)
      chk_fail(ev, ins, "out of memory");
  } else if ((prog = fold_program(ev, ins, n, ops, res)) != NULL) {
    rc = window_lanes(ev, ins, prog, n, ops, wd, res);
  } else {
    int64_t *off = malloc(sizeof *off * (size_t)(wcount > 0 ? wcount : 1));
    if (!off) {
      rc = -1;
      chk_fail(ev, ins, "out of memory");
    }
    hlo_value *acc[64], *xs[64];
    for (int64_t o = 0; rc == 0 && o < nout; o++) {
      int64_t opos[HLO_MAX_RANK], r = o;
      for (int d = rank - 1; d >= 0; d--) {
        opos[d] = r % res[0]->dims[d];
        r /= res[0]->dims[d];
      }
      int64_t cnt = window_offsets(rank, wd, opos, off);
      for (int i = 0; i < n; i++)
        acc[i] = hlo_value_ref(ops[n + i]);
      for (int64_t k = 0; rc == 0 && k < cnt; k++) {
        for (int i = 0; i < n; i++)
          xs[i] = scalar_at(ops[i], off[k]);
        bool oom = false;
        for (int i = 0; i < n; i++)
          oom |= !xs[i];
        if (oom) {
          for (int i = 0; i < n; i++)
            hlo_value_unref(xs[i]);
          chk_fail(ev, ins, "out of memory");
          rc = -1;
        } else if (call_step(ev, ins, ins->attrs.calls.to_apply, n, acc, xs) != 0) {
          rc = -1;
        }
      }
      for (int i = 0; i < n; i++) {
        if (rc == 0 && acc[i]->type != res[i]->type) {
          chk_fail(ev, ins, "result %d: reducer gives %s, the shape says %s", i,
                   hlo_etype_name(acc[i]->type), hlo_etype_name(res[i]->type));
          rc = -1;
        }
        if (rc == 0)
          memcpy((char *)res[i]->data + (size_t)o * res[i]->elem_size, acc[i]->data, res[i]->elem_size);
        hlo_value_unref(acc[i]);
      }
    }
    free(off);
  }
  chk_rprog_free(prog);
  if (rc != 0) {
    hlo_value_unref(out);
    return NULL;
  }
  return out;
}

/* ---- map --------------------------------------------------------------------- */

/* General map with a lane program: CHK_RPROG_LANES elements per run. */
static int map_lanes(const chk_rprog *prog, int n, hlo_value *const *ops, hlo_value *out) {
  int64_t count = out->count, nblocks = (count + CHK_RPROG_LANES - 1) / CHK_RPROG_LANES;
  int failed = 0;
  (void)nblocks;
#pragma omp parallel if (count >= ROWS_MIN_PAR && nblocks > 1) reduction(| : failed)
  {
    chk_rprog_lanes *l = chk_rprog_lanes_new(prog);
    int64_t offs[CHK_RPROG_LANES];
    if (!l)
      failed = 1;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < nblocks; b++) {
      if (!l)
        continue;
      int64_t e0 = b * CHK_RPROG_LANES;
      int m = (int)(count - e0 < CHK_RPROG_LANES ? count - e0 : CHK_RPROG_LANES);
      for (int i = 0; i < m; i++)
        offs[i] = e0 + i;
      for (int i = 0; i < n; i++)
        chk_rprog_load(l, i, ops[i]->data, offs, m);
      chk_rprog_run(l, m);
      chk_rprog_store_result(l, 0, out->data, offs, m);
    }
    chk_rprog_lanes_free(l);
  }
  return failed ? -1 : 0;
}

static hlo_value *op_map(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  int n = ins->noperands;
  const hlo_computation *c = ins->attrs.calls.to_apply;
  if (n < 1 || n > 64 || !c)
    return chk_fail(ev, ins, "expects 1 to 64 operands and a to_apply computation");
  for (int i = 0; i < n; i++)
    if (ops[i]->type == HLO_TUPLE || ops[i]->rank != ops[0]->rank ||
        memcmp(ops[i]->dims, ops[0]->dims, sizeof(int64_t) * (size_t)ops[0]->rank))
      return chk_fail(ev, ins, "operand %d does not have operand 0's shape", i);
  hlo_value *out = chk_result(ev, ins);
  if (!out)
    return NULL;
  if (out->count != ops[0]->count) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "result and operands differ in element count");
  }
  fast_red fr;
  if (n == 2 && ops[1]->type == ops[0]->type && out->type == ops[0]->type &&
      fast_path(c, out->type, &fr) == 0) {
    /* out = a, then out[j] = op(out[j], b[j]) with the cols kernel */
    void *oa = NULL, *ob = NULL;
    const void *b = as_compute(ops[1], fr.ctype, &ob);
    void *acc = NULL;
    int rc = -1;
    if (b) {
      if (out->type == fr.ctype) {
        memcpy(out->data, ops[0]->data, (size_t)out->count * out->elem_size);
        acc = out->data;
      } else if (as_compute(ops[0], fr.ctype, &oa)) {
        acc = oa; /* a converted copy we own and may overwrite */
      }
    }
    if (acc) {
      if (out->count > 0)
        fr.k->cols(acc, b, 1, out->count);
      rc = acc == out->data ? 0
         : hlo_convert_array(fr.ctype, acc, out->type, out->data, (size_t)out->count);
    }
    free(oa);
    free(ob);
    if (rc != 0) {
      hlo_value_unref(out);
      return chk_fail(ev, ins, "out of memory");
    }
    return out;
  }
  hlo_etype argt[64], rt = out->type;
  for (int i = 0; i < n; i++)
    argt[i] = ops[i]->type;
  chk_rprog *prog = chk_rprog_compile(ev, c, n, argt, 1, &rt);
  if (prog) {
    int rc = map_lanes(prog, n, ops, out);
    chk_rprog_free(prog);
    if (rc != 0) {
      hlo_value_unref(out);
      return chk_fail(ev, ins, "out of memory");
    }
    return out;
  }
  hlo_value *args[64];
  for (int64_t e = 0; e < out->count; e++) {
    for (int i = 0; i < n; i++) {
      args[i] = scalar_at(ops[i], e);
      if (!args[i]) {
        for (int j = 0; j < i; j++)
          hlo_value_unref(args[j]);
        hlo_value_unref(out);
        return chk_fail(ev, ins, "out of memory");
      }
    }
    hlo_value *r = chk_call(ev, ins, c, n, args);
    for (int i = 0; i < n; i++)
      hlo_value_unref(args[i]);
    if (!r || r->type != out->type || r->rank != 0) {
      if (r) {
        hlo_value_unref(r);
        chk_fail(ev, ins, "%s must return a %s scalar", c->name, hlo_etype_name(out->type));
      }
      hlo_value_unref(out);
      return NULL;
    }
    memcpy((char *)out->data + (size_t)e * out->elem_size, r->data, out->elem_size);
    hlo_value_unref(r);
  }
  return out;
}

hlo_value *chk_op_reduce(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  switch (ins->op) {
  case HLO_OP_REDUCE:
    return op_reduce(ev, ins, ops);
  case HLO_OP_REDUCE_WINDOW:
    return op_reduce_window(ev, ins, ops);
  case HLO_OP_MAP:
    return op_map(ev, ins, ops);
  default:
    return chk_fail(ev, ins, "not a reduce-family op");
  }
}
