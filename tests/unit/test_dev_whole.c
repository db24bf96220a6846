/* test_dev_whole.c — the device's own lowering of gather, scatter, sort,
 * dynamic-slice, dynamic-update-slice, reduce-window and convolution
 * (dev_whole.h) against hand-computed values: clamped gather starts,
 * reduce-window tiles with halos, a small convolution, scatter windows combined in
 * index order and skipped when they do not fit, a stable sort of ties cut
 * into blocks, a map through a lane program, and the three defects that live in this lowering
 * (dynslice-clamp-lost, sort-lane-index, scatter-s8-iota-wrap), each with
 * its clean twin.  Every case runs with a config whose tile cuts the op into
 * several tiles and with no config (one tile): both must give the same
 * values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_defect.h"
#include "device/dev_whole.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  return m;
}

static dev_config config(const char *text) {
  dev_config c;
  hlo_error err;
  if (dev_config_parse(text, &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  return c;
}

static hlo_value *f32s(int rank, const int64_t *dims, const float *v) {
  hlo_value *a = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(a);
  memcpy(a->data, v, (size_t)a->count * sizeof *v);
  return a;
}

static hlo_value *ints(hlo_etype t, int rank, const int64_t *dims, const int64_t *v) {
  hlo_value *a = hlo_value_array(t, rank, dims);
  assert_non_null(a);
  for (int64_t i = 0; i < a->count; i++)
    hlo_value_set_i64(a, i, v[i]);
  return a;
}

/* Runs the entry root on ops; returns the result (one reference). */
static hlo_value *run(const hlo_module *m, hlo_value **ops, const dev_config *cfg, uint32_t defects) {
  char why[256] = "";
  dev_whole_ctx ctx = {cfg, defects, why, sizeof why};
  hlo_value *out = NULL;
  int rc = dev_whole_run(m->entry->root, ops, &ctx, &out);
  if (rc != 0)
    fail_msg("dev_whole_run: %d %s", rc, why);
  return out;
}

static void expect_f32(const hlo_value *v, const float *want, int64_t n) {
  assert_int_equal(v->type, HLO_F32);
  assert_int_equal(v->count, n);
  for (int64_t i = 0; i < n; i++)
    if (((const float *)v->data)[i] != want[i])
      fail_msg("element %lld: %g, want %g", (long long)i, ((const float *)v->data)[i], want[i]);
}

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

/* Rows 3, -1 and 9 of a [4,2] table: starts clamp to [0, 3]. */
static void gather_clamps_starts(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule g\nENTRY e {\n  p0 = f32[4,2] parameter(0)\n  p1 = s32[3,1] parameter(1)\n"
                        "  ROOT g = f32[3,2] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
                        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}\n}\n");
  int64_t d0[2] = {4, 2}, d1[2] = {3, 1};
  float table[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t ids[3] = {3, -1, 9};
  hlo_value *ops[2] = {f32s(2, d0, table), ints(HLO_S32, 2, d1, ids)};
  static const float want[6] = {6, 7, 0, 1, 6, 7};
  dev_config tiny = config("tile=1x1 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  hlo_value *a = run(m, ops, &tiny, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 6);
  expect_f32(b, want, 6);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Runs gather text on a [4,5] table (element r,c = 10r + c) and index
 * array ids of dims di, once tiled by cfg and once whole, and checks both
 * against want. */
static void gather_expect(const char *text, const int64_t *di, const int64_t *ids, const char *cfg,
                          const float *want, int64_t n) {
  hlo_module *m = parse(text);
  int64_t d0[2] = {4, 5};
  float table[20];
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 5; c++)
      table[r * 5 + c] = (float)(10 * r + c);
  hlo_value *ops[2] = {f32s(2, d0, table), ints(HLO_S32, 2, di, ids)};
  dev_config tiled = config(cfg);
  hlo_value *a = run(m, ops, &tiled, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, n);
  expect_f32(b, want, n);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Two-component index vectors naming the dims in reverse order
 * (start_index_map={1,0}), [2,3] windows, nothing collapsed.  Vector
 * (3, 1): dim 1 starts at 3, clamped to 5 - 3 = 2, dim 0 at 1; vector
 * (-4, 7): dim 1 at 0, dim 0 at 7 clamped to 4 - 2 = 2.  The vectors are
 * the rows of the index array (index_vector_dim=1) or its columns (0). */
static void gather_vector_starts_and_windows(void **state) {
  (void)state;
  static const float want[12] = {12, 13, 14, 22, 23, 24, 20, 21, 22, 30, 31, 32};
  int64_t di[2] = {2, 2};
  int64_t rows[4] = {3, 1, -4, 7}, cols[4] = {3, -4, 1, 7};
  const char *head = "HloModule g\nENTRY e {\n  p0 = f32[4,5] parameter(0)\n  p1 = s32[2,2] parameter(1)\n"
                     "  ROOT g = f32[2,2,3] gather(p0, p1), offset_dims={1,2}, collapsed_slice_dims={}, "
                     "start_index_map={1,0}, slice_sizes={2,3}, index_vector_dim=";
  char text[512];
  snprintf(text, sizeof text, "%s1\n}\n", head);
  gather_expect(text, di, rows, "tile=1x2x2 k=0 buf=2 order=012 pack=1 prec=default flags=none", want, 12);
  snprintf(text, sizeof text, "%s0\n}\n", head);
  gather_expect(text, di, cols, "tile=2x1x3 k=0 buf=2 order=012 pack=1 prec=default flags=none", want, 12);
}

/* A batching dim: operand dim 0 is the batch (4 of them), index row b
 * gives batch b's start along dim 1 (a slice 2 wide, so clamped to
 * [0, 3]): batch 0 at 1, batch 1 at 9 -> 3, batch 2 at -2 -> 0, batch 3
 * at 2.  (The device forms this address in its general way.) */
static void gather_batching_dims(void **state) {
  (void)state;
  static const float want[8] = {1, 2, 13, 14, 20, 21, 32, 33};
  int64_t di[2] = {4, 1};
  int64_t ids[4] = {1, 9, -2, 2};
  gather_expect("HloModule g\nENTRY e {\n  p0 = f32[4,5] parameter(0)\n  p1 = s32[4,1] parameter(1)\n"
                "  ROOT g = f32[4,2] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={}, "
                "operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, "
                "index_vector_dim=1, slice_sizes={1,2}\n}\n",
                di, ids, "tile=3x1 k=0 buf=2 order=01 pack=1 prec=default flags=none", want, 8);
}

static const char *SCATTER_ROWS =
    "HloModule s\nadd {\n  a = f32[] parameter(0)\n  u = f32[] parameter(1)\n  ROOT s = f32[] add(a, u)\n}\n"
    "ENTRY e {\n  p0 = f32[3,2] parameter(0)\n  p1 = s32[3,1] parameter(1)\n  p2 = f32[3,2] parameter(2)\n"
    "  ROOT s = f32[3,2] scatter(p0, p1, p2), update_window_dims={1}, inserted_window_dims={0}, "
    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";

/* Rows at 1, 1 and 5 of a [3,2] zero array: the repeated row sums both
 * updates, the window at 5 does not fit and is skipped. */
static void scatter_combines_in_order_and_skips(void **state) {
  (void)state;
  hlo_module *m = parse(SCATTER_ROWS);
  int64_t d[2] = {3, 2}, di[2] = {3, 1};
  float zero[6] = {0}, upd[6] = {1, 2, 3, 4, 5, 6};
  int64_t ids[3] = {1, 1, 5};
  hlo_value *ops[3] = {f32s(2, d, zero), ints(HLO_S32, 2, di, ids), f32s(2, d, upd)};
  static const float want[6] = {0, 0, 4, 6, 0, 0};
  dev_config tiny = config("tile=1x2 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  hlo_value *a = run(m, ops, &tiny, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 6);
  expect_f32(b, want, 6);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 3);
  hlo_module_free(m);
}

/* A combiner that is not a simple reducer runs as a lane program:
 * a - u*u, applied at index 0 twice: 10 - 4 - 9 = -3. */
static void scatter_general_combiner(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule s\ncomb {\n  a = s32[] parameter(0)\n  u = s32[] parameter(1)\n"
                        "  q = s32[] multiply(u, u)\n  ROOT s = s32[] subtract(a, q)\n}\n"
                        "ENTRY e {\n  p0 = s32[2] parameter(0)\n  p1 = s32[2,1] parameter(1)\n  p2 = s32[2] parameter(2)\n"
                        "  ROOT s = s32[2] scatter(p0, p1, p2), update_window_dims={}, inserted_window_dims={0}, "
                        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb\n}\n");
  int64_t d[1] = {2}, di[2] = {2, 1};
  int64_t op[2] = {10, 10}, ids[2] = {0, 0}, upd[2] = {2, 3};
  hlo_value *ops[3] = {ints(HLO_S32, 1, d, op), ints(HLO_S32, 2, di, ids), ints(HLO_S32, 1, d, upd)};
  hlo_value *a = run(m, ops, NULL, 0);
  assert_int_equal(hlo_value_get_i64(a, 0), -3);
  assert_int_equal(hlo_value_get_i64(a, 1), 10);
  hlo_value_unref(a);
  unref_all(ops, 3);
  hlo_module_free(m);
}

#define SORT_KV \
    "HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n" \
    "  d = s32[] parameter(3)\n  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"                       \
    "ENTRY e {\n  p0 = f32[%d,1] parameter(0)\n  p1 = s32[%d,1] parameter(1)\n"                              \
    "  ROOT s = (f32[%d,1], s32[%d,1]) sort(p0, p1), dimensions={0}, is_stable=false, to_apply=cmp\n}\n"

static hlo_module *sort_module(int n) {
  char text[1024];
  snprintf(text, sizeof text, SORT_KV, n, n, n, n);
  return parse(text);
}

/* Keys 2 1 2 1 0 2 with their positions: ties keep input order, also when
 * the line is cut into blocks of 2 and merged. */
static void sort_is_stable_across_blocks(void **state) {
  (void)state;
  hlo_module *m = sort_module(6);
  int64_t d[2] = {6, 1};
  float keys[6] = {2, 1, 2, 1, 0, 2};
  int64_t pos[6] = {0, 1, 2, 3, 4, 5};
  hlo_value *ops[2] = {f32s(2, d, keys), ints(HLO_S32, 2, d, pos)};
  static const float wk[6] = {0, 1, 1, 2, 2, 2};
  static const int64_t wp[6] = {4, 1, 3, 0, 2, 5};
  dev_config blocks = config("tile=2x1 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  for (int pass = 0; pass < 2; pass++) {
    hlo_value *r = run(m, ops, pass ? NULL : &blocks, 0);
    assert_int_equal(r->type, HLO_TUPLE);
    expect_f32(r->elems[0], wk, 6);
    for (int i = 0; i < 6; i++)
      assert_int_equal(hlo_value_get_i64(r->elems[1], i), wp[i]);
    hlo_value_unref(r);
  }
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* Keys 255 - p along a major axis of 256 = 2*128, sorted ascending with
 * two-stage-sort: output j holds key j, from input position p = 255 - j.
 * Clean, the carried position is p.  With sort-lane-index it is rebuilt
 * from (row m = p / 128, lane l = p % 128) as m + l*M, M = 2: for j = 1,
 * p = 254, m = 1, l = 126, so 1 + 252 = 253; the keys stay right. */
static void sort_lane_index_defect(void **state) {
  (void)state;
  hlo_module *m = sort_module(256);
  int64_t d[2] = {256, 1};
  float keys[256];
  int64_t pos[256];
  for (int p = 0; p < 256; p++)
    keys[p] = (float)(255 - p), pos[p] = p;
  hlo_value *ops[2] = {f32s(2, d, keys), ints(HLO_S32, 2, d, pos)};
  dev_config two = config("tile=256x1 k=0 buf=2 order=01 pack=1 prec=default flags=two-stage-sort");
  hlo_value *clean = run(m, ops, &two, 0);
  hlo_value *bad = run(m, ops, &two, 1u << DEV_DEFECT_SORT_LANE_INDEX);
  for (int j = 0; j < 256; j++) {
    assert_true(((float *)clean->elems[0]->data)[j] == (float)j);
    assert_true(((float *)bad->elems[0]->data)[j] == (float)j);
    assert_int_equal(hlo_value_get_i64(clean->elems[1], j), 255 - j);
  }
  assert_int_equal(hlo_value_get_i64(bad->elems[1], 1), 253);
  assert_int_equal(hlo_value_get_i64(bad->elems[1], 0), 255); /* m=1, l=127: 1 + 254 */
  hlo_value_unref(clean);
  hlo_value_unref(bad);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* A slice of 2 of {0 1 2 3 4} at start 4: clamped to 3 gives {3 4}; with
 * dynslice-clamp-lost the start stays 4 and the address wraps: {4 0}. */
static void dynamic_slice_clamp(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule d\nENTRY e {\n  p0 = f32[5] parameter(0)\n  p1 = s32[] parameter(1)\n"
                        "  ROOT d = f32[2] dynamic-slice(p0, p1), dynamic_slice_sizes={2}\n}\n");
  int64_t d[1] = {5};
  float v[5] = {0, 1, 2, 3, 4};
  int64_t four = 4;
  hlo_value *ops[2] = {f32s(1, d, v), ints(HLO_S32, 0, NULL, &four)};
  dev_config one = config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  static const float clean_want[2] = {3, 4}, lost_want[2] = {4, 0};
  hlo_value *a = run(m, ops, &one, 0), *b = run(m, ops, &one, 1u << DEV_DEFECT_DYNSLICE_CLAMP_LOST);
  expect_f32(a, clean_want, 2);
  expect_f32(b, lost_want, 2);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* An update {7 8} into five zeros at start -1: clamped to 0 gives
 * {7 8 0 0 0}; unclamped it lands at positions 4 and 0: {8 0 0 0 7}. */
static void dynamic_update_slice_clamp(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule d\nENTRY e {\n  p0 = f32[5] parameter(0)\n  p1 = f32[2] parameter(1)\n"
                        "  p2 = s32[] parameter(2)\n  ROOT d = f32[5] dynamic-update-slice(p0, p1, p2)\n}\n");
  int64_t d[1] = {5}, du[1] = {2};
  float zero[5] = {0}, u[2] = {7, 8};
  int64_t start = -1;
  hlo_value *ops[3] = {f32s(1, d, zero), f32s(1, du, u), ints(HLO_S32, 0, NULL, &start)};
  dev_config one = config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  static const float clean_want[5] = {7, 8, 0, 0, 0}, lost_want[5] = {8, 0, 0, 0, 7};
  hlo_value *a = run(m, ops, &one, 0), *b = run(m, ops, &one, 1u << DEV_DEFECT_DYNSLICE_CLAMP_LOST);
  expect_f32(a, clean_want, 5);
  expect_f32(b, lost_want, 5);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 3);
  hlo_module_free(m);
}

/* A singleton "set" of 1 at s8 index 5 into 300 zeros with vec-scatter:
 * clean, only position 5 is set; with scatter-s8-iota-wrap the s8 iota
 * wraps, so 5 + 256 = 261 is set too.  A negative index -3 sets nothing
 * clean, and 253 (= -3 + 256) with the defect. */
static void vec_scatter_iota_wrap(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule s\nset {\n  a = f32[] parameter(0)\n  ROOT u = f32[] parameter(1)\n}\n"
                        "ENTRY e {\n  p0 = f32[300] parameter(0)\n  p1 = s8[1] parameter(1)\n  p2 = f32[] parameter(2)\n"
                        "  ROOT s = f32[300] scatter(p0, p1, p2), update_window_dims={}, inserted_window_dims={0}, "
                        "scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=set\n}\n");
  int64_t d[1] = {300}, di[1] = {1};
  float zero[300] = {0}, one = 1;
  dev_config vec = config("tile=128 k=0 buf=2 order=0 pack=1 prec=default flags=vec-scatter");
  static const int64_t idx[2] = {5, -3};
  static const int expect_clean[2][2] = {{5, -1}, {-1, -1}}, expect_bad[2][2] = {{5, 261}, {253, -1}};
  for (int c = 0; c < 2; c++) {
    hlo_value *ops[3] = {f32s(1, d, zero), ints(HLO_S8, 1, di, &idx[c]), f32s(0, NULL, &one)};
    for (int bad = 0; bad < 2; bad++) {
      hlo_value *r = run(m, ops, &vec, bad ? 1u << DEV_DEFECT_SCATTER_S8_IOTA_WRAP : 0);
      const int *want = bad ? expect_bad[c] : expect_clean[c];
      for (int i = 0; i < 300; i++) {
        float w = i == want[0] || i == want[1] ? 1.0f : 0.0f;
        if (((float *)r->data)[i] != w)
          fail_msg("index %lld, defect %d: element %d is %g, want %g", (long long)idx[c], bad, i,
                   ((float *)r->data)[i], w);
      }
      hlo_value_unref(r);
    }
    unref_all(ops, 3);
  }
  hlo_module_free(m);
}

/* A cumulative sum of {1 2 3 4} (size 4, pad 3_0) gives {1 3 6 10}, one
 * output per tile, each tile reading its own halo; and a max of
 * {3 1 4 1 5} over windows of 2 with stride 2 and pad 0_1 gives {3 4 5}. */
static void reduce_window_halos(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule w\nadd {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, x)\n}\nENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[] parameter(1)\n"
                        "  ROOT w = f32[4] reduce-window(p0, p1), window={size=4 pad=3_0}, to_apply=add\n}\n");
  int64_t d[1] = {4};
  float v[4] = {1, 2, 3, 4}, zero = 0;
  hlo_value *ops[2] = {f32s(1, d, v), f32s(0, NULL, &zero)};
  dev_config one = config("tile=1 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  static const float want[4] = {1, 3, 6, 10};
  hlo_value *a = run(m, ops, &one, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 4);
  expect_f32(b, want, 4);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);

  m = parse("HloModule w\nmax {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n"
            "  ROOT s = f32[] maximum(a, x)\n}\nENTRY e {\n  p0 = f32[5] parameter(0)\n  p1 = f32[] parameter(1)\n"
            "  ROOT w = f32[3] reduce-window(p0, p1), window={size=2 stride=2 pad=0_1}, to_apply=max\n}\n");
  int64_t d5[1] = {5};
  float v5[5] = {3, 1, 4, 1, 5}, ninf = -1.0f / 0.0f;
  hlo_value *ops5[2] = {f32s(1, d5, v5), f32s(0, NULL, &ninf)};
  static const float want5[3] = {3, 4, 5};
  a = run(m, ops5, &one, 0);
  expect_f32(a, want5, 3);
  hlo_value_unref(a);
  unref_all(ops5, 2);
  hlo_module_free(m);
}

/* A 1-D convolution of {1 2 3 4} with the kernel {1 10}: {21 32 43},
 * one output per tile. */
static void convolution_values(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule c\nENTRY e {\n  p0 = f32[1,4,1] parameter(0)\n  p1 = f32[2,1,1] parameter(1)\n"
                        "  ROOT c = f32[1,3,1] convolution(p0, p1), window={size=2}, dim_labels=b0f_0io->b0f\n}\n");
  int64_t dx[3] = {1, 4, 1}, dk[3] = {2, 1, 1};
  float x[4] = {1, 2, 3, 4}, k[2] = {1, 10};
  hlo_value *ops[2] = {f32s(3, dx, x), f32s(3, dk, k)};
  dev_config one = config("tile=1x1x1 k=0 buf=2 order=012 pack=1 prec=default flags=none");
  static const float want[3] = {21, 32, 43};
  hlo_value *a = run(m, ops, &one, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 3);
  expect_f32(b, want, 3);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);
}

/* 16 output features of a 1-D convolution, the feature last in the output
 * and in the kernel: the device folds 8 adjacent features side by side,
 * each still in the header's order (window position, then input feature).
 * x is f32[1,3,2] (spatial 3, features 2), the kernel f32[2,2,16] (window
 * 2, in 2, out 16).
 * Values: x[s][c] = 2s + c + 1, k[w][c][f] = (2w + c + 1) * (f + 1), so
 * out[o][f] = (f + 1) * S_o with S_0 = 1*1 + 2*2 + 3*3 + 4*4 = 30 and
 * S_1 = 3*1 + 4*2 + 5*3 + 6*4 = 50 (all exact in f32).
 * Order: x all ones; feature 3's products in order are 1e8, 1, -1e8, 0:
 * (1e8 + 1) rounds to 1e8 in f32, so the header's order gives 0 where
 * summing by input feature first would give 1.  Feature 13 meets a NaN in
 * the kernel: its outputs are NaN and its neighbours' are still the
 * plain sums (0 here, the rest of the kernel being 0). */
static void convolution_feature_lanes(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule c\nENTRY e {\n  p0 = f32[1,3,2] parameter(0)\n  p1 = f32[2,2,16] parameter(1)\n"
                        "  ROOT c = f32[1,2,16] convolution(p0, p1), window={size=2}, dim_labels=b0f_0io->b0f\n}\n");
  int64_t dx[3] = {1, 3, 2}, dk[3] = {2, 2, 16};
  dev_config cut = config("tile=1x1x16 k=0 buf=2 order=012 pack=1 prec=default flags=none");
  float x[6], k[64], want[32];
  for (int i = 0; i < 6; i++)
    x[i] = (float)(i + 1);
  for (int w = 0; w < 2; w++)
    for (int c = 0; c < 2; c++)
      for (int f = 0; f < 16; f++)
        k[(w * 2 + c) * 16 + f] = (float)((2 * w + c + 1) * (f + 1));
  for (int f = 0; f < 16; f++)
    want[f] = 30.0f * (float)(f + 1), want[16 + f] = 50.0f * (float)(f + 1);
  hlo_value *ops[2] = {f32s(3, dx, x), f32s(3, dk, k)};
  hlo_value *a = run(m, ops, &cut, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 32);
  expect_f32(b, want, 32);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);

  for (int i = 0; i < 6; i++)
    x[i] = 1;
  memset(k, 0, sizeof k);
  k[0 * 16 + 3] = 1e8f, k[1 * 16 + 3] = 1, k[2 * 16 + 3] = -1e8f, k[3 * 16 + 3] = 0;
  k[0 * 16 + 13] = __builtin_nanf("");
  hlo_value *ops2[2] = {f32s(3, dx, x), f32s(3, dk, k)};
  hlo_value *runs[2] = {run(m, ops2, &cut, 0), run(m, ops2, NULL, 0)};
  for (int r = 0; r < 2; r++) {
    const float *o = runs[r]->data;
    for (int i = 0; i < 32; i++) {
      if (i % 16 == 13)
        assert_true(o[i] != o[i]);
      else
        assert_true(o[i] == 0.0f);
    }
    hlo_value_unref(runs[r]);
  }
  unref_all(ops2, 2);
  hlo_module_free(m);
}

/* map(x, y) with to_apply = x > 0 ? y : 0 over a [2,3] pair, tiles of 1x2
 * (a ragged last column); relu's gradient, as real modules use it.  And
 * a to_apply that is no lane program (it returns a tuple) is left to the
 * caller: DEV_WHOLE_UNSUPPORTED. */
static void map_values(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m\ng {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  z = f32[] constant(0)\n"
                        "  c = pred[] compare(a, z), direction=GT\n  ROOT s = f32[] select(c, b, z)\n}\n"
                        "ENTRY e {\n  p0 = f32[2,3] parameter(0)\n  p1 = f32[2,3] parameter(1)\n"
                        "  ROOT m = f32[2,3] map(p0, p1), dimensions={0,1}, to_apply=g\n}\n");
  int64_t d[2] = {2, 3};
  float x[6] = {1, -2, 0, 3, -0.0f, 5}, y[6] = {10, 20, 30, 40, 50, 60};
  hlo_value *ops[2] = {f32s(2, d, x), f32s(2, d, y)};
  dev_config cut = config("tile=1x2 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  static const float want[6] = {10, 0, 0, 40, 0, 60};
  hlo_value *a = run(m, ops, &cut, 0), *b = run(m, ops, NULL, 0);
  expect_f32(a, want, 6);
  expect_f32(b, want, 6);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unref_all(ops, 2);
  hlo_module_free(m);

  m = parse("HloModule m\nt {\n  a = f32[] parameter(0)\n  ROOT t = (f32[]) tuple(a)\n}\n"
            "ENTRY e {\n  p0 = f32[2] parameter(0)\n  ROOT m = f32[2] map(p0), dimensions={0}, to_apply=t\n}\n");
  int64_t d2[1] = {2};
  float v2[2] = {1, 2};
  hlo_value *op2[1] = {f32s(1, d2, v2)};
  char why[256] = "";
  dev_whole_ctx ctx = {NULL, 0, why, sizeof why, 0};
  hlo_value *out = NULL;
  assert_int_equal(dev_whole_run(m->entry->root, op2, &ctx, &out), DEV_WHOLE_UNSUPPORTED);
  assert_null(out);
  unref_all(op2, 1);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gather_clamps_starts),
      cmocka_unit_test(gather_vector_starts_and_windows),
      cmocka_unit_test(gather_batching_dims),
      cmocka_unit_test(scatter_combines_in_order_and_skips),
      cmocka_unit_test(scatter_general_combiner),
      cmocka_unit_test(sort_is_stable_across_blocks),
      cmocka_unit_test(sort_lane_index_defect),
      cmocka_unit_test(dynamic_slice_clamp),
      cmocka_unit_test(dynamic_update_slice_clamp),
      cmocka_unit_test(vec_scatter_iota_wrap),
      cmocka_unit_test(reduce_window_halos),
      cmocka_unit_test(convolution_values),
      cmocka_unit_test(convolution_feature_lanes),
      cmocka_unit_test(map_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
