/* dev_exec_variadic.c — see dev_exec_variadic.h. */
#include "dev_exec_variadic.h"

#include <stdlib.h>
#include <string.h>

#include "dev_lane.h"
#include "hlo/hlo_dtype.h"

struct dev_vred {
  int n;
  hlo_etype t[DEV_VRED_MAX];
  dev_lane *prog;
};

static bool same_dims(const hlo_shape *a, int rank, const int64_t *dims) {
  if (a->type == HLO_TUPLE || a->rank != rank)
    return false;
  for (int d = 0; d < rank; d++)
    if (a->dims[d] != dims[d])
      return false;
  return true;
}

/* Every reader of the hero is a get-tuple-element, and every reader of
 * those is the root tuple (or the get-tuple-element is the root); each such
 * element has the fusion's output dims. */
static bool plain_epilogue(const dev_fusion *f) {
  const hlo_computation *c = f->comp;
  const hlo_instr *h = f->hero;
  if (h == c->root)
    return false;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    for (int k = 0; k < ins->noperands; k++) {
      const hlo_instr *o = ins->operands[k];
      if (o == h && ins->op != HLO_OP_GET_TUPLE_ELEMENT)
        return false;
      if (o != h && o->op == HLO_OP_GET_TUPLE_ELEMENT && o->operands[0] == h &&
          !(ins == c->root && ins->op == HLO_OP_TUPLE))
        return false;
    }
    if (ins->op == HLO_OP_GET_TUPLE_ELEMENT && ins->operands[0] == h &&
        !same_dims(&ins->shape, f->rank, f->dims))
      return false;
  }
  return true;
}

/* The structural conditions of dev_vred_native, and the types. */
static int shape_of(const dev_fusion *f, hlo_etype *t) {
  const hlo_instr *h = f->hero;
  if (!h || f->kind != DEV_HERO_REDUCE || h->op != HLO_OP_REDUCE || f->k_total <= 0 || h->shape.type != HLO_TUPLE)
    return 0;
  int n = h->shape.ntuple;
  if (n < 2 || n > DEV_VRED_MAX || h->noperands != 2 * n)
    return 0;
  const hlo_shape *s0 = &h->operands[0]->shape;
  if (s0->type == HLO_TUPLE)
    return 0;
  for (int j = 0; j < n; j++) {
    const hlo_shape *o = &h->operands[j]->shape, *init = &h->operands[n + j]->shape, *r = &h->shape.elems[j];
    if (!same_dims(o, s0->rank, s0->dims) || init->type == HLO_TUPLE || init->rank != 0 || init->type != o->type ||
        r->type != o->type || !same_dims(r, h->shape.elems[0].rank, h->shape.elems[0].dims))
      return 0;
    hlo_eclass k = hlo_etype_class(o->type);
    /* values a dev_slot holds, in at most 8 host bytes */
    if (k == HLO_CLASS_COMPLEX || k == HLO_CLASS_OTHER || hlo_etype_host_size(o->type) > 8)
      return 0;
    t[j] = o->type;
  }
  return plain_epilogue(f) ? n : 0;
}

/* The reducer as a lane program of 2n parameters (accumulators first)
 * and n results of the operands' types. */
static dev_lane *compile(const dev_fusion *f, int n, const hlo_etype *t) {
  const hlo_computation *c = f->hero->attrs.calls.to_apply;
  char why[160];
  if (!c || c->nparams != 2 * n)
    return NULL;
  for (int j = 0; j < 2 * n; j++)
    if (!c->params[j] || c->params[j]->shape.type != t[j % n])
      return NULL;
  dev_lane *p = dev_lane_compile(c, why, sizeof why);
  if (p && dev_lane_nresults(p) != n) {
    dev_lane_free(p);
    return NULL;
  }
  return p;
}

bool dev_vred_native(const dev_fusion *f) {
  hlo_etype t[DEV_VRED_MAX];
  int n = shape_of(f, t);
  if (!n)
    return false;
  dev_lane *p = compile(f, n, t);
  dev_lane_free(p);
  return p != NULL;
}

dev_vred *dev_vred_new(const dev_fusion *f) {
  hlo_etype t[DEV_VRED_MAX];
  int n = shape_of(f, t);
  if (!n)
    return NULL;
  dev_vred *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->n = n;
  memcpy(v->t, t, sizeof t[0] * (size_t)n);
  v->prog = compile(f, n, t);
  if (!v->prog) {
    dev_vred_free(v);
    return NULL;
  }
  return v;
}

void dev_vred_free(dev_vred *v) {
  if (!v)
    return;
  dev_lane_free(v->prog);
  free(v);
}

int dev_vred_count(const dev_vred *v) { return v->n; }
hlo_etype dev_vred_type(const dev_vred *v, int j) { return v->t[j]; }

void dev_vred_step(dev_vred *v, int64_t m, dev_slot *const *acc, const dev_slot *x) {
  int n = v->n;
  dev_slot args[2 * DEV_VRED_MAX];
  for (int64_t i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) {
      args[j] = acc[i][j];
      args[n + j] = x[i * n + j];
    }
    dev_lane_run(v->prog, args, acc[i]);
  }
}
