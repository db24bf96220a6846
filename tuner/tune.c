/* tune.c — main: GNU-style option parsing and dispatch to one mode. */
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
        "\n"
        "Options:\n"
        "  -o, --output FILE       write the result to FILE instead of stdout\n"
        "      --no-verify         with --print: skip the verifier\n"
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

enum { OPT_NO_VERIFY = 256, OPT_LIST_MACHINES };

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"print", required_argument, NULL, 'p'},
      {"output", required_argument, NULL, 'o'},
      {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
      {"list-machines", no_argument, NULL, OPT_LIST_MACHINES},
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
  case TN_MODE_NONE:
  default:
    fputs("tune: no mode given\nTry 'tune --help' for more information.\n", stderr);
    return TN_EXIT_USAGE;
  }
}
