/* hlo_shape_infer.c — operand consistency and result shapes, op by op.
 *
 * One static function per op class, dispatched from a switch in
 * hlo_infer_shape().  Each rule follows XLA's semantics as documented in the
 * operation semantics page and as real dumps use them; where XLA is lenient
 * (mixed layouts, dynamic bounds, collectives whose group size is unknown)
 * the rule is lenient too, because a verifier that rejects valid XLA output
 * is worse than one that misses a corner.
 */
#include "hlo_shape_infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Everything a rule needs: the instruction, where to allocate the inferred
 * shape, where to report. */
typedef struct ctx {
  const hlo_instr *in;
  hlo_arena *arena;
  hlo_error *err;
} ctx;

enum { SHAPE_TEXT = 160 };

/* ---- small helpers ---------------------------------------------------- */

static int fail(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const ctx *c, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return hlo_error_set(c->err, c->in->line, c->in->col, "%s: %s", c->in->name, msg);
}

static const hlo_shape *opnd(const ctx *c, int i) { return &c->in->operands[i]->shape; }
static const hlo_shape *result(const ctx *c) { return &c->in->shape; }
static bool is_array(const hlo_shape *s) { return s->type != HLO_TUPLE; }
static bool is_scalar(const hlo_shape *s) { return is_array(s) && s->rank == 0; }

/* Sizes equal, where -1 (`?`, unbounded) matches anything. */
static bool size_eq(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

/* a * b saturating at INT64_MAX (both non-negative), so products of huge
 * dimensions never overflow; two saturated counts compare equal, which only
 * makes the check lenient for shapes nobody can allocate anyway. */
static int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (a > INT64_MAX / b)
    return INT64_MAX;
  return a * b;
}

/* Element count, or -1 when a dimension is unbounded. */
static int64_t elems(const hlo_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0)
      return -1;
    n = mul_sat(n, s->dims[i]);
  }
  return n;
}

static char *fmt_shape(const hlo_shape *s, char *buf) {
  return hlo_shape_format(s, buf, SHAPE_TEXT);
}

static int oom(const ctx *c) {
  return hlo_error_set(c->err, 0, 0, "%s: out of memory while checking shapes", c->in->name);
}

/* An array shape of the given type and rank, dims zeroed, in the arena. */
static int make_array(const ctx *c, hlo_shape *out, hlo_etype type, int rank) {
  memset(out, 0, sizeof *out);
  out->type = type;
  out->rank = rank;
  if (rank > 0) {
    out->dims = hlo_arena_array(c->arena, (size_t)rank, sizeof *out->dims);
    if (!out->dims)
      return oom(c);
  }
  return 0;
}

static int copy_dims(const ctx *c, hlo_shape *out, hlo_etype type, const hlo_shape *from) {
  if (make_array(c, out, type, from->rank) < 0)
    return -1;
  for (int i = 0; i < from->rank; i++)
    out->dims[i] = from->dims[i];
  return 0;
}

static int make_tuple(const ctx *c, hlo_shape *out, int n) {
  memset(out, 0, sizeof *out);
  out->type = HLO_TUPLE;
  out->ntuple = n;
  if (n > 0) {
    out->elems = hlo_arena_array(c->arena, (size_t)n, sizeof *out->elems);
    if (!out->elems)
      return oom(c);
  }
  return 0;
}

static int need_operands(const ctx *c, int n) {
  if (c->in->noperands != n)
    return fail(c, "expects %d operand%s, got %d", n, n == 1 ? "" : "s", c->in->noperands);
  return 0;
}

static int need_at_least(const ctx *c, int n) {
  if (c->in->noperands < n)
    return fail(c, "expects at least %d operand%s, got %d", n, n == 1 ? "" : "s",
                c->in->noperands);
  return 0;
}

static int need_arrays(const ctx *c) {
  char a[SHAPE_TEXT];
  for (int i = 0; i < c->in->noperands; i++)
    if (!is_array(opnd(c, i)))
      return fail(c, "operand %d must be an array, got %s", i, fmt_shape(opnd(c, i), a));
  return 0;
}

static int need_array_result(const ctx *c) {
  char a[SHAPE_TEXT];
  if (!is_array(result(c)))
    return fail(c, "the result must be an array, got %s", fmt_shape(result(c), a));
  return 0;
}

static int need_scalar_int(const ctx *c, int i, const char *what) {
  char a[SHAPE_TEXT];
  const hlo_shape *s = opnd(c, i);
  if (!is_scalar(s) || !hlo_etype_is_int(s->type))
    return fail(c, "operand %d (%s) must be an integer scalar, got %s", i, what, fmt_shape(s, a));
  return 0;
}

static int operand_vs_result(const ctx *c, int i) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  return fail(c, "operand %d has shape %s but the result is %s", i, fmt_shape(opnd(c, i), a),
              fmt_shape(result(c), b));
}

/* A dimension number list: every entry in [0, rank), none repeated. */
static int check_dim_list(const ctx *c, const hlo_ints *d, int rank, const char *what) {
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= rank)
      return fail(c, "%s entry %lld is out of range for rank %d", what, (long long)d->v[i], rank);
    for (int j = 0; j < i; j++)
      if (d->v[j] == d->v[i])
        return fail(c, "%s lists dimension %lld twice", what, (long long)d->v[i]);
  }
  return 0;
}

static bool in_list(const hlo_ints *d, int64_t x) {
  for (int i = 0; i < d->n; i++)
    if (d->v[i] == x)
      return true;
  return false;
}

/* ---- public helpers --------------------------------------------------- */

int64_t hlo_window_out_size(int64_t n, const hlo_window_dim *w) {
  if (w->size < 1 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1 || n < 0)
    return -1;
  /* Every quantity here comes from the HLO text; a window whose sizes do
   * not fit in int64 describes no shape (and each padding alone must fit
   * with the dilated input, for the evaluator's positions). */
  int64_t dilated = 0, padded, with_hi, span;
  if (n > 0 && (__builtin_mul_overflow(n - 1, w->lhs_dilate, &dilated) ||
                __builtin_add_overflow(dilated, 1, &dilated)))
    return -2;
  if (__builtin_add_overflow(dilated, w->pad_lo, &padded) || __builtin_add_overflow(padded, w->pad_hi, &padded) ||
      __builtin_add_overflow(dilated, w->pad_hi, &with_hi) ||
      __builtin_mul_overflow(w->size - 1, w->rhs_dilate, &span) || __builtin_add_overflow(span, 1, &span))
    return -2;
  if (padded < 0)
    return -1;
  if (padded < span)
    return 0;
  return (padded - span) / w->stride + 1;
}

bool hlo_shape_same_dims(const hlo_shape *a, const hlo_shape *b) {
  if ((a->type == HLO_TUPLE) != (b->type == HLO_TUPLE))
    return false;
  if (a->type == HLO_TUPLE) {
    if (a->ntuple != b->ntuple)
      return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!hlo_shape_same_dims(&a->elems[i], &b->elems[i]))
        return false;
    return true;
  }
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!size_eq(a->dims[i], b->dims[i]))
      return false;
  return true;
}

bool hlo_shape_compatible(const hlo_shape *a, const hlo_shape *b) {
  if (a->type != b->type)
    return false;
  if (a->type == HLO_TUPLE) {
    if (a->ntuple != b->ntuple)
      return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!hlo_shape_compatible(&a->elems[i], &b->elems[i]))
        return false;
    return true;
  }
  return hlo_shape_same_dims(a, b);
}

/* A bounded text buffer that remembers whether anything was cut off. */
typedef struct text {
  char *buf;
  size_t n, at;
  bool cut;
} text;

static void put(text *t, const char *s) {
  size_t len = strlen(s), room = t->n - 1 - t->at;
  if (len > room) {
    len = room;
    t->cut = true;
  }
  memcpy(t->buf + t->at, s, len);
  t->at += len;
  t->buf[t->at] = '\0';
}

static void format_into(const hlo_shape *s, text *t, int depth) {
  char num[32];
  if (s->type == HLO_TUPLE) {
    if (depth > 8) { /* deep nesting adds nothing a reader can use */
      put(t, "(...)");
      return;
    }
    put(t, "(");
    for (int i = 0; i < s->ntuple && !t->cut; i++) {
      if (i)
        put(t, ", ");
      format_into(&s->elems[i], t, depth + 1);
    }
    put(t, ")");
    return;
  }
  put(t, hlo_etype_name(s->type));
  put(t, "[");
  for (int i = 0; i < s->rank && !t->cut; i++) {
    if (i)
      put(t, ",");
    int dyn = s->dynamic ? s->dynamic[i] : HLO_DIM_STATIC;
    if (dyn == HLO_DIM_UNBOUNDED || s->dims[i] < 0)
      snprintf(num, sizeof num, "?");
    else
      snprintf(num, sizeof num, "%s%lld", dyn == HLO_DIM_BOUNDED ? "<=" : "",
               (long long)s->dims[i]);
    put(t, num);
  }
  put(t, "]");
}

char *hlo_shape_format(const hlo_shape *s, char *buf, size_t n) {
  if (n == 0)
    return buf;
  text t = {buf, n, 0, false};
  buf[0] = '\0';
  format_into(s, &t, 0);
  if (t.cut && n >= 4) /* mark the truncation */
    memcpy(buf + n - 4, "...", 4);
  return buf;
}

/* ---- elementwise ------------------------------------------------------ */

/* How an elementwise op's result type follows from its operand type. */
typedef enum {
  ET_SAME,       /* add, negate, ...: operands and result share one type */
  ET_PRED,       /* compare, is-finite: result is pred */
  ET_ANY,        /* convert: any result type */
  ET_REAL_PART,  /* abs, real, imag: c64 -> f32, c128 -> f64, else same */
  ET_TO_COMPLEX, /* complex: f32 -> c64, f64 -> c128 */
} etype_rule;

static hlo_etype real_part(hlo_etype t) {
  return t == HLO_C64 ? HLO_F32 : t == HLO_C128 ? HLO_F64 : t;
}

static hlo_etype to_complex(hlo_etype t) {
  return t == HLO_F32 ? HLO_C64 : t == HLO_F64 ? HLO_C128 : HLO_INVALID;
}

/* Checks every operand's dimensions against the declared result, the
 * operands' element types against each other, and the result type against
 * the rule. */
static int elementwise(const ctx *c, int nops, etype_rule rule) {
  char a[SHAPE_TEXT];
  if (need_operands(c, nops) < 0 || need_arrays(c) < 0 || need_array_result(c) < 0)
    return -1;
  const hlo_shape *r = result(c);
  hlo_etype t0 = opnd(c, 0)->type;
  for (int i = 0; i < nops; i++) {
    const hlo_shape *s = opnd(c, i);
    if (!hlo_shape_same_dims(s, r) || (rule == ET_SAME && s->type != r->type))
      return operand_vs_result(c, i);
    if (rule != ET_ANY && s->type != t0)
      return fail(c, "operand %d has type %s but operand 0 has %s", i, hlo_etype_name(s->type),
                  hlo_etype_name(t0));
  }
  hlo_etype want = r->type;
  switch (rule) {
  case ET_SAME:
  case ET_ANY:
    return 0;
  case ET_PRED:
    want = HLO_PRED;
    break;
  case ET_REAL_PART:
    want = real_part(t0);
    break;
  case ET_TO_COMPLEX:
    want = to_complex(t0);
    if (want == HLO_INVALID)
      return fail(c, "operands must be f32 or f64, got %s", hlo_etype_name(t0));
    break;
  }
  if (r->type != want)
    return fail(c, "the result is %s but %s of %s gives %s", fmt_shape(r, a),
                hlo_opcode_name(c->in->op), hlo_etype_name(t0), hlo_etype_name(want));
  return 0;
}

/* select(pred, on_true, on_false): the branches match the result; the
 * predicate is pred with the result's dimensions, or a pred scalar. */
static int select_rule(const ctx *c) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_operands(c, 3) < 0)
    return -1;
  const hlo_shape *r = result(c), *p = opnd(c, 0);
  for (int i = 1; i < 3; i++)
    if (!hlo_shape_compatible(opnd(c, i), r))
      return operand_vs_result(c, i);
  if (!is_array(p) || p->type != HLO_PRED)
    return fail(c, "operand 0 (the predicate) must be pred, got %s", fmt_shape(p, a));
  if (!is_array(r))
    return 0; /* the old tuple select takes a scalar predicate; nothing more */
  if (p->rank != 0 && !hlo_shape_same_dims(p, r))
    return fail(c, "operand 0 (the predicate) has shape %s but the result is %s", fmt_shape(p, a),
                fmt_shape(r, b));
  return 0;
}

/* clamp(min, x, max): x matches the result; min and max have its type and
 * either its dimensions or none (a scalar bound). */
static int clamp_rule(const ctx *c) {
  if (need_operands(c, 3) < 0 || need_arrays(c) < 0 || need_array_result(c) < 0)
    return -1;
  const hlo_shape *r = result(c);
  if (!hlo_shape_compatible(opnd(c, 1), r))
    return operand_vs_result(c, 1);
  for (int i = 0; i < 3; i += 2) {
    const hlo_shape *s = opnd(c, i);
    if (s->type != r->type || (s->rank != 0 && !hlo_shape_same_dims(s, r)))
      return operand_vs_result(c, i);
  }
  return 0;
}

/* bitcast-convert reinterprets bits: equal widths keep the dimensions; a
 * wider operand gains a minor dimension of width ratio, a narrower one loses
 * it.  Checking the total bit count covers all three cases. */
static int bitcast_bits(const ctx *c) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_operands(c, 1) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *r = result(c);
  if (!is_array(s) || !is_array(r))
    return 0;
  int64_t ne = elems(s), re = elems(r);
  if (ne < 0 || re < 0)
    return 0;
  int sb = hlo_etype_bits(s->type), rb = hlo_etype_bits(r->type);
  if (sb == 0 || rb == 0)
    return 0;
  if (mul_sat(ne, sb) != mul_sat(re, rb))
    return fail(c, "operand 0 has shape %s (%lld bits) but the result %s has %lld bits",
                fmt_shape(s, a), (long long)mul_sat(ne, sb), fmt_shape(r, b),
                (long long)mul_sat(re, rb));
  return 0;
}

/* ---- data movement ---------------------------------------------------- */

static int broadcast_rule(const ctx *c) {
  if (need_operands(c, 1) < 0 || need_arrays(c) < 0 || need_array_result(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *r = result(c);
  const hlo_ints *d = &c->in->attrs.dimensions;
  if (s->type != r->type)
    return fail(c, "operand 0 has type %s but the result is %s", hlo_etype_name(s->type),
                hlo_etype_name(r->type));
  if (d->n != s->rank)
    return fail(c, "dimensions has %d entr%s but operand 0 has rank %d", d->n,
                d->n == 1 ? "y" : "ies", s->rank);
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= r->rank)
      return fail(c, "dimensions entry %lld is out of range for the result's rank %d",
                  (long long)d->v[i], r->rank);
    if (i > 0 && d->v[i] <= d->v[i - 1])
      return fail(c, "dimensions must be strictly increasing, got %lld after %lld",
                  (long long)d->v[i], (long long)d->v[i - 1]);
    if (!size_eq(s->dims[i], r->dims[d->v[i]]))
      return fail(c, "operand dimension %d has size %lld but result dimension %lld has %lld", i,
                  (long long)s->dims[i], (long long)d->v[i], (long long)r->dims[d->v[i]]);
  }
  return 0;
}

static int reshape_rule(const ctx *c) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_operands(c, 1) < 0 || need_arrays(c) < 0 || need_array_result(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *r = result(c);
  int64_t ne = elems(s), re = elems(r);
  if (s->type != r->type || (ne >= 0 && re >= 0 && ne != re))
    return fail(c, "operand 0 has shape %s (%lld elements) but the result is %s (%lld elements)",
                fmt_shape(s, a), (long long)ne, fmt_shape(r, b), (long long)re);
  return 0;
}

/* bitcast reinterprets a buffer under another shape and layout.  The byte
 * size XLA compares includes tile padding we do not model, and real dumps
 * (test modules that never ran XLA's verifier) bitcast between sizes, so
 * only the operand count is checked. */
static int bitcast_rule(const ctx *c) { return need_operands(c, 1); }

static int transpose_rule(const ctx *c, hlo_shape *out) {
  if (need_operands(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  const hlo_ints *d = &c->in->attrs.dimensions;
  if (d->n != s->rank)
    return fail(c, "dimensions has %d entries but operand 0 has rank %d", d->n, s->rank);
  if (check_dim_list(c, d, s->rank, "dimensions") < 0)
    return -1;
  if (make_array(c, out, s->type, s->rank) < 0)
    return -1;
  for (int i = 0; i < s->rank; i++)
    out->dims[i] = s->dims[d->v[i]];
  return 1;
}

static int slice_rule(const ctx *c, hlo_shape *out) {
  if (need_operands(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  const hlo_attrs *at = &c->in->attrs;
  if (at->nslice != s->rank)
    return fail(c, "slice has %d dimensions but operand 0 has rank %d", at->nslice, s->rank);
  if (make_array(c, out, s->type, s->rank) < 0)
    return -1;
  for (int i = 0; i < s->rank; i++) {
    const hlo_slice_dim *sd = &at->slice[i];
    if (sd->stride <= 0)
      return fail(c, "slice dimension %d has stride %lld, must be positive", i,
                  (long long)sd->stride);
    if (sd->start < 0 || sd->start > sd->limit || (s->dims[i] >= 0 && sd->limit > s->dims[i]))
      return fail(c, "slice dimension %d [%lld:%lld] is out of bounds for size %lld", i,
                  (long long)sd->start, (long long)sd->limit, (long long)s->dims[i]);
    /* not (limit - start + stride - 1) / stride: a huge stride overflows that */
    out->dims[i] = sd->limit == sd->start ? 0 : (sd->limit - sd->start - 1) / sd->stride + 1;
  }
  return 1;
}

/* Start indices come either as one integer scalar per dimension or, in the
 * old form, as a single rank-1 vector. */
static int start_indices(const ctx *c, int first, int rank) {
  char a[SHAPE_TEXT];
  int n = c->in->noperands - first;
  if (n == 1 && rank != 1 && opnd(c, first)->rank == 1) {
    const hlo_shape *v = opnd(c, first);
    if (is_array(v) && v->dims[0] == rank && hlo_etype_is_int(v->type))
      return 0;
    return fail(c, "operand %d (start indices) must be s32[%d] or one scalar per dimension, got %s",
                first, rank, fmt_shape(v, a));
  }
  if (n != rank)
    return fail(c, "expects %d start indices for rank %d, got %d", rank, rank, n);
  for (int i = first; i < c->in->noperands; i++)
    if (need_scalar_int(c, i, "a start index") < 0)
      return -1;
  return 0;
}

static int dynamic_slice_rule(const ctx *c, hlo_shape *out) {
  if (need_at_least(c, 1) < 0)
    return -1;
  if (!is_array(opnd(c, 0)))
    return need_arrays(c);
  const hlo_shape *s = opnd(c, 0);
  const hlo_ints *sz = &c->in->attrs.dynamic_slice_sizes;
  if (start_indices(c, 1, s->rank) < 0)
    return -1;
  if (sz->n != s->rank)
    return fail(c, "dynamic_slice_sizes has %d entries but operand 0 has rank %d", sz->n, s->rank);
  if (make_array(c, out, s->type, s->rank) < 0)
    return -1;
  for (int i = 0; i < s->rank; i++) {
    if (sz->v[i] < 0 || (s->dims[i] >= 0 && sz->v[i] > s->dims[i]))
      return fail(c, "dynamic_slice_sizes[%d] = %lld does not fit in size %lld", i,
                  (long long)sz->v[i], (long long)s->dims[i]);
    out->dims[i] = sz->v[i];
  }
  return 1;
}

static int dynamic_update_slice_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_at_least(c, 2) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *u = opnd(c, 1);
  if (!is_array(s) || !is_array(u))
    return need_arrays(c);
  if (u->type != s->type || u->rank != s->rank)
    return fail(c, "operand 1 (the update) has shape %s but operand 0 is %s", fmt_shape(u, a),
                fmt_shape(s, b));
  for (int i = 0; i < s->rank; i++)
    if (u->dims[i] > s->dims[i] && s->dims[i] >= 0)
      return fail(c, "update dimension %d has size %lld, larger than the operand's %lld", i,
                  (long long)u->dims[i], (long long)s->dims[i]);
  if (start_indices(c, 2, s->rank) < 0)
    return -1;
  if (copy_dims(c, out, s->type, s) < 0)
    return -1;
  return 1;
}

static int concatenate_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_at_least(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s0 = opnd(c, 0);
  const hlo_ints *d = &c->in->attrs.dimensions;
  if (d->n != 1 || d->v[0] < 0 || d->v[0] >= s0->rank)
    return fail(c, "dimensions must name one dimension below rank %d", s0->rank);
  int64_t cd = d->v[0];
  if (copy_dims(c, out, s0->type, s0) < 0)
    return -1;
  for (int i = 1; i < c->in->noperands; i++) {
    const hlo_shape *s = opnd(c, i);
    bool ok = s->type == s0->type && s->rank == s0->rank;
    for (int k = 0; ok && k < s->rank; k++)
      ok = k == cd || size_eq(s->dims[k], s0->dims[k]);
    if (!ok)
      return fail(c, "operand %d has shape %s, which cannot be concatenated with %s along %lld", i,
                  fmt_shape(s, a), fmt_shape(s0, b), (long long)cd);
    if (out->dims[cd] >= 0 && s->dims[cd] < 0)
      out->dims[cd] = -1;
    else if (out->dims[cd] >= 0 && __builtin_add_overflow(out->dims[cd], s->dims[cd], &out->dims[cd]))
      return fail(c, "the concatenated dimension %lld has a size beyond 2^63", (long long)cd);
  }
  return 1;
}

static int pad_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT];
  if (need_operands(c, 2) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *v = opnd(c, 1);
  const hlo_attrs *at = &c->in->attrs;
  if (v->rank != 0 || v->type != s->type)
    return fail(c, "operand 1 (the padding value) must be a %s scalar, got %s",
                hlo_etype_name(s->type), fmt_shape(v, a));
  if (at->npad != s->rank)
    return fail(c, "padding has %d dimensions but operand 0 has rank %d", at->npad, s->rank);
  if (make_array(c, out, s->type, s->rank) < 0)
    return -1;
  for (int i = 0; i < s->rank; i++) {
    const hlo_pad_dim *p = &at->pad[i];
    int64_t n = s->dims[i];
    if (p->interior < 0)
      return fail(c, "padding dimension %d has negative interior padding %lld", i,
                  (long long)p->interior);
    if (n < 0) {
      out->dims[i] = -1;
      continue;
    }
    int64_t size;
    if (!hlo_pad_size(n, p, &size))
      return fail(c, "padding dimension %d (lo %lld, hi %lld, interior %lld) gives a size beyond 2^63",
                  i, (long long)p->lo, (long long)p->hi, (long long)p->interior);
    if (size < 0)
      return fail(c, "padding dimension %d gives negative size %lld", i, (long long)size);
    out->dims[i] = size;
  }
  return 1;
}

static int reverse_rule(const ctx *c, hlo_shape *out) {
  if (need_operands(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  if (check_dim_list(c, &c->in->attrs.dimensions, s->rank, "dimensions") < 0)
    return -1;
  if (copy_dims(c, out, s->type, s) < 0)
    return -1;
  return 1;
}

static int iota_rule(const ctx *c) {
  if (need_operands(c, 0) < 0 || need_array_result(c) < 0)
    return -1;
  const hlo_shape *r = result(c);
  int64_t d = c->in->attrs.iota_dimension;
  if (r->rank < 1)
    return fail(c, "iota needs a result of rank 1 or more");
  if (d < 0 || d >= r->rank)
    return fail(c, "iota_dimension %lld is out of range for rank %d", (long long)d, r->rank);
  return 0;
}

/* ---- tuples ----------------------------------------------------------- */

static int gte_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT];
  if (need_operands(c, 1) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  int64_t k = c->in->attrs.index;
  if (is_array(s))
    return fail(c, "operand 0 must be a tuple, got %s", fmt_shape(s, a));
  if (k < 0 || k >= s->ntuple)
    return fail(c, "index %lld is out of range for a tuple of %d elements", (long long)k, s->ntuple);
  *out = s->elems[k];
  out->layout = NULL;
  return 1;
}

/* A tuple of the operands' shapes (used by tuple, and by variadic ops whose
 * result is one array per operand). */
static int tuple_of_operands(const ctx *c, hlo_shape *out, int first, int n) {
  if (make_tuple(c, out, n) < 0)
    return -1;
  for (int i = 0; i < n; i++) {
    out->elems[i] = *opnd(c, first + i);
    out->elems[i].layout = NULL;
  }
  return 1;
}

/* ---- reductions ------------------------------------------------------- */

/* Variadic reduce and reduce-window share the operand layout: N inputs of
 * equal dimensions, then N scalar initial values. */
static int split_inputs_inits(const ctx *c, int *nout) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  int n = c->in->noperands;
  if (n < 2 || n % 2 != 0)
    return fail(c, "expects N inputs and N initial values, got %d operands", n);
  if (need_arrays(c) < 0)
    return -1;
  int half = n / 2;
  for (int i = 1; i < half; i++)
    if (!hlo_shape_same_dims(opnd(c, i), opnd(c, 0)))
      return fail(c, "input %d has shape %s but input 0 is %s", i, fmt_shape(opnd(c, i), a),
                  fmt_shape(opnd(c, 0), b));
  for (int i = half; i < n; i++)
    if (opnd(c, i)->rank != 0)
      return fail(c, "operand %d (an initial value) must be a scalar, got %s", i,
                  fmt_shape(opnd(c, i), a));
  *nout = half;
  return 0;
}

/* One result per input: an array when N is 1, else a tuple.  `dims` are the
 * result dimensions; each element takes its initial value's type. */
static int reduce_result(const ctx *c, hlo_shape *out, int n, const hlo_shape *dims) {
  hlo_shape *slot = out;
  if (n > 1) {
    if (make_tuple(c, out, n) < 0)
      return -1;
    slot = out->elems;
  }
  for (int i = 0; i < n; i++) {
    if (copy_dims(c, &slot[i], opnd(c, n + i)->type, dims) < 0)
      return -1;
  }
  return 1;
}

static int reduce_rule(const ctx *c, hlo_shape *out) {
  int n;
  if (split_inputs_inits(c, &n) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  const hlo_ints *d = &c->in->attrs.dimensions;
  if (check_dim_list(c, d, s->rank, "dimensions") < 0)
    return -1;
  hlo_shape kept;
  if (make_array(c, &kept, s->type, s->rank - d->n) < 0)
    return -1;
  for (int i = 0, k = 0; i < s->rank; i++)
    if (!in_list(d, i))
      kept.dims[k++] = s->dims[i];
  return reduce_result(c, out, n, &kept);
}

/* The output dimensions of a window over `s`, or -1 with err set. */
static int window_dims(const ctx *c, const hlo_shape *s, hlo_shape *dims) {
  const hlo_window *w = &c->in->attrs.window;
  if (w->rank != s->rank)
    return fail(c, "window has %d dimensions but the input has rank %d", w->rank, s->rank);
  if (make_array(c, dims, s->type, s->rank) < 0)
    return -1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) {
      dims->dims[i] = -1;
      continue;
    }
    int64_t o = hlo_window_out_size(s->dims[i], &w->dims[i]);
    if (o == -2)
      return fail(c, "window dimension %d gives sizes beyond 2^63 for input size %lld", i,
                  (long long)s->dims[i]);
    if (o < 0)
      return fail(c, "window dimension %d is invalid for input size %lld", i,
                  (long long)s->dims[i]);
    dims->dims[i] = o;
  }
  return 0;
}

static int reduce_window_rule(const ctx *c, hlo_shape *out) {
  int n;
  hlo_shape dims;
  if (split_inputs_inits(c, &n) < 0 || window_dims(c, opnd(c, 0), &dims) < 0)
    return -1;
  return reduce_result(c, out, n, &dims);
}

/* select-and-scatter(operand, source, init): source has the shape of the
 * window's output over operand; the result has the operand's shape. */
static int select_and_scatter_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  hlo_shape dims;
  if (need_operands(c, 3) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *src = opnd(c, 1);
  if (opnd(c, 2)->rank != 0)
    return fail(c, "operand 2 (the initial value) must be a scalar, got %s",
                fmt_shape(opnd(c, 2), a));
  if (window_dims(c, s, &dims) < 0)
    return -1;
  if (!hlo_shape_same_dims(src, &dims))
    return fail(c, "operand 1 (the source) has shape %s but the window over operand 0 gives %s",
                fmt_shape(src, a), fmt_shape(&dims, b));
  if (copy_dims(c, out, s->type, s) < 0)
    return -1;
  return 1;
}

/* ---- dot and convolution ---------------------------------------------- */

/* dot: batch dims pair up, contracting dims pair up, sizes agree; the
 * result is batch dims, then lhs free dims, then rhs free dims.  The result
 * type may differ from the operands' (preferred_element_type), so it is
 * taken from the declared result. */
static int dot_rule(const ctx *c, hlo_shape *out) {
  if (need_at_least(c, 2) < 0 || need_arrays(c) < 0)
    return -1;
  if (c->in->noperands > 2)
    return 0; /* sparse dot with metadata operands: no rule */
  const hlo_shape *l = opnd(c, 0), *r = opnd(c, 1);
  const hlo_dot_dnums *dn = &c->in->attrs.dot;
  if (dn->lhs_batch.n != dn->rhs_batch.n)
    return fail(c, "lhs_batch_dims has %d entries but rhs_batch_dims has %d", dn->lhs_batch.n,
                dn->rhs_batch.n);
  if (dn->lhs_contracting.n != dn->rhs_contracting.n)
    return fail(c, "lhs_contracting_dims has %d entries but rhs_contracting_dims has %d",
                dn->lhs_contracting.n, dn->rhs_contracting.n);
  if (check_dim_list(c, &dn->lhs_batch, l->rank, "lhs_batch_dims") < 0 ||
      check_dim_list(c, &dn->rhs_batch, r->rank, "rhs_batch_dims") < 0 ||
      check_dim_list(c, &dn->lhs_contracting, l->rank, "lhs_contracting_dims") < 0 ||
      check_dim_list(c, &dn->rhs_contracting, r->rank, "rhs_contracting_dims") < 0)
    return -1;
  for (int i = 0; i < dn->lhs_contracting.n; i++) {
    if (in_list(&dn->lhs_batch, dn->lhs_contracting.v[i]))
      return fail(c, "lhs dimension %lld is both batch and contracting",
                  (long long)dn->lhs_contracting.v[i]);
    if (in_list(&dn->rhs_batch, dn->rhs_contracting.v[i]))
      return fail(c, "rhs dimension %lld is both batch and contracting",
                  (long long)dn->rhs_contracting.v[i]);
  }
  for (int i = 0; i < dn->lhs_batch.n; i++) {
    int64_t a = l->dims[dn->lhs_batch.v[i]], b = r->dims[dn->rhs_batch.v[i]];
    if (!size_eq(a, b))
      return fail(c, "batch dimension %d has size %lld on lhs but %lld on rhs", i, (long long)a,
                  (long long)b);
  }
  for (int i = 0; i < dn->lhs_contracting.n; i++) {
    int64_t a = l->dims[dn->lhs_contracting.v[i]], b = r->dims[dn->rhs_contracting.v[i]];
    if (!size_eq(a, b))
      return fail(c,
                  "contracting dimension %d has size %lld on lhs (dimension %lld) but %lld on "
                  "rhs (dimension %lld)",
                  i, (long long)a, (long long)dn->lhs_contracting.v[i], (long long)b,
                  (long long)dn->rhs_contracting.v[i]);
  }
  int nb = dn->lhs_batch.n;
  /* batch dims appear once, contracting dims not at all */
  int rank = l->rank + r->rank - nb - 2 * dn->lhs_contracting.n;
  if (make_array(c, out, result(c)->type, rank) < 0)
    return -1;
  int k = 0;
  for (int i = 0; i < nb; i++)
    out->dims[k++] = l->dims[dn->lhs_batch.v[i]];
  for (int i = 0; i < l->rank; i++)
    if (!in_list(&dn->lhs_batch, i) && !in_list(&dn->lhs_contracting, i))
      out->dims[k++] = l->dims[i];
  for (int i = 0; i < r->rank; i++)
    if (!in_list(&dn->rhs_batch, i) && !in_list(&dn->rhs_contracting, i))
      out->dims[k++] = r->dims[i];
  return 1;
}

static bool dim_ok(int64_t d, int rank) { return d >= 0 && d < rank; }

static int convolution_rule(const ctx *c, hlo_shape *out) {
  if (need_operands(c, 2) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_attrs *at = &c->in->attrs;
  if (!(at->has & HLO_A_DIM_LABELS))
    return fail(c, "convolution needs dim_labels");
  const hlo_conv_dnums *dn = &at->conv;
  const hlo_shape *x = opnd(c, 0), *k = opnd(c, 1);
  int ns = dn->input_spatial.n, rank = ns + 2;
  if (dn->kernel_spatial.n != ns || dn->output_spatial.n != ns)
    return fail(c, "dim_labels name different numbers of spatial dimensions");
  if (x->rank != rank || k->rank != rank)
    return fail(c, "dim_labels describe rank %d but the input has rank %d and the kernel %d", rank,
                x->rank, k->rank);
  bool ok = dim_ok(dn->input_batch, rank) && dim_ok(dn->input_feature, rank) &&
            dim_ok(dn->kernel_input_feature, rank) && dim_ok(dn->kernel_output_feature, rank) &&
            dim_ok(dn->output_batch, rank) && dim_ok(dn->output_feature, rank);
  for (int i = 0; ok && i < ns; i++)
    ok = dim_ok(dn->input_spatial.v[i], rank) && dim_ok(dn->kernel_spatial.v[i], rank) &&
         dim_ok(dn->output_spatial.v[i], rank);
  if (!ok)
    return fail(c, "dim_labels name a dimension out of range");
  if (at->window.rank != ns)
    return fail(c, "window has %d dimensions but dim_labels name %d spatial dimensions",
                at->window.rank, ns);
  int64_t fgc = (at->has & HLO_A_FEATURE_GROUP_COUNT) ? at->feature_group_count : 1;
  int64_t bgc = (at->has & HLO_A_BATCH_GROUP_COUNT) ? at->batch_group_count : 1;
  if (fgc < 1 || bgc < 1)
    return fail(c, "feature_group_count and batch_group_count must be positive");
  int64_t in_f = x->dims[dn->input_feature], in_b = x->dims[dn->input_batch];
  int64_t k_in = k->dims[dn->kernel_input_feature], k_out = k->dims[dn->kernel_output_feature];
  if (in_f % fgc != 0 || in_f / fgc != k_in)
    return fail(c,
                "input feature size %lld divided by feature_group_count %lld must equal the "
                "kernel's input feature size %lld",
                (long long)in_f, (long long)fgc, (long long)k_in);
  if (k_out % fgc != 0)
    return fail(c, "kernel output feature size %lld is not divisible by feature_group_count %lld",
                (long long)k_out, (long long)fgc);
  if (in_b % bgc != 0 || k_out % bgc != 0)
    return fail(c, "batch_group_count %lld must divide the input batch %lld and kernel output "
                "features %lld", (long long)bgc, (long long)in_b, (long long)k_out);
  if (make_array(c, out, result(c)->type, rank) < 0)
    return -1;
  out->dims[dn->output_batch] = in_b / bgc;
  out->dims[dn->output_feature] = k_out;
  for (int i = 0; i < ns; i++) {
    const hlo_window_dim *w = &at->window.dims[i];
    int64_t ksz = k->dims[dn->kernel_spatial.v[i]], n = x->dims[dn->input_spatial.v[i]];
    if (w->size != ksz)
      return fail(c, "window size %lld in spatial dimension %d differs from the kernel's %lld",
                  (long long)w->size, i, (long long)ksz);
    int64_t o = hlo_window_out_size(n, w);
    if (o == -2)
      return fail(c, "window dimension %d gives sizes beyond 2^63 for input size %lld", i,
                  (long long)n);
    if (o < 0)
      return fail(c, "window dimension %d is invalid for input size %lld", i, (long long)n);
    out->dims[dn->output_spatial.v[i]] = o;
  }
  return 1;
}

/* ---- gather and scatter ----------------------------------------------- */

/* The index vector's length and the indices' batch dimension count. */
static int index_vector(const ctx *c, const hlo_shape *idx, int64_t ivd, int64_t *len, int *nbatch) {
  char a[SHAPE_TEXT];
  if (!hlo_etype_is_int(idx->type))
    return fail(c, "the indices must be integers, got %s", fmt_shape(idx, a));
  if (ivd < 0 || ivd > idx->rank)
    return fail(c, "index_vector_dim %lld is out of range for indices of rank %d", (long long)ivd,
                idx->rank);
  *len = ivd < idx->rank ? idx->dims[ivd] : 1;
  *nbatch = ivd < idx->rank ? idx->rank - 1 : idx->rank;
  return 0;
}

static int sorted_dims(const ctx *c, const hlo_ints *d, int rank, const char *what) {
  for (int i = 0; i < d->n; i++) {
    if (d->v[i] < 0 || d->v[i] >= rank)
      return fail(c, "%s entry %lld is out of range for rank %d", what, (long long)d->v[i], rank);
    if (i > 0 && d->v[i] <= d->v[i - 1])
      return fail(c, "%s must be sorted without repeats", what);
  }
  return 0;
}

/* Operand dimensions in neither list: the ones a gather slice or a scatter
 * window keeps.  Counted rather than computed from the list lengths, so an
 * overlap between the lists cannot push a later walk past the rank. */
static int kept_dims(int rank, const hlo_ints *a, const hlo_ints *b) {
  int n = 0;
  for (int i = 0; i < rank; i++)
    n += !in_list(a, i) && !in_list(b, i);
  return n;
}

static int gather_rule(const ctx *c, hlo_shape *out) {
  if (need_operands(c, 2) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0), *idx = opnd(c, 1);
  const hlo_gather_dnums *g = &c->in->attrs.gather;
  const hlo_ints *ss = &c->in->attrs.slice_sizes;
  int64_t ivlen;
  int nbatch;
  if (index_vector(c, idx, g->index_vector_dim, &ivlen, &nbatch) < 0)
    return -1;
  if (g->start_index_map.n != ivlen && ivlen >= 0)
    return fail(c, "start_index_map has %d entries but the index vector has %lld",
                g->start_index_map.n, (long long)ivlen);
  if (check_dim_list(c, &g->start_index_map, s->rank, "start_index_map") < 0 ||
      check_dim_list(c, &g->collapsed_slice_dims, s->rank, "collapsed_slice_dims") < 0 ||
      check_dim_list(c, &g->operand_batching_dims, s->rank, "operand_batching_dims") < 0)
    return -1;
  if (g->operand_batching_dims.n != g->start_indices_batching_dims.n)
    return fail(c, "operand_batching_dims and start_indices_batching_dims differ in length");
  if (ss->n != s->rank)
    return fail(c, "slice_sizes has %d entries but operand 0 has rank %d", ss->n, s->rank);
  for (int i = 0; i < s->rank; i++) {
    if (ss->v[i] < 0 || (s->dims[i] >= 0 && ss->v[i] > s->dims[i]))
      return fail(c, "slice_sizes[%d] = %lld does not fit in size %lld", i, (long long)ss->v[i],
                  (long long)s->dims[i]);
    bool squeezed = in_list(&g->collapsed_slice_dims, i) || in_list(&g->operand_batching_dims, i);
    if (squeezed && ss->v[i] > 1)
      return fail(c, "slice_sizes[%d] = %lld but a collapsed or batching dimension must be 1", i,
                  (long long)ss->v[i]);
  }
  int nkept = kept_dims(s->rank, &g->collapsed_slice_dims, &g->operand_batching_dims);
  if (nkept != g->offset_dims.n)
    return fail(c, "offset_dims has %d entries but %d operand dimensions are not collapsed",
                g->offset_dims.n, nkept);
  int rank = nbatch + g->offset_dims.n;
  if (sorted_dims(c, &g->offset_dims, rank, "offset_dims") < 0)
    return -1;
  if (make_array(c, out, s->type, rank) < 0)
    return -1;
  /* Offset positions take the kept slice sizes in operand order; the other
   * positions take the indices' batch dimensions in order. */
  int next_kept = 0, next_batch = 0;
  for (int i = 0; i < rank; i++) {
    if (in_list(&g->offset_dims, i)) {
      while (in_list(&g->collapsed_slice_dims, next_kept) ||
             in_list(&g->operand_batching_dims, next_kept))
        next_kept++;
      out->dims[i] = ss->v[next_kept++];
    } else {
      if (next_batch == g->index_vector_dim)
        next_batch++;
      out->dims[i] = idx->dims[next_batch++];
    }
  }
  return 1;
}

static int scatter_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  int n = c->in->noperands;
  if (n < 3 || n % 2 == 0)
    return fail(c, "expects N operands, the indices and N updates, got %d operands", n);
  if (need_arrays(c) < 0)
    return -1;
  int nops = (n - 1) / 2;
  const hlo_shape *s = opnd(c, 0), *idx = opnd(c, nops);
  const hlo_scatter_dnums *sd = &c->in->attrs.scatter;
  for (int i = 1; i < nops; i++)
    if (!hlo_shape_same_dims(opnd(c, i), s))
      return fail(c, "operand %d has shape %s but operand 0 is %s", i, fmt_shape(opnd(c, i), a),
                  fmt_shape(s, b));
  int64_t ivlen;
  int nbatch;
  if (index_vector(c, idx, sd->index_vector_dim, &ivlen, &nbatch) < 0)
    return -1;
  if (sd->scatter_dims_to_operand_dims.n != ivlen && ivlen >= 0)
    return fail(c, "scatter_dims_to_operand_dims has %d entries but the index vector has %lld",
                sd->scatter_dims_to_operand_dims.n, (long long)ivlen);
  if (check_dim_list(c, &sd->scatter_dims_to_operand_dims, s->rank,
                     "scatter_dims_to_operand_dims") < 0 ||
      check_dim_list(c, &sd->inserted_window_dims, s->rank, "inserted_window_dims") < 0 ||
      check_dim_list(c, &sd->input_batching_dims, s->rank, "input_batching_dims") < 0)
    return -1;
  if (sd->update_window_dims.n + sd->inserted_window_dims.n + sd->input_batching_dims.n != s->rank ||
      kept_dims(s->rank, &sd->inserted_window_dims, &sd->input_batching_dims) !=
          sd->update_window_dims.n)
    return fail(c, "update_window_dims, inserted_window_dims and input_batching_dims must "
                "account for the operand's %d dimensions", s->rank);
  for (int u = 0; u < nops; u++) {
    const hlo_shape *up = opnd(c, nops + 1 + u);
    int rank = nbatch + sd->update_window_dims.n;
    if (up->rank != rank)
      return fail(c, "update %d has rank %d but the indices and update_window_dims give %d", u,
                  up->rank, rank);
    if (sorted_dims(c, &sd->update_window_dims, rank, "update_window_dims") < 0)
      return -1;
    int next_op = 0, next_batch = 0;
    for (int i = 0; i < rank; i++) {
      if (in_list(&sd->update_window_dims, i)) {
        while (in_list(&sd->inserted_window_dims, next_op) ||
               in_list(&sd->input_batching_dims, next_op))
          next_op++;
        if (s->dims[next_op] >= 0 && up->dims[i] > s->dims[next_op])
          return fail(c, "update %d dimension %d has size %lld, larger than operand dimension %d "
                      "(%lld)", u, i, (long long)up->dims[i], next_op,
                      (long long)s->dims[next_op]);
        next_op++;
      } else {
        if (next_batch == sd->index_vector_dim)
          next_batch++;
        if (!size_eq(up->dims[i], idx->dims[next_batch]))
          return fail(c, "update %d dimension %d has size %lld but indices dimension %d has %lld",
                      u, i, (long long)up->dims[i], next_batch,
                      (long long)idx->dims[next_batch]);
        next_batch++;
      }
    }
  }
  if (nops == 1) {
    if (copy_dims(c, out, s->type, s) < 0)
      return -1;
    return 1;
  }
  return tuple_of_operands(c, out, 0, nops);
}

/* ---- sort, control flow, collectives ---------------------------------- */

static int sort_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_at_least(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *s = opnd(c, 0);
  for (int i = 1; i < c->in->noperands; i++)
    if (!hlo_shape_same_dims(opnd(c, i), s))
      return fail(c, "operand %d has shape %s but operand 0 is %s", i, fmt_shape(opnd(c, i), a),
                  fmt_shape(s, b));
  const hlo_ints *d = &c->in->attrs.dimensions;
  if (d->n != 1 || d->v[0] < 0 || d->v[0] >= s->rank)
    return fail(c, "dimensions must name one dimension below rank %d", s->rank);
  if (c->in->noperands == 1) {
    if (copy_dims(c, out, s->type, s) < 0)
      return -1;
    return 1;
  }
  return tuple_of_operands(c, out, 0, c->in->noperands);
}

/* The result of an op that returns its operands unchanged in shape:
 * the operand itself for one, a tuple of them for several. */
static int same_as_operands(const ctx *c, hlo_shape *out) {
  if (need_at_least(c, 1) < 0)
    return -1;
  if (c->in->noperands == 1) {
    *out = *opnd(c, 0);
    out->layout = NULL;
    return 1;
  }
  return tuple_of_operands(c, out, 0, c->in->noperands);
}

static int conditional_rule(const ctx *c) {
  char a[SHAPE_TEXT];
  if (need_at_least(c, 1) < 0)
    return -1;
  const hlo_shape *p = opnd(c, 0);
  if (!is_scalar(p) || (p->type != HLO_PRED && p->type != HLO_S32))
    return fail(c, "operand 0 (the branch index) must be pred[] or s32[], got %s", fmt_shape(p, a));
  return 0;
}

static int map_rule(const ctx *c) {
  if (need_at_least(c, 1) < 0 || need_arrays(c) < 0 || need_array_result(c) < 0)
    return -1;
  for (int i = 0; i < c->in->noperands; i++)
    if (!hlo_shape_same_dims(opnd(c, i), result(c)))
      return operand_vs_result(c, i);
  return 0;
}

/* The size of each replica group when the attribute gives explicit groups
 * of one size; 0 when it cannot be known from the instruction alone. */
static int64_t group_size(const ctx *c) {
  const hlo_replica_groups *g = &c->in->attrs.replica_groups;
  if (g->ngroups <= 0)
    return 0;
  int64_t n = g->groups[0].n;
  for (int i = 1; i < g->ngroups; i++)
    if (g->groups[i].n != n)
      return 0;
  return n;
}

/* all-gather multiplies dimension d by the group size; reduce-scatter
 * divides it.  `gather` picks the direction.  Other dimensions and the type
 * are unchanged.  An unknown group size only requires divisibility. */
static int gather_scatter_dim(const ctx *c, bool gather) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_at_least(c, 1) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *r = result(c);
  int n = c->in->noperands;
  if (n > 1 && (is_array(r) || r->ntuple != n))
    return fail(c, "%d operands need a result tuple of %d elements, got %s", n, n,
                fmt_shape(r, a));
  if (n == 1 && !is_array(r))
    return need_array_result(c);
  const hlo_ints *dl = &c->in->attrs.dimensions;
  int64_t g = group_size(c);
  for (int i = 0; i < n; i++) {
    const hlo_shape *s = opnd(c, i), *ri = n == 1 ? r : &r->elems[i];
    if (!is_array(ri) || dl->n != 1 || ri->rank != s->rank || ri->type != s->type ||
        dl->v[0] < 0 || dl->v[0] >= s->rank)
      return fail(c, "operand %d has shape %s but the result is %s", i, fmt_shape(s, a),
                  fmt_shape(ri, b));
    int64_t d = dl->v[0];
    for (int k = 0; k < s->rank; k++) {
      int64_t big = gather ? ri->dims[k] : s->dims[k], small = gather ? s->dims[k] : ri->dims[k];
      bool ok;
      if (big < 0 || small < 0)
        ok = true;
      else if (k != d)
        ok = big == small;
      else if (g > 0)
        ok = big == mul_sat(small, g);
      else
        ok = small == 0 ? big == 0 : big % small == 0;
      if (!ok)
        return fail(c, "operand %d has shape %s but the result is %s%s", i, fmt_shape(s, a),
                    fmt_shape(ri, b), k == d && g > 0 ? " for replica groups of that size" : "");
    }
  }
  return 0;
}

static int all_to_all_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT];
  if (need_at_least(c, 1) < 0)
    return -1;
  const hlo_ints *dl = &c->in->attrs.dimensions;
  if (c->in->noperands == 1 && dl->n == 1) {
    const hlo_shape *s = opnd(c, 0);
    int64_t g = group_size(c);
    if (!is_array(s) || dl->v[0] < 0 || dl->v[0] >= s->rank)
      return fail(c, "dimensions must name one dimension of operand 0 (%s)", fmt_shape(s, a));
    int64_t n = s->dims[dl->v[0]];
    if (g > 0 && n >= 0 && n % g != 0)
      return fail(c, "split dimension size %lld is not divisible by the group size %lld",
                  (long long)n, (long long)g);
  }
  return same_as_operands(c, out);
}

/* ragged-all-to-all(input, output, input_offsets, send_sizes,
 * output_offsets, recv_sizes): the result is the output buffer's shape.
 * Input and output share the element type and every dimension but the
 * first (rows are slices along it); the four metadata operands are rank-1
 * s32 or s64 arrays of one length, which holds the same number of updates
 * for every member of a group. */
static int ragged_all_to_all_rule(const ctx *c, hlo_shape *out) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (need_operands(c, 6) < 0 || need_arrays(c) < 0)
    return -1;
  const hlo_shape *in = opnd(c, 0), *o = opnd(c, 1);
  bool ok = in->type == o->type && in->rank == o->rank && in->rank >= 1;
  for (int k = 1; ok && k < in->rank; k++)
    ok = size_eq(in->dims[k], o->dims[k]);
  if (!ok)
    return fail(c, "input %s and output %s must have one element type, rank >= 1 and the same dimensions "
                   "but the first", fmt_shape(in, a), fmt_shape(o, b));
  const hlo_shape *m0 = opnd(c, 2);
  for (int i = 2; i < 6; i++) {
    const hlo_shape *m = opnd(c, i);
    if (m->rank != 1 || (m->type != HLO_S32 && m->type != HLO_S64) || !size_eq(m->dims[0], m0->dims[0]))
      return fail(c, "operands 2 to 5 must be rank-1 s32 or s64 arrays of one length, operand %d is %s", i,
                  fmt_shape(m, a));
  }
  int64_t g = group_size(c);
  if (g > 0 && m0->dims[0] >= 0 && m0->dims[0] % g != 0)
    return fail(c, "%lld metadata entries do not divide among groups of %lld", (long long)m0->dims[0],
                (long long)g);
  *out = *o;
  out->layout = NULL;
  return 1;
}

static int constant_rule(const ctx *c) {
  const hlo_literal *lit = c->in->literal;
  const hlo_shape *r = result(c);
  if (need_operands(c, 0) < 0)
    return -1;
  if (!lit || lit->elided || !is_array(r) || lit->ntuple > 0)
    return 0;
  int64_t n = elems(r);
  /* One value for a larger shape is a splat: `f32[4,4] constant(0)`. */
  if (n >= 0 && lit->count != n && lit->count != 1)
    return fail(c, "the literal has %lld elements but the shape needs %lld", (long long)lit->count,
                (long long)n);
  return 0;
}

/* ---- dispatch --------------------------------------------------------- */

int hlo_infer_shape(const hlo_instr *in, hlo_arena *scratch, hlo_shape *out, hlo_error *err) {
  ctx c = {in, scratch, err};
  switch (in->op) {
  /* unary, same type */
  case HLO_OP_NEGATE: case HLO_OP_SIGN: case HLO_OP_FLOOR: case HLO_OP_CEIL:
  case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN: case HLO_OP_EXP: case HLO_OP_EXPM1:
  case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC: case HLO_OP_TANH:
  case HLO_OP_SQRT: case HLO_OP_RSQRT: case HLO_OP_CBRT: case HLO_OP_SINE:
  case HLO_OP_COSINE: case HLO_OP_TAN: case HLO_OP_ERF: case HLO_OP_NOT:
  case HLO_OP_POPCNT: case HLO_OP_CLZ: case HLO_OP_REDUCE_PRECISION:
    return elementwise(&c, 1, ET_SAME);
  case HLO_OP_ABS: case HLO_OP_REAL: case HLO_OP_IMAG:
    return elementwise(&c, 1, ET_REAL_PART);
  case HLO_OP_IS_FINITE:
    return elementwise(&c, 1, ET_PRED);
  case HLO_OP_CONVERT:
    return elementwise(&c, 1, ET_ANY);
  case HLO_OP_STOCHASTIC_CONVERT:
    return elementwise(&c, 2, ET_ANY);
  case HLO_OP_BITCAST_CONVERT:
    return bitcast_bits(&c);
  case HLO_OP_COPY:
    return need_operands(&c, 1) < 0 ? -1 : same_as_operands(&c, out);
  /* binary */
  case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY: case HLO_OP_DIVIDE:
  case HLO_OP_REMAINDER: case HLO_OP_POWER: case HLO_OP_ATAN2: case HLO_OP_MAXIMUM:
  case HLO_OP_MINIMUM: case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
  case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC: case HLO_OP_SHIFT_RIGHT_LOGICAL:
    return elementwise(&c, 2, ET_SAME);
  case HLO_OP_COMPARE:
    return elementwise(&c, 2, ET_PRED);
  case HLO_OP_COMPLEX:
    return elementwise(&c, 2, ET_TO_COMPLEX);
  case HLO_OP_SELECT:
    return select_rule(&c);
  case HLO_OP_CLAMP:
    return clamp_rule(&c);
  /* data movement */
  case HLO_OP_BROADCAST:
    return broadcast_rule(&c);
  case HLO_OP_RESHAPE:
    return reshape_rule(&c);
  case HLO_OP_BITCAST:
    return bitcast_rule(&c);
  case HLO_OP_TRANSPOSE:
    return transpose_rule(&c, out);
  case HLO_OP_SLICE:
    return slice_rule(&c, out);
  case HLO_OP_DYNAMIC_SLICE:
    return dynamic_slice_rule(&c, out);
  case HLO_OP_DYNAMIC_UPDATE_SLICE:
    return dynamic_update_slice_rule(&c, out);
  case HLO_OP_CONCATENATE:
    return concatenate_rule(&c, out);
  case HLO_OP_PAD:
    return pad_rule(&c, out);
  case HLO_OP_REVERSE:
    return reverse_rule(&c, out);
  case HLO_OP_IOTA:
    return iota_rule(&c);
  case HLO_OP_CONSTANT:
    return constant_rule(&c);
  case HLO_OP_PARAMETER:
    return need_operands(&c, 0);
  /* tuples */
  case HLO_OP_GET_TUPLE_ELEMENT:
    return gte_rule(&c, out);
  case HLO_OP_TUPLE:
    return tuple_of_operands(&c, out, 0, in->noperands);
  /* reductions and the rest */
  case HLO_OP_REDUCE:
    return reduce_rule(&c, out);
  case HLO_OP_REDUCE_WINDOW:
    return reduce_window_rule(&c, out);
  case HLO_OP_SELECT_AND_SCATTER:
    return select_and_scatter_rule(&c, out);
  case HLO_OP_DOT:
    return dot_rule(&c, out);
  case HLO_OP_CONVOLUTION:
    return convolution_rule(&c, out);
  case HLO_OP_GATHER:
    return gather_rule(&c, out);
  case HLO_OP_SCATTER:
    return scatter_rule(&c, out);
  case HLO_OP_SORT:
    return sort_rule(&c, out);
  case HLO_OP_WHILE:
    return need_operands(&c, 1) < 0 ? -1 : same_as_operands(&c, out);
  case HLO_OP_CONDITIONAL:
    return conditional_rule(&c);
  case HLO_OP_MAP:
    return map_rule(&c);
  case HLO_OP_OPT_BARRIER:
    return need_operands(&c, 1) < 0 ? -1 : same_as_operands(&c, out);
  case HLO_OP_ALL_REDUCE:
  case HLO_OP_ALL_REDUCE_START:
    return same_as_operands(&c, out);
  case HLO_OP_ALL_GATHER:
    return gather_scatter_dim(&c, true);
  case HLO_OP_REDUCE_SCATTER:
    return gather_scatter_dim(&c, false);
  case HLO_OP_ALL_TO_ALL:
    return all_to_all_rule(&c, out);
  case HLO_OP_COLLECTIVE_BROADCAST:
    return same_as_operands(&c, out);
  case HLO_OP_RAGGED_ALL_TO_ALL:
    return ragged_all_to_all_rule(&c, out);
  case HLO_OP_COLLECTIVE_PERMUTE:
    /* The combined form with buffers and offsets has 4 operands: no rule. */
    return in->noperands == 1 ? same_as_operands(&c, out) : 0;
  default:
    return 0;
  }
}
