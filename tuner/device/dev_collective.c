/* dev_collective.c — the device's collectives (dev_collective.h).
 *
 * Semantics (XLA operation semantics, for a replica at position p of a
 * group of `size` members m0..m(size-1), along the one dimension d that
 * `dimensions` names where the op has one):
 *   all-reduce       every member gets f folded over the members' operands,
 *                    element by element, in group order;
 *   reduce-scatter   the same reduction, and member p keeps slab p (the
 *                    result's extent along d, starting at p times it);
 *   all-gather       the members' operands concatenated along d in group
 *                    order;
 *   all-to-all       with dimensions: operand split along d into `size`
 *                    chunks, chunk j sent to member j; the result holds the
 *                    chunks received, in group order.  Without: operand j
 *                    goes to member j, result j comes from member j;
 *   collective-permute  a replica named as a target of source_target_pairs
 *                    receives its source's operand, any other replica
 *                    zeros; a pair naming a replica that does not run is
 *                    ignored (its transfer has no end to run on);
 *   collective-broadcast  every member receives the operand of the
 *                    group's first member (StableHLO's collective_broadcast),
 *                    a replica in no group zeros;
 *   ragged-all-to-all  (input, output, input_offsets, send_sizes,
 *                    output_offsets, recv_sizes): entry j*U + u of a
 *                    sender's metadata (U = entries / size) copies its
 *                    input rows [input_offsets, + send_sizes) along
 *                    dimension 0 to rows [output_offsets, + send_sizes) of
 *                    member j's result, which otherwise holds member j's
 *                    own output operand.  What XLA leaves undefined is
 *                    defined as the reference does (eval_collective.c): a
 *                    negative size sends nothing, only rows inside both
 *                    arrays are copied, and of overlapping updates the last
 *                    in (sender position, u) order wins.
 * Several operands (or one tuple) are independent arrays, one result each.
 */
#include "dev_collective.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

/* fusion.replicas is at most this (dev_fusion.c), and so is a group. */
#define MAX_MEMBERS 64

bool dev_collective_op(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ALL_GATHER: case HLO_OP_ALL_REDUCE: case HLO_OP_REDUCE_SCATTER: case HLO_OP_ALL_TO_ALL:
  case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_COLLECTIVE_BROADCAST: case HLO_OP_RAGGED_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

bool *dev_collective_varying(const hlo_computation *c) {
  bool *v = calloc((size_t)(c->ninstrs ? c->ninstrs : 1), sizeof *v);
  for (int i = 0; v && i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    v[i] = ins->op == HLO_OP_REPLICA_ID || dev_collective_op(ins->op);
    for (int j = 0; j < ins->noperands; j++)
      v[i] = v[i] || v[ins->operands[j]->index];
  }
  return v;
}

/* Sizes come from the HLO text; sums saturate at a value no machine holds
 * (the estimate then refuses the unit) instead of overflowing. */
#define HUGE_BYTES (INT64_MAX / 4)

static int64_t sat(int64_t a, int64_t b, int64_t k) { /* a + b * k */
  return b > 0 && k > 0 && (b > HUGE_BYTES / k || a > HUGE_BYTES - b * k) ? HUGE_BYTES : a + b * k;
}

int64_t dev_collective_lockstep_bytes(const hlo_computation *c, int replicas) {
  bool *v = dev_collective_varying(c);
  if (!v)
    return -1;
  int64_t total = 0, r = replicas > 1 ? replicas : 1;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    if (!dev_collective_op(ins->op))
      continue;
    int64_t results = r;
    if (ins->op == HLO_OP_ALL_REDUCE || ins->op == HLO_OP_ALL_GATHER) {
      int groups = ins->attrs.replica_groups.ngroups;
      results = groups > 0 && groups < r ? groups : groups > 0 ? r : 1;
    }
    total = sat(total, hlo_shape_bytes(&ins->shape), results);
    for (int j = 0; j < ins->noperands; j++)
      total = sat(total, hlo_shape_bytes(&ins->operands[j]->shape), v[ins->operands[j]->index] ? r : 1);
  }
  free(v);
  return total;
}

typedef struct group {
  int size;
  int m[MAX_MEMBERS];
} group;

typedef struct coll {
  const hlo_instr *ins;
  int nrep;
  int nops;                 /* operands per replica */
  int nl;                   /* arrays per replica */
  hlo_value *const *ops;
  const dev_whole_ctx *ctx;
  int d;                    /* the dimension `dimensions` names, or -1 */
  hlo_opcode red;           /* simple reducer, or HLO_OP_INVALID */
  dev_lane *lane;           /* else the reducer's lane program */
  const int64_t *rows;      /* ragged-all-to-all: per result row of the
                               replica being built, the replica whose input
                               row rows[2i + 1] it holds, or -1 (its own
                               output operand's row) */
} coll;

__attribute__((format(printf, 2, 3))) static int fail(const coll *c, const char *fmt, ...) {
  snprintf(c->ctx->why, c->ctx->why_len, "%s: ", c->ins->name);
  size_t k = strlen(c->ctx->why);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->ctx->why + k, c->ctx->why_len - k, fmt, ap);
  va_end(ap);
  return -1;
}

/* Array k of replica r's operands. */
static const hlo_value *leaf(const coll *c, int r, int k) {
  hlo_value *const *row = c->ops + (size_t)r * c->nops;
  return c->nops == 1 && row[0]->type == HLO_TUPLE ? row[0]->elems[k] : row[k];
}

/* The group replica r belongs to, and r's position in it (-1 after fail). */
static int group_of(const coll *c, int r, group *g) {
  const hlo_replica_groups *rg = &c->ins->attrs.replica_groups;
  int pos = -1;
  g->size = 0;
  if (rg->ngroups == 0) {
    g->size = c->nrep;
    for (int j = 0; j < c->nrep; j++)
      g->m[j] = j;
    return r;
  }
  for (int i = 0; i < rg->ngroups && pos < 0; i++)
    for (int j = 0; j < rg->groups[i].n; j++)
      if (rg->groups[i].v[j] == r) {
        if (rg->groups[i].n > MAX_MEMBERS)
          return fail(c, "a replica group of %d members (at most %d)", rg->groups[i].n, MAX_MEMBERS);
        g->size = rg->groups[i].n;
        for (int q = 0; q < g->size; q++) {
          int64_t v = rg->groups[i].v[q];
          if (v < 0 || v >= c->nrep)
            return fail(c, "replica group names replica %lld but only %d replicas run", (long long)v, c->nrep);
          g->m[q] = (int)v;
        }
        pos = j;
        break;
      }
  if (pos < 0)
    return fail(c, "replica %d is in no replica group", r);
  return pos;
}

/* The flat offset of index o in an array of dims (rank r). */
static int64_t flat(int r, const int64_t *dims, const int64_t *o) {
  int64_t f = 0;
  for (int d = 0; d < r; d++)
    f = f * dims[d] + o[d];
  return f;
}

/* A complex sum (a simple add reducer) of elements [i, i + n): the real
 * and imaginary parts are each added in the parts' own precision, member
 * after member in group order, which is what a complex add is. */
#define COMPLEX_SUM(T)                                                                             \
  do {                                                                                             \
    T *d = dst;                                                                                    \
    memcpy(d, (const T *)leaf(c, g->m[0], k)->data + 2 * i, (size_t)(2 * n) * sizeof(T));          \
    for (int j = 1; j < g->size; j++) {                                                            \
      const T *x = (const T *)leaf(c, g->m[j], k)->data + 2 * i;                                   \
      for (int64_t l = 0; l < 2 * n; l++)                                                          \
        d[l] = d[l] + x[l];                                                                        \
    }                                                                                              \
  } while (0)

static void complex_sum_run(const coll *c, const group *g, int k, int64_t i, int64_t n, hlo_etype t, void *dst) {
  if (t == HLO_C64)
    COMPLEX_SUM(float);
  else
    COMPLEX_SUM(double);
}

/* Any other complex reducer, run as the reducer's complex lane program
 * (dev_lane_compile_complex: a complex value is two slots, its parts) over
 * elements [i, i + n), member after member in group order; acc holds 2n
 * slots. */
static void complex_lane_run(const coll *c, const group *g, int k, int64_t i, int64_t n, hlo_etype t, dev_slot *acc,
                             void *dst) {
  hlo_etype pt = t == HLO_C64 ? HLO_F32 : HLO_F64;
  const hlo_value *x0 = leaf(c, g->m[0], k);
  for (int64_t l = 0; l < 2 * n; l++)
    dev_slot_from_host(pt, x0->data, 2 * i + l, &acc[l]);
  for (int j = 1; j < g->size; j++) {
    const void *xj = leaf(c, g->m[j], k)->data;
    for (int64_t l = 0; l < n; l++) {
      dev_slot args[4] = {acc[2 * l], acc[2 * l + 1]};
      dev_slot_from_host(pt, xj, 2 * (i + l), &args[2]);
      dev_slot_from_host(pt, xj, 2 * (i + l) + 1, &args[3]);
      dev_lane_run(c->lane, args, &acc[2 * l]);
    }
  }
  for (int64_t l = 0; l < 2 * n; l++)
    dev_slot_to_host(pt, acc[l], dst, l);
}

/* Folds elements [i, i + n) of array k over the group's members, in group
 * order, element by element, into dst (n elements of the array's type). */
static void reduce_run(const coll *c, const group *g, int k, int64_t i, int64_t n, dev_slot *acc, void *dst) {
  const hlo_value *x0 = leaf(c, g->m[0], k);
  hlo_etype t = x0->type;
  if (g->size == 1) { /* nothing to combine: the operand as it is */
    memcpy(dst, (const char *)x0->data + (size_t)i * x0->elem_size, (size_t)n * x0->elem_size);
    return;
  }
  if (hlo_etype_class(t) == HLO_CLASS_COMPLEX) {
    if (c->red == HLO_OP_ADD)
      complex_sum_run(c, g, k, i, n, t, dst);
    else
      complex_lane_run(c, g, k, i, n, t, acc, dst);
    return;
  }
  for (int64_t l = 0; l < n; l++)
    dev_slot_from_host(t, x0->data, i + l, &acc[l]);
  for (int j = 1; j < g->size; j++) {
    const void *xj = leaf(c, g->m[j], k)->data;
    for (int64_t l = 0; l < n; l++) {
      dev_slot x, args[2];
      dev_slot_from_host(t, xj, i + l, &x);
      if (c->red != HLO_OP_INVALID) {
        acc[l] = dev_elem_reduce_step(c->red, t, acc[l], x);
      } else {
        args[0] = acc[l];
        args[1] = x;
        dev_lane_run(c->lane, args, &acc[l]);
      }
    }
  }
  for (int64_t l = 0; l < n; l++)
    dev_slot_to_host(t, acc[l], dst, l);
}

/* ragged-all-to-all: elements o .. o + n - 1 along the last dimension of
 * replica self's result, into dst; the run stops where its source changes
 * (rank 1, where the last dimension is the row dimension).  Returns how
 * many it wrote. */
static int64_t ragged_run(const coll *c, int self, const int64_t *o, int64_t n, void *dst) {
  enum { IN, OUT };
  const int64_t *m = &c->rows[2 * o[0]];
  const hlo_value *from = m[0] < 0 ? leaf(c, self, OUT) : leaf(c, (int)m[0], IN);
  int r = from->rank;
  int64_t at[HLO_MAX_RANK];
  memcpy(at, o, sizeof at[0] * (size_t)r);
  if (m[0] >= 0)
    at[0] = m[1];
  if (r == 1) {
    int64_t run = 1;
    while (run < n && m[2 * run] == m[0] && (m[0] < 0 || m[2 * run + 1] == m[1] + run))
      run++;
    n = run;
  }
  memcpy(dst, (const char *)from->data + (size_t)flat(r, from->dims, at) * from->elem_size,
         (size_t)n * from->elem_size);
  return n;
}

/* Elements o .. o + n - 1 along the last dimension of result array k, for
 * the replica at position pos of group g (src: a permute's source
 * replica, or -1), into dst.  Returns how many it wrote (at least 1): a
 * run stops where its source changes (a member's chunk ends along the
 * last dimension). */
static int64_t run_at(const coll *c, const group *g, int pos, int src, int k, const int64_t *o, int64_t n,
                      dev_slot *acc, void *dst) {
  if (c->ins->op == HLO_OP_RAGGED_ALL_TO_ALL)
    return ragged_run(c, g->m[pos], o, n, dst);
  const hlo_value *x = leaf(c, g->size ? g->m[0] : 0, k);
  int r = x->rank, d = c->d, last = r - 1;
  int64_t at[HLO_MAX_RANK];
  memcpy(at, o, sizeof at[0] * (size_t)r);
  const hlo_value *from = NULL;
  int64_t extent = 0; /* along d, of the run's source chunk */
  switch (c->ins->op) {
  case HLO_OP_ALL_REDUCE:
    reduce_run(c, g, k, flat(r, x->dims, at), n, acc, dst);
    return n;
  case HLO_OP_REDUCE_SCATTER:
    at[d] += (int64_t)pos * (x->dims[d] / g->size);
    reduce_run(c, g, k, flat(r, x->dims, at), n, acc, dst);
    return n;
  case HLO_OP_ALL_GATHER: {
    int j = (int)(o[d] / x->dims[d]);
    at[d] -= (int64_t)j * x->dims[d];
    from = leaf(c, g->m[j], k);
    extent = x->dims[d];
    break;
  }
  case HLO_OP_ALL_TO_ALL:
    if (d >= 0) {
      int64_t chunk = x->dims[d] / g->size;
      int j = (int)(o[d] / chunk);
      at[d] = (int64_t)pos * chunk + o[d] % chunk;
      from = leaf(c, g->m[j], k);
      extent = chunk;
    } else { /* result k comes from member k, its operand pos */
      from = leaf(c, g->m[k], pos);
    }
    break;
  default: /* collective-permute, collective-broadcast */
    if (src < 0) {
      memset(dst, 0, (size_t)n * x->elem_size);
      return n;
    }
    from = leaf(c, src, k);
    break;
  }
  if (r > 0 && d == last && extent > 0 && n > extent - at[d] % extent)
    n = extent - at[d] % extent;
  memcpy(dst, (const char *)from->data + (size_t)flat(from->rank, from->dims, at) * from->elem_size,
         (size_t)n * from->elem_size);
  return n;
}

/* Stages n elements of result array k along the last dimension from
 * index o on, at offset off of the tile (buf: a row's scratch). */
static void stage_row(const coll *c, const group *g, int pos, int src, int k, const int64_t *o, int64_t n,
                      dev_slot *acc, unsigned char *buf, dev_stage *st, int64_t off) {
  int r = c->ins->shape.type == HLO_TUPLE ? hlo_shape_leaf(&c->ins->shape, k)->rank : c->ins->shape.rank;
  int64_t at[HLO_MAX_RANK];
  memcpy(at, o, sizeof at[0] * (size_t)r);
  for (int64_t l = 0; l < n;) {
    int64_t got = run_at(c, g, pos, src, k, at, n - l, acc, buf);
    dev_stage_put_run(st, off + l, buf, got);
    l += got;
    if (r)
      at[r - 1] += got;
  }
}

/* Builds result array k (shape s) of the replica at position pos of g, tile
 * by tile through a VMEM stage, a row of the tile at a time.  Under the
 * dma-race defect (dev_stage.h) a tile may compute on the operands of the
 * tile buf further on, fetched into its ring buffer too early: where that
 * tile's positions lie inside the array, its values stand in this tile's
 * place.  NULL with why set. */
static hlo_value *build(const coll *c, const group *g, int pos, int src, int k, const hlo_shape *s) {
  hlo_value *out = hlo_value_array_uninit(s->type, s->rank, s->dims);
  dev_tiling tl;
  dev_tiling_plan(&tl, s->rank, s->dims, c->ctx->cfg);
  int r = s->rank;
  int64_t row = r ? tl.tile[r - 1] : 1;
  unsigned char *buf = out ? malloc((size_t)row * out->elem_size) : NULL;
  dev_slot *acc = malloc((size_t)row * 2 * sizeof *acc); /* a complex element takes two */
  dev_stage st;
  bool staged = buf && acc && dev_stage_open(&st, "vmem collective tile", s->type, tl.volume) == 0;
  if (!staged) {
    free(buf);
    free(acc);
    hlo_value_unref(out);
    snprintf(c->ctx->why, c->ctx->why_len, "out of memory"); /* the host's: a tool error (fusion_run.c) */
    return NULL;
  }
  dev_race race = dev_whole_race(c->ctx);
  for (int64_t t = 0; t < tl.ntiles && out; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0}, o[HLO_MAX_RANK];
    int64_t shift[HLO_MAX_RANK] = {0}, slo[HLO_MAX_RANK], sn[HLO_MAX_RANK];
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    int64_t len = r ? n[r - 1] : 1, off = 0;
    int64_t from = dev_race_source(&race, (uint64_t)k, t, tl.ntiles);
    if (from != t) {
      dev_tiling_box(&tl, from, slo, sn);
      for (int d = 0; d < r; d++)
        shift[d] = slo[d] - lo[d];
    }
    int64_t rows[HLO_MAX_RANK]; /* the tile's rows: its box with the last dim 1 */
    memcpy(rows, n, sizeof rows[0] * (size_t)r);
    if (r)
      rows[r - 1] = 1;
    dev_stage_begin(&st, cnt);
    do {
      int64_t raced = 0;
      if (from != t) { /* the leading part of the row that lies inside the array */
        bool inside = true;
        for (int d = 0; d < r; d++)
          inside = inside && (o[d] = lo[d] + p[d] + shift[d]) < s->dims[d];
        raced = inside ? s->dims[r - 1] - o[r - 1] : 0;
        raced = raced < len ? raced : len;
        stage_row(c, g, pos, src, k, o, raced, acc, buf, &st, off);
      }
      for (int d = 0; d < r; d++)
        o[d] = lo[d] + p[d];
      if (r)
        o[r - 1] += raced;
      stage_row(c, g, pos, src, k, o, len - raced, acc, buf, &st, off + raced);
      off += len;
    } while (hlo_index_next(r, rows, p));
    if (dev_stage_end(&st, c->ctx->why, c->ctx->why_len) != 0) {
      hlo_value_unref(out);
      out = NULL;
      break;
    }
    dev_stage_copy_out(&st, &tl, lo, n, out->data);
  }
  dev_stage_close(&st);
  free(buf);
  free(acc);
  return out;
}

/* Does result array k's shape s agree with what the op makes of operand
 * array x for a group of `size`?  -1 after fail. */
static int check_shape(const coll *c, int k, const hlo_value *x, const hlo_shape *s, int size) {
  if (!s || s->type != x->type || s->rank != x->rank)
    return fail(c, "result %d does not have operand %d's type and rank", k, k);
  int d = c->d;
  for (int q = 0; q < s->rank; q++) {
    int64_t want = x->dims[q];
    if (q == d && c->ins->op == HLO_OP_ALL_GATHER)
      want = x->dims[q] * size;
    else if (q == d && c->ins->op == HLO_OP_REDUCE_SCATTER)
      want = x->dims[q] % size == 0 ? x->dims[q] / size : -1;
    else if (q == d && c->ins->op == HLO_OP_ALL_TO_ALL && x->dims[q] % size != 0)
      want = -1;
    if (s->dims[q] != want)
      return fail(c, "dimension %d of the result does not fit a group of %d", q, size);
  }
  return 0;
}

/* The replica-id whose operand replica r receives in a permute, or -1. */
static int permute_source(const coll *c, int r) {
  int src = -1;
  for (int p = 0; p < c->ins->attrs.npairs; p++) {
    const hlo_pair *pr = &c->ins->attrs.pairs[p];
    if (pr->a < c->nrep && pr->b == r)
      src = (int)pr->a;
  }
  return src;
}

/* The replica whose operands replica r receives in a broadcast: its
 * group's first member; -1 when r is in no group (it gets zeros), or -2
 * after fail. */
static int broadcast_source(const coll *c, int r) {
  const hlo_replica_groups *rg = &c->ins->attrs.replica_groups;
  for (int i = 0; i < rg->ngroups; i++)
    for (int j = 0; j < rg->groups[i].n; j++)
      if (rg->groups[i].v[j] == r) {
        group g;
        return group_of(c, r, &g) < 0 ? -2 : g.m[0];
      }
  return rg->ngroups == 0 ? 0 : -1;
}

/* ragged-all-to-all's metadata entry e of replica q's operand k, clamped
 * to +-2^62 so that an offset plus a size or a row count cannot overflow. */
static int64_t ragged_meta(const coll *c, int q, int k, int64_t e) {
  const int64_t big = (int64_t)1 << 62;
  int64_t v = hlo_value_get_i64(leaf(c, q, k), e);
  return v > big ? big : v < -big ? -big : v;
}

/* ragged-all-to-all: the result of the replica at position pos of g.  The
 * row map is filled walking the updates from the last to the first, so
 * that a row keeps the first writer met, which is the last in the order the
 * semantics name; rows no update writes keep the replica's own output.
 * NULL after fail. */
static hlo_value *ragged_result(const coll *c, const group *g, int pos) {
  enum { IN, OUT, IN_OFF, SEND, OUT_OFF };
  int self = g->m[pos];
  const hlo_value *own = leaf(c, self, OUT);
  int64_t nmeta = leaf(c, self, IN_OFF)->count;
  if (own->rank < 1 || nmeta % g->size != 0 || !hlo_value_matches(own, &c->ins->shape)) {
    fail(c, "needs an output of the result's shape, rank >= 1, and metadata of a multiple of the group size %d "
            "entries", g->size);
    return NULL;
  }
  int64_t per = nmeta / g->size, rows_out = own->dims[0];
  for (int j = 0; j < g->size; j++) {
    const hlo_value *in = leaf(c, g->m[j], IN);
    if (in->type != own->type || in->rank != own->rank ||
        (in->dims[0] ? in->count / in->dims[0] : 0) != (rows_out ? own->count / rows_out : 0)) {
      fail(c, "input and output must agree in type and in every dimension but the first");
      return NULL;
    }
  }
  int64_t *map = malloc((size_t)(rows_out ? rows_out : 1) * 2 * sizeof *map);
  if (!map) {
    snprintf(c->ctx->why, c->ctx->why_len, "out of memory"); /* the host's: a tool error (fusion_run.c) */
    return NULL;
  }
  for (int64_t i = 0; i < rows_out; i++)
    map[2 * i] = -2; /* not yet written */
  for (int j = g->size - 1; j >= 0; j--) {
    int q = g->m[j];
    int64_t rows_in = leaf(c, q, IN)->dims[0];
    for (int64_t u = per - 1; u >= 0; u--) {
      int64_t e = (int64_t)pos * per + u;
      int64_t from = ragged_meta(c, q, IN_OFF, e), cnt = ragged_meta(c, q, SEND, e);
      int64_t to = ragged_meta(c, q, OUT_OFF, e);
      for (int64_t i = 0; i < cnt; i++) {
        if (to + i >= rows_out || from + i >= rows_in)
          break;
        if (to + i < 0 || from + i < 0) { /* skip to the first row inside both */
          int64_t skip = -(to < from ? to : from);
          i = skip - 1;
          continue;
        }
        if (map[2 * (to + i)] == -2) {
          map[2 * (to + i)] = q;
          map[2 * (to + i) + 1] = from + i;
        }
      }
    }
  }
  for (int64_t i = 0; i < rows_out; i++)
    if (map[2 * i] == -2)
      map[2 * i] = -1;
  coll rc = *c;
  rc.rows = map;
  hlo_value *out = build(&rc, g, pos, -1, 0, &c->ins->shape);
  free(map);
  return out;
}

/* Replica r's result: one array per operand array, wrapped as the
 * instruction's shape says. */
static hlo_value *result(const coll *c, int r) {
  group g;
  int pos = 0, src = -1;
  if (c->ins->op == HLO_OP_COLLECTIVE_PERMUTE || c->ins->op == HLO_OP_COLLECTIVE_BROADCAST) {
    src = c->ins->op == HLO_OP_COLLECTIVE_PERMUTE ? permute_source(c, r) : broadcast_source(c, r);
    if (src < -1)
      return NULL;
    g.size = 0;
  } else if ((pos = group_of(c, r, &g)) < 0) {
    return NULL;
  } else if (c->ins->op == HLO_OP_RAGGED_ALL_TO_ALL) {
    return ragged_result(c, &g, pos);
  }
  bool tuple_form = c->ins->op == HLO_OP_ALL_TO_ALL && c->d < 0;
  if (tuple_form && c->nl != g.size) {
    fail(c, "has %d operands but the replica group has %d members", c->nl, g.size);
    return NULL;
  }
  hlo_value *res[64];
  for (int k = 0; k < c->nl; k++) {
    const hlo_shape *s = hlo_shape_leaf(&c->ins->shape, k);
    const hlo_value *x = leaf(c, r, k);
    bool ok = c->d < x->rank;
    if (!ok)
      fail(c, "dimensions names dimension %d of a rank-%d operand", c->d, x->rank);
    ok = ok && check_shape(c, k, x, s, g.size ? g.size : 1) == 0 && (res[k] = build(c, &g, pos, src, k, s));
    if (!ok) {
      while (k-- > 0)
        hlo_value_unref(res[k]);
      return NULL;
    }
  }
  if (c->ins->shape.type != HLO_TUPLE)
    return res[0];
  hlo_value *t = hlo_value_tuple(c->nl, res);
  if (!t) {
    for (int k = 0; k < c->nl; k++)
      hlo_value_unref(res[k]);
    snprintf(c->ctx->why, c->ctx->why_len, "out of memory"); /* the host's: a tool error (fusion_run.c) */
  }
  return t;
}

/* Do all members of r's group share one result (all-reduce, all-gather)?
 * Then the first member computes it and the others take a reference. */
static int earlier_member(const coll *c, int r) {
  if (c->ins->op != HLO_OP_ALL_REDUCE && c->ins->op != HLO_OP_ALL_GATHER)
    return -1;
  group g;
  if (group_of(c, r, &g) < 0)
    return -1;
  return g.m[0] < r ? g.m[0] : -1;
}

/* Can the reducer f fold arrays of type t: a simple reducer, or a lane
 * program of two parameters of type t and one result?  Returns the simple
 * reducer's opcode, else compiles *lane (NULL when it does not qualify).
 * On complex values the one simple reducer is add (complex_sum_run); any
 * other reducer is a complex lane program, whose values take two slots. */
static hlo_opcode reducer(const hlo_computation *f, hlo_etype t, dev_lane **lane) {
  *lane = NULL;
  hlo_opcode op = hlo_simple_reducer(f);
  bool complex = hlo_etype_class(t) == HLO_CLASS_COMPLEX;
  if (op != HLO_OP_INVALID && (!complex || op == HLO_OP_ADD))
    return op;
  char why[160];
  int w = complex ? 2 : 1;
  dev_lane *p = complex ? dev_lane_compile_complex(f, why, sizeof why) : dev_lane_compile(f, why, sizeof why);
  if (p && dev_lane_nparams(p) == 2 * w && dev_lane_nresults(p) == w && f->nparams == 2 &&
      f->params[0]->shape.type == t && f->params[1]->shape.type == t && f->root->shape.type == t)
    *lane = p;
  else
    dev_lane_free(p);
  return HLO_OP_INVALID;
}

/* The operand arrays of ins: one per operand, or the leaves of one tuple. */
static int operand_arrays(const hlo_instr *ins, const hlo_shape **leaves) {
  if (ins->noperands == 1 && ins->operands[0]->shape.type == HLO_TUPLE) {
    int n = hlo_shape_leaf_count(&ins->operands[0]->shape);
    for (int k = 0; k < n && k < 64; k++)
      leaves[k] = hlo_shape_leaf(&ins->operands[0]->shape, k);
    return n;
  }
  for (int k = 0; k < ins->noperands && k < 64; k++)
    leaves[k] = &ins->operands[k]->shape;
  return ins->noperands;
}

bool dev_collective_lowers(const hlo_instr *ins) {
  if (!dev_collective_op(ins->op) || (ins->op == HLO_OP_COLLECTIVE_PERMUTE && ins->noperands != 1) ||
      (ins->op == HLO_OP_RAGGED_ALL_TO_ALL && ins->noperands != 6))
    return false;
  const hlo_shape *leaves[64];
  int nl = operand_arrays(ins, leaves);
  if (nl < 1 || nl > 64)
    return false;
  /* Complex values are moved whole, and reduced as a sum
   * (complex_sum_run) or by a complex lane program (complex_lane_run). */
  bool reduces = ins->op == HLO_OP_ALL_REDUCE || ins->op == HLO_OP_REDUCE_SCATTER;
  for (int k = 0; k < nl; k++) {
    hlo_eclass cls = leaves[k] ? hlo_etype_class(leaves[k]->type) : HLO_CLASS_OTHER;
    if (!leaves[k] || leaves[k]->type == HLO_TUPLE || cls == HLO_CLASS_OTHER)
      return false;
  }
  if (!reduces)
    return true;
  if (!ins->attrs.calls.to_apply)
    return true; /* refused with a message when run */
  for (int k = 0; k < nl; k++) {
    dev_lane *lane;
    if (reducer(ins->attrs.calls.to_apply, leaves[k]->type, &lane) == HLO_OP_INVALID && !lane)
      return false;
    dev_lane_free(lane);
  }
  return true;
}

int dev_collective_run(const hlo_instr *ins, int nrep, hlo_value *const *ops, const dev_whole_ctx *ctx,
                       hlo_value **outs) {
  coll c = {.ins = ins, .nrep = nrep, .nops = ins->noperands, .ops = ops, .ctx = ctx, .red = HLO_OP_INVALID};
  for (int r = 0; r < nrep; r++)
    outs[r] = NULL;
  if (nrep < 1 || nrep > MAX_MEMBERS || !dev_collective_lowers(ins))
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_shape *shapes[64];
  c.nl = operand_arrays(ins, shapes);
  for (int r = 0; r < nrep; r++)
    for (int k = 0; k < c.nl; k++) {
      const hlo_value *x = leaf(&c, r, k);
      if (x->type != shapes[k]->type || x->rank != shapes[k]->rank || x->elem_size > 16)
        return fail(&c, "replica %d's operand %d is not of the operand's shape", r, k);
    }
  c.d = (ins->attrs.has & HLO_A_DIMENSIONS) && ins->attrs.dimensions.n == 1 ? (int)ins->attrs.dimensions.v[0] : -1;
  if ((ins->op == HLO_OP_ALL_GATHER || ins->op == HLO_OP_REDUCE_SCATTER) && c.d < 0)
    return fail(&c, "needs dimensions={d} naming one operand dimension");
  for (int p = 0; ins->op == HLO_OP_COLLECTIVE_PERMUTE && p < ins->attrs.npairs; p++)
    if (ins->attrs.pairs[p].a < 0 || ins->attrs.pairs[p].b < 0)
      return fail(&c, "source_target_pairs names a negative replica");
  if (ins->op == HLO_OP_ALL_REDUCE || ins->op == HLO_OP_REDUCE_SCATTER) {
    if (!ins->attrs.calls.to_apply)
      return fail(&c, "%s needs to_apply", hlo_opcode_name(ins->op));
    /* dev_collective_lowers checked every array's type; the reducer is
     * one computation, so one compiled program serves them all */
    c.red = reducer(ins->attrs.calls.to_apply, shapes[0]->type, &c.lane);
  }
  int rc = 0;
  for (int r = 0; r < nrep && rc == 0; r++) {
    int q = earlier_member(&c, r);
    outs[r] = q >= 0 ? hlo_value_ref(outs[q]) : result(&c, r);
    if (!outs[r])
      rc = -1;
  }
  dev_lane_free(c.lane);
  if (rc != 0)
    for (int r = 0; r < nrep; r++) {
      hlo_value_unref(outs[r]);
      outs[r] = NULL;
    }
  return rc;
}
