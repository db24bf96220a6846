/* h5image.c — HDF5 files built in memory, written by us (h5image.h). */
#define _POSIX_C_SOURCE 200809L

#include "h5image.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5util.h"

/* The core driver grows its buffer by this much at a time. */
enum { GROW = 1 << 20 };

/* HDF5 refuses to open an image under a name that exists on disk, and
 * nothing can ever exist below /dev/null, so this name is always free. */
static const char image_name[] = "/dev/null/tune-memory-image";

static hid_t mem_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0 && (H5Pset_fapl_core(fapl, GROW, 0) < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0)) {
    H5Pclose(fapl);
    fapl = -1;
  }
  return fapl;
}

hid_t tn_h5_mem_create(const char *name, hlo_error *err) {
  hid_t f = -1;
  H5E_BEGIN_TRY {
    hid_t fapl = mem_fapl();
    if (fapl >= 0)
      f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    tn_h5_close_plist(fapl);
  }
  H5E_END_TRY;
  if (f < 0)
    tn_h5_fail(err, "%s: cannot create an HDF5 file in memory", name);
  return f;
}

hid_t tn_h5_mem_open(const void *image, size_t size, hlo_error *err) {
  hid_t f = -1;
  H5E_BEGIN_TRY {
    hid_t fapl = mem_fapl();
    if (fapl >= 0 && size > 0 && H5Pset_file_image(fapl, (void *)image, size) >= 0)
      f = H5Fopen(image_name, H5F_ACC_RDWR, fapl);
    tn_h5_close_plist(fapl);
  }
  H5E_END_TRY;
  if (f < 0)
    tn_h5_fail(err, "not an HDF5 file (or a damaged one)");
  return f;
}

int tn_h5_mem_is(hid_t file) {
  /* Every file tune opens writable is in memory (disk files are only ever
   * opened read-only, tn_h5_open_read), so the intent tells.  Asking for
   * the driver instead copies the access property list, and when that
   * copy runs out of memory HDF5 1.10 frees a block twice. */
  unsigned intent = 0;
  herr_t rc;
  H5E_BEGIN_TRY { rc = H5Fget_intent(file, &intent); }
  H5E_END_TRY;
  if (rc < 0)
    return -1;
  return (intent & H5F_ACC_RDWR) != 0;
}

int tn_h5_mem_image(hid_t file, void **image, size_t *size, hlo_error *err) {
  ssize_t n = -1, got = -1;
  void *buf = NULL;
  *image = NULL;
  *size = 0;
  H5E_BEGIN_TRY {
    if (H5Fflush(file, H5F_SCOPE_LOCAL) >= 0)
      n = H5Fget_file_image(file, NULL, 0);
    if (n > 0 && (buf = malloc((size_t)n)) != NULL)
      got = H5Fget_file_image(file, buf, (size_t)n);
  }
  H5E_END_TRY;
  if (n <= 0 || got != n) {
    free(buf);
    return tn_h5_fail(err, n > 0 && !buf ? "out of memory for the file's image" : "cannot copy the HDF5 file's image");
  }
  *image = buf;
  *size = (size_t)n;
  return 0;
}

int tn_h5_read_fd(int fd, const char *path, void **image, size_t *size, hlo_error *err) {
  struct stat st;
  *image = NULL;
  *size = 0;
  if (fstat(fd, &st) != 0)
    return tn_h5_fail(err, "%s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return tn_h5_fail(err, "%s: not a regular file", path);
  if ((uintmax_t)st.st_size > SIZE_MAX - 1)
    return tn_h5_fail(err, "%s: too large to read", path);
  size_t want = (size_t)st.st_size, have = 0;
  char *buf = malloc(want ? want : 1);
  if (!buf)
    return tn_h5_fail(err, "%s: out of memory reading it (%zu bytes)", path, want);
  while (have < want) {
    ssize_t r = pread(fd, buf + have, want - have, (off_t)have);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      int e = r < 0 ? errno : 0;
      free(buf);
      return tn_h5_fail(err, "%s: cannot read it: %s", path, e ? strerror(e) : "it shrank while being read");
    }
    have += (size_t)r;
  }
  *image = buf;
  *size = want;
  return 0;
}

int tn_h5_write_fd(int fd, const char *path, const void *image, size_t size, hlo_error *err) {
  const char *p = image;
  size_t done = 0;
  while (done < size) {
    ssize_t w = pwrite(fd, p + done, size - done, (off_t)done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return tn_h5_fail(err, "%s: cannot write: %s", path, w < 0 ? strerror(errno) : "no progress");
    done += (size_t)w;
  }
  if (ftruncate(fd, (off_t)size) != 0)
    return tn_h5_fail(err, "%s: cannot write: %s", path, strerror(errno));
  if (fsync(fd) != 0 && errno != EINVAL)
    return tn_h5_fail(err, "%s: cannot sync: %s", path, strerror(errno));
  return 0;
}
