/* test_eval_custom.c — custom-calls with known semantics (eval_custom.c),
 * and the topk op.
 *
 * Expected values are worked out by hand: the gemm ones from
 * alpha * A.B + beta * C (+ bias, then relu) with the backend_config's
 * dimension numbers, the top-k ones by ranking the rows by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "eval_fixture.h"

static void annotations_are_identity(void **state) {
  (void)state;
  const char *targets[] = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
                           "MoveToHost", "MoveToDevice", "ShardBarrierFrom"};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    char t[300];
    snprintf(t, sizeof t,
             "ENTRY e {\n x = f32[3] parameter(0)\n ROOT c = f32[3] custom-call(x), custom_call_target=\"%s\"\n}\n",
             targets[i]);
    hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(3), VALS(1, -2, 3.5))};
    fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(3), VALS(1, -2, 3.5));
  }
}

static void annotation_that_reshards_is_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), NULL)};
  fx_eval_fails("ENTRY e {\n x = f32[4] parameter(0)\n"
                " ROOT c = f32[2] custom-call(x), custom_call_target=\"SPMDFullToShardShape\"\n}\n",
                1, a, "must return its one operand's shape");
}

static void allocate_buffer_is_poisoned(void **state) {
  (void)state;
  hlo_value *v = fx_eval("ENTRY e {\n ROOT c = f32[2] custom-call(), custom_call_target=\"AllocateBuffer\"\n}\n", 0, NULL);
  const uint32_t *f = v->data;
  assert_true(f[0] == 0xffffffffu && f[1] == 0xffffffffu); /* a NaN */
  hlo_value_unref(v);
  fx_expect(fx_eval("ENTRY e {\n ROOT c = s32[2] custom-call(), custom_call_target=\"AllocateBuffer\"\n}\n", 0, NULL),
            HLO_S32, 1, DIMS(2), VALS(-1, -1));
  /* Narrow types take their own largest value and NaN (not all ones). */
  fx_expect(fx_eval("ENTRY e {\n ROOT c = u4[2] custom-call(), custom_call_target=\"AllocateBuffer\"\n}\n", 0, NULL),
            HLO_U4, 1, DIMS(2), VALS(15, 15));
  v = fx_eval("ENTRY e {\n ROOT c = f8e4m3fnuz[2] custom-call(), custom_call_target=\"AllocateBuffer\"\n}\n", 0, NULL);
  assert_true(isnan(hlo_value_get_f64(v, 0)) && isnan(hlo_value_get_f64(v, 1)));
  hlo_value_unref(v);
}

static void kernel_workspace_is_poisoned(void **state) {
  (void)state;
  fx_expect(fx_eval("ENTRY e {\n ROOT w = u8[3] custom-call(), custom_call_target=\"__custom_kernel_fusion$workspace\"\n}\n",
                    0, NULL),
            HLO_U8, 1, DIMS(3), VALS(255, 255, 255));
}

/* DynamicGte(t, i) is element i of t: with t = ([1,2], [3,4], [5,6]) and
 * i = 2 it is [5,6]; i = 3 is out of the tuple. */
static void dynamic_gte_takes_the_indexed_element(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n a = f32[2] parameter(0)\n b = f32[2] parameter(1)\n c = f32[2] parameter(2)\n"
                  " i = s32[] parameter(3)\n t = (f32[2], f32[2], f32[2]) tuple(a, b, c)\n"
                  " ROOT g = f32[2] custom-call(t, i), custom_call_target=\"DynamicGte\"\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2)), fx_array(HLO_F32, 1, DIMS(2), VALS(3, 4)),
                    fx_array(HLO_F32, 1, DIMS(2), VALS(5, 6)), fx_scalar(HLO_S32, 2)};
  fx_expect(fx_eval(t, 4, a), HLO_F32, 1, DIMS(2), VALS(5, 6));
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(2), NULL), fx_array(HLO_F32, 1, DIMS(2), NULL),
                    fx_array(HLO_F32, 1, DIMS(2), NULL), fx_scalar(HLO_S32, 3)};
  fx_eval_fails(t, 4, b, "not an element");
}

static void slice_to_dynamic_keeps_data(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[4] parameter(0)\n n = s32[] parameter(1)\n"
                  " ROOT c = f32[<=4] custom-call(x, n), custom_call_target=\"SliceToDynamic\"\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(4), VALS(1, 2, 3, 4)), fx_scalar(HLO_S32, 2)};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 1, DIMS(4), VALS(1, 2, 3, 4));
  hlo_value *b[] = {fx_array(HLO_F32, 1, DIMS(4), NULL), fx_scalar(HLO_S32, 5)};
  fx_eval_fails(t, 2, b, "out of the bound");
}

/* A = [[1,2,3],[4,5,6]], B = [[1,0],[0,1],[1,1]]: A.B = [[4,5],[10,11]]. */
#define GEMM_AB " a = f32[2,3] parameter(0)\n b = f32[3,2] parameter(1)\n"
static hlo_value **gemm_args(hlo_value **args, bool with_c) {
  args[0] = fx_array(HLO_F32, 2, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  args[1] = fx_array(HLO_F32, 2, DIMS(3, 2), VALS(1, 0, 0, 1, 1, 1));
  if (with_c)
    args[2] = fx_array(HLO_F32, 2, DIMS(2, 2), VALS(1, 2, 3, 4));
  return args;
}

static void gemm_alpha_beta_quoted_config(void **state) {
  (void)state;
  /* The corpus's form: backend_config as an escaped string, a workspace. */
  const char *t =
      "ENTRY e {\n" GEMM_AB " c = f32[2,2] parameter(2)\n"
      " g = (f32[2,2], s8[16]) custom-call(a, b, c), custom_call_target=\"__cublas$gemm\", "
      "backend_config=\"{ \\\"gemm_backend_config\\\": {\\\"alpha_real\\\":2,\\\"beta\\\":0.5,"
      "\\\"dot_dimension_numbers\\\":{\\\"lhs_contracting_dimensions\\\":[\\\"1\\\"],"
      "\\\"rhs_contracting_dimensions\\\":[\\\"0\\\"],\\\"lhs_batch_dimensions\\\":[],"
      "\\\"rhs_batch_dimensions\\\":[]},\\\"alpha_imag\\\":0,\\\"epilogue\\\":\\\"DEFAULT\\\"}}\"\n"
      " ROOT r = f32[2,2] get-tuple-element(g), index=0\n}\n";
  hlo_value *a[3];
  /* 2 * [[4,5],[10,11]] + 0.5 * [[1,2],[3,4]] */
  fx_expect(fx_eval(t, 3, gemm_args(a, true)), HLO_F32, 2, DIMS(2, 2), VALS(8.5, 11, 21.5, 24));
}

static void gemm_contracting_dim0(void **state) {
  (void)state;
  /* lhs stored transposed, contracting its dimension 0. */
  const char *t = "ENTRY e {\n a = f32[3,2] parameter(0)\n b = f32[3,2] parameter(1)\n"
                  " ROOT g = f32[2,2] custom-call(a, b), custom_call_target=\"__cublas$lt$matmul\", "
                  "backend_config={\"gemm_backend_config\":{\"alpha_real\":1,\"beta\":0,"
                  "\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"0\"],"
                  "\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]},"
                  "\"epilogue\":\"DEFAULT\"}}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(3, 2), VALS(1, 4, 2, 5, 3, 6)),
                    fx_array(HLO_F32, 2, DIMS(3, 2), VALS(1, 0, 0, 1, 1, 1))};
  fx_expect(fx_eval(t, 2, a), HLO_F32, 2, DIMS(2, 2), VALS(4, 5, 10, 11));
}

static void gemm_bias_relu_epilogue(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" GEMM_AB " bias = f32[2] parameter(2)\n"
                  " ROOT g = f32[2,2] custom-call(a, b, bias), custom_call_target=\"__cublas$lt$matmul\", "
                  "backend_config={\"gemm_backend_config\":{\"alpha_real\":1,\"beta\":0,"
                  "\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],"
                  "\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]},"
                  "\"epilogue\":\"BIAS_RELU\"}}\n}\n";
  hlo_value *a[3];
  gemm_args(a, false);
  a[2] = fx_array(HLO_F32, 1, DIMS(2), VALS(-5, 1));
  /* [[4-5, 5+1], [10-5, 11+1]] through relu */
  fx_expect(fx_eval(t, 3, a), HLO_F32, 2, DIMS(2, 2), VALS(0, 6, 5, 12));
}

static void gemm_unknown_epilogue_refused(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n" GEMM_AB
                  " ROOT g = f32[2,2] custom-call(a, b), custom_call_target=\"__cublas$gemm\", "
                  "backend_config={\"gemm_backend_config\":{\"alpha_real\":1,\"beta\":0,"
                  "\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],"
                  "\"rhs_contracting_dimensions\":[\"0\"]},\"epilogue\":\"GELU_AUX\"}}\n}\n";
  hlo_value *a[2];
  gemm_args(a, false);
  fx_eval_fails(t, 2, a, "epilogue GELU_AUX is not supported");
}

#define TOPK_X " x = f32[2,4] parameter(0)\n"
static hlo_value **topk_args(hlo_value **a) {
  a[0] = fx_array(HLO_F32, 2, DIMS(2, 4), VALS(1, 5, 3, 5, 0, -2, 7, 0));
  return a;
}

static void gpu_topk(void **state) {
  (void)state;
  /* Row 0: 5 (index 1) and 5 (index 3, the later tie); row 1: 7, then 0 at
   * index 0 before the 0 at index 3. */
  const char *v = "ENTRY e {\n" TOPK_X " t = (f32[2,2], s32[2,2]) custom-call(x), custom_call_target=\"__gpu$TopK\"\n"
                  " ROOT r = f32[2,2] get-tuple-element(t), index=0\n}\n";
  const char *i = "ENTRY e {\n" TOPK_X " t = (f32[2,2], s32[2,2]) custom-call(x), custom_call_target=\"__gpu$TopK\"\n"
                  " ROOT r = s32[2,2] get-tuple-element(t), index=1\n}\n";
  hlo_value *a[1];
  fx_expect(fx_eval(v, 1, topk_args(a)), HLO_F32, 2, DIMS(2, 2), VALS(5, 5, 7, 0));
  fx_expect(fx_eval(i, 1, topk_args(a)), HLO_S32, 2, DIMS(2, 2), VALS(1, 3, 2, 0));
}

static void topk_op_smallest(void **state) {
  (void)state;
  const char *v = "ENTRY e {\n" TOPK_X " t = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false\n"
                  " ROOT r = f32[2,2] get-tuple-element(t), index=0\n}\n";
  const char *i = "ENTRY e {\n" TOPK_X " t = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false\n"
                  " ROOT r = s32[2,2] get-tuple-element(t), index=1\n}\n";
  hlo_value *a[1];
  fx_expect(fx_eval(v, 1, topk_args(a)), HLO_F32, 2, DIMS(2, 2), VALS(1, 3, -2, 0));
  fx_expect(fx_eval(i, 1, topk_args(a)), HLO_S32, 2, DIMS(2, 2), VALS(0, 2, 1, 0));
}

static void composite_evaluates_its_computation(void **state) {
  (void)state;
  const char *t = "twice {\n p = f32[2] parameter(0)\n ROOT r = f32[2] add(p, p)\n}\n"
                  "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " ROOT c = f32[2] custom-call(x), custom_call_target=\"xla_builder.test.Twice\", "
                  "called_computations={twice}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1.25, -3))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(2), VALS(2.5, -6));
}

static void helper_computation_is_not_a_composite(void **state) {
  (void)state;
  /* A called computation may be a helper (a comparator), not the call's
   * meaning: an unknown target that is no composite is refused. */
  const char *t = "gt {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                  " ROOT r = pred[] compare(a, b), direction=GT\n}\n"
                  "ENTRY e {\n x = f32[2] parameter(0)\n y = f32[2] parameter(1)\n"
                  " ROOT c = f32[2] custom-call(x, y), custom_call_target=\"MyTopK\", "
                  "called_computations={gt}\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), NULL), fx_array(HLO_F32, 1, DIMS(2), NULL)};
  fx_eval_fails(t, 2, a, "custom-call target \"MyTopK\" is not supported");
}

static void unknown_target_refused_by_name(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " ROOT c = f32[2] custom-call(x), custom_call_target=\"my_kernel\"\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(t, strlen(t), &err);
  assert_non_null(m);
  assert_int_equal(chk_eval_supported(m, &err), -1);
  assert_non_null(strstr(err.msg, "\"my_kernel\""));
  hlo_module_free(m);
}

/* An unknown target nothing reads (not the root, no users, no aliasing)
 * cannot change a value: the module evaluates (x + x = [2, 4]).  Used, or
 * the root, it is refused by name. */
static void unobserved_unknown_target_is_skipped(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n x = f32[2] parameter(0)\n"
                  " p = f32[2] custom-call(x), custom_call_target=\"my_kernel\", custom_call_has_side_effect=true\n"
                  " ROOT y = f32[2] add(x, x)\n}\n";
  hlo_value *a[] = {fx_array(HLO_F32, 1, DIMS(2), VALS(1, 2))};
  fx_expect(fx_eval(t, 1, a), HLO_F32, 1, DIMS(2), VALS(2, 4));
  const char *used = "ENTRY e {\n x = f32[2] parameter(0)\n"
                     " p = f32[2] custom-call(x), custom_call_target=\"my_kernel\"\n"
                     " ROOT y = f32[2] add(p, x)\n}\n";
  hlo_error err;
  hlo_module *m = hlo_parse(used, strlen(used), &err);
  assert_non_null(m);
  assert_int_equal(chk_eval_supported(m, &err), -1);
  assert_non_null(strstr(err.msg, "\"my_kernel\""));
  hlo_module_free(m);
}

/* PartialReduce keeps the m elements of each line that the comparator
 * ranks first (GT: largest), ties in index order, with their s32 indices:
 * row 0 [3, 9, 1, 7, 9, 5] -> [9, 9, 7] at [1, 4, 3];
 * row 1 [0, -1, 2, 2, 8, 4] -> [8, 4, 2] at [4, 5, 2]. */
#define PARTIAL_REDUCE(CFG)                                                                                     \
  "gt {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n i = s32[] parameter(2)\n j = s32[] parameter(3)\n" \
  " ROOT c = pred[] compare(a, b), direction=GT\n}\n"                                                         \
  "ENTRY e {\n x = f32[2,6] parameter(0)\n i = s32[2,6] iota(), iota_dimension=1\n"                           \
  " ninf = f32[] constant(-inf)\n z = s32[] constant(0)\n"                                                   \
  " ROOT p = (f32[2,3], s32[2,3]) custom-call(x, i, ninf, z), custom_call_target=\"PartialReduce\","          \
  " called_computations={gt}, backend_config=" CFG "\n}\n"

static void partial_reduce_keeps_the_exact_top(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 6), VALS(3, 9, 1, 7, 9, 5, 0, -1, 2, 2, 8, 4))};
  hlo_value *v = fx_eval(PARTIAL_REDUCE("{\"log2_reduction\": 1, \"reduction_dim\": 1, \"to_apply_type\": "
                                        "\"comparator\", \"top_k\": 2, \"recall_target\": 0.9}"),
                         1, a);
  assert_int_equal(v->type, HLO_TUPLE);
  fx_expect(hlo_value_ref(v->elems[0]), HLO_F32, 2, DIMS(2, 3), VALS(9, 9, 7, 8, 4, 2));
  fx_expect(hlo_value_ref(v->elems[1]), HLO_S32, 2, DIMS(2, 3), VALS(1, 4, 3, 4, 5, 2));
  hlo_value_unref(v);
}

static void partial_reduce_without_reduction_dim_refused(void **state) {
  (void)state;
  hlo_value *a[] = {fx_array(HLO_F32, 2, DIMS(2, 6), NULL)};
  fx_eval_fails(PARTIAL_REDUCE("{\"top_k\": 2}"), 1, a, "no reduction_dim");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(annotations_are_identity),
      cmocka_unit_test(annotation_that_reshards_is_refused),
      cmocka_unit_test(allocate_buffer_is_poisoned),
      cmocka_unit_test(kernel_workspace_is_poisoned),
      cmocka_unit_test(dynamic_gte_takes_the_indexed_element),
      cmocka_unit_test(slice_to_dynamic_keeps_data),
      cmocka_unit_test(gemm_alpha_beta_quoted_config),
      cmocka_unit_test(gemm_contracting_dim0),
      cmocka_unit_test(gemm_bias_relu_epilogue),
      cmocka_unit_test(gemm_unknown_epilogue_refused),
      cmocka_unit_test(gpu_topk),
      cmocka_unit_test(topk_op_smallest),
      cmocka_unit_test(partial_reduce_keeps_the_exact_top),
      cmocka_unit_test(partial_reduce_without_reduction_dim_refused),
      cmocka_unit_test(composite_evaluates_its_computation),
      cmocka_unit_test(helper_computation_is_not_a_composite),
      cmocka_unit_test(unknown_target_refused_by_name),
      cmocka_unit_test(unobserved_unknown_target_is_skipped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
