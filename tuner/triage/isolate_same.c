/* isolate_same.c — the unfused run's one kernel against the fused one
 * (isolate_same.h). */
#include "isolate_same.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_print.h"

static bool fail(char *why, size_t n, const char *msg) {
  if (why && n)
    snprintf(why, n, "%s", msg);
  return false;
}

static bool is_fusion(const hlo_instr *ins) {
  return ins->op == HLO_OP_FUSION || ins->async_wrapped == HLO_OP_FUSION;
}

/* The kernel computation as compared: a shallow copy named name, without
 * the signature the text may have written (presentation: hlo_print writes
 * it only when the source did, so the fused computation of a dumped
 * module has one and the cut-out entry has none). */
static hlo_computation kernel_view(const hlo_computation *c, const char *name) {
  hlo_computation v = *c;
  v.name = name;
  v.has_signature = false;
  v.nsig_params = 0;
  v.sig_param_names = NULL;
  v.sig_param_shapes = NULL;
  memset(&v.sig_result, 0, sizeof v.sig_result);
  return v;
}

/* m without its computation skip, with kernel appended as the entry;
 * comps has room for m->ncomps. */
static hlo_module module_view(const hlo_module *m, const hlo_computation *skip, hlo_computation *kernel,
                              hlo_computation **comps) {
  hlo_module v = *m;
  int n = 0;
  for (int i = 0; i < m->ncomps; i++)
    if (m->comps[i] != skip && m->comps[i] != m->entry)
      comps[n++] = m->comps[i];
  comps[n++] = kernel;
  v.ncomps = n;
  v.comps = comps;
  v.entry = kernel;
  return v;
}

bool tn_iso_same_kernel(const hlo_module *um, const hlo_module *om, char *why, size_t why_len) {
  if (why && why_len)
    why[0] = '\0';
  const hlo_computation *ue = um ? um->entry : NULL, *oe = om ? om->entry : NULL;
  if (!ue || !ue->root || !oe || !oe->root)
    return fail(why, why_len, "a module without an entry");
  const hlo_instr *launch = ue->root;
  const hlo_computation *fc = launch->op == HLO_OP_FUSION ? launch->attrs.calls.calls : NULL;
  if (!fc)
    return fail(why, why_len, "the unit is not a fusion");
  /* The launch binds fusion operand k to the fused computation's
   * parameter k: from an entry parameter or a constant, nothing else. */
  for (int i = 0; i < ue->ninstrs; i++) {
    const hlo_instr *ins = ue->instrs[i];
    if (ins != launch && ins->op != HLO_OP_PARAMETER && ins->op != HLO_OP_CONSTANT)
      return fail(why, why_len, "the launch holds more than parameters and constants");
  }
  /* A fusion in the cut-out entry would make it a launch of its own,
   * whose kernel is another computation. */
  for (int i = 0; i < oe->ninstrs; i++)
    if (is_fusion(oe->instrs[i]))
      return fail(why, why_len, "the single-op module holds a fusion");
  hlo_computation **ca = calloc((size_t)um->ncomps + 1, sizeof *ca);
  hlo_computation **cb = calloc((size_t)om->ncomps + 1, sizeof *cb);
  bool same = false;
  if (!ca || !cb) {
    fail(why, why_len, "out of memory");
  } else {
    hlo_computation ka = kernel_view(fc, fc->name), kb = kernel_view(oe, fc->name);
    hlo_module a = module_view(um, fc, &ka, ca), b = module_view(om, oe, &kb, cb);
    same = hlo_module_equal(&a, &b, why, why_len);
  }
  free(ca);
  free(cb);
  return same;
}
