#!/bin/sh
# sweep_report.sh — issue 7's "done when" over the whole of datasets/,
# rerunnable by anyone: the daily sweep (configs/daily.cfg's settings:
# tpu-v5e, constrained inputs, seed 0, 64 candidates per fusion) with the
# nightly compiler profile and with stable, each compared with the hand-made
# datasets/EXPECTED-nightly by tests/integration/findings.sh.  Prints, per
# compiler, the wall time, the candidates checked, the findings per fusion
# and every disagreement with the expectation; exit status 1 when there is
# one.  tests/integration/sweep_datasets.sh runs the same check on a cheap
# part of datasets/ in `make check`.
#
# Usage: tests/sweep_report.sh [-t TUNE] [-d DATASETS] [-b BUDGET] [-j THREADS]
#          [-c "COMPILERS"] [-k DIR]
# Defaults: ./tune, the source tree's datasets, budget 64 (EXPECTED-nightly
# is written for it), 2 threads, "nightly stable"; -k keeps the results
# files and logs in DIR (else a temporary folder).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
DS="$here/datasets"
BUDGET=64
THREADS=2
COMPILERS="nightly stable"
KEEP=
while getopts t:d:b:j:c:k: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  d) DS=$OPTARG ;;
  b) BUDGET=$OPTARG ;;
  j) THREADS=$OPTARG ;;
  c) COMPILERS=$OPTARG ;;
  k) KEEP=$OPTARG ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
case $TUNE in /*) ;; *) TUNE=$(pwd)/$TUNE ;; esac
. "$here/tests/integration/findings.sh"
if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && W=$(cd "$KEEP" && pwd); else
  W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; fi
[ "$BUDGET" = 64 ] || echo "note: EXPECTED-nightly is written for budget 64; with $BUDGET it may not hold"

failed=0
for c in $COMPILERS; do
  rm -f "$W/$c.h5"
  cat >"$W/$c.cfg" <<EOF
sweep: {
  corpus = [ "$DS/*.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "$here/configs/compilers/$c.cfg";
  inputs = "constrained";
  budget = $BUDGET;
  threads = $THREADS;
  seed = 0;
  output = "$W/$c.h5";
};
EOF
  t0=$(date +%s.%N)
  "$TUNE" --sweep "$W/$c.cfg" >"$W/$c.out" 2>"$W/$c.err"
  st=$?
  t1=$(date +%s.%N)
  tn_findings "$TUNE" "$W/$c.h5" >"$W/$c.findings"
  ncand=$("$TUNE" --report "$W/$c.h5" --format json | awk '/^      "ncandidates": / { gsub(/[^0-9]/, ""); n += $0 } END { print n + 0 }')
  nfus=$(grep -c '	-	-$' "$W/$c.findings")
  echo "== $c: exit $st, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s wall, $nfus fusions, $ncand candidates (budget $BUDGET, $THREADS threads)"
  grep -h ': error: \|locked\|cannot' "$W/$c.err" | sed 's/^/   log: /'
  echo "   slowest: $(sed -n 's#.*/\([^/]*\)\.hlo: .*, \([0-9.]*\) s$#\2 \1#p' "$W/$c.err" | sort -rn | head -n 5 |
    awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
  mode=nightly
  [ "$c" = nightly ] || mode=stable
  if ! tn_check_expected "$DS/EXPECTED-nightly" "$W/$c.findings" "$mode"; then failed=1; fi
done
exit $failed
