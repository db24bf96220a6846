/* example_backend.c — the smallest useful implementation of dev_backend.h,
 * built as a shared object and loaded with `tune --backend PATH.so`.
 *
 * It exists to prove the interface: everything a backend must do is here,
 * and nothing of the built-in simulator is used.  It is a "reference
 * backend": its kernels compute the module with the host's evaluator, which
 * tune hands it through tune_backend_attach_v1 (dev_host.h, dev_backend.h),
 * so a sweep on it must find every candidate bit-identical to the
 * reference.  It includes only the interface and the HLO layer: a backend
 * needs nothing of tune's checker.  Its pieces:
 *
 *   space    three candidates that differ only in the buffer count: the
 *            whole output as one tile, the whole reduction as one chunk,
 *            natural loop order; buf=1 (the default), buf=2 and buf=3.
 *   compile  accepts any config but one deliberately illegal pattern,
 *            buf=3 (an odd ring this "hardware" cannot address), which it
 *            refuses with a compile-error message: the sweep must report
 *            that as compile-error and carry on.
 *   run      the host's evaluator on the module's entry arguments; a
 *            fresh output each call, so candidates never share buffers.
 *            It simulates one replica: enough for the example, not for
 *            fusions whose collectives need their peers.
 *   cost     a fixed simulated time per config: 10 us divided by the
 *            buffer count (double buffering hides the copy), so the sweep
 *            has a best config that is not the default.
 */
#include <stdio.h>
#include <stdlib.h>

#include "device/dev_backend.h"

/* The exported symbols; declared first so the definitions below have a
 * prototype in sight like every other external of the project. */
extern const dev_backend tune_backend_v1;
dev_backend_attach_fn tune_backend_attach_v1;

/* What tune offers; set once when tune loads this object. */
static const dev_host *host;

void tune_backend_attach_v1(const dev_host *h) { host = h; }

struct dev_kernel {
  const hlo_module *m; /* the caller's module: it outlives the kernel */
  uint64_t rng_seed;   /* the run's --seed (dev_fusion.rng_seed) */
  double cost_s;
};

static void whole_output_config(const dev_fusion *f, int buf, dev_config *c) {
  *c = (dev_config){0};
  c->rank = f->rank;
  for (int d = 0; d < f->rank; d++) {
    c->tile[d] = f->dims[d];
    c->order[c->norder++] = d;
  }
  c->k = f->k_total;
  if (c->k > 0)
    c->order[c->norder++] = DEV_ORDER_K;
  c->buf = buf;
  c->pack = 1;
  c->prec = DEV_PREC_DEFAULT;
  c->flags = 0;
}

static int example_space(const dev_fusion *f, const dev_machine *m, dev_config **cands, int *ncands,
                         dev_config *dflt, hlo_error *err) {
  (void)m;
  dev_config *c = malloc(3 * sizeof *c);
  if (!c)
    return hlo_error_set(err, 0, 0, "example backend: out of memory");
  for (int i = 0; i < 3; i++)
    whole_output_config(f, i + 1, &c[i]);
  *dflt = c[0];
  *cands = c;
  *ncands = 3;
  return 0;
}

static dev_status example_compile(const dev_fusion *f, const dev_config *cfg, const dev_machine *m,
                                  const dev_compiler *cc, dev_kernel **out, char *why, size_t why_len) {
  (void)m;
  (void)cc; /* a reference backend has no modelled defects */
  *out = NULL;
  if (cfg->buf == 3) {
    snprintf(why, why_len, "example backend: buf=3 is not supported (a ring of 3 buffers cannot be addressed)");
    return DEV_COMPILE_ERROR;
  }
  dev_kernel *k = malloc(sizeof *k);
  if (!k) {
    snprintf(why, why_len, "example backend: out of memory");
    return DEV_COMPILE_ERROR;
  }
  k->m = f->m;
  k->rng_seed = f->rng_seed;
  k->cost_s = 10e-6 / cfg->buf;
  *out = k;
  return DEV_OK;
}

static void example_run(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t jitter_seed, dev_run *out) {
  (void)jitter_seed; /* no modelled timing: every run is deterministic */
  *out = (dev_run){0};
  /* emulate_device and the rng seed follow what the sweep's reference
   * does, so that the two agree bit for bit and the example shows a clean
   * sweep. */
  dev_host_opts eo = {.replicas = 1, .emulate_device = 1, .rng_seed = k->rng_seed};
  hlo_error err = {0};
  hlo_value *v = NULL;
  if (!host) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "example backend: loaded by a host that offers no evaluator");
    return;
  }
  if (host->evaluate(k->m, nargs, args, &eo, &v, &err) != 0) {
    out->status = DEV_RUNTIME_ERROR;
    snprintf(out->message, sizeof out->message, "example backend: %d:%d: %.400s", err.line, err.col, err.msg);
    return;
  }
  out->status = DEV_OK;
  out->out = v;
  out->steps = 1; /* one tile: the whole output */
}

static double example_cost(const dev_kernel *k) { return k->cost_s; }

static void example_release(dev_kernel *k) { free(k); }

const dev_backend tune_backend_v1 = {
    .abi = DEV_BACKEND_ABI,
    .name = "example",
    .space = example_space,
    .compile = example_compile,
    .run = example_run,
    .cost = example_cost,
    .release = example_release,
    /* none: its kernels are the host's evaluator, whose accumulation order
     * is not the one dev_accum_depth derives from a config */
    .caps = 0,
};
