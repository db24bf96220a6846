#!/bin/sh
# sweep.sh — `tune --sweep` and `tune --merge` (issue 7 items 1-3): a small
# sweep over three fusions completes, a second run in the same file has
# nothing new, the lock refuses a concurrent sweep, shards merged equal the
# unsharded findings, a sweep killed with kill -9 resumes without
# repeating a fusion, and a bad sweep file names its file, line and key.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1

# write_cfg FILE BUDGET OUTPUT [EXTRA]
write_cfg() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ "$ds/qat_residual_f16.hlo", "$ds/softmax.hlo", "$ds/row_sum_sq_ragged.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "nightly";
  inputs = "naive";
  budget = $2;
  threads = 2;
  output = "$3";
  $4
};
EOF2
}

write_cfg s.cfg 8 "res/t-%Y.h5" 'reports = ( { format = "md"; output = "res/r-%Y-%m-%d.md"; } );'
"$TUNE" --sweep s.cfg >run1.out 2>run1.err
st=$?
if [ "$st" -eq 0 ] || [ "$st" -eq 1 ]; then ok "the sweep completes (exit $st)"; else
  not_ok "the sweep exited $st"; sed 's/^/  # /' run1.err | tail -n 5; fi
out=$(ls res/t-*.h5 2>/dev/null | head -n 1)
if [ -n "$out" ]; then ok "the output file name has the date ($out)"; else not_ok "no res/t-YEAR.h5"; fi
run1=$(sed -n 's/^run \([^ ]*\) .*/\1/p' run1.out | head -n 1)
if [ "$(groups "$out" "$run1")" = 3 ]; then ok "the run holds the three fusions"; else not_ok "run $run1 has $(groups "$out" "$run1") fusion groups"; fi
if grep -q '^20[0-9-]*T[0-9:]*Z tune: ' run1.err; then ok "log lines carry timestamps"; else not_ok "log lines without timestamps"; sed 's/^/  # /' run1.err | head -n 3; fi
if ls res/r-*.md >/dev/null 2>&1; then ok "the md report was written"; else not_ok "no report"; fi
if h5ls "$out/runs/$run1/changes" >/dev/null 2>&1 || h5dump -A -g "/runs/$run1/changes" "$out" >/dev/null 2>&1; then
  ok "the changes are stored in the run"; else not_ok "no changes group in run $run1"; fi

expect_status 0 "a second run in the same file exits 0" "$TUNE" --sweep s.cfg
expect_grep "nothing new" "$TMPD/out" "and reports nothing new"
expect_grep "since run $run1" "$TMPD/out" "compared with the first run"

# The lock: a second writer is refused while the first holds it.
flock "$out.lock" sleep 3 &
holder=$!
sleep 0.5
expect_status 2 "a sweep on a locked file exits 2" "$TUNE" --sweep s.cfg
expect_grep "locked by another writer" "$TMPD/err" "with a clear message"
wait $holder

# Shards: 1/2 and 2/2 merged give the unsharded findings.
write_cfg u.cfg 8 "unsharded.h5"
"$TUNE" --sweep u.cfg >/dev/null 2>&1
"$TUNE" --sweep u.cfg --shard 1/2 -o s1.h5 >/dev/null 2>s1.err
"$TUNE" --sweep u.cfg --shard 2/2 -o s2.h5 >/dev/null 2>s2.err
# Exit 1: the merged run has divergences, all new (no previous run).
expect_status 1 "--merge combines the shards" "$TUNE" --merge merged.h5 s1.h5 s2.h5
findings unsharded.h5 >f.unsharded
findings merged.h5 >f.merged
if [ -s f.unsharded ] && cmp -s f.unsharded f.merged; then ok "shards merged equal the unsharded findings ($(wc -l <f.merged) candidates)"
else not_ok "merged findings differ"; diff f.unsharded f.merged | head -n 5 | sed 's/^/  # /'; fi
nruns=$("$TUNE" --report merged.h5 --format json | grep -o '"id": "[^"]*", "started"' | wc -l)
if [ "$nruns" -eq 1 ]; then ok "the shards merged into one run"; else not_ok "merged.h5 has $nruns runs"; fi
expect_status 1 "merging a shard again is harmless" "$TUNE" --merge merged.h5 s1.h5
findings merged.h5 >f.again
if cmp -s f.unsharded f.again; then ok "and adds nothing"; else not_ok "a second merge changed the findings"; fi

# kill -9 in the middle, then the same sweep again: the run completes
# with every fusion once.
write_cfg k.cfg 40 "killed.h5"
"$TUNE" --sweep k.cfg >k1.out 2>k1.err &
pid=$!
i=0
while [ $i -lt 200 ] && ! grep -q 'candidates,' k1.err 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
done1=$(grep -c 'candidates,' k1.err)
"$TUNE" --sweep k.cfg >k2.out 2>k2.err
st=$?
if [ "$st" -le 1 ]; then ok "the restarted sweep completes (exit $st)"; else not_ok "the restarted sweep exited $st"; sed 's/^/  # /' k2.err | tail -n 3; fi
krun=$(sed -n 's/^run \([^ ]*\) .*/\1/p' k2.out | head -n 1)
if [ "$done1" -lt 3 ]; then
  expect_grep "resuming run $krun" "$TMPD/k2.err" "it resumes the killed run"
else
  echo "# note: the first sweep finished before the kill"
fi
if [ "$(groups killed.h5 "$krun")" = 3 ]; then ok "the resumed run holds each fusion once"; else
  not_ok "run $krun has $(groups killed.h5 "$krun") fusion groups"; h5ls "killed.h5/runs/$krun/fusions" | sed 's/^/  # /'; fi
redone=$(grep -c 'candidates,' k2.err)
if [ $((done1 + redone)) -eq 3 ] || [ "$done1" -ge 3 ]; then ok "no fusion was checked twice ($done1 + $redone)"; else
  not_ok "checked $done1 then $redone fusions"; fi
nk=$("$TUNE" --report killed.h5 --format json | grep -o '"id": "[^"]*", "started"' | wc -l)
if [ "$nk" -eq 1 ]; then ok "no second run was started"; else not_ok "killed.h5 has $nk runs"; fi

# A bad sweep file: file, line and key, exit 2.
write_cfg bad.cfg 8 "bad.h5" 'bogus = 1;'
expect_status 2 "an unknown key exits 2" "$TUNE" --sweep bad.cfg
expect_grep "bad.cfg:9: unknown key 'sweep.bogus'" "$TMPD/err" "the error names file, line and key"
write_cfg bad2.cfg '"x"' "bad.h5"
expect_status 2 "a mistyped value exits 2" "$TUNE" --sweep bad2.cfg
expect_grep "bad2.cfg:6: 'sweep.budget' must be" "$TMPD/err" "the error names file, line and key"
expect_status 2 "--shard 3/2 is refused" "$TUNE" --sweep s.cfg --shard 3/2
finish
