#!/bin/sh
# fft_nd.sh — ffts over 2 and 3 dimensions are computed by the device as
# separable passes of its own 1-D DFTs (tuner/device/dev_fft.c) and checked
# within the derived bound (check/tol_fft.h, depths summed over the axes):
# no finding with the clean compiler over the whole space, four-step
# candidates `benign` against the direct default (the bound is exercised),
# and defect fft-tile-twiddle found on the innermost axis of a 2-D fft,
# only on the candidates its trigger names.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
d="$TUNE_SRCDIR/tests/fft"

for f in fft2d_c64.hlo rfft3d_f64.hlo; do
  for seed in 0 7; do
    expect_status 0 "$f seed $seed: stable compiler, no finding" \
      "$TUNE" --check "$d/$f" --compiler stable --seed "$seed" --json
    cp "$TMPD/out" "$TMPD/$f.$seed.json"
    v=$(tr -d '\n ' <"$TMPD/$f.$seed.json" | sed 's/.*"verdicts":{\([^}]*\)}.*/\1/')
    bad=$(echo "$v" | tr ',' '\n' | grep -v '^"match":' | grep -v '^"benign":' | grep -v '^"compile-error":')
    if [ -z "$bad" ] && echo "$v" | grep -q '"benign":[1-9]'; then
      ok "$f seed $seed: every candidate ok, some benign ($v)"
    else not_ok "$f seed $seed: verdicts $v"; fi
    expect_grep '"default_vs_reference_ok": true' "$TMPD/$f.$seed.json" "$f seed $seed: the default agrees with FFTW"
    n=$(tr -d '\n' <"$TMPD/$f.$seed.json" | sed 's/.*"space": \([0-9]*\).*/\1/')
    expect_grep "\"candidates\": $n," "$TMPD/$f.$seed.json" "$f seed $seed: all $n candidates of the space checked"
  done
done

f=fft2d_c64.hlo ext=256
expect_status 1 "$f --defect fft-tile-twiddle: a finding" "$TUNE" --check "$d/$f" --defect fft-tile-twiddle --json
tr -d '\n' <"$TMPD/out" | grep -o '"config": "[^"]*", "verdict": "[^"]*"' |
  sed 's/"config": "\([^"]*\)", "verdict": "\([^"]*\)"/\2|\1/' | sort >"$TMPD/found"
"$TUNE" --space "$d/$f" >"$TMPD/space" 2>&1
awk -v ext="$ext" '{
    for (i = 1; i <= NF; i++) if ($i ~ /^tile=/) t = $i
    n = split(substr(t, 6), d, "x"); minor = d[n] + 0
    if ($0 ~ /flags=[^ ]*four-step/ && minor < ext && minor % 128 == 0) {
      c = $0; sub(/^[^t]*tile=/, "tile=", c); print "mismatch-candidate|" c } }' "$TMPD/space" | sort >"$TMPD/want"
nf=$(wc -l <"$TMPD/found" | tr -d ' ')
if [ "$nf" -gt 0 ] && cmp -s "$TMPD/found" "$TMPD/want"; then
  ok "$f: the $nf findings are exactly the four-step candidates with more than one frequency tile"
else not_ok "$f: findings differ from the trigger's candidates"; diff "$TMPD/want" "$TMPD/found" | head -n 5 | sed 's/^/  # /'; fi

finish
