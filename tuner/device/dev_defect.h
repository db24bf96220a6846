/* dev_defect.h — the catalog of modelled miscompilations, and compiler
 * profiles that switch them on.
 *
 * Each defect models one real class of silent miscompilation in a tiled
 * lowering.  It is off by default, fires only under its own trigger
 * condition (written in config terms below), and must leave every other
 * config bit-identical to the clean device: defects are how the checker
 * itself is tested, so a defect that leaks outside its trigger would make
 * the checker look better or worse than it is.
 *
 * X(enum suffix, name, trigger, symptom)
 */
#ifndef TUNE_DEV_DEFECT_H
#define TUNE_DEV_DEFECT_H

#include <stdint.h>

#include "hlo_error.h"

#define DEV_DEFECT_LIST(X)                                                                     \
  X(REVISIT_NO_REINIT, "revisit-no-reinit",                                                    \
    "reduction fusion whose loop order puts k outside an output loop (the output window is "  \
    "revisited) while another output loop has a bound of 1",                                   \
    "the revisit tracker is elided, so the accumulator is not re-initialised when a new "      \
    "output window starts: partial sums leak from the previous window")                        \
  X(PACKED_REDUCE_INIT0, "packed-reduce-init0",                                                \
    "reduction with pack=P > 1",                                                               \
    "only packed accumulator 0 is initialised; accumulators 1..P-1 start from stale VMEM "     \
    "(the previous output window's partials)")                                                 \
  X(SCATTER_S8_IOTA_WRAP, "scatter-s8-iota-wrap",                                              \
    "singleton scatter lowered with flag vec-scatter, index type narrower than 32 bits, "      \
    "and an operand dimension N > 128",                                                        \
    "the one-hot mask compares the index against an iota built in the index type, which "      \
    "wraps modulo 2^bits: a write at i also lands at i + 256 (s8)")                            \
  X(SORT_LANE_INDEX, "sort-lane-index",                                                        \
    "sort along a major axis of length N >= 256 (a multiple of 128) lowered with flag "        \
    "two-stage-sort and is_stable=false",                                                      \
    "the strided split reconstructs indices as idx + l*M instead of idx*128 + l, "             \
    "corrupting the values carried with the keys")                                             \
  X(ELIDE_CONVERT, "elide-convert",                                                            \
    "flag fuse-converts and a narrowing float convert whose result is converted back "         \
    "inside the fusion",                                                                       \
    "both converts are skipped in 32-bit registers, so x - f32(f16(x)) evaluates to 0")        \
  X(RAGGED_STORE_MASK, "ragged-store-mask",                                                    \
    "output tile that does not divide the second-minor output dimension (a ragged last "       \
    "row-tile)",                                                                               \
    "the store mask of the ragged edge is one sublane short: the last valid row of the "       \
    "ragged tile is never written")                                                            \
  X(RAGGED_CHUNK_PAD, "ragged-chunk-pad",                                                      \
    "reduction whose chunk k does not divide the reduction length",                            \
    "the last, ragged chunk is not masked: its padding is read into the accumulator")          \
  X(DMA_RACE, "dma-race",                                                                      \
    "buf >= 2 and more than buf grid steps (depends on the run's timing-jitter seed)",         \
    "the DMA for step s+buf may land before step s finished reading its buffer; when the "     \
    "jitter says it does, step s computes on the next tile's data (nondeterministic)")         \
  X(INT8_DOT_F32_ACC, "int8-dot-f32-acc",                                                      \
    "s8 x s8 -> s32 dot whose chunk k is not a multiple of 4",                                 \
    "the fallback path accumulates through f32, so sums beyond 2^24 lose low bits")            \
  X(DYNSLICE_CLAMP_LOST, "dynslice-clamp-lost",                                                \
    "dynamic-slice (or dynamic-update-slice) whose start indices are folded into tile "        \
    "offsets: the tile along the sliced dimension is smaller than the slice",                  \
    "start indices are not clamped to [0, dim - size]: out-of-range starts read (or write) "   \
    "outside the window")                                                                      \
  X(UNSIGNED_CMP_SIGNED, "unsigned-cmp-signed",                                                \
    "compare of unsigned integers inside a fusion with flag fuse-converts",                    \
    "the compare is lowered as signed: values >= 2^(bits-1) order below small ones")

typedef enum dev_defect {
#define X(e, name, trig, sym) DEV_DEFECT_##e,
  DEV_DEFECT_LIST(X)
#undef X
  DEV_DEFECT_COUNT
} dev_defect;

const char *dev_defect_name(dev_defect d);
const char *dev_defect_trigger(dev_defect d);
const char *dev_defect_symptom(dev_defect d);
/* -1 when the name is not a defect. */
int dev_defect_from_name(const char *name);

/* A compiler profile: which defects the simulated compiler build carries. */
typedef struct dev_compiler {
  char name[64];
  uint32_t defects; /* bit per dev_defect */
} dev_compiler;

/* Loads configs/compilers/NAME.cfg (or a path containing '/'):
 *   compiler = { name = "nightly"; defects = [ "packed-reduce-init0", ... ]; };
 * Unknown keys and unknown defect names are errors naming file and line. */
int dev_compiler_find(const char *name, dev_compiler *out, hlo_error *err);
int dev_compiler_load(const char *path, dev_compiler *out, hlo_error *err);

static inline int dev_compiler_has(const dev_compiler *c, dev_defect d) {
  return c && (c->defects >> d) & 1u;
}

#endif
