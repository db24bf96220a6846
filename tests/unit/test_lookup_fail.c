/* test_lookup_fail.c — a look-up HDF5 cannot answer is an error, not "no".
 *
 * H5Lexists and H5Aexists return a negative value when they fail, as they
 * do when HDF5 runs out of memory.  The readers took any answer but "yes"
 * for "absent": the --sweep fault walk (issue 11) saw a second sweep print
 * "no previous run: 0 divergences" into a file holding one, because the
 * look-up of runs/ failed for want of memory and the list of runs read as
 * empty.  Other optional parts fell the same way: a fusion's error maps,
 * the tool version, a bf16 dataset's dtype (read back as u16 data).
 *
 * Both functions are wrapped (-Wl,--wrap=H5Lexists,--wrap=H5Aexists) in
 * tune's objects; an armed name fails the way HDF5 fails for memory, with
 * a resource error on its error stack.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "store/h5values.h"
#include "result_fixture.h"
#include "store/store.h"
#include "store/store_read.h"
#include "tmpdir_fixture.h"

static const char *fail_link; /* H5Lexists fails for this name */
static const char *fail_attr; /* H5Aexists fails for this name */

static htri_t fail_for_memory(void) {
  H5Epush2(H5E_DEFAULT, __FILE__, __func__, __LINE__, H5E_ERR_CLS, H5E_RESOURCE, H5E_NOSPACE,
           "test: no memory");
  return -1;
}

htri_t __real_H5Lexists(hid_t loc, const char *name, hid_t lapl);
htri_t __wrap_H5Lexists(hid_t loc, const char *name, hid_t lapl);
htri_t __wrap_H5Lexists(hid_t loc, const char *name, hid_t lapl) {
  if (fail_link && strcmp(name, fail_link) == 0)
    return fail_for_memory();
  return __real_H5Lexists(loc, name, lapl);
}

htri_t __real_H5Aexists(hid_t obj, const char *name);
htri_t __wrap_H5Aexists(hid_t obj, const char *name);
htri_t __wrap_H5Aexists(hid_t obj, const char *name) {
  if (fail_attr && strcmp(name, fail_attr) == 0)
    return fail_for_memory();
  return __real_H5Aexists(obj, name);
}

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_lookup_fail");
}

/* A results file with one complete run of one fusion. */
static const char *one_run(const char *name) {
  const char *path = tdf_path(name);
  unlink(path);
  hlo_error err = {0};
  tn_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.id, sizeof run.id, "r-tpu-v5e");
  snprintf(run.command, sizeof run.command, "tune --sweep s.cfg");
  snprintf(run.machine, sizeof run.machine, "tpu-v5e");
  snprintf(run.compiler, sizeof run.compiler, "stable");
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s)
    fail_msg("begin_run: %s", err.msg);
  tn_fusion_result r;
  rfx_result(&r, "f", "datasets/thing.hlo", "reduce", RFX_THING_HLO, 0x5, 1);
  rfx_cand(&r.cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH);
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  tn_fusion_result_free(&r);
  assert_int_equal(tn_store_end_run(s, "complete", &err), 0);
  return path;
}

static void test_runs_lookup_failing_is_no_empty_list(void **state) {
  (void)state;
  const char *path = one_run("runs.h5");
  hlo_error err = {0};
  tn_run_info *runs = NULL;
  int n = -1;
  assert_int_equal(tn_results_list_runs(path, &runs, &n, NULL, 0, &err), 0);
  assert_int_equal(n, 1); /* the file is fine */
  free(runs);
  fail_link = "runs";
  int rc = tn_results_list_runs(path, &runs, &n, NULL, 0, &err);
  fail_link = NULL;
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err.msg, "runs: HDF5 cannot look it up (out of memory)"));
  free(runs);
}

static void test_tool_version_failing_is_an_error(void **state) {
  (void)state;
  const char *path = one_run("version.h5");
  hlo_error err = {0};
  tn_run_info *runs = NULL;
  int n = 0;
  char version[64] = "";
  assert_int_equal(tn_results_list_runs(path, &runs, &n, version, sizeof version, &err), 0);
  assert_true(version[0] != '\0');
  free(runs);
  fail_attr = "tool_version";
  int rc = tn_results_list_runs(path, &runs, &n, version, sizeof version, &err);
  fail_attr = NULL;
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err.msg, "out of memory"));
  free(runs);
}

static void test_optional_group_failing_is_an_error(void **state) {
  (void)state;
  const char *path = one_run("errors.h5");
  hlo_error err = {0};
  tn_stored_run run;
  assert_int_equal(tn_results_read_run(path, "r-tpu-v5e", &run, &err), 0);
  tn_stored_run_free(&run);
  static const char *optional[] = {"errors", "peak_windows"};
  for (size_t i = 0; i < sizeof optional / sizeof *optional; i++) {
    fail_link = optional[i];
    int rc = tn_results_read_run(path, "r-tpu-v5e", &run, &err);
    fail_link = NULL;
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, "out of memory"));
    if (rc == 0)
      tn_stored_run_free(&run);
  }
}

/* A bf16 dataset whose dtype attribute cannot be looked up must not be
 * read as the u16 its bits are stored in. */
static void test_dtype_failing_is_no_inferred_type(void **state) {
  (void)state;
  const char *path = tdf_path("bf16.h5");
  hlo_error err = {0};
  int64_t dims[1] = {4};
  hlo_value *v = hlo_value_array(HLO_BF16, 1, dims);
  assert_non_null(v);
  hid_t f = tn_h5_create(path, &err);
  assert_true(f >= 0);
  assert_int_equal(tn_h5_write_array(f, "x", v, &err), 0);
  assert_int_equal(tn_h5_close(f, &err), 0);
  hlo_value_unref(v);

  f = tn_h5_open_read(path, &err);
  assert_true(f >= 0);
  hlo_value *back = NULL;
  assert_int_equal(tn_h5_read_array(f, "x", NULL, NULL, &back, &err), 0);
  assert_int_equal(back->type, HLO_BF16);
  hlo_value_unref(back);
  back = NULL;
  fail_attr = "dtype";
  int rc = tn_h5_read_array(f, "x", NULL, NULL, &back, &err);
  fail_attr = NULL;
  assert_int_equal(rc, -1);
  assert_null(back);
  assert_non_null(strstr(err.msg, "out of memory"));
  assert_int_equal(tn_h5_close(f, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runs_lookup_failing_is_no_empty_list),
      cmocka_unit_test(test_tool_version_failing_is_an_error),
      cmocka_unit_test(test_optional_group_failing_is_an_error),
      cmocka_unit_test(test_dtype_failing_is_no_inferred_type),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
