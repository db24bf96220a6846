/* utf8.h — text made valid UTF-8 before it is stored as UTF-8.
 *
 * The store declares its strings UTF-8 (h5py then hands them back as
 * str), but what it stores comes from files it did not write: module
 * text, op_name metadata, paths.  A byte sequence that is not UTF-8 would
 * make every reader that trusts the declaration fail (h5py's .asstr()
 * raises), so each byte that does not begin a well-formed sequence is
 * replaced with U+FFFD, the replacement character.  Valid text comes
 * through unchanged.
 */
#ifndef TUNE_UTF8_H
#define TUNE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Length of the well-formed sequence at p (1 to 4), or 0 when the byte at
 * p does not begin one; p's string is NUL-terminated. */
size_t tn_utf8_seq(const unsigned char *p);

/* Writes s (NULL: nothing) to f for a format that must be UTF-8 (JSON,
 * XML): each well-formed multi-byte sequence as it is, each byte that does
 * not begin one as '?', and each ASCII byte through ascii, which escapes
 * what the format needs escaped. */
void tn_utf8_write(FILE *f, const char *s, void (*ascii)(FILE *f, unsigned char c));

/* Is s (NUL-terminated) well-formed UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF)? */
bool tn_utf8_valid(const char *s);

/* A malloc'd copy of s with every byte that does not begin a well-formed
 * sequence replaced by U+FFFD; NULL when out of memory. */
char *tn_utf8_fix(const char *s);

#endif
