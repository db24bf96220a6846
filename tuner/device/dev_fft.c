/* dev_fft.c — the device's fft (dev_whole.h, dev_fft.h).
 *
 * How a matrix unit computes a DFT: as products with DFT matrices, not as
 * a butterfly network.  One transformed dimension of length N (the last;
 * every leading dimension is a batch row) is lowered in one of two ways:
 *
 *   direct     X[f] = sum_n W^(f n) x[n], W = exp(-+2 pi i / N): the row
 *              times the columns of the DFT matrix that the output tile
 *              needs, accumulated in n order;
 *   four-step  (flag four-step) N = N1 x N2 with N2 = dev_fft_inner():
 *              n = a + N1 b, f = c + N2 d (a, d < N1; b, c < N2), and
 *                Y[a][c] = sum_b x[a + N1 b] W_N2^(c b)   N1 inner DFTs
 *                Z[a][c] = Y[a][c] W_N^(c a)              twiddle pass
 *                X[c + N2 d] = sum_a Z[a][c] W_N1^(d a)   outer DFTs,
 *              the outer DFT matrix cut to the rows d of the output tile.
 *
 * The output tile along the transformed axis is the config's tile of the
 * kernel's minor output dimension (the frequency tile; for IRFFT the tile
 * of output samples).  Tiles are computed one after another; the inner
 * DFTs and the twiddle pass do not depend on the tile, so their values are
 * the same for every tile.  Arithmetic is the dtype's: float for c64 and
 * f32, double for c128 and f64, one rounding per operation (no fused
 * multiply-add), twiddles from a table of W^m, m < N, computed in double
 * and rounded to the working type (exact at the quarter points).  RFFT
 * treats the real row as complex with zero imaginary parts and keeps
 * f <= N/2; IRFFT extends the N/2 + 1 inputs to the Hermitian spectrum
 * (X[N - k] = conj X[k], the imaginary parts of X[0] and X[N/2] dropped),
 * runs the inverse and keeps the real part.  Inverses multiply by 1/N
 * rounded to the working type.
 *
 * Transforms over 2 or 3 dimensions are not lowered here (the caller falls
 * back to its opaque path): DEV_WHOLE_UNSUPPORTED.
 *
 * Defect fft-tile-twiddle (dev_defect.h; class: a block index map that
 * loses the tile offset): in the four-step lowering, the outer DFT's
 * twiddle row is indexed by the tile-local d, (f - f0) / N2, instead of the
 * global f / N2, so every frequency tile after the first takes the first
 * tile's outer-DFT rows.  Only tiles after the first change: a config with
 * one frequency tile, or without four-step, is bit-identical to the clean
 * device.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include "dev_fft.h"
#include "dev_whole.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_defect.h"
#include "hlo_dtype.h"
#include "hlo_fft.h"

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static int64_t smallest_prime(int64_t n) {
  for (int64_t p = 2; p * p <= n; p++)
    if (n % p == 0)
      return p;
  return n;
}

int64_t dev_fft_inner(int64_t n, int64_t tile, unsigned flags) {
  if (!(flags & DEV_FLAG_FOUR_STEP) || n < 4)
    return n;
  int64_t g = gcd64(n, tile > 0 ? tile : n);
  if (g > 1 && g < n)
    return g;
  int64_t p = smallest_prime(n);
  return p == n ? n : n / p;
}

/* The transformed length and the output's extent along it. */
static int fft_shape(const hlo_instr *ins, hlo_fft *fa, int64_t *n, int64_t *out_len) {
  hlo_error err;
  if (hlo_fft_of(ins, fa, &err) != 0 || fa->rank != 1 || ins->shape.rank < 1 || ins->noperands != 1)
    return -1;
  *n = fa->len[0];
  *out_len = ins->shape.dims[ins->shape.rank - 1];
  return 0;
}

static int64_t freq_tile(const dev_config *cfg, int64_t out_len) {
  if (!cfg || cfg->rank < 1 || cfg->tile[cfg->rank - 1] <= 0 || cfg->tile[cfg->rank - 1] > out_len)
    return out_len;
  return cfg->tile[cfg->rank - 1];
}

int64_t dev_fft_depth(const hlo_instr *ins, const dev_config *cfg) {
  hlo_fft fa;
  int64_t n, out_len;
  if (!ins || ins->op != HLO_OP_FFT || fft_shape(ins, &fa, &n, &out_len) != 0)
    return 0;
  bool dbl = ins->shape.type == HLO_C128 || ins->shape.type == HLO_F64;
  int64_t mul = dbl ? DEV_FFT_MUL_ROUNDINGS_F64 : DEV_FFT_MUL_ROUNDINGS_F32;
  int64_t n2 = dev_fft_inner(n, freq_tile(cfg, out_len), cfg ? cfg->flags : 0), n1 = n / n2;
  int64_t d = n1 == 1 ? (n - 1) + mul : (n2 - 1) + (n1 - 1) + 3 * mul;
  return hlo_fft_inverse(fa.type) ? d + 2 : d;
}

/* One transform, written once for each working type R: in[n] complex
 * (interleaved re, im), out[f] for f in [0, nout), tiles of `tile`
 * frequencies. */
#define DEV_FFT_DEFINE(R, SUF)                                                                         \
  typedef struct cplx_##SUF { R re, im; } cplx_##SUF;                                                 \
  static cplx_##SUF mul_##SUF(cplx_##SUF a, cplx_##SUF b) {                                           \
    cplx_##SUF r;                                                                                     \
    R p = a.re * b.re, q = a.im * b.im, s = a.re * b.im, t = a.im * b.re;                             \
    r.re = p - q;                                                                                     \
    r.im = s + t;                                                                                     \
    return r;                                                                                         \
  }                                                                                                   \
  static void table_##SUF(cplx_##SUF *w, int64_t n, double sign) {                                    \
    for (int64_t m = 0; m < n; m++) {                                                                 \
      double c, s;                                                                                    \
      if (m == 0) { c = 1; s = 0; }                                                                   \
      else if (2 * m == n) { c = -1; s = 0; }                                                         \
      else if (4 * m == n) { c = 0; s = 1; }                                                          \
      else if (4 * m == 3 * n) { c = 0; s = -1; }                                                     \
      else { double a = 2.0 * M_PI * (double)m / (double)n; c = cos(a); s = sin(a); }               \
      w[m].re = (R)c;                                                                                 \
      w[m].im = (R)(sign * s);                                                                        \
    }                                                                                                 \
  }                                                                                                   \
  /* y[a * n2 + c] = twiddled inner DFTs of the four-step split */                                   \
  static void inner_##SUF(const cplx_##SUF *x, const cplx_##SUF *w, int64_t n, int64_t n1, int64_t n2, \
                          cplx_##SUF *y) {                                                            \
    for (int64_t a = 0; a < n1; a++)                                                                  \
      for (int64_t c = 0; c < n2; c++) {                                                              \
        cplx_##SUF acc = {0, 0};                                                                      \
        for (int64_t b = 0; b < n2; b++) {                                                            \
          cplx_##SUF t = mul_##SUF(x[a + n1 * b], w[(n1 * ((c * b) % n2)) % n]);                      \
          if (b == 0) acc = t;                                                                        \
          else { acc.re = acc.re + t.re; acc.im = acc.im + t.im; }                                    \
        }                                                                                             \
        y[a * n2 + c] = mul_##SUF(acc, w[(c * a) % n]);                                               \
      }                                                                                               \
  }                                                                                                   \
  static void tile_##SUF(const cplx_##SUF *x, const cplx_##SUF *y, const cplx_##SUF *w, int64_t n,     \
                         int64_t n1, int64_t n2, int64_t f0, int64_t f1, bool local, cplx_##SUF *out) { \
    for (int64_t f = f0; f < f1; f++) {                                                               \
      cplx_##SUF acc = {0, 0};                                                                        \
      if (n1 == 1) {                                                                                  \
        for (int64_t k = 0; k < n; k++) {                                                             \
          cplx_##SUF t = mul_##SUF(x[k], w[(f * k) % n]);                                             \
          if (k == 0) acc = t;                                                                        \
          else { acc.re = acc.re + t.re; acc.im = acc.im + t.im; }                                    \
        }                                                                                             \
      } else {                                                                                        \
        int64_t c = f % n2, d = (local ? f - f0 : f) / n2;                                            \
        for (int64_t a = 0; a < n1; a++) {                                                            \
          cplx_##SUF t = mul_##SUF(y[a * n2 + c], w[(n2 * ((d * a) % n1)) % n]);                      \
          if (a == 0) acc = t;                                                                        \
          else { acc.re = acc.re + t.re; acc.im = acc.im + t.im; }                                    \
        }                                                                                             \
      }                                                                                               \
      out[f] = acc;                                                                                   \
    }                                                                                                 \
  }

DEV_FFT_DEFINE(float, f)
DEV_FFT_DEFINE(double, d)

/* Element j of a row of v as a complex double (a real one has im = 0). */
static void get_c(const hlo_value *v, int64_t i, double *re, double *im) {
  switch (v->type) {
  case HLO_C64: *re = ((const float *)v->data)[2 * i]; *im = ((const float *)v->data)[2 * i + 1]; return;
  case HLO_C128: *re = ((const double *)v->data)[2 * i]; *im = ((const double *)v->data)[2 * i + 1]; return;
  case HLO_F32: *re = ((const float *)v->data)[i]; *im = 0; return;
  default: *re = ((const double *)v->data)[i]; *im = 0; return;
  }
}

static void put_c(hlo_value *v, int64_t i, double re, double im) {
  switch (v->type) {
  case HLO_C64: ((float *)v->data)[2 * i] = (float)re; ((float *)v->data)[2 * i + 1] = (float)im; return;
  case HLO_C128: ((double *)v->data)[2 * i] = re; ((double *)v->data)[2 * i + 1] = im; return;
  case HLO_F32: ((float *)v->data)[i] = (float)re; return;
  default: ((double *)v->data)[i] = re; return;
  }
}

static bool type_ok(hlo_etype t) { return t == HLO_C64 || t == HLO_C128 || t == HLO_F32 || t == HLO_F64; }

int dev_fft_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  hlo_fft fa;
  int64_t n, nout;
  const hlo_value *xv = ops[0];
  if (fft_shape(ins, &fa, &n, &nout) != 0 || !type_ok(xv->type) || !type_ok(ins->shape.type) || xv->rank < 1)
    return DEV_WHOLE_UNSUPPORTED;
  int64_t nin = xv->dims[xv->rank - 1];
  int64_t want_in = fa.type == HLO_FFT_IRFFT ? n / 2 + 1 : n, want_out = fa.type == HLO_FFT_RFFT ? n / 2 + 1 : n;
  if (nin != want_in || nout != want_out) {
    snprintf(ctx->why, ctx->why_len, "%s: fft_length %lld needs %lld in and %lld out, has %lld and %lld",
             ins->name, (long long)n, (long long)want_in, (long long)want_out, (long long)nin, (long long)nout);
    return -1;
  }
  hlo_value *res = hlo_value_from_shape(&ins->shape);
  bool dbl = ins->shape.type == HLO_C128 || ins->shape.type == HLO_F64;
  size_t es = dbl ? sizeof(cplx_d) : sizeof(cplx_f);
  int64_t tile = freq_tile(ctx->cfg, nout);
  int64_t n2 = dev_fft_inner(n, tile, ctx->cfg ? ctx->cfg->flags : 0), n1 = n / n2;
  bool local = n1 > 1 && (ctx->defects >> DEV_DEFECT_FFT_TILE_TWIDDLE & 1u);
  void *w = malloc(es * (size_t)n), *x = malloc(es * (size_t)n), *y = malloc(es * (size_t)n),
       *o = malloc(es * (size_t)n);
  if (!res || !w || !x || !y || !o) {
    hlo_value_unref(res);
    free(w), free(x), free(y), free(o);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  double sign = hlo_fft_inverse(fa.type) ? 1.0 : -1.0;
  if (dbl)
    table_d(w, n, sign);
  else
    table_f(w, n, sign);
  int64_t rows = nin ? xv->count / nin : 0;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t k = 0; k < n; k++) {
      double re, im;
      if (fa.type == HLO_FFT_IRFFT) {
        int64_t j = k <= n / 2 ? k : n - k;
        get_c(xv, r * nin + j, &re, &im);
        if (k > n / 2)
          im = -im;
        if (k == 0 || 2 * k == n)
          im = 0;
      } else {
        get_c(xv, r * nin + k, &re, &im);
      }
      if (dbl)
        ((cplx_d *)x)[k] = (cplx_d){re, im};
      else
        ((cplx_f *)x)[k] = (cplx_f){(float)re, (float)im};
    }
    if (n1 > 1) {
      if (dbl)
        inner_d(x, w, n, n1, n2, y);
      else
        inner_f(x, w, n, n1, n2, y);
    }
    for (int64_t f0 = 0; f0 < nout; f0 += tile) {
      int64_t f1 = f0 + tile < nout ? f0 + tile : nout;
      if (dbl)
        tile_d(x, y, w, n, n1, n2, f0, f1, local, o);
      else
        tile_f(x, y, w, n, n1, n2, f0, f1, local, o);
    }
    for (int64_t f = 0; f < nout; f++) {
      double re, im;
      if (dbl) {
        cplx_d v = ((cplx_d *)o)[f];
        if (hlo_fft_inverse(fa.type)) {
          double s = 1.0 / (double)n;
          v.re = v.re * s;
          v.im = v.im * s;
        }
        re = v.re, im = v.im;
      } else {
        cplx_f v = ((cplx_f *)o)[f];
        if (hlo_fft_inverse(fa.type)) {
          float s = (float)(1.0 / (double)n);
          v.re = v.re * s;
          v.im = v.im * s;
        }
        re = v.re, im = v.im;
      }
      put_c(res, r * nout + f, re, im);
    }
  }
  free(w), free(x), free(y), free(o);
  *out = res;
  return 0;
}
