/* heap_policy.c — see heap_policy.h. */
#include "heap_policy.h"

#include <stdlib.h> /* defines __GLIBC__ on glibc */

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* glibc's adaptive mapping threshold stops growing at 32 MiB on 64-bit
 * systems, with a trim threshold of twice that: the same ceiling, fixed
 * from the start.  Blocks larger than 32 MiB are still mapped and
 * returned to the system when freed. */
enum { MMAP_THRESHOLD = 32 << 20, TRIM_THRESHOLD = 64 << 20 };

void tn_heap_policy_setup(void) {
#if defined(__GLIBC__)
  /* A refusal (a sanitizer's allocator, say) leaves the default: slower,
   * never wrong. */
  (void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
  (void)mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
#endif
}
