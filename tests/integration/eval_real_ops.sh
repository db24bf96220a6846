#!/bin/sh
# tune --eval on real modules whose ops issue 17 made evaluable: async
# pairs (call-start, copy-start, all-gather-start), tokens and host sends,
# rng, custom-calls of known targets (AllocateBuffer, MoveToHost,
# annotate_device_placement, __cublas$gemm, SliceToDynamic, __gpu$TopK,
# ShardBarrierFrom), then XLA's math-library composites, peer send/recv
# pairs, PartialReduce, Qr with triangular-solve.  Each was refused before.
# Skips when the corpus is absent.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ ! -d "$TUNE_CORPUS" ]; then echo "corpus not found at $TUNE_CORPUS: skipping"; exit 77; fi
for f in 0051_hlo_liveness_analysis__propagate_liveness_from_conditional_compu \
         0063_math_igamma_grad_a \
         0065_math_polygamma \
         0067_math_regularized_incomplete_beta \
         0069_tridiagonal_tridiagonal_solve \
         0099_host_offloader__pre_existing_allocate_buffer_multiple_users \
         0127_call \
         0131_import_emit_stablehlo \
         0145_call_inliner__inline_scheduled_module \
         0147_collective_permute_decomposer__one_send_recv_with_conflicting_se \
         0191_gpu_offloading__fused_computation_offloading_test \
         0233_dynamic_slice_fusion__gemm_slice \
         0249_offload_scan_output \
         0259_slice_to_dynamic \
         0293_layout_assignment__top_klayout \
         0337_sharding_propagation__gather_forward_pass_with_barrier \
         0355_collective_pipeline_parallelism__send_recv_loop \
         0365_matmul__inverse_and_matmul \
         0369_nccl_group_execution__nccl_group_send_recv_no_while_loop; do
  if [ -f "$TUNE_CORPUS/$f.hlo" ]; then
    expect_status 0 "corpus $f evaluates" "$TUNE" --eval "$TUNE_CORPUS/$f.hlo" -o "$TMPD/out.h5"
  fi
done
f=0281_double_buffer_loop_unrolling__full_unroll_odd_trip_count_test
if [ -f "$TUNE_CORPUS/$f.hlo" ]; then
  expect_status 0 "corpus $f evaluates (all-gather-start over 2 replicas)" \
    "$TUNE" --eval "$TUNE_CORPUS/$f.hlo" --replicas 2 -o "$TMPD/out.h5"
fi
finish
