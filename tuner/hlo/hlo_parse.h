/* hlo_parse.h — HLO text to hlo_module.
 *
 * Accepts what XLA writes: modules with a header (`HloModule name, attrs`) and
 * header-less files of one or more computations, with or without `%`, with or
 * without operand shapes, layouts with tiles and memory spaces, dynamic
 * dimensions, every element type, comments.  Attributes with semantics are
 * typed (hlo.h); the rest are kept as raw text.
 */
#ifndef TUNE_HLO_PARSE_H
#define TUNE_HLO_PARSE_H

#include <stddef.h>

#include "hlo.h"
#include "hlo_error.h"

/* Parses len bytes of text (need not be NUL-terminated).  Returns a module
 * the caller frees with hlo_module_free(), or NULL with err filled in (line
 * and column of the offending token).  Never crashes on any input. */
hlo_module *hlo_parse(const char *text, size_t len, hlo_error *err);

#endif
