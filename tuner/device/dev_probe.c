/* dev_probe.c — per-instruction summaries of an instrumented run
 * (dev_probe.h). */
#include "dev_probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_index.h"

/* One instruction's record.  The running sums are in double (Welford), so
 * that folding elements tile by tile in the schedule's order gives the
 * same summary whatever that order is, up to the last float bit. */
typedef struct probe_slot {
  hlo_value *val;     /* produced elements, in the instruction's type */
  uint8_t *seen;      /* per element: folded already */
  int64_t observed, nan, inf, finite;
  double min, max, mean, m2;
} probe_slot;

struct dev_probe {
  const hlo_computation *c;
  probe_slot *s;      /* per instruction index */
};

dev_probe *dev_probe_new(const hlo_computation *c) {
  dev_probe *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->c = c;
  p->s = calloc((size_t)(c->ninstrs ? c->ninstrs : 1), sizeof *p->s);
  if (!p->s) {
    free(p);
    return NULL;
  }
  return p;
}

void dev_probe_free(dev_probe *p) {
  if (!p)
    return;
  for (int i = 0; i < p->c->ninstrs; i++) {
    hlo_value_unref(p->s[i].val);
    free(p->s[i].seen);
  }
  free(p->s);
  free(p);
}

static bool probed_type(hlo_etype t) {
  hlo_eclass k = hlo_etype_class(t);
  return k == HLO_CLASS_FLOAT || k == HLO_CLASS_SINT || k == HLO_CLASS_UINT || k == HLO_CLASS_PRED ||
         t == HLO_C64 || t == HLO_C128;
}

/* The record of ins, allocated on first use; NULL when ins is not probed
 * (a tuple, a type without values, another computation's instruction) or
 * out of memory (the summary then stays empty: the probe never fails the
 * run it watches). */
static probe_slot *slot_of(dev_probe *p, const hlo_instr *ins) {
  if (!p || ins->index < 0 || ins->index >= p->c->ninstrs || p->c->instrs[ins->index] != ins)
    return NULL;
  if (ins->shape.type == HLO_TUPLE || !probed_type(ins->shape.type))
    return NULL;
  probe_slot *s = &p->s[ins->index];
  if (!s->val) {
    s->val = hlo_value_from_shape(&ins->shape);
    s->seen = calloc((size_t)(s->val && s->val->count ? s->val->count : 1), 1);
    if (!s->val || !s->seen) {
      hlo_value_unref(s->val);
      free(s->seen);
      s->val = NULL;
      s->seen = NULL;
      return NULL;
    }
  }
  return s;
}

/* Folds one real number into the running summary. */
static void fold_x(probe_slot *s, double x) {
  if (isnan(x)) {
    s->nan++;
    return;
  }
  if (isinf(x)) {
    s->inf++;
    return;
  }
  if (s->finite == 0 || x < s->min)
    s->min = x;
  if (s->finite == 0 || x > s->max)
    s->max = x;
  s->finite++;
  double d = x - s->mean;
  s->mean += d / (double)s->finite;
  s->m2 += d * (x - s->mean);
}

/* Folds element flat of s, already stored in s->val.  A complex element
 * (an fft's output) folds as its two parts, real then imaginary: the
 * summary is of the numbers a complex array holds, so that a wrong
 * imaginary part shows as much as a wrong real one. */
static void fold(probe_slot *s, int64_t flat) {
  s->seen[flat] = 1;
  s->observed++;
  if (s->val->type == HLO_C64 || s->val->type == HLO_C128) {
    for (int part = 0; part < 2; part++)
      fold_x(s, s->val->type == HLO_C64 ? ((const float *)s->val->data)[2 * flat + part]
                                         : ((const double *)s->val->data)[2 * flat + part]);
    return;
  }
  fold_x(s, hlo_etype_class(s->val->type) == HLO_CLASS_FLOAT ? hlo_value_get_f64(s->val, flat)
                                                              : (double)hlo_value_get_i64(s->val, flat));
}

void dev_probe_box(dev_probe *p, const hlo_instr *ins, const dev_box *b) {
  probe_slot *s = slot_of(p, ins);
  /* complex values are never tiled into boxes (dev_elemental.c) */
  if (!s || !b->v || b->rank != s->val->rank || hlo_etype_class(s->val->type) == HLO_CLASS_COMPLEX)
    return;
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < b->rank; d++)
    idx[d] = b->lo[d];
  for (int64_t i = 0; i < b->count; i++) {
    bool inside = true;
    int64_t flat = 0;
    for (int d = 0; d < b->rank; d++) {
      if (idx[d] < 0 || idx[d] >= s->val->dims[d])
        inside = false;
      flat = flat * s->val->dims[d] + idx[d];
    }
    if (inside && !(b->poison && b->poison[i]) && !s->seen[flat]) {
      dev_slot_to_host(s->val->type, b->v[i], s->val->data, flat);
      fold(s, flat);
    }
    hlo_index_next_box(b->rank, b->lo, b->n, idx);
  }
}

void dev_probe_value(dev_probe *p, const hlo_instr *ins, const hlo_value *v) {
  probe_slot *s = slot_of(p, ins);
  if (!s || !v || v->type != s->val->type || v->count != s->val->count)
    return;
  for (int64_t i = 0; i < v->count; i++) {
    if (s->seen[i])
      continue;
    memcpy((char *)s->val->data + (size_t)i * v->elem_size, (const char *)v->data + (size_t)i * v->elem_size,
           v->elem_size);
    fold(s, i);
  }
}

int dev_probe_seen(const dev_probe *p, int i) {
  return p && i >= 0 && i < p->c->ninstrs && p->s[i].observed > 0;
}

dev_probe_summary dev_probe_summary_of(const dev_probe *p, int i) {
  dev_probe_summary r;
  memset(&r, 0, sizeof r);
  if (!dev_probe_seen(p, i))
    return r;
  const probe_slot *s = &p->s[i];
  r.observed = s->observed;
  r.count = s->val->count;
  r.nan = s->nan;
  r.inf = s->inf;
  if (s->finite > 0) {
    r.min = (float)s->min;
    r.max = (float)s->max;
    r.mean = (float)s->mean;
    r.std = (float)sqrt(s->m2 / (double)s->finite);
  }
  return r;
}

hlo_value *dev_probe_tensor(const dev_probe *p, int i, const hlo_value *fill) {
  if (!dev_probe_seen(p, i))
    return NULL;
  const probe_slot *s = &p->s[i];
  hlo_value *v = hlo_value_clone(s->val);
  if (!v)
    return NULL;
  bool same = fill && fill->type == v->type && fill->count == v->count;
  for (int64_t k = 0; same && k < v->count; k++)
    if (!s->seen[k])
      memcpy((char *)v->data + (size_t)k * v->elem_size, (const char *)fill->data + (size_t)k * v->elem_size,
             v->elem_size);
  return v;
}
