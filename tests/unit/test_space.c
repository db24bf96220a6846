/* test_space.c — the candidate space: deterministic, bounded, built from
 * the fusion's shapes, with the default first and legal, and every knob
 * value the space defines present in the list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_space.h"
#include "hlo/hlo_parse.h"

/* ---- modules --------------------------------------------------------------- */

static const char *const loop_300x1000 =
    "HloModule loop\n"
    "ENTRY main {\n"
    "  x = f32[300,1000]{1,0} parameter(0)\n"
    "  y = f32[300,1000]{1,0} parameter(1)\n"
    "  ROOT s = f32[300,1000]{1,0} add(x, y)\n"
    "}\n";

static const char *const row_sum =
    "HloModule row_sum\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "fused { x = f32[512,1000]{1,0} parameter(0)\n z = f32[] constant(0)\n"
    "  ROOT r = f32[512]{0} reduce(x, z), dimensions={1}, to_apply=add }\n"
    "ENTRY main { p = f32[512,1000]{1,0} parameter(0)\n"
    "  ROOT f = f32[512]{0} fusion(p), kind=kInput, calls=fused }\n";

static const char *const dot_f32 =
    "HloModule dot_f32\n"
    "ENTRY main {\n"
    "  a = f32[300,512]{1,0} parameter(0)\n"
    "  b = f32[512,1024]{1,0} parameter(1)\n"
    "  ROOT d = f32[300,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

static const char *const dot_bf16 =
    "HloModule dot_bf16\n"
    "ENTRY main {\n"
    "  a = bf16[256,768]{1,0} parameter(0)\n"
    "  b = bf16[768,1000]{1,0} parameter(1)\n"
    "  ROOT d = bf16[256,1000]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n";

static const char *const qat_bf16 =
    "HloModule qat\n"
    "ENTRY main {\n"
    "  x = f32[512,256]{1,0} parameter(0)\n"
    "  h = bf16[512,256]{1,0} convert(x)\n"
    "  b = f32[512,256]{1,0} convert(h)\n"
    "  ROOT r = f32[512,256]{1,0} subtract(x, b)\n"
    "}\n";

static const char *const half_out =
    "HloModule half\n"
    "ENTRY main {\n"
    "  x = bf16[200,384]{1,0} parameter(0)\n"
    "  ROOT n = bf16[200,384]{1,0} negate(x)\n"
    "}\n";

static const char *const scatter_s8 =
    "HloModule scatter\n"
    "set { a = f32[] parameter(0)\n ROOT b = f32[] parameter(1) }\n"
    "fused { x = f32[300]{0} parameter(0)\n i = s8[] parameter(1)\n r = s8[1]{0} reshape(i)\n"
    "  v = f32[] parameter(2)\n"
    "  ROOT s = f32[300]{0} scatter(x, r, v), update_window_dims={}, inserted_window_dims={0},\n"
    "      scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=set }\n"
    "ENTRY main { x = f32[300]{0} parameter(0)\n i = s8[] parameter(1)\n v = f32[] parameter(2)\n"
    "  ROOT f = f32[300]{0} fusion(x, i, v), kind=kLoop, calls=fused }\n";

static const char *const sort_axis0 =
    "HloModule sort\n"
    "lt { a = f32[] parameter(0)\n b = f32[] parameter(1)\n c = s32[] parameter(2)\n"
    "  d = s32[] parameter(3)\n ROOT l = pred[] compare(a, b), direction=LT }\n"
    "fused { x = f32[1024,4]{1,0} parameter(0)\n i = s32[1024,4]{1,0} iota(), iota_dimension=0\n"
    "  ROOT s = (f32[1024,4]{1,0}, s32[1024,4]{1,0}) sort(x, i), dimensions={0}, is_stable=false,"
    " to_apply=lt }\n"
    "ENTRY main { x = f32[1024,4]{1,0} parameter(0)\n"
    "  ROOT f = (f32[1024,4]{1,0}, s32[1024,4]{1,0}) fusion(x), kind=kInput, calls=fused }\n";

static const char *const scalar_sum =
    "HloModule total\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY main { x = f32[4096]{0} parameter(0)\n z = f32[] constant(0)\n"
    "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add }\n";

static const char *const heads_3d =
    "HloModule heads\n"
    "ENTRY main {\n"
    "  x = f32[77,8,64]{2,1,0} parameter(0)\n"
    "  ROOT t = f32[8,77,64]{2,1,0} transpose(x), dimensions={1,0,2}\n"
    "}\n";

typedef struct fixture {
  hlo_module *mod;
  dev_fusion f;
  dev_machine m;
  dev_config *c;
  int n;
  dev_config d;
} fixture;

static void load_on(fixture *x, const char *text, const char *machine) {
  hlo_error err;
  memset(x, 0, sizeof *x);
  x->mod = hlo_parse(text, strlen(text), &err);
  if (!x->mod)
    fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
  if (dev_fusion_analyze(x->mod, &x->f, &err) != 0)
    fail_msg("analyze: %s", err.msg);
  if (dev_machine_find(machine, &x->m, &err) != 0)
    fail_msg("machine: %s", err.msg);
  if (dev_space_enumerate(&x->f, &x->m, &x->c, &x->n, &x->d, &err) != 0)
    fail_msg("enumerate: %s", err.msg);
}

static void load(fixture *x, const char *text) { load_on(x, text, "tpu-v5e"); }

static void unload(fixture *x) {
  free(x->c);
  hlo_module_free(x->mod);
}

/* ---- helpers ---------------------------------------------------------------- */

static bool tile_used(const fixture *x, int dim, int64_t t) {
  for (int i = 0; i < x->n; i++)
    if (x->c[i].tile[dim] == t)
      return true;
  return false;
}

/* This test's own legality rule for the output block (DESIGN.md §4): the
 * last two tile dims are multiples of (sublanes, 128) or the whole dim, and
 * the estimated working set is within the default's budget. */
static bool legal_default(const fixture *x, const dev_config *c, int sublanes) {
  int r = c->rank;
  if (r >= 1 && c->tile[r - 1] != x->f.dims[r - 1] && c->tile[r - 1] % 128 != 0)
    return false;
  if (r >= 2 && c->tile[r - 2] != x->f.dims[r - 2] && c->tile[r - 2] % sublanes != 0)
    return false;
  return dev_space_vmem_estimate(&x->f, &x->m, c) <= x->m.vmem_bytes / 2;
}

static bool has_order(const dev_config *c, const int *ord) {
  return memcmp(c->order, ord, sizeof(int) * (size_t)c->norder) == 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void same_fusion_same_list(void **state) {
  (void)state;
  const char *const mods[] = {loop_300x1000, row_sum, dot_f32, scatter_s8, sort_axis0, heads_3d};
  for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
    fixture a, b;
    load(&a, mods[i]);
    load(&b, mods[i]);
    assert_int_equal(a.n, b.n);
    for (int j = 0; j < a.n; j++)
      assert_true(dev_config_equal(&a.c[j], &b.c[j]));
    assert_true(dev_config_equal(&a.d, &b.d));
    unload(&a);
    unload(&b);
  }
}

static void bounded_unique_and_well_formed(void **state) {
  (void)state;
  const char *const mods[] = {loop_300x1000, row_sum, dot_f32, dot_bf16, qat_bf16, half_out,
                              scatter_s8, sort_axis0, scalar_sum, heads_3d};
  for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
    fixture x;
    load(&x, mods[i]);
    assert_true(x.n >= 1 && x.n <= DEV_SPACE_MAX);
    int implausible = 0;
    for (int j = 0; j < x.n; j++) {
      hlo_error err;
      if (dev_config_validate(&x.c[j], &err) != 0)
        fail_msg("candidate %d invalid: %s", j, err.msg);
      assert_int_equal(x.c[j].rank, x.f.rank);
      for (int k = 0; k < j; k++)
        assert_false(dev_config_equal(&x.c[j], &x.c[k]));
      /* the text form parses back to the same config */
      char text[DEV_CONFIG_TEXT_MAX];
      dev_config back;
      dev_config_print(&x.c[j], text, sizeof text);
      assert_int_equal(dev_config_parse(text, &back, &err), 0);
      assert_true(dev_config_equal(&back, &x.c[j]));
      implausible += !dev_space_plausible(&x.f, &x.m, &x.c[j]);
    }
    /* mostly legal: at most a quarter refused (the design aims at 1/8
     * beyond the one-knob-at-a-time coverage) */
    assert_true(implausible * 4 <= x.n);
    unload(&x);
  }
  /* the big spaces do hit the cap */
  fixture x;
  load(&x, dot_f32);
  assert_int_equal(x.n, DEV_SPACE_MAX);
  unload(&x);
}

static void default_is_first_and_legal(void **state) {
  (void)state;
  struct {
    const char *text;
    int sublanes;
  } cases[] = {{loop_300x1000, 8}, {row_sum, 8}, {dot_f32, 8}, {dot_bf16, 16}, {half_out, 16},
               {qat_bf16, 8}, {heads_3d, 8}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fixture x;
    load(&x, cases[i].text);
    assert_true(dev_config_equal(&x.c[0], &x.d));
    assert_true(legal_default(&x, &x.d, cases[i].sublanes));
    assert_true(dev_space_plausible(&x.f, &x.m, &x.d));
    assert_int_equal(x.d.buf, 2);
    assert_int_equal(x.d.pack, 1);
    assert_int_equal(x.d.prec, DEV_PREC_DEFAULT);
    assert_int_equal(x.d.flags, 0);
    for (int j = 0; j < x.d.rank; j++) /* natural order */
      assert_int_equal(x.d.order[j], j);
    dev_config alone;
    hlo_error err;
    assert_int_equal(dev_space_default(&x.f, &x.m, &alone, &err), 0);
    assert_true(dev_config_equal(&alone, &x.d));
    unload(&x);
  }
}

static void default_heuristic_picks(void **state) {
  (void)state;
  fixture x;
  load(&x, loop_300x1000); /* small enough: the whole array */
  assert_int_equal(x.d.tile[0], 300);
  assert_int_equal(x.d.tile[1], 1000);
  assert_int_equal(x.d.k, 0);
  unload(&x);
  load(&x, row_sum); /* 1000: no power of two >= 128 divides it, so all of it */
  assert_int_equal(x.d.k, 1000);
  assert_int_equal(x.d.order[x.d.norder - 1], DEV_ORDER_K);
  unload(&x);
  load(&x, dot_bf16); /* 768 > 512: the largest power of two dividing it */
  assert_int_equal(x.d.k, 256);
  unload(&x);
  load(&x, scalar_sum);
  assert_int_equal(x.d.rank, 0);
  char text[DEV_CONFIG_TEXT_MAX];
  dev_config_print(&x.d, text, sizeof text);
  assert_string_equal(text, "tile=1 k=512 buf=2 order=k pack=1 prec=default flags=none");
  unload(&x);
  /* the transposed parameter's second-minor dim (8) follows output dim 0, so
   * a leading tile of 1 would be an illegal block: the default widens it */
  load(&x, heads_3d);
  assert_int_equal(x.d.tile[0], 8);
  unload(&x);
  /* small minor tiles: leading dims grow to keep the output block near
   * 512 KiB (224x224x3 f32 is 588 KiB, so the batch dim stays 1 while the
   * 224 rows fill the block) */
  load(&x, "HloModule img\nENTRY main {\n  x = f32[4,224,224,3]{3,2,1,0} parameter(0)\n"
           "  ROOT n = f32[4,224,224,3]{3,2,1,0} negate(x)\n}\n");
  assert_int_equal(x.d.tile[3], 3);
  assert_int_equal(x.d.tile[2], 224);
  assert_true(x.d.tile[1] > 1 && 224 % x.d.tile[1] == 0);
  assert_true(x.d.tile[0] * x.d.tile[1] * 224 * 3 * 4 <= 512 << 10);
  unload(&x);
}

static void default_fits_half_of_a_small_vmem(void **state) {
  (void)state;
  /* Eight f32[2048,8192] inputs: 256x1024 tiles would need 17 MiB at buf=2,
   * more than half of tpu-v4's 16 MiB. */
  char text[2048];
  size_t at = (size_t)snprintf(text, sizeof text, "HloModule big\nENTRY main {\n");
  for (int i = 0; i < 8; i++)
    at += (size_t)snprintf(text + at, sizeof text - at, "  p%d = f32[2048,8192]{1,0} parameter(%d)\n", i, i);
  at += (size_t)snprintf(text + at, sizeof text - at, "  s1 = f32[2048,8192]{1,0} add(p0, p1)\n");
  for (int i = 2; i < 8; i++)
    at += (size_t)snprintf(text + at, sizeof text - at, "  s%d = f32[2048,8192]{1,0} add(s%d, p%d)\n", i, i - 1, i);
  snprintf(text + at, sizeof text - at, "  ROOT r = f32[2048,8192]{1,0} negate(s7)\n}\n");
  fixture v5e, v4;
  load_on(&v5e, text, "tpu-v5e");
  load_on(&v4, text, "tpu-v4");
  assert_int_equal(v5e.d.tile[0], 256);
  assert_int_equal(v5e.d.tile[1], 1024);
  assert_true(dev_space_vmem_estimate(&v4.f, &v4.m, &v4.d) <= v4.m.vmem_bytes / 2);
  assert_true(v4.d.tile[1] < 1024);       /* the minor dim shrank first */
  assert_int_equal(v4.d.tile[1] % 128, 0); /* keeping lane alignment */
  assert_int_equal(v4.d.tile[0], 256);
  unload(&v5e);
  unload(&v4);
}

static void tiles_for_300x1000(void **state) {
  (void)state;
  fixture x;
  load(&x, loop_300x1000);
  /* minor dim 1000 */
  assert_true(tile_used(&x, 1, 1000)); /* the full dim */
  assert_true(tile_used(&x, 1, 512));  /* a power of two (and multiple of 128) */
  assert_true(tile_used(&x, 1, 384));  /* a multiple of 128, not a power of two */
  bool ragged = false;
  for (int i = 0; i < x.n; i++)
    ragged = ragged || (x.c[i].tile[1] % 128 == 0 && 1000 % x.c[i].tile[1] != 0);
  assert_true(ragged);
  /* second-minor dim 300 */
  assert_true(tile_used(&x, 0, 300));
  assert_true(tile_used(&x, 0, 256));
  assert_true(tile_used(&x, 0, 24)); /* a multiple of 8 that leaves a remainder */
  for (int i = 0; i < x.n; i++) /* no tile is bigger than useful */
    assert_true(x.c[i].tile[0] <= 512 && x.c[i].tile[1] <= 2048);
  unload(&x);
}

static void sixteen_bit_types_use_sixteen_sublanes(void **state) {
  (void)state;
  fixture x;
  load(&x, half_out);
  dev_space_knobs kn;
  hlo_error err;
  assert_int_equal(dev_space_knobs_of(&x.f, &x.m, &kn, &err), 0);
  assert_int_equal(kn.sublanes, 16);
  assert_true(tile_used(&x, 0, 48)); /* 3 x 16 */
  assert_true(x.d.tile[0] == 200 || x.d.tile[0] % 16 == 0);
  unload(&x);
}

static void no_k_for_a_loop_fusion(void **state) {
  (void)state;
  const char *const mods[] = {loop_300x1000, qat_bf16, scatter_s8, sort_axis0, heads_3d};
  for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
    fixture x;
    load(&x, mods[i]);
    for (int j = 0; j < x.n; j++) {
      assert_int_equal(x.c[j].k, 0);
      assert_int_equal(x.c[j].norder, x.c[j].rank);
      assert_int_equal(x.c[j].pack, 1);
      assert_false(x.c[j].flags & DEV_FLAG_SPLIT_REDUCTION);
    }
    unload(&x);
  }
}

static void k_values_for_reductions(void **state) {
  (void)state;
  fixture x;
  load(&x, row_sum); /* k_total 1000 */
  bool full = false, pow2 = false, rag = false;
  for (int j = 0; j < x.n; j++) {
    int64_t k = x.c[j].k;
    assert_true(k > 0);
    full = full || k == 1000;
    pow2 = pow2 || (k < 1000 && (k & (k - 1)) == 0);
    rag = rag || 1000 % k != 0;
  }
  assert_true(full && pow2 && rag);
  unload(&x);
}

static void pack_only_for_reductions(void **state) {
  (void)state;
  const char *const red[] = {row_sum, dot_f32, scalar_sum};
  for (size_t i = 0; i < sizeof red / sizeof *red; i++) {
    fixture x;
    load(&x, red[i]);
    bool p2 = false, p4 = false;
    for (int j = 0; j < x.n; j++) {
      p2 = p2 || x.c[j].pack == 2;
      p4 = p4 || x.c[j].pack == 4;
    }
    assert_true(p2 && p4);
    unload(&x);
  }
}

static void prec_only_for_f32_dots(void **state) {
  (void)state;
  fixture x;
  load(&x, dot_f32);
  bool high = false, highest = false;
  for (int j = 0; j < x.n; j++) {
    high = high || x.c[j].prec == DEV_PREC_HIGH;
    highest = highest || x.c[j].prec == DEV_PREC_HIGHEST;
  }
  assert_true(high && highest);
  unload(&x);
  const char *const others[] = {dot_bf16, row_sum, loop_300x1000, qat_bf16};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    load(&x, others[i]);
    for (int j = 0; j < x.n; j++)
      assert_int_equal(x.c[j].prec, DEV_PREC_DEFAULT);
    unload(&x);
  }
}

static void flags_only_where_they_mean_something(void **state) {
  (void)state;
  struct {
    const char *text;
    unsigned flags;
  } cases[] = {
      {loop_300x1000, 0},
      {qat_bf16, DEV_FLAG_FUSE_CONVERTS},
      {row_sum, DEV_FLAG_SPLIT_REDUCTION},
      {dot_bf16, DEV_FLAG_SPLIT_REDUCTION},
      {scatter_s8, DEV_FLAG_VEC_SCATTER},
      {sort_axis0, DEV_FLAG_TWO_STAGE_SORT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fixture x;
    load(&x, cases[i].text);
    unsigned seen = 0;
    for (int j = 0; j < x.n; j++)
      seen |= x.c[j].flags;
    assert_int_equal(seen, cases[i].flags);
    unload(&x);
  }
}

static void every_knob_value_appears(void **state) {
  (void)state;
  const char *const mods[] = {loop_300x1000, row_sum, dot_f32, dot_bf16, qat_bf16, half_out,
                              scatter_s8, sort_axis0, scalar_sum, heads_3d};
  for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
    fixture x;
    load(&x, mods[i]);
    dev_space_knobs kn;
    hlo_error err;
    assert_int_equal(dev_space_knobs_of(&x.f, &x.m, &kn, &err), 0);
    for (int d = 0; d < kn.rank; d++)
      for (int v = 0; v < kn.tile[d].n; v++)
        if (!tile_used(&x, d, kn.tile[d].v[v]))
          fail_msg("module %zu: tile[%d]=%lld never used", i, d, (long long)kn.tile[d].v[v]);
    for (int v = 0; v < kn.k.n; v++) {
      bool used = false;
      for (int j = 0; j < x.n; j++)
        used = used || x.c[j].k == kn.k.v[v];
      assert_true(used);
    }
    for (int v = 0; v < kn.buf.n; v++) {
      bool used = false;
      for (int j = 0; j < x.n; j++)
        used = used || x.c[j].buf == kn.buf.v[v];
      assert_true(used);
    }
    for (int v = 0; v < kn.pack.n; v++) {
      bool used = false;
      for (int j = 0; j < x.n; j++)
        used = used || x.c[j].pack == kn.pack.v[v];
      assert_true(used);
    }
    for (int v = 0; v < kn.prec.n; v++) {
      bool used = false;
      for (int j = 0; j < x.n; j++)
        used = used || (int64_t)x.c[j].prec == kn.prec.v[v];
      assert_true(used);
    }
    for (int o = 0; o < kn.norders; o++) {
      bool used = false;
      for (int j = 0; j < x.n; j++)
        used = used || has_order(&x.c[j], kn.order[o]);
      assert_true(used);
    }
    for (unsigned b = 0; b < DEV_FLAG_COUNT; b++) {
      if (!(kn.flags & (1u << b)))
        continue;
      bool on = false, off = false;
      for (int j = 0; j < x.n; j++) {
        on = on || (x.c[j].flags & (1u << b));
        off = off || !(x.c[j].flags & (1u << b));
      }
      assert_true(on && off);
    }
    unload(&x);
  }
}

static void orders_natural_k_outer_and_swapped(void **state) {
  (void)state;
  fixture x;
  load(&x, dot_f32);
  dev_space_knobs kn;
  hlo_error err;
  assert_int_equal(dev_space_knobs_of(&x.f, &x.m, &kn, &err), 0);
  assert_int_equal(kn.norders, 3);
  const int natural[] = {0, 1, DEV_ORDER_K}, k_outer[] = {DEV_ORDER_K, 0, 1}, swapped[] = {1, 0, DEV_ORDER_K};
  assert_memory_equal(kn.order[0], natural, sizeof natural);
  assert_memory_equal(kn.order[1], k_outer, sizeof k_outer);
  assert_memory_equal(kn.order[2], swapped, sizeof swapped);
  unload(&x);
  load(&x, scalar_sum); /* one loop: a single order */
  assert_int_equal(dev_space_knobs_of(&x.f, &x.m, &kn, &err), 0);
  assert_int_equal(kn.norders, 1);
  unload(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_fusion_same_list),
      cmocka_unit_test(bounded_unique_and_well_formed),
      cmocka_unit_test(default_is_first_and_legal),
      cmocka_unit_test(default_heuristic_picks),
      cmocka_unit_test(default_fits_half_of_a_small_vmem),
      cmocka_unit_test(tiles_for_300x1000),
      cmocka_unit_test(sixteen_bit_types_use_sixteen_sublanes),
      cmocka_unit_test(no_k_for_a_loop_fusion),
      cmocka_unit_test(k_values_for_reductions),
      cmocka_unit_test(pack_only_for_reductions),
      cmocka_unit_test(prec_only_for_f32_dots),
      cmocka_unit_test(flags_only_where_they_mean_something),
      cmocka_unit_test(every_knob_value_appears),
      cmocka_unit_test(orders_natural_k_outer_and_swapped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
