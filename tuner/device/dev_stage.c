/* dev_stage.c — tiles of whole-array ops and their VMEM staging buffers
 * (dev_stage.h). */
#include "dev_stage.h"

#include <stdio.h>
#include <string.h>

#include "dev_backend.h"
#include "hlo/hlo_hash.h"
#include "hlo/hlo_index.h"

void dev_tiling_plan(dev_tiling *t, int rank, const int64_t *dims, const dev_config *cfg) {
  memset(t, 0, sizeof *t);
  t->rank = rank;
  t->ntiles = 1;
  t->volume = 1;
  for (int d = 0; d < rank; d++) {
    int c = cfg ? cfg->rank - (rank - d) : -1; /* the config dim laid over d */
    int64_t e = !cfg ? dims[d] : c >= 0 ? cfg->tile[c] : 1;
    if (e > dims[d])
      e = dims[d];
    if (e < 1)
      e = 1;
    t->dims[d] = dims[d];
    t->tile[d] = e;
    t->ntile[d] = dims[d] > 0 ? (dims[d] + e - 1) / e : 0;
    t->ntiles *= t->ntile[d];
    t->volume *= e;
  }
}

int64_t dev_tiling_box(const dev_tiling *t, int64_t k, int64_t *lo, int64_t *n) {
  int64_t count = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    int64_t g = k % t->ntile[d];
    k /= t->ntile[d];
    lo[d] = g * t->tile[d];
    n[d] = t->dims[d] - lo[d] < t->tile[d] ? t->dims[d] - lo[d] : t->tile[d];
    count *= n[d];
  }
  return count;
}

int dev_stage_open(dev_stage *s, const char *name, hlo_etype t, int64_t cap) {
  int64_t dims[1] = {cap > 0 ? cap : 1};
  s->want = 0;
  return dev_hbm_alloc(&s->vmem, name, t, 1, dims);
}

int64_t dev_race_source(const dev_race *r, uint64_t stream, int64_t f, int64_t nfetch) {
  if (!r->on || r->buf < 2 || f + r->buf >= nfetch)
    return f;
  if (r->seed & DEV_JITTER_EAGER)
    return f + r->buf;
  return hlo_mix64(hlo_mix64(r->seed, stream), (uint64_t)f) % 64 < 16 ? f + r->buf : f;
}

void dev_stage_close(dev_stage *s) { dev_hbm_free(&s->vmem); }

void dev_stage_begin(dev_stage *s, int64_t n) {
  dev_hbm_poison(&s->vmem);
  s->want = n;
}

int dev_stage_put(dev_stage *s, int64_t off, const void *src) { return dev_hbm_store(&s->vmem, off, src, false); }

void dev_stage_put_run(dev_stage *s, int64_t off, const void *src, int64_t n) {
  memcpy(s->vmem.data + (size_t)off * s->vmem.esz, src, (size_t)n * s->vmem.esz);
  memset(s->vmem.shadow + off, 0, (size_t)n);
}

int dev_stage_end(const dev_stage *s, char *why, size_t why_len) {
  if (dev_hbm_check(&s->vmem, why, why_len) != 0)
    return -1;
  const void *p = memchr(s->vmem.shadow, 1, (size_t)s->want);
  if (p) {
    snprintf(why, why_len, "uninitialized read: %s element %lld holds poison", s->vmem.name,
             (long long)((const uint8_t *)p - s->vmem.shadow));
    return -1;
  }
  return 0;
}

/* The contiguous runs of box lo/n in a row-major array of t's dims: a row
 * of the box, and where the box spans whole rows (and whole planes, ...)
 * of the array, as many of them as lie back to back.  Returns the run's
 * length in elements; *outer is the number of leading dims the runs step
 * through (hlo_index_next over n).  A tile as wide as the array is then
 * one run instead of a copy per row. */
static int64_t box_run(const dev_tiling *t, const int64_t *n, int *outer) {
  int k = t->rank - 1;
  int64_t run = t->rank ? n[k] : 1;
  while (k > 0 && n[k] == t->dims[k]) {
    k--;
    run *= n[k];
  }
  *outer = k > 0 ? k : 0;
  return run;
}

/* The flat offset in t's array of box origin lo moved by idx along the
 * first `outer` dims. */
static int64_t box_offset(const dev_tiling *t, const int64_t *lo, const int64_t *idx, int outer) {
  int64_t g = 0;
  for (int d = 0; d < t->rank; d++)
    g = g * t->dims[d] + lo[d] + (d < outer ? idx[d] : 0);
  return g;
}

/* Stages the first `limit` elements of tile t of v (row-major in its
 * box), a contiguous run at a time. */
static void stage_tile_of(dev_stage *s, const dev_tiling *tl, const hlo_value *v, int64_t t, int64_t limit) {
  int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], idx[HLO_MAX_RANK] = {0};
  int64_t cnt = dev_tiling_box(tl, t, lo, n);
  int outer;
  int64_t run = box_run(tl, n, &outer);
  cnt = cnt < limit ? cnt : limit;
  for (int64_t at = 0; at < cnt; at += run) {
    int64_t g = box_offset(tl, lo, idx, outer);
    int64_t m = cnt - at < run ? cnt - at : run;
    dev_stage_put_run(s, at, (const char *)v->data + (size_t)g * v->elem_size, m);
    if (outer > 0)
      hlo_index_next(outer, n, idx);
  }
}

int dev_stage_copy_tiled(dev_hbm *dst, const hlo_value *v, const dev_config *cfg, const dev_race *race,
                         uint64_t stream, char *why, size_t why_len) {
  dev_tiling tl;
  dev_tiling_plan(&tl, v->rank, v->dims, cfg);
  dev_stage st;
  if (dev_stage_open(&st, "vmem copy tile", v->type, tl.volume) != 0) {
    snprintf(why, why_len, "out of memory");
    return -1;
  }
  int rc = 0;
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK];
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    stage_tile_of(&st, &tl, v, t, cnt);
    int64_t src = dev_race_source(race, stream, t, tl.ntiles);
    if (src != t)
      stage_tile_of(&st, &tl, v, src, cnt);
    rc = dev_stage_end(&st, why, why_len);
    if (rc == 0)
      dev_stage_copy_out(&st, &tl, lo, n, dst->data);
  }
  dev_stage_close(&st);
  if (rc == 0)
    memset(dst->shadow, 0, (size_t)dst->count);
  return rc;
}

void dev_stage_copy_out(const dev_stage *s, const dev_tiling *t, const int64_t *lo, const int64_t *n, void *dst) {
  size_t esz = s->vmem.esz;
  int outer;
  int64_t run = box_run(t, n, &outer), runs = 1;
  for (int d = 0; d < outer; d++)
    runs *= n[d];
  int64_t idx[HLO_MAX_RANK] = {0};
  for (int64_t q = 0; q < runs; q++) {
    int64_t g = box_offset(t, lo, idx, outer);
    memcpy((char *)dst + (size_t)g * esz, dev_stage_at(s, q * run), (size_t)run * esz);
    if (outer > 0)
      hlo_index_next(outer, n, idx);
  }
}
