/* tol_plan.h — the tolerance of every output leaf of one kernel, for one
 * comparison between two sides (check/tolerance.h, check/accum.h,
 * check/tol_fft.h, check/fft_spread.h put together).
 *
 * A plan describes the kernel once: its computation, the compared output
 * (the entry root's value, whose leaves may pass on kernel leaves or be
 * made by the launch around the kernel), its accumulations and ffts as the
 * reference measured them, and the user's choices (criterion, --ops,
 * --atol/--rtol).  A side of a comparison is what the device did: the bf16
 * passes of the hero's f32 dot, the hero's accumulation depth, and its
 * config, which check/ does not read: it hands the config back to the
 * plan's callbacks, so the plan stays device-neutral (check/ never sees
 * tuner/device/).
 */
#ifndef TUNE_CHECK_TOL_PLAN_H
#define TUNE_CHECK_TOL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "accum.h"
#include "cascade.h"
#include "compare.h"
#include "fft_spread.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"
#include "tolerance.h"

/* One side of a comparison. */
typedef struct chk_tol_side {
  int passes;         /* bf16 passes of the hero's f32 dot (0: not one) */
  int64_t depth;      /* the hero's accumulation depth (0: unknown, = K) */
  const void *config; /* the side's device config, for the callbacks; NULL:
                         the side is the reference */
} chk_tol_side;

/* Everything borrowed: the plan owns nothing and must not outlive what it
 * points to. */
typedef struct chk_tol_plan {
  const hlo_computation *kernel; /* the kernel's computation */
  const hlo_shape *out_shape;    /* the compared output's shape */
  int nleaves;                   /* its leaves, at most 256 */
  const int *kernel_leaf;        /* per output leaf: the kernel leaf it
                                    passes on, -1 when the launch passes an
                                    argument or a constant through */
  const hlo_instr *hero;         /* the instruction whose order configs set; NULL: none */
  const chk_accums *acc;         /* every float accumulation, measured */
  const chk_fft_spreads *ffts;   /* ffts whose error reaches outputs through more ops */
  const hlo_value *reference;    /* the reference's output; NULL: none (no fft bound) */
  chk_tol_criterion criterion;
  const char *ops;               /* --ops: comma-separated opcodes to check, or NULL */
  bool tol_override;             /* --atol/--rtol: tol for every float leaf */
  chk_tol tol;
  /* The depth (check/tol_fft.h) of fft ins computed by a side whose
   * config is config (NULL: the reference): a device's own depth, or
   * CHK_FFT_DEPTH_REFERENCE / CHK_FFT_DEPTH_UNKNOWN. */
  int64_t (*fft_depth)(const void *ctx, const hlo_instr *ins, const void *config);
  /* Does the device lower fft ins itself (so its output gets the
   * transform's bound)? */
  bool (*fft_lowered)(const void *ctx, const hlo_instr *ins);
  const void *ctx;               /* for the two callbacks */
} chk_tol_plan;

/* The coefficient G (check/tolerance.h) of each accumulation of the plan,
 * into g[0..acc->n), for a comparison between sides a and b: their passes
 * and depths apply to the hero, whose order the config sets; any other
 * accumulation's order is unknown on both sides (d = K).  Under the
 * noise-floor criterion the order part of G is at most c times the bound
 * of two K-deep orders, c from the accumulation's measured noise
 * (check/accum.h); the bf16 pass part stays whole (no measurement sees
 * it).  base leaves the noise out (for unverifiability and for the
 * measurement's widest coefficient). */
void chk_tol_plan_coefs(const chk_tol_plan *p, bool base, const chk_tol_side *a, const chk_tol_side *b, double *g);

/* The comparison rule and tolerance of every output leaf, into
 * out[0..nleaves), for a comparison between sides a and b.  *vacuous (may
 * be NULL) is set when the tolerance of a checked leaf fed by an
 * accumulation admits any output of it.  The per-element maps are
 * malloc'd: release them with chk_tol_plan_free_maps, also after a
 * failure.  0, or -1 when memory ran out (a leaf without its allowance
 * would be compared exactly, so the comparison must not go ahead). */
int chk_tol_plan_checks(const chk_tol_plan *p, const chk_tol_side *a, const chk_tol_side *b, chk_leaf_check *out,
                        bool *vacuous);

/* Frees the maps of checks[0..nleaves) and clears them. */
void chk_tol_plan_free_maps(const chk_tol_plan *p, chk_leaf_check *checks);

/* The tolerance the check of output leaf `leaf` allows, for reports: with
 * a map, its largest entry stands as the atol. */
chk_tol chk_tol_plan_effective(const chk_tol_plan *p, int leaf, const chk_leaf_check *lc);

#endif
