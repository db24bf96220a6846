/* store_isolate.h — an isolation run (`tune --isolate -o`, isolate.h) in
 * the results file, and read back for `tune --report`.
 *
 *   /runs/<run-id>/isolation/       attrs source, inputs, units, culprits,
 *                                   program_*, `attributes`
 *     units                         one row per unit in program order:
 *                                   class, config, the three comparisons
 *                                   (fu_, fr_, ur_), culprit rank, the
 *                                   units feeding it (the fusion graph)
 *     culprits/<unit index>/        attrs unit, inspected, note, atol,
 *                                   rtol, first, store_diffs
 *       instructions                one row per internal instruction of
 *                                   the fused kernel: both sides' summaries
 *       hlo                         the unit alone as a module (text)
 *       inputs/<k>                  its operands, the reference's, as
 *                                   macro isolation ran it (h5values.h)
 *       tensors/<k>/                k = 0: the first diverging
 *                                   instruction, then its operands
 *                                   attrs name, role, instruction
 *         device, reference         the values (tn_h5_write_array)
 *         metrics                   one row: counts, box, peak
 *
 * Every table carries its `columns` description and every group its
 * `attributes` (store_table.h); README "HDF5 results schema" lists them.
 * The rows below are what the tables hold, so a reader gets the writer's
 * structs back.  This file knows nothing of isolate.h: cli_isolate.c fills
 * the rows, which keeps the report (part of the library) free of the tool.
 */
#ifndef TUNE_STORE_ISOLATE_H
#define TUNE_STORE_ISOLATE_H

#include <stdint.h>

#include "device/dev_config.h"
#include "hlo/hlo_error.h"
#include "hlo/hlo_value.h"
#include "store.h"

/* One comparison of two sides of a unit (its worst output leaf). */
typedef struct tn_siso_cmp {
  uint8_t done, within, identical;
  int32_t leaf;
  int64_t count, mismatches;
  double max_abs, max_rel;
  int32_t rank;
  int64_t peak[HLO_MAX_RANK];
} tn_siso_cmp;

typedef struct tn_siso_unit {
  int32_t index;
  char name[128];
  char kind[16];                      /* tn_unit_kind */
  char cls[24];                       /* tn_iso_class_name */
  int32_t rank;                       /* 1 = the worst culprit; 0: none */
  char config[DEV_CONFIG_TEXT_MAX];
  uint8_t overridden, nondeterministic;
  int32_t nkernels;
  double atol, rtol, max_rel;
  tn_siso_cmp fu, fr, ur;             /* fused-unfused, fused-reference,
                                         unfused-reference */
  double chain_in_rel, chain_out_rel; /* NaN: not run */
  char inputs[512];                   /* units whose outputs it reads,
                                         comma-separated */
  char note[512];
} tn_siso_unit;

typedef struct tn_siso_summary {
  float min, max, mean, std;
  int64_t nan, inf;
} tn_siso_summary;

typedef struct tn_siso_instr {
  char name[128];
  char op[32];
  int64_t count, observed;
  uint8_t compared, within;
  int64_t mismatches;
  double max_rel;
  tn_siso_summary dev, ref;
} tn_siso_instr;

typedef struct tn_siso_tmetrics {
  int64_t count, mismatches;
  double max_abs, max_rel;
  int64_t peak_index;
  int32_t rank;
  int64_t peak[HLO_MAX_RANK], bbox_lo[HLO_MAX_RANK], bbox_hi[HLO_MAX_RANK];
  double device_at_peak, reference_at_peak; /* NaN when no peak */
} tn_siso_tmetrics;

typedef struct tn_siso_tensor {
  char name[128];
  char role[16];                /* "diverging" or "operand" */
  int32_t instr;                /* row of instructions */
  hlo_value *dev, *ref;         /* one reference each (the reader's own) */
  tn_siso_tmetrics m;
} tn_siso_tensor;

typedef struct tn_siso_culprit {
  int32_t unit;                 /* row of units */
  int inspected;                /* the instrumented run was made */
  char note[256];
  double atol, rtol;
  char first[128];              /* "" when no instruction diverges */
  int64_t store_diffs;
  int ninstrs;
  tn_siso_instr *instrs;
  int ntensors;
  tn_siso_tensor *tensors;
  /* The unit alone as a module and the operands macro isolation ran it on
   * (the reference's), so --reproduce can bundle it.  Writing: borrowed,
   * hlo NULL when not kept.  Reading: hlo is the reader's own (NULL when
   * the run stored none) and the inputs are not read (ninputs 0; read them
   * against hlo's parameters: culprits/<unit index>/inputs). */
  char *hlo;
  int ninputs;
  hlo_value *const *inputs;
} tn_siso_culprit;

typedef struct tn_siso_program {
  int done, differs;
  char note[256];
  double atol, rtol, max_rel, max_abs, gain;
  int64_t mismatches, count;
  char amplifier[128], origin[128]; /* "" when none */
} tn_siso_program;

typedef struct tn_stored_isolation {
  char source[512];             /* the module file as named */
  char inputs[512];             /* --inputs, "" when synthesised */
  int nunits;
  tn_siso_unit *units;
  int nculprits;
  tn_siso_culprit *culprits;    /* worst first */
  tn_siso_program program;
} tn_stored_isolation;

/* Writes iso into the open run (one atomic step, store.h).  The writer
 * only reads iso. */
int tn_store_add_isolation(tn_store *s, const tn_stored_isolation *iso, hlo_error *err);

/* Reads run `run_id` of PATH's isolation: 1 with *out filled (free with
 * tn_stored_isolation_free), 0 when the run holds none, -1 with err. */
int tn_results_read_isolation(const char *path, const char *run_id, tn_stored_isolation *out, hlo_error *err);
void tn_stored_isolation_free(tn_stored_isolation *iso);

#endif
