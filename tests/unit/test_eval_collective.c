/* test_eval_collective.c — collectives over 4 simulated replicas.
 *
 * Each replica starts from its replica id, so every expected value below is
 * worked out by hand from the op's definition (XLA operation semantics). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check/eval.h"
#include "hlo/hlo_mem.h"
#include "hlo/hlo_parse.h"

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

static void collective_broadcast_from_first_member(void **state) {
  (void)state;
  /* x = 10 id + {0, 1}; groups {3,1} and {0}, replica 2 in none
   * (StableHLO's collective_broadcast): replicas 3 and 1 get x_3 =
   * {30, 31}, replica 0 its own {0, 1}, replica 2 zeros. */
  const char *t = "ENTRY e {\n" RID " ten = f32[] constant(10)\n t = f32[] multiply(f, ten)\n"
                  " tb = f32[2] broadcast(t), dimensions={}\n io = s32[2] iota(), iota_dimension=0\n"
                  " fo = f32[2] convert(io)\n x = f32[2] add(tb, fo)\n"
                  " ROOT c = f32[2] collective-broadcast(x), replica_groups={{3,1},{0}}\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  assert_int_equal(run(t, got, &n, &err), 0);
  assert_int_equal(n, 2);
  const float want[] = {0, 1, 30, 31, 0, 0, 30, 31};
  expect_rows(got, 2, want);
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

/* Every member of a group receives the same all-reduce or all-gather
 * value, so the evaluator holds one per group, not one per replica: with
 * 64 replicas and a 256 KiB (all-reduce) or 1 MiB (all-gather) result, one
 * copy per replica would hold 16 or 64 MiB.  The account of values (hlo_mem.h) measures it;
 * the bound leaves room for a combine's temporary, a few copies. */
static void one_result_per_group(void **state) {
  (void)state;
  const char *ops[2] = {"all-reduce(b), replica_groups={}, to_apply=add",
                        "all-gather(b), replica_groups={}, dimensions={0}"};
  const int64_t in[2] = {65536, 4096}, res[2] = {65536, 64 * 4096};
  for (int k = 0; k < 2; k++) {
    char t[1024];
    snprintf(t, sizeof t,
             SUM "ENTRY e {\n b = f32[%lld] parameter(0)\n ROOT r = f32[%lld] %s\n}\n",
             (long long)in[k], (long long)res[k], ops[k]);
    hlo_error err;
    hlo_module *m = hlo_parse(t, strlen(t), &err);
    assert_non_null(m);
    /* every replica receives this same argument (eval.h) */
    hlo_value *x = hlo_value_array(HLO_F32, 1, &in[k]);
    assert_non_null(x);
    for (int64_t i = 0; i < in[k]; i++)
      ((float *)x->data)[i] = 1.5f;
    chk_eval_opts o = {.replicas = 64};
    hlo_value *outs[64] = {0};
    int64_t before = hlo_mem_held();
    hlo_mem_reset_peak();
    assert_int_equal(chk_eval_module(m, 1, &x, &o, outs, &err), 0);
    assert_true(hlo_mem_peak() - before <= 4 * res[k] * 4);
    /* and the values are the operation's: 64 x 1.5 = 96 everywhere, or
     * the 64 arguments of 1.5 side by side */
    for (int r = 0; r < 64; r += 21) {
      const float *v = outs[r]->data;
      assert_int_equal(outs[r]->count, res[k]);
      for (int64_t i = 0; i < outs[r]->count; i += 4099)
        assert_true(v[i] == (k == 0 ? 96.0f : 1.5f));
    }
    for (int r = 0; r < 64; r++)
      hlo_value_unref(outs[r]);
    hlo_value_unref(x);
    hlo_module_free(m);
  }
}

/* ragged-all-to-all, the case test_dev_collective works by hand (its
 * comment derives every row): replicas 2, 0, 1 in that group order with two
 * updates per member, and replica 3 alone in a group of one that sends
 * nothing.  Replica q's input row i is (100q + 10i, 100q + 10i + 1), its
 * output operand's row i the negation of that minus one.  Clipped,
 * negative-size and overlapping updates included. */
static void ragged_all_to_all_rows(void **state) {
  (void)state;
  const char *t =
      "ENTRY e {\n" RID " ids = s32[] convert(id)\n h = f32[] constant(100)\n fh = f32[] multiply(f, h)\n"
      " t = f32[] constant(10)\n one = f32[] constant(1)\n z = s32[] constant(0)\n"
      " xi = f32[4,2] iota(), iota_dimension=0\n xc = f32[4,2] iota(), iota_dimension=1\n"
      " t4 = f32[4,2] broadcast(t), dimensions={}\n a4 = f32[4,2] multiply(xi, t4)\n b4 = f32[4,2] add(a4, xc)\n"
      " q4 = f32[4,2] broadcast(fh), dimensions={}\n x = f32[4,2] add(b4, q4)\n"
      " oi = f32[5,2] iota(), iota_dimension=0\n oc = f32[5,2] iota(), iota_dimension=1\n"
      " t5 = f32[5,2] broadcast(t), dimensions={}\n a5 = f32[5,2] multiply(oi, t5)\n b5 = f32[5,2] add(a5, oc)\n"
      " q5 = f32[5,2] broadcast(fh), dimensions={}\n c5 = f32[5,2] add(b5, q5)\n n5 = f32[5,2] negate(c5)\n"
      " one5 = f32[5,2] broadcast(one), dimensions={}\n o = f32[5,2] subtract(n5, one5)\n"
      " tio = s32[4,6] constant({{0,0,1,0,0,0},{1,0,-1,2,0,0},{0,0,0,3,0,0},{0,0,0,0,0,0}})\n"
      " tss = s32[4,6] constant({{0,0,1,-3,0,0},{2,0,2,1,0,0},{0,0,2,5,5,1},{0,0,0,0,0,0}})\n"
      " too = s32[4,6] constant({{0,0,1,0,0,0},{-1,0,2,0,0,0},{0,0,0,4,0,2},{0,0,0,0,0,0}})\n"
      " dio = s32[1,6] dynamic-slice(tio, ids, z), dynamic_slice_sizes={1,6}\n io = s32[6] reshape(dio)\n"
      " dss = s32[1,6] dynamic-slice(tss, ids, z), dynamic_slice_sizes={1,6}\n ss = s32[6] reshape(dss)\n"
      " doo = s32[1,6] dynamic-slice(too, ids, z), dynamic_slice_sizes={1,6}\n oo = s32[6] reshape(doo)\n"
      " rs = s32[6] broadcast(z), dimensions={}\n"
      " ROOT ra = f32[5,2] ragged-all-to-all(x, o, io, ss, oo, rs), replica_groups={{2,0,1},{3}}\n}\n";
  float got[NREP][16];
  int64_t n;
  hlo_error err;
  if (run(t, got, &n, &err) != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(n, 10);
  const float want[] = {
      120, 121, 10, 11, -21, -22, 100, 101, 230, 231,           /* x1[2] x0[1] o0[2] x1[0] x2[3] */
      200, 201, 210, 211, 200, 201, 230, 231, -141, -142,       /* x2[0] x2[1] x2[0] x2[3] o1[4] */
      120, 121, -211, -212, -221, -222, -231, -232, -241, -242, /* x1[2] o2[1..4] */
      -301, -302, -311, -312, -321, -322, -331, -332, -341, -342, /* o3 */
  };
  expect_rows(got, 10, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(all_reduce_all_replicas),
      cmocka_unit_test(all_reduce_groups),
      cmocka_unit_test(all_reduce_max_nonsimple),
      cmocka_unit_test(all_gather_dim0),
      cmocka_unit_test(reduce_scatter_dim0),
      cmocka_unit_test(all_to_all_dim0),
      cmocka_unit_test(collective_permute_shift), cmocka_unit_test(collective_broadcast_from_first_member),
      cmocka_unit_test(group_outside_replicas_is_an_error),
      cmocka_unit_test(one_result_per_group),       cmocka_unit_test(ragged_all_to_all_rows),
  };
  return cmocka_run_group_tests_name("eval_collective", tests, NULL, NULL);
}
