/* eval_custom.h — which custom-calls the evaluator knows (eval_custom.c
 * holds the table and the semantics of each target).  Internal to the
 * evaluator. */
#ifndef TUNE_CHECK_EVAL_CUSTOM_H
#define TUNE_CHECK_EVAL_CUSTOM_H

#include <stdbool.h>

#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

/* Whether the custom-call ins has a known target, or carries the
 * computation that defines it (a composite). */
bool chk_custom_call_known(const hlo_module *m, const hlo_instr *ins);

/* The composite's computation: to_apply=, calls= or a one-element
 * called_computations={c}; NULL when it names none. */
const hlo_computation *chk_custom_call_computation(const hlo_module *m, const hlo_instr *ins);

/* The one computation a custom-call names (to_apply=, calls= or
 * called_computations={c}), composite or not; NULL when none. */
const hlo_computation *chk_custom_call_named(const hlo_module *m, const hlo_instr *ins);

/* Targets whose evaluator lives in a file of its own (the table in
 * eval_custom.c names them). */
struct chk_eval;
hlo_value *chk_custom_igamma_grad_a(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_polygamma(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_betainc(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_partial_reduce(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_qr(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_householder_product(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);
hlo_value *chk_custom_tridiagonal_solve(struct chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops);

/* The special functions behind them (eval_math.c), in double, for tests. */
double chk_digamma(double x);
double chk_polygamma(double n, double x);
double chk_igamma_grad_a(double a, double x);
double chk_betainc(double a, double b, double x);

#endif
