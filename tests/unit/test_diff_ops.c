/* test_diff_ops.c — differential test of the ops the device computes with
 * its own lowering (issue 14): gather, scatter, sort, dynamic-slice,
 * dynamic-update-slice, reduce-window (one operand, or an argmax pool of
 * two), convolution, reduce with a general or variadic reducer, map and
 * select-and-scatter.
 *
 * Draws random small fusions of those ops from a seeded generator (shapes,
 * index types, windows, combiners, comparators, sort dimension and
 * stability, ties in the keys, window sizes, strides, padding and
 * dilations), synthesises their inputs (half of them
 * with out-of-range indices, so clamping and skipped windows are
 * exercised), evaluates them
 * once with the reference evaluator, and runs them on the clean device for
 * every legal config of their space.  These ops move data or combine in
 * index order, so the derived tolerance for them is zero: every output must
 * equal the reference bitwise (scatter combines repeated indices in index
 * order on both sides; a float sum in another order would be a finding).
 * Reduce-window folds each window in row-major order on both sides, and
 * convolution sums window positions row-major and features ascending with
 * full f32 products on both sides, so they are bitwise too.  A runtime error on the device is a failure too.
 *
 * Usage: test_diff_ops [FUSIONS [SEED]].  make check runs the quick mode
 * (108 fusions, 12 per op); `tests/unit/test_diff_ops 300` is the long mode,
 * which prints the number of (fusion, config) pairs it ran (over 10,000).
 * Exit 0 when nothing differs, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/backend_host.h"
#include "device/dev_backend.h"
#include "device/dev_fusion.h"
#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"

static uint64_t rng_state;

static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

/* uniform in [lo, hi] */
static int pick(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

static const char *index_type(void) {
  static const char *t[] = {"s32", "s64", "s8", "u8", "u32", "s16"};
  return t[pick(0, 5)];
}

/* The combiner computation for element type t, named comb. */
static int combiner(char *b, size_t n, const char *t) {
  switch (pick(0, 4)) {
  case 0:
    return snprintf(b, n, "comb {\n  a = %s[] parameter(0)\n  ROOT u = %s[] parameter(1)\n}\n", t, t);
  case 1:
    return snprintf(b, n, "comb {\n  a = %s[] parameter(0)\n  u = %s[] parameter(1)\n  ROOT m = %s[] maximum(a, u)\n}\n",
                    t, t, t);
  case 2: /* not a simple reducer: the device runs it as a lane program */
    return snprintf(b, n,
                    "comb {\n  a = %s[] parameter(0)\n  u = %s[] parameter(1)\n  m = %s[] multiply(u, u)\n"
                    "  ROOT s = %s[] subtract(a, m)\n}\n",
                    t, t, t, t);
  default:
    return snprintf(b, n, "comb {\n  a = %s[] parameter(0)\n  u = %s[] parameter(1)\n  ROOT s = %s[] add(a, u)\n}\n", t,
                    t, t);
  }
}

static void gen_gather(char *b, size_t n) {
  int R = pick(1, 40), C = pick(1, 40), B = pick(1, 24);
  const char *it = index_type();
  if (pick(0, 1)) { /* rows */
    int S = pick(1, C);
    snprintf(b, n,
             "HloModule diff_gather\nENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  p1 = %s[%d] parameter(1)\n"
             "  r = %s[%d,1] reshape(p1)\n  ROOT g = f32[%d,%d] gather(p0, r), offset_dims={1}, "
             "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,%d}\n}\n",
             R, C, it, B, it, B, B, S, S);
  } else { /* 2-D windows, start_index_map in either order */
    int h = pick(1, R), w = pick(1, C), sw = pick(0, 1);
    snprintf(b, n,
             "HloModule diff_gather2\nENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  p1 = %s[2,%d] parameter(1)\n"
             "  ROOT g = f32[%d,%d,%d] gather(p0, p1), offset_dims={1,2}, collapsed_slice_dims={}, "
             "start_index_map={%d,%d}, index_vector_dim=0, slice_sizes={%d,%d}\n}\n",
             R, C, it, B, B, h, w, sw, 1 - sw, h, w);
  }
}

static void gen_scatter(char *b, size_t n) {
  const char *t = pick(0, 3) ? "f32" : "s32", *it = index_type();
  char comb[512];
  combiner(comb, sizeof comb, t);
  int kind = pick(0, 2);
  if (kind == 0) { /* rows */
    int R = pick(1, 40), C = pick(1, 40), B = pick(1, 24);
    snprintf(b, n,
             "HloModule diff_scatter\n%sENTRY e {\n  p0 = %s[%d,%d] parameter(0)\n  p1 = %s[%d] parameter(1)\n"
             "  r = %s[%d,1] reshape(p1)\n  p2 = %s[%d,%d] parameter(2)\n  ROOT s = %s[%d,%d] scatter(p0, r, p2), "
             "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
             "to_apply=comb\n}\n",
             comb, t, R, C, it, B, it, B, t, B, C, t, R, C);
  } else if (kind == 1) { /* 2-D windows, some of which do not fit */
    int R = pick(2, 40), C = pick(2, 40), B = pick(1, 12), h = pick(1, R), w = pick(1, C);
    snprintf(b, n,
             "HloModule diff_scatter2\n%sENTRY e {\n  p0 = %s[%d,%d] parameter(0)\n  p1 = %s[%d,2] parameter(1)\n"
             "  p2 = %s[%d,%d,%d] parameter(2)\n  ROOT s = %s[%d,%d] scatter(p0, p1, p2), "
             "update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, "
             "index_vector_dim=1, to_apply=comb\n}\n",
             comb, t, R, C, it, B, t, B, h, w, t, R, C);
  } else { /* singleton: the vec-scatter candidates lower it as a one-hot select */
    int N = pick(1, 600);
    snprintf(b, n,
             "HloModule diff_scatter1\n%sENTRY e {\n  p0 = %s[%d] parameter(0)\n  p1 = %s[] parameter(1)\n"
             "  r = %s[1] reshape(p1)\n  p2 = %s[] parameter(2)\n  ROOT s = %s[%d] scatter(p0, r, p2), "
             "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=0, "
             "to_apply=comb\n}\n",
             comb, t, N, it, it, t, t, N);
  }
}

static void gen_sort(char *b, size_t n) {
  int two_stage = pick(0, 5) == 0; /* a major axis of 128*M: the two-stage lowering */
  int R = two_stage ? 128 * pick(2, 3) : pick(1, 60), C = two_stage ? pick(1, 3) : pick(1, 60);
  int D = two_stage ? 0 : pick(0, 1), stable = two_stage ? 0 : pick(0, 1), carried = pick(0, 3) != 0;
  const char *dir = pick(0, 1) ? "LT" : "GT", *ty = pick(0, 1) ? ", type=TOTALORDER" : "";
  char cmp[768];
  /* a lexicographic comparator: keys, then the carried index descending.
   * Its EQ compares like its order (TOTALORDER or not): mixing them (-0 and
   * +0 equal under FLOAT, ordered under TOTALORDER) is not a strict weak
   * order, and such a sort's result depends on the algorithm. */
  if (carried && pick(0, 2) == 0)
    snprintf(cmp, sizeof cmp,
             "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
             "  d = s32[] parameter(3)\n  lt = pred[] compare(a, b), direction=%s%s\n"
             "  eq = pred[] compare(a, b), direction=EQ%s\n  gt = pred[] compare(c, d), direction=GT\n"
             "  both = pred[] and(eq, gt)\n  ROOT r = pred[] or(lt, both)\n}\n",
             dir, ty, ty);
  else if (carried)
    snprintf(cmp, sizeof cmp,
             "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
             "  d = s32[] parameter(3)\n  ROOT lt = pred[] compare(a, b), direction=%s%s\n}\n",
             dir, ty);
  else
    snprintf(cmp, sizeof cmp,
             "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT lt = pred[] compare(a, b), "
             "direction=%s%s\n}\n",
             dir, ty);
  /* keys floor(3x): few distinct values, so ties are everywhere */
  char body[1024];
  if (carried)
    snprintf(body, sizeof body,
             "  i = s32[%d,%d] iota(), iota_dimension=%d\n  ROOT s = (f32[%d,%d], s32[%d,%d]) sort(k, i), "
             "dimensions={%d}, is_stable=%s, to_apply=cmp\n",
             R, C, D, R, C, R, C, D, stable ? "true" : "false");
  else
    snprintf(body, sizeof body, "  ROOT s = f32[%d,%d] sort(k), dimensions={%d}, is_stable=%s, to_apply=cmp\n", R, C, D,
             stable ? "true" : "false");
  snprintf(b, n,
           "HloModule diff_sort\n%sENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  three = f32[] constant(3)\n"
           "  t = f32[%d,%d] broadcast(three), dimensions={}\n  m = f32[%d,%d] multiply(p0, t)\n"
           "  k = f32[%d,%d] floor(m)\n%s}\n",
           cmp, R, C, R, C, R, C, R, C, body);
}

static void gen_dslice(char *b, size_t n) {
  int R = pick(1, 60), C = pick(1, 60), h = pick(1, R), w = pick(1, C);
  const char *it = index_type();
  if (pick(0, 1))
    snprintf(b, n,
             "HloModule diff_ds\nENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  p1 = %s[] parameter(1)\n"
             "  p2 = %s[] parameter(2)\n  ROOT d = f32[%d,%d] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={%d,%d}\n}\n",
             R, C, it, it, h, w, h, w);
  else
    snprintf(b, n,
             "HloModule diff_dus\nENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  p1 = f32[%d,%d] parameter(1)\n"
             "  p2 = %s[] parameter(2)\n  p3 = %s[] parameter(3)\n"
             "  ROOT d = f32[%d,%d] dynamic-update-slice(p0, p1, p2, p3)\n}\n",
             R, C, h, w, it, it, R, C);
}

/* The argmax reducer of gen_reduce: NaN first, then the larger value,
 * then the lower index on ties. */
#define ARGMAX_REDUCER                                                                                  \
  "am {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n"                                      \
  "  bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n  gt = pred[] compare(av, bv), direction=GT\n"  \
  "  ne = pred[] compare(av, av), direction=NE\n  eq = pred[] compare(av, bv), direction=EQ\n"          \
  "  lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n  g1 = pred[] or(gt, ne)\n" \
  "  keep = pred[] or(g1, tie)\n  v = f32[] select(keep, av, bv)\n  i = s32[] select(keep, ai, bi)\n"    \
  "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"

/* A reduce-window, one operand with a simple reducer, or (one in four) an
 * argmax pool: two operand/init pairs, a variadic reducer, a tuple. */
static void gen_window(char *b, size_t n) {
  int variadic = pick(0, 3) == 0;
  const char *t = variadic || pick(0, 3) ? "f32" : "s32";
  static const char *const red[3] = {"add", "maximum", "minimum"};
  const char *op = red[pick(0, 2)];
  int dims[2] = {pick(1, 40), pick(1, 40)}, out[2];
  char size[32], stride[32], pad[48], ld[32], rd[32];
  int sz[2], st[2], plo[2], phi[2], l[2], r[2];
  for (int d = 0; d < 2; d++) {
    sz[d] = pick(1, 5), st[d] = pick(1, 3), plo[d] = pick(0, 3), phi[d] = pick(0, 3);
    l[d] = pick(0, 3) ? 1 : 2, r[d] = pick(0, 3) ? 1 : 2;
    int base = (dims[d] - 1) * l[d] + 1 + plo[d] + phi[d], w = (sz[d] - 1) * r[d] + 1;
    if (base < w) /* pad the high end until one window fits */
      phi[d] += w - base, base = w;
    out[d] = (base - w) / st[d] + 1;
  }
  snprintf(size, sizeof size, "%dx%d", sz[0], sz[1]);
  snprintf(stride, sizeof stride, "%dx%d", st[0], st[1]);
  snprintf(pad, sizeof pad, "%d_%dx%d_%d", plo[0], phi[0], plo[1], phi[1]);
  snprintf(ld, sizeof ld, "%dx%d", l[0], l[1]);
  snprintf(rd, sizeof rd, "%dx%d", r[0], r[1]);
  if (variadic) {
    snprintf(b, n,
             "HloModule diff_window_argmax\n" ARGMAX_REDUCER
             "ENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  io = s32[%d,%d] iota(), iota_dimension=%d\n"
             "  ninf = f32[] constant(-inf)\n  none = s32[] constant(-1)\n"
             "  ROOT w = (f32[%d,%d], s32[%d,%d]) reduce-window(p0, io, ninf, none), window={size=%s stride=%s "
             "pad=%s lhs_dilate=%s rhs_dilate=%s}, to_apply=am\n}\n",
             dims[0], dims[1], dims[0], dims[1], pick(0, 1), out[0], out[1], out[0], out[1], size, stride, pad, ld,
             rd);
    return;
  }
  snprintf(b, n,
           "HloModule diff_window\nred {\n  a = %s[] parameter(0)\n  x = %s[] parameter(1)\n  ROOT r = %s[] %s(a, x)\n}\n"
           "ENTRY e {\n  p0 = %s[%d,%d] parameter(0)\n  p1 = %s[] parameter(1)\n"
           "  ROOT w = %s[%d,%d] reduce-window(p0, p1), window={size=%s stride=%s pad=%s lhs_dilate=%s rhs_dilate=%s}, "
           "to_apply=red\n}\n",
           t, t, t, op, t, dims[0], dims[1], t, t, out[0], out[1], size, stride, pad, ld, rd);
}

static void gen_conv(char *b, size_t n) {
  const char *t = pick(0, 3) ? "f32" : "s32";
  int N = pick(1, 3), H = pick(1, 12), W = pick(1, 12), G = pick(0, 3) ? 1 : 2, KI = pick(1, 4), CO = G * pick(1, 4);
  int in[2] = {H, W}, sz[2], st[2], plo[2], phi[2], l[2], r[2], out[2];
  for (int d = 0; d < 2; d++) {
    sz[d] = pick(1, 3), st[d] = pick(1, 2), plo[d] = pick(0, 2), phi[d] = pick(0, 2);
    l[d] = pick(0, 3) ? 1 : 2, r[d] = pick(0, 3) ? 1 : 2;
    int base = (in[d] - 1) * l[d] + 1 + plo[d] + phi[d], w = (sz[d] - 1) * r[d] + 1;
    if (base < w)
      phi[d] += w - base, base = w;
    out[d] = (base - w) / st[d] + 1;
  }
  snprintf(b, n,
           "HloModule diff_conv\nENTRY e {\n  p0 = %s[%d,%d,%d,%d] parameter(0)\n  p1 = %s[%d,%d,%d,%d] parameter(1)\n"
           "  ROOT c = %s[%d,%d,%d,%d] convolution(p0, p1), window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d "
           "lhs_dilate=%dx%d rhs_dilate=%dx%d}, dim_labels=b01f_01io->b01f, feature_group_count=%d\n}\n",
           t, N, H, W, KI * G, t, sz[0], sz[1], KI, CO, t, N, out[0], out[1], CO, sz[0], sz[1], st[0], st[1], plo[0],
           phi[0], plo[1], phi[1], l[0], l[1], r[0], r[1], G);
}

/* A reduce the device cannot fold elementally: an argmax (value, index)
 * pair with a NaN-propagating, lowest-index-on-ties reducer, or a sum of
 * squares written as one reducer. */
static void gen_reduce(char *b, size_t n) {
  int R = pick(1, 40), C = pick(1, 40), D = pick(0, 1), K = D ? C : R; /* keep dim D, reduce dim 1 - D */
  if (pick(0, 1))
    snprintf(b, n,
             "HloModule diff_argmax\n" ARGMAX_REDUCER
             "ENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  io = s32[%d,%d] iota(), iota_dimension=%d\n"
             "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
             "  ROOT r = (f32[%d], s32[%d]) reduce(p0, io, ninf, zero), dimensions={%d}, to_apply=am\n}\n",
             R, C, R, C, 1 - D, K, K, 1 - D);
  else
    snprintf(b, n,
             "HloModule diff_sumsq\nsq {\n  a = f32[] parameter(0)\n  x = f32[] parameter(1)\n"
             "  m = f32[] multiply(x, x)\n  ROOT s = f32[] add(a, m)\n}\n"
             "ENTRY e {\n  p0 = f32[%d,%d] parameter(0)\n  z = f32[] constant(0)\n"
             "  ROOT r = f32[%d] reduce(p0, z), dimensions={%d}, to_apply=sq\n}\n",
             R, C, K, 1 - D);
}

/* A map of one or two operands whose computation the device compiles into
 * a lane program: exact ops only (max, select on a compare, add and
 * multiply, integer subtract), so both sides must agree bitwise. */
static void gen_map(char *b, size_t n) {
  int R = pick(1, 40), C = pick(1, 40), body = pick(0, 3);
  const char *t = body == 3 ? "s32" : "f32";
  static const char *const bodies[4] = {
      "  z = f32[] constant(0)\n  ROOT r = f32[] maximum(x, z)\n",
      "  g = pred[] compare(x, y), direction=GT\n  ROOT r = f32[] select(g, x, y)\n",
      "  m = f32[] multiply(x, y)\n  ROOT r = f32[] add(m, x)\n",
      "  ROOT r = s32[] subtract(x, y)\n",
  };
  char yparam[64] = "", p1[96] = "";
  if (body != 0) {
    snprintf(yparam, sizeof yparam, "  y = %s[] parameter(1)\n", t);
    snprintf(p1, sizeof p1, "  p1 = %s[%d,%d] parameter(1)\n", t, R, C);
  }
  snprintf(b, n,
           "HloModule diff_map\nfn {\n  x = %s[] parameter(0)\n%s%s}\n"
           "ENTRY e {\n  p0 = %s[%d,%d] parameter(0)\n%s"
           "  ROOT m = %s[%d,%d] map(p0%s), dimensions={0,1}, to_apply=fn\n}\n",
           t, yparam, bodies[body], t, R, C, p1, t, R, C, body != 0 ? ", p1" : "");
}

/* A select-and-scatter: windows with strides and padding (overlapping or
 * not, some of padding only), select GE or LE (ties keep the first in
 * window order), scatter add, in f32 or s32.  Both sides combine a
 * position's sources in the source's row-major order, so bitwise. */
static void gen_selscat(char *b, size_t n) {
  const char *t = pick(0, 2) ? "f32" : "s32";
  const char *dir = pick(0, 1) ? "GE" : "LE";
  int dims[2] = {pick(1, 30), pick(1, 30)}, sz[2], st[2], plo[2], phi[2], out[2];
  for (int d = 0; d < 2; d++) {
    sz[d] = pick(1, 4), st[d] = pick(1, 3), plo[d] = pick(0, 2), phi[d] = pick(0, 2);
    int base = dims[d] + plo[d] + phi[d];
    if (base < sz[d])
      phi[d] += sz[d] - base, base = sz[d];
    out[d] = (base - sz[d]) / st[d] + 1;
  }
  snprintf(b, n,
           "HloModule diff_selscat\nsel {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n"
           "  ROOT c = pred[] compare(a, b), direction=%s\n}\n"
           "sct {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT s = %s[] add(a, b)\n}\n"
           "ENTRY e {\n  p0 = %s[%d,%d] parameter(0)\n  p1 = %s[%d,%d] parameter(1)\n  p2 = %s[] parameter(2)\n"
           "  ROOT r = %s[%d,%d] select-and-scatter(p0, p1, p2), window={size=%dx%d stride=%dx%d pad=%d_%dx%d_%d}, "
           "select=sel, scatter=sct\n}\n",
           t, t, dir, t, t, t, t, dims[0], dims[1], t, out[0], out[1], t, t, dims[0], dims[1], sz[0], sz[1], st[0],
           st[1], plo[0], phi[0], plo[1], phi[1]);
}

static int leaves(const hlo_value *v, const hlo_value **out, int max) {
  if (v->type != HLO_TUPLE) {
    if (max > 0)
      out[0] = v;
    return 1;
  }
  int n = 0;
  for (int i = 0; i < v->ntuple; i++)
    n += leaves(v->elems[i], out + n, max - n);
  return n;
}

enum { NOPS = 9 };

typedef struct stats {
  long fusions, pairs, differ, errors, compile_errors, skipped;
  long per_op[NOPS];
} stats;

static const char *const op_names[NOPS] = {"gather",      "scatter",        "sort", "dynamic-slice/dus", "reduce-window",
                                           "convolution", "general reduce", "map",  "select-and-scatter"};

static void run_one(const char *text, int op, uint64_t seed, const dev_machine *mach, stats *st) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  dev_fusion f;
  if (!m || dev_fusion_analyze(m, &f, &err) != 0) {
    printf("FAIL: generated module does not %s: %s\n%s", m ? "analyse" : "parse", err.msg, text);
    st->errors++;
    hlo_module_free(m);
    return;
  }
  f.host = NULL; /* the device computes these ops itself: a host call would be an error */
  int nargs = m->entry->nparams;
  hlo_value *args[8] = {0}, *ref = NULL;
  /* out-of-range indices half the time (clamping and skipped windows),
   * edge values (ties, signed zeros) or constrained ones otherwise */
  static const chk_inputs_profile profiles[4] = {CHK_INPUTS_OOB_INDICES, CHK_INPUTS_EDGE, CHK_INPUTS_OOB_INDICES,
                                                 CHK_INPUTS_CONSTRAINED};
  chk_inputs_opts io = {.seed = seed, .profile = profiles[seed % 4]};
  chk_eval_opts eo = {.replicas = 1, .emulate_device = 1};
  if (chk_inputs_make(m, &io, args, &err) != 0 || chk_eval_module(m, nargs, args, &eo, &ref, &err) != 0) {
    /* the reference refuses: nothing to compare the device with */
    st->skipped++;
    for (int i = 0; i < nargs; i++)
      hlo_value_unref(args[i]);
    hlo_module_free(m);
    return;
  }
  st->fusions++;
  const dev_backend *be = dev_sim_backend();
  dev_config *cands = NULL, dflt;
  int ncands = 0;
  if (be->space(&f, mach, &cands, &ncands, &dflt, &err) != 0) {
    printf("FAIL: space: %s\n%s", err.msg, text);
    st->errors++;
    ncands = 0;
  }
  for (int ci = -1; ci < ncands; ci++) {
    const dev_config *c = ci < 0 ? &dflt : &cands[ci];
    char ctext[DEV_CONFIG_TEXT_MAX], why[512];
    dev_config_print(c, ctext, sizeof ctext);
    dev_kernel *k = NULL;
    if (be->compile(&f, c, mach, NULL, &k, why, sizeof why) != DEV_OK) {
      st->compile_errors++;
      continue;
    }
    dev_run run;
    be->run(k, args, nargs, 7, &run);
    st->pairs++;
    st->per_op[op]++;
    if (run.status != DEV_OK) {
      printf("FAIL [%s]: runtime error: %s\n%s", ctext, run.message, text);
      st->errors++;
    } else {
      const hlo_value *dl[16], *rl[16];
      int nd = leaves(run.out, dl, 16), nr = leaves(ref, rl, 16), same = nd == nr && nd <= 16;
      for (int j = 0; same && j < nd; j++)
        same = hlo_value_equal(dl[j], rl[j]);
      if (!same) {
        printf("DIFFERS [%s] (input seed %llu)\n%s", ctext, (unsigned long long)seed, text);
        st->differ++;
      }
      hlo_value_unref(run.out);
    }
    be->release(k);
  }
  free(cands);
  hlo_value_unref(ref);
  for (int i = 0; i < nargs; i++)
    hlo_value_unref(args[i]);
  hlo_module_free(m);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  long nfus = argc > 1 ? atol(argv[1]) : 12 * NOPS;
  rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 0x5eed14;
  if (rng_state == 0)
    rng_state = 1;
  dev_machine mach;
  hlo_error err;
  if (dev_machine_find("tpu-v5e", &mach, &err) != 0) {
    printf("FAIL: machine: %s\n", err.msg);
    return 1;
  }
  stats st = {0};
  static char text[8192];
  for (long i = 0; i < nfus; i++) {
    int op = (int)(i % NOPS);
    switch (op) {
    case 0: gen_gather(text, sizeof text); break;
    case 1: gen_scatter(text, sizeof text); break;
    case 2: gen_sort(text, sizeof text); break;
    case 3: gen_dslice(text, sizeof text); break;
    case 4: gen_window(text, sizeof text); break;
    case 5: gen_conv(text, sizeof text); break;
    case 6: gen_reduce(text, sizeof text); break;
    case 7: gen_map(text, sizeof text); break;
    default: gen_selscat(text, sizeof text); break;
    }
    run_one(text, op, rnd(), &mach, &st);
  }
  printf("%ld fusions, %ld (fusion, config) pairs run (", st.fusions, st.pairs);
  for (int k = 0; k < NOPS; k++)
    printf("%s%s %ld", k ? ", " : "", op_names[k], st.per_op[k]);
  printf("); %ld differ from the reference, %ld errors; %ld compile errors, %ld fusions the reference refused\n",
         st.differ, st.errors, st.compile_errors, st.skipped);
  if (st.fusions == 0)
    return 1;
  return st.differ || st.errors ? 1 : 0;
}
