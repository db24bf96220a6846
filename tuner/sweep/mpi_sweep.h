/* mpi_sweep.h — `tune --sweep` and `tune --check` across MPI ranks
 * (issue 20).
 *
 * Under mpirun or srun every rank runs the same command line.  Rank 0
 * does what a single process does (reads the sweep file, takes the
 * results file's lock, resumes or begins the run, stores, reports), except
 * that it hands the units of each machine's run out instead of checking
 * them in turn: it plans every (file, unit) of the run, largest estimated
 * cost first (the candidates the budget lets through times the unit's
 * flops and bytes), and gives the next unit to whichever rank finishes
 * first, so that a few huge fusions do not leave the other ranks idle.
 * Each rank holds its next unit ahead while enough work remains, so that
 * it never waits for rank 0 between units.
 * The other ranks only check units (with OpenMP threads, as one process
 * does) and send each unit's results back as bytes (unit_wire.h); rank 0
 * checks units too, on a helper thread, between storing what comes back.
 * Rank 0 alone writes the HDF5 file, one fusion at a time as it arrives,
 * so the store's crash safety, lock and resume are those of one process.
 *
 * Same answer at any scale: a unit's results depend only on the unit and
 * the sweep's settings, never on which rank checked it or when; rank 0
 * stores exactly the struct the worker built.  Only wall times, the order
 * in which fusion groups were added, and the log differ.
 *
 * Failures: a rank that dies takes the job down with it under Open MPI
 * (mpirun ends every rank).  Whatever was stored stays stored and the run
 * stays "running", so rerunning the same command resumes it without
 * redoing a stored fusion.  An MPI error that reaches rank 0 instead ends
 * the job the same way, with a message naming the rank.  A worker that
 * stays silent for 3 x the time budget + 30 s is taken for hung: its unit
 * is reported timed out, it gets no more units, and tn_mpi_finish ends
 * the job with MPI_Abort once the rest is written.
 *
 * `tune --check FILE...` shares its units out through the same
 * dispatcher (tn_mpi_dispatch): it plans the units in its own order,
 * and rank 0 prints each unit's lines in that order as they come back
 * (cli_check.c), storing each as it arrives.
 *
 * MPI starts only when the process was launched by an MPI launcher (its
 * environment says so): `tune` run by hand never initialises MPI, and one
 * rank, or a build without MPI, behaves exactly as before.
 */
#ifndef TUNE_MPI_SWEEP_H
#define TUNE_MPI_SWEEP_H

#include "config.h"

#include <stdbool.h>

#include "device/dev_machine.h"
#include "hlo/hlo_error.h"
#include "run/result.h"
#include "run/fusion_run.h"
#include "run/units.h"

/* One planned unit of a run. */
typedef struct tn_mpi_job {
  const char *file;   /* borrowed from the caller's file list */
  int unit;           /* index in tn_units_find's order */
  char name[128];     /* the unit's name */
  bool named;         /* give it to tn_check_unit as so.unit_name (a module
                         of several units, or a part of one) */
  double cost;        /* estimated, in arbitrary units (tn_unit_cost, unit_cost.h) */
  int tag;            /* the caller's own number for it (--check: its place
                         in the order one process would check it in) */
} tn_mpi_job;

/* Everything a rank needs to check a unit besides the unit itself.  It
 * travels with every job, so a worker rank uses nothing of its own
 * command line; what a unit is checked with is rank 0's choice alone. */
typedef struct tn_mpi_settings {
  const char *machine;         /* name or path; NULL: TN_DEFAULT_MACHINE */
  const char *compiler;        /* name or path; NULL: stable */
  const char *const *defects;  /* --defect, ndefects of them (<= TN_MAX_DEFECTS) */
  int ndefects;
  const char *backend;         /* --backend; NULL: the built-in simulator */
  uint64_t seed;               /* the seed inputs are synthesised from */
  int profile;                 /* a chk_inputs_profile */
  int threads, budget;
  uint64_t cover_seed;
  double time_budget;          /* per unit */
  int64_t max_memory;
  int error_maps;
  const char *only;            /* as tn_sweep_opts */
  bool tol_override;
  double atol, rtol;
  int criterion;               /* a chk_tol_criterion */
  const char *ops;
  int replicas;
  int iteration;               /* the execution whose operands are captured */
  bool graph_inputs;           /* capture the unit's operands from the whole
                                  module (capture.h); false: synthesised */
} tn_mpi_settings;

typedef enum tn_mpi_event {
  TN_MPI_UNIT,        /* a unit was checked (rc, why, err, r) */
  TN_MPI_FILE_ERROR,  /* a file did not load or split (err; an empty
                         message: the loader printed it) */
  TN_MPI_FILE_EMPTY   /* a file with nothing to tune */
} tn_mpi_event;

/* What rank 0 hands back to the sweep for each unit, as it arrives. */
typedef struct tn_mpi_done {
  tn_mpi_event event;
  const char *file;
  const tn_mpi_job *job;    /* TN_MPI_UNIT */
  int rc;                   /* tn_check_unit's */
  tn_unit_status why;       /* when rc != 0 */
  hlo_error err;
  tn_fusion_result *r;      /* rc == 0; freed after the callback returns */
  int rank;                 /* who checked it */
  char host[64];
  double elapsed;           /* seconds the unit took on its rank */
  int ndone, njobs;         /* progress over the run's units */
  double eta;               /* seconds left, estimated from the planned
                               costs; < 0 while unknown */
} tn_mpi_done;

typedef void (*tn_mpi_done_fn)(void *ctx, const tn_mpi_done *d);
/* True for a unit (u, one of n of file) the run already holds. */
typedef bool (*tn_mpi_skip_fn)(void *ctx, const char *file, const tn_unit *u, int n);

#ifdef HAVE_MPI
/* Starts MPI when launched by mpirun or srun; 0, or -1 after a message. */
int tn_mpi_start(int *argc, char ***argv);
int tn_mpi_rank(void);
int tn_mpi_size(void);
/* The ranks of the job on this node (1 without MPI). */
int tn_mpi_local_size(void);
/* Rank 0 releases the other ranks; every rank shuts MPI down.  status is
 * the command's exit status: when a rank was given up as hung, rank 0
 * ends the whole job with it (MPI_Abort), since MPI_Finalize would wait
 * for the hung rank forever. */
void tn_mpi_finish(int status);
/* A rank other than 0: checks the units rank 0 sends until it says stop.
 * Returns the exit status. */
int tn_mpi_worker(void);
/* Rank 0: the dispatcher of --sweep and --check.  Sorts jobs largest cost
 * first, hands them out to the ranks as they become free, one ahead while
 * enough remain (rank 0 checks some too, on a helper thread), each checked
 * with s, and calls done with each unit's results as they come back, in
 * whatever order they finish.
 * 0, or -1 with err when it could not start (out of memory). */
int tn_mpi_dispatch(const tn_mpi_settings *s, tn_mpi_job *jobs, int njobs, tn_mpi_done_fn done, void *ctx,
                    hlo_error *err);
/* Rank 0: checks every unit of files (those of one run) on machine and
 * compiler (named as in the sweep file; mach is the loaded one, for the
 * plan) with so's settings, calling done for each unit and each file that
 * yields none.  0, or -1 with err when the plan could not be made. */
int tn_mpi_sweep(const char *machine, const char *compiler, const dev_machine *mach, const tn_sweep_opts *so,
                 char *const *files, int nfiles, tn_mpi_done_fn done, tn_mpi_skip_fn skip, void *ctx,
                 hlo_error *err);
#else
static inline int tn_mpi_start(int *argc, char ***argv) { (void)argc, (void)argv; return 0; }
static inline int tn_mpi_rank(void) { return 0; }
static inline int tn_mpi_size(void) { return 1; }
static inline int tn_mpi_local_size(void) { return 1; }
static inline void tn_mpi_finish(int status) { (void)status; }
static inline int tn_mpi_worker(void) { return 0; }
static inline int tn_mpi_dispatch(const tn_mpi_settings *s, tn_mpi_job *jobs, int njobs, tn_mpi_done_fn done,
                                  void *ctx, hlo_error *err) {
  (void)s, (void)jobs, (void)njobs, (void)done, (void)ctx;
  return hlo_error_set(err, 0, 0, "this tune was built without MPI");
}
static inline int tn_mpi_sweep(const char *machine, const char *compiler, const dev_machine *mach,
                               const tn_sweep_opts *so, char *const *files, int nfiles, tn_mpi_done_fn done,
                               tn_mpi_skip_fn skip, void *ctx, hlo_error *err) {
  (void)machine, (void)compiler, (void)mach, (void)so, (void)files, (void)nfiles, (void)done, (void)skip, (void)ctx;
  return hlo_error_set(err, 0, 0, "this tune was built without MPI");
}
#endif

#endif
