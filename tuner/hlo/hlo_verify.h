/* hlo_verify.h — structural and shape checks on a parsed module.
 *
 * The parser guarantees syntax and name resolution; the verifier checks what
 * text cannot: that names are defined once and before use, that called
 * computations exist and have the right arity, and that operand counts and
 * shapes are consistent for every op evaluation supports (elementwise shape
 * equality, broadcast dimensions, reshape element counts, dot, reduce, slice
 * bounds, ...).  Ops it has no rule for are accepted as they are.
 */
#ifndef TUNE_HLO_VERIFY_H
#define TUNE_HLO_VERIFY_H

#include "hlo.h"
#include "hlo_error.h"

/* 0 when the module is consistent; -1 with err at the offending instruction's
 * line and column otherwise. */
int hlo_verify(const hlo_module *m, hlo_error *err);

#endif
