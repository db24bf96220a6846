/* cli_eval.c — `tune --eval FILE [--seed N | --inputs IN.h5] -o OUT.h5
 * [--replicas N]`: run the reference evaluator on a module's entry
 * computation and store its inputs and outputs in HDF5.
 *
 * The file is written under a temporary name in OUT's directory (mode 0666
 * less the umask, like any new file) and renamed over OUT only once it is
 * complete, so a failure at any point leaves no half-written OUT.h5 and
 * never destroys an existing one (rename is atomic within a directory,
 * which is why the temporary lives beside OUT).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "cli.h"
#include "config.h"
#include "check/eval.h"
#include "store/h5values.h"
#include "check/inputs.h"
#include "check/intent.h"
#include "outpath.h"
#include "run/fusion_run.h"

/* Evaluation errors point into the module when they can. */
static void report_module_error(const char *file, const hlo_error *err) {
  if (err->line > 0)
    fprintf(stderr, "%s:%d:%d: error: %s\n", file, err->line, err->col, err->msg);
  else
    fprintf(stderr, "%s: error: %s\n", file, err->msg);
}

/* Seconds: far beyond what evaluating a real fusion takes, short enough
 * that a runaway loop in a scripted batch is noticed. */
enum { TN_EVAL_DEFAULT_TIME_BUDGET = 60 };

static void unref_all(hlo_value **v, int n) {
  for (int i = 0; i < n; i++)
    hlo_value_unref(v[i]);
}

static int read_inputs(const char *path, const hlo_module *m, hlo_value **args) {
  hlo_error err = {0};
  hid_t f = tn_h5_open_read(path, &err);
  if (f < 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return -1;
  }
  int rc = tn_h5_read_inputs(f, "inputs", m->entry, args, &err);
  if (rc != 0)
    fprintf(stderr, "%s: %s\n", path, err.msg);
  hlo_error cerr = {0};
  tn_h5_close(f, &cerr);
  return rc;
}

/* Writes everything into the already created file f. */
static int write_results(hid_t f, const tn_opts *o, const hlo_module *m, int nargs, hlo_value *const *args,
                         hlo_value *const *outs, const chk_intent_result *nf, hlo_error *err) {
  if (tn_h5_attr_set_str(f, "tool", "tune", err) != 0 ||
      tn_h5_attr_set_str(f, "tool_version", PACKAGE_VERSION, err) != 0 ||
      tn_h5_attr_set_str(f, "module", m->name ? m->name : "", err) != 0 ||
      tn_h5_attr_set_str(f, "entry", m->entry->name, err) != 0 ||
      tn_h5_attr_set_i64(f, "replicas", o->replicas, err) != 0)
    return -1;
  /* Non-finite intent of the outputs (intent.h): none, intended, inputs. */
  if (tn_h5_attr_set_str(f, "nonfinite", chk_nonfinite_name(nf->kind), err) != 0 ||
      tn_h5_attr_set_i64(f, "nonfinite_elements", nf->nonfinite, err) != 0)
    return -1;
  /* Inputs are either ours (seeded, so the seed reproduces them) or the
   * user's file, whose name is recorded instead. */
  if (o->inputs ? tn_h5_attr_set_str(f, "inputs", o->inputs, err) != 0
                : tn_h5_attr_set_u64(f, "seed", o->seed, err) != 0 ||
                      tn_h5_attr_set_str(f, "profile", chk_inputs_profile_name((chk_inputs_profile)o->profile), err) != 0)
    return -1;
  if (tn_h5_write_inputs(f, "inputs", nargs, args, err) != 0 || tn_h5_write_outputs(f, "outputs", outs[0], err) != 0)
    return -1;
  if (o->replicas > 1) {
    for (int r = 0; r < o->replicas; r++) {
      char group[64];
      snprintf(group, sizeof group, "replicas/%d/outputs", r);
      if (tn_h5_write_outputs(f, group, outs[r], err) != 0)
        return -1;
    }
  }
  return 0;
}

/* Writes out through a temporary file in the same directory, created by
 * HDF5 exclusively with mode 0666 less the umask (outpath.h). */
static int write_file(const tn_opts *o, const char *out, const hlo_module *m, int nargs, hlo_value *const *args,
                      hlo_value *const *outs, const chk_intent_result *nf) {
  hlo_error err = {0};
  char *tmp = NULL;
  hid_t f = tn_out_create_h5_temp(out, &tmp, &err);
  if (f < 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    return -1;
  }
  int rc = write_results(f, o, m, nargs, args, outs, nf, &err);
  hlo_error cerr = {0};
  if (tn_h5_close(f, &cerr) != 0 && rc == 0) {
    err = cerr;
    rc = -1;
  }
  if (rc != 0) {
    fprintf(stderr, "tune: %s: %s\n", out, err.msg);
  } else if (rename(tmp, out) != 0) {
    fprintf(stderr, "tune: %s: %s\n", out, strerror(errno));
    rc = -1;
  }
  if (rc != 0)
    unlink(tmp);
  free(tmp);
  return rc;
}

int tn_cmd_eval(const tn_opts *o) {
  if (!o->output || strcmp(o->output, "-") == 0) {
    fputs("tune: --eval needs -o OUT.h5 (HDF5 cannot go to standard output)\n"
          "Try 'tune --help' for more information.\n",
          stderr);
    return TN_EXIT_USAGE;
  }
  if (o->inputs && o->has_seed) {
    fputs("tune: --seed and --inputs cannot be given together\n"
          "Try 'tune --help' for more information.\n",
          stderr);
    return TN_EXIT_USAGE;
  }
  /* HDF5 would print its own error stacks; our messages say it better. */
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  /* OUT replaces what it names: never the module or the inputs, and
   * through a link, the link's target (outpath.h). */
  hlo_error err = {0};
  const char *inputs[2] = {o->file, o->inputs};
  char *out = tn_out_resolve(o->output, &err);
  if (!out || tn_out_refuse_input(out, 2, inputs, &err) != 0) {
    fprintf(stderr, "tune: %s\n", err.msg);
    free(out);
    return TN_EXIT_USAGE;
  }

  hlo_module *m = tn_load_module(o->file, o->no_verify);
  if (!m) {
    free(out);
    return TN_EXIT_USAGE;
  }
  /* replicas 0 is "not given" (tune.c refuses an explicit 0): take the
   * module's replica_count, or more when its replica groups name more or
   * an all-gather's or reduce-scatter's shapes imply more (as --check
   * does), so a module written for N replicas runs as N without being
   * told. */
  tn_opts eff = *o;
  if (eff.replicas < 1) {
    eff.replicas = m->replica_count > 1 && m->replica_count <= 4096 ? (int)m->replica_count : 1;
    if (tn_replicas_needed(m) > eff.replicas)
      eff.replicas = tn_replicas_needed(m);
  }
  o = &eff;
  const char *shown = strcmp(o->file, "-") == 0 ? "<stdin>" : o->file;
  if (chk_eval_supported(m, &err) != 0) {
    report_module_error(shown, &err);
    hlo_module_free(m);
    free(out);
    return TN_EXIT_USAGE;
  }

  int nargs = m->entry->nparams, status = TN_EXIT_USAGE;
  hlo_value **args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  hlo_value **outs = calloc((size_t)o->replicas, sizeof *outs);
  if (!args || !outs) {
    fprintf(stderr, "tune: out of memory\n");
    goto done;
  }
  if (o->inputs) {
    if (read_inputs(o->inputs, m, args) != 0)
      goto done;
  } else {
    chk_inputs_opts io = {.seed = o->seed, .profile = (chk_inputs_profile)o->profile};
    if (chk_inputs_make(m, &io, args, &err) != 0) {
      report_module_error(shown, &err);
      goto done;
    }
  }
  /* A module can loop forever; without a deadline --eval would hang with
   * it, so one applies unless --time-budget says otherwise (0: none). */
  chk_eval_opts eo = {.replicas = o->replicas,
                      .time_budget = o->has_time_budget ? o->time_budget : TN_EVAL_DEFAULT_TIME_BUDGET,
                      .rng_seed = o->seed};
  if (chk_eval_module(m, nargs, args, &eo, outs, &err) != 0) {
    report_module_error(shown, &err);
    goto done;
  }
  /* Say when outputs are non-finite, and whether that was meant. */
  chk_intent_result nf;
  bool deliberate = o->profile == CHK_INPUTS_SPECIAL && !o->inputs;
  if (chk_intent_classify(m, nargs, args, &eo, deliberate, outs[0], &nf, &err) != 0) {
    report_module_error(shown, &err);
    goto done;
  }
  if (nf.kind == CHK_NONFINITE_INTENDED)
    fprintf(stderr, "tune: note: %lld of %lld output elements are NaN or Inf, from the module's own constants%s\n",
            (long long)nf.nonfinite, (long long)nf.count, deliberate ? " or the special profile's inputs" : "");
  else if (nf.kind == CHK_NONFINITE_INPUTS)
    fprintf(stderr,
            "tune: warning: inputs produced non-finite values: %lld of %lld output elements are NaN or Inf "
            "(first made by %s)\n",
            (long long)nf.nonfinite, (long long)nf.count, nf.origin);
  if (write_file(o, out, m, nargs, args, outs, &nf) != 0)
    goto done;
  status = TN_EXIT_OK;
done:
  if (outs)
    unref_all(outs, o->replicas);
  if (args)
    unref_all(args, nargs);
  free(outs);
  free(args);
  hlo_module_free(m);
  free(out);
  return status;
}
