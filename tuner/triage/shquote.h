/* shquote.h — strings on their way into a shell script.
 *
 * run.sh in a reproducer bundle is built from strings stored in a results
 * file (the compiler, the command line, the fusion name...), and results
 * files travel: the README asks people to attach them to bug reports.  So
 * every such string is written as one single-quoted word ("'" becomes
 * "'\''"), inside which a shell expands nothing, and a string holding a
 * control character is refused before anything is written: a newline
 * would end a comment line, and no legitimate name holds one.
 */
#ifndef TUNE_SHQUOTE_H
#define TUNE_SHQUOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes s to f as one single-quoted shell word. */
void tn_sh_quote(FILE *f, const char *s);

/* Writes s into buf (n bytes, NUL-terminated when n > 0) as one shell
 * word: as it is when every character is one no shell treats specially
 * (letters, digits and _./:=,+-@%), single-quoted as tn_sh_quote writes
 * it otherwise.  Returns the whole word's length, as snprintf does: a
 * result of n or more means the word was cut. */
size_t tn_sh_word(char *buf, size_t n, const char *s);

/* True when s holds a control character (below 0x20, or 0x7f). */
bool tn_sh_has_control(const char *s);

#endif
