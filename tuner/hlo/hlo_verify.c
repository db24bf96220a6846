/* hlo_verify.c — structural and shape checks on a parsed module.
 *
 * Three layers, each a pass over one computation:
 *   1. structure: every computation has a root, names are defined once,
 *      parameter numbers are dense, operands are defined before their use;
 *   2. calls: called computations exist and take the right parameters;
 *   3. shapes: hlo_infer_shape() checks operands and attributes and gives
 *      the result shape, which must equal the declared one (layouts and
 *      dynamic bounds aside).
 * The first failure stops the walk: one clear message at the right line
 * beats a cascade of follow-on errors.
 */
#include "hlo_verify.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_shape_infer.h"

enum { SHAPE_TEXT = 160 };

static int fail_at(const hlo_instr *in, hlo_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reports at the instruction, prefixing its name. */
static int fail_at(const hlo_instr *in, hlo_error *err, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return hlo_error_set(err, in->line, in->col, "%s: %s", in->name, msg);
}

static const char *shape_str(const hlo_shape *s, char *buf) {
  return hlo_shape_format(s, buf, SHAPE_TEXT);
}

/* ---- names ------------------------------------------------------------ */

/* Set of names for duplicate detection: open addressing over a power-of-two
 * table of pointers.  Computations can hold millions of instructions, so a
 * quadratic scan is not an option. */
typedef struct name_set {
  size_t cap;
  const char **slots;
} name_set;

static unsigned long name_hash(const char *s) {
  unsigned long h = 5381;
  for (; *s; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

static int name_set_init(name_set *set, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  set->cap = cap;
  set->slots = calloc(cap, sizeof *set->slots);
  return set->slots ? 0 : -1;
}

/* Adds name; returns the earlier equal name when there is one, else NULL. */
static const char *name_set_add(name_set *set, const char *name) {
  size_t i = name_hash(name) & (set->cap - 1);
  while (set->slots[i]) {
    if (strcmp(set->slots[i], name) == 0)
      return set->slots[i];
    i = (i + 1) & (set->cap - 1);
  }
  set->slots[i] = name;
  return NULL;
}

static int oom(hlo_error *err) { return hlo_error_set(err, 0, 0, "out of memory while verifying"); }

static int check_comp_names(const hlo_module *m, hlo_error *err) {
  name_set set;
  if (name_set_init(&set, (size_t)m->ncomps) < 0)
    return oom(err);
  int rc = 0;
  for (int i = 0; i < m->ncomps && rc == 0; i++) {
    const hlo_computation *c = m->comps[i];
    if (name_set_add(&set, c->name))
      rc = hlo_error_set(err, c->line, c->col, "computation %s is defined twice", c->name);
  }
  free(set.slots);
  return rc;
}

static int check_instr_names(const hlo_computation *c, hlo_error *err) {
  name_set set;
  if (name_set_init(&set, (size_t)c->ninstrs) < 0)
    return oom(err);
  int rc = 0;
  for (int i = 0; i < c->ninstrs && rc == 0; i++) {
    const hlo_instr *in = c->instrs[i];
    if (name_set_add(&set, in->name))
      rc = fail_at(in, err, "name is defined twice in computation %s", c->name);
  }
  free(set.slots);
  return rc;
}

/* ---- structure -------------------------------------------------------- */

/* Parameter numbers are exactly 0..n-1, each once, and the computation's
 * params table agrees with its parameter instructions. */
static int check_params(const hlo_computation *c, hlo_error *err) {
  int n = 0;
  for (int i = 0; i < c->ninstrs; i++)
    n += c->instrs[i]->op == HLO_OP_PARAMETER;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *in = c->instrs[i];
    if (in->op != HLO_OP_PARAMETER)
      continue;
    int64_t k = in->parameter_number;
    if (k < 0 || k >= n)
      return fail_at(in, err, "parameter number %lld is out of range: computation %s has %d "
                     "parameters, numbered 0 to %d", (long long)k, c->name, n, n - 1);
    if (k >= c->nparams || c->params[k] != in) {
      const hlo_instr *other = k < c->nparams ? c->params[k] : NULL;
      if (other && other != in)
        return fail_at(in, err, "parameter number %lld is also used by %s", (long long)k,
                       other->name);
      return fail_at(in, err, "parameter number %lld is not registered in computation %s",
                     (long long)k, c->name);
    }
  }
  if (c->nparams != n)
    return hlo_error_set(err, c->line, c->col,
                         "computation %s lists %d parameters but has %d parameter instructions",
                         c->name, c->nparams, n);
  return 0;
}

/* Operands belong to the same computation and come earlier in it. */
static int check_operand_order(const hlo_computation *c, const hlo_instr *in, int pos,
                               hlo_error *err) {
  for (int k = 0; k < in->noperands; k++) {
    const hlo_instr *op = in->operands[k];
    if (!op)
      return fail_at(in, err, "operand %d is missing", k);
    if (op == in)
      return fail_at(in, err, "uses itself as operand %d", k);
    bool here = op->parent == c && op->index >= 0 && op->index < c->ninstrs &&
                c->instrs[op->index] == op;
    if (!here)
      return fail_at(in, err, "operand %d (%s) is not defined in computation %s", k, op->name,
                     c->name);
    if (op->index >= pos)
      return fail_at(in, err, "operand %d (%s) is used before it is defined", k, op->name);
  }
  return 0;
}

/* ---- called computations ---------------------------------------------- */

static int need_callee(const hlo_instr *in, const hlo_computation *callee, const char *what,
                       hlo_error *err) {
  if (!callee)
    return fail_at(in, err, "%s computation is missing", what);
  return 0;
}

static int need_params(const hlo_instr *in, const hlo_computation *callee, const char *what,
                       int n, hlo_error *err) {
  if (need_callee(in, callee, what, err) < 0)
    return -1;
  if (callee->nparams != n)
    return fail_at(in, err, "%s computation %s has %d parameter%s, expected %d", what,
                   callee->name, callee->nparams, callee->nparams == 1 ? "" : "s", n);
  return 0;
}

static bool is_pred_scalar(const hlo_shape *s) { return s->type == HLO_PRED && s->rank == 0; }

static int need_pred_root(const hlo_instr *in, const hlo_computation *callee, const char *what,
                          hlo_error *err) {
  char a[SHAPE_TEXT];
  if (!callee->root || !is_pred_scalar(&callee->root->shape))
    return fail_at(in, err, "%s computation %s must return pred[], returns %s", what, callee->name,
                   callee->root ? shape_str(&callee->root->shape, a) : "nothing");
  return 0;
}

/* Parameter k of the callee has the shape of `s` (layout ignored). */
static int need_param_shape(const hlo_instr *in, const hlo_computation *callee, int k,
                            const hlo_shape *s, const char *of, hlo_error *err) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  const hlo_shape *p = &callee->params[k]->shape;
  if (!hlo_shape_compatible(p, s))
    return fail_at(in, err, "parameter %d of computation %s has shape %s but %s is %s", k,
                   callee->name, shape_str(p, a), of, shape_str(s, b));
  return 0;
}

static int need_root_shape(const hlo_instr *in, const hlo_computation *callee, const hlo_shape *s,
                           const char *of, hlo_error *err) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  if (callee->root && !hlo_shape_compatible(&callee->root->shape, s))
    return fail_at(in, err, "computation %s returns %s but %s is %s", callee->name,
                   shape_str(&callee->root->shape, a), of, shape_str(s, b));
  return 0;
}

/* fusion and call: one parameter per operand, of the operand's shape, and
 * the callee returns the instruction's result. */
static int check_call_like(const hlo_instr *in, const hlo_computation *callee, const char *what,
                           hlo_error *err) {
  char of[32];
  if (need_params(in, callee, what, in->noperands, err) < 0)
    return -1;
  for (int k = 0; k < in->noperands; k++) {
    snprintf(of, sizeof of, "operand %d", k);
    if (need_param_shape(in, callee, k, &in->operands[k]->shape, of, err) < 0)
      return -1;
  }
  return need_root_shape(in, callee, &in->shape, "the result", err);
}

static int check_while(const hlo_instr *in, hlo_error *err) {
  const hlo_calls *cl = &in->attrs.calls;
  if (need_params(in, cl->condition, "condition", 1, err) < 0 ||
      need_params(in, cl->body, "body", 1, err) < 0 ||
      need_pred_root(in, cl->condition, "condition", err) < 0)
    return -1;
  if (in->noperands != 1)
    return 0; /* the operand count is reported by shape inference */
  const hlo_shape *init = &in->operands[0]->shape;
  if (need_param_shape(in, cl->condition, 0, init, "operand 0", err) < 0 ||
      need_param_shape(in, cl->body, 0, init, "operand 0", err) < 0 ||
      need_root_shape(in, cl->body, init, "operand 0", err) < 0)
    return -1;
  return 0;
}

static int check_conditional(const hlo_instr *in, hlo_error *err) {
  const hlo_calls *cl = &in->attrs.calls;
  char what[48], of[32];
  if (cl->nbranches < 1)
    return fail_at(in, err, "has no branch computations");
  if (in->noperands != cl->nbranches + 1)
    return fail_at(in, err, "has %d branch computations, so it expects %d operands, got %d",
                   cl->nbranches, cl->nbranches + 1, in->noperands);
  if (in->operands[0]->shape.type == HLO_PRED && cl->nbranches != 2)
    return fail_at(in, err, "a pred branch index needs 2 branches, got %d", cl->nbranches);
  for (int b = 0; b < cl->nbranches; b++) {
    snprintf(what, sizeof what, "branch %d", b);
    snprintf(of, sizeof of, "operand %d", b + 1);
    if (need_params(in, cl->branches[b], what, 1, err) < 0 ||
        need_param_shape(in, cl->branches[b], 0, &in->operands[b + 1]->shape, of, err) < 0 ||
        need_root_shape(in, cl->branches[b], &in->shape, "the result", err) < 0)
      return -1;
  }
  return 0;
}

/* select-and-scatter names its two computations in attributes the parser
 * keeps as raw text (`select=`, `scatter=`), so they are looked up here. */
static int check_raw_callee(const hlo_module *m, const hlo_instr *in, const char *attr, int n,
                            hlo_error *err) {
  for (int i = 0; i < in->nraw; i++) {
    if (strcmp(in->raw[i].name, attr) != 0)
      continue;
    const char *name = in->raw[i].value;
    if (name[0] == '%')
      name++;
    const hlo_computation *callee = hlo_module_find(m, name);
    if (!callee)
      return fail_at(in, err, "%s computation %s does not exist", attr, name);
    return need_params(in, callee, attr, n, err);
  }
  return fail_at(in, err, "%s computation is missing", attr);
}

static int check_calls(const hlo_module *m, const hlo_instr *in, hlo_error *err) {
  const hlo_calls *cl = &in->attrs.calls;
  int n = in->noperands;
  switch (in->op) {
  case HLO_OP_REDUCE:
  case HLO_OP_REDUCE_WINDOW:
    /* One (accumulator, element) pair per input. */
    return need_params(in, cl->to_apply, "to_apply", n - n % 2, err);
  case HLO_OP_SCATTER:
    return need_params(in, cl->to_apply, "to_apply", n - 1 - (n - 1) % 2, err);
  case HLO_OP_ALL_REDUCE:
  case HLO_OP_ALL_REDUCE_START:
  case HLO_OP_REDUCE_SCATTER:
    /* XLA applies a binary reducer to each operand of a variadic
     * all-reduce, so the reducer always takes two scalars. */
    return need_params(in, cl->to_apply, "to_apply", 2, err);
  case HLO_OP_SELECT_AND_SCATTER:
    if (check_raw_callee(m, in, "select", 2, err) < 0)
      return -1;
    return check_raw_callee(m, in, "scatter", 2, err);
  case HLO_OP_MAP:
    return need_params(in, cl->to_apply, "to_apply", n, err);
  case HLO_OP_SORT:
    if (need_params(in, cl->to_apply, "comparator", 2 * n, err) < 0)
      return -1;
    return need_pred_root(in, cl->to_apply, "comparator", err);
  case HLO_OP_WHILE:
    return check_while(in, err);
  case HLO_OP_CONDITIONAL:
    return check_conditional(in, err);
  case HLO_OP_FUSION:
    return check_call_like(in, cl->calls, "fused", err);
  case HLO_OP_CALL:
    return check_call_like(in, cl->to_apply ? cl->to_apply : cl->calls, "called", err);
  case HLO_OP_ASYNC_START:
    /* The wrapped computation takes the operands; its result is nested in
     * the async tuple in ways that vary by op, so only arity is checked. */
    if (cl->calls)
      return need_params(in, cl->calls, "async", n, err);
    return 0;
  default:
    return 0;
  }
}

/* ---- shapes ----------------------------------------------------------- */

static int check_shape(const hlo_instr *in, hlo_arena *scratch, hlo_error *err) {
  char a[SHAPE_TEXT], b[SHAPE_TEXT];
  hlo_shape want;
  int rc = hlo_infer_shape(in, scratch, &want, err);
  if (rc <= 0)
    return rc;
  if (!hlo_shape_compatible(&want, &in->shape))
    return fail_at(in, err, "the result is %s but the operands and attributes give %s",
                   shape_str(&in->shape, a), shape_str(&want, b));
  return 0;
}

/* ---- computations and the module ------------------------------------- */

/* Pass 1: what calls into a computation rely on (a root, dense parameters)
 * holds for every computation before any call is checked. */
static int verify_structure(const hlo_computation *c, hlo_error *err) {
  if (c->ninstrs == 0 || !c->root)
    return hlo_error_set(err, c->line, c->col, "computation %s has no instructions", c->name);
  if (c->root->parent != c)
    return hlo_error_set(err, c->line, c->col, "the root of computation %s is not one of its "
                         "instructions", c->name);
  if (check_instr_names(c, err) < 0 || check_params(c, err) < 0)
    return -1;
  return 0;
}

/* Pass 2: operands, calls and shapes, instruction by instruction. */
static int verify_instructions(const hlo_module *m, const hlo_computation *c, hlo_error *err) {
  /* Inferred shapes live only until the instruction is checked; one arena
   * per computation bounds the memory to the largest computation. */
  hlo_arena *scratch = hlo_arena_new();
  if (!scratch)
    return oom(err);
  int rc = 0;
  for (int i = 0; i < c->ninstrs && rc == 0; i++) {
    const hlo_instr *in = c->instrs[i];
    if (check_operand_order(c, in, i, err) < 0 || check_calls(m, in, err) < 0 ||
        check_shape(in, scratch, err) < 0)
      rc = -1;
  }
  hlo_arena_free(scratch);
  return rc;
}

int hlo_verify(const hlo_module *m, hlo_error *err) {
  if (!m || !m->entry)
    return hlo_error_set(err, 1, 1, "the module has no entry computation");
  if (!m->entry->root)
    return hlo_error_set(err, m->entry->line, m->entry->col,
                         "the entry computation %s has no root", m->entry->name);
  if (check_comp_names(m, err) < 0)
    return -1;
  for (int i = 0; i < m->ncomps; i++)
    if (verify_structure(m->comps[i], err) < 0)
      return -1;
  for (int i = 0; i < m->ncomps; i++)
    if (verify_instructions(m, m->comps[i], err) < 0)
      return -1;
  return 0;
}
