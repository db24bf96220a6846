/* test_journal.c — in-place changes through the rollback journal
 * (tuner/store/journal.c, tuner/store/h5journal.c).
 *
 * The promise under test is "all or nothing": after a change that is
 * committed the file holds the new bytes and no journal is left; after a
 * change that is rolled back, or cut short by the death of its process,
 * the next reader finds the file byte for byte as it was before the change.
 * A process death is a forked child that makes its change and calls
 * _exit without committing, which is what kill -9 leaves behind.  The
 * expected bytes are the ones the test wrote itself, never read back
 * through the code under test.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "store/h5journal.h"
#include "store/journal.h"
#include "tmpdir_fixture.h"

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_journal");
}

/* ---- helpers --------------------------------------------------------------- */

enum { OLD_SIZE = 3 * 4096 + 100 };

static void fill(unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)((i * 31u + seed * 7u) ^ (i >> 8));
}

static void write_file(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The whole file; *n its size. */
static unsigned char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char *b = malloc(1 << 22);
  assert_non_null(b);
  *n = fread(b, 1, 1 << 22, f);
  fclose(f);
  return b;
}

static void assert_file_is(const char *path, const unsigned char *want, size_t n) {
  size_t got_n;
  unsigned char *got = read_file(path, &got_n);
  assert_int_equal(got_n, n);
  assert_memory_equal(got, want, n);
  free(got);
}

/* Writes OLD_SIZE bytes of pattern seed to a new file NAME in the test
 * folder; its path is returned and its bytes go to old. */
static const char *fresh_file(const char *name, unsigned seed, unsigned char old[OLD_SIZE]) {
  const char *path = tdf_path(name);
  fill(old, OLD_SIZE, seed);
  write_file(path, old, OLD_SIZE);
  return path;
}

/* Rolls back what a dead writer left, as the next reader does. */
static void reader_recovers(const char *path) {
  int lock;
  hlo_error err = {0};
  assert_int_equal(tn_journal_read_begin(path, &lock, &err), 0);
  tn_journal_read_end(lock);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static const char *journal_of(const char *path) {
  static char j[4096];
  snprintf(j, sizeof j, "%s.journal", path);
  return j;
}

/* The change every raw test makes: overwrite part of pages 0-1, append
 * past the old end, and cut the file inside page 2 (so the bytes cut
 * off must come back too).  The journal's rule is applied by hand, as
 * the HDF5 driver applies it. */
static void make_change(tn_journal *j) {
  int fd = tn_journal_fd(j);
  unsigned char junk[6000];
  fill(junk, sizeof junk, 99);
  assert_int_equal(tn_journal_keep(j, 100, 5000), 0);
  assert_int_equal(pwrite(fd, junk, 5000, 100), 5000);
  assert_int_equal(tn_journal_keep(j, OLD_SIZE + 50, 1000), 0); /* past the end: nothing to keep */
  assert_int_equal(pwrite(fd, junk, 1000, OLD_SIZE + 50), 1000);
  assert_int_equal(tn_journal_keep(j, 9000, UINT64_MAX / 2), 0);
  assert_int_equal(ftruncate(fd, 9000), 0);
}

/* Runs make_change in a child that dies without committing. */
static void die_mid_change(const char *path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bool busy;
    hlo_error err = {0};
    tn_journal *j = tn_journal_begin(path, &busy, &err);
    if (!j)
      _exit(3);
    make_change(j);
    _exit(0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- raw changes ------------------------------------------------------------- */

static void test_commit_keeps_the_change(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("commit.bin", 1, old);
  bool busy;
  hlo_error err = {0};
  tn_journal *j = tn_journal_begin(path, &busy, &err);
  assert_non_null(j);
  assert_true(exists(journal_of(path)));
  make_change(j);
  struct stat st;
  assert_int_equal(tn_journal_commit(j, &st, &err), 0);
  assert_false(exists(journal_of(path)));
  assert_int_equal(st.st_size, 9000);
  /* The new bytes: old with [100, 5100) replaced, cut at 9000. */
  unsigned char want[9000], junk[6000];
  memcpy(want, old, 9000);
  fill(junk, sizeof junk, 99);
  memcpy(want + 100, junk, 5000);
  assert_file_is(path, want, 9000);
}

static void test_rollback_restores_every_byte(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("rollback.bin", 2, old);
  bool busy;
  hlo_error err = {0};
  tn_journal *j = tn_journal_begin(path, &busy, &err);
  assert_non_null(j);
  make_change(j);
  assert_int_equal(tn_journal_rollback(j, &err), 0);
  assert_false(exists(journal_of(path)));
  assert_file_is(path, old, sizeof old);
}

static void test_a_dead_writer_is_rolled_back_by_the_next_reader(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("dead.bin", 3, old);
  die_mid_change(path);
  assert_true(exists(journal_of(path))); /* hot: nobody committed */
  size_t torn_n;
  unsigned char *torn = read_file(path, &torn_n);
  assert_int_equal(torn_n, 9000);
  free(torn);
  reader_recovers(path);
  assert_false(exists(journal_of(path)));
  assert_file_is(path, old, sizeof old);
}

static void test_a_dead_writer_is_rolled_back_by_the_next_writer(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("dead2.bin", 4, old);
  die_mid_change(path);
  bool busy;
  hlo_error err = {0};
  tn_journal *j = tn_journal_begin(path, &busy, &err);
  assert_non_null(j);
  /* The new change starts from the old file, not from the torn one. */
  assert_file_is(path, old, sizeof old);
  assert_int_equal(tn_journal_rollback(j, &err), 0);
}

static void test_a_torn_last_record_is_ignored(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("torn.bin", 5, old);
  die_mid_change(path);
  /* A record cut short by a power cut: a head promising 4096 bytes,
   * followed by fewer. */
  FILE *f = fopen(journal_of(path), "ab");
  assert_non_null(f);
  unsigned char head[24 + 100] = {0};
  head[9] = 0x10; /* length 4096 */
  assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
  fclose(f);
  reader_recovers(path);
  assert_file_is(path, old, sizeof old);
}

static void test_a_journal_without_a_whole_header_changes_nothing(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *path = fresh_file("nohead.bin", 6, old);
  write_file(journal_of(path), "tunejnl1\0\0", 10);
  reader_recovers(path);
  assert_false(exists(journal_of(path)));
  assert_file_is(path, old, sizeof old);
}

static void test_another_files_journal_is_refused(void **state) {
  (void)state;
  unsigned char old[OLD_SIZE];
  const char *a = fresh_file("a.bin", 7, old);
  die_mid_change(a);
  /* The same bytes under another name (another inode), journal beside. */
  char b[4096], jb[4200];
  snprintf(b, sizeof b, "%s", tdf_path("b.bin"));
  size_t n;
  unsigned char *bytes = read_file(a, &n);
  write_file(b, bytes, n);
  free(bytes);
  snprintf(jb, sizeof jb, "%s.journal", b);
  assert_int_equal(link(journal_of(a), jb), 0);
  int lock;
  hlo_error err = {0};
  assert_int_equal(tn_journal_read_begin(b, &lock, &err), -1);
  assert_non_null(strstr(err.msg, "belongs to another file"));
  assert_true(exists(jb)); /* left for a person to judge */
  unlink(jb);
}

/* ---- through HDF5 ------------------------------------------------------------- */

/* A small HDF5 file with one group "a", written by HDF5's own driver. */
static void make_h5(const char *path) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t g = H5Gcreate2(f, "a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(g >= 0);
  H5Gclose(g);
  assert_true(H5Fclose(f) >= 0);
}

static bool h5_has(const char *path, const char *name) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  bool has = H5Lexists(f, name, H5P_DEFAULT) > 0;
  H5Fclose(f);
  return has;
}

/* Adds group "b" and a dataset of n doubles under it through the driver;
 * returns the driver's verdict (0, or -1 with err). */
static int add_through_journal(tn_journal *j, const char *path, size_t n, hlo_error *err) {
  tn_h5_journal s = {.j = j};
  hid_t f = tn_h5_journal_open(path, &s, err);
  if (f < 0)
    return -1;
  hid_t g = H5Gcreate2(f, "b", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[1] = {n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t d = H5Dcreate2(g, "x", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double *v = calloc(n, sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = (double)i;
  H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  free(v);
  H5Dclose(d);
  H5Sclose(sp);
  H5Gclose(g);
  int rc = H5Fclose(f) < 0 ? -1 : 0;
  if (tn_h5_journal_failed(&s, err) != 0)
    rc = -1;
  tn_h5_journal_done(&s);
  return rc;
}

static void test_hdf5_change_committed(void **state) {
  (void)state;
  const char *path = tdf_path("c.h5");
  make_h5(path);
  bool busy;
  hlo_error err = {0};
  tn_journal *j = tn_journal_begin(path, &busy, &err);
  assert_non_null(j);
  assert_int_equal(add_through_journal(j, path, 1000, &err), 0);
  struct stat st;
  assert_int_equal(tn_journal_commit(j, &st, &err), 0);
  /* Read back with HDF5's default driver: a plain HDF5 file. */
  assert_true(h5_has(path, "a"));
  assert_true(h5_has(path, "b"));
  assert_true(h5_has(path, "b/x"));
}

static void test_hdf5_change_of_a_dead_writer_is_undone(void **state) {
  (void)state;
  const char *path = tdf_path("d.h5");
  make_h5(path);
  size_t n;
  unsigned char *old = read_file(path, &n);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bool busy;
    hlo_error err = {0};
    tn_journal *j = tn_journal_begin(path, &busy, &err);
    _exit(j && add_through_journal(j, path, 1000, &err) == 0 ? 0 : 3);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  reader_recovers(path);
  assert_file_is(path, old, n);
  assert_true(h5_has(path, "a"));
  assert_false(h5_has(path, "b"));
  free(old);
}

/* A file size limit met halfway: the driver reports the system's reason
 * after HDF5 closed cleanly, and the rollback leaves the old bytes. */
static void test_hdf5_write_failure_is_rolled_back(void **state) {
  (void)state;
  const char *path = tdf_path("e.h5");
  make_h5(path);
  size_t n;
  unsigned char *old = read_file(path, &n);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    /* Room for the journal's few pages, not for 800 KB of data. */
    struct rlimit lim = {64 * 1024, 64 * 1024};
    setrlimit(RLIMIT_FSIZE, &lim);
    bool busy;
    hlo_error err = {0};
    tn_journal *j = tn_journal_begin(path, &busy, &err);
    if (!j)
      _exit(3);
    if (add_through_journal(j, path, 100000, &err) == 0)
      _exit(4); /* the failure went unnoticed */
    if (!strstr(err.msg, "File too large"))
      _exit(5);
    _exit(tn_journal_rollback(j, &err) == 0 ? 0 : 6);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_false(exists(journal_of(path)));
  assert_file_is(path, old, n);
  assert_false(h5_has(path, "b"));
  free(old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_keeps_the_change),
      cmocka_unit_test(test_rollback_restores_every_byte),
      cmocka_unit_test(test_a_dead_writer_is_rolled_back_by_the_next_reader),
      cmocka_unit_test(test_a_dead_writer_is_rolled_back_by_the_next_writer),
      cmocka_unit_test(test_a_torn_last_record_is_ignored),
      cmocka_unit_test(test_a_journal_without_a_whole_header_changes_nothing),
      cmocka_unit_test(test_another_files_journal_is_refused),
      cmocka_unit_test(test_hdf5_change_committed),
      cmocka_unit_test(test_hdf5_change_of_a_dead_writer_is_undone),
      cmocka_unit_test(test_hdf5_write_failure_is_rolled_back),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
