/* test_parse.c — unit tests of the HLO text parser.
 *
 * Every expected value below was worked out by reading the input text by
 * hand (positions are 1-based line:col of the offending token), never by
 * running the parser.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/hlo_parse.h"

/* ---- helpers ------------------------------------------------------------ */

static hlo_module *parse_ok(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse failed at %d:%d: %s", err.line, err.col, err.msg);
  return m;
}

static void expect_error_n(const char *text, size_t len, int line, int col, const char *msg) {
  hlo_error err;
  /* an exact-size heap copy, so ASan sees any read past len */
  char *buf = malloc(len ? len : 1);
  assert_non_null(buf);
  memcpy(buf, text, len);
  hlo_module *m = hlo_parse(buf, len, &err);
  free(buf);
  if (m) {
    hlo_module_free(m);
    fail_msg("expected an error '%s' at %d:%d, but it parsed", msg, line, col);
  }
  if (err.line != line || err.col != col || !strstr(err.msg, msg))
    fail_msg("expected %d:%d '%s', got %d:%d '%s'", line, col, msg, err.line, err.col, err.msg);
}

static void expect_error(const char *text, int line, int col, const char *msg) {
  expect_error_n(text, strlen(text), line, col, msg);
}

static hlo_instr *find(const hlo_module *m, const char *comp, const char *name) {
  hlo_computation *c = hlo_module_find(m, comp);
  assert_non_null(c);
  hlo_instr *in = hlo_computation_find(c, name);
  if (!in)
    fail_msg("no instruction %s in %s", name, comp);
  return in;
}

static void assert_ints(const hlo_ints *x, int n, ...) {
  va_list ap;
  assert_int_equal(x->n, n);
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    assert_int_equal(x->v[i], va_arg(ap, int));
  va_end(ap);
}

static void assert_dims(const hlo_shape *s, hlo_etype t, int rank, ...) {
  va_list ap;
  assert_int_equal(s->type, t);
  assert_int_equal(s->rank, rank);
  va_start(ap, rank);
  for (int i = 0; i < rank; i++)
    assert_int_equal(s->dims[i], va_arg(ap, int));
  va_end(ap);
}

static const char *raw(const hlo_instr *in, const char *name) {
  for (int i = 0; i < in->nraw; i++)
    if (strcmp(in->raw[i].name, name) == 0)
      return in->raw[i].value;
  return NULL;
}

static uint64_t bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

/* ---- modules, computations, roots ------------------------------------------ */

static void test_minimal_module(void **state) {
  (void)state;
  hlo_module *m = parse_ok("HloModule m\n"
                           "\n"
                           "ENTRY main {\n"
                           "  p = f32[2,3] parameter(0)\n"
                           "  ROOT n = f32[2,3] negate(p)\n"
                           "}\n");
  assert_string_equal(m->name, "m");
  assert_int_equal(m->ncomps, 1);
  hlo_computation *c = m->entry;
  assert_string_equal(c->name, "main");
  assert_true(c->is_entry);
  assert_false(c->has_signature);
  assert_int_equal(c->line, 3);
  assert_int_equal(c->col, 7);
  assert_int_equal(c->ninstrs, 2);
  hlo_instr *p = c->instrs[0], *n = c->instrs[1];
  assert_string_equal(p->name, "p");
  assert_int_equal(p->op, HLO_OP_PARAMETER);
  assert_int_equal(p->parameter_number, 0);
  assert_dims(&p->shape, HLO_F32, 2, 2, 3);
  assert_null(p->shape.layout);
  assert_null(p->shape.dynamic);
  assert_int_equal(p->line, 4);
  assert_int_equal(p->col, 3);
  assert_int_equal(n->line, 5);
  assert_int_equal(n->col, 8);
  assert_int_equal(n->op, HLO_OP_NEGATE);
  assert_int_equal(n->noperands, 1);
  assert_ptr_equal(n->operands[0], p);
  assert_ptr_equal(n->parent, c);
  assert_int_equal(n->index, 1);
  assert_ptr_equal(c->root, n);
  assert_true(c->root_marked);
  assert_int_equal(c->nparams, 1);
  assert_ptr_equal(c->params[0], p);
  assert_int_equal(m->replica_count, 1);
  assert_int_equal(m->num_partitions, 1);
  assert_false(m->is_scheduled);
  hlo_module_free(m);
}

static void test_header_attributes(void **state) {
  (void)state;
  hlo_module *m = parse_ok("HloModule m, is_scheduled=true, "
                           "entry_computation_layout={(f32[2]{0})->f32[2]{0}}, replica_count=4, "
                           "num_partitions=2, frontend_attributes={a=\"b, c\"}\n"
                           "ENTRY e { ROOT p = f32[2] parameter(0) }\n");
  assert_int_equal(m->nattrs, 5);
  assert_string_equal(m->attrs[0].name, "is_scheduled");
  assert_string_equal(m->attrs[0].value, "true");
  assert_string_equal(m->attrs[1].name, "entry_computation_layout");
  assert_string_equal(m->attrs[1].value, "{(f32[2]{0})->f32[2]{0}}");
  assert_string_equal(m->attrs[2].value, "4");
  assert_string_equal(m->attrs[3].name, "num_partitions");
  assert_string_equal(m->attrs[4].value, "{a=\"b, c\"}");
  assert_true(m->is_scheduled);
  assert_int_equal(m->replica_count, 4);
  assert_int_equal(m->num_partitions, 2);
  hlo_module_free(m);
}

static void test_root_absent_is_last(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n");
  assert_null(m->name);
  assert_string_equal(m->entry->root->name, "b");
  assert_false(m->entry->root_marked);
  hlo_module_free(m);
  /* ROOT may be any instruction, not only the last */
  m = parse_ok("ENTRY e {\n  ROOT a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n");
  assert_string_equal(m->entry->root->name, "a");
  hlo_module_free(m);
}

static void test_headerless_entry_choice(void **state) {
  (void)state;
  /* no ENTRY: the last computation */
  hlo_module *m = parse_ok("f { ROOT x = f32[] parameter(0) }\n"
                           "g { ROOT y = f32[] parameter(0) }\n");
  assert_int_equal(m->ncomps, 2);
  assert_string_equal(m->entry->name, "g");
  assert_false(m->entry->is_entry);
  assert_int_equal(m->comps[0]->index, 0);
  assert_int_equal(m->comps[1]->index, 1);
  hlo_module_free(m);
  /* ENTRY wins wherever it is */
  m = parse_ok("ENTRY f { ROOT x = f32[] parameter(0) }\n"
               "g { ROOT y = f32[] parameter(0) }\n");
  assert_string_equal(m->entry->name, "f");
  assert_true(m->entry->is_entry);
  hlo_module_free(m);
}

/* Computations named by text: select-and-scatter's select=/scatter= and
 * a custom-call's called_computations list, which the parser does not
 * resolve.  The list's names, count and misses are read off the text. */
static void test_text_named_computations(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                           "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
                           "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                           "  ROOT s = f32[] add(a, b)\n}\n"
                           "ENTRY main {\n  x = f32[4] parameter(0)\n"
                           "  one = f32[4] custom-call(x), custom_call_target=\"f\", called_computations={%add}\n"
                           "  two = f32[4] custom-call(x), custom_call_target=\"g\", called_computations={ge, %add}\n"
                           "  miss = f32[4] custom-call(x), custom_call_target=\"h\", called_computations={add, nope}\n"
                           "  none = f32[4] custom-call(x), custom_call_target=\"i\", called_computations={}\n"
                           "  ROOT t = (f32[4], f32[4], f32[4], f32[4]) tuple(one, two, miss, none)\n}\n");
  hlo_computation *ge = hlo_module_find(m, "ge"), *add = hlo_module_find(m, "add");
  assert_non_null(ge);
  assert_non_null(add);
  int n = -1;
  assert_ptr_equal(hlo_instr_listed_computation(m, find(m, "main", "one"), "called_computations", 0, &n), add);
  assert_int_equal(n, 1);
  assert_null(hlo_instr_listed_computation(m, find(m, "main", "one"), "called_computations", 1, &n));
  assert_ptr_equal(hlo_instr_listed_computation(m, find(m, "main", "two"), "called_computations", 0, &n), ge);
  assert_int_equal(n, 2);
  assert_ptr_equal(hlo_instr_listed_computation(m, find(m, "main", "two"), "called_computations", 1, NULL), add);
  assert_ptr_equal(hlo_instr_listed_computation(m, find(m, "main", "miss"), "called_computations", 0, &n), add);
  assert_null(hlo_instr_listed_computation(m, find(m, "main", "miss"), "called_computations", 1, &n));
  assert_int_equal(n, 2);
  assert_null(hlo_instr_listed_computation(m, find(m, "main", "none"), "called_computations", 0, &n));
  assert_int_equal(n, 0);
  n = -1;
  assert_null(hlo_instr_listed_computation(m, find(m, "main", "x"), "called_computations", 0, &n));
  assert_int_equal(n, 0);
  hlo_module_free(m);
}

static void test_signature_and_thread(void **state) {
  (void)state;
  hlo_module *m = parse_ok("%add.1 (x: f32[], y: (s32[2], pred[])) -> f32[] {\n"
                           "  %x = f32[] parameter(0)\n"
                           "  %y = (s32[2], pred[]) parameter(1)\n"
                           "  ROOT %r = f32[] add(%x, %x)\n"
                           "}, execution_thread=\"host\"\n"
                           "ENTRY %main.2 () -> f32[2]{0} {\n"
                           "  ROOT c = f32[2]{0} constant({1, 2})\n"
                           "}\n");
  hlo_computation *a = hlo_module_find(m, "add.1");
  assert_non_null(a);
  assert_true(a->has_signature);
  assert_int_equal(a->nsig_params, 2);
  assert_string_equal(a->sig_param_names[0], "x");
  assert_string_equal(a->sig_param_names[1], "y");
  assert_int_equal(a->sig_param_shapes[0].type, HLO_F32);
  assert_int_equal(a->sig_param_shapes[1].type, HLO_TUPLE);
  assert_int_equal(a->sig_param_shapes[1].ntuple, 2);
  assert_int_equal(a->sig_result.type, HLO_F32);
  assert_string_equal(a->execution_thread, "\"host\"");
  assert_int_equal(a->nparams, 2);
  assert_string_equal(a->params[1]->name, "y");
  hlo_computation *e = m->entry;
  assert_string_equal(e->name, "main.2");
  assert_true(e->has_signature);
  assert_int_equal(e->nsig_params, 0);
  assert_dims(&e->sig_result, HLO_F32, 1, 2);
  assert_non_null(e->sig_result.layout);
  assert_ints(&e->sig_result.layout->minor_to_major, 1, 0);
  assert_null(e->execution_thread);
  hlo_module_free(m);
}

static void test_thread_in_header(void **state) {
  (void)state;
  hlo_module *m = parse_ok("f (x: f32[]) -> f32[], execution_thread=\"t\" { ROOT x = f32[] parameter(0) }\n"
                           "g, execution_thread=\"u\" {\n  ROOT y = f32[] parameter(0)\n}\n");
  assert_string_equal(m->comps[0]->execution_thread, "\"t\"");
  assert_true(m->comps[0]->has_signature);
  assert_string_equal(m->comps[1]->execution_thread, "\"u\"");
  assert_int_equal(m->comps[1]->root->line, 3);
  assert_int_equal(m->comps[1]->root->col, 8);
  hlo_module_free(m);
}

/* ---- shapes ------------------------------------------------------------------ */

static void test_layouts(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n"
                           "  a = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(0)\n"
                           "  b = s32[]{:T(256)} parameter(1)\n"
                           "  c = bf16[4,256]{0,1} parameter(2)\n"
                           "  d = f32[16]{0:T(2,*)E(4)L(8)S(3)} parameter(3)\n"
                           "  ROOT t = () tuple()\n"
                           "}\n");
  const hlo_layout *l = find(m, "e", "a")->shape.layout;
  assert_non_null(l);
  assert_ints(&l->minor_to_major, 2, 1, 0);
  assert_int_equal(l->ntiles, 2);
  assert_ints(&l->tiles[0].dims, 2, 8, 128);
  assert_ints(&l->tiles[1].dims, 2, 2, 1);
  assert_int_equal(l->memory_space, 1);
  assert_null(l->extra);

  l = find(m, "e", "b")->shape.layout;
  assert_non_null(l);
  assert_int_equal(l->minor_to_major.n, 0);
  assert_int_equal(l->ntiles, 1);
  assert_ints(&l->tiles[0].dims, 1, 256);
  assert_int_equal(l->memory_space, 0);

  l = find(m, "e", "c")->shape.layout;
  assert_ints(&l->minor_to_major, 2, 0, 1);
  assert_int_equal(l->ntiles, 0);

  l = find(m, "e", "d")->shape.layout;
  assert_int_equal(l->ntiles, 1);
  assert_int_equal(l->tiles[0].dims.n, 2);
  assert_int_equal(l->tiles[0].dims.v[0], 2);
  assert_true(l->tiles[0].dims.v[1] == HLO_TILE_COMBINE);
  assert_string_equal(l->extra, "E(4)L(8)");
  assert_int_equal(l->memory_space, 3);

  const hlo_shape *t = &find(m, "e", "t")->shape;
  assert_int_equal(t->type, HLO_TUPLE);
  assert_int_equal(t->ntuple, 0);
  hlo_module_free(m);
}

static void test_dynamic_dims(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e { ROOT p = f32[<=8, ?, 3] parameter(0) }");
  const hlo_shape *s = &m->entry->root->shape;
  assert_int_equal(s->rank, 3);
  assert_non_null(s->dynamic);
  assert_int_equal(s->dims[0], 8);
  assert_int_equal(s->dynamic[0], HLO_DIM_BOUNDED);
  assert_int_equal(s->dims[1], -1);
  assert_int_equal(s->dynamic[1], HLO_DIM_UNBOUNDED);
  assert_int_equal(s->dims[2], 3);
  assert_int_equal(s->dynamic[2], HLO_DIM_STATIC);
  hlo_module_free(m);
}

static void test_tuple_shapes_and_operand_shapes(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n"
                           "  p = (f32[2]{0}, (s32[], /*index=1*/pred[3]), u8[]) parameter(0)\n"
                           "  g = f32[2] get-tuple-element((f32[2]{0}, (s32[], pred[3]), u8[]) %p), index=0\n"
                           "  ROOT a = f32[2]{0} add(f32[2]{0} %g, g)\n"
                           "}\n");
  const hlo_shape *s = &find(m, "e", "p")->shape;
  assert_int_equal(s->type, HLO_TUPLE);
  assert_int_equal(s->ntuple, 3);
  assert_dims(&s->elems[0], HLO_F32, 1, 2);
  assert_int_equal(s->elems[1].type, HLO_TUPLE);
  assert_int_equal(s->elems[1].ntuple, 2);
  assert_dims(&s->elems[1].elems[0], HLO_S32, 0);
  assert_dims(&s->elems[1].elems[1], HLO_PRED, 1, 3);
  assert_dims(&s->elems[2], HLO_U8, 0);
  hlo_instr *a = find(m, "e", "a");
  assert_int_equal(a->noperands, 2);
  assert_ptr_equal(a->operands[0], find(m, "e", "g"));
  assert_ptr_equal(a->operands[1], find(m, "e", "g"));
  assert_int_equal(find(m, "e", "g")->attrs.index, 0);
  assert_true(find(m, "e", "g")->attrs.has & HLO_A_INDEX);
  hlo_module_free(m);
}

static void test_all_element_types(void **state) {
  (void)state;
  static const struct {
    const char *name;
    hlo_etype t;
  } types[] = {
      {"pred", HLO_PRED}, {"s1", HLO_S1}, {"s2", HLO_S2}, {"s4", HLO_S4}, {"s8", HLO_S8},
      {"s16", HLO_S16}, {"s32", HLO_S32}, {"s64", HLO_S64}, {"u1", HLO_U1}, {"u2", HLO_U2},
      {"u4", HLO_U4}, {"u8", HLO_U8}, {"u16", HLO_U16}, {"u32", HLO_U32}, {"u64", HLO_U64},
      {"f16", HLO_F16}, {"bf16", HLO_BF16}, {"f32", HLO_F32}, {"f64", HLO_F64},
      {"f8e5m2", HLO_F8E5M2}, {"f8e4m3", HLO_F8E4M3}, {"f8e4m3fn", HLO_F8E4M3FN},
      {"f8e4m3b11fnuz", HLO_F8E4M3B11FNUZ}, {"f8e5m2fnuz", HLO_F8E5M2FNUZ},
      {"f8e4m3fnuz", HLO_F8E4M3FNUZ}, {"f8e3m4", HLO_F8E3M4}, {"f8e8m0fnu", HLO_F8E8M0FNU},
      {"f4e2m1fn", HLO_F4E2M1FN}, {"c64", HLO_C64}, {"c128", HLO_C128}, {"token", HLO_TOKEN},
      {"opaque", HLO_OPAQUE},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "ENTRY e { ROOT p = %s[%s] parameter(0) }", types[i].name,
             types[i].t == HLO_TOKEN || types[i].t == HLO_OPAQUE ? "" : "4");
    hlo_module *m = parse_ok(text);
    assert_int_equal(m->entry->root->shape.type, types[i].t);
    hlo_module_free(m);
  }
}

/* ---- constants ----------------------------------------------------------------- */

static void test_constants_scalars(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n"
                           "  a = f32[] constant(1.5)\n"
                           "  b = f32[] constant(nan)\n"
                           "  c = f32[] constant(-nan)\n"
                           "  d = f32[] constant(inf)\n"
                           "  f = f32[] constant(-inf)\n"
                           "  g = f32[] constant(-0)\n"
                           "  h = pred[] constant(true)\n"
                           "  i = pred[] constant(false)\n"
                           "  j = s32[] constant(-7)\n"
                           "  k = u64[] constant(18446744073709551615)\n"
                           "  l = s32[] constant(0x7fc00000)\n"
                           "  n = c64[] constant((1, 2))\n"
                           "  o = bf16[] constant(1e-3)\n"
                           "  ROOT t = s64[] constant(-9223372036854775808)\n"
                           "}\n");
  hlo_literal *l = find(m, "e", "a")->literal;
  assert_int_equal(l->count, 1);
  assert_non_null(l->f);
  assert_null(l->i);
  assert_true(l->f[0] == 1.5);
  l = find(m, "e", "b")->literal;
  assert_true(isnan(l->f[0]) && !signbit(l->f[0]));
  l = find(m, "e", "c")->literal;
  assert_true(isnan(l->f[0]) && signbit(l->f[0]));
  assert_true(isinf(find(m, "e", "d")->literal->f[0]) && find(m, "e", "d")->literal->f[0] > 0);
  assert_true(isinf(find(m, "e", "f")->literal->f[0]) && find(m, "e", "f")->literal->f[0] < 0);
  l = find(m, "e", "g")->literal;
  assert_true(l->f[0] == 0 && signbit(l->f[0]));
  assert_int_equal(bits(l->f[0]), 0x8000000000000000ull);
  assert_non_null(find(m, "e", "h")->literal->i);
  assert_int_equal(find(m, "e", "h")->literal->i[0], 1);
  assert_int_equal(find(m, "e", "i")->literal->i[0], 0);
  assert_int_equal(find(m, "e", "j")->literal->i[0], -7);
  l = find(m, "e", "k")->literal;
  assert_non_null(l->u);
  assert_true(l->u[0] == UINT64_MAX);
  assert_int_equal(find(m, "e", "l")->literal->i[0], 0x7fc00000);
  l = find(m, "e", "n")->literal;
  assert_int_equal(l->count, 1);
  assert_true(l->f[0] == 1.0 && l->f[1] == 2.0);
  assert_true(find(m, "e", "o")->literal->f[0] == 1e-3);
  assert_true(find(m, "e", "t")->literal->i[0] == INT64_MIN);
  hlo_module_free(m);
}

/* The ends of each integer type's range parse (one past them is an error,
 * test_error_messages); pred takes 0 and 1 as false and true. */
static void test_constants_at_type_limits(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n"
                           "  a = s8[2] constant({-128, 127})\n"
                           "  b = u4[] constant(15)\n"
                           "  c = s4[2] constant({-8, 7})\n"
                           "  d = pred[2] constant({0, 1})\n"
                           "  ROOT e = u8[] constant(255)\n"
                           "}\n");
  hlo_literal *l = find(m, "e", "a")->literal;
  assert_int_equal(l->i[0], -128);
  assert_int_equal(l->i[1], 127);
  assert_true(find(m, "e", "b")->literal->u[0] == 15);
  l = find(m, "e", "c")->literal;
  assert_int_equal(l->i[0], -8);
  assert_int_equal(l->i[1], 7);
  l = find(m, "e", "d")->literal;
  assert_int_equal(l->i[0], 0);
  assert_int_equal(l->i[1], 1);
  assert_true(find(m, "e", "e")->literal->u[0] == 255);
  hlo_module_free(m);
}

static void test_constants_arrays(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY e {\n"
                           "  a = s32[2,2] constant({ {1,2},{3,4} })\n"
                           "  b = f32[2,3]{1,0} constant({...})\n"
                           "  c = f32[0] constant({})\n"
                           "  d = (f32[], (s32[2], pred[])) constant((0.5, ({7, 8}, true)))\n"
                           "  f = c128[2] constant({(1, -1), (inf, nan)})\n"
                           "  g = f32[3,3] constant(0)\n"
                           "  ROOT h = f32[3] constant({1, -inf, /*index=2*/2.5})\n"
                           "}\n");
  hlo_literal *l = find(m, "e", "a")->literal;
  assert_int_equal(l->count, 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(l->i[i], i + 1);
  l = find(m, "e", "b")->literal;
  assert_true(l->elided);
  assert_null(l->f);
  l = find(m, "e", "c")->literal;
  assert_int_equal(l->count, 0);
  assert_false(l->elided);
  l = find(m, "e", "d")->literal;
  assert_int_equal(l->ntuple, 2);
  assert_true(l->elems[0].f[0] == 0.5);
  assert_int_equal(l->elems[1].ntuple, 2);
  assert_int_equal(l->elems[1].elems[0].count, 2);
  assert_int_equal(l->elems[1].elems[0].i[1], 8);
  assert_int_equal(l->elems[1].elems[1].i[0], 1);
  l = find(m, "e", "f")->literal;
  assert_int_equal(l->count, 2);
  assert_true(l->f[0] == 1 && l->f[1] == -1 && isinf(l->f[2]) && isnan(l->f[3]));
  l = find(m, "e", "g")->literal; /* XLA's splat spelling */
  assert_int_equal(l->count, 1);
  assert_true(l->f[0] == 0);
  l = find(m, "e", "h")->literal;
  assert_int_equal(l->count, 3);
  assert_true(l->f[0] == 1 && isinf(l->f[1]) && l->f[1] < 0 && l->f[2] == 2.5);
  hlo_module_free(m);
}

/* ---- typed attributes ------------------------------------------------------------ */

static void test_attrs_shape_ops(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "ENTRY e {\n"
      "  p = f32[4,8] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  t = f32[8,4] transpose(p), dimensions={1,0}\n"
      "  s = f32[4,1] slice(p), slice={[0:4], [1:3:2]}\n"
      "  d = f32[5,13] pad(p, z), padding=0_1x-1_2_1\n"
      "  i = s32[4,8] iota(), iota_dimension=1\n"
      "  ds = f32[2,2] dynamic-slice(p, i, i), dynamic_slice_sizes={2,2}\n"
      "  so = f32[4,8] sort(p), dimensions={1}, is_stable=true, to_apply=cmp\n"
      "  ROOT rp = f32[4,8] reduce-precision(p), exponent_bits=5, mantissa_bits=10\n"
      "}\n"
      "cmp { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER }\n");
  hlo_instr *t = find(m, "e", "t");
  assert_true(t->attrs.has & HLO_A_DIMENSIONS);
  assert_ints(&t->attrs.dimensions, 2, 1, 0);
  assert_int_equal(t->nraw, 0);

  hlo_instr *s = find(m, "e", "s");
  assert_true(s->attrs.has & HLO_A_SLICE);
  assert_int_equal(s->attrs.nslice, 2);
  assert_int_equal(s->attrs.slice[0].start, 0);
  assert_int_equal(s->attrs.slice[0].limit, 4);
  assert_int_equal(s->attrs.slice[0].stride, 1);
  assert_int_equal(s->attrs.slice[1].start, 1);
  assert_int_equal(s->attrs.slice[1].limit, 3);
  assert_int_equal(s->attrs.slice[1].stride, 2);

  hlo_instr *d = find(m, "e", "d");
  assert_true(d->attrs.has & HLO_A_PADDING);
  assert_int_equal(d->attrs.npad, 2);
  assert_int_equal(d->attrs.pad[0].lo, 0);
  assert_int_equal(d->attrs.pad[0].hi, 1);
  assert_int_equal(d->attrs.pad[0].interior, 0);
  assert_int_equal(d->attrs.pad[1].lo, -1);
  assert_int_equal(d->attrs.pad[1].hi, 2);
  assert_int_equal(d->attrs.pad[1].interior, 1);

  hlo_instr *i = find(m, "e", "i");
  assert_true(i->attrs.has & HLO_A_IOTA_DIMENSION);
  assert_int_equal(i->attrs.iota_dimension, 1);
  assert_int_equal(i->noperands, 0);

  hlo_instr *ds = find(m, "e", "ds");
  assert_true(ds->attrs.has & HLO_A_DYNAMIC_SLICE_SIZES);
  assert_ints(&ds->attrs.dynamic_slice_sizes, 2, 2, 2);

  hlo_instr *so = find(m, "e", "so");
  assert_true(so->attrs.has & HLO_A_IS_STABLE);
  assert_true(so->attrs.is_stable);
  assert_ptr_equal(so->attrs.calls.to_apply, hlo_module_find(m, "cmp")); /* forward reference */

  hlo_instr *rp = find(m, "e", "rp");
  assert_true(rp->attrs.has & HLO_A_EXPONENT_BITS);
  assert_true(rp->attrs.has & HLO_A_MANTISSA_BITS);
  assert_int_equal(rp->attrs.exponent_bits, 5);
  assert_int_equal(rp->attrs.mantissa_bits, 10);

  hlo_instr *lt = find(m, "cmp", "lt");
  assert_true(lt->attrs.has & HLO_A_DIRECTION);
  assert_true(lt->attrs.has & HLO_A_CMP_TYPE);
  assert_int_equal(lt->attrs.direction, HLO_CMP_LT);
  assert_int_equal(lt->attrs.cmp_type, HLO_CMPT_TOTALORDER);
  assert_string_equal(m->entry->name, "e");
  hlo_module_free(m);
}

static void test_attrs_window_conv_dot(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "ENTRY e {\n"
      "  x = f32[1,8,8,3] parameter(0)\n"
      "  k = f32[3,3,3,16] parameter(1)\n"
      "  c = f32[1,4,4,16] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x0_-1 lhs_dilate=1x2 "
      "rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, "
      "batch_group_count=1, operand_precision={default,HIGHEST}\n"
      "  c2 = f32[1,4,4,16] convolution(x, k), window={size=3 stride=2}, dim_labels=0fb1_io01->0b1f\n"
      "  z = f32[] constant(0)\n"
      "  rw = f32[1,4,4,3] reduce-window(x, z), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add\n"
      "  a = f32[2,3,4] parameter(2)\n"
      "  b = f32[2,4,5] parameter(3)\n"
      "  ROOT dt = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
      "rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
      "}\n"
      "add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT r = f32[] add(p, q) }\n");
  hlo_instr *c = find(m, "e", "c");
  const hlo_window *w = &c->attrs.window;
  assert_true(c->attrs.has & HLO_A_WINDOW);
  assert_int_equal(w->rank, 2);
  assert_int_equal(w->dims[0].size, 3);
  assert_int_equal(w->dims[0].stride, 2);
  assert_int_equal(w->dims[0].pad_lo, 1);
  assert_int_equal(w->dims[0].pad_hi, 1);
  assert_int_equal(w->dims[1].pad_lo, 0);
  assert_int_equal(w->dims[1].pad_hi, -1);
  assert_int_equal(w->dims[0].lhs_dilate, 1);
  assert_int_equal(w->dims[1].lhs_dilate, 2);
  assert_int_equal(w->dims[0].rhs_dilate, 2);
  assert_int_equal(w->dims[1].rhs_dilate, 1);
  assert_false(w->dims[0].reversal);
  assert_true(w->dims[1].reversal);
  /* b01f_01io->b01f */
  const hlo_conv_dnums *cd = &c->attrs.conv;
  assert_true(c->attrs.has & HLO_A_DIM_LABELS);
  assert_int_equal(cd->input_batch, 0);
  assert_int_equal(cd->input_feature, 3);
  assert_ints(&cd->input_spatial, 2, 1, 2);
  assert_int_equal(cd->kernel_input_feature, 2);
  assert_int_equal(cd->kernel_output_feature, 3);
  assert_ints(&cd->kernel_spatial, 2, 0, 1);
  assert_int_equal(cd->output_batch, 0);
  assert_int_equal(cd->output_feature, 3);
  assert_ints(&cd->output_spatial, 2, 1, 2);
  assert_true(c->attrs.has & HLO_A_FEATURE_GROUP_COUNT);
  assert_true(c->attrs.has & HLO_A_BATCH_GROUP_COUNT);
  assert_int_equal(c->attrs.feature_group_count, 1);
  assert_int_equal(c->attrs.batch_group_count, 1);
  assert_true(c->attrs.has & HLO_A_OPERAND_PRECISION);
  assert_int_equal(c->attrs.nprecision, 2);
  assert_int_equal(c->attrs.precision[0], HLO_PREC_DEFAULT);
  assert_int_equal(c->attrs.precision[1], HLO_PREC_HIGHEST);

  hlo_instr *c2 = find(m, "e", "c2");
  assert_int_equal(c2->attrs.window.rank, 1);
  assert_int_equal(c2->attrs.window.dims[0].size, 3);
  assert_int_equal(c2->attrs.window.dims[0].stride, 2);
  assert_int_equal(c2->attrs.window.dims[0].pad_lo, 0);
  assert_int_equal(c2->attrs.window.dims[0].lhs_dilate, 1);
  /* 0fb1_io01->0b1f */
  cd = &c2->attrs.conv;
  assert_int_equal(cd->input_batch, 2);
  assert_int_equal(cd->input_feature, 1);
  assert_ints(&cd->input_spatial, 2, 0, 3);
  assert_int_equal(cd->kernel_input_feature, 0);
  assert_int_equal(cd->kernel_output_feature, 1);
  assert_ints(&cd->kernel_spatial, 2, 2, 3);
  assert_int_equal(cd->output_batch, 1);
  assert_int_equal(cd->output_feature, 3);
  assert_ints(&cd->output_spatial, 2, 0, 2);

  hlo_instr *rw = find(m, "e", "rw");
  assert_int_equal(rw->attrs.window.rank, 4);
  assert_int_equal(rw->attrs.window.dims[2].size, 2);
  assert_int_equal(rw->attrs.window.dims[3].stride, 1);
  assert_ptr_equal(rw->attrs.calls.to_apply, hlo_module_find(m, "add"));

  hlo_instr *dt = find(m, "e", "dt");
  assert_true(dt->attrs.has & HLO_A_DOT_DNUMS);
  assert_ints(&dt->attrs.dot.lhs_batch, 1, 0);
  assert_ints(&dt->attrs.dot.rhs_batch, 1, 0);
  assert_ints(&dt->attrs.dot.lhs_contracting, 1, 2);
  assert_ints(&dt->attrs.dot.rhs_contracting, 1, 1);
  assert_int_equal(dt->nraw, 0);
  hlo_module_free(m);
}

static void test_attrs_gather_scatter(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "ENTRY e {\n"
      "  o = f32[2,3,4] parameter(0)\n"
      "  i = s32[2,5,1] parameter(1)\n"
      "  g = f32[2,5,4] gather(o, i), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
      "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, "
      "slice_sizes={1,1,4}, indices_are_sorted=true\n"
      "  u = f32[2,5,4] parameter(2)\n"
      "  ROOT s = f32[2,3,4] scatter(o, i, u), update_window_dims={2}, inserted_window_dims={1}, "
      "scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, "
      "index_vector_dim=2, indices_are_sorted=false, unique_indices=true, to_apply=add\n"
      "}\n"
      "add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT r = f32[] add(p, q) }\n");
  hlo_instr *g = find(m, "e", "g");
  assert_true(g->attrs.has & HLO_A_GATHER_DNUMS);
  assert_true(g->attrs.has & HLO_A_SLICE_SIZES);
  assert_true(g->attrs.has & HLO_A_INDICES_ARE_SORTED);
  assert_false(g->attrs.has & HLO_A_SCATTER_DNUMS);
  assert_ints(&g->attrs.gather.offset_dims, 1, 2);
  assert_ints(&g->attrs.gather.collapsed_slice_dims, 1, 1);
  assert_ints(&g->attrs.gather.start_index_map, 1, 1);
  assert_ints(&g->attrs.gather.operand_batching_dims, 1, 0);
  assert_ints(&g->attrs.gather.start_indices_batching_dims, 1, 0);
  assert_int_equal(g->attrs.gather.index_vector_dim, 2);
  assert_ints(&g->attrs.slice_sizes, 3, 1, 1, 4);
  assert_true(g->attrs.indices_are_sorted);
  assert_int_equal(g->nraw, 0);

  hlo_instr *s = find(m, "e", "s");
  assert_true(s->attrs.has & HLO_A_SCATTER_DNUMS);
  assert_false(s->attrs.has & HLO_A_GATHER_DNUMS);
  assert_ints(&s->attrs.scatter.update_window_dims, 1, 2);
  assert_ints(&s->attrs.scatter.inserted_window_dims, 1, 1);
  assert_ints(&s->attrs.scatter.scatter_dims_to_operand_dims, 1, 1);
  assert_ints(&s->attrs.scatter.input_batching_dims, 1, 0);
  assert_ints(&s->attrs.scatter.scatter_indices_batching_dims, 1, 0);
  assert_int_equal(s->attrs.scatter.index_vector_dim, 2);
  assert_true(s->attrs.has & HLO_A_INDICES_ARE_SORTED);
  assert_false(s->attrs.indices_are_sorted);
  assert_true(s->attrs.has & HLO_A_UNIQUE_INDICES);
  assert_true(s->attrs.unique_indices);
  assert_ptr_equal(s->attrs.calls.to_apply, hlo_module_find(m, "add"));
  hlo_module_free(m);
}

static void test_attrs_collectives(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "HloModule m, replica_count=4\n"
      "add { p = f32[] parameter(0)\n q = f32[] parameter(1)\n ROOT r = f32[] add(p, q) }\n"
      "ENTRY e {\n"
      "  x = f32[8] parameter(0)\n"
      "  a = f32[8] all-reduce(x), replica_groups={{0,1},{2,3}}, channel_id=3, "
      "use_global_device_ids=true, to_apply=add\n"
      "  b = f32[8] all-reduce(x), replica_groups=[2,2]<=[4], to_apply=add\n"
      "  c = f32[8] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add\n"
      "  d = f32[8] all-reduce(x), replica_groups={}, to_apply=add\n"
      "  f = f32[8] all-reduce(x), replica_groups=[2,4]<=[2,2,2]T(2,0,1), to_apply=add\n"
      "  ROOT cp = f32[8] collective-permute(x), source_target_pairs={{0,1},{1,2},{3,0}}\n"
      "}\n");
  hlo_instr *a = find(m, "e", "a");
  const hlo_replica_groups *rg = &a->attrs.replica_groups;
  assert_true(a->attrs.has & HLO_A_REPLICA_GROUPS);
  assert_int_equal(rg->ngroups, 2);
  assert_ints(&rg->groups[0], 2, 0, 1);
  assert_ints(&rg->groups[1], 2, 2, 3);
  assert_true(a->attrs.has & HLO_A_CHANNEL_ID);
  assert_int_equal(a->attrs.channel_id, 3);
  assert_true(a->attrs.has & HLO_A_USE_GLOBAL_DEVICE_IDS);
  assert_true(a->attrs.use_global_device_ids);

  rg = &find(m, "e", "b")->attrs.replica_groups; /* iota 0..3 as [2,2] */
  assert_int_equal(rg->ngroups, 2);
  assert_ints(&rg->groups[0], 2, 0, 1);
  assert_ints(&rg->groups[1], 2, 2, 3);

  rg = &find(m, "e", "c")->attrs.replica_groups; /* [[0,1],[2,3]] transposed */
  assert_int_equal(rg->ngroups, 2);
  assert_ints(&rg->groups[0], 2, 0, 2);
  assert_ints(&rg->groups[1], 2, 1, 3);

  rg = &find(m, "e", "d")->attrs.replica_groups;
  assert_true(find(m, "e", "d")->attrs.has & HLO_A_REPLICA_GROUPS);
  assert_int_equal(rg->ngroups, 0);

  /* iota 0..7 as [2,2,2]: element (i,j,k) = 4i+2j+k.  T(2,0,1) gives
   * result dims (k,i,j) -> row-major order over k, i, j:
   * k=0: i=0: 0,2  i=1: 4,6 ; k=1: 1,3,5,7 */
  rg = &find(m, "e", "f")->attrs.replica_groups;
  assert_int_equal(rg->ngroups, 2);
  assert_ints(&rg->groups[0], 4, 0, 2, 4, 6);
  assert_ints(&rg->groups[1], 4, 1, 3, 5, 7);

  hlo_instr *cp = find(m, "e", "cp");
  assert_true(cp->attrs.has & HLO_A_SOURCE_TARGET_PAIRS);
  assert_int_equal(cp->attrs.npairs, 3);
  assert_int_equal(cp->attrs.pairs[0].a, 0);
  assert_int_equal(cp->attrs.pairs[0].b, 1);
  assert_int_equal(cp->attrs.pairs[2].a, 3);
  assert_int_equal(cp->attrs.pairs[2].b, 0);
  hlo_module_free(m);
}

static void test_attrs_calls(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "c { p = (s32[]) parameter(0)\n g = s32[] get-tuple-element(p), index=0\n"
      " ROOT lt = pred[] compare(g, g), direction=LT }\n"
      "b { p = (s32[]) parameter(0)\n ROOT t = (s32[]) tuple(p) }\n"
      "f { p = s32[] parameter(0)\n ROOT n = s32[] negate(p) }\n"
      "ENTRY e {\n"
      "  x = (s32[]) parameter(0)\n"
      "  w = (s32[]) while(x), condition=c, body=%b\n"
      "  k = pred[] parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  y = s32[] conditional(k, i, i), true_computation=f, false_computation=f\n"
      "  z = s32[] conditional(i, i, i, i), branch_computations={f, %f, f}\n"
      "  fu = s32[] fusion(i), kind=kLoop, calls=f\n"
      "  cc = s32[] custom-call(i), custom_call_target=\"my\\\"target\", api_version=API_VERSION_TYPED_FFI\n"
      "  ROOT r = f32[4] rng(i, i), distribution=rng_normal\n"
      "}\n");
  hlo_computation *c = hlo_module_find(m, "c"), *b = hlo_module_find(m, "b"), *f = hlo_module_find(m, "f");
  hlo_instr *w = find(m, "e", "w");
  assert_ptr_equal(w->attrs.calls.condition, c);
  assert_ptr_equal(w->attrs.calls.body, b);
  hlo_instr *y = find(m, "e", "y");
  assert_int_equal(y->attrs.calls.nbranches, 2);
  assert_true(y->attrs.calls.true_false_form);
  assert_ptr_equal(y->attrs.calls.branches[0], f);
  assert_ptr_equal(y->attrs.calls.branches[1], f);
  hlo_instr *z = find(m, "e", "z");
  assert_int_equal(z->attrs.calls.nbranches, 3);
  assert_false(z->attrs.calls.true_false_form);
  assert_ptr_equal(z->attrs.calls.branches[2], f);
  hlo_instr *fu = find(m, "e", "fu");
  assert_true(fu->attrs.has & HLO_A_KIND);
  assert_string_equal(fu->attrs.kind, "kLoop");
  assert_ptr_equal(fu->attrs.calls.calls, f);
  hlo_instr *cc = find(m, "e", "cc");
  assert_true(cc->attrs.has & HLO_A_CUSTOM_CALL_TARGET);
  assert_string_equal(cc->attrs.custom_call_target, "my\"target");
  assert_int_equal(cc->nraw, 1);
  assert_string_equal(raw(cc, "api_version"), "API_VERSION_TYPED_FFI");
  hlo_instr *r = find(m, "e", "r");
  assert_true(r->attrs.has & HLO_A_DISTRIBUTION);
  assert_int_equal(r->attrs.distribution, HLO_RNG_NORMAL);
  hlo_module_free(m);
}

/* ---- raw attributes ----------------------------------------------------------------- */

static void test_raw_attributes(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "ENTRY e {\n"
      "  p = f32[2] parameter(0), sharding={devices=[2]<=[2]}, parameter_replication={false}\n"
      "  n = f32[2] negate(p), metadata={op_type=\"Neg\" op_name=\"a/b{c}\" source_line=3},\n"
      "    backend_config=\"{\\\"x\\\":1}\", dimensions={0}, frontend_attributes={k=\"v\"},\n"
      "    backend_config={\"a\":[1,{\"b\":\"}\"}]}, control-predecessors={p}, statistics={x=1,y=2}\n"
      "  ROOT c = f32[2] copy(n)\n"
      "}\n");
  hlo_instr *p = find(m, "e", "p");
  assert_int_equal(p->nraw, 2);
  assert_string_equal(p->raw[0].name, "sharding");
  assert_string_equal(p->raw[0].value, "{devices=[2]<=[2]}");
  assert_string_equal(p->raw[1].name, "parameter_replication");
  assert_string_equal(p->raw[1].value, "{false}");
  hlo_instr *n = find(m, "e", "n");
  /* dimensions is typed and therefore not raw; the rest in source order */
  assert_int_equal(n->nraw, 6);
  assert_string_equal(n->raw[0].name, "metadata");
  assert_string_equal(n->raw[0].value, "{op_type=\"Neg\" op_name=\"a/b{c}\" source_line=3}");
  assert_string_equal(n->raw[1].name, "backend_config");
  assert_string_equal(n->raw[1].value, "\"{\\\"x\\\":1}\"");
  assert_string_equal(n->raw[2].name, "frontend_attributes");
  assert_string_equal(n->raw[2].value, "{k=\"v\"}");
  assert_string_equal(n->raw[3].name, "backend_config");
  assert_string_equal(n->raw[3].value, "{\"a\":[1,{\"b\":\"}\"}]}");
  assert_string_equal(n->raw[4].name, "control-predecessors");
  assert_string_equal(n->raw[4].value, "{p}");
  assert_string_equal(n->raw[5].name, "statistics");
  assert_string_equal(n->raw[5].value, "{x=1,y=2}");
  assert_true(n->attrs.has & HLO_A_DIMENSIONS);
  hlo_module_free(m);
}

/* ---- names, comments, async sugar, inference ------------------------------------------ */

static void test_names_and_comments(void **state) {
  (void)state;
  hlo_module *m = parse_ok("// leading comment\n"
                           "HloModule m /* inline */\n"
                           "ENTRY %e.1 {\n"
                           "  %param_0.3 = f32[2] parameter(0) // trailing\n"
                           "  /* block\n     comment */\n"
                           "  get-tuple-element.5 = f32[2] add(later-name_x.1, %param_0.3)\n"
                           "  later-name_x.1 = f32[2] negate(param_0.3)\n"
                           "}\n");
  hlo_instr *g = find(m, "e.1", "get-tuple-element.5");
  assert_int_equal(g->op, HLO_OP_ADD);
  assert_int_equal(g->line, 7);
  assert_int_equal(g->col, 3);
  assert_ptr_equal(g->operands[0], find(m, "e.1", "later-name_x.1")); /* forward */
  assert_ptr_equal(g->operands[1], find(m, "e.1", "param_0.3"));
  assert_int_equal(find(m, "e.1", "param_0.3")->col, 3);
  hlo_module_free(m);
}

static void test_async_sugar(void **state) {
  (void)state;
  hlo_module *m = parse_ok(
      "f { p = f32[2] parameter(0)\n ROOT n = f32[2] negate(p) }\n"
      "ENTRY e {\n"
      "  x = f32[2] parameter(0)\n"
      "  s = ((f32[2]), f32[2], s32[]) fusion-start(x), kind=kLoop, calls=f\n"
      "  u = ((f32[2]), f32[2], s32[]) fusion-update(s)\n"
      "  d = f32[2] fusion-done(u)\n"
      "  ss = ((f32[2]), f32[1], s32[]) slice-start(x), slice={[0:1]}\n"
      "  sd = f32[1] slice-done(ss)\n"
      "  ars = f32[2] all-reduce-start(x), to_apply=add\n"
      "  ard = f32[2] all-reduce-done(ars)\n"
      "  as = ((f32[2]), f32[2], s32[]) async-start(x), calls=f\n"
      "  ROOT ad = f32[2] async-done(as)\n"
      "}\n"
      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] add(a, b) }\n");
  hlo_instr *s = find(m, "e", "s");
  assert_int_equal(s->op, HLO_OP_ASYNC_START);
  assert_int_equal(s->async_wrapped, HLO_OP_FUSION);
  assert_ptr_equal(s->attrs.calls.calls, hlo_module_find(m, "f"));
  assert_int_equal(find(m, "e", "u")->op, HLO_OP_ASYNC_UPDATE);
  assert_int_equal(find(m, "e", "u")->async_wrapped, HLO_OP_FUSION);
  assert_int_equal(find(m, "e", "d")->op, HLO_OP_ASYNC_DONE);
  assert_int_equal(find(m, "e", "ss")->async_wrapped, HLO_OP_SLICE);
  assert_int_equal(find(m, "e", "sd")->op, HLO_OP_ASYNC_DONE);
  assert_int_equal(find(m, "e", "ars")->op, HLO_OP_ALL_REDUCE_START);
  assert_int_equal(find(m, "e", "ars")->async_wrapped, HLO_OP_INVALID);
  assert_int_equal(find(m, "e", "ard")->op, HLO_OP_ALL_REDUCE_DONE);
  assert_int_equal(find(m, "e", "as")->op, HLO_OP_ASYNC_START);
  assert_int_equal(find(m, "e", "as")->async_wrapped, HLO_OP_INVALID);
  hlo_module_free(m);
}

static void test_inline_computation_and_inferred_shapes(void **state) {
  (void)state;
  hlo_module *m = parse_ok("ENTRY main {\n"
                           "  arg = (s32[], f32[2]) parameter(0)\n"
                           "  g0 = get-tuple-element(arg), index=0\n"
                           "  g1 = get-tuple-element(arg), index=1\n"
                           "  s = add(g0, g0)\n"
                           "  lt = compare(g1, g1), direction=LT\n"
                           "  cs = ((s32[]), s32[], s32[]) call-start(s), to_apply={\n"
                           "    a = s32[] parameter(0)\n"
                           "    ROOT n = negate(a)\n"
                           "  }, async_execution_thread=\"thread\"\n"
                           "  ROOT t = tuple(s, lt)\n"
                           "}\n");
  assert_int_equal(m->ncomps, 2);
  hlo_computation *inl = m->comps[0];
  assert_ptr_equal(m->entry, m->comps[1]);
  hlo_instr *cs = find(m, "main", "cs");
  assert_int_equal(cs->op, HLO_OP_ASYNC_START);
  assert_int_equal(cs->async_wrapped, HLO_OP_CALL);
  assert_ptr_equal(cs->attrs.calls.to_apply, inl);
  assert_int_equal(cs->nraw, 1);
  assert_string_equal(cs->raw[0].value, "\"thread\"");
  assert_int_equal(inl->ninstrs, 2);
  assert_int_equal(inl->line, 7);
  assert_int_equal(inl->col, 56);
  assert_dims(&inl->root->shape, HLO_S32, 0);
  assert_dims(&find(m, "main", "g0")->shape, HLO_S32, 0);
  assert_dims(&find(m, "main", "g1")->shape, HLO_F32, 1, 2);
  assert_dims(&find(m, "main", "s")->shape, HLO_S32, 0);
  assert_dims(&find(m, "main", "lt")->shape, HLO_PRED, 1, 2);
  const hlo_shape *t = &find(m, "main", "t")->shape;
  assert_int_equal(t->type, HLO_TUPLE);
  assert_int_equal(t->ntuple, 2);
  assert_int_equal(t->elems[1].type, HLO_PRED);
  hlo_module_free(m);
}

static void test_not_nul_terminated(void **state) {
  (void)state;
  const char *text = "ENTRY e { ROOT p = f32[2] parameter(0) }garbage that is not part of it";
  size_t len = strlen("ENTRY e { ROOT p = f32[2] parameter(0) }");
  char *buf = malloc(len); /* exact size: no terminator */
  assert_non_null(buf);
  memcpy(buf, text, len);
  hlo_error err;
  hlo_module *m = hlo_parse(buf, len, &err);
  free(buf);
  assert_non_null(m);
  assert_string_equal(m->entry->root->name, "p");
  hlo_module_free(m);
}

/* ---- errors ----------------------------------------------------------------------------- */

static void test_error_messages(void **state) {
  (void)state;
  expect_error("ENTRY e {\n  p = f32[2,3 parameter(0)\n}\n", 2, 15, "expected ']' after dimensions");
  expect_error("ENTRY e {\n  p = f32[2] foo(x)\n}\n", 2, 14, "unknown opcode 'foo'");
  expect_error("ENTRY e {\n  p = f33[2] parameter(0)\n}\n", 2, 7, "unknown element type 'f33'");
  expect_error("ENTRY e {\n  p = f32[99999999999999999999] parameter(0)\n}\n", 2, 11,
               "dimension 99999999999999999999 overflows 64 bits");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, x)\n}\n", 3, 26,
               "undefined operand 'x'");
  expect_error("ENTRY e {\n  y = f32[] parameter(0)\n  y = f32[] negate(y)\n}\n", 3, 3, "duplicate name 'y'");
  expect_error("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=nope\n}\n", 3, 36,
               "undefined computation 'nope'");
  expect_error("ENTRY e {\n  p = s32[] constant(99999999999999999999)\n}\n", 2, 22,
               "integer 99999999999999999999 overflows 64 bits");
  expect_error("ENTRY e {\n  p = s32[3] constant({1, 2})\n}\n", 2, 23, "constant has 2 elements");
  /* Values the element type cannot hold (the parser fuzzer's pred
   * constant(0x9b), held as 155 and printed as "true"); the limits are
   * the types' own: s8 -128..127, u4 0..15, pred 0 or 1. */
  expect_error("Hl { \nc = pred[1,3] constant(0x9b)\n}\n", 2, 24, "value 0x9b is out of range for pred");
  expect_error("ENTRY e {\n  c = s8[] constant(128)\n}\n", 2, 21, "value 128 is out of range for s8");
  expect_error("ENTRY e {\n  c = s8[2] constant({-128, -129})\n}\n", 2, 29, "value -129 is out of range for s8");
  expect_error("ENTRY e {\n  c = u4[] constant(16)\n}\n", 2, 21, "value 16 is out of range for u4");
  expect_error("ENTRY e {\n  c = f32[9999999999,9999999999] constant({...})\n}\n", 2, 43,
               "too many elements");
  expect_error("HloModule m, replica_count=x2\nENTRY e { ROOT p = f32[] parameter(0) }\n", 1, 28,
               "replica_count must be a non-negative integer");
  expect_error("a { ROOT p = f32[] parameter(0) }\na { ROOT q = f32[] parameter(0) }\n", 2, 1,
               "duplicate computation name 'a'");
  expect_error("ENTRY e {\n  p = f32[] parameter(1)\n}\n", 2, 3, "parameter number 1 out of range");
  expect_error("ENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a), direction=XX\n}\n", 3, 39,
               "unknown comparison direction 'XX'");
}

static void test_error_truncated(void **state) {
  (void)state;
  expect_error("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n", 4, 1, "unexpected end of input");
  expect_error("ENTRY e {\n  p = f32[2", 2, 12, "unexpected end of input");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0), metadata={op_name=\"x\"", 2, 49,
               "unexpected end of input");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0) /* never closed", 2, 27, "unterminated comment");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0), backend_config=\"abc", 2, 43, "unterminated string");
}

static void test_error_nesting(void **state) {
  (void)state;
  char text[512];
  int k = snprintf(text, sizeof text, "ENTRY e {\n  p = ");
  for (int i = 0; i < 100; i++)
    text[k++] = '(';
  k += snprintf(text + k, sizeof text - (size_t)k, "f32[]");
  for (int i = 0; i < 100; i++)
    text[k++] = ')';
  snprintf(text + k, sizeof text - (size_t)k, " parameter(0)\n}\n");
  expect_error(text, 2, 71, "nesting too deep");

  /* 64 levels is fine */
  k = snprintf(text, sizeof text, "ENTRY e {\n  p = ");
  for (int i = 0; i < 64; i++)
    text[k++] = '(';
  k += snprintf(text + k, sizeof text - (size_t)k, "f32[]");
  for (int i = 0; i < 64; i++)
    text[k++] = ')';
  snprintf(text + k, sizeof text - (size_t)k, " parameter(0)\n}\n");
  hlo_module *m = parse_ok(text);
  hlo_module_free(m);

  /* deeply nested braces inside a raw attribute */
  k = snprintf(text, sizeof text, "ENTRY e {\n  p = f32[] parameter(0), x=");
  for (int i = 0; i < 100; i++)
    text[k++] = '{';
  text[k] = '\0';
  expect_error(text, 2, 93, "nesting too deep");
}

static void test_error_empty(void **state) {
  (void)state;
  expect_error("", 1, 1, "empty file: no computation");
  expect_error("// only a comment\n", 2, 1, "empty file: no computation");
  expect_error("HloModule m\n", 2, 1, "empty file: no computation");
  expect_error("ENTRY e {\n}\n", 2, 1, "has no instructions");
}

static void test_error_garbage(void **state) {
  (void)state;
  static const char nul[] = "ENTRY e {\n  p = f32[2] parameter(0)\x00\x01\xff}";
  expect_error_n(nul, sizeof nul - 1, 2, 26, "expected an instruction name");
  static const char esc_nul[] = "ENTRY e {\n  p = f32[] parameter(0), backend_config=\"a\\\0b\"\n}\n";
  expect_error_n(esc_nul, sizeof esc_nul - 1, 2, 45, "unexpected NUL byte in string");
  static const char bin[] = "\x7f" "ELF\x02\x01\x01\x00\x00";
  expect_error_n(bin, sizeof bin - 1, 1, 1, "expected a computation name");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0), metadata={op_name=\"x\"]\n}\n", 2, 49,
               "unbalanced ']'");
  expect_error("ENTRY e {\n  p = f32[2] parameter(0)\n}\n}\n", 4, 1, "expected a computation name");
}

/* Every prefix of a rich module, in an exact-size buffer, must be refused
 * cleanly (or parse): never crash, never read past the end (ASan). */
static void test_every_prefix(void **state) {
  (void)state;
  static const char text[] =
      "HloModule m, is_scheduled=true, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
      "add (a: f32[], b: f32[]) -> f32[] { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT r = f32[] add(a, b) }\n"
      "ENTRY %e {\n"
      "  p = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(0), metadata={op_name=\"x{\" a=1}\n"
      "  c = (f32[<=2], c64[]) constant(({1.5, -nan}, (1, inf))) // comment\n"
      "  /* c */ r = f32[8] reduce(p, f32[] %z), dimensions={1}, to_apply=add\n"
      "  z = f32[] constant(0)\n"
      "  w = f32[4,64] reduce-window(p, z), window={size=2x2 stride=2x2 pad=0_0x0_1}, to_apply=add\n"
      "  ar = f32[8] all-reduce(r), replica_groups=[2,2]<=[2,2]T(1,0), to_apply={\n"
      "    x = f32[] parameter(0)\n    ROOT y = f32[] negate(x) }\n"
      "  ROOT cv = f32[1,4,4,16] convolution(p, p), dim_labels=b01f_01io->b01f, window={size=3x3}\n"
      "}, execution_thread=\"main\"\n";
  hlo_module *m = parse_ok(text);
  hlo_module_free(m);
  for (size_t len = 0; len < sizeof text - 1; len++) {
    char *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    memcpy(buf, text, len);
    hlo_error err;
    m = hlo_parse(buf, len, &err);
    if (!m) {
      assert_true(err.line >= 1);
      assert_true(err.col >= 1);
      assert_true(err.msg[0] != '\0');
    }
    hlo_module_free(m);
    free(buf);
  }
}

/* Random bytes and random token soup must never crash. */
static void test_random_inputs(void **state) {
  (void)state;
  static const char *const toks[] = {"ENTRY", "e", "{", "}", "(", ")", "[", "]", "=", ",", "f32", "2",
                                     "parameter", "add", "ROOT", "\"", "/*", "*/", "//", "\n", "<=",
                                     "->", ":", "T(8,128)", "constant", "x", "-", "nan", "{...}"};
  uint32_t seed = 12345;
  for (int iter = 0; iter < 3000; iter++) {
    char buf[512];
    size_t len = 0;
    int mode = iter % 2;
    while (len < sizeof buf - 16) {
      seed = seed * 1103515245u + 12345u;
      uint32_t r = seed >> 8;
      if (mode == 0) {
        buf[len++] = (char)(r & 0xff);
      } else {
        const char *t = toks[r % (sizeof toks / sizeof toks[0])];
        size_t tl = strlen(t);
        memcpy(buf + len, t, tl);
        len += tl;
        buf[len++] = ' ';
      }
      if ((r >> 16) % 40 == 0)
        break;
    }
    char *exact = malloc(len ? len : 1);
    assert_non_null(exact);
    memcpy(exact, buf, len);
    hlo_error err;
    hlo_module *m = hlo_parse(exact, len, &err);
    hlo_module_free(m);
    free(exact);
  }
}

/* Which computations are simple reducers (hlo_simple_reducer), each
 * written as the module's only non-entry computation. */
static hlo_opcode reducer_of(const char *body) {
  char text[512];
  snprintf(text, sizeof text, "HloModule m\nr {\n%s}\nENTRY e {\n  ROOT c = f32[] constant(0)\n}\n", body);
  hlo_module *m = parse_ok(text);
  hlo_opcode op = hlo_simple_reducer(hlo_module_find(m, "r"));
  hlo_module_free(m);
  return op;
}

static void test_simple_reducer(void **state) {
  (void)state;
  const char *ab = "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n";
  char body[256];
  snprintf(body, sizeof body, "%s  ROOT s = f32[] add(a, b)\n", ab);
  assert_int_equal(reducer_of(body), HLO_OP_ADD);
  snprintf(body, sizeof body, "%s  ROOT s = f32[] maximum(b, a)\n", ab); /* commutative: either order */
  assert_int_equal(reducer_of(body), HLO_OP_MAXIMUM);
  snprintf(body, sizeof body, "%s  ROOT s = f32[] subtract(a, b)\n", ab); /* not commutative */
  assert_int_equal(reducer_of(body), HLO_OP_INVALID);
  snprintf(body, sizeof body, "%s  ROOT s = f32[] add(a, a)\n", ab); /* one parameter twice */
  assert_int_equal(reducer_of(body), HLO_OP_INVALID);
  snprintf(body, sizeof body, "%s  k = f32[] constant(1)\n  ROOT s = f32[] add(a, b)\n", ab); /* a dead instruction */
  assert_int_equal(reducer_of(body), HLO_OP_INVALID);
  assert_int_equal(reducer_of("  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT s = f32[2] add(a, b)\n"),
                   HLO_OP_INVALID); /* arrays */
  assert_int_equal(reducer_of("  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n  ROOT s = pred[] or(a, b)\n"),
                   HLO_OP_OR);
  assert_int_equal(hlo_simple_reducer(NULL), HLO_OP_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_simple_reducer),
      cmocka_unit_test(test_minimal_module),
      cmocka_unit_test(test_text_named_computations),
      cmocka_unit_test(test_header_attributes),
      cmocka_unit_test(test_root_absent_is_last),
      cmocka_unit_test(test_headerless_entry_choice),
      cmocka_unit_test(test_signature_and_thread),
      cmocka_unit_test(test_thread_in_header),
      cmocka_unit_test(test_layouts),
      cmocka_unit_test(test_dynamic_dims),
      cmocka_unit_test(test_tuple_shapes_and_operand_shapes),
      cmocka_unit_test(test_all_element_types),
      cmocka_unit_test(test_constants_scalars),
      cmocka_unit_test(test_constants_arrays),
      cmocka_unit_test(test_attrs_shape_ops),
      cmocka_unit_test(test_attrs_window_conv_dot),
      cmocka_unit_test(test_attrs_gather_scatter),
      cmocka_unit_test(test_attrs_collectives),
      cmocka_unit_test(test_attrs_calls),
      cmocka_unit_test(test_raw_attributes),
      cmocka_unit_test(test_names_and_comments),
      cmocka_unit_test(test_async_sugar),
      cmocka_unit_test(test_inline_computation_and_inferred_shapes),
      cmocka_unit_test(test_not_nul_terminated),
      cmocka_unit_test(test_error_messages),
      cmocka_unit_test(test_constants_at_type_limits),
      cmocka_unit_test(test_error_truncated),
      cmocka_unit_test(test_error_nesting),
      cmocka_unit_test(test_error_empty),
      cmocka_unit_test(test_error_garbage),
      cmocka_unit_test(test_every_prefix),
      cmocka_unit_test(test_random_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
