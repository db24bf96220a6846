#!/bin/sh
# options.sh — options that help (issue 18): --only takes any subset of the
# knobs (the rest from the default), a compile error under --only prints
# its reason, --list-compilers, "did you mean" for options, machines,
# compilers, defects and profiles, and an option that does not apply to the
# mode is an error (exit 2).
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
qat="$ds/qat_residual_f16.hlo"

# ---- --only with some knobs -----------------------------------------------------
expect_status 1 "--only 'flags=fuse-converts' alone diverges under elide-convert" \
  "$TUNE" --check "$qat" --defect elide-convert --only 'flags=fuse-converts'
dflt=$(sed -n 's/^  default   //p' "$TMPD/out")
want=$(echo "$dflt" | sed 's/flags=none/flags=fuse-converts/')
if [ -n "$dflt" ] && grep -q -F -e "- mismatch-candidate $want" "$TMPD/out" ||
   grep -F "$want" "$TMPD/out" | grep -q mismatch; then
  ok "the candidate is the default with flags=fuse-converts: $want"
else not_ok "candidate is not '$want'"; sed 's/^/  # /' "$TMPD/out" | head -n 12; fi
expect_status 0 "knobs in another order: 'buf=3 tile=256x256'" "$TUNE" --check "$qat" --only 'buf=3 tile=256x256' -q
expect_status 2 "an unknown knob is refused" "$TUNE" --check "$qat" --only 'tile=8x128 foo=1'
expect_grep "unknown knob 'foo'" "$TMPD/err" "naming it"
expect_status 2 "a knob given twice is refused" "$TUNE" --check "$qat" --only 'buf=2 buf=3'
expect_grep "buf is given twice" "$TMPD/err" "saying so"
expect_status 2 "a bad value still names its column in the completed config" "$TUNE" --check "$qat" --only 'pack=x'
expect_grep "completed from the default" "$TMPD/err" "and shows the completed config"

# ---- a compile error under --only prints its reason --------------------------
# f32[512,256]: a 100-wide tile is neither a multiple of 128 nor the whole
# dimension (DESIGN.md, legality), so the compiler must refuse it.
"$TUNE" --check "$qat" --only 'tile=8x100' >"$TMPD/ce.out" 2>&1
expect_grep "compile-error: .*100" "$TMPD/ce.out" "the refused config's reason is printed"
"$TUNE" --check "$qat" --only 'tile=8x100' -q >"$TMPD/ceq.out" 2>&1
expect_grep "compile-error: .*100" "$TMPD/ceq.out" "also with -q"

# ---- --list-compilers --------------------------------------------------------------
expect_status 0 "--list-compilers" "$TUNE" --list-compilers
expect_grep "^stable *no modelled defect" "$TMPD/out" "stable carries no defect"
# configs/compilers/nightly.cfg lists these six.
for d in packed-reduce-init0 scatter-s8-iota-wrap sort-lane-index elide-convert ragged-chunk-pad unsigned-cmp-signed; do
  grep "^nightly " "$TMPD/out" | grep -q -e "$d" && ok "nightly carries $d" || not_ok "nightly lacks $d"
done

# ---- did you mean ------------------------------------------------------------------------
expect_status 2 "a mistyped option" "$TUNE" --chek "$qat"
expect_grep "did you mean '--check'" "$TMPD/err" "suggests --check"
expect_status 2 "a mistyped machine" "$TUNE" --check "$qat" --machine tpu-v5ee
expect_grep "did you mean 'tpu-v5e'" "$TMPD/err" "suggests tpu-v5e"
expect_status 2 "a mistyped compiler" "$TUNE" --check "$qat" --compiler nightyl
expect_grep "did you mean 'nightly'" "$TMPD/err" "suggests nightly"
expect_status 2 "a mistyped defect" "$TUNE" --check "$qat" --defect elide-conver
expect_grep "did you mean 'elide-convert'" "$TMPD/err" "suggests elide-convert"
expect_status 2 "a mistyped profile" "$TUNE" --check "$qat" --profile edeg
expect_grep "did you mean 'edge'" "$TMPD/err" "suggests edge"

# ---- options that do not apply to the mode -----------------------------------------------
expect_status 2 "--check --format html is refused" "$TUNE" --check "$qat" --format html
expect_grep "does not apply to --check (it is an option of --report)" "$TMPD/err" "naming the mode it belongs to"
expect_status 2 "--print --seed is refused" "$TUNE" --print "$qat" --seed 3
expect_status 2 "--list-machines --only is refused" "$TUNE" --list-machines --only buf=2
expect_status 0 "an option of the mode is accepted" "$TUNE" --print "$qat" --no-verify
finish
