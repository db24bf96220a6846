/* h5journal.h — an HDF5 file driver that writes in place through a
 * rollback journal (journal.h).
 *
 * HDF5 decides which bytes of a file a change rewrites; only its file
 * driver sees every write.  This driver is POSIX I/O on the descriptor
 * the journal holds, plus one rule: before a write or a truncation
 * reaches bytes the file had when the change began, the journal keeps
 * them.  The file stays a plain HDF5 file that any driver reads (the
 * driver stores nothing of its own in the superblock).
 *
 * A write that fails (a full disk, a file size limit) is not reported to
 * HDF5: HDF5 1.10 does not recover from a failed flush, and crashes at
 * exit.  From then on the driver keeps what HDF5 writes in memory, serves
 * HDF5's reads from it, and the caller rolls the change back and reports
 * the saved reason (tn_h5_journal_failed).
 */
#ifndef TUNE_H5JOURNAL_H
#define TUNE_H5JOURNAL_H

#include <stdbool.h>

#include <hdf5.h>

#include "hlo/hlo_error.h"
#include "journal.h"

/* One change's driver state, owned by the caller (on its stack): set j,
 * zero the rest, and call tn_h5_journal_done after closing the file. */
typedef struct tn_h5_journal {
  tn_journal *j;
  int error;             /* errno of the first write that failed, or 0 */
  bool open_nomem;       /* the driver could not allocate its file handle */
  struct h5j_patch *patches; /* what HDF5 wrote after it, newest first */
} tn_h5_journal;

/* Opens the HDF5 file at PATH read-write through s->j.  -1 with err. */
hid_t tn_h5_journal_open(const char *path, tn_h5_journal *s, hlo_error *err);

/* 0 while every write reached the file; otherwise -1 with err giving the
 * system's reason for the first failure.  Ask after closing the file. */
int tn_h5_journal_failed(const tn_h5_journal *s, hlo_error *err);

/* Frees what s holds (not s->j). */
void tn_h5_journal_done(tn_h5_journal *s);

#endif
