/* hlo_types.c — the one table of element type facts. */
#include "hlo_types.h"

#include <string.h>

typedef struct {
  const char *name;
  int bits;
  hlo_eclass cls;
} etype_info;

static const etype_info infos[HLO_ETYPE_COUNT] = {
    [HLO_INVALID] = {"invalid", 0, HLO_CLASS_OTHER},
#define X(e, name, bits, cls) [HLO_##e] = {name, bits, cls},
    HLO_ETYPE_LIST(X)
#undef X
};

static bool valid(hlo_etype t) { return t > HLO_INVALID && t < HLO_ETYPE_COUNT; }

const char *hlo_etype_name(hlo_etype t) { return valid(t) ? infos[t].name : "invalid"; }

hlo_etype hlo_etype_from_name(const char *s, size_t n) {
  for (int t = HLO_INVALID + 1; t < HLO_ETYPE_COUNT; t++) {
    if (t == HLO_TUPLE)
      continue; /* tuples are written with parentheses, never by name */
    if (strlen(infos[t].name) == n && memcmp(infos[t].name, s, n) == 0)
      return (hlo_etype)t;
  }
  return HLO_INVALID;
}

int hlo_etype_bits(hlo_etype t) { return valid(t) ? infos[t].bits : 0; }

hlo_eclass hlo_etype_class(hlo_etype t) { return valid(t) ? infos[t].cls : HLO_CLASS_OTHER; }

bool hlo_etype_is_float(hlo_etype t) { return hlo_etype_class(t) == HLO_CLASS_FLOAT; }

bool hlo_etype_is_int(hlo_etype t) {
  hlo_eclass c = hlo_etype_class(t);
  return c == HLO_CLASS_SINT || c == HLO_CLASS_UINT;
}

size_t hlo_etype_host_size(hlo_etype t) {
  int bits = hlo_etype_bits(t);
  if (bits == 0)
    return 0;
  return bits < 8 ? 1 : (size_t)bits / 8;
}
