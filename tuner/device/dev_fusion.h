/* dev_fusion.h — what the device needs to know about one fusion before it
 * can tile it: which computation is the kernel, which op sets the iteration
 * space (the "hero"), the output that the grid tiles, and the reduction that
 * the k loop chunks.
 *
 * Which computation is the kernel: when the entry computation holds exactly
 * one `fusion` instruction and otherwise only parameters, constants, tuples,
 * get-tuple-elements, bitcasts and copies, the fusion's called computation
 * is the kernel and the entry is its launch.  Otherwise the entry itself is
 * the kernel (a module written as one fused computation).
 *
 * The hero is the op nearest the root (walking back from the root through
 * elementwise and data-movement ops) among: reduce, dot, convolution,
 * reduce-window, scatter, sort, gather, dynamic-slice, dynamic-update-slice,
 * or a collective.  A fusion with none of these is a loop fusion.
 */
#ifndef TUNE_DEV_FUSION_H
#define TUNE_DEV_FUSION_H

#include <stdint.h>

#include "dev_config.h"
#include "dev_host.h"
#include "hlo/hlo.h"
#include "hlo/hlo_error.h"

typedef enum dev_hero_kind {
  DEV_HERO_LOOP = 0, /* elementwise / data movement only */
  DEV_HERO_REDUCE,
  DEV_HERO_DOT,
  DEV_HERO_CONV,
  DEV_HERO_REDUCE_WINDOW,
  DEV_HERO_SCATTER,
  DEV_HERO_SORT,
  DEV_HERO_GATHER,
  DEV_HERO_DYNAMIC_SLICE,
  DEV_HERO_DYNAMIC_UPDATE_SLICE,
  DEV_HERO_COLLECTIVE
} dev_hero_kind;

/* The per-fusion analyses of dev_lower.c (dev_lower.h). */
typedef struct dev_lower_plan dev_lower_plan;
/* Spare per-instruction box arrays of the evaluator (dev_elemental.h). */
typedef struct dev_elem_spares dev_elem_spares;

typedef struct dev_fusion {
  const hlo_module *m;
  const hlo_instr *launch;      /* the fusion instruction in the entry, or NULL */
  const hlo_computation *comp;  /* the kernel */
  const hlo_instr *hero;        /* NULL for a loop fusion */
  dev_hero_kind kind;
  const hlo_shape *out;         /* the tiled output: the root, or the first
                                   array leaf of a tuple root */
  int rank;                     /* out's rank, <= DEV_MAX_RANK */
  int64_t dims[DEV_MAX_RANK];
  hlo_etype out_type;
  int64_t k_total;              /* reduction length the k loop chunks: the
                                   product of a reduce's reduced dims or a
                                   dot's contracting dims; 0 when none */
  hlo_etype acc_type;           /* the type reductions accumulate in */
  int64_t in_bytes, out_bytes;  /* total bytes of the kernel's parameters and
                                   outputs (for the cost model) */
  int64_t flops;                /* arithmetic ops of one evaluation, estimated
                                   from shapes (dot/conv count 2*MAC) */
  int64_t transcendentals;      /* elements through exp/log/tanh/... */
  const char *name;             /* the kernel computation's name */
  int replicas;                 /* replicas the collectives run across (the
                                   device simulates replica 0): the module's
                                   replica_count unless the caller sets it */
  uint64_t rng_seed;            /* the run's --seed, which keys the values of
                                   the rng ops the kernel hands to the host
                                   evaluator; 0 unless the caller sets it,
                                   and it must match the reference's */
  const dev_host *host;         /* evaluates what the device does not compute
                                   itself (dev_host.h), with replicas and
                                   rng_seed above; NULL unless the caller sets
                                   it, and then such ops are refused */
  /* What every candidate would otherwise work out again from the kernel's
   * instructions: dev_fusion_prepare builds it, dev_fusion_release frees
   * it.  NULL (dev_fusion_analyze leaves it so) when not prepared: each
   * user then computes its own, with the same result.  A 200,000-
   * instruction kernel spent more time on these walks, redone per
   * candidate over instructions that no longer fit in the caches, than on
   * its arithmetic (issue 15 item 4). */
  const uint8_t *kinds;         /* dev_elem_classify of comp->instrs[i], as
                                   a dev_elem_kind (dev_elemental.h) */
  const dev_lower_plan *lower;  /* dev_lower.h's analyses of the kernel */
  dev_elem_spares *spares;      /* the only mutable part: arrays one run's
                                   evaluator hands on to the next run's
                                   (dev_elem_new), safe across threads */
} dev_fusion;

/* Analyses m.  0, or -1 with err (e.g. an output rank above DEV_MAX_RANK).
 * Allocates nothing: a dev_fusion that was never prepared needs no
 * release. */
int dev_fusion_analyze(const hlo_module *m, dev_fusion *out, hlo_error *err);

/* Builds f->kinds, f->lower and f->spares, once, for a caller that runs many configs
 * of one fusion.  Call it after the last change to f's fields (the
 * analyses read the hero and the kernel), before the candidates start:
 * from then on they are read-only, shared by candidates on any thread.
 * The caller owns them and frees them with dev_fusion_release after the
 * last use of f or of any copy of it (a compiled kernel keeps a copy:
 * release those first).  0, or -1 when out of memory (f is then left
 * unprepared, which is still correct, only slower). */
int dev_fusion_prepare(dev_fusion *f);

/* Frees what dev_fusion_prepare built and sets f unprepared.  Fine on an
 * unprepared f. */
void dev_fusion_release(dev_fusion *f);

const char *dev_hero_name(dev_hero_kind k);

#endif
