/* capture.h — inputs from the real graph (issue 12 item 2; the paper's
 * "opportunistic fuzzing on real graphs", §3.1.2).
 *
 * A unit cut out of a module (units.h) is best checked on the values that
 * really reach it, not on synthesised ones: a gather's indices, a mask, a
 * normalised activation have the distribution the program gives them.  So
 * the whole module is evaluated once with the reference, on entry
 * arguments synthesised from the input profile, and each unit's operands
 * are captured at its Nth execution (N = --iteration, for a unit inside a
 * loop; replica 0's values).
 *
 * When the module cannot be evaluated as a whole (an unsupported op
 * anywhere, too large), or a unit never ran N times, that unit has no
 * capture and the caller falls back to synthesised inputs, with the
 * reason in note.  An evaluation that fails part-way (its time budget, a
 * loop that never ends) keeps the captures of the units it reached.
 */
#ifndef TUNE_CAPTURE_H
#define TUNE_CAPTURE_H

#include <stdint.h>

#include "hlo/hlo.h"
#include "hlo/hlo_value.h"
#include "check/accum.h"
#include "check/inputs.h"
#include "result.h"
#include "units.h"

/* Evaluating a whole module op by op to capture its units' inputs costs
 * about a microsecond per flop: above this, units fall back to synthesised
 * inputs (and say so) rather than spend minutes on it.  --check and
 * --sweep use the same limit, so both check a unit on the same inputs. */
#define TN_CAPTURE_MAX_FLOPS 1000000000LL

/* Seconds the whole-module evaluation may take when the caller sets no
 * time budget: a module may loop forever (a while whose condition is a
 * constant true), and the units it reached by then keep their captured
 * operands; the rest fall back to synthesised inputs. */
#define TN_CAPTURE_TIME_BUDGET 10.0

/* One call the evaluation's hook received for an instruction of a
 * traced kernel (tn_capture_opts.trace). */
typedef struct tn_trace_call {
  int index;             /* the instruction's position in the kernel */
  int nops;              /* 0 when the probe does not read them */
  hlo_value **ops;       /* one reference each (or NULL, as the hook got them) */
  hlo_value *value;      /* one reference; NULL when the probe does not read it */
  chk_dot_walk walk;     /* a dot evaluated by chk_accums_dot_eval: its walk
                            (abs_sum NULL otherwise) */
} tn_trace_call;

typedef struct tn_capture {
  int nargs;             /* the unit module's parameters (tn_unit_param_operands) */
  hlo_value **args;      /* one reference each, NULL when not captured */
  char note[256];        /* why not, when args is NULL */
  /* The trace of a fusion unit (tn_capture_opts.trace): what the hook of
   * an evaluation of the unit module on args would be shown for the
   * instructions of its fused computation, in order, and the unit's
   * value.  The whole module's evaluation computed them already, so
   * tn_check_fusion need not evaluate the unit again (fusion_run.h).
   * out is NULL when there is no trace. */
  const hlo_computation *kernel; /* the fused computation, in m */
  unsigned char *reads;  /* chk_accums_probe_reads of kernel: a call keeps
                            only what the probe reads of it */
  int ncalls, calls_cap;
  tn_trace_call *calls;
  hlo_value *out;        /* the unit's value, one reference */
  bool trace_failed;
} tn_capture;

typedef struct tn_capture_opts {
  uint64_t seed;
  chk_inputs_profile profile;
  int iteration;         /* capture at the Nth execution, N >= 1 */
  int64_t max_flops;     /* refuse to evaluate a module estimated above this
                            (the sum of its units' flops); 0: no limit */
  int64_t max_memory;    /* refuse when every value of every computation
                            held at once would exceed this; 0: no limit */
  int replicas;          /* --replicas; 0: what the module needs */
  double time_budget;    /* seconds for the whole-module evaluation; 0:
                            TN_CAPTURE_TIME_BUDGET */
  hlo_value *const *entry_args; /* the module's entry arguments (tune
                            --isolate --inputs); NULL: synthesised */
  bool trace;            /* also trace each fusion unit (tn_capture.out) on
                            one replica, its values held until
                            tn_capture_free: only for a module whose values
                            all fit in a small part of max_memory */
  bool plain_dots;       /* with trace: evaluate every dot with the
                            evaluator's own kernel, not the probe's walk
                            (provide() in capture.c): for a caller that may
                            need no unit's tolerance (tune --isolate, where
                            a unit bit for bit the reference needs none);
                            tn_check_fusion's probe walks the dots of the
                            units it is asked for */
} tn_capture_opts;

/* Captures the operands of every unit of u with an instruction; caps[i]
 * for u->v[i] (caps has u->n entries, filled even on failure, with the
 * reason in each note).  Returns the number of units captured. */
int tn_capture_units(const hlo_module *m, const tn_units *u, const tn_capture_opts *o, tn_capture *caps);
void tn_capture_free(tn_capture *caps, int n);

/* Records in r, the result of a unit checked on cap's arguments (or on
 * synthesised ones when cap is NULL or holds none), which execution was
 * captured or why there is no capture. */
void tn_capture_note(const tn_capture *cap, int iteration, tn_fusion_result *r);

#endif
