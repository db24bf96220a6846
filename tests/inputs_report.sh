#!/bin/sh
# inputs_report.sh — the measurements of issue 6 ("Inputs that cannot
# lie"), rerunnable by anyone:
#   1. the share of modules whose outputs hold NaN or Inf, per input
#      profile, over datasets/ and the runnable corpus modules, split into
#      what the intent analysis explains (the module's own constants) and
#      what it flags ("inputs produced non-finite values");
#   2. the false-positive count of `tune --check` on the clean device
#      (stable compiler, no defect) over datasets/, per profile;
#   3. for every defect of `tune --list-defects`, whether `tune --check
#      --defect NAME` still finds it, per profile: on its trigger case from
#      tests/integration/defects.sh, and on how many of the first fusions
#      datasets/MANIFEST maps to it.
# It ends with one summary line per profile, for pasting.
#
# Usage: tests/inputs_report.sh [-t TUNE] [-d DATASETS] [-c CORPUS]
#          [-p "PROFILES"] [-b BUDGET] [-n MAX_FUSIONS_PER_DEFECT] [-s SECTIONS]
#          [-e EVAL_TIMEOUT] [-j 2]
# Defaults: ./tune, the source tree's datasets and ../shared/corpus/xla-hlo,
# all four profiles, --budget 48 candidates per check (a sweep of every
# candidate of every fusion under four profiles takes long; the budget keeps
# the report to about an hour and is printed with it), 3 fusions per
# defect, sections "1 2 3", 60 s per --eval.  Datasets are evaluated with
# the replica count MANIFEST gives them.  A module the evaluator refuses
# (custom-call, rng, collectives without replicas: exit 2) counts as
# unsupported; one that outlives the eval timeout as timed out.  Neither
# counts as run.  -j 2 runs section 1 (evaluations) alongside sections 2
# and 3 (checks), printing them in order at the end: the same results, in
# less wall time on a machine with cores to spare.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
DS="$here/datasets"
CORPUS="$here/../shared/corpus/xla-hlo"
PROFILES="naive constrained edge oob-indices"
BUDGET=48
PERDEFECT=3
SECTIONS="1 2 3"
EVAL_TIMEOUT=60
JOBS=1
while getopts t:d:c:p:b:n:s:e:j: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  d) DS=$OPTARG ;;
  c) CORPUS=$OPTARG ;;
  p) PROFILES=$OPTARG ;;
  b) BUDGET=$OPTARG ;;
  n) PERDEFECT=$OPTARG ;;
  s) SECTIONS=$OPTARG ;;
  e) EVAL_TIMEOUT=$OPTARG ;;
  j) JOBS=$OPTARG ;;
  *) sed -n '2,30p' "$0"; exit 2 ;;
  esac
done
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
START=$(date +%s)

has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
# Per-profile results for the summary: put P KEY VALUE, get P KEY.
put() { echo "$3" >"$TMPD/sum.$1.$2"; }
get() { if [ -f "$TMPD/sum.$1.$2" ]; then cat "$TMPD/sum.$1.$2"; else echo -; fi; }

echo "inputs_report: $("$TUNE" --version 2>/dev/null | head -n 1); profiles: $PROFILES; sections: $SECTIONS"
echo "  --check --budget $BUDGET, $PERDEFECT MANIFEST fusions per defect, --eval timeout ${EVAL_TIMEOUT}s"

# ---- 1. non-finite outputs ----------------------------------------------------
section1() {
  echo
  echo "== 1. modules whose outputs hold NaN or Inf (tune --eval --profile P)"
  echo "   datasets/ and $(basename "$CORPUS")/; 'explained' = the module's own constants (intent.h),"
  echo "   'flagged' = inputs produced non-finite values (target under constrained: 0)"
  printf '%-12s %5s %6s %6s %10s %9s %7s\n' profile ran unsupp timeout nonfinite explained flagged
  for p in $PROFILES; do
    ran=0 unsupp=0 tmo=0 nf=0 intended=0 inputs=0
    : >"$TMPD/flagged.$p"
    for f in "$DS"/*.hlo "$CORPUS"/*.hlo; do
      [ -f "$f" ] || continue
      reps=1
      if [ "$(dirname "$f")" = "$DS" ] && [ -f "$DS/MANIFEST" ]; then
        reps=$(awk -F'\t' -v f="$(basename "$f")" '$1 == f {print $4}' "$DS/MANIFEST")
        case $reps in '' | *[!0-9]*) reps=1 ;; esac
      fi
      timeout "$EVAL_TIMEOUT" "$TUNE" --eval "$f" --profile "$p" --replicas "$reps" -o "$TMPD/e.h5" \
        2>"$TMPD/err" >/dev/null
      st=$?
      if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then tmo=$((tmo + 1)); continue; fi
      if [ "$st" -ne 0 ]; then unsupp=$((unsupp + 1)); continue; fi
      ran=$((ran + 1))
      if grep -q "from the module's own constants" "$TMPD/err"; then
        nf=$((nf + 1)); intended=$((intended + 1))
      elif grep -q "inputs produced non-finite values" "$TMPD/err"; then
        nf=$((nf + 1)); inputs=$((inputs + 1))
        echo "   $(basename "$f"): $(sed -n 's/.*warning: //p' "$TMPD/err")" >>"$TMPD/flagged.$p"
      fi
    done
    pct=$(awk -v a="$nf" -v b="$ran" 'BEGIN { printf "%.1f%%", (b > 0 ? 100 * a / b : 0) }')
    printf '%-12s %5d %6d %6d %4d %5s %9d %7d\n' "$p" "$ran" "$unsupp" "$tmo" "$nf" "$pct" "$intended" "$inputs"
    cat "$TMPD/flagged.$p"
    put "$p" nf "$nf/$ran ($pct)"
    put "$p" expl "$intended"
    put "$p" flag "$inputs"
  done
}

# ---- 2. false positives on the clean device --------------------------------------
section2() {
  echo
  echo "== 2. false positives: tune --check on the clean device (stable, no --defect), --budget $BUDGET, datasets/"
  echo "   'diverged' = exit status not 0 (target: 0); 'flagged' = reference outputs the inputs made non-finite"
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
    put "$p" fp "$bad/$n"
  done
}

# ---- 3. defects still detected -----------------------------------------------------
# Two ways per defect: its trigger case from tests/integration/defects.sh
# (a fusion and the --only config or budget meeting the defect's trigger),
# and the first fusions MANIFEST maps to it, swept with --budget.
section3() {
  echo
  echo "== 3. defects detected: trigger case (defects.sh) yes/NO, then MANIFEST fusions found/tried (--budget $BUDGET)"
  printf '%-22s' defect
  for p in $PROFILES; do printf ' %16s' "$p"; done
  echo
  "$TUNE" --list-defects | awk '{print $1}' >"$TMPD/defects"
  sed -n '/^cat >"$TMPD\/cases"/,/^EOF/p' "$here/tests/integration/defects.sh" | grep '|' >"$TMPD/cases"
  for p in $PROFILES; do put "$p" trig 0; put "$p" any 0; done
  ndef=0
  while read -r d; do
    ndef=$((ndef + 1))
    grep -v '^#' "$DS/MANIFEST" | awk -F'\t' -v d="$d" '{n = split($3, a, ","); for (i = 1; i <= n; i++) if (a[i] == d) print $1}' |
      head -n "$PERDEFECT" >"$TMPD/fusions"
    printf '%-22s' "$d"
    for p in $PROFILES; do
      trig=-
      case_line=$(awk -F'|' -v d="$d" '$2 == d {print; exit}' "$TMPD/cases")
      fu=$(echo "$case_line" | cut -d'|' -f1)
      if [ -n "$case_line" ] && [ -f "$DS/$fu.hlo" ]; then
        opt=$(echo "$case_line" | cut -d'|' -f4)
        arg=$(echo "$case_line" | cut -d'|' -f5)
        extra=""
        [ "$d" = int8-dot-f32-acc ] && extra="--atol 0 --rtol 0"
        # shellcheck disable=SC2086
        timeout 600 "$TUNE" --check "$DS/$fu.hlo" --defect "$d" --profile "$p" $extra "$opt" "$arg" -q </dev/null >/dev/null 2>&1
        if [ $? -eq 1 ]; then trig=yes; else trig=NO; fi
      fi
      hit=0 tot=0
      while read -r fu; do
        tot=$((tot + 1))
        timeout 600 "$TUNE" --check "$DS/$fu" --defect "$d" --profile "$p" --budget "$BUDGET" -q </dev/null >/dev/null 2>&1
        [ $? -eq 1 ] && hit=$((hit + 1))
      done <"$TMPD/fusions"
      printf ' %16s' "$trig $hit/$tot"
      [ "$trig" = yes ] && put "$p" trig $(($(get "$p" trig) + 1))
      if [ "$trig" = yes ] || [ "$hit" -gt 0 ]; then put "$p" any $(($(get "$p" any) + 1)); fi
    done
    echo
  done <"$TMPD/defects"
  for p in $PROFILES; do
    put "$p" trig "$(get "$p" trig)/$ndef"
    put "$p" any "$(get "$p" any)/$ndef"
  done
}

# Section 1 evaluates into its own scratch names (e.h5, err, flagged.P),
# sections 2 and 3 check into theirs (out, defects, cases, fusions), so
# with -j 2 the two lanes share nothing but the summary files.
if [ "$JOBS" -ge 2 ] && has 1; then
  section1 >"$TMPD/out.1" 2>&1 &
  lane=$!
else
  lane=""
  if has 1; then section1; fi
fi
if [ -n "$lane" ]; then
  { if has 2; then section2; fi; if has 3; then section3; fi; } >"$TMPD/out.23" 2>&1
  wait "$lane"
  cat "$TMPD/out.1" "$TMPD/out.23"
else
  if has 2; then section2; fi
  if has 3; then section3; fi
fi

# ---- summary ---------------------------------------------------------------------
echo
echo "== summary (--budget $BUDGET, $(($(date +%s) - START)) s wall)"
printf '%-12s | %-20s | %-9s | %-7s | %-12s | %-15s | %-15s\n' profile "non-finite/ran" explained flagged "false pos." "defects: trig." "defects: any"
for p in $PROFILES; do
  printf '%-12s | %-20s | %-9s | %-7s | %-12s | %-15s | %-15s\n' "$p" "$(get "$p" nf)" "$(get "$p" expl)" \
    "$(get "$p" flag)" "$(get "$p" fp)" "$(get "$p" trig)" "$(get "$p" any)"
done
