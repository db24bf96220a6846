#!/bin/sh
# tolerance_tight.sh — per-element bounds in the right accumulation type
# (check/accum.h, check/tolerance.h, README "Comparison rules").
#
# A bf16 x bf16 -> bf16 dot of 512 terms accumulates in f32 on the device
# and in the reference, then rounds once: its bound is the f32 one, and the
# check is not unverifiable (it was when the bf16 result type was taken as
# the accumulation type: 512 bf16 roundings have no finite gamma).
# --tolerance picks the criterion and the summary names it.
. "$TUNE_SRCDIR/tests/integration/lib.sh"

cat > "$TMPD/bf16_dot.hlo" <<'HLO'
HloModule bf16_dot

fused_dot {
  p0 = bf16[64,512]{1,0} parameter(0)
  p1 = bf16[512,64]{1,0} parameter(1)
  ROOT d = bf16[64,64]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {
  a = bf16[64,512]{1,0} parameter(0)
  b = bf16[512,64]{1,0} parameter(1)
  ROOT f = bf16[64,64]{1,0} fusion(a, b), kind=kOutput, calls=fused_dot
}
HLO

expect_status 0 "bf16 dot: the clean check exits 0" "$TUNE" --check "$TMPD/bf16_dot.hlo" --budget 8
cp "$TMPD/out" "$TMPD/clean.out"
if grep -q "unverifiable" "$TMPD/clean.out"; then not_ok "bf16 dot: f32 accumulation is verifiable"; else
  ok "bf16 dot: f32 accumulation is verifiable"; fi
expect_grep "tolerance atol [0-9.e+-]* rtol 0.00781, noise-floor)" "$TMPD/clean.out" \
  "bf16 dot: a finite bound, one bf16 ulp of final rounding, the noise-floor criterion"

expect_status 0 "bf16 dot --tolerance worst-case exits 0" "$TUNE" --check "$TMPD/bf16_dot.hlo" --budget 8 \
  --tolerance worst-case --json
expect_grep '"tolerance": "worst-case"' "$TMPD/out" "--json names the criterion"
if grep -q '"reference_unverifiable": true' "$TMPD/out"; then not_ok "bf16 dot worst-case: verifiable"; else
  ok "bf16 dot worst-case: verifiable"; fi

# The results file records the criterion and each output's tolerance: one
# output, rtol one bf16 ulp of final rounding (2 u_bf16 = 2^-7 = 0.0078125).
if command -v h5dump >/dev/null 2>&1; then
  expect_status 0 "bf16 dot -o: exits 0" "$TUNE" --check "$TMPD/bf16_dot.hlo" --budget 2 -o "$TMPD/r.h5"
  h5dump -A "$TMPD/r.h5" >"$TMPD/attrs" 2>&1
  expect_grep '"noise-floor"' "$TMPD/attrs" "results file: tolerance_criterion noise-floor"
  expect_grep 'ATTRIBUTE "tolerance_criterion"' "$TMPD/attrs" "results file: the attribute is named tolerance_criterion"
  h5dump "$TMPD/r.h5" 2>&1 | grep -A4 'DATASET ".*output_tolerance"' >"$TMPD/otol"
  expect_grep 'SIMPLE { ( 1, 2 )' "$TMPD/otol" "results file: output_tolerance has one row of atol, rtol"
  expect_grep '(0,0): [0-9.e+-]*, 0.0078125$' "$TMPD/otol" "results file: the output's rtol is one bf16 ulp"
else
  echo "# skip: no h5dump"
fi

expect_status 2 "--tolerance with an unknown criterion exits 2" "$TUNE" --check "$TMPD/bf16_dot.hlo" \
  --tolerance tight
expect_grep "not probabilistic, noise-floor or worst-case" "$TMPD/err" "--tolerance names the criteria"

finish
