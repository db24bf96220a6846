/* h5values.h — hlo_values to and from HDF5, in a layout any HDF5 client reads.
 *
 * This is the exchange format of `tune --eval` (and of reproducers): a file
 * holds the inputs of one evaluation and what came out of it,
 *
 *   /inputs/<k>    entry parameter k (k in decimal, from 0)
 *   /outputs/<k>   leaf k of the root value, tuples flattened depth first
 *
 * and every dataset carries a string attribute `dtype` with the HLO element
 * type name ("f32", "bf16", ...).  Elements are stored so that h5py and numpy
 * see ordinary arrays:
 *
 *   HLO type                 HDF5 type                        numpy sees
 *   f32, f64                 IEEE float LE                    float32/64
 *   f16                      IEEE half LE (a 2-byte float)    float16
 *   s8..s64, u8..u64         integer LE of the same width     int8..uint64
 *   s1, s2, s4 / u1, u2, u4  8-bit signed / unsigned integer  int8 / uint8
 *   pred                     8-bit unsigned integer, 0 or 1   uint8
 *   bf16                     16-bit unsigned integer          uint16 (the bits)
 *   f8*, f4e2m1fn            8-bit unsigned integer           uint8 (the bits)
 *   c64, c128                compound {r, i} of float/double  complex64/128
 *
 * A scalar is a dataset of shape () (an HDF5 scalar dataspace).  A tuple-
 * shaped entry parameter (rare) becomes a group /inputs/<k> whose datasets
 * 0, 1, ... are its leaves, depth first.  A token holds no data and is no
 * leaf: a token parameter or a token in a tuple has no dataset (and takes
 * no number); it is written as nothing and read as a new token.
 *
 * Reading accepts the same layout and also what numpy writes through h5py
 * without our help: when the `dtype` attribute is absent the HLO type is
 * inferred from the HDF5 type (2/4/8-byte floats are f16/f32/f64, integers
 * by sign and width, h5py's boolean enum is pred, a compound of two floats
 * is complex).  The attribute is needed only where the HDF5 type cannot say
 * it: bf16, f8 and f4 bit patterns, and sub-byte integers.
 *
 * Errors are returned as values: functions return 0 or -1 and fill an
 * hlo_error whose message names the dataset ("/inputs/1: shape [3,4] does
 * not match parameter 1 f32[4,3]"); callers add the file name.  Nothing is
 * printed: HDF5's automatic error printing is switched off around every
 * call into the library.  Every HDF5 handle opened here is closed on every
 * path.
 */
#ifndef TUNE_STORE_H5VALUES_H
#define TUNE_STORE_H5VALUES_H

#include <stdint.h>

#include <hdf5.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

/* ---- files -------------------------------------------------------------- */

/* Creates (truncating) or opens read-only an HDF5 file; a negative id with
 * err set on failure.  Close with tn_h5_close.  A created file is built in
 * memory (h5image.h) and written to PATH only by tn_h5_close, so nothing
 * is on disk until then and a failed write is an error, not a crash. */
hid_t tn_h5_create(const char *path, hlo_error *err);
hid_t tn_h5_open_read(const char *path, hlo_error *err);
/* Closes a file opened above; a created one is written out and fsynced
 * (a symbolic link at its path is refused).  -1 with err if that fails,
 * e.g. "No space left on device"; the handle is closed either way. */
int tn_h5_close(hid_t file, hlo_error *err);

/* ---- attributes --------------------------------------------------------- */

/* Scalar attributes on any object (file, group, dataset); an existing
 * attribute of that name is an error.  Strings are stored as variable-
 * length UTF-8, bytes that are not UTF-8 replaced with U+FFFD (utf8.h). */
int tn_h5_attr_set_str(hid_t obj, const char *name, const char *value, hlo_error *err);
int tn_h5_attr_set_i64(hid_t obj, const char *name, int64_t value, hlo_error *err);
int tn_h5_attr_set_u64(hid_t obj, const char *name, uint64_t value, hlo_error *err);
int tn_h5_attr_set_f64(hid_t obj, const char *name, double value, hlo_error *err);
/* Reads a string attribute (fixed or variable length) into buf; -1 with err
 * when absent, not a string, or longer than buflen - 1. */
int tn_h5_attr_get_str(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err);
/* A one-dimensional attribute of n variable-length UTF-8 strings (n may be
 * 0): a list stays a list, h5py reads it as an array of str. */
int tn_h5_attr_set_str_list(hid_t obj, const char *name, int n, const char *const *values, hlo_error *err);
/* Any scalar attribute as text: a string as it is, an integer in decimal,
 * a float as %.17g (so strtod gives back the same double).  For readers
 * of an attribute whose type changed between schema versions. */
int tn_h5_attr_get_text(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err);

/* ---- single arrays ------------------------------------------------------ */

/* Writes array value v as dataset `path` (relative to loc, whose groups
 * must exist) with its dtype attribute. */
int tn_h5_write_array(hid_t loc, const char *path, const hlo_value *v, hlo_error *err);

/* Reads dataset `path` into a new array value (*out, one reference).  When
 * want is non-NULL the dataset's type and shape must match that array
 * shape, and `what` ("parameter 1") names it in the message. */
int tn_h5_read_array(hid_t loc, const char *path, const hlo_shape *want, const char *what,
                     hlo_value **out, hlo_error *err);

/* ---- the /inputs and /outputs sets ------------------------------------- */

/* Writes args[k] as group/<k> for k < n (tuples as sub-groups of leaves).
 * The group, and any missing groups above it, are created. */
int tn_h5_write_inputs(hid_t loc, const char *group, int n, hlo_value *const *args, hlo_error *err);

/* Writes the array leaves of root, depth first, as group/0, group/1, ...
 * (an array root gives group/0 alone).  Missing groups are created, so
 * "replicas/3/outputs" works. */
int tn_h5_write_outputs(hid_t loc, const char *group, const hlo_value *root, hlo_error *err);

/* Reads one value per parameter of computation c from group/<k>, checking
 * each against the parameter's shape; args[k] receive one reference each.
 * On failure nothing is left in args. */
int tn_h5_read_inputs(hid_t loc, const char *group, const hlo_computation *c, hlo_value **args,
                      hlo_error *err);

/* Reads group/0, group/1, ... back into a value of shape `root` (a tuple
 * is rebuilt from its leaves). */
int tn_h5_read_outputs(hid_t loc, const char *group, const hlo_shape *root, hlo_value **out,
                       hlo_error *err);

#endif
