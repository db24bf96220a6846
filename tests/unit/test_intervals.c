/* test_intervals.c — the backward interval analysis (check/intervals.c) and
 * the constrained, edge and oob-indices profiles built on it.
 *
 * Every expected range is worked out by hand in the comment above it from
 * the rules in intervals.h: CHK_POS_MIN = 1/16, divisors |b| >= 0.5, and
 * the headroom cap of a 16-bit-or-wider float = its largest finite / 16.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "hlo/hlo_parse.h"
#include "check/inputs.h"
#include "check/intervals.h"

static hlo_module *parse(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  return m;
}

static chk_range range_of(const char *text, int k) {
  hlo_module *m = parse(text);
  chk_range r[8];
  assert_true(m->entry->nparams <= 8);
  assert_int_equal(chk_intervals_analyze(m, false, r), 0);
  chk_range out = r[k];
  hlo_module_free(m);
  return out;
}

static chk_range wide_range_of(const char *text, int k) {
  hlo_module *m = parse(text);
  chk_range r[8];
  assert_true(m->entry->nparams <= 8);
  assert_int_equal(chk_intervals_analyze(m, true, r), 0);
  chk_range out = r[k];
  hlo_module_free(m);
  return out;
}

static hlo_value *make_one(const char *text, int k, chk_inputs_profile p, uint64_t seed) {
  hlo_module *m = parse(text);
  hlo_value *args[8];
  hlo_error err = {0};
  chk_inputs_opts o = {.seed = seed, .profile = p};
  assert_true(m->entry->nparams <= 8);
  if (chk_inputs_make(m, &o, args, &err) != 0)
    fail_msg("chk_inputs_make: %s", err.msg);
  for (int i = 0; i < m->entry->nparams; i++)
    if (i != k)
      hlo_value_unref(args[i]);
  hlo_module_free(m);
  return args[k];
}

static void near(double got, double want) {
  if (!(fabs(got - want) <= 1e-9 * fmax(1, fabs(want))))
    fail_msg("got %.17g, want %.17g", got, want);
}

/* log(x): x >= 1/16.  Its upper end is exp(cap of f32) = inf. */
static const char *log_module = "HloModule l\n"
                                "ENTRY e {\n"
                                "  x = f32[1000] parameter(0)\n"
                                "  ROOT l = f32[1000] log(x)\n"
                                "}\n";

static void test_log_argument_positive(void **state) {
  (void)state;
  chk_range r = range_of(log_module, 0);
  near(r.lo, 0x1p-4);
  assert_true(r.hi == INFINITY);
  /* Met with the naive [-1, 1]: every value in [1/16, 1]. */
  hlo_value *v = make_one(log_module, 0, CHK_INPUTS_CONSTRAINED, 3);
  for (int64_t i = 0; i < v->count; i++) {
    double x = hlo_value_get_f64(v, i);
    assert_true(x >= 0x1p-4 && x <= 1);
  }
  hlo_value_unref(v);
  /* Naive ignores the demand: about half the values are negative. */
  v = make_one(log_module, 0, CHK_INPUTS_NAIVE, 3);
  int neg = 0;
  for (int64_t i = 0; i < v->count; i++)
    neg += hlo_value_get_f64(v, i) < 0;
  assert_true(neg > 400 && neg < 600);
  hlo_value_unref(v);
}

/* divide(a, b): |b| >= 0.5 with both signs; a is only asked to keep the
 * quotient under the cap: |a| <= cap * 0.5. */
static const char *div_module = "HloModule d\n"
                                "ENTRY e {\n"
                                "  a = f32[1000] parameter(0)\n"
                                "  b = f32[1000] parameter(1)\n"
                                "  ROOT q = f32[1000] divide(a, b)\n"
                                "}\n";

static void test_divisor_away_from_zero(void **state) {
  (void)state;
  chk_range b = range_of(div_module, 1), a = range_of(div_module, 0);
  near(b.min_mag, 0.5);
  near(a.min_mag, 0);
  near(a.hi, 3.4028234663852886e38 / 16 * 0.5);
  hlo_value *v = make_one(div_module, 1, CHK_INPUTS_CONSTRAINED, 1);
  int neg = 0, pos = 0;
  for (int64_t i = 0; i < v->count; i++) {
    double x = hlo_value_get_f64(v, i);
    assert_true(fabs(x) >= 0.5 && fabs(x) <= 1);
    neg += x < 0;
    pos += x > 0;
  }
  assert_true(neg > 400 && pos > 400);
  hlo_value_unref(v);
}

/* Factors of a -inf mask (corpus module 0111: a -inf pad into a
 * convolution).  The dot sums 8 products w[i, k] * p[k, j]; in the padded
 * column p is -inf, and weights of both signs would make -inf + inf = NaN:
 * w >= 1/16 keeps every product -inf.  Its upper end is the dot's factor
 * demand sqrt(cap / 8), cap = f32 max / 16; x gets that demand in both
 * directions and nothing more (w holds no infinity).
 * The elementwise multiply meets a value holding both -inf (p2) and +inf
 * (its negation): no sign of y keeps both, but |y| >= 1/16 keeps 0 * inf
 * out; y's range is the multiply's factor demand [-sqrt(cap), sqrt(cap)]. */
static const char *mask_factor_module =
    "HloModule m\n"
    "ENTRY e {\n"
    "  x = f32[8,3] parameter(0)\n"
    "  w = f32[16,8] parameter(1)\n"
    "  ninf = f32[] constant(-inf)\n"
    "  p = f32[8,4] pad(x, ninf), padding=0_0x0_1\n"
    "  d = f32[16,4] dot(w, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  x2 = f32[4] parameter(2)\n"
    "  p2 = f32[6] pad(x2, ninf), padding=0_2\n"
    "  n2 = f32[6] negate(p2)\n"
    "  c = f32[12] concatenate(p2, n2), dimensions={0}\n"
    "  y = f32[12] parameter(3)\n"
    "  m = f32[12] multiply(c, y)\n"
    "  ROOT t = (f32[16,4], f32[12]) tuple(d, m)\n"
    "}\n";

static void test_mask_factors(void **state) {
  (void)state;
  double cap = 3.4028234663852886e38 / 16;
  chk_range x = range_of(mask_factor_module, 0), w = range_of(mask_factor_module, 1),
            y = range_of(mask_factor_module, 3);
  near(w.lo, 0x1p-4);
  near(w.hi, sqrt(cap / 8));
  near(w.min_mag, 0);
  near(x.lo, -sqrt(cap / 8));
  near(x.hi, sqrt(cap / 8));
  near(x.min_mag, 0);
  near(y.lo, -sqrt(cap));
  near(y.hi, sqrt(cap));
  near(y.min_mag, 0x1p-4);
  /* Drawn: w in [1/16, 1], y with 1/16 <= |y| <= 1. */
  hlo_value *v = make_one(mask_factor_module, 1, CHK_INPUTS_CONSTRAINED, 2);
  for (int64_t i = 0; i < v->count; i++)
    assert_true(hlo_value_get_f64(v, i) >= 0x1p-4 && hlo_value_get_f64(v, i) <= 1);
  hlo_value_unref(v);
  v = make_one(mask_factor_module, 3, CHK_INPUTS_CONSTRAINED, 2);
  for (int64_t i = 0; i < v->count; i++)
    assert_true(fabs(hlo_value_get_f64(v, i)) >= 0x1p-4 && fabs(hlo_value_get_f64(v, i)) <= 1);
  hlo_value_unref(v);
}

/* No mask to keep: a -inf that cannot reach the product.  A row maximum
 * with a -inf init is -inf only over an empty row (the init is the
 * maximum's neutral element), and max(x, -inf) is x.  Neither factor y
 * nor z is asked to be positive: each gets only the multiply's factor
 * demand [-sqrt(cap), sqrt(cap)], cap = f32 max / 16. */
static const char *no_mask_module = "HloModule n\n"
                                    "max {\n"
                                    "  p = f32[] parameter(0)\n"
                                    "  q = f32[] parameter(1)\n"
                                    "  ROOT m = f32[] maximum(p, q)\n"
                                    "}\n"
                                    "ENTRY e {\n"
                                    "  x = f32[4,8] parameter(0)\n"
                                    "  ninf = f32[] constant(-inf)\n"
                                    "  m = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max\n"
                                    "  y = f32[4] parameter(1)\n"
                                    "  a = f32[4] multiply(m, y)\n"
                                    "  b = f32[4] broadcast(ninf), dimensions={}\n"
                                    "  c = f32[4] maximum(y, b)\n"
                                    "  z = f32[4] parameter(2)\n"
                                    "  d = f32[4] multiply(c, z)\n"
                                    "  ROOT t = (f32[4], f32[4]) tuple(a, d)\n"
                                    "}\n";

static void test_unreachable_infinity_asks_nothing(void **state) {
  (void)state;
  double cap = 3.4028234663852886e38 / 16;
  chk_range z = range_of(no_mask_module, 2);
  near(z.lo, -sqrt(cap));
  near(z.hi, sqrt(cap));
  near(z.min_mag, 0);
  /* y is also a factor of a and an operand of c: no lower bound above 0. */
  assert_true(range_of(no_mask_module, 1).lo < 0);
}

/* EDGE draws floats up to the headroom cap where nothing bounds them, so
 * its analysis starts from [-cap, cap] (cap = f32 max / 16), not [-1, 1].
 * (x + y)^2: the square asks |x + y| <= sqrt(cap); neither operand's
 * forward range fits in half of it, so each gets half: |x|, |y| <=
 * sqrt(cap) / 2.  With the naive start y in [-1, 1] leaves x the rest,
 * sqrt(cap) - 1, and y nothing.
 * A product reduce-window of 2x3 = 6 terms asks |z| <= cap^(1/6).
 * A multi-output fusion's tuple read back through get-tuple-element and
 * multiplied: the demand reaches u and v through the tuple, each factor
 * sqrt(cap), and through the adds each half of it. */
static const char *wide_module = "HloModule w\n"
                                 "mul {\n"
                                 "  a = f32[] parameter(0)\n"
                                 "  b = f32[] parameter(1)\n"
                                 "  ROOT m = f32[] multiply(a, b)\n"
                                 "}\n"
                                 "two {\n"
                                 "  p = f32[8] parameter(0)\n"
                                 "  q = f32[8] parameter(1)\n"
                                 "  s = f32[8] add(p, q)\n"
                                 "  d = f32[8] add(q, p)\n"
                                 "  ROOT t = (f32[8], f32[8]) tuple(s, d)\n"
                                 "}\n"
                                 "ENTRY e {\n"
                                 "  x = f32[8] parameter(0)\n"
                                 "  y = f32[8] parameter(1)\n"
                                 "  s = f32[8] add(x, y)\n"
                                 "  sq = f32[8] multiply(s, s)\n"
                                 "  z = f32[8,6] parameter(2)\n"
                                 "  one = f32[] constant(1)\n"
                                 "  rw = f32[8,6] reduce-window(z, one), window={size=2x3 pad=0_1x1_1}, to_apply=mul\n"
                                 "  u = f32[8] parameter(3)\n"
                                 "  v = f32[8] parameter(4)\n"
                                 "  f = (f32[8], f32[8]) fusion(u, v), kind=kLoop, calls=two\n"
                                 "  g0 = f32[8] get-tuple-element(f), index=0\n"
                                 "  g1 = f32[8] get-tuple-element(f), index=1\n"
                                 "  pr = f32[8] multiply(g0, g1)\n"
                                 "  ROOT t = (f32[8], f32[8,6], f32[8]) tuple(sq, rw, pr)\n"
                                 "}\n";

static void test_edge_analysis_starts_wide(void **state) {
  (void)state;
  double cap = 3.4028234663852886e38 / 16;
  chk_range x = wide_range_of(wide_module, 0), y = wide_range_of(wide_module, 1);
  near(x.lo, -sqrt(cap) / 2);
  near(x.hi, sqrt(cap) / 2);
  near(y.hi, sqrt(cap) / 2);
  chk_range xn = range_of(wide_module, 0), yn = range_of(wide_module, 1);
  near(xn.hi, sqrt(cap) - 1);
  assert_true(yn.hi == INFINITY);
  near(wide_range_of(wide_module, 2).hi, pow(cap, 1.0 / 6));
  near(wide_range_of(wide_module, 3).hi, sqrt(cap) / 2);
  near(wide_range_of(wide_module, 4).hi, sqrt(cap) / 2);
  /* Drawn under EDGE: the near-overflow specials stop at the demand. */
  hlo_value *v = make_one(wide_module, 1, CHK_INPUTS_EDGE, 1);
  for (int64_t i = 0; i < v->count; i++)
    assert_true(fabs(hlo_value_get_f64(v, i)) <= sqrt(cap) / 2 * (1 + 0x1p-20));
  hlo_value_unref(v);
}

/* Rotary embedding: q * cos(a) - q' * sin(a).  Edge angles stop at 2^24,
 * where the device's argument reduction still holds (beyond it its sine
 * leaves [-1, 1] and the products overflow).  The naive [-1, 1] meets
 * that demand, so constrained angles keep their naive bits. */
static const char *trig_module = "HloModule r\n"
                                 "ENTRY e {\n"
                                 "  q = f32[64] parameter(0)\n"
                                 "  a = f32[64] parameter(1)\n"
                                 "  c = f32[64] cosine(a)\n"
                                 "  s = f32[64] sine(a)\n"
                                 "  x = f32[64] multiply(q, c)\n"
                                 "  y = f32[64] multiply(q, s)\n"
                                 "  ROOT d = f32[64] subtract(x, y)\n"
                                 "}\n";

static void test_trig_arguments_bounded(void **state) {
  (void)state;
  chk_range a = wide_range_of(trig_module, 1);
  assert_true(a.lo == -0x1p24 && a.hi == 0x1p24);
  hlo_value *c = make_one(trig_module, 1, CHK_INPUTS_CONSTRAINED, 3);
  hlo_value *n = make_one(trig_module, 1, CHK_INPUTS_NAIVE, 3);
  assert_true(hlo_value_equal(c, n));
  hlo_value_unref(c);
  hlo_value_unref(n);
  hlo_value *v = make_one(trig_module, 1, CHK_INPUTS_EDGE, 3);
  for (int64_t i = 0; i < v->count; i++)
    assert_true(fabs(hlo_value_get_f64(v, i)) <= 0x1p24);
  hlo_value_unref(v);
}

/* exp in f16: exp(x) <= 65504 / 16 = 4094, so x <= ln 4094 = 8.3173... */
static const char *exp_module = "HloModule x\n"
                                "ENTRY e {\n"
                                "  x = f16[16] parameter(0)\n"
                                "  ROOT y = f16[16] exponential(x)\n"
                                "}\n";

static void test_exp_bounded(void **state) {
  (void)state;
  chk_range r = range_of(exp_module, 0);
  near(r.hi, log(4094.0));
  assert_true(r.lo == -INFINITY);
}

/* rsqrt(sum of K = 64 terms): the sum >= 1/16, so each term >= 1/1024;
 * the sum of f16 terms x of length 1000 below the f16 cap 4094 asks
 * |x| <= 4.094. */
static const char *reduce_module = "HloModule r\n"
                                   "add {\n"
                                   "  p = f32[] parameter(0)\n"
                                   "  q = f32[] parameter(1)\n"
                                   "  ROOT s = f32[] add(p, q)\n"
                                   "}\n"
                                   "addh {\n"
                                   "  p = f16[] parameter(0)\n"
                                   "  q = f16[] parameter(1)\n"
                                   "  ROOT s = f16[] add(p, q)\n"
                                   "}\n"
                                   "ENTRY e {\n"
                                   "  x = f32[4,64] parameter(0)\n"
                                   "  z = f32[] constant(0)\n"
                                   "  s = f32[4] reduce(x, z), dimensions={1}, to_apply=add\n"
                                   "  r = f32[4] rsqrt(s)\n"
                                   "  h = f16[1000] parameter(1)\n"
                                   "  zh = f16[] constant(0)\n"
                                   "  sh = f16[] reduce(h, zh), dimensions={0}, to_apply=addh\n"
                                   "  ROOT t = (f32[4], f16[]) tuple(r, sh)\n"
                                   "}\n";

static void test_reduction_scaled_by_length(void **state) {
  (void)state;
  chk_range r = range_of(reduce_module, 0), h = range_of(reduce_module, 1);
  near(r.lo, 0x1p-10);
  near(h.hi, 4.094);
  near(h.lo, -4.094);
}

/* A reduce whose init is a parameter: the init is the reducer's neutral
 * element, 0 for add and the lowest finite f32 for maximum.  The sort key
 * is flagged, and constrained keys are distinct. */
static const char *init_module = "HloModule i\n"
                                 "add {\n"
                                 "  p = f32[] parameter(0)\n"
                                 "  q = f32[] parameter(1)\n"
                                 "  ROOT s = f32[] add(p, q)\n"
                                 "}\n"
                                 "max {\n"
                                 "  p = f32[] parameter(0)\n"
                                 "  q = f32[] parameter(1)\n"
                                 "  ROOT s = f32[] maximum(p, q)\n"
                                 "}\n"
                                 "lt {\n"
                                 "  p = f32[] parameter(0)\n"
                                 "  q = f32[] parameter(1)\n"
                                 "  ROOT c = pred[] compare(p, q), direction=LT\n"
                                 "}\n"
                                 "ENTRY e {\n"
                                 "  x = f32[4,8] parameter(0)\n"
                                 "  i0 = f32[] parameter(1)\n"
                                 "  i1 = f32[] parameter(2)\n"
                                 "  k = f32[4096] parameter(3)\n"
                                 "  s = f32[4] reduce(x, i0), dimensions={1}, to_apply=add\n"
                                 "  m = f32[4] reduce(x, i1), dimensions={1}, to_apply=max\n"
                                 "  o = f32[4096] sort(k), dimensions={0}, to_apply=lt\n"
                                 "  ROOT t = (f32[4], f32[4], f32[4096]) tuple(s, m, o)\n"
                                 "}\n";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int ties(const hlo_value *v) {
  double *x = malloc(sizeof *x * (size_t)v->count);
  for (int64_t i = 0; i < v->count; i++)
    x[i] = hlo_value_get_f64(v, i);
  qsort(x, (size_t)v->count, sizeof *x, cmp_double);
  int t = 0;
  for (int64_t i = 1; i < v->count; i++)
    t += x[i] == x[i - 1];
  free(x);
  return t;
}

static void test_neutral_inits_and_sort_keys(void **state) {
  (void)state;
  chk_range a = range_of(init_module, 1), b = range_of(init_module, 2), k = range_of(init_module, 3);
  assert_true(a.lo == 0 && a.hi == 0);
  near(b.lo, -3.4028234663852886e38);
  assert_true(b.hi == b.lo);
  assert_true(k.sort_key);
  hlo_value *v = make_one(init_module, 1, CHK_INPUTS_CONSTRAINED, 0);
  assert_true(hlo_value_get_f64(v, 0) == 0);
  hlo_value_unref(v);
  v = make_one(init_module, 2, CHK_INPUTS_CONSTRAINED, 0);
  assert_true(hlo_value_get_f64(v, 0) == -3.4028234663852886e38);
  hlo_value_unref(v);
  /* 4096 keys: no ties when constrained; edge draws eight values only. */
  v = make_one(init_module, 3, CHK_INPUTS_CONSTRAINED, 0);
  assert_int_equal(ties(v), 0);
  hlo_value_unref(v);
  v = make_one(init_module, 3, CHK_INPUTS_EDGE, 0);
  assert_int_equal(ties(v), 4096 - 8);
  hlo_value_unref(v);
}

/* Integer keys, and a comparator that sorts by its second operand: the
 * keys are k2 (s32, compared through params 2 and 3), not the payload v;
 * u8 keys u hold only 256 values for 1000 elements. */
static const char *int_keys_module = "HloModule k\n"
                                     "by_second {\n"
                                     "  a = f32[] parameter(0)\n"
                                     "  b = f32[] parameter(1)\n"
                                     "  c = s32[] parameter(2)\n"
                                     "  d = s32[] parameter(3)\n"
                                     "  ROOT lt = pred[] compare(c, d), direction=LT\n"
                                     "}\n"
                                     "ult {\n"
                                     "  a = u8[] parameter(0)\n"
                                     "  b = u8[] parameter(1)\n"
                                     "  ROOT lt = pred[] compare(a, b), direction=LT\n"
                                     "}\n"
                                     "ENTRY e {\n"
                                     "  v = f32[4096] parameter(0)\n"
                                     "  k2 = s32[4096] parameter(1)\n"
                                     "  s = (f32[4096], s32[4096]) sort(v, k2), dimensions={0}, to_apply=by_second\n"
                                     "  u = u8[1000] parameter(2)\n"
                                     "  su = u8[1000] sort(u), dimensions={0}, to_apply=ult\n"
                                     "  ROOT t = ((f32[4096], s32[4096]), u8[1000]) tuple(s, su)\n"
                                     "}\n";

static int distinct_values(const hlo_value *v) { return (int)v->count - ties(v); }

static void test_integer_sort_keys_with_and_without_ties(void **state) {
  (void)state;
  assert_false(range_of(int_keys_module, 0).sort_key);
  assert_true(range_of(int_keys_module, 1).sort_key);
  assert_true(range_of(int_keys_module, 2).sort_key);
  /* Constrained s32: a permutation of the 4096 integers -2048 .. 2047. */
  hlo_value *v = make_one(int_keys_module, 1, CHK_INPUTS_CONSTRAINED, 4);
  assert_int_equal(ties(v), 0);
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < v->count; i++) {
    lo = fmin(lo, hlo_value_get_f64(v, i));
    hi = fmax(hi, hlo_value_get_f64(v, i));
  }
  near(lo, -2048);
  near(hi, 2047);
  hlo_value_unref(v);
  /* Edge s32: eight of the 17 naive values -8 .. 8, ties everywhere. */
  v = make_one(int_keys_module, 1, CHK_INPUTS_EDGE, 4);
  assert_int_equal(distinct_values(v), 8);
  for (int64_t i = 0; i < v->count; i++)
    assert_true(hlo_value_get_f64(v, i) >= -8 && hlo_value_get_f64(v, i) <= 8);
  hlo_value_unref(v);
  /* Constrained u8: 1000 keys over 256 values, each value 3 or 4 times
   * (1000 = 3 * 256 + 232): the fewest ties the type allows. */
  v = make_one(int_keys_module, 2, CHK_INPUTS_CONSTRAINED, 4);
  int count[256] = {0};
  for (int64_t i = 0; i < v->count; i++)
    count[(int)hlo_value_get_f64(v, i)]++;
  int fours = 0;
  for (int x = 0; x < 256; x++) {
    assert_true(count[x] == 3 || count[x] == 4);
    fours += count[x] == 4;
  }
  assert_int_equal(fours, 232);
  hlo_value_unref(v);
}

/* Variadic reductions with parameter inits.  argmax keeps the greater
 * value and, on equal values, the smaller index: its neutral is (lowest
 * f32, largest s32).  A pairwise sum's is (0, 0).  An s32 maximum's init
 * is the type's lowest, a bitwise and's all ones (-1). */
static const char *variadic_module = "HloModule v\n"
                                     "argmax {\n"
                                     "  a = f32[] parameter(0)\n"
                                     "  ai = s32[] parameter(1)\n"
                                     "  b = f32[] parameter(2)\n"
                                     "  bi = s32[] parameter(3)\n"
                                     "  gt = pred[] compare(a, b), direction=GT\n"
                                     "  eq = pred[] compare(a, b), direction=EQ\n"
                                     "  lt = pred[] compare(ai, bi), direction=LT\n"
                                     "  tie = pred[] and(eq, lt)\n"
                                     "  pick = pred[] or(gt, tie)\n"
                                     "  v = f32[] select(pick, a, b)\n"
                                     "  i = s32[] select(pick, ai, bi)\n"
                                     "  ROOT t = (f32[], s32[]) tuple(v, i)\n"
                                     "}\n"
                                     "pairsum {\n"
                                     "  a = f32[] parameter(0)\n"
                                     "  b = f32[] parameter(1)\n"
                                     "  c = f32[] parameter(2)\n"
                                     "  d = f32[] parameter(3)\n"
                                     "  s = f32[] add(a, c)\n"
                                     "  q = f32[] add(d, b)\n"
                                     "  ROOT t = (f32[], f32[]) tuple(s, q)\n"
                                     "}\n"
                                     "imax {\n"
                                     "  a = s32[] parameter(0)\n"
                                     "  b = s32[] parameter(1)\n"
                                     "  ROOT m = s32[] maximum(a, b)\n"
                                     "}\n"
                                     "iand {\n"
                                     "  a = s32[] parameter(0)\n"
                                     "  b = s32[] parameter(1)\n"
                                     "  ROOT m = s32[] and(a, b)\n"
                                     "}\n"
                                     "ENTRY e {\n"
                                     "  x = f32[4,8] parameter(0)\n"
                                     "  io = s32[4,8] iota(), iota_dimension=1\n"
                                     "  v0 = f32[] parameter(1)\n"
                                     "  i0 = s32[] parameter(2)\n"
                                     "  am = (f32[4], s32[4]) reduce(x, io, v0, i0), dimensions={1}, to_apply=argmax\n"
                                     "  s0 = f32[] parameter(3)\n"
                                     "  s1 = f32[] parameter(4)\n"
                                     "  ps = (f32[4], f32[4]) reduce(x, x, s0, s1), dimensions={1}, to_apply=pairsum\n"
                                     "  y = s32[4,8] parameter(5)\n"
                                     "  m0 = s32[] parameter(6)\n"
                                     "  mx = s32[4] reduce(y, m0), dimensions={1}, to_apply=imax\n"
                                     "  a0 = s32[] parameter(7)\n"
                                     "  an = s32[4] reduce(y, a0), dimensions={1}, to_apply=iand\n"
                                     "  ROOT t = ((f32[4], s32[4]), (f32[4], f32[4]), s32[4], s32[4]) tuple(am, ps, mx, an)\n"
                                     "}\n";

static void test_variadic_and_integer_inits(void **state) {
  (void)state;
  chk_range v0 = range_of(variadic_module, 1), i0 = range_of(variadic_module, 2);
  chk_range s0 = range_of(variadic_module, 3), s1 = range_of(variadic_module, 4);
  chk_range m0 = range_of(variadic_module, 6), a0 = range_of(variadic_module, 7);
  assert_true(v0.lo == -3.4028234663852886e38 && v0.hi == v0.lo);
  assert_true(i0.lo == 2147483647.0 && i0.hi == i0.lo);
  assert_true(s0.lo == 0 && s0.hi == 0 && s1.lo == 0 && s1.hi == 0);
  assert_true(m0.lo == -2147483648.0 && m0.hi == m0.lo);
  assert_true(a0.lo == -1 && a0.hi == -1);
  /* Drawn as those points. */
  hlo_value *v = make_one(variadic_module, 2, CHK_INPUTS_CONSTRAINED, 0);
  assert_true(hlo_value_get_i64(v, 0) == INT32_MAX);
  hlo_value_unref(v);
  v = make_one(variadic_module, 6, CHK_INPUTS_EDGE, 0);
  assert_true(hlo_value_get_i64(v, 0) == INT32_MIN);
  hlo_value_unref(v);
}

/* A demand that already holds costs nothing: rsqrt(x * x + 1) needs
 * x*x + 1 >= 1/16, which the forward range [1, 2] of x*x + 1 already
 * gives: x keeps its naive bits. */
static const char *free_module = "HloModule f\n"
                                 "ENTRY e {\n"
                                 "  x = f32[100] parameter(0)\n"
                                 "  sq = f32[100] multiply(x, x)\n"
                                 "  one = f32[] constant(1)\n"
                                 "  b = f32[100] broadcast(one), dimensions={}\n"
                                 "  s = f32[100] add(sq, b)\n"
                                 "  ROOT r = f32[100] rsqrt(s)\n"
                                 "}\n";

static void test_satisfied_demand_keeps_naive_bits(void **state) {
  (void)state;
  chk_range r = range_of(free_module, 0);
  assert_true(r.lo <= -1 && r.hi >= 1 && r.min_mag == 0);
  hlo_value *c = make_one(free_module, 0, CHK_INPUTS_CONSTRAINED, 5);
  hlo_value *n = make_one(free_module, 0, CHK_INPUTS_NAIVE, 5);
  assert_true(hlo_value_equal(c, n));
  hlo_value_unref(c);
  hlo_value_unref(n);
}

/* Same seed, same bits whatever the thread count: a ranged parameter
 * large enough to be filled in parallel (300000 > 65536 elements). */
static const char *big_module = "HloModule b\n"
                                "ENTRY e {\n"
                                "  x = f32[300000] parameter(0)\n"
                                "  ROOT l = f32[300000] log(x)\n"
                                "}\n";

static void test_threads_do_not_change_bits(void **state) {
  (void)state;
#ifdef _OPENMP
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  hlo_value *one = make_one(big_module, 0, CHK_INPUTS_CONSTRAINED, 11);
  hlo_value *e1 = make_one(big_module, 0, CHK_INPUTS_EDGE, 11);
#ifdef _OPENMP
  omp_set_num_threads(4);
#endif
  hlo_value *four = make_one(big_module, 0, CHK_INPUTS_CONSTRAINED, 11);
  hlo_value *e4 = make_one(big_module, 0, CHK_INPUTS_EDGE, 11);
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  assert_true(hlo_value_equal(one, four));
  assert_true(hlo_value_equal(e1, e4));
  hlo_value *other = make_one(big_module, 0, CHK_INPUTS_CONSTRAINED, 12);
  assert_false(hlo_value_equal(one, other));
  hlo_value_unref(one);
  hlo_value_unref(four);
  hlo_value_unref(e1);
  hlo_value_unref(e4);
  hlo_value_unref(other);
}

/* Edge values: with only the cap bounding them, +-0, the smallest
 * subnormal and values near overflow (cap = FLT_MAX / 16) all appear. */
static const char *edge_module = "HloModule g\n"
                                 "ENTRY e {\n"
                                 "  x = f32[4000] parameter(0)\n"
                                 "  ROOT n = f32[4000] negate(x)\n"
                                 "}\n";

static void test_edge_values(void **state) {
  (void)state;
  hlo_value *v = make_one(edge_module, 0, CHK_INPUTS_EDGE, 2);
  int zero = 0, negzero = 0, sub = 0, big = 0;
  for (int64_t i = 0; i < v->count; i++) {
    float x = ((const float *)v->data)[i];
    zero += x == 0 && !signbit(x);
    negzero += x == 0 && signbit(x);
    sub += x != 0 && fabsf(x) < 1.17549435e-38f;
    big += fabsf(x) >= 3.4028234663852886e38f / 16 * 0.999f;
    assert_true(isfinite(x));
  }
  assert_true(zero > 0 && negzero > 0 && sub > 0 && big > 0);
  hlo_value_unref(v);
}

/* oob-indices: a dynamic-slice start into s32 dimension 10 - 4 = 6 takes
 * values in [-2, 8], both sides out of range; a scalar start is always out
 * of range (-2, -1, 7 or 8), since one draw per check would otherwise
 * leave a long dimension almost never. */
static const char *ds_module = "HloModule s\n"
                               "ENTRY e {\n"
                               "  x = f32[10] parameter(0)\n"
                               "  i = s32[] parameter(1)\n"
                               "  ROOT d = f32[4] dynamic-slice(x, i), dynamic_slice_sizes={4}\n"
                               "}\n";

static void test_oob_indices(void **state) {
  (void)state;
  int lo = 100, hi = -100;
  for (uint64_t seed = 0; seed < 200; seed++) {
    hlo_value *v = make_one(ds_module, 1, CHK_INPUTS_OOB_INDICES, seed);
    int x = (int)hlo_value_get_i64(v, 0);
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
    assert_true(x == -2 || x == -1 || x == 7 || x == 8);
    hlo_value_unref(v);
    v = make_one(ds_module, 1, CHK_INPUTS_CONSTRAINED, seed);
    x = (int)hlo_value_get_i64(v, 0);
    assert_true(x >= 0 && x <= 6);
    hlo_value_unref(v);
  }
  assert_int_equal(lo, -2);
  assert_int_equal(hi, 8);
}

/* oob-indices over an array of gather indices into 100 rows (starts 0..99):
 * element 0 and about half the rest are one of -2, -1, 100, 101, the
 * others are valid starts. */
static const char *gather_module = "HloModule g\n"
                                   "ENTRY e {\n"
                                   "  x = f32[100,8] parameter(0)\n"
                                   "  i = s32[64,1] parameter(1)\n"
                                   "  ROOT g = f32[64,1,8] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={},\n"
                                   "    start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}\n"
                                   "}\n";

static void test_oob_gather_indices(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 20; seed++) {
    hlo_value *v = make_one(gather_module, 1, CHK_INPUTS_OOB_INDICES, seed);
    int out = 0;
    for (int64_t e = 0; e < 64; e++) {
      int64_t x = hlo_value_get_i64(v, e);
      bool oob = x == -2 || x == -1 || x == 100 || x == 101;
      assert_true(oob || (x >= 0 && x <= 99));
      if (e == 0)
        assert_true(oob);
      out += oob;
    }
    /* 1 + Binomial(63, 1/2): 20..44 is beyond three standard deviations */
    assert_in_range(out, 20, 44);
    hlo_value_unref(v);
  }
}

static void test_profile_names(void **state) {
  (void)state;
  chk_inputs_profile p;
  for (int i = 0; i < CHK_INPUTS_PROFILE_COUNT; i++) {
    assert_int_equal(chk_inputs_profile_from_name(chk_inputs_profile_name((chk_inputs_profile)i), &p), 0);
    assert_int_equal((int)p, i);
  }
  assert_int_equal(chk_inputs_profile_from_name("uniform", &p), -1);
  assert_string_equal(chk_inputs_profile_name(CHK_INPUTS_OOB_INDICES), "oob-indices");
}

/* ragged-dot's group sizes are counts: with 11 rows in 3 groups each is
 * asked to lie in [0, floor(11/3)] = [0, 3], so the groups never cover more
 * than the ragged dimension and none is negative. */
static const char *ragged_module = "HloModule r\n"
                                   "ENTRY e {\n"
                                   "  a = f32[19,11,5] parameter(0)\n"
                                   "  b = f32[3,5,7] parameter(1)\n"
                                   "  g = s64[19,3] parameter(2)\n"
                                   "  ROOT r = f32[19,11,7] ragged-dot(a, b, g), lhs_contracting_dims={2},"
                                   " rhs_contracting_dims={1}, lhs_ragged_dims={1}, rhs_group_dims={0}\n"
                                   "}\n";

static void test_ragged_group_sizes_are_counts(void **state) {
  (void)state;
  chk_range r = range_of(ragged_module, 2);
  assert_true(r.lo == 0 && r.hi == 3);
  hlo_value *v = make_one(ragged_module, 2, CHK_INPUTS_CONSTRAINED, 5);
  for (int64_t i = 0; i < v->count; i++) {
    int64_t x = hlo_value_get_i64(v, i);
    assert_true(x >= 0 && x <= 3);
  }
  hlo_value_unref(v);
}

/* set-dimension-size's size lies within the dimension's bound: [0, 32]
 * (met with the naive s32 range [-8, 8]: [0, 8]). */
static const char *dynsize_module = "HloModule d\n"
                                    "ENTRY e {\n"
                                    "  x = s32[32,20] parameter(0)\n"
                                    "  n = s32[] parameter(1)\n"
                                    "  ROOT d = s32[<=32,20] set-dimension-size(x, n), dimensions={0}\n"
                                    "}\n";

static void test_dynamic_size_within_bound(void **state) {
  (void)state;
  chk_range r = range_of(dynsize_module, 1);
  assert_true(r.lo == 0 && r.hi == 32);
  for (uint64_t seed = 0; seed < 20; seed++) {
    hlo_value *v = make_one(dynsize_module, 1, CHK_INPUTS_CONSTRAINED, seed);
    assert_true(hlo_value_get_i64(v, 0) >= 0 && hlo_value_get_i64(v, 0) <= 8);
    hlo_value_unref(v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_argument_positive),
      cmocka_unit_test(test_divisor_away_from_zero),
      cmocka_unit_test(test_exp_bounded),
      cmocka_unit_test(test_reduction_scaled_by_length),
      cmocka_unit_test(test_neutral_inits_and_sort_keys),
      cmocka_unit_test(test_satisfied_demand_keeps_naive_bits),
      cmocka_unit_test(test_threads_do_not_change_bits),
      cmocka_unit_test(test_edge_values),
      cmocka_unit_test(test_oob_indices),
      cmocka_unit_test(test_oob_gather_indices),
      cmocka_unit_test(test_profile_names),
      cmocka_unit_test(test_mask_factors),
      cmocka_unit_test(test_edge_analysis_starts_wide),
      cmocka_unit_test(test_trig_arguments_bounded),
      cmocka_unit_test(test_unreachable_infinity_asks_nothing),
      cmocka_unit_test(test_integer_sort_keys_with_and_without_ties),
      cmocka_unit_test(test_variadic_and_integer_inits),
      cmocka_unit_test(test_ragged_group_sizes_are_counts),
      cmocka_unit_test(test_dynamic_size_within_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
