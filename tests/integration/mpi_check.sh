#!/bin/sh
# mpi_check.sh — `tune --check FILE...` across MPI ranks (issue 20): under
# mpirun -n 1, -n 2 and -n 3 the units are shared out (each rank logs the
# units it checked), yet rank 0 prints what one process without MPI prints,
# line for line, exits with its status, and stores the same results (wall
# times, start and end times, the run's id and the host aside).  A
# divergence found by a worker rank alone makes the exit status 1.  Skips
# when tune was built without MPI.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ -z "${TUNE_MPIRUN:-}" ]; then echo "skip: tune was built without MPI"; exit 77; fi
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# As in mpi_sweep.sh: the ranks run without LeakSanitizer (Open MPI's
# plugins leave allocations that cannot be suppressed by name).
mpirun_() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    "$TUNE_MPIRUN" --oversubscribe --bind-to none -x ASAN_OPTIONS -x UBSAN_OPTIONS "$@"
}

# Dataset files the nightly compiler miscompiles (row_sum_long within 6
# candidates), clean ones, and a module of two units (a fusion and a reduce
# outside it, the reduce miscompiled too).
files="$ds/complex_tan_tanh_bug1.hlo $ds/cumsum_cast_bug4.hlo $ds/scatter_s8_set_bug2.hlo $ds/transpose_heads.hlo
  $ds/row_sum_long.hlo $ds/concatenate_rows.hlo $TUNE_SRCDIR/tests/mpi/two_units.hlo"
nunits=8
set -- --compiler nightly --budget 6 --threads 1

# canon FILE: h5dump of the results file with what may differ between two
# runs left out: the file's name, the run's id (start time and pid), the
# start and end times, the command, the host, and the wall_time attribute
# and compound column.
canon() {
  h5dump -w0 "$1" | sed -e 1d -e 's/^\( *GROUP "\)[0-9]\{8\}T[0-9]\{6\}Z-[0-9]*"/\1RUN"/' | awk '
    skip { if ($0 == skip) skip = ""; next }
    /^ *ATTRIBUTE "(wall_time|started|created_ns|finished|host|command)" \{$/ { match($0, /^ */); skip = substr($0, 1, RLENGTH) "}"; next }
    /DATATYPE *H5T_COMPOUND/ { incomp = 1; nm = 0; wt = 0 }
    incomp && /"[a-z_0-9]*";$/ { nm++; if ($0 ~ /"wall_time";$/) wt = nm }
    /^ *DATASPACE/ { incomp = 0 }
    /^ *(\([0-9]*\): )?\{$/ || /^ *\}, \{$/ { inrow = 1; field = 0; print; next }
    inrow && /^ *\}[,]?$/ { inrow = 0; print; next }
    inrow { field++; if (wt && field == wt) { print "WALL_TIME"; next } }
    { print }'
}
# What --check prints, its wall times aside.
untimed() { sed 's/ checked in [0-9.]* s/ checked in T s/' "$1"; }
# tune's own error lines on stderr (not its per-unit log, nor the warning
# that 3 ranks x 1 thread exceed the cores of a small machine, nor mpirun's).
errors() {
  grep -e '^tune: ' -e ': error: ' "$1" | grep -v -e ': rank [0-9]* on [^,]*, [0-9.]* s; unit ' -e ' ranks on this node x '
}

mkdir ref
# shellcheck disable=SC2086
(cd ref && "$TUNE" --check $files "$@" -o out.h5 >out 2>err)
st=$?
if [ "$st" -eq 1 ]; then ok "one process: divergences found (exit 1)"; else
  not_ok "one process: exit $st"; sed 's/^/  # /' ref/err | tail -n 5; fi
canon ref/out.h5 >ref.canon
n=$(grep -c '^fusion .* from .*: \(verified\|diverged\)$' ref/out)
if [ "$n" = "$nunits" ]; then ok "one process checked all $nunits units"; else not_ok "one process checked $n units"; fi
grep -q '^fusion fused_reduce (reduce) from .*/row_sum_long.hlo: diverged$' ref/out &&
  grep -q '^fusion r (reduce) from .*/two_units.hlo: diverged$' ref/out &&
  ok "the defects are found (row_sum_long, two_units' reduce)" || not_ok "the expected divergences are missing"
if [ "$(grep -c 'GROUP "[0-9a-f]\{16\}"' ref.canon)" = "$nunits" ]; then ok "one process stored $nunits fusions"; else
  not_ok "one process stored $(grep -c 'GROUP "[0-9a-f]\{16\}"' ref.canon) fusions"; fi

for n in 1 2 3; do
  mkdir "n$n"
  # shellcheck disable=SC2086
  (cd "n$n" && mpirun_ -n $n "$TUNE" --check $files "$@" -o out.h5 >out 2>err)
  st=$?
  if [ "$st" -eq 1 ]; then ok "mpirun -n $n: exit 1, as one process"; else
    not_ok "mpirun -n $n: exit $st"; sed 's/^/  # /' "n$n/err" | tail -n 8; fi
  if [ -s ref/out ] && untimed ref/out >a && untimed "n$n/out" >b && cmp -s a b; then
    ok "mpirun -n $n: stdout identical to one process's, in its order"; else
    not_ok "mpirun -n $n: stdout differs"; diff a b | head -n 10 | sed 's/^/  # /'; fi
  canon "n$n/out.h5" >"n$n.canon"
  if [ -s ref.canon ] && cmp -s ref.canon "n$n.canon"; then ok "mpirun -n $n: stored results identical to one process"; else
    not_ok "mpirun -n $n: stored results differ"; diff ref.canon "n$n.canon" | head -n 10 | sed 's/^/  # /'; fi
  # Each unit is logged once, with the rank that checked it: shared out.
  # One rank is one process, as without MPI: nothing to share or log.
  want=$nunits
  [ $n -gt 1 ] || want=0
  logged=$(grep -c ': rank [0-9]* on [^,]*, [0-9.]* s; unit [0-9]* of '"$nunits" "n$n/err")
  if [ "$logged" = "$want" ]; then ok "mpirun -n $n: $want units logged with their rank"; else
    not_ok "mpirun -n $n: $logged unit log lines, wanted $want"; sed 's/^/  # /' "n$n/err" | head -n 5; fi
  r=1
  while [ $r -lt $n ]; do
    expect_grep ": rank $r on [^,]*, [0-9.]* s; unit " "n$n/err" "mpirun -n $n: rank $r checked units"
    r=$((r + 1))
  done
done

# A divergence found only by a worker rank fails the run.  The jobs go out
# largest first: row_sum_long (its reduce is the largest) to rank 1, the
# transpose to rank 0's own thread.
mpirun_ -n 2 "$TUNE" --check "$ds/row_sum_long.hlo" "$ds/transpose_heads.hlo" "$@" >w.out 2>w.err
st=$?
expect_grep "row_sum_long.hlo: fused_reduce: rank 1 on " w.err "the divergent unit was checked by rank 1"
if [ "$st" -eq 1 ] && grep -q 'row_sum_long.hlo: diverged$' w.out; then ok "its divergence makes the exit status 1"; else
  not_ok "rank 1's divergence: exit $st"; sed 's/^/  # /' w.out | head -n 3; fi

# A file that does not parse and one with nothing to tune, between units:
# every line in one process's order, the same errors, exit 2; and --json.
printf 'HloModule bad\n\nENTRY main {\n  ROOT p = f32[8] parameterx(0)\n}\n' >bad.hlo
mixed="$ds/row_sum_long.hlo bad.hlo $TUNE_SRCDIR/tests/mpi/idle.hlo $TUNE_SRCDIR/tests/mpi/two_units.hlo"
# shellcheck disable=SC2086
"$TUNE" --check $mixed "$@" >m1.out 2>m1.err
st1=$?
# shellcheck disable=SC2086
mpirun_ -n 3 "$TUNE" --check $mixed "$@" >m3.out 2>m3.err
st3=$?
if [ "$st1" -eq 2 ] && [ "$st3" -eq 2 ]; then ok "a bad file: exit 2 with and without MPI"; else
  not_ok "a bad file: exit $st1 without MPI, $st3 with"; fi
untimed m1.out >a
untimed m3.out >b
if grep -q 'idle.hlo: nothing to tune' a && cmp -s a b; then ok "a bad file: stdout identical, in order"; else
  not_ok "a bad file: stdout differs"; diff a b | head -n 6 | sed 's/^/  # /'; fi
errors m1.err >a
errors m3.err >b
if grep -q "^bad.hlo:4:19: error: unknown opcode 'parameterx'" a && cmp -s a b; then
  ok "a bad file: the same error lines"; else not_ok "a bad file: the error lines differ"; diff a b | head -n 6 | sed 's/^/  # /'; fi
# shellcheck disable=SC2086
"$TUNE" --check $mixed "$@" --json >j1.out 2>/dev/null
# shellcheck disable=SC2086
mpirun_ -n 3 "$TUNE" --check $mixed "$@" --json >j3.out 2>/dev/null
if grep -q '"status": "nothing to tune"' j1.out && cmp -s j1.out j3.out; then ok "--json: the same document"; else
  not_ok "--json differs"; diff j1.out j3.out | head -n 6 | sed 's/^/  # /'; fi

# A worker killed mid-check: rank 2 is stopped on its first unit (the test
# hook of mpi_sweep.sh's hung worker), and killed with kill -9 once rank 0
# has stored a unit, so the kill lands mid-unit with results written.  Open
# MPI cannot carry on without a rank: the job ends, rank 0 says what that
# means, and nothing already written is lost: every unit rank 0 logged as
# checked is stored, each exactly as one process stores it, and stdout holds
# one process's first lines.
kfiles="$files $ds/column_max.hlo $ds/row_sum_sq_ragged.hlo $ds/pad_negative_interior.hlo"
set -- --compiler nightly --budget 40 --threads 1
mkdir kref kill
# shellcheck disable=SC2086
(cd kref && "$TUNE" --check $kfiles "$@" -o out.h5 >out 2>err)
# shellcheck disable=SC2086
(cd kill && TUNE_TEST_MPI_HANG_RANK=2 mpirun_ -x TUNE_TEST_MPI_HANG_RANK -n 3 "$TUNE" --check $kfiles "$@" \
  -o out.h5 >out 2>err) &
job=$!
victim=""
i=0
while [ $i -lt 1200 ] && [ -z "$victim" ]; do
  if grep -q '; unit 1 of' kill/err 2>/dev/null; then
    for p in $(pgrep -f -- "--check .*--budget 40 --threads 1 -o out.h5"); do
      if { tr '\0' '\n' <"/proc/$p/environ" | grep -qx 'OMPI_COMM_WORLD_RANK=2'; } 2>/dev/null; then victim=$p; fi
    done
  fi
  [ -n "$victim" ] || { sleep 0.1; i=$((i + 1)); }
done
[ -n "$victim" ] && kill -9 "$victim"
wait $job
st=$?
run=$(h5ls kill/out.h5/runs 2>/dev/null | awk '{ print $1 }')
stored=$(h5ls "kill/out.h5/runs/$run/fusions" 2>/dev/null | grep -c Group)
logged=$(grep -c ': rank [0-9]* on [^,]*, [0-9.]* s; unit ' kill/err)
total=$(grep -c '^fusion ' kref/out)
if [ -n "$victim" ] && [ "$st" -ne 0 ] && [ "$st" -ne 1 ] && [ "$stored" -lt "$total" ]; then
  ok "rank 2 killed mid-check: the job ends (exit $st) with $stored of $total units stored"
else
  not_ok "the kill did not land mid-check (victim '$victim', exit $st, $stored of $total stored)"
fi
expect_grep "^tune: MPI: the job is being ended (a rank died, or the job was cancelled): what was stored stays (every unit logged as checked, when there is a results file)" \
  kill/err "rank 0 says the job is being ended and what was kept"
# Rank 0 stores a unit and then logs it, so the kill can land between the
# two: one stored unit more than were logged is the promise kept, one
# fewer would be a unit logged and lost.
if [ "$stored" -ge "$logged" ] && [ "$stored" -le $((logged + 1)) ]; then
  ok "every unit logged as checked ($logged) is stored ($stored)"; else
  not_ok "$logged units logged, $stored stored"; fi
status=$(h5dump -a "/runs/$run/status" kill/out.h5 2>/dev/null | sed -n 's/^ *(0): "\(.*\)"$/\1/p')
if [ "$status" = "running" ]; then ok "the run stays 'running'"; else not_ok "the run's status is '$status'"; fi
# canon_group DUMP: h5dump -g of one fusion group, the run id and wall times left out.
canon_group() { sed -e 1d "$1" | awk '
  skip { if ($0 == skip) skip = ""; next }
  /^ *ATTRIBUTE "wall_time" \{$/ { match($0, /^ */); skip = substr($0, 1, RLENGTH) "}"; next }
  /DATATYPE *H5T_COMPOUND/ { incomp = 1; nm = 0; wt = 0 }
  incomp && /"[a-z_0-9]*";$/ { nm++; if ($0 ~ /"wall_time";$/) wt = nm }
  /^ *DATASPACE/ { incomp = 0 }
  /^ *(\([0-9]*\): )?\{$/ || /^ *\}, \{$/ { inrow = 1; field = 0; print; next }
  inrow && /^ *\}[,]?$/ { inrow = 0; print; next }
  inrow { field++; if (wt && field == wt) { print "WALL_TIME"; next } }
  { sub(/"\/runs\/[^\/]*\//, "\"/runs/RUN/"); print }'; }
same=0
for fp in $(h5ls "kill/out.h5/runs/$run/fusions" 2>/dev/null | awk '{ print $1 }'); do
  kr=$(h5ls kref/out.h5/runs | awk '{ print $1 }')
  h5dump -w0 -g "/runs/$kr/fusions/$fp" kref/out.h5 >g1 2>/dev/null
  h5dump -w0 -g "/runs/$run/fusions/$fp" kill/out.h5 >g2 2>/dev/null
  if grep -q 'GROUP' g1 && canon_group g1 >c1 && canon_group g2 >c2 && cmp -s c1 c2; then same=$((same + 1)); else
    diff c1 c2 | head -n 4 | sed 's/^/  # /'; fi
done
if [ "$stored" -gt 0 ] && [ "$same" = "$stored" ]; then ok "each stored unit is exactly one process's ($same)"; else
  not_ok "$same of $stored stored units are one process's"; fi
untimed kref/out >a
untimed kill/out >b
# (Lines wait for every unit before them: it may be empty.)
if [ -s a ] && [ "$(head -c "$(wc -c <b)" a)" = "$(cat b)" ]; then ok "stdout is the start of one process's ($(grep -c '^fusion ' b) units)"
else not_ok "stdout is not the start of one process's"; diff a b | head -n 4 | sed 's/^/  # /'; fi

# A worker that hangs (the hook stops rank 2 on its first unit): with a
# time budget of 1 s rank 0 gives it up after 3 x 1 + 30 s, prints its
# unit as timed out with the rank and host in one process's place for it,
# stores the others, and ends the job with the status one process has.
set -- --compiler nightly --budget 6 --threads 1 --time-budget 1
hfiles="$ds/complex_tan_tanh_bug1.hlo $ds/cumsum_cast_bug4.hlo $ds/transpose_heads.hlo $ds/row_sum_long.hlo"
# shellcheck disable=SC2086
TUNE_TEST_MPI_HANG_RANK=2 timeout 600 "$TUNE_MPIRUN" --oversubscribe --bind-to none -x TUNE_TEST_MPI_HANG_RANK \
  -x ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" -n 3 "$TUNE" --check $hfiles "$@" -o hang.h5 \
  >hang.out 2>hang.err
st=$?
if [ "$st" -eq 1 ]; then ok "a hung worker: the job ends by itself, exit 1 (row_sum_long diverged)"; else
  not_ok "a hung worker: exit $st (124: still running after 600 s)"; grep 'tune:' hang.err | tail -n 5 | sed 's/^/  # /'; fi
grep "^fusion " hang.out | sed -n 3p >h3
if grep -q "^fusion fused_transpose from .*/transpose_heads.hlo: timed out: rank 2 on [^ ]* gave no answer in [0-9]* s" h3
then ok "the hung rank's unit: timed out, with its rank and host, in its place"; else
  not_ok "no timed-out line for the hung rank's unit"; grep '^fusion' hang.out | sed 's/^/  # /'; fi
stored=$(h5ls -r hang.h5 2>/dev/null | grep -c '/fusions/[0-9a-f]* Group')
if [ "$stored" = 3 ]; then ok "the other 3 units are stored"; else not_ok "$stored units stored, wanted 3"; fi
finish
