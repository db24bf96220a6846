#!/bin/sh
# layering.sh — the one-way layer order of DESIGN.md §3, enforced:
#   hlo (tuner/hlo) -> {device (tuner/device), check (check/)} -> tuner
# where tuner is everything else under tuner/ (cli, run, sweep, triage, store,
# report, fuzz).
# A file may include its own layer and the layers below it: hlo includes only
# hlo, device and check include hlo but never each other, tuner includes all.
#
# Every #include "..." of every .c/.h under tuner/ and check/ is resolved to
# the file the compiler would open: the including file's own folder first,
# then each -I folder of AM_CPPFLAGS in Makefile.am, in that order (read from
# Makefile.am, so the test follows the build).  An include that names no file
# of the tree (config.h, generated in the build folder) belongs to no layer.
#
# Includes also name their layer: a header of another folder is spelled with
# its folder ("hlo/hlo.h", "check/eval.h"), never bare and never through "..".
# A bare name that
# does not resolve but is the name of a header of the tree fails too (the
# compiler would refuse it as well; this says why).
#
# Usage: layering.sh [ROOT]   (checks ROOT, without the self-check), or run
# by make check, where it first checks itself: a copy of a small tree with a
# forbidden include planted must fail, and the same tree without it pass.

# Known exceptions, one "FILE -> INCLUDED" per line, each to be removed by
# the change that ends it.  None is left: the device asks the host it is
# handed (tuner/device/dev_host.h) for what it does not compute itself.
allowed=''

layer_of() {
  case $1 in
  tuner/hlo/*) echo hlo ;;
  tuner/device/*) echo device ;;
  check/*) echo check ;;
  tuner/*) echo tuner ;;
  *) echo none ;;
  esac
}

# may_include FROM_LAYER TO_LAYER: the order above.
may_include() {
  case $1:$2 in
  *:none | hlo:hlo | device:hlo | device:device | check:hlo | check:check | tuner:*) return 0 ;;
  *) return 1 ;;
  esac
}

# check_tree ROOT ALLOWED: prints one line per forbidden include; exit 1
# when there is any, 2 when ROOT has no Makefile.am with -I folders.
check_tree() {
  root=$1 allow=$2
  # -I$(srcdir) and -I$(srcdir)/X words of AM_CPPFLAGS, with its
  # continuation lines ("." for the top of the tree)
  incdirs=$(awk '
    /^AM_CPPFLAGS[ \t]*=/ { on = 1 }
    on { for (i = 1; i <= NF; i++) if ($i ~ /^-I\$\(srcdir\)(\/|$)/) {
           d = $i; sub(/^-I\$\(srcdir\)\/?/, "", d); print (d == "" ? "." : d) }
         if ($0 !~ /\\$/) on = 0 }' "$root/Makefile.am" 2>/dev/null)
  if [ -z "$incdirs" ]; then
    echo "layering: no -I\$(srcdir) folders in $root/Makefile.am" >&2
    return 2
  fi
  # One awk for the whole tree: a shell loop forking per include is slow.
  files=$(cd "$root" && find tuner check -name '*.[ch]' 2>/dev/null | LC_ALL=C sort)
  (cd "$root" && printf '%s\n' "$files" |
    awk -v incdirs="$incdirs" -v allow="$allow" -v files="$files" '
    function layer(p) {
      if (p ~ /^tuner\/hlo\//) return "hlo"
      if (p ~ /^tuner\/device\//) return "device"
      if (p ~ /^check\//) return "check"
      if (p ~ /^tuner\//) return "tuner"
      return "none"
    }
    function may(a, b) {
      return b == "none" || a == "tuner" || a == b || b == "hlo"
    }
    function exists(p,   line, r) {
      r = (getline line < p)
      close(p)
      return r >= 0
    }
    BEGIN { nd = split(incdirs, dirs, "\n"); na = split(allow, al, "\n")
            for (i = 1; i <= na; i++) ok[al[i]] = 1
            nf = split(files, fl, "\n")
            for (i = 1; i <= nf; i++) { b = fl[i]; sub(/.*\//, "", b); named[b] = fl[i] } }
    {
      f = $0; dir = f; sub(/\/[^\/]*$/, "", dir); from = layer(f)
      while ((getline line < f) > 0) {
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        inc = line; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
        target = ""
        if (exists(dir "/" inc)) target = dir "/" inc
        for (i = 1; target == "" && i <= nd; i++)
          if (dirs[i] != "" && exists(dirs[i] "/" inc)) target = (dirs[i] == "." ? "" : dirs[i] "/") inc
        if (inc ~ /(^|\/)\.\.\//) { print "unnamed layer: " f " -> " inc " (name the folder from the top, without ..)"; bad = 1; continue }
        if (target == "") {
          if (inc !~ /\// && (inc in named)) { print "unnamed layer: " f " -> " inc " (spell it with its folder, as for " named[inc] ")"; bad = 1 }
          continue
        }
        tdir = target; if (!sub(/\/[^\/]*$/, "", tdir)) tdir = "."
        if (layer(target) != "none" && inc !~ /\// && tdir != dir) {
          print "unnamed layer: " f " -> " target " (spelled \"" inc "\"; name its folder)"; bad = 1; continue
        }
        to = layer(target)
        if (may(from, to)) continue
        l = f " -> " target
        if (l in ok) { print "allowed: " l " (" from " includes " to ", a listed exception)"; continue }
        print "forbidden: " l " (" from " includes " to ")"; bad = 1
      }
      close(f)
    }
    END { exit bad }')
}

if [ $# -ge 1 ]; then
  check_tree "$1" ""
  exit $?
fi

. "$TUNE_SRCDIR/tests/integration/lib.sh"

# Self-check on a small tree: resolution order (own folder before -I) and
# each forbidden direction.
mini=$TMPD/mini
mkdir -p "$mini/tuner/hlo" "$mini/tuner/device" "$mini/check" "$mini/tuner/store" "$mini/tuner/cli"
printf 'AM_CPPFLAGS = -I$(srcdir)/tuner \\\n\t-I$(srcdir) -I$(top_builddir)\n' >"$mini/Makefile.am"
echo '#include <stdio.h>' >"$mini/tuner/hlo/hlo.h"
echo '#include "hlo/hlo.h"' >"$mini/tuner/device/dev.h"
printf '#include "hlo/hlo.h"\n#include "same.h"\n' >"$mini/check/eval.c"
echo '#include "hlo/hlo.h"' >"$mini/check/same.h"
echo '/* the device has a same.h of its own */' >"$mini/tuner/device/same.h"
printf '#include "device/dev.h"\n#include "check/eval.c"\n#include "store/st.h"\n#include "config.h"\n' >"$mini/tuner/cli/tune.c"
echo '#include "hlo/hlo.h"' >"$mini/tuner/store/st.h"
if check_tree "$mini" "" >"$TMPD/out" 2>&1; then ok "self-check: a clean tree passes"; else
  not_ok "self-check: a clean tree fails"; sed 's/^/  # /' "$TMPD/out"; fi

# caught KIND FILE INCLUDE DESC [TARGET]: the clean tree plus one include
# must fail with a KIND line ("forbidden" for a layer crossed, "unnamed
# layer" for a spelling) naming FILE (and the file it resolves to, when
# given)
caught() {
  cp "$mini/$2" "$TMPD/saved"
  echo "#include \"$3\"" >>"$mini/$2"
  if check_tree "$mini" "" >"$TMPD/out" 2>&1; then not_ok "self-check: $4 is not caught"
  elif grep -q "$1: $2 -> ${5:-}" "$TMPD/out"; then ok "self-check: $4 fails"
  else not_ok "self-check: $4 fails without naming $2"; sed 's/^/  # /' "$TMPD/out"; fi
  cp "$TMPD/saved" "$mini/$2"
}
caught forbidden check/eval.c device/dev.h "check including the device"
caught forbidden tuner/device/dev.h check/eval.c "the device including check"
caught forbidden tuner/device/dev.h store/st.h "the device including the tuner"
caught forbidden tuner/hlo/hlo.h device/dev.h "hlo including the device"
caught forbidden tuner/hlo/hlo.h check/eval.c "hlo including check"
caught forbidden check/same.h tuner/cli/tune.c "check including the tuner"
caught "unnamed layer" tuner/store/st.h hlo.h "a bare hlo.h outside tuner/hlo"
caught "unnamed layer" tuner/device/dev.h ../hlo/hlo.h "a header reached through .."
caught "unnamed layer" tuner/cli/tune.c same.h "a bare same.h of another folder"
# listed exceptions are exact lines, not patterns
echo '#include "device/dev.h"' >>"$mini/check/eval.c"
if check_tree "$mini" "check/eval.c -> tuner/device/dev.h" >"$TMPD/out" 2>&1; then
  ok "self-check: a listed exception passes"
else not_ok "self-check: a listed exception fails"; sed 's/^/  # /' "$TMPD/out"; fi
if check_tree "$mini" "check/eval.c -> tuner/device/dev" >/dev/null 2>&1; then
  not_ok "self-check: a partial exception line excuses an include"
else ok "self-check: a partial exception line excuses nothing"; fi

# The real tree.
if check_tree "$TUNE_SRCDIR" "$allowed" >"$TMPD/out" 2>&1; then
  ok "every include of tuner/ and check/ follows hlo -> {device, check} -> tuner and names its layer"
else not_ok "includes against the layer order"; fi
sed 's/^/# /' "$TMPD/out"
finish
