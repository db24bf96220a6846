#!/bin/sh
# write_failure.sh — an HDF5 file that cannot be written is a clean error:
# exit 2 with the system's reason, no crash (HDF5 1.10 used to segfault in
# its exit handler after a failed flush), the old results file byte for
# byte as it was, and no temporary left behind.
#
# Writes fail through a file size limit (RLIMIT_FSIZE, with SIGXFSZ
# ignored so that write() returns EFBIG), which needs no privileges, and,
# when mounting is permitted (root), on a full 2 MiB tmpfs.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"

# limited BLOCKS CMD... : runs CMD with files limited to BLOCKS of 512
# bytes (POSIX ulimit -f units); stdout/stderr to $TMPD/out, $TMPD/err.
limited() {
  blocks=$1; shift
  ( trap '' XFSZ; ulimit -f "$blocks" && exec "$@" ) >"$TMPD/out" 2>"$TMPD/err"
}

# clean_error DESC STATUS PATTERN: the last run exited 2 (not a signal) and
# said PATTERN.
clean_error() {
  if [ "$2" -eq 2 ]; then ok "$1: exit 2"; else
    not_ok "$1: exit $2, wanted 2"; sed 's/^/  # /' "$TMPD/err" | head -n 5; fi
  expect_grep "$3" "$TMPD/err" "$1: says why"
}

no_temporaries() {
  if ls "$1" | grep -q '\.tmp\.'; then not_ok "$2: temporary file left behind"; ls "$1" | sed 's/^/  # /'
  else ok "$2: no temporary file left"; fi
}

# ---- --eval -o with a 4 KiB file size limit -------------------------------
mkdir "$TMPD/e"
limited 8 "$TUNE" --eval "$ds/softmax.hlo" -o "$TMPD/e/e.h5"
clean_error "--eval under a 4 KiB limit" $? "File too large"
if [ -e "$TMPD/e/e.h5" ]; then not_ok "--eval: a partial e.h5 was left"; else ok "--eval: no partial e.h5"; fi
no_temporaries "$TMPD/e" "--eval"
"$TUNE" --eval "$ds/softmax.hlo" -o "$TMPD/e/e.h5" >/dev/null 2>&1
if [ $? -eq 0 ] && h5ls "$TMPD/e/e.h5/outputs/0" >/dev/null 2>&1; then ok "--eval without a limit writes a file h5ls reads"
else not_ok "--eval without a limit"; fi

# ---- --check -o onto an existing results file --------------------------------
mkdir "$TMPD/c"
R="$TMPD/c/r.h5"
"$TUNE" --check "$ds/softmax.hlo" --budget 4 -q -o "$R" >/dev/null 2>&1
cp "$R" "$TMPD/before.h5"
size=$(wc -c <"$R")
# Room for the old file and a little more, not for the next run.
limited $(( (size + 2048) / 512 )) "$TUNE" --check "$ds/qat_residual_f16.hlo" --budget 4 -q -o "$R"
clean_error "--check -o under a limit just above the old file" $? "File too large"
if cmp -s "$R" "$TMPD/before.h5"; then ok "--check -o: the old results file is untouched"
else not_ok "--check -o: the old results file changed"; fi
no_temporaries "$TMPD/c" "--check -o"
if "$TUNE" --report "$R" --format json >/dev/null 2>&1; then ok "--check -o: the old file still reads"
else not_ok "--check -o: the old file no longer reads"; fi

# ---- a full disk: a 2 MiB tmpfs (skipped without the right to mount) --------
SMALL="$TMPD/small"
mkdir "$SMALL"
if mount -t tmpfs -o size=2m tmpfs "$SMALL" 2>/dev/null; then
  dd if=/dev/zero of="$SMALL/filler" bs=1k count=1990 2>/dev/null
  "$TUNE" --eval "$ds/softmax.hlo" -o "$SMALL/e.h5" >"$TMPD/out" 2>"$TMPD/err"
  clean_error "--eval on a full disk" $? "No space left on device"
  rm -f "$SMALL"/*
  "$TUNE" --check "$ds/softmax.hlo" --budget 16 -q -o "$SMALL/r.h5" >/dev/null 2>&1
  cp "$SMALL/r.h5" "$TMPD/before2.h5"
  kb=$(du -k "$SMALL/r.h5" | cut -f1)
  # Room for one copy of the file, not for its growth.
  dd if=/dev/zero of="$SMALL/filler" bs=1k count=$((2048 - 2 * kb - 12)) 2>/dev/null
  "$TUNE" --check "$ds/qat_residual_f16.hlo" --budget 16 -q -o "$SMALL/r.h5" >"$TMPD/out" 2>"$TMPD/err"
  clean_error "--check -o on a full disk" $? "No space left on device"
  if cmp -s "$SMALL/r.h5" "$TMPD/before2.h5"; then ok "full disk: the old results file is untouched"
  else not_ok "full disk: the old results file changed"; fi
  no_temporaries "$SMALL" "full disk"
  umount "$SMALL"
else
  echo "# skip: cannot mount a tmpfs here (needs root); the file size limit cases above still ran"
fi

finish
