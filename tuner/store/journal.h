/* journal.h — changing a results file in place, all or nothing.
 *
 * A sweep adds one fusion at a time to a results file that may already
 * hold gigabytes.  Copying the file for every fusion (store.c's
 * copy-and-rename) costs time in the file's size; writing in place costs
 * time in the change's size, but HDF5 rewrites headers, B-tree nodes and
 * the superblock where they are, so a process killed halfway leaves a
 * file that is neither the old one nor the new one.
 *
 * A rollback journal closes that gap.  Before any byte that existed when
 * the change began is overwritten (or cut off by a truncation), the
 * 4 KiB pages holding it are copied to "PATH.journal" and the journal is
 * synced.  Bytes appended past the old end need no copy: cutting the file
 * back to its old size removes them.  The change commits by syncing the
 * file and deleting the journal: the journal's absence is the commit
 * marker.  A journal found with no writer behind it is "hot": its pages
 * are written back and the file cut to its old size, which brings back
 * the file exactly as it was before the interrupted change.
 *
 * Who is behind a journal is told by flock(2) on the results file itself.
 * A change holds LOCK_EX for its whole length (milliseconds); HDF5 1.10
 * readers (h5dump, h5py, tune) take LOCK_SH while a file is open, so they
 * never see a change half made: they are refused for that moment, and a
 * writer that cannot get LOCK_EX because a reader has the file open does
 * not wait for it (store.c then falls back to copy-and-rename, which never
 * touches the file the reader has open).  A journal seen while holding
 * either lock is therefore hot.
 *
 * Each journal record carries a checksum, so a record torn by a power cut
 * (written after the last sync, never followed by an overwrite) is known
 * and ignored.  The header names the file's device and inode: a journal
 * that does not belong to the file beside it is refused, never applied.
 */
#ifndef TUNE_JOURNAL_H
#define TUNE_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hlo/hlo_error.h"

typedef struct tn_journal tn_journal;

/* Begins a change to the existing regular file PATH (not a symbolic
 * link): takes LOCK_EX on it, rolls back a hot journal, and starts a new
 * one.  NULL with err on failure; *busy is set when the only reason is
 * that a reader has the file open, or that PATH is a symbolic link, so
 * the caller may write it another way. */
tn_journal *tn_journal_begin(const char *path, bool *busy, hlo_error *err);

/* The file's descriptor, open read-write, owned by j. */
int tn_journal_fd(const tn_journal *j);

/* Keeps the original bytes of [off, off + len) that existed when the
 * change began, before they are overwritten or truncated away; durable
 * on return.  0, or -1 with errno. */
int tn_journal_keep(tn_journal *j, uint64_t off, uint64_t len);

/* Makes the change durable and final, releases the lock and frees j;
 * *st receives the file's status as committed.  On failure the change is
 * rolled back (and j freed) and -1 returned with err. */
int tn_journal_commit(tn_journal *j, struct stat *st, hlo_error *err);

/* Undoes the change, releases the lock and frees j.  -1 with err when the
 * file could not be restored (the journal is then left for the next
 * opener). */
int tn_journal_rollback(tn_journal *j, hlo_error *err);

/* For a reader about to open PATH: takes LOCK_SH on it (waiting out a
 * change in progress), and when a hot journal lies beside it rolls the
 * interrupted change back first.  0 with *fd holding the lock (release it
 * with tn_journal_read_end once HDF5 has the file open: HDF5 then holds
 * its own), or -1 with err, for instance when the reader may not write
 * the file a rollback must restore. */
int tn_journal_read_begin(const char *path, int *fd, hlo_error *err);
void tn_journal_read_end(int fd);

/* Reads up to n bytes of fd at off, through interruptions and short
 * reads: the count read (short only at the end of the file), or -1 with
 * errno. */
ssize_t tn_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* Syncs the directory holding PATH, so that a rename or unlink in it
 * survives a power cut; 0, or -1 with errno. */
int tn_sync_dir_of(const char *path);

#endif
