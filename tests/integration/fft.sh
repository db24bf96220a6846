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

finish
