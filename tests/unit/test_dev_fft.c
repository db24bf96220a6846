/* test_dev_fft.c — the device's own DFT (tuner/device/dev_fft.c) against
 * the DFT's definition, X[f] = sum_n x[n] exp(-2 pi i f n / N), for every
 * split a config can choose (direct, and four-step N1 x N2 for several
 * splits):
 *   an impulse at 0 has the flat spectrum of ones (exactly: every other
 *   term is 0), an impulse spectrum inverts to 1/N everywhere;
 *   cos(2 pi m n / N) has N/2 at f = m and N - m and 0 elsewhere (RFFT:
 *   only m, among the N/2 + 1 kept);
 *   Parseval: sum |X|^2 = N sum |x|^2 for any input;
 * plus the split rule and depths of dev_fft.h worked by hand, and the
 * check that two splits really round differently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/dev_fft.h"
#include "device/dev_whole.h"
#include "hlo/hlo_parse.h"

static const double two_pi = 6.283185307179586;

typedef struct run {
  hlo_module *m;
  hlo_value *out;
} run;

/* A config that tiles an output of rank `rank` with a minor tile `tile`. */
static dev_config cfg_of(int rank, int64_t tile, unsigned flags) {
  dev_config c;
  memset(&c, 0, sizeof c);
  c.rank = rank;
  for (int d = 0; d < rank; d++)
    c.tile[d] = 1;
  c.tile[rank - 1] = tile;
  c.buf = 1;
  c.norder = rank;
  for (int d = 0; d < rank; d++)
    c.order[d] = d;
  c.pack = 1;
  c.flags = flags;
  return c;
}

static hlo_value *dft(const char *in, const char *outs, const char *type, int64_t n, const hlo_value *x,
                      const dev_config *cfg) {
  char t[300];
  snprintf(t, sizeof t, "ENTRY e {\n x = %s parameter(0)\n ROOT f = %s fft(x), fft_type=%s, fft_length={%lld}\n}\n",
           in, outs, type, (long long)n);
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  char why[256] = "";
  dev_whole_ctx ctx = {cfg, 0, why, sizeof why};
  hlo_value *ops[1] = {(hlo_value *)x}, *out = NULL;
  int rc = dev_whole_run(m->entry->root, ops, &ctx, &out);
  if (rc != 0)
    fail_msg("dev_whole_run: %d %s", rc, why);
  hlo_module_free(m);
  return out;
}

static double part(const hlo_value *v, int64_t i, int j) {
  switch (v->type) {
  case HLO_C64: return ((const float *)v->data)[2 * i + j];
  case HLO_C128: return ((const double *)v->data)[2 * i + j];
  case HLO_F32: return j ? 0 : ((const float *)v->data)[i];
  default: return j ? 0 : ((const double *)v->data)[i];
  }
}

static void set(hlo_value *v, int64_t i, double re, double im) {
  switch (v->type) {
  case HLO_C64: ((float *)v->data)[2 * i] = (float)re; ((float *)v->data)[2 * i + 1] = (float)im; return;
  case HLO_C128: ((double *)v->data)[2 * i] = re; ((double *)v->data)[2 * i + 1] = im; return;
  case HLO_F32: ((float *)v->data)[i] = (float)re; return;
  default: ((double *)v->data)[i] = re; return;
  }
}

/* The splits exercised for N = 12, each as (minor tile, flags): direct;
 * four-step with N2 = gcd(12, tile) = 4 (N1 = 3), 6 (N1 = 2), 3 (N1 = 4);
 * and tile 12 (gcd = N: N2 = 12 / 2 = 6). */
static const struct { int64_t tile; unsigned flags; int64_t n2; } splits[] = {
    {12, 0, 12}, {4, DEV_FLAG_FOUR_STEP, 4}, {6, DEV_FLAG_FOUR_STEP, 6},
    {3, DEV_FLAG_FOUR_STEP, 3}, {12, DEV_FLAG_FOUR_STEP, 6}, {5, DEV_FLAG_FOUR_STEP, 6},
};
#define NSPLITS (sizeof splits / sizeof *splits)

static void split_rule(void **state) {
  (void)state;
  for (size_t s = 0; s < NSPLITS; s++)
    assert_int_equal(dev_fft_inner(12, splits[s].tile, splits[s].flags), splits[s].n2);
  assert_int_equal(dev_fft_inner(13, 4, DEV_FLAG_FOUR_STEP), 13); /* a prime: direct */
  assert_int_equal(dev_fft_inner(256, 128, DEV_FLAG_FOUR_STEP), 128);
  assert_int_equal(dev_fft_inner(1000, 128, DEV_FLAG_FOUR_STEP), 8);
}

static void depths(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = c64[2,12] parameter(0)\n ROOT f = c64[2,12] fft(x), fft_type=FFT, fft_length={12}\n}\n";
  const char *ti = "ENTRY e {\n x = c128[12] parameter(0)\n ROOT f = c128[12] fft(x), fft_type=IFFT, fft_length={12}\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err), *mi = hlo_parse(ti, strlen(ti), &err);
  assert_non_null(m);
  assert_non_null(mi);
  dev_config direct = cfg_of(2, 12, 0), four = cfg_of(2, 4, DEV_FLAG_FOUR_STEP), four1 = cfg_of(1, 4, DEV_FLAG_FOUR_STEP);
  /* direct: 11 additions and one multiplication (5) */
  assert_int_equal(dev_fft_depth(m->entry->root, &direct), 16);
  assert_int_equal(dev_fft_depth(m->entry->root, NULL), 16);
  /* 3 x 4: 3 + 2 additions, three multiplications (15) */
  assert_int_equal(dev_fft_depth(m->entry->root, &four), 20);
  /* c128 inverse 3 x 4: 3 + 2 + 3 * 35, and 2 for the 1/N scale */
  assert_int_equal(dev_fft_depth(mi->entry->root, &four1), 112);
  hlo_module_free(m);
  hlo_module_free(mi);
}

static void impulse_and_cosine(hlo_etype t, const char *ty, double eps) {
  char s[40];
  snprintf(s, sizeof s, "%s[2,12]", ty);
  for (size_t k = 0; k < NSPLITS; k++) {
    dev_config c = cfg_of(2, splits[k].tile, splits[k].flags);
    hlo_value *x = hlo_value_array(t, 2, (const int64_t[]){2, 12});
    set(x, 0, 1, 0); /* row 0: impulse at 0 */
    for (int64_t n = 0; n < 12; n++)
      set(x, 12 + n, cos(two_pi * 2 * (double)n / 12), 0); /* row 1: m = 2 */
    hlo_value *y = dft(s, s, "FFT", 12, x, &c);
    for (int64_t f = 0; f < 12; f++) {
      if (part(y, f, 0) != 1 || part(y, f, 1) != 0)
        fail_msg("split %zu impulse: X[%lld] = %g%+gi, want 1", k, (long long)f, part(y, f, 0), part(y, f, 1));
      double want = f == 2 || f == 10 ? 6 : 0;
      if (fabs(part(y, 12 + f, 0) - want) > eps || fabs(part(y, 12 + f, 1)) > eps)
        fail_msg("split %zu cosine: X[%lld] = %g%+gi, want %g", k, (long long)f, part(y, 12 + f, 0),
                 part(y, 12 + f, 1), want);
    }
    /* the inverse of the flat spectrum row 0 made is 1/N at 0 only: use
     * the impulse spectrum instead, whose inverse is 1/12 everywhere */
    hlo_value *z = hlo_value_array(t, 2, (const int64_t[]){2, 12});
    set(z, 0, 1, 0);
    hlo_value *w = dft(s, s, "IFFT", 12, z, &c);
    for (int64_t n = 0; n < 12; n++)
      if (fabs(part(w, n, 0) - 1.0 / 12) > eps || part(w, n, 1) != 0)
        fail_msg("split %zu inverse: x[%lld] = %g%+gi, want 1/12", k, (long long)n, part(w, n, 0), part(w, n, 1));
    hlo_value_unref(x);
    hlo_value_unref(y);
    hlo_value_unref(z);
    hlo_value_unref(w);
  }
}

static void impulse_cosine_c64(void **state) {
  (void)state;
  impulse_and_cosine(HLO_C64, "c64", 1e-5);
}

static void impulse_cosine_c128(void **state) {
  (void)state;
  impulse_and_cosine(HLO_C128, "c128", 1e-13);
}

/* RFFT of a real cosine, N = 10 (split 5 x 2 and 2 x 5 and direct): N/2
 * at f = 3 among the 6 kept frequencies; IRFFT of that spectrum gives the
 * cosine back. */
static void real_transforms(void **state) {
  (void)state;
  const int64_t tiles[][2] = {{6, 0}, {2, DEV_FLAG_FOUR_STEP}, {5, DEV_FLAG_FOUR_STEP}, {3, DEV_FLAG_FOUR_STEP}};
  for (size_t k = 0; k < sizeof tiles / sizeof *tiles; k++) {
    dev_config c = cfg_of(1, tiles[k][0], (unsigned)tiles[k][1]);
    hlo_value *x = hlo_value_array(HLO_F32, 1, (const int64_t[]){10});
    for (int64_t n = 0; n < 10; n++)
      set(x, n, cos(two_pi * 3 * (double)n / 10), 0);
    hlo_value *y = dft("f32[10]", "c64[6]", "RFFT", 10, x, &c);
    for (int64_t f = 0; f < 6; f++)
      if (fabs(part(y, f, 0) - (f == 3 ? 5 : 0)) > 1e-5 || fabs(part(y, f, 1)) > 1e-5)
        fail_msg("case %zu RFFT: X[%lld] = %g%+gi", k, (long long)f, part(y, f, 0), part(y, f, 1));
    dev_config ci = cfg_of(1, tiles[k][0] == 6 ? 10 : tiles[k][0], (unsigned)tiles[k][1]);
    hlo_value *z = dft("c64[6]", "f32[10]", "IRFFT", 10, y, &ci);
    for (int64_t n = 0; n < 10; n++)
      if (fabs(part(z, n, 0) - cos(two_pi * 3 * (double)n / 10)) > 1e-6)
        fail_msg("case %zu IRFFT: x[%lld] = %g", k, (long long)n, part(z, n, 0));
    hlo_value_unref(x);
    hlo_value_unref(y);
    hlo_value_unref(z);
  }
}

/* Parseval on a pseudo-random row of N = 256, for splits 2 x 128, 16 x 16,
 * 128 x 2 and direct; and the splits do not all give the same bits. */
static void parseval_and_distinct_rounding(void **state) {
  (void)state;
  hlo_value *x = hlo_value_array(HLO_C64, 1, (const int64_t[]){256});
  uint32_t r = 12345;
  double ex = 0;
  for (int64_t n = 0; n < 256; n++) {
    double p[2];
    for (int j = 0; j < 2; j++) {
      r = r * 1664525u + 1013904223u;
      p[j] = (double)(r >> 8) / 16777216.0 - 0.5;
    }
    set(x, n, p[0], p[1]);
    ex += part(x, n, 0) * part(x, n, 0) + part(x, n, 1) * part(x, n, 1);
  }
  const int64_t tiles[][2] = {{256, 0}, {128, DEV_FLAG_FOUR_STEP}, {16, DEV_FLAG_FOUR_STEP}, {2, DEV_FLAG_FOUR_STEP}};
  hlo_value *first = NULL;
  int differ = 0;
  for (size_t k = 0; k < sizeof tiles / sizeof *tiles; k++) {
    dev_config c = cfg_of(1, tiles[k][0], (unsigned)tiles[k][1]);
    hlo_value *y = dft("c64[256]", "c64[256]", "FFT", 256, x, &c);
    double ey = 0;
    for (int64_t f = 0; f < 256; f++)
      ey += part(y, f, 0) * part(y, f, 0) + part(y, f, 1) * part(y, f, 1);
    if (fabs(ey / 256 - ex) > 1e-5 * ex)
      fail_msg("case %zu: sum|X|^2/N = %.9g, sum|x|^2 = %.9g", k, ey / 256, ex);
    if (!first)
      first = y;
    else {
      differ += memcmp(first->data, y->data, (size_t)y->count * y->elem_size) != 0;
      hlo_value_unref(y);
    }
  }
  assert_int_equal(differ, 3);
  hlo_value_unref(first);
  hlo_value_unref(x);
}

/* ---- 2 and 3 transformed dimensions: separable passes ---- */

static hlo_value *dft_nd(const char *in, const char *outs, const char *type, const char *lens, const hlo_value *x,
                         const dev_config *cfg) {
  char t[300];
  snprintf(t, sizeof t, "ENTRY e {\n x = %s parameter(0)\n ROOT f = %s fft(x), fft_type=%s, fft_length={%s}\n}\n",
           in, outs, type, lens);
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  char why[256] = "";
  dev_whole_ctx ctx = {cfg, 0, why, sizeof why};
  hlo_value *ops[1] = {(hlo_value *)x}, *out = NULL;
  int rc = dev_whole_run(m->entry->root, ops, &ctx, &out);
  if (rc != 0)
    fail_msg("dev_whole_run of a %s fft: %d %s", lens, rc, why);
  hlo_module_free(m);
  return out;
}

/* The configs of a [4, 8] output: the innermost axis direct, or split
 * 2 x 4 by four-step with two frequency tiles. */
static dev_config nd_configs(int k) {
  return k == 0 ? cfg_of(2, 8, 0) : cfg_of(2, 4, DEV_FLAG_FOUR_STEP);
}

/* 2-D impulses: at (0, 0) every X[k1][k2] is exactly 1 (each output is
 * one term times W^0 = 1 plus zeros); at (1, 2),
 * X[k1][k2] = exp(-2 pi i (k1 / 4 + 2 k2 / 8)). */
static void impulse_2d(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    dev_config c = nd_configs(k);
    hlo_value *x = hlo_value_array(HLO_C64, 2, (const int64_t[]){4, 8});
    set(x, 0, 1, 0);
    hlo_value *y = dft_nd("c64[4,8]", "c64[4,8]", "FFT", "4,8", x, &c);
    for (int64_t i = 0; i < 32; i++)
      if (part(y, i, 0) != 1 || part(y, i, 1) != 0)
        fail_msg("config %d: X[%lld] = %g%+gi, want 1", k, (long long)i, part(y, i, 0), part(y, i, 1));
    hlo_value_unref(y);
    set(x, 0, 0, 0);
    set(x, 1 * 8 + 2, 1, 0);
    y = dft_nd("c64[4,8]", "c64[4,8]", "FFT", "4,8", x, &c);
    for (int64_t k1 = 0; k1 < 4; k1++)
      for (int64_t k2 = 0; k2 < 8; k2++) {
        double a = -two_pi * ((double)k1 / 4 + 2.0 * (double)k2 / 8);
        int64_t i = k1 * 8 + k2;
        if (fabs(part(y, i, 0) - cos(a)) > 1e-6 || fabs(part(y, i, 1) - sin(a)) > 1e-6)
          fail_msg("config %d: X[%lld][%lld] = %g%+gi, want %g%+gi", k, (long long)k1, (long long)k2, part(y, i, 0),
                   part(y, i, 1), cos(a), sin(a));
      }
    hlo_value_unref(x);
    hlo_value_unref(y);
  }
}

/* x[n1][n2] = cos(2 pi (n1 / 4 + 3 n2 / 8)) is half the sum of the plane
 * waves at (1, 3) and (3, 5): X = N / 2 = 16 there, 0 elsewhere.  RFFT
 * keeps k2 <= 4, so only (1, 3) of the two; IRFFT brings x back. */
static void cosine_2d(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    dev_config c = nd_configs(k);
    hlo_value *x = hlo_value_array(HLO_F32, 2, (const int64_t[]){4, 8});
    for (int64_t n1 = 0; n1 < 4; n1++)
      for (int64_t n2 = 0; n2 < 8; n2++)
        set(x, n1 * 8 + n2, cos(two_pi * ((double)n1 / 4 + 3.0 * (double)n2 / 8)), 0);
    dev_config cr = k == 0 ? cfg_of(2, 5, 0) : cfg_of(2, 4, DEV_FLAG_FOUR_STEP);
    hlo_value *y = dft_nd("f32[4,8]", "c64[4,5]", "RFFT", "4,8", x, &cr);
    for (int64_t k1 = 0; k1 < 4; k1++)
      for (int64_t k2 = 0; k2 < 5; k2++) {
        int64_t i = k1 * 5 + k2;
        double want = k1 == 1 && k2 == 3 ? 16 : 0;
        if (fabs(part(y, i, 0) - want) > 1e-5 || fabs(part(y, i, 1)) > 1e-5)
          fail_msg("config %d RFFT: X[%lld][%lld] = %g%+gi, want %g", k, (long long)k1, (long long)k2,
                   part(y, i, 0), part(y, i, 1), want);
      }
    hlo_value *z = dft_nd("c64[4,5]", "f32[4,8]", "IRFFT", "4,8", y, &c);
    for (int64_t i = 0; i < 32; i++)
      if (fabs(part(z, i, 0) - part(x, i, 0)) > 1e-6)
        fail_msg("config %d IRFFT: x[%lld] = %g, want %g", k, (long long)i, part(z, i, 0), part(x, i, 0));
    hlo_value_unref(x);
    hlo_value_unref(y);
    hlo_value_unref(z);
  }
}

/* 3-D: Parseval, sum |X|^2 = N sum |x|^2 with N = 2 * 4 * 6 = 48, in c64
 * and c128, over a batch of 2; and an impulse spectrum inverts to 1/N
 * everywhere. */
static void parseval_impulse_3d(void **state) {
  (void)state;
  const char *ty[2] = {"c64", "c128"};
  const hlo_etype et[2] = {HLO_C64, HLO_C128};
  const double tol[2] = {1e-5, 1e-13};
  for (int t = 0; t < 2; t++) {
    char shape[32];
    snprintf(shape, sizeof shape, "%s[2,2,4,6]", ty[t]);
    dev_config c = cfg_of(4, 3, DEV_FLAG_FOUR_STEP);
    hlo_value *x = hlo_value_array(et[t], 4, (const int64_t[]){2, 2, 4, 6});
    uint32_t r = 2024;
    double ex[2] = {0, 0};
    for (int64_t i = 0; i < 96; i++) {
      r = r * 1664525u + 1013904223u;
      double re = (double)(r >> 8) / 16777216.0 - 0.5;
      r = r * 1664525u + 1013904223u;
      double im = (double)(r >> 8) / 16777216.0 - 0.5;
      set(x, i, re, im);
      ex[i / 48] += part(x, i, 0) * part(x, i, 0) + part(x, i, 1) * part(x, i, 1);
    }
    hlo_value *y = dft_nd(shape, shape, "FFT", "2,4,6", x, &c);
    double ey[2] = {0, 0};
    for (int64_t i = 0; i < 96; i++)
      ey[i / 48] += part(y, i, 0) * part(y, i, 0) + part(y, i, 1) * part(y, i, 1);
    for (int b = 0; b < 2; b++)
      if (fabs(ey[b] / 48 - ex[b]) > tol[t] * ex[b])
        fail_msg("%s batch %d: sum |X|^2 / N = %.17g, sum |x|^2 = %.17g", ty[t], b, ey[b] / 48, ex[b]);
    hlo_value_unref(y);
    hlo_value *s = hlo_value_array(et[t], 4, (const int64_t[]){2, 2, 4, 6});
    set(s, 0, 1, 0);
    set(s, 48, 1, 0);
    hlo_value *z = dft_nd(shape, shape, "IFFT", "2,4,6", s, &c);
    for (int64_t i = 0; i < 96; i++)
      if (fabs(part(z, i, 0) - 1.0 / 48) > tol[t] / 48 || part(z, i, 1) != 0)
        fail_msg("%s IFFT of an impulse: z[%lld] = %g%+gi, want 1/48", ty[t], (long long)i, part(z, i, 0),
                 part(z, i, 1));
    hlo_value_unref(x);
    hlo_value_unref(s);
    hlo_value_unref(z);
  }
}

/* Depth of a 2-D FFT c64 [4, 8] by hand: the innermost axis direct, 7
 * additions and one multiplication (5) = 12; the outer axis direct,
 * 3 + 5 = 8: 20.  With four-step 2 x 4 innermost, 3 + 1 + 15 = 19, + 8. */
static void depth_2d(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = c64[4,8] parameter(0)\n ROOT f = c64[4,8] fft(x), fft_type=FFT, fft_length={4,8}\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  dev_config direct = cfg_of(2, 8, 0), four = cfg_of(2, 4, DEV_FLAG_FOUR_STEP);
  assert_int_equal(dev_fft_depth(m->entry->root, &direct), 20);
  assert_int_equal(dev_fft_depth(m->entry->root, &four), 27);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(split_rule),
      cmocka_unit_test(depths),
      cmocka_unit_test(impulse_cosine_c64),
      cmocka_unit_test(impulse_cosine_c128),
      cmocka_unit_test(real_transforms),
      cmocka_unit_test(parseval_and_distinct_rounding),
      cmocka_unit_test(impulse_2d),
      cmocka_unit_test(cosine_2d),
      cmocka_unit_test(parseval_impulse_3d),
      cmocka_unit_test(depth_2d),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
