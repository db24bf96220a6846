/* test_lower.c — lowering a fusion + config: legality (lane and sublane
 * rules, full-dimension blocks, VMEM), grid counts, and which output
 * dimension or reduction each parameter window follows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_lower.h"
#include "hlo/hlo_parse.h"

typedef struct fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
} fx;

static void load(fx *x, const char *text, const char *machine) {
  hlo_error err;
  x->m = hlo_parse(text, strlen(text), &err);
  assert_non_null(x->m);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find(machine, &x->mach, &err), 0);
}

static int lower(fx *x, const char *cfgtext, dev_schedule *s, char *why, size_t n) {
  dev_config c;
  hlo_error err;
  if (dev_config_parse(cfgtext, &c, &err) != 0)
    fail_msg("config %s: %s", cfgtext, err.msg);
  return dev_lower(&x->f, &c, &x->mach, s, why, n);
}

static const char *ADD_300 = "HloModule m\nENTRY e {\n  a = f32[16,300] parameter(0)\n"
                             "  b = f32[16,300] parameter(1)\n  ROOT r = f32[16,300] add(a, b)\n}\n";

static void lane_rule_and_full_dims(void **state) {
  (void)state;
  fx x;
  load(&x, ADD_300, "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  /* 16/8 = 2 row tiles, ceil(300/128) = 3 column tiles, ragged */
  assert_int_equal(s.tiles[0], 2);
  assert_int_equal(s.tiles[1], 3);
  assert_int_equal(s.nk, 1);
  assert_int_equal(s.steps, 6);
  assert_true(s.ragged);
  assert_int_equal(s.wins[0].follows[0], 0);
  assert_int_equal(s.wins[0].follows[1], 1);
  dev_schedule_free(&s);
  assert_int_equal(lower(&x, "tile=8x100 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), -1);
  assert_non_null(strstr(why, "last dimension 100 is not a multiple of 128 and not the full dimension 300"));
  /* the full dimension is always legal */
  assert_int_equal(lower(&x, "tile=16x300 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_int_equal(s.steps, 1);
  assert_false(s.ragged);
  dev_schedule_free(&s);
  /* 4 rows: not a multiple of 8, not 16 */
  assert_int_equal(lower(&x, "tile=4x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), -1);
  assert_non_null(strstr(why, "second-minor dimension 4 is not a multiple of 8"));
  /* no reduction: k and pack are refused */
  assert_int_equal(lower(&x, "tile=8x128 k=128 buf=2 order=01k pack=1 prec=default flags=none", &s, why, sizeof why), -1);
  assert_non_null(strstr(why, "no reduction"));
  hlo_module_free(x.m);
}

static void sixteen_sublanes_for_bf16(void **state) {
  (void)state;
  fx x;
  load(&x, "HloModule m\nENTRY e {\n  a = bf16[32,256] parameter(0)\n  ROOT r = bf16[32,256] negate(a)\n}\n",
       "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), -1);
  assert_non_null(strstr(why, "not a multiple of 16 (16-bit sublanes)"));
  assert_int_equal(lower(&x, "tile=16x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  /* 16 x 128 x 2 bytes */
  assert_int_equal(s.wins[0].block_bytes, 4096);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

static void vmem_overflow_on_v4(void **state) {
  (void)state;
  fx x;
  load(&x, "HloModule m\nENTRY e {\n  a = f32[1024,4096] parameter(0)\n  ROOT r = f32[1024,4096] exponential(a)\n}\n",
       "tpu-v4");
  dev_schedule s;
  char why[256];
  /* 1024 x 4096 x 4 = 16 MiB per block, x2 buffers, + output: far above 16 MiB */
  assert_int_equal(lower(&x, "tile=1024x4096 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why),
                   -1);
  assert_non_null(strstr(why, "VMEM 64.0 MiB > 16.0 MiB"));
  assert_int_equal(lower(&x, "tile=256x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  /* (1 MiB in + 1 MiB out) x 2 buffers */
  assert_int_equal(s.vmem_bytes, 4 << 20);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

static void reduce_windows_follow_k(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
       "ENTRY e {\n  p = f32[64,1000] parameter(0)\n  z = f32[] constant(0)\n"
       "  ROOT r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n}\n",
       "tpu-v5e");
  assert_int_equal(x.f.k_total, 1000);
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=64 k=256 buf=2 order=0k pack=2 prec=default flags=none", &s, why, sizeof why), 0);
  /* ceil(1000/256) = 4 chunks, one output tile */
  assert_int_equal(s.nk, 4);
  assert_int_equal(s.steps, 4);
  assert_int_equal(s.wins[0].follows[0], 0);
  assert_int_equal(s.wins[0].follows[1], DEV_FOLLOW_K);
  assert_int_equal(s.wins[0].block[0], 64);
  assert_int_equal(s.wins[0].block[1], 256);
  /* scratch: 64 accumulators x 4 bytes x pack 2 */
  assert_int_equal(s.scratch_bytes, 64 * 4 * 2);
  /* the window changes every step: 4 fetches of 64 KiB */
  assert_int_equal(s.dma_bytes, 4 * 64 * 256 * 4 + 64 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

static void dot_windows(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  a = f32[128,512] parameter(0)\n  b = f32[512,256] parameter(1)\n"
       "  ROOT d = f32[128,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
       "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=64x128 k=128 buf=2 order=01k pack=1 prec=high flags=none", &s, why, sizeof why), 0);
  assert_int_equal(s.tiles[0], 2);
  assert_int_equal(s.tiles[1], 2);
  assert_int_equal(s.nk, 4);
  assert_int_equal(s.steps, 16);
  assert_int_equal(s.wins[0].follows[0], 0);
  assert_int_equal(s.wins[0].follows[1], DEV_FOLLOW_K);
  assert_int_equal(s.wins[1].follows[0], DEV_FOLLOW_K);
  assert_int_equal(s.wins[1].follows[1], 1);
  /* 2*M*N*K MACs, 3 passes at high */
  assert_int_equal(s.mxu_flops, 2LL * 128 * 256 * 512 * 3);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* An all-reduce reads element i of each replica's operand for output
 * element i (a collective-permute, of one other replica's), so its operand
 * is tiled like an elementwise op's.  Held whole,
 * a f32[2048,1024] operand (8 MiB) twice buffered fills tpu-v4's 16 MiB
 * on its own: the corpus's f32[4096,4096] all-reduces could never compile
 * their default. */
static void replica_elementwise_collectives_are_tiled(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m, replica_count=2\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
       " ROOT s = f32[] add(a, b) }\n"
       "ENTRY e {\n  p = f32[2048,1024] parameter(0)\n"
       "  ROOT r = f32[2048,1024] all-reduce(p), replica_groups={}, to_apply=add\n}\n",
       "tpu-v4");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=256x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_int_equal(s.wins[0].follows[0], 0);
  assert_int_equal(s.wins[0].follows[1], 1);
  assert_false(s.wins[0].resident);
  /* 256 x 1024 x 4 = 1 MiB in and 1 MiB out, twice buffered */
  assert_int_equal(s.vmem_bytes, 4 << 20);
  /* 8 row tiles, each block fetched once */
  assert_int_equal(s.steps, 8);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
  /* A collective-permute hands element i of one replica's array to
   * another: the same windows. */
  load(&x,
       "HloModule m, replica_count=2\nENTRY e {\n  p = f32[2048,1024] parameter(0)\n"
       "  ROOT r = f32[2048,1024] collective-permute(p), source_target_pairs={{0,1},{1,0}}\n}\n",
       "tpu-v4");
  assert_int_equal(lower(&x, "tile=256x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_int_equal(s.wins[0].follows[0], 0);
  assert_int_equal(s.wins[0].follows[1], 1);
  assert_int_equal(s.vmem_bytes, 4 << 20);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* An operand read only by an op the device computes from whole arrays
 * (dev_whole.h) stays in HBM: that op stages its own tiles.  A 16 MiB
 * gather operand, twice buffered, would fill tpu-v4's VMEM twice over; the
 * kernel holds only the output blocks.  An elementwise op that only feeds
 * such an op is evaluated whole too, and so are its parameters.  (One that
 * the root or a tiled op reads follows the output dims instead: the
 * elementwise windows of lane_rule_and_full_dims.) */
static void whole_array_operands_stay_in_hbm(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  t = f32[4096,1024] parameter(0)\n  i = s32[64,1] parameter(1)\n"
       "  ROOT g = f32[64,1024] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},"
       " index_vector_dim=1, slice_sizes={1,1024}\n}\n",
       "tpu-v4");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=64x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_true(s.wins[0].in_hbm);
  assert_true(s.wins[1].in_hbm);
  /* only the 64 x 1024 x 4 output block, twice buffered */
  assert_int_equal(s.vmem_bytes, 2 * 64 * 1024 * 4);
  /* both are still fetched once, whole, in the DMA account */
  assert_true(s.dma_bytes >= 4096 * 1024 * 4 + 64 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);

  load(&x,
       "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
       "ENTRY e {\n  p0 = f32[2048,1024] parameter(0)\n  p1 = f32[2048,1024] parameter(1)\n"
       "  i = s32[8,1] parameter(2)\n  u = f32[8,1024] parameter(3)\n  a = f32[2048,1024] add(p0, p1)\n"
       "  ROOT r = f32[2048,1024] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
       "tpu-v4");
  assert_int_equal(lower(&x, "tile=256x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  for (int p = 0; p < 4; p++)
    assert_true(s.wins[p].in_hbm);
  assert_int_equal(s.vmem_bytes, 2 * 256 * 1024 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);

}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lane_rule_and_full_dims),
      cmocka_unit_test(sixteen_sublanes_for_bf16),
      cmocka_unit_test(vmem_overflow_on_v4),
      cmocka_unit_test(reduce_windows_follow_k),
      cmocka_unit_test(dot_windows),
      cmocka_unit_test(replica_elementwise_collectives_are_tiled),
      cmocka_unit_test(whole_array_operands_stay_in_hbm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
