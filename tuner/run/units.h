/* units.h — a module is a program; its fusions are the tuning units.
 *
 * XLA emits every `fusion` instruction as one kernel, wherever it sits (the
 * entry, a while body or condition, a conditional branch, a called
 * computation), and so it emits every heavy op that stands outside a fusion:
 * dot, convolution, reduce, reduce-window, sort, scatter, gather,
 * dynamic-update-slice and the collectives.  Each of those is a unit, tuned
 * and checked on its own, named after its instruction.
 *
 * Two kinds of file are one unit as a whole, checked exactly as before
 * units existed (so single-fusion datasets keep their results and names):
 *  - a launch: the entry holds one fusion and otherwise only parameters,
 *    constants, tuples, get-tuple-elements, bitcasts and copies
 *    (dev_fusion.h); the unit is named after the fusion's computation;
 *  - a hand-fused kernel: no fusion anywhere, no control flow in the entry
 *    and at most one heavy op; named after the entry computation.
 *
 * A unit of a larger module is checked as a module of its own
 * (tn_unit_module): an entry whose parameters stand for the unit's operands
 * (a constant operand stays a constant) and whose root is the unit, plus
 * every computation the unit calls.
 */
#ifndef TUNE_UNITS_H
#define TUNE_UNITS_H

#include <stdbool.h>

#include "hlo/hlo.h"
#include "hlo/hlo_error.h"

typedef struct tn_unit {
  const char *name;              /* the instruction's name (whole: the
                                    kernel computation's name); when two
                                    units of a module share it, NAME@COMP
                                    with the computation it sits in */
  const hlo_instr *ins;          /* the fusion or heavy op; NULL when the
                                    unit is the whole module */
  const hlo_computation *where;  /* the computation it sits in */
} tn_unit;

typedef struct tn_units {
  int n;
  tn_unit *v;                    /* malloc'd, in program order */
  char **owned;                  /* the NAME@COMP strings, malloc'd */
  int nowned;
} tn_units;

/* Finds the units of m (which must outlive *out).  0, or -1 with err when
 * out of memory.  n may be 0: nothing to tune. */
int tn_units_find(const hlo_module *m, tn_units *out, hlo_error *err);
void tn_units_free(tn_units *u);

/* The unit (u->ins != NULL: a whole-module unit is m itself) as a
 * standalone, verified module the caller frees.  NULL with err when it
 * cannot be built. */
hlo_module *tn_unit_module(const hlo_module *m, const tn_unit *u, hlo_error *err);

/* Which operand of u->ins each parameter of tn_unit_module's entry stands
 * for: pos[k] is the operand position of parameter k (pos has room for
 * u->ins->noperands).  Returns the number of parameters. */
int tn_unit_param_operands(const tn_unit *u, int *pos);

/* The unit's kind for listings: the fusion's kind as written ("kLoop"),
 * "op" for a heavy op outside a fusion, "module" for a whole module. */
const char *tn_unit_kind(const tn_unit *u);

/* Does the --fusion pattern (a shell glob) select unit name in file?  It
 * may match NAME, FILE:NAME or BASENAME:NAME. */
bool tn_unit_selected(const char *pattern, const char *file, const char *name);

#endif
