/* hlo_numerics.c — device arithmetic: flush-to-zero, bf16 MXU passes and
 * the transcendental approximations.  See hlo_numerics.h for the contract.
 *
 * Every approximation is written out here (range reduction + polynomial in
 * f32) rather than calling libm, because a real accelerator's EUP has its own
 * polynomials whose last bits differ from the host's: the checker must see
 * those differences and the tolerance policy must absorb exactly them.  The
 * coefficients are Taylor coefficients (1/n!), which is enough for f32 on the
 * reduced ranges used; measured error bounds are in the header.
 */

#include "hlo_numerics.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "hlo_dtype.h"
#include "hlo/hlo_clones.h"

/* At -O2 GCC vectorises only loops whose trip count is a known multiple of
 * the vector width; these element-independent loops ask for it (lanes
 * compute what the scalar code does: nothing is reassociated). */
#ifdef _OPENMP
#define SIMD _Pragma("omp simd")
/* the same with an OR reduction of the uint32_t v across the lanes */
#define SIMD_OR(v) _Pragma(SIMD_STR_(omp simd reduction(| : v)))
#define SIMD_STR_(x) #x
#else
#define SIMD
#define SIMD_OR(v)
#endif


static float bf16(float x) { return hlo_bf16_to_f32(hlo_f32_to_bf16(x)); }

/* ---- dot --------------------------------------------------------------- */

void hlo_num_dot_split(float x, hlo_num_precision p, float parts[3]) {
  x = hlo_num_ftz_f32(x);
  float hi = bf16(x);
  parts[0] = hi;
  parts[1] = parts[2] = 0.0f;
  if (p == HLO_NUM_PREC_DEFAULT || !isfinite(x))
    return;
  float r = x - hi; /* exact: hi has the leading 8 bits of x */
  parts[1] = bf16(r);
  if (p == HLO_NUM_PREC_HIGHEST)
    parts[2] = bf16(r - parts[1]);
}

float hlo_num_dot_parts_product(const float x[3], const float y[3], hlo_num_precision p) {
  float t;
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
  return hlo_num_ftz_f32(t);
}

float hlo_num_dot_product(float a, float b, hlo_num_precision p) {
  float x[3], y[3];
  hlo_num_dot_split(a, p, x);
  hlo_num_dot_split(b, p, y);
  return hlo_num_dot_parts_product(x, y, p);
}

float hlo_num_dot_acc(float acc, float a, float b, hlo_num_precision p) {
  return hlo_num_ftz_f32(acc + hlo_num_dot_product(a, b, p));
}

hlo_num_precision hlo_num_dot_precision(const hlo_instr *dot, hlo_num_precision cfg_prec) {
  hlo_num_precision p = cfg_prec;
  for (int i = 0; dot && i < dot->attrs.nprecision; i++) {
    hlo_num_precision q = dot->attrs.precision[i] == HLO_PREC_HIGHEST ? HLO_NUM_PREC_HIGHEST
                      : dot->attrs.precision[i] == HLO_PREC_HIGH  ? HLO_NUM_PREC_HIGH
                                                                   : HLO_NUM_PREC_DEFAULT;
    if (q > p)
      p = q;
  }
  return p;
}

/* ---- exp family ----------------------------------------------------------- */

/* Cody-Waite split of ln 2: LN2_HI has 16 significant bits, so n * LN2_HI is
 * exact for |n| < 2^8 and x - n * LN2_HI is exact near the reduction. */
#define LN2_HI 0.693145751953125f
#define LN2_LO 1.42860676533018e-06f
#define LOG2E 1.44269504088896341f

/* e^r for |r| <= ln2/2, Taylor to r^7 (truncation < 2^-27 relative). */
static float exp_poly(float r) {
  float p = 1.0f / 5040.0f;
  p = 1.0f / 720.0f + r * p;
  p = 1.0f / 120.0f + r * p;
  p = 1.0f / 24.0f + r * p;
  p = 1.0f / 6.0f + r * p;
  p = 0.5f + r * p;
  p = 1.0f + r * p;
  return 1.0f + r * p;
}

/* ldexpf(p, n) for p in [0.5, 2), the range of exp_poly: when n is in
 * [-125, 126] the result is normal, so multiplying by 2^n built from its
 * bits is exact and equals ldexpf's; outside it, ldexpf (which rounds a
 * subnormal result) decides.  ldexpf was a sixth of a transcendental
 * fusion's simulated time. */
static float scale2(float p, int n) {
  if (n < -125 || n > 126)
    return ldexpf(p, n);
  union {
    uint32_t u;
    float f;
  } two = {.u = (uint32_t)(n + 127) << 23};
  return p * two.f;
}

float hlo_num_exp_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  if (x > 88.72283935546875f)
    return INFINITY;
  if (x < -87.3365478515625f) /* below FLT_MIN: the result would be flushed */
    return 0.0f;
  float n = nearbyintf(x * LOG2E);
  float r = (x - n * LN2_HI) - n * LN2_LO;
  return hlo_num_ftz_f32(scale2(exp_poly(r), (int)n));
}

float hlo_num_expm1_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  if (fabsf(x) < 0.5f) {
    /* Taylor to x^10: the cancellation of exp(x) - 1 is avoided. */
    float p = 1.0f / 3628800.0f;
    p = 1.0f / 362880.0f + x * p;
    p = 1.0f / 40320.0f + x * p;
    p = 1.0f / 5040.0f + x * p;
    p = 1.0f / 720.0f + x * p;
    p = 1.0f / 120.0f + x * p;
    p = 1.0f / 24.0f + x * p;
    p = 1.0f / 6.0f + x * p;
    p = 0.5f + x * p;
    return hlo_num_ftz_f32(x + x * (x * p));
  }
  if (x < -20.0f)
    return -1.0f;
  return hlo_num_exp_f32(x) - 1.0f;
}

float hlo_num_logistic_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  return hlo_num_ftz_f32(1.0f / (1.0f + hlo_num_exp_f32(-x)));
}

float hlo_num_tanh_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  float a = fabsf(x);
  if (a < 0x1p-12f)
    return x;
  float t;
  if (a > 9.1f) {
    t = 1.0f;
  } else {
    float e = hlo_num_expm1_f32(2.0f * a);
    t = e / (e + 2.0f);
  }
  return copysignf(t, x);
}

/* ---- log family -------------------------------------------------------- */

/* log(m 2^e) for m in [sqrt(1/2), sqrt(2)): straight float arithmetic,
 * shared by hlo_num_log_f32 and its vector block (log_block). */
static inline float log_reduced(float m, int32_t e) {
  /* log(m) = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716 */
  float f = m - 1.0f;
  float s = f / (2.0f + f);
  float z = s * s;
  float r = 2.0f / 13.0f;
  r = 2.0f / 11.0f + z * r;
  r = 2.0f / 9.0f + z * r;
  r = 2.0f / 7.0f + z * r;
  r = 2.0f / 5.0f + z * r;
  r = 2.0f / 3.0f + z * r;
  float fe = (float)e;
  /* f - s*f = 2s exactly in real arithmetic; writing it this way keeps the
   * large term f exact and moves the rounding into the small correction. */
  float lg = (f - s * (f - z * r));
  return fe * LN2_HI + (fe * LN2_LO + lg);
}

float hlo_num_log_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x) || x < 0.0f)
    return x < 0.0f ? NAN : x;
  if (x == 0.0f)
    return -INFINITY;
  if (isinf(x))
    return x;
  /* frexpf from the bits: x is normal here (flushed, finite, positive,
   * nonzero), so m is its significand with the exponent of 0.5 */
  union {
    float f;
    uint32_t u;
  } bits = {x};
  int e = (int)(bits.u >> 23) - 126;
  bits.u = (bits.u & 0x007FFFFFu) | 0x3F000000u;
  float m = bits.f; /* [0.5, 1) */
  if (m < 0.70710678f) {
    m *= 2.0f;
    e -= 1;
  }
  return log_reduced(m, e);
}

float hlo_num_log1p_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  float u = 1.0f + x;
  if (u == 1.0f)
    return x;
  if (isinf(u))
    return u;
  /* log(u) * x / (u - 1): the factor corrects the rounding of 1 + x. */
  float l = hlo_num_log_f32(u);
  return hlo_num_ftz_f32(l * (x / (u - 1.0f)));
}

/* ---- roots --------------------------------------------------------------- */

float hlo_num_sqrt_f32(float x) { return hlo_num_ftz_f32(sqrtf(hlo_num_ftz_f32(x))); }

float hlo_num_rsqrt_f32(float x) { return hlo_num_ftz_f32(1.0f / sqrtf(hlo_num_ftz_f32(x))); }

/* ---- sin, cos ----------------------------------------------------------------- */

static float sin_poly(float r) {
  float z = r * r;
  float p = 1.0f / 362880.0f;
  p = -1.0f / 5040.0f + z * p;
  p = 1.0f / 120.0f + z * p;
  p = -1.0f / 6.0f + z * p;
  return r + r * (z * p);
}

static float cos_poly(float r) {
  float z = r * r;
  float p = 1.0f / 3628800.0f;
  p = -1.0f / 40320.0f + z * p;
  p = 1.0f / 720.0f + z * p;
  p = -1.0f / 24.0f + z * p;
  p = 0.5f + z * p;
  return 1.0f - z * p;
}

/* x = k * pi/2 + r with |r| <= pi/4; the reduction runs in double (the
 * device's extended-precision reduction path), so r is good to f32 for any
 * |x| below 2^24. */
static float reduce_pio2(float x, int *quadrant) {
  double k = nearbyint((double)x * 0.63661977236758134);
  *quadrant = (int)((int64_t)k & 3);
  return (float)((double)x - k * 1.5707963267948966 - k * 6.123233995736766e-17);
}

float hlo_num_sin_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (!isfinite(x))
    return NAN;
  if (fabsf(x) < 0x1p-12f)
    return x;
  int q;
  float r = reduce_pio2(x, &q);
  float v = (q & 1) ? cos_poly(r) : sin_poly(r);
  return hlo_num_ftz_f32((q & 2) ? -v : v);
}

float hlo_num_cos_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (!isfinite(x))
    return NAN;
  int q;
  float r = reduce_pio2(x, &q);
  float v = (q & 1) ? sin_poly(r) : cos_poly(r);
  return hlo_num_ftz_f32((q == 1 || q == 2) ? -v : v);
}

/* ---- erf ----------------------------------------------------------------------- */

/* e^(-a*a) without the rounding of a*a: a = ah + al with ah holding the top
 * 12 bits, so ah*ah is exact and the small rest is folded in separately. */
static float exp_neg_sq(float a) {
  float ah = hlo_bits_f32_(hlo_f32_bits_(a) & 0xFFFFF000u);
  float al = a - ah;
  return hlo_num_exp_f32(-ah * ah) * hlo_num_exp_f32(-(al * (a + ah)));
}

/* |x| < 1: erf(x) = 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)),
 * a series of positive terms (no cancellation).  |x| >= 1: 1 - erfc(x)
 * with erfc from its continued fraction.  |x| >= 4: erf rounds to +-1. */
float hlo_num_erf_f32(float x) {
  x = hlo_num_ftz_f32(x);
  if (isnan(x))
    return x;
  float a = fabsf(x), v;
  if (a >= 4.0f) {
    v = 1.0f;
  } else if (a < 1.0f) {
    /* terms forward, summed smallest first to keep the rounding low */
    float z = a * a, term[64];
    int nt = 1;
    term[0] = a;
    while (nt < 64) {
      term[nt] = term[nt - 1] * (2.0f * z) / (float)(2 * nt + 1);
      if (term[nt] < a * 0x1p-26f)
        break;
      nt++;
    }
    float sum = 0.0f;
    for (int n = nt - 1; n >= 0; n--)
      sum = sum + term[n];
    v = 1.1283791670955126f * exp_neg_sq(a) * sum;
  } else {
    /* erfc(a) = e^(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))) */
    float cf = a;
    for (int n = 60; n >= 1; n--)
      cf = a + (0.5f * (float)n) / cf;
    v = 1.0f - 0.5641895835477563f * exp_neg_sq(a) / cf;
  }
  return hlo_num_ftz_f32(copysignf(v, x));
}

/* ---- elementwise dispatch ------------------------------------------------------ */

double hlo_num_ulp_bound(hlo_opcode op) {
  switch (op) {
  case HLO_OP_EXP: return HLO_NUM_ULP_EXP;
  case HLO_OP_EXPM1: return HLO_NUM_ULP_EXPM1;
  case HLO_OP_LOG: return HLO_NUM_ULP_LOG;
  case HLO_OP_LOG1P: return HLO_NUM_ULP_LOG1P;
  case HLO_OP_TANH: return HLO_NUM_ULP_TANH;
  case HLO_OP_LOGISTIC: return HLO_NUM_ULP_LOGISTIC;
  case HLO_OP_SQRT: return HLO_NUM_ULP_SQRT;
  case HLO_OP_RSQRT: return HLO_NUM_ULP_RSQRT;
  case HLO_OP_SINE: case HLO_OP_COSINE: return HLO_NUM_ULP_SINCOS;
  case HLO_OP_ERF: return HLO_NUM_ULP_ERF;
  default: return 0;
  }
}

int hlo_num_unary_f32(hlo_opcode op, float x, float *out) {
  float r;
  float fx = hlo_num_ftz_f32(x);
  switch (op) {
  case HLO_OP_ABS: r = fabsf(fx); break;
  case HLO_OP_NEGATE: r = -fx; break;
  case HLO_OP_SIGN: r = isnan(fx) ? fx : fx > 0 ? 1.0f : fx < 0 ? -1.0f : fx; break;
  case HLO_OP_FLOOR: r = floorf(fx); break;
  case HLO_OP_CEIL: r = ceilf(fx); break;
  case HLO_OP_ROUND_AFZ: r = roundf(fx); break;
  case HLO_OP_ROUND_EVEN: r = nearbyintf(fx); break;
  case HLO_OP_EXP: r = hlo_num_exp_f32(fx); break;
  case HLO_OP_EXPM1: r = hlo_num_expm1_f32(fx); break;
  case HLO_OP_LOG: r = hlo_num_log_f32(fx); break;
  case HLO_OP_LOG1P: r = hlo_num_log1p_f32(fx); break;
  case HLO_OP_LOGISTIC: r = hlo_num_logistic_f32(fx); break;
  case HLO_OP_TANH: r = hlo_num_tanh_f32(fx); break;
  case HLO_OP_SQRT: r = hlo_num_sqrt_f32(fx); break;
  case HLO_OP_RSQRT: r = hlo_num_rsqrt_f32(fx); break;
  case HLO_OP_CBRT: r = cbrtf(fx); break;
  case HLO_OP_SINE: r = hlo_num_sin_f32(fx); break;
  case HLO_OP_COSINE: r = hlo_num_cos_f32(fx); break;
  case HLO_OP_TAN: r = tanf(fx); break;
  case HLO_OP_ERF: r = hlo_num_erf_f32(fx); break;
  default: return 0;
  }
  *out = hlo_num_ftz_f32(r);
  return 1;
}

static inline float quiet_nan(float a) {
  uint32_t u;
  memcpy(&u, &a, sizeof u);
  u |= 0x00400000u;
  memcpy(&a, &u, sizeof a);
  return a;
}

int hlo_num_binary_f32(hlo_opcode op, float x, float y, float *out) {
  float r;
  float a = hlo_num_ftz_f32(x), b = hlo_num_ftz_f32(y);
  /* add and multiply of two NaNs give the first operand's NaN, quieted
   * (x86's rule for the first source): written out, because a compiler
   * may put either operand of a commutative op first, and -O1 and -O2
   * builds did differ */
  switch (op) {
  case HLO_OP_ADD: r = a != a ? quiet_nan(a) : a + b; break;
  case HLO_OP_SUBTRACT: r = a - b; break;
  case HLO_OP_MULTIPLY: r = a != a ? quiet_nan(a) : a * b; break;
  case HLO_OP_DIVIDE: r = a / b; break;
  case HLO_OP_REMAINDER: r = fmodf(a, b); break;
  case HLO_OP_POWER: r = powf(a, b); break;
  case HLO_OP_ATAN2: r = atan2f(a, b); break;
  default: return 0;
  }
  *out = hlo_num_ftz_f32(r);
  return 1;
}

/* The block loops below are compiled for AVX-512 and AVX2 too and the
 * widest the machine runs is picked at load time: the same IEEE operations
 * on more lanes (no contraction: FP_CFLAGS), so the same bits. */

/* Vector blocks of exp, logistic and log.  Over most of its domain each
 * scalar function runs none of its branches, and that path is straight
 * float arithmetic, which a vector loop computes with the same IEEE
 * operations in the same order (no FMA contraction: -ffp-contract=off is
 * the project's), so it gives the same bits.  The blocks compute that path
 * for every element, with any argument outside the domain replaced by a
 * harmless one, then recompute the elements outside it (NaN, infinities,
 * zeros, the edges of the range) with the scalar function.  The emulated
 * transcendentals were most of a softmax or transcendental fusion's time,
 * one element at a time.  tests/unit/test_numerics samples every block
 * against its scalar function; exhaustive runs over all 2^32 inputs found
 * no difference. */

/* c ? a : b through integer masks: a float select of a compare's outcome
 * kept GCC from vectorising the loop ("control flow in loop"). */
static inline float pick(bool c, float a, float b) {
  uint32_t ua, ub, k = (uint32_t)0 - (uint32_t)c;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  ua = (ua & k) | (ub & ~k);
  memcpy(&a, &ua, sizeof a);
  return a;
}

/* exp's branch-free domain: for |v| <= 86 the rounded n = v log2 e lies in
 * [-125, 125], so scale2 multiplies by 2^n built from bits. */
#define EXP_PLAIN 86.0f

/* hlo_num_exp_f32(v) for a flushed |v| <= EXP_PLAIN. */
static inline float exp_plain(float v) {
  /* nearbyintf in the default rounding mode, which tune never changes:
   * below 2^22 adding and taking away 1.5 * 2^23 rounds to an integer,
   * ties to even, and the compiler keeps it (no -ffast-math) */
  float k = (v * LOG2E + 0x1.8p23f) - 0x1.8p23f;
  float r = (v - k * LN2_HI) - k * LN2_LO;
  union {
    uint32_t u;
    float f;
  } two = {.u = (uint32_t)((int32_t)k + 127) << 23};
  return hlo_num_ftz_f32(exp_poly(r) * two.f);
}

HLO_CLONES static void exp_block(const float *x, float *o, int64_t n) {
  uint32_t outside = 0; /* any element outside the domain: then the scalar pass */
  SIMD_OR(outside) for (int64_t i = 0; i < n; i++) {
    float v = hlo_num_ftz_f32(x[i]);
    uint32_t in = (v >= -EXP_PLAIN) & (v <= EXP_PLAIN);
    outside |= in ^ 1u;
    o[i] = exp_plain(pick(in, v, 0.0f));
  }
  for (int64_t i = 0; outside && i < n; i++)
    if (!(fabsf(hlo_num_ftz_f32(x[i])) <= EXP_PLAIN))
      o[i] = hlo_num_exp_f32(x[i]);
}

HLO_CLONES static void logistic_block(const float *x, float *o, int64_t n) {
  uint32_t outside = 0;
  SIMD_OR(outside) for (int64_t i = 0; i < n; i++) {
    float v = hlo_num_ftz_f32(x[i]);
    uint32_t in = (v >= -EXP_PLAIN) & (v <= EXP_PLAIN);
    outside |= in ^ 1u;
    v = pick(in, v, 0.0f);
    o[i] = hlo_num_ftz_f32(1.0f / (1.0f + exp_plain(-v)));
  }
  for (int64_t i = 0; outside && i < n; i++)
    if (!(fabsf(hlo_num_ftz_f32(x[i])) <= EXP_PLAIN))
      o[i] = hlo_num_logistic_f32(x[i]);
}

/* hlo_num_log_f32's branch-free domain: positive, normal, finite. */
static inline bool log_plain_arg(float v) { return (v >= 0x1p-126f) & (v <= 0x1.fffffep127f); }

HLO_CLONES static void log_block(const float *x, float *o, int64_t n) {
  uint32_t outside = 0;
  SIMD_OR(outside) for (int64_t i = 0; i < n; i++) {
    float v = hlo_num_ftz_f32(x[i]);
    uint32_t in = log_plain_arg(v);
    outside |= in ^ 1u;
    v = pick(in, v, 1.0f);
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    int32_t e = (int32_t)(u >> 23) - 126;
    u = (u & 0x007FFFFFu) | 0x3F000000u;
    float m;
    memcpy(&m, &u, sizeof m); /* [0.5, 1) */
    float m2 = m * 2.0f; /* exact; computed always, so the loop has no branch */
    int32_t low = m < 0.70710678f;
    m = pick(low, m2, m);
    e -= low;
    o[i] = log_reduced(m, e);
  }
  for (int64_t i = 0; outside && i < n; i++)
    if (!log_plain_arg(hlo_num_ftz_f32(x[i])))
      o[i] = hlo_num_log_f32(x[i]);
}

int hlo_num_unary_f32_block(hlo_opcode op, const float *x, float *o, int64_t n) {
  float probe;
  if (!hlo_num_unary_f32(op, 0.0f, &probe))
    return 0;
  /* hlo_num_unary_f32 flushes the argument and the result of these three,
   * which flush their own already */
  switch (op) {
  case HLO_OP_EXP: exp_block(x, o, n); return 1;
  case HLO_OP_LOGISTIC: logistic_block(x, o, n); return 1;
  case HLO_OP_LOG: log_block(x, o, n); return 1;
  default: break;
  }
  for (int64_t i = 0; i < n; i++)
    hlo_num_unary_f32(op, x[i], &o[i]);
  return 1;
}

/* r, or a's NaN quieted when a is a NaN (x86's rule for two NaN operands,
 * with a the first source), as a select the vectoriser can use. */
static inline float nan_first(float a, float r) { return pick(a != a, quiet_nan(a), r); }

HLO_CLONES int hlo_num_binary_f32_block(hlo_opcode op, const float *x, const float *y, float *o, int64_t n) {
  float probe;
  if (!hlo_num_binary_f32(op, 1.0f, 1.0f, &probe))
    return 0;
  /* the four arithmetic ops as typed loops: hlo_num_binary_f32 per element,
   * without its switch */
#define FTZ_LOOP(EXPR)                                                       \
  SIMD for (int64_t i = 0; i < n; i++) {                                     \
    float a = hlo_num_ftz_f32(x[i]), b = hlo_num_ftz_f32(y[i]);                      \
    o[i] = hlo_num_ftz_f32(EXPR);                                                \
  }
  /* add and multiply with two NaN operands: x86 returns the first
   * source's NaN, and hlo_num_binary_f32's scalar code puts x first; a vector
   * loop may put either operand first (the op commutes for the compiler),
   * so x's NaN is carried explicitly, quieted as the hardware does */
  /* The sum and product are computed whatever a is and then selected:
   * computed only when a is not NaN, as the scalar code reads, they kept
   * the loop scalar (the compiler may not speculate a float op that could
   * trap); with a NaN they are discarded, so the bits are the same. */
  switch (op) {
  case HLO_OP_ADD: FTZ_LOOP(nan_first(a, a + b)) return 1;
  case HLO_OP_SUBTRACT: FTZ_LOOP(a - b) return 1;
  case HLO_OP_MULTIPLY: FTZ_LOOP(nan_first(a, a * b)) return 1;
  case HLO_OP_DIVIDE: FTZ_LOOP(a / b) return 1;
  default: break;
  }
#undef FTZ_LOOP
  for (int64_t i = 0; i < n; i++)
    hlo_num_binary_f32(op, x[i], y[i], &o[i]);
  return 1;
}

/* ---- f16 / bf16 rounding of f32 values, branch-free ------------------------
 * On f32 bit patterns b (sign s, magnitude a):
 *   f16 normal range (2^-14 <= a < 65520): rounding the f32 mantissa to 10
 *     bits (RNE, carry into the exponent) gives the very f32 that the f16
 *     result widens to;
 *   below 2^-14 the f16 result is a multiple of 2^-24: |x| + 0.5 has an ulp
 *     of 2^-24 and rounds to nearest even in hardware, so (|x| + 0.5) - 0.5
 *     is |x| rounded to that multiple, ties to an even multiple, and 0 at or
 *     below 2^-25 (default rounding mode, no FTZ/DAZ: the device flushes in
 *     software, never through MXCSR);
 *   65520 and above (infinity included) overflow to infinity;
 *   NaN becomes the quiet NaN 0x7E00, which widens to 0x7FC00000.
 * tests/unit/test_numerics.c checks this against hlo_dtype.h's conversions
 * on every f32 with a 16-bit high half and across all exponents. */
static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

HLO_CLONES static void round_f16_plain(const float *x, float *o, int64_t n) {
  SIMD
  for (int64_t i = 0; i < n; i++) {
    uint32_t b = f32_bits(x[i]), s = b & 0x80000000u, a = b & 0x7FFFFFFFu;
    uint32_t nrm = (a + 0x0FFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
    uint32_t sub = f32_bits((bits_f32(a) + 0.5f) - 0.5f);
    /* the four cases as masks (all ones or zero), so the loop has no branch */
    uint32_t nan = 0u - (uint32_t)(a > 0x7F800000u);
    uint32_t big = ~nan & (0u - (uint32_t)(a >= 0x477FF000u));
    uint32_t nor = ~nan & ~big & (0u - (uint32_t)(a >= 0x38800000u));
    uint32_t low = ~nan & ~big & ~nor;
    uint32_t r = (nan & 0x7FC00000u) | (big & 0x7F800000u) | (nor & nrm) | (low & sub);
    o[i] = bits_f32(s | r);
  }
}

/* The same with the machine's own conversions where it has them (F16C):
 * f32 -> f16 rounding to nearest even whatever MXCSR says (the immediate
 * picks the mode), subnormal results kept and overflow to infinity, then
 * back exactly; so every number comes out as above.  Only a NaN differs,
 * the hardware keeping its payload, and is replaced by the quiet NaN of its
 * sign.  Three instructions an element where the masks above take a
 * dozen.  Checked against hlo_dtype.h's conversions on all 2^32 inputs
 * once, and sampled by test_numerics as the block above. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#define HAVE_F16C_ROUND 1
__attribute__((target("avx2,f16c"))) static int64_t round_f16_f16c(const float *x, float *o, int64_t n) {
  const __m256i mag = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i sgn = _mm256_set1_epi32((int)0x80000000u), qnan = _mm256_set1_epi32(0x7FC00000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    __m256i b = _mm256_castps_si256(v);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, mag), inf);
    __m256i quiet = _mm256_or_si256(_mm256_and_si256(b, sgn), qnan);
    _mm256_storeu_ps(o + i, _mm256_blendv_ps(r, _mm256_castsi256_ps(quiet), _mm256_castsi256_ps(nan)));
  }
  return i;
}
#endif

void hlo_num_round_f16_block(const float *x, float *o, int64_t n) {
  int64_t done = 0;
#ifdef HAVE_F16C_ROUND
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
    done = round_f16_f16c(x, o, n);
#endif
  round_f16_plain(x + done, o + done, n - done);
}

HLO_CLONES void hlo_num_round_bf16_block(const float *x, float *o, int64_t n) {
  SIMD
  for (int64_t i = 0; i < n; i++) {
    uint32_t b = f32_bits(x[i]);
    uint32_t nan = (b | 0x00400000u) & 0xFFFF0000u;
    uint32_t r = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    o[i] = bits_f32((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : r);
  }
}
