/* dev_space.h — the candidate space of one fusion on one machine: which
 * configs the autotuner sweeps, and which one the compiler would pick itself.
 *
 * Knobs and their values (each list is sorted and free of duplicates; the
 * default's value is always one of them):
 *
 *   tile, minor (last) output dim D, lanes L (128):
 *       powers of two L..2048 below D, 3L (a multiple of L that is not a
 *       power of two), D itself, a ragged multiple of L that does not divide
 *       D (L itself when D < L: one padded tile), and L/2 when D > L (not
 *       lane-aligned: the device refuses it, as a real compiler would)
 *   tile, second-minor dim D, sublane multiple S (8 for 32-bit types, 16 for
 *       16-bit, 32 for 8-bit; the narrowest type among the output and the
 *       kernel's parameters of rank >= 2 decides):
 *       powers of two 8..512 below D (8 is illegal when S > 8), 3S, D, and a
 *       ragged multiple of S that does not divide D
 *   tile, leading dims: 1, 2, and D when D <= 8
 *   k (reduce and dot fusions only, else always 0): powers of two
 *       128..4096 below k_total, k_total itself, a ragged multiple of 128
 *       (the smallest that does not divide k_total, past it when need be: one
 *       padded chunk), for k_total < 128 also a ragged multiple of 8, and 32
 *       when k_total > 32 (a narrow chunk, legal only where the reduced dim
 *       is not a lane dim)
 *   buf    1, 2, 3, 4
 *   order  natural (output dims outermost first, k innermost); k outermost;
 *          the natural order with the last two output dims swapped
 *          (whichever of these exist and differ)
 *   pack   1, 2, 4 for reductions (reduce and dot fusions), else 1
 *   prec   default, high, highest for dots whose operands are f32, else
 *          default
 *   flags  each one an on/off knob, present only where it means something:
 *          fuse-converts (the kernel has a convert), split-reduction (reduce
 *          and dot fusions), vec-scatter (scatter), two-stage-sort (sort)
 *
 * The list, at most DEV_SPACE_MAX configs:
 *   1. the default;
 *   2. coverage: one-knob-at-a-time variants of the default, one per value
 *      of every knob, so each value of each knob appears at least once;
 *   3. the rest: when the full cross product has at most DEV_SPACE_MAX
 *      configs, all of it in mixed-radix order (tile knobs slowest, flags
 *      fastest); otherwise a Latin hypercube sample of it (each knob's values
 *      spread evenly over the samples, their combinations shuffled per knob
 *      by a fixed-seed splitmix64), in rounds until the list is full.
 *      Duplicates are skipped, and so is a config that fails
 *      dev_space_plausible once such configs would exceed 1/8 of the list,
 *      so that most candidates compile.  (Coverage is never filtered: a knob
 *      value the device always refuses still appears once.)
 * No randomness depends on anything but the knob lists, so the same fusion
 * and machine give the same list in the same order.
 *
 * The default (what a compiler's own heuristic would pick):
 *   tile  the second-minor dim D: D when D <= 256, else the largest
 *         multiple of S in [64, 256] that divides D, else D when D <= 1024,
 *         else 256 (ragged); the minor dim the same with L, [128, 1024] and
 *         4096; leading dims, innermost first, the largest divisor of the
 *         dim that keeps the output block within 512 KiB (1 when none does:
 *         fewer, fuller grid steps pay less step overhead);
 *   k     k_total when <= 512, else the largest power of two in [128, 512]
 *         dividing k_total, else k_total when <= 8192, else 512 (ragged);
 *   buf=2, natural order, pack=1, prec=default, no flags;
 *   then, while dev_space_vmem_estimate exceeds half of VMEM, it shrinks
 *   in the order a kernel author would (halve the minor tile keeping it a
 *   multiple of L, then the second-minor keeping a multiple of S, then k
 *   keeping a multiple of 128, then leading dims); and when a parameter's
 *   estimated block is still not a legal shape (a leading tile of 1 that
 *   lands on a transposed parameter's second-minor dim), it widens tile
 *   dims to the whole dim, outermost first, within the same budget, until
 *   dev_space_plausible holds.
 * A scalar output has rank 0 (printed tile=1).
 */
#ifndef TUNE_DEV_SPACE_H
#define TUNE_DEV_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "dev_config.h"
#include "dev_fusion.h"
#include "dev_machine.h"
#include "hlo/hlo_error.h"

#define DEV_SPACE_MAX 256       /* candidates per fusion, default included */
#define DEV_SPACE_MAX_VALUES 16 /* values per knob */

typedef struct dev_space_values {
  int n;
  int64_t v[DEV_SPACE_MAX_VALUES];
} dev_space_values;

/* The knob lists of one fusion (see above). */
typedef struct dev_space_knobs {
  int rank;
  dev_space_values tile[DEV_MAX_RANK];
  dev_space_values k;           /* {0} without a reduction */
  dev_space_values buf;
  int norders;
  int order_len;                /* rank, plus 1 with a reduction */
  int order[3][DEV_MAX_RANK + 1];
  dev_space_values pack;
  dev_space_values prec;        /* dev_precision values */
  unsigned flags;               /* DEV_FLAG_* bits that are knobs */
  int sublanes;                 /* S above */
} dev_space_knobs;

/* Fills the knob lists.  0, or -1 with err (a rank above DEV_MAX_RANK). */
int dev_space_knobs_of(const dev_fusion *f, const dev_machine *m, dev_space_knobs *out,
                       hlo_error *err);

/* The candidate list: *cands is malloc'd (the caller frees), with *n
 * entries, at most DEV_SPACE_MAX, the default first; *dflt is the default.
 * 0, or -1 with err. */
int dev_space_enumerate(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *n,
                        dev_config *dflt, hlo_error *err);

/* The default config alone. */
int dev_space_default(const dev_fusion *f, const dev_machine *m, dev_config *out, hlo_error *err);

/* The space's own estimate of a config's VMEM working set on m:
 * sum over kernel parameters of block_bytes * buf, plus the output block,
 * plus pack f32-sized accumulators of the output tile when k > 0.  A
 * parameter dimension that the lowering reads through a pad's padding or
 * a reshape's merge takes the block the lowering gives it
 * (dev_lower_param_block: the rows a tile or chunk reads through the pad,
 * the run of the merged dimension a tile covers).  Any other takes the
 * tile of an output dimension of the same size (the one at the same
 * distance from the minor end first), else the k chunk when its size is
 * k_total, else its whole extent.  The device's lowering is authoritative;
 * this is what the heuristic budgets with. */
int64_t dev_space_vmem_estimate(const dev_fusion *f, const dev_machine *m, const dev_config *c);

/* A quick legality guess on the same estimated blocks: the last two
 * dimensions of every block are multiples of (S for the block's type, lanes)
 * or the whole dimension, the tile covers one run of every dimension a
 * reshape merges (dev_lower_runs_contiguous), and the estimate fits in VMEM.  true when the
 * device will most likely accept the config. */
bool dev_space_plausible(const dev_fusion *f, const dev_machine *m, const dev_config *c);

#endif
