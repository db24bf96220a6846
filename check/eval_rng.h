/* eval_rng.h — the counter-based generators behind rng-bit-generator and
 * rng (eval_rng.c).
 *
 * The block functions are Random123's Threefry-2x32 (20 rounds) and
 * Philox-4x32 (10 rounds); the stream functions lay their blocks out as
 * XLA's rng-bit-generator expansion does (xla/hlo/builder/lib/prng.cc), so
 * a module's random bits are the ones XLA produces for the same state.
 */
#ifndef TUNE_CHECK_EVAL_RNG_H
#define TUNE_CHECK_EVAL_RNG_H

#include <stdint.h>

/* One Threefry-2x32-20 block: out = E_key(ctr). */
void chk_threefry2x32(const uint32_t ctr[2], const uint32_t key[2], uint32_t out[2]);
/* One Philox-4x32-10 block: out = E_key(ctr). */
void chk_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef enum chk_rng_alg { CHK_RNG_THREE_FRY, CHK_RNG_PHILOX } chk_rng_alg;

/* n elements of width bits (8, 16, 32 or 64) of rng-bit-generator's output
 * for state (nstate u64 words: key, then counter words), written as raw
 * bits to out (n elements of bits/8 bytes, host order), and the state
 * after it to new_state (nstate words).  -1 when nstate does not suit the
 * algorithm (three_fry: 2; philox: 2 or 3) or bits is another width. */
int chk_rng_bits(chk_rng_alg alg, const uint64_t *state, int nstate, int bits, int64_t n, void *out,
                 uint64_t *new_state);

#endif
