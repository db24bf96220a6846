#!/bin/sh
# memory.sh — a unit's peak memory is estimated before it runs, and a unit
# over --max-memory is refused as too-large, naming the estimate (issue 12
# item 5; tn_memory_estimate in tuner/sweep.h).
#
# For t.hlo (f32[16,256] in, tanh, f32[16,256] out; 16384 bytes each) the
# estimate is, by sweep.h's formula: the values the reference may hold
# (p and t: 32768) + 4 x the output (65536) = 98304, plus per thread the
# kernel's inputs and 3 x its output (16384 + 49152 = 65536): 163840 bytes
# with one thread, 229376 with two.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
printf 'HloModule t\n\nENTRY main {\n  p = f32[16,256]{1,0} parameter(0)\n  ROOT t = f32[16,256]{1,0} tanh(p)\n}\n' >t.hlo

expect_status 3 "one byte below the one-thread estimate: too-large, nothing verified" \
  "$TUNE" --check t.hlo --budget 2 --max-memory 163839
expect_grep "^fusion main from t.hlo: too-large: estimated peak memory 163840 bytes .* exceeds --max-memory 163839 bytes$" \
  "$TMPD/out" "the refusal names the estimate"
expect_status 0 "exactly the one-thread estimate: checked, with fewer threads" \
  "$TUNE" --check t.hlo --budget 4 --threads 8 --max-memory 163840
expect_grep "^fusion main (loop) from t.hlo: verified" "$TMPD/out" "the unit is verified"
expect_status 0 "a size with a suffix" "$TUNE" --check t.hlo --budget 2 --max-memory 1M
expect_status 3 "K is 1024 bytes: 159K = 162816 < 163840" "$TUNE" --check t.hlo --budget 2 --max-memory 159K
expect_status 2 "--max-memory must be a size" "$TUNE" --check t.hlo --max-memory lots
expect_grep "max-memory: 'lots' is not a size" "$TMPD/err" "the bad size is named"
expect_status 2 "--max-memory 0 is refused" "$TUNE" --check t.hlo --max-memory 0
finish
