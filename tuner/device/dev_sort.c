/* dev_sort.c — the device's sort (dev_whole.h).
 *
 * Semantics: every line along the sort dimension is ordered by the
 * comparator (2N scalars, parameter 2k is operand k's left element, 2k+1
 * its right one; true when left goes first) and the same permutation is
 * applied to every operand.  The device's sort is stable whether or not
 * is_stable is set: ties keep their input order (an iota tie-break), the
 * one answer a checker can compare with.
 *
 * Lowering, general path: a line is cut into blocks of the config's tile
 * extent along the sort dimension.  Each block is sorted in a VMEM buffer
 * of positions (stably: insertion sort of runs of 16, then merges), then
 * sorted blocks are merged
 * pairwise, left run first on ties, doubling the run length until one run
 * is left.  The comparator runs as a lane program (dev_lane.h); when it is
 * a single total-order compare of one operand's two elements, each
 * element's key is derived once per line instead (dev_elem_compare_key)
 * and a comparison orders two keys, with the same outcome.
 *
 * Lowering with flag two-stage-sort, for an unstable sort along a major
 * (not the minor-most) dimension of length N = M*128 >= 256: the line is
 * folded into [M, 128], lane l holding the strided positions m*128 + l.
 * Each lane is sorted in VMEM (stably), then the 128 lanes are merged: the
 * next output is the lane head that goes first, ties going to the smaller
 * input position.  Keys (operands the comparator reads) travel with the
 * lanes; carried operands are gathered afterwards from the input position
 * reconstructed from (lane l, row m) as m*128 + l.
 *
 * Defect sort-lane-index (dev_defect.h; class: wrong index arithmetic in a
 * layout transformation; paper Listing 1, bug3): the reconstruction
 * computes m + l*M instead, so the carried values come from the wrong
 * positions while the keys stay right.
 */
#include "dev_whole.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_defect.h"
#include "dev_elemental.h"
#include "dev_lane.h"
#include "dev_stage.h"

#define DEV_SORT_MAX_OPERANDS 64
#define DEV_SORT_LANES 128

typedef struct sorter {
  int n;
  dev_lane *cmp;
  dev_slot **line; /* per operand, the current line's values */
  dev_slot *args;  /* 2n comparator arguments */
  int nkeys;       /* the operands the comparator reads (is_key) */
  int keys[DEV_SORT_MAX_OPERANDS];
  /* A comparator that is one compare, lowered as an order of integer keys,
   * of two parameters of one operand (dev_lane_single_compare,
   * dev_elem_compare_by_key): each element's key is derived once per line
   * into key[], and a comparison is the lowering's order of two keys,
   * which is what running the comparator on the two elements computes. */
  const hlo_instr *kcmp; /* that compare, or NULL */
  bool kout[3];          /* its dev_elem_compare_outcomes */
  int kop;               /* its operand */
  bool kl_right, kr_right; /* its left / right operand is the right element */
  int64_t *key;          /* the current line's keys */
} sorter;

/* Sets s->kcmp and its fields when the comparator qualifies. */
static void plan_keys(sorter *s) {
  const hlo_instr *cmp;
  int a, b;
  s->kcmp = NULL;
  if (!dev_lane_single_compare(s->cmp, &cmp, &a, &b) || a / 2 != b / 2 || !dev_elem_compare_by_key(cmp))
    return;
  s->kcmp = cmp;
  dev_elem_compare_outcomes(cmp, s->kout);
  s->kop = a / 2;
  s->kl_right = a % 2 == 1;
  s->kr_right = b % 2 == 1;
}

/* Does position a go before position b (both in the current line)?  With
 * keys (plan_keys), the compare's outcome for the two keys; else the
 * comparator runs, with only the key operands' arguments filled in: it
 * never reads the others (a top-k's carried indices), and a sort compares
 * tens of thousands of times. */
static bool before(sorter *s, int64_t a, int64_t b) {
  if (s->kcmp) {
    int64_t x = s->key[s->kl_right ? b : a], y = s->key[s->kr_right ? b : a];
    return s->kout[1 + (x > y) - (x < y)];
  }
  for (int q = 0; q < s->nkeys; q++) {
    int k = s->keys[q];
    s->args[2 * k] = s->line[k][a];
    s->args[2 * k + 1] = s->line[k][b];
  }
  dev_slot r;
  dev_lane_run(s->cmp, s->args, &r);
  return r.i != 0;
}

#define DEV_SORT_RUN 16 /* runs sorted by insertion before merging */

/* Merges the sorted runs pos[lo, mid) and pos[mid, hi) into out[lo, hi),
 * the left run first on ties (stable). */
static void merge(sorter *s, const int64_t *pos, int64_t lo, int64_t mid, int64_t hi, int64_t *out) {
  int64_t i = lo, j = mid, o = lo;
  while (i < mid && j < hi)
    out[o++] = before(s, pos[j], pos[i]) ? pos[j++] : pos[i++];
  while (i < mid)
    out[o++] = pos[i++];
  while (j < hi)
    out[o++] = pos[j++];
}

/* Stable sort of the positions pos[0..n): insertion sort of short runs,
 * then merges of doubling width through scratch (n more slots). */
static void sort_block(sorter *s, int64_t *pos, int64_t n, int64_t *scratch) {
  for (int64_t b = 0; b < n; b += DEV_SORT_RUN) {
    int64_t e = n - b < DEV_SORT_RUN ? n : b + DEV_SORT_RUN;
    for (int64_t i = b + 1; i < e; i++) {
      int64_t x = pos[i], j = i;
      while (j > b && before(s, x, pos[j - 1])) {
        pos[j] = pos[j - 1];
        j--;
      }
      pos[j] = x;
    }
  }
  for (int64_t w = DEV_SORT_RUN; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w)
      merge(s, pos, lo, lo + w < n ? lo + w : n, lo + 2 * w < n ? lo + 2 * w : n, scratch);
    memcpy(pos, scratch, (size_t)n * sizeof *pos);
  }
}

/* Stages positions pos[0..n) through a poisoned VMEM buffer, sorts them
 * there and copies them back; tmp holds 2n slots of scratch. */
static int block_in_vmem(sorter *s, dev_stage *st, int64_t *pos, int64_t n, int64_t *tmp, char *why, size_t why_len) {
  dev_stage_begin(st, n);
  for (int64_t i = 0; i < n; i++)
    tmp[i] = pos[i];
  sort_block(s, tmp, n, tmp + n);
  dev_stage_put_run(st, 0, tmp, n); /* n is within the buffer: a block */
  if (dev_stage_end(st, why, why_len) != 0)
    return -1;
  memcpy(pos, st->vmem.data, (size_t)n * sizeof *pos);
  return 0;
}

static bool is_key(const hlo_computation *cmp, int k) {
  for (int i = 0; i < cmp->ninstrs; i++) {
    const hlo_instr *ins = cmp->instrs[i];
    if (ins->op == HLO_OP_PARAMETER && ins->parameter_number / 2 == k && ins == cmp->root)
      return true;
    for (int j = 0; j < ins->noperands; j++)
      if (ins->operands[j]->op == HLO_OP_PARAMETER && ins->operands[j]->parameter_number / 2 == k)
        return true;
  }
  return false;
}

/* General path: perm[0..len) gets the sorted order of the line. */
static int sort_line_blocks(sorter *s, dev_stage *st, int64_t len, int64_t blk, int64_t *perm, int64_t *tmp,
                            char *why, size_t why_len) {
  for (int64_t i = 0; i < len; i++)
    perm[i] = i;
  for (int64_t b = 0; b < len; b += blk)
    if (block_in_vmem(s, st, perm + b, len - b < blk ? len - b : blk, tmp, why, why_len) != 0)
      return -1;
  for (int64_t w = blk; w < len; w *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * w)
      merge(s, perm, lo, lo + w < len ? lo + w : len, lo + 2 * w < len ? lo + 2 * w : len, tmp);
    memcpy(perm, tmp, (size_t)len * sizeof *perm);
  }
  return 0;
}

/* Two-stage path: perm[j] = the input position whose keys land at j, and
 * carried[j] = the position the carried operands are gathered from. */
static int sort_line_lanes(sorter *s, dev_stage *st, int64_t len, bool lost, int64_t *perm, int64_t *carried,
                           int64_t *tmp, char *why, size_t why_len) {
  int64_t M = len / DEV_SORT_LANES;
  int64_t *lanes = perm; /* lane l's sorted positions at [l*M, (l+1)*M) */
  for (int64_t l = 0; l < DEV_SORT_LANES; l++) {
    for (int64_t m = 0; m < M; m++)
      lanes[l * M + m] = m * DEV_SORT_LANES + l;
    if (block_in_vmem(s, st, lanes + l * M, M, tmp, why, why_len) != 0)
      return -1;
  }
  int64_t head[DEV_SORT_LANES] = {0};
  int64_t *out = tmp + len; /* tmp holds 2*len */
  for (int64_t j = 0; j < len; j++) {
    int best = -1;
    for (int l = 0; l < DEV_SORT_LANES; l++) {
      if (head[l] >= M)
        continue;
      int64_t p = lanes[l * M + head[l]];
      if (best < 0) {
        best = l;
        continue;
      }
      int64_t q = lanes[best * M + head[best]];
      if (before(s, p, q) || (!before(s, q, p) && p < q))
        best = l;
    }
    int64_t p = lanes[best * M + head[best]++];
    int64_t m = p / DEV_SORT_LANES, l = p % DEV_SORT_LANES; /* the lane coordinates */
    out[j] = p;
    carried[j] = lost ? m + l * M : m * DEV_SORT_LANES + l;
  }
  memcpy(perm, out, (size_t)len * sizeof *perm);
  return 0;
}

int dev_sort_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  int n = ins->noperands;
  const hlo_computation *cmpc = ins->attrs.calls.to_apply;
  if (n < 1 || n > DEV_SORT_MAX_OPERANDS || ins->attrs.dimensions.n != 1 || !cmpc || cmpc->nparams != 2 * n)
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *a0 = ops[0];
  int r = a0->rank;
  int64_t sd = ins->attrs.dimensions.v[0];
  if (sd < 0 || sd >= r)
    return DEV_WHOLE_UNSUPPORTED;
  for (int k = 0; k < n; k++) {
    hlo_eclass c = hlo_etype_class(ops[k]->type);
    if (ops[k]->rank != r || c == HLO_CLASS_COMPLEX || c == HLO_CLASS_OTHER)
      return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < r; d++)
      if (ops[k]->dims[d] != a0->dims[d])
        return DEV_WHOLE_UNSUPPORTED;
  }
  char lane_why[160];
  sorter s = {.n = n};
  s.cmp = dev_lane_compile(cmpc, lane_why, sizeof lane_why);
  if (!s.cmp)
    return DEV_WHOLE_UNSUPPORTED;
  if (dev_lane_nresults(s.cmp) != 1 || cmpc->root->shape.type != HLO_PRED) {
    dev_lane_free(s.cmp);
    return DEV_WHOLE_UNSUPPORTED;
  }
  int64_t len = a0->dims[sd], inner = 1, outer = 1;
  for (int d = (int)sd + 1; d < r; d++)
    inner *= a0->dims[d];
  for (int d = 0; d < sd; d++)
    outer *= a0->dims[d];
  bool two_stage = ctx->cfg && (ctx->cfg->flags & DEV_FLAG_TWO_STAGE_SORT) && !ins->attrs.is_stable &&
                   sd < r - 1 && len >= 2 * DEV_SORT_LANES && len % DEV_SORT_LANES == 0;
  bool lost = two_stage && ((ctx->defects >> DEV_DEFECT_SORT_LANE_INDEX) & 1u);
  dev_tiling tl;
  dev_tiling_plan(&tl, r, a0->dims, ctx->cfg);
  int64_t blk = two_stage ? len / DEV_SORT_LANES : tl.tile[sd];
  size_t L = (size_t)(len ? len : 1);
  s.line = calloc((size_t)n, sizeof *s.line);
  s.args = calloc((size_t)(2 * n), sizeof *s.args);
  int64_t *perm = malloc(L * sizeof *perm), *carried = malloc(L * sizeof *carried);
  int64_t *tmp = malloc(2 * L * sizeof *tmp);
  hlo_value *res[DEV_SORT_MAX_OPERANDS] = {0};
  bool keyk[DEV_SORT_MAX_OPERANDS];
  dev_stage st;
  bool have_st = false;
  int rc = s.line && s.args && perm && carried && tmp ? 0 : -1;
  for (int k = 0; k < n && rc == 0; k++) {
    keyk[k] = is_key(cmpc, k);
    if (keyk[k])
      s.keys[s.nkeys++] = k;
    if (!(s.line[k] = malloc(L * sizeof **s.line)) || !(res[k] = hlo_value_array_uninit(ops[k]->type, r, ops[k]->dims)))
      rc = -1;
  }
  plan_keys(&s);
  if (rc == 0 && s.kcmp && !(s.key = malloc(L * sizeof *s.key)))
    rc = -1;
  if (rc == 0 && dev_stage_open(&st, "vmem sort block", HLO_S64, blk > 0 ? blk : 1) != 0)
    rc = -1;
  else if (rc == 0)
    have_st = true;
  if (rc != 0)
    snprintf(ctx->why, ctx->why_len, "out of memory");
  for (int64_t o = 0; o < outer && rc == 0; o++)
    for (int64_t in = 0; in < inner && rc == 0; in++) {
      int64_t base = o * len * inner + in;
      for (int k = 0; k < n; k++)
        for (int64_t j = 0; j < len; j++)
          dev_slot_from_host(ops[k]->type, ops[k]->data, base + j * inner, &s.line[k][j]);
      for (int64_t j = 0; s.kcmp && j < len; j++)
        s.key[j] = dev_elem_compare_key(s.line[s.kop][j]);
      if (two_stage)
        rc = sort_line_lanes(&s, &st, len, lost, perm, carried, tmp, ctx->why, ctx->why_len);
      else
        rc = sort_line_blocks(&s, &st, len, blk, perm, tmp, ctx->why, ctx->why_len);
      if (rc != 0)
        break;
      for (int k = 0; k < n; k++) {
        size_t es = ops[k]->elem_size;
        const int64_t *from = two_stage && !keyk[k] ? carried : perm;
        for (int64_t j = 0; j < len; j++)
          memcpy((char *)res[k]->data + (size_t)(base + j * inner) * es,
                 (const char *)ops[k]->data + (size_t)(base + from[j] * inner) * es, es);
      }
    }
  if (have_st)
    dev_stage_close(&st);
  for (int k = 0; s.line && k < n; k++)
    free(s.line[k]);
  free(s.line);
  free(s.args);
  free(perm);
  free(carried);
  free(tmp);
  free(s.key);
  dev_lane_free(s.cmp);
  if (rc == 0 && ins->shape.type != HLO_TUPLE && n == 1) {
    *out = res[0];
    return 0;
  }
  if (rc == 0 && !(*out = hlo_value_tuple(n, res))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  if (rc != 0)
    for (int k = 0; k < n; k++)
      hlo_value_unref(res[k]);
  return rc;
}
