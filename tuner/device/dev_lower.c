/* dev_lower.c — fusion + config -> tiled schedule, with legality checks.
 *
 * Decisions (see dev_lower.h for the contract):
 *   - A tile may exceed its dimension: the block is then one ragged tile,
 *     padded like any ragged edge (Pallas rounds blocks up the same way).
 *     A tile of 0 or less is refused.
 *   - k = 0 on a fusion with a reduction means "one chunk": the whole
 *     reduction per output window.  k > 0 on a fusion without a reduction,
 *     and pack > 1 without one, are refused.  k may exceed the reduction
 *     length (one ragged chunk).
 *   - The output block is buffered like the parameter windows (its
 *     write-back is pipelined), so VMEM = sum over windows of block_bytes *
 *     buf (except the windows left in HBM, below) + out_block_bytes * buf +
 *     scratch, where scratch is the hero's
 *     accumulators for one output window: region * acc bytes * pack, times
 *     nk with split-reduction (every chunk keeps its own partial).
 *   - A parameter that follows no output dimension and is read only by ops
 *     the device computes from whole arrays (gather, scatter, sort...,
 *     dev_whole.h) stays in HBM: those ops stage their own tiles.  Its
 *     bytes are still fetched once in the DMA account.
 *   - Sublane multiples: 8 for 32- and 64-bit types, 16 for 16-bit, 32 for
 *     8-bit and narrower ones.  Rank-1 blocks only have the lane rule.
 *   - DMA accounting: a window is fetched again whenever its block index
 *     changes, i.e. once per iteration of the innermost loop it follows and
 *     of every loop outside that one (resident windows once); bytes are
 *     whole blocks (a ragged block is transferred padded).  A window read
 *     through a pad's padding (dev_window.padded) is fetched per output
 *     tile as the box the tile reads through the pad's inverse map: bytes
 *     are that box's, and a tile made only of padding fetches nothing.
 *     Extending the window (a box origin derived from the tile) rather than
 *     staging the pad like gather or dynamic-slice (dev_stage.h) keeps the
 *     pad an elementwise-style op evaluated tile by tile with the rest of
 *     the fusion, reading its operand through the same ring, DMA model and
 *     dma-race as every other window; staging would have made it an op
 *     computed from whole operands, changing how everything around it is
 *     evaluated.  The output block
 *     is written the same way (once per tile when k is innermost; with k
 *     outside an output loop every revisit also spills and reloads the
 *     accumulators, counted as two more scratch transfers).
 *   - Work: mxu_flops = the fusion's dot/conv flops times the bf16 passes
 *     of an f32 dot (1, 3, 6); vpu_ops = the other flops; eup_ops = the
 *     transcendental elements.
 */
#include "dev_lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_exec.h"
#include "dev_exec_variadic.h"
#include "dev_layout.h"
#include "hlo/hlo_numerics.h"

__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t n, const char *fmt, ...) {
  if (why && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- follow analysis ---------------------------------------------------- */

#define UNSET (-3)

/* What one dimension of one instruction follows: fo is an output
 * dimension, DEV_FOLLOW_K, DEV_FOLLOW_NONE or UNSET.  With fo >= 0, nm
 * output dimensions from fo on, row-major merged by a reshape (1: fo
 * alone; dev_window.merged).  padded (only in the windows' analysis, with
 * fo >= 0 and nm = 1 or with fo = DEV_FOLLOW_K) says the dimension reaches
 * the output or the reduction through the padding of a pad, by map pm
 * (dev_lower.h). */
typedef struct follow {
  int fo;
  int nm;
  bool padded;
  dev_pad_map pm;
} follow;

static follow fol(int fo) {
  follow v;
  memset(&v, 0, sizeof v);
  v.fo = fo;
  v.nm = 1;
  return v;
}

/* fo and the nm output dimensions after it, merged. */
static follow fol_merged(int fo, int nm) {
  follow v = fol(fo);
  v.nm = nm;
  return v;
}

static bool same_follow(const follow *a, const follow *b) {
  if (a->fo != b->fo || a->nm != b->nm || a->padded != b->padded)
    return false;
  return !a->padded || (a->pm.at == b->pm.at && a->pm.step == b->pm.step && a->pm.first == b->pm.first &&
                        a->pm.end == b->pm.end);
}

/* The analysis's answer: an instruction's dims at v + base[index], as many
 * slots as its (first leaf's) rank and at least one.  Sized per
 * instruction, not HLO_MAX_RANK each: a 200,000-instruction kernel took
 * 128 MB per analysis, twice per candidate, which made --check of a huge
 * module grow faster than its size. */
typedef struct fmap {
  follow *v;
  int64_t *base; /* ninstrs + 1 entries: the last is the number of slots */
} fmap;

static const hlo_shape *leaf0(const hlo_instr *ins) { return hlo_shape_leaf0(&ins->shape); }

/* The slots an instruction gets. */
static int width(const hlo_instr *ins) {
  const hlo_shape *s = leaf0(ins);
  int r = s && s->rank > 0 ? s->rank : 1;
  return r < HLO_MAX_RANK ? r : HLO_MAX_RANK;
}

static follow *map_of(const fmap *map, const hlo_instr *ins) { return map->v + map->base[ins->index]; }

static int64_t slots_of(const fmap *map, int index) { return map->base[index + 1] - map->base[index]; }

static void fmap_free(fmap *map) {
  free(map->v);
  free(map->base);
  map->v = NULL;
  map->base = NULL;
}

/* Merges mapping value v into slot *dst: unset takes v, agreement keeps it,
 * disagreement means the dimension follows nothing. */
static void merge(follow *dst, follow v) {
  if (dst->fo == UNSET)
    *dst = v;
  else if (!same_follow(dst, &v))
    *dst = fol(DEV_FOLLOW_NONE);
}

/* merge into dim d of instruction o; a d past o's rank (a malformed
 * dimension list) is ignored. */
static void merge_at(const fmap *map, const hlo_instr *o, int64_t d, follow v) {
  if (d >= 0 && d < slots_of(map, o->index))
    merge(&map_of(map, o)[d], v);
}

static void mark_none(const fmap *map, const hlo_instr *o) {
  const hlo_shape *s = leaf0(o);
  int r = s ? s->rank : 0;
  for (int d = 0; d < r; d++)
    merge_at(map, o, d, fol(DEV_FOLLOW_NONE));
}

static bool in_list(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return true;
  return false;
}

/* Division rounding down and up, for a positive divisor b. */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

int64_t dev_pad_rows(const dev_pad_map *pm, int64_t lo, int64_t n, int64_t *first) {
  *first = pm->first;
  if (n <= 0 || pm->step <= 0)
    return 0;
  int64_t a = ceil_div(lo - pm->at, pm->step), b = floor_div(lo + n - 1 - pm->at, pm->step);
  if (a < pm->first)
    a = pm->first;
  if (b > pm->end - 1)
    b = pm->end - 1;
  if (b < a)
    return 0;
  *first = a;
  return b - a + 1;
}

/* The mapping of a pad's operand dimension of extent in, padded by pd, when
 * the pad's own dimension (extent out) follows output dimension v.fo by v:
 * operand index i sits at pad position lo + i * (interior + 1), which
 * reaches the output at v's position for it, if v lets that position
 * through (negative padding crops the rest). */
static follow through_pad(follow v, const hlo_pad_dim *pd, int64_t in, int64_t out) {
  int64_t S = pd->interior + 1;
  int64_t at = v.padded ? v.pm.at : 0, step = v.padded ? v.pm.step : 1;
  int64_t f0 = v.padded ? v.pm.first : 0, e0 = v.padded ? v.pm.end : out;
  follow r = fol(v.fo);
  r.padded = true;
  r.pm.at = at + pd->lo * step;
  r.pm.step = step * S;
  r.pm.first = ceil_div(f0 - pd->lo, S);
  r.pm.end = floor_div(e0 - 1 - pd->lo, S) + 1;
  if (r.pm.first < 0)
    r.pm.first = 0;
  if (r.pm.end > in)
    r.pm.end = in;
  if (r.pm.end < r.pm.first) /* nothing of the operand reaches the output */
    r.pm.end = r.pm.first;
  return r;
}

/* How many reduction dims the hero has (1 makes K usable for windows). */
static int hero_red_dims(const dev_fusion *f) {
  if (!f->hero)
    return 0;
  if (f->kind == DEV_HERO_REDUCE)
    return f->hero->attrs.dimensions.n;
  if (f->kind == DEV_HERO_DOT)
    return f->hero->attrs.dot.lhs_contracting.n;
  return 0;
}

/* One factor group of a row-major reshape (dev_layout.h): operand o's
 * dims [ia, ib) hold the result's dims [ja, jb), whose follows are m.
 * Only dims of extent above 1 carry an index (a unit dim follows nothing:
 * its block is the whole dim either way).  One dim on each side: the
 * operand dim follows what the result dim follows.  One operand dim split
 * into several result dims: it follows the output dims they follow, merged
 * (nm), when those are consecutive and make up its extent.  Several operand
 * dims merged into one result dim that follows a merged run of output
 * dims: the run is split among them alike, when their extents match it.
 * Anything else (a result dim of one output dim cut into several operand
 * dims, several dims on both sides) follows nothing. */
static void reshape_group(const dev_fusion *f, const fmap *map, const hlo_instr *o, const hlo_shape *os,
                          const hlo_shape *rs, const follow *m, int ia, int ib, int ja, int jb) {
  int in[HLO_MAX_RANK], out[HLO_MAX_RANK], nin = 0, nout = 0;
  for (int d = ia; d < ib; d++) {
    if (os->dims[d] != 1)
      in[nin++] = d;
    else
      merge_at(map, o, d, fol(DEV_FOLLOW_NONE));
  }
  for (int d = ja; d < jb; d++)
    if (rs->dims[d] != 1)
      out[nout++] = d;
  if (nin == 0)
    return;
  if (nout == 0) { /* (the extents multiply alike: not reached) */
    for (int k = 0; k < nin; k++)
      merge_at(map, o, in[k], fol(DEV_FOLLOW_NONE));
    return;
  }
  if (nin == 1 && nout == 1) {
    merge_at(map, o, in[0], m[out[0]]);
    return;
  }
  if (nin == 1) {
    int fo = m[out[0]].fo, nm = 0;
    bool ok = fo >= 0;
    for (int k = 0; k < nout && ok; k++) {
      const follow *r = &m[out[k]];
      ok = r->fo == fo + nm && !r->padded;
      nm += r->nm;
    }
    int64_t ext = 1;
    for (int d = fo; ok && d < fo + nm; d++)
      ext = d < f->rank ? ext * f->dims[d] : -1;
    merge_at(map, o, in[0], ok && ext == os->dims[in[0]] ? fol_merged(fo, nm) : fol(DEV_FOLLOW_NONE));
    return;
  }
  follow v[HLO_MAX_RANK];
  bool ok = false;
  if (nout == 1) {
    const follow *r = &m[out[0]];
    int at = r->fo, end = r->fo + r->nm;
    ok = r->fo >= 0 && r->nm > 1 && !r->padded && end <= f->rank;
    for (int k = 0; k < nin && ok; k++) {
      int start = at;
      int64_t p = 1;
      while (at < end && p < os->dims[in[k]])
        p *= f->dims[at++];
      while (at < end && f->dims[at] == 1) /* a unit output dim joins the run before it */
        at++;
      ok = p == os->dims[in[k]];
      v[k] = fol_merged(start, at - start);
    }
    ok = ok && at == end;
  }
  for (int k = 0; k < nin; k++)
    merge_at(map, o, in[k], ok ? v[k] : fol(DEV_FOLLOW_NONE));
}

/* padded: the windows' analysis (dev_lower), where a padded dimension of a
 * pad maps its operand through the pad's inverse map; otherwise (the map
 * dev_follow_map hands the executor, which takes a following dimension's
 * index to be the output's) it follows nothing. */
static void propagate(const dev_fusion *f, const fmap *map, const hlo_instr *ins, bool vred, bool padded) {
  const follow *m = map_of(map, ins);
  const hlo_shape *s = leaf0(ins);
  int rank = s ? s->rank : 0;
  dev_elem_kind k = dev_elem_kind_of(f, ins);
  bool hero = ins == f->hero;
  int kval = (hero && hero_red_dims(f) == 1) ? DEV_FOLLOW_K : DEV_FOLLOW_NONE;
  /* The executor computes the hero over its region of the output tile as
   * the public map gives it (dev_acc.c), in which a dimension that reaches
   * the output through padding follows nothing: the hero is computed whole
   * along it, so its operands are read whole along it too. */
  follow hm[HLO_MAX_RANK];
  if (hero && padded) {
    for (int d = 0; d < rank && d < HLO_MAX_RANK; d++)
      hm[d] = m[d].padded ? fol(DEV_FOLLOW_NONE) : m[d];
    m = hm;
  }
  /* A variadic reduce hero the executor chunks (dev_exec_variadic.h): its
   * get-tuple-elements hand it their mapping (all its results have one
   * shape), and each of its N operands maps as a single reduce's does. */
  if (vred && k == DEV_EK_GTE && ins->operands[0] == f->hero) {
    for (int d = 0; d < rank; d++)
      merge_at(map, f->hero, d, m[d]);
    return;
  }
  if (vred && hero) {
    int n = ins->noperands / 2;
    for (int j = 0; j < n; j++) {
      const hlo_instr *o = ins->operands[j];
      const hlo_shape *os = leaf0(o);
      int r = 0;
      for (int d = 0; os && d < os->rank; d++) {
        if (in_list(&ins->attrs.dimensions, d))
          merge_at(map, o, d, fol(kval));
        else
          merge_at(map, o, d, r < rank ? m[r++] : fol(DEV_FOLLOW_NONE));
      }
      mark_none(map, ins->operands[n + j]);
    }
    return;
  }
  /* An all-reduce combines the replicas element by element, and a
   * collective-permute or a collective-broadcast of one operand hands each
   * replica another's array unchanged: output
   * element i reads element i of the replicas' operands and nothing else,
   * so the operand is windowed like an elementwise op's.  Held whole
   * instead, one f32[4096,4096] operand (64 MiB, twice buffered) filled
   * VMEM and made every default of a real module's all-reduce a compile
   * error.  The executor computes the collective from whole operands
   * (dev_collective.c, staging its own tiles); this is the schedule's
   * account of what a tile needs. */
  bool hands_over = ins->op == HLO_OP_COLLECTIVE_PERMUTE || ins->op == HLO_OP_COLLECTIVE_BROADCAST;
  if ((ins->op == HLO_OP_ALL_REDUCE || (hands_over && ins->noperands == 1)) &&
      k == DEV_EK_OPAQUE && s && s->type != HLO_TUPLE)
    k = DEV_EK_ELEMENTWISE;
  switch (k) {
  case DEV_EK_ELEMENTWISE:
    for (int j = 0; j < ins->noperands; j++) {
      const hlo_instr *o = ins->operands[j];
      const hlo_shape *os = leaf0(o);
      if (os && os->rank == rank)
        for (int d = 0; d < rank; d++)
          merge_at(map, o, d, m[d]);
      else
        mark_none(map, o);
    }
    return;
  case DEV_EK_BROADCAST: {
    const hlo_instr *o = ins->operands[0];
    const hlo_ints *dims = &ins->attrs.dimensions;
    for (int d = 0; d < dims->n; d++) {
      int64_t rd = dims->v[d];
      merge_at(map, o, d, rd >= 0 && rd < rank ? m[rd] : fol(DEV_FOLLOW_NONE));
    }
    return;
  }
  case DEV_EK_TRANSPOSE: {
    const hlo_instr *o = ins->operands[0];
    const hlo_ints *p = &ins->attrs.dimensions;
    for (int d = 0; d < p->n && d < rank; d++)
      merge_at(map, o, p->v[d], m[d]);
    return;
  }
  case DEV_EK_REDUCE: {
    const hlo_instr *o = ins->operands[0];
    const hlo_shape *os = leaf0(o);
    int r = 0;
    for (int d = 0; os && d < os->rank; d++) {
      if (in_list(&ins->attrs.dimensions, d))
        merge_at(map, o, d, fol(kval));
      else
        merge_at(map, o, d, r < rank ? m[r++] : fol(DEV_FOLLOW_NONE));
    }
    mark_none(map, ins->operands[1]);
    return;
  }
  case DEV_EK_DOT: {
    const hlo_dot_dnums *dn = &ins->attrs.dot;
    for (int side = 0; side < 2; side++) {
      const hlo_instr *o = ins->operands[side];
      const hlo_shape *os = leaf0(o);
      const hlo_ints *batch = side ? &dn->rhs_batch : &dn->lhs_batch;
      const hlo_ints *contr = side ? &dn->rhs_contracting : &dn->lhs_contracting;
      /* result dims: batch, lhs free, rhs free */
      int nfree_lhs = 0;
      const hlo_shape *ls = leaf0(ins->operands[0]);
      for (int d = 0; ls && d < ls->rank; d++)
        nfree_lhs += !in_list(&dn->lhs_batch, d) && !in_list(&dn->lhs_contracting, d);
      int next = batch->n + (side ? nfree_lhs : 0);
      for (int d = 0; os && d < os->rank; d++) {
        follow v;
        if (in_list(contr, d)) {
          v = fol(kval);
        } else if (in_list(batch, d)) {
          int bi = 0;
          while (bi < batch->n && batch->v[bi] != d)
            bi++;
          v = bi < rank ? m[bi] : fol(DEV_FOLLOW_NONE);
        } else {
          v = next < rank ? m[next] : fol(DEV_FOLLOW_NONE);
          next++;
        }
        merge_at(map, o, d, v);
      }
    }
    return;
  }
  case DEV_EK_PAD: {
    /* an unpadded dimension (no low, high or interior padding) reads
     * position i of the operand for output position i; a padded one reads
     * operand index i for pad position lo + i * (interior + 1), which the
     * windows' analysis follows (a padded dimension of the pad's operand
     * is then fetched per output tile, dev_pad_rows) and the executor's
     * map does not */
    const hlo_instr *o = ins->operands[0];
    const hlo_shape *os = leaf0(o);
    for (int d = 0; os && d < os->rank && d < rank; d++) {
      const hlo_pad_dim *pd = &ins->attrs.pad[d];
      follow v = m[d];
      /* the reduction too is read through the pad's inverse map: a
       * padded dimension that follows k is fetched per chunk */
      bool mapped = (v.fo >= 0 && v.nm == 1) || v.fo == DEV_FOLLOW_K;
      if (pd->lo != 0 || pd->hi != 0 || pd->interior != 0)
        v = padded && mapped && pd->interior >= 0 ? through_pad(v, pd, os->dims[d], s->dims[d])
                                                  : fol(DEV_FOLLOW_NONE);
      merge_at(map, o, d, v);
    }
    mark_none(map, ins->operands[1]);
    return;
  }
  case DEV_EK_RESHAPE: {
    /* A reshape, or a bitcast between row-major layouts, keeps the
     * row-major order: its operand follows through the factor groups
     * (reshape_group).  A bitcast that moves elements between layouts is
     * read whole. */
    const hlo_instr *o = ins->operands[0];
    const hlo_shape *os = leaf0(o);
    int fa[HLO_MAX_RANK + 1], ta[HLO_MAX_RANK + 1], ng = -1;
    if (os && s && ins->noperands == 1 &&
        !(ins->op == HLO_OP_BITCAST && (!dev_layout_row_major(s) || !dev_layout_row_major(os))))
      ng = dev_layout_reshape_groups(os, s, fa, ta);
    if (ng < 0) {
      for (int j = 0; j < ins->noperands; j++)
        mark_none(map, ins->operands[j]);
      return;
    }
    for (int g = 0; g < ng; g++)
      reshape_group(f, map, o, os, s, m, fa[g], fa[g + 1], ta[g], ta[g + 1]);
    return;
  }
  case DEV_EK_CONCAT: {
    /* every dimension but the concatenated one is the output's */
    int64_t cd = ins->attrs.dimensions.v[0];
    for (int j = 0; j < ins->noperands; j++) {
      const hlo_instr *o = ins->operands[j];
      const hlo_shape *os = leaf0(o);
      for (int d = 0; os && d < os->rank && d < rank; d++)
        merge_at(map, o, d, d == cd ? fol(DEV_FOLLOW_NONE) : m[d]);
    }
    return;
  }
  case DEV_EK_GTE:
  case DEV_EK_TUPLE:
  default:
    for (int j = 0; j < ins->noperands; j++)
      mark_none(map, ins->operands[j]);
    return;
  }
}

/* The follow analysis of dev_follow_map, or with padded the windows' one
 * (propagate), into *map (fmap_free).  -1 when out of memory. */
static int follow_analysis(const dev_fusion *f, bool padded, fmap *map) {
  const hlo_computation *c = f->comp;
  bool vred = dev_vred_native(f);
  map->v = NULL;
  map->base = malloc(sizeof *map->base * (size_t)(c->ninstrs + 1));
  if (!map->base)
    return -1;
  map->base[0] = 0;
  for (int i = 0; i < c->ninstrs; i++)
    map->base[i + 1] = map->base[i] + width(c->instrs[i]);
  int64_t n = map->base[c->ninstrs];
  map->v = malloc(sizeof *map->v * (size_t)(n ? n : 1));
  if (!map->v) {
    fmap_free(map);
    return -1;
  }
  for (int64_t i = 0; i < n; i++)
    map->v[i] = fol(UNSET);
  /* The root (each leaf of a tuple root with the output's dims) follows the
   * output dims one to one. */
  const hlo_instr *root = c->root;
  if (root->op == HLO_OP_TUPLE) {
    for (int j = 0; j < root->noperands; j++) {
      const hlo_instr *o = root->operands[j];
      const hlo_shape *os = leaf0(o);
      bool same = os && os->type != HLO_TUPLE && os->rank == f->rank;
      for (int d = 0; same && d < f->rank; d++)
        same = os->dims[d] == f->dims[d];
      for (int d = 0; os && d < os->rank; d++)
        merge_at(map, o, d, fol(same ? d : DEV_FOLLOW_NONE));
    }
  } else {
    for (int d = 0; d < f->rank && d < slots_of(map, root->index); d++)
      map_of(map, root)[d] = fol(d);
  }
  for (int i = c->ninstrs - 1; i >= 0; i--) {
    const hlo_instr *ins = c->instrs[i];
    if (ins == root && root->op == HLO_OP_TUPLE)
      continue;
    propagate(f, map, ins, vred, padded);
  }
  for (int64_t i = 0; i < n; i++)
    if (map->v[i].fo == UNSET)
      map->v[i] = fol(DEV_FOLLOW_NONE);
  return 0;
}

/* dev_follow_map's answer from its analysis fm (only the following output
 * dimension of each slot, HLO_MAX_RANK per instruction), or NULL when out
 * of memory. */
static int *follow_ints_of(const fmap *fm, const hlo_computation *c) {
  int *map = malloc(sizeof(int) * (size_t)(c->ninstrs ? c->ninstrs : 1) * HLO_MAX_RANK);
  for (int i = 0; map && i < c->ninstrs; i++)
    for (int d = 0; d < HLO_MAX_RANK; d++)
      map[(size_t)i * HLO_MAX_RANK + (size_t)d] = d < slots_of(fm, i) && fm->v[fm->base[i] + d].nm == 1
                                                      ? fm->v[fm->base[i] + d].fo
                                                      : DEV_FOLLOW_NONE;
  return map;
}

/* dev_follow_map computed afresh. */
static int *follow_ints(const dev_fusion *f) {
  fmap fm;
  if (follow_analysis(f, false, &fm) != 0)
    return NULL;
  int *map = follow_ints_of(&fm, f->comp);
  fmap_free(&fm);
  return map;
}

/* Which instructions of c are evaluated whole, never tile by tile: those
 * every reader of which is an op the device computes from whole operand
 * arrays (DEV_EK_OPAQUE: dev_whole.h's gather, scatter, sort,
 * dynamic-update-slice..., or the host for what it has no lowering of), or
 * is itself evaluated whole (an elementwise op feeding only such ops is
 * materialised whole first, dev_elemental.h).  A parameter among them stays
 * in HBM: the op's own lowering DMAs what each tile needs into VMEM buffers
 * of the tile's size.  Charging VMEM with the whole array refused a real
 * module's 256 MiB gather operand that the kernel never holds.  The root,
 * and what the root or a tiled op reads, are not among them.  Instructions
 * come in program order, so every reader of i is seen before i.  NULL when
 * out of memory. */
static bool *evaluated_whole(const dev_fusion *f, const hlo_computation *c) {
  int n = c->ninstrs;
  bool *whole = calloc((size_t)(n ? n : 1), sizeof *whole);
  bool *read = calloc((size_t)(n ? n : 1), sizeof *read);
  bool *tiled_reader = calloc((size_t)(n ? n : 1), sizeof *tiled_reader);
  if (!whole || !read || !tiled_reader) {
    free(whole);
    free(read);
    free(tiled_reader);
    return NULL;
  }
  for (int i = n - 1; i >= 0; i--) {
    const hlo_instr *ins = c->instrs[i];
    whole[i] = ins != c->root && read[i] && !tiled_reader[i];
    bool by_whole = dev_elem_kind_of(f, ins) == DEV_EK_OPAQUE || whole[i];
    for (int j = 0; j < ins->noperands; j++) {
      int o = ins->operands[j]->index;
      if (o < 0 || o >= n)
        continue;
      read[o] = true;
      if (!by_whole)
        tiled_reader[o] = true;
    }
  }
  free(read);
  free(tiled_reader);
  return whole;
}

bool *dev_evaluated_whole(const hlo_computation *c) { return evaluated_whole(NULL, c); }

/* ---- the per-fusion plan ------------------------------------------------ */

/* What dev_lower and the executor need from the kernel's instructions and
 * nothing from a config: built once per fusion (dev_fusion_prepare), then
 * only read, so candidates on several threads share it. */
struct dev_lower_plan {
  fmap windows; /* follow_analysis(f, true): dev_lower's windows */
  int *follow;  /* dev_follow_map's answer */
  bool *whole;  /* evaluated_whole */
  int *macs;    /* indices of the dots and convolutions (the MXU work) */
  int nmacs;
};

void dev_lower_plan_free(dev_lower_plan *p) {
  if (!p)
    return;
  fmap_free(&p->windows);
  free(p->follow);
  free(p->whole);
  free(p->macs);
  free(p);
}

dev_lower_plan *dev_lower_plan_new(const dev_fusion *f) {
  dev_lower_plan *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  const hlo_computation *c = f->comp;
  /* The two follow analyses differ only through pads (propagate's padded
   * argument): without one, the executor's map is the windows' one. */
  bool pads = false;
  for (int i = 0; i < c->ninstrs && !pads; i++)
    pads = dev_elem_kind_of(f, c->instrs[i]) == DEV_EK_PAD;
  if (follow_analysis(f, true, &p->windows) != 0 ||
      !(p->follow = pads ? follow_ints(f) : follow_ints_of(&p->windows, c)) ||
      !(p->whole = evaluated_whole(f, c)) ||
      !(p->macs = malloc(sizeof *p->macs * (size_t)(c->ninstrs ? c->ninstrs : 1)))) {
    dev_lower_plan_free(p);
    return NULL;
  }
  for (int i = 0; i < c->ninstrs; i++)
    if (c->instrs[i]->op == HLO_OP_DOT || c->instrs[i]->op == HLO_OP_CONVOLUTION)
      p->macs[p->nmacs++] = i;
  return p;
}

int *dev_follow_map(const dev_fusion *f) {
  if (!f->lower)
    return follow_ints(f);
  /* The caller owns and frees what it gets (dev_exec.h): a copy. */
  size_t n = sizeof(int) * (size_t)(f->comp->ninstrs ? f->comp->ninstrs : 1) * HLO_MAX_RANK;
  int *map = malloc(n);
  if (map)
    memcpy(map, f->lower->follow, n);
  return map;
}

/* ---- legality ------------------------------------------------------------- */

static int sublanes_for(const dev_machine *m, hlo_etype t) {
  int bits = hlo_etype_bits(t);
  int base = m->sublanes > 0 ? m->sublanes : 8;
  if (bits == 16)
    return base * 2;
  if (bits <= 8)
    return base * 4;
  return base;
}

static int64_t block_bytes(hlo_etype t, int rank, const int64_t *block) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++)
    n *= block[d];
  int bits = hlo_etype_bits(t);
  return (n * (bits > 0 ? bits : 8) + 7) / 8;
}

/* Checks the last-two-dims rule; what names the block ("param_0", "the
 * output"). */
static int check_block(const dev_machine *m, hlo_etype t, int rank, const int64_t *dims, const int64_t *block,
                       const char *what, char *why, size_t n) {
  if (rank < 1)
    return 0;
  char shape[160];
  size_t at = (size_t)snprintf(shape, sizeof shape, "%s[", hlo_etype_name(t));
  for (int d = 0; d < rank && at < sizeof shape; d++)
    at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%lld", d ? "," : "", (long long)block[d]);
  if (at < sizeof shape)
    snprintf(shape + at, sizeof shape - at, "]");
  int lanes = m->lanes > 0 ? m->lanes : 128;
  int64_t last = block[rank - 1];
  if (last % lanes != 0 && last != dims[rank - 1])
    return refuse(why, n, "block %s of %s: last dimension %lld is not a multiple of %d and not the full dimension %lld",
                  shape, what, (long long)last, lanes, (long long)dims[rank - 1]);
  if (rank >= 2) {
    int sub = sublanes_for(m, t);
    int64_t b = block[rank - 2];
    if (b % sub != 0 && b != dims[rank - 2])
      return refuse(why, n,
                    "block %s of %s: second-minor dimension %lld is not a multiple of %d (%d-bit sublanes) and "
                    "not the full dimension %lld",
                    shape, what, (long long)b, sub, hlo_etype_bits(t), (long long)dims[rank - 2]);
  }
  return 0;
}

static void mib(char *buf, size_t n, int64_t bytes) { snprintf(buf, n, "%.1f MiB", (double)bytes / (1 << 20)); }

/* Loop bound of order entry o. */
static int64_t loop_bound(const dev_schedule *s, int o) { return o == DEV_ORDER_K ? s->nk : s->tiles[o]; }

/* Fetches of a block that depends on the loops in dep (by order entry). */
static int64_t fetches(const dev_schedule *s, const bool *dep_dim, bool dep_k) {
  int inner = -1;
  for (int j = 0; j < s->cfg.norder; j++) {
    int o = s->cfg.order[j];
    if (o == DEV_ORDER_K ? dep_k : dep_dim[o])
      inner = j;
  }
  int64_t n = 1;
  for (int j = 0; j <= inner; j++)
    n *= loop_bound(s, s->cfg.order[j]);
  return n;
}

/* The tile (or chunk) along what window dim d follows, and the extent it
 * cuts: the output dim's, or for the reduction the k chunk and k_total. */
static void cut_of(const dev_fusion *f, const dev_config *cfg, int fo, int64_t *tile, int64_t *dim) {
  if (fo == DEV_FOLLOW_K) {
    *tile = cfg->k > 0 ? cfg->k : f->k_total;
    *dim = f->k_total;
  } else {
    *tile = cfg->tile[fo];
    *dim = f->dims[fo];
  }
}

/* A padded window dimension d (dev_window.padded): the block holds the
 * most rows any output tile of its dimension fo (or any k chunk) reads
 * through the pad's inverse map, rounded up as the layout wants a block's
 * last two dimensions (lanes; sublanes of the type) and capped at the
 * whole dimension, so that the block is legal whenever the tile is.  Also
 * the tiles that read any row (*nonempty) and the rows all tiles read
 * (*rows), for the DMA account. */
static int64_t padded_block(const dev_machine *m, const dev_fusion *f, const dev_config *cfg, const dev_window *w,
                            int d, int64_t *nonempty, int64_t *rows) {
  int64_t tile, dim, most = 0;
  cut_of(f, cfg, w->follows[d], &tile, &dim);
  *nonempty = *rows = 0;
  for (int64_t lo = 0; lo < dim; lo += tile) {
    int64_t first, n = dev_pad_rows(&w->pad[d], lo, lo + tile < dim ? tile : dim - lo, &first);
    *nonempty += n > 0;
    *rows += n;
    most = n > most ? n : most;
  }
  int64_t mult = 1;
  if (d == w->rank - 1)
    mult = m->lanes > 0 ? m->lanes : 128;
  else if (d == w->rank - 2)
    mult = sublanes_for(m, w->param->shape.type);
  if (most == 0)
    return 0; /* cropped away: no tile reads it, nothing is held */
  int64_t b = (most + mult - 1) / mult * mult;
  return b < w->dims[d] ? b : w->dims[d];
}

/* The fetches of a window with padded dimensions and the elements they
 * move: as fetches(), one per iteration of the loops out to the innermost
 * one the window depends on, except that an iteration whose tile reads
 * only padding along a padded dimension fetches nothing, and a fetch moves
 * the rows its tile reads along a padded dimension (the rest of the block
 * is not transferred) and the whole block along the others. */
static void padded_fetches(const dev_schedule *s, const dev_window *w, const bool *dep_dim, bool dep_k,
                           const int64_t *nonempty, const int64_t *rows, int64_t *count, int64_t *elems) {
  int inner = -1, pd[DEV_MAX_RANK], pk = -1;
  for (int o = 0; o < DEV_MAX_RANK; o++)
    pd[o] = -1;
  for (int d = 0; d < w->rank; d++)
    if (w->padded[d] && w->follows[d] == DEV_FOLLOW_K)
      pk = d;
    else if (w->padded[d])
      pd[w->follows[d]] = d;
  for (int j = 0; j < s->cfg.norder; j++) {
    int o = s->cfg.order[j];
    if (o == DEV_ORDER_K ? dep_k : dep_dim[o])
      inner = j;
  }
  int64_t n = 1, e = 1;
  for (int j = 0; j <= inner; j++) {
    int o = s->cfg.order[j];
    int p = o == DEV_ORDER_K ? pk : pd[o];
    n *= p >= 0 ? nonempty[p] : loop_bound(s, o);
    e *= p >= 0 ? rows[p] : loop_bound(s, o);
  }
  for (int d = 0; d < w->rank; d++)
    if (!w->padded[d])
      e *= w->block[d];
  *count = n;
  *elems = e;
}

static int passes(dev_precision p) { return p == DEV_PREC_HIGHEST ? 6 : p == DEV_PREC_HIGH ? 3 : 1; }

/* Whether cfg's tile covers one contiguous run of the row-major merge of
 * output dims [fo, fo + nm): tiles of 1 (or unit dims) up to some dim,
 * whole dims after it. */
static bool merged_contiguous(const dev_fusion *f, const dev_config *cfg, int fo, int nm) {
  int d = fo;
  while (d < fo + nm - 1 && (cfg->tile[d] == 1 || f->dims[d] == 1))
    d++;
  for (int e = d + 1; e < fo + nm; e++)
    if (cfg->tile[e] < f->dims[e])
      return false;
  return true;
}

/* The largest run of merged output dims [fo, fo + nm) that a tile covers:
 * the product of the tiles, each capped at its dim. */
static int64_t merged_block(const dev_fusion *f, const dev_config *cfg, int fo, int nm) {
  int64_t b = 1;
  for (int o = fo; o < fo + nm; o++)
    b *= cfg->tile[o] < f->dims[o] ? cfg->tile[o] : f->dims[o];
  return b;
}

/* The run (*lo, *n) of merged output dims [fo, fo + nm) that output tile t
 * covers (merged_contiguous holds: the run is its first element's position
 * and the product of the tile's extents). */
static void merged_run(const dev_fusion *f, const dev_config *cfg, int fo, int nm, const int64_t *t, int64_t *lo,
                       int64_t *n) {
  int64_t at = 0, cnt = 1;
  for (int o = fo; o < fo + nm; o++) {
    int64_t a = t[o] * cfg->tile[o], e = f->dims[o] - a < cfg->tile[o] ? f->dims[o] - a : cfg->tile[o];
    at = at * f->dims[o] + a;
    cnt *= e;
  }
  *lo = at;
  *n = cnt;
}

/* Refuses a tile that is not one contiguous run of the merged output dims
 * [fo, fo + nm), which `what` follows.  0 when it is. */
static int check_merged(const dev_fusion *f, const dev_config *cfg, int fo, int nm, const char *what, char *why,
                        size_t n) {
  if (merged_contiguous(f, cfg, fo, nm))
    return 0;
  char tile[160];
  size_t at = 0;
  for (int o = fo; o < fo + nm && at < sizeof tile; o++)
    at += (size_t)snprintf(tile + at, sizeof tile - at, "%s%lld", o > fo ? "x" : "", (long long)cfg->tile[o]);
  return refuse(why, n,
                "%s merges output dimensions %d..%d: tile %s is not one contiguous run of them (tiles of 1, then "
                "whole dimensions)",
                what, fo, fo + nm - 1, tile);
}

bool dev_window_at(const dev_schedule *s, const dev_window *w, const int64_t *t, int64_t chunk, int64_t *origin,
                   int64_t *lim) {
  bool any = true;
  for (int d = 0; d < w->rank; d++) {
    int fo = w->follows[d];
    lim[d] = w->dims[d];
    if (w->padded[d] && (fo >= 0 || fo == DEV_FOLLOW_K)) {
      int64_t tile, dim;
      cut_of(s->f, &s->cfg, fo, &tile, &dim);
      int64_t lo = (fo == DEV_FOLLOW_K ? chunk : t[fo]) * tile;
      int64_t n = dev_pad_rows(&w->pad[d], lo, lo + tile < dim ? tile : dim - lo, &origin[d]);
      lim[d] = origin[d] + n;
      any = any && n > 0;
      continue;
    }
    if (fo >= 0 && w->merged[d] > 1) {
      int64_t n;
      merged_run(s->f, &s->cfg, fo, w->merged[d], t, &origin[d], &n);
      lim[d] = origin[d] + n;
      continue;
    }
    origin[d] = fo >= 0 ? t[fo] * w->block[d] : fo == DEV_FOLLOW_K ? chunk * w->block[d] : 0;
  }
  return any;
}

void dev_hero_box(const dev_schedule *s, const int64_t *t, int64_t *lo, int64_t *n) {
  for (int d = 0; d < s->hero_rank; d++) {
    int fo = s->hero_follows[d];
    int64_t dim = s->hero_dims[d];
    if (fo >= 0 && s->hero_merged[d] > 1) {
      merged_run(s->f, &s->cfg, fo, s->hero_merged[d], t, &lo[d], &n[d]);
    } else if (fo >= 0) {
      int64_t tile = s->cfg.tile[fo];
      lo[d] = t[fo] * tile;
      n[d] = dim - lo[d] < tile ? dim - lo[d] : tile;
    } else {
      lo[d] = 0;
      n[d] = dim;
    }
  }
}

unsigned dev_lower_param_block(const dev_fusion *f, const dev_config *cfg, const dev_machine *m, int p,
                               int64_t *block) {
  const hlo_computation *c = f->comp;
  const hlo_instr *pi = p >= 0 && p < c->nparams ? c->params[p] : NULL;
  const hlo_shape *ps = pi ? leaf0(pi) : NULL;
  if (!ps || ps->type == HLO_TUPLE || ps->rank > DEV_MAX_RANK || cfg->rank != f->rank)
    return 0;
  fmap own = {NULL, NULL};
  const fmap *map = f->lower ? &f->lower->windows : &own;
  if (!f->lower && follow_analysis(f, true, &own) != 0)
    return 0;
  bool has_red = f->k_total > 0;
  unsigned special = 0;
  dev_window w;
  memset(&w, 0, sizeof w);
  w.param = pi;
  w.rank = ps->rank;
  for (int d = 0; d < ps->rank; d++) {
    const follow *fe = &map_of(map, pi)[d];
    int fo = fe->fo;
    w.dims[d] = ps->dims[d];
    w.follows[d] = fo;
    if (((fo >= 0 && fo < f->rank) || (fo == DEV_FOLLOW_K && has_red)) && fe->padded) {
      int64_t nonempty, rows;
      w.pad[d] = fe->pm;
      block[d] = padded_block(m, f, cfg, &w, d, &nonempty, &rows);
      special |= 1u << d;
    } else if (fo >= 0 && fe->nm > 1 && fo + fe->nm <= f->rank) {
      block[d] = merged_block(f, cfg, fo, fe->nm);
      special |= 1u << d;
    } else if (fo >= 0 && fe->nm == 1 && fo < f->rank) {
      block[d] = cfg->tile[fo];
    } else if (fo == DEV_FOLLOW_K && has_red) {
      block[d] = cfg->k > 0 ? cfg->k : f->k_total;
    } else {
      block[d] = ps->dims[d];
    }
  }
  fmap_free(&own);
  return special;
}

bool dev_lower_runs_contiguous(const dev_fusion *f, const dev_config *cfg) {
  if (cfg->rank != f->rank)
    return true;
  fmap own = {NULL, NULL};
  const fmap *map = f->lower ? &f->lower->windows : &own;
  if (!f->lower && follow_analysis(f, true, &own) != 0)
    return true;
  const hlo_computation *c = f->comp;
  bool ok = true;
  /* the instructions whose merged dims dev_lower checks: the parameters,
   * and the hero of a reduction */
  for (int p = 0; p <= c->nparams && ok; p++) {
    const hlo_instr *ins = p < c->nparams ? c->params[p] : f->k_total > 0 ? f->hero : NULL;
    const hlo_shape *sh = ins ? leaf0(ins) : NULL;
    if (!sh || sh->type == HLO_TUPLE || (p < c->nparams && sh->rank > DEV_MAX_RANK))
      continue;
    for (int d = 0; d < sh->rank && ok; d++) {
      const follow *fe = &map_of(map, ins)[d];
      if (fe->fo >= 0 && fe->nm > 1 && !fe->padded && fe->fo + fe->nm <= f->rank)
        ok = merged_contiguous(f, cfg, fe->fo, fe->nm);
    }
  }
  fmap_free(&own);
  return ok;
}

int dev_lower(const dev_fusion *f, const dev_config *cfg, const dev_machine *m, dev_schedule *s, char *why,
              size_t why_len) {
  memset(s, 0, sizeof *s);
  s->f = f;
  s->cfg = *cfg;
  hlo_error err;
  if (dev_config_validate(cfg, &err) != 0)
    return refuse(why, why_len, "invalid config: %s", err.msg);
  int rank = f->rank;
  if (cfg->rank != rank)
    return refuse(why, why_len, "config tiles %d dimensions but the output %s has rank %d", cfg->rank, f->name,
                  rank);
  bool has_red = f->k_total > 0;
  if (cfg->k > 0 && !has_red)
    return refuse(why, why_len, "k=%lld but the fusion has no reduction", (long long)cfg->k);
  if (cfg->pack > 1 && !has_red)
    return refuse(why, why_len, "pack=%d but the fusion has no reduction", cfg->pack);
  for (int d = 0; d < rank; d++) {
    if (cfg->tile[d] <= 0)
      return refuse(why, why_len, "tile %lld along dimension %d is not positive", (long long)cfg->tile[d], d);
    s->tiles[d] = (f->dims[d] + cfg->tile[d] - 1) / cfg->tile[d];
    if (f->dims[d] == 0)
      s->tiles[d] = 0;
    if (f->dims[d] % cfg->tile[d] != 0)
      s->ragged = true;
  }
  int64_t kchunk = cfg->k > 0 ? cfg->k : f->k_total;
  s->nk = has_red && kchunk > 0 ? (f->k_total + kchunk - 1) / kchunk : 1;
  if (has_red && f->k_total % kchunk != 0)
    s->ragged = true;
  int64_t ntiles = 1;
  for (int d = 0; d < rank; d++)
    ntiles *= s->tiles[d];
  s->steps = ntiles * s->nk;

  /* the output block */
  int64_t oblock[DEV_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++)
    oblock[d] = cfg->tile[d];
  if (check_block(m, f->out_type, rank, f->dims, oblock, "the output", why, why_len) != 0)
    return -1;
  s->out_block_bytes = block_bytes(f->out_type, rank, oblock);

  /* the windows' analysis (padded dimensions follow the output through the
   * pad: dev_lower.h, dev_window.padded) and which instructions are
   * evaluated whole: the prepared fusion's (dev_fusion_prepare), else this
   * lowering's own, which it frees (own, own_whole) */
  fmap own = {NULL, NULL};
  bool *own_whole = NULL;
  const fmap *map = f->lower ? &f->lower->windows : &own;
  if (!f->lower && follow_analysis(f, true, &own) != 0)
    return refuse(why, why_len, "out of memory");
  const hlo_computation *c = f->comp;
  s->nwin = c->nparams;
  s->wins = calloc((size_t)(s->nwin ? s->nwin : 1), sizeof *s->wins);
  if (!s->wins) {
    fmap_free(&own);
    return refuse(why, why_len, "out of memory");
  }
  int64_t vmem = s->out_block_bytes * cfg->buf;
  const bool *whole = f->lower ? f->lower->whole : (own_whole = evaluated_whole(f, c));
  if (!whole) {
    fmap_free(&own);
    dev_schedule_free(s);
    return refuse(why, why_len, "out of memory");
  }
  for (int p = 0; p < c->nparams; p++) {
    dev_window *w = &s->wins[p];
    const hlo_instr *pi = c->params[p];
    w->param = pi;
    if (!pi)
      continue;
    const hlo_shape *ps = leaf0(pi);
    if (!ps || ps->type == HLO_TUPLE) {
      w->resident = true;
      continue;
    }
    if (ps->rank > DEV_MAX_RANK) {
      fmap_free(&own);
      free(own_whole);
      dev_schedule_free(s);
      return refuse(why, why_len, "parameter %s has rank %d above the device's %d", pi->name, ps->rank,
                    DEV_MAX_RANK);
    }
    w->rank = ps->rank;
    w->resident = true;
    bool dep_dim[DEV_MAX_RANK] = {false};
    bool dep_k = false, any_padded = false;
    int64_t nonempty[DEV_MAX_RANK] = {0}, rows[DEV_MAX_RANK] = {0};
    for (int d = 0; d < ps->rank; d++) {
      w->dims[d] = ps->dims[d];
      const follow *fe = &map_of(map, pi)[d];
      int fo = fe->fo;
      w->follows[d] = fo;
      w->merged[d] = fo >= 0 ? 1 : 0;
      if (((fo >= 0 && fo < rank) || (fo == DEV_FOLLOW_K && has_red)) && fe->padded) {
        w->padded[d] = true;
        w->pad[d] = fe->pm;
        w->block[d] = padded_block(m, f, cfg, w, d, &nonempty[d], &rows[d]);
        if (fo >= 0)
          dep_dim[fo] = true;
        else
          dep_k = true;
        w->resident = false;
        any_padded = true;
      } else if (fo >= 0 && fe->nm > 1 && fo + fe->nm <= rank) {
        if (check_merged(f, cfg, fo, fe->nm, pi->name, why, why_len) != 0) {
          fmap_free(&own);
          free(own_whole);
          dev_schedule_free(s);
          return -1;
        }
        w->merged[d] = fe->nm;
        w->block[d] = merged_block(f, cfg, fo, fe->nm);
        for (int o = fo; o < fo + fe->nm; o++)
          dep_dim[o] = true;
        w->resident = false;
      } else if (fo >= 0 && fe->nm == 1 && fo < rank) {
        w->block[d] = cfg->tile[fo];
        dep_dim[fo] = true;
        w->resident = false;
      } else if (fo == DEV_FOLLOW_K && has_red) {
        w->block[d] = kchunk;
        dep_k = true;
        w->resident = false;
      } else {
        w->follows[d] = DEV_FOLLOW_NONE;
        w->merged[d] = 0;
        w->block[d] = ps->dims[d];
      }
    }
    if (check_block(m, ps->type, w->rank, w->dims, w->block, pi->name, why, why_len) != 0) {
      fmap_free(&own);
      free(own_whole);
      dev_schedule_free(s);
      return -1;
    }
    w->block_bytes = block_bytes(ps->type, w->rank, w->block);
    w->in_hbm = w->resident && pi->index >= 0 && pi->index < c->ninstrs && whole[pi->index];
    if (!w->in_hbm)
      vmem += w->block_bytes * cfg->buf;
    if (any_padded) {
      int64_t nf, elems;
      padded_fetches(s, w, dep_dim, dep_k, nonempty, rows, &nf, &elems);
      int bits = hlo_etype_bits(ps->type);
      s->dma_count += nf;
      s->dma_bytes += (elems * (bits > 0 ? bits : 8) + 7) / 8;
      continue;
    }
    int64_t nf = w->resident ? 1 : fetches(s, dep_dim, dep_k);
    s->dma_count += nf;
    s->dma_bytes += nf * w->block_bytes;
  }

  /* the hero's dims, for the accumulators of a reduction hero (dev_acc.c):
   * a dimension the hero reaches the output by through padding is computed
   * whole (propagate); a merged one is a run of it */
  const hlo_shape *hs = has_red && f->hero ? leaf0(f->hero) : NULL;
  s->hero_rank = hs && hs->rank <= HLO_MAX_RANK ? hs->rank : 0;
  for (int d = 0; d < s->hero_rank; d++) {
    const follow *fe = &map_of(map, f->hero)[d];
    int fo = fe->padded || fe->fo >= rank || fe->fo + fe->nm > rank ? DEV_FOLLOW_NONE : fe->fo;
    s->hero_dims[d] = hs->dims[d];
    s->hero_follows[d] = fo >= 0 ? fo : DEV_FOLLOW_NONE;
    s->hero_merged[d] = fo >= 0 ? fe->nm : 0;
    if (fo >= 0 && fe->nm > 1 && check_merged(f, cfg, fo, fe->nm, f->hero->name, why, why_len) != 0) {
      fmap_free(&own);
      free(own_whole);
      dev_schedule_free(s);
      return -1;
    }
  }
  /* scratch: the hero's accumulators for one output window */
  if (has_red && f->hero) {
    int64_t region = 1;
    for (int d = 0; d < s->hero_rank; d++) {
      int fo = s->hero_follows[d], nm = s->hero_merged[d];
      region *= fo < 0   ? s->hero_dims[d]
                : nm > 1 ? merged_block(f, cfg, fo, nm)
                         : (cfg->tile[fo] < f->dims[fo] ? cfg->tile[fo] : f->dims[fo]);
    }
    int abits = hlo_etype_bits(f->acc_type);
    int64_t ab = abits < 32 ? 4 : abits / 8; /* narrow types accumulate in 32-bit slots */
    s->scratch_bytes = region * ab * cfg->pack * ((cfg->flags & DEV_FLAG_SPLIT_REDUCTION) ? s->nk : 1);
  }
  fmap_free(&own);
  free(own_whole);
  vmem += s->scratch_bytes;
  s->vmem_bytes = vmem;
  if (vmem > m->vmem_bytes) {
    char a[32], b[32];
    mib(a, sizeof a, vmem);
    mib(b, sizeof b, m->vmem_bytes);
    dev_schedule_free(s);
    return refuse(why, why_len, "VMEM %s > %s: blocks x %d buffers + output + scratch do not fit", a, b,
                  cfg->buf);
  }

  /* output write-back and accumulator revisits */
  bool odep[DEV_MAX_RANK];
  for (int d = 0; d < DEV_MAX_RANK; d++)
    odep[d] = d < rank;
  int64_t writes = rank ? fetches(s, odep, false) : 1;
  if (has_red && writes > ntiles)
    s->dma_bytes += 2 * (writes - ntiles) * s->scratch_bytes, s->dma_count += 2 * (writes - ntiles);
  s->dma_count += writes;
  s->dma_bytes += writes * s->out_block_bytes;

  /* work */
  int64_t mxu = 0, mac_flops = 0;
  /* a prepared fusion lists its dots and convolutions: the rest of the
   * instructions need not be read again per config */
  int nscan = f->lower ? f->lower->nmacs : c->ninstrs;
  for (int t = 0; t < nscan; t++) {
    const hlo_instr *ins = c->instrs[f->lower ? f->lower->macs[t] : t];
    if ((ins->op != HLO_OP_DOT && ins->op != HLO_OP_CONVOLUTION) || ins->noperands < 2)
      continue;
    const hlo_shape *rs = leaf0(ins), *l = leaf0(ins->operands[0]);
    int64_t n = rs ? hlo_shape_elements(rs) : 0, kk = 1;
    if (ins->op == HLO_OP_DOT) {
      for (int j = 0; j < ins->attrs.dot.lhs_contracting.n; j++) {
        int64_t d = ins->attrs.dot.lhs_contracting.v[j];
        if (l && d >= 0 && d < l->rank)
          kk *= l->dims[d];
      }
    } else {
      const hlo_shape *kr = leaf0(ins->operands[1]);
      int64_t of = ins->attrs.conv.kernel_output_feature;
      int64_t outf = kr && of >= 0 && of < kr->rank && kr->dims[of] ? kr->dims[of] : 1;
      kk = kr ? hlo_shape_elements(kr) / outf : 1;
    }
    int ps = 1;
    if (l && l->type == HLO_F32)
      ps = passes(ins->op == HLO_OP_DOT ? hlo_num_dot_precision(ins, cfg->prec) : cfg->prec);
    mac_flops += 2 * n * kk;
    mxu += 2 * n * kk * ps;
  }
  s->mxu_flops = mxu;
  s->vpu_ops = f->flops > mac_flops ? f->flops - mac_flops : 0;
  s->eup_ops = f->transcendentals;
  return 0;
}

void dev_schedule_free(dev_schedule *s) {
  if (!s)
    return;
  free(s->wins);
  s->wins = NULL;
  s->nwin = 0;
}
