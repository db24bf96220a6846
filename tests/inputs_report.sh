#!/bin/sh
# inputs_report.sh — the measurements of issue 6 ("Inputs that cannot
# lie"), rerunnable by anyone:
#   1. the share of modules whose outputs hold NaN or Inf, per input
#      profile, over datasets/ and the runnable corpus modules, split into
#      what the intent analysis explains (the module's own constants) and
#      what it flags ("inputs produced non-finite values");
#   2. the false-positive count of `tune --check` on the clean device
#      (stable compiler, no defect) over datasets/, per profile;
#   3. for every defect of `tune --list-defects`, on how many of the
#      fusions datasets/MANIFEST maps to it `tune --check --defect NAME`
#      finds a divergence, per profile.
#
# Usage: tests/inputs_report.sh [-t TUNE] [-d DATASETS] [-c CORPUS]
#          [-p "PROFILES"] [-b BUDGET] [-n MAX_FUSIONS_PER_DEFECT] [-s SECTIONS]
# Defaults: ./tune, the source tree's datasets and ../shared/corpus/xla-hlo,
# all four profiles, --budget 48 candidates per check (a sweep of every
# candidate of every fusion under four profiles takes long; the budget keeps
# the report to minutes and is printed with it), 3 fusions per defect,
# sections "1 2 3".  Modules the evaluator cannot run (custom-call, rng,
# collectives without replicas) or that exceed 30 s are counted as skipped.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
DS="$here/datasets"
CORPUS="$here/../shared/corpus/xla-hlo"
PROFILES="naive constrained edge oob-indices"
BUDGET=48
PERDEFECT=3
SECTIONS="1 2 3"
while getopts t:d:c:p:b:n:s: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  d) DS=$OPTARG ;;
  c) CORPUS=$OPTARG ;;
  p) PROFILES=$OPTARG ;;
  b) BUDGET=$OPTARG ;;
  n) PERDEFECT=$OPTARG ;;
  s) SECTIONS=$OPTARG ;;
  *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- 1. non-finite outputs ----------------------------------------------------
if has 1; then
  echo "== 1. modules whose outputs hold NaN or Inf (tune --eval --profile P)"
  printf '%-12s %6s %6s %9s %9s %9s\n' profile ran skipped nonfinite intended inputs
  for p in $PROFILES; do
    ran=0 skipped=0 nf=0 intended=0 inputs=0
    : >"$TMPD/flagged.$p"
    for f in "$DS"/*.hlo "$CORPUS"/*.hlo; do
      [ -f "$f" ] || continue
      if ! timeout 30 "$TUNE" --eval "$f" --profile "$p" -o "$TMPD/e.h5" 2>"$TMPD/err" >/dev/null; then
        skipped=$((skipped + 1)); continue
      fi
      ran=$((ran + 1))
      if grep -q "from the module's own constants" "$TMPD/err"; then
        nf=$((nf + 1)); intended=$((intended + 1))
      elif grep -q "inputs produced non-finite values" "$TMPD/err"; then
        nf=$((nf + 1)); inputs=$((inputs + 1))
        echo "   $(basename "$f"): $(sed -n 's/.*warning: //p' "$TMPD/err")" >>"$TMPD/flagged.$p"
      fi
    done
    printf '%-12s %6d %6d %4d %3d%% %9d %9d\n' "$p" "$ran" "$skipped" "$nf" \
      $((ran > 0 ? 100 * nf / ran : 0)) "$intended" "$inputs"
    cat "$TMPD/flagged.$p"
  done
fi

# ---- 2. false positives on the clean device --------------------------------------
if has 2; then
  echo "== 2. false positives: tune --check on the clean device, --budget $BUDGET, datasets/"
  printf '%-12s %8s %8s %8s %s\n' profile fusions diverged flagged files
  for p in $PROFILES; do
    n=0 bad=0 flagged=0 files=""
    for f in "$DS"/*.hlo; do
      n=$((n + 1))
      timeout 600 "$TUNE" --check "$f" --profile "$p" --budget "$BUDGET" >"$TMPD/out" 2>&1
      st=$?
      grep -q "inputs produced non-finite values" "$TMPD/out" && flagged=$((flagged + 1))
      if [ "$st" -ne 0 ]; then bad=$((bad + 1)); files="$files $(basename "$f" .hlo)($st)"; fi
    done
    printf '%-12s %8d %8d %8d %s\n' "$p" "$n" "$bad" "$flagged" "$files"
  done
fi

# ---- 3. defects still detected -----------------------------------------------------
# Two ways per defect: its trigger case from tests/integration/defects.sh
# (a fusion and the --only config or budget meeting the defect's trigger),
# and the first fusions MANIFEST maps to it, swept with --budget.
if has 3; then
  echo "== 3. defects detected: trigger case (defects.sh) / MANIFEST fusions found of tried (--budget $BUDGET)"
  printf '%-22s' defect
  for p in $PROFILES; do printf ' %16s' "$p"; done
  echo
  "$TUNE" --list-defects | awk '{print $1}' >"$TMPD/defects"
  sed -n '/^cat >"$TMPD\/cases"/,/^EOF/p' "$here/tests/integration/defects.sh" | grep '|' >"$TMPD/cases"
  while read -r d; do
    grep -v '^#' "$DS/MANIFEST" | awk -F'\t' -v d="$d" '{n = split($3, a, ","); for (i = 1; i <= n; i++) if (a[i] == d) print $1}' |
      head -n "$PERDEFECT" >"$TMPD/fusions"
    printf '%-22s' "$d"
    for p in $PROFILES; do
      trig=-
      case_line=$(awk -F'|' -v d="$d" '$2 == d {print; exit}' "$TMPD/cases")
      if [ -n "$case_line" ]; then
        fu=$(echo "$case_line" | cut -d'|' -f1) opt=$(echo "$case_line" | cut -d'|' -f4)
        arg=$(echo "$case_line" | cut -d'|' -f5)
        extra=""
        [ "$d" = int8-dot-f32-acc ] && extra="--atol 0 --rtol 0"
        # shellcheck disable=SC2086
        timeout 600 "$TUNE" --check "$DS/$fu.hlo" --defect "$d" --profile "$p" $extra "$opt" "$arg" -q >/dev/null 2>&1
        if [ $? -eq 1 ]; then trig=yes; else trig=NO; fi
      fi
      hit=0 tot=0
      while read -r fu; do
        tot=$((tot + 1))
        timeout 600 "$TUNE" --check "$DS/$fu" --defect "$d" --profile "$p" --budget "$BUDGET" -q >/dev/null 2>&1
        [ $? -eq 1 ] && hit=$((hit + 1))
      done <"$TMPD/fusions"
      printf ' %16s' "$trig $hit/$tot"
    done
    echo
  done <"$TMPD/defects"
fi
