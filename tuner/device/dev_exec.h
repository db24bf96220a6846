/* dev_exec.h — the functional executor of a lowered schedule, and the
 * dimension-follow analysis that lowering and execution share.
 *
 * A run (dev_exec_run) stages every kernel parameter in an HBM buffer with
 * redzones (dev_hbm.h), fills outputs and scratch with poison, then walks the
 * grid in cfg.order (outermost loop first).  Each grid step:
 *   1. dma_issue / dma_wait: every non-resident parameter window whose block
 *      changed is copied from HBM into VMEM ring slot (fetch % buf); the part
 *      of a ragged block outside the array is filled with poison.  Transfers
 *      complete in an order driven by the run's jitter seed (the model a
 *      DMA-race defect needs); a clean schedule waits for each transfer
 *      before computing, so the result never depends on the seed;
 *   2. acc_enter: on the first visit of an output window the accumulators
 *      are initialised (acc_init_window); on a revisit (k loop outside an
 *      output loop) they are reloaded from their HBM spill;
 *   3. compute_chunk: the hero's reduction chunk is folded into the pack
 *      accumulators (element r of the reduction goes to accumulator r mod P;
 *      with split-reduction each chunk folds into a fresh partial that is
 *      combined in chunk order at the end);
 *   4. on the last chunk of the window: acc_finalize combines the pack
 *      accumulators (0, 1, ..., P-1 in order), the epilogue (the rest of the
 *      fusion) is evaluated on the output tile, and store_tile writes it back
 *      to HBM, discarding the ragged part; otherwise, when the next step
 *      leaves the window, acc_spill saves the accumulators.
 * After the grid, outputs are scanned: a poisoned element is an
 * "uninitialized read", a damaged redzone a "redzone write", and a step
 * budget of 64x the expected steps turns a schedule that does not terminate
 * into "hang".
 *
 * A variadic reduce (an argmax) whose reducer compiles into a lane program is
 * chunked the same way, its N accumulators carried together in each slot
 * (dev_exec_variadic.h).
 *
 * Fusions without a hero (loop fusions) have one chunk per tile; heroes the
 * device does not chunk (sort, scatter, gather, convolution, reduce-window,
 * dynamic-(update-)slice, collectives, other reduces with a general
 * reducer) are materialised whole once per run and read by the tiles like
 * a parameter.
 */
#ifndef TUNE_DEV_EXEC_H
#define TUNE_DEV_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "dev_backend.h"
#include "dev_defect.h"
#include "dev_lower.h"
#include "hlo/hlo_value.h"

/* ---- dimension-follow analysis ------------------------------------------
 * The executor's map: for every instruction of the kernel and every
 * dimension of its (first leaf) shape, the output dimension whose tile
 * index its index equals (0..rank-1), DEV_FOLLOW_K when it is the reduced
 * (or contracted) dimension of a hero that has exactly one (with several,
 * they follow nothing), or DEV_FOLLOW_NONE when it follows nothing the
 * executor can index by: no single output dimension (a run of merged ones,
 * through a reshape), a padded dimension, or different things along
 * different paths to the root.
 *
 * It is dev_lower.c's follow analysis without its pad mapping: the root
 * (each leaf of a tuple root that has the output's dims) follows the
 * output dims one to one, and the instructions are walked from the root
 * back, each giving its operands a mapping through its kind: elementwise
 * ops (and an all-reduce, a one-operand collective-permute or
 * collective-broadcast) keep it; broadcast, transpose, a reduce with a
 * simple reducer (kept dims), dot (batch and free dims), concatenate (all
 * but the concatenated dim)
 * and the unpadded dims of a pad carry it to their operand dims; a reshape,
 * or a bitcast between row-major layouts, carries it through its factor
 * groups (dev_layout.h); a variadic reduce hero the executor chunks
 * (dev_exec_variadic.h) takes it from its get-tuple-elements and gives it
 * to each of its operands.  Every other op (the ones computed from whole
 * operands, dev_whole.h) makes its operands follow nothing.
 *
 * On a prepared fusion (f->lower set) the map was computed once with the
 * plan (dev_lower_plan_new) and this returns a copy of it; otherwise it is
 * computed afresh.  Either way a malloc'd array the caller frees, indexed
 * [instruction index * HLO_MAX_RANK + dim], or NULL when out of memory. */
int *dev_follow_map(const dev_fusion *f);

/* ---- test hooks ------------------------------------------------------------ */
typedef struct dev_exec_hooks {
  int64_t store_shift;   /* added to the flat offset of every output store
                            (a corrupted schedule writing past the end) */
  int64_t skip_tile;     /* output tile index never stored, -1 for none */
  int64_t extra_steps;   /* pretend the schedule has this many more steps
                            than it has (a loop that does not terminate) */
  struct dev_probe *probe; /* dev_probe.h: instrument the run (read-only) */
} dev_exec_hooks;

void dev_exec_hooks_none(dev_exec_hooks *h);

/* Runs the schedule on the kernel's arguments (one per kernel parameter,
 * in parameter order) and fills out: DEV_OK with out->out the kernel root's
 * value (a fresh value per call), or DEV_RUNTIME_ERROR with the message.
 * A tuple root, nested or not, has one output buffer per array leaf (depth
 * first): the leaves of tuple instructions are evaluated like any output,
 * those of a tuple-shaped op (a variadic sort, a while) are stored whole
 * from its materialised value; out->out is nested as the root's shape.
 * cc may be NULL (a clean compiler); hooks may be NULL. */
void dev_exec_run(const dev_schedule *s, const dev_compiler *cc, hlo_value *const *args, int nargs,
                  uint64_t jitter_seed, const dev_exec_hooks *hooks, dev_run *out);

#endif
