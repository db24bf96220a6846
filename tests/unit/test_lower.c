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

#include "device/dev_elemental.h"
#include "device/dev_exec.h"
#include "device/dev_lower.h"
#include "device/dev_space.h"
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

/* A pad's operand is fetched per output tile, the rows each tile reads
 * through the pad's inverse map (issue 14).  The expectations follow from
 * the pad's semantics (XLA operation semantics, Pad): along a dimension
 * padded lo_hi_interior, operand index i sits at lo + i * (interior + 1),
 * and a position outside [0, extent) is cropped.
 *
 * datasets/pad_negative_interior.hlo: f32[100,77], padding -2_3_1x4_-1 ->
 * f32[200,80].  Dim 0: row i at -2 + 2i; row 0 is cropped (-2), rows
 * 1..99 land on 0, 2, ..., 196, and 197..199 are high padding (with the
 * odd rows in between).  Dim 1: column j at 4 + j; columns 0..75 land on
 * 4..79, column 76 is cropped (80). */
static const char *PAD_NEG_INTERIOR =
    "HloModule m\nENTRY e {\n  p = f32[100,77] parameter(0)\n  z = f32[] constant(0)\n"
    "  ROOT q = f32[200,80] pad(p, z), padding=-2_3_1x4_-1\n}\n";

static int64_t rows(const dev_pad_map *pm, int64_t lo, int64_t n, int64_t *first) {
  return dev_pad_rows(pm, lo, n, first);
}

static void pad_inverse_map(void **state) {
  (void)state;
  fx x;
  load(&x, PAD_NEG_INTERIOR, "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8x80 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  const dev_window *w = &s.wins[0];
  assert_false(w->resident);
  assert_true(w->padded[0]);
  assert_true(w->padded[1]);
  assert_int_equal(w->follows[0], 0);
  assert_int_equal(w->follows[1], 1);
  /* dim 0: out = -2 + 2i for i in [1, 100) */
  assert_int_equal(w->pad[0].at, -2);
  assert_int_equal(w->pad[0].step, 2);
  assert_int_equal(w->pad[0].first, 1);
  assert_int_equal(w->pad[0].end, 100);
  /* dim 1: out = 4 + j for j in [0, 76) */
  assert_int_equal(w->pad[1].at, 4);
  assert_int_equal(w->pad[1].step, 1);
  assert_int_equal(w->pad[1].first, 0);
  assert_int_equal(w->pad[1].end, 76);
  int64_t first;
  /* output rows [0, 8): 0, 2, 4, 6 are operand rows 1..4 */
  assert_int_equal(rows(&w->pad[0], 0, 8, &first), 4);
  assert_int_equal(first, 1);
  /* [8, 16): rows 5..8 */
  assert_int_equal(rows(&w->pad[0], 8, 8, &first), 4);
  assert_int_equal(first, 5);
  /* the last tile [192, 200): 192, 194, 196 are rows 97..99; 198 would be
   * row 100, past the operand */
  assert_int_equal(rows(&w->pad[0], 192, 8, &first), 3);
  assert_int_equal(first, 97);
  /* [197, 200): high padding only */
  assert_int_equal(rows(&w->pad[0], 197, 3, &first), 0);
  /* [1, 2): one interior padding row */
  assert_int_equal(rows(&w->pad[0], 1, 1, &first), 0);
  /* [0, 1): row 1 alone (row 0, at -2, is cropped) */
  assert_int_equal(rows(&w->pad[0], 0, 1, &first), 1);
  assert_int_equal(first, 1);
  /* an empty range reads nothing */
  assert_int_equal(rows(&w->pad[0], 8, 0, &first), 0);
  /* columns: [0, 80) reads 0..75; [0, 4) is low padding; [64, 80) reads
   * 60..75; [4, 5) reads column 0 */
  assert_int_equal(rows(&w->pad[1], 0, 80, &first), 76);
  assert_int_equal(first, 0);
  assert_int_equal(rows(&w->pad[1], 0, 4, &first), 0);
  assert_int_equal(rows(&w->pad[1], 64, 16, &first), 16);
  assert_int_equal(first, 60);
  assert_int_equal(rows(&w->pad[1], 4, 1, &first), 1);
  assert_int_equal(first, 0);
  /* the block: at most 4 rows per 8-row tile, rounded up to the 8 f32
   * sublanes; 76 columns, rounded up to 128 lanes, capped at all 77 */
  assert_int_equal(w->block[0], 8);
  assert_int_equal(w->block[1], 77);
  /* VMEM: the block and the 8x80 output block, each twice */
  assert_int_equal(s.vmem_bytes, 2 * 8 * 77 * 4 + 2 * 8 * 80 * 4);
  /* DMA: 25 row tiles, each reads rows (none is only padding): 25
   * fetches moving the 99 x 76 elements that reach the output, once each,
   * and 25 output blocks */
  assert_int_equal(s.dma_count, 25 + 25);
  assert_int_equal(s.dma_bytes, 99 * 76 * 4 + 25 * 8 * 80 * 4);
  dev_schedule_free(&s);
  /* one tile of all 200 rows: the 99 rows round up past 100, so the block
   * is the whole operand, fetched once */
  assert_int_equal(lower(&x, "tile=200x80 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why),
                   0);
  assert_int_equal(s.wins[0].block[0], 100);
  assert_int_equal(s.dma_count, 2);
  assert_int_equal(s.dma_bytes, 99 * 76 * 4 + 200 * 80 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* Interior padding 15 over 16 rows: row i at 16i, 241 rows.  With 8-row
 * tiles the even tiles hold one row each (tile 2t: row t) and the odd ones
 * only padding: those fetch nothing. */
static void pad_tiles_of_padding_fetch_nothing(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  p = f32[16,128] parameter(0)\n  z = f32[] constant(0.5)\n"
       "  ROOT q = f32[241,128] pad(p, z), padding=0_0_15x0_0\n}\n",
       "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  const dev_window *w = &s.wins[0];
  assert_true(w->padded[0]);
  assert_false(w->padded[1]); /* not padded: follows the tile as ever */
  assert_int_equal(w->block[1], 128);
  int64_t first;
  assert_int_equal(rows(&w->pad[0], 0, 8, &first), 1);
  assert_int_equal(first, 0);
  assert_int_equal(rows(&w->pad[0], 8, 8, &first), 0);
  assert_int_equal(rows(&w->pad[0], 16, 8, &first), 1);
  assert_int_equal(first, 1);
  /* the ragged last tile [240, 241): row 15 */
  assert_int_equal(rows(&w->pad[0], 240, 1, &first), 1);
  assert_int_equal(first, 15);
  assert_int_equal(w->block[0], 8); /* one row, rounded up to 8 sublanes */
  assert_int_equal(s.vmem_bytes, 2 * 8 * 128 * 4 + 2 * 8 * 128 * 4);
  /* 31 row tiles: 16 fetches of one 128-float row, 31 output blocks */
  assert_int_equal(s.tiles[0], 31);
  assert_int_equal(s.dma_count, 16 + 31);
  assert_int_equal(s.dma_bytes, 16 * 128 * 4 + 31 * 8 * 128 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* Pads in a chain compose.  Dim 0: the first pad (1_0_1) puts row i at
 * 1 + 2i of 16, the second (-3_2) moves that to 2i - 2 of 15: row 0 is
 * cropped, rows 1..7 land on 0, 2, ..., 12.  Dim 1: column j at 2 + j of
 * 104, then + 30 (30_-4) of 130: 32 + j, and columns 98 and 99 (130, 131)
 * are cropped.  An operand cropped away entirely is never fetched and
 * holds no VMEM. */
static void pad_chains_and_crops(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  p = f32[8,100] parameter(0)\n  z = f32[] constant(-1)\n"
       "  e = f32[8,100] exponential(p)\n  q1 = f32[16,104] pad(e, z), padding=1_0_1x2_2\n"
       "  n = f32[16,104] negate(q1)\n  ROOT q2 = f32[15,130] pad(n, z), padding=-3_2x30_-4\n}\n",
       "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  const dev_window *w = &s.wins[0];
  assert_int_equal(w->pad[0].at, -2);
  assert_int_equal(w->pad[0].step, 2);
  assert_int_equal(w->pad[0].first, 1);
  assert_int_equal(w->pad[0].end, 8);
  assert_int_equal(w->pad[1].at, 32);
  assert_int_equal(w->pad[1].step, 1);
  assert_int_equal(w->pad[1].first, 0);
  assert_int_equal(w->pad[1].end, 98);
  int64_t first;
  /* rows [0, 8): 1..4; [8, 15): 5..7.  Columns [0, 128): 0..95;
   * [128, 130): 96, 97 */
  assert_int_equal(rows(&w->pad[0], 0, 8, &first), 4);
  assert_int_equal(first, 1);
  assert_int_equal(rows(&w->pad[0], 8, 7, &first), 3);
  assert_int_equal(first, 5);
  assert_int_equal(rows(&w->pad[1], 0, 128, &first), 96);
  assert_int_equal(first, 0);
  assert_int_equal(rows(&w->pad[1], 128, 2, &first), 2);
  assert_int_equal(first, 96);
  /* 2 x 2 tiles, each fetch moving its box: (4 + 3) x (96 + 2) floats */
  assert_int_equal(s.dma_count, 4 + 4);
  assert_int_equal(s.dma_bytes, 7 * 98 * 4 + 4 * 8 * 128 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);

  load(&x,
       "HloModule m\nENTRY e {\n  p = f32[8,128] parameter(0)\n  r = f32[16,128] parameter(1)\n"
       "  z = f32[] constant(1)\n  q = f32[16,128] pad(p, z), padding=-8_16x0_0\n"
       "  ROOT s = f32[16,128] add(q, r)\n}\n",
       "tpu-v5e");
  assert_int_equal(lower(&x, "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_true(s.wins[0].padded[0]);
  assert_int_equal(s.wins[0].block[0], 0);
  assert_int_equal(s.wins[0].block_bytes, 0);
  /* r's 8x128 blocks and the output's, twice each; p moves nothing */
  assert_int_equal(s.vmem_bytes, 2 * 8 * 128 * 4 + 2 * 8 * 128 * 4);
  assert_int_equal(s.dma_count, 2 + 2);
  assert_int_equal(s.dma_bytes, 2 * 8 * 128 * 4 + 2 * 8 * 128 * 4);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* A pad above the reduce hero: the executor computes the hero whole along
 * a dimension that reaches the output through padding, so the hero's
 * operand is not windowed through that pad (it reads every row). */
static void pad_above_the_hero_is_not_followed(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
       "ENTRY e {\n  p = f32[50,300] parameter(0)\n  z = f32[] constant(0)\n"
       "  r = f32[50] reduce(p, z), dimensions={1}, to_apply=add\n  ROOT q = f32[60] pad(r, z), padding=-2_12\n}\n",
       "tpu-v5e");
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=128 k=300 buf=2 order=0k pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  assert_false(s.wins[0].padded[0]);
  assert_int_equal(s.wins[0].follows[0], DEV_FOLLOW_NONE);
  assert_int_equal(s.wins[0].block[0], 50);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

/* A prepared fusion (dev_fusion_prepare) shares analyses across its
 * candidates; what every config lowers to, the executor's follow map and
 * every instruction's kind must be those of the unprepared one. */
static void same_schedule(const dev_schedule *a, const dev_schedule *b) {
  assert_memory_equal(a->tiles, b->tiles, sizeof a->tiles);
  assert_int_equal(a->nk, b->nk);
  assert_int_equal(a->steps, b->steps);
  assert_int_equal(a->nwin, b->nwin);
  /* both calloc'd: padding bytes are zero in either */
  assert_memory_equal(a->wins, b->wins, sizeof *a->wins * (size_t)a->nwin);
  assert_int_equal(a->out_block_bytes, b->out_block_bytes);
  assert_int_equal(a->scratch_bytes, b->scratch_bytes);
  assert_int_equal(a->vmem_bytes, b->vmem_bytes);
  assert_int_equal(a->dma_bytes, b->dma_bytes);
  assert_int_equal(a->dma_count, b->dma_count);
  assert_int_equal(a->mxu_flops, b->mxu_flops);
  assert_int_equal(a->vpu_ops, b->vpu_ops);
  assert_int_equal(a->eup_ops, b->eup_ops);
  assert_int_equal(a->ragged, b->ragged);
}

static void prepared_is_unprepared(void **state) {
  (void)state;
  static const char *const modules[] = {
      /* a pad with interior padding below a reduce hero */
      "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
      "ENTRY e {\n  p = f32[8,100] parameter(0)\n  z = f32[] constant(0)\n"
      "  q = f32[16,256] pad(p, z), padding=2_6x3_54_1\n"
      "  ROOT r = f32[16] reduce(q, z), dimensions={1}, to_apply=add\n}\n",
      /* a dot with an elementwise epilogue */
      "HloModule m\nENTRY e {\n  a = f32[64,256] parameter(0)\n  b = f32[256,128] parameter(1)\n"
      "  c = f32[64,128] parameter(2)\n"
      "  d = f32[64,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT r = f32[64,128] add(d, c)\n}\n",
      /* a variadic reduce (argmax): its reducer's instructions share
       * indices with the kernel's */
      "HloModule m\nred {\n  a = f32[] parameter(0)\n  i = s32[] parameter(1)\n  b = f32[] parameter(2)\n"
      "  j = s32[] parameter(3)\n  g = pred[] compare(a, b), direction=GT\n  x = f32[] select(g, a, b)\n"
      "  y = s32[] select(g, i, j)\n  ROOT t = (f32[], s32[]) tuple(x, y)\n}\n"
      "ENTRY e {\n  p = f32[16,1000] parameter(0)\n  io = s32[16,1000] iota(), iota_dimension=1\n"
      "  m = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
      "  r = (f32[16], s32[16]) reduce(p, io, m, z), dimensions={1}, to_apply=red\n"
      "  ROOT g = s32[16] get-tuple-element(r), index=1\n}\n",
      /* a gather, whose operand is evaluated whole, and a tuple root */
      "HloModule m\nENTRY e {\n  t = f32[4096,256] parameter(0)\n  i = s32[64,1] parameter(1)\n"
      "  g = f32[64,256] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},"
      " index_vector_dim=1, slice_sizes={1,256}\n"
      "  n = f32[64,256] negate(g)\n  ROOT r = (f32[64,256], f32[64,256]) tuple(n, g)\n}\n",
  };
  for (size_t k = 0; k < sizeof modules / sizeof *modules; k++) {
    fx x;
    load(&x, modules[k], "tpu-v5e");
    const hlo_computation *c = x.f.comp;
    dev_config *cands = NULL, dflt;
    int n = 0;
    hlo_error err;
    assert_int_equal(dev_space_enumerate(&x.f, &x.mach, &cands, &n, &dflt, &err), 0);
    int *map0 = dev_follow_map(&x.f);
    assert_non_null(map0);
    dev_fusion p = x.f;
    assert_int_equal(dev_fusion_prepare(&p), 0);
    assert_non_null(p.kinds);
    assert_non_null(p.lower);
    int *map1 = dev_follow_map(&p);
    assert_non_null(map1);
    assert_memory_equal(map0, map1, sizeof *map0 * (size_t)c->ninstrs * HLO_MAX_RANK);
    free(map0);
    free(map1);
    for (int i = 0; i < c->ninstrs; i++)
      assert_int_equal(dev_elem_kind_of(&p, c->instrs[i]), dev_elem_classify(c->instrs[i]));
    for (int j = 0; j < x.m->ncomps; j++)
      for (int i = 0; i < x.m->comps[j]->ninstrs; i++)
        assert_int_equal(dev_elem_kind_of(&p, x.m->comps[j]->instrs[i]), dev_elem_classify(x.m->comps[j]->instrs[i]));
    for (int i = -1; i < n; i++) {
      const dev_config *cfg = i < 0 ? &dflt : &cands[i];
      dev_schedule s0, s1;
      char why0[256] = "", why1[256] = "";
      int rc0 = dev_lower(&x.f, cfg, &x.mach, &s0, why0, sizeof why0);
      int rc1 = dev_lower(&p, cfg, &x.mach, &s1, why1, sizeof why1);
      assert_int_equal(rc0, rc1);
      assert_string_equal(why0, why1);
      if (rc0 == 0) {
        same_schedule(&s0, &s1);
        dev_schedule_free(&s0);
        dev_schedule_free(&s1);
      }
    }
    free(cands);
    dev_fusion_release(&p);
    assert_null(p.kinds);
    assert_null(p.lower);
    dev_fusion_release(&p); /* twice is fine */
    hlo_module_free(x.m);
  }
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
      cmocka_unit_test(pad_inverse_map),
      cmocka_unit_test(pad_tiles_of_padding_fetch_nothing),
      cmocka_unit_test(pad_chains_and_crops),
      cmocka_unit_test(pad_above_the_hero_is_not_followed),
      cmocka_unit_test(prepared_is_unprepared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
