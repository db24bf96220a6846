/* only.h — `--only 'KNOBS'`: a config given by the knobs that differ.
 *
 * A config line names seven knobs in a fixed order (dev_config.h):
 * tile, k, buf, order, pack, prec, flags.  --only may give any subset of
 * them, in any order, as KEY=VALUE words ("tile=8x256 flags=fuse-converts");
 * the others come from the unit's default config.  The completed line is
 * then parsed like any config, so a bad value is reported as usual.
 * Nothing is printed: errors come back in an hlo_error.
 */
#ifndef TUNE_ONLY_H
#define TUNE_ONLY_H

#include <stddef.h>

#include "hlo/hlo_error.h"

/* Writes into out (n bytes) the canonical-order config line of `only`
 * completed from `dflt` (a canonical config line).  -1 with err for a word
 * that is not KEY=VALUE, an unknown key or one given twice. */
int tn_only_complete(const char *only, const char *dflt, char *out, size_t n, hlo_error *err);

/* The checks of tn_only_complete that need no default: every word is
 * KEY=VALUE with a known key, none given twice.  So that bad usage is
 * refused before any work, not after a whole module's reference. */
int tn_only_check(const char *only, hlo_error *err);

#endif
