#!/bin/sh
# pad_window.sh — a pad's operand is fetched per output tile through the
# pad's inverse map (issue 14), so dma-race strikes on a pad padded along
# every dimension, and the clean device still computes every pad exactly.
#
# datasets/pad_negative_interior.hlo pads f32[100,77] by -2_3_1x4_-1 to
# f32[200,80].  Operand row i lands on output row 2i - 2 (XLA's Pad: low
# padding -2, one interior row), so rows 1..99 land on the even rows
# 0..196 and row 0 is cropped; column j lands on 4 + j.  Every tile height
# of its space is even, so every row tile holds an operand row and fetches
# the operand's rows once; there is one column tile (80 or 128 wide).
# dma-race (dev_defect.h) needs buf >= 2 and more fetches than buf: here
# buf >= 2 and ceil(200 / height) > buf.  Before, the operand was held
# whole (fetched once) and no config of the space met that.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/pad_negative_interior.hlo" ]; then echo "skip: no datasets"; exit 77; fi

# The clean device over the whole space: no divergent candidate.
expect_status 0 "pad_negative_interior: the clean check of the whole space exits 0" \
  "$TUNE" --check "$ds/pad_negative_interior.hlo"
if grep -q '^  - ' "$TMPD/out"; then not_ok "pad_negative_interior: the clean device has divergent candidates"; else
  ok "pad_negative_interior: the clean device has no divergent candidate"; fi

# dma-race over the whole space: found, racy, and only where its trigger holds.
expect_status 1 "pad_negative_interior: --defect dma-race over the whole space exits 1" \
  "$TUNE" --check "$ds/pad_negative_interior.hlo" --defect dma-race
cp "$TMPD/out" "$TMPD/race.out"
expect_grep "^  - nondeterministic " "$TMPD/race.out" "pad_negative_interior: a dma-race candidate is nondeterministic"
awk '/^  - [a-z-]+ +tile=/ {
       n++; h = $3; sub(/^tile=/, "", h); sub(/x.*/, "", h); b = $5; sub(/^buf=/, "", b)
       h += 0; b += 0; tiles = int((200 + h - 1) / h)
       if (h % 2 != 0 || b < 2 || tiles <= b) { bad++; print "  # off the trigger: " $0 > "/dev/stderr" }
     }
     END { printf "%d %d\n", n, bad }' "$TMPD/race.out" >"$TMPD/counts"
read -r ndiv nbad <"$TMPD/counts"
if [ "$ndiv" -gt 0 ] && [ "$nbad" -eq 0 ]; then
  ok "pad_negative_interior: all $ndiv divergent candidates meet dma-race's trigger"
else
  not_ok "pad_negative_interior: $ndiv divergent candidates, $nbad of them off the trigger"
fi
# The first candidates of the space (tile 8 high: 25 fetches) race too.
expect_status 1 "pad_negative_interior: tile=8x80 buf=2 races" \
  "$TUNE" --check "$ds/pad_negative_interior.hlo" --defect dma-race --quiet \
  --only "tile=8x80 k=0 buf=2 order=01 pack=1 prec=default flags=none"
# One buffer: never (no fetch issued before its slot is read).
expect_status 0 "pad_negative_interior: buf=1 does not race" \
  "$TUNE" --check "$ds/pad_negative_interior.hlo" --defect dma-race --quiet \
  --only "tile=8x80 k=0 buf=1 order=01 pack=1 prec=default flags=none"

# Interior padding 15: row i of f32[16,128] lands on 16i of 241 rows, so
# with 8-row tiles every other tile is only padding and fetches nothing.
cat >"$TMPD/sparse.hlo" <<'EOF'
HloModule sparse_rows, entry_computation_layout={(f32[16,128]{1,0})->f32[241,128]{1,0}}

fused_pad {
  p = f32[16,128]{1,0} parameter(0)
  z = f32[] constant(0.5)
  ROOT q = f32[241,128]{1,0} pad(p, z), padding=0_0_15x0_0
}

ENTRY main {
  a = f32[16,128]{1,0} parameter(0)
  ROOT f = f32[241,128]{1,0} fusion(a), kind=kLoop, calls=fused_pad
}
EOF
expect_status 0 "tiles of only padding: the clean check of the whole space exits 0" \
  "$TUNE" --check "$TMPD/sparse.hlo" --quiet
expect_status 1 "tiles of only padding: dma-race strikes on the 16 fetches of tile=8x128 buf=2" \
  "$TUNE" --check "$TMPD/sparse.hlo" --defect dma-race --quiet \
  --only "tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none"

# Negative padding that crops the whole operand, and a chain of two pads
# with an elementwise op between them, next to an unpadded parameter.
cat >"$TMPD/cropped.hlo" <<'EOF'
HloModule cropped, entry_computation_layout={(f32[8,128]{1,0}, f32[16,128]{1,0}, f32[8,100]{1,0})->(f32[16,128]{1,0}, f32[15,130]{1,0})}

fused {
  p = f32[8,128]{1,0} parameter(0)
  r = f32[16,128]{1,0} parameter(1)
  c = f32[8,100]{1,0} parameter(2)
  z = f32[] constant(1)
  q = f32[16,128]{1,0} pad(p, z), padding=-8_16x0_0
  s = f32[16,128]{1,0} add(q, r)
  e = f32[8,100]{1,0} exponential(c)
  q1 = f32[16,104]{1,0} pad(e, z), padding=1_0_1x2_2
  n = f32[16,104]{1,0} negate(q1)
  q2 = f32[15,130]{1,0} pad(n, z), padding=-3_2x30_-4
  ROOT t = (f32[16,128]{1,0}, f32[15,130]{1,0}) tuple(s, q2)
}

ENTRY main {
  a = f32[8,128]{1,0} parameter(0)
  b = f32[16,128]{1,0} parameter(1)
  d = f32[8,100]{1,0} parameter(2)
  ROOT f = (f32[16,128]{1,0}, f32[15,130]{1,0}) fusion(a, b, d), kind=kLoop, calls=fused
}
EOF
expect_status 0 "a cropped operand and chained pads: the clean check of the whole space exits 0" \
  "$TUNE" --check "$TMPD/cropped.hlo"
expect_grep "verdicts  match=" "$TMPD/out" "a cropped operand and chained pads: candidates ran"

finish
