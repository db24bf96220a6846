/* test_eval_collective.c — collectives over 4 simulated replicas.
 *
 * Each replica starts from its replica id, so every expected value below is
 * worked out by hand from the op's definition (XLA operation semantics). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "eval.h"
#include "hlo_parse.h"

enum { NREP = 4 };

/* Evaluates text with NREP replicas and no parameters; outs[r] are f32
 * arrays whose contents are copied to got[r][...]. */
static int run(const char *text, float got[NREP][16], int64_t *count, hlo_error *err) {
  hlo_module *m = hlo_parse(text, strlen(text), err);
  assert_non_null(m);
  chk_eval_opts o = {.replicas = NREP};
  hlo_value *outs[NREP] = {0};
  int rc = chk_eval_module(m, 0, NULL, &o, outs, err);
  if (rc == 0) {
    for (int r = 0; r < NREP; r++) {
      assert_int_equal(outs[r]->type, HLO_F32);
      assert_true(outs[r]->count <= 16);
      *count = outs[r]->count;
      memcpy(got[r], outs[r]->data, sizeof(float) * (size_t)outs[r]->count);
      hlo_value_unref(outs[r]);
    }
  }
  hlo_module_free(m);
  return rc;
}

static void expect_rows(float got[NREP][16], int64_t n, const float *want /* NREP*n */) {
  for (int r = 0; r < NREP; r++)
    for (int64_t i = 0; i < n; i++)
      assert_true(got[r][i] == want[r * n + i]);
}

#define SUM "add {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b)\n}\n"
#define RID " id = u32[] replica-id()\n f = f32[] convert(id)\n"

static void all_reduce_all_replicas(void **state) {
  (void)state;
  const char *t = SUM "ENTRY e {\n" RID " b = f32[2] broadcast(f), dimensions={}\n"
                      " ROOT r = f32[2] all-reduce(b), replica_groups={}, to_apply=add\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  const float want[] = {6, 6, 6, 6, 6, 6, 6, 6}; /* 0+1+2+3 everywhere */
  expect_rows(got, 2, want);
}

static void all_reduce_groups(void **state) {
  (void)state;
  const char *t = SUM "ENTRY e {\n" RID
                      " ROOT r = f32[] all-reduce(f), replica_groups={{0,1},{2,3}}, to_apply=add\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  const float want[] = {1, 1, 5, 5}; /* 0+1 and 2+3 */
  expect_rows(got, 1, want);
}

static void all_reduce_max_nonsimple(void **state) {
  (void)state;
  /* A reducer with an extra instruction takes the general per-element path. */
  const char *t = "mx {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                  " m = f32[] maximum(a, b)\n ROOT n = f32[] negate(m)\n}\n"
                  "ENTRY e {\n" RID " ROOT r = f32[] all-reduce(f), replica_groups={{0,1}, {2,3}}, to_apply=mx\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  /* group {0,1}: -(max(0,1)) = -1; group {2,3}: -(max(2,3)) = -3 */
  const float want[] = {-1, -1, -3, -3};
  expect_rows(got, 1, want);
}

static void all_gather_dim0(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" RID " b = f32[2] broadcast(f), dimensions={}\n"
                  " ROOT g = f32[8] all-gather(b), dimensions={0}, replica_groups={}\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  float want[NREP * 8];
  const float row[] = {0, 0, 1, 1, 2, 2, 3, 3};
  for (int r = 0; r < NREP; r++)
    memcpy(&want[r * 8], row, sizeof row);
  expect_rows(got, 8, want);
}

static void reduce_scatter_dim0(void **state) {
  (void)state;
  /* replica r holds iota + 10r; the sum is 4*iota + 60 = [60,64,68,72] and
   * replica r keeps element r. */
  const char *t = SUM "ENTRY e {\n" RID " i = f32[4] iota(), iota_dimension=0\n"
                      " ten = f32[] constant(10)\n tr = f32[] multiply(f, ten)\n"
                      " b = f32[4] broadcast(tr), dimensions={}\n x = f32[4] add(i, b)\n"
                      " ROOT rs = f32[1] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=add\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  const float want[] = {60, 64, 68, 72};
  expect_rows(got, 1, want);
}

static void all_to_all_dim0(void **state) {
  (void)state;
  /* replica r holds [4r, 4r+1, 4r+2, 4r+3]; chunk j goes to replica j, so
   * replica r receives element r of every replica: [r, 4+r, 8+r, 12+r]. */
  const char *t = "ENTRY e {\n" RID " i = f32[4] iota(), iota_dimension=0\n"
                  " four = f32[] constant(4)\n fr = f32[] multiply(f, four)\n"
                  " b = f32[4] broadcast(fr), dimensions={}\n x = f32[4] add(i, b)\n"
                  " ROOT a = f32[4] all-to-all(x), dimensions={0}, replica_groups={}\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  const float want[] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  expect_rows(got, 4, want);
}

static void collective_permute_shift(void **state) {
  (void)state;
  /* 0->1, 1->2, 2->3: replica 0 is no target and receives zeros. */
  const char *t = "ENTRY e {\n" RID " one = f32[] constant(1)\n x = f32[] add(f, one)\n"
                  " ROOT p = f32[] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3}}\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  const float want[] = {0, 1, 2, 3};
  expect_rows(got, 1, want);
}

static void group_outside_replicas_is_an_error(void **state) {
  (void)state;
  const char *t = SUM "ENTRY e {\n" RID
                      " ROOT r = f32[] all-reduce(f), replica_groups={{0,5}}, to_apply=add\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), -1);
  assert_non_null(strstr(err.msg, "replica 5"));
  assert_non_null(strstr(err.msg, "all-reduce"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(all_reduce_all_replicas),
      cmocka_unit_test(all_reduce_groups),
      cmocka_unit_test(all_reduce_max_nonsimple),
      cmocka_unit_test(all_gather_dim0),
      cmocka_unit_test(reduce_scatter_dim0),
      cmocka_unit_test(all_to_all_dim0),
      cmocka_unit_test(collective_permute_shift),
      cmocka_unit_test(group_outside_replicas_is_an_error),
  };
  return cmocka_run_group_tests_name("eval_collective", tests, NULL, NULL);
}
