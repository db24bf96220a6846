/* eval.h — the reference evaluator of HLO semantics.
 *
 * It settles every disagreement between a candidate and the default, so it
 * is written for fidelity first: XLA's documented semantics, exact dtype
 * conversions (hlo_dtype.h), no flushing of subnormals.  Speed comes from
 * kernels over contiguous arrays, one loop per element type, and from
 * evaluating elementwise chains block by block.
 *
 * Replicas: with replicas = N every instruction is evaluated for N
 * simulated replicas in lockstep, which is what lets collectives see the
 * values of their peers.  All replicas receive the same arguments; they
 * differ through replica-id and what collectives do.
 */
#ifndef TUNE_CHECK_EVAL_H
#define TUNE_CHECK_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

/* An observer of evaluation, for the tolerance policy: called after every
 * instruction with its operands and its value (once per replica).  It may
 * replace *value with another value of the same shape (dropping the old
 * reference and handing over a new one), which is how the sweep measures
 * how an accumulation's rounding error propagates to the outputs.  Under a
 * replay (replay.h: the hook is chk_replay_hook) an instruction whose value
 * comes from the recording is shown with no operands (NULL, 0). */
typedef void chk_eval_hook(void *ctx, const hlo_instr *ins, hlo_value *const *operands, int noperands,
                           hlo_value **value);

/* An evaluator of some instructions by other means, asked before each
 * op the evaluator would evaluate itself (one replica only): 1 with *value
 * (one reference handed over) when it evaluated ins on operands, which
 * must give exactly the evaluator's own value, bit for bit; 0 to leave it
 * to the evaluator; -1 when memory ran out.  The isolation's capture
 * evaluates a dot this way together with the probe's walk of it
 * (chk_accums_dot_eval), which reads the same products. */
typedef int chk_eval_provider(void *ctx, const hlo_instr *ins, hlo_value *const *operands, int noperands,
                              hlo_value **value);

typedef struct chk_eval_opts {
  int replicas;       /* simulated replicas, >= 1 */
  int emulate_device; /* device numerics (bf16 dot passes, approximations) */
  /* Optional hook (see above).  With a hook every instruction is evaluated
   * op by op, so the hook sees each one — except inside the scalar
   * computations that reduce, reduce-window and map apply per element when
   * they run as lane programs (eval_reduce_prog.h): those instructions are
   * not shown to the hook. */
  chk_eval_hook *hook;
  void *hook_ctx;
  /* Optional (see above); only with replicas = 1. */
  chk_eval_provider *provide;
  void *provide_ctx;
  /* Wall-clock seconds one chk_eval_module call may take; 0: no limit.
   * A module can loop forever or hold a dot that runs for hours, and the
   * checker must not hang with it: loop iterations and instructions count
   * their work and read the clock every so often, long ops between slices
   * of a few million units of work, so evaluation stops within a small
   * fraction of a second of the deadline, failing with
   * "evaluation exceeded the time budget of S s". */
  double time_budget;
  /* The run's seed, for rng (which XLA leaves undefined): the reference
   * draws it from Philox keyed by this (eval_rng.c), so a rerun with the
   * same seed gives the same values. */
  uint64_t rng_seed;
  /* Iterations after which a while loop whose condition never turns false
   * fails evaluation; 0: CHK_EVAL_MAX_WHILE.  The deadline above usually
   * stops such a loop first; this cap is what stops it when there is no
   * deadline.  Settable so that a test can reach it in milliseconds. */
  int64_t max_while_iterations;
} chk_eval_opts;

#define CHK_EVAL_MAX_WHILE INT64_C(100000000)

/* Evaluates m's entry computation.  args holds one value per entry
 * parameter, in parameter order (the caller keeps its references).  On
 * success outs[r] receives the root value of replica r (one reference each,
 * the caller unrefs) and 0 is returned; on failure -1 with err naming the
 * instruction (its line/col) and what went wrong, and outs untouched. */
int chk_eval_module(const hlo_module *m, int nargs, hlo_value *const *args,
                    const chk_eval_opts *o, hlo_value **outs, hlo_error *err);

/* 0 when every instruction reachable from the entry is one evaluation
 * supports; -1 with err naming the first op and instruction that is not
 * (custom-call, send, infeed, rng, ...). */
int chk_eval_supported(const hlo_module *m, hlo_error *err);

#endif
