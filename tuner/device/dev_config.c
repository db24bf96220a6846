/* dev_config.c — canonical text, parsing and fingerprints of candidates. */
#include "dev_config.h"
#include "hlo/hlo_hash.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const flag_names[DEV_FLAG_COUNT] = {
#define X(e, name) name,
    DEV_FLAG_LIST(X)
#undef X
};

static const char *const prec_names[] = {"default", "high", "highest"};

const char *dev_precision_name(dev_precision p) {
  return (unsigned)p < 3 ? prec_names[p] : "invalid";
}

const char *dev_flag_name(unsigned i) { return i < DEV_FLAG_COUNT ? flag_names[i] : "invalid"; }

/* Appends with bounds; keeps the buffer NUL-terminated when it is short. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t n, size_t *at, const char *fmt, ...) {
  if (*at >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *at, n - *at, fmt, ap);
  va_end(ap);
  if (w > 0)
    *at += (size_t)w;
}

void dev_config_print(const dev_config *c, char *buf, size_t n) {
  size_t at = 0;
  if (n == 0)
    return;
  buf[0] = '\0';
  put(buf, n, &at, "%s", "tile=");
  if (c->rank == 0)
    put(buf, n, &at, "%s", "1");
  for (int i = 0; i < c->rank; i++)
    put(buf, n, &at, i ? "x%lld" : "%lld", (long long)c->tile[i]);
  put(buf, n, &at, " k=%lld", (long long)c->k);
  put(buf, n, &at, " buf=%d", c->buf);
  put(buf, n, &at, "%s", " order=");
  if (c->norder == 0)
    put(buf, n, &at, "%s", "-");
  for (int i = 0; i < c->norder; i++) {
    if (c->order[i] == DEV_ORDER_K)
      put(buf, n, &at, "%s", "k");
    else
      put(buf, n, &at, "%d", c->order[i]);
  }
  put(buf, n, &at, " pack=%d", c->pack);
  put(buf, n, &at, " prec=%s", dev_precision_name(c->prec));
  put(buf, n, &at, "%s", " flags=");
  int any = 0;
  for (unsigned i = 0; i < DEV_FLAG_COUNT; i++)
    if (c->flags & (1u << i)) {
      put(buf, n, &at, any ? ",%s" : "%s", flag_names[i]);
      any = 1;
    }
  if (!any)
    put(buf, n, &at, "%s", "none");
}

uint64_t dev_config_fingerprint(const dev_config *c) {
  char text[DEV_CONFIG_TEXT_MAX];
  dev_config_print(c, text, sizeof text);
  return hlo_fnv1a_str(HLO_FNV_BASIS_FINGERPRINT, text);
}

bool dev_config_equal(const dev_config *a, const dev_config *b) {
  if (a->rank != b->rank || a->k != b->k || a->buf != b->buf || a->norder != b->norder ||
      a->pack != b->pack || a->prec != b->prec || a->flags != b->flags)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->tile[i] != b->tile[i])
      return false;
  for (int i = 0; i < a->norder; i++)
    if (a->order[i] != b->order[i])
      return false;
  return true;
}

int dev_config_validate(const dev_config *c, hlo_error *err) {
  if (c->rank < 0 || c->rank > DEV_MAX_RANK)
    return hlo_error_set(err, 1, 1, "tile rank %d is outside 0..%d", c->rank, DEV_MAX_RANK);
  for (int i = 0; i < c->rank; i++)
    if (c->tile[i] < 1)
      return hlo_error_set(err, 1, 1, "tile dimension %d must be at least 1", i);
  if (c->k < 0)
    return hlo_error_set(err, 1, 1, "k must not be negative");
  if (c->buf < 1 || c->buf > 4)
    return hlo_error_set(err, 1, 1, "buf must be 1..4");
  if (c->pack != 1 && c->pack != 2 && c->pack != 4)
    return hlo_error_set(err, 1, 1, "pack must be 1, 2 or 4");
  if ((unsigned)c->prec > DEV_PREC_HIGHEST)
    return hlo_error_set(err, 1, 1, "invalid precision");
  if (c->norder != c->rank + (c->k > 0))
    return hlo_error_set(err, 1, 1, "order must name each of the %d tiled dimensions%s once", c->rank,
                         c->k > 0 ? " and k" : "");
  unsigned seen = 0;
  for (int i = 0; i < c->norder; i++) {
    int d = c->order[i];
    unsigned bit = d == DEV_ORDER_K ? 1u << DEV_MAX_RANK : (d >= 0 && d < c->rank ? 1u << d : 0);
    if (!bit || (seen & bit) || (d == DEV_ORDER_K && c->k == 0))
      return hlo_error_set(err, 1, 1, "order is not a permutation of the tiled dimensions%s",
                           c->k > 0 ? " and k" : "");
    seen |= bit;
  }
  if (c->flags >> DEV_FLAG_COUNT)
    return hlo_error_set(err, 1, 1, "unknown flag bits");
  return 0;
}

/* ---- parsing --------------------------------------------------------------- */

typedef struct {
  const char *s, *p;
  hlo_error *err;
} cursor;

__attribute__((format(printf, 2, 3))) static int fail(cursor *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = hlo_error_vset(c->err, 1, (int)(c->p - c->s) + 1, fmt, ap);
  va_end(ap);
  return rc;
}

static int expect_key(cursor *c, const char *key, int first) {
  if (!first) {
    if (*c->p != ' ')
      return fail(c, "expected a single space before '%s='", key);
    c->p++;
  }
  size_t n = strlen(key);
  if (strncmp(c->p, key, n) != 0 || c->p[n] != '=')
    return fail(c, "expected '%s=' (fields are tile, k, buf, order, pack, prec, flags, in that order)", key);
  c->p += n + 1;
  return 0;
}

static int number(cursor *c, int64_t *out, const char *what) {
  if (*c->p < '0' || *c->p > '9')
    return fail(c, "expected a number for %s", what);
  errno = 0;
  char *end;
  long long v = strtoll(c->p, &end, 10);
  if (errno == ERANGE || v > (1ll << 40))
    return fail(c, "%s is too large", what);
  c->p = end;
  *out = v;
  return 0;
}

/* A word up to the next space or end. */
static size_t word(const cursor *c) {
  size_t n = 0;
  while (c->p[n] && c->p[n] != ' ')
    n++;
  return n;
}

int dev_config_parse(const char *text, dev_config *out, hlo_error *err) {
  cursor c = {text, text, err};
  dev_config cfg;
  memset(&cfg, 0, sizeof cfg);
  int64_t v;
  if (expect_key(&c, "tile", 1) != 0)
    return -1;
  int dims = 0;
  for (;;) {
    if (dims == DEV_MAX_RANK)
      return fail(&c, "more than %s tile dimensions", "8");
    if (number(&c, &v, "a tile dimension") != 0)
      return -1;
    cfg.tile[dims++] = v;
    if (*c.p != 'x')
      break;
    c.p++;
  }
  cfg.rank = dims;
  if (expect_key(&c, "k", 0) != 0 || number(&c, &cfg.k, "k") != 0)
    return -1;
  if (expect_key(&c, "buf", 0) != 0 || number(&c, &v, "buf") != 0)
    return -1;
  cfg.buf = (int)v;
  if (expect_key(&c, "order", 0) != 0)
    return -1;
  const char *order_at = c.p;
  if (*c.p == '-') {
    c.p++;
  } else {
    while (*c.p && *c.p != ' ') {
      if (cfg.norder == DEV_MAX_RANK + 1)
        return fail(&c, "order has too many %s", "entries");
      if (*c.p == 'k')
        cfg.order[cfg.norder++] = DEV_ORDER_K;
      else if (*c.p >= '0' && *c.p <= '9')
        cfg.order[cfg.norder++] = *c.p - '0';
      else
        return fail(&c, "order takes digits and %s", "'k'");
      c.p++;
    }
  }
  /* A scalar output is written tile=1 with no digit in order. */
  bool digit = false;
  for (int i = 0; i < cfg.norder; i++)
    digit = digit || cfg.order[i] != DEV_ORDER_K;
  if (cfg.rank == 1 && cfg.tile[0] == 1 && !digit)
    cfg.rank = 0;
  if (expect_key(&c, "pack", 0) != 0 || number(&c, &v, "pack") != 0)
    return -1;
  cfg.pack = (int)v;
  if (expect_key(&c, "prec", 0) != 0)
    return -1;
  size_t n = word(&c);
  int found = -1;
  for (int i = 0; i < 3; i++)
    if (strlen(prec_names[i]) == n && strncmp(c.p, prec_names[i], n) == 0)
      found = i;
  if (found < 0)
    return fail(&c, "prec must be default, high or highest%s", "");
  cfg.prec = (dev_precision)found;
  c.p += n;
  if (expect_key(&c, "flags", 0) != 0)
    return -1;
  if (strncmp(c.p, "none", 4) == 0 && (c.p[4] == '\0' || c.p[4] == ' ')) {
    c.p += 4;
  } else {
    int last = -1;
    for (;;) {
      size_t m = 0;
      while (c.p[m] && c.p[m] != ',' && c.p[m] != ' ')
        m++;
      int bit = -1;
      for (int i = 0; i < DEV_FLAG_COUNT; i++)
        if (strlen(flag_names[i]) == m && strncmp(c.p, flag_names[i], m) == 0)
          bit = i;
      if (bit < 0)
        return fail(&c, "unknown flag (flags are fuse-converts, split-reduction, vec-scatter, "
                        "two-stage-sort, or none)%s", "");
      if (bit <= last)
        return fail(&c, "flags must be listed once each, in canonical order%s", "");
      last = bit;
      cfg.flags |= 1u << bit;
      c.p += m;
      if (*c.p != ',')
        break;
      c.p++;
    }
  }
  if (*c.p != '\0')
    return fail(&c, "unexpected text after the config%s", "");
  hlo_error verr;
  if (dev_config_validate(&cfg, &verr) != 0) {
    c.p = (strstr(verr.msg, "order") ? order_at : text);
    return fail(&c, "%s", verr.msg);
  }
  *out = cfg;
  return 0;
}
