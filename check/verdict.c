#include "verdict.h"

#include <string.h>

static const char *const names[CHK_VERDICT_COUNT] = {
#define X(e, name) name,
    CHK_VERDICT_LIST(X)
#undef X
};

const char *chk_verdict_name(chk_verdict v) {
  return (unsigned)v < CHK_VERDICT_COUNT ? names[v] : "invalid";
}

int chk_verdict_from_name(const char *name) {
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    if (strcmp(names[v], name) == 0)
      return v;
  return -1;
}

int chk_verdict_is_divergent(chk_verdict v) {
  return v == CHK_VERDICT_MISMATCH_CANDIDATE || v == CHK_VERDICT_MISMATCH_DEFAULT ||
         v == CHK_VERDICT_MISMATCH_BOTH || v == CHK_VERDICT_RUNTIME_ERROR ||
         v == CHK_VERDICT_NONDETERMINISTIC;
}
