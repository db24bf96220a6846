#!/bin/sh
# isolate_corpus.sh — `tune --isolate` on the clean compiler names no
# culprit in any multi-fusion module (two or more fusion units, from
# --list-fusions) of the real-module corpus ($TUNE_CORPUS, skipped when
# absent).  A module none of whose units can be isolated (an op the
# evaluator or the device lacks) exits 2: allowed, counted and listed, as
# are the units of other modules that could not be isolated.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ -z "$TUNE_CORPUS" ] || [ ! -d "$TUNE_CORPUS" ]; then echo "skip: no corpus"; exit 77; fi
cd "$TMPD" || exit 1

n=0; refused=0; culprits=0; units_not=0; units_ok=0
for f in "$TUNE_CORPUS"/*.hlo; do
  nf=$("$TUNE" --list-fusions "$f" 2>/dev/null | grep -c ' kind=k')
  [ "$nf" -ge 2 ] || continue
  n=$((n + 1))
  b=$(basename "$f")
  "$TUNE" --isolate "$f" --time-budget 20 >out 2>err
  st=$?
  case $st in
  0) ;;
  1) culprits=$((culprits + 1)); echo "# culprit in $b:"; grep -e '^  [0-9]*\. ' out | sed 's/^/#   /' ;;
  2) refused=$((refused + 1)); echo "# refused: $b: $(head -n 1 err)" ;;
  *) culprits=$((culprits + 1)); echo "# $b: exit $st"; head -n 3 err | sed 's/^/#   /' ;;
  esac
  units_ok=$((units_ok + $(grep -c '^  [^ ]*: ok;' out)))
  k=$(grep -c ': not-isolated' out)
  if [ "$k" -gt 0 ]; then
    units_not=$((units_not + k))
    grep ': not-isolated' out | sed "s|^  |# not isolated: $b:|" | cut -c1-200
  fi
done
if [ "$n" -ge 1 ] && [ "$refused" -lt "$n" ] && [ "$units_ok" -ge 1 ]; then
  ok "$n multi-fusion corpus modules isolated ($refused refused, $units_ok units ok, $units_not units not isolated)"
else not_ok "$n multi-fusion modules, $refused refused, $units_ok units ok"; fi
if [ "$culprits" -eq 0 ]; then ok "clean compiler: 0 false culprits over $n modules"; else
  not_ok "clean compiler: $culprits modules name a culprit"; fi
finish
