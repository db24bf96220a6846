/* dev_slot_f32.h — runs of slots to and from f32, four at a time.
 *
 * A slot holds a float value as a double.  Rows of f32 go in and out of
 * slots everywhere a parameter is read, an f32 operand is taken or an f32
 * result is stored, one element at a time.  At -O2 GCC leaves such a loop
 * scalar (its cheap vectoriser wants a known trip count), so these convert
 * four at a time through a vector conversion: each element by the same
 * rounding as the cast in the scalar loop, hence the same values, NaNs
 * included.  Without vector extensions they are the scalar loops.
 */
#ifndef TUNE_DEV_SLOT_F32_H
#define TUNE_DEV_SLOT_F32_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dev_elemental.h"

#if defined(__GNUC__)
typedef double dev_v4d_ __attribute__((vector_size(32)));
typedef float dev_v4f_ __attribute__((vector_size(16)));
typedef int32_t dev_v4i_ __attribute__((vector_size(16)));
#endif

/* o[j] = (float)v[j].f for j < n; returns whether one is a NaN. */
static inline bool dev_slots_to_f32(const dev_slot *v, int64_t n, float *o) {
  int64_t j = 0;
  bool nan = false;
#if defined(__GNUC__)
  dev_v4i_ bad = {0, 0, 0, 0};
  for (; j + 4 <= n; j += 4) {
    dev_v4d_ d;
    memcpy(&d, v + j, sizeof d);
    dev_v4f_ f = __builtin_convertvector(d, dev_v4f_);
    bad |= f != f;
    memcpy(o + j, &f, sizeof f);
  }
  nan = (bad[0] | bad[1] | bad[2] | bad[3]) != 0;
#endif
  for (; j < n; j++) {
    o[j] = (float)v[j].f;
    nan = nan || o[j] != o[j];
  }
  return nan;
}

/* v[j].f = o[j] for j < n, exactly. */
static inline void dev_f32_to_slots(const float *o, int64_t n, dev_slot *v) {
  int64_t j = 0;
#if defined(__GNUC__)
  for (; j + 4 <= n; j += 4) {
    dev_v4f_ f;
    memcpy(&f, o + j, sizeof f);
    dev_v4d_ d = __builtin_convertvector(f, dev_v4d_);
    memcpy(v + j, &d, sizeof d);
  }
#endif
  for (; j < n; j++)
    v[j].f = o[j];
}

/* o[j].f = (float)v[j].f for j < n: slots rounded to f32 and kept as
 * slots (a dot's f32 sums as its result). */
static inline void dev_slots_round_f32(const dev_slot *v, int64_t n, dev_slot *o) {
  int64_t j = 0;
#if defined(__GNUC__)
  for (; j + 4 <= n; j += 4) {
    dev_v4d_ d;
    memcpy(&d, v + j, sizeof d);
    d = __builtin_convertvector(__builtin_convertvector(d, dev_v4f_), dev_v4d_);
    memcpy(o + j, &d, sizeof d);
  }
#endif
  for (; j < n; j++)
    o[j].f = (float)v[j].f;
}

#endif
