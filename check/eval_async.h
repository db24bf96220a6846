/* eval_async.h — the evaluator's view of asynchronous and paired ops
 * (async-start/update/done, all-reduce-, all-gather-, collective-permute-
 * and copy-start/done): each is its synchronous op, whose result the start
 * carries to the done.  Internal to the evaluator (eval.c). */
#ifndef TUNE_CHECK_EVAL_ASYNC_H
#define TUNE_CHECK_EVAL_ASYNC_H

#include <stddef.h>

#include "eval_internal.h"

/* The synchronous op a start computes: the wrapped op for the `X-start`
 * sugar, call for async-start with calls=, all-reduce for all-reduce-start
 * and so on; HLO_OP_INVALID when start is not a start op. */
hlo_opcode chk_async_sync_op(const hlo_instr *start);

/* The shape of the synchronous result inside the start's shape; NULL when
 * the start's shape has no place for it. */
const hlo_shape *chk_async_result_shape(const hlo_instr *start);

/* The start's value: result (one reference taken) and the operands placed
 * where the start's shape has them, context elements zero.  NULL with why
 * on failure. */
hlo_value *chk_async_pack(const hlo_instr *start, hlo_value *const *operands, hlo_value *result,
                          char *why, size_t whylen);

/* The done's value (one new reference) taken from its start's value; NULL
 * when that value has no element of the done's shape where its opcode
 * says. */
hlo_value *chk_async_unpack(const hlo_instr *done, const hlo_value *start_value);


#endif
