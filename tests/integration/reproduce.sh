#!/bin/sh
# reproduce.sh — `tune --reproduce` bundles (issue 7 item 5): a finding of
# a results file becomes a folder whose run.sh exits 1 while the divergence
# persists and 0 once it is fixed (here: the same device without the
# modelled defect), and --minimize shrinks the fusion while keeping it.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
hlo="$ds/qat_residual_f16.hlo"
cfg='tile=256x256 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts'
export TUNE

"$TUNE" --check "$hlo" --defect elide-convert --only "$cfg" --json -o "$TMPD/r.h5" >"$TMPD/check.json" 2>"$TMPD/check.err"
st=$?
if [ "$st" -eq 1 ]; then
  ok "the check under elide-convert diverges"
  id=$(grep -o '"id": [0-9]*' "$TMPD/check.json" | grep -v '"id": 0$' | head -n 1 | sed 's/.*: //')
  expect_status 0 "--reproduce writes a bundle" \
    "$TUNE" --reproduce "$TMPD/r.h5" --fusion fused_qat_residual --candidate "$id" -o "$TMPD/b"
  missing=
  for f in fusion.hlo config.txt seed inputs.h5 README run.sh; do [ -s "$TMPD/b/$f" ] || missing="$missing $f"; done
  if [ -z "$missing" ]; then ok "the bundle has every file"; else not_ok "the bundle lacks$missing"; fi
  if [ "$(cat "$TMPD/b/config.txt")" = "$cfg" ]; then ok "config.txt is the candidate's config"; else
    not_ok "config.txt is '$(cat "$TMPD/b/config.txt")'"; fi
  expect_status 1 "run.sh exits 1 while the divergence persists" "$TMPD/b/run.sh"
  expect_status 0 "run.sh exits 0 without the defect" env DEFECTS= "$TMPD/b/run.sh"
  # The bundle stands alone: moved elsewhere, it still reproduces.
  mv "$TMPD/b" "$TMPD/moved"
  expect_status 1 "a moved bundle still reproduces" "$TMPD/moved/run.sh"
  if command -v h5ls >/dev/null 2>&1; then
    h5ls -r "$TMPD/moved/inputs.h5" >"$TMPD/ls" 2>&1
    if grep -q '^/inputs/0' "$TMPD/ls" && grep -q '^/outputs/0' "$TMPD/ls"; then ok "inputs.h5 holds inputs and outputs"
    else not_ok "inputs.h5 layout"; sed 's/^/  # /' "$TMPD/ls"; fi
  fi
  expect_status 0 "--minimize writes a bundle" \
    "$TUNE" --reproduce "$TMPD/r.h5" --fusion fused_qat_residual --candidate "$id" --minimize -o "$TMPD/m"
  line=$(grep '^minimized' "$TMPD/out")
  before=$(echo "$line" | sed -n 's/.*: \([0-9]*\) -> \([0-9]*\) instructions.*/\1/p')
  after=$(echo "$line" | sed -n 's/.*: \([0-9]*\) -> \([0-9]*\) instructions.*/\2/p')
  echo "# $line"
  if [ -n "$before" ] && [ -n "$after" ] && [ "$after" -le "$before" ]; then ok "--minimize reports $before -> $after instructions"
  else not_ok "--minimize report: '$line'"; fi
  expect_status 1 "the minimized run.sh still diverges" "$TMPD/m/run.sh"
  expect_status 0 "the minimized run.sh passes without the defect" env DEFECTS= "$TMPD/m/run.sh"
  expect_status 0 "the minimized fusion parses and verifies" "$TUNE" --print "$TMPD/m/fusion.hlo"
else
  echo "# note: the check under elide-convert exited $st (defect not in this build?): skipping the divergent bundle"
fi

# A non-divergent candidate (the default of a clean run): run.sh exits 0.
"$TUNE" --check "$hlo" --only "$cfg" -q -o "$TMPD/clean.h5" >/dev/null 2>&1
expect_status 0 "--reproduce of a clean default" \
  "$TUNE" --reproduce "$TMPD/clean.h5" --fusion fused_qat_residual --candidate 0 -o "$TMPD/c"
expect_status 0 "its run.sh exits 0" "$TMPD/c/run.sh"

# Bad requests are usage errors.
expect_status 2 "an unknown fusion is refused" "$TUNE" --reproduce "$TMPD/clean.h5" --fusion nope --candidate 0 -o "$TMPD/x"
expect_grep "no fusion named 'nope'" "$TMPD/err" "the message names the fusion"
expect_status 2 "an unknown candidate is refused" "$TUNE" --reproduce "$TMPD/clean.h5" --fusion fused_qat_residual --candidate 99999 -o "$TMPD/x"
expect_status 2 "--fusion is required" "$TUNE" --reproduce "$TMPD/clean.h5" --candidate 0 -o "$TMPD/x"
expect_status 2 "--minimize of a non-divergent candidate is refused" \
  "$TUNE" --reproduce "$TMPD/clean.h5" --fusion fused_qat_residual --candidate 0 --minimize -o "$TMPD/x"
finish
