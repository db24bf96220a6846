#!/bin/sh
# manpage.sh — doc/tune.1 and `tune --help` name the same options (issue
# 18): every long option of --help is documented in the man page, and the
# man page documents no option tune does not have.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
man="$TUNE_SRCDIR/doc/tune.1"
"$TUNE" --help >"$TMPD/help" 2>&1
grep -o -e '--[a-z][a-z-]*' "$TMPD/help" | sort -u >"$TMPD/h"
# In roff a dash is written \- : undo that, then take the options.
sed 's/\\-/-/g' "$man" | grep -o -e '--[a-z][a-z-]*' | sort -u >"$TMPD/m"
n=$(wc -l <"$TMPD/h" | tr -d ' ')
if [ "$n" -gt 30 ]; then ok "--help names $n long options"; else not_ok "--help names only $n long options"; fi
missing=$(comm -23 "$TMPD/h" "$TMPD/m" | tr '\n' ' ')
if [ -z "$missing" ]; then ok "the man page documents every option of --help"; else not_ok "the man page lacks: $missing"; fi
extra=$(comm -13 "$TMPD/h" "$TMPD/m" | tr '\n' ' ')
if [ -z "$extra" ]; then ok "the man page names no option --help lacks"; else not_ok "only the man page names: $extra"; fi
# Short options: each -X of --help is in the man page too.
for s in $(grep -o -e '^ *-[a-zA-Z],' "$TMPD/help" | tr -d ' ,'); do
  if sed 's/\\-/-/g' "$man" | grep -q -e "$s"; then ok "the man page has $s"; else not_ok "the man page lacks $s"; fi
done
# -q is described alike: "only errors and divergences".
if grep -q -e '-q, --quiet *print only errors and divergences' "$TMPD/help" &&
   sed 's/\\-/-/g' "$man" | tr '\n' ' ' | grep -q -e 'quiet[^.]*only errors and divergences'; then
  ok "-q means the same in both"
else not_ok "-q is described differently"; fi
finish
