#!/bin/sh
# report.sh — `tune --report` on a results file written by `tune --check`:
# all four formats from one run, json and junit parsed by Python's own
# parsers, the html checked to be self-contained (and rendered by headless
# Chromium when it is installed: the screenshot must not be blank and the
# verdict table must be in the DOM), and the errors that exit 2.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"

if ! "$TUNE" --help 2>&1 | grep -q -- --check; then
  echo "# skip: this tune has no --check"
  exit 77
fi

X="$TMPD/X.h5"
"$TUNE" --check "$ds/softmax.hlo" "$ds/qat_residual_f16.hlo" --defect elide-convert -o "$X" >"$TMPD/check" 2>&1
got=$?
# Finding the defect is --check's job, tested with the device; this test is
# about the reports, so without a finding it checks the reports of a clean
# run and skips the checks of findings (saying so).
diverged=no
if [ "$got" -eq 1 ]; then ok "--check --defect elide-convert finds the divergence (exit 1)"; diverged=yes
elif [ "$got" -eq 0 ]; then echo "# --check --defect elide-convert found nothing (exit 0): skipping the checks of findings"
else not_ok "--check exit $got"; sed 's/^/  # /' "$TMPD/check" | head -n 5; finish; exit; fi

for fmt in html md json junit; do
  expect_status 0 "--report --format $fmt -o" "$TUNE" --report "$X" --format "$fmt" -o "$TMPD/r.$fmt"
  if [ -s "$TMPD/r.$fmt" ]; then ok "r.$fmt written"; else not_ok "r.$fmt is empty or missing"; fi
done
expect_status 0 "--report --format md to stdout" "$TUNE" --report "$X" --format md
if cmp -s "$TMPD/out" "$TMPD/r.md"; then ok "stdout and -o give the same report"; else not_ok "stdout differs from -o"; fi
if ls "$TMPD" | grep -q '\.tmp\.'; then not_ok "a temporary file was left behind"; else ok "no temporary file left"; fi

# md: the finding, ready for a bug tracker.
if [ "$diverged" = yes ]; then
  expect_grep '^### `fused_qat_residual`' "$TMPD/r.md" "md: a section for the divergent fusion"
  expect_grep "tune --check [^ ]*qat_residual_f16.hlo --only 'tile=[^']*flags=[^']*fuse-converts[^']*' --seed 0" \
    "$TMPD/r.md" "md: the --check reproducer with the config text"
  expect_grep "--compiler [a-z]* --defect elide-convert" "$TMPD/r.md" "md: the reproducer names the defect"
  expect_grep "tune --reproduce [^ ]*X.h5 --fusion fused_qat_residual --candidate [0-9]* -o repro-" "$TMPD/r.md" \
    "md: the --reproduce command"
  expect_grep '^- \*\*Tolerance:\*\* atol = ' "$TMPD/r.md" "md: the tolerance"
  expect_grep '^| mismatches | [1-9][0-9]* of [0-9]*' "$TMPD/r.md" "md: the mismatch count"
fi
expect_grep '^- `fused_softmax` (`[^`]*softmax.hlo`): [0-9]* candidates, no divergence' "$TMPD/r.md" \
  "md: one line for the clean fusion"

# json and junit: parsed by Python when there is one.
if [ "$diverged" = yes ]; then
  expect_grep '"verdict": "mismatch-candidate"' "$TMPD/r.json" "json: a mismatch-candidate row"
  expect_grep '<failure message="verdict: mismatch-' "$TMPD/r.junit" "junit: a failure"
fi
expect_grep '<testsuite name="fused_softmax" tests="[0-9]*" failures="0"' "$TMPD/r.junit" "junit: the clean suite"
if [ -n "$PYTHON3" ] && "$PYTHON3" -c 'import json, xml.dom.minidom' 2>/dev/null; then
  expect_status 0 "json: python3 -m json.tool parses it" "$PYTHON3" -m json.tool "$TMPD/r.json"
  expect_status 0 "junit: xml.dom.minidom parses it" "$PYTHON3" -c \
    'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$TMPD/r.junit"
  "$PYTHON3" - "$TMPD/r.junit" "$TMPD/r.json" "$diverged" >"$TMPD/py" 2>&1 <<'EOF'
import json, sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
suites = doc.getElementsByTagName("testsuite")
for s in suites:
    cases = s.getElementsByTagName("testcase")
    fails = sum(1 for c in cases if c.getElementsByTagName("failure"))
    skips = sum(1 for c in cases if c.getElementsByTagName("skipped"))
    assert int(s.getAttribute("tests")) == len(cases), s.getAttribute("name")
    assert int(s.getAttribute("failures")) == fails, s.getAttribute("name")
    assert int(s.getAttribute("skipped")) == skips, s.getAttribute("name")
assert (sum(int(s.getAttribute("failures")) for s in suites) > 0) == (sys.argv[3] == "yes")
r = json.load(open(sys.argv[2]))
assert r["schema_version"] == 2 and len(r["fusions"]) == 2
for fu in r["fusions"]:
    assert fu["ncandidates"] == len(fu["candidates"])
    assert fu["ndivergent"] == sum(1 for c in fu["candidates"] if c["divergent"])
    for c in fu["candidates"]:
        assert set(c["vs_default"]) >= {"mismatches", "max_abs", "max_rel", "max_ulp", "rms", "peak", "hist"}
print("consistent")
EOF
  expect_grep '^consistent$' "$TMPD/py" "junit counts and json rows are consistent"
else
  echo "# no python3 with json and xml.dom: skipping the parsers"
fi

# html: self-contained — no URL outside an xmlns attribute, no script, no
# external style sheet, font or image.
H="$TMPD/r.html"
expect_grep '<svg' "$H" "html: inline SVG"
expect_grep 'class="grid verdicts"' "$H" "html: the verdict table"
[ "$diverged" = yes ] && expect_grep 'aria-label="error heatmap"' "$H" "html: an error heatmap"
if sed 's/xmlns[:a-z]*="[^"]*"//g' "$H" | grep -q -i -e 'https\?://' -e '<script' -e '<link' -e '@import' -e 'url(["'\'']*[a-z]*:'; then
  not_ok "html: refers to something outside the file"
else
  ok "html: self-contained"
fi

# Headless Chromium, when installed: a screenshot that is not blank, and the
# verdict table in the rendered DOM.
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$CHROME" ]; then
  prof=$(mktemp -d "$TMPD/chrome.XXXXXX")
  set -- --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$prof"
  timeout 120 "$CHROME" "$@" --screenshot="$TMPD/shot.png" --window-size=1400,2000 "file://$H" >/dev/null 2>&1
  size=$(wc -c <"$TMPD/shot.png" 2>/dev/null || echo 0)
  # A blank 1400x2000 PNG compresses to a few KB; this page is far busier.
  if [ "$size" -gt 40000 ]; then ok "chromium: screenshot is not blank ($size bytes)"; else
    not_ok "chromium: screenshot missing or blank ($size bytes)"; fi
  timeout 120 "$CHROME" "$@" --dump-dom "file://$H" >"$TMPD/dom" 2>/dev/null
  expect_grep '<table class="grid verdicts">' "$TMPD/dom" "chromium: the verdict table is in the DOM"
else
  echo "# chromium not installed: skipping the rendering check"
fi

# Errors exit 2 with a message.
expect_status 2 "unknown format" "$TUNE" --report "$X" --format pdf
expect_grep "unknown format 'pdf'" "$TMPD/err" "unknown format: says so"
expect_status 2 "no --format" "$TUNE" --report "$X"
expect_status 2 "unknown run" "$TUNE" --report "$X" --run no-such-run --format md
expect_grep "no run 'no-such-run'" "$TMPD/err" "unknown run: names it"
expect_status 2 "missing file" "$TUNE" --report "$TMPD/absent.h5" --format md
expect_grep "absent.h5" "$TMPD/err" "missing file: names it"
printf 'not hdf5\n' >"$TMPD/text.h5"
expect_status 2 "not an HDF5 file" "$TUNE" --report "$TMPD/text.h5" --format json
run=$(h5ls "$X/runs" 2>/dev/null | awk '{ print $1; exit }')
if [ -n "$run" ]; then
  expect_status 0 "--run names the run" "$TUNE" --report "$X" --run "$run" --format junit
fi

finish
