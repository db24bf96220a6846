/* suggest.h — "did you mean": the known name closest to a mistyped one.
 *
 * Close means an edit distance (insertions, deletions, substitutions and
 * swaps of two neighbours) of at most a third of the word's length, at
 * least 1; a word that is a prefix of exactly one known name also
 * suggests it.  Ties go to the first in the list.
 */
#ifndef TUNE_SUGGEST_H
#define TUNE_SUGGEST_H

/* The closest of names[0..n), or NULL when none is close. */
const char *tn_suggest(const char *word, const char *const *names, int n);

/* The names tune knows of each kind, for suggestions and listings;
 * *names is malloc'd (free it), the strings are static or, for machines
 * and compilers (read from dev_configs_dir()), malloc'd into *owned, which
 * the caller frees with tn_names_free.  Returns the count (0 on failure). */
int tn_names_machines(const char ***names, char ***owned);
int tn_names_compilers(const char ***names, char ***owned);
int tn_names_defects(const char ***names);
int tn_names_profiles(const char ***names);
void tn_names_free(const char **names, char **owned, int n);

#endif
