/* intent.h — non-finite intent analysis: is a NaN or Inf in the outputs
 * meant to be there (paper §3.2.1)?
 *
 * Some kernels produce Inf on purpose: a -inf attention mask selected in,
 * logits padded with -inf to a lane multiple.  Others produce it because
 * the inputs drove an op out of its domain (log of a negative, exp of a
 * large sum, 0 * inf).  The first is a value to check like any other; the
 * second is an artefact of the inputs, not a compiler bug, and a verdict on
 * it would be a false positive.
 *
 * The analysis follows the evaluation (an evaluation hook, eval.h): every
 * instruction whose value holds a non-finite element is either
 *   a source       a constant (intended) or an entry parameter (inputs);
 *   a carrier      an op that only moves, selects or orders values (copy,
 *                  broadcast, pad, select, maximum, minimum, clamp, convert
 *                  between floats, max/min reductions, sort, ...): it
 *                  creates nothing, so it inherits its operands' origin;
 *   arithmetic     any other op.  It inherits when each non-finite output
 *                  element repeats a non-finite operand element of the same
 *                  kind (-inf + x = -inf keeps a mask a mask), or when no
 *                  input could have changed that element: every operand
 *                  there is independent of the entry parameters or holds
 *                  an untainted non-finite value (-inf - -inf = NaN of a
 *                  mask with itself, the module's own constants at work).
 *                  A NaN or Inf it makes out of values the inputs chose
 *                  (log of a negative, 0 * inf where the 0 is an input's)
 *                  is created here: the value is tainted, and so is
 *                  everything it reaches.
 * For elementwise arithmetic the test is per element; for reductions,
 * dot and convolution, whose elements mix many operand elements, per kind
 * (NaN, +Inf, -Inf): an output kind no operand has was created, by the
 * inputs unless no operand depends on them.  A -inf mask through a dot
 * with weights of both signs is NaN the inputs could avoid (intervals.h
 * asks such factors to be positive), so it is flagged.
 *
 * A computation called from several sites (fusions, calls) is classified
 * per call: its parameters take the record of the operand that call site
 * passed, and nothing of one call carries into the next.
 *
 * The result for a module: NONE (outputs finite), INTENDED (non-finite
 * outputs, all from constants through carriers and inheriting arithmetic)
 * or INPUTS ("inputs produced non-finite values", with the instruction that
 * first created one).  INPUTS is never a compiler bug.
 */
#ifndef TUNE_CHECK_INTENT_H
#define TUNE_CHECK_INTENT_H

#include <stdbool.h>
#include <stdint.h>

#include "eval.h"
#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

typedef enum chk_nonfinite {
  CHK_NONFINITE_NONE = 0, /* every output element is finite */
  CHK_NONFINITE_INTENDED, /* non-finite outputs come from intentional constants */
  CHK_NONFINITE_INPUTS,   /* inputs produced non-finite values */
} chk_nonfinite;

/* "none", "intended", "inputs". */
const char *chk_nonfinite_name(chk_nonfinite k);

typedef struct chk_intent_result {
  chk_nonfinite kind;
  int64_t nonfinite;  /* non-finite elements over the output leaves */
  int64_t count;      /* float elements over the output leaves */
  char origin[128];   /* INPUTS: the instruction that created the first
                         tainted value ("" otherwise) */
} chk_intent_result;

/* Non-finite and float element counts of a value (tuples: all leaves). */
void chk_intent_count(const hlo_value *v, int64_t *nonfinite, int64_t *count);

/* Classifies the outputs `outs` (replica 0's root value) of m evaluated on
 * args.  Finite outputs cost one scan; otherwise m is evaluated once more
 * with the analysis hook, with base's replicas and numerics.  0, or -1 with
 * err when that evaluation fails or memory runs out.  `deliberate`: the
 * args' own NaN and Inf were put there on purpose (the SPECIAL input
 * profile, inputs.h), so they are sources like the module's constants, not
 * artefacts; what arithmetic creates from them is still judged as above. */
int chk_intent_classify(const hlo_module *m, int nargs, hlo_value *const *args, const chk_eval_opts *base,
                        bool deliberate, const hlo_value *outs, chk_intent_result *r, hlo_error *err);

#endif
