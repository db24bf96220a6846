/* heap_policy.h — how this process's allocator gives memory back.
 *
 * A long sweep appends hundreds of fusions to one results file, and each
 * append makes HDF5 allocate and calloc its chunk and filter buffers
 * (hundreds of KiB each) and free them again.  glibc sizes its "give the
 * top of the heap back to the system" threshold from the largest block it
 * has had to map so far, which is small here; once the heap's free top
 * crosses it (seen after about 350 appends of a half-megabyte fusion), every
 * append returns megabytes to the kernel and faults them back in while
 * zeroing them: about 1,400 page faults and twice the CPU per append.
 * Fixing the two thresholds at the ceiling glibc's own adaptation would
 * reach keeps that memory in the process instead.  Results do not depend
 * on it. */
#ifndef TUNE_HEAP_POLICY_H
#define TUNE_HEAP_POLICY_H

/* Sets the policy for the whole process; call once, first thing in main,
 * before any thread starts. */
void tn_heap_policy_setup(void);

#endif
