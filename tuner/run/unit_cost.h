/* unit_cost.h — how much work checking one unit is estimated to be.
 *
 * Two schedulers need only the order of units by work, not a time: the MPI
 * dispatcher hands out the largest first (so the last to finish is small),
 * and --check under --run-time-budget runs the smallest first (so a run
 * that runs out of time leaves only the costliest unchecked).
 */
#ifndef TUNE_UNIT_COST_H
#define TUNE_UNIT_COST_H

#include "device/dev_machine.h"
#include "hlo/hlo.h"
#include "units.h"

/* The estimated cost of checking unit u of m with `budget` candidates
 * (0: the whole space): the candidates times the kernel's flops plus the
 * bytes it reads and writes, in arbitrary units.  0 for a unit that
 * cannot be analysed, which fails fast. */
double tn_unit_cost(const hlo_module *m, const tn_unit *u, const dev_machine *mach, int budget);

#endif
