/* dev_cost.h — the deterministic cost model: simulated time of one run of a
 * schedule on a machine.  The formula is documented in dev_cost.c and
 * unit-tested on hand-computed cases.
 *
 * What it reads of the schedule: steps, cfg.buf, cfg.tile (MXU fill),
 * dma_bytes, dma_count, vpu_ops, eup_ops, and mxu_flops counted in bf16 MXU
 * passes (an f32 dot's flops times 1, 3 or 6 by its precision, as dev_lower
 * counts them), and f->hero's operand type (int8 MXU mode). */
#ifndef TUNE_DEV_COST_H
#define TUNE_DEV_COST_H

#include "dev_lower.h"
#include "dev_machine.h"

typedef struct dev_cost {
  double total_s;      /* simulated seconds */
  double dma_s;        /* transfer time, bytes / bandwidth + latencies */
  double compute_s;    /* max of MXU, VPU, EUP time */
  double overhead_s;   /* steps * per-step overhead */
  double exposed_dma_s;/* DMA time not hidden behind compute */
} dev_cost;

void dev_cost_estimate(const dev_schedule *s, const dev_machine *m, dev_cost *out);

#endif
