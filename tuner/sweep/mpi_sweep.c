/* mpi_sweep.c — the units of a sweep or a --check handed out to MPI ranks
 * (mpi_sweep.h).
 *
 * Messages are byte buffers (unit_wire.h) with three tags: a job (rank 0
 * to a rank: the unit and every setting it is checked with, so a rank
 * needs nothing else), its result (back to rank 0: status, host, elapsed
 * time, then the unit's results), and stop.  No rank ever waits in a
 * blocking MPI call, because Open MPI's blocking calls spin a core, and on
 * a node where every core runs candidates a waiting rank must not take
 * one: sends and receives are nonblocking, and waiting is a probe and a
 * sleep that grows while nothing comes.  So that such waits cost no rank
 * any checking time, rank 0 keeps every rank one job ahead (AHEAD), and a
 * worker sends a result without waiting for rank 0 to take it.
 */
#include "mpi_sweep.h"

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run/capture.h"
#include "run/capture_cache.h"
#include "cli/cli.h"
#include "cli/cli_env.h"
#include "run/unit_cost.h"
#include "unit_wire.h"
#include "run/units.h"

enum { TAG_JOB = 1, TAG_RESULT = 2, TAG_STOP = 3 };

static int g_on, g_rank, g_size = 1, g_local_size = 1;
/* Every rank's host name, gathered at the start, so that a rank that
 * never answers can still be named with its host. */
static char (*g_hosts)[64];
/* Set on rank 0 when a rank was given up as hung: MPI_Finalize would
 * wait for it, so the job ends with MPI_Abort once all is written. */
static int g_lost;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps *wait seconds, then doubles *wait up to max: a waiter that keeps
 * finding nothing looks less and less often. */
static void nap(double *wait, double max) {
  struct timespec ts = {0, (long)(*wait * 1e9)};
  nanosleep(&ts, NULL);
  *wait = 2 * *wait < max ? 2 * *wait : max;
}

/* Launched by an MPI launcher?  Open MPI's mpirun, and srun or any PMI or
 * PMIx launcher, each leave their mark in the environment. */
static int launched_by_mpi(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    if (getenv(vars[i]))
      return 1;
  return 0;
}

/* When a rank dies, Open MPI cannot carry on without it and ends every
 * other rank with SIGTERM (so does a cancelled job).  Rank 0 says what
 * that means for the results before it goes: each unit is stored as it
 * arrives and then logged, so everything logged as checked is in the
 * results file, when there is one. */
static void on_term(int sig) {
  static const char msg[] =
      "tune: MPI: the job is being ended (a rank died, or the job was cancelled): what was stored stays (every "
      "unit logged as checked, when there is a results file); the run stays 'running' (a --sweep run again "
      "resumes it)\n";
  ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)w;
  signal(sig, SIG_DFL);
  raise(sig);
}

/* When Open MPI's mpirun put every rank on this node and the user chose no
 * messaging layer (pml), tune chooses ob1, Open MPI's own, which moves
 * messages through shared memory here.  Left to itself Open MPI first
 * tries UCX and libfabric: on the 2-core test machine, where neither has a
 * device, that took 0.2 s of MPI_Init's 0.27 s, about 3% of a two-rank
 * sweep of datasets/, to settle on ob1 anyway.  Across nodes the choice
 * stays Open MPI's, as a fast network wants UCX.  Every rank of the node
 * sees the same environment, so all choose alike, as they must. */
static void choose_pml(void) {
  const char *size = getenv("OMPI_COMM_WORLD_SIZE"), *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (size && local && strcmp(size, local) == 0 && !getenv("OMPI_MCA_pml"))
    setenv("OMPI_MCA_pml", "ob1", 0);
}

int tn_mpi_start(int *argc, char ***argv) {
  if (!launched_by_mpi())
    return 0;
  choose_pml();
  /* Rank 0's helper thread checks units but never calls MPI. */
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fputs("tune: MPI did not start\n", stderr);
    return -1;
  }
  g_on = 1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_rank == 0 && g_size > 1)
    signal(SIGTERM, on_term);
  /* The ranks sharing this node's cores (cli_threads.c divides them). */
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &g_local_size);
    MPI_Comm_free(&node);
  }
  char me[64];
  if (gethostname(me, sizeof me) != 0)
    snprintf(me, sizeof me, "?");
  me[sizeof me - 1] = '\0';
  g_hosts = calloc((size_t)g_size, sizeof *g_hosts);
  if (g_hosts && MPI_Allgather(me, (int)sizeof me, MPI_CHAR, g_hosts, (int)sizeof me, MPI_CHAR, MPI_COMM_WORLD) !=
                     MPI_SUCCESS) {
    free(g_hosts);
    g_hosts = NULL;
  }
  return 0;
}

static const char *host_of(int rank) { return g_hosts && rank >= 0 && rank < g_size ? g_hosts[rank] : "?"; }

int tn_mpi_rank(void) { return g_rank; }
int tn_mpi_size(void) { return g_size; }
int tn_mpi_local_size(void) { return g_local_size; }

void tn_mpi_finish(int status) {
  if (!g_on)
    return;
  free(g_hosts);
  g_hosts = NULL;
  if (g_rank == 0 && g_lost) {
    /* A hung rank would never reach MPI_Finalize; everything is written,
     * so end the job here, with the status the command would have had. */
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  if (g_rank == 0)
    for (int w = 1; w < g_size; w++)
      MPI_Send(NULL, 0, MPI_BYTE, w, TAG_STOP, MPI_COMM_WORLD);
  MPI_Finalize();
  g_on = 0;
}

/* A lost rank cannot be replaced under Open MPI: end the job, leaving the
 * run "running" so that the same command resumes it. */
static void give_up(const char *what, int rank, int code) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, text, &len);
  fprintf(stderr, "tune: MPI: %s rank %d failed (%s); what was stored stays, rerun the command to resume\n", what,
          rank, text);
  fflush(NULL);
  MPI_Abort(MPI_COMM_WORLD, TN_EXIT_USAGE);
}

/* ---- checking one unit (any rank) ---------------------------------------- */

/* The environment of the last job, kept because a run's jobs share it:
 * key names the machine, compiler, defects and backend it was loaded for. */
typedef struct worker_state {
  char *key;
  int env_ok;
  tn_check_env env;
  char host[64];
  tn_capture_cache caps; /* the modules' captures, reused by their units' jobs */
} worker_state;

/* A job's settings as read back from its message (strings malloc'd). */
typedef struct job_in {
  char *machine, *compiler, *backend, *only, *ops, *file;
  char *defects[TN_MAX_DEFECTS];
  int64_t ndefects, seed, profile, threads, budget, cover_seed, max_memory, error_maps, tol_override, criterion,
      replicas, iteration, graph_inputs, unit, named;
  double time_budget, atol, rtol;
} job_in;

static void job_in_free(job_in *j) {
  free(j->machine), free(j->compiler), free(j->backend), free(j->only), free(j->ops), free(j->file);
  for (int i = 0; i < TN_MAX_DEFECTS; i++)
    free(j->defects[i]);
}

/* Reads what put_job wrote; -1 when the bytes are not a job. */
static int get_job(tn_wire_reader *rd, job_in *j) {
  memset(j, 0, sizeof *j);
  tn_wire_get_str(rd, &j->machine);
  tn_wire_get_str(rd, &j->compiler);
  tn_wire_get_i64(rd, &j->ndefects);
  if (j->ndefects < 0 || j->ndefects > TN_MAX_DEFECTS)
    return -1;
  for (int i = 0; i < j->ndefects; i++)
    tn_wire_get_str(rd, &j->defects[i]);
  tn_wire_get_str(rd, &j->backend);
  tn_wire_get_i64(rd, &j->seed);
  tn_wire_get_i64(rd, &j->profile);
  tn_wire_get_i64(rd, &j->threads);
  tn_wire_get_i64(rd, &j->budget);
  tn_wire_get_i64(rd, &j->cover_seed);
  tn_wire_get_f64(rd, &j->time_budget);
  tn_wire_get_i64(rd, &j->max_memory);
  tn_wire_get_i64(rd, &j->error_maps);
  tn_wire_get_str(rd, &j->only);
  tn_wire_get_i64(rd, &j->tol_override);
  tn_wire_get_f64(rd, &j->atol);
  tn_wire_get_f64(rd, &j->rtol);
  tn_wire_get_i64(rd, &j->criterion);
  tn_wire_get_str(rd, &j->ops);
  tn_wire_get_i64(rd, &j->replicas);
  tn_wire_get_i64(rd, &j->iteration);
  tn_wire_get_i64(rd, &j->graph_inputs);
  tn_wire_get_str(rd, &j->file);
  tn_wire_get_i64(rd, &j->unit);
  tn_wire_get_i64(rd, &j->named);
  for (int i = 0; i < j->ndefects; i++)
    if (!j->defects[i])
      return -1;
  return rd->failed || !j->file ? -1 : 0;
}

static void put_job(tn_wire *w, const tn_mpi_settings *s, const tn_mpi_job *j) {
  tn_wire_put_str(w, s->machine);
  tn_wire_put_str(w, s->compiler);
  tn_wire_put_i64(w, s->ndefects);
  for (int i = 0; i < s->ndefects; i++)
    tn_wire_put_str(w, s->defects[i]);
  tn_wire_put_str(w, s->backend);
  tn_wire_put_i64(w, (int64_t)s->seed);
  tn_wire_put_i64(w, s->profile);
  tn_wire_put_i64(w, s->threads);
  tn_wire_put_i64(w, s->budget);
  tn_wire_put_i64(w, (int64_t)s->cover_seed);
  tn_wire_put_f64(w, s->time_budget);
  tn_wire_put_i64(w, s->max_memory);
  tn_wire_put_i64(w, s->error_maps);
  tn_wire_put_str(w, s->only);
  tn_wire_put_i64(w, s->tol_override);
  tn_wire_put_f64(w, s->atol);
  tn_wire_put_f64(w, s->rtol);
  tn_wire_put_i64(w, s->criterion);
  tn_wire_put_str(w, s->ops);
  tn_wire_put_i64(w, s->replicas);
  tn_wire_put_i64(w, s->iteration);
  tn_wire_put_i64(w, s->graph_inputs);
  tn_wire_put_str(w, j->file);
  tn_wire_put_i64(w, j->unit);
  tn_wire_put_i64(w, j->named);
}

/* The key of the environment a job needs; malloc'd, NULL when out of
 * memory.  Fields are separated by a byte no name or path holds. */
static char *env_key(const job_in *j) {
  tn_wire w = {0};
  tn_wire_put(&w, "m", 1);
  if (j->machine)
    tn_wire_put(&w, j->machine, strlen(j->machine));
  tn_wire_put(&w, "\x1f" "c", 2);
  if (j->compiler)
    tn_wire_put(&w, j->compiler, strlen(j->compiler));
  for (int i = 0; i < j->ndefects; i++) {
    tn_wire_put(&w, "\x1f" "d", 2);
    tn_wire_put(&w, j->defects[i], strlen(j->defects[i]));
  }
  tn_wire_put(&w, "\x1f" "b", 2);
  if (j->backend)
    tn_wire_put(&w, j->backend, strlen(j->backend));
  tn_wire_put(&w, "", 1);
  if (w.failed) {
    tn_wire_free(&w);
    return NULL;
  }
  return (char *)w.data;
}

/* What a module's captures depend on, as a cache key: the file (by its
 * identity, so that a file replaced mid-sweep is evaluated anew) and the
 * job's settings that reach tn_capture_units.  NULL when out of memory or
 * the file cannot be examined: then nothing is cached. */
static char *capture_key(const job_in *j) {
  struct stat sb;
  if (stat(j->file, &sb) != 0)
    return NULL;
  char rest[256];
  snprintf(rest, sizeof rest, "|%ju:%ju:%jd:%jd.%09ld|%lld|%lld|%lld|%lld|%lld|%.17g", (uintmax_t)sb.st_dev,
           (uintmax_t)sb.st_ino, (intmax_t)sb.st_size, (intmax_t)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec,
           (long long)j->seed, (long long)j->profile, (long long)j->iteration, (long long)j->max_memory,
           (long long)j->replicas, j->time_budget);
  size_t nf = strlen(j->file), nr = strlen(rest);
  char *k = malloc(nf + nr + 1);
  if (k) {
    memcpy(k, j->file, nf);
    memcpy(k + nf, rest, nr + 1);
  }
  return k;
}

/* Runs the job in `in`, writing its result message to *out. */
static void run_job(worker_state *ws, const unsigned char *in, size_t n, tn_wire *out) {
  double t0 = now_s();
  tn_wire_reader rd = {.data = in, .len = n};
  job_in j;
  int bad = get_job(&rd, &j) != 0;
  tn_capture *caps = NULL;
  int rc = -1;
  tn_unit_status why = TN_UNIT_BAD_INPUT;
  hlo_error err = {0};
  tn_fusion_result r;
  memset(&r, 0, sizeof r);
  hlo_module *m = NULL, *um = NULL;
  tn_units units = {0};
  char *key = NULL;
  if (bad) {
    hlo_error_set(&err, 0, 0, "a damaged job message");
    goto reply;
  }
  /* A test hook only: this rank hangs on its first unit, the way a worker
   * stuck in a loop or a dead file system would (tests/integration). */
  const char *hang = getenv("TUNE_TEST_MPI_HANG_RANK");
  if (hang && *hang && atoi(hang) == g_rank && g_rank > 0)
    for (;;)
      sleep(60);
  if (!(key = env_key(&j))) {
    why = TN_UNIT_TOOL_ERROR;
    hlo_error_set(&err, 0, 0, "out of memory");
    goto reply;
  }
  if (!ws->key || strcmp(ws->key, key) != 0) {
    ws->env_ok = tn_check_env_load(j.machine, j.compiler, (const char *const *)j.defects, (int)j.ndefects,
                                   j.backend, &ws->env) == 0;
    free(ws->key);
    ws->key = key;
    key = NULL;
  }
  if (!ws->env_ok) {
    hlo_error_set(&err, 0, 0, "machine %s, compiler %s, its defects or backend do not load on this rank",
                  j.machine ? j.machine : TN_DEFAULT_MACHINE, j.compiler ? j.compiler : "stable");
    goto reply;
  }
  if (!(m = tn_load_module(j.file, 0))) {
    hlo_error_set(&err, 0, 0, "does not load on this rank");
    goto reply;
  }
  if (tn_units_find(m, &units, &err) != 0)
    goto reply;
  if (j.unit < 0 || j.unit >= units.n) {
    hlo_error_set(&err, 0, 0, "has no unit %lld on this rank (the file changed?)", (long long)j.unit);
    goto reply;
  }
  const tn_unit *un = &units.v[j.unit];
  if (un->ins && !(um = tn_unit_module(m, un, &err))) {
    why = TN_UNIT_UNSUPPORTED;
    goto reply;
  }
  tn_sweep_opts so = {
      .backend = ws->env.backend,
      .machine = &ws->env.machine,
      .compiler = &ws->env.compiler,
      .seed = (uint64_t)j.seed,
      .profile = (chk_inputs_profile)j.profile,
      .threads = (int)j.threads,
      .budget = (int)j.budget,
      .cover_seed = (uint64_t)j.cover_seed,
      .time_budget = j.time_budget,
      .only = j.only,
      .tol_override = j.tol_override != 0,
      .tol = {j.atol, j.rtol},
      .criterion = (chk_tol_criterion)j.criterion,
      .ops = j.ops,
      .error_maps = (int)j.error_maps,
      .replicas = (int)j.replicas,
      .max_memory = j.max_memory,
      .unit_name = j.named ? un->name : NULL,
  };
  /* The same input rule as one process (capture.h): the operands that
   * reach the unit when the whole module is evaluated. */
  int iteration = j.iteration > 0 ? (int)j.iteration : 1;
  const tn_capture *cap = NULL;
  if (un->ins && j.graph_inputs) {
    char *ckey = capture_key(&j);
    const tn_capture *cached = ckey ? tn_capture_cache_get(&ws->caps, ckey, units.n) : NULL;
    if (cached) {
      cap = &cached[j.unit];
    } else if ((caps = calloc((size_t)units.n, sizeof *caps))) {
      tn_capture_opts co = {.seed = (uint64_t)j.seed, .profile = (chk_inputs_profile)j.profile,
                            .iteration = (int)j.iteration, .max_flops = TN_CAPTURE_MAX_FLOPS,
                            .max_memory = j.max_memory, .replicas = (int)j.replicas, .time_budget = j.time_budget};
      tn_capture_units(m, &units, &co, caps);
      if (getenv("TUNE_TEST_MPI_LOG_CAPTURES"))
        fprintf(stderr, "tune: rank %d evaluated %s to capture its units' inputs\n", g_rank, j.file);
      cap = &caps[j.unit];
      if (ckey && tn_capture_cache_put(&ws->caps, ckey, caps, units.n) == 0)
        caps = NULL; /* the cache owns them now */
    }
    free(ckey);
    if (cap && cap->args) {
      so.args = cap->args;
      so.nargs = cap->nargs;
    }
  }
  rc = tn_check_unit(um ? um : m, j.file, &so, &r, &why, &err);
  if (rc == 0)
    tn_capture_note(cap, iteration, &r);
reply:
  tn_wire_put_i64(out, rc);
  tn_wire_put_i64(out, why);
  tn_wire_put_i64(out, err.line);
  tn_wire_put_i64(out, err.col);
  tn_wire_put_str(out, err.msg);
  tn_wire_put_str(out, ws->host);
  tn_wire_put_f64(out, now_s() - t0);
  if (rc == 0) {
    tn_wire_put_result(out, &r);
    tn_fusion_result_free(&r);
  }
  free(key);
  hlo_module_free(um);
  tn_capture_free(caps, caps ? units.n : 0);
  free(caps);
  tn_units_free(&units);
  hlo_module_free(m);
  job_in_free(&j);
}

static void init_host(worker_state *ws) {
  if (gethostname(ws->host, sizeof ws->host) != 0)
    snprintf(ws->host, sizeof ws->host, "?");
  ws->host[sizeof ws->host - 1] = '\0';
}

/* A worker's waits, from 0.25 ms up to 8 ms between looks.  It seldom
 * waits: rank 0 sends each rank its next job ahead (tn_mpi_dispatch). */
#define WORKER_NAP_MIN 0.25e-3
#define WORKER_NAP_MAX 8e-3

/* Waits until the send *rq (or MPI_REQUEST_NULL) is done.  Not MPI_Wait:
 * Open MPI's blocking calls spin a core, one the other ranks on the node
 * are computing on. */
static int finish_send(MPI_Request *rq) {
  double wait = WORKER_NAP_MIN;
  for (;;) {
    int done = 0, code = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS || done)
      return code;
    nap(&wait, WORKER_NAP_MAX);
  }
}

/* Waits for rank 0's next message, moving the last result's send *rq
 * along meanwhile. */
static int wait_job(MPI_Status *st, MPI_Request *rq) {
  double wait = WORKER_NAP_MIN;
  for (;;) {
    int flag = 0, done = 0, code = MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, st);
    if (code == MPI_SUCCESS && !flag && *rq != MPI_REQUEST_NULL)
      code = MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS || flag)
      return code;
    nap(&wait, WORKER_NAP_MAX);
  }
}

/* Receives the message st announced into a malloc'd buffer. */
static int receive(const MPI_Status *st, unsigned char **buf, int *n) {
  int code = MPI_Get_count(st, MPI_BYTE, n);
  if (code != MPI_SUCCESS)
    return code;
  *buf = malloc((size_t)*n + 1);
  if (!*buf)
    return MPI_ERR_NO_MEM;
  return MPI_Recv(*buf, *n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* A worker checks its jobs in the order they come.  Each result is sent
 * without waiting for rank 0 to take it: rank 0 has usually sent the next
 * job already, and the worker starts it at once.  On one node Open MPI
 * completes the transfer from rank 0's side (single copy); across nodes it
 * may need the worker's help, which it gets at the worker's next MPI call,
 * after that job.  The send is finished before the next one begins. */
int tn_mpi_worker(void) {
  worker_state ws;
  memset(&ws, 0, sizeof ws);
  init_host(&ws);
  tn_wire sent = {0}; /* the result being sent: MPI reads it until rq is done */
  MPI_Request rq = MPI_REQUEST_NULL;
  for (;;) {
    MPI_Status st;
    unsigned char *buf = NULL;
    int n = 0, code = wait_job(&st, &rq);
    if (code == MPI_SUCCESS)
      code = receive(&st, &buf, &n);
    if (code != MPI_SUCCESS)
      give_up("receiving from", 0, code);
    if (st.MPI_TAG == TAG_STOP) {
      /* Rank 0 took every result before it said stop. */
      (void)finish_send(&rq);
      tn_wire_free(&sent);
      free(buf);
      free(ws.key);
      tn_capture_cache_clear(&ws.caps);
      return TN_EXIT_OK;
    }
    tn_wire out = {0};
    run_job(&ws, buf, (size_t)n, &out);
    free(buf);
    if (out.failed || out.len > (size_t)INT32_MAX) {
      /* Say so rather than send nothing: rank 0 is waiting for it. */
      tn_wire_free(&out);
      hlo_error err = {0};
      hlo_error_set(&err, 0, 0, "the unit's results did not fit in one message (out of memory)");
      tn_wire_put_i64(&out, -1);
      tn_wire_put_i64(&out, TN_UNIT_TOOL_ERROR);
      tn_wire_put_i64(&out, 0);
      tn_wire_put_i64(&out, 0);
      tn_wire_put_str(&out, err.msg);
      tn_wire_put_str(&out, ws.host);
      tn_wire_put_f64(&out, 0);
    }
    code = finish_send(&rq);
    tn_wire_free(&sent);
    sent = out;
    if (code == MPI_SUCCESS)
      code = MPI_Isend(sent.data, (int)sent.len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD, &rq);
    if (code != MPI_SUCCESS)
      give_up("sending to", 0, code);
  }
}

/* ---- rank 0: plan, hand out, collect --------------------------------------- */

static int by_cost(const void *a, const void *b) {
  const tn_mpi_job *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost > y->cost ? -1 : 1;
  int c = strcmp(x->file, y->file);
  return c ? c : (x->unit > y->unit) - (x->unit < y->unit);
}

static void note_file(tn_mpi_done_fn done, void *ctx, tn_mpi_event ev, const char *file, const hlo_error *err) {
  tn_mpi_done d;
  memset(&d, 0, sizeof d);
  d.event = ev;
  d.file = file;
  d.rc = ev == TN_MPI_FILE_ERROR ? -1 : 0;
  d.why = TN_UNIT_BAD_INPUT;
  if (err)
    d.err = *err;
  d.eta = -1;
  done(ctx, &d);
}

/* The jobs of files, largest first; file-level failures reported now. */
static int plan(const dev_machine *mach, int budget, char *const *files, int nfiles, tn_mpi_done_fn done,
                tn_mpi_skip_fn skip, void *ctx,
                tn_mpi_job **jobs, int *njobs, hlo_error *err) {
  *jobs = NULL;
  *njobs = 0;
  int cap = 0;
  for (int i = 0; i < nfiles; i++) {
    hlo_module *m = tn_load_module(files[i], 0);
    if (!m) {
      note_file(done, ctx, TN_MPI_FILE_ERROR, files[i], NULL);
      continue;
    }
    tn_units units;
    hlo_error ferr = {0};
    if (tn_units_find(m, &units, &ferr) != 0) {
      note_file(done, ctx, TN_MPI_FILE_ERROR, files[i], &ferr);
      hlo_module_free(m);
      continue;
    }
    if (units.n == 0)
      note_file(done, ctx, TN_MPI_FILE_EMPTY, files[i], NULL);
    for (int u = 0; u < units.n; u++) {
      if (skip && skip(ctx, files[i], &units.v[u], units.n))
        continue;
      if (*njobs == cap) {
        cap = cap ? 2 * cap : 64;
        tn_mpi_job *v = realloc(*jobs, sizeof *v * (size_t)cap);
        if (!v) {
          tn_units_free(&units);
          hlo_module_free(m);
          return hlo_error_set(err, 0, 0, "out of memory planning the sweep");
        }
        *jobs = v;
      }
      const tn_unit *un = &units.v[u];
      tn_mpi_job *j = &(*jobs)[(*njobs)++];
      memset(j, 0, sizeof *j);
      j->file = files[i];
      j->unit = u;
      snprintf(j->name, sizeof j->name, "%s", un->name);
      j->named = units.n > 1 || un->ins;
      j->cost = tn_unit_cost(m, un, mach, budget);
    }
    tn_units_free(&units);
    hlo_module_free(m);
  }
  return 0;
}

/* How many jobs rank 0 keeps with each rank (its thread included): the
 * one it checks and the next, so that a rank that finishes a unit starts
 * another at once instead of waiting until rank 0 notices, which may take
 * a while: rank 0 looks for results every few ms only, and may be storing
 * a unit.  Near the end a rank gets no job ahead (ahead_ok). */
enum { AHEAD = 2 };

/* Rank 0's own share: a thread that checks its jobs in turn. */
typedef struct local_worker {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work;     /* to the thread: a job, or quit */
  pthread_cond_t done;     /* to the main thread: a result */
  worker_state ws;
  tn_wire job[AHEAD];      /* to check, first first */
  int njob;
  tn_wire result[AHEAD];   /* checked, for the main thread, first first */
  int nresult;
  int quit;
} local_worker;

static void *local_main(void *arg) {
  local_worker *lw = arg;
  pthread_mutex_lock(&lw->mu);
  for (;;) {
    while (!lw->njob && !lw->quit)
      pthread_cond_wait(&lw->work, &lw->mu);
    if (lw->quit)
      break;
    tn_wire job = lw->job[0];
    lw->njob--;
    memmove(lw->job, lw->job + 1, sizeof *lw->job * (size_t)lw->njob);
    memset(&lw->job[lw->njob], 0, sizeof *lw->job);
    pthread_mutex_unlock(&lw->mu);
    tn_wire out = {0};
    run_job(&lw->ws, job.data, job.len, &out);
    tn_wire_free(&job);
    pthread_mutex_lock(&lw->mu);
    /* Room: the main thread keeps at most AHEAD jobs with the thread,
     * results not yet taken included. */
    lw->result[lw->nresult++] = out;
    pthread_cond_signal(&lw->done);
  }
  pthread_mutex_unlock(&lw->mu);
  return NULL;
}

/* Decodes a result message and hands it to done. */
static void deliver(const unsigned char *buf, size_t n, int rank, const tn_mpi_job *j, tn_mpi_done_fn done,
                    void *ctx, tn_mpi_done *d) {
  tn_wire_reader rd = {.data = buf, .len = n};
  int64_t rc = -1, why = TN_UNIT_TOOL_ERROR, line = 0, col = 0;
  char *msg = NULL, *host = NULL;
  double elapsed = 0;
  tn_wire_get_i64(&rd, &rc);
  tn_wire_get_i64(&rd, &why);
  tn_wire_get_i64(&rd, &line);
  tn_wire_get_i64(&rd, &col);
  tn_wire_get_str(&rd, &msg);
  tn_wire_get_str(&rd, &host);
  tn_wire_get_f64(&rd, &elapsed);
  tn_fusion_result r;
  memset(&r, 0, sizeof r);
  d->event = TN_MPI_UNIT;
  d->file = j->file;
  d->job = j;
  d->rank = rank;
  snprintf(d->host, sizeof d->host, "%s", host ? host : "?");
  d->elapsed = elapsed;
  memset(&d->err, 0, sizeof d->err);
  d->r = NULL;
  if (rd.failed) {
    d->rc = -1;
    d->why = TN_UNIT_TOOL_ERROR;
    hlo_error_set(&d->err, 0, 0, "a damaged result message from rank %d", rank);
  } else {
    d->rc = (int)rc;
    d->why = (tn_unit_status)why;
    d->err.line = (int)line;
    d->err.col = (int)col;
    snprintf(d->err.msg, sizeof d->err.msg, "%s", msg ? msg : "");
    if (rc == 0) {
      if (tn_wire_get_result(&rd, &r, &d->err) == 0) {
        d->r = &r;
      } else {
        d->rc = -1;
        d->why = TN_UNIT_TOOL_ERROR;
      }
    }
  }
  done(ctx, d);
  tn_fusion_result_free(&r);
  free(msg);
  free(host);
}

int tn_mpi_sweep(const char *machine, const char *compiler, const dev_machine *mach, const tn_sweep_opts *so,
                 char *const *files, int nfiles, tn_mpi_done_fn done, tn_mpi_skip_fn skip, void *ctx,
                 hlo_error *err) {
  tn_mpi_job *jobs = NULL;
  int njobs = 0;
  if (plan(mach, so->budget, files, nfiles, done, skip, ctx, &jobs, &njobs, err) != 0) {
    free(jobs);
    return -1;
  }
  /* A sweep's units are checked as one process's sweep checks them:
   * graph inputs at the first execution, no defects beyond the profile's. */
  tn_mpi_settings s = {
      .machine = machine,
      .compiler = compiler,
      .seed = so->seed,
      .profile = so->profile,
      .threads = so->threads,
      .budget = so->budget,
      .cover_seed = so->cover_seed,
      .time_budget = so->time_budget,
      .max_memory = so->max_memory,
      .error_maps = so->error_maps,
      .iteration = 1,
      .graph_inputs = true,
  };
  int rc = tn_mpi_dispatch(&s, jobs, njobs, done, ctx, err);
  free(jobs);
  return rc;
}

/* What rank 0 knows of one rank's work (rank 0's own thread included). */
typedef struct rank_state {
  int q[AHEAD];   /* the jobs it holds, in the order it checks them */
  int nq;
  double since;   /* when it began q[0], as far as rank 0 can tell */
  bool lost;      /* given up as hung: no more jobs, late answers dropped */
} rank_state;

/* A result message matched, being received. */
typedef struct incoming {
  MPI_Request rq;
  unsigned char *buf;
  int n, from;
  int jid;        /* -1: the late answer of a rank given up as hung */
} incoming;

/* A job message on its way to a rank; its bytes live until it is sent. */
typedef struct outgoing {
  MPI_Request rq;
  tn_wire msg;
  int to;
} outgoing;

typedef struct dispatcher {
  const tn_mpi_settings *s;
  const tn_mpi_job *jobs;
  int njobs;
  tn_mpi_done_fn done;
  void *ctx;
  int next;           /* jobs[next..] are not handed out yet */
  int *back, nback;   /* jobs handed back by a rank given up as hung, handed out first */
  double left;        /* the planned cost of the jobs not handed out */
  double total, finished, t0;
  int ndone;
  rank_state *rk;     /* g_size of them */
  local_worker *lw;
  bool have_thread;
  incoming *in;
  int nin, capin;
  outgoing *out;
  int nout, capout;
} dispatcher;

static bool have_job(const dispatcher *D) { return D->nback > 0 || D->next < D->njobs; }

static const tn_mpi_job *peek_job(const dispatcher *D) {
  return &D->jobs[D->nback ? D->back[D->nback - 1] : D->next];
}

static int take_job(dispatcher *D) {
  int j = D->nback ? D->back[--D->nback] : D->next++;
  D->left -= D->jobs[j].cost;
  return j;
}

/* A job ahead is worth giving while the planned work after it keeps every
 * rank busy for as long as it takes: near the end, a job waiting behind a
 * long one on a busy rank would leave an idle rank with nothing to do. */
static bool ahead_ok(const dispatcher *D) {
  double c = peek_job(D)->cost;
  return D->left - c >= g_size * c;
}

static bool worker_live(const dispatcher *D, int r) { return !D->rk[r].lost && (r > 0 || D->have_thread); }

/* Sends job j to worker rank w without waiting for it to arrive: a rank
 * busy with its current unit receives it only after that.  An MPI
 * failure ends the run (give_up). */
static void send_job(dispatcher *D, int j, int w) {
  if (D->nout == D->capout) {
    int cap = D->capout ? 2 * D->capout : 16;
    outgoing *v = realloc(D->out, sizeof *v * (size_t)cap);
    if (!v)
      give_up("sending to", w, MPI_ERR_NO_MEM);
    D->out = v;
    D->capout = cap;
  }
  outgoing *o = &D->out[D->nout];
  memset(o, 0, sizeof *o);
  o->to = w;
  put_job(&o->msg, D->s, &D->jobs[j]);
  int code = o->msg.failed ? MPI_ERR_NO_MEM
                           : MPI_Isend(o->msg.data, (int)o->msg.len, MPI_BYTE, w, TAG_JOB, MPI_COMM_WORLD, &o->rq);
  if (code != MPI_SUCCESS)
    give_up("sending to", w, code);
  D->nout++;
}

/* Frees the job messages that have arrived. */
static void sweep_sent(dispatcher *D) {
  for (int i = 0; i < D->nout;) {
    int done = 0, code = MPI_Test(&D->out[i].rq, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS)
      give_up("sending to", D->out[i].to, code);
    if (!done) {
      i++;
      continue;
    }
    tn_wire_free(&D->out[i].msg);
    D->out[i] = D->out[--D->nout];
  }
}

/* Hands job j to rank 0's own thread. */
static void give_local(local_worker *lw, const tn_mpi_settings *s, const tn_mpi_job *j) {
  pthread_mutex_lock(&lw->mu);
  put_job(&lw->job[lw->njob++], s, j);
  pthread_cond_signal(&lw->work);
  pthread_mutex_unlock(&lw->mu);
}

/* Gives every rank a job to check and, while ahead_ok, one more: first a
 * job to each idle rank, largest first, then the jobs ahead.  The worker
 * ranks come first, as rank 0's thread shares its core with storing. */
static void feed(dispatcher *D) {
  for (int pass = 0; pass < 2; pass++)
    for (int i = 1; i <= g_size; i++) {
      int r = i % g_size;
      rank_state *k = &D->rk[r];
      if (!worker_live(D, r) || !have_job(D) || k->nq >= (pass ? AHEAD : 1) || (k->nq && !ahead_ok(D)))
        continue;
      int j = take_job(D);
      if (k->nq == 0)
        k->since = now_s();
      k->q[k->nq++] = j;
      if (r == 0)
        give_local(D->lw, D->s, &D->jobs[j]);
      else
        send_job(D, j, r);
    }
}

/* Rank r finished its first job; returns it. */
static int pop_job(rank_state *k) {
  int j = k->q[0];
  k->nq--;
  memmove(k->q, k->q + 1, sizeof *k->q * (size_t)k->nq);
  k->since = now_s();
  return j;
}

/* Starts receiving every result message that has come, and counts each
 * as its rank's first job done, so that feed gives the rank another at
 * once.  True when there was one. */
static bool match_results(dispatcher *D) {
  bool any = false;
  for (;;) {
    int flag = 0, n = 0;
    MPI_Message msg;
    MPI_Status st;
    int code = MPI_Improbe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &msg, &st);
    if (code != MPI_SUCCESS)
      give_up("receiving from", -1, code);
    if (!flag)
      return any;
    int w = st.MPI_SOURCE;
    code = MPI_Get_count(&st, MPI_BYTE, &n);
    if (code == MPI_SUCCESS && D->nin == D->capin) {
      int cap = D->capin ? 2 * D->capin : 16;
      incoming *v = realloc(D->in, sizeof *v * (size_t)cap);
      if (v) {
        D->in = v;
        D->capin = cap;
      } else {
        code = MPI_ERR_NO_MEM;
      }
    }
    incoming *p = code == MPI_SUCCESS ? &D->in[D->nin] : NULL;
    if (p && !(p->buf = malloc((size_t)n + 1)))
      code = MPI_ERR_NO_MEM;
    if (code == MPI_SUCCESS)
      code = MPI_Imrecv(p->buf, n, MPI_BYTE, &msg, &p->rq);
    if (code != MPI_SUCCESS)
      give_up("receiving from", w, code);
    p->n = n;
    p->from = w;
    rank_state *k = &D->rk[w];
    p->jid = k->lost || k->nq == 0 ? -1 : pop_job(k);
    D->nin++;
    any = true;
  }
}

/* Hands a unit's result message to the caller. */
static void finish_unit(dispatcher *D, const unsigned char *buf, size_t n, int rank, int jid) {
  tn_mpi_done d;
  memset(&d, 0, sizeof d);
  D->finished += D->jobs[jid].cost;
  d.njobs = D->njobs;
  d.ndone = ++D->ndone;
  double elapsed = now_s() - D->t0;
  d.eta = D->finished > 0 && D->total > 0 ? elapsed * (D->total - D->finished) / D->finished : -1;
  deliver(buf, n, rank, &D->jobs[jid], D->done, D->ctx, &d);
}

/* Delivers one result that is complete, from rank 0's thread or a worker
 * rank, after feeding the ranks (storing takes a while).  True when there
 * was one. */
static bool deliver_one(dispatcher *D) {
  if (D->have_thread) {
    tn_wire res = {0};
    pthread_mutex_lock(&D->lw->mu);
    if (D->lw->nresult) {
      res = D->lw->result[0];
      D->lw->nresult--;
      memmove(D->lw->result, D->lw->result + 1, sizeof *D->lw->result * (size_t)D->lw->nresult);
      memset(&D->lw->result[D->lw->nresult], 0, sizeof *D->lw->result);
    }
    pthread_mutex_unlock(&D->lw->mu);
    if (res.data) {
      int jid = pop_job(&D->rk[0]);
      feed(D);
      finish_unit(D, res.data, res.len, 0, jid);
      tn_wire_free(&res);
      return true;
    }
  }
  for (int i = 0; i < D->nin; i++) {
    int done = 0, code = MPI_Test(&D->in[i].rq, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS)
      give_up("receiving from", D->in[i].from, code);
    if (!done)
      continue;
    incoming p = D->in[i];
    D->in[i] = D->in[--D->nin];
    feed(D);
    if (p.jid >= 0)
      finish_unit(D, p.buf, (size_t)p.n, p.from, p.jid);
    free(p.buf);
    return true;
  }
  return false;
}

/* How long rank 0 waits for a unit before it takes the rank for hung:
 * well past the unit's time budget (which the checker keeps between
 * candidates, so one long candidate may overrun it), with room for a
 * loaded node.  No budget, no limit: a unit may rightly take hours. */
static double hang_limit(double time_budget) { return time_budget > 0 ? 3 * time_budget + 30 : 0; }

/* Gives up the first worker rank whose unit has run past limit: its unit
 * is reported as timed out, with the rank and host; the job it held ahead,
 * which it never began, goes to the other ranks; it gets no more work (a
 * late answer is dropped).  True when a rank was given up. */
static bool give_up_hung(dispatcher *D, double limit) {
  double now = now_s();
  for (int w = 1; w < g_size; w++) {
    rank_state *k = &D->rk[w];
    if (k->lost || k->nq == 0 || now - k->since <= limit)
      continue;
    const tn_mpi_job *j = &D->jobs[k->q[0]];
    for (int i = k->nq - 1; i >= 1; i--) {
      D->back[D->nback++] = k->q[i];
      D->left += D->jobs[k->q[i]].cost;
    }
    /* A result it began sending may need its help to arrive (across
     * nodes): its unit goes to the other ranks too, and the message, if
     * it ever comes, is dropped. */
    for (int i = 0; i < D->nin; i++)
      if (D->in[i].from == w && D->in[i].jid >= 0) {
        D->back[D->nback++] = D->in[i].jid;
        D->left += D->jobs[D->in[i].jid].cost;
        D->in[i].jid = -1;
      }
    k->nq = 0;
    k->lost = true;
    g_lost = 1;
    tn_mpi_done d;
    memset(&d, 0, sizeof d);
    d.event = TN_MPI_UNIT;
    d.file = j->file;
    d.job = j;
    d.rank = w;
    snprintf(d.host, sizeof d.host, "%s", host_of(w));
    d.elapsed = now - k->since;
    d.rc = -1;
    d.why = TN_UNIT_TIMED_OUT;
    d.njobs = D->njobs;
    d.ndone = ++D->ndone;
    d.eta = -1;
    hlo_error_set(&d.err, 0, 0,
                  "rank %d on %s gave no answer in %.0f s (3 times the time budget and 30 s): taken for hung, "
                  "it gets no more units and the job ends with MPI_Abort once everything is written",
                  w, host_of(w), d.elapsed);
    D->done(D->ctx, &d);
    return true;
  }
  return false;
}

/* Rank 0's waits between looks for results: from 0.5 ms, doubling up to
 * 16 ms while every busy rank holds a job ahead (a late look then costs no
 * rank any time), up to 1 ms while a rank about to run dry could be given
 * one.  Rank 0's thread wakes it at once (lw->done). */
#define POLL_MIN 0.5e-3
#define POLL_MAX 16e-3
#define POLL_URGENT 1e-3

static double poll_max(const dispatcher *D) {
  if (!have_job(D))
    return POLL_MAX;
  for (int w = 1; w < g_size; w++)
    if (!D->rk[w].lost && D->rk[w].nq < AHEAD)
      return POLL_URGENT;
  return POLL_MAX;
}

static void idle_wait(dispatcher *D, double *wait) {
  double max = poll_max(D);
  if (*wait > max)
    *wait = max;
  if (!D->have_thread) {
    nap(wait, max);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long ns = ts.tv_nsec + (long)(*wait * 1e9);
  ts.tv_sec += ns / 1000000000L;
  ts.tv_nsec = ns % 1000000000L;
  pthread_mutex_lock(&D->lw->mu);
  if (!D->lw->nresult)
    pthread_cond_timedwait(&D->lw->done, &D->lw->mu, &ts);
  pthread_mutex_unlock(&D->lw->mu);
  *wait = 2 * *wait < max ? 2 * *wait : max;
}

static bool busy(const dispatcher *D) {
  if (have_job(D))
    return true;
  for (int i = 0; i < D->nin; i++)
    if (!D->rk[D->in[i].from].lost)
      return true;
  for (int r = 0; r < g_size; r++)
    if (D->rk[r].nq)
      return true;
  return false;
}

static bool any_worker(const dispatcher *D) {
  for (int r = 0; r < g_size; r++)
    if (worker_live(D, r))
      return true;
  return false;
}

static int start_thread(local_worker *lw) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0)
    return -1;
  int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&lw->done, &ca) == 0;
  pthread_condattr_destroy(&ca);
  if (!ok)
    return -1;
  if (pthread_create(&lw->thread, NULL, local_main, lw) != 0) {
    pthread_cond_destroy(&lw->done);
    return -1;
  }
  return 0;
}

/* Rank 0's loop: feed the ranks, take what comes back, store it one unit
 * at a time, and otherwise sleep, never spinning: rank 0's thread and the
 * other ranks on its node compute on every core. */
int tn_mpi_dispatch(const tn_mpi_settings *s, tn_mpi_job *jobs, int njobs, tn_mpi_done_fn done, void *ctx,
                    hlo_error *err) {
  if (njobs > 1)
    qsort(jobs, (size_t)njobs, sizeof *jobs, by_cost);
  dispatcher D = {.s = s, .jobs = jobs, .njobs = njobs, .done = done, .ctx = ctx};
  for (int i = 0; i < njobs; i++)
    D.total += jobs[i].cost;
  D.left = D.total;
  D.rk = calloc((size_t)g_size, sizeof *D.rk);
  D.back = malloc(sizeof *D.back * (size_t)(njobs + 1));
  D.lw = calloc(1, sizeof *D.lw);
  if (!D.rk || !D.back || !D.lw) {
    free(D.rk);
    free(D.back);
    free(D.lw);
    return hlo_error_set(err, 0, 0, "out of memory starting the MPI run");
  }
  local_worker *lw = D.lw;
  init_host(&lw->ws);
  pthread_mutex_init(&lw->mu, NULL);
  pthread_cond_init(&lw->work, NULL);
  D.have_thread = start_thread(lw) == 0;
  D.t0 = now_s();
  double limit = hang_limit(s->time_budget), wait = POLL_MIN;
  while (busy(&D)) {
    bool acted = match_results(&D);
    feed(&D);
    sweep_sent(&D);
    if (deliver_one(&D) || acted || (limit > 0 && give_up_hung(&D, limit))) {
      wait = POLL_MIN;
      continue;
    }
    if (have_job(&D) && !any_worker(&D)) {
      /* No thread and no rank left: rank 0 checks the job itself. */
      int jid = take_job(&D);
      tn_wire job = {0}, res = {0};
      put_job(&job, s, &jobs[jid]);
      run_job(&lw->ws, job.data, job.len, &res);
      tn_wire_free(&job);
      finish_unit(&D, res.data, res.len, 0, jid);
      tn_wire_free(&res);
      continue;
    }
    idle_wait(&D, &wait);
  }
  /* Every job message has arrived (a rank answers a job only after
   * taking it) except at a rank given up as hung.  MPI may still read
   * those, and write the late answers of such a rank: their buffers are
   * left to the MPI_Abort that ends the job (tn_mpi_finish). */
  sweep_sent(&D);
  for (int i = 0; i < D.nin; i++)
    if (!D.rk[D.in[i].from].lost)
      free(D.in[i].buf);
  if (D.have_thread) {
    pthread_mutex_lock(&lw->mu);
    lw->quit = 1;
    pthread_cond_signal(&lw->work);
    pthread_mutex_unlock(&lw->mu);
    pthread_join(lw->thread, NULL);
    pthread_cond_destroy(&lw->done);
  }
  pthread_mutex_destroy(&lw->mu);
  pthread_cond_destroy(&lw->work);
  for (int i = 0; i < AHEAD; i++) {
    tn_wire_free(&lw->job[i]);
    tn_wire_free(&lw->result[i]);
  }
  free(lw->ws.key);
  tn_capture_cache_clear(&lw->ws.caps);
  free(lw);
  free(D.rk);
  free(D.back);
  free(D.in);
  free(D.out);
  return 0;
}
