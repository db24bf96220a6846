/* test_eval_async.c — asynchronous and paired ops, tokens and annotations,
 * and the parser leniencies real dumps need (issue 17).
 *
 * Each start/done pair must give exactly what its synchronous op gives:
 * the expected values are worked out by hand from the synchronous op's
 * definition (XLA operation semantics), over 2 replicas for collectives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "eval_fixture.h"

enum { NREP = 2 };

/* Evaluates text, which has no parameters, over NREP replicas; the root
 * of replica r is an f32 array of n elements copied to got[r]. */
static void run_replicas(const char *text, int64_t n, float got[NREP][8]) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  chk_eval_opts o = {.replicas = NREP};
  hlo_value *outs[NREP] = {0};
  if (chk_eval_module(m, 0, NULL, &o, outs, &err) != 0)
    fail_msg("eval: %d:%d: %s", err.line, err.col, err.msg);
  for (int r = 0; r < NREP; r++) {
    assert_int_equal(outs[r]->type, HLO_F32);
    assert_int_equal(outs[r]->count, n);
    memcpy(got[r], outs[r]->data, sizeof(float) * (size_t)n);
    hlo_value_unref(outs[r]);
  }
  hlo_module_free(m);
}

#define RID " id = u32[] replica-id()\n f = f32[] convert(id)\n"
#define SUM "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"

static void async_start_calls_computation(void **state) {
  (void)state;
  const char *t = "add_one {\n p = f32[3] parameter(0)\n one = f32[] constant(1)\n"
                  " b = f32[3] broadcast(one), dimensions={}\n ROOT r = f32[3] add(p, b)\n}\n"
                  "ENTRY e {\n x = f32[3] parameter(0)\n"
                  " s = ((f32[3]), f32[3], s32[]) async-start(x), calls=add_one\n"
                  " u = ((f32[3]), f32[3], s32[]) async-update(s)\n"
                  " ROOT d = f32[3] async-done(u)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, 2, 3))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(3), VALS(2, 3, 4));
}

static void async_start_keeps_operands(void **state) {
  (void)state;
  /* Element 0 of the start's value is the tuple of its operands. */
  const char *t = "neg {\n p = f32[2] parameter(0)\n ROOT r = f32[2] negate(p)\n}\n"
                  "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " s = ((f32[2]), f32[2], s32[]) async-start(x), calls=neg\n"
                  " ops = (f32[2]) get-tuple-element(s), index=0\n"
                  " ROOT o = f32[2] get-tuple-element(ops), index=0\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(5, -6))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(2), VALS(5, -6));
}

static void async_sugar_wraps_op(void **state) {
  (void)state;
  /* `negate-start`/`negate-done`: async-start/done wrapping negate. */
  const char *t = "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " s = ((f32[2]), f32[2], s32[]) negate-start(x)\n"
                  " ROOT d = f32[2] negate-done(s)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1.5, -2))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(2), VALS(-1.5, 2));
}

static void all_reduce_start_done(void **state) {
  (void)state;
  const char *t = SUM "ENTRY e {\n" RID " b = f32[2] broadcast(f), dimensions={}\n"
                      " s = f32[2] all-reduce-start(b), replica_groups={}, to_apply=add\n"
                      " ROOT d = f32[2] all-reduce-done(s)\n}\n";
  float got[NREP][8];
  run_replicas(t, 2, got);
  for (int r = 0; r < NREP; r++) /* 0 + 1 on both replicas */
    assert_true(got[r][0] == 1 && got[r][1] == 1);
}

static void all_gather_start_done(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" RID " b = f32[1] broadcast(f), dimensions={}\n"
                  " s = (f32[1], f32[2]) all-gather-start(b), replica_groups={}, dimensions={0}\n"
                  " ROOT d = f32[2] all-gather-done(s)\n}\n";
  float got[NREP][8];
  run_replicas(t, 2, got);
  for (int r = 0; r < NREP; r++) /* replica 0's value, then replica 1's */
    assert_true(got[r][0] == 0 && got[r][1] == 1);
}

static void collective_permute_start_done(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" RID " b = f32[1] broadcast(f), dimensions={}\n"
                  " s = (f32[1], f32[1], u32[], u32[]) collective-permute-start(b), "
                  "source_target_pairs={{0,1},{1,0}}\n"
                  " ROOT d = f32[1] collective-permute-done(s)\n}\n";
  float got[NREP][8];
  run_replicas(t, 1, got);
  assert_true(got[0][0] == 1); /* from replica 1 */
  assert_true(got[1][0] == 0); /* from replica 0 */
}

static void copy_start_done(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[3] parameter(0)\n"
                  " s = (f32[3], f32[3], u32[]) copy-start(x)\n"
                  " ROOT d = f32[3] copy-done(s)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(7, 8, 9))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(3), VALS(7, 8, 9));
}

static void tokens_send_and_annotations(void **state) {
  (void)state;
  /* after-all makes a token, send passes its data through its tuple,
   * add-dependency, domain and opt-barrier are the identity. */
  const char *t = "ENTRY e {\n x = f32[2] parameter(0)\n t = token[] after-all()\n"
                  " s = (f32[2], u32[], token[]) send(x, t), channel_id=1, is_host_transfer=true\n"
                  " sd = token[] send-done(s), channel_id=1, is_host_transfer=true\n"
                  " a = f32[2] add-dependency(x, sd)\n"
                  " dm = f32[2] domain(a), domain={kind=\"sharding\", entry={maximal device=0}, exit={replicated}}\n"
                  " sx = f32[2] get-tuple-element(s), index=0\n"
                  " tu = (f32[2], f32[2]) tuple(dm, sx)\n"
                  " ob = (f32[2], f32[2]) opt-barrier(tu)\n"
                  " l = f32[2] get-tuple-element(ob), index=0\n"
                  " r = f32[2] get-tuple-element(ob), index=1\n"
                  " ROOT o = f32[2] add(l, r)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2.5))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(2), VALS(2, 5));
}

static void done_of_a_cut_unit(void **state) {
  (void)state;
  /* A unit cut out between a start and its done gets the start's value as
   * a parameter: the done still finds its result, by its own opcode. */
  const char *t = "ENTRY e {\n s = ((f32[2]), f32[2], s32[]) parameter(0)\n ROOT d = f32[2] async-done(s)\n}\n";
  const char *c = "ENTRY e {\n s = (f32[2], f32[2], u32[]) parameter(0)\n ROOT d = f32[2] copy-done(s)\n}\n";
  for (int k = 0; k < 2; k++) {
    hlo_value *ops = fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2));
    hlo_value *e0[] = {k == 0 ? hlo_value_tuple(1, &ops) : fx_array(HLO_F32, 1, DIMS(2), VALS(3, 4)),
                       k == 0 ? fx_array(HLO_F32, 1, DIMS(2), VALS(3, 4)) : ops, fx_scalar(k == 0 ? HLO_S32 : HLO_U32, 0)};
    hlo_value *a[] = {hlo_value_tuple(3, e0)};
    /* async-done takes slot 1, copy-done slot 0: both hold {3, 4}. */
    fx_expect(fx_eval(k == 0 ? t : c, 1, a), HLO_F32, 1, DIMS(2), VALS(3, 4));
  }
}

static void count_inner(void *ctx, const hlo_instr *ins, hlo_value *const *operands, int noperands,
                        hlo_value **value) {
  (void)operands;
  (void)noperands;
  (void)value;
  if (strcmp(ins->name, "inner") == 0 || strcmp(ins->name, "s") == 0)
    ((int *)ctx)[strcmp(ins->name, "s") == 0]++;
}

static void hook_sees_async_computation(void **state) {
  (void)state;
  /* The tolerance policy's hook must see the ops an async computation
   * runs (a dot there accumulates like any other), and the start once. */
  const char *t = "neg {\n p = f32[2] parameter(0)\n ROOT inner = f32[2] negate(p)\n}\n"
                  "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " s = ((f32[2]), f32[2], s32[]) async-start(x), calls=neg\n"
                  " ROOT d = f32[2] async-done(s)\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  int seen[2] = {0, 0};
  chk_eval_opts o = {.replicas = 1, .hook = count_inner, .hook_ctx = seen};
  hlo_value *x = fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2)), *out = NULL;
  assert_int_equal(chk_eval_module(m, 1, &x, &o, &out, &err), 0);
  assert_int_equal(seen[0], 1); /* inner */
  assert_int_equal(seen[1], 1); /* s */
  hlo_value_unref(out);
  hlo_value_unref(x);
  hlo_module_free(m);
}

static void splat_constant(void **state) {
  (void)state;
  /* XLA writes one value for an array constant: every element has it. */
  fx_expect(fx_eval("ENTRY e {\n ROOT c = f32[2,2] constant(3.5)\n}\n", 0, NULL), HLO_F32, 2, DIMS(2, 2),
            VALS(3.5, 3.5, 3.5, 3.5));
  fx_expect(fx_eval("ENTRY e {\n ROOT c = s32[3] constant(-7)\n}\n", 0, NULL), HLO_S32, 1, DIMS(3),
            VALS(-7, -7, -7));
}

static void module_name_with_colon(void **state) {
  (void)state;
  /* XLA's lexer reads `name:` as a name. */
  const char *t = "HloModule m:\n\nENTRY e {\n ROOT c = f32[] constant(2)\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  assert_string_equal(m->name, "m");
  hlo_module_free(m);
  fx_expect(fx_eval(t, 0, NULL), HLO_F32, 0, NULL, VALS(2));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(async_start_calls_computation),
      cmocka_unit_test(async_start_keeps_operands),
      cmocka_unit_test(async_sugar_wraps_op),
      cmocka_unit_test(all_reduce_start_done),
      cmocka_unit_test(all_gather_start_done),
      cmocka_unit_test(collective_permute_start_done),
      cmocka_unit_test(copy_start_done),
      cmocka_unit_test(tokens_send_and_annotations),
      cmocka_unit_test(done_of_a_cut_unit),
      cmocka_unit_test(hook_sees_async_computation),
      cmocka_unit_test(splat_constant),
      cmocka_unit_test(module_name_with_colon),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
