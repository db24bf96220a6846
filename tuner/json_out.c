/* json_out.c — see json_out.h. */
#include "json_out.h"

#include <math.h>

#include "utf8.h"

void tn_json_str(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  fputc('"', f);
  while (*p) {
    size_t len = tn_utf8_seq(p);
    if (len == 0) {
      fputc('?', f);
      p++;
      continue;
    }
    if (len > 1) {
      fwrite(p, 1, len, f);
      p += len;
      continue;
    }
    unsigned char c = *p++;
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
  fputc('"', f);
}

void tn_json_num(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.17g", x);
  else
    fputs("null", f);
}
