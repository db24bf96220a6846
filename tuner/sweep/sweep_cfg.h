/* sweep_cfg.h — the sweep file of `tune --sweep FILE.cfg` (libconfig).
 *
 *   sweep: {
 *     corpus   = [ ... ];                # glob(3) patterns (every .hlo of
 *                                        # datasets/, say), relative to the
 *                                        # current directory; each must match
 *     machines = [ "tpu-v5e" ];          # one run per machine
 *     compiler = "nightly";              # configs/compilers/NAME.cfg
 *     inputs   = "naive";                # input profile, or a list of them
 *                                        # rotated by date: [ "constrained",
 *                                        # "oob-indices" ]
 *     output   = "sweeps/tune-%Y-%m.h5"; # strftime pattern (UTC)
 *     # optional:
 *     budget = 64;                 # candidates per fusion (0: all)
 *     time_budget = 0.0;           # seconds per fusion (0: none)
 *     threads = 0;                 # 0: all cores
 *     seed = 0;
 *     run_id = "%Y%m%d";           # strftime pattern; "-<machine>" is added
 *     slowdown_threshold = 0.10;   # default-config slowdown worth reporting
 *     reports = ( { format = "html"; output = "sweeps/tune-%Y-%m-%d.html"; } );
 *     expected_failures = "datasets/EXPECTED-failures"; # expected.h
 *   };
 *
 * Every key is checked: an unknown key, a missing required key or a value
 * of the wrong type is an error naming the file, the line and the key
 * ("daily.cfg:7: 'sweep.budget' must be a non-negative integer"), the
 * style of the machine and compiler files.  Nothing is printed.
 */
#ifndef TUNE_SWEEP_CFG_H
#define TUNE_SWEEP_CFG_H

#include <stdint.h>
#include <time.h>

#include "hlo/hlo_error.h"

#define TN_SWEEP_MAX_MACHINES 16
#define TN_SWEEP_MAX_REPORTS 8
#define TN_SWEEP_MAX_GLOBS 64
#define TN_SWEEP_MAX_PROFILES 8

typedef struct tn_sweep_report {
  char format[16];       /* html, md, json, junit */
  char output[1024];     /* strftime pattern */
} tn_sweep_report;

typedef struct tn_sweep_cfg {
  int ncorpus;
  char corpus[TN_SWEEP_MAX_GLOBS][1024];
  int nmachines;
  char machines[TN_SWEEP_MAX_MACHINES][256];
  char compiler[256];
  /* The input profiles; with more than one, each day's run takes one in
   * turn (tn_sweep_inputs_of_day). */
  int ninputs;
  char inputs[TN_SWEEP_MAX_PROFILES][32];
  char output[1024];
  int budget;
  double time_budget;
  int threads;
  uint64_t seed;
  char run_id[64];
  double slowdown_threshold;
  int nreports;
  tn_sweep_report reports[TN_SWEEP_MAX_REPORTS];
  char expected_failures[1024]; /* "" when none (expected.h) */
} tn_sweep_cfg;

/* The input profiles a sweep file may name. */
extern const char *const tn_sweep_input_profiles[];

int tn_sweep_cfg_load(const char *path, tn_sweep_cfg *out, hlo_error *err);

/* The input profile of the run that starts at t: inputs[d mod ninputs], d
 * being t's UTC day counted from 1970-01-01, so consecutive days take the
 * profiles in turn whatever the month.  A profile's symptoms differ (an
 * index out of range only under oob-indices, in range only under the
 * others), and one sweep file can then see both over a few days. */
const char *tn_sweep_inputs_of_day(const tn_sweep_cfg *c, time_t t);

/* The profiles joined by ',' into buf ("constrained" for one). */
void tn_sweep_inputs_text(const tn_sweep_cfg *c, char *buf, size_t n);

/* strftime of pattern at t in UTC; -1 with err when empty, too long, or
 * holding a control character (%n, %t). */
int tn_sweep_expand(const char *pattern, time_t t, char *buf, size_t n, hlo_error *err);

/* What makes two runs "the same sweep" for resuming: the corpus, the
 * machine, the compiler, the inputs, the budgets, the seed and the shard,
 * as a 16-hex-digit FNV-1a of their canonical text (written to buf). */
void tn_sweep_identity(const tn_sweep_cfg *c, const char *machine, int shard_k, int shard_n, char *buf, size_t n);

/* The sorted, de-duplicated files of the corpus globs (malloc'd array of
 * malloc'd strings; free with tn_sweep_files_free).  A glob that matches
 * nothing is an error: in a cron job it is a typo or a missing mount. */
int tn_sweep_corpus(const tn_sweep_cfg *c, char ***files, int *nfiles, hlo_error *err);
void tn_sweep_files_free(char **files, int n);

/* Shard (1..n) of a corpus file: FNV-1a of its path mod n, plus 1.  A
 * function of the path alone, so every machine of a sharded sweep agrees
 * without talking to the others, and a file added to the corpus moves no
 * other file to another shard. */
int tn_sweep_shard_of(const char *path, int n);

#endif
