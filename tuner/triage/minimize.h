/* minimize.h — shrinking a fusion by delta debugging while a property
 * (a divergence with one config) persists.
 *
 * The one reduction is "cut": an instruction of the kernel computation
 * becomes a new parameter of the same shape (and the fusion instruction in
 * the entry gets a matching new entry parameter).  Everything only the cut
 * instruction needed becomes dead and is removed; parameters nothing uses
 * any more are removed and the rest renumbered.  So each cut removes at
 * least the cut instruction's operands' exclusive cones, and the root (the
 * output the divergence shows in) is never cut.
 *
 * Delta debugging (ddmin over the cuttable instructions): try cutting
 * chunks of half the candidates, then quarters, ... down to single
 * instructions; a cut is kept when the module still parses, verifies and
 * the test still says the property holds.  Each step works on text: the
 * current module is parsed afresh, cut, printed, parsed again and
 * verified, so no step can leave a half-edited IR behind.
 *
 * Then shapes shrink (issue 18): for each dimension size of the module,
 * largest first, every dimension of that size (in every shape of the
 * text: `f32[256,1000]`) is made smaller, halving while the module still
 * parses, verifies and holds the property, then bisecting between the
 * last size that held and the first that did not.  Sizes are changed
 * together because dimensions that must agree (an operand's and a
 * result's, a dot's contracting pair) usually share the size; a change
 * that breaks an agreement is refused by the verifier and not kept.
 * Attribute values that are not shapes (slice bounds, window sizes) are
 * left alone, which can stop a size from shrinking, never make a module
 * wrong.
 *
 * Library code: nothing is printed.
 */
#ifndef TUNE_MINIMIZE_H
#define TUNE_MINIMIZE_H

#include <stdbool.h>

#include "hlo/hlo_error.h"
#include "run/fusion_run.h"

/* 1 when the property holds for the module text, 0 when it does not (or
 * the module is not checkable). */
typedef int (*tn_min_test)(const char *hlo_text, void *ctx);

typedef struct tn_min_result {
  char *text;          /* the smallest module found (malloc'd) */
  int instrs_before;   /* instructions of the kernel computation */
  int instrs_after;
  int tests;           /* how many times the test ran */
  /* The sizes shrunk, "1000 -> 257, 256 -> 8" ("" when none). */
  char shrunk[256];
} tn_min_result;

/* 0 with out filled (out->text may equal the input when nothing could be
 * cut), or -1 with err when the input itself does not parse or has no
 * kernel. */
int tn_minimize(const char *text, tn_min_test test, void *ctx, tn_min_result *out, hlo_error *err);

/* The property --reproduce --minimize and --fuzz minimize under: the
 * candidate with config so.only still diverges when the module is checked
 * with so's device and inputs.  `verify`: a module the verifier refuses
 * does not hold (generated findings); otherwise the check alone decides. */
typedef struct tn_min_config {
  tn_sweep_opts so;
  bool verify;
} tn_min_config;

/* A tn_min_test; ctx is a tn_min_config. */
int tn_min_config_diverges(const char *hlo_text, void *ctx);

/* Checks hlo_text as tn_min_config_diverges does and keeps the result:
 * the index in out->cands of the candidate with config c->so.only, or -1
 * with err (out is then empty).  For the figures of a minimized finding,
 * which differ from the original's (fewer elements, other errors). */
int tn_min_config_check(const char *hlo_text, const tn_min_config *c, tn_fusion_result *out, hlo_error *err);

/* Instructions of the kernel computation of text; -1 with err. */
int tn_min_count(const char *text, hlo_error *err);

#endif
