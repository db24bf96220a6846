#!/bin/sh
# clang_syntax.sh — the reference evaluator's sources compile with clang as
# well as gcc: GCC-only builtins (eval_reduce.c's vector shuffle was one)
# must have a clang spelling.  Skipped when clang is not installed.
. "$(dirname "$0")/lib.sh"
if ! command -v clang >/dev/null 2>&1; then echo "clang_syntax.sh: no clang, skipped"; exit 77; fi
inc="-I$TUNE_SRCDIR/tuner -I$TUNE_SRCDIR -I$TUNE_BUILDDIR"
for f in "$TUNE_SRCDIR"/check/eval*.c; do
  # shellcheck disable=SC2086 # $inc is a list of options
  expect_status 0 "clang compiles $(basename "$f")" clang -fsyntax-only -fopenmp $inc "$f"
done
finish
