/* test_dev_collective.c — the device's collectives (dev_collective.h)
 * against values worked out by hand from XLA's operation semantics:
 * all-reduce within replica groups, in the group's listed order (shown by
 * a bf16 sum whose rounding depends on it, and by a reducer that is not
 * associative), all-gather, reduce-scatter, both forms of all-to-all,
 * collective-permute (zeros where no pair targets a replica),
 * collective-broadcast (StableHLO's collective_broadcast: every member
 * gets the group's first member's operands, a replica in no group zeros),
 * ragged-all-to-all (clipped, negative and overlapping updates), complex
 * values moved whole, and the errors a bad replica group gets.  Every
 * case runs with a config whose tile cuts the result into several tiles
 * and with none (one tile): both must give the same values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_collective.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  return m;
}

static hlo_value *f32s(int rank, const int64_t *dims, const float *v) {
  hlo_value *a = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(a);
  memcpy(a->data, v, (size_t)a->count * sizeof *v);
  return a;
}

static const dev_config *tiny(void) {
  static dev_config c;
  hlo_error err;
  if (dev_config_parse("tile=1x1 k=0 buf=2 order=01 pack=1 prec=default flags=none", &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  return &c;
}

/* Runs the entry root for nrep replicas on ops (nrep rows of its operands)
 * with cfg; returns the status and fills outs. */
static int run(const hlo_module *m, int nrep, hlo_value **ops, const dev_config *cfg, hlo_value **outs, char *why,
               size_t why_len) {
  why[0] = 0;
  dev_whole_ctx ctx = {.cfg = cfg, .why = why, .why_len = why_len};
  return dev_collective_run(m->entry->root, nrep, ops, &ctx, outs);
}

/* Runs tiled and untiled; each replica's result must hold want[r] (n
 * floats each, or n floats per tuple element when ntuple > 0). */
static void expect(const hlo_module *m, int nrep, hlo_value **ops, int ntuple, const float *const *want, int64_t n) {
  const dev_config *cfgs[2] = {tiny(), NULL};
  for (int c = 0; c < 2; c++) {
    hlo_value *outs[8];
    char why[256];
    int rc = run(m, nrep, ops, cfgs[c], outs, why, sizeof why);
    if (rc != 0)
      fail_msg("run (%s): %d %s", c ? "one tile" : "tiled", rc, why);
    for (int r = 0; r < nrep; r++) {
      int parts = ntuple > 0 ? ntuple : 1;
      for (int k = 0; k < parts; k++) {
        const hlo_value *v = ntuple > 0 ? outs[r]->elems[k] : outs[r];
        assert_int_equal(v->count, n);
        for (int64_t i = 0; i < n; i++)
          if (((const float *)v->data)[i] != want[r][k * n + i])
            fail_msg("%s, replica %d, result %d, element %lld: %g, want %g", c ? "one tile" : "tiled", r, k,
                     (long long)i, ((const float *)v->data)[i], want[r][k * n + i]);
      }
      hlo_value_unref(outs[r]);
    }
  }
}

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

static const char *ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

/* Four replicas, x_r[i] = 10r + i, groups {0,2} and {1,3}: replicas 0 and
 * 2 get 20 + 2i, replicas 1 and 3 get 40 + 2i. */
static void all_reduce_within_groups(void **state) {
  (void)state;
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m, replica_count=4\n%sENTRY e {\n  p = f32[2,3] parameter(0)\n"
           "  ROOT ar = f32[2,3] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=add\n}\n",
           ADD);
  hlo_module *m = parse(text);
  int64_t d[2] = {2, 3};
  hlo_value *ops[4];
  float lo[6], hi[6];
  for (int r = 0; r < 4; r++) {
    float v[6];
    for (int i = 0; i < 6; i++)
      v[i] = (float)(10 * r + i);
    ops[r] = f32s(2, d, v);
  }
  for (int i = 0; i < 6; i++)
    lo[i] = (float)(20 + 2 * i), hi[i] = (float)(40 + 2 * i);
  const float *want[4] = {lo, hi, lo, hi};
  expect(m, 4, ops, 0, want, 6);
  unref_all(ops, 4);
  hlo_module_free(m);
}

/* A bf16 sum of 256, 1 and 1 (replicas 0, 1, 2) rounds after each step
 * (8 significant bits): in the order 0,1,2 it is (256 + 1) + 1, where
 * 257 ties to 256 and so does the next step: 256.  Listed as {1,2,0} the
 * order is (1 + 1) + 256 = 258, exact in bf16. */
static void all_reduce_follows_group_order(void **state) {
  (void)state;
  const char *groups[2] = {"{{0,1,2}}", "{{1,2,0}}"};
  const float sums[2] = {256.0f, 258.0f};
  for (int g = 0; g < 2; g++) {
    char text[512];
    snprintf(text, sizeof text,
             "HloModule m, replica_count=3\nadd {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
             "  ROOT s = bf16[] add(a, b)\n}\nENTRY e {\n  p = bf16[1] parameter(0)\n"
             "  ROOT ar = bf16[1] all-reduce(p), replica_groups=%s, to_apply=add\n}\n",
             groups[g]);
    hlo_module *m = parse(text);
    int64_t d[1] = {1};
    hlo_value *ops[3];
    const double x[3] = {256, 1, 1};
    for (int r = 0; r < 3; r++) {
      ops[r] = hlo_value_array(HLO_BF16, 1, d);
      hlo_value_set_f64(ops[r], 0, x[r]);
    }
    hlo_value *outs[3];
    char why[256];
    assert_int_equal(run(m, 3, ops, NULL, outs, why, sizeof why), 0);
    for (int r = 0; r < 3; r++) {
      if (hlo_value_get_f64(outs[r], 0) != sums[g])
        fail_msg("groups %s, replica %d: %g, want %g", groups[g], r, hlo_value_get_f64(outs[r], 0), sums[g]);
      hlo_value_unref(outs[r]);
    }
    unref_all(ops, 3);
    hlo_module_free(m);
  }
}

/* A reducer that is no simple op, f(a, b) = a * 0.5 + b, folded in group
 * order over 4, 2, 8: f(f(4, 2), 8) = f(4, 8) = 10. */
static void all_reduce_with_a_lane_program(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=3\nf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  h = f32[] constant(0.5)\n  ah = f32[] multiply(a, h)\n  ROOT s = f32[] add(ah, b)\n}\n"
                        "ENTRY e {\n  p = f32[1] parameter(0)\n"
                        "  ROOT ar = f32[1] all-reduce(p), replica_groups={}, to_apply=f\n}\n");
  int64_t d[1] = {1};
  const float x[3][1] = {{4}, {2}, {8}};
  hlo_value *ops[3] = {f32s(1, d, x[0]), f32s(1, d, x[1]), f32s(1, d, x[2])};
  static const float ten[1] = {10};
  const float *want[3] = {ten, ten, ten};
  expect(m, 3, ops, 0, want, 1);
  unref_all(ops, 3);
  hlo_module_free(m);
}

/* Two replicas listed {1,0}, all-gather along dimension 1 of [2,2]
 * operands: both get [x_1 | x_0]. */
static void all_gather_in_group_order(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=2\nENTRY e {\n  p = f32[2,2] parameter(0)\n"
                        "  ROOT ag = f32[2,4] all-gather(p), replica_groups={{1,0}}, dimensions={1}\n}\n");
  int64_t d[2] = {2, 2};
  const float x0[4] = {1, 2, 3, 4}, x1[4] = {5, 6, 7, 8};
  hlo_value *ops[2] = {f32s(2, d, x0), f32s(2, d, x1)};
  static const float both[8] = {5, 6, 1, 2, 7, 8, 3, 4};
  const float *want[2] = {both, both};
  expect(m, 2, ops, 0, want, 8);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Two replicas, x_r = (r + 1) * [1, 2, 3, 4] along dimension 0: the sum is
 * [3, 6, 9, 12]; replica 0 keeps [3, 6], replica 1 [9, 12]. */
static void reduce_scatter_keeps_each_slab(void **state) {
  (void)state;
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m, replica_count=2\n%sENTRY e {\n  p = f32[4,1] parameter(0)\n"
           "  ROOT rs = f32[2,1] reduce-scatter(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add\n}\n",
           ADD);
  hlo_module *m = parse(text);
  int64_t d[2] = {4, 1};
  const float x0[4] = {1, 2, 3, 4}, x1[4] = {2, 4, 6, 8};
  hlo_value *ops[2] = {f32s(2, d, x0), f32s(2, d, x1)};
  static const float w0[2] = {3, 6}, w1[2] = {9, 12};
  const float *want[2] = {w0, w1};
  expect(m, 2, ops, 0, want, 2);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Array form along dimension 0, two replicas: x_0 = [0,1,2,3], x_1 =
 * [10,11,12,13] in chunks of 2.  Replica 0 receives chunk 0 of each
 * ([0,1] and [10,11]), replica 1 chunk 1 of each. */
static void all_to_all_array_form(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=2\nENTRY e {\n  p = f32[4] parameter(0)\n"
                        "  ROOT a = f32[4] all-to-all(p), replica_groups={{0,1}}, dimensions={0}\n}\n");
  int64_t d[1] = {4};
  const float x0[4] = {0, 1, 2, 3}, x1[4] = {10, 11, 12, 13};
  hlo_value *ops[2] = {f32s(1, d, x0), f32s(1, d, x1)};
  static const float w0[4] = {0, 1, 10, 11}, w1[4] = {2, 3, 12, 13};
  const float *want[2] = {w0, w1};
  expect(m, 2, ops, 0, want, 4);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Tuple form, two replicas, operand j of replica r holding 10r + j:
 * result j of the replica at position p is member j's operand p, so
 * replica 0 gets (0, 10) and replica 1 gets (1, 11). */
static void all_to_all_tuple_form(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=2\nENTRY e {\n  p0 = f32[1] parameter(0)\n"
                        "  p1 = f32[1] parameter(1)\n"
                        "  ROOT a = (f32[1], f32[1]) all-to-all(p0, p1), replica_groups={{0,1}}\n}\n");
  int64_t d[1] = {1};
  const float v[4][1] = {{0}, {1}, {10}, {11}};
  hlo_value *ops[4] = {f32s(1, d, v[0]), f32s(1, d, v[1]), f32s(1, d, v[2]), f32s(1, d, v[3])};
  static const float w0[2] = {0, 10}, w1[2] = {1, 11};
  const float *want[2] = {w0, w1};
  expect(m, 2, ops, 2, want, 1);
  unref_all(ops, 4);
  hlo_module_free(m);
}

/* Three replicas, pairs 0->1, 1->2 and 2->5 (replica 5 does not run: the
 * pair is ignored): replica 0 is no target and gets zeros, 1 gets x_0,
 * 2 gets x_1. */
static void collective_permute_moves_and_zeroes(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=3\nENTRY e {\n  p = f32[3] parameter(0)\n"
                        "  ROOT cp = f32[3] collective-permute(p), source_target_pairs={{0,1},{1,2},{2,5}}\n}\n");
  int64_t d[1] = {3};
  const float x[3][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  hlo_value *ops[3] = {f32s(1, d, x[0]), f32s(1, d, x[1]), f32s(1, d, x[2])};
  static const float zero[3] = {0, 0, 0};
  const float *want[3] = {zero, x[0], x[1]};
  expect(m, 3, ops, 0, want, 3);
  unref_all(ops, 3);
  hlo_module_free(m);
}

static void expect_error(const char *text, int nrep, const char *what) {
  hlo_module *m = parse(text);
  int64_t d[1] = {2};
  const float x[2] = {1, 2};
  hlo_value *ops[4], *outs[4];
  for (int r = 0; r < nrep; r++)
    ops[r] = f32s(1, d, x);
  char why[256];
  assert_int_equal(run(m, nrep, ops, NULL, outs, why, sizeof why), -1);
  for (int r = 0; r < nrep; r++)
    assert_null(outs[r]);
  if (!strstr(why, what))
    fail_msg("message '%s' does not say '%s'", why, what);
  unref_all(ops, nrep);
  hlo_module_free(m);
}

static void bad_groups_are_errors(void **state) {
  (void)state;
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m, replica_count=3\n%sENTRY e {\n  p = f32[2] parameter(0)\n"
           "  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n}\n",
           ADD);
  expect_error(text, 3, "replica 2 is in no replica group");
  snprintf(text, sizeof text,
           "HloModule m, replica_count=2\n%sENTRY e {\n  p = f32[2] parameter(0)\n"
           "  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,7}}, to_apply=add\n}\n",
           ADD);
  expect_error(text, 2, "names replica 7 but only 2 replicas run");
}

/* Four replicas, groups {2,0} and {3}; replica 1 is in none.  The first
 * listed member is the source: replicas 2 and 0 get x_2, replica 3 its
 * own x_3, replica 1 zeros.  Two operands, so each result is a pair:
 * (x_src, y_src) with x_r = {3r+1, 3r+2, 3r+3} and y_r = -x_r. */
static void collective_broadcast_from_first_member(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=4\nENTRY e {\n  p = f32[3] parameter(0)\n"
                        "  q = f32[3] parameter(1)\n"
                        "  ROOT cb = (f32[3], f32[3]) collective-broadcast(p, q), replica_groups={{2,0},{3}}\n}\n");
  assert_true(dev_collective_lowers(m->entry->root));
  int64_t d[1] = {3};
  float x[4][3], y[4][3];
  hlo_value *ops[8];
  for (int r = 0; r < 4; r++) {
    for (int i = 0; i < 3; i++) {
      x[r][i] = (float)(3 * r + i + 1);
      y[r][i] = -x[r][i];
    }
    ops[2 * r] = f32s(1, d, x[r]);
    ops[2 * r + 1] = f32s(1, d, y[r]);
  }
  const float from2[6] = {7, 8, 9, -7, -8, -9}, from3[6] = {10, 11, 12, -10, -11, -12}, zero[6] = {0};
  const float *want[4] = {from2, zero, from2, from3};
  expect(m, 4, ops, 2, want, 3);
  unref_all(ops, 8);
  hlo_module_free(m);
  /* a group naming a replica that does not run is an error, as for the
   * other collectives */
  expect_error("HloModule m, replica_count=2\nENTRY e {\n  p = f32[2] parameter(0)\n"
               "  ROOT cb = f32[2] collective-broadcast(p), replica_groups={{0,7}}\n}\n",
               2, "names replica 7 but only 2 replicas run");
}

/* The ragged-all-to-all case worked by hand (also in test_eval_collective):
 * replicas 2, 0, 1 in that group order, two updates per member, rows of
 * `cols` values.  Replica q's input row i holds 100q + 10i + c and its
 * output operand row i holds -(100q + 10i + c) - 1 (c the column; rank 1
 * is column 0 alone).  Metadata per sender, entries e = 2j + u for the
 * member at position j (replica 2, 0, 1 for j = 0, 1, 2):
 *   sender 0: in_off {0,0, 1,0, 0,0} size {0,0, 1,-3, 0,0} out_off {0,0, 1,0, 0,0}
 *   sender 1: in_off {1,0, -1,2, 0,0} size {2,0, 2,1, 0,0} out_off {-1,0, 2,0, 0,0}
 *   sender 2: in_off {0,0, 0,3, 0,0} size {0,0, 2,5, 5,1} out_off {0,0, 0,4, 0,2}
 * Replica 0 (position 1) reads entries 2 and 3 of every sender:
 *   sender 2 (position 0): rows 0,1 <- x2 rows 0,1; then row 4 <- x2 row 3
 *     (5 rows from input row 3 to output row 4: only one fits both);
 *   sender 0 (position 1): row 1 <- x0 row 1 (later sender: overwrites);
 *     size -3 sends nothing;
 *   sender 1 (position 2): rows from input row -1: the first falls outside,
 *     the second puts x1 row 0 at row 3; then row 0 <- x1 row 2 (overwrites).
 *   => rows {x1[2], x0[1], o0[2], x1[0], x2[3]}.
 * Replica 1 (position 2), entries 4 and 5: sender 2 sends 5 rows from 0 to
 *   0, of which 4 exist, then its row 0 again to row 2 (the later update
 *   wins) => {x2[0], x2[1], x2[0], x2[3], o1[4]}: rows 1 and 2 come from
 *   one replica but not from consecutive rows.
 * Replica 2 (position 0), entries 0 and 1: sender 1 sends 2 rows from 1 to
 *   -1; only the second lands: row 0 <- x1 row 2 => {x1[2], o2[1..4]}. */
static const int32_t ragged_meta[3][3][6] = {
    /* in_off, size, out_off of sender 0, 1, 2 */
    {{0, 0, 1, 0, 0, 0}, {0, 0, 1, -3, 0, 0}, {0, 0, 1, 0, 0, 0}},
    {{1, 0, -1, 2, 0, 0}, {2, 0, 2, 1, 0, 0}, {-1, 0, 2, 0, 0, 0}},
    {{0, 0, 0, 3, 0, 0}, {0, 0, 2, 5, 5, 1}, {0, 0, 0, 4, 0, 2}},
};

static float ragged_x(int q, int i, int c) { return (float)(100 * q + 10 * i + c); }
static float ragged_o(int q, int i, int c) { return -(float)(100 * q + 10 * i + c) - 1; }

static void ragged_case(int cols) {
  char text[600];
  char row[8] = "";
  if (cols > 1)
    snprintf(row, sizeof row, ",%d", cols);
  snprintf(text, sizeof text,
           "HloModule m, replica_count=3\nENTRY e {\n  x = f32[4%s] parameter(0)\n  o = f32[5%s] parameter(1)\n"
           "  io = s32[6] parameter(2)\n  ss = s32[6] parameter(3)\n  oo = s32[6] parameter(4)\n"
           "  rs = s32[6] parameter(5)\n"
           "  ROOT ra = f32[5%s] ragged-all-to-all(x, o, io, ss, oo, rs), replica_groups={{2,0,1}}\n}\n",
           row, row, row);
  hlo_module *m = parse(text);
  assert_true(dev_collective_lowers(m->entry->root));
  hlo_value *ops[18];
  int64_t dx[2] = {4, cols}, dout[2] = {5, cols}, dm[1] = {6};
  int rank = cols > 1 ? 2 : 1;
  for (int q = 0; q < 3; q++) {
    float x[4 * 2], o[5 * 2];
    for (int i = 0; i < 5; i++)
      for (int c = 0; c < cols; c++) {
        if (i < 4)
          x[i * cols + c] = ragged_x(q, i, c);
        o[i * cols + c] = ragged_o(q, i, c);
      }
    ops[6 * q] = f32s(rank, dx, x);
    ops[6 * q + 1] = f32s(rank, dout, o);
    for (int k = 0; k < 4; k++) {
      ops[6 * q + 2 + k] = hlo_value_array(HLO_S32, 1, dm);
      assert_non_null(ops[6 * q + 2 + k]);
      if (k < 3)
        memcpy(ops[6 * q + 2 + k]->data, ragged_meta[q][k], sizeof ragged_meta[q][k]);
    }
  }
  /* rows[r][i]: {source replica, its row}, -1 for the replica's own output */
  const int src[3][5][2] = {
      {{1, 2}, {0, 1}, {-1, 2}, {1, 0}, {2, 3}},
      {{2, 0}, {2, 1}, {2, 0}, {2, 3}, {-1, 4}},
      {{1, 2}, {-1, 1}, {-1, 2}, {-1, 3}, {-1, 4}},
  };
  float want[3][10];
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < 5; i++)
      for (int c = 0; c < cols; c++)
        want[r][i * cols + c] = src[r][i][0] < 0 ? ragged_o(r, i, c) : ragged_x(src[r][i][0], src[r][i][1], c);
  const float *w[3] = {want[0], want[1], want[2]};
  expect(m, 3, ops, 0, w, 5 * cols);
  unref_all(ops, 18);
  hlo_module_free(m);
}

/* ragged-all-to-all: rows of two values, and rank 1, where a run along the
 * last dimension crosses rows and must stop where its source changes. */
static void ragged_all_to_all_by_hand(void **state) {
  (void)state;
  ragged_case(2);
  ragged_case(1);
}

/* Complex values: an all-gather of c64 and an all-to-all of c128 carry each
 * (real, imaginary) pair whole; an all-reduce sums them part by part; any
 * other complex reducer runs as a complex lane program (above). */
/* Any other complex reducer runs as a complex lane program (dev_lane.h),
 * each complex value two parts.
 *   multiply over 4 replicas, in group order ((z0 z1) z2) z3, with XLA's
 *   (ac - bd) + (ad + bc)i: element 0 is 1 + ri on replica r: (1)(1 + i) =
 *   1 + i; (1 + i)(1 + 2i) = -1 + 3i; (-1 + 3i)(1 + 3i) = (-1 - 9) + (-3 +
 *   3)i = -10 + 0i.  Element 1 is 0.5 + 0.5i everywhere: squared 0.5i,
 *   then -0.25 + 0.25i, then (-0.125 - 0.125) + (-0.125 + 0.125)i = -0.25.
 *   reduce-scatter over 2 replicas with a reducer that calls a complex
 *   add: element i of replica r is (10r + i) - i i; the sums are (10 + 2i)
 *   - 2i i, and replica 0 keeps elements 0 and 1, replica 1 elements 2 and 3.
 * A complex divide has no lane form: that reducer is left to the host. */
static void complex_reducers_as_lane_programs(void) {
  const dev_config *cfgs[2] = {tiny(), NULL};
  hlo_module *m = parse("HloModule m, replica_count=4\nmul {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
                        "  ROOT s = c64[] multiply(a, b)\n}\nENTRY e {\n  p = c64[2] parameter(0)\n"
                        "  ROOT r = c64[2] all-reduce(p), replica_groups={{0,1,2,3}}, to_apply=mul\n}\n");
  assert_true(dev_collective_lowers(m->entry->root));
  int64_t d2[1] = {2}, d4[1] = {4};
  hlo_value *ops[4];
  for (int r = 0; r < 4; r++) {
    ops[r] = hlo_value_array(HLO_C64, 1, d2);
    assert_non_null(ops[r]);
    float *v = ops[r]->data;
    v[0] = 1;
    v[1] = (float)r;
    v[2] = 0.5f;
    v[3] = 0.5f;
  }
  for (int c = 0; c < 2; c++) {
    hlo_value *outs[4];
    char why[256];
    if (run(m, 4, ops, cfgs[c], outs, why, sizeof why) != 0)
      fail_msg("all-reduce c64 multiply: %s", why);
    for (int r = 0; r < 4; r++) {
      const float *o = outs[r]->data;
      if (o[0] != -10.0f || o[1] != 0.0f || o[2] != -0.25f || o[3] != 0.0f)
        fail_msg("replica %d: (%g, %g) (%g, %g)", r, o[0], o[1], o[2], o[3]);
      hlo_value_unref(outs[r]);
    }
  }
  unref_all(ops, 4);
  hlo_module_free(m);

  m = parse("HloModule m, replica_count=2\nsum {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
            "  ROOT s = c64[] add(a, b)\n}\nviacall {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
            "  ROOT s = c64[] call(a, b), to_apply=sum\n}\nENTRY e {\n  p = c64[4] parameter(0)\n"
            "  ROOT r = c64[2] reduce-scatter(p), replica_groups={{0,1}}, dimensions={0}, to_apply=viacall\n}\n");
  assert_true(dev_collective_lowers(m->entry->root));
  for (int r = 0; r < 2; r++) {
    ops[r] = hlo_value_array(HLO_C64, 1, d4);
    assert_non_null(ops[r]);
    float *v = ops[r]->data;
    for (int i = 0; i < 4; i++) {
      v[2 * i] = (float)(10 * r + i);
      v[2 * i + 1] = (float)-i; /* +0 for i = 0: the sum keeps its sign */
    }
  }
  const float want[2][4] = {{10, 0, 12, -2}, {14, -4, 16, -6}};
  for (int c = 0; c < 2; c++) {
    hlo_value *outs[2];
    char why[256];
    if (run(m, 2, ops, cfgs[c], outs, why, sizeof why) != 0)
      fail_msg("reduce-scatter c64 via call: %s", why);
    for (int r = 0; r < 2; r++) {
      assert_int_equal(outs[r]->count, 2);
      assert_memory_equal(outs[r]->data, want[r], sizeof want[r]);
      hlo_value_unref(outs[r]);
    }
  }
  unref_all(ops, 2);
  hlo_module_free(m);

  m = parse("HloModule m, replica_count=2\ndiv {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
            "  ROOT s = c64[] divide(a, b)\n}\nENTRY e {\n  p = c64[2] parameter(0)\n"
            "  ROOT r = c64[2] all-reduce(p), replica_groups={{0,1}}, to_apply=div\n}\n");
  assert_false(dev_collective_lowers(m->entry->root));
  hlo_module_free(m);
}

static void complex_values_move_whole(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m, replica_count=2\nENTRY e {\n  p = c64[2] parameter(0)\n"
                        "  ROOT g = c64[4] all-gather(p), replica_groups={{1,0}}, dimensions={0}\n}\n");
  assert_true(dev_collective_lowers(m->entry->root));
  int64_t d2[1] = {2};
  hlo_value *ops[2];
  for (int r = 0; r < 2; r++) {
    ops[r] = hlo_value_array(HLO_C64, 1, d2);
    assert_non_null(ops[r]);
    float *v = ops[r]->data; /* element i of replica r: (10r + i) + (-10r - i - 0.5) i */
    for (int i = 0; i < 2; i++) {
      v[2 * i] = (float)(10 * r + i);
      v[2 * i + 1] = -(float)(10 * r + i) - 0.5f;
    }
  }
  /* group {1,0}: replica 1's pair of elements first, then replica 0's */
  const float want[8] = {10, -10.5f, 11, -11.5f, 0, -0.5f, 1, -1.5f};
  const dev_config *cfgs[2] = {tiny(), NULL};
  for (int c = 0; c < 2; c++) {
    hlo_value *outs[2];
    char why[256];
    if (run(m, 2, ops, cfgs[c], outs, why, sizeof why) != 0)
      fail_msg("all-gather c64: %s", why);
    for (int r = 0; r < 2; r++) {
      assert_int_equal(outs[r]->count, 4);
      assert_memory_equal(outs[r]->data, want, sizeof want);
      hlo_value_unref(outs[r]);
    }
  }
  unref_all(ops, 2);
  hlo_module_free(m);

  m = parse("HloModule m, replica_count=2\nENTRY e {\n  p = c128[2] parameter(0)\n"
            "  ROOT a = c128[2] all-to-all(p), replica_groups={{0,1}}, dimensions={0}\n}\n");
  assert_true(dev_collective_lowers(m->entry->root));
  for (int r = 0; r < 2; r++) {
    ops[r] = hlo_value_array(HLO_C128, 1, d2);
    assert_non_null(ops[r]);
    double *v = ops[r]->data;
    for (int i = 0; i < 2; i++) {
      v[2 * i] = 10 * r + i;
      v[2 * i + 1] = 0.25 + 10 * r + i;
    }
  }
  /* chunk j of every replica goes to member j: replica 0 gets element 0 of
   * replicas 0 and 1, replica 1 gets their element 1 */
  const double want0[4] = {0, 0.25, 10, 10.25}, want1[4] = {1, 1.25, 11, 11.25};
  for (int c = 0; c < 2; c++) {
    hlo_value *outs[2];
    char why[256];
    if (run(m, 2, ops, cfgs[c], outs, why, sizeof why) != 0)
      fail_msg("all-to-all c128: %s", why);
    assert_memory_equal(outs[0]->data, want0, sizeof want0);
    assert_memory_equal(outs[1]->data, want1, sizeof want1);
    hlo_value_unref(outs[0]);
    hlo_value_unref(outs[1]);
  }
  unref_all(ops, 2);
  hlo_module_free(m);

  /* A complex sum adds the parts in the parts' precision, in group order:
   * real parts 1e8, 1, -1e8 give 0 in f32 (1e8 + 1 rounds back to 1e8:
   * f32's spacing there is 8) and 1 in f64; imaginary parts 0.5 + 0.25 +
   * 0.125 = 0.875 in both. */
  for (int wide = 0; wide < 2; wide++) {
    char text[400];
    const char *ct = wide ? "c128" : "c64";
    snprintf(text, sizeof text,
             "HloModule m, replica_count=3\nsum {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n"
             "  ROOT s = %s[] add(a, b)\n}\nENTRY e {\n  p = %s[1] parameter(0)\n"
             "  ROOT r = %s[1] all-reduce(p), replica_groups={{0,1,2}}, to_apply=sum\n}\n",
             ct, ct, ct, ct, ct);
    m = parse(text);
    assert_true(dev_collective_lowers(m->entry->root));
    int64_t d1[1] = {1};
    const double re[3] = {1e8, 1, -1e8}, im[3] = {0.5, 0.25, 0.125};
    hlo_value *three[3];
    for (int r = 0; r < 3; r++) {
      three[r] = hlo_value_array(wide ? HLO_C128 : HLO_C64, 1, d1);
      assert_non_null(three[r]);
      if (wide) {
        ((double *)three[r]->data)[0] = re[r];
        ((double *)three[r]->data)[1] = im[r];
      } else {
        ((float *)three[r]->data)[0] = (float)re[r];
        ((float *)three[r]->data)[1] = (float)im[r];
      }
    }
    for (int c = 0; c < 2; c++) {
      hlo_value *outs[3];
      char why[256];
      if (run(m, 3, three, cfgs[c], outs, why, sizeof why) != 0)
        fail_msg("all-reduce %s: %s", ct, why);
      for (int r = 0; r < 3; r++) {
        double got_re = wide ? ((double *)outs[r]->data)[0] : ((float *)outs[r]->data)[0];
        double got_im = wide ? ((double *)outs[r]->data)[1] : ((float *)outs[r]->data)[1];
        assert_true(got_re == (wide ? 1.0 : 0.0));
        assert_true(got_im == 0.875);
        hlo_value_unref(outs[r]);
      }
    }
    unref_all(three, 3);
    hlo_module_free(m);
  }
  complex_reducers_as_lane_programs();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(all_reduce_within_groups),       cmocka_unit_test(all_reduce_follows_group_order),
      cmocka_unit_test(all_reduce_with_a_lane_program), cmocka_unit_test(all_gather_in_group_order),
      cmocka_unit_test(reduce_scatter_keeps_each_slab), cmocka_unit_test(all_to_all_array_form),
      cmocka_unit_test(all_to_all_tuple_form),          cmocka_unit_test(collective_permute_moves_and_zeroes),
      cmocka_unit_test(bad_groups_are_errors),          cmocka_unit_test(collective_broadcast_from_first_member),
      cmocka_unit_test(ragged_all_to_all_by_hand),       cmocka_unit_test(complex_values_move_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
