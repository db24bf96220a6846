/* hlo_value.h — a run-time value: a dense array or a tuple of values.
 *
 * Arrays are stored unpacked and row-major (the last dimension varies
 * fastest) whatever the HLO layout says: layouts change how a device lays
 * bytes out, never what an op computes, so the reference keeps one order.
 * Element storage follows the host convention of hlo_dtype.h (bf16 and f16
 * as uint16_t bit patterns, f8 as uint8_t, pred as uint8_t 0/1, sub-byte
 * integers one per byte, c64 as float pairs).
 *
 * Ownership: values are reference counted because the same value flows to
 * many users (a parameter read by ten ops, a tuple element taken out by
 * get-tuple-element) and copying would cost memory bandwidth the evaluator
 * cannot spare.  A value is immutable once it is handed to anyone else; a
 * function that returns a new value gives the caller one reference.
 */
#ifndef TUNE_HLO_VALUE_H
#define TUNE_HLO_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo.h"

#define HLO_MAX_RANK 16

typedef struct hlo_value hlo_value;
struct hlo_value {
  int refs;
  hlo_etype type;              /* HLO_TUPLE for a tuple */
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int64_t count;               /* elements (product of dims) */
  size_t elem_size;            /* hlo_etype_host_size(type) */
  void *data;                  /* count * elem_size bytes, 64-byte aligned */
  int ntuple;
  hlo_value **elems;           /* each holds one reference */
};

/* A zero-filled array; NULL when out of memory, rank > HLO_MAX_RANK, a
 * dimension is negative, or the byte count overflows. */
hlo_value *hlo_value_array(hlo_etype type, int rank, const int64_t *dims);
/* The same without zero-filling, for results a kernel overwrites entirely:
 * skipping the fill saves a whole pass over memory on large outputs. */
hlo_value *hlo_value_array_uninit(hlo_etype type, int rank, const int64_t *dims);
/* A value shaped like s, every array zero-filled (tokens empty), through
 * nested tuples. */
hlo_value *hlo_value_from_shape(const hlo_shape *s);
/* A tuple of n elements; takes over one reference to each element. */
hlo_value *hlo_value_tuple(int n, hlo_value *const *elems);
/* The arrays of a value in depth-first order (an array is its own one
 * leaf): how many, and the k-th (borrowed; NULL when there is none). */
int hlo_value_leaf_count(const hlo_value *v);
const hlo_value *hlo_value_leaf(const hlo_value *v, int k);
hlo_value *hlo_value_ref(hlo_value *v);  /* returns v */
void hlo_value_unref(hlo_value *v);      /* NULL is fine */
/* A deep copy with a reference count of one. */
hlo_value *hlo_value_clone(const hlo_value *v);

/* Row-major strides in elements for v's dims (out has v->rank entries). */
void hlo_value_strides(const hlo_value *v, int64_t *out);

/* Generic element access for cold paths (indices, tests, I/O).  Floats of
 * every width go through double exactly; integers through int64_t (u64
 * values above INT64_MAX wrap; use the _u variant for them). */
double hlo_value_get_f64(const hlo_value *v, int64_t i);
int64_t hlo_value_get_i64(const hlo_value *v, int64_t i);
uint64_t hlo_value_get_u64(const hlo_value *v, int64_t i);
/* Stores with the conversion rules of hlo_dtype.h (RNE for floats,
 * saturation for float to int, wrap for int to int). */
void hlo_value_set_f64(hlo_value *v, int64_t i, double x);
void hlo_value_set_i64(hlo_value *v, int64_t i, int64_t x);

/* Does the array match the shape's type and dims (layout ignored)? */
bool hlo_value_matches(const hlo_value *v, const hlo_shape *s);
/* Bitwise equality of two values (same type, dims and bytes). */
bool hlo_value_equal(const hlo_value *a, const hlo_value *b);

/* The constant's literal as a value, converting each element to the
 * instruction's type; NULL with err for an elided literal. */
hlo_value *hlo_value_from_literal(const hlo_shape *s, const hlo_literal *lit, char *err, size_t errlen);

#endif
