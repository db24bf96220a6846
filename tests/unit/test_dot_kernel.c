/* test_dot_kernel.c — the device's side-by-side f32 dot loop
 * (tuner/device/hlo_num_dot.h) against a plain sequential loop written
 * here from the documented semantics: per lane, acc = ftz(acc + product)
 * for the contracting positions in order, the product being
 * hlo_num_dot_parts_product of the operands' bf16 parts (hlo_numerics.h).
 * Values include subnormals (flushed), infinities (inf - inf gives the
 * default NaN inside a lane) and large magnitudes that overflow; every
 * lane must equal the sequential loop bit for bit.  Lane counts cover the
 * 32- and 8-lane row groups, the gathered remainder and the few-lane tail,
 * for row steps (da 0, db 1) and gathered steps, at every precision; and
 * two rows at once (hlo_num_dot_f32_row_pair) and a column block's rows
 * (hlo_num_dot_f32_rows, two and four rows at a time) lane for lane the
 * same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_dtype.h"
#include "hlo/hlo_num_dot.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* Mostly ordinary values; now and then a subnormal, an infinity or a
 * value whose products overflow. */
static float value(void) {
  uint32_t k = next() % 64;
  float f = ((float)(next() % 20001) - 10000.0f) / 1000.0f;
  if (k == 0)
    return 1e-39f * (float)(next() % 7 + 1); /* subnormal */
  if (k == 1)
    return next() % 2 ? INFINITY : -INFINITY;
  if (k == 2)
    return f * 3e37f;
  return f;
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The sequential definition, from the header and hlo_numerics.h. */
static float line(float *const *a, float *const *b, int64_t sa, int64_t sb, hlo_num_precision p, float acc, int64_t a0,
                  int64_t b0, int64_t len) {
  for (int64_t r = 0; r < len; r++) {
    float x[3], y[3];
    for (int q = 0; q < 3; q++) {
      x[q] = a[q][a0 + r * sa];
      y[q] = b[q][b0 + r * sb];
    }
    acc = hlo_num_ftz_f32(acc + hlo_num_dot_parts_product(x, y, p));
  }
  return acc;
}

/* What split_planes multiplies its values by (tiny scales make products
 * and sums subnormal), and whether the cases tell the kernels the parts'
 * smallest exponents (exp_min, which lets them leave out flushes). */
static float scale = 1.0f;
static bool known_exp = false;

/* exp_min of n elements of three planes, by hand: the smallest biased
 * exponent, counted as at least 1, of a nonzero finite part. */
static int planes_exp_min(float *const *pl, int64_t n) {
  int em = 255;
  for (int q = 0; q < 3; q++)
    for (int64_t i = 0; i < n; i++) {
      uint32_t b;
      memcpy(&b, &pl[q][i], sizeof b);
      int e = (int)((b >> 23) & 0xFF);
      if ((b & 0x7FFFFFFFu) != 0 && e != 255 && (e ? e : 1) < em)
        em = e ? e : 1;
    }
  return em;
}

/* n random values split into the three planes the executor keeps
 * (hlo_num_dot_split); the caller frees p[0..2]. */
static void split_planes(float *pl[3], int64_t n, hlo_num_precision p) {
  for (int q = 0; q < 3; q++) {
    pl[q] = calloc((size_t)n, sizeof(float));
    assert_non_null(pl[q]);
  }
  for (int64_t i = 0; i < n; i++) {
    float s[3];
    hlo_num_dot_split(value() * scale, p, s);
    for (int q = 0; q < 3; q++)
      pl[q][i] = s[q];
  }
}

/* m lanes, len positions, steps (da, db) between lanes and (sa, sb) along
 * the line; operands split as the executor does (hlo_num_dot_split). */
static void check_case(int64_t m, int64_t len, int64_t da, int64_t db, int64_t sa, int64_t sb, hlo_num_precision p) {
  int64_t na = 1 + (m > 0 ? (m - 1) * da : 0) + (len > 0 ? (len - 1) * sa : 0);
  int64_t nb = 1 + (m > 0 ? (m - 1) * db : 0) + (len > 0 ? (len - 1) * sb : 0);
  float *pa[3], *pb[3];
  split_planes(pa, na, p);
  split_planes(pb, nb, p);
  float *acc = malloc(sizeof(float) * (size_t)(m ? m : 1)), *want = malloc(sizeof(float) * (size_t)(m ? m : 1));
  assert_non_null(acc);
  assert_non_null(want);
  for (int64_t q = 0; q < m; q++)
    acc[q] = q % 5 == 0 ? 0.0f : value() * scale;
  for (int64_t q = 0; q < m; q++)
    want[q] = line(pa, pb, sa, sb, p, acc[q], q * da, q * db, len);
  hlo_num_dot_planes pl = {.a = {pa[0], pa[1], pa[2]}, .b = {pb[0], pb[1], pb[2]}, .sa = sa, .sb = sb, .prec = p};
  if (known_exp) {
    pl.exp_min[0] = planes_exp_min(pa, na);
    pl.exp_min[1] = planes_exp_min(pb, nb);
  }
  hlo_num_dot_f32_lanes(&pl, acc, m, 0, da, 0, db, len);
  for (int64_t q = 0; q < m; q++)
    if (bits(acc[q]) != bits(want[q]))
      fail_msg("m=%lld len=%lld da=%lld db=%lld prec=%d lane %lld: %a (0x%08x), want %a (0x%08x)", (long long)m,
               (long long)len, (long long)da, (long long)db, (int)p, (long long)q, (double)acc[q], bits(acc[q]),
               (double)want[q], bits(want[q]));
  for (int q = 0; q < 3; q++) {
    free(pa[q]);
    free(pb[q]);
  }
  free(acc);
  free(want);
}

static const int64_t lanes[] = {1, 3, 4, 7, 8, 9, 31, 32, 33, 45, 70, 96};
static const int64_t lens[] = {0, 1, 5, 17, 64, 150}; /* 150: several tiles of the shared-lhs path, the last ragged */
static const hlo_num_precision precs[] = {HLO_NUM_PREC_DEFAULT, HLO_NUM_PREC_HIGH, HLO_NUM_PREC_HIGHEST};

/* A row of a row-major result: the lhs element shared, the rhs contiguous,
 * lines n apart along the contraction. */
static void test_row_lanes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof lanes / sizeof *lanes; i++)
    for (size_t j = 0; j < sizeof lens / sizeof *lens; j++)
      for (size_t k = 0; k < 3; k++)
        check_case(lanes[i], lens[j], 0, 1, 1, lanes[i] + 3, precs[k]);
}

/* Other layouts: a transposed rhs (lines contiguous, lanes len apart), a
 * shared lhs with rhs lanes and lines both strided, and both operands
 * moving between lanes. */
static void test_gathered_lanes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof lanes / sizeof *lanes; i++)
    for (size_t j = 0; j < sizeof lens / sizeof *lens; j++)
      for (size_t k = 0; k < 3; k++) {
        int64_t len = lens[j];
        check_case(lanes[i], len, 0, len + 1, 1, 1, precs[k]);
        check_case(lanes[i], len, 0, 3, 2, lanes[i] * 3 + 1, precs[k]);
        check_case(lanes[i], len, 2, 3, lanes[i] * 2 + 1, 1, precs[k]);
      }
}

/* Two rows of one column block (hlo_num_dot_f32_row_pair): row i's lanes
 * share lhs element a0i and read rhs b0 + q; each lane must equal the
 * sequential loop, whatever the other row holds. */
static void check_pair(int64_t m, int64_t len, int64_t a01, int64_t sa, int64_t sb, hlo_num_precision p) {
  int64_t na = a01 + 1 + (len > 0 ? (len - 1) * sa : 0), b0 = 2;
  int64_t nb = b0 + m + (len > 0 ? (len - 1) * sb : 0);
  float *pa[3], *pb[3];
  split_planes(pa, na, p);
  split_planes(pb, nb, p);
  size_t sz = sizeof(float) * (size_t)(m ? m : 1);
  float *acc[2] = {malloc(sz), malloc(sz)}, *want[2] = {malloc(sz), malloc(sz)};
  int64_t a0[2] = {0, a01};
  for (int i = 0; i < 2; i++) {
    assert_non_null(acc[i]);
    assert_non_null(want[i]);
    for (int64_t q = 0; q < m; q++) {
      acc[i][q] = q % 5 == i ? 0.0f : value() * scale;
      want[i][q] = line(pa, pb, sa, sb, p, acc[i][q], a0[i], b0 + q, len);
    }
  }
  hlo_num_dot_planes pl = {.a = {pa[0], pa[1], pa[2]}, .b = {pb[0], pb[1], pb[2]}, .sa = sa, .sb = sb, .prec = p};
  if (known_exp) {
    pl.exp_min[0] = planes_exp_min(pa, na);
    pl.exp_min[1] = planes_exp_min(pb, nb);
  }
  hlo_num_dot_f32_row_pair(&pl, acc[0], acc[1], m, a0[0], a0[1], b0, len);
  for (int i = 0; i < 2; i++)
    for (int64_t q = 0; q < m; q++)
      if (bits(acc[i][q]) != bits(want[i][q]))
        fail_msg("pair m=%lld len=%lld prec=%d row %d lane %lld: %a (0x%08x), want %a (0x%08x)", (long long)m,
                 (long long)len, (int)p, i, (long long)q, (double)acc[i][q], bits(acc[i][q]), (double)want[i][q],
                 bits(want[i][q]));
  for (int q = 0; q < 3; q++) {
    free(pa[q]);
    free(pb[q]);
  }
  for (int i = 0; i < 2; i++) {
    free(acc[i]);
    free(want[i]);
  }
}

static void test_row_pair(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof lanes / sizeof *lanes; i++)
    for (size_t j = 0; j < sizeof lens / sizeof *lens; j++)
      for (size_t k = 0; k < 3; k++) {
        check_pair(lanes[i], lens[j], 1, 1, lanes[i] + 3, precs[k]);         /* rows of a [m, len] lhs, stacked */
        check_pair(lanes[i], lens[j], lens[j] + 7, 1, lanes[i], precs[k]);   /* lines apart, rhs dense */
        check_pair(lanes[i], lens[j], 3, 2, 2 * lanes[i] + 5, precs[k]);     /* pack-like steps along the line */
      }
}

/* nrows rows of one column block (hlo_num_dot_f32_rows): row i's lanes
 * share lhs element a0[i] = i * a_step and read rhs b0 + q; each lane
 * must equal the scalar definition, hlo_num_dot_f32_line (itself checked
 * against the loop here, lane for lane). */
static void check_rows(int64_t nrows, int64_t m, int64_t len, int64_t a_step, int64_t sa, int64_t sb,
                       hlo_num_precision p) {
  int64_t na = nrows * a_step + 1 + (len > 0 ? (len - 1) * sa : 0), b0 = 3;
  int64_t nb = b0 + m + (len > 0 ? (len - 1) * sb : 0);
  float *pa[3], *pb[3];
  split_planes(pa, na, p);
  split_planes(pb, nb, p);
  size_t sz = sizeof(float) * (size_t)(nrows * m > 0 ? nrows * m : 1);
  float *acc = malloc(sz), *want = malloc(sz);
  int64_t a0[16];
  assert_true(nrows <= 16);
  assert_non_null(acc);
  assert_non_null(want);
  hlo_num_dot_planes pl = {.a = {pa[0], pa[1], pa[2]}, .b = {pb[0], pb[1], pb[2]}, .sa = sa, .sb = sb, .prec = p};
  for (int64_t i = 0; i < nrows; i++) {
    a0[i] = i * a_step;
    for (int64_t q = 0; q < m; q++) {
      acc[i * m + q] = (q + i) % 5 == 0 ? 0.0f : value() * scale;
      want[i * m + q] = hlo_num_dot_f32_line(&pl, acc[i * m + q], a0[i], b0 + q, len);
      assert_int_equal(bits(want[i * m + q]), bits(line(pa, pb, sa, sb, p, acc[i * m + q], a0[i], b0 + q, len)));
    }
  }
  if (known_exp) {
    pl.exp_min[0] = planes_exp_min(pa, na);
    pl.exp_min[1] = planes_exp_min(pb, nb);
  }
  hlo_num_dot_f32_rows(&pl, acc, nrows, m, a0, b0, len);
  for (int64_t k = 0; k < nrows * m; k++)
    if (bits(acc[k]) != bits(want[k]))
      fail_msg("rows nrows=%lld m=%lld len=%lld sb=%lld prec=%d row %lld lane %lld: %a (0x%08x), want %a (0x%08x)",
               (long long)nrows, (long long)m, (long long)len, (long long)sb, (int)p, (long long)(k / m),
               (long long)(k % m), (double)acc[k], bits(acc[k]), (double)want[k], bits(want[k]));
  for (int q = 0; q < 3; q++) {
    free(pa[q]);
    free(pb[q]);
  }
  free(acc);
  free(want);
}

static void test_rows(void **state) {
  (void)state;
  static const int64_t nrows[] = {1, 2, 3, 5};
  for (size_t n = 0; n < sizeof nrows / sizeof *nrows; n++)
    for (size_t i = 0; i < sizeof lanes / sizeof *lanes; i++)
      for (size_t j = 0; j < sizeof lens / sizeof *lens; j++)
        for (size_t k = 0; k < 3; k++) {
          check_rows(nrows[n], lanes[i], lens[j], lens[j] + 2, 1, lanes[i] + 3, precs[k]); /* stacked lhs rows */
          check_rows(nrows[n], lanes[i], lens[j], 1, 2, 2 * lanes[i] + 1, precs[k]);      /* pack-like steps */
        }
}

/* Four rows and more: the rhs block copied side by side, the four-row
 * kernels where the processor has them, and the rows four leave (one,
 * two, three) through the two-row and one-row kernels on the copy; ragged
 * lane counts (the 8-lane blocks and the tail after the 32-lane ones),
 * lines past one block of positions (300: two blocks and a ragged third
 * at every precision), and a power-of-two rhs row (512), the case the
 * copy is for. */
static void test_rows_four(void **state) {
  (void)state;
  static const int64_t nrows[] = {4, 6, 7, 9};
  static const int64_t qlanes[] = {8, 31, 32, 45, 70};
  static const int64_t qlens[] = {0, 17, 150, 300};
  for (size_t n = 0; n < sizeof nrows / sizeof *nrows; n++)
    for (size_t i = 0; i < sizeof qlanes / sizeof *qlanes; i++)
      for (size_t j = 0; j < sizeof qlens / sizeof *qlens; j++)
        for (size_t k = 0; k < 3; k++) {
          int64_t m = qlanes[i], len = qlens[j];
          check_rows(nrows[n], m, len, len + 2, 1, m + 3, precs[k]); /* stacked lhs rows */
          check_rows(nrows[n], m, len, 1, 2, 2 * m + 1, precs[k]);   /* pack-like steps */
          if (len <= 150)
            check_rows(nrows[n], m, len, len + 1, 1, 512, precs[k]); /* a 512-wide rhs */
        }
}

/* The exported scalar line is the same definition. */
static void test_line(void **state) {
  (void)state;
  float *pa[3], *pb[3];
  for (int q = 0; q < 3; q++) {
    pa[q] = calloc(64, sizeof(float));
    pb[q] = calloc(64, sizeof(float));
  }
  for (int i = 0; i < 64; i++) {
    float s[3], t[3];
    hlo_num_dot_split(value(), HLO_NUM_PREC_HIGHEST, s);
    hlo_num_dot_split(value(), HLO_NUM_PREC_HIGHEST, t);
    for (int q = 0; q < 3; q++)
      pa[q][i] = s[q], pb[q][i] = t[q];
  }
  for (size_t k = 0; k < 3; k++) {
    hlo_num_dot_planes pl = {.a = {pa[0], pa[1], pa[2]}, .b = {pb[0], pb[1], pb[2]}, .sa = 1, .sb = 1, .prec = precs[k]};
    assert_int_equal(bits(hlo_num_dot_f32_line(&pl, 0.5f, 0, 0, 64)), bits(line(pa, pb, 1, 1, precs[k], 0.5f, 0, 0, 64)));
  }
  /* By hand: 1.5 * 2 + 0.25 * 4 = 4 at DEFAULT (both exact in bf16). */
  float a0[2] = {1.5f, 0.25f}, b0[2] = {2.0f, 4.0f}, z[2] = {0, 0};
  hlo_num_dot_planes hand = {.a = {a0, z, z}, .b = {b0, z, z}, .sa = 1, .sb = 1, .prec = HLO_NUM_PREC_DEFAULT};
  assert_true(hlo_num_dot_f32_line(&hand, 0.0f, 0, 0, 2) == 4.0f);
  float acc = 1.0f;
  hlo_num_dot_f32_lanes(&hand, &acc, 1, 0, 0, 0, 0, 2);
  assert_true(acc == 5.0f);
  for (int q = 0; q < 3; q++) {
    free(pa[q]);
    free(pb[q]);
  }
}

/* The bf16 split by hand, from hlo_numerics.h's definition: flush, hi =
 * bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid), the lower parts 0
 * for a non-finite x or a precision without them. */
static float bf16_of(float f) { return hlo_bf16_to_f32(hlo_f32_to_bf16(f)); }

static void split_by_hand(float x, hlo_num_precision p, float t[3]) {
  x = hlo_num_ftz_f32(x);
  t[0] = bf16_of(x);
  t[1] = t[2] = 0.0f;
  if (p == HLO_NUM_PREC_DEFAULT || !isfinite(x))
    return;
  float r = x - t[0];
  t[1] = bf16_of(r);
  if (p == HLO_NUM_PREC_HIGHEST)
    t[2] = bf16_of(r - t[1]);
}

/* Values the split treats apart: zeros, subnormals, the smallest normal
 * and its neighbours, the largest finite (hi rounds to inf), infinities,
 * NaNs with payloads, exact bf16 ties. */
static float special(int k) {
  static const uint32_t s[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x00800001u,
                               0x80812345u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                               0xFF812345u, 0x7F80ABCDu, 0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F7FFFFFu};
  float f;
  memcpy(&f, &s[k % (int)(sizeof s / sizeof *s)], sizeof f);
  return f;
}

/* hlo_num_dot_split_block against the split by hand, element for element,
 * for block lengths around the vector width, in place and not; its NaN
 * flag and smallest part exponent against the parts' own. */
static void test_split_block(void **state) {
  (void)state;
  static const int64_t ns[] = {0, 1, 7, 8, 9, 16, 23, 100};
  for (size_t k = 0; k < 3; k++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (int kind = 0; kind < 4; kind++) {
        int64_t n = ns[i];
        float x[100], pl[4][100], want[3][100];
        bool want_nan = false;
        int want_exp = 255;
        for (int64_t j = 0; j < n; j++) {
          /* kind 0: ordinary values; 1: specials among them; 2: no NaN
           * but tiny values (subnormal parts); 3: all specials */
          x[j] = kind == 3 || (kind == 1 && j % 3 == 1) ? special((int)j + (int)k)
                 : kind == 2 && j % 2                   ? 1.5e-38f * (float)(j + 1) / 7.0f
                                                        : value();
          if (kind != 1 && kind != 3 && x[j] != x[j])
            x[j] = 1.0f;
        }
        for (int64_t j = 0; j < n; j++) {
          float t[3];
          split_by_hand(x[j], precs[k], t);
          for (int q = 0; q < hlo_num_dot_parts(precs[k]); q++) {
            want[q][j] = t[q];
            want_nan = want_nan || t[q] != t[q];
            uint32_t b = bits(t[q]);
            int e = (int)((b >> 23) & 0xFF);
            if ((b & 0x7FFFFFFFu) != 0 && e != 255 && (e ? e : 1) < want_exp)
              want_exp = e ? e : 1;
          }
        }
        for (int in_place = 0; in_place < 2; in_place++) {
          memcpy(pl[0], x, sizeof x);
          float *const parts[3] = {pl[in_place ? 0 : 1], pl[in_place ? 1 : 2], pl[in_place ? 2 : 3]};
          int exp_min = -1;
          bool nan = hlo_num_dot_split_block(pl[0], n, precs[k], parts, &exp_min);
          assert_int_equal(nan, want_nan);
          assert_int_equal(exp_min, want_exp);
          for (int q = 0; q < hlo_num_dot_parts(precs[k]); q++)
            for (int64_t j = 0; j < n; j++)
              if (bits(parts[q][j]) != bits(want[q][j]))
                fail_msg("split n=%lld prec=%d kind=%d in_place=%d part %d of %a (0x%08x): 0x%08x, want 0x%08x",
                         (long long)n, (int)precs[k], kind, in_place, q, (double)x[j], bits(x[j]), bits(parts[q][j]),
                         bits(want[q][j]));
        }
      }
}

/* The cases above again with exp_min known, at scales where nothing is
 * subnormal (the kernels without flushes) and where products and sums
 * underflow (exp_min too small: the flushing kernels), and between. */
static void test_known_exp(void **state) {
  static const float scales[] = {1.0f, 0x1p-40f, 0x1p-56f, 0x1p-60f, 0x1p-64f};
  known_exp = true;
  for (size_t i = 0; i < sizeof scales / sizeof *scales; i++) {
    scale = scales[i];
    test_row_lanes(state);
    test_gathered_lanes(state);
    test_row_pair(state);
    test_rows(state);
    test_rows_four(state);
  }
  known_exp = false;
  scale = 1.0f;
}

/* m lanes (up to 16) of one line (a[r] * b[r] summed from acc), through
 * the row kernels with exp_min by hand; every lane must be want. */
static void check_line_lanes_m(int M, const float *a, const float *b, int64_t len, float acc0, float want) {
  float pa[16], pb[16 * 16], z[16 * 16] = {0}, acc[16];
  for (int64_t r = 0; r < len; r++) {
    pa[r] = a[r];
    for (int q = 0; q < M; q++)
      pb[r * M + q] = b[r];
  }
  float *const ap[3] = {pa, z, z}, *const bp[3] = {pb, z, z};
  hlo_num_dot_planes pl = {.a = {pa, z, z},
                           .b = {pb, z, z},
                           .sa = 1,
                           .sb = M,
                           .prec = HLO_NUM_PREC_DEFAULT,
                           .exp_min = {planes_exp_min(ap, len), planes_exp_min(bp, len * M)}};
  for (int q = 0; q < M; q++)
    acc[q] = acc0;
  hlo_num_dot_f32_lanes(&pl, acc, M, 0, 0, 0, 1, len);
  for (int q = 0; q < M; q++)
    if (bits(acc[q]) != bits(want))
      fail_msg("m=%d lane %d: %a, want %a", M, q, (double)acc[q], (double)want);
}

/* ... with 8, 3 and 11 lanes (a vector's worth, and lanes past it). */
static void check_line_lanes(const float *a, const float *b, int64_t len, float acc0, float want) {
  check_line_lanes_m(8, a, b, len, acc0, want);
  check_line_lanes_m(3, a, b, len, acc0, want);
  check_line_lanes_m(11, a, b, len, acc0, want);
}

/* The bound of "No subnormals" (hlo_num_dot.c) at its edge, by hand.
 * Two products of 15 significant bits that cancel to their last bit:
 * with parts of exponents 70 and 71 (sum 141) that bit is 2^-127, a
 * subnormal the flush takes to 0; with 70 and 72 (sum 142) it is 2^-126
 * and stays.  And an incoming sum whose ulp is 2^-127 (exponent 23),
 * cancelled by a product of large parts. */
static void test_exp_min_edge(void **state) {
  (void)state;
  float a[2] = {0x1.02p-57f, -0x1.04p-57f}, b[2] = {0x1.02p-56f, 0x1p-56f};
  check_line_lanes(a, b, 2, 0.0f, 0.0f);
  float b2[2] = {0x1.02p-55f, 0x1p-55f};
  check_line_lanes(a, b2, 2, 0.0f, 0x1p-126f);
  float c[1] = {-0x1p-52f}, d[1] = {0x1p-52f};
  check_line_lanes(c, d, 1, 0x1.000002p-104f, 0.0f);
  check_line_lanes(c, d, 1, 0x1.000004p-104f, 0x1p-126f);
}

/* The same edge across the rows of a column block: the test for
 * subnormal sums must look at every row a kernel call runs, not the
 * first only.  Row 0's sums are ordinary; rows 1 on start from
 * 0x1.000002p-104, which the product -2^-104 takes to the subnormal
 * 2^-127 (flushed: 0).  The parts' exponents allow leaving out the
 * flushes, so only the incoming sums forbid it.  32 lanes (the four-row
 * kernel), 40 (and the 8-lane two-row one), over 4, 5 and 6 rows. */
static void test_rows_exp_min_edge(void **state) {
  (void)state;
  static const int64_t nrows[] = {4, 5, 6};
  static const int64_t ms[] = {32, 40};
  for (size_t n = 0; n < sizeof nrows / sizeof *nrows; n++)
    for (size_t k = 0; k < sizeof ms / sizeof *ms; k++) {
      int64_t nr = nrows[n], m = ms[k];
      float pa[8], pb[40], z[40] = {0}, acc[6 * 40], want[6 * 40];
      int64_t a0[6];
      for (int64_t i = 0; i < nr; i++)
        pa[i] = -0x1p-52f, a0[i] = i;
      for (int64_t q = 0; q < m; q++)
        pb[q] = 0x1p-52f;
      float *const ap[3] = {pa, z, z}, *const bp[3] = {pb, z, z};
      hlo_num_dot_planes pl = {.a = {pa, z, z},
                               .b = {pb, z, z},
                               .sa = 1,
                               .sb = m,
                               .prec = HLO_NUM_PREC_DEFAULT,
                               .exp_min = {planes_exp_min(ap, nr), planes_exp_min(bp, m)}};
      for (int64_t i = 0; i < nr; i++)
        for (int64_t q = 0; q < m; q++) {
          acc[i * m + q] = i == 0 ? 1.0f : 0x1.000002p-104f;
          want[i * m + q] = hlo_num_dot_f32_line(&pl, acc[i * m + q], a0[i], q, 1);
        }
      assert_true(want[m] == 0.0f);
      hlo_num_dot_f32_rows(&pl, acc, nr, m, a0, 0, 1);
      for (int64_t k2 = 0; k2 < nr * m; k2++)
        if (bits(acc[k2]) != bits(want[k2]))
          fail_msg("rows edge nrows=%lld m=%lld row %lld lane %lld: %a, want %a", (long long)nr, (long long)m,
                   (long long)(k2 / m), (long long)(k2 % m), (double)acc[k2], (double)want[k2]);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_lanes),
      cmocka_unit_test(test_gathered_lanes),
      cmocka_unit_test(test_row_pair),
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_rows_four),
      cmocka_unit_test(test_line),
      cmocka_unit_test(test_split_block),
      cmocka_unit_test(test_known_exp),
      cmocka_unit_test(test_exp_min_edge),
      cmocka_unit_test(test_rows_exp_min_edge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
