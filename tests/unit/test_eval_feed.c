/* test_eval_feed.c — infeed and host recv in the reference evaluator
 * (eval_feed.c).
 *
 * Their data is synthesised, so the expectations are the documented
 * properties rather than values: floats in [-1, 1) (the naive profile),
 * the same data for the same seed and other data for another seed or the
 * next iteration of a loop, recv-done handing on exactly its recv's data,
 * and a recv from a peer device refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "eval_fixture.h"

static hlo_value *eval_seed(const char *text, uint64_t seed) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  chk_eval_opts o = {.replicas = 1, .rng_seed = seed};
  hlo_value *out = NULL;
  if (chk_eval_supported(m, &err) != 0 || chk_eval_module(m, 0, NULL, &o, &out, &err) != 0)
    fail_msg("eval: %d:%d: %s", err.line, err.col, err.msg);
  hlo_module_free(m);
  return out;
}

static const char *infeed = "ENTRY e {\n t = token[] after-all()\n"
                            " f = ((f32[64], s32[8]), token[]) infeed(t)\n"
                            " d = (f32[64], s32[8]) get-tuple-element(f), index=0\n"
                            " ROOT x = f32[64] get-tuple-element(d), index=0\n}\n";

static void infeed_data_is_seeded(void **state) {
  (void)state;
  hlo_value *a = eval_seed(infeed, 7), *b = eval_seed(infeed, 7), *c = eval_seed(infeed, 8);
  assert_int_equal(a->type, HLO_F32);
  int distinct = 0;
  for (int64_t i = 0; i < a->count; i++) {
    double x = hlo_value_get_f64(a, i);
    assert_true(x >= -1 && x < 1);
    distinct += i > 0 && x != hlo_value_get_f64(a, i - 1);
  }
  assert_true(distinct > 50); /* not a constant fill */
  assert_true(hlo_value_equal(a, b));
  assert_false(hlo_value_equal(a, c));
  hlo_value_unref(a);
  hlo_value_unref(b);
  hlo_value_unref(c);
}

/* Two iterations of a loop each take an infeed: the second's data is not
 * the first's.  The loop carries (counter, first data, latest data). */
static void infeed_in_a_loop_gets_new_data(void **state) {
  (void)state;
  const char *t =
      "cond {\n p = (s32[], f32[16], f32[16]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
      " two = s32[] constant(2)\n ROOT lt = pred[] compare(i, two), direction=LT\n}\n"
      "body {\n p = (s32[], f32[16], f32[16]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
      " one = s32[] constant(1)\n j = s32[] add(i, one)\n zero = s32[] constant(0)\n"
      " first = pred[] compare(i, zero), direction=EQ\n"
      " tok = token[] after-all()\n f = (f32[16], token[]) infeed(tok)\n"
      " d = f32[16] get-tuple-element(f), index=0\n old = f32[16] get-tuple-element(p), index=1\n"
      " bf = pred[16] broadcast(first), dimensions={}\n keep = f32[16] select(bf, d, old)\n"
      " ROOT r = (s32[], f32[16], f32[16]) tuple(j, keep, d)\n}\n"
      "ENTRY e {\n z = s32[] constant(0)\n c = f32[] constant(0)\n v = f32[16] broadcast(c), dimensions={}\n"
      " init = (s32[], f32[16], f32[16]) tuple(z, v, v)\n"
      " ROOT w = (s32[], f32[16], f32[16]) while(init), condition=cond, body=body\n}\n";
  hlo_value *r = eval_seed(t, 3);
  assert_int_equal(r->type, HLO_TUPLE);
  assert_int_equal(hlo_value_get_i64(r->elems[0], 0), 2);
  assert_false(hlo_value_equal(r->elems[1], r->elems[2]));
  hlo_value_unref(r);
}

/* recv-done hands on the host recv's data: its data is what the recv's
 * first element holds (the root returns both). */
static void host_recv_and_done(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n t = token[] after-all()\n"
                  " r = (s32[3,4], u32[], token[]) recv(t), channel_id=5, is_host_transfer=true\n"
                  " d = (s32[3,4], token[]) recv-done(r), channel_id=5, is_host_transfer=true\n"
                  " a = s32[3,4] get-tuple-element(r), index=0\n b = s32[3,4] get-tuple-element(d), index=0\n"
                  " ROOT o = (s32[3,4], s32[3,4]) tuple(a, b)\n}\n";
  hlo_value *v = eval_seed(t, 1);
  assert_true(hlo_value_equal(v->elems[0], v->elems[1]));
  for (int64_t i = 0; i < v->elems[0]->count; i++) {
    int64_t x = hlo_value_get_i64(v->elems[0], i);
    assert_true(x >= -8 && x <= 8); /* the naive profile's signed range */
  }
  hlo_value_unref(v);
}

/* outfeed sends data away and returns a token: the module's value is the
 * data it computed, unchanged (x + x = [2, 4]). */
static void outfeed_changes_nothing(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[2] parameter(0)\n t = token[] after-all()\n"
                  " o = token[] outfeed(x, t), outfeed_shape=f32[2]\n"
                  " y = f32[2] add(x, x)\n ROOT r = (f32[2], token[]) tuple(y, o)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2))};
  hlo_value *v = fx_eval(t, 1, a);
  assert_int_equal(v->type, HLO_TUPLE);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 1, DIMS(2), VALS(2, 4));
  hlo_value_unref(v);
}

static void peer_recv_refused(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n t = token[] after-all()\n"
                  " r = (f32[4], u32[], token[]) recv(t), channel_id=2\n"
                  " d = (f32[4], token[]) recv-done(r), channel_id=2\n"
                  " ROOT a = f32[4] get-tuple-element(d), index=0\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  assert_int_equal(chk_eval_supported(m, &err), -1);
  assert_non_null(strstr(err.msg, "from a peer device"));
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(infeed_data_is_seeded),
      cmocka_unit_test(infeed_in_a_loop_gets_new_data),
      cmocka_unit_test(host_recv_and_done),
      cmocka_unit_test(outfeed_changes_nothing),
      cmocka_unit_test(peer_recv_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
