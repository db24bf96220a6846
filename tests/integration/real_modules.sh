#!/bin/sh
# tune --check on what real XLA modules contain (issue 12 item 3, issue 11
# bug 11): root tuples the launch rearranges, collectives across replicas,
# layout-changing bitcasts, tuple and nested-tuple outputs.  Every module
# here is clean: any exit 1 is a false finding.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
D="$TUNE_SRCDIR/tests/real_modules"

# The entry's root tuple has a leaf the kernel does not make (an argument
# passed through): every leaf needs its own comparison rule (an unset one
# was an uninitialised read, "load of value 255 ... _Bool" under UBSan).
expect_status 0 "a root tuple with a leaf beyond the kernel's checks clean" \
  "$TUNE" --check "$D/extra_root_leaf.hlo" --budget 8
expect_grep "verdicts  match=" "$TMPD/out" "its candidates match"
# The launch swaps the kernel's outputs: the f32 sum keeps its tolerance
# (reordered accumulation is benign) and the copied argument stays bitwise.
expect_status 0 "swapped root leaves keep each leaf's own rule" \
  "$TUNE" --check "$D/swapped_root_leaves.hlo" --budget 24
expect_grep "benign=" "$TMPD/out" "the reordered sums are benign, not mismatches"

# Collectives: the replica group names replica 1, so two replicas take
# part even without a replica_count; --replicas is honoured.
expect_status 0 "all-gather over the replicas its group names" \
  "$TUNE" --check "$D/all_gather_groups.hlo" --budget 6
expect_grep "verdicts  match=6" "$TMPD/out" "every candidate matches"
expect_status 0 "--check --replicas 2" "$TUNE" --check "$D/all_gather_groups.hlo" --budget 6 --replicas 2
expect_status 2 "--check --replicas 1 is refused for a group naming replica 1" \
  "$TUNE" --check "$D/all_gather_groups.hlo" --budget 6 --replicas 1
expect_grep "a replica group names replica 1 but only 1 replicas" "$TMPD/err" "the refusal says why"

# replica_groups={} with no replica_count: the gather's (scatter's) shapes
# say how many replicas take part, four here; one replica was "result
# dimension 0 is not 1 x the operand's", an unsupported unit.
for f in all_gather_implied reduce_scatter_implied; do
  expect_status 0 "$f: the replica count its shapes imply" "$TUNE" --check "$D/$f.hlo" --budget 6
  expect_grep "^fusion main (collective) from .*: verified$" "$TMPD/out" "$f is verified"
  expect_grep "verdicts  match=6" "$TMPD/out" "$f: every candidate matches"
done
# ragged-all-to-all with metadata from the input profile (negative, out of
# range and overlapping updates among them): the device's own rows against
# the reference's, over three replicas and three seeds.
for s in 0 1 2; do
  expect_status 0 "ragged-all-to-all, seed $s" "$TUNE" --check "$D/ragged_all_to_all.hlo" --budget 6 --seed $s
  expect_grep "^fusion main (collective) from .*: verified$" "$TMPD/out" "ragged-all-to-all is verified (seed $s)"
  expect_grep "verdicts  match=6" "$TMPD/out" "ragged-all-to-all: every candidate matches (seed $s)"
done
# A collective inside a while body counts too: the whole module runs on the
# three replicas its group names, so the unit gets its graph inputs.
expect_status 0 "a collective in a loop body" "$TUNE" --check "$D/collective_in_loop.hlo" --budget 6
expect_grep "inputs    graph: the operands of its execution 1" "$TMPD/out" "its inputs come from the graph"
expect_status 2 "--replicas 2 is refused for a loop body's group naming replica 2" \
  "$TUNE" --check "$D/collective_in_loop.hlo" --budget 6 --replicas 2
expect_grep "a replica group names replica 2 but only 2 replicas" "$TMPD/err" "the refusal says why"

# A module that loops forever: the whole-module evaluation stops at its
# deadline (--time-budget, else 10 s), and the unit it reached keeps its
# captured operands instead of falling back.
expect_status 0 "a loop that never ends: the unit in its body" \
  "$TUNE" --check "$D/loop_forever_unit.hlo" --budget 2 --time-budget 1
expect_grep "inputs    graph: the operands of its execution 1 " "$TMPD/out" "keeps the operands it received"
expect_status 0 "its second execution" "$TUNE" --check "$D/loop_forever_unit.hlo" --budget 2 --time-budget 1 --iteration 2
expect_grep "inputs    graph: the operands of its execution 2 " "$TMPD/out" "keeps those of its second execution too"
expect_status 0 "an execution past the deadline falls back" \
  "$TUNE" --check "$D/loop_forever_unit.hlo" --budget 2 --time-budget 1 --iteration 1000000
expect_grep "inputs    synthetic: no graph inputs, the module cannot be evaluated whole: .*time budget of 1 s" \
  "$TMPD/out" "and says the evaluation ran out of time"
# Without --time-budget the evaluation has its own deadline: the check
# ends (timeout(1) only guards the suite against a hang).
if command -v timeout >/dev/null 2>&1; then
  expect_status 0 "no --time-budget: the loop does not hang --check" \
    timeout 300 "$TUNE" --check "$D/loop_forever_unit.hlo" --budget 2
  expect_grep "inputs    graph: the operands of its execution 1 " "$TMPD/out" "and the unit still gets graph inputs"
fi

# Layout-changing bitcasts: the device reinterprets the physical buffer as
# XLA does (the values themselves are pinned by tests/unit/test_dev_layout).
expect_status 0 "layout-changing bitcasts in the kernel and the launch check clean" \
  "$TUNE" --check "$D/bitcast_layout.hlo" --budget 8
expect_grep "vs reference: ok" "$TMPD/out" "the default agrees with the reference"

# Tuple outputs: a nested multi-output root and a variadic sort, flattened
# into leaves on the device and compared leaf by leaf.
expect_status 0 "a nested tuple root checks clean" "$TUNE" --check "$D/nested_tuple_fusion.hlo" --budget 12
expect_grep "vs reference: ok" "$TMPD/out" "the nested default agrees with the reference"
expect_status 0 "a variadic sort root checks clean" "$TUNE" --check "$D/variadic_sort.hlo" --budget 12
expect_grep "verdicts  match=12" "$TMPD/out" "every sort candidate matches"

# A map whose computation calls a nested fusion and holds a conditional
# (corpus 0367 and 0151's forms): the device inlines them into a lane
# program of its own (issue 14) and every candidate matches the reference.
expect_status 0 "a map calling a nested fusion and a conditional checks clean" \
  "$TUNE" --check "$D/map_nested_call.hlo" --budget 8
expect_grep "verdicts  match=8" "$TMPD/out" "every map candidate matches"
# An all-reduce of complex values with a multiply reducer: the device's
# complex lane program folds the replicas (issue 14).
expect_status 0 "a complex all-reduce with a multiply reducer checks clean" \
  "$TUNE" --check "$D/all_reduce_complex_product.hlo" --budget 8
expect_grep "verdicts  match=8" "$TMPD/out" "every complex all-reduce candidate matches"

# A max-pool gradient (select-and-scatter) and an argmax pool (a variadic
# reduce-window) outside any fusion: computed by the device's own lowering
# (issue 14), every candidate must match the reference.
expect_status 0 "select-and-scatter and a variadic reduce-window check clean" \
  "$TUNE" --check "$D/windowed_ops.hlo" --budget 12
expect_grep "verdicts  match=12" "$TMPD/out" "every windowed-op candidate matches"
# The same select-and-scatter inside a fusion of a two-fusion module: the
# unit's cut-out module must carry the computations it names by text
# (select=ge, scatter=add); it used to be "unsupported: ... select
# computation ge does not exist".
expect_status 0 "a fused select-and-scatter is checked as its own unit" \
  "$TUNE" --check "$D/fused_maxpool_grad.hlo" --budget 12
expect_grep "fusion f (loop) from .*: verified" "$TMPD/out" "the select-and-scatter unit is checked"
if [ "$(grep -c 'verdicts  match=12$' "$TMPD/out")" = 2 ]; then ok "both units' candidates match"; else
  not_ok "both units' candidates match"; fi

# A composite custom-call inside a fusion: its body is named only in
# called_computations={...}, and the unit's cut-out module must carry it
# too; it used to be "unsupported: ... not supported by the evaluator".
expect_status 0 "a fused composite custom-call is checked as its own unit" \
  "$TUNE" --check "$D/fused_composite.hlo" --budget 12
expect_grep "fusion k (loop) from .*: verified" "$TMPD/out" "the composite's unit is checked"
if grep -q unsupported "$TMPD/out"; then not_ok "no unit of the composite module is unsupported"; else
  ok "no unit of the composite module is unsupported"; fi

# The public corpus, when it is there: the issue's own examples.
# A signed 64-bit max reduce (corpus 0375's reduce.38): the device's
# sign extension of a 64-bit value overflowed int64 for negative values,
# so the default config (one chunk of all 9 terms) took the wrong maximum.
expect_status 0 "s64 max reduce: every config agrees with the reference" \
  "$TUNE" --check "$D/s64_max_reduce.hlo"
expect_grep "vs reference: ok" "$TMPD/out" "s64 max reduce: the default matches the reference"

# A custom-call nothing reads, with a target the evaluator cannot run: no
# output depends on it, so both sides give it zeros (every candidate was a
# runtime-error before, a false finding; corpus 0059 is such a module).
expect_status 0 "an unread custom-call of an unknown target" "$TUNE" --check "$D/dead_custom_call.hlo" --budget 6
expect_grep "verdicts  match=4" "$TMPD/out" "every candidate matches"
# Read by the root, the same call is refused before any candidate runs.
sed 's/ROOT out = f32\[6\]{0} dynamic-update-slice(base, scaled, at)/pad0 = f32[] constant(0)\
  wide = f32[6]{0} pad(sink, pad0), padding=0_1\
  ROOT out = f32[6]{0} add(base, wide)/' "$D/dead_custom_call.hlo" >"$TMPD/read_custom_call.hlo"
expect_status 3 "a read custom-call of an unknown target: nothing verified" \
  "$TUNE" --check "$TMPD/read_custom_call.hlo" --budget 6
expect_grep 'target "UndocumentedKeepAlive" is not supported by the evaluator' "$TMPD/out" "the unit is refused, naming the target"

if [ -n "$TUNE_CORPUS" ] && [ -d "$TUNE_CORPUS" ]; then
  for f in 0013_dynamic_slice_fusion__multiple_offsets_as_function_of_induction \
           0045_hlo_alias_analysis__dynamic_update_slice_multi_output_fusion \
           0061_while_loop_analysis__fused_update_op \
           0071_hlo_evaluator__preserve_fusion_input_layout \
           0089_collective_quantizer__all_gather_quantize_partial_replication \
           0375_reduce_window__reduce_window_s64_support2 \
           0255_select_and_scatter__regression_oobwrites \
           0059_tuple_points_to_analysis__fusion_param0_one_user_with_unreachabl; do
    if [ -f "$TUNE_CORPUS/$f.hlo" ]; then
      expect_status 0 "corpus $f checks clean" "$TUNE" --check "$TUNE_CORPUS/$f.hlo" --budget 6 -q
    fi
  done
else
  echo "# skip: no corpus at \$TUNE_CORPUS"
fi

# A reshape merging the dims a tile covers (corpus 0287's kernel, small):
# the device tiles the dot's rows through the reshape and the root bitcast,
# refuses the tiles that are not one run of them, and every candidate that
# compiles matches the reference.
expect_status 0 "a dot whose rows a reshape merges checks clean" \
  "$TUNE" --check "$D/reshape_merged_gemm.hlo" --budget 32
expect_grep "^fusion fcomp (dot) from .*: verified$" "$TMPD/out" "it is verified"
expect_grep "verdicts  match=" "$TMPD/out" "its candidates match"

finish
