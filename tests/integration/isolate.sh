#!/bin/sh
# isolate.sh — `tune --isolate` (issue 16 item 2) names the culprit fusion
# of a module and its class, for every defect of the catalog, on the
# multi-fusion modules of datasets/ (MANIFEST column 5 "module").
#
# Each case: module, unit, defect, the --config that meets the defect's
# trigger (tuner/device/dev_defect.h) for that unit's fused kernel, and a
# pattern its culprit line must show.  No unit's default config meets any
# of these triggers (the clean runs below show every unit ok), and every
# single-op kernel of the unfused run uses its own default, so the fused
# kernel alone is wrong: the class is fusion-bug, and no other unit is
# blamed because every unit is fed the reference's own operands.  The
# patterns follow from each defect's documented symptom:
#   packed-reduce-init0  grad_norm_sq f32[256] with tile=128: two output
#     windows; the first finds the packed accumulators cleared, so only
#     rows 128..255 are wrong (peak in the second window);
#   scatter-s8-iota-wrap  a set at u8 slot i also lands at i + 256 of the
#     512-slot history: exactly one element is wrong, at an index >= 256;
#   sort-lane-index  the keys stay right, the carried indices do not: the
#     worst output is output 1 (the indices);
#   elide-convert  x - f32(f16(x)) evaluates to 0: relative error exactly 1;
#   ragged-store-mask  o_proj_residual has 300 rows and tile 8x256: the
#     ragged last row-tile holds rows 296..299 and its last valid row, 299,
#     is never written (peak in row 299);
#   dynslice-clamp-lost  the window starts at 5 - 127 = -122, which the
#     reference clamps to 0 and the defect wraps to 902: rows of another
#     part of the cache, so every element of the 128x128 window differs;
#   dma-race  two timing seeds give different fused outputs.
# For the others (revisit-no-reinit, ragged-chunk-pad, int8-dot-f32-acc,
# unsigned-cmp-signed) the unit, the class and the single culprit are the
# assertion.
#
# Micro inspection (item 3): the file firsts holds a pattern of the first
# diverging instruction inside the culprit's intact kernel, written from
# the defect's trigger and the fused computation in the dataset:
#   packed-reduce-init0   n2, the reduce (its operand sq is right), rows
#                         128..255 only (the second output window);
#   ragged-chunk-pad      n2, the reduce: its last chunk (1000 = 7*128 +
#                         104) reads padding; sq is right;
#   revisit-no-reinit     s, the reduce over the 100 pixels; flat is right;
#   scatter-s8-iota-wrap  h, the scatter itself: one slot, index >= 256;
#   sort-lane-index       i, the get-tuple-element of the sort's indices
#                         (the sort is a tuple, not probed; the keys k and
#                         their slice come first and are right);
#   elide-convert         back, the f16 -> f32 convert the defect drops
#                         (h, the f32 -> f16 convert before it, is right);
#   ragged-store-mask     no instruction: every value is right and the
#                         store loses row 299 (256 elements);
#   int8-dot-f32-acc      gram, the s8 dot (its operand q is right);
#   dynslice-clamp-lost   ds, the dynamic-slice: all 128x128 elements
#                         (its start operand is right);
#   unsigned-cmp-signed   keep, the u32 compare against 3006477107 >= 2^31
#                         (operands p2 and thr_b right);
#   dma-race              p0, the parameter as the kernel reads it from a
#                         VMEM slot the next DMA overwrote.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/train_step.hlo" ]; then echo "skip: no multi-fusion datasets"; exit 77; fi
cd "$TMPD" || exit 1

cat >cases <<'EOF2'
train_step|grad_norm_sq|packed-reduce-init0|tile=128 k=512 buf=2 order=0k pack=4|output 0 peak at (\(12[89]\|1[3-9][0-9]\|2[0-4][0-9]\|25[0-5]\))
train_step|grad_norm_sq|ragged-chunk-pad|tile=256 k=128 buf=2 order=0k pack=1|max rel
conv_net|global_pool|revisit-no-reinit|tile=8x128 k=32 buf=3 order=k01 pack=2|max rel
train_step|loss_history|scatter-s8-iota-wrap|flags=vec-scatter|output 0 peak at (\(25[6-9]\|2[6-9][0-9]\|[34][0-9][0-9]\|50[0-9]\|51[01]\))
conv_net|topk_rows|sort-lane-index|flags=two-stage-sort|output 1 peak at
train_step|qat_residual|elide-convert|flags=fuse-converts|max rel 1,
transformer_block|o_proj_residual|ragged-store-mask|tile=8x256|output 0 peak at (299,
conv_net|bilinear_gram|int8-dot-f32-acc|k=250|max rel
transformer_block|window_keys|dynslice-clamp-lost|tile=8x128|max rel
train_step|clip_dropout|unsigned-cmp-signed|flags=fuse-converts|max rel
train_step|qat_residual|dma-race|tile=8x1000 buf=2|max rel
EOF2

# The first diverging instruction of each defect's culprit: DEFECT;PATTERN.
cat >firsts <<'EOF2'
packed-reduce-init0;first diverging instruction n2 (reduce): 128 of 256 elements differ, max rel [0-9.e+]*, box \[128\.\.255\]
ragged-chunk-pad;first diverging instruction n2 (reduce): 
revisit-no-reinit;first diverging instruction s (reduce): 
scatter-s8-iota-wrap;first diverging instruction h (scatter): 1 of 512 elements differ, max rel [0-9.e+]*, box \[\(25[6-9]\|2[6-9][0-9]\|[34][0-9][0-9]\|50[0-9]\|51[01]\)\.\.
sort-lane-index;first diverging instruction i (get-tuple-element): 
elide-convert;first diverging instruction back (convert): 
ragged-store-mask;but 256 elements of the stored output differ from the root's values as the kernel computed them: the store is wrong
int8-dot-f32-acc;first diverging instruction gram (dot): 
dynslice-clamp-lost;first diverging instruction ds (dynamic-slice): 16384 of 16384 elements differ
unsigned-cmp-signed;first diverging instruction keep (compare): 
dma-race;first diverging instruction p0 (parameter): 
EOF2

# Every defect of the catalog has a case.
"$TUNE" --list-defects | awk '{print $1}' | sort >catalog
{ cut -d'|' -f3 cases; echo fft-tile-twiddle; } | sort -u >covered  # fft: its own case below
missing=$(comm -23 catalog covered)
if [ -z "$missing" ] && [ -s catalog ]; then ok "every defect of --list-defects has an --isolate case"; else
  not_ok "defects without an --isolate case: $(echo $missing)"; fi

while IFS='|' read -r mod unit defect cfg pat; do
  expect_status 1 "$defect: --isolate $mod.hlo exits 1" \
    "$TUNE" --isolate "$ds/$mod.hlo" --defect "$defect" --config "$unit=$cfg"
  cp "$TMPD/out" "$defect.out"
  expect_grep "^  $unit: fusion-bug; " "$defect.out" "$defect: $unit is a fusion-bug"
  expect_grep "unfused vs reference identical" "$defect.out" "$defect: its unfused run matches the reference"
  expect_grep "^  1\. $unit: fusion-bug, " "$defect.out" "$defect: $unit is the first culprit"
  if grep -q '^  2\. ' "$defect.out"; then not_ok "$defect: a second culprit is named"; grep '^  2\. ' "$defect.out" | sed 's/^/  # /'
  else ok "$defect: no other culprit"; fi
  expect_grep "1 fusion-bug, 0 lowering-bug, 0 reference-disagrees, 0 not isolated" "$defect.out" \
    "$defect: the summary counts one culprit"
  expect_grep "^  1\. $unit: .*$pat" "$defect.out" "$defect: the symptom shows ($pat)"
  first=$(grep "^$defect;" firsts | cut -d';' -f2-)
  expect_grep "^ *$first" "$defect.out" "$defect: micro inspection names the first diverging instruction"
  # every operand of the first diverging instruction the kernel produced is right
  if grep -q "^       operand .*elements differ" "$defect.out"; then not_ok "$defect: an operand of the first diverging instruction differs"
  else ok "$defect: the operands of the first diverging instruction are right"; fi
done <cases

expect_grep "^       operand sq (multiply): identical" packed-reduce-init0.out "packed-reduce-init0: the reduce's operand is right"
expect_grep "^       operand h (convert): identical" elide-convert.out "elide-convert: the f32 -> f16 convert is right"
expect_grep "^       operand start (subtract): identical" dynslice-clamp-lost.out "dynslice-clamp-lost: the start index is right"
expect_grep "^       operand p2 (parameter): identical" unsigned-cmp-signed.out "unsigned-cmp-signed: the compared bits are right"
expect_grep "no instruction diverges" ragged-store-mask.out "ragged-store-mask: every instruction inside the kernel is right"

expect_grep "window_keys: fusion-bug; fused vs unfused differs (16384 of 16384," dynslice-clamp-lost.out \
  "dynslice-clamp-lost: every element of the window differs"
expect_grep "o_proj_residual: fusion-bug; fused vs unfused differs (256 of 76800," ragged-store-mask.out \
  "ragged-store-mask: exactly one row (256 elements) is wrong"
expect_grep "loss_history: fusion-bug; fused vs unfused differs (1 of 512," scatter-s8-iota-wrap.out \
  "scatter-s8-iota-wrap: exactly one slot is wrong"
expect_grep "qat_residual: fusion-bug; .*nondeterministic" dma-race.out "dma-race: the race is named nondeterministic"
expect_grep "reproduce: tune --check .*--fusion 'grad_norm_sq' --only 'tile=128 k=512 buf=2 order=0k pack=4 .*--defect 'packed-reduce-init0'" \
  packed-reduce-init0.out "the culprit's reproducer names its config and defect"

# The other two classes, on tests/isolate/int8_gram_s32.hlo: its s8 dot
# reduces 4099 rows, and the default chunk of a dot is the whole
# reduction, so with int8-dot-f32-acc the trigger (chunk not a multiple of
# 4) holds for the fused kernel's default and for the dot's own kernel in
# the unfused run alike.  Both lose the same low bits of the diagonal sums
# above 2^24 (the 128 diagonal elements; the off-diagonal sums of
# random-signed products stay far below): fused and unfused agree and the
# reference does not (reference-disagrees).  With --config gram='k=128' (a multiple of 4) the
# fused kernel is right and only the unfused dot is wrong: lowering-bug.
# The rescale is fed the reference's own s32 values, so it stays ok.
g="$TUNE_SRCDIR/tests/isolate/int8_gram_s32.hlo"
expect_status 1 "int8-dot-f32-acc at the default chunk: exit 1" "$TUNE" --isolate "$g" --defect int8-dot-f32-acc
cp "$TMPD/out" refdis.out
expect_grep "^  gram: reference-disagrees; fused vs unfused identical; fused vs reference differs (128 of 16384," refdis.out \
  "the dot both ways wrong alike: reference-disagrees"
expect_grep "^  rescale: ok;" refdis.out "the fusion after it, on the reference's operands, is ok"
expect_status 1 "int8-dot-f32-acc, fused at k=128: exit 1" \
  "$TUNE" --isolate "$g" --defect int8-dot-f32-acc --config gram='k=128'
cp "$TMPD/out" lowering.out
expect_grep "^  gram: lowering-bug; fused vs unfused differs.*; fused vs reference \\(within\\|identical\\); unfused vs reference differs (128 of 16384," \
  lowering.out "only the single-op dot wrong: lowering-bug"
expect_grep "^       first diverging instruction dot.11 (dot): 128 of 16384 elements differ" refdis.out \
  "reference-disagrees: inside the fused kernel the dot diverges first"
expect_grep "inside the fused kernel: no instruction diverges" lowering.out \
  "lowering-bug: the fused kernel itself is right inside"
expect_status 0 "the clean compiler on the same module: exit 0" "$TUNE" --isolate "$g"
expect_grep "summary: 2 units: 2 ok," "$TMPD/out" "clean: both units ok"

# propagated (item 2), on tests/isolate/propagated_gain.hlo: a and b sum
# the same 8 rows of 4096 in opposite orders, o = (a - b) * 2^20.  The
# reference follows the device's default order (pack=1), so with the
# defaults every side agrees bit for bit.  With a at pack=2 (two
# accumulators, a legitimate config) a's sums move by reorder noise only,
# within a's derived tolerance, and o is exact on its own inputs; but the
# noise survives the cancellation a - b and is multiplied by 2^20, far
# beyond the loosest tolerance of any unit: the program output is wrong,
# a is where the error starts and o amplifies it.
p="$TUNE_SRCDIR/tests/isolate/propagated_gain.hlo"
expect_status 0 "propagated_gain at the default configs: exit 0" "$TUNE" --isolate "$p"
expect_grep "vs reference: within (max rel 0)" "$TMPD/out" "the defaults: the program output is bitwise the reference's"
expect_status 1 "propagated_gain with a at pack=2: exit 1" "$TUNE" --isolate "$p" --config a='pack=2'
cp "$TMPD/out" prop.out
expect_grep "^  a: ok; .*fused vs reference within" prop.out "a alone: within its tolerance"
expect_grep "^  b: ok; " prop.out "b alone: ok"
expect_grep "^  o: propagated; fused vs unfused identical; fused vs reference identical" prop.out \
  "o is right on its own inputs, and named the amplifier"
expect_grep "vs reference: differs (" prop.out "the program output differs"
expect_grep "^  1\. o: propagated, .*the error starts at a$" prop.out "the error starts at a"
expect_grep "reproduce: tune --isolate .*propagated_gain.hlo' --config 'a=tile=8 k=512 buf=2 order=0k pack=2 " prop.out \
  "the reproducer is the isolation with its --config"
expect_grep "summary: 3 units: 2 ok, .*, 1 propagated" prop.out "the summary counts it"

# --inputs IN.h5 (item 1): the module's entry arguments from a file in the
# format --eval writes (/inputs/<k>).  Arguments --eval drew with seed 5
# give exactly the isolation --seed 5 gives (and not seed 0's).
expect_status 0 "--eval writes the module's inputs" "$TUNE" --eval "$p" --seed 5 -o in5.h5
expect_status 1 "--isolate --inputs in5.h5: exit 1" "$TUNE" --isolate "$p" --config a='pack=2' --inputs in5.h5
grep -v '^isolate \|reproduce:' "$TMPD/out" >from_file.out
expect_grep "^isolate .*, inputs in5.h5$" "$TMPD/out" "the header names the inputs file"
expect_grep "reproduce: tune --isolate .* --inputs 'in5.h5'" "$TMPD/out" "the reproducer reads the same file"
"$TUNE" --isolate "$p" --config a='pack=2' --seed 5 | grep -v '^isolate \|reproduce:' >seed5.out
"$TUNE" --isolate "$p" --config a='pack=2' --seed 0 | grep -v '^isolate \|reproduce:' >seed0.out
if cmp -s from_file.out seed5.out; then ok "--inputs: the file's arguments are the ones isolated (same as --seed 5)"
else not_ok "--inputs: the isolation differs from --seed 5's"; diff from_file.out seed5.out | sed 's/^/  # /'; fi
if cmp -s from_file.out seed0.out; then not_ok "--inputs: the isolation is seed 0's: the file was not read"
else ok "--inputs: not the synthesised seed-0 arguments"; fi
expect_status 2 "--inputs naming no file" "$TUNE" --isolate "$p" --inputs nosuch.h5
expect_grep "nosuch.h5" "$TMPD/err" "the missing file is named"
printf 'HloModule other\nENTRY e {\n  ROOT p = f32[3] parameter(0)\n}\n' >other.hlo
"$TUNE" --eval other.hlo -o other.h5 >/dev/null 2>&1
expect_status 2 "--inputs of another module's shape" "$TUNE" --isolate "$p" --inputs other.h5

# --from RESULTS.h5 (item 1): the divergent candidate a --check of one unit
# stored becomes that unit's fused config.  The check runs only the
# packed-reduce-init0 trigger config of grad_norm_sq (and the default).
expect_status 1 "--check stores grad_norm_sq's divergent candidate" "$TUNE" --check "$ds/train_step.hlo" \
  --fusion grad_norm_sq --defect packed-reduce-init0 --only 'tile=128 k=512 buf=2 order=0k pack=4' -o res.h5
expect_status 1 "--isolate --from res.h5: exit 1" "$TUNE" --isolate "$ds/train_step.hlo" --from res.h5 \
  --defect packed-reduce-init0
cp "$TMPD/out" from.out
expect_grep "^  grad_norm_sq: fusion-bug; .*config tile=128 k=512 buf=2 order=0k pack=4 [^;]* (--from)" from.out \
  "the stored candidate's config is grad_norm_sq's, marked --from"
expect_grep "^  1\. grad_norm_sq: fusion-bug" from.out "--from: grad_norm_sq is the culprit"
expect_grep "first diverging instruction n2 (reduce)" from.out "--from: micro inspection as with --config"
expect_status 0 "--config wins over --from" "$TUNE" --isolate "$ds/train_step.hlo" --from res.h5 \
  --defect packed-reduce-init0 --config grad_norm_sq='pack=1'
expect_status 2 "--from with an unknown --run" "$TUNE" --isolate "$ds/train_step.hlo" --from res.h5 --run nosuch
expect_grep "no run 'nosuch'" "$TMPD/err" "the unknown run is named"
expect_status 2 "--from a run holding nothing of this module" "$TUNE" --isolate "$ds/conv_net.hlo" --from res.h5
expect_grep "no divergent candidate of a unit of conv_net.hlo" "$TMPD/err" "and says so"
expect_status 2 "--from applies only to --isolate" "$TUNE" --check "$ds/softmax.hlo" --from res.h5

# The clean compiler: every unit of every module is ok (0 false culprits).
for spec in transformer_block:14 train_step:12 conv_net:11; do
  mod=${spec%%:*}; n=${spec#*:}
  expect_status 0 "clean: --isolate $mod.hlo exits 0" "$TUNE" --isolate "$ds/$mod.hlo"
  expect_grep "summary: $n units: $n ok, 0 fusion-bug" "$TMPD/out" "clean: all $n units of $mod.hlo are ok"
done

# Bad usage and bad input: exit 2 with a clear message.
expect_status 2 "--config naming no unit" "$TUNE" --isolate "$ds/train_step.hlo" --config nosuch='tile=8'
expect_grep "nosuch: no such unit" "$TMPD/err" "the unknown unit is named"
expect_status 2 "--config without UNIT=" "$TUNE" --isolate "$ds/train_step.hlo" --config 'tile=8'
expect_status 2 "--config with a bad knob" "$TUNE" --isolate "$ds/train_step.hlo" --config 'loss_history=bogus=1'
expect_grep "loss_history='bogus=1'" "$TMPD/err" "the bad config is quoted"
expect_status 2 "--config applies only to --isolate" "$TUNE" --check "$ds/softmax.hlo" --config 'x=tile=8'
expect_status 2 "--isolate does not take --budget" "$TUNE" --isolate "$ds/train_step.hlo" --budget 4
printf 'HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] bogus(p)\n}\n' >bad.hlo
expect_status 2 "a parse error" "$TUNE" --isolate bad.hlo
expect_grep "bad.hlo:4:.*: error: " "$TMPD/err" "the parse error is FILE:LINE:COL: error:"

# fft-tile-twiddle, on tests/isolate/fft_spectrum.hlo (window -> fft ->
# magnitude): with four-step and frequency tiles of 128, the fft unit f is
# wrong on its second tile (columns 128..255) and is the one culprit, a
# fusion-bug.  Not in the loop above: its unfused run (the device's direct
# DFT) agrees with FFTW only within the fft's bound, not bit for bit, and
# micro inspection does not compare complex values, so those two patterns
# of the loop do not apply.
fs="$TUNE_SRCDIR/tests/isolate/fft_spectrum.hlo"
expect_status 1 "fft-tile-twiddle: --isolate fft_spectrum.hlo exits 1" \
  "$TUNE" --isolate "$fs" --defect fft-tile-twiddle --config "f=tile=16x128 flags=four-step"
cp "$TMPD/out" fft.out
expect_grep "^  f: fusion-bug; .*unfused vs reference within" fft.out "fft-tile-twiddle: f is a fusion-bug, its unfused run within the bound"
expect_grep "^  1\. f: fusion-bug, .*output 0 peak at ([0-9]*,\(1[3-9][0-9]\|12[89]\|2[0-5][0-9]\))" fft.out \
  "fft-tile-twiddle: the one culprit peaks in the second frequency tile"
expect_grep "1 fusion-bug, 0 lowering-bug, 0 reference-disagrees, 0 not isolated" fft.out \
  "fft-tile-twiddle: the summary counts one culprit"
expect_status 0 "fft_spectrum.hlo clean: --isolate exits 0" \
  "$TUNE" --isolate "$fs" --config "f=tile=16x128 flags=four-step"

finish
