/* hlo_dtype.h — exact element type conversions for the HLO layer.
 *
 * Host storage convention (the whole project uses it): arrays are unpacked and
 * row-major, one element per slot.
 *   pred                      uint8_t, 0 or 1 (any nonzero byte reads as 1)
 *   s1 s2 s4 s8               int8_t holding the sign-extended value
 *   u1 u2 u4 u8               uint8_t
 *   s16 u16 s32 u32 s64 u64   the native C integer of that width
 *   f16 bf16                  uint16_t bit pattern
 *   f8e* and f4e2m1fn         uint8_t bit pattern (f4 in the low 4 bits)
 *   f32 / f64                 float / double
 *   c64 / c128                float[2] / double[2] as (re, im)
 *
 * Float formats and their special values (ml_dtypes / OCP FP8 / OCP MX):
 *   format          exp man bias  inf      NaN                 max finite
 *   f16             5   10  15    yes      e=31, m!=0          65504
 *   bf16            8   7   127   yes      e=255, m!=0         3.3895313892515355e38
 *   f8e5m2          5   2   15    yes      e=31, m!=0          57344
 *   f8e4m3          4   3   7     yes      e=15, m!=0          240
 *   f8e3m4          3   4   3     yes      e=7, m!=0           15.5
 *   f8e4m3fn        4   3   7     no       S.1111.111          448
 *   f8e4m3fnuz      4   3   8     no       0x80 only           240
 *   f8e5m2fnuz      5   2   16    no       0x80 only           57344
 *   f8e4m3b11fnuz   4   3   11    no       0x80 only           30
 *   f8e8m0fnu       8   0   127   no       0xFF                2^127 (no sign, no zero;
 *                                                              0x00 is 2^-127)
 *   f4e2m1fn        2   1   1     no       none                6
 * Subnormals are always kept, never flushed. "fnuz" types have no negative
 * zero: a result that rounds to zero is +0 (0x00) whatever the input sign.
 *
 * Rounding: every narrowing conversion rounds exactly once, to nearest with
 * ties to even, from the exact source value (f64 and 64-bit integers are not
 * routed through f32 or f64 first).  For f8e8m0fnu the two neighbours of a
 * tie are both powers of two; ml_dtypes breaks such ties upward (3.0 -> 4.0,
 * 0.75 -> 1.0), and so do we (ml_dtypes PR #223; the still-open PR #398
 * proposes changing it).
 *
 * Overflow, NaN and infinity on a non-saturating convert follow ml_dtypes
 * float8.h / mxfloat.h ConvertImpl<From, To, kSaturate=false, kTruncate=false>,
 * which is what XLA's HloEvaluator runs for convert.  A value overflows when
 * its correctly rounded bit pattern lies above the largest finite pattern
 * ("rounded_from_bits > aligned_highest"); it then becomes
 * numeric_limits<To>::infinity() with the input's sign applied by negation:
 *   types with inf (f16 bf16 e5m2 e4m3 e3m4)  -> +-inf
 *   f8e4m3fn (infinity() is NaN)              -> NaN with the input's sign
 *                                                (0x7F / 0xFF)
 *   fnuz types (infinity() is NaN, and -NaN   -> 0x80
 *   is NaN)
 *   f8e8m0fnu (infinity() is NaN)             -> 0xFF
 *   f4e2m1fn (infinity() is max, 6)           -> +-6: it saturates
 * Inputs that are +-inf map the same way.  NaN inputs:
 *   IEEE-like types: the canonical quiet NaN with the input's sign;
 *   f8e4m3fn 0x7F/0xFF by sign; fnuz 0x80; f8e8m0fnu 0xFF;
 *   f4e2m1fn has no NaN: ml_dtypes returns quiet_NaN() = 0b1000 (-0.0) and
 *   negates it for a negative NaN, so +NaN -> 0x8 (-0) and -NaN -> 0x0 (+0).
 * f8e8m0fnu has no sign: any negative input, -0 included, becomes NaN 0xFF
 * (ml_dtypes float8_test.cc "Float8E8m0fnuTest.NegativeInput"); values below
 * 2^-127, and +0, become 0x00 = 2^-127, the smallest value.
 *
 * Integer and pred conversions follow XLA's convert (elemental_ir_emitter):
 *   float -> int: truncate toward zero, saturate at the destination's min and
 *     max, NaN -> 0.
 *   int -> narrower int: wrap (two's complement), sub-byte types included.
 *   x -> pred: x != 0 (so NaN -> 1); pred -> number: 0 or 1.
 *   complex -> real or int or pred: the real part is converted (as numpy and
 *     current XLA do); real -> complex: imaginary part 0.
 *
 * Every function is pure and thread-safe; nothing is printed.
 */
#ifndef TUNE_HLO_DTYPE_H
#define TUNE_HLO_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hlo_types.h"

/* ---- f32 <-> bf16 / f16, inline because the evaluator uses them per element */

static inline uint32_t hlo_f32_bits_(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static inline float hlo_bits_f32_(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static inline float hlo_bf16_to_f32(uint16_t h) { return hlo_bits_f32_((uint32_t)h << 16); }

/* Round to nearest even on the 16 dropped bits; the exponent ranges are the
 * same, so subnormals and overflow to inf fall out of the integer carry. */
static inline uint16_t hlo_f32_to_bf16(float f) {
  uint32_t b = hlo_f32_bits_(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep sign, force quiet */
    return (uint16_t)((b >> 16) | 0x0040u);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return (uint16_t)(b >> 16);
}

static inline float hlo_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F)
    return hlo_bits_f32_(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
    return sign ? -v : v;
  }
  return hlo_bits_f32_(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t hlo_f32_to_f16(float f) {
  uint32_t b = hlo_f32_bits_(f);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u)
    return (uint16_t)(sign | 0x7E00u);
  if (a >= 0x477FF000u) /* >= 65520, the tie above 65504, rounds to inf */
    return (uint16_t)(sign | 0x7C00u);
  if (a >= 0x38800000u) { /* f16 normal range: >= 2^-14 */
    uint32_t r = a + 0x0FFFu + ((a >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
  }
  if (a <= 0x33000000u) /* <= 2^-25: half the smallest subnormal or less */
    return sign;
  /* f16 subnormal: count units of 2^-24, rounding once. */
  uint32_t e = a >> 23, m = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t s = 126u - e; /* 14..24 */
  uint32_t n = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
  if (rem > half || (rem == half && (n & 1u)))
    n++;
  return (uint16_t)(sign | n);
}

/* ---- scalar conversions ------------------------------------------------- */

/* Bit pattern of x rounded once into float type t (f32: float bits, f64:
 * double bits, others as stored, f4 in the low 4 bits).  0 when t is not a
 * real float type. */
uint64_t hlo_float_encode(hlo_etype t, double x);
/* Exact value of bit pattern `bits` of float type t; NaN when t is not a
 * real float type. */
double hlo_float_decode(hlo_etype t, uint64_t bits);
/* Integer value rounded once into float type t (no detour through double). */
uint64_t hlo_float_encode_s64(hlo_etype t, int64_t v);
uint64_t hlo_float_encode_u64(hlo_etype t, uint64_t v);

/* The values integer type t holds, [*lo, *hi]: two's complement for a
 * signed type, [0, 2^bits - 1] for an unsigned one (u64's top clipped to
 * INT64_MAX, the largest an int64_t holds), [0, 1] for pred; false, with
 * [0, 0], for a type that is not an integer. */
bool hlo_etype_int_range(hlo_etype t, int64_t *lo, int64_t *hi);

/* XLA's float -> integer rule for an integer type of `bits` bits (1..64):
 * truncate, saturate, NaN -> 0. */
int64_t hlo_double_to_sint(double x, int bits);
uint64_t hlo_double_to_uint(double x, int bits);
/* Two's complement wrap of v into integer type t; signed results are sign
 * extended.  Returns the value as stored (cast the result to int64_t for
 * signed types).  pred gives v != 0. */
uint64_t hlo_int_wrap(hlo_etype t, uint64_t v);

/* XLA ReducePrecision (elemental_ir_emitter EmitReducePrecisionIR, quiet_nans
 * false): round the mantissa to mantissa_bits with ties to even, then values
 * whose exponent is above the reduced range become signed inf and values
 * at or below its lowest (denormal) exponent become signed zero — reduced
 * subnormals are flushed, not kept.  NaN is returned unchanged when
 * mantissa_bits > 0; with mantissa_bits == 0 XLA turns NaN into +inf.
 * Requires exponent_bits >= 1 and mantissa_bits >= 0 (else NaN). */
double hlo_reduce_precision(double x, int exponent_bits, int mantissa_bits);
float hlo_reduce_precision_f32(float x, int exponent_bits, int mantissa_bits);

/* ---- arrays ------------------------------------------------------------- */

/* Converts n elements of type src at `in` into type dst at `out` (host storage
 * as above; in and out must not overlap unless identical with src == dst).
 * Returns 0, or -1 when a type is not a value type (token, tuple, opaque,
 * invalid) or a pointer is NULL with n > 0. */
int hlo_convert_array(hlo_etype src, const void *in, hlo_etype dst, void *out, size_t n);

#endif
