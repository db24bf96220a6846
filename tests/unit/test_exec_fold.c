/* test_exec_fold.c — the executor's side-by-side f32 folds
 * (tuner/device/dev_exec_fold.h) against a plain sequential loop written
 * here from the documented step semantics: each line folded in order, the
 * accumulator first (a NaN accumulator stays, quieted; max/min return the
 * NaN operand, the accumulator on ties).  Line counts and lengths cover the
 * 16-line vector groups, the 8-line scalar groups, ragged remainders and
 * lengths that are not multiples of 8, and the same over value slots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_exec_fold.h"

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* The reference step, from the header's words. */
static float ref_step(hlo_opcode op, float a, float x) {
  if (op == HLO_OP_ADD || op == HLO_OP_MULTIPLY) {
    if (a != a)
      return bitsf(fbits(a) | 0x00400000u);
    if (x != x)
      return bitsf(fbits(x) | 0x00400000u);
    return op == HLO_OP_ADD ? a + x : a * x;
  }
  if (a != a)
    return a;
  if (x != x)
    return x;
  /* maximum(-0, +0) = +0 and minimum(-0, +0) = -0 in either order
   * (IEEE 754-2019, StableHLO) */
  if (op == HLO_OP_MAXIMUM)
    return x > a || (x == a && signbit(a)) ? x : a;
  return x < a || (x == a && signbit(x)) ? x : a;
}

static uint32_t rng = 99;
static float sample(int i) {
  rng = rng * 1664525u + 1013904223u;
  if (rng % 211 == 0) /* NaNs with different payloads and signs */
    return bitsf(0x7F800001u | (rng & 0x803FFFFFu) | (rng >> 31 ? 0x00400000u : 0));
  if (rng % 97 == 0)
    return (rng >> 8) & 1 ? 0.0f : -0.0f;
  return (float)((int)(rng >> 12) % 2001 - 1000) * 0.37f + (float)(i % 7) * 1e-3f;
}

static void check(hlo_opcode op, int m, int64_t L, int64_t len) {
  float *x = malloc(sizeof(float) * (size_t)(m * L + 8));
  float acc[64], want[64];
  assert_non_null(x);
  for (int64_t i = 0; i < m * L + 8; i++)
    x[i] = sample((int)i);
  for (int q = 0; q < m; q++) {
    acc[q] = sample(q);
    want[q] = acc[q];
    for (int64_t i = 0; i < len; i++)
      want[q] = ref_step(op, want[q], x[q * L + i]);
  }
  dev_fold_f32_rows(op, acc, m, x, L, len);
  for (int q = 0; q < m; q++)
    if (fbits(acc[q]) != fbits(want[q]))
      fail_msg("op %d, %d lines of %lld (stride %lld): line %d got 0x%08x, want 0x%08x", (int)op, m, (long long)len,
               (long long)L, q, fbits(acc[q]), fbits(want[q]));
  /* the same lines through the strided entry point, 8 at a time, stride 1,
   * and every other element (stride 2) of lines twice as long */
  for (int q = 0; q < m; q++)
    acc[q] = want[q] = (float)q;
  for (int q0 = 0; q0 < m; q0 += 8) {
    int g = m - q0 < 8 ? m - q0 : 8;
    int64_t base[8];
    for (int j = 0; j < g; j++)
      base[j] = (int64_t)(q0 + j) * L;
    dev_fold_f32_lines(op, acc + q0, g, x, base, 2, len / 2);
  }
  for (int q = 0; q < m; q++) {
    for (int64_t i = 0; i < len / 2; i++)
      want[q] = ref_step(op, want[q], x[q * L + 2 * i]);
    if (fbits(acc[q]) != fbits(want[q]))
      fail_msg("strided op %d: line %d got 0x%08x, want 0x%08x", (int)op, q, fbits(acc[q]), fbits(want[q]));
  }
  free(x);
}

static void folds_match_sequential(void **state) {
  (void)state;
  const hlo_opcode ops[] = {HLO_OP_ADD, HLO_OP_MULTIPLY, HLO_OP_MAXIMUM, HLO_OP_MINIMUM};
  const int ms[] = {1, 7, 8, 15, 16, 17, 33, 40};
  const int64_t lens[] = {0, 1, 7, 8, 9, 64, 100};
  for (int o = 0; o < 4; o++)
    for (int a = 0; a < 8; a++)
      for (int b = 0; b < 7; b++) {
        check(ops[o], ms[a], lens[b] + 3, lens[b]); /* rows with a gap after them */
        check(ops[o], ms[a], lens[b], lens[b]);     /* rows back to back */
      }
}

/* dev_fold_f32_slot_lines over value slots (f32 values held as doubles):
 * m <= 8 lines L apart, contiguous (s = 1: long lines are narrowed and
 * folded a chunk at a time, the rest element by element) and every other
 * element (s = 2), against the sequential loop. */
static void check_slots(hlo_opcode op, int m, int64_t L, int64_t len, int64_t s) {
  int64_t n = m * L + s * len + 8;
  dev_slot *x = malloc(sizeof *x * (size_t)n);
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++)
    x[i].f = sample((int)i);
  float acc[8], want[8];
  int64_t base[8];
  for (int q = 0; q < m; q++) {
    acc[q] = want[q] = sample(q);
    base[q] = q * L;
    for (int64_t i = 0; i < len; i++)
      want[q] = ref_step(op, want[q], (float)x[q * L + i * s].f);
  }
  dev_fold_f32_slot_lines(op, acc, m, x, base, s, len);
  for (int q = 0; q < m; q++)
    if (fbits(acc[q]) != fbits(want[q]))
      fail_msg("slots op %d, %d lines of %lld (L %lld, s %lld): line %d got 0x%08x, want 0x%08x", (int)op, m,
               (long long)len, (long long)L, (long long)s, q, fbits(acc[q]), fbits(want[q]));
  free(x);
}

static void slot_folds_match_sequential(void **state) {
  (void)state;
  const hlo_opcode ops[] = {HLO_OP_ADD, HLO_OP_MULTIPLY, HLO_OP_MAXIMUM, HLO_OP_MINIMUM};
  const int ms[] = {1, 3, 8};
  const int64_t lens[] = {0, 7, 63, 64, 65, 129, 300};
  for (int o = 0; o < 4; o++)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 7; b++) {
        check_slots(ops[o], ms[a], lens[b], lens[b], 1);
        check_slots(ops[o], ms[a], lens[b] + 5, lens[b], 1);
        check_slots(ops[o], ms[a], 2 * lens[b] + 1, lens[b], 2);
      }
}

/* Order matters and is kept: 1e8 + 1 - 1e8 ... in f32 differs from any
 * pairwise sum; and a NaN accumulator keeps its own payload. */
static void order_and_nan_payload(void **state) {
  (void)state;
  float x[16 * 9];
  for (int q = 0; q < 16; q++) {
    x[q * 9 + 0] = 1e8f;
    for (int i = 1; i < 9; i++)
      x[q * 9 + i] = 1.0f;
  }
  float acc[16];
  for (int q = 0; q < 16; q++)
    acc[q] = 0.0f;
  dev_fold_f32_rows(HLO_OP_ADD, acc, 16, x, 9, 9);
  for (int q = 0; q < 16; q++)
    assert_true(acc[q] == 1e8f); /* each +1 is lost against 1e8 in order */
  acc[3] = bitsf(0x7F812345u);
  x[3 * 9 + 4] = bitsf(0xFFC00000u);
  dev_fold_f32_rows(HLO_OP_ADD, acc, 16, x, 9, 9);
  assert_int_equal(fbits(acc[3]), 0x7FC12345u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(folds_match_sequential),
      cmocka_unit_test(slot_folds_match_sequential),
      cmocka_unit_test(order_and_nan_payload),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
