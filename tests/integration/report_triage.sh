#!/bin/sh
# report_triage.sh — reports a compiler engineer can act on (issue 18 item
# 1): the HTML shows the fusion's HLO with its outputs marked, groups the
# divergent candidates by the knob values that separate them from the
# matching ones (with one representative, its diff against the default
# and copyable commands), and has no scroll box that clips tables; the
# Markdown has the same grouping.  elide-convert fires exactly on configs
# with flags=fuse-converts (tune --list-defects), so every divergent
# candidate has that flag and no matching one does.
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
finish
