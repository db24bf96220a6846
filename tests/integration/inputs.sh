#!/bin/sh
# inputs.sh — input profiles and non-finite intent end to end (issue 6):
# --profile is parsed and recorded, a log of a shifted parameter gives NaN
# under naive inputs (flagged "inputs produced non-finite values", exit 0:
# not a compiler bug) and finite outputs under constrained ones, and a -inf
# pad is reported as the module's own, expected.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"

# log(x - 0.5): naive x in [-1, 1) makes three quarters of it NaN;
# constrained asks x >= 0.5 + 1/16.
cat >"$TMPD/log.hlo" <<'HLO'
HloModule shifted_log

fused_log {
  p = f32[64,128]{1,0} parameter(0)
  h = f32[] constant(0.5)
  b = f32[64,128]{1,0} broadcast(h), dimensions={}
  d = f32[64,128]{1,0} subtract(p, b)
  ROOT l = f32[64,128]{1,0} log(d)
}

ENTRY main {
  x = f32[64,128]{1,0} parameter(0)
  ROOT f = f32[64,128]{1,0} fusion(x), kind=kLoop, calls=fused_log
}
HLO

expect_status 2 "an unknown --profile is refused" "$TUNE" --eval "$TMPD/log.hlo" --profile uniform -o "$TMPD/x.h5"
expect_grep "not one of constrained, naive, edge, oob-indices" "$TMPD/err" "the refusal names the profiles"

expect_status 0 "--eval --profile naive runs" "$TUNE" --eval "$TMPD/log.hlo" --profile naive -o "$TMPD/n.h5"
expect_grep "inputs produced non-finite values" "$TMPD/err" "--eval flags the naive NaNs as the inputs' doing"
expect_grep "first made by l" "$TMPD/err" "--eval names the log as where they were made"
expect_status 0 "--eval with the default profile runs" "$TUNE" --eval "$TMPD/log.hlo" -o "$TMPD/c.h5"
if [ -s "$TMPD/err" ]; then not_ok "constrained --eval is silent (stderr: $(head -n 1 "$TMPD/err"))"; else
  ok "constrained inputs give finite outputs"; fi
if command -v h5dump >/dev/null 2>&1; then
  h5dump -a /profile "$TMPD/c.h5" >"$TMPD/attr" 2>&1
  expect_grep '"constrained"' "$TMPD/attr" "the default profile is recorded as constrained"
  h5dump -a /nonfinite "$TMPD/n.h5" >"$TMPD/attr" 2>&1
  expect_grep '"inputs"' "$TMPD/attr" "the naive run records nonfinite = inputs"
fi

expect_status 0 "--check --profile naive of the shifted log exits 0" \
  "$TUNE" --check "$TMPD/log.hlo" --profile naive --budget 4 -o "$TMPD/r.h5"
expect_grep "inputs produced non-finite values (first made by l, naive inputs)" "$TMPD/out" \
  "--check flags the fusion instead of reporting a compiler bug"
if command -v h5dump >/dev/null 2>&1; then
  h5dump -A "$TMPD/r.h5" >"$TMPD/attrs" 2>&1
  expect_grep '"inputs"' "$TMPD/attrs" "the results file stores nonfinite = inputs"
  expect_grep '"naive"' "$TMPD/attrs" "the results file stores the input profile"
fi
expect_status 0 "--check of the shifted log with constrained inputs" "$TUNE" --check "$TMPD/log.hlo" --budget 4
if grep -q "non-finite" "$TMPD/out"; then not_ok "constrained --check has no non-finite line"; else
  ok "constrained --check has finite reference outputs"; fi

expect_status 0 "--check of the -inf pad" "$TUNE" --check "$ds/pad_to_lane_multiple.hlo" --budget 4
expect_grep "from the module's own constants (expected)" "$TMPD/out" "the -inf pad is the module's own"
expect_status 0 "--check --json carries profile and nonfinite" \
  "$TUNE" --check "$ds/pad_to_lane_multiple.hlo" --budget 2 --profile edge --json
expect_grep '"profile": "edge", "nonfinite": "intended"' "$TMPD/out" "--json names the profile and the intent"
finish
