/* hlo_types.h — HLO element types.
 *
 * Every PrimitiveType of xla_data.proto has a value here, so the parser can
 * accept any module XLA writes even where evaluation does not support the
 * type.  The numeric facts (width, class) live in one table in hlo_types.c so
 * the parser, printer, evaluator and HDF5 store cannot disagree about them.
 */
#ifndef TUNE_HLO_TYPES_H
#define TUNE_HLO_TYPES_H

#include <stdbool.h>
#include <stddef.h>

/* X(enum suffix, text name, bit width, class) */
#define HLO_ETYPE_LIST(X)                    \
  X(PRED, "pred", 8, HLO_CLASS_PRED)         \
  X(S1, "s1", 1, HLO_CLASS_SINT)             \
  X(S2, "s2", 2, HLO_CLASS_SINT)             \
  X(S4, "s4", 4, HLO_CLASS_SINT)             \
  X(S8, "s8", 8, HLO_CLASS_SINT)             \
  X(S16, "s16", 16, HLO_CLASS_SINT)          \
  X(S32, "s32", 32, HLO_CLASS_SINT)          \
  X(S64, "s64", 64, HLO_CLASS_SINT)          \
  X(U1, "u1", 1, HLO_CLASS_UINT)             \
  X(U2, "u2", 2, HLO_CLASS_UINT)             \
  X(U4, "u4", 4, HLO_CLASS_UINT)             \
  X(U8, "u8", 8, HLO_CLASS_UINT)             \
  X(U16, "u16", 16, HLO_CLASS_UINT)          \
  X(U32, "u32", 32, HLO_CLASS_UINT)          \
  X(U64, "u64", 64, HLO_CLASS_UINT)          \
  X(F16, "f16", 16, HLO_CLASS_FLOAT)         \
  X(BF16, "bf16", 16, HLO_CLASS_FLOAT)       \
  X(F32, "f32", 32, HLO_CLASS_FLOAT)         \
  X(F64, "f64", 64, HLO_CLASS_FLOAT)         \
  X(F8E5M2, "f8e5m2", 8, HLO_CLASS_FLOAT)    \
  X(F8E4M3, "f8e4m3", 8, HLO_CLASS_FLOAT)    \
  X(F8E4M3FN, "f8e4m3fn", 8, HLO_CLASS_FLOAT) \
  X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8, HLO_CLASS_FLOAT) \
  X(F8E5M2FNUZ, "f8e5m2fnuz", 8, HLO_CLASS_FLOAT) \
  X(F8E4M3FNUZ, "f8e4m3fnuz", 8, HLO_CLASS_FLOAT) \
  X(F8E3M4, "f8e3m4", 8, HLO_CLASS_FLOAT)    \
  X(F8E8M0FNU, "f8e8m0fnu", 8, HLO_CLASS_FLOAT) \
  X(F4E2M1FN, "f4e2m1fn", 4, HLO_CLASS_FLOAT) \
  X(C64, "c64", 64, HLO_CLASS_COMPLEX)       \
  X(C128, "c128", 128, HLO_CLASS_COMPLEX)    \
  X(TOKEN, "token", 0, HLO_CLASS_OTHER)      \
  X(OPAQUE, "opaque", 0, HLO_CLASS_OTHER)    \
  X(TUPLE, "tuple", 0, HLO_CLASS_OTHER)

typedef enum hlo_etype {
  HLO_INVALID = 0,
#define X(e, name, bits, cls) HLO_##e,
  HLO_ETYPE_LIST(X)
#undef X
  HLO_ETYPE_COUNT
} hlo_etype;

typedef enum hlo_eclass {
  HLO_CLASS_PRED,
  HLO_CLASS_SINT,
  HLO_CLASS_UINT,
  HLO_CLASS_FLOAT,
  HLO_CLASS_COMPLEX,
  HLO_CLASS_OTHER
} hlo_eclass;

/* Text name as XLA writes it ("f32"); "invalid" for HLO_INVALID. */
const char *hlo_etype_name(hlo_etype t);
/* Looks up a text name of n bytes; HLO_INVALID when it is not a type. */
hlo_etype hlo_etype_from_name(const char *s, size_t n);
/* Bits per element as XLA defines it (pred is 8, token/tuple 0). */
int hlo_etype_bits(hlo_etype t);
hlo_eclass hlo_etype_class(hlo_etype t);
bool hlo_etype_is_float(hlo_etype t);   /* real floating point only */
bool hlo_etype_is_int(hlo_etype t);     /* signed or unsigned integer */
/* Bytes one element occupies in an unpacked host array: sub-byte types take
 * one byte each, pred one byte, c64 8 and c128 16; 0 for token/tuple/opaque. */
size_t hlo_etype_host_size(hlo_etype t);

#endif
