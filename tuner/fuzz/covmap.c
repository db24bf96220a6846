/* covmap.c — an open-addressing count table of short text keys. */
#include "covmap.h"
#include "hlo/hlo_hash.h"

#include <stdlib.h>
#include <string.h>

struct tn_covmap {
  char **keys;
  int64_t *counts;
  size_t cap, n;
};

static uint64_t hash(const char *s) { return hlo_fnv1a_str(HLO_FNV_BASIS_FINGERPRINT, s); }

tn_covmap *tn_covmap_new(void) {
  tn_covmap *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->cap = 256;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->counts = calloc(m->cap, sizeof *m->counts);
  if (!m->keys || !m->counts) {
    tn_covmap_free(m);
    return NULL;
  }
  return m;
}

void tn_covmap_free(tn_covmap *m) {
  if (!m)
    return;
  for (size_t i = 0; m->keys && i < m->cap; i++)
    free(m->keys[i]);
  free(m->keys);
  free(m->counts);
  free(m);
}

static size_t slot(const tn_covmap *m, const char *key) {
  size_t i = (size_t)hash(key) & (m->cap - 1);
  while (m->keys[i] && strcmp(m->keys[i], key) != 0)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static int grow(tn_covmap *m) {
  tn_covmap bigger = {calloc(m->cap * 2, sizeof *m->keys), calloc(m->cap * 2, sizeof *m->counts), m->cap * 2, m->n};
  if (!bigger.keys || !bigger.counts) {
    free(bigger.keys);
    free(bigger.counts);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      size_t j = slot(&bigger, m->keys[i]);
      bigger.keys[j] = m->keys[i];
      bigger.counts[j] = m->counts[i];
    }
  free(m->keys);
  free(m->counts);
  *m = bigger;
  return 0;
}

int tn_covmap_add(tn_covmap *m, const char *key) {
  if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
    return -1;
  size_t i = slot(m, key);
  if (!m->keys[i]) {
    if (!(m->keys[i] = strdup(key)))
      return -1;
    m->n++;
  }
  m->counts[i]++;
  return 0;
}

int64_t tn_covmap_count(const tn_covmap *m, const char *key) {
  if (!m)
    return 0;
  size_t i = slot(m, key);
  return m->keys[i] ? m->counts[i] : 0;
}

int64_t tn_covmap_size(const tn_covmap *m) { return m ? (int64_t)m->n : 0; }
