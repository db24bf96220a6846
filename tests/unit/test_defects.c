/* test_defects.c — every modelled defect (dev_defect.h) against the clean
 * device, on a fusion of datasets/ (TUNE_SRCDIR) and its whole candidate
 * space on tpu-v5e, with the inputs of seed 0 (check/inputs.h):
 *
 *   1. it triggers under its condition: among the configs that meet the
 *      trigger (as written in dev_defect.h, restated below in config terms,
 *      independently of the device's own predicate), one runs to a
 *      different output with the defect enabled than without it; for
 *      dma-race, one also gives different outputs under two jitter seeds;
 *   2. every other config stays bit-identical: for each config that does
 *      not meet the trigger, the defect-enabled run has the clean run's
 *      status and, when it ran, exactly its output bytes.  All of them when
 *      there are at most NONTRIG_ALL; otherwise an evenly spaced,
 *      deterministic sample of NONTRIG_SAMPLE (the space's order is
 *      deterministic), which keeps the slow fusions (int8_gram: 67 M
 *      int8 MACs a run) within the test's time.
 * Both runs use the same jitter seed, so only the defect differs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_fusion.h"
#include "device/dev_space.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"

#define NONTRIG_ALL 60
#define NONTRIG_SAMPLE 40
#define JITTER 7

typedef struct fusion_fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
  dev_config *cands;
  int ncands;
  hlo_value *args[16];
  int nargs;
} fusion_fx;

typedef bool trigger_fn(const dev_fusion *f, const dev_config *c);

static char *read_all(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(fp);
  if (buf) {
    buf[n] = 0;
    *len = (size_t)n;
  }
  return buf;
}

static void load(fusion_fx *x, const char *file) {
  memset(x, 0, sizeof *x);
  const char *src = getenv("TUNE_SRCDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/datasets/%s", src ? src : ".", file);
  size_t len = 0;
  char *text = read_all(path, &len);
  if (!text)
    fail_msg("cannot read %s (set TUNE_SRCDIR)", path);
  hlo_error err;
  x->m = hlo_parse(text, len, &err);
  free(text);
  if (!x->m)
    fail_msg("%s: %s", file, err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &x->mach, &err), 0);
  dev_config dflt;
  assert_int_equal(dev_space_enumerate(&x->f, &x->mach, &x->cands, &x->ncands, &dflt, &err), 0);
  x->nargs = x->m->entry->nparams;
  assert_true(x->nargs <= 16);
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_NAIVE};
  assert_int_equal(chk_inputs_make(x->m, &io, x->args, &err), 0);
}

static void unload(fusion_fx *x) {
  for (int i = 0; i < x->nargs; i++)
    hlo_value_unref(x->args[i]);
  free(x->cands);
  hlo_module_free(x->m);
}

/* One run of config c with compiler cc: DEV_COMPILE_ERROR, or the run's
 * status with *out its output (NULL unless DEV_OK). */
static dev_status run(fusion_fx *x, const dev_config *c, const dev_compiler *cc, uint64_t jitter, hlo_value **out) {
  const dev_backend *be = dev_sim_backend();
  dev_kernel *k = NULL;
  char why[512];
  *out = NULL;
  if (be->compile(&x->f, c, &x->mach, cc, &k, why, sizeof why) != DEV_OK)
    return DEV_COMPILE_ERROR;
  dev_run r;
  be->run(k, x->args, x->nargs, jitter, &r);
  be->release(k);
  if (r.status != DEV_OK) {
    hlo_value_unref(r.out);
    return r.status;
  }
  *out = r.out;
  return DEV_OK;
}

static void profile_of(dev_defect d, dev_compiler *cc) {
  memset(cc, 0, sizeof *cc);
  snprintf(cc->name, sizeof cc->name, "test+%s", dev_defect_name(d));
  cc->defects = 1u << d;
}

/* The checks 1 and 2 of the header for defect d on fusion `file`. */
static void check_defect(dev_defect d, const char *file, trigger_fn *trig) {
  fusion_fx x;
  load(&x, file);
  dev_compiler bad;
  profile_of(d, &bad);
  int *nontrig = malloc(sizeof *nontrig * (size_t)x.ncands);
  assert_non_null(nontrig);
  int nn = 0, ntrig = 0, tried = 0, shown = -1, racy = -1;
  char text[DEV_CONFIG_TEXT_MAX];
  for (int i = 0; i < x.ncands; i++) {
    if (!trig(&x.f, &x.cands[i])) {
      nontrig[nn++] = i;
      continue;
    }
    ntrig++;
    if (shown >= 0 && (d != DEV_DEFECT_DMA_RACE || racy >= 0))
      continue;
    hlo_value *clean = NULL, *dirty = NULL;
    dev_status sc = run(&x, &x.cands[i], NULL, JITTER, &clean);
    dev_status sd = run(&x, &x.cands[i], &bad, JITTER, &dirty);
    if (sc == DEV_OK) {
      tried++;
      /* a defect is a silent wrong result, never a failed run */
      dev_config_print(&x.cands[i], text, sizeof text);
      if (sd != DEV_OK)
        fail_msg("%s on %s [%s]: the defect made the run fail", dev_defect_name(d), file, text);
      if (!hlo_value_equal(clean, dirty) && shown < 0)
        shown = i;
      if (d == DEV_DEFECT_DMA_RACE && racy < 0) {
        hlo_value *again = NULL;
        assert_int_equal(run(&x, &x.cands[i], &bad, JITTER + 1000, &again), DEV_OK);
        if (!hlo_value_equal(dirty, again))
          racy = i;
        hlo_value_unref(again);
      }
    }
    hlo_value_unref(clean);
    hlo_value_unref(dirty);
  }
  if (shown < 0)
    fail_msg("%s on %s: none of %d triggering configs (%d ran) changed the output", dev_defect_name(d), file, ntrig,
             tried);
  dev_config_print(&x.cands[shown], text, sizeof text);
  print_message("%s on %s: %d of %d configs trigger; shows on [%s]\n", dev_defect_name(d), file, ntrig, x.ncands,
                text);
  if (d == DEV_DEFECT_DMA_RACE) {
    if (racy < 0)
      fail_msg("dma-race on %s: no triggering config depends on the jitter seed", file);
    dev_config_print(&x.cands[racy], text, sizeof text);
    print_message("dma-race on %s: two jitter seeds differ on [%s]\n", file, text);
  }
  /* 2: bit-identity outside the trigger */
  int take = nn <= NONTRIG_ALL ? nn : NONTRIG_SAMPLE, ran = 0;
  for (int s = 0; s < take; s++) {
    int i = nontrig[nn <= NONTRIG_ALL ? s : (int)((int64_t)s * nn / take)];
    hlo_value *clean = NULL, *dirty = NULL;
    dev_status sc = run(&x, &x.cands[i], NULL, JITTER, &clean);
    dev_status sd = run(&x, &x.cands[i], &bad, JITTER, &dirty);
    dev_config_print(&x.cands[i], text, sizeof text);
    if (sc != sd)
      fail_msg("%s on %s [%s]: status %d with the defect, %d without", dev_defect_name(d), file, text, sd, sc);
    if (sc == DEV_OK) {
      ran++;
      if (!hlo_value_equal(clean, dirty))
        fail_msg("%s on %s [%s]: output changed outside the trigger", dev_defect_name(d), file, text);
    }
    hlo_value_unref(clean);
    hlo_value_unref(dirty);
  }
  print_message("%s on %s: %d non-triggering configs%s, %d ran, all bit-identical\n", dev_defect_name(d), file, take,
                nn <= NONTRIG_ALL ? " (all)" : " (sample)", ran);
  assert_true(take == 0 || ran > 0);
  free(nontrig);
  unload(&x);
}

/* ---- the triggers of dev_defect.h in config terms --------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 1; }

static int64_t tiles_along(const dev_fusion *f, const dev_config *c, int d) { return ceil_div(f->dims[d], c->tile[d]); }

static int64_t chunks(const dev_fusion *f, const dev_config *c) {
  return c->k > 0 ? ceil_div(f->k_total, c->k) : 1;
}

static int64_t windows(const dev_fusion *f, const dev_config *c) {
  int64_t n = 1;
  for (int d = 0; d < f->rank; d++)
    n *= tiles_along(f, c, d);
  return n;
}

/* k outside an output loop of bound > 1, more than one chunk, and an
 * output loop of bound 1. */
static bool t_revisit(const dev_fusion *f, const dev_config *c) {
  if (chunks(f, c) < 2)
    return false;
  bool k_seen = false, revisited = false, bound1 = false;
  for (int j = 0; j < c->norder; j++) {
    if (c->order[j] == DEV_ORDER_K)
      k_seen = true;
    else if (k_seen && tiles_along(f, c, c->order[j]) > 1)
      revisited = true;
  }
  for (int d = 0; d < f->rank; d++)
    bound1 = bound1 || tiles_along(f, c, d) == 1;
  return revisited && bound1;
}

static bool t_packed(const dev_fusion *f, const dev_config *c) {
  return c->pack > 1 && !(c->flags & DEV_FLAG_SPLIT_REDUCTION) && windows(f, c) > 1;
}

/* scatter_u8_set_slot: u8 index, N = 512 > 256, "set": vec-scatter alone */
static bool t_vec_scatter(const dev_fusion *f, const dev_config *c) {
  (void)f;
  return (c->flags & DEV_FLAG_VEC_SCATTER) != 0;
}

/* topk_sort_axis0_bug3: axis 0 of [1024, 4], unstable, an iota carried */
static bool t_two_stage_sort(const dev_fusion *f, const dev_config *c) {
  (void)f;
  return (c->flags & DEV_FLAG_TWO_STAGE_SORT) != 0;
}

/* qat_residual_f16 (f32 -> f16 -> f32) and u8_threshold_mask (u8 compare) */
static bool t_fuse_converts(const dev_fusion *f, const dev_config *c) {
  (void)f;
  return (c->flags & DEV_FLAG_FUSE_CONVERTS) != 0;
}

static bool t_ragged_store(const dev_fusion *f, const dev_config *c) {
  return f->rank >= 2 && f->dims[f->rank - 2] >= 2 && f->dims[f->rank - 2] % c->tile[f->rank - 2] != 0;
}

static bool t_ragged_chunk(const dev_fusion *f, const dev_config *c) { return c->k > 0 && f->k_total % c->k != 0; }

/* a loop fusion with one windowed parameter: a fetch per grid step */
static bool t_dma_race(const dev_fusion *f, const dev_config *c) {
  return c->buf >= 2 && windows(f, c) * chunks(f, c) > c->buf;
}

static bool t_int8_chunk(const dev_fusion *f, const dev_config *c) {
  int64_t k = c->k > 0 ? c->k : f->k_total;
  return k % 4 != 0;
}

/* dynamic_slice_sliding_window: a 128-row slice of 1024 rows (the 128
 * columns are the whole dimension) */
static bool t_dynslice(const dev_fusion *f, const dev_config *c) {
  (void)f;
  return c->tile[0] < 128;
}

/* ---- cases -------------------------------------------------------------------- */

static void revisit_no_reinit(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_REVISIT_NO_REINIT, "reduce_middle_dim.hlo", t_revisit);
}
static void packed_reduce_init0(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_PACKED_REDUCE_INIT0, "row_sum_sq_ragged.hlo", t_packed);
}
static void scatter_s8_iota_wrap(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_SCATTER_S8_IOTA_WRAP, "scatter_u8_set_slot.hlo", t_vec_scatter);
}
static void sort_lane_index(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_SORT_LANE_INDEX, "topk_sort_axis0_bug3.hlo", t_two_stage_sort);
}
static void elide_convert(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_ELIDE_CONVERT, "qat_residual_f16.hlo", t_fuse_converts);
}
static void ragged_store_mask(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_RAGGED_STORE_MASK, "qat_residual_bf16.hlo", t_ragged_store);
}
static void ragged_chunk_pad(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_RAGGED_CHUNK_PAD, "row_sum_sq_ragged.hlo", t_ragged_chunk);
}
static void dma_race(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "qat_residual_f16.hlo", t_dma_race);
}
/* The same trigger where the hero stages its operand tile by tile itself
 * (dev_stage.h): a reduce-window (one box per output tile) and an
 * all-reduce (the replicas' operand tile per output tile).  Their root is
 * the hero's shape, so a fetch per window of the output. */
static void dma_race_reduce_window(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "maxpool_2x2.hlo", t_dma_race);
}
static void dma_race_all_reduce(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "all_reduce_grad_mean.hlo", t_dma_race);
}
/* A gather fetches its rows per output tile; a dynamic-update-slice and a
 * scatter first copy their operand (the output's shape) tile by tile; a
 * pad's unpadded dimension is windowed like an elementwise operand's.
 * Counting every output window is at least as broad as each of these. */
static void dma_race_gather(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "embedding_gather.hlo", t_dma_race);
}
static void dma_race_update_slice(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "dynamic_update_slice_kv_cache.hlo", t_dma_race);
}
static void dma_race_scatter(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "scatter_add_embedding_grad.hlo", t_dma_race);
}
static void dma_race_pad(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "pad_to_lane_multiple.hlo", t_dma_race);
}
/* The eager timing (DEV_JITTER_EAGER) makes every transfer the faulty
 * schedule issues early land first, so the race shows on the first run.
 * scatter_u8_set_slot's f32[512] in tiles of 128 with buf=2 copies its
 * operand in 4 fetches through a ring of 2: fetches 2 and 3 land in the
 * buffers of fetches 0 and 1 before those are read, so output elements
 * [0, 256) hold operand elements [256, 512), but for the slot the scatter
 * then sets (a u8, so below 256) and the clean tiles 2 and 3 are
 * unchanged.  With buf=4 the ring never wraps and nothing changes; nor
 * does the eager timing change a clean run. */
static void dma_race_eager(void **s) {
  (void)s;
  fusion_fx x;
  load(&x, "scatter_u8_set_slot.hlo");
  dev_compiler racy, clean;
  profile_of(DEV_DEFECT_DMA_RACE, &racy);
  memset(&clean, 0, sizeof clean);
  snprintf(clean.name, sizeof clean.name, "test-clean");
  dev_config c2, c4;
  hlo_error err;
  assert_int_equal(dev_config_parse("tile=128 k=0 buf=2 order=0 pack=1 prec=default flags=none", &c2, &err), 0);
  assert_int_equal(dev_config_parse("tile=128 k=0 buf=4 order=0 pack=1 prec=default flags=none", &c4, &err), 0);
  hlo_value *ref = NULL, *drawn = NULL, *eager = NULL, *wide = NULL;
  assert_int_equal(run(&x, &c2, &clean, JITTER, &ref), DEV_OK);
  assert_int_equal(run(&x, &c2, &clean, DEV_JITTER_EAGER, &drawn), DEV_OK);
  assert_int_equal(run(&x, &c2, &racy, DEV_JITTER_EAGER, &eager), DEV_OK);
  assert_int_equal(run(&x, &c4, &racy, DEV_JITTER_EAGER, &wide), DEV_OK);
  assert_int_equal(ref->count, 512);
  assert_memory_equal(drawn->data, ref->data, 512 * sizeof(float));
  assert_memory_equal(wide->data, ref->data, 512 * sizeof(float));
  int slot = *(const uint8_t *)x.args[1]->data;
  const float *r = ref->data, *e = eager->data;
  for (int i = 0; i < 512; i++) {
    float want = i < 256 && i != slot ? r[i + 256] : r[i];
    if (memcmp(&e[i], &want, sizeof want) != 0)
      fail_msg("element %d: %g under the eager race, want %g (slot %d)", i, e[i], want, slot);
  }
  hlo_value_unref(ref);
  hlo_value_unref(drawn);
  hlo_value_unref(eager);
  hlo_value_unref(wide);
  unload(&x);
}
/* pad_negative_interior: f32[100,77] padded -2_3_1x4_-1 to f32[200,80].
 * Operand row i lands on output row 2i - 2: row 0 is cropped, rows 1..99
 * land on the even rows 0..196, and the rest is padding.  The operand is
 * fetched once per row tile that holds one of those rows (a tile of only
 * padding fetches nothing), times the column tiles (80 or 128 wide: one). */
static bool t_dma_race_pad_interior(const dev_fusion *f, const dev_config *c) {
  int64_t fetches = 0;
  for (int64_t lo = 0; lo < f->dims[0]; lo += c->tile[0]) {
    int64_t hi = lo + c->tile[0] < f->dims[0] ? lo + c->tile[0] - 1 : f->dims[0] - 1;
    int64_t even = lo % 2 ? lo + 1 : lo; /* the tile's first even row */
    fetches += even <= hi && even <= 196;
  }
  return c->buf >= 2 && fetches * tiles_along(f, c, 1) > c->buf;
}

/* Padded along both dimensions, its operand used to be held whole (issue
 * 14): now fetched per output tile, it races like any window. */
static void dma_race_pad_interior(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DMA_RACE, "pad_negative_interior.hlo", t_dma_race_pad_interior);
}
static void int8_dot_f32_acc(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_INT8_DOT_F32_ACC, "int8_gram.hlo", t_int8_chunk);
}
static void dynslice_clamp_lost(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_DYNSLICE_CLAMP_LOST, "dynamic_slice_sliding_window.hlo", t_dynslice);
}
static void unsigned_cmp_signed(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_UNSIGNED_CMP_SIGNED, "u8_threshold_mask.hlo", t_fuse_converts);
}

/* fft_c64_batch: c64[16,256], fft_length 256 along the minor dim: a
 * four-step split (N1 > 1 for every tile: N = 256 is never prime) and a
 * minor tile smaller than 256 */
static bool t_fft_tiles(const dev_fusion *f, const dev_config *c) {
  return (c->flags & DEV_FLAG_FOUR_STEP) && c->tile[f->rank - 1] < f->dims[f->rank - 1];
}

static void fft_tile_twiddle(void **s) {
  (void)s;
  check_defect(DEV_DEFECT_FFT_TILE_TWIDDLE, "fft_c64_batch.hlo", t_fft_tiles);
}

/* Every catalogued defect has a case above. */
static void catalog_covered(void **s) {
  (void)s;
  assert_int_equal(DEV_DEFECT_COUNT, 12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(catalog_covered),     cmocka_unit_test(revisit_no_reinit),
      cmocka_unit_test(packed_reduce_init0), cmocka_unit_test(scatter_s8_iota_wrap),
      cmocka_unit_test(sort_lane_index),     cmocka_unit_test(elide_convert),
      cmocka_unit_test(ragged_store_mask),   cmocka_unit_test(ragged_chunk_pad),
      cmocka_unit_test(dma_race),            cmocka_unit_test(dma_race_reduce_window),
      cmocka_unit_test(dma_race_all_reduce), cmocka_unit_test(dma_race_gather),
      cmocka_unit_test(dma_race_update_slice), cmocka_unit_test(dma_race_scatter),
      cmocka_unit_test(dma_race_pad),        cmocka_unit_test(dma_race_eager),
      cmocka_unit_test(dma_race_pad_interior),
      cmocka_unit_test(int8_dot_f32_acc),
      cmocka_unit_test(dynslice_clamp_lost), cmocka_unit_test(unsigned_cmp_signed),
      cmocka_unit_test(fft_tile_twiddle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
