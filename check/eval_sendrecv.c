/* eval_sendrecv.c — a recv from a peer device, paired with the send that
 * feeds it in the same computation.
 *
 * A send and a recv between devices (no is_host_transfer) are the two
 * halves of a collective-permute: the frontend attribute
 * _xla_send_recv_source_target_pairs={{s,t},...} says that device s sends
 * and device t receives.  When the module holds both halves, the recv's
 * data is known: on replica t, what replica s's send sent; on a replica
 * that is no pair's target, zeros (as collective-permute gives).  A pair
 * naming a replica that is not simulated is ignored, as for
 * collective-permute (eval_collective.c).
 *
 * Which send feeds a recv: the one send in the recv's computation whose
 * source-target pairs are the recv's, in the same order; when several
 * sends have them, the one among those with the recv's channel_id.
 * Channel ids alone do not pair them: real modules give the two halves of
 * one transfer different channel ids (pipeline-parallel loops), and GPU
 * runtimes match them by peer, not by channel.  A recv with no such send,
 * with no pairs, or whose send's data is computed after the recv in the
 * evaluation order, stays refused.
 *
 * A send is send(data, token).  Some of XLA's own tests write
 * send(token, data); XLA's parser takes that and only its verifier
 * objects.  The operands are told apart by type (one token, one data), so
 * the evaluator reads both orders the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_async.h"
#include "eval_internal.h"
#include "eval_sendrecv.h"

static const char PAIRS_KEY[] = "_xla_send_recv_source_target_pairs";

static bool host_transfer(const hlo_instr *ins) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "is_host_transfer") == 0 && ins->raw[i].value)
      return strcmp(ins->raw[i].value, "true") == 0;
  return false;
}

static const char *skip_blanks(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

/* An integer at *p, advancing *p; false when there is none. */
static bool read_int(const char **p, int64_t *out) {
  char *end;
  const char *q = skip_blanks(*p);
  long long v = strtoll(q, &end, 10);
  if (end == q)
    return false;
  *out = v;
  *p = skip_blanks(end);
  return true;
}

int chk_peer_pairs(const hlo_instr *ins, hlo_pair *out, int max) {
  const char *fa = NULL;
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "frontend_attributes") == 0 && ins->raw[i].value)
      fa = ins->raw[i].value;
  const char *p = fa ? strstr(fa, PAIRS_KEY) : NULL;
  if (!p)
    return -1;
  p = skip_blanks(p + sizeof PAIRS_KEY - 1);
  if (*p++ != '=')
    return -1;
  p = skip_blanks(p);
  if (*p == '"') /* the attribute's value may be quoted */
    p = skip_blanks(p + 1);
  if (*p++ != '{')
    return -1;
  int n = 0;
  for (p = skip_blanks(p); *p != '}'; p = skip_blanks(p)) {
    hlo_pair pr;
    if (*p++ != '{' || !read_int(&p, &pr.a) || *p++ != ',' || !read_int(&p, &pr.b) || *p++ != '}' ||
        pr.a < 0 || pr.b < 0 || n == max)
      return -1;
    out[n++] = pr;
    p = skip_blanks(p);
    if (*p == ',')
      p++;
  }
  return n;
}

int chk_send_data_operand(const hlo_instr *send) {
  if (send->op != HLO_OP_SEND || send->noperands != 2)
    return -1;
  bool t0 = send->operands[0]->shape.type == HLO_TOKEN, t1 = send->operands[1]->shape.type == HLO_TOKEN;
  if (t0 == t1)
    return -1;
  return t0 ? 1 : 0;
}

enum { MAX_PAIRS = 256 };

static bool same_pairs(const hlo_pair *x, int nx, const hlo_pair *y, int ny) {
  if (nx != ny)
    return false;
  for (int i = 0; i < nx; i++)
    if (x[i].a != y[i].a || x[i].b != y[i].b)
      return false;
  return true;
}

const hlo_instr *chk_peer_send(const hlo_instr *recv) {
  if (recv->op != HLO_OP_RECV || host_transfer(recv) || !recv->parent)
    return NULL;
  hlo_pair rp[MAX_PAIRS], sp[MAX_PAIRS];
  int nr = chk_peer_pairs(recv, rp, MAX_PAIRS);
  if (nr < 0)
    return NULL;
  const hlo_computation *c = recv->parent;
  const hlo_instr *found = NULL;
  int nfound = 0, nsame_channel = 0;
  const hlo_instr *same_channel = NULL;
  for (int i = 0; i < c->ninstrs; i++) {
    const hlo_instr *s = c->instrs[i];
    if (s->op != HLO_OP_SEND || host_transfer(s))
      continue;
    int ns = chk_peer_pairs(s, sp, MAX_PAIRS);
    if (ns < 0 || !same_pairs(rp, nr, sp, ns))
      continue;
    found = s;
    nfound++;
    bool rc = (recv->attrs.has & HLO_A_CHANNEL_ID) != 0, sc = (s->attrs.has & HLO_A_CHANNEL_ID) != 0;
    if (rc == sc && (!rc || recv->attrs.channel_id == s->attrs.channel_id)) {
      same_channel = s;
      nsame_channel++;
    }
  }
  if (nfound == 1)
    return found;
  return nsame_channel == 1 ? same_channel : NULL;
}

bool chk_peer_recv_supported(const hlo_instr *recv) {
  const hlo_instr *s = chk_peer_send(recv);
  int k = s ? chk_send_data_operand(s) : -1;
  if (k < 0 || recv->shape.type != HLO_TUPLE || recv->shape.ntuple != 3)
    return false;
  const hlo_instr *data = s->operands[k];
  /* The data must be a value of the computation before the recv: the
   * driver evaluates in instruction order. */
  return data->index < recv->index && hlo_shape_equal(&data->shape, &recv->shape.elems[0], false);
}

int chk_peer_recv(chk_eval *ev, const hlo_instr *recv, int nrep, int base, hlo_value *const *data,
                  hlo_value **out) {
  const hlo_instr *s = chk_peer_send(recv);
  hlo_pair pr[MAX_PAIRS];
  int np = s ? chk_peer_pairs(recv, pr, MAX_PAIRS) : -1;
  if (!s || np < 0 || !chk_peer_recv_supported(recv)) {
    chk_fail(ev, recv, "no send in this computation has the recv's source-target pairs");
    return -1;
  }
  int total = ev->o.replicas;
  for (int r = 0; r < nrep; r++) {
    int64_t me = base + r, src = -1;
    for (int p = 0; p < np; p++)
      if (pr[p].a < total && pr[p].b < total && pr[p].b == me)
        src = pr[p].a;
    hlo_value *e[3] = {NULL, hlo_value_from_shape(&recv->shape.elems[1]), hlo_value_from_shape(&recv->shape.elems[2])};
    if (src >= 0) {
      /* Only replicas evaluated in this lockstep group are at hand; a
       * branch taken by some replicas only is evaluated per replica. */
      if (src < base || src >= base + nrep || !data[src - base]) {
        hlo_value_unref(e[1]);
        hlo_value_unref(e[2]);
        chk_fail(ev, recv, "replica %lld's send is not evaluated with this recv (a branch taken per replica)",
                 (long long)src);
        return -1;
      }
      e[0] = hlo_value_ref(data[src - base]);
    } else {
      e[0] = hlo_value_from_shape(&recv->shape.elems[0]);
    }
    if (!e[0] || !e[1] || !e[2] || !(out[r] = hlo_value_tuple(3, e))) {
      for (int k = 0; k < 3; k++)
        hlo_value_unref(e[k]);
      chk_fail(ev, recv, "out of memory");
      return -1;
    }
  }
  return 0;
}
