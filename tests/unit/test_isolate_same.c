/* test_isolate_same.c — when does the unfused run of a fusion unit take the
 * fused output instead of running its one kernel again (tuner/triage/
 * isolate_same.h, isolate.c's takes_fused)?
 *
 * 1. The comparison itself (tn_iso_same_kernel), on hand-written pairs: a
 *    fusion unit module and a single-op module.  The op written exactly as
 *    in the fused computation is the same kernel, whether the fused
 *    computation carries a signature or not (presentation only); one
 *    attribute, layout, parameter number, name, literal or reducer body
 *    apart is not.
 * 2. tn_isolate on a module of six fusions, counting per unit the single-op
 *    kernels of the unfused run (nkernels) and how many of them took the
 *    fused output (nreused).  The expected counts follow from the fused
 *    computations as written below:
 *      u_dot    a lone dot                                  1 kernel, reused
 *      u_max    a lone reduce, its -inf init inline         1, reused
 *      u_const  a lone dot on an entry constant (kept
 *               inline by the unit module, bound by the launch)  1, reused
 *      u_add    a dot and an add                            2, none
 *      u_swap   a lone dot reading parameter 1 first: the
 *               cut-out numbers its parameters in first-use
 *               order, another kernel                       1, none
 *      u_unused a lone exponential beside a parameter it
 *               does not read: the cut-out lacks it         1, none
 *    and then none at all under a compiler with the dma-race defect (the
 *    output may depend on the timing seed, which differs), under a
 *    backend that is not the built-in device (it may read what the
 *    comparison leaves out), with --replicas 2 (the fused output then
 *    comes from --check's two-replica run, the unfused kernel would run
 *    with the module's one); and for u_dot none under a --config that
 *    differs from its default, but again one under a --config that
 *    spells its default out.
 * Every unit still counts the kernel it took over (nkernels unchanged).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "hlo/hlo_parse.h"
#include "run/units.h"
#include "triage/isolate.h"
#include "triage/isolate_same.h"

/* ---- 1. the comparison ---------------------------------------------------- */

static hlo_module *parse(const char *text) {
  hlo_error err = {0};
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("parse: %s\n%s", err.msg, text);
  return m;
}

#define DOT_FC                                                                                       \
  "  p0 = f32[8,16]{1,0} parameter(0)\n"                                                            \
  "  p1 = f32[16,8]{1,0} parameter(1)\n"                                                            \
  "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"

#define DOT_LAUNCH                                                                                   \
  "ENTRY main {\n"                                                                                   \
  "  x = f32[8,16]{1,0} parameter(0)\n"                                                             \
  "  w = f32[16,8]{1,0} parameter(1)\n"                                                             \
  "  ROOT u = f32[8,8]{1,0} fusion(x, w), kind=kOutput, calls=fused_dot\n"                          \
  "}\n"

static const char dot_unit[] = "HloModule m\n\nfused_dot {\n" DOT_FC "}\n\n" DOT_LAUNCH;
static const char dot_unit_sig[] =
    "HloModule m\n\nfused_dot (p0: f32[8,16], p1: f32[16,8]) -> f32[8,8] {\n" DOT_FC "}\n\n" DOT_LAUNCH;

static const char dot_op[] = "HloModule m\n\nENTRY main {\n" DOT_FC "}\n";

/* dot_op, one thing changed each */
static const char *const dot_op_differs[] = {
    /* an attribute */
    "HloModule m\n\nENTRY main {\n"
    "  p0 = f32[8,16]{1,0} parameter(0)\n"
    "  p1 = f32[16,8]{1,0} parameter(1)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
    "operand_precision={highest,highest}\n"
    "}\n",
    /* a layout */
    "HloModule m\n\nENTRY main {\n"
    "  p0 = f32[8,16]{1,0} parameter(0)\n"
    "  p1 = f32[16,8]{0,1} parameter(1)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n",
    /* the parameters numbered the other way */
    "HloModule m\n\nENTRY main {\n"
    "  p0 = f32[8,16]{1,0} parameter(1)\n"
    "  p1 = f32[16,8]{1,0} parameter(0)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n",
    /* the op's name (the host's rng draws are keyed by names) */
    "HloModule m\n\nENTRY main {\n"
    "  p0 = f32[8,16]{1,0} parameter(0)\n"
    "  p1 = f32[16,8]{1,0} parameter(1)\n"
    "  ROOT e = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n",
    /* a raw attribute */
    "HloModule m\n\nENTRY main {\n"
    "  p0 = f32[8,16]{1,0} parameter(0)\n"
    "  p1 = f32[16,8]{1,0} parameter(1)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
    "metadata={op_name=\"q\"}\n"
    "}\n",
    /* another header */
    "HloModule m, replica_count=2\n\nENTRY main {\n" DOT_FC "}\n",
};

#define MAX_F32(op)                                                                                  \
  "max_f32 {\n"                                                                                      \
  "  a = f32[] parameter(0)\n"                                                                       \
  "  b = f32[] parameter(1)\n"                                                                       \
  "  ROOT m = f32[] " op "(a, b)\n"                                                                  \
  "}\n\n"

#define MAX_OP(init)                                                                                 \
  "  p0 = f32[8,8]{1,0} parameter(0)\n"                                                             \
  "  ninf = f32[] constant(" init ")\n"                                                              \
  "  ROOT mx = f32[8]{0} reduce(p0, ninf), dimensions={1}, to_apply=max_f32\n"

static const char max_unit[] = "HloModule m\n\n" MAX_F32("maximum") "fused_max {\n" MAX_OP("-inf") "}\n\n"
                               "ENTRY main {\n"
                               "  x = f32[8,8]{1,0} parameter(0)\n"
                               "  ROOT u = f32[8]{0} fusion(x), kind=kInput, calls=fused_max\n"
                               "}\n";
static const char max_op[] = "HloModule m\n\n" MAX_F32("maximum") "ENTRY main {\n" MAX_OP("-inf") "}\n";
static const char max_op_init0[] = "HloModule m\n\n" MAX_F32("maximum") "ENTRY main {\n" MAX_OP("0") "}\n";
static const char max_op_min[] = "HloModule m\n\n" MAX_F32("minimum") "ENTRY main {\n" MAX_OP("-inf") "}\n";

static bool same(const char *unit, const char *op, char *why, size_t n) {
  hlo_module *um = parse(unit), *om = parse(op);
  bool s = tn_iso_same_kernel(um, om, why, n);
  hlo_module_free(um);
  hlo_module_free(om);
  return s;
}

static void same_kernel_as_written(void **state) {
  (void)state;
  char why[512];
  assert_true(same(dot_unit, dot_op, why, sizeof why));
  assert_true(same(dot_unit_sig, dot_op, why, sizeof why));
  assert_true(same(max_unit, max_op, why, sizeof why));
}

/* The cut-out tn_isolate makes of the fused computation's one op is the
 * same kernel. */
static void same_kernel_cut_out(void **state) {
  (void)state;
  const char *units[] = {dot_unit, dot_unit_sig, max_unit};
  for (int k = 0; k < 3; k++) {
    hlo_module *um = parse(units[k]);
    const hlo_computation *fc = um->entry->root->attrs.calls.calls;
    tn_unit t = {.name = fc->root->name, .ins = fc->root, .where = fc};
    hlo_error err = {0};
    hlo_module *om = tn_unit_module(um, &t, &err);
    assert_non_null(om);
    char why[512];
    bool s = tn_iso_same_kernel(um, om, why, sizeof why);
    if (!s)
      fail_msg("case %d: %s", k, why);
    hlo_module_free(om);
    hlo_module_free(um);
  }
}

static void different_kernels(void **state) {
  (void)state;
  char why[512];
  for (size_t k = 0; k < sizeof dot_op_differs / sizeof *dot_op_differs; k++) {
    why[0] = '\0';
    if (same(dot_unit, dot_op_differs[k], why, sizeof why))
      fail_msg("dot variant %zu passed for the same kernel", k);
    assert_true(why[0] != '\0');
  }
  assert_false(same(max_unit, max_op_init0, why, sizeof why));
  assert_false(same(max_unit, max_op_min, why, sizeof why));
  /* not a fusion unit at all */
  assert_false(same(dot_op, dot_op, why, sizeof why));
  assert_false(tn_iso_same_kernel(NULL, NULL, why, sizeof why));
}

/* ---- 2. tn_isolate ---------------------------------------------------------- */

static const char module[] =
    "HloModule reuse_cases\n\n"
    MAX_F32("maximum")
    "fused_dot {\n" DOT_FC "}\n\n"
    "fused_max {\n" MAX_OP("-inf") "}\n\n"
    "fused_add {\n"
    "  p0 = f32[8,16]{1,0} parameter(0)\n"
    "  p1 = f32[16,8]{1,0} parameter(1)\n"
    "  p2 = f32[8,8]{1,0} parameter(2)\n"
    "  d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT r = f32[8,8]{1,0} add(d, p2)\n"
    "}\n\n"
    "fused_swap {\n"
    "  p0 = f32[16,8]{1,0} parameter(0)\n"
    "  p1 = f32[8,16]{1,0} parameter(1)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p1, p0), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n\n"
    "fused_unused {\n"
    "  p0 = f32[8,8]{1,0} parameter(0)\n"
    "  p1 = f32[8]{0} parameter(1)\n"
    "  ROOT e = f32[8,8]{1,0} exponential(p0)\n"
    "}\n\n"
    "fused_const {\n"
    "  p0 = f32[8,2]{1,0} parameter(0)\n"
    "  p1 = f32[2,8]{1,0} parameter(1)\n"
    "  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[8,16]{1,0} parameter(0)\n"
    "  w = f32[16,8]{1,0} parameter(1)\n"
    "  y = f32[8,2]{1,0} parameter(2)\n"
    "  u_dot = f32[8,8]{1,0} fusion(x, w), kind=kOutput, calls=fused_dot\n"
    "  u_max = f32[8]{0} fusion(u_dot), kind=kInput, calls=fused_max\n"
    "  u_add = f32[8,8]{1,0} fusion(x, w, u_dot), kind=kOutput, calls=fused_add\n"
    "  u_swap = f32[8,8]{1,0} fusion(w, x), kind=kOutput, calls=fused_swap\n"
    "  u_unused = f32[8,8]{1,0} fusion(u_add, u_max), kind=kLoop, calls=fused_unused\n"
    "  c = f32[2,8]{1,0} constant({{1, 2, 3, 4, 5, 6, 7, 8}, {-1, -2, -3, -4, -5, -6, -7, -8}})\n"
    "  u_const = f32[8,8]{1,0} fusion(y, c), kind=kOutput, calls=fused_const\n"
    "  ROOT t = (f32[8,8]{1,0}, f32[8,8]{1,0}, f32[8,8]{1,0}, f32[8,8]{1,0}) tuple(u_swap, u_unused, u_const, "
    "u_add)\n"
    "}\n";

enum { U_DOT, U_MAX, U_ADD, U_SWAP, U_UNUSED, U_CONST, NUNITS };
static const char *const unit_names[NUNITS] = {"u_dot", "u_max", "u_add", "u_swap", "u_unused", "u_const"};
static const int kernels[NUNITS] = {1, 1, 2, 1, 1, 1};
static const int reused_clean[NUNITS] = {1, 1, 0, 0, 0, 1};
static const int reused_none[NUNITS] = {0};

typedef struct iso_run {
  const dev_backend *backend;
  dev_compiler compiler;
  int replicas;
  const char *override; /* u_dot's --config, or NULL */
} iso_run;

/* Isolates the module; per unit its nkernels, nreused and config. */
static void isolate(const iso_run *ir, int *nk, int *nr, char cfg[][DEV_CONFIG_TEXT_MAX]) {
  hlo_module *m = parse(module);
  dev_machine mach;
  hlo_error err = {0};
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  const char *ou[] = {"u_dot"}, *oc[] = {ir->override};
  tn_iso_opts o = {.backend = ir->backend, .machine = &mach, .compiler = &ir->compiler, .seed = 0,
                   .profile = CHK_INPUTS_NAIVE, .replicas = ir->replicas, .noverrides = ir->override ? 1 : 0,
                   .override_units = ou, .override_configs = oc};
  tn_iso_result r;
  if (tn_isolate(m, "reuse_cases.hlo", &o, &r, &err) != 0)
    fail_msg("tn_isolate: %s", err.msg);
  assert_int_equal(r.n, NUNITS);
  for (int i = 0; i < NUNITS; i++) {
    const tn_iso_unit *u = NULL;
    for (int k = 0; k < r.n && !u; k++)
      if (strcmp(r.v[k].name, unit_names[i]) == 0)
        u = &r.v[k];
    assert_non_null(u);
    /* the unfused run was made and compared: an output was there */
    if (!u->unfused_ref.done)
      fail_msg("%s: no unfused comparison (%s)", unit_names[i], u->note);
    nk[i] = u->nkernels;
    nr[i] = u->nreused;
    snprintf(cfg[i], DEV_CONFIG_TEXT_MAX, "%s", u->config);
  }
  tn_iso_result_free(&r);
  hlo_module_free(m);
}

static void expect(const iso_run *ir, const int *reused) {
  int nk[NUNITS], nr[NUNITS];
  char cfg[NUNITS][DEV_CONFIG_TEXT_MAX];
  isolate(ir, nk, nr, cfg);
  for (int i = 0; i < NUNITS; i++) {
    if (nk[i] != kernels[i] || nr[i] != reused[i])
      fail_msg("%s: %d kernels, %d reused; expected %d and %d", unit_names[i], nk[i], nr[i], kernels[i],
               reused[i]);
  }
}

static void clean_compiler(iso_run *ir) {
  memset(ir, 0, sizeof *ir);
  ir->backend = dev_sim_backend();
  snprintf(ir->compiler.name, sizeof ir->compiler.name, "clean");
}

static void reuse_where_same(void **state) {
  (void)state;
  iso_run ir;
  clean_compiler(&ir);
  expect(&ir, reused_clean);
}

static void no_reuse_under_dma_race(void **state) {
  (void)state;
  iso_run ir;
  clean_compiler(&ir);
  ir.compiler.defects = 1u << DEV_DEFECT_DMA_RACE;
  expect(&ir, reused_none);
}

static void no_reuse_on_another_backend(void **state) {
  (void)state;
  /* the built-in device's functions behind another backend: the
   * comparison cannot vouch for what a backend might read */
  static dev_backend other;
  other = *dev_sim_backend();
  other.name = "other";
  iso_run ir;
  clean_compiler(&ir);
  ir.backend = &other;
  expect(&ir, reused_none);
}

static void no_reuse_with_other_replicas(void **state) {
  (void)state;
  iso_run ir;
  clean_compiler(&ir);
  ir.replicas = 2;
  expect(&ir, reused_none);
}

/* u_dot's default is tile=8x8 k=16 buf=2 order=01k (an 8x8 output in one
 * tile, the 16-long contraction in one chunk, as printed by the clean
 * run); buf=1 is another config, the whole default text the same one. */
static void config_override(void **state) {
  (void)state;
  int nk[NUNITS], nr[NUNITS];
  char cfg[NUNITS][DEV_CONFIG_TEXT_MAX], cfg2[NUNITS][DEV_CONFIG_TEXT_MAX];
  iso_run ir;
  clean_compiler(&ir);
  isolate(&ir, nk, nr, cfg);
  char dflt[DEV_CONFIG_TEXT_MAX];
  snprintf(dflt, sizeof dflt, "%s", cfg[U_DOT]);
  assert_non_null(strstr(dflt, "buf=2"));

  ir.override = "buf=1";
  isolate(&ir, nk, nr, cfg2);
  assert_string_not_equal(cfg2[U_DOT], dflt);
  assert_int_equal(nk[U_DOT], 1);
  assert_int_equal(nr[U_DOT], 0);
  assert_int_equal(nr[U_MAX], 1); /* the others as before */

  ir.override = dflt;
  isolate(&ir, nk, nr, cfg2);
  assert_string_equal(cfg2[U_DOT], dflt);
  assert_int_equal(nk[U_DOT], 1);
  assert_int_equal(nr[U_DOT], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_kernel_as_written),     cmocka_unit_test(same_kernel_cut_out),
      cmocka_unit_test(different_kernels),          cmocka_unit_test(reuse_where_same),
      cmocka_unit_test(no_reuse_under_dma_race),    cmocka_unit_test(no_reuse_on_another_backend),
      cmocka_unit_test(no_reuse_with_other_replicas), cmocka_unit_test(config_override),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
