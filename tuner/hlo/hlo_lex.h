/* hlo_lex.h — the character layer under the HLO parser.
 *
 * HLO text is not regular enough for one fixed token set: `3x3`, `1_1x0_2`,
 * `b01f_01io->b01f` and `{2,1,0:T(8,128)}` all mean different things in
 * different attributes.  So the lexer is a cursor over the buffer that knows
 * how to skip blanks and comments and how to measure the few token shapes HLO
 * has (names, numbers, strings, balanced raw values); the parser decides at
 * each point which one it expects.  Nothing here allocates, and nothing ever
 * reads at or past `end`: the buffer is not NUL-terminated.
 *
 * Errors: the first error wins.  hlo_lex_error() records a message with a
 * position only if none was recorded before, so a failure deep inside the
 * parser is never overwritten by a vaguer one on the way out.
 */
#ifndef TUNE_HLO_LEX_H
#define TUNE_HLO_LEX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "hlo_error.h"

enum { HLO_LEX_EOF = -1 };

typedef struct hlo_lex {
  const char *p;          /* next unread byte */
  const char *end;        /* one past the last byte */
  const char *line_start; /* first byte of the current line (for columns) */
  int line;               /* 1-based line of p */
  bool failed;            /* an error has been recorded */
  hlo_error *err;         /* where errors go; may be NULL */
} hlo_lex;

/* A saved position, for errors reported after the cursor moved on. */
typedef struct hlo_pos {
  int line, col;
} hlo_pos;

void hlo_lex_init(hlo_lex *lx, const char *text, size_t len, hlo_error *err);

/* Skips blanks and comments and returns the next byte (0..255), or
 * HLO_LEX_EOF at the end.  An unterminated block comment records an error
 * and reads as the end of input.  The parser peeks several times at each
 * token, so the common case (already at a token) is inline. */
int hlo_lex_peek_slow(hlo_lex *lx);
static inline int hlo_lex_peek(hlo_lex *lx) {
  if (lx->p < lx->end) {
    unsigned char c = (unsigned char)*lx->p;
    if (c > ' ' && c != '/')
      return c;
  }
  return hlo_lex_peek_slow(lx);
}
/* Consumes c when it is the next byte after blanks; true when it did. */
bool hlo_lex_accept(hlo_lex *lx, char c);
/* Consumes the two-byte operator s ("->", "<=") when it comes next. */
bool hlo_lex_accept2(hlo_lex *lx, const char *s);
/* The byte k positions after p with no skipping, or HLO_LEX_EOF. */
int hlo_lex_at(const hlo_lex *lx, size_t k);
/* Consumes one byte (never a newline: callers use it on known bytes). */
void hlo_lex_skip(hlo_lex *lx);

/* Position of p; columns count bytes from 1. */
static inline hlo_pos hlo_lex_pos(const hlo_lex *lx) {
  ptrdiff_t col = lx->p - lx->line_start + 1;
  hlo_pos pos = {lx->line, col > INT_MAX ? INT_MAX : (int)col};
  return pos;
}

/* Token measurers.  Each expects p at the token's first byte (call
 * hlo_lex_peek first), consumes the token and returns its length, or returns
 * 0 and consumes nothing when no such token starts here. */

/* `%`? [A-Za-z_][A-Za-z0-9_.-]*: the same names with or without the sigil,
 * so a printer that drops `%` writes text that reads back.  A `-` directly
 * before `>` ends the name, so `b01f->` reads as `b01f` then `->`.  *s is
 * set past the `%`, and the returned length excludes it. */
size_t hlo_lex_name(hlo_lex *lx, const char **s);
/* -?(digits(.digits)?([eE][+-]?digits)? | 0x hexdigits) */
size_t hlo_lex_number(hlo_lex *lx, const char **s);
/* -?digits: integers in attributes, where `0x1` must read as 0, `x`, 1. */
size_t hlo_lex_decimal(hlo_lex *lx, const char **s);
/* A run of [0-9A-Za-z_+?-] bytes: the body of `3x3`, `1_1x0_2`,
 * `b01f_01io`: the parser splits it itself. */
size_t hlo_lex_word(hlo_lex *lx, const char **s);
/* A quoted string with backslash escapes.  *s/return cover the text between
 * the quotes, escapes undecoded.  On an unterminated string it records an
 * error and returns 0 (check lx->failed). */
size_t hlo_lex_string(hlo_lex *lx, const char **s);
/* An attribute value kept as text: everything up to a `,`, a blank or an
 * unmatched closer at depth 0, with (), [], {} balanced and strings skipped
 * whole.  Records an error and returns 0 on unbalanced or unterminated
 * input; returns 0 without error when no value starts here. */
size_t hlo_lex_raw_value(hlo_lex *lx, const char **s);

/* Records an error at pos (or at p) unless one is recorded already.
 * Always returns -1. */
int hlo_lex_error_at(hlo_lex *lx, hlo_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int hlo_lex_error(hlo_lex *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Deepest () [] {} nesting a raw value may have. */
enum { HLO_LEX_MAX_DEPTH = 64 };

#endif
