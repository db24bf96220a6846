/* eval_collective.c — collectives across simulated replicas.
 *
 * The driver evaluates replicas in lockstep and hands a collective every
 * replica's operands at once.  Replica groups follow replica_groups; an empty
 * list means one group of all replicas.  Partitions are not simulated
 * (num_partitions is 1), so group members are replica ids.
 *
 * Reductions combine the members of a group in group order, one step at a
 * time, each step rounded to the element type exactly as the reducer
 * computation would (the elementwise family does the arithmetic, so a bf16
 * all-reduce rounds like a bf16 add).
 */
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

/* The group replica r belongs to and r's position in it; -1 if none. */
static int find_group(const hlo_instr *ins, int nrep, int r, const int64_t **members, int *size) {
  const hlo_replica_groups *g = &ins->attrs.replica_groups;
  if (g->ngroups == 0) {
    *members = NULL; /* all replicas, in order */
    *size = nrep;
    return r;
  }
  for (int i = 0; i < g->ngroups; i++)
    for (int j = 0; j < g->groups[i].n; j++)
      if (g->groups[i].v[j] == r) {
        *members = g->groups[i].v;
        *size = g->groups[i].n;
        return j;
      }
  return -1;
}

static int member(const int64_t *members, int j) { return members ? (int)members[j] : j; }

static int check_members(chk_eval *ev, const hlo_instr *ins, const int64_t *members, int size, int nrep) {
  for (int j = 0; j < size; j++) {
    int m = member(members, j);
    if (m < 0 || m >= nrep) {
      chk_fail(ev, ins, "replica group names replica %d but only %d replicas are simulated (--replicas)",
               m, nrep);
      return -1;
    }
  }
  return 0;
}

/* The group of replica r (members, size) and r's position in it; -1 after
 * chk_fail when r is in no group or the group names a replica that is not
 * simulated. */
static int group_of(chk_eval *ev, const hlo_instr *ins, int nrep, int r, const int64_t **members, int *size) {
  int pos = find_group(ins, nrep, r, members, size);
  if (pos < 0) {
    chk_fail(ev, ins, "replica %d is in no replica group", r);
    return -1;
  }
  return check_members(ev, ins, *members, *size, nrep) == 0 ? pos : -1;
}

/* A member of the group (members, size) that comes before replica r, or
 * -1.  All-reduce and all-gather give every member of a group the same
 * value, in the group's order whatever the member, so a later member
 * shares the earlier one's result: one computation and one copy per group
 * instead of one per replica, which made a 64-replica all-reduce cost
 * 64 x 64 sums of the whole array. */
static int earlier_member(const int64_t *members, int size, int r) {
  for (int j = 0; j < size; j++)
    if (member(members, j) < r)
      return member(members, j);
  return -1;
}

/* acc = reducer(acc, x) for arrays of one type, through the elementwise
 * family for simple reducers and through per-element calls otherwise. */
static hlo_value *combine(chk_eval *ev, const hlo_instr *ins, hlo_value *acc, hlo_value *x) {
  const hlo_computation *red = ins->attrs.calls.to_apply;
  hlo_opcode op = hlo_simple_reducer(red);
  if (op != HLO_OP_INVALID) {
    /* A stand-in binary instruction whose operands and result have the
     * array's shape, so the elementwise family sees an ordinary add/max. */
    hlo_shape shape = {.type = acc->type, .rank = acc->rank, .dims = acc->dims};
    hlo_instr operand = {.name = ins->name, .op = HLO_OP_PARAMETER, .shape = shape};
    hlo_instr *operands[2] = {&operand, &operand};
    hlo_instr fake = {.name = ins->name, .op = op, .shape = shape, .noperands = 2,
                      .operands = operands, .parent = ins->parent, .line = ins->line, .col = ins->col};
    hlo_value *ops[2] = {acc, x};
    return chk_op_elementwise(ev, &fake, ops);
  }
  hlo_value *out = hlo_value_array(acc->type, acc->rank, acc->dims);
  if (!out)
    return chk_fail(ev, ins, "out of memory");
  for (int64_t i = 0; i < acc->count; i++) {
    hlo_value *a = hlo_value_array(acc->type, 0, NULL), *b = hlo_value_array(acc->type, 0, NULL);
    if (!a || !b) {
      hlo_value_unref(a);
      hlo_value_unref(b);
      hlo_value_unref(out);
      return chk_fail(ev, ins, "out of memory");
    }
    memcpy(a->data, (char *)acc->data + i * acc->elem_size, acc->elem_size);
    memcpy(b->data, (char *)x->data + i * x->elem_size, x->elem_size);
    hlo_value *args[2] = {a, b};
    hlo_value *r = chk_call(ev, ins, red, 2, args);
    hlo_value_unref(a);
    hlo_value_unref(b);
    if (!r || r->type != acc->type || r->count != 1) {
      hlo_value_unref(r);
      hlo_value_unref(out);
      return ev->failed ? NULL : chk_fail(ev, ins, "reducer must return a scalar of the operand type");
    }
    memcpy((char *)out->data + i * out->elem_size, r->data, out->elem_size);
    hlo_value_unref(r);
  }
  return out;
}

/* Leaves of an operand list: all-reduce and friends accept several operands
 * (or one tuple) and treat each array independently. */
static hlo_value *leaf(hlo_value *const *ops, int n, int k) {
  if (n == 1 && ops[0]->type == HLO_TUPLE)
    return ops[0]->elems[k];
  return ops[k];
}

static int leaf_count(hlo_value *const *ops, int n) {
  return (n == 1 && ops[0]->type == HLO_TUPLE) ? ops[0]->ntuple : n;
}

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

/* Wraps per-leaf results back into the instruction's result form. */
static hlo_value *wrap(chk_eval *ev, const hlo_instr *ins, hlo_value **leaves, int nl) {
  if (ins->shape.type != HLO_TUPLE)
    return leaves[0];
  hlo_value *t = hlo_value_tuple(nl, leaves);
  if (!t) {
    for (int k = 0; k < nl; k++)
      hlo_value_unref(leaves[k]);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}

static int all_reduce(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops, hlo_value **outs) {
  int n = ins->noperands;
  int nl = leaf_count(ops, n);
  for (int r = 0; r < nrep; r++) {
    const int64_t *mem;
    int size;
    if (group_of(ev, ins, nrep, r, &mem, &size) < 0)
      return -1;
    int q = earlier_member(mem, size, r);
    if (q >= 0) {
      outs[r] = hlo_value_ref(outs[q]);
      continue;
    }
    hlo_value *res[64];
    if (nl > 64) {
      chk_fail(ev, ins, "more than 64 operands");
      return -1;
    }
    for (int k = 0; k < nl; k++) {
      hlo_value *acc = hlo_value_ref(leaf(&ops[member(mem, 0) * n], n, k));
      for (int j = 1; j < size && acc; j++) {
        hlo_value *next = combine(ev, ins, acc, leaf(&ops[member(mem, j) * n], n, k));
        hlo_value_unref(acc);
        acc = next;
      }
      if (!acc) {
        unref_all(res, k);
        return -1;
      }
      res[k] = acc;
    }
    outs[r] = wrap(ev, ins, res, nl);
    if (!outs[r])
      return -1;
  }
  return 0;
}

/* For a copy along dimension d of src: the rows before d (outer) and the
 * bytes of one step along d (inner). */
static void split_at(const hlo_value *src, int d, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = (int64_t)src->elem_size;
  for (int i = 0; i < d; i++)
    *outer *= src->dims[i];
  for (int i = d + 1; i < src->rank; i++)
    *inner *= src->dims[i];
}

/* Copies src into dst at offset `at` along dimension d (all other dims equal). */
static void place(hlo_value *dst, const hlo_value *src, int d, int64_t at) {
  int64_t outer, inner;
  split_at(src, d, &outer, &inner);
  int64_t srow = src->dims[d] * inner, drow = dst->dims[d] * inner;
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)dst->data + o * drow + at * inner, (const char *)src->data + o * srow, (size_t)srow);
}

/* Copies the slab [at, at + dst->dims[d]) of src along d into dst. */
static void take(hlo_value *dst, const hlo_value *src, int d, int64_t at) {
  int64_t outer, inner;
  split_at(src, d, &outer, &inner);
  int64_t srow = src->dims[d] * inner, drow = dst->dims[d] * inner;
  for (int64_t o = 0; o < outer; o++)
    memcpy((char *)dst->data + o * drow, (const char *)src->data + o * srow + at * inner, (size_t)drow);
}

static const hlo_shape *leaf_shape(const hlo_instr *ins, int k) { return hlo_shape_leaf(&ins->shape, k); }

static int one_dimension(chk_eval *ev, const hlo_instr *ins, int rank) {
  if (!(ins->attrs.has & HLO_A_DIMENSIONS) || ins->attrs.dimensions.n != 1 ||
      ins->attrs.dimensions.v[0] < 0 || ins->attrs.dimensions.v[0] >= rank) {
    chk_fail(ev, ins, "needs dimensions={d} naming one operand dimension");
    return -1;
  }
  return (int)ins->attrs.dimensions.v[0];
}

/* Result leaf k of a collective along the one dimension d it names (*d):
 * for a gather the result's size along d is `size` times operand leaf x's,
 * for a scatter x's is `size` times the result's.  NULL after chk_fail. */
static hlo_value *resized_leaf(chk_eval *ev, const hlo_instr *ins, int k, const hlo_value *x, int size,
                               bool gather, int *d) {
  *d = one_dimension(ev, ins, x->rank);
  const hlo_shape *s = leaf_shape(ins, k);
  hlo_value *out = (*d < 0 || !s) ? NULL : hlo_value_from_shape(s);
  if (out && (gather ? out->dims[*d] != x->dims[*d] * size : out->dims[*d] * size != x->dims[*d])) {
    hlo_value_unref(out);
    return chk_fail(ev, ins,
                    gather ? "result dimension %d is not %d x the operand's"
                           : "operand dimension %d is not %d x the result's",
                    *d, size);
  }
  return out ? out : chk_fail(ev, ins, "out of memory for the result");
}

static int all_gather(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops, hlo_value **outs) {
  int n = ins->noperands, nl = leaf_count(ops, n);
  if (nl > 64) {
    chk_fail(ev, ins, "more than 64 operands");
    return -1;
  }
  for (int r = 0; r < nrep; r++) {
    const int64_t *mem;
    int size;
    if (group_of(ev, ins, nrep, r, &mem, &size) < 0)
      return -1;
    int q = earlier_member(mem, size, r);
    if (q >= 0) {
      outs[r] = hlo_value_ref(outs[q]);
      continue;
    }
    hlo_value *res[64];
    for (int k = 0; k < nl; k++) {
      const hlo_value *x = leaf(&ops[r * n], n, k);
      int d;
      hlo_value *out = resized_leaf(ev, ins, k, x, size, true, &d);
      if (!out) {
        unref_all(res, k);
        return -1;
      }
      for (int j = 0; j < size; j++)
        place(out, leaf(&ops[member(mem, j) * n], n, k), d, (int64_t)j * x->dims[d]);
      res[k] = out;
    }
    outs[r] = wrap(ev, ins, res, nl);
    if (!outs[r])
      return -1;
  }
  return 0;
}

static int reduce_scatter(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops,
                          hlo_value **outs) {
  /* All-reduce first, then each member keeps its slab. */
  hlo_value **full = calloc((size_t)nrep, sizeof *full);
  if (!full) {
    chk_fail(ev, ins, "out of memory");
    return -1;
  }
  hlo_instr as_all_reduce = *ins;
  as_all_reduce.shape = ins->noperands == 1 ? ins->operands[0]->shape : ins->shape;
  int rc = all_reduce(ev, &as_all_reduce, nrep, ops, full);
  for (int r = 0; r < nrep && rc == 0; r++) {
    const int64_t *mem = NULL;
    int size = 1;
    int pos = find_group(ins, nrep, r, &mem, &size);
    int nl = leaf_count(&full[r], 1);
    bool tuple = full[r]->type == HLO_TUPLE;
    hlo_value *res[64];
    if (nl > 64) {
      chk_fail(ev, ins, "more than 64 operands");
      rc = -1;
      break;
    }
    for (int k = 0; k < nl; k++) {
      const hlo_value *x = tuple ? full[r]->elems[k] : full[r];
      int d;
      hlo_value *out = resized_leaf(ev, ins, k, x, size, false, &d);
      if (!out) {
        unref_all(res, k);
        rc = -1;
        break;
      }
      take(out, x, d, (int64_t)pos * out->dims[d]);
      res[k] = out;
    }
    if (rc == 0) {
      outs[r] = wrap(ev, ins, res, nl);
      if (!outs[r])
        rc = -1;
    }
  }
  for (int r = 0; r < nrep; r++)
    hlo_value_unref(full[r]);
  free(full);
  return rc;
}

static int all_to_all(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops, hlo_value **outs) {
  int n = ins->noperands;
  for (int r = 0; r < nrep; r++) {
    const int64_t *mem;
    int size;
    int pos = group_of(ev, ins, nrep, r, &mem, &size);
    if (pos < 0)
      return -1;
    if (ins->attrs.has & HLO_A_DIMENSIONS) {
      /* Array form: split along d into `size` chunks; chunk j goes to member
       * j, and the received chunks are concatenated in member order. */
      const hlo_value *x = ops[r * n];
      int d = one_dimension(ev, ins, x->rank);
      if (d < 0)
        return -1;
      if (x->dims[d] % size != 0) {
        chk_fail(ev, ins, "dimension %d (%lld) is not divisible by the group size %d", d,
                 (long long)x->dims[d], size);
        return -1;
      }
      hlo_value *out = hlo_value_array(x->type, x->rank, x->dims);
      int64_t cdims[HLO_MAX_RANK];
      memcpy(cdims, x->dims, sizeof cdims);
      cdims[d] = x->dims[d] / size;
      hlo_value *chunk = hlo_value_array(x->type, x->rank, cdims);
      if (!out || !chunk) {
        hlo_value_unref(out);
        hlo_value_unref(chunk);
        chk_fail(ev, ins, "out of memory");
        return -1;
      }
      for (int j = 0; j < size; j++) {
        take(chunk, ops[member(mem, j) * n], d, (int64_t)pos * cdims[d]);
        place(out, chunk, d, (int64_t)j * cdims[d]);
      }
      hlo_value_unref(chunk);
      outs[r] = out;
    } else {
      /* Tuple form: operand j goes to member j; result element j comes from
       * member j. */
      if (n != size) {
        chk_fail(ev, ins, "has %d operands but the replica group has %d members", n, size);
        return -1;
      }
      hlo_value *res[64];
      if (n > 64) {
        chk_fail(ev, ins, "more than 64 operands");
        return -1;
      }
      for (int j = 0; j < n; j++)
        res[j] = hlo_value_ref(ops[member(mem, j) * n + pos]);
      outs[r] = wrap(ev, ins, res, n);
      if (!outs[r])
        return -1;
    }
  }
  return 0;
}

static int collective_permute(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops,
                              hlo_value **outs) {
  int n = ins->noperands;
  if (n != 1) {
    chk_fail(ev, ins, "only the one-operand form of collective-permute is supported");
    return -1;
  }
  for (int r = 0; r < nrep; r++) {
    /* A replica that is no pair's target receives zeros.  A pair naming a
     * replica that is not simulated is ignored, as a runtime with fewer
     * devices than the module names would never run it: its source cannot
     * send and its target does not exist. */
    int src = -1;
    for (int p = 0; p < ins->attrs.npairs; p++) {
      const hlo_pair *pr = &ins->attrs.pairs[p];
      if (pr->a < 0 || pr->b < 0) {
        chk_fail(ev, ins, "source_target_pairs names a negative replica");
        return -1;
      }
      if (pr->a >= nrep || pr->b >= nrep)
        continue;
      if (pr->b == r)
        src = (int)pr->a;
    }
    if (src >= 0)
      outs[r] = hlo_value_ref(ops[src * n]);
    else {
      outs[r] = hlo_value_from_shape(&ins->shape);
      if (!outs[r]) {
        chk_fail(ev, ins, "out of memory");
        return -1;
      }
    }
  }
  return 0;
}

/* collective-broadcast (StableHLO's collective_broadcast): a replica in a
 * group receives the operands of the group's first member, one in no
 * group zeros. */
static int collective_broadcast(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops,
                                hlo_value **outs) {
  int n = ins->noperands;
  for (int r = 0; r < nrep; r++) {
    const int64_t *members;
    int size;
    int pos = find_group(ins, nrep, r, &members, &size);
    if (pos >= 0 && check_members(ev, ins, members, size, nrep) != 0)
      return -1;
    int src = pos >= 0 ? member(members, 0) : -1;
    if (src >= 0) {
      hlo_value *leaves[64];
      if (n < 1 || n > 64) {
        chk_fail(ev, ins, "takes 1 to 64 operands");
        return -1;
      }
      for (int k = 0; k < n; k++)
        leaves[k] = hlo_value_ref(ops[src * n + k]);
      outs[r] = wrap(ev, ins, leaves, n); /* takes the references */
    } else {
      outs[r] = hlo_value_from_shape(&ins->shape);
      if (!outs[r])
        chk_fail(ev, ins, "out of memory");
    }
    if (!outs[r])
      return -1;
  }
  return 0;
}

/* Offsets and sizes of ragged-all-to-all are clamped to +-2^62 so that sums
 * of an offset and a size (or a row count) cannot overflow int64. */
#define RAGGED_BIG ((int64_t)1 << 62)

static int64_t ragged_meta(const hlo_value *m, int64_t i) {
  int64_t v = hlo_value_get_i64(m, i);
  return v > RAGGED_BIG ? RAGGED_BIG : v < -RAGGED_BIG ? -RAGGED_BIG : v;
}

/* ragged-all-to-all(input, output, input_offsets, send_sizes,
 * output_offsets, recv_sizes), XLA's RaggedAllToAll.  Rows are slices
 * along dimension 0.  The four metadata arrays hold size * U entries for a
 * group of `size`: entry j * U + u of a sender describes its u-th update
 * to the member at position j, which copies the sender's input rows
 * [input_offsets, + send_sizes) to rows [output_offsets, + send_sizes) of
 * that member's result.  A result starts as its replica's own output
 * operand, and rows no update writes keep those values.  recv_sizes is
 * the receiver's account of the same sizes and moves no data.
 *
 * What XLA leaves undefined is defined here, the same way on the device
 * (dev_collective.c), so that any input evaluates: a negative size sends
 * nothing; of an update's rows only those inside both the sender's input
 * and the receiver's output are copied; and where updates overlap, the
 * later one wins, in the order of the senders' positions, then u. */
static int ragged_all_to_all(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops,
                             hlo_value **outs) {
  enum { IN, OUT, IN_OFF, SEND, OUT_OFF };
  int n = ins->noperands;
  if (n != 6) {
    chk_fail(ev, ins, "takes 6 operands (input, output, input_offsets, send_sizes, output_offsets, recv_sizes)");
    return -1;
  }
  for (int r = 0; r < nrep; r++) {
    const int64_t *mem;
    int size;
    int pos = group_of(ev, ins, nrep, r, &mem, &size);
    if (pos < 0)
      return -1;
    const hlo_value *own = ops[r * n + OUT];
    int64_t nmeta = ops[r * n + IN_OFF]->count;
    if (own->rank < 1 || nmeta % size != 0) {
      chk_fail(ev, ins, "needs arrays of rank >= 1 and metadata of a multiple of the group size %d entries", size);
      return -1;
    }
    int64_t per = nmeta / size, rows_out = own->dims[0];
    for (int j = 0; j < size; j++) {
      const hlo_value *in = ops[member(mem, j) * n + IN];
      if (in->type != own->type || in->rank != own->rank ||
          (in->dims[0] ? in->count / in->dims[0] : 0) != (rows_out ? own->count / rows_out : 0)) {
        chk_fail(ev, ins, "input and output must agree in type and in every dimension but the first");
        return -1;
      }
    }
    int64_t row_bytes = rows_out ? (int64_t)own->count / rows_out * (int64_t)own->elem_size : 0;
    hlo_value *res = hlo_value_clone(own);
    if (!res) {
      chk_fail(ev, ins, "out of memory");
      return -1;
    }
    for (int j = 0; j < size; j++) {
      hlo_value *const *s = &ops[member(mem, j) * n];
      int64_t rows_in = s[IN]->dims[0];
      for (int64_t u = 0; u < per; u++) {
        int64_t e = (int64_t)pos * per + u;
        int64_t from = ragged_meta(s[IN_OFF], e), cnt = ragged_meta(s[SEND], e), to = ragged_meta(s[OUT_OFF], e);
        /* rows i of the update with 0 <= from + i < rows_in and 0 <= to + i < rows_out */
        int64_t lo = 0, hi = cnt;
        lo = -from > lo ? -from : lo;
        lo = -to > lo ? -to : lo;
        hi = rows_in - from < hi ? rows_in - from : hi;
        hi = rows_out - to < hi ? rows_out - to : hi;
        if (lo < hi)
          memcpy((char *)res->data + (to + lo) * row_bytes, (const char *)s[IN]->data + (from + lo) * row_bytes,
                 (size_t)((hi - lo) * row_bytes));
      }
    }
    outs[r] = res;
  }
  return 0;
}

int chk_op_collective(chk_eval *ev, const hlo_instr *ins, int nrep, hlo_value *const *ops, hlo_value **outs) {
  int rc;
  if ((ins->op == HLO_OP_ALL_REDUCE || ins->op == HLO_OP_REDUCE_SCATTER) && !ins->attrs.calls.to_apply) {
    chk_fail(ev, ins, "%s needs to_apply", hlo_opcode_name(ins->op));
    return -1;
  }
  switch (ins->op) {
  case HLO_OP_ALL_REDUCE:
    rc = all_reduce(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_ALL_GATHER:
    rc = all_gather(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_REDUCE_SCATTER:
    rc = reduce_scatter(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_ALL_TO_ALL:
    rc = all_to_all(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_COLLECTIVE_PERMUTE:
    rc = collective_permute(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_COLLECTIVE_BROADCAST:
    rc = collective_broadcast(ev, ins, nrep, ops, outs);
    break;
  case HLO_OP_RAGGED_ALL_TO_ALL:
    rc = ragged_all_to_all(ev, ins, nrep, ops, outs);
    break;
  default:
    chk_fail(ev, ins, "not a collective");
    return -1;
  }
  if (rc != 0)
    for (int r = 0; r < nrep; r++) {
      hlo_value_unref(outs[r]);
      outs[r] = NULL;
    }
  return rc;
}
