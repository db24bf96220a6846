/* dev_machine.h — the simulated accelerator's parameters, read from one
 * libconfig file per model (configs/machines/NAME.cfg).
 *
 * Every key is required and no other key is allowed: a misspelt key in a
 * machine file would otherwise silently fall back to a default and skew
 * every simulated time.  Errors name the file, the line and the key.
 */
#ifndef TUNE_DEV_MACHINE_H
#define TUNE_DEV_MACHINE_H

#include <stdint.h>

#include "hlo/hlo_error.h"

typedef struct dev_machine {
  char name[64];
  char description[160];
  int cores;
  double clock_mhz;
  int sublanes, lanes;       /* vreg shape */
  int64_t vmem_bytes;        /* per core */
  int64_t hbm_bytes;
  double hbm_gbps;           /* per chip */
  int mxu_count;             /* per core */
  int mxu_rows, mxu_cols;
  double mxu_bf16_tflops;    /* per chip */
  double mxu_int8_tops;      /* per chip; 0 when int8 runs at the bf16 rate */
  int f32_passes;            /* bf16 passes for an f32 dot at HIGHEST */
  double vpu_gops, eup_gops; /* per core */
  double step_overhead_ns;
  double dma_latency_ns;
} dev_machine;

/* Loads a machine file.  On failure returns -1 with err->msg of the form
 * "FILE:LINE: ..." naming the key (err->line set, err->col 0). */
int dev_machine_load(const char *path, dev_machine *out, hlo_error *err);

/* The configs directory: $TUNE_CONFIGS when set, else the source tree's
 * configs/ when it exists (running uninstalled), else the installed
 * $(datadir)/tune.  Returns a static string. */
const char *dev_configs_dir(void);

/* Loads configs/machines/NAME.cfg from dev_configs_dir(), or NAME itself
 * when it contains a '/' (a path to a machine file). */
int dev_machine_find(const char *name, dev_machine *out, hlo_error *err);

/* Lists machine names (sorted, from the machines folder of dev_configs_dir()) into a
 * malloc'd array of malloc'd strings; returns the count or -1. */
int dev_machine_list(char ***names, hlo_error *err);

#endif
