/* h5util.c — HDF5 plumbing shared by the store (h5util.h). */
#include "h5util.h"

#include <stdarg.h>
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
  int rc = -1;
  hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : -1;
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
