/* eval_async.c — asynchronous and paired ops, evaluated as their
 * synchronous op.
 *
 * A `-start` op hands a value to its `-done` op; what happens in between
 * (a DMA, a collective on the network, a thread) changes when the result
 * exists, never what it is.  The reference therefore computes the
 * synchronous op at the start and stores it inside the start's value,
 * shaped as the start's result says, and the done op takes it out.
 * Context elements of the start's tuple (u32[]/s32[] handles, tokens)
 * carry no data and are zeros.
 *
 * Where the synchronous result sits in the start's value:
 *   async-start              ((operands...), result, context...)  slot 1
 *   all-reduce-start         result                               itself
 *   all-gather-start         result, or (operand(s), result)      itself / 1
 *   collective-permute-start (operand, result, context...)        slot 1
 *   copy-start               (destination, source, context)       slot 0
 * A done op finds the result by its own opcode and the value's shape.
 */
#include "eval_async.h"

#include <stdio.h>
#include <stdlib.h>

static bool operands_tuple_shape(const hlo_instr *ins, const hlo_shape *s) {
  if (s->type != HLO_TUPLE || s->ntuple != ins->noperands)
    return false;
  for (int k = 0; k < ins->noperands; k++)
    if (!hlo_shape_equal(&s->elems[k], &ins->operands[k]->shape, false))
      return false;
  return true;
}

/* Whether the start's value is itself the synchronous result. */
static bool result_is_whole(const hlo_instr *start) {
  const hlo_shape *s = &start->shape;
  switch (start->op) {
  case HLO_OP_ALL_REDUCE_START:
    return true;
  case HLO_OP_ALL_GATHER_START:
    /* (operand, result) for one operand, ((operands), (results)) for
     * several; a plain result otherwise. */
    if (s->type != HLO_TUPLE || s->ntuple != 2)
      return true;
    if (start->noperands == 1)
      return !hlo_shape_equal(&s->elems[0], &start->operands[0]->shape, false);
    return !operands_tuple_shape(start, &s->elems[0]);
  default:
    return false;
  }
}

static int result_slot(const hlo_instr *start) { return start->op == HLO_OP_COPY_START ? 0 : 1; }

hlo_opcode chk_async_sync_op(const hlo_instr *start) {
  switch (start->op) {
  case HLO_OP_ASYNC_START:
    return start->async_wrapped != HLO_OP_INVALID ? start->async_wrapped : HLO_OP_CALL;
  case HLO_OP_ALL_REDUCE_START: return HLO_OP_ALL_REDUCE;
  case HLO_OP_ALL_GATHER_START: return HLO_OP_ALL_GATHER;
  case HLO_OP_COLLECTIVE_PERMUTE_START: return HLO_OP_COLLECTIVE_PERMUTE;
  case HLO_OP_COPY_START: return HLO_OP_COPY;
  default: return HLO_OP_INVALID;
  }
}

const hlo_shape *chk_async_result_shape(const hlo_instr *start) {
  if (result_is_whole(start))
    return &start->shape;
  int slot = result_slot(start);
  if (start->shape.type != HLO_TUPLE || start->shape.ntuple <= slot)
    return NULL;
  return &start->shape.elems[slot];
}

hlo_value *chk_async_pack(const hlo_instr *start, hlo_value *const *operands, hlo_value *result,
                          char *why, size_t whylen) {
  if (result_is_whole(start))
    return hlo_value_ref(result);
  const hlo_shape *s = &start->shape;
  int slot = result_slot(start);
  hlo_value **e = calloc((size_t)s->ntuple, sizeof *e);
  if (!e) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  int rc = 0;
  for (int k = 0; k < s->ntuple && rc == 0; k++) {
    const hlo_shape *es = &s->elems[k];
    if (k == slot) {
      e[k] = hlo_value_ref(result);
    } else if (k == 1 - slot && start->noperands == 1 &&
               hlo_shape_equal(es, &start->operands[0]->shape, false)) {
      e[k] = hlo_value_ref(operands[0]);
    } else if (k == 1 - slot && operands_tuple_shape(start, es)) {
      hlo_value **o = malloc(sizeof *o * (size_t)(start->noperands ? start->noperands : 1));
      if (!o) {
        rc = -1;
        break;
      }
      for (int j = 0; j < start->noperands; j++)
        o[j] = hlo_value_ref(operands[j]);
      if (!(e[k] = hlo_value_tuple(start->noperands, o))) {
        for (int j = 0; j < start->noperands; j++)
          hlo_value_unref(o[j]);
        rc = -1;
      }
      free(o);
    } else if (!(e[k] = hlo_value_from_shape(es))) {
      rc = -1;
    }
  }
  hlo_value *t = rc == 0 ? hlo_value_tuple(s->ntuple, e) : NULL;
  if (!t) {
    for (int k = 0; k < s->ntuple; k++)
      hlo_value_unref(e[k]);
    snprintf(why, whylen, "out of memory");
  }
  free(e);
  return t;
}

hlo_value *chk_async_unpack(const hlo_instr *done, const hlo_value *start_value) {
  /* Decided by the done's opcode and the value's shape, not by looking at
   * the start: a unit cut out of a module may receive the start's value
   * as a parameter. */
  const hlo_shape *s = &done->shape;
  if (hlo_value_matches(start_value, s) && done->op != HLO_OP_ASYNC_DONE && done->op != HLO_OP_COPY_DONE &&
      done->op != HLO_OP_COLLECTIVE_PERMUTE_DONE)
    return hlo_value_ref((hlo_value *)start_value); /* all-reduce-done, all-gather-done of a plain result */
  int slot = done->op == HLO_OP_COPY_DONE ? 0 : 1;
  if (start_value->type != HLO_TUPLE || start_value->ntuple <= slot ||
      !hlo_value_matches(start_value->elems[slot], s))
    return NULL;
  return hlo_value_ref(start_value->elems[slot]);
}
