/* test_replay.c — check/replay.h: a replayed evaluation with one value
 * changed gives the full evaluation's result bit for bit, evaluates only
 * what the change reaches, and is refused where one recording cannot
 * stand for the evaluation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eval_fixture.h"
#include "check/fft_spread.h"
#include "hlo/hlo_parse.h"
#include "check/replay.h"

/* The kernel is the fusion's computation: its upstream (the exponential
 * and the dot) must not be evaluated again when the dot's value changes;
 * the broadcast beside the dot is read from the recording. */
static const char *MODULE =
    "HloModule t\n"
    "fused {\n"
    "  px = f32[2,3] parameter(0)\n"
    "  pw = f32[3,2] parameter(1)\n"
    "  pb = f32[2] parameter(2)\n"
    "  ex = f32[2,3] exponential(px)\n"
    "  d = f32[2,2] dot(ex, pw), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  bb = f32[2,2] broadcast(pb), dimensions={1}\n"
    "  y = f32[2,2] add(d, bb)\n"
    "  ROOT th = f32[2,2] tanh(y)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[2,3] parameter(0)\n"
    "  w = f32[3,2] parameter(1)\n"
    "  b = f32[2] parameter(2)\n"
    "  ROOT f = f32[2,2] fusion(x, w, b), kind=kOutput, calls=fused\n"
    "}\n";

typedef struct {
  hlo_module *m;
  hlo_value *args[3];
  chk_replay R;
  const hlo_computation *kernel;
  const hlo_instr *d;
} fixture;

static void setup(fixture *fx) {
  hlo_error err = {0};
  memset(fx, 0, sizeof *fx);
  fx->m = hlo_parse(MODULE, strlen(MODULE), &err);
  assert_non_null(fx->m);
  fx->kernel = fx->m->entry->root->attrs.calls.calls;
  assert_non_null(fx->kernel);
  fx->d = fx->kernel->instrs[4];
  assert_string_equal(fx->d->name, "d");
  fx->args[0] = fx_array(HLO_F32, 2, DIMS(2, 3), VALS(0.5, -1, 0.25, 1, -0.5, 0.75));
  fx->args[1] = fx_array(HLO_F32, 2, DIMS(3, 2), VALS(1, -2, 0.5, 3, -1, 2));
  fx->args[2] = fx_array(HLO_F32, 1, DIMS(2), VALS(0.125, -0.25));
}

static void teardown(fixture *fx) {
  chk_replay_free(&fx->R);
  for (int i = 0; i < 3; i++)
    hlo_value_unref(fx->args[i]);
  hlo_module_free(fx->m);
}

static void record_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  chk_replay_record(ctx, ins, *value);
}

/* The change: 0.25 added to every element of the dot's value; also
 * notes which of the kernel's instructions the evaluation showed. */
typedef struct {
  const hlo_instr *target;
  const hlo_computation *kernel;
  bool shown[16];
} shift_ctx;

static void shift_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  shift_ctx *s = ctx;
  if (ins->index >= 0 && ins->index < s->kernel->ninstrs && s->kernel->instrs[ins->index] == ins)
    s->shown[ins->index] = true;
  if (ins != s->target)
    return;
  hlo_value *c = hlo_value_clone(*value);
  assert_non_null(c);
  for (int64_t i = 0; i < c->count; i++)
    hlo_value_set_f64(c, i, hlo_value_get_f64(c, i) + 0.25);
  hlo_value_unref(*value);
  *value = c;
}

static hlo_value *eval(fixture *fx, int replicas, chk_eval_hook *hook, void *ctx) {
  hlo_error err = {0};
  chk_eval_opts o = {.replicas = replicas, .emulate_device = 1, .hook = hook, .hook_ctx = ctx};
  hlo_value *outs[2] = {NULL, NULL};
  assert_int_equal(chk_eval_module(fx->m, 3, fx->args, &o, outs, &err), 0);
  hlo_value_unref(outs[1]);
  return outs[0];
}

static void replay_is_the_full_evaluation(void **state) {
  (void)state;
  fixture fx;
  setup(&fx);
  const hlo_instr *targets[1] = {fx.d};
  chk_replay_init(&fx.R, fx.kernel, targets, 1);
  hlo_value *ref = eval(&fx, 1, record_hook, &fx.R);
  assert_false(fx.R.off);

  shift_ctx full = {.target = fx.d, .kernel = fx.kernel};
  hlo_value *moved_full = eval(&fx, 1, shift_hook, &full);
  shift_ctx part = {.target = fx.d, .kernel = fx.kernel};
  assert_true(chk_replay_plan(&fx.R, fx.d, shift_hook, &part));
  hlo_value *moved_part = eval(&fx, 1, chk_replay_hook, &fx.R);

  /* The change reached the output, and the replay's output is the full
   * evaluation's bit for bit. */
  assert_int_equal(moved_part->count, 4);
  assert_false(memcmp(moved_full->data, ref->data, 4 * sizeof(float)) == 0);
  assert_memory_equal(moved_part->data, moved_full->data, 4 * sizeof(float));
  /* The full evaluation showed every kernel instruction; the replay only
   * the dot (recorded, shifted by the hook), the broadcast beside it
   * (recorded) and what reads the dot (evaluated): neither the
   * parameters nor the exponential were evaluated. */
  for (int i = 0; i < fx.kernel->ninstrs; i++)
    assert_true(full.shown[i]);
  const char *shown[] = {"d", "bb", "y", "th"};
  for (int i = 0; i < fx.kernel->ninstrs; i++) {
    bool want = false;
    for (int k = 0; k < 4; k++)
      want = want || strcmp(fx.kernel->instrs[i]->name, shown[k]) == 0;
    if (part.shown[i] != want)
      fail_msg("%s: shown %d, expected %d", fx.kernel->instrs[i]->name, part.shown[i], want);
  }
  hlo_value_unref(ref);
  hlo_value_unref(moved_full);
  hlo_value_unref(moved_part);
  teardown(&fx);
}

/* Two replicas show every kernel instruction twice: one recorded value
 * cannot stand for both, so no replay is planned. */
static void replicas_turn_replay_off(void **state) {
  (void)state;
  fixture fx;
  setup(&fx);
  const hlo_instr *targets[1] = {fx.d};
  chk_replay_init(&fx.R, fx.kernel, targets, 1);
  hlo_value *ref = eval(&fx, 2, record_hook, &fx.R);
  assert_true(fx.R.off);
  shift_ctx s = {.target = fx.d, .kernel = fx.kernel};
  assert_false(chk_replay_plan(&fx.R, fx.d, shift_hook, &s));
  hlo_value_unref(ref);
  teardown(&fx);
}

/* Nothing recorded (the recording evaluation never ran): no replay. */
static void unrecorded_values_refuse_replay(void **state) {
  (void)state;
  fixture fx;
  setup(&fx);
  const hlo_instr *targets[1] = {fx.d};
  chk_replay_init(&fx.R, fx.kernel, targets, 1);
  shift_ctx s = {.target = fx.d, .kernel = fx.kernel};
  assert_false(chk_replay_plan(&fx.R, fx.d, shift_hook, &s));
  /* An instruction of another computation is never replayed. */
  hlo_value *ref = eval(&fx, 1, record_hook, &fx.R);
  assert_false(chk_replay_plan(&fx.R, fx.m->entry->root, shift_hook, &s));
  assert_true(chk_replay_plan(&fx.R, fx.d, shift_hook, &s));
  hlo_value_unref(ref);
  teardown(&fx);
}

/* An infeed's value depends on how many transfers came before it: a
 * kernel holding one is never replayed. */
static void history_dependent_ops_refuse_replay(void **state) {
  (void)state;
  static const char *text = "HloModule t\n"
                            "ENTRY e {\n"
                            "  tok = token[] after-all()\n"
                            "  in = (f32[2,2], token[]) infeed(tok)\n"
                            "  a = f32[2,2] get-tuple-element(in), index=0\n"
                            "  ROOT s = f32[2,2] add(a, a)\n"
                            "}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  chk_replay R;
  memset(&R, 0, sizeof R);
  const hlo_instr *targets[1] = {m->entry->instrs[2]};
  chk_replay_init(&R, m->entry, targets, 1);
  assert_true(R.off);
  assert_false(chk_replay_plan(&R, m->entry->instrs[2], shift_hook, NULL));
  chk_replay_free(&R);
  hlo_module_free(m);
}

/* The fft spread measurement (fft_spread.h) replays its shifted
 * evaluations, and measures what the full evaluations measure, bit for
 * bit: an evaluation that unwraps the replay and evaluates everything with
 * the planned hook stands for the full one. */
static const char *FFT_MODULE =
    "HloModule t\n"
    "fused {\n"
    "  px = c64[2,8] parameter(0)\n"
    "  f = c64[2,8] fft(px), fft_type=FFT, fft_length={8}\n"
    "  c = c64[] constant((0.75, -0.5))\n"
    "  b = c64[2,8] broadcast(c), dimensions={}\n"
    "  m = c64[2,8] multiply(f, b)\n"
    "  ROOT a = f32[2,8] abs(m)\n"
    "}\n"
    "ENTRY e {\n"
    "  p0 = c64[2,8] parameter(0)\n"
    "  ROOT r = f32[2,8] fusion(p0), kind=kLoop, calls=fused\n"
    "}\n";

typedef struct {
  const hlo_module *m;
  hlo_value *arg;
  int evaluations, replays;
  bool unwrap;
} fft_ctx;

static int fft_eval(void *ctx, chk_eval_hook *hook, void *hook_ctx, hlo_value **out, hlo_error *err) {
  fft_ctx *c = ctx;
  c->evaluations++;
  if (hook == chk_replay_hook) {
    c->replays++;
    if (c->unwrap) {
      const chk_replay *R = hook_ctx;
      hook = R->hook;
      hook_ctx = R->hook_ctx;
    }
  }
  chk_eval_opts o = {.replicas = 1, .emulate_device = 1, .hook = hook, .hook_ctx = hook_ctx};
  return chk_eval_module(c->m, 1, &c->arg, &o, out, err);
}

static void fft_spread_replays(void **state) {
  (void)state;
  hlo_error err = {0};
  hlo_module *m = hlo_parse(FFT_MODULE, strlen(FFT_MODULE), &err);
  assert_non_null(m);
  const hlo_computation *kernel = m->entry->root->attrs.calls.calls;
  hlo_value *x = hlo_value_array_uninit(HLO_C64, 2, DIMS(2, 8));
  assert_non_null(x);
  for (int i = 0; i < 32; i++)
    ((float *)x->data)[i] = (float)((i * 7) % 11) / 8.0f - 0.5f;
  fft_ctx c = {.m = m, .arg = x};
  hlo_value *ref = NULL;
  assert_int_equal(fft_eval(&c, NULL, NULL, &ref, &err), 0);
  chk_fft_spreads fast, full;
  c.evaluations = c.replays = 0;
  assert_int_equal(chk_fft_spreads_measure(&fast, kernel, ref, fft_eval, &c, &err), 0);
  /* one capture, then 2 parts x 2 signs replayed */
  assert_int_equal(fast.n, 1);
  assert_int_equal(c.evaluations, 5);
  assert_int_equal(c.replays, 4);
  c.unwrap = true;
  assert_int_equal(chk_fft_spreads_measure(&full, kernel, ref, fft_eval, &c, &err), 0);
  assert_non_null(fast.s[0].dy[0]);
  assert_non_null(full.s[0].dy[0]);
  assert_memory_equal(fast.s[0].dy[0], full.s[0].dy[0], 16 * sizeof(double));
  assert_true(fast.s[0].wide == full.s[0].wide);
  chk_fft_spreads_free(&fast);
  chk_fft_spreads_free(&full);
  hlo_value_unref(ref);
  hlo_value_unref(x);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(replay_is_the_full_evaluation),
      cmocka_unit_test(replicas_turn_replay_off),
      cmocka_unit_test(unrecorded_values_refuse_replay),
      cmocka_unit_test(history_dependent_ops_refuse_replay),
      cmocka_unit_test(fft_spread_replays),
  };
  return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
