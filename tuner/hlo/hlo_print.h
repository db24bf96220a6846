/* hlo_print.h — hlo_module to canonical HLO text.
 *
 * Canonical means: one fixed spelling for every construct, so that
 * print(parse(print(m))) == print(m) byte for byte and parse(print(m)) is
 * equal to m under hlo_module_equal().  Raw attributes are written back
 * exactly as they were read.
 */
#ifndef TUNE_HLO_PRINT_H
#define TUNE_HLO_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hlo.h"

/* Returns malloc'd NUL-terminated text (caller frees) and its length in
 * *len when len is non-NULL; NULL when out of memory. */
char *hlo_print_module(const hlo_module *m, size_t *len);
/* Writes the text to f; 0 on success, -1 on a write error. */
int hlo_print_module_to(const hlo_module *m, FILE *f);
/* Shape text such as `f32[2,3]{1,0}` or `(f32[], s32[4])`; malloc'd. */
char *hlo_print_shape(const hlo_shape *s);

/* Structural equality of two modules: names, computations, instructions,
 * shapes with layouts, typed and raw attributes, literals (floats compared by
 * bit pattern), operand and callee identity by name.  When they differ and
 * why is non-NULL, a short description of the first difference is written
 * there. */
bool hlo_module_equal(const hlo_module *a, const hlo_module *b, char *why, size_t why_len);

#endif
