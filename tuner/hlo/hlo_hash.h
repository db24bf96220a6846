/* hlo_hash.h — FNV-1a over 64 bits, the one hash behind tune's
 * fingerprints (configs, fusions), seeds, sweep identities and journal
 * checksums, and the one way two numbers are mixed into a seed.  It is not cryptographic: it names things and catches torn
 * bytes, it does not resist an adversary.
 *
 * Two starting values are in use.  HLO_FNV_BASIS is FNV-1a's offset basis.
 * HLO_FNV_BASIS_FINGERPRINT is that number with its last digit lost, a
 * slip the config, fusion and coverage fingerprints have carried since
 * their first results file; it hashes just as well, and it is kept so
 * that every fingerprint already stored (group names, `fingerprint`
 * columns, the cover's seeded choice) stays what it was.
 */
#ifndef TUNE_HLO_HASH_H
#define TUNE_HLO_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HLO_FNV_BASIS UINT64_C(14695981039346656037)
#define HLO_FNV_BASIS_FINGERPRINT UINT64_C(1469598103934665603)

/* Folds bytes p[0..n) into h. */
uint64_t hlo_fnv1a(uint64_t h, const void *p, size_t n);
/* Folds the bytes of the C string s (without its NUL) into h. */
uint64_t hlo_fnv1a_str(uint64_t h, const char *s);

/* A seed derived from two numbers (a run's seed and a draw index, a
 * fingerprint...): b is combined into a, then splitmix64's finaliser
 * spreads every input bit over the result, so neighbouring inputs give
 * unrelated seeds.  The same pair gives the same seed on every machine. */
uint64_t hlo_mix64(uint64_t a, uint64_t b);

#endif
