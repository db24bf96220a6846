#!/bin/sh
# minimize_report.sh — issue 7's last "done when": `tune --reproduce
# --minimize` shrinks the fusion of every catalogued defect.  For each
# trigger case of tests/integration/defects.sh (fusion, defect, the options
# that select a config meeting the trigger) it checks the fusion under the
# defect, takes the first divergent candidate, minimizes it and prints the
# instruction counts before and after, then checks that the minimized
# bundle's run.sh still exits 1 under the defect and 0 without it.
#
# Usage: tests/minimize_report.sh [-t TUNE]     (default ./tune)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
while getopts t: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  *) sed -n '2,11p' "$0"; exit 2 ;;
  esac
done
case $TUNE in /*) ;; *) TUNE=$(pwd)/$TUNE ;; esac
export TUNE
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
# The cases are the heredoc of defects.sh, read rather than copied.
sed -n "/^cat >\"\$TMPD\/cases\" <<'EOF'/,/^EOF/p" "$here/tests/integration/defects.sh" | sed '1d;$d' >"$TMPD/cases"
printf '%-30s %-22s %8s %8s  %s\n' fusion defect before after "run.sh (defect / without)"
fails=0
while IFS='|' read -r fusion defect verdict opt val; do
  [ -n "$fusion" ] || continue
  r="$TMPD/$fusion.$defect"
  "$TUNE" --check "$here/datasets/$fusion.hlo" --defect "$defect" "$opt" "$val" --json -o "$r.h5" >"$r.json" 2>"$r.err"
  name=$(sed -n 's/.*"fusion": "\([^"]*\)".*/\1/p' "$r.json" | head -n 1)
  id=$(grep -o '{"id": [0-9]*, "config": "[^"]*", "verdict": "'"$verdict"'"' "$r.json" | head -n 1 | sed 's/{"id": \([0-9]*\).*/\1/')
  if [ -z "$id" ] || [ -z "$name" ]; then
    printf '%-30s %-22s %8s %8s  %s\n' "$fusion" "$defect" - - "no $verdict candidate"; fails=$((fails + 1)); continue
  fi
  if ! "$TUNE" --reproduce "$r.h5" --fusion "$name" --candidate "$id" --minimize -o "$r.dir" >"$r.out" 2>"$r.rerr"; then
    printf '%-30s %-22s %8s %8s  %s\n' "$fusion" "$defect" - - "--minimize failed: $(tail -n 1 "$r.rerr")"; fails=$((fails + 1)); continue
  fi
  line=$(grep '^minimized' "$r.out")
  before=$(echo "$line" | sed -n 's/.*: \([0-9]*\) -> \([0-9]*\) instructions.*/\1/p')
  after=$(echo "$line" | sed -n 's/.*: \([0-9]*\) -> \([0-9]*\) instructions.*/\2/p')
  "$r.dir/run.sh" >/dev/null 2>&1; with=$?
  DEFECTS= "$r.dir/run.sh" >/dev/null 2>&1; without=$?
  printf '%-30s %-22s %8s %8s  %s / %s\n' "$fusion" "$defect" "${before:--}" "${after:--}" "$with" "$without"
  if [ -z "$after" ] || [ "$after" -gt "$before" ] || [ "$with" != 1 ] || [ "$without" != 0 ]; then fails=$((fails + 1)); fi
done <"$TMPD/cases"
echo "cases not shrunk or not reproduced: $fails"
[ "$fails" -eq 0 ]
