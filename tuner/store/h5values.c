/* h5values.c — hlo_values to and from HDF5 datasets (layout in h5values.h).
 *
 * The code keeps two HDF5 types per element type: the file type, fixed to
 * little endian so files are the same bytes on every host, and the memory
 * type, which describes our host storage (hlo_dtype.h) in native order.
 * HDF5 converts between the two, so a big-endian host would still read and
 * write the same files.
 *
 * Every public function runs inside H5E_BEGIN_TRY / H5E_END_TRY so HDF5
 * never prints an error stack of its own; failures come back as hlo_error
 * messages instead.  Handles are released through one cleanup block per
 * function, so every path closes what it opened.
 */
#define _POSIX_C_SOURCE 200809L

#include "h5values.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5image.h"
#include "h5probe.h"
#include "h5util.h"
#include "journal.h"
#include "hlo/hlo_dtype.h"
#include "utf8.h"

#define PATH_MAX_LEN 512

/* "/inputs/1" for messages, whatever loc the caller passed. */
static const char *slash(const char *path) { return path[0] == '/' ? "" : "/"; }

/* ---- element types ------------------------------------------------------ */

/* An IEEE binary16 built from a binary32: sign at bit 15, 5 exponent bits
 * at 10, 10 mantissa bits, bias 15 — exactly what numpy.float16 is, so
 * h5py maps it to float16.  (HDF5 1.10 has no predefined half type.) */
static hid_t make_half(hid_t base) {
  hid_t t = H5Tcopy(base);
  if (t < 0)
    return -1;
  if (H5Tset_fields(t, 15, 10, 5, 0, 10) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 15) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* {r, i} of two floats: the compound h5py reads as numpy complex. */
static hid_t make_complex(hid_t part, size_t part_size) {
  hid_t t = H5Tcreate(H5T_COMPOUND, 2 * part_size);
  if (t < 0)
    return -1;
  if (H5Tinsert(t, "r", 0, part) < 0 || H5Tinsert(t, "i", part_size, part) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* A new type id (the caller closes it) for element type t, in file (little
 * endian) or host (native) form; -1 when t has no stored form. */
static hid_t make_type(hlo_etype t, bool native) {
  hid_t base = -1;
  switch (t) {
  case HLO_PRED:
  case HLO_U1: case HLO_U2: case HLO_U4: case HLO_U8:
  case HLO_F8E5M2: case HLO_F8E4M3: case HLO_F8E4M3FN: case HLO_F8E4M3B11FNUZ:
  case HLO_F8E5M2FNUZ: case HLO_F8E4M3FNUZ: case HLO_F8E3M4: case HLO_F8E8M0FNU:
  case HLO_F4E2M1FN:
    base = native ? H5T_NATIVE_UINT8 : H5T_STD_U8LE;
    break;
  case HLO_S1: case HLO_S2: case HLO_S4: case HLO_S8:
    base = native ? H5T_NATIVE_INT8 : H5T_STD_I8LE;
    break;
  case HLO_S16:
    base = native ? H5T_NATIVE_INT16 : H5T_STD_I16LE;
    break;
  case HLO_U16: case HLO_BF16:
    base = native ? H5T_NATIVE_UINT16 : H5T_STD_U16LE;
    break;
  case HLO_S32:
    base = native ? H5T_NATIVE_INT32 : H5T_STD_I32LE;
    break;
  case HLO_U32:
    base = native ? H5T_NATIVE_UINT32 : H5T_STD_U32LE;
    break;
  case HLO_S64:
    base = native ? H5T_NATIVE_INT64 : H5T_STD_I64LE;
    break;
  case HLO_U64:
    base = native ? H5T_NATIVE_UINT64 : H5T_STD_U64LE;
    break;
  case HLO_F32:
    base = native ? H5T_NATIVE_FLOAT : H5T_IEEE_F32LE;
    break;
  case HLO_F64:
    base = native ? H5T_NATIVE_DOUBLE : H5T_IEEE_F64LE;
    break;
  case HLO_F16:
    return make_half(native ? H5T_NATIVE_FLOAT : H5T_IEEE_F32LE);
  case HLO_C64:
    return make_complex(native ? H5T_NATIVE_FLOAT : H5T_IEEE_F32LE, 4);
  case HLO_C128:
    return make_complex(native ? H5T_NATIVE_DOUBLE : H5T_IEEE_F64LE, 8);
  default:
    return -1;
  }
  return H5Tcopy(base);
}

/* "32-bit float", "16-bit unsigned integer"... for messages. */
static void describe_h5type(hid_t t, char *buf, size_t n) {
  size_t bits = H5Tget_size(t) * 8;
  switch (H5Tget_class(t)) {
  case H5T_INTEGER:
    snprintf(buf, n, "%zu-bit %s integer", bits, H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned" : "signed");
    break;
  case H5T_FLOAT:
    snprintf(buf, n, "%zu-bit float", bits);
    break;
  case H5T_ENUM:
    snprintf(buf, n, "%zu-bit enum", bits);
    break;
  case H5T_COMPOUND:
    snprintf(buf, n, "%zu-byte compound", bits / 8);
    break;
  case H5T_STRING:
    snprintf(buf, n, "string");
    break;
  default:
    snprintf(buf, n, "unsupported HDF5 type class");
    break;
  }
}

/* Is the file type a compound of two floats of part_size bytes each? */
static bool is_complex_of(hid_t t, size_t part_size) {
  if (H5Tget_class(t) != H5T_COMPOUND || H5Tget_nmembers(t) != 2)
    return false;
  bool ok = true;
  for (unsigned i = 0; i < 2 && ok; i++) {
    hid_t m = H5Tget_member_type(t, i);
    ok = m >= 0 && H5Tget_class(m) == H5T_FLOAT && H5Tget_size(m) == part_size;
    tn_h5_close_type(m);
  }
  return ok;
}

/* The HLO type a dataset without a dtype attribute holds; HLO_INVALID when
 * its HDF5 type is none we write or numpy writes for a supported type. */
static hlo_etype infer_etype(hid_t t) {
  size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
  case H5T_INTEGER: {
    bool sign = H5Tget_sign(t) != H5T_SGN_NONE;
    switch (size) {
    case 1: return sign ? HLO_S8 : HLO_U8;
    case 2: return sign ? HLO_S16 : HLO_U16;
    case 4: return sign ? HLO_S32 : HLO_U32;
    case 8: return sign ? HLO_S64 : HLO_U64;
    default: return HLO_INVALID;
    }
  }
  case H5T_ENUM: /* h5py stores numpy bool as an 8-bit enum FALSE/TRUE */
    return size == 1 ? HLO_PRED : HLO_INVALID;
  case H5T_FLOAT:
    return size == 2 ? HLO_F16 : size == 4 ? HLO_F32 : size == 8 ? HLO_F64 : HLO_INVALID;
  case H5T_COMPOUND:
    return is_complex_of(t, 4) ? HLO_C64 : is_complex_of(t, 8) ? HLO_C128 : HLO_INVALID;
  default:
    return HLO_INVALID;
  }
}

/* Can a dataset of file type ft hold elements of HLO type t (as named by a
 * dtype attribute)?  Widths must match exactly and integer signs too:
 * HDF5 would otherwise convert with clamping, silently changing values. */
static bool storage_fits(hlo_etype t, hid_t ft) {
  H5T_class_t cls = H5Tget_class(ft);
  size_t size = H5Tget_size(ft), want = hlo_etype_host_size(t);
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_PRED:
    return (cls == H5T_INTEGER || cls == H5T_ENUM) && size == 1;
  case HLO_CLASS_SINT:
  case HLO_CLASS_UINT: {
    bool sign = hlo_etype_class(t) == HLO_CLASS_SINT;
    return cls == H5T_INTEGER && size == want && (H5Tget_sign(ft) != H5T_SGN_NONE) == sign;
  }
  case HLO_CLASS_FLOAT:
    if (t == HLO_F16 || t == HLO_F32 || t == HLO_F64)
      return cls == H5T_FLOAT && size == want;
    /* bf16, f8, f4: bit patterns in an integer of their (host) width; the
     * sign of the integer does not matter, the bits are taken as they are. */
    return cls == H5T_INTEGER && size == want;
  case HLO_CLASS_COMPLEX:
    return is_complex_of(ft, want / 2);
  default:
    return false;
  }
}

/* What the layout stores t as, for messages. */
static const char *storage_name(hlo_etype t) {
  switch (t) {
  case HLO_PRED: return "an 8-bit integer 0/1";
  case HLO_F16: return "a 16-bit float";
  case HLO_F32: return "a 32-bit float";
  case HLO_F64: return "a 64-bit float";
  case HLO_BF16: return "a 16-bit integer (the bit pattern)";
  case HLO_C64: return "a compound {r, i} of 32-bit floats";
  case HLO_C128: return "a compound {r, i} of 64-bit floats";
  default: break;
  }
  switch (hlo_etype_class(t)) {
  case HLO_CLASS_FLOAT: return "an 8-bit integer (the bit pattern)";
  case HLO_CLASS_SINT: return hlo_etype_host_size(t) == 1 ? "an 8-bit signed integer" : "a signed integer of its width";
  case HLO_CLASS_UINT: return hlo_etype_host_size(t) == 1 ? "an 8-bit unsigned integer" : "an unsigned integer of its width";
  default: return "nothing (not storable)";
  }
}

/* ---- shapes in messages -------------------------------------------------- */

static void dims_text(char *buf, size_t n, int rank, const int64_t *dims) {
  size_t at = 0;
  at += (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && at < n; i++)
    at += (size_t)snprintf(buf + at, n - at, "%s%" PRId64, i ? "," : "", dims[i]);
  if (at < n)
    snprintf(buf + at, n - at, "]");
}

/* ---- files ---------------------------------------------------------------- */

/* The file lives in memory until tn_h5_close writes it (h5image.h): a
 * write that fails for lack of space is then our error to report, not a
 * half-closed HDF5 file that crashes the library at exit. */
hid_t tn_h5_create(const char *path, hlo_error *err) { return tn_h5_mem_create(path, err); }

hid_t tn_h5_open_read(const char *path, hlo_error *err) {
  /* Ask the OS first: "No such file or directory" beats HDF5's wording. */
  FILE *probe = fopen(path, "rb");
  if (!probe) {
    tn_h5_fail(err, "%s: %s", path, strerror(errno));
    return -1;
  }
  fclose(probe);
  /* A change in progress is waited out, an interrupted one rolled back
   * (journal.h); once HDF5 has the file open, its own lock keeps writers
   * out. */
  int lock;
  if (tn_journal_read_begin(path, &lock, err) != 0)
    return -1;
  /* A damaged file can crash HDF5 itself (h5probe.h): try it in a child. */
  hid_t f = -1;
  if (tn_h5_probe(path, err) == 0) {
    H5E_BEGIN_TRY { f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT); }
    H5E_END_TRY;
    if (f < 0)
      tn_h5_fail(err, "%s: not an HDF5 file (or a damaged one)", path);
  }
  tn_journal_read_end(lock);
  return f;
}

/* Writes the image of an in-memory file to the path it was created under.
 * O_NOFOLLOW: a symbolic link planted at that path is refused, not
 * written through. */
static int write_image(const char *path, const void *image, size_t size, hlo_error *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    return tn_h5_fail(err, "%s: %s", path, strerror(errno));
  int rc = tn_h5_write_fd(fd, path, image, size, err);
  if (close(fd) != 0 && rc == 0)
    rc = tn_h5_fail(err, "%s: cannot write: %s", path, strerror(errno));
  return rc;
}

int tn_h5_close(hid_t file, hlo_error *err) {
  void *image = NULL;
  size_t size = 0;
  char path[4096] = "";
  int rc = 0, in_memory = tn_h5_mem_is(file);
  if (in_memory < 0) {
    rc = tn_h5_fail(err, "cannot query the HDF5 file (HDF5 out of memory)");
  } else if (in_memory) {
    ssize_t n;
    H5E_BEGIN_TRY { n = H5Fget_name(file, path, sizeof path); }
    H5E_END_TRY;
    if (n <= 0 || (size_t)n >= sizeof path)
      rc = tn_h5_fail(err, "cannot tell the HDF5 file's name");
    else
      rc = tn_h5_mem_image(file, &image, &size, err);
  }
  herr_t c;
  H5E_BEGIN_TRY { c = H5Fclose(file); }
  H5E_END_TRY;
  if (rc == 0 && c < 0)
    rc = tn_h5_fail(err, "cannot flush and close the HDF5 file");
  if (rc == 0 && image)
    rc = write_image(path, image, size, err);
  free(image);
  return rc;
}

/* ---- attributes ------------------------------------------------------------ */

static int attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *buf,
                      hlo_error *err) {
  int rc = -1;
  hid_t space = H5Screate(H5S_SCALAR), attr = -1;
  if (space >= 0)
    attr = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr < 0)
    tn_h5_fail(err, "cannot create attribute '%s'", name);
  else if (H5Awrite(attr, mtype, buf) < 0)
    tn_h5_fail(err, "cannot write attribute '%s'", name);
  else
    rc = 0;
  tn_h5_close_attr(attr);
  tn_h5_close_space(space);
  return rc;
}

/* A variable-length UTF-8 string type: h5py reads such attributes as str. */
static hid_t make_vlen_str(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
    H5Tclose(t);
    t = -1;
  }
  return t;
}

/* The type says UTF-8, so the bytes must be (utf8.h). */
static int attr_set_str(hid_t obj, const char *name, const char *value, hlo_error *err) {
  char *fixed = NULL;
  const char *p = value ? value : "";
  if (!tn_utf8_valid(p)) {
    fixed = tn_utf8_fix(p);
    if (!fixed)
      return tn_h5_fail(err, "attribute '%s': out of memory", name);
    p = fixed;
  }
  hid_t t = make_vlen_str();
  int rc = t < 0 ? tn_h5_fail(err, "cannot make a string type") : attr_write(obj, name, t, t, &p, err);
  tn_h5_close_type(t);
  free(fixed);
  return rc;
}

int tn_h5_attr_set_str(hid_t obj, const char *name, const char *value, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_set_str(obj, name, value, err); }
  H5E_END_TRY;
  return rc;
}

int tn_h5_attr_set_i64(hid_t obj, const char *name, int64_t value, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, err); }
  H5E_END_TRY;
  return rc;
}

int tn_h5_attr_set_u64(hid_t obj, const char *name, uint64_t value, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value, err); }
  H5E_END_TRY;
  return rc;
}

int tn_h5_attr_set_f64(hid_t obj, const char *name, double value, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, err); }
  H5E_END_TRY;
  return rc;
}

static int attr_get_str(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err) {
  int rc = -1;
  hid_t attr = -1, ftype = -1, mtype = -1, space = -1;
  char *tmp = NULL;
  int has = tn_h5_attr_exists(obj, name, err);
  if (has <= 0) {
    if (has == 0)
      tn_h5_fail(err, "no attribute '%s'", name);
    goto done;
  }
  attr = H5Aopen(obj, name, H5P_DEFAULT);
  ftype = attr >= 0 ? H5Aget_type(attr) : -1;
  space = attr >= 0 ? H5Aget_space(attr) : -1;
  if (ftype < 0 || space < 0) {
    tn_h5_fail(err, "cannot open attribute '%s'", name);
    goto done;
  }
  if (H5Tget_class(ftype) != H5T_STRING || H5Sget_simple_extent_npoints(space) != 1) {
    tn_h5_fail(err, "attribute '%s' is not a single string", name);
    goto done;
  }
  if (H5Tis_variable_str(ftype) > 0) {
    mtype = make_vlen_str();
    char *p = NULL;
    if (mtype < 0 || H5Aread(attr, mtype, &p) < 0 || !p) {
      tn_h5_fail(err, "cannot read attribute '%s'", name);
      goto done;
    }
    size_t n = strlen(p);
    if (n < buflen)
      memcpy(buf, p, n + 1);
    H5free_memory(p);
    if (n >= buflen) {
      tn_h5_fail(err, "attribute '%s' is too long", name);
      goto done;
    }
  } else {
    /* Fixed length (numpy bytes through h5py): read it as a NUL-padded
     * string one byte longer, so the copy is always terminated. */
    size_t size = H5Tget_size(ftype);
    mtype = H5Tcopy(H5T_C_S1);
    tmp = calloc(1, size + 1);
    if (mtype < 0 || !tmp || H5Tset_size(mtype, size + 1) < 0 || H5Tset_strpad(mtype, H5T_STR_NULLTERM) < 0 ||
        H5Aread(attr, mtype, tmp) < 0) {
      tn_h5_fail(err, "cannot read attribute '%s'", name);
      goto done;
    }
    size_t n = strlen(tmp);
    if (n >= buflen) {
      tn_h5_fail(err, "attribute '%s' is too long", name);
      goto done;
    }
    memcpy(buf, tmp, n + 1);
  }
  rc = 0;
done:
  free(tmp);
  tn_h5_close_type(mtype);
  tn_h5_close_type(ftype);
  tn_h5_close_space(space);
  tn_h5_close_attr(attr);
  return rc;
}

int tn_h5_attr_get_str(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_get_str(obj, name, buf, buflen, err); }
  H5E_END_TRY;
  return rc;
}

static int attr_set_str_list(hid_t obj, const char *name, int n, const char *const *values, hlo_error *err) {
  const char **fixed = calloc((size_t)(n > 0 ? n : 1), sizeof *fixed);
  char **owned = calloc((size_t)(n > 0 ? n : 1), sizeof *owned);
  hsize_t dims = (hsize_t)(n > 0 ? n : 0);
  hid_t t = -1, space = -1, attr = -1;
  int rc = -1;
  if (!fixed || !owned) {
    tn_h5_fail(err, "attribute '%s': out of memory", name);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    fixed[i] = values[i] ? values[i] : "";
    if (!tn_utf8_valid(fixed[i])) {
      if (!(owned[i] = tn_utf8_fix(fixed[i]))) {
        tn_h5_fail(err, "attribute '%s': out of memory", name);
        goto done;
      }
      fixed[i] = owned[i];
    }
  }
  if ((t = make_vlen_str()) < 0 || (space = H5Screate_simple(1, &dims, NULL)) < 0 ||
      (attr = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT)) < 0) {
    tn_h5_fail(err, "cannot create attribute '%s'", name);
    goto done;
  }
  if (n > 0 && H5Awrite(attr, t, fixed) < 0) {
    tn_h5_fail(err, "cannot write attribute '%s'", name);
    goto done;
  }
  rc = 0;
done:
  tn_h5_close_attr(attr);
  tn_h5_close_space(space);
  tn_h5_close_type(t);
  for (int i = 0; owned && i < n; i++)
    free(owned[i]);
  free(owned);
  free(fixed);
  return rc;
}

int tn_h5_attr_set_str_list(hid_t obj, const char *name, int n, const char *const *values, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_set_str_list(obj, name, n, values, err); }
  H5E_END_TRY;
  return rc;
}

static int attr_get_text(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err) {
  int has = tn_h5_attr_exists(obj, name, err);
  if (has <= 0)
    return has < 0 ? -1 : tn_h5_fail(err, "no attribute '%s'", name);
  hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t ftype = attr >= 0 ? H5Aget_type(attr) : -1;
  H5T_class_t cls = ftype >= 0 ? H5Tget_class(ftype) : H5T_NO_CLASS;
  H5T_sign_t sign = cls == H5T_INTEGER ? H5Tget_sign(ftype) : H5T_SGN_ERROR;
  tn_h5_close_type(ftype);
  tn_h5_close_attr(attr);
  int w = 0;
  if (cls == H5T_STRING)
    return attr_get_str(obj, name, buf, buflen, err);
  if (cls == H5T_INTEGER && sign == H5T_SGN_NONE) {
    uint64_t u = 0;
    if (tn_h5_attr_get_num(obj, name, H5T_NATIVE_UINT64, &u, err) != 0)
      return -1;
    w = snprintf(buf, buflen, "%llu", (unsigned long long)u);
  } else if (cls == H5T_INTEGER) {
    int64_t i = 0;
    if (tn_h5_attr_get_num(obj, name, H5T_NATIVE_INT64, &i, err) != 0)
      return -1;
    w = snprintf(buf, buflen, "%lld", (long long)i);
  } else if (cls == H5T_FLOAT) {
    double d = 0;
    if (tn_h5_attr_get_num(obj, name, H5T_NATIVE_DOUBLE, &d, err) != 0)
      return -1;
    w = snprintf(buf, buflen, "%.17g", d);
  } else {
    return tn_h5_fail(err, "attribute '%s' is neither text nor a number", name);
  }
  if (w < 0 || (size_t)w >= buflen)
    return tn_h5_fail(err, "attribute '%s' is too long", name);
  return 0;
}

int tn_h5_attr_get_text(hid_t obj, const char *name, char *buf, size_t buflen, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = attr_get_text(obj, name, buf, buflen, err); }
  H5E_END_TRY;
  return rc;
}

/* ---- one array ------------------------------------------------------------- */

static int write_array(hid_t loc, const char *path, const hlo_value *v, hlo_error *err) {
  if (v->type == HLO_TUPLE)
    return tn_h5_fail(err, "%s%s: a tuple is not an array", slash(path), path);
  int rc = -1;
  hid_t ftype = make_type(v->type, false), mtype = make_type(v->type, true);
  hid_t space = -1, dset = -1;
  unsigned char *norm = NULL;
  const void *data = v->data;
  if (ftype < 0 || mtype < 0) {
    tn_h5_fail(err, "%s%s: element type %s cannot be stored", slash(path), path, hlo_etype_name(v->type));
    goto done;
  }
  if (v->rank == 0) {
    space = H5Screate(H5S_SCALAR);
  } else {
    hsize_t dims[HLO_MAX_RANK];
    for (int i = 0; i < v->rank; i++)
      dims[i] = (hsize_t)v->dims[i];
    space = H5Screate_simple(v->rank, dims, NULL);
  }
  if (space >= 0)
    dset = H5Dcreate2(loc, path, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (dset < 0) {
    tn_h5_fail(err, "%s%s: cannot create dataset (does it exist already?)", slash(path), path);
    goto done;
  }
  /* pred is any nonzero byte in memory but exactly 0/1 on disk. */
  if (v->type == HLO_PRED && v->count > 0) {
    norm = malloc((size_t)v->count);
    if (!norm) {
      tn_h5_fail(err, "%s%s: out of memory", slash(path), path);
      goto done;
    }
    const unsigned char *src = v->data;
    for (int64_t i = 0; i < v->count; i++)
      norm[i] = src[i] != 0;
    data = norm;
  }
  if (v->count > 0 && H5Dwrite(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    tn_h5_fail(err, "%s%s: cannot write dataset", slash(path), path);
    goto done;
  }
  if (attr_set_str(dset, "dtype", hlo_etype_name(v->type), err) != 0) {
    char inner[sizeof err->msg];
    snprintf(inner, sizeof inner, "%s", err->msg);
    tn_h5_fail(err, "%s%s: %s", slash(path), path, inner);
    goto done;
  }
  rc = 0;
done:
  free(norm);
  tn_h5_close_dset(dset);
  tn_h5_close_space(space);
  tn_h5_close_type(mtype);
  tn_h5_close_type(ftype);
  return rc;
}

int tn_h5_write_array(hid_t loc, const char *path, const hlo_value *v, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = write_array(loc, path, v, err); }
  H5E_END_TRY;
  return rc;
}

/* Values an HDF5 integer can hold that the HLO type cannot: sub-byte
 * integers and f4 live one per byte, pred is 0/1.  Out-of-range data is an
 * error rather than wrapped, because a silently changed input would make
 * every result after it meaningless. */
static int check_elements(hlo_value *v, const char *path, hlo_error *err) {
  int bits = hlo_etype_bits(v->type);
  unsigned char *p = v->data;
  if (v->type == HLO_PRED) {
    for (int64_t i = 0; i < v->count; i++)
      p[i] = p[i] != 0;
    return 0;
  }
  if (bits >= 8)
    return 0;
  hlo_eclass cls = hlo_etype_class(v->type);
  for (int64_t i = 0; i < v->count; i++) {
    bool ok;
    if (cls == HLO_CLASS_SINT) {
      int x = (int8_t)p[i];
      ok = x >= -(1 << (bits - 1)) && x < (1 << (bits - 1));
    } else {
      ok = p[i] < (1u << bits);
    }
    if (!ok)
      return tn_h5_fail(err, "%s%s: element %" PRId64 " (%d) does not fit in %s", slash(path), path, i,
                  cls == HLO_CLASS_SINT ? (int)(int8_t)p[i] : (int)p[i], hlo_etype_name(v->type));
  }
  return 0;
}

static int read_array(hid_t loc, const char *path, const hlo_shape *want, const char *what, hlo_value **out,
                      hlo_error *err) {
  int rc = -1;
  hid_t dset = -1, ftype = -1, space = -1, mtype = -1;
  hlo_value *v = NULL;
  const char *sl = slash(path);
  char htype[64], shape_have[256], shape_want[256];
  what = what ? what : "the expected";

  int has = tn_h5_exists(loc, path, err);
  if (has <= 0) {
    if (has == 0)
      tn_h5_fail(err, "%s%s: no such dataset", sl, path);
    goto done;
  }
  dset = H5Dopen2(loc, path, H5P_DEFAULT);
  if (dset < 0) {
    tn_h5_fail(err, "%s%s: not a dataset", sl, path);
    goto done;
  }
  ftype = H5Dget_type(dset);
  space = H5Dget_space(dset);
  if (ftype < 0 || space < 0) {
    tn_h5_fail(err, "%s%s: cannot read the dataset's type and shape", sl, path);
    goto done;
  }

  /* Shape: a scalar dataspace is rank 0; a null one holds nothing. */
  int rank;
  int64_t dims[HLO_MAX_RANK];
  H5S_class_t scls = H5Sget_simple_extent_type(space);
  if (scls == H5S_SCALAR) {
    rank = 0;
  } else if (scls == H5S_SIMPLE) {
    rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > HLO_MAX_RANK) {
      tn_h5_fail(err, "%s%s: rank %d is more than the %d supported", sl, path, rank, HLO_MAX_RANK);
      goto done;
    }
    hsize_t hd[HLO_MAX_RANK];
    H5Sget_simple_extent_dims(space, hd, NULL);
    for (int i = 0; i < rank; i++)
      dims[i] = (int64_t)hd[i];
  } else {
    tn_h5_fail(err, "%s%s: the dataset has no data (null dataspace)", sl, path);
    goto done;
  }

  /* Element type: the dtype attribute names it; without one, infer. */
  hlo_etype t;
  describe_h5type(ftype, htype, sizeof htype);
  /* A failed look-up is not "no attribute": bf16 stored as uint16 would
   * then be inferred as u16. */
  int has_attr = tn_h5_attr_exists(dset, "dtype", err);
  if (has_attr < 0) {
    tn_h5_prefix_error(err, path);
    goto done;
  }
  if (has_attr > 0) {
    char name[64];
    if (attr_get_str(dset, "dtype", name, sizeof name, err) != 0) {
      char inner[sizeof err->msg];
      snprintf(inner, sizeof inner, "%s", err->msg);
      tn_h5_fail(err, "%s%s: %s", sl, path, inner);
      goto done;
    }
    t = hlo_etype_from_name(name, strlen(name));
    if (t == HLO_INVALID || hlo_etype_host_size(t) == 0) {
      tn_h5_fail(err, "%s%s: dtype attribute '%s' is not an HLO array element type", sl, path, name);
      goto done;
    }
    if (!storage_fits(t, ftype)) {
      tn_h5_fail(err, "%s%s: dtype %s is stored as %s, but the dataset holds a %s", sl, path, name,
           storage_name(t), htype);
      goto done;
    }
  } else {
    t = infer_etype(ftype);
    if (t == HLO_INVALID) {
      tn_h5_fail(err, "%s%s: cannot tell the HLO type of a %s (add a dtype attribute)", sl, path, htype);
      goto done;
    }
  }

  dims_text(shape_have, sizeof shape_have, rank, dims);
  if (want) {
    dims_text(shape_want, sizeof shape_want, want->rank, want->dims);
    bool same = want->type != HLO_TUPLE && want->rank == rank;
    for (int i = 0; same && i < rank; i++)
      same = want->dims[i] == dims[i];
    if (want->type == HLO_TUPLE) {
      tn_h5_fail(err, "%s%s: %s is a tuple, not an array", sl, path, what);
      goto done;
    }
    if (!same) {
      tn_h5_fail(err, "%s%s: shape %s does not match %s %s%s", sl, path, shape_have, what, hlo_etype_name(want->type),
           shape_want);
      goto done;
    }
    if (want->type != t) {
      tn_h5_fail(err, "%s%s: element type %s does not match %s %s%s", sl, path, hlo_etype_name(t), what,
           hlo_etype_name(want->type), shape_want);
      goto done;
    }
  }

  v = hlo_value_array(t, rank, dims);
  if (!v) {
    tn_h5_fail(err, "%s%s: out of memory for %s%s", sl, path, hlo_etype_name(t), shape_have);
    goto done;
  }
  /* Integers and enums are read in the file's own sign and width (already
   * checked to fit), so bit patterns stored as signed integers by another
   * tool come through unchanged instead of being clamped. */
  H5T_class_t fcls = H5Tget_class(ftype);
  mtype = fcls == H5T_INTEGER || fcls == H5T_ENUM ? H5Tget_native_type(ftype, H5T_DIR_ASCEND) : make_type(t, true);
  if (mtype < 0) {
    tn_h5_fail(err, "%s%s: cannot make the memory type for %s", sl, path, hlo_etype_name(t));
    goto done;
  }
  if (v->count > 0 && H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data) < 0) {
    tn_h5_fail(err, "%s%s: cannot read the dataset", sl, path);
    goto done;
  }
  if (check_elements(v, path, err) != 0)
    goto done;
  *out = v;
  v = NULL;
  rc = 0;
done:
  hlo_value_unref(v);
  tn_h5_close_type(mtype);
  tn_h5_close_space(space);
  tn_h5_close_type(ftype);
  tn_h5_close_dset(dset);
  return rc;
}

int tn_h5_read_array(hid_t loc, const char *path, const hlo_shape *want, const char *what, hlo_value **out,
                     hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = read_array(loc, path, want, what, out, err); }
  H5E_END_TRY;
  return rc;
}

/* ---- sets ------------------------------------------------------------------- */

/* buf = "group/k" */
static int join(char *buf, const char *group, int k, hlo_error *err) {
  int n = snprintf(buf, PATH_MAX_LEN, "%s/%d", group, k);
  if (n < 0 || n >= PATH_MAX_LEN)
    return tn_h5_fail(err, "%s: path too long", group);
  return 0;
}

/* Creates group `path` and any missing groups above it. */
static int make_group(hid_t loc, const char *path, hlo_error *err) {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), g = -1;
  if (lcpl >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0)
    g = H5Gcreate2(loc, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  tn_h5_close_plist(lcpl);
  if (g < 0)
    return tn_h5_fail(err, "%s%s: cannot create group (does it exist already?)", slash(path), path);
  H5Gclose(g);
  return 0;
}

/* Writes the array leaves of v, depth first, as group/<*next>, ... */
static int write_leaves(hid_t loc, const char *group, const hlo_value *v, int *next, hlo_error *err) {
  if (v->type == HLO_TOKEN)
    return 0; /* no data: not a leaf */
  if (v->type == HLO_TUPLE) {
    for (int i = 0; i < v->ntuple; i++)
      if (write_leaves(loc, group, v->elems[i], next, err) != 0)
        return -1;
    return 0;
  }
  char path[PATH_MAX_LEN];
  if (join(path, group, (*next)++, err) != 0)
    return -1;
  return write_array(loc, path, v, err);
}

static int write_inputs(hid_t loc, const char *group, int n, hlo_value *const *args, hlo_error *err) {
  if (make_group(loc, group, err) != 0)
    return -1;
  for (int k = 0; k < n; k++) {
    char path[PATH_MAX_LEN];
    if (join(path, group, k, err) != 0)
      return -1;
    if (args[k]->type == HLO_TOKEN)
      continue; /* a token parameter holds no data: no dataset */
    if (args[k]->type == HLO_TUPLE) {
      int next = 0;
      if (make_group(loc, path, err) != 0 || write_leaves(loc, path, args[k], &next, err) != 0)
        return -1;
    } else if (write_array(loc, path, args[k], err) != 0) {
      return -1;
    }
  }
  return 0;
}

int tn_h5_write_inputs(hid_t loc, const char *group, int n, hlo_value *const *args, hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = write_inputs(loc, group, n, args, err); }
  H5E_END_TRY;
  return rc;
}

int tn_h5_write_outputs(hid_t loc, const char *group, const hlo_value *root, hlo_error *err) {
  int rc, next = 0;
  H5E_BEGIN_TRY {
    rc = make_group(loc, group, err);
    if (rc == 0)
      rc = write_leaves(loc, group, root, &next, err);
  }
  H5E_END_TRY;
  return rc;
}

/* Reads a value of shape s whose leaves are group/<*next>, ... */
static hlo_value *read_leaves(hid_t loc, const char *group, const hlo_shape *s, const char *what, int *next,
                              hlo_error *err) {
  if (s->type == HLO_TOKEN) {
    hlo_value *t = hlo_value_from_shape(s); /* no data: not a leaf */
    if (!t)
      tn_h5_fail(err, "out of memory");
    return t;
  }
  if (s->type != HLO_TUPLE) {
    char path[PATH_MAX_LEN];
    hlo_value *v = NULL;
    if (join(path, group, (*next)++, err) != 0 || read_array(loc, path, s, what, &v, err) != 0)
      return NULL;
    return v;
  }
  hlo_value **e = calloc((size_t)(s->ntuple ? s->ntuple : 1), sizeof *e);
  if (!e) {
    tn_h5_fail(err, "out of memory");
    return NULL;
  }
  int i;
  for (i = 0; i < s->ntuple; i++) {
    e[i] = read_leaves(loc, group, &s->elems[i], what, next, err);
    if (!e[i])
      break;
  }
  hlo_value *t = NULL;
  if (i == s->ntuple) {
    t = hlo_value_tuple(s->ntuple, e);
    if (!t)
      tn_h5_fail(err, "out of memory");
  }
  if (!t)
    for (int j = 0; j < i; j++)
      hlo_value_unref(e[j]);
  free(e);
  return t;
}

/* Number of links in group `path`; -1 with err when it is not a group. */
static long long group_size(hid_t loc, const char *path, hlo_error *err) {
  int has = tn_h5_exists(loc, path, err);
  if (has <= 0)
    return has < 0 ? -1 : tn_h5_fail(err, "%s%s: no such group", slash(path), path);
  hid_t g = H5Gopen2(loc, path, H5P_DEFAULT);
  H5G_info_t info;
  long long n = -1;
  if (g >= 0 && H5Gget_info(g, &info) >= 0)
    n = (long long)info.nlinks;
  tn_h5_close_group(g);
  if (n < 0)
    tn_h5_fail(err, "%s%s: not a group", slash(path), path);
  return n;
}

static int read_inputs(hid_t loc, const char *group, const hlo_computation *c, hlo_value **args, hlo_error *err) {
  long long have = group_size(loc, group, err);
  if (have < 0)
    return -1;
  int k;
  for (k = 0; k < c->nparams; k++) {
    const hlo_instr *p = c->params[k];
    char what[64], path[PATH_MAX_LEN];
    snprintf(what, sizeof what, "parameter %d", k);
    if (!p) {
      tn_h5_fail(err, "%s: the computation has no parameter %d", c->name, k);
      break;
    }
    if (join(path, group, k, err) != 0)
      break;
    int next = 0;
    if (p->shape.type == HLO_TOKEN) {
      /* No data, so no dataset: the token is made, not read. */
      args[k] = hlo_value_from_shape(&p->shape);
      if (!args[k])
        tn_h5_fail(err, "out of memory");
    } else if (p->shape.type == HLO_TUPLE) {
      /* A tuple parameter is a group of its leaves. */
      if (group_size(loc, path, err) < 0)
        break;
      args[k] = read_leaves(loc, path, &p->shape, what, &next, err);
    } else {
      args[k] = NULL;
      read_array(loc, path, &p->shape, what, &args[k], err);
    }
    if (!args[k])
      break;
  }
  if (k == c->nparams && have > c->nparams) {
    tn_h5_fail(err, "%s%s: holds %lld entries but %s takes %d parameters", slash(group), group, have, c->name,
         c->nparams);
  } else if (k == c->nparams) {
    return 0;
  }
  for (int j = 0; j < k; j++) {
    hlo_value_unref(args[j]);
    args[j] = NULL;
  }
  return -1;
}

int tn_h5_read_inputs(hid_t loc, const char *group, const hlo_computation *c, hlo_value **args,
                      hlo_error *err) {
  int rc;
  H5E_BEGIN_TRY { rc = read_inputs(loc, group, c, args, err); }
  H5E_END_TRY;
  return rc;
}

int tn_h5_read_outputs(hid_t loc, const char *group, const hlo_shape *root, hlo_value **out, hlo_error *err) {
  hlo_value *v = NULL;
  H5E_BEGIN_TRY {
    int next = 0;
    if (group_size(loc, group, err) >= 0)
      v = read_leaves(loc, group, root, "output", &next, err);
  }
  H5E_END_TRY;
  if (!v)
    return -1;
  *out = v;
  return 0;
}
