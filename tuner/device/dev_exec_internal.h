/* dev_exec_internal.h — what the files of the device executor share: the
 * state of one run (exec, with a win_state per parameter window) and the
 * functions one file of the executor calls in another.  Not part of the
 * device's interface (that is dev_exec.h); included only by the executor's
 * files:
 *   dev_exec.c         the grid driver and dev_exec_run
 *   dev_dma.c          the DMA ring of parameter windows and their reads
 *   dev_acc.c          the hero's accumulators
 *   dev_fold_chunk.c   one chunk of the hero: its mask and ragged padding
 *   dev_fold_reduce.c  the folds of a reduce hero
 *   dev_fold_dot.c     the folds of a dot hero
 *   dev_store.c        stores to the output buffers and their masks
 *   dev_output.c       the output buffers and the root value built on them
 *   dev_trigger.c      which defects a run's config triggers
 * Functions shared between them are prefixed dev_x_; each file keeps the
 * rest static. */
#ifndef TUNE_DEV_EXEC_INTERNAL_H
#define TUNE_DEV_EXEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_elemental.h"
#include "dev_exec.h"
#include "dev_exec_variadic.h"
#include "dev_hbm.h"
#include "hlo/hlo.h"

/* ---- state ------------------------------------------------------------------ */

typedef struct win_state {
  const dev_window *w;
  hlo_etype type;
  size_t esz;
  int64_t belems;              /* elements of one block */
  uint8_t **data, **shadow;    /* buf ring slots */
  bool *clean;                 /* per slot: no element is poisoned (the
                                  block lay inside the array); the slot's
                                  shadow bytes are then not kept, readers
                                  take 0 */
  int64_t origin[DEV_MAX_RANK];/* block origin of the slot in use */
  int cur;                     /* slot in use */
  bool have;                   /* a block has been fetched */
  int64_t fetches;
  double ready_at;             /* modelled completion time of the last DMA */
  int64_t *plan;               /* dma-race: the block origin of every fetch
                                  of the run (nplan * rank), else NULL */
  int64_t nplan;
} win_state;

typedef struct exec {
  const dev_schedule *s;
  const dev_fusion *f;
  const dev_compiler *cc;
  dev_exec_hooks hooks;
  char *why;
  size_t why_len;

  dev_hbm *in;                 /* kernel parameters: the arguments' data,
                                  read in place and never stored to, so
                                  every element is defined; they have no
                                  shadow (NULL) nor redzones, and a reader
                                  takes their elements as unpoisoned */
  int nin;
  dev_hbm *out;                /* root leaves */
  int nout;
  const hlo_instr **out_node;  /* producer of each leaf */
  int *out_sub;                /* the leaf's index within a tuple-shaped
                                  producer (a variadic sort, a while), -1
                                  when the producer is an array */
  bool *out_tiled;             /* leaf has the tiled output's dims */
  win_state *win;
  dev_elem *el;
  int *follow;                 /* dev_follow_map */

  /* loop state */
  int64_t t[DEV_MAX_RANK];     /* current tile index per output dim */
  int64_t chunk;
  int64_t ntiles;
  double now;                  /* modelled time, for the DMA model */
  uint64_t rng;
  uint64_t jitter_seed;
  uint32_t active;             /* defects this run's config triggers */
  int64_t pad_shift;           /* ragged-chunk-pad: where pad_read reads */

  /* hero accumulation */
  bool hero_native;
  bool is_dot;
  dev_vred *vred;              /* a variadic reduce hero's reducer, else NULL */
  int nv;                      /* values per accumulator slot: its N, else 1;
                                  the value arrays below hold nv slots per
                                  accumulator (valid/poison one per slot) */
  hlo_opcode red_op;
  hlo_etype acc_t;             /* slot type of the accumulators */
  hlo_etype res_t;             /* hero result type */
  int P;
  bool split;
  int64_t kchunk;
  dev_box region;              /* hero result box of the current tile */
  int64_t rcap;                /* largest region */
  dev_slot *acc;               /* rcap * P (values: times nv) */
  uint8_t *acc_valid, *acc_poison;
  dev_slot *part;              /* rcap * nk (split) */
  uint8_t *part_valid, *part_poison;
  dev_slot *fin;               /* finalised hero values, rcap */
  uint8_t *fin_poison;
  int64_t acc_tile;            /* whose accumulators are in VMEM; -1 */
  bool acc_open;               /* that window is not finished */
  uint8_t *visited;            /* per tile */
  dev_slot *spill;             /* per tile: rcap * P (+ rcap * nk) */
  uint8_t *spill_valid, *spill_poison;
} exec;

/* The shape of ins, or its first array leaf (depth first) when a tuple. */
static inline const hlo_shape *dev_x_leaf0(const hlo_instr *ins) { return hlo_shape_leaf(&ins->shape, 0); }

/* Whether this run's config triggers defect d (dev_trigger.c). */
static inline bool dev_x_on(const exec *x, dev_defect d) { return (x->active >> d) & 1u; }

/* The index, along reduction dims of sizes rsz[0..nred), of flattened
 * reduction position r (the reduce and dot folds, per element). */
static inline void dev_x_unflatten_red(const int64_t *rsz, int nred, int64_t r, int64_t *out) {
  for (int j = nred - 1; j >= 0; j--) {
    out[j] = r % rsz[j];
    r /= rsz[j];
  }
}

/* ---- dev_exec.c: the grid --------------------------------------------------- */

/* Writes the run's error message; returns -1. */
__attribute__((format(printf, 2, 3))) int dev_x_fail(exec *x, const char *fmt, ...);
/* The flat index of the current output tile. */
int64_t dev_x_tile_id(const exec *x);
/* Sets the tile indices and the chunk of grid step `step`. */
void dev_x_decode_step(exec *x, int64_t step);

/* ---- dev_dma.c: parameter windows -------------------------------------------- */

int dev_x_setup_windows(exec *x);
/* The f32 values that dev_x_window_read gives, in place: the n elements
 * of parameter param from idx along its last dimension, when it is f32
 * and the whole row is defined (in the arguments, or inside a clean
 * block of its window); else NULL, and the row is read through
 * dev_x_window_read.  They equal its slots narrowed back to f32, except
 * that a slot quiets a signalling NaN. */
const float *dev_x_window_f32(const exec *x, int param, const int64_t *idx, int64_t n);
/* The same for a box [lo, lo + n) of the parameter that is one
 * contiguous run of its window block (or of the arguments): a
 * dev_param_f32 for requests through dev_x_window_read (ctx: the exec). */
const float *dev_x_window_f32_box(void *ctx, int param, const int64_t *lo, const int64_t *n);
/* dma-race's plan: the block of every fetch of every window. */
int dev_x_plan_fetches(exec *x);
/* Fetches the windows whose block changes at the current step. */
void dev_x_stage_windows(exec *x);
/* Parameter reads through the VMEM windows (a dev_param_read). */
void dev_x_window_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison);

/* ---- dev_acc.c: accumulators -------------------------------------------------- */

int dev_x_setup_hero(exec *x);
/* Makes the current tile's accumulators live (the revisit tracker). */
int dev_x_acc_enter(exec *x);
/* Folds the current chunk into the accumulators (or its split partial). */
int dev_x_compute_chunk(exec *x);
/* The hero's final value per element of the current region. */
void dev_x_acc_finalize(exec *x);
/* Reads of the finalised hero values by the epilogue (a dev_hero_read). */
void dev_x_hero_read(void *ctx, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison);

/* ---- dev_fold_chunk.c, dev_fold_reduce.c, dev_fold_dot.c: folds --------------- */

/* The current chunk's real elements (and, under ragged-chunk-pad, its
 * padding) into acc/valid/poison. */
int dev_x_fold_chunk(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison);
/* The bounding box of flattened reduction positions [r0, r1). */
void dev_x_chunk_bbox(const int64_t *rsz, int nred, int64_t r0, int64_t r1, int64_t *lo, int64_t *n);
/* Reduction positions [r0, r0 + len) of a reduce hero (variadic or not),
 * or contracting positions of a dot hero, read through pread; position
 * r0 + i goes to pack slot (label0 + i) mod P. */
int dev_x_fold_red_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                         int64_t label0, dev_param_read *pread);
int dev_x_fold_dot_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                         int64_t label0, dev_param_read *pread);

/* ---- dev_store.c: stores ------------------------------------------------------ */

/* Evaluates leaf j over box want and stores it. */
int dev_x_eval_store(exec *x, int j, const dev_box *want, bool hero_leaf);
/* Finalises and stores the tiled leaves of the current output tile. */
int dev_x_finish_tile(exec *x);

/* ---- dev_output.c: output buffers --------------------------------------------- */

int dev_x_setup_outputs(exec *x);
/* The shape of output leaf j. */
const hlo_shape *dev_x_out_shape(const exec *x, int j);
/* The root's value from its leaves, nested as shape s. */
hlo_value *dev_x_assemble(const hlo_shape *s, hlo_value **leaves, int *next);

/* ---- dev_trigger.c: defect triggers ------------------------------------------- */

/* The defects of the compiler profile that this run's config triggers. */
uint32_t dev_x_triggered_defects(const exec *x);

#endif
