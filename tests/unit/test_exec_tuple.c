/* test_exec_tuple.c — the executor's tuple outputs: a kernel whose root is
 * a nested tuple, and one whose root is a tuple-shaped op (a variadic
 * sort), come back as values nested like the root's shape, each leaf
 * holding what HLO semantics give (worked out by hand below). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_exec.h"
#include "hlo/hlo_parse.h"

typedef struct fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
  dev_schedule s;
} fx;

static void load(fx *x, const char *text, const char *cfgtext) {
  hlo_error err;
  x->m = hlo_parse(text, strlen(text), &err);
  if (!x->m)
    fail_msg("parse: %s", err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &x->mach, &err), 0);
  dev_config c;
  if (dev_config_parse(cfgtext, &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  char why[256];
  if (dev_lower(&x->f, &c, &x->mach, &x->s, why, sizeof why) != 0)
    fail_msg("lower: %s", why);
}

static void unload(fx *x) {
  dev_schedule_free(&x->s);
  hlo_module_free(x->m);
}

/* (x + 1, (x * 2, convert(x) to s32)) on x[i][j] = i * 128 + j, tiled 8x128
 * over 16x256 (four tiles). */
static void nested_tuple_root(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nENTRY e {\n  p = f32[16,256] parameter(0)\n  one = f32[] constant(1)\n"
       "  two = f32[] constant(2)\n  b1 = f32[16,256] broadcast(one), dimensions={}\n"
       "  b2 = f32[16,256] broadcast(two), dimensions={}\n  a = f32[16,256] add(p, b1)\n"
       "  m = f32[16,256] multiply(p, b2)\n  c = s32[16,256] convert(p)\n"
       "  inner = (f32[16,256], s32[16,256]) tuple(m, c)\n"
       "  ROOT t = (f32[16,256], (f32[16,256], s32[16,256])) tuple(a, inner)\n}\n",
       "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none");
  int64_t dims[2] = {16, 256};
  hlo_value *p = hlo_value_array(HLO_F32, 2, dims);
  for (int i = 0; i < 16 * 256; i++)
    ((float *)p->data)[i] = (float)i;
  dev_run r;
  dev_exec_run(&x.s, NULL, &p, 1, 1, NULL, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(r.out->type, HLO_TUPLE);
  assert_int_equal(r.out->ntuple, 2);
  const hlo_value *a = r.out->elems[0], *in = r.out->elems[1];
  assert_int_equal(a->type, HLO_F32);
  assert_int_equal(in->type, HLO_TUPLE);
  assert_int_equal(in->ntuple, 2);
  const hlo_value *m = in->elems[0], *c = in->elems[1];
  assert_int_equal(m->type, HLO_F32);
  assert_int_equal(c->type, HLO_S32);
  for (int i = 0; i < 16 * 256; i++) {
    assert_true(((const float *)a->data)[i] == (float)i + 1.0f);
    assert_true(((const float *)m->data)[i] == (float)i * 2.0f);
    assert_int_equal(((const int32_t *)c->data)[i], i);
  }
  hlo_value_unref(r.out);
  hlo_value_unref(p);
  unload(&x);
}

/* A variadic sort by key, the values following: keys [3, 1, 2, 0] with
 * values [10, 20, 30, 40] give ([0, 1, 2, 3], [40, 20, 30, 10]). */
static void variadic_sort_root(void **state) {
  (void)state;
  fx x;
  load(&x,
       "HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
       "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
       "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
       "ENTRY e {\n  k = f32[4] parameter(0)\n  v = s32[4] parameter(1)\n"
       "  ROOT s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=lt\n}\n",
       "tile=4 k=0 buf=2 order=0 pack=1 prec=default flags=none");
  int64_t n = 4;
  hlo_value *k = hlo_value_array(HLO_F32, 1, &n), *v = hlo_value_array(HLO_S32, 1, &n);
  const float keys[4] = {3, 1, 2, 0};
  const int32_t vals[4] = {10, 20, 30, 40};
  memcpy(k->data, keys, sizeof keys);
  memcpy(v->data, vals, sizeof vals);
  hlo_value *args[2] = {k, v};
  dev_run r;
  dev_exec_run(&x.s, NULL, args, 2, 1, NULL, &r);
  if (r.status != DEV_OK)
    fail_msg("run: %s", r.message);
  assert_int_equal(r.out->type, HLO_TUPLE);
  assert_int_equal(r.out->ntuple, 2);
  const float want_k[4] = {0, 1, 2, 3};
  const int32_t want_v[4] = {40, 20, 30, 10};
  for (int i = 0; i < 4; i++) {
    assert_true(((const float *)r.out->elems[0]->data)[i] == want_k[i]);
    assert_int_equal(((const int32_t *)r.out->elems[1]->data)[i], want_v[i]);
  }
  hlo_value_unref(r.out);
  hlo_value_unref(k);
  hlo_value_unref(v);
  unload(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nested_tuple_root),
      cmocka_unit_test(variadic_sort_root),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
