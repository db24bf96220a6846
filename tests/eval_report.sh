#!/bin/sh
# eval_report.sh — issue 17's measurement, rerunnable by anyone:
# `tune --eval FILE -o OUT.h5` on every module of a folder, one line per
# module, then the refusals grouped by reason and a closing summary.  A
# module is "evaluated" (exit 0), "refused" (exit 2: the evaluator or the
# front end said no, the line quotes why), "timed out" (the limit below)
# or "crashed" (any other exit status, or a sanitizer's report).  Not part
# of `make check`: 200 real modules take a while.
#
# Usage: tests/eval_report.sh [-t TUNE] [-s SECONDS] [DIR | FILE.hlo...]
# Defaults: ./tune, 60 s per module, $TUNE_CORPUS or else
# ../shared/corpus/xla-hlo next to the source tree; FILEs instead of a
# folder rerun just those modules.  Exit status 77 (skipped) when the folder
# is absent, 1 when a module crashed, else 0.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
SECS=60
while getopts t:s: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  s) SECS=$OPTARG ;;
  *) echo "usage: $0 [-t TUNE] [-s SECONDS] [DIR | FILE.hlo...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ] && [ -f "$1" ]; then
  set -- "$@"
else
  DIR=${1:-${TUNE_CORPUS:-$here/../shared/corpus/xla-hlo}}
  if [ ! -d "$DIR" ]; then echo "eval_report.sh: no folder $DIR, skipped" >&2; exit 77; fi
  set -- "$DIR"/*.hlo
fi
if [ ! -x "$TUNE" ]; then echo "eval_report.sh: no tune binary $TUNE (-t)" >&2; exit 2; fi
W=$(mktemp -d "${TMPDIR:-/tmp}/eval-report.XXXXXX")
trap 'rm -rf "$W"' EXIT

: >"$W/modules" # module<TAB>outcome<TAB>message
for f in "$@"; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .hlo)
  rm -f "$W/out.h5"
  timeout -k 5 "$SECS" "$TUNE" --eval "$f" -o "$W/out.h5" >/dev/null 2>"$W/err"
  rc=$?
  if grep -q -e '^==[0-9]*==ERROR: ' -e ': runtime error: ' "$W/err"; then rc=sanitizer; fi
  # The first line of an error names the place; keep what follows "error: ".
  msg=$(grep -m 1 'error: ' "$W/err" | sed -e 's/^.*error: //' | cut -c1-160)
  [ -n "$msg" ] || msg=$(grep -v '^$' "$W/err" | head -n 1 | cut -c1-160)
  case $rc in
  0) outcome=evaluated msg= ;;
  2) outcome=refused ;;
  124 | 137 | 143) outcome="timed out" msg="after $SECS s" ;;
  *) outcome=crashed msg="exit $rc: $msg" ;;
  esac
  printf '%s\t%s\t%s\n' "$name" "$outcome" "$msg" >>"$W/modules"
  printf '%s %s%s\n' "$name" "$outcome" "${msg:+: $msg}"
done

echo
echo "refusals by reason:"
# Group by the op the message names ("op 'infeed' is not supported",
# "custom-call target 'Qr' ..."), else by the message without its
# leading "INSTRUCTION: ".
awk -F'\t' '$2 == "refused" {
    r = $3
    if (match(r, /op .[a-z0-9_-]+. is not supported[^,;(]*/)) r = substr(r, RSTART, RLENGTH)
    else if (match(r, /custom-call target .[^ ]+./)) r = substr(r, RSTART, RLENGTH)
    else sub(/^[^ ]*: /, "", r)
    n[r]++ }
  END { for (k in n) printf "  %4d  %s\n", n[k], k }' "$W/modules" | sort -rn
awk -F'\t' '{ mods++; s[$2]++ }
  END {
    printf "SUMMARY modules %d: evaluated %d, refused %d (%.1f%%), timed out %d, crashed %d\n",
      mods, s["evaluated"], s["refused"], mods ? 100.0 * s["refused"] / mods : 0, s["timed out"], s["crashed"]
    exit (s["crashed"] > 0)
  }' "$W/modules"
