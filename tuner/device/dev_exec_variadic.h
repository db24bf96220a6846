/* dev_exec_variadic.h — variadic reductions (an argmax's (value, index)
 * reduce) on the device's chunked accumulators.
 *
 * A variadic reduce folds N operands together: its reducer takes N
 * accumulators and N elements and returns N new accumulators.  The executor
 * (dev_acc.c, dev_fold_reduce.c) carries the N accumulators of an output
 * element side by side in one accumulator slot and folds them chunk by
 * chunk like a single-operand reduce; this file says which variadic
 * reduces it runs that way and applies their reducer, compiled once into a
 * lane program of the device's own (dev_lane.h: the device's elementwise
 * lowering, not the reference's kernels).
 *
 * A fusion qualifies (dev_vred_native) when its hero is a reduce with N >= 2
 * operands of one shape and N scalar inits, over at least one reduced
 * element, whose reducer compiles into a lane program (dev_lane.h says
 * what one may hold), and whose results are read only by get-tuple-elements that are
 * the fusion's root or leaves of its root tuple, each with the fusion's
 * output dims: the epilogue is then a plain store of accumulators.  Other
 * variadic reduces stay materialised whole by the reference.
 */
#ifndef TUNE_DEV_EXEC_VARIADIC_H
#define TUNE_DEV_EXEC_VARIADIC_H

#include <stdbool.h>

#include "dev_elemental.h"
#include "dev_fusion.h"

#define DEV_VRED_MAX 8 /* operands of a variadic reduce the executor chunks */

bool dev_vred_native(const dev_fusion *f);

typedef struct dev_vred dev_vred;

/* The reducer of f's hero; NULL when !dev_vred_native(f) or out of memory. */
dev_vred *dev_vred_new(const dev_fusion *f);
void dev_vred_free(dev_vred *v);

/* N, and the element type of operand (and result) j. */
int dev_vred_count(const dev_vred *v);
hlo_etype dev_vred_type(const dev_vred *v, int j);

/* For i in [0, m): the N slots at acc[i] become the reducer's results for
 * accumulators acc[i][0..N) and elements x[i * N + 0 .. N) (the reducer's
 * first N parameters are the accumulators, as the reference calls it). */
void dev_vred_step(dev_vred *v, int64_t m, dev_slot *const *acc, const dev_slot *x);

#endif
