/* dev_lane.c — compiling and running scalar computations (dev_lane.h).
 *
 * Each instruction gets one register (its index in the computation);
 * parameters are read from the arguments, constants are decoded once at
 * compile time, and the elementwise steps run in program order, which is
 * already a valid evaluation order.
 *
 * A program runs once per comparison of a sort (tens of thousands of times
 * for one line of a thousand elements), so compiling also flattens it: the
 * elementwise steps in one array, each with the function computing it
 * (dev_elem_scalar_lowering) and where its operands are (a register, or
 * for a parameter the argument itself), and the parameters that are
 * results in another.  Running is then two short loops over plain integers
 * instead of a walk over the computation's instructions; the values
 * computed are the same.
 */
#include "dev_lane.h"

#include <stdio.h>
#include <stdlib.h>

#include "hlo/hlo_value.h"

#define DEV_LANE_MAX_OPERANDS 3 /* select and clamp are the widest */

/* One elementwise instruction: its register and where its operands are.
 * An operand that is a parameter is read straight from the arguments
 * (src = -1 - its parameter number), any other from its register. */
typedef struct lane_step {
  const hlo_instr *ins;
  dev_elem_scalar_fn *op; /* dev_elem_scalar_lowering(ins) */
  int dst, nsrc;
  int src[DEV_LANE_MAX_OPERANDS];
} lane_step;

/* A parameter that is a result: args[arg] goes to register dst. */
typedef struct lane_param {
  int arg, dst;
} lane_param;

struct dev_lane {
  const hlo_computation *c;
  int nparams, nres;
  dev_slot *reg;     /* one per instruction */
  int *res;          /* register of each result */
  lane_step *steps;  /* the elementwise instructions, in program order */
  int nsteps;
  lane_param *read;  /* the parameters that are results */
  int nread;
};

void dev_lane_free(dev_lane *p) {
  if (!p)
    return;
  free(p->reg);
  free(p->res);
  free(p->steps);
  free(p->read);
  free(p);
}

/* Fills p->steps and p->read from its (checked) computation and results.
 * Parameters no result names need no register: the steps read them from
 * the arguments. */
static int lane_flatten(dev_lane *p) {
  const hlo_computation *c = p->c;
  p->steps = calloc((size_t)c->ninstrs, sizeof *p->steps);
  p->read = calloc((size_t)c->ninstrs, sizeof *p->read);
  if (!p->steps || !p->read)
    return -1;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->op == HLO_OP_PARAMETER) {
      bool result = false;
      for (int k = 0; k < p->nres; k++)
        result = result || p->res[k] == i;
      if (result)
        p->read[p->nread++] = (lane_param){(int)ins->parameter_number, i};
    } else if (ins->op != HLO_OP_CONSTANT && !(ins == c->root && ins->op == HLO_OP_TUPLE)) {
      lane_step *st = &p->steps[p->nsteps++];
      st->ins = ins;
      st->op = dev_elem_scalar_lowering(ins);
      st->dst = i;
      st->nsrc = ins->noperands;
      for (int j = 0; j < ins->noperands; j++) {
        const hlo_instr *o = ins->operands[j];
        st->src[j] = o->op == HLO_OP_PARAMETER ? -1 - (int)o->parameter_number : o->index;
      }
    }
  }
  return 0;
}

static bool scalar_value(const hlo_shape *s) {
  return s->type != HLO_TUPLE && s->rank == 0;
}

dev_lane *dev_lane_compile(const hlo_computation *c, char *why, size_t why_len) {
  if (!c || !c->root || c->ninstrs < 1) {
    snprintf(why, why_len, "no computation to run per element");
    return NULL;
  }
  dev_lane *p = calloc(1, sizeof *p);
  if (!p || !(p->reg = calloc((size_t)c->ninstrs, sizeof *p->reg))) {
    dev_lane_free(p);
    snprintf(why, why_len, "out of memory");
    return NULL;
  }
  p->c = c;
  p->nparams = c->nparams;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins == c->root && ins->op == HLO_OP_TUPLE)
      continue; /* checked below */
    if (!scalar_value(&ins->shape)) {
      snprintf(why, why_len, "%s: %s is not a scalar", c->name, ins->name);
      goto refuse;
    }
    if (ins->op == HLO_OP_PARAMETER) {
      if (ins->parameter_number < 0 || ins->parameter_number >= c->nparams) {
        snprintf(why, why_len, "%s: parameter %s out of range", c->name, ins->name);
        goto refuse;
      }
      continue;
    }
    if (ins->op == HLO_OP_CONSTANT) {
      char msg[128];
      hlo_value *v = ins->literal ? hlo_value_from_literal(&ins->shape, ins->literal, msg, sizeof msg) : NULL;
      if (!v || v->count != 1) {
        hlo_value_unref(v);
        snprintf(why, why_len, "%s: constant %s has no scalar value", c->name, ins->name);
        goto refuse;
      }
      dev_slot_from_host(v->type, v->data, 0, &p->reg[i]);
      hlo_value_unref(v);
      continue;
    }
    if (dev_elem_classify(ins) != DEV_EK_ELEMENTWISE || ins->noperands > DEV_LANE_MAX_OPERANDS) {
      snprintf(why, why_len, "%s: %s is not an elementwise op the device lowers per lane", c->name, ins->name);
      goto refuse;
    }
    for (int j = 0; j < ins->noperands; j++)
      if (ins->operands[j]->parent != c || ins->operands[j]->index >= i) {
        snprintf(why, why_len, "%s: %s reads outside its computation", c->name, ins->name);
        goto refuse;
      }
  }
  const hlo_instr *r = c->root;
  p->nres = r->op == HLO_OP_TUPLE ? r->noperands : 1;
  if (p->nres < 1 || !(p->res = calloc((size_t)p->nres, sizeof *p->res))) {
    snprintf(why, why_len, p->nres < 1 ? "%s: empty tuple root" : "out of memory", c->name);
    goto refuse;
  }
  for (int k = 0; k < p->nres; k++) {
    const hlo_instr *v = r->op == HLO_OP_TUPLE ? r->operands[k] : r;
    if (!scalar_value(&v->shape) || v->parent != c) {
      snprintf(why, why_len, "%s: result %d is not a scalar", c->name, k);
      goto refuse;
    }
    p->res[k] = v->index;
  }
  if (lane_flatten(p) != 0) {
    snprintf(why, why_len, "out of memory");
    goto refuse;
  }
  return p;
refuse:
  dev_lane_free(p);
  return NULL;
}

int dev_lane_nparams(const dev_lane *p) { return p->nparams; }
int dev_lane_nresults(const dev_lane *p) { return p->nres; }

void dev_lane_run(dev_lane *p, const dev_slot *args, dev_slot *res) {
  /* the steps never write the arguments (res may be args: results are
   * written last), so parameters read in place are what program order
   * would have copied */
  if (p->nsteps == 1 && p->nread == 0 && p->nres == 1 && p->res[0] == p->steps[0].dst) {
    /* one op on the arguments (a sort's compare): its result needs no
     * register */
    const lane_step *st = p->steps;
    dev_slot x[DEV_LANE_MAX_OPERANDS];
    for (int j = 0; j < st->nsrc; j++)
      x[j] = st->src[j] >= 0 ? p->reg[st->src[j]] : args[-1 - st->src[j]];
    res[0] = st->op(st->ins, x);
    return;
  }
  for (int q = 0; q < p->nread; q++)
    p->reg[p->read[q].dst] = args[p->read[q].arg];
  for (int q = 0; q < p->nsteps; q++) {
    const lane_step *st = &p->steps[q];
    dev_slot x[DEV_LANE_MAX_OPERANDS];
    for (int j = 0; j < st->nsrc; j++)
      x[j] = st->src[j] >= 0 ? p->reg[st->src[j]] : args[-1 - st->src[j]];
    p->reg[st->dst] = st->op(st->ins, x);
  }
  for (int k = 0; k < p->nres; k++)
    res[k] = p->reg[p->res[k]];
}

bool dev_lane_single_compare(const dev_lane *p, const hlo_instr **cmp, int *a, int *b) {
  if (p->nsteps != 1 || p->nread != 0 || p->nres != 1 || p->res[0] != p->steps[0].dst)
    return false;
  const lane_step *st = p->steps;
  if (st->ins->op != HLO_OP_COMPARE || st->nsrc != 2 || st->src[0] >= 0 || st->src[1] >= 0)
    return false;
  *cmp = st->ins;
  *a = -1 - st->src[0];
  *b = -1 - st->src[1];
  return true;
}

bool dev_lane_componentwise(const dev_lane *p, int n, const hlo_instr **ops) {
  if (n < 1 || p->nparams != 2 * n || p->nres != n || p->nsteps != n || p->nread != 0)
    return false;
  for (int j = 0; j < n; j++) {
    const lane_step *st = NULL;
    for (int q = 0; q < p->nsteps && !st; q++)
      if (p->steps[q].dst == p->res[j])
        st = &p->steps[q];
    if (!st || st->nsrc != 2 || st->src[0] != -1 - j || st->src[1] != -1 - (n + j))
      return false;
    for (int k = 0; k < j; k++) /* each result its own step */
      if (ops[k] == st->ins)
        return false;
    ops[j] = st->ins;
  }
  return true;
}
