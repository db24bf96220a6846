/* unit_wire.h — one unit's results as a byte buffer, for sending them from
 * the MPI rank that checked the unit to rank 0, which stores them
 * (mpi_sweep.h).
 *
 * The format is the in-memory tn_fusion_result itself: its plain fields as
 * raw struct bytes, followed by what its pointers own (the module text,
 * the candidates, the error maps, the captured inputs) with explicit
 * lengths.  Raw struct bytes are only meaningful to the same build of tune
 * on the same kind of host, which is what the ranks of one mpirun or srun
 * job are; the buffer opens with a tag naming the sizes of the structs so
 * that a mismatched peer is refused instead of misread.  Because the
 * receiver gets back exactly the struct the sender had, rank 0 stores the
 * same bytes a single process would have stored.
 *
 * Reading checks every length against the bytes left, so a truncated or
 * damaged buffer is an error, never an overread or a huge allocation.
 */
#ifndef TUNE_UNIT_WIRE_H
#define TUNE_UNIT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "hlo/hlo_error.h"
#include "run/result.h"

/* A growing buffer.  Writes that run out of memory set `failed` and are
 * otherwise ignored, so a sequence of puts is checked once at its end. */
typedef struct tn_wire {
  unsigned char *data; /* malloc'd */
  size_t len, cap;
  int failed;
} tn_wire;

void tn_wire_put(tn_wire *w, const void *p, size_t n);
void tn_wire_put_i64(tn_wire *w, int64_t v);
void tn_wire_put_f64(tn_wire *w, double v);
void tn_wire_put_str(tn_wire *w, const char *s); /* NULL is kept as NULL */
void tn_wire_free(tn_wire *w);

/* Reading: each get fails (returns -1 and sets `failed`) when fewer bytes
 * are left than it needs. */
typedef struct tn_wire_reader {
  const unsigned char *data;
  size_t len, off;
  int failed;
} tn_wire_reader;

int tn_wire_get(tn_wire_reader *r, void *p, size_t n);
int tn_wire_get_i64(tn_wire_reader *r, int64_t *v);
int tn_wire_get_f64(tn_wire_reader *r, double *v);
/* *s is malloc'd (NULL when NULL was put). */
int tn_wire_get_str(tn_wire_reader *r, char **s);

/* Appends r (which the caller keeps). */
void tn_wire_put_result(tn_wire *w, const tn_fusion_result *r);
/* Reads a result into *out (free with tn_fusion_result_free).  -1 with err
 * when the bytes are not one, *out then holding nothing. */
int tn_wire_get_result(tn_wire_reader *rd, tn_fusion_result *out, hlo_error *err);

#endif
