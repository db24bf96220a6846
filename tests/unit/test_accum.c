/* test_accum.c — check/accum.h: the per-element sums of absolute terms the
 * probe records for every accumulation, and the allowance it derives for
 * an output computed from one.  Expected values are worked by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check/accum.h"
#include "eval_fixture.h"
#include "check/eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_numerics.h"
#include "hlo/hlo_parse.h"
#include "check/tolerance.h"

static const char *MODULE =
    "HloModule t\n"
    "add {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "max {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] maximum(a, b)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[2,3] parameter(0)\n"
    "  l = f32[2,2] parameter(1)\n"
    "  r = f32[2,1] parameter(2)\n"
    "  init = f32[] constant(0.5)\n"
    "  s = f32[2] reduce(x, init), dimensions={1}, to_apply=add\n"
    "  m = f32[2] reduce(x, init), dimensions={1}, to_apply=max\n"
    "  two = f32[2] constant({2, 2})\n"
    "  half = f32[2] divide(s, two)\n"
    "  d = f32[2,1] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT t = (f32[2], f32[2], f32[2,1]) tuple(half, m, d)\n"
    "}\n";

typedef struct {
  const hlo_module *m;
  hlo_value *args[3];
} ctx;

static int eval_cb(void *c_, chk_eval_hook *hook, void *hook_ctx, hlo_value **out, hlo_error *err) {
  ctx *c = c_;
  chk_eval_opts o = {.replicas = 1, .hook = hook, .hook_ctx = hook_ctx};
  return chk_eval_module(c->m, 3, c->args, &o, out, err);
}

static void setup_ctx(ctx *c) {
  c->args[0] = fx_array(HLO_F32, 2, DIMS(2, 3), VALS(1, -2, 3, -4, 5, -6));
  c->args[1] = fx_array(HLO_F32, 2, DIMS(2, 2), VALS(1, -2, 3, 4));
  c->args[2] = fx_array(HLO_F32, 2, DIMS(2, 1), VALS(-1, 2));
}

static void abs_sums_and_allowance(void **state) {
  (void)state;
  hlo_error err = {0};
  hlo_module *m = hlo_parse(MODULE, strlen(MODULE), &err);
  assert_non_null(m);
  ctx c = {.m = m};
  setup_ctx(&c);
  chk_accums A;
  memset(&A, 0, sizeof A);
  A.kernel = m->entry;
  hlo_value *ref = NULL;
  assert_int_equal(eval_cb(&c, chk_accums_probe, &A, &ref, &err), 0);
  /* The add-reduce and the dot are accumulations; the max-reduce rounds
   * nothing and is not one. */
  assert_int_equal(A.n, 2);
  assert_false(A.failed);
  const chk_accum *s = A.a[0].is_dot ? &A.a[1] : &A.a[0], *d = A.a[0].is_dot ? &A.a[0] : &A.a[1];
  assert_string_equal(s->ins->name, "s");
  assert_int_equal(s->k, 3);
  /* |0.5| + |1| + |-2| + |3| and |0.5| + |-4| + |5| + |-6| */
  assert_true(s->abs_sum[0] == 6.5);
  assert_true(s->abs_sum[1] == 15.5);
  assert_null(s->round);
  /* |1 * -1| + |-2 * 2| and |3 * -1| + |4 * 2|, widened by 1 + 2^-6 */
  assert_int_equal(d->k, 2);
  assert_true(d->abs_sum[0] == 5.0 * (1 + ldexp(1, -6)));
  assert_true(d->abs_sum[1] == 11.0 * (1 + ldexp(1, -6)));

  /* Measured with g_max = 1e-3: s moves by +-2e-3 S_e, so half = s / 2 by
   * 1e-3 S_e, and a comparison with G = 5e-4 is allowed 2 * dy * G / h =
   * 2 * 1e-3 S_e * 0.5 = 1e-3 S_e: 6.5e-3 and 15.5e-3. */
  double gmax[2] = {1e-3, 1e-3};
  assert_int_equal(chk_accums_measure(&A, ref, gmax, eval_cb, &c, &err), 0);
  double g[2] = {5e-4, 5e-4};
  double *map = NULL;
  assert_int_equal(chk_accums_leaf_map(&A, 0, 2, g, &map), 0);
  assert_non_null(map);
  assert_true(fabs(map[0] - 6.5e-3) <= 1e-6);
  assert_true(fabs(map[1] - 15.5e-3) <= 1e-6);
  free(map);
  /* The max-reduce's leaf moves with nothing: no allowance. */
  double *none = (double *)&A;
  assert_int_equal(chk_accums_leaf_map(&A, 1, 2, g, &none), 0);
  assert_null(none);
  /* The dot's leaf is the dot itself: 2 * (2 * 1e-3 S_e) * 0.5. */
  assert_int_equal(chk_accums_leaf_map(&A, 2, 2, g, &map), 0);
  assert_non_null(map);
  assert_true(fabs(map[0] - 2e-3 * 5.0 * (1 + ldexp(1, -6))) <= 1e-6);
  assert_true(fabs(map[1] - 2e-3 * 11.0 * (1 + ldexp(1, -6))) <= 1e-6);
  free(map);
  chk_accums_free(&A);
  hlo_value_unref(ref);
  for (int i = 0; i < 3; i++)
    hlo_value_unref(c.args[i]);
  hlo_module_free(m);
}

/* A bf16 result of a dot accumulates in f32 and rounds once: the record
 * says f32, and carries the final rounding R_e = 2 u_bf16 |v_e|. */
static void bf16_dot_accumulates_in_f32(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  l = bf16[1,4] parameter(0)\n"
                            "  r = bf16[4,1] parameter(1)\n"
                            "  ROOT d = bf16[1,1] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  hlo_value *args[2] = {fx_array(HLO_BF16, 2, DIMS(1, 4), VALS(1, 2, 3, 4)),
                        fx_array(HLO_BF16, 2, DIMS(4, 1), VALS(1, -1, 1, -1))};
  chk_accums A;
  memset(&A, 0, sizeof A);
  A.kernel = m->entry;
  chk_eval_opts o = {.replicas = 1, .hook = chk_accums_probe, .hook_ctx = &A};
  hlo_value *out = NULL;
  assert_int_equal(chk_eval_module(m, 2, args, &o, &out, &err), 0);
  assert_int_equal(A.n, 1);
  assert_int_equal(A.a[0].acc_type, HLO_F32);
  assert_non_null(A.a[0].round);
  /* 1 - 2 + 3 - 4 = -2: R = 2 * 2^-8 * 2 */
  assert_true(A.a[0].round[0] == ldexp(1, -6));
  assert_true(A.a[0].abs_sum[0] == 10.0 * (1 + ldexp(1, -6)));
  chk_accums_free(&A);
  hlo_value_unref(out);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

/* How many of eval_counted's evaluations were replays (replay.h). */
static int replays, evaluations;

static int eval_counted(void *c, chk_eval_hook *hook, void *hook_ctx, hlo_value **out, hlo_error *err) {
  evaluations++;
  replays += hook == chk_replay_hook;
  return eval_cb(c, hook, hook_ctx, out, err);
}

/* Probes and measures MODULE; replay false turns the replays off, as
 * when the probe's recording cannot be used. */
static void measure(ctx *c, bool replay, chk_accums *A) {
  hlo_error err = {0};
  memset(A, 0, sizeof *A);
  A->kernel = c->m->entry;
  if (!replay)
    A->replay.off = true;
  hlo_value *ref = NULL;
  assert_int_equal(eval_cb(c, chk_accums_probe, A, &ref, &err), 0);
  assert_int_equal(A->n, 2);
  double gmax[2] = {1e-3, 1e-3};
  replays = evaluations = 0;
  assert_int_equal(chk_accums_measure(A, ref, gmax, eval_counted, c, &err), 0);
  hlo_value_unref(ref);
}

/* The measurement re-evaluates only what each shifted accumulation
 * reaches (the reduce's divide, the dot's tuple), and what it measures is
 * what shifting it in a full evaluation measures, bit for bit. */
static void measure_replays_match_full(void **state) {
  (void)state;
  hlo_error err = {0};
  hlo_module *m = hlo_parse(MODULE, strlen(MODULE), &err);
  assert_non_null(m);
  ctx c = {.m = m};
  setup_ctx(&c);
  chk_accums fast, full;
  /* two accumulations, each shifted up and down, fully and by a sixteenth */
  measure(&c, true, &fast);
  assert_int_equal(evaluations, 8);
  assert_int_equal(replays, 8);
  measure(&c, false, &full);
  assert_int_equal(evaluations, 8);
  assert_int_equal(replays, 0);
  assert_int_equal(fast.nleaves, 3);
  assert_int_equal(full.nleaves, 3);
  int moving = 0;
  for (int j = 0; j < 2; j++) {
    assert_ptr_equal(fast.a[j].ins, full.a[j].ins);
    for (int leaf = 0; leaf < 3; leaf++) {
      assert_true((fast.a[j].dy[leaf] == NULL) == (full.a[j].dy[leaf] == NULL));
      if (fast.a[j].dy[leaf]) {
        assert_memory_equal(fast.a[j].dy[leaf], full.a[j].dy[leaf], 2 * sizeof(double));
        moving++;
      }
    }
  }
  assert_int_equal(moving, 2); /* s moves leaf 0 (half), d leaf 2 */
  chk_accums_free(&fast);
  chk_accums_free(&full);
  for (int i = 0; i < 3; i++)
    hlo_value_unref(c.args[i]);
  hlo_module_free(m);
}

/* What the probe reads of each instruction (chk_accums_probe_reads), by
 * hand from replay.h's plan for a change of the one accumulation d: the
 * replays evaluate what d reaches (s, r) and read from the recording d
 * and the operands of those that d does not reach (t, m); the root is
 * evaluated.  The probe reads d's operands and value; nothing of the
 * parameters or of s and r. */
static void probe_reads_by_hand(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  a = f32[2,3] parameter(0)\n"
                            "  b = f32[3,2] parameter(1)\n"
                            "  c = f32[2,2] parameter(2)\n"
                            "  d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                            "  t = f32[2,2] tanh(c)\n"
                            "  s = f32[2,2] add(d, t)\n"
                            "  m = f32[2,2] multiply(c, c)\n"
                            "  ROOT r = f32[2,2] subtract(s, m)\n"
                            "}\n";
  static const unsigned char want[8] = {0, 0, 0, CHK_PROBE_READS_ALL, CHK_PROBE_READS_VALUE, 0, CHK_PROBE_READS_VALUE, 0};
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  assert_int_equal(m->entry->ninstrs, 8);
  unsigned char *reads = chk_accums_probe_reads(m->entry);
  assert_non_null(reads);
  for (int i = 0; i < 8; i++)
    if (reads[i] != want[i])
      fail_msg("%s: reads %d, expected %d", m->entry->instrs[i]->name, reads[i], want[i]);
  free(reads);
  hlo_module_free(m);
}

/* The instruction named `name` of m's entry. */
static const hlo_instr *instr_named(const hlo_module *m, const char *name) {
  for (int i = 0; i < m->entry->ninstrs; i++)
    if (strcmp(m->entry->instrs[i]->name, name) == 0)
      return m->entry->instrs[i];
  return NULL;
}

/* One element, 16 products (the lhs times ones): the sums of 2, 4 and 8
 * interleaved f32 lanes, worked exactly by tests/unit/accum_lanes.py
 * ("case1"), all differ from one another and from the sequential sum; the
 * script also shows that lanes of consecutive blocks (k / (K / P)), lanes
 * shifted by one ((k + 1) % P) or lanes combined last to first give other
 * values for P = 4 and 8.  Every value is exact in bf16, so the DEFAULT
 * precision's pass changes nothing. */
static const double CASE1[16] = {3, 16777216, -16777216, 1, -16777216, 5, -8388608, 5,
                                 1, 16777216, 1, 2, 16777216, -3, -1, 5};

static void dot_lane_sums_by_hand(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  l = f32[1,16] parameter(0)\n"
                            "  r = f32[16,1] parameter(1)\n"
                            "  ROOT d = f32[1,1] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  double ones[16];
  for (int i = 0; i < 16; i++)
    ones[i] = 1;
  hlo_value *args[2] = {fx_array(HLO_F32, 2, DIMS(1, 16), CASE1), fx_array(HLO_F32, 2, DIMS(16, 1), ones)};
  double exact = 0;
  float sums[3] = {0, 0, 0};
  assert_int_equal(chk_accums_dot_sums(instr_named(m, "d"), args, &exact, sums, NULL, &err), 0);
  assert_true(exact == 8388627.0);
  assert_true(sums[0] == 8388620.0f); /* P = 2 */
  assert_true(sums[1] == 8388625.0f); /* P = 4 */
  assert_true(sums[2] == 8388627.0f); /* P = 8 */

  /* The probe's rho is the largest distance of the sequential sum
   * (8388628, the script's) and the three lane sums from the exact one,
   * over g S: |8388620 - 8388627| = 7, S = 92274715 (1 + 2^-6). */
  chk_accums A;
  memset(&A, 0, sizeof A);
  A.kernel = m->entry;
  chk_eval_opts o = {.replicas = 1, .hook = chk_accums_probe, .hook_ctx = &A};
  hlo_value *out = NULL;
  assert_int_equal(chk_eval_module(m, 2, args, &o, &out, &err), 0);
  assert_true(hlo_value_get_f64(out, 0) == 8388628.0);
  assert_int_equal(A.n, 1);
  double S = 0;
  for (int i = 0; i < 16; i++)
    S += fabs(CASE1[i]);
  assert_true(S == 92274715.0);
  S *= 1 + ldexp(1, -6);
  double g = chk_tol_coef(CHK_TOL_NOISE_FLOOR, chk_unit_roundoff(HLO_F32), 16, 0, 0, 0, 0);
  assert_true(A.a[0].noise == 7.0 / (g * S));
  chk_accums_free(&A);
  hlo_value_unref(out);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

/* A batch dimension, and two contracting dimensions listed out of their
 * order (lhs {3,1}: k = i3 * 3 + i1, not i1 * 4 + i3).  Operands and
 * results from tests/unit/accum_lanes.py ("case2"), which also shows
 * that the ascending-dims order would give other sums. */
static void dot_lane_sums_two_contracting_dims(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  l = f32[2,3,2,4] parameter(0)\n"
                            "  r = f32[2,4,3,2] parameter(1)\n"
                            "  ROOT d = f32[2,2,2] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0},"
                            " lhs_contracting_dims={3,1}, rhs_contracting_dims={1,2}\n"
                            "}\n";
  static const double lhs[48] = {
      16777216, 2, 3, 4, 5, 8388608, 7, 1, 2, 3, -16777216, 5, 6, 7, 1, 16777216, 3, 4, 5, 6, 8388608, 1, 2, 3,
      4, -16777216, 6, 7, 1, 2, 16777216, 4, 5, 6, 7, 8388608, 2, 3, 4, 5, -16777216, 7, 1, 2, 3, 16777216, 5, 6};
  static const double rhs[48] = {2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1,
                                 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1};
  static const double exact[8] = {16777262, -16777169, 41943086, 50331695, -41942978, -16777153, 50331690, 33554481};
  static const float lanes[8][3] = {
      {16777264, 16777266, 16777264}, {-16777170, -16777168, -16777172}, {41943084, 41943088, 41943088},
      {50331696, 50331696, 50331696}, {-41942976, -41942976, -41942972}, {-16777153, -16777153, -16777153},
      {50331688, 50331688, 50331692}, {33554480, 33554480, 33554480}};
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  hlo_value *args[2] = {fx_array(HLO_F32, 4, DIMS(2, 3, 2, 4), lhs), fx_array(HLO_F32, 4, DIMS(2, 4, 3, 2), rhs)};
  double x[8];
  float s[24];
  assert_int_equal(chk_accums_dot_sums(instr_named(m, "d"), args, x, s, NULL, &err), 0);
  for (int e = 0; e < 8; e++) {
    assert_true(x[e] == exact[e]);
    for (int i = 0; i < 3; i++)
      assert_true(s[3 * e + i] == lanes[e][i]);
  }
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

/* The f64 sum of the products is one rounded add per product, k
 * ascending from 0, whatever the operands.  The walk fuses each multiply
 * with its add only where every product is exact; an f64 operand at
 * HIGHEST keeps values that are not f32 values, and here a fused
 * multiply-add would round otherwise.  By hand: the first product is
 * 2^53 + 2; the second, (1 + 2^-30)(1 - 2^-30) = 1 - 2^-60, rounds to 1
 * (2^-60 is below half an ulp of 1 - 2^-53), and (2^53 + 2) + 1 lies
 * halfway between 2^53 + 2 and 2^53 + 4 (the ulp is 2 there): ties to
 * even give 2^53 + 4.  Rounded once, 2^53 + 3 - 2^-60 would give
 * 2^53 + 2.  The padded k (the operands are padded to 8 terms) add +0.
 * S_e: |.| of the same terms, 2^53 + 4 again, times 1 + 2^-6. */
static void dot_f64_sum_rounds_each_add(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  l = f64[1,2] parameter(0)\n"
                            "  r = f64[2,1] parameter(1)\n"
                            "  ROOT d = f64[1,1] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0},"
                            " operand_precision={highest,highest}\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  const double two53 = 9007199254740992.0;
  const double lhs[2] = {two53 + 2, 1 + ldexp(1, -30)}, rhs[2] = {1, 1 - ldexp(1, -30)};
  hlo_value *args[2] = {fx_array(HLO_F64, 2, DIMS(1, 2), lhs), fx_array(HLO_F64, 2, DIMS(2, 1), rhs)};
  double exact = 0, abs_sum = 0;
  float sums[3];
  assert_int_equal(chk_accums_dot_sums(instr_named(m, "d"), args, &exact, sums, &abs_sum, &err), 0);
  assert_true(exact == two53 + 4);
  assert_true(abs_sum == (two53 + 4) * (1 + ldexp(1, -6)));
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

/* The same sums by the reference evaluator's own dot, the route the
 * measurement took before it walked each element once: lane p of P is the
 * emulating reference's dot of the lhs with every element whose
 * contraction index is not p mod P zeroed, the lanes added in order, and
 * the f64 sum is the f64 dot of the operands as the device multiplies
 * them (accum.h).  S_e is the f64 dot of |lhs| and |rhs| widened by
 * 1 + 2^-6 (accum.h).  exact, sums and abs_sum as chk_accums_dot_sums
 * gives them. */
static void reference_route(const hlo_instr *ins, hlo_value *const *ops, double *exact, float *sums, double *abs_sum,
                            int64_t n) {
  hlo_error err = {0};
  chk_eval ev;
  memset(&ev, 0, sizeof ev);
  ev.o.replicas = 1;
  ev.err = &err;
  bool bf16_pass = hlo_num_dot_precision(ins, HLO_NUM_PREC_DEFAULT) == HLO_NUM_PREC_DEFAULT;
  hlo_value *w[2];
  for (int s = 0; s < 2; s++) {
    w[s] = hlo_value_array_uninit(HLO_F64, ops[s]->rank, ops[s]->dims);
    assert_non_null(w[s]);
    for (int64_t i = 0; i < ops[s]->count; i++) {
      double x = hlo_value_get_f64(ops[s], i);
      if (bf16_pass) {
        float f = hlo_num_ftz_f32((float)x);
        x = isfinite(f) ? hlo_bf16_to_f32(hlo_f32_to_bf16(f)) : f;
      }
      hlo_value_set_f64(w[s], i, x);
    }
  }
  hlo_instr wide = *ins;
  wide.shape.type = HLO_F64;
  hlo_value *r = chk_op_dot(&ev, &wide, w);
  assert_non_null(r);
  for (int64_t e = 0; e < n; e++)
    exact[e] = ((const double *)r->data)[e];
  hlo_value_unref(r);
  for (int s = 0; s < 2; s++)
    for (int64_t i = 0; i < ops[s]->count; i++)
      hlo_value_set_f64(w[s], i, fabs(hlo_value_get_f64(ops[s], i)));
  r = chk_op_dot(&ev, &wide, w);
  assert_non_null(r);
  for (int64_t e = 0; e < n; e++)
    abs_sum[e] = ((const double *)r->data)[e] * (1.0 + 1.0 / 64);
  hlo_value_unref(r);
  hlo_value_unref(w[0]);
  hlo_value_unref(w[1]);

  ev.o.emulate_device = 1;
  const hlo_value *x = ops[0];
  const hlo_ints *cd = &ins->attrs.dot.lhs_contracting;
  for (int i = 0, P = 2; P <= 8; i++, P *= 2) {
    for (int64_t e = 0; e < n; e++)
      sums[3 * e + i] = 0;
    for (int p = 0; p < P; p++) {
      hlo_value *z = hlo_value_clone(x);
      assert_non_null(z);
      int64_t idx[HLO_MAX_RANK] = {0};
      for (int64_t j = 0; j < x->count; j++) {
        int64_t k = 0;
        for (int c = 0; c < cd->n; c++)
          k = k * x->dims[cd->v[c]] + idx[cd->v[c]];
        if (k % P != p)
          hlo_value_set_f64(z, j, 0.0);
        for (int d = x->rank - 1; d >= 0; d--) {
          if (++idx[d] < x->dims[d])
            break;
          idx[d] = 0;
        }
      }
      hlo_value *zy[2] = {z, ops[1]};
      hlo_value *lane = chk_op_dot(&ev, ins, zy);
      assert_non_null(lane);
      for (int64_t e = 0; e < n; e++)
        sums[3 * e + i] += ((const float *)lane->data)[e];
      hlo_value_unref(lane);
      hlo_value_unref(z);
    }
  }
}

/* Equal as the noise measurement reads them: the same number, or both
 * not finite (an Inf or NaN element is not compared; a zero's sign and a
 * NaN's payload may differ between the routes). */
static bool same_sum(double a, double b) { return isfinite(a) || isfinite(b) ? a == b : true; }

/* Values of every scale: wide exponents (products that overflow or flush
 * to zero included), subnormals, zeros of both signs, and values that are
 * not exact in bf16, so the HIGH and HIGHEST passes differ from DEFAULT. */
static double random_value(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  uint64_t r = *state;
  double mant = 1.0 + (double)(r >> 40) / (double)(1ull << 24);
  int kind = (int)(r % 16);
  double sign = (r >> 8) & 1 ? -1.0 : 1.0;
  if (kind == 0)
    return sign * 0.0;
  if (kind == 1)
    return sign * ldexp(mant, -130); /* subnormal in f32 */
  if (kind == 2)
    return sign * ldexp(mant, (int)((r >> 16) % 60) - 70); /* products near the flush */
  if (kind == 3)
    return sign * ldexp(mant, (int)((r >> 16) % 40) + 50); /* products near overflow */
  return sign * ldexp(mant, (int)((r >> 16) % 20) - 10);
}

/* Operand scales of compare_routes. */
enum { ANY_SCALE, TINY, MODERATE };

/* The two operands of compare_routes' dot, of type t, seeded: values of
 * every scale (random_value), or TINY / MODERATE ones as it describes;
 * with poison one lhs element is Inf and one rhs element NaN. */
static void dot_operands(hlo_etype t, int lrank, const int64_t *ldims, int rrank, const int64_t *rdims, bool poison,
                         int scale, uint64_t seed, hlo_value **args) {
  const int64_t *dims[2] = {ldims, rdims};
  int ranks[2] = {lrank, rrank};
  uint64_t state = seed;
  for (int s = 0; s < 2; s++) {
    int64_t count = 1;
    for (int i = 0; i < ranks[s]; i++)
      count *= dims[s][i];
    double *v = malloc(sizeof *v * (size_t)count);
    assert_non_null(v);
    for (int64_t i = 0; i < count; i++) {
      v[i] = random_value(&state);
      if (scale == TINY)
        v[i] = ldexp(v[i] < 0 ? -1.0 : 1.0, s == 0 ? -63 : -64) * (1 + fabs(frexp(v[i], &(int){0})));
      if (scale == MODERATE) {
        int e;
        double f = frexp(v[i], &e);
        v[i] = f == 0 || !isfinite(f) ? 0.75 : ldexp(f, e % 10);
      }
    }
    if (poison)
      v[count / 3] = s == 0 ? INFINITY : NAN;
    args[s] = fx_array(t, ranks[s], dims[s], v);
    free(v);
  }
}

/* One dot (HLO text whose ROOT `d` dots parameters l and r) against
 * reference_route, bit for bit, on seeded operands of type t; with
 * `poison` one lhs element is Inf and one rhs element NaN.  scale TINY:
 * every product is near the smallest normal f32, 2^-126 (between 2^-127
 * and 2^-124), so that products and running sums keep falling below it
 * and are flushed.  MODERATE: every operand is 0.75 or between 2^-10 and
 * 2^10 in magnitude, so no product or sum can be subnormal and the walk
 * leaves its flushes out (dot_terms.no_flush). */
static void compare_routes(const char *text, hlo_etype t, int lrank, const int64_t *ldims, int rrank,
                           const int64_t *rdims, bool poison, int scale, uint64_t seed) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  const hlo_instr *d = instr_named(m, "d");
  assert_non_null(d);
  hlo_value *args[2];
  dot_operands(t, lrank, ldims, rrank, rdims, poison, scale, seed, args);
  int64_t n = 1;
  for (int i = 0; i < d->shape.rank; i++)
    n *= d->shape.dims[i];
  double *x = malloc(sizeof *x * (size_t)n), *rx = malloc(sizeof *rx * (size_t)n);
  double *ab = malloc(sizeof *ab * (size_t)n), *rab = malloc(sizeof *rab * (size_t)n);
  float *s = malloc(sizeof *s * 3 * (size_t)n), *rs = malloc(sizeof *rs * 3 * (size_t)n);
  assert_true(x && rx && ab && rab && s && rs);
  assert_int_equal(chk_accums_dot_sums(d, args, x, s, ab, &err), 0);
  reference_route(d, args, rx, rs, rab, n);
  int finite = 0;
  for (int64_t e = 0; e < n; e++) {
    assert_true(same_sum(x[e], rx[e]));
    /* S_e is stored: the same bits (a NaN's payload aside) */
    assert_true(isnan(rab[e]) ? isnan(ab[e]) : memcmp(&ab[e], &rab[e], sizeof ab[e]) == 0);
    for (int i = 0; i < 3; i++) {
      assert_true(same_sum(s[3 * e + i], rs[3 * e + i]));
      finite += isfinite(s[3 * e + i]);
    }
  }
  assert_true(finite > 0); /* the comparison compared something */
  free(x);
  free(rx);
  free(ab);
  free(rab);
  free(s);
  free(rs);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

#define DOT_TEXT(L, R, D) "HloModule t\nENTRY e {\n  l = " L " parameter(0)\n  r = " R " parameter(1)\n  ROOT d = " D "\n}\n"

/* Every dot form the measurement meets gives the reference route's sums:
 * each precision, bf16 operands, batch dims, contracting dims out of order
 * on both sides, a transposed rhs, and Inf and NaN operands. */
static void dot_lane_sums_match_reference_route(void **state) {
  (void)state;
  static const char *plain[3] = {
      DOT_TEXT("f32[7,45]", "f32[45,21]",
               "f32[7,21] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
      DOT_TEXT("f32[7,45]", "f32[45,21]",
               "f32[7,21] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0},"
               " operand_precision={high,default}"),
      DOT_TEXT("f32[7,45]", "f32[45,21]",
               "f32[7,21] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0},"
               " operand_precision={highest,highest}"),
  };
  for (int i = 0; i < 3; i++) {
    for (int poison = 0; poison < 2; poison++)
      compare_routes(plain[i], HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), poison, ANY_SCALE, 1000 + (uint64_t)i);
    compare_routes(plain[i], HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), false, TINY, 2000 + (uint64_t)i);
    for (int poison = 0; poison < 2; poison++)
      compare_routes(plain[i], HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), poison, MODERATE, 3000 + (uint64_t)i);
  }
  /* More than one block of columns (ROW_BLOCK), a transposed rhs. */
  compare_routes(DOT_TEXT("f32[3,20]", "f32[300,20]",
                          "f32[3,300] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
                 HLO_F32, 2, DIMS(3, 20), 2, DIMS(300, 20), false, ANY_SCALE, 7);
  compare_routes(DOT_TEXT("bf16[2,3,24]", "bf16[2,24,5]",
                          "f32[2,3,5] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0},"
                          " lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
                 HLO_BF16, 3, DIMS(2, 3, 24), 3, DIMS(2, 24, 5), false, ANY_SCALE, 11);
  for (int poison = 0; poison < 2; poison++)
    compare_routes(DOT_TEXT("f32[5,6,3]", "f32[3,7,5]",
                            "f32[6,7] dot(l, r), lhs_contracting_dims={2,0}, rhs_contracting_dims={0,2},"
                            " operand_precision={highest,highest}"),
                   HLO_F32, 3, DIMS(5, 6, 3), 3, DIMS(3, 7, 5), poison, ANY_SCALE, 13);
  compare_routes(DOT_TEXT("f32[2,5,4,3]", "f32[3,2,4,6]",
                          "f32[2,5,6] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={1},"
                          " lhs_contracting_dims={3,2}, rhs_contracting_dims={0,2}"),
                 HLO_F32, 4, DIMS(2, 5, 4, 3), 4, DIMS(3, 2, 4, 6), false, ANY_SCALE, 17);
}

/* chk_accums_dot_eval on one dot (HLO text as compare_routes'): when it
 * evaluates it (want 1), its value is the evaluator's with emulate_device,
 * bit for bit, and its S_e and rho are those the probe measures of that
 * evaluation; when it must not (want 0: a NaN part, a flush where products
 * are padded, a result other than f32), it leaves the dot to the
 * evaluator.  Operands as compare_routes makes them. */
static void dot_eval_case(const char *text, hlo_etype t, int lrank, const int64_t *ldims, int rrank,
                          const int64_t *rdims, bool poison, int scale, uint64_t seed, int want) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  const hlo_instr *d = instr_named(m, "d");
  assert_non_null(d);
  hlo_value *args[2];
  dot_operands(t, lrank, ldims, rrank, rdims, poison, scale, seed, args);
  chk_accums A;
  memset(&A, 0, sizeof A);
  A.kernel = m->entry;
  hlo_value *ref = NULL;
  chk_eval_opts o = {.replicas = 1, .emulate_device = 1, .hook = chk_accums_probe, .hook_ctx = &A};
  assert_int_equal(chk_eval_module(m, 2, args, &o, &ref, &err), 0);
  hlo_value *v = NULL;
  chk_dot_walk w;
  int rc = chk_accums_dot_eval(d, args, 2, &v, &w);
  assert_int_equal(rc, want);
  if (rc == 1) {
    assert_non_null(v);
    assert_true(hlo_value_matches(v, &d->shape));
    assert_int_equal(v->count, ref->count);
    assert_memory_equal(v->data, ref->data, sizeof(float) * (size_t)ref->count);
    assert_int_equal(A.n, 1);
    assert_int_equal(w.n, ref->count);
    assert_memory_equal(w.abs_sum, A.a[0].abs_sum, sizeof(double) * (size_t)w.n);
    assert_true(w.rho == A.a[0].noise);
    /* the probe shown the walk measures what it measured by itself */
    chk_accums B;
    memset(&B, 0, sizeof B);
    B.kernel = m->entry;
    hlo_value *bv = hlo_value_ref(v);
    chk_accums_probe_walked(&B, d, args, 2, &bv, &w);
    assert_int_equal(B.n, 1);
    assert_memory_equal(B.a[0].abs_sum, A.a[0].abs_sum, sizeof(double) * (size_t)w.n);
    assert_true(B.a[0].noise == A.a[0].noise);
    hlo_value_unref(bv);
    chk_accums_free(&B);
  } else {
    assert_null(v);
    assert_null(w.abs_sum);
  }
  chk_dot_walk_free(&w);
  hlo_value_unref(v);
  chk_accums_free(&A);
  hlo_value_unref(ref);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

/* Where chk_accums_dot_eval evaluates a dot and where it leaves it to the
 * evaluator, over the forms of dot_lane_sums_match_reference_route.  By
 * hand: K = 45 is padded to 48, so operands whose products or sums may be
 * flushed (random_value's scales, TINY) are left to the evaluator (a sum
 * flushed to -0 would become +0 after the padding); MODERATE operands
 * cannot flush and are evaluated; K = 48 pads nothing and is evaluated at
 * every scale; a NaN operand is always left (its payload is the scalar
 * loop's); a bf16 result is not an f32 walk. */
static void dot_eval_matches_evaluator(void **state) {
  (void)state;
  static const char *prec[3] = {"", ", operand_precision={high,default}", ", operand_precision={highest,highest}"};
  for (int i = 0; i < 3; i++) {
    char k45[512], k48[512];
    snprintf(k45, sizeof k45,
             DOT_TEXT("f32[7,45]", "f32[45,21]", "f32[7,21] dot(l, r), lhs_contracting_dims={1}, "
                                                 "rhs_contracting_dims={0}%s"),
             prec[i]);
    snprintf(k48, sizeof k48,
             DOT_TEXT("f32[7,48]", "f32[48,21]", "f32[7,21] dot(l, r), lhs_contracting_dims={1}, "
                                                 "rhs_contracting_dims={0}%s"),
             prec[i]);
    dot_eval_case(k45, HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), false, ANY_SCALE, 100 + (uint64_t)i, 0);
    dot_eval_case(k45, HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), false, TINY, 200 + (uint64_t)i, 0);
    dot_eval_case(k45, HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), false, MODERATE, 300 + (uint64_t)i, 1);
    dot_eval_case(k45, HLO_F32, 2, DIMS(7, 45), 2, DIMS(45, 21), true, MODERATE, 400 + (uint64_t)i, 0);
    dot_eval_case(k48, HLO_F32, 2, DIMS(7, 48), 2, DIMS(48, 21), false, ANY_SCALE, 500 + (uint64_t)i, 1);
    dot_eval_case(k48, HLO_F32, 2, DIMS(7, 48), 2, DIMS(48, 21), false, TINY, 600 + (uint64_t)i, 1);
  }
  /* a transposed rhs over more than one block of columns */
  dot_eval_case(DOT_TEXT("f32[3,20]", "f32[300,20]",
                         "f32[3,300] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
                HLO_F32, 2, DIMS(3, 20), 2, DIMS(300, 20), false, MODERATE, 7, 1);
  /* bf16 operands and a batch dim */
  dot_eval_case(DOT_TEXT("bf16[2,3,24]", "bf16[2,24,5]",
                         "f32[2,3,5] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0},"
                         " lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
                HLO_BF16, 3, DIMS(2, 3, 24), 3, DIMS(2, 24, 5), false, ANY_SCALE, 11, 1);
  /* two contracting dims out of order on both sides (K = 15 padded) */
  dot_eval_case(DOT_TEXT("f32[5,6,3]", "f32[3,7,5]",
                         "f32[6,7] dot(l, r), lhs_contracting_dims={2,0}, rhs_contracting_dims={0,2},"
                         " operand_precision={highest,highest}"),
                HLO_F32, 3, DIMS(5, 6, 3), 3, DIMS(3, 7, 5), false, MODERATE, 13, 1);
  dot_eval_case(DOT_TEXT("f32[2,5,4,2]", "f32[2,2,4,6]",
                         "f32[2,5,6] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={1},"
                         " lhs_contracting_dims={3,2}, rhs_contracting_dims={0,2}"),
                HLO_F32, 4, DIMS(2, 5, 4, 2), 4, DIMS(2, 2, 4, 6), false, ANY_SCALE, 17, 1);
  /* a bf16 result */
  dot_eval_case(DOT_TEXT("f32[4,16]", "f32[16,8]",
                         "bf16[4,8] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                HLO_F32, 2, DIMS(4, 16), 2, DIMS(16, 8), false, MODERATE, 19, 0);
}

/* The probe's rho of an f32 dot (accum.h) is the largest
 * |s - exact| / (g S_e) over the elements whose s, exact and g S_e are
 * finite (g S_e > 0), s the reference's own value and the 2-, 4- and
 * 8-lane sums, written out here element by element from the sums
 * chk_accums_dot_sums gives (which dot_lane_sums_match_reference_route
 * checks against the evaluator) with g the noise floor's coefficient for
 * K = 45.  A ragged block of columns (21 = 16 + 5), a ragged group of rows
 * (5 = 4 + 1), an Inf in the lhs (its row not finite) and values of every
 * scale (random_value: products that overflow or flush) make the
 * elements the probe must leave out; eight seeds, so that the largest
 * ratio falls on either sign of s - exact. */
static void dot_noise_is_largest_ratio(void **state) {
  (void)state;
  static const char *text = DOT_TEXT("f32[5,45]", "f32[45,21]",
                                     "f32[5,21] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  for (int run = 0; run < 8; run++) {
    int scale = run % 2;
    hlo_error err = {0};
    hlo_module *m = hlo_parse(text, strlen(text), &err);
    assert_non_null(m);
    uint64_t st = 77 + (uint64_t)run;
    double lv[5 * 45], rv[45 * 21];
    for (int i = 0; i < 5 * 45; i++)
      lv[i] = scale ? ldexp(random_value(&st) < 0 ? -1.0 : 1.0, (int)(st % 7)) * 0.3 : random_value(&st);
    for (int i = 0; i < 45 * 21; i++)
      rv[i] = scale ? ldexp(random_value(&st) < 0 ? -1.0 : 1.0, (int)(st % 5)) * 0.7 : random_value(&st);
    lv[2 * 45 + 7] = INFINITY;
    hlo_value *args[2] = {fx_array(HLO_F32, 2, DIMS(5, 45), lv), fx_array(HLO_F32, 2, DIMS(45, 21), rv)};
    chk_accums A;
    memset(&A, 0, sizeof A);
    A.kernel = m->entry;
    hlo_value *ref = NULL;
    chk_eval_opts o = {.replicas = 1, .emulate_device = 1, .hook = chk_accums_probe, .hook_ctx = &A};
    assert_int_equal(chk_eval_module(m, 2, args, &o, &ref, &err), 0);
    assert_int_equal(A.n, 1);
    assert_false(A.failed);
    double exact[105], abs_sum[105];
    float sums[3 * 105];
    assert_int_equal(chk_accums_dot_sums(instr_named(m, "d"), args, exact, sums, abs_sum, &err), 0);
    double g = chk_tol_coef(CHK_TOL_NOISE_FLOOR, ldexp(1, -24), 45, 0, 0, 0, 0), rho = 0;
    int counted = 0;
    for (int e = 0; e < 105; e++) {
      assert_true(memcmp(&A.a[0].abs_sum[e], &abs_sum[e], sizeof abs_sum[e]) == 0 || isnan(abs_sum[e]));
      double w = g * abs_sum[e];
      double s[4] = {((const float *)ref->data)[e], sums[3 * e], sums[3 * e + 1], sums[3 * e + 2]};
      for (int i = 0; i < 4; i++)
        if (w > 0 && isfinite(w) && isfinite(exact[e]) && isfinite(s[i])) {
          double q = fabs(exact[e] - s[i]) / w;
          rho = q > rho ? q : rho;
          counted++;
        }
    }
    assert_true(counted > 0 && counted < 4 * 105); /* some elements count, some are left out */
    assert_true(rho > 0);
    assert_true(A.a[0].noise == rho);
    chk_accums_free(&A);
    hlo_value_unref(ref);
    hlo_value_unref(args[0]);
    hlo_value_unref(args[1]);
    hlo_module_free(m);
  }
}

/* A sum that a tanh saturates: x = {1000, -1000, 500, -500} sums to 0,
 * S = 3000.  With g_max = 1e-3 the measurement shifts the sum by
 * 2 * 1e-3 * 3000 = 6, where tanh has flattened: the output moves by
 * tanh(6) = 0.9999877, a sixth of what its slope at 0 (1) makes of a
 * shift of 6.  Scaled linearly, a comparison with G = 5e-4 got
 * 2 * 0.9999877 * 0.5, about 1, although the two sides may differ by up
 * to 2 * 5e-4 * 3000 = 3 in the sum, hence about as much in the output.
 * The sixteenth shift, 0.375, moves tanh by 0.3583574 (numpy's f32
 * tanh); less 4 ulps of f32 at 0.358 (1.7e-7) and times 16 that is
 * 5.733715, and the comparison gets 2 * 5.733715 * 0.5.  A sum tanh
 * does not saturate is the control: x = {1, -1, 0.5, -0.5} (S = 3, shift
 * 0.006, tanh(0.006) = 0.00599993), where the small shift's move scaled
 * up (16 tanh(0.000375) = 0.00599999) agrees with the wide one's to 1e-5
 * of it, and the allowance stays 2 * 0.0059999 * 0.5 within 1e-6. */
static void saturating_output_measured_at_two_scales(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "add {\n"
                            "  a = f32[] parameter(0)\n"
                            "  b = f32[] parameter(1)\n"
                            "  ROOT s = f32[] add(a, b)\n"
                            "}\n"
                            "ENTRY e {\n"
                            "  x = f32[1,4] parameter(0)\n"
                            "  l = f32[2,2] parameter(1)\n"
                            "  r = f32[2,1] parameter(2)\n"
                            "  zero = f32[] constant(0)\n"
                            "  s = f32[1] reduce(x, zero), dimensions={1}, to_apply=add\n"
                            "  ROOT t = f32[1] tanh(s)\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  double gmax[1] = {1e-3}, g[1] = {5e-4};
  for (int big = 1; big >= 0; big--) {
    ctx c = {.m = m};
    double k = big ? 1000 : 1;
    c.args[0] = fx_array(HLO_F32, 2, DIMS(1, 4), VALS(k, -k, k / 2, -k / 2));
    c.args[1] = fx_array(HLO_F32, 2, DIMS(2, 2), VALS(0, 0, 0, 0));
    c.args[2] = fx_array(HLO_F32, 2, DIMS(2, 1), VALS(0, 0));
    chk_accums A;
    memset(&A, 0, sizeof A);
    A.kernel = m->entry;
    hlo_value *ref = NULL;
    assert_int_equal(eval_cb(&c, chk_accums_probe, &A, &ref, &err), 0);
    assert_int_equal(A.n, 1);
    assert_true(A.a[0].abs_sum[0] == 3 * k);
    assert_int_equal(chk_accums_measure(&A, ref, gmax, eval_cb, &c, &err), 0);
    double *map = NULL;
    assert_int_equal(chk_accums_leaf_map(&A, 0, 1, g, &map), 0);
    assert_non_null(map);
    if (big)
      assert_true(fabs(map[0] - 5.733715) <= 1e-4);
    else
      assert_true(fabs(map[0] - 0.0059999) <= 1e-6);
    free(map);
    chk_accums_free(&A);
    hlo_value_unref(ref);
    for (int i = 0; i < 3; i++)
      hlo_value_unref(c.args[i]);
  }
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(abs_sums_and_allowance),
      cmocka_unit_test(saturating_output_measured_at_two_scales),
      cmocka_unit_test(measure_replays_match_full),
      cmocka_unit_test(probe_reads_by_hand),
      cmocka_unit_test(bf16_dot_accumulates_in_f32),
      cmocka_unit_test(dot_lane_sums_by_hand),
      cmocka_unit_test(dot_lane_sums_two_contracting_dims),
      cmocka_unit_test(dot_f64_sum_rounds_each_add),
      cmocka_unit_test(dot_lane_sums_match_reference_route),
      cmocka_unit_test(dot_noise_is_largest_ratio),
      cmocka_unit_test(dot_eval_matches_evaluator),
  };
  return cmocka_run_group_tests_name("accum", tests, NULL, NULL);
}
