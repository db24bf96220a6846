#!/bin/sh
# fft_chain.sh — an fft followed by more arithmetic in the same fusion
# (check/fft_spread.h): the outputs computed from the transform inherit its
# derived bound, so the clean compiler gives no finding over the whole
# space, while defect fft-tile-twiddle is still found on exactly the
# candidates its trigger names.
#   fft_scaled_abs.hlo  abs(fft(x) * c): compared exactly before, 72
#                       candidates and the default were false alarms;
#   fft_rfft_power.hlo  sum over f of |rfft(x)[f]|^2: the reduce's own
#                       accumulation allowance already covered it;
#   fft_rfft_bias.hlo   rfft(x) + b, a complex output: fft_spread measured
#                       real outputs only, so it was compared exactly
#                       (tune --fuzz's fft template found it).
# Before the fix of each, the clean check of that file exited 1.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
d="$TUNE_SRCDIR/tests/fft"

for f in fft_scaled_abs.hlo fft_rfft_power.hlo fft_rfft_bias.hlo; do
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
    # the whole space was checked, not a budget of it
    n=$(tr -d '\n' <"$TMPD/$f.$seed.json" | sed 's/.*"space": \([0-9]*\).*/\1/')
    expect_grep "\"candidates\": $n," "$TMPD/$f.$seed.json" "$f seed $seed: all $n candidates of the space checked"
  done
done

# fft-tile-twiddle: found on the four-step candidates whose tile of the
# kernel's minor output dimension cuts the fft's frequencies (fewer than
# the fft's 256 outputs, lane-aligned; for the reduce, whose kernel output
# is f32[8], every minor tile is below 501), and on no other.
for fe in fft_scaled_abs.hlo:256 fft_rfft_power.hlo:501 fft_rfft_bias.hlo:501; do
  f=${fe%%:*} ext=${fe##*:}
  expect_status 1 "$f --defect fft-tile-twiddle: a finding" \
    "$TUNE" --check "$d/$f" --defect fft-tile-twiddle --json
  tr -d '\n' <"$TMPD/out" | grep -o '"config": "[^"]*", "verdict": "[^"]*"' |
    sed 's/"config": "\([^"]*\)", "verdict": "\([^"]*\)"/\2|\1/' | sort >"$TMPD/found"
  "$TUNE" --space "$d/$f" >"$TMPD/space" 2>&1
  awk -v ext="$ext" '{
      for (i = 1; i <= NF; i++) if ($i ~ /^tile=/) t = $i
      n = split(substr(t, 6), d, "x"); minor = d[n] + 0
      if ($0 ~ /flags=[^ ]*four-step/ && minor < ext) {
        c = $0; sub(/^[^t]*tile=/, "tile=", c); print c } }' "$TMPD/space" | sort >"$TMPD/trig"
  sed 's/^[^|]*|//' "$TMPD/found" | sort >"$TMPD/found_cfg"
  nf=$(wc -l <"$TMPD/found" | tr -d ' ')
  # every finding is a triggering candidate, and a mismatch of the candidate
  # alone (the default has no four-step)
  extra=$(comm -13 "$TMPD/trig" "$TMPD/found_cfg" | wc -l | tr -d ' ')
  other=$(grep -vc '^mismatch-candidate|' "$TMPD/found")
  if [ "$nf" -gt 0 ] && [ "$extra" -eq 0 ] && [ "$other" -eq 0 ]; then
    ok "$f: $nf findings, all mismatch-candidate on triggering candidates"
  else not_ok "$f: $nf findings, $extra outside the trigger, $other of another verdict"; fi
done

finish
