/* eval_custom.h — which custom-calls the evaluator knows (eval_custom.c
 * holds the table and the semantics of each target).  Internal to the
 * evaluator. */
#ifndef TUNE_CHECK_EVAL_CUSTOM_H
#define TUNE_CHECK_EVAL_CUSTOM_H

#include <stdbool.h>

#include "hlo.h"

/* Whether the custom-call ins has a known target, or carries the
 * computation that defines it (a composite). */
bool chk_custom_call_known(const hlo_module *m, const hlo_instr *ins);

/* The composite's computation: to_apply=, calls= or a one-element
 * called_computations={c}; NULL when it names none. */
const hlo_computation *chk_custom_call_computation(const hlo_module *m, const hlo_instr *ins);

#endif
