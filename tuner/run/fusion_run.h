/* fusion_run.h — checking every candidate of one fusion (the product's main job).
 *
 * One call: analyse the fusion, synthesise seeded inputs, evaluate the
 * reference (emulating device numerics, so only accumulation order can
 * legitimately differ), run the default, then every candidate in parallel
 * with OpenMP, judging each through the cascade (check/cascade.h).
 *
 * Determinism: candidates are independent and their results land at their
 * index in the space's order; every random choice (inputs, timing jitter)
 * is a pure function of the seed and the candidate's fingerprint.  So the
 * results are identical whatever the thread count; only wall times differ.
 */
#ifndef TUNE_FUSION_RUN_H
#define TUNE_FUSION_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "check/inputs.h"
#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "hlo/hlo.h"
#include "result.h"
#include "check/tolerance.h"

typedef struct tn_sweep_opts {
  const dev_backend *backend;
  const dev_machine *machine;
  const dev_compiler *compiler;
  uint64_t seed;
  chk_inputs_profile profile;
  int threads;            /* 0: OpenMP's default */
  int budget;             /* at most this many candidates (default included); 0 = all.
                             Fewer than the space: chosen by pairwise cover
                             (cover.h) */
  uint64_t cover_seed;    /* the seed of that choice */
  double time_budget;     /* seconds; 0 = none.  Candidates not started in
                             time are left out of the result. */
  const char *only;       /* check the default and this one config text */
  bool default_only;      /* check the default alone: no other candidate
                             is listed, compiled or chosen (isolation,
                             which needs the default's run and the
                             tolerance, not a sweep; space_size is then 1) */
  bool stop_on_mismatch;  /* stop at the first divergent candidate */
  bool tol_override;      /* use tol for every float leaf */
  chk_tol tol;
  chk_tol_criterion criterion; /* g(d) of the derived bound (check/tolerance.h) */
  const char *ops;        /* comma-separated opcode names to check, or NULL */
  /* Told at each phase ("inputs", "reference", "default", "candidates",
   * "reruns") and after each candidate, from whichever thread ran it (one
   * at a time); NULL: nobody listens.  progress.h draws or logs it. */
  void (*on_progress)(void *ctx, const char *phase, int done, int total, int divergent);
  void *progress_ctx;
  int error_maps;         /* keep error maps of this many worst divergent
                             candidates (their outputs are held, this many
                             at most, from their run until the maps are drawn) */
  int replicas;           /* --replicas: replicas the collectives run across;
                             0 = the module's own (replica_count, or the
                             highest replica its groups name) */
  const char *unit_name;  /* the result's name; NULL: the kernel computation's */
  hlo_value *const *args; /* the unit's inputs (nargs, borrowed), e.g.
                             captured from the graph; NULL: synthesised */
  int nargs;
  int64_t max_memory;     /* bytes; 0 = no limit.  Threads are reduced until
                             the estimate fits (tn_memory_estimate); a unit
                             that does not fit on one thread is too-large. */
  hlo_value **default_out; /* when set: receives one reference to the
                             default's output, the run the verdicts compare
                             with, so a caller need not run it again; NULL
                             when it failed or was set aside as racy */
  hlo_value *default_given; /* with default_only: the default's output,
                             which the caller has made with this backend on
                             these operands where the timing seed cannot
                             change it (tune --isolate); taken instead of
                             running the default again (its kernel is
                             still compiled, for its status and cost) */
  hlo_value **reference_out; /* when set: receives one reference to the
                             reference's output (replica 0's, device
                             numerics, the replicas tn_replicas_needed
                             gives unless .replicas says), so a caller need
                             not evaluate it again; NULL when there was
                             none */
  const struct tn_capture *traced; /* with args == traced->args: the whole
                             module's evaluation traced for this unit
                             (capture.h); when the trace stands for an
                             evaluation of the unit on one replica, the
                             reference is taken from it instead of being
                             evaluated again, bit for bit the same */
} tn_sweep_opts;

/* The default config of analysed fusion f on backend b: the config its
 * space lists first.  On the built-in device that is dev_space_default's,
 * computed alone (the sim's space starts from it), rather than by
 * enumerating the space and dropping the rest; another backend's space is
 * asked.  0, or -1 with err. */
int tn_default_config(const dev_backend *b, const dev_fusion *f, const dev_machine *m, dev_config *dflt,
                      hlo_error *err);

/* How many replicas the reference must simulate for m's collectives: its
 * replica_count, or one more than the highest replica a group names, or
 * the group size an all-gather's or reduce-scatter's shapes imply when
 * its replica_groups={} means every replica; searched in every
 * computation the entry reaches (called, while bodies and conditions,
 * conditional branches). */
int tn_replicas_needed(const hlo_module *m);
/* One more than the highest replica m's replica groups and permute pairs
 * name (1 when none): the fewest replicas its collectives are defined on. */
int tn_replicas_named(const hlo_module *m);


/* The estimated peak host memory of checking module m with `threads`
 * candidates in flight and `replicas` simulated replicas: the arguments
 * and every value the reference evaluator may hold (each instruction of
 * the entry and the kernel) for each replica, the reference's and the
 * default's outputs with their per-element tolerance maps, and per thread
 * the device's copy of the kernel's inputs (with a shadow byte per
 * element, and a box and a value of each input it evaluates whole), its
 * output (with a rerun's) and, for a kernel with collectives, every
 * replica's operands and results of them (the device runs the replicas in
 * lockstep); and `kept` more outputs kept for error maps (--error-maps).
 * -1 when the kernel cannot be analysed. */
int64_t tn_memory_estimate(const hlo_module *m, int threads, int replicas, int kept);

/* Checks one fusion.  0 with *out filled (caller frees with
 * tn_fusion_result_free), or -1 with err for bad input (unsupported op,
 * bad --only config, evaluation failure of the reference).  A failing
 * candidate never makes this fail: it becomes a verdict. */
int tn_check_fusion(const hlo_module *m, const char *source, const tn_sweep_opts *o,
                    tn_fusion_result *out, hlo_error *err);

/* tn_check_fusion for one tuning unit: on failure *why also says what kind
 * it was: TN_UNIT_UNSUPPORTED (the checker cannot evaluate or tile it; err
 * names the op and the reason), TN_UNIT_TOO_LARGE (over max_memory; err
 * names the estimate), TN_UNIT_TOOL_ERROR (the host ran out of memory),
 * TN_UNIT_TIMED_OUT, or TN_UNIT_BAD_INPUT (bad usage, e.g. --only). */
int tn_check_unit(const hlo_module *m, const char *source, const tn_sweep_opts *o, tn_fusion_result *out,
                  tn_unit_status *why, hlo_error *err);

#endif
