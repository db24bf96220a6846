/* test_store_reopen.c — a resumed run's results file is checked once, up
 * front (tn_store_reopen_run).
 *
 * Checking a file someone else wrote forks a child that reads it
 * (h5probe.h).  A resumed sweep under MPI stores its first result while
 * rank 0's worker thread is checking a unit, and a child forked at that
 * moment could inherit a held allocator lock and hang until its alarm,
 * failing the store (CI saw the resumed run end with "errors").  So the
 * probe belongs to the reopen, while the caller is one thread, and the
 * adds that follow do not fork as long as the file is what was probed.
 * fork is wrapped (-Wl,--wrap=fork) to count the children.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "store/journal.h"
#include "result_fixture.h"
#include "store/store.h"
#include "tmpdir_fixture.h"

static int g_forks;

pid_t __real_fork(void);
pid_t __wrap_fork(void);
pid_t __wrap_fork(void) {
  g_forks++;
  return __real_fork();
}

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_store_reopen");
}

static void one_result(tn_fusion_result *r, const char *name) {
  rfx_result(r, name, "datasets/thing.hlo", "reduce", RFX_THING_HLO, 0x5, 1);
  rfx_cand(&r->cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH);
}

/* A run's description, as a command on the tpu-v5e with stable gives it. */
static void run_info(tn_run_info *run, const char *id, const char *command) {
  memset(run, 0, sizeof *run);
  snprintf(run->id, sizeof run->id, "%s", id);
  snprintf(run->command, sizeof run->command, "%s", command);
  snprintf(run->machine, sizeof run->machine, "tpu-v5e");
  snprintf(run->compiler, sizeof run->compiler, "stable");
}

/* Gives path's bytes a new inode, as a file another process wrote looks
 * to this one: this process's store vouched for the inode it wrote
 * (h5probe.h), and a resumed sweep is a new process. */
static void as_written_elsewhere(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.elsewhere", path);
  FILE *in = fopen(path, "rb"), *out = fopen(tmp, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  assert_int_equal(fclose(out), 0);
  assert_int_equal(rename(tmp, path), 0);
}

/* A run left "running" with one fusion, as a killed sweep leaves it. */
static void killed_run(const char *path) {
  hlo_error err = {0};
  tn_run_info run;
  run_info(&run, "t-tpu-v5e", "tune --sweep s.cfg");
  unlink(path);
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s)
    fail_msg("begin_run: %s", err.msg);
  tn_fusion_result r;
  one_result(&r, "first");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  tn_fusion_result_free(&r);
  tn_store_close(s);
  as_written_elsewhere(path);
}

static void test_probed_at_reopen_not_at_add(void **state) {
  (void)state;
  const char *path = tdf_path("resumed.h5");
  killed_run(path);
  hlo_error err = {0};
  tn_run_info run;
  g_forks = 0;
  tn_store *s = tn_store_reopen_run(path, "t-tpu-v5e", &run, &err);
  assert_non_null(s);
  assert_true(g_forks >= 1); /* the file was checked here */
  g_forks = 0;
  tn_fusion_result r;
  one_result(&r, "second");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  tn_fusion_result_free(&r);
  one_result(&r, "third");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  tn_fusion_result_free(&r);
  assert_int_equal(tn_store_end_run(s, "complete", &err), 0); /* frees s */
  assert_int_equal(g_forks, 0);
}

/* A file changed by someone else after the reopen is checked again. */
static void test_changed_after_reopen_is_probed_again(void **state) {
  (void)state;
  const char *path = tdf_path("changed.h5");
  killed_run(path);
  hlo_error err = {0};
  tn_run_info run;
  tn_store *s = tn_store_reopen_run(path, "t-tpu-v5e", &run, &err);
  assert_non_null(s);
  FILE *f = fopen(path, "ab"); /* a byte appended: another identity */
  assert_non_null(f);
  fputc(0, f);
  fclose(f);
  g_forks = 0;
  tn_fusion_result r;
  one_result(&r, "second");
  (void)tn_store_add_fusion(s, &r, &err);
  tn_fusion_result_free(&r);
  assert_int_equal(g_forks, 1);
  tn_store_close(s);
}

/* A damaged file is refused by the reopen itself, with the reason. */
static void test_damaged_file_refused_at_reopen(void **state) {
  (void)state;
  const char *path = tdf_path("damaged.h5");
  killed_run(path);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  /* Zero everything after the superblock's first 512 bytes. */
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > 1024);
  assert_int_equal(fseek(f, 512, SEEK_SET), 0);
  for (long i = 512; i < size; i++)
    fputc(0, f);
  fclose(f);
  hlo_error err = {0};
  tn_run_info run;
  tn_store *s = tn_store_reopen_run(path, "t-tpu-v5e", &run, &err);
  assert_null(s);
  assert_non_null(strstr(err.msg, "damaged.h5"));
}

/* A writer killed mid-change can leave bytes no HDF5 reader survives,
 * with the journal that undoes them beside the file.  The first edit of a
 * run checks a file it has not written (h5probe.h): it must roll the
 * journal back first, or it refuses a file the next reader would have
 * restored.  The dead writer here keeps every page, then zeroes all but
 * the superblock's first 512 bytes: a file HDF5 still recognises and the
 * check refuses (test_damaged_file_refused_at_reopen). */
static void test_hot_journal_rolled_back_before_the_first_check(void **state) {
  (void)state;
  const char *path = tdf_path("torn.h5");
  killed_run(path);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    hlo_error cerr = {0};
    bool busy = false;
    tn_journal *j = tn_journal_begin(path, &busy, &cerr);
    struct stat st;
    if (!j || fstat(tn_journal_fd(j), &st) != 0 || tn_journal_keep(j, 0, (uint64_t)st.st_size) != 0)
      _exit(3);
    size_t n = (size_t)st.st_size - 512;
    char *zeros = st.st_size > 1024 ? calloc(1, n) : NULL;
    if (!zeros || pwrite(tn_journal_fd(j), zeros, n, 512) != (ssize_t)n)
      _exit(4);
    _exit(0); /* no commit: the journal stays hot */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  char journal[4096];
  snprintf(journal, sizeof journal, "%s.journal", path);
  assert_int_equal(access(journal, F_OK), 0);

  hlo_error err = {0};
  tn_run_info run;
  run_info(&run, "t-second", "tune --fuzz -o torn.h5");
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s)
    fail_msg("begin_run on a file with a hot journal: %s", err.msg);
  assert_int_equal(tn_store_end_run(s, "complete", &err), 0); /* frees s */
  assert_int_not_equal(access(journal, F_OK), 0);
  /* The interrupted change is gone and the earlier run is whole. */
  tn_run_info again;
  s = tn_store_reopen_run(path, "t-tpu-v5e", &again, &err);
  if (!s)
    fail_msg("the earlier run after the rollback: %s", err.msg);
  tn_store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_probed_at_reopen_not_at_add),
      cmocka_unit_test(test_changed_after_reopen_is_probed_again),
      cmocka_unit_test(test_damaged_file_refused_at_reopen),
      cmocka_unit_test(test_hot_journal_rolled_back_before_the_first_check),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
