/* json_out.h — JSON values written to a stream, for `--check --json` and
 * `--report --format json`.
 *
 * What goes into a string comes from files tune did not write (module
 * text, op names, paths), and JSON text must be UTF-8: each byte that does
 * not begin a well-formed sequence (utf8.h) is written as '?', so the
 * output always parses.  JSON has no NaN or infinity: those numbers are
 * written as null. */
#ifndef TUNE_JSON_OUT_H
#define TUNE_JSON_OUT_H

#include <stdio.h>

/* A string literal, quotes included; NULL is written as "". */
void tn_json_str(FILE *f, const char *s);

/* A number with every digit a double needs to read back the same bits,
 * or null when x is not finite. */
void tn_json_num(FILE *f, double x);

#endif
