/* test_dev_host.c — the device's host evaluator (dev_host.h), handed in
 * dev_fusion.host: what the device does not compute itself (a collective
 * it has no lowering for, here an all-reduce whose reducer calls another
 * computation, evaluated as the kernel cut at it for every replica; a
 * single op it has no lowering for, here a map whose computation is no
 * lane program) goes to that host and nowhere else, and what it does
 * compute (an all-reduce with a lane-program reducer, replica-id, a
 * fusion nested in the kernel, a variadic reduce-window,
 * select-and-scatter, a map whose computation calls others and holds a
 * conditional, a reduce and an all-reduce whose reducer calls another
 * computation) never does.
 *
 *   no host     the op is refused with a runtime error that says so,
 *               never a crash and never a silent answer; the all-reduce
 *               kernel runs without one, on the device's own collective;
 *   a fake      its answer is what the device uses, and it is asked with
 *               the fusion's replicas and rng seed and the device's
 *               numerics;
 *   tune's      (tn_backend_host, the reference) gives what HLO semantics
 *               give, worked out by hand below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run/backend_host.h"
#include "device/dev_exec.h"
#include "hlo/hlo_parse.h"

/* replica r's kernel computes x = p + r, all-reduces it over 4 replicas
 * (sum: 4p + 0+1+2+3 = 4p + 6) and halves that: 2p + 3. */
static const char *const all_reduce_text =
    "HloModule m, replica_count=4\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  r = u32[] replica-id()\n  rf = f32[] convert(r)\n"
    "  rb = f32[8,128] broadcast(rf), dimensions={}\n  x = f32[8,128] add(p, rb)\n"
    "  ar = f32[8,128] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=add\n"
    "  half = f32[] constant(0.5)\n  hb = f32[8,128] broadcast(half), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(ar, hb)\n}\n";

/* A scalar computation that adds a and b through complex numbers:
 * re((a + 0i) + (b + 0i)) = a + b.  Complex values are no lane program
 * (dev_lane.h), so the device lowers no op that calls it. */
#define VIACOMPLEX                                                                                                  \
  "viacomplex {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  z = f32[] constant(0)\n"                      \
  "  ca = c64[] complex(a, z)\n  cb = c64[] complex(b, z)\n  s = c64[] add(ca, cb)\n  ROOT r = f32[] real(s)\n}\n"

/* The same all-reduce with a reducer that adds through complex numbers,
 * which is no lane program (dev_lane.h), so the device does not lower
 * this collective; the host folds it to the same 2p + 3. */
static const char *const call_reducer_text =
    "HloModule m, replica_count=4\n" VIACOMPLEX
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  r = u32[] replica-id()\n  rf = f32[] convert(r)\n"
    "  rb = f32[8,128] broadcast(rf), dimensions={}\n  x = f32[8,128] add(p, rb)\n"
    "  ar = f32[8,128] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=viacomplex\n"
    "  half = f32[] constant(0.5)\n  hb = f32[8,128] broadcast(half), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(ar, hb)\n}\n";

/* map(p, q) whose computation adds through complex numbers: p + q, then
 * the device's own add of 1.  Complex values are no lane program
 * (dev_lane.h), so the device does not lower this map. */
static const char *const map_text =
    "HloModule m\n" VIACOMPLEX
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n"
    "  m = f32[8,128] map(p, q), dimensions={0,1}, to_apply=viacomplex\n"
    "  one = f32[] constant(1)\n  ob = f32[8,128] broadcast(one), dimensions={}\n"
    "  ROOT y = f32[8,128] add(m, ob)\n}\n";

/* The same map with add itself as its computation, a lane program: the
 * device computes it (dev_map.c) and never asks the host. */
static const char *const lane_map_text =
    "HloModule m\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n"
    "  m = f32[8,128] map(p, q), dimensions={0,1}, to_apply=add\n"
    "  one = f32[] constant(1)\n  ob = f32[8,128] broadcast(one), dimensions={}\n"
    "  ROOT y = f32[8,128] add(m, ob)\n}\n";

/* A map whose computation calls a computation that calls another, and
 * holds a conditional: s = call(viacall)(a, b) = a + b (viacall calls
 * add); if s < 1000 the true branch doubles it, else the false branch
 * subtracts 1000; the kernel adds 1.  With p = i, q = i + 100, s = 2i + 100:
 * i < 450 gives 4i + 201, else 2i - 899.  A lane program (dev_lane.h). */
static const char *const call_cond_map_text =
    "HloModule m\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "viacall {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] call(a, b), to_apply=add\n}\n"
    "dbl {\n  x = f32[] parameter(0)\n  ROOT d = f32[] add(x, x)\n}\n"
    "less {\n  x = f32[] parameter(0)\n  k = f32[] constant(1000)\n  ROOT d = f32[] subtract(x, k)\n}\n"
    "f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  s = f32[] call(a, b), to_apply=viacall\n"
    "  k = f32[] constant(1000)\n  lt = pred[] compare(s, k), direction=LT\n"
    "  ROOT c = f32[] conditional(lt, s, s), true_computation=dbl, false_computation=less\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n"
    "  m = f32[8,128] map(p, q), dimensions={0,1}, to_apply=f\n"
    "  one = f32[] constant(1)\n  ob = f32[8,128] broadcast(one), dimensions={}\n"
    "  ROOT y = f32[8,128] add(m, ob)\n}\n";

/* all_reduce_text with a reducer that calls add: the device inlines the
 * call into its lane program (dev_lane.h) and folds the replicas itself,
 * to the same 2p + 3. */
static const char *const call_add_reducer_text =
    "HloModule m, replica_count=4\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "viacall {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] call(a, b), to_apply=add\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  r = u32[] replica-id()\n  rf = f32[] convert(r)\n"
    "  rb = f32[8,128] broadcast(rf), dimensions={}\n  x = f32[8,128] add(p, rb)\n"
    "  ar = f32[8,128] all-reduce(x), replica_groups={{0,1,2,3}}, to_apply=viacall\n"
    "  half = f32[] constant(0.5)\n  hb = f32[8,128] broadcast(half), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(ar, hb)\n}\n";

/* A reduce whose reducer calls add, over each row of p = i, broadcast back
 * along the rows and added to q = i + 100: row r sums 128r + c over c,
 * 16384r + 8128 (integers below 2^24: exact in any order), so element i
 * of row r is 16384r + 8128 + i + 100.  A lane program reducer. */
static const char *const call_reduce_text =
    "HloModule m\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "viacall {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] call(a, b), to_apply=add\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n  z = f32[] constant(0)\n"
    "  r = f32[8] reduce(p, z), dimensions={1}, to_apply=viacall\n"
    "  rb = f32[8,128] broadcast(r), dimensions={0}\n"
    "  ROOT y = f32[8,128] add(rb, q)\n}\n";

/* A fusion nested in the kernel, (p + q) * 2, then the kernel's add of 1:
 * the device computes the nested fusion with its own evaluator. */
static const char *const nested_text =
    "HloModule m\n"
    "inner {\n  a = f32[8,128] parameter(0)\n  b = f32[8,128] parameter(1)\n  s = f32[8,128] add(a, b)\n"
    "  two = f32[] constant(2)\n  tb = f32[8,128] broadcast(two), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(s, tb)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n"
    "  n = f32[8,128] fusion(p, q), kind=kLoop, calls=inner\n"
    "  one = f32[] constant(1)\n  ob = f32[8,128] broadcast(one), dimensions={}\n"
    "  ROOT y = f32[8,128] add(n, ob)\n}\n";

/* A nested fusion holding the map of map_text, doubled: the device
 * computes the fusion, and asks the host for the map alone. */
static const char *const nested_map_text =
    "HloModule m\n" VIACOMPLEX
    "inner {\n  a = f32[8,128] parameter(0)\n  b = f32[8,128] parameter(1)\n"
    "  m = f32[8,128] map(a, b), dimensions={0,1}, to_apply=viacomplex\n"
    "  two = f32[] constant(2)\n  tb = f32[8,128] broadcast(two), dimensions={}\n"
    "  ROOT y = f32[8,128] multiply(m, tb)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n"
    "  n = f32[8,128] fusion(p, q), kind=kLoop, calls=inner\n"
    "  one = f32[] constant(1)\n  ob = f32[8,128] broadcast(one), dimensions={}\n"
    "  ROOT y = f32[8,128] add(n, ob)\n}\n";

/* A reduce-window of two operand/init pairs and a tuple result (a sum of
 * p and a max of q over each element and its left neighbour), then the
 * kernel's add of the two: with p = i, q = i + 100 (i the flat index),
 * 3i + 99, or 2i + 100 in column 0, whose window holds one element. */
static const char *const variadic_window_text =
    "HloModule m\n"
    "summax {\n  as = f32[] parameter(0)\n  am = f32[] parameter(1)\n  xs = f32[] parameter(2)\n"
    "  xm = f32[] parameter(3)\n  s = f32[] add(as, xs)\n  mx = f32[] maximum(am, xm)\n"
    "  ROOT t = (f32[], f32[]) tuple(s, mx)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n  z = f32[] constant(0)\n"
    "  n = f32[] constant(-inf)\n"
    "  w = (f32[8,128], f32[8,128]) reduce-window(p, q, z, n), window={size=1x2 pad=0_0x1_0}, to_apply=summax\n"
    "  s = f32[8,128] get-tuple-element(w), index=0\n  x = f32[8,128] get-tuple-element(w), index=1\n"
    "  ROOT y = f32[8,128] add(s, x)\n}\n";

/* select-and-scatter over windows of an element and its right neighbour
 * (pad 0_1), select = (a >= b), scatter = add, source q, init 0: p = i
 * grows along a row, so window c picks column c + 1, and the last column's
 * window (its neighbour is padding) picks itself.  Column 0 keeps 0,
 * columns 1..126 get q[i-1] = i + 99, column 127 gets q[i-1] + q[i] =
 * 2i + 199. */
static const char *const select_scatter_text =
    "HloModule m\n"
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  p = f32[8,128] parameter(0)\n  q = f32[8,128] parameter(1)\n  z = f32[] constant(0)\n"
    "  ROOT r = f32[8,128] select-and-scatter(p, q, z), window={size=1x2 pad=0_0x0_1}, select=ge, scatter=add\n}\n";

#define N (8 * 128)

typedef struct fx {
  hlo_module *m;
  dev_fusion f;
  dev_machine mach;
  dev_schedule s;
  hlo_value *args[2];
  int nargs;
} fx;

static void load(fx *x, const char *text, int nargs, const dev_host *host, uint64_t seed) {
  hlo_error err;
  x->m = hlo_parse(text, strlen(text), &err);
  if (!x->m)
    fail_msg("parse: %s", err.msg);
  assert_int_equal(dev_fusion_analyze(x->m, &x->f, &err), 0);
  x->f.host = host;
  x->f.rng_seed = seed;
  assert_int_equal(dev_machine_find("tpu-v5e", &x->mach, &err), 0);
  dev_config c;
  if (dev_config_parse("tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none", &c, &err) != 0)
    fail_msg("config: %s", err.msg);
  char why[256];
  if (dev_lower(&x->f, &c, &x->mach, &x->s, why, sizeof why) != 0)
    fail_msg("lower: %s", why);
  int64_t dims[2] = {8, 128};
  x->nargs = nargs;
  for (int a = 0; a < nargs; a++) {
    x->args[a] = hlo_value_array(HLO_F32, 2, dims);
    for (int i = 0; i < N; i++) /* small integers: every sum below is exact */
      ((float *)x->args[a]->data)[i] = (float)(i + 100 * a);
  }
}

static void unload(fx *x) {
  for (int a = 0; a < x->nargs; a++)
    hlo_value_unref(x->args[a]);
  dev_schedule_free(&x->s);
  hlo_module_free(x->m);
}

static void run(fx *x, dev_run *r) { dev_exec_run(&x->s, NULL, x->args, x->nargs, 1, NULL, r); }

/* ---- a fake host: answers 42 everywhere and remembers how it was asked -- */

static struct {
  int calls;
  hlo_opcode root_op;
  int nargs;
  dev_host_opts o;
} seen;

static int fake_evaluate(const hlo_module *m, int nargs, hlo_value *const *args, const dev_host_opts *o,
                         hlo_value **out, hlo_error *err) {
  (void)args;
  (void)err;
  seen.calls++;
  seen.root_op = m->entry->root->op;
  seen.nargs = nargs;
  seen.o = *o;
  hlo_value *v = hlo_value_from_shape(&m->entry->root->shape);
  for (int64_t i = 0; i < v->count; i++)
    hlo_value_set_f64(v, i, 42);
  *out = v;
  return 0;
}

static const dev_host fake = {.evaluate = fake_evaluate};

static void expect_refused(const char *text, int nargs, const char *what) {
  fx x;
  load(&x, text, nargs, NULL, 0);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_RUNTIME_ERROR);
  assert_null(r.out);
  if (!strstr(r.message, what) || !strstr(r.message, "needs a host evaluator"))
    fail_msg("unexpected message: %s", r.message);
  unload(&x);
}

static void no_host_refuses_collective(void **state) {
  (void)state;
  expect_refused(call_reducer_text, 1, "ar: all-reduce");
}

/* The all-reduce needs no host: replica-id and the collective are the
 * device's own, and replica 0 gets 2p + 3 as worked out above. */
static void no_host_computes_all_reduce(void **state) {
  (void)state;
  fx x;
  load(&x, all_reduce_text, 1, NULL, 0);
  dev_run r;
  run(&x, &r);
  if (r.status != DEV_OK)
    fail_msg("run: %s", r.message);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 2.0f * (float)i + 3.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

static void no_host_refuses_map(void **state) {
  (void)state;
  expect_refused(map_text, 2, "m: map");
}

static void fake_host_answers_collective(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  fx x;
  load(&x, call_reducer_text, 1, &fake, 77);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_OK);
  /* only the kernel cut at the all-reduce: replica-id is the device's */
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.root_op, HLO_OP_ALL_REDUCE);
  assert_int_equal(seen.nargs, 1);
  assert_int_equal(seen.o.replicas, 4);
  assert_int_equal(seen.o.emulate_device, 1);
  assert_true(seen.o.rng_seed == 77);
  assert_null(seen.o.hook);
  for (int i = 0; i < N; i++) /* the host's 42, halved by the device */
    assert_true(((const float *)r.out->data)[i] == 21.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

/* With a fake host, the all-reduce kernel never asks it. */
static void fake_host_not_asked_for_all_reduce(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  fx x;
  load(&x, all_reduce_text, 1, &fake, 77);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(seen.calls, 0);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 2.0f * (float)i + 3.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

static void fake_host_answers_map(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  fx x;
  load(&x, map_text, 2, &fake, 5);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.root_op, HLO_OP_MAP);
  assert_int_equal(seen.nargs, 2);
  assert_int_equal(seen.o.replicas, 1);
  assert_true(seen.o.rng_seed == 5);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 43.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

/* With a fake host, a map whose computation is a lane program never asks
 * it: p + q + 1 with p = i, q = i + 100, by the device alone. */
static void fake_host_not_asked_for_lane_map(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  fx x;
  load(&x, lane_map_text, 2, &fake, 5);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(seen.calls, 0);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 2.0f * (float)i + 101.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

/* A nested fusion is the device's own: without a host, and without
 * asking a fake one, (p + q) * 2 + 1 with p = i, q = i + 100 is 4i + 201. */
static void nested_fusion_on_the_device(void **state) {
  (void)state;
  for (int with_fake = 0; with_fake < 2; with_fake++) {
    memset(&seen, 0, sizeof seen);
    fx x;
    load(&x, nested_text, 2, with_fake ? &fake : NULL, 5);
    dev_run r;
    run(&x, &r);
    if (r.status != DEV_OK)
      fail_msg("run: %s", r.message);
    assert_int_equal(seen.calls, 0);
    for (int i = 0; i < N; i++)
      assert_true(((const float *)r.out->data)[i] == 4.0f * (float)i + 201.0f);
    hlo_value_unref(r.out);
    unload(&x);
  }
  /* what the nested computation holds that the device does not lower goes
   * to the host, alone: the fake's 42 for the map, doubled, plus 1 */
  memset(&seen, 0, sizeof seen);
  fx x;
  load(&x, nested_map_text, 2, &fake, 5);
  dev_run r;
  run(&x, &r);
  assert_int_equal(r.status, DEV_OK);
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.root_op, HLO_OP_MAP);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 85.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

/* Variadic reduce-window and select-and-scatter are the device's own:
 * without a host, and without asking a fake one, the hand values above. */
static void windowed_ops_on_the_device(void **state) {
  (void)state;
  for (int op = 0; op < 2; op++)
    for (int with_fake = 0; with_fake < 2; with_fake++) {
      memset(&seen, 0, sizeof seen);
      fx x;
      load(&x, op ? select_scatter_text : variadic_window_text, 2, with_fake ? &fake : NULL, 5);
      dev_run r;
      run(&x, &r);
      if (r.status != DEV_OK)
        fail_msg("run: %s", r.message);
      assert_int_equal(seen.calls, 0);
      for (int i = 0; i < N; i++) {
        int c = i % 128;
        float want = op == 0 ? (c == 0 ? 2.0f * (float)i + 100.0f : 3.0f * (float)i + 99.0f)
                             : (c == 0 ? 0.0f : c < 127 ? (float)i + 99.0f : 2.0f * (float)i + 199.0f);
        if (((const float *)r.out->data)[i] != want)
          fail_msg("op %d element %d: %g, want %g", op, i, ((const float *)r.out->data)[i], want);
      }
      hlo_value_unref(r.out);
      unload(&x);
    }
}

/* What a scalar computation calls (nested calls, a conditional, a
 * reducer calling another computation, in a reduce and in an all-reduce)
 * is the device's own: without a host, and without asking a fake one,
 * the hand values above. */
static void called_computations_on_the_device(void **state) {
  (void)state;
  for (int k = 0; k < 3; k++)
    for (int with_fake = 0; with_fake < 2; with_fake++) {
      memset(&seen, 0, sizeof seen);
      fx x;
      const char *text = k == 0 ? call_cond_map_text : k == 1 ? call_reduce_text : call_add_reducer_text;
      load(&x, text, k == 2 ? 1 : 2, with_fake ? &fake : NULL, 5);
      dev_run r;
      run(&x, &r);
      if (r.status != DEV_OK)
        fail_msg("run: %s", r.message);
      assert_int_equal(seen.calls, 0);
      for (int i = 0; i < N; i++) {
        float want = k == 2   ? 2.0f * (float)i + 3.0f
                     : k == 1 ? 16384.0f * (float)(i / 128) + 8128.0f + (float)i + 100.0f
                     : i < 450 ? 4.0f * (float)i + 201.0f
                               : 2.0f * (float)i - 899.0f;
        if (((const float *)r.out->data)[i] != want)
          fail_msg("case %d element %d: %g, want %g", k, i, ((const float *)r.out->data)[i], want);
      }
      hlo_value_unref(r.out);
      unload(&x);
    }
}

/* text (an all-reduce of x = p + r over 4 replicas, halved) run with
 * tune's host: replica 0's view is 2p + 3. */
static void expect_reference_all_reduce(const char *text) {
  fx x;
  load(&x, text, 1, tn_backend_host(), 0);
  dev_run r;
  run(&x, &r);
  if (r.status != DEV_OK)
    fail_msg("run: %s", r.message);
  for (int i = 0; i < N; i++)
    assert_true(((const float *)r.out->data)[i] == 2.0f * (float)i + 3.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

static void reference_host_all_reduce(void **state) {
  (void)state;
  expect_reference_all_reduce(all_reduce_text);
}

static void reference_host_call_reducer(void **state) {
  (void)state;
  expect_reference_all_reduce(call_reducer_text);
}

static void reference_host_map(void **state) {
  (void)state;
  fx x;
  load(&x, map_text, 2, tn_backend_host(), 0);
  dev_run r;
  run(&x, &r);
  if (r.status != DEV_OK)
    fail_msg("run: %s", r.message);
  for (int i = 0; i < N; i++) /* p + q + 1 with p = i, q = i + 100 */
    assert_true(((const float *)r.out->data)[i] == 2.0f * (float)i + 101.0f);
  hlo_value_unref(r.out);
  unload(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_host_refuses_collective), cmocka_unit_test(no_host_computes_all_reduce),
      cmocka_unit_test(no_host_refuses_map), cmocka_unit_test(fake_host_answers_collective),
      cmocka_unit_test(fake_host_not_asked_for_all_reduce), cmocka_unit_test(fake_host_answers_map),
      cmocka_unit_test(reference_host_all_reduce), cmocka_unit_test(reference_host_map),
      cmocka_unit_test(fake_host_not_asked_for_lane_map), cmocka_unit_test(reference_host_call_reducer),
      cmocka_unit_test(nested_fusion_on_the_device), cmocka_unit_test(windowed_ops_on_the_device),
      cmocka_unit_test(called_computations_on_the_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
