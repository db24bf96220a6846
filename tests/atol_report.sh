#!/bin/sh
# atol_report.sh — how much the default criterion (--tolerance
# noise-floor) tightens the comparison against the rigorous per-element
# worst case (--tolerance worst-case, Higham's gamma_d), per dataset: the
# atol of the default-vs-reference check (the largest per-element
# allowance over the outputs, as --check prints it), under each criterion.
# Datasets whose outputs are all compared exactly (atol 0 under both) are
# counted, not listed.  Prints a Markdown table, then the medians over the
# listed datasets: of the ratios, and of each column.
#
# Usage: tests/atol_report.sh [-t TUNE] [-d DATASETS]
# Defaults: ./tune and the source tree's datasets.  Runs the default
# config only (--budget 1): about two checks per dataset.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
DS="$here/datasets"
while getopts t:d: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  d) DS=$OPTARG ;;
  *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
done
[ -x "$TUNE" ] || { echo "atol_report.sh: no tune at $TUNE" >&2; exit 2; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

atol() { # $1 hlo, $2 criterion: the atol of the default-vs-reference line, or -
  "$TUNE" --check "$1" --budget 1 --threads 1 --tolerance "$2" 2>/dev/null |
    sed -n 's/.*vs reference: .*tolerance atol \([^ ]*\) rtol.*/\1/p' | head -n 1 | grep . || echo -
}

for f in "$DS"/*.hlo; do
  printf '%s %s %s\n' "$(basename "$f" .hlo)" "$(atol "$f" worst-case)" "$(atol "$f" noise-floor)"
done >"$W/rows"

python3 - "$W/rows" <<'PY'
import math, statistics, sys
rows, exact, other = [], 0, []
for line in open(sys.argv[1]):
    name, wc, nf = line.split()
    if wc == "-" or nf == "-":
        other.append(name)
        continue
    wc, nf = float(wc), float(nf)
    if wc == 0 and nf == 0:
        exact += 1
        continue
    rows.append((name, wc, nf))
print("| dataset | worst-case atol | noise-floor atol | ratio |")
print("|---|---|---|---|")
ratios = []
for name, wc, nf in rows:
    if math.isinf(wc) or math.isinf(nf) or nf == 0:
        r = "—"
    else:
        ratios.append(wc / nf)
        r = "%.3g×" % (wc / nf)
    print("| `%s` | %.3g | %.3g | %s |" % (name, wc, nf, r))
fin = [(w, n) for _, w, n in rows if not math.isinf(w) and not math.isinf(n)]
if ratios:
    print("| median | %.3g | %.3g | %.3g× (median of the ratios) |" % (
        statistics.median(w for w, _ in fin), statistics.median(n for _, n in fin), statistics.median(ratios)))
print()
print("%d datasets listed, %d compared exactly under both, %d without a default-vs-reference atol%s" % (
    len(rows), exact, len(other), (": " + " ".join(other)) if other else ""))
PY
