#!/bin/sh
# sweep_cron.sh — a sweep that cron can live with (issue 18): a corpus's
# expected-failures file keeps known refusals out of the exit status while
# a new refusal still fails the run; the summary says what is still open;
# findings are named FILE:FUSION; every log line is timestamped; shards
# write reports of their own and --merge writes the merged run's.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1
mkdir corpus res
cp "$ds/qat_residual_f16.hlo" "$ds/softmax.hlo" "$ds/row_sum_sq_ragged.hlo" corpus/
# An op the parser does not know: the file is refused (exit 2 without a list).
printf 'HloModule bad\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] frobnicate(p)\n}\n' >corpus/unsupported.hlo
cat >XF <<'EOF2'
# corpus refusals we know about
unsupported.hlo   unsupported: frobnicate is not an op tune evaluates
EOF2

# write_cfg FILE COMPILER OUTPUT [EXTRA]
write_cfg() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ "corpus/*.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "$2";
  inputs = "constrained";
  budget = 8;
  threads = 2;
  output = "$3";
  $4
};
EOF2
}
# stamped FILE: every line of FILE starts with a UTC timestamp
stamped() { ! grep -v '^20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z tune: ' "$1" | grep -q .; }

# ---- expected failures -------------------------------------------------------
write_cfg plain.cfg stable res/plain.h5
expect_status 2 "without a list, the refused file fails the sweep (exit 2)" "$TUNE" --sweep plain.cfg
write_cfg xf.cfg stable res/xf.h5 'expected_failures = "XF";'
expect_status 0 "listed in the expected failures, it does not (exit 0)" "$TUNE" --sweep xf.cfg
cp "$TMPD/err" xf.err
expect_grep "unsupported.hlo:5:19: error: unknown opcode 'frobnicate' (expected failure: unsupported: frobnicate" xf.err \
  "the log names the refusal and the listed reason"
if stamped xf.err; then ok "every log line of the sweep is timestamped"; else not_ok "a log line without timestamp"; grep -v '^20' xf.err | sed 's/^/  # /' | head -n 3; fi
expect_grep "1 machine," xf.err "one machine is '1 machine'"
cp corpus/unsupported.hlo corpus/unlisted.hlo
expect_status 2 "a new refusal, not in the list, still fails the sweep" "$TUNE" --sweep xf.cfg -o res/xf2.h5
expect_grep "unlisted.hlo.*a new refusal" "$TMPD/err" "and is called a new refusal"
rm corpus/unlisted.hlo
printf 'unsupported.hlo\n' >XF.bad
write_cfg bad.cfg stable res/bad.h5 'expected_failures = "XF.bad";'
expect_status 2 "an entry without a reason is refused" "$TUNE" --sweep bad.cfg
expect_grep "XF.bad:1: error: 'unsupported.hlo' has no reason" "$TMPD/err" "with the file and line"

# ---- new, fixed, still open; FILE:FUSION -------------------------------------
write_cfg n.cfg nightly res/n.h5 'expected_failures = "XF";'
"$TUNE" --sweep n.cfg >day1.out 2>day1.err
d=$(sed -n 's/.*no previous run: \([0-9]*\) divergences.*/\1/p' day1.out)
if [ -n "$d" ] && [ "$d" -gt 0 ]; then ok "day 1 under nightly: $d divergences"; else not_ok "day 1: '$d'"; sed 's/^/  # /' day1.out | head -n 3; fi
if grep '^  new ' day1.out | grep -q " corpus/[a-z_0-9]*\.hlo:fused_[a-z_]*  "; then ok "findings are named FILE:FUSION"
else not_ok "findings not named FILE:FUSION"; grep '^  new ' day1.out | head -n 2 | sed 's/^/  # /'; fi
expect_status 0 "day 2, the same findings: exit 0" "$TUNE" --sweep n.cfg
expect_grep ": 0 new divergences, 0 fixed, $d still open," "$TMPD/out" "the summary counts the $d findings still open"
expect_grep "nothing new; $d still open" "$TMPD/out" "and says nothing new, with how many are open"

# ---- shards and merge: reports ------------------------------------------------
write_cfg sh.cfg stable res/unused.h5 'expected_failures = "XF"; reports = ( { format = "md"; output = "res/day-%Y-%m-%d.md"; } );'
"$TUNE" --sweep sh.cfg --shard 1/2 --run-id RID -o res/s1.h5 >/dev/null 2>s1.err
"$TUNE" --sweep sh.cfg --shard 2/2 --run-id RID -o res/s2.h5 >/dev/null 2>s2.err
n1=$(ls res/day-*-shard1of2.md 2>/dev/null | wc -l)
n2=$(ls res/day-*-shard2of2.md 2>/dev/null | wc -l)
if [ "$n1" = 1 ] && [ "$n2" = 1 ]; then ok "each shard writes its own report name"; else not_ok "shard reports: $n1 $n2"; ls out | sed 's/^/  # /'; fi
if ls res/day-*.md 2>/dev/null | grep -qv shard; then not_ok "a shard wrote the whole day's report name"; else ok "no shard wrote the whole day's report"; fi
expect_status 0 "--merge of the shards" "$TUNE" --merge res/M.h5 res/s1.h5 res/s2.h5
whole=$(ls res/day-*.md 2>/dev/null | grep -v shard | head -n 1)
if [ -n "$whole" ] && grep -q fused_qat_residual "$whole" && grep -q fused_softmax "$whole"; then
  ok "--merge writes the merged run's report ($whole) with both shards' fusions"
else not_ok "no merged report with both fusions: '$whole'"; fi
if stamped "$TMPD/err"; then ok "--merge log lines are timestamped"; else not_ok "--merge log line without timestamp"; sed 's/^/  # /' "$TMPD/err" | head -n 3; fi
# Held long enough for a loaded machine or a sanitizer build; released
# (flock -o: the lock is flock's own, not its child's) as soon as we know.
flock -o res/M.h5.lock sleep 60 &
holder=$!
sleep 0.5
write_cfg m.cfg stable res/M.h5 'expected_failures = "XF";'
expect_status 2 "a sweep on a locked file exits 2" "$TUNE" --sweep m.cfg
if grep -q 'locked' "$TMPD/err" && stamped "$TMPD/err"; then ok "the lock error is timestamped"; else not_ok "lock error: $(cat "$TMPD/err")"; fi
pkill -P "$holder" sleep 2>/dev/null
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
finish
