/* tune.c — main: GNU-style option parsing and dispatch to one mode. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"

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
        "\n"
        "Options:\n"
        "  -o, --output FILE       write the result to FILE instead of stdout\n"
        "      --no-verify         with --print: skip the verifier\n"
        "      --seed N            with --eval: seed of the synthesised inputs (default 0)\n"
        "      --inputs IN.h5      with --eval: read the inputs from IN.h5 (/inputs/<k>)\n"
        "      --replicas N        with --eval: simulate N replicas (default 1)\n"
        "      --machine NAME      machine model of the simulated device (default tpu-v5e;\n"
        "                          see --list-machines), or a path to a machine file\n"
        "  -q, --quiet             print only errors\n"
        "  -h, --help              display this help and exit\n"
        "  -V, --version           output version information and exit\n"
        "\n"
        "Exit status: 0 success, 1 a divergence was found, 2 bad usage or bad input.\n"
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
       OPT_SPACE, OPT_LIST_DEFECTS, OPT_MACHINE /* device modes */ };

int main(int argc, char **argv) {
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
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  tn_opts o = {0};
  int c;
  while ((c = getopt_long(argc, argv, "p:o:qhV", longopts, NULL)) != -1) {
    switch (c) {
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
      fputs("Try 'tune --help' for more information.\n", stderr);
      return TN_EXIT_USAGE;
    }
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
  case TN_MODE_NONE:
  default:
    fputs("tune: no mode given\nTry 'tune --help' for more information.\n", stderr);
    return TN_EXIT_USAGE;
  }
}
