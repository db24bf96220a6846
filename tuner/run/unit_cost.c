/* unit_cost.c — the estimated work of checking a unit (unit_cost.h).
 *
 * Flops and bytes are added as if one byte cost one flop: the device's
 * model is not consulted, because what matters is the order of units
 * whose sizes differ by orders of magnitude, and the host evaluator, not
 * the simulated device, is what takes the time. */
#include "unit_cost.h"

#include <stdlib.h>

#include "device/dev_fusion.h"
#include "device/dev_space.h"

static double kernel_cost(const hlo_module *um, const dev_machine *mach, int budget) {
  dev_fusion f;
  hlo_error err = {0};
  if (dev_fusion_analyze(um, &f, &err) != 0)
    return 0;
  dev_config *cands = NULL, dflt;
  int n = 0;
  if (dev_space_enumerate(&f, mach, &cands, &n, &dflt, &err) != 0)
    n = 1;
  free(cands);
  if (budget > 0 && n > budget)
    n = budget;
  return ((double)f.flops + (double)f.in_bytes + (double)f.out_bytes + 1.0) * (double)(n > 0 ? n : 1);
}

double tn_unit_cost(const hlo_module *m, const tn_unit *u, const dev_machine *mach, int budget) {
  if (!u->ins)
    return kernel_cost(m, mach, budget);
  hlo_error err = {0};
  hlo_module *um = tn_unit_module(m, u, &err);
  double cost = um ? kernel_cost(um, mach, budget) : 0;
  hlo_module_free(um);
  return cost;
}
