/* tune.c — main: GNU-style option parsing and dispatch to one mode. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "fuzz/gen.h"
#include "heap_policy.h"
#include "hlo/hlo_mem.h"
#include "check/inputs.h"
#include "sweep/mpi_sweep.h"
#include "run/only.h"
#include "suggest.h"
#include "check/tolerance.h"
#include "store/libguard.h"

static void usage(FILE *f) {
  fputs("Usage: tune MODE [OPTION]... FILE\n"
        "Autotune ML fusions on a simulated accelerator and check every candidate\n"
        "against the default configuration and a reference evaluator.\n"
        "\n"
        "Modes:\n"
        "  -p, --print FILE        parse and verify HLO text (FILE or - for stdin),\n"
        "                          then print it in canonical form\n"
        "      --list-machines     list the machine models, one per line, name first\n"
        "      --eval FILE         evaluate the entry computation with the reference\n"
        "                          evaluator; write inputs and outputs to -o OUT.h5\n"
        "      --space FILE        print the fusion's candidate configs: 'default CONFIG'\n"
        "                          first, then one CONFIG per line (the default first)\n"
        "      --list-defects      list the modelled miscompilations, one per line:\n"
        "                          NAME, trigger and symptom, tab-separated\n"
        "      --list-compilers    list the compiler profiles, one per line: NAME and\n"
        "                          the modelled defects it carries\n"
        "  -c, --check FILE...     sweep every candidate of each tuning unit (every fusion,\n"
        "                          and every heavy op outside one) on the simulated\n"
        "                          device and check it against the default and the\n"
        "                          reference; -o OUT.h5 appends a run to a results file\n"
        "      --list-fusions FILE...  list the tuning units, one line each: FILE:NAME,\n"
        "                          kind, hero, output shape, flops, bytes, computation\n"
        "      --report RESULTS.h5 write a report of one run of a results file\n"
        "                          (--format html, md, json or junit; -o FILE)\n"
        "      --reproduce RESULTS.h5  write a hermetic reproducer bundle of one stored\n"
        "                          candidate to -o DIR (--fusion NAME --candidate ID)\n"
        "      --sweep FILE.cfg    run the sweep a config file describes (configs/daily.cfg)\n"
        "      --merge OUT.h5 IN.h5...  combine the runs of results files into OUT.h5 and,\n"
        "                          like --sweep, report what changed since the previous run\n"
        "      --isolate FILE      run a module of many fusions fused, unfused (one kernel\n"
        "                          per instruction) and on the reference, each fusion on\n"
        "                          the reference's own operands, and name the culprit\n"
        "                          fusions: fusion-bug, lowering-bug, reference-disagrees\n"
        "      --fuzz              generate well-formed fusions and check each like --check\n"
        "                          (--count N or --seconds S); findings, minimized, go to\n"
        "                          -o RESULTS.h5\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE       write the result to FILE instead of stdout\n"
        "      --no-verify         with --print: skip the verifier\n"
        "      --seed N            with --eval: seed of the synthesised inputs (default 0)\n"
        "      --inputs IN.h5      with --eval: read the inputs from IN.h5 (/inputs/<k>);\n"
        "                          with --check: check the one selected unit on them;\n"
        "                          with --isolate: the module's entry arguments\n"
        "      --profile NAME      with --eval and --check: how inputs are synthesised:\n"
        "                          constrained (default; ranges kept inside every op's\n"
        "                          domain), naive (uniform), edge (adds +-0, subnormals,\n"
        "                          near-overflow values, ties), oob-indices, special\n"
        "                          (NaN, +-inf, +-0, subnormals where only max, min,\n"
        "                          clamp, select, compare or sort use them)\n"
        "      --replicas N        with --eval and --check: simulate N replicas (default:\n"
        "                          the module's replica_count, or the replicas its\n"
        "                          replica groups name when more)\n"
        "      --time-budget S     with --eval: give up after S seconds (default 60;\n"
        "                          0: no limit)\n"
        "      --machine NAME      machine model of the simulated device (default tpu-v5e;\n"
        "                          see --list-machines), or a path to a machine file\n"
        "\n"
        "Options of --report:\n"
        "      --format FMT        html (to look at), md (for a bug tracker), json, junit\n"
        "      --run ID            the run to report (default: the latest in the file)\n"
        "\n"
        "Options of --reproduce:\n"
        "      --fusion NAME       the fusion (its name, or its group name); of an\n"
        "                          isolation run: the culprit (default: the worst)\n"
        "      --candidate ID      the candidate's id (0 is the default); not for an\n"
        "                          isolation run, which bundles a culprit alone\n"
        "      --minimize          shrink the fusion by delta debugging first\n"
        "\n"
        "Options of --sweep:\n"
        "      --shard K/N         check only shard K of N of the corpus (1 <= K <= N)\n"
        "      --run-id ID         name the run ID-MACHINE instead of expanding the sweep\n"
        "                          file's run_id pattern at start: give every shard of one\n"
        "                          job the same ID so that they merge into one run\n"
        "\n"
        "Options of --fuzz (and --seed, --budget, --compiler, --defect, --threads):\n"
        "      --count N           generate and check N fusions\n"
        "      --seconds S         generate and check fusions for S seconds\n"
        "      --template T        draw only from template T (repeatable): elementwise,\n"
        "                          reduce, softmax, norm, matmul, quant, movement,\n"
        "                          gather-scatter, sort, window, conv, fft\n"
        "      --verbose           say why a generated fusion could not be checked\n"
        "\n"
        "Options of --isolate (also --compiler, --defect, --machine, --seed, --profile,\n"
        "--replicas, --max-memory, --time-budget as for --check):\n"
        "      --config UNIT='KNOBS'  run fusion UNIT fused with this config instead of its\n"
        "                          default (knobs as for --only; repeatable)\n"
        "      --inputs IN.h5      the module's entry arguments from IN.h5 (/inputs/<k>, as\n"
        "                          --eval writes them) instead of synthesising them\n"
        "      --from RESULTS.h5   run each unit fused with the config of its first divergent\n"
        "                          candidate that a --check or --sweep of this module stored\n"
        "                          (--run ID picks the run; default the latest); --config\n"
        "                          wins over it\n"
        "      --all-tolerances    derive every unit's tolerance, also where every\n"
        "                          comparison is bit for bit identical and needs none\n"
        "  -o RESULTS.h5           also store the isolation as a new run of RESULTS.h5\n"
        "                          (tune --report renders it)\n"
        "\n"
        "Options of --check:\n"
        "      --compiler NAME     compiler profile (default stable; see configs/compilers)\n"
        "      --defect NAME       enable one modelled defect (repeatable; --list-defects)\n"
        "      --seed N            seed of the synthesised inputs and timing jitter (default 0)\n"
        "      --threads N         threads: candidates checked in parallel, and the\n"
        "                          reference evaluation's loops (default: OMP_NUM_THREADS,\n"
        "                          else the cores, shared by the MPI ranks of a node;\n"
        "                          at most 4 per core, and at least 64 are allowed)\n"
        "      --budget N          check at most N candidates (the default included):\n"
        "                          the default, then those covering the most knob values\n"
        "                          and pairs of knob values not yet covered\n"
        "      --cover-seed N      seed of that choice's tie breaks (default: --seed); a\n"
        "                          sweep's runs record theirs, to be replayed with this\n"
        "      --time-budget S     per unit: start no new candidate after S seconds, and\n"
        "                          give up on a reference evaluation that takes longer\n"
        "      --run-time-budget S  the whole run: start no new unit after S seconds, and\n"
        "                          give each unit at most what is left; a file's units\n"
        "                          then run cheapest first\n"
        "      --inputs-from SRC   graph (default): check a unit of a larger module on the\n"
        "                          operands it gets when the whole module is evaluated\n"
        "                          once; synthetic: synthesise them (as for a file that\n"
        "                          is one unit)\n"
        "      --iteration N       graph: capture a unit's Nth execution (default 1)\n"
        "      --fusion GLOB       check only the units whose NAME or FILE:NAME matches\n"
        "                          (repeatable; also selects for --list-fusions)\n"
        "      --max-memory SIZE   refuse a unit whose estimated or held memory exceeds SIZE\n"
        "                          (bytes, or with K, M, G; default half the RAM);\n"
        "                          threads are reduced first (unit status too-large)\n"
        "      --only 'KNOBS'      check the default and this one config: any of\n"
        "                          tile= k= buf= order= pack= prec= flags=, the\n"
        "                          others from the default; a compile error says why\n"
        "      --stop-on-mismatch  stop at the first divergent candidate\n"
        "      --atol X, --rtol X  override the derived tolerance of float outputs\n"
        "      --ops LIST          check only outputs of these opcodes (comma-separated;\n"
        "                          an unknown opcode is an error)\n"
        "      --tolerance C       the derived bound's criterion: noise-floor (default;\n"
        "                          scaled to each sum's measured rounding noise),\n"
        "                          probabilistic (fails with probability <= 1e-16 per\n"
        "                          element) or worst-case (rigorous for every rounding)\n"
        "      --backend PATH.so   use another device implementation (dev_backend.h)\n"
        "      --json              print the summary as JSON\n"
        "  -q, --quiet             print only errors and divergences\n"
        "  -h, --help              display this help and exit\n"
        "  -V, --version           output version information and exit\n"
        "\n"
        "An option that does not apply to the mode given is an error (exit status 2).\n"
        "\n"
        "Exit status: 0 success (--check: at least one unit verified, none diverged;\n"
        "--isolate: no culprit), 1 a divergence (a culprit) was found, 2 bad usage, bad input or a tool error, 3 (--check)\n"
        "nothing could be verified.\n"
        "Errors in input files are reported as FILE:LINE:COL: error: MESSAGE.\n",
        f);
}

static void version(void) {
  printf("tune %s\n", PACKAGE_VERSION);
  puts("This is free software: you are free to change and redistribute it.");
}

static int set_mode(tn_opts *o, tn_mode m, const char *file) {
  if (o->mode != TN_MODE_NONE) {
    fprintf(stderr, "tune: only one mode may be given\n");
    return -1;
  }
  o->mode = m;
  o->file = file;
  return 0;
}

/* Strict unsigned decimal: digits only, no sign, no spaces, no overflow,
 * at most max.  Prints the error (bad usage) and returns -1. */
static int parse_number(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
  if (!end || *end != '\0' || errno == ERANGE || v < min || v > max) {
    fprintf(stderr, "tune: %s: '%s' is not a number from %llu to %llu\n", opt, s, (unsigned long long)min,
            (unsigned long long)max);
    return -1;
  }
  *out = v;
  return 0;
}

enum { OPT_NO_VERIFY = 256, OPT_LIST_MACHINES, OPT_EVAL, OPT_SEED, OPT_INPUTS, OPT_REPLICAS,
       OPT_SPACE, OPT_LIST_DEFECTS, OPT_MACHINE /* device modes */,
       OPT_COMPILER, OPT_DEFECT, OPT_THREADS, OPT_BUDGET, OPT_TIME_BUDGET, OPT_ONLY,
       OPT_STOP_ON_MISMATCH, OPT_ATOL, OPT_RTOL, OPT_OPS, OPT_TOLERANCE, OPT_BACKEND, OPT_JSON /* --check */ };

enum { OPT_REPORT = 512, OPT_FORMAT, OPT_RUN /* --report */ };

enum { OPT_REPRODUCE = 768, OPT_FUSION, OPT_CANDIDATE, OPT_MINIMIZE, OPT_SWEEP, OPT_SHARD,
       OPT_MERGE, OPT_RUN_ID /* issue 7 */ };

enum { OPT_LIST_FUSIONS = 1280, OPT_MAX_MEMORY, OPT_RUN_TIME_BUDGET, OPT_INPUTS_FROM, OPT_ITERATION /* issue 12 */ };

enum { OPT_COVER_SEED = 1536, OPT_FUZZ, OPT_COUNT, OPT_SECONDS, OPT_TEMPLATE, OPT_VERBOSE /* issue 19 */ };
enum { OPT_LIST_COMPILERS = 1792 /* issue 18 */ };
enum { OPT_ISOLATE = 2048, OPT_CONFIG, OPT_FROM /* issue 16 */, OPT_ALL_TOLERANCES };

/* --max-memory SIZE: bytes, or a number with K, M, G or T (powers of 1024). */
static int parse_size(const char *opt, const char *s, int64_t *out) {
  char *end = NULL;
  errno = 0;
  double v = s[0] >= '0' && s[0] <= '9' ? strtod(s, &end) : -1;
  double mult = 1;
  if (end && *end) {
    switch (*end) {
    case 'K': case 'k': mult = 1024.0; break;
    case 'M': case 'm': mult = 1024.0 * 1024; break;
    case 'G': case 'g': mult = 1024.0 * 1024 * 1024; break;
    case 'T': case 't': mult = 1024.0 * 1024 * 1024 * 1024; break;
    default: mult = 0;
    }
    if (mult > 0 && end[1] != '\0' && !(end[1] == 'B' && end[2] == '\0') && !(end[1] == 'i' && end[2] == 'B' && end[3] == '\0'))
      mult = 0;
  }
  if (!end || errno == ERANGE || mult == 0 || !(v > 0) || v * mult > 9.0e18) {
    fprintf(stderr, "tune: %s: '%s' is not a size (bytes, or a number with K, M, G or T)\n", opt, s);
    return -1;
  }
  *out = (int64_t)(v * mult);
  return 0;
}

/* Half the machine's RAM: the default --max-memory. */
static int64_t half_ram(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return 0;
  return (int64_t)pages * page / 2;
}

/* --shard K/N with 1 <= K <= N <= 100000. */
static int parse_shard(const char *s, int *k, int *n) {
  char extra;
  if (sscanf(s, "%d/%d%c", k, n, &extra) != 2 || *n < 1 || *n > 100000 || *k < 1 || *k > *n) {
    fprintf(stderr, "tune: --shard: '%s' is not K/N with 1 <= K <= N\n", s);
    return -1;
  }
  return 0;
}

/* A run id for --run-id: it becomes an HDF5 group name under /runs and a
 * file name suffix of reports, so no '/', no leading '.', printable ASCII,
 * and short enough to leave room for "-MACHINE" and a "-N" suffix. */
static int parse_run_id(const char *s) {
  size_t n = strlen(s);
  int ok = n > 0 && n <= 40 && s[0] != '.';
  for (size_t i = 0; ok && i < n; i++)
    ok = s[i] > ' ' && s[i] < 127 && s[i] != '/';
  if (!ok) {
    fprintf(stderr, "tune: --run-id: '%s' must be 1 to 40 printable characters without '/' or spaces, "
                    "not starting with '.'\n", s);
    return -1;
  }
  return 0;
}

enum { OPT_PROFILE = 1024 /* --profile (issue 6) */ };

/* A non-negative finite decimal number (for tolerances and seconds). */
static int parse_real(const char *opt, const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!end || end == s || *end != '\0' || errno == ERANGE || !(v >= 0) || v > 1e300) {
    fprintf(stderr, "tune: %s: '%s' is not a non-negative number\n", opt, s);
    return -1;
  }
  *out = v;
  return 0;
}

#define M(x) (1u << TN_MODE_##x)
/* Which modes each option applies to: any other mode refuses it (exit 2)
 * rather than silently ignoring it.  Options not listed are modes, or
 * apply everywhere (-h, -V). */
static const struct {
  int opt;
  unsigned modes;
} applies[] = {
    {'o', M(PRINT) | M(EVAL) | M(SPACE) | M(CHECK) | M(REPORT) | M(REPRODUCE) | M(SWEEP) | M(FUZZ) | M(ISOLATE)},
    {'q', M(SPACE) | M(CHECK) | M(REPRODUCE) | M(FUZZ)},
    {OPT_NO_VERIFY, M(PRINT) | M(EVAL)},
    {OPT_SEED, M(EVAL) | M(CHECK) | M(FUZZ) | M(ISOLATE)},
    {OPT_INPUTS, M(EVAL) | M(CHECK) | M(ISOLATE)},
    {OPT_REPLICAS, M(EVAL) | M(CHECK) | M(ISOLATE)},
    {OPT_PROFILE, M(EVAL) | M(CHECK) | M(ISOLATE)},
    {OPT_TIME_BUDGET, M(EVAL) | M(CHECK) | M(ISOLATE)},
    {OPT_MACHINE, M(SPACE) | M(CHECK) | M(FUZZ) | M(ISOLATE)},
    {OPT_COMPILER, M(CHECK) | M(FUZZ) | M(ISOLATE)},
    {OPT_DEFECT, M(CHECK) | M(FUZZ) | M(ISOLATE)},
    {OPT_THREADS, M(CHECK) | M(REPRODUCE) | M(FUZZ)},
    {OPT_BUDGET, M(CHECK) | M(FUZZ)},
    {OPT_ONLY, M(CHECK)},
    {OPT_STOP_ON_MISMATCH, M(CHECK) | M(FUZZ)},
    {OPT_ATOL, M(CHECK)},
    {OPT_RTOL, M(CHECK)},
    {OPT_OPS, M(CHECK)},
    {OPT_TOLERANCE, M(CHECK)},
    {OPT_BACKEND, M(CHECK) | M(REPRODUCE) | M(FUZZ)},
    {OPT_JSON, M(CHECK)},
    {OPT_FORMAT, M(REPORT)},
    {OPT_RUN, M(REPORT) | M(REPRODUCE) | M(ISOLATE)},
    {OPT_FUSION, M(CHECK) | M(LIST_FUSIONS) | M(REPRODUCE)},
    {OPT_MAX_MEMORY, M(CHECK) | M(SWEEP) | M(FUZZ) | M(ISOLATE)},
    {OPT_RUN_TIME_BUDGET, M(CHECK)},
    {OPT_INPUTS_FROM, M(CHECK)},
    {OPT_ITERATION, M(CHECK)},
    {OPT_CANDIDATE, M(REPRODUCE)},
    {OPT_MINIMIZE, M(REPRODUCE)},
    {OPT_SHARD, M(SWEEP)},
    {OPT_RUN_ID, M(SWEEP)},
    {OPT_COVER_SEED, M(CHECK) | M(FUZZ)},
    {OPT_COUNT, M(FUZZ)},
    {OPT_SECONDS, M(FUZZ)},
    {OPT_TEMPLATE, M(FUZZ)},
    {OPT_VERBOSE, M(FUZZ)},
    {OPT_CONFIG, M(ISOLATE)},
    {OPT_FROM, M(ISOLATE)},
    {OPT_ALL_TOLERANCES, M(ISOLATE)},
};
#undef M

static const char *mode_option(tn_mode m) {
  switch (m) {
  case TN_MODE_PRINT: return "--print";
  case TN_MODE_LIST_MACHINES: return "--list-machines";
  case TN_MODE_EVAL: return "--eval";
  case TN_MODE_SPACE: return "--space";
  case TN_MODE_LIST_DEFECTS: return "--list-defects";
  case TN_MODE_CHECK: return "--check";
  case TN_MODE_REPORT: return "--report";
  case TN_MODE_REPRODUCE: return "--reproduce";
  case TN_MODE_SWEEP: return "--sweep";
  case TN_MODE_MERGE: return "--merge";
  case TN_MODE_LIST_FUSIONS: return "--list-fusions";
  case TN_MODE_FUZZ: return "--fuzz";
  case TN_MODE_LIST_COMPILERS: return "--list-compilers";
  case TN_MODE_ISOLATE: return "--isolate";
  default: return "?";
  }
}

/* The option as the user would write it. */
static void option_text(const struct option *longopts, int opt, char *buf, size_t n) {
  if (opt < 256) {
    for (int i = 0; longopts[i].name; i++)
      if (longopts[i].val == opt) {
        snprintf(buf, n, "-%c/--%s", opt, longopts[i].name);
        return;
      }
    snprintf(buf, n, "-%c", opt);
    return;
  }
  for (int i = 0; longopts[i].name; i++)
    if (longopts[i].val == opt) {
      snprintf(buf, n, "--%s", longopts[i].name);
      return;
    }
  snprintf(buf, n, "an option");
}

/* Refuses each option in seen[0..nseen) that does not apply to the mode. */
static int check_applies(const struct option *longopts, tn_mode mode, const int *seen, int nseen) {
  for (int k = 0; k < nseen; k++)
    for (size_t i = 0; i < sizeof applies / sizeof applies[0]; i++) {
      if (applies[i].opt != seen[k] || (applies[i].modes >> mode) & 1u)
        continue;
      char what[64];
      option_text(longopts, seen[k], what, sizeof what);
      fprintf(stderr, "tune: %s does not apply to %s (it is an option of", what, mode_option(mode));
      int first = 1;
      for (int m = 1; m <= TN_MODE_ISOLATE; m++)
        if ((applies[i].modes >> m) & 1u) {
          fprintf(stderr, "%s%s", first ? " " : ", ", mode_option((tn_mode)m));
          first = 0;
        }
      fputs(")\nTry 'tune --help' for more information.\n", stderr);
      return -1;
    }
  return 0;
}

/* After getopt refused argv[optind - 1]: suggest the closest long option. */
static void suggest_option(const struct option *longopts, const char *arg) {
  if (!arg || strncmp(arg, "--", 2) != 0)
    return;
  char word[64];
  snprintf(word, sizeof word, "%s", arg + 2);
  word[strcspn(word, "=")] = '\0';
  const char *names[96];
  int n = 0;
  for (int i = 0; longopts[i].name && n < 96; i++)
    names[n++] = longopts[i].name;
  const char *s = tn_suggest(word, names, n);
  if (s)
    fprintf(stderr, "tune: did you mean '--%s'?\n", s);
}

/* The command line as one string, for the results file. */
static char *join_args(int argc, char **argv) {
  size_t n = 1;
  for (int i = 0; i < argc; i++)
    n += strlen(argv[i]) + 3;
  char *s = malloc(n);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (int i = 0; i < argc; i++) {
    if (i)
      strcat(s, " ");
    strcat(s, argv[i]);
  }
  return s;
}

static int tune_main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"print", required_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
      {"list-machines", no_argument, NULL, OPT_LIST_MACHINES},
      {"eval", required_argument, NULL, OPT_EVAL},
      {"seed", required_argument, NULL, OPT_SEED},
      {"inputs", required_argument, NULL, OPT_INPUTS},
      {"replicas", required_argument, NULL, OPT_REPLICAS},
      {"space", required_argument, NULL, OPT_SPACE},
      {"list-defects", no_argument, NULL, OPT_LIST_DEFECTS},
      {"machine", required_argument, NULL, OPT_MACHINE},
      {"check", required_argument, NULL, 'c'},
      {"compiler", required_argument, NULL, OPT_COMPILER},
      {"defect", required_argument, NULL, OPT_DEFECT},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"budget", required_argument, NULL, OPT_BUDGET},
      {"cover-seed", required_argument, NULL, OPT_COVER_SEED},
      {"fuzz", no_argument, NULL, OPT_FUZZ},
      {"count", required_argument, NULL, OPT_COUNT},
      {"seconds", required_argument, NULL, OPT_SECONDS},
      {"template", required_argument, NULL, OPT_TEMPLATE},
      {"verbose", no_argument, NULL, OPT_VERBOSE},
      {"time-budget", required_argument, NULL, OPT_TIME_BUDGET},
      {"only", required_argument, NULL, OPT_ONLY},
      {"stop-on-mismatch", no_argument, NULL, OPT_STOP_ON_MISMATCH},
      {"atol", required_argument, NULL, OPT_ATOL},
      {"rtol", required_argument, NULL, OPT_RTOL},
      {"ops", required_argument, NULL, OPT_OPS},
      {"tolerance", required_argument, NULL, OPT_TOLERANCE},
      {"backend", required_argument, NULL, OPT_BACKEND},
      {"json", no_argument, NULL, OPT_JSON},
      {"report", required_argument, NULL, OPT_REPORT},
      {"format", required_argument, NULL, OPT_FORMAT},
      {"run", required_argument, NULL, OPT_RUN},
      {"reproduce", required_argument, NULL, OPT_REPRODUCE},
      {"fusion", required_argument, NULL, OPT_FUSION},
      {"list-fusions", required_argument, NULL, OPT_LIST_FUSIONS},
      {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
      {"run-time-budget", required_argument, NULL, OPT_RUN_TIME_BUDGET},
      {"inputs-from", required_argument, NULL, OPT_INPUTS_FROM},
      {"iteration", required_argument, NULL, OPT_ITERATION},
      {"candidate", required_argument, NULL, OPT_CANDIDATE},
      {"minimize", no_argument, NULL, OPT_MINIMIZE},
      {"sweep", required_argument, NULL, OPT_SWEEP},
      {"shard", required_argument, NULL, OPT_SHARD},
      {"merge", required_argument, NULL, OPT_MERGE},
      {"run-id", required_argument, NULL, OPT_RUN_ID},
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"list-compilers", no_argument, NULL, OPT_LIST_COMPILERS},
      {"isolate", required_argument, NULL, OPT_ISOLATE},
      {"from", required_argument, NULL, OPT_FROM},
      {"all-tolerances", no_argument, NULL, OPT_ALL_TOLERANCES},
      {"config", required_argument, NULL, OPT_CONFIG},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  tn_opts o = {0};
  o.profile = CHK_INPUTS_CONSTRAINED; /* inputs inside every op's domain unless told */
  int c;
  int seen[64], nseen = 0; /* options given, for check_applies */
  opterr = 1;
  while ((c = getopt_long(argc, argv, "p:c:o:qhV", longopts, NULL)) != -1) {
    uint64_t num;
    if (nseen < 64)
      seen[nseen++] = c;
    switch (c) {
    case 'c':
      if (set_mode(&o, TN_MODE_CHECK, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_COMPILER:
      o.compiler = optarg;
      break;
    case OPT_DEFECT:
      if (o.ndefects == TN_MAX_DEFECTS) {
        fprintf(stderr, "tune: --defect: at most %d may be given\n", TN_MAX_DEFECTS);
        return TN_EXIT_USAGE;
      }
      o.defects[o.ndefects++] = optarg;
      break;
    case OPT_THREADS:
      if (parse_number("--threads", optarg, 1, (uint64_t)tn_threads_max(), &num) != 0) {
        fprintf(stderr, "tune: --threads: at most 4 per core (at least 64): more only take memory\n");
        return TN_EXIT_USAGE;
      }
      o.threads = (int)num;
      break;
    case OPT_BUDGET:
      if (parse_number("--budget", optarg, 1, 1000000, &num) != 0)
        return TN_EXIT_USAGE;
      o.budget = (int)num;
      break;
    case OPT_FUZZ:
      if (set_mode(&o, TN_MODE_FUZZ, NULL) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_COUNT:
      if (parse_number("--count", optarg, 1, UINT64_C(1) << 40, &num) != 0)
        return TN_EXIT_USAGE;
      o.fuzz_count = (int64_t)num;
      break;
    case OPT_SECONDS:
      if (parse_real("--seconds", optarg, &o.fuzz_seconds) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_TEMPLATE: {
      int t = tn_fuzz_template_from_name(optarg);
      if (t < 0) {
        fprintf(stderr, "tune: --template: unknown template '%s' (", optarg);
        for (int i = 0; i < TN_FUZZ_TEMPLATE_COUNT; i++)
          fprintf(stderr, "%s%s", i ? ", " : "", tn_fuzz_template_name((tn_fuzz_template)i));
        fputs(")\n", stderr);
        return TN_EXIT_USAGE;
      }
      o.fuzz_templates |= 1u << t;
      break;
    }
    case OPT_VERBOSE:
      o.fuzz_verbose = 1;
      break;
    case OPT_COVER_SEED:
      if (parse_number("--cover-seed", optarg, 0, UINT64_MAX, &o.cover_seed) != 0)
        return TN_EXIT_USAGE;
      o.has_cover_seed = 1;
      break;
    case OPT_TIME_BUDGET:
      if (parse_real("--time-budget", optarg, &o.time_budget) != 0)
        return TN_EXIT_USAGE;
      o.has_time_budget = 1;
      break;
    case OPT_ONLY: {
      hlo_error oerr = {0};
      if (tn_only_check(optarg, &oerr) != 0) {
        fprintf(stderr, "tune: %s\n", oerr.msg);
        return TN_EXIT_USAGE;
      }
      o.only = optarg;
      break;
    }
    case OPT_STOP_ON_MISMATCH:
      o.stop_on_mismatch = 1;
      break;
    case OPT_ATOL:
      if (parse_real("--atol", optarg, &o.atol) != 0)
        return TN_EXIT_USAGE;
      o.has_atol = 1;
      break;
    case OPT_RTOL:
      if (parse_real("--rtol", optarg, &o.rtol) != 0)
        return TN_EXIT_USAGE;
      o.has_rtol = 1;
      break;
    case OPT_OPS:
      if (tn_ops_validate(optarg) != 0)
        return TN_EXIT_USAGE;
      o.ops = optarg;
      break;
    case OPT_TOLERANCE: {
      chk_tol_criterion crit;
      if (chk_tol_criterion_parse(optarg, &crit) != 0) {
        fprintf(stderr, "tune: --tolerance: '%s' is not probabilistic, noise-floor or worst-case\n", optarg);
        return TN_EXIT_USAGE;
      }
      o.tolerance = (int)crit;
      break;
    }
    case OPT_BACKEND:
      o.backend = optarg;
      break;
    case OPT_JSON:
      o.json = 1;
      break;
    case OPT_REPORT:
      if (set_mode(&o, TN_MODE_REPORT, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_FORMAT:
      o.format = optarg;
      break;
    case OPT_RUN:
      o.run_id = optarg;
      break;
    case OPT_REPRODUCE:
      if (set_mode(&o, TN_MODE_REPRODUCE, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_FUSION:
      if (!o.fusion)
        o.fusion = optarg;
      if (o.nfusions == TN_MAX_FUSIONS) {
        fprintf(stderr, "tune: --fusion: at most %d may be given\n", TN_MAX_FUSIONS);
        return TN_EXIT_USAGE;
      }
      o.fusions[o.nfusions++] = optarg;
      break;
    case OPT_LIST_FUSIONS:
      if (set_mode(&o, TN_MODE_LIST_FUSIONS, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_INPUTS_FROM:
      if (strcmp(optarg, "graph") != 0 && strcmp(optarg, "synthetic") != 0) {
        fprintf(stderr, "tune: --inputs-from: '%s' is not graph or synthetic\n", optarg);
        return TN_EXIT_USAGE;
      }
      o.inputs_synthetic = strcmp(optarg, "synthetic") == 0;
      break;
    case OPT_ITERATION: {
      uint64_t n;
      if (parse_number("--iteration", optarg, 1, 1000000, &n) != 0)
        return TN_EXIT_USAGE;
      o.iteration = (int)n;
      break;
    }
    case OPT_RUN_TIME_BUDGET:
      if (parse_real("--run-time-budget", optarg, &o.run_time_budget) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_MAX_MEMORY:
      if (parse_size("--max-memory", optarg, &o.max_memory) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_CANDIDATE:
      if (parse_number("--candidate", optarg, 0, 1000000, &num) != 0)
        return TN_EXIT_USAGE;
      o.candidate = (int)num;
      o.has_candidate = 1;
      break;
    case OPT_MINIMIZE:
      o.minimize = 1;
      break;
    case OPT_SWEEP:
      if (set_mode(&o, TN_MODE_SWEEP, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_SHARD:
      if (parse_shard(optarg, &o.shard_k, &o.shard_n) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_MERGE:
      if (set_mode(&o, TN_MODE_MERGE, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_RUN_ID:
      if (parse_run_id(optarg) != 0)
        return TN_EXIT_USAGE;
      o.sweep_run_id = optarg;
      break;
    case OPT_LIST_COMPILERS:
      if (set_mode(&o, TN_MODE_LIST_COMPILERS, NULL) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_ISOLATE:
      if (set_mode(&o, TN_MODE_ISOLATE, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_FROM:
      o.from = optarg;
      break;
    case OPT_ALL_TOLERANCES:
      o.all_tolerances = 1;
      break;
    case OPT_CONFIG: {
      /* UNIT=KNOBS: the unit's name cannot hold '=', the knobs do */
      const char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || !eq[1]) {
        fprintf(stderr, "tune: --config '%s': expected UNIT='KNOBS', e.g. --config fused_reduce='tile=128 k=512'\n",
                optarg);
        return TN_EXIT_USAGE;
      }
      if (o.nconfigs == TN_MAX_FUSIONS) {
        fprintf(stderr, "tune: --config: at most %d may be given\n", TN_MAX_FUSIONS);
        return TN_EXIT_USAGE;
      }
      o.config_units[o.nconfigs] = optarg;
      o.config_unit_len[o.nconfigs] = (int)(eq - optarg);
      o.config_texts[o.nconfigs++] = eq + 1;
      break;
    }
    case OPT_PROFILE: {
      chk_inputs_profile p;
      if (chk_inputs_profile_from_name(optarg, &p) != 0) {
        const char **names = NULL;
        int k = tn_names_profiles(&names);
        const char *hint = tn_suggest(optarg, names, k);
        fprintf(stderr, "tune: --profile: '%s' is not one of constrained, naive, edge, oob-indices, special%s%s%s\n", optarg,
                hint ? " (did you mean '" : "", hint ? hint : "", hint ? "'?)" : "");
        free(names);
        return TN_EXIT_USAGE;
      }
      o.profile = (int)p;
      break;
    }
    case 'p':
      if (set_mode(&o, TN_MODE_PRINT, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case 'o':
      o.output = optarg;
      break;
    case OPT_NO_VERIFY:
      o.no_verify = 1;
      break;
    case OPT_LIST_MACHINES:
      if (set_mode(&o, TN_MODE_LIST_MACHINES, NULL) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_EVAL:
      if (set_mode(&o, TN_MODE_EVAL, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_SEED:
      if (parse_number("--seed", optarg, 0, UINT64_MAX, &o.seed) != 0)
        return TN_EXIT_USAGE;
      o.has_seed = 1;
      break;
    case OPT_INPUTS:
      o.inputs = optarg;
      break;
    case OPT_REPLICAS: {
      uint64_t r;
      if (parse_number("--replicas", optarg, 1, 4096, &r) != 0)
        return TN_EXIT_USAGE;
      o.replicas = (int)r;
      break;
    }
    case OPT_SPACE:
      if (set_mode(&o, TN_MODE_SPACE, optarg) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_LIST_DEFECTS:
      if (set_mode(&o, TN_MODE_LIST_DEFECTS, NULL) != 0)
        return TN_EXIT_USAGE;
      break;
    case OPT_MACHINE:
      o.machine = optarg;
      break;
    case 'q':
      o.quiet = 1;
      break;
    case 'h':
      usage(stdout);
      return TN_EXIT_OK;
    case 'V':
      version();
      return TN_EXIT_OK;
    default:
      suggest_option(longopts, optind > 1 ? argv[optind - 1] : NULL);
      fputs("Try 'tune --help' for more information.\n", stderr);
      return TN_EXIT_USAGE;
    }
  }
  if (o.mode != TN_MODE_NONE && check_applies(longopts, o.mode, seen, nseen) != 0)
    return TN_EXIT_USAGE;
  if (o.max_memory == 0)
    o.max_memory = half_ram();
  tn_threads_use(o.threads);
  /* The estimates refuse a unit before it runs; the account stops what
   * they could not foresee (hlo_mem.h). */
  hlo_mem_set_limit(o.max_memory);
  /* Under mpirun or srun: --sweep and --check are shared out
   * (mpi_sweep.h); the other ranks check what rank 0 sends them, and any
   * other mode runs once, on rank 0. */
  if (tn_mpi_rank() > 0)
    return o.mode == TN_MODE_SWEEP || o.mode == TN_MODE_CHECK ? tn_mpi_worker() : TN_EXIT_OK;
  if (o.mode == TN_MODE_CHECK || o.mode == TN_MODE_LIST_FUSIONS) {
    /* --check and --list-fusions take one or more files: FILE, then any
     * further operands. */
    int nfiles = 1 + (argc - optind);
    char **files = malloc(sizeof *files * (size_t)nfiles);
    char *cmd = join_args(argc, argv);
    if (!files || !cmd) {
      free(files);
      free(cmd);
      fputs("tune: out of memory\n", stderr);
      return TN_EXIT_USAGE;
    }
    files[0] = (char *)o.file;
    for (int i = optind; i < argc; i++)
      files[1 + i - optind] = argv[i];
    o.command_line = cmd;
    int rc = o.mode == TN_MODE_CHECK ? tn_cmd_check(&o, nfiles, files) : tn_cmd_list_fusions(&o, nfiles, files);
    free(files);
    free(cmd);
    return rc;
  }
  if (o.mode == TN_MODE_FUZZ) {
    if (optind < argc) {
      fprintf(stderr, "tune: unexpected argument '%s'\nTry 'tune --help' for more information.\n", argv[optind]);
      return TN_EXIT_USAGE;
    }
    if (o.fuzz_count > 0 && o.fuzz_seconds > 0) {
      fputs("tune: --fuzz takes --count N or --seconds S, not both\n", stderr);
      return TN_EXIT_USAGE;
    }
    char *cmd = join_args(argc, argv);
    o.command_line = cmd;
    int rc = tn_cmd_fuzz(&o);
    free(cmd);
    return rc;
  }
  if (o.mode == TN_MODE_MERGE) /* OUT.h5 then the inputs */
    return tn_cmd_merge(&o, argc - optind, argv + optind);
  if (o.mode == TN_MODE_SWEEP) {
    char *cmd = join_args(argc, argv);
    o.command_line = cmd;
    int rc = optind < argc ? (fprintf(stderr, "tune: unexpected argument '%s'\n", argv[optind]), TN_EXIT_USAGE)
                           : tn_cmd_sweep(&o);
    free(cmd);
    return rc;
  }
  if (optind < argc) {
    fprintf(stderr, "tune: unexpected argument '%s'\nTry 'tune --help' for more information.\n",
            argv[optind]);
    return TN_EXIT_USAGE;
  }
  switch (o.mode) {
  case TN_MODE_PRINT:
    return tn_cmd_print(&o);
  case TN_MODE_LIST_MACHINES:
    return tn_cmd_list_machines(&o);
  case TN_MODE_EVAL:
    return tn_cmd_eval(&o);
  case TN_MODE_SPACE:
    return tn_cmd_space(&o);
  case TN_MODE_LIST_DEFECTS:
    return tn_cmd_list_defects(&o);
  case TN_MODE_LIST_COMPILERS:
    return tn_cmd_list_compilers(&o);
  case TN_MODE_REPORT:
    return tn_cmd_report(&o);
  case TN_MODE_REPRODUCE:
    return tn_cmd_reproduce(&o);
  case TN_MODE_ISOLATE: {
    /* -o records the command in the run (its defects make the reproducers) */
    char *cmd = join_args(argc, argv);
    o.command_line = cmd;
    int rc = tn_cmd_isolate(&o);
    free(cmd);
    return rc;
  }
  case TN_MODE_NONE:
  default:
    fputs("tune: no mode given\nTry 'tune --help' for more information.\n", stderr);
    return TN_EXIT_USAGE;
  }
}

/* tune itself never calls exit(): it returns from main.  A library that
 * gives up calls exit() instead (libgomp with status 1 when it runs out of
 * memory, HDF5 with -1), and 1 would read as "a divergence was found".
 * Such an exit is a tool error: status 2 with a message, after the
 * library's own and the other exit handlers (registered later, so run
 * earlier). */
static bool main_returned;

static void exit_from_a_library(void) {
  if (main_returned)
    return;
  /* A run that must be all or nothing is taken back, as on a crash. */
  tn_libguard_cleanup();
  /* HDF5 exits without a word. */
  fputs("tune: a library ended the process before tune finished (HDF5 and OpenMP do when "
        "they run out of memory)\n",
        stderr);
  fflush(NULL);
  _exit(TN_EXIT_USAGE);
}

int main(int argc, char **argv) {
  tn_heap_policy_setup();
  atexit(exit_from_a_library);
  tn_libguard_install();
  if (tn_mpi_start(&argc, &argv) != 0)
    return TN_EXIT_USAGE;
  tn_threads_setup(tn_mpi_local_size(), tn_mpi_rank() == 0);
  int status = tune_main(argc, argv);
  tn_mpi_finish(status);
  main_returned = true;
  tn_libguard_main_returned(status);
  return status;
}
