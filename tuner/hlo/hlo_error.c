#include "hlo_error.h"

#include <stdio.h>

int hlo_error_vset(hlo_error *err, int line, int col, const char *fmt, va_list ap) {
  if (err) {
    err->line = line;
    err->col = col;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return -1;
}

int hlo_error_set(hlo_error *err, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hlo_error_vset(err, line, col, fmt, ap);
  va_end(ap);
  return -1;
}
