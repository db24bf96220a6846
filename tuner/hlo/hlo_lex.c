/* hlo_lex.c — cursor, blanks and comments, token measurers.
 *
 * Every loop here is bounded by lx->end; the buffer may hold anything,
 * including NUL bytes, and is not terminated.  Line numbers advance only where
 * a newline can legally appear: blanks, comments, strings and raw values. */
#include "hlo_lex.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hlo_lex_init(hlo_lex *lx, const char *text, size_t len, hlo_error *err) {
  lx->p = text;
  lx->end = text + len;
  lx->line_start = text;
  lx->line = 1;
  lx->failed = false;
  lx->err = err;
}

int hlo_lex_error_at(hlo_lex *lx, hlo_pos pos, const char *fmt, ...) {
  if (lx->failed)
    return -1;
  lx->failed = true;
  va_list ap;
  va_start(ap, fmt);
  hlo_error_vset(lx->err, pos.line, pos.col, fmt, ap);
  va_end(ap);
  return -1;
}

int hlo_lex_error(hlo_lex *lx, const char *fmt, ...) {
  if (lx->failed)
    return -1;
  lx->failed = true;
  hlo_pos pos = hlo_lex_pos(lx);
  va_list ap;
  va_start(ap, fmt);
  hlo_error_vset(lx->err, pos.line, pos.col, fmt, ap);
  va_end(ap);
  return -1;
}

static void newline(hlo_lex *lx) {
  /* p points at the '\n' */
  lx->line++;
  lx->line_start = lx->p + 1;
}

/* Skips one comment starting at p ("//" or "/ *"); false if p is not at one. */
static bool skip_comment(hlo_lex *lx) {
  const char *p = lx->p;
  if (lx->end - p < 2 || p[0] != '/' || (p[1] != '/' && p[1] != '*'))
    return false;
  if (p[1] == '/') {
    const char *nl = memchr(p, '\n', (size_t)(lx->end - p));
    lx->p = nl ? nl : lx->end; /* the newline itself is a blank */
    return true;
  }
  hlo_pos start = hlo_lex_pos(lx);
  for (lx->p = p + 2; lx->p < lx->end; lx->p++) {
    if (*lx->p == '\n')
      newline(lx);
    else if (*lx->p == '*' && lx->p + 1 < lx->end && lx->p[1] == '/') {
      lx->p += 2;
      return true;
    }
  }
  hlo_lex_error_at(lx, start, "unterminated comment");
  return true;
}

int hlo_lex_peek_slow(hlo_lex *lx) {
  for (;;) {
    while (lx->p < lx->end) {
      char c = *lx->p;
      if (c == ' ' || c == '\t' || c == '\r')
        lx->p++;
      else if (c == '\n') {
        newline(lx);
        lx->p++;
      } else
        break;
    }
    if (lx->p >= lx->end)
      return HLO_LEX_EOF;
    if (*lx->p != '/' || !skip_comment(lx))
      return (unsigned char)*lx->p;
  }
}

bool hlo_lex_accept(hlo_lex *lx, char c) {
  if (hlo_lex_peek(lx) != (unsigned char)c)
    return false;
  lx->p++;
  return true;
}

bool hlo_lex_accept2(hlo_lex *lx, const char *s) {
  if (hlo_lex_peek(lx) != (unsigned char)s[0] || lx->end - lx->p < 2 || lx->p[1] != s[1])
    return false;
  lx->p += 2;
  return true;
}

int hlo_lex_at(const hlo_lex *lx, size_t k) {
  if ((size_t)(lx->end - lx->p) <= k)
    return HLO_LEX_EOF;
  return (unsigned char)lx->p[k];
}

void hlo_lex_skip(hlo_lex *lx) {
  if (lx->p < lx->end) {
    if (*lx->p == '\n')
      newline(lx);
    lx->p++;
  }
}

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A '-' belongs to a name unless it starts "->". */
static bool dash_continues(const char *p, const char *end) {
  return !(p + 1 < end && p[1] == '>');
}

static bool is_name_char(const char *p, const char *end) {
  char c = *p;
  return is_alpha(c) || is_digit(c) || c == '.' || (c == '-' && dash_continues(p, end));
}

size_t hlo_lex_name(hlo_lex *lx, const char **s) {
  const char *p = lx->p, *end = lx->end;
  if (p >= end)
    return 0;
  if (*p == '%') /* the sigil is optional and not part of the name */
    p++;
  if (p >= end || !is_alpha((unsigned char)*p))
    return 0;
  const char *start = p;
  while (p < end && is_name_char(p, end))
    p++;
  *s = start;
  lx->p = p;
  return (size_t)(p - start);
}

static const char *digits(const char *p, const char *end) {
  while (p < end && is_digit((unsigned char)*p))
    p++;
  return p;
}

size_t hlo_lex_number(hlo_lex *lx, const char **s) {
  const char *p = lx->p, *end = lx->end, *start = p;
  if (p < end && *p == '-')
    p++;
  if (p >= end || !is_digit((unsigned char)*p))
    return 0;
  if (*p == '0' && end - p > 2 && (p[1] == 'x' || p[1] == 'X') && is_hex((unsigned char)p[2])) {
    p += 2;
    while (p < end && is_hex((unsigned char)*p))
      p++;
  } else {
    p = digits(p, end);
    if (p < end && *p == '.')
      p = digits(p + 1, end);
    if (p < end && (*p == 'e' || *p == 'E')) {
      const char *q = p + 1;
      if (q < end && (*q == '+' || *q == '-'))
        q++;
      if (q < end && is_digit((unsigned char)*q))
        p = digits(q, end);
    }
  }
  *s = start;
  lx->p = p;
  return (size_t)(p - start);
}

size_t hlo_lex_decimal(hlo_lex *lx, const char **s) {
  const char *p = lx->p, *end = lx->end, *start = p;
  if (p < end && *p == '-')
    p++;
  if (p >= end || !is_digit((unsigned char)*p))
    return 0;
  p = digits(p, end);
  *s = start;
  lx->p = p;
  return (size_t)(p - start);
}

size_t hlo_lex_word(hlo_lex *lx, const char **s) {
  const char *p = lx->p, *end = lx->end, *start = p;
  while (p < end) {
    char c = *p;
    if (is_alpha((unsigned char)c) || is_digit((unsigned char)c) || c == '+' || c == '?' ||
        (c == '-' && dash_continues(p, end)))
      p++;
    else
      break;
  }
  *s = start;
  lx->p = p;
  return (size_t)(p - start);
}

/* Moves p past a string whose opening quote is at p; false (error recorded)
 * when the input ends first. */
static bool skip_string(hlo_lex *lx) {
  hlo_pos start = hlo_lex_pos(lx);
  for (lx->p++; lx->p < lx->end; lx->p++) {
    char c = *lx->p;
    if (c == '\\' && lx->p + 1 < lx->end && lx->p[1] != '\0')
      c = *++lx->p; /* the escaped byte is looked at below, but never ends the string */
    else if (c == '"') {
      lx->p++;
      return true;
    }
    if (c == '\n')
      newline(lx);
    else if (c == '\0') {
      /* stored strings are C strings: a NUL would cut them short */
      hlo_lex_error(lx, "unexpected NUL byte in string");
      return false;
    }
  }
  hlo_lex_error_at(lx, start, "unterminated string");
  return false;
}

size_t hlo_lex_string(hlo_lex *lx, const char **s) {
  if (lx->p >= lx->end || *lx->p != '"')
    return 0;
  const char *open = lx->p;
  if (!skip_string(lx))
    return 0;
  *s = open + 1;
  return (size_t)(lx->p - open - 2);
}

static char closer_of(char c) { return c == '(' ? ')' : c == '[' ? ']' : '}'; }

size_t hlo_lex_raw_value(hlo_lex *lx, const char **s) {
  char want[HLO_LEX_MAX_DEPTH];
  hlo_pos opened[HLO_LEX_MAX_DEPTH];
  int depth = 0;
  const char *start = lx->p;
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (c == '"') {
      if (!skip_string(lx))
        return 0;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (depth == HLO_LEX_MAX_DEPTH) {
        hlo_lex_error(lx, "nesting too deep");
        return 0;
      }
      opened[depth] = hlo_lex_pos(lx);
      want[depth++] = closer_of(c);
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0)
        break;
      if (want[depth - 1] != c) {
        hlo_lex_error(lx, "unbalanced '%c': expected '%c'", c, want[depth - 1]);
        return 0;
      }
      depth--;
    } else if (c == '\0') {
      hlo_lex_error(lx, "unexpected NUL byte");
      return 0;
    } else if (c == '\n') {
      if (depth == 0)
        break;
      newline(lx);
    } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r')) {
      break;
    } else if (depth == 0 && c == '/' && lx->p + 1 < lx->end && (lx->p[1] == '/' || lx->p[1] == '*')) {
      break;
    }
    lx->p++;
  }
  if (depth > 0) {
    char w = want[depth - 1];
    hlo_lex_error(lx, "unexpected end of input: '%c' opened at %d:%d is never closed",
                  w == ')' ? '(' : w == ']' ? '[' : '{', opened[depth - 1].line, opened[depth - 1].col);
    return 0;
  }
  *s = start;
  return (size_t)(lx->p - start);
}
