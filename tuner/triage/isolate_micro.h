/* isolate_micro.h — micro inspection inside a culprit fusion (issue 16
 * item 3, the paper's §3.2): which instruction of the intact fused kernel
 * goes wrong first, without splitting the fusion.
 *
 * The kernel runs once more with its config, on the operands macro
 * isolation gave it, with a probe attached (dev_probe.h): every internal
 * instruction's values are folded into a summary as the tiles produce
 * them.  The reference evaluates the same unit op by op and hands over
 * every instruction's value (chk_eval_hook).  Walking the fused
 * computation in program order (HLO text order, which is topological),
 * each instruction the kernel produced is compared with the reference's
 * value under the unit's derived tolerance (isolate.h: the loosest leaf
 * tolerance of the unit; bitwise for integer and pred results).  The first
 * that differs is the first diverging instruction; only its tensors and
 * those of its operands are kept, both sides, with the mismatch bounding
 * box and the peak error.
 *
 * Elements an instruction never produced in the kernel (a slice reads part
 * of its operand; the kernel computes only that part) are not compared:
 * the device tensor holds the reference's values there, and `observed`
 * says how many were produced.
 *
 * When every instruction is right but the kernel's output differs from
 * what it computed for the root, the store is the culprit: store_diffs
 * counts those elements.
 *
 * Only the built-in simulated device can be instrumented: with another
 * backend the inspection is skipped with a note.
 */
#ifndef TUNE_ISOLATE_MICRO_H
#define TUNE_ISOLATE_MICRO_H

#include <stdbool.h>
#include <stdint.h>

#include "check/compare.h"
#include "device/dev_backend.h"
#include "device/dev_config.h"
#include "device/dev_defect.h"
#include "device/dev_fusion.h"
#include "device/dev_machine.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

/* The paper's 16-byte summary, with the NaN and Inf counts alongside. */
typedef struct tn_iso_summary {
  float min, max, mean, std; /* over finite elements; 0 when none */
  int64_t nan, inf;
} tn_iso_summary;

typedef struct tn_iso_instr {
  char name[128];
  const char *op;            /* opcode name (static) */
  int64_t count;             /* elements of its array */
  int64_t observed;          /* elements the kernel produced; 0: not probed
                                (a tuple, or never evaluated as a box) */
  tn_iso_summary dev, ref;
  bool compared;             /* both sides exist and were compared */
  bool within;
  int64_t mismatches;
  double max_rel;
} tn_iso_instr;

/* One captured tensor: the first diverging instruction or an operand. */
typedef struct tn_iso_tensor {
  char name[128];
  bool diverging;            /* the first diverging instruction itself */
  int instr;                 /* index into tn_iso_micro.v */
  hlo_value *dev, *ref;      /* one reference each */
  chk_metrics m;             /* dev against ref: box, peak, counts */
} tn_iso_tensor;

typedef struct tn_iso_micro {
  bool done;                 /* the instrumented run and the reference ran */
  char note[256];            /* why not, or a remark */
  chk_tol tol;
  int n;
  tn_iso_instr *v;           /* malloc'd, the fused computation's order */
  int first;                 /* index into v of the first diverging
                                instruction; -1: none */
  int64_t store_diffs;       /* elements of the kernel's output that differ
                                from the root's values as the kernel
                                computed them: the store is wrong (a
                                non-tuple root only) */
  int ntensors;
  tn_iso_tensor *tensors;    /* malloc'd: first the diverging instruction,
                                then its operands in operand order */
} tn_iso_micro;

typedef struct tn_iso_micro_opts {
  const dev_backend *backend; /* must be dev_sim_backend() */
  const dev_machine *machine;
  const dev_compiler *compiler;
  uint64_t jitter;            /* the timing seed of the fused run inspected */
  uint64_t seed;              /* the reference's rng seed */
  int replicas;
  double time_budget;
  chk_tol tol;
} tn_iso_micro_opts;

/* Inspects fusion unit module um (analysed as f) run with cfg on args.
 * Always fills *out (free with tn_iso_micro_free); out->done says whether
 * it could be inspected, out->note why not. */
void tn_iso_inspect(const hlo_module *um, const dev_fusion *f, const dev_config *cfg, hlo_value *const *args,
                    int nargs, const tn_iso_micro_opts *o, tn_iso_micro *out);
void tn_iso_micro_free(tn_iso_micro *m);

#endif
