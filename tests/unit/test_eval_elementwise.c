/* test_eval_elementwise.c — the elementwise family of the reference
 * evaluator and block-by-block evaluation of elementwise chains.
 *
 * Op tests go through the public path: HLO text -> hlo_parse ->
 * chk_eval_module, with parameters built as hlo_values.  Expected values are
 * worked out by hand from XLA's semantics (the rules are listed at the top of
 * check/eval_elementwise.c); where an expectation is "what libm's float
 * function returns" (expf, tanhf...) it says so, because that function is the
 * documented definition of the op for f32.
 *
 * Chain tests run the same module twice through a small driver written
 * here: once op by op (chk_op_* per instruction) and once with a fuse plan
 * (chk_fuse_eval_group at group roots), and require bitwise equal results
 * for f32, bf16 and f16 chains with converts, at sizes that exercise partial
 * blocks and the multi-threaded path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/eval.h"
#include "eval_fixture.h"
#include "check/eval_fuse.h"
#include "check/eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_parse.h"

/* ---- helpers ------------------------------------------------------------ */

#define NV(...) (sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

static float bitsf(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
#define PI 3.14159265358979323846

/* A rank-1 array of n elements from doubles (converted by the type's rules). */
static hlo_value *vec(hlo_etype t, int64_t n, const double *vals) {
  return fx_array(t, 1, &n, vals);
}
/* A rank-1 array whose bytes are given (bit patterns, exact ints). */
static hlo_value *raw(hlo_etype t, int64_t n, const void *bytes) {
  hlo_value *v = hlo_value_array(t, 1, &n);
  assert_non_null(v);
  memcpy(v->data, bytes, (size_t)n * v->elem_size);
  return v;
}
static hlo_value *vf32(int64_t n, const float *f) { return raw(HLO_F32, n, f); }
static hlo_value *vs32(int64_t n, const int32_t *x) { return raw(HLO_S32, n, x); }

static void shape_text(const hlo_value *v, char *buf, size_t len) {
  int k = snprintf(buf, len, "%s[", hlo_etype_name(v->type));
  for (int d = 0; d < v->rank; d++)
    k += snprintf(buf + k, len - (size_t)k, "%s%lld", d ? "," : "", (long long)v->dims[d]);
  snprintf(buf + k, len - (size_t)k, "]");
}

/* Evaluates `ROOT r = <rt>[dims] <call>` over parameters p0..p{n-1} holding
 * args (consumed).  The result has the dims of the largest argument unless
 * rdims is given.  Returns NULL with err set when evaluation fails. */
static hlo_value *run_err(const char *call, hlo_etype rt, int rrank, const int64_t *rdims, int nargs,
                          hlo_value **args, hlo_error *err) {
  char text[4096], sh[128];
  int k = snprintf(text, sizeof text, "HloModule t\n\nENTRY e {\n");
  const hlo_value *big = args[0];
  for (int i = 0; i < nargs; i++) {
    shape_text(args[i], sh, sizeof sh);
    k += snprintf(text + k, sizeof text - (size_t)k, "  p%d = %s parameter(%d)\n", i, sh, i);
    if (args[i]->count > big->count)
      big = args[i];
  }
  hlo_value tmp = *big;
  tmp.type = rt;
  if (rdims) {
    tmp.rank = rrank;
    for (int d = 0; d < rrank; d++)
      tmp.dims[d] = rdims[d];
  }
  shape_text(&tmp, sh, sizeof sh);
  snprintf(text + k, sizeof text - (size_t)k, "  ROOT r = %s %s\n}\n", sh, call);
  return fx_eval_err(text, nargs, args, err);
}

static hlo_value *run(const char *call, hlo_etype rt, int nargs, hlo_value **args) {
  hlo_error err = {0};
  hlo_value *v = run_err(call, rt, 0, NULL, nargs, args, &err);
  if (!v)
    fail_msg("eval of %s: %d:%d: %s", call, err.line, err.col, err.msg);
  return v;
}

static hlo_value *run1(const char *call, hlo_etype rt, hlo_value *a) { return run(call, rt, 1, &a); }
static hlo_value *run2(const char *call, hlo_etype rt, hlo_value *a, hlo_value *b) {
  hlo_value *args[2] = {a, b};
  return run(call, rt, 2, args);
}
static hlo_value *run3(const char *call, hlo_etype rt, hlo_value *a, hlo_value *b, hlo_value *c) {
  hlo_value *args[3] = {a, b, c};
  return run(call, rt, 3, args);
}

/* Every element equal as doubles (NaN matches NaN, and the sign of zero
 * must match too); unrefs v. */
static void expect(hlo_value *v, hlo_etype t, size_t n, const double *want) {
  assert_non_null(v);
  assert_int_equal(v->type, t);
  assert_int_equal(v->count, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    double got = hlo_value_get_f64(v, (int64_t)i);
    bool ok = isnan(want[i]) ? isnan(got) : (got == want[i] && signbit(got) == signbit(want[i]));
    if (!ok)
      fail_msg("%s element %zu: got %.17g, want %.17g", hlo_etype_name(t), i, got, want[i]);
  }
  hlo_value_unref(v);
}

/* Exact integer elements; unrefs v. */
static void expect_i(hlo_value *v, hlo_etype t, size_t n, const int64_t *want) {
  assert_non_null(v);
  assert_int_equal(v->type, t);
  assert_int_equal(v->count, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    int64_t got = hlo_value_get_i64(v, (int64_t)i);
    if (got != want[i])
      fail_msg("%s element %zu: got %lld, want %lld", hlo_etype_name(t), i, (long long)got,
               (long long)want[i]);
  }
  hlo_value_unref(v);
}
#define IVALS(...) ((const int64_t[]){__VA_ARGS__})
#define NI(...) (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* Exact bytes; unrefs v. */
static void expect_bytes(hlo_value *v, hlo_etype t, int64_t n, const void *want) {
  assert_non_null(v);
  assert_int_equal(v->type, t);
  assert_int_equal(v->count, n);
  if (memcmp(v->data, want, (size_t)n * v->elem_size) != 0) {
    const unsigned char *g = v->data, *w = want;
    for (size_t i = 0; i < (size_t)n * v->elem_size; i++)
      if (g[i] != w[i])
        fail_msg("%s byte %zu: got 0x%02x, want 0x%02x", hlo_etype_name(t), i, g[i], w[i]);
  }
  hlo_value_unref(v);
}

static void expect_error(const char *call, hlo_etype rt, hlo_value *a, const char *needle) {
  hlo_error err = {0};
  hlo_value *v = run_err(call, rt, 0, NULL, 1, &a, &err);
  if (v) {
    hlo_value_unref(v);
    fail_msg("%s: expected an error", call);
  }
  if (!strstr(err.msg, needle))
    fail_msg("error '%s' does not mention '%s'", err.msg, needle);
}

/* ---- float arithmetic --------------------------------------------------- */

static void test_f32_binary(void **state) {
  (void)state;
  const float a[] = {1.5f, -2, 7, 0.1f, -7, 2};
  const float b[] = {0.5f, 4, -3, 0.2f, 3, 10};
  expect(run2("add(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS(2, 2, 4, (double)(0.1f + 0.2f), -4, 12));
  expect(run2("subtract(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS(1, -6, 10, (double)(0.1f - 0.2f), -10, -8));
  expect(run2("multiply(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS(0.75, -8, -21, (double)(0.1f * 0.2f), -21, 20));
  expect(run2("divide(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS(3, -0.5, (double)(7.0f / -3.0f), (double)(0.1f / 0.2f), (double)(-7.0f / 3.0f), 0.2f));
  /* fmod: the result has the sign of the dividend */
  expect(run2("remainder(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS(0, -2, 1, (double)fmodf(0.1f, 0.2f), -1, 2));
  expect(run2("power(p0, p1)", HLO_F32, vf32(6, a), vf32(6, b)), HLO_F32, 6,
         VALS((double)powf(1.5f, 0.5f), 16, (double)(1.0f / 343.0f), (double)powf(0.1f, 0.2f),
              -343, 1024));
  /* atan2 quadrants: (1,1) = pi/4 as atan2f computes it, (0,-1) = pi */
  const float y[] = {1, 0, -0.0f, 1};
  const float x[] = {1, -1, 1, 0};
  expect(run2("atan2(p0, p1)", HLO_F32, vf32(4, y), vf32(4, x)), HLO_F32, 4,
         VALS((double)atan2f(1, 1), (double)(float)PI, -0.0, (double)(float)(PI / 2)));
  /* IEEE division by zero */
  const float n1[] = {1, -1, 0};
  const float z[] = {0, 0, 0};
  expect(run2("divide(p0, p1)", HLO_F32, vf32(3, n1), vf32(3, z)), HLO_F32, 3, VALS(INFINITY, -INFINITY, NAN));
}

static void test_max_min_nan_and_zero(void **state) {
  (void)state;
  const float a[] = {NAN, 1, -0.0f, 0.0f, 3, -INFINITY, -0.0f};
  const float b[] = {1, NAN, 0.0f, -0.0f, -INFINITY, 2, -0.0f};
  /* NaN propagates from either side; -0 < +0 in either operand order */
  expect(run2("maximum(p0, p1)", HLO_F32, vf32(7, a), vf32(7, b)), HLO_F32, 7,
         VALS(NAN, NAN, 0.0, 0.0, 3, 2, -0.0));
  expect(run2("minimum(p0, p1)", HLO_F32, vf32(7, a), vf32(7, b)), HLO_F32, 7,
         VALS(NAN, NAN, -0.0, -0.0, -INFINITY, -INFINITY, -0.0));
  expect(run2("maximum(p0, p1)", HLO_F64, vec(HLO_F64, 3, VALS(NAN, -0.0, 5)), vec(HLO_F64, 3, VALS(7, 0.0, NAN))),
         HLO_F64, 3, VALS(NAN, 0.0, NAN));
  expect(run2("minimum(p0, p1)", HLO_BF16, vec(HLO_BF16, 3, VALS(NAN, 0.0, -3)), vec(HLO_BF16, 3, VALS(7, -0.0, 2))),
         HLO_BF16, 3, VALS(NAN, -0.0, -3));
  /* integers */
  const int32_t ia[] = {-5, 7, INT32_MIN};
  const int32_t ib[] = {3, 7, INT32_MAX};
  expect_i(run2("maximum(p0, p1)", HLO_S32, vs32(3, ia), vs32(3, ib)), HLO_S32, 3, IVALS(3, 7, INT32_MAX));
  expect_i(run2("minimum(p0, p1)", HLO_S32, vs32(3, ia), vs32(3, ib)), HLO_S32, 3, IVALS(-5, 7, INT32_MIN));
  const uint32_t ua[] = {0xFFFFFFFFu, 1};
  const uint32_t ub[] = {1, 2};
  expect_i(run2("maximum(p0, p1)", HLO_U32, raw(HLO_U32, 2, ua), raw(HLO_U32, 2, ub)), HLO_U32, 2,
           IVALS(0xFFFFFFFFll, 2));
}

static void test_f32_unary(void **state) {
  (void)state;
  expect(run1("abs(p0)", HLO_F32, vec(HLO_F32, 4, VALS(-2, 3, -0.0, -INFINITY))), HLO_F32, 4,
         VALS(2, 3, 0.0, INFINITY));
  expect(run1("negate(p0)", HLO_F32, vec(HLO_F32, 3, VALS(2, 0.0, -0.0))), HLO_F32, 3, VALS(-2, -0.0, 0.0));
  /* sign keeps the sign of zero and NaN stays NaN */
  expect(run1("sign(p0)", HLO_F32, vec(HLO_F32, 6, VALS(-0.0, 0.0, NAN, -3, 2, -INFINITY))), HLO_F32, 6,
         VALS(-0.0, 0.0, NAN, -1, 1, -1));
  expect(run1("floor(p0)", HLO_F32, vec(HLO_F32, 4, VALS(1.5, -1.5, -0.0, 2))), HLO_F32, 4, VALS(1, -2, -0.0, 2));
  expect(run1("ceil(p0)", HLO_F32, vec(HLO_F32, 4, VALS(1.5, -1.5, -0.5, 2))), HLO_F32, 4, VALS(2, -1, -0.0, 2));
  /* half away from zero */
  expect(run1("round-nearest-afz(p0)", HLO_F32, vec(HLO_F32, 6, VALS(2.5, -2.5, 0.5, -0.5, 1.4, 3.5))), HLO_F32, 6,
         VALS(3, -3, 1, -1, 1, 4));
  /* half to even */
  expect(run1("round-nearest-even(p0)", HLO_F32, vec(HLO_F32, 6, VALS(2.5, 3.5, -2.5, 0.5, -0.5, 1.6))), HLO_F32,
         6, VALS(2, 4, -2, 0, -0.0, 2));
  /* values with exact results */
  expect(run1("exponential(p0)", HLO_F32, vec(HLO_F32, 2, VALS(0, -INFINITY))), HLO_F32, 2, VALS(1, 0));
  expect(run1("exponential-minus-one(p0)", HLO_F32, vec(HLO_F32, 2, VALS(0, -0.0))), HLO_F32, 2, VALS(0, -0.0));
  expect(run1("log(p0)", HLO_F32, vec(HLO_F32, 4, VALS(1, 0, -1, INFINITY))), HLO_F32, 4,
         VALS(0, -INFINITY, NAN, INFINITY));
  expect(run1("log-plus-one(p0)", HLO_F32, vec(HLO_F32, 2, VALS(0, -1))), HLO_F32, 2, VALS(0, -INFINITY));
  expect(run1("logistic(p0)", HLO_F32, vec(HLO_F32, 3, VALS(0, INFINITY, -INFINITY))), HLO_F32, 3, VALS(0.5, 1, 0));
  expect(run1("tanh(p0)", HLO_F32, vec(HLO_F32, 3, VALS(0, 100, -100))), HLO_F32, 3, VALS(0, 1, -1));
  expect(run1("sqrt(p0)", HLO_F32, vec(HLO_F32, 4, VALS(4, 2.25, -0.0, -1))), HLO_F32, 4, VALS(2, 1.5, -0.0, NAN));
  expect(run1("rsqrt(p0)", HLO_F32, vec(HLO_F32, 3, VALS(4, 0.25, 0))), HLO_F32, 3, VALS(0.5, 2, INFINITY));
  expect(run1("cbrt(p0)", HLO_F32, vec(HLO_F32, 3, VALS(27, -8, 0.125))), HLO_F32, 3, VALS(3, -2, 0.5));
  expect(run1("sine(p0)", HLO_F32, vec(HLO_F32, 2, VALS(0, -0.0))), HLO_F32, 2, VALS(0, -0.0));
  expect(run1("cosine(p0)", HLO_F32, vec(HLO_F32, 1, VALS(0))), HLO_F32, 1, VALS(1));
  expect(run1("tan(p0)", HLO_F32, vec(HLO_F32, 1, VALS(0))), HLO_F32, 1, VALS(0));
  expect(run1("erf(p0)", HLO_F32, vec(HLO_F32, 3, VALS(0, INFINITY, -INFINITY))), HLO_F32, 3, VALS(0, 1, -1));
  /* f32 transcendental ops are the float libm functions (documented
   * choice): bit-identical to expf/logf/..., not exp() rounded to float.
   * volatile keeps the compiler from folding the expectation with its own
   * correctly rounded arithmetic (glibc's tanhf(0.7f) is 1 ulp away). */
  volatile float vx = 0.7f;
  float x = vx;
  expect(run1("exponential(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)expf(x)));
  expect(run1("log(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)logf(x)));
  expect(run1("tanh(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)tanhf(x)));
  expect(run1("erf(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)erff(x)));
  expect(run1("logistic(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1,
         VALS((double)(1.0f / (1.0f + expf(-x)))));
  expect(run1("sine(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)sinf(x)));
  expect(run1("tan(p0)", HLO_F32, vec(HLO_F32, 1, VALS(x))), HLO_F32, 1, VALS((double)tanf(x)));
  /* is-finite */
  expect_i(run1("is-finite(p0)", HLO_PRED, vec(HLO_F32, 5, VALS(1, INFINITY, -INFINITY, NAN, -0.0))), HLO_PRED,
           5, IVALS(1, 0, 0, 0, 1));
  expect_i(run1("is-finite(p0)", HLO_PRED, vec(HLO_BF16, 2, VALS(INFINITY, 3))), HLO_PRED, 2, IVALS(0, 1));
}

static void test_f64(void **state) {
  (void)state;
  expect(run2("add(p0, p1)", HLO_F64, vec(HLO_F64, 1, VALS(0.1)), vec(HLO_F64, 1, VALS(0.2))), HLO_F64, 1,
         VALS(0.1 + 0.2));
  expect(run1("exponential(p0)", HLO_F64, vec(HLO_F64, 1, VALS(1))), HLO_F64, 1, VALS(exp(1.0)));
  expect(run1("round-nearest-even(p0)", HLO_F64, vec(HLO_F64, 2, VALS(2.5, -3.5))), HLO_F64, 2, VALS(2, -4));
  expect(run2("remainder(p0, p1)", HLO_F64, vec(HLO_F64, 1, VALS(-7.5)), vec(HLO_F64, 1, VALS(2))), HLO_F64, 1,
         VALS(-1.5));
  expect_i(run2("compare(p0, p1), direction=LT, type=TOTALORDER", HLO_PRED, vec(HLO_F64, 2, VALS(-0.0, NAN)),
                vec(HLO_F64, 2, VALS(0.0, INFINITY))),
           HLO_PRED, 2, IVALS(1, 0));
}

/* ---- narrow floats: compute in f32, round after every op ------------------ */

static void test_bf16_rounds_each_op(void **state) {
  (void)state;
  /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1. */
  uint16_t one = 0x3F80, eps = 0x3B80 /* 2^-8 */, three_eps = 0x3C40 /* 3 * 2^-8 */;
  uint16_t a[] = {one, one};
  uint16_t b[] = {eps, three_eps};
  /* 1 + 3*2^-8 = 1 + 1.5*2^-7: tie between 0x3F81 and 0x3F82, even 0x3F82 */
  uint16_t want[] = {0x3F80, 0x3F82};
  expect_bytes(run2("add(p0, p1)", HLO_BF16, raw(HLO_BF16, 2, a), raw(HLO_BF16, 2, b)), HLO_BF16, 2, want);
  /* (1 + 2^-8) + 2^-8 in bf16 is 1 after each add: rounding after every op,
   * not once at the end (which would give 1 + 2^-7). */
  hlo_value *args[3] = {raw(HLO_BF16, 1, &one), raw(HLO_BF16, 1, &eps), raw(HLO_BF16, 1, &eps)};
  hlo_error err = {0};
  const char *text = "HloModule t\nENTRY e {\n p0 = bf16[1] parameter(0)\n p1 = bf16[1] parameter(1)\n"
                     " p2 = bf16[1] parameter(2)\n s = bf16[1] add(p0, p1)\n ROOT r = bf16[1] add(s, p2)\n}\n";
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  chk_eval_opts o = {.replicas = 1};
  hlo_value *out = NULL;
  assert_int_equal(chk_eval_module(m, 3, args, &o, &out, &err), 0);
  expect_bytes(out, HLO_BF16, 1, &one);
  hlo_module_free(m);
  for (int i = 0; i < 3; i++)
    hlo_value_unref(args[i]);
  /* bf16 multiply: 3 * (1/3 in bf16) */
  expect(run2("multiply(p0, p1)", HLO_BF16, vec(HLO_BF16, 1, VALS(3)), vec(HLO_BF16, 1, VALS(1.0 / 3))), HLO_BF16,
         1, VALS(hlo_float_decode(HLO_BF16, hlo_f32_to_bf16(3.0f * hlo_bf16_to_f32(hlo_f32_to_bf16(1.0f / 3))))));
}

static void test_f16_overflow_and_qat(void **state) {
  (void)state;
  /* 60000 + 60000 = 120000 > 65504: inf in f16 */
  uint16_t big = hlo_f32_to_f16(60000.0f);
  assert_int_equal(hlo_f16_to_f32(big), 60000.0f);
  uint16_t a[] = {big, (uint16_t)(big | 0x8000u), 0x3C00 /* 1 */};
  uint16_t want[] = {0x7C00, 0xFC00, 0x4000 /* 2 */};
  expect_bytes(run2("add(p0, p1)", HLO_F16, raw(HLO_F16, 3, a), raw(HLO_F16, 3, a)), HLO_F16, 3, want);
  /* f16 multiply overflow, and exp(12) = 162754.8 > 65504 */
  expect(run1("exponential(p0)", HLO_F16, vec(HLO_F16, 1, VALS(12))), HLO_F16, 1, VALS(INFINITY));

  /* the QAT residual x - f32(f16(x)) is not zero for x = 0.1f */
  const char *text = "HloModule t\nENTRY e {\n x = f32[2] parameter(0)\n h = f16[2] convert(x)\n"
                     " b = f32[2] convert(h)\n ROOT r = f32[2] subtract(x, b)\n}\n";
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  const float xs[] = {0.1f, 0.5f};
  hlo_value *arg = vf32(2, xs);
  chk_eval_opts o = {.replicas = 1};
  hlo_value *out = NULL;
  assert_int_equal(chk_eval_module(m, 1, &arg, &o, &out, &err), 0);
  float r0 = ((float *)out->data)[0], r1 = ((float *)out->data)[1];
  /* f16(0.1) = 0x2E66 = 0.0999755859375 */
  assert_true(r0 != 0.0f);
  assert_true(r0 == 0.1f - 0.0999755859375f);
  assert_true(r1 == 0.0f); /* 0.5 is exact in f16 */
  hlo_value_unref(out);
  hlo_value_unref(arg);
  hlo_module_free(m);
}

static void test_f8(void **state) {
  (void)state;
  /* f8e4m3fn: 1 + 1/16 ties between 1 and 1.125, even is 1 */
  expect(run2("add(p0, p1)", HLO_F8E4M3FN, vec(HLO_F8E4M3FN, 2, VALS(1, 1.5)), vec(HLO_F8E4M3FN, 2, VALS(0.0625, 0.125))),
         HLO_F8E4M3FN, 2, VALS(1, 1.625));
  /* 448 + 64 = 512 is above the largest finite value: NaN (no inf) */
  expect(run2("add(p0, p1)", HLO_F8E4M3FN, vec(HLO_F8E4M3FN, 1, VALS(448)), vec(HLO_F8E4M3FN, 1, VALS(64))),
         HLO_F8E4M3FN, 1, VALS(NAN));
  /* f8e5m2 keeps inf: 57344 * 2 */
  expect(run2("multiply(p0, p1)", HLO_F8E5M2, vec(HLO_F8E5M2, 2, VALS(57344, 3)), vec(HLO_F8E5M2, 2, VALS(2, 0.5))),
         HLO_F8E5M2, 2, VALS(INFINITY, 1.5));
  /* compare and convert through the generic paths */
  expect_i(run2("compare(p0, p1), direction=GT", HLO_PRED, vec(HLO_F8E4M3FN, 2, VALS(2, -1)),
                vec(HLO_F8E4M3FN, 2, VALS(1, 1))),
           HLO_PRED, 2, IVALS(1, 0));
  expect(run1("convert(p0)", HLO_F8E5M2, vec(HLO_F32, 3, VALS(1.1, 3.5, -0.0))), HLO_F8E5M2, 3, VALS(1, 3.5, -0.0));
  expect(run1("convert(p0)", HLO_F32, vec(HLO_F8E4M3FN, 2, VALS(448, -0.001953125))), HLO_F32, 2,
         VALS(448, -0.001953125));
}

/* ---- integers --------------------------------------------------------------- */

static void test_int_div_rem(void **state) {
  (void)state;
  const int32_t a[] = {7, -7, 5, INT32_MIN, INT32_MIN, 0, -5};
  const int32_t b[] = {2, 2, 0, -1, 1, 0, -1};
  expect_i(run2("divide(p0, p1)", HLO_S32, vs32(7, a), vs32(7, b)), HLO_S32, 7,
           IVALS(3, -3, -1, INT32_MIN, INT32_MIN, -1, 5));
  expect_i(run2("remainder(p0, p1)", HLO_S32, vs32(7, a), vs32(7, b)), HLO_S32, 7, IVALS(1, -1, 5, 0, 0, 0, 0));
  const uint32_t ua[] = {7, 5, 0xFFFFFFFFu};
  const uint32_t ub[] = {2, 0, 0};
  expect_i(run2("divide(p0, p1)", HLO_U32, raw(HLO_U32, 3, ua), raw(HLO_U32, 3, ub)), HLO_U32, 3,
           IVALS(3, 0xFFFFFFFFll, 0xFFFFFFFFll));
  expect_i(run2("remainder(p0, p1)", HLO_U32, raw(HLO_U32, 3, ua), raw(HLO_U32, 3, ub)), HLO_U32, 3,
           IVALS(1, 5, 0xFFFFFFFFll));
  const int8_t ca[] = {-128, -128, 100};
  const int8_t cb[] = {-1, 0, 0};
  expect_i(run2("divide(p0, p1)", HLO_S8, raw(HLO_S8, 3, ca), raw(HLO_S8, 3, cb)), HLO_S8, 3, IVALS(-128, -1, -1));
  const int64_t la[] = {INT64_MIN, INT64_MIN};
  const int64_t lb[] = {-1, 0};
  hlo_value *q = run2("divide(p0, p1)", HLO_S64, raw(HLO_S64, 2, la), raw(HLO_S64, 2, lb));
  expect_i(q, HLO_S64, 2, IVALS(INT64_MIN, -1));
  const uint8_t u8a[] = {200}, u8b[] = {0};
  expect_i(run2("divide(p0, p1)", HLO_U8, raw(HLO_U8, 1, u8a), raw(HLO_U8, 1, u8b)), HLO_U8, 1, IVALS(255));
}

static void test_int_arith_wraps(void **state) {
  (void)state;
  const int32_t a[] = {INT32_MAX, INT32_MIN, 65536, -3};
  const int32_t b[] = {1, 1, 65536, 5};
  expect_i(run2("add(p0, p1)", HLO_S32, vs32(4, a), vs32(4, b)), HLO_S32, 4, IVALS(INT32_MIN, INT32_MIN + 1, 131072, 2));
  expect_i(run2("subtract(p0, p1)", HLO_S32, vs32(4, a), vs32(4, b)), HLO_S32, 4,
           IVALS(INT32_MAX - 1, INT32_MAX, 0, -8));
  expect_i(run2("multiply(p0, p1)", HLO_S32, vs32(4, a), vs32(4, b)), HLO_S32, 4, IVALS(INT32_MAX, INT32_MIN, 0, -15));
  const uint16_t ua[] = {65535, 300};
  const uint16_t ub[] = {65535, 300};
  expect_i(run2("multiply(p0, p1)", HLO_U16, raw(HLO_U16, 2, ua), raw(HLO_U16, 2, ub)), HLO_U16, 2,
           IVALS(1, (300 * 300) & 0xFFFF));
  expect_i(run1("abs(p0)", HLO_S32, vs32(4, (const int32_t[]){-5, INT32_MIN, 0, 9})), HLO_S32, 4,
           IVALS(5, INT32_MIN, 0, 9));
  expect_i(run1("negate(p0)", HLO_S32, vs32(3, (const int32_t[]){-5, INT32_MIN, 0})), HLO_S32, 3,
           IVALS(5, INT32_MIN, 0));
  expect_i(run1("sign(p0)", HLO_S32, vs32(3, (const int32_t[]){-5, 0, 7})), HLO_S32, 3, IVALS(-1, 0, 1));
  expect_i(run1("sign(p0)", HLO_U8, raw(HLO_U8, 2, (const uint8_t[]){0, 200})), HLO_U8, 2, IVALS(0, 1));
  expect_i(run1("negate(p0)", HLO_U8, raw(HLO_U8, 2, (const uint8_t[]){1, 0})), HLO_U8, 2, IVALS(255, 0));
  expect_i(run1("not(p0)", HLO_S32, vs32(2, (const int32_t[]){0, 5})), HLO_S32, 2, IVALS(-1, -6));
  expect_i(run1("not(p0)", HLO_U8, raw(HLO_U8, 1, (const uint8_t[]){0x0F})), HLO_U8, 1, IVALS(0xF0));
  expect_i(run2("and(p0, p1)", HLO_S32, vs32(2, (const int32_t[]){12, -1}), vs32(2, (const int32_t[]){10, 7})),
           HLO_S32, 2, IVALS(8, 7));
  expect_i(run2("or(p0, p1)", HLO_S32, vs32(2, (const int32_t[]){12, -8}), vs32(2, (const int32_t[]){10, 7})),
           HLO_S32, 2, IVALS(14, -1));
  expect_i(run2("xor(p0, p1)", HLO_S32, vs32(2, (const int32_t[]){12, -1}), vs32(2, (const int32_t[]){10, 7})),
           HLO_S32, 2, IVALS(6, -8));
}

static void test_shifts(void **state) {
  (void)state;
  const int32_t a[] = {1, 1, 1, -8, -8, -8, 0x40000000, 1, -8};
  const int32_t b[] = {32, 33, -1, 1, 32, 100, 1, 31, 31};
  expect_i(run2("shift-left(p0, p1)", HLO_S32, vs32(9, a), vs32(9, b)), HLO_S32, 9,
           IVALS(0, 0, 0, -16, 0, 0, INT32_MIN, INT32_MIN, 0));
  expect_i(run2("shift-right-arithmetic(p0, p1)", HLO_S32, vs32(9, a), vs32(9, b)), HLO_S32, 9,
           IVALS(0, 0, 0, -4, -1, -1, 0x20000000, 0, -1));
  expect_i(run2("shift-right-logical(p0, p1)", HLO_S32, vs32(9, a), vs32(9, b)), HLO_S32, 9,
           IVALS(0, 0, 0, 0x7FFFFFFC, 0, 0, 0x20000000, 0, 1));
  /* unsigned: arithmetic shift still fills with the top bit */
  const uint8_t ua[] = {0x80, 0x80, 0x81, 0x40};
  const uint8_t ub[] = {1, 8, 7, 255};
  expect_i(run2("shift-right-arithmetic(p0, p1)", HLO_U8, raw(HLO_U8, 4, ua), raw(HLO_U8, 4, ub)), HLO_U8, 4,
           IVALS(0xC0, 0xFF, 0xFF, 0));
  expect_i(run2("shift-right-logical(p0, p1)", HLO_U8, raw(HLO_U8, 4, ua), raw(HLO_U8, 4, ub)), HLO_U8, 4,
           IVALS(0x40, 0, 1, 0));
  expect_i(run2("shift-left(p0, p1)", HLO_U8, raw(HLO_U8, 4, ua), raw(HLO_U8, 4, ub)), HLO_U8, 4,
           IVALS(0, 0, 0x80, 0));
  /* s64 by 64 and 63 */
  const int64_t la[] = {1, 1, -1};
  const int64_t lb[] = {64, 63, 64};
  expect_i(run2("shift-left(p0, p1)", HLO_S64, raw(HLO_S64, 3, la), raw(HLO_S64, 3, lb)), HLO_S64, 3,
           IVALS(0, INT64_MIN, 0));
  expect_i(run2("shift-right-arithmetic(p0, p1)", HLO_S64, raw(HLO_S64, 3, la), raw(HLO_S64, 3, lb)), HLO_S64, 3,
           IVALS(0, 0, -1));
}

static void test_popcnt_clz(void **state) {
  (void)state;
  const int32_t a[] = {0, 1, -1, 0x0F0F, INT32_MIN};
  expect_i(run1("popcnt(p0)", HLO_S32, vs32(5, a)), HLO_S32, 5, IVALS(0, 1, 32, 8, 1));
  expect_i(run1("count-leading-zeros(p0)", HLO_S32, vs32(5, a)), HLO_S32, 5, IVALS(32, 31, 0, 20, 0));
  expect_i(run1("count-leading-zeros(p0)", HLO_U8, raw(HLO_U8, 3, (const uint8_t[]){0, 1, 0x80})), HLO_U8, 3,
           IVALS(8, 7, 0));
  expect_i(run1("popcnt(p0)", HLO_S8, raw(HLO_S8, 2, (const int8_t[]){-1, -128})), HLO_S8, 2, IVALS(8, 1));
  const int64_t l[] = {0, 1, -1};
  expect_i(run1("count-leading-zeros(p0)", HLO_S64, raw(HLO_S64, 3, l)), HLO_S64, 3, IVALS(64, 63, 0));
}

static void test_int_power(void **state) {
  (void)state;
  const int32_t a[] = {2, 2, 1, -1, 0, -2, 3, -1, 0, 5};
  const int32_t b[] = {10, -1, -5, -1, 0, 3, 0, 2, 5, -2};
  /* negative exponents give 0 except for base 1 (XLA tests only base == 1) */
  expect_i(run2("power(p0, p1)", HLO_S32, vs32(10, a), vs32(10, b)), HLO_S32, 10,
           IVALS(1024, 0, 1, 0, 1, -8, 1, 1, 0, 0));
  /* wraps: 3^5 = 243 fits u8, 2^8 = 256 wraps to 0, 3^6 = 729 = 217 mod 256 */
  expect_i(run2("power(p0, p1)", HLO_U8, raw(HLO_U8, 3, (const uint8_t[]){3, 2, 3}),
                raw(HLO_U8, 3, (const uint8_t[]){5, 8, 6})),
           HLO_U8, 3, IVALS(243, 0, 217));
}

static void test_sub_byte(void **state) {
  (void)state;
  /* s4 wraps at 4 bits: 7 + 1 = -8; -8 - 1 = 7 */
  expect_i(run2("add(p0, p1)", HLO_S4, vec(HLO_S4, 3, VALS(7, -8, 3)), vec(HLO_S4, 3, VALS(1, -1, 2))), HLO_S4, 3,
           IVALS(-8, 7, 5));
  expect_i(run2("add(p0, p1)", HLO_U4, vec(HLO_U4, 2, VALS(15, 7)), vec(HLO_U4, 2, VALS(1, 1))), HLO_U4, 2,
           IVALS(0, 8));
  expect_i(run2("multiply(p0, p1)", HLO_S4, vec(HLO_S4, 2, VALS(3, -8)), vec(HLO_S4, 2, VALS(3, -1))), HLO_S4, 2,
           IVALS(-7, -8));
  /* -8 / -1 = -8 (INT_MIN), x / 0 = -1, u4 x / 0 = 15, -8 % -1 = 0 */
  expect_i(run2("divide(p0, p1)", HLO_S4, vec(HLO_S4, 3, VALS(-8, 3, 7)), vec(HLO_S4, 3, VALS(-1, 0, 2))), HLO_S4, 3,
           IVALS(-8, -1, 3));
  expect_i(run2("remainder(p0, p1)", HLO_S4, vec(HLO_S4, 2, VALS(-8, 3)), vec(HLO_S4, 2, VALS(-1, 0))), HLO_S4, 2,
           IVALS(0, 3));
  expect_i(run2("divide(p0, p1)", HLO_U4, vec(HLO_U4, 1, VALS(9)), vec(HLO_U4, 1, VALS(0))), HLO_U4, 1, IVALS(15));
  /* shifts on the 4-bit pattern; amounts >= 4 (or negative) are out of range */
  const double sa[] = {-8, -1, 7, 1, -8, 1};
  const double sb[] = {1, 1, 1, 4, 5, -1};
  expect_i(run2("shift-right-logical(p0, p1)", HLO_S4, vec(HLO_S4, 6, sa), vec(HLO_S4, 6, sb)), HLO_S4, 6,
           IVALS(4, 7, 3, 0, 0, 0));
  expect_i(run2("shift-right-arithmetic(p0, p1)", HLO_S4, vec(HLO_S4, 6, sa), vec(HLO_S4, 6, sb)), HLO_S4, 6,
           IVALS(-4, -1, 3, 0, -1, 0));
  expect_i(run2("shift-left(p0, p1)", HLO_S4, vec(HLO_S4, 6, sa), vec(HLO_S4, 6, sb)), HLO_S4, 6,
           IVALS(0, -2, -2, 0, 0, 0));
  expect_i(run1("count-leading-zeros(p0)", HLO_S4, vec(HLO_S4, 4, VALS(1, -1, 0, 4))), HLO_S4, 4, IVALS(3, 0, 4, 1));
  expect_i(run1("popcnt(p0)", HLO_S4, vec(HLO_S4, 3, VALS(-1, -8, 5))), HLO_S4, 3, IVALS(4, 1, 2));
  expect_i(run1("not(p0)", HLO_U4, vec(HLO_U4, 2, VALS(0, 5))), HLO_U4, 2, IVALS(15, 10));
  expect_i(run1("abs(p0)", HLO_S4, vec(HLO_S4, 2, VALS(-8, -3))), HLO_S4, 2, IVALS(-8, 3));
  expect_i(run2("compare(p0, p1), direction=LT", HLO_PRED, vec(HLO_S4, 2, VALS(-8, 7)), vec(HLO_S4, 2, VALS(7, -8))),
           HLO_PRED, 2, IVALS(1, 0));
  expect_i(run2("compare(p0, p1), direction=LT", HLO_PRED, vec(HLO_U4, 2, VALS(8, 15)), vec(HLO_U4, 2, VALS(7, 0))),
           HLO_PRED, 2, IVALS(0, 0));
  expect_i(run2("add(p0, p1)", HLO_S2, vec(HLO_S2, 2, VALS(1, -2)), vec(HLO_S2, 2, VALS(1, -1))), HLO_S2, 2,
           IVALS(-2, 1));
  expect_i(run2("shift-right-logical(p0, p1)", HLO_U2, vec(HLO_U2, 2, VALS(3, 3)), vec(HLO_U2, 2, VALS(1, 2))), HLO_U2,
           2, IVALS(1, 0));
  /* convert into s4 wraps */
  expect_i(run1("convert(p0)", HLO_S4, vs32(3, (const int32_t[]){8, -9, 23})), HLO_S4, 3, IVALS(-8, 7, 7));
}

/* ---- pred ----------------------------------------------------------------------- */

static void test_pred(void **state) {
  (void)state;
  const uint8_t a[] = {0, 0, 1, 1};
  const uint8_t b[] = {0, 1, 0, 1};
  expect_i(run2("add(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4, IVALS(0, 1, 1, 1));
  expect_i(run2("multiply(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4,
           IVALS(0, 0, 0, 1));
  expect_i(run2("and(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4, IVALS(0, 0, 0, 1));
  expect_i(run2("or(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4, IVALS(0, 1, 1, 1));
  expect_i(run2("xor(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4, IVALS(0, 1, 1, 0));
  expect_i(run2("maximum(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4,
           IVALS(0, 1, 1, 1));
  expect_i(run2("minimum(p0, p1)", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4,
           IVALS(0, 0, 0, 1));
  expect_i(run1("not(p0)", HLO_PRED, raw(HLO_PRED, 4, a)), HLO_PRED, 4, IVALS(1, 1, 0, 0));
  expect_i(run2("compare(p0, p1), direction=LT", HLO_PRED, raw(HLO_PRED, 4, a), raw(HLO_PRED, 4, b)), HLO_PRED, 4,
           IVALS(0, 1, 0, 0));
  expect_i(run1("convert(p0)", HLO_S32, raw(HLO_PRED, 4, b)), HLO_S32, 4, IVALS(0, 1, 0, 1));
}

/* ---- compare ---------------------------------------------------------------------- */

static void test_compare_float(void **state) {
  (void)state;
  const float a[] = {1, 2, NAN, 1, -0.0f};
  const float b[] = {2, 2, NAN, NAN, 0.0f};
  expect_i(run2("compare(p0, p1), direction=EQ", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(0, 1, 0, 0, 1));
  expect_i(run2("compare(p0, p1), direction=NE", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(1, 0, 1, 1, 0));
  expect_i(run2("compare(p0, p1), direction=LT", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(1, 0, 0, 0, 0));
  expect_i(run2("compare(p0, p1), direction=LE", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(1, 1, 0, 0, 1));
  expect_i(run2("compare(p0, p1), direction=GT", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(0, 0, 0, 0, 0));
  expect_i(run2("compare(p0, p1), direction=GE", HLO_PRED, vf32(5, a), vf32(5, b)), HLO_PRED, 5, IVALS(0, 1, 0, 0, 1));
}

static void test_compare_totalorder(void **state) {
  (void)state;
  /* -NaN < -Inf < -1 < -min subnormal < -0 < +0 < min subnormal < 1 < +Inf < +NaN */
  const float v[] = {bitsf(0xFFC00000u), -INFINITY, -1, -bitsf(1), -0.0f, 0.0f, bitsf(1), 1, INFINITY,
                     bitsf(0x7FC00000u)};
  enum { NVAL = sizeof v / sizeof v[0] };
  float lo[NVAL - 1], hi[NVAL - 1];
  for (int i = 0; i + 1 < NVAL; i++) {
    lo[i] = v[i];
    hi[i] = v[i + 1];
  }
  int64_t ones[NVAL - 1], zeros[NVAL - 1];
  for (int i = 0; i < NVAL - 1; i++) {
    ones[i] = 1;
    zeros[i] = 0;
  }
  expect_i(run2("compare(p0, p1), direction=LT, type=TOTALORDER", HLO_PRED, vf32(NVAL - 1, lo), vf32(NVAL - 1, hi)),
           HLO_PRED, NVAL - 1, ones);
  expect_i(run2("compare(p0, p1), direction=GE, type=TOTALORDER", HLO_PRED, vf32(NVAL - 1, lo), vf32(NVAL - 1, hi)),
           HLO_PRED, NVAL - 1, zeros);
  expect_i(run2("compare(p0, p1), direction=GT, type=TOTALORDER", HLO_PRED, vf32(NVAL - 1, hi), vf32(NVAL - 1, lo)),
           HLO_PRED, NVAL - 1, ones);
  /* equal under TOTALORDER means the same bits: NaN == same NaN, -0 != +0 */
  const float e1[] = {NAN, -0.0f, 1};
  const float e2[] = {NAN, 0.0f, 1};
  expect_i(run2("compare(p0, p1), direction=EQ, type=TOTALORDER", HLO_PRED, vf32(3, e1), vf32(3, e2)), HLO_PRED, 3,
           IVALS(1, 0, 1));
  /* bf16 keeps the order through its f32 compute representation */
  expect_i(run2("compare(p0, p1), direction=LT, type=TOTALORDER", HLO_PRED, vec(HLO_BF16, 2, VALS(-0.0, -INFINITY)),
                vec(HLO_BF16, 2, VALS(0.0, -1))),
           HLO_PRED, 2, IVALS(1, 1));
}

static void test_compare_int(void **state) {
  (void)state;
  const uint32_t ua[] = {0xFFFFFFFFu, 0};
  const uint32_t ub[] = {1, 0};
  expect_i(run2("compare(p0, p1), direction=GT", HLO_PRED, raw(HLO_U32, 2, ua), raw(HLO_U32, 2, ub)), HLO_PRED, 2,
           IVALS(1, 0));
  const int32_t sa[] = {-1, 3};
  const int32_t sb[] = {1, 3};
  expect_i(run2("compare(p0, p1), direction=GT", HLO_PRED, vs32(2, sa), vs32(2, sb)), HLO_PRED, 2, IVALS(0, 0));
  expect_i(run2("compare(p0, p1), direction=GT, type=SIGNED", HLO_PRED, vs32(2, sa), vs32(2, sb)), HLO_PRED, 2,
           IVALS(0, 0));
  /* an explicit UNSIGNED compare reads -1 as 0xFFFFFFFF */
  expect_i(run2("compare(p0, p1), direction=GT, type=UNSIGNED", HLO_PRED, vs32(2, sa), vs32(2, sb)), HLO_PRED, 2,
           IVALS(1, 0));
  expect_i(run2("compare(p0, p1), direction=LE", HLO_PRED, vs32(2, sa), vs32(2, sb)), HLO_PRED, 2, IVALS(1, 1));
  expect_i(run2("compare(p0, p1), direction=NE", HLO_PRED, vs32(2, sa), vs32(2, sb)), HLO_PRED, 2, IVALS(1, 0));
}

/* ---- select, clamp -------------------------------------------------------------------- */

static void test_select_clamp(void **state) {
  (void)state;
  const float t[] = {1, 2, 3};
  const float f[] = {-1, -2, -3};
  hlo_value *p = hlo_value_array(HLO_PRED, 0, NULL);
  ((uint8_t *)p->data)[0] = 1;
  expect(run3("select(p0, p1, p2)", HLO_F32, p, vf32(3, t), vf32(3, f)), HLO_F32, 3, VALS(1, 2, 3));
  expect(run3("select(p0, p1, p2)", HLO_F32, raw(HLO_PRED, 3, (const uint8_t[]){1, 0, 1}), vf32(3, t), vf32(3, f)),
         HLO_F32, 3, VALS(1, -2, 3));
  /* select moves bits: bf16, s64, c64 */
  expect(run3("select(p0, p1, p2)", HLO_BF16, raw(HLO_PRED, 2, (const uint8_t[]){0, 1}), vec(HLO_BF16, 2, VALS(1, 2)),
              vec(HLO_BF16, 2, VALS(-1, -2))),
         HLO_BF16, 2, VALS(-1, 2));
  const int64_t l1[] = {INT64_MAX, 1}, l2[] = {5, INT64_MIN};
  expect_i(run3("select(p0, p1, p2)", HLO_S64, raw(HLO_PRED, 2, (const uint8_t[]){1, 0}), raw(HLO_S64, 2, l1),
                raw(HLO_S64, 2, l2)),
           HLO_S64, 2, IVALS(INT64_MAX, INT64_MIN));
  const float c1[] = {1, 2, 3, 4}, c2[] = {5, 6, 7, 8};
  const float cw[] = {5, 6, 3, 4};
  expect_bytes(run3("select(p0, p1, p2)", HLO_C64, raw(HLO_PRED, 2, (const uint8_t[]){0, 1}), raw(HLO_C64, 2, c1),
                    raw(HLO_C64, 2, c2)),
               HLO_C64, 2, cw);
  /* clamp with scalar bounds; NaN operand propagates */
  expect(run3("clamp(p0, p1, p2)", HLO_F32, fx_scalar(HLO_F32, 0), vec(HLO_F32, 5, VALS(-1, 0.5, 2, NAN, -0.0)),
              fx_scalar(HLO_F32, 1)),
         HLO_F32, 5, VALS(0, 0.5, 1, NAN, 0.0));
  expect(run3("clamp(p0, p1, p2)", HLO_F32, vec(HLO_F32, 2, VALS(NAN, 0)), vec(HLO_F32, 2, VALS(3, 3)),
              vec(HLO_F32, 2, VALS(1, NAN))),
         HLO_F32, 2, VALS(NAN, NAN));
  expect_i(run3("clamp(p0, p1, p2)", HLO_S32, fx_scalar(HLO_S32, -2), vs32(4, (const int32_t[]){-5, 0, 5, INT32_MIN}),
                fx_scalar(HLO_S32, 3)),
           HLO_S32, 4, IVALS(-2, 0, 3, -2));
  expect_i(run3("clamp(p0, p1, p2)", HLO_U8, fx_scalar(HLO_U8, 10), raw(HLO_U8, 3, (const uint8_t[]){0, 50, 255}),
                fx_scalar(HLO_U8, 100)),
           HLO_U8, 3, IVALS(10, 50, 100));
}

/* ---- convert, bitcast-convert, reduce-precision ------------------------------------------ */

static void test_convert(void **state) {
  (void)state;
  /* float -> int truncates, saturates, NaN -> 0 */
  const float f[] = {1.75f, -1.75f, NAN, 1e10f, -1e10f, 2.5f, -0.5f};
  expect_i(run1("convert(p0)", HLO_S32, vf32(7, f)), HLO_S32, 7, IVALS(1, -1, 0, INT32_MAX, INT32_MIN, 2, 0));
  expect_i(run1("convert(p0)", HLO_U8, vec(HLO_F32, 4, VALS(-1, 300, 255.9, 7.9))), HLO_U8, 4, IVALS(0, 255, 255, 7));
  expect_i(run1("convert(p0)", HLO_S8, vec(HLO_BF16, 2, VALS(-200, INFINITY))), HLO_S8, 2, IVALS(-128, 127));
  /* int -> float rounds once (2^24 + 1 -> 2^24) */
  expect(run1("convert(p0)", HLO_F32, vs32(2, (const int32_t[]){16777217, -3})), HLO_F32, 2, VALS(16777216, -3));
  /* s32 -> bf16 directly, not through f32 (2^24+2^16+1 rounds up to 0x4B81
   * once; through f32 it would tie to even and give 0x4B80) */
  expect(run1("convert(p0)", HLO_BF16, vs32(1, (const int32_t[]){16777216 + 65536 + 1})), HLO_BF16, 1,
         VALS(16777216 + 131072));
  /* int -> int wraps */
  expect_i(run1("convert(p0)", HLO_S8, vs32(3, (const int32_t[]){200, -129, 127})), HLO_S8, 3, IVALS(-56, 127, 127));
  expect_i(run1("convert(p0)", HLO_U32, vs32(1, (const int32_t[]){-1})), HLO_U32, 1, IVALS(0xFFFFFFFFll));
  /* x -> pred is x != 0 (NaN -> true) */
  expect_i(run1("convert(p0)", HLO_PRED, vec(HLO_F32, 4, VALS(0, -0.0, NAN, 2))), HLO_PRED, 4, IVALS(0, 0, 1, 1));
  /* narrow float chains */
  expect(run1("convert(p0)", HLO_BF16, vec(HLO_F32, 2, VALS(1.0 + 0x1p-8, 1.0 + 0x1p-8 + 0x1p-20))), HLO_BF16, 2,
         VALS(1, 1.0 + 0x1p-7));
  expect(run1("convert(p0)", HLO_F16, vec(HLO_BF16, 2, VALS(65536, 3.0))), HLO_F16, 2, VALS(INFINITY, 3));
  expect(run1("convert(p0)", HLO_F64, vec(HLO_F16, 1, VALS(0.0999755859375))), HLO_F64, 1, VALS(0.0999755859375));
  expect(run1("convert(p0)", HLO_F32, vec(HLO_F64, 1, VALS(0.1))), HLO_F32, 1, VALS((double)0.1f));
  /* f64 -> bf16 rounds once from the double */
  expect(run1("convert(p0)", HLO_BF16, vec(HLO_F64, 1, VALS(1.0 + 0x1p-8 + 0x1p-40))), HLO_BF16, 1,
         VALS(1.0 + 0x1p-7));
  /* complex <-> real */
  const float cz[] = {3, 4};
  expect(run1("convert(p0)", HLO_F32, raw(HLO_C64, 1, cz)), HLO_F32, 1, VALS(3));
  const float cw[] = {2.5f, 0};
  expect_bytes(run1("convert(p0)", HLO_C64, vec(HLO_F32, 1, VALS(2.5))), HLO_C64, 1, cw);
}

static void test_bitcast_convert(void **state) {
  (void)state;
  expect_i(run1("bitcast-convert(p0)", HLO_S32, vec(HLO_F32, 2, VALS(1, -2))), HLO_S32, 2,
           IVALS(0x3F800000, (int32_t)0xC0000000u));
  const uint16_t b[] = {0x3F80, 0xFFFF};
  expect_i(run1("bitcast-convert(p0)", HLO_U16, raw(HLO_BF16, 2, b)), HLO_U16, 2, IVALS(0x3F80, 0xFFFF));
  expect(run1("bitcast-convert(p0)", HLO_F16, raw(HLO_U16, 1, (const uint16_t[]){0x3C00})), HLO_F16, 1, VALS(1));
  /* wide -> narrow adds a minor dimension: little-endian byte order */
  hlo_error err = {0};
  hlo_value *a = vec(HLO_F32, 2, VALS(1, -2));
  hlo_value *v = run_err("bitcast-convert(p0)", HLO_U8, 2, DIMS(2, 4), 1, &a, &err);
  assert_non_null(v);
  assert_int_equal(v->rank, 2);
  const uint8_t want[] = {0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0};
  expect_bytes(v, HLO_U8, 8, want);
  /* narrow -> wide drops it */
  const uint16_t h[] = {0x0000, 0x3F80, 0x0000, 0x4000};
  int64_t d22[] = {2, 2};
  hlo_value *hv = hlo_value_array(HLO_U16, 2, d22);
  memcpy(hv->data, h, sizeof h);
  v = run_err("bitcast-convert(p0)", HLO_F32, 1, DIMS(2), 1, &hv, &err);
  assert_non_null(v);
  expect(v, HLO_F32, 2, VALS(1, 2));
  /* s4 <-> u4 reinterprets the 4-bit pattern */
  expect_i(run1("bitcast-convert(p0)", HLO_U4, vec(HLO_S4, 3, VALS(-1, -8, 7))), HLO_U4, 3, IVALS(15, 8, 7));
  expect_i(run1("bitcast-convert(p0)", HLO_S4, vec(HLO_U4, 2, VALS(15, 9))), HLO_S4, 2, IVALS(-1, -7));
}

static void test_reduce_precision(void **state) {
  (void)state;
  /* 8 exponent bits, 7 mantissa bits: bf16's rounding, kept in f32 */
  expect(run1("reduce-precision(p0), exponent_bits=8, mantissa_bits=7", HLO_F32,
              vec(HLO_F32, 3, VALS(1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, -2))),
         HLO_F32, 3, VALS(1, 1.0 + 0x1p-6, -2));
  /* 5/10 is f16's range: 1e5 overflows to inf */
  expect(run1("reduce-precision(p0), exponent_bits=5, mantissa_bits=10", HLO_F32, vec(HLO_F32, 2, VALS(1e5, 0.5))),
         HLO_F32, 2, VALS(INFINITY, 0.5));
  expect(run1("reduce-precision(p0), exponent_bits=8, mantissa_bits=7", HLO_F64, vec(HLO_F64, 1, VALS(1.0 + 0x1p-8))),
         HLO_F64, 1, VALS(1));
}

/* ---- complex --------------------------------------------------------------------------- */

static hlo_value *c64(int64_t n, const float *reim) { return raw(HLO_C64, n, reim); }

static void expect_c64(hlo_value *v, int64_t n, const float *want, float tol) {
  assert_non_null(v);
  assert_int_equal(v->type, HLO_C64);
  assert_int_equal(v->count, n);
  const float *g = v->data;
  for (int64_t i = 0; i < 2 * n; i++)
    if (!(fabsf(g[i] - want[i]) <= tol))
      fail_msg("c64 part %lld: got %.9g want %.9g", (long long)i, g[i], want[i]);
  hlo_value_unref(v);
}

static void test_complex(void **state) {
  (void)state;
  const float a[] = {1, 2, 3, 4};
  const float b[] = {3, -1, 0, 1};
  expect_c64(run2("add(p0, p1)", HLO_C64, c64(2, a), c64(2, b)), 2, (const float[]){4, 1, 3, 5}, 0);
  expect_c64(run2("subtract(p0, p1)", HLO_C64, c64(2, a), c64(2, b)), 2, (const float[]){-2, 3, 3, 3}, 0);
  /* (1+2i)(3-i) = 5+5i; (3+4i)(i) = -4+3i */
  expect_c64(run2("multiply(p0, p1)", HLO_C64, c64(2, a), c64(2, b)), 2, (const float[]){5, 5, -4, 3}, 0);
  /* (1+2i)/(3-i) = (1+7i)/10; (3+4i)/i = 4-3i */
  expect_c64(run2("divide(p0, p1)", HLO_C64, c64(2, a), c64(2, b)), 2, (const float[]){0.1f, 0.7f, 4, -3}, 1e-6f);
  expect_c64(run1("negate(p0)", HLO_C64, c64(2, a)), 2, (const float[]){-1, -2, -3, -4}, 0);
  expect(run1("abs(p0)", HLO_F32, c64(2, a)), HLO_F32, 2, VALS((double)sqrtf(5), 5));
  expect(run1("real(p0)", HLO_F32, c64(2, a)), HLO_F32, 2, VALS(1, 3));
  expect(run1("imag(p0)", HLO_F32, c64(2, a)), HLO_F32, 2, VALS(2, 4));
  expect_c64(run2("complex(p0, p1)", HLO_C64, vec(HLO_F32, 1, VALS(3)), vec(HLO_F32, 1, VALS(4))), 1,
             (const float[]){3, 4}, 0);
  /* sqrt(-4) = 2i; exp(0) = 1; log(1) = 0; sign(3+4i) = 0.6+0.8i */
  expect_c64(run1("sqrt(p0)", HLO_C64, c64(1, (const float[]){-4, 0})), 1, (const float[]){0, 2}, 0);
  expect_c64(run1("exponential(p0)", HLO_C64, c64(1, (const float[]){0, 0})), 1, (const float[]){1, 0}, 0);
  expect_c64(run1("log(p0)", HLO_C64, c64(1, (const float[]){1, 0})), 1, (const float[]){0, 0}, 0);
  expect_c64(run1("sign(p0)", HLO_C64, c64(2, (const float[]){3, 4, 0, 0})), 2, (const float[]){0.6f, 0.8f, 0, 0},
             1e-7f);
  /* The paper's Listing 1 complex tan/tanh reproducer: a large imaginary
   * part must not overflow sin/cos into inf/inf = NaN.  tan(x + iy) -> i and
   * tanh(x + iy) -> 1 as |y| resp. |x| grows. */
  expect_c64(run1("tan(p0)", HLO_C64, c64(2, (const float[]){1, 100, 0, -200})), 2, (const float[]){0, 1, 0, -1},
             1e-7f);
  expect_c64(run1("tanh(p0)", HLO_C64, c64(2, (const float[]){100, 1, -200, 0})), 2, (const float[]){1, 0, -1, 0},
             1e-7f);
  expect_c64(run1("tanh(p0)", HLO_C64, c64(1, (const float[]){0, 0})), 1, (const float[]){0, 0}, 0);
  /* c128 */
  const double d[] = {1, 2};
  hlo_value *v = run2("multiply(p0, p1)", HLO_C128, raw(HLO_C128, 1, d), raw(HLO_C128, 1, d));
  const double want[] = {-3, 4};
  expect_bytes(v, HLO_C128, 1, want);
  expect_i(run2("compare(p0, p1), direction=EQ", HLO_PRED, c64(2, a), c64(2, (const float[]){1, 2, 3, 5})), HLO_PRED,
           2, IVALS(1, 0));
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_errors(void **state) {
  (void)state;
  expect_error("floor(p0)", HLO_S32, vs32(1, (const int32_t[]){1}), "not supported");
  expect_error("and(p0, p0)", HLO_F32, vec(HLO_F32, 1, VALS(1)), "not supported");
  expect_error("remainder(p0, p0)", HLO_C64, c64(1, (const float[]){1, 1}), "not supported");
}

/* ---- block-by-block chains ------------------------------------------------------------------ */

/* A small driver over the entry computation: op by op when p is NULL, with
 * groups evaluated at their roots otherwise.  Returns vals (caller frees
 * with free_vals). */
static hlo_value **walk(const hlo_module *m, hlo_value **args, const chk_fuse_plan *p) {
  const hlo_computation *c = m->entry;
  hlo_error err = {0};
  chk_eval ev = {.m = m, .o = {.replicas = 1}, .err = &err};
  hlo_value **vals = calloc((size_t)c->ninstrs, sizeof *vals);
  assert_non_null(vals);
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (p && chk_fuse_eval_pos(p, ins) != i)
      continue;
    if (p && chk_fuse_is_root(p, ins)) {
      if (chk_fuse_eval_group(&ev, p, ins, 1, vals) != 0)
        fail_msg("group %s: %s", ins->name, err.msg);
      continue;
    }
    hlo_value *ops[8] = {0};
    for (int k = 0; k < ins->noperands && k < 8; k++) {
      ops[k] = vals[ins->operands[k]->index];
      if (!ops[k])
        fail_msg("%s: operand %d not evaluated", ins->name, k);
    }
    switch (ins->op) {
    case HLO_OP_PARAMETER:
      vals[i] = hlo_value_ref(args[ins->parameter_number]);
      break;
    case HLO_OP_CONSTANT: {
      char why[128];
      vals[i] = hlo_value_from_literal(&ins->shape, ins->literal, why, sizeof why);
      break;
    }
    case HLO_OP_TUPLE:
      for (int k = 0; k < ins->noperands; k++)
        hlo_value_ref(ops[k]);
      vals[i] = hlo_value_tuple(ins->noperands, ops);
      break;
    default: {
      chk_op_fn *fn = chk_op_lookup(ins->op);
      assert_non_null(fn);
      vals[i] = fn(&ev, ins, ops);
      break;
    }
    }
    if (!vals[i])
      fail_msg("%s: %s", ins->name, err.msg);
  }
  return vals;
}

static void free_vals(hlo_value **vals, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(vals[i]);
  free(vals);
}

/* Deterministic inputs in [-2, 2) (LCG; the values only need variety). */
static hlo_value *noise(hlo_etype t, int64_t n, uint32_t seed, bool positive) {
  hlo_value *v = hlo_value_array(t, 1, &n);
  assert_non_null(v);
  uint32_t s = seed;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    double x = ((double)(s >> 8) / (double)(1u << 24)) * 4.0 - 2.0;
    if (positive)
      x = fabs(x) + 0x1p-10;
    hlo_value_set_f64(v, i, x);
  }
  return v;
}

/* Runs text (parameters all rank 1 of n elements, types from the text) op
 * by op and fused, requires >= min_groups groups and bitwise equal values
 * for every instruction both evaluated; also checks chk_eval_module. */
static void check_chain(const char *fmt, int64_t n, int min_groups, int min_members) {
  char text[4096];
  snprintf(text, sizeof text, fmt, (long long)n, (long long)n, (long long)n, (long long)n, (long long)n,
           (long long)n, (long long)n, (long long)n, (long long)n, (long long)n, (long long)n, (long long)n,
           (long long)n, (long long)n, (long long)n, (long long)n, (long long)n, (long long)n);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s\n%s", err.line, err.col, err.msg, text);
  const hlo_computation *c = m->entry;
  hlo_value *args[8] = {0};
  for (int k = 0; k < c->nparams; k++)
    args[k] = noise(c->params[k]->shape.type, n, 12345u + 77u * (uint32_t)k, k == 0);

  chk_fuse_plan *p = chk_fuse_plan_build(c);
  assert_non_null(p);
  assert_true(chk_fuse_group_count(p) >= min_groups);
  int most = 0;
  for (int g = 0; g < chk_fuse_group_count(p); g++) {
    const hlo_instr *const *mem;
    int nm = chk_fuse_group_members(p, g, &mem);
    if (nm > most)
      most = nm;
  }
  assert_true(most >= min_members);

  hlo_value **ref = walk(m, args, NULL);
  hlo_value **fused = walk(m, args, p);
  int compared = 0;
  for (int i = 0; i < c->ninstrs; i++) {
    if (!fused[i])
      continue;
    assert_non_null(ref[i]);
    if (!hlo_value_equal(ref[i], fused[i])) {
      const hlo_value *a = ref[i], *b = fused[i];
      for (int64_t e = 0; e < a->count && a->type != HLO_TUPLE; e++)
        if (memcmp((char *)a->data + e * (int64_t)a->elem_size, (char *)b->data + e * (int64_t)b->elem_size,
                   a->elem_size) != 0)
          fail_msg("%s differs at element %lld: %.9g vs %.9g", c->instrs[i]->name, (long long)e,
                   hlo_value_get_f64(a, e), hlo_value_get_f64(b, e));
      fail_msg("%s differs", c->instrs[i]->name);
    }
    compared++;
  }
  assert_true(compared > 0);

  /* The public path gives the same root. */
  chk_eval_opts o = {.replicas = 1};
  hlo_value *out = NULL;
  if (chk_eval_module(m, c->nparams, args, &o, &out, &err) != 0)
    fail_msg("eval: %s", err.msg);
  assert_true(hlo_value_equal(out, ref[c->root->index]));
  hlo_value_unref(out);

  free_vals(ref, c->ninstrs);
  free_vals(fused, c->ninstrs);
  for (int k = 0; k < c->nparams; k++)
    hlo_value_unref(args[k]);
  chk_fuse_plan_free(p);
  hlo_module_free(m);
}

static const char kChainF32[] =
    "HloModule chain_f32\n"
    "ENTRY e {\n"
    "  x = f32[%lld] parameter(0)\n"
    "  y = f32[%lld] parameter(1)\n"
    "  half = f32[] constant(0.5)\n"
    "  h = f32[%lld] broadcast(half), dimensions={}\n"
    "  m = f32[%lld] multiply(x, h)\n"
    "  a = f32[%lld] add(m, y)\n"
    "  t = f32[%lld] tanh(a)\n"
    "  ex = f32[%lld] exponential(t)\n"
    "  s = f32[%lld] subtract(ex, x)\n"
    "  mx = f32[%lld] maximum(s, m)\n"
    "  l = f32[%lld] log(x)\n"
    "  q = f32[%lld] rsqrt(x)\n"
    "  d = f32[%lld] divide(mx, a)\n"
    "  w = f32[%lld] multiply(d, l)\n"
    "  ROOT r = f32[%lld] add(w, q)\n"
    "}\n";

static const char kChainBf16[] =
    "HloModule chain_bf16\n"
    "ENTRY e {\n"
    "  x = bf16[%lld] parameter(0)\n"
    "  y = f32[%lld] parameter(1)\n"
    "  xf = f32[%lld] convert(x)\n"
    "  s = f32[%lld] multiply(xf, y)\n"
    "  sb = bf16[%lld] convert(s)\n"
    "  t = bf16[%lld] add(sb, x)\n"
    "  u = bf16[%lld] tanh(t)\n"
    "  v = bf16[%lld] multiply(u, x)\n"
    "  g = pred[%lld] compare(v, x), direction=GT\n"
    "  sel = bf16[%lld] select(g, v, t)\n"
    "  e1 = bf16[%lld] exponential(sel)\n"
    "  lo = bf16[] constant(0.25)\n"
    "  hi = bf16[] constant(1.5)\n"
    "  cl = bf16[%lld] clamp(lo, e1, hi)\n"
    "  ROOT r = f32[%lld] convert(cl)\n"
    "}\n";

/* f16 with a member needed outside the group (the tuple reads `mid`), a
 * convert through f32 and back, and integer/pred nodes in the chain. */
static const char kChainF16[] =
    "HloModule chain_f16\n"
    "ENTRY e {\n"
    "  x = f16[%lld] parameter(0)\n"
    "  y = f16[%lld] parameter(1)\n"
    "  l = f16[%lld] log(x)\n"
    "  q = f16[%lld] sqrt(x)\n"
    "  mid = f16[%lld] multiply(l, y)\n"
    "  k = f16[%lld] add(mid, q)\n"
    "  kf = f32[%lld] convert(k)\n"
    "  kk = f32[%lld] multiply(kf, kf)\n"
    "  kh = f16[%lld] convert(kk)\n"
    "  ki = s32[%lld] convert(kh)\n"
    "  one = s32[] constant(1)\n"
    "  kj = s32[%lld] add(ki, one)\n"
    "  kjf = f16[%lld] convert(kj)\n"
    "  z = f16[%lld] divide(kjf, q)\n"
    "  ROOT r = (f16[%lld], f16[%lld]) tuple(mid, z)\n"
    "}\n";

static void test_fuse_f32(void **state) {
  (void)state;
  check_chain(kChainF32, 5000, 1, 10);
  check_chain(kChainF32, CHK_FUSE_PARALLEL_MIN * 2 + 3, 1, 10);
}

static void test_fuse_bf16(void **state) {
  (void)state;
  check_chain(kChainBf16, 4096, 1, 10);
  check_chain(kChainBf16, CHK_FUSE_PARALLEL_MIN + 1001, 1, 10);
}

static void test_fuse_f16(void **state) {
  (void)state;
  check_chain(kChainF16, 6001, 1, 8);
  check_chain(kChainF16, CHK_FUSE_PARALLEL_MIN * 3 + 17, 1, 8);
}

/* Splat operands of add/subtract/multiply/divide/maximum/minimum are read as
 * one element by their own kernels in a fused group, and chains write over
 * the buffer of an operand they are the last reader of.  Both must give
 * bitwise what op-by-op evaluation (broadcasts materialised, kernels over full
 * arrays, no buffer reuse) gives: special inputs (NaN of both signs, +-0,
 * +-inf, subnormals) against constants on either side, including NaN and
 * -0, then the result reused in place (op(s, c)) and squared (op(u, u), both
 * operands the reused buffer). */
static void check_splat_chains(const char *ty, int64_t n, int o, int side) {
  static const char *const ops[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum"};
  static const char *const cs[] = {"1.5", "-0", "0", "nan", "-inf", "-2", "0.375"};
  enum { NOPS = 6, NCS = 7 };
  size_t cap = 8192, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  len += (size_t)snprintf(text + len, cap - len, "HloModule splats\nENTRY e {\n  x = %s[%lld] parameter(0)\n", ty,
                          (long long)n);
  for (int c = 0; c < NCS; c++)
    len += (size_t)snprintf(text + len, cap - len, "  c%d = %s[] constant(%s)\n", c, ty, cs[c]);
  int k = 0;
  for (int c = 0; c < NCS; c++, k++) {
      const char *op = ops[o], *op2 = ops[(o + 1) % NOPS];
      long long nn = (long long)n;
      /* a broadcast per chain, so that it folds into the chain's group */
      len += (size_t)snprintf(text + len, cap - len, "  b%d = %s[%lld] broadcast(c%d), dimensions={}\n", k, ty,
                              nn, c);
      if (side == 0) /* splat on the right */
        len += (size_t)snprintf(text + len, cap - len,
                                "  s%d = %s[%lld] %s(x, b%d)\n  u%d = %s[%lld] %s(s%d, b%d)\n", k, ty, nn, op, k,
                                k, ty, nn, op, k, k);
      else /* splat on the left */
        len += (size_t)snprintf(text + len, cap - len,
                                "  s%d = %s[%lld] %s(b%d, x)\n  u%d = %s[%lld] %s(b%d, s%d)\n", k, ty, nn, op, k,
                                k, ty, nn, op, k, k);
      len += (size_t)snprintf(text + len, cap - len, "  w%d = %s[%lld] %s(u%d, u%d)\n", k, ty, nn, op2, k, k);
  }
  len += (size_t)snprintf(text + len, cap - len, "  ROOT t = (");
  for (int i = 0; i < k; i++)
    len += (size_t)snprintf(text + len, cap - len, "%s%s[%lld]", i ? ", " : "", ty, (long long)n);
  len += (size_t)snprintf(text + len, cap - len, ") tuple(");
  for (int i = 0; i < k; i++)
    len += (size_t)snprintf(text + len, cap - len, "%sw%d", i ? ", " : "", i);
  len += (size_t)snprintf(text + len, cap - len, ")\n}\n");
  assert_true(len < cap);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, len, &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  free(text);
  const hlo_computation *c = m->entry;
  hlo_etype t = c->params[0]->shape.type;
  hlo_value *x = hlo_value_array(t, 1, &n);
  assert_non_null(x);
  const double special[] = {NAN, -NAN, -0.0, 0.0, INFINITY, -INFINITY, 1e-45, -1e-40, 6e-8, -3.5, 0.375, 1.5, -2, 2,
                            1e30, -65504, 1.0 / 3};
  const int nsp = (int)(sizeof special / sizeof *special);
  uint32_t sd = 99;
  for (int64_t i = 0; i < n; i++) {
    sd = sd * 1664525u + 1013904223u;
    double v = i % 3 == 0 ? special[(i / 3) % nsp] : ((double)(sd >> 8) / (double)(1u << 24)) * 6.0 - 3.0;
    hlo_value_set_f64(x, i, v);
  }
  chk_fuse_plan *p = chk_fuse_plan_build(c);
  assert_non_null(p);
  assert_true(chk_fuse_group_count(p) >= NCS);
  hlo_value *args[1] = {x};
  hlo_value **ref = walk(m, args, NULL);
  hlo_value **fused = walk(m, args, p);
  int compared = 0;
  for (int i = 0; i < c->ninstrs; i++) {
    if (!fused[i] || fused[i]->type == HLO_TUPLE)
      continue;
    const hlo_value *a = ref[i], *b = fused[i];
    assert_non_null(a);
    for (int64_t e = 0; e < a->count; e++)
      if (memcmp((char *)a->data + e * (int64_t)a->elem_size, (char *)b->data + e * (int64_t)b->elem_size,
                 a->elem_size) != 0)
        fail_msg("%s %s (%s, splat %s) differs at element %lld: %.9g vs %.9g", ty, c->instrs[i]->name, ops[o], side ? "left" : "right", (long long)e,
                 hlo_value_get_f64(a, e), hlo_value_get_f64(b, e));
    compared++;
  }
  assert_true(compared >= NCS + 1);
  chk_eval_opts eo = {.replicas = 1};
  hlo_value *out = NULL;
  if (chk_eval_module(m, 1, args, &eo, &out, &err) != 0)
    fail_msg("eval: %s", err.msg);
  assert_true(hlo_value_equal(out, ref[c->root->index]));
  hlo_value_unref(out);
  free_vals(ref, c->ninstrs);
  free_vals(fused, c->ninstrs);
  hlo_value_unref(x);
  chk_fuse_plan_free(p);
  hlo_module_free(m);
}

static void test_fuse_splat_operands(void **state) {
  (void)state;
  for (int o = 0; o < 6; o++)
    for (int side = 0; side < 2; side++) {
      check_splat_chains("f32", 5003, o, side);
      check_splat_chains("f64", 4099, o, side);
      check_splat_chains("bf16", 4101, o, side);
      check_splat_chains("f16", 6143, o, side);
    }
  check_splat_chains("f32", CHK_FUSE_PARALLEL_MIN + 2053, 4, 1);
}

/* Plan structure: the broadcast of a scalar is folded, a member read after
 * the root is materialised, a member read before the root by another op
 * stays out, and small arrays are not planned at all. */
static void test_fuse_plan(void **state) {
  (void)state;
  char text[2048];
  snprintf(text, sizeof text, kChainF32, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL,
           8192LL, 8192LL, 8192LL, 8192LL, 8192LL);
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  const hlo_computation *c = m->entry;
  chk_fuse_plan *p = chk_fuse_plan_build(c);
  assert_non_null(p);
  assert_int_equal(chk_fuse_group_count(p), 1);
  const hlo_instr *r = hlo_computation_find(c, "r"), *h = hlo_computation_find(c, "h");
  assert_true(chk_fuse_is_root(p, r));
  /* every elementwise op and the broadcast evaluate at r */
  const char *members[] = {"h", "m", "a", "t", "ex", "s", "mx", "l", "q", "d", "w", "r"};
  for (size_t i = 0; i < sizeof members / sizeof *members; i++)
    assert_int_equal(chk_fuse_eval_pos(p, hlo_computation_find(c, members[i])), r->index);
  assert_int_equal(chk_fuse_eval_pos(p, hlo_computation_find(c, "x")), hlo_computation_find(c, "x")->index);
  const hlo_instr *const *in;
  int nin = chk_fuse_group_inputs(p, r, &in);
  assert_int_equal(nin, 3); /* x, half, y */
  for (int k = 0; k < nin; k++)
    assert_true(in[k] != h);
  chk_fuse_plan_free(p);
  hlo_module_free(m);

  /* materialised member: `mid` is read by the tuple after the root */
  snprintf(text, sizeof text, kChainF16, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL,
           8192LL, 8192LL, 8192LL, 8192LL, 8192LL, 8192LL);
  m = hlo_parse(text, strlen(text), &err);
  assert_non_null(m);
  c = m->entry;
  p = chk_fuse_plan_build(c);
  assert_non_null(p);
  const hlo_instr *z = hlo_computation_find(c, "z"), *mid = hlo_computation_find(c, "mid");
  assert_true(chk_fuse_is_root(p, z));
  assert_int_equal(chk_fuse_eval_pos(p, mid), z->index);
  chk_fuse_plan_free(p);
  hlo_module_free(m);

  /* a member needed by a non-elementwise op before the root stays out */
  const char *t2 = "HloModule t\n"
                   "add2 { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                   "ENTRY e {\n"
                   "  x = f32[8192] parameter(0)\n"
                   "  e1 = f32[8192] exponential(x)\n"
                   "  zero = f32[] constant(0)\n"
                   "  red = f32[] reduce(e1, zero), dimensions={0}, to_apply=add2\n"
                   "  b = f32[8192] broadcast(red), dimensions={}\n"
                   "  n = f32[8192] negate(e1)\n"
                   "  ROOT r = f32[8192] add(n, b)\n"
                   "}\n";
  m = hlo_parse(t2, strlen(t2), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  c = m->entry;
  p = chk_fuse_plan_build(c);
  assert_non_null(p);
  const hlo_instr *e1 = hlo_computation_find(c, "e1");
  r = hlo_computation_find(c, "r");
  assert_true(chk_fuse_is_root(p, r));
  assert_int_equal(chk_fuse_eval_pos(p, hlo_computation_find(c, "n")), r->index);
  assert_int_equal(chk_fuse_eval_pos(p, hlo_computation_find(c, "b")), r->index); /* folded splat */
  assert_int_equal(chk_fuse_eval_pos(p, e1), e1->index);
  chk_fuse_plan_free(p);
  hlo_module_free(m);

  /* nothing is planned for small arrays */
  const char *t3 = "HloModule t\nENTRY e {\n x = f32[100] parameter(0)\n e1 = f32[100] exponential(x)\n"
                   " ROOT r = f32[100] negate(e1)\n}\n";
  m = hlo_parse(t3, strlen(t3), &err);
  assert_non_null(m);
  assert_null(chk_fuse_plan_build(m->entry));
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32_binary),
      cmocka_unit_test(test_max_min_nan_and_zero),
      cmocka_unit_test(test_f32_unary),
      cmocka_unit_test(test_f64),
      cmocka_unit_test(test_bf16_rounds_each_op),
      cmocka_unit_test(test_f16_overflow_and_qat),
      cmocka_unit_test(test_f8),
      cmocka_unit_test(test_int_div_rem),
      cmocka_unit_test(test_int_arith_wraps),
      cmocka_unit_test(test_shifts),
      cmocka_unit_test(test_popcnt_clz),
      cmocka_unit_test(test_int_power),
      cmocka_unit_test(test_sub_byte),
      cmocka_unit_test(test_pred),
      cmocka_unit_test(test_compare_float),
      cmocka_unit_test(test_compare_totalorder),
      cmocka_unit_test(test_compare_int),
      cmocka_unit_test(test_select_clamp),
      cmocka_unit_test(test_convert),
      cmocka_unit_test(test_bitcast_convert),
      cmocka_unit_test(test_reduce_precision),
      cmocka_unit_test(test_complex),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_fuse_plan),
      cmocka_unit_test(test_fuse_f32),
      cmocka_unit_test(test_fuse_bf16),
      cmocka_unit_test(test_fuse_f16),
      cmocka_unit_test(test_fuse_splat_operands),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
