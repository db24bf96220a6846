/* dev_cost.c — the deterministic cost model: simulated seconds of one run of
 * a lowered schedule on one machine.
 *
 * A kernel runs on one TensorCore, so chip figures are divided by the core
 * count; the VPU and EUP figures are already per core.
 *
 *   B    = hbm_gbps * 1e9 / cores                              bytes/s
 *   MXU  = peak * 1e12 / cores * util                         flop/s
 *          peak: mxu_int8_tops for a dot or convolution on 8-bit (or
 *          narrower) integer operands (mxu_bf16_tflops when that is 0);
 *          mxu_bf16_tflops otherwise (bf16, f16, fp8, f32; also when the
 *          schedule has no fusion).  An f32 dot is not slowed here: its
 *          precision is already in mxu_flops, which counts bf16 MXU passes
 *          (dev_lower multiplies an f32 dot's flops by 1, 3 or 6 for
 *          default, high, highest, or the dot's own precision_config), so
 *          HIGHEST costs 6x the MXU time of the same dot at DEFAULT or in bf16
 *          util: how much of the systolic array the output tile fills,
 *          e(tm, mxu_rows) * e(tn, mxu_cols) with e(t, n) = t / (ceil(t/n)*n),
 *          tm and tn the last two tile dims (tm = 1 for rank 1, both 1 for a
 *          scalar): a 128x128 tile uses a quarter of a 256x256 MXU
 *   VPU  = vpu_gops * 1e9, EUP = eup_gops * 1e9                ops/s
 *
 * Whole-run times:
 *   dma_s      = dma_bytes / B + dma_count * dma_latency
 *   mxu_s      = min(mxu_flops / MXU, mxu_flops / VPU)  (a dot too thin for
 *                the MXU runs on the VPU instead)
 *   compute_s  = max(mxu_s, vpu_ops / VPU, eup_ops / EUP)  (the three units
 *                issue in parallel, so the busiest one sets the pace)
 *   overhead_s = steps * step_overhead
 *
 * Overlap, with S = steps, d = dma_s / S and c = compute_s / S per step:
 *   buf = 1   nothing overlaps:  body = dma_s + compute_s
 *   buf >= 2  a two-stage pipeline: the first fetch and the last compute are
 *             exposed, and in between each step takes the longer of its
 *             fetch and its compute:
 *                body = d + (S - 1) * max(d', c) + c
 *             where d' is d with its latency share divided by buf - 1 (more
 *             buffers keep more transfers in flight, hiding latency but not
 *             bandwidth)
 *   total_s       = body + overhead_s
 *   exposed_dma_s = body - compute_s
 *
 * With S = 1 the pipeline has nothing to overlap and equals buf = 1.  Every
 * input is a number, so the same schedule and machine give the same time.
 */
#include "dev_cost.h"

#include <stdbool.h>
#include <string.h>

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* Fraction of n lanes (or rows) a tile dimension of t keeps busy. */
static double fill(int64_t t, int n) {
  if (t < 1 || n < 1)
    return 1.0;
  int64_t padded = (t + n - 1) / n * n;
  return (double)t / (double)padded;
}

/* The int8 MXU mode applies when the hero's operands are 8-bit (or
 * narrower) integers. */
static bool int8_operands(const dev_fusion *f) {
  if (!f || !f->hero || (f->kind != DEV_HERO_DOT && f->kind != DEV_HERO_CONV) || f->hero->noperands < 1)
    return false;
  hlo_etype t = f->hero->operands[0]->shape.type;
  return hlo_etype_is_int(t) && hlo_etype_bits(t) <= 8;
}

/* Peak MXU flop/s of one core for this schedule, before utilisation. */
static double mxu_peak(const dev_schedule *s, const dev_machine *m, double cores) {
  double bf16 = m->mxu_bf16_tflops * 1e12 / cores;
  if (int8_operands(s->f) && m->mxu_int8_tops > 0)
    return m->mxu_int8_tops * 1e12 / cores;
  return bf16;
}

static double mxu_util(const dev_schedule *s, const dev_machine *m) {
  int r = s->cfg.rank;
  int64_t tm = r >= 2 ? s->cfg.tile[r - 2] : 1;
  int64_t tn = r >= 1 ? s->cfg.tile[r - 1] : 1;
  return fill(tm, m->mxu_rows) * fill(tn, m->mxu_cols);
}

void dev_cost_estimate(const dev_schedule *s, const dev_machine *m, dev_cost *out) {
  memset(out, 0, sizeof *out);
  double cores = m->cores > 0 ? m->cores : 1;
  double bw = m->hbm_gbps * 1e9 / cores;
  double vpu = m->vpu_gops * 1e9, eup = m->eup_gops * 1e9;
  double steps = s->steps > 0 ? (double)s->steps : 1.0;
  double latency = (double)s->dma_count * m->dma_latency_ns * 1e-9;
  double transfer = bw > 0 ? (double)s->dma_bytes / bw : 0.0;

  double mxu_s = 0.0;
  if (s->mxu_flops > 0) {
    double rate = mxu_peak(s, m, cores) * mxu_util(s, m);
    mxu_s = rate > 0 ? (double)s->mxu_flops / rate : 0.0;
    if (vpu > 0)
      mxu_s = dmin(mxu_s, (double)s->mxu_flops / vpu);
  }
  double vpu_s = vpu > 0 ? (double)s->vpu_ops / vpu : 0.0;
  double eup_s = eup > 0 ? (double)s->eup_ops / eup : 0.0;

  out->dma_s = transfer + latency;
  out->compute_s = dmax(mxu_s, dmax(vpu_s, eup_s));
  out->overhead_s = steps * m->step_overhead_ns * 1e-9;

  double body;
  if (s->cfg.buf <= 1) {
    body = out->dma_s + out->compute_s;
  } else {
    double d = out->dma_s / steps, c = out->compute_s / steps;
    double d_steady = (transfer + latency / (s->cfg.buf - 1)) / steps;
    body = d + (steps - 1) * dmax(d_steady, c) + c;
  }
  out->exposed_dma_s = body - out->compute_s;
  out->total_s = body + out->overhead_s;
}
