#!/bin/sh
# defects.sh — every modelled defect is found by `tune --check` on a fusion
# of datasets/ (issue 5): with --defect NAME the check exits 1 and names the
# expected verdict, and the same check on the clean (stable) compiler exits
# 0.  Also: the nightly profile is caught on a fusion exposing one of its
# defects.
#
# Each line: fusion, defect, verdict, then the tune options that restrict
# the sweep to a config meeting the trigger (--only CONFIG: the default,
# which runs too, never meets it) or a budget whose first candidates do.
#   int8-dot-f32-acc: the default itself (k = 4099, not a multiple of 4)
#   carries the defect, so the right verdict is mismatch-default, and the
#   check runs with --atol 0 --rtol 0: the s32 accumulation is exact, but
#   the tolerance policy still bounds it like an f32 sum (atol ~3e4 at the
#   f32 output), which hides a loss of a few units in sums above 2^24.
#   dma-race: the default (2 grid steps) does not race; candidates with
#   small tiles do, and their rerun with another jitter seed differs.
#   argmax_variadic: a variadic (value, index) reduce, chunked like a
#   single-operand one, carries the two reduction defects too.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi

cat >"$TMPD/cases" <<'EOF'
reduce_middle_dim|revisit-no-reinit|mismatch-candidate|--only|tile=8x128 k=32 buf=3 order=k01 pack=2 prec=default flags=none
row_sum_sq_ragged|packed-reduce-init0|mismatch-candidate|--only|tile=128 k=512 buf=2 order=0k pack=4 prec=default flags=none
scatter_u8_set_slot|scatter-s8-iota-wrap|mismatch-candidate|--only|tile=512 k=0 buf=2 order=0 pack=1 prec=default flags=vec-scatter
topk_sort_axis0_bug3|sort-lane-index|mismatch-candidate|--only|tile=8x4 k=0 buf=2 order=01 pack=1 prec=default flags=two-stage-sort
qat_residual_f16|elide-convert|mismatch-candidate|--only|tile=256x256 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts
qat_residual_bf16|ragged-store-mask|mismatch-candidate|--only|tile=8x1000 k=0 buf=2 order=01 pack=1 prec=default flags=none
row_sum_sq_ragged|ragged-chunk-pad|mismatch-candidate|--only|tile=256 k=128 buf=2 order=0k pack=1 prec=default flags=none
argmax_variadic|packed-reduce-init0|mismatch-candidate|--only|tile=128 k=1000 buf=2 order=0k pack=2 prec=default flags=none
argmax_variadic|ragged-chunk-pad|mismatch-candidate|--only|tile=300 k=256 buf=2 order=0k pack=1 prec=default flags=none
qat_residual_f16|dma-race|nondeterministic|--budget|8
int8_gram|int8-dot-f32-acc|mismatch-default|--only|tile=128x128 k=128 buf=2 order=01k pack=1 prec=default flags=none
dynamic_slice_sliding_window|dynslice-clamp-lost|mismatch-candidate|--only|tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=none
u8_threshold_mask|unsigned-cmp-signed|mismatch-candidate|--only|tile=256x384 k=0 buf=2 order=01 pack=1 prec=default flags=fuse-converts
fft_rfft_f32|fft-tile-twiddle|mismatch-candidate|--only|tile=8x128 k=0 buf=2 order=01 pack=1 prec=default flags=four-step
EOF

# Every defect of the catalog has a case.
"$TUNE" --list-defects | awk '{print $1}' | sort >"$TMPD/catalog"
cut -d'|' -f2 "$TMPD/cases" | sort -u >"$TMPD/covered"
missing=$(comm -23 "$TMPD/catalog" "$TMPD/covered")
if [ -z "$missing" ] && [ -s "$TMPD/catalog" ]; then ok "every defect of --list-defects has a case"; else
  not_ok "defects without a case: $(echo $missing)"; fi

while IFS='|' read -r fusion defect verdict opt arg; do
  file="$ds/$fusion.hlo"
  extra=""
  [ "$defect" = int8-dot-f32-acc ] && extra="--atol 0 --rtol 0"
  # shellcheck disable=SC2086
  expect_status 1 "$defect: tune --check $fusion.hlo --defect $defect exits 1" \
    "$TUNE" --check "$file" --defect "$defect" $extra "$opt" "$arg" --quiet
  cp "$TMPD/out" "$TMPD/defect.out"
  expect_grep "^  - $verdict " "$TMPD/defect.out" "$defect: $fusion.hlo gives a $verdict candidate"
  expect_grep "compiler stable+d" "$TMPD/defect.out" "$defect: the summary names the modified compiler"
  # shellcheck disable=SC2086
  expect_status 0 "$defect: the clean check of $fusion.hlo exits 0" \
    "$TUNE" --check "$file" $extra "$opt" "$arg" --quiet
  # shellcheck disable=SC2086
  expect_status 0 "$defect: --compiler stable is the clean compiler on $fusion.hlo" \
    "$TUNE" --check "$file" --compiler stable $extra "$opt" "$arg" --quiet
done <"$TMPD/cases"

# The nightly profile (scatter-s8-iota-wrap among its defects): the whole
# space of the u8 slot-table scatter, its vec-scatter configs included.
expect_status 1 "tune --check scatter_u8_set_slot.hlo --compiler nightly exits 1" \
  "$TUNE" --check "$ds/scatter_u8_set_slot.hlo" --compiler nightly --quiet
expect_grep "^  - mismatch-candidate .*flags=vec-scatter" "$TMPD/out" "nightly: a vec-scatter candidate is a mismatch"
expect_grep "compiler nightly" "$TMPD/out" "nightly: the summary names the compiler"
expect_status 0 "the same sweep on the stable compiler exits 0" \
  "$TUNE" --check "$ds/scatter_u8_set_slot.hlo" --compiler stable --quiet

finish
