/* json_out.c — see json_out.h. */
#include "json_out.h"

#include <math.h>

#include "store/utf8.h"

/* One ASCII byte inside a string literal. */
static void json_ascii(FILE *f, unsigned char c) {
  if (c == '"' || c == '\\')
    fprintf(f, "\\%c", c);
  else if (c == '\n')
    fputs("\\n", f);
  else if (c == '\t')
    fputs("\\t", f);
  else if (c < 0x20 || c == 0x7f)
    fprintf(f, "\\u%04x", c);
  else
    fputc(c, f);
}

void tn_json_str(FILE *f, const char *s) {
  fputc('"', f);
  tn_utf8_write(f, s, json_ascii);
  fputc('"', f);
}

void tn_json_num(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.17g", x);
  else
    fputs("null", f);
}
