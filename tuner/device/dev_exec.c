/* dev_exec.c — runs a schedule grid step by grid step (see dev_exec.h): the
 * grid driver, the run's set-up and teardown, and the checks of the outputs
 * after the grid.
 *
 * Every step of the device is a named function, because each is where a
 * modelled miscompilation (dev_defect.h) would live.  The steps live in one
 * file per concept and share the run's state (dev_exec_internal.h):
 *   dev_dma.c          dma_issue / dma_wait: the ring of VMEM buffers and
 *                      the jitter-driven completion model (dma-race)
 *   dev_acc.c          acc_enter: the revisit tracker, first visit or
 *                      revisit of an output window (revisit-no-reinit);
 *                      acc_init_window: accumulator initialisation, per pack
 *                      slot (packed-reduce-init0); acc_finalize: pack and
 *                      split-partial combination
 *   dev_fold_chunk.c   chunk_valid_len: the mask of a ragged reduction
 *                      chunk (ragged-chunk-pad)
 *   dev_fold_reduce.c, dev_fold_dot.c
 *                      fold_reduce_range / fold_dot_range: accumulation of
 *                      one chunk (int8-dot-f32-acc)
 *   dev_store.c        store_tile: the ragged store mask (ragged-store-mask)
 *   dev_output.c       the output buffers, and the root's value from them
 *   dev_trigger.c      which defects the run's config triggers
 * Compare, convert and dynamic-slice index lowering live in
 * dev_scalar.c (compare_lowering, convert_lowering) and, for the ops the
 * device materialises, in the reference it calls.
 *
 * Defects (dev_defect.h).  A run evaluates once, from the config and the
 * fusion, which of the compiler profile's defects its config triggers
 * (dev_trigger.c, one predicate per defect); only those act, each in a
 * clearly named function at its hook point.  A defect whose config
 * condition is not met changes nothing, so every other config stays
 * bit-identical to the clean device.  Symptoms are silent wrong results:
 * no defect makes the run fail (see each function for how a value that a
 * real chip would leave undefined is modelled as a finite stale value).
 */
#include "dev_exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_exec_internal.h"
#include "dev_probe.h"
#include "hlo/hlo_mem.h"

void dev_exec_hooks_none(dev_exec_hooks *h) {
  memset(h, 0, sizeof *h);
  h->skip_tile = -1;
}

/* ---- the grid ---------------------------------------------------------------------- */

int dev_x_fail(exec *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->why, x->why_len, fmt, ap);
  va_end(ap);
  return -1;
}

int64_t dev_x_tile_id(const exec *x) {
  int64_t id = 0;
  for (int d = 0; d < x->f->rank; d++)
    id = id * x->s->tiles[d] + x->t[d];
  return id;
}

static void teardown(exec *x) {
  for (int p = 0; x->in && p < x->nin; p++)
    dev_hbm_free(&x->in[p]);
  free(x->in);
  for (int j = 0; x->out && j < x->nout; j++)
    dev_hbm_free(&x->out[j]);
  free(x->out);
  free(x->out_node);
  free(x->out_sub);
  free(x->out_tiled);
  for (int p = 0; x->win && p < x->nin; p++) {
    win_state *ws = &x->win[p];
    for (int b = 0; ws->data && b < x->s->cfg.buf; b++) {
      free(ws->data[b]);
      if (ws->shadow)
        free(ws->shadow[b]);
    }
    free(ws->data);
    free(ws->shadow);
    free(ws->clean);
    free(ws->plan);
  }
  free(x->win);
  dev_elem_free(x->el);
  dev_vred_free(x->vred);
  free(x->follow);
  free(x->acc);
  free(x->acc_valid);
  free(x->acc_poison);
  free(x->part);
  free(x->part_valid);
  free(x->part_poison);
  free(x->fin);
  free(x->fin_poison);
  free(x->visited);
  free(x->spill);
  free(x->spill_valid);
  free(x->spill_poison);
}

/* Sets the tile indices and the chunk of grid step `step` (cfg.order,
 * outermost loop first). */
void dev_x_decode_step(exec *x, int64_t step) {
  const dev_schedule *s = x->s;
  const dev_config *cfg = &s->cfg;
  int64_t rem = step;
  x->chunk = 0;
  for (int j = cfg->norder - 1; j >= 0; j--) {
    int o = cfg->order[j];
    int64_t bound = o == DEV_ORDER_K ? s->nk : s->tiles[o];
    int64_t v = bound ? rem % bound : 0;
    rem = bound ? rem / bound : 0;
    if (o == DEV_ORDER_K)
      x->chunk = v;
    else
      x->t[o] = v;
  }
}

/* ---- the run ---------------------------------------------------------------------- */

static void index_text(const dev_hbm *h, int64_t flat, char *buf, size_t n) {
  int64_t idx[HLO_MAX_RANK];
  for (int d = h->rank - 1; d >= 0; d--) {
    idx[d] = h->dims[d] ? flat % h->dims[d] : 0;
    flat = h->dims[d] ? flat / h->dims[d] : 0;
  }
  size_t at = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < h->rank && at < n; d++)
    at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (at < n)
    snprintf(buf + at, n - at, "]");
}

/* Kernel parameter p in HBM: the argument's own data, read in place.  The
 * device never stores to a parameter and every one of its elements is
 * defined, so a copy with redzones and an all-zero shadow would hold
 * exactly the argument's bytes and say nothing a reader needs (a reader
 * takes a parameter element as defined, dev_exec_internal.h); making it
 * cost a pass over the argument and its shadow per candidate, as much
 * again as the DMA the schedule really models.  The memory account
 * (hlo_mem.h) is charged what the copy took, so a run under --max-memory
 * is refused or not exactly as before.  There is nothing to free: raw and
 * shadow stay NULL, which dev_hbm_free accepts.  0, or -1 when the
 * account refuses. */
static int borrow_param(dev_hbm *b, int p, const hlo_value *v) {
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "param %d", p);
  b->type = v->type;
  b->rank = v->rank;
  b->count = v->count;
  memcpy(b->dims, v->dims, sizeof(int64_t) * (size_t)v->rank);
  b->esz = v->elem_size;
  size_t held = (size_t)b->count * b->esz + 2 * DEV_REDZONE + (size_t)(b->count ? b->count : 1);
  if (!hlo_mem_take(held))
    return -1;
  b->held = held;
  b->data = v->data;
  return 0;
}

static int grid(exec *x, uint64_t *steps_done) {
  const dev_schedule *s = x->s;
  int64_t expected = s->steps;
  int64_t budget = 64 * (expected > 0 ? expected : 1);
  int64_t total = expected + (x->hooks.extra_steps > 0 ? x->hooks.extra_steps : 0);
  for (int64_t step = 0; step < total; step++) {
    if (step >= budget) {
      *steps_done = (uint64_t)step;
      return dev_x_fail(x, "hang: the schedule did not complete within %lld grid steps (64x the expected %lld)",
                  (long long)budget, (long long)expected);
    }
    if (step >= expected)
      continue; /* the modelled stall: nothing completes */
    dev_x_decode_step(x, step);
    dev_x_stage_windows(x);
    if (x->hero_native) {
      if (dev_x_acc_enter(x) != 0 || dev_x_compute_chunk(x) != 0)
        return -1;
    }
    if (x->chunk == s->nk - 1 && dev_x_finish_tile(x) != 0)
      return -1;
    *steps_done = (uint64_t)step + 1;
  }
  return 0;
}

void dev_exec_run(const dev_schedule *s, const dev_compiler *cc, hlo_value *const *args, int nargs,
                  uint64_t jitter_seed, const dev_exec_hooks *hooks, dev_run *out) {
  memset(out, 0, sizeof *out);
  exec x;
  memset(&x, 0, sizeof x);
  x.s = s;
  x.f = s->f;
  x.cc = cc;
  if (hooks)
    x.hooks = *hooks;
  else
    dev_exec_hooks_none(&x.hooks);
  x.why = out->message;
  x.why_len = sizeof out->message;
  x.rng = jitter_seed * 0x9E3779B97F4A7C15ull + 1;
  x.jitter_seed = jitter_seed;
  const hlo_computation *c = x.f->comp;
  x.nin = c->nparams;
  x.ntiles = 1;
  for (int d = 0; d < x.f->rank; d++)
    x.ntiles *= s->tiles[d];
  int rc = 0;
  if (nargs != c->nparams)
    rc = dev_x_fail(&x, "kernel %s takes %d arguments, got %d", x.f->name, c->nparams, nargs);
  x.in = calloc((size_t)(x.nin ? x.nin : 1), sizeof *x.in);
  if (rc == 0 && !x.in)
    rc = dev_x_fail(&x, "out of memory");
  for (int p = 0; rc == 0 && p < x.nin; p++) {
    const hlo_value *v = args[p];
    if (!c->params[p] || v->type == HLO_TUPLE) {
      continue; /* tuple parameters are read whole by materialised ops */
    }
    if (!hlo_value_matches(v, &c->params[p]->shape)) {
      rc = dev_x_fail(&x, "argument %d does not match parameter %s", p, c->params[p]->name);
      break;
    }
    if (borrow_param(&x.in[p], p, v) != 0)
      rc = dev_x_fail(&x, "out of memory");
  }
  if (rc == 0)
    rc = dev_x_setup_outputs(&x);
  if (rc == 0 && !(x.follow = dev_follow_map(x.f)))
    rc = dev_x_fail(&x, "out of memory");
  if (rc == 0)
    rc = dev_x_setup_windows(&x);
  if (rc == 0)
    rc = dev_x_setup_hero(&x);
  if (rc == 0 && dev_compiler_has(cc, DEV_DEFECT_DMA_RACE) && s->cfg.buf >= 2)
    rc = dev_x_plan_fetches(&x);
  if (rc == 0)
    x.active = cc ? dev_x_triggered_defects(&x) : 0;
  if (rc == 0 && !(x.el = dev_elem_new(x.f, s->cfg.prec)))
    rc = dev_x_fail(&x, "out of memory");
  if (rc == 0)
    dev_elem_set_probe(x.el, x.hooks.probe); /* dev_probe.h; NULL on the plain path */
  if (rc == 0 && dev_elem_set_f32_params(x.el, dev_x_window_read, dev_x_window_f32_box) != 0)
    rc = dev_x_fail(&x, "out of memory");
  if (rc == 0) {
    dev_elem_set_config(x.el, &s->cfg);
    dev_elem_set_jitter(x.el, x.jitter_seed);
  }
  if (rc == 0 && dev_elem_set_defects(x.el, x.active) != 0)
    rc = dev_x_fail(&x, "out of memory");
  if (rc == 0)
    rc = dev_elem_materialize(x.el, args, x.why, x.why_len);
  if (rc == 0)
    rc = grid(&x, &out->steps);
  /* leaves that are not tiled: whole, after the grid */
  for (int j = 0; rc == 0 && j < x.nout; j++) {
    if (x.out_tiled[j])
      continue;
    const hlo_shape *sh = dev_x_out_shape(&x, j);
    dev_box want = {.rank = sh->rank};
    for (int d = 0; d < sh->rank; d++)
      want.n[d] = sh->dims[d];
    rc = dev_x_eval_store(&x, j, &want, false);
  }
  for (int j = 0; rc == 0 && j < x.nout; j++)
    rc = dev_hbm_check(&x.out[j], x.why, x.why_len);
  for (int j = 0; rc == 0 && j < x.nout; j++) {
    int64_t bad = dev_hbm_first_poison(&x.out[j]);
    if (bad >= 0) {
      char it[128];
      index_text(&x.out[j], bad, it, sizeof it);
      rc = dev_x_fail(&x, "uninitialized read: output %d element %lld (index %s) holds poison", j, (long long)bad, it);
    }
  }
  if (rc == 0) {
    hlo_value **leaves = calloc((size_t)(x.nout ? x.nout : 1), sizeof *leaves);
    if (!leaves)
      rc = dev_x_fail(&x, "out of memory");
    for (int j = 0; rc == 0 && j < x.nout; j++)
      if (!(leaves[j] = dev_hbm_value(&x.out[j])))
        rc = dev_x_fail(&x, "out of memory");
    int next = 0;
    if (rc == 0 && !(out->out = dev_x_assemble(&c->root->shape, leaves, &next)))
      rc = dev_x_fail(&x, "out of memory");
    if (rc != 0 && leaves)
      for (int j = next; j < x.nout; j++)
        hlo_value_unref(leaves[j]);
    free(leaves);
  }
  out->status = rc == 0 ? DEV_OK : DEV_RUNTIME_ERROR;
  teardown(&x);
}
