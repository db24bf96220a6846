#!/bin/sh
# budget_report.sh — per catalog defect, on how many of the MANIFEST
# fusions that can expose it a `tune --check --budget N` finds it (issue 19).
# Modules (MANIFEST column 5 "module") are left out.
#
#   tests/budget_report.sh [TUNE] [BUDGET] [first]    (defaults: ./tune, 16)
#
# Prints one line per (fusion, defect): caught (exit 1), missed (exit 0) or
# error (exit 2), then per defect "caught on C of F fusions".  Run it with
# an older binary as TUNE to compare.  A miss is checked again over the
# whole space (every candidate): "missed, whole space too" means no budget
# and no choice of candidates could have found it there (no config meets
# the trigger, or the inputs or the tolerance hide the symptom), and only
# "missed, caught in the whole space" is a miss of the budget's choice.
# With "first", each defect is tried
# on its fusions in MANIFEST order only until one catches it (a quicker
# answer to "is every defect caught somewhere").  Each check stops at its
# first divergent candidate (--stop-on-mismatch).  int8-dot-f32-acc is checked with
# --atol 0 --rtol 0 as in tests/integration/defects.sh (the derived bound
# of an f32 output hides a loss of a few units in s32 sums above 2^24), and
# dynslice-clamp-lost and scatter-s8-iota-wrap with --profile oob-indices
# (their symptoms need an index out of range, which the constrained profile
# never draws: a start past the last valid one, a negative s8 index).
tune=${1:-./tune}
budget=${2:-16}
first=${3:-}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
manifest="$srcdir/datasets/MANIFEST"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
grep -v '^#' "$manifest" | while IFS='	' read -r file what defects replicas rest; do
  [ "$defects" = - ] && continue
  # A module's defects are the ones isolate.sh shows under a --config
  # override, which may lie outside the space (MANIFEST's header).
  case $rest in module*) continue ;; esac
  for d in $(echo "$defects" | tr , ' '); do
    if [ "$first" = first ] && grep -q "^$d caught" "$tmp"; then continue; fi
    extra=""
    [ "$d" = int8-dot-f32-acc ] && extra="--atol 0 --rtol 0"
    case $d in dynslice-clamp-lost | scatter-s8-iota-wrap) extra="--profile oob-indices" ;; esac
    # shellcheck disable=SC2086
    "$tune" --check "$srcdir/datasets/$file" --defect "$d" --budget "$budget" --replicas "$replicas" \
      --threads 2 --stop-on-mismatch --quiet $extra >/dev/null 2>&1
    rc=$?
    case $rc in 1) r=caught ;; 0) r=missed ;; *) r="error($rc)" ;; esac
    how=""
    if [ "$r" = missed ]; then
      # shellcheck disable=SC2086
      "$tune" --check "$srcdir/datasets/$file" --defect "$d" --replicas "$replicas" \
        --threads 2 --stop-on-mismatch --quiet $extra >/dev/null 2>&1
      case $? in 1) how=", caught in the whole space" ;; 0) how=", whole space too" ;; *) how=", whole space: error" ;; esac
    fi
    echo "$file $d $r$how"
    echo "$d $r$how" | tr -d ',' >>"$tmp"
  done
done
echo "per defect, --budget $budget:"
sort "$tmp" | awk '{n[$1]++; if ($2 == "caught") c[$1]++; if ($3 == "whole") w[$1]++}
  END {for (d in n) printf "  %-22s caught on %d of %d fusions; missed in the whole space too on %d\n", d, c[d], n[d], w[d]}' | sort
