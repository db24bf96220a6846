/* dev_elemental_internal.h — what the files of the elemental evaluator
 * share: its state (struct dev_elem) and the functions one of them calls in
 * another.  Not part of the device's interface (that is dev_elemental.h);
 * included only by the evaluator's files:
 *   dev_elemental.c    which ops are native, boxes and their inference, the
 *                      evaluation of a request, setup
 *   dev_scalar.c       what one element of each op computes on the device
 *   dev_materialize.c  the whole values of the opaque instructions
 * Functions shared between them are prefixed dev_el_; each file keeps the
 * rest static. */
#ifndef TUNE_DEV_ELEMENTAL_INTERNAL_H
#define TUNE_DEV_ELEMENTAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dev_defect.h"
#include "dev_elemental.h"
#include "dev_probe.h"
#include "hlo/hlo_dtype.h"

/* ---- state ------------------------------------------------------------------ */

#define DEV_ELEM_POOL 32 /* recycled buffers kept (see struct dev_elem) */

struct dev_elem {
  const dev_fusion *f;
  const hlo_computation *c;
  dev_precision prec;
  const dev_config *cfg; /* the run's config (dev_elem_set_config), or NULL */
  dev_probe *probe;      /* dev_probe.h: an instrumented run; NULL on the plain path */
  uint32_t defects;      /* lowering defects the run's config triggers (bit
                            per dev_defect; dev_elem_set_defects) */
  bool *elide;           /* elide-convert: per instruction, a convert of a
                            round trip that the defect skips */
  dev_elem_kind *kind;   /* per instruction */
  bool *mat;             /* materialised (a leaf holding a whole value) */
  hlo_value **val;       /* materialised and constant values */
  hlo_value *const *params; /* whole parameters while materialising */
  int replica;           /* the replica whose values val holds (lockstep) */
  uint64_t jitter;       /* the run's timing-jitter seed (dev_elem_set_jitter) */
  dev_box *bx;           /* per-request scratch */
  bool *need;
  uint8_t *virt;         /* per request: an instruction its readers read
                            through without a box of its own (dev_elemental.c,
                            mark_virtual), else 0 */
  float *f32_out;        /* dev_elem_eval_f32: where the requested node's
                            values go as f32, else NULL */
  const hlo_instr *f32_node;
  bool f32_done;         /* they went there */
  dev_param_read *f32_pread; /* dev_elem_set_f32_params: requests through */
  dev_param_f32 *f32_param;  /* f32_pread read f32 parameters in place */
  const float **vf32;    /* per instruction: where a parameter marked
                            VIRT_F32_PARAM is read (NULL without f32_param) */
  int *last_use;         /* per request: the last instruction reading each
                            box, after which its buffers are recycled */
  /* Recycled box buffers.  A request evaluates every needed instruction
   * into a dense box; without reuse each one is a fresh multi-megabyte
   * allocation per tile, paid mostly in page faults.  Boxes go back here
   * as soon as their last reader is done (and the executor hands back the
   * boxes it got), so later instructions and later tiles reuse them. */
  struct dev_slab {
    dev_slot *v;
    uint8_t *poison;
    int64_t cap;
  } pool[DEV_ELEM_POOL];
  int npool;
};

/* ---- slots: built by the scalar ops and by the evaluator (iota, dot) ------- */

static inline dev_slot dev_el_fslot(double f) {
  dev_slot s;
  s.f = f;
  return s;
}

static inline dev_slot dev_el_islot(int64_t i) {
  dev_slot s;
  s.i = i;
  return s;
}

static inline dev_slot dev_el_wrap(hlo_etype t, uint64_t v) { return dev_el_islot((int64_t)hlo_int_wrap(t, v)); }

/* ---- defects and elementwise ops: dev_scalar.c lowers, the evaluator loops -- */

static inline bool dev_el_has_defect(const dev_elem *e, dev_defect d) { return (e->defects >> d) & 1u; }

/* One element of an elementwise instruction (dev_scalar.c), with the
 * defects e lowers with; eval_elementwise calls it per element. */
dev_slot dev_el_ew_apply(const dev_elem *e, const hlo_instr *ins, const dev_slot *x);

/* dev_el_ew_apply over n elements, operand j's k-th element at
 * x[j][k * step[j]] (a step of 0 repeats a scalar), for the ops it has a
 * row form of (a select; a compare of floats, integers or preds, an
 * unsigned one with e's unsigned-cmp-signed; a u32 add, subtract,
 * multiply, and, or, xor or logical shift); false, with out untouched,
 * for any other.  Per-element calls of dev_el_ew_apply look up the op,
 * its type class and its direction again for every element of what is
 * mostly a mask of a large tile. */
bool dev_el_ew_row(const dev_elem *e, const hlo_instr *ins, const dev_slot *const *x, const int64_t *step,
                   dev_slot *out, int64_t n);

#endif
