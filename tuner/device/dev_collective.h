/* dev_collective.h — the device's collectives: all-reduce, all-gather,
 * reduce-scatter, all-to-all and collective-permute, computed for every
 * simulated replica at once by the device's own code.
 *
 * The executor evaluates a kernel that holds a collective for all replicas
 * in lockstep (dev_materialize.c): each replica's operands are its own whole
 * values, computed with replica-id giving that replica's number, and the
 * collective hands each replica its result.  Replica groups follow
 * replica_groups (an empty list is one group of every replica); partitions
 * are not simulated, so members are replica ids.
 *
 * Lowering: every result array of every replica is built tile by tile as
 * the config cuts it (dev_stage.h), each tile in a poisoned VMEM buffer
 * with redzones that must come back intact and fully written.  A
 * reduction combines the group's members element by element in the
 * group's order, each step rounded to the element type (a simple reducer,
 * dev_elem_reduce_step, or a lane program of the device's own, dev_lane.h;
 * on complex values a sum, part by part, or a complex lane program,
 * dev_lane_compile_complex).
 * That order is the one the checker's tolerance can stand behind: it
 * measures no spread for a collective's order, so a ring order, which
 * would start each shard's sum at a different member, is not modelled.
 *
 * Forms the device does not lower (a reducer that is not a lane program,
 * complex or not, the multi-operand collective-permute) return
 * DEV_WHOLE_UNSUPPORTED, and the caller decides what to do.
 */
#ifndef TUNE_DEV_COLLECTIVE_H
#define TUNE_DEV_COLLECTIVE_H

#include <stdbool.h>

#include "dev_whole.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

/* Is op a collective, whose operands differ between replicas? */
bool dev_collective_op(hlo_opcode op);

/* Which instructions of kernel c may differ between replicas: replica-id,
 * the collectives, and everything that reads them (one flag per
 * instruction index, calloc'd; NULL when out of memory).  The lockstep run
 * computes the others once for all replicas. */
bool *dev_collective_varying(const hlo_computation *c);

/* The most the lockstep run of kernel c for `replicas` replicas holds for
 * its collectives: per collective, each distinct operand value (one per
 * replica where it varies, else one) and each distinct result (one per
 * group for an all-reduce or all-gather, else one per replica).  -1 when
 * out of memory. */
int64_t dev_collective_lockstep_bytes(const hlo_computation *c, int replicas);

/* Does the device lower this form of collective ins (decided from its
 * shapes and computations alone)? */
bool dev_collective_lowers(const hlo_instr *ins);

/* Runs collective ins for nrep replicas.  ops[r * ins->noperands + j] is
 * replica r's operand j (a whole value; a single tuple operand stands for
 * its elements).  On 0, outs[r] holds replica r's result (one reference
 * each); -1 with a message in ctx->why; DEV_WHOLE_UNSUPPORTED when the
 * device has no lowering for this form.  Of ctx->defects only dma-race
 * lives here (dev_stage.h): a result tile may be computed on the operand
 * data of the tile buf further on, decided by ctx->jitter. */
int dev_collective_run(const hlo_instr *ins, int nrep, hlo_value *const *ops, const dev_whole_ctx *ctx,
                       hlo_value **outs);

#endif
