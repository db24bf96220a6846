/* test_store.c — the HDF5 results file (tuner/store/store.c).
 *
 * A fusion result is built by hand, stored, and read back with plain HDF5
 * calls the way another tool would: the candidates table is read through a
 * compound type of our own that names the columns we look at, so a renamed
 * or missing column fails here just as it would in h5py.  The failure
 * tests check that a write that cannot complete says why and leaves the
 * existing file byte for byte as it was.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <hdf5.h>

#include "config.h"
#include "result_fixture.h"
#include "store/store.h"
#include "store/store_read.h"
#include "tmpdir_fixture.h"

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_store");
}

/* ---- a hand-made result ---------------------------------------------------- */

/* Three candidates: the default (match), a faster wrong one
 * (mismatch-candidate, also compared with the reference, with an error
 * map) and one that did not compile. */
static void make_result(tn_fusion_result *r, uint64_t fp) {
  rfx_result(r, "fused_thing", "datasets/thing.hlo", "reduce", RFX_THING_HLO, fp, 3);

  tn_cand_result *c = &r->cands[0];
  rfx_cand(c, 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH);
  c->sim_time = 2e-6;
  c->wall_time = 0.01;
  c->speedup = 1.0;
  c->tol = (chk_tol){1e-6, 1e-5};

  c = &r->cands[1];
  rfx_cand(c, 1, RFX_DIVERGENT_CONFIG, CHK_VERDICT_MISMATCH_CANDIDATE);
  c->sim_time = 1e-6;
  c->wall_time = 0.02;
  c->speedup = 2.0;
  c->tol = (chk_tol){1e-6, 1e-5};
  c->leaf = 0;
  rfx_divergent(c);

  c = &r->cands[2];
  rfx_cand(c, 2, RFX_UNCOMPILABLE_CONFIG, CHK_VERDICT_COMPILE_ERROR);
  c->status = DEV_COMPILE_ERROR;
  c->vs_default.count = 0;
  snprintf(c->message, sizeof c->message, "VMEM exhausted: 40 MiB needed, 16 MiB available");

  r->best = 0;
  r->default_ran = true;
  r->default_vs_reference_ok = true;
  r->default_vs_reference.count = 120000;
  r->default_vs_reference.max_abs = 3e-7;
  r->default_vs_reference.peak_index = 17;
  r->reference_tol = (chk_tol){2e-6, 3e-5};
  r->verdict_counts[CHK_VERDICT_MATCH] = 1;
  r->verdict_counts[CHK_VERDICT_MISMATCH_CANDIDATE] = 1;
  r->verdict_counts[CHK_VERDICT_COMPILE_ERROR] = 1;

  tn_error_map *e = rfx_error_map(r, 1);
  for (int i = 0; i < 300 * 400; i++)
    e->data[i] = (float)(i % 97) * 0.5f;
  r->wall_time = 0.5;
}

static tn_store *begin(const char *path, const char *command) {
  hlo_error err = {0};
  tn_run_info run;
  memset(&run, 0, sizeof run);
  snprintf(run.command, sizeof run.command, "%s", command);
  snprintf(run.machine, sizeof run.machine, "tpu-v5e");
  snprintf(run.compiler, sizeof run.compiler, "stable");
  run.seed = 7;
  tn_store *s = tn_store_begin_run(path, &run, &err);
  if (!s)
    fail_msg("begin_run: %s", err.msg);
  return s;
}

/* Stores one run holding the result of make_result. */
static void store_one_run(const char *path, const char *command, uint64_t fp) {
  hlo_error err = {0};
  tn_fusion_result r;
  make_result(&r, fp);
  tn_store *s = begin(path, command);
  if (tn_store_add_fusion(s, &r, &err) != 0)
    fail_msg("add_fusion: %s", err.msg);
  if (tn_store_end_run(s, "complete", &err) != 0)
    fail_msg("end_run: %s", err.msg);
  tn_fusion_result_free(&r);
}

/* ---- reading back ------------------------------------------------------------ */

static void attr_str(hid_t obj, const char *name, char *buf, size_t n) {
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0)
    fail_msg("no attribute %s", name);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  char *p = NULL;
  assert_true(H5Aread(a, t, &p) >= 0);
  snprintf(buf, n, "%s", p);
  H5free_memory(p);
  H5Tclose(t);
  H5Aclose(a);
}

static void attr_num(hid_t obj, const char *name, hid_t mtype, void *out) {
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0)
    fail_msg("no attribute %s", name);
  assert_true(H5Aread(a, mtype, out) >= 0);
  H5Aclose(a);
}

static int64_t attr_i64(hid_t obj, const char *name) {
  int64_t v = 0;
  attr_num(obj, name, H5T_NATIVE_INT64, &v);
  return v;
}

/* Names of the links in a group, in name order. */
static int list_group(hid_t loc, const char *path, char names[][64], int max) {
  hid_t g = H5Gopen2(loc, path, H5P_DEFAULT);
  assert_true(g >= 0);
  H5G_info_t info;
  assert_true(H5Gget_info(g, &info) >= 0);
  int n = (int)info.nlinks < max ? (int)info.nlinks : max;
  for (int i = 0; i < n; i++)
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, (hsize_t)i, names[i], 64, H5P_DEFAULT);
  H5Gclose(g);
  return (int)info.nlinks;
}

static hid_t str_type(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, n);
  return t;
}

static hid_t arr_type(hid_t base, hsize_t n) { return H5Tarray_create2(base, 1, &n); }

/* The columns this test looks at, in a struct of the test's own. */
typedef struct seen_row {
  int32_t id;
  char config[300];
  uint64_t fingerprint;
  int64_t tile[8];
  int32_t tile_rank;
  int64_t k;
  int32_t buf;
  char order[32], prec[32], flags[80], status[32], verdict[32], message[600];
  double speedup, atol;
  int64_t d_mismatches;
  double d_max_abs;
  uint64_t d_max_ulp;
  int64_t d_peak_index, d_peak[HLO_MAX_RANK], d_bbox_hi[HLO_MAX_RANK], d_hist[CHK_HIST_BUCKETS];
  double d_a_min, d_b_std;
  uint8_t has_ref;
  int64_t r_mismatches;
} seen_row;

static hid_t seen_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(seen_row));
  hid_t parts[] = {str_type(300), arr_type(H5T_NATIVE_INT64, 8), str_type(32), str_type(80), str_type(600),
                   arr_type(H5T_NATIVE_INT64, HLO_MAX_RANK), arr_type(H5T_NATIVE_INT64, CHK_HIST_BUCKETS)};
#define INS(name, type) assert_true(H5Tinsert(t, #name, offsetof(seen_row, name), type) >= 0)
  INS(id, H5T_NATIVE_INT32);
  INS(config, parts[0]);
  INS(fingerprint, H5T_NATIVE_UINT64);
  INS(tile, parts[1]);
  INS(tile_rank, H5T_NATIVE_INT32);
  INS(k, H5T_NATIVE_INT64);
  INS(buf, H5T_NATIVE_INT32);
  INS(order, parts[2]);
  INS(prec, parts[2]);
  INS(flags, parts[3]);
  INS(status, parts[2]);
  INS(verdict, parts[2]);
  INS(message, parts[4]);
  INS(speedup, H5T_NATIVE_DOUBLE);
  INS(atol, H5T_NATIVE_DOUBLE);
  INS(d_mismatches, H5T_NATIVE_INT64);
  INS(d_max_abs, H5T_NATIVE_DOUBLE);
  INS(d_max_ulp, H5T_NATIVE_UINT64);
  INS(d_peak_index, H5T_NATIVE_INT64);
  INS(d_peak, parts[5]);
  INS(d_bbox_hi, parts[5]);
  INS(d_hist, parts[6]);
  INS(d_a_min, H5T_NATIVE_DOUBLE);
  INS(d_b_std, H5T_NATIVE_DOUBLE);
  INS(has_ref, H5T_NATIVE_UINT8);
  INS(r_mismatches, H5T_NATIVE_INT64);
#undef INS
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    H5Tclose(parts[i]);
  return t;
}

/* Every documented column of `candidates` (README "HDF5 results schema"). */
static const char *const METRICS[] = {"count", "excluded", "mismatches", "max_abs", "max_rel", "max_ulp",
                                      "rms", "nan_mismatches", "inf_mismatches", "peak_index", "rank", "peak",
                                      "bbox_lo", "bbox_hi", "hist", "a_min", "a_max", "a_mean", "a_std",
                                      "b_min", "b_max", "b_mean", "b_std"};
static const char *const HEAD[] = {"id", "config", "fingerprint", "tile", "tile_rank", "k", "buf", "order",
                                   "pack", "prec", "flags", "status", "verdict", "message", "sim_time",
                                   "wall_time", "speedup", "atol", "rtol", "leaf"};
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void check_columns(hid_t dset) {
  hid_t ft = H5Dget_type(dset);
  assert_int_equal(H5Tget_class(ft), H5T_COMPOUND);
  char name[64];
  int want = 0;
  for (size_t i = 0; i < NELEMS(HEAD); i++, want++)
    if (H5Tget_member_index(ft, HEAD[i]) != want)
      fail_msg("column %s is not at %d", HEAD[i], want);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      if (H5Tget_member_index(ft, "has_ref") != want)
        fail_msg("column has_ref is not at %d", want);
      want++;
    }
    for (size_t i = 0; i < NELEMS(METRICS); i++, want++) {
      snprintf(name, sizeof name, "%s%s", pass ? "r_" : "d_", METRICS[i]);
      if (H5Tget_member_index(ft, name) != want)
        fail_msg("column %s is not at %d", name, want);
    }
  }
  assert_int_equal(H5Tget_nmembers(ft), want);
  /* Fixed strings, fixed arrays, little-endian numbers. */
  hid_t m = H5Tget_member_type(ft, (unsigned)H5Tget_member_index(ft, "config"));
  assert_int_equal(H5Tget_class(m), H5T_STRING);
  assert_false(H5Tis_variable_str(m) > 0);
  assert_int_equal(H5Tget_size(m), DEV_CONFIG_TEXT_MAX);
  H5Tclose(m);
  m = H5Tget_member_type(ft, (unsigned)H5Tget_member_index(ft, "d_hist"));
  assert_int_equal(H5Tget_class(m), H5T_ARRAY);
  hsize_t n = 0;
  assert_int_equal(H5Tget_array_dims2(m, &n), 1);
  assert_int_equal(n, CHK_HIST_BUCKETS);
  H5Tclose(m);
  m = H5Tget_member_type(ft, (unsigned)H5Tget_member_index(ft, "d_max_ulp"));
  assert_true(H5Tequal(m, H5T_STD_U64LE) > 0);
  H5Tclose(m);
  H5Tclose(ft);
}

static int count_temps(void) {
  DIR *d = opendir(tdf_dir());
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strstr(e->d_name, ".tmp.") != NULL;
  closedir(d);
  return n;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_roundtrip(void **state) {
  (void)state;
  const char *path = tdf_path("rt.h5");
  unlink(path);
  store_one_run(path, "tune --check thing.hlo -o rt.h5", 0x0123456789abcdefull);
  assert_int_equal(count_temps(), 0);

  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  char buf[1024], names[4][64];
  attr_str(f, "schema", buf, sizeof buf);
  assert_string_equal(buf, "tune-results");
  assert_int_equal(attr_i64(f, "schema_version"), 2);
  attr_str(f, "tool_version", buf, sizeof buf);
  assert_string_equal(buf, PACKAGE_VERSION);

  /* The run. */
  assert_int_equal(list_group(f, "runs", names, 4), 1);
  char runpath[128];
  snprintf(runpath, sizeof runpath, "runs/%s", names[0]);
  hid_t run = H5Gopen2(f, runpath, H5P_DEFAULT);
  assert_true(run >= 0);
  attr_str(run, "status", buf, sizeof buf);
  assert_string_equal(buf, "complete");
  attr_str(run, "started", buf, sizeof buf);
  assert_int_equal(strlen(buf), 20);
  assert_int_equal(buf[10], 'T');
  assert_int_equal(buf[19], 'Z');
  attr_str(run, "finished", buf, sizeof buf);
  assert_int_equal(strlen(buf), 20);
  attr_str(run, "command", buf, sizeof buf);
  assert_string_equal(buf, "tune --check thing.hlo -o rt.h5");
  attr_str(run, "machine", buf, sizeof buf);
  assert_string_equal(buf, "tpu-v5e");
  attr_str(run, "compiler", buf, sizeof buf);
  assert_string_equal(buf, "stable");
  attr_str(run, "host", buf, sizeof buf);
  assert_true(strlen(buf) > 0);
  uint64_t seed = 0;
  attr_num(run, "seed", H5T_NATIVE_UINT64, &seed);
  assert_int_equal(seed, 7);

  /* The fusion group, named by the fingerprint. */
  assert_int_equal(list_group(run, "fusions", names, 4), 1);
  assert_string_equal(names[0], "0123456789abcdef");
  hid_t fu = H5Gopen2(run, "fusions/0123456789abcdef", H5P_DEFAULT);
  assert_true(fu >= 0);
  attr_str(fu, "name", buf, sizeof buf);
  assert_string_equal(buf, "fused_thing");
  attr_str(fu, "source", buf, sizeof buf);
  assert_string_equal(buf, "datasets/thing.hlo");
  attr_str(fu, "hero", buf, sizeof buf);
  assert_string_equal(buf, "reduce");
  attr_str(fu, "default_config", buf, sizeof buf);
  assert_string_equal(buf, "tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts");
  attr_str(fu, "best_config", buf, sizeof buf);
  assert_string_equal(buf, "tile=8x256 k=512 buf=2 order=01k pack=1 prec=default flags=fuse-converts");
  double best = 0;
  attr_num(fu, "best_speedup", H5T_NATIVE_DOUBLE, &best);
  assert_true(best == 1.0);
  assert_int_equal(attr_i64(fu, "count_match"), 1);
  assert_int_equal(attr_i64(fu, "count_mismatch_candidate"), 1);
  assert_int_equal(attr_i64(fu, "count_compile_error"), 1);
  assert_int_equal(attr_i64(fu, "count_nondeterministic"), 0);
  assert_int_equal(attr_i64(fu, "default_vs_reference_ok"), 1);
  attr_num(fu, "seed", H5T_NATIVE_UINT64, &seed);
  assert_int_equal(seed, 42);

  /* The module text. */
  hid_t d = H5Dopen2(fu, "hlo", H5P_DEFAULT);
  hid_t vs = H5Tcopy(H5T_C_S1);
  H5Tset_size(vs, H5T_VARIABLE);
  H5Tset_cset(vs, H5T_CSET_UTF8);
  char *text = NULL;
  assert_true(H5Dread(d, vs, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0);
  assert_string_equal(text, RFX_THING_HLO);
  H5free_memory(text);
  H5Tclose(vs);
  H5Dclose(d);

  /* The candidates table. */
  d = H5Dopen2(fu, "candidates", H5P_DEFAULT);
  assert_true(d >= 0);
  check_columns(d);
  hid_t sp = H5Dget_space(d);
  assert_int_equal(H5Sget_simple_extent_npoints(sp), 3);
  H5Sclose(sp);
  seen_row rows[3];
  memset(rows, 0xee, sizeof rows);
  hid_t st = seen_type();
  assert_true(H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0);
  H5Tclose(st);
  H5Dclose(d);
  for (int i = 0; i < 3; i++)
    assert_int_equal(rows[i].id, i);
  assert_string_equal(rows[0].verdict, "match");
  assert_string_equal(rows[1].verdict, "mismatch-candidate");
  assert_string_equal(rows[2].verdict, "compile-error");
  assert_string_equal(rows[0].status, "ok");
  assert_string_equal(rows[2].status, "compile-error");
  assert_string_equal(rows[2].message, "VMEM exhausted: 40 MiB needed, 16 MiB available");
  assert_string_equal(rows[0].message, "");
  assert_string_equal(rows[1].config,
                      "tile=16x128 k=256 buf=3 order=1k0 pack=2 prec=high flags=fuse-converts,split-reduction");
  tn_fusion_result r;
  make_result(&r, 1);
  for (int i = 0; i < 3; i++)
    assert_true(rows[i].fingerprint == r.cands[i].fingerprint);
  tn_fusion_result_free(&r);
  /* knobs */
  assert_int_equal(rows[1].tile_rank, 2);
  assert_int_equal(rows[1].tile[0], 16);
  assert_int_equal(rows[1].tile[1], 128);
  assert_int_equal(rows[1].tile[2], 0);
  assert_int_equal(rows[1].k, 256);
  assert_int_equal(rows[1].buf, 3);
  assert_string_equal(rows[1].order, "1k0");
  assert_string_equal(rows[2].order, "k01");
  assert_string_equal(rows[1].prec, "high");
  assert_string_equal(rows[2].prec, "highest");
  assert_string_equal(rows[1].flags, "fuse-converts,split-reduction");
  assert_string_equal(rows[2].flags, "none");
  /* metrics */
  assert_true(rows[0].speedup == 1.0 && rows[1].speedup == 2.0);
  assert_true(rows[1].atol == 1e-6);
  assert_int_equal(rows[1].d_mismatches, 5);
  assert_true(rows[1].d_max_abs == 0.25);
  assert_true(rows[1].d_max_ulp == 123456789012ull);
  assert_int_equal(rows[1].d_peak_index, 401);
  assert_int_equal(rows[0].d_peak_index, -1);
  assert_int_equal(rows[1].d_peak[1], 1);
  assert_int_equal(rows[1].d_bbox_hi[1], 399);
  assert_int_equal(rows[1].d_bbox_hi[HLO_MAX_RANK - 1], 0);
  for (int i = 0; i < CHK_HIST_BUCKETS; i++)
    assert_int_equal(rows[1].d_hist[i], 100 + i);
  assert_true(rows[1].d_a_min == -1.5 && rows[1].d_b_std == 0.5);
  assert_int_equal(rows[0].has_ref, 0);
  assert_int_equal(rows[1].has_ref, 1);
  assert_int_equal(rows[1].r_mismatches, 6);
  assert_int_equal(rows[0].r_mismatches, 0);

  /* The reference row. */
  d = H5Dopen2(fu, "reference", H5P_DEFAULT);
  assert_true(d >= 0);
  struct seen_ref {
    uint8_t ok;
    double rtol, max_abs;
    int64_t peak_index;
  } ref;
  st = H5Tcreate(H5T_COMPOUND, sizeof ref);
  H5Tinsert(st, "ok", offsetof(struct seen_ref, ok), H5T_NATIVE_UINT8);
  H5Tinsert(st, "rtol", offsetof(struct seen_ref, rtol), H5T_NATIVE_DOUBLE);
  H5Tinsert(st, "max_abs", offsetof(struct seen_ref, max_abs), H5T_NATIVE_DOUBLE);
  H5Tinsert(st, "peak_index", offsetof(struct seen_ref, peak_index), H5T_NATIVE_INT64);
  assert_true(H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, &ref) >= 0);
  H5Tclose(st);
  H5Dclose(d);
  assert_int_equal(ref.ok, 1);
  assert_true(ref.rtol == 3e-5 && ref.max_abs == 3e-7);
  assert_int_equal(ref.peak_index, 17);

  /* The error map: values, chunked, compressed. */
  assert_int_equal(list_group(fu, "errors", names, 4), 1);
  assert_string_equal(names[0], "1");
  d = H5Dopen2(fu, "errors/1", H5P_DEFAULT);
  assert_true(d >= 0);
  attr_str(d, "candidate", buf, sizeof buf);
  assert_string_equal(buf,
                      "tile=16x128 k=256 buf=3 order=1k0 pack=2 prec=high flags=fuse-converts,split-reduction");
  sp = H5Dget_space(d);
  hsize_t dims[2];
  assert_int_equal(H5Sget_simple_extent_dims(sp, dims, NULL), 2);
  assert_int_equal(dims[0], 300);
  assert_int_equal(dims[1], 400);
  H5Sclose(sp);
  float *got = malloc(300 * 400 * sizeof *got);
  assert_true(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
  for (int i = 0; i < 300 * 400; i++)
    if (got[i] != (float)(i % 97) * 0.5f)
      fail_msg("error map element %d is %g", i, (double)got[i]);
  free(got);
  hid_t dcpl = H5Dget_create_plist(d);
  assert_int_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
  hsize_t chunk[2];
  assert_int_equal(H5Pget_chunk(dcpl, 2, chunk), 2);
  assert_true(chunk[0] >= 1 && chunk[0] <= 300 && chunk[1] >= 1 && chunk[1] <= 400);
  int deflate = 0;
  for (int i = 0; i < H5Pget_nfilters(dcpl); i++) {
    unsigned flags, cd[8];
    size_t ncd = 8;
    char fname[64];
    if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, NULL) == H5Z_FILTER_DEFLATE)
      deflate = 1;
  }
  assert_true(deflate);
  H5Pclose(dcpl);
  H5Dclose(d);
  /* Compressed well below the raw 480000 bytes. */
  d = H5Dopen2(fu, "errors/1", H5P_DEFAULT);
  assert_true(H5Dget_storage_size(d) < 300 * 400 * 4 / 2);
  H5Dclose(d);

  H5Gclose(fu);
  H5Gclose(run);
  assert_int_equal(H5Fget_obj_count(f, H5F_OBJ_ALL), 1);
  assert_true(H5Fclose(f) >= 0);
}

/* Two runs in one file (same pid, likely the same second: the second id
 * gets a suffix); the first run and its fusion stay. */
static void test_append_keeps_earlier_runs(void **state) {
  (void)state;
  const char *path = tdf_path("two.h5");
  unlink(path);
  store_one_run(path, "first", 0x1111);
  store_one_run(path, "second", 0x2222);

  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  char names[4][64], buf[256], fus[4][64];
  assert_int_equal(list_group(f, "runs", names, 4), 2);
  assert_string_not_equal(names[0], names[1]);
  int seen_first = 0, seen_second = 0;
  for (int i = 0; i < 2; i++) {
    char p[128];
    snprintf(p, sizeof p, "runs/%s", names[i]);
    hid_t g = H5Gopen2(f, p, H5P_DEFAULT);
    attr_str(g, "command", buf, sizeof buf);
    assert_int_equal(list_group(g, "fusions", fus, 4), 1);
    if (strcmp(buf, "first") == 0) {
      seen_first = 1;
      assert_string_equal(fus[0], "0000000000001111");
    } else {
      seen_second = 1;
      assert_string_equal(fus[0], "0000000000002222");
    }
    H5Gclose(g);
  }
  assert_true(seen_first && seen_second);
  /* Same process: when both ids come from the same second, one is "-2". */
  size_t n0 = strlen(names[0]), n1 = strlen(names[1]);
  if (n0 != n1)
    assert_true(strcmp(names[n0 > n1 ? 0 : 1] + (n0 > n1 ? n0 : n1) - 2, "-2") == 0);
  assert_true(H5Fclose(f) >= 0);
}

/* The same fusion twice in one run: the second group is <fp>-2. */
static void test_same_fusion_twice(void **state) {
  (void)state;
  const char *path = tdf_path("twice.h5");
  unlink(path);
  hlo_error err = {0};
  tn_fusion_result r;
  make_result(&r, 0xabc);
  tn_store *s = begin(path, "twice");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  assert_int_equal(tn_store_end_run(s, "complete", &err), 0);
  tn_fusion_result_free(&r);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  char runs[2][64], fus[4][64], p[128];
  list_group(f, "runs", runs, 2);
  snprintf(p, sizeof p, "runs/%s/fusions", runs[0]);
  assert_int_equal(list_group(f, p, fus, 4), 2);
  assert_string_equal(fus[0], "0000000000000abc");
  assert_string_equal(fus[1], "0000000000000abc-2");
  assert_true(H5Fclose(f) >= 0);
}

/* A scalar error map has nothing to chunk and stays contiguous; a run
 * that is never ended stays "running". */
static void test_scalar_error_map(void **state) {
  (void)state;
  const char *path = tdf_path("scalar.h5");
  unlink(path);
  hlo_error err = {0};
  tn_fusion_result r;
  make_result(&r, 0x5ca1a);
  r.error_maps[0].rank = 0;
  r.error_maps[0].data[0] = 0.75f;
  tn_store *s = begin(path, "scalar");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  tn_store_close(s);
  tn_fusion_result_free(&r);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  char runs[2][64], p[256], buf[64];
  list_group(f, "runs", runs, 2);
  snprintf(p, sizeof p, "runs/%s/fusions/000000000005ca1a/errors/1", runs[0]);
  hid_t d = H5Dopen2(f, p, H5P_DEFAULT);
  assert_true(d >= 0);
  float v = 0;
  assert_true(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0);
  assert_true(v == 0.75f);
  hid_t dcpl = H5Dget_create_plist(d);
  assert_int_not_equal(H5Pget_layout(dcpl), H5D_CHUNKED);
  H5Pclose(dcpl);
  H5Dclose(d);
  snprintf(p, sizeof p, "runs/%s", runs[0]);
  hid_t g = H5Gopen2(f, p, H5P_DEFAULT);
  attr_str(g, "status", buf, sizeof buf);
  assert_string_equal(buf, "running");
  attr_str(g, "finished", buf, sizeof buf);
  assert_string_equal(buf, "");
  H5Gclose(g);
  assert_true(H5Fclose(f) >= 0);
}

/* ---- failures leave the file alone --------------------------------------------- */

static char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  assert_int_equal(fread(b, 1, (size_t)len, fp), (size_t)len);
  fclose(fp);
  *n = (size_t)len;
  return b;
}

static void assert_same_bytes(const char *path, const char *before, size_t n) {
  size_t m = 0;
  char *now = slurp(path, &m);
  assert_int_equal(m, n);
  assert_memory_equal(now, before, n);
  free(now);
}

static void test_refuses_other_files(void **state) {
  (void)state;
  hlo_error err = {0};
  tn_run_info run;
  /* Not HDF5 at all. */
  const char *path = tdf_path("text.h5");
  FILE *fp = fopen(path, "w");
  fputs("not hdf5\n", fp);
  fclose(fp);
  memset(&run, 0, sizeof run);
  assert_null(tn_store_begin_run(path, &run, &err));
  assert_non_null(strstr(err.msg, "not an HDF5 file"));
  assert_non_null(strstr(err.msg, "text.h5"));
  assert_same_bytes(path, "not hdf5\n", 9);
  /* HDF5, but not ours (an --eval file, say). */
  path = tdf_path("foreign.h5");
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  H5Fclose(f);
  size_t n;
  char *before = slurp(path, &n);
  memset(&run, 0, sizeof run);
  assert_null(tn_store_begin_run(path, &run, &err));
  assert_non_null(strstr(err.msg, "not a tune results file"));
  assert_same_bytes(path, before, n);
  free(before);
  /* A directory on the way that is a file. */
  memset(&run, 0, sizeof run);
  assert_null(tn_store_begin_run(tdf_path("text.h5/x.h5"), &run, &err));
  assert_non_null(strstr(err.msg, "x.h5"));
  assert_int_equal(count_temps(), 0);
}

/* An unwritable directory: no run can start and none can be added to;
 * the file stays as it was.  (root writes anywhere, so it skips.) */
static void test_unwritable_directory(void **state) {
  (void)state;
  if (geteuid() == 0)
    skip();
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ro", tdf_dir());
  assert_int_equal(mkdir(dir, 0755), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/ro.h5", dir);
  hlo_error err = {0};
  tn_fusion_result r;
  make_result(&r, 0x77);
  tn_store *s = begin(path, "ro");
  assert_int_equal(chmod(dir, 0555), 0);
  size_t n;
  char *before = slurp(path, &n);
  assert_int_not_equal(tn_store_add_fusion(s, &r, &err), 0);
  assert_non_null(strstr(err.msg, "ro.h5"));
  assert_non_null(strstr(err.msg, "Permission denied"));
  assert_int_not_equal(tn_store_end_run(s, "complete", &err), 0);
  tn_run_info run;
  memset(&run, 0, sizeof run);
  assert_null(tn_store_begin_run(path, &run, &err));
  assert_same_bytes(path, before, n);
  free(before);
  chmod(dir, 0755);
  tn_fusion_result_free(&r);
}

/* A disk that fills up mid-copy (a file-size limit, which binds root too):
 * the add fails with the system's reason, no temporary stays behind, the
 * file is untouched, and once there is room the next add works. */
static void test_full_disk(void **state) {
  (void)state;
  const char *path = tdf_path("full.h5");
  unlink(path);
  hlo_error err = {0};
  tn_fusion_result r;
  make_result(&r, 0x99);
  tn_store *s = begin(path, "full");
  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  size_t n;
  char *before = slurp(path, &n);

  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = (rlim_t)n / 2;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int rc = tn_store_add_fusion(s, &r, &err);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);

  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(err.msg, "full.h5"));
  assert_non_null(strstr(err.msg, "File too large"));
  assert_same_bytes(path, before, n);
  assert_int_equal(count_temps(), 0);
  free(before);

  assert_int_equal(tn_store_add_fusion(s, &r, &err), 0);
  assert_int_equal(tn_store_end_run(s, "complete", &err), 0);
  tn_fusion_result_free(&r);
}

/* The file vanishing mid-run is an error for the next add, not a crash. */
static void test_file_removed_mid_run(void **state) {
  (void)state;
  const char *path = tdf_path("gone.h5");
  unlink(path);
  hlo_error err = {0};
  tn_store *s = begin(path, "gone");
  assert_int_equal(unlink(path), 0);
  tn_fusion_result r;
  make_result(&r, 0x1);
  assert_int_not_equal(tn_store_add_fusion(s, &r, &err), 0);
  assert_non_null(strstr(err.msg, "No such file"));
  assert_int_not_equal(tn_store_end_run(s, "complete", &err), 0);
  tn_fusion_result_free(&r);
}

/* Runs made within one second are ordered by when they were made, not by
 * their ids: "b" is made first, then "a", so "a" is the latest (the id
 * order would say "b").  With the process id in the id, text order once
 * put a run after the one that followed it when the pid crossed 10000 or
 * wrapped at pid_max, and a walk of make check read the older run as the
 * newest. */
static void test_runs_in_one_second(void **state) {
  (void)state;
  const char *path = tdf_path("second.h5");
  hlo_error err = {0};
  const char *ids[2] = {"b", "a"};
  for (int k = 0; k < 2; k++) {
    tn_run_info run;
    memset(&run, 0, sizeof run);
    snprintf(run.id, sizeof run.id, "%s", ids[k]);
    snprintf(run.machine, sizeof run.machine, "tpu-v5e");
    snprintf(run.compiler, sizeof run.compiler, "stable");
    tn_store *s = tn_store_begin_run(path, &run, &err);
    if (!s || tn_store_end_run(s, "complete", &err) != 0) /* end_run frees s */
      fail_msg("run %s: %s", ids[k], err.msg);
  }
  tn_run_info *runs = NULL;
  int n = 0;
  char version[64];
  if (tn_results_list_runs(path, &runs, &n, version, sizeof version, &err) != 0)
    fail_msg("list: %s", err.msg);
  assert_int_equal(n, 2);
  if (strcmp(runs[0].started, runs[1].started) != 0) { /* a second boundary fell between them */
    free(runs);
    skip();
  }
  assert_string_equal(runs[0].id, "b");
  assert_string_equal(runs[1].id, "a");
  assert_true(runs[0].created_ns > 0 && runs[0].created_ns <= runs[1].created_ns);
  free(runs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_append_keeps_earlier_runs),
      cmocka_unit_test(test_same_fusion_twice),
      cmocka_unit_test(test_scalar_error_map),
      cmocka_unit_test(test_refuses_other_files),
      cmocka_unit_test(test_unwritable_directory),
      cmocka_unit_test(test_full_disk),
      cmocka_unit_test(test_file_removed_mid_run),
      cmocka_unit_test(test_runs_in_one_second),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
