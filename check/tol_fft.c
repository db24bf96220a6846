/* tol_fft.c — the tolerance of an fft's output (tol_fft.h). */
#include "tol_fft.h"

#include <math.h>
#include <stdbool.h>

#include "hlo/hlo_fft.h"
#include "tolerance.h"

int64_t chk_tol_fft_ref_depth(int64_t n) {
  int64_t lg = 0;
  while (lg < 62 && ((int64_t)1 << lg) < n)
    lg++;
  return 8 * lg + 16;
}

static double gamma_of(int64_t d, double u) {
  double du = (double)d * u;
  return du < 1 ? du / (1 - du) : INFINITY;
}

/* A side's depth for transform fa: a config's own (dev_fft_depth, which
 * sums its passes), or for a marker the sum over the transformed axes of
 * the reference's allowance (FFTW's multi-dimensional plans are passes
 * along each axis too), at least the direct DFT's N_a + 4 per axis for a
 * side of unknown order. */
static int64_t side_depth(int64_t d, const hlo_fft *fa) {
  if (d > 0)
    return d;
  int64_t r = 0, direct = 0;
  for (int a = 0; a < fa->rank; a++) {
    r += chk_tol_fft_ref_depth(fa->len[a]);
    direct += fa->len[a] + 4;
  }
  if (d == CHK_FFT_DEPTH_REFERENCE)
    return r;
  return r > direct ? r : direct;
}

double chk_tol_fft_coef(const hlo_instr *ins, int64_t da, int64_t db) {
  hlo_fft fa;
  if (ins->op != HLO_OP_FFT || hlo_fft_read(ins, &fa) != NULL || ins->shape.type == HLO_TUPLE)
    return INFINITY;
  hlo_etype work = ins->shape.type == HLO_C128 || ins->shape.type == HLO_F64 ? HLO_F64 : HLO_F32;
  double u = chk_unit_roundoff(work);
  return gamma_of(side_depth(da, &fa), u) + gamma_of(side_depth(db, &fa), u);
}

/* |element i|^2 of a real or complex array. */
static double norm2_at(const hlo_value *v, int64_t i) {
  switch (v->type) {
  case HLO_C64: {
    double re = ((const float *)v->data)[2 * i], im = ((const float *)v->data)[2 * i + 1];
    return re * re + im * im;
  }
  case HLO_C128: {
    double re = ((const double *)v->data)[2 * i], im = ((const double *)v->data)[2 * i + 1];
    return re * re + im * im;
  }
  default: {
    double x = hlo_value_get_f64(v, i);
    return x * x;
  }
  }
}

int chk_tol_fft_map(const hlo_instr *ins, const hlo_value *out, int64_t da, int64_t db, double *map,
                    hlo_error *err) {
  hlo_fft fa;
  if (ins->op != HLO_OP_FFT)
    return hlo_error_set(err, ins->line, ins->col, "%s is not an fft", ins->name);
  if (hlo_fft_of(ins, &fa, err) != 0)
    return -1;
  if (out->type == HLO_TUPLE || out->rank < fa.rank)
    return hlo_error_set(err, ins->line, ins->col, "%s: the fft's output does not have its %d transformed dimensions",
                         ins->name, fa.rank);
  /* one block: the transformed dimensions of one batch element */
  int64_t ntot = 1, block = 1;
  for (int a = 0; a < fa.rank; a++) {
    ntot *= fa.len[a];
    block *= out->dims[out->rank - fa.rank + a];
  }
  int64_t nlast = fa.len[fa.rank - 1], len = out->dims[out->rank - 1];
  hlo_etype work = out->type == HLO_C128 || out->type == HLO_F64 ? HLO_F64 : HLO_F32;
  double u = chk_unit_roundoff(work);
  double g = gamma_of(side_depth(da, &fa), u) + gamma_of(side_depth(db, &fa), u);
  double gref = gamma_of(side_depth(CHK_FFT_DEPTH_REFERENCE, &fa), u);
  double shrink = 1 - sqrt((double)ntot) * gref;
  int64_t rows = block ? out->count / block : 0;
  for (int64_t r = 0; r < rows; r++) {
    double sq = 0;
    for (int64_t k = 0; k < block; k++) {
      double e = norm2_at(out, r * block + k);
      /* RFFT keeps f <= N/2 of the last axis: the others are conjugates
       * of 1 .. (N-1)/2 (at the mirrored outer indices) */
      int64_t f = k % len;
      bool twice = fa.type == HLO_FFT_RFFT && f > 0 && 2 * f < nlast;
      sq += twice ? 2 * e : e;
    }
    double s = shrink > 0 ? sqrt(sq) / shrink : INFINITY;
    double atol = g * s;
    for (int64_t k = 0; k < block; k++)
      map[r * block + k] += atol;
  }
  return 0;
}
