#!/bin/sh
# report_chromium.sh — the HTML report as a browser shows it (issue 18):
# rendered by headless Chromium, the page holds the fusion's HLO, the knob
# groups, the reproducer commands and the values around the peak, no
# element cuts off its own content (a scroll box or overflow:hidden that
# clips a table), and one screenshot as tall as the page holds all of it.
# Skipped (77) when Chromium is not installed.
#
# The page has no script; the clipping check runs on a copy with one
# appended, which walks every element and records in the DOM what it
# found, so that --dump-dom can report it.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
  echo "# no chromium: skipped"
  exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "# no python3: skipped"; exit 77; }
cd "$TMPD" || exit 1
"$TUNE" --check "$TUNE_SRCDIR/datasets/qat_residual_f16.hlo" --defect elide-convert --budget 32 -q -o r.h5 \
  >/dev/null 2>&1
expect_status 0 "--report --format html" "$TUNE" --report r.h5 --format html -o r.html

browse() {
  timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$TMPD/profile" "$@" 2>/dev/null
}

# measured.html: the page plus a script that records the document's size
# and every element whose overflow is not visible and whose content is
# larger than its box.
measure() {
  python3 - "$1" "$2" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
js = """<script>
(function () {
  var cut = [], all = document.querySelectorAll("body *");
  for (var i = 0; i < all.length; i++) {
    var e = all[i], cs = getComputedStyle(e);
    if ((cs.overflowY != "visible" && e.scrollHeight > e.clientHeight + 1) ||
        (cs.overflowX != "visible" && e.scrollWidth > e.clientWidth + 1))
      cut.push(e.tagName.toLowerCase() + "." + e.className);
  }
  var d = document.documentElement;
  d.setAttribute("data-height", d.scrollHeight);
  d.setAttribute("data-clipped", cut.length ? cut.join(" ") : "none");
})();
</script>"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", js + "</body>"))
PY
}

measure r.html m.html
browse --window-size=1400,1000 --dump-dom "file://$TMPD/m.html" >dom.html
expect_grep '<pre class="hlo">.*HloModule' dom.html "rendered: the fusion's HLO"
expect_grep '<span class="root">.*ROOT' dom.html "rendered: the output line marked"
expect_grep 'divergent candidates have <code>flags=fuse-converts</code>' dom.html "rendered: the knob group"
expect_grep '<pre class="cmd">tune --check .*--only' dom.html "rendered: the --check reproducer"
expect_grep '^tune --reproduce .*--candidate' dom.html "rendered: the --reproduce command"
expect_grep 'expected &#8594; actual around the peak\|expected → actual around the peak' dom.html \
  "rendered: the values around the peak"
expect_grep 'data-clipped="none"' dom.html "rendered: no element clips its content"
height=$(sed -n 's/.*data-height="\([0-9]*\)".*/\1/p' dom.html | head -n 1)
echo "# page height: ${height:-?} px at 1400 px wide"

# The check sees clipping when there is some: the same page with its
# cards limited to 300 px and overflow hidden.
sed 's|</style>|.card{max-height:300px;overflow:hidden}</style>|' r.html >cut.html
measure cut.html cutm.html
browse --window-size=1400,1000 --dump-dom "file://$TMPD/cutm.html" >cutdom.html
if grep -q 'data-clipped="none"' cutdom.html || ! grep -q 'data-clipped="[^"]*section' cutdom.html; then
  not_ok "the clipping check misses a card cut to 300 px"; else ok "the clipping check sees a card cut to 300 px"; fi

# One screenshot as tall as the page: the page fits (its height is what
# was measured, so nothing is below the window) and the image has the
# window's size.
if [ -n "$height" ] && [ "$height" -gt 1000 ]; then
  win=$((height + 100))
  browse --window-size=1400,$win --screenshot="$TMPD/shot.png" "file://$TMPD/r.html" >/dev/null
  dims=$(python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", b[16:24]))' \
    shot.png 2>/dev/null)
  if [ "$dims" = "1400x$win" ]; then ok "screenshot of the whole page: $dims"; else
    not_ok "screenshot is '$dims', wanted 1400x$win"; fi
  browse --window-size=1400,$win --dump-dom "file://$TMPD/m.html" >dom2.html
  h2=$(sed -n 's/.*data-height="\([0-9]*\)".*/\1/p' dom2.html | head -n 1)
  if [ -n "$h2" ] && [ "$h2" -le "$win" ]; then ok "the page ($h2 px) fits the screenshot ($win px)"; else
    not_ok "the page (${h2:-?} px) is taller than the screenshot ($win px)"; fi
else
  not_ok "page height '${height}' not measured (or implausibly small)"
fi
finish
