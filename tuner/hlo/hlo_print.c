/* hlo_print.c — hlo_module to canonical HLO text.
 *
 * The canonical text is the one spelling every module is printed in, chosen
 * so that print(parse(print(m))) == print(m) byte for byte and
 * parse(print(m)) equals m under hlo_module_equal().  It follows the way XLA
 * writes modules today wherever XLA has one way, and fixes a choice where XLA
 * (or a hand-written file) allows several:
 *
 * Module
 *   `HloModule NAME, a=v, b=w` — the header attributes raw, exactly as stored
 *   and in stored order.  A header-less module (name NULL) has no header line.
 *   Then every computation in module order, a blank line before each one
 *   (the header line, when present, is followed by a blank line too).  The
 *   text ends with one newline.
 *
 * Computation
 *   `ENTRY NAME (p: f32[2], q: s32[]) -> f32[2] {` — `ENTRY` on the module's
 *   entry computation (always, even when the source relied on "the last one
 *   is the entry"), the signature only when the source had one.  Then the
 *   instructions, two spaces of indent, one per line, then `}`; when the
 *   computation has an execution thread: `}, execution_thread=RAW`.
 *
 * Instruction
 *   `  ROOT NAME = SHAPE OPCODE(OPERANDS), TYPED..., RAW...`
 *   - No `%` anywhere (XLA's modern style).
 *   - `ROOT` is written on the root always, even when the source left it to
 *     "the last instruction"; so root_marked is presentation, not structure.
 *   - Operands by name only, separated by ", ".
 *   - A shape whose type is HLO_INVALID (an instruction written without a
 *     result shape and left so by the parser) is omitted.
 *   - `parameter(N)` and `constant(LITERAL)` carry their data inside the
 *     parentheses.
 *   - Async sugar: an async op with async_wrapped set prints as
 *     `WRAPPED-start`, `WRAPPED-update`, `WRAPPED-done` (`fusion-start`).
 *   - Typed attributes (hlo_attrs), each only when its `has` bit is set (the
 *     called computations whenever they are set), in this fixed order:
 *       kind, direction, type, index, iota_dimension, dimensions, slice,
 *       padding, window, dim_labels, feature_group_count, batch_group_count,
 *       lhs_batch_dims, lhs_contracting_dims, rhs_batch_dims,
 *       rhs_contracting_dims, gather dnums (offset_dims, collapsed_slice_dims,
 *       start_index_map, operand_batching_dims, start_indices_batching_dims,
 *       index_vector_dim), slice_sizes, scatter dnums (update_window_dims,
 *       inserted_window_dims, scatter_dims_to_operand_dims,
 *       input_batching_dims, scatter_indices_batching_dims,
 *       index_vector_dim), indices_are_sorted, unique_indices,
 *       dynamic_slice_sizes, is_stable, channel_id, replica_groups,
 *       use_global_device_ids, source_target_pairs, exponent_bits,
 *       mantissa_bits, distribution, custom_call_target, operand_precision,
 *       to_apply, calls, condition, body, branch_computations (or
 *       true_computation/false_computation when the source used that form).
 *     Batch dims and batching dims are written only when non-empty (as XLA
 *     does); contracting dims and the other dnums lists always.  Booleans
 *     print as `=true`/`=false` by their value.
 *   - Then the raw attributes `name=value` exactly as stored, stored order.
 *
 * Spellings of typed values
 *   integer lists     `{0,1}`           (no spaces, as XLA writes dims)
 *   slice             `{[0:4], [1:3:2]}` (a stride of 1 is omitted)
 *   padding           `0_0x1_2`, with `_interior` on every dimension when
 *                     any dimension has interior padding: `0_0_0x1_2_1`
 *   window            `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=2x2
 *                     rhs_dilate=2x2 rhs_reversal=1x0}`, size always, every
 *                     other field only when some dimension differs from the
 *                     default (stride/dilation 1, pad 0, no reversal);
 *                     a rank-0 window is `{}`
 *   dim_labels        rebuilt from hlo_conv_dnums: `b01f_01io->b01f`
 *   replica_groups    `{{0,1},{2,3}}`; `{}` for no groups
 *   source_target_pairs `{{0,1},{1,2}}`
 *   operand_precision `{default,high,highest}`
 *   distribution      `rng_uniform`, `rng_normal`
 *   custom_call_target a C-style quoted string (`"` and `\` escaped)
 *   callees           by name; branch_computations `{a, b}`
 *
 * Shapes
 *   `f32[2,3]{1,0:T(8,128)(2,1)S(1)}`, `f32[<=8]`, `f32[?]`, `f32[]`,
 *   `(f32[], (s32[2], pred[]))`, `()`, `token[]`.  A layout prints as
 *   `{minor_to_major` then, when there is anything after it, `:` and the
 *   tiles (`*` for a combined dimension), the extra layout items as stored,
 *   and `S(n)` when the memory space is not 0; then `}`.  A layout with
 *   nothing at all prints as `{}`; a missing layout prints nothing.
 *
 * Literals (inside `constant(...)`)
 *   - rank 0: the bare value; arrays: braces nested by the shape's
 *     dimensions, `{{1, 2}, {3, 4}}`, also when empty: f32[2,0] is
 *     `{{}, {}}` and f32[0] is `{}`.
 *     A single value stored for an array of another size (the splat
 *     spelling `f32[4,4] constant(0)`) prints bare, as it was written; any
 *     other count that disagrees with the shape is written as one flat
 *     brace list (such a module is invalid anyway).
 *   - integers in decimal; pred as true/false; complex as `(re, im)`.
 *   - floats: an integral value below 2^53 in magnitude as an integer
 *     (`1`, `-448`, as XLA does), except -0 which is `-0.0` so that no
 *     reader can take it for the integer 0; otherwise the shortest of %.15g,
 *     %.16g, %.17g that strtod() reads back to the same bits; `inf`, `-inf`,
 *     `nan`, `-nan`.
 *   - NaN payloads: a NaN that is not the default quiet NaN (sign aside)
 *     prints as `nan(0xP)` / `-nan(0xP)` where P is the double's 52-bit
 *     mantissa with the quiet bit flipped.  So the default NaN has no
 *     payload, `nan(0x1)` is the quiet NaN with mantissa low bit set, and a
 *     signalling NaN shows bit 51 in P.  The parser reads this convention
 *     back (hlo_parse.c nan_payload), so every NaN bit pattern round-trips.
 *   - tuple literals `(a, b)` by the tuple shape; `{...}` for an elided one.
 *
 * Speed: everything goes through one growable buffer (doubling, so appends
 * are amortised O(1)); numbers are formatted by hand except non-integral
 * floats.  hlo_print_module_to() reuses a fixed buffer and flushes it to the
 * FILE, so printing a large module does not hold all of its text at once.
 */
#include "hlo_print.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the output buffer ------------------------------------------------ */

enum { FLUSH_AT = 1 << 16, FIRST_CAP = 1 << 12 };

typedef struct out {
  char *buf;
  size_t len, cap;
  FILE *f;     /* when set, the buffer is written out instead of grown */
  bool failed; /* out of memory or a write error; later appends are no-ops */
} out;

static bool out_flush(out *o) {
  if (!o->f || o->len == 0)
    return !o->failed;
  if (!o->failed && fwrite(o->buf, 1, o->len, o->f) != o->len)
    o->failed = true;
  o->len = 0;
  return !o->failed;
}

/* Makes room for n more bytes; false when that is impossible. */
static bool out_reserve(out *o, size_t n) {
  if (o->failed)
    return false;
  if (o->cap - o->len >= n)
    return true;
  if (o->f) {
    out_flush(o);
    if (o->failed)
      return false;
    if (o->cap - o->len >= n)
      return true;
  }
  size_t cap = o->cap ? o->cap : FIRST_CAP;
  while (cap - o->len < n) {
    if (cap > SIZE_MAX / 2) {
      o->failed = true;
      return false;
    }
    cap *= 2;
  }
  char *nb = realloc(o->buf, cap);
  if (!nb) {
    o->failed = true;
    return false;
  }
  o->buf = nb;
  o->cap = cap;
  return true;
}

static void put(out *o, const char *s, size_t n) {
  if (n == 0 || !out_reserve(o, n))
    return;
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  if (o->f && o->len >= FLUSH_AT)
    out_flush(o);
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void putc_(out *o, char c) {
  if (o->len < o->cap && !o->failed)
    o->buf[o->len++] = c;
  else
    put(o, &c, 1);
}

static void put_u64(out *o, uint64_t v) {
  char tmp[24];
  int i = (int)sizeof tmp;
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  put(o, tmp + i, sizeof tmp - (size_t)i);
}

static void put_i64(out *o, int64_t v) {
  if (v < 0) {
    putc_(o, '-');
    /* negate in unsigned arithmetic so INT64_MIN is fine */
    put_u64(o, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(o, (uint64_t)v);
  }
}

/* ---- numbers ---------------------------------------------------------- */

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

#define DBL_MANT_MASK ((UINT64_C(1) << 52) - 1)
#define DBL_QUIET_BIT (UINT64_C(1) << 51)

/* Floats are written so that strtod() gives back the same bits; NaNs as
 * described at the top of the file. */
static void put_double(out *o, double v) {
  if (isnan(v)) {
    uint64_t b = dbits(v);
    if (b >> 63)
      putc_(o, '-');
    uint64_t payload = (b & DBL_MANT_MASK) ^ DBL_QUIET_BIT;
    puts_(o, "nan");
    if (payload) {
      char tmp[32];
      snprintf(tmp, sizeof tmp, "(0x%" PRIx64 ")", payload);
      puts_(o, tmp);
    }
    return;
  }
  if (isinf(v)) {
    puts_(o, v < 0 ? "-inf" : "inf");
    return;
  }
  if (v == 0 && signbit(v)) {
    puts_(o, "-0.0");
    return;
  }
  if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    put_i64(o, (int64_t)v);
    return;
  }
  char tmp[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (prec == 17 || dbits(strtod(tmp, NULL)) == dbits(v))
      break;
  }
  puts_(o, tmp);
}

/* ---- shapes ----------------------------------------------------------- */

static void put_ints_sep(out *o, const hlo_ints *x, char sep) {
  for (int i = 0; i < x->n; i++) {
    if (i)
      putc_(o, sep);
    put_i64(o, x->v[i]);
  }
}

/* `{0,1}` */
static void put_ints(out *o, const hlo_ints *x) {
  putc_(o, '{');
  put_ints_sep(o, x, ',');
  putc_(o, '}');
}

static void put_layout(out *o, const hlo_layout *l) {
  putc_(o, '{');
  put_ints_sep(o, &l->minor_to_major, ',');
  bool extra = l->extra && l->extra[0];
  if (l->ntiles > 0 || l->memory_space != 0 || extra) {
    putc_(o, ':');
    for (int t = 0; t < l->ntiles; t++) {
      /* XLA writes one T for the whole tiling: T(8,128)(2,1) */
      const hlo_ints *d = &l->tiles[t].dims;
      if (t == 0)
        putc_(o, 'T');
      putc_(o, '(');
      for (int i = 0; i < d->n; i++) {
        if (i)
          putc_(o, ',');
        if (d->v[i] == HLO_TILE_COMBINE)
          putc_(o, '*');
        else
          put_i64(o, d->v[i]);
      }
      putc_(o, ')');
    }
    if (extra)
      puts_(o, l->extra);
    if (l->memory_space != 0) {
      puts_(o, "S(");
      put_i64(o, l->memory_space);
      putc_(o, ')');
    }
  }
  putc_(o, '}');
}

static void put_shape(out *o, const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    putc_(o, '(');
    for (int i = 0; i < s->ntuple; i++) {
      if (i)
        puts_(o, ", ");
      put_shape(o, &s->elems[i]);
    }
    putc_(o, ')');
    return;
  }
  puts_(o, hlo_etype_name(s->type));
  putc_(o, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i)
      putc_(o, ',');
    int dyn = s->dynamic ? s->dynamic[i] : HLO_DIM_STATIC;
    if (dyn == HLO_DIM_UNBOUNDED) {
      putc_(o, '?');
    } else {
      if (dyn == HLO_DIM_BOUNDED)
        puts_(o, "<=");
      put_i64(o, s->dims[i]);
    }
  }
  putc_(o, ']');
  if (s->layout)
    put_layout(o, s->layout);
}

/* ---- literals --------------------------------------------------------- */

static void put_element(out *o, const hlo_literal *l, hlo_etype t, int64_t k) {
  if (l->f) {
    if (hlo_etype_class(t) == HLO_CLASS_COMPLEX) {
      putc_(o, '(');
      put_double(o, l->f[2 * k]);
      puts_(o, ", ");
      put_double(o, l->f[2 * k + 1]);
      putc_(o, ')');
    } else {
      put_double(o, l->f[k]);
    }
  } else if (l->u) {
    put_u64(o, l->u[k]);
  } else if (l->i) {
    if (t == HLO_PRED)
      puts_(o, l->i[k] ? "true" : "false");
    else
      put_i64(o, l->i[k]);
  }
}

/* One brace level per dimension; *k walks the flat element array. */
static void put_array(out *o, const hlo_literal *l, const hlo_shape *s, int dim, int64_t *k) {
  putc_(o, '{');
  for (int64_t j = 0; j < s->dims[dim]; j++) {
    if (j)
      puts_(o, ", ");
    if (dim == s->rank - 1)
      put_element(o, l, s->type, (*k)++);
    else
      put_array(o, l, s, dim + 1, k);
  }
  putc_(o, '}');
}

static void put_literal(out *o, const hlo_literal *l, const hlo_shape *s) {
  if (l->elided) {
    puts_(o, "{...}");
    return;
  }
  if (s->type == HLO_TUPLE || l->ntuple > 0) {
    putc_(o, '(');
    for (int i = 0; i < l->ntuple; i++) {
      if (i)
        puts_(o, ", ");
      const hlo_shape *es = (s->type == HLO_TUPLE && i < s->ntuple) ? &s->elems[i] : s;
      put_literal(o, &l->elems[i], es);
    }
    putc_(o, ')');
    return;
  }
  bool has_data = l->f || l->i || l->u;
  int64_t n = hlo_shape_elements(s);
  /* rank 0, or one value for a whole array (the splat spelling
   * `f32[4,4] constant(0)` that some XLA tests use) */
  if (l->count == 1 && has_data && (s->rank == 0 || n != 1)) {
    put_element(o, l, s->type, 0);
    return;
  }
  /* The parser checks the element count of every brace level against the
   * shape, so an empty array still nests by its dimensions: f32[2,0] is
   * `{{}, {}}`. */
  if (n == l->count && (has_data || n == 0) && s->rank > 0) {
    int64_t k = 0;
    put_array(o, l, s, 0, &k);
    return;
  }
  /* A count that does not match the shape: one flat list. */
  putc_(o, '{');
  for (int64_t k = 0; has_data && k < l->count; k++) {
    if (k)
      puts_(o, ", ");
    put_element(o, l, s->type, k);
  }
  putc_(o, '}');
}

/* ---- typed attributes ------------------------------------------------- */

static void put_attr_name(out *o, const char *name) {
  puts_(o, ", ");
  puts_(o, name);
  putc_(o, '=');
}

static void attr_ints(out *o, const char *name, const hlo_ints *x) {
  put_attr_name(o, name);
  put_ints(o, x);
}

static void attr_i64(out *o, const char *name, int64_t v) {
  put_attr_name(o, name);
  put_i64(o, v);
}

static void attr_bool(out *o, const char *name, bool v) {
  put_attr_name(o, name);
  puts_(o, v ? "true" : "false");
}

static void attr_callee(out *o, const char *name, const hlo_computation *c) {
  if (!c)
    return;
  put_attr_name(o, name);
  puts_(o, c->name);
}

/* The parser decodes \" \\ \n \t \r in strings, so exactly those are
 * escaped; every other byte is written as it is. */
static void put_quoted(out *o, const char *s) {
  putc_(o, '"');
  for (; *s; s++) {
    char c = *s;
    const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                    : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
    if (esc)
      puts_(o, esc);
    else
      putc_(o, c);
  }
  putc_(o, '"');
}

/* Window fields: each written only when some dimension is not default. */
enum { WF_SIZE, WF_STRIDE, WF_PAD, WF_LHS_DILATE, WF_RHS_DILATE, WF_REVERSAL };

static bool window_field_used(const hlo_window *w, int f) {
  for (int i = 0; i < w->rank; i++) {
    const hlo_window_dim *d = &w->dims[i];
    switch (f) {
    case WF_SIZE:
      return true;
    case WF_STRIDE:
      if (d->stride != 1)
        return true;
      break;
    case WF_PAD:
      if (d->pad_lo != 0 || d->pad_hi != 0)
        return true;
      break;
    case WF_LHS_DILATE:
      if (d->lhs_dilate != 1)
        return true;
      break;
    case WF_RHS_DILATE:
      if (d->rhs_dilate != 1)
        return true;
      break;
    case WF_REVERSAL:
      if (d->reversal)
        return true;
      break;
    }
  }
  return false;
}

static void put_window(out *o, const hlo_window *w) {
  static const char *const names[] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate",
                                      "rhs_reversal"};
  putc_(o, '{');
  bool first = true;
  for (int f = WF_SIZE; f <= WF_REVERSAL; f++) {
    if (!window_field_used(w, f))
      continue;
    if (!first)
      putc_(o, ' ');
    first = false;
    puts_(o, names[f]);
    putc_(o, '=');
    for (int i = 0; i < w->rank; i++) {
      const hlo_window_dim *d = &w->dims[i];
      if (i)
        putc_(o, 'x');
      switch (f) {
      case WF_SIZE:
        put_i64(o, d->size);
        break;
      case WF_STRIDE:
        put_i64(o, d->stride);
        break;
      case WF_PAD:
        put_i64(o, d->pad_lo);
        putc_(o, '_');
        put_i64(o, d->pad_hi);
        break;
      case WF_LHS_DILATE:
        put_i64(o, d->lhs_dilate);
        break;
      case WF_RHS_DILATE:
        put_i64(o, d->rhs_dilate);
        break;
      case WF_REVERSAL:
        putc_(o, d->reversal ? '1' : '0');
        break;
      }
    }
  }
  putc_(o, '}');
}

static void put_padding(out *o, int n, const hlo_pad_dim *p) {
  bool interior = false;
  for (int i = 0; i < n; i++)
    if (p[i].interior != 0)
      interior = true;
  for (int i = 0; i < n; i++) {
    if (i)
      putc_(o, 'x');
    put_i64(o, p[i].lo);
    putc_(o, '_');
    put_i64(o, p[i].hi);
    if (interior) {
      putc_(o, '_');
      put_i64(o, p[i].interior);
    }
  }
}

static void put_slice(out *o, int n, const hlo_slice_dim *s) {
  putc_(o, '{');
  for (int i = 0; i < n; i++) {
    if (i)
      puts_(o, ", ");
    putc_(o, '[');
    put_i64(o, s[i].start);
    putc_(o, ':');
    put_i64(o, s[i].limit);
    if (s[i].stride != 1) {
      putc_(o, ':');
      put_i64(o, s[i].stride);
    }
    putc_(o, ']');
  }
  putc_(o, '}');
}

/* One dim_labels group: a char per dimension, `b`/`f` (or `i`/`o`) at the
 * two named positions and the spatial index digit at each spatial one.  A
 * position nothing names, or a spatial index past 9, prints as `?`: the
 * numbers are then inconsistent and the verifier, not the printer, says so. */
static void put_labels(out *o, int64_t p0, char c0, int64_t p1, char c1, const hlo_ints *sp) {
  int64_t rank = 2 + sp->n;
  char tmp[64];
  if (rank > (int64_t)sizeof tmp) {
    puts_(o, "?");
    return;
  }
  memset(tmp, '?', (size_t)rank);
  if (p0 >= 0 && p0 < rank)
    tmp[p0] = c0;
  if (p1 >= 0 && p1 < rank)
    tmp[p1] = c1;
  for (int k = 0; k < sp->n; k++)
    if (sp->v[k] >= 0 && sp->v[k] < rank)
      tmp[sp->v[k]] = k < 10 ? (char)('0' + k) : '?';
  put(o, tmp, (size_t)rank);
}

static void put_dim_labels(out *o, const hlo_conv_dnums *c) {
  put_labels(o, c->input_batch, 'b', c->input_feature, 'f', &c->input_spatial);
  putc_(o, '_');
  put_labels(o, c->kernel_input_feature, 'i', c->kernel_output_feature, 'o', &c->kernel_spatial);
  puts_(o, "->");
  put_labels(o, c->output_batch, 'b', c->output_feature, 'f', &c->output_spatial);
}

static const char *cmp_dir_name(hlo_cmp_dir d) {
  switch (d) {
  case HLO_CMP_EQ: return "EQ";
  case HLO_CMP_NE: return "NE";
  case HLO_CMP_LT: return "LT";
  case HLO_CMP_LE: return "LE";
  case HLO_CMP_GT: return "GT";
  case HLO_CMP_GE: return "GE";
  default: return "NONE";
  }
}

static const char *cmp_type_name(hlo_cmp_type t) {
  switch (t) {
  case HLO_CMPT_FLOAT: return "FLOAT";
  case HLO_CMPT_TOTALORDER: return "TOTALORDER";
  case HLO_CMPT_SIGNED: return "SIGNED";
  case HLO_CMPT_UNSIGNED: return "UNSIGNED";
  default: return "NONE";
  }
}

static const char *precision_name(hlo_precision p) {
  switch (p) {
  case HLO_PREC_HIGH: return "high";
  case HLO_PREC_HIGHEST: return "highest";
  default: return "default";
  }
}

static const char *distribution_name(hlo_rng_dist d) {
  switch (d) {
  case HLO_RNG_UNIFORM: return "rng_uniform";
  case HLO_RNG_NORMAL: return "rng_normal";
  default: return "rng_default";
  }
}

static void put_typed_attrs(out *o, const hlo_attrs *a) {
  uint32_t h = a->has;
  if ((h & HLO_A_KIND) && a->kind) {
    put_attr_name(o, "kind");
    puts_(o, a->kind);
  }
  if (h & HLO_A_DIRECTION) {
    put_attr_name(o, "direction");
    puts_(o, cmp_dir_name(a->direction));
  }
  if (h & HLO_A_CMP_TYPE) {
    put_attr_name(o, "type");
    puts_(o, cmp_type_name(a->cmp_type));
  }
  if (h & HLO_A_INDEX)
    attr_i64(o, "index", a->index);
  if (h & HLO_A_IOTA_DIMENSION)
    attr_i64(o, "iota_dimension", a->iota_dimension);
  if (h & HLO_A_DIMENSIONS)
    attr_ints(o, "dimensions", &a->dimensions);
  if (h & HLO_A_SLICE) {
    put_attr_name(o, "slice");
    put_slice(o, a->nslice, a->slice);
  }
  if (h & HLO_A_PADDING) {
    put_attr_name(o, "padding");
    put_padding(o, a->npad, a->pad);
  }
  if (h & HLO_A_WINDOW) {
    put_attr_name(o, "window");
    put_window(o, &a->window);
  }
  if (h & HLO_A_DIM_LABELS) {
    put_attr_name(o, "dim_labels");
    put_dim_labels(o, &a->conv);
  }
  if (h & HLO_A_FEATURE_GROUP_COUNT)
    attr_i64(o, "feature_group_count", a->feature_group_count);
  if (h & HLO_A_BATCH_GROUP_COUNT)
    attr_i64(o, "batch_group_count", a->batch_group_count);
  if (h & HLO_A_DOT_DNUMS) {
    const hlo_dot_dnums *d = &a->dot;
    if (d->lhs_batch.n)
      attr_ints(o, "lhs_batch_dims", &d->lhs_batch);
    attr_ints(o, "lhs_contracting_dims", &d->lhs_contracting);
    if (d->rhs_batch.n)
      attr_ints(o, "rhs_batch_dims", &d->rhs_batch);
    attr_ints(o, "rhs_contracting_dims", &d->rhs_contracting);
  }
  if (h & HLO_A_GATHER_DNUMS) {
    const hlo_gather_dnums *g = &a->gather;
    attr_ints(o, "offset_dims", &g->offset_dims);
    attr_ints(o, "collapsed_slice_dims", &g->collapsed_slice_dims);
    attr_ints(o, "start_index_map", &g->start_index_map);
    if (g->operand_batching_dims.n)
      attr_ints(o, "operand_batching_dims", &g->operand_batching_dims);
    if (g->start_indices_batching_dims.n)
      attr_ints(o, "start_indices_batching_dims", &g->start_indices_batching_dims);
    attr_i64(o, "index_vector_dim", g->index_vector_dim);
  }
  if (h & HLO_A_SLICE_SIZES)
    attr_ints(o, "slice_sizes", &a->slice_sizes);
  if (h & HLO_A_SCATTER_DNUMS) {
    const hlo_scatter_dnums *s = &a->scatter;
    attr_ints(o, "update_window_dims", &s->update_window_dims);
    attr_ints(o, "inserted_window_dims", &s->inserted_window_dims);
    attr_ints(o, "scatter_dims_to_operand_dims", &s->scatter_dims_to_operand_dims);
    if (s->input_batching_dims.n)
      attr_ints(o, "input_batching_dims", &s->input_batching_dims);
    if (s->scatter_indices_batching_dims.n)
      attr_ints(o, "scatter_indices_batching_dims", &s->scatter_indices_batching_dims);
    attr_i64(o, "index_vector_dim", s->index_vector_dim);
  }
  if (h & HLO_A_INDICES_ARE_SORTED)
    attr_bool(o, "indices_are_sorted", a->indices_are_sorted);
  if (h & HLO_A_UNIQUE_INDICES)
    attr_bool(o, "unique_indices", a->unique_indices);
  if (h & HLO_A_DYNAMIC_SLICE_SIZES)
    attr_ints(o, "dynamic_slice_sizes", &a->dynamic_slice_sizes);
  if (h & HLO_A_IS_STABLE)
    attr_bool(o, "is_stable", a->is_stable);
  if (h & HLO_A_CHANNEL_ID)
    attr_i64(o, "channel_id", a->channel_id);
  if (h & HLO_A_REPLICA_GROUPS) {
    put_attr_name(o, "replica_groups");
    putc_(o, '{');
    for (int g = 0; g < a->replica_groups.ngroups; g++) {
      if (g)
        putc_(o, ',');
      put_ints(o, &a->replica_groups.groups[g]);
    }
    putc_(o, '}');
  }
  if (h & HLO_A_USE_GLOBAL_DEVICE_IDS)
    attr_bool(o, "use_global_device_ids", a->use_global_device_ids);
  if (h & HLO_A_SOURCE_TARGET_PAIRS) {
    put_attr_name(o, "source_target_pairs");
    putc_(o, '{');
    for (int p = 0; p < a->npairs; p++) {
      if (p)
        putc_(o, ',');
      putc_(o, '{');
      put_i64(o, a->pairs[p].a);
      putc_(o, ',');
      put_i64(o, a->pairs[p].b);
      putc_(o, '}');
    }
    putc_(o, '}');
  }
  if (h & HLO_A_EXPONENT_BITS)
    attr_i64(o, "exponent_bits", a->exponent_bits);
  if (h & HLO_A_MANTISSA_BITS)
    attr_i64(o, "mantissa_bits", a->mantissa_bits);
  if (h & HLO_A_DISTRIBUTION) {
    put_attr_name(o, "distribution");
    puts_(o, distribution_name(a->distribution));
  }
  if ((h & HLO_A_CUSTOM_CALL_TARGET) && a->custom_call_target) {
    put_attr_name(o, "custom_call_target");
    put_quoted(o, a->custom_call_target);
  }
  if (h & HLO_A_OPERAND_PRECISION) {
    put_attr_name(o, "operand_precision");
    putc_(o, '{');
    for (int i = 0; i < a->nprecision; i++) {
      if (i)
        putc_(o, ',');
      puts_(o, precision_name(a->precision[i]));
    }
    putc_(o, '}');
  }

  const hlo_calls *c = &a->calls;
  attr_callee(o, "to_apply", c->to_apply);
  attr_callee(o, "calls", c->calls);
  attr_callee(o, "condition", c->condition);
  attr_callee(o, "body", c->body);
  if (c->true_false_form && c->nbranches == 2) {
    attr_callee(o, "true_computation", c->branches[0]);
    attr_callee(o, "false_computation", c->branches[1]);
  } else if (c->nbranches > 0) {
    put_attr_name(o, "branch_computations");
    putc_(o, '{');
    for (int i = 0; i < c->nbranches; i++) {
      if (i)
        puts_(o, ", ");
      puts_(o, c->branches[i] ? c->branches[i]->name : "?");
    }
    putc_(o, '}');
  }
}

/* ---- instructions, computations, modules ------------------------------ */

static void put_opcode(out *o, const hlo_instr *in) {
  if (in->async_wrapped != HLO_OP_INVALID &&
      (in->op == HLO_OP_ASYNC_START || in->op == HLO_OP_ASYNC_UPDATE ||
       in->op == HLO_OP_ASYNC_DONE)) {
    puts_(o, hlo_opcode_name(in->async_wrapped));
    puts_(o, in->op == HLO_OP_ASYNC_START    ? "-start"
             : in->op == HLO_OP_ASYNC_UPDATE ? "-update"
                                             : "-done");
    return;
  }
  puts_(o, hlo_opcode_name(in->op));
}

static void put_instr(out *o, const hlo_instr *in, bool is_root) {
  puts_(o, is_root ? "  ROOT " : "  ");
  puts_(o, in->name);
  puts_(o, " = ");
  if (in->shape.type != HLO_INVALID) {
    put_shape(o, &in->shape);
    putc_(o, ' ');
  }
  put_opcode(o, in);
  putc_(o, '(');
  if (in->op == HLO_OP_PARAMETER) {
    put_i64(o, in->parameter_number);
  } else if (in->op == HLO_OP_CONSTANT && in->literal) {
    put_literal(o, in->literal, &in->shape);
  } else {
    for (int i = 0; i < in->noperands; i++) {
      if (i)
        puts_(o, ", ");
      puts_(o, in->operands[i] ? in->operands[i]->name : "?");
    }
  }
  putc_(o, ')');
  put_typed_attrs(o, &in->attrs);
  for (int i = 0; i < in->nraw; i++) {
    puts_(o, ", ");
    puts_(o, in->raw[i].name);
    if (in->raw[i].value) {
      putc_(o, '=');
      puts_(o, in->raw[i].value);
    }
  }
  putc_(o, '\n');
}

static void put_computation(out *o, const hlo_computation *c, bool is_entry) {
  if (is_entry)
    puts_(o, "ENTRY ");
  puts_(o, c->name);
  if (c->has_signature) {
    puts_(o, " (");
    for (int i = 0; i < c->nsig_params; i++) {
      if (i)
        puts_(o, ", ");
      puts_(o, c->sig_param_names[i]);
      puts_(o, ": ");
      put_shape(o, &c->sig_param_shapes[i]);
    }
    puts_(o, ") -> ");
    put_shape(o, &c->sig_result);
  }
  puts_(o, " {\n");
  for (int i = 0; i < c->ninstrs; i++)
    put_instr(o, c->instrs[i], c->instrs[i] == c->root);
  putc_(o, '}');
  if (c->execution_thread) {
    puts_(o, ", execution_thread=");
    puts_(o, c->execution_thread);
  }
  putc_(o, '\n');
}

static void put_module(out *o, const hlo_module *m) {
  if (m->name) {
    puts_(o, "HloModule ");
    puts_(o, m->name);
    for (int i = 0; i < m->nattrs; i++) {
      puts_(o, ", ");
      puts_(o, m->attrs[i].name);
      if (m->attrs[i].value) {
        putc_(o, '=');
        puts_(o, m->attrs[i].value);
      }
    }
    putc_(o, '\n');
  }
  for (int i = 0; i < m->ncomps; i++) {
    const hlo_computation *c = m->comps[i];
    if (i > 0 || m->name)
      putc_(o, '\n');
    bool is_entry = m->entry ? c == m->entry : c->is_entry;
    put_computation(o, c, is_entry);
  }
}

/* ---- public ----------------------------------------------------------- */

/* Hands the buffer over as a NUL-terminated string, or frees it. */
static char *out_finish(out *o, size_t *len) {
  putc_(o, '\0');
  if (o->failed) {
    free(o->buf);
    return NULL;
  }
  if (len)
    *len = o->len - 1;
  return o->buf;
}

char *hlo_print_module(const hlo_module *m, size_t *len) {
  out o = {0};
  put_module(&o, m);
  return out_finish(&o, len);
}

int hlo_print_module_to(const hlo_module *m, FILE *f) {
  out o = {0};
  o.f = f;
  o.buf = malloc(FLUSH_AT * 2);
  if (!o.buf)
    return -1;
  o.cap = FLUSH_AT * 2;
  put_module(&o, m);
  bool ok = out_flush(&o);
  free(o.buf);
  /* stdio may still hold the tail; a full disk shows only when it is
   * flushed, and the caller asked whether the text was written. */
  if (fflush(f) != 0 || ferror(f))
    ok = false;
  return ok ? 0 : -1;
}

char *hlo_print_shape(const hlo_shape *s) {
  out o = {0};
  put_shape(&o, s);
  return out_finish(&o, NULL);
}
