/* dev_config.h — one candidate configuration of a fusion on the device.
 *
 * Canonical text, one line, fields always in this order and always present:
 *
 *   tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts
 *
 *   tile   output tile per output dimension, outermost first ('x'-joined);
 *          a scalar output has tile=1
 *   k      reduction chunk along the fusion's reduction (0: no reduction)
 *   buf    VMEM buffers per operand window, 1..4
 *   order  grid loop order, outermost loop first: one digit per output
 *          dimension and 'k' for the reduction loop (absent when k=0)
 *   pack   packing factor: how many independent accumulators are interleaved
 *          along the reduction (1, 2, 4)
 *   prec   f32 dot precision policy: default (1 bf16 pass), high (3), highest (6)
 *   flags  comma-separated lowering flags in the fixed order below, or none
 *
 * print(parse(s)) == s for every canonical s, and the fingerprint is a hash
 * of the canonical text, so it is stable across runs, machines and versions
 * as long as the text form is.
 */
#ifndef TUNE_DEV_CONFIG_H
#define TUNE_DEV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_error.h"
#include "hlo/hlo_numerics.h"

#define DEV_MAX_RANK 8

/* The passes are numerics the reference emulates too, so their enum lives
 * in the HLO layer (hlo_numerics.h); these are the device's names for it. */
typedef hlo_num_precision dev_precision;
#define DEV_PREC_DEFAULT HLO_NUM_PREC_DEFAULT /* f32 dot operands rounded to bf16, one pass */
#define DEV_PREC_HIGH HLO_NUM_PREC_HIGH       /* 3 bf16 passes */
#define DEV_PREC_HIGHEST HLO_NUM_PREC_HIGHEST /* 6 bf16 passes */

/* Lowering flags.  Text names in this order: */
#define DEV_FLAG_LIST(X)                                 \
  X(FUSE_CONVERTS, "fuse-converts")     /* converts inside the fusion round in registers */ \
  X(SPLIT_REDUCTION, "split-reduction") /* chunks reduce to partials, combined at the end */ \
  X(VEC_SCATTER, "vec-scatter")         /* vectorised singleton scatter */ \
  X(TWO_STAGE_SORT, "two-stage-sort")   /* sort lanes, then merge across lanes */ \
  X(FOUR_STEP, "four-step")             /* fft as inner DFTs, twiddles, outer DFTs (dev_fft.h) */

enum {
#define X(e, name) DEV_FLAG_BIT_##e,
  DEV_FLAG_LIST(X)
#undef X
  DEV_FLAG_COUNT
};
enum {
#define X(e, name) DEV_FLAG_##e = 1u << DEV_FLAG_BIT_##e,
  DEV_FLAG_LIST(X)
#undef X
};

typedef struct dev_config {
  int rank;                       /* output rank tiled (0 for a scalar) */
  int64_t tile[DEV_MAX_RANK];
  int64_t k;                      /* reduction chunk; 0 when no reduction */
  int buf;                        /* 1..4 */
  int norder;                     /* rank, plus 1 when k > 0 */
  int order[DEV_MAX_RANK + 1];    /* outermost first; DEV_ORDER_K for k */
  int pack;                       /* 1, 2 or 4 */
  dev_precision prec;
  unsigned flags;                 /* DEV_FLAG_* */
} dev_config;

#define DEV_ORDER_K (-1)
#define DEV_CONFIG_TEXT_MAX 256

/* Writes the canonical text into buf (at least DEV_CONFIG_TEXT_MAX bytes). */
void dev_config_print(const dev_config *c, char *buf, size_t n);
/* Parses canonical text (fields in any order are refused: the form is
 * canonical so that equal configs have equal text).  0 or -1 with err
 * (col = 1-based column of the offending field). */
int dev_config_parse(const char *text, dev_config *out, hlo_error *err);
/* FNV-1a 64 of the canonical text. */
uint64_t dev_config_fingerprint(const dev_config *c);
bool dev_config_equal(const dev_config *a, const dev_config *b);
/* Structural sanity (ranges, order is a permutation); the device checks
 * legality against a fusion and a machine separately. */
int dev_config_validate(const dev_config *c, hlo_error *err);

const char *dev_precision_name(dev_precision p);
const char *dev_flag_name(unsigned flag_bit_index);

#endif
