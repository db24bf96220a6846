/* store_isolate.c — an isolation run in the results file (layout in
 * store_isolate.h, every column in README "HDF5 results schema"). */
#include "store_isolate.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "h5util.h"
#include "h5values.h"
#include "store_table.h"

#define NUM TN_COL_NUM
#define ARR TN_COL_ARR
#define STR TN_COL_STRING
#define NCOLS TN_COL_COUNT

/* ---- the tables ---------------------------------------------------------- */

static const tn_store_column cmp_cols[] = {
    NUM(tn_siso_cmp, done, TN_COL_U8),       NUM(tn_siso_cmp, within, TN_COL_U8),
    NUM(tn_siso_cmp, identical, TN_COL_U8),  NUM(tn_siso_cmp, leaf, TN_COL_I32),
    NUM(tn_siso_cmp, count, TN_COL_I64),     NUM(tn_siso_cmp, mismatches, TN_COL_I64),
    NUM(tn_siso_cmp, max_abs, TN_COL_F64),   NUM(tn_siso_cmp, max_rel, TN_COL_F64),
    NUM(tn_siso_cmp, rank, TN_COL_I32),      ARR(tn_siso_cmp, peak, TN_COL_I64),
};

static const tn_store_column unit_head_cols[] = {
    NUM(tn_siso_unit, index, TN_COL_I32),         STR(tn_siso_unit, name),
    STR(tn_siso_unit, kind),                      STR(tn_siso_unit, cls),
    NUM(tn_siso_unit, rank, TN_COL_I32),          STR(tn_siso_unit, config),
    NUM(tn_siso_unit, overridden, TN_COL_U8),     NUM(tn_siso_unit, nondeterministic, TN_COL_U8),
    NUM(tn_siso_unit, nkernels, TN_COL_I32),      NUM(tn_siso_unit, atol, TN_COL_F64),
    NUM(tn_siso_unit, rtol, TN_COL_F64),          NUM(tn_siso_unit, max_rel, TN_COL_F64),
};
static const tn_store_column unit_tail_cols[] = {
    NUM(tn_siso_unit, chain_in_rel, TN_COL_F64), NUM(tn_siso_unit, chain_out_rel, TN_COL_F64),
    STR(tn_siso_unit, inputs), STR(tn_siso_unit, note),
};
static const tn_store_col_part unit_parts[] = {
    {unit_head_cols, NCOLS(unit_head_cols), "", 0},
    {cmp_cols, NCOLS(cmp_cols), "fu_", offsetof(tn_siso_unit, fu)},
    {cmp_cols, NCOLS(cmp_cols), "fr_", offsetof(tn_siso_unit, fr)},
    {cmp_cols, NCOLS(cmp_cols), "ur_", offsetof(tn_siso_unit, ur)},
    {unit_tail_cols, NCOLS(unit_tail_cols), "", 0},
};

/* The comparisons' columns, once per prefix. */
#define CMP_DOCS(p, side)                                                                                  \
  {p "done", "", "1 when " side " were both run and compared"},                                           \
      {p "within", "", "1 when " side " agree within the tolerance"},                                     \
      {p "identical", "", "1 when " side " are bitwise equal"},                                           \
      {p "leaf", "", "the worst output leaf of " side},                                                   \
      {p "count", "elements", "elements of that leaf compared, " side},                                   \
      {p "mismatches", "elements", "elements beyond the tolerance, " side},                               \
      {p "max_abs", "output units", "largest absolute difference, " side},                                \
      {p "max_rel", "ratio", "largest relative difference, " side},                                       \
      {p "rank", "", "rank of the worst leaf"},                                                            \
      {p "peak", "", "multi-index of the largest error, " side "; first rank entries"}

static const tn_store_col_doc unit_docs[] = {
    {"index", "", "the unit's position in program order"},
    {"name", "", "the fusion's (or heavy op's) instruction name"},
    {"kind", "", "the fusion kind as written (kLoop...), op, or module"},
    {"cls", "", "ok, fusion-bug, lowering-bug, reference-disagrees, propagated or not-isolated"},
    {"rank", "", "1 for the worst culprit (max relative error), 2 the next...; 0 when not a culprit"},
    {"config", "", "the fused kernel's config"},
    {"overridden", "", "1 when the config came from --config or --from"},
    {"nondeterministic", "", "1 when two timing seeds gave the fused kernel different outputs"},
    {"nkernels", "", "single-op kernels of the unfused run; 0 when it has none"},
    {"atol", "output units",
     "absolute tolerance of the comparisons (the loosest output leaf); NaN: not derived, every comparison identical"},
    {"rtol", "ratio",
     "relative tolerance of the comparisons (the loosest output leaf); NaN: not derived, every comparison identical"},
    {"max_rel", "ratio", "the culprit side's max relative error against the reference (the ranking key)"},
    CMP_DOCS("fu_", "fused and unfused"),
    CMP_DOCS("fr_", "fused and reference"),
    CMP_DOCS("ur_", "unfused and reference"),
    {"chain_in_rel", "ratio", "in the device's program: max relative error of its operands; NaN when not run"},
    {"chain_out_rel", "ratio", "in the device's program: max relative error of its output; NaN when not run"},
    {"inputs", "", "units whose outputs reach its operands, comma-separated (the fusion graph's edges)"},
    {"note", "", "why it was not isolated, or a remark"},
};

static const tn_store_column sum_cols[] = {
    NUM(tn_siso_summary, min, TN_COL_F32), NUM(tn_siso_summary, max, TN_COL_F32),
    NUM(tn_siso_summary, mean, TN_COL_F32), NUM(tn_siso_summary, std, TN_COL_F32),
    NUM(tn_siso_summary, nan, TN_COL_I64), NUM(tn_siso_summary, inf, TN_COL_I64),
};
static const tn_store_column instr_cols[] = {
    STR(tn_siso_instr, name),                 STR(tn_siso_instr, op),
    NUM(tn_siso_instr, count, TN_COL_I64),    NUM(tn_siso_instr, observed, TN_COL_I64),
    NUM(tn_siso_instr, compared, TN_COL_U8),  NUM(tn_siso_instr, within, TN_COL_U8),
    NUM(tn_siso_instr, mismatches, TN_COL_I64), NUM(tn_siso_instr, max_rel, TN_COL_F64),
};
static const tn_store_col_part instr_parts[] = {
    {instr_cols, NCOLS(instr_cols), "", 0},
    {sum_cols, NCOLS(sum_cols), "dev_", offsetof(tn_siso_instr, dev)},
    {sum_cols, NCOLS(sum_cols), "ref_", offsetof(tn_siso_instr, ref)},
};

#define SUM_DOCS(p, side)                                                                                  \
  {p "min", "output units", "smallest finite value " side}, {p "max", "output units", "largest finite value " side}, \
      {p "mean", "output units", "mean of the finite values " side},                                      \
      {p "std", "output units", "standard deviation of the finite values " side},                         \
      {p "nan", "elements", "NaN elements " side}, {p "inf", "elements", "infinite elements " side}

static const tn_store_col_doc instr_docs[] = {
    {"name", "", "the instruction inside the fused computation, in program order"},
    {"op", "", "its opcode"},
    {"count", "elements", "elements of its array"},
    {"observed", "elements", "elements the kernel produced (a slice's operand only in part); 0: not probed"},
    {"compared", "", "1 when both sides exist and were compared"},
    {"within", "", "1 when the device's values are within the tolerance of the reference's"},
    {"mismatches", "elements", "elements beyond the tolerance"},
    {"max_rel", "ratio", "largest relative difference"},
    SUM_DOCS("dev_", "as the instrumented kernel produced them (the 16-byte f32 summary)"),
    SUM_DOCS("ref_", "in the reference's evaluation"),
};

static const tn_store_column tm_cols[] = {
    NUM(tn_siso_tmetrics, count, TN_COL_I64),       NUM(tn_siso_tmetrics, mismatches, TN_COL_I64),
    NUM(tn_siso_tmetrics, max_abs, TN_COL_F64),     NUM(tn_siso_tmetrics, max_rel, TN_COL_F64),
    NUM(tn_siso_tmetrics, peak_index, TN_COL_I64),  NUM(tn_siso_tmetrics, rank, TN_COL_I32),
    ARR(tn_siso_tmetrics, peak, TN_COL_I64),        ARR(tn_siso_tmetrics, bbox_lo, TN_COL_I64),
    ARR(tn_siso_tmetrics, bbox_hi, TN_COL_I64),     NUM(tn_siso_tmetrics, device_at_peak, TN_COL_F64),
    NUM(tn_siso_tmetrics, reference_at_peak, TN_COL_F64),
};
static const tn_store_col_part tm_parts[] = {{tm_cols, NCOLS(tm_cols), "", 0}};
static const tn_store_col_doc tm_docs[] = {
    {"count", "elements", "elements compared"},
    {"mismatches", "elements", "elements beyond the tolerance"},
    {"max_abs", "output units", "largest absolute difference"},
    {"max_rel", "ratio", "largest relative difference"},
    {"peak_index", "", "flat row-major index of the largest error; -1 when none"},
    {"rank", "", "rank of the tensor"},
    {"peak", "", "peak_index as a multi-index; first rank entries"},
    {"bbox_lo", "", "first corner of the mismatches' bounding box (inclusive); first rank entries"},
    {"bbox_hi", "", "last corner of the mismatches' bounding box (inclusive); first rank entries"},
    {"device_at_peak", "output units", "the device's value at the peak; NaN when none"},
    {"reference_at_peak", "output units", "the reference's value at the peak; NaN when none"},
};

static const tn_store_col_doc iso_attr_docs[] = {
    {"source", "", "the module file isolated"},
    {"inputs", "", "the --inputs file of its entry arguments; empty when synthesised from the run's seed"},
    {"units", "", "units of the module (rows of the table units)"},
    {"culprits", "", "units whose class is a finding (groups under culprits)"},
    {"program_done", "", "1 when the device's program was run against the reference's"},
    {"program_differs", "", "1 when the program output is beyond its tolerance"},
    {"program_note", "", "why the program comparison was not run"},
    {"program_atol", "output units", "absolute tolerance of the program output; NaN: not derived (bit for bit)"},
    {"program_rtol", "ratio", "relative tolerance of the program output; NaN: not derived (bit for bit)"},
    {"program_max_rel", "ratio", "largest relative error of the program output"},
    {"program_max_abs", "output units", "largest absolute error of the program output"},
    {"program_mismatches", "elements", "elements of the program output beyond the tolerance"},
    {"program_count", "elements", "elements of the program output compared"},
    {"program_amplifier", "", "the unit that amplifies the error most; empty when none"},
    {"program_gain", "ratio", "its output's relative error over its operands'"},
    {"program_origin", "", "the first unit with exact operands and an inexact output; empty when none"},
};

static const tn_store_col_doc culprit_attr_docs[] = {
    {"unit", "", "the culprit's row in the table units"},
    {"inspected", "", "1 when the intact kernel was run instrumented and compared op by op"},
    {"note", "", "why it was not inspected, or a remark"},
    {"atol", "output units", "absolute tolerance of the instruction comparisons"},
    {"rtol", "ratio", "relative tolerance of the instruction comparisons"},
    {"first", "", "the first diverging instruction in program order; empty when none"},
    {"store_diffs", "elements", "output elements that differ from the root as the kernel computed it"},
};

static const tn_store_col_doc tensor_attr_docs[] = {
    {"name", "", "the instruction whose values these are"},
    {"role", "", "diverging (the first diverging instruction) or operand (one of its operands)"},
    {"instruction", "", "its row in the table instructions"},
};

/* ---- writing ---------------------------------------------------------------- */

static int set_attrs_i64(hid_t g, const char *const *keys, const int64_t *v, int n, hlo_error *err) {
  for (int i = 0; i < n; i++)
    if (tn_h5_attr_set_i64(g, keys[i], v[i], err) != 0)
      return -1;
  return 0;
}

static int write_tensor(hid_t tensors, int k, const tn_siso_tensor *t, hlo_error *err) {
  char name[32];
  snprintf(name, sizeof name, "%d", k);
  hid_t g = tn_store_group_new(tensors, name, err);
  if (g < 0)
    return -1;
  int rc = tn_h5_attr_set_str(g, "name", t->name, err) != 0 || tn_h5_attr_set_str(g, "role", t->role, err) != 0 ||
                   tn_h5_attr_set_i64(g, "instruction", t->instr, err) != 0 ||
                   tn_store_describe_attrs(g, tensor_attr_docs, NCOLS(tensor_attr_docs), err) != 0 ||
                   (t->dev && tn_h5_write_array(g, "device", t->dev, err) != 0) ||
                   (t->ref && tn_h5_write_array(g, "reference", t->ref, err) != 0) ||
                   tn_store_table_write(g, "metrics", tm_parts, 1, sizeof t->m, &t->m, 1, tm_docs,
                                        NCOLS(tm_docs), err) != 0
               ? -1
               : 0;
  tn_h5_close_obj(g);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, name);
}

/* A scalar variable-length UTF-8 string dataset (store.c writes `hlo` of a
 * fusion the same way, so readers of either need one code path). */
static int write_text(hid_t g, const char *name, const char *text, hlo_error *err) {
  int rc = -1;
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), d = -1;
  if (t >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0 && space >= 0)
    d = H5Dcreate2(g, name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0)
    tn_h5_fail(err, "%s: cannot create dataset", name);
  else if (H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) < 0)
    tn_h5_fail(err, "%s: cannot write dataset", name);
  else
    rc = 0;
  tn_h5_close_obj(d);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  return rc;
}

static int write_culprit(hid_t culprits, const tn_stored_isolation *iso, const tn_siso_culprit *c,
                         hlo_error *err) {
  char name[32];
  snprintf(name, sizeof name, "%d", (int)iso->units[c->unit].index);
  hid_t g = tn_store_group_new(culprits, name, err), tensors = -1;
  if (g < 0)
    return -1;
  const char *keys[] = {"unit", "inspected", "store_diffs"};
  const int64_t vals[] = {c->unit, c->inspected, c->store_diffs};
  int rc = set_attrs_i64(g, keys, vals, 3, err) != 0 || tn_h5_attr_set_str(g, "note", c->note, err) != 0 ||
                   tn_h5_attr_set_f64(g, "atol", c->atol, err) != 0 ||
                   tn_h5_attr_set_f64(g, "rtol", c->rtol, err) != 0 ||
                   tn_h5_attr_set_str(g, "first", c->first, err) != 0 ||
                   tn_store_describe_attrs(g, culprit_attr_docs, NCOLS(culprit_attr_docs), err) != 0 ||
                   tn_store_table_write(g, "instructions", instr_parts, NCOLS(instr_parts), sizeof *c->instrs,
                                        c->instrs, (size_t)c->ninstrs, instr_docs, NCOLS(instr_docs), err) != 0
               ? -1
               : 0;
  if (rc == 0 && c->hlo &&
      (write_text(g, "hlo", c->hlo, err) != 0 || tn_h5_write_inputs(g, "inputs", c->ninputs, c->inputs, err) != 0))
    rc = -1;
  if (rc == 0 && (tensors = tn_store_group_new(g, "tensors", err)) < 0)
    rc = -1;
  for (int k = 0; rc == 0 && k < c->ntensors; k++)
    rc = write_tensor(tensors, k, &c->tensors[k], err);
  if (rc != 0 && tensors >= 0)
    tn_h5_prefix_error(err, "tensors");
  tn_h5_close_obj(tensors);
  tn_h5_close_obj(g);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, name);
}

static int isolation_edit(hid_t run, void *ctx, hlo_error *err) {
  const tn_stored_isolation *iso = ctx;
  int has = tn_h5_exists(run, "isolation", err);
  if (has != 0)
    return has < 0 ? -1 : tn_h5_fail(err, "isolation: the run holds one already");
  hid_t g = tn_store_group_new(run, "isolation", err), culprits = -1;
  if (g < 0)
    return -1;
  const tn_siso_program *p = &iso->program;
  const char *ikeys[] = {"units", "culprits", "program_done", "program_differs", "program_mismatches",
                         "program_count"};
  const int64_t ivals[] = {iso->nunits, iso->nculprits, p->done, p->differs, p->mismatches, p->count};
  const char *fkeys[] = {"program_atol", "program_rtol", "program_max_rel", "program_max_abs", "program_gain"};
  const double fvals[] = {p->atol, p->rtol, p->max_rel, p->max_abs, p->gain};
  int rc = tn_h5_attr_set_str(g, "source", iso->source, err) != 0 ||
                   tn_h5_attr_set_str(g, "inputs", iso->inputs, err) != 0 ||
                   set_attrs_i64(g, ikeys, ivals, (int)NCOLS(ikeys), err) != 0 ||
                   tn_h5_attr_set_str(g, "program_note", p->note, err) != 0 ||
                   tn_h5_attr_set_str(g, "program_amplifier", p->amplifier, err) != 0 ||
                   tn_h5_attr_set_str(g, "program_origin", p->origin, err) != 0
               ? -1
               : 0;
  for (size_t i = 0; rc == 0 && i < NCOLS(fkeys); i++)
    rc = tn_h5_attr_set_f64(g, fkeys[i], fvals[i], err);
  if (rc == 0)
    rc = tn_store_describe_attrs(g, iso_attr_docs, NCOLS(iso_attr_docs), err);
  if (rc == 0)
    rc = tn_store_table_write(g, "units", unit_parts, NCOLS(unit_parts), sizeof *iso->units, iso->units,
                              (size_t)iso->nunits, unit_docs, NCOLS(unit_docs), err);
  if (rc == 0 && (culprits = tn_store_group_new(g, "culprits", err)) < 0)
    rc = -1;
  for (int k = 0; rc == 0 && k < iso->nculprits; k++)
    rc = write_culprit(culprits, iso, &iso->culprits[k], err);
  if (rc != 0 && culprits >= 0)
    tn_h5_prefix_error(err, "culprits");
  tn_h5_close_obj(culprits);
  tn_h5_close_obj(g);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, "isolation");
}

int tn_store_add_isolation(tn_store *s, const tn_stored_isolation *iso, hlo_error *err) {
  for (int k = 0; k < iso->nculprits; k++)
    if (iso->culprits[k].unit < 0 || iso->culprits[k].unit >= iso->nunits)
      return tn_h5_fail(err, "isolation: culprit %d names no unit", k);
  return tn_store_edit_run(s, isolation_edit, (void *)iso, err);
}

/* ---- reading ------------------------------------------------------------------ */

/* The optional attributes of an isolation: an absent one keeps its
 * default, but a failed read (out of memory, a damaged file) is an error,
 * kept in the first one of *rc and err, so that a reader can ask for several
 * and check once. */
static int64_t attr_i64(hid_t g, const char *name, int *rc, hlo_error *err) {
  int64_t v = 0;
  if (*rc == 0 && tn_h5_attr_get_num_opt(g, name, H5T_NATIVE_INT64, &v, err) < 0)
    *rc = -1;
  return v;
}

static double attr_f64(hid_t g, const char *name, int *rc, hlo_error *err) {
  double v = NAN;
  if (*rc == 0 && tn_h5_attr_get_num_opt(g, name, H5T_NATIVE_DOUBLE, &v, err) < 0)
    *rc = -1;
  return v;
}

static void attr_str(hid_t g, const char *name, char *buf, size_t n, int *rc, hlo_error *err) {
  buf[0] = '\0';
  int has = *rc == 0 ? tn_h5_attr_exists(g, name, err) : 0;
  if (has < 0 || (has && tn_h5_attr_get_str(g, name, buf, n, err) != 0)) {
    buf[0] = '\0';
    *rc = -1;
  }
}

static int read_tensor(hid_t tensors, int k, tn_siso_tensor *t, hlo_error *err) {
  char name[32];
  snprintf(name, sizeof name, "%d", k);
  hid_t g = H5Gopen2(tensors, name, H5P_DEFAULT);
  if (g < 0)
    return tn_h5_fail(err, "tensors/%s: missing", name);
  int rc = 0;
  attr_str(g, "name", t->name, sizeof t->name, &rc, err);
  attr_str(g, "role", t->role, sizeof t->role, &rc, err);
  t->instr = (int32_t)attr_i64(g, "instruction", &rc, err);
  void *rows = NULL;
  size_t n = 0;
  int has = rc == 0 ? tn_h5_exists(g, "device", err) : -1;
  rc = has < 0 ? -1 : has ? tn_h5_read_array(g, "device", NULL, "device", &t->dev, err) : 0;
  if (rc == 0 && (has = tn_h5_exists(g, "reference", err)) != 0)
    rc = has < 0 ? -1 : tn_h5_read_array(g, "reference", NULL, "reference", &t->ref, err);
  if (rc == 0)
    rc = tn_store_table_read(g, "metrics", tm_parts, 1, sizeof t->m, &rows, &n, err);
  if (rc == 0 && n == 1)
    memcpy(&t->m, rows, sizeof t->m);
  free(rows);
  tn_h5_close_obj(g);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, name);
}

/* Dataset name of g as a malloc'd string: 0 (with *out NULL when absent),
 * or -1 with err. */
static int read_text(hid_t g, const char *name, char **out, hlo_error *err) {
  *out = NULL;
  int has = tn_h5_exists(g, name, err);
  if (has <= 0)
    return has;
  int rc = -1;
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  hid_t ft = d >= 0 ? H5Dget_type(d) : -1, mt = -1;
  char *p = NULL;
  if (d < 0 || ft < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) <= 0) {
    tn_h5_fail(err, "%s: not a variable-length string", name);
    goto done;
  }
  mt = H5Tcopy(H5T_C_S1);
  if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5T_CSET_UTF8) < 0 ||
      H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) < 0) {
    tn_h5_fail(err, "%s: cannot read", name);
    goto done;
  }
  *out = strdup(p ? p : "");
  if (p)
    H5free_memory(p);
  rc = *out ? 0 : tn_h5_fail(err, "%s: out of memory", name);
done:
  tn_h5_close_type(mt);
  tn_h5_close_type(ft);
  tn_h5_close_obj(d);
  return rc;
}

static int read_culprit(hid_t culprits, const tn_stored_isolation *iso, int unit, tn_siso_culprit *c,
                        hlo_error *err) {
  char name[32];
  snprintf(name, sizeof name, "%d", (int)iso->units[unit].index);
  int has = tn_h5_exists(culprits, name, err);
  if (has < 0)
    return -1;
  hid_t g = has ? H5Gopen2(culprits, name, H5P_DEFAULT) : -1;
  if (g < 0)
    return tn_h5_fail(err, "culprits/%s: missing", name);
  c->unit = unit;
  int rc = 0;
  c->inspected = (int)attr_i64(g, "inspected", &rc, err);
  c->store_diffs = attr_i64(g, "store_diffs", &rc, err);
  c->atol = attr_f64(g, "atol", &rc, err);
  c->rtol = attr_f64(g, "rtol", &rc, err);
  attr_str(g, "note", c->note, sizeof c->note, &rc, err);
  attr_str(g, "first", c->first, sizeof c->first, &rc, err);
  void *rows = NULL;
  size_t n = 0;
  if (rc == 0)
    rc = tn_store_table_read(g, "instructions", instr_parts, NCOLS(instr_parts), sizeof *c->instrs, &rows, &n,
                             err);
  c->instrs = rows;
  c->ninstrs = (int)n;
  if (rc == 0)
    rc = read_text(g, "hlo", &c->hlo, err);
  int has_tensors = rc == 0 ? tn_h5_exists(g, "tensors", err) : 0;
  if (has_tensors < 0)
    rc = -1;
  hid_t tensors = has_tensors > 0 ? H5Gopen2(g, "tensors", H5P_DEFAULT) : -1;
  if (tensors >= 0) {
    H5G_info_t info;
    int nt = 0;
    if (H5Gget_info(tensors, &info) < 0)
      rc = tn_h5_fail(err, "tensors: cannot count them");
    else
      nt = (int)info.nlinks;
    c->tensors = nt > 0 ? calloc((size_t)nt, sizeof *c->tensors) : NULL;
    if (nt > 0 && !c->tensors)
      rc = tn_h5_fail(err, "out of memory");
    for (int k = 0; rc == 0 && k < nt; k++, c->ntensors++)
      rc = read_tensor(tensors, k, &c->tensors[k], err);
    tn_h5_close_obj(tensors);
  }
  tn_h5_close_obj(g);
  return rc == 0 ? 0 : tn_h5_prefix_error(err, name);
}

static int read_isolation(hid_t file, const char *run_id, tn_stored_isolation *out, hlo_error *err) {
  char path[512];
  snprintf(path, sizeof path, "runs/%s/isolation", run_id);
  int has = tn_h5_exists(file, path, err);
  if (has <= 0)
    return has;
  hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
  if (g < 0)
    return tn_h5_fail(err, "%s: cannot open", path);
  int rc = 0;
  attr_str(g, "source", out->source, sizeof out->source, &rc, err);
  attr_str(g, "inputs", out->inputs, sizeof out->inputs, &rc, err);
  tn_siso_program *p = &out->program;
  p->done = (int)attr_i64(g, "program_done", &rc, err);
  p->differs = (int)attr_i64(g, "program_differs", &rc, err);
  p->mismatches = attr_i64(g, "program_mismatches", &rc, err);
  p->count = attr_i64(g, "program_count", &rc, err);
  p->atol = attr_f64(g, "program_atol", &rc, err);
  p->rtol = attr_f64(g, "program_rtol", &rc, err);
  p->max_rel = attr_f64(g, "program_max_rel", &rc, err);
  p->max_abs = attr_f64(g, "program_max_abs", &rc, err);
  p->gain = attr_f64(g, "program_gain", &rc, err);
  attr_str(g, "program_note", p->note, sizeof p->note, &rc, err);
  attr_str(g, "program_amplifier", p->amplifier, sizeof p->amplifier, &rc, err);
  attr_str(g, "program_origin", p->origin, sizeof p->origin, &rc, err);
  void *rows = NULL;
  size_t n = 0;
  if (rc == 0)
    rc = tn_store_table_read(g, "units", unit_parts, NCOLS(unit_parts), sizeof *out->units, &rows, &n, err);
  out->units = rows;
  out->nunits = (int)n;
  int nc = 0;
  for (int i = 0; rc == 0 && i < out->nunits; i++)
    nc += out->units[i].rank > 0;
  if (rc == 0 && nc > 0 && !(out->culprits = calloc((size_t)nc, sizeof *out->culprits)))
    rc = tn_h5_fail(err, "out of memory");
  hid_t culprits = rc == 0 && nc > 0 ? H5Gopen2(g, "culprits", H5P_DEFAULT) : -1;
  if (rc == 0 && nc > 0 && culprits < 0)
    rc = tn_h5_fail(err, "culprits: missing");
  /* worst first: by rank */
  for (int r = 1; rc == 0 && r <= nc; r++) {
    int unit = -1;
    for (int i = 0; i < out->nunits && unit < 0; i++)
      if (out->units[i].rank == r)
        unit = i;
    if (unit < 0) {
      rc = tn_h5_fail(err, "units: no culprit of rank %d", r);
      break;
    }
    rc = read_culprit(culprits, out, unit, &out->culprits[out->nculprits], err);
    out->nculprits++;
  }
  tn_h5_close_obj(culprits);
  tn_h5_close_obj(g);
  return rc == 0 ? 1 : tn_h5_prefix_error(err, path);
}

int tn_results_read_isolation(const char *path, const char *run_id, tn_stored_isolation *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  hid_t file = tn_h5_open_read(path, err);
  if (file < 0)
    return -1;
  int rc;
  H5E_BEGIN_TRY { rc = read_isolation(file, run_id, out, err); }
  H5E_END_TRY;
  hlo_error cerr = {0};
  tn_h5_close(file, &cerr);
  if (rc < 0)
    tn_stored_isolation_free(out);
  return rc;
}

void tn_stored_isolation_free(tn_stored_isolation *iso) {
  for (int k = 0; k < iso->nculprits; k++) {
    tn_siso_culprit *c = &iso->culprits[k];
    for (int t = 0; t < c->ntensors; t++) {
      hlo_value_unref(c->tensors[t].dev);
      hlo_value_unref(c->tensors[t].ref);
    }
    free(c->tensors);
    free(c->instrs);
    free(c->hlo);
  }
  free(iso->culprits);
  free(iso->units);
  memset(iso, 0, sizeof *iso);
}
