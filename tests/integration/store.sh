#!/bin/sh
# store.sh — the HDF5 results file of `tune --check -o X.h5`, read by tools
# that are not ours: h5ls and h5dump, and h5py + numpy when PYTHON3 has them
# (store_h5py.py checks the documented schema).  -o appends a run and keeps
# the earlier ones, and a run killed with kill -9 leaves a file that opens
# and holds every fusion it had finished, each complete.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"

if ! "$TUNE" --help 2>&1 | grep -q -- --check; then
  echo "# skip: this tune has no --check"
  exit 77
fi
if ! command -v h5ls >/dev/null 2>&1 || ! command -v h5dump >/dev/null 2>&1; then
  echo "# skip: h5ls/h5dump not installed (Debian package: hdf5-tools)"
  exit 77
fi

# run_check DESC FILE... -o OUT: exit 0 (all good) or 1 (a divergence) are
# both a stored run; 2 would be a failure.
run_check() {
  desc=$1; shift
  "$@" >"$TMPD/out" 2>"$TMPD/err"
  got=$?
  if [ "$got" -le 1 ]; then ok "$desc (exit $got)"; else
    not_ok "$desc (exit $got)"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi
}

# fusion_groups FILE: the fusion group paths h5ls sees, one a line.
fusion_groups() {
  h5ls -r "$1" 2>/dev/null | awk '$2 == "Group" && $1 ~ /^\/runs\/[^\/]+\/fusions\/[^\/]+$/ { print $1 }'
}

X="$TMPD/X.h5"
run_check "--check softmax -o X.h5" "$TUNE" --check "$ds/softmax.hlo" -o "$X"
if [ -s "$X" ]; then ok "X.h5 written"; else not_ok "X.h5 missing"; finish; exit; fi
if ls "$TMPD" | grep -q '\.tmp\.'; then not_ok "temporary file left behind"; else ok "no temporary file left"; fi

h5ls -r "$X" >"$TMPD/ls" 2>&1
expect_grep '^/runs/[^/]*/fusions/[0-9a-f]\{16\}/candidates  *Dataset {[1-9][0-9]*}' "$TMPD/ls" \
  "h5ls: /runs/*/fusions/<fp>/candidates is a table"
expect_grep '^/runs/[^/]*/fusions/[0-9a-f]\{16\}/hlo  *Dataset {SCALAR}' "$TMPD/ls" "h5ls: the fusion's hlo text"
expect_grep '^/runs/[^/]*/fusions/[0-9a-f]\{16\}/reference  *Dataset {1}' "$TMPD/ls" "h5ls: the reference row"
expect_status 0 "h5dump -H reads the file" h5dump -H "$X"
expect_grep 'DATASET "candidates"' "$TMPD/out" "h5dump -H: candidates"
expect_grep 'H5T_COMPOUND' "$TMPD/out" "h5dump -H: candidates is a compound"
expect_grep 'H5T_ARRAY { \[17\] H5T_STD_I64LE }' "$TMPD/out" "h5dump -H: the histogram is an array column"
h5dump -A "$X" >"$TMPD/attrs" 2>&1
expect_grep '"tune-results"' "$TMPD/attrs" "h5dump -A: schema tune-results"
expect_grep 'ATTRIBUTE "schema_version"' "$TMPD/attrs" "h5dump -A: schema_version"
expect_grep '"complete"' "$TMPD/attrs" "h5dump -A: the run is complete"

# -o appends: a second run, the first kept.
run_check "--check concatenate_rows -o X.h5 (append)" "$TUNE" --check "$ds/concatenate_rows.hlo" -o "$X"
nruns=$(h5ls "$X/runs" 2>/dev/null | grep -c 'Group')
if [ "$nruns" -eq 2 ]; then ok "a second run was appended (2 runs)"; else not_ok "$nruns runs after two --check -o"; fi
nf=$(fusion_groups "$X" | wc -l)
if [ "$nf" -eq 2 ]; then ok "both runs hold their fusion"; else not_ok "$nf fusion groups in 2 runs"; fi

# An independent reader: h5py + numpy.  Its ok/not ok lines count here.
if [ -n "$PYTHON3" ] && "$PYTHON3" -c 'import h5py, numpy' 2>/dev/null; then
  "$PYTHON3" "$TUNE_SRCDIR/tests/integration/store_h5py.py" "$X" >"$TMPD/py" 2>&1
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok "${line#ok - }" ;;
      "not ok - "*) not_ok "${line#not ok - }" ;;
      *) echo "  # $line" ;;
    esac
  done <"$TMPD/py"
else
  echo "# h5py/numpy not available to ${PYTHON3:-python3}: skipping the h5py reader"
fi

# kill -9 mid-run: every fusion finished before the kill is in the file,
# complete; the file opens; and the next run appends to it.  Small fusions
# come first so that one finishes soon; the rest keep the run busy.
K="$TMPD/K.h5"
set --
for f in concatenate_rows column_max softmax layernorm rmsnorm matmul_bias_gelu cross_entropy_loss \
         adam_update batchnorm_stats l2_normalize swiglu_bf16 bf16_matmul dot_f32_highest row_sum_long; do
  [ -f "$ds/$f.hlo" ] && set -- "$@" "$ds/$f.hlo"
done
"$TUNE" --check --quiet "$@" -o "$K" >/dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 1200 ] && [ "$(fusion_groups "$K" | wc -l)" -lt 1 ] && kill -0 $pid 2>/dev/null; do
  sleep 0.1
  i=$((i + 1))
done
if kill -9 $pid 2>/dev/null; then killed=1; else killed=0; fi
wait $pid 2>/dev/null
if [ "$killed" -eq 1 ]; then ok "killed tune --check with kill -9 mid-run"; else
  echo "# tune --check finished before the kill; the file must be complete all the same"; fi
expect_status 0 "h5dump reads the file after kill -9" h5dump -H "$K"
fusion_groups "$K" >"$TMPD/kf"
nk=$(wc -l <"$TMPD/kf" | tr -d ' ')
if [ "$nk" -ge 1 ]; then ok "$nk finished fusion(s) kept"; else not_ok "no fusion in the file after the kill"; fi
h5ls -r "$K" >"$TMPD/kls" 2>&1
incomplete=""
while IFS= read -r g; do
  for part in candidates hlo reference errors; do
    grep -q "^$g/$part " "$TMPD/kls" || incomplete="$incomplete $g/$part"
  done
done <"$TMPD/kf"
if [ -z "$incomplete" ]; then ok "every kept fusion is complete (candidates, hlo, reference, errors)"; else
  not_ok "incomplete fusions:$incomplete"; fi
if [ "$killed" -eq 1 ]; then
  h5dump -A "$K" >"$TMPD/kattrs" 2>&1
  expect_grep '"running"' "$TMPD/kattrs" "the killed run still says running"
fi
run_check "a later --check -o appends to the file of the killed run" "$TUNE" --check "$ds/concatenate_rows.hlo" -o "$K"
nk2=$(fusion_groups "$K" | wc -l)
if [ "$nk2" -eq $((nk + 1)) ]; then ok "the killed run's fusions are still there after the next run"; else
  not_ok "$nk2 fusion groups after appending to $nk"; fi

finish
