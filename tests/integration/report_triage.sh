#!/bin/sh
# report_triage.sh — reports a compiler engineer can act on (issue 18 item
# 1): the HTML shows the fusion's HLO with its outputs marked, groups the
# divergent candidates by the knob values that separate them from the
# matching ones (with one representative, its diff against the default
# and copyable commands), and has no scroll box that clips tables; the
# Markdown has the same grouping.  elide-convert fires exactly on configs
# with flags=fuse-converts (tune --list-defects), so every divergent
# candidate has that flag and no matching one does.  The copyable commands
# are run as printed, and the hero op is marked in the HLO.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
cd "$TMPD" || exit 1
"$TUNE" --check "$ds/qat_residual_f16.hlo" --defect elide-convert --budget 32 --json -o r.h5 >c.json 2>c.err
nd=$(grep -o '"mismatch-candidate": [0-9]*' c.json | sed 's/.*: //')
if [ -n "$nd" ] && [ "$nd" -gt 1 ]; then ok "$nd divergent candidates"; else not_ok "divergent count '$nd'"; fi
expect_status 0 "--report --format md" "$TUNE" --report r.h5 --format md -o r.md
expect_grep "^- \*\*$nd\*\* divergent candidates have \`flags=fuse-converts\`; no matching candidate does" r.md \
  "Markdown: all $nd grouped under flags=fuse-converts"
# --budget chooses a pairwise cover (README), not a prefix, so the
# representative may differ from the default in other knobs too; its diff
# names only knobs that differ, the one that matters among them.
expect_grep "which differs from the default in \`[^\`]*flags=fuse-converts\`" r.md "Markdown: the representative's diff names the knob"
if grep -q "which differs from the default in \`[^\`]*prec=default" r.md; then
  not_ok "Markdown: the diff names a knob equal to the default's (prec=default)"; else
  ok "Markdown: the diff leaves out knobs equal to the default's"; fi
expect_status 0 "--report --format html" "$TUNE" --report r.h5 --format html -o r.html
expect_grep '<pre class="hlo">' r.html "HTML: the fusion's HLO is shown"
expect_grep '<span class="root">.*ROOT .*subtract' r.html "HTML: the output (ROOT) line is marked"
expect_grep "<b>$nd</b> divergent candidates have <code>flags=fuse-converts</code>; no matching candidate does" r.html \
  "HTML: the knob group with its count"
expect_grep 'differs from the default in <code>[^<]*flags=fuse-converts</code>' r.html "HTML: the config diff against the default"
expect_grep '<pre class="cmd">tune --check .*--only' r.html "HTML: a copyable --check command"
expect_grep '^tune --reproduce .*--candidate' r.html "HTML: a copyable --reproduce command"
if grep -q 'max-height' r.html; then not_ok "HTML: a scroll box clips a table"; else ok "HTML: no height-limited scroll box"; fi
maps=$(grep -c '<figure' r.html)
echo "# $maps figures"
if [ "$(grep -c 'Error maps, one per group' r.html)" -le 1 ]; then ok "HTML: error maps only of representatives"; else not_ok "error map sections"; fi
# Rendered in headless Chromium when it is installed.
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    timeout 120 "$b" --headless --no-sandbox --disable-gpu --dump-dom "file://$TMPD/r.html" >dom.html 2>/dev/null
    expect_grep 'Knob attribution' dom.html "Chromium renders the knob groups"
    expect_grep 'class="hlo"' dom.html "Chromium renders the HLO"
    break
  fi
done
command -v chromium >/dev/null 2>&1 || echo "# note: no chromium: the page is not rendered"

# The hero is marked in the HLO too: softmax's two reductions (its hero
# kind is reduce), and no other line.
"$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o sm.h5 >/dev/null 2>&1
expect_status 0 "--report html of softmax" "$TUNE" --report sm.h5 --format html -o sm.html
n=$(grep -c '^<span class="hero">.* = f32\[128\]{0} reduce(' sm.html)
all=$(grep -c '<span class="hero">' sm.html)
if [ "$n" -eq 2 ] && [ "$all" -eq 2 ]; then ok "HTML: the hero's two reduce lines are marked, nothing else"
else not_ok "HTML: $n reduce lines marked as hero, $all hero marks in all"; fi

# ---- the copyable commands run as they are -------------------------------------
# run_cmd FILE PATTERN: runs the first line of FILE that matches PATTERN
# (a "tune ..." command of the report), with $TUNE as tune.
run_cmd() {
  line=$(grep -m 1 -e "$2" "$1" | sed 's/^ *//; s/^tune //')
  [ -n "$line" ] || return 3
  eval "\"\$TUNE\" $line"
}
# Input profile: a finding checked on naive inputs is reproduced on them.
pcfg='tile=256x256 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts'
"$TUNE" --check "$ds/qat_residual_f16.hlo" --profile naive --defect elide-convert --only "$pcfg" -o p.h5 >p.out 2>&1
expect_status 0 "--report md of a --profile naive finding" "$TUNE" --report p.h5 --format md -o p.md
expect_grep '^  tune --check .* --profile naive' p.md "its --check command names --profile naive"
run_cmd p.md '^  tune --check' >p2.out 2>&1
if [ -n "$(grep 'elements differ' p.out)" ] && [ "$(grep 'elements differ' p2.out)" = "$(grep 'elements differ' p.out)" ]; then
  ok "the command reproduces the finding's figures: $(grep 'elements differ' p.out | sed 's/^ *//')"
else not_ok "the command gives '$(grep 'elements differ' p2.out)', the check '$(grep 'elements differ' p.out)'"; fi
if grep -q 'tune --isolate' r.md r.html; then not_ok "a file of one kernel gets an --isolate command (it refuses one)"
else ok "a file of one kernel gets no --isolate command"; fi
# A unit of a larger module: unit r, fed by unit scaled (3 * x).
cat >two.hlo <<'HLO'
HloModule two_units

fused_scale {
  p0 = f32[64,256]{1,0} parameter(0)
  c = f32[] constant(3)
  b = f32[64,256]{1,0} broadcast(c), dimensions={}
  ROOT m = f32[64,256]{1,0} multiply(p0, b)
}

fused_qat {
  q0 = f32[64,256]{1,0} parameter(0)
  h = f16[64,256]{1,0} convert(q0)
  f = f32[64,256]{1,0} convert(h)
  ROOT s = f32[64,256]{1,0} subtract(q0, f)
}

ENTRY main {
  x = f32[64,256]{1,0} parameter(0)
  scaled = f32[64,256]{1,0} fusion(x), kind=kLoop, calls=fused_scale
  ROOT r = f32[64,256]{1,0} fusion(scaled), kind=kLoop, calls=fused_qat
}
HLO
expect_status 1 "--check of a two-unit module diverges in unit r" \
  "$TUNE" --check two.hlo --defect elide-convert --budget 16 -q -o u.h5
expect_status 0 "--report md" "$TUNE" --report u.h5 --format md -o u.md
expect_grep "^  tune --check two.hlo --only '[^']*' .* --fusion r\$" u.md "the unit's --check command selects it (--fusion r)"
expect_status 1 "and diverges when run" run_cmd u.md '^  tune --check'
expect_grep "^  tune --isolate two.hlo --config 'r=[^']*flags=fuse-converts' --seed 0 .*--defect elide-convert\$" u.md \
  "Markdown: an --isolate command with the unit's config"
expect_status 1 "the --isolate command runs the module and finds the culprit (exit 1)" run_cmd u.md '^  tune --isolate'
expect_grep '^  r: fusion-bug' "$TMPD/out" "unit r is the culprit, a fusion-bug"
expect_grep '^  scaled: ok' "$TMPD/out" "unit scaled is ok"
expect_status 0 "--report html" "$TUNE" --report u.h5 --format html -o u.html
expect_grep "^tune --isolate two.hlo --config &#39;r=[^&]*flags=fuse-converts&#39;" u.html \
  "HTML: the --isolate command among the copyable ones"
finish
