#!/bin/sh
# report_size.sh — the HTML report of a ten-fusion nightly run stays under
# 500 KB (issue 18): identical error maps are drawn once, large ones are
# downsampled into an image of at most 32 x 64 cells, identical verdict
# rows are folded together and only the worst rows are kept in full.
# Each of the ten files has a nightly defect that diverges within the
# first 64 candidates (datasets/EXPECTED-nightly), so every section has
# groups, heatmaps and divergent rows to pay for.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
cd "$TMPD" || exit 1
set -- softmax layernorm rmsnorm l2_normalize qat_residual_f16 qat_residual_bf16 column_max reduce_middle_dim \
  row_sum_sq_ragged u8_threshold_mask
files=
for n in "$@"; do files="$files $ds/$n.hlo"; done
# shellcheck disable=SC2086
expect_status 1 "--check of ten fusions with --compiler nightly diverges" \
  "$TUNE" --check $files --compiler nightly --budget 64 -q -o ten.h5
expect_status 0 "--report --format html" "$TUNE" --report ten.h5 --format html -o ten.html
size=$(wc -c <ten.html)
echo "# ten.html: $size bytes"
if [ "$size" -lt 500000 ]; then ok "HTML of ten fusions under 500 KB ($size bytes)"; else
  not_ok "HTML of ten fusions is $size bytes, 500 KB or more"; fi
sections=$(grep -c '<section class="card fusion divergent"' ten.html)
if [ "$sections" -eq 10 ]; then ok "all ten fusions reported as divergent"; else not_ok "$sections divergent sections, wanted 10"; fi
# Nothing was dropped to get there: every fusion still has its heatmap
# and its knob groups, and every divergent candidate is in a row, folded
# into one or named by id.
maps=$(grep -c 'aria-label="error heatmap"' ten.html)
if [ "$maps" -ge 10 ]; then ok "$maps heatmaps"; else not_ok "only $maps heatmaps"; fi
expect_grep 'data:image/png;base64,iVBORw0KGgo' ten.html "heatmaps are inline PNG images"
expect_grep 'Knob attribution' ten.html "knob groups"
expect_grep 'The same errors: [0-9]* more candidate' ten.html "identical verdict rows folded together"
finish
