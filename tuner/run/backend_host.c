/* backend_host.c — dev_host over the reference evaluator (check/eval.h). */
#include "backend_host.h"

#include <stdlib.h>

#include "check/eval.h"

static int host_evaluate(const hlo_module *m, int nargs, hlo_value *const *args, const dev_host_opts *o,
                         hlo_value **out, hlo_error *err) {
  int reps = o && o->replicas > 1 ? o->replicas : 1;
  chk_eval_opts eo = {.replicas = reps,
                      .emulate_device = o ? o->emulate_device : 0,
                      .hook = o ? o->hook : NULL,
                      .hook_ctx = o ? o->hook_ctx : NULL,
                      .rng_seed = o ? o->rng_seed : 0};
  hlo_value *single[1];
  hlo_value **outs = single;
  if (reps > 1 && !(outs = calloc((size_t)reps, sizeof *outs)))
    return hlo_error_set(err, 0, 0, "out of memory");
  int rc = chk_eval_module(m, nargs, args, &eo, outs, err);
  if (rc == 0) {
    *out = outs[0];
    for (int r = 1; r < reps; r++)
      hlo_value_unref(outs[r]);
  }
  if (outs != single)
    free(outs);
  return rc;
}

static const dev_host host = {.evaluate = host_evaluate};

const dev_host *tn_backend_host(void) { return &host; }
