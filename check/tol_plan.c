/* tol_plan.c — the per-leaf tolerance of one comparison (tol_plan.h). */
#include "tol_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tol_fft.h"

/* Does the --ops list name op? */
static bool ops_has(const char *list, const char *op) {
  size_t n = strlen(op);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, op, n) == 0)
      return true;
    if (!e)
      break;
    p = e + 1;
  }
  return false;
}

void chk_tol_plan_coefs(const chk_tol_plan *p, bool base, const chk_tol_side *a, const chk_tol_side *b, double *g) {
  chk_tol_criterion crit = p->criterion;
  for (int j = 0; j < p->acc->n; j++) {
    const chk_accum *ac = &p->acc->a[j];
    double u = chk_unit_roundoff(ac->acc_type);
    bool hero = ac->ins == p->hero;
    int pa = hero ? a->passes : 0, pb = hero ? b->passes : 0;
    int64_t da = hero ? a->depth : 0, db = hero ? b->depth : 0;
    g[j] = chk_tol_coef(crit, u, ac->k, da, db, pa, pb);
    double c = !base && crit == CHK_TOL_NOISE_FLOOR ? chk_tol_noise_scale(ac->noise) : 1.0;
    if (c < 1.0) {
      double order = chk_tol_coef(crit, u, ac->k, da, db, 0, 0);
      double floor = c * chk_tol_coef(crit, u, ac->k, 0, 0, 0, 0);
      if (floor < order)
        g[j] += floor - order;
    }
  }
}

/* Leaf `leaf` of v, leaves numbered depth first as hlo_shape_leaf does;
 * *k counts the leaves passed. */
static const hlo_value *value_leaf(const hlo_value *v, int leaf, int *k) {
  if (v->type != HLO_TUPLE)
    return (*k)++ == leaf ? v : NULL;
  for (int j = 0; j < v->ntuple; j++) {
    const hlo_value *r = value_leaf(v->elems[j], leaf, k);
    if (r || *k > leaf)
      return r;
  }
  return NULL;
}

/* An output leaf that an fft the device lowers itself produces gets the
 * transform's bound (check/tol_fft.h), on top of any accumulation's.
 * -1 when memory ran out. */
static int fft_allowance(const chk_tol_plan *p, int leaf, const hlo_instr *producer, const chk_tol_side *a,
                         const chk_tol_side *b, chk_leaf_check *lc) {
  if (producer->op != HLO_OP_FFT || !p->fft_lowered(p->ctx, producer) || !p->reference)
    return 0;
  int k = 0;
  const hlo_value *ref = value_leaf(p->reference, leaf, &k);
  if (!ref || ref->type == HLO_TUPLE)
    return 0;
  double *map = (double *)lc->atol_map;
  if (!map && !(map = calloc((size_t)(ref->count ? ref->count : 1), sizeof *map)))
    return -1;
  lc->atol_map = map;
  hlo_error err;
  if (chk_tol_fft_map(producer, ref, p->fft_depth(p->ctx, producer, a->config),
                      p->fft_depth(p->ctx, producer, b->config), map, &err) != 0)
    for (int64_t e = 0; e < ref->count; e++) /* no bound: the comparison admits anything */
      map[e] = INFINITY;
  return 0;
}

/* An output leaf computed from an fft through more ops (abs(fft(x)), a
 * product, a sum of magnitudes) gets what the fft's bound does to it, as
 * measured (check/fft_spread.h).  Sets *spread when some fft moves the
 * leaf; -1 when memory ran out. */
static int fft_spread_allowance(const chk_tol_plan *p, int leaf, const hlo_instr *producer, const chk_tol_side *a,
                                const chk_tol_side *b, int64_t n, chk_leaf_check *lc, bool *spread) {
  *spread = false;
  for (int j = 0; j < p->ffts->n; j++) {
    const hlo_instr *ins = p->ffts->s[j].ins;
    if (ins == producer || !p->ffts->s[j].dy[leaf])
      continue; /* the fft's own output: fft_allowance */
    double *map = (double *)lc->atol_map;
    if (!map && !(map = calloc((size_t)(n ? n : 1), sizeof *map)))
      return -1;
    lc->atol_map = map;
    double g = chk_tol_fft_coef(ins, p->fft_depth(p->ctx, ins, a->config), p->fft_depth(p->ctx, ins, b->config));
    if (chk_fft_spread_add(p->ffts, j, leaf, n, g, map))
      *spread = true;
  }
  return 0;
}

int chk_tol_plan_checks(const chk_tol_plan *p, const chk_tol_side *a, const chk_tol_side *b, chk_leaf_check *out,
                        bool *vacuous) {
  const hlo_computation *c = p->kernel;
  if (vacuous)
    *vacuous = false;
  double g[CHK_ACCUM_MAX], gbase[CHK_ACCUM_MAX];
  chk_tol_plan_coefs(p, false, a, b, g);
  chk_tol_plan_coefs(p, true, a, b, gbase);
  for (int i = 0; i < p->nleaves; i++)
    out[i].atol_map = NULL;
  for (int i = 0; i < p->nleaves; i++) {
    const hlo_shape *s = hlo_shape_leaf(p->out_shape, i);
    chk_leaf_check *lc = &out[i];
    int kl = p->kernel_leaf[i];
    lc->checked = true;
    lc->atol_map = NULL;
    if (kl < 0) {
      /* The launch passes an argument or a constant through: both sides
       * hold the same bits unless the launch itself is broken. */
      lc->rule = CHK_RULE_BITWISE;
      lc->tol.atol = lc->tol.rtol = 0;
      continue;
    }
    lc->rule = chk_leaf_rule(c, kl);
    if (p->ops) {
      const hlo_instr *pr = chk_leaf_producer(c, kl);
      lc->checked = ops_has(p->ops, hlo_opcode_name(pr->op)) || (p->hero && ops_has(p->ops, hlo_opcode_name(p->hero->op)));
    }
    lc->tol.atol = lc->tol.rtol = 0;
    if (lc->rule == CHK_RULE_BITWISE)
      continue;
    if (p->tol_override) {
      lc->tol = p->tol;
      continue;
    }
    if (fft_allowance(p, i, chk_leaf_producer(c, kl), a, b, lc) != 0)
      return -1;
    bool spread;
    if (fft_spread_allowance(p, i, chk_leaf_producer(c, kl), a, b, hlo_shape_elements(s), lc, &spread) != 0)
      return -1;
    /* the ops after the fft round what they receive once more on each
     * side, as after an accumulation */
    if (spread)
      lc->tol.rtol = 2.0 * chk_leaf_round_rel(c, kl);
    /* Outputs no accumulation feeds are computed bit-identically by every
     * config; the others get the per-element allowance of check/accum.h and
     * the last rounding of the output on either side (2 r,
     * chk_leaf_round_rel: 2 u_out, wider after one of the device's
     * approximations). */
    bool fed = false;
    for (int j = 0; j < p->acc->n; j++)
      if (chk_leaf_depends_on(c, kl, p->acc->a[j].ins)) {
        fed = true;
        /* a bound of at least sum|t_i| admits any value of the sum */
        if (vacuous && lc->checked && !(gbase[j] < 1.0))
          *vacuous = true;
      }
    if (!fed)
      continue;
    lc->tol.rtol = 2.0 * chk_leaf_round_rel(c, kl);
    double *map = NULL;
    if (chk_accums_leaf_map(p->acc, i, hlo_shape_elements(s), g, &map) != 0)
      return -1;
    if (lc->atol_map) { /* the fft's bound, made above: the two add */
      double *fm = (double *)lc->atol_map;
      for (int64_t e = 0; e < hlo_shape_elements(s); e++)
        map[e] += fm[e];
      free(fm);
    }
    lc->atol_map = map;
  }
  return 0;
}

void chk_tol_plan_free_maps(const chk_tol_plan *p, chk_leaf_check *checks) {
  for (int i = 0; i < p->nleaves; i++) {
    free((void *)checks[i].atol_map);
    checks[i].atol_map = NULL;
  }
}

chk_tol chk_tol_plan_effective(const chk_tol_plan *p, int leaf, const chk_leaf_check *lc) {
  chk_tol t = lc->tol;
  if (lc->atol_map) {
    int64_t n = hlo_shape_elements(hlo_shape_leaf(p->out_shape, leaf));
    for (int64_t e = 0; e < n; e++)
      if (lc->atol_map[e] > t.atol)
        t.atol = lc->atol_map[e];
  }
  return t;
}
