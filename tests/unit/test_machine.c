/* test_machine.c — machine model files: the shipped ones load with the
 * figures of DESIGN.md §4, and a missing or unknown key is refused with the
 * file, line and key named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "device/dev_machine.h"

static void shipped_models_have_the_public_figures(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  assert_int_equal(dev_machine_find("tpu-v4", &m, &err), 0);
  assert_string_equal(m.name, "tpu-v4");
  assert_true(m.hbm_gbps == 1200.0);
  assert_true(m.mxu_bf16_tflops == 275.0);
  assert_int_equal(m.vmem_bytes, 16 << 20);
  assert_int_equal(m.cores, 2);
  assert_int_equal(m.mxu_count, 4);
  assert_int_equal(m.mxu_rows, 128);
  assert_int_equal(m.sublanes, 8);
  assert_int_equal(m.lanes, 128);

  assert_int_equal(dev_machine_find("tpu-v6e", &m, &err), 0);
  assert_true(m.hbm_gbps == 1638.0);
  assert_true(m.mxu_int8_tops == 1836.0);
  assert_int_equal(m.mxu_count, 2);
  assert_int_equal(m.mxu_rows, 256);
  assert_int_equal(m.vmem_bytes, (int64_t)128 << 20);

  assert_int_equal(dev_machine_find("tpu-v5e", &m, &err), 0);
  assert_true(m.hbm_gbps == 819.0 && m.mxu_int8_tops == 393.0);
  assert_int_equal(dev_machine_find("tpu-v5p", &m, &err), 0);
  assert_true(m.hbm_gbps == 2765.0 && m.mxu_bf16_tflops == 459.0);
  assert_int_equal(m.vmem_bytes, (int64_t)64 << 20);
}

static void list_is_sorted_and_complete(void **state) {
  (void)state;
  char **names;
  hlo_error err;
  int n = dev_machine_list(&names, &err);
  assert_int_equal(n, 4);
  assert_string_equal(names[0], "tpu-v4");
  assert_string_equal(names[1], "tpu-v5e");
  assert_string_equal(names[2], "tpu-v5p");
  assert_string_equal(names[3], "tpu-v6e");
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

/* Writes a copy of tpu-v4.cfg with one line replaced (or dropped). */
static const char *variant(const char *needle, const char *replacement) {
  static char out[256];
  char in[4096];
  snprintf(in, sizeof in, "%s/machines/tpu-v4.cfg", dev_configs_dir());
  snprintf(out, sizeof out, "%s/tune-test-machine-%d.cfg", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  FILE *f = fopen(in, "r"), *g = fopen(out, "w");
  assert_non_null(f);
  assert_non_null(g);
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, needle))
      fputs(replacement, g);
    else
      fputs(line, g);
  }
  fclose(f);
  fclose(g);
  return out;
}

static void missing_key_names_it(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  const char *p = variant("vmem_bytes", "");
  assert_int_equal(dev_machine_load(p, &m, &err), -1);
  assert_non_null(strstr(err.msg, "missing key 'machine.vmem_bytes'"));
  assert_non_null(strstr(err.msg, p));
  remove(p);
}

static void unknown_key_names_it_and_its_line(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  /* The misspelt key replaces line 13 of the shipped file ("vmem_bytes = ..."). */
  const char *p = variant("vmem_bytes", "  vmem_byte = 5;\n");
  assert_int_equal(dev_machine_load(p, &m, &err), -1);
  assert_non_null(strstr(err.msg, ":13: unknown key 'machine.vmem_byte'"));
  assert_int_equal(err.line, 13);
  remove(p);
}

static void nested_unknown_key_and_bad_type(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  const char *p = variant("rows = 128", "    rowz = 128;\n");
  assert_int_equal(dev_machine_load(p, &m, &err), -1);
  assert_non_null(strstr(err.msg, "unknown key 'machine.mxu.rowz'"));
  p = variant("clock_mhz", "  clock_mhz = \"fast\";\n");
  assert_int_equal(dev_machine_load(p, &m, &err), -1);
  assert_non_null(strstr(err.msg, "'machine.clock_mhz' must be a number"));
  remove(p);
}

static void syntax_error_has_line(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  const char *p = variant("cores = 2", "  cores = = 2;\n");
  assert_int_equal(dev_machine_load(p, &m, &err), -1);
  assert_int_equal(err.line, 10);
  remove(p);
}

static void unknown_machine_name(void **state) {
  (void)state;
  dev_machine m;
  hlo_error err;
  assert_int_equal(dev_machine_find("tpu-v99", &m, &err), -1);
  assert_non_null(strstr(err.msg, "unknown machine 'tpu-v99'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shipped_models_have_the_public_figures),
      cmocka_unit_test(list_is_sorted_and_complete),
      cmocka_unit_test(missing_key_names_it),
      cmocka_unit_test(unknown_key_names_it_and_its_line),
      cmocka_unit_test(nested_unknown_key_and_bad_type),
      cmocka_unit_test(syntax_error_has_line),
      cmocka_unit_test(unknown_machine_name),
  };
  return cmocka_run_group_tests_name("machine", tests, NULL, NULL);
}
