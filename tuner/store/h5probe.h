/* h5probe.h — does an HDF5 file read without crashing the library?
 *
 * HDF5 1.10 trusts the sizes written in a file's object headers.  One
 * changed byte in an attribute message makes H5Aexists read past its
 * buffer (a crash inside the library), or makes a variable-length string
 * claim a gigabyte that H5Aread then allocates.  No check made through the
 * API can come first: the damage is met while HDF5 decodes the header,
 * before any call of ours returns.
 *
 * So a file is read once in a child process before tune reads it for
 * real: first every version 1 object header is checked byte by byte
 * (h5headers.h), then every object, attribute and dataset is read (the
 * variable-length descriptors of contiguous datasets checked first), with
 * a bound on the child's memory and time.  A tree of objects that cannot
 * be walked to the end is refused too: a reader going by path could still
 * reach what the walk did not check.  A child that dies (a signal, a sanitizer
 * report), runs out of its memory bound or out of time means the file is
 * damaged, and tune refuses it with an error instead of crashing.  So
 * does an object, attribute or dataset HDF5 cannot open or read (not for
 * want of memory): HDF5 1.10 leaks on those error paths, so the reader in
 * the parent should never take them.  A file HDF5 cannot open at all, or
 * one that is not HDF5, is left to the real reader, which says why in its
 * own words.
 */
#ifndef TUNE_H5PROBE_H
#define TUNE_H5PROBE_H

#include <sys/stat.h>

#include "hlo/hlo_error.h"

/* 0 when reading PATH whole neither crashed HDF5 nor needed more than the
 * memory bound; -1 with err ("PATH: corrupt HDF5 file: ...") otherwise.
 * A file this process found sound before is not read again while its
 * inode, size, modification and status-change times are unchanged (any
 * write changes them).  Thread-safe. */
int tn_h5_probe(const char *path, hlo_error *err);

/* The caller has just written the file st describes itself, under the
 * results lock: tn_h5_probe need not read it while it stays unchanged. */
void tn_h5_probe_vouch(const struct stat *st);

/* How many times tn_h5_probe has read a file in a child (for tests). */
unsigned long tn_h5_probe_children(void);

#endif
