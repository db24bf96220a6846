#!/bin/sh
# tune --print over the real XLA corpus: every module prints, and printing
# the printed text gives the same bytes.  Skips when the corpus is absent.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ ! -d "$TUNE_CORPUS" ]; then echo "corpus not found at $TUNE_CORPUS: skipping"; exit 77; fi
n=0; bad=0
for f in "$TUNE_CORPUS"/*.hlo; do
  n=$((n + 1))
  if ! "$TUNE" --print "$f" -o "$TMPD/a.hlo" 2>"$TMPD/err"; then
    bad=$((bad + 1)); echo "refused: $(head -n 1 "$TMPD/err")"; continue
  fi
  if ! "$TUNE" --print "$TMPD/a.hlo" -o "$TMPD/b.hlo" 2>"$TMPD/err" || ! cmp -s "$TMPD/a.hlo" "$TMPD/b.hlo"; then
    bad=$((bad + 1)); echo "not a fixed point: $f"
  fi
done
if [ "$bad" -eq 0 ] && [ "$n" -gt 0 ]; then ok "$n corpus modules print and re-print identically"; else not_ok "$bad of $n corpus modules failed"; fi
finish
