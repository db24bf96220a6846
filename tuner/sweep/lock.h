/* lock.h — one writer per results file.
 *
 * The store's copy-and-rename writes are atomic, but two processes
 * appending to the same file would each rename their own copy over it and
 * the later rename would drop the other's fusions.  Every writer of a
 * results file (--check -o, --sweep, --merge) therefore holds an exclusive
 * flock(2) on "OUT.h5.lock" for as long as it writes, and a second writer
 * does not wait: it is refused at once, before it has done any work, with
 * the holder named.  flock is released by the kernel when the process
 * dies, so a writer killed with kill -9 leaves no stale lock behind; the
 * lock file itself stays (removing it would race with a process about to
 * lock it).
 *
 * The lock file is opened with O_NOFOLLOW and must be a regular file with
 * one link: it is truncated to record the holder, so a link planted under
 * its name must not let that truncation reach another file.
 */
#ifndef TUNE_LOCK_H
#define TUNE_LOCK_H

#include "hlo/hlo_error.h"

/* Takes the lock of results file `path` without waiting: 0 with *fd set
 * (release with tn_lock_release), or -1 with err.  When another process
 * holds it the message is "PATH is locked by another writer (pid N on HOST
 * since TIME)". */
int tn_lock_take(const char *path, int *fd, hlo_error *err);
void tn_lock_release(int fd);

#endif
