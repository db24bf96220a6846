#!/bin/sh
# same_bits.sh — do two tune binaries store the same results, bit for bit?
#
# Usage: same_bits.sh BEFORE_TUNE AFTER_TUNE [FILE.hlo...]
#   (default files: every datasets/*.hlo next to this script)
# Environment: COMPILERS (default "stable nightly"), PROFILES (input
# profiles, default "constrained"), BUDGET (candidates per fusion, default
# 8), SEED (default 0), WORK (scratch folder, default $TMPDIR/tune-same-bits).
#
# For every file x compiler x input profile both binaries run
#   tune --check FILE --compiler C --profile P --seed S --budget B --threads 1 -q -o OUT.h5
# and the two files are dumped with h5dump, floats printed with 17
# significant digits (every bit of a double), after removing what may
# differ between two runs of the same binary: the run's id, its started /
# created_ns / finished / command / host attributes and every wall_time (the fusion's
# attribute and the candidates' column).  Everything else must be equal:
# verdicts, statuses, messages, simulated times, speedups, tolerances, every
# metric and both sides' summary statistics, error maps, the inputs kept.
# Prints one line per run and a summary; exit 0 when all are equal, 1 when
# any differs (the diff is kept in WORK), 2 on bad usage.
set -u
if [ $# -lt 2 ]; then
  echo "usage: same_bits.sh BEFORE_TUNE AFTER_TUNE [FILE.hlo...]" >&2
  exit 2
fi
before=$1 after=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
  set -- "$here"/../../datasets/*.hlo
fi
work=${WORK:-${TMPDIR:-/tmp}/tune-same-bits}
mkdir -p "$work"
budget=${BUDGET:-8} seed=${SEED:-0}

# h5dump, then drop the lines that name or hold run-dependent values.
normalise() {
  h5dump -m '%.17g' "$1" | awk '
    # the file name, and the run group named after its start time and pid
    NR == 1 { print "HDF5 FILE {"; next }
    /^ *GROUP "[0-9]+T[0-9]+Z-[0-9]+" \{$/ { sub(/"[^"]*"/, "\"RUN\"") }
    # attributes that say when, where and how the run was started
    skip == 0 && /^ *ATTRIBUTE "(wall_time|started|created_ns|finished|command|host)" \{$/ {
      skip = 1; ind = index($0, "A"); next
    }
    skip == 1 { if (index($0, "}") == ind && $0 ~ /^ *\}$/) skip = 0; next }
    # compound members, in order, of the dataset being dumped
    /DATATYPE  H5T_COMPOUND \{/ { incomp = 1; nm = 0; next }
    incomp == 1 && /^ *DATASPACE/ { incomp = 0 }
    incomp == 1 && /"[^"]+";$/ { s = $0; sub(/^.*"([^"]*)";$/, "&", s); match(s, /"[^"]+";$/);
                                 name[++nm] = substr(s, RSTART + 1, RLENGTH - 3) }
    # one record: one member per line
    /^ *\([0-9]+\): \{$/ { inrow = 1; k = 0; print; next }
    inrow == 1 && /^ *\},?$/ { inrow = 0; print; next }
    inrow == 1 { k++; if (name[k] == "wall_time") { print "        wall_time"; next } }
    { print }'
}

total=0 same=0 differ=0 failed=0 fusions=0
for f in "$@"; do
  b=$(basename "$f" .hlo)
  for c in ${COMPILERS:-stable nightly}; do
    for p in ${PROFILES:-constrained}; do
      total=$((total + 1))
      tag="$b.$c.$p"
      rm -f "$work/$tag.before.h5" "$work/$tag.after.h5"
      "$before" --check "$f" --compiler "$c" --profile "$p" --seed "$seed" --budget "$budget" --threads 1 -q \
        -o "$work/$tag.before.h5" >"$work/$tag.before.out" 2>&1
      rb=$?
      "$after" --check "$f" --compiler "$c" --profile "$p" --seed "$seed" --budget "$budget" --threads 1 -q \
        -o "$work/$tag.after.h5" >"$work/$tag.after.out" 2>&1
      ra=$?
      if [ ! -s "$work/$tag.before.h5" ] || [ ! -s "$work/$tag.after.h5" ]; then
        # no results file: the exit statuses and what was printed must agree
        if [ "$rb" = "$ra" ] && [ ! -s "$work/$tag.before.h5" ] && [ ! -s "$work/$tag.after.h5" ]; then
          echo "same     $tag (no results file, exit $rb both)"
          same=$((same + 1))
        else
          echo "FAILED   $tag: exit $rb before, $ra after; see $work/$tag.*.out"
          failed=$((failed + 1))
        fi
        continue
      fi
      normalise "$work/$tag.before.h5" >"$work/$tag.before.txt"
      normalise "$work/$tag.after.h5" >"$work/$tag.after.txt"
      if [ "$rb" = "$ra" ] && cmp -s "$work/$tag.before.txt" "$work/$tag.after.txt"; then
        nf=$(grep -c '^ *GROUP "[0-9a-f]\{16\}" {$' "$work/$tag.after.txt")
        echo "same     $tag (exit $rb, $nf fusions, $(grep -c '^ *([0-9]*): {$' "$work/$tag.after.txt") records)"
        same=$((same + 1))
        fusions=$((fusions + nf))
        rm -f "$work/$tag".*
      else
        diff "$work/$tag.before.txt" "$work/$tag.after.txt" >"$work/$tag.diff"
        echo "DIFFERS  $tag: exit $rb before, $ra after; $(grep -c '^[<>]' "$work/$tag.diff") lines differ, see $work/$tag.diff"
        differ=$((differ + 1))
      fi
    done
  done
done
echo "same_bits: $total runs: $same identical ($fusions fusions), $differ differ, $failed failed (budget $budget, seed $seed)"
[ "$differ" -eq 0 ] && [ "$failed" -eq 0 ]
