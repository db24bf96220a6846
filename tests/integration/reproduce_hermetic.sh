#!/bin/sh
# reproduce_hermetic.sh — a reproducer bundle replays the finding on the
# inputs it stores (issue 18, hermetic reproducers): `--check --inputs`
# runs a unit on stored inputs, run.sh uses the bundle's inputs.h5 (so a
# tune that synthesises inputs differently still reproduces the finding),
# graph-captured inputs of a unit are kept, run.sh finds tune without TUNE,
# and the README says how to run with and without the defects.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
ds="$TUNE_SRCDIR/datasets"
cfg='tile=256x256 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts'
export TUNE

# --- 1. A bundle replays on its stored inputs when the synthesis rule changes.
# TUNE_TEST_SYNTH_SALT is a test-only hook that changes which inputs a seed
# synthesises, as another tune version might.
"$TUNE" --check "$ds/qat_residual_f16.hlo" --defect elide-convert --only "$cfg" -o r.h5 >orig.txt 2>&1
orig=$(grep 'elements differ' orig.txt)
TUNE_TEST_SYNTH_SALT=12345 "$TUNE" --check "$ds/qat_residual_f16.hlo" --defect elide-convert --only "$cfg" >salted.txt 2>&1
salted=$(grep 'elements differ' salted.txt)
if [ -n "$orig" ] && [ -n "$salted" ] && [ "$orig" != "$salted" ]; then
  ok "the salt changes the synthesised inputs (the finding's figures differ)"
else
  not_ok "the salt hook has no effect: '$orig' vs '$salted'"
fi
expect_status 0 "--reproduce writes the bundle" "$TUNE" --reproduce r.h5 --fusion fused_qat_residual --candidate 1 -o b
TUNE_TEST_SYNTH_SALT=12345 b/run.sh >replay.txt 2>&1
st=$?
if [ "$st" -eq 1 ]; then ok "run.sh under the changed rule still reproduces (exit 1)"; else not_ok "run.sh exit $st"; fi
replay=$(grep 'elements differ' replay.txt)
if [ -n "$orig" ] && [ "$replay" = "$orig" ]; then ok "the replay checks the finding's own inputs: $orig"
else not_ok "the replay differs: '$replay' vs '$orig'"; fi
expect_grep 'inputs    file inputs.h5' replay.txt "the replay says where its inputs came from"
expect_grep '^ *bundle written by tune [0-9]' b/README "the README records the version of tune"
expect_grep "command:" b/README "the README records the run's command"
expect_grep "check .*qat_residual_f16.hlo --defect elide-convert --only" b/README "the recorded command is the full command line"

# --- 2. --check --inputs on its own.
expect_status 1 "--check --inputs runs on the stored inputs" \
  "$TUNE" --check "$ds/qat_residual_f16.hlo" --defect elide-convert --only "$cfg" --inputs b/inputs.h5
expect_grep 'peak at (12,40)' "$TMPD/out" "the same peak as the original check"
expect_status 2 "inputs of the wrong shape are refused" \
  "$TUNE" --check "$ds/softmax.hlo" --inputs b/inputs.h5
expect_grep 'inputs' "$TMPD/err" "the refusal names the inputs"
expect_status 2 "--inputs with --inputs-from synthetic is refused" \
  "$TUNE" --check "$ds/qat_residual_f16.hlo" --inputs b/inputs.h5 --inputs-from synthetic
expect_status 2 "a missing inputs file is refused" \
  "$TUNE" --check "$ds/qat_residual_f16.hlo" --inputs nope.h5

# --- 3. A unit of a larger module: its graph-captured inputs go into the
# bundle.  Unit r sees 3*x, |3x| < 3, so the elided f16 round trip loses at
# most half an f16 ulp on [2,4): 2^-10 = 0.000976562.  Synthesised inputs
# (|x| < 1) would give 2^-12 = 0.000244141.
cat >two.hlo <<'HLO'
HloModule two_units

fused_scale {
  p0 = f32[64,256]{1,0} parameter(0)
  c = f32[] constant(3)
  b = f32[64,256]{1,0} broadcast(c), dimensions={}
  ROOT m = f32[64,256]{1,0} multiply(p0, b)
}

fused_qat {
  q0 = f32[64,256]{1,0} parameter(0)
  h = f16[64,256]{1,0} convert(q0)
  f = f32[64,256]{1,0} convert(h)
  ROOT s = f32[64,256]{1,0} subtract(q0, f)
}

ENTRY main {
  x = f32[64,256]{1,0} parameter(0)
  scaled = f32[64,256]{1,0} fusion(x), kind=kLoop, calls=fused_scale
  ROOT r = f32[64,256]{1,0} fusion(scaled), kind=kLoop, calls=fused_qat
}
HLO
ucfg='tile=64x256 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts'
expect_status 1 "the unit diverges on its graph inputs" \
  "$TUNE" --check two.hlo --fusion r --defect elide-convert --only "$ucfg" -o u.h5
expect_grep 'max abs 0.000976562' "$TMPD/out" "graph inputs: max abs 2^-10"
expect_status 0 "--reproduce of the unit's finding" "$TUNE" --reproduce u.h5 --fusion r --candidate 1 -o ub
expect_grep 'captured from the whole module' ub/README "the README says the inputs are the captured ones"
expect_status 1 "the unit's run.sh reproduces" ub/run.sh
expect_grep 'max abs 0.000976562' "$TMPD/out" "run.sh checks the captured inputs (max abs 2^-10, not 2^-12)"
expect_status 1 "--inputs selects one unit of the whole module" \
  "$TUNE" --check two.hlo --fusion r --defect elide-convert --only "$ucfg" --inputs ub/inputs.h5
expect_grep 'max abs 0.000976562' "$TMPD/out" "the unit checked on the bundle's inputs"
expect_status 2 "--inputs with two units selected is refused" "$TUNE" --check two.hlo --inputs ub/inputs.h5
expect_grep 'choose one with --fusion' "$TMPD/err" "the refusal says what to do"

# --- 4. run.sh finds tune without TUNE: on PATH, else the build that wrote
# the bundle; neither: exit 2 saying what to set.
mkdir bin
cp "$TUNE" bin/tune
bare=/usr/bin:/bin
if PATH=$bare command -v tune >/dev/null 2>&1; then
  echo "# note: a tune is installed in $bare: skipping the fallback checks"
else
  expect_status 0 "a copy of tune writes a bundle" bin/tune --reproduce r.h5 --fusion fused_qat_residual --candidate 1 -o cb
  expect_status 1 "without TUNE or tune on PATH, run.sh uses the build that wrote it" \
    env -u TUNE PATH=$bare cb/run.sh
  expect_status 1 "with tune on PATH, run.sh uses it" env -u TUNE PATH="$TMPD/bin:$bare" cb/run.sh
  rm bin/tune
  expect_status 2 "neither: run.sh exits 2" env -u TUNE PATH=$bare cb/run.sh
  expect_grep 'set TUNE=/path/to/tune' "$TMPD/err" "and says what to set"
fi

# --- 5. With and without the compiler profile's defects.
"$TUNE" --check "$ds/qat_residual_f16.hlo" --compiler nightly --only "$cfg" -o n.h5 >/dev/null 2>&1
expect_status 0 "--reproduce of a --compiler nightly finding" \
  "$TUNE" --reproduce n.h5 --fusion fused_qat_residual --candidate 1 -o nb
expect_status 1 "its run.sh reproduces" nb/run.sh
expect_status 1 "DEFECTS= alone keeps the profile's defects" env DEFECTS= nb/run.sh
expect_status 0 "COMPILER=stable runs without them: exit 0" env COMPILER=stable nb/run.sh
expect_grep 'COMPILER=stable ./run.sh' nb/README "the README says how to run without the profile"
expect_grep 'COMPILER=stable DEFECTS= ./run.sh' b/README "the README of a --defect finding says how to run clean"
expect_status 0 "COMPILER=stable DEFECTS= on the --defect finding: exit 0" env COMPILER=stable DEFECTS= b/run.sh
finish
