/* utf8.c — valid UTF-8 for stored text (utf8.h). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* The second byte's range carries the rules against
 * overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF
 * (F4), as in the table of RFC 3629 section 4. */
size_t tn_utf8_seq(const unsigned char *p) {
  unsigned char c = p[0];
  if (c < 0x80)
    return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xBF) /* a NUL ends the check here too */
      return 0;
  return n;
}

void tn_utf8_write(FILE *f, const char *s, void (*ascii)(FILE *f, unsigned char c)) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  while (*p) {
    size_t n = tn_utf8_seq(p);
    if (n == 0)
      fputc('?', f);
    else if (n > 1)
      fwrite(p, 1, n, f);
    else
      ascii(f, *p);
    p += n ? n : 1;
  }
}

bool tn_utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t n = tn_utf8_seq(p);
    if (n == 0)
      return false;
    p += n;
  }
  return true;
}

char *tn_utf8_fix(const char *s) {
  size_t len = strlen(s);
  /* Each bad byte (one byte) becomes three. */
  if (len > ((size_t)-1 - 1) / 3)
    return NULL;
  char *out = malloc(3 * len + 1), *o = out;
  if (!out)
    return NULL;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t n = tn_utf8_seq(p);
    if (n == 0) {
      memcpy(o, "\xEF\xBF\xBD", 3);
      o += 3;
      p++;
    } else {
      memcpy(o, p, n);
      o += n;
      p += n;
    }
  }
  *o = '\0';
  return out;
}
