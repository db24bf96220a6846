/* test_report.c — reading a results file back (tuner/store/store_read.c)
 * and the four report formats (tuner/report/).
 *
 * A run of two hand-built fusions is written with the store's own API:
 * "fused_thing" has a default, a faster divergent candidate with an error
 * map (with a NaN in it), a benign one and one that did not compile;
 * "clean<&\"'>" (a name that needs escaping everywhere) has two matching
 * candidates.  The reader must give back exactly what was stored, and each
 * report must carry the values an engineer acts on: the exact config text
 * in the reproducer, the metrics, the counts.  When PYTHON3 is set (make
 * check sets it) the json and junit outputs are also parsed by Python's
 * own json and xml.dom.minidom.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkdtemp */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "device/dev_defect.h"
#include "store/h5values.h"
#include "report/report.h"
#include "result_fixture.h"
#include "store/store.h"
#include "store/store_read.h"
#include "tmpdir_fixture.h"

static char results[600];

/* ---- a hand-made run ------------------------------------------------------ */

static void set_cand(tn_cand_result *c, int id, const char *cfg, chk_verdict v, double sim_time) {
  rfx_cand(c, id, cfg, v);
  c->sim_time = sim_time;
  c->wall_time = 0.01 * (id + 1);
  c->speedup = sim_time > 0 ? 2e-6 / sim_time : 0;
  c->tol = (chk_tol){1e-6, 1e-5};
}

static void make_thing(tn_fusion_result *r) {
  rfx_result(r, "fused_thing", "datasets/thing.hlo", "reduce", RFX_THING_HLO, 0x0123456789abcdefull, 4);

  set_cand(&r->cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH, 2e-6);

  tn_cand_result *c = &r->cands[1];
  set_cand(c, 1, RFX_DIVERGENT_CONFIG, CHK_VERDICT_MISMATCH_CANDIDATE, 1e-6);
  c->tol = (chk_tol){2.5e-6, 3e-5};
  rfx_divergent(c);

  c = &r->cands[2];
  set_cand(c, 2, "tile=8x128 k=512 buf=2 order=01k pack=1 prec=default flags=none", CHK_VERDICT_BENIGN, 3e-6);
  c->vs_default.max_abs = 1e-7;
  c->vs_default.rms = NAN; /* JSON has no NaN: the report must say null */

  c = &r->cands[3];
  set_cand(c, 3, RFX_UNCOMPILABLE_CONFIG, CHK_VERDICT_COMPILE_ERROR, 0);
  c->status = DEV_COMPILE_ERROR;
  c->vs_default.count = 0;
  snprintf(c->message, sizeof c->message, "VMEM exhausted: 40 MiB needed & 16 MiB <available>");

  r->best = 2; /* the divergent candidate is faster, but never the best */
  r->default_ran = true;
  r->default_vs_reference_ok = true;
  r->default_vs_reference.count = 120000;
  r->default_vs_reference.max_abs = 3e-7;
  r->default_vs_reference.peak_index = 17;
  r->default_vs_reference.rank = 2;
  r->reference_tol = (chk_tol){2e-6, 3e-5};
  r->verdict_counts[CHK_VERDICT_MATCH] = 1;
  r->verdict_counts[CHK_VERDICT_MISMATCH_CANDIDATE] = 1;
  r->verdict_counts[CHK_VERDICT_BENIGN] = 1;
  r->verdict_counts[CHK_VERDICT_COMPILE_ERROR] = 1;

  tn_error_map *e = rfx_error_map(r, 1);
  for (int i = 1; i <= 7; i++)
    for (int j = 0; j < 400; j += 50)
      e->data[i * 400 + j] = 1e-4f * (float)(i + j);
  e->data[1 * 400 + 1] = 0.25f;
  e->data[3 * 400 + 5] = NAN;
  /* The values around the peak (1,1): a 3x5 window from (0,0) of k/2,
   * except the peak itself, which came out 0.25 too high. */
  e->peak.rows = 3;
  e->peak.cols = 5;
  e->peak.peak[0] = e->peak.peak[1] = 1;
  for (int k = 0; k < 15; k++)
    e->peak.expected[k] = e->peak.actual[k] = k * 0.5;
  e->peak.actual[1 * 5 + 1] = 3.25;
  r->wall_time = 0.5;
}

static void make_clean(tn_fusion_result *r) {
  rfx_result(r, "clean<&\"'>", "datasets/clean.hlo", "elementwise", "HloModule c\n", 0xfedcba9876543210ull, 2);
  set_cand(&r->cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH, 2e-6);
  set_cand(&r->cands[1], 1, "tile=8x128 k=512 buf=2 order=01k pack=1 prec=default flags=none", CHK_VERDICT_MATCH,
           1.6e-6);
  r->best = 1;
  r->default_ran = true;
  r->default_vs_reference_ok = true;
  r->verdict_counts[CHK_VERDICT_MATCH] = 2;
  r->wall_time = 0.1;
}

/* Appends one run holding the given fusions. */
static void store_run(const char *path, const char *id, const char *compiler, int nfusions) {
  hlo_error err = {0};
  tn_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.id, sizeof run.id, "%s", id);
  snprintf(run.command, sizeof run.command,
           "tune --check datasets/thing.hlo datasets/clean.hlo --defect elide-convert --seed 42 -o X.h5");
  snprintf(run.machine, sizeof run.machine, "tpu-v5e");
  snprintf(run.compiler, sizeof run.compiler, "%s", compiler);
  run.seed = 42;
  if (strstr(compiler, "+d")) {
    run.defects = 1u << DEV_DEFECT_ELIDE_CONVERT | 1u << DEV_DEFECT_PACKED_REDUCE_INIT0;
    run.defects_known = 1;
  }
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s)
    fail_msg("begin_run: %s", err.msg);
  for (int i = 0; i < nfusions; i++) {
    tn_fusion_result r;
    if (i == 0)
      make_thing(&r);
    else
      make_clean(&r);
    if (tn_store_add_fusion(s, &r, &err) != 0)
      fail_msg("add_fusion: %s", err.msg);
    tn_fusion_result_free(&r);
  }
  if (tn_store_end_run(s, "complete", &err) != 0)
    fail_msg("end_run: %s", err.msg);
}

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (tdf_make("test_report") != 0)
    return -1;
  snprintf(results, sizeof results, "%s", tdf_path("X.h5"));
  /* Two runs; the second (the latest) is the one reports default to. */
  store_run(results, "20260101T000000Z-1", "stable", 1);
  store_run(results, "20260101T000001Z-2", "nightly+d", 2);
  return 0;
}

/* ---- reading back ------------------------------------------------------------ */

static void read_latest(tn_stored_run *run) {
  hlo_error err = {0};
  if (tn_results_read_run(results, NULL, run, &err) != 0)
    fail_msg("read_run: %s", err.msg);
}

static void test_read_roundtrip(void **state) {
  (void)state;
  tn_stored_run run;
  read_latest(&run);
  assert_string_equal(run.info.id, "20260101T000001Z-2");
  assert_string_equal(run.info.status, "complete");
  assert_string_equal(run.info.machine, "tpu-v5e");
  assert_string_equal(run.info.compiler, "nightly+d");
  assert_int_equal(run.info.seed, 42);
  assert_int_equal(run.nfusions, 2);
  /* Ordered by source path: clean before thing. */
  assert_string_equal(run.fusions[0].r.source, "datasets/clean.hlo");
  assert_string_equal(run.fusions[0].group, "fedcba9876543210");
  const tn_stored_fusion *sf = tn_stored_run_find_fusion(&run, "fused_thing");
  assert_non_null(sf);
  assert_ptr_equal(sf, tn_stored_run_find_fusion(&run, "0123456789abcdef"));
  assert_null(tn_stored_run_find_fusion(&run, "nope"));

  tn_fusion_result want;
  make_thing(&want);
  const tn_fusion_result *r = &sf->r;
  assert_string_equal(r->name, want.name);
  assert_string_equal(r->hero, want.hero);
  assert_string_equal(r->hlo, want.hlo);
  assert_int_equal(r->fingerprint, want.fingerprint);
  assert_int_equal(r->seed, 42);
  assert_int_equal(r->ncands, 4);
  assert_int_equal(r->best, 2);
  assert_true(r->default_ran);
  assert_true(r->default_vs_reference_ok);
  assert_true(r->default_vs_reference.max_abs == 3e-7);
  assert_int_equal(r->default_vs_reference.peak_index, 17);
  assert_true(r->reference_tol.rtol == 3e-5);
  for (int v = 0; v < CHK_VERDICT_COUNT; v++)
    assert_int_equal(r->verdict_counts[v], want.verdict_counts[v]);
  for (int i = 0; i < 4; i++) {
    const tn_cand_result *a = &r->cands[i], *b = &want.cands[i];
    assert_int_equal(a->id, b->id);
    assert_string_equal(a->config, b->config);
    assert_true(dev_config_equal(&a->cfg, &b->cfg));
    assert_int_equal(a->fingerprint, b->fingerprint);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->verdict, b->verdict);
    assert_string_equal(a->message, b->message);
    assert_true(a->sim_time == b->sim_time && a->speedup == b->speedup && a->wall_time == b->wall_time);
    assert_true(a->tol.atol == b->tol.atol && a->tol.rtol == b->tol.rtol);
    assert_int_equal(a->has_vs_reference, b->has_vs_reference);
  }
  /* Every metric of the divergent row, both sides. */
  const chk_metrics *m = &r->cands[1].vs_default, *w = &want.cands[1].vs_default;
  assert_int_equal(m->mismatches, 5);
  assert_int_equal(m->count, 120000);
  assert_true(m->max_abs == 0.25 && m->max_rel == 0.5 && m->rms == 1e-3);
  assert_int_equal(m->max_ulp, 123456789012ull);
  assert_int_equal(m->nan_mismatches, 1);
  assert_int_equal(m->peak_index, 401);
  assert_int_equal(m->rank, 2);
  assert_memory_equal(m->peak, w->peak, sizeof m->peak);
  assert_memory_equal(m->bbox_lo, w->bbox_lo, sizeof m->bbox_lo);
  assert_memory_equal(m->bbox_hi, w->bbox_hi, sizeof m->bbox_hi);
  assert_memory_equal(m->hist, w->hist, sizeof m->hist);
  assert_true(m->a.min == -1.5 && m->a.std == 0.75 && m->b.mean == 0.25 && m->b.std == 0.5);
  assert_int_equal(r->cands[1].vs_reference.mismatches, 6);
  assert_true(isnan(r->cands[2].vs_default.rms));

  /* The error map, element for element (NaN included). */
  assert_int_equal(r->nerror_maps, 1);
  const tn_error_map *e = tn_fusion_result_find_map(r, 1);
  assert_non_null(e);
  assert_int_equal(e->rank, 2);
  assert_int_equal(e->dims[0], 300);
  assert_int_equal(e->dims[1], 400);
  for (int i = 0; i < 300 * 400; i++)
    if (!(e->data[i] == want.error_maps[0].data[i] || (isnan(e->data[i]) && isnan(want.error_maps[0].data[i]))))
      fail_msg("error map element %d: %g, stored %g", i, e->data[i], want.error_maps[0].data[i]);
  assert_null(tn_fusion_result_find_map(r, 0));
  /* Its window of expected and actual values around the peak. */
  assert_int_equal(e->peak.rows, 3);
  assert_int_equal(e->peak.cols, 5);
  assert_int_equal(e->peak.peak[0], 1);
  assert_int_equal(e->peak.peak[1], 1);
  assert_int_equal(e->peak.origin[0], 0);
  assert_int_equal(e->peak.origin[1], 0);
  for (int k = 0; k < 15; k++)
    assert_true(e->peak.expected[k] == k * 0.5 && e->peak.actual[k] == (k == 6 ? 3.25 : k * 0.5));
  assert_non_null(tn_fusion_result_find_cand(r, 3));
  assert_null(tn_fusion_result_find_cand(r, 99));
  tn_fusion_result_free(&want);
  tn_stored_run_free(&run);
}

/* Every column of the stored tables is described in the file: the
 * attribute `columns` of each table has one row per compound member, in
 * order, with a unit and a one-line meaning (issue 18, item 6). */
typedef struct doc_in {
  char name[32], unit[16], what[160];
} doc_in;

static void check_described(hid_t g, const char *table, const char *col, const char *unit, const char *what_has) {
  hid_t d = H5Dopen2(g, table, H5P_DEFAULT);
  assert_true(d >= 0);
  hid_t ft = H5Dget_type(d), a = H5Aopen(d, "columns", H5P_DEFAULT);
  assert_true(a >= 0);
  hid_t as = H5Aget_space(a);
  int nmem = H5Tget_nmembers(ft);
  assert_int_equal(H5Sget_simple_extent_npoints(as), nmem);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(doc_in));
  const char *names[3] = {"name", "unit", "what"};
  size_t offs[3] = {offsetof(doc_in, name), offsetof(doc_in, unit), offsetof(doc_in, what)};
  size_t sizes[3] = {32, 16, 160};
  for (int i = 0; i < 3; i++) {
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, sizes[i]);
    H5Tset_strpad(st, H5T_STR_NULLTERM);
    H5Tinsert(mt, names[i], offs[i], st);
    H5Tclose(st);
  }
  doc_in *rows = calloc((size_t)nmem, sizeof *rows);
  assert_non_null(rows);
  assert_true(H5Aread(a, mt, rows) >= 0);
  bool seen = false;
  for (int i = 0; i < nmem; i++) {
    char *m = H5Tget_member_name(ft, (unsigned)i);
    if (strcmp(rows[i].name, m) != 0)
      fail_msg("%s: row %d describes '%s', the column is '%s'", table, i, rows[i].name, m);
    H5free_memory(m);
    if (strlen(rows[i].what) < 8)
      fail_msg("%s: column '%s' has no description", table, rows[i].name);
    if (strcmp(rows[i].name, col) == 0) {
      seen = true;
      assert_string_equal(rows[i].unit, unit);
      if (!strstr(rows[i].what, what_has))
        fail_msg("%s.%s: '%s' lacks '%s'", table, col, rows[i].what, what_has);
    }
  }
  assert_true(seen);
  free(rows);
  H5Tclose(mt);
  H5Sclose(as);
  H5Aclose(a);
  H5Tclose(ft);
  H5Dclose(d);
}

/* Every attribute of group `path` has a row in its `attributes`
 * attribute with a meaning; the unit of each of want[0..nwant) (name,
 * unit pairs) is checked too. */
static void check_attrs_described(hid_t f, const char *path, const char *const (*want)[2], int nwant) {
  hid_t g = H5Gopen2(f, path, H5P_DEFAULT);
  assert_true(g >= 0);
  hid_t a = H5Aopen(g, "attributes", H5P_DEFAULT);
  assert_true(a >= 0);
  hid_t as = H5Aget_space(a);
  H5O_info_t oi;
  assert_true(H5Oget_info(g, &oi) >= 0);
  int n = (int)H5Sget_simple_extent_npoints(as);
  assert_int_equal(n, (int)oi.num_attrs - 1); /* all but itself */
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(doc_in));
  const char *names[3] = {"name", "unit", "what"};
  size_t offs[3] = {offsetof(doc_in, name), offsetof(doc_in, unit), offsetof(doc_in, what)};
  size_t sizes[3] = {32, 16, 160};
  for (int i = 0; i < 3; i++) {
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, sizes[i]);
    H5Tset_strpad(st, H5T_STR_NULLTERM);
    H5Tinsert(mt, names[i], offs[i], st);
    H5Tclose(st);
  }
  doc_in *rows = calloc((size_t)n, sizeof *rows);
  assert_non_null(rows);
  assert_true(H5Aread(a, mt, rows) >= 0);
  int seen = 0;
  for (int i = 0; i < n; i++) {
    if (strlen(rows[i].what) < 8)
      fail_msg("%s: attribute '%s' has no description", path, rows[i].name);
    assert_true(H5Aexists(g, rows[i].name) > 0);
    for (int k = 0; k < nwant; k++)
      if (strcmp(rows[i].name, want[k][0]) == 0 && strcmp(rows[i].unit, want[k][1]) == 0)
        seen++;
  }
  assert_int_equal(seen, nwant);
  free(rows);
  H5Tclose(mt);
  H5Sclose(as);
  H5Aclose(a);
  H5Gclose(g);
}

static void test_fusion_attrs_described(void **state) {
  (void)state;
  hid_t f = H5Fopen(results, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  static const char *const want[][2] = {
      {"wall_time", "s"}, {"count_mismatch_candidate", "candidates"}, {"best_speedup", "ratio"}};
  check_attrs_described(f, "runs/20260101T000001Z-2/fusions/0123456789abcdef", want, 3);
  H5Fclose(f);
}

/* Issue 18: the run's attributes are described like a fusion's, and the
 * device's defects and profile are attributes of their own. */
static void test_run_attrs_described(void **state) {
  (void)state;
  hid_t f = H5Fopen(results, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  static const char *const want[][2] = {{"seed", ""}, {"defects", ""}, {"compiler_profile", ""}};
  check_attrs_described(f, "runs/20260101T000001Z-2", want, 3);
  /* A run without --defect: no +d, an empty profile list is not written
   * (the store was not told the defects: defects_known 0). */
  static const char *const want1[][2] = {{"started", ""}, {"compiler_profile", ""}};
  check_attrs_described(f, "runs/20260101T000000Z-1", want1, 2);
  hid_t g = H5Gopen2(f, "runs/20260101T000001Z-2", H5P_DEFAULT);
  char buf[64];
  hlo_error err = {0};
  assert_int_equal(tn_h5_attr_get_str(g, "compiler_profile", buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "nightly"); /* "nightly+d" without the +d */
  H5Gclose(g);
  H5Fclose(f);
  /* Read back: the same two defects. */
  tn_stored_run run;
  read_latest(&run);
  assert_int_equal(run.info.defects_known, 1);
  assert_int_equal(run.info.defects, 1u << DEV_DEFECT_ELIDE_CONVERT | 1u << DEV_DEFECT_PACKED_REDUCE_INIT0);
  tn_stored_run_free(&run);
}

static void test_columns_described(void **state) {
  (void)state;
  hid_t f = H5Fopen(results, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t g = H5Gopen2(f, "runs/20260101T000001Z-2/fusions/0123456789abcdef", H5P_DEFAULT);
  assert_true(g >= 0);
  check_described(g, "candidates", "sim_time", "s", "simulated time");
  check_described(g, "candidates", "d_max_abs", "output units", "against the default");
  check_described(g, "candidates", "r_max_ulp", "ULP", "against the reference");
  check_described(g, "reference", "max_rel", "ratio", "relative error");
  check_described(g, "peak_windows", "expected", "output units", "i * cols + j");
  H5Gclose(g);
  H5Fclose(f);
}

static void test_runs_and_selection(void **state) {
  (void)state;
  hlo_error err = {0};
  tn_run_info *runs = NULL;
  int n = 0;
  char tv[64];
  assert_int_equal(tn_results_list_runs(results, &runs, &n, tv, sizeof tv, &err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(runs[0].id, "20260101T000000Z-1"); /* oldest first */
  assert_string_equal(runs[1].id, "20260101T000001Z-2");
  assert_true(strlen(tv) > 0);
  free(runs);

  tn_stored_run run;
  assert_int_equal(tn_results_read_run(results, "20260101T000000Z-1", &run, &err), 0);
  assert_int_equal(run.nfusions, 1);
  assert_string_equal(run.info.compiler, "stable");
  tn_stored_run_free(&run);

  assert_int_equal(tn_results_read_run(results, "no-such-run", &run, &err), -1);
  assert_non_null(strstr(err.msg, "no run 'no-such-run'"));
  assert_non_null(strstr(err.msg, "20260101T000000Z-1, 20260101T000001Z-2"));
  assert_int_equal(run.nfusions, 0);

  assert_int_equal(tn_results_read_run(tdf_path("absent.h5"), NULL, &run, &err), -1);
  assert_non_null(strstr(err.msg, "absent.h5"));
}

/* A file with the results schema but another version, or no schema. */
static void make_foreign(const char *path, const char *schema, int64_t version) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t space = H5Screate(H5S_SCALAR);
  if (schema) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(schema) + 1);
    hid_t a = H5Acreate2(f, "schema", t, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, schema);
    H5Aclose(a);
    H5Tclose(t);
    a = H5Acreate2(f, "schema_version", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &version);
    H5Aclose(a);
  }
  H5Sclose(space);
  H5Fclose(f);
}

static void test_schema_refused(void **state) {
  (void)state;
  hlo_error err = {0};
  tn_stored_run run;
  const char *p = tdf_path("newer.h5");
  make_foreign(p, "tune-results", TN_STORE_SCHEMA_VERSION + 1);
  assert_int_equal(tn_results_read_run(p, NULL, &run, &err), -1);
  assert_non_null(strstr(err.msg, "newer.h5: results schema version 3 was written by a newer tune"));
  assert_non_null(strstr(err.msg, "reads versions 1 to 2"));

  /* Version 1 is read (an empty one has no runs). */
  p = tdf_path("v1.h5");
  make_foreign(p, "tune-results", 1);
  tn_run_info *runs = NULL;
  int nruns = -1;
  assert_int_equal(tn_results_list_runs(p, &runs, &nruns, NULL, 0, &err), 0);
  assert_int_equal(nruns, 0);
  free(runs);
  assert_int_equal(tn_results_schema_version(p, &err), 1);

  p = tdf_path("older.h5");
  make_foreign(p, "tune-results", 0);
  assert_int_equal(tn_results_read_run(p, NULL, &run, &err), -1);
  assert_non_null(strstr(err.msg, "an older tune"));

  p = tdf_path("other.h5");
  make_foreign(p, NULL, 0);
  assert_int_equal(tn_results_read_run(p, NULL, &run, &err), -1);
  assert_non_null(strstr(err.msg, "not a tune results file"));

  p = tdf_path("text.h5");
  FILE *f = fopen(p, "w");
  fputs("not hdf5\n", f);
  fclose(f);
  assert_int_equal(tn_results_read_run(p, NULL, &run, &err), -1);
  assert_non_null(strstr(err.msg, "not an HDF5 file"));
}

/* ---- the reports ------------------------------------------------------------------ */

/* The report of the latest run, as one string (free() it). */
static char *render(tn_report_format fmt) {
  tn_stored_run run;
  read_latest(&run);
  hlo_error err = {0};
  tn_run_info *runs = NULL;
  int nruns = 0;
  assert_int_equal(tn_results_list_runs(results, &runs, &nruns, NULL, 0, &err), 0);
  tn_report_input in = {.results_path = "X.h5", .run = &run, .runs = runs, .nruns = nruns, .tool_version = "9.9"};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  if (tn_report_write(f, fmt, &in, &err) != 0)
    fail_msg("report: %s", err.msg);
  fclose(f);
  tn_stored_run_free(&run);
  free(runs);
  return buf;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

#define HAS(s, needle)                                                                                   \
  do {                                                                                                   \
    if (!strstr((s), (needle)))                                                                          \
      fail_msg("no '%s' in the report", (needle));                                                      \
  } while (0)

/* Runs python3 CODE FILE when make check gave us a Python; 0 when it passes
 * or there is no Python to ask. */
static int python_check(const char *code, const char *text, const char *name) {
  const char *py = getenv("PYTHON3");
  if (!py || !*py || access(py, X_OK) != 0)
    return 0;
  const char *p = tdf_path(name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "'%s' -c '%s' '%s' >/dev/null", py, code, p);
  return system(cmd);
}

static void test_md(void **state) {
  (void)state;
  char *s = render(TN_REPORT_MD);
  /* The reproducer: the exact config text, the seed, the input profile
   * (the fixture's zeroed one is naive, not --check's default), the run's
   * machine, the compiler without its "+d" mark, and the defect the
   * command added (the profile has it too). */
  HAS(s, "tune --check datasets/thing.hlo --only '" RFX_DIVERGENT_CONFIG
         "' --seed 42 --profile naive --machine tpu-v5e --compiler nightly --defect elide-convert");
  HAS(s, "tune --reproduce X.h5 --fusion fused_thing --candidate 1 -o repro-fused_thing-1");
  /* The tolerance and the metrics, both sides. */
  HAS(s, "atol = 2.5e-06, rtol = 3e-05");
  HAS(s, "| mismatches | 5 of 120000 | 6 of 120000 |");
  HAS(s, "| max abs error | 0.25 | 0.25 |");
  HAS(s, "| max rel error | 0.5 | 0.5 |");
  HAS(s, "| max ULP distance | 123456789012 | 123456789012 |");
  HAS(s, "| RMS error | 0.001 | 0.001 |");
  HAS(s, "| NaN / Inf mismatches | 1 / 0 |");
  HAS(s, "`(1,1)` (flat 401)");
  HAS(s, "`[1:8, 0:400]`");
  HAS(s, "mismatch-candidate");
  /* The values around the peak: equal cells once, the peak as expected
   * -> actual, in bold. */
  HAS(s, "**Expected → actual around the peak** `[1,1]` (rows: dim 0, columns: dim 1):");
  HAS(s, "  | | 0 | 1 | 2 | 3 | 4 |\n  |---:|---:|---:|---:|---:|---:|\n  | 0 | 0 | 0.5 | 1 | 1.5 | 2 |\n"
         "  | 1 | 2.5 | **3 → 3.25** | 3.5 | 4 | 4.5 |\n  | 2 | 5 | 5.5 | 6 | 6.5 | 7 |\n");
  /* The files to attach. */
  HAS(s, "`datasets/thing.hlo` — the fusion's HLO");
  HAS(s, "/runs/20260101T000001Z-2/fusions/0123456789abcdef/hlo");
  HAS(s, "`X.h5` — the results file");
  HAS(s, "`repro-fused_thing-1` — the reproducer bundle");
  /* The clean fusion: one line. */
  HAS(s, "## Fusions without divergence");
  HAS(s, "(`datasets/clean.hlo`): 2 candidates, no divergence");
  assert_int_equal(count_of(s, "#### Candidate"), 1);
  free(s);
}

/* Every stored field of the run is the file's: raw HTML in any of them
 * (a hostile or damaged file) reaches the Markdown only escaped, because
 * trackers render inline HTML. */
static void test_md_escapes_run_fields(void **state) {
  (void)state;
  tn_stored_run run;
  memset(&run, 0, sizeof run);
  snprintf(run.info.id, sizeof run.info.id, "run-1");
  snprintf(run.info.started, sizeof run.info.started, "<script>s()</script>");
  snprintf(run.info.finished, sizeof run.info.finished, "<img src=x onerror=f()>");
  snprintf(run.info.status, sizeof run.info.status, "<b>done</b>");
  tn_report_input in = {.results_path = "X.h5", .run = &run, .tool_version = "<i>1</i>"};
  char *buf = NULL;
  size_t len = 0;
  hlo_error err = {0};
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(tn_report_md(f, &in, &err), 0);
  fclose(f);
  /* A tag opens only at a '<' that no backslash escapes. */
  for (const char *p = strchr(buf, '<'); p; p = strchr(p + 1, '<'))
    if (p == buf || p[-1] != '\\')
      fail_msg("unescaped '<' in the report at: %.40s", p);
  HAS(buf, "started \\<script\\>s()\\</script\\>");
  HAS(buf, "\\<b\\>done\\</b\\>");
  HAS(buf, "tune \\<i\\>1\\</i\\>");
  free(buf);
}

static void test_junit(void **state) {
  (void)state;
  char *s = render(TN_REPORT_JUNIT);
  HAS(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  HAS(s, "<testsuites name=\"tune 20260101T000001Z-2\" tests=\"6\" failures=\"1\" errors=\"0\" skipped=\"1\"");
  HAS(s, "<testsuite name=\"fused_thing\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\"");
  HAS(s, "<testsuite name=\"clean&lt;&amp;&quot;&#39;&gt;\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\"");
  HAS(s, "<testcase name=\"" RFX_DIVERGENT_CONFIG "\" classname=\"fused_thing\"");
  HAS(s, "<failure message=\"verdict: mismatch-candidate\" type=\"mismatch-candidate\">");
  HAS(s, "vs the default: 5 of 120000 elements differ; max abs 0.25, max rel 0.5, max ulp 123456789012");
  HAS(s, "--only &#39;" RFX_DIVERGENT_CONFIG "&#39;");
  HAS(s, "<skipped message=\"compile-error: VMEM exhausted: 40 MiB needed &amp; 16 MiB &lt;available&gt;\"/>");
  assert_int_equal(count_of(s, "<testcase "), 6);
  assert_int_equal(count_of(s, "<failure "), 1);
  assert_int_equal(count_of(s, "</testsuite>"), 2);
  assert_int_equal(python_check("import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])", s, "r.xml"), 0);
  free(s);
}

static void test_json(void **state) {
  (void)state;
  char *s = render(TN_REPORT_JSON);
  HAS(s, "\"report\": \"tune\"");
  HAS(s, "\"schema_version\": 2");
  HAS(s, "\"id\": \"20260101T000001Z-2\"");
  HAS(s, "\"name\": \"clean<&\\\"'>\"");
  HAS(s, "\"fingerprint\": \"0123456789abcdef\"");
  HAS(s, "\"config\": \"" RFX_DIVERGENT_CONFIG "\"");
  HAS(s, "\"verdict\": \"mismatch-candidate\"");
  HAS(s, "\"max_ulp\": 123456789012");
  HAS(s, "\"max_abs\": 0.25");
  HAS(s, "\"bbox_hi\": [7, 399]");
  HAS(s, "\"peak\": [1, 1]");
  HAS(s, "\"rms\": null"); /* the NaN */
  HAS(s, "\"best_config\": \"tile=8x128 k=512 buf=2 order=01k pack=1 prec=default flags=none\"");
  HAS(s, "\"vs_reference\": null");
  HAS(s, "\"error_maps\": [{\"candidate\": 1, \"dims\": [300, 400]}]");
  HAS(s, "\"reproduce_check\": \"tune --check datasets/thing.hlo --only '" RFX_DIVERGENT_CONFIG "'");
  assert_int_equal(count_of(s, "\"runs\": [{"), 1);
  assert_int_equal(count_of(s, "{") , count_of(s, "}"));
  assert_int_equal(python_check("import json,sys; json.load(open(sys.argv[1]))", s, "r.json"), 0);
  free(s);
}

static void test_html(void **state) {
  (void)state;
  char *s = render(TN_REPORT_HTML);
  HAS(s, "<!DOCTYPE html>");
  HAS(s, "<svg");
  HAS(s, "<table class=\"grid verdicts\">");
  HAS(s, RFX_DIVERGENT_CONFIG);
  HAS(s, "clean&lt;&amp;&quot;&#39;&gt;");
  HAS(s, "aria-label=\"error heatmap\"");
  HAS(s, "NaN/Inf on one side (1)");                 /* the NaN cell, counted */
  HAS(s, "<title>[1,0:7] max 0.25</title>");        /* the peak cell: a 1x7 block (400 columns in at most 64 cells) */
  HAS(s, "mismatch box [1:8, 0:400], peak (1,1)");
  HAS(s, "Candidate 1: expected &#8594; actual around the peak [1,1] (rows: dim 0, columns: dim 1)");
  HAS(s, "<tr><th>1</th><td class=\"\">2.5</td><td class=\"d pk\">3 &#8594; 3.25</td><td class=\"\">3.5</td>");
  HAS(s, "&lt;available&gt;");
  /* Nothing fetched: no URL at all, no script, no external style sheet. */
  assert_null(strstr(s, "http://"));
  assert_null(strstr(s, "https://"));
  assert_null(strstr(s, "<script"));
  assert_null(strstr(s, "<link"));
  assert_null(strstr(s, "clean<&"));
  /* Divergent rows first in the verdict table. */
  const char *sect = strstr(s, "id=\"f-0123456789abcdef\"");
  assert_non_null(sect);
  const char *table = strstr(sect, "<table class=\"grid verdicts\">");
  assert_non_null(table);
  const char *dv = strstr(table, RFX_DIVERGENT_CONFIG), *df = strstr(table, RFX_DEFAULT_CONFIG);
  assert_true(dv && df && dv < df);
  free(s);
}

/* Error maps of rank 0, 1 and 3 (a 2-D slice through the peak) draw
 * without reading outside the map; a run with no fusion still reports. */
static void test_html_ranks(void **state) {
  (void)state;
  const char *path = tdf_path("ranks.h5");
  tn_fusion_result r;
  make_clean(&r);
  snprintf(r.name, sizeof r.name, "ranks");
  free(r.cands);
  r.ncands = 5;
  r.cands = calloc(5, sizeof *r.cands);
  assert_non_null(r.cands);
  set_cand(&r.cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH, 2e-6);
  /* A matching candidate that shares every knob of the three divergent
   * ones but the tile: each divergent tile is then a group of its own
   * (knob attribution), so each keeps its error map in the page. */
  set_cand(&r.cands[4], 4, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH, 3e-6);
  snprintf(r.cands[4].config, sizeof r.cands[4].config, "tile=32 k=0 buf=1 order=0 pack=1 prec=default flags=none");
  assert_int_equal(dev_config_parse(r.cands[4].config, &r.cands[4].cfg, &(hlo_error){0}), 0);
  static const int64_t dims[3][3] = {{0}, {1000}, {4, 50, 60}};
  static const int ranks[3] = {0, 1, 3};
  r.nerror_maps = 3;
  r.error_maps = calloc(3, sizeof *r.error_maps);
  assert_non_null(r.error_maps);
  for (int k = 0; k < 3; k++) {
    tn_cand_result *c = &r.cands[k + 1];
    set_cand(c, k + 1, RFX_DIVERGENT_CONFIG, CHK_VERDICT_MISMATCH_BOTH, 1e-6);
    snprintf(c->config, sizeof c->config, "tile=%d k=0 buf=1 order=0 pack=1 prec=default flags=none", 8 * (k + 1));
    assert_int_equal(dev_config_parse(c->config, &c->cfg, &(hlo_error){0}), 0);
    chk_metrics *m = &c->vs_default;
    m->rank = ranks[k];
    m->mismatches = 2;
    m->peak_index = 0;
    tn_error_map *e = &r.error_maps[k];
    e->cand_id = k + 1;
    e->rank = ranks[k];
    size_t n = 1;
    for (int d = 0; d < ranks[k]; d++) {
      e->dims[d] = dims[k][d];
      m->bbox_lo[d] = 1;
      m->bbox_hi[d] = dims[k][d] - 2;
      m->peak[d] = 2;
      n *= (size_t)dims[k][d];
    }
    e->data = calloc(n, sizeof *e->data);
    assert_non_null(e->data);
    for (size_t i = 0; i < n; i++)
      e->data[i] = (float)(i % 13) * 1e-3f;
  }
  r.verdict_counts[CHK_VERDICT_MATCH] = 2;
  r.verdict_counts[CHK_VERDICT_MISMATCH_BOTH] = 3;
  r.best = 0;

  hlo_error err = {0};
  tn_run_info ri;
  memset(&ri, 0, sizeof ri);
  tn_store *st = tn_store_begin_run(path, &ri, &err);
  assert_non_null(st);
  assert_int_equal(tn_store_add_fusion(st, &r, &err), 0);
  assert_int_equal(tn_store_end_run(st, "complete", &err), 0);
  tn_fusion_result_free(&r);
  /* A second run, killed before its first fusion: reported as empty. */
  memset(&ri, 0, sizeof ri);
  snprintf(ri.id, sizeof ri.id, "zz-killed");
  st = tn_store_begin_run(path, &ri, &err);
  assert_non_null(st);
  tn_store_close(st);

  tn_run_info *runs = NULL;
  int nruns = 0;
  assert_int_equal(tn_results_list_runs(path, &runs, &nruns, NULL, 0, &err), 0);
  assert_int_equal(nruns, 2);
  assert_string_equal(runs[1].id, "zz-killed"); /* the latest */
  assert_string_equal(runs[1].status, "running");
  tn_stored_run run;
  for (int pass = 0; pass < 2; pass++) {
    assert_int_equal(tn_results_read_run(path, runs[pass].id, &run, &err), 0);
    assert_int_equal(run.nfusions, pass ? 0 : 1);
    tn_report_input in = {.results_path = path, .run = &run, .runs = runs, .nruns = nruns};
    for (int fmt = TN_REPORT_HTML; fmt <= TN_REPORT_JUNIT; fmt++) {
      char *buf = NULL;
      size_t len = 0;
      FILE *f = open_memstream(&buf, &len);
      assert_non_null(f);
      assert_int_equal(tn_report_write(f, (tn_report_format)fmt, &in, &err), 0);
      fclose(f);
      if (pass == 0 && fmt == TN_REPORT_HTML) {
        assert_int_equal(count_of(buf, "aria-label=\"error heatmap\""), 3);
        HAS(buf, "slice of dims 1 (rows) and 2 (columns), the others fixed at the peak");
      }
      /* An older run must be named for --reproduce to find it. */
      if (pass == 0 && fmt == TN_REPORT_MD)
        HAS(buf, "--run 20");
      free(buf);
    }
    tn_stored_run_free(&run);
  }
  free(runs);
}

/* Two groups whose representatives have the same error map, element for
 * element: the page draws it once and says so for the second (issue 18:
 * three identical heatmaps in one fusion).  Built in memory: the store
 * adds nothing to what is tested here. */
static void test_html_same_map_once(void **state) {
  (void)state;
  tn_stored_run run;
  memset(&run, 0, sizeof run);
  snprintf(run.info.id, sizeof run.info.id, "dedup");
  run.nfusions = 1;
  run.fusions = calloc(1, sizeof *run.fusions);
  assert_non_null(run.fusions);
  tn_fusion_result *r = &run.fusions[0].r;
  make_clean(r);
  /* default (match), pack=2 and buf=3 (divergent): no matching candidate
   * has pack=2 or buf=3, so each is a group of its own. */
  set_cand(&r->cands[1], 1, "tile=8x256 k=512 buf=2 order=01k pack=2 prec=default flags=fuse-converts",
           CHK_VERDICT_MISMATCH_CANDIDATE, 1e-6);
  tn_cand_result *c2 = realloc(r->cands, 3 * sizeof *r->cands);
  assert_non_null(c2);
  r->cands = c2;
  r->ncands = 3;
  memset(&r->cands[2], 0, sizeof r->cands[2]);
  set_cand(&r->cands[2], 2, "tile=8x256 k=512 buf=3 order=01k pack=1 prec=default flags=fuse-converts",
           CHK_VERDICT_MISMATCH_CANDIDATE, 1e-6);
  for (int i = 1; i <= 2; i++) {
    assert_int_equal(dev_config_parse(r->cands[i].config, &r->cands[i].cfg, &(hlo_error){0}), 0);
    r->cands[i].vs_default.mismatches = 3 - i; /* candidate 1 is the worse */
    r->cands[i].vs_default.count = 8;
    r->cands[i].vs_default.rank = 1;
  }
  r->nerror_maps = 2;
  r->error_maps = calloc(2, sizeof *r->error_maps);
  assert_non_null(r->error_maps);
  for (int k = 0; k < 2; k++) {
    tn_error_map *e = &r->error_maps[k];
    e->cand_id = k + 1;
    e->rank = 1;
    e->dims[0] = 8;
    e->data = calloc(8, sizeof *e->data);
    assert_non_null(e->data);
    e->data[3] = 0.5f;
  }
  tn_report_input in = {.results_path = "d.h5", .run = &run};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  hlo_error err = {0};
  assert_int_equal(tn_report_html(f, &in, &err), 0);
  fclose(f);
  assert_int_equal(count_of(buf, "aria-label=\"error heatmap\""), 1);
  HAS(buf, "Candidate 2: the same error map as candidate 1 above, element for element.");
  /* One map changed in one element: both are drawn. */
  free(buf);
  r->error_maps[1].data[4] = 0.25f;
  f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(tn_report_html(f, &in, &err), 0);
  fclose(f);
  assert_int_equal(count_of(buf, "aria-label=\"error heatmap\""), 2);
  free(buf);
  tn_stored_run_free(&run);
}

static void test_formats_and_errors(void **state) {
  (void)state;
  assert_int_equal(tn_report_format_from_name("html"), TN_REPORT_HTML);
  assert_int_equal(tn_report_format_from_name("md"), TN_REPORT_MD);
  assert_int_equal(tn_report_format_from_name("markdown"), TN_REPORT_MD);
  assert_int_equal(tn_report_format_from_name("json"), TN_REPORT_JSON);
  assert_int_equal(tn_report_format_from_name("junit"), TN_REPORT_JUNIT);
  assert_int_equal(tn_report_format_from_name("pdf"), -1);
  assert_string_equal(tn_report_format_name(TN_REPORT_JUNIT), "junit");

  /* A full disk is an error, not a silently short report. */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    tn_stored_run run;
    read_latest(&run);
    tn_report_input in = {.results_path = "X.h5", .run = &run};
    hlo_error err = {0};
    assert_int_equal(tn_report_write(full, TN_REPORT_JSON, &in, &err), -1);
    assert_non_null(strstr(err.msg, "cannot write the report"));
    fclose(full);
    tn_stored_run_free(&run);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_roundtrip),
      cmocka_unit_test(test_runs_and_selection),
      cmocka_unit_test(test_columns_described),
      cmocka_unit_test(test_fusion_attrs_described),
      cmocka_unit_test(test_run_attrs_described),
      cmocka_unit_test(test_schema_refused),
      cmocka_unit_test(test_md),
      cmocka_unit_test(test_md_escapes_run_fields),
      cmocka_unit_test(test_junit),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_html),
      cmocka_unit_test(test_html_ranks),
      cmocka_unit_test(test_html_same_map_once),
      cmocka_unit_test(test_formats_and_errors),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
