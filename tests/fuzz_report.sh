#!/bin/sh
# fuzz_report.sh — the checker's false-positive rate on generated fusions,
# and how fast `tune --fuzz` finds each catalog defect (issue 19 item 3).
#
#   tests/fuzz_report.sh [TUNE] [CLEAN_COUNT] [DEFECT_COUNT] [SEED]
#                        (defaults: ./tune, 5000, 2000, 1)
#
# 1. `tune --fuzz --count CLEAN_COUNT --compiler stable`: fusions generated,
#    candidates checked and findings, which must be 0 (each is a false
#    alarm of the checker, or a generator bug, to fix).
# 2. Per defect of --list-defects, alone: `tune --fuzz --defect D
#    --stop-on-mismatch --count DEFECT_COUNT`: the fusions and seconds to
#    the first finding and its kernel size before and after minimizing,
#    or "not found".
# Extra options for every run (e.g. --threads 2) can be given in
# FUZZ_OPTS.  Exit status 1 when the clean run has findings or a defect
# is not found.
tune=${1:-./tune}
clean=${2:-5000}
per=${3:-2000}
seed=${4:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# shellcheck disable=SC2086
"$tune" --fuzz --count "$clean" --seed "$seed" --compiler stable --quiet $FUZZ_OPTS >"$tmp/clean" 2>&1
rc=$?
echo "clean (--compiler stable, --count $clean, --seed $seed), exit $rc:"
grep '^fuzz:\|^finding\|^first invalid' "$tmp/clean" | sed 's/^/  /'
[ "$rc" -eq 0 ] || status=1

echo
echo "per defect (--defect D --stop-on-mismatch --count $per --seed $seed):"
printf '  %-22s %8s %9s %s\n' defect fusions seconds "kernel instructions (minimized)"
for d in $("$tune" --list-defects | awk '{print $1}'); do
  # shellcheck disable=SC2086
  "$tune" --fuzz --count "$per" --seed "$seed" --defect "$d" --stop-on-mismatch --quiet $FUZZ_OPTS \
    >"$tmp/$d" 2>&1
  line=$(grep '^first finding:' "$tmp/$d")
  if [ -n "$line" ]; then
    n=$(echo "$line" | sed 's/.*after \([0-9]*\) fusions.*/\1/')
    s=$(echo "$line" | sed 's/.* and \([0-9.]*\) s,.*/\1/')
    k=$(echo "$line" | sed 's/.*minimized from \([0-9]*\) to \([0-9]*\) .*/\1 -> \2/')
    printf '  %-22s %8s %9s %s\n' "$d" "$n" "$s" "$k"
  else
    printf '  %-22s %8s %9s %s\n' "$d" "-" "-" "not found in $per"
    status=1
  fi
done
exit $status
