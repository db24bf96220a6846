/* result_fixture.h — the hand-made fusion results that the store and report
 * tests write and read back (test_store, test_report).
 *
 * Every value is a literal chosen by hand, so a test can compare what it
 * reads with these numbers.  cmocka-based: a helper that cannot build its
 * piece fails the calling test. */
#ifndef TUNE_TESTS_RESULT_FIXTURE_H
#define TUNE_TESTS_RESULT_FIXTURE_H

#include <stdint.h>

#include "run/result.h"

/* Canonical config texts (dev_config_print gives them back unchanged). */
#define RFX_DEFAULT_CONFIG "tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts"
#define RFX_DIVERGENT_CONFIG                                                                       \
  "tile=16x128 k=256 buf=3 order=1k0 pack=2 prec=high flags=fuse-converts,split-reduction"
#define RFX_UNCOMPILABLE_CONFIG "tile=64x512 k=512 buf=4 order=k01 pack=4 prec=highest flags=none"

/* The module text of "fused_thing": one f32[300,400] parameter. */
#define RFX_THING_HLO "HloModule m\nENTRY e {\n  ROOT p = f32[300,400] parameter(0)\n}\n"

/* Zeroes r and fills its identity: name, source, hero, a copy of hlo,
 * fingerprint fp, seed 42, and ncands zeroed candidates (calloc'd). */
void rfx_result(tn_fusion_result *r, const char *name, const char *source, const char *hero,
                const char *hlo, uint64_t fp, int ncands);

/* Zeroes c and makes it candidate id with config cfg (which must be
 * canonical) and verdict v, compared with the default over 120000 elements
 * of a rank-2 output with no peak. */
void rfx_cand(tn_cand_result *c, int id, const char *cfg, chk_verdict v);

/* The divergence of the wrong candidate: 5 mismatches (one NaN), max_abs
 * 0.25, max_rel 0.5, max_ulp 123456789012, rms 1e-3, peak at [1,1] (index
 * 401), bounding box [1..7, 0..399], histogram 100+i, side statistics
 * (-1.5, 2.5, 0.125, 0.75) and (-1, 2, 0.25, 0.5); the same against the
 * reference but with 6 mismatches. */
void rfx_divergent(tn_cand_result *c);

/* Gives r one zeroed 300x400 error map for candidate cand_id. */
tn_error_map *rfx_error_map(tn_fusion_result *r, int cand_id);

#endif
