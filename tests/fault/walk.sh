#!/bin/sh
# walk.sh — the malloc-failure walk (issue 11): run tune --print -o, --eval -o,
# --check -o and --sweep on a small fusion, and --report on the results of
# the sweep, once for each allocation N with
# tests/fault/failmalloc.so failing the Nth, and require at every N:
#   - no crash: the exit status is 0, 1 or 2, never a signal or an abort;
#   - exit 2 comes with a message on stderr;
#   - exit 0 or 1 (the failure was recovered from) gives the clean run's
#     status and output;
#   - the output file is either untouched (byte-identical) or complete, and
#     the run already in a results file reads back unchanged;
#   - no temporary file is left next to it;
#   - in the sanitizer build, no ASan/UBSan report and no leak.
# When tune's own allocation fails, the message must say out of memory.
# HDF5 1.10 and libconfig do not survive their own allocations failing
# (they dereference NULL, or HDF5 crashes in its exit handler on a file it
# failed to close), HDF5 may call exit(-1) and libgomp exit(1): tune turns
# each into exit 2 with a message (tuner/store/libguard.h), so a signal is
# a failure wherever it happened.  A sanitizer report (exit 99 in the
# sanitizer build) fails too, except leaks of blocks HDF5 allocated itself
# after its own allocation failed (--strict fails on those as well).
#
#   tests/fault/walk.sh                 a deterministic sample of N (make check):
#                                       every N of --print, 20 of each other
#                                       command (6 in the sanitizer build)
#   tests/fault/walk.sh --full          every N (minutes to hours)
#   tests/fault/walk.sh --samples K     about K values of N per command
#   tests/fault/walk.sh --strict        HDF5's own leaks (ASan) fail the walk too,
#                                       and so do HDF5 1.10's heap corruption
#                                       after a failed H5FL_blk_malloc
#                                       (failmalloc.c) and an ASan error inside
#                                       HDF5 after its own allocation failed
#                                       (its exit handler frees twice), counted
#                                       as a library giving up otherwise
#   tests/fault/walk.sh --last K        only the last K allocations
#   tests/fault/walk.sh --range A-B     only N from A to B (a chunk of a
#                                       long walk; B past the end is the end)
#   tests/fault/walk.sh --in LIB        count and fail only LIB's allocations
#                                       (TUNE_FAILMALLOC_IN: libhdf5, libconfig)
#   tests/fault/walk.sh --step K        every Kth N (1, K+1, 2K+1...)
#   tests/fault/walk.sh --hlo NAME      walk over tests/fault/NAME instead of
#                                       small.hlo (sum.hlo: an add-reduce)
#   tests/fault/walk.sh --budget N      --check checks N candidates (default 1;
#                                       2 also compares a candidate with the
#                                       default)
#   tests/fault/walk.sh --func F        count and fail only the allocations
#                                       function F makes (TUNE_FAILMALLOC_FUNC)
#   tests/fault/walk.sh --under F       count and fail only the allocations
#                                       made while F is on the call stack
#                                       (TUNE_FAILMALLOC_UNDER)
#   tests/fault/walk.sh --persist       fail every counted allocation from
#                                       the Nth on, not only the Nth
#   tests/fault/walk.sh -j J            J walks at once, each taking every
#                                       Jth N of the sample; the tallies add up
#   tests/fault/walk.sh ... print eval check sweep   only these commands
#
# Outside make check, set TUNE (the binary), TUNE_SRCDIR and TUNE_BUILDDIR
# (where tests/fault/failmalloc.so was built: make tests/fault/failmalloc.so).
. "$TUNE_SRCDIR/tests/integration/lib.sh"
: "${TUNE_BUILDDIR:?TUNE_BUILDDIR must name the build folder}"
shim="$TUNE_BUILDDIR/tests/fault/failmalloc.so"
[ -f "$shim" ] || { echo "not ok - $shim is missing (make tests/fault/failmalloc.so)"; exit 1; }

full=0
strict=0
samples=${TUNE_WALK_SAMPLES:-}
fixed_step=
last_only=
range_from=
range_to=
jobs=1
part=0
parts=1
cmds=
hlo=small.hlo
budget=1
all_args="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --full) full=1 ;;
    --strict) strict=1 ;;
    --samples) shift; samples=$1 ;;
    --step) shift; fixed_step=$1 ;;
    --in) shift; TUNE_FAILMALLOC_IN=$1; export TUNE_FAILMALLOC_IN ;;
    --last) shift; last_only=$1 ;;
    --range) shift; range_from=${1%-*}; range_to=${1#*-} ;;
    --hlo) shift; hlo=$1 ;;
    --budget) shift; budget=$1 ;;
    --func) shift; TUNE_FAILMALLOC_FUNC=$1; export TUNE_FAILMALLOC_FUNC ;;
    --under) shift; TUNE_FAILMALLOC_UNDER=$1; export TUNE_FAILMALLOC_UNDER ;;
    --persist) TUNE_FAILMALLOC_PERSIST=1; export TUNE_FAILMALLOC_PERSIST ;;
    -j) shift; jobs=$1 ;;
    --part) shift; part=${1%/*}; parts=${1#*/} ;;
    print|eval|check|sweep|report) cmds="$cmds $1" ;;
    *) echo "usage: walk.sh [--full] [--strict] [--samples K] [--step K] [--last K] [--range A-B] [--in LIB] [--hlo NAME] [--budget N] [--func F] [--under F] [--persist] [-j J] [print] [eval] [check] [sweep] [report]" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$cmds" ] || cmds="print eval check sweep"

# -j J: J copies of this walk, copy i taking the values of N whose index
# in the sample is i modulo J; their tallies are added up here.
if [ "$jobs" -gt 1 ]; then
  i=0
  while [ "$i" -lt "$jobs" ]; do
    sh "$0" $(echo "$all_args" | sed 's/-j  *[0-9]*//') --part "$i/$jobs" > "$TMPD/part$i" 2>&1 &
    i=$((i + 1))
  done
  wait
  cat "$TMPD"/part*
  for c in $cmds; do
    sums=$(sed -n "s/^# tally $c //p" "$TMPD"/part* | awk '{for (k = 1; k <= NF; k++) t[k] += $k} END {for (k = 1; k <= NF; k++) printf "%d ", t[k]}')
    set -- $sums
    [ $# -eq 7 ] || { not_ok "$c: a part of the walk gave no tally"; continue; }
    echo "# $c in all: $1 allocations; tried $2 values of N, $3 failure points exercised, $4 exits 2 saying out of memory, $5 recovered with the clean result, $6 where a library gave up, $7 failing"
    [ "$7" -eq 0 ] && ok "$c: all $jobs parts of the walk pass"
  done
  grep -q '^not ok' "$TMPD"/part* && not_ok "some part of the walk failed"
  finish
  exit $?
fi

# ASan must normally come first in the library list; the shim forwards to
# whatever allocator comes next, so under the sanitizers it wraps ASan's.
if nm -D "$TUNE" 2>/dev/null | grep -q __asan_init; then
  sanitized=1
  ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=0:exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=99${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # The shim's backtrace() loads libgcc's unwinder with dlopen, which keeps
  # a block LSan cannot see: that one block is not tune's leak.
  printf 'leak:dl_open_worker_begin\n' > "$TMPD/lsan.supp"
  LSAN_OPTIONS="suppressions=$TMPD/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
else
  sanitized=0
fi
# make check keeps the walk near a minute: runs under ASan are slower.
[ -n "$samples" ] || if [ "$sanitized" -eq 1 ]; then samples=6; else samples=20; fi

W="$TMPD/w"
mkdir -p "$W"
cp "$TUNE_SRCDIR/tests/fault/$hlo" "$W/$hlo"
cat > "$W/s.cfg" <<EOF
sweep: {
  corpus = [ "$hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  budget = 1;
  time_budget = 0.0;
  threads = 1;
  seed = 0;
  output = "sw.h5";
  run_id = "%Y%m%d";
  slowdown_threshold = 0.10;
  reports = ( { format = "md"; output = "sw.md"; } );
};
EOF
cd "$W" || exit 1

# Each command: its arguments, its output file, and how that file starts.
args_of() {
  case $1 in
    print) echo "--print $hlo -o out.txt" ;;
    eval) echo "--eval $hlo -o out.h5" ;;
    check) echo "--check $hlo --budget $budget --threads 1 -o out.h5" ;;
    sweep) echo "--sweep s.cfg --run-id new" ;;
    report) echo "--report sw.h5 --format json" ;;
  esac
}
out_of() {
  case $1 in print) echo out.txt ;; sweep|report) echo sw.h5 ;; *) echo out.h5 ;; esac
}
# The state before each run: an earlier file of the same kind, so that
# "untouched" and "earlier run intact" mean something.
make_pre() {
  rm -rf pre && mkdir pre && cp "$hlo" s.cfg pre/
  case $1 in
    print) echo 'an earlier text' > pre/out.txt ;;
    eval) (cd pre && "$TUNE" --eval "$hlo" --seed 1 -o out.h5) ;;
    check) (cd pre && "$TUNE" --check "$hlo" --budget "$budget" --threads 1 --seed 1 -o out.h5 >/dev/null) ;;
    sweep|report) (cd pre && "$TUNE" --sweep s.cfg --run-id old >/dev/null 2>&1 && rm -f sw.md) ;;
  esac
}
reset() { rm -rf run && cp -R pre run; }

# stdout without what changes from run to run (times, run ids, dates).
normalize() {
  sed -e 's/[0-9][0-9.]* s\b/T s/g' -e 's/[0-9]\{8\}T[0-9]\{6\}Z-[0-9]*/RUNID/g' \
      -e 's/[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9:]*Z/DATE/g' "$1"
}

# What of output FILE must equal the clean run's, for the command in $c:
# the file itself (--print), its inputs and outputs (--eval), or the run's
# JSON report without what changes from run to run (--check, --sweep).
dump_out() {
  case $c in
    print) cat "$1" ;;
    eval) h5dump -d /inputs/0 -d /outputs/0 "$1" 2>/dev/null | tail -n +2 ;;
    *) "$TUNE" --report "$1" --format json 2>/dev/null | sed -n '/"run": {/,$p' \
         | grep -v '"\(id\|started\|finished\|command\|host\|wall_time\)"' ;;
  esac
}

# The results file's earlier runs must read back as before: their JSON
# reports (which hold every stored value of the run) are compared.
run_ids() { # FILE -> the ids of its runs
  "$TUNE" --report "$1" --format json 2>/dev/null | sed -n 's/.*"runs": \[\(.*\)\],*$/\1/p' \
    | grep -o '"id": "[^"]*"' | sed 's/"id": "\(.*\)"/\1/'
}
old_reports() { # FILE -> the reports of the runs in $old_ids
  for id in $old_ids; do
    "$TUNE" --report "$1" --run "$id" --format json 2>&1 | grep -v '"results_file"\|"runs": '
  done
}

# A crash or an exit() that a library brings on itself: the library asked
# for the failed allocation, and the crash or the exit() call is in that
# library too.  HDF5 1.10 crashes or calls exit(-1); libgomp prints "Out of
# memory" and calls exit(1); libconfig crashes.  Prints the library.
library_gave_up() {
  by=$(echo "$1" | sed -n 's/.*caller=\([^ .]*\).*/\1/p')
  case $by in libhdf5*|libgomp|libconfig) ;; *) return 1 ;; esac
  case $1 in *" in=$by"*|*" exit_from=$by"*) echo "$by"; return 0 ;; esac
  return 1
}
tune_name=$(basename "$TUNE")
walk_one() { # CMD
  c=$1
  set -- $(args_of "$c")
  out=$(out_of "$c")
  make_pre "$c" || { not_ok "$c: could not make the starting file"; return; }
  old_ids=
  if [ -n "$out" ] && [ "$c" != eval ] && [ "$c" != print ]; then
    old_ids=$(run_ids "pre/$out")
    [ -n "$old_ids" ] || { not_ok "$c: the starting file has no run"; return; }
    old_reports "pre/$out" > old.json
  fi

  reset
  rm -f log
  (cd run && LD_PRELOAD="$shim" TUNE_FAILMALLOC_LOG=../log "$TUNE" "$@" >../clean.out 2>../clean.err)
  clean=$?
  total=$(sed -n 's/allocations=\([0-9]*\).*/\1/p' log)
  if [ "$clean" -gt 1 ] || [ -z "$total" ]; then
    not_ok "$c: the run without a failure exits $clean"; sed 's/^/  # /' clean.err | head -n 5; return
  fi
  normalize clean.out > clean.norm
  if [ -n "$out" ]; then
    dump_out "run/$out" > clean.dump
  fi

  # A sample of about $samples values of N, evenly spread; all of them when
  # there are few (--print) or with --full.
  if [ -n "$fixed_step" ]; then step=$fixed_step
  elif [ "$full" -eq 1 ] || [ "$total" -le 100 ]; then step=1; else step=$(( (total + samples - 1) / samples )); fi
  first=1
  [ -z "$last_only" ] || [ "$last_only" -ge "$total" ] || first=$((total - last_only + 1))
  [ -z "$range_from" ] || first=$range_from
  n=$((first + part * step)); tried=0; hit=0; oom_msg=0; recovered=0; bad=0; gave=0; gave_list=
  # A few allocations past the clean count: the count may vary slightly.
  last=$((total + 2))
  [ -z "$range_to" ] || [ "$range_to" -ge "$last" ] || last=$range_to
  while [ "$n" -le "$last" ]; do
    reset
    rm -f log
    (cd run && LD_PRELOAD="$shim" TUNE_FAILMALLOC=$n TUNE_FAILMALLOC_LOG=../log \
       "$TUNE" "$@" >../got.out 2>../got.err)
    st=$?
    tried=$((tried + 1))
    why=
    skip=0
    line=$(tail -n 1 log 2>/dev/null)
    failed=$(echo "$line" | sed -n 's/.*failed=\([0-9]*\).*/\1/p')
    by=$(echo "$line" | sed -n 's/.*caller=\([^ ]*\).*/\1/p')
    lib=$(library_gave_up "$line")
    # Under ASan, HDF5 leaks what it allocated before its own allocation
    # failed: a leak report (exit 99) whose every block HDF5 allocated
    # straight (through the shim) is HDF5's, not tune's.
    h5leak=0
    if [ "$st" -eq 99 ] && case $line in *caller=libhdf5*) true ;; *) false ;; esac &&
       grep -q 'LeakSanitizer' got.err && ! grep -q 'ERROR: AddressSanitizer\|runtime error' got.err &&
       ! grep -A3 'leak of' got.err | grep '^ *#2 ' | grep -qv 'libhdf5'; then
      h5leak=1
    fi
    # Under ASan, HDF5 1.10 also frees twice, or reads what it freed, in its
    # exit handler (H5_term_library tearing down property lists) after one
    # of its own allocations failed while it registered them: an ASan error
    # whose first frame outside the sanitizer runtime and the shim is in
    # libhdf5, when the failed allocation was HDF5's.  In the plain build
    # libguard turns a crash there into exit 2; ASan stops first.
    h5asan=0
    if [ "$st" -eq 99 ] && case $line in *caller=libhdf5*) true ;; *) false ;; esac &&
       grep -q 'ERROR: AddressSanitizer' got.err; then
      frame=$(awk '/ERROR: AddressSanitizer/ { on = 1; next }
                   on && /^ *#[0-9]+ / && !/libsanitizer|failmalloc\.c/ { print; exit }' got.err)
      case $frame in *libhdf5*) h5asan=1 ;; esac
    fi
    case $line in *exit_from=*) libexit=1 ;; *) libexit=0 ;; esac
    if [ -n "$lib" ] && [ "$libexit" -eq 1 ] && [ "$st" -ne 2 ]; then
      why="$lib called exit() and tune's status is $st, not 2"
    elif [ "$h5leak" -eq 1 ] && [ "$strict" -eq 0 ]; then
      gave=$((gave + 1)); gave_list="$gave_list $n(libhdf5,leak)"; skip=1
    elif [ "$st" -gt 2 ] && [ "$strict" -eq 0 ] &&
         { [ "$h5asan" -eq 1 ] || case $line in *signal=*via=H5FL_blk_malloc*) true ;; *) false ;; esac; }; then
      # HDF5 1.10's use-after-free in H5FL_blk_malloc (failmalloc.c): the
      # heap is corrupt from then on, whoever's allocation aborts; or its
      # double free in its exit handler, above.
      if [ "$h5asan" -eq 1 ]; then kind=asan-in-hdf5; else kind=H5FL_blk_malloc-heap; fi
      gave=$((gave + 1)); gave_list="$gave_list $n(libhdf5,$kind)"; skip=1
      # What was already written must still be there, and a new output
      # must be untouched or complete (HDF5's exit handler runs after tune
      # has written it).
      if [ -n "$out" ] && ! cmp -s "pre/$out" "run/$out"; then
        case $c in
          print|eval) dump_out "run/$out" > got.dump
             cmp -s clean.dump got.dump || why="HDF5 corrupted the heap and $out is neither untouched nor complete" ;;
          *) old_reports "run/$out" > got.json
             cmp -s old.json got.json || why="HDF5 corrupted the heap and the earlier runs of $out do not read back the same" ;;
        esac
      fi
    elif [ "$st" -gt 2 ]; then
      why="crashed or sanitizer report (exit $st; the failed allocation was made by ${by:-?})"
    elif [ "$st" -eq 2 ]; then
      if [ -n "$lib" ] && [ "$libexit" -eq 1 ]; then
        gave=$((gave + 1)); gave_list="$gave_list $n($lib,exit,2)"
      fi
      if [ ! -s got.err ]; then why="exit 2 without a message"; fi
      if grep -qi 'out of memory\|cannot allocate' got.err; then oom_msg=$((oom_msg + 1))
      elif [ -z "$why" ] && [ "$by" = "$tune_name" ]; then why="tune's own allocation failed, and the message does not say out of memory"; fi
      if [ -z "$why" ] && [ -n "$out" ] && ! cmp -s "pre/$out" "run/$out"; then
        case $c in
          print|eval) why="exit 2 but $out was changed" ;;
          *) old_reports "run/$out" > got.json
             cmp -s old.json got.json || why="exit 2 and the earlier runs of $out do not read back the same" ;;
        esac
      fi
    else
      [ "$failed" = 1 ] && recovered=$((recovered + 1))
      if [ "$st" -ne "$clean" ]; then why="exit $st where the clean run exits $clean"; fi
      normalize got.out > got.norm
      if [ -z "$why" ] && ! cmp -s clean.norm got.norm; then why="exit $st with other output than the clean run"; fi
      if [ -z "$why" ] && [ -n "$out" ]; then
        dump_out "run/$out" > got.dump
        case $c in
          print|eval) ;;
          *) old_reports "run/$out" > got.json
             cmp -s old.json got.json || why="exit $st and the earlier runs of $out do not read back the same" ;;
        esac
        [ -n "$why" ] || cmp -s clean.dump got.dump || why="exit $st and $out is not complete"
      fi
    fi
    if [ -z "$why" ] && [ "$skip" -eq 0 ] && ls run | grep -q '\.tmp\.'; then why="a temporary file was left behind"; fi
    [ "${failed:-0}" -ge 1 ] && hit=$((hit + 1))
    if [ -n "$why" ]; then
      bad=$((bad + 1))
      not_ok "$c: failing allocation $n: $why"
      sed 's/^/  # /' got.err | head -n 8
    fi
    n=$((n + step * parts))
  done
  echo "# $c: $total allocations; tried $tried values of N (step $step), $hit failure points exercised," \
       "$oom_msg exits 2 saying out of memory, $recovered recovered with the clean result"
  [ "$gave" -eq 0 ] || echo "# $c: a library gave up (exit, an HDF5 leak or an ASan error inside HDF5 under ASan, or HDF5 1.10's heap corruption after a failed H5FL_blk_malloc) on $gave of its own failed allocations, at N =$gave_list"
  echo "# tally $c $( [ "$part" -eq 0 ] && echo "$total" || echo 0) $tried $hit $oom_msg $recovered $gave $bad"
  [ "$bad" -eq 0 ] && ok "$c: every failing allocation tried gives a clean error or the clean result"
}

# libgomp's first allocation, whatever N it is: libgomp gives up with exit(1),
# which tune must turn into 2 (1 would claim a divergence), leaving the
# existing output alone.
gomp_exit() {
  rm -rf g && mkdir g && cp "$hlo" g/ && printf 'old' > g/out.h5
  (cd g && LD_PRELOAD="$shim" TUNE_FAILMALLOC=1 TUNE_FAILMALLOC_IN=libgomp TUNE_FAILMALLOC_LOG=../glog \
     "$TUNE" --eval "$hlo" -o out.h5 >/dev/null 2>../gerr)
  st=$?
  if grep -q 'failed=1' glog 2>/dev/null; then
    if [ "$st" -eq 2 ] && [ -s gerr ] && [ "$(cat g/out.h5)" = old ]; then
      ok "libgomp out of memory: exit 2 with its message, out.h5 untouched"
    else not_ok "libgomp out of memory: exit $st (wanted 2), out.h5 $(cat g/out.h5 | head -c 3 | grep -q old && echo untouched || echo changed)"
      sed 's/^/  # /' gerr | head -n 3; fi
  else echo "# --eval made no allocation in libgomp: nothing to check"; fi
}

[ "$sanitized" -eq 1 ] && echo "# sanitizer build: the shim wraps ASan's allocator; leaks and UB fail the walk"
for c in $cmds; do walk_one "$c"; done
case $cmds in *eval*) [ "$part" -eq 0 ] && gomp_exit ;; esac
finish
