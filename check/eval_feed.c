/* eval_feed.c — values that come from the host: infeed, and recv with
 * is_host_transfer=true (with its recv-done); and outfeed, whose data goes
 * to the host and changes no value of the module (its result is a token).
 *
 * Why these are evaluated at all: the host's data is an input of the
 * program that travels another way than the entry parameters, and an
 * evaluator can no more know it than it knows the parameters.  So it is
 * synthesised like them: every array of the data is drawn by the naive
 * input profile (inputs.h: floats uniform in [-1, 1), integers small) from
 * the run's seed (chk_eval_opts.rng_seed), on a stream keyed by the
 * instruction's name and by how many host transfers the evaluation has
 * done before it, so an infeed in a loop gets new data each iteration and a
 * rerun with the same seed the same data.  Every replica receives the same
 * data, as it receives the same parameters.
 *
 * A recv from a peer device (no is_host_transfer) is not data from
 * outside: it is what the peer's send holds (eval_sendrecv.c pairs them
 * when the module holds both), never synthesised.
 */
#include <string.h>

#include "eval_async.h"
#include "eval_internal.h"
#include "inputs.h"
#include "hlo/hlo_hash.h"

static bool host_transfer(const hlo_instr *ins) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "is_host_transfer") == 0 && ins->raw[i].value)
      return strcmp(ins->raw[i].value, "true") == 0;
  return false;
}

bool chk_feed_supported(const hlo_instr *ins) {
  switch (ins->op) {
  case HLO_OP_INFEED:
    return ins->shape.type == HLO_TUPLE && ins->shape.ntuple == 2;
  case HLO_OP_OUTFEED:
    return ins->shape.type == HLO_TOKEN;
  case HLO_OP_RECV:
    return host_transfer(ins) && ins->shape.type == HLO_TUPLE && ins->shape.ntuple == 3;
  case HLO_OP_RECV_DONE:
    return ins->noperands == 1 && ins->operands[0]->op == HLO_OP_RECV && chk_feed_supported(ins->operands[0]);
  default:
    return false;
  }
}

static uint64_t fnv1a(const char *s) { return hlo_fnv1a_str(HLO_FNV_BASIS, s); }

/* Fills every array under v (a fresh value of the data's shape), leaves
 * numbered depth first from *leaf. */
static void fill(hlo_value *v, const chk_inputs_opts *o, uint64_t key, uint64_t transfer, uint64_t *leaf) {
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      fill(v->elems[i], o, key, transfer, leaf);
    return;
  }
  if (v->type != HLO_TOKEN)
    chk_inputs_fill(v, o, chk_inputs_bits(key, transfer, (*leaf)++), NULL);
}

hlo_value *chk_feed_value(chk_eval *ev, const hlo_instr *ins) {
  if (!chk_feed_supported(ins) || ins->op == HLO_OP_RECV_DONE)
    return chk_fail(ev, ins,
                    "infeed returns (data, token), a host recv (data, u32[], token), outfeed a token");
  hlo_value *v = hlo_value_from_shape(&ins->shape);
  if (!v)
    return chk_fail(ev, ins, "out of memory");
  if (ins->op == HLO_OP_OUTFEED)
    return v;
  chk_inputs_opts o = {.seed = ev->o.rng_seed, .profile = CHK_INPUTS_NAIVE};
  uint64_t leaf = 0;
  fill(v->elems[0], &o, fnv1a(ins->name), (uint64_t)ev->transfers++, &leaf);
  return v;
}

hlo_value *chk_recv_done(chk_eval *ev, const hlo_instr *ins, const hlo_value *recv) {
  if (recv->type != HLO_TUPLE || recv->ntuple != 3)
    return chk_fail(ev, ins, "recv-done's operand must be a recv's (data, u32[], token)");
  hlo_value *e[2] = {hlo_value_ref(recv->elems[0]), hlo_value_ref(recv->elems[2])};
  hlo_value *t = hlo_value_tuple(2, e);
  if (!t) {
    hlo_value_unref(e[0]);
    hlo_value_unref(e[1]);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}
