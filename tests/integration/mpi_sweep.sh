#!/bin/sh
# mpi_sweep.sh — `tune --sweep` across MPI ranks (issue 20): the results
# stored by mpirun -n 1, -n 2 and -n 3 are those of one process without
# MPI (wall times, start and end times and the command line aside), what
# changed is reported the same, and a worker rank killed with kill -9
# mid-sweep loses nothing: rerunning the command resumes the run and ends
# with the same results.  Skips when tune was built without MPI.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ -z "${TUNE_MPIRUN:-}" ]; then echo "skip: tune was built without MPI"; exit 77; fi
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1
# Open MPI refuses root unless told; the tests run as whoever runs make.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# In a sanitizer build the ranks run without LeakSanitizer: Open MPI leaves
# allocations of its plugins, which it unloads at exit, so they cannot even
# be named in a suppression.  AddressSanitizer and UBSan still check every
# rank; the runs without mpirun below keep leak checking.
mpirun_() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    "$TUNE_MPIRUN" --oversubscribe --bind-to none -x ASAN_OPTIONS -x UBSAN_OPTIONS "$@"
}

# Quick fusions, some of which the nightly compiler miscompiles, and a
# module of two units (a fusion and a reduce outside it).
cat >s.cfg <<EOF2
sweep: {
  corpus = [ "$ds/complex_tan_tanh_bug1.hlo", "$ds/cumsum_cast_bug4.hlo", "$ds/scatter_s8_set_bug2.hlo",
             "$ds/pad_negative_interior.hlo", "$ds/transpose_heads.hlo", "$ds/topk_sort_axis0_bug3.hlo",
             "$ds/concatenate_rows.hlo", "$ds/row_sum_long.hlo", "$ds/column_max.hlo",
             "$ds/row_sum_sq_ragged.hlo", "$TUNE_SRCDIR/tests/mpi/two_units.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "nightly";
  inputs = "naive";
  budget = 6;
  threads = 1;
  output = "unused.h5";
};
EOF2
nunits=12

# canon FILE: the run's stored results with what may differ between runs
# left out: the full report (every candidate, every metric), the groups and
# datasets of the run, the module texts and the error maps.
canon() {
  cp "$1" canon.h5 # the report names its file
  set -- canon.h5
  "$TUNE" --report "$1" --format json |
    grep -v -e '"wall_time"' -e '"started"' -e '"finished"' -e '"command"' -e '"results_file"'
  h5ls -r "$1/runs/t-tpu-v5e" | sort
  for d in $(h5ls -r "$1/runs/t-tpu-v5e" | awk '$2 == "Dataset" && ($1 ~ /\/hlo$/ || $1 ~ /\/errors\//) { print $1 }' | sort); do
    h5dump -d "/runs/t-tpu-v5e$d" "$1" | sed 1d
  done
}

"$TUNE" --sweep s.cfg -o ref.h5 --run-id t >ref.out 2>ref.err
st=$?
if [ "$st" -eq 1 ]; then ok "one process: the sweep completes with findings (exit 1)"; else
  not_ok "one process: exit $st"; sed 's/^/  # /' ref.err | tail -n 5; fi
canon ref.h5 >ref.canon
n=$(grep -c '"ncandidates"' ref.canon)
if [ "$n" = "$nunits" ]; then ok "one process stored all $nunits units"; else not_ok "one process stored $n units"; fi
if grep -q '"name": "s"' ref.canon && grep -q '"name": "r"' ref.canon; then ok "both units of the two-unit module"; else
  not_ok "the two-unit module's units are missing"; fi

for n in 1 2 3; do
  mpirun_ -n $n "$TUNE" --sweep s.cfg -o "n$n.h5" --run-id t >"n$n.out" 2>"n$n.err"
  st=$?
  if [ "$st" -eq 1 ]; then ok "mpirun -n $n: the sweep completes with findings (exit 1)"; else
    not_ok "mpirun -n $n: exit $st"; sed 's/^/  # /' "n$n.err" | tail -n 8; fi
  canon "n$n.h5" >"n$n.canon"
  if [ -s ref.canon ] && cmp -s ref.canon "n$n.canon"; then ok "mpirun -n $n: stored results identical to one process"; else
    not_ok "mpirun -n $n: stored results differ"; diff ref.canon "n$n.canon" | head -n 10 | sed 's/^/  # /'; fi
  if cmp -s ref.out "n$n.out"; then ok "mpirun -n $n: the same changes reported"; else
    not_ok "mpirun -n $n: the changes differ"; diff ref.out "n$n.out" | head -n 6 | sed 's/^/  # /'; fi
done
# Rank 0 logs each unit with its rank, host, verdicts and the progress.
expect_grep "\[rank [12] on [^,]*, [0-9.]* s, match=[0-9]*.*; unit [0-9]* of $nunits, ETA [0-9]* s\]" n3.err \
  "units checked by other ranks are logged with rank, host, verdicts and ETA"
expect_grep "\[rank 0 on " n3.err "rank 0 checks units too"
if [ "$(grep -c '; unit [0-9]* of' n3.err)" = "$nunits" ]; then ok "one log line per unit"; else
  not_ok "$(grep -c '; unit [0-9]* of' n3.err) unit lines for $nunits units"; fi

# A module of five units on two ranks: each rank evaluates the whole
# module once to capture its units' inputs (tuner/run/capture_cache.h), not
# once per unit.  The test hook logs each whole-module evaluation.
cat >c.cfg <<EOF2
sweep: {
  corpus = [ "$TUNE_SRCDIR/tests/mpi/chain_units.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "naive";
  budget = 2;
  threads = 1;
  output = "unused.h5";
};
EOF2
TUNE_TEST_MPI_LOG_CAPTURES=1 mpirun_ -n 2 -x TUNE_TEST_MPI_LOG_CAPTURES "$TUNE" --sweep c.cfg -o chain.h5 --run-id t \
  >chain.out 2>chain.err
st=$?
ncap=$(grep -c 'evaluated .*chain_units.hlo to capture' chain.err)
nun=$(grep -c '; unit [0-9]* of 5' chain.err)
if [ "$st" -eq 0 ] && [ "$nun" -eq 5 ] && [ "$ncap" -ge 1 ] && [ "$ncap" -le 2 ]; then
  ok "five units on two ranks: the module evaluated $ncap times (at most once a rank)"
else
  not_ok "five units on two ranks: exit $st, $nun units logged, the module evaluated $ncap times"
  tail -n 5 chain.err | sed 's/^/  # /'
fi

# A worker killed mid-sweep, while it holds a unit: rank 2 is made to hang
# on its first unit (the test hook), so the kill always lands before every
# unit is stored, however fast the machine (on a quiet one the other ranks
# once finished all ten first).  Single-unit files only: a resumed sweep
# skips every file the run holds a fusion of (sweep_state.h).
sed -e 's/budget = 6;/budget = 40;/' -e 's|, "[^"]*/two_units.hlo"||' s.cfg >k.cfg
nunits=10
"$TUNE" --sweep k.cfg -o kref.h5 --run-id t >/dev/null 2>kref.err
TUNE_TEST_MPI_HANG_RANK=2 mpirun_ -x TUNE_TEST_MPI_HANG_RANK -n 3 "$TUNE" --sweep k.cfg -o kill.h5 --run-id t \
  >kill.out 2>kill.err &
job=$!
victim=""
i=0
while [ $i -lt 600 ] && [ -z "$victim" ]; do
  if grep -q 'sweep done' kill.err 2>/dev/null; then break; fi
  if grep -q '; unit 1 of' kill.err 2>/dev/null; then
    for p in $(pgrep -f -- '--sweep k.cfg -o kill.h5'); do
      if { tr '\0' '\n' <"/proc/$p/environ" | grep -qx 'OMPI_COMM_WORLD_RANK=2'; } 2>/dev/null; then victim=$p; fi
    done
  fi
  [ -n "$victim" ] || { sleep 0.1; i=$((i + 1)); }
done
if [ -n "$victim" ]; then kill -9 "$victim"; fi
wait $job
st=$?
# The kill may land while rank 0 is appending a fusion: the file then holds
# a change half made (a hot journal), whose group h5ls would count.  A tune
# command rolls it back first, as the rerun below will.
"$TUNE" --report kill.h5 --format json >/dev/null 2>&1
stored=$(h5ls "kill.h5/runs/t-tpu-v5e/fusions" 2>/dev/null | grep -c Group)
if [ -n "$victim" ] && [ "$st" -ne 0 ] && [ "$st" -ne 1 ] && [ "$stored" -lt "$nunits" ]; then
  ok "rank 2 killed mid-sweep: the job ends (exit $st) with $stored of $nunits units stored"
else
  not_ok "the kill did not land mid-sweep (victim '$victim', exit $st, $stored units stored)"
fi
mpirun_ -n 2 "$TUNE" --sweep k.cfg -o kill.h5 --run-id t >resume.out 2>resume.err
st=$?
if [ "$st" -eq 1 ]; then ok "the rerun completes (exit 1)"; else
  not_ok "the rerun exited $st"; grep -v -e '^-*$' -e 'mpirun\|MPI_\|Process name\|Exit code' resume.err | tail -n 12 | sed 's/^/  # /'; fi
expect_grep "resuming run t-tpu-v5e of .*: $stored fusions already checked" resume.err "the rerun resumes the killed run"
now=$(sed -n 's/.*run t-tpu-v5e: \([0-9]*\) fusions checked now.*/\1/p' resume.err)
if [ "$now" = "$((nunits - stored))" ]; then ok "and checks only the $now units not stored"; else
  not_ok "the rerun checked $now units, $((nunits - stored)) were missing"; fi
canon kref.h5 >kref.canon
canon kill.h5 >kill.canon
if [ -s kref.canon ] && cmp -s kref.canon kill.canon; then ok "killed and resumed: results identical to one process"; else
  not_ok "killed and resumed: results differ"; diff kref.canon kill.canon | head -n 10 | sed 's/^/  # /'; fi

# A worker that hangs (a test hook stops rank 2 on its first unit): with a
# time budget of 1 s, rank 0 gives it up after 3 x 1 + 30 s, logs its unit
# as timed out with the rank and host, stores every other unit, and ends
# the job instead of waiting for the hung rank forever.  The ten units are
# copies of one fusion, of equal planned cost, so that every rank is sent
# a second job ahead of the first (mpi_sweep.c, ahead_ok): the hung rank's,
# which it never began, must be checked by the others.
mkdir -p same
for i in 0 1 2 3 4 5 6 7 8 9; do cp "$ds/concatenate_rows.hlo" "same/c$i.hlo"; done
cat >h.cfg <<EOF2
sweep: {
  corpus = [ "$PWD/same/*.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "nightly";
  inputs = "naive";
  budget = 6;
  threads = 1;
  time_budget = 1.0;
  output = "unused.h5";
};
EOF2
TUNE_TEST_MPI_HANG_RANK=2 timeout 600 "$TUNE_MPIRUN" --oversubscribe --bind-to none -x TUNE_TEST_MPI_HANG_RANK \
  -x ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" -n 3 "$TUNE" --sweep h.cfg -o hang.h5 --run-id t \
  >hang.out 2>hang.err
st=$?
if [ "$st" -eq 0 ] || [ "$st" -eq 1 ]; then ok "a hung worker: the job ends by itself (exit $st)"; else
  not_ok "a hung worker: exit $st (124: still running after 600 s)"; grep 'tune:' hang.err | tail -n 5 | sed 's/^/  # /'; fi
expect_grep ": timed out: rank 2 on [^ ]* gave no answer in [0-9]* s" hang.err "the hung rank's unit is logged as timed out, with its rank and host"
stored=$(h5ls "hang.h5/runs/t-tpu-v5e/fusions" 2>/dev/null | grep -c Group)
if [ "$stored" = "$((nunits - 1))" ]; then ok "every other unit is stored ($stored)"; else
  not_ok "$stored units stored, wanted $((nunits - 1))"; fi
finish
