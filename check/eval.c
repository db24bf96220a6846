/* eval.c — the evaluator's driver: walks computations, owns values, runs
 * control flow, and hands every other instruction to its op family.
 *
 * Values of a computation live in one array indexed [instr][replica].  A
 * value is released right after its last user ran, so a long chain never
 * holds more than its live set.  Replicas run in lockstep: instruction i is
 * evaluated for every replica before instruction i+1, which is exactly what a
 * collective needs to see its peers.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval_async.h"
#include "eval_custom.h"
#include "eval_fuse.h"
#include "eval_internal.h"
#include "eval_sendrecv.h"
#include "replay.h"

enum { MAX_DEPTH = 64 };

hlo_value *chk_fail(chk_eval *ev, const hlo_instr *ins, const char *fmt, ...) {
  if (ev->failed)
    return NULL; /* keep the innermost, first error */
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ev->failed = 1;
  if (ins)
    hlo_error_set(ev->err, ins->line, ins->col, "%s (%s): %s", ins->name, hlo_opcode_name(ins->op), msg);
  else
    hlo_error_set(ev->err, 0, 0, "%s", msg);
  return NULL;
}

hlo_value *chk_fail_unref(chk_eval *ev, const hlo_instr *ins, hlo_value *r, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap); /* before the unref: it may read r */
  va_end(ap);
  chk_fail(ev, ins, "%s", msg);
  hlo_value_unref(r);
  return NULL;
}

hlo_value *chk_variadic_result(chk_eval *ev, const hlo_instr *ins, int n, hlo_value **arrays,
                               const char *what) {
  hlo_value *result = NULL;
  if (ins->shape.type == HLO_TUPLE) {
    result = hlo_value_tuple(n, arrays);
    if (!result)
      return chk_fail(ev, ins, "out of memory");
    for (int k = 0; k < n; k++)
      arrays[k] = NULL; /* the tuple owns them now */
  } else if (n == 1) {
    result = arrays[0];
    arrays[0] = NULL;
  } else {
    chk_fail(ev, ins, "a %s of %d operands must have a tuple shape", what, n);
  }
  return result;
}

static hlo_value *result(chk_eval *ev, const hlo_instr *ins, bool zero) {
  if (ins->shape.type == HLO_TUPLE)
    return chk_fail(ev, ins, "internal: array result expected, shape is a tuple");
  if (ins->shape.rank > HLO_MAX_RANK)
    return chk_fail(ev, ins, "rank %d exceeds the evaluator's limit of %d", ins->shape.rank, HLO_MAX_RANK);
  hlo_value *v = zero ? hlo_value_array(ins->shape.type, ins->shape.rank, ins->shape.dims)
                      : hlo_value_array_uninit(ins->shape.type, ins->shape.rank, ins->shape.dims);
  if (!v)
    return chk_fail(ev, ins, "out of memory for a result of %lld elements",
                    (long long)hlo_shape_elements(&ins->shape));
  return v;
}

hlo_value *chk_result(chk_eval *ev, const hlo_instr *ins) { return result(ev, ins, true); }

hlo_value *chk_result_uninit(chk_eval *ev, const hlo_instr *ins) { return result(ev, ins, false); }

static double monotonic_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

bool chk_past_deadline(const chk_eval *ev) { return ev->deadline > 0 && monotonic_s() > ev->deadline; }

bool chk_time_up(chk_eval *ev, const hlo_instr *ins) {
  if (!chk_past_deadline(ev))
    return false;
  chk_fail(ev, ins, "evaluation exceeded the time budget of %g s", ev->o.time_budget);
  return true;
}

/* ---- op table ------------------------------------------------------------ */

chk_op_fn *chk_op_lookup(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ABS: case HLO_OP_NEGATE: case HLO_OP_SIGN: case HLO_OP_FLOOR: case HLO_OP_CEIL:
  case HLO_OP_ROUND_AFZ: case HLO_OP_ROUND_EVEN: case HLO_OP_EXP: case HLO_OP_EXPM1:
  case HLO_OP_LOG: case HLO_OP_LOG1P: case HLO_OP_LOGISTIC: case HLO_OP_TANH: case HLO_OP_SQRT:
  case HLO_OP_RSQRT: case HLO_OP_CBRT: case HLO_OP_SINE: case HLO_OP_COSINE: case HLO_OP_TAN:
  case HLO_OP_ERF: case HLO_OP_IS_FINITE: case HLO_OP_NOT: case HLO_OP_POPCNT: case HLO_OP_CLZ:
  case HLO_OP_REDUCE_PRECISION: case HLO_OP_ADD: case HLO_OP_SUBTRACT: case HLO_OP_MULTIPLY:
  case HLO_OP_DIVIDE: case HLO_OP_REMAINDER: case HLO_OP_POWER: case HLO_OP_ATAN2:
  case HLO_OP_MAXIMUM: case HLO_OP_MINIMUM: case HLO_OP_AND: case HLO_OP_OR: case HLO_OP_XOR:
  case HLO_OP_SHIFT_LEFT: case HLO_OP_SHIFT_RIGHT_ARITHMETIC: case HLO_OP_SHIFT_RIGHT_LOGICAL:
  case HLO_OP_COMPARE: case HLO_OP_SELECT: case HLO_OP_CLAMP: case HLO_OP_CONVERT:
  case HLO_OP_BITCAST_CONVERT: case HLO_OP_REAL: case HLO_OP_IMAG: case HLO_OP_COMPLEX:
    return chk_op_elementwise;
  case HLO_OP_BROADCAST: case HLO_OP_RESHAPE: case HLO_OP_BITCAST: case HLO_OP_COPY:
  case HLO_OP_TRANSPOSE: case HLO_OP_SLICE: case HLO_OP_DYNAMIC_SLICE:
  case HLO_OP_DYNAMIC_UPDATE_SLICE: case HLO_OP_CONCATENATE: case HLO_OP_PAD:
  case HLO_OP_REVERSE: case HLO_OP_IOTA:
    return chk_op_movement;
  case HLO_OP_REDUCE: case HLO_OP_REDUCE_WINDOW: case HLO_OP_MAP:
    return chk_op_reduce;
  case HLO_OP_DOT:
    return chk_op_dot;
  case HLO_OP_CONVOLUTION:
    return chk_op_convolution;
  case HLO_OP_GATHER: case HLO_OP_SCATTER:
    return chk_op_gather;
  case HLO_OP_SORT:
    return chk_op_sort;
  case HLO_OP_TOPK:
    return chk_op_topk;
  case HLO_OP_RNG: case HLO_OP_RNG_BIT_GENERATOR:
    return chk_op_rng;
  case HLO_OP_FFT:
    return chk_op_fft;
  case HLO_OP_CUSTOM_CALL:
    return chk_op_custom_call;
  case HLO_OP_SELECT_AND_SCATTER:
    return chk_op_select_and_scatter;
  case HLO_OP_RAGGED_DOT:
    return chk_op_ragged_dot;
  case HLO_OP_SCALED_DOT:
    return chk_op_scaled_dot;
  case HLO_OP_SET_DIMENSION_SIZE: case HLO_OP_GET_DIMENSION_SIZE:
    return chk_op_dynamic;
  case HLO_OP_TRIANGULAR_SOLVE:
    return chk_op_triangular_solve;
  default:
    return NULL;
  }
}

static bool is_collective(hlo_opcode op) {
  return op == HLO_OP_ALL_GATHER || op == HLO_OP_ALL_REDUCE || op == HLO_OP_REDUCE_SCATTER ||
         op == HLO_OP_ALL_TO_ALL || op == HLO_OP_COLLECTIVE_PERMUTE || op == HLO_OP_COLLECTIVE_BROADCAST ||
         op == HLO_OP_RAGGED_ALL_TO_ALL;
}

/* Ops the driver evaluates itself. */
static bool is_structural(hlo_opcode op) {
  switch (op) {
  case HLO_OP_PARAMETER: case HLO_OP_CONSTANT: case HLO_OP_TUPLE: case HLO_OP_GET_TUPLE_ELEMENT:
  case HLO_OP_CALL: case HLO_OP_FUSION: case HLO_OP_WHILE: case HLO_OP_CONDITIONAL:
  case HLO_OP_REPLICA_ID: case HLO_OP_PARTITION_ID: case HLO_OP_OPT_BARRIER:
  case HLO_OP_ASYNC_UPDATE: case HLO_OP_ASYNC_DONE: case HLO_OP_ALL_REDUCE_DONE:
  case HLO_OP_ALL_GATHER_DONE: case HLO_OP_COLLECTIVE_PERMUTE_DONE: case HLO_OP_COPY_DONE:
  case HLO_OP_AFTER_ALL: case HLO_OP_ADD_DEPENDENCY: case HLO_OP_DOMAIN:
  case HLO_OP_SEND: case HLO_OP_SEND_DONE:
    return true;
  default:
    return false;
  }
}

/* An op the evaluator runs: itself, as a collective, through a family, or
 * (a start op) as the synchronous op it starts. */
static bool op_supported(const hlo_module *m, const hlo_instr *ins) {
  if (ins->op == HLO_OP_CUSTOM_CALL)
    return chk_custom_call_known(m, ins);
  /* Forms the op functions refuse, refused here too so they count as
   * unsupported rather than as evaluation errors. */
  if (ins->op == HLO_OP_RNG && ins->noperands != 2)
    return false;
  if (ins->op == HLO_OP_RNG_BIT_GENERATOR &&
      (!chk_rng_algorithm_known(ins) || ins->noperands != 1 || ins->operands[0]->shape.type != HLO_U64 ||
       ins->operands[0]->shape.rank != 1 || ins->shape.type != HLO_TUPLE || ins->shape.ntuple != 2))
    return false; /* a state that is no u64[N], or no (state, data) result */
  if ((ins->op == HLO_OP_COLLECTIVE_PERMUTE || ins->op == HLO_OP_COLLECTIVE_PERMUTE_START) && ins->noperands != 1)
    return false;
  if (ins->op == HLO_OP_SEND &&
      (chk_send_data_operand(ins) < 0 || ins->shape.type != HLO_TUPLE || ins->shape.ntuple != 3 ||
       !hlo_shape_equal(&ins->operands[chk_send_data_operand(ins)]->shape, &ins->shape.elems[0], false)))
    return false;
  if (ins->op == HLO_OP_RECV)
    return chk_feed_supported(ins) || chk_peer_recv_supported(ins);
  if (ins->op == HLO_OP_RECV_DONE)
    return chk_feed_supported(ins) || (ins->noperands == 1 && chk_peer_recv_supported(ins->operands[0]));
  if (ins->op == HLO_OP_INFEED || ins->op == HLO_OP_OUTFEED)
    return chk_feed_supported(ins);
  hlo_opcode op = ins->op;
  hlo_opcode sync = chk_async_sync_op(ins);
  if (sync != HLO_OP_INVALID)
    op = sync;
  return is_structural(op) || is_collective(op) || chk_op_lookup(op);
}

/* Why op_supported refuses a form of an op it otherwise runs, for the
 * message; NULL when the op itself is the reason.  These forms are ones
 * XLA's own verifier rejects or that need attributes the module lacks. */
static const char *form_refusal(const hlo_instr *ins) {
  switch (ins->op) {
  case HLO_OP_RNG:
    return ins->noperands != 2 ? "rng takes two operands (the distribution's parameters a and b)" : NULL;
  case HLO_OP_RNG_BIT_GENERATOR:
    if (!chk_rng_algorithm_known(ins))
      return NULL;
    return "rng-bit-generator takes one u64[N] state and returns a (state, data) tuple";
  case HLO_OP_COLLECTIVE_PERMUTE:
  case HLO_OP_COLLECTIVE_PERMUTE_START:
    if (ins->noperands == 4)
      return "4 operands are XLA's in-place collective-permute (input, output buffer, input and output start "
             "indices); only the one-operand form is evaluated";
    return ins->noperands != 1 ? "only the one-operand form is evaluated" : NULL;
  case HLO_OP_SEND:
    return "send takes (data, token) and returns (data, u32[], token[]) whose data has the operand's shape";
  default:
    return NULL;
  }
}

static bool dim_dynamic(const hlo_shape *s, int64_t d) {
  return s->type != HLO_TUPLE && s->dynamic && d >= 0 && d < s->rank && s->dynamic[d] != HLO_DIM_STATIC;
}

/* Why ins cannot be evaluated on dynamic dimensions padded with zeros
 * (eval_dynamic.c), or NULL: a reduction over such a dimension needs its
 * reducer's identity as padding, which zero is only for add; a sort would
 * sort the padding in; the runtime size itself is not tracked. */
static const char *dynamic_refusal(const hlo_instr *ins) {
  if (ins->noperands < 1)
    return NULL;
  const hlo_shape *x = &ins->operands[0]->shape;
  switch (ins->op) {
  case HLO_OP_GET_DIMENSION_SIZE:
    if (ins->attrs.dimensions.n == 1 && dim_dynamic(x, ins->attrs.dimensions.v[0]))
      return "get-dimension-size of a dynamic dimension (its runtime size is not tracked)";
    return NULL;
  case HLO_OP_REDUCE:
    for (int i = 0; i < ins->attrs.dimensions.n; i++)
      if (dim_dynamic(x, ins->attrs.dimensions.v[i]) && hlo_simple_reducer(ins->attrs.calls.to_apply) != HLO_OP_ADD)
        return "a reduce other than a sum over a dynamic dimension";
    return NULL;
  case HLO_OP_REDUCE_WINDOW:
    for (int d = 0; d < ins->attrs.window.rank; d++)
      if (ins->attrs.window.dims[d].size > 1 && dim_dynamic(x, d) &&
          hlo_simple_reducer(ins->attrs.calls.to_apply) != HLO_OP_ADD)
        return "a reduce-window other than a sum over a dynamic dimension";
    return NULL;
  case HLO_OP_SORT:
    for (int i = 0; i < ins->attrs.dimensions.n; i++)
      if (dim_dynamic(x, ins->attrs.dimensions.v[i]))
        return "a sort along a dynamic dimension";
    return NULL;
  default:
    return NULL;
  }
}

static bool literal_elided(const hlo_literal *l) {
  if (!l)
    return false;
  if (l->elided)
    return true;
  for (int i = 0; i < l->ntuple; i++)
    if (literal_elided(&l->elems[i]))
      return true;
  return false;
}

static int supported_comp(const hlo_module *m, const hlo_computation *c, hlo_error *err, int depth) {
  if (depth > MAX_DEPTH)
    return hlo_error_set(err, c->line, c->col, "computation calls nest deeper than %d", MAX_DEPTH);
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (ins->op == HLO_OP_CUSTOM_CALL && !op_supported(m, ins))
      return hlo_error_set(err, ins->line, ins->col,
                           "%s: op 'custom-call' with target \"%s\" is not supported by the evaluator", ins->name,
                           ins->attrs.custom_call_target ? ins->attrs.custom_call_target : "");
    if (ins->op == HLO_OP_RECV && !chk_feed_supported(ins) && !chk_peer_recv_supported(ins))
      return hlo_error_set(err, ins->line, ins->col,
                           "%s: op 'recv' from a peer device is not supported by the evaluator (only "
                           "is_host_transfer=true, or a send in the same computation with the same "
                           "_xla_send_recv_source_target_pairs whose data comes before the recv)",
                           ins->name);
    const char *dyn = dynamic_refusal(ins);
    if (dyn)
      return hlo_error_set(err, ins->line, ins->col, "%s: %s is not supported by the evaluator", ins->name, dyn);
    if (!op_supported(m, ins)) {
      const char *why = form_refusal(ins);
      return hlo_error_set(err, ins->line, ins->col, "%s: op '%s' is not supported by the evaluator%s%s",
                           ins->name, hlo_opcode_name(ins->async_wrapped ? ins->async_wrapped : ins->op),
                           why ? " in this form: " : "", why ? why : "");
    }
    if (ins->op == HLO_OP_CUSTOM_CALL) {
      const hlo_computation *cc = chk_custom_call_computation(m, ins);
      if (cc && cc != ins->attrs.calls.to_apply && cc != ins->attrs.calls.calls &&
          supported_comp(m, cc, err, depth + 1) != 0)
        return -1;
    }
    if (ins->op == HLO_OP_CONSTANT && literal_elided(ins->literal))
      return hlo_error_set(err, ins->line, ins->col,
                           "%s: constant data was elided ({...}) in the HLO text, so it cannot be evaluated",
                           ins->name);
    const hlo_calls *k = &ins->attrs.calls;
    const hlo_computation *callees[4] = {k->to_apply, k->calls, k->condition, k->body};
    for (int j = 0; j < 4; j++)
      if (callees[j] && supported_comp(m, callees[j], err, depth + 1) != 0)
        return -1;
    for (int j = 0; j < k->nbranches; j++)
      if (k->branches[j] && supported_comp(m, k->branches[j], err, depth + 1) != 0)
        return -1;
    if (ins->op == HLO_OP_SELECT_AND_SCATTER)
      for (int j = 0; j < 2; j++) {
        const hlo_computation *raw = hlo_instr_named_computation(m, ins, j ? "scatter" : "select");
        if (raw && supported_comp(m, raw, err, depth + 1) != 0)
          return -1;
      }
  }
  return 0;
}

int chk_eval_supported(const hlo_module *m, hlo_error *err) {
  if (!m->entry)
    return hlo_error_set(err, 0, 0, "module has no entry computation");
  return supported_comp(m, m->entry, err, 0);
}

/* ---- reducer recognition ------------------------------------------------- */

/* ---- evaluation ---------------------------------------------------------- */

static int eval_comp(chk_eval *ev, const hlo_computation *c, int nrep, int base,
                     hlo_value *const *args, hlo_value **res);

static hlo_value *fail_value(chk_eval *ev, const hlo_instr *ins, const char *what) {
  return chk_fail(ev, ins, "%s", what);
}

/* Calls callee for nrep replicas with operands vals[op][r] as arguments. */
static int call_lockstep(chk_eval *ev, const hlo_instr *ins, const hlo_computation *callee, int nrep,
                         int base, hlo_value **opv, hlo_value **out) {
  int n = ins->noperands;
  if (callee->nparams != n) {
    chk_fail(ev, ins, "calls %s with %d operands but it has %d parameters", callee->name, n,
             callee->nparams);
    return -1;
  }
  hlo_value **args = calloc((size_t)(nrep * (n ? n : 1)), sizeof *args);
  if (!args) {
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  for (int r = 0; r < nrep; r++)
    for (int k = 0; k < n; k++)
      args[r * n + k] = opv[k * nrep + r];
  int rc = eval_comp(ev, callee, nrep, base, args, out);
  free(args);
  return rc;
}

static bool pred_true(const hlo_value *v) { return hlo_value_get_i64(v, 0) != 0; }

static int eval_while(chk_eval *ev, const hlo_instr *ins, int nrep, int base, hlo_value **opv,
                      hlo_value **out) {
  const hlo_computation *cond = ins->attrs.calls.condition, *body = ins->attrs.calls.body;
  if (!cond || !body) {
    chk_fail(ev, ins, "while needs condition and body");
    return -1;
  }
  hlo_value **state = calloc((size_t)nrep, sizeof *state);
  hlo_value **flag = calloc((size_t)nrep, sizeof *flag);
  if (!state || !flag) {
    free(state);
    free(flag);
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  for (int r = 0; r < nrep; r++)
    state[r] = hlo_value_ref(opv[r]);
  int rc = 0;
  /* A loop that never ends is a property of the module, not a reason to
   * hang the checker: past this many iterations evaluation fails. */
  const int64_t max_iterations = ev->o.max_while_iterations > 0 ? ev->o.max_while_iterations : CHK_EVAL_MAX_WHILE;
  for (int64_t iter = 0;; iter++) {
    /* Every iteration counts, even one of scalar instructions: a loop
     * that never ends must meet the deadline wherever its time goes. */
    if (chk_tick(ev, ins, 1) || eval_comp(ev, cond, nrep, base, state, flag) != 0) {
      rc = -1;
      break;
    }
    bool go = pred_true(flag[0]), agree = true;
    for (int r = 0; r < nrep; r++) {
      agree = agree && pred_true(flag[r]) == go;
      hlo_value_unref(flag[r]);
      flag[r] = NULL;
    }
    if (!agree) {
      chk_fail(ev, ins, "replicas disagree on the loop condition; lockstep evaluation cannot continue");
      rc = -1;
      break;
    }
    if (!go)
      break;
    /* Checked once the condition held again, so that a loop of exactly
     * max_iterations iterations still ends normally. */
    if (iter == max_iterations) {
      chk_fail(ev, ins, "while loop ran %lld iterations without its condition turning false",
               (long long)max_iterations);
      rc = -1;
      break;
    }
    hlo_value **next = flag; /* reuse as scratch for the new state */
    if (eval_comp(ev, body, nrep, base, state, next) != 0) {
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep; r++) {
      hlo_value_unref(state[r]);
      state[r] = next[r];
      next[r] = NULL;
    }
  }
  for (int r = 0; r < nrep; r++) {
    if (rc == 0)
      out[r] = state[r];
    else
      hlo_value_unref(state[r]);
  }
  free(state);
  free(flag);
  return rc;
}

static int eval_conditional(chk_eval *ev, const hlo_instr *ins, int nrep, int base, hlo_value **opv,
                            hlo_value **out) {
  const hlo_calls *k = &ins->attrs.calls;
  int n = ins->noperands;
  if (k->nbranches < 1 || n != k->nbranches + 1) {
    chk_fail(ev, ins, "conditional has %d branches and %d operands", k->nbranches, n);
    return -1;
  }
  /* Each replica may pick its own branch, so run them one by one. */
  for (int r = 0; r < nrep; r++) {
    const hlo_value *sel = opv[0 * nrep + r];
    int64_t b;
    if (sel->type == HLO_PRED)
      b = pred_true(sel) ? 0 : 1; /* true_computation is branch 0 */
    else {
      b = hlo_value_get_i64(sel, 0);
      if (b < 0 || b >= k->nbranches)
        b = k->nbranches - 1; /* out of range selects the last branch */
    }
    const hlo_computation *br = k->branches[b];
    if (br->nparams != 1) {
      chk_fail(ev, ins, "branch %s must take one parameter", br->name);
      return -1;
    }
    hlo_value *arg = opv[(1 + b) * nrep + r];
    if (eval_comp(ev, br, 1, base + r, &arg, &out[r]) != 0) {
      for (int q = 0; q < r; q++) {
        hlo_value_unref(out[q]);
        out[q] = NULL;
      }
      return -1;
    }
  }
  return 0;
}

static int eval_instr(chk_eval *ev, const hlo_instr *ins, int nrep, int base, hlo_value *const *args,
                      hlo_value **vals, hlo_value **out);

/* A start op: its synchronous op is evaluated as an instruction of the
 * same operands and the result's shape, then packed into the start's
 * value (eval_async.h).  The hook sees the start and the instructions
 * of a called computation, not the stand-in. */
static int eval_start(chk_eval *ev, const hlo_instr *ins, int nrep, int base, hlo_value *const *args,
                      hlo_value **vals, hlo_value **opv, hlo_value **out) {
  const hlo_shape *rs = chk_async_result_shape(ins);
  if (!rs) {
    chk_fail(ev, ins, "the shape has no element for the result of the %s it starts",
             hlo_opcode_name(chk_async_sync_op(ins)));
    return -1;
  }
  hlo_instr sync = *ins;
  sync.op = chk_async_sync_op(ins);
  sync.async_wrapped = HLO_OP_INVALID;
  sync.shape = *rs;
  int n = ins->noperands;
  hlo_value **res = calloc((size_t)nrep, sizeof *res);
  hlo_value **row = calloc((size_t)(n ? n : 1), sizeof *row);
  if (!res || !row) {
    free(res);
    free(row);
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  const hlo_instr *outer = ev->unhooked;
  ev->unhooked = &sync;
  int rc = eval_instr(ev, &sync, nrep, base, args, vals, res);
  ev->unhooked = outer;
  for (int r = 0; r < nrep && rc == 0; r++) {
    for (int k = 0; k < n; k++)
      row[k] = opv[k * nrep + r];
    char why[100] = "";
    if (!(out[r] = chk_async_pack(ins, row, res[r], why, sizeof why))) {
      chk_fail(ev, ins, "%s", why);
      rc = -1;
    }
  }
  for (int r = 0; r < nrep; r++)
    hlo_value_unref(res[r]);
  free(res);
  free(row);
  return rc;
}

/* Evaluates one instruction for all replicas; vals is [instr][replica]. */
static int eval_instr(chk_eval *ev, const hlo_instr *ins, int nrep, int base, hlo_value *const *args,
                      hlo_value **vals, hlo_value **out) {
  int n = ins->noperands;
  const hlo_computation *c = ins->parent;
  /* Operand values, gathered as [operand][replica]. */
  hlo_value *stack_ops[16];
  hlo_value **opv = stack_ops;
  if ((size_t)n * (size_t)nrep > 16) {
    opv = malloc(sizeof *opv * (size_t)n * (size_t)nrep);
    if (!opv) {
      chk_fail(ev, ins, "out of memory");
      return -1;
    }
  }
  for (int k = 0; k < n; k++)
    for (int r = 0; r < nrep; r++)
      opv[k * nrep + r] = vals[ins->operands[k]->index * nrep + r];

  int rc = 0;
  switch (ins->op) {
  case HLO_OP_PARAMETER: {
    int64_t p = ins->parameter_number;
    if (p < 0 || p >= c->nparams) {
      chk_fail(ev, ins, "parameter %lld out of range", (long long)p);
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep; r++)
      out[r] = hlo_value_ref(args[r * c->nparams + p]);
    break;
  }
  case HLO_OP_CONSTANT: {
    char why[200] = "";
    hlo_value *v = ins->literal ? hlo_value_from_literal(&ins->shape, ins->literal, why, sizeof why) : NULL;
    if (!v) {
      chk_fail(ev, ins, "%s", why[0] ? why : "constant has no literal");
      rc = -1;
      break;
    }
    out[0] = v;
    for (int r = 1; r < nrep; r++)
      out[r] = hlo_value_ref(v);
    break;
  }
  case HLO_OP_TUPLE:
    for (int r = 0; r < nrep && rc == 0; r++) {
      hlo_value *e[64] = {0};
      hlo_value **el = n <= 64 ? e : malloc(sizeof *el * (size_t)n);
      if (!el) {
        chk_fail(ev, ins, "out of memory");
        rc = -1;
        break;
      }
      for (int k = 0; k < n; k++)
        el[k] = hlo_value_ref(opv[k * nrep + r]);
      out[r] = hlo_value_tuple(n, el);
      if (!out[r]) {
        for (int k = 0; k < n; k++)
          hlo_value_unref(el[k]);
        chk_fail(ev, ins, "out of memory");
        rc = -1;
      }
      if (el != e)
        free(el);
    }
    break;
  case HLO_OP_GET_TUPLE_ELEMENT:
    for (int r = 0; r < nrep; r++) {
      hlo_value *t = opv[r];
      int64_t i = ins->attrs.index;
      if (t->type != HLO_TUPLE || i < 0 || i >= t->ntuple) {
        chk_fail(ev, ins, "index %lld is not an element of the operand", (long long)i);
        rc = -1;
        break;
      }
      out[r] = hlo_value_ref(t->elems[i]);
    }
    break;
  case HLO_OP_OPT_BARRIER:
  case HLO_OP_ASYNC_UPDATE:
  case HLO_OP_ADD_DEPENDENCY:
  case HLO_OP_DOMAIN:
    /* Identity on operand 0: these order or annotate, never compute. */
    if (n < 1) {
      chk_fail(ev, ins, "needs an operand");
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep; r++)
      out[r] = hlo_value_ref(opv[r]);
    break;
  case HLO_OP_SEND:
    /* A send changes no value of the module: its result is (data,
     * context, token), and send-done's is a token. */
    if (chk_send_data_operand(ins) < 0 || ins->shape.type != HLO_TUPLE || ins->shape.ntuple != 3) {
      chk_fail(ev, ins, "send takes (data, token) and returns (data, u32[], token[])");
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep && rc == 0; r++) {
      hlo_value *data = opv[chk_send_data_operand(ins) * nrep + r];
      if (!hlo_value_matches(data, &ins->shape.elems[0])) {
        chk_fail(ev, ins, "the data operand does not have the shape the result names");
        rc = -1;
        break;
      }
      hlo_value *e[3] = {hlo_value_ref(data), hlo_value_from_shape(&ins->shape.elems[1]),
                         hlo_value_from_shape(&ins->shape.elems[2])};
      if (!e[1] || !e[2] || !(out[r] = hlo_value_tuple(3, e))) {
        for (int k = 0; k < 3; k++)
          hlo_value_unref(e[k]);
        chk_fail(ev, ins, "out of memory");
        rc = -1;
      }
    }
    break;
  case HLO_OP_INFEED:
  case HLO_OP_OUTFEED:
  case HLO_OP_RECV: {
    if (ins->op == HLO_OP_RECV && !chk_feed_supported(ins)) { /* a peer's, eval_sendrecv.c */
      const hlo_instr *s = chk_peer_send(ins);
      if (!s) {
        chk_fail(ev, ins, "a recv from a peer device needs its send in the same computation");
        rc = -1;
      } else {
        const hlo_instr *data = s->operands[chk_send_data_operand(s)];
        rc = chk_peer_recv(ev, ins, nrep, base, &vals[(size_t)data->index * nrep], out);
      }
      break;
    }
    hlo_value *v = chk_feed_value(ev, ins);
    if (!v) {
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep; r++)
      out[r] = r ? hlo_value_ref(v) : v;
    break;
  }
  case HLO_OP_RECV_DONE:
    if (n != 1) {
      chk_fail(ev, ins, "recv-done takes one operand");
      rc = -1;
    }
    for (int r = 0; r < nrep && rc == 0; r++)
      if (!(out[r] = chk_recv_done(ev, ins, opv[r])))
        rc = -1;
    break;
  case HLO_OP_SEND_DONE:
  case HLO_OP_AFTER_ALL:
    for (int r = 0; r < nrep && rc == 0; r++)
      if (!(out[r] = hlo_value_from_shape(&ins->shape))) {
        chk_fail(ev, ins, "out of memory");
        rc = -1;
      }
    break;
  case HLO_OP_ASYNC_START: case HLO_OP_ALL_REDUCE_START: case HLO_OP_ALL_GATHER_START:
  case HLO_OP_COLLECTIVE_PERMUTE_START: case HLO_OP_COPY_START:
    rc = eval_start(ev, ins, nrep, base, args, vals, opv, out);
    break;
  case HLO_OP_ASYNC_DONE: case HLO_OP_ALL_REDUCE_DONE: case HLO_OP_ALL_GATHER_DONE:
  case HLO_OP_COLLECTIVE_PERMUTE_DONE: case HLO_OP_COPY_DONE:
    for (int r = 0; r < nrep && rc == 0; r++)
      if (n != 1 || !(out[r] = chk_async_unpack(ins, opv[r]))) {
        chk_fail(ev, ins, "the operand's value does not hold this done's result");
        rc = -1;
      }
    break;
  case HLO_OP_REPLICA_ID:
  case HLO_OP_PARTITION_ID:
    for (int r = 0; r < nrep && rc == 0; r++) {
      out[r] = chk_result(ev, ins);
      if (!out[r]) {
        rc = -1;
        break;
      }
      hlo_value_set_i64(out[r], 0, ins->op == HLO_OP_REPLICA_ID ? base + r : 0);
    }
    break;
  case HLO_OP_CALL:
  case HLO_OP_FUSION: {
    const hlo_computation *callee = ins->attrs.calls.calls ? ins->attrs.calls.calls : ins->attrs.calls.to_apply;
    if (!callee) {
      chk_fail(ev, ins, "no called computation");
      rc = -1;
      break;
    }
    rc = call_lockstep(ev, ins, callee, nrep, base, opv, out);
    break;
  }
  case HLO_OP_WHILE:
    rc = eval_while(ev, ins, nrep, base, opv, out);
    break;
  case HLO_OP_CONDITIONAL:
    rc = eval_conditional(ev, ins, nrep, base, opv, out);
    break;
  default:
    if (is_collective(ins->op)) {
      /* chk_op_collective wants [replica][operand] */
      hlo_value **rows = malloc(sizeof *rows * (size_t)(n ? n : 1) * (size_t)nrep);
      if (!rows) {
        chk_fail(ev, ins, "out of memory");
        rc = -1;
        break;
      }
      for (int r = 0; r < nrep; r++)
        for (int k = 0; k < n; k++)
          rows[r * n + k] = opv[k * nrep + r];
      rc = chk_op_collective(ev, ins, nrep, rows, out);
      free(rows);
      break;
    }
    chk_op_fn *fn = chk_op_lookup(ins->op);
    if (!fn) {
      chk_fail(ev, ins, "op '%s' is not supported by the evaluator",
               ins->async_wrapped ? "async" : hlo_opcode_name(ins->op));
      rc = -1;
      break;
    }
    hlo_value *row[64];
    hlo_value **rowp = n <= 64 ? row : malloc(sizeof *rowp * (size_t)n);
    if (!rowp) {
      chk_fail(ev, ins, "out of memory");
      rc = -1;
      break;
    }
    for (int r = 0; r < nrep; r++) {
      for (int k = 0; k < n; k++)
        rowp[k] = opv[k * nrep + r];
      int given = nrep == 1 && ev->o.provide ? ev->o.provide(ev->o.provide_ctx, ins, rowp, n, &out[r]) : 0;
      if (given < 0) {
        chk_fail(ev, ins, "out of memory");
        rc = -1;
        break;
      }
      if (!given)
        out[r] = fn(ev, ins, rowp);
      if (!out[r]) {
        if (!ev->failed)
          fail_value(ev, ins, "evaluation failed");
        rc = -1;
        break;
      }
    }
    if (rowp != row)
      free(rowp);
  }
  if (rc == 0 && ev->o.hook && ins != ev->unhooked) {
    hlo_value *row[64];
    for (int r = 0; r < nrep && n <= 64; r++) {
      for (int k = 0; k < n; k++)
        row[k] = opv[k * nrep + r];
      ev->o.hook(ev->o.hook_ctx, ins, row, n, &out[r]);
    }
  }
  if (opv != stack_ops)
    free(opv);
  if (rc != 0) {
    for (int r = 0; r < nrep; r++) {
      hlo_value_unref(out[r]);
      out[r] = NULL;
    }
    return -1;
  }
  for (int r = 0; r < nrep; r++) {
    if (!out[r] || (!ev->failed && !hlo_value_matches(out[r], &ins->shape) && ins->op != HLO_OP_PARAMETER)) {
      for (int q = 0; q < nrep; q++) {
        hlo_value_unref(out[q]);
        out[q] = NULL;
      }
      chk_fail(ev, ins, "internal: result does not have the instruction's shape");
      return -1;
    }
  }
  return 0;
}

static int eval_comp(chk_eval *ev, const hlo_computation *c, int nrep, int base,
                     hlo_value *const *args, hlo_value **res) {
  if (ev->depth >= MAX_DEPTH) {
    chk_fail(ev, c->root, "computation calls nest deeper than %d", MAX_DEPTH);
    return -1;
  }
  if (!c->root || c->ninstrs == 0) {
    chk_fail(ev, NULL, "computation %s is empty", c->name);
    return -1;
  }
  int ni = c->ninstrs;
  hlo_value **vals = calloc((size_t)ni * (size_t)nrep, sizeof *vals);
  int *last_use = malloc(sizeof *last_use * (size_t)ni);
  if (!vals || !last_use) {
    free(vals);
    free(last_use);
    chk_fail(ev, c->root, "out of memory");
    return -1;
  }
  /* Elementwise chains run block by block (eval_fuse.h): a group's members
   * are evaluated, and read their operands, at the group root's position.
   * With a hook everything runs op by op so the hook sees every op. */
  chk_fuse_plan *fp = ev->o.hook ? NULL : chk_fuse_plan_build(c);
  const chk_replay *rp = chk_replay_active(&ev->o, c, nrep);
  /* Last position at which each value is read; the root lives to the end. */
  for (int i = 0; i < ni; i++)
    last_use[i] = i;
  for (int i = 0; i < ni; i++) {
    int at = fp ? chk_fuse_eval_pos(fp, c->instrs[i]) : i;
    for (int k = 0; k < c->instrs[i]->noperands; k++) {
      int j = c->instrs[i]->operands[k]->index;
      if (last_use[j] < at)
        last_use[j] = at;
    }
  }
  last_use[c->root->index] = ni;
  /* A peer recv reads its send's data (eval_sendrecv.c), which must live
   * until then. */
  for (int i = 0; i < ni; i++) {
    const hlo_instr *s = c->instrs[i]->op == HLO_OP_RECV ? chk_peer_send(c->instrs[i]) : NULL;
    int at = fp ? chk_fuse_eval_pos(fp, c->instrs[i]) : i;
    int k = s ? chk_send_data_operand(s) : -1;
    if (k >= 0 && last_use[s->operands[k]->index] < at)
      last_use[s->operands[k]->index] = at;
  }

  ev->depth++;
  int rc = 0;
  for (int i = 0; i < ni && rc == 0; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (fp && chk_fuse_eval_pos(fp, ins) != i)
      continue; /* a group member: produced at its group's root */
    /* Dead instructions (never read, not the root) are skipped: they cannot
     * change the result, and skipping them keeps unsupported debris in real
     * dumps from failing a fusion whose root does not need it. */
    if (last_use[i] == i && ins != c->root)
      continue;
    /* A replay (replay.h) takes what the changed value does not reach
     * from its recording, and still shows a recorded value to the hook. */
    chk_replay_step step = rp ? chk_replay_step_of(rp, i) : CHK_REPLAY_EVALUATE;
    if (step == CHK_REPLAY_SKIP)
      continue;
    if (step == CHK_REPLAY_RECORDED) {
      vals[i] = chk_replay_value(rp, i);
      ev->o.hook(ev->o.hook_ctx, ins, NULL, 0, &vals[i]);
      continue;
    }
    /* An instruction's work is at least its result's size; ops that do
     * much more per element (dot, convolution, reduce-window) also slice
     * their own loops. */
    if (chk_tick(ev, ins, ins->shape.type == HLO_TUPLE ? 1 : hlo_shape_elements(&ins->shape))) {
      rc = -1;
      break;
    }
    /* HOOK(fuse): block-by-block elementwise groups are wired in here. */
    const hlo_instr *const *reads = (const hlo_instr *const *)ins->operands;
    int nreads = ins->noperands;
    if (fp && chk_fuse_is_root(fp, ins)) {
      rc = chk_fuse_eval_group(ev, fp, ins, nrep, vals);
      nreads = chk_fuse_group_inputs(fp, ins, &reads);
    } else {
      rc = eval_instr(ev, ins, nrep, base, args, vals, &vals[(size_t)i * nrep]);
    }
    /* Release operands whose last reader this was. */
    for (int k = 0; k < nreads && rc == 0; k++) {
      int j = reads[k]->index;
      if (last_use[j] == i)
        for (int r = 0; r < nrep; r++) {
          hlo_value_unref(vals[(size_t)j * nrep + r]);
          vals[(size_t)j * nrep + r] = NULL;
        }
    }
  }
  ev->depth--;
  if (rc == 0)
    for (int r = 0; r < nrep; r++) {
      res[r] = vals[(size_t)c->root->index * nrep + r];
      vals[(size_t)c->root->index * nrep + r] = NULL;
    }
  for (size_t i = 0; i < (size_t)ni * (size_t)nrep; i++)
    hlo_value_unref(vals[i]);
  free(vals);
  free(last_use);
  chk_fuse_plan_free(fp);
  return rc;
}

int chk_eval_computation(chk_eval *ev, const hlo_computation *c, int nrep, hlo_value *const *args,
                         hlo_value **res) {
  return eval_comp(ev, c, nrep, 0, args, res);
}

hlo_value *chk_call(chk_eval *ev, const hlo_instr *site, const hlo_computation *c, int nargs,
                    hlo_value *const *args) {
  if (c->nparams != nargs)
    return chk_fail(ev, site, "%s takes %d parameters, called with %d", c->name, c->nparams, nargs);
  hlo_value *res = NULL;
  if (eval_comp(ev, c, 1, 0, args, &res) != 0)
    return NULL;
  return res;
}

int chk_eval_module(const hlo_module *m, int nargs, hlo_value *const *args, const chk_eval_opts *o,
                    hlo_value **outs, hlo_error *err) {
  chk_eval ev = {.m = m, .err = err};
  if (o)
    ev.o = *o;
  if (ev.o.replicas < 1)
    ev.o.replicas = 1;
  if (ev.o.time_budget > 0)
    ev.deadline = monotonic_s() + ev.o.time_budget;
  const hlo_computation *e = m->entry;
  if (!e)
    return hlo_error_set(err, 0, 0, "module has no entry computation");
  if (nargs != e->nparams)
    return hlo_error_set(err, e->line, e->col, "entry computation %s takes %d parameters, %d given",
                         e->name, e->nparams, nargs);
  for (int k = 0; k < nargs; k++) {
    const hlo_instr *p = e->params[k];
    if (!p || !hlo_value_matches(args[k], &p->shape))
      return hlo_error_set(err, p ? p->line : e->line, p ? p->col : e->col,
                           "argument %d does not match the shape of parameter %d", k, k);
  }
  int nrep = ev.o.replicas;
  hlo_value **rows = calloc((size_t)nrep * (size_t)(nargs ? nargs : 1), sizeof *rows);
  hlo_value **res = calloc((size_t)nrep, sizeof *res);
  if (!rows || !res) {
    free(rows);
    free(res);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  for (int r = 0; r < nrep; r++)
    for (int k = 0; k < nargs; k++)
      rows[r * nargs + k] = args[k];
  int rc = eval_comp(&ev, e, nrep, 0, rows, res);
  free(rows);
  if (rc == 0)
    for (int r = 0; r < nrep; r++)
      outs[r] = res[r];
  free(res);
  return rc;
}
