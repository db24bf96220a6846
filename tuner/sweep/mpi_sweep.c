/* mpi_sweep.c — the units of a sweep or a --check handed out to MPI ranks
 * (mpi_sweep.h).
 *
 * Messages are byte buffers (unit_wire.h) with three tags: a job (rank 0
 * to a rank: the unit and every setting it is checked with, so a rank
 * needs nothing else), its result (back to rank 0: status, host, elapsed
 * time, then the unit's results), and stop.  Waiting is a probe-and-sleep
 * loop rather than a blocking receive, because Open MPI's blocking calls
 * spin a core, and on a node where every core runs candidates a waiting
 * rank must not take one.
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

static void nap(void) {
  struct timespec ts = {0, 2 * 1000 * 1000};
  nanosleep(&ts, NULL);
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

int tn_mpi_start(int *argc, char ***argv) {
  if (!launched_by_mpi())
    return 0;
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

/* Waits for a message from `source` (or any) with `tag` (or any). */
static int wait_message(int source, int tag, MPI_Status *st) {
  for (;;) {
    int flag = 0;
    int code = MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st);
    if (code != MPI_SUCCESS)
      return code;
    if (flag)
      return MPI_SUCCESS;
    nap();
  }
}

/* Sends like MPI_Send, but waits the way wait_message does.  A result is
 * too large for Open MPI to buffer, so a blocking send lasts until rank 0
 * takes it, and rank 0 may be busy storing another unit for seconds:
 * MPI_Send spins a core all that time (on datasets/, two ranks spent
 * about twice the CPU of one process), a core the other ranks on the node
 * are computing on. */
static int send_quietly(const void *data, int len, int dest, int tag) {
  MPI_Request rq;
  int code = MPI_Isend(data, len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &rq);
  while (code == MPI_SUCCESS) {
    int done = 0;
    code = MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS || done)
      break;
    nap();
  }
  return code;
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

int tn_mpi_worker(void) {
  worker_state ws;
  memset(&ws, 0, sizeof ws);
  init_host(&ws);
  for (;;) {
    MPI_Status st;
    unsigned char *buf = NULL;
    int n = 0, code = wait_message(0, MPI_ANY_TAG, &st);
    if (code == MPI_SUCCESS)
      code = receive(&st, &buf, &n);
    if (code != MPI_SUCCESS)
      give_up("receiving from", 0, code);
    if (st.MPI_TAG == TAG_STOP) {
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
    code = send_quietly(out.data, (int)out.len, 0, TAG_RESULT);
    tn_wire_free(&out);
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

/* Rank 0's own share: a thread that checks one job at a time. */
typedef struct local_worker {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  worker_state ws;
  tn_wire job, result;
  int has_job, has_result, quit;
} local_worker;

static void *local_main(void *arg) {
  local_worker *lw = arg;
  pthread_mutex_lock(&lw->mu);
  for (;;) {
    while (!lw->has_job && !lw->quit)
      pthread_cond_wait(&lw->cv, &lw->mu);
    if (lw->quit)
      break;
    pthread_mutex_unlock(&lw->mu);
    tn_wire out = {0};
    run_job(&lw->ws, lw->job.data, lw->job.len, &out);
    pthread_mutex_lock(&lw->mu);
    tn_wire_free(&lw->job);
    lw->has_job = 0;
    lw->result = out;
    lw->has_result = 1;
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

/* How long rank 0 waits for a unit before it takes the rank for hung:
 * well past the unit's time budget (which the checker keeps between
 * candidates, so one long candidate may overrun it), with room for a
 * loaded node.  No budget, no limit: a unit may rightly take hours. */
static double hang_limit(double time_budget) { return time_budget > 0 ? 3 * time_budget + 30 : 0; }

/* Gives up the first rank whose unit has run past limit: its unit is
 * reported as timed out, with the rank and host, and the rank gets no
 * more work (its late answer, if any, is dropped).  d is filled for the
 * report; true when a rank was given up. */
static bool give_up_hung(int *inflight, const double *since, char *lost, double limit, const tn_mpi_job *jobs,
                         tn_mpi_done_fn done, void *ctx, tn_mpi_done *d) {
  double now = now_s();
  for (int w = 1; w < g_size; w++) {
    if (inflight[w] < 0 || now - since[w] <= limit)
      continue;
    const tn_mpi_job *j = &jobs[inflight[w]];
    inflight[w] = -1;
    lost[w] = 1;
    g_lost = 1;
    d->event = TN_MPI_UNIT;
    d->file = j->file;
    d->job = j;
    d->rank = w;
    snprintf(d->host, sizeof d->host, "%s", host_of(w));
    d->elapsed = now - since[w];
    d->rc = -1;
    d->why = TN_UNIT_TIMED_OUT;
    d->r = NULL;
    d->eta = -1;
    hlo_error_set(&d->err, 0, 0,
                  "rank %d on %s gave no answer in %.0f s (3 times the time budget and 30 s): taken for hung, "
                  "it gets no more units and the job ends with MPI_Abort once everything is written",
                  w, host_of(w), d->elapsed);
    done(ctx, d);
    return true;
  }
  return false;
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

/* Hands job j to rank 0's own thread (idle, so it takes it at once). */
static void give_local(local_worker *lw, const tn_mpi_settings *s, const tn_mpi_job *j) {
  pthread_mutex_lock(&lw->mu);
  put_job(&lw->job, s, j);
  lw->has_job = 1;
  pthread_cond_signal(&lw->cv);
  pthread_mutex_unlock(&lw->mu);
}

/* Sends job j to worker rank w; an MPI failure ends the run (give_up). */
static void send_job(const tn_mpi_settings *s, const tn_mpi_job *j, int w) {
  tn_wire msg = {0};
  put_job(&msg, s, j);
  int code = msg.failed ? MPI_ERR_NO_MEM : MPI_Send(msg.data, (int)msg.len, MPI_BYTE, w, TAG_JOB, MPI_COMM_WORLD);
  tn_wire_free(&msg);
  if (code != MPI_SUCCESS)
    give_up("sending to", w, code);
}

int tn_mpi_dispatch(const tn_mpi_settings *s, tn_mpi_job *jobs, int njobs, tn_mpi_done_fn done, void *ctx,
                    hlo_error *err) {
  if (njobs > 1)
    qsort(jobs, (size_t)njobs, sizeof *jobs, by_cost);
  double total = 0, finished = 0;
  for (int i = 0; i < njobs; i++)
    total += jobs[i].cost;
  int *inflight = malloc(sizeof *inflight * (size_t)g_size);
  double *since = malloc(sizeof *since * (size_t)g_size);
  char *lost = calloc((size_t)g_size, 1);
  local_worker *lw = calloc(1, sizeof *lw);
  if (!inflight || !since || !lost || !lw) {
    free(inflight);
    free(since);
    free(lost);
    free(lw);
    return hlo_error_set(err, 0, 0, "out of memory starting the MPI run");
  }
  init_host(&lw->ws);
  pthread_mutex_init(&lw->mu, NULL);
  pthread_cond_init(&lw->cv, NULL);
  int have_thread = pthread_create(&lw->thread, NULL, local_main, lw) == 0;
  int next = 0, outstanding = 0, local_job = -1, ndone = 0;
  double t0 = now_s();
  for (int w = 1; w < g_size; w++) {
    inflight[w] = -1;
    if (next < njobs) {
      send_job(s, &jobs[next], w);
      inflight[w] = next++;
      since[w] = now_s();
      outstanding++;
    }
  }
  double limit = hang_limit(s->time_budget);
  while (outstanding > 0 || local_job >= 0 || next < njobs) {
    tn_mpi_done d;
    memset(&d, 0, sizeof d);
    d.njobs = njobs;
    /* Rank 0's thread takes the next job whenever it is idle. */
    if (have_thread && local_job < 0 && next < njobs) {
      give_local(lw, s, &jobs[next]);
      local_job = next++;
      continue;
    }
    int from = -1, jid = -1;
    unsigned char *buf = NULL;
    int n = 0;
    tn_wire local = {0};
    int flag = 0;
    MPI_Status st;
    if (outstanding > 0) {
      int code = MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
      if (code == MPI_SUCCESS && flag)
        code = receive(&st, &buf, &n);
      if (code != MPI_SUCCESS)
        give_up("receiving from", flag ? st.MPI_SOURCE : -1, code);
    }
    if (flag && lost[st.MPI_SOURCE]) {
      /* The late answer of a rank given up as hung: already recorded. */
      free(buf);
      continue;
    }
    d.ndone = ndone + 1;
    if (!flag && limit > 0 && give_up_hung(inflight, since, lost, limit, jobs, done, ctx, &d)) {
      outstanding--;
      ndone++;
      continue;
    }
    if (flag) {
      from = st.MPI_SOURCE;
      jid = inflight[from];
      inflight[from] = -1;
      outstanding--;
    } else if (local_job >= 0) {
      pthread_mutex_lock(&lw->mu);
      if (lw->has_result) {
        local = lw->result;
        memset(&lw->result, 0, sizeof lw->result);
        lw->has_result = 0;
        from = 0;
        jid = local_job;
        local_job = -1;
      }
      pthread_mutex_unlock(&lw->mu);
    } else if (!have_thread && outstanding == 0 && next < njobs) {
      /* No thread: rank 0 checks the job itself. */
      tn_wire job = {0};
      put_job(&job, s, &jobs[next]);
      run_job(&lw->ws, job.data, job.len, &local);
      tn_wire_free(&job);
      from = 0;
      jid = next++;
    }
    if (from < 0 || jid < 0) {
      nap();
      continue;
    }
    /* Keep the rank busy before storing: storing takes a while. */
    if (from == 0 && have_thread && next < njobs) {
      give_local(lw, s, &jobs[next]);
      local_job = next++;
    } else if (from > 0 && next < njobs) {
      send_job(s, &jobs[next], from);
      inflight[from] = next++;
      since[from] = now_s();
      outstanding++;
    }
    finished += jobs[jid].cost;
    d.ndone = ++ndone;
    double elapsed = now_s() - t0;
    d.eta = finished > 0 && total > 0 ? elapsed * (total - finished) / finished : -1;
    if (from > 0)
      deliver(buf, (size_t)n, from, &jobs[jid], done, ctx, &d);
    else
      deliver(local.data, local.len, 0, &jobs[jid], done, ctx, &d);
    free(buf);
    tn_wire_free(&local);
  }
  if (have_thread) {
    pthread_mutex_lock(&lw->mu);
    lw->quit = 1;
    pthread_cond_signal(&lw->cv);
    pthread_mutex_unlock(&lw->mu);
    pthread_join(lw->thread, NULL);
  }
  pthread_mutex_destroy(&lw->mu);
  pthread_cond_destroy(&lw->cv);
  tn_wire_free(&lw->job);
  tn_wire_free(&lw->result);
  free(lw->ws.key);
  tn_capture_cache_clear(&lw->ws.caps);
  free(lw);
  free(inflight);
  free(since);
  free(lost);
  return 0;
}
