/* dev_whole.h — the ops the device computes from whole operand arrays:
 * gather, dynamic-slice, dynamic-update-slice, scatter, sort,
 * reduce-window (variadic or not, a simple reducer or a lane program),
 * select-and-scatter, convolution, reduce with a general or variadic
 * reducer, fft (1 to 3 dimensions), and map (whose computation is a lane
 * program, dev_lane.h).
 *
 * Their operands are first evaluated whole by the elemental evaluator
 * (dev_elemental.h materialises them); the op itself then runs with the
 * device's own lowering, tile by tile as the config cuts it (dev_stage.h),
 * each tile built in a poisoned VMEM buffer with redzones.  The lowering
 * defects of these ops (dev_defect.h) live in that lowering code and fire
 * only when ctx->defects carries them (the executor sets the bits whose
 * config-level trigger holds, and only for the fusion's hero).
 *
 * Each run function returns 0 with *out set (one reference), -1 with a
 * message in ctx->why, or 1 when the device has no lowering for this form
 * of the op (e.g. a sort comparator that is not a lane program); the
 * caller decides what to do then.
 */
#ifndef TUNE_DEV_WHOLE_H
#define TUNE_DEV_WHOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_config.h"
#include "dev_stage.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

typedef struct dev_whole_ctx {
  const dev_config *cfg; /* NULL: one tile */
  uint32_t defects;      /* bit per dev_defect */
  char *why;
  size_t why_len;
  uint64_t jitter;       /* the run's timing-jitter seed (dma-race) */
  const hlo_module *m;   /* the op's module: select-and-scatter names its
                            computations by text, looked up here; NULL
                            leaves that op unlowered */
} dev_whole_ctx;

/* The dma-race model (dev_stage.h) for an op run with ctx. */
dev_race dev_whole_race(const dev_whole_ctx *ctx);

/* How many operand fetches the device's lowering of ins makes under cfg,
 * each through the ring of cfg.buf buffers where dma-race strikes: one per
 * result tile for gather, dynamic-slice, reduce-window and the
 * collectives, one per source tile for select-and-scatter (its operand
 * halos); for dynamic-update-slice and scatter, whose result starts
 * as a tiled copy of the operand, the larger of that copy's tiles and the
 * update's tiles (or chunks of updates, for scatter): each has its own
 * ring.  0 for the ops that fetch no such boxes (sort, convolution,
 * reduce, fft, and everything elementwise). */
int64_t dev_whole_fetches(const hlo_instr *ins, const dev_config *cfg);
int64_t dev_scatter_fetches(const hlo_instr *ins, const dev_config *cfg);

#define DEV_WHOLE_UNSUPPORTED 1

/* Does the device lower op from whole operands (this module)? */
bool dev_whole_handles(hlo_opcode op);
/* Runs ins on its whole operand values ops[0..noperands). */
int dev_whole_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);

/* Element i of an integer index array, as a signed 64-bit value (an
 * unsigned value above INT64_MAX saturates: it is out of range either way). */
int64_t dev_whole_index(const hlo_value *v, int64_t i);

int dev_gather_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_dslice_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_scatter_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_sort_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_reduce_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_conv_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_window_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_selscat_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_fft_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);
int dev_map_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out);

#endif
