/* eval_dot.c — dot with general dimension numbers for the reference evaluator.
 *
 * Result layout: batch dims (in lhs_batch_dims order), then the lhs dims that
 * are neither batch nor contracting (ascending), then the rhs ones.
 *
 * Numerics (the reference's definition):
 *   - The compute type follows the result type: f32 for f32, bf16, f16 and
 *     the f8 types; f64 for f64; 64-bit integers (wrapping) for integer
 *     results.  Float operands are converted straight to the compute type
 *     (bf16/f16 exactly, f64 -> f32 rounded once); integer results convert
 *     each operand to the result type first (XLA's implicit convert), so
 *     s8 x s8 -> s32 sign-extends and u8 operands of an s8 result wrap.
 *   - Every output element is c = 0; for k ascending (row-major over the
 *     contracting dims, in lhs_contracting_dims order): c = c + a[k] * b[k],
 *     with the product and the sum each rounded to the compute type (no fused
 *     multiply-add: this file is compiled with fp-contract off).  The result
 *     is rounded once to the result type.  Integer sums wrap; wrapping in 64
 *     bits and narrowing at the end equals wrapping at every step.
 *   - operand_precision is ignored: the reference always computes at full
 *     precision.  With chk_eval_opts emulate_device an f32-compute dot
 *     instead accumulates hlo_num_dot_acc (hlo_numerics.h: bf16 passes chosen by
 *     operand_precision, f32 sums, flushed subnormals) in the same order.
 * The blocked f32 kernel below tiles over i, j and k, but a k block only
 * ever continues the running sum of the previous block in memory, so every
 * element's sequence of roundings is the one above whatever the blocking,
 * the vector width (SSE, AVX2 or plain C give identical bits) or the number
 * of threads.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_num_dot.h"
#include "hlo/hlo_numerics.h"
#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_clones.h"

/* ---- packing -------------------------------------------------------------- */

/* Shared with eval_conv.c (eval_internal.h).  Threads split the outer rows. */
void chk_permute_copy(void *dst, const void *src, size_t esz, int nd, const int64_t *size,
                         const int64_t *sstride) {
  int64_t total = 1;
  for (int d = 0; d < nd; d++)
    total *= size[d];
  if (total == 0)
    return;
  int64_t inner = nd > 0 ? size[nd - 1] : 1, is = nd > 0 ? sstride[nd - 1] : 1;
  int64_t outer = total / inner;
#pragma omp parallel for schedule(static) if (total >= (1 << 16))
  for (int64_t o = 0; o < outer; o++) {
    int64_t r = o, off = 0;
    for (int d = nd - 2; d >= 0; d--) {
      off += (r % size[d]) * sstride[d];
      r /= size[d];
    }
    if (esz == 4) {
      const uint32_t *s = (const uint32_t *)src + off;
      uint32_t *t = (uint32_t *)dst + o * inner;
      for (int64_t j = 0; j < inner; j++)
        t[j] = s[j * is];
    } else {
      const uint64_t *s = (const uint64_t *)src + off;
      uint64_t *t = (uint64_t *)dst + o * inner;
      for (int64_t j = 0; j < inner; j++)
        t[j] = s[j * is];
    }
  }
}

/* ---- f32 blocked kernel --------------------------------------------------- */

/* Register tile MR x NR: 12 vector accumulators of 8 floats, which with two
 * B vectors and a broadcast fills the 16 AVX registers.  KC x NR panels of
 * B stay in L1, MC x KC blocks of A in L2, KC x NC blocks of B in L3. */
enum { MR = 6, NR = 16, KC = 256, MC = 72, NC = 1024 };

typedef float vf8 __attribute__((vector_size(32)));

/* c (an MR x NR tile, row-major) += a_panel (KC x MR) * b_panel (KC x NR). */
#define MICRO_KERNEL(NAME, ATTR)                                                     \
  ATTR static void NAME(int64_t kc, const float *restrict a, const float *restrict b, \
                        float *restrict c) {                                         \
    vf8 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;                 \
    memcpy(&c00, c + 0, 32), memcpy(&c01, c + 8, 32);                               \
    memcpy(&c10, c + 16, 32), memcpy(&c11, c + 24, 32);                             \
    memcpy(&c20, c + 32, 32), memcpy(&c21, c + 40, 32);                             \
    memcpy(&c30, c + 48, 32), memcpy(&c31, c + 56, 32);                             \
    memcpy(&c40, c + 64, 32), memcpy(&c41, c + 72, 32);                             \
    memcpy(&c50, c + 80, 32), memcpy(&c51, c + 88, 32);                             \
    for (int64_t k = 0; k < kc; k++) {                                               \
      vf8 b0, b1;                                                                    \
      memcpy(&b0, b + NR * k, 32);                                                   \
      memcpy(&b1, b + NR * k + 8, 32);                                               \
      const float *ak = a + MR * k;                                                  \
      vf8 t;                                                                         \
      t = b0 * ak[0], c00 = c00 + t, t = b1 * ak[0], c01 = c01 + t;                  \
      t = b0 * ak[1], c10 = c10 + t, t = b1 * ak[1], c11 = c11 + t;                  \
      t = b0 * ak[2], c20 = c20 + t, t = b1 * ak[2], c21 = c21 + t;                  \
      t = b0 * ak[3], c30 = c30 + t, t = b1 * ak[3], c31 = c31 + t;                  \
      t = b0 * ak[4], c40 = c40 + t, t = b1 * ak[4], c41 = c41 + t;                  \
      t = b0 * ak[5], c50 = c50 + t, t = b1 * ak[5], c51 = c51 + t;                  \
    }                                                                                \
    memcpy(c + 0, &c00, 32), memcpy(c + 8, &c01, 32);                               \
    memcpy(c + 16, &c10, 32), memcpy(c + 24, &c11, 32);                             \
    memcpy(c + 32, &c20, 32), memcpy(c + 40, &c21, 32);                             \
    memcpy(c + 48, &c30, 32), memcpy(c + 56, &c31, 32);                             \
    memcpy(c + 64, &c40, 32), memcpy(c + 72, &c41, 32);                             \
    memcpy(c + 80, &c50, 32), memcpy(c + 88, &c51, 32);                             \
  }

MICRO_KERNEL(micro_generic, )
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_KERNEL 1
/* AVX2 without FMA: same operations, same roundings, twice the width. */
MICRO_KERNEL(micro_avx2, __attribute__((target("avx2"))))
#endif

typedef void micro_fn(int64_t, const float *, const float *, float *);

static micro_fn *pick_micro(void) {
#ifdef HAVE_AVX2_KERNEL
  if (__builtin_cpu_supports("avx2"))
    return micro_avx2;
#endif
  return micro_generic;
}

/* C (M x N, row-major, ldc = N) += A (M x K, row-major) * B (K x N). */
static int gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, const float *B, float *C) {
  micro_fn *micro = pick_micro();
  int64_t nc_max = NC < N ? NC : N;
  int64_t npan_max = (nc_max + NR - 1) / NR;
  float *bp = aligned_alloc(64, sizeof(float) * (size_t)(KC * NR * npan_max));
  if (!bp)
    return -1;
  int fail = 0;
  for (int64_t jc = 0; jc < N; jc += NC) {
    int64_t nc = N - jc < NC ? N - jc : NC;
    int64_t npan = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = K - pc < KC ? K - pc : KC;
      int64_t nblk = (M + MC - 1) / MC;
#pragma omp parallel if (M * N * kc >= (1 << 18)) reduction(| : fail)
      {
        /* pack B[pc:pc+kc, jc:jc+nc] into KC x NR panels, zero-padded */
#pragma omp for schedule(static)
        for (int64_t p = 0; p < npan; p++) {
          float *dst = bp + p * KC * NR;
          int64_t j0 = jc + p * NR, nj = N - j0 < NR ? N - j0 : NR;
          for (int64_t k = 0; k < kc; k++) {
            const float *src = B + (pc + k) * N + j0;
            int64_t j = 0;
            for (; j < nj; j++)
              dst[k * NR + j] = src[j];
            for (; j < NR; j++)
              dst[k * NR + j] = 0.0f;
          }
        }
        float *ap = aligned_alloc(64, sizeof(float) * (size_t)(KC * MC));
        float ct[MR * NR] __attribute__((aligned(64)));
        if (!ap)
          fail = 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t blk = 0; blk < nblk; blk++) {
          if (!ap)
            continue;
          int64_t ic = blk * MC, mc = M - ic < MC ? M - ic : MC;
          /* pack A[ic:ic+mc, pc:pc+kc] into KC x MR panels, zero-padded */
          for (int64_t ir = 0; ir < mc; ir += MR) {
            float *dst = ap + ir * KC;
            int64_t ni = mc - ir < MR ? mc - ir : MR;
            for (int64_t i = 0; i < MR; i++) {
              if (i < ni)
                for (int64_t k = 0; k < kc; k++)
                  dst[k * MR + i] = A[(ic + ir + i) * K + pc + k];
              else
                for (int64_t k = 0; k < kc; k++)
                  dst[k * MR + i] = 0.0f;
            }
          }
          for (int64_t p = 0; p < npan; p++) {
            int64_t j0 = jc + p * NR, nj = N - j0 < NR ? N - j0 : NR;
            for (int64_t ir = 0; ir < mc; ir += MR) {
              int64_t i0 = ic + ir, ni = mc - ir < MR ? mc - ir : MR;
              /* the tile goes through ct so ragged edges need no special
               * kernel; padded rows/columns are computed and dropped */
              for (int64_t i = 0; i < MR; i++)
                for (int64_t j = 0; j < NR; j++)
                  ct[i * NR + j] = i < ni && j < nj ? C[(i0 + i) * N + j0 + j] : 0.0f;
              micro(kc, ap + ir * KC, bp + p * KC * NR, ct);
              for (int64_t i = 0; i < ni; i++)
                memcpy(C + (i0 + i) * N + j0, ct + i * NR, sizeof(float) * (size_t)nj);
            }
          }
        }
        free(ap);
      }
      if (fail)
        break;
    }
    if (fail)
      break;
  }
  free(bp);
  return fail ? -1 : 0;
}

/* ---- f64 and integer kernels ---------------------------------------------- */

/* Every element of C accumulates a[i,k] * B[k,j] for k ascending onto its
 * initial value, one add per product, no multiply-add (fp-contract is
 * off): the bits depend on nothing else, so the loops below may block as
 * they like.  A block of GB_R rows by GB_C columns keeps its sums in
 * registers across the whole k loop and loads each B vector once for
 * the GB_R rows; the rows and columns left over take the i-k-j loop.
 * At -O2 GCC leaves the j loops scalar unless told: `omp simd`
 * vectorises across j only (lanes are different elements). */
enum { GB_R = 4, GB_C = 32 };

__attribute__((always_inline)) static inline void gemm_f64_block(int64_t N, int64_t K, const double *A,
                                                                 const double *B, double *C) {
  double acc[GB_R][GB_C];
  for (int r = 0; r < GB_R; r++)
    memcpy(acc[r], C + r * N, sizeof acc[r]);
  for (int64_t k = 0; k < K; k++) {
    const double *restrict b = B + k * N;
#pragma GCC unroll 4
    for (int r = 0; r < GB_R; r++) {
      double a = A[r * K + k];
#pragma omp simd
      for (int j = 0; j < GB_C; j++)
        acc[r][j] = acc[r][j] + a * b[j];
    }
  }
  for (int r = 0; r < GB_R; r++)
    memcpy(C + r * N, acc[r], sizeof acc[r]);
}

HLO_CLONES
static void gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, const double *B, double *C) {
  int64_t nb = (M + GB_R - 1) / GB_R;
#pragma omp parallel for schedule(static) if (M * N * K >= (1 << 18))
  for (int64_t ib = 0; ib < nb; ib++) {
    int64_t i0 = ib * GB_R, nr = M - i0 < GB_R ? M - i0 : GB_R, j0 = 0;
    if (nr == GB_R)
      for (; j0 + GB_C <= N; j0 += GB_C)
        gemm_f64_block(N, K, A + i0 * K, B + j0, C + i0 * N + j0);
    for (int64_t i = i0; i < i0 + nr && j0 < N; i++) {
      double *restrict c = C + i * N;
      for (int64_t k = 0; k < K; k++) {
        double a = A[i * K + k];
        const double *restrict b = B + k * N;
#pragma omp simd
        for (int64_t j = j0; j < N; j++)
          c[j] = c[j] + a * b[j];
      }
    }
  }
}

/* Signed and unsigned alike: two's complement products and sums modulo 2^64. */
static void gemm_u64(int64_t M, int64_t N, int64_t K, const uint64_t *A, const uint64_t *B, uint64_t *C) {
#pragma omp parallel for schedule(static) if (M * N * K >= (1 << 18))
  for (int64_t i = 0; i < M; i++) {
    uint64_t *restrict c = C + i * N;
    for (int64_t k = 0; k < K; k++) {
      uint64_t a = A[i * K + k];
      const uint64_t *restrict b = B + k * N;
      for (int64_t j = 0; j < N; j++)
        c[j] += a * b[j];
    }
  }
}

/* ---- the op ---------------------------------------------------------------- */

/* Rows per slice when a row costs row_work multiply-adds: about
 * CHK_SLICE_WORK, and at least 16 rows so that threads share a slice. */
static int64_t slice_rows(int64_t row_work) {
  int64_t n = chk_slice_rows(row_work);
  return n < 16 ? 16 : n;
}

/* Shared with eval_conv.c, as are chk_dot_operand and chk_permute_copy. */
hlo_etype chk_dot_compute_type(hlo_etype out) {
  switch (hlo_etype_class(out)) {
  case HLO_CLASS_FLOAT:
    return out == HLO_F64 ? HLO_F64 : HLO_F32;
  case HLO_CLASS_SINT:
    return HLO_S64;
  case HLO_CLASS_UINT:
    return HLO_U64;
  default:
    return HLO_INVALID;
  }
}

/* v's elements in compute type ct (see the numerics note and eval_internal.h). */
const void *chk_dot_operand(const hlo_value *v, hlo_etype out, hlo_etype ct, void **owned) {
  *owned = NULL;
  if (v->type == ct)
    return v->data;
  size_t n = (size_t)v->count;
  void *p = malloc((n ? n : 1) * 8);
  if (!p)
    return NULL;
  int rc;
  if (ct == HLO_F32 || ct == HLO_F64 || v->type == out) {
    rc = hlo_convert_array(v->type, v->data, ct, p, n);
  } else { /* integer result: through the result type first */
    void *t = malloc((n ? n : 1) * hlo_etype_host_size(out));
    rc = t ? hlo_convert_array(v->type, v->data, out, t, n) : -1;
    if (rc == 0)
      rc = hlo_convert_array(out, t, ct, p, n);
    free(t);
  }
  if (rc != 0) {
    free(p);
    return NULL;
  }
  *owned = p;
  return p;
}

int chk_dot_side_order(const hlo_value *v, const hlo_ints *batch, const hlo_ints *contr, bool free_first,
                      int64_t *size, int64_t *stride, int64_t *free_sizes) {
  int64_t st[HLO_MAX_RANK];
  hlo_value_strides(v, st);
  bool seen[HLO_MAX_RANK] = {false};
  const hlo_ints *lists[2] = {batch, contr};
  for (int l = 0; l < 2; l++)
    for (int i = 0; i < lists[l]->n; i++) {
      int64_t d = lists[l]->v[i];
      if (d < 0 || d >= v->rank || seen[d])
        return -1;
      seen[d] = true;
    }
  int n = 0, nfree = 0;
  for (int i = 0; i < batch->n; i++, n++)
    size[n] = v->dims[batch->v[i]], stride[n] = st[batch->v[i]];
  int64_t fs[HLO_MAX_RANK], fst[HLO_MAX_RANK];
  for (int d = 0; d < v->rank; d++)
    if (!seen[d]) {
      fs[nfree] = v->dims[d];
      fst[nfree] = st[d];
      free_sizes[nfree++] = v->dims[d];
    }
  if (free_first)
    for (int i = 0; i < nfree; i++, n++)
      size[n] = fs[i], stride[n] = fst[i];
  for (int i = 0; i < contr->n; i++, n++)
    size[n] = v->dims[contr->v[i]], stride[n] = st[contr->v[i]];
  if (!free_first)
    for (int i = 0; i < nfree; i++, n++)
      size[n] = fs[i], stride[n] = fst[i];
  return nfree;
}

/* Is the order already row-major contiguous, so no copy is needed? */
static bool is_identity(int nd, const int64_t *size, const int64_t *stride) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (size[d] != 1 && stride[d] != s)
      return false;
    s *= size[d];
  }
  return true;
}

hlo_value *chk_op_dot(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op != HLO_OP_DOT || ins->noperands != 2)
    return chk_fail(ev, ins, "expects a dot with two operands");
  const hlo_value *lhs = ops[0], *rhs = ops[1];
  if (lhs->type == HLO_TUPLE || rhs->type == HLO_TUPLE)
    return chk_fail(ev, ins, "operands must be arrays");
  const hlo_dot_dnums *dn = &ins->attrs.dot;
  if (dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n)
    return chk_fail(ev, ins, "lhs and rhs must have as many batch and contracting dimensions");
  int64_t ls[HLO_MAX_RANK], lst[HLO_MAX_RANK], rs[HLO_MAX_RANK], rst[HLO_MAX_RANK];
  int64_t lfree[HLO_MAX_RANK], rfree[HLO_MAX_RANK];
  int nlf = chk_dot_side_order(lhs, &dn->lhs_batch, &dn->lhs_contracting, true, ls, lst, lfree);
  int nrf = chk_dot_side_order(rhs, &dn->rhs_batch, &dn->rhs_contracting, false, rs, rst, rfree);
  if (nlf < 0 || nrf < 0)
    return chk_fail(ev, ins, "bad or repeated dimension numbers");
  int nb = dn->lhs_batch.n, nc = dn->lhs_contracting.n;
  int64_t B = 1, M = 1, K = 1, N = 1;
  for (int i = 0; i < nb; i++) {
    if (ls[i] != rs[i])
      return chk_fail(ev, ins, "batch dimension %d: lhs size %lld, rhs size %lld", i,
                      (long long)ls[i], (long long)rs[i]);
    B *= ls[i];
  }
  for (int i = 0; i < nc; i++) {
    if (ls[nb + nlf + i] != rs[nb + i])
      return chk_fail(ev, ins, "contracting dimension %d: lhs size %lld, rhs size %lld", i,
                      (long long)ls[nb + nlf + i], (long long)rs[nb + i]);
    K *= rs[nb + i];
  }
  for (int i = 0; i < nlf; i++)
    M *= lfree[i];
  for (int i = 0; i < nrf; i++)
    N *= rfree[i];
  hlo_value *out = chk_result(ev, ins);
  if (!out)
    return NULL;
  bool ok = out->rank == nb + nlf + nrf;
  for (int i = 0; ok && i < nb; i++)
    ok = out->dims[i] == ls[i];
  for (int i = 0; ok && i < nlf; i++)
    ok = out->dims[nb + i] == lfree[i];
  for (int i = 0; ok && i < nrf; i++)
    ok = out->dims[nb + nlf + i] == rfree[i];
  if (!ok) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "result shape is not [batch, lhs free, rhs free]");
  }
  hlo_etype ct = chk_dot_compute_type(out->type);
  if (ct == HLO_INVALID) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "result type %s is not supported", hlo_etype_name(out->type));
  }
  if (hlo_etype_class(lhs->type) == HLO_CLASS_COMPLEX || hlo_etype_class(rhs->type) == HLO_CLASS_COMPLEX ||
      hlo_etype_host_size(lhs->type) == 0 || hlo_etype_host_size(rhs->type) == 0) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "operand types %s, %s are not supported", hlo_etype_name(lhs->type),
                    hlo_etype_name(rhs->type));
  }
  size_t esz = hlo_etype_host_size(ct);
  void *lown = NULL, *rown = NULL, *apk = NULL, *bpk = NULL, *cbuf = NULL;
  int rc = -1;
  const void *ld = chk_dot_operand(lhs, out->type, ct, &lown);
  const void *rd = chk_dot_operand(rhs, out->type, ct, &rown);
  if (!ld || !rd)
    goto done;
  /* canonical [B][M][K] and [B][K][N] */
  const void *A = ld, *Bm = rd;
  int nd = nb + nlf + nc;
  if (!is_identity(nd, ls, lst)) {
    apk = malloc((size_t)(B * M * K > 0 ? B * M * K : 1) * esz);
    if (!apk)
      goto done;
    chk_permute_copy(apk, ld, esz, nd, ls, lst);
    A = apk;
  }
  nd = nb + nc + nrf;
  if (!is_identity(nd, rs, rst)) {
    bpk = malloc((size_t)(B * K * N > 0 ? B * K * N : 1) * esz);
    if (!bpk)
      goto done;
    chk_permute_copy(bpk, rd, esz, nd, rs, rst);
    Bm = bpk;
  }
  void *C = out->data; /* zero-filled by chk_result */
  if (out->type != ct) {
    C = cbuf = calloc((size_t)(out->count ? out->count : 1), esz);
    if (!cbuf)
      goto done;
  }
  rc = 0;
  bool timed_out = false;
  bool emulated = ev->o.emulate_device && ct == HLO_F32;
  if (emulated) {
    /* --emulate-device: the device's bf16 MXU passes and flushing, same
     * per-element order (k ascending) as below */
    hlo_num_precision p = hlo_num_dot_precision(ins, HLO_NUM_PREC_DEFAULT);
    const float *Af = A, *Bf = Bm;
    float *Cf = C;
    /* Split each operand once, one plane per bf16 part, both in their own
     * layout ([b][m][k] and [b][k][n]); a row of C is then N lanes that
     * each run k ascending, which hlo_num_dot_f32_lanes does eight at a time
     * with the scalar loop's bits.  It leaves NaN payloads to the compiler's
     * operand order, so a NaN anywhere takes the scalar loop. */
    int np = hlo_num_dot_parts(p);
    size_t na = (size_t)(B * M * K > 0 ? B * M * K : 1), nbs = (size_t)(B * K * N > 0 ? B * K * N : 1);
    float *as = malloc(sizeof(float) * (size_t)np * na), *bs = malloc(sizeof(float) * (size_t)np * nbs);
    if (!as || !bs) {
      rc = -1;
    } else {
      hlo_num_dot_planes pl = {.sa = 1, .sb = N, .prec = p};
      float *ap[3], *bp[3];
      for (int q = 0; q < 3; q++) {
        ap[q] = as + (size_t)(q < np ? q : 0) * na;
        bp[q] = bs + (size_t)(q < np ? q : 0) * nbs;
      }
      /* exp_min lets the kernels leave out flushes that provably change
       * nothing ("No subnormals" in hlo_num_dot.c); the bits are the
       * flushing loop's either way. */
      bool nan = hlo_num_dot_split_block(Af, B * M * K, p, ap, &pl.exp_min[0]);
      nan |= hlo_num_dot_split_block(Bf, B * K * N, p, bp, &pl.exp_min[1]);
      for (int q = 0; q < np; q++) {
        pl.a[q] = ap[q];
        pl.b[q] = bp[q];
      }
      /* Rows of one batch read the same rhs, so a block of them goes
       * through hlo_num_dot_f32_rows together, each row with the bits of
       * its own lane call; blocks never straddle a batch. */
      enum { ROW_BLOCK = 16 };
      int64_t step = (slice_rows(N * K) + ROW_BLOCK - 1) / ROW_BLOCK, bpm = (M + ROW_BLOCK - 1) / ROW_BLOCK;
      for (int64_t r0 = 0; r0 < B * bpm && !timed_out; r0 += step) {
        int64_t r1 = B * bpm - r0 < step ? B * bpm : r0 + step;
#pragma omp parallel for schedule(dynamic) if ((r1 - r0) * ROW_BLOCK * N * K >= (1 << 18))
        for (int64_t blk = r0; blk < r1; blk++) {
          int64_t b = blk / bpm, i0 = (blk % bpm) * ROW_BLOCK, n = M - i0 < ROW_BLOCK ? M - i0 : ROW_BLOCK;
          int64_t bi0 = b * M + i0, a0s[ROW_BLOCK];
          if (!nan) {
            for (int64_t i = 0; i < n; i++)
              a0s[i] = (bi0 + i) * K;
            hlo_num_dot_f32_rows(&pl, Cf + bi0 * N, n, N, a0s, b * K * N, K);
            continue;
          }
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < N; j++)
              Cf[(bi0 + i) * N + j] = hlo_num_dot_f32_line(&pl, 0.0f, (bi0 + i) * K, b * K * N + j, K);
        }
        timed_out = chk_time_up(ev, ins);
      }
    }
    free(as);
    free(bs);
  }
  /* Each output row depends on its own row of A only, so running the rows
   * in slices, with the deadline asked between them, changes no bit.  f32
   * slices are at least 4 * MC rows, so repacking B per slice costs little. */
  int64_t step = slice_rows(N * K);
  if (ct == HLO_F32 && step < 4 * MC)
    step = 4 * MC;
  for (int64_t b = 0; rc == 0 && !emulated && !timed_out && b < B; b++)
    for (int64_t i0 = 0; rc == 0 && !timed_out && i0 < M; i0 += step) {
      int64_t mr = M - i0 < step ? M - i0 : step, a0 = b * M * K + i0 * K, c0 = b * M * N + i0 * N;
      if (ct == HLO_F32)
        rc = gemm_f32(mr, N, K, (const float *)A + a0, (const float *)Bm + b * K * N, (float *)C + c0);
      else if (ct == HLO_F64)
        gemm_f64(mr, N, K, (const double *)A + a0, (const double *)Bm + b * K * N, (double *)C + c0);
      else
        gemm_u64(mr, N, K, (const uint64_t *)A + a0, (const uint64_t *)Bm + b * K * N, (uint64_t *)C + c0);
      timed_out = chk_time_up(ev, ins);
    }
  if (timed_out)
    rc = -1;
  if (rc == 0 && cbuf)
    rc = hlo_convert_array(ct, cbuf, out->type, out->data, (size_t)out->count);
done:
  free(lown);
  free(rown);
  free(apk);
  free(bpk);
  free(cbuf);
  if (rc != 0) {
    hlo_value_unref(out);
    return chk_fail(ev, ins, "out of memory"); /* keeps a deadline's error: the first wins */
  }
  return out;
}
