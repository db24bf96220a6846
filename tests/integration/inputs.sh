#!/bin/sh
# inputs.sh — input profiles and non-finite intent end to end (issue 6):
# --profile is parsed and recorded, a log of a shifted parameter gives NaN
# under naive inputs (flagged "inputs produced non-finite values", exit 0:
# not a compiler bug) and finite outputs under constrained ones, a -inf
# pad is reported as the module's own, expected, and a -inf pad into a
# convolution is flagged under naive weights but the mask under constrained.
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

# A -inf pad reaching a convolution (the pattern of corpus module 0111):
# out[b, o, 1] = sum over 16 features of -inf * w[f, o].  Naive weights of
# both signs make NaN (flagged); constrained weights are >= 1/16, so the
# padded half is -inf, the module's own mask.
cat >"$TMPD/padconv.hlo" <<'HLO'
HloModule padconv

ENTRY main {
  x = bf16[8,16,1]{2,1,0} parameter(0)
  w = bf16[1,16,32]{2,1,0} parameter(1)
  ninf = bf16[] constant(-inf)
  p = bf16[8,16,2]{2,1,0} pad(x, ninf), padding=0_0x0_0x0_1
  ROOT c = bf16[8,32,2]{2,1,0} convolution(p, w), window={size=1}, dim_labels=bf0_0io->bf0
}
HLO
expect_status 0 "--eval --profile naive of a -inf pad into a convolution" \
  "$TUNE" --eval "$TMPD/padconv.hlo" --profile naive -o "$TMPD/pc.h5"
expect_grep "inputs produced non-finite values.*first made by c" "$TMPD/err" \
  "naive weights of both signs: the convolution's NaN is flagged"
expect_status 0 "--eval of the -inf pad into a convolution, constrained" \
  "$TUNE" --eval "$TMPD/padconv.hlo" -o "$TMPD/pc.h5"
expect_grep "256 of 512 output elements are NaN or Inf, from the module's own constants" "$TMPD/err" \
  "constrained weights keep the padded half -inf, the module's own mask"

expect_status 0 "--check of the -inf pad" "$TUNE" --check "$ds/pad_to_lane_multiple.hlo" --budget 4
expect_grep "from the module's own constants (expected)" "$TMPD/out" "the -inf pad is the module's own"
expect_status 0 "--check --json carries profile and nonfinite" \
  "$TUNE" --check "$ds/pad_to_lane_multiple.hlo" --budget 2 --profile edge --json
expect_grep '"profile": "edge", "nonfinite": "intended"' "$TMPD/out" "--json names the profile and the intent"

# oob-indices puts a scalar start out of range: dynslice-clamp-lost (an
# update of 16 rows into 1024, start not clamped to 0..1008) and the
# paper's bug2 (a set at a negative s8 index that lands 256 further on
# f32[300]) then show, while the constrained starts (in range by design)
# cannot show them.  The clean compiler stays silent under the profile.
expect_status 1 "dynslice-clamp-lost on the kv cache, --profile oob-indices" \
  "$TUNE" --check "$ds/dynamic_update_slice_kv_cache.hlo" --defect dynslice-clamp-lost --profile oob-indices \
  --stop-on-mismatch -q
expect_status 0 "the kv cache, clean, --profile oob-indices" \
  "$TUNE" --check "$ds/dynamic_update_slice_kv_cache.hlo" --profile oob-indices -q
expect_status 1 "scatter-s8-iota-wrap on bug2, --profile oob-indices" \
  "$TUNE" --check "$ds/scatter_s8_set_bug2.hlo" --defect scatter-s8-iota-wrap --profile oob-indices --stop-on-mismatch -q
expect_status 0 "bug2, clean, --profile oob-indices" \
  "$TUNE" --check "$ds/scatter_s8_set_bug2.hlo" --profile oob-indices -q
finish
