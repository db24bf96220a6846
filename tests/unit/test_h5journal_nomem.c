/* test_h5journal_nomem.c — when the journalled driver cannot allocate its
 * file handle, opening the file says "out of memory", not that the file
 * is no HDF5 file (found by the --sweep fault walk, issue 11).
 *
 * calloc is wrapped (-Wl,--wrap=calloc) in tune's own objects only, so
 * an armed failure hits the first calloc tune's code makes, which inside
 * tn_h5_journal_open is the driver's open callback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hdf5.h>

#include "store/h5journal.h"
#include "store/journal.h"
#include "tmpdir_fixture.h"

static bool fail_next_calloc;

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size) {
  if (fail_next_calloc) {
    fail_next_calloc = false;
    errno = ENOMEM;
    return NULL;
  }
  return __real_calloc(n, size);
}

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_h5journal_nomem");
}

static void handle_allocation_failure_says_out_of_memory(void **state) {
  (void)state;
  const char *path = tdf_path("j.h5");
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  assert_true(H5Fclose(f) >= 0);

  hlo_error err = {0};
  bool busy = false;
  tn_journal *j = tn_journal_begin(path, &busy, &err);
  assert_non_null(j);

  tn_h5_journal s = {.j = j};
  fail_next_calloc = true;
  f = tn_h5_journal_open(path, &s, &err);
  assert_true(f < 0);
  assert_false(fail_next_calloc); /* the failure was used */
  assert_non_null(strstr(err.msg, "out of memory"));
  assert_null(strstr(err.msg, "not an HDF5 file"));
  tn_h5_journal_done(&s);

  /* The same file opens once memory is there again. */
  tn_h5_journal again = {.j = j};
  memset(&err, 0, sizeof err);
  f = tn_h5_journal_open(path, &again, &err);
  assert_true(f >= 0);
  assert_true(H5Fclose(f) >= 0);
  tn_h5_journal_done(&again);
  assert_int_equal(tn_journal_rollback(j, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(handle_allocation_failure_says_out_of_memory),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
