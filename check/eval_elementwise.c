/* eval_elementwise.c — the elementwise family of the reference evaluator:
 * unary and binary arithmetic, compare, select, clamp, convert,
 * bitcast-convert, reduce-precision, is-finite, popcnt, clz, real/imag/complex.
 *
 * Every op runs as a block program (eval_fuse.h): chk_op_elementwise builds a
 * one-node program and the block-by-block chain evaluator builds longer ones,
 * and both end up in chk_ew_block below.  So there is one set of kernels, one
 * loop per (op, compute type), dispatched by a switch outside the loop.
 *
 * Numerics, and where each rule comes from:
 *   - f16, bf16 and every f8/f4 type compute in f32 and are rounded (RNE) to
 *     their own type after every op: XLA's HloEvaluator instantiates these
 *     types with ElementwiseT = float, and its CPU backend upcasts the same
 *     way.  f32 computes in float, f64 in double; transcendental functions are
 *     the libm function of that width (expf for f32, exp for f64), which is
 *     what the evaluator's std:: calls resolve to.
 *   - maximum/minimum propagate NaN (the NaN operand is returned, lhs first),
 *     and order -0 below +0: max(-0, +0) = +0 and min(-0, +0) = -0 in either
 *     operand order.  This is IEEE 754-2019 maximum/minimum, which is what
 *     XLA's CPU and GPU emitters produce (llvm_util.cc EmitFloatMax emits
 *     llvm.maximum unless fast-min-max is on) and what the StableHLO spec
 *     says.  (HloEvaluator itself uses std::max after its NaN checks and so
 *     returns the lhs on a +-0 tie; we follow the compiled backends.)
 *   - clamp(lo, x, hi) = min(hi, max(lo, x)) with the same max/min, and a
 *     NaN operand returned in the order lo, x, hi (HloEvaluator HandleClamp).
 *   - integer x/0 = -1 (all bits set: the maximum for unsigned types),
 *     x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0 (elemental_ir_emitter
 *     EmitIntegerDivide/Remainder).
 *   - shifts: the amount is read as an unsigned number of the operand's
 *     width; amounts >= the width give 0 (shift-left, shift-right-logical) or
 *     the sign fill (shift-right-arithmetic) — SaturateShiftIfNecessary.
 *   - integer power: x^0 = 1 and 1^y = 1; a negative exponent of a signed
 *     type gives 0 for any other base (so (-1)^-1 = 0: both HloEvaluator and
 *     EmitIntegerPow test only base == 1); otherwise exponentiation by
 *     squaring with wrap-around.  pred power is lhs || !rhs.
 *   - pred arithmetic: add and maximum are or, multiply and minimum are and
 *     (EmitPredBinaryOp).
 *   - compare TOTALORDER orders -NaN < -Inf < ... < -0 < +0 < ... < +Inf <
 *     +NaN by comparing sign-magnitude-flipped integer keys; unsigned types
 *     compare unsigned; an explicit type=UNSIGNED/SIGNED is honoured.
 *   - sign(+-0) = +-0, sign(NaN) = NaN; complex sign is x/|x| (0 for 0).
 *   - round-nearest-afz is round(), round-nearest-even is nearbyint() in the
 *     default rounding mode; remainder of floats is fmod (sign of dividend);
 *     logistic is 1/(1+exp(-x)); rsqrt is 1/sqrt(x).
 *   - convert and the rounding after narrow ops use hlo_dtype's exact rules
 *     (single RNE rounding, saturating float->int with NaN -> 0, wrapping
 *     int->int).
 *   - complex (c64/c128) uses C99 complex arithmetic and <complex.h>
 *     (cexpf, clogf, csqrtf, ctanf, ctanhf, ...): std::complex in XLA's
 *     evaluator lowers to the same builtins.  Supported: add, subtract,
 *     multiply, divide, power, negate, abs, sign, exponential,
 *     exponential-minus-one (cexp - 1), log, log-plus-one (clog(1 + x)),
 *     sqrt, rsqrt, sine, cosine, tan, tanh, logistic, real, imag, complex,
 *     compare EQ/NE, convert.
 * Sub-byte integers (s2/s4/u2/u4) compute in int8/uint8 and are wrapped to
 * their width after every op; ops where the width matters beyond wrapping
 * (shifts, popcnt, clz, unsigned compare) use the logical width.
 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_numerics.h"
#include "eval_fuse.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_minmax.h"
#include "hlo/hlo_clones.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bitcast-convert assumes a little-endian host"
#endif

/* ---- type helpers --------------------------------------------------------- */

/* Real floats narrower than f32: they live as float in blocks. */
static bool is_narrow_float(hlo_etype t) {
  return hlo_etype_class(t) == HLO_CLASS_FLOAT && hlo_etype_bits(t) < 32;
}

static bool is_int(hlo_etype t) {
  hlo_eclass k = hlo_etype_class(t);
  return k == HLO_CLASS_SINT || k == HLO_CLASS_UINT;
}

static bool is_sub_byte_int(hlo_etype t) { return is_int(t) && hlo_etype_bits(t) < 8; }

hlo_etype chk_ew_compute_type(hlo_etype t) {
  if (is_narrow_float(t))
    return HLO_F32;
  if (is_sub_byte_int(t))
    return hlo_etype_class(t) == HLO_CLASS_SINT ? HLO_S8 : HLO_U8;
  return t;
}

static bool is_value_type(hlo_etype t) {
  return t > HLO_INVALID && t < HLO_ETYPE_COUNT && hlo_etype_class(t) != HLO_CLASS_OTHER;
}

/* ---- what is supported ---------------------------------------------------- */

enum { C_PRED = 1, C_SINT = 2, C_UINT = 4, C_FLOAT = 8, C_COMPLEX = 16 };
#define C_INT (C_SINT | C_UINT)
#define C_REAL (C_INT | C_FLOAT)
#define C_ANY (C_PRED | C_REAL | C_COMPLEX)

static int class_bit(hlo_etype t) {
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_PRED: return C_PRED;
  case HLO_CLASS_SINT: return C_SINT;
  case HLO_CLASS_UINT: return C_UINT;
  case HLO_CLASS_FLOAT: return C_FLOAT;
  case HLO_CLASS_COMPLEX: return C_COMPLEX;
  default: return 0;
  }
}

/* Which operand classes each op accepts; 0 when the op is not elementwise. */
static int op_classes(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_SIGN:
    return C_REAL | C_COMPLEX;
  case HLO_OP_FLOOR: case HLO_OP_CEIL: case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN:
  case HLO_OP_CBRT: case HLO_OP_ERF: case HLO_OP_IS_FINITE: case HLO_OP_REDUCE_PRECISION:
  case HLO_OP_ATAN2:
    return C_FLOAT;
  case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC:
  case HLO_OP_TANH: case HLO_OP_SQRT: case HLO_OP_RSQRT: case HLO_OP_SINE: case HLO_OP_COSINE:
  case HLO_OP_TAN:
    return C_FLOAT | C_COMPLEX;
  case HLO_OP_NOT: case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
    return C_PRED | C_INT;
  case HLO_OP_POPCNT: case HLO_OP_CLZ: case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC:
  case HLO_OP_SHIFT_RIGHT_LOGICAL:
    return C_INT;
  case HLO_OP_ADD: case HLO_OP_MULTIPLY: case HLO_OP_POWER:
    return C_ANY;
  case HLO_OP_SUBTRACT: case HLO_OP_DIVIDE:
    return C_REAL | C_COMPLEX;
  case HLO_OP_REMAINDER:
    return C_REAL;
  case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_CLAMP:
    return C_PRED | C_REAL;
  case HLO_OP_COMPARE: case HLO_OP_SELECT: case HLO_OP_CONVERT:
    return C_ANY;
  case HLO_OP_REAL: case HLO_OP_IMAG:
    return C_FLOAT | C_COMPLEX;
  case HLO_OP_COMPLEX:
    return C_FLOAT;
  default:
    return 0;
  }
}

static int op_arity(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_DIVIDE:
  case HLO_OP_REMAINDER: case HLO_OP_POWER: case HLO_OP_ATAN2: case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM: case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR: case HLO_OP_SHIFT_LEFT:
  case HLO_OP_SHIFT_RIGHT_ARITHMETIC: case HLO_OP_SHIFT_RIGHT_LOGICAL: case HLO_OP_COMPARE:
  case HLO_OP_COMPLEX:
    return 2;
  case HLO_OP_SELECT: case HLO_OP_CLAMP:
    return 3;
  default:
    return 1;
  }
}

const char *chk_ew_unsupported(const hlo_instr *ins) {
  hlo_opcode op = ins->op;
  int classes = op_classes(op);
  if (!classes)
    return "not an elementwise op";
  if (ins->noperands != op_arity(op))
    return "wrong number of operands";
  if (ins->shape.type == HLO_TUPLE || !is_value_type(ins->shape.type))
    return "result is not an array of numbers";
  for (int k = 0; k < ins->noperands; k++)
    if (!is_value_type(ins->operands[k]->shape.type))
      return "operand is not an array of numbers";
  hlo_etype rt = ins->shape.type;
  /* The operand whose type decides the kernel: select's data operands, the
   * first operand otherwise. */
  hlo_etype t = ins->operands[op == HLO_OP_SELECT ? 1 : 0]->shape.type;
  if (!(class_bit(t) & classes))
    return "operand element type is not supported by this op";
  switch (op) {
  case HLO_OP_CONVERT:
    return NULL;
  case HLO_OP_COMPARE:
    if (rt != HLO_PRED)
      return "compare must produce pred";
    if (ins->operands[1]->shape.type != t)
      return "compare operands differ in element type";
    if (class_bit(t) == C_COMPLEX && ins->attrs.direction != HLO_CMP_EQ &&
        ins->attrs.direction != HLO_CMP_NE)
      return "complex numbers compare only for EQ and NE";
    if (ins->attrs.direction < HLO_CMP_EQ || ins->attrs.direction > HLO_CMP_GE)
      return "compare has no direction";
    return NULL;
  case HLO_OP_SELECT:
    if (ins->operands[0]->shape.type != HLO_PRED)
      return "select's predicate must be pred";
    if (ins->operands[2]->shape.type != t || rt != t)
      return "select operands and result differ in element type";
    return NULL;
  case HLO_OP_IS_FINITE:
    return rt == HLO_PRED ? NULL : "is-finite must produce pred";
  case HLO_OP_REAL: case HLO_OP_IMAG:
    if (class_bit(t) == C_COMPLEX)
      return rt == (t == HLO_C64 ? HLO_F32 : HLO_F64) ? NULL : "real/imag result type mismatch";
    return rt == t ? NULL : "real/imag result type mismatch";
  case HLO_OP_ABS:
    if (class_bit(t) == C_COMPLEX)
      return rt == (t == HLO_C64 ? HLO_F32 : HLO_F64) ? NULL : "complex abs result type mismatch";
    return rt == t ? NULL : "abs result type mismatch";
  case HLO_OP_COMPLEX:
    if ((t != HLO_F32 && t != HLO_F64) || ins->operands[1]->shape.type != t)
      return "complex takes two f32 or two f64 operands";
    return rt == (t == HLO_F32 ? HLO_C64 : HLO_C128) ? NULL : "complex result type mismatch";
  case HLO_OP_REDUCE_PRECISION:
    if (!(ins->attrs.has & HLO_A_EXPONENT_BITS) || !(ins->attrs.has & HLO_A_MANTISSA_BITS))
      return "reduce-precision needs exponent_bits and mantissa_bits";
    if (ins->attrs.exponent_bits < 1 || ins->attrs.mantissa_bits < 0)
      return "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0";
    break;
  default:
    break;
  }
  if (rt != t)
    return "result element type differs from the operands'";
  for (int k = 1; k < ins->noperands; k++) {
    hlo_etype ot = ins->operands[k]->shape.type;
    if (ot != t)
      return "operands differ in element type";
  }
  return NULL;
}

/* ---- small scalar helpers --------------------------------------------------- */

/* Every kernel loop.  At -O2 GCC vectorizes only loops whose trip count is a
 * known multiple of the vector width, so the loops ask for it with
 * `omp simd` (elementwise loops carry no dependence, and vector lanes give
 * the same results as scalar code: no reassociation is involved; libm calls
 * stay scalar because glibc declares no vector variants without
 * -ffast-math). */
#ifdef _OPENMP
#define SIMD _Pragma("omp simd")
#else
#define SIMD
#endif
#define EACH(stmt)                       \
  do {                                   \
    SIMD                                 \
    for (int64_t i = 0; i < n; i++) {    \
      stmt;                              \
    }                                    \
  } while (0)
/* The simple float kernels also come in AVX2 and AVX-512 builds, picked once
 * at load time (GCC function multiversioning): the same IEEE operations on
 * wider vectors, so the results are bitwise those of the SSE2 build.  None of
 * these targets enables FMA, so no multiply-add can be contracted. */
/* Loops that call libm or libgcc (expf, fmodf, __mulsc3, popcount...): not
 * vectorizable without vector math variants, so no simd request. */
#define EACH_CALL(stmt)                  \
  do {                                   \
    for (int64_t i = 0; i < n; i++) {    \
      stmt;                              \
    }                                    \
  } while (0)

/* IEEE 754-2019 maximum/minimum (see the header comment): hlo_minmax.h. */

static inline float clamp_f(float lo, float x, float hi) {
  if (isnan(lo)) return lo;
  if (isnan(x)) return x;
  if (isnan(hi)) return hi;
  return hlo_min_f32(hi, hlo_max_f32(lo, x));
}
static inline double clamp_d(double lo, double x, double hi) {
  if (isnan(lo)) return lo;
  if (isnan(x)) return x;
  if (isnan(hi)) return hi;
  return hlo_min_f64(hi, hlo_max_f64(lo, x));
}

/* Total-order keys: flipping the magnitude bits of negative numbers makes
 * signed integer order equal the IEEE totalOrder predicate. */
static inline int32_t key_f(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  uint32_t flip = (b >> 31) ? 0x7FFFFFFFu : 0u;
  return (int32_t)(b ^ flip);
}
static inline int64_t key_d(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  uint64_t flip = (b >> 63) ? 0x7FFFFFFFFFFFFFFFull : 0u;
  return (int64_t)(b ^ flip);
}

/* Integer power by squaring in unsigned arithmetic (wraps). */
static uint64_t ipow_bits(uint64_t base, uint64_t e) {
  uint64_t acc = 1;
  while (e) {
    if (e & 1u)
      acc *= base;
    base *= base;
    e >>= 1;
  }
  return acc;
}

static inline uint64_t width_mask(int w) { return w >= 64 ? ~0ull : ((1ull << w) - 1u); }

/* ---- float kernels (T = float with libm suffix f, or double) --------------- */

#define FLOAT_UNARY(T, S, RP)                                                              \
  do {                                                                                     \
    const T *x = in[0];                                                                    \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
    case HLO_OP_ABS: EACH(o[i] = fabs##S(x[i])); break;                                    \
    case HLO_OP_NEGATE: EACH(o[i] = -x[i]); break;                                         \
    case HLO_OP_SIGN:                                                                      \
      EACH(T v = x[i]; o[i] = isnan(v) ? v : v > 0 ? (T)1 : v < 0 ? (T)-1 : v);            \
      break;                                                                               \
    case HLO_OP_FLOOR: EACH_CALL(o[i] = floor##S(x[i])); break;                                 \
    case HLO_OP_CEIL: EACH_CALL(o[i] = ceil##S(x[i])); break;                                   \
    case HLO_OP_ROUND_AFZ: EACH_CALL(o[i] = round##S(x[i])); break;                             \
    case HLO_OP_ROUND_EVEN: EACH_CALL(o[i] = nearbyint##S(x[i])); break;                        \
    case HLO_OP_EXP: EACH_CALL(o[i] = exp##S(x[i])); break;                                     \
    case HLO_OP_EXPM1: EACH_CALL(o[i] = expm1##S(x[i])); break;                                 \
    case HLO_OP_LOG: EACH_CALL(o[i] = log##S(x[i])); break;                                     \
    case HLO_OP_LOG1P: EACH_CALL(o[i] = log1p##S(x[i])); break;                                 \
    case HLO_OP_LOGISTIC: EACH_CALL(o[i] = (T)1 / ((T)1 + exp##S(-x[i]))); break;               \
    case HLO_OP_TANH: EACH_CALL(o[i] = tanh##S(x[i])); break;                                   \
    case HLO_OP_SQRT: EACH_CALL(o[i] = sqrt##S(x[i])); break;                                   \
    case HLO_OP_RSQRT: EACH_CALL(o[i] = (T)1 / sqrt##S(x[i])); break;                           \
    case HLO_OP_CBRT: EACH_CALL(o[i] = cbrt##S(x[i])); break;                                   \
    case HLO_OP_SINE: EACH_CALL(o[i] = sin##S(x[i])); break;                                    \
    case HLO_OP_COSINE: EACH_CALL(o[i] = cos##S(x[i])); break;                                  \
    case HLO_OP_TAN: EACH_CALL(o[i] = tan##S(x[i])); break;                                     \
    case HLO_OP_ERF: EACH_CALL(o[i] = erf##S(x[i])); break;                                     \
    case HLO_OP_REAL: EACH(o[i] = x[i]); break;                                            \
    case HLO_OP_IMAG: EACH(o[i] = 0); break;                                               \
    case HLO_OP_REDUCE_PRECISION: {                                                        \
      int eb = (int)ins->attrs.exponent_bits, mb = (int)ins->attrs.mantissa_bits;          \
      EACH_CALL(o[i] = RP(x[i], eb, mb));                                                       \
      break;                                                                               \
    }                                                                                      \
    case HLO_OP_IS_FINITE: {                                                               \
      uint8_t *p = out;                                                                    \
      EACH(p[i] = (uint8_t)isfinite(x[i]));                                                \
      break;                                                                               \
    }                                                                                      \
    default: break;                                                                        \
    }                                                                                      \
  } while (0)

#define FLOAT_BINARY(T, S, MAX, MIN)                                                       \
  do {                                                                                     \
    const T *x = in[0], *y = in[1];                                                        \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
    case HLO_OP_ADD: EACH(o[i] = x[i] + y[i]); break;                                      \
    case HLO_OP_SUBTRACT: EACH(o[i] = x[i] - y[i]); break;                                 \
    case HLO_OP_MULTIPLY: EACH(o[i] = x[i] * y[i]); break;                                 \
    case HLO_OP_DIVIDE: EACH(o[i] = x[i] / y[i]); break;                                   \
    case HLO_OP_REMAINDER: EACH_CALL(o[i] = fmod##S(x[i], y[i])); break;                        \
    case HLO_OP_POWER: EACH_CALL(o[i] = pow##S(x[i], y[i])); break;                             \
    case HLO_OP_ATAN2: EACH_CALL(o[i] = atan2##S(x[i], y[i])); break;                           \
    case HLO_OP_MAXIMUM: EACH(o[i] = MAX(x[i], y[i])); break;                              \
    case HLO_OP_MINIMUM: EACH(o[i] = MIN(x[i], y[i])); break;                              \
    default: break;                                                                        \
    }                                                                                      \
  } while (0)

static void float_unary(const hlo_instr *ins, hlo_etype ct, const void *const *in, void *out, int64_t n,
                        int emulate) {
  hlo_opcode op = ins->op;
  /* --emulate-device: the device's approximations and flushing, for the
   * ops the device computes in f32 arithmetic. */
  if (ct == HLO_F32 && emulate && hlo_num_unary_f32_block(op, in[0], out, n))
    return;
  if (ct == HLO_F32)
    FLOAT_UNARY(float, f, hlo_reduce_precision_f32);
  else
    FLOAT_UNARY(double, , hlo_reduce_precision);
}

HLO_CLONES
static void float_binary(hlo_opcode op, hlo_etype ct, const void *const *in, void *out, int64_t n,
                         int emulate) {
  if (ct == HLO_F32 && emulate && hlo_num_binary_f32_block(op, in[0], in[1], out, n))
    return;
  if (ct == HLO_F32)
    FLOAT_BINARY(float, f, hlo_max_f32, hlo_min_f32);
  else
    FLOAT_BINARY(double, , hlo_max_f64, hlo_min_f64);
}

/* ---- complex kernels ---------------------------------------------------------- */

#define COMPLEX_UNARY(C, R, S)                                                             \
  do {                                                                                     \
    const C *x = in[0];                                                                    \
    C *o = out;                                                                            \
    R *r = out;                                                                            \
    switch (op) {                                                                          \
    case HLO_OP_ABS: EACH_CALL(r[i] = cabs##S(x[i])); break;                                    \
    case HLO_OP_REAL: EACH_CALL(r[i] = creal##S(x[i])); break;                                  \
    case HLO_OP_IMAG: EACH_CALL(r[i] = cimag##S(x[i])); break;                                  \
    case HLO_OP_NEGATE: EACH_CALL(o[i] = -x[i]); break;                                         \
    case HLO_OP_SIGN:                                                                      \
      EACH_CALL(R a = cabs##S(x[i]); o[i] = a == 0 ? (C)0 : x[i] / a);                          \
      break;                                                                               \
    case HLO_OP_EXP: EACH_CALL(o[i] = cexp##S(x[i])); break;                                    \
    case HLO_OP_EXPM1: EACH_CALL(o[i] = cexp##S(x[i]) - (R)1); break;                           \
    case HLO_OP_LOG: EACH_CALL(o[i] = clog##S(x[i])); break;                                    \
    case HLO_OP_LOG1P: EACH_CALL(o[i] = clog##S(x[i] + (R)1)); break;                           \
    case HLO_OP_LOGISTIC: EACH_CALL(o[i] = (R)1 / ((R)1 + cexp##S(-x[i]))); break;              \
    case HLO_OP_SQRT: EACH_CALL(o[i] = csqrt##S(x[i])); break;                                  \
    case HLO_OP_RSQRT: EACH_CALL(o[i] = (R)1 / csqrt##S(x[i])); break;                          \
    case HLO_OP_SINE: EACH_CALL(o[i] = csin##S(x[i])); break;                                   \
    case HLO_OP_COSINE: EACH_CALL(o[i] = ccos##S(x[i])); break;                                 \
    case HLO_OP_TAN: EACH_CALL(o[i] = ctan##S(x[i])); break;                                    \
    case HLO_OP_TANH: EACH_CALL(o[i] = ctanh##S(x[i])); break;                                  \
    default: break;                                                                        \
    }                                                                                      \
  } while (0)

#define COMPLEX_BINARY(C, S)                                                               \
  do {                                                                                     \
    const C *x = in[0], *y = in[1];                                                        \
    C *o = out;                                                                            \
    switch (op) {                                                                          \
    case HLO_OP_ADD: EACH_CALL(o[i] = x[i] + y[i]); break;                                      \
    case HLO_OP_SUBTRACT: EACH_CALL(o[i] = x[i] - y[i]); break;                                 \
    case HLO_OP_MULTIPLY: EACH_CALL(o[i] = x[i] * y[i]); break;                                 \
    case HLO_OP_DIVIDE: EACH_CALL(o[i] = x[i] / y[i]); break;                                   \
    case HLO_OP_POWER:                                                                     \
      /* HloEvaluator: 1^y = 1 and x^0 = 1 before falling back to pow */                   \
      EACH_CALL(o[i] = (x[i] == 1 || y[i] == 0) ? (C)1 : cpow##S(x[i], y[i]));                  \
      break;                                                                               \
    default: break;                                                                        \
    }                                                                                      \
  } while (0)

static void complex_unary(hlo_opcode op, hlo_etype ct, const void *const *in, void *out, int64_t n) {
  if (ct == HLO_C64)
    COMPLEX_UNARY(float complex, float, f);
  else
    COMPLEX_UNARY(double complex, double, );
}

static void complex_binary(hlo_opcode op, hlo_etype ct, const void *const *in, void *out, int64_t n) {
  if (ct == HLO_C64)
    COMPLEX_BINARY(float complex, f);
  else
    COMPLEX_BINARY(double complex, );
}

/* ---- integer kernels ----------------------------------------------------------- */

/* X(compute type, C type, unsigned arithmetic type) */
#define SINT_TYPES(X)                  \
  X(HLO_S8, int8_t, uint32_t)          \
  X(HLO_S16, int16_t, uint32_t)        \
  X(HLO_S32, int32_t, uint32_t)        \
  X(HLO_S64, int64_t, uint64_t)
#define UINT_TYPES(X)                  \
  X(HLO_U8, uint8_t, uint32_t)         \
  X(HLO_U16, uint16_t, uint32_t)       \
  X(HLO_U32, uint32_t, uint32_t)       \
  X(HLO_U64, uint64_t, uint64_t)

/* Ops whose code is the same for signed and unsigned types.  Arithmetic is
 * done in an unsigned type of at least int's width (no signed overflow, no
 * promotion to int), then truncated to T: two's complement wrap.  Shifts
 * work on the w-bit pattern (w = the logical width, < 8 for s4/u4...): the
 * result is wrapped back to the type afterwards. */
#define INT_COMMON_BINARY(T, A)                                                            \
  case HLO_OP_ADD: EACH(o[i] = (T)((A)x[i] + (A)y[i])); break;                             \
  case HLO_OP_SUBTRACT: EACH(o[i] = (T)((A)x[i] - (A)y[i])); break;                        \
  case HLO_OP_MULTIPLY: EACH(o[i] = (T)((A)x[i] * (A)y[i])); break;                        \
  case HLO_OP_AND: EACH(o[i] = (T)(x[i] & y[i])); break;                                   \
  case HLO_OP_OR: EACH(o[i] = (T)(x[i] | y[i])); break;                                    \
  case HLO_OP_XOR: EACH(o[i] = (T)(x[i] ^ y[i])); break;                                   \
  case HLO_OP_MAXIMUM: EACH(o[i] = x[i] >= y[i] ? x[i] : y[i]); break;                     \
  case HLO_OP_MINIMUM: EACH(o[i] = x[i] <= y[i] ? x[i] : y[i]); break;                     \
  case HLO_OP_SHIFT_LEFT:                                                                  \
    EACH(A s = (A)y[i] & (A)mask; o[i] = s >= (A)w ? (T)0 : (T)((A)x[i] << s));             \
    break;                                                                                 \
  case HLO_OP_SHIFT_RIGHT_LOGICAL:                                                         \
    EACH(A s = (A)y[i] & (A)mask; o[i] = s >= (A)w ? (T)0 : (T)(((A)x[i] & (A)mask) >> s)); \
    break;                                                                                 \
  case HLO_OP_SHIFT_RIGHT_ARITHMETIC:                                                      \
    EACH(A s = (A)y[i] & (A)mask; A v = (A)x[i] & (A)mask; A neg = (v >> (w - 1)) & 1u;     \
         A fill = neg ? (A)mask : 0;                                                       \
         o[i] = s >= (A)w ? (T)fill : (T)((v >> s) | (fill & ~((A)mask >> s))));            \
    break;

#define SINT_BINARY_CASE(E, T, A)                                                          \
  case E: {                                                                                \
    const T *x = in[0], *y = in[1];                                                        \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
      INT_COMMON_BINARY(T, A)                                                              \
    case HLO_OP_DIVIDE:                                                                    \
      EACH_CALL(o[i] = y[i] == 0 ? (T)-1 : y[i] == -1 ? (T)(0u - (A)x[i]) : (T)(x[i] / y[i]));  \
      break;                                                                               \
    case HLO_OP_REMAINDER:                                                                 \
      EACH_CALL(o[i] = y[i] == 0 ? x[i] : y[i] == -1 ? (T)0 : (T)(x[i] % y[i]));                \
      break;                                                                               \
    case HLO_OP_POWER:                                                                     \
      EACH_CALL(o[i] = (x[i] == 1 || y[i] == 0) ? (T)1                                          \
                  : y[i] < 0               ? (T)0                                          \
                                           : (T)ipow_bits((uint64_t)(int64_t)x[i], (uint64_t)y[i])); \
      break;                                                                               \
    default: break;                                                                        \
    }                                                                                      \
    break;                                                                                 \
  }

#define UINT_BINARY_CASE(E, T, A)                                                          \
  case E: {                                                                                \
    const T *x = in[0], *y = in[1];                                                        \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
      INT_COMMON_BINARY(T, A)                                                              \
    case HLO_OP_DIVIDE: EACH_CALL(o[i] = y[i] == 0 ? (T)-1 : (T)(x[i] / y[i])); break;          \
    case HLO_OP_REMAINDER: EACH_CALL(o[i] = y[i] == 0 ? x[i] : (T)(x[i] % y[i])); break;        \
    case HLO_OP_POWER: EACH_CALL(o[i] = (T)ipow_bits(x[i], y[i])); break;                       \
    default: break;                                                                        \
    }                                                                                      \
    break;                                                                                 \
  }

/* w: logical width of the element type (4 for s4), mask its bit mask. */
static void int_binary(hlo_opcode op, hlo_etype ct, int w, const void *const *in, void *out, int64_t n) {
  uint64_t mask = width_mask(w);
  switch (ct) {
    SINT_TYPES(SINT_BINARY_CASE)
    UINT_TYPES(UINT_BINARY_CASE)
  default: break;
  }
}

/* Leading zeros of the w-bit pattern v (v < 2^w). */
static inline int clz_w(uint64_t v, int w) { return v ? __builtin_clzll(v) - (64 - w) : w; }

#define INT_COMMON_UNARY(T, A)                                                             \
  case HLO_OP_NOT: EACH(o[i] = (T)~x[i]); break;                                           \
  case HLO_OP_NEGATE: EACH(o[i] = (T)(0u - (A)x[i])); break;                               \
  case HLO_OP_POPCNT: EACH_CALL(o[i] = (T)__builtin_popcountll((uint64_t)(A)x[i] & mask)); break; \
  case HLO_OP_CLZ: EACH_CALL(o[i] = (T)clz_w((uint64_t)(A)x[i] & mask, w)); break;

#define SINT_UNARY_CASE(E, T, A)                                                           \
  case E: {                                                                                \
    const T *x = in[0];                                                                    \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
      INT_COMMON_UNARY(T, A)                                                               \
    case HLO_OP_ABS: EACH(o[i] = x[i] < 0 ? (T)(0u - (A)x[i]) : x[i]); break;              \
    case HLO_OP_SIGN: EACH(o[i] = (T)((x[i] > 0) - (x[i] < 0))); break;                    \
    default: break;                                                                        \
    }                                                                                      \
    break;                                                                                 \
  }

#define UINT_UNARY_CASE(E, T, A)                                                           \
  case E: {                                                                                \
    const T *x = in[0];                                                                    \
    T *o = out;                                                                            \
    switch (op) {                                                                          \
      INT_COMMON_UNARY(T, A)                                                               \
    case HLO_OP_ABS: EACH(o[i] = x[i]); break;                                             \
    case HLO_OP_SIGN: EACH(o[i] = (T)(x[i] != 0)); break;                                  \
    default: break;                                                                        \
    }                                                                                      \
    break;                                                                                 \
  }

static void int_unary(hlo_opcode op, hlo_etype ct, int w, const void *const *in, void *out, int64_t n) {
  uint64_t mask = width_mask(w);
  switch (ct) {
    SINT_TYPES(SINT_UNARY_CASE)
    UINT_TYPES(UINT_UNARY_CASE)
  default: break;
  }
}

/* ---- pred kernels -------------------------------------------------------------- */

static void pred_op(hlo_opcode op, const void *const *in, void *out, int64_t n) {
  const uint8_t *x = in[0], *y = in[1];
  uint8_t *o = out;
  switch (op) {
  case HLO_OP_NOT: EACH(o[i] = !x[i]); break;
  case HLO_OP_AND: case HLO_OP_MULTIPLY: case HLO_OP_MINIMUM:
    EACH(o[i] = x[i] && y[i]);
    break;
  case HLO_OP_OR: case HLO_OP_ADD: case HLO_OP_MAXIMUM:
    EACH(o[i] = x[i] || y[i]);
    break;
  case HLO_OP_XOR: EACH(o[i] = !x[i] != !y[i]); break;
  case HLO_OP_POWER: EACH(o[i] = x[i] || !y[i]); break;
  default: break;
  }
}

/* ---- compare ------------------------------------------------------------------- */

/* One loop per direction over keys K(x[i]), K(y[i]). */
#define CMP_LOOPS(X, Y)                                                                    \
  do {                                                                                     \
    switch (dir) {                                                                         \
    case HLO_CMP_EQ: EACH(o[i] = (X) == (Y)); break;                                       \
    case HLO_CMP_NE: EACH(o[i] = (X) != (Y)); break;                                       \
    case HLO_CMP_LT: EACH(o[i] = (X) < (Y)); break;                                        \
    case HLO_CMP_LE: EACH(o[i] = (X) <= (Y)); break;                                       \
    case HLO_CMP_GT: EACH(o[i] = (X) > (Y)); break;                                        \
    case HLO_CMP_GE: EACH(o[i] = (X) >= (Y)); break;                                       \
    default: break;                                                                        \
    }                                                                                      \
  } while (0)

#define INT_CMP_CASE(E, T, A)                                                              \
  case E: {                                                                                \
    const T *x = in[0], *y = in[1];                                                        \
    CMP_LOOPS(x[i], y[i]);                                                                 \
    break;                                                                                 \
  }

/* Widens an integer block to 64-bit patterns (a loop per type). */
#define WIDEN_CASE(E, T, A)                                                                \
  case E: {                                                                                \
    const T *x = p;                                                                        \
    EACH(o[i] = (uint64_t)(int64_t)x[i]);                                                  \
    break;                                                                                 \
  }
static void widen(hlo_etype ct, const void *p, uint64_t *o, int64_t n) {
  switch (ct) {
    SINT_TYPES(WIDEN_CASE)
    UINT_TYPES(WIDEN_CASE)
  default: break;
  }
}

static inline int64_t sext_w(uint64_t v, int w) {
  /* (v ^ sb) - sb overflows int64 for a negative 64-bit v */
  if (w >= 64)
    return (int64_t)v;
  uint64_t m = width_mask(w), sb = 1ull << (w - 1);
  v &= m;
  return (int64_t)(v ^ sb) - (int64_t)sb;
}

static void compare(const hlo_instr *ins, const void *const *in, void *out, int64_t n) {
  hlo_etype t = ins->operands[0]->shape.type, ct = chk_ew_compute_type(t);
  hlo_cmp_dir dir = ins->attrs.direction;
  hlo_cmp_type ty = ins->attrs.cmp_type;
  uint8_t *o = out;
  hlo_eclass cls = hlo_etype_class(t);
  if (cls == HLO_CLASS_FLOAT) {
    if (ct == HLO_F32) {
      const float *x = in[0], *y = in[1];
      if (ty == HLO_CMPT_TOTALORDER)
        CMP_LOOPS(key_f(x[i]), key_f(y[i]));
      else
        CMP_LOOPS(x[i], y[i]);
    } else {
      const double *x = in[0], *y = in[1];
      if (ty == HLO_CMPT_TOTALORDER)
        CMP_LOOPS(key_d(x[i]), key_d(y[i]));
      else
        CMP_LOOPS(x[i], y[i]);
    }
    return;
  }
  if (cls == HLO_CLASS_COMPLEX) {
    bool eq = dir == HLO_CMP_EQ;
    if (ct == HLO_C64) {
      const float *x = in[0], *y = in[1];
      EACH(bool e = x[2 * i] == y[2 * i] && x[2 * i + 1] == y[2 * i + 1]; o[i] = eq ? e : !e);
    } else {
      const double *x = in[0], *y = in[1];
      EACH(bool e = x[2 * i] == y[2 * i] && x[2 * i + 1] == y[2 * i + 1]; o[i] = eq ? e : !e);
    }
    return;
  }
  if (cls == HLO_CLASS_PRED) {
    const uint8_t *x = in[0], *y = in[1];
    CMP_LOOPS(x[i] != 0, y[i] != 0);
    return;
  }
  /* Integers: the natural signedness of the type unless the instruction
   * names the other one (then the w-bit pattern is reinterpreted). */
  bool is_signed = cls == HLO_CLASS_SINT;
  bool want_signed = ty == HLO_CMPT_SIGNED ? true : ty == HLO_CMPT_UNSIGNED ? false : is_signed;
  int w = hlo_etype_bits(t);
  if (want_signed == is_signed) {
    switch (ct) {
      SINT_TYPES(INT_CMP_CASE)
      UINT_TYPES(INT_CMP_CASE)
    default: break;
    }
  } else {
    /* The other signedness: compare the w-bit patterns reinterpreted. */
    uint64_t x[CHK_FUSE_BLOCK], y[CHK_FUSE_BLOCK];
    widen(ct, in[0], x, n);
    widen(ct, in[1], y, n);
    uint64_t m = width_mask(w);
    if (want_signed)
      CMP_LOOPS(sext_w(x[i], w), sext_w(y[i], w));
    else
      CMP_LOOPS(x[i] & m, y[i] & m);
  }
}

/* ---- select, clamp ---------------------------------------------------------------- */

static void select_op(size_t esz, const void *const *in, void *out, int64_t n) {
  const uint8_t *p = in[0];
  switch (esz) {
  case 1: { const uint8_t *a = in[1], *b = in[2]; uint8_t *o = out; EACH(o[i] = p[i] ? a[i] : b[i]); break; }
  case 2: { const uint16_t *a = in[1], *b = in[2]; uint16_t *o = out; EACH(o[i] = p[i] ? a[i] : b[i]); break; }
  case 4: { const uint32_t *a = in[1], *b = in[2]; uint32_t *o = out; EACH(o[i] = p[i] ? a[i] : b[i]); break; }
  case 8: { const uint64_t *a = in[1], *b = in[2]; uint64_t *o = out; EACH(o[i] = p[i] ? a[i] : b[i]); break; }
  default: {
    const uint64_t *a = in[1], *b = in[2];
    uint64_t *o = out;
    EACH_CALL(const uint64_t *s = p[i] ? a : b; o[2 * i] = s[2 * i]; o[2 * i + 1] = s[2 * i + 1]);
    break;
  }
  }
}

#define INT_CLAMP_CASE(E, T, A)                                                            \
  case E: {                                                                                \
    const T *lo = in[0], *x = in[1], *hi = in[2];                                          \
    T *o = out;                                                                            \
    EACH(T v = x[i] >= lo[i] ? x[i] : lo[i]; o[i] = hi[i] <= v ? hi[i] : v);               \
    break;                                                                                 \
  }

static void clamp_op(hlo_etype ct, const void *const *in, void *out, int64_t n) {
  switch (ct) {
  case HLO_F32: {
    const float *lo = in[0], *x = in[1], *hi = in[2];
    float *o = out;
    EACH(o[i] = clamp_f(lo[i], x[i], hi[i]));
    break;
  }
  case HLO_F64: {
    const double *lo = in[0], *x = in[1], *hi = in[2];
    double *o = out;
    EACH(o[i] = clamp_d(lo[i], x[i], hi[i]));
    break;
  }
  case HLO_PRED: {
    const uint8_t *lo = in[0], *x = in[1], *hi = in[2];
    uint8_t *o = out;
    EACH(uint8_t v = (x[i] != 0) | (lo[i] != 0); o[i] = v & (hi[i] != 0));
    break;
  }
    SINT_TYPES(INT_CLAMP_CASE)
    UINT_TYPES(INT_CLAMP_CASE)
  default: break;
  }
}

/* ---- conversions between storage and compute representations ------------------------ */

/* Rounds float values in place to narrow float type t (f32 -> t -> f32), so
 * a block holds exactly what storage would.  n <= CHK_FUSE_BLOCK. */
static void round_narrow(hlo_etype t, float *f, int64_t n) {
  if (t == HLO_BF16) {
    EACH(f[i] = hlo_bf16_to_f32(hlo_f32_to_bf16(f[i])));
  } else if (t == HLO_F16) {
    EACH_CALL(f[i] = hlo_f16_to_f32(hlo_f32_to_f16(f[i]))); /* branchy */
  } else {
    uint8_t tmp[CHK_FUSE_BLOCK];
    hlo_convert_array(HLO_F32, f, t, tmp, (size_t)n);
    hlo_convert_array(t, tmp, HLO_F32, f, (size_t)n);
  }
}

/* Wraps sub-byte integers in place to their width (two's complement). */
static void wrap_sub_byte(hlo_etype t, void *p, int64_t n) {
  int w = hlo_etype_bits(t);
  uint8_t m = (uint8_t)width_mask(w), sb = (uint8_t)(1u << (w - 1));
  if (hlo_etype_class(t) == HLO_CLASS_SINT) {
    int8_t *s = p;
    EACH(uint8_t u = (uint8_t)s[i] & m; s[i] = (int8_t)((int)(u ^ sb) - (int)sb));
  } else {
    uint8_t *u = p;
    EACH(u[i] &= m);
  }
}

/* ---- convert ----------------------------------------------------------------------- */

/* Exactly hlo_convert_array from the source type to the destination type;
 * blocks of narrow floats are re-encoded first (exact: they hold values of
 * their type) so that every rule of hlo_dtype applies unchanged. */
static void convert_op(hlo_etype s, hlo_etype d, const void *in, void *out, int64_t n) {
  hlo_etype cs = chk_ew_compute_type(s), cd = chk_ew_compute_type(d);
  if (s == d) {
    memcpy(out, in, (size_t)n * hlo_etype_host_size(cs));
    return;
  }
  /* Pairs where the compute representations make the conversion a copy or
   * a single rounding that hlo_convert_array would do the same way. */
  if ((s == HLO_BF16 || s == HLO_F16) && d == HLO_F32) {
    memcpy(out, in, (size_t)n * sizeof(float));
    return;
  }
  if (s == HLO_F32 && (d == HLO_BF16 || d == HLO_F16)) {
    memcpy(out, in, (size_t)n * sizeof(float));
    round_narrow(d, out, n);
    return;
  }
  uint16_t ts[CHK_FUSE_BLOCK], td[CHK_FUSE_BLOCK]; /* narrow storage: <= 16 bits */
  const void *src = in;
  if (cs != s && is_narrow_float(s)) {
    hlo_convert_array(HLO_F32, in, s, ts, (size_t)n);
    src = ts;
  }
  void *dst = (cd != d && is_narrow_float(d)) ? (void *)td : out;
  /* Sub-byte integers are stored exactly as their compute representation,
   * so the source/destination type is the real one in every case. */
  hlo_convert_array(s, src, d, dst, (size_t)n);
  if (dst != out)
    hlo_convert_array(d, td, HLO_F32, out, (size_t)n);
}

/* ---- one node over one block --------------------------------------------------------- */

void chk_ew_block(const hlo_instr *ins, const void *const *in, void *out, int64_t n, int emulate) {
  hlo_opcode op = ins->op;
  hlo_etype rt = ins->shape.type;
  hlo_etype t = ins->operands[op == HLO_OP_SELECT ? 1 : 0]->shape.type;
  hlo_etype ct = chk_ew_compute_type(t);
  hlo_eclass cls = hlo_etype_class(t);
  int w = hlo_etype_bits(t);

  switch (op) {
  case HLO_OP_CONVERT:
    convert_op(t, rt, in[0], out, n);
    return; /* exact already */
  case HLO_OP_SELECT:
    select_op(hlo_etype_host_size(ct), in, out, n);
    return; /* moves values, which are exact already */
  case HLO_OP_COMPARE:
    compare(ins, in, out, n);
    return;
  case HLO_OP_CLAMP:
    clamp_op(ct, in, out, n);
    break;
  case HLO_OP_COMPLEX:
    if (ct == HLO_F32) {
      const float *re = in[0], *im = in[1];
      float *o = out;
      EACH_CALL(o[2 * i] = re[i]; o[2 * i + 1] = im[i]); /* interleave */
    } else {
      const double *re = in[0], *im = in[1];
      double *o = out;
      EACH_CALL(o[2 * i] = re[i]; o[2 * i + 1] = im[i]); /* interleave */
    }
    return;
  default:
    if (cls == HLO_CLASS_PRED)
      pred_op(op, in, out, n);
    else if (cls == HLO_CLASS_FLOAT)
      (op_arity(op) == 1 ? float_unary(ins, ct, in, out, n, emulate) : float_binary(op, ct, in, out, n, emulate));
    else if (cls == HLO_CLASS_COMPLEX)
      (op_arity(op) == 1 ? complex_unary(op, ct, in, out, n) : complex_binary(op, ct, in, out, n));
    else
      (op_arity(op) == 1 ? int_unary(op, ct, w, in, out, n) : int_binary(op, ct, w, in, out, n));
    break;
  }
  /* Round or wrap to the result type, as storing it would. */
  if (is_narrow_float(rt))
    round_narrow(rt, out, n);
  else if (is_sub_byte_int(rt))
    wrap_sub_byte(rt, out, n);
}

/* ---- kernels with a one-element operand, and in-place safety ----------------------------
 * (internal to the block executor: eval_fuse.c declares these two itself.)
 *
 * A binary float op whose operand k is a splat (one element repeated over the
 * block) reads that element once instead of a block-sized buffer of copies.
 * The loops apply the same scalar functions (hlo_max_f32, ...) to the same values
 * in the same order per element as FLOAT_BINARY does, so results are
 * bitwise those of chk_ew_block with a splat buffer.  One exception is kept
 * out: when both operands of an add or multiply are NaN, x86 returns the
 * first source operand's NaN (sign and payload), and which operand comes
 * first is the compiler's choice for a commutative op — it differs between
 * a register-held constant and two loads.  So a NaN splat (nan set) of add
 * or multiply is refused and goes through the block kernel as before. */
bool chk_ew_splat_ok(const hlo_instr *ins, int k, bool nan) {
  switch (ins->op) {
  case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_DIVIDE:
  case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM:
    break;
  default:
    return false;
  }
  if (ins->noperands != 2 || (k != 0 && k != 1))
    return false;
  if (nan && (ins->op == HLO_OP_ADD || ins->op == HLO_OP_MULTIPLY))
    return false;
  hlo_etype t = ins->operands[0]->shape.type;
  if (hlo_etype_class(t) != HLO_CLASS_FLOAT || ins->operands[1]->shape.type != t || ins->shape.type != t)
    return false;
  hlo_etype ct = chk_ew_compute_type(t);
  return ct == HLO_F32 || ct == HLO_F64;
}

/* o = x OP c (k == 1) or c OP x (k == 0), x a block, c one element. */
#define FLOAT_BINARY_SPLAT(T, MAX, MIN)                                                    \
  do {                                                                                     \
    T *o = out;                                                                            \
    if (k == 1) {                                                                          \
      const T *x = in[0], c = *(const T *)in[1];                                           \
      switch (op) {                                                                        \
      case HLO_OP_ADD: EACH(o[i] = x[i] + c); break;                                       \
      case HLO_OP_SUBTRACT: EACH(o[i] = x[i] - c); break;                                  \
      case HLO_OP_MULTIPLY: EACH(o[i] = x[i] * c); break;                                  \
      case HLO_OP_DIVIDE: EACH(o[i] = x[i] / c); break;                                    \
      case HLO_OP_MAXIMUM: EACH(o[i] = MAX(x[i], c)); break;                               \
      case HLO_OP_MINIMUM: EACH(o[i] = MIN(x[i], c)); break;                               \
      default: break;                                                                      \
      }                                                                                    \
    } else {                                                                               \
      const T c = *(const T *)in[0], *y = in[1];                                           \
      switch (op) {                                                                        \
      case HLO_OP_ADD: EACH(o[i] = c + y[i]); break;                                       \
      case HLO_OP_SUBTRACT: EACH(o[i] = c - y[i]); break;                                  \
      case HLO_OP_MULTIPLY: EACH(o[i] = c * y[i]); break;                                  \
      case HLO_OP_DIVIDE: EACH(o[i] = c / y[i]); break;                                    \
      case HLO_OP_MAXIMUM: EACH(o[i] = MAX(c, y[i])); break;                               \
      case HLO_OP_MINIMUM: EACH(o[i] = MIN(c, y[i])); break;                               \
      default: break;                                                                      \
      }                                                                                    \
    }                                                                                      \
  } while (0)

/* Only for nodes that passed chk_ew_splat_ok(ins, k); out may be the
 * block operand's own buffer. */
HLO_CLONES
void chk_ew_block_splat(const hlo_instr *ins, const void *const *in, int k, void *out, int64_t n) {
  hlo_opcode op = ins->op;
  hlo_etype rt = ins->shape.type;
  if (chk_ew_compute_type(rt) == HLO_F32)
    FLOAT_BINARY_SPLAT(float, hlo_max_f32, hlo_min_f32);
  else
    FLOAT_BINARY_SPLAT(double, hlo_max_f64, hlo_min_f64);
  if (is_narrow_float(rt))
    round_narrow(rt, out, n);
}

/* May chk_ew_block (without emulation) write ins's result over one of its
 * operands' buffers?  True for the kernels that compute o[i] from the
 * operands' element i alone, in one compute type: every load of element i
 * happens before its store, and no other element is touched. */
bool chk_ew_in_place_ok(const hlo_instr *ins) {
  switch (ins->op) {
  case HLO_OP_CONVERT: case HLO_OP_BITCAST_CONVERT: case HLO_OP_COMPARE: case HLO_OP_SELECT:
  case HLO_OP_CLAMP: case HLO_OP_COMPLEX: case HLO_OP_IS_FINITE: case HLO_OP_REAL: case HLO_OP_IMAG:
    return false;
  default:
    break;
  }
  if (!op_classes(ins->op) || ins->noperands < 1 || ins->noperands > 2)
    return false;
  hlo_etype t = ins->shape.type;
  for (int k = 0; k < ins->noperands; k++)
    if (ins->operands[k]->shape.type != t)
      return false;
  hlo_eclass c = hlo_etype_class(t);
  return c == HLO_CLASS_FLOAT || c == HLO_CLASS_SINT || c == HLO_CLASS_UINT || c == HLO_CLASS_PRED;
}

/* ---- bitcast-convert ----------------------------------------------------------------- */

/* Same width: the bits are reinterpreted.  Different widths (both >= 8
 * bits): XLA adds or removes a minor dimension of size wide/narrow, and the
 * narrow elements are the wide one's bytes in memory order, i.e. the least
 * significant part first on a little-endian host — so the host bytes are
 * copied unchanged.  Sub-byte types are stored one per byte, so for them the
 * bits are masked or sign-extended; sub-byte width changes are refused. */
static hlo_value *bitcast_convert(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_value *a = ops[0];
  hlo_etype s = a->type, d = ins->shape.type;
  if (ins->noperands != 1 || s == HLO_TUPLE || d == HLO_TUPLE || !is_value_type(s) || !is_value_type(d))
    return chk_fail(ev, ins, "bitcast-convert needs one array operand and an array result");
  if (s == HLO_PRED || d == HLO_PRED)
    return chk_fail(ev, ins, "bitcast-convert to or from pred is not supported");
  int ws = hlo_etype_bits(s), wd = hlo_etype_bits(d);
  if (ws != wd && (ws < 8 || wd < 8))
    return chk_fail(ev, ins, "bitcast-convert between %s and %s (sub-byte width change) is not supported",
                    hlo_etype_name(s), hlo_etype_name(d));
  hlo_value *r = chk_result(ev, ins);
  if (!r)
    return NULL;
  size_t nbytes = (size_t)a->count * a->elem_size;
  if ((size_t)r->count * r->elem_size != nbytes) {
    hlo_value_unref(r);
    return chk_fail(ev, ins, "bitcast-convert: operand has %zu bytes, result %zu",
                    nbytes, (size_t)r->count * r->elem_size);
  }
  memcpy(r->data, a->data, nbytes);
  if (ws < 8 && s != d) {
    /* One w-bit pattern per byte: mask, then sign-extend for signed ints. */
    uint8_t m = (uint8_t)width_mask(ws);
    uint8_t *p = r->data;
    int64_t n = r->count;
    EACH(p[i] &= m);
    if (hlo_etype_class(d) == HLO_CLASS_SINT)
      wrap_sub_byte(d, p, n);
  }
  return r;
}

/* ---- the op family entry point -------------------------------------------------------- */

hlo_value *chk_op_elementwise(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op == HLO_OP_BITCAST_CONVERT)
    return bitcast_convert(ev, ins, ops);
  const char *why = chk_ew_unsupported(ins);
  if (why) {
    hlo_etype t = ins->noperands > 0 ? ins->operands[ins->op == HLO_OP_SELECT && ins->noperands > 1 ? 1 : 0]->shape.type
                                     : ins->shape.type;
    return chk_fail(ev, ins, "%s (element type %s)", why, hlo_etype_name(t));
  }
  /* A one-node block program: inputs are the operands, in order. */
  int arg[3] = {0, 1, 2}, argofs[1] = {0};
  unsigned char out[1] = {1};
  const hlo_instr *node[1] = {ins};
  chk_fuse_group g = {
      .root = ins,
      .nin = ins->noperands,
      .in = (const hlo_instr *const *)ins->operands,
      .nnode = 1,
      .node = node,
      .argofs = argofs,
      .arg = arg,
      .out = out,
  };
  hlo_value *res = NULL;
  if (chk_fuse_run(ev, &g, ops, &res) != 0)
    return NULL;
  return res;
}
