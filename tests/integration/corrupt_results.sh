#!/bin/sh
# corrupt_results.sh — one changed byte in a results file is refused with
# exit 2 and a message, by every mode that reads results files.
#
# tests/results/results_small_orig.h5 is a small results file (one run of
# softmax); the two others differ from it in one byte each, inside the
# object header of the root's "schema" attribute: byte 837 (the attribute's
# datatype size) made HDF5 1.10 crash inside H5Aexists, and byte 838 (its
# dataspace size) made it read a variable-length string length out of
# garbage and allocate about a gigabyte.  results_fuzz_vlen_blowup.h5 was
# found by tests/fuzz/run_results.sh (a mutation of a two-run file): the
# module text's variable-length descriptor points into other data, and
# reading it took 1.6 GB and 13 s.  results_fuzz_dset_leak.h5, found the
# same way (7 bytes changed), damages the header of a fusion's candidates
# dataset: H5Dopen2 fails on it and leaks some 22 kB inside HDF5, after
# which HDF5 printed "infinite loop closing library" at exit; the file is
# now refused before the reader opens it (h5probe.h), by name.  All must
# be an error, never a crash, a leak or a huge allocation.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
res="$TUNE_SRCDIR/tests/results"
ds="$TUNE_SRCDIR/datasets"

# refused DESC CMD...: exit 2 (not a signal), and the message says the file
# is corrupt.
refused() {
  desc=$1; shift
  "$@" >"$TMPD/out" 2>"$TMPD/err"
  got=$?
  if [ "$got" -eq 2 ]; then ok "$desc: exit 2"; else
    not_ok "$desc: exit $got, wanted 2"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi
  expect_grep "corrupt HDF5 file" "$TMPD/err" "$desc: says the file is corrupt"
}

fusion=fused_softmax
expect_status 0 "the undamaged file reports" "$TUNE" --report "$res/results_small_orig.h5" --format md

for f in results_byte837_segv results_byte838_blowup results_fuzz_vlen_blowup results_fuzz_dset_leak; do
  h="$res/$f.h5"
  for fmt in html md json junit; do
    refused "$f: --report --format $fmt" "$TUNE" --report "$h" --format "$fmt"
  done
  refused "$f: --merge" "$TUNE" --merge "$TMPD/m.h5" "$h"
  if [ -e "$TMPD/m.h5" ]; then not_ok "$f: --merge wrote an output"; rm -f "$TMPD/m.h5"; else ok "$f: --merge wrote nothing"; fi
  refused "$f: --reproduce" "$TUNE" --reproduce "$h" --fusion "$fusion" --candidate 0 -o "$TMPD/b"
  cp "$h" "$TMPD/x.h5"
  refused "$f: --check -o appending to it" "$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o "$TMPD/x.h5"
  if cmp -s "$h" "$TMPD/x.h5"; then ok "$f: --check -o left it as it was"; else not_ok "$f: --check -o changed it"; fi
done

h="$res/results_fuzz_dset_leak.h5"
"$TUNE" --report "$h" --format md >"$TMPD/out" 2>"$TMPD/err"
expect_grep "fusions/2232705b52ea20db/candidates: HDF5 cannot open it" "$TMPD/err" \
  "results_fuzz_dset_leak: names the damaged dataset"
if [ "$(wc -l <"$TMPD/err")" -eq 1 ]; then ok "results_fuzz_dset_leak: one line on stderr, nothing from HDF5"; else
  not_ok "results_fuzz_dset_leak: more than one line on stderr"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi

finish
