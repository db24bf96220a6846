/* hlo_dtype.c — exact element type conversions; rules and sources are in
 * hlo_dtype.h. */
#include "hlo_dtype.h"

#include <math.h>
#include <stdbool.h>

/* ---- format descriptions ------------------------------------------------ */

typedef enum {
  SPECIAL_IEEE, /* top exponent: inf (m == 0) and NaN (m != 0) */
  SPECIAL_FN,   /* no inf; only all-ones magnitude is NaN, signed */
  SPECIAL_FNUZ, /* no inf, no -0; 0x80 is the only NaN */
  SPECIAL_NONE, /* f4e2m1fn: no inf, no NaN */
  SPECIAL_E8M0  /* no sign, no zero, no subnormals; 0xFF is NaN */
} special_kind;

typedef struct {
  int nbits;       /* storage bits including sign */
  int ebits, mbits, bias;
  special_kind kind;
  uint64_t maxpat; /* magnitude pattern of the largest finite value */
  uint64_t qnan;   /* magnitude pattern of the canonical quiet NaN (IEEE) */
} fmt;

/* Fills *f for the float type t; false when t is not a real float type. */
static bool get_fmt(hlo_etype t, fmt *f) {
  switch (t) {
  case HLO_F16: *f = (fmt){16, 5, 10, 15, SPECIAL_IEEE, 0x7BFF, 0x7E00}; return true;
  case HLO_BF16: *f = (fmt){16, 8, 7, 127, SPECIAL_IEEE, 0x7F7F, 0x7FC0}; return true;
  case HLO_F32: *f = (fmt){32, 8, 23, 127, SPECIAL_IEEE, 0x7F7FFFFF, 0x7FC00000}; return true;
  case HLO_F64:
    *f = (fmt){64, 11, 52, 1023, SPECIAL_IEEE, 0x7FEFFFFFFFFFFFFFull, 0x7FF8000000000000ull};
    return true;
  case HLO_F8E5M2: *f = (fmt){8, 5, 2, 15, SPECIAL_IEEE, 0x7B, 0x7E}; return true;
  case HLO_F8E4M3: *f = (fmt){8, 4, 3, 7, SPECIAL_IEEE, 0x77, 0x7C}; return true;
  case HLO_F8E3M4: *f = (fmt){8, 3, 4, 3, SPECIAL_IEEE, 0x6F, 0x78}; return true;
  case HLO_F8E4M3FN: *f = (fmt){8, 4, 3, 7, SPECIAL_FN, 0x7E, 0x7F}; return true;
  case HLO_F8E4M3FNUZ: *f = (fmt){8, 4, 3, 8, SPECIAL_FNUZ, 0x7F, 0}; return true;
  case HLO_F8E5M2FNUZ: *f = (fmt){8, 5, 2, 16, SPECIAL_FNUZ, 0x7F, 0}; return true;
  case HLO_F8E4M3B11FNUZ: *f = (fmt){8, 4, 3, 11, SPECIAL_FNUZ, 0x7F, 0}; return true;
  case HLO_F8E8M0FNU: *f = (fmt){8, 8, 0, 127, SPECIAL_E8M0, 0xFE, 0xFF}; return true;
  case HLO_F4E2M1FN: *f = (fmt){4, 2, 1, 1, SPECIAL_NONE, 0x7, 0}; return true;
  default: return false;
  }
}

static uint64_t dbits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static double bitsd(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* ---- decode ------------------------------------------------------------- */

static double decode_fmt(const fmt *f, uint64_t bits) {
  if (f->kind == SPECIAL_E8M0) {
    bits &= 0xFF;
    return bits == 0xFF ? NAN : ldexp(1.0, (int)bits - 127);
  }
  uint64_t signbit = 1ull << (f->nbits - 1);
  bits &= (signbit << 1) - 1;
  bool neg = (bits & signbit) != 0;
  uint64_t mag = bits & (signbit - 1);
  uint64_t emax = (1ull << f->ebits) - 1;
  uint64_t e = mag >> f->mbits, m = mag & ((1ull << f->mbits) - 1);
  switch (f->kind) {
  case SPECIAL_IEEE:
    if (e == emax)
      return m == 0 ? (neg ? -INFINITY : INFINITY) : copysign(NAN, neg ? -1.0 : 1.0);
    break;
  case SPECIAL_FN:
    if (mag == signbit - 1)
      return copysign(NAN, neg ? -1.0 : 1.0);
    break;
  case SPECIAL_FNUZ:
    if (bits == signbit)
      return NAN;
    break;
  default:
    break;
  }
  /* Significand and exponent are both small integers: ldexp is exact. */
  double v = e == 0 ? ldexp((double)m, 1 - f->bias - f->mbits)
                    : ldexp((double)(m | (1ull << f->mbits)), (int)e - f->bias - f->mbits);
  return neg ? -v : v;
}

/* ---- encode: one rounding ---------------------------------------------- */

/* Magnitude pattern of sig * 2^e2 (sig > 0) rounded once to nearest even
 * into a format with mbits stored mantissa bits and minimum normal exponent
 * emin = 1 - bias, subnormals included.  Patterns are monotonic in value, and
 * for unbiased exponent e the pattern is ((max(e,emin) - emin) << mbits) + n,
 * n being the significand in units of the quantum 2^(max(e,emin) - mbits):
 * that holds for subnormals (n < 2^mbits) and normals alike, and a rounding
 * carry in n lands in the exponent field by itself. */
static uint64_t round_pattern(uint64_t sig, int e2, int mbits, int emin) {
  int hb = 63;
  while (!(sig >> hb))
    hb--;
  int e = e2 + hb;
  int eeff = e > emin ? e : emin;
  int s = (eeff - mbits) - e2; /* right shift from sig to quantum units */
  uint64_t n;
  if (s <= 0) {
    n = sig << -s; /* exact; only reached when it fits (n <= 2^(mbits+1)) */
  } else if (s > 64) {
    n = 0; /* below a quarter quantum */
  } else {
    uint64_t rem, half;
    if (s == 64) {
      n = 0;
      rem = sig;
      half = 1ull << 63;
    } else {
      n = sig >> s;
      rem = sig & ((1ull << s) - 1);
      half = 1ull << (s - 1);
    }
    if (rem > half || (rem == half && (n & 1)))
      n++;
  }
  return ((uint64_t)(eeff - emin) << mbits) + n;
}

/* Pattern for a non-NaN input once its magnitude pattern (or overflow) is
 * known; handles sign, zero and the overflow rules of the header. */
static uint64_t finish(const fmt *f, bool neg, uint64_t mag, bool overflow) {
  uint64_t signbit = 1ull << (f->nbits - 1);
  if (overflow || mag > f->maxpat) {
    switch (f->kind) {
    case SPECIAL_IEEE:
      mag = ((1ull << f->ebits) - 1) << f->mbits;
      break;
    case SPECIAL_FN:
      mag = signbit - 1; /* NaN, sign kept */
      break;
    case SPECIAL_FNUZ:
      return signbit; /* the one NaN */
    case SPECIAL_NONE:
      mag = f->maxpat; /* ml_dtypes' infinity() is max: saturate */
      break;
    case SPECIAL_E8M0:
      return 0xFF;
    }
  }
  if (mag == 0 && f->kind == SPECIAL_FNUZ)
    return 0; /* no negative zero */
  return (neg ? signbit : 0) | mag;
}

static uint64_t nan_pattern(const fmt *f, bool neg) {
  uint64_t signbit = 1ull << (f->nbits - 1);
  switch (f->kind) {
  case SPECIAL_IEEE:
    return (neg ? signbit : 0) | f->qnan;
  case SPECIAL_FN:
    return (neg ? signbit : 0) | (signbit - 1);
  case SPECIAL_FNUZ:
    return signbit;
  case SPECIAL_NONE:
    /* quiet_NaN() is 0b1000 and ml_dtypes negates it for a negative NaN. */
    return neg ? 0 : signbit;
  case SPECIAL_E8M0:
    return 0xFF;
  }
  return 0;
}

static uint64_t encode_e8m0(double x) {
  uint64_t b = dbits(x);
  if (isnan(x) || isinf(x) || (b >> 63))
    return 0xFF; /* no sign: negatives (and -0) are NaN, as ml_dtypes */
  int be = (int)((b >> 52) & 0x7FF);
  int e = be - 1023;
  if (be == 0 || e < -127)
    return 0x00; /* +0 and everything below 2^-127: the smallest value */
  /* Ties between 2^e and 2^(e+1) go up (ml_dtypes). */
  uint64_t p = (uint64_t)(e + 127) + ((b >> 51) & 1);
  return p > 0xFE ? 0xFF : p;
}

static uint64_t encode_fmt(const fmt *f, double x) {
  if (f->kind == SPECIAL_E8M0)
    return encode_e8m0(x);
  uint64_t b = dbits(x);
  bool neg = (b >> 63) != 0;
  if (isnan(x))
    return nan_pattern(f, neg);
  if (isinf(x))
    return finish(f, neg, 0, true);
  uint64_t be = (b >> 52) & 0x7FF, frac = b & ((1ull << 52) - 1);
  if (be == 0 && frac == 0)
    return finish(f, neg, 0, false);
  uint64_t sig = be ? frac | (1ull << 52) : frac;
  int e2 = be ? (int)be - 1075 : -1074;
  /* Far above the format's range the pattern arithmetic would be pointless;
   * any exponent past 2^(bias+2) overflows every format here. */
  if ((int)be - 1023 > f->bias + 2)
    return finish(f, neg, 0, true);
  return finish(f, neg, round_pattern(sig, e2, f->mbits, 1 - f->bias), false);
}

static uint64_t encode_int(const fmt *f, bool neg, uint64_t mag) {
  if (f->kind == SPECIAL_E8M0) {
    if (neg)
      return 0xFF;
    if (mag == 0)
      return 0x00;
    int hb = 63;
    while (!(mag >> hb))
      hb--;
    /* 2^hb <= mag < 2^64 never overflows; ties go up as for doubles. */
    return (uint64_t)(hb + 127) + (hb > 0 ? (mag >> (hb - 1)) & 1 : 0);
  }
  if (mag == 0)
    return finish(f, neg, 0, false);
  if (f->bias + 2 < 64) {
    int hb = 63;
    while (!(mag >> hb))
      hb--;
    if (hb > f->bias + 2)
      return finish(f, neg, 0, true);
  }
  return finish(f, neg, round_pattern(mag, 0, f->mbits, 1 - f->bias), false);
}

/* ---- public scalar functions -------------------------------------------- */

uint64_t hlo_float_encode(hlo_etype t, double x) {
  if (t == HLO_F64)
    return dbits(x);
  if (t == HLO_F32)
    return hlo_f32_bits_((float)x); /* C's conversion rounds once (Annex F) */
  fmt f;
  if (!get_fmt(t, &f))
    return 0;
  return encode_fmt(&f, x);
}

double hlo_float_decode(hlo_etype t, uint64_t bits) {
  /* the common types before building a format */
  if (t == HLO_F64)
    return bitsd(bits);
  if (t == HLO_F32)
    return (double)hlo_bits_f32_((uint32_t)bits);
  fmt f;
  if (!get_fmt(t, &f))
    return NAN;
  return decode_fmt(&f, bits);
}

uint64_t hlo_float_encode_s64(hlo_etype t, int64_t v) {
  fmt f;
  if (!get_fmt(t, &f))
    return 0;
  if (t == HLO_F64)
    return dbits((double)v); /* integer -> double is one rounding in C */
  if (t == HLO_F32)
    return hlo_f32_bits_((float)v); /* direct, not via double */
  uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  return encode_int(&f, v < 0, mag);
}

uint64_t hlo_float_encode_u64(hlo_etype t, uint64_t v) {
  fmt f;
  if (!get_fmt(t, &f))
    return 0;
  if (t == HLO_F64)
    return dbits((double)v);
  if (t == HLO_F32)
    return hlo_f32_bits_((float)v);
  return encode_int(&f, false, v);
}

/* The two's complement range of `bits` bits (1..64). */
static void sint_range(int bits, int64_t *lo, int64_t *hi) {
  *lo = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
  *hi = bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
}

bool hlo_etype_int_range(hlo_etype t, int64_t *lo, int64_t *hi) {
  int bits = hlo_etype_bits(t);
  *lo = *hi = 0;
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_SINT: sint_range(bits, lo, hi); return true;
  case HLO_CLASS_UINT: *hi = bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1; return true;
  case HLO_CLASS_PRED: *hi = 1; return true;
  default: return false;
  }
}

int64_t hlo_double_to_sint(double x, int bits) {
  if (bits < 1 || bits > 64 || isnan(x))
    return 0;
  /* Bounds as doubles: for 64 bits max rounds to 2^63, which is exactly
   * XLA's "x >= (float)INT_MAX" test. */
  int64_t lo, hi;
  sint_range(bits, &lo, &hi);
  if (x <= (double)lo)
    return lo;
  if (x >= (double)hi)
    return hi;
  return (int64_t)x; /* C truncates toward zero */
}

uint64_t hlo_double_to_uint(double x, int bits) {
  if (bits < 1 || bits > 64 || isnan(x) || x <= 0.0)
    return 0;
  uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  if (x >= (double)hi)
    return hi;
  return (uint64_t)x;
}

/* Sign-extends the low `bits` bits of v. */
static uint64_t sext(uint64_t v, int bits) {
  if (bits >= 64)
    return v;
  uint64_t m = ((uint64_t)1 << bits) - 1, top = (uint64_t)1 << (bits - 1);
  return ((v & m) ^ top) - top;
}

static uint64_t zext(uint64_t v, int bits) {
  return bits >= 64 ? v : v & (((uint64_t)1 << bits) - 1);
}

uint64_t hlo_int_wrap(hlo_etype t, uint64_t v) {
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_PRED: return v != 0;
  case HLO_CLASS_SINT: return sext(v, hlo_etype_bits(t));
  case HLO_CLASS_UINT: return zext(v, hlo_etype_bits(t));
  default: return 0;
  }
}

/* ---- reduce precision --------------------------------------------------- */

/* XLA's algorithm on the raw bits of a float with src_e exponent and src_m
 * mantissa bits (see header).  `is_nan` is decided by the caller. */
static uint64_t reduce_bits(uint64_t x, bool is_nan, int nbits, int src_e, int src_m, int e_bits,
                            int m_bits, uint64_t inf_bits) {
  uint64_t orig = x;
  if (m_bits < src_m) {
    uint64_t last = (uint64_t)1 << (src_m - m_bits);
    uint64_t bias = (last >> 1) - 1 + ((x & last) ? 1 : 0);
    x = (x + bias) & ~(last - 1);
  }
  if (e_bits < src_e) {
    uint64_t sign = (uint64_t)1 << (nbits - 1);
    uint64_t expmask = (((uint64_t)1 << src_e) - 1) << src_m;
    uint64_t src_bias = ((uint64_t)1 << (src_e - 1)) - 1;
    uint64_t red_bias = ((uint64_t)1 << (e_bits - 1)) - 1;
    uint64_t xe = x & expmask;
    if (xe > (src_bias + red_bias) << src_m)
      x = (x & sign) | expmask;
    else if (xe <= (src_bias - red_bias) << src_m)
      x = x & sign; /* reduced subnormals flush to signed zero */
  }
  if (is_nan)
    return m_bits > 0 ? orig : inf_bits;
  return x;
}

double hlo_reduce_precision(double x, int exponent_bits, int mantissa_bits) {
  if (exponent_bits < 1 || mantissa_bits < 0)
    return NAN;
  return bitsd(reduce_bits(dbits(x), isnan(x), 64, 11, 52, exponent_bits, mantissa_bits,
                           0x7FF0000000000000ull));
}

float hlo_reduce_precision_f32(float x, int exponent_bits, int mantissa_bits) {
  if (exponent_bits < 1 || mantissa_bits < 0)
    return NAN;
  return hlo_bits_f32_((uint32_t)reduce_bits(hlo_f32_bits_(x), isnan(x), 32, 8, 23, exponent_bits,
                                             mantissa_bits, 0x7F800000u));
}

/* ---- arrays ------------------------------------------------------------- */

/* Conversion goes through a small stack buffer in one of three canonical
 * forms, so each stage is one tight loop chosen by a switch outside it:
 *   INT   uint64 bits of the exact integer (signed flag says how to read)
 *   REAL  double (every real float type widens to it exactly)
 *   CPLX  double pairs
 * The common f32 <-> bf16 / f16 / f64 pairs skip the buffer. */
enum { CHUNK = 256 };

typedef enum { CANON_INT, CANON_REAL, CANON_CPLX } canon_kind;

typedef struct {
  canon_kind kind;
  bool is_signed; /* CANON_INT only */
  union {
    uint64_t i[CHUNK];
    double r[CHUNK];
    double c[2 * CHUNK];
  } u;
} canon_buf;

static bool is_value_type(hlo_etype t) {
  hlo_eclass c = hlo_etype_class(t);
  return t > HLO_INVALID && t < HLO_ETYPE_COUNT && c != HLO_CLASS_OTHER;
}

/* Decoded value of every pattern of an 8-bit (or 4-bit) float type, built per
 * call so there is no shared state to initialise. */
static void build_table8(const fmt *f, double table[256]) {
  for (int i = 0; i < 256; i++)
    table[i] = decode_fmt(f, (uint64_t)i);
}

#define LOOP(expr)                                                                                 \
  do {                                                                                             \
    for (size_t i = 0; i < n; i++)                                                                 \
      expr;                                                                                        \
  } while (0)

/* Reads n (<= CHUNK) elements of src into b. */
static void load(hlo_etype src, const void *in, size_t n, canon_buf *b, const double *table8) {
  uint64_t *I = b->u.i;
  double *R = b->u.r, *C = b->u.c;
  b->kind = CANON_INT;
  b->is_signed = hlo_etype_class(src) == HLO_CLASS_SINT;
  switch (src) {
  case HLO_PRED: {
    const uint8_t *p = in;
    LOOP(I[i] = p[i] != 0);
    return;
  }
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: {
    const int8_t *p = in;
    LOOP(I[i] = (uint64_t)(int64_t)p[i]);
    return;
  }
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: {
    const uint8_t *p = in;
    LOOP(I[i] = p[i]);
    return;
  }
  case HLO_S16: { const int16_t *p = in; LOOP(I[i] = (uint64_t)(int64_t)p[i]); return; }
  case HLO_U16: { const uint16_t *p = in; LOOP(I[i] = p[i]); return; }
  case HLO_S32: { const int32_t *p = in; LOOP(I[i] = (uint64_t)(int64_t)p[i]); return; }
  case HLO_U32: { const uint32_t *p = in; LOOP(I[i] = p[i]); return; }
  case HLO_S64: { const int64_t *p = in; LOOP(I[i] = (uint64_t)p[i]); return; }
  case HLO_U64: { const uint64_t *p = in; LOOP(I[i] = p[i]); return; }
  default:
    break;
  }
  b->kind = CANON_REAL;
  switch (src) {
  case HLO_F16: { const uint16_t *p = in; LOOP(R[i] = hlo_f16_to_f32(p[i])); return; }
  case HLO_BF16: { const uint16_t *p = in; LOOP(R[i] = hlo_bf16_to_f32(p[i])); return; }
  case HLO_F32: { const float *p = in; LOOP(R[i] = p[i]); return; }
  case HLO_F64: { const double *p = in; LOOP(R[i] = p[i]); return; }
  case HLO_F4E2M1FN: { const uint8_t *p = in; LOOP(R[i] = table8[p[i] & 0x0F]); return; }
  case HLO_C64: {
    const float *p = in;
    b->kind = CANON_CPLX;
    LOOP((C[2 * i] = p[2 * i], C[2 * i + 1] = p[2 * i + 1]));
    return;
  }
  case HLO_C128: {
    const double *p = in;
    b->kind = CANON_CPLX;
    LOOP((C[2 * i] = p[2 * i], C[2 * i + 1] = p[2 * i + 1]));
    return;
  }
  default: { /* the 8-bit floats */
    const uint8_t *p = in;
    LOOP(R[i] = table8[p[i]]);
    return;
  }
  }
}

/* Stores integers (uint64 bits of the exact value) into an integer or pred
 * type: wrap, or != 0. */
static void store_int_from_int(hlo_etype dst, const uint64_t *I, size_t n, void *out) {
  int bits = hlo_etype_bits(dst);
  switch (dst) {
  case HLO_PRED: { uint8_t *q = out; LOOP(q[i] = I[i] != 0); return; }
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: {
    int8_t *q = out;
    LOOP(q[i] = (int8_t)(int64_t)sext(I[i], bits));
    return;
  }
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: {
    uint8_t *q = out;
    LOOP(q[i] = (uint8_t)zext(I[i], bits));
    return;
  }
  case HLO_S16: { int16_t *q = out; LOOP(q[i] = (int16_t)(int64_t)sext(I[i], 16)); return; }
  case HLO_U16: { uint16_t *q = out; LOOP(q[i] = (uint16_t)I[i]); return; }
  case HLO_S32: { int32_t *q = out; LOOP(q[i] = (int32_t)(int64_t)sext(I[i], 32)); return; }
  case HLO_U32: { uint32_t *q = out; LOOP(q[i] = (uint32_t)I[i]); return; }
  case HLO_S64: { int64_t *q = out; LOOP(q[i] = (int64_t)I[i]); return; }
  case HLO_U64: { uint64_t *q = out; LOOP(q[i] = I[i]); return; }
  default: return;
  }
}

/* Stores doubles into an integer or pred type with XLA's float rule. */
static void store_int_from_real(hlo_etype dst, const double *R, size_t stride, size_t n,
                                void *out) {
  int bits = hlo_etype_bits(dst);
  switch (dst) {
  case HLO_PRED: { uint8_t *q = out; LOOP(q[i] = R[i * stride] != 0.0); return; }
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: {
    int8_t *q = out;
    LOOP(q[i] = (int8_t)hlo_double_to_sint(R[i * stride], bits));
    return;
  }
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: {
    uint8_t *q = out;
    LOOP(q[i] = (uint8_t)hlo_double_to_uint(R[i * stride], bits));
    return;
  }
  case HLO_S16: { int16_t *q = out; LOOP(q[i] = (int16_t)hlo_double_to_sint(R[i * stride], 16)); return; }
  case HLO_U16: { uint16_t *q = out; LOOP(q[i] = (uint16_t)hlo_double_to_uint(R[i * stride], 16)); return; }
  case HLO_S32: { int32_t *q = out; LOOP(q[i] = (int32_t)hlo_double_to_sint(R[i * stride], 32)); return; }
  case HLO_U32: { uint32_t *q = out; LOOP(q[i] = (uint32_t)hlo_double_to_uint(R[i * stride], 32)); return; }
  case HLO_S64: { int64_t *q = out; LOOP(q[i] = hlo_double_to_sint(R[i * stride], 64)); return; }
  case HLO_U64: { uint64_t *q = out; LOOP(q[i] = hlo_double_to_uint(R[i * stride], 64)); return; }
  default: return;
  }
}

/* Stores doubles (every stride-th) into a real float type, rounding once. */
static void store_float_from_real(hlo_etype dst, const fmt *f, const double *R, size_t stride,
                                  size_t n, void *out) {
  switch (dst) {
  case HLO_F32: { float *q = out; LOOP(q[i] = (float)R[i * stride]); return; }
  case HLO_F64: { double *q = out; LOOP(q[i] = R[i * stride]); return; }
  case HLO_F16: case HLO_BF16: {
    uint16_t *q = out;
    LOOP(q[i] = (uint16_t)encode_fmt(f, R[i * stride]));
    return;
  }
  default: {
    uint8_t *q = out;
    LOOP(q[i] = (uint8_t)encode_fmt(f, R[i * stride]));
    return;
  }
  }
}

static void store_float_from_int(hlo_etype dst, const fmt *f, const uint64_t *I, bool is_signed,
                                 size_t n, void *out) {
  switch (dst) {
  case HLO_F32: {
    float *q = out;
    if (is_signed)
      LOOP(q[i] = (float)(int64_t)I[i]);
    else
      LOOP(q[i] = (float)I[i]);
    return;
  }
  case HLO_F64: {
    double *q = out;
    if (is_signed)
      LOOP(q[i] = (double)(int64_t)I[i]);
    else
      LOOP(q[i] = (double)I[i]);
    return;
  }
  case HLO_F16: case HLO_BF16: {
    uint16_t *q = out;
    if (is_signed)
      LOOP(q[i] = (uint16_t)encode_int(f, (int64_t)I[i] < 0,
                                       (int64_t)I[i] < 0 ? 0 - I[i] : I[i]));
    else
      LOOP(q[i] = (uint16_t)encode_int(f, false, I[i]));
    return;
  }
  default: {
    uint8_t *q = out;
    if (is_signed)
      LOOP(q[i] = (uint8_t)encode_int(f, (int64_t)I[i] < 0,
                                      (int64_t)I[i] < 0 ? 0 - I[i] : I[i]));
    else
      LOOP(q[i] = (uint8_t)encode_int(f, false, I[i]));
    return;
  }
  }
}

static void store_complex(hlo_etype dst, const canon_buf *b, size_t n, void *out) {
  const uint64_t *I = b->u.i;
  const double *R = b->u.r, *C = b->u.c;
  if (dst == HLO_C64) {
    float *q = out;
    switch (b->kind) {
    case CANON_INT:
      if (b->is_signed)
        LOOP((q[2 * i] = (float)(int64_t)I[i], q[2 * i + 1] = 0.0f));
      else
        LOOP((q[2 * i] = (float)I[i], q[2 * i + 1] = 0.0f));
      return;
    case CANON_REAL: LOOP((q[2 * i] = (float)R[i], q[2 * i + 1] = 0.0f)); return;
    case CANON_CPLX: LOOP((q[2 * i] = (float)C[2 * i], q[2 * i + 1] = (float)C[2 * i + 1])); return;
    }
  } else {
    double *q = out;
    switch (b->kind) {
    case CANON_INT:
      if (b->is_signed)
        LOOP((q[2 * i] = (double)(int64_t)I[i], q[2 * i + 1] = 0.0));
      else
        LOOP((q[2 * i] = (double)I[i], q[2 * i + 1] = 0.0));
      return;
    case CANON_REAL: LOOP((q[2 * i] = R[i], q[2 * i + 1] = 0.0)); return;
    case CANON_CPLX: LOOP((q[2 * i] = C[2 * i], q[2 * i + 1] = C[2 * i + 1])); return;
    }
  }
}

static void store(hlo_etype dst, const fmt *f, const canon_buf *b, size_t n, void *out) {
  hlo_eclass dc = hlo_etype_class(dst);
  if (dc == HLO_CLASS_COMPLEX) {
    store_complex(dst, b, n, out);
    return;
  }
  bool to_float = dc == HLO_CLASS_FLOAT;
  switch (b->kind) {
  case CANON_INT:
    if (to_float)
      store_float_from_int(dst, f, b->u.i, b->is_signed, n, out);
    else
      store_int_from_int(dst, b->u.i, n, out);
    return;
  case CANON_REAL:
  case CANON_CPLX: {
    /* Complex to real keeps the real part: every other double. */
    size_t stride = b->kind == CANON_CPLX ? 2 : 1;
    if (to_float)
      store_float_from_real(dst, f, b->u.r, stride, n, out);
    else
      store_int_from_real(dst, b->u.r, stride, n, out);
    return;
  }
  }
}

/* Dedicated loops for the pairs the evaluator converts most. */
static bool fast_path(hlo_etype src, const void *in, hlo_etype dst, void *out, size_t n) {
  if (src == HLO_F32 && dst == HLO_BF16) {
    const float *p = in;
    uint16_t *q = out;
    LOOP(q[i] = hlo_f32_to_bf16(p[i]));
  } else if (src == HLO_BF16 && dst == HLO_F32) {
    const uint16_t *p = in;
    float *q = out;
    LOOP(q[i] = hlo_bf16_to_f32(p[i]));
  } else if (src == HLO_F32 && dst == HLO_F16) {
    const float *p = in;
    uint16_t *q = out;
    LOOP(q[i] = hlo_f32_to_f16(p[i]));
  } else if (src == HLO_F16 && dst == HLO_F32) {
    const uint16_t *p = in;
    float *q = out;
    LOOP(q[i] = hlo_f16_to_f32(p[i]));
  } else if (src == HLO_F32 && dst == HLO_F64) {
    const float *p = in;
    double *q = out;
    LOOP(q[i] = p[i]);
  } else if (src == HLO_F64 && dst == HLO_F32) {
    const double *p = in;
    float *q = out;
    LOOP(q[i] = (float)p[i]);
  } else {
    return false;
  }
  return true;
}

int hlo_convert_array(hlo_etype src, const void *in, hlo_etype dst, void *out, size_t n) {
  if (!is_value_type(src) || !is_value_type(dst))
    return -1;
  if (n == 0)
    return 0;
  if (!in || !out)
    return -1;
  if (src == dst) {
    if (in != out)
      memcpy(out, in, n * hlo_etype_host_size(src));
    return 0;
  }
  if (fast_path(src, in, dst, out, n))
    return 0;

  fmt dfmt = {0};
  if (hlo_etype_is_float(dst))
    get_fmt(dst, &dfmt);
  double table8[256];
  fmt sfmt;
  if (hlo_etype_is_float(src) && hlo_etype_bits(src) <= 8 && get_fmt(src, &sfmt))
    build_table8(&sfmt, table8);

  size_t in_size = hlo_etype_host_size(src), out_size = hlo_etype_host_size(dst);
  const unsigned char *ip = in;
  unsigned char *op = out;
  canon_buf buf;
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t k = n - done < CHUNK ? n - done : CHUNK;
    load(src, ip + done * in_size, k, &buf, table8);
    store(dst, &dfmt, &buf, k, op + done * out_size);
  }
  return 0;
}
