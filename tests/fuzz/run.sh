#!/bin/sh
# Fuzz the HLO parser with libFuzzer (clang) under ASan and UBSan.
#   tests/fuzz/run.sh [SECONDS]        (default 600)
# Needs: apt-get install clang libclang-rt-14-dev
# Crashes land in tests/fuzz/artifacts/; the growing corpus in a temp dir.
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-600}
out=${TMPDIR:-/tmp}/tune-fuzz
mkdir -p "$out/corpus" "$src/tests/fuzz/artifacts"
cp "$src"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
clang -std=c11 -g -O1 -ffp-contract=off -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$src/tuner" "$src"/tuner/hlo/*.c "$src/tests/fuzz/fuzz_parse.c" -lm -o "$out/fuzz_parse"
"$out/fuzz_parse" -max_total_time="$secs" -max_len=8192 -timeout=10 \
  -artifact_prefix="$src/tests/fuzz/artifacts/" "$out/corpus"
