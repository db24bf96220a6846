/* dev_dma.c — the parameter windows of a run: the ring of VMEM buffers
 * each non-resident parameter is staged in, the DMA model that fills them
 * (and the dma-race defect, which lives in its timing), and the reads the
 * evaluator makes through them.  Apart from the grid because everything
 * here is about where a parameter element is when a step reads it, not
 * about what the step computes.
 */
#include <stdlib.h>
#include <string.h>

#include "dev_backend.h"
#include "dev_exec_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

/* ---- the DMA model -------------------------------------------------------------
 * A transfer issued at time `now` completes at now + latency + jitter, with
 * jitter drawn from the run's seed (xorshift64*).  dma_wait blocks until the
 * transfer completed; the clean device always waits before computing on a
 * slot, so the jitter never changes a result — it only exists so a race
 * model can decide which transfer lands first. */
static uint64_t jitter_next(exec *x) {
  x->rng ^= x->rng >> 12;
  x->rng ^= x->rng << 25;
  x->rng ^= x->rng >> 27;
  return x->rng * 0x2545F4914F6CDD1Dull;
}

/* A transfer's modelled latency beyond its one unit: 0 under the eager
 * timing (dev_backend.h), else a draw in [0, 64). */
static double dma_jitter(exec *x) { return (x->jitter_seed & DEV_JITTER_EAGER) ? 0.0 : (double)(jitter_next(x) % 64); }

/* Copies the block at origin into slot `slot` of window ws: the elements
 * below lim (per dimension: the array's extent, or along a padded
 * dimension the end of the rows the tile reads) and their shadow from HBM,
 * the rest poison.  So a padded window's transfer brings exactly the box
 * its tile reads, and a read outside that box is a read of poison. */
static void dma_issue(exec *x, win_state *ws, int slot, const int64_t *origin, const int64_t *lim) {
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[w->param->parameter_number];
  uint8_t pat[16];
  dev_hbm_pattern(ws->type, pat);
  int r = w->rank;
  int64_t loc[DEV_MAX_RANK] = {0};
  if (r > 0 && w->block[r - 1] > 0) {
    /* Row by row along the minor dimension: the in-bounds prefix of each
     * block row is one contiguous run of HBM, the rest is poison. */
    int64_t row = w->block[r - 1], nrows = ws->belems / row;
    bool clean = true; /* the whole block inside the array */
    for (int d = 0; d < r; d++)
      clean = clean && origin[d] + w->block[d] <= lim[d];
    for (int64_t q = 0; q < nrows; q++) {
      bool inside = true;
      int64_t g = 0;
      for (int d = 0; d < r - 1; d++) {
        int64_t gi = origin[d] + loc[d];
        inside = inside && gi < lim[d];
        g = g * w->dims[d] + gi;
      }
      int64_t valid = inside ? lim[r - 1] - origin[r - 1] : 0;
      valid = valid < 0 ? 0 : valid > row ? row : valid;
      uint8_t *dst = ws->data[slot] + (size_t)(q * row) * ws->esz;
      uint8_t *sh = ws->shadow[slot] + q * row;
      if (valid > 0) {
        g = g * w->dims[r - 1] + origin[r - 1];
        memcpy(dst, h->data + (size_t)g * ws->esz, (size_t)valid * ws->esz);
        if (!clean) /* h->shadow there: parameters are all defined */
          memset(sh, 0, (size_t)valid);
      }
      for (int64_t i = valid; i < row; i++)
        memcpy(dst + (size_t)i * ws->esz, pat, ws->esz);
      if (!clean)
        memset(sh + valid, 1, (size_t)(row - valid));
      hlo_index_next(r - 1, w->block, loc); /* next row */
    }
    ws->clean[slot] = clean;
    ws->ready_at = x->now + 1.0 + dma_jitter(x);
    ws->fetches++;
    return;
  }
  bool clean = true;
  for (int64_t i = 0; i < ws->belems; i++) {
    bool inside = true;
    int64_t g = 0;
    for (int d = 0; d < r; d++) {
      int64_t gi = origin[d] + loc[d];
      inside = inside && gi < lim[d];
      g = g * w->dims[d] + gi;
    }
    uint8_t *dst = ws->data[slot] + (size_t)i * ws->esz;
    if (inside) {
      memcpy(dst, h->data + (size_t)g * ws->esz, ws->esz);
      ws->shadow[slot][i] = 0; /* parameters are all defined */
    } else {
      memcpy(dst, pat, ws->esz);
      ws->shadow[slot][i] = 1;
      clean = false;
    }
    hlo_index_next(r, w->block, loc);
  }
  ws->clean[slot] = clean;
  ws->ready_at = x->now + 1.0 + dma_jitter(x);
  ws->fetches++;
}

static void dma_wait(exec *x, win_state *ws) {
  if (ws->ready_at > x->now)
    x->now = ws->ready_at;
}

/* A well-mixed 64-bit draw for (seed, a, b): splitmix64 finalisation. */
static uint64_t mix3(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Defect dma-race (class: a missing wait in a software pipeline).  With
 * buf >= 2, fetch f + buf of a window reuses the ring slot of fetch f; the
 * faulty schedule issues it without waiting until the steps reading fetch
 * f are done.  Whether it lands first depends on timing: its modelled
 * latency, a draw in [0, 64) from the run's jitter seed per window and
 * fetch, against the 16 time units the step computes for; below that, the
 * slot already holds block f + buf when the step reads it, and keeps it
 * until the slot is fetched again.  The transfer writes only the in-bounds
 * part of its block (the rest of the slot keeps what it held), so the
 * step computes on real data of another tile: a finite wrong result that
 * changes with the seed (nondeterministic). */
static void dma_race(exec *x, int p, win_state *ws) {
  int64_t f = ws->fetches - 1, buf = x->s->cfg.buf;
  if (!ws->plan || f + buf >= ws->nplan)
    return;
  if (!(x->jitter_seed & DEV_JITTER_EAGER) && mix3(x->jitter_seed, (uint64_t)p, (uint64_t)f) % 64 >= 16)
    return;
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[w->param->parameter_number];
  const int64_t *origin = ws->plan + (f + buf) * w->rank;
  int r = w->rank;
  int64_t loc[DEV_MAX_RANK] = {0};
  for (int64_t i = 0; i < ws->belems; i++) {
    bool inside = true;
    int64_t g = 0;
    for (int d = 0; d < r; d++) {
      int64_t gi = origin[d] + loc[d];
      inside = inside && gi < w->dims[d];
      g = g * w->dims[d] + gi;
    }
    if (inside) {
      memcpy(ws->data[ws->cur] + (size_t)i * ws->esz, h->data + (size_t)g * ws->esz, ws->esz);
      ws->shadow[ws->cur][i] = 0;
    }
    hlo_index_next(r, w->block, loc);
  }
}

/* The block origin of window w at the current step, and in lim where the
 * part of the block the step reads ends; false when the step reads nothing
 * of w (the lowering's dev_window_at, which knows where a padded or merged
 * window dimension sits). */
static bool window_box(const exec *x, const dev_window *w, int64_t *origin, int64_t *lim) {
  return dev_window_at(x->s, w, x->t, x->chunk, origin, lim);
}

/* Fetches every non-resident window whose block changed at this step. */
void dev_x_stage_windows(exec *x) {
  for (int p = 0; p < x->nin; p++) {
    win_state *ws = &x->win[p];
    const dev_window *w = ws->w;
    if (!w || !w->param || w->resident || !ws->data)
      continue;
    int64_t origin[DEV_MAX_RANK], lim[DEV_MAX_RANK];
    if (!window_box(x, w, origin, lim))
      continue;
    if (ws->have && memcmp(origin, ws->origin, sizeof(int64_t) * (size_t)w->rank) == 0)
      continue;
    int slot = (int)(ws->fetches % x->s->cfg.buf);
    dma_issue(x, ws, slot, origin, lim);
    dma_wait(x, ws);
    ws->cur = slot;
    ws->have = true;
    memcpy(ws->origin, origin, sizeof origin);
    if (dev_x_on(x, DEV_DEFECT_DMA_RACE))
      dma_race(x, p, ws);
  }
  x->now += 1.0;
}

/* Parameter reads for the elemental evaluator: through the VMEM window. */
void dev_x_window_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  win_state *ws = &x->win[param];
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[param];
  if (w->resident || !ws->data) {
    int64_t off = 0;
    for (int d = 0; d < h->rank; d++)
      off = off * h->dims[d] + idx[d];
    dev_slots_from_host(h->type, h->data, off, n, v);
    memset(poison, 0, (size_t)n); /* parameters are all defined */
    return;
  }
  int r = w->rank;
  int64_t loc = 0;
  bool inside = ws->have;
  for (int d = 0; d < r; d++) {
    int64_t l = idx[d] - ws->origin[d];
    if (l < 0 || l >= w->block[d] || (d == r - 1 && l + n > w->block[d]))
      inside = false;
    loc = loc * w->block[d] + l;
  }
  if (!inside) { /* element by element: the part outside the block is poison */
    for (int64_t i = 0; i < n; i++) {
      int64_t j[DEV_MAX_RANK];
      memcpy(j, idx, sizeof(int64_t) * (size_t)r);
      if (r)
        j[r - 1] += i;
      int64_t l2 = 0;
      bool in = ws->have;
      for (int d = 0; d < r && in; d++) {
        int64_t l = j[d] - ws->origin[d];
        in = l >= 0 && l < w->block[d];
        l2 = l2 * w->block[d] + l;
      }
      if (in) {
        dev_slot_from_host(ws->type, ws->data[ws->cur], l2, &v[i]);
        poison[i] = ws->clean[ws->cur] ? 0 : ws->shadow[ws->cur][l2];
      } else {
        v[i].i = 0;
        poison[i] = 1;
      }
    }
    return;
  }
  dev_slots_from_host(ws->type, ws->data[ws->cur], loc, n, v);
  if (ws->clean[ws->cur])
    memset(poison, 0, (size_t)n);
  else
    memcpy(poison, ws->shadow[ws->cur] + loc, (size_t)n);
}

/* Whether box [lo, lo + n) of an array of dims (all of rank r, the box
 * inside) is one contiguous run of its row-major order: full along every
 * dimension after the first one it does not cover whole, and one element
 * wide along every dimension before it. */
static bool box_contiguous(int r, const int64_t *lo, const int64_t *n, const int64_t *dims) {
  int d = r - 1;
  while (d > 0 && lo[d] == 0 && n[d] == dims[d])
    d--;
  for (int k = 0; k < d; k++)
    if (n[k] != 1)
      return false;
  return true;
}

const float *dev_x_window_f32_box(void *ctx, int param, const int64_t *lo, const int64_t *n) {
  const exec *x = ctx;
  const win_state *ws = &x->win[param];
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[param];
  if (!w)
    return NULL;
  if (w->resident || !ws->data) { /* dev_x_window_read's read of the arguments */
    if (h->type != HLO_F32 || !h->data)
      return NULL;
    int64_t off = 0;
    for (int d = 0; d < h->rank; d++) {
      if (lo[d] < 0 || n[d] <= 0 || lo[d] + n[d] > h->dims[d])
        return NULL;
      off = off * h->dims[d] + lo[d];
    }
    return box_contiguous(h->rank, lo, n, h->dims) ? (const float *)(const void *)h->data + off : NULL;
  }
  /* its read of one block, when every element is defined */
  if (ws->type != HLO_F32 || !ws->have || !ws->clean[ws->cur])
    return NULL;
  int r = w->rank;
  int64_t loc = 0, l[DEV_MAX_RANK];
  for (int d = 0; d < r; d++) {
    l[d] = lo[d] - ws->origin[d];
    if (l[d] < 0 || n[d] <= 0 || l[d] + n[d] > w->block[d])
      return NULL;
    loc = loc * w->block[d] + l[d];
  }
  return box_contiguous(r, l, n, w->block) ? (const float *)(const void *)ws->data[ws->cur] + loc : NULL;
}

const float *dev_x_window_f32(const exec *x, int param, const int64_t *idx, int64_t n) {
  const dev_window *w = x->win[param].w;
  int r = w ? (w->resident || !x->win[param].data ? x->in[param].rank : w->rank) : 0;
  int64_t ns[DEV_MAX_RANK];
  for (int d = 0; d < r; d++)
    ns[d] = d == r - 1 ? n : 1;
  return dev_x_window_f32_box((void *)(uintptr_t)x, param, idx, ns);
}

int dev_x_setup_windows(exec *x) {
  x->win = calloc((size_t)(x->nin ? x->nin : 1), sizeof *x->win);
  if (!x->win)
    return dev_x_fail(x, "out of memory");
  for (int p = 0; p < x->nin && p < x->s->nwin; p++) {
    win_state *ws = &x->win[p];
    const dev_window *w = &x->s->wins[p];
    ws->w = w;
    if (!w->param || w->resident || w->param->shape.type == HLO_TUPLE)
      continue;
    ws->type = w->param->shape.type;
    ws->esz = hlo_etype_host_size(ws->type);
    ws->belems = 1;
    for (int d = 0; d < w->rank; d++)
      ws->belems *= w->block[d];
    int buf = x->s->cfg.buf;
    ws->data = calloc((size_t)buf, sizeof *ws->data);
    ws->shadow = calloc((size_t)buf, sizeof *ws->shadow);
    ws->clean = calloc((size_t)buf, sizeof *ws->clean); /* VMEM starts as poison */
    if (!ws->data || !ws->shadow || !ws->clean)
      return dev_x_fail(x, "out of memory");
    for (int b = 0; b < buf; b++) {
      ws->data[b] = malloc((size_t)(ws->belems ? ws->belems : 1) * ws->esz);
      ws->shadow[b] = malloc((size_t)(ws->belems ? ws->belems : 1));
      if (!ws->data[b] || !ws->shadow[b])
        return dev_x_fail(x, "out of memory");
      /* VMEM starts as poison: a read before the first DMA is caught */
      memset(ws->shadow[b], 1, (size_t)ws->belems);
    }
  }
  return 0;
}

/* dma-race needs to know which block each fetch of a window brings: the
 * grid is walked once without computing. */
int dev_x_plan_fetches(exec *x) {
  int64_t steps = x->s->steps;
  for (int p = 0; p < x->nin; p++) {
    win_state *ws = &x->win[p];
    const dev_window *w = ws->w;
    if (!w || !w->param || w->resident || !ws->data)
      continue;
    ws->plan = malloc(sizeof *ws->plan * (size_t)((steps ? steps : 1) * (w->rank ? w->rank : 1)));
    if (!ws->plan)
      return dev_x_fail(x, "out of memory");
    ws->nplan = 0;
    for (int64_t step = 0; step < steps; step++) {
      int64_t origin[DEV_MAX_RANK], lim[DEV_MAX_RANK];
      dev_x_decode_step(x, step);
      if (!window_box(x, w, origin, lim))
        continue; /* as dev_x_stage_windows: no fetch */
      int64_t *last = ws->plan + (ws->nplan - 1) * w->rank;
      if (ws->nplan > 0 && memcmp(origin, last, sizeof(int64_t) * (size_t)w->rank) == 0)
        continue;
      memcpy(ws->plan + ws->nplan * w->rank, origin, sizeof(int64_t) * (size_t)w->rank);
      ws->nplan++;
    }
  }
  return 0;
}
