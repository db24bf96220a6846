/* h5util.h — HDF5 plumbing shared by the store's sources (h5values.c,
 * store.c, store_read.c), so that each does not carry its own copy.
 *
 * Errors: store errors have no position in an HLO file, so they are set
 * with line and column 0.  Closers: each accepts the -1 of a handle that
 * was never opened, which lets a function release everything in one
 * cleanup block whatever step failed.  Nothing here prints; callers run
 * inside H5E_BEGIN_TRY / H5E_END_TRY as they already do.
 */
#ifndef TUNE_H5UTIL_H
#define TUNE_H5UTIL_H

#include <hdf5.h>

#include "hlo_error.h"

/* Sets err (position 0:0) and returns -1. */
int tn_h5_fail(hlo_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts "what: " in front of the message already in err; returns -1. */
int tn_h5_prefix_error(hlo_error *err, const char *what);

void tn_h5_close_obj(hid_t id);
void tn_h5_close_type(hid_t t);
void tn_h5_close_space(hid_t s);
void tn_h5_close_dset(hid_t d);
void tn_h5_close_group(hid_t g);
void tn_h5_close_attr(hid_t a);
void tn_h5_close_plist(hid_t p);

/* A scalar numeric attribute of obj read as the native type mtype
 * (H5T_NATIVE_INT64, ...; HDF5 converts); -1 with err when it is absent or
 * not an integer or float. */
int tn_h5_attr_get_num(hid_t obj, const char *name, hid_t mtype, void *out, hlo_error *err);

#endif
