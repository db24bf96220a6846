/* shquote.c — strings on their way into a shell script (shquote.h).
 *
 * Both writers below go through quote_with(), so there is one rule for
 * what a quoted word looks like, whether it lands in a FILE (run.sh, the
 * commands --check prints) or in a buffer (the commands a report shows). */
#include <string.h>

#include "shquote.h"

/* Where quote_with() sends its pieces. */
typedef void (*put_fn)(void *to, const char *piece, size_t len);

/* Emits s single-quoted; a quote inside becomes '\'' (close, an escaped
 * quote, reopen), the one character a single-quoted word cannot hold. */
static void quote_with(put_fn put, void *to, const char *s) {
  put(to, "'", 1);
  for (const char *run = s;;) {
    const char *q = strchr(run, '\'');
    size_t len = q ? (size_t)(q - run) : strlen(run);
    if (len)
      put(to, run, len);
    if (!q)
      break;
    put(to, "'\\''", 4);
    run = q + 1;
  }
  put(to, "'", 1);
}

static void put_file(void *to, const char *piece, size_t len) { fwrite(piece, 1, len, (FILE *)to); }

void tn_sh_quote(FILE *f, const char *s) { quote_with(put_file, f, s); }

/* A buffer being filled snprintf-style: `at` counts every byte asked for,
 * only those that fit before the last byte are stored. */
typedef struct {
  char *buf;
  size_t n, at;
} word_buf;

static void put_buf(void *to, const char *piece, size_t len) {
  word_buf *w = to;
  if (w->at + 1 < w->n) {
    size_t room = w->n - 1 - w->at;
    memcpy(w->buf + w->at, piece, len < room ? len : room);
  }
  w->at += len;
}

/* Characters no POSIX shell gives a meaning to in any position of a word. */
static bool is_plain(const char *s) {
  if (!*s)
    return false; /* an empty word must be written '' */
  return s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=,+-@%")] == '\0';
}

size_t tn_sh_word(char *buf, size_t n, const char *s) {
  word_buf w = {buf, n, 0};
  if (is_plain(s))
    put_buf(&w, s, strlen(s));
  else
    quote_with(put_buf, &w, s);
  if (n > 0)
    buf[w.at < n ? w.at : n - 1] = '\0';
  return w.at;
}

bool tn_sh_has_control(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f)
      return true;
  }
  return false;
}
