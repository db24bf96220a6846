/* dev_exec.c — runs a schedule grid step by grid step (see dev_exec.h).
 *
 * Every step of the device is a named function below, because each is where
 * a modelled miscompilation (dev_defect.h) would live:
 *   dma_issue / dma_wait     the ring of VMEM buffers and the jitter-driven
 *                            completion model (dma-race)
 *   acc_enter                the revisit tracker: first visit or revisit of
 *                            an output window (revisit-no-reinit)
 *   acc_init_window          accumulator initialisation, per pack slot
 *                            (packed-reduce-init0)
 *   chunk_valid_len          the mask of a ragged reduction chunk
 *                            (ragged-chunk-pad)
 *   fold_reduce / fold_dot   accumulation of one chunk (int8-dot-f32-acc)
 *   acc_finalize             pack and split-partial combination
 *   store_tile               the ragged store mask (ragged-store-mask)
 * Compare, convert and dynamic-slice index lowering live in
 * dev_elemental.c (compare_lowering, convert_lowering) and, for the ops the
 * device materialises, in the reference it calls.
 *
 * Defects (dev_defect.h).  A run evaluates once, from the config and the
 * fusion, which of the compiler profile's defects its config triggers
 * (triggered_defects below, one predicate per defect); only those act, each
 * in a clearly named function at its hook point.  A defect whose config
 * condition is not met changes nothing, so every other config stays
 * bit-identical to the clean device.  Symptoms are silent wrong results:
 * no defect makes the run fail (see each function for how a value that a
 * real chip would leave undefined is modelled as a finite stale value).
 */
#include "dev_exec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_num_dot.h"
#include "dev_elemental.h"
#include "dev_exec_fold.h"
#include "dev_exec_variadic.h"
#include "dev_fft.h"
#include "dev_probe.h"
#include "dev_hbm.h"
#include "hlo/hlo_numerics.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_fft.h"

void dev_exec_hooks_none(dev_exec_hooks *h) {
  memset(h, 0, sizeof *h);
  h->skip_tile = -1;
}

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

  dev_hbm *in;                 /* kernel parameters: filled from the
                                  arguments and never stored to, so every
                                  element is defined (their shadow is 0) */
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

__attribute__((format(printf, 2, 3))) static int fail(exec *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->why, x->why_len, fmt, ap);
  va_end(ap);
  return -1;
}

static const hlo_shape *leaf0(const hlo_instr *ins) { return hlo_shape_leaf(&ins->shape, 0); }

/* n elements of host array p (type t) from element off into slots: the
 * per-element dev_slot_from_host, as a typed loop for the common types
 * (every read of a parameter row goes through here). */
static void slots_from_host(hlo_etype t, const void *p, int64_t off, int64_t n, dev_slot *v) {
  switch (t) {
  case HLO_F32: {
    const float *f = (const float *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].f = f[i];
    return;
  }
  case HLO_BF16: {
    const uint16_t *h = (const uint16_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].f = hlo_bf16_to_f32(h[i]);
    return;
  }
  case HLO_S32: {
    const int32_t *q = (const int32_t *)p + off;
    for (int64_t i = 0; i < n; i++)
      v[i].i = q[i];
    return;
  }
  default:
    for (int64_t i = 0; i < n; i++)
      dev_slot_from_host(t, p, off + i, &v[i]);
    return;
  }
}

/* The inverse for a row being stored: dev_slot_to_host per element. */
static void slots_to_host(hlo_etype t, const dev_slot *v, int64_t n, void *p, int64_t off) {
  if (t == HLO_F32) {
    float *f = (float *)p + off;
    for (int64_t i = 0; i < n; i++)
      f[i] = (float)v[i].f;
    return;
  }
  for (int64_t i = 0; i < n; i++)
    dev_slot_to_host(t, v[i], p, off + i);
}

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

/* Copies the block at origin into slot `slot` of window ws: in-bounds
 * elements and their shadow from HBM, the rest poison. */
static void dma_issue(exec *x, win_state *ws, int slot, const int64_t *origin) {
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
      clean = clean && origin[d] + w->block[d] <= w->dims[d];
    for (int64_t q = 0; q < nrows; q++) {
      bool inside = true;
      int64_t g = 0;
      for (int d = 0; d < r - 1; d++) {
        int64_t gi = origin[d] + loc[d];
        inside = inside && gi < w->dims[d];
        g = g * w->dims[d] + gi;
      }
      int64_t valid = inside ? w->dims[r - 1] - origin[r - 1] : 0;
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
      for (int d = r - 2; d >= 0; d--) {
        if (++loc[d] < w->block[d])
          break;
        loc[d] = 0;
      }
    }
    ws->clean[slot] = clean;
    ws->ready_at = x->now + 1.0 + (double)(jitter_next(x) % 64);
    ws->fetches++;
    return;
  }
  bool clean = true;
  for (int64_t i = 0; i < ws->belems; i++) {
    bool inside = true;
    int64_t g = 0;
    for (int d = 0; d < r; d++) {
      int64_t gi = origin[d] + loc[d];
      inside = inside && gi < w->dims[d];
      g = g * w->dims[d] + gi;
    }
    uint8_t *dst = ws->data[slot] + (size_t)i * ws->esz;
    if (inside) {
      memcpy(dst, h->data + (size_t)g * ws->esz, ws->esz);
      ws->shadow[slot][i] = h->shadow[g];
    } else {
      memcpy(dst, pat, ws->esz);
      ws->shadow[slot][i] = 1;
      clean = false;
    }
    for (int d = r - 1; d >= 0; d--) {
      if (++loc[d] < w->block[d])
        break;
      loc[d] = 0;
    }
  }
  ws->clean[slot] = clean;
  ws->ready_at = x->now + 1.0 + (double)(jitter_next(x) % 64);
  ws->fetches++;
}

static void dma_wait(exec *x, win_state *ws) {
  if (ws->ready_at > x->now)
    x->now = ws->ready_at;
}

static bool on(const exec *x, dev_defect d) { return (x->active >> d) & 1u; }

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
  if (!ws->plan || f + buf >= ws->nplan || mix3(x->jitter_seed, (uint64_t)p, (uint64_t)f) % 64 >= 16)
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
      ws->shadow[ws->cur][i] = h->shadow[g];
    }
    for (int d = r - 1; d >= 0; d--) {
      if (++loc[d] < w->block[d])
        break;
      loc[d] = 0;
    }
  }
}

/* The block origin of window w at the current step. */
static void window_origin(const exec *x, const dev_window *w, int64_t *origin) {
  for (int d = 0; d < w->rank; d++) {
    int fo = w->follows[d];
    origin[d] = fo >= 0 ? x->t[fo] * w->block[d] : fo == DEV_FOLLOW_K ? x->chunk * w->block[d] : 0;
  }
}

/* Fetches every non-resident window whose block changed at this step. */
static void stage_windows(exec *x) {
  for (int p = 0; p < x->nin; p++) {
    win_state *ws = &x->win[p];
    const dev_window *w = ws->w;
    if (!w || !w->param || w->resident || !ws->data)
      continue;
    int64_t origin[DEV_MAX_RANK];
    window_origin(x, w, origin);
    if (ws->have && memcmp(origin, ws->origin, sizeof(int64_t) * (size_t)w->rank) == 0)
      continue;
    int slot = (int)(ws->fetches % x->s->cfg.buf);
    dma_issue(x, ws, slot, origin);
    dma_wait(x, ws);
    ws->cur = slot;
    ws->have = true;
    memcpy(ws->origin, origin, sizeof origin);
    if (on(x, DEV_DEFECT_DMA_RACE))
      dma_race(x, p, ws);
  }
  x->now += 1.0;
}

/* Parameter reads for the elemental evaluator: through the VMEM window. */
static void window_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  win_state *ws = &x->win[param];
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[param];
  if (w->resident || !ws->data) {
    int64_t off = 0;
    for (int d = 0; d < h->rank; d++)
      off = off * h->dims[d] + idx[d];
    slots_from_host(h->type, h->data, off, n, v);
    memcpy(poison, h->shadow + off, (size_t)n);
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
  slots_from_host(ws->type, ws->data[ws->cur], loc, n, v);
  if (ws->clean[ws->cur])
    memset(poison, 0, (size_t)n);
  else
    memcpy(poison, ws->shadow[ws->cur] + loc, (size_t)n);
}

/* ---- tiles and regions -------------------------------------------------------------- */

static int64_t tile_id(const exec *x) {
  int64_t id = 0;
  for (int d = 0; d < x->f->rank; d++)
    id = id * x->s->tiles[d] + x->t[d];
  return id;
}

static void tile_box(const exec *x, dev_box *b) {
  memset(b, 0, sizeof *b);
  b->rank = x->f->rank;
  for (int d = 0; d < b->rank; d++) {
    int64_t tile = x->s->cfg.tile[d];
    b->lo[d] = x->t[d] * tile;
    b->n[d] = x->f->dims[d] - b->lo[d] < tile ? x->f->dims[d] - b->lo[d] : tile;
  }
}

/* The hero result box the current output tile needs. */
static void hero_region(const exec *x, dev_box *b) {
  const hlo_instr *h = x->f->hero;
  const hlo_shape *hs = leaf0(h);
  memset(b, 0, sizeof *b);
  b->rank = hs->rank;
  b->count = 1;
  for (int d = 0; d < hs->rank; d++) {
    int fo = x->follow[h->index * HLO_MAX_RANK + d];
    if (fo >= 0 && fo < x->f->rank) {
      int64_t tile = x->s->cfg.tile[fo];
      b->lo[d] = x->t[fo] * tile;
      b->n[d] = hs->dims[d] - b->lo[d] < tile ? hs->dims[d] - b->lo[d] : tile;
    } else {
      b->lo[d] = 0;
      b->n[d] = hs->dims[d];
    }
    b->count *= b->n[d];
  }
}

/* ---- accumulators ------------------------------------------------------------------ */

static int64_t acc_span(const exec *x) { return x->rcap * x->P; }

static bool is_float_t(hlo_etype t) { return hlo_etype_class(t) == HLO_CLASS_FLOAT; }

/* Starts a fresh output window: accumulator 0 of each element holds the
 * init value; the other pack slots start empty (the first element that
 * lands in one becomes its value), so the init value is applied exactly
 * once whatever P is.  A dot starts every slot at zero. */
static int acc_init_window(exec *x) {
  int64_t n = x->region.count;
  int nv = x->nv;
  dev_slot init[DEV_VRED_MAX];
  uint8_t ipoison = 0;
  if (x->is_dot) {
    if (is_float_t(x->acc_t))
      init[0].f = 0.0;
    else
      init[0].i = 0;
  } else {
    /* the inits are the hero's operands nv..2nv-1 (one for a plain reduce) */
    for (int j = 0; j < nv; j++) {
      dev_box want = {.rank = 0, .count = 1}, b;
      if (dev_elem_eval(x->el, x->f->hero->operands[nv + j], &want, false, window_read, NULL, x, &b, x->why,
                        x->why_len) != 0)
        return -1;
      init[j] = b.v[0];
      ipoison |= b.poison[0];
      dev_elem_box_release(x->el, &b);
    }
  }
  /* Defect packed-reduce-init0 (class: a loop-boundary check emitted for
   * index 0 only; the paper's packed windowed-reduction bug): only pack
   * slot 0 is initialised, slots 1..P-1 keep what VMEM holds, i.e. the
   * previous output window's partials (slot for slot, all nv values of a
   * variadic reduce's slot); the first window of a run finds them cleared
   * and is right. */
  int slots = on(x, DEV_DEFECT_PACKED_REDUCE_INIT0) ? 1 : x->P;
  for (int64_t i = 0; i < n; i++)
    for (int p = 0; p < slots; p++) {
      int64_t k = i * x->P + p;
      bool live = x->is_dot || p == 0;
      for (int j = 0; j < nv; j++)
        x->acc[k * nv + j] = init[j];
      x->acc_valid[k] = live;
      x->acc_poison[k] = live ? ipoison : 0;
    }
  if (x->split)
    for (int64_t i = 0; i < n * x->s->nk; i++)
      x->part_valid[i] = 0, x->part_poison[i] = 0;
  return 0;
}

static int ensure_spill(exec *x) {
  if (x->spill)
    return 0;
  int64_t per = acc_span(x) + (x->split ? x->rcap * x->s->nk : 0);
  size_t n = (size_t)(x->ntiles * per);
  x->spill = malloc((n ? n * (size_t)x->nv : 1) * sizeof *x->spill);
  x->spill_valid = malloc(n ? n : 1);
  x->spill_poison = malloc(n ? n : 1);
  return x->spill && x->spill_valid && x->spill_poison ? 0 : fail(x, "out of memory");
}

/* Saves (dir = 0) or restores (dir = 1) the VMEM accumulators of tile id. */
static int acc_move(exec *x, int64_t id, int dir) {
  if (ensure_spill(x) != 0)
    return -1;
  int64_t a = acc_span(x), pp = x->split ? x->rcap * x->s->nk : 0, nv = x->nv;
  int64_t base = id * (a + pp);
  dev_slot *sv = x->spill + base * nv;
  uint8_t *svv = x->spill_valid + base, *svp = x->spill_poison + base;
  if (dir == 0) {
    memcpy(sv, x->acc, sizeof *sv * (size_t)(a * nv));
    memcpy(svv, x->acc_valid, (size_t)a);
    memcpy(svp, x->acc_poison, (size_t)a);
    if (pp) {
      memcpy(sv + a * nv, x->part, sizeof *sv * (size_t)(pp * nv));
      memcpy(svv + a, x->part_valid, (size_t)pp);
      memcpy(svp + a, x->part_poison, (size_t)pp);
    }
  } else {
    memcpy(x->acc, sv, sizeof *sv * (size_t)(a * nv));
    memcpy(x->acc_valid, svv, (size_t)a);
    memcpy(x->acc_poison, svp, (size_t)a);
    if (pp) {
      memcpy(x->part, sv + a * nv, sizeof *sv * (size_t)(pp * nv));
      memcpy(x->part_valid, svv + a, (size_t)pp);
      memcpy(x->part_poison, svp + a, (size_t)pp);
    }
  }
  return 0;
}

/* The revisit tracker: makes the current tile's accumulators live. */
static int acc_enter(exec *x) {
  int64_t id = tile_id(x);
  if (id == x->acc_tile)
    return 0;
  if (x->acc_tile >= 0 && x->acc_open && acc_move(x, x->acc_tile, 0) != 0)
    return -1;
  hero_region(x, &x->region);
  int64_t prev = x->acc_tile;
  x->acc_tile = id;
  x->acc_open = true;
  if (x->visited[id])
    return acc_move(x, id, 1);
  x->visited[id] = 1;
  /* Defect revisit-no-reinit (class: a guard folded away by a wrong
   * loop-bound simplification): the revisit tracker is elided, so a new
   * window starts from the accumulators in VMEM — the partials of the
   * window that was live before it — instead of the init value.  The first
   * window of the run has nothing before it and is initialised. */
  if (prev >= 0 && on(x, DEV_DEFECT_REVISIT_NO_REINIT))
    return 0;
  return acc_init_window(x);
}

/* Reduction elements of the current chunk that are real (not padding of a
 * ragged last chunk): the chunk's mask.  (ragged-chunk-pad folds the rest
 * of a ragged chunk too: fold_chunk_padding.) */
static int64_t chunk_valid_len(const exec *x) {
  int64_t r0 = x->chunk * x->kchunk;
  int64_t end = r0 + x->kchunk < x->f->k_total ? r0 + x->kchunk : x->f->k_total;
  return end - r0;
}

static int64_t floor_mod(int64_t a, int64_t m) {
  int64_t r = m ? a % m : 0;
  return r < 0 ? r + m : r;
}

/* ragged-chunk-pad: parameter reads of the padding lanes of an unmasked
 * ragged chunk.  They hold what an unmasked copy of the block brings in:
 * the data that follows the line in HBM (for a minor reduced dimension the
 * next row; past the array's end the address wraps to its start), all of
 * it finite input data.  A request's position 0 along a dimension that
 * follows the reduction stands for reduction position x->pad_shift. */
static void pad_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  const dev_window *w = param < x->s->nwin ? &x->s->wins[param] : NULL;
  const dev_hbm *h = &x->in[param];
  int64_t g = 0;
  for (int d = 0; d < h->rank; d++) {
    int64_t i = idx[d];
    if (w && d < w->rank && w->follows[d] == DEV_FOLLOW_K)
      i += x->pad_shift;
    g = g * h->dims[d] + i;
  }
  for (int64_t j = 0; j < n; j++) {
    if (!h->data || h->count <= 0) {
      v[j].i = 0;
      poison[j] = 1;
      continue;
    }
    int64_t at = floor_mod(g + j, h->count);
    dev_slot_from_host(h->type, h->data, at, &v[j]);
    poison[j] = h->shadow[at];
  }
}

/* Folds value v (poisoned p) of reduction element r into the accumulators of
 * region element ro. */
static void fold_one(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t ro, int64_t r, dev_slot v,
                     uint8_t p) {
  int64_t k = ro * x->P + r % x->P;
  if (!valid[k]) {
    acc[k] = v;
    valid[k] = 1;
    poison[k] = p;
    return;
  }
  acc[k] = dev_elem_reduce_step(x->red_op, x->acc_t, acc[k], v);
  poison[k] |= p;
}

/* The bounding box, in the coordinates of an operand with reduction dims
 * red[0..nred), of flattened reduction positions [r0, r1). */
static void chunk_bbox(const int64_t *rsz, int nred, int64_t r0, int64_t r1, int64_t *lo, int64_t *n) {
  int64_t a[HLO_MAX_RANK], b[HLO_MAX_RANK];
  int64_t q0 = r0, q1 = r1 - 1;
  for (int j = nred - 1; j >= 0; j--) {
    a[j] = q0 % rsz[j], q0 /= rsz[j];
    b[j] = q1 % rsz[j], q1 /= rsz[j];
  }
  bool full = false;
  for (int j = 0; j < nred; j++) {
    if (full) {
      lo[j] = 0, n[j] = rsz[j];
    } else {
      lo[j] = a[j], n[j] = b[j] - a[j] + 1;
      if (a[j] != b[j])
        full = true;
    }
  }
}

static void unflatten_red(const int64_t *rsz, int nred, int64_t r, int64_t *out) {
  for (int j = nred - 1; j >= 0; j--) {
    out[j] = r % rsz[j];
    r /= rsz[j];
  }
}

/* One f32 reduction step, exactly dev_elem_reduce_step's for HLO_F32 (its
 * round_to(F32) of a float is the float itself). */
static inline float red_f32(hlo_opcode op, float a, float b) {
  switch (op) {
  case HLO_OP_ADD: return a + b;
  case HLO_OP_MULTIPLY: return a * b;
  case HLO_OP_MAXIMUM: return a != a ? a : b != b ? b : b > a || (b == a && signbit(a)) ? b : a;
  case HLO_OP_MINIMUM: return a != a ? a : b != b ? b : b < a || (b == a && signbit(b)) ? b : a;
  default: return a;
  }
}

/* Where fold_reduce_rows reads a box of the reduce operand: its values as
 * slots (an evaluated box) or as host f32 (straight from a VMEM window or
 * HBM, see direct_source), its poison bytes, and the element strides of
 * both, relative to the box origin lo. */
typedef struct fold_src {
  const dev_slot *v;
  const float *f;
  const uint8_t *p;            /* NULL: no element is poisoned */
  int rank;
  int64_t lo[HLO_MAX_RANK];
  int64_t st[HLO_MAX_RANK];
} fold_src;

static void src_of_box(const dev_box *b, fold_src *src) {
  memset(src, 0, sizeof *src);
  src->v = b->v;
  src->p = b->poison;
  src->rank = b->rank;
  int64_t st = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    src->lo[d] = b->lo[d];
    src->st[d] = st;
    st *= b->n[d];
  }
}

/* The reduce operand read in place when it is an f32 parameter whose
 * requested box lies wholly inside what window_read would copy it from:
 * the current block of its VMEM window (every row of the box inside it,
 * so window_read takes its row copy, never its element-by-element edge
 * path), or HBM for a resident (or unstaged) parameter.  The values are
 * the very floats and shadow bytes window_read would copy into the box
 * (slots_from_host widens f32 to double exactly and the fold narrows it
 * back), so folding from here gives the same bits without the copy. */
static bool direct_source(const exec *x, const hlo_instr *o, const dev_box *want, fold_src *src) {
  if (o->op != HLO_OP_PARAMETER || o->parameter_number < 0 || o->parameter_number >= x->nin ||
      o->parameter_number >= x->s->nwin)
    return false;
  int param = (int)o->parameter_number;
  const win_state *ws = &x->win[param];
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[param];
  if (!w || !h->data || h->type != HLO_F32 || h->rank != want->rank)
    return false;
  memset(src, 0, sizeof *src);
  src->rank = want->rank;
  int64_t st = 1, off = 0;
  if (w->resident || !ws->data) {
    for (int d = want->rank - 1; d >= 0; d--) {
      if (want->lo[d] < 0 || want->lo[d] + want->n[d] > h->dims[d])
        return false;
      src->lo[d] = want->lo[d];
      src->st[d] = st;
      off += want->lo[d] * st;
      st *= h->dims[d];
    }
    src->f = (const float *)(const void *)h->data + off;
    src->p = NULL; /* parameters are all defined */
    return true;
  }
  if (!ws->have || ws->type != HLO_F32 || w->rank != want->rank)
    return false;
  for (int d = want->rank - 1; d >= 0; d--) {
    int64_t l = want->lo[d] - ws->origin[d];
    if (l < 0 || l + want->n[d] > w->block[d])
      return false;
    src->lo[d] = want->lo[d];
    src->st[d] = st;
    off += l * st;
    st *= w->block[d];
  }
  src->f = (const float *)(const void *)ws->data[ws->cur] + off;
  src->p = ws->clean[ws->cur] ? NULL : ws->shadow[ws->cur] + off;
  return true;
}

/* The OR of n poison bytes p[0], p[s], ...: word-wise when contiguous. */
static uint8_t or_bytes(const uint8_t *p, int64_t n, int64_t s) {
  uint8_t z = 0;
  int64_t i = 0;
  if (s == 1) {
    uint64_t w = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t t;
      memcpy(&t, p + i, 8);
      w |= t;
    }
    w |= w >> 32;
    w |= w >> 16;
    w |= w >> 8;
    z = (uint8_t)w;
  }
  for (; i < n; i++)
    z |= p[i * s];
  return z;
}

/* f32 add/multiply/max/min with one pack slot, for region elements ro0 ..
 * ro0 + g - 1 (g <= FOLD_GROUP) whose lines start at base[0..g) of src,
 * elements s apart, len > 0 of them.  Each line is folded in order into
 * its accumulator (dev_exec_fold.h: side by side, in vector lanes when the
 * lines are rows of one block); a region element without a live
 * accumulator starts from its line's first element, as fold_one does. */
#define FOLD_GROUP 16
static void fold_f32_group(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, const fold_src *src,
                           int64_t ro0, int g, const int64_t *base, int64_t s, int64_t len) {
  float a[FOLD_GROUP];
  int64_t b1[FOLD_GROUP];
  for (int q = 0; q < g; q++) {
    float e = src->f ? src->f[base[q]] : (float)src->v[base[q]].f;
    a[q] = valid[ro0 + q] ? dev_fold_f32_step(x->red_op, (float)acc[ro0 + q].f, e) : e;
    b1[q] = base[q] + s; /* the rest of the line */
  }
  if (len > 1) {
    int64_t L = g > 1 ? base[1] - base[0] : 0;
    bool rows = src->f && s == 1 && L >= len;
    for (int q = 2; rows && q < g; q++)
      rows = base[q] - base[0] == q * L;
    if (rows)
      dev_fold_f32_rows(x->red_op, a, g, src->f + b1[0], L, len - 1);
    else
      for (int h = 0; h < g; h += 8) {
        int m = g - h < 8 ? g - h : 8;
        if (src->f)
          dev_fold_f32_lines(x->red_op, a + h, m, src->f, b1 + h, s, len - 1);
        else
          dev_fold_f32_slot_lines(x->red_op, a + h, m, src->v, b1 + h, s, len - 1);
      }
  }
  for (int q = 0; q < g; q++) {
    uint8_t pz = valid[ro0 + q] ? poison[ro0 + q] : 0;
    acc[ro0 + q].f = a[q];
    valid[ro0 + q] = 1;
    poison[ro0 + q] = src->p ? pz | or_bytes(src->p + base[q], len, s) : pz;
  }
}

/* fold_reduce_range for a hero with one reduced dimension rd: the positions
 * of one region element lie on a line of the source with a fixed stride,
 * so they are walked by offset (no per-element division or index), and
 * f32 add/multiply/max/min folds run in registers, 8 region elements side
 * by side.  Same elements, same order, same pack slots ((label0 + i) mod
 * P) and the same arithmetic as fold_one. */
static void fold_reduce_rows(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, const fold_src *src, int rd,
                             const int *kept, int nkept, int64_t r0, int64_t len, int64_t label0) {
  const int64_t *stride = src->st;
  bool f32 = x->acc_t == HLO_F32 && (x->red_op == HLO_OP_ADD || x->red_op == HLO_OP_MULTIPLY ||
                                     x->red_op == HLO_OP_MAXIMUM || x->red_op == HLO_OP_MINIMUM);
  int P = x->P;
  int64_t kidx[HLO_MAX_RANK];
  for (int j = 0; j < nkept; j++)
    kidx[j] = x->region.lo[j];
  int64_t s = stride[rd];
  int64_t gbase[FOLD_GROUP];
  int g = 0;
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    int64_t base = (r0 - src->lo[rd]) * stride[rd];
    for (int j = 0; j < nkept; j++)
      base += (kidx[j] - src->lo[kept[j]]) * stride[kept[j]];
    if (f32 && P == 1) {
      if (len > 0) {
        gbase[g++] = base;
        if (g == FOLD_GROUP || ro + 1 == x->region.count) {
          fold_f32_group(x, acc, valid, poison, src, ro + 1 - g, g, gbase, s, len);
          g = 0;
        }
      }
    } else {
      const dev_slot *v = src->v + base;
      const uint8_t *pv = src->p + base;
      int q = (int)(label0 % P);
      for (int64_t r = 0; r < len; r++) {
        int64_t k = ro * P + q;
        dev_slot e = v[r * s];
        uint8_t p = pv[r * s];
        if (!valid[k]) {
          acc[k] = e;
          valid[k] = 1;
          poison[k] = p;
        } else {
          if (f32)
            acc[k].f = red_f32(x->red_op, (float)acc[k].f, (float)e.f);
          else
            acc[k] = dev_elem_reduce_step(x->red_op, x->acc_t, acc[k], e);
          poison[k] |= p;
        }
        if (++q == P)
          q = 0;
      }
    }
    for (int j = nkept - 1; j >= 0; j--) {
      if (++kidx[j] < x->region.lo[j] + x->region.n[j])
        break;
      kidx[j] = x->region.lo[j];
    }
  }
}

/* How a reduce hero's first operand splits into the dimensions the
 * output keeps and the ones it reduces (with their sizes, in order). */
typedef struct hero_dims {
  int red[HLO_MAX_RANK], nred, kept[HLO_MAX_RANK], nkept;
  int64_t rsz[HLO_MAX_RANK];
} hero_dims;

/* Fills *hd for the hero and returns the box of its first operand that
 * reduction positions [r0, r0 + len) of the current output region read:
 * the region along the kept dimensions, the chunk's bounding box along the
 * reduced ones. */
static dev_box chunk_window(const exec *x, int64_t r0, int64_t len, hero_dims *hd) {
  const hlo_instr *h = x->f->hero;
  const hlo_shape *os = leaf0(h->operands[0]);
  *hd = (hero_dims){.nred = 0};
  for (int d = 0; d < os->rank; d++) {
    bool is_red = false;
    for (int j = 0; j < h->attrs.dimensions.n; j++)
      is_red = is_red || h->attrs.dimensions.v[j] == d;
    if (is_red)
      hd->rsz[hd->nred] = os->dims[d], hd->red[hd->nred++] = d;
    else
      hd->kept[hd->nkept++] = d;
  }
  dev_box want = {.rank = os->rank};
  int64_t rlo[HLO_MAX_RANK], rn[HLO_MAX_RANK];
  chunk_bbox(hd->rsz, hd->nred, r0, r0 + len, rlo, rn);
  for (int j = 0; j < hd->nkept; j++)
    want.lo[hd->kept[j]] = x->region.lo[j], want.n[hd->kept[j]] = x->region.n[j];
  for (int j = 0; j < hd->nred; j++)
    want.lo[hd->red[j]] = rlo[j], want.n[hd->red[j]] = rn[j];
  return want;
}

/* Reduction positions [r0, r0 + len) of a reduce hero, read through pread;
 * position r0 + i goes to pack slot (label0 + i) mod P. */
static int fold_reduce_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                             int64_t label0, dev_param_read *pread) {
  const hlo_instr *o = x->f->hero->operands[0];
  const hlo_shape *os = leaf0(o);
  if (len <= 0)
    return 0;
  hero_dims hd;
  dev_box want = chunk_window(x, r0, len, &hd), b;
  fold_src src;
  bool f32_p1 = x->acc_t == HLO_F32 && x->P == 1 &&
                (x->red_op == HLO_OP_ADD || x->red_op == HLO_OP_MULTIPLY || x->red_op == HLO_OP_MAXIMUM ||
                 x->red_op == HLO_OP_MINIMUM);
  if (hd.nred == 1 && f32_p1 && pread == window_read && direct_source(x, o, &want, &src)) {
    fold_reduce_rows(x, acc, valid, poison, &src, hd.red[0], hd.kept, hd.nkept, r0, len, label0);
    return 0;
  }
  if (dev_elem_eval(x->el, o, &want, false, pread, NULL, x, &b, x->why, x->why_len) != 0)
    return -1;
  if (hd.nred == 1) {
    src_of_box(&b, &src);
    fold_reduce_rows(x, acc, valid, poison, &src, hd.red[0], hd.kept, hd.nkept, r0, len, label0);
    dev_elem_box_release(x->el, &b);
    return 0;
  }
  int64_t ridx[HLO_MAX_RANK], oidx[HLO_MAX_RANK], kidx[HLO_MAX_RANK];
  for (int j = 0; j < hd.nkept; j++)
    kidx[j] = x->region.lo[j];
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    for (int j = 0; j < hd.nkept; j++)
      oidx[hd.kept[j]] = kidx[j];
    for (int64_t r = r0; r < r0 + len; r++) {
      unflatten_red(hd.rsz, hd.nred, r, ridx);
      for (int j = 0; j < hd.nred; j++)
        oidx[hd.red[j]] = ridx[j];
      int64_t off = 0;
      for (int d = 0; d < os->rank; d++)
        off = off * b.n[d] + (oidx[d] - b.lo[d]);
      fold_one(x, acc, valid, poison, ro, label0 + (r - r0), b.v[off], b.poison[off]);
    }
    for (int j = hd.nkept - 1; j >= 0; j--) {
      if (++kidx[j] < x->region.lo[j] + x->region.n[j])
        break;
      kidx[j] = x->region.lo[j];
    }
  }
  dev_elem_box_release(x->el, &b);
  return 0;
}

/* Reduction positions [r0, r0 + len) of a variadic reduce hero (x->vred),
 * read through pread; position r0 + i goes to pack slot (label0 + i) mod
 * P, as in fold_reduce_range.  The N operands are evaluated over the same
 * box; then, position by position in order, every region element's slot
 * takes one reducer step over its N accumulators and the N elements (the
 * region elements side by side in the reducer's lanes).  A slot that holds
 * nothing yet takes the elements as they are.  A slot's poison is that of
 * any of its values. */
static int fold_vred_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                           int64_t label0, dev_param_read *pread) {
  const hlo_instr *h = x->f->hero;
  const hlo_shape *os = leaf0(h->operands[0]);
  int nv = x->nv;
  if (len <= 0)
    return 0;
  hero_dims hd;
  dev_box want = chunk_window(x, r0, len, &hd), b[DEV_VRED_MAX];
  int nb = 0, rc = 0;
  for (; nb < nv; nb++)
    if (dev_elem_eval(x->el, h->operands[nb], &want, false, pread, NULL, x, &b[nb], x->why, x->why_len) != 0) {
      rc = -1;
      break;
    }
  for (int j = 1; rc == 0 && j < nv; j++)
    for (int d = 0; d < os->rank; d++)
      if (b[j].lo[d] != b[0].lo[d] || b[j].n[d] != b[0].n[d])
        rc = fail(x, "%s: the operands of the variadic reduce were evaluated over different boxes", h->name);
  int64_t n = x->region.count;
  int64_t *koff = malloc(sizeof *koff * (size_t)(n ? n : 1));
  dev_slot *xt = malloc(sizeof *xt * (size_t)(n ? n * nv : 1));
  dev_slot **ap = malloc(sizeof *ap * (size_t)(n ? n : 1));
  if (rc == 0 && (!koff || !xt || !ap))
    rc = fail(x, "out of memory");
  if (rc == 0) {
    int64_t stride[HLO_MAX_RANK], kidx[HLO_MAX_RANK], ridx[HLO_MAX_RANK];
    int64_t st = 1;
    for (int d = os->rank - 1; d >= 0; d--)
      stride[d] = st, st *= b[0].n[d];
    /* box offset of each region element's hd.kept index */
    for (int j = 0; j < hd.nkept; j++)
      kidx[j] = x->region.lo[j];
    for (int64_t ro = 0; ro < n; ro++) {
      koff[ro] = 0;
      for (int j = 0; j < hd.nkept; j++)
        koff[ro] += (kidx[j] - b[0].lo[hd.kept[j]]) * stride[hd.kept[j]];
      for (int j = hd.nkept - 1; j >= 0; j--) {
        if (++kidx[j] < x->region.lo[j] + x->region.n[j])
          break;
        kidx[j] = x->region.lo[j];
      }
    }
    for (int64_t r = r0; r < r0 + len; r++) {
      unflatten_red(hd.rsz, hd.nred, r, ridx);
      int64_t roff = 0;
      for (int j = 0; j < hd.nred; j++)
        roff += (ridx[j] - b[0].lo[hd.red[j]]) * stride[hd.red[j]];
      int64_t p = (label0 + (r - r0)) % x->P, m = 0;
      for (int64_t ro = 0; ro < n; ro++) {
        int64_t k = ro * x->P + p, off = koff[ro] + roff;
        uint8_t pz = 0;
        for (int j = 0; j < nv; j++)
          pz |= b[j].poison[off];
        if (!valid[k]) {
          for (int j = 0; j < nv; j++)
            acc[k * nv + j] = b[j].v[off];
          valid[k] = 1;
          poison[k] = pz;
          continue;
        }
        poison[k] |= pz;
        ap[m] = acc + k * nv;
        for (int j = 0; j < nv; j++)
          xt[m * nv + j] = b[j].v[off];
        m++;
      }
      dev_vred_step(x->vred, m, ap, xt);
    }
  }
  free(koff);
  free(xt);
  free(ap);
  while (nb-- > 0)
    dev_elem_box_release(x->el, &b[nb]);
  return rc;
}

/* The fold of a reduce hero: variadic or single-operand. */
static int fold_red_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                          int64_t label0, dev_param_read *pread) {
  return x->vred ? fold_vred_range(x, acc, valid, poison, r0, len, label0, pread)
                 : fold_reduce_range(x, acc, valid, poison, r0, len, label0, pread);
}

/* Result position of dot operand side's dim d (see dev_elemental.c). */
static int dot_rdim(const hlo_instr *ins, int side, int d, bool *contr) {
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  const hlo_ints *batch = side ? &dn->rhs_batch : &dn->lhs_batch;
  const hlo_ints *cl = side ? &dn->rhs_contracting : &dn->lhs_contracting;
  *contr = false;
  for (int i = 0; i < cl->n; i++)
    if (cl->v[i] == d) {
      *contr = true;
      return i;
    }
  for (int i = 0; i < batch->n; i++)
    if (batch->v[i] == d)
      return i;
  int pos = batch->n;
  if (side) {
    const hlo_shape *ls = leaf0(ins->operands[0]);
    for (int j = 0; j < ls->rank; j++) {
      bool skip = false;
      for (int i = 0; i < dn->lhs_batch.n; i++)
        skip = skip || dn->lhs_batch.v[i] == j;
      for (int i = 0; i < dn->lhs_contracting.n; i++)
        skip = skip || dn->lhs_contracting.v[i] == j;
      pos += !skip;
    }
  }
  for (int j = 0; j < d; j++) {
    bool skip = false;
    for (int i = 0; i < batch->n; i++)
      skip = skip || batch->v[i] == j;
    for (int i = 0; i < cl->n; i++)
      skip = skip || cl->v[i] == j;
    pos += !skip;
  }
  return pos;
}

/* Defect int8-dot-f32-acc (class: a fallback code path with a narrower
 * accumulator than the op's type).  An s8 x s8 -> s32 dot whose chunk k
 * is not a multiple of 4 cannot use the packed 4-way int8 MXU path; the
 * fallback accumulates the exact integer products in an f32 register, so
 * every partial sum is rounded to 24 significant bits: sums beyond 2^24
 * lose their low bits. */
static int64_t int8_dot_f32_step(int64_t acc, int64_t prod) {
  float f = (float)acc + (float)prod;
  return (int64_t)f;
}

/* The OR of each contracting line's poison flags, at the line's first
 * element (its contracting coordinate 0): one pass over the box, instead
 * of one per output element that reads the line.  The box is
 * [outer][contracting ncon][inner stride]; lines[off] for other offsets is
 * the OR of the line's rest. */
static void line_poison(const dev_box *b, int cd, int64_t stride, uint8_t *lines) {
  int64_t ncon = b->n[cd], outer = ncon * stride > 0 ? b->count / (ncon * stride) : 0;
  for (int64_t o = 0; o < outer; o++) {
    int64_t base = o * ncon * stride;
    memcpy(lines + base + (ncon - 1) * stride, b->poison + base + (ncon - 1) * stride, (size_t)stride);
    for (int64_t c = ncon - 2; c >= 0; c--)
      for (int64_t i = 0; i < stride; i++) {
        int64_t off = base + c * stride + i;
        lines[off] = (uint8_t)(b->poison[off] | lines[off + stride]);
      }
  }
}

/* The f32 dot operand value of a box slot of type t, as fold_dot_fast
 * converts it. */
static float dot_operand(dev_slot v, hlo_eclass cls) {
  double dv = cls == HLO_CLASS_FLOAT ? v.f : cls == HLO_CLASS_UINT ? (double)(uint64_t)v.i : (double)v.i;
  return (float)dv;
}

/* fold_dot_fast's f32 case, rows of the region at a time through
 * hlo_num_dot_f32_lanes, which gives each output element the scalar loop's
 * bits (see hlo_num_dot.h).  With P pack slots, slot q of an output
 * element takes positions r0 + r with (label0 + r) mod P == q in order: a
 * line of its own, P elements apart.  The operands are split once
 * per chunk as fold_dot_fast does, into one plane per bf16 part.  Returns
 * 1 when done, 0 when an operand part is a NaN (then the scalar loop must
 * run, see the header), -1 on failure. */
static int dot_rows_f32(exec *x, const dev_box *bx, const hlo_shape *const *sh, const int64_t *cd,
                        const int64_t *stride, dev_precision prec, int64_t r0, int64_t len, int64_t label0,
                        dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  const hlo_instr *h = x->f->hero;
  int np = hlo_num_dot_parts(prec);
  int R = x->region.rank;
  int64_t nl = R > 0 ? x->region.n[R - 1] : 1;
  float *planes[2] = {NULL, NULL}, *row = malloc(sizeof(float) * (size_t)nl);
  uint8_t *lines[2] = {NULL, NULL};
  int rc = row ? 1 : -1;
  for (int side = 0; rc == 1 && side < 2; side++) {
    int64_t n = bx[side].count;
    planes[side] = malloc(sizeof(float) * (size_t)(n ? n : 1) * (size_t)np);
    lines[side] = bx[side].poison ? malloc((size_t)(n ? n : 1)) : NULL;
    if (!planes[side] || (bx[side].poison && !lines[side])) {
      rc = -1;
      break;
    }
    hlo_eclass cls = hlo_etype_class(sh[side]->type);
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
      float t[3];
      hlo_num_dot_split(dot_operand(bx[side].v[i], cls), prec, t);
      for (int p = 0; p < np; p++) {
        planes[side][p * n + i] = t[p];
        nan = nan || t[p] != t[p];
      }
    }
    if (nan) {
      rc = 0;
      goto done;
    }
    if (lines[side])
      line_poison(&bx[side], (int)cd[side], stride[side], lines[side]);
  }
  if (rc != 1) {
    rc = fail(x, "out of memory");
    goto done;
  }
  int64_t P = x->P;
  hlo_num_dot_planes pl = {.sa = stride[0] * P, .sb = stride[1] * P, .prec = prec};
  for (int p = 0; p < np; p++) {
    pl.a[p] = planes[0] + p * bx[0].count;
    pl.b[p] = planes[1] + p * bx[1].count;
  }
  /* How far one step along the region's last dimension moves each side. */
  int64_t step[2] = {0, 0};
  for (int side = 0; R > 0 && side < 2; side++) {
    int64_t s = 1;
    for (int d = sh[side]->rank - 1; d >= 0; d--) {
      bool c;
      int rd = dot_rdim(h, side, d, &c);
      if (!c && rd == R - 1)
        step[side] += s;
      s *= bx[side].n[d];
    }
  }
  int64_t idx[HLO_MAX_RANK], oi[HLO_MAX_RANK];
  for (int d = 0; d < R; d++)
    idx[d] = x->region.lo[d];
  for (int64_t ro = 0; ro < x->region.count; ro += nl) {
    int64_t base[2];
    for (int side = 0; side < 2; side++) {
      int64_t off = 0;
      for (int d = 0; d < sh[side]->rank; d++) {
        bool c;
        int rd = dot_rdim(h, side, d, &c);
        oi[d] = c ? r0 : idx[rd];
        off = off * bx[side].n[d] + (oi[d] - bx[side].lo[d]);
      }
      base[side] = off;
    }
    for (int64_t q = 0; q < P; q++) {
      int64_t first = ((q - label0 % P) % P + P) % P; /* the slot's first position */
      if (first >= len)
        continue; /* no product reaches this slot: it stays as it was */
      int64_t cnt = (len - first + P - 1) / P;
      int64_t a0 = base[0] + first * stride[0], b0 = base[1] + first * stride[1];
      bool nan_acc = false;
      for (int64_t j = 0; j < nl; j++) {
        row[j] = (float)acc[(ro + j) * P + q].f;
        nan_acc = nan_acc || row[j] != row[j];
      }
      if (nan_acc) /* see hlo_num_dot.h: NaN payloads need the scalar order */
        for (int64_t j = 0; j < nl; j++)
          row[j] = hlo_num_dot_f32_line(&pl, row[j], a0 + j * step[0], b0 + j * step[1], cnt);
      else
        hlo_num_dot_f32_lanes(&pl, row, nl, a0, step[0], b0, step[1], cnt);
      for (int64_t j = 0; j < nl; j++) {
        acc[(ro + j) * P + q].f = row[j];
        valid[(ro + j) * P + q] = 1;
      }
    }
    /* Every slot of an element gets the poison of its whole line. */
    for (int64_t j = 0; j < nl; j++) {
      uint8_t pz = (uint8_t)((lines[0] ? lines[0][base[0] + j * step[0]] : 0) |
                             (lines[1] ? lines[1][base[1] + j * step[1]] : 0));
      for (int64_t q = 0; q < P; q++)
        poison[(ro + j) * P + q] |= pz;
    }
    for (int d = R - 2; d >= 0; d--) {
      if (++idx[d] < x->region.lo[d] + x->region.n[d])
        break;
      idx[d] = x->region.lo[d];
    }
  }
done:
  free(row);
  for (int side = 0; side < 2; side++) {
    free(planes[side]);
    free(lines[side]);
  }
  return rc;
}

/* The common case of fold_dot — one contracting dimension, f32 or integer
 * compute — with each operand converted once per chunk (split into its bf16
 * parts, or widened to the integer compute type) instead of once per
 * product.  Same products, same order, same roundings as the general path. */
static int fold_dot_fast(exec *x, const dev_box *bx, const hlo_shape *const *sh, dev_precision prec, int64_t r0,
                         int64_t len, int64_t label0, dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  const hlo_instr *h = x->f->hero;
  hlo_etype ct = x->acc_t;
  bool f32_int_acc = on(x, DEV_DEFECT_INT8_DOT_F32_ACC);
  int64_t cd[2] = {h->attrs.dot.lhs_contracting.v[0], h->attrs.dot.rhs_contracting.v[0]};
  int64_t stride[2];
  float *parts[2] = {NULL, NULL};
  uint64_t *ints[2] = {NULL, NULL};
  int rc = 0;
  for (int side = 0; side < 2; side++) {
    stride[side] = 1;
    for (int d = (int)cd[side] + 1; d < bx[side].rank; d++)
      stride[side] *= bx[side].n[d];
  }
  if (ct == HLO_F32) {
    int done = dot_rows_f32(x, bx, sh, cd, stride, prec, r0, len, label0, acc, valid, poison);
    if (done != 0)
      return done < 0 ? -1 : 0;
  }
  for (int side = 0; side < 2; side++) {
    size_t n = (size_t)(bx[side].count ? bx[side].count : 1);
    if (ct == HLO_F32) {
      parts[side] = malloc(n * 3 * sizeof(float));
      if (!parts[side]) {
        rc = fail(x, "out of memory");
        continue;
      }
      for (int64_t i = 0; i < bx[side].count; i++) {
        dev_slot v = bx[side].v[i];
        double dv = hlo_etype_class(sh[side]->type) == HLO_CLASS_FLOAT ? v.f
                    : hlo_etype_class(sh[side]->type) == HLO_CLASS_UINT ? (double)(uint64_t)v.i
                                                                         : (double)v.i;
        hlo_num_dot_split((float)dv, prec, parts[side] + 3 * i);
      }
    } else {
      ints[side] = malloc(n * sizeof(uint64_t));
      if (!ints[side]) {
        rc = fail(x, "out of memory");
        continue;
      }
      dev_slot zero = {.i = 0};
      for (int64_t i = 0; i < bx[side].count; i++) {
        /* x * 1 through the step function gives the widened operand */
        dev_slot one = {.i = 1};
        ints[side][i] = (uint64_t)dev_elem_dot_step(ct, x->res_t, zero, bx[side].v[i], sh[side]->type, one,
                                                    x->res_t, prec).i;
      }
    }
  }
  int64_t idx[HLO_MAX_RANK], oi[HLO_MAX_RANK];
  for (int d = 0; d < x->region.rank; d++)
    idx[d] = x->region.lo[d];
  for (int64_t ro = 0; rc == 0 && ro < x->region.count; ro++) {
    int64_t base[2];
    for (int side = 0; side < 2; side++) {
      int64_t off = 0;
      for (int d = 0; d < sh[side]->rank; d++) {
        bool c;
        int rd = dot_rdim(h, side, d, &c);
        oi[d] = c ? r0 : idx[rd];
        off = off * bx[side].n[d] + (oi[d] - bx[side].lo[d]);
      }
      base[side] = off;
    }
    uint8_t p = 0;
    for (int64_t r = 0; r < len; r++) {
      int64_t a = base[0] + r * stride[0], b = base[1] + r * stride[1];
      p |= bx[0].poison[a] | bx[1].poison[b];
    }
    if (ct == HLO_F32 && x->P == 1) {
      /* one running f32 accumulator: keep it in a register */
      float f = (float)acc[ro].f;
      const float *pa = parts[0] + 3 * base[0], *pb = parts[1] + 3 * base[1];
      int64_t sa = 3 * stride[0], sb = 3 * stride[1];
      if (prec == DEV_PREC_DEFAULT)
        for (int64_t r = 0; r < len; r++)
          f = hlo_num_ftz_f32(f + hlo_num_ftz_f32(pa[r * sa] * pb[r * sb]));
      else
        for (int64_t r = 0; r < len; r++)
          f = hlo_num_ftz_f32(f + hlo_num_dot_parts_product(pa + r * sa, pb + r * sb, prec));
      acc[ro].f = f;
      valid[ro] = 1;
    } else {
      for (int64_t r = 0; r < len; r++) {
        int64_t a = base[0] + r * stride[0], b = base[1] + r * stride[1];
        int64_t k = ro * x->P + (label0 + r) % x->P;
        if (ct == HLO_F32)
          acc[k].f = hlo_num_ftz_f32((float)acc[k].f + hlo_num_dot_parts_product(parts[0] + 3 * a, parts[1] + 3 * b, prec));
        else if (f32_int_acc)
          acc[k].i = int8_dot_f32_step(acc[k].i, (int64_t)(ints[0][a] * ints[1][b]));
        else
          acc[k].i = (int64_t)((uint64_t)acc[k].i + ints[0][a] * ints[1][b]);
        valid[k] = 1;
      }
    }
    for (int q = 0; q < x->P; q++)
      poison[ro * x->P + q] |= p;
    for (int d = x->region.rank - 1; d >= 0; d--) {
      if (++idx[d] < x->region.lo[d] + x->region.n[d])
        break;
      idx[d] = x->region.lo[d];
    }
  }
  for (int side = 0; side < 2; side++) {
    free(parts[side]);
    free(ints[side]);
  }
  return rc;
}

/* Contracting positions [r0, r0 + len) of a dot hero, read through pread:
 * lhs and rhs blocks, then per output element the products in contracting
 * order, position r0 + i into pack slot (label0 + i) mod P. */
static int fold_dot_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                          int64_t label0, dev_param_read *pread) {
  const hlo_instr *h = x->f->hero;
  int nc = h->attrs.dot.lhs_contracting.n;
  const hlo_shape *sh[2] = {leaf0(h->operands[0]), leaf0(h->operands[1])};
  int64_t csz[HLO_MAX_RANK];
  for (int j = 0; j < nc; j++)
    csz[j] = sh[0]->dims[h->attrs.dot.lhs_contracting.v[j]];
  if (len <= 0)
    return 0;
  int64_t clo[HLO_MAX_RANK], cn[HLO_MAX_RANK];
  chunk_bbox(csz, nc, r0, r0 + len, clo, cn);
  dev_box bx[2];
  for (int side = 0; side < 2; side++) {
    dev_box want = {.rank = sh[side]->rank};
    for (int d = 0; d < sh[side]->rank; d++) {
      bool c;
      int rd = dot_rdim(h, side, d, &c);
      if (c)
        want.lo[d] = clo[rd], want.n[d] = cn[rd];
      else
        want.lo[d] = x->region.lo[rd], want.n[d] = x->region.n[rd];
    }
    if (dev_elem_eval(x->el, h->operands[side], &want, false, pread, NULL, x, &bx[side], x->why,
                      x->why_len) != 0) {
      if (side)
        dev_box_free(&bx[0]);
      return -1;
    }
  }
  hlo_etype ct = x->acc_t;
  dev_precision prec = hlo_num_dot_precision(h, x->s->cfg.prec);
  if (nc == 1 && ct != HLO_F64) {
    int rc = fold_dot_fast(x, bx, sh, prec, r0, len, label0, acc, valid, poison);
    dev_elem_box_release(x->el, &bx[0]);
    dev_elem_box_release(x->el, &bx[1]);
    return rc;
  }
  int64_t idx[HLO_MAX_RANK], ci[HLO_MAX_RANK], oi[2][HLO_MAX_RANK];
  for (int d = 0; d < x->region.rank; d++)
    idx[d] = x->region.lo[d];
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    for (int side = 0; side < 2; side++)
      for (int d = 0; d < sh[side]->rank; d++) {
        bool c;
        int rd = dot_rdim(h, side, d, &c);
        oi[side][d] = c ? -1 - rd : idx[rd];
      }
    for (int64_t r = r0; r < r0 + len; r++) {
      unflatten_red(csz, nc, r, ci);
      int64_t off[2];
      uint8_t p = 0;
      for (int side = 0; side < 2; side++) {
        off[side] = 0;
        for (int d = 0; d < sh[side]->rank; d++) {
          int64_t v = oi[side][d] < 0 ? ci[-1 - oi[side][d]] : oi[side][d];
          off[side] = off[side] * bx[side].n[d] + (v - bx[side].lo[d]);
        }
        p |= bx[side].poison[off[side]];
      }
      int64_t k = ro * x->P + (label0 + (r - r0)) % x->P;
      if (on(x, DEV_DEFECT_INT8_DOT_F32_ACC)) {
        dev_slot zero = {.i = 0};
        dev_slot prod = dev_elem_dot_step(ct, x->res_t, zero, bx[0].v[off[0]], sh[0]->type, bx[1].v[off[1]],
                                          sh[1]->type, prec);
        acc[k].i = int8_dot_f32_step(acc[k].i, prod.i);
      } else {
        acc[k] = dev_elem_dot_step(ct, x->res_t, acc[k], bx[0].v[off[0]], sh[0]->type, bx[1].v[off[1]],
                                   sh[1]->type, prec);
      }
      valid[k] = 1;
      poison[k] |= p;
    }
    for (int d = x->region.rank - 1; d >= 0; d--) {
      if (++idx[d] < x->region.lo[d] + x->region.n[d])
        break;
      idx[d] = x->region.lo[d];
    }
  }
  dev_elem_box_release(x->el, &bx[0]);
  dev_elem_box_release(x->el, &bx[1]);
  return 0;
}

/* Defect ragged-chunk-pad (class: a missing mask on a ragged edge).  The
 * last, ragged chunk is not masked: after its real elements, its padding
 * positions [k_total, chunk end) are folded too, with the values the
 * unmasked lanes hold (pad_read), through the fused ops that feed the
 * reduction (ops that do not read a parameter, an iota say, see the
 * padding lanes at positions 0, 1, ... of the padding).  end is the end of
 * the chunk's real elements.  A variadic reduce folds the padding of all
 * its operands, lane by lane. */
static int fold_chunk_padding(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t end) {
  int64_t kt = x->f->k_total, chunk_end = x->chunk * x->kchunk + x->kchunk;
  if (end != kt || chunk_end <= kt)
    return 0;
  for (int64_t done = 0; done < chunk_end - kt;) {
    int64_t piece = chunk_end - kt - done < kt ? chunk_end - kt - done : kt;
    x->pad_shift = kt + done;
    int rc = x->is_dot ? fold_dot_range(x, acc, valid, poison, 0, piece, kt + done, pad_read)
                       : fold_red_range(x, acc, valid, poison, 0, piece, kt + done, pad_read);
    if (rc != 0)
      return rc;
    done += piece;
  }
  return 0;
}

/* One chunk of the hero (reduce or dot): its real elements through the
 * VMEM windows.  Split reduction folds into fresh per-chunk pack slots,
 * combined into the chunk's partial at its end. */
static int fold_chunk(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  int64_t r0 = x->chunk * x->kchunk, len = chunk_valid_len(x);
  int rc = x->is_dot ? fold_dot_range(x, acc, valid, poison, r0, len, r0, window_read)
                     : fold_red_range(x, acc, valid, poison, r0, len, r0, window_read);
  if (rc == 0 && on(x, DEV_DEFECT_RAGGED_CHUNK_PAD))
    rc = fold_chunk_padding(x, acc, valid, poison, r0 + len);
  return rc;
}

/* Combines pack slots 0..P-1 of region element i into one value. */
static bool combine_packs(exec *x, const dev_slot *acc, const uint8_t *valid, const uint8_t *poison, int64_t i,
                          dev_slot *out, uint8_t *p) {
  bool any = false;
  if (x->vred) { /* out holds nv values; slot k's are acc[k * nv ...] */
    int nv = x->nv;
    for (int q = 0; q < x->P; q++) {
      int64_t k = i * x->P + q;
      if (!valid[k])
        continue;
      if (!any) {
        memcpy(out, acc + k * nv, sizeof *out * (size_t)nv);
        *p = poison[k];
        any = true;
      } else {
        dev_vred_step(x->vred, 1, &out, acc + k * nv);
        *p |= poison[k];
      }
    }
    return any;
  }
  for (int q = 0; q < x->P; q++) {
    int64_t k = i * x->P + q;
    if (!valid[k])
      continue;
    if (!any) {
      *out = acc[k];
      *p = poison[k];
      any = true;
    } else {
      *out = x->is_dot ? dev_elem_dot_combine(x->acc_t, *out, acc[k])
                       : dev_elem_reduce_step(x->red_op, x->acc_t, *out, acc[k]);
      *p |= poison[k];
    }
  }
  return any;
}

static int compute_chunk(exec *x) {
  if (!x->split)
    return fold_chunk(x, x->acc, x->acc_valid, x->acc_poison);
  /* split: fresh slots for this chunk, then its partial */
  int64_t n = x->region.count * x->P;
  dev_slot *a = malloc(sizeof *a * (size_t)(n ? n * x->nv : 1));
  uint8_t *v = calloc((size_t)(n ? n : 1), 1), *p = calloc((size_t)(n ? n : 1), 1);
  int rc = a && v && p ? 0 : fail(x, "out of memory");
  if (rc == 0 && x->is_dot)
    for (int64_t i = 0; i < n; i++) {
      if (is_float_t(x->acc_t))
        a[i].f = 0.0;
      else
        a[i].i = 0;
      v[i] = 1;
    }
  if (rc == 0)
    rc = fold_chunk(x, a, v, p);
  for (int64_t i = 0; rc == 0 && i < x->region.count; i++) {
    int64_t k = i * x->s->nk + x->chunk;
    x->part_valid[k] = combine_packs(x, a, v, p, i, &x->part[k * x->nv], &x->part_poison[k]);
  }
  free(a);
  free(v);
  free(p);
  return rc;
}

/* acc_finalize of a variadic reduce: x->fin holds nv values per element. */
static void acc_finalize_vred(exec *x) {
  int nv = x->nv;
  for (int64_t i = 0; i < x->region.count; i++) {
    dev_slot *r = x->fin + i * nv;
    uint8_t p = 0;
    if (!x->split) {
      combine_packs(x, x->acc, x->acc_valid, x->acc_poison, i, r, &p);
    } else {
      memcpy(r, x->acc + i * x->P * nv, sizeof *r * (size_t)nv);
      p = x->acc_poison[i * x->P];
      for (int64_t c = 0; c < x->s->nk; c++) {
        int64_t k = i * x->s->nk + c;
        if (!x->part_valid[k])
          continue;
        dev_vred_step(x->vred, 1, &r, x->part + k * nv);
        p |= x->part_poison[k];
      }
    }
    x->fin_poison[i] = p;
  }
  x->acc_open = false;
}

/* The hero's final value per region element. */
static void acc_finalize(exec *x) {
  if (x->vred) {
    acc_finalize_vred(x);
    return;
  }
  for (int64_t i = 0; i < x->region.count; i++) {
    dev_slot r;
    uint8_t p = 0;
    if (!x->split) {
      combine_packs(x, x->acc, x->acc_valid, x->acc_poison, i, &r, &p);
    } else {
      /* init (slot 0 of acc), then the partials in chunk order */
      r = x->acc[i * x->P];
      p = x->acc_poison[i * x->P];
      for (int64_t c = 0; c < x->s->nk; c++) {
        int64_t k = i * x->s->nk + c;
        if (!x->part_valid[k])
          continue;
        r = x->is_dot ? dev_elem_dot_combine(x->acc_t, r, x->part[k])
                      : dev_elem_reduce_step(x->red_op, x->acc_t, r, x->part[k]);
        p |= x->part_poison[k];
      }
    }
    x->fin[i] = x->is_dot ? dev_elem_dot_finish(x->acc_t, x->res_t, r) : r;
    x->fin_poison[i] = p;
  }
  x->acc_open = false;
}

static void hero_read(void *ctx, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  const dev_box *b = &x->region;
  int64_t off = 0;
  bool inside = true;
  for (int d = 0; d < b->rank; d++) {
    int64_t l = idx[d] - b->lo[d];
    if (l < 0 || l >= b->n[d] || (d == b->rank - 1 && l + n > b->n[d]))
      inside = false;
    off = off * b->n[d] + l;
  }
  for (int64_t i = 0; i < n; i++) {
    if (inside) {
      v[i] = x->fin[off + i];
      poison[i] = x->fin_poison[off + i];
    } else {
      v[i].i = 0;
      poison[i] = 1;
    }
  }
}

/* ---- output --------------------------------------------------------------------- */

/* Defect ragged-store-mask (class: an off-by-one in an edge mask).  The
 * store mask of a tile that is ragged along the second-minor output
 * dimension is one sublane short: the last valid row of the array is not
 * written by the tile.  A real output buffer keeps whatever it held there;
 * the simulated one is poisoned before the run, which would turn the
 * finding into an "uninitialized read", so the model leaves a finite stale
 * value instead: what the row one tile above holds (the same sublane of the
 * previous tile along that dimension, always stored before: tile indices
 * along a dimension grow in every loop order), or the row just above when
 * the ragged tile is the only one.  Returns the flat offset of that stale
 * source for the element at idx of a box of leaf h, -1 when the element is
 * stored normally. */
static int64_t ragged_store_stale_source(const exec *x, const dev_hbm *h, const dev_box *b, const int64_t *idx) {
  if (!on(x, DEV_DEFECT_RAGGED_STORE_MASK) || b->rank < 2 || b->rank != x->f->rank)
    return -1;
  int d = b->rank - 2;
  int64_t tile = x->s->cfg.tile[d], rows = h->dims[d], last = rows - 1;
  if (tile <= 0 || rows % tile == 0 || idx[d] != last || b->lo[d] + b->n[d] != rows || b->n[d] >= tile)
    return -1;
  int64_t src = last - tile >= 0 ? last - tile : last - 1;
  if (src < 0)
    return -1;
  int64_t off = 0;
  for (int k = 0; k < h->rank; k++)
    off = off * h->dims[k] + (k == d ? src : idx[k]);
  return off;
}

/* Leaf k (depth first) of a possibly nested tuple value, NULL if none. */
static const hlo_value *value_leaf(const hlo_value *v, int *k) {
  if (v->type != HLO_TUPLE)
    return (*k)-- == 0 ? v : NULL;
  for (int i = 0; i < v->ntuple; i++) {
    const hlo_value *l = value_leaf(v->elems[i], k);
    if (l)
      return l;
  }
  return NULL;
}

/* Stores element i (at flat offset off) of leaf j: the value at src, or,
 * under ragged-store-mask, the stale element at stale. */
static int store_elem(exec *x, int j, int64_t off, const void *src, bool poisoned, int64_t stale) {
  dev_hbm *h = &x->out[j];
  uint8_t tmp[16];
  if (stale >= 0) {
    memcpy(tmp, h->data + (size_t)stale * h->esz, h->esz);
    src = tmp;
    poisoned = h->shadow[stale] != 0;
  }
  if (dev_hbm_store(h, off, src, poisoned) != 0)
    return fail(x, "wild store: %s element offset %lld is beyond its redzones", h->name, (long long)off);
  return 0;
}

/* Writes box b of leaf j to HBM: only the valid (in-array) part is stored,
 * the ragged remainder of a tile is discarded. */
static int store_tile(exec *x, int j, const dev_box *b) {
  dev_hbm *h = &x->out[j];
  uint8_t tmp[16];
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  /* The common case, row by row: no shifted stores (test hook), no stale
   * rows (ragged-store-mask), and a box inside the array, so every store is
   * in bounds and dev_hbm_store would just copy the element and set its
   * shadow. */
  bool inside = b->rank == h->rank && b->rank > 0 && b->n[b->rank - 1] > 0;
  for (int d = 0; inside && d < b->rank; d++)
    inside = b->lo[d] >= 0 && b->lo[d] + b->n[d] <= h->dims[d];
  if (inside && x->hooks.store_shift == 0 && !on(x, DEV_DEFECT_RAGGED_STORE_MASK)) {
    int64_t row = b->n[b->rank - 1];
    for (int64_t i = 0; i < b->count; i += row) {
      int64_t off = 0;
      for (int d = 0; d < b->rank; d++)
        off = off * h->dims[d] + idx[d];
      slots_to_host(h->type, b->v + i, row, h->data, off);
      for (int64_t k = 0; k < row; k++)
        h->shadow[off + k] = b->poison[i + k] != 0;
      for (int d = b->rank - 2; d >= 0; d--) {
        if (++idx[d] < b->lo[d] + b->n[d])
          break;
        idx[d] = b->lo[d];
      }
    }
    return 0;
  }
  for (int64_t i = 0; i < b->count; i++) {
    int64_t off = 0;
    for (int d = 0; d < b->rank; d++)
      off = off * h->dims[d] + idx[d];
    off += x->hooks.store_shift;
    dev_slot_to_host(h->type, b->v[i], tmp, 0);
    if (store_elem(x, j, off, tmp, b->poison[i] != 0, ragged_store_stale_source(x, h, b, idx)) != 0)
      return -1;
    for (int d = b->rank - 1; d >= 0; d--) {
      if (++idx[d] < b->lo[d] + b->n[d])
        break;
      idx[d] = b->lo[d];
    }
  }
  return 0;
}

/* Stores box b of leaf j straight from a materialised value (any element
 * type, complex included): the bytes are copied, nothing is converted. */
static int store_value(exec *x, int j, const hlo_value *v, const dev_box *b) {
  dev_hbm *h = &x->out[j];
  if (v->type != h->type || v->count != h->count)
    return fail(x, "%s: materialised value does not match the output", h->name);
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  int64_t count = 1;
  for (int d = 0; d < b->rank; d++)
    count *= b->n[d];
  for (int64_t i = 0; i < count; i++) {
    int64_t off = 0;
    for (int d = 0; d < b->rank; d++)
      off = off * h->dims[d] + idx[d];
    if (store_elem(x, j, off + x->hooks.store_shift, (const char *)v->data + (size_t)off * v->elem_size, false,
                   x->out_tiled[j] ? ragged_store_stale_source(x, h, b, idx) : -1) != 0)
      return -1;
    for (int d = b->rank - 1; d >= 0; d--) {
      if (++idx[d] < b->lo[d] + b->n[d])
        break;
      idx[d] = b->lo[d];
    }
  }
  return 0;
}

/* Elements per strip of an output tile (see eval_store). */
#define STRIP_ELEMS 2048

/* Evaluates leaf j over box want and stores it.  A large tile is evaluated
 * and stored in strips of whole rows along its first dimension, each of
 * about STRIP_ELEMS elements: the evaluator keeps a dense box per fused
 * instruction, and a strip's boxes stay in cache where a whole tile's
 * (8 bytes of value and one of poison per element per instruction) stream
 * through memory.  A box's values do not depend on the box around it (the
 * evaluator infers every operand box from the requested one; parameter
 * rows are read whole from the same VMEM block), so the bits are those of
 * one evaluation of the tile.  Strips are not used where the store itself
 * looks at the tile's extent: the store-shift hook and ragged-store-mask,
 * whose stale row depends on the tile being ragged. */
static int eval_store(exec *x, int j, const dev_box *want, bool hero_leaf) {
  const hlo_value *mv = dev_elem_value(x->el, x->out_node[j]);
  if (x->out_sub[j] >= 0) {
    int k = x->out_sub[j];
    const hlo_value *leaf = mv ? value_leaf(mv, &k) : NULL;
    if (!leaf)
      return fail(x, "output %d: leaf %d of %s is not materialised", j, x->out_sub[j], x->out_node[j]->name);
    return store_value(x, j, leaf, want);
  }
  if (mv)
    return store_value(x, j, mv, want);
  int64_t count = 1;
  for (int d = 0; d < want->rank; d++)
    count *= want->n[d];
  int64_t rows = want->rank > 0 ? want->n[0] : 1, per = rows > 0 ? count / rows : 1;
  int64_t step = rows;
  if (x->out_tiled[j] && want->rank > 0 && x->hooks.store_shift == 0 && !on(x, DEV_DEFECT_RAGGED_STORE_MASK))
    step = per > 0 && per < STRIP_ELEMS ? STRIP_ELEMS / per : 1;
  if (step < 1)
    step = 1;
  for (int64_t r = 0; r < rows || (rows == 0 && r == 0); r += step) {
    dev_box sub = *want, b;
    if (want->rank > 0) {
      sub.lo[0] = want->lo[0] + r;
      sub.n[0] = rows - r < step ? rows - r : step;
      sub.count = sub.n[0] * per;
    }
    if (dev_elem_eval(x->el, x->out_node[j], &sub, hero_leaf, window_read, hero_read, x, &b, x->why, x->why_len) !=
        0)
      return -1;
    int rc = store_tile(x, j, &b);
    dev_elem_box_release(x->el, &b);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Stores leaf j, get-tuple-element g of a variadic reduce hero, on output
 * tile tb: value g of the finalised accumulators (the hero's region is the
 * tile: dev_vred_native admits only such leaves). */
static int store_vred_leaf(exec *x, int j, int g, const dev_box *tb) {
  const dev_box *rg = &x->region;
  bool same = rg->rank == tb->rank; /* (tile_box leaves count unset) */
  for (int d = 0; same && d < tb->rank; d++)
    same = rg->lo[d] == tb->lo[d] && rg->n[d] == tb->n[d];
  if (!same)
    return fail(x, "%s: variadic reduce region does not match the output tile", x->f->name);
  dev_box b = *tb;
  b.count = rg->count;
  b.v = malloc(sizeof *b.v * (size_t)(b.count ? b.count : 1));
  b.poison = x->fin_poison;
  if (!b.v)
    return fail(x, "out of memory");
  for (int64_t i = 0; i < b.count; i++)
    b.v[i] = x->fin[i * x->nv + g];
  int rc = store_tile(x, j, &b);
  free(b.v);
  return rc;
}

/* Evaluates and stores the tiled leaves on the current output tile. */
static int finish_tile(exec *x) {
  if (x->hero_native)
    acc_finalize(x);
  if (tile_id(x) == x->hooks.skip_tile)
    return 0;
  dev_box tb;
  tile_box(x, &tb);
  for (int j = 0; j < x->nout; j++) {
    if (!x->out_tiled[j])
      continue;
    const hlo_instr *o = x->out_node[j];
    int rc = x->vred && o->op == HLO_OP_GET_TUPLE_ELEMENT && o->operands[0] == x->f->hero
                 ? store_vred_leaf(x, j, (int)o->attrs.index, &tb)
                 : eval_store(x, j, &tb, x->hero_native);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* ---- setup ----------------------------------------------------------------------- */

/* The producer of an output that passes through tuple instructions: a
 * get-tuple-element of a tuple instruction is its operand's element (the
 * evaluator never materialises a tuple instruction, dev_elemental.h). */
static const hlo_instr *through_tuples(const hlo_instr *node) {
  for (int depth = 0; depth < 64 && node->op == HLO_OP_GET_TUPLE_ELEMENT && node->operands[0]->op == HLO_OP_TUPLE &&
                      node->attrs.index >= 0 && node->attrs.index < node->operands[0]->noperands;
       depth++)
    node = node->operands[0]->operands[node->attrs.index];
  return node;
}

static int add_output(exec *x, const hlo_instr *node, int sub, const hlo_shape *s, int *j) {
  x->out_node[*j] = node;
  x->out_sub[*j] = sub;
  bool same = sub < 0 && s->rank == x->f->rank;
  for (int d = 0; same && d < s->rank; d++)
    same = s->dims[d] == x->f->dims[d];
  x->out_tiled[*j] = same;
  char name[32];
  snprintf(name, sizeof name, "output %d", *j);
  if (dev_hbm_alloc(&x->out[*j], name, s->type, s->rank, s->dims) != 0)
    return fail(x, "out of memory");
  dev_hbm_poison(&x->out[*j]);
  (*j)++;
  return 0;
}

/* One output buffer per array leaf of the root, depth first through
 * nested tuples (the order hlo_shape_leaf numbers them): a tuple
 * instruction's operands in turn; every leaf of a tuple-shaped op, which
 * the executor materialises whole. */
static int add_outputs(exec *x, const hlo_instr *node, int *j, int depth) {
  node = through_tuples(node);
  if (node->op == HLO_OP_TUPLE && depth < 64) {
    for (int k = 0; k < node->noperands; k++)
      if (add_outputs(x, node->operands[k], j, depth + 1) != 0)
        return -1;
    return 0;
  }
  if (node->shape.type != HLO_TUPLE)
    return add_output(x, node, -1, &node->shape, j);
  int n = hlo_shape_leaf_count(&node->shape);
  for (int k = 0; k < n; k++)
    if (add_output(x, node, k, hlo_shape_leaf(&node->shape, k), j) != 0)
      return -1;
  return 0;
}

static int setup_outputs(exec *x) {
  const hlo_instr *root = x->f->comp->root;
  int n = hlo_shape_leaf_count(&root->shape);
  x->nout = 0;
  x->out = calloc((size_t)(n ? n : 1), sizeof *x->out);
  x->out_node = calloc((size_t)(n ? n : 1), sizeof *x->out_node);
  x->out_sub = calloc((size_t)(n ? n : 1), sizeof *x->out_sub);
  x->out_tiled = calloc((size_t)(n ? n : 1), sizeof *x->out_tiled);
  if (!x->out || !x->out_node || !x->out_sub || !x->out_tiled)
    return fail(x, "out of memory");
  int j = 0;
  int rc = add_outputs(x, root, &j, 0);
  x->nout = j; /* the buffers teardown frees */
  if (rc == 0 && j != n)
    return fail(x, "%s: the root's %d leaves do not match its shape's %d", x->f->name, j, n);
  return rc;
}

/* The shape of output leaf j. */
static const hlo_shape *out_shape(const exec *x, int j) {
  const hlo_shape *s = &x->out_node[j]->shape;
  return x->out_sub[j] < 0 ? s : hlo_shape_leaf(s, x->out_sub[j]);
}

/* The root's value from its leaves (each reference taken over), nested as
 * the root's shape is. */
static hlo_value *assemble(const hlo_shape *s, hlo_value **leaves, int *next) {
  if (s->type != HLO_TUPLE)
    return leaves[(*next)++];
  hlo_value **el = calloc((size_t)(s->ntuple ? s->ntuple : 1), sizeof *el);
  if (!el)
    return NULL;
  int k = 0;
  for (; k < s->ntuple; k++)
    if (!(el[k] = assemble(&s->elems[k], leaves, next)))
      break;
  hlo_value *t = k == s->ntuple ? hlo_value_tuple(s->ntuple, el) : NULL;
  if (!t)
    for (int i = 0; i < k; i++)
      hlo_value_unref(el[i]);
  free(el);
  return t;
}

static int setup_windows(exec *x) {
  x->win = calloc((size_t)(x->nin ? x->nin : 1), sizeof *x->win);
  if (!x->win)
    return fail(x, "out of memory");
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
      return fail(x, "out of memory");
    for (int b = 0; b < buf; b++) {
      ws->data[b] = malloc((size_t)(ws->belems ? ws->belems : 1) * ws->esz);
      ws->shadow[b] = malloc((size_t)(ws->belems ? ws->belems : 1));
      if (!ws->data[b] || !ws->shadow[b])
        return fail(x, "out of memory");
      /* VMEM starts as poison: a read before the first DMA is caught */
      memset(ws->shadow[b], 1, (size_t)ws->belems);
    }
  }
  return 0;
}

static int setup_hero(exec *x) {
  const dev_fusion *f = x->f;
  const hlo_instr *h = f->hero;
  x->hero_native = false;
  if (!h || f->k_total <= 0)
    return 0;
  dev_elem_kind k = dev_elem_classify(h);
  x->nv = 1;
  if (f->kind == DEV_HERO_REDUCE && k == DEV_EK_OPAQUE && h->shape.type == HLO_TUPLE) {
    /* a variadic reduce: chunked when dev_vred_native admits it */
    x->vred = dev_vred_new(f);
    if (!x->vred)
      return dev_vred_native(f) ? fail(x, "out of memory") : 0;
    x->nv = dev_vred_count(x->vred);
  } else if (!((f->kind == DEV_HERO_REDUCE && k == DEV_EK_REDUCE) || (f->kind == DEV_HERO_DOT && k == DEV_EK_DOT))) {
    return 0;
  }
  x->hero_native = true;
  x->is_dot = f->kind == DEV_HERO_DOT;
  x->res_t = x->vred ? dev_vred_type(x->vred, 0) : h->shape.type;
  x->acc_t = x->is_dot ? dev_elem_dot_ctype(x->res_t) : x->res_t;
  x->red_op = x->is_dot ? HLO_OP_ADD : x->vred ? HLO_OP_INVALID : dev_elem_reducer_op(h->attrs.calls.to_apply);
  x->P = x->s->cfg.pack > 0 ? x->s->cfg.pack : 1;
  x->split = (x->s->cfg.flags & DEV_FLAG_SPLIT_REDUCTION) != 0;
  x->kchunk = x->s->cfg.k > 0 ? x->s->cfg.k : f->k_total;
  /* the largest region: tiles at index 0 */
  for (int d = 0; d < f->rank; d++)
    x->t[d] = 0;
  hero_region(x, &x->region);
  x->rcap = x->region.count ? x->region.count : 1;
  size_t a = (size_t)(x->rcap * x->P);
  size_t pp = x->split ? (size_t)(x->rcap * x->s->nk) : 1;
  x->acc = calloc(a * (size_t)x->nv, sizeof *x->acc);
  x->acc_valid = calloc(a, 1);
  x->acc_poison = calloc(a, 1);
  x->part = calloc(pp * (size_t)x->nv, sizeof *x->part);
  x->part_valid = calloc(pp, 1);
  x->part_poison = calloc(pp, 1);
  x->fin = calloc((size_t)x->rcap * (size_t)x->nv, sizeof *x->fin);
  x->fin_poison = calloc((size_t)x->rcap, 1);
  x->visited = calloc((size_t)(x->ntiles ? x->ntiles : 1), 1);
  if (!x->acc || !x->acc_valid || !x->acc_poison || !x->part || !x->part_valid || !x->part_poison || !x->fin ||
      !x->fin_poison || !x->visited)
    return fail(x, "out of memory");
  x->acc_tile = -1;
  return 0;
}

static void teardown(exec *x) {
  for (int p = 0; x->in && p < x->nin; p++)
    dev_hbm_free(&x->in[p]);
  free(x->in);
  for (int j = 0; x->out && j < x->nout; j++)
    dev_hbm_free(&x->out[j]);
  free(x->out);
  free(x->out_node);
  free(x->out_sub);
  free(x->out_tiled);
  for (int p = 0; x->win && p < x->nin; p++) {
    win_state *ws = &x->win[p];
    for (int b = 0; ws->data && b < x->s->cfg.buf; b++) {
      free(ws->data[b]);
      if (ws->shadow)
        free(ws->shadow[b]);
    }
    free(ws->data);
    free(ws->shadow);
    free(ws->clean);
    free(ws->plan);
  }
  free(x->win);
  dev_elem_free(x->el);
  dev_vred_free(x->vred);
  free(x->follow);
  free(x->acc);
  free(x->acc_valid);
  free(x->acc_poison);
  free(x->part);
  free(x->part_valid);
  free(x->part_poison);
  free(x->fin);
  free(x->fin_poison);
  free(x->visited);
  free(x->spill);
  free(x->spill_valid);
  free(x->spill_poison);
}

/* ---- defect triggers ------------------------------------------------------------
 * One predicate per defect, in config terms (dev_defect.h says the same in
 * words).  The lowering defects of dev_elemental.c get their config-level
 * condition here and check their op-level one where they act. */

/* Sets the tile indices and the chunk of grid step `step` (cfg.order,
 * outermost loop first). */
static void decode_step(exec *x, int64_t step) {
  const dev_schedule *s = x->s;
  const dev_config *cfg = &s->cfg;
  int64_t rem = step;
  x->chunk = 0;
  for (int j = cfg->norder - 1; j >= 0; j--) {
    int o = cfg->order[j];
    int64_t bound = o == DEV_ORDER_K ? s->nk : s->tiles[o];
    int64_t v = bound ? rem % bound : 0;
    rem = bound ? rem / bound : 0;
    if (o == DEV_ORDER_K)
      x->chunk = v;
    else
      x->t[o] = v;
  }
}

/* dma-race needs to know which block each fetch of a window brings: the
 * grid is walked once without computing. */
static int plan_fetches(exec *x) {
  int64_t steps = x->s->steps;
  for (int p = 0; p < x->nin; p++) {
    win_state *ws = &x->win[p];
    const dev_window *w = ws->w;
    if (!w || !w->param || w->resident || !ws->data)
      continue;
    ws->plan = malloc(sizeof *ws->plan * (size_t)((steps ? steps : 1) * (w->rank ? w->rank : 1)));
    if (!ws->plan)
      return fail(x, "out of memory");
    ws->nplan = 0;
    for (int64_t step = 0; step < steps; step++) {
      int64_t origin[DEV_MAX_RANK];
      decode_step(x, step);
      window_origin(x, w, origin);
      int64_t *last = ws->plan + (ws->nplan - 1) * w->rank;
      if (ws->nplan > 0 && memcmp(origin, last, sizeof(int64_t) * (size_t)w->rank) == 0)
        continue;
      memcpy(ws->plan + ws->nplan * w->rank, origin, sizeof(int64_t) * (size_t)w->rank);
      ws->nplan++;
    }
  }
  return 0;
}

/* revisit-no-reinit: a reduction whose k loop sits outside an output loop
 * of bound > 1 (windows are left and revisited, nk > 1), while another
 * output loop has a bound of 1. */
static bool trig_revisit_no_reinit(const exec *x) {
  const dev_schedule *s = x->s;
  if (!x->hero_native || s->nk < 2)
    return false;
  bool k_seen = false, revisited = false, bound1 = false;
  for (int j = 0; j < s->cfg.norder; j++) {
    int o = s->cfg.order[j];
    if (o == DEV_ORDER_K)
      k_seen = true;
    else if (k_seen && s->tiles[o] > 1)
      revisited = true;
  }
  for (int d = 0; d < x->f->rank; d++)
    bound1 = bound1 || s->tiles[d] == 1;
  return revisited && bound1;
}

/* packed-reduce-init0: pack > 1 without split-reduction (whose per-chunk
 * partials are initialised apart), over more than one output window. */
static bool trig_packed_reduce_init0(const exec *x) { return x->hero_native && x->P > 1 && !x->split && x->ntiles > 1; }

/* ragged-store-mask: the second-minor output tile does not divide that
 * dimension (of at least two rows). */
static bool trig_ragged_store_mask(const exec *x) {
  int r = x->f->rank;
  if (r < 2)
    return false;
  int64_t dim = x->f->dims[r - 2], tile = x->s->cfg.tile[r - 2];
  return dim >= 2 && tile > 0 && dim % tile != 0;
}

/* ragged-chunk-pad: k does not divide the length of the (single) reduced or
 * contracting dimension. */
static bool trig_ragged_chunk_pad(const exec *x) {
  if (!x->hero_native)
    return false;
  const hlo_instr *h = x->f->hero;
  int nred = x->is_dot ? h->attrs.dot.lhs_contracting.n : h->attrs.dimensions.n;
  return nred == 1 && x->f->k_total % x->kchunk != 0;
}

/* dma-race: buf >= 2 and a window fetched more than buf times. */
static bool trig_dma_race(const exec *x) {
  if (x->s->cfg.buf < 2)
    return false;
  for (int p = 0; p < x->nin; p++)
    if (x->win[p].plan && x->win[p].nplan > x->s->cfg.buf)
      return true;
  return false;
}

/* int8-dot-f32-acc: an s8 x s8 -> s32 dot hero with a chunk k that is not
 * a multiple of 4. */
static bool trig_int8_dot_f32_acc(const exec *x) {
  if (!x->hero_native || !x->is_dot)
    return false;
  const hlo_instr *h = x->f->hero;
  return leaf0(h->operands[0])->type == HLO_S8 && leaf0(h->operands[1])->type == HLO_S8 && x->res_t == HLO_S32 &&
         x->kchunk % 4 != 0;
}

/* dynslice-clamp-lost: a dynamic-(update-)slice hero whose starts are folded
 * into tile offsets: along some dimension that it really slices (slice
 * smaller than the array), the output tile it follows is smaller than the
 * slice (for an update: than the update). */
static bool trig_dynslice_clamp_lost(const exec *x) {
  const dev_fusion *f = x->f;
  if (f->kind != DEV_HERO_DYNAMIC_SLICE && f->kind != DEV_HERO_DYNAMIC_UPDATE_SLICE)
    return false;
  const hlo_instr *h = f->hero;
  bool dus = f->kind == DEV_HERO_DYNAMIC_UPDATE_SLICE;
  if (h->noperands < (dus ? 2 : 1))
    return false;
  const hlo_shape *op = leaf0(h->operands[0]), *sl = dus ? leaf0(h->operands[1]) : leaf0(h);
  for (int d = 0; d < op->rank && d < sl->rank; d++) {
    int fo = x->follow[h->index * HLO_MAX_RANK + d];
    if (sl->dims[d] < op->dims[d] && fo >= 0 && fo < f->rank && x->s->cfg.tile[fo] < sl->dims[d])
      return true;
  }
  return false;
}

/* fft-tile-twiddle: a four-step fft (N1 > 1) cut into more than one tile
 * along the minor output dimension. */
static bool trig_fft_tile_twiddle(const exec *x) {
  const dev_config *cfg = &x->s->cfg;
  if (!(cfg->flags & DEV_FLAG_FOUR_STEP) || cfg->rank < 1)
    return false;
  const hlo_computation *c = x->f->comp;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->op != HLO_OP_FFT || dev_fft_depth(ins, cfg) == 0 || ins->shape.rank < 1)
      continue;
    hlo_fft fa;
    hlo_error err;
    if (hlo_fft_of(ins, &fa, &err) != 0)
      continue;
    int64_t out_len = ins->shape.dims[ins->shape.rank - 1];
    int64_t tile = cfg->tile[cfg->rank - 1];
    int64_t n = fa.len[fa.rank - 1]; /* the innermost axis: the one the config tiles */
    if (n / dev_fft_inner(n, tile, cfg->flags) > 1 && tile < out_len)
      return true;
  }
  return false;
}

/* The defects of the compiler profile that this run's config triggers. */
static uint32_t triggered_defects(const exec *x) {
  const dev_compiler *cc = x->cc;
  unsigned flags = x->s->cfg.flags;
  uint32_t act = 0;
  for (int d = 0; d < DEV_DEFECT_COUNT; d++) {
    if (!dev_compiler_has(cc, (dev_defect)d))
      continue;
    bool t = false;
    switch ((dev_defect)d) {
    case DEV_DEFECT_REVISIT_NO_REINIT: t = trig_revisit_no_reinit(x); break;
    case DEV_DEFECT_PACKED_REDUCE_INIT0: t = trig_packed_reduce_init0(x); break;
    case DEV_DEFECT_SCATTER_S8_IOTA_WRAP: t = (flags & DEV_FLAG_VEC_SCATTER) && x->f->kind == DEV_HERO_SCATTER; break;
    case DEV_DEFECT_SORT_LANE_INDEX: t = (flags & DEV_FLAG_TWO_STAGE_SORT) && x->f->kind == DEV_HERO_SORT; break;
    case DEV_DEFECT_ELIDE_CONVERT: t = (flags & DEV_FLAG_FUSE_CONVERTS) != 0; break;
    case DEV_DEFECT_RAGGED_STORE_MASK: t = trig_ragged_store_mask(x); break;
    case DEV_DEFECT_RAGGED_CHUNK_PAD: t = trig_ragged_chunk_pad(x); break;
    case DEV_DEFECT_DMA_RACE: t = trig_dma_race(x); break;
    case DEV_DEFECT_INT8_DOT_F32_ACC: t = trig_int8_dot_f32_acc(x); break;
    case DEV_DEFECT_DYNSLICE_CLAMP_LOST: t = trig_dynslice_clamp_lost(x); break;
    case DEV_DEFECT_UNSIGNED_CMP_SIGNED: t = (flags & DEV_FLAG_FUSE_CONVERTS) != 0; break;
    case DEV_DEFECT_FFT_TILE_TWIDDLE: t = trig_fft_tile_twiddle(x); break;
    case DEV_DEFECT_COUNT: break;
    }
    if (t)
      act |= 1u << d;
  }
  return act;
}

/* ---- the run ---------------------------------------------------------------------- */

static void index_text(const dev_hbm *h, int64_t flat, char *buf, size_t n) {
  int64_t idx[HLO_MAX_RANK];
  for (int d = h->rank - 1; d >= 0; d--) {
    idx[d] = h->dims[d] ? flat % h->dims[d] : 0;
    flat = h->dims[d] ? flat / h->dims[d] : 0;
  }
  size_t at = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < h->rank && at < n; d++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (at < n)
    snprintf(buf + at, n - at, "]");
}

static int grid(exec *x, uint64_t *steps_done) {
  const dev_schedule *s = x->s;
  int64_t expected = s->steps;
  int64_t budget = 64 * (expected > 0 ? expected : 1);
  int64_t total = expected + (x->hooks.extra_steps > 0 ? x->hooks.extra_steps : 0);
  for (int64_t step = 0; step < total; step++) {
    if (step >= budget) {
      *steps_done = (uint64_t)step;
      return fail(x, "hang: the schedule did not complete within %lld grid steps (64x the expected %lld)",
                  (long long)budget, (long long)expected);
    }
    if (step >= expected)
      continue; /* the modelled stall: nothing completes */
    decode_step(x, step);
    stage_windows(x);
    if (x->hero_native) {
      if (acc_enter(x) != 0 || compute_chunk(x) != 0)
        return -1;
    }
    if (x->chunk == s->nk - 1 && finish_tile(x) != 0)
      return -1;
    *steps_done = (uint64_t)step + 1;
  }
  return 0;
}

void dev_exec_run(const dev_schedule *s, const dev_compiler *cc, hlo_value *const *args, int nargs,
                  uint64_t jitter_seed, const dev_exec_hooks *hooks, dev_run *out) {
  memset(out, 0, sizeof *out);
  exec x;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.f = s->f;
  x.cc = cc;
  if (hooks)
    x.hooks = *hooks;
  else
    dev_exec_hooks_none(&x.hooks);
  x.why = out->message;
  x.why_len = sizeof out->message;
  x.rng = jitter_seed * 0x9E3779B97F4A7C15ull + 1;
  x.jitter_seed = jitter_seed;
  const hlo_computation *c = x.f->comp;
  x.nin = c->nparams;
  x.ntiles = 1;
  for (int d = 0; d < x.f->rank; d++)
    x.ntiles *= s->tiles[d];
  int rc = 0;
  if (nargs != c->nparams)
    rc = fail(&x, "kernel %s takes %d arguments, got %d", x.f->name, c->nparams, nargs);
  x.in = calloc((size_t)(x.nin ? x.nin : 1), sizeof *x.in);
  if (rc == 0 && !x.in)
    rc = fail(&x, "out of memory");
  for (int p = 0; rc == 0 && p < x.nin; p++) {
    const hlo_value *v = args[p];
    if (!c->params[p] || v->type == HLO_TUPLE) {
      continue; /* tuple parameters are read whole by materialised ops */
    }
    if (!hlo_value_matches(v, &c->params[p]->shape)) {
      rc = fail(&x, "argument %d does not match parameter %s", p, c->params[p]->name);
      break;
    }
    char name[32];
    snprintf(name, sizeof name, "param %d", p);
    if (dev_hbm_alloc(&x.in[p], name, v->type, v->rank, v->dims) != 0)
      rc = fail(&x, "out of memory");
    else
      dev_hbm_fill(&x.in[p], v);
  }
  if (rc == 0)
    rc = setup_outputs(&x);
  if (rc == 0 && !(x.follow = dev_follow_map(x.f)))
    rc = fail(&x, "out of memory");
  if (rc == 0)
    rc = setup_windows(&x);
  if (rc == 0)
    rc = setup_hero(&x);
  if (rc == 0 && dev_compiler_has(cc, DEV_DEFECT_DMA_RACE) && s->cfg.buf >= 2)
    rc = plan_fetches(&x);
  if (rc == 0)
    x.active = cc ? triggered_defects(&x) : 0;
  if (rc == 0 && !(x.el = dev_elem_new(x.f, s->cfg.prec)))
    rc = fail(&x, "out of memory");
  if (rc == 0)
    dev_elem_set_probe(x.el, x.hooks.probe); /* dev_probe.h; NULL on the plain path */
  if (rc == 0)
    dev_elem_set_config(x.el, &s->cfg);
  if (rc == 0 && dev_elem_set_defects(x.el, x.active) != 0)
    rc = fail(&x, "out of memory");
  if (rc == 0)
    rc = dev_elem_materialize(x.el, args, x.why, x.why_len);
  if (rc == 0)
    rc = grid(&x, &out->steps);
  /* leaves that are not tiled: whole, after the grid */
  for (int j = 0; rc == 0 && j < x.nout; j++) {
    if (x.out_tiled[j])
      continue;
    const hlo_shape *sh = out_shape(&x, j);
    dev_box want = {.rank = sh->rank};
    for (int d = 0; d < sh->rank; d++)
      want.n[d] = sh->dims[d];
    rc = eval_store(&x, j, &want, false);
  }
  for (int j = 0; rc == 0 && j < x.nout; j++)
    rc = dev_hbm_check(&x.out[j], x.why, x.why_len);
  for (int j = 0; rc == 0 && j < x.nout; j++) {
    int64_t bad = dev_hbm_first_poison(&x.out[j]);
    if (bad >= 0) {
      char it[128];
      index_text(&x.out[j], bad, it, sizeof it);
      rc = fail(&x, "uninitialized read: output %d element %lld (index %s) holds poison", j, (long long)bad, it);
    }
  }
  if (rc == 0) {
    hlo_value **leaves = calloc((size_t)(x.nout ? x.nout : 1), sizeof *leaves);
    if (!leaves)
      rc = fail(&x, "out of memory");
    for (int j = 0; rc == 0 && j < x.nout; j++)
      if (!(leaves[j] = dev_hbm_value(&x.out[j])))
        rc = fail(&x, "out of memory");
    int next = 0;
    if (rc == 0 && !(out->out = assemble(&c->root->shape, leaves, &next)))
      rc = fail(&x, "out of memory");
    if (rc != 0 && leaves)
      for (int j = next; j < x.nout; j++)
        hlo_value_unref(leaves[j]);
    free(leaves);
  }
  out->status = rc == 0 ? DEV_OK : DEV_RUNTIME_ERROR;
  teardown(&x);
}
