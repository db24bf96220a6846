/* dev_output.c — the run's output buffers: one per array leaf of the
 * kernel root, found through tuple instructions, and the root's value
 * assembled from them after the run.  Apart from the stores because this
 * is the shape of the outputs, decided once, not what a step writes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dev_exec_internal.h"

/* The producer of an output that passes through tuple instructions: a
 * get-tuple-element of a tuple instruction is its operand's element (the
 * evaluator never materialises a tuple instruction, dev_elemental.h). */
static const hlo_instr *through_tuples(const hlo_instr *node) {
  for (int depth = 0; depth < 64 && node->op == HLO_OP_GET_TUPLE_ELEMENT && node->operands[0]->op == HLO_OP_TUPLE &&
                      node->attrs.index >= 0 && node->attrs.index < node->operands[0]->noperands;
       depth++)
    node = node->operands[0]->operands[node->attrs.index];
  return node;
}

static int add_output(exec *x, const hlo_instr *node, int sub, const hlo_shape *s, int *j) {
  x->out_node[*j] = node;
  x->out_sub[*j] = sub;
  bool same = sub < 0 && s->rank == x->f->rank;
  for (int d = 0; same && d < s->rank; d++)
    same = s->dims[d] == x->f->dims[d];
  x->out_tiled[*j] = same;
  char name[32];
  snprintf(name, sizeof name, "output %d", *j);
  if (dev_hbm_alloc(&x->out[*j], name, s->type, s->rank, s->dims) != 0)
    return dev_x_fail(x, "out of memory");
  dev_hbm_poison(&x->out[*j]);
  (*j)++;
  return 0;
}

/* One output buffer per array leaf of the root, depth first through
 * nested tuples (the order hlo_shape_leaf numbers them): a tuple
 * instruction's operands in turn; every leaf of a tuple-shaped op, which
 * the executor materialises whole. */
static int add_outputs(exec *x, const hlo_instr *node, int *j, int depth) {
  node = through_tuples(node);
  if (node->op == HLO_OP_TUPLE && depth < 64) {
    for (int k = 0; k < node->noperands; k++)
      if (add_outputs(x, node->operands[k], j, depth + 1) != 0)
        return -1;
    return 0;
  }
  if (node->shape.type != HLO_TUPLE)
    return add_output(x, node, -1, &node->shape, j);
  int n = hlo_shape_leaf_count(&node->shape);
  for (int k = 0; k < n; k++)
    if (add_output(x, node, k, hlo_shape_leaf(&node->shape, k), j) != 0)
      return -1;
  return 0;
}

int dev_x_setup_outputs(exec *x) {
  const hlo_instr *root = x->f->comp->root;
  int n = hlo_shape_leaf_count(&root->shape);
  x->nout = 0;
  x->out = calloc((size_t)(n ? n : 1), sizeof *x->out);
  x->out_node = calloc((size_t)(n ? n : 1), sizeof *x->out_node);
  x->out_sub = calloc((size_t)(n ? n : 1), sizeof *x->out_sub);
  x->out_tiled = calloc((size_t)(n ? n : 1), sizeof *x->out_tiled);
  if (!x->out || !x->out_node || !x->out_sub || !x->out_tiled)
    return dev_x_fail(x, "out of memory");
  int j = 0;
  int rc = add_outputs(x, root, &j, 0);
  x->nout = j; /* the buffers teardown frees */
  if (rc == 0 && j != n)
    return dev_x_fail(x, "%s: the root's %d leaves do not match its shape's %d", x->f->name, j, n);
  return rc;
}

/* The shape of output leaf j. */
const hlo_shape *dev_x_out_shape(const exec *x, int j) {
  const hlo_shape *s = &x->out_node[j]->shape;
  return x->out_sub[j] < 0 ? s : hlo_shape_leaf(s, x->out_sub[j]);
}

/* The root's value from its leaves (each reference taken over), nested as
 * the root's shape is. */
hlo_value *dev_x_assemble(const hlo_shape *s, hlo_value **leaves, int *next) {
  if (s->type != HLO_TUPLE)
    return leaves[(*next)++];
  hlo_value **el = calloc((size_t)(s->ntuple ? s->ntuple : 1), sizeof *el);
  if (!el)
    return NULL;
  int k = 0;
  for (; k < s->ntuple; k++)
    if (!(el[k] = dev_x_assemble(&s->elems[k], leaves, next)))
      break;
  hlo_value *t = k == s->ntuple ? hlo_value_tuple(s->ntuple, el) : NULL;
  if (!t)
    for (int i = 0; i < k; i++)
      hlo_value_unref(el[i]);
  free(el);
  return t;
}
