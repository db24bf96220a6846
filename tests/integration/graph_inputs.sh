#!/bin/sh
# graph_inputs.sh — a unit of a larger module is checked on the operands
# that really reach it when the whole module is evaluated once (issue 12
# item 2; tuner/run/capture.h), and the captured inputs are stored with the
# results.  The module below feeds an iota (0, 1, 2, ... along each row)
# into a while loop whose body negates it twice (unit y), then sums the
# rows (unit rs): y sees the iota at its first execution and its negation
# at its second, rs sees the iota again.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
if ! command -v h5dump >/dev/null 2>&1; then echo "skip: no h5dump"; exit 77; fi
cat >g.hlo <<'HLO'
HloModule g

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused_neg {
  p0 = f32[8,128]{1,0} parameter(0)
  ROOT e = f32[8,128]{1,0} negate(p0)
}

fused_rowsum {
  q0 = f32[8,128]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8]{0} reduce(q0, z), dimensions={1}, to_apply=add_f32
}

body {
  t = (s32[], f32[8,128]{1,0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  x = f32[8,128]{1,0} get-tuple-element(t), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = f32[8,128]{1,0} fusion(x), kind=kLoop, calls=fused_neg
  ROOT out = (s32[], f32[8,128]{1,0}) tuple(i2, y)
}

cond {
  c = (s32[], f32[8,128]{1,0}) parameter(0)
  ci = s32[] get-tuple-element(c), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

ENTRY main {
  a = f32[8,128]{1,0} iota(), iota_dimension=1
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]{1,0}) tuple(zero, a)
  loop = (s32[], f32[8,128]{1,0}) while(init), condition=cond, body=body
  h = f32[8,128]{1,0} get-tuple-element(loop), index=1
  ROOT rs = f32[8]{0} fusion(h), kind=kInput, calls=fused_rowsum
}
HLO

# first_row FILE.h5: the first printed row of the one stored inputs/0
first_row() { h5dump "$1" 2>/dev/null | grep -A6 'GROUP "inputs"' | grep '(0,0):' | head -n 1 | sed 's/^ *//'; }

expect_status 0 "y at its first execution" "$TUNE" --check g.hlo --fusion y --budget 2 -o y1.h5
expect_grep "inputs    graph: the operands of its execution 1 when the whole module is evaluated" "$TMPD/out" \
  "the summary says the inputs came from the graph"
case $(first_row y1.h5) in "(0,0): 0, 1, 2, 3, 4, 5,"*) ok "stored: the iota" ;; *) not_ok "y1: $(first_row y1.h5)" ;; esac
expect_status 0 "y at its second execution" "$TUNE" --check g.hlo --fusion y --budget 2 --iteration 2 -o y2.h5
case $(first_row y2.h5) in "(0,0): -0, -1, -2, -3, -4, -5,"* | "(0,0): 0, -1, -2, -3, -4, -5,"*) ok "stored: the negated iota" ;;
*) not_ok "y2: $(first_row y2.h5)" ;; esac
expect_status 0 "rs after the loop" "$TUNE" --check g.hlo --fusion rs --budget 2 -o rs.h5
case $(first_row rs.h5) in "(0,0): 0, 1, 2, 3, 4, 5,"*) ok "rs gets the iota back" ;; *) not_ok "rs: $(first_row rs.h5)" ;; esac
h5dump -A rs.h5 2>/dev/null | grep -A9 'ATTRIBUTE "inputs_from"' >attr.txt
expect_grep '"graph"' attr.txt "the results file says inputs_from graph"

expect_status 0 "an execution that never happens falls back to synthesised inputs" \
  "$TUNE" --check g.hlo --fusion y --budget 2 --iteration 3
expect_grep "inputs    synthetic: no graph inputs, it ran 2 times when the module was evaluated, not 3" "$TMPD/out" \
  "and says why"
expect_status 0 "--inputs-from synthetic" "$TUNE" --check g.hlo --fusion y --budget 2 --inputs-from synthetic -o s.h5
expect_grep "^  inputs    synthetic$" "$TMPD/out" "the summary says synthetic"
if h5dump s.h5 2>/dev/null | grep -q 'GROUP "inputs"'; then not_ok "synthetic inputs were stored"; else
  ok "synthesised inputs are not stored (the seed makes them again)"; fi
expect_status 2 "--inputs-from must be graph or synthetic" "$TUNE" --check g.hlo --inputs-from file
expect_status 2 "--iteration must be at least 1" "$TUNE" --check g.hlo --iteration 0

# A module that cannot be evaluated as a whole: its units fall back.
sed -e 's/  ROOT rs = f32\[8\]{0} fusion(h), kind=kInput, calls=fused_rowsum/  cc = f32[8,128]{1,0} custom-call(h), custom_call_target="foo"\n  ROOT rs = f32[8]{0} fusion(cc), kind=kInput, calls=fused_rowsum/' \
  g.hlo >gc.hlo
expect_status 0 "a custom-call elsewhere: units still checked" "$TUNE" --check gc.hlo --budget 2
expect_grep "inputs    synthetic: no graph inputs, the module cannot be evaluated whole: .*custom-call" "$TMPD/out" \
  "the fallback names the reason"
finish
