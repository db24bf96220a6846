#!/bin/sh
# sweep_changes.sh — "what changed since the previous run" (issue 7 item 3)
# on a day-to-day scenario, unsharded and sharded + merged, and --run-id.
#
# Day 1 sweeps three fusions with a compiler build named "nightly" that
# carries elide-convert and packed-reduce-init0.  Day 2 sweeps them with
# the next build, also named "nightly", where elide-convert is fixed and
# ragged-chunk-pad is new, on a machine file named "tpu-v5e" whose HBM
# bandwidth is a tenth of the real one (the sweep compares runs by machine
# and compiler name, so this is "the same machine got slower").  Expected,
# from the defect catalog (tuner/device/dev_defect.h) and the fusions:
#   fixed:     only qat_residual_f16 findings, each a config with flag
#              fuse-converts (the elide-convert trigger; the only fusion of
#              the three with a narrowing convert converted back);
#   new:       only ragged-chunk-pad exposures: softmax (reduction length
#              256) and row_sum_sq_ragged (1000) configs whose chunk k does
#              not divide the length; none on qat_residual_f16;
#   slowdowns: qat_residual_f16 (it only streams HBM), by a factor above
#              the 10% threshold and at most 10 (only the HBM transfer
#              terms of the cost scale with 1/bandwidth, by 10).
# A threshold of 900% must then report no slowdown, and thresholds just
# below and just above the measured factor must report it and not.
# Sharded (2 shards per day, each day's shards given one --run-id) and
# merged into one file, the stored changes must equal the unsharded ones.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1

cat >c1.cfg <<'EOF'
compiler: { name = "nightly"; defects = [ "elide-convert", "packed-reduce-init0" ]; };
EOF
cat >c2.cfg <<'EOF'
compiler: { name = "nightly"; defects = [ "packed-reduce-init0", "ragged-chunk-pad" ]; };
EOF
sed 's/bandwidth_gbps = 819.0;/bandwidth_gbps = 81.9;/' "$TUNE_SRCDIR/configs/machines/tpu-v5e.cfg" >slow.cfg
if grep -q 'bandwidth_gbps = 81.9;' slow.cfg && grep -q 'name = "tpu-v5e";' slow.cfg; then
  ok "slow.cfg is tpu-v5e with a tenth of the HBM bandwidth"
else not_ok "could not derive slow.cfg from tpu-v5e.cfg"; fi

# day CFG COMPILER MACHINE OUTPUT THRESHOLD [CORPUS] [BUDGET]
day() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ ${6:-"\"$ds/qat_residual_f16.hlo\", \"$ds/softmax.hlo\", \"$ds/row_sum_sq_ragged.hlo\""} ];
  machines = [ "$3" ];
  compiler = "$TMPD/$2";
  inputs = "naive";
  budget = ${7:-16};
  threads = 2;
  output = "$4";
  run_id = "%s";
  slowdown_threshold = $5;
};
EOF2
}
# attr FILE RUN NAME: an attribute of runs/RUN/changes, or one of its
# tables new, fixed, slowdowns printed one tab-separated line per row
# (fingerprint in hex, FILE:FUSION, config, then the verdict or the
# simulated times before and after).
PYTHON3=${PYTHON3:-python3}
if ! "$PYTHON3" -c "import h5py" 2>/dev/null; then echo "skip: h5py not available"; exit 77; fi
attr() {
  "$PYTHON3" - "$@" <<'EOF2'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f["runs/%s/changes" % sys.argv[2]]
name = sys.argv[3]
if name in g.attrs:
    print(g.attrs[name])
else:
    for r in g[name][()]:
        cells = ["%016x" % int(r["fingerprint"]), r["unit"].decode(), r["config"].decode()]
        if "verdict" in r.dtype.names:
            cells.append(r["verdict"].decode())
        else:
            cells += [repr(float(r["before"])), repr(float(r["after"]))]
        print("\t".join(cells))
EOF2
}
runs() { h5ls "$1/runs" 2>/dev/null | awk '{ print $1 }'; }

# ---- unsharded: day 1 then day 2 into U.h5 -----------------------------------
day d1.cfg c1.cfg tpu-v5e U.h5 0.10
day d2.cfg c2.cfg "$TMPD/slow.cfg" U.h5 0.10
"$TUNE" --sweep d1.cfg >u1.out 2>u1.err
st=$?
if [ "$st" -eq 1 ]; then ok "day 1 finds divergences (exit 1)"; else not_ok "day 1 exited $st"; tail -n 3 u1.err | sed 's/^/  # /'; fi
for f in V W Y; do cp U.h5 $f.h5; done # day 1 alone, for the threshold runs
"$TUNE" --sweep d2.cfg >u2.out 2>u2.err
st=$?
if [ "$st" -eq 1 ]; then ok "day 2 has new divergences (exit 1)"; else not_ok "day 2 exited $st"; tail -n 3 u2.err | sed 's/^/  # /'; fi
r1=$(runs U.h5 | head -n 1)
r2=$(runs U.h5 | tail -n 1)
if [ "$(attr U.h5 "$r2" previous_run)" = "$r1" ]; then ok "day 2's previous run is day 1's ($r1)"; else
  not_ok "day 2 ($r2) compares with '$(attr U.h5 "$r2" previous_run)', not $r1"; fi

attr U.h5 "$r2" fixed >fixed
attr U.h5 "$r2" new >new
attr U.h5 "$r2" slowdowns >slow
if [ -s fixed ] && awk -F'\t' '{ sub(/.*:/, "", $2) } $2 != "fused_qat_residual" || $3 !~ /flags=[a-z,-]*fuse-converts/ { bad = 1 } END { exit bad }' fixed; then
  ok "fixed: $(wc -l <fixed) elide-convert findings of qat_residual_f16, all with fuse-converts"
else not_ok "fixed list unexpected"; sed 's/^/  # /' fixed | head -n 5; fi
attr U.h5 "$r1" new | awk -F'\t' '{ sub(/.*:/, "", $2) } $2 == "fused_qat_residual" { print $3 }' | sort >day1.qat
if [ -s day1.qat ] && awk -F'\t' '{ print $3 }' fixed | sort | cmp -s - day1.qat; then
  ok "fixed: exactly the configs day 1 found divergent on qat_residual_f16"
else not_ok "fixed configs differ from day 1's qat findings"; fi
# k of a config line, and the reduction length of each fusion (its HLO).
if [ -s new ] && awk -F'\t' '
  { sub(/.*:/, "", $2); k = $3; sub(/.* k=/, "", k); sub(/ .*/, "", k); k += 0
    len = $2 == "fused_softmax" ? 256 : $2 == "fused_reduce" ? 1000 : 0
    if (len == 0 || k == 0 || len % k == 0) bad = 1 }
  END { exit bad }' new; then
  ok "new: $(wc -l <new) findings, every one a chunk k that does not divide the reduction length"
else not_ok "new list unexpected"; sed 's/^/  # /' new | head -n 5; fi
grep -q 'fused_softmax' new && grep -q 'fused_reduce' new && ok "new findings on both reductions" ||
  not_ok "new findings missing on softmax or row_sum_sq_ragged"
if grep -q 'fused_qat_residual' slow && awk -F'\t' '{ sub(/.*:/, "", $2) } $2 == "fused_qat_residual" { r = $5 / $4; if (r > 1.10 && r <= 10) ok = 1 } END { exit !ok }' slow; then
  ok "slowdown of qat_residual_f16 stored: $(awk -F'\t' '{ sub(/.*:/, "", $2) } $2 == "fused_qat_residual" { printf "%.3g us -> %.3g us", $4 * 1e6, $5 * 1e6 }' slow)"
else not_ok "no qat_residual_f16 slowdown within (10%, x10]"; sed 's/^/  # /' slow | head -n 5; fi
if awk -F'\t' '{ if (!($5 > $4 * 1.10)) bad = 1 } END { exit bad }' slow; then ok "every stored slowdown exceeds the 10% threshold"; else
  not_ok "a stored slowdown is under the threshold"; fi
# Counts are integers and lists are tables (issue 18), not strings.
h5dump -a "/runs/$r2/changes/count_new" U.h5 >cn.txt 2>&1
expect_grep 'H5T_STD_I64LE' cn.txt "changes/count_new is a 64-bit integer"
h5dump -a "/runs/$r2/changes/slowdown_threshold" U.h5 >st.txt 2>&1
expect_grep 'H5T_IEEE_F64LE' st.txt "changes/slowdown_threshold is a double"
h5ls "U.h5/runs/$r2/changes" >cl.txt 2>&1
if grep -q '^new  *Dataset' cl.txt && grep -q '^fixed  *Dataset' cl.txt && grep -q '^slowdowns  *Dataset' cl.txt; then
  ok "changes/new, fixed and slowdowns are datasets"; else not_ok "changes tables missing"; sed 's/^/  # /' cl.txt; fi
for k in new fixed slowdowns; do
  n=$(attr U.h5 "$r2" "count_$k")
  case $k in new) f=new ;; fixed) f=fixed ;; *) f=slow ;; esac
  if [ "$n" = "$(wc -l <$f | tr -d ' ')" ]; then ok "count_$k = $n matches the list"; else not_ok "count_$k = $n, list has $(wc -l <$f)"; fi
done
expect_grep "since run $r1: $(wc -l <new | tr -d ' ') new divergences, $(wc -l <fixed | tr -d ' ') fixed, [0-9]* still open, $(wc -l <slow | tr -d ' ') default-config slowdowns over 10%" u2.out "the sweep prints the counts"
expect_grep "^  slower .*/qat_residual_f16.hlo:fused_qat_residual: default" u2.out "and the slowdown, named FILE:FUSION"
expect_grep "^  fixed  " u2.out "and the fixed findings"

# ---- the threshold -------------------------------------------------------------
ratio=$(awk -F'\t' '{ sub(/.*:/, "", $2) } $2 == "fused_qat_residual" { printf "%.17g", $5 / $4 }' slow)
qat="\"$ds/qat_residual_f16.hlo\""
day t9.cfg c2.cfg "$TMPD/slow.cfg" V.h5 9.0 "$qat" 1
"$TUNE" --sweep t9.cfg >t9.out 2>t9.err
rv=$(runs V.h5 | tail -n 1)
if [ "$(attr V.h5 "$rv" count_slowdowns)" = 0 ] && grep -q '0 default-config slowdowns over 900%' t9.out; then
  ok "a 900% threshold reports no slowdown (a tenth of the bandwidth costs at most x10)"
else not_ok "slowdowns over 900%: $(attr V.h5 "$rv" count_slowdowns)"; sed 's/^/  # /' t9.out | head -n 4; fi
below=$(awk -v r="$ratio" 'BEGIN { printf "%.6f", (r - 1) * 0.98 }')
above=$(awk -v r="$ratio" 'BEGIN { printf "%.6f", (r - 1) * 1.02 }')
day tb.cfg c2.cfg "$TMPD/slow.cfg" W.h5 "$below" "$qat" 1
"$TUNE" --sweep tb.cfg >tb.out 2>tb.err
rw=$(runs W.h5 | tail -n 1)
if [ "$(attr W.h5 "$rw" count_slowdowns)" = 1 ] && grep -q "slower .*:fused_qat_residual" tb.out; then
  ok "threshold $below, just under the slowdown: reported"
else not_ok "threshold $below: $(attr W.h5 "$rw" count_slowdowns) slowdowns"; fi
day ta.cfg c2.cfg "$TMPD/slow.cfg" Y.h5 "$above" "$qat" 1
"$TUNE" --sweep ta.cfg >ta.out 2>ta.err
ry=$(runs Y.h5 | tail -n 1)
if [ "$(attr Y.h5 "$ry" count_slowdowns)" = 0 ] && ! grep -q "slower" ta.out; then
  ok "threshold $above, just over the slowdown: not reported"
else not_ok "threshold $above: $(attr Y.h5 "$ry" count_slowdowns) slowdowns"; fi

# ---- sharded, each day's shards under one --run-id, merged -----------------------
for d in 1 2; do
  for k in 1 2; do
    "$TUNE" --sweep d$d.cfg --shard $k/2 --run-id day$d -o s$d$k.h5 >s$d$k.out 2>s$d$k.err
    [ $k = 1 ] && sleep 1.1 # run_id "%s" would now expand to another second
  done
done
if [ "$(runs s11.h5)" = "day1-tpu-v5e" ] && [ "$(runs s12.h5)" = "day1-tpu-v5e" ] &&
  [ "$(runs s21.h5)" = "day2-tpu-v5e" ] && [ "$(runs s22.h5)" = "day2-tpu-v5e" ]; then
  ok "--run-id names every shard's run ID-MACHINE"
else not_ok "shard runs: $(runs s11.h5) $(runs s12.h5) $(runs s21.h5) $(runs s22.h5)"; fi
expect_status 1 "merging day 1 exits 1 (its divergences are new)" "$TUNE" --merge M.h5 s11.h5 s12.h5
expect_grep "no previous run: " "$TMPD/out" "and says there is no previous run"
expect_status 1 "merging day 2 exits 1 (new divergences)" "$TUNE" --merge M.h5 s21.h5 s22.h5
cp "$TMPD/out" m2.out
if [ "$(runs M.h5 | tr '\n' ' ')" = "day1-tpu-v5e day2-tpu-v5e " ]; then ok "one run per day in the merged file"; else
  not_ok "merged runs: $(runs M.h5 | tr '\n' ' ')"; fi
if [ "$(attr M.h5 day2-tpu-v5e previous_run)" = day1-tpu-v5e ]; then ok "the merged day 2 compares with day 1"; else
  not_ok "merged day 2 previous_run '$(attr M.h5 day2-tpu-v5e previous_run)'"; fi
for k in new fixed slowdowns count_new count_fixed count_slowdowns slowdown_threshold; do
  attr U.h5 "$r2" $k | sort >u.$k
  attr M.h5 day2-tpu-v5e $k | sort >m.$k
  if cmp -s u.$k m.$k; then ok "merged changes/$k equals the unsharded one ($(wc -l <u.$k | tr -d ' ') lines)"; else
    not_ok "merged changes/$k differs"; diff u.$k m.$k | head -n 4 | sed 's/^/  # /'; fi
done
grep '^  ' u2.out | sort >u2.lines
grep '^  ' m2.out | sort >m2.lines
if [ -s u2.lines ] && cmp -s u2.lines m2.lines; then ok "--merge prints the same changes as the unsharded sweep"; else
  not_ok "printed changes differ"; diff u2.lines m2.lines | head -n 4 | sed 's/^/  # /'; fi
expect_status 1 "merging a day 2 shard again changes nothing" "$TUNE" --merge M.h5 s21.h5
attr M.h5 day2-tpu-v5e new | sort >m.again
if cmp -s u.new m.again; then ok "and the stored changes stay those of the whole run"; else not_ok "changes after a re-merge differ"; fi

# Without --run-id the same two shards started in different seconds get
# different runs ("%s" stands for the date that changes at midnight).
"$TUNE" --sweep d1.cfg --shard 1/2 -o n1.h5 >/dev/null 2>&1
sleep 1.1
"$TUNE" --sweep d1.cfg --shard 2/2 -o n2.h5 >/dev/null 2>&1
if [ "$(runs n1.h5)" != "$(runs n2.h5)" ]; then ok "without --run-id, shards started a second apart get different run ids"; else
  not_ok "shards without --run-id share '$(runs n1.h5)'"; fi
expect_status 2 "--run-id with a '/' is refused" "$TUNE" --sweep d1.cfg --run-id a/b
expect_grep "run-id" "$TMPD/err" "with a message naming the option"
expect_status 2 "an empty --run-id is refused" "$TUNE" --sweep d1.cfg --run-id ''
finish
