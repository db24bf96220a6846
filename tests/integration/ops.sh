#!/bin/sh
# ops.sh — --ops accepts only opcode names (issue 11 bug 12).  A name that
# matches no op used to turn checking off: with --ops substract the
# elide-convert divergence on qat_residual_f16 became benign and tune
# exited 0.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/qat_residual_f16.hlo" ]; then echo "skip: no datasets"; exit 77; fi
q="$ds/qat_residual_f16.hlo"

expect_status 1 "without --ops the elide-convert divergence is found" \
  "$TUNE" --check "$q" --defect elide-convert --budget 16 -q
expect_status 2 "a mistyped --ops is bad usage" \
  "$TUNE" --check "$q" --defect elide-convert --budget 16 -q --ops substract
expect_grep "^tune: --ops: unknown opcode 'substract' (did you mean 'subtract'?)$" "$TMPD/err" \
  "the message names the typo and the closest opcode"
expect_status 2 "one bad name among good ones is refused" \
  "$TUNE" --check "$q" --budget 2 -q --ops add,multiplyy
expect_grep "unknown opcode 'multiplyy'" "$TMPD/err" "the bad one is named"
expect_status 2 "an empty name is refused" "$TUNE" --check "$q" --budget 2 -q --ops add,
expect_status 2 "a name far from any opcode gets no suggestion" "$TUNE" --check "$q" --budget 2 -q --ops zzzzzzzzzz
if grep -q "did you mean" "$TMPD/err"; then not_ok "no suggestion for zzzzzzzzzz"; else ok "no suggestion for zzzzzzzzzz"; fi
# qat_residual_f16's root is a subtract: naming it keeps the check on.
expect_status 1 "a real opcode name still checks" \
  "$TUNE" --check "$q" --defect elide-convert --budget 16 -q --ops subtract
finish
