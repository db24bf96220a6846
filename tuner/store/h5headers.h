/* h5headers.h — checking the bytes of HDF5 version 1 object headers before
 * the library decodes them.
 *
 * HDF5 1.10 decodes an attribute message by trusting the sizes written in
 * it: a name, datatype or dataspace size larger than the message makes it
 * read past its buffer, and a variable-length string whose stored length
 * is garbage makes it allocate that much.  Version 2 object headers carry
 * a checksum that HDF5 verifies; version 1 headers (what HDF5 writes by
 * default, and what tune writes) carry none.  So before an object's
 * attributes are touched, its version 1 header is read here, byte by byte,
 * and every attribute message in it is checked to be consistent: its
 * parts fit in the message, its data fits too, and no variable-length
 * element claims more bytes than the whole file has.
 *
 * Nothing here calls HDF5; nothing prints.
 */
#ifndef TUNE_H5HEADERS_H
#define TUNE_H5HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_error.h"

/* The layout facts the check needs, read from the superblock. */
typedef struct tn_h5_layout {
  uint64_t base;      /* the base address: addresses are relative to it */
  uint64_t size;      /* the file's size in bytes */
  unsigned addr_size; /* "size of offsets", 2..8 */
  unsigned len_size;  /* "size of lengths", 2..8 */
} tn_h5_layout;

/* Reads the superblock of the open file fd; -1 with err when there is none
 * or its sizes are out of range. */
int tn_h5_read_layout(int fd, tn_h5_layout *lay, hlo_error *err);

/* Checks the object header at `addr` (relative to the base, as HDF5's
 * H5O_info_t.addr gives it) and its continuation chunks.  Version 2
 * headers are left to HDF5's checksum.  -1 with err naming the header and
 * what is wrong in it. */
int tn_h5_check_header(int fd, const tn_h5_layout *lay, uint64_t addr, hlo_error *err);

/* Checks the variable-length descriptors of a dataset's contiguous raw
 * data: count elements of esize bytes at `offset` (relative to the base,
 * as H5Dget_offset gives it), each a length and a global heap id, where
 * unit is the bytes one unit of length takes.  A length whose data could
 * not fit in the file is the garbage that makes HDF5 allocate gigabytes;
 * -1 with err for the first such element. */
int tn_h5_check_vlen_data(int fd, const tn_h5_layout *lay, uint64_t offset, uint64_t count, size_t esize,
                          size_t unit, hlo_error *err);

#endif
