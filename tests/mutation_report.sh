#!/bin/sh
# mutation_report.sh — the checker tested by mutation (issue 13 item 7):
# every fusion of datasets/ is checked with tests/backend/mutation_backend.so
# once per mutation (TUNE_MUTATION, see that file), and per mutation this
# prints over how many fusions ("of": every fusion of every file, a
# multi-fusion file counting each of its fusions) it applied (the candidate's output differs
# from the default's), how many of those the checker detected (a divergent
# verdict), and how many it attributed right (mismatch-candidate; for
# default-only mismatch-default, for race and default-race
# nondeterministic).  For the legitimate variations it prints the false
# alarms (a divergent verdict) instead, which must be 0.
#
# Where a bug is a bug:
# - A fusion the checker declares unverifiable (its --json says
#   "reference_unverifiable": true or "unverifiable" > 0: the tolerance of
#   its accumulation admits any output, and --check warns so) cannot see a
#   wrong sum, and says so.  It is left out of a bug row's counts and
#   listed under the row with what happened on it ("unverifiable" column:
#   how many such fusions the mutation applied to).  The legitimate
#   variations count every fusion: a false alarm is one anywhere.
# - one-ulp and sign-zero are bugs only on an output HLO semantics fix to
#   the bit.  Each runs twice, with TUNE_MUTATION_LEAF=exact (only the
#   output leaves the backend classifies as exact: no instruction on any
#   path to them rounds; the row that must reach 99%) and =rounded (the
#   outputs of sums, dots, approximations..., where one ulp is inside any
#   honest tolerance and +0 equals -0: information only).  The rows are
#   named one-ulp/exact, one-ulp/rounded, sign-zero/exact and
#   sign-zero/rounded; plain one-ulp or sign-zero in -m changes every leaf.
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
BUGS="one-ulp/exact one-ulp/rounded ragged-zero ragged-stale nan swap bf16 scale sign-zero/exact sign-zero/rounded race default-only default-race dropped-chunk"
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
  *) sed -n '2,36p' "$0"; exit 2 ;;
  esac
done
case $TUNE in /*) ;; *) TUNE=$(pwd)/$TUNE ;; esac
case $SO in /*) ;; *) SO=$(pwd)/$SO ;; esac
[ -x "$TUNE" ] || { echo "mutation_report.sh: no tune at $TUNE" >&2; exit 2; }
[ -f "$SO" ] || { echo "mutation_report.sh: no backend at $SO" >&2; exit 2; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
# the interpreter itself, not a version manager's shim: it runs once a fusion
PY=$(python3 -c 'import sys; print(sys.executable)')

# One line per fusion of the file: FILE:FUSION, its verdicts (default's
# first), then "unverifiable" when the checker declared its comparison
# unverifiable.  A file holds one fusion or many (conv_net, train_step...):
# each is its own row, applied or not, detected or not.
verdicts() { # $1 mutation, $2 leaf class (or empty), $3 hlo
  TUNE_MUTATION=$1 TUNE_MUTATION_LEAF=$2 "$TUNE" --check "$3" --backend "$SO" --threads 1 --json 2>/dev/null |
    "$PY" -c 'import json, os, sys
name = os.path.basename(sys.argv[1])[:-4]
for f in json.load(sys.stdin):
    v = " ".join("%s:%d" % kv for kv in f["verdicts"].items())
    u = " unverifiable" if f.get("reference_unverifiable") or f.get("unverifiable", 0) > 0 else ""
    print("%s:%s %s%s" % (name, f["fusion"], v, u))' "$3" 2>/dev/null
}

printf '%-18s %8s %9s %9s %10s %8s %13s\n' mutation applied detected "right" "false" "of" unverifiable
for row in $MUTS; do
  mut=${row%%/*} cls=
  case $row in */*) cls=${row#*/} ;; esac
  for f in "$DS"/*.hlo; do verdicts "$mut" "$cls" "$f"; done >"$W/rows"
  applied=0 detected=0 right=0 alarms=0 total=0 missed= unv=0 unvlist=
  while read -r name v; do
    # applied: the candidate (or, for default-only, the default) changed
    case " $v " in *" match:2 "*|*"runtime-error"*|*"compile-error"*) applies=0 ;; *) applies=1 ;; esac
    div=0
    case "$v" in *mismatch*|*nondeterministic*) div=1 ;; esac
    case " $LEGIT " in
    *" $mut "*) ;;
    *)
      case " $v " in
      *" unverifiable "*)
        [ $applies = 1 ] && unv=$((unv + 1))
        unvlist="$unvlist; $name ${v% unverifiable}$([ $applies = 1 ] || echo ' (not applied)')"
        continue ;;
      esac ;;
    esac
    total=$((total + 1))
    [ $applies = 1 ] || continue
    applied=$((applied + 1))
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
    *" $mut "*) [ $div = 1 ] && { alarms=$((alarms + 1)); missed="$missed $name"; } ;;
    *) [ $div = 0 ] && missed="$missed $name" ;;
    esac
  done <"$W/rows"
  case " $LEGIT " in
  *" $mut "*) printf '%-18s %8d %9s %9s %10d %8d %13s\n' "$row" "$applied" - - "$alarms" "$total" - ;;
  *) printf '%-18s %8d %9d %9d %10s %8d %13d\n' "$row" "$applied" "$detected" "$right" - "$total" "$unv" ;;
  esac
  [ -n "$VERBOSE" ] && [ -n "$missed" ] && echo "    ${missed# }"
  [ -n "$unvlist" ] && echo "    declared unverifiable, not counted: ${unvlist#; }"
done
exit 0
