/* test_exec.c — the executor against hand-computed values: exact
 * elementwise results through ragged tiles, reductions in the config's
 * order (running chunks, pack, split), a default-precision f32 dot, and the
 * memory hygiene faults (redzone write, uninitialised read, hang). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_elemental.h"
#include "device/dev_exec.h"
#include "hlo/hlo_parse.h"

typedef struct fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
  dev_schedule s;
} fx;

static void load(fx *x, const char *text, const char *cfgtext) {
  hlo_error err;
  x->m = hlo_parse(text, strlen(text), &err);
  if (!x->m)
    fail_msg("parse: %s", err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &x->mach, &err), 0);
  dev_config c;
  if (dev_config_parse(cfgtext, &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  char why[256];
  if (dev_lower(&x->f, &c, &x->mach, &x->s, why, sizeof why) != 0)
    fail_msg("lower: %s", why);
}

static void unload(fx *x) {
  dev_schedule_free(&x->s);
  hlo_module_free(x->m);
}

static hlo_value *f32_array(int rank, const int64_t *dims) {
  hlo_value *v = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(v);
  return v;
}

static void run(fx *x, hlo_value **args, int n, const dev_exec_hooks *h, dev_run *out) {
  dev_exec_run(&x->s, NULL, args, n, 1, h, out);
}

static const char *ADD = "HloModule m\nENTRY e {\n  a = f32[10,130] parameter(0)\n"
                         "  b = f32[10,130] parameter(1)\n  ROOT r = f32[10,130] add(a, b)\n}\n";

static void elementwise_ragged_exact(void **state) {
  (void)state;
  fx x;
  load(&x, ADD, "tile=8x128 k=0 buf=2 order=10 pack=1 prec=default flags=none");
  int64_t dims[2] = {10, 130};
  hlo_value *a = f32_array(2, dims), *b = f32_array(2, dims);
  float *pa = a->data, *pb = b->data;
  for (int i = 0; i < 1300; i++) {
    pa[i] = (float)i * 0.5f;
    pb[i] = 1000.0f - (float)i;
  }
  hlo_value *args[2] = {a, b};
  dev_run r;
  run(&x, args, 2, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(r.steps, 4); /* 2 x 2 tiles, both ragged */
  const float *o = r.out->data;
  for (int i = 0; i < 1300; i++)
    assert_true(o[i] == (float)i * 0.5f + 1000.0f - (float)i);
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unload(&x);
}

/* An f32 elementwise op reads a parameter in place (VIRT_F32_PARAM) where
 * its tile's rows are all defined in the window, and through a box of
 * slots elsewhere (the ragged tiles, whose blocks run past the array).
 * Either way an element is what its slot holds, and a stored f32 comes
 * from a slot: a float widened to double, which quiets a signalling NaN
 * and keeps its payload.  negate flips the sign bit and nothing else, so
 * by hand the result is the input's bits with the sign flipped and, for a
 * NaN, the quiet bit set.  Signalling NaNs sit in a full tile and in a
 * ragged one. */
static void elementwise_params_in_place_by_hand(void **state) {
  (void)state;
  const char *text = "HloModule m\nENTRY e {\n  a = f32[10,130] parameter(0)\n"
                     "  ROOT r = f32[10,130] negate(a)\n}\n";
  const char *cfgs[2] = {"tile=8x128 k=0 buf=2 order=10 pack=1 prec=default flags=none",
                         "tile=10x130 k=0 buf=2 order=01 pack=1 prec=default flags=none"};
  int64_t dims[2] = {10, 130};
  hlo_value *a = f32_array(2, dims);
  uint32_t *pa = a->data;
  for (int i = 0; i < 1300; i++) {
    float f = (float)i * 0.25f - 100.0f;
    memcpy(&pa[i], &f, sizeof f);
  }
  pa[5] = 0x7F800123u;    /* signalling, tile (0, 0) */
  pa[7] = 0x7FC00456u;    /* quiet */
  pa[1000] = 0xFF812345u; /* signalling, negative, tile (0, 0) */
  pa[1299] = 0x7F8000FFu; /* signalling, the ragged tile (1, 1) */
  for (int c = 0; c < 2; c++) {
    fx x;
    load(&x, text, cfgs[c]);
    hlo_value *args[1] = {a};
    dev_run r;
    run(&x, args, 1, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: %s", cfgs[c], r.message);
    const uint32_t *o = r.out->data;
    for (int i = 0; i < 1300; i++) {
      bool nan = (pa[i] & 0x7FFFFFFFu) > 0x7F800000u;
      uint32_t want = (nan ? pa[i] | 0x00400000u : pa[i]) ^ 0x80000000u;
      if (o[i] != want)
        fail_msg("%s: element %d is %08x, want %08x", cfgs[c], i, o[i], want);
    }
    hlo_value_unref(r.out);
    unload(&x);
  }
  hlo_value_unref(a);
}

/* An integer iota through ragged tiles (8x128 over 10x130; 32x128 over
 * 40x300 for the 8-bit types, whose sublanes come in 32), by hand:
 * along the last dimension element (i, j) is j, along the first it is i;
 * an s8 iota wraps modulo 2^8 past 127 (j = 200 gives -56, 255 gives -1,
 * 256 gives 0); a u8 one keeps 0..255 and wraps 256 to 0. */
static void iota_ints(const char *type, int dim, int64_t rows, int64_t cols, const char *cfg, int bytes, bool sgn) {
  char text[256];
  snprintf(text, sizeof text, "HloModule m\nENTRY e {\n  ROOT r = %s[%lld,%lld] iota(), iota_dimension=%d\n}\n", type,
           (long long)rows, (long long)cols, dim);
  fx x;
  load(&x, text, cfg);
  dev_run r;
  run(&x, NULL, 0, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      int64_t k = dim == 1 ? j : i, want, got;
      if (bytes == 4) {
        want = k;
        got = ((const int32_t *)r.out->data)[i * cols + j];
      } else if (sgn) {
        want = k % 256 < 128 ? k % 256 : k % 256 - 256;
        got = ((const int8_t *)r.out->data)[i * cols + j];
      } else {
        want = k % 256;
        got = ((const uint8_t *)r.out->data)[i * cols + j];
      }
      if (got != want)
        fail_msg("%s iota dim %d at (%lld, %lld): %lld, want %lld", type, dim, (long long)i, (long long)j,
                 (long long)got, (long long)want);
    }
  hlo_value_unref(r.out);
  unload(&x);
}

static void iota_by_hand(void **state) {
  (void)state;
  const char *cfg = "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none";
  iota_ints("s32", 1, 10, 130, cfg, 4, true);
  iota_ints("s32", 0, 10, 130, cfg, 4, true);
  const char *cfg8 = "tile=32x128 k=0 buf=2 order=01 pack=1 prec=default flags=none";
  iota_ints("s8", 1, 40, 300, cfg8, 1, true);
  iota_ints("u8", 1, 40, 300, cfg8, 1, false);
  iota_ints("s8", 0, 300, 3, "tile=32x3 k=0 buf=2 order=01 pack=1 prec=default flags=none", 1, true);
}

static const char *ROWSUM = "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                            " ROOT s = f32[] add(a, b) }\nENTRY e {\n  p = f32[8,256] parameter(0)\n"
                            "  z = f32[] constant(0)\n  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=add\n}\n";

/* Row 0 holds 1e8 and 1 at the start of each 128-chunk: 1e8, 1, ..., -1e8,
 * 1, ...; the f32 sum depends on the order (ulp(1e8) = 8). */
static float row_sum(const char *cfg) {
  fx x;
  load(&x, ROWSUM, cfg);
  int64_t dims[2] = {8, 256};
  hlo_value *p = f32_array(2, dims);
  float *d = p->data;
  d[0] = 1e8f, d[1] = 1.0f, d[128] = -1e8f, d[129] = 1.0f;
  dev_run r;
  run(&x, &p, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  float v = ((float *)r.out->data)[0];
  assert_true(((float *)r.out->data)[1] == 0.0f);
  hlo_value_unref(r.out);
  hlo_value_unref(p);
  unload(&x);
  return v;
}

static void reduction_order_is_the_configs(void **state) {
  (void)state;
  /* running accumulator, chunks in order: ((1e8 + 1) - 1e8) + 1 = 1 */
  assert_true(row_sum("tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=none") == 1.0f);
  assert_true(row_sum("tile=8 k=0 buf=2 order=0 pack=1 prec=default flags=none") == 1.0f);
  /* pack=2: slot 0 gets 1e8 and -1e8 (0), slot 1 gets 1 and 1 (2): 0 + 2 */
  assert_true(row_sum("tile=8 k=128 buf=2 order=0k pack=2 prec=default flags=none") == 2.0f);
  /* split: partials 1e8 + 1 = 1e8 and -1e8 + 1 = -1e8, then 0 + 1e8 - 1e8 */
  assert_true(row_sum("tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=split-reduction") == 0.0f);
}

/* A reduce inside the epilogue (the evaluator's own, not the hero's fold):
 * s = row sums of x, c = x - s, the hero m = row maxima of c, and the root
 * c + m.  x[i][j] = (j mod 4) + i, except row 0: 1e8, 1, -1e8, then 0s,
 * whose sum in order is ((1e8 + 1) - 1e8) + 0 ... = 0 (1e8 + 1 rounds to
 * 1e8 in f32; the exact sum is 1).  So, by hand: row 0 has s = 0, m = 1e8
 * and r = x + 1e8 = {2e8, 1e8, 0, 1e8, 1e8, ...}; row i > 0 has
 * s = 64 * 6 + 256 i, m = 3 + i - s and r = (j mod 4) + i - s + m, all
 * small integers.  Ten rows: the evaluator's reduce folds eight rows side
 * by side and then two. */
static const char *EPILOGUE_REDUCE =
    "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "max { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b) }\n"
    "ENTRY e {\n  x = f32[10,256] parameter(0)\n  z = f32[] constant(0)\n  ninf = f32[] constant(-inf)\n"
    "  s = f32[10] reduce(x, z), dimensions={1}, to_apply=add\n"
    "  sb = f32[10,256] broadcast(s), dimensions={0}\n  c = f32[10,256] subtract(x, sb)\n"
    "  m = f32[10] reduce(c, ninf), dimensions={1}, to_apply=max\n"
    "  mb = f32[10,256] broadcast(m), dimensions={0}\n  ROOT r = f32[10,256] add(c, mb)\n}\n";

static void epilogue_reduce_in_order(void **state) {
  (void)state;
  fx x;
  load(&x, EPILOGUE_REDUCE, "tile=8x256 k=128 buf=2 order=01k pack=1 prec=default flags=none");
  int64_t dims[2] = {10, 256};
  hlo_value *p = f32_array(2, dims);
  float *d = p->data;
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 256; j++)
      d[i * 256 + j] = i == 0 ? 0.0f : (float)(j % 4 + i);
  d[0] = 1e8f, d[1] = 1.0f, d[2] = -1e8f;
  dev_run r;
  run(&x, &p, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  const float *o = r.out->data;
  assert_true(o[0] == 2e8f);
  assert_true(o[1] == 1e8f);
  assert_true(o[2] == 0.0f);
  for (int j = 3; j < 256; j++)
    assert_true(o[j] == 1e8f);
  for (int i = 1; i < 10; i++) {
    float s = (float)(384 + 256 * i), m = (float)(3 + i) - s;
    for (int j = 0; j < 256; j++)
      if (o[i * 256 + j] != (float)(j % 4 + i) - s + m)
        fail_msg("row %d column %d: %g, want %g", i, j, o[i * 256 + j], (float)(j % 4 + i) - s + m);
  }
  hlo_value_unref(r.out);
  hlo_value_unref(p);
  unload(&x);
}

static void dot_default_precision_rounds_to_bf16(void **state) {
  (void)state;
  const char *text = "HloModule m\nENTRY e {\n  a = f32[8,128] parameter(0)\n  b = f32[128,128] parameter(1)\n"
                     "  ROOT d = f32[8,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  float want[3] = {1.0f, 1.0f + 0x1p-10f, 1.0f + 0x1p-10f};
  const char *cfgs[3] = {"tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                         "tile=8x128 k=0 buf=2 order=01 pack=1 prec=high flags=none",
                         "tile=8x128 k=0 buf=2 order=01 pack=1 prec=highest flags=none"};
  for (int c = 0; c < 3; c++) {
    fx x;
    load(&x, text, cfgs[c]);
    int64_t da[2] = {8, 128}, db[2] = {128, 128};
    hlo_value *a = f32_array(2, da), *b = f32_array(2, db);
    ((float *)a->data)[0] = 1.0f + 0x1p-10f; /* bf16 keeps 7 fraction bits: rounds to 1 */
    ((float *)b->data)[0] = 1.0f;
    hlo_value *args[2] = {a, b};
    dev_run r;
    run(&x, args, 2, NULL, &r);
    assert_int_equal(r.status, DEV_OK);
    assert_true(((float *)r.out->data)[0] == want[c]);
    hlo_value_unref(r.out);
    hlo_value_unref(a);
    hlo_value_unref(b);
    unload(&x);
  }
}

/* An s8 x s8 -> s32 dot is the products widened to s32 and summed (XLA's
 * dot semantics; with these values no sum leaves s32's range), the same
 * whatever the config: whole contraction, chunks of 128, and two packed
 * accumulators.  Written out as the plain loop. */
static void dot_s8_sums_exactly(void **state) {
  (void)state;
  enum { M = 4, K = 300, N = 5 };
  const char *text = "HloModule m\nENTRY e {\n  a = s8[4,300] parameter(0)\n  b = s8[300,5] parameter(1)\n"
                     "  ROOT d = s32[4,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const char *cfgs[3] = {"tile=4x5 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                         "tile=4x5 k=128 buf=2 order=01k pack=1 prec=default flags=none",
                         "tile=4x5 k=128 buf=2 order=01k pack=2 prec=default flags=none"};
  int64_t da[2] = {M, K}, db[2] = {K, N};
  hlo_value *a = hlo_value_array(HLO_S8, 2, da), *b = hlo_value_array(HLO_S8, 2, db);
  assert_true(a && b);
  int8_t *pa = a->data, *pb = b->data;
  for (int i = 0; i < M * K; i++)
    pa[i] = (int8_t)((i * 37 + 11) % 256 - 128);
  for (int i = 0; i < K * N; i++)
    pb[i] = (int8_t)((i * 53 + 7) % 256 - 128);
  int32_t want[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int32_t c = 0;
      for (int k = 0; k < K; k++)
        c += (int32_t)pa[i * K + k] * (int32_t)pb[k * N + j];
      want[i * N + j] = c;
    }
  for (int c = 0; c < 3; c++) {
    fx x;
    load(&x, text, cfgs[c]);
    hlo_value *args[2] = {a, b};
    dev_run r;
    run(&x, args, 2, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: %s", cfgs[c], r.message);
    assert_int_equal(r.out->type, HLO_S32);
    assert_memory_equal(r.out->data, want, sizeof want);
    hlo_value_unref(r.out);
    unload(&x);
  }
  hlo_value_unref(a);
  hlo_value_unref(b);
}

/* A dot's f32 parameter operands are taken from their window rows
 * (dev_fold_dot.c, param_operands) unless a row is not all defined.
 * With small integers every product and sum is exact in bf16 parts and
 * f32, so the result is the plain integer sum, written out by hand, over
 * configs that take that path (whole contraction, several tiles, two
 * packed accumulators, precision highest, a transposed rhs read as
 * q k^T) and one that leaves it (chunks of 128 over 300: the last block
 * runs past the array, so its rows are not all defined). */
static void dot_param_rows_by_hand(void **state) {
  (void)state;
  enum { M = 16, K = 300, N = 256 };
  const char *texts[2] = {
      "HloModule m\nENTRY e {\n  a = f32[16,300] parameter(0)\n  b = f32[300,256] parameter(1)\n"
      "  ROOT d = f32[16,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
      "HloModule m\nENTRY e {\n  a = f32[16,300] parameter(0)\n  b = f32[256,300] parameter(1)\n"
      "  ROOT d = f32[16,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n"};
  const char *cfgs[5] = {"tile=16x256 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                         "tile=8x128 k=0 buf=2 order=10 pack=1 prec=default flags=none",
                         "tile=8x128 k=0 buf=2 order=01 pack=2 prec=highest flags=none",
                         "tile=16x256 k=0 buf=2 order=01 pack=1 prec=high flags=none",
                         "tile=8x128 k=128 buf=2 order=01k pack=1 prec=default flags=none"};
  int64_t da[2] = {M, K}, db[2][2] = {{K, N}, {N, K}};
  hlo_value *a = f32_array(2, da);
  float *pa = a->data;
  for (int i = 0; i < M * K; i++)
    pa[i] = (float)((i * 37 + 11) % 17 - 8);
  for (int t = 0; t < 2; t++) {
    hlo_value *b = f32_array(2, db[t]);
    float *pb = b->data;
    /* element (k, j) of the rhs, wherever its form keeps it */
    for (int k = 0; k < K; k++)
      for (int j = 0; j < N; j++)
        pb[t ? j * K + k : k * N + j] = (float)((k * 53 + j * 7 + 5) % 15 - 7);
    for (int c = 0; c < 5; c++) {
      fx x;
      load(&x, texts[t], cfgs[c]);
      hlo_value *args[2] = {a, b};
      dev_run r;
      run(&x, args, 2, NULL, &r);
      if (r.status != DEV_OK)
        fail_msg("%s: %s", cfgs[c], r.message);
      const float *o = r.out->data;
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          long want = 0;
          for (int k = 0; k < K; k++)
            want += (long)(((i * K + k) * 37 + 11) % 17 - 8) * (long)((k * 53 + j * 7 + 5) % 15 - 7);
          if (o[i * N + j] != (float)want)
            fail_msg("form %d, %s: (%d, %d) is %g, want %ld", t, cfgs[c], i, j, o[i * N + j], want);
        }
      hlo_value_unref(r.out);
      unload(&x);
    }
    hlo_value_unref(b);
  }
  hlo_value_unref(a);
}

/* The same dot with its operands read through an elementwise copy takes
 * the box of slots (box_operands) instead of the window rows: the two
 * must agree bit for bit, on values of every magnitude with an infinity,
 * signed zeros, a subnormal, and in the second run a quiet and a
 * signalling NaN (whose slot quiets it: the rows' NaN makes the fold
 * read the boxes, which gives the slot's value). */
static void dot_param_rows_as_boxes(void **state) {
  (void)state;
  enum { M = 8, K = 300, N = 128 };
  const char *direct = "HloModule m\nENTRY e {\n  a = f32[8,300] parameter(0)\n  b = f32[300,128] parameter(1)\n"
                       "  ROOT d = f32[8,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const char *boxed = "HloModule m\nENTRY e {\n  a = f32[8,300] parameter(0)\n  b = f32[300,128] parameter(1)\n"
                      "  ca = f32[8,300] copy(a)\n  cb = f32[300,128] copy(b)\n"
                      "  ROOT d = f32[8,128] dot(ca, cb), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  const char *cfgs[3] = {"tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                         "tile=8x128 k=0 buf=2 order=01 pack=4 prec=highest flags=none",
                         "tile=8x128 k=128 buf=2 order=01k pack=1 prec=high flags=none"};
  int64_t da[2] = {M, K}, db[2] = {K, N};
  hlo_value *a = f32_array(2, da), *b = f32_array(2, db);
  uint32_t seed = 12345;
  for (int nan = 0; nan < 2; nan++) {
    float *pa = a->data, *pb = b->data;
    for (int i = 0; i < M * K + K * N; i++) {
      seed = seed * 1664525u + 1013904223u;
      /* sign, an exponent around 1 give or take 2^10, 23 random bits */
      uint32_t u = (seed & 0x807FFFFFu) | ((uint32_t)(117 + (seed >> 23) % 20) << 23);
      float f;
      memcpy(&f, &u, sizeof f);
      *(i < M * K ? &pa[i] : &pb[i - M * K]) = f;
    }
    pa[3] = 1.0f / 0.0f;
    pa[5] = -0.0f;
    pb[7] = 0x1p-140f;
    if (nan) {
      uint32_t q = 0x7FC12000u, sn = 0x7F830000u; /* payloads that bf16 parts keep */
      memcpy(&pa[K + 9], &q, sizeof q);
      memcpy(&pb[20 * N + 3], &sn, sizeof sn);
    }
    for (int c = 0; c < 3; c++) {
      dev_run r[2];
      for (int v = 0; v < 2; v++) {
        fx x;
        load(&x, v ? boxed : direct, cfgs[c]);
        hlo_value *args[2] = {a, b};
        run(&x, args, 2, NULL, &r[v]);
        if (r[v].status != DEV_OK)
          fail_msg("%s: %s", cfgs[c], r[v].message);
        unload(&x);
      }
      if (memcmp(r[0].out->data, r[1].out->data, sizeof(float) * M * N) != 0)
        fail_msg("%s%s: the window rows and the boxes disagree", cfgs[c], nan ? " with NaNs" : "");
      hlo_value_unref(r[0].out);
      hlo_value_unref(r[1].out);
    }
  }
  hlo_value_unref(a);
  hlo_value_unref(b);
}

/* An f32 dot's sums become its result by a rounding to f32 (its slots
 * hold doubles): by hand, round to nearest even, past the largest float
 * to infinity, below the smallest subnormal to zero, a NaN's payload's
 * top 23 fraction bits kept.  Nine values, so that a blocked loop has a
 * tail. */
static void dot_finish_rounds_to_f32_by_hand(void **state) {
  (void)state;
  enum { N = 9 };
  uint64_t nan_bits = 0x7FF8000012345678ull; /* payload 0x12345678 >> 29 = 0 in f32 */
  uint64_t nan2_bits = 0x7FFA000000000000ull; /* its top fraction bits: f32 0x7FD00000 */
  double nan, nan2;
  memcpy(&nan, &nan_bits, sizeof nan);
  memcpy(&nan2, &nan2_bits, sizeof nan2);
  dev_slot in[N] = {{.f = 1.0 + 0x1p-24}, {.f = 1.0 + 0x1p-24 + 0x1p-40}, {.f = -0.0}, {.f = 0x1p200},
                    {.f = 0x1p-140}, {.f = 0x1p-160}, {.f = nan}, {.f = 3.0 + 0x1p-23}, {.f = nan2}};
  uint32_t want[N] = {0x3F800000u, 0x3F800001u, 0x80000000u, 0x7F800000u, 0x00000200u /* 2^-140 = 2^9 * 2^-149 */,
                      0x00000000u, 0x7FC00000u, 0x40400000u /* tie to even */, 0x7FD00000u};
  dev_slot out[N];
  dev_elem_dot_finish_block(HLO_F32, HLO_F32, in, out, N);
  for (int i = 0; i < N; i++) {
    float f = (float)out[i].f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (u != want[i])
      fail_msg("element %d: %08x, want %08x", i, u, want[i]);
    double back = (double)f;
    if (memcmp(&back, &out[i].f, sizeof back) != 0)
      fail_msg("element %d: the slot is not the f32 value widened", i);
  }
}

/* transpose(p, {1,2,0}) of p = f32[2,3,4] is out[i,j,k] = p[k,i,j] (XLA:
 * output dim d is operand dim perm[d]); broadcast(q, {1}) of q = f32[4]
 * puts q along output dim 1: their sum is p[k,i,j] + q[j].  A permutation
 * that is not its own inverse. */
static void transpose_and_broadcast_by_hand(void **state) {
  (void)state;
  const char *text = "HloModule m\nENTRY e {\n  p = f32[2,3,4] parameter(0)\n  q = f32[4] parameter(1)\n"
                     "  t = f32[3,4,2] transpose(p), dimensions={1,2,0}\n"
                     "  b = f32[3,4,2] broadcast(q), dimensions={1}\n  ROOT r = f32[3,4,2] add(t, b)\n}\n";
  const char *cfgs[2] = {"tile=3x4x2 k=0 buf=2 order=012 pack=1 prec=default flags=none",
                         "tile=3x4x2 k=0 buf=1 order=210 pack=1 prec=default flags=none"};
  int64_t dp[3] = {2, 3, 4}, dq[1] = {4};
  hlo_value *p = f32_array(3, dp), *q = f32_array(1, dq);
  for (int i = 0; i < 24; i++)
    ((float *)p->data)[i] = (float)(i * 10);
  for (int i = 0; i < 4; i++)
    ((float *)q->data)[i] = (float)(i + 1) * 0.25f;
  for (int c = 0; c < 2; c++) {
    fx x;
    load(&x, text, cfgs[c]);
    hlo_value *args[2] = {p, q};
    dev_run r;
    run(&x, args, 2, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: %s", cfgs[c], r.message);
    const float *o = r.out->data;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++)
        for (int k = 0; k < 2; k++) {
          float want = (float)((k * 12 + i * 4 + j) * 10) + (float)(j + 1) * 0.25f;
          if (o[(i * 4 + j) * 2 + k] != want)
            fail_msg("%s: out[%d,%d,%d] = %g, want %g", cfgs[c], i, j, k, o[(i * 4 + j) * 2 + k], want);
        }
    hlo_value_unref(r.out);
    unload(&x);
  }
  hlo_value_unref(p);
  hlo_value_unref(q);
}

static void hygiene_faults(void **state) {
  (void)state;
  fx x;
  load(&x, ADD, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  int64_t dims[2] = {10, 130};
  hlo_value *a = f32_array(2, dims), *b = f32_array(2, dims);
  hlo_value *args[2] = {a, b};
  dev_exec_hooks h;
  dev_run r;

  dev_exec_hooks_none(&h);
  h.store_shift = 2; /* every store lands 2 elements (8 bytes) late */
  run(&x, args, 2, &h, &r);
  assert_int_equal(r.status, DEV_RUNTIME_ERROR);
  assert_null(r.out);
  assert_string_equal(r.message, "redzone write: output 0 at byte offset +0 past the end");

  dev_exec_hooks_none(&h);
  h.skip_tile = 3; /* the last tile, rows 8-9 x cols 128-129, never stored */
  run(&x, args, 2, &h, &r);
  assert_int_equal(r.status, DEV_RUNTIME_ERROR);
  assert_string_equal(r.message, "uninitialized read: output 0 element 1168 (index [8,128]) holds poison");

  dev_exec_hooks_none(&h);
  h.extra_steps = 1000;
  run(&x, args, 2, &h, &r);
  assert_int_equal(r.status, DEV_RUNTIME_ERROR);
  assert_non_null(strstr(r.message, "hang: the schedule did not complete within 256 grid steps"));

  /* and a clean run after them is fine: fresh buffers every run */
  run(&x, args, 2, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  hlo_value_unref(b);
  unload(&x);
}

/* An epilogue on a gathered table: rows 4, 0, 9, 2, 1, 3, -1, 2, 0, 3
 * (4 and 9 clamped to 3, -1 to 0) of a [4,256] table t[r][c] = r + c/256,
 * times a broadcast 3, plus a broadcast 0.5: out[i][c] = 3 t[row_i][c] +
 * 0.5, exact in f32.  The evaluator reads the gathered value in place and
 * the broadcasts as scalars where it can: a tile of whole rows (8x256, the
 * second one ragged) is contiguous in the gathered value, a tile of half
 * rows (8x128) is not and goes through boxes; both, and one whole tile,
 * must give these values. */
static const char *GATHER_EPILOGUE =
    "HloModule m\nENTRY e {\n  t = f32[4,256] parameter(0)\n  i = s32[10] parameter(1)\n"
    "  r = s32[10,1] reshape(i)\n"
    "  g = f32[10,256] gather(t, r), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
    "index_vector_dim=1, slice_sizes={1,256}\n"
    "  c = f32[] constant(3)\n  b = f32[10,256] broadcast(c), dimensions={}\n"
    "  m = f32[10,256] multiply(g, b)\n"
    "  h = f32[] constant(0.5)\n  k = f32[10,256] broadcast(h), dimensions={}\n"
    "  ROOT o = f32[10,256] add(m, k)\n}\n";

static void gather_epilogue_by_hand(void **state) {
  (void)state;
  static const char *cfgs[3] = {"tile=8x256 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                                "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none",
                                "tile=16x256 k=0 buf=2 order=01 pack=1 prec=default flags=none"};
  static const int64_t ids[10] = {4, 0, 9, 2, 1, 3, -1, 2, 0, 3};
  static const int rows[10] = {3, 0, 3, 2, 1, 3, 0, 2, 0, 3};
  for (int q = 0; q < 3; q++) {
    fx x;
    load(&x, GATHER_EPILOGUE, cfgs[q]);
    int64_t td[2] = {4, 256}, id[1] = {10};
    hlo_value *t = f32_array(2, td), *ix = hlo_value_array(HLO_S32, 1, id);
    assert_non_null(ix);
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 256; c++)
        ((float *)t->data)[r * 256 + c] = (float)r + (float)c / 256.0f;
    for (int j = 0; j < 10; j++)
      hlo_value_set_i64(ix, j, ids[j]);
    hlo_value *args[2] = {t, ix};
    dev_run out;
    run(&x, args, 2, NULL, &out);
    assert_int_equal(out.status, DEV_OK);
    const float *o = out.out->data;
    for (int j = 0; j < 10; j++)
      for (int c = 0; c < 256; c++) {
        float want = 3.0f * ((float)rows[j] + (float)c / 256.0f) + 0.5f;
        if (o[j * 256 + c] != want)
          fail_msg("config %d: out[%d][%d] = %g, want %g", q, j, c, o[j * 256 + c], want);
      }
    hlo_value_unref(out.out);
    hlo_value_unref(t);
    hlo_value_unref(ix);
    unload(&x);
  }
}

/* Row max and row sum broadcast back over their rows, as in a softmax:
 * x[i][j] = j - i, so max_i = 127 - i, sum_i = 8128 - 128 i and
 * out[i][j] = x[i][j] + sum_i - max_i = j - 127 + 8128 - 128 i, all exact
 * in f32; row 5 holds a NaN at j = 7, whose max and sum and so the whole
 * output row are NaN.  The reduce that is not the hero (the sum, further
 * from the root) is evaluated per tile, line by line. */
static const char *ROW_STATS =
    "HloModule m\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n"
    "ad {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  x = f32[8,128] parameter(0)\n  ninf = f32[] constant(-inf)\n  zero = f32[] constant(0)\n"
    "  s = f32[8] reduce(x, zero), dimensions={1}, to_apply=ad\n  bs = f32[8,128] broadcast(s), dimensions={0}\n"
    "  m = f32[8] reduce(x, ninf), dimensions={1}, to_apply=mx\n  bm = f32[8,128] broadcast(m), dimensions={0}\n"
    "  d = f32[8,128] add(x, bs)\n  ROOT y = f32[8,128] subtract(d, bm)\n}\n";

static void row_stats_broadcast_by_hand(void **state) {
  (void)state;
  fx x;
  load(&x, ROW_STATS, "tile=8x128 k=128 buf=2 order=01k pack=1 prec=default flags=none");
  int64_t dims[2] = {8, 128};
  hlo_value *a = f32_array(2, dims);
  float *pa = a->data;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 128; j++)
      pa[i * 128 + j] = (float)(j - i);
  pa[5 * 128 + 7] = __builtin_nanf("");
  hlo_value *args[1] = {a};
  dev_run r;
  run(&x, args, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  const float *o = r.out->data;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 128; j++) {
      float got = o[i * 128 + j], want = (float)(j - 127 + 8128 - 128 * i);
      if (i == 5 ? got == got : got != want)
        fail_msg("out[%d][%d] = %g, want %g", i, j, got, i == 5 ? __builtin_nanf("") : want);
    }
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  unload(&x);
}

/* A row min evaluated per tile (the row sum, found first from the root,
 * the min being one copy further, is the hero), out[i][j] = min_i - sum_i:
 *   row 0, -0 and +0 alternating: min -0 (ordered below +0), sum +0, out -0;
 *   row 1, j - 64: min -64, sum -64, out +0;
 *   row 2, j - 64 with NaNs of payloads 0x11 at j = 10 and 0x22 at j = 20:
 *     min is the first NaN, which subtract's first operand passes on;
 *   row i > 2, (7 j mod 128) - i: min -i, sum 8128 - 128 i. */
static const char *ROW_MIN =
    "HloModule m\nmn {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] minimum(a, b)\n}\n"
    "ad {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  x = f32[8,128] parameter(0)\n  inf = f32[] constant(inf)\n  zero = f32[] constant(0)\n"
    "  s = f32[8] reduce(x, zero), dimensions={1}, to_apply=ad\n  bs = f32[8,128] broadcast(s), dimensions={0}\n"
    "  m = f32[8] reduce(x, inf), dimensions={1}, to_apply=mn\n  bm = f32[8,128] broadcast(m), dimensions={0}\n"
    "  cm = f32[8,128] copy(bm)\n  ROOT y = f32[8,128] subtract(cm, bs)\n}\n";

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void row_min_by_hand(void **state) {
  (void)state;
  fx x;
  load(&x, ROW_MIN, "tile=8x128 k=128 buf=2 order=01k pack=1 prec=default flags=none");
  int64_t dims[2] = {8, 128};
  hlo_value *a = f32_array(2, dims);
  float *pa = a->data;
  for (int j = 0; j < 128; j++) {
    pa[j] = j % 2 ? 0.0f : -0.0f;
    pa[128 + j] = pa[256 + j] = (float)(j - 64);
    for (int i = 3; i < 8; i++)
      pa[i * 128 + j] = (float)((7 * j) % 128 - i);
  }
  pa[256 + 10] = float_of(0x7FC00011u);
  pa[256 + 20] = float_of(0x7FC00022u);
  hlo_value *args[1] = {a};
  dev_run r;
  run(&x, args, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  const float *o = r.out->data;
  for (int j = 0; j < 128; j++) {
    assert_int_equal(bits_of(o[j]), 0x80000000u);
    assert_int_equal(bits_of(o[128 + j]), 0u);
    assert_int_equal(bits_of(o[256 + j]), 0x7FC00011u);
    for (int i = 3; i < 8; i++)
      assert_true(o[i * 128 + j] == (float)(-i - (8128 - 128 * i)));
  }
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  unload(&x);
}

/* A scalar broadcast to rank 0 and then to the tile: out = 2.5 x, exact.
 * The outer broadcast reads the inner one's box as its scalar, so the
 * inner one must keep a box of its own. */
static const char *SPLAT_OF_SPLAT =
    "HloModule m\nENTRY e {\n  x = f32[8,128] parameter(0)\n  c = f32[] constant(2.5)\n"
    "  b0 = f32[] broadcast(c), dimensions={}\n  b1 = f32[8,128] broadcast(b0), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(x, b1)\n}\n";

static void splat_of_splat_by_hand(void **state) {
  (void)state;
  fx x;
  load(&x, SPLAT_OF_SPLAT, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  int64_t dims[2] = {8, 128};
  hlo_value *a = f32_array(2, dims);
  for (int i = 0; i < 1024; i++)
    ((float *)a->data)[i] = (float)(i - 300);
  hlo_value *args[1] = {a};
  dev_run r;
  run(&x, args, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  for (int i = 0; i < 1024; i++)
    assert_true(((const float *)r.out->data)[i] == 2.5f * (float)(i - 300));
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  unload(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_ragged_exact),
      cmocka_unit_test(elementwise_params_in_place_by_hand),
      cmocka_unit_test(reduction_order_is_the_configs),
      cmocka_unit_test(epilogue_reduce_in_order),
      cmocka_unit_test(dot_default_precision_rounds_to_bf16), cmocka_unit_test(dot_s8_sums_exactly),
      cmocka_unit_test(dot_param_rows_by_hand), cmocka_unit_test(dot_param_rows_as_boxes),
      cmocka_unit_test(dot_finish_rounds_to_f32_by_hand), cmocka_unit_test(transpose_and_broadcast_by_hand),
      cmocka_unit_test(hygiene_faults),
      cmocka_unit_test(gather_epilogue_by_hand),
      cmocka_unit_test(row_stats_broadcast_by_hand),
      cmocka_unit_test(row_min_by_hand),
      cmocka_unit_test(splat_of_splat_by_hand),
      cmocka_unit_test(iota_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
