# lib.sh — sourced by the shell tests: tiny assertion helpers that count and
# report, so a test script cannot pass without checking something.
: "${TUNE:?TUNE must name the tune binary (set by make check)}"
: "${TUNE_SRCDIR:?}"
tn_pass=0
tn_fail=0
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/tune-test.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT

ok() { tn_pass=$((tn_pass + 1)); echo "ok - $1"; }
not_ok() { tn_fail=$((tn_fail + 1)); echo "not ok - $1"; }

# expect_status WANT DESC CMD... : runs CMD, checks its exit status.
expect_status() {
  want=$1; desc=$2; shift 2
  "$@" >"$TMPD/out" 2>"$TMPD/err"
  got=$?
  if [ "$got" -eq "$want" ]; then ok "$desc"; else
    not_ok "$desc (exit $got, wanted $want)"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi
}

# expect_grep PATTERN FILE DESC
expect_grep() {
  if grep -q -e "$1" "$2"; then ok "$3"; else not_ok "$3 (no '$1' in output)"; sed 's/^/  # /' "$2" | head -n 5; fi
}

# ---- results files (shared by the sweep tests) ----
# findings FILE [RUN]: one line per candidate, "fusion|config|verdict", sorted.
findings() {
  "$TUNE" --report "$1" ${2:+--run "$2"} --format json | awk '
    /^      "name": "/ { f = $0; sub(/^[^:]*: "/, "", f); sub(/".*/, "", f) }
    /"config": "/ { c = $0; sub(/^[^:]*: "/, "", c); sub(/".*/, "", c) }
    /"verdict": "/ { v = $0; sub(/^[^:]*: "/, "", v); sub(/".*/, "", v); print f "|" c "|" v }' | sort
}
# groups FILE RUN: the number of fusion groups of a run.
groups() { h5ls "$1/runs/$2/fusions" 2>/dev/null | grep -c Group; }

finish() {
  echo "$tn_pass passed, $tn_fail failed"
  [ "$tn_fail" -eq 0 ] && [ "$tn_pass" -gt 0 ]
}
