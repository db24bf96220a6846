/* fft_spread.h — how far an fft's legitimate error reaches the outputs
 * that are computed from it inside the same fusion.
 *
 * check/tol_fft.h bounds an fft's own output: two correct transforms lie
 * within B_e = g S_row of each other at element e, with g = gamma_da +
 * gamma_db for the two sides' depths.  When the fusion goes on computing
 * with that output (abs(fft(x)), multiply(fft(x), c), an rfft whose
 * magnitudes are summed), the outputs inherit that difference and an exact
 * comparison of them is a false alarm.
 *
 * The inherited difference is measured the way check/accum.h measures an
 * accumulation's: the reference is evaluated again with the fft's value
 * shifted element by element by +- 2 B_e (B at the widest coefficient any
 * comparison can use: both sides of unknown order), once along the real
 * parts and once along the imaginary ones (a real-valued IRFFT: the real
 * parts only), and dy[leaf][i] is the sum over the two directions of the
 * largest change of output element i (of either part, for a complex
 * output).  A change in both parts at once moves a smooth function by at
 * most the sum of the two first-order changes, hence the sum.  A
 * comparison whose coefficient is g then allows 2 dy g / g_wide at i: as
 * for accumulations, first order in the shift with a factor 2 for the
 * curvature of what follows.  Like the accumulations' measurement, the
 * shift moves every element in the same direction at once; an output that
 * sums terms whose sensitivities have opposite signs (a reduce over
 * differences of fft values) can see part of that shift cancel.
 *
 * The leaves an fft produces directly keep tol_fft's own bound (the caller
 * skips them here).  Every well-formed fft of the kernel but its root is
 * measured; each costs 2 or 4 more reference evaluations, plus one
 * evaluation to capture the ffts' values.  The capture records what the
 * shifted evaluations read, and those recompute only what the shifted fft
 * reaches where replay.h allows it.
 */
#ifndef TUNE_CHECK_FFT_SPREAD_H
#define TUNE_CHECK_FFT_SPREAD_H

#include <stdint.h>

#include "accum.h"
#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

#define CHK_FFT_SPREAD_MAX 8

typedef struct chk_fft_spread {
  const hlo_instr *ins;
  double wide;                               /* g_wide, the coefficient measured at */
  double *dy[CHK_ACCUM_MAX_LEAVES];          /* dy[leaf][i], NULL: the leaf does not move */
} chk_fft_spread;

typedef struct chk_fft_spreads {
  int n;
  chk_fft_spread s[CHK_FFT_SPREAD_MAX];
  int dropped; /* ffts beyond CHK_FFT_SPREAD_MAX, not measured */
} chk_fft_spreads;

/* Measures every fft of kernel (a computation of the module eval runs)
 * that is not kernel's root; reference is the unshifted result.  0, or -1
 * with err (the evaluation's error, or out of memory). */
int chk_fft_spreads_measure(chk_fft_spreads *S, const hlo_computation *kernel, const hlo_value *reference,
                            chk_accums_eval_fn *eval, void *eval_ctx, hlo_error *err);

/* Adds to map[i] (n elements of output leaf `leaf`) the allowance of
 * spread j for a comparison with coefficient g (chk_tol_fft_coef).
 * Returns whether the leaf moves with that fft at all. */
int chk_fft_spread_add(const chk_fft_spreads *S, int j, int leaf, int64_t n, double g, double *map);

void chk_fft_spreads_free(chk_fft_spreads *S);

#endif
