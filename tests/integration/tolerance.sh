#!/bin/sh
# tolerance.sh — a tolerance that admits every output is reported, not
# passed off as "ok" (check/tolerance.h, README "Unverifiable outputs").
#
# bf16_row_sum sums 1000 bf16 terms with a bf16 add.  Its default folds
# them one at a time (d = 1000, d u = 1000/256 > 1): no finite bound, so
# neither the default-vs-reference check nor any candidate's comparison
# with the default can see a wrong sum.  packed-reduce-init0 with pack=2
# over four output windows of 128 really changes the output (its slot 1
# starts from the previous window's partial sum: a "benign" difference),
# and the check must say that it could not judge it.  The same defect on
# bf16_row_mean_f32acc (a bf16 input summed in f32: d u = 4096 * 2^-24)
# is found, and its clean check has no warning.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi

expect_status 0 "bf16_row_sum: the clean check exits 0" "$TUNE" --check "$ds/bf16_row_sum.hlo" --budget 8
cp "$TMPD/out" "$TMPD/clean.out"
expect_grep "tolerance atol inf" "$TMPD/clean.out" "bf16_row_sum: the default-vs-reference bound is infinite"
expect_grep "^  warning   unverifiable vs reference" "$TMPD/clean.out" "bf16_row_sum: the summary says the reference check proves nothing"
expect_grep "^  warning   unverifiable: [1-9][0-9]* of the " "$TMPD/clean.out" "bf16_row_sum: the summary counts the unverifiable candidates"

expect_status 0 "bf16_row_sum --json exits 0" "$TUNE" --check "$ds/bf16_row_sum.hlo" --budget 8 --json
expect_grep '"reference_unverifiable": true' "$TMPD/out" "bf16_row_sum --json: reference_unverifiable is true"

cfg="tile=128 k=1000 buf=2 order=0k pack=2 prec=default flags=none"
expect_status 0 "bf16_row_sum + packed-reduce-init0: the defect is not visible under this bound (exit 0)" \
  "$TUNE" --check "$ds/bf16_row_sum.hlo" --defect packed-reduce-init0 --only "$cfg"
cp "$TMPD/out" "$TMPD/defect.out"
expect_grep "benign=1" "$TMPD/defect.out" "bf16_row_sum + packed-reduce-init0: the output differs from the default"
expect_grep "^  warning   unverifiable: 1 of the 1 candidates" "$TMPD/defect.out" \
  "bf16_row_sum + packed-reduce-init0: the candidate is reported unverifiable, not silently ok"

cfg="tile=128 k=512 buf=2 order=0k pack=4 prec=default flags=none"
expect_status 1 "bf16_row_mean_f32acc + packed-reduce-init0 exits 1" \
  "$TUNE" --check "$ds/bf16_row_mean_f32acc.hlo" --defect packed-reduce-init0 --only "$cfg"
expect_grep "^  - mismatch-candidate $cfg" "$TMPD/out" "bf16_row_mean_f32acc + packed-reduce-init0: a mismatch-candidate"
expect_status 0 "bf16_row_mean_f32acc: the clean check exits 0" \
  "$TUNE" --check "$ds/bf16_row_mean_f32acc.hlo" --only "$cfg"
if grep -q "unverifiable" "$TMPD/out"; then not_ok "bf16_row_mean_f32acc: no unverifiable warning"; else
  ok "bf16_row_mean_f32acc: no unverifiable warning"; fi

finish
