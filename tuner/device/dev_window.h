/* dev_window.h — the window geometry that the device's windowed ops share
 * (reduce-window in dev_window.c, select-and-scatter in dev_selscat.c).
 *
 * Geometry (XLA operation semantics, ReduceWindow): window position k of
 * output (or source) position o covers, along each dimension, position
 * o*stride + k*window_dilation - pad_lo of the operand dilated by
 * base_dilation; a position in the padding or in a hole of the dilation
 * holds no element.
 *
 * Lowering: the outputs are tiled as the config cuts them (dev_stage.h);
 * the operand box a tile's windows reach (its halo, clipped to the array)
 * is DMA'd into a poisoned VMEM buffer with redzones, row-major, and the
 * windows read it there.
 */
#ifndef TUNE_DEV_WINDOW_H
#define TUNE_DEV_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "dev_stage.h"
#include "hlo/hlo.h"
#include "hlo/hlo_value.h"

/* Is the window a form the device lowers (sizes, strides >= 1, dilations
 * >= 0 where 0 means 1, no reversal) and of rank r? */
bool dev_win_lowers(const hlo_window *win, int r);

/* The halo box of the outputs of tile t of tl over an operand of dims
 * in[0..r): the tile's origin lo and extents n, the box's origin a and
 * extents hn; returns the box's element count. */
int64_t dev_win_tile_halo(const hlo_window *win, int r, const int64_t *in, const dev_tiling *tl, int64_t t,
                          int64_t *lo, int64_t *n, int64_t *a, int64_t *hn);

/* The largest halo box of a full tile of tl: a bound for the input stage. */
int64_t dev_win_halo_cap(const hlo_window *win, int r, const int64_t *in, const dev_tiling *tl);

/* DMAs the first `count` elements of the box (origin a, extents hn) of op
 * (strides ostr) into the stage, row-major from offset 0. */
void dev_win_stage_box(dev_stage *st, const hlo_value *op, const int64_t *ostr, const int64_t *a, const int64_t *hn,
                       int64_t count);

/* Where window position k of output position o falls: true with *idx the
 * operand index (per dimension) when it is an element, false in the
 * padding or a dilation hole. */
bool dev_win_element(const hlo_window *win, int r, const int64_t *in, const int64_t *o, const int64_t *k,
                     int64_t *idx);

/* The output (source) positions [*first, *last] along dimension d whose
 * windows can reach operand indices [lo, lo + n); empty when *first > *last.
 * nout is the number of output positions along d. */
void dev_win_reach(const hlo_window_dim *w, int64_t lo, int64_t n, int64_t nout, int64_t *first, int64_t *last);

#endif
