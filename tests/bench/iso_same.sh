#!/bin/sh
# iso_same.sh — do two tune binaries give the same `tune --isolate`
# results, bit for bit?
#
# Usage: iso_same.sh BEFORE_TUNE AFTER_TUNE
# Environment: CORPUS (default ../shared/corpus/xla-hlo next to the
# repository; skipped when absent), WORK (scratch folder).
#
# Cases: the three multi-fusion modules of datasets/ x stable/nightly x
# seeds 0 and 3; the 11 catalog-defect cases of
# tests/integration/isolate.sh (each culprit's micro inspection
# included); every corpus module with more than one fusion x
# stable/nightly.  Each runs both binaries with one thread and -o, and
# compares exit status, stdout and stderr (durations masked) and the
# results file dumped with h5dump -m %.17g, run ids and times removed.
# Prints one line per case and a summary; exit 0 when all are equal, 1
# when any differs (the diff is kept in WORK), 2 on bad usage.  The
# speed work on isolation (issue 16) is checked with it: a change that
# only makes --isolate faster must leave every case identical.
set -u
if [ $# -ne 2 ]; then
  echo "usage: iso_same.sh BEFORE_TUNE AFTER_TUNE" >&2
  exit 2
fi
before=$1 after=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
ds=$src/datasets
corpus=${CORPUS:-$src/../shared/corpus/xla-hlo}
work=${WORK:-${TMPDIR:-/tmp}/tune-iso-same}
mkdir -p "$work"
normalise() {
  h5dump -m '%.17g' "$1" 2>/dev/null | awk '
    NR == 1 { print "HDF5 FILE {"; next }
    /^ *GROUP "[0-9]+T[0-9]+Z-[0-9]+" \{$/ { sub(/"[^"]*"/, "\"RUN\"") }
    skip == 0 && /^ *ATTRIBUTE "(wall_time|started|created_ns|finished|command|host|seconds|cpu_seconds|elapsed)" \{$/ {
      skip = 1; ind = index($0, "A"); next }
    skip == 1 { if (index($0, "}") == ind && $0 ~ /^ *\}$/) skip = 0; next }
    { print }'
}
total=0 same=0 differ=0
run_case() { # tag, args...
  tag=$1; shift
  total=$((total + 1))
  rm -f "$work/$tag".*
  OMP_NUM_THREADS=1 "$before" --isolate "$@" -o "$work/$tag.b.h5" >"$work/$tag.b.out" 2>&1; rb=$?
  OMP_NUM_THREADS=1 "$after" --isolate "$@" -o "$work/$tag.a.h5" >"$work/$tag.a.out" 2>&1; ra=$?
  sed -E 's/[0-9.]+ (ms|s)\b/T/g' "$work/$tag.b.out" >"$work/$tag.b.txt"
  sed -E 's/[0-9.]+ (ms|s)\b/T/g' "$work/$tag.a.out" >"$work/$tag.a.txt"
  [ -s "$work/$tag.b.h5" ] && normalise "$work/$tag.b.h5" >>"$work/$tag.b.txt"
  [ -s "$work/$tag.a.h5" ] && normalise "$work/$tag.a.h5" >>"$work/$tag.a.txt"
  if [ "$rb" = "$ra" ] && cmp -s "$work/$tag.b.txt" "$work/$tag.a.txt"; then
    same=$((same + 1)); echo "same     $tag (exit $rb)"; rm -f "$work/$tag".*
  else
    differ=$((differ + 1)); diff "$work/$tag.b.txt" "$work/$tag.a.txt" >"$work/$tag.diff"
    echo "DIFFERS  $tag: exit $rb/$ra, see $work/$tag.diff"
  fi
}
for m in transformer_block train_step conv_net; do
  for c in stable nightly; do for s in 0 3; do run_case "$m.$c.$s" "$ds/$m.hlo" --compiler "$c" --seed "$s"; done; done
done
i=0
while IFS='|' read -r mod unit defect cfg pat; do
  i=$((i + 1)); run_case "defect$i.$defect" "$ds/$mod.hlo" --defect "$defect" --config "$unit=$cfg"
done <<'EOC'
train_step|grad_norm_sq|packed-reduce-init0|tile=128 k=512 buf=2 order=0k pack=4|
train_step|grad_norm_sq|ragged-chunk-pad|tile=256 k=128 buf=2 order=0k pack=1|
conv_net|global_pool|revisit-no-reinit|tile=8x128 k=32 buf=3 order=k01 pack=2|
train_step|loss_history|scatter-s8-iota-wrap|flags=vec-scatter|
conv_net|topk_rows|sort-lane-index|flags=two-stage-sort|
train_step|qat_residual|elide-convert|flags=fuse-converts|
transformer_block|o_proj_residual|ragged-store-mask|tile=8x256|
conv_net|bilinear_gram|int8-dot-f32-acc|k=250|
transformer_block|window_keys|dynslice-clamp-lost|tile=8x128|
train_step|clip_dropout|unsigned-cmp-signed|flags=fuse-converts|
train_step|qat_residual|dma-race|tile=8x1000 buf=2|
EOC
if [ -d "$corpus" ]; then
  for f in "$corpus"/*.hlo; do
    n=$(grep -c ' fusion(' "$f")
    [ "$n" -gt 1 ] || continue
    for c in stable nightly; do run_case "corpus.$(basename "$f" .hlo).$c" "$f" --compiler "$c"; done
  done
fi
echo "iso_same: $total cases: $same identical, $differ differ (work: $work)"
[ "$differ" -eq 0 ]
