/* corpus_walk.h — the folder walk shared by the conformance tests that run
 * over every module of a corpus folder (test_corpus, test_eval_corpus), and
 * whole-file reading for them and for the tests that load datasets/.
 *
 * Not cmocka-based: the corpus tests are plain programs that report to
 * stdout and exit with automake's codes (0, 1, 77 = SKIP). */
#ifndef TUNE_TESTS_CORPUS_WALK_H
#define TUNE_TESTS_CORPUS_WALK_H

#include <stddef.h>

enum { CW_SKIP = 77 }; /* automake's exit status for a skipped test */

/* The folder a corpus test was asked to walk: argv[1] when given, else
 * $TUNE_CORPUS when set and non-empty, else NULL. */
const char *cw_corpus_dir(int argc, char **argv);

/* The *.hlo file names of a folder, sorted with strcmp. */
typedef struct {
  char **name;
  size_t count;
} cw_names;

/* Lists dir into *out (owned by the caller: cw_names_free).  Returns 0;
 * CW_SKIP after printing why when dir is NULL or empty ("TUNE_CORPUS is not
 * set; skipping") or cannot be opened ("corpus folder DIR: reason;
 * skipping"); or 2 after perror when memory runs out. */
int cw_list_hlo(const char *dir, cw_names *out);

void cw_names_free(cw_names *names);

/* The whole file at path (malloc'd, the caller frees; not NUL-terminated)
 * and its length in *len; NULL with errno set when it cannot be read. */
char *cw_read_file(const char *path, size_t *len);

#endif
