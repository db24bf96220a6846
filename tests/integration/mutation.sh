#!/bin/sh
# mutation.sh — the checker against tests/backend/mutation_backend.so (see
# that file and tests/mutation_report.sh): a few bug shapes it must flag and
# attribute, and a legitimate reordering it must not flag.
#
# cross_entropy_loss's losses are 6 to 8, and its sum picks the one
# non-zero term of a one-hot row, so its bound is tight: a whole output
# scaled by (1 + 1e-3) moves each loss by 0.006 or more and must be a
# mismatch-candidate (under the former whole-output bound, atol 0.95, it
# passed as benign).  Two swapped losses differ by far more.  A race
# (output changing between runs) is nondeterministic, a bug in the default
# only is mismatch-default, a race in the default is nondeterministic (the
# default is rerun before any mismatch-default) and the clean candidate,
# judged against the reference alone, matches it, and summing row_sum_long's rows in reverse
# order is a legitimate difference: exit 0.  The leaf classes of one-ulp
# and sign-zero (TUNE_MUTATION_LEAF) are checked below.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
SO="$TUNE_BUILDDIR/tests/backend/mutation_backend.so"
if [ ! -f "$SO" ]; then echo "skip: no $SO"; exit 77; fi

mut() { # mutation, dataset, wanted exit status, wanted verdict
  TUNE_MUTATION=$1; export TUNE_MUTATION
  expect_status "$3" "$2 with $1: exit $3" "$TUNE" --check "$ds/$2.hlo" --backend "$SO" --threads 1
  expect_grep "$4" "$TMPD/out" "$2 with $1: $4"
}
mut scale cross_entropy_loss 1 "^  - mismatch-candidate "
mut swap cross_entropy_loss 1 "^  - mismatch-candidate "
mut race softmax 1 "^  - nondeterministic "
mut default-only softmax 1 "mismatch-default"
mut default-race softmax 1 "verdicts  match=1 nondeterministic=1"
expect_grep "^  - nondeterministic   tile=128x256 k=256 buf=1 " "$TMPD/out" "softmax with default-race: the default is the nondeterministic one"
mut reorder row_sum_long 0 "verdicts  match=1 benign=1"
# row_sum_long sums 4096 mixed-sign terms per row: the probabilistic bound
# G sum|x_i| (about 0.6) let a scale by 1 + 1e-3 (at most 0.09 on outputs
# up to 94) through.  Its measured noise (the rows summed in six orders
# against their f64 sums, check/accum.h) is about 2e-4, so the noise-floor
# criterion (the default) sees the scale, and still admits the reversed
# order and the f64 sum, rounded once.
mut scale row_sum_long 1 "^  - mismatch-candidate "
mut f64-acc row_sum_long 0 "verdicts  match=1 benign=1"
# TUNE_MUTATION_LEAF limits one-ulp and sign-zero to the output leaves
# the backend classifies as exact (no instruction on a path to them
# rounds) or to the others.  maxpool_2x2 is a maximum over windows of its
# parameter, so its one leaf is exact: one ulp there is a bug the exact rule
# must flag, and "rounded" leaves it unchanged (both configs match).
# row_sum_long is an f32 add-reduce, so its one leaf is rounded: "exact"
# leaves it unchanged, and one ulp on it is inside the noise of a sum.
# argmax_variadic's index comes from a reduce whose combiner only
# compares and selects, over an iota and the parameter: exact.
leaf() { # class, mutation, dataset, wanted exit status, wanted verdict
  TUNE_MUTATION=$2 TUNE_MUTATION_LEAF=$1; export TUNE_MUTATION TUNE_MUTATION_LEAF
  expect_status "$4" "$3 with $2 on $1 leaves: exit $4" "$TUNE" --check "$ds/$3.hlo" --backend "$SO" --threads 1
  expect_grep "$5" "$TMPD/out" "$3 with $2 on $1 leaves: $5"
  unset TUNE_MUTATION_LEAF
}
leaf exact one-ulp maxpool_2x2 1 "^  - mismatch-candidate "
leaf rounded one-ulp maxpool_2x2 0 "verdicts  match=2"
leaf exact one-ulp row_sum_long 0 "verdicts  match=2"
leaf rounded one-ulp row_sum_long 0 "verdicts  match=1 benign=1"
leaf exact one-ulp argmax_variadic 1 "^  - mismatch-candidate "
leaf exact sign-zero row_sum_long 0 "verdicts  match=2"
leaf neither one-ulp maxpool_2x2 1 "TUNE_MUTATION_LEAF is neither exact nor rounded"
# train_step's picked_logit sums select(label == iota, logits, 0) over the
# iota's dimension: one non-zero term per row, and x + 0 = x in any order,
# so it rounds nothing (issue 13 item 3).  Its default-vs-reference atol is
# 0, one ulp there is a mismatch-candidate (it was allowed 11.3 and passed
# as benign), summing it in reverse or in f64 changes no bit, and 1e-7
# relative (a long sum's legitimate noise) is not applied to it.
pick() { # mutation, leaf class, wanted exit status, wanted picked_logit verdict line
  TUNE_MUTATION=$1 TUNE_MUTATION_LEAF=$2; export TUNE_MUTATION TUNE_MUTATION_LEAF
  expect_status "$3" "train_step with $1: exit $3" "$TUNE" --check "$ds/train_step.hlo" --backend "$SO" --threads 1
  awk '/^fusion /{n = $2} n == "picked_logit"' "$TMPD/out" >"$TMPD/pick"
  expect_grep "$4" "$TMPD/pick" "train_step's picked_logit with $1: $4"
  unset TUNE_MUTATION_LEAF
}
pick one-ulp exact 1 "verdicts  match=1 mismatch-candidate=1"
expect_grep "vs reference: ok (max abs 0, tolerance atol 0 rtol 0," "$TMPD/pick" "train_step's picked_logit: atol 0"
# It adds one value to +0s, so where that value is 0 the sum is +0 in every
# order: the comparison is bitwise there, and a flipped zero is a bug.
pick sign-zero exact 1 "verdicts  match=1 mismatch-candidate=1"
pick reorder "" 0 "verdicts  match=2"
pick f64-acc "" 0 "verdicts  match=2"
pick rel-1e-7 "" 0 "verdicts  match=2"
# all_gather_activations names replicas 0 and 1 (replica_count=2): the
# backend simulates as many as the reference, so it runs, and a changed
# element of the gathered rows is a mismatch-candidate.
mut one-ulp all_gather_activations 1 "^  - mismatch-candidate "
TUNE_MUTATION=scale
expect_status 0 "row_sum_long with scale under --tolerance probabilistic: missed (exit 0)" \
  "$TUNE" --check "$ds/row_sum_long.hlo" --backend "$SO" --threads 1 --tolerance probabilistic

finish
