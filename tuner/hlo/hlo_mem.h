/* hlo_mem.h — one process-wide account of the host memory held by
 * run-time values (hlo_value.h) and the device's HBM buffers, with a limit.
 *
 * Why: a unit's peak memory is estimated from shapes before it runs
 * (tn_memory_estimate), and a unit over --max-memory is refused.  But some
 * memory is not visible in shapes: every simulated replica holds its own
 * values, a loop carries its state, the whole-module evaluation that
 * captures each unit's operands holds them all.  Without an account, such a
 * unit grows the process past the limit until the kernel kills it.  With
 * it, the allocation that would cross the limit fails the way an
 * allocation the host refuses does (NULL, reported as out of memory), and
 * the caller tells the two apart by hlo_mem_refusals().
 *
 * Only large, long-lived blocks go through the account (values' element
 * storage, device buffers and their shadows); the evaluator's scratch and
 * small bookkeeping do not, which is why a caller keeps some room under
 * the machine's memory.  All functions are thread-safe.
 */
#ifndef TUNE_HLO_MEM_H
#define TUNE_HLO_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes the account may hold; 0 (the start) means no limit. */
void hlo_mem_set_limit(int64_t bytes);
int64_t hlo_mem_limit(void);

/* Adds n bytes to the account; false, leaving it unchanged and counting a
 * refusal, when that would take it over the limit. */
bool hlo_mem_take(size_t n);
/* Gives back n bytes taken before. */
void hlo_mem_give(size_t n);

int64_t hlo_mem_held(void);     /* bytes held now */
int64_t hlo_mem_peak(void);     /* the most held at once since the last reset */
void hlo_mem_reset_peak(void);  /* the peak starts again from what is held now */
uint64_t hlo_mem_refusals(void); /* how many takes were refused so far */

#endif
