/* compare.h — comparing one output array against another.
 *
 * Two rules, chosen by what the producing op does (DESIGN.md §5):
 *   CHK_RULE_BITWISE   data movement, integers, pred, min/max reductions:
 *                      any bit difference is a mismatch.
 *   CHK_RULE_TOLERANCE float arithmetic: a pair passes when
 *                      |a - b| <= atol + atol_map[i] + rtol * |b|  (b is the
 *                      expected side; atol_map is optional).
 *                      NaN on both sides at one position, and an Inf of the
 *                      same sign on both sides, are excluded from the
 *                      comparison; NaN or Inf on one side only is a mismatch.
 *
 * Whatever the verdict, every metric below is computed, so a threshold can
 * be re-judged later from the stored numbers without rerunning anything.
 */
#ifndef TUNE_CHECK_COMPARE_H
#define TUNE_CHECK_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

typedef enum chk_rule { CHK_RULE_BITWISE = 0, CHK_RULE_TOLERANCE } chk_rule;

typedef struct chk_tol {
  double atol, rtol;
} chk_tol;

/* Error histogram: bucket 0 counts exact (bitwise equal) elements; bucket
 * i in 1..CHK_HIST_BUCKETS-2 counts |a-b| in [10^(i-14), 10^(i-13)) — so
 * bucket 1 is below 1e-13 and bucket 15 is [1e1, 1e2); the last bucket
 * counts |a-b| >= 1e2 and every NaN/Inf mismatch. */
#define CHK_HIST_BUCKETS 17

typedef struct chk_side_stats {
  double min, max, mean, std; /* over finite elements; 0 when none */
} chk_side_stats;

typedef struct chk_metrics {
  int64_t count;            /* elements compared */
  int64_t excluded;         /* NaN/NaN and same-signed Inf pairs skipped */
  int64_t mismatches;
  double max_abs, max_rel;  /* over finite pairs */
  uint64_t max_ulp;         /* in the element type's own ulps (0 for ints) */
  double rms;               /* sqrt(mean((a-b)^2)) over finite pairs */
  int64_t nan_mismatches;   /* NaN on exactly one side */
  int64_t inf_mismatches;   /* Inf on one side only, or of opposite signs */
  int64_t peak_index;       /* flat row-major index of the largest error
                               (one-sided NaN/Inf counts as largest); -1 none */
  int rank;
  int64_t peak[HLO_MAX_RANK];      /* peak_index as a multi-index */
  int64_t bbox_lo[HLO_MAX_RANK];   /* bounding box of the mismatches, */
  int64_t bbox_hi[HLO_MAX_RANK];   /* inclusive; meaningful when mismatches > 0 */
  int64_t hist[CHK_HIST_BUCKETS];
  chk_side_stats a, b;      /* a: candidate (actual), b: expected */
} chk_metrics;

/* Compares actual `a` with expected `b` (same type and dims; tuples are
 * compared leaf by leaf by the caller).  0, or -1 with err when the two
 * cannot be compared (different shapes or types). */
int chk_compare(const hlo_value *a, const hlo_value *b, chk_rule rule, chk_tol tol, chk_metrics *m,
                hlo_error *err);
/* The same with an optional per-element absolute tolerance added to
 * tol.atol (row-major, one per element; NULL for none): bounds propagated
 * through the ops that follow an accumulation (check/tol_plan.h). */
int chk_compare_map(const hlo_value *a, const hlo_value *b, chk_rule rule, chk_tol tol, const double *atol_map,
                    chk_metrics *m, hlo_error *err);

/* Distance in units in the last place between two floats of type t, given
 * as doubles exactly representable in t: the number of representable values
 * of t strictly between them plus one (0 when equal, +0 and -0 are 1 apart;
 * UINT64_MAX when either is NaN). */
uint64_t chk_ulp_distance(hlo_etype t, double a, double b);

#endif
