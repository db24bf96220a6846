/* result.c — freeing what the sweep produced. */
#include "result.h"

#include <stdlib.h>
#include <string.h>

void tn_fusion_result_free(tn_fusion_result *r) {
  if (!r)
    return;
  free(r->hlo);
  free(r->cands);
  for (int i = 0; i < r->nerror_maps; i++)
    free(r->error_maps[i].data);
  free(r->error_maps);
  memset(r, 0, sizeof *r);
}
