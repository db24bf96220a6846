/* hlo.c — the small shared helpers of the IR: opcode names, lookups and
 * shape arithmetic.  Parsing and printing live in their own files. */
#include "hlo.h"

#include <string.h>

static const char *const opcode_names[HLO_OP_COUNT] = {
    [HLO_OP_INVALID] = "invalid",
#define X(e, name) [HLO_OP_##e] = name,
    HLO_OPCODE_LIST(X)
#undef X
};

const char *hlo_opcode_name(hlo_opcode op) {
  return (op > HLO_OP_INVALID && op < HLO_OP_COUNT) ? opcode_names[op] : "invalid";
}

/* A linear scan over ~130 names would be hot in a 50 MB parse, so the first
 * call builds a small open-addressing table keyed by a string hash. */
enum { OP_TABLE = 512 };
static unsigned char op_table[OP_TABLE]; /* opcode+1, 0 = empty */
static int op_table_ready;

static unsigned op_hash(const char *s, size_t n) {
  unsigned h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static void op_table_build(void) {
  for (int op = HLO_OP_INVALID + 1; op < HLO_OP_COUNT; op++) {
    const char *name = opcode_names[op];
    unsigned h = op_hash(name, strlen(name)) & (OP_TABLE - 1);
    while (op_table[h])
      h = (h + 1) & (OP_TABLE - 1);
    op_table[h] = (unsigned char)(op + 1);
  }
  op_table_ready = 1;
}

hlo_opcode hlo_opcode_from_name(const char *s, size_t n) {
  /* Building twice from two threads writes the same bytes, so a race here is
   * benign in practice; callers that care call once before going parallel. */
  if (!op_table_ready)
    op_table_build();
  unsigned h = op_hash(s, n) & (OP_TABLE - 1);
  while (op_table[h]) {
    int op = op_table[h] - 1;
    const char *name = opcode_names[op];
    if (strlen(name) == n && memcmp(name, s, n) == 0)
      return (hlo_opcode)op;
    h = (h + 1) & (OP_TABLE - 1);
  }
  return HLO_OP_INVALID;
}

void hlo_module_free(hlo_module *m) {
  if (m)
    hlo_arena_free(m->arena); /* the module itself lives in its arena */
}

hlo_computation *hlo_module_find(const hlo_module *m, const char *name) {
  for (int i = 0; i < m->ncomps; i++)
    if (strcmp(m->comps[i]->name, name) == 0)
      return m->comps[i];
  return NULL;
}

hlo_computation *hlo_instr_named_computation(const hlo_module *m, const hlo_instr *ins, const char *attr) {
  for (int i = 0; m && i < ins->nraw; i++) {
    if (strcmp(ins->raw[i].name, attr) != 0 || !ins->raw[i].value)
      continue;
    const char *name = ins->raw[i].value;
    return hlo_module_find(m, name[0] == '%' ? name + 1 : name);
  }
  return NULL;
}

/* Names are split on commas and spaces; a name longer than any HLO name
 * we keep is treated as malformed rather than truncated, so a cut name can
 * never find the wrong computation. */
hlo_computation *hlo_instr_listed_computation(const hlo_module *m, const hlo_instr *ins, const char *attr, int k,
                                              int *count) {
  if (count)
    *count = 0;
  const char *v = NULL;
  for (int i = 0; i < ins->nraw && !v; i++)
    if (strcmp(ins->raw[i].name, attr) == 0)
      v = ins->raw[i].value;
  if (!v)
    return NULL;
  if (*v == '{')
    v++;
  hlo_computation *found = NULL;
  int n = 0;
  for (;;) {
    v += strspn(v, " ");
    if (*v == '}' || *v == '\0')
      break;
    if (*v == '%')
      v++;
    size_t len = strcspn(v, " ,}");
    if (len == 0 || len > 255) {
      n = 0;
      found = NULL;
      break;
    }
    if (n == k && m) {
      char name[256];
      memcpy(name, v, len);
      name[len] = '\0';
      found = hlo_module_find(m, name);
    }
    n++;
    v += len;
    v += strspn(v, " ");
    if (*v == ',')
      v++;
  }
  if (count)
    *count = n;
  return found;
}

hlo_instr *hlo_computation_find(const hlo_computation *c, const char *name) {
  for (int i = 0; i < c->ninstrs; i++)
    if (strcmp(c->instrs[i]->name, name) == 0)
      return c->instrs[i];
  return NULL;
}

int64_t hlo_shape_bytes(const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    int64_t b = 0;
    for (int i = 0; i < s->ntuple; i++)
      b += hlo_shape_bytes(&s->elems[i]);
    return b;
  }
  if (s->type == HLO_INVALID || s->type == HLO_TOKEN)
    return 0;
  int64_t n = hlo_shape_elements(s);
  int bits = hlo_etype_bits(s->type);
  return n > INT64_MAX / 16 ? INT64_MAX / 2 : (n * (bits > 0 ? bits : 8) + 7) / 8;
}

hlo_opcode hlo_simple_reducer(const hlo_computation *c) {
  if (!c || c->nparams != 2 || c->ninstrs != 3 || !c->root || c->root->noperands != 2)
    return HLO_OP_INVALID;
  const hlo_instr *r = c->root;
  const hlo_instr *a = r->operands[0], *b = r->operands[1];
  if (a->op != HLO_OP_PARAMETER || b->op != HLO_OP_PARAMETER || a == b || r->shape.type == HLO_TUPLE ||
      r->shape.rank != 0)
    return HLO_OP_INVALID;
  switch (r->op) {
  case HLO_OP_ADD: case HLO_OP_MULTIPLY: case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM:
  case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
    return r->op;
  default:
    return HLO_OP_INVALID;
  }
}

bool hlo_instr_unread(const hlo_instr *ins) {
  const hlo_computation *c = ins->parent;
  if (!c || c->root == ins)
    return false;
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "output_to_operand_aliasing") == 0)
      return false;
  for (int i = 0; i < c->ninstrs; i++)
    for (int k = 0; k < c->instrs[i]->noperands; k++)
      if (c->instrs[i]->operands[k] == ins)
        return false;
  return true;
}

int64_t hlo_shape_elements(const hlo_shape *s) {
  /* Saturates at INT64_MAX: a shape that large cannot be allocated anyway,
   * and callers compare the count with limits rather than trust it. */
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[i] < 0 ? 0 : s->dims[i];
    if (d == 0)
      return 0;
    n = n > INT64_MAX / d ? INT64_MAX : n * d;
  }
  return n;
}

bool hlo_pad_size(int64_t n, const hlo_pad_dim *p, int64_t *out) {
  int64_t gaps = 0, size;
  if (p->interior < 0 || n < 0)
    return false;
  if (n > 0 && __builtin_mul_overflow(n - 1, p->interior, &gaps))
    return false;
  if (__builtin_add_overflow(n, gaps, &size) || __builtin_add_overflow(size, p->lo, &size) ||
      __builtin_add_overflow(size, p->hi, &size))
    return false;
  *out = size;
  return true;
}

bool hlo_shape_is_tuple(const hlo_shape *s) { return s->type == HLO_TUPLE; }

static bool ints_equal(const hlo_ints *a, const hlo_ints *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0);
}

static bool layout_equal(const hlo_layout *a, const hlo_layout *b) {
  if (!a || !b)
    return a == b;
  if (!ints_equal(&a->minor_to_major, &b->minor_to_major) || a->ntiles != b->ntiles ||
      a->memory_space != b->memory_space)
    return false;
  for (int i = 0; i < a->ntiles; i++)
    if (!ints_equal(&a->tiles[i].dims, &b->tiles[i].dims))
      return false;
  if (!a->extra || !b->extra)
    return a->extra == b->extra;
  return strcmp(a->extra, b->extra) == 0;
}

bool hlo_shape_equal(const hlo_shape *a, const hlo_shape *b, bool with_layout) {
  if (a->type != b->type)
    return false;
  if (a->type == HLO_TUPLE) {
    if (a->ntuple != b->ntuple)
      return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!hlo_shape_equal(&a->elems[i], &b->elems[i], with_layout))
        return false;
    return true;
  }
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] != b->dims[i])
      return false;
    int da = a->dynamic ? a->dynamic[i] : 0, db = b->dynamic ? b->dynamic[i] : 0;
    if (da != db)
      return false;
  }
  return !with_layout || layout_equal(a->layout, b->layout);
}

int hlo_shape_leaf_count(const hlo_shape *s) {
  if (s->type != HLO_TUPLE)
    return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++)
    n += hlo_shape_leaf_count(&s->elems[i]);
  return n;
}

const hlo_shape *hlo_shape_leaf(const hlo_shape *s, int k) {
  if (s->type != HLO_TUPLE)
    return k == 0 ? s : NULL;
  for (int i = 0; i < s->ntuple; i++) {
    int n = hlo_shape_leaf_count(&s->elems[i]);
    if (k < n)
      return hlo_shape_leaf(&s->elems[i], k);
    k -= n;
  }
  return NULL;
}
