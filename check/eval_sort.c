/* eval_sort.c — sort for the reference evaluator.
 *
 * sort(op_0, ..., op_{N-1}), dimensions={d}, to_apply=cmp: all operands
 * have the same dims; every 1-D line along d is sorted by the comparator
 * and the same permutation is applied to every operand.  cmp takes 2N
 * scalars, interleaved: parameter 2k is operand k's element on the left,
 * 2k+1 the one on the right; it returns pred "left goes before right".
 *
 * Determinism: the sort is always stable (a merge sort of a permutation),
 * whether or not is_stable is set.  XLA leaves the order of ties unspecified
 * without is_stable, but a reference must give one answer; the stable one is
 * what DESIGN.md §5 compares against ("sort with ties compares against a
 * stable order").
 *
 * Speed: the common comparator is a single compare of parameters 2k and
 * 2k+1 (LT ascending, GT descending; FLOAT, SIGNED, UNSIGNED or TOTALORDER).
 * It is recognised and each line's keys are decoded once, so comparisons
 * are plain loads; any other comparator is called once per comparison
 * through chk_call.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_dtype.h"

typedef enum key_kind {
  KEY_NONE,   /* no fast path: call the comparator */
  KEY_DOUBLE, /* IEEE comparison of exact values: NaN compares false */
  KEY_SINT,   /* signed integers, and floats under TOTALORDER */
  KEY_UINT    /* unsigned integers and pred */
} key_kind;

typedef struct sort_ctx {
  chk_eval *ev;
  const hlo_instr *ins;
  int n;
  hlo_value *const *ops;
  const hlo_computation *cmp;
  /* fast path */
  key_kind kind;
  int key_op;     /* which operand holds the key */
  bool greater;   /* GT: descending */
  double *kd;     /* this line's keys, one array per kind */
  int64_t *ks;
  uint64_t *ku;
  /* the current line: element i is at base + i * stride */
  int64_t base, stride;
  hlo_value **args; /* 2N reusable scalar arguments */
  bool failed;
} sort_ctx;

/* ---- comparator recognition --------------------------------------------- */

static int64_t sext(uint64_t x, int bits) {
  if (bits >= 64)
    return (int64_t)x;
  uint64_t m = 1ull << (bits - 1);
  x &= (1ull << bits) - 1;
  return (int64_t)((x ^ m) - m);
}

/* Float formats whose top bit is a sign bit over a sign-magnitude
 * encoding; for them the total order is an integer order of the bits with
 * the magnitude bits of negatives flipped.  The fnuz, e8m0 and f4 formats
 * go through the comparator instead. */
static bool total_order_by_bits(hlo_etype t) {
  switch (t) {
  case HLO_F16: case HLO_BF16: case HLO_F32: case HLO_F64:
  case HLO_F8E5M2: case HLO_F8E4M3: case HLO_F8E4M3FN: case HLO_F8E3M4:
    return true;
  default:
    return false;
  }
}

/* -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN as signed integers:
 * negative patterns have their magnitude bits flipped so that a larger
 * magnitude gives a smaller key. */
static int64_t total_order_key(uint64_t bits, int width) {
  int64_t s = sext(bits, width);
  if (s < 0)
    s ^= width >= 64 ? INT64_MAX : (int64_t)((1ull << (width - 1)) - 1);
  return s;
}

/* Recognises `ROOT c = compare(parameter(2k), parameter(2k+1))` with
 * direction LT or GT (either parameter order) and fills the fast path. */
static void recognise(sort_ctx *c) {
  c->kind = KEY_NONE;
  const hlo_computation *f = c->cmp;
  const hlo_instr *r = f->root;
  if (!r || r->op != HLO_OP_COMPARE || r->noperands != 2 || f->nparams != 2 * c->n)
    return;
  const hlo_instr *l = r->operands[0], *q = r->operands[1];
  if (l->op != HLO_OP_PARAMETER || q->op != HLO_OP_PARAMETER)
    return;
  int64_t pl = l->parameter_number, pq = q->parameter_number;
  if (pl / 2 != pq / 2 || pl == pq || pl < 0 || pl >= 2 * c->n)
    return;
  bool greater;
  if (r->attrs.direction == HLO_CMP_LT)
    greater = false;
  else if (r->attrs.direction == HLO_CMP_GT)
    greater = true;
  else
    return;
  if (pl % 2 == 1) /* compare(rhs, lhs) flips the direction */
    greater = !greater;
  int k = (int)(pl / 2);
  hlo_etype t = c->ops[k]->type;
  if (l->shape.type != t || q->shape.type != t)
    return;
  hlo_eclass cls = hlo_etype_class(t);
  hlo_cmp_type ct = r->attrs.cmp_type;
  key_kind kind = KEY_NONE;
  if (cls == HLO_CLASS_FLOAT) {
    if (ct == HLO_CMPT_TOTALORDER)
      kind = total_order_by_bits(t) ? KEY_SINT : KEY_NONE;
    else if (ct == HLO_CMPT_NONE || ct == HLO_CMPT_FLOAT)
      kind = KEY_DOUBLE;
  } else if (cls == HLO_CLASS_SINT) {
    if (ct == HLO_CMPT_NONE || ct == HLO_CMPT_SIGNED)
      kind = KEY_SINT;
  } else if (cls == HLO_CLASS_UINT || cls == HLO_CLASS_PRED) {
    if (ct == HLO_CMPT_NONE || ct == HLO_CMPT_UNSIGNED)
      kind = KEY_UINT;
  }
  c->kind = kind;
  c->key_op = k;
  c->greater = greater;
}

/* Decodes the keys of the current line of length len. */
static void load_keys(sort_ctx *c, int64_t len) {
  const hlo_value *v = c->ops[c->key_op];
  size_t es = v->elem_size;
  int bits = hlo_etype_bits(v->type);
  bool is_float = hlo_etype_class(v->type) == HLO_CLASS_FLOAT;
  bool sgn = hlo_etype_class(v->type) == HLO_CLASS_SINT;
  for (int64_t i = 0; i < len; i++) {
    const char *p = (const char *)v->data + (size_t)(c->base + i * c->stride) * es;
    uint64_t b = chk_load_bits(p, es);
    switch (c->kind) {
    case KEY_DOUBLE: c->kd[i] = hlo_float_decode(v->type, b); break;
    case KEY_SINT:
      c->ks[i] = is_float ? total_order_key(b, bits) : sgn ? sext(b, bits) : (int64_t)b;
      break;
    case KEY_UINT: c->ku[i] = v->type == HLO_PRED ? b != 0 : b; break;
    case KEY_NONE: break;
    }
  }
}

/* ---- comparison ------------------------------------------------------------ */

/* See eval_gather.c: a scalar we hold the only reference to may be reused. */
static hlo_value *scalar_slot(hlo_value **slot, hlo_etype t) {
  if (*slot && (*slot)->refs == 1)
    return *slot;
  hlo_value_unref(*slot);
  *slot = hlo_value_array(t, 0, NULL);
  return *slot;
}

/* Does line element i go strictly before element j? */
static bool less(sort_ctx *c, int64_t i, int64_t j) {
  switch (c->kind) {
  case KEY_DOUBLE: return c->greater ? c->kd[i] > c->kd[j] : c->kd[i] < c->kd[j];
  case KEY_SINT: return c->greater ? c->ks[i] > c->ks[j] : c->ks[i] < c->ks[j];
  case KEY_UINT: return c->greater ? c->ku[i] > c->ku[j] : c->ku[i] < c->ku[j];
  case KEY_NONE: break;
  }
  if (c->failed)
    return false;
  int64_t at[2] = {c->base + i * c->stride, c->base + j * c->stride};
  for (int k = 0; k < c->n; k++) {
    const hlo_value *v = c->ops[k];
    for (int s = 0; s < 2; s++) {
      hlo_value *a = scalar_slot(&c->args[2 * k + s], v->type);
      if (!a) {
        chk_fail(c->ev, c->ins, "out of memory");
        c->failed = true;
        return false;
      }
      memcpy(a->data, (const char *)v->data + (size_t)at[s] * v->elem_size, v->elem_size);
    }
  }
  hlo_value *res = chk_call(c->ev, c->ins, c->cmp, 2 * c->n, c->args);
  if (!res) {
    c->failed = true;
    return false;
  }
  bool ok = chk_is_array(res) && res->type == HLO_PRED && res->count == 1;
  bool lt = ok && *(const uint8_t *)res->data != 0;
  hlo_value_unref(res);
  if (!ok) {
    chk_fail(c->ev, c->ins, "comparator %s must return pred[]", c->cmp->name);
    c->failed = true;
  }
  return lt;
}

/* Stable merge sort of perm[0..n) by less(); tmp has n entries.  Ties keep
 * their input order because the left run wins unless the right element is
 * strictly less. */
static void merge_sort(sort_ctx *c, int64_t *perm, int64_t *tmp, int64_t n) {
  /* Short runs by insertion sort (stable), then bottom-up merges. */
  enum { RUN = 16 };
  for (int64_t lo = 0; lo < n; lo += RUN) {
    int64_t hi = lo + RUN < n ? lo + RUN : n;
    for (int64_t i = lo + 1; i < hi; i++) {
      int64_t x = perm[i], j = i;
      while (j > lo && less(c, x, perm[j - 1])) {
        perm[j] = perm[j - 1];
        j--;
      }
      perm[j] = x;
    }
  }
  for (int64_t w = RUN; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, o = lo;
      if (mid >= hi || !less(c, perm[mid], perm[mid - 1])) {
        /* Already in order: nothing to merge. */
        continue;
      }
      while (i < mid && j < hi)
        tmp[o++] = less(c, perm[j], perm[i]) ? perm[j++] : perm[i++];
      while (i < mid)
        tmp[o++] = perm[i++];
      while (j < hi)
        tmp[o++] = perm[j++];
      memcpy(perm + lo, tmp + lo, (size_t)(hi - lo) * sizeof *perm);
    }
  }
}

/* ---- the op ------------------------------------------------------------------ */

hlo_value *chk_op_sort(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op != HLO_OP_SORT)
    return chk_fail(ev, ins, "not a sort");
  int n = ins->noperands;
  if (n < 1)
    return chk_fail(ev, ins, "needs at least one operand");
  const hlo_computation *cmp = ins->attrs.calls.to_apply;
  if (!cmp)
    return chk_fail(ev, ins, "missing to_apply comparator");
  if (cmp->nparams != 2 * n)
    return chk_fail(ev, ins, "comparator %s has %d parameters, %d operands need %d", cmp->name,
                    cmp->nparams, n, 2 * n);
  const hlo_value *a0 = ops[0];
  for (int k = 0; k < n; k++) {
    bool same = chk_is_array(ops[k]) && ops[k]->rank == a0->rank;
    for (int d = 0; same && d < a0->rank; d++)
      same = ops[k]->dims[d] == a0->dims[d];
    if (!same)
      return chk_fail(ev, ins, "operand %d differs in dims from operand 0", k);
  }
  if (ins->attrs.dimensions.n != 1)
    return chk_fail(ev, ins, "needs exactly one sort dimension");
  int64_t sd = ins->attrs.dimensions.v[0];
  if (a0->rank == 0 || sd < 0 || sd >= a0->rank)
    return chk_fail(ev, ins, "sort dimension %lld out of range", (long long)sd);

  int64_t len = a0->dims[sd], outer = 1, inner = 1;
  for (int d = 0; d < sd; d++)
    outer *= a0->dims[d];
  for (int d = (int)sd + 1; d < a0->rank; d++)
    inner *= a0->dims[d];

  sort_ctx c = {.ev = ev, .ins = ins, .n = n, .ops = ops, .cmp = cmp, .stride = inner};
  recognise(&c);
  hlo_value **outs = calloc((size_t)n, sizeof *outs);
  hlo_value **args = calloc((size_t)(2 * n), sizeof *args);
  int64_t *perm = malloc(sizeof *perm * (size_t)(len ? len : 1));
  int64_t *tmp = malloc(sizeof *tmp * (size_t)(len ? len : 1));
  void *keys = NULL;
  if (c.kind != KEY_NONE)
    keys = malloc(8 * (size_t)(len ? len : 1)); /* double / int64 / uint64 alike */
  hlo_value *result = NULL;
  if (!outs || !args || !perm || !tmp || (c.kind != KEY_NONE && !keys)) {
    chk_fail(ev, ins, "out of memory");
    goto done;
  }
  c.args = args;
  c.kd = keys;
  c.ks = keys;
  c.ku = keys;
  for (int k = 0; k < n; k++) {
    outs[k] = hlo_value_array(ops[k]->type, ops[k]->rank, ops[k]->dims);
    if (!outs[k]) {
      chk_fail(ev, ins, "out of memory");
      goto done;
    }
  }

  for (int64_t o = 0; o < outer && a0->count > 0; o++) {
    for (int64_t in = 0; in < inner; in++) {
      c.base = o * len * inner + in;
      for (int64_t i = 0; i < len; i++)
        perm[i] = i;
      if (c.kind != KEY_NONE)
        load_keys(&c, len);
      merge_sort(&c, perm, tmp, len);
      if (c.failed)
        goto done;
      for (int k = 0; k < n; k++) {
        size_t es = ops[k]->elem_size;
        const char *src = ops[k]->data;
        char *dst = outs[k]->data;
        for (int64_t i = 0; i < len; i++)
          memcpy(dst + (size_t)(c.base + i * inner) * es,
                 src + (size_t)(c.base + perm[i] * inner) * es, es);
      }
    }
  }

  result = chk_variadic_result(ev, ins, n, outs, "sort");
done:
  if (outs)
    for (int k = 0; k < n; k++)
      hlo_value_unref(outs[k]);
  if (args)
    for (int k = 0; k < 2 * n; k++)
      hlo_value_unref(args[k]);
  free(outs);
  free(args);
  free(perm);
  free(tmp);
  free(keys);
  return result;
}
