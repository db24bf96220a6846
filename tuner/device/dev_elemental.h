/* dev_elemental.h — evaluating the fused computation on one tile.
 *
 * The executor asks for the value of the kernel on a box of the output (the
 * tile) or of the hero's operands (one reduction chunk).  The evaluator
 * works like a tiled code generator: it first infers, walking back from the
 * requested node, the box of every instruction that the request needs
 * (elementwise ops need the same box of their operands, broadcast and
 * transpose map it, slice/reverse shift and mirror it, a reduce needs its
 * kept dims and all of its reduced dims, ...), then evaluates the needed
 * instructions in program order, each over its box, into dense arrays.
 * Parameters are read through the executor's callback (the VMEM window of
 * the current step); reading outside the window yields poison, which
 * propagates through every op and is tracked per element beside the value.
 *
 * Values are kept one 8-byte slot per element: floats as double (f32 math
 * is done in float and stored exactly; bf16/f16/f8 compute in f32 and round
 * to their type after every op, as the reference does), integers as int64
 * (unsigned types hold their bits, sign extension for signed), pred as 0/1.
 *
 * Ops evaluated elementally (the native set): parameter, constant, iota,
 * every real elementwise op, broadcast, transpose, reshape, bitcast, copy,
 * slice, reverse, pad, concatenate, reduce with a simple reducer
 * (add/multiply/maximum/minimum/and/or/xor of its parameters), dot, and
 * get-tuple-element.  Everything else is opaque: the executor materialises
 * it once per run from whole-array operands (dev_elem_materialize).  Gather,
 * dynamic-slice, dynamic-update-slice, scatter, sort, reduce-window,
 * convolution and reduce with a general or variadic reducer are then
 * computed by the device's own lowering, tiled by the config (dev_whole.h),
 * and so are the collectives (dev_collective.h: every replica's values are
 * materialised in lockstep).  The rest (map, calls, complex numbers, and
 * forms of the ops above that the device does not lower, e.g. a comparator that is not a lane program,
 * a reduce-window with a general reducer) is still handed,
 * as a single-op module, to the host evaluator the fusion carries
 * (dev_fusion.host, dev_host.h), which tune answers with the reference: a
 * known compromise (issue 14 item 1) that hides the reference's bugs on
 * those ops from the checker.  Without a host they are refused.
 */
#ifndef TUNE_DEV_ELEMENTAL_H
#define TUNE_DEV_ELEMENTAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dev_config.h"
#include "dev_fusion.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

typedef enum dev_elem_kind {
  DEV_EK_OPAQUE = 0,
  DEV_EK_PARAM,
  DEV_EK_CONST,
  DEV_EK_IOTA,
  DEV_EK_ELEMENTWISE,
  DEV_EK_BROADCAST,
  DEV_EK_TRANSPOSE,
  DEV_EK_RESHAPE, /* reshape (row-major order kept) and bitcast (physical
                     buffer kept, through the layouts: dev_layout.h) */
  DEV_EK_SLICE,
  DEV_EK_REVERSE,
  DEV_EK_PAD,
  DEV_EK_CONCAT,
  DEV_EK_REDUCE,
  DEV_EK_DOT,
  DEV_EK_GTE,
  DEV_EK_TUPLE
} dev_elem_kind;

dev_elem_kind dev_elem_classify(const hlo_instr *ins);

/* dev_elem_classify of every instruction of c, by index, one byte each
 * (dev_fusion.kinds): malloc'd, or NULL when out of memory. */
uint8_t *dev_elem_classify_all(const hlo_computation *c);

/* dev_elem_classify(ins), read from f->kinds when f is prepared
 * (dev_fusion_prepare) and ins is an instruction of its kernel. */
dev_elem_kind dev_elem_kind_of(const dev_fusion *f, const hlo_instr *ins);


/* One element slot. */
typedef union dev_slot {
  double f;
  int64_t i;
} dev_slot;

/* A dense box of one instruction's values. */
typedef struct dev_box {
  int rank;
  int64_t lo[HLO_MAX_RANK], n[HLO_MAX_RANK]; /* origin and extent */
  int64_t count;
  dev_slot *v;
  uint8_t *poison; /* NULL: nothing poisoned */
  int64_t cap;     /* slots the buffers hold (0: count); a recycled buffer
                      can be larger than the box it serves */
} dev_box;

/* How parameters are read: n elements of parameter `param` starting at
 * multi-index idx and running along its last dimension (n = 1 for a
 * scalar) into v; poison[i] set to 1 for an element that is poisoned
 * (outside the window, never DMA'd), else 0. */
typedef void dev_param_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison);

/* The same for the hero's finalised value (the executor's accumulators),
 * used when the epilogue reads the hero. */
typedef void dev_hero_read(void *ctx, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison);

typedef struct dev_elem dev_elem;

/* An f32 parameter's values in place: p with element k of the box
 * [lo, lo + n) (row-major) at p[k], as the rows a dev_param_read would
 * give for the box, nothing poisoned, when the parameter is f32, every
 * element of the box is defined and the box is one contiguous run where
 * they are kept; else NULL. */
typedef const float *dev_param_f32(void *ctx, int param, const int64_t *lo, const int64_t *n);

/* Prepares evaluation of kernel computation c (f->comp).  materialised[i]
 * (indexed by instruction index) may hold whole values of opaque ops. */
dev_elem *dev_elem_new(const dev_fusion *f, dev_precision prec);
void dev_elem_free(dev_elem *e);

/* The run's config, which the ops computed from whole operands
 * (dev_whole.h) tile by; without one they run as a single tile.  c must
 * outlive e's use. */
void dev_elem_set_config(dev_elem *e, const dev_config *cfg);
/* The run's timing-jitter seed, which decides where the dma-race defect
 * strikes in the whole-array lowerings (dev_stage.h). */
void dev_elem_set_jitter(dev_elem *e, uint64_t seed);

/* The lowering defects (dev_defect.h, a bit per dev_defect) whose
 * config-level condition the executor found met for this run; 0, the
 * default, is the clean device.  The ones that live in the elemental
 * lowering check their op-level condition themselves:
 *   elide-convert        converts of a float round trip S -> T -> S
 *   unsigned-cmp-signed  compares of unsigned integers
 *   scatter-s8-iota-wrap, sort-lane-index, dynslice-clamp-lost: passed to
 *                        the hero's own lowering (dev_scatter.c,
 *                        dev_sort.c, dev_dslice.c)
 * Call before dev_elem_materialize.  0, or -1 when out of memory. */
int dev_elem_set_defects(dev_elem *e, uint32_t active);

/* Requests that read parameters through pread may read an f32 parameter
 * in place through f32 (with the request's ctx) where every reader of its
 * box is an f32 elementwise op over the same box: no box of slots is
 * built for it, which was a conversion to double and back per element.
 * f32 NULL (the default) builds every box.  0, or -1 when out of memory. */
int dev_elem_set_f32_params(dev_elem *e, dev_param_read *pread, dev_param_f32 *f32);

/* Materialises every opaque instruction, from whole-array parameter values
 * (params[k] for kernel parameter k).  0, or -1 with a message. */
int dev_elem_materialize(dev_elem *e, hlo_value *const *params, char *why, size_t why_len);

/* Evaluates node over box want (rank = node's rank) into out (allocated by
 * the call; free with dev_box_free).  When hero_leaf is true the hero is read
 * through hero_read instead of being evaluated.  0 or -1 with why. */
int dev_elem_eval(dev_elem *e, const hlo_instr *node, const dev_box *want, bool hero_leaf,
                  dev_param_read *pread, dev_hero_read *hread, void *ctx, dev_box *out, char *why,
                  size_t why_len);

/* dev_elem_eval for a store of an f32 node: when the node is an f32
 * elementwise op that the evaluator computes in f32 rows (and no probe
 * watches), its values are written to f32[i] for element i of out's box,
 * exactly as storing out's slots would give them, out->v is left
 * unspecified (its poison is set) and *in_f32 is true.  Otherwise it is
 * dev_elem_eval and *in_f32 false.  f32 has room for want's elements.  The
 * slots skipped were a conversion to double and back per element of an
 * f32 epilogue's result. */
int dev_elem_eval_f32(dev_elem *e, const hlo_instr *node, const dev_box *want, bool hero_leaf,
                      dev_param_read *pread, dev_hero_read *hread, void *ctx, dev_box *out, float *f32,
                      bool *in_f32, char *why, size_t why_len);

/* The kernel parameter whose rows dev_elem_eval of node (not the hero
 * leaf) would read through its dev_param_read and return as they are:
 * node is a parameter of the kernel, not materialised, and no probe
 * watches the run.  A caller that reads such rows itself, already
 * converted, may then skip the request and its slots.  -1 otherwise. */
int dev_elem_param_row_source(const dev_elem *e, const hlo_instr *node);

void dev_box_free(dev_box *b);

/* A prepared fusion's spare per-instruction box arrays (dev_fusion.spares).
 * Every run of a candidate makes a dev_elem, whose array of one dev_box
 * per instruction is 59 MB at 200,000 instructions: above the heap's
 * mapping threshold, so a fresh one per run was mapped and faulted in
 * again every time.  dev_elem_free leaves its array here and the next
 * dev_elem_new of the same fusion, on any thread, takes it.  An array's
 * stale boxes are harmless: each request of dev_elem_eval sets the boxes
 * it uses before reading them, as it already does from one tile to the
 * next.  new: NULL when out of memory; free frees the arrays it holds. */
dev_elem_spares *dev_elem_spares_new(void);
void dev_elem_spares_free(dev_elem_spares *s);

/* Hands a box that dev_elem_eval returned back to e, whose next requests
 * reuse its buffers instead of allocating fresh ones (a kernel evaluates the
 * same boxes tile after tile).  The box's buffers are cleared; NULL e frees
 * them like dev_box_free. */
void dev_elem_box_release(dev_elem *e, dev_box *b);

/* Storage conversions between slots and host arrays of type t. */
void dev_slot_from_host(hlo_etype t, const void *p, int64_t i, dev_slot *v);
void dev_slot_to_host(hlo_etype t, dev_slot v, void *p, int64_t i);
/* The same for the n elements from element off of host array p: the
 * per-element conversions, with typed loops for the common types (every
 * parameter row read and every row stored goes through these). */
void dev_slots_from_host(hlo_etype t, const void *p, int64_t off, int64_t n, dev_slot *v);
void dev_slots_to_host(hlo_etype t, const dev_slot *v, int64_t n, void *p, int64_t off);

/* One element of elementwise instruction ins (dev_elem_classify gives
 * DEV_EK_ELEMENTWISE) on operand values x, with the device's clean
 * lowering: for the scalar computations ops call per element (sort
 * comparators, scatter combiners; dev_lane.h). */
dev_slot dev_elem_scalar_op(const hlo_instr *ins, const dev_slot *x);
/* A function computing exactly dev_elem_scalar_op(ins, x) for this ins,
 * chosen once (a lane program's step) instead of per element: a
 * specialised one for the common cases, else dev_elem_scalar_op. */
typedef dev_slot dev_elem_scalar_fn(const hlo_instr *ins, const dev_slot *x);
dev_elem_scalar_fn *dev_elem_scalar_lowering(const hlo_instr *ins);
/* Compares whose lowering orders integer keys (floats in the total
 * order): when dev_elem_compare_by_key(ins), dev_elem_scalar_op(ins, {x,
 * y}) is out[1 + sign(kx - ky)] for kx = dev_elem_compare_key(x), ky =
 * dev_elem_compare_key(y) and out from dev_elem_compare_outcomes(ins), so
 * an op comparing the same values many times (a sort) can derive each
 * value's key once. */
bool dev_elem_compare_by_key(const hlo_instr *ins);
int64_t dev_elem_compare_key(dev_slot x);
/* out[0], out[1], out[2]: the result when the left key is below, equal to,
 * above the right one. */
void dev_elem_compare_outcomes(const hlo_instr *ins, bool out[3]);

/* Applies a simple reducer op of element type t: acc = op(acc, x), with the
 * rounding of t (bf16/f16 round after each step, integers wrap). */
dev_slot dev_elem_reduce_step(hlo_opcode op, hlo_etype t, dev_slot acc, dev_slot x);
/* acc[i] = dev_elem_reduce_step(op, t, acc[i], x[i]) for i < n (a row of a
 * scatter-add), with the op and type dispatched once for f32. */
void dev_elem_reduce_steps(hlo_opcode op, hlo_etype t, dev_slot *acc, const dev_slot *x, int64_t n);

/* Dot arithmetic: the compute type of a dot with result type rt (f32 for
 * float results other than f64, f64, s64/u64 for integers), one
 * multiply-accumulate step with the device's numerics (hlo_num_dot_acc for f32)
 * on operand values of types at and bt, and the final rounding to rt. */
hlo_etype dev_elem_dot_ctype(hlo_etype rt);
dev_slot dev_elem_dot_step(hlo_etype ct, hlo_etype rt, dev_slot acc, dev_slot a, hlo_etype at, dev_slot b,
                           hlo_etype bt, dev_precision p);
dev_slot dev_elem_dot_combine(hlo_etype ct, dev_slot x, dev_slot y);
dev_slot dev_elem_dot_finish(hlo_etype ct, hlo_etype rt, dev_slot acc);
/* out[i] = dev_elem_dot_finish(ct, rt, acc[i]) for i < n. */
void dev_elem_dot_finish_block(hlo_etype ct, hlo_etype rt, const dev_slot *acc, dev_slot *out, int64_t n);

/* The value a materialised (opaque) instruction got, NULL otherwise. */
const hlo_value *dev_elem_value(const dev_elem *e, const hlo_instr *ins);

#endif
