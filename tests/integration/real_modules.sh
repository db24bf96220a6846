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

finish
