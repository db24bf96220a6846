/* hlo_numerics.h — the simulated device's arithmetic, where it differs from
 * IEEE-exact reference semantics.  It sits in the HLO layer, below both the
 * device and check, because both need the very same functions: the device
 * computes with them, and the reference evaluator applies them when it runs
 * with --emulate-device.  A device result and an emulating reference then
 * agree bitwise except for the order of accumulation, which is the one thing
 * tuning is allowed to change.
 *
 * Subnormals (flush to zero, "FTZ").  hlo_num_ftz_f32 maps an f32 subnormal to a
 * zero of the same sign.  The device applies it at exactly these points:
 *   - the f32 inputs and the f32 result of every float arithmetic op that
 *     computes in f32: the elementwise unary and binary ops listed in
 *     hlo_num_unary_f32 / hlo_num_binary_f32 (f32, and bf16/f16/f8 which compute in
 *     f32 and round to their type after the flush);
 *   - dot: both operands before the bf16 split, every product and every
 *     accumulated partial sum (hlo_num_dot_acc).
 * It is NOT applied to: data movement, convert, compare, select, clamp,
 * maximum/minimum (these move values, they do not compute them), f64
 * arithmetic, and the reducer of a reduce (the accumulator keeps
 * subnormals).  So an emulating reference needs FTZ only in its elementwise
 * and dot families.
 *
 * Dot precision.  An f32 dot multiplies on a bf16 MXU.  Each operand is split
 * into bf16 parts (round to nearest even): hi = bf16(x), mid = bf16(x - hi),
 * lo = bf16(x - hi - mid).  Passes (products summed per element, smallest
 * first, in f32):
 *   DEFAULT  1 pass:  hi*hi
 *   HIGH     3 passes: lo*hi + hi*lo, then + hi*hi        (lo here = mid)
 *   HIGHEST  6 passes: lo*hi + hi*lo + mid*mid + mid*hi + hi*mid, then + hi*hi
 * A bf16 x bf16 product is exact in f32 (8+8 significant bits), so the only
 * roundings are the sums.  The precision of a dot is the maximum of its
 * operand_precision attribute and the config's prec knob.
 *
 * Transcendental approximations (f32 in, f32 out, evaluated in f32 after
 * range reduction; sin/cos reduce the argument in double).  Maximum error
 * measured against the libm double result, not rounded (|dev - exact| in
 * units of the f32 ulp of the exact result), over every 61st f32 bit pattern
 * of the domain given, subnormal inputs excluded (they are flushed).  The
 * measured maxima were exp 1.20, expm1 2.12, log 0.89, log1p 2.37, tanh
 * 2.42, logistic 2.37, sqrt 0.50, rsqrt 1.49, sin 1.47, cos 1.48, erf 4.75;
 * the bounds below round them up (tests/unit/test_numerics.c re-measures
 * on another sweep and asserts them):
 *   exp       [-87.3, 88.7]     HLO_NUM_ULP_EXP
 *   expm1     [-87.3, 88.7]     HLO_NUM_ULP_EXPM1
 *   log       (0, inf)          HLO_NUM_ULP_LOG
 *   log1p     (-1, 1e30]        HLO_NUM_ULP_LOG1P
 *   tanh      all               HLO_NUM_ULP_TANH
 *   logistic  [-87, 87]         HLO_NUM_ULP_LOGISTIC
 *   sqrt      [0, inf)          HLO_NUM_ULP_SQRT (correctly rounded)
 *   rsqrt     (0, inf)          HLO_NUM_ULP_RSQRT
 *   sin, cos  [-1e4, 1e4]       HLO_NUM_ULP_SINCOS (absolute error <= 2^-24 near
 *                                the zeros, where ulps of a tiny result are
 *                                not meaningful)
 *   erf       all               HLO_NUM_ULP_ERF
 * Results that are subnormal are flushed; NaN in gives NaN out; the other
 * f32 math ops (tan, cbrt, atan2, power, remainder) use libm in f32.
 */
#ifndef TUNE_HLO_NUMERICS_H
#define TUNE_HLO_NUMERICS_H

#include <stdint.h>

#include "hlo.h"

/* How many bf16 MXU passes an f32 dot takes (see "Dot precision" above).
 * The device's config knob and the emulating reference both name it. */
typedef enum hlo_num_precision {
  HLO_NUM_PREC_DEFAULT = 0, /* f32 dot operands rounded to bf16, one pass */
  HLO_NUM_PREC_HIGH,        /* 3 bf16 passes */
  HLO_NUM_PREC_HIGHEST      /* 6 bf16 passes */
} hlo_num_precision;

/* How many bf16 parts each f32 dot operand is split into at precision p
 * (hlo_num_dot_split fills that many; the rest stay 0). */
static inline int hlo_num_dot_parts(hlo_num_precision p) {
  return p == HLO_NUM_PREC_HIGHEST ? 3 : p == HLO_NUM_PREC_HIGH ? 2 : 1;
}

#define HLO_NUM_ULP_EXP 1.5
#define HLO_NUM_ULP_EXPM1 2.5
#define HLO_NUM_ULP_LOG 1.0
#define HLO_NUM_ULP_LOG1P 2.5
#define HLO_NUM_ULP_TANH 2.5
#define HLO_NUM_ULP_LOGISTIC 2.5
#define HLO_NUM_ULP_SQRT 0.5
#define HLO_NUM_ULP_RSQRT 1.5
#define HLO_NUM_ULP_SINCOS 1.5
#define HLO_NUM_ULP_ERF 5.0

/* The error bound above, in ulps of the exact result, of the f32 function
 * the device computes for unary op `op` through its own approximation
 * (exp, expm1, log, log1p, tanh, logistic, sqrt, rsqrt, sin, cos, erf);
 * 0 for every other op, which the device either rounds correctly (the
 * arithmetic ops) or does not approximate itself (the libm ones). */
double hlo_num_ulp_bound(hlo_opcode op);

/* Inline: it runs once per product and sum of every dot. */
static inline float hlo_num_ftz_f32(float x) {
  union {
    float f;
    uint32_t u;
  } b = {x};
  if ((b.u & 0x7F800000u) == 0) /* zero or subnormal: keep the sign only */
    b.u &= 0x80000000u;
  return b.f;
}

/* The bf16 parts of x for a dot at precision p (x is flushed first): parts[0]
 * = hi, parts[1] = mid (0 at DEFAULT), parts[2] = lo (0 below HIGHEST). */
void hlo_num_dot_split(float x, hlo_num_precision p, float parts[3]);
/* The product a*b as the MXU passes of precision p compute it (see above),
 * flushed. */
float hlo_num_dot_product(float a, float b, hlo_num_precision p);
/* The product of two split operands (hlo_num_dot_split), as hlo_num_dot_product
 * computes it: for a caller that splits each operand once and reuses it. */
float hlo_num_dot_parts_product(const float x[3], const float y[3], hlo_num_precision p);
/* acc + a*b with the device's passes and flushing: one dot step. */
float hlo_num_dot_acc(float acc, float a, float b, hlo_num_precision p);
/* The precision the device uses for a dot instruction: the maximum of its
 * operand_precision entries, raised to at least cfg_prec. */
hlo_num_precision hlo_num_dot_precision(const hlo_instr *dot, hlo_num_precision cfg_prec);

float hlo_num_exp_f32(float x);
float hlo_num_expm1_f32(float x);
float hlo_num_log_f32(float x);
float hlo_num_log1p_f32(float x);
float hlo_num_tanh_f32(float x);
float hlo_num_logistic_f32(float x);
float hlo_num_sqrt_f32(float x);
float hlo_num_rsqrt_f32(float x);
float hlo_num_sin_f32(float x);
float hlo_num_cos_f32(float x);
float hlo_num_erf_f32(float x);

/* Elementwise f32 arithmetic as the device performs it, including the FTZ of
 * inputs and result: op is an HLO opcode (abs, negate, exponential, ... /
 * add, subtract, ...).  Returns 1 and sets *out when op is one the device
 * computes in f32 arithmetic, 0 (out untouched) otherwise (compare, convert,
 * max/min, data movement...): the caller then uses its own rule.  For
 * bf16/f16, call with the f32 values and round the result to the type. */
int hlo_num_unary_f32(hlo_opcode op, float x, float *out);
int hlo_num_binary_f32(hlo_opcode op, float x, float y, float *out);

/* Block forms for an emulating evaluator: o[i] = op(x[i]) / op(x[i], y[i])
 * for i < n.  Return 1 when handled (all n written), 0 when op is not a
 * device-arithmetic op (nothing written). */
int hlo_num_unary_f32_block(hlo_opcode op, const float *x, float *o, int64_t n);
int hlo_num_binary_f32_block(hlo_opcode op, const float *x, const float *y, float *o, int64_t n);

/* o[i] = x[i] rounded to f16 (bf16) and widened back, i.e. exactly
 * hlo_f16_to_f32(hlo_f32_to_f16(x[i])) (hlo_bf16_to_f32(hlo_f32_to_bf16(...)))
 * for every input, NaNs included (they become the type's quiet NaN of the
 * same sign; bf16 keeps the top payload bits), written without branches so
 * a row of them vectorises: a convert between f32 and f16 (bf16), either
 * way, is this function on the device's f32-valued slots. */
void hlo_num_round_f16_block(const float *x, float *o, int64_t n);
void hlo_num_round_bf16_block(const float *x, float *o, int64_t n);

#endif
