/* test_dev_probe.c — the instrumented run of an intact kernel
 * (dev_probe.h): its summaries against hand-computed ones, and the output
 * bits of a probed run against the plain run on every fusion of datasets/
 * (TUNE_SRCDIR), the multi-fusion modules unit by unit, with the clean
 * compiler and with every defect of the catalog enabled.  The paper warns
 * of "Heisenbugs": instrumentation that changes what it observes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run/backend_host.h"
#include "device/dev_backend.h"
#include "device/dev_defect.h"
#include "device/dev_fusion.h"
#include "device/dev_probe.h"
#include "device/dev_space.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"
#include "run/units.h"

static hlo_module *parse_text(const char *text) {
  hlo_error err;
  hlo_module *m = hlo_parse(text, strlen(text), &err);
  if (!m)
    fail_msg("%s", err.msg);
  return m;
}

static void set_f32(hlo_value *v, const float *x) { memcpy(v->data, x, (size_t)v->count * sizeof *x); }

/* s = a + b is exact in f32, so its summary follows by hand:
 * a = 1 2 3 4 5 6 1 0, b = 1 1 1 1 1 1 0 0, s = 2 3 4 5 6 7 1 0:
 * min 0, max 7, mean 28/8 = 3.5, squared deviations
 * 2.25 .25 .25 2.25 6.25 12.25 6.25 12.25 = 42, population std
 * sqrt(42/8) = 2.29129.  d = s / b has 1/0 = +Inf at 6 and 0/0 = NaN at 7;
 * its finite elements are s's first six (b = 1): min 2, max 7, mean 4.5. */
static void test_summary_by_hand(void **state) {
  (void)state;
  hlo_module *m = parse_text("HloModule t\n"
                             "fused {\n"
                             "  a = f32[8] parameter(0)\n"
                             "  b = f32[8] parameter(1)\n"
                             "  s = f32[8] add(a, b)\n"
                             "  ROOT d = f32[8] divide(s, b)\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  p0 = f32[8] parameter(0)\n"
                             "  p1 = f32[8] parameter(1)\n"
                             "  ROOT f = f32[8] fusion(p0, p1), kind=kLoop, calls=fused\n"
                             "}\n");
  hlo_error err;
  dev_fusion f;
  dev_machine mach;
  dev_config dflt;
  dev_config *cands = NULL;
  int ncands = 0;
  assert_int_equal(dev_fusion_analyze(m, &f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  assert_int_equal(dev_space_enumerate(&f, &mach, &cands, &ncands, &dflt, &err), 0);
  free(cands);
  int64_t dims[1] = {8};
  hlo_value *args[2] = {hlo_value_array(HLO_F32, 1, dims), hlo_value_array(HLO_F32, 1, dims)};
  set_f32(args[0], (const float[]){1, 2, 3, 4, 5, 6, 1, 0});
  set_f32(args[1], (const float[]){1, 1, 1, 1, 1, 1, 0, 0});
  const dev_backend *be = dev_sim_backend();
  dev_kernel *k = NULL;
  char why[256];
  assert_int_equal(be->compile(&f, &dflt, &mach, NULL, &k, why, sizeof why), DEV_OK);
  dev_probe *p = dev_probe_new(f.comp);
  assert_non_null(p);
  dev_run run;
  dev_sim_run_probed(k, args, 2, 1, p, &run);
  assert_int_equal(run.status, DEV_OK);
  const hlo_computation *c = f.comp;
  int is = -1, id = -1;
  for (int i = 0; i < c->ninstrs; i++) {
    if (strcmp(c->instrs[i]->name, "s") == 0)
      is = i;
    if (strcmp(c->instrs[i]->name, "d") == 0)
      id = i;
  }
  assert_true(is >= 0 && id >= 0);
  dev_probe_summary s = dev_probe_summary_of(p, is);
  assert_int_equal(s.count, 8);
  assert_int_equal(s.observed, 8);
  assert_int_equal(s.nan, 0);
  assert_int_equal(s.inf, 0);
  assert_true(s.min == 0.0f && s.max == 7.0f && s.mean == 3.5f);
  assert_float_equal(s.std, 2.29129, 1e-5);
  dev_probe_summary d = dev_probe_summary_of(p, id);
  assert_int_equal(d.observed, 8);
  assert_int_equal(d.nan, 1);
  assert_int_equal(d.inf, 1);
  /* the device's divide goes through its reciprocal approximation */
  assert_float_equal(d.min, 2.0, 1e-3);
  assert_float_equal(d.max, 7.0, 1e-3);
  assert_float_equal(d.mean, 4.5, 1e-3);
  /* the tensor as produced: s exactly */
  hlo_value *t = dev_probe_tensor(p, is, NULL);
  assert_non_null(t);
  const float want[8] = {2, 3, 4, 5, 6, 7, 1, 0};
  assert_memory_equal(t->data, want, sizeof want);
  hlo_value_unref(t);
  hlo_value_unref(run.out);
  dev_probe_free(p);
  be->release(k);
  hlo_value_unref(args[0]);
  hlo_value_unref(args[1]);
  hlo_module_free(m);
}

static char *read_all(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(fp);
  if (buf) {
    buf[n] = 0;
    *len = (size_t)n;
  }
  return buf;
}

/* An fft is computed whole (dev_whole.h) and its complex output is probed
 * too, part by part.  The impulse at n = 1 has the spectrum
 * X[f] = exp(-2 pi i f / 4) = 1, -i, -1, i, exact on the device (the
 * quarter-point twiddles are exact): parts 1 0 0 -1 -1 0 0 1, min -1,
 * max 1, mean 0, population std sqrt(4/8) = 0.707107. */
static void test_fft_summary_by_hand(void **state) {
  (void)state;
  hlo_module *m = parse_text("HloModule t\n"
                             "fused {\n"
                             "  a = c64[4] parameter(0)\n"
                             "  ROOT f = c64[4] fft(a), fft_type=FFT, fft_length={4}\n"
                             "}\n"
                             "ENTRY e {\n"
                             "  p0 = c64[4] parameter(0)\n"
                             "  ROOT r = c64[4] fusion(p0), kind=kCustom, calls=fused\n"
                             "}\n");
  hlo_error err;
  dev_fusion f;
  dev_machine mach;
  dev_config dflt;
  dev_config *cands = NULL;
  int ncands = 0;
  assert_int_equal(dev_fusion_analyze(m, &f, &err), 0);
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  assert_int_equal(dev_space_enumerate(&f, &mach, &cands, &ncands, &dflt, &err), 0);
  free(cands);
  int64_t dims[1] = {4};
  hlo_value *args[1] = {hlo_value_array(HLO_C64, 1, dims)};
  memcpy(args[0]->data, (const float[]){0, 0, 1, 0, 0, 0, 0, 0}, 8 * sizeof(float));
  const dev_backend *be = dev_sim_backend();
  dev_kernel *k = NULL;
  char why[256];
  assert_int_equal(be->compile(&f, &dflt, &mach, NULL, &k, why, sizeof why), DEV_OK);
  dev_probe *p = dev_probe_new(f.comp);
  assert_non_null(p);
  dev_run run;
  dev_sim_run_probed(k, args, 1, 1, p, &run);
  assert_int_equal(run.status, DEV_OK);
  int root = f.comp->root->index;
  assert_true(dev_probe_seen(p, root));
  dev_probe_summary s = dev_probe_summary_of(p, root);
  assert_int_equal(s.count, 4);
  assert_int_equal(s.observed, 4);
  assert_int_equal(s.nan, 0);
  assert_int_equal(s.inf, 0);
  assert_true(s.min == -1.0f && s.max == 1.0f);
  assert_float_equal(s.mean, 0.0, 1e-7); /* Welford's running mean is not exact */
  assert_float_equal(s.std, 0.707107, 1e-6);
  hlo_value *t = dev_probe_tensor(p, root, NULL);
  assert_non_null(t);
  const float want[8] = {1, 0, 0, -1, -1, 0, 0, 1};
  for (int i = 0; i < 8; i++)
    assert_true(((const float *)t->data)[i] == want[i]);
  hlo_value_unref(t);
  hlo_value_unref(run.out);
  dev_probe_free(p);
  be->release(k);
  hlo_value_unref(args[0]);
  hlo_module_free(m);
}

/* Runs module um's kernel plain and probed under compiler cc; the two
 * outcomes must be the same, bit for bit.  Returns 1 when it ran. */
static int same_bits(const char *what, const hlo_module *um, const dev_machine *mach, const dev_compiler *cc) {
  hlo_error err;
  dev_fusion f;
  if (dev_fusion_analyze(um, &f, &err) != 0)
    return 0;
  f.host = tn_backend_host();
  dev_config dflt;
  dev_config *cands = NULL;
  int ncands = 0;
  if (dev_space_enumerate(&f, mach, &cands, &ncands, &dflt, &err) != 0)
    return 0;
  free(cands);
  int nargs = um->entry->nparams;
  hlo_value **args = calloc((size_t)nargs + 1, sizeof *args);
  assert_non_null(args);
  chk_inputs_opts io = {.seed = 7, .profile = CHK_INPUTS_CONSTRAINED};
  if (chk_inputs_make(um, &io, args, &err) != 0) {
    free(args);
    return 0;
  }
  const dev_backend *be = dev_sim_backend();
  dev_kernel *k = NULL;
  char why[512];
  int ran = 0;
  if (be->compile(&f, &dflt, mach, cc, &k, why, sizeof why) == DEV_OK) {
    dev_run plain, probed;
    be->run(k, args, nargs, 11, &plain);
    dev_probe *p = dev_probe_new(f.comp);
    assert_non_null(p);
    dev_sim_run_probed(k, args, nargs, 11, p, &probed);
    if (plain.status != probed.status)
      fail_msg("%s (%s): plain run status %d, probed %d (%s)", what, cc ? cc->name : "clean", plain.status,
               probed.status, probed.message);
    if (plain.status == DEV_OK && !hlo_value_equal(plain.out, probed.out))
      fail_msg("%s (%s): the probed run's output differs from the plain run's", what, cc ? cc->name : "clean");
    if (plain.status != DEV_OK && strcmp(plain.message, probed.message) != 0)
      fail_msg("%s: the probed run fails differently: %s / %s", what, plain.message, probed.message);
    /* the probe saw the kernel: its root, unless a tuple */
    if (plain.status == DEV_OK && f.comp->root->shape.type != HLO_TUPLE && !dev_probe_seen(p, f.comp->root->index))
      fail_msg("%s: the probe never saw the root %s", what, f.comp->root->name);
    hlo_value_unref(plain.out);
    hlo_value_unref(probed.out);
    dev_probe_free(p);
    be->release(k);
    ran = 1;
  }
  for (int i = 0; i < nargs; i++)
    hlo_value_unref(args[i]);
  free(args);
  return ran;
}

static void test_every_dataset_fusion_same_bits(void **state) {
  (void)state;
  const char *src = getenv("TUNE_SRCDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/datasets/MANIFEST", src ? src : ".");
  FILE *mf = fopen(path, "r");
  if (!mf)
    fail_msg("cannot read %s (set TUNE_SRCDIR)", path);
  dev_machine mach;
  hlo_error err;
  assert_int_equal(dev_machine_find("tpu-v5e", &mach, &err), 0);
  dev_compiler all = {.name = "every-defect"};
  for (int d = 0; d < DEV_DEFECT_COUNT; d++)
    all.defects |= 1u << d;
  char line[1024];
  int files = 0, units = 0, runs = 0;
  while (fgets(line, sizeof line, mf)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    char *tab = strchr(line, '\t');
    if (!tab)
      continue;
    *tab = 0;
    bool module = strstr(tab + 1, "\tmodule") != NULL;
    snprintf(path, sizeof path, "%s/datasets/%s", src ? src : ".", line);
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text)
      fail_msg("cannot read %s", path);
    hlo_module *m = hlo_parse(text, len, &err);
    free(text);
    if (!m)
      fail_msg("%s: %s", line, err.msg);
    files++;
    if (!module) {
      runs += same_bits(line, m, &mach, NULL);
      runs += same_bits(line, m, &mach, &all);
      units++;
    } else {
      tn_units u;
      assert_int_equal(tn_units_find(m, &u, &err), 0);
      for (int i = 0; i < u.n; i++) {
        if (!u.v[i].ins)
          continue;
        hlo_module *um = tn_unit_module(m, &u.v[i], &err);
        assert_non_null(um);
        char what[1200];
        snprintf(what, sizeof what, "%s:%s", line, u.v[i].name);
        runs += same_bits(what, um, &mach, NULL);
        runs += same_bits(what, um, &mach, &all);
        units++;
        hlo_module_free(um);
      }
      tn_units_free(&u);
    }
    hlo_module_free(m);
  }
  fclose(mf);
  print_message("%d files, %d fusions, %d plain/probed pairs compared\n", files, units, runs);
  /* 55 single-fusion files and the 37 units of the three modules, every
   * one compiled at its default config both ways */
  assert_true(files >= 58);
  assert_true(units >= 92);
  assert_int_equal(runs, 2 * units);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_by_hand),
      cmocka_unit_test(test_fft_summary_by_hand),
      cmocka_unit_test(test_every_dataset_fusion_same_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
