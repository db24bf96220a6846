#!/bin/sh
# make bench: every figure is printed next to a peer measured in the same
# run on this machine, because absolute numbers on a shared box mean little.
set -e
: "${TUNE_BUILDDIR:?}"
work=${TMPDIR:-/tmp}/tune-bench
mkdir -p "$work"
mod="$work/parse50.hlo"

echo "== parser throughput (generated ~50 MB module) =="
rm -f "$mod"
"$TUNE_BUILDDIR/tests/bench/bench_parse" "$mod" 50 | tee "$work/parse.txt"
# Peer: reading the same bytes with cat (warm page cache), best of 3.
best=""
for i in 1 2 3; do
  t0=$(date +%s.%N); cat "$mod" > /dev/null; t1=$(date +%s.%N)
  t=$(echo "$t1 - $t0" | bc -l 2>/dev/null || awk "BEGIN{print $t1 - $t0}")
  if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
done
size=$(wc -c < "$mod")
awk -v s="$size" -v t="$best" 'BEGIN{printf "cat file > /dev/null: %.1f MB/s\n", s/1e6/t}' | tee -a "$work/parse.txt"
awk '/^parse:/{p=$(NF-1)} /^cat/{c=$(NF-1)} END{printf "parser / cat = %.3f; target parser >= 100 MB/s: %s\n", p/c, (p>=100?"met":"NOT met")}' "$work/parse.txt"
rm -f "$mod"
