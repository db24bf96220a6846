/* test_backend_caps.c — what tune assumes of a backend follows its caps
 * (dev_backend.h), never its name.  A backend with
 * DEV_BACKEND_CAP_ACCUM_ORDER has its candidates' rounding bounded by the
 * depth dev_accum_depth derives from their config; without it every
 * comparison takes the bound of every order.  Four copies of the simulated
 * device check one candidate that sums in a much shorter order (pack=4)
 * than the every-order bound assumes: the copy named "sim" without the
 * flag must be judged as one named otherwise without it, and one named
 * otherwise with the flag as the simulator itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "hlo/hlo_parse.h"
#include "run/fusion_run.h"

/* f32[8,4096] row sum: K = 4096, long enough that pack=4 makes a
 * config's depth much shorter than K. */
static const char *ROWSUM =
    "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e {\n  p = f32[8,4096] parameter(0)\n  z = f32[] constant(0)\n"
    "  ROOT r = f32[8] reduce(p, z), dimensions={1}, to_apply=add\n}\n";

/* The tolerance of the pack=4 candidate against the default on backend be. */
static chk_tol candidate_tol(const dev_backend *be) {
  hlo_error err;
  hlo_module *m = hlo_parse(ROWSUM, strlen(ROWSUM), &err);
  assert_non_null(m);
  dev_machine mach;
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  dev_compiler cc;
  assert_int_equal(dev_compiler_find("stable", &cc, &err), 0);
  /* the other knobs come from the default (only.h) */
  tn_sweep_opts o = {.backend = be, .machine = &mach, .compiler = &cc, .threads = 1, .only = "pack=4",
                     .criterion = CHK_TOL_WORST_CASE};
  tn_fusion_result r;
  if (tn_check_fusion(m, "rowsum", &o, &r, &err) != 0)
    fail_msg("%s", err.msg);
  assert_true(r.default_ran);
  assert_int_equal(r.ncands, 2);
  assert_int_equal(r.cands[1].status, DEV_OK);
  chk_tol t = r.cands[1].tol;
  tn_fusion_result_free(&r);
  hlo_module_free(m);
  return t;
}

static void caps_not_name(void **state) {
  (void)state;
  const dev_backend *sim = dev_sim_backend();
  assert_true(sim->caps & DEV_BACKEND_CAP_ACCUM_ORDER);
  dev_backend named_sim = *sim, other = *sim, other_capable = *sim;
  named_sim.caps = 0;
  other.name = "other";
  other.caps = 0;
  other_capable.name = "other";
  chk_tol t_sim = candidate_tol(sim), t_named = candidate_tol(&named_sim), t_other = candidate_tol(&other),
          t_capable = candidate_tol(&other_capable);
  /* the fusion must tell the two apart, or the rest proves nothing */
  assert_true(t_sim.atol < t_other.atol);
  assert_true(t_named.atol == t_other.atol && t_named.rtol == t_other.rtol);
  assert_true(t_capable.atol == t_sim.atol && t_capable.rtol == t_sim.rtol);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(caps_not_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
