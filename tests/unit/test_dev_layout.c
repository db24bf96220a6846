/* test_dev_layout.c — the device's bitcasts follow XLA's layout semantics:
 * a bitcast reinterprets the physical buffer, laid out by each shape's
 * {minor_to_major}.  Expected values are worked out by hand from that
 * definition, for the index mapping itself, for a bitcast inside a kernel
 * (tiled by the executor) and for one in the launch around a kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_backend.h"
#include "device/dev_exec.h"
#include "device/dev_layout.h"
#include "hlo/hlo_parse.h"

static hlo_module *parse(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s", err.msg);
  return m;
}

/* f32[2,3]{0,1} is column-major: (i,j) sits at physical offset j*2 + i. */
static void offsets_follow_minor_to_major(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m\nENTRY e {\n  p = f32[2,3]{0,1} parameter(0)\n"
                        "  ROOT r = f32[2,3]{1,0} copy(p)\n}\n");
  const hlo_shape *col = &m->entry->params[0]->shape, *row = &m->entry->root->shape;
  assert_false(dev_layout_row_major(col));
  assert_true(dev_layout_row_major(row));
  int64_t i12[2] = {1, 2}, i10[2] = {1, 0}, i01[2] = {0, 1};
  assert_int_equal(dev_layout_offset(col, i12), 5);
  assert_int_equal(dev_layout_offset(col, i10), 1);
  assert_int_equal(dev_layout_offset(col, i01), 2);
  assert_int_equal(dev_layout_offset(row, i12), 5);
  assert_int_equal(dev_layout_offset(row, i10), 3);
  int64_t idx[2];
  dev_layout_index(col, 3, idx); /* offset 3 = j*2 + i with i = 1, j = 1 */
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 1);
  dev_layout_index(row, 4, idx);
  assert_int_equal(idx[0], 1);
  assert_int_equal(idx[1], 1);
  hlo_module_free(m);
}

/* A bitcast of a column-major f32[16,256]{0,1} to a row-major
 * f32[256,16]{1,0} keeps the buffer, so it is a transpose:
 * out[r][c] = in[c][r].  Run tiled, with a ragged-free 8x16 tile. */
static void kernel_bitcast_is_a_transpose(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m\nENTRY e {\n  p = f32[16,256]{0,1} parameter(0)\n"
                        "  ROOT b = f32[256,16]{1,0} bitcast(p)\n}\n");
  hlo_error err;
  dev_fusion f;
  dev_machine mach;
  dev_config c;
  dev_schedule s;
  char why[256];
  assert_int_equal(dev_fusion_analyze(m, &f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  assert_int_equal(dev_config_parse("tile=8x16 k=0 buf=2 order=01 pack=1 prec=default flags=none", &c, &err), 0);
  if (dev_lower(&f, &c, &mach, &s, why, sizeof why) != 0)
    fail_msg("lower: %s", why);
  int64_t dims[2] = {16, 256};
  hlo_value *a = hlo_value_array(HLO_F32, 2, dims);
  float *pa = a->data;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 256; j++)
      pa[i * 256 + j] = (float)(1000 * i + j);
  dev_run r;
  dev_exec_run(&s, NULL, &a, 1, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  const float *o = r.out->data;
  for (int row = 0; row < 256; row++)
    for (int col = 0; col < 16; col++)
      assert_true(o[row * 16 + col] == (float)(1000 * col + row));
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  dev_schedule_free(&s);
  hlo_module_free(m);
}

/* The launch's bitcast after the kernel: the kernel returns a column-major
 * f32[2,3]{0,1} (values a[i][j] = 10*i + j + 1 after the add), and the
 * entry flattens it to f32[6]: the buffer order [a00, a10, a01, a11, a02,
 * a12] = [1, 11, 2, 12, 3, 13]. */
static void launch_bitcast_reads_the_buffer(void **state) {
  (void)state;
  hlo_module *m = parse("HloModule m\n"
                        "fused {\n  x = f32[2,3]{0,1} parameter(0)\n  one = f32[] constant(1)\n"
                        "  b = f32[2,3]{0,1} broadcast(one), dimensions={}\n"
                        "  ROOT y = f32[2,3]{0,1} add(x, b)\n}\n"
                        "ENTRY e {\n  p = f32[2,3]{0,1} parameter(0)\n"
                        "  f = f32[2,3]{0,1} fusion(p), kind=kLoop, calls=fused\n"
                        "  ROOT r = f32[6]{0} bitcast(f)\n}\n");
  hlo_error err;
  dev_fusion f;
  dev_machine mach;
  dev_config c;
  char why[256];
  assert_int_equal(dev_fusion_analyze(m, &f, &err), 0);
  assert_non_null(f.launch);
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  assert_int_equal(dev_config_parse("tile=2x3 k=0 buf=2 order=01 pack=1 prec=default flags=none", &c, &err), 0);
  const dev_backend *be = dev_sim_backend();
  dev_kernel *k = NULL;
  if (be->compile(&f, &c, &mach, NULL, &k, why, sizeof why) != DEV_OK)
    fail_msg("compile: %s", why);
  int64_t dims[2] = {2, 3};
  hlo_value *a = hlo_value_array(HLO_F32, 2, dims);
  float *pa = a->data;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      pa[i * 3 + j] = (float)(10 * i + j);
  dev_run r;
  be->run(k, &a, 1, 1, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(r.out->count, 6);
  const float want[6] = {1, 11, 2, 12, 3, 13};
  for (int i = 0; i < 6; i++)
    assert_true(((const float *)r.out->data)[i] == want[i]);
  hlo_value_unref(r.out);
  hlo_value_unref(a);
  be->release(k);
  hlo_module_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(offsets_follow_minor_to_major),
      cmocka_unit_test(kernel_bitcast_is_a_transpose),
      cmocka_unit_test(launch_bitcast_reads_the_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
