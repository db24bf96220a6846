/* test_cost.c — the cost model on hand-filled schedules and machines, with
 * every expected time worked out by hand from the formula in dev_cost.c (no
 * lowering involved). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_cost.h"

/* Round numbers: 1e11 B/s, 1e9 VPU ops/s, 1e8 EUP ops/s, 100 ns a step. */
static dev_machine plain_machine(void) {
  dev_machine m;
  memset(&m, 0, sizeof m);
  strcpy(m.name, "plain");
  m.cores = 1;
  m.clock_mhz = 1000;
  m.sublanes = 8;
  m.lanes = 128;
  m.vmem_bytes = 16 << 20;
  m.hbm_gbps = 100;
  m.mxu_count = 4;
  m.mxu_rows = 128;
  m.mxu_cols = 128;
  m.mxu_bf16_tflops = 100;
  m.mxu_int8_tops = 200;
  m.f32_passes = 6;
  m.vpu_gops = 1;
  m.eup_gops = 0.1;
  m.step_overhead_ns = 100;
  m.dma_latency_ns = 0;
  return m;
}

static dev_schedule schedule(int64_t steps, int buf) {
  dev_schedule s;
  memset(&s, 0, sizeof s);
  s.cfg.rank = 2;
  s.cfg.tile[0] = 128;
  s.cfg.tile[1] = 128;
  s.cfg.buf = buf;
  s.cfg.pack = 1;
  s.cfg.norder = 2;
  s.cfg.order[1] = 1;
  s.steps = steps;
  return s;
}

static void near(double got, double want) {
  if (fabs(got - want) > 1e-12 * fabs(want) + 1e-18)
    fail_msg("got %.17g, wanted %.17g", got, want);
}

static void doubling_the_tile_halves_the_step_overhead(void **state) {
  (void)state;
  dev_machine m = plain_machine();
  dev_schedule a = schedule(64, 2), b = schedule(32, 2);
  b.cfg.tile[1] = 256; /* twice the tile: half the grid steps */
  a.vpu_ops = b.vpu_ops = 1000;
  dev_cost ca, cb;
  dev_cost_estimate(&a, &m, &ca);
  dev_cost_estimate(&b, &m, &cb);
  near(ca.overhead_s, 64 * 100e-9);
  near(cb.overhead_s, ca.overhead_s / 2);
  near(ca.compute_s, cb.compute_s); /* same work either way */
}

/* 4 steps, 4e5 bytes (4 us at 1e11 B/s), 8000 VPU ops (8 us). */
static void one_buffer_serialises_two_overlap(void **state) {
  (void)state;
  dev_machine m = plain_machine();
  dev_schedule s = schedule(4, 1);
  s.dma_bytes = 400000;
  s.dma_count = 8;
  s.vpu_ops = 8000;
  dev_cost c;
  dev_cost_estimate(&s, &m, &c);
  near(c.dma_s, 4e-6);
  near(c.compute_s, 8e-6);
  near(c.overhead_s, 0.4e-6);
  near(c.total_s, 4e-6 + 8e-6 + 0.4e-6); /* dma + compute + overhead */
  near(c.exposed_dma_s, 4e-6);

  /* buf=2: the first 1 us fetch, three steps at max(1, 2) us, the last 2 us
   * compute: 1 + 6 + 2 = 9 us, of which 1 us is exposed DMA. */
  s.cfg.buf = 2;
  dev_cost_estimate(&s, &m, &c);
  near(c.total_s, 9e-6 + 0.4e-6);
  near(c.exposed_dma_s, 1e-6);

  /* DMA-bound instead (16 us of transfer): 4 + 3*4 + 2 = 18 us. */
  s.dma_bytes = 1600000;
  dev_cost_estimate(&s, &m, &c);
  near(c.total_s, 18e-6 + 0.4e-6);
  near(c.exposed_dma_s, 10e-6);

  /* A single step has nothing to overlap: buf=2 equals buf=1. */
  dev_schedule one = schedule(1, 2);
  one.dma_bytes = 100000;
  one.vpu_ops = 2000;
  dev_cost_estimate(&one, &m, &c);
  near(c.total_s, 1e-6 + 2e-6 + 0.1e-6);
}

/* Latency: 8 transfers of 500 ns.  buf=2 keeps one in flight, buf=3 two,
 * so the steady state pays half the latency. */
static void more_buffers_hide_latency_not_bandwidth(void **state) {
  (void)state;
  dev_machine m = plain_machine();
  m.dma_latency_ns = 500;
  dev_schedule s = schedule(4, 2);
  s.dma_bytes = 400000; /* 4 us transfer */
  s.dma_count = 8;      /* 4 us latency */
  s.vpu_ops = 1000;     /* 1 us compute */
  dev_cost c2, c3, c4;
  dev_cost_estimate(&s, &m, &c2);
  near(c2.dma_s, 8e-6);
  /* d = 2 us; steady d' = (4 + 4/1)/4 = 2 us; c = 0.25 us: 2 + 3*2 + 0.25 */
  near(c2.total_s, 8.25e-6 + 0.4e-6);
  s.cfg.buf = 3;
  dev_cost_estimate(&s, &m, &c3);
  /* steady d' = (4 + 4/2)/4 = 1.5 us: 2 + 3*1.5 + 0.25 */
  near(c3.total_s, 6.75e-6 + 0.4e-6);
  s.cfg.buf = 4;
  dev_cost_estimate(&s, &m, &c4);
  assert_true(c4.total_s < c3.total_s && c3.total_s < c2.total_s);
  near(c4.dma_s, c2.dma_s); /* the bytes still have to move */
}

/* Two machines at the same clock: 4 MXUs of 128x128 and 2 of 256x256, peak
 * = MXUs * rows * cols * 2 flop * clock. */
static void a_bigger_mxu_speeds_up_a_dot(void **state) {
  (void)state;
  dev_machine small = plain_machine(), big = plain_machine();
  small.clock_mhz = big.clock_mhz = 1500;
  small.mxu_bf16_tflops = 4.0 * 128 * 128 * 2 * 1.5e9 / 1e12;
  big.mxu_count = 2;
  big.mxu_rows = big.mxu_cols = 256;
  big.mxu_bf16_tflops = 2.0 * 256 * 256 * 2 * 1.5e9 / 1e12;

  dev_schedule s = schedule(16, 2);
  s.cfg.tile[0] = s.cfg.tile[1] = 256;
  s.mxu_flops = (int64_t)2 * 1024 * 1024 * 1024;
  dev_cost cs, cb;
  dev_cost_estimate(&s, &small, &cs);
  dev_cost_estimate(&s, &big, &cb);
  near(cs.compute_s, (double)s.mxu_flops / (small.mxu_bf16_tflops * 1e12));
  near(cb.compute_s, cs.compute_s / 2);
  assert_true(cb.total_s < cs.total_s);

  /* A 128x128 tile fills a quarter of a 256x256 array: the big MXU is then
   * half as fast as the small one. */
  s.cfg.tile[0] = s.cfg.tile[1] = 128;
  dev_cost_estimate(&s, &small, &cs);
  dev_cost_estimate(&s, &big, &cb);
  near(cb.compute_s, cs.compute_s * 2);

  /* A ragged 200-row tile pads to 256 rows on the small MXU. */
  s.cfg.tile[0] = 200;
  dev_cost_estimate(&s, &small, &cs);
  near(cs.compute_s, (double)s.mxu_flops / (small.mxu_bf16_tflops * 1e12 * 200.0 / 256.0));
}

/* A hand-built dot hero: only its operand types matter to the model. */
typedef struct dot_fusion {
  hlo_instr lhs, dot;
  hlo_instr *ops[2];
  dev_fusion f;
} dot_fusion;

static void make_dot(dot_fusion *d, hlo_etype t) {
  memset(d, 0, sizeof *d);
  d->lhs.op = HLO_OP_PARAMETER;
  d->lhs.shape.type = t;
  d->ops[0] = d->ops[1] = &d->lhs;
  d->dot.op = HLO_OP_DOT;
  d->dot.noperands = 2;
  d->dot.operands = d->ops;
  d->f.kind = DEV_HERO_DOT;
  d->f.hero = &d->dot;
}

/* MXU time of a dot of 2^30 flops.  As dev_lower counts them, an f32
 * dot's mxu_flops are in bf16 passes: times 1, 3 or 6 by its precision. */
static double mxu_time(hlo_etype t, dev_precision p, int passes, const dev_machine *m) {
  dot_fusion d;
  make_dot(&d, t);
  dev_schedule s = schedule(8, 2);
  s.f = &d.f;
  s.cfg.prec = p;
  s.mxu_flops = ((int64_t)1 << 30) * passes;
  dev_cost c;
  dev_cost_estimate(&s, m, &c);
  return c.compute_s;
}

static void f32_precision_costs_bf16_passes(void **state) {
  (void)state;
  dev_machine m = plain_machine(); /* its 1e9 op/s VPU never beats the MXU here */
  double bf16 = mxu_time(HLO_BF16, DEV_PREC_DEFAULT, 1, &m);
  near(bf16, (double)(1 << 30) / 100e12);
  near(mxu_time(HLO_F32, DEV_PREC_DEFAULT, 1, &m), bf16);
  near(mxu_time(HLO_F32, DEV_PREC_HIGH, 3, &m), 3 * bf16);
  near(mxu_time(HLO_F32, DEV_PREC_HIGHEST, 6, &m), 6 * bf16);
  /* the passes are counted once, in mxu_flops: prec alone changes nothing */
  near(mxu_time(HLO_F32, DEV_PREC_HIGHEST, 1, &m), bf16);
  /* int8 runs at the int8 rate (2x here), or at bf16 without an int8 mode */
  near(mxu_time(HLO_S8, DEV_PREC_DEFAULT, 1, &m), bf16 / 2);
  m.mxu_int8_tops = 0;
  near(mxu_time(HLO_S8, DEV_PREC_DEFAULT, 1, &m), bf16);
}

static void compute_is_the_busiest_unit_and_rates_are_per_core(void **state) {
  (void)state;
  dev_machine m = plain_machine();
  dev_schedule s = schedule(2, 1);
  s.vpu_ops = 3000; /* 3 us */
  s.eup_ops = 500;  /* 5 us at 1e8 */
  s.dma_bytes = 200000;
  dev_cost c;
  dev_cost_estimate(&s, &m, &c);
  near(c.compute_s, 5e-6);
  near(c.dma_s, 2e-6);
  /* Two cores share the chip's HBM bandwidth: each gets half. */
  m.cores = 2;
  dev_cost_estimate(&s, &m, &c);
  near(c.dma_s, 4e-6);
  near(c.compute_s, 5e-6); /* VPU/EUP figures are per core already */

  /* A dot too thin for the MXU falls back to the VPU rate: a rank-1 tile
   * fills 1/128 of the array, 1e14/128 < 1e12 flop/s. */
  m.cores = 1;
  m.vpu_gops = 1000;
  dev_schedule t = schedule(1, 1);
  t.cfg.rank = 1;
  t.cfg.tile[0] = 128;
  t.mxu_flops = 1000000;
  dev_cost_estimate(&t, &m, &c);
  near(c.compute_s, 1e-6);
  t.cfg.rank = 2; /* a full 128x128 tile keeps it on the MXU */
  t.cfg.tile[1] = 128;
  dev_cost_estimate(&t, &m, &c);
  near(c.compute_s, 1e6 / 100e12);
}

static void deterministic_on_the_shipped_machines(void **state) {
  (void)state;
  dev_machine v5e, v6e;
  hlo_error err;
  assert_int_equal(dev_machine_find("tpu-v5e", &v5e, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v6e", &v6e, &err), 0);
  dot_fusion d;
  make_dot(&d, HLO_BF16);
  dev_schedule s = schedule(16, 2);
  s.f = &d.f;
  s.cfg.tile[0] = s.cfg.tile[1] = 256;
  s.mxu_flops = (int64_t)1 << 34;
  s.dma_bytes = 1 << 20;
  s.dma_count = 48;
  dev_cost a, b, c;
  dev_cost_estimate(&s, &v5e, &a);
  dev_cost_estimate(&s, &v5e, &b);
  assert_memory_equal(&a, &b, sizeof a);
  dev_cost_estimate(&s, &v6e, &c);
  assert_true(c.compute_s < a.compute_s);
  assert_true(c.total_s < a.total_s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(doubling_the_tile_halves_the_step_overhead),
      cmocka_unit_test(one_buffer_serialises_two_overlap),
      cmocka_unit_test(more_buffers_hide_latency_not_bandwidth),
      cmocka_unit_test(a_bigger_mxu_speeds_up_a_dot),
      cmocka_unit_test(f32_precision_costs_bf16_passes),
      cmocka_unit_test(compute_is_the_busiest_unit_and_rates_are_per_core),
      cmocka_unit_test(deterministic_on_the_shipped_machines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
