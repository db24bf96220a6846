/* reproduce.c — writing a reproducer bundle (reproduce.h). */
#include "reproduce.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "config.h"
#include "device/dev_defect.h"
#include "check/eval.h"
#include "store/h5values.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"
#include "cli/outpath.h"
#include "shquote.h"
#include "check/verdict.h"

/* The --defect words of a command line (tune.c joins argv with single
 * spaces, so words are arguments), appended to out->defects. */
static void command_defects(const char *command, tn_repro_device *out) {
  const char *p = command;
  int want_value = 0;
  while (*p) {
    while (*p == ' ')
      p++;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    size_t n = (size_t)(p - w);
    if (n == 0)
      break;
    const char *val = NULL;
    size_t vn = 0;
    if (want_value) {
      val = w, vn = n, want_value = 0;
    } else if (n == 8 && strncmp(w, "--defect", 8) == 0) {
      want_value = 1;
    } else if (n > 9 && strncmp(w, "--defect=", 9) == 0) {
      val = w + 9, vn = n - 9;
    }
    if (val && out->ndefects < TN_REPRO_MAX_DEFECTS && vn < sizeof out->defects[0]) {
      memcpy(out->defects[out->ndefects], val, vn);
      out->defects[out->ndefects][vn] = '\0';
      out->ndefects++;
    }
  }
}

/* The --defect additions of a schema 2 run, in the catalog's order: the
 * names of its list `defects` that the profile lacks (a profile that
 * cannot be loaded here lacks them all, so the device keeps every defect
 * the run had), and those its command line added although the profile
 * has them too, so that COMPILER=stable keeps what the user asked for.
 * The list decides what the device had; the command can only name some
 * of it (an abbreviated --defe, a command cut at the attribute's length
 * do not). */
static void list_defects(const tn_run_info *run, tn_repro_device *out) {
  dev_compiler profile;
  hlo_error ignored = {0};
  uint32_t added = run->defects;
  if (dev_compiler_find(out->compiler[0] ? out->compiler : "stable", &profile, &ignored) == 0)
    added &= ~profile.defects;
  tn_repro_device named;
  memset(&named, 0, sizeof named);
  command_defects(run->command, &named);
  for (int i = 0; i < named.ndefects; i++) {
    int d = dev_defect_from_name(named.defects[i]);
    if (d >= 0)
      added |= run->defects & (1u << d);
  }
  for (int d = 0; d < DEV_DEFECT_COUNT && out->ndefects < TN_REPRO_MAX_DEFECTS; d++)
    if ((added >> d) & 1u)
      snprintf(out->defects[out->ndefects++], sizeof out->defects[0], "%s", dev_defect_name((dev_defect)d));
}

void tn_repro_device_of_run(const tn_run_info *run, tn_repro_device *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->machine, sizeof out->machine, "%s", run->machine);
  snprintf(out->compiler, sizeof out->compiler, "%s", run->compiler);
  size_t len = strlen(out->compiler);
  int added = len > 2 && strcmp(out->compiler + len - 2, "+d") == 0;
  if (added)
    out->compiler[len - 2] = '\0';
  if (!run->defects_known)
    command_defects(run->command, out); /* schema 1: only the command has them */
  else if (added)
    list_defects(run, out);
}

typedef int (*write_fn)(FILE *f, const tn_repro_bundle *b);

/* Writes DIR/name through fn into a fresh temporary beside it, then
 * renames it into place: whatever DIR/name was before (a link planted in a
 * shared folder, a hard link to someone's file) is replaced, never written
 * through, and only our own file gets the mode. */
static int write_text(const tn_repro_bundle *b, const char *name, mode_t mode, write_fn fn, hlo_error *err) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", b->dir, name) >= (int)sizeof path)
    return hlo_error_set(err, 0, 0, "%s: name too long", b->dir);
  char *tmp = NULL;
  int fd = tn_out_open_temp(path, &tmp, err);
  if (fd < 0)
    return -1;
  FILE *f = fchmod(fd, mode) == 0 ? fdopen(fd, "w") : NULL;
  int rc = f ? fn(f, b) : -1;
  if (!f)
    close(fd);
  else if (ferror(f) | (fclose(f) != 0))
    rc = -1;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -1;
  if (rc != 0) {
    hlo_error_set(err, 0, 0, "%s: cannot write it: %s", path, strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  return rc;
}

static int put_hlo(FILE *f, const tn_repro_bundle *b) {
  fputs(b->hlo, f);
  return 0;
}

static int put_config(FILE *f, const tn_repro_bundle *b) {
  fprintf(f, "%s\n", b->c->config);
  return 0;
}

static int put_seed(FILE *f, const tn_repro_bundle *b) {
  fprintf(f, "%llu\n", (unsigned long long)b->r->seed);
  return 0;
}

/* The defects of the run, joined by spaces (one shell word once quoted). */
static char *joined_defects(const tn_repro_device *d) {
  char *joined = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&joined, &len);
  if (!mf)
    return NULL;
  for (int i = 0; i < d->ndefects; i++)
    fprintf(mf, "%s%s", i ? " " : "", d->defects[i]);
  if (fclose(mf) != 0) {
    free(joined);
    return NULL;
  }
  return joined;
}

/* Every stored string goes through tn_sh_quote; tn_repro_write has
 * refused any that holds a control character. */
static int put_run_sh(FILE *f, const tn_repro_bundle *b) {
  tn_repro_device d;
  tn_repro_device_of_run(b->run, &d);
  fputs("#!/bin/sh\n# Reproducer of fusion ", f);
  tn_sh_quote(f, b->r->name);
  fprintf(f, ", candidate %d (%s), from run ", b->c->id, chk_verdict_name(b->c->verdict));
  tn_sh_quote(f, b->run->id);
  fputs(".\n"
        "# Exit status: 1 while the divergence persists, 0 once it is fixed, 2 on error.\n"
        "#   TUNE      the tune binary (default: tune on PATH, else the build that\n"
        "#             wrote this bundle)\n"
        "#   COMPILER  the compiler profile under test (default: the run's;\n"
        "#             COMPILER=stable has no modelled defect)\n"
        "#   DEFECTS   its extra modelled defects, space-separated (default: the run's;\n"
        "#             DEFECTS= runs without them)\n"
        "#   BACKEND   a device backend .so instead of the built-in simulator\n"
        "# The inputs are read from inputs.h5, never synthesised again, so another\n"
        "# tune version checks exactly the values the finding was made on.\n"
        "cd \"$(dirname \"$0\")\" || exit 2\n"
        "if [ -z \"${TUNE:-}\" ]; then\n"
        "  if command -v tune >/dev/null 2>&1; then\n"
        "    TUNE=tune\n",
        f);
  if (b->tool_path) {
    fputs("  elif [ -x ", f);
    tn_sh_quote(f, b->tool_path);
    fputs(" ]; then\n    TUNE=", f);
    tn_sh_quote(f, b->tool_path);
    fputc('\n', f);
  }
  fputs("  else\n"
        "    echo \"run.sh: no tune to run: put tune on PATH or set TUNE=/path/to/tune\" >&2\n"
        "    echo ",
        f);
  char note[4200];
  snprintf(note, sizeof note, "  (this bundle was written by tune %s%s%s)", PACKAGE_VERSION,
           b->tool_path ? " at " : "", b->tool_path ? b->tool_path : "");
  tn_sh_quote(f, note);
  fputs(" >&2\n"
        "    exit 2\n"
        "  fi\n"
        "fi\n"
        "[ -n \"${COMPILER:-}\" ] || COMPILER=",
        f);
  tn_sh_quote(f, d.compiler[0] ? d.compiler : "stable");
  fputs("\n[ -n \"${DEFECTS+set}\" ] || DEFECTS=", f);
  char *joined = joined_defects(&d);
  if (!joined)
    return -1;
  tn_sh_quote(f, joined);
  free(joined);
  fputs("\nset -f # the names are words, not patterns\n"
        "set --\n"
        "for d in $DEFECTS; do set -- \"$@\" --defect \"$d\"; done\n"
        "set +f\n"
        "if [ -n \"${BACKEND:-}\" ]; then set -- \"$@\" --backend \"$BACKEND\"; fi\n"
        "exec \"$TUNE\" --check fusion.hlo --inputs inputs.h5 --only \"$(cat config.txt)\" --seed \"$(cat seed)\" --machine ",
        f);
  tn_sh_quote(f, d.machine[0] ? d.machine : "tpu-v5e");
  fputs(" --profile ", f);
  tn_sh_quote(f, chk_inputs_profile_name((chk_inputs_profile)b->r->profile));
  fputs(" --compiler \"$COMPILER\" -q \"$@\"\n", f);
  return 0;
}

/* The metrics a finding is quoted by: against the default, or for the
 * default itself against the reference. */
static const chk_metrics *quoted(const tn_cand_result *c, bool is_default) {
  return is_default ? &c->vs_reference : &c->vs_default;
}

static int put_readme(FILE *f, const tn_repro_bundle *b) {
  /* A minimized bundle quotes what run.sh shows: the minimized module. */
  const tn_cand_result *c = b->min_c ? b->min_c : b->c;
  const chk_metrics *m = quoted(c, b->c->id == 0);
  tn_repro_device d;
  tn_repro_device_of_run(b->run, &d);
  const char *compiler = d.compiler[0] ? d.compiler : "stable";
  if (b->isolation_class)
    fprintf(f,
            "Reproducer: fusion %s alone, a %s of an isolation\n"
            "\n"
            "Found by run %s (%s) of %s (tune --isolate), machine %s, compiler %s, seed %llu,\n"
            "on the operands the reference's evaluation of the whole module gave it.\n"
            "Fused vs reference, output %d: %lld of %lld elements differ, max abs %.6g, max rel %.6g\n"
            "(tolerance atol %.3g rtol %.3g).\n"
            "\n"
            "Config:\n  %s\n\n",
            b->r->name, b->isolation_class, b->run->id, b->run->started, b->results_path ? b->results_path : "?",
            b->run->machine, b->run->compiler, (unsigned long long)b->r->seed, c->leaf,
            (long long)c->vs_reference.mismatches, (long long)c->vs_reference.count, c->vs_reference.max_abs,
            c->vs_reference.max_rel, c->tol.atol, c->tol.rtol, c->config);
  else
    fprintf(f,
            "Reproducer: fusion %s, candidate %d\n"
            "\n"
            "Found by run %s (%s) of %s, machine %s, compiler %s, seed %llu.\n"
            "Verdict: %s.  Output %d: %lld of %lld elements differ, max abs %.6g, max rel %.6g\n"
            "(tolerance atol %.3g rtol %.3g).\n"
            "\n"
            "Config:\n  %s\n\n",
            b->r->name, b->c->id, b->run->id, b->run->started, b->results_path ? b->results_path : "?",
            b->run->machine, b->run->compiler, (unsigned long long)b->r->seed, chk_verdict_name(c->verdict), c->leaf,
            (long long)m->mismatches, (long long)m->count, m->max_abs, m->max_rel, c->tol.atol, c->tol.rtol, c->config);
  fprintf(f,
          "Versions:\n"
          "  bundle written by tune %s%s%s\n"
          "  results written by tune %s, command:\n"
          "    %s\n\n",
          PACKAGE_VERSION, b->tool_path ? " at " : "", b->tool_path ? b->tool_path : "",
          b->run_tool_version && b->run_tool_version[0] ? b->run_tool_version : "(unknown)",
          b->run->command[0] ? b->run->command : "(not recorded)");
  if (b->instrs_before >= 0) {
    const chk_metrics *o = quoted(b->c, b->c->id == 0);
    fprintf(f,
            "fusion.hlo was minimized by delta debugging: the kernel went from %d to %d\n"
            "instructions while the divergence with this config persisted",
            b->instrs_before, b->instrs_after);
    if (b->shrunk && b->shrunk[0])
      fprintf(f, ", and its shapes\nshrank (every dimension of a size: %s)", b->shrunk);
    fprintf(f,
            ".  The figures above are\n%s; original.hlo is the fusion as checked, where %s: %lld of %lld\n"
            "elements differed, max abs %.6g, max rel %.6g.\n\n",
            b->min_c ? "the minimized module's, as run.sh checks it" : "the original's (the minimized module\ncould not be checked again)",
            chk_verdict_name(b->c->verdict), (long long)o->mismatches, (long long)o->count, o->max_abs, o->max_rel);
  }
  fputs("Files:\n"
        "  fusion.hlo   the module (HLO text)\n"
        "  config.txt   the candidate's config line\n"
        "  seed         the seed of the timing jitter (and of the inputs, when synthesised)\n",
        f);
  if (b->inputs)
    fprintf(f, "  inputs.h5    /inputs/<k>: the inputs the finding was checked on (%s);\n",
            strcmp(b->r->inputs_from, "file") == 0 ? "read from an --inputs file" : "captured from the whole module");
  else
    fputs("  inputs.h5    /inputs/<k>: the inputs, synthesised from the seed when the bundle was written;\n", f);
  fputs("               /outputs/<k>: the reference evaluator's outputs on them (device\n"
        "               numerics emulated, as --check compares)\n"
        "  run.sh       checks the default and this config on the simulated device, on the\n"
        "               inputs of inputs.h5 (never synthesised again: another tune version\n"
        "               checks the same values)\n"
        "\n"
        "Run (exit 1 while the divergence persists, 0 once it is fixed, 2 on error):\n",
        f);
  char *joined = joined_defects(&d);
  fprintf(f, "  ./run.sh                            the finding's device: compiler %s%s%s\n", compiler,
          d.ndefects ? ", defects " : "", d.ndefects && joined ? joined : "");
  free(joined);
  if (strcmp(compiler, "stable") != 0)
    fprintf(f, "  COMPILER=stable ./run.sh            without compiler %s's modelled defects\n", compiler);
  if (d.ndefects)
    fputs("  DEFECTS= ./run.sh                   without the --defect defects of the run\n", f);
  if (strcmp(compiler, "stable") != 0 || d.ndefects)
    fputs("  COMPILER=stable DEFECTS= ./run.sh   a device with no modelled defect: exit 0 is\n"
          "                                      what the fixed compiler must give\n",
          f);
  fputs("  TUNE=/path/to/tune ./run.sh         another tune (default: tune on PATH, else the\n"
        "                                      build that wrote this bundle)\n"
        "\n"
        "Read the data with h5py:\n"
        "  import h5py; f = h5py.File('inputs.h5'); x = f['inputs/0'][()]; y = f['outputs/0'][()]\n",
        f);
  return 0;
}

/* inputs.h5: synthesised inputs and reference outputs of b->hlo. */
static int write_values(const tn_repro_bundle *b, hlo_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/inputs.h5", b->dir);
  hlo_module *m = hlo_parse(b->hlo, strlen(b->hlo), err);
  if (!m)
    return -1;
  int nargs = m->entry->nparams, replicas = m->replica_count > 1 && m->replica_count <= 4096 ? (int)m->replica_count : 1;
  int rc = -1;
  hlo_value **args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  hlo_value **outs = calloc((size_t)replicas, sizeof *outs);
  hid_t f = -1;
  char *tmp = NULL;
  if (!args || !outs) {
    hlo_error_set(err, 0, 0, "out of memory");
    goto done;
  }
  chk_inputs_opts io = {.seed = b->r->seed, .profile = (chk_inputs_profile)b->r->profile};
  chk_eval_opts eo = {.replicas = replicas, .emulate_device = 1, .rng_seed = b->r->seed};
  if (b->inputs) {
    if (b->ninputs != nargs) {
      hlo_error_set(err, 0, 0, "%d stored inputs for %d parameters", b->ninputs, nargs);
      goto done;
    }
    for (int i = 0; i < nargs; i++)
      args[i] = hlo_value_ref(b->inputs[i]);
  } else if (chk_inputs_make(m, &io, args, err) != 0) {
    goto done;
  }
  if (chk_eval_module(m, nargs, args, &eo, outs, err) != 0)
    goto done;
  /* Into a temporary renamed over DIR/inputs.h5, like the text files. */
  f = tn_out_create_h5_temp(path, &tmp, err);
  if (f < 0)
    goto done;
  if (tn_h5_attr_set_str(f, "tool", "tune", err) == 0 && tn_h5_attr_set_str(f, "tool_version", PACKAGE_VERSION, err) == 0 &&
      tn_h5_attr_set_u64(f, "seed", b->r->seed, err) == 0 && tn_h5_attr_set_str(f, "config", b->c->config, err) == 0 &&
      tn_h5_attr_set_str(f, "inputs_from", b->inputs ? b->r->inputs_from : "synthetic", err) == 0 &&
      tn_h5_attr_set_str(f, "command", b->run->command, err) == 0 &&
      tn_h5_attr_set_str(f, "results_tool_version", b->run_tool_version ? b->run_tool_version : "", err) == 0 &&
      tn_h5_write_inputs(f, "inputs", nargs, args, err) == 0 && tn_h5_write_outputs(f, "outputs", outs[0], err) == 0)
    rc = 0;
  hlo_error cerr = {0};
  if (tn_h5_close(f, &cerr) != 0 && rc == 0) {
    *err = cerr;
    rc = -1;
  }
  if (rc == 0 && rename(tmp, path) != 0) {
    hlo_error_set(err, 0, 0, "cannot rename %s over it: %s", tmp, strerror(errno));
    rc = -1;
  }
done:
  if (tmp && rc != 0)
    unlink(tmp);
  free(tmp);
  for (int i = 0; args && i < nargs; i++)
    hlo_value_unref(args[i]);
  for (int i = 0; outs && i < replicas; i++)
    hlo_value_unref(outs[i]);
  free(args);
  free(outs);
  hlo_module_free(m);
  if (rc != 0) {
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    hlo_error_set(err, 0, 0, "%s: %s", path, msg);
  }
  return rc;
}

static int put_original(FILE *f, const tn_repro_bundle *b) {
  fputs(b->r->hlo, f);
  return 0;
}

/* The stored strings that reach run.sh or README: none may hold a control
 * character (shquote.h).  A results file is input like any other. */
static int check_strings(const tn_repro_bundle *b, hlo_error *err) {
  tn_repro_device d;
  tn_repro_device_of_run(b->run, &d);
  const char *what[7 + TN_REPRO_MAX_DEFECTS] = {"fusion name", "run id",  "compiler",         "machine",
                                                "start time",  "config", "results file name"};
  const char *text[7 + TN_REPRO_MAX_DEFECTS] = {b->r->name,       b->run->id,   b->run->compiler,
                                                b->run->machine,  b->run->started, b->c->config,
                                                b->results_path ? b->results_path : ""};
  int n = 7;
  for (int i = 0; i < d.ndefects; i++, n++) {
    what[n] = "defect in the command line";
    text[n] = d.defects[i];
  }
  for (int i = 0; i < n; i++)
    if (tn_sh_has_control(text[i]))
      return hlo_error_set(err, 0, 0,
                           "the run's %s holds a control character (a newline?); not writing a script from it",
                           what[i]);
  return 0;
}

int tn_repro_write(const tn_repro_bundle *b, hlo_error *err) {
  if (check_strings(b, err) != 0)
    return -1;
  if (mkdir(b->dir, 0777) != 0 && errno != EEXIST)
    return hlo_error_set(err, 0, 0, "%s: cannot create it: %s", b->dir, strerror(errno));
  if (write_text(b, "fusion.hlo", 0644, put_hlo, err) != 0 || write_text(b, "config.txt", 0644, put_config, err) != 0 ||
      write_text(b, "seed", 0644, put_seed, err) != 0 || write_text(b, "README", 0644, put_readme, err) != 0 ||
      write_text(b, "run.sh", 0755, put_run_sh, err) != 0)
    return -1;
  if (b->instrs_before >= 0 && write_text(b, "original.hlo", 0644, put_original, err) != 0)
    return -1;
  return write_values(b, err);
}
