/* dev_fold_chunk.c — one chunk of the hero's reduction: which of its
 * positions are real (the chunk's mask), the fold of those through the
 * VMEM windows, and, under ragged-chunk-pad, the fold of its unmasked
 * padding with what those lanes would hold.  Apart from the reduce and
 * dot folds because this is the part they share: what a chunk is, not how
 * one kind of hero folds it.
 */
#include "dev_exec_internal.h"

/* Reduction elements of the current chunk that are real (not padding of a
 * ragged last chunk): the chunk's mask.  (ragged-chunk-pad folds the rest
 * of a ragged chunk too: fold_chunk_padding.) */
static int64_t chunk_valid_len(const exec *x) {
  int64_t r0 = x->chunk * x->kchunk;
  int64_t end = r0 + x->kchunk < x->f->k_total ? r0 + x->kchunk : x->f->k_total;
  return end - r0;
}

static int64_t floor_mod(int64_t a, int64_t m) {
  int64_t r = m ? a % m : 0;
  return r < 0 ? r + m : r;
}

/* ragged-chunk-pad: parameter reads of the padding lanes of an unmasked
 * ragged chunk.  They hold what an unmasked copy of the block brings in:
 * the data that follows the line in HBM (for a minor reduced dimension the
 * next row; past the array's end the address wraps to its start), all of
 * it finite input data.  A request's position 0 along a dimension that
 * follows the reduction stands for reduction position x->pad_shift. */
static void pad_read(void *ctx, int param, const int64_t *idx, int64_t n, dev_slot *v, uint8_t *poison) {
  exec *x = ctx;
  const dev_window *w = param < x->s->nwin ? &x->s->wins[param] : NULL;
  const dev_hbm *h = &x->in[param];
  int64_t g = 0;
  for (int d = 0; d < h->rank; d++) {
    int64_t i = idx[d];
    if (w && d < w->rank && w->follows[d] == DEV_FOLLOW_K)
      i += x->pad_shift;
    g = g * h->dims[d] + i;
  }
  for (int64_t j = 0; j < n; j++) {
    if (!h->data || h->count <= 0) {
      v[j].i = 0;
      poison[j] = 1;
      continue;
    }
    int64_t at = floor_mod(g + j, h->count);
    dev_slot_from_host(h->type, h->data, at, &v[j]);
    poison[j] = 0; /* parameters are all defined */
  }
}

/* The bounding box, in the coordinates of an operand with reduction dims
 * red[0..nred), of flattened reduction positions [r0, r1). */
void dev_x_chunk_bbox(const int64_t *rsz, int nred, int64_t r0, int64_t r1, int64_t *lo, int64_t *n) {
  int64_t a[HLO_MAX_RANK], b[HLO_MAX_RANK];
  int64_t q0 = r0, q1 = r1 - 1;
  for (int j = nred - 1; j >= 0; j--) {
    a[j] = q0 % rsz[j], q0 /= rsz[j];
    b[j] = q1 % rsz[j], q1 /= rsz[j];
  }
  bool full = false;
  for (int j = 0; j < nred; j++) {
    if (full) {
      lo[j] = 0, n[j] = rsz[j];
    } else {
      lo[j] = a[j], n[j] = b[j] - a[j] + 1;
      if (a[j] != b[j])
        full = true;
    }
  }
}

/* Defect ragged-chunk-pad (class: a missing mask on a ragged edge).  The
 * last, ragged chunk is not masked: after its real elements, its padding
 * positions [k_total, chunk end) are folded too, with the values the
 * unmasked lanes hold (pad_read), through the fused ops that feed the
 * reduction (ops that do not read a parameter, an iota say, see the
 * padding lanes at positions 0, 1, ... of the padding).  end is the end of
 * the chunk's real elements.  A variadic reduce folds the padding of all
 * its operands, lane by lane. */
static int fold_chunk_padding(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t end) {
  int64_t kt = x->f->k_total, chunk_end = x->chunk * x->kchunk + x->kchunk;
  if (end != kt || chunk_end <= kt)
    return 0;
  for (int64_t done = 0; done < chunk_end - kt;) {
    int64_t piece = chunk_end - kt - done < kt ? chunk_end - kt - done : kt;
    x->pad_shift = kt + done;
    int rc = x->is_dot ? dev_x_fold_dot_range(x, acc, valid, poison, 0, piece, kt + done, pad_read)
                       : dev_x_fold_red_range(x, acc, valid, poison, 0, piece, kt + done, pad_read);
    if (rc != 0)
      return rc;
    done += piece;
  }
  return 0;
}

/* One chunk of the hero (reduce or dot): its real elements through the
 * VMEM windows.  Split reduction folds into fresh per-chunk pack slots,
 * combined into the chunk's partial at its end. */
int dev_x_fold_chunk(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison) {
  int64_t r0 = x->chunk * x->kchunk, len = chunk_valid_len(x);
  int rc = x->is_dot ? dev_x_fold_dot_range(x, acc, valid, poison, r0, len, r0, dev_x_window_read)
                     : dev_x_fold_red_range(x, acc, valid, poison, r0, len, r0, dev_x_window_read);
  if (rc == 0 && dev_x_on(x, DEV_DEFECT_RAGGED_CHUNK_PAD))
    rc = fold_chunk_padding(x, acc, valid, poison, r0 + len);
  return rc;
}
