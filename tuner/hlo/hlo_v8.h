/* hlo_v8.h — eight f32 lanes in one vector, and HLO's fold rules on them.
 *
 * The reference's row reductions (check/eval_reduce.c) and the device's
 * folds (tuner/device/dev_exec_fold.c) fold eight lines at once, one line
 * per lane, and must give exactly the bits of their scalar loops.  The
 * rules that make that so are subtle, so they are written once here:
 *
 * - Add and multiply carry a NaN accumulator explicitly, quieted as the
 *   hardware would quiet it.  With two NaN operands x86 returns the first
 *   source operand's NaN, and in a vector instruction the compiler may put
 *   either operand first, while the scalar acc = acc + x keeps the
 *   accumulator first.
 * - Max and min pick the very operand hlo_max_f32 and hlo_min_f32
 *   (hlo_minmax.h) return: a if a is NaN, else b if b is NaN, else b if b
 *   is larger (smaller) or equal to a and the zero the op prefers (+0 for
 *   max, -0 for min), else a.
 *
 * GCC's and clang's vector extensions; the shuffle has a different name
 * in each. */
#ifndef TUNE_HLO_V8_H
#define TUNE_HLO_V8_H

#include <stdint.h>

#if defined(__GNUC__)
typedef float hlo_v8f __attribute__((vector_size(32)));
typedef int32_t hlo_v8i __attribute__((vector_size(32)));

/* Lane-wise M ? X : Y, M a comparison's all-ones or all-zeros mask. */
#define HLO_V8_SEL(M, X, Y) ((hlo_v8f)(((M) & (hlo_v8i)(X)) | (~(M) & (hlo_v8i)(Y))))
#define HLO_V8_QUIET(A) ((hlo_v8f)((hlo_v8i)(A) | 0x00400000))
#define HLO_V8_ADD(A, B) HLO_V8_SEL((A) != (A), HLO_V8_QUIET(A), (A) + (B))
#define HLO_V8_MUL(A, B) HLO_V8_SEL((A) != (A), HLO_V8_QUIET(A), (A) * (B))
#define HLO_V8_MAX(A, B)                                                                                        \
  HLO_V8_SEL((A) != (A), (A),                                                                                   \
             HLO_V8_SEL((B) != (B), (B), HLO_V8_SEL(((B) > (A)) | (((B) == (A)) & ((hlo_v8i)(A) < 0)), (B), (A))))
#define HLO_V8_MIN(A, B)                                                                                        \
  HLO_V8_SEL((A) != (A), (A),                                                                                   \
             HLO_V8_SEL((B) != (B), (B), HLO_V8_SEL(((B) < (A)) | (((B) == (A)) & ((hlo_v8i)(B) < 0)), (B), (A))))
#if defined(__clang__)
#define HLO_V8_SHUF(A, B, ...) __builtin_shufflevector((A), (B), __VA_ARGS__)
#else
#define HLO_V8_SHUF(A, B, ...) __builtin_shuffle((A), (B), (hlo_v8i){__VA_ARGS__})
#endif
#endif

#endif
