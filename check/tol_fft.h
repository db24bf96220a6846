/* tol_fft.h — the derived tolerance of an fft's output: how far two
 * correct floating-point computations of one discrete Fourier transform
 * can lie apart, element by element.
 *
 * The bound.  Every DFT algorithm the device and the reference use
 * (a direct DFT-matrix product, the four-step split, FFTW's Cooley–Tukey
 * codelets) computes X[f] = sum_n w_fn x[n], |w_fn| = 1, as a tree in which
 * each term x[n] passes through at most d roundings (an addition is one;
 * a multiplication by a computed twiddle counts as the few of
 * tuner/device/dev_fft.h).  Each rounding scales the term by at most
 * (1 + u), so the computed value is sum_n w_fn x[n] (1 + theta_n) with
 * |theta_n| <= gamma_d = d u / (1 - d u) (Higham, Accuracy and Stability of
 * Numerical Algorithms, §3.1 and §24.1; complex additions round each part
 * and so stay within u of the complex sum), and
 *
 *     |X^[f] - X[f]| <= gamma_d S,   S = sum_n |x[n]|.
 *
 * Two computations with depths d_a and d_b differ by at most
 * (gamma_{d_a} + gamma_{d_b}) S.  S is not recorded by the reference; it
 * follows from the output by Parseval: sum|x| <= sqrt(N) ||x||_2 =
 * ||X||_2 for a forward transform, where X is the whole spectrum of the
 * row (for RFFT the N/2 + 1 kept frequencies with the others weighted
 * twice by Hermitian symmetry); for an inverse, whose terms are X[k] w / N,
 * S = sum|X| / N <= ||y||_2 of the output row y likewise.  The reference's
 * own output stands for the exact one, its norm divided by
 * 1 - sqrt(N) gamma_{d_ref} (its whole row's error is at most that
 * fraction of the exact norm).
 *
 * Depths.  A device config's d is dev_fft_depth (its own split).  The
 * reference (FFTW) is given d_ref = 8 ceil(log2 N) + 16: along a path of a
 * radix-2 Cooley–Tukey transform each of the log2 N stages multiplies by a
 * twiddle (5 roundings counted) and adds once (1); the rest is margin for
 * the constants inside FFTW's larger codelets and the extra stages of
 * non-power-of-two plans.  That is an allowance from the algorithm's
 * structure, not a proof about FFTW's code; tests/integration/fft.sh
 * measures every candidate of the datasets against it.  A side whose
 * order is unknown (an external backend) gets the larger of d_ref and the
 * direct DFT's N + 4.
 *
 * Two or three transformed dimensions.  Both sides run one pass of 1-D
 * transforms per axis (the device: dev_fft.c; FFTW's multi-dimensional
 * plans likewise), and a term passes through every pass's roundings, so
 * the depths add over the axes (d_ref summed per axis, N_a + 4 per axis
 * for an unknown side) and the argument above holds with N the product
 * of the lengths and S the sum over one batch element's whole block, the
 * norm taken over that block (RFFT: the last axis's inner frequencies
 * twice).
 *
 * This is the rigorous bound whatever --tolerance says: it assumes every
 * rounding as large as u and all of one sign, and is still tight enough
 * for what a wrong lowering does to a transform (a wrong twiddle, a lost
 * term moves an output by about |x[n]|, against gamma_d S ~ d u N |x|:
 * for N = 256 in f32 about 3e-5 of S).  Underflow is not modelled: the
 * inputs the checker synthesises keep every partial far above it.
 */
#ifndef TUNE_CHECK_TOL_FFT_H
#define TUNE_CHECK_TOL_FFT_H

#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

/* Depth markers for a side that is not a device config. */
#define CHK_FFT_DEPTH_REFERENCE 0
#define CHK_FFT_DEPTH_UNKNOWN (-1)

/* d_ref above, for a transform of length n. */
int64_t chk_tol_fft_ref_depth(int64_t n);

/* The coefficient g = gamma_da + gamma_db of the bound above for fft ins
 * (its map is g times a per-row norm); INFINITY when ins is not a
 * well-formed fft. */
double chk_tol_fft_coef(const hlo_instr *ins, int64_t da, int64_t db);

/* Adds to map[e], for every element e of out (the reference's value of
 * fft instruction ins, an array), the bound above for a comparison between
 * sides of depths da and db (a depth of a device config, or a marker).
 * 0, or -1 with err when ins is not a well-formed fft whose output out
 * is. */
int chk_tol_fft_map(const hlo_instr *ins, const hlo_value *out, int64_t da, int64_t db, double *map,
                    hlo_error *err);

#endif
