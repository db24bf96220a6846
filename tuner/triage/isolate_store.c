/* isolate_store.c — an isolation stored as a run (isolate_store.h). */
#include "isolate_store.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_opcode.h"
#include "store/store_isolate.h"
#include "run/units.h"

/* The units whose outputs reach instruction i through instructions that
 * are not units (get-tuple-element, bitcast, a copy...), appended to buf
 * as comma-separated names.  seen (nseen entries, room for cap) keeps a
 * shared operand from being walked twice. */
static void feeders(const hlo_instr *i, const tn_units *u, const hlo_instr **seen, int *nseen, int cap, char *buf,
                    size_t n) {
  for (int k = 0; k < i->noperands; k++) {
    const hlo_instr *o = i->operands[k];
    bool dup = false;
    for (int s = 0; s < *nseen && !dup; s++)
      dup = seen[s] == o;
    if (dup || *nseen == cap)
      continue;
    seen[(*nseen)++] = o;
    int unit = -1;
    for (int j = 0; j < u->n && unit < 0; j++)
      if (u->v[j].ins == o)
        unit = j;
    if (unit >= 0) {
      size_t len = strlen(buf);
      snprintf(buf + len, n - len, "%s%s", len ? "," : "", u->v[unit].name);
    } else {
      feeders(o, u, seen, nseen, cap, buf, n);
    }
  }
}

static void fill_cmp(tn_siso_cmp *o, const tn_iso_cmp *c) {
  o->done = c->done;
  o->within = c->within;
  o->identical = c->identical;
  o->leaf = c->leaf;
  o->count = c->m.count;
  o->mismatches = c->m.mismatches;
  o->max_abs = c->m.max_abs;
  o->max_rel = c->m.max_rel;
  o->rank = c->m.rank;
  for (int d = 0; d < c->m.rank && d < HLO_MAX_RANK; d++)
    o->peak[d] = c->m.peak[d];
}

static void fill_summary(tn_siso_summary *o, const tn_iso_summary *s) {
  *o = (tn_siso_summary){s->min, s->max, s->mean, s->std, s->nan, s->inf};
}

static double value_at(const hlo_value *v, int64_t i) {
  if (!v || i < 0 || i >= v->count)
    return NAN;
  return hlo_etype_class(v->type) == HLO_CLASS_FLOAT ? hlo_value_get_f64(v, i) : (double)hlo_value_get_i64(v, i);
}

static void fill_micro(tn_siso_culprit *c, const tn_iso_micro *mi) {
  c->inspected = mi->done;
  snprintf(c->note, sizeof c->note, "%s", mi->note);
  c->atol = mi->tol.atol;
  c->rtol = mi->tol.rtol;
  c->store_diffs = mi->store_diffs;
  if (mi->done && mi->first >= 0)
    snprintf(c->first, sizeof c->first, "%s", mi->v[mi->first].name);
  for (int k = 0; k < c->ninstrs; k++) {
    const tn_iso_instr *e = &mi->v[k];
    tn_siso_instr *o = &c->instrs[k];
    snprintf(o->name, sizeof o->name, "%s", e->name);
    snprintf(o->op, sizeof o->op, "%s", e->op ? e->op : "");
    o->count = e->count;
    o->observed = e->observed;
    o->compared = e->compared;
    o->within = e->within;
    o->mismatches = e->mismatches;
    o->max_rel = e->max_rel;
    fill_summary(&o->dev, &e->dev);
    fill_summary(&o->ref, &e->ref);
  }
  for (int k = 0; k < c->ntensors; k++) {
    const tn_iso_tensor *t = &mi->tensors[k];
    tn_siso_tensor *o = &c->tensors[k];
    snprintf(o->name, sizeof o->name, "%s", t->name);
    snprintf(o->role, sizeof o->role, "%s", t->diverging ? "diverging" : "operand");
    o->instr = t->instr;
    o->dev = t->dev; /* borrowed: the writer only reads them */
    o->ref = t->ref;
    tn_siso_tmetrics *m = &o->m;
    m->count = t->m.count;
    m->mismatches = t->m.mismatches;
    m->max_abs = t->m.max_abs;
    m->max_rel = t->m.max_rel;
    m->peak_index = t->m.peak_index;
    m->rank = t->m.rank;
    for (int d = 0; d < t->m.rank && d < HLO_MAX_RANK; d++) {
      m->peak[d] = t->m.peak[d];
      m->bbox_lo[d] = t->m.bbox_lo[d];
      m->bbox_hi[d] = t->m.bbox_hi[d];
    }
    m->device_at_peak = value_at(t->dev, t->m.peak_index);
    m->reference_at_peak = value_at(t->ref, t->m.peak_index);
  }
}

static void free_rows(tn_stored_isolation *s) {
  for (int k = 0; s->culprits && k < s->nculprits; k++) {
    free(s->culprits[k].instrs);
    free(s->culprits[k].tensors);
  }
  free(s->culprits);
  free(s->units);
}

/* The rows of r; the tensors' values stay r's.  -1 when out of memory. */
static int fill(tn_stored_isolation *s, const hlo_module *m, const tn_iso_result *r, const tn_iso_store_run *run,
                hlo_error *err) {
  tn_units mu;
  if (tn_units_find(m, &mu, err) != 0)
    return -1;
  int rc = -1;
  const hlo_instr **seen = NULL;
  int cap = 0;
  for (int c = 0; c < m->ncomps; c++)
    cap += m->comps[c]->ninstrs;
  snprintf(s->source, sizeof s->source, "%s", run->source);
  snprintf(s->inputs, sizeof s->inputs, "%s", run->inputs ? run->inputs : "");
  s->nunits = r->n;
  s->units = calloc((size_t)r->n + 1, sizeof *s->units);
  s->culprits = calloc((size_t)r->nculprits + 1, sizeof *s->culprits);
  seen = calloc((size_t)cap + 1, sizeof *seen);
  if (!s->units || !s->culprits || !seen) {
    hlo_error_set(err, 0, 0, "out of memory");
    goto done;
  }
  for (int i = 0; i < r->n; i++) {
    const tn_iso_unit *u = &r->v[i];
    tn_siso_unit *o = &s->units[i];
    o->index = u->index;
    snprintf(o->name, sizeof o->name, "%s", u->name);
    if (u->index >= 0 && u->index < mu.n) {
      snprintf(o->kind, sizeof o->kind, "%s", tn_unit_kind(&mu.v[u->index]));
      int nseen = 0;
      if (mu.v[u->index].ins)
        feeders(mu.v[u->index].ins, &mu, seen, &nseen, cap, o->inputs, sizeof o->inputs);
    }
    snprintf(o->cls, sizeof o->cls, "%s", tn_iso_class_name(u->cls));
    snprintf(o->config, sizeof o->config, "%s", u->config);
    o->overridden = u->overridden;
    o->nondeterministic = u->nondeterministic;
    o->nkernels = u->nkernels;
    o->atol = u->tol.atol;
    o->rtol = u->tol.rtol;
    o->max_rel = u->max_rel;
    fill_cmp(&o->fu, &u->fused_unfused);
    fill_cmp(&o->fr, &u->fused_ref);
    fill_cmp(&o->ur, &u->unfused_ref);
    o->chain_in_rel = u->chain_in_rel;
    o->chain_out_rel = u->chain_out_rel;
    snprintf(o->note, sizeof o->note, "%s", u->note);
  }
  for (int k = 0; k < r->nculprits; k++) {
    int i = r->ranked[k];
    s->units[i].rank = k + 1;
    tn_siso_culprit *c = &s->culprits[k];
    const tn_iso_micro *mi = &r->v[i].micro;
    c->unit = i;
    c->ninstrs = mi->n;
    c->ntensors = mi->ntensors;
    c->instrs = calloc((size_t)mi->n + 1, sizeof *c->instrs);
    c->tensors = calloc((size_t)mi->ntensors + 1, sizeof *c->tensors);
    s->nculprits = k + 1;
    if (!c->instrs || !c->tensors) {
      hlo_error_set(err, 0, 0, "out of memory");
      goto done;
    }
    fill_micro(c, mi);
    c->hlo = r->v[i].hlo;
    c->ninputs = r->v[i].ninputs;
    c->inputs = r->v[i].inputs;
  }
  const tn_iso_program *p = &r->program;
  tn_siso_program *o = &s->program;
  o->done = p->done;
  o->differs = p->differs;
  snprintf(o->note, sizeof o->note, "%s", p->note);
  o->atol = p->tol.atol;
  o->rtol = p->tol.rtol;
  o->max_rel = p->max_rel;
  o->max_abs = p->max_abs;
  o->gain = p->gain;
  o->mismatches = p->mismatches;
  o->count = p->count;
  if (p->amplifier >= 0 && p->amplifier < r->n)
    snprintf(o->amplifier, sizeof o->amplifier, "%s", r->v[p->amplifier].name);
  if (p->origin >= 0 && p->origin < r->n)
    snprintf(o->origin, sizeof o->origin, "%s", r->v[p->origin].name);
  rc = 0;
done:
  free(seen);
  tn_units_free(&mu);
  return rc;
}

int tn_iso_store(const char *path, const hlo_module *m, const tn_iso_result *r, const tn_iso_store_run *run,
                 hlo_error *err) {
  tn_stored_isolation s;
  memset(&s, 0, sizeof s);
  if (fill(&s, m, r, run, err) != 0) {
    free_rows(&s);
    return -1;
  }
  tn_run_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.command, sizeof info.command, "%s", run->command);
  snprintf(info.machine, sizeof info.machine, "%s", run->machine);
  snprintf(info.compiler, sizeof info.compiler, "%s", run->compiler);
  info.defects = run->defects;
  info.defects_known = 1;
  info.seed = run->seed;
  int rc = -1;
  tn_store *st = tn_store_begin_run_undoable(path, &info, err);
  if (st) {
    if (tn_store_add_isolation(st, &s, err) != 0) {
      hlo_error uerr = {0};
      tn_store_undo(st, &uerr);
    } else {
      rc = tn_store_end_run(st, "complete", err);
    }
  }
  free_rows(&s);
  return rc;
}
