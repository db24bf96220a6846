/* replay.h — evaluating the reference again with one instruction's value
 * changed, recomputing only what that value reaches.
 *
 * The tolerance measurements (accum.h, fft_spread.h) evaluate the reference
 * two or four more times per accumulation or fft, each time with that one
 * instruction's value shifted by a hook.  Everything that does not read the
 * shifted value, directly or through other instructions, comes out exactly
 * as in the first evaluation: the evaluator is deterministic and the
 * operands are the same.  Recomputing it, the accumulation itself
 * included (the hook shifts its value only after it has been computed), is
 * what made the measurement cost a whole evaluation per shift: for a
 * dot-heavy fusion almost all of it, since the dot is what precedes the
 * shift.
 *
 * So one evaluation records, for the instructions of the kernel, the values
 * a later replay will read, and a replay of a change of instruction X:
 *   - evaluates, as usual, the instructions downstream of X (those with an
 *     operand that is X or downstream of it);
 *   - takes X's value, and that of every other instruction such an
 *     instruction or the module's output reads, from the recording, and
 *     still shows it to the hook (which is what shifts X);
 *   - skips every other instruction of the kernel.
 * The instructions outside the kernel (the entry around a fusion, the
 * computations the kernel calls) evaluate as usual.  The result is the
 * full evaluation's bit for bit, which tests/unit/test_replay.c checks
 * against the full evaluation.
 *
 * A replay is only planned when that holds: the kernel evaluated once
 * with one replica (a kernel instruction shown to the hook twice, as in a
 * loop or with several replicas, turns replaying off), no instruction of
 * the kernel whose value depends on the evaluation's history rather than
 * its operands (infeed, outfeed, send, recv, rng-get-and-update-state),
 * and every value the replay must read recorded.  Otherwise the caller
 * evaluates in full as before.
 *
 * Memory: the recording holds a reference to each value it keeps, from
 * the recording evaluation until chk_replay_free, so those values (the
 * changed instructions and the operands of what reads them) outlive their
 * last use in the evaluation.
 */
#ifndef TUNE_CHECK_REPLAY_H
#define TUNE_CHECK_REPLAY_H

#include <stdbool.h>

#include "eval.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

typedef struct chk_replay {
  const hlo_computation *kernel;
  unsigned char *want;  /* per kernel instruction: record its value */
  hlo_value **val;      /* the recorded values (NULL: none) */
  int *seen;            /* times the hook showed each instruction */
  bool off;             /* replaying is impossible (see above) */
  unsigned char *plan;  /* per kernel instruction, during a replay */
  chk_eval_hook *hook;  /* the hook of the replayed evaluation */
  void *hook_ctx;
} chk_replay;

/* Prepares R (zeroed by the caller) to record what replays of changes of
 * the ntargets instructions of kernel will need.  Without memory, R is
 * left off: the caller then evaluates in full. */
void chk_replay_init(chk_replay *R, const hlo_computation *kernel, const hlo_instr *const *targets, int ntargets);

/* To be called from the recording evaluation's hook, for every
 * instruction, with the value the evaluation goes on with. */
void chk_replay_record(chk_replay *R, const hlo_instr *ins, hlo_value *value);

/* Plans a replay in which changed's value changes and hook (with ctx) sees
 * every instruction the replay shows; true when it can be replayed (see
 * above).  Then evaluate with chk_replay_hook and R as hook and context. */
bool chk_replay_plan(chk_replay *R, const hlo_instr *changed, chk_eval_hook *hook, void *ctx);

/* The hook of a replayed evaluation: passes every instruction on to the
 * planned hook.  The evaluator recognises it (chk_replay_active). */
void chk_replay_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value);

/* What the evaluator does with instruction i of a computation under a
 * replay. */
typedef enum { CHK_REPLAY_EVALUATE, CHK_REPLAY_RECORDED, CHK_REPLAY_SKIP } chk_replay_step;

/* The replay the evaluation with options o is, when it evaluates c with
 * nrep replicas; NULL when it evaluates c as usual. */
const chk_replay *chk_replay_active(const chk_eval_opts *o, const hlo_computation *c, int nrep);
chk_replay_step chk_replay_step_of(const chk_replay *R, int i);
/* The recorded value of instruction i, one new reference. */
hlo_value *chk_replay_value(const chk_replay *R, int i);

/* Drops the recording (R can be freed twice). */
void chk_replay_free(chk_replay *R);

#endif
