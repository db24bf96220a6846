/* eval_fixture.c — see eval_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "eval_fixture.h"

hlo_value *fx_array(hlo_etype t, int rank, const int64_t *dims, const double *vals) {
  hlo_value *v = hlo_value_array(t, rank, dims);
  assert_non_null(v);
  for (int64_t i = 0; vals && i < v->count; i++)
    hlo_value_set_f64(v, i, vals[i]);
  return v;
}

hlo_value *fx_scalar(hlo_etype t, double x) { return fx_array(t, 0, NULL, &x); }

hlo_value *fx_f32_array(int rank, const int64_t *dims, const float *v) {
  hlo_value *x = hlo_value_array(HLO_F32, rank, dims);
  assert_non_null(x);
  memcpy(x->data, v, sizeof(float) * (size_t)x->count);
  return x;
}

hlo_value *fx_eval_err(const char *text, int nargs, hlo_value **args, hlo_error *err) {
  hlo_module *m = hlo_parse(text, strlen(text), err);
  if (!m)
    fail_msg("parse: %d:%d: %s\n%s", err->line, err->col, err->msg, text);
  chk_eval_opts o = {.replicas = 1};
  hlo_value *out = NULL;
  int rc = chk_eval_module(m, nargs, args, &o, &out, err);
  hlo_module_free(m);
  for (int i = 0; i < nargs; i++)
    hlo_value_unref(args[i]);
  return rc == 0 ? out : NULL;
}

hlo_value *fx_eval(const char *text, int nargs, hlo_value **args) {
  hlo_error err = {0};
  hlo_value *v = fx_eval_err(text, nargs, args, &err);
  if (!v)
    fail_msg("eval: %d:%d: %s", err.line, err.col, err.msg);
  return v;
}

void fx_eval_fails(const char *text, int nargs, hlo_value **args, const char *needle) {
  hlo_error err = {0};
  hlo_value *v = fx_eval_err(text, nargs, args, &err);
  if (v) {
    hlo_value_unref(v);
    fail_msg("evaluation succeeded; expected an error mentioning '%s'", needle);
  }
  if (!strstr(err.msg, needle))
    fail_msg("error '%s' does not mention '%s'", err.msg, needle);
}

void fx_expect(hlo_value *v, hlo_etype t, int rank, const int64_t *dims, const double *want) {
  assert_non_null(v);
  assert_int_equal(v->type, t);
  assert_int_equal(v->rank, rank);
  for (int d = 0; d < rank; d++)
    assert_int_equal(v->dims[d], dims[d]);
  for (int64_t i = 0; i < v->count; i++) {
    double got = hlo_value_get_f64(v, i);
    if (!(got == want[i] || (isnan(got) && isnan(want[i]))))
      fail_msg("element %lld: got %g, want %g", (long long)i, got, want[i]);
  }
  hlo_value_unref(v);
}

void fx_expect_f32(const hlo_value *v, int64_t n, const float *want) {
  assert_int_equal(v->type, HLO_F32);
  assert_int_equal(v->count, n);
  const float *got = v->data;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(want[i])) {
      if (!isnan(got[i]))
        fail_msg("element %lld: got %.9g, want NaN", (long long)i, got[i]);
    } else if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      fail_msg("element %lld: got %.9g, want %.9g", (long long)i, got[i], want[i]);
    }
  }
}
