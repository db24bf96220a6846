/* dev_exec_fold.h — the executor's f32 reduction folds: many output
 * elements side by side, each folded strictly in its reduction order.
 *
 * A reduction chunk folds one line of the reduce operand per output element
 * (region element).  One running f32 sum waits ~4 cycles on each add, so
 * the lines are folded together: 8 scalar chains, or, when the lines are
 * contiguous and equally spaced (rows of a VMEM block), 8 or 16 lines in
 * vector lanes after an in-register 8x8 transpose.  Either way line q does
 * exactly acc[q] = op(acc[q], x_q[0]), op(..., x_q[1]), ... in order, so the
 * result is the scalar loop's, bit for bit.
 *
 * Semantics of op (dev_elem_reduce_step's for f32): add and multiply with
 * the accumulator as first operand — a NaN accumulator stays that NaN,
 * quieted, whatever the element (what x86 gives for acc + x; written out
 * because a compiler may put either operand of a commutative op first,
 * which differs when both are NaN); maximum/minimum return the NaN operand
 * (the accumulator first), else the greater (smaller) one, the accumulator
 * on ties.
 */
#ifndef TUNE_DEV_EXEC_FOLD_H
#define TUNE_DEV_EXEC_FOLD_H

#include <stdint.h>

#include "dev_elemental.h"
#include "hlo/hlo.h"

/* One step, as the folds below do it; op is add, multiply, maximum or
 * minimum. */
float dev_fold_f32_step(hlo_opcode op, float acc, float x);

/* Lines q = 0..m-1 start at x + q * L and are contiguous: acc[q] takes
 * x[q * L + i] for i = 0..len-1. */
void dev_fold_f32_rows(hlo_opcode op, float *acc, int m, const float *x, int64_t L, int64_t len);

/* m <= 8 lines starting at x + base[q], elements s apart. */
void dev_fold_f32_lines(hlo_opcode op, float *acc, int m, const float *x, const int64_t *base, int64_t s,
                        int64_t len);

/* The same over value slots holding f32 values (an evaluated box). */
void dev_fold_f32_slot_lines(hlo_opcode op, float *acc, int m, const dev_slot *x, const int64_t *base, int64_t s,
                             int64_t len);

#endif
