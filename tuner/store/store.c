/* store.c — the results file: runs, fusions and candidates in HDF5 (layout
 * in store.h, every column in README "HDF5 results schema").
 *
 * Three ideas carry the file:
 *
 *  1. Copy, append, rename.  The live file is never opened for writing.
 *     Every change (a new run, a fusion, the end of a run) reads the file
 *     into memory, opens those bytes with HDF5's in-memory driver,
 *     appends, copies the new image out (h5image.h), writes it with our
 *     own write() to a temporary beside the file, fsyncs it, renames it
 *     over the original and fsyncs the directory.  rename() within one
 *     directory is atomic, so whoever looks at the path — a reader, or
 *     the next run after a kill -9 — sees either the old complete file or
 *     the new complete file.  HDF5 never writes to disk, so a full disk
 *     or a file size limit is a plain write() error that leaves the old
 *     file as it was (HDF5 1.10 crashes at exit after a failed flush of
 *     its own).  Nothing is held open between calls, so there is nothing
 *     to lose when the process dies.
 *
 *  2. Tables described once.  A candidate row is a C struct; a table of
 *     column descriptors names each member, and both HDF5 compound types
 *     (native in memory, little endian and packed on disk) are built from
 *     that table.  The metric columns are one descriptor list used twice,
 *     with a d_ and an r_ prefix, and once more, bare, for `reference`.
 *
 *  3. Reproducible bytes.  Rows are zeroed before they are filled (string
 *     padding included) and HDF5's object timestamps are switched off, so
 *     the same results give the same datasets whatever the thread count.
 *
 * Every function that touches HDF5 closes what it opened on every path;
 * the files are opened with the "strong" close degree as a second line of
 * defence, and a successful edit also checks that nothing was left open.
 */
#define _POSIX_C_SOURCE 200809L

#include "store.h"
#include "store_read.h" /* tn_store_reopen_run */
#include "store_table.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "config.h"
#include "device/dev_defect.h"
#include "h5image.h"
#include "h5journal.h"
#include "h5probe.h"
#include "h5util.h"
#include "h5values.h"
#include "check/inputs.h"
#include "journal.h"
#include "libguard.h"
#include "check/tolerance.h"
#include "utf8.h"

/* What identifies the bytes at a path: the file this store wrote last
 * need not be checked again before the next edit (h5probe.h). */
typedef struct file_id {
  bool valid;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
} file_id;

struct tn_store {
  char *path;
  tn_run_info run;
  file_id last;
  bool undoable; /* begun by tn_store_begin_run_undoable */
  bool created;  /* the run created the file */
  char *before;  /* a hard link to the file as it was before the run */
};

#define PATH_LEN 512



/* Copies a C string into a fixed field, truncating; the field was zeroed,
 * so the bytes after the text stay zero (HDF5's NULLPAD strings). */
static void put_str(char *dst, size_t n, const char *src) {
  size_t len = src ? strlen(src) : 0;
  if (len > n - 1)
    len = n - 1;
  memcpy(dst, src ? src : "", len);
  dst[len] = '\0';
}


/* ---- run identity ------------------------------------------------------- */

/* The current UTC time in ISO 8601, extended ("2026-11-29T08:15:00Z", for
 * attributes) or basic ("20261129T081500Z", for run ids). */
static void utc_now(char *buf, size_t n, bool basic) {
  time_t t = time(NULL);
  struct tm tm;
  size_t w = 0;
  if (gmtime_r(&t, &tm))
    w = basic ? strftime(buf, n, "%Y%m%dT%H%M%SZ", &tm) : strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (w == 0)
    put_str(buf, n, "");
}

static void fill_host(char *buf, size_t n) {
  if (gethostname(buf, n) != 0)
    put_str(buf, n, "unknown");
  buf[n - 1] = '\0'; /* POSIX leaves truncated names unterminated */
}

/* ---- atomic edits --------------------------------------------------------- */

/* Creates PATH.tmp.<pid>.<n> exclusively (mode 0666 less the umask, like
 * any new file); the name goes to *tmp (malloc'd).  -1 with errno. */
static int open_temp(const char *path, char **tmp) {
  size_t n = strlen(path) + 48;
  char *name = malloc(n);
  if (!name) {
    errno = ENOMEM;
    return -1;
  }
  for (unsigned i = 0; i < 1000; i++) {
    snprintf(name, n, "%s.tmp.%ld.%u", path, (long)getpid(), i);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *tmp = name;
      return fd;
    }
    if (errno != EEXIST)
      break;
  }
  int saved = errno;
  free(name);
  errno = saved;
  return -1;
}

/* One change to the file: fn receives a writable file id (fresh is true
 * when the file did not exist and was just created) and appends to it. */
typedef int (*edit_fn)(hid_t file, bool fresh, void *ctx, hlo_error *err);

/* The HDF5 part of an edit, on a file held in memory (h5image.h): open
 * (or create) it, let fn append, check nothing was left open, and copy the
 * result out.  HDF5 never writes to disk here, so its closes cannot fail
 * for lack of space; the caller writes the bytes. */
/* Lets fn append to the open file and checks that it closed what it
 * opened: 0, or -1 with err naming path.  The caller is inside
 * H5E_BEGIN_TRY and closes the file. */
static int apply_edit(const char *path, hid_t file, bool fresh, edit_fn fn, void *ctx, hlo_error *err) {
  if (fn(file, fresh, ctx, err) != 0)
    return tn_h5_prefix_error(err, path);
  if (H5Fget_obj_count(file, H5F_OBJ_ALL) != 1)
    return tn_h5_fail(err, "%s: internal error: HDF5 objects left open", path);
  return 0;
}

static int edit_in_memory(const char *path, const void *old, size_t old_size, edit_fn fn, void *ctx,
                          void **image, size_t *size, hlo_error *err) {
  bool fresh = old == NULL;
  int rc = -1;
  hid_t file = fresh ? tn_h5_mem_create(path, err) : tn_h5_mem_open(old, old_size, err);
  if (file < 0)
    return fresh ? -1 : tn_h5_prefix_error(err, path);
  H5E_BEGIN_TRY {
    rc = apply_edit(path, file, fresh, fn, ctx, err);
    if (rc == 0 && tn_h5_mem_image(file, image, size, err) != 0)
      rc = tn_h5_prefix_error(err, path);
    /* Strong close degree: whatever fn left open goes with the file. */
    H5Fclose(file);
  }
  H5E_END_TRY;
  return rc;
}

static void set_id(file_id *id, const struct stat *st) {
  id->valid = true;
  id->dev = st->st_dev;
  id->ino = st->st_ino;
  id->size = st->st_size;
  id->mtime = st->st_mtim;
}

static bool same_id(const file_id *id, const struct stat *st) {
  return id->valid && id->dev == st->st_dev && id->ino == st->st_ino && id->size == st->st_size &&
         id->mtime.tv_sec == st->st_mtim.tv_sec && id->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static bool same_stat(const struct stat *a, const struct stat *b) {
  file_id id;
  set_id(&id, a);
  return same_id(&id, b);
}

/* last (may be NULL) is the file this store wrote last; it is updated. */
static int edit_by_copy(const char *path, bool may_create, file_id *last, edit_fn fn, void *ctx, hlo_error *err) {
  int rc = -1, src = -1, dst = -1;
  char *tmp = NULL;
  void *old = NULL, *image = NULL;
  size_t old_size = 0, size = 0;
  struct stat st;

  /* An interrupted in-place change is rolled back before the file is
   * read (journal.h). */
  int lock = -1;
  if (access(path, F_OK) == 0 && tn_journal_read_begin(path, &lock, err) != 0)
    return -1;
  src = open(path, O_RDONLY | O_CLOEXEC);
  if (src < 0 && !(errno == ENOENT && may_create)) {
    tn_journal_read_end(lock);
    return tn_h5_fail(err, "%s: %s", path, strerror(errno));
  }
  if (src >= 0 && (fstat(src, &st) != 0 || !S_ISREG(st.st_mode))) {
    tn_h5_fail(err, "%s: not a regular file", path);
    goto done;
  }
  /* A file someone else wrote may be damaged in ways that crash HDF5. */
  if (src >= 0 && !(last && same_id(last, &st)) && tn_h5_probe(path, err) != 0)
    goto done;
  if (src >= 0 && tn_h5_read_fd(src, path, &old, &old_size, err) != 0)
    goto done;
  tn_journal_read_end(lock);
  lock = -1;
  if (edit_in_memory(path, old, old_size, fn, ctx, &image, &size, err) != 0)
    goto done;
  free(old);
  old = NULL;

  dst = open_temp(path, &tmp);
  if (dst < 0) {
    tn_h5_fail(err, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
    goto done;
  }
  if (src >= 0 && fchmod(dst, st.st_mode & 07777) != 0) {
    tn_h5_fail(err, "%s: cannot set the mode of %s: %s", path, tmp, strerror(errno));
    goto done;
  }
  if (tn_h5_write_fd(dst, tmp, image, size, err) != 0) {
    tn_h5_prefix_error(err, path);
    goto done;
  }
  struct stat written;
  bool known = fstat(dst, &written) == 0;
  int closed = close(dst);
  dst = -1;
  if (closed != 0) {
    tn_h5_fail(err, "%s: cannot write %s: %s", path, tmp, strerror(errno));
    goto done;
  }
  if (rename(tmp, path) != 0) {
    tn_h5_fail(err, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
    goto done;
  }
  free(tmp); /* renamed: nothing left to remove */
  tmp = NULL;
  if (last) {
    last->valid = false;
    if (known)
      set_id(last, &written);
  }
  /* The file under the path is the one just written (the rename may have
   * changed its status-change time): its reader need not probe it. */
  struct stat now;
  if (known && lstat(path, &now) == 0 && now.st_dev == written.st_dev && now.st_ino == written.st_ino)
    tn_h5_probe_vouch(&now);
  if (tn_sync_dir_of(path) != 0)
    tn_h5_fail(err, "%s: written, but cannot sync its directory: %s", path, strerror(errno));
  else
    rc = 0;
done:
  tn_journal_read_end(lock);
  free(old);
  free(image);
  if (src >= 0)
    close(src);
  if (dst >= 0)
    close(dst);
  if (tmp) {
    unlink(tmp);
    free(tmp);
  }
  return rc;
}

/* The same edit written in place through a rollback journal (journal.h),
 * at a cost in the size of the change rather than of the file.  1 when
 * the file cannot be locked against its readers (or is a symbolic link),
 * or is no longer the file last (valid) says this store wrote: the caller
 * then edits by copy, which leaves a reader's file alone. */
static int edit_in_place(const char *path, file_id *last, edit_fn fn, void *ctx, hlo_error *err) {
  bool busy = false;
  tn_journal *j = tn_journal_begin(path, &busy, err);
  if (!j)
    return busy ? 1 : -1;
  struct stat st;
  if (!(fstat(tn_journal_fd(j), &st) == 0 && same_id(last, &st))) {
    /* A file someone else wrote may be damaged in ways that crash HDF5;
     * the check reads it in a child, which our lock would keep out. */
    hlo_error ignored = {0};
    tn_journal_rollback(j, &ignored);
    return 1;
  }
  tn_h5_journal s = {.j = j};
  int rc = -1;
  hid_t file = tn_h5_journal_open(path, &s, err);
  if (file >= 0) {
    H5E_BEGIN_TRY {
      rc = apply_edit(path, file, false, fn, ctx, err);
      if (H5Fclose(file) < 0 && rc == 0)
        rc = tn_h5_fail(err, "%s: HDF5 could not close it", path);
    }
    H5E_END_TRY;
  }
  if (rc == 0 && tn_h5_journal_failed(&s, err) != 0)
    rc = tn_h5_prefix_error(err, path);
  tn_h5_journal_done(&s);
  if (rc != 0) {
    hlo_error rerr = {0};
    if (tn_journal_rollback(j, &rerr) != 0)
      tn_h5_prefix_error(err, rerr.msg);
    return -1;
  }
  last->valid = false;
  if (tn_journal_commit(j, &st, err) != 0)
    return tn_h5_prefix_error(err, path);
  set_id(last, &st);
  tn_h5_probe_vouch(&st);
  return 0;
}

/* An edit: in place when the file exists and this store wrote it last
 * (so it was checked already), by copy otherwise, and always by copy for
 * an undoable run, whose undo keeps the old file under a second name. */
static int edit_atomically(const char *path, bool may_create, file_id *last, bool by_copy, edit_fn fn, void *ctx,
                           hlo_error *err) {
  /* Test hook: TUNE_TEST_STORE_BY_COPY=1 writes every edit by copy, so
   * that the two ways can be shown to store the same datasets. */
  if (getenv("TUNE_TEST_STORE_BY_COPY"))
    by_copy = true;
  struct stat st, again;
  if (!by_copy && last && !last->valid && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    /* A change a killed writer left half made is rolled back before the
     * check reads the file: its torn bytes are not the file's. */
    int lock = -1;
    if (tn_journal_read_begin(path, &lock, err) != 0)
      return -1;
    int probed = lstat(path, &st) == 0 ? tn_h5_probe(path, err) : tn_h5_fail(err, "%s: %s", path, strerror(errno));
    if (probed == 0 && lstat(path, &again) == 0 && same_stat(&st, &again))
      set_id(last, &st);
    tn_journal_read_end(lock);
    if (probed != 0)
      return -1;
  }
  if (!by_copy && last && last->valid) {
    int rc = edit_in_place(path, last, fn, ctx, err);
    if (rc <= 0)
      return rc;
    if (err)
      err->msg[0] = '\0';
  }
  return edit_by_copy(path, may_create, last, fn, ctx, err);
}

/* ---- HDF5 building blocks -------------------------------------------------- */

/* Groups and datasets without modification times, so that equal results
 * are equal bytes. */
static hid_t make_group(hid_t loc, const char *name, hlo_error *err) {
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g = -1;
  if (gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0)
    g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  tn_h5_close_plist(gcpl);
  if (g < 0)
    tn_h5_fail(err, "%s: cannot create group", name);
  return g;
}

static hid_t open_group(hid_t loc, const char *name, hlo_error *err) {
  hid_t g = -1;
  int has = tn_h5_exists(loc, name, err);
  if (has > 0)
    g = H5Gopen2(loc, name, H5P_DEFAULT);
  if (g < 0 && has >= 0)
    tn_h5_fail(err, "%s: no such group", name);
  return g;
}

/* Group `name` of loc, made when it is not there yet (one look-up). */
static hid_t open_or_make_group(hid_t loc, const char *name, hlo_error *err) {
  int has = tn_h5_exists(loc, name, err);
  if (has < 0)
    return -1;
  if (!has)
    return make_group(loc, name, err);
  hid_t g = H5Gopen2(loc, name, H5P_DEFAULT);
  if (g < 0)
    tn_h5_fail(err, "%s: not a group", name);
  return g;
}

/* Deletes link `name` of loc when it is there: 0, or -1 with err (a
 * failed look-up is an error, not "absent"). */
static int drop_link(hid_t loc, const char *name, hlo_error *err) {
  int has = tn_h5_exists(loc, name, err);
  if (has > 0 && H5Ldelete(loc, name, H5P_DEFAULT) < 0)
    return tn_h5_fail(err, "%s: cannot replace it", name);
  return has < 0 ? -1 : 0;
}

/* Opens runs/<id> for an edit; path receives "runs/<id>" (PATH_LEN bytes)
 * for the edit's own messages.  -1 with err saying the run is gone. */
static hid_t open_run(hid_t file, const char *id, char *path, hlo_error *err) {
  snprintf(path, PATH_LEN, "runs/%s", id);
  hid_t g = open_group(file, path, err);
  if (g < 0)
    tn_h5_prefix_error(err, "the run is no longer in the file");
  return g;
}

static hid_t new_dcpl(void) {
  hid_t p = H5Pcreate(H5P_DATASET_CREATE);
  if (p >= 0 && H5Pset_obj_track_times(p, 0) < 0) {
    H5Pclose(p);
    p = -1;
  }
  return p;
}

/* Chunks of `chunk` (rank dims, each clipped to 1..dims[i] by the caller),
 * byte-shuffled then gzip-compressed: the shuffle groups the bytes of
 * equal significance, which is what makes floats and mostly-zero integer
 * columns compress well.  Level 4: on a 256-candidate fusion it writes
 * files within 1% of level 6's size in about 70% of the time. */
static int set_compression(hid_t dcpl, int rank, const hsize_t *chunk) {
  if (H5Pset_chunk(dcpl, rank, chunk) < 0 || H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, 4) < 0)
    return -1;
  return 0;
}

/* Deletes attribute `name` of obj when it is there: 0, or -1 with err
 * (a failed look-up is an error, not "absent"). */
static int drop_attr(hid_t obj, const char *name, hlo_error *err) {
  int has = tn_h5_attr_exists(obj, name, err);
  if (has > 0 && H5Adelete(obj, name) < 0)
    return tn_h5_fail(err, "cannot replace attribute '%s'", name);
  return has < 0 ? -1 : 0;
}

/* Replaces a string attribute (attributes cannot be rewritten in place
 * with a value of another length). */
static int replace_str_attr(hid_t obj, const char *name, const char *value, hlo_error *err) {
  if (drop_attr(obj, name, err) != 0)
    return -1;
  return tn_h5_attr_set_str(obj, name, value, err);
}


/* ---- tables ----------------------------------------------------------------- */

/* The types are store_table.h's, so that writers outside this file
 * (store_isolate.c) build their tables the same way. */
typedef tn_store_col_kind col_kind;
#define COL_I32 TN_COL_I32
#define COL_I64 TN_COL_I64
#define COL_U64 TN_COL_U64
#define COL_U8 TN_COL_U8
#define COL_F64 TN_COL_F64
#define COL_STR TN_COL_STR
#define COL_F32 TN_COL_F32

typedef tn_store_column column;
typedef tn_store_col_part col_part;

#define FIELD_N(T, f) (sizeof(((T *)0)->f) / sizeof(((T *)0)->f[0]))
#define NUM(T, f, kind) {#f, kind, offsetof(T, f), 1}
#define ARR(T, f, kind) {#f, kind, offsetof(T, f), FIELD_N(T, f)}
#define STR(T, f) {#f, COL_STR, offsetof(T, f), sizeof(((T *)0)->f)}
#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

/* Every number of chk_metrics, flattened. */
typedef struct metrics_row {
  int64_t count, excluded, mismatches;
  double max_abs, max_rel;
  uint64_t max_ulp;
  double rms;
  int64_t nan_mismatches, inf_mismatches, peak_index;
  int32_t rank;
  int64_t peak[HLO_MAX_RANK], bbox_lo[HLO_MAX_RANK], bbox_hi[HLO_MAX_RANK];
  int64_t hist[CHK_HIST_BUCKETS];
  double a_min, a_max, a_mean, a_std;
  double b_min, b_max, b_mean, b_std;
} metrics_row;

static const column metric_cols[] = {
    NUM(metrics_row, count, COL_I64),          NUM(metrics_row, excluded, COL_I64),
    NUM(metrics_row, mismatches, COL_I64),     NUM(metrics_row, max_abs, COL_F64),
    NUM(metrics_row, max_rel, COL_F64),        NUM(metrics_row, max_ulp, COL_U64),
    NUM(metrics_row, rms, COL_F64),            NUM(metrics_row, nan_mismatches, COL_I64),
    NUM(metrics_row, inf_mismatches, COL_I64), NUM(metrics_row, peak_index, COL_I64),
    NUM(metrics_row, rank, COL_I32),           ARR(metrics_row, peak, COL_I64),
    ARR(metrics_row, bbox_lo, COL_I64),        ARR(metrics_row, bbox_hi, COL_I64),
    ARR(metrics_row, hist, COL_I64),           NUM(metrics_row, a_min, COL_F64),
    NUM(metrics_row, a_max, COL_F64),          NUM(metrics_row, a_mean, COL_F64),
    NUM(metrics_row, a_std, COL_F64),          NUM(metrics_row, b_min, COL_F64),
    NUM(metrics_row, b_max, COL_F64),          NUM(metrics_row, b_mean, COL_F64),
    NUM(metrics_row, b_std, COL_F64),
};

/* Sizes that hold every value the text fields can take. */
#define ORDER_LEN 16   /* DEV_MAX_RANK digits and 'k' */
#define PREC_LEN 16    /* "highest" */
#define FLAGS_LEN 64   /* all four flags, comma-joined */
#define STATUS_LEN 16  /* "compile-error" */
#define VERDICT_LEN 24 /* "mismatch-candidate" */

typedef struct cand_row {
  int32_t id;
  char config[DEV_CONFIG_TEXT_MAX];
  uint64_t fingerprint;
  int64_t tile[DEV_MAX_RANK];
  int32_t tile_rank;
  int64_t k;
  int32_t buf;
  char order[ORDER_LEN];
  int32_t pack;
  char prec[PREC_LEN];
  char flags[FLAGS_LEN];
  char status[STATUS_LEN];
  char verdict[VERDICT_LEN];
  char message[512];
  double sim_time, wall_time, speedup, atol, rtol;
  int32_t leaf;
  metrics_row d;
  uint8_t has_ref;
  metrics_row r;
} cand_row;

static const column cand_head_cols[] = {
    NUM(cand_row, id, COL_I32),        STR(cand_row, config),
    NUM(cand_row, fingerprint, COL_U64), ARR(cand_row, tile, COL_I64),
    NUM(cand_row, tile_rank, COL_I32), NUM(cand_row, k, COL_I64),
    NUM(cand_row, buf, COL_I32),       STR(cand_row, order),
    NUM(cand_row, pack, COL_I32),      STR(cand_row, prec),
    STR(cand_row, flags),              STR(cand_row, status),
    STR(cand_row, verdict),            STR(cand_row, message),
    NUM(cand_row, sim_time, COL_F64),  NUM(cand_row, wall_time, COL_F64),
    NUM(cand_row, speedup, COL_F64),   NUM(cand_row, atol, COL_F64),
    NUM(cand_row, rtol, COL_F64),      NUM(cand_row, leaf, COL_I32),
};
static const column cand_mid_cols[] = {NUM(cand_row, has_ref, COL_U8)};

static const col_part cand_parts[] = {
    {cand_head_cols, NCOLS(cand_head_cols), "", 0},
    {metric_cols, NCOLS(metric_cols), "d_", offsetof(cand_row, d)},
    {cand_mid_cols, NCOLS(cand_mid_cols), "", 0},
    {metric_cols, NCOLS(metric_cols), "r_", offsetof(cand_row, r)},
};

typedef struct ref_row {
  uint8_t ran, ok;
  double atol, rtol;
  metrics_row m;
} ref_row;

static const column ref_head_cols[] = {
    NUM(ref_row, ran, COL_U8), NUM(ref_row, ok, COL_U8),
    NUM(ref_row, atol, COL_F64), NUM(ref_row, rtol, COL_F64),
};
static const col_part ref_parts[] = {
    {ref_head_cols, NCOLS(ref_head_cols), "", 0},
    {metric_cols, NCOLS(metric_cols), "", offsetof(ref_row, m)},
};

static hid_t base_type(col_kind k, bool native) {
  switch (k) {
  case COL_I32: return native ? H5T_NATIVE_INT32 : H5T_STD_I32LE;
  case COL_I64: return native ? H5T_NATIVE_INT64 : H5T_STD_I64LE;
  case COL_U64: return native ? H5T_NATIVE_UINT64 : H5T_STD_U64LE;
  case COL_U8: return native ? H5T_NATIVE_UINT8 : H5T_STD_U8LE;
  case COL_F64: return native ? H5T_NATIVE_DOUBLE : H5T_IEEE_F64LE;
  case COL_F32: return native ? H5T_NATIVE_FLOAT : H5T_IEEE_F32LE;
  case COL_STR: break;
  }
  return H5T_C_S1;
}

/* Bytes one column takes on disk. */
static size_t file_size(const column *c) {
  static const size_t width[] = {[COL_I32] = 4, [COL_I64] = 8, [COL_U64] = 8, [COL_U8] = 1, [COL_F64] = 8,
                                 [COL_STR] = 1, [COL_F32] = 4};
  return width[c->kind] * c->n;
}

/* A new type for one column: a NUL-padded fixed string (numpy 'S<n>'), a
 * number, or a fixed array of numbers (numpy subarray). */
static hid_t column_type(const column *c, bool native) {
  hid_t t = -1;
  if (c->kind == COL_STR) {
    t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, c->n) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
      H5Tclose(t);
      t = -1;
    }
  } else if (c->n == 1) {
    t = H5Tcopy(base_type(c->kind, native));
  } else {
    hsize_t n = c->n;
    t = H5Tarray_create2(base_type(c->kind, native), 1, &n);
  }
  return t;
}

/* The memory type (the row struct) and the file type (packed, little
 * endian) of a table. */
static int make_table_types(const col_part *parts, size_t nparts, size_t row_size, hid_t *mem, hid_t *file) {
  size_t fsize = 0;
  for (size_t p = 0; p < nparts; p++)
    for (size_t i = 0; i < parts[p].ncols; i++)
      fsize += file_size(&parts[p].cols[i]);
  *mem = H5Tcreate(H5T_COMPOUND, row_size);
  *file = H5Tcreate(H5T_COMPOUND, fsize);
  int rc = *mem >= 0 && *file >= 0 ? 0 : -1;
  size_t at = 0;
  for (size_t p = 0; p < nparts && rc == 0; p++) {
    for (size_t i = 0; i < parts[p].ncols && rc == 0; i++) {
      const column *c = &parts[p].cols[i];
      char name[64];
      snprintf(name, sizeof name, "%s%s", parts[p].prefix, c->name);
      hid_t mt = column_type(c, true), ft = column_type(c, false);
      if (mt < 0 || ft < 0 || H5Tinsert(*mem, name, parts[p].base + c->offset, mt) < 0 ||
          H5Tinsert(*file, name, at, ft) < 0)
        rc = -1;
      at += file_size(c);
      tn_h5_close_type(mt);
      tn_h5_close_type(ft);
    }
  }
  if (rc != 0) {
    tn_h5_close_type(*mem);
    tn_h5_close_type(*file);
    *mem = *file = -1;
  }
  return rc;
}

/* Writes nrows rows as a 1-D compound dataset; chunk_rows > 0 compresses. */
static int write_table(hid_t loc, const char *name, const col_part *parts, size_t nparts, size_t row_size,
                       const void *rows, size_t nrows, size_t chunk_rows, hlo_error *err) {
  int rc = -1;
  hid_t mem = -1, file = -1, space = -1, dcpl = -1, dset = -1;
  hsize_t dims = nrows, chunk = nrows < chunk_rows ? nrows : chunk_rows;
  if (make_table_types(parts, nparts, row_size, &mem, &file) != 0) {
    tn_h5_fail(err, "%s: cannot build the compound type", name);
    goto done;
  }
  space = H5Screate_simple(1, &dims, NULL);
  dcpl = new_dcpl();
  if (space < 0 || dcpl < 0 || (chunk > 0 && set_compression(dcpl, 1, &chunk) < 0)) {
    tn_h5_fail(err, "%s: cannot set up the dataset", name);
    goto done;
  }
  dset = H5Dcreate2(loc, name, file, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dset < 0) {
    tn_h5_fail(err, "%s: cannot create dataset", name);
    goto done;
  }
  if (nrows > 0 && H5Dwrite(dset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
    tn_h5_fail(err, "%s: cannot write dataset", name);
    goto done;
  }
  rc = 0;
done:
  tn_h5_close_obj(dset);
  tn_h5_close_plist(dcpl);
  tn_h5_close_space(space);
  tn_h5_close_type(file);
  tn_h5_close_type(mem);
  return rc;
}

/* ---- what each column means ---------------------------------------------------- */

/* A table's columns described in the file itself (issue 18: "nothing in
 * the file gives units or column meanings"): the attribute `columns` of
 * the table, one row per column in the table's order, with its name, its
 * unit ("" for a count, a flag or text) and one line of meaning.  h5py
 * reads it as a structured array. */
typedef tn_store_col_doc col_doc;

static const col_doc cand_docs[] = {
    {"id", "", "index in the candidate space; row 0 is the default config"},
    {"config", "", "canonical config text"},
    {"fingerprint", "", "FNV-1a of config"},
    {"tile", "elements", "output tile per tiled dimension, outermost first; 0 past tile_rank"},
    {"tile_rank", "", "number of tiled output dimensions"},
    {"k", "elements", "reduction chunk; 0 when there is no reduction"},
    {"buf", "buffers", "VMEM buffers per operand window"},
    {"order", "", "grid loop order, outermost first; - when empty"},
    {"pack", "accumulators", "interleaved accumulators"},
    {"prec", "", "dot precision: default, high or highest"},
    {"flags", "", "comma-joined lowering flags, or none"},
    {"status", "", "ok, compile-error, runtime-error or timeout"},
    {"verdict", "", "the candidate's verdict (README: verdicts)"},
    {"message", "", "the compile or runtime error, else empty"},
    {"sim_time", "s", "simulated time on the modelled device; 0 when it did not run"},
    {"wall_time", "s", "host time to compile, run and compare"},
    {"speedup", "ratio", "default sim_time / this sim_time"},
    {"atol", "output units", "absolute tolerance the verdict used"},
    {"rtol", "ratio", "relative tolerance the verdict used"},
    {"leaf", "", "the output leaf the metrics describe"},
    {"has_ref", "", "1 when the candidate was also compared with the reference"},
};

static const col_doc metric_docs[] = {
    {"count", "elements", "elements compared"},
    {"excluded", "elements", "NaN/NaN and same-signed Inf pairs left out"},
    {"mismatches", "elements", "elements outside the rule (bitwise or tolerance)"},
    {"max_abs", "output units", "largest absolute error over finite pairs"},
    {"max_rel", "ratio", "largest relative error over finite pairs"},
    {"max_ulp", "ULP", "largest distance in units in the last place of the element type"},
    {"rms", "output units", "root mean square error over finite pairs"},
    {"nan_mismatches", "elements", "NaN on one side only"},
    {"inf_mismatches", "elements", "Inf on one side only or of opposite signs"},
    {"peak_index", "", "flat row-major index of the largest error; -1 when none"},
    {"rank", "", "rank of the compared output"},
    {"peak", "", "peak_index as a multi-index (first rank entries)"},
    {"bbox_lo", "", "inclusive lower corner of the mismatches' bounding box"},
    {"bbox_hi", "", "inclusive upper corner of the mismatches' bounding box"},
    {"hist", "elements", "error histogram: [0] exact, [i] |a-b| in [1e(i-14), 1e(i-13)), [16] >= 1e2 and NaN/Inf"},
    {"a_min", "output units", "smallest finite element of the candidate's side"},
    {"a_max", "output units", "largest finite element of the candidate's side"},
    {"a_mean", "output units", "mean of the candidate's side over finite elements"},
    {"a_std", "output units", "standard deviation of the candidate's side over finite elements"},
    {"b_min", "output units", "smallest finite element of the expected side"},
    {"b_max", "output units", "largest finite element of the expected side"},
    {"b_mean", "output units", "mean of the expected side over finite elements"},
    {"b_std", "output units", "standard deviation of the expected side over finite elements"},
};

static const col_doc ref_docs[] = {
    {"ran", "", "1 when the default ran"},
    {"ok", "", "1 when the default agrees with the reference"},
    {"atol", "output units", "absolute tolerance of the default-vs-reference comparison"},
    {"rtol", "ratio", "relative tolerance of the default-vs-reference comparison"},
};

static const col_doc peak_docs[] = {
    {"candidate", "", "the candidate whose error map this window is of"},
    {"rank", "", "rank of the map"},
    {"rows", "elements", "window rows (along dim rank-2)"},
    {"cols", "elements", "window columns (along dim rank-1)"},
    {"peak", "", "multi-index of the map's largest element"},
    {"origin", "", "multi-index of window element (0, 0)"},
    {"expected", "output units", "expected values, element (i, j) at i * cols + j; NaN past rows * cols"},
    {"actual", "output units", "the candidate's values, laid out as expected"},
};

enum { DOC_NAME = 32, DOC_UNIT = 16, DOC_WHAT = 160 };
typedef struct doc_row {
  char name[DOC_NAME], unit[DOC_UNIT], what[DOC_WHAT];
} doc_row;

static const col_doc *find_doc(const col_doc *docs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(docs[i].name, name) == 0)
      return &docs[i];
  return NULL;
}

/* The `columns` attribute of a table written from parts: each column's
 * description comes from docs, or from metric_docs (with "against the
 * default" or "against the reference" for a d_ or r_ prefix). */
static int write_col_docs(hid_t dset, const col_part *parts, size_t nparts, const col_doc *docs, size_t ndocs,
                          hlo_error *err) {
  size_t n = 0;
  for (size_t p = 0; p < nparts; p++)
    n += parts[p].ncols;
  doc_row *rows = calloc(n ? n : 1, sizeof *rows);
  if (!rows)
    return tn_h5_fail(err, "columns: out of memory");
  int rc = -1;
  size_t k = 0;
  hid_t t = -1, file_t = -1, space = -1, a = -1;
  for (size_t p = 0; p < nparts; p++)
    for (size_t i = 0; i < parts[p].ncols; i++, k++) {
      const char *name = parts[p].cols[i].name;
      char full[DOC_NAME];
      snprintf(full, sizeof full, "%s%s", parts[p].prefix, name);
      /* a prefixed part may be described column by column (store_isolate.c) */
      const col_doc *d = parts[p].cols == metric_cols ? find_doc(metric_docs, NCOLS(metric_docs), name)
                                                      : find_doc(docs, ndocs, full);
      if (!d && parts[p].cols != metric_cols)
        d = find_doc(docs, ndocs, name);
      if (!d) {
        tn_h5_fail(err, "column '%s' has no description", name);
        goto done;
      }
      const char *side = strcmp(parts[p].prefix, "d_") == 0   ? ", against the default"
                         : strcmp(parts[p].prefix, "r_") == 0 ? ", against the reference"
                                                              : "";
      snprintf(rows[k].name, sizeof rows[k].name, "%s%s", parts[p].prefix, name);
      snprintf(rows[k].unit, sizeof rows[k].unit, "%s", d->unit);
      snprintf(rows[k].what, sizeof rows[k].what, "%s%s", d->what, side);
    }
  {
    static const column doc_cols[] = {STR(doc_row, name), STR(doc_row, unit), STR(doc_row, what)};
    static const col_part doc_parts[] = {{doc_cols, NCOLS(doc_cols), "", 0}};
    hsize_t dims = n;
    if (make_table_types(doc_parts, 1, sizeof(doc_row), &t, &file_t) != 0 ||
        (space = H5Screate_simple(1, &dims, NULL)) < 0 ||
        (a = H5Acreate2(dset, "columns", file_t, space, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(a, t, rows) < 0) {
      tn_h5_fail(err, "cannot write the attribute 'columns'");
      goto done;
    }
  }
  rc = 0;
done:
  if (a >= 0)
    H5Aclose(a);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  tn_h5_close_type(file_t);
  free(rows);
  return rc;
}

static const col_doc fusion_attr_docs[] = {
    {"name", "", "the kernel computation's name"},
    {"source", "", "the file it came from"},
    {"hero", "", "the fusion's hero op kind"},
    {"seed", "", "input synthesis seed"},
    {"fingerprint", "", "FNV-1a of the canonical HLO (the group's name)"},
    {"unit", "", "SOURCE:NAME, unique across the files of a run"},
    {"part", "", "1 when the fusion is one unit of a larger module (its --check needs --fusion NAME), else 0"},
    {"space_candidates", "candidates", "size of the candidate space, the default included"},
    {"cut", "", "what left candidates unchecked: none, budget, time-budget or stop"},
    {"inputs_from", "", "graph (captured from the module) or synthetic"},
    {"ncandidates", "candidates", "rows of the candidates table"},
    {"wall_time", "s", "host time for the whole fusion"},
    {"selection", "", "all, or pairwise-cover when a --budget chose the candidates"},
    {"cover_seed", "", "seed of the pairwise cover"},
    {"cover_values", "knob values", "distinct knob values in the space"},
    {"cover_values_covered", "knob values", "of them, held by a checked candidate"},
    {"cover_pairs", "knob-value pairs", "distinct pairs of knob values in the space"},
    {"cover_pairs_covered", "knob-value pairs", "of them, held by a checked candidate"},
    {"default_config", "", "config text of row 0"},
    {"default_ran", "", "1 when the default config ran"},
    {"default_vs_reference_ok", "", "1 when the default agrees with the reference"},
    {"tolerance_criterion", "", "noise-floor, probabilistic or worst-case (--tolerance)"},
    {"inputs_profile", "", "input profile: constrained, naive, edge or oob-indices"},
    {"nonfinite", "", "none, intended or inputs: where the reference's non-finite outputs come from"},
    {"nonfinite_elements", "elements", "non-finite elements in the reference's outputs"},
    {"nonfinite_origin", "", "the instruction that first made a tainted value"},
    {"best_config", "", "fastest correct config that ran; empty when none"},
    {"best_speedup", "ratio", "default sim_time / best sim_time; 0 when there is no best"},
};

/* A run group's attributes: those every run has, then those a sweep
 * (cli_sweep.c) and a merge (cli_merge.c) add. */
static const col_doc run_attr_docs[] = {
    {"started", "", "UTC start time, ISO 8601"},
    {"created_ns", "ns", "when the run was made in this file, since the epoch: orders runs that started in the "
                         "same second"},
    {"finished", "", "UTC end time, ISO 8601; empty until the run ends"},
    {"status", "", "running, complete, stopped, errors or merging; running after the process ended: killed"},
    {"command", "", "the command line of the run"},
    {"machine", "", "machine model (configs/machines)"},
    {"compiler", "", "compiler profile, with +d when --defect added defects to it"},
    {"compiler_profile", "", "compiler profile (configs/compilers) without the --defect additions"},
    {"defects", "", "every modelled defect of the run's device: the profile's and --defect's"},
    {"seed", "", "seed of the inputs and of the timing jitter"},
    {"host", "", "host name of the machine that ran it"},
    {"sweep_identity", "", "sweep file, machine and shard: a resumed sweep continues the run of its identity"},
    {"sweep_config", "", "the sweep file of the run"},
    {"inputs", "", "input profile of the sweep"},
    {"shard", "", "K/N for the K-th of N shards; empty when not sharded; a merged run lists its shards"},
    {"slowdown_threshold", "ratio", "a default config slower than the previous run's by more is a slowdown"},
    {"cover_rotation", "", "UTC date (YYYYMMDD) the pairwise cover's seed was rotated with"},
    {"cover_seed", "", "seed of the pairwise cover of every fusion of the run"},
    {"merge_base", "", "the status the run had before the merge in progress"},
};

static const col_doc changes_attr_docs[] = {
    {"previous_run", "", "the run compared with; empty when there is none"},
    {"slowdown_threshold", "ratio", "a default config slower than the previous run's by more is a slowdown"},
    {"count_new", "findings", "rows of the table new"},
    {"count_fixed", "findings", "rows of the table fixed"},
    {"count_slowdowns", "fusions", "rows of the table slowdowns"},
    {"count_open", "findings", "findings of this run that the previous run had too (still open)"},
};

static const col_doc change_docs[] = {
    {"fingerprint", "", "FNV-1a of the fusion's canonical HLO (its group name in fusions/)"},
    {"unit", "", "FILE:FUSION, the corpus path as the run saw it and the fusion's name"},
    {"config", "", "canonical config text; for slowdowns the default config"},
    {"verdict", "", "new: this run's verdict; fixed: the previous run's"},
    {"before", "s", "the default config's simulated time in the previous run"},
    {"after", "s", "the default config's simulated time in this run"},
};

/* The attribute `attributes` of a fusion group: one row per other
 * attribute of the group (name, unit, meaning), so that the file says
 * what each one is.  An attribute without an entry above gets an empty
 * row rather than failing the write: a results file matters more than its
 * documentation (tests check that every one has an entry). */
typedef struct attr_names {
  char (*names)[DOC_NAME];
  size_t n, cap;
  bool nomem; /* the list could not grow: the iteration stopped for that */
} attr_names;

static herr_t collect_attr(hid_t loc, const char *name, const H5A_info_t *info, void *vctx) {
  (void)loc;
  (void)info;
  attr_names *c = vctx;
  if (strcmp(name, "attributes") == 0)
    return 0;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    void *p = realloc(c->names, cap * sizeof *c->names);
    if (!p) {
      c->nomem = true;
      return -1;
    }
    c->names = p;
    c->cap = cap;
  }
  snprintf(c->names[c->n++], DOC_NAME, "%s", name);
  return 0;
}

static int describe_attrs(hid_t g, const col_doc *docs, size_t ndocs, hlo_error *err) {
  attr_names c = {0};
  hsize_t idx = 0;
  int rc = -1;
  doc_row *rows = NULL;
  hid_t t = -1, file_t = -1, space = -1, a = -1;
  /* A run's attributes change after it begins (a sweep's, the end of a
   * merge): the description is rewritten with them. */
  if (drop_attr(g, "attributes", err) != 0)
    return -1;
  if (H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &c) < 0) {
    tn_h5_fail(err, c.nomem ? "attributes: out of memory" : "cannot list the attributes to describe them");
    goto done;
  }
  rows = calloc(c.n ? c.n : 1, sizeof *rows);
  if (!rows) {
    tn_h5_fail(err, "attributes: out of memory");
    goto done;
  }
  for (size_t i = 0; i < c.n; i++) {
    const char *name = c.names[i];
    snprintf(rows[i].name, sizeof rows[i].name, "%s", name);
    const col_doc *d = find_doc(docs, ndocs, name);
    if (d) {
      snprintf(rows[i].unit, sizeof rows[i].unit, "%s", d->unit);
      snprintf(rows[i].what, sizeof rows[i].what, "%s", d->what);
    } else if (strncmp(name, "count_", 6) == 0) {
      snprintf(rows[i].unit, sizeof rows[i].unit, "candidates");
      snprintf(rows[i].what, sizeof rows[i].what, "candidates with the verdict %s (underscores for dashes)", name + 6);
    }
  }
  {
    static const column doc_cols[] = {STR(doc_row, name), STR(doc_row, unit), STR(doc_row, what)};
    static const col_part doc_parts[] = {{doc_cols, NCOLS(doc_cols), "", 0}};
    hsize_t dims = c.n;
    if (make_table_types(doc_parts, 1, sizeof(doc_row), &t, &file_t) != 0 ||
        (space = H5Screate_simple(1, &dims, NULL)) < 0 ||
        (a = H5Acreate2(g, "attributes", file_t, space, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        (c.n > 0 && H5Awrite(a, t, rows) < 0)) {
      tn_h5_fail(err, "cannot write the attribute 'attributes'");
      goto done;
    }
  }
  rc = 0;
done:
  if (a >= 0)
    H5Aclose(a);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  tn_h5_close_type(file_t);
  free(rows);
  free(c.names);
  return rc;
}

/* Describes the columns of the table `name` in g (write_table wrote it). */
static int describe_table(hid_t g, const char *name, const col_part *parts, size_t nparts, const col_doc *docs,
                          size_t ndocs, hlo_error *err) {
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  if (d < 0)
    return tn_h5_fail(err, "%s: cannot open to describe it", name);
  int rc = write_col_docs(d, parts, nparts, docs, ndocs, err);
  tn_h5_close_obj(d);
  if (rc != 0)
    tn_h5_prefix_error(err, name);
  return rc;
}

/* ---- rows --------------------------------------------------------------------- */

static void fill_metrics(metrics_row *o, const chk_metrics *m) {
  o->count = m->count;
  o->excluded = m->excluded;
  o->mismatches = m->mismatches;
  o->max_abs = m->max_abs;
  o->max_rel = m->max_rel;
  o->max_ulp = m->max_ulp;
  o->rms = m->rms;
  o->nan_mismatches = m->nan_mismatches;
  o->inf_mismatches = m->inf_mismatches;
  o->peak_index = m->peak_index;
  o->rank = m->rank;
  memcpy(o->peak, m->peak, sizeof o->peak);
  memcpy(o->bbox_lo, m->bbox_lo, sizeof o->bbox_lo);
  memcpy(o->bbox_hi, m->bbox_hi, sizeof o->bbox_hi);
  memcpy(o->hist, m->hist, sizeof o->hist);
  o->a_min = m->a.min;
  o->a_max = m->a.max;
  o->a_mean = m->a.mean;
  o->a_std = m->a.std;
  o->b_min = m->b.min;
  o->b_max = m->b.max;
  o->b_mean = m->b.mean;
  o->b_std = m->b.std;
}

static const char *status_name(dev_status s) {
  switch (s) {
  case DEV_OK: return "ok";
  case DEV_COMPILE_ERROR: return "compile-error";
  case DEV_RUNTIME_ERROR: return "runtime-error";
  case DEV_TIMEOUT: return "timeout";
  }
  return "unknown";
}

/* The loop order as the canonical text writes it: "01k", or "-" when the
 * output is a scalar without a reduction. */
static void order_text(const dev_config *c, char *buf, size_t n) {
  size_t at = 0;
  for (int i = 0; i < c->norder && i <= DEV_MAX_RANK && at + 1 < n; i++)
    buf[at++] = c->order[i] == DEV_ORDER_K ? 'k' : (char)('0' + c->order[i] % 10);
  buf[at] = '\0';
  if (at == 0)
    put_str(buf, n, "-");
}

static void flags_text(unsigned flags, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < DEV_FLAG_COUNT; i++)
    if (flags & (1u << i)) {
      int w = snprintf(buf + at, n - at, "%s%s", at ? "," : "", dev_flag_name(i));
      if (w < 0 || (size_t)w >= n - at)
        break;
      at += (size_t)w;
    }
  if (at == 0)
    put_str(buf, n, "none");
}

static void fill_cand(cand_row *o, const tn_cand_result *c) {
  o->id = c->id;
  put_str(o->config, sizeof o->config, c->config);
  o->fingerprint = c->fingerprint;
  o->tile_rank = c->cfg.rank;
  for (int i = 0; i < c->cfg.rank && i < DEV_MAX_RANK; i++)
    o->tile[i] = c->cfg.tile[i];
  o->k = c->cfg.k;
  o->buf = c->cfg.buf;
  order_text(&c->cfg, o->order, sizeof o->order);
  o->pack = c->cfg.pack;
  put_str(o->prec, sizeof o->prec, dev_precision_name(c->cfg.prec));
  flags_text(c->cfg.flags, o->flags, sizeof o->flags);
  put_str(o->status, sizeof o->status, status_name(c->status));
  put_str(o->verdict, sizeof o->verdict, chk_verdict_name(c->verdict));
  put_str(o->message, sizeof o->message, c->message);
  o->sim_time = c->sim_time;
  o->wall_time = c->wall_time;
  o->speedup = c->speedup;
  o->atol = c->tol.atol;
  o->rtol = c->tol.rtol;
  o->leaf = c->leaf;
  fill_metrics(&o->d, &c->vs_default);
  o->has_ref = c->has_vs_reference;
  if (c->has_vs_reference)
    fill_metrics(&o->r, &c->vs_reference);
}

/* ---- one fusion ------------------------------------------------------------------ */

static int write_candidates(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  size_t n = r->ncands > 0 ? (size_t)r->ncands : 0;
  cand_row *rows = calloc(n ? n : 1, sizeof *rows);
  if (!rows)
    return tn_h5_fail(err, "candidates: out of memory");
  for (size_t i = 0; i < n; i++)
    fill_cand(&rows[i], &r->cands[i]);
  int rc = write_table(g, "candidates", cand_parts, NCOLS(cand_parts), sizeof *rows, rows, n, 128, err);
  free(rows);
  if (rc == 0)
    rc = describe_table(g, "candidates", cand_parts, NCOLS(cand_parts), cand_docs, NCOLS(cand_docs), err);
  return rc;
}

static int write_reference(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  ref_row row;
  memset(&row, 0, sizeof row);
  row.ran = r->default_ran;
  row.ok = r->default_vs_reference_ok;
  row.atol = r->reference_tol.atol;
  row.rtol = r->reference_tol.rtol;
  fill_metrics(&row.m, &r->default_vs_reference);
  if (write_table(g, "reference", ref_parts, NCOLS(ref_parts), sizeof row, &row, 1, 0, err) != 0)
    return -1;
  return describe_table(g, "reference", ref_parts, NCOLS(ref_parts), ref_docs, NCOLS(ref_docs), err);
}

/* Text (the module's, the covered pairs) as one variable-length UTF-8
 * string (h5py: bytes, or str through .asstr()); bytes that are not UTF-8
 * (in metadata, say) become U+FFFD so that the declaration holds (utf8.h). */
static int write_text(hid_t g, const char *name, const char *text, hlo_error *err) {
  const char *p = text ? text : "";
  char *fixed = NULL;
  if (!tn_utf8_valid(p)) {
    fixed = tn_utf8_fix(p);
    if (!fixed)
      return tn_h5_fail(err, "%s: out of memory", name);
    p = fixed;
  }
  int rc = -1;
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), dcpl = new_dcpl(), d = -1;
  if (t >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0 && space >= 0 &&
      dcpl >= 0)
    d = H5Dcreate2(g, name, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d < 0)
    tn_h5_fail(err, "%s: cannot create dataset", name);
  else if (H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) < 0)
    tn_h5_fail(err, "%s: cannot write dataset", name);
  else
    rc = 0;
  tn_h5_close_obj(d);
  tn_h5_close_plist(dcpl);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  free(fixed);
  return rc;
}

/* text's lines as a one-dimensional dataset of UTF-8 strings, one line
 * each (a list stays a list: h5py reads an array of str). */
static int write_lines(hid_t g, const char *name, const char *text, hlo_error *err) {
  const char *p = text ? text : "";
  char *copy = tn_utf8_valid(p) ? strdup(p) : tn_utf8_fix(p);
  size_t n = 0;
  for (const char *q = copy; q && *q; q++)
    n += *q == '\n' || q[1] == '\0';
  const char **lines = calloc(n ? n : 1, sizeof *lines);
  if (!copy || !lines) {
    free(copy);
    free(lines);
    return tn_h5_fail(err, "%s: out of memory", name);
  }
  size_t k = 0;
  for (char *q = copy, *start = copy; *q; q++) {
    if (*q == '\n' || q[1] == '\0') {
      if (*q == '\n')
        *q = '\0';
      lines[k++] = start;
      start = q + 1;
    }
  }
  int rc = -1;
  hsize_t dims = (hsize_t)k;
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate_simple(1, &dims, NULL), d = -1;
  if (t >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0 && space >= 0)
    d = H5Dcreate2(g, name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0)
    tn_h5_fail(err, "%s: cannot create dataset", name);
  else if (k > 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, lines) < 0)
    tn_h5_fail(err, "%s: cannot write dataset", name);
  else
    rc = 0;
  tn_h5_close_obj(d);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  free(lines);
  free(copy);
  return rc;
}

/* Chunks of at most 64 Ki floats (256 KiB, inside HDF5's default chunk
 * cache) made of whole inner rows where possible: the outer dimensions
 * shrink first, so a chunk is a contiguous run of the row-major data. */
static void error_chunk(int rank, const int64_t *dims, hsize_t *chunk) {
  const hsize_t target = 65536;
  for (int i = 0; i < rank; i++)
    chunk[i] = (hsize_t)dims[i];
  for (int i = 0; i < rank; i++) {
    hsize_t inner = 1;
    for (int j = i + 1; j < rank; j++)
      inner *= chunk[j];
    if (inner * chunk[i] <= target)
      break;
    chunk[i] = target / inner > 0 ? target / inner : 1;
  }
}

static int write_error_map(hid_t errors, const tn_fusion_result *r, const tn_error_map *e, hlo_error *err) {
  char name[32];
  snprintf(name, sizeof name, "%d", e->cand_id);
  const tn_cand_result *c = NULL;
  for (int i = 0; i < r->ncands && !c; i++)
    if (r->cands[i].id == e->cand_id)
      c = &r->cands[i];
  if (!c)
    return tn_h5_fail(err, "errors/%s: no candidate %d among the results", name, e->cand_id);
  if (e->rank < 0 || e->rank > HLO_MAX_RANK)
    return tn_h5_fail(err, "errors/%s: rank %d out of range", name, e->rank);

  int rc = -1;
  hsize_t dims[HLO_MAX_RANK], chunk[HLO_MAX_RANK];
  bool empty = false;
  for (int i = 0; i < e->rank; i++) {
    dims[i] = (hsize_t)(e->dims[i] > 0 ? e->dims[i] : 0);
    empty = empty || dims[i] == 0;
  }
  hid_t space = e->rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(e->rank, dims, NULL);
  hid_t dcpl = new_dcpl(), d = -1;
  if (space < 0 || dcpl < 0) {
    tn_h5_fail(err, "errors/%s: cannot set up the dataset", name);
    goto done;
  }
  /* A scalar or empty map has nothing to chunk: it stays contiguous. */
  if (e->rank > 0 && !empty) {
    error_chunk(e->rank, e->dims, chunk);
    if (set_compression(dcpl, e->rank, chunk) < 0) {
      tn_h5_fail(err, "errors/%s: cannot set up compression", name);
      goto done;
    }
  }
  d = H5Dcreate2(errors, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d < 0) {
    tn_h5_fail(err, "errors/%s: cannot create dataset (two maps for one candidate?)", name);
    goto done;
  }
  if (!empty && e->data && H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, e->data) < 0) {
    tn_h5_fail(err, "errors/%s: cannot write dataset", name);
    goto done;
  }
  if (tn_h5_attr_set_str(d, "candidate", c->config, err) != 0 ||
      tn_h5_attr_set_str(d, "verdict", chk_verdict_name(c->verdict), err) != 0) {
    tn_h5_prefix_error(err, "errors");
    goto done;
  }
  rc = 0;
done:
  tn_h5_close_obj(d);
  tn_h5_close_plist(dcpl);
  tn_h5_close_space(space);
  return rc;
}

/* The values around each error map's peak (result.h), one row per map,
 * in the fusion group beside `errors`: a table rather than attributes
 * so that h5py reads all of a fusion's windows in one go.  Element
 * [i * cols + j] of expected and actual is window row i, column j; the
 * elements past rows * cols are NaN. */
typedef struct peak_row {
  int32_t candidate, rank, rows, cols;
  int64_t peak[HLO_MAX_RANK], origin[HLO_MAX_RANK];
  double expected[TN_PEAK_SIDE * TN_PEAK_SIDE], actual[TN_PEAK_SIDE * TN_PEAK_SIDE];
} peak_row;

static const column peak_cols[] = {
    NUM(peak_row, candidate, COL_I32), NUM(peak_row, rank, COL_I32),  NUM(peak_row, rows, COL_I32),
    NUM(peak_row, cols, COL_I32),      ARR(peak_row, peak, COL_I64),  ARR(peak_row, origin, COL_I64),
    ARR(peak_row, expected, COL_F64),  ARR(peak_row, actual, COL_F64),
};
static const col_part peak_parts[] = {{peak_cols, NCOLS(peak_cols), "", 0}};

static int write_peak_windows(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  size_t n = 0;
  for (int i = 0; i < r->nerror_maps; i++)
    n += r->error_maps[i].peak.rows > 0;
  if (n == 0)
    return 0;
  peak_row *rows = calloc(n, sizeof *rows);
  if (!rows)
    return tn_h5_fail(err, "peak_windows: out of memory");
  size_t k = 0;
  for (int i = 0; i < r->nerror_maps; i++) {
    const tn_error_map *e = &r->error_maps[i];
    const tn_peak_window *w = &e->peak;
    if (w->rows <= 0)
      continue;
    peak_row *o = &rows[k++];
    o->candidate = e->cand_id;
    o->rank = e->rank;
    o->rows = w->rows;
    o->cols = w->cols;
    memcpy(o->peak, w->peak, sizeof o->peak);
    memcpy(o->origin, w->origin, sizeof o->origin);
    for (int j = 0; j < TN_PEAK_SIDE * TN_PEAK_SIDE; j++) {
      bool used = j < w->rows * w->cols;
      o->expected[j] = used ? w->expected[j] : NAN;
      o->actual[j] = used ? w->actual[j] : NAN;
    }
  }
  int rc = write_table(g, "peak_windows", peak_parts, NCOLS(peak_parts), sizeof *rows, rows, n, 0, err);
  free(rows);
  if (rc == 0)
    rc = describe_table(g, "peak_windows", peak_parts, NCOLS(peak_parts), peak_docs, NCOLS(peak_docs), err);
  return rc;
}

/* "count_mismatch_candidate": the verdict name, dashes made underscores so
 * the name is also a Python identifier. */
static void count_attr_name(chk_verdict v, char *buf, size_t n) {
  snprintf(buf, n, "count_%s", chk_verdict_name(v));
  for (char *p = buf; *p; p++)
    if (*p == '-')
      *p = '_';
}

/* "SOURCE:NAME": unique across the files of a run even when two modules
 * name their units alike (two `main`s). */
static int set_unit_attr(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  char unit[sizeof r->source + sizeof r->name + 2];
  snprintf(unit, sizeof unit, "%s:%s", r->source, r->name);
  static const char *const cuts[] = {"none", "budget", "time-budget", "stop"};
  const char *cut = (unsigned)r->cut < sizeof cuts / sizeof cuts[0] ? cuts[r->cut] : "none";
  if (tn_h5_attr_set_str(g, "unit", unit, err) != 0 ||
      tn_h5_attr_set_i64(g, "space_candidates", r->space_size, err) != 0 ||
      tn_h5_attr_set_str(g, "cut", cut, err) != 0 ||
      tn_h5_attr_set_str(g, "inputs_from", r->inputs_from[0] ? r->inputs_from : "synthetic", err) != 0 ||
      tn_h5_attr_set_i64(g, "part", r->part, err) != 0)
    return -1;
  /* Graph-captured inputs cannot be synthesised again from the seed:
   * they are kept, like --eval's, as inputs/<k>. */
  if (r->inputs && r->ninputs > 0 && tn_h5_write_inputs(g, "inputs", r->ninputs, r->inputs, err) != 0)
    return -1;
  return 0;
}

/* output_tolerance: f64[noutputs, 2], each output leaf's atol and rtol
 * against the reference (absent when the default did not run). */
static int write_output_tolerance(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  if (r->noutputs <= 0)
    return 0;
  int64_t dims[2] = {r->noutputs, 2};
  hlo_value *v = hlo_value_array_uninit(HLO_F64, 2, dims);
  if (!v)
    return hlo_error_set(err, 0, 0, "out of memory");
  double *p = v->data;
  for (int i = 0; i < r->noutputs; i++) {
    p[2 * i] = r->output_tol[i].atol;
    p[2 * i + 1] = r->output_tol[i].rtol;
  }
  int rc = tn_h5_write_array(g, "output_tolerance", v, err);
  hlo_value_unref(v);
  return rc;
}

static int write_fusion_attrs(hid_t g, const tn_fusion_result *r, hlo_error *err) {
  const char *dflt = r->ncands > 0 ? r->cands[0].config : "";
  bool has_best = r->best >= 0 && r->best < r->ncands;
  if (set_unit_attr(g, r, err) != 0)
    return -1;
  if (tn_h5_attr_set_str(g, "name", r->name, err) != 0 || tn_h5_attr_set_str(g, "source", r->source, err) != 0 ||
      tn_h5_attr_set_str(g, "hero", r->hero, err) != 0 || tn_h5_attr_set_u64(g, "seed", r->seed, err) != 0 ||
      tn_h5_attr_set_u64(g, "fingerprint", r->fingerprint, err) != 0 ||
      tn_h5_attr_set_i64(g, "ncandidates", r->ncands, err) != 0 ||
      tn_h5_attr_set_str(g, "default_config", dflt, err) != 0 ||
      tn_h5_attr_set_i64(g, "default_ran", r->default_ran, err) != 0 ||
      tn_h5_attr_set_i64(g, "default_vs_reference_ok", r->default_vs_reference_ok, err) != 0 ||
      tn_h5_attr_set_str(g, "best_config", has_best ? r->cands[r->best].config : "", err) != 0 ||
      tn_h5_attr_set_f64(g, "best_speedup", has_best ? r->cands[r->best].speedup : 0.0, err) != 0 ||
      tn_h5_attr_set_f64(g, "wall_time", r->wall_time, err) != 0)
    return -1;
  /* Issue 13: the tolerance criterion, and each output's tolerance. */
  if (tn_h5_attr_set_str(g, "tolerance_criterion", chk_tol_criterion_name((chk_tol_criterion)r->criterion), err) != 0 ||
      write_output_tolerance(g, r, err) != 0)
    return -1;
  /* Issue 6: the input profile and the non-finite intent of the reference. */
  if (tn_h5_attr_set_str(g, "inputs_profile", chk_inputs_profile_name((chk_inputs_profile)r->profile), err) != 0 ||
      tn_h5_attr_set_str(g, "nonfinite", chk_nonfinite_name(r->nonfinite.kind), err) != 0 ||
      tn_h5_attr_set_i64(g, "nonfinite_elements", r->nonfinite.nonfinite, err) != 0 ||
      tn_h5_attr_set_str(g, "nonfinite_origin", r->nonfinite.origin, err) != 0)
    return -1;
  /* Issue 19: how a --budget chose the candidates it checked. */
  if (tn_h5_attr_set_str(g, "selection", r->covered ? "pairwise-cover" : "all", err) != 0)
    return -1;
  if (r->covered &&
      (tn_h5_attr_set_u64(g, "cover_seed", r->cover.seed, err) != 0 ||
       tn_h5_attr_set_i64(g, "cover_values", r->cover.values, err) != 0 ||
       tn_h5_attr_set_i64(g, "cover_values_covered", r->cover.values_covered, err) != 0 ||
       tn_h5_attr_set_i64(g, "cover_pairs", r->cover.pairs, err) != 0 ||
       tn_h5_attr_set_i64(g, "cover_pairs_covered", r->cover.pairs_covered, err) != 0))
    return -1;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++) {
    char name[48];
    count_attr_name((chk_verdict)v, name, sizeof name);
    if (tn_h5_attr_set_i64(g, name, r->verdict_counts[v], err) != 0)
      return -1;
  }
  return 0;
}

/* Makes "base", or "base-2", "base-3"... whichever is free under loc. */
static int unique_name(hid_t loc, const char *base, char *out, size_t n, hlo_error *err) {
  for (int i = 1; i < 10000; i++) {
    int w = i == 1 ? snprintf(out, n, "%s", base) : snprintf(out, n, "%s-%d", base, i);
    if (w < 0 || (size_t)w >= n)
      return tn_h5_fail(err, "%s: name too long", base);
    int e = tn_h5_exists(loc, out, err);
    if (e <= 0)
      return e;
  }
  return tn_h5_fail(err, "%s: too many entries of that name", base);
}

typedef struct add_ctx {
  const tn_store *s;
  const tn_fusion_result *r;
} add_ctx;

static int write_fusion(hid_t fusions, const tn_fusion_result *r, hlo_error *err) {
  char base[32], name[48];
  snprintf(base, sizeof base, "%016" PRIx64, r->fingerprint);
  if (unique_name(fusions, base, name, sizeof name, err) != 0)
    return -1;
  hid_t g = make_group(fusions, name, err), errors = -1;
  int rc = -1;
  if (g < 0)
    return -1;
  if (write_fusion_attrs(g, r, err) != 0 || describe_attrs(g, fusion_attr_docs, NCOLS(fusion_attr_docs), err) != 0 ||
      write_text(g, "hlo", r->hlo, err) != 0 || write_candidates(g, r, err) != 0 ||
      write_reference(g, r, err) != 0 ||
      (r->covered && write_lines(g, "covered_pairs", r->cover.pairs_text, err) != 0))
    goto done;
  errors = make_group(g, "errors", err);
  if (errors < 0)
    goto done;
  for (int i = 0; i < r->nerror_maps; i++)
    if (write_error_map(errors, r, &r->error_maps[i], err) != 0)
      goto done;
  if (write_peak_windows(g, r, err) != 0)
    goto done;
  rc = 0;
done:
  tn_h5_close_obj(errors);
  tn_h5_close_obj(g);
  if (rc != 0) {
    char what[256];
    snprintf(what, sizeof what, "fusion %s (%s)", name, r->name);
    tn_h5_prefix_error(err, what);
  }
  return rc;
}

static int add_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  (void)fresh;
  const add_ctx *c = vctx;
  char path[PATH_LEN];
  snprintf(path, sizeof path, "runs/%s/fusions", c->s->run.id);
  hid_t fusions = open_group(file, path, err);
  if (fusions < 0)
    return tn_h5_prefix_error(err, "the run is no longer in the file");
  int rc = write_fusion(fusions, c->r, err);
  tn_h5_close_obj(fusions);
  return rc;
}

/* ---- runs ------------------------------------------------------------------------- */

/* compiler_profile and the list defects (store.h: tn_run_info). */
static int write_run_device(hid_t g, const tn_run_info *run, hlo_error *err) {
  char profile[sizeof run->compiler];
  snprintf(profile, sizeof profile, "%s", run->compiler);
  size_t len = strlen(profile);
  if (len >= 2 && strcmp(profile + len - 2, "+d") == 0)
    profile[len - 2] = '\0';
  if (replace_str_attr(g, "compiler_profile", profile, err) != 0)
    return -1;
  if (!run->defects_known)
    return 0;
  const char *names[DEV_DEFECT_COUNT];
  int n = 0;
  for (int d = 0; d < DEV_DEFECT_COUNT; d++)
    if ((run->defects >> d) & 1u)
      names[n++] = dev_defect_name((dev_defect)d);
  if (drop_attr(g, "defects", err) != 0)
    return -1;
  return tn_h5_attr_set_str_list(g, "defects", n, names, err);
}

/* One file, one layout: appending version 2 runs to a version 1 file
 * would leave readers a file whose runs disagree on what an attribute's
 * type is.  --merge reads version 1 and writes the current one, so it
 * carries a file over whole. */
static int refuse_old(int64_t version, hlo_error *err) {
  return tn_h5_fail(err,
                    "results schema version %" PRId64 " was written by an older tune; this tune appends only to "
                    "version %d files: write to a new file, or carry this one over with 'tune --merge NEW.h5 "
                    "THIS.h5'",
                    version, TN_STORE_SCHEMA_VERSION);
}

/* A file we may append to: ours, and a schema version we understand. */
static int check_schema(hid_t file, hlo_error *err) {
  char schema[64];
  int64_t version = 0;
  hlo_error ignored = {0};
  if (tn_h5_attr_get_str(file, "schema", schema, sizeof schema, &ignored) != 0 ||
      strcmp(schema, TN_STORE_SCHEMA) != 0)
    return tn_h5_fail(err, "not a tune results file (no schema attribute \"%s\"); refusing to append to it",
                TN_STORE_SCHEMA);
  if (tn_h5_attr_get_num(file, "schema_version", H5T_NATIVE_INT64, &version, err) != 0)
    return -1;
  if (version >= TN_STORE_SCHEMA_VERSION_OLDEST && version < TN_STORE_SCHEMA_VERSION)
    return refuse_old(version, err);
  if (version != TN_STORE_SCHEMA_VERSION)
    return tn_h5_fail(err, "schema_version %" PRId64 " is not one this tune writes (%d)", version,
                TN_STORE_SCHEMA_VERSION);
  return 0;
}

static int begin_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  tn_run_info *run = vctx;
  if (fresh) {
    if (tn_h5_attr_set_str(file, "schema", TN_STORE_SCHEMA, err) != 0 ||
        tn_h5_attr_set_i64(file, "schema_version", TN_STORE_SCHEMA_VERSION, err) != 0 ||
        tn_h5_attr_set_str(file, "tool_version", PACKAGE_VERSION, err) != 0)
      return -1;
  } else if (check_schema(file, err) != 0) {
    return -1;
  }
  hid_t runs = open_or_make_group(file, "runs", err);
  if (runs < 0)
    return -1;
  int rc = -1;
  hid_t g = -1, fusions = -1;
  char base[sizeof run->id];
  memcpy(base, run->id, sizeof base);
  if (unique_name(runs, base, run->id, sizeof run->id, err) != 0)
    goto done;
  g = make_group(runs, run->id, err);
  if (g < 0)
    goto done;
  if (tn_h5_attr_set_str(g, "started", run->started, err) != 0 ||
      (run->created_ns > 0 && tn_h5_attr_set_i64(g, "created_ns", run->created_ns, err) != 0) ||
      tn_h5_attr_set_str(g, "finished", run->finished, err) != 0 ||
      tn_h5_attr_set_str(g, "status", run->status, err) != 0 ||
      tn_h5_attr_set_str(g, "command", run->command, err) != 0 ||
      tn_h5_attr_set_str(g, "machine", run->machine, err) != 0 ||
      tn_h5_attr_set_str(g, "compiler", run->compiler, err) != 0 ||
      tn_h5_attr_set_u64(g, "seed", run->seed, err) != 0 || tn_h5_attr_set_str(g, "host", run->host, err) != 0 ||
      write_run_device(g, run, err) != 0 || describe_attrs(g, run_attr_docs, NCOLS(run_attr_docs), err) != 0) {
    tn_h5_prefix_error(err, run->id);
    goto done;
  }
  fusions = make_group(g, "fusions", err);
  rc = fusions < 0 ? -1 : 0;
done:
  tn_h5_close_obj(fusions);
  tn_h5_close_obj(g);
  tn_h5_close_obj(runs);
  return rc;
}

static int end_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  (void)fresh;
  const tn_run_info *run = vctx;
  char path[PATH_LEN];
  hid_t g = open_run(file, run->id, path, err);
  if (g < 0)
    return -1;
  int rc = replace_str_attr(g, "finished", run->finished, err) == 0 &&
                   replace_str_attr(g, "status", run->status, err) == 0
               ? 0
               : tn_h5_prefix_error(err, path);
  tn_h5_close_obj(g);
  return rc;
}

/* ---- API ------------------------------------------------------------------------------ */

/* A second name for the file as it is now, "PATH.tmp.<pid>.<n>.undo", so
 * that a rename can bring it back whatever happens to PATH later (and with
 * no free space needed).  -1 with errno when the file system has no hard
 * links. */
static int link_before(const char *path, char **before) {
  size_t n = strlen(path) + 48;
  char *name = malloc(n);
  if (!name) {
    errno = ENOMEM;
    return -1;
  }
  for (unsigned i = 0; i < 1000; i++) {
    snprintf(name, n, "%s.tmp.%ld.%u.undo", path, (long)getpid(), i);
    if (link(path, name) == 0) {
      *before = name;
      return 0;
    }
    if (errno != EEXIST)
      break;
  }
  int saved = errno;
  free(name);
  errno = saved;
  return -1;
}

/* The undoable run in progress, for a crash inside a library
 * (libguard.h): fixed buffers, since the undo then runs in a signal
 * handler, where only rename and unlink may be called. */
static struct {
  const tn_store *store;
  bool created;
  char path[PATH_MAX], before[PATH_MAX];
} on_crash;

static void undo_on_crash(void) {
  if (on_crash.created) {
    unlink(on_crash.path);
  } else if (rename(on_crash.before, on_crash.path) == 0) {
    /* When both names were still links to one file, rename did nothing. */
    unlink(on_crash.before);
  }
}

static void arm_undo_on_crash(const tn_store *s) {
  if (strlen(s->path) >= sizeof on_crash.path || (s->before && strlen(s->before) >= sizeof on_crash.before))
    return;
  strcpy(on_crash.path, s->path);
  strcpy(on_crash.before, s->before ? s->before : "");
  on_crash.created = s->created;
  on_crash.store = s;
  tn_libguard_add_cleanup(undo_on_crash);
}

static tn_store *begin_run(const char *path, tn_run_info *run, bool undoable, hlo_error *err) {
  if (!path || !*path || !run) {
    tn_h5_fail(err, "no results file named");
    return NULL;
  }
  /* A caller-chosen id is kept (made unique); otherwise the time and pid. */
  if (strchr(run->id, '/') || strcmp(run->id, ".") == 0) {
    tn_h5_fail(err, "%s: run id '%s' is not a valid group name", path, run->id);
    return NULL;
  }
  /* The list `defects` is written from the bits, which cannot hold a
   * defect this tune does not model (a run read from a newer tune's file,
   * carried by --merge): dropping its name would change the run. */
  if (run->defects_unknown[0]) {
    tn_h5_fail(err, "%s: run %s: defects: %s: not a defect this tune models (a newer tune wrote the run); "
               "refusing to write the run without it", path, run->id, run->defects_unknown);
    return NULL;
  }
  if (!run->id[0]) {
    char stamp[32];
    utc_now(stamp, sizeof stamp, true);
    snprintf(run->id, sizeof run->id, "%s-%ld", stamp, (long)getpid());
  }
  utc_now(run->started, sizeof run->started, false);
  struct timespec ts;
  run->created_ns = clock_gettime(CLOCK_REALTIME, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
  run->finished[0] = '\0';
  if (!run->status[0]) /* a merge names its own ("merging") */
    put_str(run->status, sizeof run->status, "running");
  fill_host(run->host, sizeof run->host);

  tn_store *s = calloc(1, sizeof *s);
  if (s)
    s->path = strdup(path);
  if (!s || !s->path) {
    free(s);
    tn_h5_fail(err, "out of memory");
    return NULL;
  }
  if (undoable) {
    struct stat st;
    s->undoable = true;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
      s->created = true;
    } else if (link_before(path, &s->before) != 0) {
      tn_h5_fail(err, "%s: cannot keep the file as it is to restore it on failure: %s", path, strerror(errno));
      tn_store_close(s);
      return NULL;
    }
    arm_undo_on_crash(s);
  }
  if (edit_atomically(path, true, &s->last, undoable, begin_edit, run, err) != 0) {
    tn_store_close(s);
    return NULL;
  }
  s->run = *run;
  return s;
}

tn_store *tn_store_begin_run(const char *path, tn_run_info *run, hlo_error *err) {
  return begin_run(path, run, false, err);
}

tn_store *tn_store_begin_run_undoable(const char *path, tn_run_info *run, hlo_error *err) {
  return begin_run(path, run, true, err);
}

int tn_store_undo(tn_store *s, hlo_error *err) {
  if (!s)
    return 0;
  int rc = 0;
  if (!s->undoable) {
    rc = tn_h5_fail(err, "%s: internal error: the run cannot be undone", s->path);
  } else if (s->created) {
    if (unlink(s->path) != 0 && errno != ENOENT)
      rc = tn_h5_fail(err, "%s: cannot remove it: %s", s->path, strerror(errno));
  } else if (rename(s->before, s->path) != 0) {
    rc = tn_h5_fail(err, "%s: cannot restore it from %s: %s", s->path, s->before, strerror(errno));
  } else {
    /* Renamed; or, when the run had not replaced the file yet, both names
     * were links to one file and rename did nothing: remove the spare. */
    if (unlink(s->before) != 0 && errno != ENOENT)
      rc = tn_h5_fail(err, "%s: cannot remove %s: %s", s->path, s->before, strerror(errno));
    free(s->before);
    s->before = NULL;
  }
  if (rc == 0 && tn_sync_dir_of(s->path) != 0)
    rc = tn_h5_fail(err, "%s: restored, but cannot sync its directory: %s", s->path, strerror(errno));
  tn_store_close(s);
  return rc;
}

int tn_store_add_fusion(tn_store *s, const tn_fusion_result *r, hlo_error *err) {
  if (!s || !r)
    return tn_h5_fail(err, "no results file open");
  add_ctx c = {s, r};
  return edit_atomically(s->path, false, &s->last, s->undoable, add_edit, &c, err);
}

int tn_store_end_run(tn_store *s, const char *status, hlo_error *err) {
  if (!s)
    return tn_h5_fail(err, "no results file open");
  utc_now(s->run.finished, sizeof s->run.finished, false);
  put_str(s->run.status, sizeof s->run.status, status ? status : "complete");
  int rc = edit_atomically(s->path, false, &s->last, s->undoable, end_edit, &s->run, err);
  if (rc != 0 && s->undoable) {
    hlo_error uerr = {0};
    if (tn_store_undo(s, &uerr) != 0)
      tn_h5_prefix_error(&uerr, err->msg), *err = uerr;
    return rc;
  }
  tn_store_close(s);
  return rc;
}

void tn_store_close(tn_store *s) {
  if (!s)
    return;
  if (on_crash.store == s) {
    tn_libguard_remove_cleanup(undo_on_crash);
    on_crash.store = NULL;
  }
  if (s->before)
    unlink(s->before);
  free(s->before);
  free(s->path);
  free(s);
}

/* ---- sweeps (issue 7) ---------------------------------------------------------------- */

tn_store *tn_store_reopen_run(const char *path, const char *run_id, tn_run_info *run, hlo_error *err) {
  /* Listing the runs checks the file in a forked child (h5probe.h).  The
   * file's identity around that check is kept, so that the edits that
   * follow skip the check for as long as the file stays as it was: they
   * may run while the caller has other threads (under MPI, rank 0's own
   * worker checks a unit while a result is stored), and a child forked
   * while another thread holds an allocator lock can hang until its
   * alarm, failing the store. */
  struct stat before, after;
  bool known = stat(path, &before) == 0;
  tn_run_info *runs = NULL;
  int nruns = 0;
  if (tn_results_list_runs(path, &runs, &nruns, NULL, 0, err) != 0)
    return NULL;
  /* Reading an old file is fine; adding to one of its runs is not (a
   * resumed sweep, a merge into a run of the same id). */
  int version = tn_results_schema_version(path, err);
  if (version != TN_STORE_SCHEMA_VERSION) {
    free(runs);
    if (version > 0) {
      refuse_old(version, err);
      tn_h5_prefix_error(err, path);
    }
    return NULL;
  }
  known = known && stat(path, &after) == 0;
  int found = -1;
  for (int i = 0; i < nruns; i++)
    if (strcmp(runs[i].id, run_id) == 0)
      found = i;
  if (found < 0) {
    free(runs);
    tn_h5_fail(err, "%s: no run '%s'", path, run_id);
    return NULL;
  }
  *run = runs[found];
  free(runs);
  tn_store *s = calloc(1, sizeof *s);
  if (s)
    s->path = strdup(path);
  if (!s || !s->path) {
    free(s);
    tn_h5_fail(err, "out of memory");
    return NULL;
  }
  s->run = *run;
  if (known) {
    set_id(&s->last, &before);
    if (!same_id(&s->last, &after))
      s->last.valid = false; /* changed meanwhile: the first edit checks it */
  }
  return s;
}

typedef struct attrs_ctx {
  const char *run_id, *sub;
  int n;
  const tn_store_value *values;
} attrs_ctx;

static int set_value(hid_t g, const tn_store_value *v, hlo_error *err) {
  if (drop_attr(g, v->key, err) != 0)
    return -1;
  switch (v->kind) {
  case TN_STORE_I64:
    return tn_h5_attr_set_i64(g, v->key, v->i, err);
  case TN_STORE_U64:
    return tn_h5_attr_set_u64(g, v->key, v->u, err);
  case TN_STORE_F64:
    return tn_h5_attr_set_f64(g, v->key, v->f, err);
  case TN_STORE_STR:
  default:
    return tn_h5_attr_set_str(g, v->key, v->s, err);
  }
}

static int attrs_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  (void)fresh;
  const attrs_ctx *c = vctx;
  char path[PATH_LEN];
  hid_t run = open_run(file, c->run_id, path, err), g = -1;
  if (run < 0)
    return -1;
  int rc = -1;
  if (!c->sub)
    g = run, run = -1;
  else
    g = open_or_make_group(run, c->sub, err);
  if (g >= 0) {
    rc = 0;
    for (int i = 0; i < c->n && rc == 0; i++)
      rc = set_value(g, &c->values[i], err);
    if (rc == 0 && !c->sub)
      rc = describe_attrs(g, run_attr_docs, NCOLS(run_attr_docs), err);
  }
  tn_h5_close_obj(g);
  tn_h5_close_obj(run);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, path);
}

int tn_store_set_run_values(tn_store *s, const char *sub, int n, const tn_store_value *values, hlo_error *err) {
  if (!s)
    return tn_h5_fail(err, "no results file open");
  attrs_ctx c = {s->run.id, sub, n, values};
  int rc = edit_atomically(s->path, false, &s->last, s->undoable, attrs_edit, &c, err);
  for (int i = 0; rc == 0 && !sub && i < n; i++) {
    if (values[i].kind != TN_STORE_STR)
      continue;
    if (strcmp(values[i].key, "status") == 0)
      put_str(s->run.status, sizeof s->run.status, values[i].s);
    else if (strcmp(values[i].key, "finished") == 0)
      put_str(s->run.finished, sizeof s->run.finished, values[i].s);
  }
  return rc;
}

int tn_store_set_run_attrs(tn_store *s, const char *sub, int n, const char *const *keys,
                           const char *const *values, hlo_error *err) {
  tn_store_value *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
  if (!v)
    return tn_h5_fail(err, "out of memory");
  for (int i = 0; i < n; i++) {
    v[i].key = keys[i];
    v[i].kind = TN_STORE_STR;
    v[i].s = values[i];
  }
  int rc = tn_store_set_run_values(s, sub, n, v, err);
  free(v);
  return rc;
}

/* ---- what changed since the previous run ------------------------------------ */

enum { CHANGE_UNIT = 1280, CHANGE_CONFIG = 256, CHANGE_VERDICT = 32 };
typedef struct finding_row {
  uint64_t fingerprint;
  char unit[CHANGE_UNIT], config[CHANGE_CONFIG], verdict[CHANGE_VERDICT];
} finding_row;
typedef struct slowdown_row {
  uint64_t fingerprint;
  char unit[CHANGE_UNIT], config[CHANGE_CONFIG];
  double before, after;
} slowdown_row;

static const column finding_cols[] = {NUM(finding_row, fingerprint, COL_U64), STR(finding_row, unit),
                                      STR(finding_row, config), STR(finding_row, verdict)};
static const col_part finding_parts[] = {{finding_cols, NCOLS(finding_cols), "", 0}};
static const column slowdown_cols[] = {NUM(slowdown_row, fingerprint, COL_U64), STR(slowdown_row, unit),
                                       STR(slowdown_row, config), NUM(slowdown_row, before, COL_F64),
                                       NUM(slowdown_row, after, COL_F64)};
static const col_part slowdown_parts[] = {{slowdown_cols, NCOLS(slowdown_cols), "", 0}};

/* One table of changes, replacing the one there was. */
static int write_changes_table(hid_t g, const char *name, const tn_store_change *list, int n, bool slow,
                               hlo_error *err) {
  if (drop_link(g, name, err) != 0)
    return -1;
  size_t size = slow ? sizeof(slowdown_row) : sizeof(finding_row);
  char *rows = calloc((size_t)(n > 0 ? n : 1), size);
  if (!rows)
    return tn_h5_fail(err, "%s: out of memory", name);
  for (int i = 0; i < n; i++) {
    const tn_store_change *c = &list[i];
    if (slow) {
      slowdown_row *r = (slowdown_row *)(rows + (size_t)i * size);
      r->fingerprint = c->fingerprint;
      put_str(r->unit, sizeof r->unit, c->unit);
      put_str(r->config, sizeof r->config, c->config);
      r->before = c->before;
      r->after = c->after;
    } else {
      finding_row *r = (finding_row *)(rows + (size_t)i * size);
      r->fingerprint = c->fingerprint;
      put_str(r->unit, sizeof r->unit, c->unit);
      put_str(r->config, sizeof r->config, c->config);
      put_str(r->verdict, sizeof r->verdict, c->verdict);
    }
  }
  const col_part *parts = slow ? slowdown_parts : finding_parts;
  int rc = write_table(g, name, parts, 1, size, rows, (size_t)n, 128, err);
  free(rows);
  if (rc == 0)
    rc = describe_table(g, name, parts, 1, change_docs, NCOLS(change_docs), err);
  return rc;
}

typedef struct changes_ctx {
  const char *run_id;
  const tn_store_changes *c;
} changes_ctx;

static int changes_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  (void)fresh;
  const changes_ctx *x = vctx;
  const tn_store_changes *c = x->c;
  char path[PATH_LEN];
  hid_t run = open_run(file, x->run_id, path, err), g = -1;
  if (run < 0)
    return -1;
  int rc = -1;
  /* Replaced whole: a re-merged run must not keep a table of before. */
  if (drop_link(run, "changes", err) == 0 && (g = make_group(run, "changes", err)) >= 0) {
    const tn_store_value v[] = {
        {"previous_run", TN_STORE_STR, c->previous_run ? c->previous_run : "", 0, 0, 0},
        {"slowdown_threshold", TN_STORE_F64, NULL, 0, 0, c->slowdown_threshold},
        {"count_new", TN_STORE_I64, NULL, c->nnew, 0, 0},
        {"count_fixed", TN_STORE_I64, NULL, c->nfixed, 0, 0},
        {"count_slowdowns", TN_STORE_I64, NULL, c->nslow, 0, 0},
        {"count_open", TN_STORE_I64, NULL, c->nopen, 0, 0},
    };
    rc = 0;
    for (size_t i = 0; i < NCOLS(v) && rc == 0; i++)
      rc = set_value(g, &v[i], err);
    if (rc == 0)
      rc = describe_attrs(g, changes_attr_docs, NCOLS(changes_attr_docs), err);
    if (rc == 0)
      rc = write_changes_table(g, "new", c->news, c->nnew, false, err);
    if (rc == 0)
      rc = write_changes_table(g, "fixed", c->fixed, c->nfixed, false, err);
    if (rc == 0)
      rc = write_changes_table(g, "slowdowns", c->slow, c->nslow, true, err);
  }
  tn_h5_close_obj(g);
  tn_h5_close_obj(run);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, path);
}

int tn_store_set_changes(tn_store *s, const tn_store_changes *c, hlo_error *err) {
  if (!s)
    return tn_h5_fail(err, "no results file open");
  changes_ctx x = {s->run.id, c};
  return edit_atomically(s->path, false, &s->last, s->undoable, changes_edit, &x, err);
}

const tn_run_info *tn_store_run(const tn_store *s) {
  return &s->run;
}

/* ---- store_table.h: the building blocks for other writers ------------------- */

int tn_store_table_write(hid_t loc, const char *name, const tn_store_col_part *parts, size_t nparts,
                         size_t row_size, const void *rows, size_t nrows, const tn_store_col_doc *docs,
                         size_t ndocs, hlo_error *err) {
  if (write_table(loc, name, parts, nparts, row_size, rows, nrows, nrows > 64 ? 64 : 0, err) != 0)
    return -1;
  return describe_table(loc, name, parts, nparts, docs, ndocs, err);
}

int tn_store_table_read(hid_t loc, const char *name, const tn_store_col_part *parts, size_t nparts,
                        size_t row_size, void **rows, size_t *nrows, hlo_error *err) {
  *rows = NULL;
  *nrows = 0;
  int rc = -1;
  hid_t mem = -1, file = -1, dset = -1, space = -1;
  int has = tn_h5_exists(loc, name, err);
  if (has <= 0 || (dset = H5Dopen2(loc, name, H5P_DEFAULT)) < 0) {
    if (has >= 0)
      tn_h5_fail(err, "%s: no such table", name);
    goto done;
  }
  space = H5Dget_space(dset);
  hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (n < 0 || make_table_types(parts, nparts, row_size, &mem, &file) != 0) {
    tn_h5_fail(err, "%s: cannot read the table", name);
    goto done;
  }
  if (n > 0) {
    *rows = calloc((size_t)n, row_size);
    if (!*rows) {
      tn_h5_fail(err, "%s: out of memory", name);
      goto done;
    }
    if (H5Dread(dset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, *rows) < 0) {
      free(*rows);
      *rows = NULL;
      tn_h5_fail(err, "%s: cannot read the table", name);
      goto done;
    }
  }
  /* A stored string that fills its whole field has no terminator. */
  for (hssize_t r = 0; r < n; r++)
    for (size_t p = 0; p < nparts; p++)
      for (size_t i = 0; i < parts[p].ncols; i++)
        if (parts[p].cols[i].kind == TN_COL_STR)
          ((char *)*rows)[(size_t)r * row_size + parts[p].base + parts[p].cols[i].offset + parts[p].cols[i].n - 1] =
              '\0';
  *nrows = (size_t)n;
  rc = 0;
done:
  tn_h5_close_type(mem);
  tn_h5_close_type(file);
  tn_h5_close_space(space);
  tn_h5_close_obj(dset);
  return rc;
}

int tn_store_describe_attrs(hid_t g, const tn_store_col_doc *docs, size_t ndocs, hlo_error *err) {
  return describe_attrs(g, docs, ndocs, err);
}

hid_t tn_store_group_new(hid_t loc, const char *name, hlo_error *err) {
  return make_group(loc, name, err);
}

hid_t tn_store_dcpl_new(void) {
  return new_dcpl();
}

typedef struct run_edit_ctx {
  const char *run_id;
  tn_store_run_edit_fn fn;
  void *ctx;
} run_edit_ctx;

static int run_edit(hid_t file, bool fresh, void *vctx, hlo_error *err) {
  (void)fresh;
  const run_edit_ctx *x = vctx;
  char path[PATH_LEN];
  hid_t run = open_run(file, x->run_id, path, err);
  if (run < 0)
    return -1;
  int rc = x->fn(run, x->ctx, err);
  tn_h5_close_obj(run);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, path);
}

int tn_store_edit_run(tn_store *s, tn_store_run_edit_fn fn, void *ctx, hlo_error *err) {
  if (!s)
    return tn_h5_fail(err, "no results file open");
  run_edit_ctx x = {s->run.id, fn, ctx};
  return edit_atomically(s->path, false, &s->last, s->undoable, run_edit, &x, err);
}
