/* expected.h — a corpus's expected failures: the files and units a sweep
 * knows it cannot check, with the reason, so that a known refusal does not
 * fail every night's cron job while a new one still does.
 *
 * The file (named by the sweep file's `expected_failures`) holds one entry
 * per line:
 *
 *   # comment
 *   datasets/big_module.hlo        too-large: 40 GB of values
 *   real/conv_*.hlo:custom-call.7   unsupported: custom-call target
 *
 * a pattern, white space, then the reason (required: an entry without one
 * cannot tell the next engineer why it is there).  The pattern is a shell
 * glob matched like --fusion (units.h): FILE stands for every unit of the
 * file and for the file itself, FILE:UNIT for one unit; FILE may be the
 * corpus path or its base name.  Nothing is printed: errors come back as
 * `PATH:LINE: error: what` in an hlo_error.
 */
#ifndef TUNE_EXPECTED_H
#define TUNE_EXPECTED_H

#include "hlo/hlo_error.h"

typedef struct tn_expected_entry {
  char *pattern;
  char *reason;
  int hits;        /* refusals it excused in this run */
  int line;
} tn_expected_entry;

typedef struct tn_expected {
  int n;
  tn_expected_entry *v;  /* malloc'd */
} tn_expected;

/* Reads path; -1 with err on a missing file or a malformed line. */
int tn_expected_load(const char *path, tn_expected *out, hlo_error *err);
void tn_expected_free(tn_expected *e);

/* The entry excusing a refusal of `unit` (NULL: the file as a whole) of
 * `file`, its hits counted; NULL when none does. */
const tn_expected_entry *tn_expected_match(tn_expected *e, const char *file, const char *unit);

#endif
