/* journal.c — the rollback journal of an in-place change (journal.h).
 *
 * Layout of PATH.journal, integers little endian:
 *
 *   header  "tunejnl1"  base size  device  inode  checksum of the 32 bytes before
 *   record  offset  length  checksum of offset, length and bytes   bytes...
 *
 * Records never overlap (a page is kept once per change), so applying
 * them in any order restores the same file; they are applied in order and
 * the first one that is short or fails its checksum (FNV-1a: enough to
 * tell a torn record from a whole one) ends the journal.
 */
#define _DEFAULT_SOURCE /* flock */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "h5util.h"
#include "hlo/hlo_hash.h"

enum {
  PAGE = 4096,
  HEADER = 40,
  RECORD = 24,
  MAX_RUN = 256,          /* pages per record: 1 MiB */
  WRITER_WAIT_MS = 200,   /* a reader opening the file takes milliseconds */
  READER_WAIT_MS = 60000, /* a change takes milliseconds; a stopped writer, forever */
};

static const char magic[8] = {'t', 'u', 'n', 'e', 'j', 'n', 'l', '1'};

struct tn_journal {
  char *path, *jpath;
  int fd, jfd;
  uint64_t base; /* the file's size when the change began */
  uint64_t jsize;
  uint8_t *kept; /* a bit per page of base */
  bool unsynced, broken;
  struct stat st;
};

/* ---- bytes ------------------------------------------------------------------ */


static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    p += w, n -= (size_t)w, off += (uint64_t)w;
  }
  return 0;
}

ssize_t tn_pread_full(int fd, void *buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

static char *journal_path(const char *path) {
  size_t n = strlen(path) + sizeof ".journal";
  char *j = malloc(n);
  if (j)
    snprintf(j, n, "%s.journal", path);
  return j;
}

int tn_sync_dir_of(const char *path) {
  char *dir = strdup(path);
  if (!dir)
    return -1;
  char *slash = strrchr(dir, '/');
  if (!slash)
    strcpy(dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = fd < 0 ? -1 : fsync(fd);
  /* File systems that cannot sync a directory (EINVAL) still rename and
   * unlink atomically; only surviving a power cut is up to them. */
  if (rc != 0 && errno == EINVAL)
    rc = 0;
  int saved = errno;
  if (fd >= 0)
    close(fd);
  free(dir);
  errno = saved;
  return rc;
}

/* ---- locks ------------------------------------------------------------------- */

/* flock without blocking, retried for up to ms milliseconds: a writer
 * stopped with SIGSTOP must not hang its readers forever. */
static int lock_within(int fd, int op, int ms) {
  for (int waited = 0;; waited += 5) {
    if (flock(fd, op | LOCK_NB) == 0)
      return 0;
    if (errno != EWOULDBLOCK && errno != EINTR)
      return -1;
    if (waited >= ms) {
      errno = EWOULDBLOCK;
      return -1;
    }
    struct timespec nap = {0, 5 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
}

/* ---- rolling back ------------------------------------------------------------ */

/* Applies the journal at jpath to the file open read-write at fd (whose
 * status is st), cuts the file to its old size, syncs it and removes the
 * journal.  The caller holds LOCK_EX.  0 also when there is no journal. */
static int roll_back(const char *path, const char *jpath, int fd, const struct stat *st, hlo_error *err) {
  int jfd = open(jpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (jfd < 0) {
    if (errno == ENOENT)
      return 0;
    return tn_h5_fail(err, "%s: cannot read %s: %s", path, jpath, strerror(errno));
  }
  int rc = -1;
  uint8_t head[HEADER];
  uint8_t *data = NULL;
  ssize_t n = tn_pread_full(jfd, head, HEADER, 0);
  if (n < 0) {
    tn_h5_fail(err, "%s: cannot read %s: %s", path, jpath, strerror(errno));
    goto done;
  }
  /* A header that is not whole was never synced, and nothing is
   * overwritten before the journal is synced: the file is as it was. */
  if (n < HEADER || memcmp(head, magic, sizeof magic) != 0 || get64(head + 32) != hlo_fnv1a(HLO_FNV_BASIS, head, 32))
    goto cut;
  if (get64(head + 16) != (uint64_t)st->st_dev || get64(head + 24) != (uint64_t)st->st_ino) {
    tn_h5_fail(err, "%s: %s belongs to another file (its device and inode differ); it was left as it is", path, jpath);
    goto done;
  }
  uint64_t base = get64(head + 8), off = HEADER;
  for (;;) {
    uint8_t rec[RECORD];
    if (tn_pread_full(jfd, rec, RECORD, off) != RECORD)
      break;
    uint64_t at = get64(rec), len = get64(rec + 8);
    if (len == 0 || len > (uint64_t)MAX_RUN * PAGE || at > base || len > base - at)
      break;
    uint8_t *grown = realloc(data, len);
    if (!grown) {
      tn_h5_fail(err, "%s: out of memory rolling back an interrupted change", path);
      goto done;
    }
    data = grown;
    if (tn_pread_full(jfd, data, len, off + RECORD) != (ssize_t)len)
      break;
    if (get64(rec + 16) != hlo_fnv1a(hlo_fnv1a(HLO_FNV_BASIS, rec, 16), data, len))
      break;
    if (pwrite_all(fd, data, len, at) != 0) {
      tn_h5_fail(err, "%s: cannot roll back an interrupted change: %s", path, strerror(errno));
      goto done;
    }
    off += RECORD + len;
  }
  if (ftruncate(fd, (off_t)base) != 0 || fsync(fd) != 0) {
    tn_h5_fail(err, "%s: cannot roll back an interrupted change: %s", path, strerror(errno));
    goto done;
  }
cut:
  if (unlink(jpath) != 0 || tn_sync_dir_of(path) != 0) {
    tn_h5_fail(err, "%s: rolled back, but cannot remove %s: %s", path, jpath, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  free(data);
  close(jfd);
  return rc;
}

/* ---- a change ---------------------------------------------------------------- */

static void journal_free(tn_journal *j) {
  if (!j)
    return;
  if (j->jfd >= 0)
    close(j->jfd);
  if (j->fd >= 0)
    close(j->fd); /* releases the lock */
  free(j->kept);
  free(j->jpath);
  free(j->path);
  free(j);
}

tn_journal *tn_journal_begin(const char *path, bool *busy, hlo_error *err) {
  *busy = false;
  tn_journal *j = calloc(1, sizeof *j);
  if (!j) {
    tn_h5_fail(err, "out of memory");
    return NULL;
  }
  j->fd = j->jfd = -1;
  j->path = strdup(path);
  j->jpath = journal_path(path);
  if (!j->path || !j->jpath) {
    tn_h5_fail(err, "out of memory");
    goto fail;
  }
  j->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (j->fd < 0) {
    *busy = errno == ELOOP;
    tn_h5_fail(err, "%s: %s", path, strerror(errno));
    goto fail;
  }
  if (fstat(j->fd, &j->st) != 0 || !S_ISREG(j->st.st_mode)) {
    tn_h5_fail(err, "%s: not a regular file", path);
    goto fail;
  }
  if (lock_within(j->fd, LOCK_EX, WRITER_WAIT_MS) != 0) {
    *busy = errno == EWOULDBLOCK;
    tn_h5_fail(err, "%s: cannot lock it: %s", path, strerror(errno));
    goto fail;
  }
  if (roll_back(path, j->jpath, j->fd, &j->st, err) != 0 || fstat(j->fd, &j->st) != 0)
    goto fail;
  j->base = (uint64_t)j->st.st_size;
  size_t pages = (size_t)((j->base + PAGE - 1) / PAGE);
  j->kept = calloc(pages / 8 + 1, 1);
  /* Readable by whoever may read the file: it holds the file's own bytes. */
  j->jfd = open(j->jpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, j->st.st_mode & 0666);
  if (!j->kept || j->jfd < 0) {
    tn_h5_fail(err, "%s: cannot create %s: %s", path, j->jpath, j->kept ? strerror(errno) : "out of memory");
    goto fail;
  }
  uint8_t head[HEADER];
  memcpy(head, magic, sizeof magic);
  put64(head + 8, j->base);
  put64(head + 16, (uint64_t)j->st.st_dev);
  put64(head + 24, (uint64_t)j->st.st_ino);
  put64(head + 32, hlo_fnv1a(HLO_FNV_BASIS, head, 32));
  if (pwrite_all(j->jfd, head, HEADER, 0) != 0) {
    tn_h5_fail(err, "%s: cannot write %s: %s", path, j->jpath, strerror(errno));
    unlink(j->jpath);
    goto fail;
  }
  j->jsize = HEADER;
  return j;
fail:
  journal_free(j);
  return NULL;
}

int tn_journal_fd(const tn_journal *j) { return j->fd; }

static bool is_kept(const tn_journal *j, uint64_t page) { return j->kept[page / 8] >> (page % 8) & 1; }

/* Appends one record: the bytes of pages [p, q) as they are now. */
static int keep_run(tn_journal *j, uint64_t p, uint64_t q) {
  uint64_t at = p * PAGE, end = q * PAGE < j->base ? q * PAGE : j->base;
  size_t len = (size_t)(end - at);
  uint8_t *rec = malloc(RECORD + len);
  if (!rec)
    return -1;
  ssize_t n = tn_pread_full(j->fd, rec + RECORD, len, at);
  int rc = -1;
  if (n == (ssize_t)len) {
    put64(rec, at);
    put64(rec + 8, len);
    put64(rec + 16, hlo_fnv1a(hlo_fnv1a(HLO_FNV_BASIS, rec, 16), rec + RECORD, len));
    rc = pwrite_all(j->jfd, rec, RECORD + len, j->jsize);
  } else if (n >= 0) {
    errno = EIO; /* the file shrank under us */
  }
  free(rec);
  if (rc != 0)
    return -1;
  j->jsize += RECORD + len;
  for (uint64_t k = p; k < q; k++)
    j->kept[k / 8] |= (uint8_t)(1u << (k % 8));
  j->unsynced = true;
  return 0;
}

int tn_journal_keep(tn_journal *j, uint64_t off, uint64_t len) {
  if (j->broken) {
    errno = EIO;
    return -1;
  }
  if (len == 0 || off >= j->base)
    return 0;
  uint64_t end = len > j->base - off ? j->base : off + len;
  for (uint64_t p = off / PAGE, last = (end - 1) / PAGE; p <= last;) {
    if (is_kept(j, p)) {
      p++;
      continue;
    }
    uint64_t q = p + 1;
    while (q <= last && q - p < MAX_RUN && !is_kept(j, q))
      q++;
    if (keep_run(j, p, q) != 0) {
      /* A torn record is ignored by a rollback, but nothing may follow it. */
      j->broken = true;
      return -1;
    }
    p = q;
  }
  if (j->unsynced) {
    if (fsync(j->jfd) != 0) {
      j->broken = true;
      return -1;
    }
    j->unsynced = false;
  }
  return 0;
}

int tn_journal_rollback(tn_journal *j, hlo_error *err) {
  if (!j)
    return 0;
  close(j->jfd);
  j->jfd = -1;
  int rc = roll_back(j->path, j->jpath, j->fd, &j->st, err);
  journal_free(j);
  return rc;
}

int tn_journal_commit(tn_journal *j, struct stat *st, hlo_error *err) {
  if (fsync(j->fd) != 0 || fstat(j->fd, st) != 0) {
    int saved = errno;
    hlo_error ignored = {0};
    tn_journal_rollback(j, &ignored);
    return tn_h5_fail(err, "cannot write it: %s", strerror(saved));
  }
  /* Deleting the journal is the commit.  Should that fail, an empty
   * journal says the same thing (its header is not whole). */
  if (unlink(j->jpath) != 0 && ftruncate(j->jfd, 0) != 0) {
    int saved = errno;
    hlo_error ignored = {0};
    tn_journal_rollback(j, &ignored);
    return tn_h5_fail(err, "cannot remove %s: %s", j->jpath, strerror(saved));
  }
  int rc = 0;
  if (tn_sync_dir_of(j->path) != 0)
    rc = tn_h5_fail(err, "written, but cannot sync its directory: %s", strerror(errno));
  journal_free(j);
  return rc;
}

/* ---- readers ------------------------------------------------------------------- */

int tn_journal_read_begin(const char *path, int *fd, hlo_error *err) {
  *fd = -1;
  int rfd = open(path, O_RDONLY | O_CLOEXEC);
  if (rfd < 0)
    return tn_h5_fail(err, "%s: %s", path, strerror(errno));
  char *jpath = journal_path(path);
  int rc = -1;
  if (!jpath) {
    tn_h5_fail(err, "out of memory");
    goto done;
  }
  if (lock_within(rfd, LOCK_SH, READER_WAIT_MS) != 0) {
    tn_h5_fail(err, "%s: another process has been writing it for a minute; try again later (%s)", path,
               strerror(errno));
    goto done;
  }
  if (access(jpath, F_OK) != 0) {
    rc = 0;
    goto done;
  }
  /* A hot journal: a change was interrupted.  Only a process that may
   * write the file can bring it back; others must not read it torn. */
  flock(rfd, LOCK_UN);
  int wfd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (wfd < 0) {
    tn_h5_fail(err, "%s: a change to it was interrupted, and rolling it back needs write access: %s", path,
               strerror(errno));
    goto done;
  }
  if (lock_within(wfd, LOCK_EX, READER_WAIT_MS) != 0 || fstat(wfd, &st) != 0) {
    tn_h5_fail(err, "%s: cannot lock it: %s", path, strerror(errno));
    close(wfd);
    goto done;
  }
  int rolled = roll_back(path, jpath, wfd, &st, err);
  close(wfd); /* releases LOCK_EX, which would keep out our own LOCK_SH */
  if (rolled != 0)
    goto done;
  if (lock_within(rfd, LOCK_SH, READER_WAIT_MS) != 0) {
    tn_h5_fail(err, "%s: cannot lock it: %s", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  free(jpath);
  if (rc == 0)
    *fd = rfd;
  else
    close(rfd);
  return rc;
}

void tn_journal_read_end(int fd) {
  if (fd >= 0)
    close(fd);
}
