/* test_tolerance_depth.c — dev_accum_depth, the most roundings a term of a
 * config's accumulation passes through, against depths counted by hand
 * from the fold structure dev_exec.h describes (pack slot r mod P; a
 * reduce's slot 0 starts at the init, the others empty; a dot's slots at
 * 0; slots combined 0..P-1 in order; split-reduction: per-chunk partials
 * added to the init in chunk order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_accum.h"
#include "device/dev_config.h"
#include "device/dev_fusion.h"
#include "hlo/hlo_parse.h"

/* bf16[8,1000] row sum with a bf16 add reducer: K = 1000. */
static const char *ROWSUM =
    "HloModule m\nadd { a = bf16[] parameter(0)\n b = bf16[] parameter(1)\n ROOT s = bf16[] add(a, b) }\n"
    "ENTRY e {\n  p = bf16[8,1000] parameter(0)\n  z = bf16[] constant(0)\n"
    "  ROOT r = bf16[8] reduce(p, z), dimensions={1}, to_apply=add\n}\n";

/* f32[16,384] x f32[384,128]: K = 384. */
static const char *DOT = "HloModule m\nENTRY e {\n  a = f32[16,384] parameter(0)\n  b = f32[384,128] parameter(1)\n"
                         "  ROOT d = f32[16,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";

static const char *ADD = "HloModule m\nENTRY e {\n  a = f32[8,128] parameter(0)\n"
                         "  ROOT r = f32[8,128] add(a, a)\n}\n";

/* The depth of config text cfg on module text hlo. */
static int64_t depth(const char *hlo, const char *cfg) {
  hlo_error err;
  hlo_module *m = hlo_parse(hlo, strlen(hlo), &err);
  assert_non_null(m);
  dev_fusion f;
  assert_int_equal(dev_fusion_analyze(m, &f, &err), 0);
  dev_config c;
  assert_int_equal(dev_config_parse(cfg, &c, &err), 0);
  int64_t d = dev_accum_depth(&f, &c);
  hlo_module_free(m);
  return d;
}

static void reduce_depths(void **state) {
  (void)state;
  /* one chunk, one slot: the init, then 1000 terms one at a time */
  assert_int_equal(depth(ROWSUM, "tile=8 k=1000 buf=2 order=0k pack=1 prec=default flags=none"), 1000);
  /* k = 0 is one chunk too */
  assert_int_equal(depth(ROWSUM, "tile=8 k=0 buf=2 order=0 pack=1 prec=default flags=none"), 1000);
  /* chunking alone changes nothing without split: slots run across chunks */
  assert_int_equal(depth(ROWSUM, "tile=8 k=256 buf=2 order=0k pack=1 prec=default flags=none"), 1000);
  /* P = 2: slot 0 = init + 500 terms (500 roundings), + 1 combine = 501 */
  assert_int_equal(depth(ROWSUM, "tile=8 k=256 buf=2 order=0k pack=2 prec=default flags=none"), 501);
  /* P = 4: init + 250 terms, + 3 combines = 253 */
  assert_int_equal(depth(ROWSUM, "tile=8 k=0 buf=2 order=0 pack=4 prec=default flags=none"), 253);
  /* split, k = 256, P = 2: a chunk's slot holds 128 terms (127 roundings),
   * + 1 pack combine, then init + 4 partials in order (4) = 132 */
  assert_int_equal(depth(ROWSUM, "tile=8 k=256 buf=2 order=0k pack=2 prec=default flags=split-reduction"), 132);
  /* split, k = 128, P = 4: 32 terms per slot (31) + 3 + 8 chunks = 42 */
  assert_int_equal(depth(ROWSUM, "tile=8 k=128 buf=2 order=0k pack=4 prec=default flags=split-reduction"), 42);
  /* split, k = 128, P = 1: 127 + 0 + 8 = 135 */
  assert_int_equal(depth(ROWSUM, "tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=split-reduction"), 135);
  /* the loop order does not matter (spills copy the slots) */
  assert_int_equal(depth(ROWSUM, "tile=8 k=128 buf=2 order=k0 pack=4 prec=default flags=split-reduction"), 42);
}

static void dot_depths(void **state) {
  (void)state;
  /* slots start at 0 (0 + x is exact): 384 products, 383 roundings */
  assert_int_equal(depth(DOT, "tile=16x128 k=128 buf=2 order=01k pack=1 prec=default flags=none"), 383);
  /* P = 2: 192 per slot (191) + 1 = 192 */
  assert_int_equal(depth(DOT, "tile=16x128 k=128 buf=2 order=01k pack=2 prec=default flags=none"), 192);
  /* split, k = 128, P = 2: 64 per slot (63) + 1, then 0 + 3 partials (2) = 66 */
  assert_int_equal(depth(DOT, "tile=16x128 k=128 buf=2 order=01k pack=2 prec=default flags=split-reduction"), 66);
  /* split with k beyond K: one chunk of 384, P = 4: 96 (95) + 3 + 0 = 98 */
  assert_int_equal(depth(DOT, "tile=16x128 k=512 buf=2 order=01k pack=4 prec=default flags=split-reduction"), 98);
}

static void no_accumulation_is_unknown(void **state) {
  (void)state;
  assert_int_equal(depth(ADD, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none"), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reduce_depths),
      cmocka_unit_test(dot_depths),
      cmocka_unit_test(no_accumulation_is_unknown),
  };
  return cmocka_run_group_tests_name("tolerance_depth", tests, NULL, NULL);
}
