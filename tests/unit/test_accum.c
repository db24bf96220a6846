/* test_accum.c — check/accum.h: the per-element sums of absolute terms the
 * probe records for every accumulation, and the allowance it derives for
 * an output computed from one.  Expected values are worked by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "accum.h"
#include "eval_fixture.h"
#include "hlo_parse.h"

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
  measure(&c, true, &fast);
  assert_int_equal(evaluations, 4);
  assert_int_equal(replays, 4);
  measure(&c, false, &full);
  assert_int_equal(evaluations, 4);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(abs_sums_and_allowance),
      cmocka_unit_test(measure_replays_match_full),
      cmocka_unit_test(bf16_dot_accumulates_in_f32),
  };
  return cmocka_run_group_tests_name("accum", tests, NULL, NULL);
}
