/* dev_stage.h — how the device tiles an op it computes from whole operands
 * (gather, dynamic-(update-)slice, scatter, sort), and the VMEM buffer each
 * tile is built in.
 *
 * Tiling: the config's output tile is laid over the op's own result from
 * the minor end (the op's last dimension takes the config's last tile
 * extent, and so on), clamped to the op's extents; dimensions the config
 * does not reach take extent 1, one grid step each.  Tiles are visited in
 * row-major order of the tile grid.  So the config decides how the op's
 * work is cut, as it does for the fused elementwise paths.
 *
 * Staging: a tile is built in a VMEM buffer (a dev_hbm: redzones before and
 * after, a shadow per element) that is poisoned before every tile.  After
 * the tile, a damaged redzone is a runtime error naming the buffer, and so
 * is an element the tile should have written but did not (it still holds
 * poison).  Only then is the tile copied out.
 */
#ifndef TUNE_DEV_STAGE_H
#define TUNE_DEV_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_config.h"
#include "dev_hbm.h"

typedef struct dev_tiling {
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int64_t tile[HLO_MAX_RANK];  /* extent of a full tile */
  int64_t ntile[HLO_MAX_RANK]; /* tiles along each dimension */
  int64_t ntiles;              /* tiles in all */
  int64_t volume;              /* elements of a full tile */
} dev_tiling;

/* cfg NULL: one tile covering everything. */
void dev_tiling_plan(dev_tiling *t, int rank, const int64_t *dims, const dev_config *cfg);
/* The origin and extent of tile k (0 <= k < ntiles); returns its element
 * count (a ragged edge tile is smaller). */
int64_t dev_tiling_box(const dev_tiling *t, int64_t k, int64_t *lo, int64_t *n);

typedef struct dev_stage {
  dev_hbm vmem;
  int64_t want; /* elements the current tile must write */
} dev_stage;

/* A VMEM buffer of cap elements of type t.  0, or -1 when out of memory. */
int dev_stage_open(dev_stage *s, const char *name, hlo_etype t, int64_t cap);
void dev_stage_close(dev_stage *s);
/* The dma-race defect (dev_defect.h) in a staged lowering.  The box a
 * tile stages is one fetch through a ring of cfg.buf VMEM buffers: fetch
 * f + buf reuses fetch f's buffer, and the faulty schedule issues it
 * without waiting until fetch f's reads are done.  Whether it lands first
 * depends on timing, decided as in the executor's window ring
 * (dev_dma.c): a draw in [0, 64) from the run's jitter seed, per stream
 * and fetch, below the 16 units a tile computes for.  The tile then
 * computes on fetch f + buf's data. */
typedef struct dev_race {
  bool on;       /* the defect is active for this op */
  int buf;       /* the config's buf */
  uint64_t seed; /* the run's jitter seed */
} dev_race;

/* The fetch whose data fetch f of nfetch is computed on: f, or f + buf
 * when the defect is on and the later transfer wins. */
int64_t dev_race_source(const dev_race *r, uint64_t stream, int64_t f, int64_t nfetch);

/* Copies array v into dst (an HBM buffer of v's type and dims) tile by
 * tile as cfg cuts it, each tile fetched into a VMEM stage and written
 * out: one fetch per tile through the ring of `race` (stream names the
 * ring), so under dma-race a tile may receive the tile buf further on,
 * element by element in that tile's layout.  0, or -1 with why. */
int dev_stage_copy_tiled(dev_hbm *dst, const hlo_value *v, const dev_config *cfg, const dev_race *race,
                         uint64_t stream, char *why, size_t why_len);

/* Starts a tile of n <= cap elements: everything is poisoned. */
void dev_stage_begin(dev_stage *s, int64_t n);
/* Stores one element (vmem.esz bytes) at offset off of the tile; an offset
 * past either end lands in a redzone (dev_hbm_store).  -1 for a wild store
 * beyond the redzones. */
int dev_stage_put(dev_stage *s, int64_t off, const void *src);
/* Stores n contiguous elements at offsets off .. off + n - 1, all inside
 * the tile's buffer (a row: the caller has checked its bounds, so no
 * redzone is in reach). */
void dev_stage_put_run(dev_stage *s, int64_t off, const void *src, int64_t n);
/* The tile is complete: redzones intact and its n elements written.  0, or
 * -1 with why ("redzone write: ..." or "uninitialized read: ..."). */
int dev_stage_end(const dev_stage *s, char *why, size_t why_len);
/* Copies a finished tile (elements row-major over box lo/n) to its place
 * in dst, a dense row-major array of t's dims and the stage's type. */
void dev_stage_copy_out(const dev_stage *s, const dev_tiling *t, const int64_t *lo, const int64_t *n, void *dst);
/* Element i of the tile's data. */
static inline const void *dev_stage_at(const dev_stage *s, int64_t i) {
  return s->vmem.data + (size_t)i * s->vmem.esz;
}

#endif
