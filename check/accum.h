/* accum.h — every floating-point accumulation of a fusion, element by
 * element, and what its legitimate reordering can do to each output.
 *
 * Configs of one fusion legitimately differ only where a sum is reordered:
 * an add-reduce or a dot.  For each such instruction of the kernel (every
 * one, not only the hero), the reference's probe evaluation records, beside
 * each element e of its value, S_e = sum|t_i| over that element's terms (a
 * dot's terms are the products a_i b_i, a reduce's include its init).  With
 * the coefficient G of tolerance.h, G S_e bounds how far two orders of that
 * sum can lie apart at e.
 *
 * The outputs are often not the sum itself but something computed from it
 * (softmax divides by it, layernorm subtracts it).  How each output element
 * moves is measured, not guessed: the reference is evaluated twice more per
 * accumulation with its value shifted element by element by +- 2 (h S_e +
 * R_e), h = min(G_max, 1) the widest coefficient the sweep will use (R_e:
 * see below), and dy[leaf][i] is the largest change of output element i.
 * A comparison whose coefficient for that accumulation is G then allows
 * 2 dy G / h at i: the change is first order in the shift, and the factor 2
 * covers the curvature of the ops after the sum over a shift this small.
 * The accumulations' contributions add (triangle inequality).
 *
 * R_e: a dot whose result type is narrower than the type it accumulates in
 * (a bf16 result of an f32 accumulation) rounds once at the end; two
 * accumulators within G S_e can round to neighbouring values of the result
 * type, R_e = 2 u_res |v_e| further apart.  Where R is present its share
 * does not scale with G, so the allowance is 2 dy max(G / h, 1).
 *
 * What counts as an accumulation: a reduce of one float array with the
 * plain add reducer (its S_e exact); a float dot (S_e = sum|a_i||b_i| of
 * the operands before any bf16 pass rounding, times 1 + 2^-6, which covers
 * the rounding of both operands to bf16 (each at most 2^-8 relative) and the
 * f64 evaluation of the sum itself); a float reduce with any other reducer
 * that is not max or min (its terms are not known as a sum: S_e = K max|x|
 * + |init|, the bound of the whole output as before).  max/min reduces
 * round nothing and are not accumulations; integer ones are exact.  Nor is
 * an add-reduce whose every output element takes at most one non-zero
 * term from a zero init, in the evaluation the probe sees (a one-hot pick,
 * select(label == iota, x, 0) summed over the iota's dimension): x plus
 * zeros is x in any order, so its outputs must match to the bit (issue 13,
 * item 3; a subnormal term keeps it an accumulation, since the device
 * flushes those).
 *
 * Noise (the noise-floor criterion of tolerance.h).  For an accumulation
 * in f32, the probe also measures rho: how far legitimate orders of the
 * actual terms lie from their exact sum, as a fraction of the bound
 * g S_e of two K-deep orders (g = chk_tol_coef for depth K on both sides),
 * the largest over the elements.  An add-reduce of an f32 array is summed
 * in f64 (exact for up to 2^29 terms of f32 in the same binade, and within
 * 2^-53 relative of each partial sum otherwise) and in f32 in six orders:
 * the reference's sequential one, the reverse, 2, 4 and 8 interleaved
 * accumulators (combined in order), and chunks of 128 added in order; the
 * interleaved orders matter where the terms have structure (signs
 * alternating element by element make two accumulators each sum one sign).
 * A dot compares the reference's own sequential sum and, for an f32
 * result, 2, 4 and 8 interleaved accumulators (each lane the reference's
 * dot of the lhs with the other lanes' contraction indices zeroed, as the
 * reference emulating the device forms it) with the f64 sum of the
 * products the device forms (the lanes up to 2^28 products; the lanes, the
 * f64 sum and that dot's S_e, the same f64 sum of |a_i||b_i| the f64 dot
 * of |lhs| and |rhs| makes, come from one walk of each element's
 * products, chk_accums_dot_sums): the operands flushed and, at DEFAULT
 * precision, rounded to bf16 (products exact in f32); at HIGH and HIGHEST
 * the full products, which differ from the device's pass products by at
 * most 2^-16 of each product and so can only raise rho.  Other
 * accumulations (a bf16 or f64 one, a reducer other than add) are not
 * measured (rho = -1).  An instruction evaluated several times (a loop)
 * keeps the largest rho.
 */
#ifndef TUNE_CHECK_ACCUM_H
#define TUNE_CHECK_ACCUM_H

#include <stdbool.h>
#include <stdint.h>

#include "eval.h"
#include "hlo/hlo.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"
#include "replay.h"

#define CHK_ACCUM_MAX 16
#define CHK_ACCUM_MAX_LEAVES 256

typedef struct chk_accum {
  const hlo_instr *ins;
  bool is_dot;
  hlo_etype acc_type;  /* the type its adds round to (f32 for a bf16 dot) */
  int64_t k;           /* terms per element (a reduce: the reduced elements) */
  int64_t n;           /* elements of its value */
  double *abs_sum;     /* S_e, n of them */
  double *round;       /* R_e, or NULL when the result does not round again */
  double h;            /* the coefficient the measurement shifted by */
  double noise;        /* rho (see above), or -1: not measured */
  double *dy[CHK_ACCUM_MAX_LEAVES]; /* dy[leaf][i], NULL: the leaf does not move */
} chk_accum;

typedef struct chk_accums {
  const hlo_computation *kernel; /* only its own instructions are recorded */
  int n;
  chk_accum a[CHK_ACCUM_MAX];
  int nleaves;
  int dropped;  /* accumulations beyond CHK_ACCUM_MAX (their outputs are
                   then compared as if they had none: see accum.c) */
  bool failed;  /* out of memory while recording */
  chk_replay replay; /* the probe's values the measurement reuses */
} chk_accums;

/* The chk_eval_hook of the probe evaluation (ctx: a chk_accums whose kernel
 * is set and the rest zeroed): records every accumulation of the kernel,
 * and the values the measurement's replays read (replay.h).  The probe
 * evaluation must therefore be one the measurement's eval repeats exactly
 * (same module, arguments and options but the hook). */
void chk_accums_probe(void *ctx, const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value);

/* A walk of an f32 dot made while the reference evaluated it
 * (chk_accums_dot_eval): the S_e and rho the probe would measure of it. */
typedef struct chk_dot_walk {
  double *abs_sum; /* S_e, n of them, malloc'd (chk_dot_walk_free) */
  int64_t n;
  double rho;
} chk_dot_walk;

/* The reference's value of f32 dot ins on ops, as the evaluator with
 * emulate_device gives it (eval_dot.c), formed by the probe's own walk of
 * the dot's products, which measures S_e and rho of that value in the same
 * pass (the evaluator's dot and then the probe's walk of it otherwise run
 * over the same products twice).  1 with *value (one reference) and *w
 * filled; 0 when this dot is not one the walk gives the reference's bits
 * for (a NaN part, a result other than f32, more products than the probe
 * walks, ...): evaluate it as usual; -1 when memory ran out. */
int chk_accums_dot_eval(const hlo_instr *ins, hlo_value *const *ops, int nops, hlo_value **value, chk_dot_walk *w);
void chk_dot_walk_free(chk_dot_walk *w);

/* chk_accums_probe, for a call whose dot was evaluated by
 * chk_accums_dot_eval on the same operands (w its walk; NULL: none): takes
 * S_e and rho from w instead of walking the dot again. */
void chk_accums_probe_walked(chk_accums *A, const hlo_instr *ins, hlo_value *const *ops, int nops,
                             hlo_value **value, const chk_dot_walk *w);

/* What the probe reads of each instruction of kernel when the hook shows
 * it: CHK_PROBE_READS_ALL, its operands and value (an accumulation);
 * CHK_PROBE_READS_VALUE, its value (one the measurement's replays read);
 * 0, only that it was shown (a call with no operands and a NULL value
 * leaves the probe in the same state).  For one who keeps an evaluation's
 * calls to show them to the probe later, holding no more than it reads.
 * kernel->ninstrs entries, malloc'd; NULL when out of memory. */
enum { CHK_PROBE_READS_VALUE = 1, CHK_PROBE_READS_ALL = 2 };
unsigned char *chk_accums_probe_reads(const hlo_computation *kernel);

/* Evaluates the reference with the given hook, as the caller always does
 * (replicas, device numerics); 0, or -1 with err. */
typedef int chk_accums_eval_fn(void *ctx, chk_eval_hook *hook, void *hook_ctx, hlo_value **out, hlo_error *err);

/* The measurement above; g_max[j] is the widest coefficient any comparison
 * will use for accumulation j.  reference is the probe's result.  Each
 * output element's move is taken under the shift of g_max and under a
 * sixteenth of it, scaled up sixteen times after discounting what
 * rounding alone makes of it: the larger stands, so that an output that
 * saturates (tanh after a sum) is not credited with less sensitivity for a
 * narrow comparison than it has at the narrow scale.  Each shifted
 * evaluation recomputes only what the shifted accumulation reaches when
 * the probe's recording allows it (replay.h), and all of the module
 * otherwise; the recording is dropped on return.  0, or -1 with err. */
int chk_accums_measure(chk_accums *A, const hlo_value *reference, const double *g_max, chk_accums_eval_fn *eval,
                       void *eval_ctx, hlo_error *err);

/* The per-element allowance of output leaf `leaf` (n elements) for a
 * comparison with coefficient g[j] for accumulation j: *map is a malloc'd
 * array the caller frees, or NULL when no accumulation moves the leaf.
 * -1 when memory ran out: comparing the leaf exactly instead would report
 * a legitimate reordering as a mismatch. */
int chk_accums_leaf_map(const chk_accums *A, int leaf, int64_t n, const double *g, double **map);

void chk_accums_free(chk_accums *A);

/* The sums an f32 dot's noise measurement compares (above), for every
 * output element e of `dot` (an f32 result) applied to ops, formed in one
 * walk of e's products: exact[e] the f64 sum of the products as the device
 * forms them, and sums[3 e + i] the sum, in lane order, of P = 2 << i
 * interleaved f32 accumulators, lane p taking the products whose
 * contraction index k (row-major over the contracting dims, in their
 * listed order) has k % P == p, each product and add as the reference
 * emulating the device forms them; with abs_sum not NULL, abs_sum[e] the
 * S_e the probe records (the f64 dot of |lhs| and |rhs|, k ascending from
 * 0, times 1 + 2^-6).  0, or -1 with err (out of memory, or dimension
 * numbers that do not fit the operands). */
int chk_accums_dot_sums(const hlo_instr *dot, hlo_value *const *ops, double *exact, float *sums, double *abs_sum,
                        hlo_error *err);

#endif
