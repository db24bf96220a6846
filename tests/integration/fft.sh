#!/bin/sh
# fft.sh — the device computes fft with its own DFT (tuner/device/dev_fft.c),
# and every candidate of the datasets' FFT fusions is within the derived
# bound (check/tol_fft.h) of the default and of FFTW: no finding with the
# clean compiler, over the whole space and several seeds.  Four-step
# candidates round differently from the direct default, so some are
# `benign` rather than `match`: the tolerance is exercised, not bypassed.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"

for f in fft_c64_batch.hlo fft_rfft_f32.hlo; do
  for seed in 0 1 7; do
    expect_status 0 "$f seed $seed: stable compiler, no finding" \
      "$TUNE" --check "$ds/$f" --compiler stable --seed "$seed" --json
    cp "$TMPD/out" "$TMPD/$f.$seed.json"
    # the verdict counts: only match, benign and compile-error
    v=$(tr -d '\n ' <"$TMPD/$f.$seed.json" | sed 's/.*"verdicts":{\([^}]*\)}.*/\1/')
    bad=$(echo "$v" | tr ',' '\n' | grep -v '^"match":' | grep -v '^"benign":' | grep -v '^"compile-error":')
    if [ -z "$bad" ] && echo "$v" | grep -q '"benign":[1-9]'; then
      ok "$f seed $seed: every candidate ok, some benign ($v)"
    else not_ok "$f seed $seed: verdicts $v"; fi
    expect_grep '"default_vs_reference_ok": true' "$TMPD/$f.$seed.json" "$f seed $seed: the default agrees with FFTW"
  done
  "$TUNE" --space "$ds/$f" >"$TMPD/space" 2>&1
  expect_grep 'flags=four-step' "$TMPD/space" "$f: the space has four-step candidates"
done

# Defect fft-tile-twiddle (dev_defect.h): with four-step, every frequency
# tile after the first takes the first tile's outer-DFT rows.  It is found,
# and attributed to exactly the candidates that meet its trigger: flag
# four-step and a minor tile below the fft's output extent (256 and 501),
# among those that compile (a minor tile of 64 is not lane-aligned: a
# compile error).  The default (one tile, no flag) stays right, so every
# finding is mismatch-candidate.
for fe in fft_c64_batch.hlo:256 fft_rfft_f32.hlo:501; do
  f=${fe%%:*} ext=${fe##*:}
  expect_status 1 "$f --defect fft-tile-twiddle: a finding" \
    "$TUNE" --check "$ds/$f" --defect fft-tile-twiddle --json
  tr -d '\n' <"$TMPD/out" | grep -o '"config": "[^"]*", "verdict": "[^"]*"' |
    sed 's/"config": "\([^"]*\)", "verdict": "\([^"]*\)"/\2|\1/' | sort >"$TMPD/found"
  "$TUNE" --space "$ds/$f" >"$TMPD/space" 2>&1
  awk -v ext="$ext" '{
      for (i = 1; i <= NF; i++) if ($i ~ /^tile=/) t = $i
      n = split(substr(t, 6), d, "x"); minor = d[n] + 0
      if ($0 ~ /flags=[^ ]*four-step/ && minor < ext && minor % 128 == 0) {
        c = $0; sub(/^[^t]*tile=/, "tile=", c); print "mismatch-candidate|" c } }' "$TMPD/space" | sort >"$TMPD/want"
  nf=$(wc -l <"$TMPD/found" | tr -d ' ')
  if [ "$nf" -gt 0 ] && cmp -s "$TMPD/found" "$TMPD/want"; then
    ok "$f: the $nf findings are exactly the four-step candidates with more than one frequency tile"
  else not_ok "$f: findings differ from the trigger's candidates"; diff "$TMPD/want" "$TMPD/found" | head -n 5 | sed 's/^/  # /'; fi
done

finish
