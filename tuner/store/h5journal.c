/* h5journal.c — the journalled HDF5 file driver (h5journal.h).
 *
 * Modelled on what HDF5's POSIX driver does (end of allocation, end of
 * file, zeros past the end), with the journal's rule added to write and
 * truncate.  The descriptor belongs to the journal, so closing the HDF5
 * file leaves it, and its lock, to the caller's commit or rollback.
 */
#define _DEFAULT_SOURCE
#include "h5journal.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5util.h"

/* Bytes HDF5 wrote after a write failed, kept so that it reads back
 * what it believes it wrote. */
struct h5j_patch {
  struct h5j_patch *next;
  haddr_t addr;
  size_t size;
  unsigned char bytes[];
};

typedef struct jfile {
  H5FD_t pub; /* first: HDF5 casts between the two */
  tn_h5_journal *s;
  int fd;
  haddr_t eoa, eof;
  dev_t dev;
  ino_t ino;
} jfile;

/* Addresses a signed off_t can reach, as HDF5's POSIX driver allows. */
#define MAX_ADDR ((haddr_t)(((uint64_t)1 << 62) - 1))

static hid_t driver_id = -1;

static H5FD_t *j_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  (void)name;
  const tn_h5_journal *const *info = H5Pget_driver_info(fapl);
  if (!info || !*info || (flags & (H5F_ACC_CREAT | H5F_ACC_TRUNC)) || maxaddr == 0 || maxaddr > MAX_ADDR)
    return NULL;
  tn_h5_journal *s = (tn_h5_journal *)*info;
  struct stat st;
  int fd = tn_journal_fd(s->j);
  if (fstat(fd, &st) != 0)
    return NULL;
  jfile *f = calloc(1, sizeof *f);
  if (!f) {
    s->open_nomem = true; /* HDF5 would only say it could not open the file */
    return NULL;
  }
  f->s = s;
  f->fd = fd;
  f->eof = (haddr_t)st.st_size;
  f->dev = st.st_dev;
  f->ino = st.st_ino;
  return &f->pub;
}

static herr_t j_close(H5FD_t *file) {
  free(file);
  return 0;
}

static int j_cmp(const H5FD_t *a, const H5FD_t *b) {
  const jfile *x = (const jfile *)a, *y = (const jfile *)b;
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino)
    return x->ino < y->ino ? -1 : 1;
  return 0;
}

static herr_t j_query(const H5FD_t *file, unsigned long *flags) {
  (void)file;
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA;
  return 0;
}

static haddr_t j_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const jfile *)file)->eoa;
}

static herr_t j_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
  (void)type;
  ((jfile *)file)->eoa = addr;
  return 0;
}

static haddr_t j_get_eof(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const jfile *)file)->eof;
}

static herr_t j_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
  (void)fapl;
  *handle = &((jfile *)file)->fd;
  return 0;
}

static bool out_of_range(const jfile *f, haddr_t addr, size_t size) {
  return addr == HADDR_UNDEF || addr > MAX_ADDR || size > MAX_ADDR - addr || addr + size > f->eoa;
}

static herr_t j_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf) {
  (void)type, (void)dxpl;
  jfile *f = (jfile *)file;
  if (out_of_range(f, addr, size))
    return -1;
  unsigned char *p = buf;
  ssize_t n = tn_pread_full(f->fd, p, size, addr);
  if (n < 0)
    return -1;
  size_t got = (size_t)n;
  memset(p + got, 0, size - got); /* past the end of the file: zeros */
  for (const struct h5j_patch *q = f->s->patches; q; q = q->next) {
    haddr_t lo = q->addr > addr ? q->addr : addr;
    haddr_t hi = q->addr + q->size < addr + size ? q->addr + q->size : addr + size;
    if (lo < hi)
      memcpy(p + (lo - addr), q->bytes + (lo - q->addr), hi - lo);
  }
  return 0;
}

/* Keeps a write in memory (after a failure); patches apply oldest first. */
static herr_t add_patch(jfile *f, haddr_t addr, size_t size, const void *buf) {
  struct h5j_patch *q = malloc(sizeof *q + size);
  if (!q)
    return -1;
  q->next = NULL;
  q->addr = addr;
  q->size = size;
  memcpy(q->bytes, buf, size);
  struct h5j_patch **tail = &f->s->patches;
  while (*tail)
    tail = &(*tail)->next;
  *tail = q;
  return 0;
}

static void note_failure(jfile *f) {
  if (!f->s->error)
    f->s->error = errno ? errno : EIO;
}

/* Test hook: TUNE_TEST_JOURNAL_KILL_AT=N kills the process with SIGKILL
 * right after the Nth write this process makes through the driver, to
 * show that a change cut short at any write is rolled back whole. */
static void maybe_die(void) {
  static long left = -2;
  if (left == -2) {
    const char *v = getenv("TUNE_TEST_JOURNAL_KILL_AT");
    left = v ? strtol(v, NULL, 10) : -1;
  }
  if (left > 0 && --left == 0)
    raise(SIGKILL);
}

static herr_t j_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf) {
  (void)type, (void)dxpl;
  jfile *f = (jfile *)file;
  if (out_of_range(f, addr, size))
    return -1;
  if (!f->s->error && tn_journal_keep(f->s->j, addr, size) != 0)
    note_failure(f);
  const unsigned char *p = buf;
  size_t put = 0;
  while (!f->s->error && put < size) {
    ssize_t w = pwrite(f->fd, p + put, size - put, (off_t)(addr + put));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      note_failure(f);
      break;
    }
    put += (size_t)w;
  }
  if (f->s->error && add_patch(f, addr, size, buf) != 0)
    return -1;
  if (addr + size > f->eof)
    f->eof = addr + size;
  maybe_die();
  return 0;
}

static herr_t j_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
  (void)dxpl, (void)closing;
  jfile *f = (jfile *)file;
  if (f->eoa == f->eof)
    return 0;
  if (!f->s->error) {
    if (f->eoa < f->eof && tn_journal_keep(f->s->j, f->eoa, f->eof - f->eoa) != 0)
      note_failure(f);
    else if (ftruncate(f->fd, (off_t)f->eoa) != 0)
      note_failure(f);
  }
  f->eof = f->eoa;
  return 0;
}

static const H5FD_class_t journal_class = {
    .name = "tune-journal",
    .maxaddr = MAX_ADDR,
    .fc_degree = H5F_CLOSE_STRONG,
    .fapl_size = sizeof(tn_h5_journal *),
    .open = j_open,
    .close = j_close,
    .cmp = j_cmp,
    .query = j_query,
    .get_eoa = j_get_eoa,
    .set_eoa = j_set_eoa,
    .get_eof = j_get_eof,
    .get_handle = j_get_handle,
    .read = j_read,
    .write = j_write,
    .truncate = j_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

hid_t tn_h5_journal_open(const char *path, tn_h5_journal *s, hlo_error *err) {
  hid_t f = -1, fapl = -1;
  H5E_BEGIN_TRY {
    if (driver_id < 0)
      driver_id = H5FDregister(&journal_class);
    fapl = driver_id < 0 ? -1 : H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_driver(fapl, driver_id, &s) >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) >= 0)
      f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    tn_h5_close_plist(fapl);
  }
  H5E_END_TRY;
  if (f < 0 && s->open_nomem)
    tn_h5_fail(err, "%s: out of memory opening it", path);
  else if (f < 0)
    tn_h5_fail(err, "%s: not an HDF5 file (or a damaged one)", path);
  return f;
}

int tn_h5_journal_failed(const tn_h5_journal *s, hlo_error *err) {
  if (!s->error)
    return 0;
  return tn_h5_fail(err, "cannot write it: %s", strerror(s->error));
}

void tn_h5_journal_done(tn_h5_journal *s) {
  while (s->patches) {
    struct h5j_patch *q = s->patches;
    s->patches = q->next;
    free(q);
  }
}
