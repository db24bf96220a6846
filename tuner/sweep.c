/* sweep.c — the driver behind `tune --check`. */
#include "sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cascade.h"
#include "dev_accum.h"
#include "dev_fusion.h"
#include "eval.h"
#include "hlo_print.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* Everything the candidates share, read-only once the sweep starts. */
typedef struct {
  const tn_sweep_opts *o;
  const hlo_module *m;
  dev_fusion f;
  hlo_value **args;
  int nargs;
  hlo_value *reference;
  hlo_value *dflt_out;           /* NULL when the default did not run */
  int nleaves;                   /* leaves of the compared output: the entry's root */
  int kernel_leaf[256];          /* per output leaf: the kernel leaf it passes
                                    on, or -1 when the launch makes it */
  double term_max;
  double init_abs;               /* |init| of a reduce hero, 0 otherwise */
  bool structured;               /* the backend is the simulated device, whose
                                    accumulation order dev_accum_depth knows */
  /* How an error of 1 in the hero's output moves each output element:
   * sens[leaf][i], measured on the reference by perturbing the hero (see
   * measure_sensitivity); NULL for leaves the hero does not feed. */
  double *sens[256];
  int dflt_passes, ref_passes;   /* bf16 passes of f32 dots (0: not one) */
  int64_t dflt_depth;            /* the default's accumulation depth (config_depth) */
  int replicas;                  /* replicas the reference simulates */
  bool default_vs_ref_within;
  volatile int stop;
} shared;

static int dot_passes(const dev_fusion *f, const dev_config *c) {
  if (f->kind != DEV_HERO_DOT || !f->hero || f->hero->noperands < 2 ||
      f->hero->operands[0]->shape.type != HLO_F32)
    return 0;
  int p = 0; /* the instruction's own operand_precision sets a floor */
  for (int i = 0; i < f->hero->attrs.nprecision; i++)
    if ((int)f->hero->attrs.precision[i] > p)
      p = (int)f->hero->attrs.precision[i];
  if ((int)c->prec > p)
    p = (int)c->prec;
  return p == 0 ? 1 : p == 1 ? 3 : 6;
}

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

/* The accumulation depth of config c for tolerance.h: dev_accum_depth on
 * the simulated device, 0 (unknown: the every-order bound) for another
 * backend, whose lowering is its own. */
static int64_t config_depth(const shared *sh, const dev_config *c) {
  if (!sh->structured)
    return 0;
  int64_t d = dev_accum_depth(&sh->f, c);
  return d > 0 ? d : 0;
}

/* The reference's depth: its documented sequential order (eval_reduce.c,
 * eval_dot.c) takes the init (or 0) and then the K terms one at a time,
 * d = K for a reduce, K - 1 for a dot; 0 (= K) covers both. */
#define REF_DEPTH 0

/* The comparison rule and tolerance of every output leaf, for a comparison
 * between a side computed with passes_a bf16 dot passes and accumulation
 * depth depth_a and one with passes_b and depth_b (vs_ref: the other side
 * is the reference).  *vacuous (may be NULL) is set when the tolerance of
 * a checked leaf fed by the accumulation admits any output of it. */
static void leaf_checks(shared *sh, int passes_a, int passes_b, int64_t depth_a, int64_t depth_b, bool vs_ref,
                        chk_leaf_check *out, bool *vacuous) {
  const hlo_computation *c = sh->f.comp;
  if (vacuous)
    *vacuous = false;
  for (int i = 0; i < sh->nleaves; i++) {
    const hlo_shape *s = hlo_shape_leaf(&sh->m->entry->root->shape, i);
    chk_leaf_check *lc = &out[i];
    int kl = sh->kernel_leaf[i];
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
    if (sh->o->ops) {
      const hlo_instr *p = chk_leaf_producer(c, kl);
      lc->checked = ops_has(sh->o->ops, hlo_opcode_name(p->op)) ||
                    (sh->f.hero && ops_has(sh->o->ops, hlo_opcode_name(sh->f.hero->op)));
    }
    if (lc->rule == CHK_RULE_BITWISE) {
      lc->tol.atol = lc->tol.rtol = 0;
      continue;
    }
    if (sh->o->tol_override) {
      lc->tol = sh->o->tol;
      continue;
    }
    chk_tol_basis b = {.out_type = s->type, .acc_type = sh->f.acc_type, .k = 0, .term_max = sh->term_max,
                       .init_abs = sh->init_abs, .depth_a = depth_a, .depth_b = depth_b};
    /* Only a floating-point accumulation depends on its order: an integer
     * dot or sum is exact whatever the chunking, so its outputs (even after
     * a dequantising convert) must match exactly. */
    if (chk_leaf_depends_on(c, kl, sh->f.hero) && hlo_etype_is_float(sh->f.acc_type))
      b.k = sh->f.k_total;
    /* The roundoff is the accumulation's own type (the hero's result
     * type): both the device and the reference apply a reducer in its type,
     * so a bf16 add rounds to bf16 at every step and a long bf16 sum gets a
     * wide bound, while an f32 sum feeding a bf16 output gets the f32 one. */
    (void)vs_ref;
    b.passes_a = passes_a;
    b.passes_b = passes_b;
    lc->tol = chk_tolerance(&b);
    if (vacuous && lc->checked && chk_tolerance_vacuous(&b, lc->tol))
      *vacuous = true;
    /* The bound holds at the hero's output; the ops after it (a division by
     * the sum in softmax, a subtraction in layernorm) scale it per element
     * by the measured sensitivity: both compared sides lie within 2 bounds
     * of the reference's accumulation, so y can move by up to 2 * sens *
     * 2 * bound between them (see measure_sensitivity). */
    if (b.k > 0 && sh->sens[i]) {
      /* sens is measured on the compared output itself, so it is indexed
       * like this leaf even when the launch rearranges the kernel's. */
      int64_t n = hlo_shape_elements(s);
      double *map = malloc(sizeof *map * (size_t)(n ? n : 1));
      if (map) {
        /* an element the hero does not move gets 0, also under an
         * infinite atol (0 * inf would be NaN and fail every compare) */
        for (int64_t e = 0; e < n; e++)
          map[e] = sh->sens[i][e] > 0 ? 4.0 * sh->sens[i][e] * lc->tol.atol : 0;
        lc->atol_map = map;
        lc->tol.atol = 0;
      }
    }
  }
}

static void free_maps(shared *sh, chk_leaf_check *checks) {
  for (int i = 0; i < sh->nleaves; i++) {
    free((void *)checks[i].atol_map);
    checks[i].atol_map = NULL;
  }
}

/* The tolerance a leaf's check allows, for reports: with a map, its
 * largest entry stands as the atol. */
static chk_tol effective_tol(const shared *sh, int leaf, const chk_leaf_check *lc) {
  chk_tol t = lc->tol;
  if (lc->atol_map) {
    int64_t n = hlo_shape_elements(hlo_shape_leaf(&sh->m->entry->root->shape, leaf));
    for (int64_t e = 0; e < n; e++)
      if (lc->atol_map[e] > t.atol)
        t.atol = lc->atol_map[e];
  }
  return t;
}

/* Which kernel leaf output leaf `leaf` of ins (an instruction of the
 * launch around the kernel) passes on, through tuples, get-tuple-elements,
 * copies and bitcasts, or -1 when the launch makes it (an argument or a
 * constant passed through). */
static int launch_leaf(const dev_fusion *f, const hlo_instr *ins, int leaf, int depth) {
  if (depth > 64)
    return -1;
  if (ins == f->launch)
    return leaf;
  switch (ins->op) {
  case HLO_OP_TUPLE:
    for (int k = 0; k < ins->noperands; k++) {
      int n = hlo_shape_leaf_count(&ins->operands[k]->shape);
      if (leaf < n)
        return launch_leaf(f, ins->operands[k], leaf, depth + 1);
      leaf -= n;
    }
    return -1;
  case HLO_OP_GET_TUPLE_ELEMENT: {
    const hlo_shape *t = &ins->operands[0]->shape;
    if (t->type != HLO_TUPLE || ins->attrs.index < 0 || ins->attrs.index >= t->ntuple)
      return -1;
    int before = 0;
    for (int64_t k = 0; k < ins->attrs.index; k++)
      before += hlo_shape_leaf_count(&t->elems[k]);
    return launch_leaf(f, ins->operands[0], before + leaf, depth + 1);
  }
  case HLO_OP_COPY: case HLO_OP_BITCAST:
    return launch_leaf(f, ins->operands[0], leaf, depth + 1);
  default:
    return -1;
  }
}

/* The compared output is the entry root's value on both sides (the device
 * runs the launch around its kernel); each of its leaves gets the rule of
 * the kernel leaf it carries. */
static void map_output_leaves(shared *sh) {
  const hlo_instr *root = sh->m->entry->root;
  for (int i = 0; i < sh->nleaves; i++)
    sh->kernel_leaf[i] = sh->f.launch ? launch_leaf(&sh->f, root, i, 0) : i;
}

/* Did the tool fail, rather than the device?  Every allocation failure of
 * the simulator (and, by dev_backend.h's contract, of another backend)
 * reports "out of memory"; the memory is the host's, so the candidate's
 * config proves nothing either way.  Nor does a run the simulator refuses
 * because it lacks a feature ("..., which the device does not store"):
 * that is a limit of the tool, not a miscompilation (issue 11 bug 6). */
static bool host_failure(const char *message) {
  return strncmp(message, "out of memory", 13) == 0 || strstr(message, "which the device does not") != NULL;
}

/* Runs one config: compile, run with jitter seed, cost. */
static void run_config(shared *sh, const dev_config *cfg, uint64_t jitter, tn_cand_result *r, hlo_value **out) {
  const tn_sweep_opts *o = sh->o;
  dev_kernel *k = NULL;
  *out = NULL;
  dev_status st = o->backend->compile(&sh->f, cfg, o->machine, o->compiler, &k, r->message, sizeof r->message);
  r->status = st;
  if (st != DEV_OK) {
    r->verdict = host_failure(r->message) ? CHK_VERDICT_TOOL_ERROR : CHK_VERDICT_COMPILE_ERROR;
    return;
  }
  dev_run run;
  memset(&run, 0, sizeof run);
  o->backend->run(k, sh->args, sh->nargs, jitter, &run);
  r->sim_time = o->backend->cost(k);
  o->backend->release(k);
  r->status = run.status;
  if (run.status != DEV_OK) {
    snprintf(r->message, sizeof r->message, "%s", run.message);
    r->verdict = run.status == DEV_TIMEOUT   ? CHK_VERDICT_TIMEOUT
                 : host_failure(run.message) ? CHK_VERDICT_TOOL_ERROR
                                             : CHK_VERDICT_RUNTIME_ERROR;
    hlo_value_unref(run.out);
    return;
  }
  *out = run.out;
}

static void judge(shared *sh, tn_cand_result *r) {
  double t0 = now_s();
  hlo_value *out = NULL;
  uint64_t jitter = mix(sh->o->seed, r->fingerprint);
  run_config(sh, &r->cfg, jitter, r, &out);
  if (!out) {
    r->wall_time = now_s() - t0;
    return;
  }
  chk_leaf_check checks[256];
  hlo_error err;
  bool identical, within;
  /* Without a default (it failed), candidates are judged against the
   * reference directly. */
  const hlo_value *expected = sh->dflt_out ? sh->dflt_out : sh->reference;
  int pa = dot_passes(&sh->f, &r->cfg);
  int64_t da = config_depth(sh, &r->cfg);
  leaf_checks(sh, pa, sh->dflt_out ? sh->dflt_passes : sh->ref_passes,
              da, sh->dflt_out ? sh->dflt_depth : REF_DEPTH, !sh->dflt_out, checks, &r->unverifiable);
  int leaf = chk_compare_values(out, expected, checks, sh->nleaves, &r->vs_default, &identical, &within, &err);
  if (leaf < 0) {
    free_maps(sh, checks);
    r->verdict = CHK_VERDICT_RUNTIME_ERROR;
    snprintf(r->message, sizeof r->message, "output cannot be compared: %.400s", err.msg);
    hlo_value_unref(out);
    r->wall_time = now_s() - t0;
    return;
  }
  r->leaf = leaf;
  r->tol = effective_tol(sh, leaf, &checks[leaf]);
  free_maps(sh, checks);
  if (identical || within) {
    r->verdict = chk_attribute(identical, within, true, true);
  } else {
    /* Divergent: first rule out nondeterminism with a second jitter seed. */
    tn_cand_result again = *r;
    hlo_value *out2 = NULL;
    run_config(sh, &r->cfg, mix(jitter, 0x5EED), &again, &out2);
    if (!out2 && again.verdict == CHK_VERDICT_TOOL_ERROR) {
      r->status = again.status;
      r->verdict = CHK_VERDICT_TOOL_ERROR;
      snprintf(r->message, sizeof r->message, "%s", again.message);
    } else if (!out2 || !hlo_value_equal(out, out2)) {
      r->verdict = CHK_VERDICT_NONDETERMINISTIC;
      if (!out2)
        snprintf(r->message, sizeof r->message, "rerun with another timing seed failed: %.400s", again.message);
      else
        snprintf(r->message, sizeof r->message, "rerun with another timing seed gave different output");
    } else {
      chk_leaf_check rchecks[256];
      leaf_checks(sh, pa, sh->ref_passes, da, REF_DEPTH, true, rchecks, NULL);
      bool rid, rwithin;
      int rleaf = chk_compare_values(out, sh->reference, rchecks, sh->nleaves, &r->vs_reference, &rid, &rwithin, &err);
      free_maps(sh, rchecks);
      r->has_vs_reference = rleaf >= 0;
      r->verdict = sh->dflt_out ? chk_attribute(false, false, rleaf >= 0 && rwithin, sh->default_vs_ref_within)
                                : CHK_VERDICT_MISMATCH_CANDIDATE;
    }
    hlo_value_unref(out2);
  }
  hlo_value_unref(out);
  r->wall_time = now_s() - t0;
}

static void progress(const tn_sweep_opts *o, int done, int total, int divergent) {
  if (!o->progress)
    return;
  fprintf(stderr, "\r  checking candidates %4d/%-4d  divergent: %d ", done, total, divergent);
  if (done == total)
    fputs("\r\033[K", stderr);
  fflush(stderr);
}

/* The evaluation hook behind the tolerance policy.  Mode 0 records the
 * largest |operand| of the hero (the T of tolerance.h); mode 1 adds delta
 * to every float element of the hero's value. */
typedef struct {
  const hlo_instr *hero;
  int mode;
  double max_abs[2];
  double delta;
} hero_hook_state;

static void max_abs_of(const hlo_value *v, double *acc) {
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      max_abs_of(v->elems[i], acc);
    return;
  }
  if (!hlo_etype_is_float(v->type))
    return;
  for (int64_t i = 0; i < v->count; i++) {
    double x = fabs(hlo_value_get_f64(v, i));
    if (isfinite(x) && x > *acc)
      *acc = x;
  }
}

static hlo_value *shifted(const hlo_value *v, double delta) {
  hlo_value *c = hlo_value_clone(v);
  if (!c)
    return NULL;
  if (c->type == HLO_TUPLE) {
    for (int i = 0; i < c->ntuple; i++) {
      hlo_value *e = shifted(c->elems[i], delta);
      if (!e) {
        hlo_value_unref(c);
        return NULL;
      }
      hlo_value_unref(c->elems[i]);
      c->elems[i] = e;
    }
    return c;
  }
  if (hlo_etype_is_float(c->type))
    for (int64_t i = 0; i < c->count; i++) {
      double x = hlo_value_get_f64(c, i);
      if (isfinite(x))
        hlo_value_set_f64(c, i, x + delta);
    }
  return c;
}

static void hero_hook(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int n, hlo_value **value) {
  hero_hook_state *h = ctx;
  if (ins != h->hero)
    return;
  if (h->mode == 0) {
    for (int k = 0; k < n && k < 2; k++)
      max_abs_of(ops[k], &h->max_abs[k]);
    return;
  }
  hlo_value *p = shifted(*value, h->delta);
  if (p) {
    hlo_value_unref(*value);
    *value = p;
  }
}

/* Finds the want-th array leaf of v, depth first. */
static int leaf_index(const hlo_value *v, int want, int *seen, const hlo_value **out) {
  if (v->type != HLO_TUPLE) {
    if ((*seen)++ == want) {
      *out = v;
      return 1;
    }
    return 0;
  }
  for (int i = 0; i < v->ntuple; i++)
    if (leaf_index(v->elems[i], want, seen, out))
      return 1;
  return 0;
}

static const hlo_value *nth_leaf(const hlo_value *v, int k) {
  const hlo_value *out = NULL;
  int seen = 0;
  leaf_index(v, k, &seen, &out);
  return out;
}

/* How many replicas the reference must simulate for the module's
 * collectives to be well-formed: its replica_count, or one more than the
 * highest replica a replica group or permute pair names. */
static int scan_replicas(const hlo_computation *c, int n, int depth) {
  if (depth > 32)
    return n;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *ins = c->instrs[i];
    const hlo_replica_groups *g = &ins->attrs.replica_groups;
    for (int a = 0; a < g->ngroups; a++)
      for (int b = 0; b < g->groups[a].n; b++)
        if (g->groups[a].v[b] + 1 > n && g->groups[a].v[b] < 64)
          n = (int)g->groups[a].v[b] + 1;
    for (int p = 0; p < ins->attrs.npairs; p++) {
      int64_t hi = ins->attrs.pairs[p].a > ins->attrs.pairs[p].b ? ins->attrs.pairs[p].a : ins->attrs.pairs[p].b;
      if (hi + 1 > n && hi < 64)
        n = (int)hi + 1;
    }
    const hlo_calls *k = &ins->attrs.calls;
    if (k->calls)
      n = scan_replicas(k->calls, n, depth + 1);
  }
  return n;
}

int tn_replicas_named(const hlo_module *m) { return scan_replicas(m->entry, 1, 0); }

int tn_replicas_needed(const hlo_module *m) {
  int n = m->replica_count > 1 && m->replica_count <= 64 ? (int)m->replica_count : 1;
  return scan_replicas(m->entry, n, 0);
}

/* Evaluates the reference with device numerics on every replica the
 * module needs; *out is replica 0's result, the replica the device runs. */
static int eval_reference(shared *sh, chk_eval_hook *hook, void *ctx, hlo_value **out, hlo_error *err) {
  hlo_value **outs = calloc((size_t)sh->replicas, sizeof *outs);
  if (!outs)
    return hlo_error_set(err, 0, 0, "out of memory");
  chk_eval_opts eo = {.replicas = sh->replicas, .emulate_device = 1, .hook = hook, .hook_ctx = ctx,
                      .time_budget = sh->o->time_budget};
  if (chk_eval_module(sh->m, sh->nargs, sh->args, &eo, outs, err) != 0) {
    free(outs);
    return -1;
  }
  *out = outs[0];
  for (int r = 1; r < sh->replicas; r++)
    hlo_value_unref(outs[r]);
  free(outs);
  return 0;
}

/* Tolerance propagation by perturbation.  The accumulation bound of
 * tolerance.h holds at the hero's output; what it means at the fusion's
 * outputs depends on the ops in between, so it is measured rather than
 * guessed: the reference is evaluated twice more with the hero's value
 * shifted by +delta and -delta, and sens[leaf][i] = max|y(h +- delta) -
 * y(h)| / delta is how far output element i moves per unit of error in the
 * hero.  It is first-order exact for smooth ops and the caller doubles it. */
static int measure_sensitivity(shared *sh, hlo_error *err) {
  if (!sh->f.hero || sh->f.k_total <= 1 || !(sh->term_max > 0))
    return 0;
  if (sh->f.kind != DEV_HERO_REDUCE && sh->f.kind != DEV_HERO_DOT)
    return 0;
  const hlo_shape *hs = hlo_shape_leaf(&sh->f.hero->shape, 0);
  if (!hs || !hlo_etype_is_float(hs->type))
    return 0;
  /* delta: the f32 bound for this K and T; its size only needs to keep the
   * measurement out of the noise of the ops' own rounding. */
  /* delta: twice the widest bound any comparison of this fusion uses (the
   * accumulation's own roundoff; for an f32 dot, the widest pass mix), since
   * the two sides compared can each be one bound away from the reference:
   * for a monotone op, y moves by at most |y(h+delta) - y(h-delta)| between
   * any two such points. */
  chk_tol_basis b = {.out_type = sh->f.acc_type, .acc_type = sh->f.acc_type, .k = sh->f.k_total,
                     .term_max = sh->term_max, .init_abs = sh->init_abs};
  dev_config none;
  memset(&none, 0, sizeof none);
  if (dot_passes(&sh->f, &none) > 0) {
    b.passes_a = 1;
    b.passes_b = 6;
  }
  double delta = 2.0 * chk_tolerance(&b).atol;
  /* where that bound is vacuous (infinite, or beyond any output) the
   * largest possible |sum| is the scale instead */
  double s_max = (double)sh->f.k_total * sh->term_max + sh->init_abs;
  if (!(delta <= 2.0 * s_max))
    delta = 2.0 * s_max;
  if (!(delta > 0) || !isfinite(delta))
    return 0;
  hlo_value *moved[2] = {NULL, NULL};
  for (int s = 0; s < 2; s++) {
    hero_hook_state h = {.hero = sh->f.hero, .mode = 1, .delta = s == 0 ? delta : -delta};
    if (eval_reference(sh, hero_hook, &h, &moved[s], err) != 0) {
      hlo_value_unref(moved[0]);
      return -1;
    }
  }
  for (int leaf = 0; leaf < sh->nleaves; leaf++) {
    const hlo_value *y = nth_leaf(sh->reference, leaf), *yp = nth_leaf(moved[0], leaf),
                    *ym = nth_leaf(moved[1], leaf);
    if (!y || !yp || !ym || !hlo_etype_is_float(y->type))
      continue;
    double *sens = malloc(sizeof *sens * (size_t)(y->count ? y->count : 1));
    if (!sens)
      break;
    for (int64_t i = 0; i < y->count; i++) {
      double v = hlo_value_get_f64(y, i);
      double dp = fabs(hlo_value_get_f64(yp, i) - v), dm = fabs(hlo_value_get_f64(ym, i) - v);
      double d = dp > dm ? dp : dm;
      /* A perturbation that turns a finite output non-finite marks an
       * ill-conditioned element: no finite bound applies there. */
      sens[i] = isfinite(d) ? d / delta : (isfinite(v) ? 1e300 : 0);
    }
    sh->sens[leaf] = sens;
  }
  hlo_value_unref(moved[0]);
  hlo_value_unref(moved[1]);
  return 0;
}

static int setup(shared *sh, const hlo_module *m, const tn_sweep_opts *o, hlo_error *err) {
  memset(sh, 0, sizeof *sh);
  sh->o = o;
  sh->m = m;
  if (chk_eval_supported(m, err) != 0)
    return -1;
  if (dev_fusion_analyze(m, &sh->f, err) != 0)
    return -1;
  sh->nargs = m->entry->nparams;
  sh->args = calloc((size_t)(sh->nargs ? sh->nargs : 1), sizeof *sh->args);
  if (!sh->args)
    return hlo_error_set(err, 0, 0, "out of memory");
  if (o->args) {
    /* inputs captured from the real graph (capture.h) */
    if (o->nargs != sh->nargs)
      return hlo_error_set(err, 0, 0, "%d captured inputs for %d parameters", o->nargs, sh->nargs);
    for (int i = 0; i < sh->nargs; i++) {
      if (!hlo_value_matches(o->args[i], &m->entry->params[i]->shape))
        return hlo_error_set(err, 0, 0, "captured input %d does not match parameter %s", i,
                             m->entry->params[i]->name);
      sh->args[i] = hlo_value_ref(o->args[i]);
    }
  } else {
    chk_inputs_opts io = {.seed = o->seed, .profile = o->profile};
    if (chk_inputs_make(m, &io, sh->args, err) != 0)
      return -1;
  }
  sh->nleaves = hlo_shape_leaf_count(&m->entry->root->shape);
  if (sh->nleaves > 256)
    return hlo_error_set(err, 0, 0, "the fusion has %d outputs; at most 256 are supported", sh->nleaves);
  map_output_leaves(sh);
  /* The device runs replica 0 of the same number of replicas the
   * reference simulates, so its collectives see the same peers. */
  sh->replicas = o->replicas > 0 ? o->replicas : tn_replicas_needed(m);
  sh->f.replicas = sh->replicas;
  hero_hook_state probe = {.hero = sh->f.hero};
  if (eval_reference(sh, hero_hook, &probe, &sh->reference, err) != 0)
    return -1;
  sh->term_max = sh->f.kind == DEV_HERO_DOT ? probe.max_abs[0] * probe.max_abs[1] : probe.max_abs[0];
  /* a reduce's second operand is its init value, one more term */
  sh->init_abs = sh->f.kind == DEV_HERO_REDUCE ? probe.max_abs[1] : 0;
  sh->structured = o->backend && o->backend->name && strcmp(o->backend->name, "sim") == 0;
  return measure_sensitivity(sh, err);
}

static void teardown(shared *sh) {
  for (int i = 0; i < 256; i++)
    free(sh->sens[i]);
  for (int i = 0; i < sh->nargs; i++)
    hlo_value_unref(sh->args ? sh->args[i] : NULL);
  free(sh->args);
  hlo_value_unref(sh->reference);
  hlo_value_unref(sh->dflt_out);
}

static void fill_cand(tn_cand_result *r, int id, const dev_config *c) {
  memset(r, 0, sizeof *r);
  r->id = id;
  r->cfg = *c;
  dev_config_print(c, r->config, sizeof r->config);
  r->fingerprint = dev_config_fingerprint(c);
  r->leaf = 0;
  r->vs_default.peak_index = -1;
  r->vs_reference.peak_index = -1;
}

/* |a - b| of one leaf as f32, NaN where exactly one side is non-finite. */
static int error_map(const hlo_value *a, const hlo_value *b, int leaf, tn_error_map *em) {
  const hlo_value *la = a, *lb = b;
  if (a->type == HLO_TUPLE) {
    int seen = 0;
    /* depth-first leaves */
    const hlo_value *stack_a[64], *stack_b[64];
    int sp = 0;
    stack_a[sp] = a;
    stack_b[sp++] = b;
    la = lb = NULL;
    while (sp > 0) {
      const hlo_value *x = stack_a[--sp], *y = stack_b[sp];
      if (x->type != HLO_TUPLE) {
        if (seen++ == leaf) {
          la = x;
          lb = y;
          break;
        }
        continue;
      }
      for (int i = x->ntuple - 1; i >= 0 && sp < 64; i--) {
        stack_a[sp] = x->elems[i];
        stack_b[sp++] = y->elems[i];
      }
    }
    if (!la)
      return -1;
  }
  em->rank = la->rank;
  for (int d = 0; d < la->rank; d++)
    em->dims[d] = la->dims[d];
  em->data = malloc(sizeof(float) * (size_t)(la->count ? la->count : 1));
  if (!em->data)
    return -1;
  for (int64_t i = 0; i < la->count; i++) {
    double x = hlo_value_get_f64(la, i), y = hlo_value_get_f64(lb, i);
    bool fx = isfinite(x), fy = isfinite(y);
    if (fx && fy)
      em->data[i] = (float)fabs(x - y);
    else if (fx != fy || (isnan(x) != isnan(y)) || (isinf(x) && x != y))
      em->data[i] = NAN;
    else
      em->data[i] = 0;
  }
  return 0;
}

static int severity_cmp(const tn_cand_result *a, const tn_cand_result *b) {
  if (a->vs_default.mismatches != b->vs_default.mismatches)
    return a->vs_default.mismatches > b->vs_default.mismatches ? -1 : 1;
  if (a->vs_default.max_abs != b->vs_default.max_abs)
    return a->vs_default.max_abs > b->vs_default.max_abs ? -1 : 1;
  return a->id - b->id;
}

static int check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                        tn_unit_status *why, hlo_error *err);

int tn_check_unit(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                  tn_unit_status *why, hlo_error *err) {
  *why = TN_UNIT_UNSUPPORTED;
  int rc = check_fusion(m, source, o, out, why, err);
  if (rc != 0) {
    tn_fusion_result_free(out); /* a failed check hands back nothing */
    /* The host's own failure, or a deadline, is not the unit's. */
    if (*why == TN_UNIT_UNSUPPORTED && strstr(err->msg, "out of memory"))
      *why = TN_UNIT_TOOL_ERROR;
    else if (*why == TN_UNIT_UNSUPPORTED && (strstr(err->msg, "time budget") || strstr(err->msg, "deadline")))
      *why = TN_UNIT_TIMED_OUT;
  }
  return rc;
}

int tn_check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                    hlo_error *err) {
  tn_unit_status why;
  return tn_check_unit(m, source, o, out, &why, err);
}

int64_t tn_shape_bytes(const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    int64_t b = 0;
    for (int i = 0; i < s->ntuple; i++)
      b += tn_shape_bytes(&s->elems[i]);
    return b;
  }
  if (s->type == HLO_INVALID || s->type == HLO_TOKEN)
    return 0;
  int64_t n = hlo_shape_elements(s);
  int bits = hlo_etype_bits(s->type);
  return n > INT64_MAX / 16 ? INT64_MAX / 2 : (n * (bits > 0 ? bits : 8) + 7) / 8;
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX / 2 || b > INT64_MAX / 2 ? INT64_MAX / 2 : a + b; }

static int64_t sat_mul(int64_t a, int64_t b) { return b != 0 && a > INT64_MAX / 2 / b ? INT64_MAX / 2 : a * b; }

int64_t tn_memory_estimate(const hlo_module *m, int threads) {
  dev_fusion f;
  hlo_error err;
  if (dev_fusion_analyze(m, &f, &err) != 0)
    return -1;
  int64_t held = 0; /* arguments and every value the reference may hold */
  const hlo_computation *comps[2] = {m->entry, f.comp};
  for (int c = 0; c < (f.comp == m->entry ? 1 : 2); c++)
    for (int i = 0; i < comps[c]->ninstrs; i++)
      held = sat_add(held, tn_shape_bytes(&comps[c]->instrs[i]->shape));
  int64_t out = tn_shape_bytes(&f.comp->root->shape);
  /* reference and default outputs, and the f64 sensitivity maps (up to
   * twice an f32 output) */
  int64_t fixed = sat_add(held, sat_mul(out, 4));
  int64_t per_thread = sat_add(f.in_bytes, sat_mul(out, 3));
  return sat_add(fixed, sat_mul(per_thread, threads > 0 ? threads : 1));
}

static int check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                        tn_unit_status *why, hlo_error *err) {
  double t_start = now_s();
  memset(out, 0, sizeof *out);
  out->best = -1;
  hlo_opcode_from_name("add", 3); /* build the opcode table before threads start */
#ifdef _OPENMP
  int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
#else
  int threads = 1;
#endif
  /* Bounded memory (issue 12 item 5): fewer threads before refusing. */
  if (o->max_memory > 0) {
    int64_t need = tn_memory_estimate(m, threads);
    while (need > o->max_memory && threads > 1)
      need = tn_memory_estimate(m, threads /= 2);
    if (need > o->max_memory) {
      *why = TN_UNIT_TOO_LARGE;
      return hlo_error_set(err, 0, 0, "estimated peak memory %lld bytes (%.3g GiB) exceeds --max-memory %lld bytes",
                           (long long)need, (double)need / 1073741824.0, (long long)o->max_memory);
    }
  }
  shared sh;
  if (setup(&sh, m, o, err) != 0) {
    teardown(&sh);
    return -1;
  }
  out->part = o->unit_name != NULL;
  snprintf(out->inputs_from, sizeof out->inputs_from, "%s", o->args ? "graph" : "synthetic");
  if (o->args && sh.nargs > 0 && (out->inputs = calloc((size_t)sh.nargs, sizeof *out->inputs))) {
    out->ninputs = sh.nargs;
    for (int i = 0; i < sh.nargs; i++)
      out->inputs[i] = hlo_value_ref(sh.args[i]);
  }
  if (o->unit_name)
    snprintf(out->name, sizeof out->name, "%s", o->unit_name);
  else
    snprintf(out->name, sizeof out->name, "%s", sh.f.name ? sh.f.name : "?");
  snprintf(out->source, sizeof out->source, "%s", source ? source : "");
  snprintf(out->hero, sizeof out->hero, "%s", dev_hero_name(sh.f.kind));
  size_t hlen = 0;
  out->hlo = hlo_print_module(m, &hlen);
  out->fingerprint = out->hlo ? fnv1a(out->hlo, hlen) : 0;
  out->seed = o->seed;
  /* Issue 6: a NaN or Inf in the reference is either the module's own
   * (a -inf mask) or the inputs' doing; the latter is not a compiler bug,
   * and the fusion is flagged so the summary and the store say so. */
  out->profile = (int)o->profile;
  chk_eval_opts intent_eo = {.replicas = sh.replicas, .emulate_device = 1, .time_budget = o->time_budget};
  if (chk_intent_classify(m, sh.nargs, sh.args, &intent_eo, sh.reference, &out->nonfinite, err) != 0) {
    teardown(&sh);
    return -1;
  }

  /* The candidate list: the backend's space, the default first. */
  dev_config *cands = NULL, dflt;
  int ncands = 0;
  if (o->backend->space(&sh.f, o->machine, &cands, &ncands, &dflt, err) != 0) {
    teardown(&sh);
    return -1;
  }
  dev_config *list = malloc(sizeof *list * (size_t)(ncands + 2));
  if (!list) {
    free(cands);
    teardown(&sh);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  int n = 0;
  list[n++] = dflt;
  if (o->only) {
    dev_config only;
    if (dev_config_parse(o->only, &only, err) != 0) {
      *why = TN_UNIT_BAD_INPUT;
      /* The position is in the config text, not in the module. */
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      hlo_error_set(err, 0, 0, "--only '%.200s': column %d: %.200s", o->only, err->col, msg);
      free(cands);
      free(list);
      teardown(&sh);
      return -1;
    }
    if (!dev_config_equal(&only, &dflt))
      list[n++] = only;
  } else {
    for (int i = 0; i < ncands; i++)
      if (!dev_config_equal(&cands[i], &dflt))
        list[n++] = cands[i];
  }
  free(cands);
  out->space_size = n;
  if (o->budget > 0 && n > o->budget) {
    n = o->budget;
    out->cut = TN_CUT_BUDGET;
  }
  out->cands = calloc((size_t)n, sizeof *out->cands);
  if (!out->cands) {
    free(list);
    teardown(&sh);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  out->ncands = n;
  for (int i = 0; i < n; i++)
    fill_cand(&out->cands[i], i, &list[i]);
  free(list);

  /* The reference follows each dot's own operand_precision; configs can
   * raise it. */
  dev_config none;
  memset(&none, 0, sizeof none);
  sh.ref_passes = dot_passes(&sh.f, &none);
  sh.dflt_passes = dot_passes(&sh.f, &out->cands[0].cfg);
  sh.dflt_depth = config_depth(&sh, &out->cands[0].cfg);

  /* The default runs first: every candidate is compared with it. */
  tn_cand_result *d = &out->cands[0];
  double t0 = now_s();
  run_config(&sh, &d->cfg, mix(o->seed, d->fingerprint), d, &sh.dflt_out);
  d->wall_time = now_s() - t0;
  out->default_ran = sh.dflt_out != NULL;
  if (sh.dflt_out) {
    chk_leaf_check checks[256];
    leaf_checks(&sh, sh.dflt_passes, sh.ref_passes, sh.dflt_depth, REF_DEPTH, true, checks,
                &out->reference_unverifiable);
    bool id, within;
    int leaf = chk_compare_values(sh.dflt_out, sh.reference, checks, sh.nleaves, &out->default_vs_reference, &id, &within, err);
    if (leaf < 0) {
      free_maps(&sh, checks);
      teardown(&sh);
      return -1;
    }
    out->reference_tol = effective_tol(&sh, leaf, &checks[leaf]);
    free_maps(&sh, checks);
    sh.default_vs_ref_within = within;
    out->default_vs_reference_ok = within;
    d->has_vs_reference = true;
    d->vs_reference = out->default_vs_reference;
    d->leaf = leaf;
    d->tol = out->reference_tol;
    d->unverifiable = out->reference_unverifiable;
    d->verdict = within ? (id ? CHK_VERDICT_MATCH : CHK_VERDICT_BENIGN) : CHK_VERDICT_MISMATCH_DEFAULT;
    d->speedup = 1.0;
  }

  int done = 1, divergent = chk_verdict_is_divergent(d->verdict);
  bool *ran = calloc((size_t)n, sizeof *ran);
  if (!ran) {
    teardown(&sh);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  ran[0] = true;
  progress(o, done, n, divergent);
  int timed_out = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
  for (int i = 1; i < n; i++) {
    if (sh.stop)
      continue;
    if (o->time_budget > 0 && now_s() - t_start > o->time_budget) {
      timed_out = 1;
      continue;
    }
    judge(&sh, &out->cands[i]);
    ran[i] = true;
#ifdef _OPENMP
#pragma omp critical(tune_progress)
#endif
    {
      done++;
      if (chk_verdict_is_divergent(out->cands[i].verdict)) {
        divergent++;
        if (o->stop_on_mismatch)
          sh.stop = 1;
      }
      progress(o, done, n, divergent);
    }
  }
  if (o->progress && done != n)
    fputs("\r\033[K", stderr);

  /* A candidate the host could not run while the other threads held their
   * memory gets one more try alone, so whether it ran does not depend on
   * --threads; one that fails alone too stays a tool-error. */
  for (int i = 1; i < n; i++)
    if (ran[i] && out->cands[i].verdict == CHK_VERDICT_TOOL_ERROR) {
      tn_cand_result *r = &out->cands[i];
      dev_config cfg = r->cfg;
      fill_cand(r, i, &cfg);
      judge(&sh, r);
    }

  if (timed_out)
    out->cut = TN_CUT_TIME;
  else if (sh.stop)
    out->cut = TN_CUT_STOP;
  /* Drop candidates a time budget or a stop left unrun, keeping order. */
  int w = 0;
  for (int i = 0; i < n; i++)
    if (ran[i])
      out->cands[w++] = out->cands[i];
  out->ncands = w;
  free(ran);

  /* Speedups, counts and the best correct config. */
  double base = out->cands[0].sim_time;
  for (int i = 0; i < out->ncands; i++) {
    tn_cand_result *r = &out->cands[i];
    if (r->sim_time > 0 && base > 0)
      r->speedup = base / r->sim_time;
    out->verdict_counts[r->verdict]++;
    if (i > 0 && r->status == DEV_OK && r->unverifiable)
      out->unverifiable++;
    bool ok = r->status == DEV_OK && (r->verdict == CHK_VERDICT_MATCH || r->verdict == CHK_VERDICT_BENIGN);
    if (ok && (out->best < 0 || r->sim_time < out->cands[out->best].sim_time))
      out->best = i;
  }

  /* Error maps of the worst divergent candidates, recomputed from a rerun
   * with the same jitter seed (deterministic for all but nondeterministic
   * ones, whose map shows one of their outputs). */
  if (o->error_maps > 0) {
    int *idx = malloc(sizeof *idx * (size_t)(out->ncands ? out->ncands : 1));
    int nd = 0;
    for (int i = 0; idx && i < out->ncands; i++)
      if (out->cands[i].status == DEV_OK && chk_verdict_is_divergent(out->cands[i].verdict))
        idx[nd++] = i;
    for (int a = 0; a < nd; a++) /* selection of the worst few, stable by id */
      for (int b = a + 1; b < nd; b++)
        if (severity_cmp(&out->cands[idx[b]], &out->cands[idx[a]]) < 0) {
          int t = idx[a];
          idx[a] = idx[b];
          idx[b] = t;
        }
    int keep = nd < o->error_maps ? nd : o->error_maps;
    if (keep < 0)
      keep = 0;
    out->error_maps = keep > 0 ? calloc((size_t)keep, sizeof *out->error_maps) : NULL;
    for (int a = 0; a < keep && out->error_maps; a++) {
      tn_cand_result *r = &out->cands[idx[a]], tmp = *r;
      hlo_value *o2 = NULL;
      run_config(&sh, &r->cfg, mix(o->seed, r->fingerprint), &tmp, &o2);
      const hlo_value *ref = sh.dflt_out ? sh.dflt_out : sh.reference;
      if (o2 && error_map(o2, ref, r->leaf, &out->error_maps[out->nerror_maps]) == 0)
        out->error_maps[out->nerror_maps++].cand_id = r->id;
      hlo_value_unref(o2);
    }
    free(idx);
  }
  teardown(&sh);
  out->wall_time = now_s() - t_start;
  return 0;
}
