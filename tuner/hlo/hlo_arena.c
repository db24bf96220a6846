/* hlo_arena.c — chunks grow geometrically so a huge module needs few mallocs
 * while a tiny one wastes little; a request larger than a chunk gets a chunk
 * of its own. */
#include "hlo_arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct hlo_arena {
  chunk *head;
  size_t next_size;
  size_t total;
};

enum { FIRST_CHUNK = 4096, MAX_CHUNK = 16u << 20 };

hlo_arena *hlo_arena_new(void) {
  hlo_arena *a = calloc(1, sizeof *a);
  if (a)
    a->next_size = FIRST_CHUNK;
  return a;
}

void hlo_arena_free(hlo_arena *a) {
  if (!a)
    return;
  chunk *c = a->head;
  while (c) {
    chunk *next = c->next;
    free(c);
    c = next;
  }
  free(a);
}

static chunk *grow(hlo_arena *a, size_t need) {
  size_t size = a->next_size;
  if (size < need)
    size = need;
  if (size > SIZE_MAX - sizeof(chunk))
    return NULL;
  chunk *c = malloc(sizeof(chunk) + size);
  if (!c)
    return NULL;
  c->size = size;
  c->used = 0;
  c->next = a->head;
  a->head = c;
  if (a->next_size < MAX_CHUNK)
    a->next_size *= 2;
  return c;
}

void *hlo_arena_alloc(hlo_arena *a, size_t n) {
  if (n > SIZE_MAX - 15)
    return NULL;
  n = (n + 15) & ~(size_t)15;
  if (n == 0)
    n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    c = grow(a, n);
    if (!c)
      return NULL;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

void *hlo_arena_array(hlo_arena *a, size_t n, size_t sz) {
  if (sz != 0 && n > SIZE_MAX / sz)
    return NULL;
  return hlo_arena_alloc(a, n * sz);
}

char *hlo_arena_strndup(hlo_arena *a, const char *s, size_t n) {
  if (n == SIZE_MAX)
    return NULL;
  char *p = hlo_arena_alloc(a, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

size_t hlo_arena_used(const hlo_arena *a) { return a->total; }
