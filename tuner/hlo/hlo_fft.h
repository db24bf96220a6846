/* hlo_fft.h — the attributes of an fft instruction (fft_type, fft_length),
 * read once for every layer that computes or bounds a transform: the
 * device's own DFT (tuner/device/dev_fft.c) and the checker's tolerance for
 * it (check/tol_fft.c).
 *
 * Semantics (XLA's fft): FFT is complex to complex, forward
 * (sum_n x[n] exp(-2 pi i f n / N)); IFFT the inverse, scaled by 1/N; RFFT
 * real to complex, forward, keeping the N/2 + 1 non-negative frequencies of
 * the last dimension; IRFFT complex (N/2 + 1 frequencies) to real, scaled by
 * 1/N.  The transform runs over the operand's trailing len(fft_length)
 * dimensions (1 to 3); every leading dimension is a batch.
 */
#ifndef TUNE_HLO_FFT_H
#define TUNE_HLO_FFT_H

#include <stdint.h>

#include "hlo.h"
#include "hlo_error.h"

typedef enum hlo_fft_type { HLO_FFT_FFT, HLO_FFT_IFFT, HLO_FFT_RFFT, HLO_FFT_IRFFT } hlo_fft_type;

typedef struct hlo_fft {
  hlo_fft_type type;
  int rank;        /* transformed dims, 1..3 */
  int64_t len[3];  /* fft_length, outermost first */
} hlo_fft;

/* Reads ins's fft_type and fft_length.  0, or -1 with err at the
 * instruction (a missing or unknown type, lengths not 1 to 3 positive
 * sizes). */
int hlo_fft_of(const hlo_instr *ins, hlo_fft *out, hlo_error *err);

/* The same, for a caller that reports errors its own way (the reference
 * evaluator names the instruction itself): NULL, or what is wrong. */
const char *hlo_fft_read(const hlo_instr *ins, hlo_fft *out);

/* "FFT", "IFFT", "RFFT" or "IRFFT". */
const char *hlo_fft_type_name(hlo_fft_type t);

/* Is the transform an inverse one (scaled by 1/N)? */
static inline int hlo_fft_inverse(hlo_fft_type t) { return t == HLO_FFT_IFFT || t == HLO_FFT_IRFFT; }

#endif
