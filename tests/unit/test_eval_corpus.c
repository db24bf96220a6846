/* test_eval_corpus.c — the reference evaluator on every real XLA module.
 *
 * Usage: test_eval_corpus [DIR]      (DIR defaults to $TUNE_CORPUS)
 *
 * Every *.hlo file of the corpus folder, in sorted order, is parsed and
 * verified (failures there are the parser's and verifier's business, tested
 * by test_corpus; they are listed and counted as "rejected" but do not fail
 * this test).  A module that chk_eval_supported refuses is counted as
 * unsupported and the refused op is tallied.  Every other module gets
 * seeded inputs (chk_inputs_make, seed 0) and is evaluated; any error is a
 * failure, printed as `file: error`.
 *
 * Replicas.  Modules with collectives are evaluated with as many simulated
 * replicas as they address, decided up front rather than by retrying after
 * a failure (a retry would hide real errors behind "it worked with 2"):
 *   N = max(replica_count from the header, 1 + the largest replica id named
 *           in any replica_groups or source_target_pairs, the group size an
 *           all-gather or reduce-scatter with replica_groups={} implies by
 *           its shapes),
 * else 1.  When that fails and the module has collectives, it is evaluated
 * once more with the other of 1 and 2 replicas (replica_groups={} means
 * "all replicas", and only the shapes say how many the author meant: an
 * all-gather f32[1] -> f32[2] wants 2, f32[1] -> f32[1] wants 1); success
 * then counts as evaluated and both attempts are printed.
 *
 * Elided constants ({...}) cannot be evaluated, yet chk_eval_supported
 * only looks at opcodes and accepts them; such modules are counted as
 * unsupported under the name "constant {...}" (reported upstream).
 * N > 8 is counted as "too large", as are modules whose entry parameters
 * total more than 256 MB, or that over all replicas have an instruction
 * over 1 GB, instructions totalling over 4 GB, or dots and convolutions of
 * more than 2^32 multiply-adds: a
 * conformance run must not depend on the machine's memory or patience.
 *
 * Each module runs in a child process with a time limit
 * ($TUNE_EVAL_CORPUS_TIMEOUT seconds, default 20): a module that runs out
 * of time is counted as "timed out", not as a failure, because the corpus
 * holds loops that never end (while with a constant-true condition), which
 * XLA would not finish either; a crash is a failure.
 *
 * The last line is `N evaluated, M unsupported, F failed` (preceded by the
 * rejected, too-large and timed-out counts and the unsupported-op tally).  Exit status:
 * 77 (automake's SKIP) when the folder is absent, 1 when F > 0, else 0.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, clock_gettime, fork */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corpus_walk.h"
#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_verify.h"
#include "check/inputs.h"

enum { MAX_REPLICAS = 8 };

#define MAX_PARAM_BYTES ((int64_t)256 << 20)
#define MAX_INSTR_BYTES 1073741824.0 /* one value, times replicas */
#define MAX_TOTAL_BYTES 4294967296.0 /* every value once, times replicas */
/* Dots and convolutions over all replicas: 2^32 multiply-adds is a few
 * seconds for the reference's kernels; real dumps hold 10^11 ones. */
#define MAX_MACS 4294967296.0

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Bytes of a (possibly tuple) shape as the evaluator stores it; saturates
 * instead of overflowing on absurd shapes. */
static int64_t shape_bytes(const hlo_shape *s) {
  if (s->type == HLO_TUPLE) {
    int64_t total = 0;
    for (int i = 0; i < s->ntuple; i++) {
      int64_t b = shape_bytes(&s->elems[i]);
      total = b > INT64_MAX - total ? INT64_MAX : total + b;
    }
    return total;
  }
  int64_t n = (int64_t)hlo_etype_host_size(s->type);
  for (int d = 0; d < s->rank; d++) {
    int64_t k = s->dims[d] < 0 ? 0 : s->dims[d];
    if (k != 0 && n > INT64_MAX / k)
      return INT64_MAX;
    n *= k;
  }
  return n;
}

static bool is_collective(hlo_opcode op) {
  switch (op) {
  case HLO_OP_ALL_GATHER: case HLO_OP_ALL_GATHER_START:
  case HLO_OP_ALL_REDUCE: case HLO_OP_ALL_REDUCE_START:
  case HLO_OP_ALL_TO_ALL: case HLO_OP_REDUCE_SCATTER:
  case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_COLLECTIVE_PERMUTE_START:
  case HLO_OP_COLLECTIVE_BROADCAST: case HLO_OP_RAGGED_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

/* What sizing needs to know about a module, over every computation (a
 * superset of the reachable ones, which is fine for a guard). */
typedef struct scan {
  bool collectives;
  int64_t max_id;         /* largest replica id named, -1 when none */
  int64_t max_instr_bytes;
  double total_bytes;     /* of every instruction's value, each counted once */
  double macs;            /* multiply-adds of every dot and convolution,
                             each counted once (loop trip counts unknown) */
} scan;

static double shape_elements(const hlo_shape *s) {
  double n = 1;
  for (int d = 0; d < s->rank; d++)
    n *= (double)(s->dims[d] < 0 ? 0 : s->dims[d]);
  return n;
}

/* Multiply-adds of a dot (output elements times the contracted size) or a
 * convolution (output elements times the kernel's elements per output
 * feature); 0 for anything else. */
static double instr_macs(const hlo_instr *ins) {
  if (ins->shape.type == HLO_TUPLE)
    return 0;
  if (ins->op == HLO_OP_DOT && ins->noperands == 2) {
    const hlo_shape *l = &ins->operands[0]->shape;
    double k = 1;
    for (int i = 0; i < ins->attrs.dot.lhs_contracting.n; i++) {
      int64_t d = ins->attrs.dot.lhs_contracting.v[i];
      if (d >= 0 && d < l->rank)
        k *= (double)l->dims[d];
    }
    return shape_elements(&ins->shape) * k;
  }
  if (ins->op == HLO_OP_CONVOLUTION && ins->noperands == 2) {
    const hlo_shape *kern = &ins->operands[1]->shape;
    int64_t of = ins->attrs.conv.kernel_output_feature;
    double per = shape_elements(kern);
    if (of >= 0 && of < kern->rank && kern->dims[of] > 0)
      per /= (double)kern->dims[of];
    return shape_elements(&ins->shape) * per;
  }
  return 0;
}

static void scan_module(const hlo_module *m, scan *s) {
  s->collectives = false;
  s->max_id = -1;
  s->max_instr_bytes = 0;
  s->macs = 0;
  s->total_bytes = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int i = 0; i < m->comps[c]->ninstrs; i++) {
      const hlo_instr *ins = m->comps[c]->instrs[i];
      int64_t b = shape_bytes(&ins->shape);
      if (b > s->max_instr_bytes)
        s->max_instr_bytes = b;
      s->macs += instr_macs(ins);
      s->total_bytes += (double)b;
      if (!is_collective(ins->op))
        continue;
      s->collectives = true;
      const hlo_replica_groups *g = &ins->attrs.replica_groups;
      /* With replica_groups={} an all-gather's (reduce-scatter's) shapes
       * say the group size: result over operand (operand over result)
       * along the gathered dimension. */
      if (g->ngroups == 0 && ins->attrs.dimensions.n == 1 && ins->noperands == 1 &&
          ins->shape.type != HLO_TUPLE && (ins->op == HLO_OP_ALL_GATHER || ins->op == HLO_OP_REDUCE_SCATTER)) {
        int64_t d = ins->attrs.dimensions.v[0];
        const hlo_shape *a = &ins->operands[0]->shape;
        if (d >= 0 && d < a->rank && d < ins->shape.rank && a->dims[d] > 0 && ins->shape.dims[d] > 0) {
          int64_t big = ins->op == HLO_OP_ALL_GATHER ? ins->shape.dims[d] : a->dims[d];
          int64_t small = ins->op == HLO_OP_ALL_GATHER ? a->dims[d] : ins->shape.dims[d];
          if (big % small == 0 && big / small - 1 > s->max_id)
            s->max_id = big / small - 1;
        }
      }
      for (int k = 0; k < g->ngroups; k++)
        for (int j = 0; j < g->groups[k].n; j++)
          if (g->groups[k].v[j] > s->max_id)
            s->max_id = g->groups[k].v[j];
      for (int k = 0; k < ins->attrs.npairs; k++) {
        if (ins->attrs.pairs[k].a > s->max_id)
          s->max_id = ins->attrs.pairs[k].a;
        if (ins->attrs.pairs[k].b > s->max_id)
          s->max_id = ins->attrs.pairs[k].b;
      }
    }
}

/* The op named in chk_eval_supported's message "...: op 'NAME' is not
 * supported...", or the whole message when it has another form. */
static void refused_op(const char *msg, char *out, size_t n) {
  const char *p = strstr(msg, "op '");
  const char *q = p ? strchr(p + 4, '\'') : NULL;
  if (p && q && (size_t)(q - (p + 4)) < n) {
    memcpy(out, p + 4, (size_t)(q - (p + 4)));
    out[q - (p + 4)] = '\0';
  } else {
    size_t k = strlen(msg) < n ? strlen(msg) : n - 1;
    memcpy(out, msg, k);
    out[k] = '\0';
  }
}

/* A tally of refused op names, in first-seen order. */
typedef struct tally {
  int n, cap;
  char **name;
  int *count;
} tally;

static void tally_add(tally *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->name[i], name) == 0) {
      t->count[i]++;
      return;
    }
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 16;
    char **nn = realloc(t->name, sizeof *nn * (size_t)cap);
    if (nn)
      t->name = nn;
    int *nc = realloc(t->count, sizeof *nc * (size_t)cap);
    if (nc)
      t->count = nc;
    if (!nn || !nc)
      return;
    t->cap = cap;
  }
  t->name[t->n] = strdup(name);
  if (!t->name[t->n])
    return;
  t->count[t->n++] = 1;
}

typedef enum outcome { EVALUATED, UNSUPPORTED, FAILED, REJECTED, TOO_LARGE, TIMED_OUT, NOUTCOMES } outcome;

/* Parses, checks and evaluates one module; for UNSUPPORTED the refused op's
 * name goes to op. */
static outcome run_module(const char *file, const char *path, char *op, size_t opn) {
  size_t len;
  char *text = cw_read_file(path, &len);
  if (!text) {
    printf("%s: cannot read: %s\n", file, strerror(errno));
    return REJECTED;
  }
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, len, &err);
  free(text);
  if (!m) {
    printf("%s:%d:%d: rejected by the parser: %s\n", file, err.line, err.col, err.msg);
    return REJECTED;
  }
  outcome res = FAILED;
  hlo_value **args = NULL, **outs = NULL;
  int nargs = m->entry->nparams, nrep = 1;
  if (hlo_verify(m, &err) != 0) {
    printf("%s:%d:%d: rejected by the verifier: %s\n", file, err.line, err.col, err.msg);
    res = REJECTED;
    goto done;
  }
  if (chk_eval_supported(m, &err) != 0) {
    refused_op(err.msg, op, opn);
    res = UNSUPPORTED;
    goto done;
  }
  for (int c = 0; c < m->ncomps; c++)
    for (int i = 0; i < m->comps[c]->ninstrs; i++) {
      const hlo_instr *ins = m->comps[c]->instrs[i];
      if (ins->op == HLO_OP_CONSTANT && ins->literal && ins->literal->elided) {
        snprintf(op, opn, "constant {...}");
        printf("%s:%d:%d: %s: elided constant, accepted by chk_eval_supported\n", file, ins->line, ins->col,
               ins->name);
        res = UNSUPPORTED;
        goto done;
      }
    }
  scan s;
  scan_module(m, &s);
  int64_t pbytes = 0;
  for (int k = 0; k < nargs; k++) {
    int64_t b = shape_bytes(&m->entry->params[k]->shape);
    pbytes = b > INT64_MAX - pbytes ? INT64_MAX : pbytes + b;
  }
  int64_t want = m->replica_count > 1 ? m->replica_count : 1;
  if (s.max_id + 1 > want)
    want = s.max_id + 1;
  /* Intermediates exist once per replica; parameters are shared. */
  double w = (double)want;
  if (pbytes > MAX_PARAM_BYTES || (double)s.max_instr_bytes * w > MAX_INSTR_BYTES ||
      s.total_bytes * w > MAX_TOTAL_BYTES || want > MAX_REPLICAS || s.macs * w > MAX_MACS) {
    printf("%s: too large: %lld parameter bytes; over %lld replicas: largest instruction %.3g bytes, "
           "all instructions %.3g bytes, %.3g multiply-adds\n",
           file, (long long)pbytes, (long long)want, (double)s.max_instr_bytes * w, s.total_bytes * w,
           s.macs * w);
    res = TOO_LARGE;
    goto done;
  }
  nrep = (int)want;
  args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  outs = calloc((size_t)nrep, sizeof *outs);
  if (!args || !outs) {
    printf("%s: out of memory\n", file);
    goto done;
  }
  chk_inputs_opts io = {.seed = 0, .profile = CHK_INPUTS_NAIVE};
  if (chk_inputs_make(m, &io, args, &err) != 0) {
    printf("%s:%d:%d: inputs: %s\n", file, err.line, err.col, err.msg);
    goto done;
  }
  chk_eval_opts eo = {.replicas = nrep};
  double t0 = now();
  if (chk_eval_module(m, nargs, args, &eo, outs, &err) != 0) {
    int other = nrep == 1 ? 2 : 1;
    if (!s.collectives || (nrep != 1 && nrep != 2)) {
      printf("%s: %d:%d: %s (replicas %d)\n", file, err.line, err.col, err.msg, nrep);
      goto done;
    }
    hlo_error err2 = {0};
    hlo_value **outs2 = calloc(2, sizeof *outs2);
    eo.replicas = other;
    if (!outs2 || chk_eval_module(m, nargs, args, &eo, outs2, &err2) != 0) {
      printf("%s: %d:%d: %s (replicas %d); with %d replicas: %d:%d: %s\n", file, err.line, err.col, err.msg,
             nrep, other, err2.line, err2.col, err2.msg);
      free(outs2);
      goto done;
    }
    printf("%s: note: evaluated with %d replicas after %d failed: %d:%d: %s\n", file, other, nrep, err.line,
           err.col, err.msg);
    free(outs);
    outs = outs2;
    nrep = other;
  }
  double t = now() - t0;
  /* The root must have the shape the module declares, on every replica. */
  res = EVALUATED;
  for (int r = 0; r < nrep; r++) {
    const hlo_shape *root = &m->entry->root->shape;
    bool ok = outs[r] != NULL;
    if (ok && root->type != HLO_TUPLE)
      ok = hlo_value_matches(outs[r], root);
    else if (ok)
      ok = outs[r]->type == HLO_TUPLE && outs[r]->ntuple == root->ntuple;
    if (!ok) {
      printf("%s: replica %d: the result does not have the root's shape\n", file, r);
      res = FAILED;
      break;
    }
  }
  if (t > 5.0)
    printf("%s: slow: %.1f s\n", file, t);
done:
  if (outs)
    for (int r = 0; r < nrep; r++)
      hlo_value_unref(outs[r]);
  if (args)
    for (int k = 0; k < nargs; k++)
      hlo_value_unref(args[k]);
  free(outs);
  free(args);
  hlo_module_free(m);
  return res;
}

/* Runs run_module in a child process under a time limit.  Real dumps
 * include test fixtures that never finish (a while whose condition is the
 * constant true) and the evaluator, like XLA, has no iteration bound; a
 * child also keeps a crash in one module from hiding the rest of the run.
 * The child reports its outcome as exit status CHILD_BASE + outcome (so
 * that a sanitizer's own exit status, e.g. a leak report, reads as a
 * failure) and the refused op through a pipe.  The parent never evaluates
 * anything, so it has no OpenMP threads when it forks. */
enum { CHILD_BASE = 40 };

static outcome run_isolated(const char *file, const char *path, unsigned limit, char *op, size_t opn) {
  int fds[2];
  if (pipe(fds) != 0)
    return run_module(file, path, op, opn);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_module(file, path, op, opn);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(limit);
    outcome o = run_module(file, path, op, opn);
    if (o == UNSUPPORTED && write(fds[1], op, strlen(op)) < 0)
      o = FAILED;
    close(fds[1]);
    exit(CHILD_BASE + (int)o); /* exit, not _exit: flush and leak checks */
  }
  close(fds[1]);
  size_t got = 0;
  ssize_t k;
  while (got + 1 < opn && ((k = read(fds[0], op + got, opn - 1 - got)) > 0 || (k < 0 && errno == EINTR)))
    got += k > 0 ? (size_t)k : 0;
  op[got] = '\0';
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      printf("%s: waitpid: %s\n", file, strerror(errno));
      return FAILED;
    }
  if (WIFEXITED(st) && WEXITSTATUS(st) >= CHILD_BASE && WEXITSTATUS(st) < CHILD_BASE + NOUTCOMES)
    return (outcome)(WEXITSTATUS(st) - CHILD_BASE);
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
    printf("%s: timed out after %u s\n", file, limit);
    return TIMED_OUT;
  }
  if (WIFSIGNALED(st))
    printf("%s: evaluation crashed with signal %d\n", file, WTERMSIG(st));
  else
    printf("%s: evaluation exited with status %d\n", file, WEXITSTATUS(st));
  return FAILED;
}

int main(int argc, char **argv) {
  /* Line buffered, so a log shows how far a slow run got. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *dir = cw_corpus_dir(argc, argv);
  cw_names names;
  int rc = cw_list_hlo(dir, &names);
  if (rc != 0)
    return rc;

  const char *lim = getenv("TUNE_EVAL_CORPUS_TIMEOUT");
  unsigned limit = lim && atoi(lim) > 0 ? (unsigned)atoi(lim) : 20;
  int n[NOUTCOMES] = {0};
  tally unsupported = {0};
  for (size_t i = 0; i < names.count; i++) {
    char path[8192], op[128] = "";
    snprintf(path, sizeof path, "%s/%s", dir, names.name[i]);
    outcome o = run_isolated(names.name[i], path, limit, op, sizeof op);
    if (o == UNSUPPORTED)
      tally_add(&unsupported, op);
    n[o]++;
  }
  cw_names_free(&names);
  if (unsupported.n) {
    printf("unsupported ops (first refused op per module):");
    for (int i = 0; i < unsupported.n; i++) {
      printf(" %s=%d", unsupported.name[i], unsupported.count[i]);
      free(unsupported.name[i]);
    }
    printf("\n");
  }
  free(unsupported.name);
  free(unsupported.count);
  printf("%d rejected by parse/verify, %d too large, %d timed out (limit %u s)\n", n[REJECTED], n[TOO_LARGE],
         n[TIMED_OUT], limit);
  printf("%d evaluated, %d unsupported, %d failed\n", n[EVALUATED], n[UNSUPPORTED], n[FAILED]);
  return n[FAILED] ? 1 : 0;
}
