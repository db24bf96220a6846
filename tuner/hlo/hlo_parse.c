/* hlo_parse.c — recursive descent from HLO text to hlo_module.
 *
 * Grammar, informally (blanks and comments anywhere between tokens):
 *
 *   module      := header? computation+
 *   header      := 'HloModule' name (',' name '=' raw)*
 *   computation := 'ENTRY'? name signature? (',' thread)? '{' instr+ '}' (',' thread)?
 *   signature   := '(' (name ':' shape (',' name ':' shape)*)? ')' '->' shape
 *   instr       := 'ROOT'? name '=' shape? opcode '(' operands ')' (',' attr)*
 *   operand     := shape? name
 *   attr        := name '=' value      (typed by name, else kept raw)
 *
 * Memory: every node goes into the module's arena.  Lists whose length is
 * only known at their end (operands, instructions, dims, literal values...)
 * are collected on growable scratch stacks owned by the parser and then
 * copied into the arena in one piece.  The stacks are used strictly LIFO
 * (each user remembers its base and truncates back to it), which is what lets
 * an inline computation (`to_apply={ ... }`) be parsed in the middle of an
 * instruction without disturbing it.
 *
 * Names: instruction names are checked for duplicates as they are defined
 * and operands resolved at once when already defined; the rest are queued
 * and resolved when the computation ends (forward references are allowed).
 * Called computations are queued and resolved when the module ends.  Both use
 * a small open-addressing hash table, so a 500k-instruction computation stays
 * linear.
 *
 * Typed or raw: an attribute is typed by its name (the table attr_names),
 * except that gather/scatter dimension numbers are typed only on gather and
 * scatter; everything else keeps its exact source text in `raw`, so a typed
 * attribute is never also raw.
 *
 * Accepted beyond the grammar above, because XLA writes or accepts them:
 * `X-start`/`X-update`/`X-done` async sugar; computations written in place
 * (`to_apply={ ... }`, added to the module under a generated name); results
 * without a shape for tuple, get-tuple-element and elementwise ops (inferred
 * once the computation is read); a bare value for an array constant (splat,
 * stored as count 1); a `:` right after the module name.
 *
 * Errors: every failure records the first error (hlo_lex_error) and returns
 * -1 or NULL up the call chain; hlo_parse() then frees the arena and the
 * scratch stacks, so no error path can leak.
 */
#include "hlo_parse.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_dtype.h"
#include "hlo_index.h"
#include "hlo_lex.h"

enum { MAX_DEPTH = 64 };                   /* tuples, literals, inline computations */
enum { MAX_REPLICA_IDS = 1 << 24 };        /* expanded iota replica groups */

/* ---- scratch stacks ---------------------------------------------------- */

typedef struct vec {
  char *p;
  size_t n, cap; /* in bytes */
} vec;

#define VLEN(v, T) ((v).n / sizeof(T))
#define VAT(v, T, i) (((T *)(v).p)[i])

typedef struct pending_operand {
  hlo_instr *user;
  int idx;
  const char *name;
  size_t len;
  hlo_pos pos;
} pending_operand;

typedef struct pending_call {
  hlo_computation **slot;
  const char *name;
  size_t len;
  hlo_pos pos;
} pending_call;

/* ---- name tables ------------------------------------------------------- */

typedef struct name_slot {
  const char *name; /* NUL-terminated arena copy; NULL = empty slot */
  size_t len;
  uint32_t hash;
  void *val;
} name_slot;

typedef struct name_table {
  name_slot *slots;
  size_t cap, count;
} name_table;

typedef struct parser {
  hlo_lex lx;
  hlo_arena *arena;
  int depth;
  vec ints;     /* int64_t: dims (as pairs), lists */
  vec instrs;   /* hlo_instr*: the computations being built */
  vec operands; /* hlo_instr*: the instruction being built */
  vec shapes;   /* hlo_shape: tuple elements */
  vec tiles;    /* hlo_tile */
  vec raws;     /* hlo_raw_attr */
  vec vals;     /* 8-byte literal values */
  vec strs;     /* const char*: signature parameter names */
  vec groups;   /* hlo_ints: replica groups */
  vec chars;    /* layout extra text */
  vec precs;    /* hlo_precision */
  vec fwd;      /* pending_operand */
  vec calls;    /* pending_call */
  vec comps;    /* hlo_computation*, in completion order */
  name_table comp_names;
} parser;

static int oom(parser *P) {
  if (!P->lx.failed) {
    P->lx.failed = true;
    hlo_error_set(P->lx.err, 0, 0, "out of memory");
  }
  return -1;
}

/* Appends sz bytes (copied from elem) to v; -1 on out of memory. */
static int vpush(parser *P, vec *v, const void *elem, size_t sz) {
  if (v->cap - v->n < sz) {
    size_t cap = v->cap ? v->cap * 2 : 256;
    while (cap - v->n < sz)
      cap *= 2;
    char *np = realloc(v->p, cap);
    if (!np)
      return oom(P);
    v->p = np;
    v->cap = cap;
  }
  memcpy(v->p + v->n, elem, sz);
  v->n += sz;
  return 0;
}

/* Copies the top of v from byte offset base into the arena and pops it. */
static void *vpop_to_arena(parser *P, vec *v, size_t base) {
  size_t n = v->n - base;
  void *dst = hlo_arena_alloc(P->arena, n ? n : 1);
  if (!dst) {
    oom(P);
    return NULL;
  }
  if (n)
    memcpy(dst, v->p + base, n);
  v->n = base;
  return dst;
}

static void vfree(vec *v) {
  free(v->p);
  v->p = NULL;
  v->n = v->cap = 0;
}

static void *arena_new(parser *P, size_t n) {
  void *p = hlo_arena_alloc(P->arena, n);
  if (!p)
    oom(P);
  return p;
}

static char *arena_str(parser *P, const char *s, size_t n) {
  char *p = hlo_arena_strndup(P->arena, s, n);
  if (!p)
    oom(P);
  return p;
}

static uint32_t name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static void *nt_find(const name_table *t, const char *s, size_t n, uint32_t h) {
  if (!t->cap)
    return NULL;
  for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    const name_slot *e = &t->slots[i];
    if (!e->name)
      return NULL;
    if (e->hash == h && e->len == n && memcmp(e->name, s, n) == 0)
      return e->val;
  }
}

static void nt_prefetch(const name_table *t, uint32_t h) {
  if (t->cap)
    __builtin_prefetch(&t->slots[h & (t->cap - 1)]);
}

static void nt_place(name_slot *slots, size_t cap, name_slot e) {
  size_t i = e.hash & (cap - 1);
  while (slots[i].name)
    i = (i + 1) & (cap - 1);
  slots[i] = e;
}

/* Adds a name known to be absent; the table stays at most half full. */
static int nt_add(parser *P, name_table *t, const char *name, size_t n, uint32_t h, void *val) {
  if ((t->count + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    name_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
      return oom(P);
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].name)
        nt_place(slots, cap, t->slots[i]);
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  name_slot e = {name, n, h, val};
  nt_place(t->slots, t->cap, e);
  t->count++;
  return 0;
}

static void nt_free(name_table *t) {
  free(t->slots);
  t->slots = NULL;
  t->cap = t->count = 0;
}

/* ---- small lexical helpers ---------------------------------------------- */

static int peek(parser *P) { return hlo_lex_peek(&P->lx); }
static hlo_pos pos(parser *P) { return hlo_lex_pos(&P->lx); }

/* The position of the next token (blanks and comments skipped). */
static hlo_pos next_pos(parser *P) {
  peek(P);
  return pos(P);
}

/* Reports "expected ..." at the next token, or the end of input. */
static int expected(parser *P, const char *what) {
  if (peek(P) == HLO_LEX_EOF)
    return hlo_lex_error(&P->lx, "unexpected end of input");
  return hlo_lex_error(&P->lx, "expected %s", what);
}

static int expect(parser *P, char c, const char *what) {
  if (hlo_lex_accept(&P->lx, c))
    return 0;
  return expected(P, what);
}

/* After an item of a list closed by `close`: 1 when a ',' announces another
 * item, 0 when `close` ends the list, -1 ("expected <what>") otherwise. */
static int list_next(parser *P, char close, const char *what) {
  if (hlo_lex_accept(&P->lx, ','))
    return 1;
  return expect(P, close, what) ? -1 : 0;
}

static bool is_word(const char *s, size_t n, const char *w) {
  return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* Reads a name at the next token; -1 with "expected <what>" when absent. */
static int name(parser *P, const char **s, size_t *n, const char *what) {
  peek(P);
  *n = hlo_lex_name(&P->lx, s);
  return *n ? 0 : expected(P, what);
}

/* Parses decimal or 0x-hex digits (no sign) into *v; false on overflow or
 * on a byte that is not a digit (header values arrive unchecked). */
static bool digits_u64(const char *s, size_t n, uint64_t *v) {
  uint64_t x = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (size_t i = 2; i < n; i++) {
      int c = (unsigned char)s[i], lc = c | 0x20;
      int d = c >= '0' && c <= '9' ? c - '0' : lc >= 'a' && lc <= 'f' ? lc - 'a' + 10 : -1;
      if (d < 0 || x > UINT64_MAX >> 4)
        return false;
      x = x << 4 | (uint64_t)d;
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      unsigned d = (unsigned)(s[i] - '0');
      if (d > 9 || x > (UINT64_MAX - d) / 10)
        return false;
      x = x * 10 + d;
    }
  }
  *v = x;
  return true;
}

/* Converts integer text (optional '-') to int64; false on overflow. */
static bool text_i64(const char *s, size_t n, int64_t *v) {
  bool neg = n > 0 && s[0] == '-';
  uint64_t u;
  if (!digits_u64(s + neg, n - neg, &u))
    return false;
  if (neg) {
    if (u > (uint64_t)INT64_MAX + 1)
      return false;
    *v = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
  } else {
    if (u > (uint64_t)INT64_MAX)
      return false;
    *v = (int64_t)u;
  }
  return true;
}

/* A decimal integer at the next token (what names it in messages). */
static int int64_tok(parser *P, int64_t *v, const char *what) {
  hlo_pos at = next_pos(P);
  const char *s;
  size_t n = hlo_lex_decimal(&P->lx, &s);
  if (!n)
    return expected(P, what);
  if (!text_i64(s, n, v))
    return hlo_lex_error_at(&P->lx, at, "%s %.*s overflows 64 bits", what, (int)n, s);
  return 0;
}

static int nonneg_tok(parser *P, int64_t *v, const char *what) {
  hlo_pos at = next_pos(P);
  if (int64_tok(P, v, what))
    return -1;
  if (*v < 0)
    return hlo_lex_error_at(&P->lx, at, "%s must not be negative", what);
  return 0;
}

static int bool_tok(parser *P, bool *v) {
  const char *s;
  size_t n;
  hlo_pos at = next_pos(P);
  if (name(P, &s, &n, "'true' or 'false'"))
    return -1;
  if (is_word(s, n, "true"))
    *v = true;
  else if (is_word(s, n, "false"))
    *v = false;
  else
    return hlo_lex_error_at(&P->lx, at, "expected 'true' or 'false', not '%.*s'", (int)n, s);
  return 0;
}

/* ---- element types --------------------------------------------------- */

/* hlo_etype_from_name is a linear scan; shapes are the most frequent token
 * after names, so the parser keeps its own hashed copy (built once; two
 * threads building it at once write the same bytes). */
enum { ETYPE_TABLE = 128 };
static unsigned char etype_table[ETYPE_TABLE]; /* etype, 0 = empty */
static int etype_table_ready;

static void etype_table_build(void) {
  for (int t = HLO_INVALID + 1; t < HLO_ETYPE_COUNT; t++) {
    if (t == HLO_TUPLE)
      continue;
    const char *nm = hlo_etype_name((hlo_etype)t);
    uint32_t i = name_hash(nm, strlen(nm)) & (ETYPE_TABLE - 1);
    while (etype_table[i])
      i = (i + 1) & (ETYPE_TABLE - 1);
    etype_table[i] = (unsigned char)t;
  }
  etype_table_ready = 1;
}

static hlo_etype etype_lookup(const char *s, size_t n) {
  if (!etype_table_ready)
    etype_table_build();
  for (uint32_t i = name_hash(s, n) & (ETYPE_TABLE - 1); etype_table[i]; i = (i + 1) & (ETYPE_TABLE - 1)) {
    const char *nm = hlo_etype_name((hlo_etype)etype_table[i]);
    if (strlen(nm) == n && memcmp(nm, s, n) == 0)
      return (hlo_etype)etype_table[i];
  }
  return HLO_INVALID;
}

/* ---- shapes ------------------------------------------------------------ */

static int parse_shape(parser *P, hlo_shape *s, bool keep);

/* A tile `(8,128)`: integers or `*`. */
static int parse_tile(parser *P, bool keep) {
  size_t base = P->ints.n;
  if (expect(P, '(', "'(' to start a tile"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, ')');
  while (more) {
    int64_t v;
    if (hlo_lex_accept(&P->lx, '*'))
      v = HLO_TILE_COMBINE;
    else if (nonneg_tok(P, &v, "tile size"))
      return -1;
    if (vpush(P, &P->ints, &v, sizeof v))
      return -1;
    if ((more = list_next(P, ')', "',' or ')' in tile")) < 0)
      return -1;
  }
  if (!keep) {
    P->ints.n = base;
    return 0;
  }
  hlo_tile t;
  t.dims.n = (int)((P->ints.n - base) / sizeof(int64_t));
  t.dims.v = vpop_to_arena(P, &P->ints, base);
  if (!t.dims.v)
    return -1;
  return vpush(P, &P->tiles, &t, sizeof t);
}

/* Skips a `( ... )` group of a layout item kept as text. */
static int skip_paren_group(parser *P) {
  int d = 0;
  hlo_pos at = pos(P);
  for (;;) {
    int c = hlo_lex_at(&P->lx, 0);
    if (c == HLO_LEX_EOF)
      return hlo_lex_error_at(&P->lx, at, "unexpected end of input in layout");
    if (c == '\0' || c == '\n')
      return hlo_lex_error(&P->lx, "unexpected byte in layout");
    hlo_lex_skip(&P->lx);
    if (c == '(' && ++d > MAX_DEPTH)
      return hlo_lex_error(&P->lx, "nesting too deep");
    if (c == ')' && --d == 0)
      return 0;
  }
}

static bool is_upper(int c) { return c >= 'A' && c <= 'Z'; }

/* One item after ':' in a layout: T(..)(..), S(n), or another kept raw. */
static int parse_layout_item(parser *P, hlo_layout *l, bool keep) {
  int c = peek(P);
  if (c == 'T' && hlo_lex_at(&P->lx, 1) == '(') {
    hlo_lex_skip(&P->lx);
    while (peek(P) == '(')
      if (parse_tile(P, keep))
        return -1;
    return 0;
  }
  if (c == 'S' && hlo_lex_at(&P->lx, 1) == '(') {
    hlo_lex_skip(&P->lx);
    hlo_lex_skip(&P->lx);
    if (nonneg_tok(P, &l->memory_space, "memory space") || expect(P, ')', "')' after memory space"))
      return -1;
    return 0;
  }
  if (!is_upper(c) && c != '#' && c != '*')
    return expected(P, "a layout item such as T(8,128) or S(1)");
  const char *start = P->lx.p;
  do
    hlo_lex_skip(&P->lx);
  while (is_upper(hlo_lex_at(&P->lx, 0)));
  if (hlo_lex_at(&P->lx, 0) != '(')
    return expected(P, "'(' after layout item name");
  while (hlo_lex_at(&P->lx, 0) == '(')
    if (skip_paren_group(P))
      return -1;
  if (keep)
    return vpush(P, &P->chars, start, (size_t)(P->lx.p - start));
  return 0;
}

/* `{2,1,0:T(8,128)(2,1)S(1)}`; p is at the '{'. */
static int parse_layout(parser *P, hlo_layout **out, bool keep) {
  hlo_layout l = {0};
  size_t ibase = P->ints.n, tbase = P->tiles.n, cbase = P->chars.n;
  hlo_lex_skip(&P->lx);
  int c = peek(P);
  if (c != ':' && c != '}') {
    for (;;) {
      int64_t v;
      if (nonneg_tok(P, &v, "layout dimension") || vpush(P, &P->ints, &v, sizeof v))
        return -1;
      if (!hlo_lex_accept(&P->lx, ','))
        break;
    }
  }
  if (hlo_lex_accept(&P->lx, ':')) {
    while (peek(P) != '}' && peek(P) != HLO_LEX_EOF)
      if (parse_layout_item(P, &l, keep))
        return -1;
  }
  if (expect(P, '}', "'}' after layout"))
    return -1;
  if (!keep) {
    P->ints.n = ibase;
    return 0;
  }
  l.ntiles = (int)((P->tiles.n - tbase) / sizeof(hlo_tile));
  if (l.ntiles && !(l.tiles = vpop_to_arena(P, &P->tiles, tbase)))
    return -1;
  if (P->chars.n > cbase) {
    l.extra = arena_str(P, P->chars.p + cbase, P->chars.n - cbase);
    P->chars.n = cbase;
    if (!l.extra)
      return -1;
  }
  l.minor_to_major.n = (int)((P->ints.n - ibase) / sizeof(int64_t));
  if (!(l.minor_to_major.v = vpop_to_arena(P, &P->ints, ibase)))
    return -1;
  if (!(*out = arena_new(P, sizeof l)))
    return -1;
  **out = l;
  return 0;
}

/* After a shape's ']', a '{' starts a layout only when a digit, ':' or '}'
 * follows; otherwise it is a computation body (`-> f32[2] {`). */
static bool layout_follows(parser *P) {
  if (peek(P) != '{')
    return false;
  for (size_t k = 1;; k++) {
    int c = hlo_lex_at(&P->lx, k);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
      continue;
    return (c >= '0' && c <= '9') || c == ':' || c == '}';
  }
}

/* The `[dims]{layout}` after an element type name. */
static int parse_array_shape(parser *P, hlo_etype t, hlo_shape *s, bool keep) {
  size_t base = P->ints.n;
  bool any_dynamic = false;
  if (expect(P, '[', "'[' after element type"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, ']');
  while (more) {
    int64_t dim, kind = HLO_DIM_STATIC;
    hlo_pos at = next_pos(P);
    if (hlo_lex_accept2(&P->lx, "<=")) {
      kind = HLO_DIM_BOUNDED;
      at = next_pos(P);
    } else if (hlo_lex_accept(&P->lx, '?')) {
      kind = HLO_DIM_UNBOUNDED;
    }
    if (kind == HLO_DIM_UNBOUNDED)
      dim = -1;
    else if (int64_tok(P, &dim, "dimension"))
      return -1;
    else if (dim < 0)
      return hlo_lex_error_at(&P->lx, at, "dimension %lld is negative", (long long)dim);
    any_dynamic |= kind != HLO_DIM_STATIC;
    if (vpush(P, &P->ints, &dim, sizeof dim) || vpush(P, &P->ints, &kind, sizeof kind))
      return -1;
    if ((more = list_next(P, ']', "']' after dimensions")) < 0)
      return -1;
  }
  int rank = (int)((P->ints.n - base) / (2 * sizeof(int64_t)));
  if (keep) {
    s->type = t;
    s->rank = rank;
    if (rank) {
      s->dims = hlo_arena_array(P->arena, (size_t)rank, sizeof *s->dims);
      if (!s->dims)
        return oom(P);
      if (any_dynamic && !(s->dynamic = hlo_arena_array(P->arena, (size_t)rank, 1)))
        return oom(P);
      const int64_t *pairs = (const int64_t *)(P->ints.p + base);
      for (int i = 0; i < rank; i++) {
        s->dims[i] = pairs[2 * i];
        if (any_dynamic)
          s->dynamic[i] = (uint8_t)pairs[2 * i + 1];
      }
    }
  }
  P->ints.n = base;
  if (layout_follows(P))
    return parse_layout(P, keep ? &s->layout : NULL, keep);
  return 0;
}

static int parse_tuple_shape(parser *P, hlo_shape *s, bool keep) {
  if (++P->depth > MAX_DEPTH)
    return hlo_lex_error(&P->lx, "nesting too deep");
  size_t base = P->shapes.n;
  hlo_lex_skip(&P->lx); /* '(' */
  int more = !hlo_lex_accept(&P->lx, ')');
  while (more) {
    hlo_shape e = {0};
    if (parse_shape(P, &e, keep))
      return -1;
    if (keep && vpush(P, &P->shapes, &e, sizeof e))
      return -1;
    if ((more = list_next(P, ')', "',' or ')' in tuple shape")) < 0)
      return -1;
  }
  if (keep) {
    s->type = HLO_TUPLE;
    s->ntuple = (int)((P->shapes.n - base) / sizeof(hlo_shape));
    if (!(s->elems = vpop_to_arena(P, &P->shapes, base)))
      return -1;
  }
  P->depth--;
  return 0;
}

/* Reads an element type name (p at it) and checks it. */
static int etype_tok(parser *P, hlo_etype *t) {
  const char *s;
  size_t n;
  hlo_pos at = pos(P);
  if (name(P, &s, &n, "a shape"))
    return -1;
  *t = etype_lookup(s, n);
  if (*t == HLO_INVALID)
    return hlo_lex_error_at(&P->lx, at, "unknown element type '%.*s'", (int)n, s);
  return 0;
}

/* A shape at the next token; with keep false it is only checked. */
static int parse_shape(parser *P, hlo_shape *s, bool keep) {
  int c = peek(P);
  if (c == '(')
    return parse_tuple_shape(P, s, keep);
  hlo_etype t;
  if (etype_tok(P, &t))
    return -1;
  return parse_array_shape(P, t, s, keep);
}

/* ---- literals ---------------------------------------------------------- */

/* `nan(0xP)`: P is the double's mantissa with the quiet bit flipped, so
 * the default quiet NaN has no payload (the printer's convention). */
static int nan_payload(parser *P, double *v) {
  const uint64_t mant = ((uint64_t)1 << 52) - 1, quiet = (uint64_t)1 << 51;
  hlo_lex_skip(&P->lx); /* '(' */
  hlo_pos at = next_pos(P);
  const char *s;
  size_t n = hlo_lex_number(&P->lx, &s);
  uint64_t pl;
  if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    return expected(P, "a hex NaN payload");
  if (!digits_u64(s, n, &pl) || (pl & ~mant) || (pl ^ quiet) == 0)
    return hlo_lex_error_at(&P->lx, at, "bad NaN payload %.*s", (int)n, s);
  uint64_t bits = ((uint64_t)0x7ff << 52) | (pl ^ quiet);
  memcpy(v, &bits, sizeof bits);
  return expect(P, ')', "')' after NaN payload");
}

/* Copies a numeric token to a NUL-terminated buffer for strtod. */
static int float_tok(parser *P, double *v) {
  int c = peek(P);
  hlo_pos at = pos(P);
  bool neg = false;
  if ((c == '-' || c == '+') && hlo_lex_at(&P->lx, 1) >= 'a' && hlo_lex_at(&P->lx, 1) <= 'z') {
    neg = c == '-';
    hlo_lex_skip(&P->lx);
    c = hlo_lex_at(&P->lx, 0);
  }
  if (c >= 'a' && c <= 'z') {
    const char *s;
    size_t n = hlo_lex_name(&P->lx, &s);
    if (is_word(s, n, "inf"))
      *v = INFINITY;
    else if (is_word(s, n, "nan")) {
      *v = NAN;
      if (hlo_lex_at(&P->lx, 0) == '(' && nan_payload(P, v))
        return -1;
    } else
      return hlo_lex_error_at(&P->lx, at, "expected a number, not '%.*s'", (int)n, s);
    if (neg)
      *v = copysign(*v, -1.0); /* also gives -nan its sign bit */
    return 0;
  }
  const char *s;
  size_t n = hlo_lex_number(&P->lx, &s);
  if (!n)
    return expected(P, "a number");
  char buf[80];
  if (n >= sizeof buf)
    return hlo_lex_error_at(&P->lx, at, "number too long");
  memcpy(buf, s, n);
  buf[n] = '\0';
  *v = strtod(buf, NULL);
  return 0;
}

/* A number token that has a fraction or exponent (hex digits excluded). */
static bool is_float_text(const char *s, size_t n) {
  size_t i = s[0] == '-';
  if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
    return false;
  for (; i < n; i++)
    if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
      return true;
  return false;
}

static int push_u64(parser *P, uint64_t u) { return vpush(P, &P->vals, &u, sizeof u); }

/* One element value of type t pushed onto P->vals. */
static int parse_scalar(parser *P, hlo_etype t) {
  hlo_eclass cls = hlo_etype_class(t);
  hlo_pos at;
  if (cls == HLO_CLASS_FLOAT || cls == HLO_CLASS_COMPLEX) {
    double re, im;
    if (cls == HLO_CLASS_FLOAT) {
      if (float_tok(P, &re))
        return -1;
      return vpush(P, &P->vals, &re, sizeof re);
    }
    if (expect(P, '(', "'(' to start a complex number") || float_tok(P, &re) ||
        expect(P, ',', "',' in complex number") || float_tok(P, &im) ||
        expect(P, ')', "')' after complex number"))
      return -1;
    if (vpush(P, &P->vals, &re, sizeof re))
      return -1;
    return vpush(P, &P->vals, &im, sizeof im);
  }
  int c = peek(P);
  at = pos(P);
  if (c == 't' || c == 'f') {
    bool b;
    if (bool_tok(P, &b))
      return -1;
    return push_u64(P, b);
  }
  const char *s;
  size_t n = hlo_lex_number(&P->lx, &s);
  if (!n)
    return expected(P, "an integer");
  if (is_float_text(s, n))
    return hlo_lex_error_at(&P->lx, at, "expected an integer, not '%.*s'", (int)n, s);
  /* A value the type cannot hold (one hlo_int_wrap changes) is refused, as
   * XLA's parser does: kept, it would print back as written but be
   * evaluated wrapped (s8 300), or print as another value than the one
   * held (pred 155 prints "true"). */
  if (cls == HLO_CLASS_UINT) {
    uint64_t u;
    if (s[0] == '-')
      return hlo_lex_error_at(&P->lx, at, "negative value %.*s for unsigned type", (int)n, s);
    if (!digits_u64(s, n, &u))
      return hlo_lex_error_at(&P->lx, at, "integer %.*s overflows 64 bits", (int)n, s);
    if (hlo_int_wrap(t, u) != u)
      return hlo_lex_error_at(&P->lx, at, "value %.*s is out of range for %s", (int)n, s, hlo_etype_name(t));
    return push_u64(P, u);
  }
  int64_t v;
  if (!text_i64(s, n, &v))
    return hlo_lex_error_at(&P->lx, at, "integer %.*s overflows 64 bits", (int)n, s);
  if (hlo_int_wrap(t, (uint64_t)v) != (uint64_t)v)
    return hlo_lex_error_at(&P->lx, at, "value %.*s is out of range for %s%s", (int)n, s, hlo_etype_name(t),
                            cls == HLO_CLASS_PRED ? " (true, false, 0 or 1)" : "");
  return vpush(P, &P->vals, &v, sizeof v);
}

/* `{ ... }` at nesting level `level` of an array literal of shape s. */
static int parse_array_level(parser *P, const hlo_shape *s, int level) {
  if (++P->depth > MAX_DEPTH)
    return hlo_lex_error(&P->lx, "nesting too deep");
  hlo_pos at = next_pos(P);
  if (expect(P, '{', "'{' in array constant"))
    return -1;
  int64_t n = 0;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    if (level + 1 == s->rank ? parse_scalar(P, s->type) : parse_array_level(P, s, level + 1))
      return -1;
    n++;
    if ((more = list_next(P, '}', "',' or '}' in array constant")) < 0)
      return -1;
  }
  bool is_static = !s->dynamic || s->dynamic[level] == HLO_DIM_STATIC;
  if (is_static && n != s->dims[level])
    return hlo_lex_error_at(&P->lx, at, "constant has %lld elements in dimension %d, the shape says %lld",
                            (long long)n, level, (long long)s->dims[level]);
  P->depth--;
  return 0;
}

/* `{...}` (the data was not written). */
static bool elided_follows(parser *P) {
  if (peek(P) != '{')
    return false;
  size_t k = 1;
  while (hlo_lex_at(&P->lx, k) == ' ')
    k++;
  return hlo_lex_at(&P->lx, k) == '.' && hlo_lex_at(&P->lx, k + 1) == '.' &&
         hlo_lex_at(&P->lx, k + 2) == '.';
}

static int parse_literal(parser *P, const hlo_shape *s, hlo_literal *lit);

/* hlo_shape_elements without its overflow: false when it would overflow. */
static bool elements_of(const hlo_shape *s, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[i] < 0 ? 0 : s->dims[i];
    if (d && n > INT64_MAX / d)
      return false;
    n *= d;
  }
  *out = n;
  return true;
}

static int parse_tuple_literal(parser *P, const hlo_shape *s, hlo_literal *lit) {
  if (++P->depth > MAX_DEPTH)
    return hlo_lex_error(&P->lx, "nesting too deep");
  if (expect(P, '(', "'(' to start a tuple constant"))
    return -1;
  lit->ntuple = s->ntuple;
  if (s->ntuple && !(lit->elems = hlo_arena_array(P->arena, (size_t)s->ntuple, sizeof *lit->elems)))
    return oom(P);
  for (int i = 0; i < s->ntuple; i++) {
    if (i && expect(P, ',', "',' between tuple constant elements"))
      return -1;
    if (parse_literal(P, &s->elems[i], &lit->elems[i]))
      return -1;
  }
  if (expect(P, ')', "')' after tuple constant"))
    return -1;
  P->depth--;
  return 0;
}

static int parse_literal(parser *P, const hlo_shape *s, hlo_literal *lit) {
  if (s->type == HLO_TUPLE)
    return parse_tuple_literal(P, s, lit);
  if (elided_follows(P)) {
    hlo_pos at = pos(P);
    hlo_lex_skip(&P->lx);
    while (hlo_lex_at(&P->lx, 0) == ' ')
      hlo_lex_skip(&P->lx);
    for (int i = 0; i < 3; i++)
      hlo_lex_skip(&P->lx);
    lit->elided = true;
    if (!elements_of(s, &lit->count))
      return hlo_lex_error_at(&P->lx, at, "constant shape has too many elements");
    return expect(P, '}', "'}' after '{...'");
  }
  hlo_eclass cls = hlo_etype_class(s->type);
  if (cls == HLO_CLASS_OTHER)
    return hlo_lex_error(&P->lx, "a constant of type %s cannot be written", hlo_etype_name(s->type));
  size_t base = P->vals.n;
  /* A bare value for an array is XLA's splat spelling (`f32[4,4]
   * constant(0)`): stored as one value, count 1. */
  bool bare = s->rank == 0 || peek(P) != '{';
  if (bare ? parse_scalar(P, s->type) : parse_array_level(P, s, 0))
    return -1;
  size_t nvals = (P->vals.n - base) / 8;
  lit->count = (int64_t)(cls == HLO_CLASS_COMPLEX ? nvals / 2 : nvals);
  void *data = vpop_to_arena(P, &P->vals, base);
  if (!data)
    return -1;
  if (cls == HLO_CLASS_FLOAT || cls == HLO_CLASS_COMPLEX)
    lit->f = data;
  else if (cls == HLO_CLASS_UINT)
    lit->u = data;
  else
    lit->i = data;
  return 0;
}

/* ---- typed attributes ---------------------------------------------------- */

typedef enum attr_kind {
  AK_RAW = 0,
  AK_DIMENSIONS, AK_SLICE, AK_PADDING, AK_WINDOW, AK_DIM_LABELS,
  AK_LHS_BATCH, AK_RHS_BATCH, AK_LHS_CONTRACTING, AK_RHS_CONTRACTING,
  AK_FEATURE_GROUP_COUNT, AK_BATCH_GROUP_COUNT,
  AK_OFFSET_DIMS, AK_COLLAPSED_SLICE_DIMS, AK_START_INDEX_MAP, AK_INDEX_VECTOR_DIM,
  AK_OPERAND_BATCHING_DIMS, AK_START_INDICES_BATCHING_DIMS, AK_SLICE_SIZES,
  AK_INDICES_ARE_SORTED,
  AK_UPDATE_WINDOW_DIMS, AK_INSERTED_WINDOW_DIMS, AK_SCATTER_DIMS_TO_OPERAND_DIMS,
  AK_INPUT_BATCHING_DIMS, AK_SCATTER_INDICES_BATCHING_DIMS, AK_UNIQUE_INDICES,
  AK_DIRECTION, AK_TYPE,
  AK_TO_APPLY, AK_CALLS, AK_CONDITION, AK_BODY, AK_BRANCH_COMPUTATIONS,
  AK_TRUE_COMPUTATION, AK_FALSE_COMPUTATION,
  AK_KIND, AK_INDEX, AK_IOTA_DIMENSION, AK_DYNAMIC_SLICE_SIZES, AK_IS_STABLE,
  AK_REPLICA_GROUPS, AK_CHANNEL_ID, AK_OPERAND_PRECISION, AK_DISTRIBUTION,
  AK_CUSTOM_CALL_TARGET, AK_SOURCE_TARGET_PAIRS, AK_EXPONENT_BITS, AK_MANTISSA_BITS,
  AK_USE_GLOBAL_DEVICE_IDS,
  AK_COUNT
} attr_kind;

static const char *const attr_names[AK_COUNT] = {
    [AK_DIMENSIONS] = "dimensions", [AK_SLICE] = "slice", [AK_PADDING] = "padding",
    [AK_WINDOW] = "window", [AK_DIM_LABELS] = "dim_labels",
    [AK_LHS_BATCH] = "lhs_batch_dims", [AK_RHS_BATCH] = "rhs_batch_dims",
    [AK_LHS_CONTRACTING] = "lhs_contracting_dims", [AK_RHS_CONTRACTING] = "rhs_contracting_dims",
    [AK_FEATURE_GROUP_COUNT] = "feature_group_count", [AK_BATCH_GROUP_COUNT] = "batch_group_count",
    [AK_OFFSET_DIMS] = "offset_dims", [AK_COLLAPSED_SLICE_DIMS] = "collapsed_slice_dims",
    [AK_START_INDEX_MAP] = "start_index_map", [AK_INDEX_VECTOR_DIM] = "index_vector_dim",
    [AK_OPERAND_BATCHING_DIMS] = "operand_batching_dims",
    [AK_START_INDICES_BATCHING_DIMS] = "start_indices_batching_dims",
    [AK_SLICE_SIZES] = "slice_sizes", [AK_INDICES_ARE_SORTED] = "indices_are_sorted",
    [AK_UPDATE_WINDOW_DIMS] = "update_window_dims", [AK_INSERTED_WINDOW_DIMS] = "inserted_window_dims",
    [AK_SCATTER_DIMS_TO_OPERAND_DIMS] = "scatter_dims_to_operand_dims",
    [AK_INPUT_BATCHING_DIMS] = "input_batching_dims",
    [AK_SCATTER_INDICES_BATCHING_DIMS] = "scatter_indices_batching_dims",
    [AK_UNIQUE_INDICES] = "unique_indices", [AK_DIRECTION] = "direction", [AK_TYPE] = "type",
    [AK_TO_APPLY] = "to_apply", [AK_CALLS] = "calls", [AK_CONDITION] = "condition",
    [AK_BODY] = "body", [AK_BRANCH_COMPUTATIONS] = "branch_computations",
    [AK_TRUE_COMPUTATION] = "true_computation", [AK_FALSE_COMPUTATION] = "false_computation",
    [AK_KIND] = "kind", [AK_INDEX] = "index", [AK_IOTA_DIMENSION] = "iota_dimension",
    [AK_DYNAMIC_SLICE_SIZES] = "dynamic_slice_sizes", [AK_IS_STABLE] = "is_stable",
    [AK_REPLICA_GROUPS] = "replica_groups", [AK_CHANNEL_ID] = "channel_id",
    [AK_OPERAND_PRECISION] = "operand_precision", [AK_DISTRIBUTION] = "distribution",
    [AK_CUSTOM_CALL_TARGET] = "custom_call_target", [AK_SOURCE_TARGET_PAIRS] = "source_target_pairs",
    [AK_EXPONENT_BITS] = "exponent_bits", [AK_MANTISSA_BITS] = "mantissa_bits",
    [AK_USE_GLOBAL_DEVICE_IDS] = "use_global_device_ids",
};

static attr_kind attr_lookup(const char *s, size_t n) {
  for (int k = 1; k < AK_COUNT; k++)
    if (attr_names[k][0] == s[0] && is_word(s, n, attr_names[k]))
      return (attr_kind)k;
  return AK_RAW;
}

/* `{1,2,3}` into *out (arena). */
static int parse_int_list(parser *P, hlo_ints *out, const char *what) {
  size_t base = P->ints.n;
  if (expect(P, '{', "'{' to start a list"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    int64_t v;
    if (int64_tok(P, &v, what) || vpush(P, &P->ints, &v, sizeof v))
      return -1;
    if ((more = list_next(P, '}', "',' or '}' in list")) < 0)
      return -1;
  }
  out->n = (int)((P->ints.n - base) / sizeof(int64_t));
  out->v = vpop_to_arena(P, &P->ints, base);
  return out->v ? 0 : -1;
}

/* slice={[0:4], [1:3:2]} */
static int parse_slice(parser *P, hlo_attrs *a) {
  size_t base = P->ints.n;
  if (expect(P, '{', "'{' to start slice"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    int64_t v[3] = {0, 0, 1};
    if (expect(P, '[', "'[' to start a slice range") || int64_tok(P, &v[0], "slice start") ||
        expect(P, ':', "':' in slice range") || int64_tok(P, &v[1], "slice limit"))
      return -1;
    if (hlo_lex_accept(&P->lx, ':') && int64_tok(P, &v[2], "slice stride"))
      return -1;
    if (expect(P, ']', "']' after slice range") || vpush(P, &P->ints, v, sizeof v))
      return -1;
    if ((more = list_next(P, '}', "',' or '}' in slice")) < 0)
      return -1;
  }
  a->nslice = (int)((P->ints.n - base) / (3 * sizeof(int64_t)));
  const int64_t *v = (const int64_t *)(P->ints.p + base);
  a->slice = hlo_arena_array(P->arena, (size_t)a->nslice + 1, sizeof *a->slice);
  if (!a->slice)
    return oom(P);
  for (int i = 0; i < a->nslice; i++) {
    a->slice[i].start = v[3 * i];
    a->slice[i].limit = v[3 * i + 1];
    a->slice[i].stride = v[3 * i + 2];
  }
  P->ints.n = base;
  return 0;
}

/* An integer with no blanks before it (inside `3x3`, `1_2x0_0`). */
static int tight_int(parser *P, int64_t *v, const char *what) {
  hlo_pos at = pos(P);
  const char *s;
  size_t n = hlo_lex_decimal(&P->lx, &s);
  if (!n)
    return hlo_lex_at(&P->lx, 0) == HLO_LEX_EOF ? hlo_lex_error(&P->lx, "unexpected end of input")
                                                 : hlo_lex_error(&P->lx, "expected %s", what);
  if (!text_i64(s, n, v))
    return hlo_lex_error_at(&P->lx, at, "%s %.*s overflows 64 bits", what, (int)n, s);
  return 0;
}

static bool tight_accept(parser *P, char c) {
  if (hlo_lex_at(&P->lx, 0) != (unsigned char)c)
    return false;
  hlo_lex_skip(&P->lx);
  return true;
}

/* `a_b[_c]x...` pushed as groups of `per` ints (missing third = 0); used by
 * padding (per 3) and window pad (per 2, exactly two parts). */
static int parse_pad_list(parser *P, int per, int *count) {
  int n = 0;
  peek(P);
  do {
    int64_t v[3] = {0, 0, 0};
    if (tight_int(P, &v[0], "padding low") || !tight_accept(P, '_'))
      return P->lx.failed ? -1 : hlo_lex_error(&P->lx, "expected '_' in padding");
    if (tight_int(P, &v[1], "padding high"))
      return -1;
    if (per == 3 && tight_accept(P, '_') && tight_int(P, &v[2], "interior padding"))
      return -1;
    if (vpush(P, &P->ints, v, (size_t)per * sizeof(int64_t)))
      return -1;
    n++;
  } while (tight_accept(P, 'x'));
  *count = n;
  return 0;
}

/* padding=0_0x1_2_1 (the pad op) */
static int parse_padding(parser *P, hlo_attrs *a) {
  size_t base = P->ints.n;
  int n;
  if (parse_pad_list(P, 3, &n))
    return -1;
  const int64_t *v = (const int64_t *)(P->ints.p + base);
  if (!(a->pad = hlo_arena_array(P->arena, (size_t)n, sizeof *a->pad)))
    return oom(P);
  a->npad = n;
  for (int i = 0; i < n; i++) {
    a->pad[i].lo = v[3 * i];
    a->pad[i].hi = v[3 * i + 1];
    a->pad[i].interior = v[3 * i + 2];
    if (a->pad[i].interior < 0)
      return hlo_lex_error(&P->lx, "interior padding must not be negative");
  }
  P->ints.n = base;
  return 0;
}

/* `3x3` pushed as ints; *count is how many. */
static int parse_x_list(parser *P, int *count, const char *what) {
  int n = 0;
  peek(P);
  do {
    int64_t v;
    if (tight_int(P, &v, what) || vpush(P, &P->ints, &v, sizeof v))
      return -1;
    n++;
  } while (tight_accept(P, 'x'));
  *count = n;
  return 0;
}

enum { WF_SIZE, WF_STRIDE, WF_PAD, WF_LHS_DILATE, WF_RHS_DILATE, WF_REVERSAL, WF_COUNT };
static const char *const window_fields[WF_COUNT] = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate",
                                                    "rhs_reversal"};

/* window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..} */
static int parse_window(parser *P, hlo_attrs *a) {
  size_t base = P->ints.n;
  size_t at[WF_COUNT];
  int cnt[WF_COUNT] = {0};
  bool seen[WF_COUNT] = {0};
  int rank = -1;
  if (expect(P, '{', "'{' to start window"))
    return -1;
  while (!hlo_lex_accept(&P->lx, '}')) {
    const char *s;
    size_t n;
    hlo_pos fpos = next_pos(P);
    if (name(P, &s, &n, "a window field or '}'"))
      return -1;
    int f = 0;
    while (f < WF_COUNT && !is_word(s, n, window_fields[f]))
      f++;
    if (f == WF_COUNT)
      return hlo_lex_error_at(&P->lx, fpos, "unknown window field '%.*s'", (int)n, s);
    if (seen[f])
      return hlo_lex_error_at(&P->lx, fpos, "duplicate window field '%s'", window_fields[f]);
    seen[f] = true;
    if (!tight_accept(P, '='))
      return hlo_lex_error(&P->lx, "expected '=' after window field");
    at[f] = P->ints.n;
    if (f == WF_PAD ? parse_pad_list(P, 2, &cnt[f]) : parse_x_list(P, &cnt[f], window_fields[f]))
      return -1;
    if (rank < 0)
      rank = cnt[f];
    else if (cnt[f] != rank)
      return hlo_lex_error_at(&P->lx, fpos, "window field '%s' has %d dimensions, expected %d",
                              window_fields[f], cnt[f], rank);
  }
  if (rank < 0)
    rank = 0;
  a->window.rank = rank;
  if (!(a->window.dims = hlo_arena_array(P->arena, (size_t)rank + 1, sizeof *a->window.dims)))
    return oom(P);
  const int64_t *v = (const int64_t *)P->ints.p;
  for (int i = 0; i < rank; i++) {
    hlo_window_dim *d = &a->window.dims[i];
    d->size = seen[WF_SIZE] ? v[at[WF_SIZE] / 8 + (size_t)i] : 1;
    d->stride = seen[WF_STRIDE] ? v[at[WF_STRIDE] / 8 + (size_t)i] : 1;
    d->pad_lo = seen[WF_PAD] ? v[at[WF_PAD] / 8 + 2 * (size_t)i] : 0;
    d->pad_hi = seen[WF_PAD] ? v[at[WF_PAD] / 8 + 2 * (size_t)i + 1] : 0;
    d->lhs_dilate = seen[WF_LHS_DILATE] ? v[at[WF_LHS_DILATE] / 8 + (size_t)i] : 1;
    d->rhs_dilate = seen[WF_RHS_DILATE] ? v[at[WF_RHS_DILATE] / 8 + (size_t)i] : 1;
    d->reversal = seen[WF_REVERSAL] ? v[at[WF_REVERSAL] / 8 + (size_t)i] != 0 : false;
  }
  P->ints.n = base;
  return 0;
}

/* Decodes one side of dim_labels: positions of the two letters and of the
 * spatial digits (spatial[d] = position of digit d). */
static int decode_labels(parser *P, hlo_pos at, const char *s, size_t n, char l1, char l2, int64_t *p1,
                         int64_t *p2, hlo_ints *spatial) {
  int64_t pos_of[10];
  int nsp = 0;
  *p1 = *p2 = -1;
  for (int d = 0; d < 10; d++)
    pos_of[d] = -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int64_t *slot = c == l1 ? p1 : c == l2 ? p2 : (c >= '0' && c <= '9') ? &pos_of[c - '0'] : NULL;
    if (!slot)
      return hlo_lex_error_at(&P->lx, at, "bad dim_labels: unexpected '%c' in '%.*s'", c, (int)n, s);
    if (*slot >= 0)
      return hlo_lex_error_at(&P->lx, at, "bad dim_labels: '%c' twice in '%.*s'", c, (int)n, s);
    *slot = (int64_t)i;
    nsp += c >= '0' && c <= '9';
  }
  if (*p1 < 0 || *p2 < 0)
    return hlo_lex_error_at(&P->lx, at, "bad dim_labels: '%.*s' needs '%c' and '%c'", (int)n, s, l1, l2);
  for (int d = 0; d < nsp; d++)
    if (pos_of[d] < 0)
      return hlo_lex_error_at(&P->lx, at, "bad dim_labels: spatial dimension %d missing in '%.*s'", d,
                              (int)n, s);
  spatial->n = nsp;
  if (!(spatial->v = hlo_arena_array(P->arena, (size_t)nsp + 1, sizeof(int64_t))))
    return oom(P);
  memcpy(spatial->v, pos_of, (size_t)nsp * sizeof(int64_t));
  return 0;
}

/* dim_labels=b01f_01io->b01f */
static int parse_dim_labels(parser *P, hlo_attrs *a) {
  hlo_pos at = next_pos(P);
  const char *w, *o;
  size_t n = hlo_lex_word(&P->lx, &w);
  const char *us = n ? memchr(w, '_', n) : NULL;
  if (!us)
    return hlo_lex_error_at(&P->lx, at, "expected dim_labels such as b01f_01io->b01f");
  if (!tight_accept(P, '-') || !tight_accept(P, '>'))
    return hlo_lex_error(&P->lx, "expected '->' in dim_labels");
  hlo_pos oat = pos(P);
  size_t on = hlo_lex_word(&P->lx, &o);
  hlo_conv_dnums *c = &a->conv;
  size_t in = (size_t)(us - w);
  if (decode_labels(P, at, w, in, 'b', 'f', &c->input_batch, &c->input_feature, &c->input_spatial) ||
      decode_labels(P, at, us + 1, n - in - 1, 'i', 'o', &c->kernel_input_feature,
                    &c->kernel_output_feature, &c->kernel_spatial) ||
      decode_labels(P, oat, o, on, 'b', 'f', &c->output_batch, &c->output_feature, &c->output_spatial))
    return -1;
  if (c->input_spatial.n != c->kernel_spatial.n || c->input_spatial.n != c->output_spatial.n)
    return hlo_lex_error_at(&P->lx, at, "bad dim_labels: the three parts have different spatial ranks");
  return 0;
}

/* Total ids of an iota group list: product of dims with overflow check. */
static int dims_product(parser *P, const int64_t *v, int n, hlo_pos at, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) {
    if (v[i] < 0 || (v[i] && p > MAX_REPLICA_IDS / v[i]))
      return hlo_lex_error_at(&P->lx, at, "replica group list too large");
    p *= v[i];
  }
  *out = p;
  return 0;
}

/* replica_groups=[G,S]<=[d0,d1,...] with an optional T(perm): the ids
 * 0..N-1 laid out in the reshape dims, transposed by perm, read row-major
 * and cut into G groups of S. */
static int parse_iota_groups(parser *P, hlo_replica_groups *rg) {
  size_t base = P->ints.n;
  size_t off[3];
  int cnt[3] = {0, 0, 0};
  hlo_pos at = next_pos(P);
  for (int li = 0; li < 3; li++) {
    if (li == 1 && !hlo_lex_accept2(&P->lx, "<="))
      return expected(P, "'<=' in iota replica groups");
    if (li == 2 && !tight_accept(P, 'T'))
      break;
    char close = li == 2 ? ')' : ']';
    off[li] = P->ints.n / sizeof(int64_t);
    if (expect(P, li == 2 ? '(' : '[', li == 2 ? "'(' after T" : "'['"))
      return -1;
    int more = !hlo_lex_accept(&P->lx, close);
    while (more) {
      int64_t v;
      if (nonneg_tok(P, &v, "size") || vpush(P, &P->ints, &v, sizeof v))
        return -1;
      if ((more = list_next(P, close, li == 2 ? "')' after permutation" : "']'")) < 0)
        return -1;
    }
    cnt[li] = (int)(P->ints.n / sizeof(int64_t) - off[li]);
  }
  const int64_t *all = (const int64_t *)P->ints.p;
  const int64_t *sv = all + off[0], *rv = all + off[1], *pv = cnt[2] ? all + off[2] : NULL;
  int r = cnt[1];
  int64_t total = 0, rtotal = 0;
  if (cnt[0] != 2)
    return hlo_lex_error_at(&P->lx, at, "iota replica groups need [groups,size]");
  if (dims_product(P, sv, 2, at, &total) || dims_product(P, rv, r, at, &rtotal))
    return -1;
  if (total != rtotal)
    return hlo_lex_error_at(&P->lx, at, "iota replica groups: %lld ids do not fill [%lld,%lld]",
                            (long long)rtotal, (long long)sv[0], (long long)sv[1]);
  if (pv && cnt[2] != r)
    return hlo_lex_error_at(&P->lx, at, "iota replica groups: permutation has the wrong length");
  if (r > MAX_DEPTH)
    return hlo_lex_error_at(&P->lx, at, "nesting too deep");
  /* ids 0..N-1 laid out row-major in rv; after the transpose, dimension i
   * of the result walks source dimension pv[i] with that one's stride. */
  int64_t stride[MAX_DEPTH], tdims[MAX_DEPTH], tstride[MAX_DEPTH], idx[MAX_DEPTH];
  bool used[MAX_DEPTH] = {0};
  int64_t st = 1;
  for (int i = r - 1; i >= 0; i--) {
    stride[i] = st;
    st *= rv[i];
  }
  for (int i = 0; i < r; i++) {
    int64_t src = pv ? pv[i] : i;
    if (src < 0 || src >= r || used[src])
      return hlo_lex_error_at(&P->lx, at, "iota replica groups: bad permutation");
    used[src] = true;
    tdims[i] = rv[src];
    tstride[i] = stride[src];
    idx[i] = 0;
  }
  int64_t g = sv[0], gs = sv[1];
  rg->ngroups = (int)g;
  rg->groups = hlo_arena_array(P->arena, (size_t)g + 1, sizeof *rg->groups);
  int64_t *ids = hlo_arena_array(P->arena, (size_t)total + 1, sizeof *ids);
  if (!rg->groups || !ids)
    return oom(P);
  for (int64_t k = 0; k < total; k++) {
    int64_t id = 0;
    for (int i = 0; i < r; i++)
      id += idx[i] * tstride[i];
    ids[k] = id;
    hlo_index_next(r, tdims, idx); /* over the transposed dims */
  }
  for (int64_t i = 0; i < g; i++) {
    rg->groups[i].n = (int)gs;
    rg->groups[i].v = ids + i * gs;
  }
  P->ints.n = base;
  return 0;
}

/* replica_groups={{0,1},{2,3}} or the iota form. */
static int parse_replica_groups(parser *P, hlo_replica_groups *rg) {
  if (peek(P) == '[')
    return parse_iota_groups(P, rg);
  size_t base = P->groups.n;
  if (expect(P, '{', "'{' or '[' to start replica groups"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    hlo_ints g;
    if (parse_int_list(P, &g, "replica id") || vpush(P, &P->groups, &g, sizeof g))
      return -1;
    if ((more = list_next(P, '}', "',' or '}' in replica groups")) < 0)
      return -1;
  }
  rg->ngroups = (int)((P->groups.n - base) / sizeof(hlo_ints));
  rg->groups = vpop_to_arena(P, &P->groups, base);
  return rg->groups ? 0 : -1;
}

/* source_target_pairs={{0,1},{1,2}} */
static int parse_pairs(parser *P, hlo_attrs *a) {
  size_t base = P->ints.n;
  if (expect(P, '{', "'{' to start source_target_pairs"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    int64_t v[2];
    if (expect(P, '{', "'{' to start a pair") || int64_tok(P, &v[0], "source") ||
        expect(P, ',', "',' in pair") || int64_tok(P, &v[1], "target") ||
        expect(P, '}', "'}' after pair") || vpush(P, &P->ints, v, sizeof v))
      return -1;
    if ((more = list_next(P, '}', "',' or '}' in source_target_pairs")) < 0)
      return -1;
  }
  a->npairs = (int)((P->ints.n - base) / sizeof(hlo_pair));
  a->pairs = vpop_to_arena(P, &P->ints, base);
  return a->pairs ? 0 : -1;
}

static bool word_ieq(const char *s, size_t n, const char *w) {
  if (strlen(w) != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((s[i] | 0x20) != w[i])
      return false;
  return true;
}

/* operand_precision={default,highest} */
static int parse_precision(parser *P, hlo_attrs *a) {
  size_t base = P->precs.n;
  if (expect(P, '{', "'{' to start operand_precision"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    const char *s;
    size_t n;
    hlo_pos at = next_pos(P);
    if (name(P, &s, &n, "a precision"))
      return -1;
    hlo_precision p;
    if (word_ieq(s, n, "default"))
      p = HLO_PREC_DEFAULT;
    else if (word_ieq(s, n, "high"))
      p = HLO_PREC_HIGH;
    else if (word_ieq(s, n, "highest"))
      p = HLO_PREC_HIGHEST;
    else
      return hlo_lex_error_at(&P->lx, at, "unknown precision '%.*s'", (int)n, s);
    if (vpush(P, &P->precs, &p, sizeof p))
      return -1;
    if ((more = list_next(P, '}', "',' or '}' in operand_precision")) < 0)
      return -1;
  }
  a->nprecision = (int)((P->precs.n - base) / sizeof(hlo_precision));
  a->precision = vpop_to_arena(P, &P->precs, base);
  return a->precision ? 0 : -1;
}

/* A name among `names` (index returned in *v, 1-based like the enums). */
static int enum_tok(parser *P, const char *const *names, int count, int *v, const char *what) {
  const char *s;
  size_t n;
  hlo_pos at = next_pos(P);
  if (name(P, &s, &n, what))
    return -1;
  for (int i = 0; i < count; i++)
    if (is_word(s, n, names[i])) {
      *v = i + 1;
      return 0;
    }
  return hlo_lex_error_at(&P->lx, at, "unknown %s '%.*s'", what, (int)n, s);
}

/* A quoted string, decoded (\" \\ \n \t \r \'; other escapes kept). */
static int string_tok(parser *P, const char **out, const char *what) {
  if (peek(P) != '"')
    return expected(P, what);
  const char *s;
  size_t n = hlo_lex_string(&P->lx, &s);
  if (P->lx.failed)
    return -1;
  char *d = hlo_arena_alloc(P->arena, n + 1);
  if (!d)
    return oom(P);
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\\' && i + 1 < n) {
      char e = s[i + 1];
      char r = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : (e == '"' || e == '\\' || e == '\'') ? e : 0;
      if (r) {
        d[j++] = r;
        i++;
        continue;
      }
    }
    d[j++] = c;
  }
  d[j] = '\0';
  *out = d;
  return 0;
}

/* ---- computations --------------------------------------------------------- */

typedef struct comp_builder {
  hlo_computation *c;
  name_table names;
  size_t instr_base; /* in P->instrs */
  size_t fwd_base;   /* in P->fwd */
  hlo_instr *root;
} comp_builder;

static int parse_body(parser *P, hlo_computation *c);

static int queue_call(parser *P, hlo_computation **slot, const char *s, size_t n, hlo_pos at) {
  pending_call pc = {slot, s, n, at};
  return vpush(P, &P->calls, &pc, sizeof pc);
}

/* Registers a computation name; error on a duplicate. */
static int add_comp_name(parser *P, hlo_computation *c, hlo_pos at) {
  size_t n = strlen(c->name);
  uint32_t h = name_hash(c->name, n);
  if (nt_find(&P->comp_names, c->name, n, h))
    return hlo_lex_error_at(&P->lx, at, "duplicate computation name '%s'", c->name);
  return nt_add(P, &P->comp_names, c->name, n, h, c);
}

/* `to_apply={ instrs }`: a computation written in place.  It gets a name
 * made from the instruction and attribute, made unique with a suffix. */
static int parse_inline_computation(parser *P, hlo_instr *in, const char *attr, hlo_computation **slot) {
  if (++P->depth > MAX_DEPTH)
    return hlo_lex_error(&P->lx, "nesting too deep");
  hlo_pos at = pos(P);
  hlo_computation *c = arena_new(P, sizeof *c);
  if (!c)
    return -1;
  size_t n = strlen(in->name) + strlen(attr) + 24;
  char *nm = hlo_arena_alloc(P->arena, n);
  if (!nm)
    return oom(P);
  for (int k = 0;; k++) {
    if (k == 0)
      snprintf(nm, n, "%s.%s", in->name, attr);
    else
      snprintf(nm, n, "%s.%s.%d", in->name, attr, k);
    if (!nt_find(&P->comp_names, nm, strlen(nm), name_hash(nm, strlen(nm))))
      break;
  }
  c->name = nm;
  c->line = at.line;
  c->col = at.col;
  if (add_comp_name(P, c, at))
    return -1;
  hlo_lex_skip(&P->lx); /* '{' */
  if (parse_body(P, c))
    return -1;
  *slot = c;
  P->depth--;
  return 0;
}

/* to_apply=name, to_apply=%name or to_apply={ ... } */
static int parse_comp_ref(parser *P, hlo_instr *in, const char *attr, hlo_computation **slot) {
  if (peek(P) == '{')
    return parse_inline_computation(P, in, attr, slot);
  const char *s;
  size_t n;
  hlo_pos at = pos(P);
  if (name(P, &s, &n, "a computation name"))
    return -1;
  return queue_call(P, slot, s, n, at);
}

/* branch_computations={a, b} */
static int parse_branches(parser *P, hlo_calls *calls) {
  size_t base = P->calls.n;
  if (expect(P, '{', "'{' to start branch_computations"))
    return -1;
  int nb = 0;
  int more = !hlo_lex_accept(&P->lx, '}');
  while (more) {
    const char *s;
    size_t n;
    hlo_pos at = next_pos(P);
    if (name(P, &s, &n, "a computation name") || queue_call(P, NULL, s, n, at))
      return -1;
    nb++;
    if ((more = list_next(P, '}', "',' or '}' in branch_computations")) < 0)
      return -1;
  }
  calls->nbranches = nb;
  if (!(calls->branches = hlo_arena_array(P->arena, (size_t)nb + 1, sizeof *calls->branches)))
    return oom(P);
  /* the slots exist only now: point the queued references at them */
  for (int i = 0; i < nb; i++)
    VAT(P->calls, pending_call, base / sizeof(pending_call) + (size_t)i).slot = &calls->branches[i];
  return 0;
}

static const char *const cmp_dir_names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
static const char *const cmp_type_names[] = {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
static const char *const rng_names[] = {"rng_uniform", "rng_normal"};

/* Attributes whose value is one token or one integer list, stored in one
 * field of hlo_attrs: the HLO_A_* bit they set, where they go and what
 * names them in messages.  The rest (AV_OTHER) have their own case in
 * parse_typed_attr. */
typedef enum attr_value { AV_OTHER = 0, AV_INTS, AV_INT64, AV_NONNEG, AV_BOOL } attr_value;

typedef struct plain_attr {
  attr_value kind;
  uint32_t has;
  size_t field; /* offset in hlo_attrs */
  const char *what;
} plain_attr;

#define PLAIN(K, BIT, KIND, FIELD, WHAT) [K] = {KIND, BIT, offsetof(hlo_attrs, FIELD), WHAT}
static const plain_attr plain_attrs[AK_COUNT] = {
    PLAIN(AK_DIMENSIONS, HLO_A_DIMENSIONS, AV_INTS, dimensions, "dimension"),
    PLAIN(AK_LHS_BATCH, HLO_A_DOT_DNUMS, AV_INTS, dot.lhs_batch, "dimension"),
    PLAIN(AK_RHS_BATCH, HLO_A_DOT_DNUMS, AV_INTS, dot.rhs_batch, "dimension"),
    PLAIN(AK_LHS_CONTRACTING, HLO_A_DOT_DNUMS, AV_INTS, dot.lhs_contracting, "dimension"),
    PLAIN(AK_RHS_CONTRACTING, HLO_A_DOT_DNUMS, AV_INTS, dot.rhs_contracting, "dimension"),
    PLAIN(AK_FEATURE_GROUP_COUNT, HLO_A_FEATURE_GROUP_COUNT, AV_INT64,
          feature_group_count, "feature_group_count"),
    PLAIN(AK_BATCH_GROUP_COUNT, HLO_A_BATCH_GROUP_COUNT, AV_INT64, batch_group_count, "batch_group_count"),
    PLAIN(AK_OFFSET_DIMS, HLO_A_GATHER_DNUMS, AV_INTS, gather.offset_dims, "dimension"),
    PLAIN(AK_COLLAPSED_SLICE_DIMS, HLO_A_GATHER_DNUMS, AV_INTS, gather.collapsed_slice_dims, "dimension"),
    PLAIN(AK_START_INDEX_MAP, HLO_A_GATHER_DNUMS, AV_INTS, gather.start_index_map, "dimension"),
    PLAIN(AK_OPERAND_BATCHING_DIMS, HLO_A_GATHER_DNUMS, AV_INTS, gather.operand_batching_dims, "dimension"),
    PLAIN(AK_START_INDICES_BATCHING_DIMS, HLO_A_GATHER_DNUMS, AV_INTS,
          gather.start_indices_batching_dims, "dimension"),
    PLAIN(AK_SLICE_SIZES, HLO_A_SLICE_SIZES, AV_INTS, slice_sizes, "slice size"),
    PLAIN(AK_INDICES_ARE_SORTED, HLO_A_INDICES_ARE_SORTED, AV_BOOL, indices_are_sorted, NULL),
    PLAIN(AK_UPDATE_WINDOW_DIMS, HLO_A_SCATTER_DNUMS, AV_INTS, scatter.update_window_dims, "dimension"),
    PLAIN(AK_INSERTED_WINDOW_DIMS, HLO_A_SCATTER_DNUMS, AV_INTS, scatter.inserted_window_dims, "dimension"),
    PLAIN(AK_SCATTER_DIMS_TO_OPERAND_DIMS, HLO_A_SCATTER_DNUMS, AV_INTS,
          scatter.scatter_dims_to_operand_dims, "dimension"),
    PLAIN(AK_INPUT_BATCHING_DIMS, HLO_A_SCATTER_DNUMS, AV_INTS, scatter.input_batching_dims, "dimension"),
    PLAIN(AK_SCATTER_INDICES_BATCHING_DIMS, HLO_A_SCATTER_DNUMS, AV_INTS,
          scatter.scatter_indices_batching_dims, "dimension"),
    PLAIN(AK_UNIQUE_INDICES, HLO_A_UNIQUE_INDICES, AV_BOOL, unique_indices, NULL),
    PLAIN(AK_INDEX, HLO_A_INDEX, AV_NONNEG, index, "index"),
    PLAIN(AK_IOTA_DIMENSION, HLO_A_IOTA_DIMENSION, AV_NONNEG, iota_dimension, "iota_dimension"),
    PLAIN(AK_DYNAMIC_SLICE_SIZES, HLO_A_DYNAMIC_SLICE_SIZES, AV_INTS, dynamic_slice_sizes, "slice size"),
    PLAIN(AK_IS_STABLE, HLO_A_IS_STABLE, AV_BOOL, is_stable, NULL),
    PLAIN(AK_CHANNEL_ID, HLO_A_CHANNEL_ID, AV_INT64, channel_id, "channel_id"),
    PLAIN(AK_EXPONENT_BITS, HLO_A_EXPONENT_BITS, AV_INT64, exponent_bits, "exponent_bits"),
    PLAIN(AK_MANTISSA_BITS, HLO_A_MANTISSA_BITS, AV_INT64, mantissa_bits, "mantissa_bits"),
    PLAIN(AK_USE_GLOBAL_DEVICE_IDS, HLO_A_USE_GLOBAL_DEVICE_IDS, AV_BOOL, use_global_device_ids, NULL),
};
#undef PLAIN

static int parse_typed_attr(parser *P, hlo_instr *in, attr_kind k) {
  hlo_attrs *a = &in->attrs;
  const plain_attr *pa = &plain_attrs[k < AK_COUNT ? k : AK_RAW];
  if (pa->kind != AV_OTHER) {
    a->has |= pa->has;
    void *field = (char *)a + pa->field;
    switch (pa->kind) {
    case AV_INTS:
      return parse_int_list(P, field, pa->what);
    case AV_INT64:
      return int64_tok(P, field, pa->what);
    case AV_NONNEG:
      return nonneg_tok(P, field, pa->what);
    case AV_BOOL:
      return bool_tok(P, field);
    case AV_OTHER:
      break;
    }
  }
  int v;
  switch (k) {
  case AK_SLICE:
    a->has |= HLO_A_SLICE;
    return parse_slice(P, a);
  case AK_PADDING:
    a->has |= HLO_A_PADDING;
    return parse_padding(P, a);
  case AK_WINDOW:
    a->has |= HLO_A_WINDOW;
    return parse_window(P, a);
  case AK_DIM_LABELS:
    a->has |= HLO_A_DIM_LABELS;
    return parse_dim_labels(P, a);
  case AK_INDEX_VECTOR_DIM: /* shared by gather and scatter */
    if (in->op == HLO_OP_SCATTER) {
      a->has |= HLO_A_SCATTER_DNUMS;
      return int64_tok(P, &a->scatter.index_vector_dim, "index_vector_dim");
    }
    a->has |= HLO_A_GATHER_DNUMS;
    return int64_tok(P, &a->gather.index_vector_dim, "index_vector_dim");
  case AK_DIRECTION:
    a->has |= HLO_A_DIRECTION;
    if (enum_tok(P, cmp_dir_names, 6, &v, "comparison direction"))
      return -1;
    a->direction = (hlo_cmp_dir)v;
    return 0;
  case AK_TYPE:
    a->has |= HLO_A_CMP_TYPE;
    if (enum_tok(P, cmp_type_names, 4, &v, "comparison type"))
      return -1;
    a->cmp_type = (hlo_cmp_type)v;
    return 0;
  case AK_TO_APPLY:
    return parse_comp_ref(P, in, "to_apply", &a->calls.to_apply);
  case AK_CALLS:
    return parse_comp_ref(P, in, "calls", &a->calls.calls);
  case AK_CONDITION:
    return parse_comp_ref(P, in, "condition", &a->calls.condition);
  case AK_BODY:
    return parse_comp_ref(P, in, "body", &a->calls.body);
  case AK_BRANCH_COMPUTATIONS:
    if (a->calls.true_false_form)
      return hlo_lex_error(&P->lx, "branch_computations together with true/false_computation");
    return parse_branches(P, &a->calls);
  case AK_TRUE_COMPUTATION:
  case AK_FALSE_COMPUTATION:
    if (a->calls.nbranches && !a->calls.true_false_form)
      return hlo_lex_error(&P->lx, "true/false_computation together with branch_computations");
    if (!a->calls.branches) {
      if (!(a->calls.branches = hlo_arena_array(P->arena, 2, sizeof *a->calls.branches)))
        return oom(P);
      a->calls.nbranches = 2;
      a->calls.true_false_form = true;
    }
    return parse_comp_ref(P, in, k == AK_TRUE_COMPUTATION ? "true_computation" : "false_computation",
                          &a->calls.branches[k == AK_TRUE_COMPUTATION ? 0 : 1]);
  case AK_KIND: {
    const char *s;
    size_t n;
    a->has |= HLO_A_KIND;
    if (name(P, &s, &n, "a fusion kind"))
      return -1;
    return (a->kind = arena_str(P, s, n)) ? 0 : -1;
  }
  case AK_REPLICA_GROUPS:
    a->has |= HLO_A_REPLICA_GROUPS;
    return parse_replica_groups(P, &a->replica_groups);
  case AK_OPERAND_PRECISION:
    a->has |= HLO_A_OPERAND_PRECISION;
    return parse_precision(P, a);
  case AK_DISTRIBUTION:
    a->has |= HLO_A_DISTRIBUTION;
    if (enum_tok(P, rng_names, 2, &v, "distribution"))
      return -1;
    a->distribution = (hlo_rng_dist)v;
    return 0;
  case AK_CUSTOM_CALL_TARGET:
    a->has |= HLO_A_CUSTOM_CALL_TARGET;
    return string_tok(P, &a->custom_call_target, "a quoted custom_call_target");
  case AK_SOURCE_TARGET_PAIRS:
    a->has |= HLO_A_SOURCE_TARGET_PAIRS;
    return parse_pairs(P, a);
  default: /* AK_RAW, AK_COUNT; the plain attributes returned above */
    break;
  }
  return hlo_lex_error(&P->lx, "internal error: attribute kind %d", (int)k);
}

/* `name=value` kept as source text, pushed onto P->raws. */
static int parse_raw_attr(parser *P, const char *s, size_t n) {
  hlo_raw_attr r;
  const char *v;
  peek(P);
  size_t vn = hlo_lex_raw_value(&P->lx, &v);
  if (!vn)
    return P->lx.failed ? -1 : expected(P, "an attribute value");
  if (!(r.name = arena_str(P, s, n)) || !(r.value = arena_str(P, v, vn)))
    return -1;
  return vpush(P, &P->raws, &r, sizeof r);
}

/* Gather and scatter dimension numbers are typed only on their own op:
 * collective-permute's slice_sizes={{..}} is not gather's list, and
 * index_vector_dim, which both share, needs to know whose it is. */
static bool typed_for_op(attr_kind k, hlo_opcode op) {
  switch (k) {
  case AK_OFFSET_DIMS: case AK_COLLAPSED_SLICE_DIMS: case AK_START_INDEX_MAP:
  case AK_OPERAND_BATCHING_DIMS: case AK_START_INDICES_BATCHING_DIMS: case AK_SLICE_SIZES:
    return op == HLO_OP_GATHER;
  case AK_UPDATE_WINDOW_DIMS: case AK_INSERTED_WINDOW_DIMS: case AK_SCATTER_DIMS_TO_OPERAND_DIMS:
  case AK_INPUT_BATCHING_DIMS: case AK_SCATTER_INDICES_BATCHING_DIMS:
    return op == HLO_OP_SCATTER;
  case AK_INDEX_VECTOR_DIM:
    return op == HLO_OP_GATHER || op == HLO_OP_SCATTER;
  default:
    return true;
  }
}

/* `, name=value` ... after the operands. */
static int parse_attrs(parser *P, hlo_instr *in) {
  size_t base = P->raws.n;
  uint64_t seen = 0;
  while (hlo_lex_accept(&P->lx, ',')) {
    const char *s;
    size_t n;
    hlo_pos at = next_pos(P);
    if (name(P, &s, &n, "an attribute name"))
      return -1;
    if (expect(P, '=', "'=' after attribute name"))
      return -1;
    attr_kind k = attr_lookup(s, n);
    if (!typed_for_op(k, in->op))
      k = AK_RAW;
    if (k == AK_RAW) {
      if (parse_raw_attr(P, s, n))
        return -1;
      continue;
    }
    if (seen >> k & 1)
      return hlo_lex_error_at(&P->lx, at, "duplicate attribute '%.*s'", (int)n, s);
    seen |= (uint64_t)1 << k;
    if (parse_typed_attr(P, in, k))
      return -1;
  }
  in->nraw = (int)((P->raws.n - base) / sizeof(hlo_raw_attr));
  if (in->nraw && !(in->raw = vpop_to_arena(P, &P->raws, base)))
    return -1;
  return 0;
}

/* ---- instructions ---------------------------------------------------------- */

/* The opcode name, with the async sugar: `X-start`, `X-update`, `X-done`
 * where X is an opcode with no native -start form mean async-start/update/
 * done wrapping X. */
static int resolve_opcode(parser *P, hlo_instr *in, const char *s, size_t n, hlo_pos at) {
  in->op = hlo_opcode_from_name(s, n);
  if (in->op != HLO_OP_INVALID)
    return 0;
  static const struct {
    const char *suffix;
    hlo_opcode op;
  } sugar[] = {{"-start", HLO_OP_ASYNC_START}, {"-update", HLO_OP_ASYNC_UPDATE}, {"-done", HLO_OP_ASYNC_DONE}};
  for (size_t i = 0; i < sizeof sugar / sizeof sugar[0]; i++) {
    size_t sl = strlen(sugar[i].suffix);
    if (n > sl && memcmp(s + n - sl, sugar[i].suffix, sl) == 0) {
      hlo_opcode w = hlo_opcode_from_name(s, n - sl);
      if (w != HLO_OP_INVALID) {
        in->op = sugar[i].op;
        in->async_wrapped = w;
        return 0;
      }
    }
  }
  return hlo_lex_error_at(&P->lx, at, "unknown opcode '%.*s'", (int)n, s);
}

/* One operand `[shape] name`: resolved now when defined, else queued. */
static int parse_operand(parser *P, comp_builder *b, hlo_instr *in, int idx) {
  const char *s;
  size_t n;
  hlo_pos at;
  int c = peek(P);
  if (c == '(') {
    if (parse_shape(P, NULL, false))
      return -1;
    peek(P);
  }
  at = pos(P);
  if (name(P, &s, &n, "an operand name"))
    return -1;
  if (c != '(' && peek(P) == '[') { /* that was an element type */
    hlo_etype t = etype_lookup(s, n);
    if (t == HLO_INVALID)
      return hlo_lex_error_at(&P->lx, at, "unknown element type '%.*s'", (int)n, s);
    if (parse_array_shape(P, t, NULL, false))
      return -1;
    at = next_pos(P);
    if (name(P, &s, &n, "an operand name"))
      return -1;
  }
  hlo_instr *def = nt_find(&b->names, s, n, name_hash(s, n));
  if (!def) {
    pending_operand f = {in, idx, s, n, at};
    if (vpush(P, &P->fwd, &f, sizeof f))
      return -1;
  }
  return vpush(P, &P->operands, &def, sizeof def);
}

static int parse_operands(parser *P, comp_builder *b, hlo_instr *in) {
  size_t base = P->operands.n;
  if (expect(P, '(', "'(' after opcode"))
    return -1;
  int more = !hlo_lex_accept(&P->lx, ')');
  for (int idx = 0; more; idx++) {
    if (parse_operand(P, b, in, idx))
      return -1;
    if ((more = list_next(P, ')', "',' or ')' after operand")) < 0)
      return -1;
  }
  in->noperands = (int)((P->operands.n - base) / sizeof(hlo_instr *));
  if (in->noperands && !(in->operands = vpop_to_arena(P, &P->operands, base)))
    return -1;
  return 0;
}

/* What goes between the opcode's parentheses. */
static int parse_instr_args(parser *P, comp_builder *b, hlo_instr *in) {
  if (in->op == HLO_OP_PARAMETER) {
    if (expect(P, '(', "'(' after parameter") || nonneg_tok(P, &in->parameter_number, "parameter number") ||
        expect(P, ')', "')' after parameter number"))
      return -1;
    if (in->parameter_number > INT32_MAX)
      return hlo_lex_error(&P->lx, "parameter number too large");
    return 0;
  }
  if (in->op == HLO_OP_CONSTANT) {
    if (in->shape.type == HLO_INVALID)
      return hlo_lex_error(&P->lx, "a constant needs its shape written");
    if (expect(P, '(', "'(' after constant"))
      return -1;
    if (!(in->literal = arena_new(P, sizeof *in->literal)))
      return -1;
    if (parse_literal(P, &in->shape, in->literal))
      return -1;
    return expect(P, ')', "')' after constant value");
  }
  return parse_operands(P, b, in);
}

/* `[ROOT] name = [shape] opcode(args), attrs` */
static int parse_instr(parser *P, comp_builder *b) {
  const char *s;
  size_t n;
  bool is_root = false;
  hlo_pos at = pos(P);
  if (name(P, &s, &n, "an instruction name"))
    return -1;
  if (is_word(s, n, "ROOT") && peek(P) != '=') {
    is_root = true;
    at = next_pos(P);
    if (name(P, &s, &n, "an instruction name"))
      return -1;
  }
  if (expect(P, '=', "'=' after instruction name"))
    return -1;
  /* The name is checked and entered at the end of the instruction: in a big
   * computation its table slot is a cache miss, and the prefetch lets that
   * miss overlap with parsing the rest of the line. */
  uint32_t h = name_hash(s, n);
  nt_prefetch(&b->names, h);
  hlo_instr *in = arena_new(P, sizeof *in);
  if (!in || !(in->name = arena_str(P, s, n)))
    return -1;
  in->line = at.line;
  in->col = at.col;
  in->parent = b->c;
  if (is_root) {
    if (b->root)
      return hlo_lex_error_at(&P->lx, at, "second ROOT in computation '%s'", b->c->name);
    b->root = in;
  }

  /* shape, or straight the opcode */
  hlo_pos opat;
  if (peek(P) == '(') {
    if (parse_shape(P, &in->shape, true))
      return -1;
    opat = next_pos(P);
    if (name(P, &s, &n, "an opcode"))
      return -1;
  } else {
    opat = next_pos(P);
    if (name(P, &s, &n, "a shape or an opcode"))
      return -1;
    if (peek(P) == '[') {
      hlo_etype t = etype_lookup(s, n);
      if (t == HLO_INVALID)
        return hlo_lex_error_at(&P->lx, opat, "unknown element type '%.*s'", (int)n, s);
      if (parse_array_shape(P, t, &in->shape, true))
        return -1;
      opat = next_pos(P);
      if (name(P, &s, &n, "an opcode"))
        return -1;
    }
  }
  if (resolve_opcode(P, in, s, n, opat) || parse_instr_args(P, b, in) || parse_attrs(P, in))
    return -1;
  size_t len = strlen(in->name);
  if (nt_find(&b->names, in->name, len, h))
    return hlo_lex_error_at(&P->lx, at, "duplicate name '%s'", in->name);
  if (nt_add(P, &b->names, in->name, len, h, in))
    return -1;
  return vpush(P, &P->instrs, &in, sizeof in);
}

static void resolve_fail(parser *P, const pending_operand *f) {
  hlo_lex_error_at(&P->lx, f->pos, "undefined operand '%.*s'", (int)f->len, f->name);
}

/* Operands that were not defined yet when they were read. */
static int resolve_operands(parser *P, comp_builder *b) {
  size_t n = (P->fwd.n - b->fwd_base) / sizeof(pending_operand);
  const pending_operand *f = (const pending_operand *)(P->fwd.p + b->fwd_base);
  for (size_t i = 0; i < n; i++) {
    hlo_instr *def = nt_find(&b->names, f[i].name, f[i].len, name_hash(f[i].name, f[i].len));
    if (!def) {
      resolve_fail(P, &f[i]);
      return -1;
    }
    f[i].user->operands[f[i].idx] = def;
  }
  P->fwd.n = b->fwd_base;
  return 0;
}

/* comp->params indexed by parameter number; the numbers must be 0..k-1. */
static int collect_params(parser *P, hlo_computation *c) {
  int k = 0;
  for (int i = 0; i < c->ninstrs; i++)
    k += c->instrs[i]->op == HLO_OP_PARAMETER;
  c->nparams = k;
  if (!(c->params = hlo_arena_array(P->arena, (size_t)k + 1, sizeof *c->params)))
    return oom(P);
  for (int i = 0; i < c->ninstrs; i++) {
    hlo_instr *in = c->instrs[i];
    if (in->op != HLO_OP_PARAMETER)
      continue;
    hlo_pos at = {in->line, in->col};
    if (in->parameter_number >= k)
      return hlo_lex_error_at(&P->lx, at, "parameter number %lld out of range: '%s' has %d parameters",
                              (long long)in->parameter_number, c->name, k);
    if (c->params[in->parameter_number])
      return hlo_lex_error_at(&P->lx, at, "duplicate parameter number %lld", (long long)in->parameter_number);
    c->params[in->parameter_number] = in;
  }
  return 0;
}

/* Ops whose result has the shape of operand `src` (or, when to_pred, its
 * dims with element type pred). */
static bool same_shape_op(hlo_opcode op, int *src, bool *to_pred) {
  *src = 0;
  *to_pred = false;
  switch (op) {
  case HLO_OP_COMPARE:
  case HLO_OP_IS_FINITE:
    *to_pred = true;
    return true;
  case HLO_OP_SELECT:
  case HLO_OP_CLAMP:
    *src = 1;
    return true;
  case HLO_OP_ABS: case HLO_OP_ADD: case HLO_OP_AND: case HLO_OP_ATAN2: case HLO_OP_CBRT:
  case HLO_OP_CEIL: case HLO_OP_CLZ: case HLO_OP_COPY: case HLO_OP_COSINE: case HLO_OP_DIVIDE:
  case HLO_OP_ERF: case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_FLOOR: case HLO_OP_LOG:
  case HLO_OP_LOG1P: case HLO_OP_LOGISTIC: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM:
  case HLO_OP_MULTIPLY: case HLO_OP_NEGATE: case HLO_OP_NOT: case HLO_OP_OR: case HLO_OP_POPCNT:
  case HLO_OP_POWER: case HLO_OP_REMAINDER: case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN:
  case HLO_OP_RSQRT: case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC:
  case HLO_OP_SHIFT_RIGHT_LOGICAL: case HLO_OP_SIGN: case HLO_OP_SINE: case HLO_OP_SQRT:
  case HLO_OP_SUBTRACT: case HLO_OP_TAN: case HLO_OP_TANH: case HLO_OP_XOR:
    return true;
  default:
    return false;
  }
}

/* XLA lets a few instructions omit their result shape (`add(a, b)`,
 * `get-tuple-element(t), index=0`, `tuple(a, b)`); infer those, in source
 * order so that chains of them work. */
static int infer_shape(parser *P, hlo_instr *in) {
  hlo_pos at = {in->line, in->col};
  for (int i = 0; i < in->noperands; i++)
    if (in->operands[i]->shape.type == HLO_INVALID)
      return hlo_lex_error_at(&P->lx, at, "cannot infer the shape of '%s': operand '%s' has no shape yet",
                              in->name, in->operands[i]->name);
  int src;
  bool to_pred;
  if (in->op == HLO_OP_TUPLE) {
    in->shape.type = HLO_TUPLE;
    in->shape.ntuple = in->noperands;
    if (!(in->shape.elems = hlo_arena_array(P->arena, (size_t)in->noperands + 1, sizeof(hlo_shape))))
      return oom(P);
    for (int i = 0; i < in->noperands; i++)
      in->shape.elems[i] = in->operands[i]->shape;
    return 0;
  }
  if (in->op == HLO_OP_GET_TUPLE_ELEMENT && in->noperands == 1 && (in->attrs.has & HLO_A_INDEX)) {
    const hlo_shape *t = &in->operands[0]->shape;
    if (t->type != HLO_TUPLE || in->attrs.index >= t->ntuple)
      return hlo_lex_error_at(&P->lx, at, "cannot infer the shape of '%s': index %lld is not in the tuple",
                              in->name, (long long)in->attrs.index);
    in->shape = t->elems[in->attrs.index];
    return 0;
  }
  if (same_shape_op(in->op, &src, &to_pred) && src < in->noperands) {
    in->shape = in->operands[src]->shape;
    if (to_pred) {
      if (in->shape.type == HLO_TUPLE)
        return hlo_lex_error_at(&P->lx, at, "cannot infer the shape of '%s' from a tuple", in->name);
      in->shape.type = HLO_PRED;
    }
    return 0;
  }
  return hlo_lex_error_at(&P->lx, at, "cannot infer the shape of '%s' (%s): write the result shape", in->name,
                          hlo_opcode_name(in->op));
}

/* Everything after the '{' of a computation, up to and including '}'. */
static int parse_body(parser *P, hlo_computation *c) {
  comp_builder b = {c, {NULL, 0, 0}, P->instrs.n, P->fwd.n, NULL};
  int rc = -1;
  for (;;) {
    int ch = peek(P);
    if (ch == '}')
      break;
    if (ch == HLO_LEX_EOF) {
      expected(P, "'}'");
      goto done;
    }
    if (parse_instr(P, &b))
      goto done;
  }
  hlo_pos close = pos(P);
  hlo_lex_skip(&P->lx);
  c->ninstrs = (int)((P->instrs.n - b.instr_base) / sizeof(hlo_instr *));
  if (c->ninstrs == 0) {
    hlo_lex_error_at(&P->lx, close, "computation '%s' has no instructions", c->name);
    goto done;
  }
  if (!(c->instrs = vpop_to_arena(P, &P->instrs, b.instr_base)) || resolve_operands(P, &b))
    goto done;
  for (int i = 0; i < c->ninstrs; i++)
    c->instrs[i]->index = i;
  c->root_marked = b.root != NULL;
  c->root = b.root ? b.root : c->instrs[c->ninstrs - 1];
  if (collect_params(P, c))
    goto done;
  for (int i = 0; i < c->ninstrs; i++)
    if (c->instrs[i]->shape.type == HLO_INVALID && infer_shape(P, c->instrs[i]))
      goto done;
  c->index = (int)VLEN(P->comps, hlo_computation *);
  rc = vpush(P, &P->comps, &c, sizeof c);
done:
  nt_free(&b.names);
  return rc;
}

/* `(p0: f32[2], p1: s32[]) -> f32[2]` */
static int parse_signature(parser *P, hlo_computation *c) {
  size_t nbase = P->strs.n, sbase = P->shapes.n;
  hlo_lex_skip(&P->lx); /* '(' */
  int more = !hlo_lex_accept(&P->lx, ')');
  while (more) {
    const char *s;
    size_t n;
    hlo_shape sh = {0};
    if (name(P, &s, &n, "a parameter name") || expect(P, ':', "':' after parameter name") ||
        parse_shape(P, &sh, true))
      return -1;
    char *nm = arena_str(P, s, n);
    if (!nm || vpush(P, &P->strs, &nm, sizeof nm) || vpush(P, &P->shapes, &sh, sizeof sh))
      return -1;
    if ((more = list_next(P, ')', "',' or ')' in signature")) < 0)
      return -1;
  }
  c->has_signature = true;
  c->nsig_params = (int)((P->shapes.n - sbase) / sizeof(hlo_shape));
  if (!(c->sig_param_names = vpop_to_arena(P, &P->strs, nbase)) ||
      !(c->sig_param_shapes = vpop_to_arena(P, &P->shapes, sbase)))
    return -1;
  if (!hlo_lex_accept2(&P->lx, "->"))
    return expected(P, "'->' after signature parameters");
  return parse_shape(P, &c->sig_result, true);
}

/* `, execution_thread="name"`, after the header or the closing brace. */
static int parse_thread(parser *P, hlo_computation *c) {
  const char *s;
  size_t n;
  hlo_pos at = next_pos(P);
  if (name(P, &s, &n, "execution_thread"))
    return -1;
  if (!is_word(s, n, "execution_thread"))
    return hlo_lex_error_at(&P->lx, at, "expected execution_thread, not '%.*s'", (int)n, s);
  if (expect(P, '=', "'=' after execution_thread"))
    return -1;
  if (peek(P) != '"')
    return expected(P, "a quoted thread name");
  const char *v = P->lx.p;
  hlo_lex_string(&P->lx, &s);
  if (P->lx.failed)
    return -1;
  return (c->execution_thread = arena_str(P, v, (size_t)(P->lx.p - v))) ? 0 : -1;
}

static int parse_computation(parser *P, bool *saw_entry) {
  const char *s;
  size_t n;
  hlo_pos at = pos(P);
  hlo_computation *c = arena_new(P, sizeof *c);
  if (!c || name(P, &s, &n, "a computation name"))
    return -1;
  if (is_word(s, n, "ENTRY")) {
    if (*saw_entry)
      return hlo_lex_error_at(&P->lx, at, "second ENTRY computation");
    *saw_entry = true;
    c->is_entry = true;
    at = next_pos(P);
    if (name(P, &s, &n, "a computation name"))
      return -1;
  }
  if (!(c->name = arena_str(P, s, n)))
    return -1;
  c->line = at.line;
  c->col = at.col;
  if (add_comp_name(P, c, at))
    return -1;
  if (peek(P) == '(' && parse_signature(P, c))
    return -1;
  if (hlo_lex_accept(&P->lx, ',') && parse_thread(P, c))
    return -1;
  if (expect(P, '{', "'{' to start the computation body"))
    return -1;
  if (parse_body(P, c))
    return -1;
  if (hlo_lex_accept(&P->lx, ','))
    return parse_thread(P, c);
  return 0;
}

/* ---- module ------------------------------------------------------------------ */

static int header_int(parser *P, const hlo_raw_attr *r, hlo_pos at, int64_t *v) {
  if (!text_i64(r->value, strlen(r->value), v) || r->value[0] == '\0' || r->value[0] == '-')
    return hlo_lex_error_at(&P->lx, at, "%s must be a non-negative integer", r->name);
  return 0;
}

/* `HloModule name, attr=value, ...` (the keyword already read). */
static int parse_header(parser *P, hlo_module *m) {
  const char *s;
  size_t n;
  if (name(P, &s, &n, "a module name") || !(m->name = arena_str(P, s, n)))
    return -1;
  /* XLA's lexer reads `name:` as a name, so `HloModule m:` is its module m. */
  hlo_lex_accept(&P->lx, ':');
  size_t base = P->raws.n;
  while (hlo_lex_accept(&P->lx, ',')) {
    if (name(P, &s, &n, "a module attribute name") || expect(P, '=', "'=' after attribute name"))
      return -1;
    hlo_pos vat = next_pos(P);
    if (parse_raw_attr(P, s, n))
      return -1;
    const hlo_raw_attr *r = &VAT(P->raws, hlo_raw_attr, P->raws.n / sizeof(hlo_raw_attr) - 1);
    if (strcmp(r->name, "replica_count") == 0 && header_int(P, r, vat, &m->replica_count))
      return -1;
    if (strcmp(r->name, "num_partitions") == 0 && header_int(P, r, vat, &m->num_partitions))
      return -1;
    if (strcmp(r->name, "is_scheduled") == 0) {
      if (strcmp(r->value, "true") != 0 && strcmp(r->value, "false") != 0)
        return hlo_lex_error_at(&P->lx, vat, "is_scheduled must be true or false");
      m->is_scheduled = r->value[0] == 't';
    }
  }
  m->nattrs = (int)((P->raws.n - base) / sizeof(hlo_raw_attr));
  if (m->nattrs && !(m->attrs = vpop_to_arena(P, &P->raws, base)))
    return -1;
  return 0;
}

static int resolve_calls(parser *P) {
  size_t n = VLEN(P->calls, pending_call);
  for (size_t i = 0; i < n; i++) {
    const pending_call *pc = &VAT(P->calls, pending_call, i);
    hlo_computation *c = nt_find(&P->comp_names, pc->name, pc->len, name_hash(pc->name, pc->len));
    if (!c)
      return hlo_lex_error_at(&P->lx, pc->pos, "undefined computation '%.*s'", (int)pc->len, pc->name);
    *pc->slot = c;
  }
  return 0;
}

static int parse_module(parser *P, hlo_module *m) {
  const char *s;
  size_t n;
  bool saw_entry = false;
  m->replica_count = 1;
  m->num_partitions = 1;
  if (peek(P) != HLO_LEX_EOF) {
    hlo_lex save = P->lx;
    n = hlo_lex_name(&P->lx, &s);
    if (n && is_word(s, n, "HloModule")) {
      if (parse_header(P, m))
        return -1;
    } else {
      P->lx = save;
    }
  }
  while (peek(P) != HLO_LEX_EOF)
    if (parse_computation(P, &saw_entry))
      return -1;
  if (P->lx.failed)
    return -1; /* e.g. an unterminated comment read as the end */
  m->ncomps = (int)VLEN(P->comps, hlo_computation *);
  if (m->ncomps == 0)
    return hlo_lex_error(&P->lx, "empty file: no computation");
  if (!(m->comps = vpop_to_arena(P, &P->comps, 0)) || resolve_calls(P))
    return -1;
  m->entry = m->comps[m->ncomps - 1];
  for (int i = 0; i < m->ncomps; i++)
    if (m->comps[i]->is_entry)
      m->entry = m->comps[i];
  return 0;
}

#define PARSER_VECS(P)                                                                   \
  {&(P)->ints, &(P)->instrs, &(P)->operands, &(P)->shapes, &(P)->tiles, &(P)->raws, &(P)->vals, \
   &(P)->strs, &(P)->groups, &(P)->chars,    &(P)->precs,  &(P)->fwd,   &(P)->calls, &(P)->comps}

/* Gives every stack a buffer up front: code that forms `v.p + base` for an
 * empty range then never does arithmetic on a null pointer. */
static int parser_reserve(parser *P) {
  vec *vs[] = PARSER_VECS(P);
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    if (!(vs[i]->p = malloc(256)))
      return -1;
    vs[i]->cap = 256;
  }
  return 0;
}

static void parser_free(parser *P) {
  vec *vs[] = PARSER_VECS(P);
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    vfree(vs[i]);
  nt_free(&P->comp_names);
}

hlo_module *hlo_parse(const char *text, size_t len, hlo_error *err) {
  parser P;
  memset(&P, 0, sizeof P);
  if (err)
    memset(err, 0, sizeof *err);
  if (!text)
    len = 0, text = "";
  hlo_lex_init(&P.lx, text, len, err);
  if (parser_reserve(&P)) {
    parser_free(&P);
    hlo_error_set(err, 0, 0, "out of memory");
    return NULL;
  }
  P.arena = hlo_arena_new();
  hlo_module *m = P.arena ? hlo_arena_alloc(P.arena, sizeof *m) : NULL;
  if (!m) {
    hlo_arena_free(P.arena);
    parser_free(&P);
    hlo_error_set(err, 0, 0, "out of memory");
    return NULL;
  }
  m->arena = P.arena;
  int rc = parse_module(&P, m);
  parser_free(&P);
  if (rc || P.lx.failed) {
    hlo_module_free(m);
    return NULL;
  }
  return m;
}
