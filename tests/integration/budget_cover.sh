#!/bin/sh
# budget_cover.sh — `--budget N` smaller than the space checks a pairwise
# cover of the knobs, not a prefix (issue 19 item 1):
# - the two defects a 16-candidate prefix missed on every MANIFEST fusion
#   (revisit-no-reinit, packed-reduce-init0) are found at --budget 16, and
#   the clean compiler stays silent on the same choice;
# - so are three that the cover missed while it spent picks on candidates
#   that do not compile (k=32 in the dots; a tile of 1 or 2 of the 8 heads
#   of transpose_heads, second-minor in its transposed operand's block):
#   7 of 16 picks on transpose_heads, 3 on the two dots;
# - the totals of knob values and pairs match a count made here, with awk,
#   from `tune --space` (knobs: each tile dimension, k, buf, order, pack,
#   prec, each of the four flags on or off, and the loop nest: the order
#   with each output loop marked n when its tile is smaller than the
#   dimension, else 1, and k as k when k is less than the reduction
#   length, else 1), and the ring: single when buf is 1, else wraps when
#   the grid's steps (output tiles times reduction chunks) outnumber buf,
#   fits otherwise, over the candidates that compile (the block rule of
#   the README: a last block dimension a multiple of 128 or the whole
#   dimension, a second-minor one a multiple of 8 or the whole), and every
#   value is covered when no knob has more than 15 values;
# - a budget is not spent on candidates that do not compile while others
#   remain;
# - the choice is deterministic, recorded in the results file, and a
#   sweep records the rotation it used.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1

for case in reduce_middle_dim:revisit-no-reinit row_sum_sq_ragged:packed-reduce-init0 \
  dot_f32_default:revisit-no-reinit bf16_matmul:ragged-store-mask transpose_heads:dma-race \
  scatter_u8_set_slot:dma-race scatter_s8_set_bug2:dma-race; do
  f=${case%%:*}
  d=${case#*:}
  expect_status 1 "$d: --budget 16 finds it on $f.hlo" \
    "$TUNE" --check "$ds/$f.hlo" --defect "$d" --budget 16 --threads 2 --quiet
  expect_status 0 "$d: the clean compiler is silent on the same 16 candidates of $f.hlo" \
    "$TUNE" --check "$ds/$f.hlo" --budget 16 --threads 2 --quiet
done

# Totals counted from the space listing.  row_sum_sq_ragged reduces
# f32[256,1000] over its 1000 columns: output [256], reduction length 1000.
# The output block is f32[tile] and the operand's f32[tile,k], so a
# candidate compiles when tile is a multiple of 128 or 256 (and so of 8)
# and k a multiple of 128 or 1000; the others cover nothing.
f="$ds/row_sum_sq_ragged.hlo"
"$TUNE" --space "$f" >space.txt
awk -v dim0=256 -v red=1000 '
$1 == "default" { next }
{
  n = 0
  for (i = 1; i <= NF; i++) {
    eq = index($i, "="); key = substr($i, 1, eq - 1); v = substr($i, eq + 1)
    if (key == "tile") tile0 = v + 0
    if (key == "k") k = v + 0
    if (key == "buf") buf = v + 0
    if (key == "order") order = v
  }
  steps = (tile0 < dim0 ? int((dim0 + tile0 - 1) / tile0) : 1) * (k < red ? int((red + k - 1) / k) : 1)
  ring = buf < 2 ? "single" : (steps > buf ? "wraps" : "fits")
  if ((tile0 % 128 != 0 && tile0 != dim0) || (k % 128 != 0 && k != red)) { illegal++; next }
  loops = ""
  for (i = 1; i <= length(order); i++) {
    c = substr(order, i, 1)
    if (c == "k") loops = loops (k < red ? "k" : "1")
    else loops = loops (tile0 < dim0 ? "n" : "1")
  }
  for (i = 1; i <= NF; i++) {
    eq = index($i, "="); key = substr($i, 1, eq - 1); v = substr($i, eq + 1)
    if (key == "tile") {
      m = split(v, t, "x"); for (j = 1; j <= m; j++) kn[++n] = "tile" j "=" t[j]
    } else if (key == "flags") {
      split("fuse-converts split-reduction vec-scatter two-stage-sort", names, " ")
      for (j = 1; j <= 4; j++) on[names[j]] = "off"
      if (v != "none") { m = split(v, fl, ","); for (j = 1; j <= m; j++) on[fl[j]] = "on" }
      for (j = 1; j <= 4; j++) kn[++n] = names[j] "=" on[names[j]]
    } else kn[++n] = key "=" v
  }
  kn[++n] = "loops=" loops
  kn[++n] = "ring=" ring
  for (a = 1; a <= n; a++) {
    vals[kn[a]] = 1
    split(kn[a], kv, "="); per[kv[1] "=" kv[2]] = kv[1]
    for (b = a + 1; b <= n; b++) pairs[kn[a] "|" kn[b]] = 1
  }
}
END {
  for (v in vals) { nv++; cnt[per[v]]++ }
  for (p in pairs) np++
  for (k in cnt) if (cnt[k] > max) max = cnt[k]
  print nv, np, max, illegal + 0
}' space.txt >totals.txt
read -r nv np maxv nill <totals.txt
# The rule above is the device's: checking the whole space, as many
# candidates get compile-error as it rejects.
"$TUNE" --check "$f" --threads 2 --json >all.json
expect_grep "\"compile-error\": $nill[,}]" all.json "the device refuses the $nill candidates the block rule rejects"
"$TUNE" --check "$f" --budget 16 --threads 2 --json >a.json
expect_grep "\"cover_values\": \[[0-9]*, $nv\], \"cover_pairs\": \[[0-9]*, $np\]" a.json \
  "the totals are the space's $nv knob values and $np pairs"
if [ "$maxv" -le 15 ]; then
  expect_grep "\"cover_values\": \[$nv, $nv\]" a.json "16 candidates cover all $nv values (at most $maxv per knob)"
fi
expect_grep '"candidates": 16, "space": 251, "cut": "budget", "cover_seed": 0' a.json \
  "16 of 251 candidates, cover seed = --seed by default"
if grep -q '"compile-error"' a.json; then not_ok "the budget checked a candidate that does not compile"; else
  ok "the budget checks only candidates that compile ($nill of 251 do not)"; fi
"$TUNE" --check "$f" --budget 16 --threads 1 --json >b.json
if cmp -s a.json b.json; then ok "the same choice and verdicts with 1 and 2 threads"; else
  not_ok "the choice depends on the thread count"; diff a.json b.json | head -5 | sed 's/^/  # /'; fi
"$TUNE" --check "$f" --budget 16 --threads 2 --cover-seed 7 --json >c.json
expect_grep '"cover_seed": 7' c.json "--cover-seed 7 is the seed of the choice"
expect_status 2 "--cover-seed takes a number" "$TUNE" --check "$f" --budget 16 --cover-seed x
expect_grep "cover-seed" "$TMPD/err" "the error names --cover-seed"

# A sweep rotates the choice by the date it started on, and records it.
cat >s.cfg <<EOF
sweep: {
  corpus = [ "$f" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  budget = 16;
  threads = 2;
  seed = 3;
  output = "sweep.h5";
};
EOF
day0=$(date -u +%Y%m%d)
"$TUNE" --sweep s.cfg >sweep.out 2>sweep.err
day1=$(date -u +%Y%m%d)
run=$(h5ls sweep.h5/runs | awk '{print $1; exit}')
h5dump -a "/runs/$run/cover_rotation" sweep.h5 >rot.txt 2>&1
if grep -q "\"$day0\"" rot.txt || grep -q "\"$day1\"" rot.txt; then ok "the sweep records its rotation, the UTC date"; else
  not_ok "no cover_rotation $day0 in the run"; sed 's/^/  # /' rot.txt | head -5; fi
h5dump -a "/runs/$run/cover_seed" sweep.h5 >cs.txt 2>&1
cseed=$(tr -d '\n' <cs.txt | sed -n 's/.*(0): \([0-9]*\).*/\1/p') # uint64 since schema 2
if [ -n "$cseed" ] && [ "$cseed" != 3 ]; then ok "the sweep's cover seed $cseed is not its plain seed"; else
  not_ok "cover_seed '$cseed'"; fi
# Replaying with the recorded seed checks the same candidates.
fgrp=$(h5ls -r sweep.h5 | awk '/fusions\/[0-9a-f]+ *Group/ {print $1; exit}')
h5dump -d "$fgrp/covered_pairs" sweep.h5 | grep -v '^HDF5\|DATASET\|GROUP' >sw_pairs.txt 2>&1
"$TUNE" --check "$f" --budget 16 --seed 3 --cover-seed "$cseed" --threads 2 -o replay.h5 --quiet >/dev/null 2>&1
rgrp=$(h5ls -r replay.h5 | awk '/fusions\/[0-9a-f]+ *Group/ {print $1; exit}')
h5dump -d "$rgrp/covered_pairs" replay.h5 | grep -v '^HDF5\|DATASET\|GROUP' >re_pairs.txt 2>&1
if [ -s sw_pairs.txt ] && cmp -s sw_pairs.txt re_pairs.txt; then ok "--cover-seed replays the sweep's choice"; else
  not_ok "the replay covered other pairs"; fi

# The results file records the choice: one string "knob=v knob=v" per pair.
h5dump -a "$rgrp/selection" replay.h5 >sel.txt 2>&1
expect_grep '"pairwise-cover"' sel.txt "the fusion's selection attribute is pairwise-cover"
h5dump -a "$rgrp/cover_pairs_covered" replay.h5 >cpc.txt 2>&1
covered=$(tr -d '\n' <cpc.txt | sed -n 's/.*(0): \([0-9]*\).*/\1/p')
lines=$(grep -o '"[^"]*=[^" ]* [^"]*=[^"]*"' re_pairs.txt | wc -l | tr -d ' ') # one string per pair since schema 2
if [ -n "$covered" ] && [ "$covered" -eq "$lines" ] && [ "$lines" -gt 0 ]; then
  ok "covered_pairs lists the $covered pairs cover_pairs_covered counts"; else
  not_ok "cover_pairs_covered '$covered' but covered_pairs has $lines lines"; fi

finish
