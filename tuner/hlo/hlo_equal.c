/* hlo_equal.c — structural equality of two modules.
 *
 * "Equal" means: the two modules print the same canonical text and mean the
 * same thing.  So everything the printer writes is compared (names, header
 * attributes, signatures, shapes with layouts, typed attributes by their
 * `has` bits, raw attributes, literals by bit pattern) and references are
 * compared by name — operands, callees, the root, the entry — because the
 * two modules live in different arenas and pointers cannot match.
 *
 * Presentation that the canonical text normalises away is not compared:
 * whether the source wrote ROOT / ENTRY explicitly (root_marked, is_entry:
 * only which instruction is the root and which computation is the entry
 * matter), source positions, and the order-derived params/index tables.
 *
 * The first difference found is described in `why`, with the computation
 * and instruction it is in, e.g.
 *   computation 'fused_add' instruction 'add.3': operand 1 differs ('x' vs 'y')
 */
#include "hlo_print.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct eq {
  char *why;
  size_t why_len;
  const hlo_computation *comp; /* where we are, for the message */
  const hlo_instr *instr;
} eq;

/* Appends s to why, truncating at why_len - 1 bytes. */
static void why_append(eq *e, size_t *n, const char *s) {
  size_t room = e->why_len - 1 - *n, k = strlen(s);
  if (k > room)
    k = room;
  memcpy(e->why + *n, s, k);
  *n += k;
  e->why[*n] = '\0';
}

/* Records the difference, prefixed with where it is, and returns false so
 * callers can `return differ(...)`. */
__attribute__((format(printf, 2, 3))) static bool differ(eq *e, const char *fmt, ...) {
  if (!e->why || e->why_len == 0)
    return false;
  size_t n = 0;
  e->why[0] = '\0';
  if (e->comp) {
    why_append(e, &n, "computation '");
    why_append(e, &n, e->comp->name ? e->comp->name : "");
    why_append(e, &n, "'");
  }
  if (e->instr) {
    why_append(e, &n, e->comp ? " instruction '" : "instruction '");
    why_append(e, &n, e->instr->name ? e->instr->name : "");
    why_append(e, &n, "'");
  }
  if (e->comp || e->instr)
    why_append(e, &n, ": ");
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  why_append(e, &n, msg);
  return false;
}

static const char *show(const char *s) { return s ? s : "(none)"; }

static bool str_eq(const char *a, const char *b) {
  if (!a || !b)
    return a == b;
  return strcmp(a, b) == 0;
}

static bool ints_eq(const hlo_ints *a, const hlo_ints *b) {
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (a->v[i] != b->v[i])
      return false;
  return true;
}

static const char *comp_name(const hlo_computation *c) { return c ? c->name : NULL; }
static const char *instr_name(const hlo_instr *i) { return i ? i->name : NULL; }

static bool raw_eq(eq *e, const char *what, int na, const hlo_raw_attr *a, int nb,
                   const hlo_raw_attr *b) {
  if (na != nb)
    return differ(e, "%s count differs (%d vs %d)", what, na, nb);
  for (int i = 0; i < na; i++) {
    if (!str_eq(a[i].name, b[i].name))
      return differ(e, "%s %d name differs ('%s' vs '%s')", what, i, show(a[i].name),
                    show(b[i].name));
    if (!str_eq(a[i].value, b[i].value))
      return differ(e, "%s '%s' value differs", what, show(a[i].name));
  }
  return true;
}

static bool shape_eq(eq *e, const char *what, const hlo_shape *a, const hlo_shape *b) {
  if (hlo_shape_equal(a, b, true))
    return true;
  char *sa = hlo_print_shape(a), *sb = hlo_print_shape(b);
  differ(e, "%s differs (%s vs %s)", what, show(sa), show(sb));
  free(sa);
  free(sb);
  return false;
}

/* ---- literals --------------------------------------------------------- */

static bool literal_eq(eq *e, const hlo_literal *a, const hlo_literal *b, const hlo_shape *s,
                       const char *path) {
  if (!a || !b) {
    if (a == b)
      return true;
    return differ(e, "literal%s present in one module only", path);
  }
  if (a->elided != b->elided)
    return differ(e, "literal%s elided in one module only", path);
  if (a->ntuple != b->ntuple)
    return differ(e, "literal%s tuple size differs (%d vs %d)", path, a->ntuple, b->ntuple);
  for (int i = 0; i < a->ntuple; i++) {
    char sub[64];
    snprintf(sub, sizeof sub, "%s{%d}", path, i);
    const hlo_shape *es = (s && s->type == HLO_TUPLE && i < s->ntuple) ? &s->elems[i] : s;
    if (!literal_eq(e, &a->elems[i], &b->elems[i], es, sub))
      return false;
  }
  if (a->count != b->count)
    return differ(e, "literal%s element count differs (%" PRId64 " vs %" PRId64 ")", path,
                  a->count, b->count);
  if (!a->f != !b->f || !a->i != !b->i || !a->u != !b->u)
    return differ(e, "literal%s element class differs", path);
  /* complex literals hold two doubles per element */
  int64_t per = (s && hlo_etype_class(s->type) == HLO_CLASS_COMPLEX) ? 2 : 1;
  for (int64_t k = 0; a->f && k < a->count * per; k++) {
    uint64_t x, y;
    memcpy(&x, &a->f[k], sizeof x);
    memcpy(&y, &b->f[k], sizeof y);
    if (x != y)
      return differ(e,
                    "literal%s element %" PRId64 " differs (%.17g vs %.17g, bits 0x%016" PRIx64
                    " vs 0x%016" PRIx64 ")",
                    path, k / per, a->f[k], b->f[k], x, y);
  }
  for (int64_t k = 0; a->i && k < a->count; k++)
    if (a->i[k] != b->i[k])
      return differ(e, "literal%s element %" PRId64 " differs (%" PRId64 " vs %" PRId64 ")",
                    path, k, a->i[k], b->i[k]);
  for (int64_t k = 0; a->u && k < a->count; k++)
    if (a->u[k] != b->u[k])
      return differ(e, "literal%s element %" PRId64 " differs (%" PRIu64 " vs %" PRIu64 ")",
                    path, k, a->u[k], b->u[k]);
  return true;
}

/* ---- typed attributes ------------------------------------------------- */

#define ATTR_DIFF(name) differ(e, "attribute %s differs", name)

static bool window_eq(const hlo_window *a, const hlo_window *b) {
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++) {
    const hlo_window_dim *x = &a->dims[i], *y = &b->dims[i];
    if (x->size != y->size || x->stride != y->stride || x->pad_lo != y->pad_lo ||
        x->pad_hi != y->pad_hi || x->lhs_dilate != y->lhs_dilate ||
        x->rhs_dilate != y->rhs_dilate || x->reversal != y->reversal)
      return false;
  }
  return true;
}

static bool conv_eq(const hlo_conv_dnums *a, const hlo_conv_dnums *b) {
  return a->input_batch == b->input_batch && a->input_feature == b->input_feature &&
         ints_eq(&a->input_spatial, &b->input_spatial) &&
         a->kernel_input_feature == b->kernel_input_feature &&
         a->kernel_output_feature == b->kernel_output_feature &&
         ints_eq(&a->kernel_spatial, &b->kernel_spatial) && a->output_batch == b->output_batch &&
         a->output_feature == b->output_feature && ints_eq(&a->output_spatial, &b->output_spatial);
}

static bool attrs_eq(eq *e, const hlo_attrs *a, const hlo_attrs *b) {
  if (a->has != b->has)
    return differ(e, "set of typed attributes differs (0x%08" PRIx32 " vs 0x%08" PRIx32 ")",
                  a->has, b->has);
  uint32_t h = a->has;
  if ((h & HLO_A_DIMENSIONS) && !ints_eq(&a->dimensions, &b->dimensions))
    return ATTR_DIFF("dimensions");
  if (h & HLO_A_SLICE) {
    bool same = a->nslice == b->nslice;
    for (int i = 0; same && i < a->nslice; i++)
      same = a->slice[i].start == b->slice[i].start && a->slice[i].limit == b->slice[i].limit &&
             a->slice[i].stride == b->slice[i].stride;
    if (!same)
      return ATTR_DIFF("slice");
  }
  if (h & HLO_A_PADDING) {
    bool same = a->npad == b->npad;
    for (int i = 0; same && i < a->npad; i++)
      same = a->pad[i].lo == b->pad[i].lo && a->pad[i].hi == b->pad[i].hi &&
             a->pad[i].interior == b->pad[i].interior;
    if (!same)
      return ATTR_DIFF("padding");
  }
  if ((h & HLO_A_WINDOW) && !window_eq(&a->window, &b->window))
    return ATTR_DIFF("window");
  if ((h & HLO_A_DIM_LABELS) && !conv_eq(&a->conv, &b->conv))
    return ATTR_DIFF("dim_labels");
  if ((h & HLO_A_DOT_DNUMS) &&
      !(ints_eq(&a->dot.lhs_batch, &b->dot.lhs_batch) &&
        ints_eq(&a->dot.rhs_batch, &b->dot.rhs_batch) &&
        ints_eq(&a->dot.lhs_contracting, &b->dot.lhs_contracting) &&
        ints_eq(&a->dot.rhs_contracting, &b->dot.rhs_contracting)))
    return ATTR_DIFF("dot dimension numbers");
  if ((h & HLO_A_FEATURE_GROUP_COUNT) && a->feature_group_count != b->feature_group_count)
    return ATTR_DIFF("feature_group_count");
  if ((h & HLO_A_BATCH_GROUP_COUNT) && a->batch_group_count != b->batch_group_count)
    return ATTR_DIFF("batch_group_count");
  if (h & HLO_A_GATHER_DNUMS) {
    const hlo_gather_dnums *x = &a->gather, *y = &b->gather;
    if (!(ints_eq(&x->offset_dims, &y->offset_dims) &&
          ints_eq(&x->collapsed_slice_dims, &y->collapsed_slice_dims) &&
          ints_eq(&x->start_index_map, &y->start_index_map) &&
          ints_eq(&x->operand_batching_dims, &y->operand_batching_dims) &&
          ints_eq(&x->start_indices_batching_dims, &y->start_indices_batching_dims) &&
          x->index_vector_dim == y->index_vector_dim))
      return ATTR_DIFF("gather dimension numbers");
  }
  if (h & HLO_A_SCATTER_DNUMS) {
    const hlo_scatter_dnums *x = &a->scatter, *y = &b->scatter;
    if (!(ints_eq(&x->update_window_dims, &y->update_window_dims) &&
          ints_eq(&x->inserted_window_dims, &y->inserted_window_dims) &&
          ints_eq(&x->scatter_dims_to_operand_dims, &y->scatter_dims_to_operand_dims) &&
          ints_eq(&x->input_batching_dims, &y->input_batching_dims) &&
          ints_eq(&x->scatter_indices_batching_dims, &y->scatter_indices_batching_dims) &&
          x->index_vector_dim == y->index_vector_dim))
      return ATTR_DIFF("scatter dimension numbers");
  }
  if ((h & HLO_A_SLICE_SIZES) && !ints_eq(&a->slice_sizes, &b->slice_sizes))
    return ATTR_DIFF("slice_sizes");
  if ((h & HLO_A_DIRECTION) && a->direction != b->direction)
    return ATTR_DIFF("direction");
  if ((h & HLO_A_CMP_TYPE) && a->cmp_type != b->cmp_type)
    return ATTR_DIFF("type");
  if ((h & HLO_A_INDEX) && a->index != b->index)
    return ATTR_DIFF("index");
  if ((h & HLO_A_IOTA_DIMENSION) && a->iota_dimension != b->iota_dimension)
    return ATTR_DIFF("iota_dimension");
  if ((h & HLO_A_DYNAMIC_SLICE_SIZES) &&
      !ints_eq(&a->dynamic_slice_sizes, &b->dynamic_slice_sizes))
    return ATTR_DIFF("dynamic_slice_sizes");
  if ((h & HLO_A_IS_STABLE) && a->is_stable != b->is_stable)
    return ATTR_DIFF("is_stable");
  if ((h & HLO_A_INDICES_ARE_SORTED) && a->indices_are_sorted != b->indices_are_sorted)
    return ATTR_DIFF("indices_are_sorted");
  if ((h & HLO_A_UNIQUE_INDICES) && a->unique_indices != b->unique_indices)
    return ATTR_DIFF("unique_indices");
  if ((h & HLO_A_USE_GLOBAL_DEVICE_IDS) && a->use_global_device_ids != b->use_global_device_ids)
    return ATTR_DIFF("use_global_device_ids");
  if (h & HLO_A_REPLICA_GROUPS) {
    const hlo_replica_groups *x = &a->replica_groups, *y = &b->replica_groups;
    bool same = x->ngroups == y->ngroups;
    for (int g = 0; same && g < x->ngroups; g++)
      same = ints_eq(&x->groups[g], &y->groups[g]);
    if (!same)
      return ATTR_DIFF("replica_groups");
  }
  if ((h & HLO_A_CHANNEL_ID) && a->channel_id != b->channel_id)
    return ATTR_DIFF("channel_id");
  if (h & HLO_A_OPERAND_PRECISION) {
    bool same = a->nprecision == b->nprecision;
    for (int i = 0; same && i < a->nprecision; i++)
      same = a->precision[i] == b->precision[i];
    if (!same)
      return ATTR_DIFF("operand_precision");
  }
  if ((h & HLO_A_DISTRIBUTION) && a->distribution != b->distribution)
    return ATTR_DIFF("distribution");
  if ((h & HLO_A_CUSTOM_CALL_TARGET) && !str_eq(a->custom_call_target, b->custom_call_target))
    return differ(e, "attribute custom_call_target differs (\"%s\" vs \"%s\")",
                  show(a->custom_call_target), show(b->custom_call_target));
  if ((h & HLO_A_KIND) && !str_eq(a->kind, b->kind))
    return differ(e, "attribute kind differs (%s vs %s)", show(a->kind), show(b->kind));
  if (h & HLO_A_SOURCE_TARGET_PAIRS) {
    bool same = a->npairs == b->npairs;
    for (int i = 0; same && i < a->npairs; i++)
      same = a->pairs[i].a == b->pairs[i].a && a->pairs[i].b == b->pairs[i].b;
    if (!same)
      return ATTR_DIFF("source_target_pairs");
  }
  if ((h & HLO_A_EXPONENT_BITS) && a->exponent_bits != b->exponent_bits)
    return ATTR_DIFF("exponent_bits");
  if ((h & HLO_A_MANTISSA_BITS) && a->mantissa_bits != b->mantissa_bits)
    return ATTR_DIFF("mantissa_bits");

  const hlo_calls *x = &a->calls, *y = &b->calls;
  static const char *const callee_names[] = {"to_apply", "calls", "condition", "body"};
  const hlo_computation *ca[] = {x->to_apply, x->calls, x->condition, x->body};
  const hlo_computation *cb[] = {y->to_apply, y->calls, y->condition, y->body};
  for (int i = 0; i < 4; i++)
    if (!str_eq(comp_name(ca[i]), comp_name(cb[i])))
      return differ(e, "attribute %s differs (%s vs %s)", callee_names[i], show(comp_name(ca[i])),
                    show(comp_name(cb[i])));
  if (x->nbranches != y->nbranches)
    return differ(e, "branch count differs (%d vs %d)", x->nbranches, y->nbranches);
  if (x->nbranches > 0 && x->true_false_form != y->true_false_form)
    return differ(e, "branches written as true/false_computation in one module only");
  for (int i = 0; i < x->nbranches; i++)
    if (!str_eq(comp_name(x->branches[i]), comp_name(y->branches[i])))
      return differ(e, "branch %d differs (%s vs %s)", i, show(comp_name(x->branches[i])),
                    show(comp_name(y->branches[i])));
  return true;
}

/* ---- instructions, computations, modules ------------------------------ */

static bool instr_eq(eq *e, const hlo_instr *a, const hlo_instr *b) {
  e->instr = a;
  if (!str_eq(a->name, b->name))
    return differ(e, "name differs ('%s' vs '%s')", show(a->name), show(b->name));
  if (a->op != b->op || a->async_wrapped != b->async_wrapped)
    return differ(e, "opcode differs (%s vs %s)", hlo_opcode_name(a->op), hlo_opcode_name(b->op));
  if (!shape_eq(e, "shape", &a->shape, &b->shape))
    return false;
  if (a->noperands != b->noperands)
    return differ(e, "operand count differs (%d vs %d)", a->noperands, b->noperands);
  for (int i = 0; i < a->noperands; i++)
    if (!str_eq(instr_name(a->operands[i]), instr_name(b->operands[i])))
      return differ(e, "operand %d differs ('%s' vs '%s')", i, show(instr_name(a->operands[i])),
                    show(instr_name(b->operands[i])));
  if (a->op == HLO_OP_PARAMETER && a->parameter_number != b->parameter_number)
    return differ(e, "parameter number differs (%" PRId64 " vs %" PRId64 ")",
                  a->parameter_number, b->parameter_number);
  if (a->op == HLO_OP_CONSTANT && !literal_eq(e, a->literal, b->literal, &a->shape, ""))
    return false;
  if (!attrs_eq(e, &a->attrs, &b->attrs))
    return false;
  if (!raw_eq(e, "raw attribute", a->nraw, a->raw, b->nraw, b->raw))
    return false;
  e->instr = NULL;
  return true;
}

static bool computation_eq(eq *e, const hlo_computation *a, const hlo_computation *b) {
  e->comp = a;
  e->instr = NULL;
  if (!str_eq(a->name, b->name))
    return differ(e, "name differs ('%s' vs '%s')", show(a->name), show(b->name));
  if (a->has_signature != b->has_signature)
    return differ(e, "signature present in one module only");
  if (a->has_signature) {
    if (a->nsig_params != b->nsig_params)
      return differ(e, "signature parameter count differs (%d vs %d)", a->nsig_params,
                    b->nsig_params);
    for (int i = 0; i < a->nsig_params; i++) {
      if (!str_eq(a->sig_param_names[i], b->sig_param_names[i]))
        return differ(e, "signature parameter %d name differs ('%s' vs '%s')", i,
                      show(a->sig_param_names[i]), show(b->sig_param_names[i]));
      if (!shape_eq(e, "signature parameter shape", &a->sig_param_shapes[i],
                    &b->sig_param_shapes[i]))
        return false;
    }
    if (!shape_eq(e, "signature result shape", &a->sig_result, &b->sig_result))
      return false;
  }
  if (!str_eq(a->execution_thread, b->execution_thread))
    return differ(e, "execution_thread differs (%s vs %s)", show(a->execution_thread),
                  show(b->execution_thread));
  if (a->ninstrs != b->ninstrs)
    return differ(e, "instruction count differs (%d vs %d)", a->ninstrs, b->ninstrs);
  for (int i = 0; i < a->ninstrs; i++)
    if (!instr_eq(e, a->instrs[i], b->instrs[i]))
      return false;
  if (!str_eq(instr_name(a->root), instr_name(b->root)))
    return differ(e, "root differs ('%s' vs '%s')", show(instr_name(a->root)),
                  show(instr_name(b->root)));
  e->comp = NULL;
  return true;
}

/* The entry as the printer sees it: the module's pointer, else the flag. */
static const hlo_computation *entry_of(const hlo_module *m) {
  if (m->entry)
    return m->entry;
  for (int i = 0; i < m->ncomps; i++)
    if (m->comps[i]->is_entry)
      return m->comps[i];
  return NULL;
}

bool hlo_module_equal(const hlo_module *a, const hlo_module *b, char *why, size_t why_len) {
  eq e = {why, why_len, NULL, NULL};
  if (why && why_len)
    why[0] = '\0';
  if (!a || !b) {
    if (a == b)
      return true;
    return differ(&e, "one module is NULL");
  }
  if (!str_eq(a->name, b->name))
    return differ(&e, "module name differs (%s vs %s)", show(a->name), show(b->name));
  if (!raw_eq(&e, "module attribute", a->nattrs, a->attrs, b->nattrs, b->attrs))
    return false;
  if (a->replica_count != b->replica_count)
    return differ(&e, "replica_count differs (%" PRId64 " vs %" PRId64 ")", a->replica_count,
                  b->replica_count);
  if (a->num_partitions != b->num_partitions)
    return differ(&e, "num_partitions differs (%" PRId64 " vs %" PRId64 ")", a->num_partitions,
                  b->num_partitions);
  if (a->is_scheduled != b->is_scheduled)
    return differ(&e, "is_scheduled differs (%d vs %d)", a->is_scheduled, b->is_scheduled);
  if (a->ncomps != b->ncomps)
    return differ(&e, "computation count differs (%d vs %d)", a->ncomps, b->ncomps);
  if (!str_eq(comp_name(entry_of(a)), comp_name(entry_of(b))))
    return differ(&e, "entry computation differs (%s vs %s)", show(comp_name(entry_of(a))),
                  show(comp_name(entry_of(b))));
  for (int i = 0; i < a->ncomps; i++)
    if (!computation_eq(&e, a->comps[i], b->comps[i]))
      return false;
  return true;
}
