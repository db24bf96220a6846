#!/bin/sh
# results_corpus.sh — replays the results-reader fuzz corpus (issue 11):
# the seed files of tests/fuzz/corpus_results/ (small valid results files)
# and the damaged reproducers of tests/results/ go through `tune --report`
# in every format.  Each must exit 0 or 2 and never die of a signal; the
# seeds, which are sound, must exit 0.  No fuzzer is needed: this is the
# corpus that tests/fuzz/run_results.sh starts from.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
n=0
for f in "$TUNE_SRCDIR"/tests/fuzz/corpus_results/* "$TUNE_SRCDIR"/tests/results/*.h5; do
  name=$(basename "$f")
  for fmt in html md json junit; do
    "$TUNE" --report "$f" --format "$fmt" >/dev/null 2>"$TMPD/err"
    st=$?
    n=$((n + 1))
    case "$f:$st" in
      */corpus_results/*:0 | */results/*:0 | */results/*:2) ok "$name --format $fmt: exit $st" ;;
      *) not_ok "$name --format $fmt: exit $st"; sed 's/^/  # /' "$TMPD/err" | head -n 3 ;;
    esac
  done
done
echo "# $n reports replayed"
finish
