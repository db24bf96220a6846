/* unit_wire.c — a unit's results as bytes and back (unit_wire.h). */
#include "unit_wire.h"

#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_types.h"

void tn_wire_put(tn_wire *w, const void *p, size_t n) {
  if (w->failed || n == 0)
    return;
  if (w->cap - w->len < n) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap - w->len < n) {
      if (cap > SIZE_MAX / 2) {
        w->failed = 1;
        return;
      }
      cap *= 2;
    }
    unsigned char *d = realloc(w->data, cap);
    if (!d) {
      w->failed = 1;
      return;
    }
    w->data = d;
    w->cap = cap;
  }
  memcpy(w->data + w->len, p, n);
  w->len += n;
}

void tn_wire_put_i64(tn_wire *w, int64_t v) { tn_wire_put(w, &v, sizeof v); }
void tn_wire_put_f64(tn_wire *w, double v) { tn_wire_put(w, &v, sizeof v); }

void tn_wire_put_str(tn_wire *w, const char *s) {
  tn_wire_put_i64(w, s ? (int64_t)strlen(s) : -1);
  if (s)
    tn_wire_put(w, s, strlen(s));
}

void tn_wire_free(tn_wire *w) {
  free(w->data);
  memset(w, 0, sizeof *w);
}

int tn_wire_get(tn_wire_reader *r, void *p, size_t n) {
  if (r->failed || r->len - r->off < n) {
    r->failed = 1;
    return -1;
  }
  memcpy(p, r->data + r->off, n);
  r->off += n;
  return 0;
}

int tn_wire_get_i64(tn_wire_reader *r, int64_t *v) { return tn_wire_get(r, v, sizeof *v); }
int tn_wire_get_f64(tn_wire_reader *r, double *v) { return tn_wire_get(r, v, sizeof *v); }

/* A count of items of `size` bytes each that the rest of the buffer can
 * hold: anything larger is damage, not a reason to allocate. */
static int get_count(tn_wire_reader *r, size_t size, int64_t *n) {
  if (tn_wire_get_i64(r, n) != 0)
    return -1;
  if (*n < 0 || (size > 0 && (uint64_t)*n > (r->len - r->off) / size)) {
    r->failed = 1;
    return -1;
  }
  return 0;
}

int tn_wire_get_str(tn_wire_reader *r, char **s) {
  *s = NULL;
  int64_t n;
  if (tn_wire_get_i64(r, &n) != 0)
    return -1;
  if (n == -1)
    return 0;
  if (n < 0 || (uint64_t)n > r->len - r->off) {
    r->failed = 1;
    return -1;
  }
  char *t = malloc((size_t)n + 1);
  if (!t) {
    r->failed = 1;
    return -1;
  }
  memcpy(t, r->data + r->off, (size_t)n);
  t[n] = '\0';
  r->off += (size_t)n;
  *s = t;
  return 0;
}

/* The sizes of the structs sent raw: a peer built differently disagrees. */
static void layout_tag(int64_t tag[4]) {
  tag[0] = 0x746e7769726531; /* "tnwire1" */
  tag[1] = (int64_t)sizeof(tn_fusion_result);
  tag[2] = (int64_t)sizeof(tn_cand_result);
  tag[3] = (int64_t)sizeof(tn_error_map);
}

static void put_value(tn_wire *w, const hlo_value *v) {
  if (!v) {
    tn_wire_put_i64(w, -1);
    return;
  }
  tn_wire_put_i64(w, v->type);
  tn_wire_put_i64(w, v->rank);
  for (int d = 0; d < v->rank; d++)
    tn_wire_put_i64(w, v->dims[d]);
  if (v->type == HLO_TUPLE) {
    tn_wire_put_i64(w, v->ntuple);
    for (int i = 0; i < v->ntuple; i++)
      put_value(w, v->elems[i]);
  } else {
    tn_wire_put(w, v->data, (size_t)v->count * v->elem_size);
  }
}

/* depth bounds the recursion a damaged buffer could ask for. */
static int get_value(tn_wire_reader *r, hlo_value **out, int depth) {
  *out = NULL;
  int64_t type, rank;
  if (tn_wire_get_i64(r, &type) != 0)
    return -1;
  if (type == -1)
    return 0;
  if (depth > 64 || tn_wire_get_i64(r, &rank) != 0 || rank < 0 || rank > HLO_MAX_RANK || type <= HLO_INVALID ||
      type >= HLO_ETYPE_COUNT) {
    r->failed = 1;
    return -1;
  }
  int64_t dims[HLO_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++)
    if (tn_wire_get_i64(r, &dims[d]) != 0 || dims[d] < 0)
      return r->failed = 1, -1;
  if (type == HLO_TUPLE) {
    int64_t n;
    if (get_count(r, sizeof(int64_t), &n) != 0)
      return -1;
    hlo_value **elems = calloc((size_t)n + 1, sizeof *elems);
    if (!elems)
      return r->failed = 1, -1;
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
      ok = get_value(r, &elems[i], depth + 1) == 0 && elems[i];
    if (ok)
      *out = hlo_value_tuple((int)n, elems); /* takes the references */
    if (!*out) {
      for (int64_t i = 0; i < n; i++)
        hlo_value_unref(elems[i]);
      r->failed = 1;
    }
    free(elems);
    return *out ? 0 : -1;
  }
  hlo_value *v = hlo_value_array_uninit((hlo_etype)type, (int)rank, dims);
  if (!v || v->elem_size == 0 || (uint64_t)v->count > (r->len - r->off) / v->elem_size ||
      tn_wire_get(r, v->data, (size_t)v->count * v->elem_size) != 0) {
    hlo_value_unref(v);
    r->failed = 1;
    return -1;
  }
  *out = v;
  return 0;
}

static int64_t map_elems(const tn_error_map *e) {
  int64_t n = 1;
  for (int d = 0; d < e->rank; d++)
    n *= e->dims[d];
  return n;
}

void tn_wire_put_result(tn_wire *w, const tn_fusion_result *r) {
  int64_t tag[4];
  layout_tag(tag);
  tn_wire_put(w, tag, sizeof tag);
  tn_fusion_result plain;
  memcpy(&plain, r, sizeof plain);
  plain.hlo = NULL;
  plain.cands = NULL;
  plain.error_maps = NULL;
  plain.inputs = NULL;
  plain.cover.pairs_text = NULL;
  tn_wire_put(w, &plain, sizeof plain);
  tn_wire_put_str(w, r->hlo);
  tn_wire_put_i64(w, r->ncands);
  tn_wire_put(w, r->cands, sizeof *r->cands * (size_t)r->ncands);
  tn_wire_put_i64(w, r->nerror_maps);
  for (int i = 0; i < r->nerror_maps; i++) {
    tn_error_map e = r->error_maps[i];
    e.data = NULL;
    tn_wire_put(w, &e, sizeof e);
    tn_wire_put(w, r->error_maps[i].data, sizeof(float) * (size_t)map_elems(&e));
  }
  tn_wire_put_i64(w, r->inputs ? r->ninputs : 0);
  for (int i = 0; r->inputs && i < r->ninputs; i++)
    put_value(w, r->inputs[i]);
  tn_wire_put_str(w, r->cover.pairs_text);
}

int tn_wire_get_result(tn_wire_reader *rd, tn_fusion_result *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  int64_t tag[4], want[4];
  layout_tag(want);
  if (tn_wire_get(rd, tag, sizeof tag) != 0 || memcmp(tag, want, sizeof tag) != 0)
    return hlo_error_set(err, 0, 0, "unit results from a different build of tune (or damaged): refused");
  tn_fusion_result r;
  if (tn_wire_get(rd, &r, sizeof r) != 0)
    goto bad;
  /* Nothing the sender's pointers held is valid here. */
  r.hlo = NULL;
  r.cands = NULL;
  r.error_maps = NULL;
  r.inputs = NULL;
  r.cover.pairs_text = NULL;
  int64_t ncands = r.ncands, nmaps = r.nerror_maps, ninputs = r.ninputs;
  r.ncands = r.nerror_maps = r.ninputs = 0; /* so a partial r frees cleanly */
  int64_t n;
  if (tn_wire_get_str(rd, &r.hlo) != 0 || get_count(rd, sizeof *r.cands, &n) != 0 || n != ncands)
    goto bad_free;
  if (n > 0) {
    if (!(r.cands = malloc(sizeof *r.cands * (size_t)n)) || tn_wire_get(rd, r.cands, sizeof *r.cands * (size_t)n))
      goto bad_free;
    r.ncands = (int)n;
  }
  if (get_count(rd, sizeof(tn_error_map), &n) != 0 || n != nmaps)
    goto bad_free;
  if (n > 0 && !(r.error_maps = calloc((size_t)n, sizeof *r.error_maps)))
    goto bad_free;
  for (int64_t i = 0; i < n; i++) {
    tn_error_map e;
    if (tn_wire_get(rd, &e, sizeof e) != 0 || e.rank < 0 || e.rank > HLO_MAX_RANK)
      goto bad_free;
    int64_t elems = 1;
    for (int d = 0; d < e.rank; d++) {
      if (e.dims[d] < 0 || (e.dims[d] > 0 && elems > (int64_t)((rd->len - rd->off) / sizeof(float)) / e.dims[d]))
        goto bad_free;
      elems *= e.dims[d];
    }
    if ((uint64_t)elems > (rd->len - rd->off) / sizeof(float))
      goto bad_free;
    e.data = malloc(sizeof(float) * (size_t)(elems ? elems : 1));
    if (!e.data)
      goto bad_free;
    r.error_maps[i] = e;
    r.nerror_maps = (int)i + 1;
    if (tn_wire_get(rd, e.data, sizeof(float) * (size_t)elems) != 0)
      goto bad_free;
  }
  if (get_count(rd, sizeof(int64_t), &n) != 0 || (n != ninputs && n != 0))
    goto bad_free;
  if (n > 0) {
    if (!(r.inputs = calloc((size_t)n, sizeof *r.inputs)))
      goto bad_free;
    r.ninputs = (int)n;
    for (int64_t i = 0; i < n; i++)
      if (get_value(rd, &r.inputs[i], 0) != 0)
        goto bad_free;
  } else {
    r.ninputs = (int)ninputs;
  }
  if (tn_wire_get_str(rd, &r.cover.pairs_text) != 0)
    goto bad_free;
  *out = r;
  return 0;
bad_free:
  tn_fusion_result_free(&r);
bad:
  return hlo_error_set(err, 0, 0, "unit results cut short or damaged: refused");
}
