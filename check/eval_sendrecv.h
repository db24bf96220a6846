/* eval_sendrecv.h — a peer recv paired with its send in the same
 * computation (eval_sendrecv.c documents the rule).  Internal to the
 * evaluator. */
#ifndef TUNE_CHECK_EVAL_SENDRECV_H
#define TUNE_CHECK_EVAL_SENDRECV_H

#include <stdbool.h>

#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

struct chk_eval;

/* ins's _xla_send_recv_source_target_pairs frontend attribute into out (at
 * most max pairs): the count, or -1 when absent or malformed. */
int chk_peer_pairs(const hlo_instr *ins, hlo_pair *out, int max);

/* Which operand of a send is its data: 0 for send(data, token), 1 for
 * send(token, data); -1 when the operands are not one token and one
 * value. */
int chk_send_data_operand(const hlo_instr *send);

/* The send that feeds the peer recv `recv`, or NULL when there is none or
 * the choice is ambiguous. */
const hlo_instr *chk_peer_send(const hlo_instr *recv);

/* Whether recv is a peer recv the evaluator can run: its send is found,
 * the send's data has the recv's data shape and comes before the recv in
 * its computation. */
bool chk_peer_recv_supported(const hlo_instr *recv);

/* recv's value on replicas base .. base + nrep - 1, into out[nrep]: data[r]
 * is the send's data operand on replica base + r.  0, or -1 after
 * chk_fail. */
int chk_peer_recv(struct chk_eval *ev, const hlo_instr *recv, int nrep, int base, hlo_value *const *data,
                  hlo_value **out);

#endif
