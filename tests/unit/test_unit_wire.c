/* test_unit_wire.c — a unit's results as bytes and back (tuner/sweep/unit_wire.c),
 * the form in which an MPI rank sends them to rank 0.
 *
 * A hand-made result (result_fixture.h) with candidates, an error map and
 * captured inputs goes through the buffer; what comes out must hold the
 * same values, with pointers of its own.  A cut or damaged buffer must be
 * refused with a message, without reading past its end or allocating what
 * its lengths claim (AddressSanitizer watches both).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hlo/hlo_value.h"
#include "result_fixture.h"
#include "sweep/unit_wire.h"

/* Three candidates (match, divergent, compile error), an error map with
 * two known values, and two inputs: f32[2,3] = 1..6 and the tuple
 * (s32[2] = {7, -8}, pred[] = true). */
static void make_result(tn_fusion_result *r) {
  rfx_result(r, "fused_thing", "dir/thing.hlo", "reduce", RFX_THING_HLO, 0x1234abcd5678ef90ull, 3);
  rfx_cand(&r->cands[0], 0, RFX_DEFAULT_CONFIG, CHK_VERDICT_MATCH);
  rfx_cand(&r->cands[1], 1, RFX_DIVERGENT_CONFIG, CHK_VERDICT_MISMATCH_CANDIDATE);
  rfx_divergent(&r->cands[1]);
  rfx_cand(&r->cands[2], 2, RFX_UNCOMPILABLE_CONFIG, CHK_VERDICT_COMPILE_ERROR);
  snprintf(r->cands[2].message, sizeof r->cands[2].message, "VMEM exhausted");
  r->verdict_counts[CHK_VERDICT_MATCH] = 1;
  r->verdict_counts[CHK_VERDICT_MISMATCH_CANDIDATE] = 1;
  r->verdict_counts[CHK_VERDICT_COMPILE_ERROR] = 1;
  r->wall_time = 1.5;
  r->best = 0;
  tn_error_map *e = rfx_error_map(r, 1);
  e->data[0] = 0.25f;
  e->data[300 * 400 - 1] = -3.0f;
  e->peak.rows = 2;
  e->peak.cols = 3;
  e->peak.peak[0] = 299;
  e->peak.peak[1] = 399;
  e->peak.origin[0] = 298;
  e->peak.origin[1] = 397;
  e->peak.expected[5] = 1.5;
  e->peak.actual[5] = -1.5;
  int64_t d23[2] = {2, 3}, d2[1] = {2};
  hlo_value *a = hlo_value_array(HLO_F32, 2, d23);
  for (int i = 0; i < 6; i++)
    ((float *)a->data)[i] = (float)(i + 1);
  hlo_value *s = hlo_value_array(HLO_S32, 1, d2);
  ((int32_t *)s->data)[0] = 7;
  ((int32_t *)s->data)[1] = -8;
  hlo_value *p = hlo_value_array(HLO_PRED, 0, NULL);
  ((uint8_t *)p->data)[0] = 1;
  hlo_value *elems[2] = {s, p};
  r->inputs = calloc(2, sizeof *r->inputs);
  assert_non_null(r->inputs);
  r->inputs[0] = a;
  r->inputs[1] = hlo_value_tuple(2, elems);
  r->ninputs = 2;
  snprintf(r->inputs_from, sizeof r->inputs_from, "graph");
}

static void round_trip_keeps_every_value(void **state) {
  (void)state;
  tn_fusion_result r;
  make_result(&r);
  tn_wire w = {0};
  tn_wire_put_result(&w, &r);
  assert_false(w.failed);
  tn_wire_reader rd = {.data = w.data, .len = w.len};
  tn_fusion_result back;
  hlo_error err = {0};
  assert_int_equal(tn_wire_get_result(&rd, &back, &err), 0);
  assert_int_equal(rd.off, w.len);
  assert_string_equal(back.name, "fused_thing");
  assert_string_equal(back.source, "dir/thing.hlo");
  assert_string_equal(back.hlo, RFX_THING_HLO);
  assert_true(back.hlo != r.hlo);
  assert_true(back.fingerprint == 0x1234abcd5678ef90ull);
  assert_true(back.seed == 42);
  assert_true(back.wall_time == 1.5);
  assert_int_equal(back.ncands, 3);
  assert_memory_equal(back.cands, r.cands, 3 * sizeof *r.cands);
  assert_string_equal(back.cands[1].config, RFX_DIVERGENT_CONFIG);
  assert_true(back.cands[1].vs_default.max_ulp == 123456789012ull);
  assert_int_equal(back.cands[1].vs_default.hist[3], 103);
  assert_string_equal(back.cands[2].message, "VMEM exhausted");
  assert_int_equal(back.verdict_counts[CHK_VERDICT_MISMATCH_CANDIDATE], 1);
  assert_int_equal(back.nerror_maps, 1);
  assert_int_equal(back.error_maps[0].cand_id, 1);
  assert_int_equal(back.error_maps[0].dims[0], 300);
  assert_int_equal(back.error_maps[0].dims[1], 400);
  assert_true(back.error_maps[0].data[0] == 0.25f);
  assert_true(back.error_maps[0].data[1] == 0.0f);
  assert_true(back.error_maps[0].data[300 * 400 - 1] == -3.0f);
  /* The values around the peak travel with the map. */
  assert_int_equal(back.error_maps[0].peak.rows, 2);
  assert_int_equal(back.error_maps[0].peak.cols, 3);
  assert_int_equal(back.error_maps[0].peak.peak[1], 399);
  assert_int_equal(back.error_maps[0].peak.origin[0], 298);
  assert_true(back.error_maps[0].peak.expected[5] == 1.5 && back.error_maps[0].peak.actual[5] == -1.5);
  assert_int_equal(back.ninputs, 2);
  const hlo_value *a = back.inputs[0], *t = back.inputs[1];
  assert_int_equal(a->type, HLO_F32);
  assert_int_equal(a->rank, 2);
  assert_int_equal(a->dims[1], 3);
  for (int i = 0; i < 6; i++)
    assert_true(((const float *)a->data)[i] == (float)(i + 1));
  assert_int_equal(t->type, HLO_TUPLE);
  assert_int_equal(t->ntuple, 2);
  assert_int_equal(((const int32_t *)t->elems[0]->data)[1], -8);
  assert_int_equal(t->elems[1]->type, HLO_PRED);
  assert_int_equal(t->elems[1]->rank, 0);
  assert_int_equal(((const uint8_t *)t->elems[1]->data)[0], 1);
  assert_string_equal(back.inputs_from, "graph");
  tn_fusion_result_free(&back);
  tn_fusion_result_free(&r);
  tn_wire_free(&w);
}

/* Every cut of the buffer short of its end is refused. */
static void cut_buffers_are_refused(void **state) {
  (void)state;
  tn_fusion_result r;
  make_result(&r);
  tn_wire w = {0};
  tn_wire_put_result(&w, &r);
  assert_false(w.failed);
  size_t cuts[] = {0, 1, 31, 32, 33, sizeof r, w.len / 2, w.len - 100, w.len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    tn_wire_reader rd = {.data = w.data, .len = cuts[i]};
    tn_fusion_result back;
    hlo_error err = {0};
    assert_int_equal(tn_wire_get_result(&rd, &back, &err), -1);
    assert_non_null(strstr(err.msg, "refused"));
    assert_null(back.cands);
  }
  tn_fusion_result_free(&r);
  tn_wire_free(&w);
}

/* A length that claims more than the buffer holds is damage: refused, not
 * allocated.  The candidate count sits right after the module text. */
static void huge_counts_are_refused(void **state) {
  (void)state;
  tn_fusion_result r;
  make_result(&r);
  tn_wire w = {0};
  tn_wire_put_result(&w, &r);
  size_t at = 4 * sizeof(int64_t) + sizeof r + sizeof(int64_t) + strlen(RFX_THING_HLO);
  int64_t n;
  memcpy(&n, w.data + at, sizeof n);
  assert_int_equal(n, 3); /* found where the format puts it */
  n = INT64_C(1) << 60;
  memcpy(w.data + at, &n, sizeof n);
  tn_wire_reader rd = {.data = w.data, .len = w.len};
  tn_fusion_result back;
  hlo_error err = {0};
  assert_int_equal(tn_wire_get_result(&rd, &back, &err), -1);
  assert_non_null(strstr(err.msg, "damaged"));
  tn_fusion_result_free(&r);
  tn_wire_free(&w);
}

/* Bytes from a build whose structs differ are refused by the tag. */
static void other_layouts_are_refused(void **state) {
  (void)state;
  tn_fusion_result r;
  make_result(&r);
  tn_wire w = {0};
  tn_wire_put_result(&w, &r);
  int64_t other = (int64_t)sizeof r + 8;
  memcpy(w.data + sizeof(int64_t), &other, sizeof other);
  tn_wire_reader rd = {.data = w.data, .len = w.len};
  tn_fusion_result back;
  hlo_error err = {0};
  assert_int_equal(tn_wire_get_result(&rd, &back, &err), -1);
  assert_non_null(strstr(err.msg, "different build"));
  tn_fusion_result_free(&r);
  tn_wire_free(&w);
}

static void strings_and_numbers(void **state) {
  (void)state;
  tn_wire w = {0};
  tn_wire_put_str(&w, "tpu-v5e");
  tn_wire_put_str(&w, NULL);
  tn_wire_put_str(&w, "");
  tn_wire_put_i64(&w, -7);
  tn_wire_put_f64(&w, 0.1);
  tn_wire_reader rd = {.data = w.data, .len = w.len};
  char *a, *b, *c;
  int64_t i;
  double f;
  assert_int_equal(tn_wire_get_str(&rd, &a), 0);
  assert_int_equal(tn_wire_get_str(&rd, &b), 0);
  assert_int_equal(tn_wire_get_str(&rd, &c), 0);
  assert_int_equal(tn_wire_get_i64(&rd, &i), 0);
  assert_int_equal(tn_wire_get_f64(&rd, &f), 0);
  assert_string_equal(a, "tpu-v5e");
  assert_null(b);
  assert_string_equal(c, "");
  assert_int_equal(i, -7);
  assert_true(f == 0.1);
  assert_int_equal(tn_wire_get_i64(&rd, &i), -1); /* nothing left */
  assert_true(rd.failed);
  free(a);
  free(c);
  tn_wire_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip_keeps_every_value),
      cmocka_unit_test(cut_buffers_are_refused),
      cmocka_unit_test(huge_counts_are_refused),
      cmocka_unit_test(other_layouts_are_refused),
      cmocka_unit_test(strings_and_numbers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
