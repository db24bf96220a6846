#!/bin/sh
# special.sh — the special input profile (check/inputs.h) exercises NaN
# propagation and signed-zero ordering, which no other profile does.
#
# The fusion is max(p0, p1) of two f32[8,128] parameters: both only feed
# the maximum, so under --profile special about a quarter of their
# elements are +-0 or +-subnormal and a few are NaN or +-inf.  XLA's
# maximum propagates NaN and orders -0 < +0 (IEEE 754-2019 maximum, the
# StableHLO spec; check/eval_elementwise.c).  Two defects of the mutation
# backend break exactly that: max-nan returns the other operand when one
# is NaN (C's fmax), max-zero returns the first operand of two equal ones
# (max(-0, +0) = -0).  Under the constrained profile no element is NaN
# and no maximum meets zeros of both signs, so neither defect changes the
# output and the check passes (exit 0, both configs match); under the
# special profile both are mismatch-candidate, the second only through
# the exact rule's -0 != +0 (its max abs is 0).  The clean device under
# the special profile finds nothing, and says the non-finite outputs come
# from the profile's inputs.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
SO="$TUNE_BUILDDIR/tests/backend/mutation_backend.so"
if [ ! -f "$SO" ]; then echo "skip: no $SO"; exit 77; fi

cat > "$TMPD/max.hlo" <<'HLO'
HloModule max_special

fused_max {
  a = f32[8,128]{1,0} parameter(0)
  b = f32[8,128]{1,0} parameter(1)
  ROOT m = f32[8,128]{1,0} maximum(a, b)
}

ENTRY main {
  p0 = f32[8,128]{1,0} parameter(0)
  p1 = f32[8,128]{1,0} parameter(1)
  ROOT f = f32[8,128]{1,0} fusion(p0, p1), kind=kLoop, calls=fused_max
}
HLO

expect_status 0 "clean device, special inputs: exit 0" "$TUNE" --check "$TMPD/max.hlo" --profile special --budget 8
expect_grep "^  verdicts  match=[0-9]*$" "$TMPD/out" "clean device, special inputs: every candidate matches"
expect_grep "from the module's own constants or the special profile's inputs (expected)" "$TMPD/out" \
  "clean device, special inputs: the non-finite outputs are the profile's"

for m in max-nan max-zero; do
  TUNE_MUTATION=$m; export TUNE_MUTATION
  expect_status 0 "$m, constrained inputs: not exercised, exit 0" \
    "$TUNE" --check "$TMPD/max.hlo" --backend "$SO" --threads 1
  expect_grep "^  verdicts  match=2$" "$TMPD/out" "$m, constrained inputs: both configs match"
  expect_status 1 "$m, special inputs: exit 1" \
    "$TUNE" --check "$TMPD/max.hlo" --backend "$SO" --threads 1 --profile special
  expect_grep "^  - mismatch-candidate " "$TMPD/out" "$m, special inputs: mismatch-candidate"
done
TUNE_MUTATION=max-zero
"$TUNE" --check "$TMPD/max.hlo" --backend "$SO" --threads 1 --profile special >"$TMPD/out" 2>&1
expect_grep "output 0: [0-9]* of 1024 elements differ; max abs 0," "$TMPD/out" \
  "max-zero: only signs of zeros differ, and the exact rule sees them"

finish
