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
 * Transforms over 2 or 3 dimensions are separable: one pass of 1-D DFTs
 * along each transformed axis, each pass's result stored in the working
 * type before the next.  The innermost axis is the one the config tiles
 * (direct or four-step as above, and the defect); the outer axes are
 * direct DFTs over the whole axis.  FFT and IFFT and RFFT go innermost
 * first (RFFT: the real transform there, keeping N/2 + 1, then complex
 * ones on the others); IRFFT the reverse, complex inverses on the outer
 * axes first and the Hermitian complex-to-real one innermost last.  An
 * inverse scales each pass by 1 / its own length.
 *
 * Defect fft-tile-twiddle (dev_defect.h; class: a block index map that
 * loses the tile offset): in the four-step lowering, the outer DFT's
 * twiddle row is indexed by the tile-local d, (f - f0) / N2, instead of the
 * global f / N2, so every frequency tile after the first takes the first
 * tile's outer-DFT rows.  Only tiles after the first change: a config with
 * one frequency tile, or without four-step, is bit-identical to the clean
 * device.
 */
#include "dev_fft.h"
#include "dev_whole.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_defect.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_fft.h"

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

/* The innermost transformed length and the output's extent along it. */
static int fft_shape(const hlo_instr *ins, hlo_fft *fa, int64_t *n, int64_t *out_len) {
  if (hlo_fft_read(ins, fa) != NULL || ins->shape.rank < fa->rank || ins->noperands != 1)
    return -1;
  *n = fa->len[fa->rank - 1];
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
  if (hlo_fft_inverse(fa.type))
    d += 2;
  /* each outer axis: a direct DFT pass (and its own 1/N_a scale) */
  for (int a = 0; a < fa.rank - 1; a++)
    d += (fa.len[a] - 1) + mul + (hlo_fft_inverse(fa.type) ? 2 : 0);
  return d;
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

/* A complex value between passes (exactly a float's value for c64). */
typedef struct zd {
  double re, im;
} zd;

/* Scratch for one pass over lines of length n. */
typedef struct pass_buf {
  void *w, *x, *y, *o;
} pass_buf;

/* One 1-D transform of a line: in[k * sin] for the line's input
 * elements (n, or n/2 + 1 for IRFFT), out[f * sout] for its nout outputs.
 * t says what the line does: FFT, IFFT, RFFT (input imaginary parts are
 * zero; keeps f <= n/2), IRFFT (Hermitian extension, keeps the real part).
 * The twiddle table in b->w is the one for n and t's direction. */
static void line(const zd *in, int64_t sin, zd *out, int64_t sout, hlo_fft_type t, int64_t n, int64_t nout,
                 int64_t tile, int64_t n1, int64_t n2, bool local, bool dbl, const pass_buf *b) {
  for (int64_t k = 0; k < n; k++) {
    double re, im;
    if (t == HLO_FFT_IRFFT) {
      int64_t j = k <= n / 2 ? k : n - k;
      re = in[j * sin].re;
      im = in[j * sin].im;
      if (k > n / 2)
        im = -im;
      if (k == 0 || 2 * k == n)
        im = 0;
    } else {
      re = in[k * sin].re;
      im = in[k * sin].im;
    }
    if (dbl)
      ((cplx_d *)b->x)[k] = (cplx_d){re, im};
    else
      ((cplx_f *)b->x)[k] = (cplx_f){(float)re, (float)im};
  }
  if (n1 > 1) {
    if (dbl)
      inner_d(b->x, b->w, n, n1, n2, b->y);
    else
      inner_f(b->x, b->w, n, n1, n2, b->y);
  }
  for (int64_t f0 = 0; f0 < nout; f0 += tile) {
    int64_t f1 = f0 + tile < nout ? f0 + tile : nout;
    if (dbl)
      tile_d(b->x, b->y, b->w, n, n1, n2, f0, f1, local, b->o);
    else
      tile_f(b->x, b->y, b->w, n, n1, n2, f0, f1, local, b->o);
  }
  for (int64_t f = 0; f < nout; f++) {
    double re, im;
    if (dbl) {
      cplx_d v = ((cplx_d *)b->o)[f];
      if (hlo_fft_inverse(t)) {
        double s = 1.0 / (double)n;
        v.re = v.re * s;
        v.im = v.im * s;
      }
      re = v.re, im = v.im;
    } else {
      cplx_f v = ((cplx_f *)b->o)[f];
      if (hlo_fft_inverse(t)) {
        float s = (float)(1.0 / (double)n);
        v.re = v.re * s;
        v.im = v.im * s;
      }
      re = v.re, im = v.im;
    }
    out[f * sout] = (zd){re, t == HLO_FFT_IRFFT ? 0 : im};
  }
}

/* One pass along axis `axis` of the array cur (dims, rank): every line
 * transformed by `line`, into a new array whose axis has nout elements.
 * NULL when out of memory. */
static zd *pass(const zd *cur, const int64_t *dims, int rank, int axis, hlo_fft_type t, int64_t n, int64_t nout,
                const dev_config *cfg, bool innermost, bool defect, bool dbl, int64_t *new_dims) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= dims[d];
  for (int d = axis + 1; d < rank; d++)
    inner *= dims[d];
  int64_t nin = dims[axis];
  memcpy(new_dims, dims, sizeof *dims * (size_t)rank);
  new_dims[axis] = nout;
  int64_t cells = outer * nout * inner;
  zd *next = malloc(sizeof *next * (size_t)(cells > 0 ? cells : 1));
  size_t es = dbl ? sizeof(cplx_d) : sizeof(cplx_f);
  pass_buf b = {malloc(es * (size_t)n), malloc(es * (size_t)n), malloc(es * (size_t)n), malloc(es * (size_t)n)};
  if (!next || !b.w || !b.x || !b.y || !b.o) {
    free(next);
    next = NULL;
    goto done;
  }
  /* only the innermost axis is the config's: its tile, its split, the defect */
  int64_t tile = innermost ? freq_tile(cfg, nout) : nout;
  int64_t n2 = innermost ? dev_fft_inner(n, tile, cfg ? cfg->flags : 0) : n, n1 = n / n2;
  bool local = innermost && n1 > 1 && defect;
  double sign = hlo_fft_inverse(t) ? 1.0 : -1.0;
  if (dbl)
    table_d(b.w, n, sign);
  else
    table_f(b.w, n, sign);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      line(cur + o * nin * inner + i, inner, next + o * nout * inner + i, inner, t, n, nout, tile, n1, n2, local,
           dbl, &b);
done:
  free(b.w), free(b.x), free(b.y), free(b.o);
  return next;
}

int dev_fft_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  hlo_fft fa;
  int64_t n, nout;
  const hlo_value *xv = ops[0];
  if (fft_shape(ins, &fa, &n, &nout) != 0 || !type_ok(xv->type) || !type_ok(ins->shape.type) ||
      xv->rank < fa.rank || xv->rank != ins->shape.rank || xv->rank > HLO_MAX_RANK)
    return DEV_WHOLE_UNSUPPORTED;
  int rank = xv->rank, lead = rank - fa.rank;
  for (int d = 0; d < rank; d++) {
    int64_t want_in = xv->dims[d], want_out = xv->dims[d];
    if (d >= lead) {
      int64_t len = fa.len[d - lead];
      bool last = d == rank - 1;
      want_in = fa.type == HLO_FFT_IRFFT && last ? len / 2 + 1 : len;
      want_out = fa.type == HLO_FFT_RFFT && last ? len / 2 + 1 : len;
    }
    if (xv->dims[d] != want_in || ins->shape.dims[d] != want_out) {
      snprintf(ctx->why, ctx->why_len, "%s: dimension %d needs %lld in and %lld out, has %lld and %lld", ins->name,
               d, (long long)want_in, (long long)want_out, (long long)xv->dims[d], (long long)ins->shape.dims[d]);
      return -1;
    }
  }
  bool dbl = ins->shape.type == HLO_C128 || ins->shape.type == HLO_F64;
  bool defect = ctx->defects >> DEV_DEFECT_FFT_TILE_TWIDDLE & 1u;
  int64_t dims[HLO_MAX_RANK], nd[HLO_MAX_RANK];
  memcpy(dims, xv->dims, sizeof *dims * (size_t)rank);
  zd *cur = malloc(sizeof *cur * (size_t)(xv->count ? xv->count : 1));
  hlo_value *res = hlo_value_from_shape(&ins->shape);
  if (!cur || !res)
    goto oom;
  for (int64_t i = 0; i < xv->count; i++)
    get_c(xv, i, &cur[i].re, &cur[i].im);
  /* the passes, in the order the header gives */
  hlo_fft_type outer_t = hlo_fft_inverse(fa.type) ? HLO_FFT_IFFT : HLO_FFT_FFT;
  int order[3], np = 0;
  if (fa.type == HLO_FFT_IRFFT) {
    for (int a = 0; a < fa.rank - 1; a++)
      order[np++] = a;
    order[np++] = fa.rank - 1;
  } else {
    order[np++] = fa.rank - 1;
    for (int a = 0; a < fa.rank - 1; a++)
      order[np++] = a;
  }
  for (int k = 0; k < np; k++) {
    int a = order[k], axis = lead + a;
    bool innermost = a == fa.rank - 1;
    hlo_fft_type t = innermost ? fa.type : outer_t;
    int64_t len = fa.len[a];
    zd *next = pass(cur, dims, rank, axis, t, len, ins->shape.dims[axis], ctx->cfg, innermost, defect, dbl, nd);
    free(cur);
    cur = next;
    if (!cur)
      goto oom;
    memcpy(dims, nd, sizeof *dims * (size_t)rank);
  }
  for (int64_t i = 0; i < res->count; i++)
    put_c(res, i, cur[i].re, cur[i].im);
  free(cur);
  *out = res;
  return 0;
oom:
  free(cur);
  hlo_value_unref(res);
  snprintf(ctx->why, ctx->why_len, "out of memory");
  return -1;
}
