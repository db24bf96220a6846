/* dev_lane.h — the device's lane programs: scalar computations that an op
 * calls once per element or per comparison (sort comparators, scatter
 * combiners), compiled once per run into a flat list of steps over value
 * registers and run with the device's own elementwise lowering
 * (dev_elem_scalar_op), never with the reference evaluator.
 *
 * A computation qualifies when its parameters are scalars, its root is a
 * scalar or a tuple of scalars, and everything in between has a lane
 * form: scalar constants (and small constant arrays), the elementwise ops
 * the device lowers (dev_elem_classify gives DEV_EK_ELEMENTWISE), tuple
 * and get-tuple-element, call and fusion (inlined, their parameters bound
 * to the caller's values), broadcast, reshape, a bitcast of one element,
 * reduce (its reducer inlined per element, folded in row-major order),
 * and conditional (a branch on its pred or s32 selector, HLO semantics:
 * true_computation on true, the last branch for an index out of range).
 * Arrays inside are kept as one register per element, at most
 * DEV_LANE_MAX_ELEMS of them per value; calls nest at most
 * DEV_LANE_MAX_DEPTH deep; the inlined program holds at most
 * DEV_LANE_MAX_STEPS steps and DEV_LANE_MAX_INLINED instructions, every
 * inlined copy counted.  Every value is computed by an elementwise
 * step through dev_elem_scalar_op; the rest only moves values.  Anything
 * else (complex numbers, but see dev_lane_compile_complex; while loops,
 * an op with no lane form, a limit exceeded) is refused at compile time with the reason, and the op that
 * wanted it is not lowered by the device.
 */
#ifndef TUNE_DEV_LANE_H
#define TUNE_DEV_LANE_H

#include <stdbool.h>
#include <stddef.h>

#include "dev_elemental.h"
#include "hlo/hlo.h"

typedef struct dev_lane dev_lane;

/* NULL with why when c does not qualify (or out of memory). */
dev_lane *dev_lane_compile(const hlo_computation *c, char *why, size_t why_len);
void dev_lane_free(dev_lane *p);

/* dev_lane_compile, and complex values (c64, c128) are held too, as pairs
 * of f32 / f64 parts: a complex parameter takes two argument slots and a
 * complex result two result slots, its real part first (so nparams and
 * nresults count slots).  The complex ops with a lane form are add,
 * subtract, multiply (XLA's (ac - bd) + (ad + bc)i, each part op rounded),
 * negate, real, imag, complex and copy, run as real steps through
 * dev_elem_scalar_op; any other complex op is refused. */
dev_lane *dev_lane_compile_complex(const hlo_computation *c, char *why, size_t why_len);

/* Number of parameters the program reads, and of results it writes (the
 * tuple root's elements, else 1). */
int dev_lane_nparams(const dev_lane *p);
int dev_lane_nresults(const dev_lane *p);

/* Runs p on args[0..nparams) into res[0..nresults); res may be args (a
 * fold's accumulators).  Not reentrant: the registers live in p. */
void dev_lane_run(dev_lane *p, const dev_slot *args, dev_slot *res);

/* Whether p is a single compare of two of its parameters and returns its
 * result (a sort's usual comparator): then *cmp is that compare and *a, *b
 * the parameter numbers of its left and right operands.  Running p is then
 * dev_elem_scalar_op(*cmp, {args[*a], args[*b]}). */
bool dev_lane_single_compare(const dev_lane *p, const hlo_instr **cmp, int *a, int *b);

/* Whether p, of 2n parameters and n results, computes each result j as one
 * elementwise op of parameters j and n + j, in that order, and nothing else
 * (a variadic reducer that folds each operand on its own, as the max and
 * min of a running range): then ops[j] is that op's instruction, and
 * running p is res[j] = dev_elem_scalar_op(ops[j], {args[j], args[n + j]})
 * for every j. */
bool dev_lane_componentwise(const dev_lane *p, int n, const hlo_instr **ops);

#endif
