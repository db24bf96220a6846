/* test_print.c — the canonical printer and structural equality.
 *
 * Modules are built by hand here (a tiny builder below) so the printer is
 * tested on exactly the IR we mean, independently of the parser; the
 * expected text is written out by hand.  The parse -> print tests at the end
 * check that the parser and the printer agree on the canonical form.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "hlo/hlo.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"

/* ---- a small IR builder ------------------------------------------------ */

typedef struct builder {
  hlo_module *m;
  hlo_computation *c; /* the computation instructions are added to */
} builder;

static void *zalloc(builder *b, size_t n) {
  void *p = hlo_arena_alloc(b->m->arena, n);
  assert_non_null(p);
  return p;
}

static const char *str(builder *b, const char *s) {
  return hlo_arena_strndup(b->m->arena, s, strlen(s));
}

static builder new_module(const char *name) {
  hlo_arena *a = hlo_arena_new();
  assert_non_null(a);
  hlo_module *m = hlo_arena_alloc(a, sizeof *m);
  assert_non_null(m);
  m->arena = a;
  m->replica_count = 1;
  m->num_partitions = 1;
  builder b = {m, NULL};
  if (name)
    m->name = str(&b, name);
  return b;
}

static hlo_ints ints(builder *b, int n, ...) {
  hlo_ints x = {n, n ? zalloc(b, (size_t)n * sizeof(int64_t)) : NULL};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    x.v[i] = va_arg(ap, int64_t);
  va_end(ap);
  return x;
}
#define I(x) ((int64_t)(x))

static void add_header_attr(builder *b, const char *name, const char *value) {
  hlo_module *m = b->m;
  hlo_raw_attr *na = zalloc(b, (size_t)(m->nattrs + 1) * sizeof *na);
  if (m->nattrs)
    memcpy(na, m->attrs, (size_t)m->nattrs * sizeof *na);
  na[m->nattrs].name = str(b, name);
  na[m->nattrs].value = str(b, value);
  m->attrs = na;
  m->nattrs++;
}

static hlo_computation *add_comp(builder *b, const char *name, bool entry) {
  hlo_module *m = b->m;
  hlo_computation *c = zalloc(b, sizeof *c);
  c->name = str(b, name);
  c->is_entry = entry;
  c->index = m->ncomps;
  hlo_computation **nc = zalloc(b, (size_t)(m->ncomps + 1) * sizeof *nc);
  if (m->ncomps)
    memcpy(nc, m->comps, (size_t)m->ncomps * sizeof *nc);
  nc[m->ncomps++] = c;
  m->comps = nc;
  if (entry)
    m->entry = c;
  b->c = c;
  return c;
}

static hlo_shape array_shape(builder *b, hlo_etype t, int rank, const int64_t *dims) {
  hlo_shape s = {0};
  s.type = t;
  s.rank = rank;
  if (rank) {
    s.dims = zalloc(b, (size_t)rank * sizeof *s.dims);
    memcpy(s.dims, dims, (size_t)rank * sizeof *s.dims);
  }
  return s;
}

/* Shapes by a terse spec: "f32", "f32:2,3" (static dims only). */
static hlo_shape shp(builder *b, const char *spec) {
  char type[16];
  size_t n = strcspn(spec, ":");
  assert_true(n < sizeof type);
  memcpy(type, spec, n);
  type[n] = '\0';
  hlo_etype t = hlo_etype_from_name(type, n);
  assert_int_not_equal(t, HLO_INVALID);
  int64_t dims[8];
  int rank = 0;
  if (spec[n] == ':') {
    const char *p = spec + n + 1;
    while (*p) {
      dims[rank++] = strtoll(p, (char **)&p, 10);
      if (*p == ',')
        p++;
    }
  }
  return array_shape(b, t, rank, dims);
}

static hlo_shape tuple_shape(builder *b, int n, const hlo_shape *elems) {
  hlo_shape s = {0};
  s.type = HLO_TUPLE;
  s.ntuple = n;
  if (n) {
    s.elems = zalloc(b, (size_t)n * sizeof *s.elems);
    memcpy(s.elems, elems, (size_t)n * sizeof *s.elems);
  }
  return s;
}

static hlo_instr *add_instr(builder *b, const char *name, hlo_opcode op, hlo_shape shape,
                            int noperands, ...) {
  hlo_computation *c = b->c;
  hlo_instr *in = zalloc(b, sizeof *in);
  in->name = str(b, name);
  in->op = op;
  in->shape = shape;
  in->parent = c;
  in->index = c->ninstrs;
  in->noperands = noperands;
  if (noperands) {
    in->operands = zalloc(b, (size_t)noperands * sizeof *in->operands);
    va_list ap;
    va_start(ap, noperands);
    for (int i = 0; i < noperands; i++)
      in->operands[i] = va_arg(ap, hlo_instr *);
    va_end(ap);
  }
  hlo_instr **ni = zalloc(b, (size_t)(c->ninstrs + 1) * sizeof *ni);
  if (c->ninstrs)
    memcpy(ni, c->instrs, (size_t)c->ninstrs * sizeof *ni);
  ni[c->ninstrs++] = in;
  c->instrs = ni;
  c->root = in; /* the last one, unless a test says otherwise */
  return in;
}

static hlo_instr *add_param(builder *b, const char *name, hlo_shape shape, int64_t n) {
  hlo_instr *p = add_instr(b, name, HLO_OP_PARAMETER, shape, 0);
  p->parameter_number = n;
  return p;
}

static void add_raw(builder *b, hlo_instr *in, const char *name, const char *value) {
  hlo_raw_attr *nr = zalloc(b, (size_t)(in->nraw + 1) * sizeof *nr);
  if (in->nraw)
    memcpy(nr, in->raw, (size_t)in->nraw * sizeof *nr);
  nr[in->nraw].name = str(b, name);
  nr[in->nraw].value = str(b, value);
  in->raw = nr;
  in->nraw++;
}

static hlo_literal *lit_f(builder *b, int64_t n, const double *v) {
  hlo_literal *l = zalloc(b, sizeof *l);
  l->count = n;
  l->f = zalloc(b, (size_t)(n ? n : 1) * sizeof *l->f);
  if (n)
    memcpy(l->f, v, (size_t)n * sizeof *v);
  return l;
}

static hlo_literal *lit_i(builder *b, int64_t n, const int64_t *v) {
  hlo_literal *l = zalloc(b, sizeof *l);
  l->count = n;
  l->i = zalloc(b, (size_t)(n ? n : 1) * sizeof *l->i);
  memcpy(l->i, v, (size_t)n * sizeof *v);
  return l;
}

static hlo_literal *lit_u(builder *b, int64_t n, const uint64_t *v) {
  hlo_literal *l = zalloc(b, sizeof *l);
  l->count = n;
  l->u = zalloc(b, (size_t)(n ? n : 1) * sizeof *l->u);
  memcpy(l->u, v, (size_t)n * sizeof *v);
  return l;
}

static hlo_instr *add_const(builder *b, const char *name, hlo_shape shape, hlo_literal *l) {
  hlo_instr *in = add_instr(b, name, HLO_OP_CONSTANT, shape, 0);
  in->literal = l;
  return in;
}

static double dbl_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Prints and compares with the expected text; frees the printed text. */
static void assert_prints(const hlo_module *m, const char *expected) {
  size_t len = 0;
  char *text = hlo_print_module(m, &len);
  assert_non_null(text);
  assert_string_equal(text, expected);
  assert_int_equal(len, strlen(expected));
  free(text);
}

static void assert_shape_prints(const hlo_shape *s, const char *expected) {
  char *text = hlo_print_shape(s);
  assert_non_null(text);
  assert_string_equal(text, expected);
  free(text);
}

/* The line printed for the root of the entry computation (without its
 * leading "  ROOT " and trailing newline). */
static char *instr_line(const hlo_module *m) {
  char *text = hlo_print_module(m, NULL);
  assert_non_null(text);
  char *entry = strstr(text, "ENTRY ");
  assert_non_null(entry);
  char *root = strstr(entry, "  ROOT ");
  assert_non_null(root);
  root += 7;
  char *nl = strchr(root, '\n');
  assert_non_null(nl);
  size_t n = (size_t)(nl - root);
  char *line = malloc(n + 1);
  assert_non_null(line);
  memcpy(line, root, n);
  line[n] = '\0';
  free(text);
  return line;
}

static void assert_line(const hlo_module *m, const char *expected) {
  char *line = instr_line(m);
  assert_string_equal(line, expected);
  free(line);
}


static hlo_module *parse_ok(const char *text);

/* The property the printer exists for, on a module built in memory:
 * parse(print(m)) equals m and prints the same text again. */
static void assert_roundtrip(const hlo_module *m) {
  size_t len = 0;
  char *text = hlo_print_module(m, &len);
  assert_non_null(text);
  hlo_module *back = parse_ok(text);
  char why[256];
  if (!hlo_module_equal(m, back, why, sizeof why))
    fail_msg("parse(print(m)) != m: %s\n%s", why, text);
  char *again = hlo_print_module(back, NULL);
  assert_non_null(again);
  assert_string_equal(again, text);
  free(again);
  free(text);
  hlo_module_free(back);
}

/* ---- shapes ------------------------------------------------------------- */

static void test_shape_arrays(void **state) {
  (void)state;
  builder b = new_module("m");
  hlo_shape s = shp(&b, "f32:2,3");
  assert_shape_prints(&s, "f32[2,3]");
  s = shp(&b, "f32");
  assert_shape_prints(&s, "f32[]");
  s = shp(&b, "bf16:0");
  assert_shape_prints(&s, "bf16[0]");
  s = shp(&b, "token");
  assert_shape_prints(&s, "token[]");
  s = shp(&b, "f8e4m3fn:4");
  assert_shape_prints(&s, "f8e4m3fn[4]");
  hlo_module_free(b.m);
}

static void test_shape_layouts(void **state) {
  (void)state;
  builder b = new_module("m");
  hlo_shape s = shp(&b, "f32:2,3");
  hlo_layout *l = zalloc(&b, sizeof *l);
  l->minor_to_major = ints(&b, 2, I(1), I(0));
  s.layout = l;
  assert_shape_prints(&s, "f32[2,3]{1,0}");

  l->ntiles = 2;
  l->tiles = zalloc(&b, 2 * sizeof *l->tiles);
  l->tiles[0].dims = ints(&b, 2, I(8), I(128));
  l->tiles[1].dims = ints(&b, 2, I(2), I(1));
  l->memory_space = 1;
  assert_shape_prints(&s, "f32[2,3]{1,0:T(8,128)(2,1)S(1)}");

  l->tiles[1].dims = ints(&b, 2, HLO_TILE_COMBINE, I(1));
  l->memory_space = 0;
  assert_shape_prints(&s, "f32[2,3]{1,0:T(8,128)(*,1)}");

  /* a scalar with only a tiling: `{:T(256)}` */
  hlo_shape sc = shp(&b, "s32");
  hlo_layout *l2 = zalloc(&b, sizeof *l2);
  l2->ntiles = 1;
  l2->tiles = zalloc(&b, sizeof *l2->tiles);
  l2->tiles[0].dims = ints(&b, 1, I(256));
  sc.layout = l2;
  assert_shape_prints(&sc, "s32[]{:T(256)}");

  /* an empty layout is written, a missing one is not */
  hlo_layout *l3 = zalloc(&b, sizeof *l3);
  sc.layout = l3;
  assert_shape_prints(&sc, "s32[]{}");
  hlo_module_free(b.m);
}

static void test_shape_dynamic(void **state) {
  (void)state;
  builder b = new_module("m");
  int64_t dims[] = {8, -1, 4};
  hlo_shape s = array_shape(&b, HLO_F32, 3, dims);
  s.dynamic = zalloc(&b, 3);
  s.dynamic[0] = HLO_DIM_BOUNDED;
  s.dynamic[1] = HLO_DIM_UNBOUNDED;
  assert_shape_prints(&s, "f32[<=8,?,4]");
  hlo_module_free(b.m);
}

static void test_shape_tuples(void **state) {
  (void)state;
  builder b = new_module("m");
  hlo_shape inner[] = {shp(&b, "s32:2"), shp(&b, "pred")};
  hlo_shape outer[] = {shp(&b, "f32"), tuple_shape(&b, 2, inner)};
  hlo_shape t = tuple_shape(&b, 2, outer);
  assert_shape_prints(&t, "(f32[], (s32[2], pred[]))");
  hlo_shape empty = tuple_shape(&b, 0, NULL);
  assert_shape_prints(&empty, "()");
  hlo_module_free(b.m);
}

/* ---- modules and computations ------------------------------------------- */

static builder small_module(void) {
  builder b = new_module("add_mod");
  add_header_attr(&b, "is_scheduled", "true");
  b.m->is_scheduled = true; /* the parser keeps a typed copy */
  add_header_attr(&b, "entry_computation_layout", "{(f32[2]{0}, f32[2]{0})->f32[2]{0}}");
  add_comp(&b, "add_f32", false);
  hlo_instr *x = add_param(&b, "x", shp(&b, "f32"), 0);
  hlo_instr *y = add_param(&b, "y", shp(&b, "f32"), 1);
  add_instr(&b, "sum", HLO_OP_ADD, shp(&b, "f32"), 2, x, y);
  add_comp(&b, "main", true);
  hlo_instr *p0 = add_param(&b, "p0", shp(&b, "f32:2"), 0);
  hlo_instr *p1 = add_param(&b, "p1", shp(&b, "f32:2"), 1);
  add_instr(&b, "add.1", HLO_OP_ADD, shp(&b, "f32:2"), 2, p0, p1);
  return b;
}

static void test_module_basic(void **state) {
  (void)state;
  builder b = small_module();
  assert_prints(b.m, "HloModule add_mod, is_scheduled=true, "
                     "entry_computation_layout={(f32[2]{0}, f32[2]{0})->f32[2]{0}}\n"
                     "\n"
                     "add_f32 {\n"
                     "  x = f32[] parameter(0)\n"
                     "  y = f32[] parameter(1)\n"
                     "  ROOT sum = f32[] add(x, y)\n"
                     "}\n"
                     "\n"
                     "ENTRY main {\n"
                     "  p0 = f32[2] parameter(0)\n"
                     "  p1 = f32[2] parameter(1)\n"
                     "  ROOT add.1 = f32[2] add(p0, p1)\n"
                     "}\n");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_module_headerless_signature_root(void **state) {
  (void)state;
  builder b = new_module(NULL);
  hlo_computation *c = add_comp(&b, "f", true);
  hlo_instr *p = add_param(&b, "a", shp(&b, "f32:4"), 0);
  hlo_instr *n = add_instr(&b, "neg", HLO_OP_NEGATE, shp(&b, "f32:4"), 1, p);
  add_instr(&b, "abs", HLO_OP_ABS, shp(&b, "f32:4"), 1, p);
  c->root = n; /* ROOT in the middle */
  c->root_marked = true;
  c->has_signature = true;
  c->nsig_params = 1;
  c->sig_param_names = zalloc(&b, sizeof(char *));
  c->sig_param_names[0] = str(&b, "a");
  c->sig_param_shapes = zalloc(&b, sizeof(hlo_shape));
  c->sig_param_shapes[0] = shp(&b, "f32:4");
  c->sig_result = shp(&b, "f32:4");
  c->execution_thread = str(&b, "\"main\"");
  assert_prints(b.m, "ENTRY f (a: f32[4]) -> f32[4] {\n"
                     "  a = f32[4] parameter(0)\n"
                     "  ROOT neg = f32[4] negate(a)\n"
                     "  abs = f32[4] abs(a)\n"
                     "}, execution_thread=\"main\"\n");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_module_entry_from_pointer(void **state) {
  (void)state;
  /* The entry is printed from m->entry even when no flag is set, and a
   * module with no computations prints only its header. */
  builder b = new_module("e");
  assert_prints(b.m, "HloModule e\n");
  add_comp(&b, "c1", false);
  add_param(&b, "p", shp(&b, "s32"), 0);
  b.m->entry = b.m->comps[0];
  assert_prints(b.m, "HloModule e\n\nENTRY c1 {\n  ROOT p = s32[] parameter(0)\n}\n");
  hlo_module_free(b.m);
}

static void test_instr_raw_attrs_and_async(void **state) {
  (void)state;
  builder b = new_module("m");
  add_comp(&b, "fused", false);
  add_param(&b, "p", shp(&b, "f32:8"), 0);
  add_comp(&b, "main", true);
  hlo_instr *p = add_param(&b, "p", shp(&b, "f32:8"), 0);
  hlo_shape st[] = {shp(&b, "f32:8"), shp(&b, "f32:8"), shp(&b, "s32")};
  hlo_instr *fs = add_instr(&b, "fs", HLO_OP_ASYNC_START, tuple_shape(&b, 3, st), 1, p);
  fs->async_wrapped = HLO_OP_FUSION;
  fs->attrs.has = HLO_A_KIND;
  fs->attrs.kind = str(&b, "kLoop");
  fs->attrs.calls.calls = b.m->comps[0];
  add_raw(&b, fs, "metadata", "{op_name=\"a, b\" source_line=3}");
  add_raw(&b, fs, "backend_config", "\"{}\"");
  hlo_instr *fd = add_instr(&b, "fd", HLO_OP_ASYNC_DONE, shp(&b, "f32:8"), 1, fs);
  fd->async_wrapped = HLO_OP_FUSION;
  char *text = hlo_print_module(b.m, NULL);
  assert_non_null(text);
  assert_non_null(strstr(text, "  fs = (f32[8], f32[8], s32[]) fusion-start(p), kind=kLoop, "
                               "calls=fused, metadata={op_name=\"a, b\" source_line=3}, "
                               "backend_config=\"{}\"\n"));
  assert_non_null(strstr(text, "  ROOT fd = f32[8] fusion-done(fs)\n"));
  free(text);
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

/* ---- typed attributes --------------------------------------------------- */

/* A module "m" with a computation "main" holding two f32[4,4] parameters,
 * ready for one more instruction whose line the test checks. */
static builder attr_module(hlo_instr **p0, hlo_instr **p1) {
  builder b = new_module("m");
  add_comp(&b, "main", true);
  *p0 = add_param(&b, "p0", shp(&b, "f32:4,4"), 0);
  *p1 = add_param(&b, "p1", shp(&b, "f32:4,4"), 1);
  return b;
}

static void test_attr_simple_lists(void **state) {
  (void)state;
  hlo_instr *p0, *p1;
  builder b = attr_module(&p0, &p1);
  hlo_instr *t = add_instr(&b, "t", HLO_OP_TRANSPOSE, shp(&b, "f32:4,4"), 1, p0);
  t->attrs.has = HLO_A_DIMENSIONS;
  t->attrs.dimensions = ints(&b, 2, I(1), I(0));
  assert_line(b.m, "t = f32[4,4] transpose(p0), dimensions={1,0}");

  hlo_instr *s = add_instr(&b, "s", HLO_OP_SLICE, shp(&b, "f32:4,1"), 1, p0);
  s->attrs.has = HLO_A_SLICE;
  s->attrs.nslice = 2;
  s->attrs.slice = zalloc(&b, 2 * sizeof *s->attrs.slice);
  s->attrs.slice[0] = (hlo_slice_dim){0, 4, 1};
  s->attrs.slice[1] = (hlo_slice_dim){1, 3, 2};
  assert_line(b.m, "s = f32[4,1] slice(p0), slice={[0:4], [1:3:2]}");

  hlo_instr *pad = add_instr(&b, "pad", HLO_OP_PAD, shp(&b, "f32:5,9"), 2, p0, p1);
  pad->attrs.has = HLO_A_PADDING;
  pad->attrs.npad = 2;
  pad->attrs.pad = zalloc(&b, 2 * sizeof *pad->attrs.pad);
  pad->attrs.pad[0] = (hlo_pad_dim){0, 1, 0};
  pad->attrs.pad[1] = (hlo_pad_dim){-1, 2, 0};
  assert_line(b.m, "pad = f32[5,9] pad(p0, p1), padding=0_1x-1_2");
  pad->attrs.pad[1].interior = 1;
  assert_line(b.m, "pad = f32[5,9] pad(p0, p1), padding=0_1_0x-1_2_1");

  hlo_instr *io = add_instr(&b, "io", HLO_OP_IOTA, shp(&b, "s32:4"), 0);
  io->attrs.has = HLO_A_IOTA_DIMENSION;
  assert_line(b.m, "io = s32[4] iota(), iota_dimension=0");

  hlo_instr *ds = add_instr(&b, "ds", HLO_OP_DYNAMIC_SLICE, shp(&b, "f32:2,2"), 3, p0, io, io);
  ds->attrs.has = HLO_A_DYNAMIC_SLICE_SIZES;
  ds->attrs.dynamic_slice_sizes = ints(&b, 2, I(2), I(2));
  assert_line(b.m, "ds = f32[2,2] dynamic-slice(p0, io, io), dynamic_slice_sizes={2,2}");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_attr_window_conv(void **state) {
  (void)state;
  hlo_instr *p0, *p1;
  builder b = attr_module(&p0, &p1);
  hlo_instr *c = add_instr(&b, "conv", HLO_OP_CONVOLUTION, shp(&b, "f32:1,2,2,8"), 2, p0, p1);
  hlo_attrs *a = &c->attrs;
  a->has = HLO_A_WINDOW | HLO_A_DIM_LABELS | HLO_A_FEATURE_GROUP_COUNT |
           HLO_A_OPERAND_PRECISION;
  a->window.rank = 2;
  a->window.dims = zalloc(&b, 2 * sizeof *a->window.dims);
  for (int i = 0; i < 2; i++)
    a->window.dims[i] = (hlo_window_dim){3, 1, 0, 0, 1, 1, false};
  /* b01f_01io->b01f */
  a->conv.input_batch = 0;
  a->conv.input_feature = 3;
  a->conv.input_spatial = ints(&b, 2, I(1), I(2));
  a->conv.kernel_input_feature = 2;
  a->conv.kernel_output_feature = 3;
  a->conv.kernel_spatial = ints(&b, 2, I(0), I(1));
  a->conv.output_batch = 0;
  a->conv.output_feature = 3;
  a->conv.output_spatial = ints(&b, 2, I(1), I(2));
  a->feature_group_count = 2;
  a->nprecision = 2;
  a->precision = zalloc(&b, 2 * sizeof *a->precision);
  a->precision[0] = HLO_PREC_DEFAULT;
  a->precision[1] = HLO_PREC_HIGHEST;
  assert_line(b.m, "conv = f32[1,2,2,8] convolution(p0, p1), window={size=3x3}, "
                   "dim_labels=b01f_01io->b01f, feature_group_count=2, "
                   "operand_precision={default,highest}");

  a->window.dims[0] = (hlo_window_dim){3, 2, 1, 1, 2, 1, false};
  a->window.dims[1] = (hlo_window_dim){3, 2, 0, 1, 1, 3, true};
  /* 0fb1_io01->0b1f: spatial dims out of order */
  a->conv.input_batch = 2;
  a->conv.input_feature = 1;
  a->conv.input_spatial = ints(&b, 2, I(0), I(3));
  a->conv.kernel_input_feature = 0;
  a->conv.kernel_output_feature = 1;
  a->conv.kernel_spatial = ints(&b, 2, I(2), I(3));
  a->conv.output_batch = 1;
  a->conv.output_feature = 3;
  a->conv.output_spatial = ints(&b, 2, I(0), I(2));
  a->has &= ~(uint32_t)(HLO_A_FEATURE_GROUP_COUNT | HLO_A_OPERAND_PRECISION);
  assert_line(b.m, "conv = f32[1,2,2,8] convolution(p0, p1), window={size=3x3 stride=2x2 "
                   "pad=1_1x0_1 lhs_dilate=2x1 rhs_dilate=1x3 rhs_reversal=0x1}, "
                   "dim_labels=0fb1_io01->0b1f");

  hlo_instr *rw = add_instr(&b, "rw", HLO_OP_REDUCE_WINDOW, shp(&b, "f32"), 2, p0, p1);
  rw->attrs.has = HLO_A_WINDOW;
  assert_line(b.m, "rw = f32[] reduce-window(p0, p1), window={}");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_attr_dot_gather_scatter(void **state) {
  (void)state;
  hlo_instr *p0, *p1;
  builder b = attr_module(&p0, &p1);
  hlo_instr *d = add_instr(&b, "dot", HLO_OP_DOT, shp(&b, "f32:4,4"), 2, p0, p1);
  d->attrs.has = HLO_A_DOT_DNUMS;
  d->attrs.dot.lhs_contracting = ints(&b, 1, I(1));
  d->attrs.dot.rhs_contracting = ints(&b, 1, I(0));
  assert_line(b.m, "dot = f32[4,4] dot(p0, p1), lhs_contracting_dims={1}, "
                   "rhs_contracting_dims={0}");
  d->attrs.dot.lhs_batch = ints(&b, 1, I(0));
  d->attrs.dot.rhs_batch = ints(&b, 1, I(0));
  d->attrs.dot.lhs_contracting = ints(&b, 0);
  assert_line(b.m, "dot = f32[4,4] dot(p0, p1), lhs_batch_dims={0}, lhs_contracting_dims={}, "
                   "rhs_batch_dims={0}, rhs_contracting_dims={0}");

  hlo_instr *g = add_instr(&b, "g", HLO_OP_GATHER, shp(&b, "f32:2,4"), 2, p0, p1);
  g->attrs.has = HLO_A_GATHER_DNUMS | HLO_A_SLICE_SIZES | HLO_A_INDICES_ARE_SORTED;
  g->attrs.gather.offset_dims = ints(&b, 1, I(1));
  g->attrs.gather.collapsed_slice_dims = ints(&b, 1, I(0));
  g->attrs.gather.start_index_map = ints(&b, 1, I(0));
  g->attrs.gather.index_vector_dim = 1;
  g->attrs.slice_sizes = ints(&b, 2, I(1), I(4));
  g->attrs.indices_are_sorted = true;
  assert_line(b.m, "g = f32[2,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
                   "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, "
                   "indices_are_sorted=true");
  g->attrs.gather.operand_batching_dims = ints(&b, 1, I(2));
  g->attrs.gather.start_indices_batching_dims = ints(&b, 1, I(0));
  g->attrs.indices_are_sorted = false;
  assert_line(b.m, "g = f32[2,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
                   "start_index_map={0}, operand_batching_dims={2}, "
                   "start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,4}, "
                   "indices_are_sorted=false");

  add_comp(&b, "add", false);
  hlo_instr *x = add_param(&b, "x", shp(&b, "f32"), 0);
  hlo_instr *y = add_param(&b, "y", shp(&b, "f32"), 1);
  add_instr(&b, "s", HLO_OP_ADD, shp(&b, "f32"), 2, x, y);
  hlo_computation *addc = b.c;
  b.c = b.m->comps[0];
  hlo_instr *s = add_instr(&b, "sc", HLO_OP_SCATTER, shp(&b, "f32:4,4"), 3, p0, p1, p1);
  s->attrs.has = HLO_A_SCATTER_DNUMS | HLO_A_UNIQUE_INDICES;
  s->attrs.scatter.update_window_dims = ints(&b, 1, I(1));
  s->attrs.scatter.inserted_window_dims = ints(&b, 1, I(0));
  s->attrs.scatter.scatter_dims_to_operand_dims = ints(&b, 1, I(0));
  s->attrs.scatter.input_batching_dims = ints(&b, 1, I(1));
  s->attrs.scatter.scatter_indices_batching_dims = ints(&b, 1, I(0));
  s->attrs.scatter.index_vector_dim = 1;
  s->attrs.unique_indices = true;
  s->attrs.calls.to_apply = addc;
  assert_line(b.m, "sc = f32[4,4] scatter(p0, p1, p1), update_window_dims={1}, "
                   "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                   "input_batching_dims={1}, scatter_indices_batching_dims={0}, "
                   "index_vector_dim=1, unique_indices=true, to_apply=add");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_attr_misc(void **state) {
  (void)state;
  hlo_instr *p0, *p1;
  builder b = attr_module(&p0, &p1);
  hlo_instr *c = add_instr(&b, "cmp", HLO_OP_COMPARE, shp(&b, "pred:4,4"), 2, p0, p1);
  c->attrs.has = HLO_A_DIRECTION;
  c->attrs.direction = HLO_CMP_LT;
  assert_line(b.m, "cmp = pred[4,4] compare(p0, p1), direction=LT");
  c->attrs.has |= HLO_A_CMP_TYPE;
  c->attrs.cmp_type = HLO_CMPT_TOTALORDER;
  assert_line(b.m, "cmp = pred[4,4] compare(p0, p1), direction=LT, type=TOTALORDER");

  hlo_shape st[] = {shp(&b, "f32:4,4"), shp(&b, "f32:4,4")};
  hlo_instr *t = add_instr(&b, "t", HLO_OP_TUPLE, tuple_shape(&b, 2, st), 2, p0, p1);
  hlo_instr *gte = add_instr(&b, "gte", HLO_OP_GET_TUPLE_ELEMENT, shp(&b, "f32:4,4"), 1, t);
  gte->attrs.has = HLO_A_INDEX;
  gte->attrs.index = 1;
  assert_line(b.m, "gte = f32[4,4] get-tuple-element(t), index=1");

  hlo_instr *ar = add_instr(&b, "ar", HLO_OP_ALL_REDUCE, shp(&b, "f32:4,4"), 1, p0);
  ar->attrs.has = HLO_A_CHANNEL_ID | HLO_A_REPLICA_GROUPS | HLO_A_USE_GLOBAL_DEVICE_IDS;
  ar->attrs.channel_id = 7;
  ar->attrs.replica_groups.ngroups = 2;
  ar->attrs.replica_groups.groups = zalloc(&b, 2 * sizeof(hlo_ints));
  ar->attrs.replica_groups.groups[0] = ints(&b, 2, I(0), I(1));
  ar->attrs.replica_groups.groups[1] = ints(&b, 2, I(2), I(3));
  ar->attrs.use_global_device_ids = true;
  assert_line(b.m, "ar = f32[4,4] all-reduce(p0), channel_id=7, replica_groups={{0,1},{2,3}}, "
                   "use_global_device_ids=true");
  ar->attrs.replica_groups.ngroups = 0;
  ar->attrs.has &= ~(uint32_t)(HLO_A_CHANNEL_ID | HLO_A_USE_GLOBAL_DEVICE_IDS);
  assert_line(b.m, "ar = f32[4,4] all-reduce(p0), replica_groups={}");

  hlo_instr *cp = add_instr(&b, "cp", HLO_OP_COLLECTIVE_PERMUTE, shp(&b, "f32:4,4"), 1, p0);
  cp->attrs.has = HLO_A_SOURCE_TARGET_PAIRS;
  cp->attrs.npairs = 2;
  cp->attrs.pairs = zalloc(&b, 2 * sizeof(hlo_pair));
  cp->attrs.pairs[0] = (hlo_pair){0, 1};
  cp->attrs.pairs[1] = (hlo_pair){1, 2};
  assert_line(b.m, "cp = f32[4,4] collective-permute(p0), source_target_pairs={{0,1},{1,2}}");

  hlo_instr *rp = add_instr(&b, "rp", HLO_OP_REDUCE_PRECISION, shp(&b, "f32:4,4"), 1, p0);
  rp->attrs.has = HLO_A_EXPONENT_BITS | HLO_A_MANTISSA_BITS;
  rp->attrs.exponent_bits = 5;
  rp->attrs.mantissa_bits = 10;
  assert_line(b.m, "rp = f32[4,4] reduce-precision(p0), exponent_bits=5, mantissa_bits=10");

  hlo_instr *rng = add_instr(&b, "rng", HLO_OP_RNG, shp(&b, "f32:4,4"), 2, p0, p1);
  rng->attrs.has = HLO_A_DISTRIBUTION;
  rng->attrs.distribution = HLO_RNG_NORMAL;
  assert_line(b.m, "rng = f32[4,4] rng(p0, p1), distribution=rng_normal");

  hlo_instr *cc = add_instr(&b, "cc", HLO_OP_CUSTOM_CALL, shp(&b, "f32:4,4"), 1, p0);
  cc->attrs.has = HLO_A_CUSTOM_CALL_TARGET;
  cc->attrs.custom_call_target = str(&b, "__cublas$gemm\"x\\");
  add_raw(&b, cc, "api_version", "API_VERSION_STATUS_RETURNING");
  assert_line(b.m, "cc = f32[4,4] custom-call(p0), custom_call_target=\"__cublas$gemm\\\"x\\\\\", "
                   "api_version=API_VERSION_STATUS_RETURNING");

  hlo_instr *so = add_instr(&b, "so", HLO_OP_SORT, shp(&b, "f32:4,4"), 1, p0);
  so->attrs.has = HLO_A_DIMENSIONS | HLO_A_IS_STABLE;
  so->attrs.dimensions = ints(&b, 1, I(1));
  so->attrs.is_stable = true;
  so->attrs.calls.to_apply = b.m->comps[0];
  assert_line(b.m, "so = f32[4,4] sort(p0), dimensions={1}, is_stable=true, to_apply=main");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

static void test_attr_control_flow(void **state) {
  (void)state;
  builder b = new_module("cf");
  hlo_computation *cond = add_comp(&b, "cond", false);
  add_param(&b, "c", shp(&b, "s32"), 0);
  hlo_computation *body = add_comp(&b, "body", false);
  add_param(&b, "c", shp(&b, "s32"), 0);
  add_comp(&b, "main", true);
  hlo_instr *p = add_param(&b, "p", shp(&b, "s32"), 0);
  hlo_instr *pr = add_param(&b, "pr", shp(&b, "pred"), 1);
  hlo_instr *w = add_instr(&b, "w", HLO_OP_WHILE, shp(&b, "s32"), 1, p);
  w->attrs.calls.condition = cond;
  w->attrs.calls.body = body;
  assert_line(b.m, "w = s32[] while(p), condition=cond, body=body");

  hlo_instr *k = add_instr(&b, "k", HLO_OP_CONDITIONAL, shp(&b, "s32"), 3, pr, p, p);
  k->attrs.calls.nbranches = 2;
  k->attrs.calls.branches = zalloc(&b, 2 * sizeof(hlo_computation *));
  k->attrs.calls.branches[0] = cond;
  k->attrs.calls.branches[1] = body;
  k->attrs.calls.true_false_form = true;
  assert_line(b.m, "k = s32[] conditional(pr, p, p), true_computation=cond, "
                   "false_computation=body");
  k->attrs.calls.true_false_form = false;
  assert_line(b.m, "k = s32[] conditional(pr, p, p), branch_computations={cond, body}");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

/* ---- constants ---------------------------------------------------------- */

static void test_const_floats(void **state) {
  (void)state;
  struct {
    double v;
    const char *text;
  } cases[] = {
      {0.0, "0"},
      {1.0, "1"},
      {-448.0, "-448"},
      {0.5, "0.5"},
      {0.1, "0.1"},
      {1e-7, "1e-07"},
      {1.0 / 3.0, "0.3333333333333333"},
      {0.1 + 0.2, "0.30000000000000004"},
      {3.4028234663852886e+38, "3.4028234663852886e+38"},
      {1e300, "1e+300"},
      {5e-324, "4.94065645841247e-324"}, /* 15 digits already read back */
      {0x1p60, "1.152921504606847e+18"}, /* integral but past 2^53 */
      {INFINITY, "inf"},
      {-INFINITY, "-inf"},
      {dbl_from_bits(UINT64_C(0x8000000000000000)), "-0.0"},
      {dbl_from_bits(UINT64_C(0x7ff8000000000000)), "nan"},
      {dbl_from_bits(UINT64_C(0xfff8000000000000)), "-nan"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    builder b = new_module("c");
    add_comp(&b, "main", true);
    add_const(&b, "k", shp(&b, "f64"), lit_f(&b, 1, &cases[i].v));
    char want[128];
    snprintf(want, sizeof want, "k = f64[] constant(%s)", cases[i].text);
    assert_line(b.m, want);
    hlo_module_free(b.m);
  }
  /* the printed text reads back to the same double */
  double back = strtod("0.3333333333333333", NULL);
  assert_memory_equal(&back, &(double){1.0 / 3.0}, sizeof back);
  back = strtod("0.30000000000000004", NULL);
  assert_memory_equal(&back, &(double){0.1 + 0.2}, sizeof back);
}

static void test_const_arrays(void **state) {
  (void)state;
  builder b = new_module("c");
  add_comp(&b, "main", true);
  int64_t iv[] = {1, -2, 3, 4, 5, 6};
  add_const(&b, "k", shp(&b, "s32:2,3"), lit_i(&b, 6, iv));
  assert_line(b.m, "k = s32[2,3] constant({{1, -2, 3}, {4, 5, 6}})");

  int64_t pv[] = {1, 0};
  add_const(&b, "pr", shp(&b, "pred:2"), lit_i(&b, 2, pv));
  assert_line(b.m, "pr = pred[2] constant({true, false})");

  uint64_t uv[] = {0, UINT64_MAX};
  add_const(&b, "u", shp(&b, "u64:2"), lit_u(&b, 2, uv));
  assert_line(b.m, "u = u64[2] constant({0, 18446744073709551615})");

  int64_t sv[] = {INT64_MIN};
  add_const(&b, "s", shp(&b, "s64"), lit_i(&b, 1, sv));
  assert_line(b.m, "s = s64[] constant(-9223372036854775808)");

  double cv[] = {1.5, -2, INFINITY, 0};
  hlo_literal *cl = lit_f(&b, 4, cv); /* two complex numbers, four doubles */
  cl->count = 2;
  add_const(&b, "cx", shp(&b, "c64:2"), cl);
  assert_line(b.m, "cx = c64[2] constant({(1.5, -2), (inf, 0)})");

  add_const(&b, "e", shp(&b, "f32:0"), lit_f(&b, 0, NULL));
  assert_line(b.m, "e = f32[0] constant({})");
  add_const(&b, "e2", shp(&b, "f32:2,0"), lit_f(&b, 0, NULL));
  assert_line(b.m, "e2 = f32[2,0] constant({{}, {}})");

  double one = 1;
  add_const(&b, "one", shp(&b, "f32:1,1,1"), lit_f(&b, 1, &one));
  assert_line(b.m, "one = f32[1,1,1] constant({{{1}}})");

  hlo_literal *el = zalloc(&b, sizeof *el);
  el->elided = true;
  el->count = 1024;
  add_const(&b, "big", shp(&b, "f32:1024"), el);
  assert_line(b.m, "big = f32[1024] constant({...})");

  /* tuple literal: one literal per element, printed by the tuple shape */
  hlo_shape st[] = {shp(&b, "f32"), shp(&b, "s32:2")};
  hlo_literal *tl = zalloc(&b, sizeof *tl);
  tl->ntuple = 2;
  tl->elems = zalloc(&b, 2 * sizeof *tl->elems);
  double half = 0.5;
  int64_t two[] = {7, 8};
  tl->elems[0] = *lit_f(&b, 1, &half);
  tl->elems[1] = *lit_i(&b, 2, two);
  add_const(&b, "tup", tuple_shape(&b, 2, st), tl);
  assert_line(b.m, "tup = (f32[], s32[2]) constant((0.5, {7, 8}))");
  assert_roundtrip(b.m);
  hlo_module_free(b.m);
}

/* ---- print_module_to and a large module ---------------------------------- */

static void test_print_to_file_matches(void **state) {
  (void)state;
  builder b = small_module();
  /* make it large enough that the FILE path flushes several times */
  add_comp(&b, "big", false);
  hlo_instr *prev = add_param(&b, "p", shp(&b, "f32:128,128"), 0);
  for (int i = 0; i < 5000; i++) {
    char name[32];
    snprintf(name, sizeof name, "n.%d", i);
    prev = add_instr(&b, name, HLO_OP_NEGATE, shp(&b, "f32:128,128"), 1, prev);
  }
  size_t len = 0;
  char *text = hlo_print_module(b.m, &len);
  assert_non_null(text);
  assert_true(len > 150000);
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(hlo_print_module_to(b.m, f), 0);
  assert_int_equal(ftell(f), (long)len);
  rewind(f);
  char *back = malloc(len + 1);
  assert_non_null(back);
  assert_int_equal(fread(back, 1, len, f), len);
  assert_memory_equal(back, text, len);
  free(back);
  fclose(f);
  free(text);
  /* a write error is reported, not ignored */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    assert_int_equal(hlo_print_module_to(b.m, full), -1);
    fclose(full);
  }
  hlo_module_free(b.m);
}

/* ---- equality ----------------------------------------------------------- */

static void assert_differs(const hlo_module *a, const hlo_module *b, const char *why_part) {
  char why[256];
  assert_false(hlo_module_equal(a, b, why, sizeof why));
  if (!strstr(why, why_part))
    fail_msg("why = \"%s\", expected it to contain \"%s\"", why, why_part);
}

static void test_equal_identical(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  char why[128] = "unchanged";
  assert_true(hlo_module_equal(a.m, b.m, why, sizeof why));
  assert_true(hlo_module_equal(a.m, a.m, NULL, 0));
  /* ROOT/ENTRY spelling is presentation, not structure */
  b.m->comps[0]->root_marked = true;
  b.m->comps[1]->is_entry = false;
  assert_true(hlo_module_equal(a.m, b.m, why, sizeof why));
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_operand(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  hlo_instr *add = b.m->comps[1]->instrs[2];
  add->operands[1] = b.m->comps[1]->instrs[0];
  assert_differs(a.m, b.m, "computation 'main' instruction 'add.1': operand 1 differs ('p1' vs 'p0')");
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_shape_and_layout(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  hlo_instr *in = b.m->comps[0]->instrs[2];
  in->shape = shp(&b, "f64");
  assert_differs(a.m, b.m, "computation 'add_f32' instruction 'sum': shape differs (f32[] vs f64[])");
  in->shape = shp(&b, "f32");
  assert_true(hlo_module_equal(a.m, b.m, NULL, 0));
  in->shape.layout = zalloc(&b, sizeof(hlo_layout));
  assert_differs(a.m, b.m, "shape differs (f32[] vs f32[]{})");
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_attribute(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  hlo_instr *ia = a.m->comps[1]->instrs[2], *ib = b.m->comps[1]->instrs[2];
  ia->attrs.has = ib->attrs.has = HLO_A_DIMENSIONS;
  ia->attrs.dimensions = ints(&a, 2, I(0), I(1));
  ib->attrs.dimensions = ints(&b, 2, I(0), I(1));
  assert_true(hlo_module_equal(a.m, b.m, NULL, 0));
  ib->attrs.dimensions.v[1] = 2;
  assert_differs(a.m, b.m, "instruction 'add.1': attribute dimensions differs");
  ib->attrs.has = 0;
  assert_differs(a.m, b.m, "set of typed attributes differs");
  /* fields whose has bit is clear are not compared */
  ia->attrs.has = 0;
  assert_true(hlo_module_equal(a.m, b.m, NULL, 0));
  ib->attrs.calls.to_apply = b.m->comps[0];
  assert_differs(a.m, b.m, "attribute to_apply differs ((none) vs add_f32)");
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_raw_attribute(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  hlo_instr *ia = a.m->comps[1]->instrs[2], *ib = b.m->comps[1]->instrs[2];
  add_raw(&a, ia, "metadata", "{op_name=\"x\"}");
  add_raw(&b, ib, "metadata", "{op_name=\"y\"}");
  assert_differs(a.m, b.m, "instruction 'add.1': raw attribute 'metadata' value differs");
  add_raw(&b, ib, "sharding", "{replicated}");
  assert_differs(a.m, b.m, "raw attribute count differs (1 vs 2)");
  hlo_module_free(a.m);
  hlo_module_free(b.m);

  a = small_module();
  b = small_module();
  b.m->attrs[0].value = str(&b, "false");
  assert_differs(a.m, b.m, "module attribute 'is_scheduled' value differs");
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_literal_bits(void **state) {
  (void)state;
  builder a = new_module("c"), b = new_module("c");
  add_comp(&a, "main", true);
  add_comp(&b, "main", true);
  double za = 0.0, zb = -0.0;
  add_const(&a, "z", shp(&a, "f32"), lit_f(&a, 1, &za));
  add_const(&b, "z", shp(&b, "f32"), lit_f(&b, 1, &zb));
  assert_differs(a.m, b.m, "instruction 'z': literal element 0 differs (0 vs -0, bits "
                           "0x0000000000000000 vs 0x8000000000000000)");
  hlo_module_free(a.m);
  hlo_module_free(b.m);

  /* two NaNs with different payloads differ; the same NaN is equal */
  a = new_module("c");
  b = new_module("c");
  add_comp(&a, "main", true);
  add_comp(&b, "main", true);
  double na[] = {1, dbl_from_bits(UINT64_C(0x7ff8000000000000))};
  double nb[] = {1, dbl_from_bits(UINT64_C(0x7ff8000000000001))};
  hlo_instr *ka = add_const(&a, "k", shp(&a, "f32:2"), lit_f(&a, 2, na));
  hlo_instr *kb = add_const(&b, "k", shp(&b, "f32:2"), lit_f(&b, 2, nb));
  assert_differs(a.m, b.m, "literal element 1 differs");
  kb->literal->f[1] = na[1];
  assert_true(hlo_module_equal(a.m, b.m, NULL, 0));
  ka->literal->elided = true;
  assert_differs(a.m, b.m, "literal elided in one module only");
  hlo_module_free(a.m);
  hlo_module_free(b.m);
}

static void test_equal_structure(void **state) {
  (void)state;
  builder a = small_module(), b = small_module();
  b.m->comps[1]->root = b.m->comps[1]->instrs[0];
  assert_differs(a.m, b.m, "computation 'main': root differs ('add.1' vs 'p0')");
  hlo_module_free(b.m);

  b = small_module();
  b.m->entry = b.m->comps[0];
  assert_differs(a.m, b.m, "entry computation differs (main vs add_f32)");
  hlo_module_free(b.m);

  b = small_module();
  b.m->comps[0]->instrs[0]->parameter_number = 3;
  assert_differs(a.m, b.m, "instruction 'x': parameter number differs (0 vs 3)");
  hlo_module_free(b.m);

  b = small_module();
  b.m->comps[0]->instrs[2]->op = HLO_OP_MULTIPLY;
  assert_differs(a.m, b.m, "instruction 'sum': opcode differs (add vs multiply)");
  hlo_module_free(b.m);

  b = small_module();
  b.m->name = NULL;
  assert_differs(a.m, b.m, "module name differs (add_mod vs (none))");
  hlo_module_free(b.m);

  /* a tiny buffer is truncated, never overrun */
  b = small_module();
  b.m->comps[0]->instrs[2]->op = HLO_OP_MULTIPLY;
  char why[8];
  assert_false(hlo_module_equal(a.m, b.m, why, sizeof why));
  assert_int_equal(strlen(why), 7);
  hlo_module_free(b.m);
  hlo_module_free(a.m);
}

/* ---- through the parser -------------------------------------------------- */

static hlo_module *parse_ok(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse failed at %d:%d: %s", err.line, err.col, err.msg);
  return m;
}

/* Parses src, checks the canonical text, and that it is a fixed point and
 * parses back to an equal module. */
static void assert_canonical(const char *src, const char *expected) {
  hlo_module *m = parse_ok(src);
  char *text = hlo_print_module(m, NULL);
  assert_non_null(text);
  assert_string_equal(text, expected);
  hlo_module *m2 = parse_ok(text);
  char why[256];
  if (!hlo_module_equal(m, m2, why, sizeof why))
    fail_msg("parse(print(m)) != m: %s", why);
  char *text2 = hlo_print_module(m2, NULL);
  assert_non_null(text2);
  assert_string_equal(text2, text);
  free(text2);
  free(text);
  hlo_module_free(m2);
  hlo_module_free(m);
}

static void test_parse_print_basic(void **state) {
  (void)state;
  assert_canonical("HloModule m, is_scheduled=true\n"
                   "%add (a: f32[], b: f32[]) -> f32[] {\n"
                   "  %a = f32[] parameter(0)\n"
                   "  %b = f32[] parameter(1)\n"
                   "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n"
                   "}\n"
                   "ENTRY %main {\n"
                   "  %p = f32[8,128]{1,0:T(8,128)S(1)} parameter(0) /* comment */\n"
                   "  %z = f32[] constant(0)\n"
                   "  // a line comment\n"
                   "  ROOT %r = f32[8]{0} reduce(%p, %z), dimensions={1}, to_apply=%add, "
                   "metadata={op_name=\"r\"}\n"
                   "}\n",
                   "HloModule m, is_scheduled=true\n"
                   "\n"
                   "add (a: f32[], b: f32[]) -> f32[] {\n"
                   "  a = f32[] parameter(0)\n"
                   "  b = f32[] parameter(1)\n"
                   "  ROOT s = f32[] add(a, b)\n"
                   "}\n"
                   "\n"
                   "ENTRY main {\n"
                   "  p = f32[8,128]{1,0:T(8,128)S(1)} parameter(0)\n"
                   "  z = f32[] constant(0)\n"
                   "  ROOT r = f32[8]{0} reduce(p, z), dimensions={1}, to_apply=add, "
                   "metadata={op_name=\"r\"}\n"
                   "}\n");
}

static void test_parse_print_headerless_attrs(void **state) {
  (void)state;
  assert_canonical("f {\n"
                   "  p0 = f32[4,4] parameter(0)\n"
                   "  p1 = f32[4,4] parameter(1)\n"
                   "  c = pred[4,4] compare(p0, p1), direction=GE, type=TOTALORDER\n"
                   "  s = f32[2,2] slice(p0), slice={[0:4:2], [1:3:1]}\n"
                   "  d = f32[4,4] dot(p0, p1), lhs_contracting_dims={1}, "
                   "rhs_contracting_dims={0}\n"
                   "  zero = f32[] constant(0)\n"
                   "  pd = f32[5,5] pad(p0, zero), padding=0_1x1_0\n"
                   "  k = f32[2,2] constant({ { 1.5, -0 }, { nan, -inf } })\n"
                   "  t = (f32[4,4], (pred[4,4])) tuple(d, c)\n"
                   "}\n",
                   "ENTRY f {\n"
                   "  p0 = f32[4,4] parameter(0)\n"
                   "  p1 = f32[4,4] parameter(1)\n"
                   "  c = pred[4,4] compare(p0, p1), direction=GE, type=TOTALORDER\n"
                   "  s = f32[2,2] slice(p0), slice={[0:4:2], [1:3]}\n"
                   "  d = f32[4,4] dot(p0, p1), lhs_contracting_dims={1}, "
                   "rhs_contracting_dims={0}\n"
                   "  zero = f32[] constant(0)\n"
                   "  pd = f32[5,5] pad(p0, zero), padding=0_1x1_0\n"
                   "  k = f32[2,2] constant({{1.5, -0.0}, {nan, -inf}})\n"
                   "  ROOT t = (f32[4,4], (pred[4,4])) tuple(d, c)\n"
                   "}\n");
}

/* Every typed attribute family the parser reads, async sugar, an execution
 * thread, escapes in a string, complex/tuple constants, the iota form of
 * replica groups (expanded) and raw attributes with blanks inside braces. */
static void test_parse_print_rich(void **state) {
  (void)state;
  assert_canonical(
      "HloModule rich, entry_computation_layout={(f32[1,4,4,2]{3,2,1,0})->f32[1,4,4,2]{3,2,1,0}}, replica_count=2\n"
      "\n"
      "%max (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)\n"
      "}, execution_thread=\"main\"\n"
      "\n"
      "%fused (p: f32[8]) -> f32[8] {\n"
      "  %p = f32[8]{0:T(256)S(1)} parameter(0)\n"
      "  ROOT %n = f32[8]{0} negate(%p)\n"
      "}\n"
      "\n"
      "ENTRY %main (x: f32[1,4,4,2], k: f32[3,3,2,2]) -> f32[1,4,4,2] {\n"
      "  %x = f32[1,4,4,2]{3,2,1,0} parameter(0)\n"
      "  %k = f32[3,3,2,2] parameter(1)\n"
      "  %conv = f32[1,4,4,2] convolution(%x, %k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, feature_group_count=1, operand_precision={highest,default}\n"
      "  %init = f32[] constant(-inf)\n"
      "  %rw = f32[1,2,2,2] reduce-window(%conv, %init), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max\n"
      "  %idx = s32[2,1] constant({{0},{1}})\n"
      "  %g = f32[2,4,2] gather(%rw, %idx), offset_dims={1,2}, collapsed_slice_dims={0,1}, start_index_map={1}, index_vector_dim=1, slice_sizes={1,1,4,2}\n"
      "  %ar = f32[2,4,2] all-reduce(%g), channel_id=3, replica_groups=[1,2]<=[2], use_global_device_ids=true, to_apply=%max\n"
      "  %cp = f32[2,4,2] collective-permute(%ar), channel_id=4, source_target_pairs={{0,1},{1,0}}\n"
      "  %v = f32[8] parameter(2)\n"
      "  %fs = ((f32[8]), f32[8], s32[]) fusion-start(%v), kind=kLoop, calls=%fused\n"
      "  %fd = f32[8] fusion-done(%fs)\n"
      "  %cc = f32[8] custom-call(%fd), custom_call_target=\"my\\\"target\\\\x\", api_version=API_VERSION_TYPED_FFI, backend_config={\"a\": 1}\n"
      "  %dyn = f32[<=8] parameter(3)\n"
      "  %c2 = c64[2] constant({(1, -0), (nan, 2.5)})\n"
      "  %tc = (f32[], pred[2]) constant((0.1, {true, false}))\n"
      "  %rp = f32[8] reduce-precision(%cc), exponent_bits=5, mantissa_bits=10\n"
      "  %rng = f32[8] rng(%init, %init), distribution=rng_uniform\n"
      "  %srt = f32[8] sort(%rp), dimensions={0}, is_stable=true, to_apply=%max\n"
      "  ROOT %out = f32[1,4,4,2] copy(%conv), sharding={replicated}\n"
      "}\n",
      "HloModule rich, entry_computation_layout={(f32[1,4,4,2]{3,2,1,0})->f32[1,4,4,2]{3,2,1,0}}, replica_count=2\n"
      "\n"
      "max (a: f32[], b: f32[]) -> f32[] {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT m = f32[] maximum(a, b)\n"
      "}, execution_thread=\"main\"\n"
      "\n"
      "fused (p: f32[8]) -> f32[8] {\n"
      "  p = f32[8]{0:T(256)S(1)} parameter(0)\n"
      "  ROOT n = f32[8]{0} negate(p)\n"
      "}\n"
      "\n"
      "ENTRY main (x: f32[1,4,4,2], k: f32[3,3,2,2]) -> f32[1,4,4,2] {\n"
      "  x = f32[1,4,4,2]{3,2,1,0} parameter(0)\n"
      "  k = f32[3,3,2,2] parameter(1)\n"
      "  conv = f32[1,4,4,2] convolution(x, k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, feature_group_count=1, operand_precision={highest,default}\n"
      "  init = f32[] constant(-inf)\n"
      "  rw = f32[1,2,2,2] reduce-window(conv, init), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max\n"
      "  idx = s32[2,1] constant({{0}, {1}})\n"
      "  g = f32[2,4,2] gather(rw, idx), offset_dims={1,2}, collapsed_slice_dims={0,1}, start_index_map={1}, index_vector_dim=1, slice_sizes={1,1,4,2}\n"
      "  ar = f32[2,4,2] all-reduce(g), channel_id=3, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=max\n"
      "  cp = f32[2,4,2] collective-permute(ar), channel_id=4, source_target_pairs={{0,1},{1,0}}\n"
      "  v = f32[8] parameter(2)\n"
      "  fs = ((f32[8]), f32[8], s32[]) fusion-start(v), kind=kLoop, calls=fused\n"
      "  fd = f32[8] fusion-done(fs)\n"
      "  cc = f32[8] custom-call(fd), custom_call_target=\"my\\\"target\\\\x\", api_version=API_VERSION_TYPED_FFI, backend_config={\"a\": 1}\n"
      "  dyn = f32[<=8] parameter(3)\n"
      "  c2 = c64[2] constant({(1, -0.0), (nan, 2.5)})\n"
      "  tc = (f32[], pred[2]) constant((0.1, {true, false}))\n"
      "  rp = f32[8] reduce-precision(cc), exponent_bits=5, mantissa_bits=10\n"
      "  rng = f32[8] rng(init, init), distribution=rng_uniform\n"
      "  srt = f32[8] sort(rp), dimensions={0}, is_stable=true, to_apply=max\n"
      "  ROOT out = f32[1,4,4,2] copy(conv), sharding={replicated}\n"
      "}\n");
}

/* NaN payloads survive the round trip: nan(0xP) is the mantissa with the
 * quiet bit flipped, so a signalling NaN shows bit 51. */
static void test_nan_payloads(void **state) {
  (void)state;
  assert_canonical("ENTRY e {\n  ROOT k = f32[3] constant({nan(0x1), -nan, nan})\n}\n",
                   "ENTRY e {\n  ROOT k = f32[3] constant({nan(0x1), -nan, nan})\n}\n");
  builder b = new_module(NULL);
  add_comp(&b, "e", true);
  double v[] = {dbl_from_bits(UINT64_C(0x7ff8000000000001)),
                dbl_from_bits(UINT64_C(0xfff0000000000abc))};
  add_const(&b, "k", shp(&b, "f64:2"), lit_f(&b, 2, v));
  assert_line(b.m, "k = f64[2] constant({nan(0x1), -nan(0x8000000000abc)})");
  char *text = hlo_print_module(b.m, NULL);
  assert_non_null(text);
  hlo_module *back = parse_ok(text);
  char why[256];
  if (!hlo_module_equal(b.m, back, why, sizeof why))
    fail_msg("%s", why);
  hlo_module_free(back);
  free(text);
  hlo_module_free(b.m);
}

/* Layout items other than T and S are kept as text and written after the
 * tiles; empty arrays nest; a splat constant stays a bare value. */
static void test_parse_print_layout_extras(void **state) {
  (void)state;
  assert_canonical("ENTRY e {\n"
                   "  a = s4[8,128]{1,0:E(4)T(8,128)(2,1)S(1)} parameter(0)\n"
                   "  b = f32[<=4,?]{1,0:D(D,C)L(2)#(s32)*(u32)M(8)} parameter(1)\n"
                   "  c = f32[2,0] constant({ {}, {} })\n"
                   "  d = f32[4,4] constant(0)\n"
                   "  ROOT t = () tuple()\n"
                   "}\n",
                   "ENTRY e {\n"
                   "  a = s4[8,128]{1,0:T(8,128)(2,1)E(4)S(1)} parameter(0)\n"
                   "  b = f32[<=4,?]{1,0:D(D,C)L(2)#(s32)*(u32)M(8)} parameter(1)\n"
                   "  c = f32[2,0] constant({{}, {}})\n"
                   "  d = f32[4,4] constant(0)\n"
                   "  ROOT t = () tuple()\n"
                   "}\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape_arrays),
      cmocka_unit_test(test_shape_layouts),
      cmocka_unit_test(test_shape_dynamic),
      cmocka_unit_test(test_shape_tuples),
      cmocka_unit_test(test_module_basic),
      cmocka_unit_test(test_module_headerless_signature_root),
      cmocka_unit_test(test_module_entry_from_pointer),
      cmocka_unit_test(test_instr_raw_attrs_and_async),
      cmocka_unit_test(test_attr_simple_lists),
      cmocka_unit_test(test_attr_window_conv),
      cmocka_unit_test(test_attr_dot_gather_scatter),
      cmocka_unit_test(test_attr_misc),
      cmocka_unit_test(test_attr_control_flow),
      cmocka_unit_test(test_const_floats),
      cmocka_unit_test(test_const_arrays),
      cmocka_unit_test(test_print_to_file_matches),
      cmocka_unit_test(test_equal_identical),
      cmocka_unit_test(test_equal_operand),
      cmocka_unit_test(test_equal_shape_and_layout),
      cmocka_unit_test(test_equal_attribute),
      cmocka_unit_test(test_equal_raw_attribute),
      cmocka_unit_test(test_equal_literal_bits),
      cmocka_unit_test(test_equal_structure),
      cmocka_unit_test(test_parse_print_basic),
      cmocka_unit_test(test_parse_print_headerless_attrs),
      cmocka_unit_test(test_parse_print_rich),
      cmocka_unit_test(test_nan_payloads),
      cmocka_unit_test(test_parse_print_layout_extras),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
