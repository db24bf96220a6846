/* isolate_micro.c — the first diverging instruction of a culprit fusion
 * (isolate_micro.h says what and why). */
#include "isolate_micro.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_probe.h"
#include "check/eval.h"

/* The reference's value of every instruction of the fused computation, at
 * its first evaluation (replica 0). */
typedef struct {
  const hlo_computation *fc;
  hlo_value **vals;
} ref_capture;

static void ref_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  (void)ops;
  (void)n;
  ref_capture *r = ctx;
  if (ins->index < 0 || ins->index >= r->fc->ninstrs || r->fc->instrs[ins->index] != ins || !*value)
    return;
  if (!r->vals[ins->index])
    r->vals[ins->index] = hlo_value_ref(*value);
}

/* The same summary the probe folds on the device, over a whole value. */
static tn_iso_summary summarize(const hlo_value *v) {
  tn_iso_summary s;
  memset(&s, 0, sizeof s);
  if (!v || v->type == HLO_TUPLE)
    return s;
  bool fl = hlo_etype_class(v->type) == HLO_CLASS_FLOAT;
  /* a complex element is its two parts, as the probe folds it */
  int parts = v->type == HLO_C64 || v->type == HLO_C128 ? 2 : 1;
  double mn = 0, mx = 0, mean = 0, m2 = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < v->count * parts; i++) {
    double x = parts == 2 ? (v->type == HLO_C64 ? ((const float *)v->data)[i] : ((const double *)v->data)[i])
               : fl      ? hlo_value_get_f64(v, i)
                         : (double)hlo_value_get_i64(v, i);
    if (isnan(x)) {
      s.nan++;
      continue;
    }
    if (isinf(x)) {
      s.inf++;
      continue;
    }
    if (finite == 0 || x < mn)
      mn = x;
    if (finite == 0 || x > mx)
      mx = x;
    finite++;
    double d = x - mean;
    mean += d / (double)finite;
    m2 += d * (x - mean);
  }
  if (finite > 0) {
    s.min = (float)mn;
    s.max = (float)mx;
    s.mean = (float)mean;
    s.std = (float)sqrt(m2 / (double)finite);
  }
  return s;
}

static tn_iso_summary from_probe(dev_probe_summary p) {
  tn_iso_summary s = {.min = p.min, .max = p.max, .mean = p.mean, .std = p.std, .nan = p.nan, .inf = p.inf};
  return s;
}

static chk_rule rule_of(const hlo_instr *ins) {
  return hlo_etype_class(ins->shape.type) == HLO_CLASS_FLOAT ? CHK_RULE_TOLERANCE : CHK_RULE_BITWISE;
}

/* Keeps instruction i's tensors (device and reference) and their metrics. */
static void keep_tensor(tn_iso_micro *out, const hlo_computation *fc, const dev_probe *p, hlo_value **refs, int i,
                        bool diverging, const chk_tol *tol) {
  tn_iso_tensor *t = &out->tensors[out->ntensors];
  memset(t, 0, sizeof *t);
  const hlo_instr *ins = fc->instrs[i];
  snprintf(t->name, sizeof t->name, "%s", ins->name);
  t->diverging = diverging;
  t->instr = i;
  t->ref = refs[i] ? hlo_value_ref(refs[i]) : NULL;
  t->dev = dev_probe_tensor(p, i, refs[i]);
  if (!t->dev || !t->ref) {
    hlo_value_unref(t->dev);
    hlo_value_unref(t->ref);
    return; /* not probed (a tuple operand): nothing to keep */
  }
  hlo_error err = {0};
  if (chk_compare(t->dev, t->ref, rule_of(ins), *tol, &t->m, &err) != 0)
    memset(&t->m, 0, sizeof t->m);
  out->ntensors++;
}

void tn_iso_inspect(const hlo_module *um, const dev_fusion *f, const dev_config *cfg, hlo_value *const *args,
                    int nargs, const tn_iso_micro_opts *o, tn_iso_micro *out) {
  memset(out, 0, sizeof *out);
  out->first = -1;
  out->tol = o->tol;
  const hlo_computation *fc = f->comp;
  if (o->backend != dev_sim_backend()) {
    snprintf(out->note, sizeof out->note, "no micro inspection: only the built-in device can be instrumented");
    return;
  }
  out->v = calloc((size_t)fc->ninstrs + 1, sizeof *out->v);
  ref_capture rc = {.fc = fc, .vals = calloc((size_t)fc->ninstrs + 1, sizeof(hlo_value *))};
  dev_probe *p = dev_probe_new(fc);
  dev_kernel *k = NULL;
  hlo_value *outs[64] = {0};
  if (!out->v || !rc.vals || !p) {
    snprintf(out->note, sizeof out->note, "no micro inspection: out of memory");
    goto done;
  }
  out->n = fc->ninstrs;

  /* the reference, op by op */
  int replicas = o->replicas >= 1 && o->replicas <= 64 ? o->replicas : 1;
  chk_eval_opts eo = {.replicas = replicas, .emulate_device = 1, .rng_seed = o->seed, .time_budget = o->time_budget,
                      .hook = ref_hook, .hook_ctx = &rc};
  hlo_error err = {0};
  if (chk_eval_module(um, nargs, args, &eo, outs, &err) != 0) {
    snprintf(out->note, sizeof out->note, "no micro inspection: reference: %.200s", err.msg);
    goto done;
  }
  for (int r = 0; r < replicas; r++)
    hlo_value_unref(outs[r]);

  /* the intact kernel, instrumented, with the timing seed of the run
   * that showed the divergence */
  char why[512] = "";
  if (o->backend->compile(f, cfg, o->machine, o->compiler, &k, why, sizeof why) != DEV_OK) {
    snprintf(out->note, sizeof out->note, "no micro inspection: compile error: %.200s", why);
    goto done;
  }
  dev_run run;
  dev_sim_run_probed(k, args, nargs, o->jitter, p, &run);
  if (run.status != DEV_OK) {
    snprintf(out->note, sizeof out->note, "no micro inspection: the instrumented run failed: %.200s", run.message);
    goto done;
  }
  out->done = true;
  const hlo_instr *root = fc->root;
  hlo_value *computed = root ? dev_probe_tensor(p, root->index, rc.vals[root->index]) : NULL;
  if (computed && run.out && run.out->type == computed->type && run.out->count == computed->count) {
    size_t es = computed->elem_size;
    for (int64_t i = 0; i < computed->count; i++)
      out->store_diffs += memcmp((const char *)computed->data + (size_t)i * es, (const char *)run.out->data + (size_t)i * es,
                                 es) != 0;
  }
  hlo_value_unref(computed);
  hlo_value_unref(run.out);

  for (int i = 0; i < fc->ninstrs; i++) {
    const hlo_instr *ins = fc->instrs[i];
    tn_iso_instr *e = &out->v[i];
    snprintf(e->name, sizeof e->name, "%s", ins->name);
    e->op = hlo_opcode_name(ins->op);
    dev_probe_summary ps = dev_probe_summary_of(p, i);
    e->count = ps.count;
    e->observed = ps.observed;
    e->dev = from_probe(ps);
    e->ref = summarize(rc.vals[i]);
    if (!dev_probe_seen(p, i) || !rc.vals[i])
      continue;
    hlo_value *dv = dev_probe_tensor(p, i, rc.vals[i]);
    chk_metrics m;
    if (dv && chk_compare(dv, rc.vals[i], rule_of(ins), o->tol, &m, &err) == 0) {
      e->compared = true;
      e->mismatches = m.mismatches;
      e->within = m.mismatches == 0;
      e->max_rel = m.nan_mismatches || m.inf_mismatches ? INFINITY : m.max_rel;
      if (!e->within && out->first < 0)
        out->first = i;
    }
    hlo_value_unref(dv);
  }
  if (out->first >= 0) {
    const hlo_instr *ins = fc->instrs[out->first];
    if (!(out->tensors = calloc((size_t)ins->noperands + 1, sizeof *out->tensors))) {
      snprintf(out->note, sizeof out->note, "no tensors captured: out of memory");
      goto done;
    }
    keep_tensor(out, fc, p, rc.vals, out->first, true, &o->tol);
    for (int j = 0; j < ins->noperands; j++)
      keep_tensor(out, fc, p, rc.vals, ins->operands[j]->index, false, &o->tol);
  }

done:
  if (k)
    o->backend->release(k);
  dev_probe_free(p);
  for (int i = 0; rc.vals && i < fc->ninstrs; i++)
    hlo_value_unref(rc.vals[i]);
  free(rc.vals);
}

void tn_iso_micro_free(tn_iso_micro *m) {
  for (int i = 0; i < m->ntensors; i++) {
    hlo_value_unref(m->tensors[i].dev);
    hlo_value_unref(m->tensors[i].ref);
  }
  free(m->tensors);
  free(m->v);
  memset(m, 0, sizeof *m);
  m->first = -1;
}
