/* cover.h — which candidates a budget smaller than the space checks.
 *
 * A budget used to take a prefix of the space, and the space's order puts
 * related configs next to each other: sixteen candidates explored one
 * corner (one tile, every buffer count) and missed defects whose trigger
 * sits in another.  Instead the budget is spent on a greedy pairwise
 * covering array over the configs' knobs: each pick is the candidate that
 * adds the most knob values not yet seen, then the most pairs of knob
 * values (two knobs, one value each) not yet seen together.  When every
 * value and pair the space holds is covered, coverage starts over, so a
 * large budget covers every pair twice before any pair three times.
 *
 * Knobs: each output dimension's tile size, k, buf, order, pack, prec and
 * each lowering flag (on or off), and one derived from the fusion's shape:
 * `loops`, the grid's loop nest outermost first, each output loop marked
 * `n` when it steps more than once and `1` when its tile covers the
 * dimension, and the reduction loop `k` when it has more than one chunk
 * (`1` otherwise).  Defects of tiled lowerings fire on loop structures (an
 * accumulator revisited across a multi-step loop while another loop is
 * single-step) that no pair of raw knobs pins down, so covering each
 * structure, and each structure with each other knob value, is worth more
 * than another tile size.  A second derived knob, `ring`, says whether the
 * grid refills a buffer of the ring while the pipeline runs (`wraps`: more
 * steps than buf, buf >= 2), holds every fetch in a buffer of its own
 * (`fits`), or has one buffer (`single`): a missing wait can only corrupt
 * a refilled buffer.  Only pairs that some config of the space holds
 * count, so the coverage of a run is measured against what was possible,
 * not against a product of value sets; and only configs that compile,
 * since one the device refuses runs nothing: a value that only illegal
 * configs hold (a chunk k that is no multiple of 128 lanes) used to cost
 * a pick of its own, which at 16 picks crowded out the configs that
 * trigger a defect.
 *
 * Ties go to the candidate whose fingerprint hashes lowest under the seed,
 * so a choice is a pure function of (space, budget, seed): the daily sweep
 * changes the seed with the date to rotate through the space, and a run
 * is replayed by giving the same seed (`tune --check --cover-seed`).
 */
#ifndef TUNE_COVER_H
#define TUNE_COVER_H

#include <stdbool.h>
#include <stdint.h>

#include "device/dev_config.h"
#include "hlo/hlo_error.h"

/* The fusion's shape, for the `loops` knob. */
typedef struct tn_cover_shape {
  int rank;                      /* output rank */
  int64_t dims[DEV_MAX_RANK];    /* output dimensions */
  int64_t k_total;               /* the reduction length; 0 when none */
} tn_cover_shape;

typedef struct tn_cover {
  uint64_t seed;          /* the seed the choice was made with */
  int values;             /* distinct knob values in the space */
  int values_covered;     /* of them, held by a chosen candidate */
  int64_t pairs;          /* distinct pairs of knob values in the space */
  int64_t pairs_covered;  /* of them, held by a chosen candidate */
  char *pairs_text;       /* the covered pairs, one a line
                             ("tile[0]=8 pack=2"), in knob order; owned */
} tn_cover;

/* Reorders list[0..n) so that its first `budget` entries are the chosen
 * candidates, in the order they were chosen; list[0] (the default) stays
 * first.  compiles[i] says whether list[i] compiles (NULL: all do); one
 * that does not is chosen only after every one that does, and neither
 * its values nor its pairs count, in the space or in the cover.  Fills
 * *out (free with tn_cover_free) with the coverage of those `budget`
 * entries (budget >= n: all of them, nothing reordered).  shape NULL: no
 * `loops` knob.
 * 0, or -1 with err when out of memory. */
int tn_cover_select(dev_config *list, int n, int budget, uint64_t seed, const tn_cover_shape *shape,
                    const bool *compiles, tn_cover *out, hlo_error *err);
void tn_cover_free(tn_cover *c);

/* The seed of day `yyyymmdd` (e.g. 20261201) of a sweep seeded with
 * `seed`: a week of daily runs with a small budget then checks seven
 * different choices, together close to what one large budget would. */
uint64_t tn_cover_rotate(uint64_t seed, int yyyymmdd);

#endif
