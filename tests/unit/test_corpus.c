/* test_corpus.c — conformance: parse every real XLA module in the corpus.
 *
 * Usage: test_corpus [DIR]
 *   DIR defaults to $TUNE_CORPUS, else <srcdir>/../shared/corpus/xla-hlo
 *   (srcdir from the environment, as automake's test driver sets it, or the
 *   TUNE_TOP_SRCDIR macro, or ".").
 *
 * Every *.hlo file is parsed in sorted order; each refused module is listed
 * as `file:line:col: error: msg`.  Each parsed module is then round-tripped
 * through the printer: print -> parse -> print must be byte-identical and
 * the re-parsed module must equal the first under hlo_module_equal().  The
 * last line is `N parsed, M refused, R round-tripped`.
 *
 * Exit status: 77 (automake's SKIP) when the folder is absent, 1 when any
 * module is refused or fails the round trip, 0 otherwise.
 *
 * Build with -DTUNE_CORPUS_NO_ROUNDTRIP to leave the printer out (the
 * summary then reads `N parsed, M refused`).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_walk.h"
#include "hlo/hlo_parse.h"
#ifndef TUNE_CORPUS_NO_ROUNDTRIP
#include "hlo/hlo_print.h"
#endif

#ifndef TUNE_TOP_SRCDIR
#define TUNE_TOP_SRCDIR "."
#endif

#ifndef TUNE_CORPUS_NO_ROUNDTRIP
/* print -> parse -> print is byte-identical and parse(print(m)) == m. */
static bool round_trip(const char *file, const hlo_module *m) {
  size_t len1, len2;
  char *t1 = hlo_print_module(m, &len1);
  if (!t1) {
    printf("%s: round trip: printing failed\n", file);
    return false;
  }
  hlo_error err;
  hlo_module *m2 = hlo_parse(t1, len1, &err);
  bool ok = false;
  if (!m2) {
    printf("%s: round trip: printed text refused at %d:%d: %s\n", file, err.line, err.col, err.msg);
  } else {
    char *t2 = hlo_print_module(m2, &len2);
    char why[256] = "";
    if (!t2)
      printf("%s: round trip: printing the re-parsed module failed\n", file);
    else if (len1 != len2 || memcmp(t1, t2, len1) != 0)
      printf("%s: round trip: print(parse(print(m))) differs from print(m)\n", file);
    else if (!hlo_module_equal(m2, m, why, sizeof why))
      printf("%s: round trip: parse(print(m)) differs from m: %s\n", file, why);
    else
      ok = true;
    free(t2);
  }
  hlo_module_free(m2);
  free(t1);
  return ok;
}
#endif

/* The corpus beside the source tree, for runs outside make check. */
static const char *default_dir(char *buf, size_t n) {
  const char *src = getenv("srcdir");
  snprintf(buf, n, "%s/../shared/corpus/xla-hlo", src && *src ? src : TUNE_TOP_SRCDIR);
  return buf;
}

int main(int argc, char **argv) {
  char dbuf[4096];
  const char *dir = cw_corpus_dir(argc, argv);
  if (!dir)
    dir = default_dir(dbuf, sizeof dbuf);
  cw_names names;
  int rc = cw_list_hlo(dir, &names);
  if (rc != 0)
    return rc;

  int parsed = 0, refused = 0, tripped = 0;
  for (size_t i = 0; i < names.count; i++) {
    const char *name = names.name[i];
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *text = cw_read_file(path, &len);
    if (!text) {
      printf("%s: error: cannot read: %s\n", path, strerror(errno));
      refused++;
      continue;
    }
    hlo_error err;
    hlo_module *m = hlo_parse(text, len, &err);
    if (!m) {
      printf("%s:%d:%d: error: %s\n", name, err.line, err.col, err.msg);
      refused++;
    } else {
      parsed++;
#ifndef TUNE_CORPUS_NO_ROUNDTRIP
      tripped += round_trip(name, m);
#endif
    }
    hlo_module_free(m);
    free(text);
  }
  cw_names_free(&names);
#ifndef TUNE_CORPUS_NO_ROUNDTRIP
  printf("%d parsed, %d refused, %d round-tripped\n", parsed, refused, tripped);
  return refused || tripped != parsed ? 1 : 0;
#else
  (void)tripped;
  printf("%d parsed, %d refused\n", parsed, refused);
  return refused ? 1 : 0;
#endif
}
