#!/bin/sh
# threads.sh — how many threads check candidates (tuner/cli/cli_threads.c):
# OMP_NUM_THREADS beyond the --threads limit (4 per core, at least 64) is
# capped to it with a warning instead of being obeyed (issue 11's memory
# blow-up); within it, it is obeyed silently.  Under mpirun (when built
# with MPI), an explicit --threads whose ranks x threads exceed the node's
# cores is warned about, and the results stay those of one process.
# --threads bounds the whole process, the reference evaluation included.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
f="$TUNE_SRCDIR/tests/mpi/two_units.hlo"
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
max=$((4 * cores))
[ "$max" -ge 64 ] || max=64
big=$((max + 36))

OMP_NUM_THREADS=1 "$TUNE" --check "$f" --budget 4 --json >one.json 2>one.err
st=$?
if [ "$st" -eq 0 ] && [ ! -s one.err ]; then ok "OMP_NUM_THREADS=1: checked, nothing on stderr"; else
  not_ok "OMP_NUM_THREADS=1: exit $st"; sed 's/^/  # /' one.err | head -n 3; fi
OMP_NUM_THREADS=$big "$TUNE" --check "$f" --budget 4 --json >big.json 2>big.err
st=$?
if [ "$st" -eq 0 ]; then ok "OMP_NUM_THREADS=$big: checked (exit 0)"; else not_ok "OMP_NUM_THREADS=$big: exit $st"; fi
if [ "$(cat big.err)" = "tune: OMP_NUM_THREADS=$big: more than $max threads (4 per core, at least 64) only take memory; using $max" ]
then ok "OMP_NUM_THREADS=$big: capped to $max, and said so"; else
  not_ok "OMP_NUM_THREADS=$big: no warning of the cap"; sed 's/^/  # /' big.err | head -n 3; fi
if [ -s one.json ] && cmp -s one.json big.json; then ok "the same results as one thread"; else
  not_ok "the results differ from one thread's"; fi
OMP_NUM_THREADS=2 "$TUNE" --check "$f" --budget 4 --json >two.json 2>two.err
if [ ! -s two.err ] && cmp -s one.json two.json; then ok "OMP_NUM_THREADS=2: obeyed without a word"; else
  not_ok "OMP_NUM_THREADS=2: stderr or results differ"; sed 's/^/  # /' two.err | head -n 3; fi

# --threads 1 is the process's count, not only the candidates': the
# reference evaluation's parallel loops (layernorm's row reductions) used
# to start a second OpenMP thread whatever --threads said.  libgomp keeps
# a thread it started until the process ends, so sampling the process's
# thread count while it runs sees any that was ever started.
threads_seen() { # prints the most threads seen in /proc/PID/status
  most=0
  # An ended child stays a zombie until waited for: stop at its state Z.
  while st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) && [ -n "$st" ] &&
    [ "$st" != Z ]; do
    n=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -gt "$most" ] && most=$n
    sleep 0.02
  done
  echo "$most"
}
if [ -r /proc/self/status ] && [ "$cores" -ge 2 ]; then
  OMP_NUM_THREADS=2 "$TUNE" --check "$TUNE_SRCDIR/datasets/layernorm.hlo" --budget 32 --threads 1 -q \
    -o "$TMPD/t1.h5" >/dev/null 2>t1.err &
  pid=$!
  most=$(threads_seen "$pid")
  wait "$pid"
  st=$?
  if [ "$st" -eq 0 ] && [ "$most" -eq 1 ]; then ok "--threads 1 (OMP_NUM_THREADS=2): one thread all along"; else
    not_ok "--threads 1 (OMP_NUM_THREADS=2): exit $st, up to $most threads"; fi
  # The same run without --threads does use the second core, or the
  # check above could not fail.
  OMP_NUM_THREADS=2 "$TUNE" --check "$TUNE_SRCDIR/datasets/layernorm.hlo" --budget 32 -q \
    -o "$TMPD/t2.h5" >/dev/null 2>t2.err &
  pid=$!
  most=$(threads_seen "$pid")
  wait "$pid"
  if [ "$most" -ge 2 ]; then ok "without --threads (OMP_NUM_THREADS=2): $most threads seen"; else
    not_ok "without --threads: only $most thread seen, so the check above proves nothing"; fi
fi

if [ -n "${TUNE_MPIRUN:-}" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun_() {
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
      "$TUNE_MPIRUN" --oversubscribe --bind-to none -x ASAN_OPTIONS -x UBSAN_OPTIONS "$@"
  }
  # Two ranks on this node, each asked for as many threads as it has cores.
  mpirun_ -n 2 "$TUNE" --check "$f" --budget 4 --json --threads "$cores" >m.json 2>m.err
  st=$?
  want="tune: 2 ranks on this node x $cores threads each = $((2 * cores)) threads on $cores cores"
  if [ "$st" -eq 0 ] && grep -q "^$want: " m.err; then ok "mpirun -n 2 --threads $cores: warned (2 x $cores > $cores cores)"
  else not_ok "mpirun -n 2 --threads $cores: exit $st, no warning"; sed 's/^/  # /' m.err | head -n 3; fi
  if cmp -s one.json m.json; then ok "and the results are one process's"; else not_ok "the results differ"; fi
  # No count given: the node's cores are shared among the ranks, no warning.
  mpirun_ -n 2 "$TUNE" --check "$f" --budget 4 --json >d.json 2>d.err
  if ! grep -q 'threads on' d.err && cmp -s one.json d.json; then ok "mpirun -n 2 without --threads: no warning, same results"
  else not_ok "mpirun -n 2 without --threads"; sed 's/^/  # /' d.err | head -n 3; fi
fi
finish
