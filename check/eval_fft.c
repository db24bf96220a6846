/* eval_fft.c — fft for the reference evaluator, through FFTW.
 *
 * Semantics (XLA's fft): fft_type FFT (complex to complex, forward), IFFT
 * (complex to complex, inverse, scaled by 1/N), RFFT (real to complex,
 * forward, the last dimension keeps n/2 + 1 frequencies) and IRFFT
 * (complex to real, inverse, scaled by 1/N; the input's last dimension is
 * n/2 + 1) over the operand's trailing len(fft_length) dimensions (1 to
 * 3); N is the product of fft_length and every leading dimension is a
 * batch.  c64/f32 run in single precision (fftwf_), c128/f64 in double
 * (fftw_).  The forward transform is sum_n x[n] exp(-2 pi i k n / N).
 *
 * A transform is FFTW's, not a hand-written one: it is the field's
 * reference library.  Plans are made with FFTW_ESTIMATE, which picks an
 * algorithm from the sizes alone, so the same shape always runs the same
 * arithmetic (FFTW_MEASURE would time candidates and could choose
 * differently from run to run).  A plan is made once per shape and kept
 * for the life of the process; FFTW's planner is not thread-safe, so making
 * and finding plans is serialised, and execution (which is thread-safe)
 * runs on fftw_malloc'd buffers, the alignment the plan was made for.
 */
#include <fftw3.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_fft.h"

typedef enum fft_kind { FFT_C2C_FWD, FFT_C2C_INV, FFT_R2C, FFT_C2R } fft_kind;

typedef struct plan_entry {
  bool dbl;
  fft_kind kind;
  int rank, n[3], howmany;
  void *plan; /* fftwf_plan or fftw_plan */
  struct plan_entry *next;
} plan_entry;

static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static plan_entry *plans;

/* Elements of one transform's input and output (complex ones count once). */
static void io_sizes(fft_kind kind, int rank, const int *n, int64_t *in, int64_t *out) {
  int64_t full = 1, half = 1;
  for (int d = 0; d < rank; d++) {
    full *= n[d];
    half *= d == rank - 1 ? n[d] / 2 + 1 : n[d];
  }
  *in = kind == FFT_C2R ? half : full;
  *out = kind == FFT_R2C ? half : full;
}

static void *make_plan(bool dbl, fft_kind kind, int rank, const int *n, int howmany) {
  int64_t ni, no;
  io_sizes(kind, rank, n, &ni, &no);
  size_t ein = dbl ? (kind == FFT_R2C ? sizeof(double) : sizeof(fftw_complex))
                   : (kind == FFT_R2C ? sizeof(float) : sizeof(fftwf_complex));
  size_t eout = dbl ? (kind == FFT_C2R ? sizeof(double) : sizeof(fftw_complex))
                    : (kind == FFT_C2R ? sizeof(float) : sizeof(fftwf_complex));
  void *in = dbl ? fftw_malloc(ein * (size_t)ni * (size_t)howmany) : fftwf_malloc(ein * (size_t)ni * (size_t)howmany);
  void *out = dbl ? fftw_malloc(eout * (size_t)no * (size_t)howmany) : fftwf_malloc(eout * (size_t)no * (size_t)howmany);
  void *p = NULL;
  unsigned flags = FFTW_ESTIMATE;
  if (in && out) {
    if (dbl) {
      switch (kind) {
      case FFT_C2C_FWD: case FFT_C2C_INV:
        p = fftw_plan_many_dft(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no,
                               kind == FFT_C2C_FWD ? FFTW_FORWARD : FFTW_BACKWARD, flags);
        break;
      case FFT_R2C:
        p = fftw_plan_many_dft_r2c(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no, flags);
        break;
      case FFT_C2R:
        p = fftw_plan_many_dft_c2r(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no, flags);
        break;
      }
    } else {
      switch (kind) {
      case FFT_C2C_FWD: case FFT_C2C_INV:
        p = fftwf_plan_many_dft(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no,
                                kind == FFT_C2C_FWD ? FFTW_FORWARD : FFTW_BACKWARD, flags);
        break;
      case FFT_R2C:
        p = fftwf_plan_many_dft_r2c(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no, flags);
        break;
      case FFT_C2R:
        p = fftwf_plan_many_dft_c2r(rank, n, howmany, in, NULL, 1, (int)ni, out, NULL, 1, (int)no, flags);
        break;
      }
    }
  }
  if (dbl) {
    fftw_free(in);
    fftw_free(out);
  } else {
    fftwf_free(in);
    fftwf_free(out);
  }
  return p;
}

/* The plan for this shape, made on first use; NULL when FFTW cannot. */
static void *plan_for(bool dbl, fft_kind kind, int rank, const int *n, int howmany) {
  pthread_mutex_lock(&plans_lock);
  plan_entry *e = plans;
  for (; e; e = e->next)
    if (e->dbl == dbl && e->kind == kind && e->rank == rank && e->howmany == howmany &&
        memcmp(e->n, n, sizeof(int) * (size_t)rank) == 0)
      break;
  if (!e && (e = calloc(1, sizeof *e))) {
    *e = (plan_entry){.dbl = dbl, .kind = kind, .rank = rank, .howmany = howmany};
    memcpy(e->n, n, sizeof(int) * (size_t)rank);
    if ((e->plan = make_plan(dbl, kind, rank, n, howmany))) {
      e->next = plans;
      plans = e;
    } else {
      free(e);
      e = NULL;
    }
  }
  void *p = e ? e->plan : NULL;
  pthread_mutex_unlock(&plans_lock);
  return p;
}

hlo_value *chk_op_fft(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  /* the attributes are read by the one parser the device and the
   * tolerance use too (tuner/hlo/hlo_fft.h) */
  hlo_fft fa;
  const char *bad = hlo_fft_read(ins, &fa);
  if (bad)
    return chk_fail(ev, ins, "%s", bad);
  static const fft_kind kinds[] = {[HLO_FFT_FFT] = FFT_C2C_FWD, [HLO_FFT_IFFT] = FFT_C2C_INV,
                                   [HLO_FFT_RFFT] = FFT_R2C, [HLO_FFT_IRFFT] = FFT_C2R};
  fft_kind kind = kinds[fa.type];
  const char *type = hlo_fft_type_name(fa.type);
  const int64_t *len = fa.len;
  int rank = fa.rank;
  const hlo_value *x = ops[0];
  if (ins->noperands != 1 || !chk_is_array(x) || x->rank < rank || ins->shape.type == HLO_TUPLE ||
      ins->shape.rank != x->rank)
    return chk_fail(ev, ins, "fft takes one array of rank >= %d and keeps its rank", rank);
  hlo_etype want_in, want_out;
  bool dbl = x->type == HLO_C128 || x->type == HLO_F64;
  hlo_etype c = dbl ? HLO_C128 : HLO_C64, r = dbl ? HLO_F64 : HLO_F32;
  want_in = kind == FFT_R2C ? r : c;
  want_out = kind == FFT_C2R ? r : c;
  if (x->type != want_in || ins->shape.type != want_out)
    return chk_fail(ev, ins, "%s takes %s and returns %s, not %s to %s", type, hlo_etype_name(want_in),
                    hlo_etype_name(want_out), hlo_etype_name(x->type), hlo_etype_name(ins->shape.type));
  int lead = x->rank - rank;
  int64_t howmany = 1;
  for (int d = 0; d < lead; d++) {
    if (ins->shape.dims[d] != x->dims[d])
      return chk_fail(ev, ins, "batch dimension %d changes size", d);
    howmany *= x->dims[d];
  }
  int n[3];
  for (int d = 0; d < rank; d++) {
    bool last = d == rank - 1;
    int64_t in_d = kind == FFT_C2R && last ? len[d] / 2 + 1 : len[d];
    int64_t out_d = kind == FFT_R2C && last ? len[d] / 2 + 1 : len[d];
    if (x->dims[lead + d] != in_d || ins->shape.dims[lead + d] != out_d)
      return chk_fail(ev, ins, "dimension %d: %s of fft_length %lld needs %lld in and %lld out, has %lld and %lld",
                      lead + d, type, (long long)len[d], (long long)in_d, (long long)out_d,
                      (long long)x->dims[lead + d], (long long)ins->shape.dims[lead + d]);
    if (len[d] > INT_MAX)
      return chk_fail(ev, ins, "fft_length %lld is beyond FFTW's int sizes", (long long)len[d]);
    n[d] = (int)len[d];
  }
  hlo_value *y = chk_result(ev, ins);
  if (!y)
    return NULL;
  int64_t ni, no;
  io_sizes(kind, rank, n, &ni, &no);
  if (howmany == 0 || ni == 0)
    return y;
  if (howmany > INT_MAX || ni > INT_MAX / howmany || no > INT_MAX / howmany)
    return chk_fail_unref(ev, ins, y, "fft of %lld transforms of %lld elements is beyond FFTW's int sizes",
                          (long long)howmany, (long long)ni);
  if (chk_tick(ev, ins, howmany * ni * 8))
    return chk_fail_unref(ev, ins, y, "evaluation exceeded the time budget");
  void *plan = plan_for(dbl, kind, rank, n, (int)howmany);
  if (!plan)
    return chk_fail_unref(ev, ins, y, "FFTW could not plan this transform");
  size_t in_bytes = x->elem_size * (size_t)x->count, out_bytes = y->elem_size * (size_t)y->count;
  void *in = dbl ? fftw_malloc(in_bytes) : fftwf_malloc(in_bytes);
  void *out = dbl ? fftw_malloc(out_bytes) : fftwf_malloc(out_bytes);
  if (!in || !out) {
    if (dbl) {
      fftw_free(in);
      fftw_free(out);
    } else {
      fftwf_free(in);
      fftwf_free(out);
    }
    return chk_fail_unref(ev, ins, y, "out of memory");
  }
  memcpy(in, x->data, in_bytes); /* c2r overwrites its input */
  if (dbl) {
    if (kind == FFT_R2C)
      fftw_execute_dft_r2c(plan, in, out);
    else if (kind == FFT_C2R)
      fftw_execute_dft_c2r(plan, in, out);
    else
      fftw_execute_dft(plan, in, out);
  } else {
    if (kind == FFT_R2C)
      fftwf_execute_dft_r2c(plan, in, out);
    else if (kind == FFT_C2R)
      fftwf_execute_dft_c2r(plan, in, out);
    else
      fftwf_execute_dft(plan, in, out);
  }
  memcpy(y->data, out, out_bytes);
  if (dbl) {
    fftw_free(in);
    fftw_free(out);
  } else {
    fftwf_free(in);
    fftwf_free(out);
  }
  if (kind == FFT_C2C_INV || kind == FFT_C2R) {
    /* FFTW's inverse is unnormalised; XLA's divides by N. */
    int64_t N = 1;
    for (int d = 0; d < rank; d++)
      N *= n[d];
    double s = 1.0 / (double)N;
    int64_t reals = y->count * (kind == FFT_C2R ? 1 : 2);
    if (dbl)
      for (int64_t i = 0; i < reals; i++)
        ((double *)y->data)[i] *= s;
    else
      for (int64_t i = 0; i < reals; i++)
        ((float *)y->data)[i] = (float)(((float *)y->data)[i] * s);
  }
  return y;
}
