/* eval_custom.c — custom-calls whose semantics are known, one table entry
 * per target.
 *
 * A custom-call is opaque to HLO: only its target names what it computes.
 * The targets below are the ones real dumps carry whose meaning is public
 * (annotations of the partitioner and of host offloading, buffer
 * allocation, cuBLAS gemms, the GPU TopK, composites that carry their own
 * decomposition).  Any other target is refused by name: guessing would turn
 * the reference into a source of false findings.  Except when nothing can
 * see what it computes: a call of an unknown target that is not its
 * computation's root, has no users and aliases no operand
 * (output_to_operand_aliasing) changes no value of the module, whatever
 * its side effects, so it is skipped (its value, never read, is zeros).
 *
 * Semantics, per evaluator:
 *   identity     the annotation targets: the operand, unchanged; refused
 *                when the result's shape differs (a real reshard).
 *   poison       AllocateBuffer and __custom_kernel_fusion$workspace (a
 *                custom kernel's scratch): an uninitialised buffer, filled with NaN
 *                (every bit set for f16, bf16, f32, f64 and complex; the
 *                type's NaN, or what NaN converts to, for f8/f4), -1 or the
 *                maximum for integers and true for pred, so a read of it
 *                that reaches an output shows.
 *   dynamic_gte  DynamicGte(tuple, index), as the while-loop unroller emits
 *                it: element `index` of the tuple, which must be in range.
 *   slice_to_dynamic  operand 0 with its dynamic sizes as further operands:
 *                dynamic dimensions are kept padded to their bound, so the
 *                data is operand 0.
 *   gemm         __cublas$gemm and __cublas$lt$matmul:
 *                alpha * dot(a, b) + beta * c [+ bias] then the epilogue,
 *                dimension numbers, alpha_real, beta and epilogue from
 *                backend_config (gemm_backend_config).  The dot is the
 *                reference's dot (eval_dot.c) rounded to the result type;
 *                with alpha 1, beta 0 and no epilogue that is all there
 *                is, otherwise scaling, c, bias and the epilogue are applied
 *                in double and rounded once more.  The result is the first
 *                element when the shape is a (result, workspace) tuple; the
 *                workspace is zeros.
 *   topk         __gpu$TopK: the k largest of each row of the last
 *                dimension, descending, ties in index order, NaN above
 *                +inf; (values, s32 indices).
 *   math         xla_builder.math.IgammaGradA, .Polygamma and
 *                .RegularizedIncompleteBeta: the special functions, in
 *                double (eval_math.c documents domains and methods).
 *   tridiagonal  xla_builder.tridiagonal.TridiagonalSolver: XLA's Thomas
 *                solve of [..., K, M] right-hand sides (eval_tridiagonal.c).
 *                These xla_builder.* calls come with no computation: their
 *                meaning is the library function the target names.
 *   qr           Qr and ProductOfElementaryHouseholderReflectors: XLA's
 *                Householder QR (LAPACK geqrf/orgqr layout; eval_qr.c).
 *   partial_reduce  PartialReduce, approximate top-k's first stage: the
 *                exact top of each line by its comparator
 *                (eval_partial_reduce.c says why that is a legitimate
 *                answer of an approximate op).
 *   composite    a call marked as a composite (target xla_builder.*,
 *                is_composite=true, or a composite.name frontend
 *                attribute) with called_computations={c} (or to_apply=c)
 *                whose parameters are the operands' shapes and whose
 *                result is the call's: the computation c on the operands.
 */
#include "eval_custom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_async.h"
#include "eval_attr.h"
#include "eval_internal.h"

/* ---- evaluators ----------------------------------------------------------- */

typedef hlo_value *custom_fn(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);

static hlo_value *identity(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 1 || !hlo_value_matches(ops[0], &ins->shape))
    return chk_fail(ev, ins, "custom-call %s must return its one operand's shape",
                    ins->attrs.custom_call_target);
  return hlo_value_ref(ops[0]);
}

static hlo_value *poison_array(const hlo_shape *s) {
  hlo_value *v = hlo_value_array_uninit(s->type, s->rank, s->dims);
  if (!v)
    return NULL;
  hlo_eclass cls = hlo_etype_class(s->type);
  bool whole_bytes = hlo_etype_bits(s->type) == (int)v->elem_size * 8;
  if (whole_bytes && (cls == HLO_CLASS_SINT || cls == HLO_CLASS_UINT || s->type == HLO_F16 ||
                      s->type == HLO_BF16 || s->type == HLO_F32 || s->type == HLO_F64 || cls == HLO_CLASS_COMPLEX)) {
    memset(v->data, 0xff, (size_t)v->count * v->elem_size); /* -1, the maximum, or a NaN */
  } else {
    /* pred, sub-byte integers and the f8/f4 types, whose NaN (if any) is
     * not all ones: the type's own conversion of -1, true or NaN. */
    for (int64_t i = 0; i < v->count; i++) {
      if (cls == HLO_CLASS_PRED)
        hlo_value_set_i64(v, i, 1);
      else if (cls == HLO_CLASS_FLOAT)
        hlo_value_set_f64(v, i, NAN);
      else
        hlo_value_set_i64(v, i, -1);
    }
  }
  return v;
}

static hlo_value *poison(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  (void)ops;
  if (ins->shape.type == HLO_TUPLE)
    return chk_fail(ev, ins, "AllocateBuffer of a tuple shape");
  hlo_value *v = poison_array(&ins->shape);
  return v ? v : chk_fail(ev, ins, "cannot allocate the buffer");
}

static hlo_value *slice_to_dynamic(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands < 1 || ins->shape.type == HLO_TUPLE || !chk_is_array(ops[0]) ||
      !hlo_value_matches(ops[0], &ins->shape))
    return chk_fail(ev, ins, "SliceToDynamic must keep its operand's type and bounds");
  for (int k = 1; k < ins->noperands; k++) {
    int d = k - 1;
    int64_t size = chk_is_array(ops[k]) ? hlo_value_get_i64(ops[k], 0) : -1;
    if (d >= ops[0]->rank || size < 0 || size > ops[0]->dims[d])
      return chk_fail(ev, ins, "dynamic size operand %d is out of the bound of dimension %d", k, d);
  }
  return hlo_value_ref(ops[0]);
}

static hlo_value *dynamic_gte(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 2 || ops[0]->type != HLO_TUPLE || !chk_is_array(ops[1]) || ops[1]->count != 1 ||
      !hlo_etype_is_int(ops[1]->type))
    return chk_fail(ev, ins, "DynamicGte takes a tuple and an integer index");
  int64_t i = hlo_value_get_i64(ops[1], 0);
  if (i < 0 || i >= ops[0]->ntuple)
    return chk_fail(ev, ins, "DynamicGte index %lld is not an element of a %d-tuple", (long long)i,
                    ops[0]->ntuple);
  if (!hlo_value_matches(ops[0]->elems[i], &ins->shape))
    return chk_fail(ev, ins, "DynamicGte's element %lld does not have the result's shape", (long long)i);
  return hlo_value_ref(ops[0]->elems[i]);
}

static double relu(double x) { return x > 0 ? x : (x == x ? 0 : x); }

static hlo_value *gemm(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const hlo_shape *rs = ins->shape.type == HLO_TUPLE ? &ins->shape.elems[0] : &ins->shape;
  if (ins->shape.type == HLO_TUPLE && ins->shape.ntuple < 1)
    return chk_fail(ev, ins, "gemm with an empty tuple shape");
  if (ins->noperands < 2 || rs->type == HLO_TUPLE)
    return chk_fail(ev, ins, "gemm needs two operands and an array result");
  char *cfg = chk_raw_attr(ins, "backend_config");
  if (!cfg)
    return chk_fail(ev, ins, "gemm without a backend_config");
  int64_t lb[HLO_MAX_RANK], rb[HLO_MAX_RANK], lc[HLO_MAX_RANK], rc[HLO_MAX_RANK];
  double alpha, alpha_im, beta;
  char epi[32] = "DEFAULT";
  int nlb = chk_json_ints(cfg, "lhs_batch_dimensions", lb, HLO_MAX_RANK);
  int nrb = chk_json_ints(cfg, "rhs_batch_dimensions", rb, HLO_MAX_RANK);
  int nlc = chk_json_ints(cfg, "lhs_contracting_dimensions", lc, HLO_MAX_RANK);
  int nrc = chk_json_ints(cfg, "rhs_contracting_dimensions", rc, HLO_MAX_RANK);
  bool ok = nlb >= 0 && nrb >= 0 && nlc >= 0 && nrc >= 0 && chk_json_value(cfg, "dot_dimension_numbers") &&
            chk_json_number(cfg, "alpha_real", 1, &alpha) && chk_json_number(cfg, "alpha_imag", 0, &alpha_im) &&
            chk_json_number(cfg, "beta", 0, &beta);
  if (chk_json_value(cfg, "epilogue"))
    ok = ok && chk_json_string(cfg, "epilogue", epi, sizeof epi);
  free(cfg);
  if (!ok)
    return chk_fail(ev, ins, "backend_config has no readable dot_dimension_numbers, alpha or beta");
  if (alpha_im != 0)
    return chk_fail(ev, ins, "gemm with a complex alpha is not supported by the evaluator");
  bool bias = strcmp(epi, "BIAS") == 0 || strcmp(epi, "BIAS_RELU") == 0;
  bool do_relu = strcmp(epi, "RELU") == 0 || strcmp(epi, "BIAS_RELU") == 0;
  if (!bias && !do_relu && strcmp(epi, "DEFAULT") != 0)
    return chk_fail(ev, ins, "gemm epilogue %s is not supported by the evaluator", epi);
  int need = 2 + (beta != 0) + bias;
  if (ins->noperands < need)
    return chk_fail(ev, ins, "gemm with beta %g and epilogue %s needs %d operands, has %d", beta, epi,
                    need, ins->noperands);

  hlo_instr dot = *ins;
  dot.op = HLO_OP_DOT;
  dot.noperands = 2;
  dot.shape = *rs;
  dot.attrs.nprecision = 0;
  dot.attrs.dot = (hlo_dot_dnums){{nlb, lb}, {nrb, rb}, {nlc, lc}, {nrc, rc}};
  hlo_value *d = chk_op_dot(ev, &dot, ops);
  if (!d)
    return NULL;
  if (alpha != 1 || beta != 0 || bias || do_relu) {
    const hlo_value *c = beta != 0 ? ops[2] : NULL;
    const hlo_value *b = bias ? ops[2 + (beta != 0)] : NULL;
    if (c && (!chk_is_array(c) || c->count != d->count))
      return chk_fail_unref(ev, ins, d, "gemm's c operand must have the result's shape");
    int64_t cols = d->rank ? d->dims[d->rank - 1] : 1;
    if (b && (!chk_is_array(b) || b->count != cols))
      return chk_fail_unref(ev, ins, d, "gemm's bias must have one element per result column");
    for (int64_t i = 0; i < d->count; i++) {
      double x = alpha * hlo_value_get_f64(d, i);
      if (c)
        x += beta * hlo_value_get_f64(c, i);
      if (b)
        x += hlo_value_get_f64(b, i % cols);
      hlo_value_set_f64(d, i, do_relu ? relu(x) : x);
    }
  }
  if (ins->shape.type != HLO_TUPLE)
    return d;
  hlo_value **e = calloc((size_t)ins->shape.ntuple, sizeof *e);
  if (!e)
    return chk_fail_unref(ev, ins, d, "out of memory");
  e[0] = d;
  for (int k = 1; k < ins->shape.ntuple; k++)
    if (ins->shape.elems[k].type == HLO_TUPLE ||
        !(e[k] = hlo_value_from_shape(&ins->shape.elems[k]))) {
      for (int j = 0; j < k; j++)
        hlo_value_unref(e[j]);
      free(e);
      return chk_fail(ev, ins, "cannot allocate gemm's workspace");
    }
  hlo_value *t = hlo_value_tuple(ins->shape.ntuple, e);
  if (!t)
    for (int k = 0; k < ins->shape.ntuple; k++)
      hlo_value_unref(e[k]);
  free(e);
  return t ? t : chk_fail(ev, ins, "out of memory");
}

static hlo_value *gpu_topk(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 1)
    return chk_fail(ev, ins, "__gpu$TopK takes one operand");
  return chk_topk(ev, ins, ops[0], true);
}

/* ---- the table ------------------------------------------------------------ */

static const struct {
  const char *target;
  custom_fn *fn;
} table[] = {
    {"Sharding", identity},
    {"SPMDFullToShardShape", identity},
    {"SPMDShardToFullShape", identity},
    {"annotate_device_placement", identity},
    {"MoveToHost", identity},
    {"MoveToDevice", identity},
    {"ShardBarrierFrom", identity},
    {"ShardBarrierTo", identity},
    {"AllocateBuffer", poison},
    {"__custom_kernel_fusion$workspace", poison},
    {"DynamicGte", dynamic_gte},
    {"SliceToDynamic", slice_to_dynamic},
    {"__cublas$gemm", gemm},
    {"__cublas$lt$matmul", gemm},
    {"__gpu$TopK", gpu_topk},
    {"xla_builder.math.IgammaGradA", chk_custom_igamma_grad_a},
    {"xla_builder.math.Polygamma", chk_custom_polygamma},
    {"xla_builder.math.RegularizedIncompleteBeta", chk_custom_betainc},
    {"xla_builder.tridiagonal.TridiagonalSolver", chk_custom_tridiagonal_solve},
    {"PartialReduce", chk_custom_partial_reduce},
    {"Qr", chk_custom_qr},
    {"ProductOfElementaryHouseholderReflectors", chk_custom_householder_product},
};

static const hlo_computation *named_computation(const hlo_module *m, const hlo_instr *ins);

static custom_fn *lookup(const char *target) {
  if (!target)
    return NULL;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].target, target) == 0)
      return table[i].fn;
  return NULL;
}

static const hlo_computation *named_computation(const hlo_module *m, const hlo_instr *ins) {
  if (ins->attrs.calls.to_apply)
    return ins->attrs.calls.to_apply;
  if (ins->attrs.calls.calls)
    return ins->attrs.calls.calls;
  /* `{%name}`: exactly one computation. */
  int n = 0;
  const hlo_computation *c = hlo_instr_listed_computation(m, ins, "called_computations", 0, &n);
  return n == 1 ? c : NULL;
}

const hlo_computation *chk_custom_call_named(const hlo_module *m, const hlo_instr *ins) {
  return named_computation(m, ins);
}

static bool marked_composite(const hlo_instr *ins) {
  const char *t = ins->attrs.custom_call_target;
  if (t && strncmp(t, "xla_builder.", 12) == 0)
    return true;
  for (int i = 0; i < ins->nraw; i++) {
    const char *v = ins->raw[i].value;
    if (strcmp(ins->raw[i].name, "is_composite") == 0 && v && strcmp(v, "true") == 0)
      return true;
    if (strcmp(ins->raw[i].name, "frontend_attributes") == 0 && v && strstr(v, "composite.name"))
      return true;
  }
  return false;
}

const hlo_computation *chk_custom_call_computation(const hlo_module *m, const hlo_instr *ins) {
  /* A called computation is often a helper (PartialReduce's comparator),
   * not the call's meaning: only a call marked as a composite whose
   * computation takes the operands and returns the result is one. */
  const hlo_computation *c = named_computation(m, ins);
  if (!c || !marked_composite(ins) || c->nparams != ins->noperands || !c->root ||
      !hlo_shape_equal(&c->root->shape, &ins->shape, false))
    return NULL;
  for (int k = 0; k < ins->noperands; k++)
    if (!c->params[k] || !hlo_shape_equal(&c->params[k]->shape, &ins->operands[k]->shape, false))
      return NULL;
  return c;
}

bool chk_custom_call_known(const hlo_module *m, const hlo_instr *ins) {
  return lookup(ins->attrs.custom_call_target) || chk_custom_call_computation(m, ins) || hlo_instr_unread(ins);
}

hlo_value *chk_op_custom_call(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  custom_fn *fn = lookup(ins->attrs.custom_call_target);
  if (fn)
    return fn(ev, ins, ops);
  const hlo_computation *c = chk_custom_call_computation(ev->m, ins);
  if (c)
    return chk_call(ev, ins, c, ins->noperands, ops);
  if (hlo_instr_unread(ins)) {
    hlo_value *z = hlo_value_from_shape(&ins->shape);
    return z ? z : chk_fail(ev, ins, "out of memory");
  }
  return chk_fail(ev, ins, "custom-call target \"%s\" is not supported by the evaluator",
                  ins->attrs.custom_call_target ? ins->attrs.custom_call_target : "");
}
