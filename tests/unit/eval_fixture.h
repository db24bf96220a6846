/* eval_fixture.h — the shared fixture of the reference evaluator's unit
 * tests: build parameter arrays, run HLO text through the public path
 * (hlo_parse -> chk_eval_module on one replica) and compare the result
 * element by element with hand-computed values.
 *
 * cmocka-based: every helper that can fail fails the calling test (with
 * fail_msg), so a test body reads as "inputs, eval, expected values".
 * Ownership: the eval helpers consume their args (one reference each); the
 * value they return belongs to the caller, except that fx_expect unrefs it. */
#ifndef TUNE_TESTS_EVAL_FIXTURE_H
#define TUNE_TESTS_EVAL_FIXTURE_H

#include <stdint.h>

#include "check/eval.h"
#include "hlo/hlo_parse.h"

/* Literal dims and values for the helpers' arguments. */
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})

/* An array of type t with the given dims, elements from vals (converted
 * with the type's rules); vals may be NULL for zeros. */
hlo_value *fx_array(hlo_etype t, int rank, const int64_t *dims, const double *vals);

/* A rank-0 array holding x converted to t. */
hlo_value *fx_scalar(hlo_etype t, double x);

/* An f32 array whose elements are the floats v, bit for bit. */
hlo_value *fx_f32_array(int rank, const int64_t *dims, const float *v);

/* Evaluates text on args; returns the root or NULL with err filled when
 * evaluation fails.  A parse failure fails the test. */
hlo_value *fx_eval_err(const char *text, int nargs, hlo_value **args, hlo_error *err);

/* Like fx_eval_err, but an evaluation failure fails the test. */
hlo_value *fx_eval(const char *text, int nargs, hlo_value **args);

/* The evaluation must fail with a message that contains needle. */
void fx_eval_fails(const char *text, int nargs, hlo_value **args, const char *needle);

/* Checks type, dims and every element (exact; NaN matches NaN) and unrefs v. */
void fx_expect(hlo_value *v, hlo_etype t, int rank, const int64_t *dims, const double *want);

/* v is f32 with n elements, each bitwise equal to want's (a NaN in want
 * matches any NaN).  Does not unref v. */
void fx_expect_f32(const hlo_value *v, int64_t n, const float *want);

#endif
