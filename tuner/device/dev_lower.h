/* dev_lower.h — lowering a fusion + config to a tiled schedule, with the
 * compile-time legality checks of a real TPU-like compiler.
 *
 * The grid tiles the fusion's output (dev_fusion.out) with cfg.tile and
 * chunks its reduction with cfg.k; loops nest in cfg.order.  Every kernel
 * parameter gets a window: the block of it that one grid step needs, staged
 * through a ring of cfg.buf VMEM buffers.  A parameter dimension "follows"
 * an output dimension (its block is that tile, or when it reaches the
 * output through a pad's padding the rows the tile reads through the pad),
 * a run of output dimensions that a reshape merges into it (its block is
 * the run of the merged dimension the tile covers), the reduction (its
 * block is the k chunk, or through a pad's padding the rows the chunk
 * reads through the pad), or nothing (its block is the whole dimension).
 *
 * Reshapes (and bitcasts between row-major layouts) are followed through
 * their factor groups (dev_layout.h): [768,96,320] -> [73728,320] feeding
 * a dot whose result a bitcast splits back into [768,96,448] has the dot's
 * rows follow output dims 0 and 1 merged, and the parameter's dims 0 and 1
 * follow output dims 0 and 1 themselves.  A tile covers one contiguous run
 * of a merged dimension only when, across the merged output dims, the
 * tiles are 1 before some dim and whole after it; any other tile would
 * need a block that is not a box of the merged array, and is refused.
 *
 * Legality (DESIGN.md §4): the last two dimensions of every block are
 * multiples of (sublanes, lanes) or equal the array's dimension, with 16
 * sublanes for 16-bit and 32 for 8-bit types; a tile is one contiguous run
 * of every merged dimension a window or the hero follows; and
 * sum(block_bytes * buf) + output block + scratch <= VMEM.
 */
#ifndef TUNE_DEV_LOWER_H
#define TUNE_DEV_LOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_config.h"
#include "dev_fusion.h"
#include "dev_machine.h"
#include "hlo/hlo_value.h" /* HLO_MAX_RANK */

#define DEV_FOLLOW_NONE (-1) /* block spans the whole dimension */
#define DEV_FOLLOW_K (-2)    /* block is the k chunk */

/* How a window dimension read through a pad maps to the output dimension
 * it follows (dev_window.padded): index i of the parameter lands on output
 * position at + i * step, and only indices in [first, end) reach the
 * output at all (the others are cropped by negative padding).  A padded
 * dimension with low padding lo and interior padding n maps operand index i
 * to lo + i * (n + 1); pads in a chain compose. */
typedef struct dev_pad_map {
  int64_t at, step;                 /* output position of index i */
  int64_t first, end;               /* indices that reach the output */
} dev_pad_map;

typedef struct dev_window {
  const hlo_instr *param;           /* the kernel parameter */
  int rank;
  int64_t dims[DEV_MAX_RANK];       /* the parameter's dims */
  int64_t block[DEV_MAX_RANK];      /* block shape in elements */
  int follows[DEV_MAX_RANK];        /* output dim, DEV_FOLLOW_K or DEV_FOLLOW_NONE */
  int merged[DEV_MAX_RANK];         /* with follows[d] >= 0: the output dims
                                       from follows[d] on that a reshape
                                       merges into d (1: follows[d] alone);
                                       the block is then the run of d that
                                       the tile covers, at most the product
                                       of their tiles */
  /* A dimension that follows output dimension follows[d] through a pad
   * with padding along it: its block is not the tile but the rows the tile
   * reads through the pad's inverse map (dev_pad_rows), a box whose origin
   * moves with the tile by whatever the padding makes it, fetched per tile
   * and not at all for a tile made only of padding.  block[d] is then the
   * largest such box, rounded up to the layout's multiple (or the whole
   * dimension).  A padded dimension that follows the reduction is the same
   * with the k chunk for the tile. */
  bool padded[DEV_MAX_RANK];
  dev_pad_map pad[DEV_MAX_RANK];    /* where padded[d] */
  int64_t block_bytes;
  bool resident;                    /* follows nothing: fetched once */
  bool in_hbm;                      /* resident and read only by ops computed
                                       from whole arrays, whose lowering stages
                                       tiles itself: not counted in VMEM */
} dev_window;

typedef struct dev_schedule {
  const dev_fusion *f;
  dev_config cfg;
  int64_t tiles[DEV_MAX_RANK];      /* tiles per output dim: ceil(dim / tile) */
  int64_t nk;                       /* k steps: ceil(k_total / k), 1 when k = 0 */
  int64_t steps;                    /* grid steps: prod(tiles) * nk */
  int nwin;
  dev_window *wins;                 /* one per kernel parameter (malloc'd) */
  int64_t out_block_bytes;
  int64_t scratch_bytes;            /* accumulators (pack of them) */
  int64_t vmem_bytes;               /* what the legality check compared */
  int64_t dma_bytes;                /* HBM<->VMEM bytes over the whole run */
  int64_t dma_count;                /* DMA transfers over the whole run */
  int64_t mxu_flops, vpu_ops, eup_ops; /* work over the whole run */
  bool ragged;                      /* some tile or chunk does not divide */
  /* The hero's result dims (dev_hero_box): what each follows, as the
   * windows' analysis has it except that a dim reaching the output through
   * padding follows nothing (the executor computes the hero whole along
   * it).  hero_rank 0 without a reduction hero. */
  int hero_rank;
  int64_t hero_dims[HLO_MAX_RANK];
  int hero_follows[HLO_MAX_RANK];   /* output dim or DEV_FOLLOW_NONE */
  int hero_merged[HLO_MAX_RANK];    /* as dev_window.merged */
} dev_schedule;

/* Which instructions of c (by index) the device evaluates whole, never
 * tile by tile: those read only by ops it computes from whole arrays, or
 * by such instructions (a parameter among them stays in HBM).  A malloc'd
 * array of c->ninstrs flags, or NULL when out of memory. */
bool *dev_evaluated_whole(const hlo_computation *c);

/* The analyses of f's kernel that dev_lower and the executor's
 * dev_follow_map (dev_exec.h) make and no config changes: the windows'
 * follow analysis, the executor's follow map and dev_evaluated_whole.
 * dev_fusion_prepare builds them once into f->lower (reading f->kinds when
 * set); the dev_fusion functions own them.  NULL when out of memory. */
dev_lower_plan *dev_lower_plan_new(const dev_fusion *f);
void dev_lower_plan_free(dev_lower_plan *p);

/* The parameter indices along a padded window dimension (map pm) that
 * output positions [lo, lo + n) read: returns their count, 0 when the range
 * holds only padding (or n <= 0), and sets *first to the first of them (to
 * pm->first when there are none).  The indices are those i in
 * [pm->first, pm->end) with lo <= pm->at + i * pm->step < lo + n. */
int64_t dev_pad_rows(const dev_pad_map *pm, int64_t lo, int64_t n, int64_t *first);

/* Where window w of schedule s sits at the grid step with output tile
 * indices t and k chunk `chunk`: its block origin per dimension, and in lim
 * where the part of the block the step reads ends: the array's extent; or
 * along a padded dimension the end of the rows the tile (or the chunk)
 * reads through the pad's inverse map, whose first row is the origin
 * there; or along a merged dimension the end of the run the tile covers.
 * False when along a padded dimension the tile or chunk is made only of
 * padding: the step reads nothing of w. */
bool dev_window_at(const dev_schedule *s, const dev_window *w, const int64_t *t, int64_t chunk, int64_t *origin,
                   int64_t *lim);

/* The box (lo, n) of the hero's result that output tile t needs, s->hero_rank
 * dims: along a dim that follows an output dim the tile's rows, along one
 * that follows merged output dims the run the tile covers, else whole. */
void dev_hero_box(const dev_schedule *s, const int64_t *t, int64_t *lo, int64_t *n);

/* The block dev_lower would give kernel parameter p (its rank's dims into
 * block) under cfg on m, before any legality check: along a dimension it
 * follows through a pad's padding or a reshape's merge, the rows a tile
 * (or chunk) reads or the run it covers (the largest run when the tile is
 * not one: dev_lower refuses that tile); elsewhere the tile, the k chunk or
 * the whole dimension.  Returns a bit per dimension that is padded or
 * merged, 0 for the others (and for a tuple-shaped or too-high-ranked
 * parameter, whose block is left alone).  Reads f->lower when f is
 * prepared, else runs the follow analysis anew (0 when out of memory). */
unsigned dev_lower_param_block(const dev_fusion *f, const dev_config *cfg, const dev_machine *m, int p,
                               int64_t *block);

/* Whether cfg's tile covers one contiguous run of every merged dimension
 * that a window or a reduction hero follows (the legality rule above that
 * is not about one block's shape): false where dev_lower would refuse the
 * tile for it.  Reads f->lower like dev_lower_param_block. */
bool dev_lower_runs_contiguous(const dev_fusion *f, const dev_config *cfg);

/* Lowers.  Returns 0, or -1 with a compile-error reason in why (e.g.
 * "block f32[8,100] of param_0: last dimension 100 is not a multiple of 128
 * and not the full dimension 300", "VMEM 17.5 MiB > 16 MiB"). */
int dev_lower(const dev_fusion *f, const dev_config *cfg, const dev_machine *m,
              dev_schedule *out, char *why, size_t why_len);
void dev_schedule_free(dev_schedule *s);

#endif
