#!/bin/sh
# tune --check: the summary, exit statuses, JSON, determinism across thread
# counts (outputs, verdicts and HDF5 content, wall times aside), the clean
# compiler on every bundled fusion, and bad usage.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
D="$TUNE_SRCDIR/datasets"

expect_status 0 "clean softmax exits 0" "$TUNE" --check "$D/softmax.hlo" --budget 24
expect_grep "^  default   tile=" "$TMPD/out" "summary names the default config"
expect_grep "simulated .* us; vs reference: ok" "$TMPD/out" "default is checked against the reference"
expect_grep "^  best      tile=" "$TMPD/out" "summary names the best config"
expect_grep "speedup [0-9.]*x over the default" "$TMPD/out" "summary gives the best config's speedup"
expect_grep "^  verdicts  match=" "$TMPD/out" "summary counts verdicts"

# The QAT residual with converts elided: a real divergence, exit 1, with the
# reproducer command for each divergent candidate.
expect_status 1 "elide-convert on the QAT residual exits 1" \
  "$TUNE" --check "$D/qat_residual_f16.hlo" --defect elide-convert --budget 48
expect_grep "mismatch-candidate" "$TMPD/out" "the divergence is the candidate's"
expect_grep "reproduce: tune --check '.*qat_residual_f16.hlo' --only 'tile=" "$TMPD/out" "a reproducer command is printed"
cfg=$(sed -n "s/.*reproduce: tune --check '[^']*' --only '\([^']*\)'.*/\1/p" "$TMPD/out" | head -n 1)
expect_status 1 "the printed reproducer reproduces" \
  "$TUNE" --check "$D/qat_residual_f16.hlo" --only "$cfg" --defect elide-convert --seed 0
expect_status 0 "the same config on the clean compiler matches" \
  "$TUNE" --check "$D/qat_residual_f16.hlo" --only "$cfg" --seed 0

# --stop-on-mismatch names the candidate.
expect_status 1 "--stop-on-mismatch exits 1" \
  "$TUNE" --check "$D/qat_residual_f16.hlo" --defect elide-convert --budget 48 --stop-on-mismatch
expect_grep "stopping at the first divergence: .* candidate 'tile=" "$TMPD/err" "the stop names the candidate"

# JSON and determinism: 1 and 2 threads give identical JSON (no wall times in it).
expect_status 0 "--json with 1 thread" "$TUNE" --check "$D/layernorm.hlo" --budget 24 --seed 5 --threads 1 --json
cp "$TMPD/out" "$TMPD/t1.json"
expect_status 0 "--json with 2 threads" "$TUNE" --check "$D/layernorm.hlo" --budget 24 --seed 5 --threads 2 --json
if cmp -s "$TMPD/t1.json" "$TMPD/out"; then ok "JSON identical for 1 and 2 threads"; else not_ok "JSON differs between thread counts"; fi
if "$PYTHON3" -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMPD/t1.json" 2>/dev/null; then
  ok "--json output parses"
elif "$PYTHON3" -c 'import json' 2>/dev/null; then not_ok "--json output does not parse"; fi

# HDF5 content for 1 and 2 threads, compared with h5py (wall times and run
# identity aside) when it is available.
OMP_NUM_THREADS=1 "$TUNE" --check "$D/row_sum_long.hlo" "$D/qat_residual_bf16.hlo" --budget 24 --seed 7 -q -o "$TMPD/a.h5" >/dev/null 2>&1
OMP_NUM_THREADS=2 "$TUNE" --check "$D/row_sum_long.hlo" "$D/qat_residual_bf16.hlo" --budget 24 --seed 7 -q -o "$TMPD/b.h5" >/dev/null 2>&1
if "$PYTHON3" -c 'import h5py, numpy' 2>/dev/null; then
  if "$PYTHON3" - "$TMPD/a.h5" "$TMPD/b.h5" <<'PY'
import sys, h5py, numpy as np
SKIP_ATTRS = {"started", "created_ns", "finished", "command", "host", "wall_time"}
def runs(f):
    (rid,) = list(f["runs"].keys())
    return f["runs"][rid]
def same(a, b, path):
    for k in set(a.attrs) | set(b.attrs):
        if k in SKIP_ATTRS: continue
        va, vb = a.attrs.get(k), b.attrs.get(k)
        if not np.array_equal(np.asarray(va), np.asarray(vb)):
            sys.exit("attr %s/%s differs: %r vs %r" % (path, k, va, vb))
    if isinstance(a, h5py.Group):
        if set(a.keys()) != set(b.keys()):
            sys.exit("members of %s differ" % path)
        for k in a.keys():
            same(a[k], b[k], path + "/" + k)
        return
    x, y = a[()], b[()]
    if not hasattr(x, "dtype"):
        if x != y:
            sys.exit("dataset %s differs" % path)
        return
    if x.dtype.names:
        names = [n for n in x.dtype.names if n not in ("wall_time",)]
        for n in names:
            if not np.array_equal(x[n], y[n]):
                sys.exit("column %s of %s differs" % (n, path))
    elif not np.array_equal(x, y):
        sys.exit("dataset %s differs" % path)
with h5py.File(sys.argv[1], "r") as fa, h5py.File(sys.argv[2], "r") as fb:
    same(runs(fa), runs(fb), "run")
PY
  then ok "HDF5 content identical for 1 and 2 threads (wall times aside)"; else not_ok "HDF5 content differs between thread counts"; fi
else
  echo "# h5py not available: HDF5 determinism compared through JSON only"
fi

# Every bundled fusion passes on the clean compiler (a small budget per
# fusion keeps this quick; the defect tests cover the triggering configs).
bad=0; n=0
while IFS="$(printf '\t')" read -r file what defects replicas rest; do
  case "$file" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  if ! "$TUNE" --check "$D/$file" --budget 6 -q >"$TMPD/c.out" 2>&1; then
    bad=$((bad + 1)); echo "# clean check failed: $file"; head -n 8 "$TMPD/c.out" | sed 's/^/#   /'
  fi
done < "$D/MANIFEST"
if [ "$bad" -eq 0 ] && [ "$n" -ge 40 ]; then ok "clean compiler: all $n bundled fusions exit 0"; else not_ok "clean compiler: $bad of $n fusions diverge"; fi

# Bad usage and bad input: exit 2 with a clear message.
expect_status 2 "unknown machine" "$TUNE" --check "$D/softmax.hlo" --machine tpu-v99
expect_grep "tpu-v99" "$TMPD/err" "the unknown machine is named"
expect_status 2 "unknown defect" "$TUNE" --check "$D/softmax.hlo" --defect no-such-defect
expect_grep "no-such-defect" "$TMPD/err" "the unknown defect is named"
expect_status 2 "unknown compiler profile" "$TUNE" --check "$D/softmax.hlo" --compiler nope
expect_status 2 "malformed --only config" "$TUNE" --check "$D/softmax.hlo" --only 'tile=8 buf=2'
expect_grep "error: " "$TMPD/err" "the bad config is reported as an error"
# A word that is not KEY=VALUE is bad usage, refused before any file is
# read (it used to surface after the whole reference evaluation).
expect_status 2 "--only DEFAULT is bad usage" "$TUNE" --check "$TMPD/no-such-file.hlo" --only DEFAULT
expect_grep "^tune: --only: column 1: 'DEFAULT' is not KEY=VALUE" "$TMPD/err" "--only is refused before the file is opened"
expect_status 2 "bad --budget" "$TUNE" --check "$D/softmax.hlo" --budget zero
expect_status 2 "bad --atol" "$TUNE" --check "$D/softmax.hlo" --atol -1
printf 'ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(p), custom_call_target="foo"\n}\n' > "$TMPD/cc.hlo"
# An op the checker cannot evaluate makes its unit unsupported, named with
# the op; with nothing else to check, nothing is verified: exit 3.
expect_status 3 "an unsupported op: nothing verified" "$TUNE" --check "$TMPD/cc.hlo"
expect_grep "unsupported: .*custom-call" "$TMPD/out" "the unsupported op is named"
finish
