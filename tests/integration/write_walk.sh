#!/bin/sh
# write_walk.sh — the HDF5 write-failure walk (issue 11, harness).
#
# Runs `--print -o`, `--eval -o`, `--check -o` and `--sweep` on a tiny fusion under a
# file size limit (RLIMIT_FSIZE, SIGXFSZ ignored so write() fails with
# EFBIG) stepped from 0 up past the size of every file the command
# writes, so that each write of each file fails in turn, at every offset
# granule.  At every step the command must:
#   - exit 0 (the limit was high enough) or exit 2 with a message, never
#     die of a signal or exit with anything else;
#   - leave the results file byte-identical to before, or complete: it
#     opens (tune --report reads it) and the new run's status is
#     "complete" (for --print -o: the whole printed text).  A sweep keeps what it finished by design, so for
#     --sweep a run left "running" (stopped) or "errors" (a fusion could
#     not be stored) is also accepted, provided that rerunning the sweep
#     without the limit ends with a complete run;
#   - leave no temporary file beside the output.
# The number of failing steps (failure points) is printed.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
STEP=${TUNE_WALK_STEP:-3}   # in 512-byte blocks; 1 walks every granule

cat >tiny.hlo <<'EOF'
HloModule tiny
ENTRY e {
  p = f32[8,128] parameter(0)
  ROOT n = f32[8,128] negate(p)
}
EOF

# limited BLOCKS CMD...: CMD under a file size limit of BLOCKS x 512 bytes;
# its exit status is returned and its stderr goes to err through a pipe
# (the limit applies to writes into any regular file, stderr included).
limited() {
  blocks=$1; shift
  { ( trap '' XFSZ; ulimit -f "$blocks" && exec "$@" 2>&1 >/dev/null ); echo $? >status; } | cat >err
  return "$(cat status)"
}

# same FILE BEFORE: both absent, or the same bytes.
same() {
  if [ ! -e "$1" ] && [ ! -e "$2" ]; then return 0; fi
  cmp -s "$1" "$2"
}

# latest_status FILE: the status of the file's latest run ("" when it
# does not read).
latest_status() {
  "$TUNE" --report "$1" --format json 2>/dev/null |
    sed -n 's/^  *"status": "\([a-z]*\)".*/\1/p' | head -n 1
}

points=0
bad=0
# judge WHAT STATUS FILE BEFORE MODE: one step's outcome; MODE is print,
# eval, check or sweep.
judge() {
  what=$1; st=$2; file=$3; before=$4; mode=$5
  if [ "$st" -ne 0 ] && [ "$st" -ne 2 ]; then
    bad=$((bad + 1)); not_ok "$what: exit $st"; sed 's/^/  # /' err | head -n 3; return
  fi
  if [ "$st" -eq 2 ]; then
    points=$((points + 1))
    if [ ! -s err ]; then bad=$((bad + 1)); not_ok "$what: exit 2 without a message"; return; fi
  fi
  if ls | grep -q '\.tmp\.'; then bad=$((bad + 1)); not_ok "$what: temporary file left"; rm -f ./*.tmp.*; return; fi
  if same "$file" "$before"; then return; fi
  if [ "$mode" = print ]; then
    # A failed print once truncated the old text where it stood.
    if [ "$st" -eq 0 ] && cmp -s "$file" full.out; then return; fi
    bad=$((bad + 1)); not_ok "$what: exit $st and $file is neither untouched nor the whole text"; return
  fi
  if [ "$mode" = eval ]; then
    if [ "$st" -eq 0 ] && h5ls "$file/outputs/0" >/dev/null 2>&1; then return; fi
    bad=$((bad + 1)); not_ok "$what: e.h5 changed but is not a complete file"; return
  fi
  s=$(latest_status "$file")
  if [ "$s" = complete ] && [ "$st" -eq 0 ]; then return; fi
  if [ "$mode" = sweep ] && { [ "$s" = running ] || [ "$s" = errors ]; }; then
    "$TUNE" --sweep walk.cfg >/dev/null 2>&1
    s2=$(latest_status "$file")
    if [ "$s2" = complete ]; then return; fi
    bad=$((bad + 1)); not_ok "$what: the interrupted sweep does not resume to complete ($s2)"; return
  fi
  bad=$((bad + 1)); not_ok "$what: exit $st and the file is neither untouched nor complete (latest run: '$s')"
}

# walk NAME FILE MODE CMD...: the limit from 0 to past the largest size the
# unlimited command writes.
walk() {
  name=$1; file=$2; mode=$3; shift 3
  cp "$file" before.h5 2>/dev/null || rm -f before.h5
  "$@" >/dev/null 2>&1
  cp "$file" full.out
  size=$(wc -c <"$file")
  [ -f before.h5 ] && cp before.h5 "$file" || rm -f "$file"
  top=$((size / 512 + 2))
  b=0
  start_points=$points; start_bad=$bad
  while [ "$b" -le "$top" ]; do
    limited "$b" "$@"
    judge "$name, limit $((b * 512)) bytes" $? "$file" before.h5 "$mode"
    if [ -f before.h5 ]; then cp before.h5 "$file"; else rm -f "$file"; fi
    rm -f "$file.lock"
    b=$((b + STEP))
  done
  n=$((points - start_points))
  if [ "$bad" -eq "$start_bad" ] && [ "$n" -gt 0 ]; then ok "$name: $n failure points, each clean"
  elif [ "$n" -eq 0 ]; then not_ok "$name: no write ever failed (the walk did not reach the writes)"; fi
}

# --print -o of a module whose text (about 5 KB) takes more than one
# stdio buffer, over no file, then over an earlier text.
{
  echo 'HloModule long'
  echo 'ENTRY e {'
  echo '  v0 = f32[8,128] parameter(0)'
  i=1
  while [ "$i" -le 100 ]; do echo "  v$i = f32[8,128] negate(v$((i - 1)))"; i=$((i + 1)); done
  echo '  ROOT r = f32[8,128] negate(v100)'
  echo '}'
} >long.hlo
walk "--print -o (new file)" p.txt print "$TUNE" --print long.hlo -o p.txt
echo 'an earlier text' >p.txt
walk "--print -o (over a file)" p.txt print "$TUNE" --print long.hlo -o p.txt

# --eval -o over no file, then over an existing one.
walk "--eval -o (new file)" e.h5 eval "$TUNE" --eval tiny.hlo -o e.h5
"$TUNE" --eval tiny.hlo --seed 7 -o e.h5 >/dev/null 2>&1
walk "--eval -o (over a file)" e.h5 eval "$TUNE" --eval tiny.hlo -o e.h5

# --check -o over no file, then appending to a file with one run.
walk "--check -o (new file)" r.h5 check "$TUNE" --check tiny.hlo --budget 2 -q -o r.h5
"$TUNE" --check tiny.hlo --budget 2 -q -o r.h5 >/dev/null 2>&1
walk "--check -o (appending)" r.h5 check "$TUNE" --check tiny.hlo --budget 2 -q -o r.h5

# --sweep of one fusion into a new file.
cat >walk.cfg <<EOF
sweep: {
  corpus = [ "$TMPD/tiny.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "naive";
  budget = 2;
  threads = 1;
  output = "$TMPD/s.h5";
};
EOF
walk "--sweep" s.h5 sweep "$TUNE" --sweep walk.cfg

echo "# $points failure points exercised"
finish
