#!/bin/sh
# fuzz_corpus.sh — replay the fuzz targets' saved inputs without libFuzzer:
# the parser's seed corpus (tests/fuzz/corpus/) and the inputs that once
# crashed it (tests/fuzz/regressions/) through tune --print, which must
# print (exit 0) or refuse with a message (exit 2), never crash.  The
# libFuzzer runs themselves are in .ci/run (tests/fuzz/run.sh).
. "$TUNE_SRCDIR/tests/integration/lib.sh"
n=0
for f in "$TUNE_SRCDIR"/tests/fuzz/corpus/* "$TUNE_SRCDIR"/tests/fuzz/regressions/*; do
  [ -f "$f" ] || continue
  case $f in */README*) continue ;; esac
  n=$((n + 1))
  name=$(basename "$(dirname "$f")")/$(basename "$f")
  "$TUNE" --print "$f" >"$TMPD/out" 2>"$TMPD/err"
  st=$?
  if [ "$st" -eq 0 ]; then ok "$name prints (exit 0)"
  elif [ "$st" -eq 2 ] && [ -s "$TMPD/err" ]; then ok "$name is refused with a message (exit 2)"
  else not_ok "$name: exit $st"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi
done
[ "$n" -ge 4 ] || not_ok "only $n saved fuzz inputs found under tests/fuzz"
echo "# $n saved fuzz inputs replayed"
finish
