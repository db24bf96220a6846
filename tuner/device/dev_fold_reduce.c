/* dev_fold_reduce.c — the folds of a reduce hero: a range of reduction
 * positions into the pack accumulators, element by element in reduction
 * order; f32 folds of one reduced dimension read in place from the VMEM
 * window and run many lines side by side (dev_exec_fold.h), a variadic
 * reduce steps its reducer over all region elements at once.  Every path
 * gives the bits of the scalar fold (fold_one).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dev_exec_fold.h"
#include "dev_exec_internal.h"
#include "hlo/hlo_minmax.h"
#include "hlo/hlo_index.h"

/* Folds value v (poisoned p) of reduction element r into the accumulators of
 * region element ro. */
static void fold_one(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t ro, int64_t r, dev_slot v,
                     uint8_t p) {
  int64_t k = ro * x->P + r % x->P;
  if (!valid[k]) {
    acc[k] = v;
    valid[k] = 1;
    poison[k] = p;
    return;
  }
  acc[k] = dev_elem_reduce_step(x->red_op, x->acc_t, acc[k], v);
  poison[k] |= p;
}

/* One f32 reduction step, exactly dev_elem_reduce_step's for HLO_F32 (its
 * round_to(F32) of a float is the float itself). */
static inline float red_f32(hlo_opcode op, float a, float b) {
  switch (op) {
  case HLO_OP_ADD: return a + b;
  case HLO_OP_MULTIPLY: return a * b;
  case HLO_OP_MAXIMUM: return hlo_max_f32(a, b);
  case HLO_OP_MINIMUM: return hlo_min_f32(a, b);
  default: return a;
  }
}

/* Where fold_reduce_rows reads a box of the reduce operand: its values as
 * slots (an evaluated box) or as host f32 (straight from a VMEM window or
 * HBM, see direct_source), its poison bytes, and the element strides of
 * both, relative to the box origin lo. */
typedef struct fold_src {
  const dev_slot *v;
  const float *f;
  const uint8_t *p;            /* NULL: no element is poisoned */
  int rank;
  int64_t lo[HLO_MAX_RANK];
  int64_t st[HLO_MAX_RANK];
} fold_src;

static void src_of_box(const dev_box *b, fold_src *src) {
  memset(src, 0, sizeof *src);
  src->v = b->v;
  src->p = b->poison;
  src->rank = b->rank;
  int64_t st = 1;
  for (int d = b->rank - 1; d >= 0; d--) {
    src->lo[d] = b->lo[d];
    src->st[d] = st;
    st *= b->n[d];
  }
}

/* The reduce operand read in place when it is an f32 parameter whose
 * requested box lies wholly inside what dev_x_window_read would copy it from:
 * the current block of its VMEM window (every row of the box inside it,
 * so dev_x_window_read takes its row copy, never its element-by-element edge
 * path), or HBM for a resident (or unstaged) parameter.  The values are
 * the very floats and shadow bytes dev_x_window_read would copy into the box
 * (slots_from_host widens f32 to double exactly and the fold narrows it
 * back), so folding from here gives the same bits without the copy. */
static bool direct_source(const exec *x, const hlo_instr *o, const dev_box *want, fold_src *src) {
  if (o->op != HLO_OP_PARAMETER || o->parameter_number < 0 || o->parameter_number >= x->nin ||
      o->parameter_number >= x->s->nwin)
    return false;
  int param = (int)o->parameter_number;
  const win_state *ws = &x->win[param];
  const dev_window *w = ws->w;
  const dev_hbm *h = &x->in[param];
  if (!w || !h->data || h->type != HLO_F32 || h->rank != want->rank)
    return false;
  memset(src, 0, sizeof *src);
  src->rank = want->rank;
  int64_t st = 1, off = 0;
  if (w->resident || !ws->data) {
    for (int d = want->rank - 1; d >= 0; d--) {
      if (want->lo[d] < 0 || want->lo[d] + want->n[d] > h->dims[d])
        return false;
      src->lo[d] = want->lo[d];
      src->st[d] = st;
      off += want->lo[d] * st;
      st *= h->dims[d];
    }
    src->f = (const float *)(const void *)h->data + off;
    src->p = NULL; /* parameters are all defined */
    return true;
  }
  if (!ws->have || ws->type != HLO_F32 || w->rank != want->rank)
    return false;
  for (int d = want->rank - 1; d >= 0; d--) {
    int64_t l = want->lo[d] - ws->origin[d];
    if (l < 0 || l + want->n[d] > w->block[d])
      return false;
    src->lo[d] = want->lo[d];
    src->st[d] = st;
    off += l * st;
    st *= w->block[d];
  }
  src->f = (const float *)(const void *)ws->data[ws->cur] + off;
  src->p = ws->clean[ws->cur] ? NULL : ws->shadow[ws->cur] + off;
  return true;
}

/* The OR of n poison bytes p[0], p[s], ...: word-wise when contiguous. */
static uint8_t or_bytes(const uint8_t *p, int64_t n, int64_t s) {
  uint8_t z = 0;
  int64_t i = 0;
  if (s == 1) {
    uint64_t w = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t t;
      memcpy(&t, p + i, 8);
      w |= t;
    }
    w |= w >> 32;
    w |= w >> 16;
    w |= w >> 8;
    z = (uint8_t)w;
  }
  for (; i < n; i++)
    z |= p[i * s];
  return z;
}

/* f32 add/multiply/max/min with one pack slot, for region elements ro0 ..
 * ro0 + g - 1 (g <= FOLD_GROUP) whose lines start at base[0..g) of src,
 * elements s apart, len > 0 of them.  Each line is folded in order into
 * its accumulator (dev_exec_fold.h: side by side, in vector lanes when the
 * lines are rows of one block); a region element without a live
 * accumulator starts from its line's first element, as fold_one does. */
#define FOLD_GROUP 16
static void fold_f32_group(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, const fold_src *src,
                           int64_t ro0, int g, const int64_t *base, int64_t s, int64_t len) {
  float a[FOLD_GROUP];
  int64_t b1[FOLD_GROUP];
  for (int q = 0; q < g; q++) {
    float e = src->f ? src->f[base[q]] : (float)src->v[base[q]].f;
    a[q] = valid[ro0 + q] ? dev_fold_f32_step(x->red_op, (float)acc[ro0 + q].f, e) : e;
    b1[q] = base[q] + s; /* the rest of the line */
  }
  if (len > 1) {
    int64_t L = g > 1 ? base[1] - base[0] : 0;
    bool rows = src->f && s == 1 && L >= len;
    for (int q = 2; rows && q < g; q++)
      rows = base[q] - base[0] == q * L;
    if (rows)
      dev_fold_f32_rows(x->red_op, a, g, src->f + b1[0], L, len - 1);
    else
      for (int h = 0; h < g; h += 8) {
        int m = g - h < 8 ? g - h : 8;
        if (src->f)
          dev_fold_f32_lines(x->red_op, a + h, m, src->f, b1 + h, s, len - 1);
        else
          dev_fold_f32_slot_lines(x->red_op, a + h, m, src->v, b1 + h, s, len - 1);
      }
  }
  for (int q = 0; q < g; q++) {
    uint8_t pz = valid[ro0 + q] ? poison[ro0 + q] : 0;
    acc[ro0 + q].f = a[q];
    valid[ro0 + q] = 1;
    poison[ro0 + q] = src->p ? pz | or_bytes(src->p + base[q], len, s) : pz;
  }
}

/* fold_reduce_range for a hero with one reduced dimension rd: the positions
 * of one region element lie on a line of the source with a fixed stride,
 * so they are walked by offset (no per-element division or index), and
 * f32 add/multiply/max/min folds run in registers, 8 region elements side
 * by side.  Same elements, same order, same pack slots ((label0 + i) mod
 * P) and the same arithmetic as fold_one. */
static void fold_reduce_rows(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, const fold_src *src, int rd,
                             const int *kept, int nkept, int64_t r0, int64_t len, int64_t label0) {
  const int64_t *stride = src->st;
  bool f32 = x->acc_t == HLO_F32 && (x->red_op == HLO_OP_ADD || x->red_op == HLO_OP_MULTIPLY ||
                                     x->red_op == HLO_OP_MAXIMUM || x->red_op == HLO_OP_MINIMUM);
  int P = x->P;
  int64_t kidx[HLO_MAX_RANK];
  for (int j = 0; j < nkept; j++)
    kidx[j] = x->region.lo[j];
  int64_t s = stride[rd];
  int64_t gbase[FOLD_GROUP];
  int g = 0;
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    int64_t base = (r0 - src->lo[rd]) * stride[rd];
    for (int j = 0; j < nkept; j++)
      base += (kidx[j] - src->lo[kept[j]]) * stride[kept[j]];
    if (f32 && P == 1) {
      if (len > 0) {
        gbase[g++] = base;
        if (g == FOLD_GROUP || ro + 1 == x->region.count) {
          fold_f32_group(x, acc, valid, poison, src, ro + 1 - g, g, gbase, s, len);
          g = 0;
        }
      }
    } else {
      const dev_slot *v = src->v + base;
      const uint8_t *pv = src->p + base;
      int q = (int)(label0 % P);
      for (int64_t r = 0; r < len; r++) {
        int64_t k = ro * P + q;
        dev_slot e = v[r * s];
        uint8_t p = pv[r * s];
        if (!valid[k]) {
          acc[k] = e;
          valid[k] = 1;
          poison[k] = p;
        } else {
          if (f32)
            acc[k].f = red_f32(x->red_op, (float)acc[k].f, (float)e.f);
          else
            acc[k] = dev_elem_reduce_step(x->red_op, x->acc_t, acc[k], e);
          poison[k] |= p;
        }
        if (++q == P)
          q = 0;
      }
    }
    hlo_index_next_box(nkept, x->region.lo, x->region.n, kidx);
  }
}

/* How a reduce hero's first operand splits into the dimensions the
 * output keeps and the ones it reduces (with their sizes, in order). */
typedef struct hero_dims {
  int red[HLO_MAX_RANK], nred, kept[HLO_MAX_RANK], nkept;
  int64_t rsz[HLO_MAX_RANK];
} hero_dims;

/* Fills *hd for the hero and returns the box of its first operand that
 * reduction positions [r0, r0 + len) of the current output region read:
 * the region along the kept dimensions, the chunk's bounding box along the
 * reduced ones. */
static dev_box chunk_window(const exec *x, int64_t r0, int64_t len, hero_dims *hd) {
  const hlo_instr *h = x->f->hero;
  const hlo_shape *os = dev_x_leaf0(h->operands[0]);
  *hd = (hero_dims){.nred = 0};
  for (int d = 0; d < os->rank; d++) {
    bool is_red = false;
    for (int j = 0; j < h->attrs.dimensions.n; j++)
      is_red = is_red || h->attrs.dimensions.v[j] == d;
    if (is_red)
      hd->rsz[hd->nred] = os->dims[d], hd->red[hd->nred++] = d;
    else
      hd->kept[hd->nkept++] = d;
  }
  dev_box want = {.rank = os->rank};
  int64_t rlo[HLO_MAX_RANK], rn[HLO_MAX_RANK];
  dev_x_chunk_bbox(hd->rsz, hd->nred, r0, r0 + len, rlo, rn);
  for (int j = 0; j < hd->nkept; j++)
    want.lo[hd->kept[j]] = x->region.lo[j], want.n[hd->kept[j]] = x->region.n[j];
  for (int j = 0; j < hd->nred; j++)
    want.lo[hd->red[j]] = rlo[j], want.n[hd->red[j]] = rn[j];
  return want;
}

/* Reduction positions [r0, r0 + len) of a reduce hero, read through pread;
 * position r0 + i goes to pack slot (label0 + i) mod P. */
static int fold_reduce_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                             int64_t label0, dev_param_read *pread) {
  const hlo_instr *o = x->f->hero->operands[0];
  const hlo_shape *os = dev_x_leaf0(o);
  if (len <= 0)
    return 0;
  hero_dims hd;
  dev_box want = chunk_window(x, r0, len, &hd), b;
  fold_src src;
  bool f32_p1 = x->acc_t == HLO_F32 && x->P == 1 &&
                (x->red_op == HLO_OP_ADD || x->red_op == HLO_OP_MULTIPLY || x->red_op == HLO_OP_MAXIMUM ||
                 x->red_op == HLO_OP_MINIMUM);
  if (hd.nred == 1 && f32_p1 && pread == dev_x_window_read && direct_source(x, o, &want, &src)) {
    fold_reduce_rows(x, acc, valid, poison, &src, hd.red[0], hd.kept, hd.nkept, r0, len, label0);
    return 0;
  }
  if (dev_elem_eval(x->el, o, &want, false, pread, NULL, x, &b, x->why, x->why_len) != 0)
    return -1;
  if (hd.nred == 1) {
    src_of_box(&b, &src);
    fold_reduce_rows(x, acc, valid, poison, &src, hd.red[0], hd.kept, hd.nkept, r0, len, label0);
    dev_elem_box_release(x->el, &b);
    return 0;
  }
  int64_t ridx[HLO_MAX_RANK], oidx[HLO_MAX_RANK], kidx[HLO_MAX_RANK];
  for (int j = 0; j < hd.nkept; j++)
    kidx[j] = x->region.lo[j];
  for (int64_t ro = 0; ro < x->region.count; ro++) {
    for (int j = 0; j < hd.nkept; j++)
      oidx[hd.kept[j]] = kidx[j];
    for (int64_t r = r0; r < r0 + len; r++) {
      dev_x_unflatten_red(hd.rsz, hd.nred, r, ridx);
      for (int j = 0; j < hd.nred; j++)
        oidx[hd.red[j]] = ridx[j];
      int64_t off = 0;
      for (int d = 0; d < os->rank; d++)
        off = off * b.n[d] + (oidx[d] - b.lo[d]);
      fold_one(x, acc, valid, poison, ro, label0 + (r - r0), b.v[off], b.poison[off]);
    }
    hlo_index_next_box(hd.nkept, x->region.lo, x->region.n, kidx);
  }
  dev_elem_box_release(x->el, &b);
  return 0;
}

/* Reduction positions [r0, r0 + len) of a variadic reduce hero (x->vred),
 * read through pread; position r0 + i goes to pack slot (label0 + i) mod
 * P, as in fold_reduce_range.  The N operands are evaluated over the same
 * box; then, position by position in order, every region element's slot
 * takes one reducer step over its N accumulators and the N elements (the
 * region elements side by side in the reducer's lanes).  A slot that holds
 * nothing yet takes the elements as they are.  A slot's poison is that of
 * any of its values. */
static int fold_vred_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                           int64_t label0, dev_param_read *pread) {
  const hlo_instr *h = x->f->hero;
  const hlo_shape *os = dev_x_leaf0(h->operands[0]);
  int nv = x->nv;
  if (len <= 0)
    return 0;
  hero_dims hd;
  dev_box want = chunk_window(x, r0, len, &hd), b[DEV_VRED_MAX];
  int nb = 0, rc = 0;
  for (; nb < nv; nb++)
    if (dev_elem_eval(x->el, h->operands[nb], &want, false, pread, NULL, x, &b[nb], x->why, x->why_len) != 0) {
      rc = -1;
      break;
    }
  for (int j = 1; rc == 0 && j < nv; j++)
    for (int d = 0; d < os->rank; d++)
      if (b[j].lo[d] != b[0].lo[d] || b[j].n[d] != b[0].n[d])
        rc = dev_x_fail(x, "%s: the operands of the variadic reduce were evaluated over different boxes", h->name);
  int64_t n = x->region.count;
  int64_t *koff = malloc(sizeof *koff * (size_t)(n ? n : 1));
  dev_slot *xt = malloc(sizeof *xt * (size_t)(n ? n * nv : 1));
  dev_slot **ap = malloc(sizeof *ap * (size_t)(n ? n : 1));
  if (rc == 0 && (!koff || !xt || !ap))
    rc = dev_x_fail(x, "out of memory");
  if (rc == 0) {
    int64_t stride[HLO_MAX_RANK], kidx[HLO_MAX_RANK], ridx[HLO_MAX_RANK];
    int64_t st = 1;
    for (int d = os->rank - 1; d >= 0; d--)
      stride[d] = st, st *= b[0].n[d];
    /* box offset of each region element's hd.kept index */
    for (int j = 0; j < hd.nkept; j++)
      kidx[j] = x->region.lo[j];
    for (int64_t ro = 0; ro < n; ro++) {
      koff[ro] = 0;
      for (int j = 0; j < hd.nkept; j++)
        koff[ro] += (kidx[j] - b[0].lo[hd.kept[j]]) * stride[hd.kept[j]];
      hlo_index_next_box(hd.nkept, x->region.lo, x->region.n, kidx);
    }
    for (int64_t r = r0; r < r0 + len; r++) {
      dev_x_unflatten_red(hd.rsz, hd.nred, r, ridx);
      int64_t roff = 0;
      for (int j = 0; j < hd.nred; j++)
        roff += (ridx[j] - b[0].lo[hd.red[j]]) * stride[hd.red[j]];
      int64_t p = (label0 + (r - r0)) % x->P, m = 0;
      for (int64_t ro = 0; ro < n; ro++) {
        int64_t k = ro * x->P + p, off = koff[ro] + roff;
        uint8_t pz = 0;
        for (int j = 0; j < nv; j++)
          pz |= b[j].poison[off];
        if (!valid[k]) {
          for (int j = 0; j < nv; j++)
            acc[k * nv + j] = b[j].v[off];
          valid[k] = 1;
          poison[k] = pz;
          continue;
        }
        poison[k] |= pz;
        ap[m] = acc + k * nv;
        for (int j = 0; j < nv; j++)
          xt[m * nv + j] = b[j].v[off];
        m++;
      }
      dev_vred_step(x->vred, m, ap, xt);
    }
  }
  free(koff);
  free(xt);
  free(ap);
  while (nb-- > 0)
    dev_elem_box_release(x->el, &b[nb]);
  return rc;
}

/* The fold of a reduce hero: variadic or single-operand. */
int dev_x_fold_red_range(exec *x, dev_slot *acc, uint8_t *valid, uint8_t *poison, int64_t r0, int64_t len,
                          int64_t label0, dev_param_read *pread) {
  return x->vred ? fold_vred_range(x, acc, valid, poison, r0, len, label0, pread)
                 : fold_reduce_range(x, acc, valid, poison, r0, len, label0, pread);
}
