#!/bin/sh
# budget_report.sh — per catalog defect, on how many of the MANIFEST
# fusions that can expose it a `tune --check --budget N` finds it (issue 19).
#
#   tests/budget_report.sh [TUNE] [BUDGET] [first]    (defaults: ./tune, 16)
#
# Prints one line per (fusion, defect): caught (exit 1), missed (exit 0) or
# error (exit 2), then per defect "caught on C of F fusions".  Run it with
# an older binary as TUNE to compare, and with BUDGET 1000000 (every
# candidate) for the most any budget can catch: a (fusion, defect) missed
# there has no triggering config in the space, and no choice can find it.
# With "first", each defect is tried
# on its fusions in MANIFEST order only until one catches it (a quicker
# answer to "is every defect caught somewhere").  Each check stops at its
# first divergent candidate (--stop-on-mismatch).  int8-dot-f32-acc is checked with
# --atol 0 --rtol 0 as in tests/integration/defects.sh (the derived bound
# of an f32 output hides a loss of a few units in s32 sums above 2^24).
tune=${1:-./tune}
budget=${2:-16}
first=${3:-}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
manifest="$srcdir/datasets/MANIFEST"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
grep -v '^#' "$manifest" | while IFS='	' read -r file what defects replicas rest; do
  [ "$defects" = - ] && continue
  for d in $(echo "$defects" | tr , ' '); do
    if [ "$first" = first ] && grep -q "^$d caught" "$tmp"; then continue; fi
    extra=""
    [ "$d" = int8-dot-f32-acc ] && extra="--atol 0 --rtol 0"
    # shellcheck disable=SC2086
    "$tune" --check "$srcdir/datasets/$file" --defect "$d" --budget "$budget" --replicas "$replicas" \
      --threads 2 --stop-on-mismatch --quiet $extra >/dev/null 2>&1
    rc=$?
    case $rc in 1) r=caught ;; 0) r=missed ;; *) r="error($rc)" ;; esac
    echo "$file $d $r"
    echo "$d $r" >>"$tmp"
  done
done
echo "per defect, --budget $budget:"
sort "$tmp" | awk '{n[$1]++; if ($2 == "caught") c[$1]++} END {for (d in n) printf "  %-22s caught on %d of %d fusions\n", d, c[d], n[d]}' | sort
