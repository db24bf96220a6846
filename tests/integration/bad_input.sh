#!/bin/sh
# Bad input: every case exits 2 with `FILE:LINE:COL: error: ...`, never a
# crash (a sanitizer build turns a crash or leak into another exit status).
. "$TUNE_SRCDIR/tests/integration/lib.sh"

# bad NAME LINE COL MESSAGE-PATTERN: the file $TMPD/NAME.hlo must be refused
# at LINE:COL with a message matching the pattern.
bad() {
  f="$TMPD/$1.hlo"
  expect_status 2 "$1: refused with status 2" "$TUNE" --print "$f"
  expect_grep "^$f:$2:$3: error: .*$4" "$TMPD/err" "$1: error at $2:$3 says '$4'"
}

: > "$TMPD/empty.hlo"
bad empty 1 1 "empty"

printf 'HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] add(p, p' > "$TMPD/truncated.hlo"
bad truncated 5 27 "end of input"

head -c 4096 /dev/urandom > "$TMPD/garbage.hlo" 2>/dev/null || dd if=/dev/urandom of="$TMPD/garbage.hlo" bs=4096 count=1 2>/dev/null
expect_status 2 "binary garbage: refused with status 2" "$TUNE" --print "$TMPD/garbage.hlo"
expect_grep "garbage.hlo:[0-9]*:[0-9]*: error: " "$TMPD/err" "binary garbage: positioned error"

printf 'HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n' > "$TMPD/unbalanced.hlo"
bad unbalanced 5 1 "end of input"

printf 'ENTRY e {\n  ROOT p = f32[99999999999999999999] parameter(0)\n}\n' > "$TMPD/overflow.hlo"
bad overflow 2 16 "overflow"

deep=""; close=""
i=0; while [ $i -lt 200 ]; do deep="$deep("; close="$close)"; i=$((i + 1)); done
printf 'ENTRY e {\n  ROOT p = %sf32[]%s parameter(0)\n}\n' "$deep" "$close" > "$TMPD/deep.hlo"
expect_status 2 "deeply nested tuple: refused with status 2" "$TUNE" --print "$TMPD/deep.hlo"
expect_grep "deep.hlo:2:[0-9]*: error: .*nest" "$TMPD/err" "deeply nested tuple: says nesting"

printf 'ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] add(p, q)\n}\n' > "$TMPD/undefined.hlo"
bad undefined 3 26 "q"

printf 'ENTRY e {\n  p = f32[4] parameter(0)\n  p = f32[4] negate(p)\n  ROOT r = f32[4] negate(p)\n}\n' > "$TMPD/duplicate.hlo"
bad duplicate 3 3 "duplicate"

printf 'ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] add(p)\n}\n' > "$TMPD/arity.hlo"
bad arity 3 "[0-9]*" "operand"

printf 'ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] frobnicate(p)\n}\n' > "$TMPD/opcode.hlo"
bad opcode 3 19 "frobnicate"

printf 'ENTRY e {\n  p = f33[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n' > "$TMPD/etype.hlo"
bad etype 2 7 "f33"
finish
