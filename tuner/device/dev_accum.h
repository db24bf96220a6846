/* dev_accum.h — how deep a config's accumulation is: the most roundings
 * any one term of the hero's reduction passes through on its way to the
 * result.  The tolerance policy (check/tolerance.h) turns this depth d into
 * the bound gamma_d = d u / (1 - d u) on the accumulation's relative error
 * (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2:
 * in any summation tree, s_hat = sum t_i (1 + e_i) with |e_i| <= gamma_h_i,
 * h_i the number of additions t_i takes part in).
 *
 * The structure, read from the executor (dev_acc.c: compute_chunk,
 * combine_packs, acc_finalize; dev_fold_*.c: fold_*_range), for K = the
 * reduction length, c = the chunk (cfg.k, K when 0; at most K),
 * nk = ceil(K / c), P = cfg.pack:
 *
 *   Element r of the reduction goes to pack slot r mod P.  A reduce's slot 0
 *   starts at the init value (so the first element added to it is one
 *   rounding), the other slots start empty (their first element is taken
 *   as is, no rounding); a dot's slots all start at 0 (0 + x is exact).
 *   Within a slot, terms are added one at a time.
 *
 *   Without split-reduction the slots run across all chunks: slot 0 holds
 *   ceil(K / P) elements, the most of any slot.  At the end the slots are
 *   combined 0, 1, ..., P-1 sequentially: slots 0 and 1 each go through
 *   min(P, K) - 1 more roundings.  So
 *
 *       d = ceil(K / P) - 1 + [reduce] + min(P, K) - 1
 *
 *   With split-reduction each chunk folds into fresh slots (no init, even
 *   for a reduce), which are combined into the chunk's partial
 *   (ceil(c / P) - 1 + min(P, c) - 1 roundings at most); at the end the
 *   partials are added to slot 0 of the window's accumulator (the init, or
 *   0 for a dot) in chunk order, so partial 0 takes nk roundings (nk - 1 for
 *   a dot, whose 0 + partial_0 is exact):
 *
 *       d = ceil(c / P) - 1 + min(P, c) - 1 + nk - [dot]
 *
 *   Tile shapes, buffering and loop order (spills and reloads copy slots
 *   bit for bit) do not change which terms are added in which order.
 *
 * Examples: a reduce, K = 1000, k = 0 or 1000, P = 1: d = 1000 (the init,
 * then 1000 terms one at a time); K = 1000, k = 256, P = 2, no split:
 * d = 500 - 1 + 1 + 1 = 501; the same with split-reduction: nk = 4,
 * d = 128 - 1 + 1 + 4 = 132.
 */
#ifndef TUNE_DEV_ACCUM_H
#define TUNE_DEV_ACCUM_H

#include <stdint.h>

#include "dev_config.h"
#include "dev_fusion.h"

/* The depth d above for fusion f under config c; -1 when the device does
 * not chunk f's hero itself (no reduce or dot hero, or one it materialises
 * whole: the order is then not the config's, see dev_exec.h), so the caller
 * must fall back to a bound that holds for every order. */
int64_t dev_accum_depth(const dev_fusion *f, const dev_config *c);

#endif
