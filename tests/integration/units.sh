#!/bin/sh
# units.sh — a module is a program and its fusions are the tuning units
# (issue 12 items 1, 4 and 6; tuner/run/units.h).  Expected lines are written
# by hand from the modules below and dev_fusion.h's estimates: flops count
# one per element of each non-parameter, non-constant op, a reduce its
# input's elements, a dot 2 * outputs * K; bytes are the kernel's
# parameters plus its output.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1

# Two fusions (one inside a while body) and a dot outside any fusion.
cat >multi.hlo <<'HLO'
HloModule multi, entry_computation_layout={(f32[8,128]{1,0}, f32[128,16]{1,0})->f32[8]{0}}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused_exp {
  p0 = f32[8,128]{1,0} parameter(0)
  ROOT e = f32[8,128]{1,0} exponential(p0)
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
  y = f32[8,128]{1,0} fusion(x), kind=kLoop, calls=fused_exp
  ROOT out = (s32[], f32[8,128]{1,0}) tuple(i2, y)
}

cond {
  c = (s32[], f32[8,128]{1,0}) parameter(0)
  ci = s32[] get-tuple-element(c), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(ci, n), direction=LT
}

ENTRY main {
  a = f32[8,128]{1,0} parameter(0)
  w = f32[128,16]{1,0} parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]{1,0}) tuple(zero, a)
  loop = (s32[], f32[8,128]{1,0}) while(init), condition=cond, body=body
  h = f32[8,128]{1,0} get-tuple-element(loop), index=1
  mm = f32[8,16]{1,0} dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT rs = f32[8]{0} fusion(h), kind=kInput, calls=fused_rowsum
}
HLO

cat >want.list <<'EOF2'
multi.hlo:y kind=kLoop hero=loop shape=f32[8,128]{1,0} flops=1024 bytes=8192 in=body
multi.hlo:mm kind=op hero=dot shape=f32[8,16]{1,0} flops=32768 bytes=12800 in=main
multi.hlo:rs kind=kInput hero=reduce shape=f32[8]{0} flops=1024 bytes=4128 in=main
EOF2
expect_status 0 "--list-fusions of a module with three units" "$TUNE" --list-fusions multi.hlo
if cmp -s "$TMPD/out" want.list; then ok "one line per unit: name, kind, hero, shape, flops, bytes, computation"; else
  not_ok "--list-fusions output differs"; diff want.list "$TMPD/out" | sed 's/^/  # /'; fi

expect_status 0 "--check checks every unit" "$TUNE" --check multi.hlo --budget 3
cp "$TMPD/out" all.out
for u in y mm rs; do
  expect_grep "^fusion $u (.*) from multi.hlo: verified$" all.out "unit $u is checked on its own"
done
expect_grep "^fusion y (loop) " all.out "the fusion inside the while body is a loop unit"
expect_grep "^fusion mm (dot) " all.out "the dot outside a fusion is a dot unit, not a loop"
expect_grep "3 of [0-9]* candidates checked .*(the space was cut by --budget)" all.out \
  "the summary says how many of the space were checked, and that --budget cut it"

# --fusion selects by shell glob, over NAME or FILE:NAME.
expect_status 0 "--fusion 'r*'" "$TUNE" --check multi.hlo --budget 2 --fusion 'r*'
if [ "$(grep -c '^fusion ' "$TMPD/out")" = 1 ] && grep -q '^fusion rs ' "$TMPD/out"; then ok "'r*' selects rs alone"; else
  not_ok "'r*' did not select rs alone"; grep '^fusion ' "$TMPD/out" | sed 's/^/  # /'; fi
expect_status 0 "--fusion FILE:NAME glob, repeated" "$TUNE" --list-fusions multi.hlo --fusion 'multi.hlo:m?' --fusion y
if [ "$(cut -d' ' -f1 "$TMPD/out" | tr '\n' ' ')" = "multi.hlo:y multi.hlo:mm " ]; then ok "two globs select y and mm"; else
  not_ok "globs selected: $(cut -d' ' -f1 "$TMPD/out" | tr '\n' ' ')"; fi
expect_status 2 "a --fusion that matches nothing is bad usage" "$TUNE" --check multi.hlo --fusion 'nope*'
expect_grep "no unit matches 'nope\*'" "$TMPD/err" "the pattern is named"

# --run-time-budget bounds the run: a unit that would start after it ran
# out is not checked, and says so (1e-9 s has passed before the first).
expect_status 3 "a run budget spent before the first unit: nothing verified" \
  "$TUNE" --check multi.hlo --budget 2 --run-time-budget 1e-9
if [ "$(grep -c ': timed out: the run.s time budget (--run-time-budget 1e-09 s) ran out before this unit$' "$TMPD/out")" = 3 ]; then
  ok "each of the three units says the run's budget ran out"; else not_ok "no timed-out units"; sed 's/^/  # /' "$TMPD/out"; fi
expect_status 0 "a run budget that suffices verifies every unit" "$TUNE" --check multi.hlo --budget 2 --run-time-budget 3600
# Under a run budget the cheapest units run first, so that running out
# leaves the costliest unchecked.  By the listing above (flops + bytes,
# each unit with 2 candidates): rs 1024 + 4128, y 1024 + 8192,
# mm 32768 + 12800.  Without the budget: program order, y mm rs.
if [ "$(sed -n 's/^fusion \([a-z]*\) .*/\1/p' "$TMPD/out" | tr '\n' ' ')" = "rs y mm " ]; then
  ok "under --run-time-budget the units run cheapest first: rs y mm"; else
  not_ok "order under --run-time-budget: $(sed -n 's/^fusion \([a-z]*\) .*/\1/p' "$TMPD/out" | tr '\n' ' ')"; fi
if [ "$(sed -n 's/^fusion \([a-z]*\) .*/\1/p' all.out | tr '\n' ' ')" = "y mm rs " ]; then
  ok "without it, program order: y mm rs"; else
  not_ok "order without a budget: $(sed -n 's/^fusion \([a-z]*\) .*/\1/p' all.out | tr '\n' ' ')"; fi
expect_status 2 "--run-time-budget must be a number" "$TUNE" --check multi.hlo --run-time-budget soon

# Names XLA keeps unique but a hand-written module repeats are told apart
# by the computation they sit in.
sed -e 's/  y = f32\[8,128\]{1,0} fusion(x), kind=kLoop, calls=fused_exp/  rs = f32[8,128]{1,0} fusion(x), kind=kLoop, calls=fused_exp/' \
    -e 's/tuple(i2, y)/tuple(i2, rs)/' multi.hlo >dup.hlo
expect_status 0 "--list-fusions with a repeated name" "$TUNE" --list-fusions dup.hlo
if [ "$(cut -d' ' -f1 "$TMPD/out" | tr '\n' ' ')" = "dup.hlo:rs@body dup.hlo:mm dup.hlo:rs@main " ]; then
  ok "repeated names become NAME@COMPUTATION"; else not_ok "listed: $(cut -d' ' -f1 "$TMPD/out" | tr '\n' ' ')"; fi

# Two hand-fused modules whose entries are both called main: one unit
# each, told apart by their files everywhere.
mkdir a b
printf 'HloModule m\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\nENTRY main {\n  p = f32[16,256]{1,0} parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[16]{0} reduce(p, z), dimensions={1}, to_apply=add\n}\n' >a/m.hlo
printf 'HloModule m\n\nENTRY main {\n  p = f32[16,256]{1,0} parameter(0)\n  ROOT t = f32[16,256]{1,0} tanh(p)\n}\n' >b/m.hlo
expect_status 0 "--list-fusions of two modules with main" "$TUNE" --list-fusions a/m.hlo b/m.hlo
printf 'a/m.hlo:main kind=module hero=reduce shape=f32[16]{0} flops=4096 bytes=16448 in=main\nb/m.hlo:main kind=module hero=loop shape=f32[16,256]{1,0} flops=4096 bytes=32768 in=main\n' >want2.list
if cmp -s "$TMPD/out" want2.list; then ok "each main is FILE:main"; else
  not_ok "two mains listed wrongly"; diff want2.list "$TMPD/out" | sed 's/^/  # /'; fi
expect_status 0 "--check both mains into one results file" "$TUNE" --check a/m.hlo b/m.hlo --budget 2 -o r.h5
if command -v h5dump >/dev/null 2>&1; then
  h5dump -A r.h5 >attrs.txt 2>/dev/null
  if grep -A9 'ATTRIBUTE "unit"' attrs.txt | grep -q '"a/m.hlo:main"' &&
     grep -A9 'ATTRIBUTE "unit"' attrs.txt | grep -q '"b/m.hlo:main"'; then
    ok "the results file names the units a/m.hlo:main and b/m.hlo:main"; else
    not_ok "unit attributes missing"; grep -A9 'ATTRIBUTE "unit"' attrs.txt | head -n 10 | sed 's/^/  # /'; fi
fi
expect_status 0 "--fusion by FILE:NAME picks one of the two mains" "$TUNE" --check a/m.hlo b/m.hlo --budget 2 --fusion 'b/m.hlo:main'
if grep -q '^fusion main (loop) from b/m.hlo' "$TMPD/out" && ! grep -q 'from a/m.hlo' "$TMPD/out"; then
  ok "only b/m.hlo's main is checked"; else not_ok "wrong main checked"; grep '^fusion' "$TMPD/out" | sed 's/^/  # /'; fi

# A module with no unit says so on one line, and nothing was verified: 3.
printf 'HloModule idle\n\nbody {\n  t = (s32[]) parameter(0)\n  i = s32[] get-tuple-element(t), index=0\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  ROOT o = (s32[]) tuple(j)\n}\n\ncond {\n  c = (s32[]) parameter(0)\n  k = s32[] get-tuple-element(c), index=0\n  n = s32[] constant(3)\n  ROOT l = pred[] compare(k, n), direction=LT\n}\n\nENTRY main {\n  z = s32[] constant(0)\n  t0 = (s32[]) tuple(z)\n  ROOT w = (s32[]) while(t0), condition=cond, body=body\n}\n' >idle.hlo
expect_status 3 "nothing to tune: nothing verified, exit 3" "$TUNE" --check idle.hlo
if [ "$(cat "$TMPD/out")" = "idle.hlo: nothing to tune (no fusion and no op that runs as a kernel of its own)" ]; then
  ok "one line says nothing to tune"; else not_ok "no 'nothing to tune' line"; sed 's/^/  # /' "$TMPD/out"; fi
expect_status 0 "--list-fusions says it too" "$TUNE" --list-fusions idle.hlo
expect_grep "^idle.hlo: nothing to tune" "$TMPD/out" "--list-fusions: nothing to tune"

# One unsupported op does not sink the module: its unit is unsupported,
# named with the op, and the other units are still checked (exit 0).
sed -e 's/ROOT e = f32\[8,128\]{1,0} exponential(p0)/ROOT e = f32[8,128]{1,0} custom-call(p0), custom_call_target="foo"/' \
  multi.hlo >cc.hlo
expect_status 0 "a module with one unsupported unit still checks the others" "$TUNE" --check cc.hlo --budget 2
expect_grep "^fusion y from cc.hlo: unsupported: .*custom-call" "$TMPD/out" "the unsupported unit names its op"
expect_grep "^fusion rs (reduce) from cc.hlo: verified" "$TMPD/out" "the other units are verified"
expect_status 0 "--json says so too" "$TUNE" --check cc.hlo --budget 2 --json
expect_grep '"fusion": "y", "status": "unsupported", "reason": ".*custom-call' "$TMPD/out" "JSON: status and reason"
expect_status 3 "only the unsupported unit: nothing verified, exit 3" "$TUNE" --check cc.hlo --fusion y

# A finding in one unit of two: exit 1, and its reproducer selects it.
cat >two.hlo <<'HLO'
HloModule two

fused_qat {
  a = f32[64,256]{1,0} parameter(0)
  h = f16[64,256]{1,0} convert(a)
  b = f32[64,256]{1,0} convert(h)
  ROOT d = f32[64,256]{1,0} subtract(a, b)
}

fused_neg {
  n = f32[64,256]{1,0} parameter(0)
  ROOT m = f32[64,256]{1,0} negate(n)
}

ENTRY main {
  x = f32[64,256]{1,0} parameter(0)
  q = f32[64,256]{1,0} fusion(x), kind=kLoop, calls=fused_qat
  ROOT g = f32[64,256]{1,0} fusion(q), kind=kLoop, calls=fused_neg
}
HLO
expect_status 1 "elide-convert diverges in unit q" "$TUNE" --check two.hlo --defect elide-convert --budget 16
cp "$TMPD/out" two.out
expect_grep "^fusion q (loop) from two.hlo: diverged" two.out "q diverged"
expect_grep "^fusion g (loop) from two.hlo: verified" two.out "g is verified"
cmd=$(sed -n 's/^ *reproduce: //p' two.out | head -n 1)
case $cmd in
*" --fusion 'q'") ok "the reproducer names the unit" ;;
*) not_ok "the reproducer does not select the unit: $cmd" ;;
esac
eval "set -- $(printf '%s' "$cmd" | sed 's/^tune //')"
expect_status 1 "the reproducer reproduces the finding" "$TUNE" "$@"
if [ "$(grep -c '^fusion ' "$TMPD/out")" = 1 ]; then ok "and checks that unit alone"; else not_ok "reproducer checked more units"; fi
finish
