/* gen.h — a type-directed generator of well-formed fusions for `tune --fuzz`.
 *
 * A template fixes the skeleton of a fusion (a softmax, a norm, a matmul
 * with an epilogue, a quantise-dequantise round trip...), and the
 * generator fills it: the output's shape and element type are drawn first,
 * and every operand is then built to fit it, from the root down, so each
 * instruction is well typed by construction.  What a template leaves open
 * (elementwise sub-expressions, convert chains through narrow types,
 * layouts, which dimensions reduce) is drawn too.
 *
 * Shapes are biased toward what breaks tilers: sizes 1, 2, 3 and primes,
 * the neighbourhood of 8 and 128 (7, 9, 127, 129, 136...), ragged lengths
 * like 77 and 300, and parameters with a layout other than the default.
 * Sizes are kept small (a fusion's arrays hold at most 2^15 elements and
 * a dot at most 2^22 multiply-adds) so that thousands can be checked in
 * minutes.
 *
 * Operand values stay inside every op's domain because the checker's
 * input synthesis propagates ranges (check/inputs.h); the generator helps
 * it where ranges cannot: divisors and logarithm operands are built as
 * |x| + 1, and a float is converted to an integer type only after it was
 * rounded and clamped into that type's range.
 *
 * Determinism: draw `index` of a run seeded `seed` depends only on
 * (seed, index, templates, the coverage map's counts).  The coverage map
 * (fuzz/covmap.h) biases each choice: of two options drawn, the one whose
 * key ("op:exponential:bf16", "tmpl:norm") was seen less is kept.
 */
#ifndef TUNE_FUZZ_GEN_H
#define TUNE_FUZZ_GEN_H

#include <stdint.h>

#include "covmap.h"

#define TN_FUZZ_TEMPLATE_LIST(X)                                                       \
  X(ELEMENTWISE, "elementwise")   /* elementwise trees with convert chains */        \
  X(REDUCE, "reduce")             /* reductions (variadic too) with pre/epilogue */  \
  X(SOFTMAX, "softmax")           /* row softmax, f32 or through bf16 */             \
  X(NORM, "norm")                 /* layer norm and RMS norm */                      \
  X(MATMUL, "matmul")             /* dot (batch dims, int8, s8 Gram) and epilogue */ \
  X(QUANT, "quant")               /* quantise to s8/u8/s4/u4/f8, dequantise */       \
  X(MOVEMENT, "movement")         /* transpose, pad, concatenate, slice, iota */     \
  X(GATHER_SCATTER, "gather-scatter") /* gather, scatters, dynamic slices */          \
  X(SORT, "sort")                 /* key/value sort with an iota carried beside */   \
  X(WINDOW, "window")             /* reduce-window pooling and cumulative sums */ \
  X(CONV, "conv")                 /* convolution: strides, padding, dilation, groups */ \
  X(FFT, "fft")                   /* fft, ifft, rfft, irfft along the minor dimension */

typedef enum tn_fuzz_template {
#define X(e, name) TN_FUZZ_##e,
  TN_FUZZ_TEMPLATE_LIST(X)
#undef X
  TN_FUZZ_TEMPLATE_COUNT
} tn_fuzz_template;

const char *tn_fuzz_template_name(tn_fuzz_template t);
/* -1 when the name is not a template. */
int tn_fuzz_template_from_name(const char *name);

/* Draw `index` of a run seeded `seed`, among the templates whose bit is set
 * in `templates` (0: all).  Returns the module text (malloc'd; NULL when
 * out of memory) and the template used in *used.  cov may be NULL. */
char *tn_fuzz_generate(uint64_t seed, uint64_t index, unsigned templates, const tn_covmap *cov,
                       tn_fuzz_template *used);

#endif
