#!/bin/sh
# reliability_files.sh — the file- and shell-safety guarantees (issue 11,
# items 1, 2, 3, 9, 10 and two of 14), each built from its reproducer:
# run.sh quotes every stored string and refuses control characters; an
# output that names an input is refused; --check -o takes the writer lock;
# a merge killed half-way finishes "complete" when run again; links are
# never written through (lock file, reproducer folder, -o); --eval files
# honour the umask; a strftime %n never makes a file name.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1

# status FILE RUN: the run's status attribute, or "" when absent.
status() { h5dump -a "/runs/$2/status" "$1" 2>/dev/null | sed -n 's/^ *(0): "\(.*\)"$/\1/p'; }
# nruns FILE, nfusions FILE RUN: group counts.
nruns() { h5ls "$1/runs" 2>/dev/null | grep -c Group; }
nfusions() { h5ls "$1/runs/$2/fusions" 2>/dev/null | grep -c Group; }
# has_runs FILE N: FILE is still a results file, with N runs.
has_runs() { [ "$(nruns "$1")" -eq "$2" ]; }

"$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o small.h5 >/dev/null 2>&1
if ! has_runs small.h5 1; then not_ok "setup: --check -o small.h5"; finish; exit 1; fi

# ---- 1. run.sh: one quoting function, control characters refused -----------
if "$PYTHON3" -c 'import h5py' 2>/dev/null; then
  "$TUNE" --check "$ds/qat_residual_f16.hlo" --defect elide-convert --budget 16 -q -o r.h5 >/dev/null 2>&1
  # edit FILE COMPILER EXTRA_COMMAND NAME: what anyone holding the file can do.
  # A run with a `defects` list gets its defect names from it, and only
  # names this tune models; without one (as in schema 1) they come from the
  # command line, where anything goes: extra --defect words drop the list.
  edit() {
    "$PYTHON3" - "$@" <<'PY'
import sys, h5py
path, compiler, extra, name = sys.argv[1:5]
with h5py.File(path, 'a') as f:
    run = f['runs'][list(f['runs'])[0]]
    run.attrs['compiler'] = compiler
    run.attrs['command'] = run.attrs['command'] + extra
    if '--defect' in extra and 'defects' in run.attrs:
        del run.attrs['defects']
    for fu in run['fusions'].values():
        fu.attrs['name'] = name
    print(list(run['fusions'])[0])
PY
  }
  cp r.h5 evil.h5
  fp=$(edit evil.h5 'stable$(touch PWNED_compiler)' " --defect \$(touch\${IFS}PWNED_defect) --defect * --defect it's" \
    "n'\$(touch PWNED_name)")
  # A stand-in for tune that prints each argument it gets on a line.
  printf '#!/bin/sh\nfor a; do printf "[%%s]\\n" "$a"; done\n' >args.sh
  chmod +x args.sh
  expect_status 0 "--reproduce of a file with shell code in its strings writes a bundle" \
    "$TUNE" --reproduce evil.h5 --fusion "$fp" --candidate 15 -o b1
  (cd b1 && TUNE="$TMPD/args.sh" sh ./run.sh >"$TMPD/args.out" 2>&1)
  pwned=$(find . -name 'PWNED_*' | tr '\n' ' ')
  if [ -n "$pwned" ]; then not_ok "run.sh ran commands from the results file: $pwned"
  else ok "run.sh runs none of the stored commands"; fi
  expect_grep '^\[stable$(touch PWNED_compiler)\]$' args.out "the compiler reaches tune as one literal argument"
  expect_grep '^\[$(touch${IFS}PWNED_defect)\]$' args.out "a stored defect name reaches tune as one literal argument"
  expect_grep '^\[\*\]$' args.out "a defect name '*' is not expanded as a pattern"
  expect_grep "^\[it's\]$" args.out "a quote in a defect name stays a quote"
  # A newline would end the comment line run.sh starts with: refused.
  cp r.h5 nl.h5
  fp=$(edit nl.h5 stable '' 'x
touch PWNED_name
#')
  expect_status 2 "--reproduce refuses a fusion name holding a newline" \
    "$TUNE" --reproduce nl.h5 --fusion "$fp" --candidate 15 -o b2
  expect_grep "fusion name holds a control character" "$TMPD/err" "the message says which string"
  if [ -e b2/run.sh ]; then not_ok "a run.sh was written anyway"; else ok "no run.sh is written"; fi
  cp r.h5 nl2.h5
  fp=$(edit nl2.h5 'stable
touch PWNED_compiler' '' n)
  expect_status 2 "--reproduce refuses a compiler holding a newline" \
    "$TUNE" --reproduce nl2.h5 --fusion "$fp" --candidate 15 -o b3
else
  echo "# h5py not available: the run.sh quoting is not exercised"
fi

# ---- 2. an output that names an input is refused -----------------------------
cp small.h5 x.h5
expect_status 2 "--report -o onto its own results file is refused" "$TUNE" --report x.h5 --format md -o x.h5
expect_grep "also an input" "$TMPD/err" "the message says the output is an input"
if has_runs x.h5 1; then ok "the results file is intact"; else not_ok "the results file was replaced"; fi
ln -s x.h5 xlink.h5
expect_status 2 "--report -o onto a link to its results file is refused" "$TUNE" --report x.h5 --format md -o xlink.h5
ln x.h5 xhard.h5
expect_status 2 "--report -o onto a hard link to its results file is refused" \
  "$TUNE" --report x.h5 --format md -o xhard.h5
if has_runs x.h5 1 && [ -L xlink.h5 ]; then ok "the results file and the link are intact"; else not_ok "x.h5 or xlink.h5 changed"; fi
expect_status 2 "--merge OUT OUT is refused" "$TUNE" --merge x.h5 small.h5 x.h5
if has_runs x.h5 1; then ok "the merge left OUT as it was"; else not_ok "the merge changed OUT"; fi
"$TUNE" --eval "$ds/softmax.hlo" -o in.h5 >/dev/null 2>&1
cp in.h5 in.before
expect_status 2 "--eval --inputs IN -o IN is refused" "$TUNE" --eval "$ds/softmax.hlo" --inputs in.h5 -o in.h5
if cmp -s in.h5 in.before; then ok "the inputs file is intact"; else not_ok "the inputs file was replaced"; fi
cp "$ds/softmax.hlo" mod.hlo
expect_status 2 "--eval M.hlo -o M.hlo is refused" "$TUNE" --eval mod.hlo -o mod.hlo
if cmp -s mod.hlo "$ds/softmax.hlo"; then ok "the module is intact"; else not_ok "the module was replaced"; fi
expect_status 2 "--print M.hlo -o M.hlo is refused" "$TUNE" --print mod.hlo -o mod.hlo
expect_status 2 "--space M.hlo -o M.hlo is refused" "$TUNE" --space mod.hlo -o mod.hlo
if cmp -s mod.hlo "$ds/softmax.hlo"; then ok "the module is still intact"; else not_ok "the module was replaced"; fi
expect_status 2 "--reproduce -o onto its results file is refused" \
  "$TUNE" --reproduce x.h5 --fusion fused_softmax --candidate 0 -o x.h5
# The sweep of report_clobbers_results.cfg: its report's output is its results file.
mkdir -p sweeps
"$TUNE" --check "$ds/layernorm.hlo" --budget 2 -q -o sweeps/r.h5 >/dev/null 2>&1
cat >clobber.cfg <<EOF
sweep: {
  corpus = [ "$ds/softmax.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "stable";
  inputs = "constrained";
  output = "sweeps/r.h5";
  budget = 2;
  reports = ( { format = "md"; output = "sweeps/./r.h5"; } );
};
EOF
expect_status 2 "a sweep whose report would replace its results file is refused" "$TUNE" --sweep clobber.cfg
expect_grep "also an input" "$TMPD/err" "the sweep says why"
if has_runs sweeps/r.h5 1; then ok "the earlier run survives (and no run was started)"; else
  not_ok "sweeps/r.h5 has $(nruns sweeps/r.h5) runs"; fi

# ---- 3. --check -o takes the lock the other writers take --------------------
cp small.h5 cc.h5
# flock(1) holds cc.h5.lock the way a running sweep does, for exactly as
# long as the command inside runs: no sleep, no race.
if command -v flock >/dev/null 2>&1; then
  expect_status 2 "--check -o on a locked results file is refused" \
    flock cc.h5.lock "$TUNE" --check "$ds/layernorm.hlo" --budget 2 -q -o cc.h5
  expect_grep "cc.h5 is locked by another writer" "$TMPD/err" "the message names the lock"
  if has_runs cc.h5 1; then ok "the refused check wrote nothing"; else not_ok "cc.h5 has $(nruns cc.h5) runs"; fi
  expect_status 2 "--merge into a locked file is refused" flock cc.h5.lock "$TUNE" --merge cc.h5 small.h5
else
  echo "# flock(1) not available: the lock is not exercised"
fi
expect_status 0 "--check -o appends once the lock is free" \
  "$TUNE" --check "$ds/layernorm.hlo" --budget 2 -q -o cc.h5
if has_runs cc.h5 2; then ok "the file has both runs"; else not_ok "cc.h5 has $(nruns cc.h5) runs"; fi

# ---- 9. a merge killed half-way, then run again: "complete" -------------------
cat >m.cfg <<EOF
sweep: { corpus = [ "$ds/softmax.hlo", "$ds/layernorm.hlo", "$ds/rmsnorm.hlo", "$ds/cumsum_rows.hlo" ];
  machines = [ "tpu-v5e" ]; compiler = "stable"; inputs = "constrained"; output = "x.h5"; budget = 2; threads = 1; };
EOF
"$TUNE" --sweep m.cfg --shard 1/2 --run-id J -o s1.h5 >/dev/null 2>&1
"$TUNE" --sweep m.cfg --shard 2/2 --run-id J -o s2.h5 >/dev/null 2>&1
"$TUNE" --merge full.h5 s1.h5 s2.h5 >/dev/null 2>&1
"$TUNE" --merge half.h5 s1.h5 >/dev/null 2>&1
total=$(nfusions full.h5 J-tpu-v5e)
if ! command -v prlimit >/dev/null 2>&1; then
  echo "# prlimit(1) not available: the killed merge is not exercised"
elif [ "$(status full.h5 J-tpu-v5e)" = complete ] && [ "$total" -ge 2 ]; then
  ok "an uninterrupted merge ends complete ($total fusions)"
  # A file size limit kills the merge (SIGXFSZ) at a write that depends only
  # on the bytes: half-way through the first part, then in the second.
  s_half=$(wc -c <half.h5)
  s_full=$(wc -c <full.h5)
  for limit in $((s_half / 2)) $(((s_half + s_full) / 2)); do
    rm -f out.h5 out.h5.*
    prlimit --fsize="$limit" "$TUNE" --merge out.h5 s1.h5 s2.h5 >/dev/null 2>&1
    killed=$(status out.h5 J-tpu-v5e)
    n=$(nfusions out.h5 J-tpu-v5e)
    if [ "$n" -lt "$total" ] && [ "$killed" = complete ]; then
      not_ok "killed at $limit bytes: the run says complete with $n of $total fusions"
    else ok "killed at $limit bytes: the run says '$killed' with $n of $total fusions"; fi
    "$TUNE" --merge out.h5 s1.h5 s2.h5 >/dev/null 2>&1
    if [ "$(status out.h5 J-tpu-v5e)" = complete ] && [ "$(nfusions out.h5 J-tpu-v5e)" -eq "$total" ]; then
      ok "the merge run again ends complete with every fusion"
    else not_ok "after the rerun: status '$(status out.h5 J-tpu-v5e)', $(nfusions out.h5 J-tpu-v5e) fusions"; fi
  done
else
  not_ok "setup: the uninterrupted merge says '$(status full.h5 J-tpu-v5e)' with $total fusions"
fi

# ---- 10. links are never written through ----------------------------------
echo precious >victim.txt
ln -s victim.txt m.h5.lock
expect_status 2 "a lock file that is a symbolic link is refused" "$TUNE" --merge m.h5 small.h5
expect_grep "m.h5.lock" "$TMPD/err" "the message names the lock file"
if [ "$(cat victim.txt)" = precious ]; then ok "the link's target is untouched"; else not_ok "victim.txt now holds '$(cat victim.txt)'"; fi
ln victim.txt h.h5.lock
expect_status 2 "a lock file that is a hard link is refused" "$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o h.h5
if [ "$(cat victim.txt)" = precious ]; then ok "the other name's file is untouched"; else not_ok "victim.txt now holds '$(cat victim.txt)'"; fi
rm -f h.h5.lock

mkdir shared
chmod 644 victim.txt
ln -s ../victim.txt shared/run.sh
ln -s ../victim.txt shared/inputs.h5
expect_status 0 "--reproduce into a folder holding planted links" \
  "$TUNE" --reproduce small.h5 --fusion fused_softmax --candidate 0 -o shared
if [ "$(cat victim.txt)" = precious ] && [ "$(stat -c %a victim.txt)" = 644 ]; then
  ok "the links' target is neither written nor chmodded"
else not_ok "victim.txt: mode $(stat -c %a victim.txt), '$(head -c 40 victim.txt)'"; fi
if [ ! -L shared/run.sh ] && [ -x shared/run.sh ] && [ ! -L shared/inputs.h5 ] && [ -s shared/inputs.h5 ]; then
  ok "the links were replaced by the bundle's own files"
else not_ok "shared/: $(ls -l shared | tr '\n' ' ')"; fi

cp small.h5 real.h5
ln -s real.h5 cur.h5
expect_status 0 "--check -o through a symbolic link" "$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o cur.h5
if [ -L cur.h5 ] && has_runs real.h5 2; then ok "the link stays a link and its target gets the run"; else
  not_ok "cur.h5 is $(stat -c %F cur.h5), real.h5 has $(nruns real.h5) runs"; fi
"$TUNE" --report real.h5 --format md -o rep.md >/dev/null 2>&1
ln -s rep.md cur.md
expect_status 0 "--report -o through a symbolic link" "$TUNE" --report real.h5 --format json -o cur.md
if [ -L cur.md ] && grep -q '^{' rep.md; then ok "the report goes into the link's target"; else not_ok "cur.md or rep.md"; fi
ln -s missing.h5 dangling.h5
expect_status 2 "-o on a link to a missing file is refused" "$TUNE" --check "$ds/softmax.hlo" --budget 2 -q -o dangling.h5
if [ ! -e missing.h5 ]; then ok "nothing is created where the link points"; else not_ok "missing.h5 was created"; fi

# ---- 14. --eval honours the umask; %n makes no file name -----------------
(umask 022 && "$TUNE" --eval "$ds/softmax.hlo" -o e1.h5 >/dev/null 2>&1)
(umask 027 && "$TUNE" --eval "$ds/softmax.hlo" -o e2.h5 >/dev/null 2>&1)
if [ "$(stat -c %a e1.h5)" = 644 ] && [ "$(stat -c %a e2.h5)" = 640 ]; then ok "--eval files are 0666 less the umask"
else not_ok "--eval file modes $(stat -c %a e1.h5) and $(stat -c %a e2.h5), wanted 644 and 640"; fi
cat >nl.cfg <<EOF
sweep: { corpus = [ "$ds/softmax.hlo" ]; machines = [ "tpu-v5e" ]; compiler = "stable"; inputs = "constrained";
  output = "nl%n.h5"; budget = 2; };
EOF
expect_status 2 "an output pattern with %n is refused" "$TUNE" --sweep nl.cfg
expect_grep "control character" "$TMPD/err" "the message says why"
if ls | grep -q '^nl$'; then not_ok "a file name with a newline was created"; else ok "no file name holds a newline"; fi
cat >nl2.cfg <<EOF
sweep: { corpus = [ "$ds/softmax.hlo" ]; machines = [ "tpu-v5e" ]; compiler = "stable"; inputs = "constrained";
  output = "ok.h5"; budget = 2; reports = ( { format = "md"; output = "rep%t%n.md"; } ); };
EOF
expect_status 2 "a report pattern with %t%n is refused before the sweep" "$TUNE" --sweep nl2.cfg
if [ ! -e ok.h5 ]; then ok "no run was started"; else not_ok "ok.h5 was written"; fi
finish
