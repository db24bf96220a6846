/* shquote.c — strings on their way into a shell script (shquote.h). */
#include "shquote.h"

void tn_sh_quote(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

bool tn_sh_has_control(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f)
      return true;
  }
  return false;
}
