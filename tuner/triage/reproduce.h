/* reproduce.h — hermetic reproducer bundles of one stored finding.
 *
 * A bundle is a folder an engineer can attach to a bug and run anywhere a
 * `tune` is installed, without the results file or the corpus:
 *
 *   fusion.hlo   the module as checked (canonical text from the store's
 *                `hlo` dataset), or its minimized form
 *   config.txt   the candidate's config line
 *   seed         the input seed
 *   inputs.h5    /inputs/<k> the inputs the finding was checked on (stored
 *                ones, or synthesised from the seed) and /outputs/<k> the
 *                reference evaluator's outputs (h5values.h layout), so the
 *                numbers can be looked at without tune
 *   run.sh       `tune --check fusion.hlo --inputs inputs.h5 --only
 *                "$(cat config.txt)" ...` on the machine, compiler and
 *                defects of the run: exit 1 while the divergence persists,
 *                0 once it is fixed, 2 on error.  Reading the inputs rather
 *                than synthesising them again keeps the bundle valid for a
 *                tune whose input synthesis differs.
 *   README       what the files are and how to run them
 *
 * The check that run.sh performs is deterministic (seeded inputs, seeded
 * timing jitter), so the bundle reproduces the verdict, not just the
 * configuration.  Nothing here prints; errors come back in an hlo_error.
 */
#ifndef TUNE_REPRODUCE_H
#define TUNE_REPRODUCE_H

#include "hlo/hlo_error.h"
#include "run/result.h"
#include "store/store.h"

#define TN_REPRO_MAX_DEFECTS 32

/* How a run's device is named on a command line: the run records the
 * compiler as "NAME+d" when --defect options were added; the added
 * defects are those of its list `defects` that the profile lacks (schema
 * 2), or the --defect words of its command line (schema 1). */
typedef struct tn_repro_device {
  char machine[64];
  char compiler[64];
  int ndefects;
  char defects[TN_REPRO_MAX_DEFECTS][48];
} tn_repro_device;

void tn_repro_device_of_run(const tn_run_info *run, tn_repro_device *out);

typedef struct tn_repro_bundle {
  const char *dir;             /* created when absent */
  const char *results_path;    /* where the finding came from (README) */
  const tn_run_info *run;
  const tn_fusion_result *r;
  const tn_cand_result *c;
  const char *hlo;             /* the text to ship (r->hlo, or minimized) */
  int instrs_before, instrs_after; /* kernel sizes when minimized, else -1 */
  /* When minimized: the candidate as checked on the minimized module (the
   * README quotes its figures, and the original's beside them), and the
   * sizes shrunk ("1000 -> 257"; "" when none).  NULL otherwise. */
  const tn_cand_result *min_c;
  const char *shrunk;
  /* The inputs the finding was checked on when they cannot be synthesised
   * again from the seed (graph-captured or --inputs): one per parameter of
   * hlo's entry, borrowed.  NULL: synthesise them from the seed. */
  int ninputs;
  hlo_value *const *inputs;
  const char *tool_path;       /* absolute path of the tune writing the
                                  bundle (run.sh falls back to it), or NULL */
  const char *run_tool_version; /* tool_version of the results file, or NULL */
  /* A culprit of an isolation run (tune --isolate -o) rather than a stored
   * candidate: its class (isolate.h).  c then holds its config and its
   * fused-vs-reference comparison (vs_reference, tol) and r its name, seed
   * and module.  NULL for a candidate. */
  const char *isolation_class;
} tn_repro_bundle;

/* Writes every file of the bundle.  The inputs (b->inputs, or synthesised
 * from the seed) and the reference evaluated on them are written here, so
 * inputs.h5 describes exactly the module in fusion.hlo. */
int tn_repro_write(const tn_repro_bundle *b, hlo_error *err);

#endif
