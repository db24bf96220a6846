/* inputs.h — seeded, reproducible input synthesis for evaluation and checking.
 *
 * Counter based: the bits of element i of parameter k under seed s are a
 * pure function of (s, k, i) — a hash, not the state of a sequential
 * generator — so the same seed gives the same inputs whatever the thread
 * count, the tiling or the order elements are filled in, and any element
 * can be recomputed on its own (a reproducer needs no stored inputs).
 *
 * Profiles say what distribution to draw from.  NAIVE draws every element
 * independently:
 *   real floats   uniform in [-1, 1), rounded once to the type (a value that
 *                 rounds up to 1.0 wraps to -1.0 so the range stays half
 *                 open); f8e8m0fnu, which has no sign and no zero, gets the
 *                 powers of two 2^-8 .. 2^-1
 *   complex       real and imaginary parts as above, independently
 *   signed ints   uniform in [-8, 8] (cut to the type: s4 is [-8, 7])
 *   unsigned ints uniform in [0, 16) (cut to the type: u2 is [0, 3])
 *   pred          0 or 1
 * CONSTRAINED (what --check and --eval use by default) draws from the range
 * the backward interval analysis (intervals.h) demands of each parameter,
 * intersected with the naive range: only the mapping of the uniform draw
 * changes, so a parameter with no demand gets exactly its naive bits.  A
 * divisor gets |x| in [0.5, 1] with a random sign, a log argument
 * [1/16, 1], a reduce init the reducer's neutral element, sort keys
 * distinct values: float keys a seeded permutation of an even grid when the
 * type can hold that many, integer keys a seeded permutation of n
 * consecutive integers (centred on 0 for signed types; a type too narrow
 * for n distinct keys repeats each value as evenly as it can).
 * EDGE is CONSTRAINED plus, in one element in four, a value chosen to hurt
 * where the range allows it: +0 and -0, the smallest subnormal, the largest
 * magnitude the range permits (near overflow when nothing bounds it), and
 * repeats of one value (ties); sort keys, float or integer, take eight
 * values in all, so that ties are everywhere.
 * OOB_INDICES is CONSTRAINED except that index parameters are drawn in
 * [-2, max start + 2], so dynamic-slice clamping and gather/scatter
 * out-of-bounds handling are exercised instead of avoided.
 * SPECIAL is CONSTRAINED except that one element in four of some float
 * parameters is +0, -0 or the smallest subnormal of either sign, and about
 * max(4, n/4096) of its n elements each are NaN, +inf and -inf (f16, bf16,
 * f32, f64: the types that have them all).  A
 * parameter gets them when nothing is demanded of its range and every use
 * of it, followed through ops that only move values and into called
 * computations, is an operand of maximum, minimum, clamp, compare, select
 * (the picked operands), a max or min reduction, or a sort: the ops whose
 * treatment of NaN and signed zeros is part of their semantics (NaN
 * propagates through maximum and minimum, -0 < +0 for them; sort under
 * TOTALORDER orders -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN).  A
 * sort whose comparator is not a TOTALORDER compare gets no NaN: NaN
 * breaks a FLOAT compare's strict weak order, and the sort's result is
 * then not defined.  Non-finite values these inputs carry to the outputs
 * are deliberate, and the intent analysis (intent.h) is told so.
 *
 * Index parameters: an integer parameter that feeds a gather or scatter
 * index operand, or a dynamic-slice / dynamic-update-slice start, is drawn
 * in [0, max start] for that use, so the evaluated module does real
 * indexing instead of clamping (or, for scatter, skipping) everything.  The
 * uses are followed into called fusions and calls, and through ops that
 * only move or convert values (convert, copy, reshape, bitcast, broadcast,
 * transpose, slice, concatenate, reverse).  When the index vector is a
 * dimension of the parameter itself, each component gets the bound of the
 * operand dimension it indexes.
 */
#ifndef TUNE_CHECK_INPUTS_H
#define TUNE_CHECK_INPUTS_H

#include <stdbool.h>
#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"
#include "intervals.h"

/* NAIVE is 0 so that zero-initialised options keep the historical inputs;
 * the command line picks CONSTRAINED unless told otherwise. */
typedef enum chk_inputs_profile {
  CHK_INPUTS_NAIVE = 0,
  CHK_INPUTS_CONSTRAINED,
  CHK_INPUTS_EDGE,
  CHK_INPUTS_OOB_INDICES,
  CHK_INPUTS_SPECIAL,
  CHK_INPUTS_PROFILE_COUNT
} chk_inputs_profile;

/* "naive", "constrained", "edge", "oob-indices", "special". */
const char *chk_inputs_profile_name(chk_inputs_profile p);
/* 0 with *p set, or -1 for a name that is no profile. */
int chk_inputs_profile_from_name(const char *name, chk_inputs_profile *p);

typedef struct chk_inputs_opts {
  uint64_t seed;
  chk_inputs_profile profile;
} chk_inputs_opts;

/* 64 well-mixed bits for (seed, stream, counter).  Streams are entry
 * parameters (leaves of tuple parameters get their own streams). */
uint64_t chk_inputs_bits(uint64_t seed, uint64_t stream, uint64_t counter);

#define CHK_INPUTS_MAX_COMPONENTS 16

/* A bound on an index-like parameter: element values are drawn in
 * [0, hi[c]], where c is the element's coordinate along dimension `axis`
 * of the parameter (axis = -1: hi[0] for every element). */
typedef struct chk_inputs_index {
  bool set;
  int axis;
  int ncomp;
  int64_t hi[CHK_INPUTS_MAX_COMPONENTS];
} chk_inputs_index;

/* Fills idx[k] for each entry parameter k (m->entry->nparams entries);
 * idx[k].set is false for parameters with no index-like use. */
void chk_inputs_find_index_params(const hlo_module *m, chk_inputs_index *idx);

/* Overwrites every element of array v with the profile's values for
 * stream `stream`; idx (may be NULL) bounds an integer parameter, range
 * (may be NULL: no demand) is the parameter's demanded range, used by every
 * profile but NAIVE. */
void chk_inputs_fill(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_inputs_index *idx);
void chk_inputs_fill_range(hlo_value *v, const chk_inputs_opts *o, uint64_t stream, const chk_inputs_index *idx,
                           const chk_range *range);

/* One new value per entry parameter of m, in parameter order (args has
 * m->entry->nparams slots; each receives one reference).  -1 with err on
 * an unsupported parameter type or out of memory, args untouched. */
int chk_inputs_make(const hlo_module *m, const chk_inputs_opts *o, hlo_value **args, hlo_error *err);

#endif
