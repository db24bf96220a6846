/* test_eval_reduce_prog.c — reduce, reduce-window and map with general
 * (non-simple) computations, which the evaluator runs as lane programs
 * (check/eval_reduce_prog.h), through the public path: HLO text ->
 * hlo_parse -> chk_eval_module.
 *
 * Shapes are chosen so that several blocks of CHK_RPROG_LANES (256) output
 * elements run, the last one ragged, and large enough for the OpenMP split.
 * Expected values come from plain C loops written here from the documented
 * semantics (the fold order of check/eval_reduce.c, the reducers' own
 * definitions, a rounding to the element type after every op), not from the
 * evaluator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/eval.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_parse.h"

static int hook_calls;
static int hook_reducer_calls;

/* Counts the instructions it is shown, and those of the reducer. */
static void count_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  (void)ctx, (void)ops, (void)n, (void)value;
  hook_calls++;
  if (ins->parent && !ins->parent->is_entry)
    hook_reducer_calls++;
}

/* Evaluates text on args (references kept by the caller); with_hook sets
 * count_hook. */
static hlo_value *run(const char *text, int nargs, hlo_value **args, bool with_hook) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse error %d:%d: %s", err.line, err.col, err.msg);
  hlo_value *out = NULL;
  chk_eval_opts o = {.replicas = 1};
  if (with_hook)
    o.hook = count_hook;
  int rc = chk_eval_module(m, nargs, args, &o, &out, &err);
  hlo_module_free(m);
  if (rc != 0)
    fail_msg("eval error %d:%d: %s", err.line, err.col, err.msg);
  return out;
}

static uint32_t bits_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A deterministic value stream with repeats (ties) and a few NaNs. */
static float sample(int64_t i) {
  uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull;
  z ^= z >> 29;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 32;
  if (z % 97 == 0)
    return NAN;
  return (float)((int)(z % 41) - 20) * 0.5f; /* 81 distinct values: many ties */
}

#define ARGMAX_REDUCER                                                          \
  "argmax {\n"                                                                  \
  " av = f32[] parameter(0)\n ai = s32[] parameter(1)\n"                        \
  " bv = f32[] parameter(2)\n bi = s32[] parameter(3)\n"                        \
  " gt = pred[] compare(av, bv), direction=GT\n"                                \
  " nan = pred[] compare(av, av), direction=NE\n"                               \
  " keep0 = pred[] or(gt, nan)\n"                                               \
  " eq = pred[] compare(av, bv), direction=EQ\n"                                \
  " lt = pred[] compare(ai, bi), direction=LT\n"                                \
  " tie = pred[] and(eq, lt)\n"                                                 \
  " keep = pred[] or(keep0, tie)\n"                                             \
  " v = f32[] select(keep, av, bv)\n"                                           \
  " i = s32[] select(keep, ai, bi)\n"                                           \
  " ROOT r = (f32[], s32[]) tuple(v, i)\n}\n"

/* The argmax reducer above, step by step: the accumulator stays when it is
 * greater, NaN, or equal with a lower index. */
static void argmax_step(float *av, int32_t *ai, float bv, int32_t bi) {
  bool keep = *av > bv || *av != *av || (*av == bv && *ai < bi);
  if (!keep) {
    *av = bv;
    *ai = bi;
  }
}

/* jax.numpy.argmax's reduce over rows of 600 x 67: NaN wins (the first one),
 * ties go to the lowest index, init (-inf, 0). */
static void test_argmax_rows(void **state) {
  (void)state;
  const char *t = "HloModule m\n" ARGMAX_REDUCER
                  "ENTRY e {\n p = f32[600,67] parameter(0)\n q = s32[600,67] iota(), iota_dimension=1\n"
                  " z = f32[] constant(-inf)\n zi = s32[] constant(0)\n"
                  " ROOT r = (f32[600], s32[600]) reduce(p, q, z, zi), dimensions={1}, to_apply=argmax\n}\n";
  int64_t d[2] = {600, 67};
  hlo_value *x = hlo_value_array(HLO_F32, 2, d);
  assert_non_null(x);
  float *xv = x->data;
  for (int64_t i = 0; i < x->count; i++)
    xv[i] = sample(i);
  for (int j = 0; j < 67; j++)
    xv[7 * 67 + j] = -INFINITY; /* all -inf: the init's index 0 */
  for (int pass = 0; pass < 2; pass++) {
    hook_calls = hook_reducer_calls = 0;
    hlo_value *o = run(t, 1, &x, pass == 1);
    assert_int_equal(o->type, HLO_TUPLE);
    const float *gv = o->elems[0]->data;
    const int32_t *gi = o->elems[1]->data;
    int nan_rows = 0;
    for (int r = 0; r < 600; r++) {
      float av = -INFINITY;
      int32_t ai = 0;
      for (int j = 0; j < 67; j++)
        argmax_step(&av, &ai, xv[r * 67 + j], j);
      nan_rows += av != av;
      if (bits_f32(gv[r]) != bits_f32(av) || gi[r] != ai)
        fail_msg("row %d: got (%g, %d), want (%g, %d)", r, gv[r], gi[r], av, ai);
    }
    assert_true(nan_rows > 0 && nan_rows < 600); /* the data has both kinds */
    if (pass == 1) {
      assert_true(hook_calls > 0);                /* the entry's ops are shown */
      assert_int_equal(hook_reducer_calls, 0);    /* the reducer's are not */
    }
    hlo_value_unref(o);
  }
  hlo_value_unref(x);
}

/* A reduce over a middle dimension of [3, 200, 5] (lanes stride through
 * the kept dims 0 and 2): (sum in bf16, count) with a constant in the
 * reducer; bf16 rounds every partial sum. */
static void test_bf16_sum_count_middle(void **state) {
  (void)state;
  const char *t =
      "HloModule m\n"
      "sumcount {\n a = bf16[] parameter(0)\n n = s32[] parameter(1)\n"
      " b = bf16[] parameter(2)\n unused = s32[] parameter(3)\n one = s32[] constant(1)\n"
      " s = bf16[] add(a, b)\n c = s32[] add(n, one)\n ROOT r = (bf16[], s32[]) tuple(s, c)\n}\n"
      "ENTRY e {\n p = bf16[3,200,5] parameter(0)\n q = s32[3,200,5] parameter(1)\n"
      " z = bf16[] constant(0.5)\n zi = s32[] constant(10)\n"
      " ROOT r = (bf16[3,5], s32[3,5]) reduce(p, q, z, zi), dimensions={1}, to_apply=sumcount\n}\n";
  int64_t d[3] = {3, 200, 5};
  hlo_value *args[2] = {hlo_value_array(HLO_BF16, 3, d), hlo_value_array(HLO_S32, 3, d)};
  assert_non_null(args[0]);
  assert_non_null(args[1]);
  uint16_t *p = args[0]->data;
  for (int64_t i = 0; i < args[0]->count; i++)
    p[i] = hlo_f32_to_bf16(1.0f + (float)(i % 13) * 0.37f);
  hlo_value *o = run(t, 2, args, false);
  const uint16_t *gs = o->elems[0]->data;
  const int32_t *gc = o->elems[1]->data;
  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 5; c++) {
      float s = 0.5f;
      for (int b = 0; b < 200; b++)
        s = hlo_bf16_to_f32(hlo_f32_to_bf16(s + hlo_bf16_to_f32(p[(a * 200 + b) * 5 + c])));
      assert_int_equal(gs[a * 5 + c], hlo_f32_to_bf16(s));
      assert_int_equal(gc[a * 5 + c], 210);
    }
  /* the sums really lost bits: 200 terms near 3.2 exceed bf16's 8 bits */
  float exact = 0.5f;
  for (int b = 0; b < 200; b++)
    exact += hlo_bf16_to_f32(p[b * 5]);
  assert_true(hlo_bf16_to_f32(gs[0]) != exact);
  hlo_value_unref(o);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
}

/* A variadic reduce-window (sum and count of the positions taken; size 4,
 * padding 2 before and 1 after) over 700 elements: padded positions are
 * skipped per output element, so the windows at the edges count fewer. */
static void test_window_sum_count_padded(void **state) {
  (void)state;
  const char *t = "HloModule m\n"
                  "sc {\n a = f32[] parameter(0)\n n = s32[] parameter(1)\n"
                  " b = f32[] parameter(2)\n unused = s32[] parameter(3)\n one = s32[] constant(1)\n"
                  " s = f32[] add(a, b)\n c = s32[] add(n, one)\n ROOT r = (f32[], s32[]) tuple(s, c)\n}\n"
                  "ENTRY e {\n p = f32[700] parameter(0)\n q = s32[700] iota(), iota_dimension=0\n"
                  " z = f32[] constant(0.25)\n zi = s32[] constant(0)\n"
                  " ROOT r = (f32[700], s32[700]) reduce-window(p, q, z, zi), window={size=4 pad=2_1},"
                  " to_apply=sc\n}\n";
  int64_t d[1] = {700};
  hlo_value *x = hlo_value_array(HLO_F32, 1, d);
  assert_non_null(x);
  float *xv = x->data;
  for (int i = 0; i < 700; i++)
    xv[i] = 1.0f + (float)(i % 17) * 0.1f;
  hlo_value *o = run(t, 1, &x, false);
  const float *gv = o->elems[0]->data;
  const int32_t *gc = o->elems[1]->data;
  for (int k = 0; k < 700; k++) {
    float s = 0.25f;
    int32_t c = 0;
    for (int w = 0; w < 4; w++) {
      int pos = k - 2 + w;
      if (pos >= 0 && pos < 700) {
        s += xv[pos];
        c++;
      }
    }
    if (bits_f32(gv[k]) != bits_f32(s) || gc[k] != c)
      fail_msg("window %d: got (%.9g, %d), want (%.9g, %d)", k, gv[k], gc[k], s, c);
  }
  assert_int_equal(gc[0], 2);   /* positions 0 and 1 */
  assert_int_equal(gc[699], 3); /* positions 697..699 */
  hlo_value_unref(o);
  hlo_value_unref(x);
}

/* Sum and count of one output of a 2-D window, folded in row-major order
 * of the window from the init 0.25, skipping padding and base-dilation
 * holes: XLA's ReduceWindow semantics written as a plain loop. */
typedef struct {
  int size, stride, pad_lo, pad_hi, rd, ld;
} wdim;

static void window_expect(const float *x, const int *in, const wdim *w, int o0, int o1, float *s, int32_t *c) {
  *s = 0.25f;
  *c = 0;
  for (int k0 = 0; k0 < w[0].size; k0++)
    for (int k1 = 0; k1 < w[1].size; k1++) {
      int p0 = o0 * w[0].stride + k0 * w[0].rd - w[0].pad_lo;
      int p1 = o1 * w[1].stride + k1 * w[1].rd - w[1].pad_lo;
      if (p0 < 0 || p1 < 0 || p0 % w[0].ld || p1 % w[1].ld || p0 / w[0].ld >= in[0] || p1 / w[1].ld >= in[1])
        continue;
      *s += x[(p0 / w[0].ld) * in[1] + p1 / w[1].ld];
      ++*c;
    }
}

/* A 2-D variadic reduce-window (sum, count) with strides, window dilation
 * and padding on both sides, over several blocks of lanes: some outputs
 * (column 0 and the last column) have windows wholly in the padding, and
 * the fold order matters (values of very different magnitudes).  With a
 * base dilation too, the other walk of the window.  Every output must
 * equal the plain loop bit for bit. */
#define WINDOW_2D_TEXT \
  "HloModule m\n" \
  "sc {\n a = f32[] parameter(0)\n n = s32[] parameter(1)\n" \
  " b = f32[] parameter(2)\n unused = s32[] parameter(3)\n one = s32[] constant(1)\n" \
  " s = f32[] add(a, b)\n c = s32[] add(n, one)\n ROOT r = (f32[], s32[]) tuple(s, c)\n}\n" \
  "ENTRY e {\n p = f32[90,40] parameter(0)\n q = s32[90,40] iota(), iota_dimension=0\n" \
  " z = f32[] constant(0.25)\n zi = s32[] constant(0)\n" \
  " ROOT r = (f32[%d,%d], s32[%d,%d]) reduce-window(p, q, z, zi), window={%s}," \
  " to_apply=sc\n}\n"

static void test_window_2d_strided_dilated(void **state) {
  (void)state;
  struct {
    wdim w[2];
    const char *attr;
  } cases[] = {
      {{{3, 2, 3, 2, 2, 1}, {4, 3, 5, 4, 1, 1}}, "size=3x4 stride=2x3 pad=3_2x5_4 rhs_dilate=2x1"},
      {{{3, 2, 3, 2, 2, 2}, {4, 3, 5, 4, 1, 1}}, "size=3x4 stride=2x3 pad=3_2x5_4 rhs_dilate=2x1 lhs_dilate=2x1"},
  };
  int in[2] = {90, 40};
  int64_t d[2] = {90, 40};
  hlo_value *x = hlo_value_array(HLO_F32, 2, d);
  assert_non_null(x);
  float *xv = x->data;
  for (int i = 0; i < 90 * 40; i++)
    xv[i] = (i % 7 == 0 ? 1e7f : 1.0f) + (float)(i % 13) * 0.37f;
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    const wdim *w = cases[t].w;
    int out[2];
    for (int k = 0; k < 2; k++) {
      int ext = (in[k] - 1) * w[k].ld + 1 + w[k].pad_lo + w[k].pad_hi;
      out[k] = (ext - ((w[k].size - 1) * w[k].rd + 1)) / w[k].stride + 1;
    }
    char text[2048];
    snprintf(text, sizeof text, WINDOW_2D_TEXT, out[0], out[1], out[0], out[1], cases[t].attr);
    hlo_value *o = run(text, 1, &x, false);
    const float *gv = o->elems[0]->data;
    const int32_t *gc = o->elems[1]->data;
    int empty = 0;
    for (int a = 0; a < out[0]; a++)
      for (int b = 0; b < out[1]; b++) {
        float s;
        int32_t c;
        window_expect(xv, in, w, a, b, &s, &c);
        int k = a * out[1] + b;
        if (bits_f32(gv[k]) != bits_f32(s) || gc[k] != c)
          fail_msg("case %zu, output (%d, %d): got (%.9g, %d), want (%.9g, %d)", t, a, b, gv[k], gc[k], s, c);
        empty += c == 0;
      }
    assert_true(out[0] * out[1] > 2 * 256); /* several blocks of lanes, the last ragged */
    assert_true(empty > 0);                 /* windows wholly in the padding */
    hlo_value_unref(o);
  }
  hlo_value_unref(x);
}

/* map of f16 a * b - 1 over 1000 elements: f16 rounds after each op. */
static void test_map_f16(void **state) {
  (void)state;
  const char *t = "HloModule m\n"
                  "f { a = f16[] parameter(0)\n b = f16[] parameter(1)\n one = f16[] constant(1)\n"
                  " m = f16[] multiply(a, b)\n ROOT c = f16[] subtract(m, one) }\n"
                  "ENTRY e { p = f16[1000] parameter(0)\n q = f16[1000] parameter(1)\n"
                  " ROOT r = f16[1000] map(p, q), dimensions={0}, to_apply=f }\n";
  int64_t d[1] = {1000};
  hlo_value *args[2] = {hlo_value_array(HLO_F16, 1, d), hlo_value_array(HLO_F16, 1, d)};
  assert_non_null(args[0]);
  assert_non_null(args[1]);
  uint16_t *a = args[0]->data, *b = args[1]->data;
  for (int i = 0; i < 1000; i++) {
    a[i] = hlo_f32_to_f16(1.0f + (float)i * 0.013f);
    b[i] = hlo_f32_to_f16(3.0f - (float)i * 0.007f);
  }
  hlo_value *o = run(t, 2, args, false);
  assert_int_equal(o->type, HLO_F16);
  const uint16_t *g = o->data;
  int rounded = 0;
  for (int i = 0; i < 1000; i++) {
    float m = hlo_f16_to_f32(hlo_f32_to_f16(hlo_f16_to_f32(a[i]) * hlo_f16_to_f32(b[i])));
    uint16_t want = hlo_f32_to_f16(m - 1.0f);
    if (g[i] != want)
      fail_msg("element %d: got 0x%04x, want 0x%04x", i, g[i], want);
    rounded += want != hlo_f32_to_f16(hlo_f16_to_f32(a[i]) * hlo_f16_to_f32(b[i]) - 1.0f);
  }
  assert_true(rounded > 0); /* the intermediate rounding mattered somewhere */
  hlo_value_unref(o);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
}

/* A reducer the lane program does not take (it calls another computation)
 * still runs, per element: max via a called computation, with the
 * accumulator's NaN kept. */
static void test_nested_call_reducer(void **state) {
  (void)state;
  const char *t = "HloModule m\n"
                  "mx { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] maximum(a, b) }\n"
                  "outer { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                  " ROOT c = f32[] call(a, b), to_apply=mx }\n"
                  "ENTRY e { p = f32[2,3] parameter(0)\n z = f32[] constant(-inf)\n"
                  " ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=outer }\n";
  int64_t d[2] = {2, 3};
  hlo_value *x = hlo_value_array(HLO_F32, 2, d);
  assert_non_null(x);
  memcpy(x->data, (const float[]){1, 7, 3, NAN, 2, 9}, 6 * sizeof(float));
  hlo_value *o = run(t, 1, &x, false);
  const float *g = o->data;
  assert_true(g[0] == 7.0f);
  assert_true(g[1] != g[1]);
  hlo_value_unref(o);
  hlo_value_unref(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_argmax_rows),
      cmocka_unit_test(test_bf16_sum_count_middle),
      cmocka_unit_test(test_window_sum_count_padded),
      cmocka_unit_test(test_window_2d_strided_dilated),
      cmocka_unit_test(test_map_f16),
      cmocka_unit_test(test_nested_call_reducer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
