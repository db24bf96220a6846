/* eval_internal.h — what the evaluator's files share; not for other layers.
 *
 * The driver (eval.c) walks computations and calls one op function per
 * instruction.  Op functions live in one file per family and have one
 * signature: they get the instruction and its operand values for one
 * replica and return a new value (one reference) or NULL after chk_fail().
 * Operands must not be modified: values are shared.
 */
#ifndef TUNE_CHECK_EVAL_INTERNAL_H
#define TUNE_CHECK_EVAL_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "eval.h"

typedef struct chk_eval {
  const hlo_module *m;
  chk_eval_opts o;
  hlo_error *err;
  int depth;       /* nested computation calls, bounded */
  int failed;
  double deadline; /* CLOCK_MONOTONIC seconds; 0: none (o.time_budget) */
  int64_t work;    /* units of work since the clock was last read */
  int64_t transfers; /* host transfers (infeed, host recv) so far */
  const hlo_instr *unhooked; /* a start op's stand-in: the hook sees the
                                start, and everything the stand-in calls,
                                but not the stand-in itself */
} chk_eval;

/* The deadline (chk_eval_opts.time_budget).  chk_time_up reads the clock:
 * past the deadline it records the error at ins (chk_fail) and returns
 * true, so the caller unwinds as for any failure.  It is called from the
 * evaluating thread only, between (never inside) parallel regions: long
 * ops run their work in sequential slices of about CHK_SLICE_WORK units
 * (multiply-adds, element visits) and ask after each slice. */
bool chk_time_up(chk_eval *ev, const hlo_instr *ins);
/* Whether the deadline has passed, recording nothing: safe from any
 * thread, for the rare loop whose single unit of work (one block of a
 * huge window) is itself long; its caller reports through chk_time_up. */
bool chk_past_deadline(const chk_eval *ev);

/* Units of work per slice of a long op: a few milliseconds of its inner
 * loop, so the clock costs nothing measurable and a deadline is overrun by
 * little. */
enum { CHK_SLICE_WORK = 1 << 22 };
/* Units between clock reads of chk_tick: an instruction of that many
 * elements, or that many scalar instructions, takes tens of microseconds
 * at least, against tens of nanoseconds for the clock. */
enum { CHK_TICK_WORK = 1 << 16 };

/* chk_time_up for work that comes in many small units (instructions,
 * scalar computations called per element, while iterations): the clock is
 * read once every CHK_TICK_WORK units. */
static inline bool chk_tick(chk_eval *ev, const hlo_instr *ins, int64_t units) {
  if (!(ev->deadline > 0))
    return false;
  if (units < CHK_TICK_WORK - ev->work) { /* no sum: units may be near INT64_MAX */
    ev->work += units > 0 ? units : 1;
    return false;
  }
  ev->work = 0;
  return chk_time_up(ev, ins);
}

/* Rows per slice for a loop whose rows cost row_work units each: at
 * least 1, so a slice is about CHK_SLICE_WORK units of work. */
static inline int64_t chk_slice_rows(int64_t row_work) {
  return row_work >= CHK_SLICE_WORK ? 1 : CHK_SLICE_WORK / (row_work > 0 ? row_work : 1);
}

/* Records an error at ins (its line/col, its name and opcode prefixed to
 * the message) and returns NULL, so op functions can `return chk_fail(...)`. */
hlo_value *chk_fail(chk_eval *ev, const hlo_instr *ins, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* chk_fail for an op that already holds a result r: the message is
 * formatted first (it may read r's dims), then r is released. */
hlo_value *chk_fail_unref(chk_eval *ev, const hlo_instr *ins, hlo_value *r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The result of a variadic op (scatter, sort) from its n result arrays:
 * a tuple of them when ins's shape is a tuple, else the one array.  The
 * arrays taken are set to NULL in arrays[]; the caller releases what is
 * left.  NULL after chk_fail ("a <what> of n operands must have a tuple
 * shape", or out of memory). */
hlo_value *chk_variadic_result(chk_eval *ev, const hlo_instr *ins, int n, hlo_value **arrays,
                               const char *what);

static inline bool chk_is_array(const hlo_value *v) { return v && v->type != HLO_TUPLE; }

/* The es bytes at p (1, 2, 4 or 8: one element) as an unsigned integer,
 * for bitwise comparisons of elements of any type. */
static inline uint64_t chk_load_bits(const void *p, size_t es) {
  switch (es) {
  case 1: return *(const uint8_t *)p;
  case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
  case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
  default: { uint64_t x; memcpy(&x, p, 8); return x; }
  }
}

/* An index operand's element i as a signed integer; unsigned values above
 * INT64_MAX saturate (they stay out of range, clamping high) instead of
 * wrapping negative.  For dynamic-slice, dynamic-update-slice, gather and
 * scatter (eval_movement.c). */
int64_t chk_index_value(const hlo_value *v, int64_t i);

/* A result array shaped like ins->shape (which must be an array shape),
 * zero-filled; NULL after chk_fail on allocation failure. */
hlo_value *chk_result(chk_eval *ev, const hlo_instr *ins);
/* The same, not zero-filled: only for kernels that write every element. */
hlo_value *chk_result_uninit(chk_eval *ev, const hlo_instr *ins);

/* Evaluates computation c for nrep replicas in lockstep.  args is row-major
 * [nrep][c->nparams]; res receives nrep values.  replica_base is the
 * replica id of row 0 (per-element calls use one row). */
int chk_eval_computation(chk_eval *ev, const hlo_computation *c, int nrep,
                         hlo_value *const *args, hlo_value **res);

/* Calls a computation on single-replica scalar/array arguments (one row).
 * For per-element calls (general reducers, map, sort comparators, scatter
 * combiners).  Returns the root value or NULL after an error. */
hlo_value *chk_call(chk_eval *ev, const hlo_instr *site, const hlo_computation *c,
                    int nargs, hlo_value *const *args);

typedef hlo_value *chk_op_fn(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);

/* Families (one file each).  Each returns NULL via chk_fail for an opcode
 * or type it does not handle. */
chk_op_fn chk_op_elementwise;  /* eval_elementwise.c: unary, binary, compare,
                                  select, clamp, convert, bitcast-convert,
                                  reduce-precision, is-finite, popcnt, clz */
chk_op_fn chk_op_movement;     /* eval_movement.c: broadcast, reshape, bitcast,
                                  copy, transpose, slice, dynamic-slice,
                                  dynamic-update-slice, concatenate, pad,
                                  reverse, iota */
chk_op_fn chk_op_reduce;       /* eval_reduce.c: reduce, reduce-window, map */
chk_op_fn chk_op_dot;          /* eval_dot.c: dot */
chk_op_fn chk_op_convolution;  /* eval_conv.c: convolution */
chk_op_fn chk_op_gather;       /* eval_gather.c: gather, scatter */
chk_op_fn chk_op_sort;         /* eval_sort.c: sort */
chk_op_fn chk_op_topk;         /* eval_topk.c: topk */
chk_op_fn chk_op_rng;          /* eval_rng.c: rng, rng-bit-generator */
/* Whether a rng-bit-generator names an algorithm with defined bits. */
bool chk_rng_algorithm_known(const hlo_instr *ins);
chk_op_fn chk_op_fft;          /* eval_fft.c: fft (FFTW) */
chk_op_fn chk_op_custom_call;  /* eval_custom.c: custom-calls of known targets */
chk_op_fn chk_op_select_and_scatter; /* eval_select_scatter.c */
chk_op_fn chk_op_ragged_dot;   /* eval_ragged_dot.c */
chk_op_fn chk_op_scaled_dot;   /* eval_scaled_dot.c */
chk_op_fn chk_op_triangular_solve; /* eval_triangular_solve.c */
chk_op_fn chk_op_dynamic;      /* eval_dynamic.c: set-dimension-size,
                                  get-dimension-size */

/* Host transfers (eval_feed.c).  Whether ins is an infeed, an outfeed, a
 * recv from the host or the recv-done of one; the value of one execution
 * of an infeed or host recv (synthesised data, the same for every replica)
 * or of an outfeed (a token); recv-done's (data, token) from its recv's
 * value. */
bool chk_feed_supported(const hlo_instr *ins);
hlo_value *chk_feed_value(chk_eval *ev, const hlo_instr *ins);
hlo_value *chk_recv_done(chk_eval *ev, const hlo_instr *ins, const hlo_value *recv);


/* The top-k kernel of topk and __gpu$TopK (eval_topk.c): ins's shape is
 * (values, s32 indices) with k elements in the last dimension. */
hlo_value *chk_topk(chk_eval *ev, const hlo_instr *ins, const hlo_value *x, bool largest);

/* What dot and convolution share (eval_dot.c, whose header documents the
 * numerics).  The compute type for a result type: f32 for f32, bf16, f16
 * and f8, f64 for f64, wrapping 64-bit integers for integer results;
 * HLO_INVALID for other results. */
hlo_etype chk_dot_compute_type(hlo_etype out);
/* v's elements in compute type ct (integer results convert through the
 * result type out first).  Returns v's own data when no conversion is
 * needed, else a malloc'd buffer that *owned also receives (the caller frees
 * *owned); NULL when memory runs out. */
const void *chk_dot_operand(const hlo_value *v, hlo_etype out, hlo_etype ct, void **owned);
/* Validates one side of a dot's dimension lists and fills the canonical
 * order [batch..., free..., contracting...] (free_first: the lhs) or
 * [batch..., contracting..., free...] (the rhs) as sizes and element
 * strides of v, and free_sizes with the free dims' sizes in order.  The
 * number of free dims, or -1 when a list names a dim twice or out of range. */
int chk_dot_side_order(const hlo_value *v, const hlo_ints *batch, const hlo_ints *contr, bool free_first,
                       int64_t *size, int64_t *stride, int64_t *free_sizes);

/* Copies src into dst in row-major order of nd dims of the given sizes,
 * where step d of the destination moves src by sstride[d] elements.  esz is
 * 4 or 8.  Threads split large copies; the bytes do not depend on them. */
void chk_permute_copy(void *dst, const void *src, size_t esz, int nd, const int64_t *size,
                      const int64_t *sstride);

/* Collectives see every replica: ops is [nrep][noperands], outs [nrep]. */
int chk_op_collective(chk_eval *ev, const hlo_instr *ins, int nrep,
                      hlo_value *const *ops, hlo_value **outs); /* eval_collective.c */

/* The family function for an opcode, NULL when the driver handles it
 * itself (parameter, constant, tuple, get-tuple-element, call, fusion,
 * while, conditional, collectives, replica-id) or it is unsupported. */
chk_op_fn *chk_op_lookup(hlo_opcode op);

#endif
