/* dev_accum.c — the accumulation depth of a config (see dev_accum.h for the
 * derivation; this mirrors dev_acc.c's setup_hero for which heroes the
 * device folds chunk by chunk). */
#include "dev_accum.h"

#include <stdbool.h>

#include "dev_elemental.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t dev_accum_depth(const dev_fusion *f, const dev_config *c) {
  const hlo_instr *h = f->hero;
  int64_t K = f->k_total;
  if (!h || K <= 0)
    return -1;
  dev_elem_kind ek = dev_elem_classify(h);
  bool dot = f->kind == DEV_HERO_DOT && ek == DEV_EK_DOT;
  bool reduce = f->kind == DEV_HERO_REDUCE && ek == DEV_EK_REDUCE;
  if (!dot && !reduce)
    return -1;
  int64_t P = c->pack > 0 ? c->pack : 1;
  int64_t chunk = c->k > 0 && c->k < K ? c->k : K;
  if (!(c->flags & DEV_FLAG_SPLIT_REDUCTION)) {
    int64_t slots = P < K ? P : K;
    return ceil_div(K, P) - 1 + (reduce ? 1 : 0) + slots - 1;
  }
  int64_t nk = ceil_div(K, chunk);
  int64_t slots = P < chunk ? P : chunk;
  return ceil_div(chunk, P) - 1 + slots - 1 + nk - (dot ? 1 : 0);
}
