#!/bin/sh
# store_journal.sh — a sweep appends to its results file in place
# (tuner/store/journal.h): the file keeps its inode, holds what a
# copy-and-rename sweep would have stored, and a sweep killed at any of
# its writes leaves a file that the next tune command rolls back to the
# last committed fusion, after which the sweep resumes and completes.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1

# write_cfg FILE OUTPUT
write_cfg() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ "$ds/qat_residual_f16.hlo", "$ds/softmax.hlo", "$ds/row_sum_sq_ragged.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "nightly";
  inputs = "naive";
  budget = 4;
  threads = 2;
  output = "$2";
};
EOF2
}
# layout FILE: every object's path and shape, the run id replaced by RUN.
layout() { h5ls -r "$1" | sed 's#/runs/[^/ ]*#/runs/RUN#' | sort; }
run_of() { sed -n 's/^run \([^ ]*\) .*/\1/p' "$1" | head -n 1; }

# ---- in place, and the same datasets as by copy -------------------------------
write_cfg a.cfg a.h5
write_cfg b.cfg b.h5
"$TUNE" --sweep a.cfg >a1.out 2>&1
# A hard link pins the first file's inode: a file written by copy and
# renamed over it frees the old inode, and ext4 may hand that number to the
# next temporary file, so after an even number of replacements a bare
# inode comparison can see "the same file" (it did, in CI).  With the link
# held, -ef compares files, not recycled numbers.
ln a.h5 a.pin
"$TUNE" --sweep a.cfg >a2.out 2>&1
st=$?
if [ "$st" -le 1 ]; then ok "a second sweep into the file completes (exit $st)"; else not_ok "second sweep exited $st"; fi
if [ a.h5 -ef a.pin ]; then ok "it wrote the file in place (same inode)"; else
  not_ok "the file was replaced (inode $(stat -c %i a.pin) -> $(stat -c %i a.h5))"; fi
if [ -e a.h5.journal ]; then not_ok "a journal was left behind"; else ok "no journal left behind"; fi
TUNE_TEST_STORE_BY_COPY=1 "$TUNE" --sweep b.cfg >b1.out 2>&1
ln b.h5 b.pin
TUNE_TEST_STORE_BY_COPY=1 "$TUNE" --sweep b.cfg >b2.out 2>&1
if ! [ b.h5 -ef b.pin ]; then ok "by copy, the file is replaced (the hook works)"; else
  not_ok "by copy, the inode did not change"; fi
run_a=$(run_of a2.out)
run_b=$(run_of b2.out)
findings a.h5 "$run_a" >fa
findings b.h5 "$run_b" >fb
if [ -s fa ] && cmp -s fa fb; then ok "in place and by copy store the same findings ($(wc -l <fa) candidates)"; else
  not_ok "the findings differ"; diff fa fb | head -n 5 | sed 's/^/  # /'; fi
layout a.h5 | sed 's#/runs/RUN[^ ]*#/runs/RUN#' >la
layout b.h5 | sed 's#/runs/RUN[^ ]*#/runs/RUN#' >lb
if [ -s la ] && cmp -s la lb; then ok "and the same objects and shapes ($(wc -l <la) lines of h5ls -r)"; else
  not_ok "the layouts differ"; diff la lb | head -n 5 | sed 's/^/  # /'; fi

# ---- kill -9 at the Nth write, for N spread over a whole sweep -----------------
write_cfg k.cfg k.h5
"$TUNE" --sweep k.cfg >k0.out 2>&1
run0=$(run_of k0.out)
findings k.h5 "$run0" >f0
cp k.h5 k0.h5
kills=0
hot=0
finished=0
# A sweep of these three fusions makes about 90 writes (6 changes).
for n in 1 2 3 4 $(seq 6 9 400); do
  cp k0.h5 k.h5
  TUNE_TEST_JOURNAL_KILL_AT=$n "$TUNE" --sweep k.cfg >kill.out 2>&1
  st=$?
  if [ "$st" -ne 137 ]; then finished=1; echo "# the sweep made fewer than $n writes (exit $st)"; break; fi
  kills=$((kills + 1))
  [ -e k.h5.journal ] && hot=$((hot + 1))
  if ! "$TUNE" --report k.h5 --format json >rep.json 2>rep.err; then
    not_ok "killed at write $n: tune --report cannot read the file"; sed 's/^/  # /' rep.err | head -n 3; continue; fi
  if [ -e k.h5.journal ]; then not_ok "killed at write $n: the journal outlived the rollback"; fi
  if ! h5dump -H k.h5 >/dev/null 2>&1; then not_ok "killed at write $n: h5dump cannot read the rolled back file"; fi
  findings k.h5 "$run0" >f1
  if ! cmp -s f0 f1; then not_ok "killed at write $n: the earlier run changed"; fi
  "$TUNE" --sweep k.cfg >resume.out 2>resume.err
  st=$?
  run1=$(run_of resume.out)
  if [ "$st" -gt 1 ] || [ "$(groups k.h5 "$run1")" != 3 ]; then
    not_ok "killed at write $n: the next sweep (exit $st) holds $(groups k.h5 "$run1") fusions"
    sed 's/^/  # /' resume.err | tail -n 3
  fi
done
if [ "$kills" -ge 5 ] && [ "$finished" = 1 ]; then ok "killed at $kills write counts, up to the end of the sweep"; else
  not_ok "only $kills kills (finished: $finished)"; fi
if [ "$hot" -ge 1 ]; then ok "$hot of the kills left a change half made (a hot journal), all rolled back"; else
  not_ok "no kill landed inside a change"; fi
if [ "$tn_fail" -eq 0 ]; then ok "after every kill the file read, the earlier run was intact and the sweep resumed whole"; fi

# ---- readers and writers -------------------------------------------------------
# A reader with the file open (HDF5 holds LOCK_SH): the sweep writes by
# copy rather than wait, and leaves the reader's file alone.
cp k0.h5 r.h5
write_cfg r.cfg r.h5
ino=$(stat -c %i r.h5)
flock -s r.h5 sleep 30 &
reader=$!
sleep 0.3
"$TUNE" --sweep r.cfg >r.out 2>r.err
st=$?
kill $reader 2>/dev/null
wait $reader 2>/dev/null
if [ "$st" -le 1 ]; then ok "a sweep completes while a reader holds the file (exit $st)"; else
  not_ok "with a reader, the sweep exited $st"; sed 's/^/  # /' r.err | tail -n 3; fi
if [ "$(stat -c %i r.h5)" != "$ino" ]; then ok "by writing a new file beside it"; else not_ok "it wrote under the reader"; fi
runr=$(run_of r.out)
if [ "$(groups r.h5 "$runr")" = 3 ]; then ok "the run holds its three fusions"; else not_ok "run $runr: $(groups r.h5 "$runr") fusions"; fi

# A change in progress (LOCK_EX) is waited out by a tune reader.
flock -x r.h5 sleep 1.5 &
writer=$!
sleep 0.3
expect_status 0 "tune --report waits for a change in progress, then reads" "$TUNE" --report r.h5 --format json
wait $writer 2>/dev/null

finish
