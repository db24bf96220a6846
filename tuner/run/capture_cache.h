/* capture_cache.h — the graph captures (capture.h) of the last few modules
 * an MPI rank has seen, so that its units are not each paid for with a
 * whole-module evaluation.
 *
 * One process sweeping a module evaluates it once and checks every unit
 * on the captured operands.  An MPI rank gets one unit per job, and
 * before this cache it evaluated the whole module again for every unit:
 * on datasets/ two ranks spent about twice the CPU of one process, all of
 * it in repeated captures of the three multi-fusion modules.
 *
 * An entry is found by a key the caller builds from everything the
 * capture depends on (the file's identity, the seed, the profile, the
 * iteration, the limits).  The cache keeps a few entries, least recently
 * used out first, and refuses one whose values would take more than its
 * byte limit, so a rank holds at most that much on top of its work.
 * Captured values are only read by the checks (fusion_run.c takes references
 * and never writes them), so one capture serves any number of jobs.
 */
#ifndef TUNE_CAPTURE_CACHE_H
#define TUNE_CAPTURE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

#define TN_CAPTURE_CACHE_ENTRIES 4

typedef struct tn_capture_cache_entry {
  char *key;        /* NULL: a free slot */
  tn_capture *caps; /* n of them, owned */
  int n;
  size_t bytes;     /* the captured values' bytes, shared ones counted once per use */
  uint64_t used;    /* the cache's clock at the last get or put */
} tn_capture_cache_entry;

typedef struct tn_capture_cache {
  tn_capture_cache_entry e[TN_CAPTURE_CACHE_ENTRIES];
  uint64_t clock;
  size_t max_bytes; /* all entries together; 0: TN_CAPTURE_CACHE_BYTES */
} tn_capture_cache;

/* The default limit on what the cache holds. */
#define TN_CAPTURE_CACHE_BYTES ((size_t)256 << 20)

/* The captures stored under key (n of them), or NULL. */
const tn_capture *tn_capture_cache_get(tn_capture_cache *c, const char *key, int n);

/* Stores caps (n of them) under key and takes ownership of them: 0.  When
 * they are larger than the limit, or memory runs out, nothing is stored
 * and the caller keeps them: -1. */
int tn_capture_cache_put(tn_capture_cache *c, const char *key, tn_capture *caps, int n);

/* Frees every entry; the cache is empty and usable again. */
void tn_capture_cache_clear(tn_capture_cache *c);

#endif
