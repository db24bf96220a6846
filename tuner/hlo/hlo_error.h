/* hlo_error.h — errors as values.
 *
 * Library code never prints.  A failing call fills an hlo_error and returns a
 * failure value; the command line turns it into `FILE:LINE:COL: error: MSG`.
 * line/col are 1-based; 0 means "no position" (e.g. out of memory).
 */
#ifndef TUNE_HLO_ERROR_H
#define TUNE_HLO_ERROR_H

#include <stdarg.h>

typedef struct hlo_error {
  int line, col;
  char msg[512];
} hlo_error;

/* Sets err (when non-NULL) and returns -1, so `return hlo_error_set(...)`
 * reads naturally in functions that return int status. */
int hlo_error_set(hlo_error *err, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int hlo_error_vset(hlo_error *err, int line, int col, const char *fmt, va_list ap);

#endif
