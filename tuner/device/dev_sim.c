/* dev_sim.c — the built-in simulated device behind the backend interface
 * (dev_backend.h): space from dev_space, compile = dev_lower, run = the
 * launch around the kernel plus dev_exec, cost = dev_cost.
 *
 * A kernel keeps a copy of the fusion analysis (which points into the
 * caller's module: the module must outlive the kernel), the schedule, the
 * machine and the compiler profile it was built with (the defects a run
 * models are the profile's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_backend.h"
#include "dev_cost.h"
#include "dev_exec.h"
#include "dev_layout.h"
#include "dev_lower.h"
#include "dev_probe.h"
#include "dev_space.h"
#include "hlo/hlo_index.h"

struct dev_kernel {
  dev_fusion f;
  dev_schedule s;
  dev_machine m;
  dev_compiler cc;
  double cost_s;
};

static int sim_space(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *n, dev_config *dflt,
                     hlo_error *err) {
  return dev_space_enumerate(f, m, cands, n, dflt, err);
}

static dev_status sim_compile(const dev_fusion *f, const dev_config *cfg, const dev_machine *m,
                              const dev_compiler *cc, dev_kernel **out, char *why, size_t why_len) {
  *out = NULL;
  dev_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    snprintf(why, why_len, "out of memory");
    return DEV_COMPILE_ERROR;
  }
  k->f = *f;
  k->m = *m;
  if (cc)
    k->cc = *cc;
  if (dev_lower(&k->f, cfg, m, &k->s, why, why_len) != 0) {
    free(k);
    return DEV_COMPILE_ERROR;
  }
  k->s.f = &k->f;
  dev_cost c;
  dev_cost_estimate(&k->s, m, &c);
  k->cost_s = c.total_s;
  *out = k;
  return DEV_OK;
}

/* A bitcast reinterprets the physical buffer (dev_layout.h): element idx
 * of the result is the operand's element at the same physical offset. */
static hlo_value *launch_bitcast(const hlo_instr *ins, const hlo_value *a, char *why, size_t n) {
  const hlo_shape *rs = &ins->shape, *as = &ins->operands[0]->shape;
  hlo_value *v = hlo_value_from_shape(rs);
  if (!v || a->type != v->type || a->count != v->count || as->type == HLO_TUPLE || as->rank != a->rank) {
    hlo_value_unref(v);
    snprintf(why, n, "%s: bitcast changes the element type or count", ins->name);
    return NULL;
  }
  if (dev_layout_row_major(rs) && dev_layout_row_major(as)) {
    memcpy(v->data, a->data, (size_t)a->count * a->elem_size);
    return v;
  }
  int64_t idx[HLO_MAX_RANK] = {0}, src[HLO_MAX_RANK];
  for (int64_t i = 0; i < v->count; i++) {
    dev_layout_bitcast_source(rs, idx, as, src);
    int64_t off = 0;
    for (int d = 0; d < as->rank; d++)
      off = off * as->dims[d] + src[d];
    memcpy((char *)v->data + (size_t)i * v->elem_size, (const char *)a->data + (size_t)off * a->elem_size,
           v->elem_size);
    hlo_index_next(rs->rank, rs->dims, idx);
  }
  return v;
}

/* The launch: the entry computation's parameters, constants, bitcasts,
 * copies, tuples and get-tuple-elements around the one fusion. */
static hlo_value *launch_value(const hlo_instr *ins, hlo_value **vals, hlo_value *const *args, int nargs,
                               char *why, size_t n) {
  switch (ins->op) {
  case HLO_OP_PARAMETER:
    if (ins->parameter_number < 0 || ins->parameter_number >= nargs) {
      snprintf(why, n, "entry parameter %lld has no argument", (long long)ins->parameter_number);
      return NULL;
    }
    return hlo_value_ref(args[ins->parameter_number]);
  case HLO_OP_CONSTANT:
    return hlo_value_from_literal(&ins->shape, ins->literal, why, n);
  case HLO_OP_COPY:
    return hlo_value_ref(vals[ins->operands[0]->index]);
  case HLO_OP_BITCAST:
    return launch_bitcast(ins, vals[ins->operands[0]->index], why, n);
  case HLO_OP_TUPLE: {
    hlo_value *el[64];
    if (ins->noperands > 64)
      return NULL;
    for (int j = 0; j < ins->noperands; j++)
      el[j] = hlo_value_ref(vals[ins->operands[j]->index]);
    return hlo_value_tuple(ins->noperands, el);
  }
  case HLO_OP_GET_TUPLE_ELEMENT: {
    const hlo_value *t = vals[ins->operands[0]->index];
    if (t->type != HLO_TUPLE || ins->attrs.index < 0 || ins->attrs.index >= t->ntuple)
      return NULL;
    return hlo_value_ref(t->elems[ins->attrs.index]);
  }
  default:
    snprintf(why, n, "%s: %s is not part of a launch", ins->name, hlo_opcode_name(ins->op));
    return NULL;
  }
}

/* hooks: NULL on the plain path; dev_probe.h's instrumented run. */
static void run_hooked(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t seed, const dev_exec_hooks *hooks,
                       dev_run *out) {
  const dev_compiler *cc = k->cc.defects ? &k->cc : NULL;
  if (!k->f.launch) {
    dev_exec_run(&k->s, cc, args, nargs, seed, hooks, out);
    return;
  }
  const hlo_computation *e = k->f.m->entry;
  hlo_value **vals = calloc((size_t)e->ninstrs, sizeof *vals);
  memset(out, 0, sizeof *out);
  if (!vals) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "out of memory");
    return;
  }
  char why[256] = "";
  int failed = 0;
  for (int i = 0; i < e->ninstrs && !failed; i++) {
    const hlo_instr *ins = e->instrs[i];
    if (ins == k->f.launch) {
      hlo_value *kargs[64];
      int n = ins->noperands < 64 ? ins->noperands : 64;
      for (int j = 0; j < n; j++)
        kargs[j] = vals[ins->operands[j]->index];
      dev_exec_run(&k->s, cc, kargs, n, seed, hooks, out);
      if (out->status != DEV_OK) {
        failed = 1;
        break;
      }
      vals[i] = out->out;
      out->out = NULL;
      continue;
    }
    vals[i] = launch_value(ins, vals, args, nargs, why, sizeof why);
    if (!vals[i]) {
      out->status = DEV_RUNTIME_ERROR;
      snprintf(out->message, sizeof out->message, "launch: %s", why[0] ? why : "out of memory");
      failed = 1;
    }
  }
  if (!failed)
    out->out = hlo_value_ref(vals[e->root->index]);
  for (int i = 0; i < e->ninstrs; i++)
    hlo_value_unref(vals[i]);
  free(vals);
}

static void sim_run(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t seed, dev_run *out) {
  run_hooked(k, args, nargs, seed, NULL, out);
}

void dev_sim_run_probed(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t seed, dev_probe *p, dev_run *out) {
  dev_exec_hooks h;
  dev_exec_hooks_none(&h);
  h.probe = p;
  run_hooked(k, args, nargs, seed, &h, out);
}

static double sim_cost(const dev_kernel *k) { return k->cost_s; }

static void sim_release(dev_kernel *k) {
  if (!k)
    return;
  dev_schedule_free(&k->s);
  free(k);
}

static const dev_backend sim_backend = {
    .abi = DEV_BACKEND_ABI,
    .name = "sim",
    .space = sim_space,
    .compile = sim_compile,
    .run = sim_run,
    .cost = sim_cost,
    .release = sim_release,
    .caps = DEV_BACKEND_CAP_ACCUM_ORDER | DEV_BACKEND_CAP_EAGER_TIMING | DEV_BACKEND_CAP_TIMING_BY_RACE,
    .default_config = dev_space_default, /* the default sim_space hands back */
};

const dev_backend *dev_sim_backend(void) { return &sim_backend; }
