/* test_h5probe.c — tn_h5_probe reads a results file in a child once per
 * identity of the file (h5probe.h): a file found sound is not read again
 * while it is unchanged, and any later write, one that damages it while
 * keeping its size and inode included, makes it be read anew.
 *
 * The files are tests/results/: results_small_orig.h5, a sound results
 * file, and results_byte837_segv.h5, the same 29,096 bytes with byte 837
 * changed, which crashes HDF5 (issue 11 bug 5).
 *
 * The child's time is bounded twice: in CPU seconds, which a starved
 * machine does not use up, and, as a backstop for a child that waits
 * instead of running, in wall seconds.  The TUNE_TEST_PROBE hook makes
 * the child spin or sleep under small bounds, so each bound is seen to
 * end it with its own message. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "store/h5probe.h"
#include "tmpdir_fixture.h"

static int group_setup(void **state) {
  (void)state;
  return tdf_make("test_h5probe");
}

/* Reads all of src's bytes (at most cap) into buf; the count. */
static size_t slurp(const char *name, unsigned char *buf, size_t cap) {
  const char *top = getenv("TUNE_SRCDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/results/%s", top ? top : ".", name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Writes n bytes over the file at path in place (same inode): "r+", not
 * a new file. */
static void overwrite(const char *path, const unsigned char *buf, size_t n) {
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Longer than any clock tick file times are taken from (a few ms). */
static void next_tick(void) {
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static void probed_once_then_anew_after_a_write(void **state) {
  (void)state;
  static unsigned char sound[65536], damaged[65536];
  size_t n = slurp("results_small_orig.h5", sound, sizeof sound);
  assert_int_equal(slurp("results_byte837_segv.h5", damaged, sizeof damaged), n);
  const char *file = tdf_path("r.h5");
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(sound, 1, n, f), n);
  assert_int_equal(fclose(f), 0);

  hlo_error err = {0};
  unsigned long c0 = tn_h5_probe_children();
  assert_int_equal(tn_h5_probe(file, &err), 0);
  assert_int_equal(tn_h5_probe_children(), c0 + 1);
  /* Unchanged: no second child. */
  assert_int_equal(tn_h5_probe(file, &err), 0);
  assert_int_equal(tn_h5_probe_children(), c0 + 1);

  /* The damaging byte written in place: same inode, same size. */
  next_tick();
  overwrite(file, damaged, n);
  assert_int_equal(tn_h5_probe(file, &err), -1);
  assert_non_null(strstr(err.msg, "corrupt HDF5 file"));
  assert_int_equal(tn_h5_probe_children(), c0 + 2);
  /* A refused file is not remembered: refused again, by a new child. */
  memset(&err, 0, sizeof err);
  assert_int_equal(tn_h5_probe(file, &err), -1);
  assert_int_equal(tn_h5_probe_children(), c0 + 3);

  /* Mended in place: read anew, and sound again. */
  next_tick();
  overwrite(file, sound, n);
  assert_int_equal(tn_h5_probe(file, &err), 0);
  assert_int_equal(tn_h5_probe_children(), c0 + 4);
}

/* What the store vouches for (it wrote the file itself) is not read; a
 * write after the vouching is. */
static void vouched_files_are_not_read(void **state) {
  (void)state;
  static unsigned char sound[65536], damaged[65536];
  size_t n = slurp("results_small_orig.h5", sound, sizeof sound);
  slurp("results_byte837_segv.h5", damaged, sizeof damaged);
  const char *file = tdf_path("v.h5");
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(sound, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  struct stat st;
  assert_int_equal(stat(file, &st), 0);
  tn_h5_probe_vouch(&st);
  hlo_error err = {0};
  unsigned long c0 = tn_h5_probe_children();
  assert_int_equal(tn_h5_probe(file, &err), 0);
  assert_int_equal(tn_h5_probe_children(), c0);
  next_tick();
  overwrite(file, damaged, n);
  assert_int_equal(tn_h5_probe(file, &err), -1);
  assert_int_equal(tn_h5_probe_children(), c0 + 1);
}

/* A fresh copy of the sound file (a probed one would be remembered). */
static const char *sound_copy(const char *name) {
  static unsigned char sound[65536];
  size_t n = slurp("results_small_orig.h5", sound, sizeof sound);
  const char *file = tdf_path(name);
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(sound, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  return file;
}

/* Probes a fresh sound copy under the TUNE_TEST_PROBE hook; the refusal
 * must say want and, for the wall bound, not call the file corrupt. */
static void refused_under(const char *hook, const char *name, const char *want, bool corrupt_ok) {
  const char *file = sound_copy(name);
  hlo_error err = {0};
  setenv("TUNE_TEST_PROBE", hook, 1);
  int rc = tn_h5_probe(file, &err);
  unsetenv("TUNE_TEST_PROBE");
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err.msg, want));
  if (!corrupt_ok)
    assert_null(strstr(err.msg, "corrupt"));
  /* the same file, read for real, is sound: the refusal was the bound's */
  assert_int_equal(tn_h5_probe(file, &err), 0);
}

static void a_spinning_child_meets_the_cpu_bound(void **state) {
  (void)state;
  refused_under("spin 1 600", "spin.h5", "did not finish in 1 s of CPU time", true);
}

static void a_waiting_child_meets_the_wall_bound(void **state) {
  (void)state;
  refused_under("wait 600 1", "wait.h5", "did not finish in 1 s and was given up", false);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(probed_once_then_anew_after_a_write),
      cmocka_unit_test(vouched_files_are_not_read),
      cmocka_unit_test(a_spinning_child_meets_the_cpu_bound),
      cmocka_unit_test(a_waiting_child_meets_the_wall_bound),
  };
  return cmocka_run_group_tests(tests, group_setup, tdf_teardown);
}
