/* dev_host.h — what the device may ask of the host above it: evaluating a
 * module with the host's HLO semantics.
 *
 * The device sits below check (DESIGN.md §3), so it cannot call the
 * reference evaluator itself.  It declares the service here instead, and
 * whoever builds a dev_fusion (the tuner, which sees both layers) hands it
 * an implementation in dev_fusion.host.  A loaded backend receives the same
 * service through tune_backend_attach_v1 (dev_backend.h).
 *
 * The built-in device still needs it for the ops it does not compute with
 * its own code (dev_elemental.h): the collectives, which see every
 * replica's operand, and single ops it has no lowering for (custom-calls,
 * map, calls...).  Without a host those ops are refused with an error.
 */
#ifndef TUNE_DEV_HOST_H
#define TUNE_DEV_HOST_H

#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"

/* Called on every instruction the host evaluates, after its value is
 * computed: operands[0..noperands) are its operands' values, and the hook
 * may replace *value (unref the old one). */
typedef void dev_host_hook(void *ctx, const hlo_instr *ins, hlo_value *const *operands, int noperands,
                           hlo_value **value);

typedef struct dev_host_opts {
  int replicas;       /* simulated replicas, >= 1; *out is replica 0's */
  int emulate_device; /* the device numerics of hlo_numerics.h (bf16 dot
                         passes, approximations, FTZ), as tune's reference
                         applies them when it judges a candidate */
  dev_host_hook *hook; /* optional; every instruction then runs op by op */
  void *hook_ctx;
  uint64_t rng_seed;  /* keys the values rng draws (XLA leaves them
                         undefined): pass the run's --seed (dev_fusion's
                         rng_seed) so they equal the reference's */
} dev_host_opts;

typedef struct dev_host {
  /* Evaluates m's entry computation with the host's reference semantics on
   * args (one per entry parameter, in order; the caller keeps its
   * references).  0 with *out set (one reference), or -1 with err naming the
   * instruction and what went wrong. */
  int (*evaluate)(const hlo_module *m, int nargs, hlo_value *const *args, const dev_host_opts *o,
                  hlo_value **out, hlo_error *err);
} dev_host;

#endif
