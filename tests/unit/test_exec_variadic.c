/* test_exec_variadic.c — a variadic reduce (argmax: (value, index) with a
 * lowest-index tie break) on the device's chunked accumulators, against
 * hand-computed indices: the clean result whatever the pack and split, and
 * the symptoms of ragged-chunk-pad and packed-reduce-init0 as dev_defect.h
 * words them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_exec.h"
#include "hlo/hlo_parse.h"

/* jax.numpy.argmax's reducer: NaN wins, then the greater value, then the
 * lower index.  Rows of R x 300, reduced along dim 1. */
static const char *ARGMAX_FMT =
    "HloModule m\n"
    "am {\n"
    "  a = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  b = f32[] parameter(2)\n  bi = s32[] parameter(3)\n"
    "  gt = pred[] compare(a, b), direction=GT\n  nan = pred[] compare(a, a), direction=NE\n"
    "  o1 = pred[] or(gt, nan)\n  eq = pred[] compare(a, b), direction=EQ\n"
    "  lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n  take = pred[] or(o1, tie)\n"
    "  v = f32[] select(take, a, b)\n  i = s32[] select(take, ai, bi)\n"
    "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
    "ENTRY e {\n"
    "  p = f32[%d,300] parameter(0)\n  io = s32[%d,300] iota(), iota_dimension=1\n"
    "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
    "  r = (f32[%d], s32[%d]) reduce(p, io, ninf, zero), dimensions={1}, to_apply=am\n"
    "  ROOT g = s32[%d] get-tuple-element(r), index=1\n}\n";

typedef struct fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
  dev_schedule s;
} fx;

static void load(fx *x, int rows, const char *cfgtext) {
  char text[2048];
  snprintf(text, sizeof text, ARGMAX_FMT, rows, rows, rows, rows, rows);
  hlo_error err;
  x->m = hlo_parse(text, strlen(text), &err);
  if (!x->m)
    fail_msg("parse: %s", err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &x->mach, &err), 0);
  dev_config c;
  if (dev_config_parse(cfgtext, &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  char why[256];
  if (dev_lower(&x->f, &c, &x->mach, &x->s, why, sizeof why) != 0)
    fail_msg("lower: %s", why);
}

/* Runs the argmax of p (rows x 300) under cfg with compiler defects
 * (bit mask, 0: clean) and copies the indices to idx. */
static void argmax(const hlo_value *p, int rows, const char *cfg, uint32_t defects, int32_t *idx) {
  fx x;
  load(&x, rows, cfg);
  dev_compiler cc = {.name = "test", .defects = defects};
  hlo_value *args[1] = {(hlo_value *)p};
  dev_run r;
  dev_exec_run(&x.s, defects ? &cc : NULL, args, 1, 1, NULL, &r);
  if (r.status != DEV_OK)
    fail_msg("%s: %s", cfg, r.message);
  assert_int_equal(r.out->type, HLO_S32);
  memcpy(idx, r.out->data, sizeof *idx * (size_t)rows);
  hlo_value_unref(r.out);
  dev_schedule_free(&x.s);
  hlo_module_free(x.m);
}

static hlo_value *input(int rows) {
  int64_t dims[2] = {rows, 300};
  hlo_value *v = hlo_value_array(HLO_F32, 2, dims);
  assert_non_null(v);
  memset(v->data, 0, sizeof(float) * (size_t)rows * 300);
  return v;
}

/* k = 128 splits each 300-long row into chunks 0..127, 128..255 and the
 * ragged 256..299 (padding 300..383).
 *   row 0: 1 at 5                          -> 5
 *   row 1: 7 at 40                         -> 40
 *   row 2: 3 at 200                        -> 200
 *   row 3: 4 at 10 and at 290 (a tie)      -> 10
 *   row 4: NaN at 100 and at 280           -> 100 (the first NaN)
 *   rows 5, 6: zeros                       -> 0
 *   row 7: -1 everywhere                   -> 0 */
static const int32_t CLEAN[8] = {5, 40, 200, 10, 100, 0, 0, 0};

static hlo_value *eight_rows(void) {
  hlo_value *v = input(8);
  float *d = v->data;
  d[0 * 300 + 5] = 1.0f;
  d[1 * 300 + 40] = 7.0f;
  d[2 * 300 + 200] = 3.0f;
  d[3 * 300 + 10] = 4.0f, d[3 * 300 + 290] = 4.0f;
  d[4 * 300 + 100] = d[4 * 300 + 280] = __builtin_nanf("");
  for (int j = 0; j < 300; j++)
    d[7 * 300 + j] = -1.0f;
  return v;
}

static void clean_whatever_the_config(void **state) {
  (void)state;
  hlo_value *p = eight_rows();
  const char *cfgs[] = {
      "tile=8 k=0 buf=2 order=0 pack=1 prec=default flags=none",
      "tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=none",
      "tile=8 k=128 buf=2 order=0k pack=2 prec=default flags=none",
      "tile=8 k=128 buf=3 order=k0 pack=4 prec=default flags=split-reduction",
      "tile=8 k=256 buf=2 order=0k pack=1 prec=default flags=split-reduction",
  };
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    int32_t got[8];
    argmax(p, 8, cfgs[c], 0, got);
    for (int i = 0; i < 8; i++)
      if (got[i] != CLEAN[i])
        fail_msg("%s: row %d gives %d, want %d", cfgs[c], i, got[i], CLEAN[i]);
  }
  hlo_value_unref(p);
}

/* ragged-chunk-pad, k = 128: after its real elements 256..299, row r folds
 * the 84 padding lanes, which hold the next row's elements 0..83 (row 7:
 * the array's start, row 0) paired with the iota the lanes compute, their
 * positions 0..83 in the chunk's padding (as for any fused op feeding a
 * single-operand reduce).  Row 0 meets row 1's 7 at 40 and becomes 40;
 * row 2 meets row 3's 4 > 3 at 10: 10; row 3 meets row 4's lanes 0..83,
 * zeros (its NaNs lie at 100 and 280): stays 10; row 4 holds a NaN, which
 * wins over anything: stays 100; row 6 meets row 7's -1s: stays 0; row 7
 * meets row 0's 1 at 5: 5.  Ties keep the lower index. */
static void ragged_chunk_pad_reads_the_next_row(void **state) {
  (void)state;
  hlo_value *p = eight_rows();
  const int32_t want[8] = {40, 40, 10, 10, 100, 0, 0, 5};
  int32_t got[8];
  argmax(p, 8, "tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=none", 1u << DEV_DEFECT_RAGGED_CHUNK_PAD,
         got);
  for (int i = 0; i < 8; i++)
    if (got[i] != want[i])
      fail_msg("row %d gives %d, want %d", i, got[i], want[i]);
  /* k = 0: the whole row in one chunk, nothing ragged: the clean result */
  argmax(p, 8, "tile=8 k=0 buf=2 order=0 pack=1 prec=default flags=none", 1u << DEV_DEFECT_RAGGED_CHUNK_PAD, got);
  for (int i = 0; i < 8; i++)
    assert_int_equal(got[i], CLEAN[i]);
  hlo_value_unref(p);
}

/* packed-reduce-init0 over 256 rows, tile 128 (two windows), pack 2: slot 1
 * of an element takes the odd positions.  Row 0's slot 1 ends window 0 as
 * (9, 3); in window 1, row 128's slot 1 is not re-initialised and starts
 * from it, so row 128 (zeros: clean 0) gives 3.  Every other row of window
 * 0 leaves (0, 1) in slot 1, which ties with slot 0's (0, 0) and loses. */
static void packed_reduce_init0_keeps_both_values(void **state) {
  (void)state;
  hlo_value *p = input(256);
  ((float *)p->data)[3] = 9.0f;
  const char *cfg = "tile=128 k=128 buf=2 order=0k pack=2 prec=default flags=none";
  int32_t *got = malloc(sizeof *got * 256);
  assert_non_null(got);
  argmax(p, 256, cfg, 0, got);
  for (int i = 0; i < 256; i++)
    assert_int_equal(got[i], i == 0 ? 3 : 0);
  argmax(p, 256, cfg, 1u << DEV_DEFECT_PACKED_REDUCE_INIT0, got);
  for (int i = 0; i < 256; i++)
    if (got[i] != (i == 0 || i == 128 ? 3 : 0))
      fail_msg("row %d gives %d", i, got[i]);
  free(got);
  hlo_value_unref(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(clean_whatever_the_config),
      cmocka_unit_test(ragged_chunk_pad_reads_the_next_row),
      cmocka_unit_test(packed_reduce_init0_keeps_both_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
