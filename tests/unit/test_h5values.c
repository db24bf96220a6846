/* test_h5values.c — hlo_values to HDF5 and back (tuner/store/h5values.c).
 *
 * Round trips write every storable element type and read it back bit for
 * bit; the layout tests then look at the file with plain HDF5 calls, the
 * way h5py would, to check what another tool sees (HDF5 type class and
 * width, dtype attribute, scalar dataspace).  The error tests check that a
 * bad file gives a message naming the dataset and what is wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/h5util.h"
#include "store/h5values.h"
#include "hlo/hlo_dtype.h"
#include "tmpdir_fixture.h"

static int setup_all(void **state) {
  (void)state;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return tdf_make("test_h5values");
}

/* Fills v's bytes with a pattern that depends on the type and the index, so
 * a byte swap, a lost element or a converted value shows up as a diff. */
static void fill_pattern(hlo_value *v) {
  unsigned char *p = v->data;
  size_t n = (size_t)v->count * v->elem_size;
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(i * 37u + (unsigned)v->type * 11u + 5u);
}

/* A valid element for types whose byte patterns are not all valid. */
static void make_valid(hlo_value *v) {
  int bits = hlo_etype_bits(v->type);
  for (int64_t i = 0; i < v->count; i++) {
    if (v->type == HLO_PRED)
      ((uint8_t *)v->data)[i] = (uint8_t)(i & 1);
    else if (bits < 8 && hlo_etype_class(v->type) == HLO_CLASS_SINT)
      hlo_value_set_i64(v, i, (int64_t)(i % 7) - 3);
    else if (bits < 8)
      ((uint8_t *)v->data)[i] = (uint8_t)(i % (1 << bits));
  }
}

static void roundtrip_type(hlo_etype t, int rank, const int64_t *dims) {
  const char *path = tdf_path("rt.h5");
  hlo_error err = {0};
  hlo_value *v = hlo_value_array(t, rank, dims);
  assert_non_null(v);
  fill_pattern(v);
  make_valid(v);
  hid_t f = tn_h5_create(path, &err);
  assert_true(f >= 0);
  assert_int_equal(tn_h5_write_array(f, "x", v, &err), 0);
  assert_int_equal(tn_h5_close(f, &err), 0);

  f = tn_h5_open_read(path, &err);
  assert_true(f >= 0);
  char name[64];
  hid_t d = H5Dopen2(f, "x", H5P_DEFAULT);
  assert_true(d >= 0);
  assert_int_equal(tn_h5_attr_get_str(d, "dtype", name, sizeof name, &err), 0);
  assert_string_equal(name, hlo_etype_name(t));
  H5Dclose(d);

  hlo_shape want = {.type = t, .rank = rank, .dims = (int64_t *)dims};
  hlo_value *back = NULL;
  if (tn_h5_read_array(f, "x", &want, "parameter 0", &back, &err) != 0)
    fail_msg("%s: %s", hlo_etype_name(t), err.msg);
  assert_true(hlo_value_equal(v, back));
  hlo_value_unref(back);
  /* Reading without an expectation gives the same value. */
  back = NULL;
  assert_int_equal(tn_h5_read_array(f, "/x", NULL, NULL, &back, &err), 0);
  assert_true(hlo_value_equal(v, back));
  hlo_value_unref(back);
  assert_int_equal(tn_h5_close(f, &err), 0);
  hlo_value_unref(v);
}

static void test_roundtrip_every_type(void **state) {
  (void)state;
  static const int64_t dims[] = {3, 5};
  for (int t = 1; t < HLO_ETYPE_COUNT; t++) {
    if (hlo_etype_host_size((hlo_etype)t) == 0)
      continue; /* token, opaque, tuple */
    roundtrip_type((hlo_etype)t, 2, dims);
    roundtrip_type((hlo_etype)t, 0, NULL); /* scalar */
  }
}

static void test_roundtrip_empty_and_high_rank(void **state) {
  (void)state;
  static const int64_t empty[] = {4, 0, 2};
  roundtrip_type(HLO_F32, 3, empty);
  static const int64_t deep[] = {1, 2, 1, 3, 1, 2};
  roundtrip_type(HLO_S32, 6, deep);
}

/* Opens dataset path in a fresh read of file and returns its type and
 * rank (-1 for a scalar dataspace is reported as 0 with *scalar set). */
static void inspect(const char *file, const char *path, H5T_class_t *cls, size_t *size, int *sign, int *ndims,
                    int *scalar) {
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  assert_true(d >= 0);
  hid_t t = H5Dget_type(d), s = H5Dget_space(d);
  *cls = H5Tget_class(t);
  *size = H5Tget_size(t);
  *sign = *cls == H5T_INTEGER ? H5Tget_sign(t) != H5T_SGN_NONE : -1;
  *scalar = H5Sget_simple_extent_type(s) == H5S_SCALAR;
  *ndims = H5Sget_simple_extent_ndims(s);
  H5Tclose(t);
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
}

static void write_one(const char *file, hlo_value *v) {
  hlo_error err = {0};
  hid_t f = tn_h5_create(file, &err);
  assert_true(f >= 0);
  if (tn_h5_write_array(f, "x", v, &err) != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(tn_h5_close(f, &err), 0);
}

static void test_layout_as_other_tools_see_it(void **state) {
  (void)state;
  const char *file = tdf_path("layout.h5");
  static const int64_t d4[] = {4};
  struct {
    hlo_etype t;
    H5T_class_t cls;
    size_t size;
    int sign;
  } cases[] = {
      {HLO_F32, H5T_FLOAT, 4, -1},       {HLO_F64, H5T_FLOAT, 8, -1},
      {HLO_F16, H5T_FLOAT, 2, -1},       {HLO_BF16, H5T_INTEGER, 2, 0},
      {HLO_F8E4M3FN, H5T_INTEGER, 1, 0}, {HLO_F8E5M2, H5T_INTEGER, 1, 0},
      {HLO_PRED, H5T_INTEGER, 1, 0},     {HLO_S4, H5T_INTEGER, 1, 1},
      {HLO_U4, H5T_INTEGER, 1, 0},       {HLO_S8, H5T_INTEGER, 1, 1},
      {HLO_S32, H5T_INTEGER, 4, 1},      {HLO_U64, H5T_INTEGER, 8, 0},
      {HLO_C64, H5T_COMPOUND, 8, -1},    {HLO_C128, H5T_COMPOUND, 16, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hlo_value *v = hlo_value_array(cases[i].t, 1, d4);
    write_one(file, v);
    H5T_class_t cls;
    size_t size;
    int sign, nd, scalar;
    inspect(file, "x", &cls, &size, &sign, &nd, &scalar);
    assert_int_equal(cls, cases[i].cls);
    assert_int_equal(size, cases[i].size);
    assert_int_equal(sign, cases[i].sign);
    assert_int_equal(nd, 1);
    assert_false(scalar);
    hlo_value_unref(v);
  }
  /* A scalar is a scalar dataspace, shape (). */
  hlo_value *s = hlo_value_array(HLO_F32, 0, NULL);
  write_one(file, s);
  H5T_class_t cls;
  size_t size;
  int sign, nd, scalar;
  inspect(file, "x", &cls, &size, &sign, &nd, &scalar);
  assert_true(scalar);
  assert_int_equal(nd, 0);
  hlo_value_unref(s);
}

/* f16 on disk is an IEEE half: reading it as native float must give the
 * same numbers, which is what h5py's float16 mapping relies on. */
static void test_f16_is_ieee_half(void **state) {
  (void)state;
  const char *file = tdf_path("f16.h5");
  static const int64_t d[] = {5};
  hlo_value *v = hlo_value_array(HLO_F16, 1, d);
  const uint16_t bits[5] = {0x3C00 /* 1 */, 0xC000 /* -2 */, 0x0001 /* 2^-24 */, 0x7BFF /* 65504 */,
                            0xFC00 /* -inf */};
  memcpy(v->data, bits, sizeof bits);
  write_one(file, v);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "x", H5P_DEFAULT);
  float got[5];
  assert_true(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
  assert_true(got[0] == 1.0f);
  assert_true(got[1] == -2.0f);
  assert_true(got[2] == 0x1p-24f);
  assert_true(got[3] == 65504.0f);
  assert_true(got[4] < -3.0e38f);
  H5Dclose(ds);
  H5Fclose(f);
  hlo_value_unref(v);
}

static void test_bf16_bits_and_pred_values(void **state) {
  (void)state;
  const char *file = tdf_path("bits.h5");
  static const int64_t d[] = {4};
  hlo_value *b = hlo_value_array(HLO_BF16, 1, d);
  const uint16_t bits[4] = {0x3F80 /* 1.0 */, 0xBF80 /* -1.0 */, 0x7FC0 /* NaN */, 0x0001 /* subnormal */};
  memcpy(b->data, bits, sizeof bits);
  write_one(file, b);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "x", H5P_DEFAULT);
  uint16_t got[4];
  assert_true(H5Dread(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
  assert_memory_equal(got, bits, sizeof bits);
  H5Dclose(ds);
  H5Fclose(f);
  hlo_value_unref(b);

  /* pred: any nonzero byte in memory is written as exactly 1. */
  hlo_value *p = hlo_value_array(HLO_PRED, 1, d);
  const uint8_t pv[4] = {0, 1, 7, 255};
  memcpy(p->data, pv, sizeof pv);
  write_one(file, p);
  f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  ds = H5Dopen2(f, "x", H5P_DEFAULT);
  uint8_t pg[4];
  assert_true(H5Dread(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pg) >= 0);
  assert_int_equal(pg[0], 0);
  assert_int_equal(pg[1], 1);
  assert_int_equal(pg[2], 1);
  assert_int_equal(pg[3], 1);
  H5Dclose(ds);
  H5Fclose(f);
  hlo_value_unref(p);
}

static void test_c64_pairs(void **state) {
  (void)state;
  const char *file = tdf_path("c64.h5");
  static const int64_t d[] = {2};
  hlo_value *v = hlo_value_array(HLO_C64, 1, d);
  const float pairs[4] = {1.5f, -2.0f, 0.25f, 3.0f};
  memcpy(v->data, pairs, sizeof pairs);
  write_one(file, v);
  /* Read member "i" alone through a compound of one field, as h5py does
   * when it builds its complex view by member names. */
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, "x", H5P_DEFAULT);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(float));
  H5Tinsert(mt, "i", 0, H5T_NATIVE_FLOAT);
  float im[2];
  assert_true(H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, im) >= 0);
  assert_true(im[0] == -2.0f && im[1] == 3.0f);
  H5Tclose(mt);
  H5Dclose(ds);
  H5Fclose(f);
  hlo_value_unref(v);
}

/* ---- sets and their errors ----------------------------------------------- */

/* A computation with the given parameter shapes, built by hand so this test
 * needs no parser. */
typedef struct fake_comp {
  hlo_computation c;
  hlo_instr p[4];
  hlo_instr *pp[4];
} fake_comp;

static void fake_init(fake_comp *fc, int n, const hlo_shape *shapes) {
  memset(fc, 0, sizeof *fc);
  fc->c.name = "main";
  fc->c.nparams = n;
  fc->c.params = fc->pp;
  for (int i = 0; i < n; i++) {
    fc->p[i].op = HLO_OP_PARAMETER;
    fc->p[i].shape = shapes[i];
    fc->p[i].parameter_number = i;
    fc->pp[i] = &fc->p[i];
  }
}

static void test_inputs_outputs_sets(void **state) {
  (void)state;
  const char *file = tdf_path("sets.h5");
  hlo_error err = {0};
  static int64_t d34[] = {4, 3}, d2[] = {2};
  hlo_value *a = hlo_value_array(HLO_F32, 2, d34), *b = hlo_value_array(HLO_BF16, 0, NULL);
  fill_pattern(a);
  fill_pattern(b);
  hlo_value *args[2] = {a, b};

  /* outputs: the tuple (a, (b, c)) flattens to 0, 1, 2 */
  hlo_value *c = hlo_value_array(HLO_S32, 1, d2);
  fill_pattern(c);
  hlo_value *inner_e[2] = {hlo_value_ref(b), hlo_value_ref(c)};
  hlo_value *inner = hlo_value_tuple(2, inner_e);
  hlo_value *outer_e[2] = {hlo_value_ref(a), inner};
  hlo_value *root = hlo_value_tuple(2, outer_e);

  hid_t f = tn_h5_create(file, &err);
  assert_int_equal(tn_h5_write_inputs(f, "inputs", 2, args, &err), 0);
  assert_int_equal(tn_h5_write_outputs(f, "outputs", root, &err), 0);
  assert_int_equal(tn_h5_write_outputs(f, "replicas/1/outputs", root, &err), 0);
  /* A second /outputs is refused rather than merged. */
  assert_int_equal(tn_h5_write_outputs(f, "outputs", root, &err), -1);
  assert_non_null(strstr(err.msg, "/outputs"));
  assert_int_equal(tn_h5_close(f, &err), 0);

  f = tn_h5_open_read(file, &err);
  hlo_shape shapes[2] = {{.type = HLO_F32, .rank = 2, .dims = d34}, {.type = HLO_BF16, .rank = 0}};
  fake_comp fc;
  fake_init(&fc, 2, shapes);
  hlo_value *got[2] = {NULL, NULL};
  if (tn_h5_read_inputs(f, "inputs", &fc.c, got, &err) != 0)
    fail_msg("%s", err.msg);
  assert_true(hlo_value_equal(got[0], a));
  assert_true(hlo_value_equal(got[1], b));
  hlo_value_unref(got[0]);
  hlo_value_unref(got[1]);

  hlo_shape inner_s[2] = {{.type = HLO_BF16, .rank = 0}, {.type = HLO_S32, .rank = 1, .dims = d2}};
  hlo_shape outer_s[2] = {shapes[0], {.type = HLO_TUPLE, .ntuple = 2, .elems = inner_s}};
  hlo_shape root_s = {.type = HLO_TUPLE, .ntuple = 2, .elems = outer_s};
  hlo_value *back = NULL;
  assert_int_equal(tn_h5_read_outputs(f, "outputs", &root_s, &back, &err), 0);
  assert_true(hlo_value_equal(back, root));
  hlo_value_unref(back);
  back = NULL;
  assert_int_equal(tn_h5_read_outputs(f, "/replicas/1/outputs", &root_s, &back, &err), 0);
  assert_true(hlo_value_equal(back, root));
  hlo_value_unref(back);
  assert_int_equal(tn_h5_close(f, &err), 0);

  hlo_value_unref(root);
  hlo_value_unref(a);
  hlo_value_unref(b);
  hlo_value_unref(c);
}

static void test_tuple_parameter(void **state) {
  (void)state;
  const char *file = tdf_path("tparam.h5");
  hlo_error err = {0};
  static int64_t d3[] = {3};
  hlo_value *x = hlo_value_array(HLO_S8, 1, d3), *y = hlo_value_array(HLO_F64, 0, NULL);
  fill_pattern(x);
  fill_pattern(y);
  hlo_value *e[2] = {x, y};
  hlo_value *t = hlo_value_tuple(2, e);
  hid_t f = tn_h5_create(file, &err);
  assert_int_equal(tn_h5_write_inputs(f, "inputs", 1, &t, &err), 0);
  assert_int_equal(tn_h5_close(f, &err), 0);

  f = tn_h5_open_read(file, &err);
  hlo_value *leaf = NULL;
  assert_int_equal(tn_h5_read_array(f, "inputs/0/1", NULL, NULL, &leaf, &err), 0);
  assert_true(hlo_value_equal(leaf, y));
  hlo_value_unref(leaf);
  hlo_shape es[2] = {{.type = HLO_S8, .rank = 1, .dims = d3}, {.type = HLO_F64}};
  hlo_shape ts = {.type = HLO_TUPLE, .ntuple = 2, .elems = es};
  fake_comp fc;
  fake_init(&fc, 1, &ts);
  hlo_value *got = NULL;
  if (tn_h5_read_inputs(f, "inputs", &fc.c, &got, &err) != 0)
    fail_msg("%s", err.msg);
  assert_true(hlo_value_equal(got, t));
  hlo_value_unref(got);
  assert_int_equal(tn_h5_close(f, &err), 0);
  hlo_value_unref(t);
}

/* Writes a raw dataset with plain HDF5, like numpy through h5py would. */
static void raw_dataset(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data,
                        const char *dtype_attr) {
  hid_t s = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t d = H5Dcreate2(f, path, type, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(d >= 0);
  assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  if (dtype_attr) {
    hlo_error err;
    assert_int_equal(tn_h5_attr_set_str(d, "dtype", dtype_attr, &err), 0);
  }
  H5Pclose(lcpl);
  H5Dclose(d);
  H5Sclose(s);
}

static void test_foreign_files(void **state) {
  (void)state;
  const char *file = tdf_path("foreign.h5");
  hlo_error err = {0};
  hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t d3[] = {3};
  const float fx[3] = {1, 2, 3};
  raw_dataset(f, "inputs/0", H5T_NATIVE_FLOAT, 1, d3, fx, NULL);
  /* bf16 bits stored as a signed int16 by some tool: bits come through. */
  const int16_t bx[3] = {(int16_t)0xBF80, 0x3F80, 0};
  raw_dataset(f, "inputs/1", H5T_NATIVE_INT16, 1, d3, bx, "bf16");
  /* numpy bool through h5py is an 8-bit enum. */
  hid_t en = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t fv = 0, tv = 1;
  H5Tenum_insert(en, "FALSE", &fv);
  H5Tenum_insert(en, "TRUE", &tv);
  const int8_t px[3] = {1, 0, 1};
  raw_dataset(f, "inputs/2", en, 1, d3, px, NULL);
  H5Tclose(en);
  const double sx = -0.5;
  raw_dataset(f, "inputs/3", H5T_NATIVE_DOUBLE, 0, NULL, &sx, NULL);
  H5Fclose(f);

  int64_t d3i[] = {3};
  hlo_shape shapes[4] = {{.type = HLO_F32, .rank = 1, .dims = d3i},
                         {.type = HLO_BF16, .rank = 1, .dims = d3i},
                         {.type = HLO_PRED, .rank = 1, .dims = d3i},
                         {.type = HLO_F64}};
  fake_comp fc;
  fake_init(&fc, 4, shapes);
  hlo_value *got[4] = {0};
  f = tn_h5_open_read(file, &err);
  if (tn_h5_read_inputs(f, "inputs", &fc.c, got, &err) != 0)
    fail_msg("%s", err.msg);
  assert_true(hlo_value_get_f64(got[0], 2) == 3.0);
  assert_true(hlo_value_get_f64(got[1], 0) == -1.0);
  assert_true(hlo_value_get_f64(got[1], 1) == 1.0);
  assert_int_equal(((uint8_t *)got[2]->data)[0], 1);
  assert_int_equal(((uint8_t *)got[2]->data)[1], 0);
  assert_true(hlo_value_get_f64(got[3], 0) == -0.5);
  for (int i = 0; i < 4; i++)
    hlo_value_unref(got[i]);

  /* Fewer parameters than datasets: the extra ones are not ignored. */
  fake_init(&fc, 3, shapes);
  assert_int_equal(tn_h5_read_inputs(f, "inputs", &fc.c, got, &err), -1);
  assert_non_null(strstr(err.msg, "/inputs: holds 4 entries but main takes 3 parameters"));
  assert_int_equal(tn_h5_close(f, &err), 0);
}

static void expect_read_error(const char *file, const hlo_shape *shapes, int n, const char *want) {
  hlo_error err = {0};
  fake_comp fc;
  fake_init(&fc, n, shapes);
  hlo_value *got[4] = {0};
  hid_t f = tn_h5_open_read(file, &err);
  assert_true(f >= 0);
  assert_int_equal(tn_h5_read_inputs(f, "inputs", &fc.c, got, &err), -1);
  if (!strstr(err.msg, want))
    fail_msg("wanted '%s' in '%s'", want, err.msg);
  for (int i = 0; i < n; i++)
    assert_null(got[i]);
  assert_int_equal(tn_h5_close(f, &err), 0);
}

static void test_bad_files(void **state) {
  (void)state;
  const char *file = tdf_path("bad.h5");
  hlo_error err = {0};
  hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t d34[] = {3, 4}, d3[] = {3};
  float z[12] = {0};
  raw_dataset(f, "inputs/0", H5T_NATIVE_FLOAT, 1, d3, z, NULL);
  raw_dataset(f, "inputs/1", H5T_NATIVE_FLOAT, 2, d34, z, NULL);
  H5Fclose(f);

  int64_t p43[] = {4, 3}, p3[] = {3};
  hlo_shape good0 = {.type = HLO_F32, .rank = 1, .dims = p3};
  /* wrong shape, named with the parameter's own shape */
  hlo_shape s1[2] = {good0, {.type = HLO_F32, .rank = 2, .dims = p43}};
  expect_read_error(file, s1, 2, "/inputs/1: shape [3,4] does not match parameter 1 f32[4,3]");
  /* wrong element type */
  hlo_shape s2[1] = {{.type = HLO_F64, .rank = 1, .dims = p3}};
  expect_read_error(file, s2, 1, "/inputs/0: element type f32 does not match parameter 0 f64[3]");
  /* missing dataset */
  hlo_shape s3[3] = {good0, {.type = HLO_F32, .rank = 2, .dims = (int64_t[]){3, 4}}, good0};
  expect_read_error(file, s3, 3, "/inputs/2: no such dataset");
  /* scalar parameter, array dataset */
  hlo_shape s4[1] = {{.type = HLO_F32}};
  expect_read_error(file, s4, 1, "/inputs/0: shape [3] does not match parameter 0 f32[]");

  /* a dtype the storage cannot hold, and a value out of range for s4 */
  f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  raw_dataset(f, "inputs/0", H5T_NATIVE_FLOAT, 1, d3, z, "bf16");
  H5Fclose(f);
  hlo_shape b3[1] = {{.type = HLO_BF16, .rank = 1, .dims = p3}};
  expect_read_error(file, b3, 1, "/inputs/0: dtype bf16 is stored as a 16-bit integer (the bit pattern), but the dataset holds a 32-bit float");
  f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const int8_t big[3] = {1, 9, -2};
  raw_dataset(f, "inputs/0", H5T_NATIVE_INT8, 1, d3, big, "s4");
  H5Fclose(f);
  hlo_shape s4b[1] = {{.type = HLO_S4, .rank = 1, .dims = p3}};
  expect_read_error(file, s4b, 1, "/inputs/0: element 1 (9) does not fit in s4");
  f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  raw_dataset(f, "inputs/0", H5T_NATIVE_INT8, 1, d3, big, "f99");
  H5Fclose(f);
  expect_read_error(file, s4b, 1, "/inputs/0: dtype attribute 'f99' is not an HLO array element type");

  /* no /inputs group at all */
  f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  expect_read_error(file, s4b, 1, "/inputs: no such group");

  /* not a file / not HDF5 */
  assert_true(tn_h5_open_read(tdf_path("absent.h5"), &err) < 0);
  assert_non_null(strstr(err.msg, "No such file or directory"));
  FILE *t = fopen(file, "w");
  fputs("not hdf5\n", t);
  fclose(t);
  assert_true(tn_h5_open_read(file, &err) < 0);
  assert_non_null(strstr(err.msg, "not an HDF5 file"));
}

static void test_attributes(void **state) {
  (void)state;
  const char *file = tdf_path("attrs.h5");
  hlo_error err = {0};
  hid_t f = tn_h5_create(file, &err);
  assert_int_equal(tn_h5_attr_set_str(f, "tool", "tune", &err), 0);
  assert_int_equal(tn_h5_attr_set_u64(f, "seed", UINT64_MAX, &err), 0);
  assert_int_equal(tn_h5_attr_set_i64(f, "replicas", -3, &err), 0);
  assert_int_equal(tn_h5_attr_set_str(f, "tool", "again", &err), -1);
  char buf[8];
  assert_int_equal(tn_h5_attr_get_str(f, "tool", buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "tune");
  assert_int_equal(tn_h5_attr_get_str(f, "tool", buf, 4, &err), -1);
  assert_int_equal(tn_h5_attr_get_str(f, "seed", buf, sizeof buf, &err), -1);
  assert_int_equal(tn_h5_attr_get_str(f, "nope", buf, sizeof buf, &err), -1);
  uint64_t seed = 0;
  hid_t a = H5Aopen(f, "seed", H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_UINT64, &seed);
  H5Aclose(a);
  assert_true(seed == UINT64_MAX);
  assert_int_equal(tn_h5_close(f, &err), 0);
}

/* tn_h5_exists answers no for a missing group on the way (where bare
 * H5Lexists fails), so that its -1 can be kept for real failures: a
 * dataset where a group should be, and (walk.sh --under) no memory. */
static void test_exists(void **state) {
  (void)state;
  const char *file = tdf_path("exists.h5");
  hlo_error err = {0};
  hid_t f = tn_h5_create(file, &err);
  assert_true(f >= 0);
  int32_t one = 1;
  hsize_t dim = 1;
  raw_dataset(f, "a/b/d", H5T_NATIVE_INT32, 1, &dim, &one, NULL);
  raw_dataset(f, "x", H5T_NATIVE_INT32, 1, &dim, &one, NULL);
  assert_int_equal(tn_h5_attr_set_str(f, "tool", "tune", &err), 0);
  assert_int_equal(tn_h5_exists(f, "a/b/d", &err), 1);
  assert_int_equal(tn_h5_exists(f, "/a/b", &err), 1);
  assert_int_equal(tn_h5_exists(f, "a/b/e", &err), 0);
  assert_int_equal(tn_h5_exists(f, "a/zz/d", &err), 0);
  assert_true(H5Lexists(f, "a/zz/d", H5P_DEFAULT) < 0); /* why the helper exists */
  assert_int_equal(tn_h5_exists(f, "zz", &err), 0);
  assert_int_equal(tn_h5_exists(f, "x/y", &err), -1);
  assert_non_null(strstr(err.msg, "x/y: HDF5 cannot look it up"));
  assert_int_equal(tn_h5_attr_exists(f, "tool", &err), 1);
  assert_int_equal(tn_h5_attr_exists(f, "nope", &err), 0);
  /* an optional number: read, absent (the value untouched), or not one */
  assert_int_equal(tn_h5_attr_set_i64(f, "part", 7, &err), 0);
  int64_t v = -1;
  assert_int_equal(tn_h5_attr_get_num_opt(f, "part", H5T_NATIVE_INT64, &v, &err), 1);
  assert_int_equal(v, 7);
  v = -1;
  assert_int_equal(tn_h5_attr_get_num_opt(f, "nope", H5T_NATIVE_INT64, &v, &err), 0);
  assert_int_equal(v, -1);
  assert_int_equal(tn_h5_attr_get_num_opt(f, "tool", H5T_NATIVE_INT64, &v, &err), -1);
  assert_non_null(strstr(err.msg, "attribute 'tool' is not a number"));
  assert_int_equal(tn_h5_close(f, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_every_type),
      cmocka_unit_test(test_roundtrip_empty_and_high_rank),
      cmocka_unit_test(test_layout_as_other_tools_see_it),
      cmocka_unit_test(test_f16_is_ieee_half),
      cmocka_unit_test(test_bf16_bits_and_pred_values),
      cmocka_unit_test(test_c64_pairs),
      cmocka_unit_test(test_inputs_outputs_sets),
      cmocka_unit_test(test_tuple_parameter),
      cmocka_unit_test(test_foreign_files),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_attributes),
      cmocka_unit_test(test_exists),
  };
  return cmocka_run_group_tests(tests, setup_all, tdf_teardown);
}
