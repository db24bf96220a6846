/* dev_hbm.h — simulated HBM buffers: data with redzones before and after,
 * and a shadow byte per element that says whether it holds a defined value.
 *
 * Poison: before a run, outputs (and any scratch kept in HBM) are filled
 * with a recognisable pattern — a signalling NaN for floats (f32 0x7FA5A5A5,
 * f64 0x7FF4A5A5A5A5A5A5, bf16 0x7FA5, f16 0x7CA5) and 0xA5 bytes for every
 * other type — and their shadow is set.  The pattern is what a stale read
 * would see; the shadow is what decides, so a legitimate value that happens
 * to equal the pattern is never mistaken for poison.
 *
 * Redzones: DEV_REDZONE bytes of DEV_CANARY before and after the data.  A
 * store is made by element offset and really lands in the redzone when the
 * offset is past either end (up to the redzone's size; further is refused
 * as a wild store), so a damaged canary found after the run is a redzone
 * write, reported with the buffer's name and the byte offset.
 */
#ifndef TUNE_DEV_HBM_H
#define TUNE_DEV_HBM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_value.h"

#define DEV_REDZONE 64
#define DEV_CANARY 0xCB

typedef struct dev_hbm {
  char name[48];          /* "param 0", "output 1" */
  hlo_etype type;
  int rank;
  int64_t dims[HLO_MAX_RANK];
  int64_t count;
  size_t esz;             /* host bytes per element */
  uint8_t *raw;           /* redzone, data, redzone */
  uint8_t *data;
  uint8_t *shadow;        /* 1: poisoned */
  size_t held;            /* bytes taken from the account (hlo_mem.h) */
} dev_hbm;

/* 0, or -1 when out of memory. */
int dev_hbm_alloc(dev_hbm *b, const char *name, hlo_etype t, int rank, const int64_t *dims);
void dev_hbm_free(dev_hbm *b);
/* The poison bit pattern of type t, esz bytes at out. */
void dev_hbm_pattern(hlo_etype t, void *out);
void dev_hbm_poison(dev_hbm *b);
/* Copies an array value in and clears the shadow. */
void dev_hbm_fill(dev_hbm *b, const hlo_value *v);
/* Stores one element (esz bytes at src) at element offset off, which may be
 * outside [0, count) by up to the redzone; poisoned marks the shadow.  -1
 * when off is beyond the redzones (a wild store, not performed). */
int dev_hbm_store(dev_hbm *b, int64_t off, const void *src, bool poisoned);
/* 0 when both redzones are intact, else -1 with "redzone write: NAME at
 * byte offset +N past the end" (or "-N before the start") in why. */
int dev_hbm_check(const dev_hbm *b, char *why, size_t n);
/* The first poisoned element, or -1. */
int64_t dev_hbm_first_poison(const dev_hbm *b);
/* The data as a new value (one reference), NULL when out of memory. */
hlo_value *dev_hbm_value(const dev_hbm *b);

#endif
