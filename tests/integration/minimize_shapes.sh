#!/bin/sh
# minimize_shapes.sh — `tune --reproduce --minimize` shrinks shapes as well
# as instructions (issue 18), and the bundle's README quotes the figures of
# the minimized module.
#
# tests/hlo/ragged_rows_300x128.hlo multiplies two f32[300,128] arrays.
# Under ragged-store-mask (tuner/device/dev_defect.h: an output tile that
# does not divide the second-minor dimension, with a ragged last row-tile of
# at least two rows, never writes the last valid row of that tile, which
# keeps the row one tile above, or the row above when the ragged tile is
# the only one), the config tile=8x128 diverges:
#   300 rows = 37 tiles of 8 and a ragged tile of 4 rows; row 299 is never
#   written: 128 of 38400 elements differ.
# Shrinking keeps the trigger down to 2 rows (one ragged tile of 2 rows:
# row 1 keeps row 0, 1 of its elements per column differs) and not at 1
# row (a ragged tile of one row is outside the trigger).  Columns do not
# take part (a 128-lane tile over fewer columns is legal and the defect is
# about rows), so they shrink to 1.  By hand: the minimal module is
# f32[2,1], with 1 of 2 elements differing.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
cp "$TUNE_SRCDIR/tests/hlo/ragged_rows_300x128.hlo" rr.hlo
cfg='tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none'
"$TUNE" --check rr.hlo --defect ragged-store-mask --only "$cfg" -q -o rr.h5 >check.out 2>&1
st=$?
if [ "$st" -eq 1 ]; then ok "tile=8x128 diverges under ragged-store-mask (exit 1)"; else
  not_ok "--check exited $st"; sed 's/^/  # /' check.out | head -n 5; finish; exit; fi
expect_grep "128 of 38400 elements differ" check.out "row 299 alone differs: 128 of 38400 elements"

expect_status 0 "--reproduce --minimize writes a bundle" \
  "$TUNE" --reproduce rr.h5 --fusion fused_scale --candidate 1 --minimize -o b
cp "$TMPD/out" min.out
expect_grep "^minimized fused_scale: 3 -> 3 instructions, shapes 300 -> 2, 128 -> 1 " min.out \
  "it reports the shapes shrunk: 300 -> 2 rows, 128 -> 1 column"
n=$(grep -c 'f32\[2,1\]' b/fusion.hlo)
if [ "$n" -eq 6 ] && ! grep -q 'f32\[300\|128\]' b/fusion.hlo; then
  ok "fusion.hlo is f32[2,1] throughout (6 shapes)"; else not_ok "fusion.hlo shapes"; sed 's/^/  # /' b/fusion.hlo; fi
expect_status 0 "the minimized fusion parses and verifies" "$TUNE" --print b/fusion.hlo
if grep -q 'f32\[300,128\]' b/original.hlo; then ok "original.hlo keeps the checked shapes"; else not_ok "original.hlo"; fi
expect_grep "Output 0: 1 of 2 elements differ" b/README "the README quotes the minimized module: 1 of 2 elements differ"
expect_grep "shrank (every dimension of a size: 300 -> 2, 128 -> 1)" b/README "it names the sizes shrunk"
tr '\n' ' ' <b/README >readme.flat
expect_grep "where mismatch-candidate: 128 of 38400 elements differed" readme.flat "and the original's figures beside them"
(cd b && TUNE="$TUNE" ./run.sh >../run.out 2>&1)
st=$?
if [ "$st" -eq 1 ]; then ok "run.sh on the minimized bundle diverges (exit 1)"; else not_ok "run.sh exited $st"; fi
expect_grep "1 of 2 elements differ" run.out "run.sh shows the figures the README quotes"
(cd b && TUNE="$TUNE" DEFECTS= ./run.sh >../run0.out 2>&1)
st=$?
if [ "$st" -eq 0 ]; then ok "and passes without the defect (exit 0)"; else not_ok "DEFECTS= run.sh exited $st"; fi
finish
