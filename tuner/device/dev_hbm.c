/* dev_hbm.c — HBM buffers with redzones, poison and a shadow map. */
#include "dev_hbm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hlo/hlo_mem.h"

/* A real module's operand can be a GiB (a f32[32,4096,2048] parameter),
 * and every candidate allocates its buffers afresh.  Above glibc's mmap
 * threshold (heap_policy.h) each such block is a new mapping that the
 * kernel faults in 4 KiB at a time: checking that reduce with 6
 * candidates took 2.25 million page faults and as much CPU in the kernel
 * as in tune.  Big blocks are therefore aligned to 2 MiB and offered to
 * transparent huge pages, one fault per 2 MiB where the kernel grants
 * them on request (its "madvise" mode, Debian's default); where it does
 * not, nothing changes.  The contents are the same either way. */
#define HBM_HUGE ((size_t)2 << 20)

static void *hbm_malloc(size_t n) {
  if (n < 4 * HBM_HUGE)
    return malloc(n);
  void *p = NULL;
  if (posix_memalign(&p, HBM_HUGE, n) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, n & ~(HBM_HUGE - 1), MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
  return p;
}

static void *hbm_calloc(size_t n) {
  if (n < 4 * HBM_HUGE)
    return calloc(n, 1);
  void *p = hbm_malloc(n);
  if (p)
    memset(p, 0, n);
  return p;
}

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
  b->raw = hbm_malloc(bytes + 2 * DEV_REDZONE);
  b->shadow = hbm_calloc((size_t)(b->count ? b->count : 1));
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
  size_t total = (size_t)b->count * b->esz;
  if (b->esz == 1) {
    memset(b->data, pat[0], total);
  } else if (total > 0) {
    /* one element, then the filled part copied onto the rest, doubling:
     * a few large memcpys.  The typed per-element loops this replaces
     * were not vectorised at -O2 and were a tenth of a small gather's or
     * scatter's run (an output and every staging tile are poisoned). */
    memcpy(b->data, pat, b->esz);
    for (size_t have = b->esz; have < total; have *= 2)
      memcpy(b->data + have, b->data, have < total - have ? have : total - have);
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

_Static_assert(DEV_REDZONE % 8 == 0, "redzones are checked a word at a time");

/* Whether the DEV_REDZONE bytes at p all hold the canary, eight at a time. */
static bool redzone_intact(const uint8_t *p) {
  const uint64_t want = 0x0101010101010101ull * DEV_CANARY;
  for (int i = 0; i < DEV_REDZONE; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w != want)
      return false;
  }
  return true;
}

int dev_hbm_check(const dev_hbm *b, char *why, size_t n) {
  size_t bytes = (size_t)b->count * b->esz;
  /* the intact case a word at a time (a sort checks its buffer per
   * block); the byte loops below find where a damaged redzone was hit */
  if (redzone_intact(b->raw) && redzone_intact(b->data + bytes))
    return 0;
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
