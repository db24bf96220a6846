/* hlo_hash.c — FNV-1a, 64 bits, and seed mixing (hlo_hash.h). */
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

/* z = a ^ (b + golden + (a << 6) + (a >> 2)), golden = 2^64 / phi, then
 * splitmix64's finaliser.  The combining step was written once as four
 * copies (sweep jitter, the cover's seed rotation, isolation jitter, the
 * fuzzer's draws); stored results depend on its exact bits. */
uint64_t hlo_mix64(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
