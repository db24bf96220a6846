#!/bin/sh
# tune --print, --help, --version: GNU conventions and the canonical round trip.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
softmax="$TUNE_SRCDIR/datasets/softmax.hlo"

expect_status 0 "--help exits 0" "$TUNE" --help
expect_grep "Usage: tune" "$TMPD/out" "--help prints usage on stdout"
expect_status 0 "--version exits 0" "$TUNE" --version
expect_grep "^tune [0-9]" "$TMPD/out" "--version names the program and version"
expect_status 2 "no mode is bad usage" "$TUNE"
expect_status 2 "unknown option is bad usage" "$TUNE" --frobnicate
expect_grep "Try 'tune --help'" "$TMPD/err" "bad usage points at --help"

expect_status 0 "--print the bundled softmax" "$TUNE" --print "$softmax"
cp "$TMPD/out" "$TMPD/p1.hlo"
expect_grep "ENTRY main" "$TMPD/p1.hlo" "entry computation printed"
expect_grep "reduce(x, neg_inf), dimensions={1}, to_apply=max_f32" "$TMPD/p1.hlo" "typed attributes printed"
expect_grep 'metadata={op_type="softmax" op_name="jit(model)/softmax"}' "$TMPD/p1.hlo" "raw attribute kept verbatim"

# print is a fixed point: printing the printed text changes nothing.
expect_status 0 "--print - reads stdin" sh -c "\"$TUNE\" --print - < \"$TMPD/p1.hlo\""
if cmp -s "$TMPD/out" "$TMPD/p1.hlo"; then ok "print(parse(print(x))) == print(x)"; else not_ok "print is not a fixed point"; fi

expect_status 0 "-o writes a file" "$TUNE" --print "$softmax" -o "$TMPD/p2.hlo"
if cmp -s "$TMPD/p1.hlo" "$TMPD/p2.hlo"; then ok "-o output equals stdout output"; else not_ok "-o output differs"; fi

expect_status 2 "missing file is bad input" "$TUNE" --print "$TMPD/nope.hlo"
expect_grep "nope.hlo" "$TMPD/err" "missing file named in the error"
finish
