/* gen.c — the fusion generator (gen.h).
 *
 * Everything is emitted as HLO text into one fused computation; the entry
 * computation passes its parameters through one fusion instruction.  The
 * last instruction emitted is the root.  A value is a name with an element
 * type and dimensions; builders take the type and dimensions they must
 * produce and emit whatever operands that needs, so the text is well typed
 * by construction (the verifier is the test of that, in make check).
 */
#include "gen.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_hash.h"

/* ---- element types --------------------------------------------------------- */

typedef struct {
  const char *name;
  char cls; /* 'f' float, 's' signed, 'u' unsigned, 'p' pred */
  int bits;
} ty;

/* C64 comes last: only the fft template makes one, from complex(). */
enum { F32, BF16, F16, F8E4, F8E5, S32, S8, U8, U32, S4, U4, S16, PRED, C64, NTY };
static const ty TY[NTY] = {{"f32", 'f', 32}, {"bf16", 'f', 16}, {"f16", 'f', 16}, {"f8e4m3fn", 'f', 8},
                           {"f8e5m2", 'f', 8}, {"s32", 's', 32}, {"s8", 's', 8},  {"u8", 'u', 8},
                           {"u32", 'u', 32},  {"s4", 's', 4},   {"u4", 'u', 4},   {"s16", 's', 16},
                           {"pred", 'p', 8},  {"c64", 'c', 64}};

static bool is_float(int t) { return TY[t].cls == 'f'; }

/* The range a float is clamped to before it is converted to integer type
 * t: the type's own, except s32/u32 whose ends no 16-bit float holds. */
static void int_range(int t, double *lo, double *hi) {
  int b = TY[t].bits;
  if (TY[t].cls == 's') {
    *lo = b >= 32 ? -16777216.0 : -(double)(1ll << (b - 1));
    *hi = b >= 32 ? 16777216.0 : (double)((1ll << (b - 1)) - 1);
  } else {
    *lo = 0;
    *hi = b >= 32 ? 16777216.0 : (double)((1ll << b) - 1);
  }
}

/* ---- text building --------------------------------------------------------- */

typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} sb;

__attribute__((format(printf, 2, 3))) static void sb_printf(sb *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if (b->p && (size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)w;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
}

/* ---- the generator's state ------------------------------------------------- */

#define MAX_RANK 4
#define MAX_PARAMS 16
#define ELEM_CAP 32768 /* elements of any one array */
#define DOT_CAP (1 << 22)

typedef struct {
  char name[16];
  int t;
  int rank;
  int64_t d[MAX_RANK];
} val;

enum { R_ADD, R_MAX, R_MIN, R_COUNT };
static const char *const RNAME[R_COUNT] = {"add", "maximum", "minimum"};

typedef struct {
  uint64_t s;
  const tn_covmap *cov;
  sb body, regions;
  bool made[R_COUNT][NTY];
  char rnames[R_COUNT][NTY][32];
  bool made_argmax, made_set;
  int nparams;
  val params[MAX_PARAMS];
  char playout[MAX_PARAMS][32];
  int next;
  size_t root_off;
  val last; /* the last instruction emitted: the root */
  bool last_is_param;
} gen;

static uint64_t rnd(gen *g) {
  uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int below(gen *g, int n) { return n <= 1 ? 0 : (int)(rnd(g) % (uint64_t)n); }
static bool chance(gen *g, int one_in) { return below(g, one_in) == 0; }

/* Of two options drawn, the one whose coverage key was seen less. */
static int pick(gen *g, int n, const char *const *names, const char *tyname) {
  int a = below(g, n), b = below(g, n);
  if (!g->cov || a == b)
    return a;
  char ka[96], kb[96];
  snprintf(ka, sizeof ka, "op:%s:%s", names[a], tyname);
  snprintf(kb, sizeof kb, "op:%s:%s", names[b], tyname);
  return tn_covmap_count(g->cov, kb) < tn_covmap_count(g->cov, ka) ? b : a;
}

static int64_t elems(int rank, const int64_t *d) {
  int64_t e = 1;
  for (int i = 0; i < rank; i++)
    e *= d[i];
  return e;
}

/* Sizes that break tilers, with the common ones too. */
static const int64_t SIZES[] = {1,  2,  3,   5,   7,   8,   9,   13,  16,  17,  31,  32,  64,  77,
                                100, 127, 128, 129, 136, 200, 255, 256, 257, 300, 384, 512, 1000};
#define NSIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static int64_t draw_dim(gen *g) { return SIZES[below(g, NSIZES)]; }

static void draw_shape(gen *g, int rank, int64_t cap, int64_t *d) {
  for (int tries = 0;; tries++) {
    for (int i = 0; i < rank; i++)
      d[i] = draw_dim(g);
    if (elems(rank, d) <= cap)
      return;
    if (tries > 16) /* shrink the largest until it fits */
      while (elems(rank, d) > cap) {
        int big = 0;
        for (int i = 1; i < rank; i++)
          if (d[i] > d[big])
            big = i;
        d[big] = d[big] / 2 > 0 ? d[big] / 2 : 1;
      }
    if (elems(rank, d) <= cap)
      return;
  }
}

static void shape_text(int t, int rank, const int64_t *d, const char *layout, char *out, size_t n) {
  int w = snprintf(out, n, "%s[", TY[t].name);
  for (int i = 0; i < rank && w > 0 && (size_t)w < n; i++)
    w += snprintf(out + w, n - (size_t)w, "%s%lld", i ? "," : "", (long long)d[i]);
  if (w < 0 || (size_t)w >= n)
    return;
  if (rank == 0) {
    snprintf(out + w, n - (size_t)w, "]");
    return;
  }
  if (layout) {
    snprintf(out + w, n - (size_t)w, "]%s", layout);
    return;
  }
  w += snprintf(out + w, n - (size_t)w, "]{");
  for (int i = rank - 1; i >= 0 && (size_t)w < n; i--)
    w += snprintf(out + w, n - (size_t)w, "%d%s", i, i ? "," : "}");
}

static val mkval(gen *g, int t, int rank, const int64_t *d, const char *prefix) {
  val v;
  memset(&v, 0, sizeof v);
  snprintf(v.name, sizeof v.name, "%s%d", prefix, g->next++);
  v.t = t;
  v.rank = rank;
  for (int i = 0; i < rank; i++)
    v.d[i] = d[i];
  return v;
}

/* One instruction; the op text follows the shape. */
__attribute__((format(printf, 5, 6))) static val emit(gen *g, int t, int rank, const int64_t *d, const char *fmt,
                                                      ...) {
  val v = mkval(g, t, rank, d, "v");
  char shape[160], op[1024];
  shape_text(t, rank, d, NULL, shape, sizeof shape);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(op, sizeof op, fmt, ap);
  va_end(ap);
  g->root_off = g->body.n;
  g->last = v;
  g->last_is_param = false;
  sb_printf(&g->body, "  %s = %s %s\n", v.name, shape, op);
  return v;
}

static val param(gen *g, int t, int rank, const int64_t *d) {
  /* Reuse one of the same type and shape now and then (and always when no
   * more may be made), so that values meet again downstream. */
  for (int i = 0; i < g->nparams; i++) {
    const val *p = &g->params[i];
    if (p->t == t && p->rank == rank && elems(rank, d) == elems(p->rank, p->d) &&
        memcmp(p->d, d, sizeof *d * (size_t)rank) == 0 && (g->nparams >= MAX_PARAMS || chance(g, 3)))
      return *p;
  }
  if (g->nparams >= MAX_PARAMS) { /* none to reuse: a broadcast constant */
    val c = emit(g, t, 0, d, "constant(%s)", TY[t].cls == 'p' ? "true" : "1");
    return rank == 0 ? c : emit(g, t, rank, d, "broadcast(%s), dimensions={}", c.name);
  }
  int k = g->nparams;
  val v = mkval(g, t, rank, d, "p");
  /* A layout other than the default now and then. */
  char layout[32] = "";
  if (rank >= 2 && chance(g, 8)) {
    int perm[MAX_RANK];
    for (int i = 0; i < rank; i++)
      perm[i] = i;
    for (int i = rank - 1; i > 0; i--) {
      int j = below(g, i + 1), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    int w = snprintf(layout, sizeof layout, "{");
    for (int i = 0; i < rank; i++)
      w += snprintf(layout + w, sizeof layout - (size_t)w, "%d%s", perm[i], i + 1 < rank ? "," : "}");
  }
  snprintf(g->playout[k], sizeof g->playout[k], "%s", layout);
  char shape[160];
  shape_text(t, rank, d, layout[0] ? layout : NULL, shape, sizeof shape);
  g->root_off = g->body.n;
  g->last = v;
  g->last_is_param = true;
  sb_printf(&g->body, "  %s = %s parameter(%d)\n", v.name, shape, k);
  g->params[g->nparams++] = v;
  return v;
}

static val scalar_const(gen *g, int t, const char *text) {
  int64_t none[1] = {0};
  return emit(g, t, 0, none, "constant(%s)", text);
}

static val bcast_const(gen *g, int t, int rank, const int64_t *d, const char *text) {
  val c = scalar_const(g, t, text);
  if (rank == 0)
    return c;
  return emit(g, t, rank, d, "broadcast(%s), dimensions={}", c.name);
}

/* The scalar computation of a reduction op over type t. */
static const char *region(gen *g, int op, int t) {
  char *name = g->rnames[op][t];
  if (!g->made[op][t]) {
    g->made[op][t] = true;
    snprintf(name, sizeof g->rnames[op][t], "%s_%s", RNAME[op], TY[t].name);
    sb_printf(&g->regions, "%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  ROOT r = %s[] %s(a, b)\n}\n\n",
              name, TY[t].name, TY[t].name, TY[t].name, RNAME[op]);
  }
  return name;
}

static const char *init_text(int op, int t) {
  if (op == R_ADD)
    return "0";
  if (is_float(t))
    return op == R_MAX ? "-inf" : "inf";
  if (TY[t].cls == 'u')
    return op == R_MAX ? "0" : (TY[t].bits == 32 ? "4294967295" : "255");
  return op == R_MAX ? "-2147483648" : "2147483647";
}

/* ---- elementwise trees ------------------------------------------------------ */

static val fexpr(gen *g, int t, int rank, const int64_t *d, int depth);
static val iexpr(gen *g, int t, int rank, const int64_t *d, int depth);

static val expr(gen *g, int t, int rank, const int64_t *d, int depth) {
  return is_float(t) ? fexpr(g, t, rank, d, depth) : iexpr(g, t, rank, d, depth);
}

static val convert(gen *g, val x, int t) { return emit(g, t, x.rank, x.d, "convert(%s)", x.name); }

/* round, clamp into t's range, convert: a float -> integer convert with
 * defined results. */
static val float_to_int(gen *g, val x, int t) {
  double lo, hi;
  int_range(t, &lo, &hi);
  if (x.t == F16) { /* an f16 holds no 2^24: clamp to its finite range */
    lo = lo < -65504 ? -65504 : lo;
    hi = hi > 65504 ? 65504 : hi;
  }
  char l[32], h[32];
  snprintf(l, sizeof l, "%.17g", lo);
  snprintf(h, sizeof h, "%.17g", hi);
  val r = emit(g, x.t, x.rank, x.d, "round-nearest-even(%s)", x.name);
  val cl = bcast_const(g, x.t, x.rank, x.d, l), ch = bcast_const(g, x.t, x.rank, x.d, h);
  val c = emit(g, x.t, x.rank, x.d, "clamp(%s, %s, %s)", cl.name, r.name, ch.name);
  return convert(g, c, t);
}

/* |x| + 1: a divisor or logarithm operand the inputs cannot make zero. */
static val abs_plus_one(gen *g, val x) {
  val a = emit(g, x.t, x.rank, x.d, "abs(%s)", x.name);
  val one = bcast_const(g, x.t, x.rank, x.d, "1");
  return emit(g, x.t, x.rank, x.d, "add(%s, %s)", a.name, one.name);
}

static const char *const DIRS[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};

static val compare(gen *g, int t, int rank, const int64_t *d, int depth) {
  val a = expr(g, t, rank, d, depth), b = expr(g, t, rank, d, depth);
  return emit(g, PRED, rank, d, "compare(%s, %s), direction=%s", a.name, b.name, DIRS[below(g, 6)]);
}

/* Leaves: a parameter, a convert chain ending in t, an iota, a constant. */
static val leaf(gen *g, int t, int rank, const int64_t *d) {
  static const char *const kinds[] = {"parameter", "convert-from", "convert-round-trip", "iota", "broadcast"};
  int k = pick(g, 5, kinds, TY[t].name);
  if (k == 1) { /* from another type: floats from anything, ints from ints */
    static const int ffrom[] = {F32, BF16, F16, F8E4, F8E5, S8, U8, S32, S4, U4};
    static const int ifrom[] = {S32, S8, U8, U32, S4, U4, S16};
    int s = is_float(t) ? ffrom[below(g, 10)] : ifrom[below(g, 7)];
    if (s == t)
      return param(g, t, rank, d);
    return convert(g, param(g, s, rank, d), t);
  }
  if (k == 2) { /* t -> u -> t: u narrower or not; floats only go to ints
                   through float_to_int */
    static const int fvia[] = {F32, BF16, F16, F8E4, F8E5, S8, U8, S4, U4, S32};
    static const int ivia[] = {S8, U8, S4, U4, S16, S32, U32};
    int u = is_float(t) ? fvia[below(g, 10)] : ivia[below(g, 7)];
    val p = param(g, t, rank, d);
    if (u == t)
      return p;
    val m = is_float(t) && !is_float(u) ? float_to_int(g, p, u) : convert(g, p, u);
    return convert(g, m, t);
  }
  if (k == 3 && rank > 0) {
    int it = is_float(t) || TY[t].bits < 8 ? S32 : t;
    val i = emit(g, it, rank, d, "iota(), iota_dimension=%d", below(g, rank));
    return it == t ? i : convert(g, i, t);
  }
  if (k == 4) {
    static const char *const fc[] = {"0", "1", "-1", "0.5", "3", "-2.25", "1e-05"};
    static const char *const ic[] = {"0", "1", "3", "7", "100"};
    return bcast_const(g, t, rank, d, is_float(t) ? fc[below(g, 7)] : ic[below(g, 5)]);
  }
  return param(g, t, rank, d);
}

static val fexpr(gen *g, int t, int rank, const int64_t *d, int depth) {
  if (depth <= 0 || chance(g, 4))
    return leaf(g, t, rank, d);
  static const char *const ops[] = {"add",  "subtract", "multiply", "maximum",  "minimum",
                                    "negate", "abs",    "exponential", "tanh", "logistic",
                                    "sqrt",  "log",     "rsqrt",    "divide",   "select",
                                    "round-nearest-even", "floor", "clamp", "convert"};
  int op = pick(g, 19, ops, TY[t].name);
  const char *o = ops[op];
  if (op <= 4) {
    val a = fexpr(g, t, rank, d, depth - 1), b = fexpr(g, t, rank, d, depth - 1);
    return emit(g, t, rank, d, "%s(%s, %s)", o, a.name, b.name);
  }
  if (op == 5 || op == 6 || op == 8 || op == 9 || op == 15 || op == 16)
    return emit(g, t, rank, d, "%s(%s)", o, fexpr(g, t, rank, d, depth - 1).name);
  if (op == 7) { /* exp of a tanh: no overflow to argue about */
    val x = fexpr(g, t, rank, d, depth - 1);
    val th = emit(g, t, rank, d, "tanh(%s)", x.name);
    return emit(g, t, rank, d, "exponential(%s)", th.name);
  }
  if (op == 10) {
    val a = emit(g, t, rank, d, "abs(%s)", fexpr(g, t, rank, d, depth - 1).name);
    return emit(g, t, rank, d, "sqrt(%s)", a.name);
  }
  if (op == 11 || op == 12)
    return emit(g, t, rank, d, "%s(%s)", o, abs_plus_one(g, fexpr(g, t, rank, d, depth - 1)).name);
  if (op == 13) {
    val a = fexpr(g, t, rank, d, depth - 1);
    val b = abs_plus_one(g, fexpr(g, t, rank, d, depth - 1));
    return emit(g, t, rank, d, "divide(%s, %s)", a.name, b.name);
  }
  if (op == 14) {
    static const int cmpt[] = {F32, BF16, S32, U8, U32, S8};
    val p = compare(g, cmpt[below(g, 6)], rank, d, depth - 1);
    val a = fexpr(g, t, rank, d, depth - 1), b = fexpr(g, t, rank, d, depth - 1);
    return emit(g, t, rank, d, "select(%s, %s, %s)", p.name, a.name, b.name);
  }
  if (op == 17) {
    val lo = bcast_const(g, t, rank, d, "-1.5"), hi = bcast_const(g, t, rank, d, "2");
    val x = fexpr(g, t, rank, d, depth - 1);
    return emit(g, t, rank, d, "clamp(%s, %s, %s)", lo.name, x.name, hi.name);
  }
  /* a convert chain through another float type and back */
  static const int via[] = {F32, BF16, F16, F8E4, F8E5};
  int u = via[below(g, 5)];
  val x = fexpr(g, t, rank, d, depth - 1);
  return u == t ? x : convert(g, convert(g, x, u), t);
}

static val iexpr(gen *g, int t, int rank, const int64_t *d, int depth) {
  if (depth <= 0 || chance(g, 4))
    return leaf(g, t, rank, d);
  static const char *const ops[] = {"add", "subtract", "multiply", "maximum", "minimum",
                                    "and", "or",       "xor",      "select",  "from-float"};
  int op = pick(g, 10, ops, TY[t].name);
  if (op <= 7) {
    val a = iexpr(g, t, rank, d, depth - 1), b = iexpr(g, t, rank, d, depth - 1);
    return emit(g, t, rank, d, "%s(%s, %s)", ops[op], a.name, b.name);
  }
  if (op == 8) {
    static const int cmpt[] = {S32, U8, U32, S8, F32};
    val p = compare(g, cmpt[below(g, 5)], rank, d, depth - 1);
    val a = iexpr(g, t, rank, d, depth - 1), b = iexpr(g, t, rank, d, depth - 1);
    return emit(g, t, rank, d, "select(%s, %s, %s)", p.name, a.name, b.name);
  }
  return float_to_int(g, fexpr(g, chance(g, 2) ? F32 : BF16, rank, d, depth - 1), t);
}

/* ---- templates --------------------------------------------------------------- */

static const int FLOATS[] = {F32, F32, BF16, F16};

static void t_elementwise(gen *g) {
  static const int ts[] = {F32, BF16, F16, S32, U8, S8, U32};
  static const char *const names[] = {"f32", "bf16", "f16", "s32", "u8", "s8", "u32"};
  int t = ts[pick(g, 7, names, "elementwise")];
  int rank = 1 + below(g, 3);
  int64_t d[MAX_RANK];
  draw_shape(g, rank, ELEM_CAP, d);
  val x = expr(g, t, rank, d, 1 + below(g, 3));
  if (chance(g, 3)) /* a narrowing store */
    convert(g, x, is_float(t) ? BF16 : S32);
}

/* Reduces x over the dims set in mask; returns the result. */
static val reduce(gen *g, val x, unsigned mask, int op) {
  int64_t od[MAX_RANK];
  int orank = 0;
  char dl[64] = "";
  int w = 0;
  for (int i = 0; i < x.rank; i++) {
    if (mask >> i & 1u)
      w += snprintf(dl + w, sizeof dl - (size_t)w, "%s%d", w ? "," : "", i);
    else
      od[orank++] = x.d[i];
  }
  val init = scalar_const(g, x.t, init_text(op, x.t));
  return emit(g, x.t, orank, od, "reduce(%s, %s), dimensions={%s}, to_apply=%s", x.name, init.name, dl,
              region(g, op, x.t));
}

static void t_reduce(gen *g) {
  static const int ts[] = {F32, F32, BF16, S32, F16};
  int t = ts[below(g, 5)];
  int rank = 1 + below(g, 3);
  int64_t d[MAX_RANK];
  draw_shape(g, rank, ELEM_CAP, d);
  unsigned mask = 0;
  while (!mask) /* reduce one dimension mostly, all of them rarely */
    mask = rank == 1 || chance(g, 8) ? (1u << rank) - 1 : 1u << below(g, rank);
  if (rank == 3 && chance(g, 3))
    mask |= 1u << below(g, 3);
  if (mask == (1u << rank) - 1 && rank > 1 && !chance(g, 3))
    mask &= ~1u; /* keep an output dimension, usually */
  static const char *const rops[] = {"reduce-add", "reduce-max", "reduce-min", "reduce-argmax"};
  int op = pick(g, 4, rops, TY[t].name);
  if (op == 3 && rank >= 1) { /* variadic (value, index): NaN first, lowest index on ties */
    int ax = below(g, rank);
    val x = expr(g, F32, rank, d, below(g, 2));
    val io = emit(g, S32, rank, d, "iota(), iota_dimension=%d", ax);
    val ninf = scalar_const(g, F32, "-inf"), zero = scalar_const(g, S32, "0");
    if (!g->made_argmax) {
      g->made_argmax = true;
      sb_printf(&g->regions,
                "argmax_f32 {\n  a = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  b = f32[] parameter(2)\n"
                "  bi = s32[] parameter(3)\n  gt = pred[] compare(a, b), direction=GT\n"
                "  nan = pred[] compare(a, a), direction=NE\n  o1 = pred[] or(gt, nan)\n"
                "  eq = pred[] compare(a, b), direction=EQ\n  lt = pred[] compare(ai, bi), direction=LT\n"
                "  a2 = pred[] and(eq, lt)\n  take = pred[] or(o1, a2)\n  v = f32[] select(take, a, b)\n"
                "  i = s32[] select(take, ai, bi)\n  ROOT r = (f32[], s32[]) tuple(v, i)\n}\n\n");
    }
    int64_t od[MAX_RANK];
    int orank = 0;
    for (int i = 0; i < rank; i++)
      if (i != ax)
        od[orank++] = d[i];
    char s1[160], s2[160];
    shape_text(F32, orank, od, NULL, s1, sizeof s1);
    shape_text(S32, orank, od, NULL, s2, sizeof s2);
    val r = mkval(g, S32, orank, od, "v");
    g->root_off = g->body.n;
    sb_printf(&g->body, "  %s = (%s, %s) reduce(%s, %s, %s, %s), dimensions={%d}, to_apply=argmax_f32\n", r.name, s1,
              s2, x.name, io.name, ninf.name, zero.name, ax);
    emit(g, S32, orank, od, "get-tuple-element(%s), index=1", r.name);
    return;
  }
  val x = expr(g, t, rank, d, below(g, 3));
  val r = reduce(g, x, mask, op);
  if (chance(g, 2) && is_float(t)) {
    val s = bcast_const(g, t, r.rank, r.d, "0.125");
    emit(g, t, r.rank, r.d, "multiply(%s, %s)", r.name, s.name);
  }
}

/* x of shape [rows, cols] in f32 (from bf16 sometimes); the row axis last. */
static val rows_input(gen *g, int64_t *d) {
  draw_shape(g, 2, ELEM_CAP, d);
  int t = FLOATS[below(g, 4)];
  val x = fexpr(g, t, 2, d, below(g, 2));
  return t == F32 ? x : convert(g, x, F32);
}

static val bcast_rows(gen *g, val r, const int64_t *d) {
  return emit(g, r.t, 2, d, "broadcast(%s), dimensions={0}", r.name);
}

static void t_softmax(gen *g) {
  int64_t d[2];
  val x = rows_input(g, d);
  val m = reduce(g, x, 2u, R_MAX);
  val s = emit(g, F32, 2, d, "subtract(%s, %s)", x.name, bcast_rows(g, m, d).name);
  val e = emit(g, F32, 2, d, "exponential(%s)", s.name);
  val z = reduce(g, e, 2u, R_ADD);
  val y = emit(g, F32, 2, d, "divide(%s, %s)", e.name, bcast_rows(g, z, d).name);
  if (chance(g, 3))
    convert(g, y, BF16);
}

static void t_norm(gen *g) {
  int64_t d[2];
  val x = rows_input(g, d);
  char inv[32];
  snprintf(inv, sizeof inv, "%.9g", 1.0 / (double)d[1]);
  int64_t cd[1] = {d[1]};
  val gamma = param(g, F32, 1, cd);
  val gb = emit(g, F32, 2, d, "broadcast(%s), dimensions={1}", gamma.name);
  val centered = x;
  if (chance(g, 2)) { /* layer norm: subtract the mean first */
    val sum = reduce(g, x, 2u, R_ADD);
    val mean = emit(g, F32, 1, d, "multiply(%s, %s)", sum.name, bcast_const(g, F32, 1, d, inv).name);
    centered = emit(g, F32, 2, d, "subtract(%s, %s)", x.name, bcast_rows(g, mean, d).name);
  }
  val sq = emit(g, F32, 2, d, "multiply(%s, %s)", centered.name, centered.name);
  val ss = reduce(g, sq, 2u, R_ADD);
  val var = emit(g, F32, 1, d, "multiply(%s, %s)", ss.name, bcast_const(g, F32, 1, d, inv).name);
  val ve = emit(g, F32, 1, d, "add(%s, %s)", var.name, bcast_const(g, F32, 1, d, "1e-05").name);
  val rs = emit(g, F32, 1, d, "rsqrt(%s)", ve.name);
  val y = emit(g, F32, 2, d, "multiply(%s, %s)", centered.name, bcast_rows(g, rs, d).name);
  y = emit(g, F32, 2, d, "multiply(%s, %s)", y.name, gb.name);
  if (chance(g, 3))
    convert(g, y, BF16);
}

/* The s8 Gram matrix x^T x of a long x: diagonal sums of squares reach
 * past 2^24, where an f32 accumulation loses units; the s32 root is
 * compared bitwise. */
static void s8_gram(gen *g) {
  static const int64_t ks[] = {1001, 2049, 4099};
  static const int64_t ns[] = {1, 2, 3, 5, 7};
  int64_t xd[2] = {ks[below(g, 3)], ns[below(g, 5)]}, od[2] = {xd[1], xd[1]};
  /* dynamic quantisation of f32 values: the whole s8 range, as real int8 data */
  val f = param(g, F32, 2, xd);
  val x = float_to_int(g, emit(g, F32, 2, xd, "multiply(%s, %s)", f.name, bcast_const(g, F32, 2, xd, "127").name), S8);
  emit(g, S32, 2, od, "dot(%s, %s), lhs_contracting_dims={0}, rhs_contracting_dims={0}", x.name, x.name);
}

static void t_matmul(gen *g) {
  static const char *const kinds[] = {"dot-f32", "dot-bf16", "dot-s8", "dot-f32-batch", "dot-s8-gram"};
  int kind = pick(g, 5, kinds, "matmul");
  if (kind == 4) {
    s8_gram(g);
    return;
  }
  int batch = kind == 3 || chance(g, 4);
  int64_t b = batch ? SIZES[below(g, 8)] : 1, m, k, n;
  for (;;) {
    m = draw_dim(g);
    k = draw_dim(g);
    n = draw_dim(g);
    if (b * (m * k + k * n + m * n) <= ELEM_CAP && b * m * k * n <= DOT_CAP)
      break;
  }
  int in = kind == 1 ? BF16 : kind == 2 ? S8 : F32, acc = kind == 2 ? S32 : F32;
  int64_t ld[3], rd[3], od[3];
  int r = batch ? 3 : 2, o = batch;
  if (batch)
    ld[0] = rd[0] = od[0] = b;
  bool rt = chance(g, 3); /* rhs stored [n, k] */
  ld[o] = m;
  ld[o + 1] = k;
  rd[o] = rt ? n : k;
  rd[o + 1] = rt ? k : n;
  od[o] = m;
  od[o + 1] = n;
  val lhs = expr(g, in, r, ld, below(g, 2)), rhs = expr(g, in, r, rd, below(g, 2));
  char prec[64] = "";
  if (in == F32 && chance(g, 2)) {
    static const char *const p[] = {"default", "high", "highest"};
    const char *pp = p[below(g, 3)];
    snprintf(prec, sizeof prec, ", operand_precision={%s,%s}", pp, pp);
  }
  char bd[64] = "";
  if (batch)
    snprintf(bd, sizeof bd, "lhs_batch_dims={0}, rhs_batch_dims={0}, ");
  val y = emit(g, acc, r, od, "dot(%s, %s), %slhs_contracting_dims={%d}, rhs_contracting_dims={%d}%s", lhs.name,
               rhs.name, bd, o + 1, rt ? o + 1 : o, prec);
  if (acc == S32) /* dequantise */
    y = emit(g, F32, r, od, "multiply(%s, %s)", convert(g, y, F32).name, bcast_const(g, F32, r, od, "0.0078125").name);
  if (chance(g, 2)) { /* bias along n */
    int64_t nd[1] = {n};
    val bias = param(g, F32, 1, nd);
    val bb = emit(g, F32, r, od, "broadcast(%s), dimensions={%d}", bias.name, r - 1);
    y = emit(g, F32, r, od, "add(%s, %s)", y.name, bb.name);
  }
  static const char *const acts[] = {"none", "relu", "tanh", "logistic"};
  int a = pick(g, 4, acts, "epilogue");
  if (a == 1)
    y = emit(g, F32, r, od, "maximum(%s, %s)", y.name, bcast_const(g, F32, r, od, "0").name);
  else if (a >= 2)
    y = emit(g, F32, r, od, "%s(%s)", acts[a], y.name);
  if (chance(g, 3))
    convert(g, y, BF16);
}

static void t_quant(gen *g) {
  static const int qs[] = {S8, U8, S4, U4, F8E4, F8E5, BF16, F16};
  static const char *const names[] = {"s8", "u8", "s4", "u4", "f8e4m3fn", "f8e5m2", "bf16", "f16"};
  int q = qs[pick(g, 8, names, "quant")];
  int rank = 1 + below(g, 3);
  int64_t d[MAX_RANK];
  draw_shape(g, rank, ELEM_CAP, d);
  int t = chance(g, 3) ? BF16 : F32;
  val x = fexpr(g, t, rank, d, below(g, 2));
  val xs = emit(g, t, rank, d, "multiply(%s, %s)", x.name, bcast_const(g, t, rank, d, "16").name);
  val qv;
  if (is_float(q)) {
    const char *lim = q == F8E4 ? "448" : q == F8E5 ? "57344" : "60000";
    val lo = bcast_const(g, t, rank, d, q == F8E4 ? "-448" : q == F8E5 ? "-57344" : "-60000");
    val hi = bcast_const(g, t, rank, d, lim);
    val c = emit(g, t, rank, d, "clamp(%s, %s, %s)", lo.name, xs.name, hi.name);
    qv = convert(g, c, q);
  } else {
    qv = float_to_int(g, xs, q);
  }
  val dq = emit(g, t, rank, d, "multiply(%s, %s)", convert(g, qv, t).name, bcast_const(g, t, rank, d, "0.0625").name);
  if (chance(g, 2)) /* the quantisation residual, QAT style */
    emit(g, t, rank, d, "subtract(%s, %s)", x.name, dq.name);
}

static void t_movement(gen *g) {
  static const char *const kinds[] = {"transpose", "pad", "concatenate", "slice", "reshape"};
  int kind = pick(g, 5, kinds, "movement");
  int t = chance(g, 4) ? S32 : FLOATS[below(g, 4)];
  int rank = 2 + below(g, 2);
  int64_t d[MAX_RANK], od[MAX_RANK];
  draw_shape(g, rank, ELEM_CAP / 4, d);
  val x = param(g, t, rank, d), y;
  char txt[256];
  int w = 0;
  if (kind == 0) {
    int perm[MAX_RANK];
    for (int i = 0; i < rank; i++)
      perm[i] = i;
    for (int i = rank - 1; i > 0; i--) {
      int j = below(g, i + 1), s = perm[i];
      perm[i] = perm[j];
      perm[j] = s;
    }
    for (int i = 0; i < rank; i++) {
      od[i] = d[perm[i]];
      w += snprintf(txt + w, sizeof txt - (size_t)w, "%s%d", i ? "," : "", perm[i]);
    }
    y = emit(g, t, rank, od, "transpose(%s), dimensions={%s}", x.name, txt);
  } else if (kind == 1) {
    val c = scalar_const(g, t, "0");
    for (int i = 0; i < rank; i++) {
      int lo = below(g, 4), hi = below(g, 4), in = d[i] > 1 && chance(g, 4) ? 1 : 0;
      if (d[i] > 2 && chance(g, 5))
        lo = -1;
      od[i] = d[i] + lo + hi + (d[i] - 1) * in;
      w += snprintf(txt + w, sizeof txt - (size_t)w, "%s%d_%d_%d", i ? "x" : "", lo, hi, in);
    }
    if (elems(rank, od) > ELEM_CAP) { /* keep it small: no padding then */
      memcpy(od, d, sizeof od);
      w = 0;
      for (int i = 0; i < rank; i++)
        w += snprintf(txt + w, sizeof txt - (size_t)w, "%s0_0", i ? "x" : "");
    }
    y = emit(g, t, rank, od, "pad(%s, %s), padding=%s", x.name, c.name, txt);
  } else if (kind == 2) {
    int ax = below(g, rank), parts = 2 + below(g, 2);
    char names[256];
    int nw = snprintf(names, sizeof names, "%s", x.name);
    memcpy(od, d, sizeof od);
    for (int p = 1; p < parts; p++) {
      int64_t pd[MAX_RANK];
      memcpy(pd, d, sizeof pd);
      pd[ax] = SIZES[below(g, 14)];
      od[ax] += pd[ax];
      nw += snprintf(names + nw, sizeof names - (size_t)nw, ", %s", param(g, t, rank, pd).name);
    }
    y = emit(g, t, rank, od, "concatenate(%s), dimensions={%d}", names, ax);
  } else if (kind == 3) {
    for (int i = 0; i < rank; i++) {
      int64_t a = below(g, (int)(d[i] < 4 ? d[i] : 4)), s = chance(g, 4) ? 2 : 1;
      int64_t e = d[i] - below(g, (int)(d[i] - a < 3 ? d[i] - a : 3));
      if (e <= a)
        e = a + 1;
      od[i] = (e - a + s - 1) / s;
      w += snprintf(txt + w, sizeof txt - (size_t)w, "%s[%lld:%lld:%lld]", i ? ", " : "", (long long)a,
                    (long long)e, (long long)s);
    }
    y = emit(g, t, rank, od, "slice(%s), slice={%s}", x.name, txt);
  } else { /* merge the two minor dimensions */
    memcpy(od, d, sizeof od);
    od[rank - 2] = d[rank - 2] * d[rank - 1];
    y = emit(g, t, rank - 1, od, "reshape(%s)", x.name);
    rank--;
  }
  /* an elementwise epilogue over the moved data */
  if (chance(g, 2)) {
    val e = expr(g, t, rank, od, below(g, 2));
    emit(g, t, rank, od, "%s(%s, %s)", is_float(t) ? "add" : "maximum", y.name, e.name);
  }
}

/* A gather with batch dimensions (operand_batching_dims): per batch b, the
 * rows of table[b] that ids[b] names, as attention over a paged cache does. */
static void batched_gather(gen *g) {
  int64_t b = SIZES[1 + below(g, 8)], v = SIZES[4 + below(g, 16)], n = SIZES[below(g, 12)], dd = SIZES[below(g, 16)];
  while (b * v * dd > ELEM_CAP || b * n * dd > ELEM_CAP)
    dd = dd / 2 > 0 ? dd / 2 : 1, v = v / 2 > 1 ? v / 2 : 1;
  int64_t td[3] = {b, v, dd}, id2[2] = {b, n}, id3[3] = {b, n, 1}, od[3] = {b, n, dd};
  static const int its[] = {S32, S32, S8, U8};
  val table = param(g, F32, 3, td);
  val ids = param(g, its[below(g, 4)], 2, id2);
  val r = emit(g, ids.t, 3, id3, "reshape(%s)", ids.name);
  emit(g, F32, 3, od,
       "gather(%s, %s), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, "
       "start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,%lld}",
       table.name, r.name, (long long)dd);
}

static void t_gather_scatter(gen *g) {
  static const char *const kinds[] = {"gather", "scatter-add", "scatter-set", "dynamic-slice",
                                      "dynamic-update-slice", "scatter-singleton", "gather-batched"};
  int kind = pick(g, 7, kinds, "gather-scatter");
  if (kind == 6) {
    batched_gather(g);
    return;
  }
  if (kind == 5) { /* one element "set" at a narrow index, as paper Listing 1's bug2 */
    static const int its[] = {S8, U8, S32};
    static const int64_t ns[] = {100, 255, 256, 300, 512, 1000};
    int64_t n1[1] = {ns[below(g, 6)]}, one[1] = {1}, none[1] = {0};
    int it = its[below(g, 3)];
    val op = param(g, F32, 1, n1);
    val idx = param(g, it, 0, none);
    val r = emit(g, it, 1, one, "reshape(%s)", idx.name);
    val up = param(g, F32, 0, none);
    if (!g->made_set) {
      g->made_set = true;
      sb_printf(&g->regions, "set_f32 {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n\n");
    }
    emit(g, F32, 1, n1,
         "scatter(%s, %s, %s), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
         "index_vector_dim=0, to_apply=set_f32",
         op.name, r.name, up.name);
    return;
  }
  int64_t v = SIZES[4 + below(g, NSIZES - 4)], dd = SIZES[below(g, 20)];
  while (v * dd > ELEM_CAP)
    dd = dd / 2 > 0 ? dd / 2 : 1;
  int64_t td[2] = {v, dd};
  if (kind == 0) {
    int64_t b = SIZES[below(g, 16)];
    int64_t id1[1] = {b}, id2[2] = {b, 1}, od[2] = {b, dd};
    static const int its[] = {S32, S32, S8, U8};
    val table = param(g, F32, 2, td);
    val ids = param(g, its[below(g, 4)], 1, id1);
    val r = emit(g, ids.t, 2, id2, "reshape(%s)", ids.name);
    val y = emit(g, F32, 2, od,
                 "gather(%s, %s), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                 "index_vector_dim=1, slice_sizes={1,%lld}",
                 table.name, r.name, (long long)dd);
    if (chance(g, 2))
      emit(g, F32, 2, od, "multiply(%s, %s)", y.name, bcast_const(g, F32, 2, od, "8").name);
    return;
  }
  if (kind == 1 || kind == 2) {
    int64_t b = kind == 2 ? 1 : SIZES[below(g, 16)];
    int64_t id1[1] = {b}, id2[2] = {b, 1}, ud[2] = {b, dd};
    static const int its[] = {S32, S32, S8, U8};
    int it = its[below(g, 4)];
    val op = chance(g, 2) ? bcast_const(g, F32, 2, td, "0") : param(g, F32, 2, td);
    val ids = param(g, it, 1, id1);
    val r = emit(g, it, 2, id2, "reshape(%s)", ids.name);
    val up = param(g, F32, 2, ud);
    const char *comb = kind == 1 ? region(g, R_ADD, F32) : "set_f32";
    if (kind == 2 && !g->made_set) { /* a "set" combiner: the update wins */
      g->made_set = true;
      sb_printf(&g->regions, "set_f32 {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n\n");
    }
    emit(g, F32, 2, td,
         "scatter(%s, %s, %s), update_window_dims={1}, inserted_window_dims={0}, "
         "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%s",
         op.name, r.name, up.name, comb);
    return;
  }
  int64_t s0 = 1 + below(g, (int)v);
  int64_t none[1] = {0};
  val pos = param(g, S32, 0, none);
  if (chance(g, 2)) { /* a window ending at pos: the start can be negative and is clamped */
    char back[32];
    snprintf(back, sizeof back, "%lld", (long long)(s0 - 1));
    pos = emit(g, S32, 0, none, "subtract(%s, %s)", pos.name, scalar_const(g, S32, back).name);
  }
  val zero = scalar_const(g, S32, "0");
  val a = param(g, F32, 2, td);
  if (kind == 3) {
    int64_t od[2] = {s0, dd};
    val y = emit(g, F32, 2, od, "dynamic-slice(%s, %s, %s), dynamic_slice_sizes={%lld,%lld}", a.name, pos.name,
                 zero.name, (long long)s0, (long long)dd);
    if (chance(g, 2))
      emit(g, F32, 2, od, "multiply(%s, %s)", y.name, bcast_const(g, F32, 2, od, "0.5").name);
  } else {
    int64_t ud[2] = {s0, dd};
    val up = expr(g, F32, 2, ud, below(g, 2));
    emit(g, F32, 2, td, "dynamic-update-slice(%s, %s, %s, %s)", a.name, up.name, pos.name, zero.name);
  }
}

/* Key/value sort along a major axis mostly, an iota carried beside the
 * keys (paper Listing 1's bug3), stable or not. */
static void t_sort(gen *g) {
  static const int64_t rows[] = {7, 77, 128, 256, 300, 384, 512, 1024}; /* mostly 128*M */
  static const int64_t cols[] = {1, 2, 4, 8, 16};
  int64_t d[2] = {rows[below(g, 8)], cols[below(g, 5)]};
  int ax = chance(g, 8) ? 1 : 0;
  int kt = chance(g, 3) ? S32 : F32;
  val keys = param(g, kt, 2, d);
  val io = emit(g, S32, 2, d, "iota(), iota_dimension=%d", ax);
  char cmpname[32];
  snprintf(cmpname, sizeof cmpname, "less_%s_s32", TY[kt].name);
  sb_printf(&g->regions,
            "%s {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  c = s32[] parameter(2)\n"
            "  d = s32[] parameter(3)\n  ROOT lt = pred[] compare(a, b), direction=LT%s\n}\n\n",
            cmpname, TY[kt].name, TY[kt].name, is_float(kt) ? ", type=TOTALORDER" : "");
  char s1[160], s2[160];
  shape_text(kt, 2, d, NULL, s1, sizeof s1);
  shape_text(S32, 2, d, NULL, s2, sizeof s2);
  val srt = mkval(g, S32, 2, d, "v");
  g->root_off = g->body.n;
  sb_printf(&g->body, "  %s = (%s, %s) sort(%s, %s), dimensions={%d}, is_stable=%s, to_apply=%s\n", srt.name, s1,
            s2, keys.name, io.name, ax, chance(g, 4) ? "true" : "false", cmpname);
  emit(g, S32, 2, d, "get-tuple-element(%s), index=1", srt.name);
}

static void t_window(gen *g) {
  int rank = chance(g, 2) ? 2 : 4;
  int64_t d[MAX_RANK], od[MAX_RANK];
  draw_shape(g, rank, ELEM_CAP, d);
  int t = FLOATS[below(g, 4)];
  val x = fexpr(g, t, rank, d, below(g, 2));
  char size[64], stride[64], pad[96];
  int ws = 0, wt = 0, wp = 0;
  bool cumsum = rank == 2 && chance(g, 3);
  int op = cumsum ? R_ADD : chance(g, 2) ? R_MAX : R_ADD;
  for (int i = 0; i < rank; i++) {
    int64_t w = 1, s = 1, lo = 0, hi = 0;
    if (cumsum && i == 1) {
      w = d[1];
      lo = d[1] - 1;
    } else if (!cumsum && (rank == 2 || (i == 1 || i == 2))) {
      w = 1 + below(g, 3);
      s = 1 + below(g, 2);
      lo = below(g, (int)w);
      hi = below(g, (int)w);
      if (w > d[i] + lo + hi)
        w = 1;
    }
    od[i] = (d[i] + lo + hi - w) / s + 1;
    ws += snprintf(size + ws, sizeof size - (size_t)ws, "%s%lld", i ? "x" : "", (long long)w);
    wt += snprintf(stride + wt, sizeof stride - (size_t)wt, "%s%lld", i ? "x" : "", (long long)s);
    wp += snprintf(pad + wp, sizeof pad - (size_t)wp, "%s%lld_%lld", i ? "x" : "", (long long)lo, (long long)hi);
  }
  val init = scalar_const(g, t, init_text(op, t));
  emit(g, t, rank, od, "reduce-window(%s, %s), window={size=%s stride=%s pad=%s}, to_apply=%s", x.name, init.name,
       size, stride, pad, region(g, op, t));
}

typedef struct {
  int ns; /* spatial dimensions */
  int64_t n, groups, cin, cout;
  int64_t in[2], win[2], stride[2], lo[2], hi[2], ld[2], rdl[2], out[2];
} conv_geom;

/* One draw of a convolution's sizes; false when its arrays or its
 * multiply-adds exceed the caps, and the caller draws again. */
static bool draw_conv(gen *g, conv_geom *c) {
  /* input features up to 64, so that a contraction of 9 taps can span
   * more than one chunk of 128 or 256 */
  static const int64_t feats[] = {1, 2, 3, 4, 8, 16, 32, 64};
  static const int64_t spat[] = {1, 2, 3, 5, 7, 8, 9, 13, 16, 17};
  c->n = SIZES[below(g, 5)];
  c->cin = feats[below(g, 8)];
  c->cout = feats[below(g, 6)];
  c->groups = 1;
  if (chance(g, 3)) { /* grouped: both feature counts a multiple of the groups */
    c->groups = feats[below(g, 4)];
    c->cin *= c->groups;
    c->cout *= c->groups;
  }
  if (c->cin > 64 || c->cout > 64)
    return false;
  int64_t x_el = c->n * c->cin, o_el = c->n * c->cout, taps = 1;
  for (int i = 0; i < c->ns; i++) {
    c->in[i] = spat[below(g, 10)];
    c->win[i] = 1 + below(g, 3);
    c->stride[i] = chance(g, 3) ? 2 : 1;
    c->ld[i] = chance(g, 6) ? 2 : 1;  /* input dilation: a transposed conv */
    c->rdl[i] = c->win[i] > 1 && chance(g, 6) ? 2 : 1; /* window dilation: atrous */
    c->lo[i] = below(g, (int)c->win[i]);
    c->hi[i] = below(g, (int)c->win[i]);
    int64_t padded = (c->in[i] - 1) * c->ld[i] + 1 + c->lo[i] + c->hi[i];
    int64_t span = (c->win[i] - 1) * c->rdl[i] + 1;
    if (span > padded) { /* the window must fit once */
      c->win[i] = 1;
      c->rdl[i] = 1;
      span = 1;
    }
    c->out[i] = (padded - span) / c->stride[i] + 1;
    x_el *= c->in[i];
    o_el *= c->out[i];
    taps *= c->win[i];
  }
  return x_el <= ELEM_CAP && o_el <= ELEM_CAP && o_el * (c->cin / c->groups) * taps <= DOT_CAP;
}

/* A convolution: 1-D or 2-D, NHWC or NCHW, with strides, padding, input and
 * window dilation, and feature groups (depthwise among them) now and then. */
static void t_conv(gen *g) {
  conv_geom c;
  memset(&c, 0, sizeof c);
  c.ns = chance(g, 3) ? 1 : 2;
  bool nchw = chance(g, 3);
  int t = FLOATS[below(g, 4)];
  while (!draw_conv(g, &c))
    ;
  int ns = c.ns;
  int64_t groups = c.groups, cin = c.cin, cout = c.cout, n = c.n;
  const int64_t *in = c.in, *win = c.win, *stride = c.stride, *lo = c.lo, *hi = c.hi, *ld = c.ld, *rdl = c.rdl,
                *out = c.out;
  /* The text names each dimension: b batch, f feature, 0/1 spatial; the
   * kernel is [spatial..., i, o] for NHWC and [o, i, spatial...] for NCHW. */
  int rank = ns + 2;
  int64_t xd[MAX_RANK], kd[MAX_RANK], od[MAX_RANK];
  int s0 = nchw ? 2 : 1;
  xd[0] = od[0] = n;
  xd[nchw ? 1 : rank - 1] = cin;
  od[nchw ? 1 : rank - 1] = cout;
  for (int i = 0; i < ns; i++) {
    xd[s0 + i] = in[i];
    od[s0 + i] = out[i];
    kd[nchw ? 2 + i : i] = win[i];
  }
  kd[nchw ? 1 : ns] = cin / groups;
  kd[nchw ? 0 : ns + 1] = cout;
  const char *labels = nchw ? (ns == 1 ? "bf0_oi0->bf0" : "bf01_oi01->bf01")
                            : (ns == 1 ? "b0f_0io->b0f" : "b01f_01io->b01f");
  char size[32], str[32], pad[48], lhsd[32], rhsd[32];
  int a = 0, b = 0, pc = 0, e = 0, f = 0;
  bool any_ld = false, any_rd = false;
  for (int i = 0; i < ns; i++) {
    const char *x = i ? "x" : "";
    a += snprintf(size + a, sizeof size - (size_t)a, "%s%lld", x, (long long)win[i]);
    b += snprintf(str + b, sizeof str - (size_t)b, "%s%lld", x, (long long)stride[i]);
    pc += snprintf(pad + pc, sizeof pad - (size_t)pc, "%s%lld_%lld", x, (long long)lo[i], (long long)hi[i]);
    e += snprintf(lhsd + e, sizeof lhsd - (size_t)e, "%s%lld", x, (long long)ld[i]);
    f += snprintf(rhsd + f, sizeof rhsd - (size_t)f, "%s%lld", x, (long long)rdl[i]);
    any_ld |= ld[i] > 1;
    any_rd |= rdl[i] > 1;
  }
  char window[256];
  snprintf(window, sizeof window, "size=%s stride=%s pad=%s%s%s%s%s", size, str, pad, any_ld ? " lhs_dilate=" : "",
           any_ld ? lhsd : "", any_rd ? " rhs_dilate=" : "", any_rd ? rhsd : "");
  char fgc[48] = "";
  if (groups > 1)
    snprintf(fgc, sizeof fgc, ", feature_group_count=%lld", (long long)groups);
  val x = expr(g, t, rank, xd, below(g, 2));
  val k = param(g, t, rank, kd);
  val y = emit(g, t, rank, od, "convolution(%s, %s), window={%s}, dim_labels=%s%s", x.name, k.name, window, labels,
               fgc);
  static const char *const acts[] = {"none", "relu", "bias-relu"};
  int act = pick(g, 3, acts, "conv-epilogue");
  if (act == 2) {
    int64_t fd[1] = {cout};
    val bias = param(g, t, 1, fd);
    y = emit(g, t, rank, od, "add(%s, %s)", y.name,
             emit(g, t, rank, od, "broadcast(%s), dimensions={%d}", bias.name, nchw ? 1 : rank - 1).name);
  }
  if (act >= 1)
    emit(g, t, rank, od, "maximum(%s, %s)", y.name, bcast_const(g, t, rank, od, "0").name);
}

/* An fft along the minor dimension, batch rows in front: FFT or IFFT of a
 * c64 built with complex() from two f32 expressions, RFFT of an f32 one,
 * or IRFFT of a c64 half spectrum.  Lengths are composite (four-step can
 * split them, by the tile when it shares a factor) or prime; the root is
 * the transform, or now and then its real part. */
static void t_fft(gen *g) {
  static const int64_t LENS[] = {8, 16, 48, 64, 97, 100, 128, 256, 384, 1000};
  static const char *const kinds[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  int kind = pick(g, 4, kinds, "fft");
  int64_t n = LENS[below(g, 10)];
  int rank = chance(g, 3) ? 3 : 2;
  int64_t d[MAX_RANK];
  draw_shape(g, rank - 1, ELEM_CAP / (n + 1), d);
  int64_t half = n / 2 + 1, in_len = kind == 3 ? half : n, out_len = kind == 2 ? half : n;
  d[rank - 1] = in_len;
  val x;
  if (kind == 2) {
    x = expr(g, F32, rank, d, below(g, 2));
  } else {
    val re = expr(g, F32, rank, d, below(g, 2)), im = expr(g, F32, rank, d, below(g, 2));
    x = emit(g, C64, rank, d, "complex(%s, %s)", re.name, im.name);
  }
  int64_t od[MAX_RANK];
  memcpy(od, d, sizeof od);
  od[rank - 1] = out_len;
  int ot = kind == 3 ? F32 : C64;
  val y = emit(g, ot, rank, od, "fft(%s), fft_type=%s, fft_length={%lld}", x.name, kinds[kind], (long long)n);
  if (ot == C64 && chance(g, 3))
    emit(g, F32, rank, od, "real(%s)", y.name);
}

/* ---- the module --------------------------------------------------------------- */

static const char *const TNAMES[] = {
#define X(e, name) name,
    TN_FUZZ_TEMPLATE_LIST(X)
#undef X
};

const char *tn_fuzz_template_name(tn_fuzz_template t) {
  return t >= 0 && t < TN_FUZZ_TEMPLATE_COUNT ? TNAMES[t] : "?";
}

int tn_fuzz_template_from_name(const char *name) {
  for (int i = 0; i < TN_FUZZ_TEMPLATE_COUNT; i++)
    if (strcmp(TNAMES[i], name) == 0)
      return i;
  return -1;
}

char *tn_fuzz_generate(uint64_t seed, uint64_t index, unsigned templates, const tn_covmap *cov,
                       tn_fuzz_template *used) {
  gen g;
  memset(&g, 0, sizeof g);
  g.s = hlo_mix64(seed, index);
  g.cov = cov;
  int allowed[TN_FUZZ_TEMPLATE_COUNT], na = 0;
  for (int i = 0; i < TN_FUZZ_TEMPLATE_COUNT; i++)
    if (!templates || (templates >> i & 1u))
      allowed[na++] = i;
  if (na == 0)
    return NULL;
  /* of two templates drawn, the one checked less */
  int a = allowed[below(&g, na)], b = allowed[below(&g, na)];
  if (cov && a != b) {
    char ka[64], kb[64];
    snprintf(ka, sizeof ka, "tmpl:%s", TNAMES[a]);
    snprintf(kb, sizeof kb, "tmpl:%s", TNAMES[b]);
    if (tn_covmap_count(cov, kb) < tn_covmap_count(cov, ka))
      a = b;
  }
  switch ((tn_fuzz_template)a) {
  case TN_FUZZ_ELEMENTWISE:
    t_elementwise(&g);
    break;
  case TN_FUZZ_REDUCE:
    t_reduce(&g);
    break;
  case TN_FUZZ_SOFTMAX:
    t_softmax(&g);
    break;
  case TN_FUZZ_NORM:
    t_norm(&g);
    break;
  case TN_FUZZ_MATMUL:
    t_matmul(&g);
    break;
  case TN_FUZZ_QUANT:
    t_quant(&g);
    break;
  case TN_FUZZ_MOVEMENT:
    t_movement(&g);
    break;
  case TN_FUZZ_GATHER_SCATTER:
    t_gather_scatter(&g);
    break;
  case TN_FUZZ_SORT:
    t_sort(&g);
    break;
  case TN_FUZZ_CONV:
    t_conv(&g);
    break;
  case TN_FUZZ_FFT:
    t_fft(&g);
    break;
  case TN_FUZZ_WINDOW:
  default:
    t_window(&g);
    break;
  }
  if (used)
    *used = (tn_fuzz_template)a;
  if (g.last_is_param) /* a fusion computes something */
    emit(&g, g.last.t, g.last.rank, g.last.d, "add(%s, %s)", g.last.name, g.last.name);
  if (g.nparams == 0 && g.body.p) { /* all constants and iotas: give it an input */
    val r = g.last;
    val p = param(&g, r.t, r.rank, r.d);
    emit(&g, r.t, r.rank, r.d, "%s(%s, %s)", r.t == C64 ? "add" : "maximum", r.name, p.name); /* no c64 max */
  }

  /* The root's line: "  vN = ..." becomes "  ROOT vN = ...". */
  sb out = {0};
  char root_shape[160];
  shape_text(g.last.t, g.last.rank, g.last.d, NULL, root_shape, sizeof root_shape);
  sb_printf(&out, "HloModule fuzz_%llu_%llu\n\n", (unsigned long long)seed, (unsigned long long)index);
  if (g.regions.p)
    sb_printf(&out, "%s", g.regions.p);
  /* The kernel is named by the draw, so that findings have distinct names. */
  sb_printf(&out, "fuzz_%llu {\n%.*s  ROOT %s}\n\nENTRY main {\n", (unsigned long long)index, (int)g.root_off,
            g.body.p ? g.body.p : "", g.body.p ? g.body.p + g.root_off + 2 : "");
  char args[MAX_PARAMS * 12] = "";
  int w = 0;
  for (int i = 0; i < g.nparams; i++) {
    char shape[160];
    const val *p = &g.params[i];
    shape_text(p->t, p->rank, p->d, g.playout[i][0] ? g.playout[i] : NULL, shape, sizeof shape);
    sb_printf(&out, "  a%d = %s parameter(%d)\n", i, shape, i);
    w += snprintf(args + w, sizeof args - (size_t)w, "%sa%d", i ? ", " : "", i);
  }
  sb_printf(&out, "  ROOT fusion = %s fusion(%s), kind=kLoop, calls=fuzz_%llu\n}\n", root_shape, args,
            (unsigned long long)index);
  free(g.body.p);
  free(g.regions.p);
  if (out.oom || g.body.oom || g.regions.oom) {
    free(out.p);
    return NULL;
  }
  return out.p;
}
