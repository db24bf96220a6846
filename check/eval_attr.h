/* eval_attr.h — readers of the attributes the parser keeps as raw text
 * (backend_config JSON, `{1,2}` lists), shared by the evaluator's op
 * files.  Internal to the evaluator. */
#ifndef TUNE_CHECK_EVAL_ATTR_H
#define TUNE_CHECK_EVAL_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo.h"

/* A list of integers between open and close (`{1, 2}`, `["1", 2]`):
 * blanks, commas and quotes between the numbers are skipped.  The count,
 * or -1 when text does not start with open, a number is malformed or there
 * are more than max. */
int chk_parse_ints(const char *text, char open, char close, int64_t *out, int max);

/* The raw attribute `name={1,2}` of ins as a list (chk_parse_ints); -1
 * when absent or malformed. */
int chk_raw_ints(const hlo_instr *ins, const char *name, int64_t *out, int max);

/* The raw attribute's text, unquoted and unescaped when it was written as
 * a string; NULL when absent or out of memory (the caller frees). */
char *chk_raw_attr(const hlo_instr *ins, const char *name);

/* The text after `"key":` in a JSON object, blanks skipped; NULL when the
 * key does not occur.  The first occurrence wins: for configs whose keys
 * are unique. */
const char *chk_json_value(const char *json, const char *key);

/* A number (proto JSON may quote it); def when the key is absent, false
 * when the value is no number. */
bool chk_json_number(const char *json, const char *key, double def, double *out);

/* A list of integers `["1", 2]`: the count, 0 when absent, -1 when
 * malformed. */
int chk_json_ints(const char *json, const char *key, int64_t *out, int max);

/* A string value into out (at most n - 1 characters); false when absent
 * or no string. */
bool chk_json_string(const char *json, const char *key, char *out, size_t n);

#endif
