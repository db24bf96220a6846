/* lock.h — one writer per results file.
 *
 * The store's copy-and-rename writes are atomic, but two processes
 * appending to the same file would each rename their own copy over it and
 * the later rename would drop the other's fusions.  A sweep therefore
 * holds an exclusive flock(2) on "OUT.h5.lock" for as long as it writes.
 * flock is released by the kernel when the process dies, so a sweep killed
 * with kill -9 leaves no stale lock behind; the lock file itself stays (it
 * is empty, and removing it would race with a process about to lock it).
 */
#ifndef TUNE_LOCK_H
#define TUNE_LOCK_H

#include <stddef.h>

#include "hlo_error.h"

/* Takes the lock of results file `path` without waiting.  0 with *fd set
 * (release with tn_lock_release), 1 when another process holds it (*holder
 * then has what that process wrote into the lock file: "pid N on HOST since
 * TIME", or ""), -1 with err when the lock file cannot be opened. */
int tn_lock_take(const char *path, int *fd, char *holder, size_t holder_len, hlo_error *err);
void tn_lock_release(int fd);

#endif
