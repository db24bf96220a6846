/* fft_spread.c — an fft's error carried to the outputs computed from it
 * (fft_spread.h). */
#include "fft_spread.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "tol_fft.h"

static bool complex_type(hlo_etype t) { return t == HLO_C64 || t == HLO_C128; }

/* Part p of element i (a real array has only part 0). */
static double part_of(const hlo_value *v, int64_t i, int p) {
  if (v->type == HLO_C64)
    return ((const float *)v->data)[2 * i + p];
  if (v->type == HLO_C128)
    return ((const double *)v->data)[2 * i + p];
  return hlo_value_get_f64(v, i);
}

static void set_part(hlo_value *v, int64_t i, int p, double x) {
  if (v->type == HLO_C64)
    ((float *)v->data)[2 * i + p] = (float)x;
  else if (v->type == HLO_C128)
    ((double *)v->data)[2 * i + p] = x;
  else
    hlo_value_set_f64(v, i, x);
}

/* The capture of the ffts' reference values, which also records what the
 * shifted evaluations will replay (replay.h). */
typedef struct {
  chk_fft_spreads *S;
  hlo_value *val[CHK_FFT_SPREAD_MAX];
  chk_replay replay;
} capture_state;

static void capture_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  capture_state *st = ctx;
  chk_replay_record(&st->replay, ins, *value);
  for (int j = 0; j < st->S->n; j++)
    if (st->S->s[j].ins == ins && !st->val[j] && *value)
      st->val[j] = hlo_value_ref(*value);
}

/* The measurement's hook: shifts part `part` of one fft's value by
 * sign * 2 B_e. */
typedef struct {
  const hlo_instr *ins;
  const double *bound;
  int64_t n;
  int part;
  double sign;
} shift_state;

static void shift_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value) {
  (void)ops;
  (void)nops;
  shift_state *st = ctx;
  if (ins != st->ins || !*value || (*value)->type == HLO_TUPLE || (*value)->count != st->n)
    return;
  hlo_value *c = hlo_value_clone(*value);
  if (!c)
    return;
  for (int64_t e = 0; e < st->n; e++) {
    double x = part_of(c, e, st->part);
    if (isfinite(x) && isfinite(st->bound[e]))
      set_part(c, e, st->part, x + st->sign * 2.0 * st->bound[e]);
  }
  hlo_value_unref(*value);
  *value = c;
}

/* The largest change of element i between y and the shifted yp, ym, over
 * its parts; INFINITY where a finite element turned non-finite. */
static double change_at(const hlo_value *y, const hlo_value *yp, const hlo_value *ym, int64_t i) {
  double d = 0;
  for (int p = 0; p < (complex_type(y->type) ? 2 : 1); p++) {
    double v = part_of(y, i, p);
    double dp = fabs(part_of(yp, i, p) - v), dm = fabs(part_of(ym, i, p) - v);
    double m = dp > dm ? dp : dm;
    if (!isfinite(m))
      m = isfinite(v) ? INFINITY : 0;
    if (m > d)
      d = m;
  }
  return d;
}

/* One fft's measurement (its reference value v): the two or four shifted
 * evaluations, replayed from R where it can. */
static int measure_one(chk_fft_spread *s, const hlo_value *v, const hlo_value *reference, int nleaves,
                       chk_replay *R, chk_accums_eval_fn *eval, void *eval_ctx, hlo_error *err) {
  double *bound = calloc((size_t)(v->count ? v->count : 1), sizeof *bound);
  if (!bound)
    return hlo_error_set(err, 0, 0, "out of memory while measuring the fusion's ffts");
  if (chk_tol_fft_map(s->ins, v, CHK_FFT_DEPTH_UNKNOWN, CHK_FFT_DEPTH_UNKNOWN, bound, err) != 0) {
    free(bound);
    return -1;
  }
  s->wide = chk_tol_fft_coef(s->ins, CHK_FFT_DEPTH_UNKNOWN, CHK_FFT_DEPTH_UNKNOWN);
  int rc = 0;
  for (int p = 0; p < (complex_type(v->type) ? 2 : 1) && rc == 0; p++) {
    hlo_value *moved[2] = {NULL, NULL};
    for (int k = 0; k < 2 && rc == 0; k++) {
      shift_state st = {.ins = s->ins, .bound = bound, .n = v->count, .part = p, .sign = k == 0 ? 1.0 : -1.0};
      rc = chk_replay_plan(R, s->ins, shift_hook, &st) ? eval(eval_ctx, chk_replay_hook, R, &moved[k], err)
                                                        : eval(eval_ctx, shift_hook, &st, &moved[k], err);
    }
    for (int leaf = 0; leaf < nleaves && rc == 0; leaf++) {
      const hlo_value *y = hlo_value_leaf(reference, leaf), *yp = hlo_value_leaf(moved[0], leaf), *ym = hlo_value_leaf(moved[1], leaf);
      /* a complex output moves too: add(fft(x), y) is as much the fft's as abs(fft(x)) */
      if (!y || !yp || !ym || !(hlo_etype_is_float(y->type) || complex_type(y->type)) || yp->type != y->type ||
          ym->type != y->type ||
          yp->count != y->count || ym->count != y->count)
        continue;
      for (int64_t i = 0; i < y->count; i++) {
        double d = change_at(y, yp, ym, i);
        if (!(d > 0))
          continue;
        if (!s->dy[leaf] && !(s->dy[leaf] = calloc((size_t)y->count, sizeof **s->dy))) {
          rc = hlo_error_set(err, 0, 0, "out of memory while measuring the fusion's ffts");
          break;
        }
        s->dy[leaf][i] += d;
      }
    }
    hlo_value_unref(moved[0]);
    hlo_value_unref(moved[1]);
  }
  free(bound);
  return rc;
}

int chk_fft_spreads_measure(chk_fft_spreads *S, const hlo_computation *kernel, const hlo_value *reference,
                            chk_accums_eval_fn *eval, void *eval_ctx, hlo_error *err) {
  memset(S, 0, sizeof *S);
  for (int i = 0; i < kernel->ninstrs; i++) {
    const hlo_instr *ins = kernel->instrs[i];
    if (ins->op != HLO_OP_FFT || ins == kernel->root || !(chk_tol_fft_coef(ins, 0, 0) < INFINITY))
      continue;
    if (S->n == CHK_FFT_SPREAD_MAX) {
      S->dropped++;
      continue;
    }
    S->s[S->n++].ins = ins;
  }
  if (S->n == 0)
    return 0;
  capture_state cs = {.S = S};
  const hlo_instr *targets[CHK_FFT_SPREAD_MAX];
  for (int j = 0; j < S->n; j++)
    targets[j] = S->s[j].ins;
  chk_replay_init(&cs.replay, kernel, targets, S->n);
  hlo_value *out = NULL;
  int rc = eval(eval_ctx, capture_hook, &cs, &out, err);
  hlo_value_unref(out);
  int nleaves = hlo_value_leaf_count(reference);
  if (nleaves > CHK_ACCUM_MAX_LEAVES)
    nleaves = CHK_ACCUM_MAX_LEAVES;
  for (int j = 0; j < S->n && rc == 0; j++) {
    if (!cs.val[j] || cs.val[j]->type == HLO_TUPLE)
      continue; /* not evaluated (a branch not taken): nothing moves */
    rc = measure_one(&S->s[j], cs.val[j], reference, nleaves, &cs.replay, eval, eval_ctx, err);
  }
  for (int j = 0; j < S->n; j++)
    hlo_value_unref(cs.val[j]);
  chk_replay_free(&cs.replay);
  return rc;
}

int chk_fft_spread_add(const chk_fft_spreads *S, int j, int leaf, int64_t n, double g, double *map) {
  if (j < 0 || j >= S->n || leaf < 0 || leaf >= CHK_ACCUM_MAX_LEAVES || !S->s[j].dy[leaf])
    return 0;
  const chk_fft_spread *s = &S->s[j];
  double r = s->wide > 0 ? g / s->wide : INFINITY;
  for (int64_t i = 0; i < n; i++)
    if (s->dy[leaf][i] > 0) /* 0 * inf would be NaN */
      map[i] += 2.0 * s->dy[leaf][i] * r;
  return 1;
}

void chk_fft_spreads_free(chk_fft_spreads *S) {
  for (int j = 0; j < S->n; j++)
    for (int l = 0; l < CHK_ACCUM_MAX_LEAVES; l++)
      free(S->s[j].dy[l]);
  memset(S, 0, sizeof *S);
}
