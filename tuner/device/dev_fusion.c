/* dev_fusion.c — finding the kernel, its hero and its iteration space. */
#include "dev_fusion.h"

#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lower.h"

static const char *const hero_names[] = {
    "loop", "reduce", "dot", "convolution", "reduce-window", "scatter", "sort",
    "gather", "dynamic-slice", "dynamic-update-slice", "collective",
};

const char *dev_hero_name(dev_hero_kind k) {
  return (unsigned)k < sizeof hero_names / sizeof *hero_names ? hero_names[k] : "invalid";
}

static int launch_only(hlo_opcode op) {
  switch (op) {
  case HLO_OP_PARAMETER: case HLO_OP_CONSTANT: case HLO_OP_TUPLE: case HLO_OP_GET_TUPLE_ELEMENT:
  case HLO_OP_BITCAST: case HLO_OP_COPY:
    return 1;
  default:
    return 0;
  }
}

static int hero_kind(hlo_opcode op, dev_hero_kind *k) {
  switch (op) {
  case HLO_OP_REDUCE: *k = DEV_HERO_REDUCE; return 1;
  case HLO_OP_DOT: *k = DEV_HERO_DOT; return 1;
  case HLO_OP_CONVOLUTION: *k = DEV_HERO_CONV; return 1;
  case HLO_OP_REDUCE_WINDOW: *k = DEV_HERO_REDUCE_WINDOW; return 1;
  case HLO_OP_SCATTER: *k = DEV_HERO_SCATTER; return 1;
  case HLO_OP_SORT: *k = DEV_HERO_SORT; return 1;
  case HLO_OP_GATHER: *k = DEV_HERO_GATHER; return 1;
  case HLO_OP_DYNAMIC_SLICE: *k = DEV_HERO_DYNAMIC_SLICE; return 1;
  case HLO_OP_DYNAMIC_UPDATE_SLICE: *k = DEV_HERO_DYNAMIC_UPDATE_SLICE; return 1;
  case HLO_OP_ALL_GATHER: case HLO_OP_ALL_REDUCE: case HLO_OP_REDUCE_SCATTER:
  case HLO_OP_ALL_TO_ALL: case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_COLLECTIVE_BROADCAST:
  case HLO_OP_RAGGED_ALL_TO_ALL:
    *k = DEV_HERO_COLLECTIVE; return 1;
  default:
    return 0;
  }
}

static int is_transcendental(hlo_opcode op) {
  switch (op) {
  case HLO_OP_EXP: case HLO_OP_EXPM1: case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC:
  case HLO_OP_TANH: case HLO_OP_SQRT: case HLO_OP_RSQRT: case HLO_OP_CBRT: case HLO_OP_SINE:
  case HLO_OP_COSINE: case HLO_OP_TAN: case HLO_OP_ERF: case HLO_OP_POWER: case HLO_OP_ATAN2:
    return 1;
  default:
    return 0;
  }
}

/* Sizes come from the HLO text and may be anything int64 holds; a kernel
 * whose bytes, reduction length or flops do not fit in int64 could never
 * run, so every sum and product below is checked, and such a kernel is
 * refused (too_big) instead of overflowing. */
static bool mul_ok(int64_t *acc, int64_t x) { return !__builtin_mul_overflow(*acc, x, acc); }
static bool add_ok(int64_t *acc, int64_t x) { return !__builtin_add_overflow(*acc, x, acc); }

static int too_big(hlo_error *err, const hlo_instr *ins, const char *what) {
  return hlo_error_set(err, ins->line, ins->col, "%s: the kernel is too large (%s beyond 2^63)", ins->name, what);
}

/* Elements of an array shape, or -1 past INT64_MAX (hlo_shape_elements
 * saturates there). */
static int64_t elements(const hlo_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++)
    if (!mul_ok(&n, s->dims[i] < 0 ? 0 : s->dims[i]))
      return -1;
  return n;
}

/* Bytes of a shape, or -1 when they do not fit in int64. */
static int64_t shape_bytes(const hlo_shape *s) {
  int64_t b = 0;
  if (s->type == HLO_TUPLE) {
    for (int i = 0; i < s->ntuple; i++) {
      int64_t e = shape_bytes(&s->elems[i]);
      if (e < 0 || !add_ok(&b, e))
        return -1;
    }
    return b;
  }
  b = elements(s);
  if (b < 0 || !mul_ok(&b, hlo_etype_bits(s->type)) || !add_ok(&b, 7))
    return -1;
  return b / 8;
}

/* The product of l's dims listed in d (out-of-range entries skipped), or
 * -1 when it does not fit. */
static int64_t dims_product(const hlo_shape *l, const hlo_ints *d) {
  int64_t k = 1;
  for (int i = 0; i < d->n; i++)
    if (d->v[i] >= 0 && d->v[i] < l->rank && !mul_ok(&k, l->dims[d->v[i]]))
      return -1;
  return k;
}

/* Breadth-first from the root back through operands: the first hero found
 * is the one nearest the output. */
static const hlo_instr *find_hero(const hlo_computation *c, dev_hero_kind *kind) {
  const hlo_instr *queue[4096];
  unsigned char seen[4096 / 8 + 1];
  if (c->ninstrs > 4096) {
    /* Huge kernels: fall back to a reverse scan of program order. */
    for (int i = c->ninstrs - 1; i >= 0; i--)
      if (hero_kind(c->instrs[i]->op, kind))
        return c->instrs[i];
    return NULL;
  }
  memset(seen, 0, sizeof seen);
  int head = 0, tail = 0;
  queue[tail++] = c->root;
  seen[c->root->index / 8] |= (unsigned char)(1u << (c->root->index % 8));
  while (head < tail) {
    const hlo_instr *ins = queue[head++];
    if (hero_kind(ins->op, kind))
      return ins;
    for (int k = 0; k < ins->noperands; k++) {
      const hlo_instr *o = ins->operands[k];
      if (seen[o->index / 8] & (1u << (o->index % 8)))
        continue;
      seen[o->index / 8] |= (unsigned char)(1u << (o->index % 8));
      queue[tail++] = o;
    }
  }
  return NULL;
}

int dev_fusion_analyze(const hlo_module *m, dev_fusion *f, hlo_error *err) {
  memset(f, 0, sizeof *f);
  f->m = m;
  f->replicas = m->replica_count > 1 && m->replica_count <= 64 ? (int)m->replica_count : 1;
  const hlo_computation *e = m->entry;
  if (!e || !e->root)
    return hlo_error_set(err, 0, 0, "module has no entry computation");
  const hlo_instr *launch = NULL;
  int others = 0;
  for (int i = 0; i < e->ninstrs; i++) {
    const hlo_instr *ins = e->instrs[i];
    if (ins->op == HLO_OP_FUSION) {
      others += launch != NULL;
      launch = ins;
    } else if (!launch_only(ins->op)) {
      others++;
    }
  }
  if (launch && others == 0 && launch->attrs.calls.calls) {
    f->launch = launch;
    f->comp = launch->attrs.calls.calls;
  } else {
    f->comp = e;
  }
  const hlo_computation *c = f->comp;
  f->name = c->name;
  f->out = hlo_shape_leaf(&c->root->shape, 0);
  if (!f->out)
    return hlo_error_set(err, c->root->line, c->root->col, "kernel %s has an empty tuple as its output", c->name);
  if (f->out->rank > DEV_MAX_RANK)
    return hlo_error_set(err, c->root->line, c->root->col, "output rank %d exceeds the device's limit of %d",
                         f->out->rank, DEV_MAX_RANK);
  f->rank = f->out->rank;
  for (int i = 0; i < f->rank; i++)
    f->dims[i] = f->out->dims[i];
  f->out_type = f->out->type;
  f->acc_type = f->out_type;
  f->hero = find_hero(c, &f->kind);
  if (!f->hero)
    f->kind = DEV_HERO_LOOP;

  if (f->kind == DEV_HERO_REDUCE && f->hero->noperands >= 1) {
    f->k_total = dims_product(&f->hero->operands[0]->shape, &f->hero->attrs.dimensions);
    const hlo_shape *r = hlo_shape_leaf(&f->hero->shape, 0);
    if (r)
      f->acc_type = r->type;
  } else if (f->kind == DEV_HERO_DOT && f->hero->noperands >= 2) {
    f->k_total = dims_product(&f->hero->operands[0]->shape, &f->hero->attrs.dot.lhs_contracting);
    f->acc_type = f->hero->shape.type;
  }
  if (f->k_total < 0)
    return too_big(err, f->hero, "reduction length");

  for (int i = 0; i < c->nparams; i++) {
    int64_t b = c->params[i] ? shape_bytes(&c->params[i]->shape) : 0;
    if (b < 0 || !add_ok(&f->in_bytes, b))
      return too_big(err, c->params[i], "input bytes");
  }
  f->out_bytes = shape_bytes(&c->root->shape);
  if (f->out_bytes < 0)
    return too_big(err, c->root, "output bytes");
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    const hlo_shape *s = hlo_shape_leaf(&ins->shape, 0);
    int64_t n = s ? elements(s) : 0, flops = 0;
    bool ok = n >= 0;
    if (ins->op == HLO_OP_DOT && ins->noperands >= 2) {
      int64_t k = dims_product(&ins->operands[0]->shape, &ins->attrs.dot.lhs_contracting);
      flops = 2;
      ok = ok && k >= 0 && mul_ok(&flops, n) && mul_ok(&flops, k);
    } else if (ins->op == HLO_OP_CONVOLUTION && ins->noperands >= 2) {
      const hlo_shape *kr = &ins->operands[1]->shape;
      int64_t kin = elements(kr);
      int64_t of = ins->attrs.conv.kernel_output_feature;
      int64_t outf = (of >= 0 && of < kr->rank && kr->dims[of]) ? kr->dims[of] : 1;
      flops = 2;
      ok = ok && kin >= 0 && mul_ok(&flops, n) && mul_ok(&flops, kin / outf);
    } else if (ins->op == HLO_OP_REDUCE && ins->noperands >= 1) {
      flops = elements(&ins->operands[0]->shape);
      ok = ok && flops >= 0;
    } else if (ins->op != HLO_OP_PARAMETER && ins->op != HLO_OP_CONSTANT) {
      flops = n;
    }
    if (!ok || !add_ok(&f->flops, flops) ||
        (is_transcendental(ins->op) && !add_ok(&f->transcendentals, n)))
      return too_big(err, ins, "element count or flops");
  }
  return 0;
}

int dev_fusion_prepare(dev_fusion *f) {
  dev_fusion_release(f);
  /* The kinds first: the plan's analyses read them. */
  uint8_t *kinds = dev_elem_classify_all(f->comp);
  if (!kinds)
    return -1;
  f->kinds = kinds;
  dev_lower_plan *lower = dev_lower_plan_new(f);
  if (!lower) {
    dev_fusion_release(f);
    return -1;
  }
  f->lower = lower;
  if (!(f->spares = dev_elem_spares_new())) {
    dev_fusion_release(f);
    return -1;
  }
  return 0;
}

void dev_fusion_release(dev_fusion *f) {
  /* f owns what it points to (dev_fusion_prepare); the const is for the
   * candidates that only read it. */
  free((void *)f->kinds);
  dev_lower_plan_free((dev_lower_plan *)f->lower);
  dev_elem_spares_free(f->spares);
  f->kinds = NULL;
  f->lower = NULL;
  f->spares = NULL;
}
