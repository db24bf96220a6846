/* isolate_chain.h — the `propagated` class of isolation (issue 16 item 2):
 * every fusion is right on its own inputs, yet the program's output is
 * wrong, because legitimate rounding differences compound along the
 * program (a cancellation, a large gain after them).
 *
 * Macro isolation feeds each unit the reference's operands, which is what
 * keeps an innocent unit from looking guilty, and also what hides this
 * case.  So the module is evaluated once more with every isolated unit's
 * value replaced by its fused kernel's output on the operands that reach
 * it in that run (the device's program, with the reference only as the
 * glue between units), and its output is compared with the reference's.
 * The comparison uses the loosest tolerance of any unit: an error beyond
 * it cannot be one unit's legitimate noise.
 *
 * Per unit (its first execution): in_rel, the largest relative error of
 * its operands against the reference's, and out_rel, of its output.  The
 * amplifier is the unit with the largest out_rel / in_rel among those with
 * in_rel > 0 and out_rel > in_rel; the origin, the first unit in program
 * order whose operands are exact and whose output is not.
 */
#ifndef TUNE_ISOLATE_CHAIN_H
#define TUNE_ISOLATE_CHAIN_H

#include <stdbool.h>

#include "run/capture.h"
#include "check/compare.h"
#include "isolate.h"
#include "run/units.h"



/* Would tn_iso_chain_run find the device's program to be the
 * reference's without running it (isolate_chain.c's chain_is_reference)?
 * Then it reads no unit's tolerance. */
bool tn_iso_chain_is_reference(const hlo_module *m, const tn_units *u, const tn_iso_opts *o, const tn_iso_result *r);

/* Runs the device's program of m (units u, isolated as r->v with their
 * configs) on the same entry arguments as the capture (o's seed and
 * profile) and fills r->program and each unit's chain_in_rel and
 * chain_out_rel; r->program.done is false with the reason in its note
 * when it cannot be run. */
void tn_iso_chain_run(const hlo_module *m, const tn_units *u, const tn_iso_opts *o, tn_iso_result *r);

#endif
