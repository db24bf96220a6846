/* eval_fuse.c — block programs (chains of elementwise instructions evaluated
 * CHK_FUSE_BLOCK elements at a time) and the planner that finds them in a
 * computation.  See eval_fuse.h for the contract with the driver.
 *
 * Executor: per block, every input is made available in compute
 * representation (a pointer into the value when storage already is that
 * representation, else decoded into scratch; one-element inputs are decoded
 * once per thread, and splatted to a whole block only for readers that need
 * one), then every node runs its kernel — chk_ew_block_splat for a binary
 * float op with one splat operand (read as one element), chk_ew_block
 * otherwise — into a scratch buffer, or straight into its result array when
 * it is materialised and stored as computed, and materialised narrow results
 * are encoded back.  A node whose kernel is elementwise in one compute type
 * writes over the buffer of an operand it is the last reader of, so a chain
 * runs in one buffer that stays in L1.
 * Blocks are independent, so threads split them (dynamically, in runs of 16
 * blocks) and the result never depends on the thread count or schedule.
 *
 * Planner: groups are grown greedily from the last instruction backwards.  A
 * root is an elementwise instruction with enough elements that is not already
 * in a group; then the instructions it reads are visited in decreasing index
 * order, so that by the time an instruction is considered every reader of it
 * has been decided, and it joins when it has the root's dims (or is a splat
 * broadcast) and each of its readers is either in the group or comes after
 * the root.
 */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#endif
#include "eval_fuse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "hlo/hlo_dtype.h"

#ifdef _OPENMP
#define CHK_PRAGMA(x) _Pragma(x)
#else
#define CHK_PRAGMA(x)
#endif
/* Conversion loops vectorize at -O2 only when asked (see eval_elementwise.c). */
#define SIMD CHK_PRAGMA("omp simd")

/* ---- executor -------------------------------------------------------------- */


/* Per-slot facts fixed for a run. */
typedef struct slot_info {
  hlo_etype type;       /* element type as stored */
  hlo_etype ct;         /* compute representation */
  size_t ssz, csz;      /* bytes per element stored / computed */
  bool direct;          /* storage bytes are the compute representation */
  bool splat;           /* input: one element broadcast to every position */
  bool alias;           /* node: folded broadcast, shares its operand's buffer */
  bool full;            /* splat input: some reader needs it as a whole block */
  signed char sk;       /* node: operand read as one element (chk_ew_block_splat), or -1 */
  int base;             /* the slot whose buffer this one reads (aliases resolved) */
  int last;             /* the last node that reads this slot's buffer, or -1 */
  size_t scratch_ofs;   /* byte offset of the slot's scratch, or SIZE_MAX */
  const char *data;     /* input: value data; materialised node: result data */
} slot_info;

typedef struct run_ctx {
  const chk_fuse_group *g;
  slot_info *slots;
  int nslots;
  int64_t count, cap;   /* elements in all; elements per block */
  size_t scratch_bytes; /* per thread, including the slot pointer table */
  int emulate;          /* chk_eval_opts.emulate_device: device numerics */
} run_ctx;

static bool narrow_storage(hlo_etype t) { return chk_ew_compute_type(t) != t && hlo_etype_is_float(t); }

/* Decodes n stored elements of narrow float type t to float. */
static void decode(hlo_etype t, const void *src, float *dst, int64_t n) {
  if (t == HLO_BF16) {
    const uint16_t *s = src;
    SIMD
    for (int64_t i = 0; i < n; i++)
      dst[i] = hlo_bf16_to_f32(s[i]);
  } else if (t == HLO_F16) {
    const uint16_t *s = src;
    for (int64_t i = 0; i < n; i++) /* branchy: no simd request */
      dst[i] = hlo_f16_to_f32(s[i]);
  } else {
    hlo_convert_array(t, src, HLO_F32, dst, (size_t)n);
  }
}

/* Encodes n floats that are exact values of narrow type t. */
static void encode(hlo_etype t, const float *src, void *dst, int64_t n) {
  if (t == HLO_BF16) {
    uint16_t *d = dst;
    SIMD
    for (int64_t i = 0; i < n; i++)
      d[i] = hlo_f32_to_bf16(src[i]);
  } else if (t == HLO_F16) {
    uint16_t *d = dst;
    for (int64_t i = 0; i < n; i++) /* branchy: no simd request */
      d[i] = hlo_f32_to_f16(src[i]);
  } else {
    hlo_convert_array(HLO_F32, src, t, dst, (size_t)n);
  }
}

/* Is the one element of splat input si a NaN?  (Only f32 and f64 compute
 * types can be.) */
static bool splat_is_nan(const slot_info *si) {
  if (si->ct == HLO_F32) {
    float f;
    if (si->direct)
      memcpy(&f, si->data, sizeof f);
    else
      decode(si->type, si->data, &f, 1);
    return f != f;
  }
  if (si->ct == HLO_F64) {
    double d;
    memcpy(&d, si->data, sizeof d);
    return d != d;
  }
  return false;
}

/* Fills a thread's splat buffers (once: kernels never write inputs). */
static void fill_splats(const run_ctx *x, char *scratch) {
  for (int s = 0; s < x->g->nin; s++) {
    const slot_info *si = &x->slots[s];
    if (!si->splat)
      continue;
    char *buf = scratch + si->scratch_ofs;
    if (si->direct)
      memcpy(buf, si->data, si->csz);
    else
      decode(si->type, si->data, (float *)buf, 1);
    if (si->full)
      for (int64_t i = 1; i < x->cap; i++)
        memcpy(buf + (size_t)i * si->csz, buf, si->csz);
  }
}

/* Runs every node over elements [off, off + n). */
static void run_block(const run_ctx *x, char *scratch, int64_t off, int64_t n) {
  const chk_fuse_group *g = x->g;
  const void **ptr = (const void **)(void *)scratch; /* slot pointer table */
  for (int s = 0; s < g->nin; s++) {
    const slot_info *si = &x->slots[s];
    if (si->splat)
      ptr[s] = scratch + si->scratch_ofs;
    else if (si->direct)
      ptr[s] = si->data + (size_t)off * si->ssz;
    else {
      float *buf = (float *)(void *)(scratch + si->scratch_ofs);
      decode(si->type, si->data + (size_t)off * si->ssz, buf, n);
      ptr[s] = buf;
    }
  }
  for (int j = 0; j < g->nnode; j++) {
    int s = g->nin + j;
    const slot_info *si = &x->slots[s];
    const int *args = g->arg + g->argofs[j];
    if (si->alias) {
      ptr[s] = ptr[args[0]];
      /* A folded broadcast read outside the group still needs its value
       * stored: the splat its operand already holds, copied out. */
      if (g->out[j]) {
        char *dst = (char *)(si->data + (size_t)off * si->ssz);
        if (si->direct)
          memcpy(dst, ptr[s], (size_t)n * si->ssz);
        else
          encode(si->type, ptr[s], dst, n);
      }
      continue;
    }
    const hlo_instr *ins = g->node[j];
    const void *in[3] = {NULL, NULL, NULL};
    for (int k = 0; k < ins->noperands && k < 3; k++)
      in[k] = ptr[args[k]];
    void *dst;
    if (g->out[j] && si->direct)
      dst = (void *)(si->data + (size_t)off * si->ssz);
    else
      dst = scratch + si->scratch_ofs;
    if (si->sk >= 0)
      chk_ew_block_splat(ins, in, si->sk, dst, n);
    else
      chk_ew_block(ins, in, dst, n, x->emulate);
    if (g->out[j] && !si->direct)
      encode(si->type, dst, (void *)(si->data + (size_t)off * si->ssz), n);
    ptr[s] = dst;
  }
}

static size_t round64(size_t b) { return (b + 63) & ~(size_t)63; }

/* A large result is first touched here, by the block loop: every 4 KiB page
 * of it would fault separately (16384 faults for 64 MiB, as long as the
 * computation itself).  Asking for transparent huge pages makes that 32
 * faults; with THP off or unavailable the hint is ignored.  (numpy does the
 * same for its large arrays.)  Only the page-aligned interior is advised. */
#define HUGE_ADVISE_MIN ((size_t)4 << 20)
static void advise_huge(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < HUGE_ADVISE_MIN)
    return;
  long pg = sysconf(_SC_PAGESIZE);
  if (pg <= 0)
    return;
  uintptr_t m = (uintptr_t)pg - 1, lo = ((uintptr_t)p + m) & ~m, hi = ((uintptr_t)p + bytes) & ~m;
  if (hi > lo)
    (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

int chk_fuse_run(chk_eval *ev, const chk_fuse_group *g, hlo_value *const *inv, hlo_value **outv) {
  const hlo_instr *root = g->root;
  int nslots = g->nin + g->nnode;
  for (int j = 0; j < g->nnode; j++)
    outv[j] = NULL;
  int64_t count = hlo_shape_elements(&root->shape);

  slot_info stack_slots[8];
  slot_info *slots = nslots <= 8 ? stack_slots : calloc((size_t)nslots, sizeof *slots);
  if (!slots) {
    chk_fail(ev, root, "out of memory");
    return -1;
  }
  memset(slots, 0, sizeof *slots * (size_t)nslots);
  int rc = 0;
  int64_t cap = count < CHK_FUSE_BLOCK ? count : CHK_FUSE_BLOCK;
  size_t bytes = round64(sizeof(void *) * (size_t)nslots);

  bool emulate = ev->o.emulate_device;
  for (int s = 0; s < nslots && rc == 0; s++) {
    slot_info *si = &slots[s];
    const hlo_instr *ins = s < g->nin ? g->in[s] : g->node[s - g->nin];
    si->type = ins->shape.type;
    si->ct = chk_ew_compute_type(si->type);
    si->ssz = hlo_etype_host_size(si->type);
    si->csz = hlo_etype_host_size(si->ct);
    si->direct = !narrow_storage(si->type);
    si->scratch_ofs = SIZE_MAX;
    si->sk = -1;
    si->base = s;
    si->last = -1;
    if (s < g->nin) {
      const hlo_value *v = inv[s];
      if (!v || v->type != si->type || (v->count != count && v->count != 1)) {
        chk_fail(ev, root, "internal: input %d (%s) does not fit the elementwise block program",
                 s, ins->name);
        rc = -1;
        break;
      }
      si->data = v->data;
      si->splat = v->count == 1 && count != 1;
    } else {
      int j = s - g->nin;
      si->alias = ins->op == HLO_OP_BROADCAST;
      if (si->alias)
        si->base = slots[g->arg[g->argofs[j]]].base;
    }
  }
  /* How each node reads its operands: a splat operand of a binary float op
   * goes in as one element (chk_ew_block_splat); any other reader of a
   * splat needs it as a whole block.  last: the last node reading a buffer. */
  for (int j = 0; j < g->nnode && rc == 0; j++) {
    slot_info *si = &slots[g->nin + j];
    const hlo_instr *ins = g->node[j];
    const int *args = g->arg + g->argofs[j];
    if (si->alias) {
      if (g->out[j]) { /* copied out per block */
        slots[si->base].full = true;
        slots[si->base].last = j;
      }
      continue;
    }
    int nsplat = 0, ks = -1;
    for (int k = 0; k < ins->noperands; k++)
      if (slots[slots[args[k]].base].splat) {
        nsplat++;
        ks = k;
      }
    if (!emulate && nsplat == 1 && chk_ew_splat_ok(ins, ks, splat_is_nan(&slots[slots[args[ks]].base])))
      si->sk = (signed char)ks;
    for (int k = 0; k < ins->noperands; k++) {
      slot_info *b = &slots[slots[args[k]].base];
      if (b->splat && k != si->sk)
        b->full = true;
      b->last = j;
    }
  }
  /* Scratch: splats (one element unless some reader needs a block), decoded
   * narrow inputs, and node results not written straight into their value.
   * A node whose kernel works in place takes over the buffer of an operand
   * it is the last reader of, so a chain reuses one buffer, which stays in L1. */
  for (int s = 0; s < nslots && rc == 0; s++) {
    slot_info *si = &slots[s];
    size_t need = 0;
    if (s < g->nin) {
      if (si->splat)
        need = si->full ? (size_t)cap * si->csz : si->csz;
      else if (!si->direct)
        need = (size_t)cap * si->csz;
    } else {
      int j = s - g->nin;
      if (si->alias || (g->out[j] && si->direct))
        continue;
      const hlo_instr *ins = g->node[j];
      const int *args = g->arg + g->argofs[j];
      if (!emulate && chk_ew_in_place_ok(ins))
        for (int k = 0; k < ins->noperands && si->scratch_ofs == SIZE_MAX; k++) {
          const slot_info *b = &slots[slots[args[k]].base];
          if (b->scratch_ofs != SIZE_MAX && !b->splat && b->last == j && b->ct == si->ct)
            si->scratch_ofs = b->scratch_ofs;
        }
      if (si->scratch_ofs != SIZE_MAX)
        continue;
      need = (size_t)cap * si->csz;
    }
    if (need) {
      si->scratch_ofs = bytes;
      bytes += round64(need);
    }
  }
  /* Results. */
  for (int j = 0; j < g->nnode && rc == 0; j++) {
    if (!g->out[j])
      continue;
    outv[j] = chk_result_uninit(ev, g->node[j]); /* every element is written below */
    if (!outv[j]) {
      rc = -1;
      break;
    }
    slots[g->nin + j].data = outv[j]->data;
    advise_huge(outv[j]->data, (size_t)outv[j]->count * outv[j]->elem_size);
  }

  if (rc == 0 && count > 0) {
    run_ctx x = {.g = g, .slots = slots, .nslots = nslots, .count = count, .cap = cap,
                 .scratch_bytes = bytes, .emulate = ev->o.emulate_device};
    int64_t nblocks = (count + cap - 1) / cap;
    int failed = 0;
    bool par = count >= CHK_FUSE_PARALLEL_MIN;
    (void)par; /* only read by the OpenMP clause */
    CHK_PRAGMA("omp parallel if(par) reduction(|:failed)")
    {
      /* Small programs (scalars in per-element calls) use the stack. */
      _Alignas(64) char local[2048];
      char *scratch = bytes <= sizeof local ? local : aligned_alloc(64, bytes);
      if (!scratch)
        failed = 1;
      else
        fill_splats(&x, scratch);
      /* dynamic: on a shared machine a thread that loses its core leaves
       * its blocks to the others (blocks are independent, so the schedule
       * never changes a result) */
      CHK_PRAGMA("omp for schedule(dynamic, 16)")
      for (int64_t b = 0; b < nblocks; b++) {
        if (!scratch)
          continue;
        int64_t off = b * cap;
        int64_t n = count - off < cap ? count - off : cap;
        run_block(&x, scratch, off, n);
      }
      if (scratch != local)
        free(scratch);
    }
    if (failed) {
      chk_fail(ev, root, "out of memory for block scratch");
      rc = -1;
    }
  }
  if (slots != stack_slots)
    free(slots);
  if (rc != 0)
    for (int j = 0; j < g->nnode; j++) {
      hlo_value_unref(outv[j]);
      outv[j] = NULL;
    }
  return rc;
}

/* ---- planner ---------------------------------------------------------------- */

typedef struct pgroup {
  chk_fuse_group g;
  const hlo_instr **in;
  const hlo_instr **node;
  int *argofs;
  int *arg;
  unsigned char *out;
} pgroup;

struct chk_fuse_plan {
  const hlo_computation *c;
  int ninstr;
  int *pos;    /* evaluation position per instruction */
  int *gid;    /* group per instruction, -1 when none */
  int ngroups;
  pgroup *groups;
};

static bool same_dims(const hlo_shape *a, const hlo_shape *b) {
  if (a->type == HLO_TUPLE || b->type == HLO_TUPLE || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

static bool is_one_element(const hlo_shape *s) {
  return s->type != HLO_TUPLE && hlo_shape_elements(s) == 1;
}

/* An elementwise op whose operands are the root's dims or splats. */
static bool fusible_op(const hlo_instr *ins, const hlo_shape *dims) {
  if (ins->op == HLO_OP_BITCAST_CONVERT || ins->op == HLO_OP_BROADCAST)
    return false;
  if (!same_dims(&ins->shape, dims) || chk_ew_unsupported(ins) != NULL)
    return false;
  for (int k = 0; k < ins->noperands; k++) {
    const hlo_shape *s = &ins->operands[k]->shape;
    if (!same_dims(s, dims) && !is_one_element(s))
      return false;
  }
  return true;
}

static bool splat_broadcast(const hlo_instr *ins, const hlo_shape *dims) {
  return ins->op == HLO_OP_BROADCAST && ins->noperands == 1 && same_dims(&ins->shape, dims) &&
         is_one_element(&ins->operands[0]->shape) &&
         ins->operands[0]->shape.type == ins->shape.type;
}

static bool root_candidate(const hlo_instr *ins) {
  return ins->shape.type != HLO_TUPLE && hlo_shape_elements(&ins->shape) >= CHK_FUSE_MIN_ELEMENTS &&
         fusible_op(ins, &ins->shape);
}

void chk_fuse_plan_free(chk_fuse_plan *p) {
  if (!p)
    return;
  for (int i = 0; i < p->ngroups; i++) {
    pgroup *q = &p->groups[i];
    free(q->in);
    free(q->node);
    free(q->argofs);
    free(q->arg);
    free(q->out);
  }
  free(p->groups);
  free(p->pos);
  free(p->gid);
  free(p);
}

/* Builds the arrays of one group from its member marks (mark[i] == tag). */
static int finish_group(chk_fuse_plan *p, const int *mark, int tag, int lo, int root_idx,
                        const int *ufirst, const int *users, int *slot_of) {
  const hlo_computation *c = p->c;
  int nnode = 0, nargs = 0;
  for (int i = lo; i <= root_idx; i++)
    if (mark[i] == tag) {
      nnode++;
      nargs += c->instrs[i]->noperands;
    }
  pgroup *q = &p->groups[p->ngroups];
  memset(q, 0, sizeof *q);
  q->node = malloc(sizeof *q->node * (size_t)nnode);
  q->in = malloc(sizeof *q->in * (size_t)(nargs ? nargs : 1));
  q->argofs = malloc(sizeof *q->argofs * (size_t)nnode);
  q->arg = malloc(sizeof *q->arg * (size_t)(nargs ? nargs : 1));
  q->out = calloc((size_t)nnode, 1);
  if (!q->node || !q->in || !q->argofs || !q->arg || !q->out) {
    free(q->node), free(q->in), free(q->argofs), free(q->arg), free(q->out);
    return -1;
  }
  int nin = 0, j = 0, a = 0;
  /* slot_of[i]: the slot of instruction i in this group (-1 when none yet);
   * nodes first get provisional numbers, inputs are numbered as met. */
  for (int i = lo; i <= root_idx; i++)
    if (mark[i] == tag)
      slot_of[i] = -2 - j++; /* node j, encoded */
  j = 0;
  for (int i = lo; i <= root_idx; i++) {
    if (mark[i] != tag)
      continue;
    const hlo_instr *ins = c->instrs[i];
    q->node[j] = ins;
    q->argofs[j] = a;
    for (int k = 0; k < ins->noperands; k++) {
      int o = ins->operands[k]->index;
      if (slot_of[o] == -1) {
        slot_of[o] = nin;
        q->in[nin++] = ins->operands[k];
      }
      q->arg[a++] = slot_of[o]; /* inputs now; nodes fixed up below */
    }
    bool outside = i == root_idx || ins == c->root;
    for (int u = ufirst[i]; u < ufirst[i + 1] && !outside; u++)
      outside = mark[users[u]] != tag;
    q->out[j] = outside;
    j++;
  }
  for (int k = 0; k < a; k++)
    if (q->arg[k] <= -2)
      q->arg[k] = nin + (-2 - q->arg[k]);
  /* Reset the scratch map for the next group. */
  for (int i = 0; i < nnode; i++)
    slot_of[q->node[i]->index] = -1;
  for (int i = 0; i < nin; i++)
    slot_of[q->in[i]->index] = -1;
  q->g = (chk_fuse_group){.root = c->instrs[root_idx], .nin = nin, .in = q->in, .nnode = nnode,
                          .node = q->node, .argofs = q->argofs, .arg = q->arg, .out = q->out};
  for (int i = 0; i < nnode; i++) {
    p->gid[q->node[i]->index] = p->ngroups;
    p->pos[q->node[i]->index] = root_idx;
  }
  p->ngroups++;
  return 0;
}

chk_fuse_plan *chk_fuse_plan_build(const hlo_computation *c) {
  int ni = c->ninstrs;
  /* Cheap first pass: most computations (reducers, small fusions) have no
   * root worth a group, and they are planned once per call. */
  bool any = false;
  for (int i = 0; i < ni && !any; i++)
    any = root_candidate(c->instrs[i]);
  if (!any)
    return NULL;

  chk_fuse_plan *p = calloc(1, sizeof *p);
  int *ufirst = calloc((size_t)ni + 1, sizeof *ufirst);
  int *users = NULL, *fillc = NULL, *mark = NULL, *slot_of = NULL;
  if (!p || !ufirst)
    goto fail;
  p->c = c;
  p->ninstr = ni;
  p->pos = malloc(sizeof *p->pos * (size_t)ni);
  p->gid = malloc(sizeof *p->gid * (size_t)ni);
  p->groups = calloc((size_t)ni, sizeof *p->groups);
  mark = calloc((size_t)ni, sizeof *mark);
  slot_of = malloc(sizeof *slot_of * (size_t)ni);
  if (!p->pos || !p->gid || !p->groups || !mark || !slot_of)
    goto fail;
  for (int i = 0; i < ni; i++) {
    p->pos[i] = i;
    p->gid[i] = -1;
    slot_of[i] = -1;
    if (c->instrs[i]->index != i)
      goto fail; /* the plan relies on index == position */
  }
  /* Readers of every instruction (CSR). */
  int nedges = 0;
  for (int i = 0; i < ni; i++)
    for (int k = 0; k < c->instrs[i]->noperands; k++) {
      ufirst[c->instrs[i]->operands[k]->index + 1]++;
      nedges++;
    }
  for (int i = 0; i < ni; i++)
    ufirst[i + 1] += ufirst[i];
  users = malloc(sizeof *users * (size_t)(nedges ? nedges : 1));
  fillc = calloc((size_t)ni, sizeof *fillc);
  if (!users || !fillc)
    goto fail;
  for (int i = 0; i < ni; i++)
    for (int k = 0; k < c->instrs[i]->noperands; k++) {
      int o = c->instrs[i]->operands[k]->index;
      users[ufirst[o] + fillc[o]++] = i;
    }

  /* mark[i]: 0 untouched, tag = -(root+1)... we use tag = root + 1 for
   * members and -(root + 1) for "read by the group, to be decided". */
  for (int r = ni - 1; r >= 0; r--) {
    const hlo_instr *root = c->instrs[r];
    /* A dead instruction is never a root: the driver skips it, and then a
     * member materialised for a later reader would never be produced. */
    bool read = ufirst[r + 1] > ufirst[r] || root == c->root;
    if (p->gid[r] != -1 || !read || !root_candidate(root))
      continue;
    int tag = r + 1, cand = -(r + 1);
    mark[r] = tag;
    int lo = r, nmem = 0;
    for (int k = 0; k < root->noperands; k++) {
      int o = root->operands[k]->index;
      if (mark[o] != tag)
        mark[o] = cand;
      if (o < lo)
        lo = o;
    }
    for (int i = r - 1; i >= lo; i--) {
      if (mark[i] != cand)
        continue;
      const hlo_instr *ins = c->instrs[i];
      bool folded = splat_broadcast(ins, &root->shape);
      bool ok = p->gid[i] == -1 && (folded || fusible_op(ins, &root->shape));
      /* Readers outside the group must come after the root (then the
       * value is materialised); a folded broadcast is never materialised. */
      if (ok && ins == c->root)
        ok = !folded;
      for (int u = ufirst[i]; u < ufirst[i + 1] && ok; u++) {
        int rd = users[u];
        if (mark[rd] != tag)
          ok = !folded && rd > r;
      }
      if (!ok) {
        mark[i] = 0;
        continue;
      }
      mark[i] = tag;
      nmem++;
      for (int k = 0; k < ins->noperands; k++) {
        int o = ins->operands[k]->index;
        if (mark[o] != tag)
          mark[o] = cand;
        if (o < lo)
          lo = o;
      }
    }
    int rc = 0;
    if (nmem > 0)
      rc = finish_group(p, mark, tag, lo, r, ufirst, users, slot_of);
    for (int i = lo; i <= r; i++)
      if (mark[i] == tag || mark[i] == cand)
        mark[i] = 0;
    if (rc != 0)
      goto fail;
  }
  free(ufirst);
  free(users);
  free(fillc);
  free(mark);
  free(slot_of);
  if (p->ngroups == 0) {
    chk_fuse_plan_free(p);
    return NULL;
  }
  return p;

fail:
  free(ufirst);
  free(users);
  free(fillc);
  free(mark);
  free(slot_of);
  chk_fuse_plan_free(p);
  return NULL;
}

int chk_fuse_eval_pos(const chk_fuse_plan *p, const hlo_instr *ins) {
  if (!p || ins->parent != p->c || ins->index < 0 || ins->index >= p->ninstr)
    return ins->index;
  return p->pos[ins->index];
}

bool chk_fuse_is_root(const chk_fuse_plan *p, const hlo_instr *ins) {
  if (!p || ins->parent != p->c || ins->index < 0 || ins->index >= p->ninstr)
    return false;
  int g = p->gid[ins->index];
  return g >= 0 && p->groups[g].g.root == ins;
}

int chk_fuse_group_count(const chk_fuse_plan *p) { return p ? p->ngroups : 0; }

int chk_fuse_group_members(const chk_fuse_plan *p, int g, const hlo_instr *const **members) {
  if (!p || g < 0 || g >= p->ngroups)
    return 0;
  *members = p->groups[g].g.node;
  return p->groups[g].g.nnode;
}

int chk_fuse_group_inputs(const chk_fuse_plan *p, const hlo_instr *root, const hlo_instr *const **inputs) {
  if (!chk_fuse_is_root(p, root))
    return 0;
  const chk_fuse_group *g = &p->groups[p->gid[root->index]].g;
  *inputs = g->in;
  return g->nin;
}

int chk_fuse_eval_group(chk_eval *ev, const chk_fuse_plan *p, const hlo_instr *root, int nrep,
                        hlo_value **vals) {
  if (!chk_fuse_is_root(p, root)) {
    chk_fail(ev, root, "internal: not the root of an elementwise group");
    return -1;
  }
  const chk_fuse_group *g = &p->groups[p->gid[root->index]].g;
  hlo_value **inv = malloc(sizeof *inv * (size_t)(g->nin ? g->nin : 1));
  hlo_value **outv = malloc(sizeof *outv * (size_t)nrep * (size_t)g->nnode);
  if (!inv || !outv) {
    free(inv);
    free(outv);
    chk_fail(ev, root, "out of memory");
    return -1;
  }
  int rc = 0, done = 0;
  for (int r = 0; r < nrep && rc == 0; r++) {
    for (int k = 0; k < g->nin; k++)
      inv[k] = vals[(size_t)g->in[k]->index * (size_t)nrep + (size_t)r];
    rc = chk_fuse_run(ev, g, inv, outv + (size_t)r * (size_t)g->nnode);
    if (rc == 0)
      done = r + 1;
  }
  /* Store only when every replica succeeded, so failure stores nothing. */
  for (int r = 0; r < done; r++)
    for (int j = 0; j < g->nnode; j++) {
      hlo_value *v = outv[(size_t)r * (size_t)g->nnode + (size_t)j];
      if (!v)
        continue;
      if (rc == 0) {
        hlo_value **slot = &vals[(size_t)g->node[j]->index * (size_t)nrep + (size_t)r];
        hlo_value_unref(*slot);
        *slot = v;
      } else {
        hlo_value_unref(v);
      }
    }
  free(inv);
  free(outv);
  return rc;
}
