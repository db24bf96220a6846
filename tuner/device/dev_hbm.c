/* dev_hbm.c — HBM buffers with redzones, poison and a shadow map. */
#include "dev_hbm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_mem.h"

int dev_hbm_alloc(dev_hbm *b, const char *name, hlo_etype t, int rank, const int64_t *dims) {
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "%s", name);
  b->type = t;
  b->rank = rank;
  b->count = 1;
  for (int d = 0; d < rank; d++) {
    b->dims[d] = dims[d];
    b->count *= dims[d];
  }
  b->esz = hlo_etype_host_size(t);
  size_t bytes = (size_t)b->count * b->esz;
  /* The buffer, its redzones and its shadow are held in the process's
   * account (hlo_mem.h): one over --max-memory fails as out of memory. */
  size_t held = bytes + 2 * DEV_REDZONE + (size_t)(b->count ? b->count : 1);
  if (!hlo_mem_take(held))
    return -1;
  b->held = held;
  b->raw = malloc(bytes + 2 * DEV_REDZONE);
  b->shadow = calloc((size_t)(b->count ? b->count : 1), 1);
  if (!b->raw || !b->shadow) {
    dev_hbm_free(b);
    return -1;
  }
  memset(b->raw, DEV_CANARY, DEV_REDZONE);
  memset(b->raw + DEV_REDZONE + bytes, DEV_CANARY, DEV_REDZONE);
  b->data = b->raw + DEV_REDZONE;
  return 0;
}

void dev_hbm_free(dev_hbm *b) {
  hlo_mem_give(b->held);
  b->held = 0;
  free(b->raw);
  free(b->shadow);
  b->raw = b->data = b->shadow = NULL;
}

void dev_hbm_pattern(hlo_etype t, void *out) {
  size_t esz = hlo_etype_host_size(t);
  switch (t) {
  case HLO_F32: { uint32_t p = 0x7FA5A5A5u; memcpy(out, &p, 4); return; }
  case HLO_F64: { uint64_t p = 0x7FF4A5A5A5A5A5A5ull; memcpy(out, &p, 8); return; }
  case HLO_BF16: { uint16_t p = 0x7FA5u; memcpy(out, &p, 2); return; }
  case HLO_F16: { uint16_t p = 0x7CA5u; memcpy(out, &p, 2); return; }
  default: memset(out, 0xA5, esz); return;
  }
}

void dev_hbm_poison(dev_hbm *b) {
  uint8_t pat[16];
  dev_hbm_pattern(b->type, pat);
  /* typed fills for the common widths (one loop the compiler vectorises) */
  if (b->esz == 4) {
    uint32_t v, *d = (uint32_t *)(void *)b->data;
    memcpy(&v, pat, 4);
    for (int64_t i = 0; i < b->count; i++)
      d[i] = v;
  } else if (b->esz == 2) {
    uint16_t v, *d = (uint16_t *)(void *)b->data;
    memcpy(&v, pat, 2);
    for (int64_t i = 0; i < b->count; i++)
      d[i] = v;
  } else if (b->esz == 1) {
    memset(b->data, pat[0], (size_t)b->count);
  } else {
    for (int64_t i = 0; i < b->count; i++)
      memcpy(b->data + (size_t)i * b->esz, pat, b->esz);
  }
  memset(b->shadow, 1, (size_t)b->count);
}

void dev_hbm_fill(dev_hbm *b, const hlo_value *v) {
  memcpy(b->data, v->data, (size_t)b->count * b->esz);
  memset(b->shadow, 0, (size_t)b->count);
}

int dev_hbm_store(dev_hbm *b, int64_t off, const void *src, bool poisoned) {
  int64_t byte = off * (int64_t)b->esz;
  int64_t end = b->count * (int64_t)b->esz;
  if (byte < -DEV_REDZONE || byte + (int64_t)b->esz > end + DEV_REDZONE)
    return -1;
  memcpy(b->data + byte, src, b->esz);
  if (off >= 0 && off < b->count)
    b->shadow[off] = poisoned;
  return 0;
}

int dev_hbm_check(const dev_hbm *b, char *why, size_t n) {
  size_t bytes = (size_t)b->count * b->esz;
  for (int i = 0; i < DEV_REDZONE; i++)
    if (b->raw[i] != DEV_CANARY) {
      snprintf(why, n, "redzone write: %s at byte offset -%d before the start", b->name, DEV_REDZONE - i);
      return -1;
    }
  for (int i = 0; i < DEV_REDZONE; i++)
    if (b->data[bytes + (size_t)i] != DEV_CANARY) {
      snprintf(why, n, "redzone write: %s at byte offset +%d past the end", b->name, i);
      return -1;
    }
  return 0;
}

int64_t dev_hbm_first_poison(const dev_hbm *b) {
  const uint8_t *p = memchr(b->shadow, 1, (size_t)b->count);
  return p ? (int64_t)(p - b->shadow) : -1;
}

hlo_value *dev_hbm_value(const dev_hbm *b) {
  hlo_value *v = hlo_value_array_uninit(b->type, b->rank, b->dims); /* every byte is copied below */
  if (v)
    memcpy(v->data, b->data, (size_t)b->count * b->esz);
  return v;
}
