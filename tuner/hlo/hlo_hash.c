/* hlo_hash.c — FNV-1a, 64 bits (hlo_hash.h). */
#include "hlo_hash.h"

#define FNV_PRIME UINT64_C(1099511628211)

uint64_t hlo_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

uint64_t hlo_fnv1a_str(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * FNV_PRIME;
  return h;
}
