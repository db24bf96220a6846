#!/bin/sh
# Fuzz the results-file reader (tune --report) with libFuzzer under ASan
# and UBSan.
#   tests/fuzz/run_results.sh [SECONDS]        (default 600)
# Needs: apt-get install clang libclang-rt-14-dev, and tune's build
# dependencies (HDF5, libconfig).  The library's sources are compiled
# with clang, in its default C dialect like gcc's, in a temp dir (instrumented for coverage; a source clang
# cannot compile, such as one using a GCC-only builtin, is left out, and
# the link says so if the reader needed it).  Crashes land in
# tests/fuzz/artifacts/, the growing corpus in a temp dir, seeded from
# tests/fuzz/corpus_results/ and tests/results/.
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-600}
out=${TMPDIR:-/tmp}/tune-fuzz-results
mkdir -p "$out/build" "$out/corpus" "$src/tests/fuzz/artifacts"
cp "$src"/tests/fuzz/corpus_results/* "$src"/tests/results/*.h5 "$out/corpus/"
flags="-g -O1 -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [ ! -f "$src/configure" ]; then (cd "$src" && autoreconf -fi); fi
cd "$out/build"
[ -f config.h ] || "$src/configure" -q CC=clang >/dev/null
var() { sed -n "s/^$1 = //p" Makefile; }
inc="-I$src/tuner -I$src -I. \
  $(var HDF5_CFLAGS) $(var FFTW_CFLAGS) $(var OPENMP_CFLAGS) -DTUNE_DATADIR=\"/nonexistent\" -DTUNE_SRC_CONFIGS=\"$src/configs\""
if [ ! -f libfuzztune.a ]; then
  rm -f ./*.o
  for f in $(cd "$src" && ls tuner/*/*.c check/*.c | grep -v -e '^tuner/cli/tune\.c$' -e '^tuner/cli/cli_'); do
    o=$(echo "$f" | tr / _ | sed 's/\.c$/.o/')
    clang $flags -fsanitize=fuzzer-no-link $inc -c "$src/$f" -o "$o" 2>>compile.log ||
      echo "run_results.sh: left out $f (clang cannot compile it; see $out/build/compile.log)"
  done
  ar rcs libfuzztune.a ./*.o
fi
clang $flags -fsanitize=fuzzer $inc "$src/tests/fuzz/fuzz_results.c" libfuzztune.a \
  $(var HDF5_LIBS) $(var LIBCONFIG_LIBS) $(var FFTW_LIBS) $(var OPENMP_CFLAGS) -lm -o fuzz_results
# The reader checks each file in a child process first (h5probe.c).  A
# file that makes HDF5 loop is refused when the child runs out of its time
# bound, 30 s for a small file (h5probe.c, time_bound): such a unit takes
# 30 s and is a refusal, not a hang, so the fuzzer's own time-out is well
# above it (at 30, as before, it fired or not by a second's timing).
# Leaks inside HDF5's own error paths are not reported: see lsan_hdf5.supp
# for what that hides and what it does not.
LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan_hdf5.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
./fuzz_results -max_total_time="$secs" -max_len=65536 -timeout=120 -rss_limit_mb=4096 \
  -artifact_prefix="$src/tests/fuzz/artifacts/" "$out/corpus"
