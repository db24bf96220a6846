/* result.h — what one `tune --check` of one fusion produces: the data model
 * shared by the sweep driver (which fills it), the HDF5 store (which writes
 * and reads it) and the summaries and reports (which print it).
 *
 * Ownership: a tn_fusion_result owns everything it points to; free it with
 * tn_fusion_result_free().  Candidate order is the space's order, which is
 * deterministic, so results do not depend on thread scheduling.
 */
#ifndef TUNE_RESULT_H
#define TUNE_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "check/compare.h"
#include "hlo/hlo_value.h"
#include "device/dev_backend.h"
#include "cover.h"
#include "device/dev_config.h"
#include "check/intent.h"
#include "check/verdict.h"

typedef struct tn_cand_result {
  int id;                          /* index in the space; the default is 0 */
  dev_config cfg;
  char config[DEV_CONFIG_TEXT_MAX];/* canonical text */
  uint64_t fingerprint;            /* dev_config_fingerprint */
  dev_status status;
  char message[512];               /* compile/runtime error text, else "" */
  chk_verdict verdict;
  double sim_time;                 /* simulated seconds (0 when not run) */
  double wall_time;                /* host seconds to compile+run+compare */
  double speedup;                  /* default sim_time / this sim_time */
  chk_tol tol;                     /* the tolerance the verdict used */
  bool unverifiable;               /* tol admits any output of the
                                      accumulation (chk_tolerance_vacuous):
                                      "within" proves nothing */
  chk_metrics vs_default;          /* the worst output leaf vs the default */
  bool has_vs_reference;           /* compared with the reference too */
  chk_metrics vs_reference;
  int leaf;                        /* the output leaf the metrics describe */
} tn_cand_result;

/* The values themselves around an error map's largest element: the map
 * says where and how much, a compiler engineer also needs to see what was
 * expected and what came out (is it a zero, a neighbour's value, garbage?).
 * A window of at most TN_PEAK_SIDE x TN_PEAK_SIDE over the map's last two
 * dimensions (one row for a rank-1 map, one element for a scalar), the
 * other dimensions fixed at the peak.  Inline, so that it travels with the
 * map wherever the map is copied (unit_wire.c). */
#define TN_PEAK_SIDE 5
typedef struct tn_peak_window {
  int rows, cols;                  /* 0, 0: none (a file from before) */
  int64_t peak[HLO_MAX_RANK];      /* the map's largest element */
  int64_t origin[HLO_MAX_RANK];    /* the index of window element (0, 0) */
  double expected[TN_PEAK_SIDE * TN_PEAK_SIDE]; /* row-major, rows x cols */
  double actual[TN_PEAK_SIDE * TN_PEAK_SIDE];
} tn_peak_window;

/* An error map: |candidate - expected| over the whole first differing output
 * leaf, as f32 (NaN where exactly one side is NaN/Inf). */
typedef struct tn_error_map {
  int cand_id;
  int rank;
  int64_t dims[HLO_MAX_RANK];
  float *data;                     /* malloc'd, prod(dims) floats */
  tn_peak_window peak;             /* the values around its largest element */
} tn_error_map;

/* What became of one tuning unit (units.h) as a whole. */
#define TN_UNIT_STATUS_LIST(X)                                                        \
  X(VERIFIED, "verified")         /* the default ran; nothing diverged */             \
  X(DIVERGED, "diverged")         /* a finding */                                     \
  X(NOT_VERIFIED, "not verified") /* not even the default ran (compile errors...) */ \
  X(UNSUPPORTED, "unsupported")   /* an op the checker cannot evaluate, and why */    \
  X(TOO_LARGE, "too-large")       /* its estimated memory exceeds --max-memory */     \
  X(TIMED_OUT, "timed out")       /* the time budget ran out before the default */    \
  X(TOOL_ERROR, "tool-error")     /* the host failed (out of memory) */               \
  X(BAD_INPUT, "error")           /* bad usage or input: exit status 2 */

typedef enum tn_unit_status {
#define X(e, name) TN_UNIT_##e,
  TN_UNIT_STATUS_LIST(X)
#undef X
  TN_UNIT_STATUS_COUNT
} tn_unit_status;

const char *tn_unit_status_name(tn_unit_status s);

/* Why fewer candidates were checked than the space holds. */
typedef enum tn_cut {
  TN_CUT_NONE = 0,
  TN_CUT_BUDGET,       /* --budget */
  TN_CUT_TIME,         /* --time-budget ran out */
  TN_CUT_STOP          /* --stop-on-mismatch */
} tn_cut;

typedef struct tn_fusion_result {
  char name[128];                  /* the kernel computation's name */
  char source[1024];               /* the file it came from */
  char hero[32];                   /* dev_hero_name */
  char *hlo;                       /* canonical text of the module (malloc'd) */
  uint64_t fingerprint;            /* FNV-1a of hlo: the fusion's group name */
  uint64_t seed;                   /* input seed */
  int profile;                     /* input profile (chk_inputs_profile) */
  int criterion;                   /* the tolerance criterion (chk_tol_criterion) */
  chk_intent_result nonfinite;     /* were the reference's non-finite
                                      outputs meant? (issue 6, intent.h) */
  int ncands;
  tn_cand_result *cands;           /* malloc'd; cands[0] is the default */
  int best;                        /* index of the fastest non-divergent
                                      candidate that ran, -1 when none */
  bool default_ran;
  bool default_vs_reference_ok;    /* the once-per-fusion check */
  chk_metrics default_vs_reference;
  chk_tol reference_tol;
  bool reference_unverifiable;     /* reference_tol is vacuous (see tn_cand_result) */
  int noutputs;                    /* output leaves with a tolerance below */
  chk_tol output_tol[256];         /* per output leaf, the default-vs-reference
                                      tolerance (atol: the largest per-element
                                      allowance); 0, 0 for an exact leaf */
  int64_t unverifiable;            /* candidates whose tol is vacuous */
  int64_t verdict_counts[CHK_VERDICT_COUNT];
  int nerror_maps;
  tn_error_map *error_maps;        /* malloc'd, worst divergent first */
  double wall_time;                /* whole fusion */
  int space_size;                  /* candidates in the space (the default
                                      included), before any cut */
  tn_cut cut;                      /* why ncands < space_size, if it is */
  bool covered;                    /* a --budget cut chose the candidates
                                      by pairwise cover (cover.h) */
  tn_cover cover;                  /* that choice's seed and coverage */
  bool part;                       /* one unit of a larger module (units.h),
                                      named by its instruction */
  char inputs_from[16];            /* "graph" (captured, capture.h) or
                                      "synthetic" */
  char inputs_note[256];           /* why synthetic when graph was asked */
  int iteration;                   /* graph: the execution captured */
  int ninputs;                     /* graph: the captured inputs, one */
  hlo_value **inputs;              /* reference each (malloc'd), stored
                                      with the results; NULL otherwise */
} tn_fusion_result;

void tn_fusion_result_free(tn_fusion_result *r); /* frees the contents, not r */

#endif
