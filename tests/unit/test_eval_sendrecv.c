/* test_eval_sendrecv.c — a peer recv paired with its send in the same
 * computation (eval_sendrecv.c), over 4 simulated replicas.
 *
 * Each replica sends a value made from its replica id, so what every
 * replica receives is worked out by hand from the source-target pairs:
 * replica t receives replica s's data for a pair {s,t}, zeros when no pair
 * targets it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "check/eval.h"
#include "hlo/hlo_parse.h"

enum { NREP = 4 };

/* Evaluates text with NREP replicas and no parameters; each replica's
 * output must be one f32, copied to got[r]. */
static int run(const char *text, float got[NREP], hlo_error *err) {
  hlo_module *m = hlo_parse(text, strlen(text), err);
  assert_non_null(m);
  chk_eval_opts o = {.replicas = NREP};
  hlo_value *outs[NREP] = {0};
  int rc = chk_eval_supported(m, err);
  if (rc == 0)
    rc = chk_eval_module(m, 0, NULL, &o, outs, err);
  if (rc == 0) {
    for (int r = 0; r < NREP; r++) {
      assert_int_equal(outs[r]->type, HLO_F32);
      assert_int_equal(outs[r]->count, 1);
      memcpy(&got[r], outs[r]->data, sizeof(float));
      hlo_value_unref(outs[r]);
    }
  }
  hlo_module_free(m);
  return rc;
}

static void expect(const char *text, const float want[NREP]) {
  float got[NREP];
  hlo_error err;
  if (run(text, got, &err) != 0)
    fail_msg("%s", err.msg);
  for (int r = 0; r < NREP; r++)
    if (got[r] != want[r])
      fail_msg("replica %d: got %g, want %g", r, got[r], want[r]);
}

/* data = 10 * (id + 1) */
#define DATA " id = u32[] replica-id()\n f = f32[] convert(id)\n one = f32[] constant(1)\n g = f32[] add(f, one)\n" \
             " ten = f32[] constant(10)\n data = f32[] multiply(g, ten)\n tok = token[] after-all()\n"

static void recv_gets_the_sources_data(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" DATA
                  " s = (f32[], u32[], token[]) send(data, tok), channel_id=1,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{0,1},{1,2},{2,3}}}\n"
                  " sd = token[] send-done(s), channel_id=1\n"
                  " r = (f32[], u32[], token[]) recv(tok), channel_id=1,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{0,1},{1,2},{2,3}}}\n"
                  " rd = (f32[], token[]) recv-done(r), channel_id=1\n"
                  " ROOT x = f32[] get-tuple-element(rd), index=0\n}\n";
  const float want[NREP] = {0, 10, 20, 30};
  expect(t, want);
}

/* The recv written first, another channel id than its send's (as
 * pipeline-parallel loops have), and send(token, data) operand order. */
static void recv_before_send_other_channel(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" DATA
                  " r = (f32[], u32[], token[]) recv(tok), channel_id=2,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{3,0}}}\n"
                  " rd = (f32[], token[]) recv-done(r), channel_id=2\n"
                  " s = (f32[], u32[], token[]) send(tok, data), channel_id=1,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs=\"{{3,0}}\"}\n"
                  " sd = token[] send-done(s), channel_id=1\n"
                  " ROOT x = f32[] get-tuple-element(rd), index=0\n}\n";
  const float want[NREP] = {40, 0, 0, 0};
  expect(t, want);
}

/* Two transfers on one channel, told apart by their pairs:
 * recv1 <- send1 (data) over {0,1}, recv2 <- send2 (data + 100) over {2,3}. */
static void sends_told_apart_by_pairs(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" DATA " h = f32[] constant(100)\n d2 = f32[] add(data, h)\n"
                  " s1 = (f32[], u32[], token[]) send(data, tok), channel_id=0,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{0,1}}}\n"
                  " s2 = (f32[], u32[], token[]) send(d2, tok), channel_id=0,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{2,3}}}\n"
                  " r1 = (f32[], u32[], token[]) recv(tok), channel_id=0,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{0,1}}}\n"
                  " r2 = (f32[], u32[], token[]) recv(tok), channel_id=0,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{2,3}}}\n"
                  " x1 = f32[] get-tuple-element(r1), index=0\n x2 = f32[] get-tuple-element(r2), index=0\n"
                  " ROOT x = f32[] add(x1, x2)\n}\n";
  const float want[NREP] = {0, 10, 0, 130};
  expect(t, want);
}

static void unmatched_recv_refused(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" DATA
                  " s = (f32[], u32[], token[]) send(data, tok), channel_id=1,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{0,1}}}\n"
                  " r = (f32[], u32[], token[]) recv(tok), channel_id=1,"
                  " frontend_attributes={_xla_send_recv_source_target_pairs={{1,2}}}\n"
                  " ROOT x = f32[] get-tuple-element(r), index=0\n}\n";
  float got[NREP];
  hlo_error err;
  assert_int_not_equal(run(t, got, &err), 0);
  assert_non_null(strstr(err.msg, "op 'recv' from a peer device is not supported"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(recv_gets_the_sources_data),
      cmocka_unit_test(recv_before_send_other_channel),
      cmocka_unit_test(sends_told_apart_by_pairs),
      cmocka_unit_test(unmatched_recv_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
