/* eval_fuse.h — evaluating chains of elementwise instructions block by block.
 *
 * Why: an elementwise chain such as convert -> multiply -> add -> tanh ->
 * convert over 16M elements evaluated op by op streams every intermediate
 * through main memory.  Evaluated block by block (BLK elements of every
 * instruction of the chain before moving on), intermediates stay in L1/L2 and
 * only the chain's inputs and needed outputs touch memory.
 *
 * Exactness: the block path runs the very same kernels as chk_op_elementwise
 * (which is itself a one-instruction block program), and every intermediate
 * is rounded to its own element type after each op, so results are bitwise
 * identical to op-by-op evaluation whatever the block size or thread count.
 *
 * ---- Part 1: the plan, for the driver (eval.c) ---------------------------
 *
 * A group is a set of instructions of one computation evaluated together:
 *   - its root is an elementwise instruction (chk_op_elementwise's ops, minus
 *     bitcast-convert) with at least CHK_FUSE_MIN_ELEMENTS elements;
 *   - its other members are elementwise instructions with exactly the root's
 *     dimensions (element types may differ: compare, convert), and
 *     broadcasts of a one-element operand ("splats"), which are folded: they
 *     are never materialised;
 *   - a member whose value is also read outside the group is materialised
 *     too, provided every such outside reader comes after the root in
 *     instruction order (else it is simply not a member);
 *   - everything else a member reads is an input: an array with the root's
 *     dimensions, or a one-element array that is splatted.
 *
 * The driver walks c->instrs in order (operands are defined before use; the
 * verifier guarantees it) and, with a plan p:
 *
 *   1. computes last uses with reads happening at the evaluation position:
 *        at = chk_fuse_eval_pos(p, reader)   (instead of reader's index)
 *   2. at instruction i:
 *        if (chk_fuse_eval_pos(p, ins) != i) continue;   member of a later
 *            group: nothing to do now, and none of its operands is released
 *        if (chk_fuse_is_root(p, ins))
 *            rc = chk_fuse_eval_group(ev, p, ins, nrep, vals);
 *            and then releases the values listed by chk_fuse_group_inputs()
 *            whose last use is i (instead of ins's operands);
 *        else  evaluate ins as usual.
 *
 * Plans are immutable once built and can be shared by threads.
 */
#ifndef TUNE_CHECK_EVAL_FUSE_H
#define TUNE_CHECK_EVAL_FUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "eval_internal.h"

/* Elements per block: 2048 f32 (8 KiB) per live intermediate keeps a chain
 * of a dozen ops inside L2.  Whole blocks are what threads share out. */
#define CHK_FUSE_BLOCK 2048
/* Groups are formed only for roots at least this large: below it everything
 * already fits in cache and op by op is as fast. */
#define CHK_FUSE_MIN_ELEMENTS 4096
/* Element count from which a block program runs on several threads. */
#define CHK_FUSE_PARALLEL_MIN (1 << 16)

typedef struct chk_fuse_plan chk_fuse_plan;

/* Plans the groups of c.  Returns NULL when c has no group worth forming (the
 * common case for small computations: cheap, no allocation) or when memory
 * runs out; either way the driver then evaluates op by op. */
chk_fuse_plan *chk_fuse_plan_build(const hlo_computation *c);
void chk_fuse_plan_free(chk_fuse_plan *p); /* NULL is fine */

/* Index in c->instrs of the instruction at whose turn ins's value is
 * produced: its group's root for a group member, else its own index. */
int chk_fuse_eval_pos(const chk_fuse_plan *p, const hlo_instr *ins);
/* Is ins the root of a group? */
bool chk_fuse_is_root(const chk_fuse_plan *p, const hlo_instr *ins);
/* The number of groups, and the members of each (root last) — for tests and
 * diagnostics. */
int chk_fuse_group_count(const chk_fuse_plan *p);
int chk_fuse_group_members(const chk_fuse_plan *p, int g, const hlo_instr *const **members);
/* The instructions whose values group `root` reads (its inputs); *inputs is
 * set to an array owned by the plan.  Returns the count, 0 if root is not a
 * group root. */
int chk_fuse_group_inputs(const chk_fuse_plan *p, const hlo_instr *root, const hlo_instr *const **inputs);

/* Evaluates the group whose root is `root` for nrep replicas.  vals is the
 * driver's array [instr index][replica] (row stride nrep); inputs are read
 * from it and left alone, and on success vals[root] and vals[m] for every
 * materialised member m receive one new reference per replica.  Returns 0,
 * or -1 after chk_fail (nothing is stored then). */
int chk_fuse_eval_group(chk_eval *ev, const chk_fuse_plan *p, const hlo_instr *root, int nrep,
                        hlo_value **vals);

/* ---- Part 2: block programs, shared by eval_elementwise.c and eval_fuse.c --
 *
 * A block program is a topologically ordered list of nodes (instructions)
 * over slots: slots 0..nin-1 hold the inputs, slot nin+j node j's result.
 * Per block every slot is a buffer of n <= CHK_FUSE_BLOCK elements in the
 * *compute representation* of its element type (chk_ew_compute_type):
 *   f16 bf16 f8* f4    -> float (exact values of the narrow type)
 *   s1 s2 s4 / u1 u2 u4 -> int8_t / uint8_t (sign-/zero-extended, as stored)
 *   everything else     -> as stored (pred uint8_t 0/1, c64 float[2], ...)
 * so kernels come in one version per compute type only. */
typedef struct chk_fuse_group {
  const hlo_instr *root;
  int nin;
  const hlo_instr *const *in;   /* instruction (shape, type) of each input */
  int nnode;
  const hlo_instr *const *node; /* nodes in evaluation order, root last */
  const int *argofs;            /* node j's operand k is slot arg[argofs[j] + k] */
  const int *arg;
  const unsigned char *out;     /* node j's value is materialised */
} chk_fuse_group;

/* Runs a block program: inv[k] is the value of input k (same dims as the
 * root, or one element to splat); outv[j] receives a new value for every
 * node with out[j] set (NULL for the others).  0, or -1 after chk_fail with
 * outv all NULL.  Nodes must have passed chk_ew_unsupported(). */
int chk_fuse_run(chk_eval *ev, const chk_fuse_group *g, hlo_value *const *inv, hlo_value **outv);

/* The element type of the compute representation of t (see above). */
hlo_etype chk_ew_compute_type(hlo_etype t);
/* NULL when ins (an elementwise op with its operand and result types) can
 * run as a block node; else why not, as a message for chk_fail. */
const char *chk_ew_unsupported(const hlo_instr *ins);
/* Computes node ins over n <= CHK_FUSE_BLOCK elements: in[k] is operand k in
 * compute representation, out receives the result in compute representation,
 * already rounded (narrow floats) or wrapped (sub-byte integers) to the
 * result type.  Never fails on a node that passed chk_ew_unsupported(). */
/* With emulate set, f32 arithmetic (and bf16/f16, which compute in f32) goes
 * through the device's own numerics (hlo_numerics.h: approximated
 * transcendentals, flushed subnormals), for `--emulate-device`. */
void chk_ew_block(const hlo_instr *ins, const void *const *in, void *out, int64_t n, int emulate);

/* Fast paths of the block executor (eval_elementwise.c).  chk_ew_splat_ok:
 * may node ins read operand k as one broadcast value (nan: that value is a
 * NaN)?  chk_ew_block_splat computes such a node with in[k] pointing at the
 * single value.  chk_ew_in_place_ok: may ins write its result over one of
 * its operands' buffers? */
bool chk_ew_splat_ok(const hlo_instr *ins, int k, bool nan);
void chk_ew_block_splat(const hlo_instr *ins, const void *const *in, int k, void *out, int64_t n);
bool chk_ew_in_place_ok(const hlo_instr *ins);

#endif
