/* hlo_arena.h — a bump allocator for everything a parsed module holds.
 *
 * Why an arena: a module is built once and freed once, and a 50 MB dump has
 * millions of small nodes.  Bumping a pointer is the cheapest allocation
 * there is, and one free at the end cannot leak a node on an error path.
 */
#ifndef TUNE_HLO_ARENA_H
#define TUNE_HLO_ARENA_H

#include <stddef.h>

typedef struct hlo_arena hlo_arena;

hlo_arena *hlo_arena_new(void);          /* NULL when out of memory */
void hlo_arena_free(hlo_arena *a);       /* NULL is fine */
/* Zeroed, 16-byte aligned memory; NULL when out of memory or n overflows. */
void *hlo_arena_alloc(hlo_arena *a, size_t n);
/* n elements of size sz, zeroed; NULL on overflow or out of memory. */
void *hlo_arena_array(hlo_arena *a, size_t n, size_t sz);
/* A NUL-terminated copy of n bytes. */
char *hlo_arena_strndup(hlo_arena *a, const char *s, size_t n);
/* Bytes handed out so far (for benchmarks and tests). */
size_t hlo_arena_used(const hlo_arena *a);

#endif
