#!/bin/sh
# mutation_report.sh — the checker tested by mutation (issue 13 item 7):
# every fusion of datasets/ is checked with tests/backend/mutation_backend.so
# once per mutation (TUNE_MUTATION, see that file), and per mutation this
# prints over how many fusions it applied (the candidate's output differs
# from the default's), how many of those the checker detected (a divergent
# verdict), and how many it attributed right (mismatch-candidate; for
# default-only mismatch-default, for race and default-race
# nondeterministic).  For the
# legitimate variations it prints the false alarms (a divergent verdict)
# instead, which must be 0.
#
# Usage: tests/mutation_report.sh [-t TUNE] [-b BACKEND.so] [-d DATASETS]
#          [-m "MUTATIONS"] [-v]
# Defaults: ./tune, tests/backend/mutation_backend.so (from the build
# folder), the source tree's datasets, every mutation; -v lists the fusions
# a bug mutation escaped and those a variation falsely flagged.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
SO=tests/backend/mutation_backend.so
DS="$here/datasets"
BUGS="one-ulp ragged-zero ragged-stale nan swap bf16 scale sign-zero race default-only default-race dropped-chunk"
LEGIT="reorder f64-acc rel-1e-7"
MUTS="$BUGS $LEGIT"
VERBOSE=
while getopts t:b:d:m:v opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  b) SO=$OPTARG ;;
  d) DS=$OPTARG ;;
  m) MUTS=$OPTARG ;;
  v) VERBOSE=1 ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
case $TUNE in /*) ;; *) TUNE=$(pwd)/$TUNE ;; esac
case $SO in /*) ;; *) SO=$(pwd)/$SO ;; esac
[ -x "$TUNE" ] || { echo "mutation_report.sh: no tune at $TUNE" >&2; exit 2; }
[ -f "$SO" ] || { echo "mutation_report.sh: no backend at $SO" >&2; exit 2; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# One line per fusion: its file and its verdicts (default's first).
verdicts() { # $1 mutation, $2 hlo
  TUNE_MUTATION=$1 "$TUNE" --check "$2" --backend "$SO" --threads 1 --json 2>/dev/null |
    python3 -c 'import json, sys
for f in json.load(sys.stdin):
    print(" ".join("%s:%d" % kv for kv in f["verdicts"].items()), end=" ")' 2>/dev/null
}

printf '%-14s %8s %9s %9s %10s %8s\n' mutation applied detected "right" "false" "of"
for mut in $MUTS; do
  applied=0 detected=0 right=0 alarms=0 total=0 missed=
  for f in "$DS"/*.hlo; do
    v=$(verdicts "$mut" "$f")
    [ -n "$v" ] || continue
    total=$((total + 1))
    # applied: the candidate (or, for default-only, the default) changed
    case " $v" in *" match:2 "*|*"runtime-error"*|*"compile-error"*) continue ;; esac
    applied=$((applied + 1))
    div=0
    case "$v" in *mismatch*|*nondeterministic*) div=1 ;; esac
    if [ $div = 1 ]; then
      detected=$((detected + 1))
      case $mut in
      default-only) want=mismatch-default ;;
      race|default-race) want=nondeterministic ;;
      *) want=mismatch-candidate ;;
      esac
      case "$v" in *"$want:"*) right=$((right + 1)) ;; esac
    fi
    case " $LEGIT " in
    *" $mut "*) [ $div = 1 ] && { alarms=$((alarms + 1)); missed="$missed $(basename "$f" .hlo)"; } ;;
    *) [ $div = 0 ] && missed="$missed $(basename "$f" .hlo)" ;;
    esac
  done
  case " $LEGIT " in
  *" $mut "*) printf '%-14s %8d %9s %9s %10d %8d\n' "$mut" "$applied" - - "$alarms" "$total" ;;
  *) printf '%-14s %8d %9d %9d %10s %8d\n' "$mut" "$applied" "$detected" "$right" - "$total" ;;
  esac
  [ -n "$VERBOSE" ] && [ -n "$missed" ] && echo "    ${missed# }"
done
exit 0
