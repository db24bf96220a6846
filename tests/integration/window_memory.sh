#!/bin/sh
# window_memory.sh — the reference evaluates a reduce-window in memory that
# grows with its input and output, not with their product.  A prefix scan
# written as a window as long as its input (size n, padding n-1, XLA's
# reduce-window rewriter emits exactly this; corpus module 0117 has
# n = 46592) once took a table of n^2 offsets: 17 GB there, 512 MiB for
# the n = 8192 used here.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
cat >scan.hlo <<'HLO'
HloModule prefix_scan

MaxMin {
  l.max = f32[] parameter(0)
  l.min = f32[] parameter(1)
  r.max = f32[] parameter(2)
  r.min = f32[] parameter(3)
  max = f32[] maximum(l.max, r.max)
  min = f32[] minimum(l.min, r.min)
  ROOT root = (f32[], f32[]) tuple(max, min)
}

ENTRY entry {
  up = f32[8192]{0} iota(), iota_dimension=0
  down = f32[8192]{0} negate(up)
  init_ninf = f32[] constant(-inf)
  init_inf = f32[] constant(inf)
  ROOT scan = (f32[8192]{0}, f32[8192]{0}) reduce-window(up, down, init_ninf, init_inf), window={size=8192 pad=8191_0}, to_apply=MaxMin
}
HLO
if [ -x /usr/bin/time ]; then
  expect_status 0 "--eval of an 8192-long variadic prefix scan" /usr/bin/time -f '%M' -o rss "$TUNE" --eval scan.hlo -o scan.h5
  # The values: 2 x 32 KiB in, 2 x 32 KiB out.  The bound leaves room for
  # the program and a sanitizer's shadow memory, and is a quarter of the
  # old table alone.
  kib=$(tail -n 1 rss | tr -cd 0-9)
  if [ -n "$kib" ] && [ "$kib" -lt 131072 ]; then ok "peak resident memory ${kib} KiB < 128 MiB"; else
    not_ok "peak resident memory ${kib:-?} KiB, wanted < 128 MiB"; fi
else
  expect_status 0 "--eval of an 8192-long variadic prefix scan" "$TUNE" --eval scan.hlo -o scan.h5
fi
# Output i of the scan is the max of 0..i, i.e. i, and the min of
# 0..-i, i.e. -i.
if command -v h5dump >/dev/null 2>&1; then
  for k in 0 1; do
    h5dump -y -w 0 -o data$k -d /outputs/$k scan.h5 >/dev/null
    tr ', ' '\n\n' <data$k | grep -v '^$' >out$k
  done
  if [ "$(wc -l <out0)" = 8192 ] && awk '$1 != NR - 1 { bad = 1 } END { exit bad }' out0; then
    ok "the running max of 0, 1, ..., 8191 is i at i"; else not_ok "running max: $(head -c 80 out0 | tr '\n' ' ')"; fi
  if [ "$(wc -l <out1)" = 8192 ] && awk '$1 != -(NR - 1) { bad = 1 } END { exit bad }' out1; then
    ok "the running min of 0, -1, ..., -8191 is -i at i"; else not_ok "running min: $(head -c 80 out1 | tr '\n' ' ')"; fi
fi
finish
