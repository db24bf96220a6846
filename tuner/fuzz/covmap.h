/* covmap.h — what the fuzzer has exercised so far, to steer new draws.
 *
 * A key is a short text: "op:add:bf16" (an instruction of the generated
 * fusions, with its element type), "hero:reduce" (the device's hero kind)
 * or "knob:reduce:pack=4" (a knob value of a checked candidate, by hero).
 * The generator asks how often a key was seen and prefers choices whose
 * keys were seen least (fuzz/gen.h), so draws drift toward what has not
 * been covered yet.  Counts are updated in draw order by one thread, so
 * the steering, like everything else, is a pure function of the seed.
 */
#ifndef TUNE_FUZZ_COVMAP_H
#define TUNE_FUZZ_COVMAP_H

#include <stdint.h>

typedef struct tn_covmap tn_covmap;

tn_covmap *tn_covmap_new(void);
void tn_covmap_free(tn_covmap *m);
/* Adds one sighting of key; 0, or -1 when out of memory. */
int tn_covmap_add(tn_covmap *m, const char *key);
/* Sightings of key (0 when never seen, or m is NULL). */
int64_t tn_covmap_count(const tn_covmap *m, const char *key);
/* Distinct keys seen. */
int64_t tn_covmap_size(const tn_covmap *m);

#endif
