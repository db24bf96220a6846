/* dev_scalar.c — what one element of each op computes on the device: the
 * storage conversions of slots, the elementwise ops (the device's own f32
 * arithmetic, its compare and convert lowerings and the two defects that
 * act there, elide-convert and unsigned-cmp-signed), a simple reducer's
 * step and the dot's multiply-accumulate.
 *
 * Apart from the evaluator (dev_elemental.c) because these are the device's
 * numerics, which every lowering shares one element at a time (the lane
 * programs of dev_lane.h, the whole-array ops and collectives, the
 * executor's folds and stores), while the evaluator only decides which
 * elements a request computes and where their operands lie.
 */
#include "dev_elemental_internal.h"

#include <math.h>
#include <string.h>

#include "dev_defect.h"
#include "dev_slot_f32.h"
#include "hlo/hlo_clones.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_numerics.h"
#include "hlo/hlo_minmax.h"


/* ---- slots ------------------------------------------------------------------ */

void dev_slot_from_host(hlo_etype t, const void *p, int64_t i, dev_slot *v) {
  switch (t) {
  case HLO_F32: v->f = ((const float *)p)[i]; return;
  case HLO_F64: v->f = ((const double *)p)[i]; return;
  case HLO_BF16: v->f = hlo_bf16_to_f32(((const uint16_t *)p)[i]); return;
  case HLO_F16: v->f = hlo_f16_to_f32(((const uint16_t *)p)[i]); return;
  case HLO_PRED: v->i = ((const uint8_t *)p)[i] != 0; return;
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: v->i = ((const int8_t *)p)[i]; return;
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: v->i = ((const uint8_t *)p)[i]; return;
  case HLO_S16: v->i = ((const int16_t *)p)[i]; return;
  case HLO_U16: v->i = ((const uint16_t *)p)[i]; return;
  case HLO_S32: v->i = ((const int32_t *)p)[i]; return;
  case HLO_U32: v->i = ((const uint32_t *)p)[i]; return;
  case HLO_S64: case HLO_U64: v->i = ((const int64_t *)p)[i]; return;
  default:
    if (hlo_etype_class(t) == HLO_CLASS_FLOAT) /* f8 / f4: one byte */
      v->f = hlo_float_decode(t, ((const uint8_t *)p)[i]);
    else
      v->i = 0;
    return;
  }
}

void dev_slot_to_host(hlo_etype t, dev_slot v, void *p, int64_t i) {
  switch (t) {
  case HLO_F32: ((float *)p)[i] = (float)v.f; return;
  case HLO_F64: ((double *)p)[i] = v.f; return;
  case HLO_BF16: ((uint16_t *)p)[i] = hlo_f32_to_bf16((float)v.f); return;
  case HLO_F16: ((uint16_t *)p)[i] = hlo_f32_to_f16((float)v.f); return;
  case HLO_PRED: ((uint8_t *)p)[i] = v.i != 0; return;
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8: ((int8_t *)p)[i] = (int8_t)v.i; return;
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8: ((uint8_t *)p)[i] = (uint8_t)v.i; return;
  case HLO_S16: case HLO_U16: ((uint16_t *)p)[i] = (uint16_t)v.i; return;
  case HLO_S32: case HLO_U32: ((uint32_t *)p)[i] = (uint32_t)v.i; return;
  case HLO_S64: case HLO_U64: ((int64_t *)p)[i] = v.i; return;
  default:
    if (hlo_etype_class(t) == HLO_CLASS_FLOAT)
      ((uint8_t *)p)[i] = (uint8_t)hlo_float_encode(t, v.f);
    return;
  }
}

void dev_slots_from_host(hlo_etype t, const void *p, int64_t off, int64_t n, dev_slot *v) {
  switch (t) {
  case HLO_F32:
    dev_f32_to_slots((const float *)p + off, n, v);
    return;
  case HLO_BF16: {
    const uint16_t *h = (const uint16_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].f = hlo_bf16_to_f32(h[i]);
    return;
  }
  case HLO_S32: {
    const int32_t *q = (const int32_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i];
    return;
  }
  /* dev_slot_from_host's cases for masks, hashes and bytes, typed: a
   * single-op kernel of a compare, a select or a u32 hash reads whole
   * tiles of them, and the per-element switch was most of that read */
  case HLO_U32: {
    const uint32_t *q = (const uint32_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i];
    return;
  }
  case HLO_PRED: {
    const uint8_t *q = (const uint8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i] != 0;
    return;
  }
  case HLO_U8: {
    const uint8_t *q = (const uint8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i];
    return;
  }
  case HLO_S8: {
    const int8_t *q = (const int8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i];
    return;
  }
  default:
    for (int64_t i = 0; i < n; i++)
      dev_slot_from_host(t, p, off + i, &v[i]);
    return;
  }
}

void dev_slots_to_host(hlo_etype t, const dev_slot *v, int64_t n, void *p, int64_t off) {
  if (t == HLO_F32) {
    dev_slots_to_f32(v, n, (float *)p + off);
    return;
  }
  if (t == HLO_BF16) {
    uint16_t *h = (uint16_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      h[i] = hlo_f32_to_bf16((float)v[i].f);
    return;
  }
  /* dev_slot_to_host's cases for masks, hashes and bytes, typed (see
   * dev_slots_from_host) */
  switch (t) {
  case HLO_PRED: {
    uint8_t *h = (uint8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      h[i] = v[i].i != 0;
    return;
  }
  case HLO_S32: case HLO_U32: {
    uint32_t *h = (uint32_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      h[i] = (uint32_t)v[i].i;
    return;
  }
  case HLO_S8: {
    int8_t *h = (int8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      h[i] = (int8_t)v[i].i;
    return;
  }
  case HLO_U8: {
    uint8_t *h = (uint8_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      h[i] = (uint8_t)v[i].i;
    return;
  }
  default: break;
  }
  for (int64_t i = 0; i < n; i++)
    dev_slot_to_host(t, v[i], p, off + i);
}

/* x (computed in f32) rounded to float type t, as storing it would. */
static double round_to(hlo_etype t, float x) {
  switch (t) {
  case HLO_F32: return x;
  case HLO_BF16: return hlo_bf16_to_f32(hlo_f32_to_bf16(x));
  case HLO_F16: return hlo_f16_to_f32(hlo_f32_to_f16(x));
  default: return hlo_float_decode(t, hlo_float_encode(t, x));
  }
}

/* ---- scalar elementwise semantics ---------------------------------------------
 * The reference's rules (check/eval_elementwise.c header), with the device's
 * f32 arithmetic (hlo_num_unary_f32 / hlo_num_binary_f32: approximations and FTZ)
 * for every type that computes in f32. */


static int64_t keyd(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  uint64_t flip = (b >> 63) ? 0x7FFFFFFFFFFFFFFFull : 0u;
  return (int64_t)(b ^ flip);
}

/* The sign of a - b in the total order of floats: every value of a
 * narrower type is exact in double, so the f64 keys order them the same
 * way. */
static inline int total_order_sign(double a, double b) {
  int64_t x = keyd(a), y = keyd(b);
  return x < y ? -1 : x > y;
}

static bool cmp_dir(hlo_cmp_dir d, int c) { /* c = sign of a - b; 2 = unordered */
  switch (d) {
  case HLO_CMP_EQ: return c == 0;
  case HLO_CMP_NE: return c != 0;
  case HLO_CMP_LT: return c == -1;
  case HLO_CMP_LE: return c == -1 || c == 0;
  case HLO_CMP_GT: return c == 1;
  case HLO_CMP_GE: return c == 1 || c == 0;
  default: return false;
  }
}

static uint64_t wmask(int w) { return w >= 64 ? ~0ull : ((1ull << w) - 1u); }

static int64_t sext(uint64_t v, int w) {
  /* (v ^ sb) - sb overflows int64 for a negative 64-bit v */
  if (w >= 64)
    return (int64_t)v;
  uint64_t m = wmask(w), sb = 1ull << (w - 1);
  v &= m;
  return (int64_t)(v ^ sb) - (int64_t)sb;
}

/* Whether an integer compare of class cls (SINT or UINT) is lowered as a
 * signed one: its type= attribute, else its class.  signed_bug models
 * defect unsigned-cmp-signed (class: signedness lost in instruction
 * selection): an unsigned compare is emitted as the signed compare of the
 * same width.  The per-element lowering and the row form both ask here,
 * so the defect has one hook. */
static bool compare_signed(hlo_eclass cls, hlo_cmp_type ty, bool signed_bug) {
  if (signed_bug && cls == HLO_CLASS_UINT)
    return true; /* unsigned-cmp-signed */
  return ty == HLO_CMPT_SIGNED ? true : ty == HLO_CMPT_UNSIGNED ? false : cls == HLO_CLASS_SINT;
}

/* The device's compare lowering: returns the boolean.  signed_bug models
 * defect unsigned-cmp-signed (class: signedness lost in instruction
 * selection): an unsigned integer compare is emitted as the signed compare
 * of the same width, so values >= 2^(bits-1) order below small ones. */
static bool compare_lowering(const hlo_instr *ins, hlo_etype t, dev_slot a, dev_slot b, bool signed_bug) {
  hlo_cmp_dir dir = ins->attrs.direction;
  hlo_eclass cls = hlo_etype_class(t);
  int c;
  if (cls == HLO_CLASS_FLOAT) {
    if (ins->attrs.cmp_type == HLO_CMPT_TOTALORDER) {
      c = total_order_sign(a.f, b.f);
    } else {
      c = isnan(a.f) || isnan(b.f) ? 2 : a.f < b.f ? -1 : a.f > b.f;
    }
  } else if (cls == HLO_CLASS_PRED) {
    c = (a.i != 0) < (b.i != 0) ? -1 : (a.i != 0) > (b.i != 0);
  } else {
    bool want_signed = compare_signed(cls, ins->attrs.cmp_type, signed_bug);
    int w = hlo_etype_bits(t);
    if (want_signed) {
      int64_t x = sext((uint64_t)a.i, w), y = sext((uint64_t)b.i, w);
      c = x < y ? -1 : x > y;
    } else {
      uint64_t x = (uint64_t)a.i & wmask(w), y = (uint64_t)b.i & wmask(w);
      c = x < y ? -1 : x > y;
    }
  }
  return cmp_dir(dir, c);
}

/* The device's convert lowering: exact hlo_dtype conversion. */
static dev_slot convert_lowering(hlo_etype s, hlo_etype d, dev_slot v) {
  uint8_t in[16], out[16];
  dev_slot_to_host(s, v, in, 0);
  hlo_convert_array(s, in, d, out, 1);
  dev_slot r;
  dev_slot_from_host(d, out, 0, &r);
  return r;
}

static dev_slot float_op(const hlo_instr *ins, hlo_etype t, hlo_etype rt, const dev_slot *x) {
  hlo_opcode op = ins->op;
  if (t == HLO_F64) {
    double a = x[0].f, b = ins->noperands > 1 ? x[1].f : 0, r;
    switch (op) {
    case HLO_OP_ABS: r = fabs(a); break;
    case HLO_OP_NEGATE: r = -a; break;
    case HLO_OP_SIGN: r = isnan(a) ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : a; break;
    case HLO_OP_FLOOR: r = floor(a); break;
    case HLO_OP_CEIL: r = ceil(a); break;
    case HLO_OP_ROUND_AFZ: r = round(a); break;
    case HLO_OP_ROUND_EVEN: r = nearbyint(a); break;
    case HLO_OP_EXP: r = exp(a); break;
    case HLO_OP_EXPM1: r = expm1(a); break;
    case HLO_OP_LOG: r = log(a); break;
    case HLO_OP_LOG1P: r = log1p(a); break;
    case HLO_OP_LOGISTIC: r = 1.0 / (1.0 + exp(-a)); break;
    case HLO_OP_TANH: r = tanh(a); break;
    case HLO_OP_SQRT: r = sqrt(a); break;
    case HLO_OP_RSQRT: r = 1.0 / sqrt(a); break;
    case HLO_OP_CBRT: r = cbrt(a); break;
    case HLO_OP_SINE: r = sin(a); break;
    case HLO_OP_COSINE: r = cos(a); break;
    case HLO_OP_TAN: r = tan(a); break;
    case HLO_OP_ERF: r = erf(a); break;
    case HLO_OP_REAL: r = a; break;
    case HLO_OP_IMAG: r = 0; break;
    case HLO_OP_REDUCE_PRECISION:
      r = hlo_reduce_precision(a, (int)ins->attrs.exponent_bits, (int)ins->attrs.mantissa_bits);
      break;
    case HLO_OP_IS_FINITE: return dev_el_islot(isfinite(a) != 0);
    case HLO_OP_ADD: r = a + b; break;
    case HLO_OP_SUBTRACT: r = a - b; break;
    case HLO_OP_MULTIPLY: r = a * b; break;
    case HLO_OP_DIVIDE: r = a / b; break;
    case HLO_OP_REMAINDER: r = fmod(a, b); break;
    case HLO_OP_POWER: r = pow(a, b); break;
    case HLO_OP_ATAN2: r = atan2(a, b); break;
    case HLO_OP_MAXIMUM: r = hlo_max_f64(a, b); break;
    case HLO_OP_MINIMUM: r = hlo_min_f64(a, b); break;
    case HLO_OP_CLAMP:
      if (isnan(x[0].f)) return x[0];
      if (isnan(x[1].f)) return x[1];
      if (isnan(x[2].f)) return x[2];
      r = hlo_min_f64(x[2].f, hlo_max_f64(x[0].f, x[1].f));
      break;
    default: r = NAN; break;
    }
    return dev_el_fslot(r);
  }
  float a = (float)x[0].f, b = ins->noperands > 1 ? (float)x[1].f : 0.0f, r;
  if (ins->noperands == 1 && hlo_num_unary_f32(op, a, &r))
    return dev_el_fslot(round_to(rt, r));
  if (ins->noperands == 2 && hlo_num_binary_f32(op, a, b, &r))
    return dev_el_fslot(round_to(rt, r));
  switch (op) {
  case HLO_OP_REAL: r = a; break;
  case HLO_OP_IMAG: r = 0; break;
  case HLO_OP_REDUCE_PRECISION:
    r = hlo_reduce_precision_f32(a, (int)ins->attrs.exponent_bits, (int)ins->attrs.mantissa_bits);
    break;
  case HLO_OP_IS_FINITE: return dev_el_islot(isfinite(a) != 0);
  case HLO_OP_MAXIMUM: r = hlo_max_f32(a, b); break;
  case HLO_OP_MINIMUM: r = hlo_min_f32(a, b); break;
  case HLO_OP_CLAMP: {
    float lo = a, v = b, hi = (float)x[2].f;
    if (isnan(lo)) r = lo;
    else if (isnan(v)) r = v;
    else if (isnan(hi)) r = hi;
    else r = hlo_min_f32(hi, hlo_max_f32(lo, v));
    break;
  }
  default: r = NAN; break;
  }
  return dev_el_fslot(round_to(rt, r));
}

static uint64_t ipow(uint64_t base, uint64_t e) {
  uint64_t acc = 1;
  while (e) {
    if (e & 1u)
      acc *= base;
    base *= base;
    e >>= 1;
  }
  return acc;
}

static dev_slot int_op(const hlo_instr *ins, hlo_etype t, const dev_slot *x) {
  bool sg = hlo_etype_class(t) == HLO_CLASS_SINT;
  int w = hlo_etype_bits(t);
  uint64_t m = wmask(w);
  uint64_t a = (uint64_t)x[0].i, b = ins->noperands > 1 ? (uint64_t)x[1].i : 0;
  int64_t sa = sext(a, w), sb = ins->noperands > 1 ? sext(b, w) : 0;
  uint64_t ua = a & m, ub = b & m;
  switch (ins->op) {
  case HLO_OP_ADD: return dev_el_wrap(t, a + b);
  case HLO_OP_SUBTRACT: return dev_el_wrap(t, a - b);
  case HLO_OP_MULTIPLY: return dev_el_wrap(t, a * b);
  case HLO_OP_NEGATE: return dev_el_wrap(t, 0 - a);
  case HLO_OP_ABS: return sg && sa < 0 ? dev_el_wrap(t, 0 - a) : x[0];
  case HLO_OP_SIGN: return sg ? dev_el_islot(sa > 0 ? 1 : sa < 0 ? -1 : 0) : dev_el_islot(ua != 0);
  case HLO_OP_MAXIMUM: return sg ? dev_el_islot(sa > sb ? sa : sb) : dev_el_wrap(t, ua > ub ? ua : ub);
  case HLO_OP_MINIMUM: return sg ? dev_el_islot(sa < sb ? sa : sb) : dev_el_wrap(t, ua < ub ? ua : ub);
  case HLO_OP_AND: return dev_el_wrap(t, a & b);
  case HLO_OP_OR: return dev_el_wrap(t, a | b);
  case HLO_OP_XOR: return dev_el_wrap(t, a ^ b);
  case HLO_OP_NOT: return dev_el_wrap(t, ~a);
  case HLO_OP_DIVIDE:
    if (ub == 0) return dev_el_wrap(t, ~0ull);
    if (sg) {
      if (sb == -1 && sa == sext(1ull << (w - 1), w)) return x[0];
      return dev_el_wrap(t, (uint64_t)(sa / sb));
    }
    return dev_el_wrap(t, ua / ub);
  case HLO_OP_REMAINDER:
    if (ub == 0) return x[0];
    if (sg) {
      if (sb == -1) return dev_el_islot(0);
      return dev_el_wrap(t, (uint64_t)(sa % sb));
    }
    return dev_el_wrap(t, ua % ub);
  case HLO_OP_SHIFT_LEFT: return ub >= (uint64_t)w ? dev_el_islot(0) : dev_el_wrap(t, ua << ub);
  case HLO_OP_SHIFT_RIGHT_LOGICAL: return ub >= (uint64_t)w ? dev_el_islot(0) : dev_el_wrap(t, ua >> ub);
  case HLO_OP_SHIFT_RIGHT_ARITHMETIC: {
    int64_t v = sext(ua, w);
    uint64_t sh = ub >= (uint64_t)w ? (uint64_t)w - 1 : ub;
    return dev_el_wrap(t, (uint64_t)(v >> sh));
  }
  case HLO_OP_POPCNT: return dev_el_islot(__builtin_popcountll(ua));
  case HLO_OP_CLZ: {
    int n = 0;
    for (int bit = w - 1; bit >= 0 && !((ua >> bit) & 1u); bit--)
      n++;
    return dev_el_islot(n);
  }
  case HLO_OP_POWER:
    if (ub == 0 || ua == 1) return dev_el_islot(1);
    if (sg && sb < 0) return dev_el_islot(0);
    return dev_el_wrap(t, ipow(a, ub));
  case HLO_OP_CLAMP: {
    uint64_t c = (uint64_t)x[2].i;
    if (sg) {
      int64_t lo = sa, v = sb, hi = sext(c, w);
      int64_t r = v >= lo ? v : lo;
      return dev_el_islot(hi <= r ? hi : r);
    }
    uint64_t lo = ua, v = ub, hi = c & m;
    uint64_t r = v >= lo ? v : lo;
    return dev_el_wrap(t, hi <= r ? hi : r);
  }
  default: return dev_el_islot(0);
  }
}

static dev_slot pred_op(const hlo_instr *ins, const dev_slot *x) {
  bool a = x[0].i != 0, b = ins->noperands > 1 && x[1].i != 0;
  switch (ins->op) {
  case HLO_OP_NOT: return dev_el_islot(!a);
  case HLO_OP_AND: case HLO_OP_MULTIPLY: case HLO_OP_MINIMUM: return dev_el_islot(a && b);
  case HLO_OP_OR: case HLO_OP_ADD: case HLO_OP_MAXIMUM: return dev_el_islot(a || b);
  case HLO_OP_XOR: return dev_el_islot(a != b);
  case HLO_OP_POWER: return dev_el_islot(a || !b);
  case HLO_OP_CLAMP: return dev_el_islot(((x[1].i != 0) | (x[0].i != 0)) & (x[2].i != 0));
  default: return dev_el_islot(0);
  }
}

/* Defect elide-convert (class: a precision policy that keeps fused
 * intermediates in 32-bit registers and drops casts it believes are
 * no-ops, paper Figure 4): both converts of a float round trip
 * S -> narrower T -> S inside the kernel are skipped, so the register keeps
 * the unrounded S value and x - S(T(x)) cancels to 0.  Other readers of
 * the narrow value see the unrounded register too (a store to HBM still
 * rounds).  The value passes through unchanged: it is an S value, exact in
 * the round trip's result type S. */
static dev_slot elided_convert(dev_slot v) { return v; }

/* One element of an elementwise instruction. */
dev_slot dev_el_ew_apply(const dev_elem *e, const hlo_instr *ins, const dev_slot *x) {
  hlo_etype rt = ins->shape.type;
  switch (ins->op) {
  case HLO_OP_COPY: return x[0];
  case HLO_OP_SELECT: return x[0].i ? x[1] : x[2];
  case HLO_OP_CONVERT:
    if (e->elide && e->elide[ins->index])
      return elided_convert(x[0]);
    return convert_lowering(ins->operands[0]->shape.type, rt, x[0]);
  case HLO_OP_COMPARE:
    return dev_el_islot(compare_lowering(ins, ins->operands[0]->shape.type, x[0], x[1],
                                  dev_el_has_defect(e, DEV_DEFECT_UNSIGNED_CMP_SIGNED)));
  default: break;
  }
  hlo_etype t = ins->operands[0]->shape.type;
  if (ins->op == HLO_OP_CLAMP)
    t = ins->operands[1]->shape.type;
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_FLOAT: return float_op(ins, t, rt, x);
  case HLO_CLASS_PRED: return pred_op(ins, x);
  default: return int_op(ins, t, x);
  }
}

/* int_op's binary u32 cases of a hash or a bit mask, over a row: each
 * wraps to 32 bits (hlo_int_wrap of a u32) what int_op computes.  False
 * for the other ops. */
static bool u32_row(hlo_opcode op, const dev_slot *const *x, const int64_t *step, dev_slot *out, int64_t n) {
  const uint64_t m = 0xFFFFFFFFu;
  const dev_slot *p = x[0], *q = x[1];
  int64_t sp = step[0], sq = step[1];
#define U32_ROW(EXPR)                                                 \
  for (int64_t k = 0; k < n; k++) {                                   \
    uint64_t a = (uint64_t)p[k * sp].i, b = (uint64_t)q[k * sq].i;    \
    out[k] = dev_el_islot((int64_t)((EXPR) & m));                     \
  }                                                                   \
  return true
  switch (op) {
  case HLO_OP_ADD: U32_ROW(a + b);
  case HLO_OP_SUBTRACT: U32_ROW(a - b);
  case HLO_OP_MULTIPLY: U32_ROW(a * b);
  case HLO_OP_AND: U32_ROW(a & b);
  case HLO_OP_OR: U32_ROW(a | b);
  case HLO_OP_XOR: U32_ROW(a ^ b);
  case HLO_OP_SHIFT_LEFT: U32_ROW((b & m) >= 32 ? 0 : (a & m) << (b & m));
  case HLO_OP_SHIFT_RIGHT_LOGICAL: U32_ROW((b & m) >= 32 ? 0 : (a & m) >> (b & m));
  default: return false;
  }
#undef U32_ROW
}

/* compare_lowering's integer and pred branches over a row: the
 * signedness (the defect's included) and the width chosen once, then each
 * element's sign of a - b looked up in the direction's verdicts.  False
 * for a type of another class. */
static bool int_compare_row(const dev_elem *e, const hlo_instr *ins, const int64_t *verdict, const dev_slot *a,
                            int64_t sa, const dev_slot *b, int64_t sb, dev_slot *out, int64_t n) {
  hlo_etype t = ins->operands[0]->shape.type;
  hlo_eclass cls = hlo_etype_class(t);
  if (cls == HLO_CLASS_PRED) {
    for (int64_t k = 0; k < n; k++) {
      bool x = a[k * sa].i != 0, y = b[k * sb].i != 0;
      out[k] = dev_el_islot(verdict[(x > y) - (x < y) + 1]);
    }
    return true;
  }
  if (cls != HLO_CLASS_SINT && cls != HLO_CLASS_UINT)
    return false;
  bool want_signed = compare_signed(cls, ins->attrs.cmp_type, dev_el_has_defect(e, DEV_DEFECT_UNSIGNED_CMP_SIGNED));
  int w = hlo_etype_bits(t);
  if (want_signed && w < 64) {
    /* sext with its mask and sign bit taken out of the loop */
    const uint64_t m = wmask(w), sbit = 1ull << (w - 1);
    for (int64_t k = 0; k < n; k++) {
      int64_t x = (int64_t)(((uint64_t)a[k * sa].i & m) ^ sbit) - (int64_t)sbit;
      int64_t y = (int64_t)(((uint64_t)b[k * sb].i & m) ^ sbit) - (int64_t)sbit;
      out[k] = dev_el_islot(verdict[(x > y) - (x < y) + 1]);
    }
  } else if (want_signed) {
    for (int64_t k = 0; k < n; k++) {
      int64_t x = a[k * sa].i, y = b[k * sb].i; /* sext of 64 bits */
      out[k] = dev_el_islot(verdict[(x > y) - (x < y) + 1]);
    }
  } else {
    uint64_t m = wmask(w);
    for (int64_t k = 0; k < n; k++) {
      uint64_t x = (uint64_t)a[k * sa].i & m, y = (uint64_t)b[k * sb].i & m;
      out[k] = dev_el_islot(verdict[(x > y) - (x < y) + 1]);
    }
  }
  return true;
}

bool dev_el_ew_row(const dev_elem *e, const hlo_instr *ins, const dev_slot *const *x, const int64_t *step,
                   dev_slot *out, int64_t n) {
  if (ins->op == HLO_OP_SELECT && ins->noperands == 3) {
    /* the chosen slot's bits through a mask, without a branch on the
     * predicate (a mask's values are random) */
    const dev_slot *p = x[0], *a = x[1], *b = x[2];
    int64_t sp = step[0], sa = step[1], sb = step[2];
    for (int64_t k = 0; k < n; k++) {
      uint64_t m = 0 - (uint64_t)(p[k * sp].i != 0), u, v;
      memcpy(&u, &a[k * sa], sizeof u);
      memcpy(&v, &b[k * sb], sizeof v);
      u = (u & m) | (v & ~m);
      memcpy(&out[k], &u, sizeof u);
    }
    return true;
  }
  if (ins->noperands == 2 && ins->op != HLO_OP_COMPARE && ins->operands[0]->shape.type == HLO_U32)
    return u32_row(ins->op, x, step, out, n);
  if (ins->op != HLO_OP_COMPARE || ins->noperands != 2)
    return false;
  /* the direction's verdict for each sign of a - b (2: unordered),
   * looked up once */
  hlo_cmp_dir dir = ins->attrs.direction;
  const int64_t verdict[4] = {cmp_dir(dir, -1), cmp_dir(dir, 0), cmp_dir(dir, 1), cmp_dir(dir, 2)};
  const dev_slot *a = x[0], *b = x[1];
  int64_t sa = step[0], sb = step[1];
  if (hlo_etype_class(ins->operands[0]->shape.type) != HLO_CLASS_FLOAT)
    return int_compare_row(e, ins, verdict, a, sa, b, sb, out, n);
  /* compare_lowering's float branch */
  if (ins->attrs.cmp_type == HLO_CMPT_TOTALORDER) {
    for (int64_t k = 0; k < n; k++)
      out[k] = dev_el_islot(verdict[total_order_sign(a[k * sa].f, b[k * sb].f) + 1]);
  } else {
    for (int64_t k = 0; k < n; k++) {
      double u = a[k * sa].f, v = b[k * sb].f;
      int c = isnan(u) || isnan(v) ? 2 : u < v ? -1 : u > v;
      out[k] = dev_el_islot(verdict[c + 1]);
    }
  }
  return true;
}

dev_slot dev_elem_scalar_op(const hlo_instr *ins, const dev_slot *x) {
  static const dev_elem clean; /* no defect, nothing elided */
  return dev_el_ew_apply(&clean, ins, x);
}

/* dev_elem_scalar_op on a float compare in the total order (a sort's
 * usual comparator): compare_lowering's branch for it, taken without
 * looking up the op, the defect set and the type class per call. */
static dev_slot scalar_total_order_compare(const hlo_instr *ins, const dev_slot *x) {
  return dev_el_islot(cmp_dir(ins->attrs.direction, total_order_sign(x[0].f, x[1].f)));
}

bool dev_elem_compare_by_key(const hlo_instr *ins) {
  return ins->op == HLO_OP_COMPARE && ins->noperands == 2 && ins->attrs.cmp_type == HLO_CMPT_TOTALORDER &&
         hlo_etype_class(ins->operands[0]->shape.type) == HLO_CLASS_FLOAT;
}

int64_t dev_elem_compare_key(dev_slot x) { return keyd(x.f); }

void dev_elem_compare_outcomes(const hlo_instr *ins, bool out[3]) {
  for (int c = -1; c <= 1; c++)
    out[c + 1] = cmp_dir(ins->attrs.direction, c);
}

dev_elem_scalar_fn *dev_elem_scalar_lowering(const hlo_instr *ins) {
  return dev_elem_compare_by_key(ins) ? scalar_total_order_compare : dev_elem_scalar_op;
}

dev_slot dev_elem_reduce_step(hlo_opcode op, hlo_etype t, dev_slot acc, dev_slot x) {
  if (t == HLO_F32) { /* the float branch below without its class lookup
                         and its rounding to f32, the identity here */
    float a = (float)acc.f, b = (float)x.f;
    switch (op) {
    case HLO_OP_ADD: return dev_el_fslot(a + b);
    case HLO_OP_MULTIPLY: return dev_el_fslot(a * b);
    case HLO_OP_MAXIMUM: return dev_el_fslot(hlo_max_f32(a, b));
    case HLO_OP_MINIMUM: return dev_el_fslot(hlo_min_f32(a, b));
    default: return acc;
    }
  }
  hlo_eclass cls = hlo_etype_class(t);
  if (cls == HLO_CLASS_FLOAT) {
    if (t == HLO_F64) {
      double a = acc.f, b = x.f;
      switch (op) {
      case HLO_OP_ADD: return dev_el_fslot(a + b);
      case HLO_OP_MULTIPLY: return dev_el_fslot(a * b);
      case HLO_OP_MAXIMUM: return dev_el_fslot(hlo_max_f64(a, b));
      case HLO_OP_MINIMUM: return dev_el_fslot(hlo_min_f64(a, b));
      default: return acc;
      }
    }
    float a = (float)acc.f, b = (float)x.f, r;
    switch (op) {
    case HLO_OP_ADD: r = a + b; break;
    case HLO_OP_MULTIPLY: r = a * b; break;
    case HLO_OP_MAXIMUM: r = hlo_max_f32(a, b); break;
    case HLO_OP_MINIMUM: r = hlo_min_f32(a, b); break;
    default: return acc;
    }
    return dev_el_fslot(round_to(t, r));
  }
  if (cls == HLO_CLASS_PRED) {
    bool a = acc.i != 0, b = x.i != 0;
    switch (op) {
    case HLO_OP_ADD: case HLO_OP_OR: case HLO_OP_MAXIMUM: return dev_el_islot(a || b);
    case HLO_OP_MULTIPLY: case HLO_OP_AND: case HLO_OP_MINIMUM: return dev_el_islot(a && b);
    case HLO_OP_XOR: return dev_el_islot(a != b);
    default: return acc;
    }
  }
  bool sg = cls == HLO_CLASS_SINT;
  int w = hlo_etype_bits(t);
  uint64_t a = (uint64_t)acc.i, b = (uint64_t)x.i;
  switch (op) {
  case HLO_OP_ADD: return dev_el_wrap(t, a + b);
  case HLO_OP_MULTIPLY: return dev_el_wrap(t, a * b);
  case HLO_OP_AND: return dev_el_wrap(t, a & b);
  case HLO_OP_OR: return dev_el_wrap(t, a | b);
  case HLO_OP_XOR: return dev_el_wrap(t, a ^ b);
  case HLO_OP_MAXIMUM:
    if (sg) return sext(b, w) > sext(a, w) ? x : acc;
    return (b & wmask(w)) > (a & wmask(w)) ? x : acc;
  case HLO_OP_MINIMUM:
    if (sg) return sext(b, w) < sext(a, w) ? x : acc;
    return (b & wmask(w)) < (a & wmask(w)) ? x : acc;
  default: return acc;
  }
}

void dev_elem_reduce_steps(hlo_opcode op, hlo_etype t, dev_slot *acc, const dev_slot *x, int64_t n) {
  /* f32: dev_elem_reduce_step's f32 branch with the op chosen once (its
   * rounding to f32 is the identity) */
#define F32_STEPS(EXPR)                                  \
  for (int64_t i = 0; i < n; i++) {                      \
    float a = (float)acc[i].f, b = (float)x[i].f;        \
    acc[i] = dev_el_fslot(EXPR);                         \
  }                                                      \
  return;
  if (t == HLO_F32) {
    switch (op) {
    case HLO_OP_ADD: F32_STEPS(a + b)
    case HLO_OP_MULTIPLY: F32_STEPS(a * b)
    case HLO_OP_MAXIMUM: F32_STEPS(hlo_max_f32(a, b))
    case HLO_OP_MINIMUM: F32_STEPS(hlo_min_f32(a, b))
    default: break;
    }
  }
#undef F32_STEPS
  for (int64_t i = 0; i < n; i++)
    acc[i] = dev_elem_reduce_step(op, t, acc[i], x[i]);
}

/* ---- dot arithmetic ------------------------------------------------------------ */

hlo_etype dev_elem_dot_ctype(hlo_etype rt) {
  switch (hlo_etype_class(rt)) {
  case HLO_CLASS_FLOAT: return rt == HLO_F64 ? HLO_F64 : HLO_F32;
  case HLO_CLASS_SINT: return HLO_S64;
  default: return HLO_U64;
  }
}

static double as_double(hlo_etype t, dev_slot v) {
  hlo_eclass k = hlo_etype_class(t);
  if (k == HLO_CLASS_FLOAT)
    return v.f;
  if (k == HLO_CLASS_UINT)
    return (double)(uint64_t)v.i;
  return (double)v.i;
}

/* An operand of an integer dot, converted to the result type first (XLA's
 * implicit convert), then widened. */
static uint64_t as_int(hlo_etype t, hlo_etype rt, dev_slot v) {
  if (hlo_etype_class(t) == HLO_CLASS_FLOAT)
    v = convert_lowering(t, rt, v);
  else
    v.i = (int64_t)hlo_int_wrap(rt, (uint64_t)v.i);
  return (uint64_t)v.i;
}

dev_slot dev_elem_dot_step(hlo_etype ct, hlo_etype rt, dev_slot acc, dev_slot a, hlo_etype at, dev_slot b,
                           hlo_etype bt, dev_precision p) {
  if (ct == HLO_F32)
    return dev_el_fslot(hlo_num_dot_acc((float)acc.f, (float)as_double(at, a), (float)as_double(bt, b), p));
  if (ct == HLO_F64)
    return dev_el_fslot(acc.f + as_double(at, a) * as_double(bt, b));
  return dev_el_islot((int64_t)((uint64_t)acc.i + as_int(at, rt, a) * as_int(bt, rt, b)));
}

dev_slot dev_elem_dot_combine(hlo_etype ct, dev_slot x, dev_slot y) {
  if (ct == HLO_F32)
    return dev_el_fslot(hlo_num_ftz_f32((float)x.f + (float)y.f));
  if (ct == HLO_F64)
    return dev_el_fslot(x.f + y.f);
  return dev_el_islot((int64_t)((uint64_t)x.i + (uint64_t)y.i));
}

dev_slot dev_elem_dot_finish(hlo_etype ct, hlo_etype rt, dev_slot acc) {
  if (ct == HLO_F32)
    return dev_el_fslot(round_to(rt, (float)acc.f));
  if (ct == HLO_F64)
    return acc;
  return dev_el_wrap(rt, (uint64_t)acc.i);
}

/* An f32 result, the common case, is the f32 sum as is (round_to of
 * f32): without the call and the type tests per element, four at a time
 * (dev_slot_f32.h). */
HLO_CLONES static void round_f32_block(const dev_slot *acc, dev_slot *out, int64_t n) {
  dev_slots_round_f32(acc, n, out);
}

void dev_elem_dot_finish_block(hlo_etype ct, hlo_etype rt, const dev_slot *acc, dev_slot *out, int64_t n) {
  if (ct == HLO_F32 && rt == HLO_F32) {
    round_f32_block(acc, out, n);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    out[i] = dev_elem_dot_finish(ct, rt, acc[i]);
}
