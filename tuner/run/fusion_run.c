/* fusion_run.c — the driver behind `tune --check`. */
#include "fusion_run.h"

#include "peak.h"
#include "only.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "check/accum.h"
#include "backend_host.h"
#include "capture.h"
#include "check/cascade.h"
#include "device/dev_accum.h"
#include "device/dev_fft.h"
#include "device/dev_elemental.h"
#include "device/dev_fusion.h"
#include "device/dev_lower.h"
#include "device/dev_space.h"
#include "check/eval.h"
#include "check/fft_spread.h"
#include "check/judge.h"
#include "hlo/hlo_mem.h"
#include "hlo/hlo_print.h"
#include "check/tol_fft.h"
#include "check/tol_plan.h"
#include "device/dev_collective.h"
#include "hlo/hlo_hash.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t fnv1a(const char *s, size_t n) { return hlo_fnv1a(HLO_FNV_BASIS_FINGERPRINT, s, n); }

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
  bool structured;               /* the backend's kernels accumulate in the
                                    order dev_accum_depth knows
                                    (DEV_BACKEND_CAP_ACCUM_ORDER) */
  /* Every float accumulation of the kernel, per element, and how it moves
   * each output (check/accum.h). */
  chk_accums acc;
  chk_fft_spreads ffts;          /* the ffts whose error reaches outputs through more ops */
  chk_tol_plan plan;             /* the tolerances of this kernel's comparisons */
  chk_tol_side ref_side;         /* the reference, as a side of a comparison */
  chk_tol_side dflt_side;        /* the default (config_side) */
  int replicas;                  /* replicas the reference simulates */
  bool default_vs_ref_within;
  volatile int stop;
  /* The outputs of the worst divergent candidates, for their error maps:
   * at most o->error_maps, ranked by severity_cmp, one reference each;
   * kept_id[j] is the candidate (its index before the unrun ones are
   * dropped) whose output kept[j] is. */
  hlo_value **kept;
  int *kept_id;
  int nkept, kept_cap;
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

/* The accumulation depth of config c for tolerance.h: dev_accum_depth on
 * a backend with DEV_BACKEND_CAP_ACCUM_ORDER (the simulated device), 0
 * (unknown: the every-order bound) for another, whose lowering is its own. */
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

/* The side a config computes: its passes and depth, and the config itself
 * for the plan's fft callbacks. */
static chk_tol_side config_side(const shared *sh, const dev_config *c) {
  return (chk_tol_side){.passes = dot_passes(&sh->f, c), .depth = config_depth(sh, c), .config = c};
}

/* chk_tol_plan.fft_depth: the depth (check/tol_fft.h) of fft ins computed
 * under config (NULL: the reference). */
static int64_t plan_fft_depth(const void *ctx, const hlo_instr *ins, const void *config) {
  const shared *sh = ctx;
  if (!config)
    return CHK_FFT_DEPTH_REFERENCE;
  if (!sh->structured)
    return CHK_FFT_DEPTH_UNKNOWN;
  return dev_fft_depth(ins, config);
}

/* chk_tol_plan.fft_lowered: the device's own lowering of ins, which
 * dev_fft_depth reports as a depth. */
static bool plan_fft_lowered(const void *ctx, const hlo_instr *ins) {
  (void)ctx;
  return dev_fft_depth(ins, NULL) != 0;
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

/* run_config for a default whose output the caller made already
 * (tn_sweep_opts.default_given): compiled for its status and cost, not
 * run; a compile that fails now runs it as run_config would, which
 * reports why. */
static void given_config(shared *sh, const dev_config *cfg, uint64_t jitter, tn_cand_result *r, hlo_value **out) {
  const tn_sweep_opts *o = sh->o;
  dev_kernel *k = NULL;
  *out = NULL;
  if (o->backend->compile(&sh->f, cfg, o->machine, o->compiler, &k, r->message, sizeof r->message) != DEV_OK) {
    run_config(sh, cfg, jitter, r, out);
    return;
  }
  r->sim_time = o->backend->cost(k);
  o->backend->release(k);
  r->status = DEV_OK;
  *out = hlo_value_ref(o->default_given);
}

/* Which of list[0..n) compile: a budget is not spent on a candidate that
 * runs nothing (cover.h).  A refusal for a feature the tool lacks says
 * nothing about the config, so it counts as compiling (the run reports
 * the tool error).  One for lack of host memory would make the choice
 * depend on memory, so the unit fails instead: NULL, as when the array
 * itself cannot be allocated. */
static bool *compiling(const shared *sh, const dev_config *list, int n) {
  const tn_sweep_opts *o = sh->o;
  bool *ok = malloc(sizeof *ok * (size_t)(n ? n : 1));
  if (!ok)
    return NULL;
  for (int i = 0; i < n; i++) {
    dev_kernel *k = NULL;
    char why[512] = "";
    dev_status st = o->backend->compile(&sh->f, &list[i], o->machine, o->compiler, &k, why, sizeof why);
    if (st == DEV_OK)
      o->backend->release(k);
    else if (strncmp(why, "out of memory", 13) == 0) {
      free(ok);
      return NULL;
    }
    ok[i] = st == DEV_OK || host_failure(why);
  }
  return ok;
}

/* The judgement of r so far, for check/judge.h to go on from. */
static chk_judgement judgement_of(const tn_cand_result *r) {
  chk_judgement j = {.verdict = r->verdict,
                     .leaf = r->leaf,
                     .tol = r->tol,
                     .unverifiable = r->unverifiable,
                     .vs_default = r->vs_default,
                     .has_vs_reference = r->has_vs_reference,
                     .vs_reference = r->vs_reference};
  snprintf(j.message, sizeof j.message, "%s", r->message);
  return j;
}

static void take_judgement(tn_cand_result *r, const chk_judgement *j) {
  r->verdict = j->verdict;
  r->leaf = j->leaf;
  r->tol = j->tol;
  r->unverifiable = j->unverifiable;
  r->vs_default = j->vs_default;
  r->has_vs_reference = j->has_vs_reference;
  r->vs_reference = j->vs_reference;
  snprintf(r->message, sizeof r->message, "%s", j->message);
}

/* The jitter seed of a config's first run: the eager timing when the
 * backend offers it (dev_backend.h), so a missing wait shows on this run
 * rather than when a drawn timing happens to be fast; else the drawn seed. */
static uint64_t first_jitter(const tn_sweep_opts *o, uint64_t drawn) {
  return (o->backend->caps & DEV_BACKEND_CAP_EAGER_TIMING) ? DEV_JITTER_EAGER : drawn;
}

/* The seed of the rerun that tells a race from a deterministic mismatch:
 * always a drawn timing, never the eager one. */
static uint64_t rerun_jitter(const tn_sweep_opts *o, uint64_t drawn) {
  uint64_t s = hlo_mix64(drawn, 0x5EED);
  return (o->backend->caps & DEV_BACKEND_CAP_EAGER_TIMING) ? s & ~DEV_JITTER_EAGER : s;
}

/* Runs candidate r and has check/judge.h judge it: against the default
 * (or, without one, the reference), and when it diverges, after a rerun
 * with a second jitter seed that rules out nondeterminism, against the
 * reference.  A divergent candidate's output (its first run's) is handed
 * to *divergent, one reference, for its error map; NULL otherwise. */
static void judge(shared *sh, tn_cand_result *r, hlo_value **divergent) {
  *divergent = NULL;
  double t0 = now_s();
  hlo_value *out = NULL;
  uint64_t jitter = hlo_mix64(sh->o->seed, r->fingerprint);
  run_config(sh, &r->cfg, first_jitter(sh->o, jitter), r, &out);
  if (!out) {
    r->wall_time = now_s() - t0;
    return;
  }
  chk_judgement j = judgement_of(r);
  chk_tol_side cand = config_side(sh, &r->cfg);
  /* Without a default (it failed or is racy), candidates are judged
   * against the reference directly. */
  if (sh->dflt_out)
    chk_judge_candidate(&sh->plan, &cand, &sh->dflt_side, out, sh->dflt_out, &j);
  else
    chk_judge_candidate(&sh->plan, &cand, &sh->ref_side, out, sh->reference, &j);
  if (j.rerun) {
    tn_cand_result again = *r;
    hlo_value *out2 = NULL;
    run_config(sh, &r->cfg, rerun_jitter(sh->o, jitter), &again, &out2);
    if (!out2 && again.verdict == CHK_VERDICT_TOOL_ERROR) {
      /* the host failed the rerun: no verdict on the candidate */
      r->status = again.status;
      j.rerun = false;
      j.verdict = CHK_VERDICT_TOOL_ERROR;
      snprintf(j.message, sizeof j.message, "%s", again.message);
    } else {
      chk_judge_rerun(&sh->plan, &cand, &sh->ref_side, out, out2, again.message, sh->dflt_out != NULL,
                      sh->default_vs_ref_within, &j);
    }
    hlo_value_unref(out2);
  }
  take_judgement(r, &j);
  if (r->status == DEV_OK && chk_verdict_is_divergent(r->verdict))
    *divergent = out;
  else
    hlo_value_unref(out);
  r->wall_time = now_s() - t0;
}

static void progress(const tn_sweep_opts *o, const char *phase, int done, int total, int divergent) {
  if (o->on_progress)
    o->on_progress(o->progress_ctx, phase, done, total, divergent);
}

/* The group size an all-gather or reduce-scatter over every replica
 * (replica_groups={}) implies by its shapes: the result is that many times
 * the operand along the gathered dimension (the operand that many times
 * the result, for a scatter).  XLA keeps the replica count outside the
 * HLO text, so a test module that omits replica_count says it only this
 * way.  1 when the shapes imply nothing usable. */
static int implied_group_size(const hlo_instr *ins) {
  bool gather = ins->op == HLO_OP_ALL_GATHER;
  if ((!gather && ins->op != HLO_OP_REDUCE_SCATTER) || ins->attrs.replica_groups.ngroups > 0 ||
      ins->noperands < 1 || !(ins->attrs.has & HLO_A_DIMENSIONS) || ins->attrs.dimensions.n != 1)
    return 1;
  const hlo_shape *x = hlo_shape_leaf(&ins->operands[0]->shape, 0), *y = hlo_shape_leaf(&ins->shape, 0);
  int64_t d = ins->attrs.dimensions.v[0];
  if (!x || !y || d < 0 || d >= x->rank || d >= y->rank)
    return 1;
  int64_t big = gather ? y->dims[d] : x->dims[d], small = gather ? x->dims[d] : y->dims[d];
  if (small <= 0 || big % small != 0 || big / small > 64)
    return 1;
  return (int)(big / small);
}

/* How many replicas the reference must simulate for the module's
 * collectives to be well-formed: its replica_count, or one more than the
 * highest replica a replica group or permute pair names, or (shapes) the
 * group size an all-gather's or reduce-scatter's shapes imply, in any
 * computation the entry reaches. */
static int scan_replicas(const hlo_computation *c, int n, bool shapes, int depth) {
  if (!c || depth > 32)
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
    int implied = shapes ? implied_group_size(ins) : 1;
    if (implied > n)
      n = implied;
    /* Collectives inside loops, branches and async computations count
     * as much as the entry's. */
    const hlo_calls *k = &ins->attrs.calls;
    const hlo_computation *callees[4] = {k->calls, k->body, k->condition, k->to_apply};
    for (int j = 0; j < 4; j++)
      if (callees[j])
        n = scan_replicas(callees[j], n, shapes, depth + 1);
    for (int j = 0; j < k->nbranches; j++)
      if (k->branches[j])
        n = scan_replicas(k->branches[j], n, shapes, depth + 1);
  }
  return n;
}

int tn_replicas_named(const hlo_module *m) { return scan_replicas(m->entry, 1, false, 0); }

int tn_replicas_needed(const hlo_module *m) {
  int n = m->replica_count > 1 && m->replica_count <= 64 ? (int)m->replica_count : 1;
  return scan_replicas(m->entry, n, true, 0);
}

int tn_default_config(const dev_backend *b, const dev_fusion *f, const dev_machine *m, dev_config *dflt,
                      hlo_error *err) {
  if (b->default_config)
    return b->default_config(f, m, dflt, err);
  dev_config *cands = NULL;
  int n = 0;
  int rc = b->space(f, m, &cands, &n, dflt, err);
  free(cands);
  return rc;
}

/* Evaluates the reference with device numerics on every replica the
 * module needs; *out is replica 0's result, the replica the device runs. */
static int eval_reference(shared *sh, chk_eval_hook *hook, void *ctx, hlo_value **out, hlo_error *err) {
  hlo_value **outs = calloc((size_t)sh->replicas, sizeof *outs);
  if (!outs)
    return hlo_error_set(err, 0, 0, "out of memory");
  chk_eval_opts eo = {.replicas = sh->replicas, .emulate_device = 1, .hook = hook, .hook_ctx = ctx,
                      .time_budget = sh->o->time_budget, .rng_seed = sh->o->seed};
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

static int eval_reference_cb(void *ctx, chk_eval_hook *hook, void *hook_ctx, hlo_value **out, hlo_error *err) {
  return eval_reference(ctx, hook, hook_ctx, out, err);
}

/* Measures how each accumulation reaches the outputs (check/accum.h), with
 * the widest coefficient any comparison of this fusion can use: the
 * hero's sides at depth K + 1 (above any config's) and, for an f32 dot,
 * the widest pass mix a config can choose: from the instruction's own
 * operand_precision, below which no config goes, to 6 passes.  (From 1
 * pass whatever the floor, the shift was some 250 times wider than any
 * comparison of a HIGH dot could use, and a tanh after it saturated.) */
static int measure_accums(shared *sh, hlo_error *err) {
  if (sh->acc.failed)
    return hlo_error_set(err, 0, 0, "out of memory while recording the fusion's accumulations");
  if (sh->o->tol_override || sh->acc.n == 0)
    return 0;
  double g[CHK_ACCUM_MAX];
  dev_config none;
  memset(&none, 0, sizeof none);
  int floor_passes = dot_passes(&sh->f, &none);
  int64_t kd = sh->f.k_total + 1;
  chk_tol_side a = {.passes = floor_passes, .depth = kd}, b = {.passes = floor_passes ? 6 : 0, .depth = kd};
  chk_tol_plan_coefs(&sh->plan, true, &a, &b, g);
  if (chk_accums_measure(&sh->acc, sh->reference, g, eval_reference_cb, sh, err) != 0)
    return -1;
  if (sh->acc.failed)
    return hlo_error_set(err, 0, 0, "out of memory while measuring the fusion's accumulations");
  return 0;
}

/* The reference from the trace of the whole module's evaluation
 * (capture.h), when it stands for evaluating m: one replica, the traced
 * operands, and m's root the fusion of the traced kernel, instruction for
 * instruction.  The probe is shown what an evaluation's hook would be
 * shown for the kernel (it looks at nothing else), in the same order, so
 * what it measures is the same.  false: evaluate instead. */
static bool reference_from_trace(shared *sh, const hlo_module *m) {
  const tn_capture *t = sh->o->traced;
  const hlo_computation *k = sh->f.comp, *tk = t ? t->kernel : NULL;
  const hlo_instr *root = m->entry->root;
  if (!t || !t->out || !tk || t->trace_failed || sh->replicas != 1 || !sh->o->args || sh->o->args != t->args ||
      root->op != HLO_OP_FUSION || root->attrs.calls.calls != k || k->ninstrs != tk->ninstrs ||
      !hlo_value_matches(t->out, &root->shape))
    return false;
  for (int q = 0; q < k->ninstrs; q++) {
    const hlo_instr *a = k->instrs[q], *b = tk->instrs[q];
    if (a->op != b->op || a->noperands != b->noperands || strcmp(a->name, b->name) != 0)
      return false;
    for (int j = 0; j < a->noperands; j++)
      if (a->operands[j]->index != b->operands[j]->index)
        return false;
  }
  for (int c = 0; c < t->ncalls; c++) {
    const tn_trace_call *tc = &t->calls[c];
    hlo_value *v = tc->value;
    /* a dot the capture evaluated with the probe's walk: the walk is taken
     * as it is (chk_accums_probe_walked) */
    chk_accums_probe_walked(&sh->acc, k->instrs[tc->index], tc->ops, tc->nops, &v,
                            tc->walk.abs_sum ? &tc->walk : NULL);
  }
  sh->reference = hlo_value_ref(t->out);
  return true;
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
    progress(o, "inputs", 0, 0, 0);
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
  sh->f.rng_seed = o->seed;
  sh->f.host = tn_backend_host();
  /* Every candidate compiles and runs this one fusion: the analyses of its
   * instructions that no config changes are made once here, before the
   * candidates' threads start, and freed by teardown.  Unprepared (out of
   * memory) each candidate makes its own: slower, same results. */
  (void)dev_fusion_prepare(&sh->f);
  sh->acc.kernel = sh->f.comp;
  progress(o, "reference", 0, 0, 0);
  if (!reference_from_trace(sh, m) && eval_reference(sh, chk_accums_probe, &sh->acc, &sh->reference, err) != 0)
    return -1;
  sh->structured = o->backend && (o->backend->caps & DEV_BACKEND_CAP_ACCUM_ORDER);
  sh->plan = (chk_tol_plan){.kernel = sh->f.comp,
                            .out_shape = &m->entry->root->shape,
                            .nleaves = sh->nleaves,
                            .kernel_leaf = sh->kernel_leaf,
                            .hero = sh->f.hero,
                            .acc = &sh->acc,
                            .ffts = &sh->ffts,
                            .reference = sh->reference,
                            .criterion = o->criterion,
                            .ops = o->ops,
                            .tol_override = o->tol_override,
                            .tol = o->tol,
                            .fft_depth = plan_fft_depth,
                            .fft_lowered = plan_fft_lowered,
                            .ctx = sh};
  if (measure_accums(sh, err) != 0)
    return -1;
  if (o->tol_override)
    return 0;
  return chk_fft_spreads_measure(&sh->ffts, sh->f.comp, sh->reference, eval_reference_cb, sh, err);
}

static void teardown(shared *sh) {
  dev_fusion_release(&sh->f);
  chk_accums_free(&sh->acc);
  chk_fft_spreads_free(&sh->ffts);
  for (int i = 0; i < sh->nargs; i++)
    hlo_value_unref(sh->args ? sh->args[i] : NULL);
  free(sh->args);
  hlo_value_unref(sh->reference);
  hlo_value_unref(sh->dflt_out);
  for (int j = 0; j < sh->nkept; j++)
    hlo_value_unref(sh->kept[j]);
  free(sh->kept);
  free(sh->kept_id);
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
  tn_peak_window_fill(em, la, lb);
  return 0;
}

static int severity_cmp(const tn_cand_result *a, const tn_cand_result *b) {
  if (a->vs_default.mismatches != b->vs_default.mismatches)
    return a->vs_default.mismatches > b->vs_default.mismatches ? -1 : 1;
  if (a->vs_default.max_abs != b->vs_default.max_abs)
    return a->vs_default.max_abs > b->vs_default.max_abs ? -1 : 1;
  return a->id - b->id;
}

/* Offers the output v (one reference, taken) of divergent candidate
 * cands[i] for an error map: kept while it is among the o->error_maps
 * worst seen so far, released when a worse one replaces it.  The order is
 * total, so which are kept does not depend on the order of the offers. */
static void keep_divergent(shared *sh, const tn_cand_result *cands, int i, hlo_value *v) {
  if (!v)
    return;
  if (sh->nkept < sh->kept_cap) {
    sh->kept[sh->nkept] = v;
    sh->kept_id[sh->nkept++] = i;
    return;
  }
  int least = -1; /* the least severe kept */
  for (int j = 0; j < sh->nkept; j++)
    if (least < 0 || severity_cmp(&cands[sh->kept_id[j]], &cands[sh->kept_id[least]]) > 0)
      least = j;
  if (least >= 0 && severity_cmp(&cands[i], &cands[sh->kept_id[least]]) < 0) {
    hlo_value_unref(sh->kept[least]);
    sh->kept[least] = v;
    sh->kept_id[least] = i;
  } else {
    hlo_value_unref(v);
  }
}

static int check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                        tn_unit_status *why, hlo_error *err);

int tn_check_unit(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                  tn_unit_status *why, hlo_error *err) {
  *why = TN_UNIT_UNSUPPORTED;
  uint64_t refused = hlo_mem_refusals();
  hlo_mem_reset_peak();
  int rc = check_fusion(m, source, o, out, why, err);
  if (rc != 0) {
    tn_fusion_result_free(out); /* a failed check hands back nothing */
    /* Out of memory because the account reached --max-memory is the
     * unit's size, which the estimate missed: too-large, not the host's
     * failure. */
    if (*why == TN_UNIT_UNSUPPORTED && strstr(err->msg, "out of memory") && hlo_mem_refusals() != refused) {
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      *why = TN_UNIT_TOO_LARGE;
      hlo_error_set(err, 0, 0, "its values reached --max-memory %lld bytes (%.200s)", (long long)hlo_mem_limit(), msg);
    }
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

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX / 2 || b > INT64_MAX / 2 ? INT64_MAX / 2 : a + b; }

static int64_t sat_mul(int64_t a, int64_t b) { return b != 0 && a > INT64_MAX / 2 / b ? INT64_MAX / 2 : a * b; }

int64_t tn_memory_estimate(const hlo_module *m, int threads, int replicas, int kept) {
  dev_fusion f;
  hlo_error err;
  if (dev_fusion_analyze(m, &f, &err) != 0)
    return -1;
  int64_t held = 0; /* arguments and every value the reference may hold */
  const hlo_computation *comps[2] = {m->entry, f.comp};
  for (int c = 0; c < (f.comp == m->entry ? 1 : 2); c++)
    for (int i = 0; i < comps[c]->ninstrs; i++)
      held = sat_add(held, hlo_shape_bytes(&comps[c]->instrs[i]->shape));
  /* Every simulated replica holds its own values (eval.h). */
  held = sat_mul(held, replicas > 1 ? replicas : 1);
  int64_t out = hlo_shape_bytes(&f.comp->root->shape);
  /* reference and default outputs, and the f64 sensitivity maps (up to
   * twice an f32 output) */
  int64_t fixed = sat_add(held, sat_mul(out, 4 + (kept > 0 ? kept : 0)));
  int64_t lockstep = dev_collective_lockstep_bytes(f.comp, replicas);
  if (lockstep < 0)
    return -1;
  int64_t per_thread = sat_add(sat_add(f.in_bytes, sat_mul(out, 3)), lockstep);
  /* Each candidate's HBM copy of a parameter has a shadow byte per
   * element (dev_hbm.h), and a parameter the device evaluates whole (read
   * only by gather, scatter, sort... or a collective: dev_lower.h) is
   * first built as a box of one slot and one poison byte per element, then
   * as a value of its own type.  Left out, a 256 MiB bf16 gather operand
   * was estimated at 0.26 GiB per thread and took 1.7 GiB. */
  bool *whole = dev_evaluated_whole(f.comp);
  if (!whole)
    return -1;
  for (int p = 0; p < f.comp->nparams; p++) {
    const hlo_instr *pi = f.comp->params[p];
    if (!pi || pi->shape.type == HLO_TUPLE)
      continue;
    int64_t n = hlo_shape_elements(&pi->shape);
    per_thread = sat_add(per_thread, n);
    if (pi->index >= 0 && pi->index < f.comp->ninstrs && whole[pi->index])
      per_thread = sat_add(per_thread, sat_mul(n, (int64_t)(sizeof(dev_slot) + 1 + hlo_etype_host_size(pi->shape.type))));
  }
  free(whole);
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
  /* Bounded memory (issue 12 item 5): fewer threads before refusing.
   * What the process already holds (the operands captured for every
   * unit of the module, hlo_mem.h) counts too. */
  uint64_t refused0 = hlo_mem_refusals();
  int64_t estimate = -1;
  if (o->max_memory > 0) {
    int replicas = o->replicas > 0 ? o->replicas : tn_replicas_needed(m);
    int64_t before = hlo_mem_held();
    int64_t need = sat_add(tn_memory_estimate(m, threads, replicas, o->error_maps), before);
    while (need > o->max_memory && threads > 1)
      need = sat_add(tn_memory_estimate(m, threads /= 2, replicas, o->error_maps), before);
    estimate = need;
    if (need > o->max_memory) {
      char held[96] = "";
      if (before > 0)
        snprintf(held, sizeof held, ", %lld of them held before the unit", (long long)before);
      *why = TN_UNIT_TOO_LARGE;
      return hlo_error_set(err, 0, 0, "estimated peak memory %lld bytes (%.3g GiB%s) exceeds --max-memory %lld bytes",
                           (long long)need, (double)need / 1073741824.0, held, (long long)o->max_memory);
    }
  }
  shared sh;
  if (setup(&sh, m, o, err) != 0) {
    teardown(&sh);
    return -1;
  }
  out->part = o->unit_name != NULL;
  snprintf(out->inputs_from, sizeof out->inputs_from, "%s", o->args ? "graph" : "synthetic");
  if (o->args && sh.nargs > 0) {
    /* The stored result needs its inputs and module text: without them
     * it would be stored incomplete, so a failed allocation fails the
     * check (a tool error) instead. */
    if (!(out->inputs = calloc((size_t)sh.nargs, sizeof *out->inputs))) {
      teardown(&sh);
      return hlo_error_set(err, 0, 0, "out of memory");
    }
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
  if (!out->hlo) {
    teardown(&sh);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  out->fingerprint = fnv1a(out->hlo, hlen);
  out->seed = o->seed;
  /* Issue 6: a NaN or Inf in the reference is either the module's own
   * (a -inf mask) or the inputs' doing; the latter is not a compiler bug,
   * and the fusion is flagged so the summary and the store say so. */
  out->profile = (int)o->profile;
  out->criterion = (int)o->criterion;
  chk_eval_opts intent_eo = {.replicas = sh.replicas, .emulate_device = 1, .time_budget = o->time_budget,
                             .rng_seed = o->seed};
  if (chk_intent_classify(m, sh.nargs, sh.args, &intent_eo, o->profile == CHK_INPUTS_SPECIAL, sh.reference,
                          &out->nonfinite, err) != 0) {
    teardown(&sh);
    return -1;
  }

  /* The candidate list: the backend's space, the default first. */
  dev_config *cands = NULL, dflt;
  int ncands = 0;
  if (o->default_only ? tn_default_config(o->backend, &sh.f, o->machine, &dflt, err) != 0
                      : o->backend->space(&sh.f, o->machine, &cands, &ncands, &dflt, err) != 0) {
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
  if (o->default_only) {
    /* the default alone (list[0]) */
  } else if (o->only) {
    dev_config only;
    /* Knobs --only leaves out come from the default (only.h). */
    char dtext[DEV_CONFIG_TEXT_MAX], full[DEV_CONFIG_TEXT_MAX];
    dev_config_print(&dflt, dtext, sizeof dtext);
    int partial = -1;
    if ((partial = tn_only_complete(o->only, dtext, full, sizeof full, err)) != 0 ||
        dev_config_parse(full, &only, err) != 0) {
      *why = TN_UNIT_BAD_INPUT;
      /* The position is in the config text, not in the module. */
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      if (partial != 0)
        hlo_error_set(err, 0, 0, "--only '%.200s': %.200s", o->only, msg + (strncmp(msg, "--only: ", 8) ? 0 : 8));
      else if (strcmp(full, o->only) == 0)
        hlo_error_set(err, 0, 0, "--only '%.200s': column %d: %.200s", o->only, err->col, msg);
      else
        hlo_error_set(err, 0, 0, "--only '%.200s' (completed from the default: '%.250s'): column %d: %.200s", o->only,
                      full, err->col, msg);
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
    /* Not a prefix: the space's order clusters related configs, so the
     * budget is spent covering knob values and their pairs. */
    tn_cover_shape shape = {.rank = sh.f.rank, .k_total = sh.f.k_total};
    memcpy(shape.dims, sh.f.dims, sizeof shape.dims);
    bool *ok = compiling(&sh, list, n);
    if (!ok || tn_cover_select(list, n, o->budget, o->cover_seed, &shape, ok, &out->cover, err) != 0) {
      if (!ok)
        hlo_error_set(err, 0, 0, "out of memory");
      free(ok);
      free(list);
      teardown(&sh);
      return -1;
    }
    free(ok);
    out->covered = true;
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
  sh.ref_side = (chk_tol_side){.passes = dot_passes(&sh.f, &none), .depth = REF_DEPTH, .config = NULL};
  sh.dflt_side = config_side(&sh, &out->cands[0].cfg);

  /* Room for the divergent outputs the error maps are drawn from; without
   * it no map is drawn. */
  if (o->error_maps > 0) {
    int cap = o->error_maps < n ? o->error_maps : n;
    sh.kept = calloc((size_t)cap, sizeof *sh.kept);
    sh.kept_id = calloc((size_t)cap, sizeof *sh.kept_id);
    sh.kept_cap = sh.kept && sh.kept_id ? cap : 0;
  }

  /* The default runs first: every candidate is compared with it. */
  tn_cand_result *d = &out->cands[0];
  double t0 = now_s();
  progress(o, "default", 0, n, 0);
  uint64_t djitter = hlo_mix64(o->seed, d->fingerprint);
  if (o->default_only && o->default_given)
    given_config(&sh, &d->cfg, first_jitter(o, djitter), d, &sh.dflt_out);
  else
    run_config(&sh, &d->cfg, first_jitter(o, djitter), d, &sh.dflt_out);
  d->wall_time = now_s() - t0;
  out->default_ran = sh.dflt_out != NULL;
  if (sh.dflt_out) {
    chk_judgement j = judgement_of(d);
    if (chk_judge_default(&sh.plan, &sh.dflt_side, &sh.ref_side, sh.dflt_out, out->output_tol, &j, err) != 0) {
      teardown(&sh);
      return -1;
    }
    out->noutputs = sh.nleaves;
    out->default_vs_reference = j.vs_reference;
    out->reference_tol = j.tol;
    out->reference_unverifiable = j.unverifiable;
    sh.default_vs_ref_within = !j.rerun;
    out->default_vs_reference_ok = !j.rerun;
    d->speedup = 1.0;
    /* A default that disagrees with the reference may be racy rather than
     * wrong: before any mismatch-default it is rerun with a second jitter
     * seed, as a divergent candidate is.  A racy default is no baseline:
     * the candidates are then judged against the reference alone. */
    bool racy = false;
    if (j.rerun) {
      tn_cand_result again = *d;
      hlo_value *out2 = NULL;
      run_config(&sh, &d->cfg, rerun_jitter(o, djitter), &again, &out2);
      racy = chk_judge_nondeterministic(sh.dflt_out, out2, again.message, &j);
      hlo_value_unref(out2);
    }
    /* judged before it is kept: keep_divergent ranks by the verdict */
    take_judgement(d, &j);
    if (racy) {
      keep_divergent(&sh, out->cands, 0, sh.dflt_out); /* its first output */
      sh.dflt_out = NULL;
    } else if (chk_verdict_is_divergent(d->verdict)) {
      keep_divergent(&sh, out->cands, 0, hlo_value_ref(sh.dflt_out));
    }
  }
  if (o->default_out)
    *o->default_out = sh.dflt_out ? hlo_value_ref(sh.dflt_out) : NULL;
  if (o->reference_out)
    *o->reference_out = sh.reference ? hlo_value_ref(sh.reference) : NULL;

  int done = 1, divergent = chk_verdict_is_divergent(d->verdict);
  bool *ran = calloc((size_t)n, sizeof *ran);
  if (!ran) {
    teardown(&sh);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  ran[0] = true;
  progress(o, "candidates", done, n, divergent);
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
    hlo_value *dv;
    judge(&sh, &out->cands[i], &dv);
    ran[i] = true;
#ifdef _OPENMP
#pragma omp critical(tune_progress)
#endif
    {
      done++;
      keep_divergent(&sh, out->cands, i, dv);
      if (chk_verdict_is_divergent(out->cands[i].verdict)) {
        divergent++;
        if (o->stop_on_mismatch)
          sh.stop = 1;
      }
      progress(o, "candidates", done, n, divergent);
    }
  }

  /* A candidate the host could not run while the other threads held their
   * memory gets one more try alone, so whether it ran does not depend on
   * --threads; one that fails alone too stays a tool-error. */
  for (int i = 1; i < n; i++)
    if (ran[i] && out->cands[i].verdict == CHK_VERDICT_TOOL_ERROR) {
      progress(o, "reruns", done, n, divergent);
      tn_cand_result *r = &out->cands[i];
      dev_config cfg = r->cfg;
      fill_cand(r, i, &cfg);
      hlo_value *dv;
      judge(&sh, r, &dv);
      keep_divergent(&sh, out->cands, i, dv);
    }

  /* A candidate the account refused even alone: the unit does not fit in
   * --max-memory, whatever its estimate said.  That is its size, not the
   * host's failure nor a verdict, and no partial result stands for it. */
  if (hlo_mem_refusals() != refused0)
    for (int i = 0; i < n; i++) {
      const tn_cand_result *r = &out->cands[i];
      if ((i == 0 || ran[i]) && r->verdict == CHK_VERDICT_TOOL_ERROR && strncmp(r->message, "out of memory", 13) == 0) {
        free(ran);
        teardown(&sh);
        *why = TN_UNIT_TOO_LARGE;
        return hlo_error_set(err, 0, 0,
                             "its values reached --max-memory %lld bytes while running %s (%.200s); its estimated peak "
                             "memory was %lld bytes",
                             (long long)hlo_mem_limit(), i == 0 ? "the default" : r->config, r->message,
                             (long long)estimate);
      }
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

  /* Error maps of the worst divergent candidates, from the outputs kept
   * as they were judged (keep_divergent). */
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
      const tn_cand_result *r = &out->cands[idx[a]];
      const hlo_value *o2 = NULL;
      for (int j = 0; j < sh.nkept; j++)
        if (sh.kept_id[j] == r->id)
          o2 = sh.kept[j];
      const hlo_value *ref = sh.dflt_out ? sh.dflt_out : sh.reference;
      if (o2 && error_map(o2, ref, r->leaf, &out->error_maps[out->nerror_maps]) == 0)
        out->error_maps[out->nerror_maps++].cand_id = r->id;
    }
    free(idx);
  }
  teardown(&sh);
  out->wall_time = now_s() - t_start;
  return 0;
}
