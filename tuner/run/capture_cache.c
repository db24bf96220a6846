/* capture_cache.c — a small least-recently-used store of graph captures
 * (capture_cache.h).
 *
 * Four entries and a linear scan: a rank works through a handful of
 * modules at a time, and a job's check costs far more than any lookup.
 */
#include "capture_cache.h"

#include <stdlib.h>
#include <string.h>

static size_t value_bytes(const hlo_value *v) {
  if (!v)
    return 0;
  if (v->type == HLO_TUPLE) {
    size_t b = 0;
    for (int i = 0; i < v->ntuple; i++)
      b += value_bytes(v->elems[i]);
    return b;
  }
  return (size_t)v->count * v->elem_size;
}

static size_t caps_bytes(const tn_capture *caps, int n) {
  size_t b = 0;
  for (int i = 0; i < n; i++)
    if (caps[i].args)
      for (int a = 0; a < caps[i].nargs; a++)
        b += value_bytes(caps[i].args[a]);
  return b;
}

static void entry_free(tn_capture_cache_entry *e) {
  free(e->key);
  tn_capture_free(e->caps, e->n);
  free(e->caps);
  memset(e, 0, sizeof *e);
}

static size_t limit(const tn_capture_cache *c) { return c->max_bytes ? c->max_bytes : TN_CAPTURE_CACHE_BYTES; }

const tn_capture *tn_capture_cache_get(tn_capture_cache *c, const char *key, int n) {
  for (int i = 0; i < TN_CAPTURE_CACHE_ENTRIES; i++) {
    tn_capture_cache_entry *e = &c->e[i];
    if (e->key && e->n == n && strcmp(e->key, key) == 0) {
      e->used = ++c->clock;
      return e->caps;
    }
  }
  return NULL;
}

int tn_capture_cache_put(tn_capture_cache *c, const char *key, tn_capture *caps, int n) {
  size_t bytes = caps_bytes(caps, n);
  if (bytes > limit(c))
    return -1;
  char *k = strdup(key);
  if (!k)
    return -1;
  /* Make room: evict the least recently used until the newcomer fits in
   * both the slots and the bytes.  It fits once the cache is empty. */
  for (;;) {
    size_t held = 0;
    int free_slot = -1, oldest = -1;
    for (int i = 0; i < TN_CAPTURE_CACHE_ENTRIES; i++) {
      tn_capture_cache_entry *e = &c->e[i];
      if (!e->key) {
        if (free_slot < 0)
          free_slot = i;
        continue;
      }
      held += e->bytes;
      if (oldest < 0 || e->used < c->e[oldest].used)
        oldest = i;
    }
    if (free_slot >= 0 && held + bytes <= limit(c)) {
      tn_capture_cache_entry *e = &c->e[free_slot];
      e->key = k;
      e->caps = caps;
      e->n = n;
      e->bytes = bytes;
      e->used = ++c->clock;
      return 0;
    }
    entry_free(&c->e[oldest]);
  }
}

void tn_capture_cache_clear(tn_capture_cache *c) {
  for (int i = 0; i < TN_CAPTURE_CACHE_ENTRIES; i++)
    if (c->e[i].key)
      entry_free(&c->e[i]);
}
