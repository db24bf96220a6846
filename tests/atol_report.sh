#!/bin/sh
# atol_report.sh — how wide the default-vs-reference comparison is, per
# fusion of datasets/.  The figure is the atol --check prints on the
# default's "vs reference" line: the largest per-element absolute
# allowance of that comparison, on the output leaf --check reports (the
# leaf with the most mismatches, then the largest max abs difference;
# chk_compare_values).  Where the allowance is a per-element map (an
# accumulation's bound carried to each output element), the figure is the
# map's largest entry (effective_tol in tuner/run/fusion_run.c).  The rtol printed
# beside it (the output type's last rounding) is not part of the figure.
#
# Two tables:
# - default: the current binary under --tolerance worst-case (Higham's
#   gamma_d, rigorous) against its default criterion, --tolerance
#   noise-floor;
# - with -o OLD_TUNE: the old binary's atol (for issue 13: a build of
#   commit 73a9e2a, the code the issue was filed against) against the
#   current binary's default (noise-floor).  The old code printed the same
#   quantity on the same line ("vs reference: ok (max abs M, tolerance atol
#   A rtol R)": 73a9e2a's tuner/run/fusion_run.c also reports effective_tol of the
#   leaf chk_compare_values returns, and its maps also replace the atol),
#   only without the criterion's name after it; it took no --tolerance.
#   Fusions are matched by file and fusion name: the old code checks a
#   multi-fusion file (conv_net, train_step, transformer_block, newer than
#   73a9e2a) as one fusion named after its entry, so those rows have no old
#   figure and are left out of the medians.
# Fusions with atol 0 under both (outputs compared exactly, or with an
# rtol only: no accumulation feeds them) are counted, not listed.  The table is Markdown; then the medians over the
# listed rows with both figures: of the ratios (first / second column; a
# fusion the second side compares exactly has ratio infinity, and the
# median of the finite ratios is printed too), and of each column.
#
# Usage: tests/atol_report.sh [-t TUNE] [-o OLD_TUNE] [-d DATASETS]
# Defaults: ./tune and the source tree's datasets.  Runs the default
# config only (--budget 1): about two checks per dataset.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TUNE=./tune
OLD=
DS="$here/datasets"
while getopts t:o:d: opt; do
  case $opt in
  t) TUNE=$OPTARG ;;
  o) OLD=$OPTARG ;;
  d) DS=$OPTARG ;;
  *) sed -n '2,36p' "$0"; exit 2 ;;
  esac
done
[ -x "$TUNE" ] || { echo "atol_report.sh: no tune at $TUNE" >&2; exit 2; }
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "atol_report.sh: no old tune at $OLD" >&2; exit 2; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT

# One line per fusion of the file: FILE:FUSION ATOL, the atol of its
# default-vs-reference line (a fusion whose default did not run has none).
atols() { # $1 binary, $2 hlo, then extra options
  bin=$1 hlo=$2
  shift 2
  "$bin" --check "$hlo" --budget 1 --threads 1 "$@" 2>/dev/null |
    awk -v file="$(basename "$hlo" .hlo)" '
      /^fusion / { name = $2; seen = 0; next }
      /vs reference: .*tolerance atol / && !seen {
        sub(/.*tolerance atol /, ""); print file ":" name, $1; seen = 1 }'
}

for f in "$DS"/*.hlo; do
  if [ -n "$OLD" ]; then
    atols "$OLD" "$f" >>"$W/a"
    atols "$TUNE" "$f" >>"$W/b"
  else
    atols "$TUNE" "$f" --tolerance worst-case >>"$W/a"
    atols "$TUNE" "$f" --tolerance noise-floor >>"$W/b"
  fi
done
touch "$W/a" "$W/b"

if [ -n "$OLD" ]; then
  set -- "old atol ($(basename "$OLD"), -o)" "current default atol (noise-floor)"
else
  set -- "worst-case atol" "noise-floor atol"
fi
python3 - "$W/a" "$W/b" "$1" "$2" <<'PY'
import math, statistics, sys
def read(p):
    d = {}
    for line in open(p):
        k, v = line.split()
        d[k] = float(v)
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
ha, hb = sys.argv[3], sys.argv[4]
keys = list(b) + [k for k in a if k not in b]
rows, exact, one_sided = [], 0, []
for k in keys:
    if k not in a or k not in b:
        one_sided.append(k)
        continue
    if a[k] == 0 and b[k] == 0:
        exact += 1
        continue
    rows.append((k, a[k], b[k]))
print("| fusion | %s | %s | ratio |" % (ha, hb))
print("|---|---|---|---|")
ratios = []
for k, x, y in rows:
    if math.isinf(x) or math.isinf(y):
        r = "—"
    elif y == 0:
        ratios.append(math.inf)
        r = "∞ (exact now)"
    else:
        ratios.append(x / y)
        r = "%.3g×" % (x / y)
    print("| `%s` | %.3g | %.3g | %s |" % (k, x, y, r))
fin = [(x, y) for _, x, y in rows if not math.isinf(x) and not math.isinf(y)]
if ratios:
    finite = [r for r in ratios if not math.isinf(r)]
    print("| median | %.3g | %.3g | %.3g× (median of the %d ratios; of the %d finite ones: %s) |" % (
        statistics.median(x for x, _ in fin), statistics.median(y for _, y in fin), statistics.median(ratios),
        len(ratios), len(finite), ("%.3g×" % statistics.median(finite)) if finite else "—"))
print()
print("%d fusions listed, %d with atol 0 under both, %d with a figure on one side only%s" % (
    len(rows), exact, len(one_sided), (": " + " ".join(one_sided)) if one_sided else ""))
PY
