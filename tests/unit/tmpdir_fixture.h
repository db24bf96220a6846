/* tmpdir_fixture.h — one scratch folder per test program, for the tests
 * that write files (test_h5values, test_store, test_report).
 *
 * The folder is made by the group setup and removed, with everything in
 * it, by the group teardown, so a failed test leaves nothing behind. */
#ifndef TUNE_TESTS_TMPDIR_FIXTURE_H
#define TUNE_TESTS_TMPDIR_FIXTURE_H

/* Creates /tmp/<name>.XXXXXX; 0, or -1 with errno set. */
int tdf_make(const char *name);

/* The folder tdf_make created. */
const char *tdf_dir(void);

/* "<folder>/<file>", in one of two static buffers used in turn, so that
 * two paths can be in use at once. */
const char *tdf_path(const char *file);

/* A cmocka group teardown: removes the folder and everything below it,
 * read-only parts included; 0 or -1. */
int tdf_teardown(void **state);

#endif
