/* h5headers.c — byte checks of HDF5 version 1 object headers (h5headers.h).
 *
 * Field layouts follow the HDF5 File Format Specification (version 3):
 * the superblock (II.A), the version 1 object header prefix (IV.A.1.a),
 * the attribute message (IV.A.2.m) with the datatype (IV.A.2.d) and
 * dataspace (IV.A.2.b) messages it embeds, and the continuation message
 * (IV.A.2.q).  All integers are little endian.
 */
#define _POSIX_C_SOURCE 200809L

#include "h5headers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5util.h"

enum {
  MSG_ATTRIBUTE = 0x000C,
  MSG_CONTINUATION = 0x0010,
  CLASS_VLEN = 9,
  MAX_CHUNKS = 4096, /* continuation chunks of one header */
  MAX_RANK = 32,     /* HDF5's own limit */
};

static uint64_t le(const unsigned char *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = n; i-- > 0;)
    v = v << 8 | p[i];
  return v;
}

/* Reads n bytes at absolute offset off; -1 unless all of them exist. */
static int read_at(int fd, uint64_t size, uint64_t off, void *buf, size_t n) {
  if (off > size || n > size - off)
    return -1;
  size_t have = 0;
  while (have < n) {
    ssize_t r = pread(fd, (char *)buf + have, n - have, (off_t)(off + have));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    have += (size_t)r;
  }
  return 0;
}

int tn_h5_read_layout(int fd, tn_h5_layout *lay, hlo_error *err) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  struct stat st;
  memset(lay, 0, sizeof *lay);
  if (fstat(fd, &st) != 0 || st.st_size < 0)
    return tn_h5_fail(err, "cannot tell the file's size");
  lay->size = (uint64_t)st.st_size;
  /* The superblock is at 0, or after a user block at 512, 1024, 2048... */
  for (uint64_t at = 0; at < lay->size; at = at ? at * 2 : 512) {
    unsigned char b[40];
    if (read_at(fd, lay->size, at, b, sizeof b) != 0)
      break;
    if (memcmp(b, sig, sizeof sig) != 0)
      continue;
    unsigned version = b[8], base_at;
    if (version <= 1) {
      lay->addr_size = b[13];
      lay->len_size = b[14];
      base_at = version == 0 ? 24 : 28;
    } else {
      lay->addr_size = b[9];
      lay->len_size = b[10];
      base_at = 12;
    }
    if (lay->addr_size < 2 || lay->addr_size > 8 || lay->len_size < 2 || lay->len_size > 8)
      return tn_h5_fail(err, "superblock at %llu: sizes of offsets and lengths %u and %u out of range",
                        (unsigned long long)at, lay->addr_size, lay->len_size);
    if (base_at + lay->addr_size > sizeof b)
      return tn_h5_fail(err, "superblock at %llu: cut short", (unsigned long long)at);
    lay->base = le(b + base_at, lay->addr_size);
    if (lay->base > lay->size)
      return tn_h5_fail(err, "superblock at %llu: base address beyond the end of the file", (unsigned long long)at);
    return 0;
  }
  return tn_h5_fail(err, "no HDF5 superblock");
}

/* ---- attribute messages ----------------------------------------------------- */

/* Checks one attribute message body p[0..n). */
static int check_attribute(const tn_h5_layout *lay, const unsigned char *p, size_t n, const char **why) {
  if (n < 8) {
    *why = "shorter than its fixed fields";
    return -1;
  }
  unsigned version = p[0], flags = version >= 2 ? p[1] : 0;
  size_t name = (size_t)le(p + 2, 2), dt = (size_t)le(p + 4, 2), ds = (size_t)le(p + 6, 2);
  size_t pos = version == 3 ? 9 : 8;
  bool pad = version == 1; /* version 1 pads each part to 8 bytes */
  if (version < 1 || version > 3) {
    *why = "unknown attribute message version";
    return -1;
  }
#define PADDED(x) (pad ? ((x) + 7) / 8 * 8 : (x))
  size_t dt_at = pos + PADDED(name), ds_at = dt_at + PADDED(dt), data_at = ds_at + PADDED(ds);
#undef PADDED
  if (name == 0 || dt_at > n || dt_at - pos < name || ds_at > n || data_at > n || data_at < ds_at) {
    *why = "its name, datatype and dataspace sizes do not fit in the message";
    return -1;
  }
  if (p[pos + name - 1] != '\0') {
    *why = "its name is not terminated";
    return -1;
  }
  /* Shared parts hold a reference instead of the message: nothing more
   * can be checked here. */
  if (flags & 3)
    return 0;
  if (dt < 8 || ds < 4) {
    *why = "its datatype or dataspace is too short";
    return -1;
  }
  const unsigned char *t = p + dt_at, *s = p + ds_at;
  unsigned cls = t[0] & 0x0f;
  uint64_t esize = le(t + 4, 4);
  unsigned sversion = s[0], rank = s[1], sflags = s[2];
  size_t dims_at = sversion == 1 ? 8 : 4;
  bool null_space = sversion >= 2 && s[3] == 2;
  if (sversion < 1 || sversion > 2 || rank > MAX_RANK ||
      dims_at + (size_t)rank * lay->len_size * ((sflags & 1) ? 2 : 1) > ds) {
    *why = "its dataspace does not fit in its declared size";
    return -1;
  }
  uint64_t count = null_space ? 0 : 1;
  for (unsigned i = 0; i < rank && count; i++) {
    uint64_t d = le(s + dims_at + (size_t)i * lay->len_size, lay->len_size);
    if (d != 0 && count > lay->size / d) {
      *why = "its dataspace holds more elements than the file has bytes";
      return -1;
    }
    count *= d;
  }
  if (esize == 0 && count > 0) {
    *why = "its datatype has no size";
    return -1;
  }
  if (count > 0 && (esize > n || count > (n - data_at) / esize)) {
    *why = "its data does not fit in the message";
    return -1;
  }
  /* Variable-length elements: a length and a global heap id each; the
   * length cannot be more than the file holds. */
  if (cls == CLASS_VLEN && count > 0) {
    if (esize < 4 + lay->addr_size) {
      *why = "its variable-length elements are too short";
      return -1;
    }
    for (uint64_t i = 0; i < count; i++) {
      const unsigned char *e = p + data_at + i * esize;
      if (le(e, 4) > lay->size || le(e + 4, lay->addr_size) > lay->size) {
        *why = "a variable-length element points past the end of the file";
        return -1;
      }
    }
  }
  return 0;
}

/* ---- headers --------------------------------------------------------------------- */

typedef struct chunk {
  uint64_t addr, len;
} chunk;

int tn_h5_check_header(int fd, const tn_h5_layout *lay, uint64_t addr, hlo_error *err) {
  unsigned char prefix[16];
  if (addr > lay->size - lay->base || read_at(fd, lay->size, lay->base + addr, prefix, sizeof prefix) != 0)
    return tn_h5_fail(err, "object header at %llu: past the end of the file", (unsigned long long)addr);
  if (memcmp(prefix, "OHDR", 4) == 0)
    return 0; /* version 2: checksummed, HDF5 verifies it */
  if (prefix[0] != 1)
    return tn_h5_fail(err, "object header at %llu: unknown version %u", (unsigned long long)addr, prefix[0]);

  chunk *todo = malloc(MAX_CHUNKS * sizeof *todo);
  if (!todo)
    return tn_h5_fail(err, "out of memory");
  int n = 0, rc = 0;
  todo[n++] = (chunk){addr + 16, le(prefix + 8, 4)};
  unsigned char *buf = NULL;
  for (int c = 0; c < n && rc == 0; c++) {
    uint64_t at = todo[c].addr, len = todo[c].len;
    unsigned char *nb = len > lay->size ? NULL : realloc(buf, len ? (size_t)len : 1);
    if (!nb || at > lay->size - lay->base || read_at(fd, lay->size, lay->base + at, nb, (size_t)len) != 0) {
      if (nb)
        buf = nb;
      rc = tn_h5_fail(err, "object header at %llu: a chunk of %llu bytes at %llu is past the end of the file",
                      (unsigned long long)addr, (unsigned long long)len, (unsigned long long)at);
      break;
    }
    buf = nb;
    /* Version 1 messages: type (2), size (2), flags (1), reserved (3). */
    for (uint64_t off = 0; off + 8 <= len && rc == 0;) {
      unsigned type = (unsigned)le(buf + off, 2);
      uint64_t size = le(buf + off + 2, 2);
      const unsigned char *body = buf + off + 8;
      const char *why = NULL;
      if (size > len - off - 8) {
        why = "a message runs past the end of its chunk";
      } else if (type == MSG_ATTRIBUTE && !(buf[off + 4] & 2)) {
        check_attribute(lay, body, (size_t)size, &why);
      } else if (type == MSG_CONTINUATION) {
        if (size < (uint64_t)lay->addr_size + lay->len_size)
          why = "a continuation message is too short";
        else if (n == MAX_CHUNKS)
          why = "too many continuation chunks";
        else
          todo[n++] = (chunk){le(body, lay->addr_size), le(body + lay->addr_size, lay->len_size)};
      }
      if (why)
        rc = tn_h5_fail(err, "object header at %llu: %s", (unsigned long long)addr, why);
      off += 8 + size;
    }
  }
  free(buf);
  free(todo);
  return rc;
}

int tn_h5_check_vlen_data(int fd, const tn_h5_layout *lay, uint64_t offset, uint64_t count, size_t esize,
                          size_t unit, hlo_error *err) {
  if (esize < 4 || unit == 0 || offset > lay->size - lay->base || count > (lay->size - lay->base - offset) / esize)
    return tn_h5_fail(err, "variable-length data at %llu: past the end of the file", (unsigned long long)offset);
  unsigned char e[64];
  if (esize > sizeof e)
    return 0; /* not a descriptor this check knows */
  for (uint64_t i = 0; i < count; i++) {
    if (read_at(fd, lay->size, lay->base + offset + i * esize, e, esize) != 0)
      return tn_h5_fail(err, "variable-length data at %llu: cannot read it", (unsigned long long)offset);
    uint64_t len = le(e, 4);
    if (len > lay->size / unit)
      return tn_h5_fail(err, "variable-length element %llu claims %llu bytes, more than the file holds",
                        (unsigned long long)i, (unsigned long long)len * unit);
  }
  return 0;
}
