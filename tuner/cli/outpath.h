/* outpath.h — where a command may write its output.
 *
 * Three rules keep an output from destroying something else:
 *
 *  - An output that is a symbolic link is written into the link's target
 *    and the link is kept (a "current.h5 -> 2026-11.h5" link stays a
 *    link).  Every writer replaces its output by renaming a finished
 *    temporary over it; renaming over the link itself would replace the
 *    link with a plain file and leave the target without the run.  A link
 *    to a file that does not exist is refused: creating a file wherever a
 *    planted link points is how a shared folder gets abused.
 *
 *  - An output that names one of the command's inputs (the same file after
 *    following symbolic links: same device and inode, or the same
 *    canonical path when it does not exist yet) is refused, because the
 *    output replaces it.
 *
 *  - Temporaries are created exclusively (O_CREAT | O_EXCL, which never
 *    follows a link) with mode 0666 less the umask, like any new file.
 *
 * Nothing here prints; errors come back in an hlo_error.
 */
#ifndef TUNE_OUTPATH_H
#define TUNE_OUTPATH_H

#include <hdf5.h>

#include "hlo/hlo_error.h"

/* The name to write `path` under: a malloc'd copy of path, or of the final
 * target (absolute) when path is a symbolic link.  NULL with err when the
 * link's target does not exist or on out of memory. */
char *tn_out_resolve(const char *path, hlo_error *err);

/* 1 when a and b name the same file, else 0. */
int tn_out_same_file(const char *a, const char *b);

/* 0 when `out` names none of inputs[0..n); -1 with err naming the input
 * otherwise.  NULL entries are skipped. */
int tn_out_refuse_input(const char *out, int n, const char *const *inputs, hlo_error *err);

/* "PATH.tmp.<pid>.<k>", malloc'd (NULL when out of memory): the k-th name
 * to try for a temporary beside path.  For writers that create the file
 * themselves (HDF5's H5F_ACC_EXCL, which is O_EXCL too). */
char *tn_out_temp_name(const char *path, unsigned k);

/* Creates "PATH.tmp.<pid>.<k>" exclusively, mode 0666 less the umask, and
 * returns its descriptor (open for writing); *tmp receives the malloc'd
 * name.  -1 with err. */
int tn_out_open_temp(const char *path, char **tmp, hlo_error *err);

/* The same for an HDF5 file: reserves the temporary as above and returns
 * an HDF5 file that tn_h5_close writes to it (h5values.h); *tmp receives
 * its name.  -1 with err. */
hid_t tn_out_create_h5_temp(const char *path, char **tmp, hlo_error *err);

#endif
