#!/bin/sh
# progress.sh — progress of a long check (issue 18): not on a terminal, a
# timestamped line at least every interval (30 s; TUNE_PROGRESS_INTERVAL
# here) with file, fusion, phase, done/total, elapsed and ETA; a short check
# logs none; on a terminal, one line redrawn in place with the same facts.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
f="$ds/softmax.hlo"
cd "$TMPD" || exit 1

# The whole space of softmax on one thread: long enough for several
# 0.05 s intervals on any machine.
TUNE_PROGRESS_INTERVAL=0.05 "$TUNE" --check "$f" --threads 1 >log.out 2>log.err
st=$?
if [ "$st" -eq 0 ]; then ok "the check completes"; else not_ok "the check exited $st"; fi
n=$(grep -c '^20[0-9-]*T[0-9:]*Z tune: progress: \[[a-z]*\] ' log.err)
if [ "$n" -ge 2 ]; then ok "$n timestamped progress lines"; else not_ok "$n progress lines"; sed 's/^/  # /' log.err | head -n 5; fi
if grep 'progress: \[candidates\]' log.err | grep -q -e "$f:fused_softmax [0-9]*/[0-9]* divergent 0  [0-9ms]* elapsed, ETA [0-9ms]*$"; then
  ok "a candidates line has FILE:FUSION, done/total, divergent, elapsed and an ETA"
else not_ok "no complete candidates line"; grep progress log.err | head -n 3 | sed 's/^/  # /'; fi
total=$(sed -n 's/.* \([0-9]*\) of \([0-9]*\) candidates checked.*/\1/p' log.out)
if grep -o 'fused_softmax [0-9]*/[0-9]*' log.err | awk -F/ -v t="$total" '$2 != t { bad = 1 } END { exit bad }'; then
  ok "total is the $total candidates checked"
else not_ok "a progress total differs from $total"; fi
if grep -q 'progress:' log.out; then not_ok "progress went to stdout"; else ok "progress stays on stderr"; fi

# A short check with the default interval (30 s) logs nothing.
"$TUNE" --check "$f" --budget 2 >short.out 2>short.err
if [ ! -s short.err ]; then ok "a short check logs no progress"; else not_ok "short check stderr: $(head -n 2 short.err)"; fi
TUNE_PROGRESS_INTERVAL=0.05 "$TUNE" --check "$f" --threads 1 -q >q.out 2>q.err
if grep -q progress q.err; then not_ok "-q still logs progress"; else ok "-q turns progress off"; fi

# On a terminal (script(1) gives one): the line is redrawn in place.
# A fast machine checks these 64 candidates in less than the terminal's
# tenth of a second between redraws; a 1 ms interval lets every phase show.
if command -v script >/dev/null 2>&1; then
  TUNE_PROGRESS_INTERVAL=0.001 script -q -c "'$TUNE' --check '$f' --threads 1 --budget 64" /dev/null >tty.out 2>&1 </dev/null
  if tr '\r' '\n' <tty.out | grep -q -e "^\[candidates\] $f:fused_softmax [0-9]*/64 divergent 0 "; then
    ok "on a terminal: [candidates] FILE:FUSION done/total divergent, redrawn with a carriage return"
  else not_ok "no terminal progress line"; tr '\r' '\n' <tty.out | head -n 5 | sed 's/^/  # /'; fi
  if tr '\r' '\n' <tty.out | grep -q 'elapsed, ETA'; then ok "with elapsed time and ETA"; else not_ok "no ETA on the terminal"; fi
else
  echo "# note: no script(1): terminal progress not checked"
fi
finish
