#!/bin/sh
# memory.sh — a unit's peak memory is estimated before it runs, and a unit
# over --max-memory is refused as too-large, naming the estimate (issue 12
# item 5; tn_memory_estimate in tuner/run/fusion_run.h).
#
# For t.hlo (f32[16,256] in, tanh, f32[16,256] out; 16384 bytes each) the
# estimate is, by fusion_run.h's formula: the values the reference may hold
# (p and t: 32768) + 4 x the output (65536) + the 3 outputs --error-maps
# (default 3) may keep (49152) = 147456, plus per thread the kernel's
# inputs with a shadow byte per element and 3 x its output (16384 + 4096 +
# 49152 = 69632): 217088 bytes with one thread.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
printf 'HloModule t\n\nENTRY main {\n  p = f32[16,256]{1,0} parameter(0)\n  ROOT t = f32[16,256]{1,0} tanh(p)\n}\n' >t.hlo

expect_status 3 "one byte below the one-thread estimate: too-large, nothing verified" \
  "$TUNE" --check t.hlo --budget 2 --max-memory 217087
expect_grep "^fusion main from t.hlo: too-large: estimated peak memory 217088 bytes .* exceeds --max-memory 217087 bytes$" \
  "$TMPD/out" "the refusal names the estimate"
expect_status 0 "exactly the one-thread estimate: checked, with fewer threads" \
  "$TUNE" --check t.hlo --budget 4 --threads 8 --max-memory 217088
expect_grep "^fusion main (loop) from t.hlo: verified" "$TMPD/out" "the unit is verified"
expect_status 0 "a size with a suffix" "$TUNE" --check t.hlo --budget 2 --max-memory 1M
expect_status 3 "K is 1024 bytes: 211K = 216064 < 217088" "$TUNE" --check t.hlo --budget 2 --max-memory 211K
expect_status 2 "--max-memory must be a size" "$TUNE" --check t.hlo --max-memory lots
expect_grep "max-memory: 'lots' is not a size" "$TMPD/err" "the bad size is named"
expect_status 2 "--max-memory 0 is refused" "$TUNE" --check t.hlo --max-memory 0

# Every simulated replica holds its own values, so they count once per
# replica.  ar.hlo (replica_count=16, f32[262144] = 1 MiB in, all-reduce,
# 1 MiB out): 16 x (1 + 1) MiB held + 4 x 1 MiB + one thread's 1 + 3 MiB
# = 40 MiB = 41943040 bytes, and per thread the input's shadow (262144
# bytes) and, as the device evaluates the collective's operand whole, a box
# of 8 + 1 bytes and a value of 4 bytes per element (3407872): 45613056
# bytes.  Counted once, as before, the estimate was 10 MiB: the unit ran
# under --max-memory 20M and took 56 MiB resident.  On top: the 3 outputs
# kept for error maps (3 MiB), and per thread the device's lockstep run
# of the replicas (dev_collective_lockstep_bytes): the operand is the
# parameter, the same on every replica (1 MiB, once), and the one group
# shares one result (1 MiB): 45613056 + 3145728 + 2097152 = 50855936.
cat >ar.hlo <<'HLO'
HloModule replicated, replica_count=16

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[262144]{0} parameter(0)
  ROOT r = f32[262144]{0} all-reduce(p), replica_groups={}, to_apply=add
}
HLO
expect_status 3 "16 replicas of 2 MiB of values do not fit in 20 MiB" \
  "$TUNE" --check ar.hlo --budget 2 --threads 1 --max-memory 20M
expect_grep "^fusion main from ar.hlo: too-large: estimated peak memory 50855936 bytes .* exceeds --max-memory 20971520 bytes$" \
  "$TMPD/out" "the estimate counts the values of every replica"
expect_status 0 "they fit in 49 MiB" "$TUNE" --check ar.hlo --budget 2 --threads 1 --max-memory 49M
expect_grep "^fusion main (collective) from ar.hlo: verified" "$TMPD/out" "and the unit is verified there"
finish
