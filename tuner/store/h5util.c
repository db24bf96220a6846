/* h5util.c — HDF5 plumbing shared by the store (h5util.h). */
#include "h5util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int tn_h5_fail(hlo_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hlo_error_vset(err, 0, 0, fmt, ap);
  va_end(ap);
  return -1;
}

int tn_h5_prefix_error(hlo_error *err, const char *what) {
  char inner[sizeof err->msg];
  memcpy(inner, err->msg, sizeof inner);
  inner[sizeof inner - 1] = '\0';
  return tn_h5_fail(err, "%s: %s", what, inner);
}

static herr_t find_nomem(unsigned n, const H5E_error2_t *e, void *ctx) {
  (void)n;
  if (e->maj_num == H5E_RESOURCE || e->min_num == H5E_CANTALLOC || e->min_num == H5E_NOSPACE)
    *(int *)ctx = 1;
  return 0;
}

int tn_h5_failed_for_memory(void) {
  int nomem = 0;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_nomem, &nomem);
  return nomem;
}

int tn_h5_exists(hid_t loc, const char *path, hlo_error *err) {
  size_t len = strlen(path);
  char *prefix = malloc(len + 1);
  if (!prefix)
    return tn_h5_fail(err, "%s: out of memory", path);
  memcpy(prefix, path, len + 1);
  int rc = 1;
  /* "a/b/c": ask for "a", then "a/b", then "a/b/c" (a leading slash is
   * the root, not a name). */
  for (size_t i = 1; i <= len && rc == 1; i++) {
    if (i < len && path[i] != '/')
      continue;
    prefix[i] = '\0';
    htri_t e;
    int nomem = 0;
    H5E_BEGIN_TRY {
      e = H5Lexists(loc, prefix, H5P_DEFAULT);
      nomem = e < 0 && tn_h5_failed_for_memory();
    }
    H5E_END_TRY;
    prefix[i] = path[i];
    if (e < 0)
      rc = tn_h5_fail(err, "%s: HDF5 cannot look it up (%s)", path,
                      nomem ? "out of memory" : "a damaged file, or not a group on the way");
    else if (e == 0)
      rc = 0;
  }
  free(prefix);
  return rc;
}

int tn_h5_attr_exists(hid_t obj, const char *name, hlo_error *err) {
  htri_t e;
  int nomem = 0;
  H5E_BEGIN_TRY {
    e = H5Aexists(obj, name);
    nomem = e < 0 && tn_h5_failed_for_memory();
  }
  H5E_END_TRY;
  if (e < 0)
    return tn_h5_fail(err, "attribute '%s': HDF5 cannot look it up (%s)", name,
                      nomem ? "out of memory" : "a damaged file");
  return e > 0;
}

void tn_h5_close_obj(hid_t id) {
  if (id >= 0)
    H5Oclose(id);
}
void tn_h5_close_type(hid_t t) {
  if (t >= 0)
    H5Tclose(t);
}
void tn_h5_close_space(hid_t s) {
  if (s >= 0)
    H5Sclose(s);
}
void tn_h5_close_dset(hid_t d) {
  if (d >= 0)
    H5Dclose(d);
}
void tn_h5_close_group(hid_t g) {
  if (g >= 0)
    H5Gclose(g);
}
void tn_h5_close_attr(hid_t a) {
  if (a >= 0)
    H5Aclose(a);
}
void tn_h5_close_plist(hid_t p) {
  if (p >= 0)
    H5Pclose(p);
}

int tn_h5_attr_get_num(hid_t obj, const char *name, hid_t mtype, void *out, hlo_error *err) {
  int has = tn_h5_attr_exists(obj, name, err);
  if (has < 0)
    return -1; /* err says why the look-up failed */
  int rc = -1;
  hid_t a = has ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
  hid_t t = a >= 0 ? H5Aget_type(a) : -1;
  H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  if (a < 0)
    tn_h5_fail(err, "no attribute '%s'", name);
  else if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Aread(a, mtype, out) < 0)
    tn_h5_fail(err, "attribute '%s' is not a number", name);
  else
    rc = 0;
  tn_h5_close_type(t);
  tn_h5_close_attr(a);
  return rc;
}

int tn_h5_attr_get_num_opt(hid_t obj, const char *name, hid_t mtype, void *out, hlo_error *err) {
  int has = tn_h5_attr_exists(obj, name, err);
  if (has <= 0)
    return has;
  return tn_h5_attr_get_num(obj, name, mtype, out, err) == 0 ? 1 : -1;
}
