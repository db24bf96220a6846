#!/bin/sh
# run_attrs.sh — a run's typed attributes, as the readers other than the
# sweep use them (issue 18):
#  1. a `defects` list naming a defect this tune does not model (a newer
#     tune wrote the run): --report renders the run and names it, while
#     --reproduce and --merge, which would rebuild or rewrite the run's
#     device without it, refuse (exit 2);
#  2. --reproduce takes the run's --defect additions from its `defects`
#     list, not from the words of its command line;
#  3. --merge carries the sweep attributes of the runs it merges.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if ! command -v h5dump >/dev/null 2>&1; then echo "skip: h5dump not installed"; exit 77; fi
if ! command -v perl >/dev/null 2>&1; then echo "skip: perl not installed"; exit 77; fi
cd "$TMPD" || exit 1
cp "$TUNE_SRCDIR/tests/results/qat_small.hlo" .
cfg='tile=8x128 k=0 buf=4 order=10 pack=1 prec=default flags=fuse-converts'

# attr FILE OBJECT: the attribute as h5dump prints it.
attr() { h5dump -a "$2" "$1" 2>&1; }

# ---- 1. a defect this tune does not know ------------------------------------------
# A --compiler nightly run: its defects are the profile's six, and no
# defect name is in its command line, so the names are only in the
# `defects` list (HDF5 keeps variable-length strings in a global heap that
# has no checksum).  ragged-chunk-pad becomes a same-length name no tune
# models; the finding itself (elide-convert) stays.
"$TUNE" --check qat_small.hlo --compiler nightly --only "$cfg" -q -o n.h5 >/dev/null 2>&1
run=$(h5ls n.h5/runs | awk '{ print $1 }')
perl -0777 -pi -e 's/ragged-chunk-pad/zz-future-defect/g' n.h5
if attr n.h5 "/runs/$run/defects" | grep -q '"zz-future-defect"' &&
   ! attr n.h5 "/runs/$run/defects" | grep -q 'ragged-chunk-pad'; then
  ok "the run's defects list names zz-future-defect"
else not_ok "could not rename a defect in n.h5"; attr n.h5 "/runs/$run/defects" | sed 's/^/  # /' | head -n 8; fi
for fmt in html md json junit; do
  expect_status 0 "--report --format $fmt renders the run" "$TUNE" --report n.h5 --format $fmt -o "r.$fmt"
done
expect_grep "defects not recognised by this tune (a newer tune wrote the run): zz-future-defect" "$TMPD/err" \
  "--report says on stderr which name it did not recognise"
expect_grep '<td>defects not recognised</td><td>zz-future-defect</td>' r.html "the HTML report names it"
expect_grep '| defects not recognised | `zz-future-defect` |' r.md "the Markdown report names it"
expect_grep '"defects_unknown": "zz-future-defect"' r.json "the JSON report names it"
expect_grep 'name="defects_unknown" value="zz-future-defect"' r.junit "the JUnit report names it"
expect_grep 'mismatch-candidate' r.md "and the run's finding is reported"
expect_status 2 "--reproduce of the run is refused (exit 2)" \
  "$TUNE" --reproduce n.h5 --fusion fused_qat_residual --candidate 1 -o nb
expect_grep "defects: zz-future-defect: not a defect this tune models" "$TMPD/err" "naming the defect"
if [ ! -e nb ]; then ok "and writes no bundle"; else not_ok "a bundle was written"; fi
expect_status 2 "--merge of the run is refused (exit 2)" "$TUNE" --merge m.h5 n.h5
expect_grep "zz-future-defect: not a defect this tune models" "$TMPD/err" "naming the defect"

# ---- 2. --reproduce takes the defects from the list ---------------------------------
# --defe is getopt's abbreviation of --defect: the run has elide-convert,
# its command line has no "--defect" word.
expect_status 1 "a check with --defe elide-convert diverges" \
  "$TUNE" --check qat_small.hlo --defe elide-convert --only "$cfg" -q -o a.h5
run=$(h5ls a.h5/runs | awk '{ print $1 }')
if attr a.h5 "/runs/$run/command" | grep -q -- '--defe elide-convert' &&
   ! attr a.h5 "/runs/$run/command" | grep -q -- '--defect'; then
  ok "the command line has --defe, not --defect"; else not_ok "unexpected command attribute"; fi
attr a.h5 "/runs/$run/defects" >d.txt
expect_grep '"elide-convert"' d.txt "the defects list has elide-convert"
expect_status 0 "--reproduce of its finding" "$TUNE" --reproduce a.h5 --fusion fused_qat_residual --candidate 1 -o ab
expect_grep "'elide-convert'" ab/run.sh "run.sh has the run's elide-convert"
expect_status 1 "run.sh reproduces the finding (exit 1)" env TUNE="$TUNE" ab/run.sh
expect_status 0 "and DEFECTS= runs without it (exit 0)" env TUNE="$TUNE" DEFECTS= ab/run.sh
expect_status 0 "--report md of the run" "$TUNE" --report a.h5 --format md -o a.md
expect_grep "tune --check .*--defect elide-convert" a.md "the report's --check command has the defect too"
# Two additions to a profile: both are --defect options.
expect_status 1 "a check with --compiler stable and two --defe" \
  "$TUNE" --check qat_small.hlo --compiler stable --defe sort-lane-index --defe elide-convert --only "$cfg" -q -o s.h5
expect_status 0 "--reproduce of its finding" "$TUNE" --reproduce s.h5 --fusion fused_qat_residual --candidate 1 -o sb
expect_grep "DEFECTS='sort-lane-index elide-convert'" sb/run.sh "run.sh has both additions"

# ---- 3. --merge carries the sweep attributes ------------------------------------------
cat >w.cfg <<EOF
sweep: {
  corpus = [ "$TMPD/qat_small.hlo", "$TUNE_SRCDIR/tests/results/qat_small.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  budget = 2;
  threads = 1;
  seed = 5;
  output = "$TMPD/unused.h5";
  run_id = "day";
};
EOF
"$TUNE" --sweep w.cfg --shard 1/2 -o p1.h5 >/dev/null 2>&1
"$TUNE" --sweep w.cfg --shard 2/2 -o p2.h5 >/dev/null 2>&1
expect_status 0 "--merge of shard 1/2" "$TUNE" --merge m.h5 p1.h5
run=$(h5ls p1.h5/runs | awk '{ print $1 }') # day-tpu-v5e
for key in sweep_identity sweep_config inputs shard cover_rotation cover_seed; do
  want=$(attr p1.h5 "/runs/$run/$key" | grep '(0):')
  got=$(attr m.h5 "/runs/$run/$key" | grep '(0):')
  if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "the merged run has the part's $key:$(echo "$want" | sed 's/.*(0)://')"
  else not_ok "$key: merged '$got', part '$want'"; fi
done
attr m.h5 /runs/$run/cover_seed >cs.txt
expect_grep 'H5T_STD_U64LE' cs.txt "cover_seed stays a uint64"
expect_status 0 "--merge of shard 2/2 into the same run" "$TUNE" --merge m.h5 p2.h5
attr m.h5 /runs/$run/shard >sh.txt
expect_grep '"1/2 2/2"' sh.txt "shard lists both shards merged in"
expect_status 0 "--merge of shard 2/2 again" "$TUNE" --merge m.h5 p2.h5
attr m.h5 /runs/$run/shard >sh.txt
expect_grep '"1/2 2/2"' sh.txt "and lists each shard once"
finish
