/* tol_fft.c — the tolerance of an fft's output (tol_fft.h). */
#include "tol_fft.h"

#include <math.h>
#include <stdbool.h>

#include "hlo_fft.h"
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

static int64_t side_depth(int64_t d, int64_t n) {
  if (d == CHK_FFT_DEPTH_REFERENCE)
    return chk_tol_fft_ref_depth(n);
  if (d < 0) {
    int64_t r = chk_tol_fft_ref_depth(n);
    return r > n + 4 ? r : n + 4;
  }
  return d;
}

double chk_tol_fft_coef(const hlo_instr *ins, int64_t da, int64_t db) {
  hlo_fft fa;
  if (ins->op != HLO_OP_FFT || hlo_fft_read(ins, &fa) != NULL || fa.rank != 1 || ins->shape.type == HLO_TUPLE)
    return INFINITY;
  int64_t n = fa.len[0];
  hlo_etype work = ins->shape.type == HLO_C128 || ins->shape.type == HLO_F64 ? HLO_F64 : HLO_F32;
  double u = chk_unit_roundoff(work);
  return gamma_of(side_depth(da, n), u) + gamma_of(side_depth(db, n), u);
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
  if (fa.rank != 1 || out->type == HLO_TUPLE || out->rank < 1)
    return hlo_error_set(err, ins->line, ins->col, "%s: only an fft over one dimension has a derived bound",
                         ins->name);
  int64_t n = fa.len[0], len = out->dims[out->rank - 1];
  hlo_etype work = out->type == HLO_C128 || out->type == HLO_F64 ? HLO_F64 : HLO_F32;
  double u = chk_unit_roundoff(work);
  double g = gamma_of(side_depth(da, n), u) + gamma_of(side_depth(db, n), u);
  double gref = gamma_of(chk_tol_fft_ref_depth(n), u);
  double shrink = 1 - sqrt((double)n) * gref;
  int64_t rows = len ? out->count / len : 0;
  for (int64_t r = 0; r < rows; r++) {
    double sq = 0;
    for (int64_t f = 0; f < len; f++) {
      double e = norm2_at(out, r * len + f);
      /* RFFT keeps f <= N/2: the others are conjugates of 1 .. (N-1)/2 */
      bool twice = fa.type == HLO_FFT_RFFT && f > 0 && 2 * f < n;
      sq += twice ? 2 * e : e;
    }
    double s = shrink > 0 ? sqrt(sq) / shrink : INFINITY;
    double atol = g * s;
    for (int64_t f = 0; f < len; f++)
      map[r * len + f] += atol;
  }
  return 0;
}
