/* hlo_value.c — allocation, reference counting and cold-path element access
 * for run-time values.  Hot loops never call the per-element accessors here;
 * they work on v->data directly with a loop per element type. */
#include "hlo_value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_dtype.h"
#include "hlo_mem.h"

/* 64-byte alignment keeps vector loads of a row on whole cache lines. */
static size_t data_bytes(size_t n) {
  size_t rounded = (n + 63) & ~(size_t)63;
  return rounded ? rounded : 64;
}

/* Element storage is held in the process's account (hlo_mem.h), so a
 * value that would take it over --max-memory is refused like one the
 * host cannot allocate. */
static void *alloc_data(size_t n, bool zero) {
  size_t bytes = data_bytes(n);
  if (!hlo_mem_take(bytes))
    return NULL;
  void *p = aligned_alloc(64, bytes);
  if (!p) {
    hlo_mem_give(bytes);
    return NULL;
  }
  if (zero)
    memset(p, 0, bytes);
  return p;
}

static void free_data(hlo_value *v) {
  if (v->data)
    hlo_mem_give(data_bytes((size_t)v->count * v->elem_size));
  free(v->data);
}

static hlo_value *new_array(hlo_etype type, int rank, const int64_t *dims, bool zero);

hlo_value *hlo_value_array(hlo_etype type, int rank, const int64_t *dims) {
  return new_array(type, rank, dims, true);
}

hlo_value *hlo_value_array_uninit(hlo_etype type, int rank, const int64_t *dims) {
  return new_array(type, rank, dims, false);
}

static hlo_value *new_array(hlo_etype type, int rank, const int64_t *dims, bool zero) {
  if (rank < 0 || rank > HLO_MAX_RANK || type == HLO_TUPLE)
    return NULL;
  size_t esize = hlo_etype_host_size(type);
  int64_t count = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return NULL;
    if (dims[i] != 0 && count > INT64_MAX / dims[i])
      return NULL;
    count *= dims[i];
  }
  if (esize != 0 && (uint64_t)count > SIZE_MAX / esize)
    return NULL;
  hlo_value *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->refs = 1;
  v->type = type;
  v->rank = rank;
  for (int i = 0; i < rank; i++)
    v->dims[i] = dims[i];
  v->count = count;
  v->elem_size = esize;
  v->data = alloc_data((size_t)count * esize, zero);
  if (!v->data) {
    free(v);
    return NULL;
  }
  return v;
}

hlo_value *hlo_value_from_shape(const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    hlo_value **e = calloc((size_t)(s->ntuple ? s->ntuple : 1), sizeof *e);
    if (!e)
      return NULL;
    for (int i = 0; i < s->ntuple; i++) {
      e[i] = hlo_value_from_shape(&s->elems[i]);
      if (!e[i]) {
        for (int j = 0; j < i; j++)
          hlo_value_unref(e[j]);
        free(e);
        return NULL;
      }
    }
    hlo_value *t = hlo_value_tuple(s->ntuple, e);
    if (!t)
      for (int i = 0; i < s->ntuple; i++)
        hlo_value_unref(e[i]);
    free(e);
    return t;
  }
  return hlo_value_array(s->type, s->rank, s->dims);
}

static int leaf_walk(const hlo_value *v, int want, int *seen, const hlo_value **out) {
  if (v->type != HLO_TUPLE) {
    if ((*seen)++ == want) {
      *out = v;
      return 1;
    }
    return 0;
  }
  for (int i = 0; i < v->ntuple; i++)
    if (leaf_walk(v->elems[i], want, seen, out))
      return 1;
  return 0;
}

const hlo_value *hlo_value_leaf(const hlo_value *v, int k) {
  const hlo_value *out = NULL;
  int seen = 0;
  leaf_walk(v, k, &seen, &out);
  return out;
}

int hlo_value_leaf_count(const hlo_value *v) {
  if (v->type != HLO_TUPLE)
    return 1;
  int n = 0;
  for (int i = 0; i < v->ntuple; i++)
    n += hlo_value_leaf_count(v->elems[i]);
  return n;
}

hlo_value *hlo_value_tuple(int n, hlo_value *const *elems) {
  hlo_value *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->elems = calloc((size_t)(n ? n : 1), sizeof *v->elems);
  if (!v->elems) {
    free(v);
    return NULL;
  }
  v->refs = 1;
  v->type = HLO_TUPLE;
  v->ntuple = n;
  for (int i = 0; i < n; i++)
    v->elems[i] = elems[i];
  return v;
}

/* The count is atomic: the candidates of one fusion run in parallel
 * (fusion_run.c) on the same argument values, and the device takes and drops
 * references to them from every thread.  A plain ++/-- there loses
 * updates, frees an argument still in use and corrupts the heap (seen in
 * a datasets/ sweep as "argument 0 does not match parameter" and a
 * malloc abort).  Acquire-release on the decrement orders every thread's
 * last use before the free. */
hlo_value *hlo_value_ref(hlo_value *v) {
  if (v)
    __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
  return v;
}

void hlo_value_unref(hlo_value *v) {
  if (!v || __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  for (int i = 0; i < v->ntuple; i++)
    hlo_value_unref(v->elems[i]);
  free(v->elems);
  free_data(v);
  free(v);
}

hlo_value *hlo_value_clone(const hlo_value *v) {
  if (v->type == HLO_TUPLE) {
    hlo_value **e = calloc((size_t)(v->ntuple ? v->ntuple : 1), sizeof *e);
    if (!e)
      return NULL;
    for (int i = 0; i < v->ntuple; i++) {
      e[i] = hlo_value_clone(v->elems[i]);
      if (!e[i]) {
        for (int j = 0; j < i; j++)
          hlo_value_unref(e[j]);
        free(e);
        return NULL;
      }
    }
    hlo_value *t = hlo_value_tuple(v->ntuple, e);
    if (!t)
      for (int i = 0; i < v->ntuple; i++)
        hlo_value_unref(e[i]);
    free(e);
    return t;
  }
  /* Every byte is written here: the elements copied, the alignment tail
   * zeroed as hlo_value_array leaves it (a clone is often a large value
   * about to be changed in place, and zero-filling it first doubled the
   * memory traffic of the copy). */
  hlo_value *c = hlo_value_array_uninit(v->type, v->rank, v->dims);
  if (c) {
    size_t n = (size_t)v->count * v->elem_size;
    if (n)
      memcpy(c->data, v->data, n);
    memset((char *)c->data + n, 0, data_bytes(n) - n);
  }
  return c;
}

void hlo_value_strides(const hlo_value *v, int64_t *out) {
  int64_t s = 1;
  for (int i = v->rank - 1; i >= 0; i--) {
    out[i] = s;
    s *= v->dims[i];
  }
}

/* Raw bits of element i, zero-extended to 64 bits. */
static uint64_t load_bits(const hlo_value *v, int64_t i) {
  const unsigned char *p = (const unsigned char *)v->data + (size_t)i * v->elem_size;
  switch (v->elem_size) {
  case 1: return *p;
  case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
  case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
  default: { uint64_t x; memcpy(&x, p, 8); return x; } /* c64/c128: real part bits */
  }
}

static void store_bits(hlo_value *v, int64_t i, uint64_t bits) {
  unsigned char *p = (unsigned char *)v->data + (size_t)i * v->elem_size;
  switch (v->elem_size) {
  case 1: *p = (unsigned char)bits; break;
  case 2: { uint16_t x = (uint16_t)bits; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)bits; memcpy(p, &x, 4); break; }
  case 8: memcpy(p, &bits, 8); break;
  default: break;
  }
}

/* Sign-extends the low `bits` bits of x. */
static int64_t sext(uint64_t x, int bits) {
  if (bits >= 64)
    return (int64_t)x;
  uint64_t m = 1ull << (bits - 1);
  x &= (1ull << bits) - 1;
  return (int64_t)((x ^ m) - m);
}

static double complex_real(const hlo_value *v, int64_t i) {
  if (v->type == HLO_C64) {
    float re;
    memcpy(&re, (const char *)v->data + (size_t)i * 8, 4);
    return re;
  }
  double re;
  memcpy(&re, (const char *)v->data + (size_t)i * 16, 8);
  return re;
}

double hlo_value_get_f64(const hlo_value *v, int64_t i) {
  /* f32 and f64 first: most values are, and the checker reads every
   * element of them through here. */
  if (v->type == HLO_F32) {
    float f;
    memcpy(&f, (const char *)v->data + (size_t)i * 4, 4);
    return f;
  }
  if (v->type == HLO_F64) {
    double d;
    memcpy(&d, (const char *)v->data + (size_t)i * 8, 8);
    return d;
  }
  switch (hlo_etype_class(v->type)) {
  case HLO_CLASS_FLOAT:
    return hlo_float_decode(v->type, load_bits(v, i));
  case HLO_CLASS_COMPLEX:
    return complex_real(v, i);
  case HLO_CLASS_UINT:
    return (double)load_bits(v, i);
  case HLO_CLASS_SINT:
    return (double)sext(load_bits(v, i), hlo_etype_bits(v->type));
  case HLO_CLASS_PRED:
    return load_bits(v, i) != 0;
  default:
    return 0;
  }
}

int64_t hlo_value_get_i64(const hlo_value *v, int64_t i) {
  switch (hlo_etype_class(v->type)) {
  case HLO_CLASS_SINT:
    return sext(load_bits(v, i), hlo_etype_bits(v->type));
  case HLO_CLASS_UINT:
    return (int64_t)load_bits(v, i);
  case HLO_CLASS_PRED:
    return load_bits(v, i) != 0;
  case HLO_CLASS_FLOAT:
  case HLO_CLASS_COMPLEX:
    return hlo_double_to_sint(hlo_value_get_f64(v, i), 64);
  default:
    return 0;
  }
}

uint64_t hlo_value_get_u64(const hlo_value *v, int64_t i) {
  if (hlo_etype_class(v->type) == HLO_CLASS_UINT)
    return load_bits(v, i);
  return (uint64_t)hlo_value_get_i64(v, i);
}

void hlo_value_set_f64(hlo_value *v, int64_t i, double x) {
  if (v->type == HLO_F32) { /* C's conversion rounds once, as hlo_float_encode */
    float f = (float)x;
    memcpy((char *)v->data + (size_t)i * 4, &f, 4);
    return;
  }
  if (v->type == HLO_F64) {
    memcpy((char *)v->data + (size_t)i * 8, &x, 8);
    return;
  }
  switch (hlo_etype_class(v->type)) {
  case HLO_CLASS_FLOAT:
    store_bits(v, i, hlo_float_encode(v->type, x));
    break;
  case HLO_CLASS_COMPLEX:
    if (v->type == HLO_C64) {
      float pair[2] = {(float)x, 0.0f};
      memcpy((char *)v->data + (size_t)i * 8, pair, 8);
    } else {
      double pair[2] = {x, 0.0};
      memcpy((char *)v->data + (size_t)i * 16, pair, 16);
    }
    break;
  case HLO_CLASS_SINT:
    hlo_value_set_i64(v, i, hlo_double_to_sint(x, hlo_etype_bits(v->type)));
    break;
  case HLO_CLASS_UINT:
    store_bits(v, i, hlo_double_to_uint(x, hlo_etype_bits(v->type)));
    break;
  case HLO_CLASS_PRED:
    store_bits(v, i, x != 0);
    break;
  default:
    break;
  }
}

void hlo_value_set_i64(hlo_value *v, int64_t i, int64_t x) {
  int bits = hlo_etype_bits(v->type);
  switch (hlo_etype_class(v->type)) {
  case HLO_CLASS_SINT:
    /* Sub-byte types live sign-extended in a byte, so wrap then extend. */
    store_bits(v, i, (uint64_t)sext((uint64_t)x, bits));
    break;
  case HLO_CLASS_UINT:
    store_bits(v, i, bits >= 64 ? (uint64_t)x : ((uint64_t)x & ((1ull << bits) - 1)));
    break;
  case HLO_CLASS_PRED:
    store_bits(v, i, x != 0);
    break;
  case HLO_CLASS_FLOAT:
    store_bits(v, i, hlo_float_encode_s64(v->type, x));
    break;
  case HLO_CLASS_COMPLEX:
    hlo_value_set_f64(v, i, (double)x);
    break;
  default:
    break;
  }
}

bool hlo_value_matches(const hlo_value *v, const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    if (v->type != HLO_TUPLE || v->ntuple != s->ntuple)
      return false;
    for (int i = 0; i < s->ntuple; i++)
      if (!hlo_value_matches(v->elems[i], &s->elems[i]))
        return false;
    return true;
  }
  if (v->type != s->type || v->rank != s->rank)
    return false;
  for (int i = 0; i < s->rank; i++)
    if (v->dims[i] != s->dims[i])
      return false;
  return true;
}

bool hlo_value_equal(const hlo_value *a, const hlo_value *b) {
  if (a->type != b->type || a->rank != b->rank || a->ntuple != b->ntuple)
    return false;
  if (a->type == HLO_TUPLE) {
    for (int i = 0; i < a->ntuple; i++)
      if (!hlo_value_equal(a->elems[i], b->elems[i]))
        return false;
    return true;
  }
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return a->count == 0 || memcmp(a->data, b->data, (size_t)a->count * a->elem_size) == 0;
}

static void set_complex(hlo_value *v, int64_t i, double re, double im) {
  if (v->type == HLO_C64) {
    float pair[2] = {(float)re, (float)im};
    memcpy((char *)v->data + (size_t)i * 8, pair, 8);
  } else {
    double pair[2] = {re, im};
    memcpy((char *)v->data + (size_t)i * 16, pair, 16);
  }
}

hlo_value *hlo_value_from_literal(const hlo_shape *s, const hlo_literal *lit, char *err, size_t errlen) {
  if (lit->elided) {
    if (err)
      snprintf(err, errlen, "constant data was elided ({...}) in the HLO text");
    return NULL;
  }
  if (s->type == HLO_TUPLE) {
    if (lit->ntuple != s->ntuple) {
      if (err)
        snprintf(err, errlen, "tuple literal has %d elements, shape has %d", lit->ntuple, s->ntuple);
      return NULL;
    }
    hlo_value **e = calloc((size_t)(s->ntuple ? s->ntuple : 1), sizeof *e);
    if (!e)
      return NULL;
    for (int i = 0; i < s->ntuple; i++) {
      e[i] = hlo_value_from_literal(&s->elems[i], &lit->elems[i], err, errlen);
      if (!e[i]) {
        for (int j = 0; j < i; j++)
          hlo_value_unref(e[j]);
        free(e);
        return NULL;
      }
    }
    hlo_value *t = hlo_value_tuple(s->ntuple, e);
    free(e);
    return t;
  }
  hlo_value *v = hlo_value_from_shape(s);
  if (!v) {
    if (err)
      snprintf(err, errlen, "out of memory for a constant");
    return NULL;
  }
  /* One value for an array is XLA's splat (`f32[4] constant(0)`): every
   * element takes it. */
  bool splat = lit->count == 1;
  if (lit->count != v->count && !splat) {
    if (err)
      snprintf(err, errlen, "literal has %lld elements, shape has %lld", (long long)lit->count,
               (long long)v->count);
    hlo_value_unref(v);
    return NULL;
  }
  bool cplx = hlo_etype_class(s->type) == HLO_CLASS_COMPLEX;
  for (int64_t i = 0; i < v->count; i++) {
    int64_t j = splat ? 0 : i;
    if (cplx) {
      double re = lit->f ? lit->f[2 * j] : 0, im = lit->f ? lit->f[2 * j + 1] : 0;
      set_complex(v, i, re, im);
    } else if (lit->f) {
      hlo_value_set_f64(v, i, lit->f[j]);
    } else if (lit->i) {
      hlo_value_set_i64(v, i, lit->i[j]);
    } else if (lit->u) {
      if (hlo_etype_is_float(s->type))
        store_bits(v, i, hlo_float_encode_u64(s->type, lit->u[j]));
      else
        hlo_value_set_i64(v, i, (int64_t)lit->u[j]);
    }
  }
  return v;
}
