/* h5image.h — HDF5 files built in memory and written to disk by our own
 * code.
 *
 * HDF5 1.10 does not survive a failed write: when H5Fclose cannot flush
 * (a full disk, a file size limit) the file stays half-closed in the
 * library, which then crashes in its exit handler trying to close it
 * again.  So no file of ours is written by HDF5.  A file is created, or
 * opened from bytes we read, with HDF5's in-memory ("core") driver and no
 * backing store; when it is complete its image is copied out and written
 * with plain write() and fsync(), whose failures are ordinary errors.
 * HDF5 itself then never touches the disk, and its closes cannot fail for
 * lack of space.
 *
 * Nothing here prints; errors come back in an hlo_error (position 0:0).
 */
#ifndef TUNE_H5IMAGE_H
#define TUNE_H5IMAGE_H

#include <stddef.h>
#include <sys/types.h>

#include <hdf5.h>

#include "hlo/hlo_error.h"

/* A new, empty in-memory HDF5 file.  `name` is only what H5Fget_name
 * reports (tn_h5_close in h5values.c writes the image there); nothing is
 * created on disk.  The file is closed with the strong close degree. */
hid_t tn_h5_mem_create(const char *name, hlo_error *err);

/* An in-memory HDF5 file opened read-write on a copy of the bytes
 * image[0..size) (the caller keeps its buffer).  -1 with err when they
 * are not an HDF5 file. */
hid_t tn_h5_mem_open(const void *image, size_t size, hlo_error *err);

/* Is file an in-memory file made above (tune opens no disk file
 * writable)?  1 yes, 0 no, -1 when HDF5 cannot tell (out of memory),
 * which must not be taken for "no": the file's image would go unwritten. */
int tn_h5_mem_is(hid_t file);

/* Flushes an in-memory file and copies its bytes into *image (malloc'd,
 * the caller frees) and *size.  The file stays open. */
int tn_h5_mem_image(hid_t file, void **image, size_t *size, hlo_error *err);

/* Reads a whole regular file from the open descriptor fd (at offset 0);
 * *image is malloc'd.  -1 with err (the message names `path`). */
int tn_h5_read_fd(int fd, const char *path, void **image, size_t *size, hlo_error *err);

/* Writes image[0..size) to fd from the start and fsyncs it; -1 with err
 * (naming `path`, with the system's reason: "No space left on device"). */
int tn_h5_write_fd(int fd, const char *path, const void *image, size_t size, hlo_error *err);

#endif
