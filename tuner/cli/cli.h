/* cli.h — the `tune` command line: options and one function per mode.
 *
 * Exit statuses are part of the interface: 0 success (nothing diverges;
 * for --check, at least one unit verified), 1 a divergence was found,
 * 2 bad usage, bad input or a tool error, 3 (--check) nothing at all could
 * be verified.  Only this layer prints; library layers return hlo_error
 * values.
 */
#ifndef TUNE_CLI_H
#define TUNE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"

enum { TN_EXIT_OK = 0, TN_EXIT_DIVERGED = 1, TN_EXIT_USAGE = 2, TN_EXIT_UNVERIFIED = 3 };

/* The machine model device modes use when --machine is not given. */
#define TN_DEFAULT_MACHINE "tpu-v5e"

typedef enum tn_mode {
  TN_MODE_NONE = 0,
  TN_MODE_PRINT,
  TN_MODE_LIST_MACHINES,
  TN_MODE_EVAL, /* --eval (cli_eval.c) */
  TN_MODE_SPACE,        /* --space (cli_space.c) */
  TN_MODE_LIST_DEFECTS, /* --list-defects (cli_defects.c) */
  TN_MODE_CHECK,        /* --check (cli_check.c) */
  TN_MODE_REPORT,       /* --report (cli_report.c) */
  TN_MODE_REPRODUCE,    /* --reproduce (cli_reproduce.c) */
  TN_MODE_SWEEP,        /* --sweep (cli_sweep.c) */
  TN_MODE_MERGE,        /* --merge (cli_merge.c) */
  TN_MODE_LIST_FUSIONS, /* --list-fusions (cli_units.c) */
  TN_MODE_FUZZ,         /* --fuzz (fuzz/cli_fuzz.c) */
  TN_MODE_LIST_COMPILERS, /* --list-compilers (cli_compilers.c) */
  TN_MODE_ISOLATE,      /* --isolate (cli_isolate.c) */
} tn_mode;

#define TN_MAX_DEFECTS 32
#define TN_MAX_FUSIONS 64

typedef struct tn_opts {
  tn_mode mode;
  const char *file;       /* the mode's FILE argument; "-" is stdin */
  const char *output;     /* -o */
  int no_verify;          /* --no-verify: print what parses, unchecked */
  int quiet;
  /* --eval */
  uint64_t seed;          /* --seed: input synthesis seed (default 0) */
  int has_seed;           /* --seed was given */
  const char *inputs;     /* --inputs IN.h5 instead of synthesised inputs */
  int profile;            /* --profile: a chk_inputs_profile (inputs.h), for
                             --eval and --check; CONSTRAINED unless given */
  int replicas;           /* --replicas: simulated replicas; 0 means 1 */
  /* device modes */
  const char *machine;    /* --machine NAME (or a path); NULL: TN_DEFAULT_MACHINE */
  /* --check */
  const char *compiler;   /* --compiler NAME (or a path); NULL: "stable" */
  const char *defects[TN_MAX_DEFECTS]; /* --defect NAME, repeatable */
  int ndefects;
  const char *backend;    /* --backend PATH.so; NULL: the built-in simulator */
  int threads;            /* --threads N; 0: OpenMP's default */
  int budget;             /* --budget N candidates; 0: all */
  uint64_t cover_seed;    /* --cover-seed: the budget's choice (cover.h) */
  int has_cover_seed;     /* --cover-seed given; else --seed */
  double time_budget;     /* --time-budget S, per unit; 0: none */
  int has_time_budget;    /* --time-budget given (--eval has a default) */
  double run_time_budget; /* --run-time-budget S, the whole --check; 0: none */
  const char *only;       /* --only 'CONFIG' */
  int stop_on_mismatch;   /* --stop-on-mismatch */
  int has_atol, has_rtol; /* --atol / --rtol given */
  double atol, rtol;
  const char *ops;        /* --ops LIST */
  int tolerance;          /* --tolerance: a chk_tol_criterion */
  int json;               /* --json */
  const char *command_line; /* the whole command, for the results file */
  /* --report */
  const char *format;     /* --format html|md|json|junit */
  const char *run_id;     /* --run ID; NULL: the latest run in the file */
  /* --reproduce */
  const char *fusion;     /* --fusion NAME (or group name): the first one */
  const char *fusions[TN_MAX_FUSIONS]; /* --check, --list-fusions: every
                             --fusion, shell globs over units (units.h) */
  int nfusions;
  int64_t max_memory;     /* --max-memory bytes; default half the RAM */
  int inputs_synthetic;   /* --inputs-from synthetic (default graph) */
  int iteration;          /* --iteration N: capture a unit's Nth execution */
  int candidate;          /* --candidate ID */
  int has_candidate;
  int minimize;           /* --minimize */
  /* --sweep */
  int shard_k, shard_n;   /* --shard K/N; shard_n 0: the whole corpus */
  const char *sweep_run_id; /* --run-id ID; NULL: expand the sweep file's run_id */
  /* --fuzz */
  int64_t fuzz_count;     /* --count N fusions; 0: --seconds decides */
  double fuzz_seconds;    /* --seconds S */
  unsigned fuzz_templates; /* --template T: bit per tn_fuzz_template; 0: all */
  int fuzz_verbose;       /* --verbose: say why a fusion was not checkable */
  /* --isolate */
  const char *config_units[TN_MAX_FUSIONS]; /* --config UNIT=KNOBS: UNIT is the
                             first config_unit_len bytes of config_units[i] */
  int config_unit_len[TN_MAX_FUSIONS];
  const char *config_texts[TN_MAX_FUSIONS];
  int nconfigs;
  const char *from;       /* --isolate --from RESULTS.h5 (--run picks the run) */
  int all_tolerances;     /* --isolate --all-tolerances */
} tn_opts;

/* Candidates per generated fusion when --fuzz has no --budget. */
#define TN_FUZZ_DEFAULT_BUDGET 16

/* Reads a whole file ("-" for stdin) into a malloc'd buffer the caller
 * frees.  On failure prints `tune: PATH: reason` and returns -1. */
int tn_read_file(const char *path, char **buf, size_t *len);

/* A text output (--print, --space, --report -o PATH).  A regular file is
 * written to a temporary beside it (outpath.h), fsynced and renamed over
 * it only once complete, so a failed or interrupted write never leaves a
 * truncated file where the old one was.  A path that exists and is no
 * regular file (/dev/null, a FIFO) is written straight, as there is
 * nothing to rename over; NULL or "-" is standard output. */
typedef struct {
  FILE *f;
  char *path; /* what the text replaces; NULL for standard output */
  char *tmp;  /* the temporary being written; NULL when written straight */
} tn_text_output;

/* Opens o for path after the checks every output gets (outpath.h):
 * refused when it names one of inputs[0..n), followed when it is a link.
 * On failure prints why and returns -1, with nothing to close. */
int tn_text_output_open(tn_text_output *o, const char *path, int n, const char *const *inputs);

/* Ends o.  keep: flushes and, for a temporary, fsyncs it and renames it
 * into place; -1 (printed) when any of that fails, the temporary removed
 * and the old file untouched.  !keep: discards what was written. */
int tn_text_output_close(tn_text_output *o, int keep);

/* Reads, parses and (unless no_verify) verifies an HLO file.  On failure
 * prints `PATH:LINE:COL: error: MSG` and returns NULL. */
hlo_module *tn_load_module(const char *path, int no_verify);
/* The same, printing nothing: err holds the line tn_load_module would
 * print ("PATH:LINE:COL: error: MSG", or "tune: PATH: reason"). */
hlo_module *tn_load_module_err(const char *path, int no_verify, hlo_error *err);

/* One log line on stderr, "2026-11-29T02:30:01Z tune: " and the message:
 * what unattended modes (--sweep, --merge) print, so that a cron mail or
 * the journal says when each step happened (cli_log.c). */
void tn_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The largest --threads (and sweep file threads) accepted: four per
 * online core, and at least 64 (cli_threads.c says why). */
int tn_threads_max(void);
/* Sets OpenMP's default thread count, for when neither --threads nor a
 * sweep file's threads gives one: OMP_NUM_THREADS, at most
 * tn_threads_max() (beyond it capped, saying so when speak); without it,
 * under MPI, the node's cores shared among its local_ranks ranks.  Called
 * once, at the start. */
void tn_threads_setup(int local_ranks, bool speak);
/* Warns on stderr when `threads` (given explicitly; 0: the default)
 * times the ranks on this node exceed its cores. */
void tn_threads_warn(int threads, int local_ranks);
/* Makes an explicit thread count (--threads, a sweep file's threads; 0:
 * none given, nothing changes) OpenMP's default too, so that the parallel
 * loops outside the candidates' (the reference evaluation, the input
 * generator) use no more threads than the user asked for. */
void tn_threads_use(int threads);
/* Checks that every comma-separated name of an --ops LIST is an opcode;
 * -1 after printing `tune: --ops: unknown opcode 'NAME'` otherwise. */
int tn_ops_validate(const char *list);

int tn_cmd_print(const tn_opts *o);
int tn_cmd_list_machines(const tn_opts *o);
int tn_cmd_eval(const tn_opts *o);
int tn_cmd_space(const tn_opts *o);
int tn_cmd_list_defects(const tn_opts *o);
int tn_cmd_list_compilers(const tn_opts *o);
/* Checks files[0..nfiles) (FILE is files[0]; more may follow). */
int tn_cmd_check(const tn_opts *o, int nfiles, char *const *files);
/* Lists the tuning units of files[0..nfiles), one line each. */
int tn_cmd_list_fusions(const tn_opts *o, int nfiles, char *const *files);
/* Writes a report of one run of a results file (--format, --run, -o). */
int tn_cmd_report(const tn_opts *o);
/* Writes a reproducer bundle of one stored candidate (--fusion, --candidate, -o DIR). */
int tn_cmd_reproduce(const tn_opts *o);
/* Runs the sweep described by the config file o->file. */
int tn_cmd_sweep(const tn_opts *o);
/* Prints what changed in run since the previous run (sweep_state.h), the
 * way --sweep and --merge report it on stdout. */
struct tn_run_info;
struct tn_changes;
void tn_changes_print(FILE *f, const struct tn_run_info *run, const struct tn_changes *ch, double threshold);
/* Writes the reports a sweep file asks for of one run of out, their
 * names expanded at `now` (cli_sweep.c: "-shardKofN" for a shard,
 * shard_n 0 for a whole run).  0, or -1 after logging what failed. */
struct tn_sweep_cfg;
int tn_sweep_write_reports(const struct tn_sweep_cfg *cfg, const char *out, const char *run_id, int shard_k,
                           int shard_n, time_t now);
/* Merges the runs of files[0..nfiles) into o->file. */
int tn_cmd_merge(const tn_opts *o, int nfiles, char *const *files);
/* Generates and checks fusions (fuzz/gen.h) for --count N or --seconds S. */
int tn_cmd_fuzz(const tn_opts *o);
/* Isolates the culprit fusions of module o->file (isolate.h). */
int tn_cmd_isolate(const tn_opts *o);

#endif
