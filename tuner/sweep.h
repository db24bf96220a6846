/* sweep.h — checking every candidate of one fusion (the product's main job).
 *
 * One call: analyse the fusion, synthesise seeded inputs, evaluate the
 * reference (emulating device numerics, so only accumulation order can
 * legitimately differ), run the default, then every candidate in parallel
 * with OpenMP, judging each through the cascade (check/cascade.h).
 *
 * Determinism: candidates are independent and their results land at their
 * index in the space's order; every random choice (inputs, timing jitter)
 * is a pure function of the seed and the candidate's fingerprint.  So the
 * results are identical whatever the thread count; only wall times differ.
 */
#ifndef TUNE_SWEEP_H
#define TUNE_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "inputs.h"
#include "dev_backend.h"
#include "dev_defect.h"
#include "dev_machine.h"
#include "hlo.h"
#include "result.h"
#include "tolerance.h"

typedef struct tn_sweep_opts {
  const dev_backend *backend;
  const dev_machine *machine;
  const dev_compiler *compiler;
  uint64_t seed;
  chk_inputs_profile profile;
  int threads;            /* 0: OpenMP's default */
  int budget;             /* at most this many candidates (default included); 0 = all */
  double time_budget;     /* seconds; 0 = none.  Candidates not started in
                             time are left out of the result. */
  const char *only;       /* check the default and this one config text */
  bool stop_on_mismatch;  /* stop at the first divergent candidate */
  bool tol_override;      /* use tol for every float leaf */
  chk_tol tol;
  chk_tol_criterion criterion; /* g(d) of the derived bound (check/tolerance.h) */
  const char *ops;        /* comma-separated opcode names to check, or NULL */
  bool progress;          /* draw a progress line on stderr */
  int error_maps;         /* keep error maps of this many worst divergent candidates */
} tn_sweep_opts;

/* Checks one fusion.  0 with *out filled (caller frees with
 * tn_fusion_result_free), or -1 with err for bad input (unsupported op,
 * bad --only config, evaluation failure of the reference).  A failing
 * candidate never makes this fail: it becomes a verdict. */
int tn_check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o,
                    tn_fusion_result *out, hlo_error *err);

#endif
