/* eval_reduce_prog.c — reducer computations as flat lane programs (see
 * eval_reduce_prog.h). */
#include "eval_reduce_prog.h"

#include <stdlib.h>
#include <string.h>

#include "eval_fuse.h"
#include "hlo/hlo_dtype.h"

typedef struct rslot {
  hlo_etype t;   /* element type */
  size_t csz;    /* bytes per lane in compute representation */
  size_t ssz;    /* bytes per element in storage */
  bool narrow;   /* narrow float: float lanes, 8/16-bit storage */
  bool konst;    /* constant: kval holds its lane value */
  _Alignas(16) unsigned char kval[16]; /* read and written as float, double... */
} rslot;

typedef struct rnode {
  const hlo_instr *ins;
  int out;       /* slot written */
  int in[3];     /* operand slots */
} rnode;

struct chk_rprog {
  int nargs, nres, nslots, nnodes;
  rslot *slots;  /* args first, then one per evaluated instruction */
  rnode *nodes;  /* in instruction order */
  int *res;      /* slot of each result */
  bool emulate;
};

struct chk_rprog_lanes {
  const chk_rprog *p;
  unsigned char **buf; /* per slot, CHK_RPROG_LANES lanes */
  unsigned char *stage; /* feedback staging: nres * CHK_RPROG_LANES * 16 */
};

static bool narrow_float(hlo_etype t) { return hlo_etype_is_float(t) && chk_ew_compute_type(t) != t; }

/* Storage -> compute representation of one element (eval_fuse.c's decode). */
static void decode1(hlo_etype t, const void *src, float *dst) {
  uint16_t h;
  if (t == HLO_BF16) {
    memcpy(&h, src, 2);
    *dst = hlo_bf16_to_f32(h);
  } else if (t == HLO_F16) {
    memcpy(&h, src, 2);
    *dst = hlo_f16_to_f32(h);
  } else {
    hlo_convert_array(t, src, HLO_F32, dst, 1);
  }
}

/* Compute -> storage representation of one element (eval_fuse.c's encode). */
static void encode1(hlo_etype t, const float *src, void *dst) {
  uint16_t h;
  if (t == HLO_BF16) {
    h = hlo_f32_to_bf16(*src);
    memcpy(dst, &h, 2);
  } else if (t == HLO_F16) {
    h = hlo_f32_to_f16(*src);
    memcpy(dst, &h, 2);
  } else {
    hlo_convert_array(HLO_F32, src, t, dst, 1);
  }
}

static bool scalar_value_type(const hlo_shape *s) {
  return s->type != HLO_TUPLE && s->rank == 0 && s->type > HLO_INVALID && s->type < HLO_ETYPE_COUNT &&
         hlo_etype_class(s->type) != HLO_CLASS_OTHER;
}

static void set_slot(rslot *s, hlo_etype t) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->narrow = narrow_float(t);
  s->csz = hlo_etype_host_size(chk_ew_compute_type(t));
  s->ssz = hlo_etype_host_size(t);
}

void chk_rprog_free(chk_rprog *p) {
  if (!p)
    return;
  free(p->slots);
  free(p->nodes);
  free(p->res);
  free(p);
}

chk_rprog *chk_rprog_compile(const chk_eval *ev, const hlo_computation *c, int nargs, const hlo_etype *argt,
                             int nres, const hlo_etype *rest) {
  if (!c || !c->root || c->nparams != nargs || nres < 1 || c->ninstrs <= 0)
    return NULL;
  int ni = c->ninstrs;
  chk_rprog *p = calloc(1, sizeof *p);
  int *slot_of = malloc(sizeof *slot_of * (size_t)ni);
  bool *read = calloc((size_t)ni, 1);
  if (p) {
    p->slots = calloc((size_t)(nargs + ni), sizeof *p->slots);
    p->nodes = calloc((size_t)ni, sizeof *p->nodes);
    p->res = calloc((size_t)nres, sizeof *p->res);
  }
  bool ok = p && slot_of && read && p->slots && p->nodes && p->res;
  if (ok) {
    p->nargs = nargs;
    p->nres = nres;
    p->emulate = ev->o.emulate_device;
    for (int k = 0; k < nargs; k++)
      set_slot(&p->slots[k], argt[k]);
    p->nslots = nargs;
    for (int i = 0; i < ni; i++) {
      slot_of[i] = -1;
      for (int k = 0; k < c->instrs[i]->noperands; k++)
        read[c->instrs[i]->operands[k]->index] = true;
    }
  }
  /* The evaluator evaluates every instruction that is read or is the root
   * (eval.c skips only unread ones); so do we, or we refuse. */
  for (int i = 0; ok && i < ni; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (!read[i] && ins != c->root)
      continue;
    if (ins->op == HLO_OP_TUPLE) {
      ok = ins == c->root;
      continue;
    }
    if (!scalar_value_type(&ins->shape)) {
      ok = false;
      break;
    }
    if (ins->op == HLO_OP_PARAMETER) {
      int64_t k = ins->parameter_number;
      ok = k >= 0 && k < nargs && argt[k] == ins->shape.type;
      if (ok)
        slot_of[i] = (int)k;
      continue;
    }
    rslot *s = &p->slots[p->nslots];
    if (ins->op == HLO_OP_CONSTANT) {
      char why[128];
      hlo_value *v = ins->literal ? hlo_value_from_literal(&ins->shape, ins->literal, why, sizeof why) : NULL;
      ok = v && v->type == ins->shape.type && v->count == 1;
      if (ok) {
        set_slot(s, v->type);
        s->konst = true;
        if (s->narrow)
          decode1(s->t, v->data, (float *)(void *)s->kval);
        else
          memcpy(s->kval, v->data, s->csz);
        slot_of[i] = p->nslots++;
      }
      hlo_value_unref(v);
      continue;
    }
    if (chk_op_lookup(ins->op) != chk_op_elementwise || ins->op == HLO_OP_BITCAST_CONVERT ||
        ins->noperands > 3 || chk_ew_unsupported(ins) != NULL) {
      ok = false;
      break;
    }
    rnode *nd = &p->nodes[p->nnodes];
    nd->ins = ins;
    for (int k = 0; ok && k < ins->noperands; k++) {
      const hlo_instr *o = ins->operands[k];
      nd->in[k] = slot_of[o->index];
      /* operands must be scalars of the type the kernel is told */
      ok = nd->in[k] >= 0 && p->slots[nd->in[k]].t == o->shape.type;
    }
    if (!ok)
      break;
    set_slot(s, ins->shape.type);
    nd->out = slot_of[i] = p->nslots++;
    p->nnodes++;
  }
  /* The results the call site expects. */
  const hlo_instr *root = c->root;
  if (ok && root->op == HLO_OP_TUPLE) {
    ok = root->noperands == nres;
    for (int j = 0; ok && j < nres; j++) {
      int s = slot_of[root->operands[j]->index];
      ok = s >= 0 && p->slots[s].t == rest[j];
      p->res[j] = s;
    }
  } else if (ok) {
    int s = slot_of[root->index];
    ok = nres == 1 && s >= 0 && p->slots[s].t == rest[0];
    p->res[0] = s;
  }
  free(slot_of);
  free(read);
  if (!ok) {
    chk_rprog_free(p);
    return NULL;
  }
  return p;
}

chk_rprog_lanes *chk_rprog_lanes_new(const chk_rprog *p) {
  chk_rprog_lanes *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  l->p = p;
  l->buf = calloc((size_t)p->nslots, sizeof *l->buf);
  l->stage = aligned_alloc(64, (size_t)p->nres * CHK_RPROG_LANES * 16);
  bool ok = l->buf && l->stage;
  for (int s = 0; ok && s < p->nslots; s++) {
    const rslot *rs = &p->slots[s];
    l->buf[s] = aligned_alloc(64, CHK_RPROG_LANES * 16);
    ok = l->buf[s] != NULL;
    if (ok && rs->konst)
      for (int i = 0; i < CHK_RPROG_LANES; i++)
        memcpy(l->buf[s] + (size_t)i * rs->csz, rs->kval, rs->csz);
  }
  if (!ok) {
    chk_rprog_lanes_free(l);
    return NULL;
  }
  return l;
}

void chk_rprog_lanes_free(chk_rprog_lanes *l) {
  if (!l)
    return;
  for (int s = 0; l->buf && s < l->p->nslots; s++)
    free(l->buf[s]);
  free(l->buf);
  free(l->stage);
  free(l);
}

void chk_rprog_load(chk_rprog_lanes *l, int k, const void *data, const int64_t *offs, int m) {
  const rslot *s = &l->p->slots[k];
  unsigned char *dst = l->buf[k];
  const unsigned char *src = data;
  if (s->narrow) {
    float *f = (float *)(void *)dst;
    for (int i = 0; i < m; i++)
      decode1(s->t, src + (offs ? (size_t)offs[i] * s->ssz : 0), &f[i]);
    return;
  }
  size_t z = s->csz;
  if (!offs) {
    for (int i = 0; i < m; i++)
      memcpy(dst + (size_t)i * z, src, z);
    return;
  }
  switch (z) { /* typed gathers for the common widths */
  case 4:
    for (int i = 0; i < m; i++)
      ((uint32_t *)(void *)dst)[i] = ((const uint32_t *)(const void *)src)[offs[i]];
    return;
  case 8:
    for (int i = 0; i < m; i++)
      ((uint64_t *)(void *)dst)[i] = ((const uint64_t *)(const void *)src)[offs[i]];
    return;
  default:
    for (int i = 0; i < m; i++)
      memcpy(dst + (size_t)i * z, src + (size_t)offs[i] * z, z);
    return;
  }
}

void chk_rprog_run(chk_rprog_lanes *l, int m) {
  const chk_rprog *p = l->p;
  for (int j = 0; j < p->nnodes; j++) {
    const rnode *nd = &p->nodes[j];
    const void *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < nd->ins->noperands; k++)
      in[k] = l->buf[nd->in[k]];
    chk_ew_block(nd->ins, in, l->buf[nd->out], m, p->emulate);
    const rslot *s = &p->slots[nd->out];
    if (s->narrow) { /* what storing and reloading the value does */
      float *f = (float *)(void *)l->buf[nd->out];
      unsigned char st[2];
      for (int i = 0; i < m; i++) {
        encode1(s->t, &f[i], st);
        decode1(s->t, st, &f[i]);
      }
    }
  }
}

void chk_rprog_feedback(chk_rprog_lanes *l, int m, const uint8_t *keep) {
  const chk_rprog *p = l->p;
  size_t per = CHK_RPROG_LANES * 16;
  /* staged first: a result may be an argument's own buffer */
  for (int j = 0; j < p->nres; j++)
    memcpy(l->stage + (size_t)j * per, l->buf[p->res[j]], (size_t)m * p->slots[j].csz);
  for (int j = 0; j < p->nres; j++) {
    size_t z = p->slots[j].csz;
    if (!keep) {
      memcpy(l->buf[j], l->stage + (size_t)j * per, (size_t)m * z);
      continue;
    }
    for (int i = 0; i < m; i++)
      if (keep[i])
        memcpy(l->buf[j] + (size_t)i * z, l->stage + (size_t)j * per + (size_t)i * z, z);
  }
}

static void store_slot(const chk_rprog_lanes *l, int s, void *data, const int64_t *offs, int m) {
  const rslot *rs = &l->p->slots[s];
  unsigned char *dst = data;
  const unsigned char *src = l->buf[s];
  for (int i = 0; i < m; i++) {
    unsigned char *d = dst + (size_t)offs[i] * rs->ssz;
    if (rs->narrow)
      encode1(rs->t, (const float *)(const void *)src + i, d);
    else
      memcpy(d, src + (size_t)i * rs->csz, rs->csz);
  }
}

void chk_rprog_store_arg(const chk_rprog_lanes *l, int k, void *data, const int64_t *offs, int m) {
  store_slot(l, k, data, offs, m);
}

void chk_rprog_store_result(const chk_rprog_lanes *l, int j, void *data, const int64_t *offs, int m) {
  store_slot(l, l->p->res[j], data, offs, m);
}
