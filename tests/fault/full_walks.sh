#!/bin/sh
# full_walks.sh — the full fault walks of issue 11, a report script, not
# part of make check (whose walk.sh, libs_walk.sh and write_walk.sh only
# sample): every allocation of `tune --print -o`, `--eval -o`, `--check -o`
# and `--sweep` on tests/fault/small.hlo failed in turn (walk.sh --step 1),
# then the write walk with a file size limit stepped every 512 bytes
# (write_walk.sh, TUNE_WALK_STEP=1).  Prints, per command, the allocations,
# the failure points exercised and how many failed; exit status 1 when any
# point failed.
#
#   tests/fault/full_walks.sh BUILDDIR [COMMAND...] [-- WALK OPTIONS]
#
# BUILDDIR holds tune and tests/fault/failmalloc.so (make
# tests/fault/failmalloc.so); COMMANDs default to print eval check sweep
# write.  WALK OPTIONS go to every walk.sh, e.g. `-- --range 1-2000` for
# one chunk of a long walk.  Two walks run at once (-j 2) under nice.
# On a quiet 2-core machine --print takes seconds, --eval a few minutes,
# --check about an hour and --sweep (about 10,000 allocations, a few
# seconds each) several hours: run it in chunks with --range, or in a
# sanitizer build folder for the sanitizer walk (ASan and leaks too).
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: full_walks.sh BUILDDIR [print] [eval] [check] [sweep] [write] [-- WALK OPTIONS]" >&2; exit 2; }
TUNE_BUILDDIR=$(cd "$1" && pwd) || exit 2
shift
cmds=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in print|eval|check|sweep|write) cmds="$cmds $1" ;;
    *) echo "full_walks.sh: unknown command '$1'" >&2; exit 2 ;; esac
  shift
done
[ "${1:-}" = -- ] && shift
[ -n "$cmds" ] || cmds="print eval check sweep write"
TUNE=$TUNE_BUILDDIR/tune
TUNE_SRCDIR=$(cd "$here/../.." && pwd)
export TUNE TUNE_SRCDIR TUNE_BUILDDIR
status=0
for c in $cmds; do
  echo "== $c ($(date -u +%H:%M:%SZ))"
  if [ "$c" = write ]; then
    TUNE_WALK_STEP=1 nice -n 10 sh "$TUNE_SRCDIR/tests/integration/write_walk.sh" >"$TUNE_BUILDDIR/full_walk_$c.log" 2>&1 || status=1
    grep '^not ok\|^ok\|failure points' "$TUNE_BUILDDIR/full_walk_$c.log"
  else
    nice -n 10 sh "$here/walk.sh" --step 1 -j 2 "$@" "$c" >"$TUNE_BUILDDIR/full_walk_$c.log" 2>&1 || status=1
    grep "^not ok\|^# $c in all" "$TUNE_BUILDDIR/full_walk_$c.log"
  fi
done
echo "== logs: $TUNE_BUILDDIR/full_walk_*.log"
exit $status
