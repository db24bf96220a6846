/* dev_fft.h — the device's own discrete Fourier transform (dev_fft.c):
 * the split a config chooses, and how many roundings each input term
 * meets on its way to an output, for the checker's tolerance. */
#ifndef TUNE_DEV_FFT_H
#define TUNE_DEV_FFT_H

#include <stdint.h>

#include "dev_config.h"
#include "hlo/hlo.h"

/* Roundings one complex multiplication by a computed twiddle counts as, in
 * units of the working precision's u: |w^ - w| <= mu |w| for the table
 * entry (f32: each part of a double cos/sin rounded once, mu <= sqrt(2) u
 * (1 + 2^-20); f64: an angle of up to 2 pi carries about 3 u of relative
 * error into cos and sin, plus libm's ulp, mu <= 32 u), and the product
 * itself adds at most sqrt(2) gamma_2 (Higham, Accuracy and Stability of
 * Numerical Algorithms, Lemma 3.5): 2 + 3 and 32 + 3, rounded up. */
#define DEV_FFT_MUL_ROUNDINGS_F32 5
#define DEV_FFT_MUL_ROUNDINGS_F64 35

/* The inner length N2 of the split N = N1 x N2 that config cfg gives a
 * transform of length n whose output tile along the transformed axis is
 * tile: n itself (a direct DFT, N1 = 1) without flag four-step; with it,
 * gcd(n, tile) when that is a proper divisor of n, else n / p for the
 * smallest prime factor p of n (n prime: n, direct). */
int64_t dev_fft_inner(int64_t n, int64_t tile, unsigned flags);

/* The depth d of ins (an fft the device lowers) under cfg (NULL: one tile,
 * no flags): every term x[n] reaches an output through at most d
 * roundings, a multiplication counted as DEV_FFT_MUL_ROUNDINGS_*.  Direct:
 * one multiplication and N - 1 additions; four-step: N2 - 1 and N1 - 1
 * additions, three multiplications (inner, twiddle, outer); an inverse
 * adds 2 for the 1/N scale (1/N rounded, then the product).  Over 2 or 3
 * dimensions the passes add: the innermost axis as above, each outer axis
 * a direct DFT (N_a - 1 additions, one multiplication, 2 more for an
 * inverse's scale).  0 when the device does not lower ins itself (a
 * malformed fft). */
int64_t dev_fft_depth(const hlo_instr *ins, const dev_config *cfg);

#endif
