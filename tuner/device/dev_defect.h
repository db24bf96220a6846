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
 * Symptoms are silent wrong results, never a failed run: where a real chip
 * would leave a value undefined (an unwritten output row, unmasked padding,
 * an address past the array), the model uses finite data from the same
 * run (a stale row, the neighbouring data in HBM, a wrapped address), so
 * the checker's verdict is a mismatch (nondeterministic for dma-race), not
 * an "uninitialized read".  The implementation (dev_trigger.c, the
 * executor's steps dev_exec.c names, dev_elemental.c and dev_scalar.c)
 * follows these words exactly; the trigger of a defect can hold while its
 * symptom stays invisible for some inputs (an in-range dynamic-slice start,
 * a max reduction over repeated data), but a config outside the trigger
 * never changes a bit.
 *
 * X(enum suffix, name, trigger, symptom)
 */
#ifndef TUNE_DEV_DEFECT_H
#define TUNE_DEV_DEFECT_H

#include <stdint.h>

#include "hlo/hlo_error.h"

#define DEV_DEFECT_LIST(X)                                                                     \
  X(REVISIT_NO_REINIT, "revisit-no-reinit",                                                    \
    "reduction fusion whose loop order puts k outside an output loop of bound > 1 (output "    \
    "windows are left and revisited, more than one k chunk) while another output loop has a "  \
    "bound of 1",                                                                              \
    "the revisit tracker is elided, so the accumulator is not re-initialised when a new "      \
    "output window starts: partial sums leak from the window live before it (the first "       \
    "window of a run is initialised)")                                                         \
  X(PACKED_REDUCE_INIT0, "packed-reduce-init0",                                                \
    "reduction with pack=P > 1 without split-reduction, over more than one output window",     \
    "only packed accumulator 0 is initialised; accumulators 1..P-1 start from stale VMEM "     \
    "(the previous output window's partials; the first window finds them cleared)")            \
  X(SCATTER_S8_IOTA_WRAP, "scatter-s8-iota-wrap",                                              \
    "singleton scatter lowered with flag vec-scatter, an integer index narrower than 32 bits " \
    "whose iota wraps inside a scattered operand dimension N (N > 128 for s8, N > 256 for "    \
    "u8), and a set, keep or simple binary combiner",                                          \
    "the one-hot mask compares the index against an iota built in the index type, which "      \
    "wraps modulo 2^bits: a write at i also lands at i + 256 (s8, u8), and a negative s8 "     \
    "index that must be skipped lands at i + 256")                                             \
  X(SORT_LANE_INDEX, "sort-lane-index",                                                        \
    "unstable sort (is_stable=false) along a major (not the minor-most) axis of length "       \
    "N = M*128 >= 256, lowered with flag two-stage-sort, with operands carried beside the "    \
    "keys (operands the comparator does not read)",                                            \
    "the strided split reconstructs positions as idx + l*M instead of idx*128 + l: the "       \
    "carried values are gathered from the wrong positions (the keys stay right)")              \
  X(ELIDE_CONVERT, "elide-convert",                                                            \
    "flag fuse-converts and a narrowing float convert S -> T whose result is converted back "  \
    "to S inside the fusion",                                                                  \
    "both converts are skipped in 32-bit registers, so x - f32(f16(x)) evaluates to 0")        \
  X(RAGGED_STORE_MASK, "ragged-store-mask",                                                    \
    "output tile that does not divide the second-minor output dimension (a ragged last "       \
    "row-tile) of at least two rows",                                                          \
    "the store mask of the ragged edge is one sublane short: the last valid row of the "       \
    "ragged tile is never written and keeps a stale value (modelled as the row one tile "      \
    "above, or the row above when the ragged tile is the only one)")                           \
  X(RAGGED_CHUNK_PAD, "ragged-chunk-pad",                                                      \
    "reduction over one reduced (or contracting) dimension whose chunk k does not divide "     \
    "its length",                                                                              \
    "the last, ragged chunk is not masked: its padding lanes, which hold the data that "       \
    "follows the line in HBM (the next row; past the array's end its start), are read into "   \
    "the accumulator")                                                                         \
  X(DMA_RACE, "dma-race",                                                                      \
    "buf >= 2 and a parameter window fetched more than buf times, or a hero computed from "   \
    "whole operands that fetches more than buf boxes (a gather, dynamic-slice, "             \
    "reduce-window or collective per result tile, a dynamic-update-slice per update tile, " \
    "a scatter per chunk of updates); depends on the run's timing-jitter seed",             \
    "the DMA for fetch f+buf may land before the steps reading fetch f are done; when the "    \
    "jitter says it does, they compute on that later tile's data (nondeterministic)")          \
  X(INT8_DOT_F32_ACC, "int8-dot-f32-acc",                                                      \
    "s8 x s8 -> s32 dot (the hero) whose chunk k is not a multiple of 4",                      \
    "the fallback path accumulates through f32, so sums beyond 2^24 lose low bits")            \
  X(DYNSLICE_CLAMP_LOST, "dynslice-clamp-lost",                                                \
    "dynamic-slice (or dynamic-update-slice) hero whose start indices are folded into tile "   \
    "offsets: along a dimension it slices (slice smaller than the array) the output tile is "  \
    "smaller than the slice (or the update)",                                                  \
    "start indices are not clamped to [0, dim - size]: an out-of-range start reads (or "       \
    "writes) outside the window, the address wrapping modulo the dimension")                   \
  X(UNSIGNED_CMP_SIGNED, "unsigned-cmp-signed",                                                \
    "compare of unsigned integers inside a fusion with flag fuse-converts",                    \
    "the compare is lowered as signed: values >= 2^(bits-1) order below small ones")          \
  X(FFT_TILE_TWIDDLE, "fft-tile-twiddle",                                                      \
    "fft over one dimension lowered with flag four-step (a split N = N1 x N2, N1 > 1) whose "  \
    "output tile along the minor output dimension is smaller than the fft's last output "      \
    "dimension (more than one frequency tile)",                                                \
    "the outer DFT's twiddle row is indexed by the tile-local frequency (f - f0) / N2 "        \
    "instead of f / N2: every frequency tile after the first gets the first tile's "           \
    "outer-DFT rows")

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
