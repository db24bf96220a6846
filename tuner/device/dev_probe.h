/* dev_probe.h — an instrumented run of one intact kernel (issue 16 item 3,
 * the paper's micro inspection, §3.2): what every instruction inside the
 * fusion produced, without splitting the fusion.
 *
 * The executor evaluates a kernel's instructions tile by tile into boxes
 * (dev_elemental.h) and materialises the ops it does not tile as whole
 * values.  A probe attached to a run sees each of those as it is produced
 * and folds it into a per-instruction summary: f32 min, max, mean and
 * standard deviation (the paper's 16-byte budget) over the finite
 * elements, with NaN and Inf counts alongside (a complex element, an
 * fft's, folds as its real and its imaginary part).  A box can overlap the one
 * of an earlier tile (a halo, a recomputed broadcast operand): each
 * element is folded once, the first time it is produced, and elements of
 * a ragged tile outside the array or poisoned are not folded at all.
 *
 * The probe also keeps each instruction's elements as produced, in its
 * own element type, so that the caller can compare them with a reference
 * and keep the full tensors of the few instructions it wants.  That costs
 * one copy of every instruction's first array leaf for the duration of
 * the run.  Tuple-shaped instructions (a variadic reduce, a sort of
 * several operands) are not probed; their get-tuple-elements are.
 *
 * The probe only reads what the executor produced: a probed run computes
 * exactly what the plain run does (tests/unit/test_dev_probe.c checks the
 * output bits on every dataset fusion).
 */
#ifndef TUNE_DEV_PROBE_H
#define TUNE_DEV_PROBE_H

#include <stdint.h>

#include "dev_backend.h"
#include "dev_elemental.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

/* The summary of one instruction's produced elements. */
typedef struct dev_probe_summary {
  float min, max, mean, std; /* over finite elements; 0 when none */
  int64_t nan, inf;          /* NaN and +-Inf elements (complex: parts) */
  int64_t observed;          /* elements folded */
  int64_t count;             /* elements of the instruction's array */
} dev_probe_summary;

typedef struct dev_probe dev_probe;

/* A probe for the instructions of computation c (a kernel's fused
 * computation); NULL when out of memory. */
dev_probe *dev_probe_new(const hlo_computation *c);
void dev_probe_free(dev_probe *p);

/* Hooks the executor calls (NULL p: nothing).  box holds instruction
 * ins's values over its extent; v is ins's whole value. */
void dev_probe_box(dev_probe *p, const hlo_instr *ins, const dev_box *box);
void dev_probe_value(dev_probe *p, const hlo_instr *ins, const hlo_value *v);

/* Was instruction index i probed at all?  Its summary (zeroed when not). */
int dev_probe_seen(const dev_probe *p, int i);
dev_probe_summary dev_probe_summary_of(const dev_probe *p, int i);

/* Instruction i's array as produced (one new reference), with the
 * elements never produced taken from fill (same type and dims; NULL:
 * zero); NULL when not probed or out of memory. */
hlo_value *dev_probe_tensor(const dev_probe *p, int i, const hlo_value *fill);

/* Tells e to call the probe's hooks (dev_elemental.c); NULL detaches. */
void dev_elem_set_probe(dev_elem *e, dev_probe *p);

/* Runs a kernel of the built-in simulated device (dev_sim_backend) like
 * its run(), with p attached to the kernel's executor (dev_sim.c). */
void dev_sim_run_probed(dev_kernel *k, hlo_value *const *args, int nargs, uint64_t jitter_seed, dev_probe *p,
                        dev_run *out);

#endif
