/* store_table.h — the results file's building blocks for writers that live
 * outside store.c (store_isolate.c): compound tables described once by
 * their columns, the `columns` and `attributes` descriptions README's
 * "HDF5 results schema" promises for every table and group, and one
 * atomic edit of a run (store.h: copy, append, rename).
 *
 * A table's row is a C struct; a list of tn_store_column names its members.
 * The same list builds the on-disk type (little endian, packed) and the
 * in-memory type, so a reader of the table uses the writer's row struct. */
#ifndef TUNE_STORE_TABLE_H
#define TUNE_STORE_TABLE_H

#include <stddef.h>

#include <hdf5.h>

#include "hlo/hlo_error.h"
#include "store.h"

typedef enum tn_store_col_kind {
  TN_COL_I32,
  TN_COL_I64,
  TN_COL_U64,
  TN_COL_U8,
  TN_COL_F64,
  TN_COL_STR,
  TN_COL_F32 /* the isolation's 16-byte f32 summaries */
} tn_store_col_kind;

/* One column: a member of a row struct.  n is the array length (1 for a
 * scalar number) or, for strings, the fixed size in bytes. */
typedef struct tn_store_column {
  const char *name;
  tn_store_col_kind kind;
  size_t offset;
  size_t n;
} tn_store_column;

/* A run of columns from one descriptor list, placed at `base` in the row
 * and named with `prefix`. */
typedef struct tn_store_col_part {
  const tn_store_column *cols;
  size_t ncols;
  const char *prefix;
  size_t base;
} tn_store_col_part;

/* What a column or an attribute means: its unit ("" for a count, a flag
 * or text) and one line (at most 159 bytes). */
typedef struct tn_store_col_doc {
  const char *name, *unit, *what;
} tn_store_col_doc;

#define TN_COL_FIELD_N(T, f) (sizeof(((T *)0)->f) / sizeof(((T *)0)->f[0]))
#define TN_COL_NUM(T, f, kind) {#f, kind, offsetof(T, f), 1}
#define TN_COL_ARR(T, f, kind) {#f, kind, offsetof(T, f), TN_COL_FIELD_N(T, f)}
#define TN_COL_STRING(T, f) {#f, TN_COL_STR, offsetof(T, f), sizeof(((T *)0)->f)}
#define TN_COL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Writes nrows rows as the 1-D compound dataset `name` of loc, with its
 * `columns` attribute from docs (every column must have one). */
int tn_store_table_write(hid_t loc, const char *name, const tn_store_col_part *parts, size_t nparts,
                         size_t row_size, const void *rows, size_t nrows, const tn_store_col_doc *docs,
                         size_t ndocs, hlo_error *err);
/* Reads the table `name` of loc into *rows (malloc'd, *nrows rows of
 * row_size bytes, zeroed first; NULL when empty).  Columns the file lacks
 * stay zero. */
int tn_store_table_read(hid_t loc, const char *name, const tn_store_col_part *parts, size_t nparts,
                        size_t row_size, void **rows, size_t *nrows, hlo_error *err);
/* (Re)writes the `attributes` description of group g from docs. */
int tn_store_describe_attrs(hid_t g, const tn_store_col_doc *docs, size_t ndocs, hlo_error *err);
/* A new group without modification times (equal results, equal bytes). */
hid_t tn_store_group_new(hid_t loc, const char *name, hlo_error *err);
/* A new dataset creation property list without modification times. */
hid_t tn_store_dcpl_new(void);

/* One atomic edit of the open run: fn receives the run's group. */
typedef int (*tn_store_run_edit_fn)(hid_t run, void *ctx, hlo_error *err);
int tn_store_edit_run(tn_store *s, tn_store_run_edit_fn fn, void *ctx, hlo_error *err);

#endif
