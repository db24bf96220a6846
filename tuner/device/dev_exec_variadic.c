/* dev_exec_variadic.c — see dev_exec_variadic.h. */
#include "dev_exec_variadic.h"

#include <stdlib.h>
#include <string.h>

#include "eval_reduce_prog.h"
#include "hlo_dtype.h"

struct dev_vred {
  int n;
  hlo_etype t[DEV_VRED_MAX];
  chk_rprog *prog;
  chk_rprog_lanes *lanes;
  int64_t iden[CHK_RPROG_LANES];               /* lane i reads element i */
  uint64_t buf[2 * DEV_VRED_MAX][CHK_RPROG_LANES]; /* host-typed arguments */
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

static chk_rprog *compile(const dev_fusion *f, int n, const hlo_etype *t) {
  hlo_etype argt[2 * DEV_VRED_MAX];
  for (int j = 0; j < n; j++)
    argt[j] = argt[n + j] = t[j];
  /* the device's reference calls evaluate with device numerics (dev_elemental.c) */
  chk_eval ev;
  memset(&ev, 0, sizeof ev);
  ev.o.replicas = 1;
  ev.o.emulate_device = 1;
  return chk_rprog_compile(&ev, f->hero->attrs.calls.to_apply, 2 * n, argt, n, t);
}

bool dev_vred_native(const dev_fusion *f) {
  hlo_etype t[DEV_VRED_MAX];
  int n = shape_of(f, t);
  if (!n)
    return false;
  chk_rprog *p = compile(f, n, t);
  chk_rprog_free(p);
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
  v->lanes = v->prog ? chk_rprog_lanes_new(v->prog) : NULL;
  if (!v->lanes) {
    dev_vred_free(v);
    return NULL;
  }
  for (int i = 0; i < CHK_RPROG_LANES; i++)
    v->iden[i] = i;
  return v;
}

void dev_vred_free(dev_vred *v) {
  if (!v)
    return;
  chk_rprog_lanes_free(v->lanes);
  chk_rprog_free(v->prog);
  free(v);
}

int dev_vred_count(const dev_vred *v) { return v->n; }
hlo_etype dev_vred_type(const dev_vred *v, int j) { return v->t[j]; }

void dev_vred_step(dev_vred *v, int64_t m, dev_slot *const *acc, const dev_slot *x) {
  int n = v->n;
  for (int64_t at = 0; at < m; at += CHK_RPROG_LANES) {
    int l = m - at < CHK_RPROG_LANES ? (int)(m - at) : CHK_RPROG_LANES;
    for (int j = 0; j < n; j++) {
      for (int i = 0; i < l; i++) {
        dev_slot_to_host(v->t[j], acc[at + i][j], v->buf[j], i);
        dev_slot_to_host(v->t[j], x[(at + i) * n + j], v->buf[n + j], i);
      }
      chk_rprog_load(v->lanes, j, v->buf[j], v->iden, l);
      chk_rprog_load(v->lanes, n + j, v->buf[n + j], v->iden, l);
    }
    chk_rprog_run(v->lanes, l);
    for (int j = 0; j < n; j++) {
      chk_rprog_store_result(v->lanes, j, v->buf[j], v->iden, l);
      for (int i = 0; i < l; i++)
        dev_slot_from_host(v->t[j], v->buf[j], i, &acc[at + i][j]);
    }
  }
}
