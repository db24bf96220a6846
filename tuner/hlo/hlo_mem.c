/* hlo_mem.c — the account of large host allocations (hlo_mem.h).  Plain
 * atomics: takes and gives come from every OpenMP thread of a sweep. */
#include "hlo_mem.h"

static int64_t limit_bytes; /* 0: none */
static int64_t held_bytes;
static int64_t peak_bytes;
static uint64_t refusals;

void hlo_mem_set_limit(int64_t bytes) { __atomic_store_n(&limit_bytes, bytes > 0 ? bytes : 0, __ATOMIC_RELAXED); }

int64_t hlo_mem_limit(void) { return __atomic_load_n(&limit_bytes, __ATOMIC_RELAXED); }

bool hlo_mem_take(size_t n) {
  int64_t lim = hlo_mem_limit();
  int64_t want = n > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)n;
  int64_t now = __atomic_add_fetch(&held_bytes, want, __ATOMIC_RELAXED);
  if (lim > 0 && now > lim) {
    __atomic_sub_fetch(&held_bytes, want, __ATOMIC_RELAXED);
    __atomic_add_fetch(&refusals, 1, __ATOMIC_RELAXED);
    return false;
  }
  int64_t p = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
  while (now > p && !__atomic_compare_exchange_n(&peak_bytes, &p, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  return true;
}

void hlo_mem_give(size_t n) {
  int64_t back = n > (size_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)n;
  __atomic_sub_fetch(&held_bytes, back, __ATOMIC_RELAXED);
}

int64_t hlo_mem_held(void) { return __atomic_load_n(&held_bytes, __ATOMIC_RELAXED); }

int64_t hlo_mem_peak(void) { return __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED); }

void hlo_mem_reset_peak(void) { __atomic_store_n(&peak_bytes, hlo_mem_held(), __ATOMIC_RELAXED); }

uint64_t hlo_mem_refusals(void) { return __atomic_load_n(&refusals, __ATOMIC_RELAXED); }
