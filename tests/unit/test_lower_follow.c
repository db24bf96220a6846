/* test_lower_follow.c — windows the lowering follows through a reshape's
 * merged dimensions and through a pad along the reduction, and the
 * candidate space's VMEM estimate of such windows (issue 14 item 1).
 *
 * Every expected figure is worked out by hand in the comments from the
 * semantics: a reshape keeps the row-major order of the elements (XLA
 * operation semantics, Reshape), a pad puts operand index i at lo + i *
 * (interior + 1) (Pad), and dev_lower.h's VMEM rule: sum over windows of
 * block bytes x buf + output block x buf + accumulators.  The space's
 * estimate (dev_space.h) counts the output block once and pack f32
 * accumulators of the output tile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_exec.h"
#include "device/dev_layout.h"
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
  if (!x->m)
    fail_msg("parse: %s", err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find(machine, &x->mach, &err), 0);
}

static dev_config cfg_of(const char *text) {
  dev_config c;
  hlo_error err;
  if (dev_config_parse(text, &c, &err) != 0)
    fail_msg("config %s: %s", text, err.msg);
  return c;
}

static int lower(fx *x, const char *cfgtext, dev_schedule *s, char *why, size_t n) {
  dev_config c = cfg_of(cfgtext);
  return dev_lower(&x->f, &c, &x->mach, s, why, n);
}

/* ---- factor groups of a reshape ------------------------------------------ */

/* An f32 array shape on dims (which must outlive it). */
static hlo_shape shape(int rank, int64_t *dims) {
  hlo_shape s;
  memset(&s, 0, sizeof s);
  s.type = HLO_F32;
  s.rank = rank;
  s.dims = dims;
  return s;
}

static void reshape_groups_and_boxes(void **state) {
  (void)state;
  int fa[HLO_MAX_RANK + 1], ta[HLO_MAX_RANK + 1];
  /* [768,96,320] -> [73728,320]: 768 * 96 = 73728, then 320 = 320 */
  int64_t ad[] = {768, 96, 320}, bd[] = {73728, 320}, cd[] = {16384, 6144}, dd[] = {1, 16384, 6144};
  int64_t ed[] = {4, 6}, gd[] = {3, 8}, hd[] = {2, 3}, kd[] = {7};
  hlo_shape a = shape(3, ad), b = shape(2, bd);
  assert_int_equal(dev_layout_reshape_groups(&a, &b, fa, ta), 2);
  assert_int_equal(fa[0], 0), assert_int_equal(fa[1], 2), assert_int_equal(fa[2], 3);
  assert_int_equal(ta[0], 0), assert_int_equal(ta[1], 1), assert_int_equal(ta[2], 2);
  /* a leading unit dim joins the first group: [16384,6144] -> [1,16384,6144] */
  hlo_shape c = shape(2, cd), d = shape(3, dd);
  assert_int_equal(dev_layout_reshape_groups(&c, &d, fa, ta), 2);
  assert_int_equal(fa[1], 1), assert_int_equal(ta[1], 2);
  /* [4,6] -> [3,8]: no shorter run agrees than the whole 24 */
  hlo_shape e = shape(2, ed), g = shape(2, gd);
  assert_int_equal(dev_layout_reshape_groups(&e, &g, fa, ta), 1);
  /* element counts differ */
  hlo_shape h = shape(2, hd), k = shape(1, kd);
  assert_int_equal(dev_layout_reshape_groups(&h, &k, fa, ta), -1);

  int64_t lo[3], n[3];
  /* rows 100..299 of [73728,320], columns 64..191: row 100 is (1, 4) of
   * [768,96], row 299 is (3, 11); they differ in dim 0, so dims 0 is
   * 1..3 and dim 1 whole; the columns are the group {2} <- {1} as is */
  assert_true(dev_layout_reshape_box(&b, (int64_t[]){100, 64}, (int64_t[]){200, 128}, &a, lo, n));
  assert_int_equal(lo[0], 1), assert_int_equal(n[0], 3);
  assert_int_equal(lo[1], 0), assert_int_equal(n[1], 96);
  assert_int_equal(lo[2], 64), assert_int_equal(n[2], 128);
  /* rows 480..671 = (5, 0)..(6, 95): exactly rows 5 and 6 */
  assert_true(dev_layout_reshape_box(&b, (int64_t[]){480, 0}, (int64_t[]){192, 320}, &a, lo, n));
  assert_int_equal(lo[0], 5), assert_int_equal(n[0], 2);
  assert_int_equal(lo[1], 0), assert_int_equal(n[1], 96);
  /* rows 490..509 = (5, 10)..(5, 29): within one row */
  assert_true(dev_layout_reshape_box(&b, (int64_t[]){490, 0}, (int64_t[]){20, 320}, &a, lo, n));
  assert_int_equal(lo[0], 5), assert_int_equal(n[0], 1);
  assert_int_equal(lo[1], 10), assert_int_equal(n[1], 20);
  assert_false(dev_layout_reshape_box(&k, (int64_t[]){0}, (int64_t[]){7}, &h, lo, n));
}

/* ---- a reshape merging the dims a tile covers --------------------------- */

/* Corpus module 0287's pattern, small: the dot's rows are p0's dims 0 and
 * 1 merged by a reshape, and a bitcast splits them back in the output. */
static const char *MERGED_DOT = "HloModule m\nENTRY e {\n  p0 = f32[4,16,128] parameter(0)\n"
                                "  r = f32[64,128] reshape(p0)\n  p1 = f32[256,128] parameter(1)\n"
                                "  d = f32[64,256] dot(r, p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                                "  ROOT o = f32[4,16,256] bitcast(d)\n}\n";

static void reshape_merged_windows(void **state) {
  (void)state;
  fx x;
  load(&x, MERGED_DOT, "tpu-v5e");
  assert_int_equal(x.f.kind, DEV_HERO_DOT);
  assert_int_equal(x.f.k_total, 128);
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=2x16x256 k=128 buf=2 order=012k pack=1 prec=default flags=none", &s, why,
                         sizeof why),
                   0);
  /* p0 [4,16,128]: dims 0 and 1 follow output dims 0 and 1 through the
   * reshape, the dot and the bitcast; dim 2 is the contraction */
  const dev_window *w = &s.wins[0];
  assert_int_equal(w->follows[0], 0);
  assert_int_equal(w->follows[1], 1);
  assert_int_equal(w->follows[2], DEV_FOLLOW_K);
  assert_false(w->resident);
  assert_int_equal(w->block[0], 2);
  assert_int_equal(w->block[1], 16);
  assert_int_equal(w->block[2], 128);
  /* p1 [256,128]: its rows are the dot's columns, output dim 2 */
  assert_int_equal(s.wins[1].follows[0], 2);
  assert_int_equal(s.wins[1].follows[1], DEV_FOLLOW_K);
  /* the dot's rows follow output dims 0 and 1 merged: 2 x 16 = 32 rows */
  assert_int_equal(s.hero_rank, 2);
  assert_int_equal(s.hero_follows[0], 0);
  assert_int_equal(s.hero_merged[0], 2);
  assert_int_equal(s.hero_follows[1], 2);
  assert_int_equal(s.hero_merged[1], 1);
  /* VMEM: p0 2x16x128x4 = 16384 and p1 256x128x4 = 131072, output
   * 2x16x256x4 = 32768, each twice; accumulators 32 x 256 x 4 = 32768:
   * 32768 + 262144 + 65536 + 32768 = 393216 (held whole, p0 was 32768
   * twice and the accumulators all 64 rows: 458752) */
  assert_int_equal(s.scratch_bytes, 32768);
  assert_int_equal(s.vmem_bytes, 393216);
  /* tile (1, 0, 0) covers rows 32..63 of the dot */
  int64_t lo[2], n[2];
  dev_hero_box(&s, (int64_t[]){1, 0, 0}, lo, n);
  assert_int_equal(lo[0], 32), assert_int_equal(n[0], 32);
  assert_int_equal(lo[1], 0), assert_int_equal(n[1], 256);
  dev_schedule_free(&s);

  /* tile 1x8: rows (i, 8..15) of the merged dim are rows 16i + 8 .. 16i + 15 */
  assert_int_equal(lower(&x, "tile=1x8x256 k=128 buf=2 order=012k pack=1 prec=default flags=none", &s, why,
                         sizeof why),
                   0);
  dev_hero_box(&s, (int64_t[]){3, 1, 0}, lo, n);
  assert_int_equal(lo[0], 56), assert_int_equal(n[0], 8);
  dev_schedule_free(&s);

  /* tile 2x8: rows 0..7 and 16..23, not one run of the dot's rows */
  dev_config c = cfg_of("tile=2x8x256 k=128 buf=2 order=012k pack=1 prec=default flags=none");
  assert_int_equal(dev_lower(&x.f, &c, &x.mach, &s, why, sizeof why), -1);
  assert_non_null(strstr(why, "merges output dimensions 0..1: tile 2x8 is not one contiguous run"));
  assert_false(dev_lower_runs_contiguous(&x.f, &c));
  assert_false(dev_space_plausible(&x.f, &x.mach, &c));
  hlo_module_free(x.m);
}

/* The same pattern at a size where holding p0 whole does not fit tpu-v4's
 * 16 MiB: p0 f32[64,256,512] is 32 MiB.  The space's estimate, which
 * matched p0's dims to the output's by size, admitted the tile; the
 * lowering, which held p0 whole, refused it.  Both must now agree. */
static void reshape_merged_fits_where_whole_did_not(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  p0 = f32[64,256,512] parameter(0)\n  r = f32[16384,512] reshape(p0)\n"
       "  p1 = f32[256,512] parameter(1)\n"
       "  d = f32[16384,256] dot(r, p1), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
       "  ROOT o = f32[64,256,256] bitcast(d)\n}\n",
       "tpu-v4");
  dev_config c = cfg_of("tile=8x256x256 k=512 buf=2 order=012k pack=1 prec=default flags=none");
  dev_schedule s;
  char why[256];
  assert_int_equal(dev_lower(&x.f, &c, &x.mach, &s, why, sizeof why), 0);
  /* p0 8x256x512x4 = 4 MiB, p1 256x512x4 = 512 KiB, output 8x256x256x4 =
   * 2 MiB, each twice: 15 MiB - 2 MiB of accumulators (2048 rows x 256 x
   * 4) = 13 MiB; with them 15 MiB = 15728640 */
  assert_int_equal(s.vmem_bytes, 15728640);
  dev_schedule_free(&s);
  /* the estimate: 4 MiB x 2 + 512 KiB x 2 + 2 MiB + 1 x 8x256x256 x 4 =
   * 13 MiB, and the blocks are legal */
  assert_int_equal(dev_space_vmem_estimate(&x.f, &x.mach, &c), 13631488);
  assert_true(dev_space_plausible(&x.f, &x.mach, &c));
  hlo_module_free(x.m);
}

/* The device's result through merged windows: the dot of small integers
 * (exact in bf16 and in any f32 order), checked against its definition
 * out[i][j][n] = sum_c p0[i][j][c] * p1[n][c]. */
static void reshape_merged_runs(void **state) {
  (void)state;
  static const char *const cfgs[] = {
      "tile=2x16x256 k=128 buf=2 order=012k pack=1 prec=default flags=none",
      "tile=1x8x128 k=128 buf=3 order=k012 pack=2 prec=default flags=none",
      "tile=4x16x256 k=128 buf=1 order=102k pack=1 prec=default flags=split-reduction",
  };
  for (size_t q = 0; q < sizeof cfgs / sizeof *cfgs; q++) {
    fx x;
    load(&x, MERGED_DOT, "tpu-v5e");
    dev_schedule s;
    char why[256];
    if (lower(&x, cfgs[q], &s, why, sizeof why) != 0)
      fail_msg("%s: %s", cfgs[q], why);
    hlo_value *a = hlo_value_array(HLO_F32, 3, (int64_t[]){4, 16, 128});
    hlo_value *b = hlo_value_array(HLO_F32, 2, (int64_t[]){256, 128});
    assert_non_null(a);
    assert_non_null(b);
    float *pa = a->data, *pb = b->data;
    for (int i = 0; i < 4 * 16 * 128; i++)
      pa[i] = (float)(i % 7 - 3);
    for (int i = 0; i < 256 * 128; i++)
      pb[i] = (float)(i % 5 - 2);
    hlo_value *args[2] = {a, b};
    dev_run r;
    dev_exec_run(&s, NULL, args, 2, 1, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: status %d", cfgs[q], (int)r.status);
    const float *o = r.out->data;
    for (int row = 0; row < 64; row++)
      for (int col = 0; col < 256; col++) {
        float want = 0;
        for (int c = 0; c < 128; c++)
          want += pa[row * 128 + c] * pb[col * 128 + c];
        if (o[row * 256 + col] != want)
          fail_msg("%s: out[%d][%d] = %g, want %g", cfgs[q], row, col, (double)o[row * 256 + col], (double)want);
      }
    hlo_value_unref(r.out);
    hlo_value_unref(a);
    hlo_value_unref(b);
    dev_schedule_free(&s);
    hlo_module_free(x.m);
  }
}

/* Corpus module 0039's pattern, small: the parameter's rows are output
 * dims 0 and 1 merged (a bitcast splits them), both where the output reads
 * it and through the row max, whose result a bitcast splits too.  Its
 * columns are the output's along one path and the reduction along the
 * other: they follow nothing (whole). */
static const char *MERGED_PARAM = "HloModule m\nmax { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                                  " ROOT s = f32[] maximum(a, b) }\n"
                                  "ENTRY e {\n  p = f32[64,256] parameter(0)\n  b = f32[4,16,256] bitcast(p)\n"
                                  "  c = f32[] constant(-inf)\n"
                                  "  r = f32[64] reduce(p, c), dimensions={1}, to_apply=max\n"
                                  "  r2 = f32[4,16] bitcast(r)\n"
                                  "  bb = f32[4,16,256] broadcast(r2), dimensions={0,1}\n"
                                  "  ROOT s = f32[4,16,256] subtract(b, bb)\n}\n";

static void merged_parameter_windows(void **state) {
  (void)state;
  fx x;
  load(&x, MERGED_PARAM, "tpu-v5e");
  assert_int_equal(x.f.kind, DEV_HERO_REDUCE);
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=2x16x256 k=256 buf=2 order=012k pack=1 prec=default flags=none", &s, why,
                         sizeof why),
                   0);
  const dev_window *w = &s.wins[0];
  assert_int_equal(w->follows[0], 0);
  assert_int_equal(w->merged[0], 2);
  assert_int_equal(w->follows[1], DEV_FOLLOW_NONE);
  /* 2 x 16 = 32 rows of p, all 256 columns */
  assert_int_equal(w->block[0], 32);
  assert_int_equal(w->block[1], 256);
  /* p 32x256x4 = 32768 and the output 2x16x256x4 = 32768, each twice,
   * and 32 accumulators of 4 bytes: 131200 (held whole: p 65536 twice,
   * the accumulators 64: 196864) */
  assert_int_equal(s.vmem_bytes, 131200);
  /* tile (1, 0, 0): rows 32..63 */
  int64_t origin[2], lim[2];
  assert_true(dev_window_at(&s, w, (int64_t[]){1, 0, 0}, 0, origin, lim));
  assert_int_equal(origin[0], 32), assert_int_equal(lim[0], 64);
  assert_int_equal(origin[1], 0), assert_int_equal(lim[1], 256);
  dev_schedule_free(&s);
  /* tile 1x8: tile (3, 1, 0) reads rows 3 x 16 + 8 = 56..63 */
  assert_int_equal(lower(&x, "tile=1x8x256 k=256 buf=2 order=012k pack=1 prec=default flags=none", &s, why,
                         sizeof why),
                   0);
  assert_int_equal(s.wins[0].block[0], 8);
  assert_true(dev_window_at(&s, &s.wins[0], (int64_t[]){3, 1, 0}, 0, origin, lim));
  assert_int_equal(origin[0], 56), assert_int_equal(lim[0], 64);
  dev_schedule_free(&s);
  assert_int_equal(lower(&x, "tile=2x8x256 k=256 buf=2 order=012k pack=1 prec=default flags=none", &s, why,
                         sizeof why),
                   -1);
  assert_non_null(strstr(why, "p merges output dimensions 0..1"));
  hlo_module_free(x.m);
}

/* out[i][j][c] = p[16 i + j][c] - max_c' p[16 i + j][c']: one rounding of
 * the same two floats whatever the order of the max. */
static void merged_parameter_runs(void **state) {
  (void)state;
  static const char *const cfgs[] = {
      "tile=2x16x256 k=256 buf=2 order=012k pack=1 prec=default flags=none",
      "tile=1x8x128 k=128 buf=3 order=k012 pack=2 prec=default flags=none",
      "tile=4x16x256 k=128 buf=1 order=102k pack=4 prec=default flags=split-reduction",
  };
  for (size_t q = 0; q < sizeof cfgs / sizeof *cfgs; q++) {
    fx x;
    load(&x, MERGED_PARAM, "tpu-v5e");
    dev_schedule s;
    char why[256];
    if (lower(&x, cfgs[q], &s, why, sizeof why) != 0)
      fail_msg("%s: %s", cfgs[q], why);
    hlo_value *p = hlo_value_array(HLO_F32, 2, (int64_t[]){64, 256});
    assert_non_null(p);
    float *d = p->data;
    for (int i = 0; i < 64; i++)
      for (int j = 0; j < 256; j++)
        d[i * 256 + j] = (float)((i * 7 + j * 13) % 31 - 15) * 0.25f;
    dev_run r;
    dev_exec_run(&s, NULL, &p, 1, 1, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: status %d", cfgs[q], (int)r.status);
    const float *o = r.out->data;
    for (int i = 0; i < 64; i++) {
      float mx = d[i * 256];
      for (int j = 1; j < 256; j++)
        mx = d[i * 256 + j] > mx ? d[i * 256 + j] : mx;
      for (int j = 0; j < 256; j++)
        if (o[i * 256 + j] != d[i * 256 + j] - mx)
          fail_msg("%s: row %d col %d = %g, want %g", cfgs[q], i, j, (double)o[i * 256 + j],
                   (double)(d[i * 256 + j] - mx));
    }
    hlo_value_unref(r.out);
    hlo_value_unref(p);
    dev_schedule_free(&s);
    hlo_module_free(x.m);
  }
}

/* ---- a padded dimension that follows the reduction ----------------------- */

/* p f32[8,200] padded to 512 columns with ones, 12 before and 300 after,
 * then summed along the columns.  Column j of p sits at 12 + j. */
static const char *PADDED_K = "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                              " ROOT s = f32[] add(a, b) }\n"
                              "ENTRY e {\n  p = f32[8,200] parameter(0)\n  one = f32[] constant(1)\n"
                              "  q = f32[8,512] pad(p, one), padding=0_0x12_300\n  z = f32[] constant(0)\n"
                              "  ROOT r = f32[8] reduce(q, z), dimensions={1}, to_apply=add\n}\n";

static void padded_k_windows(void **state) {
  (void)state;
  fx x;
  load(&x, PADDED_K, "tpu-v5e");
  assert_int_equal(x.f.k_total, 512);
  dev_schedule s;
  char why[256];
  assert_int_equal(lower(&x, "tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=none", &s, why, sizeof why), 0);
  const dev_window *w = &s.wins[0];
  assert_int_equal(w->follows[0], 0);
  assert_int_equal(w->follows[1], DEV_FOLLOW_K);
  assert_true(w->padded[1]);
  assert_false(w->resident);
  assert_int_equal(w->pad[1].at, 12);
  assert_int_equal(w->pad[1].step, 1);
  assert_int_equal(w->pad[1].first, 0);
  assert_int_equal(w->pad[1].end, 200);
  /* chunk [0, 128) reads columns 0..115 (at 12..127), chunk [128, 256)
   * columns 116..199 (at 128..211), the last two only padding: the block
   * holds 116 columns, rounded up to 128 lanes */
  assert_int_equal(w->block[0], 8);
  assert_int_equal(w->block[1], 128);
  int64_t origin[2], lim[2];
  assert_true(dev_window_at(&s, w, (int64_t[]){0}, 1, origin, lim));
  assert_int_equal(origin[1], 116), assert_int_equal(lim[1], 200);
  assert_false(dev_window_at(&s, w, (int64_t[]){0}, 2, origin, lim));
  /* VMEM: 8x128x4 = 4096 twice, the output's 8 floats twice, 8 f32
   * accumulators: 8192 + 64 + 32 (held whole: 8x200x4 twice, 12896) */
  assert_int_equal(s.vmem_bytes, 8288);
  /* DMA: two chunks read columns, 116 + 84 = 200 of them x 8 rows x 4
   * bytes; one output block of 32 bytes */
  assert_int_equal(s.dma_count, 2 + 1);
  assert_int_equal(s.dma_bytes, 8 * 200 * 4 + 32);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

static void padded_k_runs(void **state) {
  (void)state;
  static const char *const cfgs[] = {
      "tile=8 k=128 buf=2 order=0k pack=1 prec=default flags=none",
      "tile=8 k=96 buf=3 order=k0 pack=2 prec=default flags=none",
      "tile=8 k=32 buf=1 order=0k pack=4 prec=default flags=split-reduction",
  };
  for (size_t q = 0; q < sizeof cfgs / sizeof *cfgs; q++) {
    fx x;
    load(&x, PADDED_K, "tpu-v5e");
    dev_schedule s;
    char why[256];
    if (lower(&x, cfgs[q], &s, why, sizeof why) != 0)
      fail_msg("%s: %s", cfgs[q], why);
    hlo_value *p = hlo_value_array(HLO_F32, 2, (int64_t[]){8, 200});
    assert_non_null(p);
    float *d = p->data;
    for (int i = 0; i < 8; i++)
      for (int j = 0; j < 200; j++)
        d[i * 200 + j] = (float)(j % 3 + i);
    dev_run r;
    dev_exec_run(&s, NULL, &p, 1, 1, NULL, &r);
    if (r.status != DEV_OK)
      fail_msg("%s: status %d", cfgs[q], (int)r.status);
    /* row i: sum of j % 3 over j < 200 is 66 x 3 + 0 + 1 = 199, plus 200 i,
     * plus 312 padding ones: 511 + 200 i, exact in f32 in any order */
    for (int i = 0; i < 8; i++)
      if (((float *)r.out->data)[i] != 511.0f + 200.0f * (float)i)
        fail_msg("%s: row %d = %g", cfgs[q], i, (double)((float *)r.out->data)[i]);
    hlo_value_unref(r.out);
    hlo_value_unref(p);
    dev_schedule_free(&s);
    hlo_module_free(x.m);
  }
}

/* ---- the space's estimate of a padded operand ----------------------------- */

/* f32[4096,30000] padded to 30720 columns.  A 512x1024 tile reads at most
 * 1024 columns of it.  Sized whole, its block was 512 x 30000 x 4 =
 * 61440000 bytes, twice buffered 117 MiB: tpu-v4's 16 MiB refused a tile
 * that the lowering accepts. */
static void space_estimates_the_padded_window(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  p = f32[4096,30000] parameter(0)\n  z = f32[] constant(0)\n"
       "  ROOT q = f32[4096,30720] pad(p, z), padding=0_0x0_720\n}\n",
       "tpu-v4");
  dev_config c = cfg_of("tile=512x1024 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  int64_t block[2];
  assert_int_equal(dev_lower_param_block(&x.f, &c, &x.mach, 0, block), 2u); /* dim 1 padded */
  assert_int_equal(block[0], 512);
  assert_int_equal(block[1], 1024);
  /* 512x1024x4 = 2 MiB twice, plus the 2 MiB output block once */
  assert_int_equal(dev_space_vmem_estimate(&x.f, &x.mach, &c), 6 << 20);
  assert_true(dev_space_plausible(&x.f, &x.mach, &c));
  dev_schedule s;
  char why[256];
  assert_int_equal(dev_lower(&x.f, &c, &x.mach, &s, why, sizeof why), 0);
  /* the lowering buffers the output block too: 8 MiB */
  assert_int_equal(s.vmem_bytes, 8 << 20);
  dev_schedule_free(&s);
  hlo_module_free(x.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reshape_groups_and_boxes),
      cmocka_unit_test(reshape_merged_windows),
      cmocka_unit_test(reshape_merged_fits_where_whole_did_not),
      cmocka_unit_test(reshape_merged_runs),
      cmocka_unit_test(merged_parameter_windows),
      cmocka_unit_test(merged_parameter_runs),
      cmocka_unit_test(padded_k_windows),
      cmocka_unit_test(padded_k_runs),
      cmocka_unit_test(space_estimates_the_padded_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
