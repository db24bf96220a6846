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

#include "hlo/hlo_error.h"

/* Sets err (position 0:0) and returns -1. */
int tn_h5_fail(hlo_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts "what: " in front of the message already in err; returns -1. */
int tn_h5_prefix_error(hlo_error *err, const char *what);

/* Whether loc has a link `path` (which may hold slashes): 1 yes, 0 no, -1
 * with err when HDF5 cannot tell, which happens when it runs out of memory
 * or the file is damaged (a group on the way is not a group).  H5Lexists
 * alone gives a negative answer both for "a group on the way is missing"
 * and for those failures; a caller that took every non-positive answer for
 * "absent" read a results file whose runs HDF5 could not list for want of
 * memory as a file with no runs.  Each prefix is asked in turn, so that a
 * negative answer here always means a failure.  HDF5's printing of errors
 * is off during the look-up, whoever calls. */
int tn_h5_exists(hid_t loc, const char *path, hlo_error *err);

/* The same for an attribute of obj (H5Aexists fails, rather than say no,
 * when HDF5 runs out of memory). */
int tn_h5_attr_exists(hid_t obj, const char *name, hlo_error *err);

/* Does the failure now on HDF5's error stack come from an allocation?  The
 * stack is left as it is. */
int tn_h5_failed_for_memory(void);

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
/* The same for an attribute that older files lack: 1 when read, 0 when
 * absent (out untouched), -1 with err when the look-up or the read fails. */
int tn_h5_attr_get_num_opt(hid_t obj, const char *name, hid_t mtype, void *out, hlo_error *err);

#endif
