/* isolate.h — macro isolation of a whole module (issue 16 item 2, the
 * paper's hierarchical isolation, §3.2): which fusion of a program is wrong,
 * and in what way.
 *
 * When a program's output is wrong, an upstream error makes every fusion
 * after it look guilty.  So each unit (units.h) is judged on its own, fed
 * the operands the reference evaluator gives it when it evaluates the whole
 * module (capture.h), and run three ways on those operands:
 *   fused      the unit's kernel on the device, with its default config or
 *              the one --config names for it;
 *   unfused    every instruction of the fusion as its own single-op kernel
 *              with that kernel's default config, the intermediates going
 *              through memory (a "defusion"); a unit that is one heavy op
 *              outside any fusion is its own single-op kernel, so it has no
 *              separate unfused run; a fusion of one op whose kernel
 *              provably is the fused one again, on the same operands and
 *              config, takes the fused output for it (isolate_same.h,
 *              isolate.c's takes_fused);
 *   reference  the evaluator, emulating device numerics as --check does.
 * Every comparison uses the tolerance --check derives for the unit's
 * default against the reference (per output leaf: its rule, and the
 * largest per-element allowance of the derived bound).
 *
 * Deriving it is most of a unit's cost: the reference's probe walks every
 * product of every dot in several orders (check/accum.h).  A comparison
 * of two outputs bit for bit equal needs no tolerance: it is within under
 * every one.  So where the unit's reference value is known from the
 * capture (its trace, capture.h) and the timing seed cannot change a run
 * (no dma-race on the built-in device), the runs come first, and a unit
 * whose fused and unfused runs both give the reference's bits is `ok`
 * without a tolerance (tol_skipped).  Any other unit derives
 * it, as does every unit with all_tolerances (--all-tolerances), and every
 * skipped one before the program run needs them (isolate_chain.h).
 *
 * Why every unit is compared with the reference, not only when fused and
 * unfused disagree: the derived tolerance needs the reference's evaluation
 * of the unit anyway, and a lowering defect whose trigger holds for the
 * fused kernel and for the op's own kernel alike makes both wrong in the
 * same way; stopping at "fused agrees with unfused" would miss it.  The
 * cascade's order survives in the attribution:
 *   fused ~ ref, unfused ~ ref (or no unfused run)   ok
 *   fused !~ ref, unfused ~ ref                       fusion-bug
 *   fused !~ ref, unfused !~ ref, fused ~ unfused     reference-disagrees
 *   fused !~ ref, unfused !~ ref, fused !~ unfused    lowering-bug
 *   fused ~ ref, unfused !~ ref                       lowering-bug (the
 *       fusion's own kernel is right; an op's single-op lowering is not)
 *   a single heavy op that differs from the reference: lowering-bug
 *   a fusion whose unfused run could not be made (an op the device cannot
 *       lower alone) and whose fused kernel differs: fusion-bug, with the
 *       reason in the note
 * Culprits are ranked by their max relative error against the reference,
 * ties in program order.
 */
#ifndef TUNE_ISOLATE_H
#define TUNE_ISOLATE_H

#include <stdbool.h>
#include <stdint.h>

#include "check/compare.h"
#include "device/dev_backend.h"
#include "device/dev_config.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "check/inputs.h"
#include "isolate_micro.h"

#define TN_ISO_CLASS_LIST(X)                                                   \
  X(OK, "ok")                                                                  \
  X(FUSION_BUG, "fusion-bug")                                                  \
  X(LOWERING_BUG, "lowering-bug")                                              \
  X(REFERENCE_DISAGREES, "reference-disagrees")                                \
  X(PROPAGATED, "propagated") /* every unit ok on its own inputs, the        \
                                 program output not: the amplifier */         \
  X(NOT_ISOLATED, "not-isolated") /* no captured operands, or the unit     \
                                     cannot be run or evaluated: why in note */

typedef enum tn_iso_class {
#define X(e, name) TN_ISO_##e,
  TN_ISO_CLASS_LIST(X)
#undef X
  TN_ISO_CLASS_COUNT
} tn_iso_class;

const char *tn_iso_class_name(tn_iso_class c);
/* The timing seed of a unit's fused run with cfg (the one tune --check
 * gives its default), which the chained run (isolate_chain.h) uses too. */
uint64_t tn_iso_jitter(uint64_t seed, const dev_config *cfg);
/* Is c a finding (a culprit)? */
bool tn_iso_class_is_culprit(tn_iso_class c);

/* One comparison of two sides of a unit, over every output leaf. */
typedef struct tn_iso_cmp {
  bool done;           /* both sides exist and were compared */
  bool within;         /* no leaf has a mismatch */
  bool identical;      /* every leaf bitwise equal */
  int leaf;            /* the worst leaf */
  chk_metrics m;       /* its metrics (actual = the first side named) */
} tn_iso_cmp;

typedef struct tn_iso_unit {
  char name[128];
  int index;                           /* program order (units.h) */
  tn_iso_class cls;
  char config[DEV_CONFIG_TEXT_MAX];    /* the fused run's config */
  bool overridden;                     /* it came from --config */
  bool nondeterministic;               /* two timing seeds gave the fused
                                          run different outputs (the
                                          second seed runs only where the
                                          timing can matter: isolate.c) */
  int nkernels;                        /* single-op kernels of the unfused run */
  int nreused;                         /* of those, how many took the fused
                                          output instead of running, being
                                          the fused run again (isolate.c);
                                          neither printed nor stored */
  tn_iso_cmp fused_unfused, fused_ref, unfused_ref;
  chk_tol tol;                         /* the loosest leaf tolerance used */
  bool tol_skipped;                    /* every comparison bit for bit
                                          identical: no tolerance derived
                                          (tol is NAN, NAN) */
  double max_rel;                      /* the ranking key: the culprit side's
                                          max relative error vs the reference
                                          (inf for a one-sided NaN/Inf) */
  char note[512];
  double chain_in_rel, chain_out_rel;  /* the device's program run
                                          (isolate_chain.h): max relative
                                          error of its operands and of its
                                          output; NAN when not run */
  tn_iso_micro micro;                  /* culprits: the first diverging
                                          instruction inside the fused
                                          kernel (isolate_micro.h) */
  /* Culprits found by macro isolation (not `propagated`): the unit alone
   * as a module (units.h, printed; malloc'd) and the operands it ran on,
   * the reference's (one reference each), so that --reproduce can bundle
   * it from the results file alone.  NULL / 0 otherwise. */
  char *hlo;
  int ninputs;
  hlo_value **inputs;
} tn_iso_unit;

typedef struct tn_iso_opts {
  const dev_backend *backend;
  const dev_machine *machine;
  const dev_compiler *compiler;
  uint64_t seed;
  chk_inputs_profile profile;
  int replicas;                        /* 0: what the module needs */
  int64_t max_memory;                  /* 0: no limit */
  double time_budget;                  /* seconds per evaluation; 0: capture.h's */
  int noverrides;                      /* --config UNIT='CONFIG' */
  const char *const *override_units;
  const char *const *override_configs; /* partial configs are completed
                                          from the unit's default (only.h) */
  hlo_value *const *entry_args;        /* the module's entry arguments
                                          (--inputs); NULL: synthesised from
                                          seed and profile */
  bool all_tolerances;                 /* derive every unit's tolerance,
                                          even where no comparison needs
                                          one (--all-tolerances) */
} tn_iso_opts;

/* The device's program against the reference's (isolate_chain.h). */
typedef struct tn_iso_program {
  bool done;            /* both program runs completed */
  char note[256];       /* why not */
  chk_tol tol;          /* the program output's tolerance */
  bool tol_skipped;     /* not derived (NAN, NAN): the program's output is
                           the reference's bit for bit and some unit's
                           tolerance was skipped */
  bool differs;         /* the program output is beyond it */
  int64_t mismatches, count;
  double max_rel, max_abs;
  int amplifier;        /* unit index, -1: none */
  double gain;          /* its output's relative error over its operands' */
  int origin;           /* first unit with exact operands and an inexact
                           output, -1: none */
} tn_iso_program;

typedef struct tn_iso_result {
  int n;
  tn_iso_unit *v;                      /* malloc'd, program order */
  int nculprits;
  int *ranked;                         /* malloc'd: indices into v of the
                                          culprits, worst first */
  tn_iso_program program;              /* run when no unit is a culprit */
} tn_iso_result;

/* Isolates every unit of m (source names the file in messages).  0 with
 * *out filled (free with tn_iso_result_free), or -1 with err for bad input:
 * an --config naming no unit or holding a bad config, a module without
 * units, or out of memory.  A unit that cannot be isolated is not an
 * error: it is NOT_ISOLATED with the reason in its note. */
int tn_isolate(const hlo_module *m, const char *source, const tn_iso_opts *o, tn_iso_result *out, hlo_error *err);
void tn_iso_result_free(tn_iso_result *r);

#endif
