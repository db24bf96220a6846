#!/bin/sh
# schema_versions.sh — results files of schema version 1 and 2 (issue 18).
# tests/results/schema1_check.h5 was written by the last schema 1 tune
# (tests/results/README): one run, the default and one mismatch-candidate of
# qat_small.hlo under --defect elide-convert.  --report, --reproduce and
# --merge read it; appending to it (--check -o, a sweep resuming into it) is
# refused with a message that says how to carry it over, and leaves it as it
# was; --merge carries it over into a schema 2 file, where the day-over-day
# comparison of a later run against its run works.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
res="$TUNE_SRCDIR/tests/results"
V1="$res/schema1_check.h5"
hlo="$res/qat_small.hlo"
cfg='tile=8x128 k=0 buf=4 order=10 pack=1 prec=default flags=fuse-converts'
if ! command -v h5dump >/dev/null 2>&1; then echo "skip: h5dump not installed"; exit 77; fi
cd "$TMPD" || exit 1
cp "$hlo" qat_small.hlo

# schema_version FILE: the root attribute, as h5dump prints it.
schema_version() {
  h5dump -a /schema_version "$1" 2>/dev/null | awk '/\(0\):/ { print $2 }'
}

if [ "$(schema_version "$V1")" = 1 ]; then ok "the fixture is schema version 1"; else
  not_ok "the fixture says schema_version '$(schema_version "$V1")'"; fi

# ---- reading version 1 ---------------------------------------------------------
expect_status 0 "--report md of a schema 1 file" "$TUNE" --report "$V1" --format md -o r1.md
expect_grep "flags=fuse-converts" r1.md "the report shows the divergent config"
expect_grep "mismatch-candidate" r1.md "and its verdict"
expect_status 0 "--report json of a schema 1 file" "$TUNE" --report "$V1" --format json -o r1.json
expect_grep '"schema_version": 1,' r1.json "the JSON report says the file's version, 1"
expect_status 0 "--reproduce from a schema 1 file" \
  "$TUNE" --reproduce "$V1" --fusion fused_qat_residual --candidate 1 -o b1
if [ -f b1/run.sh ] && grep -q "elide-convert" b1/run.sh; then
  ok "the bundle keeps the run's --defect elide-convert"; else not_ok "bundle run.sh lacks the defect"; fi
if [ -x "$(dirname "$TUNE")/tune" ]; then
  (cd b1 && TUNE="$TUNE" ./run.sh >../b1.out 2>&1)
  st=$?
  if [ "$st" -eq 1 ]; then ok "its run.sh still diverges (exit 1)"; else not_ok "run.sh exited $st"; fi
fi

# ---- appending to version 1 is refused, the file untouched ------------------------
cp "$V1" old.h5
expect_status 2 "--check -o into a schema 1 file is refused (exit 2)" \
  "$TUNE" --check qat_small.hlo --only "$cfg" -q -o old.h5
expect_grep "old.h5: results schema version 1 was written by an older tune; this tune appends only to version 2 files" \
  "$TMPD/err" "the message names both versions"
expect_grep "tune --merge NEW.h5 THIS.h5" "$TMPD/err" "and says how to carry the file over"
if cmp -s "$V1" old.h5; then ok "the schema 1 file is left as it was"; else not_ok "old.h5 changed"; fi
cat >s.cfg <<EOF
sweep: {
  corpus = [ "$TMPD/qat_small.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  budget = 2;
  time_budget = 0.0;
  threads = 1;
  seed = 0;
  output = "$TMPD/old.h5";
  run_id = "%Y%m%d";
  slowdown_threshold = 0.10;
};
EOF
expect_status 2 "a sweep into a schema 1 file is refused (exit 2)" "$TUNE" --sweep s.cfg
expect_grep "schema version 1 was written by an older tune" "$TMPD/err" "with the same message"
if cmp -s "$V1" old.h5; then ok "and the file is still as it was"; else not_ok "old.h5 changed by the sweep"; fi
# A merge into a run the schema 1 file already has reopens that run, as a
# resumed sweep does: refused the same way.
expect_status 2 "--merge into a run of a schema 1 file is refused (exit 2)" "$TUNE" --merge old.h5 "$V1"
expect_grep "schema version 1 was written by an older tune" "$TMPD/err" "with the same message"
if cmp -s "$V1" old.h5; then ok "and the file is still as it was"; else not_ok "old.h5 changed by the merge"; fi

# ---- carried over by --merge; day over day across the versions ---------------------
expect_status 1 "--merge NEW.h5 of the schema 1 file (its divergence is new: exit 1)" "$TUNE" --merge new.h5 "$V1"
if [ "$(schema_version new.h5)" = 2 ]; then ok "the merged file is schema version 2"; else
  not_ok "new.h5 says schema_version '$(schema_version new.h5)'"; fi
r1=$(h5ls "$V1/runs" | awk '{ print $1 }')
if h5ls new.h5/runs | grep -q "^$r1 "; then ok "it holds the schema 1 run $r1"; else not_ok "run $r1 missing"; fi
# The next day: the same device name (stable+d) without elide-convert, so
# the finding is fixed; the comparison reads the carried-over run.
expect_status 0 "a later --check -o day2.h5 without elide-convert" \
  "$TUNE" --check qat_small.hlo --only "$cfg" --defect sort-lane-index -q -o day2.h5
expect_status 0 "--merge of the later run (nothing new: exit 0)" "$TUNE" --merge new.h5 day2.h5
expect_grep "since run $r1: 0 new divergences, 1 fixed, 0 still open" "$TMPD/out" \
  "the later run is compared with the schema 1 run: 1 fixed"
r2=$(h5ls day2.h5/runs | awk '{ print $1 }')
h5dump -a "/runs/$r2/changes/count_fixed" new.h5 >cf.txt 2>&1
if grep -q 'H5T_STD_I64LE' cf.txt && grep -q '(0): 1$' cf.txt; then ok "changes/count_fixed is the integer 1"; else
  not_ok "count_fixed"; sed 's/^/  # /' cf.txt | head -n 8; fi
h5dump -d "/runs/$r2/changes/fixed" new.h5 >fx.txt 2>&1
expect_grep 'qat_small.hlo:fused_qat_residual' fx.txt "changes/fixed names FILE:FUSION"
expect_grep "$cfg" fx.txt "and the config"
h5dump -a "/runs/$r2/changes/previous_run" new.h5 >pr.txt 2>&1
expect_grep "\"$r1\"" pr.txt "changes/previous_run is the schema 1 run"
expect_status 0 "--report of the merged file" "$TUNE" --report new.h5 --run "$r1" --format json -o r2.json
expect_grep '"schema_version": 2,' r2.json "its JSON report says version 2"

# ---- a newer version is refused -----------------------------------------------------
if [ -n "${PYTHON3:-}" ] && "$PYTHON3" -c 'import h5py' 2>/dev/null; then
  cp new.h5 v3.h5
  "$PYTHON3" -c 'import sys, h5py, numpy; f = h5py.File(sys.argv[1], "r+"); f.attrs["schema_version"] = numpy.int64(3)' v3.h5
  expect_status 2 "--report of a schema 3 file is refused" "$TUNE" --report v3.h5 --format md
  expect_grep "results schema version 3 was written by a newer tune; this tune reads versions 1 to 2" "$TMPD/err" \
    "naming the versions it reads"
fi
finish
