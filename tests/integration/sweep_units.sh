#!/bin/sh
# sweep_units.sh — `tune --sweep` on real modules (issue 12): every unit is
# checked on the inputs `--check` gives it (the operands that reach it when
# the whole module is evaluated), units of two files that share a name are
# told apart, and a sweep killed in the middle of a module resumes without
# checking that module's finished units again.
#
# The module: an iota (0, 1, 2, ... along each row) goes into unit `main`,
# which negates it; unit rs sums the rows of main's output; unit mm, a dot
# of two parameters, is the slow one the kill lands in.  a/g.hlo and
# b/g.hlo are the same module, so both have a unit called main.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1
if ! command -v h5dump >/dev/null 2>&1; then echo "skip: no h5dump"; exit 77; fi
mkdir a b
cat >a/g.hlo <<'HLO'
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

ENTRY main {
  a = f32[8,128]{1,0} iota(), iota_dimension=1
  w = f32[256,1024]{1,0} parameter(0)
  x = f32[32,256]{1,0} parameter(1)
  main = f32[8,128]{1,0} fusion(a), kind=kLoop, calls=fused_neg
  mm = f32[32,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  rs = f32[8]{0} fusion(main), kind=kInput, calls=fused_rowsum
  ROOT t = (f32[32,1024]{1,0}, f32[8]{0}) tuple(mm, rs)
}
HLO
cp a/g.hlo b/g.hlo

# write_cfg FILE OUTPUT
write_cfg() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ "a/g.hlo", "b/g.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  budget = 8;
  threads = 1;
  output = "$2";
};
EOF2
}
RUN=R-tpu-v5e
# groups FILE: the path of every fusion group of the file.
groups() { h5ls -r "$1" 2>/dev/null | awk '$1 ~ /\/fusions\/[0-9a-f]+(-[0-9]+)?$/ { print $1 }'; }
# unit FILE GROUP: the group's unit attribute (FILE:NAME).
unit() { h5dump -a "$2/unit" "$1" 2>/dev/null | sed -n 's/^ *(0): "\(.*\)"$/\1/p'; }
# units FILE: the unit of every fusion group, sorted.
units() { for g in $(groups "$1"); do unit "$1" "$g"; done | sort; }
# first_row FILE UNIT: the first printed row of that unit's stored inputs/0.
first_row() {
  for g in $(groups "$1"); do
    if [ "$(unit "$1" "$g")" = "$2" ]; then
      h5dump -d "$g/inputs/0" "$1" 2>/dev/null | grep '(0,0):' | head -n 1 | sed 's/^ *//'
    fi
  done
}
printf '%s\n' a/g.hlo:main a/g.hlo:mm a/g.hlo:rs b/g.hlo:main b/g.hlo:mm b/g.hlo:rs >want.units

# ---- a whole sweep: six units, graph inputs -----------------------------------
write_cfg full.cfg full.h5
expect_status 0 "the sweep of two modules completes" "$TUNE" --sweep full.cfg --run-id R
cp "$TMPD/err" full.err
if units full.h5 | cmp -s - want.units; then ok "six units, each FILE:NAME, both mains apart"; else
  not_ok "the run's units differ"; units full.h5 | diff want.units - | sed 's/^/  # /'; fi
expect_grep "a/g.hlo: main, 8 of [0-9]* candidates, 0 divergent, graph inputs" full.err \
  "the log says main was checked on graph inputs"
case $(first_row full.h5 a/g.hlo:main) in "(0,0): 0, 1, 2, 3, 4, 5,"*) ok "main's stored input is the iota" ;;
*) not_ok "a/g.hlo:main's input: $(first_row full.h5 a/g.hlo:main)" ;; esac
case $(first_row full.h5 b/g.hlo:rs) in "(0,0): -0, -1, -2, -3, -4, -5,"* | "(0,0): 0, -1, -2, -3, -4, -5,"*)
  ok "rs's stored input is main's output, the negated iota" ;;
*) not_ok "b/g.hlo:rs's input: $(first_row full.h5 b/g.hlo:rs)" ;; esac
# The same rule as --check: the unit gets the same operands there.
expect_status 0 "--check of the same unit" "$TUNE" --check a/g.hlo --fusion rs --budget 2 -o c.h5
if [ -n "$(first_row c.h5 a/g.hlo:rs)" ] && [ "$(first_row c.h5 a/g.hlo:rs)" = "$(first_row full.h5 a/g.hlo:rs)" ]; then
  ok "--sweep and --check store the same inputs for rs"; else
  not_ok "--check stored '$(first_row c.h5 a/g.hlo:rs)'"; fi

# ---- kill -9 in the middle of a/g.hlo, then the same sweep again ---------------
# The kill lands while mm (the slow unit) runs: main of a/g.hlo is stored,
# mm and rs are not.  The resumed run must check mm and rs, not main.
write_cfg k.cfg k.h5
"$TUNE" --sweep k.cfg --run-id R >k1.out 2>k1.err &
pid=$!
i=0
while [ $i -lt 1200 ] && ! grep -q 'a/g.hlo: main, ' k1.err 2>/dev/null && kill -0 $pid 2>/dev/null; do
  sleep 0.05; i=$((i + 1)); done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
grep 'candidates,' k1.err | sed 's/.* tune: \([^,]*\),.*/\1/' >k1.done
if [ "$(head -n 1 k1.done)" = "a/g.hlo: main" ] && ! grep -q '^b/' k1.done; then
  ok "the first sweep was killed inside a/g.hlo, after main ($(wc -l <k1.done) unit(s) done)"; else
  not_ok "the kill did not land inside a/g.hlo: done $(tr '\n' ';' <k1.done)"; fi
expect_status 0 "the restarted sweep completes" "$TUNE" --sweep k.cfg --run-id R
cp "$TMPD/err" k2.err
expect_grep "resuming run $RUN" k2.err "it resumes the killed run"
grep 'candidates,' k2.err | sed 's/.* tune: \([^,]*\),.*/\1/' >k2.done
if grep -q '^a/g.hlo: main$' k2.done; then not_ok "a/g.hlo's main was checked again"; else
  ok "a/g.hlo's finished unit main is not checked again"; fi
if grep -q '^a/g.hlo: rs$' k2.done; then ok "a/g.hlo's unfinished rs is checked"; else
  not_ok "a/g.hlo's rs was not checked on resume: $(tr '\n' ';' <k2.done)"; fi
if [ $(($(wc -l <k1.done) + $(wc -l <k2.done))) -eq 6 ]; then ok "six units checked in all, none twice"; else
  not_ok "checked $(wc -l <k1.done) then $(wc -l <k2.done) units"; fi
if units k.h5 | cmp -s - want.units; then ok "the resumed run holds each of the six units once"; else
  not_ok "the resumed run's units differ"; units k.h5 | diff want.units - | sed 's/^/  # /'; fi
finish
