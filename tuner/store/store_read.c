/* store_read.c — a results file read back into tn_fusion_results.
 *
 * The candidates table is read straight into the data model: the memory
 * compound type below places each stored column at the offset of the
 * tn_cand_result member it came from (d_max_abs at vs_default.max_abs, and
 * so on), so HDF5's own compound conversion does the unpacking and there
 * is no second row struct to keep in step with the writer.  HDF5 matches
 * compound members by name; a column this reader names but the file lacks
 * is checked for first, so a damaged or foreign table is refused with the
 * column's name instead of being read as zeros.
 *
 * The few things that are text on disk but enums in memory (status,
 * verdict) and the flag has_ref ride in a small tail after the
 * tn_cand_result; the config is parsed back from its canonical text, which
 * is the one form the writer guarantees (dev_config.h: print(parse(s)) == s).
 *
 * Every HDF5 call runs with automatic error printing off, and every handle
 * is closed on every path.
 */
#include "store_read.h"

#include "check/inputs.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "device/dev_defect.h"
#include "h5util.h"
#include "h5values.h"




/* ---- attributes ------------------------------------------------------------ */

/* A string attribute into a fixed field.  A value longer than the field
 * is cut (the fields are sized for what the writer stores; a cut text is
 * more use to a report than a refusal). */
static int get_str(hid_t obj, const char *name, char *buf, size_t n, hlo_error *err) {
  char tmp[4096];
  if (tn_h5_attr_get_str(obj, name, tmp, sizeof tmp, err) != 0)
    return -1;
  size_t len = strlen(tmp);
  if (len >= n)
    len = n - 1;
  memcpy(buf, tmp, len);
  buf[len] = '\0';
  return 0;
}


static int get_i64(hid_t obj, const char *name, int64_t *out, hlo_error *err) {
  return tn_h5_attr_get_num(obj, name, H5T_NATIVE_INT64, out, err);
}

/* ---- group listings ------------------------------------------------------------ */

/* The names of the links in group g, in HDF5's name order; *names is one
 * malloc'd array of n fixed fields of `width` bytes. */
static int list_links(hid_t g, size_t width, char **names, int *n, hlo_error *err) {
  H5G_info_t info;
  *names = NULL;
  *n = 0;
  if (H5Gget_info(g, &info) < 0)
    return tn_h5_fail(err, "cannot list the group");
  char *out = calloc(info.nlinks ? info.nlinks : 1, width);
  if (!out)
    return tn_h5_fail(err, "out of memory");
  for (hsize_t i = 0; i < info.nlinks; i++) {
    ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, out + i * width, width, H5P_DEFAULT);
    if (len < 0 || (size_t)len >= width) {
      free(out);
      return tn_h5_fail(err, "cannot read the name of entry %llu (or it is too long)", (unsigned long long)i);
    }
  }
  *names = out;
  *n = (int)info.nlinks;
  return 0;
}

/* ---- the file ---------------------------------------------------------------------- */

/* A results file this tune reads: ours, and a schema version it knows.
 * Version 1 differs from 2 only in what the fusions' readers here do not
 * read (the changes group, the types of sweep attributes, no defects
 * list), so both read into the same structures; a newer version may have
 * changed anything and is refused. */
static int check_schema(hid_t file, char *tool_version, size_t tvlen, hlo_error *err) {
  char schema[64];
  int64_t version = 0;
  hlo_error ignored = {0};
  /* A failed read is not "another kind of file", nor an absent version
   * "no version": both are errors of their own (out of memory, most
   * likely), not answers. */
  int has = tn_h5_attr_exists(file, "schema", err);
  if (has < 0)
    return -1;
  if (!has || get_str(file, "schema", schema, sizeof schema, &ignored) != 0 || strcmp(schema, TN_STORE_SCHEMA) != 0)
    return tn_h5_fail(err, "not a tune results file (no schema attribute \"%s\")", TN_STORE_SCHEMA);
  if (get_i64(file, "schema_version", &version, err) != 0)
    return -1;
  if (version < TN_STORE_SCHEMA_VERSION_OLDEST || version > TN_STORE_SCHEMA_VERSION)
    return tn_h5_fail(err,
                "results schema version %" PRId64 " was written by %s tune; this tune reads versions %d to %d",
                version, version > TN_STORE_SCHEMA_VERSION ? "a newer" : "an older", TN_STORE_SCHEMA_VERSION_OLDEST,
                TN_STORE_SCHEMA_VERSION);
  if (tool_version && tvlen > 0) {
    tool_version[0] = '\0';
    if ((has = tn_h5_attr_exists(file, "tool_version", err)) < 0 ||
        (has && get_str(file, "tool_version", tool_version, tvlen, err) != 0))
      return -1;
  }
  return 0;
}

static hid_t open_results(const char *path, char *tool_version, size_t tvlen, hlo_error *err) {
  hid_t f = tn_h5_open_read(path, err); /* its messages start with the path */
  if (f < 0)
    return -1;
  if (check_schema(f, tool_version, tvlen, err) != 0) {
    tn_h5_prefix_error(err, path);
    H5Fclose(f);
    return -1;
  }
  return f;
}

/* ---- runs -------------------------------------------------------------------------- */

/* The list attribute `defects` (schema 2) into a bit per dev_defect;
 * absent (schema 1) leaves defects_known 0.  A name this tune does not
 * know (a newer tune's defect) goes to defects_unknown rather than failing
 * the read: a report of the run is still worth having, and the callers
 * that need the whole device refuse the run themselves (store.h). */
static int read_defects(hid_t g, tn_run_info *ri, hlo_error *err) {
  int has = tn_h5_attr_exists(g, "defects", err);
  if (has <= 0)
    return has;
  int rc = -1;
  hid_t a = H5Aopen(g, "defects", H5P_DEFAULT), space = -1, t = -1, ft = -1;
  char **names = NULL;
  hssize_t n = -1;
  if (a >= 0) {
    space = H5Aget_space(a);
    ft = H5Aget_type(a);
  }
  if (space >= 0)
    n = H5Sget_simple_extent_npoints(space);
  if (ft < 0 || n < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) <= 0 ||
      H5Sget_simple_extent_ndims(space) != 1) {
    tn_h5_fail(err, "defects: not a list of strings");
    goto done;
  }
  names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
  if (!names) {
    tn_h5_fail(err, "defects: out of memory");
    goto done;
  }
  t = H5Tcopy(H5T_C_S1);
  if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0 ||
      (n > 0 && H5Aread(a, t, names) < 0)) {
    tn_h5_fail(err, "defects: cannot read it");
    goto done;
  }
  ri->defects = 0;
  for (hssize_t i = 0; i < n; i++) {
    int d = names[i] ? dev_defect_from_name(names[i]) : -1;
    if (d >= 0) {
      ri->defects |= 1u << d;
      continue;
    }
    size_t at = strlen(ri->defects_unknown);
    snprintf(ri->defects_unknown + at, sizeof ri->defects_unknown - at, "%s%s", at ? ", " : "",
             names[i] ? names[i] : "");
  }
  ri->defects_known = 1;
  rc = 0;
done:
  if (names && n > 0 && space >= 0 && t >= 0)
    H5Dvlen_reclaim(t, space, H5P_DEFAULT, names);
  free(names);
  tn_h5_close_type(t);
  tn_h5_close_type(ft);
  tn_h5_close_space(space);
  tn_h5_close_attr(a);
  return rc;
}

static int read_run_info(hid_t runs, const char *id, tn_run_info *ri, hlo_error *err) {
  hid_t g = H5Gopen2(runs, id, H5P_DEFAULT);
  if (g < 0)
    return tn_h5_fail(err, "runs/%s: not a group", id);
  memset(ri, 0, sizeof *ri);
  snprintf(ri->id, sizeof ri->id, "%s", id);
  int rc = get_str(g, "started", ri->started, sizeof ri->started, err) == 0 &&
                   get_str(g, "finished", ri->finished, sizeof ri->finished, err) == 0 &&
                   get_str(g, "status", ri->status, sizeof ri->status, err) == 0 &&
                   get_str(g, "command", ri->command, sizeof ri->command, err) == 0 &&
                   get_str(g, "machine", ri->machine, sizeof ri->machine, err) == 0 &&
                   get_str(g, "compiler", ri->compiler, sizeof ri->compiler, err) == 0 &&
                   tn_h5_attr_get_num(g, "seed", H5T_NATIVE_UINT64, &ri->seed, err) == 0 &&
                   get_str(g, "host", ri->host, sizeof ri->host, err) == 0 && read_defects(g, ri, err) == 0
               ? 0
               : -1;
  if (rc == 0 && tn_h5_attr_get_num_opt(g, "created_ns", H5T_NATIVE_INT64, &ri->created_ns, err) < 0)
    rc = -1;
  if (rc != 0) {
    char what[96];
    snprintf(what, sizeof what, "runs/%s", id);
    tn_h5_prefix_error(err, what);
  }
  H5Gclose(g);
  return rc;
}

/* Oldest first: by start time, then, within one second, by when each run
 * was made in the file.  The id cannot order those: its process id is
 * compared as text ("-9990" after "-10012") and wraps at pid_max (32768 on
 * many machines), so a run could sort before the run it followed and a
 * report show the older one as the latest.  Files from before created_ns
 * fall back on the id. */
static int cmp_runs(const void *pa, const void *pb) {
  const tn_run_info *a = pa, *b = pb;
  int c = strcmp(a->started, b->started);
  if (c)
    return c;
  if (a->created_ns > 0 && b->created_ns > 0 && a->created_ns != b->created_ns)
    return a->created_ns < b->created_ns ? -1 : 1;
  return strcmp(a->id, b->id);
}

/* All runs' attributes, oldest first. */
static int list_runs(hid_t file, tn_run_info **out, int *nout, hlo_error *err) {
  *out = NULL;
  *nout = 0;
  int has = tn_h5_exists(file, "runs", err);
  if (has <= 0)
    return has; /* a file that never had a run is empty, not broken */
  hid_t runs = H5Gopen2(file, "runs", H5P_DEFAULT);
  if (runs < 0)
    return tn_h5_fail(err, "runs: not a group");
  char *names = NULL;
  int n = 0, rc = -1;
  tn_run_info *ri = NULL;
  if (list_links(runs, sizeof ri->id, &names, &n, err) != 0) {
    tn_h5_prefix_error(err, "runs");
    goto done;
  }
  ri = calloc(n ? (size_t)n : 1, sizeof *ri);
  if (!ri) {
    tn_h5_fail(err, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++)
    if (read_run_info(runs, names + (size_t)i * sizeof ri->id, &ri[i], err) != 0)
      goto done;
  qsort(ri, (size_t)n, sizeof *ri, cmp_runs);
  *out = ri;
  *nout = n;
  ri = NULL;
  rc = 0;
done:
  free(ri);
  free(names);
  H5Gclose(runs);
  return rc;
}

/* ---- tables ---------------------------------------------------------------------------- */

typedef enum col_kind { COL_INT, COL_I64, COL_U64, COL_U8, COL_F64, COL_STR, COL_I64_ARR, COL_F64_ARR } col_kind;

/* One stored column and where it lands in memory.  n: the string size in
 * bytes, or the array length. */
typedef struct rcol {
  const char *name;
  col_kind kind;
  size_t offset;
  size_t n;
} rcol;

/* The read side of a candidate row: the data model plus the columns that
 * need translating. */
typedef struct cand_in {
  tn_cand_result c;
  char status[32];
  char verdict[32];
  uint8_t has_ref;
} cand_in;

typedef struct ref_in {
  uint8_t ran, ok;
  chk_tol tol;
  chk_metrics m;
} ref_in;

#define M_NUM(f, kind) {#f, kind, offsetof(chk_metrics, f), 1}
#define M_SIDE(side, f) {#side "_" #f, COL_F64, offsetof(chk_metrics, side.f), 1}
#define M_ARR(f) {#f, COL_I64_ARR, offsetof(chk_metrics, f), sizeof(((chk_metrics *)0)->f) / sizeof(int64_t)}

/* The metric columns (README: "The metric columns"), relative to a
 * chk_metrics; named with a d_ / r_ prefix in candidates, bare in
 * reference. */
static const rcol metric_cols[] = {
    M_NUM(count, COL_I64),          M_NUM(excluded, COL_I64),       M_NUM(mismatches, COL_I64),
    M_NUM(max_abs, COL_F64),        M_NUM(max_rel, COL_F64),        M_NUM(max_ulp, COL_U64),
    M_NUM(rms, COL_F64),            M_NUM(nan_mismatches, COL_I64), M_NUM(inf_mismatches, COL_I64),
    M_NUM(peak_index, COL_I64),     M_NUM(rank, COL_INT),           M_ARR(peak),
    M_ARR(bbox_lo),                 M_ARR(bbox_hi),                 M_ARR(hist),
    M_SIDE(a, min),                 M_SIDE(a, max),                 M_SIDE(a, mean),
    M_SIDE(a, std),                 M_SIDE(b, min),                 M_SIDE(b, max),
    M_SIDE(b, mean),                M_SIDE(b, std),
};

#define C_NUM(f, kind) {#f, kind, offsetof(cand_in, c.f), 1}
#define C_STR(name, member) {name, COL_STR, offsetof(cand_in, member), sizeof(((cand_in *)0)->member)}

static const rcol cand_cols[] = {
    C_NUM(id, COL_INT),
    C_STR("config", c.config),
    C_NUM(fingerprint, COL_U64),
    C_STR("status", status),
    C_STR("verdict", verdict),
    C_STR("message", c.message),
    C_NUM(sim_time, COL_F64),
    C_NUM(wall_time, COL_F64),
    C_NUM(speedup, COL_F64),
    {"atol", COL_F64, offsetof(cand_in, c.tol.atol), 1},
    {"rtol", COL_F64, offsetof(cand_in, c.tol.rtol), 1},
    C_NUM(leaf, COL_INT),
    {"has_ref", COL_U8, offsetof(cand_in, has_ref), 1},
};

static const rcol ref_cols[] = {
    {"ran", COL_U8, offsetof(ref_in, ran), 1},
    {"ok", COL_U8, offsetof(ref_in, ok), 1},
    {"atol", COL_F64, offsetof(ref_in, tol.atol), 1},
    {"rtol", COL_F64, offsetof(ref_in, tol.rtol), 1},
};

/* A group of columns placed at `base` and named with `prefix`. */
typedef struct rpart {
  const rcol *cols;
  size_t ncols;
  const char *prefix;
  size_t base;
} rpart;

#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

static const rpart cand_parts[] = {
    {cand_cols, NCOLS(cand_cols), "", 0},
    {metric_cols, NCOLS(metric_cols), "d_", offsetof(cand_in, c.vs_default)},
    {metric_cols, NCOLS(metric_cols), "r_", offsetof(cand_in, c.vs_reference)},
};
static const rpart ref_parts[] = {
    {ref_cols, NCOLS(ref_cols), "", 0},
    {metric_cols, NCOLS(metric_cols), "", offsetof(ref_in, m)},
};

static hid_t member_type(const rcol *c) {
  hid_t t = -1;
  switch (c->kind) {
  case COL_INT: return H5Tcopy(H5T_NATIVE_INT);
  case COL_I64: return H5Tcopy(H5T_NATIVE_INT64);
  case COL_U64: return H5Tcopy(H5T_NATIVE_UINT64);
  case COL_U8: return H5Tcopy(H5T_NATIVE_UINT8);
  case COL_F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
  case COL_STR:
    /* NUL-terminated in memory: a stored value that fills its whole
     * field loses its last byte rather than its terminator. */
    t = H5Tcopy(H5T_C_S1);
    if (t >= 0 && (H5Tset_size(t, c->n) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0)) {
      H5Tclose(t);
      t = -1;
    }
    return t;
  case COL_I64_ARR: {
    hsize_t n = c->n;
    return H5Tarray_create2(H5T_NATIVE_INT64, 1, &n);
  }
  case COL_F64_ARR: {
    hsize_t n = c->n;
    return H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &n);
  }
  }
  return -1;
}

/* The memory compound for a table, checked against the file's: every
 * column named here must be stored, with the same array length. */
static hid_t make_mem_type(hid_t ftype, const rpart *parts, size_t nparts, size_t size, hlo_error *err) {
  hid_t mem = H5Tcreate(H5T_COMPOUND, size);
  if (mem < 0) {
    tn_h5_fail(err, "cannot make a compound type");
    return -1;
  }
  for (size_t p = 0; p < nparts; p++) {
    for (size_t i = 0; i < parts[p].ncols; i++) {
      const rcol *c = &parts[p].cols[i];
      char name[64];
      snprintf(name, sizeof name, "%s%s", parts[p].prefix, c->name);
      int idx = H5Tget_member_index(ftype, name);
      if (idx < 0) {
        H5Tclose(mem);
        tn_h5_fail(err, "no column '%s'", name);
        return -1;
      }
      if (c->kind == COL_I64_ARR || c->kind == COL_F64_ARR) {
        hid_t ft = H5Tget_member_type(ftype, (unsigned)idx);
        hsize_t n = 0;
        bool same = ft >= 0 && H5Tget_class(ft) == H5T_ARRAY && H5Tget_array_ndims(ft) == 1 &&
                    H5Tget_array_dims2(ft, &n) == 1 && n == c->n;
        tn_h5_close_type(ft);
        if (!same) {
          H5Tclose(mem);
          tn_h5_fail(err, "column '%s' is not an array of %zu", name, c->n);
          return -1;
        }
      }
      hid_t mt = member_type(c);
      herr_t ins = mt >= 0 ? H5Tinsert(mem, name, parts[p].base + c->offset, mt) : -1;
      tn_h5_close_type(mt);
      if (ins < 0) {
        H5Tclose(mem);
        tn_h5_fail(err, "cannot describe column '%s'", name);
        return -1;
      }
    }
  }
  return mem;
}

/* Reads a whole 1-D compound dataset into a new array of rows of `size`
 * bytes (zeroed first, so members no column fills stay zero). */
static int read_table(hid_t g, const char *name, const rpart *parts, size_t nparts, size_t size, void **rows,
                      size_t *nrows, hlo_error *err) {
  int rc = -1;
  hid_t d = -1, ftype = -1, space = -1, mem = -1;
  void *buf = NULL;
  hsize_t dims[1] = {0};
  *rows = NULL;
  *nrows = 0;
  int has = tn_h5_exists(g, name, err);
  if (has <= 0 || (d = H5Dopen2(g, name, H5P_DEFAULT)) < 0) {
    if (has >= 0)
      tn_h5_fail(err, "%s: missing", name);
    goto done;
  }
  ftype = H5Dget_type(d);
  space = H5Dget_space(d);
  if (ftype < 0 || space < 0 || H5Tget_class(ftype) != H5T_COMPOUND || H5Sget_simple_extent_ndims(space) != 1) {
    tn_h5_fail(err, "%s: not a table (a 1-D compound dataset)", name);
    goto done;
  }
  H5Sget_simple_extent_dims(space, dims, NULL);
  mem = make_mem_type(ftype, parts, nparts, size, err);
  if (mem < 0) {
    tn_h5_prefix_error(err, name);
    goto done;
  }
  buf = calloc(dims[0] ? dims[0] : 1, size);
  if (!buf) {
    tn_h5_fail(err, "%s: out of memory", name);
    goto done;
  }
  if (dims[0] > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
    tn_h5_fail(err, "%s: cannot read", name);
    goto done;
  }
  *rows = buf;
  *nrows = dims[0];
  buf = NULL;
  rc = 0;
done:
  free(buf);
  tn_h5_close_type(mem);
  tn_h5_close_space(space);
  tn_h5_close_type(ftype);
  tn_h5_close_obj(d);
  return rc;
}

/* ---- one fusion ------------------------------------------------------------------------ */

static int status_from_name(const char *s) {
  static const char *const names[] = {[DEV_OK] = "ok",
                                      [DEV_COMPILE_ERROR] = "compile-error",
                                      [DEV_RUNTIME_ERROR] = "runtime-error",
                                      [DEV_TIMEOUT] = "timeout"};
  for (size_t i = 0; i < NCOLS(names); i++)
    if (strcmp(names[i], s) == 0)
      return (int)i;
  return -1;
}

/* Metrics whose rank is out of range would walk past the arrays in every
 * consumer; a stored row is checked once here instead. */
static int check_metrics(const chk_metrics *m, const char *what, int row, hlo_error *err) {
  if (m->rank < 0 || m->rank > HLO_MAX_RANK)
    return tn_h5_fail(err, "candidates row %d: %s rank %d out of range", row, what, m->rank);
  return 0;
}

static int read_candidates(hid_t g, tn_fusion_result *r, hlo_error *err) {
  void *rows = NULL;
  size_t n = 0;
  if (read_table(g, "candidates", cand_parts, NCOLS(cand_parts), sizeof(cand_in), &rows, &n, err) != 0)
    return -1;
  cand_in *in = rows;
  r->cands = calloc(n ? n : 1, sizeof *r->cands);
  if (!r->cands) {
    free(rows);
    return tn_h5_fail(err, "candidates: out of memory");
  }
  r->ncands = (int)n;
  for (size_t i = 0; i < n; i++) {
    tn_cand_result *c = &r->cands[i];
    *c = in[i].c;
    int st = status_from_name(in[i].status), v = chk_verdict_from_name(in[i].verdict);
    hlo_error perr = {0};
    if (st < 0 || v < 0) {
      tn_h5_fail(err, "candidates row %zu: unknown %s '%s'", i, st < 0 ? "status" : "verdict",
           st < 0 ? in[i].status : in[i].verdict);
      goto bad;
    }
    c->status = (dev_status)st;
    c->verdict = (chk_verdict)v;
    c->has_vs_reference = in[i].has_ref != 0;
    if (dev_config_parse(c->config, &c->cfg, &perr) != 0) {
      tn_h5_fail(err, "candidates row %zu: config '%s': %s", i, c->config, perr.msg);
      goto bad;
    }
    if (check_metrics(&c->vs_default, "d_", (int)i, err) != 0 ||
        check_metrics(&c->vs_reference, "r_", (int)i, err) != 0)
      goto bad;
  }
  free(rows);
  return 0;
bad:
  free(rows);
  return -1;
}

static int read_reference(hid_t g, tn_fusion_result *r, hlo_error *err) {
  void *rows = NULL;
  size_t n = 0;
  if (read_table(g, "reference", ref_parts, NCOLS(ref_parts), sizeof(ref_in), &rows, &n, err) != 0)
    return -1;
  int rc = 0;
  if (n != 1) {
    rc = tn_h5_fail(err, "reference: %zu rows, expected 1", n);
  } else {
    const ref_in *in = rows;
    r->default_ran = in->ran != 0;
    r->default_vs_reference_ok = in->ok != 0;
    r->reference_tol = in->tol;
    r->default_vs_reference = in->m;
    if (in->m.rank < 0 || in->m.rank > HLO_MAX_RANK)
      rc = tn_h5_fail(err, "reference: rank %d out of range", in->m.rank);
  }
  free(rows);
  return rc;
}

static int read_hlo(hid_t g, tn_fusion_result *r, hlo_error *err) {
  int rc = -1;
  int has = tn_h5_exists(g, "hlo", err);
  if (has < 0)
    return -1;
  hid_t d = has ? H5Dopen2(g, "hlo", H5P_DEFAULT) : -1;
  hid_t ft = d >= 0 ? H5Dget_type(d) : -1, mt = -1;
  char *p = NULL;
  if (d < 0 || ft < 0 || H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) <= 0) {
    tn_h5_fail(err, "hlo: missing or not a variable-length string");
    goto done;
  }
  mt = H5Tcopy(H5T_C_S1);
  if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5T_CSET_UTF8) < 0 ||
      H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) < 0) {
    tn_h5_fail(err, "hlo: cannot read");
    goto done;
  }
  r->hlo = strdup(p ? p : "");
  if (p)
    H5free_memory(p);
  if (!r->hlo) {
    tn_h5_fail(err, "hlo: out of memory");
    goto done;
  }
  rc = 0;
done:
  tn_h5_close_type(mt);
  tn_h5_close_type(ft);
  tn_h5_close_obj(d);
  return rc;
}

/* A decimal candidate id, as the writer names an error map. */
static int parse_id(const char *s, int *out) {
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > 1000000000)
    return -1;
  *out = (int)v;
  return 0;
}

static int read_error_map(hid_t errors, const char *name, tn_error_map *e, hlo_error *err) {
  int rc = -1;
  hid_t d = H5Dopen2(errors, name, H5P_DEFAULT);
  hid_t space = d >= 0 ? H5Dget_space(d) : -1;
  memset(e, 0, sizeof *e);
  if (parse_id(name, &e->cand_id) != 0) {
    tn_h5_fail(err, "errors/%s: the name is not a candidate id", name);
    goto done;
  }
  int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  if (rank < 0 || rank > HLO_MAX_RANK) {
    tn_h5_fail(err, "errors/%s: not a dataset of rank 0 to %d", name, HLO_MAX_RANK);
    goto done;
  }
  hsize_t dims[HLO_MAX_RANK];
  H5Sget_simple_extent_dims(space, dims, NULL);
  size_t count = 1;
  e->rank = rank;
  for (int i = 0; i < rank; i++) {
    e->dims[i] = (int64_t)dims[i];
    if (dims[i] != 0 && count > SIZE_MAX / sizeof(float) / dims[i]) {
      tn_h5_fail(err, "errors/%s: too large", name);
      goto done;
    }
    count *= (size_t)dims[i];
  }
  e->data = malloc(count ? count * sizeof(float) : sizeof(float));
  if (!e->data) {
    tn_h5_fail(err, "errors/%s: out of memory", name);
    goto done;
  }
  if (count > 0 && H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, e->data) < 0) {
    tn_h5_fail(err, "errors/%s: cannot read", name);
    goto done;
  }
  rc = 0;
done:
  if (rc != 0) {
    free(e->data);
    e->data = NULL;
  }
  tn_h5_close_space(space);
  tn_h5_close_obj(d);
  return rc;
}

/* Error maps come back worst first, as the writer's caller ordered them:
 * by mismatch count against the default, then by candidate id.  There are
 * a handful per fusion, so an insertion sort (which needs no context
 * pointer, unlike qsort) is plenty. */
static bool map_before(const tn_fusion_result *r, const tn_error_map *a, const tn_error_map *b) {
  const tn_cand_result *ca = tn_fusion_result_find_cand(r, a->cand_id);
  const tn_cand_result *cb = tn_fusion_result_find_cand(r, b->cand_id);
  int64_t ma = ca ? ca->vs_default.mismatches : 0, mb = cb ? cb->vs_default.mismatches : 0;
  return ma != mb ? ma > mb : a->cand_id < b->cand_id;
}

static void sort_maps(tn_fusion_result *r) {
  for (int i = 1; i < r->nerror_maps; i++) {
    tn_error_map key = r->error_maps[i];
    int j = i;
    for (; j > 0 && map_before(r, &key, &r->error_maps[j - 1]); j--)
      r->error_maps[j] = r->error_maps[j - 1];
    r->error_maps[j] = key;
  }
}

static int read_error_maps(hid_t g, tn_fusion_result *r, hlo_error *err) {
  int has = tn_h5_exists(g, "errors", err);
  if (has <= 0)
    return has;
  hid_t errors = H5Gopen2(g, "errors", H5P_DEFAULT);
  if (errors < 0)
    return tn_h5_fail(err, "errors: not a group");
  char *names = NULL;
  int n = 0, rc = -1;
  if (list_links(errors, 32, &names, &n, err) != 0) {
    tn_h5_prefix_error(err, "errors");
    goto done;
  }
  r->error_maps = calloc(n ? (size_t)n : 1, sizeof *r->error_maps);
  if (!r->error_maps) {
    tn_h5_fail(err, "errors: out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    if (read_error_map(errors, names + (size_t)i * 32, &r->error_maps[i], err) != 0)
      goto done;
    r->nerror_maps = i + 1;
  }
  sort_maps(r);
  rc = 0;
done:
  free(names);
  H5Gclose(errors);
  return rc;
}

/* ---- the values around each map's peak ----------------------------------------------- */

typedef struct peak_in {
  int candidate, rank, rows, cols;
  int64_t peak[HLO_MAX_RANK], origin[HLO_MAX_RANK];
  double expected[TN_PEAK_SIDE * TN_PEAK_SIDE], actual[TN_PEAK_SIDE * TN_PEAK_SIDE];
} peak_in;

#define P_NUM(f) {#f, COL_INT, offsetof(peak_in, f), 1}
#define P_ARR(f, kind, T) {#f, kind, offsetof(peak_in, f), sizeof(((peak_in *)0)->f) / sizeof(T)}

static const rcol peak_cols[] = {
    P_NUM(candidate), P_NUM(rank), P_NUM(rows), P_NUM(cols),
    P_ARR(peak, COL_I64_ARR, int64_t), P_ARR(origin, COL_I64_ARR, int64_t),
    P_ARR(expected, COL_F64_ARR, double), P_ARR(actual, COL_F64_ARR, double),
};
static const rpart peak_parts[] = {{peak_cols, NCOLS(peak_cols), "", 0}};

/* A window that fits its map: the reports index the map with it. */
static bool peak_fits(const peak_in *p, const tn_error_map *e) {
  if (p->rank != e->rank || p->rows < 1 || p->rows > TN_PEAK_SIDE || p->cols < 1 || p->cols > TN_PEAK_SIDE)
    return false;
  for (int d = 0; d < e->rank; d++) {
    int64_t len = d == e->rank - 1 ? p->cols : d == e->rank - 2 ? p->rows : 1;
    if (p->peak[d] < 0 || p->peak[d] >= e->dims[d] || p->origin[d] < 0 || p->origin[d] + len > e->dims[d] ||
        p->peak[d] < p->origin[d] || p->peak[d] >= p->origin[d] + len)
      return false;
  }
  return e->rank >= 2 || p->rows == 1;
}

/* The table `peak_windows` (absent in files written before it was added,
 * whose maps then have no window). */
static int read_peak_windows(hid_t g, tn_fusion_result *r, hlo_error *err) {
  int has = tn_h5_exists(g, "peak_windows", err);
  if (has <= 0)
    return has;
  void *rows = NULL;
  size_t n = 0;
  if (read_table(g, "peak_windows", peak_parts, NCOLS(peak_parts), sizeof(peak_in), &rows, &n, err) != 0)
    return -1;
  const peak_in *in = rows;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    tn_error_map *e = NULL;
    for (int k = 0; k < r->nerror_maps && !e; k++)
      if (r->error_maps[k].cand_id == in[i].candidate)
        e = &r->error_maps[k];
    if (!e || !peak_fits(&in[i], e)) {
      rc = tn_h5_fail(err, "peak_windows row %zu: %s", i, e ? "does not fit its error map" : "no error map of its candidate");
      break;
    }
    tn_peak_window *w = &e->peak;
    w->rows = in[i].rows;
    w->cols = in[i].cols;
    memcpy(w->peak, in[i].peak, sizeof w->peak);
    memcpy(w->origin, in[i].origin, sizeof w->origin);
    memcpy(w->expected, in[i].expected, sizeof w->expected);
    memcpy(w->actual, in[i].actual, sizeof w->actual);
  }
  free(rows);
  return rc;
}

static int read_fusion_attrs(hid_t g, tn_fusion_result *r, char *best_config, size_t best_len, hlo_error *err) {
  int64_t ncand = 0, ran = 0, ok = 0;
  if (get_str(g, "name", r->name, sizeof r->name, err) != 0 ||
      get_str(g, "source", r->source, sizeof r->source, err) != 0 ||
      get_str(g, "hero", r->hero, sizeof r->hero, err) != 0 ||
      tn_h5_attr_get_num(g, "seed", H5T_NATIVE_UINT64, &r->seed, err) != 0 ||
      tn_h5_attr_get_num(g, "fingerprint", H5T_NATIVE_UINT64, &r->fingerprint, err) != 0 ||
      get_i64(g, "ncandidates", &ncand, err) != 0 || get_i64(g, "default_ran", &ran, err) != 0 ||
      get_i64(g, "default_vs_reference_ok", &ok, err) != 0 ||
      get_str(g, "best_config", best_config, best_len, err) != 0 ||
      tn_h5_attr_get_num(g, "wall_time", H5T_NATIVE_DOUBLE, &r->wall_time, err) != 0)
    return -1;
  for (int v = 0; v < CHK_VERDICT_COUNT; v++) {
    char name[48];
    snprintf(name, sizeof name, "count_%s", chk_verdict_name((chk_verdict)v));
    for (char *p = name; *p; p++)
      if (*p == '-')
        *p = '_';
    /* count_tool_error came with tool-error; files written before it
     * have none, and none of their candidates was a tool error. */
    int has = v == CHK_VERDICT_TOOL_ERROR ? tn_h5_attr_exists(g, name, err) : 1;
    if (has < 0)
      return -1;
    if (!has)
      r->verdict_counts[v] = 0;
    else if (get_i64(g, name, &r->verdict_counts[v], err) != 0)
      return -1;
  }
  r->ncands = (int)ncand; /* checked against the table by the caller */
  /* Files written before input profiles existed used naive inputs. */
  r->profile = CHK_INPUTS_NAIVE;
  int has = tn_h5_attr_exists(g, "inputs_profile", err);
  if (has < 0)
    return -1;
  if (has) {
    char prof[32];
    chk_inputs_profile p;
    if (get_str(g, "inputs_profile", prof, sizeof prof, err) != 0)
      return -1;
    if (chk_inputs_profile_from_name(prof, &p) != 0)
      return hlo_error_set(err, 0, 0, "unknown input profile '%s' in the results file", prof);
    r->profile = (int)p;
  }
  /* Files written before it have no `part`: their fusions read as files
   * of one kernel. */
  int64_t part = 0;
  if (tn_h5_attr_get_num_opt(g, "part", H5T_NATIVE_INT64, &part, err) < 0)
    return -1;
  r->part = part != 0;
  return 0;
}

static int read_fusion(hid_t fusions, const char *group, tn_stored_fusion *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->group, sizeof out->group, "%s", group);
  tn_fusion_result *r = &out->r;
  hid_t g = H5Gopen2(fusions, group, H5P_DEFAULT);
  if (g < 0)
    return tn_h5_fail(err, "fusions/%s: not a group", group);
  char best[DEV_CONFIG_TEXT_MAX];
  int rc = -1, want = 0;
  if (read_fusion_attrs(g, r, best, sizeof best, err) != 0)
    goto done;
  want = r->ncands;
  r->ncands = 0;
  if (read_hlo(g, r, err) != 0 || read_candidates(g, r, err) != 0 || read_reference(g, r, err) != 0 ||
      read_error_maps(g, r, err) != 0 || read_peak_windows(g, r, err) != 0)
    goto done;
  if (want != r->ncands) {
    tn_h5_fail(err, "attribute ncandidates is %d but the table has %d rows", want, r->ncands);
    goto done;
  }
  r->best = -1;
  for (int i = 0; best[0] && i < r->ncands && r->best < 0; i++)
    if (strcmp(r->cands[i].config, best) == 0)
      r->best = i;
  rc = 0;
done:
  H5Gclose(g);
  if (rc != 0) {
    char what[96];
    snprintf(what, sizeof what, "fusions/%s", group);
    tn_h5_prefix_error(err, what);
  }
  return rc;
}

static int cmp_fusions(const void *pa, const void *pb) {
  const tn_stored_fusion *a = pa, *b = pb;
  int c = strcmp(a->r.source, b->r.source);
  if (!c)
    c = strcmp(a->r.name, b->r.name);
  return c ? c : strcmp(a->group, b->group);
}

static int read_fusions(hid_t file, tn_stored_run *run, hlo_error *err) {
  char path[128];
  snprintf(path, sizeof path, "runs/%s/fusions", run->info.id);
  int has = tn_h5_exists(file, path, err);
  if (has <= 0)
    return has < 0 ? -1 : tn_h5_fail(err, "%s: missing", path);
  hid_t fusions = H5Gopen2(file, path, H5P_DEFAULT);
  if (fusions < 0)
    return tn_h5_fail(err, "%s: not a group", path);
  char *names = NULL;
  int n = 0, rc = -1;
  if (list_links(fusions, sizeof run->fusions->group, &names, &n, err) != 0) {
    tn_h5_prefix_error(err, path);
    goto done;
  }
  run->fusions = calloc(n ? (size_t)n : 1, sizeof *run->fusions);
  if (!run->fusions) {
    tn_h5_fail(err, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    /* Counted before the read, so a half-read fusion is freed too. */
    run->nfusions = i + 1;
    if (read_fusion(fusions, names + (size_t)i * sizeof run->fusions->group, &run->fusions[i], err) != 0) {
      char what[128];
      snprintf(what, sizeof what, "runs/%s", run->info.id);
      tn_h5_prefix_error(err, what);
      goto done;
    }
  }
  qsort(run->fusions, (size_t)run->nfusions, sizeof *run->fusions, cmp_fusions);
  rc = 0;
done:
  free(names);
  H5Gclose(fusions);
  return rc;
}

/* ---- API ----------------------------------------------------------------------------------- */

int tn_results_list_runs(const char *path, tn_run_info **runs, int *nruns, char *tool_version,
                         size_t tool_version_len, hlo_error *err) {
  int rc = -1;
  *runs = NULL;
  *nruns = 0;
  H5E_BEGIN_TRY {
    hid_t f = open_results(path, tool_version, tool_version_len, err);
    if (f >= 0) {
      rc = list_runs(f, runs, nruns, err);
      if (rc != 0)
        tn_h5_prefix_error(err, path);
      H5Fclose(f);
    }
  }
  H5E_END_TRY;
  return rc;
}

int tn_results_schema_version(const char *path, hlo_error *err) {
  int64_t version = -1;
  H5E_BEGIN_TRY {
    hid_t f = open_results(path, NULL, 0, err);
    if (f >= 0) {
      if (get_i64(f, "schema_version", &version, err) != 0)
        version = -1;
      H5Fclose(f);
    }
  }
  H5E_END_TRY;
  return (int)version;
}

/* "a, b, c" — the ids a file has, for the unknown-run message. */
static void join_ids(const tn_run_info *ri, int n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && at + 1 < len; i++) {
    int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", ri[i].id);
    if (w < 0 || (size_t)w >= len - at)
      break;
    at += (size_t)w;
  }
}

static int read_run(hid_t f, const char *path, const char *run_id, tn_stored_run *out, hlo_error *err) {
  tn_run_info *ri = NULL;
  int n = 0, pick = -1;
  if (list_runs(f, &ri, &n, err) != 0)
    return tn_h5_prefix_error(err, path);
  if (n == 0) {
    free(ri);
    return tn_h5_fail(err, "%s: the file holds no run", path);
  }
  if (!run_id || !*run_id) {
    pick = n - 1;
  } else {
    for (int i = 0; i < n && pick < 0; i++)
      if (strcmp(ri[i].id, run_id) == 0)
        pick = i;
  }
  if (pick < 0) {
    char ids[300];
    join_ids(ri, n, ids, sizeof ids);
    tn_h5_fail(err, "%s: no run '%s' (the file has: %s)", path, run_id, ids);
    free(ri);
    return -1;
  }
  out->info = ri[pick];
  free(ri);
  if (read_fusions(f, out, err) != 0)
    return tn_h5_prefix_error(err, path);
  return 0;
}

int tn_results_read_run(const char *path, const char *run_id, tn_stored_run *out, hlo_error *err) {
  int rc = -1;
  memset(out, 0, sizeof *out);
  H5E_BEGIN_TRY {
    hid_t f = open_results(path, NULL, 0, err);
    if (f >= 0) {
      rc = read_run(f, path, run_id, out, err);
      H5Fclose(f);
    }
  }
  H5E_END_TRY;
  if (rc != 0)
    tn_stored_run_free(out);
  return rc;
}

void tn_stored_run_free(tn_stored_run *run) {
  if (!run)
    return;
  for (int i = 0; i < run->nfusions; i++)
    tn_fusion_result_free(&run->fusions[i].r);
  free(run->fusions);
  memset(run, 0, sizeof *run);
}

const tn_stored_fusion *tn_stored_run_find_fusion(const tn_stored_run *run, const char *key) {
  for (int i = 0; run && key && i < run->nfusions; i++)
    if (strcmp(run->fusions[i].r.name, key) == 0 || strcmp(run->fusions[i].group, key) == 0)
      return &run->fusions[i];
  return NULL;
}

const tn_cand_result *tn_fusion_result_find_cand(const tn_fusion_result *r, int id) {
  for (int i = 0; r && i < r->ncands; i++)
    if (r->cands[i].id == id)
      return &r->cands[i];
  return NULL;
}

const tn_error_map *tn_fusion_result_find_map(const tn_fusion_result *r, int id) {
  for (int i = 0; r && i < r->nerror_maps; i++)
    if (r->error_maps[i].cand_id == id)
      return &r->error_maps[i];
  return NULL;
}
