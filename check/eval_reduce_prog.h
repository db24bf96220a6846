/* eval_reduce_prog.h — a reducer (or mapper) computation compiled once into a
 * flat program over lanes of scalars, for the general paths of reduce,
 * reduce-window and map (eval_reduce.c).
 *
 * Why: calling a computation per element through chk_call allocates a value
 * per argument and per instruction and walks the evaluator's driver for each
 * of them; an argmax (a variadic (f32, s32) reduce with a compare/select
 * reducer) over 300k elements spent seconds in malloc.  Here the reducer's
 * instructions run as the evaluator's own elementwise kernels
 * (chk_ew_block), each over a block of lanes — one lane per output element
 * being folded — so a fold step of CHK_RPROG_LANES output elements costs
 * one kernel call per instruction.
 *
 * Exactness: every lane sees what a per-element call would: the same
 * kernels on the same operand values, each instruction's result rounded to
 * its element type and passed through its storage representation (narrow
 * floats are encoded and decoded, as storing a value does), arguments read
 * from storage the same way.  Each lane is folded in the caller's order, so
 * the order of accumulation is the reference's.  Only computations whose
 * every evaluated instruction is a parameter, a scalar constant or a
 * supported elementwise op (chk_ew_unsupported), with a root that is one of
 * them or a tuple of them, and whose parameter and result types are the
 * ones the call site passes and expects, are compiled; anything else
 * (nested calls, tuples, type mismatches) makes chk_rprog_compile return
 * NULL and the caller keeps the per-element path, errors included.  An
 * evaluation hook (eval.h) does not see the program's instructions: the
 * tolerance and intent hooks act on the data flow of the entry and its
 * fusions, never inside a reducer, and showing them every scalar step was
 * what made the per-element path allocate per element.
 */
#ifndef TUNE_CHECK_EVAL_REDUCE_PROG_H
#define TUNE_CHECK_EVAL_REDUCE_PROG_H

#include <stdbool.h>
#include <stdint.h>

#include "eval_internal.h"

/* Lanes per program run: 256 lanes of a dozen 8-byte slots stay in L1. */
#define CHK_RPROG_LANES 256

typedef struct chk_rprog chk_rprog;
typedef struct chk_rprog_lanes chk_rprog_lanes;

/* Compiles c for scalar arguments of types argt[0..nargs) and nres scalar
 * results of types rest[0..nres) (nres = 1: a non-tuple root, or a 1-tuple).
 * NULL when c does not qualify (see above) or memory runs out. */
chk_rprog *chk_rprog_compile(const chk_eval *ev, const hlo_computation *c, int nargs, const hlo_etype *argt,
                             int nres, const hlo_etype *rest);
void chk_rprog_free(chk_rprog *p);

/* Per-thread lane buffers of a program (CHK_RPROG_LANES lanes per slot). */
chk_rprog_lanes *chk_rprog_lanes_new(const chk_rprog *p);
void chk_rprog_lanes_free(chk_rprog_lanes *l);

/* Argument k of lanes [0, m): element offs[i] of the host array data (whose
 * element type is argt[k]), or, with offs NULL, the one element at data
 * in every lane. */
void chk_rprog_load(chk_rprog_lanes *l, int k, const void *data, const int64_t *offs, int m);
/* Runs the program over lanes [0, m). */
void chk_rprog_run(chk_rprog_lanes *l, int m);
/* Results 0..nres-1 become arguments 0..nres-1 (the accumulators of a fold),
 * in the lanes where keep is NULL or keep[i] is set. */
void chk_rprog_feedback(chk_rprog_lanes *l, int m, const uint8_t *keep);
/* Stores argument k (after chk_rprog_feedback: accumulator k) of lanes
 * [0, m) into element offs[i] of host array data of type argt[k]. */
void chk_rprog_store_arg(const chk_rprog_lanes *l, int k, void *data, const int64_t *offs, int m);
/* The same for result j, of type rest[j]. */
void chk_rprog_store_result(const chk_rprog_lanes *l, int j, void *data, const int64_t *offs, int m);

#endif
