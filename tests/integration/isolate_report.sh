#!/bin/sh
# isolate_report.sh — `tune --report` of an isolation run (issue 16 item 4):
# the Markdown paragraph and reproducers, and the HTML page as headless
# Chromium renders it (skipped, 77, without Chromium for that part).
#
# The case is isolate_store.sh's: train_step.hlo with elide-convert and
# qat_residual given flags=fuse-converts.  From the defect's trigger
# (x - f32(f16(x)) evaluates to 0) and the fused computation
# (p0 -> h = f16 convert -> back = f32 convert -> res = p0 - back), by hand:
# qat_residual is the one culprit, a fusion-bug with max relative error
# exactly 1, its unfused run agrees with the reference, the first
# diverging instruction is back (a convert) and its operand h is right.
# The reproducers name the module, the unit, its config, seed 0 and the
# defect; the --check one, run, finds the divergence again (exit 1).
# --reproduce of the isolation run bundles the culprit alone.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/train_step.hlo" ]; then echo "skip: no multi-fusion datasets"; exit 77; fi
cd "$TMPD" || exit 1
cp "$ds/train_step.hlo" .
"$TUNE" --isolate train_step.hlo --defect elide-convert --config 'qat_residual=flags=fuse-converts' -o r.h5 \
  >iso.out 2>&1

expect_status 0 "--report --format md" "$TUNE" --report r.h5 --format md
cp "$TMPD/out" r.md
expect_grep '^## Isolation of `train_step.hlo`$' r.md "md: the module is named"
expect_grep '^\*\*12 units isolated: 1 culprit\.\*\*$' r.md "md: 12 units, 1 culprit"
expect_grep '^### 1\. `qat_residual`: fusion-bug$' r.md "md: the culprit and its class"
expect_grep '^Fusion `qat_residual` of `train_step.hlo` is a fusion-bug: with config `[^`]*flags=fuse-converts`, its output differs from the reference by a max relative error of 1 (' \
  r.md "md: the paragraph names fusion, class, config and max rel 1"
expect_grep 'while its unfused run (one kernel per instruction) agrees with the reference\.' r.md \
  "md: the unfused run agrees with the reference"
expect_grep 'the first diverging instruction is `back` (convert): ' r.md "md: the first diverging instruction"
expect_grep 'its operands are right\.$' r.md "md: its operand h is right"
expect_grep "^tune --isolate train_step.hlo --config 'qat_residual=[^']*flags=fuse-converts' --seed 0 .*--defect elide-convert\$" \
  r.md "md: the --isolate reproducer"
expect_grep "^tune --check train_step.hlo --fusion qat_residual --only '[^']*flags=fuse-converts' --seed 0 .*--defect elide-convert\$" \
  r.md "md: the --check reproducer"
cmd=$(grep '^tune --check ' r.md | head -n 1 | sed "s|^tune |\"\$TUNE\" |")
eval "$cmd" >repro.out 2>&1
st=$?
if [ "$st" -eq 1 ]; then ok "md: the --check reproducer finds the divergence (exit 1)"; else
  not_ok "md: the --check reproducer exits $st, wanted 1"; tail -n 3 repro.out | sed 's/^/  # /'; fi

# --reproduce of the isolation run bundles the culprit alone in one step:
# the unit module of qat_residual (one fusion), the operands the isolation
# stored for it, and its config; run.sh checks that config on them and
# finds the divergence again (exit 1), and without the defect it is gone
# (exit 0: the clean lowering of fuse-converts keeps the residual).
expect_status 0 "--reproduce of the isolation run" "$TUNE" --reproduce r.h5 --fusion qat_residual -o bundle
expect_grep "qat_residual alone, fusion-bug of the isolation of train_step.hlo" out "--reproduce names the culprit"
n=$(grep -c ' fusion(' bundle/fusion.hlo)
if [ "$n" = 1 ]; then ok "the bundle holds the culprit fusion alone"; else not_ok "the bundle holds $n fusions"; fi
expect_grep 'flags=fuse-converts$' bundle/config.txt "the bundle has the culprit's config"
expect_grep '^Reproducer: fusion qat_residual alone, a fusion-bug of an isolation$' bundle/README \
  "the bundle's README says what it is"
(cd bundle && PATH="$(dirname "$TUNE"):$PATH" sh run.sh >run.out 2>&1)
st=$?
if [ "$st" -eq 1 ]; then ok "the bundle's run.sh reproduces the divergence (exit 1)"; else
  not_ok "run.sh exits $st, wanted 1"; tail -n 3 bundle/run.out | sed 's/^/  # /'; fi
expect_grep '^  - mismatch-candidate .*flags=fuse-converts$' bundle/run.out "run.sh: the culprit's config diverges"
expect_grep 'output 0: [0-9]* of 128000 elements differ; max abs [^,]*, max rel 1, ' bundle/run.out \
  "run.sh: max relative error 1 again (the residual is lost)"
(cd bundle && PATH="$(dirname "$TUNE"):$PATH" DEFECTS= sh run.sh >clean.out 2>&1)
st=$?
if [ "$st" -eq 0 ]; then ok "without the defect run.sh exits 0"; else not_ok "DEFECTS= run.sh exits $st, wanted 0"; fi
# Without --fusion: the worst culprit (the only one here).
expect_status 0 "--reproduce of the isolation run, worst culprit" "$TUNE" --reproduce r.h5 -o bundle2
if cmp -s bundle/fusion.hlo bundle2/fusion.hlo && cmp -s bundle/config.txt bundle2/config.txt; then
  ok "the worst culprit is qat_residual"; else not_ok "the worst culprit's bundle differs"; fi
expect_status 2 "--reproduce of a unit that is no culprit" "$TUNE" --reproduce r.h5 --fusion logits -o bundle3
expect_grep "where 'logits' is no culprit; nothing to bundle" err "--reproduce says logits is no culprit"

# The overview of a run that checked no fusion says what the isolation
# found (one fusion-bug among the 12 units), not "no divergence in 0
# fusions" above an empty table of fusions.
expect_status 0 "--report --format html (overview)" "$TUNE" --report r.h5 --format html -o o.html
expect_grep '<span class="status-bad">isolation: 1 culprit in 12 units (1 fusion-bug)</span>' o.html \
  "html: the overview counts the culprits by class"
if grep -q 'no divergence in 0 fusions' o.html; then not_ok "html: the overview says no divergence in 0 fusions"; else
  ok "html: the overview does not say no divergence in 0 fusions"; fi
if grep -q '<h3>Fusions</h3>' o.html; then not_ok "html: an empty table of fusions"; else ok "html: no empty table of fusions"; fi

CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ] || ! command -v python3 >/dev/null 2>&1; then echo "# no chromium or python3: HTML skipped"; finish; exit $?; fi
expect_status 0 "--report --format html" "$TUNE" --report r.h5 --format html -o r.html
python3 - r.html m.html <<'PY'
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
  d.setAttribute("data-wide", d.scrollWidth > d.clientWidth + 1 ? "yes" : "no");
  d.setAttribute("data-clipped", cut.length ? cut.join(" ") : "none");
})();
</script>"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", js + "</body>"))
PY
timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$TMPD/profile" \
  --window-size=1400,1000 --dump-dom "file://$TMPD/m.html" >dom.html 2>/dev/null
# the 12 units of train_step.hlo's entry, in program order
n=0
for u in logits logits_max logits_sumexp picked_logit loss dlogits grad_norm_sq clip_dropout grad_w qat_residual \
  adam loss_history; do
  grep -q "<g class=\"node[^\"]*\" data-unit=\"$u\">" dom.html && n=$((n + 1))
done
if [ "$n" = 12 ]; then ok "html: the fusion graph has all 12 units"; else not_ok "html: $n of 12 units in the graph"; fi
c=$(grep -c '<g class="node culprit"' dom.html)
expect_grep '<g class="node culprit" data-unit="qat_residual">' dom.html "html: qat_residual is highlighted"
if [ "$c" = 1 ]; then ok "html: one unit highlighted"; else not_ok "html: $c units highlighted"; fi
expect_grep '<path class="edge hot"' dom.html "html: the culprit's edge to adam is highlighted"
expect_grep 'first diverging: back' dom.html "html: the graph names the first diverging instruction"
expect_grep '<tr class="div first"><td class="mono">back</td><td>convert</td>' dom.html \
  "html: the first diverging instruction's row is marked"
expect_grep 'first diverging instruction</b> <code>back</code>: [0-9]* of 128000 elements differ, mismatch box <code class="box">\[' \
  dom.html "html: the tensor inspector shows back's mismatch box"
expect_grep 'peak <code class="peakat">([0-9]*,[0-9]*)</code>: expected ' dom.html "html: and its peak"
expect_grep '<td class="pk d">' dom.html "html: the peak cell is outlined in the values around it"
expect_grep 'operand</b> <code>h</code>: 0 of 128000 elements differ' dom.html "html: the operand h is right"
expect_grep 'data-clipped="none"' dom.html "html: no element clips its content"
expect_grep 'data-wide="no"' dom.html "html: nothing is wider than the 1400 px window"
finish
