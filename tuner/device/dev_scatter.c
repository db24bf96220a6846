/* dev_scatter.c — the device's scatter (dev_whole.h).
 *
 * Semantics (XLA operation semantics, Scatter): an update position splits
 * into scatter dims (every update dim not in update_window_dims; in order
 * they are the index array's dims other than index_vector_dim) and window
 * dims (update_window_dims[j] runs along the j-th operand dim that is
 * neither in inserted_window_dims nor in input_batching_dims).  Component k
 * of the index vector is the window's start along operand dim
 * scatter_dims_to_operand_dims[k]; an input_batching_dims[i] starts at the
 * batch coordinate of index dim scatter_indices_batching_dims[i].  Starts
 * are not clamped: a window that does not fit inside the operand is
 * skipped whole.  With n operands, to_apply takes (operand values,
 * update values) and returns n new values.
 *
 * Lowering, general path: the result starts as a copy of the operands in
 * HBM.  Update windows are taken in index order (batch positions row-major
 * over the scatter dims), in chunks of as many batch positions as the
 * config's tile holds elements; each chunk's updates are DMA'd into a VMEM
 * buffer, then combined into the result window by window, each window
 * row-major, so a repeated index is combined in index order.  The combiner
 * runs as a simple reducer step (dev_elem_reduce_step), an overwrite, a
 * keep, or else as a lane program of the device's own (dev_lane.h).
 *
 * Lowering with flag vec-scatter, for a singleton scatter (one operand,
 * one update element, no window or batching dims, one index vector, a set,
 * keep or simple combiner): a one-hot select over the operand, tile by
 * tile: out[p] = mask(p) ? combine(operand[p], update) : operand[p], where
 * mask(p) compares an iota of operand positions with the broadcast index,
 * the iota built in s32 (exact: a negative or too large index matches
 * nothing, as the general path skips it).
 *
 * Defect scatter-s8-iota-wrap (dev_defect.h; class: integer width lost in a
 * vectorisation rewrite; paper Listing 1, bug2): the iota is built in the
 * index's own type when that is narrower than 32 bits, so it wraps modulo
 * 2^bits and the mask also holds at every position congruent to the index
 * (for s8, i + 256; a negative s8 index matches its wrapped position).
 */
#include "dev_whole.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_defect.h"
#include "dev_elemental.h"
#include "dev_hbm.h"
#include "dev_lane.h"
#include "dev_stage.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_index.h"

#define DEV_SCATTER_MAX_OPERANDS 16

static bool in_list(const hlo_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d)
      return true;
  return false;
}

static bool param_root(const hlo_computation *c, int64_t which) {
  return c && c->root && c->root->op == HLO_OP_PARAMETER && c->root->parameter_number == which;
}

/* How the combiner is applied. */
typedef struct combiner {
  int n;
  bool set, keep;
  hlo_opcode red; /* a simple reducer, n == 1 */
  dev_lane *lane;
} combiner;

static int combiner_plan(combiner *cb, const hlo_computation *c, int n, char *why, size_t why_len) {
  memset(cb, 0, sizeof *cb);
  cb->n = n;
  cb->red = HLO_OP_INVALID;
  if (c && c->nparams == 2 * n && n == 1) {
    cb->set = param_root(c, 1);
    cb->keep = param_root(c, 0);
    cb->red = hlo_simple_reducer(c);
    if (cb->set || cb->keep || cb->red != HLO_OP_INVALID)
      return 0;
  }
  if (!c || c->nparams != 2 * n)
    return -1;
  cb->lane = dev_lane_compile(c, why, why_len);
  if (!cb->lane || dev_lane_nresults(cb->lane) != n) {
    dev_lane_free(cb->lane);
    cb->lane = NULL;
    return -1;
  }
  return 0;
}

/* vals[k]: operand k's value in, its combined value out; upd[k]: update k. */
static void combine(combiner *cb, const hlo_etype *types, dev_slot *vals, const dev_slot *upd) {
  if (cb->set) {
    vals[0] = upd[0];
  } else if (cb->keep) {
    /* nothing */
  } else if (cb->red != HLO_OP_INVALID) {
    vals[0] = dev_elem_reduce_step(cb->red, types[0], vals[0], upd[0]);
  } else {
    dev_slot args[2 * DEV_SCATTER_MAX_OPERANDS];
    for (int k = 0; k < cb->n; k++) {
      args[k] = vals[k];
      args[cb->n + k] = upd[k];
    }
    dev_lane_run(cb->lane, args, vals);
  }
}

/* The singleton scatter lowered as a one-hot select (flag vec-scatter). */
static int vec_scatter(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, combiner *cb,
                       hlo_value **out) {
  const hlo_scatter_dnums *dn = &ins->attrs.scatter;
  const hlo_value *op = ops[0], *ind = ops[1], *upd = ops[2];
  hlo_etype it = ind->type;
  int r = op->rank;
  bool wraps = ((ctx->defects >> DEV_DEFECT_SCATTER_S8_IOTA_WRAP) & 1u) && hlo_etype_bits(it) < 32;
  int comp_of[HLO_MAX_RANK];
  int64_t idx[HLO_MAX_RANK];
  for (int d = 0; d < r; d++)
    comp_of[d] = -1;
  for (int c = 0; c < dn->scatter_dims_to_operand_dims.n; c++) {
    comp_of[dn->scatter_dims_to_operand_dims.v[c]] = c;
    idx[c] = dev_whole_index(ind, c);
  }
  dev_slot u;
  dev_slot_from_host(upd->type, upd->data, 0, &u);
  hlo_value *res = hlo_value_array_uninit(op->type, r, op->dims);
  dev_tiling tl;
  dev_tiling_plan(&tl, r, op->dims, ctx->cfg);
  dev_stage st;
  if (!res || dev_stage_open(&st, "vmem scatter tile", op->type, tl.volume) != 0) {
    hlo_value_unref(res);
    snprintf(ctx->why, ctx->why_len, "out of memory");
    return -1;
  }
  int64_t str[HLO_MAX_RANK];
  hlo_value_strides(op, str);
  int rc = 0;
  for (int64_t t = 0; t < tl.ntiles && rc == 0; t++) {
    int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK], p[HLO_MAX_RANK] = {0};
    int64_t cnt = dev_tiling_box(&tl, t, lo, n);
    dev_stage_begin(&st, cnt);
    for (int64_t l = 0; l < cnt; l++, hlo_index_next(r, n, p)) {
      bool mask = true;
      int64_t g = 0;
      for (int d = 0; d < r; d++) {
        int64_t pos = lo[d] + p[d];
        g += pos * str[d];
        if (comp_of[d] < 0)
          mask = mask && pos == 0; /* an inserted dim the index does not address */
        else if (wraps) /* the iota in the index type */
          mask = mask && hlo_int_wrap(it, (uint64_t)pos) == hlo_int_wrap(it, (uint64_t)idx[comp_of[d]]);
        else
          mask = mask && pos == idx[comp_of[d]];
      }
      dev_slot v;
      dev_slot_from_host(op->type, op->data, g, &v);
      if (mask)
        combine(cb, &op->type, &v, &u);
      uint8_t tmp[16];
      dev_slot_to_host(op->type, v, tmp, 0);
      dev_stage_put(&st, l, tmp);
    }
    rc = dev_stage_end(&st, ctx->why, ctx->why_len);
    if (rc == 0)
      dev_stage_copy_out(&st, &tl, lo, n, res->data);
  }
  dev_stage_close(&st);
  if (rc != 0) {
    hlo_value_unref(res);
    return -1;
  }
  *out = res;
  return 0;
}

static bool singleton(const hlo_instr *ins, hlo_value *const *ops, const combiner *cb) {
  const hlo_scatter_dnums *dn = &ins->attrs.scatter;
  hlo_eclass ic = hlo_etype_class(ops[1]->type);
  if (ins->noperands != 3 || ops[2]->count != 1 || dn->update_window_dims.n != 0 ||
      dn->input_batching_dims.n != 0 || ops[1]->count != dn->scatter_dims_to_operand_dims.n ||
      (ic != HLO_CLASS_SINT && ic != HLO_CLASS_UINT) || ops[0]->rank != dn->inserted_window_dims.n || cb->lane)
    return false;
  for (int c = 0; c < dn->scatter_dims_to_operand_dims.n; c++)
    if (dn->scatter_dims_to_operand_dims.v[c] < 0 || dn->scatter_dims_to_operand_dims.v[c] >= ops[0]->rank)
      return false;
  return true;
}

/* How many batch positions a chunk of updates holds: as many as the
 * config's tile (laid over the operand) holds elements, at least 1 and at
 * most all of them. */
static int64_t chunk_size(int ro, const int64_t *op_dims, int64_t wvol, int64_t nbatch, const dev_config *cfg) {
  dev_tiling tl;
  dev_tiling_plan(&tl, ro, op_dims, cfg);
  int64_t chunk = wvol > 0 ? tl.volume / wvol : 1;
  if (chunk < 1)
    chunk = 1;
  if (chunk > nbatch)
    chunk = nbatch > 0 ? nbatch : 1;
  return chunk;
}

int64_t dev_scatter_fetches(const hlo_instr *ins, const dev_config *cfg) {
  int n = (ins->noperands - 1) / 2;
  if (n < 1 || ins->noperands != 2 * n + 1)
    return 0;
  const hlo_shape *op0 = &ins->operands[0]->shape, *u0 = &ins->operands[n + 1]->shape;
  if (op0->type == HLO_TUPLE || u0->type == HLO_TUPLE)
    return 0;
  int64_t nbatch = 1, wvol = 1;
  for (int d = 0; d < u0->rank; d++)
    if (in_list(&ins->attrs.scatter.update_window_dims, d))
      wvol *= u0->dims[d];
    else
      nbatch *= u0->dims[d];
  int64_t chunk = chunk_size(op0->rank, op0->dims, wvol, nbatch, cfg);
  int64_t chunks = nbatch > 0 ? (nbatch + chunk - 1) / chunk : 0;
  dev_tiling tl; /* the operand's copy into the result */
  dev_tiling_plan(&tl, op0->rank, op0->dims, cfg);
  return chunks > tl.ntiles ? chunks : tl.ntiles;
}

/* What staging a chunk of updates needs. */
typedef struct update_plan {
  int n;                   /* operands (and updates) */
  hlo_value *const *ops;
  int ns, nw;              /* scatter dims, window dims */
  const int *sdim;         /* scatter dim j -> update dim */
  const int64_t *sdims, *wdims, *ustr;
  int64_t wvol;
  dev_stage *st;           /* one per update */
} update_plan;

/* DMAs the update windows of batch positions b0 .. b0 + nb - 1 into the
 * stages, batch-major, as far as `limit` positions of the buffer go. */
static void stage_updates(const hlo_instr *ins, const update_plan *u, int64_t b0, int64_t nb, int64_t limit) {
  const hlo_ints *uwd = &ins->attrs.scatter.update_window_dims;
  int64_t bpos[HLO_MAX_RANK] = {0}, rest = b0;
  for (int j = u->ns - 1; j >= 0; j--) { /* b0, row-major over the scatter dims */
    bpos[j] = u->sdims[j] ? rest % u->sdims[j] : 0;
    rest = u->sdims[j] ? rest / u->sdims[j] : 0;
  }
  /* When the last window dim is the update's innermost (stride 1), a row
   * of the window is a run of consecutive update elements and moves as one
   * (every offset lies inside the chunk's buffer: b < limit, q < wvol) */
  int last = u->nw - 1;
  int64_t run = u->nw > 0 && u->ustr[uwd->v[last]] == 1 ? u->wdims[last] : 1;
  for (int64_t b = 0; b < nb && b < limit; b++) {
    int64_t w[HLO_MAX_RANK] = {0};
    for (int64_t q = 0; q < u->wvol; q += run) {
      int64_t uo = 0;
      for (int j = 0; j < u->ns; j++)
        uo += bpos[j] * u->ustr[u->sdim[j]];
      for (int j = 0; j < u->nw; j++)
        uo += w[j] * u->ustr[uwd->v[j]];
      for (int k = 0; k < u->n; k++) {
        const hlo_value *upd = u->ops[u->n + 1 + k];
        const char *from = (const char *)upd->data + (size_t)uo * upd->elem_size;
        if (run > 1)
          dev_stage_put_run(&u->st[k], b * u->wvol + q, from, run);
        else
          dev_stage_put(&u->st[k], b * u->wvol + q, from);
      }
      if (run > 1)
        hlo_index_next(last, u->wdims, w); /* w[last] stays 0 */
      else
        hlo_index_next(u->nw, u->wdims, w);
    }
    hlo_index_next(u->ns, u->sdims, bpos);
  }
}

int dev_scatter_run(const hlo_instr *ins, hlo_value *const *ops, const dev_whole_ctx *ctx, hlo_value **out) {
  const hlo_scatter_dnums *dn = &ins->attrs.scatter;
  int n = (ins->noperands - 1) / 2;
  if (n < 1 || n > DEV_SCATTER_MAX_OPERANDS || ins->noperands != 2 * n + 1)
    return DEV_WHOLE_UNSUPPORTED;
  const hlo_value *ind = ops[n], *u0 = ops[n + 1], *op0 = ops[0];
  int ro = op0->rank, ri = ind->rank, ru = u0->rank;
  int64_t ivd = dn->index_vector_dim;
  hlo_etype types[DEV_SCATTER_MAX_OPERANDS];
  for (int k = 0; k < n; k++) {
    types[k] = ops[k]->type;
    if (ops[k]->rank != ro || ops[n + 1 + k]->rank != ru || ops[n + 1 + k]->type != types[k] ||
        hlo_etype_class(types[k]) == HLO_CLASS_COMPLEX || hlo_etype_class(types[k]) == HLO_CLASS_OTHER)
      return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < ro; d++)
      if (ops[k]->dims[d] != op0->dims[d])
        return DEV_WHOLE_UNSUPPORTED;
    for (int d = 0; d < ru; d++)
      if (ops[n + 1 + k]->dims[d] != u0->dims[d])
        return DEV_WHOLE_UNSUPPORTED;
  }
  int64_t nvec = ivd < ri ? ind->dims[ivd] : 1;
  if (ivd < 0 || ivd > ri || nvec != dn->scatter_dims_to_operand_dims.n ||
      dn->input_batching_dims.n != dn->scatter_indices_batching_dims.n)
    return DEV_WHOLE_UNSUPPORTED;
  for (int k = 0; k < nvec; k++)
    if (dn->scatter_dims_to_operand_dims.v[k] < 0 || dn->scatter_dims_to_operand_dims.v[k] >= ro)
      return DEV_WHOLE_UNSUPPORTED;
  for (int i = 0; i < dn->input_batching_dims.n; i++)
    if (dn->input_batching_dims.v[i] < 0 || dn->input_batching_dims.v[i] >= ro ||
        dn->scatter_indices_batching_dims.v[i] < 0 || dn->scatter_indices_batching_dims.v[i] >= ri)
      return DEV_WHOLE_UNSUPPORTED;
  combiner cb;
  char lane_why[160];
  if (combiner_plan(&cb, ins->attrs.calls.to_apply, n, lane_why, sizeof lane_why) != 0)
    return DEV_WHOLE_UNSUPPORTED;
  if (ctx->cfg && (ctx->cfg->flags & DEV_FLAG_VEC_SCATTER) && singleton(ins, ops, &cb))
    return vec_scatter(ins, ops, ctx, &cb, out);

  /* window dims: update dim -> operand dim; scatter dims: update dim -> index dim */
  int wop[HLO_MAX_RANK], sdim[HLO_MAX_RANK], nw = 0, ns = 0;
  int64_t wsize[HLO_MAX_RANK];
  for (int d = 0; d < ro; d++) {
    wsize[d] = 1;
    if (!in_list(&dn->inserted_window_dims, d) && !in_list(&dn->input_batching_dims, d)) {
      if (nw >= dn->update_window_dims.n)
        goto unsupported;
      int64_t ud = dn->update_window_dims.v[nw];
      if (ud < 0 || ud >= ru)
        goto unsupported;
      wop[nw++] = d;
      wsize[d] = u0->dims[ud];
    }
  }
  if (nw != dn->update_window_dims.n)
    goto unsupported;
  int sd_index[HLO_MAX_RANK]; /* scatter dim j -> index dim */
  for (int d = 0, id = 0; d < ru; d++) {
    if (in_list(&dn->update_window_dims, d))
      continue;
    if (id == ivd)
      id++;
    if (id >= ri)
      goto unsupported;
    sdim[ns] = d;
    sd_index[ns++] = id++;
  }
  int64_t sdims[HLO_MAX_RANK], wdims[HLO_MAX_RANK], nbatch = 1, wvol = 1;
  for (int j = 0; j < ns; j++)
    nbatch *= (sdims[j] = u0->dims[sdim[j]]);
  for (int j = 0; j < nw; j++)
    wvol *= (wdims[j] = u0->dims[dn->update_window_dims.v[j]]);
  int64_t chunk = chunk_size(ro, op0->dims, wvol, nbatch, ctx->cfg);
  int64_t nchunks = nbatch > 0 ? (nbatch + chunk - 1) / chunk : 0;
  dev_race race = dev_whole_race(ctx); /* ring 0: the updates, 1 + k: operand k */
  dev_hbm res[DEV_SCATTER_MAX_OPERANDS];
  dev_stage st[DEV_SCATTER_MAX_OPERANDS];
  int nres = 0, nst = 0, rc = 0;
  for (int k = 0; k < n && rc == 0; k++) {
    char name[48];
    snprintf(name, sizeof name, "scatter result %d", k);
    if (dev_hbm_alloc(&res[k], name, types[k], ro, op0->dims) != 0) {
      snprintf(ctx->why, ctx->why_len, "out of memory");
      rc = -1;
      break;
    }
    nres++;
    /* the result starts as the operand, copied tile by tile */
    if (dev_stage_copy_tiled(&res[k], ops[k], ctx->cfg, &race, 1 + (uint64_t)k, ctx->why, ctx->why_len) != 0) {
      rc = -1;
      break;
    }
    snprintf(name, sizeof name, "vmem update chunk %d", k);
    if (dev_stage_open(&st[k], name, types[k], chunk * (wvol > 0 ? wvol : 1)) != 0) {
      snprintf(ctx->why, ctx->why_len, "out of memory");
      rc = -1;
    } else {
      nst++;
    }
  }
  int64_t istr[HLO_MAX_RANK], ustr[HLO_MAX_RANK], ostr[HLO_MAX_RANK];
  hlo_value_strides(ind, istr);
  hlo_value_strides(u0, ustr);
  hlo_value_strides(op0, ostr);
  int64_t bpos[HLO_MAX_RANK] = {0};
  /* one operand combined by a simple reducer: the usual scatter-add.  When
   * a window row is contiguous in the result, it is combined as a row:
   * converted to slots, stepped element by element, converted back (the
   * per-element conversions, in typed loops) */
  bool simple = n == 1 && !cb.set && !cb.keep && cb.red != HLO_OP_INVALID;
  int64_t wrow = nw > 0 ? wdims[nw - 1] : 1;
  dev_slot *rowv = NULL;
  if (rc == 0 && simple && nw > 0 && ostr[wop[nw - 1]] == 1 && wrow > 1 &&
      !(rowv = malloc(2 * (size_t)wrow * sizeof *rowv))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  update_plan up = {.n = n, .ops = ops, .ns = ns, .nw = nw, .sdim = sdim, .sdims = sdims, .wdims = wdims,
                    .wvol = wvol, .ustr = ustr, .st = st};
  for (int64_t b0 = 0; b0 < nbatch && rc == 0; b0 += chunk) {
    int64_t nb = nbatch - b0 < chunk ? nbatch - b0 : chunk;
    /* DMA the chunk's update windows into VMEM, batch-major */
    for (int k = 0; k < n; k++)
      dev_stage_begin(&st[k], nb * wvol);
    stage_updates(ins, &up, b0, nb, nb);
    int64_t from = dev_race_source(&race, 0, b0 / chunk, nchunks) * chunk;
    if (from != b0) { /* dma-race: chunk `from`'s updates landed in this chunk's buffers first */
      int64_t fnb = nbatch - from < chunk ? nbatch - from : chunk;
      stage_updates(ins, &up, from, fnb, nb);
    }
    for (int k = 0; k < n && rc == 0; k++)
      rc = dev_stage_end(&st[k], ctx->why, ctx->why_len);
    /* combine them into the result, in index order */
    for (int64_t b = 0; b < nb && rc == 0; b++) {
      int64_t ipos[HLO_MAX_RANK + 1] = {0}, start[HLO_MAX_RANK] = {0};
      for (int j = 0; j < ns; j++)
        ipos[sd_index[j]] = bpos[j];
      for (int i = 0; i < dn->input_batching_dims.n; i++)
        start[dn->input_batching_dims.v[i]] = ipos[dn->scatter_indices_batching_dims.v[i]];
      for (int c = 0; c < nvec; c++) {
        int64_t at = 0;
        for (int d = 0; d < ri; d++)
          at += (d == ivd ? c : ipos[d]) * istr[d];
        start[dn->scatter_dims_to_operand_dims.v[c]] = dev_whole_index(ind, at);
      }
      bool fits = true;
      for (int d = 0; d < ro; d++)
        fits = fits && start[d] >= 0 && start[d] <= op0->dims[d] - wsize[d];
      hlo_index_next(ns, sdims, bpos);
      if (!fits)
        continue; /* the whole window is skipped */
      /* the window fits, so every element lands inside the result: the
       * stores are plain writes that clear the shadow (dev_hbm_store's
       * in-bounds case), made straight into the buffer */
      int64_t g0 = 0, w[HLO_MAX_RANK] = {0};
      for (int d = 0; d < ro; d++)
        g0 += start[d] * ostr[d];
      /* row by row along the last window dim (row-major order, as
       * before), the offset stepped along the row */
      int64_t row = nw > 0 ? wdims[nw - 1] : 1, step = nw > 0 ? ostr[wop[nw - 1]] : 0;
      for (int64_t q = 0; q < wvol; q += row) {
        int64_t g = g0;
        for (int j = 0; j + 1 < nw; j++)
          g += w[j] * ostr[wop[j]];
        const int64_t u0off = b * wvol + q;
        if (simple && rowv) { /* a row of the result and of the chunk, each contiguous */
          dev_slots_from_host(types[0], res[0].data, g, row, rowv);
          dev_slots_from_host(types[0], st[0].vmem.data, u0off, row, rowv + row);
          dev_elem_reduce_steps(cb.red, types[0], rowv, rowv + row, row);
          dev_slots_to_host(types[0], rowv, row, res[0].data, g);
          memset(res[0].shadow + g, 0, (size_t)row);
        } else if (simple) { /* what combine does for it, without the dispatch */
          for (int64_t l = 0; l < row; l++, g += step) {
            dev_slot v, u;
            dev_slot_from_host(types[0], res[0].data, g, &v);
            dev_slot_from_host(types[0], st[0].vmem.data, u0off + l, &u);
            dev_slot_to_host(types[0], dev_elem_reduce_step(cb.red, types[0], v, u), res[0].data, g);
            res[0].shadow[g] = 0;
          }
        } else {
          for (int64_t l = 0; l < row; l++, g += step) {
            dev_slot vals[DEV_SCATTER_MAX_OPERANDS], us[DEV_SCATTER_MAX_OPERANDS];
            for (int k = 0; k < n; k++) {
              dev_slot_from_host(types[k], res[k].data, g, &vals[k]);
              dev_slot_from_host(types[k], st[k].vmem.data, u0off + l, &us[k]);
            }
            combine(&cb, types, vals, us);
            for (int k = 0; k < n; k++) {
              dev_slot_to_host(types[k], vals[k], res[k].data, g);
              res[k].shadow[g] = 0;
            }
          }
        }
        if (nw > 1)
          hlo_index_next(nw - 1, wdims, w);
      }
    }
  }
  hlo_value *el[DEV_SCATTER_MAX_OPERANDS] = {0};
  for (int k = 0; k < n && rc == 0; k++) {
    if (dev_hbm_check(&res[k], ctx->why, ctx->why_len) != 0)
      rc = -1;
    else if (!(el[k] = dev_hbm_value(&res[k]))) {
      snprintf(ctx->why, ctx->why_len, "out of memory");
      rc = -1;
    }
  }
  for (int k = 0; k < nres; k++)
    dev_hbm_free(&res[k]);
  for (int k = 0; k < nst; k++)
    dev_stage_close(&st[k]);
  free(rowv);
  dev_lane_free(cb.lane);
  if (rc == 0 && n == 1 && ins->shape.type != HLO_TUPLE) {
    *out = el[0];
    return 0;
  }
  if (rc == 0 && !(*out = hlo_value_tuple(n, el))) {
    snprintf(ctx->why, ctx->why_len, "out of memory");
    rc = -1;
  }
  if (rc != 0 || !*out) /* hlo_value_tuple takes the references only on success */
    for (int k = 0; k < n; k++)
      hlo_value_unref(el[k]);
  return rc;
unsupported:
  dev_lane_free(cb.lane);
  return DEV_WHOLE_UNSUPPORTED;
}
