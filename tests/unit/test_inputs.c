/* test_inputs.c — seeded input synthesis (check/inputs.c).
 *
 * Determinism is tested the strong way: every element must equal the value
 * computed from its own (seed, parameter, index) coordinates alone, which
 * is what makes the result independent of threads, tiling and array size.
 * Index parameters are tested on small modules whose correct bounds are
 * worked out by hand in the comments.
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/hlo_dtype.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"

static hlo_module *parse(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  return m;
}

static void make(const hlo_module *m, uint64_t seed, hlo_value **args) {
  hlo_error err = {0};
  chk_inputs_opts o = {.seed = seed, .profile = CHK_INPUTS_NAIVE};
  if (chk_inputs_make(m, &o, args, &err) != 0)
    fail_msg("chk_inputs_make: %s", err.msg);
}

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

static const char *all_types =
    "HloModule types\n"
    "ENTRY main {\n"
    "  a = f32[64] parameter(0)\n"
    "  b = bf16[33] parameter(1)\n"
    "  c = s8[170] parameter(2)\n"
    "  d = u4[90] parameter(3)\n"
    "  e = pred[20] parameter(4)\n"
    "  f = c64[5] parameter(5)\n"
    "  g = f8e4m3fn[400] parameter(6)\n"
    "  h = s4[100] parameter(7)\n"
    "  i = f64[] parameter(8)\n"
    "  j = f16[300] parameter(9)\n"
    "  k = u32[50] parameter(10)\n"
    "  l = s64[50] parameter(11)\n"
    "  m = f4e2m1fn[64] parameter(12)\n"
    "  n = f8e8m0fnu[64] parameter(13)\n"
    "  ROOT t = (f32[64], bf16[33]) tuple(a, b)\n"
    "}\n";
#define NTYPES 14

static void test_same_seed_same_bits(void **state) {
  (void)state;
  hlo_module *m = parse(all_types);
  hlo_value *x[NTYPES], *y[NTYPES], *z[NTYPES];
  make(m, 42, x);
  make(m, 42, y);
  make(m, 43, z);
  int differ = 0;
  for (int k = 0; k < NTYPES; k++) {
    assert_true(hlo_value_matches(x[k], &m->entry->params[k]->shape));
    assert_true(hlo_value_equal(x[k], y[k]));
    differ += !hlo_value_equal(x[k], z[k]);
  }
  /* Every parameter with more than a handful of elements changes with the
   * seed (pred[20] and the scalar could collide by chance, but not all). */
  assert_true(differ >= NTYPES - 2);
  assert_false(hlo_value_equal(x[0], z[0]));
  unref_all(x, NTYPES);
  unref_all(y, NTYPES);
  unref_all(z, NTYPES);
  hlo_module_free(m);
}

/* Each element is a function of its coordinates only. */
static void test_counter_based(void **state) {
  (void)state;
  static const int64_t big[] = {300000}, small[] = {10};
  chk_inputs_opts o = {.seed = 7};
  hlo_value *a = hlo_value_array(HLO_F32, 1, big), *b = hlo_value_array(HLO_F32, 1, small);
  chk_inputs_fill(a, &o, 3, NULL); /* large enough to be filled in parallel */
  chk_inputs_fill(b, &o, 3, NULL);
  const float *pa = a->data, *pb = b->data;
  for (int64_t i = 0; i < big[0]; i++) {
    float want = (float)(chk_inputs_bits(7, 3, (uint64_t)i) >> 40) * 0x1p-23f - 1.0f;
    if (pa[i] != want)
      fail_msg("element %lld differs", (long long)i);
  }
  assert_memory_equal(pa, pb, 10 * sizeof(float));
  /* bf16 takes its own fast path: still a function of the coordinates. */
  hlo_value *c = hlo_value_array(HLO_BF16, 1, big), *d = hlo_value_array(HLO_BF16, 1, small);
  chk_inputs_fill(c, &o, 3, NULL);
  chk_inputs_fill(d, &o, 3, NULL);
  assert_memory_equal(c->data, d->data, 10 * sizeof(uint16_t));
  for (int64_t i = 0; i < big[0]; i++) {
    uint16_t want = hlo_f32_to_bf16(pa[i]);
    want = want == 0x3F80 ? 0xBF80 : want; /* 1.0 folds onto -1.0 */
    if (((const uint16_t *)c->data)[i] != want)
      fail_msg("bf16 element %lld differs", (long long)i);
  }
  hlo_value_unref(c);
  hlo_value_unref(d);
  /* Streams and seeds are not interchangeable. */
  assert_true(chk_inputs_bits(1, 2, 3) != chk_inputs_bits(2, 1, 3));
  assert_true(chk_inputs_bits(0, 0, 0) != chk_inputs_bits(0, 0, 1));
  hlo_value_unref(a);
  hlo_value_unref(b);
}

static void test_values_in_range(void **state) {
  (void)state;
  hlo_module *m = parse(all_types);
  hlo_value *x[NTYPES];
  make(m, 1, x);
  for (int k = 0; k < NTYPES; k++) {
    hlo_value *v = x[k];
    hlo_etype t = v->type;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    double flo = 1e9, fhi = -1e9;
    for (int64_t i = 0; i < v->count; i++) {
      switch (hlo_etype_class(t)) {
      case HLO_CLASS_FLOAT: {
        double f = hlo_value_get_f64(v, i);
        if (t == HLO_F8E8M0FNU) {
          assert_true(f >= 0x1p-8 && f <= 0.5);
        } else {
          assert_true(f >= -1.0 && f < 1.0);
        }
        flo = f < flo ? f : flo;
        fhi = f > fhi ? f : fhi;
        break;
      }
      case HLO_CLASS_COMPLEX: {
        const float *p = v->data;
        assert_true(p[2 * i] >= -1.0f && p[2 * i] < 1.0f);
        assert_true(p[2 * i + 1] >= -1.0f && p[2 * i + 1] < 1.0f);
        break;
      }
      default: {
        int64_t n = hlo_value_get_i64(v, i);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
        break;
      }
      }
    }
    switch (t) {
    case HLO_S8: case HLO_S64:
      assert_int_equal(lo, -8); /* 170 and 50 draws from 17 values: both ends hit */
      assert_int_equal(hi, 8);
      break;
    case HLO_S4:
      assert_int_equal(lo, -8);
      assert_int_equal(hi, 7);
      break;
    case HLO_U4: case HLO_U32:
      assert_int_equal(lo, 0);
      assert_int_equal(hi, 15);
      break;
    case HLO_PRED:
      assert_int_equal(lo, 0);
      assert_int_equal(hi, 1);
      break;
    case HLO_F32: case HLO_F16: case HLO_F8E4M3FN:
      /* spread over the whole range, not stuck near a point */
      assert_true(flo < -0.75 && fhi > 0.75);
      break;
    default:
      break;
    }
  }
  /* f4e2m1fn has only -1, -0.5, +-0 and 0.5 in [-1, 1) (0.5 is its one
   * subnormal); every draw must be one of them */
  for (int64_t i = 0; i < x[12]->count; i++) {
    double f = hlo_value_get_f64(x[12], i);
    assert_true(f == -1.0 || f == -0.5 || f == 0.0 || f == 0.5);
  }
  unref_all(x, NTYPES);
  hlo_module_free(m);
}

/* ---- index parameters --------------------------------------------------- */

static void expect_range(const hlo_value *v, int64_t lo, int64_t hi, int64_t stride, int64_t extent, int64_t comp) {
  int64_t seen_hi = INT64_MIN;
  for (int64_t i = 0; i < v->count; i++) {
    if (extent > 1 && (i / stride) % extent != comp)
      continue;
    int64_t n = hlo_value_get_i64(v, i);
    if (n < lo || n > hi)
      fail_msg("element %lld = %lld outside [%lld, %lld]", (long long)i, (long long)n, (long long)lo, (long long)hi);
    seen_hi = n > seen_hi ? n : seen_hi;
  }
  /* Drawn over the range, not pinned to 0. */
  assert_true(seen_hi > lo + (hi - lo) / 2);
}

static void test_gather_and_scatter_indices(void **state) {
  (void)state;
  /* gather: rows of f32[300] by s32[500] indices, slice 1: starts 0..299.
   * scatter: s8 indices into f32[300] with one-element windows: 0..299 cut
   * to s8's 127.  gather2: indices s32[400,2] (index vector dim 1) into
   * f32[6,100] with slices 1x10: component 0 in 0..5, component 1 in 0..90. */
  hlo_module *m = parse("HloModule idx\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n"
                        "ENTRY main {\n"
                        "  t = f32[300] parameter(0)\n"
                        "  i = s32[500] parameter(1)\n"
                        "  g = f32[500] gather(t, i), offset_dims={}, collapsed_slice_dims={0},"
                        " start_index_map={0}, index_vector_dim=1, slice_sizes={1}\n"
                        "  si = s8[200,1] parameter(2)\n"
                        "  u = f32[200] parameter(3)\n"
                        "  s = f32[300] scatter(t, si, u), update_window_dims={},"
                        " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
                        " index_vector_dim=1, to_apply=add\n"
                        "  t2 = f32[6,100] parameter(4)\n"
                        "  i2 = s32[400,2] parameter(5)\n"
                        "  g2 = f32[400,10] gather(t2, i2), offset_dims={1}, collapsed_slice_dims={0},"
                        " start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,10}\n"
                        "  plain = s32[100] parameter(6)\n"
                        "  ROOT r = (f32[500], f32[300], f32[400,10], s32[100]) tuple(g, s, g2, plain)\n"
                        "}\n");
  chk_inputs_index idx[7];
  chk_inputs_find_index_params(m, idx);
  assert_false(idx[0].set);
  assert_true(idx[1].set);
  assert_int_equal(idx[1].hi[0], 299);
  assert_true(idx[2].set);
  assert_int_equal(idx[2].hi[0], 299);
  assert_true(idx[5].set);
  assert_int_equal(idx[5].axis, 1);
  assert_int_equal(idx[5].ncomp, 2);
  assert_int_equal(idx[5].hi[0], 5);
  assert_int_equal(idx[5].hi[1], 90);
  assert_false(idx[6].set);

  hlo_value *x[7];
  make(m, 5, x);
  expect_range(x[1], 0, 299, 1, 1, 0);
  expect_range(x[2], 0, 127, 1, 1, 0);
  expect_range(x[5], 0, 5, 1, 2, 0);
  expect_range(x[5], 0, 90, 1, 2, 1);
  expect_range(x[6], -8, 8, 1, 1, 0);
  unref_all(x, 7);
  hlo_module_free(m);
}

static void test_dynamic_slice_through_fusion(void **state) {
  (void)state;
  /* dynamic-slice of f32[10,20] by 3x5 inside a fusion: starts 0..7 and
   * 0..15.  dynamic-update-slice of u8[4] into f32[64] after a convert:
   * start 0..60.  The second start of the fusion goes through a convert
   * (s64 -> s32) first. */
  hlo_module *m = parse("HloModule ds\n"
                        "fused {\n"
                        "  a = f32[10,20] parameter(0)\n"
                        "  i = s32[] parameter(1)\n"
                        "  j = s32[] parameter(2)\n"
                        "  ROOT d = f32[3,5] dynamic-slice(a, i, j), dynamic_slice_sizes={3,5}\n"
                        "}\n"
                        "ENTRY main {\n"
                        "  a = f32[10,20] parameter(0)\n"
                        "  i = s32[] parameter(1)\n"
                        "  j64 = s64[] parameter(2)\n"
                        "  j = s32[] convert(j64)\n"
                        "  f = f32[3,5] fusion(a, i, j), kind=kLoop, calls=fused\n"
                        "  big = f32[64] parameter(3)\n"
                        "  up = f32[4] parameter(4)\n"
                        "  k8 = u8[] parameter(5)\n"
                        "  k = s32[] convert(k8)\n"
                        "  dus = f32[64] dynamic-update-slice(big, up, k)\n"
                        "  ROOT r = (f32[3,5], f32[64]) tuple(f, dus)\n"
                        "}\n");
  chk_inputs_index idx[6];
  chk_inputs_find_index_params(m, idx);
  assert_true(idx[1].set);
  assert_int_equal(idx[1].hi[0], 7);
  assert_true(idx[2].set);
  assert_int_equal(idx[2].hi[0], 15);
  assert_true(idx[5].set);
  assert_int_equal(idx[5].hi[0], 60);
  /* Scalars have one element each: check many seeds instead. */
  int64_t max1 = 0, max2 = 0, max5 = 0;
  for (uint64_t seed = 0; seed < 200; seed++) {
    hlo_value *x[6];
    make(m, seed, x);
    int64_t a = hlo_value_get_i64(x[1], 0), b = hlo_value_get_i64(x[2], 0), c = hlo_value_get_i64(x[5], 0);
    assert_true(a >= 0 && a <= 7);
    assert_true(b >= 0 && b <= 15);
    assert_true(c >= 0 && c <= 60);
    max1 = a > max1 ? a : max1;
    max2 = b > max2 ? b : max2;
    max5 = c > max5 ? c : max5;
    unref_all(x, 6);
  }
  assert_int_equal(max1, 7);
  assert_int_equal(max2, 15);
  assert_true(max5 > 40);
  hlo_module_free(m);
}

static void test_tuple_parameter_and_errors(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule tp\n"
                        "ENTRY main {\n"
                        "  p = (f32[8], s32[4]) parameter(0)\n"
                        "  ROOT g = f32[8] get-tuple-element(p), index=0\n"
                        "}\n");
  hlo_value *x[1], *y[1];
  make(m, 3, x);
  make(m, 3, y);
  assert_int_equal(x[0]->type, HLO_TUPLE);
  assert_true(hlo_value_equal(x[0], y[0]));
  const float *f = x[0]->elems[0]->data;
  for (int i = 0; i < 8; i++)
    assert_true(f[i] >= -1.0f && f[i] < 1.0f);
  unref_all(x, 1);
  unref_all(y, 1);
  hlo_module_free(m);

  m = parse("HloModule tok\nENTRY main {\n  t = token[] parameter(0)\n  ROOT c = f32[] constant(1)\n}\n");
  hlo_error err = {0};
  hlo_value *z[1] = {NULL};
  chk_inputs_opts o = {0};
  /* A token orders side effects and holds no data: it is made, empty
   * (a host recv module takes one as its entry parameter). */
  assert_int_equal(chk_inputs_make(m, &o, z, &err), 0);
  assert_non_null(z[0]);
  assert_int_equal(z[0]->type, HLO_TOKEN);
  unref_all(z, 1);
  hlo_module_free(m);
}

/* ---- the special profile (inputs.h) ------------------------------------ */

static void make_profile(const hlo_module *m, chk_inputs_profile prof, hlo_value **args) {
  hlo_error err = {0};
  chk_inputs_opts o = {.seed = 0, .profile = prof};
  if (chk_inputs_make(m, &o, args, &err) != 0)
    fail_msg("chk_inputs_make: %s", err.msg);
}

typedef struct special_count {
  int64_t nan, pinf, ninf, pzero, nzero, tiny, other, changed;
} special_count;

/* Counts the special values of s (a SPECIAL draw) and checks that every
 * other element is the CONSTRAINED draw c's, bit for bit. */
static special_count count_specials(const hlo_value *s, const hlo_value *c) {
  special_count k = {0};
  double tiny = hlo_float_decode(s->type, 1);
  for (int64_t i = 0; i < s->count; i++) {
    double x = hlo_value_get_f64(s, i);
    bool same = memcmp((const char *)s->data + i * (int64_t)s->elem_size,
                       (const char *)c->data + i * (int64_t)c->elem_size, s->elem_size) == 0;
    if (isnan(x))
      k.nan++;
    else if (x == INFINITY)
      k.pinf++;
    else if (x == -INFINITY)
      k.ninf++;
    else if (x == 0 && !same)
      signbit(x) ? k.nzero++ : k.pzero++;
    else if (fabs(x) == tiny)
      k.tiny++;
    else {
      k.other++;
      assert_true(same);
    }
    k.changed += !same;
  }
  return k;
}

/* maximum(p0, p1): both parameters only feed a maximum, so both get the
 * specials.  Of 4096 elements, one in four is a zero of either sign or a
 * +-subnormal (1024 expected, binomial standard deviation 28: the test
 * allows 900..1150), and max(4, 4096/4096) = 4 each, in expectation, are
 * NaN, +inf and -inf. */
static void test_special_max_operands(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule mx\n"
                        "ENTRY main {\n"
                        "  p0 = f32[4096] parameter(0)\n"
                        "  p1 = f32[4096] parameter(1)\n"
                        "  ROOT m = f32[4096] maximum(p0, p1)\n"
                        "}\n");
  hlo_value *s[2], *c[2];
  make_profile(m, CHK_INPUTS_SPECIAL, s);
  make_profile(m, CHK_INPUTS_CONSTRAINED, c);
  for (int k = 0; k < 2; k++) {
    special_count n = count_specials(s[k], c[k]);
    int64_t common = n.pzero + n.nzero + n.tiny;
    assert_true(common >= 900 && common <= 1150);
    assert_true(n.pzero > 0 && n.nzero > 0 && n.tiny > 0);
    assert_true(n.nan >= 1 && n.nan <= 16);
    assert_true(n.pinf >= 1 && n.pinf <= 16);
    assert_true(n.ninf >= 1 && n.ninf <= 16);
    assert_int_equal(n.other + common + n.nan + n.pinf + n.ninf, 4096);
  }
  unref_all(s, 2);
  unref_all(c, 2);
  hlo_module_free(m);
}

/* Parameters that arithmetic uses get none: add's operands, and a maximum
 * whose result feeds exp (the interval analysis bounds the operands of
 * the maximum from above, so a +inf would overflow exp where the program
 * never could); so do integer operands of a maximum, which have no NaN. */
static void test_special_only_where_allowed(void **state) {
  (void)state;
  const char *texts[] = {
      "HloModule add\nENTRY main {\n  p0 = f32[512] parameter(0)\n  p1 = f32[512] parameter(1)\n"
      "  ROOT a = f32[512] add(p0, p1)\n}\n",
      "HloModule mexp\nENTRY main {\n  p0 = f32[512] parameter(0)\n  p1 = f32[512] parameter(1)\n"
      "  m = f32[512] maximum(p0, p1)\n  ROOT e = f32[512] exponential(m)\n}\n",
      "HloModule imax\nENTRY main {\n  p0 = s32[512] parameter(0)\n  p1 = s32[512] parameter(1)\n"
      "  ROOT m = s32[512] maximum(p0, p1)\n}\n",
      /* p0 feeds the maximum and, besides, a multiply */
      "HloModule both\nENTRY main {\n  p0 = f32[512] parameter(0)\n  p1 = f32[512] parameter(1)\n"
      "  m = f32[512] maximum(p0, p1)\n  x = f32[512] multiply(p0, p1)\n"
      "  ROOT t = (f32[512], f32[512]) tuple(m, x)\n}\n",
  };
  for (size_t t = 0; t < sizeof texts / sizeof *texts; t++) {
    hlo_module *m = parse(texts[t]);
    hlo_value *s[2], *c[2];
    make_profile(m, CHK_INPUTS_SPECIAL, s);
    make_profile(m, CHK_INPUTS_CONSTRAINED, c);
    assert_true(hlo_value_equal(s[0], c[0]));
    assert_true(hlo_value_equal(s[1], c[1]));
    unref_all(s, 2);
    unref_all(c, 2);
    hlo_module_free(m);
  }
}

/* Through moves and abs into a fusion's max reduction, the specials
 * arrive; a sort key gets NaN only under a TOTALORDER comparator (a FLOAT
 * compare with NaN is no strict weak order), the infinities either way. */
static void test_special_reductions_and_sort_keys(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule colmax\n"
                        "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT m = f32[] maximum(a, b)\n}\n"
                        "fused {\n  p = f32[64,128] parameter(0)\n  t = f32[128,64] transpose(p), dimensions={1,0}\n"
                        "  b = f32[128,64] abs(t)\n  i = f32[] constant(-inf)\n"
                        "  ROOT r = f32[128] reduce(b, i), dimensions={1}, to_apply=mx\n}\n"
                        "ENTRY main {\n  x = f32[64,128] parameter(0)\n"
                        "  ROOT f = f32[128] fusion(x), kind=kInput, calls=fused\n}\n");
  hlo_value *s[1], *c[1];
  make_profile(m, CHK_INPUTS_SPECIAL, s);
  make_profile(m, CHK_INPUTS_CONSTRAINED, c);
  special_count n = count_specials(s[0], c[0]);
  assert_true(n.nan > 0 && n.pinf + n.ninf > 0 && n.nzero > 0);
  unref_all(s, 1);
  unref_all(c, 1);
  hlo_module_free(m);

  const char *types[2] = {"FLOAT", "TOTALORDER"};
  for (int t = 0; t < 2; t++) {
    char text[512];
    snprintf(text, sizeof text,
             "HloModule srt\n"
             "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT c = pred[] compare(a, b), direction=LT, type=%s\n}\n"
             "ENTRY main {\n  k = f32[16384] parameter(0)\n"
             "  ROOT s = f32[16384] sort(k), dimensions={0}, to_apply=lt\n}\n",
             types[t]);
    m = parse(text);
    make_profile(m, CHK_INPUTS_SPECIAL, s);
    make_profile(m, CHK_INPUTS_CONSTRAINED, c);
    n = count_specials(s[0], c[0]);
    /* 16384 / 4096 = 4 of each rare kind expected */
    if (t == 0)
      assert_int_equal(n.nan, 0);
    else
      assert_true(n.nan > 0);
    assert_true(n.pinf > 0 && n.ninf > 0);
    unref_all(s, 1);
    unref_all(c, 1);
    hlo_module_free(m);
  }
  chk_inputs_profile p;
  assert_int_equal(chk_inputs_profile_from_name("special", &p), 0);
  assert_int_equal(p, CHK_INPUTS_SPECIAL);
  assert_string_equal(chk_inputs_profile_name(CHK_INPUTS_SPECIAL), "special");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_seed_same_bits),
      cmocka_unit_test(test_counter_based),
      cmocka_unit_test(test_values_in_range),
      cmocka_unit_test(test_gather_and_scatter_indices),
      cmocka_unit_test(test_dynamic_slice_through_fusion),
      cmocka_unit_test(test_tuple_parameter_and_errors),
      cmocka_unit_test(test_special_max_operands),
      cmocka_unit_test(test_special_only_where_allowed),
      cmocka_unit_test(test_special_reductions_and_sort_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
