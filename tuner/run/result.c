/* result.c — freeing what the sweep produced, and the names of unit statuses. */
#include "result.h"

#include <stdlib.h>
#include <string.h>

static const char *const unit_status_names[TN_UNIT_STATUS_COUNT] = {
#define X(e, name) name,
    TN_UNIT_STATUS_LIST(X)
#undef X
};

const char *tn_unit_status_name(tn_unit_status s) {
  return (unsigned)s < TN_UNIT_STATUS_COUNT ? unit_status_names[s] : "invalid";
}

void tn_fusion_result_free(tn_fusion_result *r) {
  if (!r)
    return;
  free(r->hlo);
  for (int i = 0; r->inputs && i < r->ninputs; i++)
    hlo_value_unref(r->inputs[i]);
  free(r->inputs);
  free(r->cands);
  for (int i = 0; i < r->nerror_maps; i++)
    free(r->error_maps[i].data);
  free(r->error_maps);
  tn_cover_free(&r->cover);
  memset(r, 0, sizeof *r);
}
