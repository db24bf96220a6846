#!/bin/sh
# isolate_store.sh — `tune --isolate -o RESULTS.h5` (issue 16 item 4)
# stores the isolation under a new run of the results file, beside the
# runs already there.
#
# The case: datasets/train_step.hlo with elide-convert and qat_residual's
# fused kernel given flags=fuse-converts (isolate.sh: a fusion-bug, the
# only culprit).  Its fused computation is
#   p0 = f32 parameter(0); h = f16 convert(p0); back = f32 convert(h);
#   ROOT res = subtract(p0, back)
# and the defect drops the convert pair, so the kernel's `back` is p0
# itself.  From that, by hand:
#  - qat_residual is the 10th unit in program order (index 9), class
#    fusion-bug, rank 1; every other unit is ok; its output is 0 on the
#    device where the reference has p0 - f32(f16(p0)): max rel exactly 1;
#  - the instructions inspected are p0, h, back, res in that order; the
#    first diverging one is back, its only operand h, which is right;
#  - every reference value of back is an f16 value, and every device value
#    of back rounds to it in f16 (it is p0 before the rounding);
#  - the fusion graph's edges: qat_residual reads only the parameter w
#    (no unit), adam reads grad_w and qat_residual.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/train_step.hlo" ]; then echo "skip: no multi-fusion datasets"; exit 77; fi
cd "$TMPD" || exit 1

# a --check run first: the isolation must not lose it
"$TUNE" --check "$ds/qat_residual_f16.hlo" --budget 8 -q -o r.h5 >/dev/null 2>&1
expect_status 1 "--isolate -o appends a run" "$TUNE" --isolate "$ds/train_step.hlo" --defect elide-convert \
  --config 'qat_residual=flags=fuse-converts' -o r.h5
cp "$TMPD/out" iso.out
expect_grep "^  1\. qat_residual: fusion-bug" iso.out "the printed result is unchanged by -o"

if command -v h5ls >/dev/null 2>&1; then
  h5ls -r r.h5 >ls.out 2>&1
  expect_grep "/runs/[^/]*/isolation/units *Dataset {12}" ls.out "h5ls: a units table of 12 rows"
  expect_grep "/runs/[^/]*/isolation/culprits/9/instructions *Dataset {4}" ls.out \
    "h5ls: the culprit (unit 9) has 4 instructions"
  expect_grep "/runs/[^/]*/isolation/culprits/9/tensors/0/device *Dataset {128, 1000}" ls.out \
    "h5ls: the diverging instruction's device tensor"
  expect_grep "/runs/[^/]*/fusions/[0-9a-f]*/candidates" ls.out "h5ls: the --check run's candidates are still there"
else
  echo "# no h5ls: skipped its checks"
fi

PY=${PYTHON3:-python3}
if ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then echo "# no h5py: skipped"; finish; exit $?; fi
if "$PY" - r.h5 >py.out 2>&1 <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
runs = f["runs"]
assert len(runs) == 2, "runs: %d" % len(runs)
checks = [r for r in runs.values() if "isolation" not in r]
isos = [r for r in runs.values() if "isolation" in r]
assert len(checks) == 1 and len(isos) == 1
assert len(checks[0]["fusions"]) == 1, "the --check run lost its fusion"
run = isos[0]
assert run.attrs["status"] == b"complete" or run.attrs["status"] == "complete", run.attrs["status"]
g = run["isolation"]
def s(x):
    return x.decode() if isinstance(x, bytes) else str(x)
assert "--defect elide-convert" in s(run.attrs["command"]), run.attrs["command"]
assert "elide-convert" in [s(d) for d in run.attrs["defects"]], run.attrs["defects"]
assert s(g.attrs["source"]).endswith("train_step.hlo")
assert int(g.attrs["units"]) == 12 and int(g.attrs["culprits"]) == 1
described = set(s(x) for x in g.attrs["attributes"]["name"])
assert {"source", "units", "culprits", "program_done"} <= described, described
u = g["units"][()]
cols = [s(x) for x in g["units"].attrs["columns"]["name"]]
assert cols == list(u.dtype.names), "columns describe the table"
names = [s(x) for x in u["name"]]
assert names.index("qat_residual") == 9 and int(u["index"][9]) == 9, names
for i, n in enumerate(names):
    want = "fusion-bug" if n == "qat_residual" else "ok"
    assert s(u["cls"][i]) == want, (n, u["cls"][i])
    assert int(u["rank"][i]) == (1 if n == "qat_residual" else 0), (n, u["rank"][i])
q = u[9]
assert q["fr_done"] == 1 and q["fr_within"] == 0 and q["fr_max_rel"] == 1.0, q["fr_max_rel"]
assert q["ur_identical"] == 1, "unfused vs reference identical"
assert s(q["config"]).find("fuse-converts") >= 0
assert s(q["inputs"]) == "", q["inputs"]
assert s(u["inputs"][names.index("adam")]) == "grad_w,qat_residual", u["inputs"][names.index("adam")]
c = g["culprits"]["9"]
assert int(c.attrs["unit"]) == 9 and int(c.attrs["inspected"]) == 1
assert s(c.attrs["first"]) == "back", c.attrs["first"]
ins = c["instructions"][()]
assert [s(x) for x in ins["name"]] == ["p0", "h", "back", "res"], ins["name"]
assert [s(x) for x in ins["op"]] == ["parameter", "convert", "convert", "subtract"], ins["op"]
assert ins["dev_min"].dtype == np.float32, "the summary is f32"
assert ins["within"][1] == 1 and ins["within"][2] == 0
assert (ins["count"] == 128000).all()
t0, t1 = c["tensors"]["0"], c["tensors"]["1"]
assert len(c["tensors"]) == 2
assert s(t0.attrs["name"]) == "back" and s(t0.attrs["role"]) == "diverging" and int(t0.attrs["instruction"]) == 2
assert s(t1.attrs["name"]) == "h" and s(t1.attrs["role"]) == "operand" and int(t1.attrs["instruction"]) == 1
dev, ref = t0["device"][()], t0["reference"][()]
assert dev.shape == (128, 1000) and dev.dtype == np.float32
assert (ref.astype(np.float16).astype(np.float32) == ref).all(), "reference back holds f16 values"
assert (dev.astype(np.float16).astype(np.float32) == ref).all(), "device back rounds to the reference"
m = t0["metrics"][0]
assert m["mismatches"] > 0 and m["rank"] == 2
pk = tuple(m["peak"][:2])
assert dev[pk] == m["device_at_peak"] and ref[pk] == m["reference_at_peak"]
assert dev[pk] != ref[pk]
lo, hi = m["bbox_lo"][:2], m["bbox_hi"][:2]
assert (lo >= 0).all() and hi[0] <= 127 and hi[1] <= 999 and (lo <= pk).all() and (pk <= hi).all()
bad = np.argwhere(dev != ref)
assert (bad.min(axis=0) >= lo).all() and (bad.max(axis=0) <= hi).all(), "the box holds every difference"
m1 = t1["metrics"][0]
assert m1["mismatches"] == 0 and (t1["device"][()] == t1["reference"][()]).all()
# the 16-byte summaries: both sides of h agree; ref of back is its tensor's
assert ins["dev_min"][1] == ins["ref_min"][1] and ins["dev_max"][1] == ins["ref_max"][1]
assert ins["ref_min"][2] == ref.min() and ins["ref_max"][2] == ref.max()
assert ins["ref_nan"][2] == 0 and ins["ref_inf"][2] == 0
print("h5py: all checks passed")
PY
then ok "h5py: the isolation holds what the defect implies"; else not_ok "h5py: $(tail -n 3 py.out)"; fi

# A second isolation appended keeps both earlier runs.
expect_status 0 "a clean --isolate -o appends another run" "$TUNE" --isolate "$ds/conv_net.hlo" -o r.h5
n=$("$PY" -c 'import sys,h5py; print(len(h5py.File(sys.argv[1],"r")["runs"]))' r.h5)
if [ "$n" = 3 ]; then ok "three runs in the file"; else not_ok "runs in the file: $n, wanted 3"; fi
# Writing over the module itself is refused.
cp "$ds/conv_net.hlo" m.hlo
expect_status 2 "-o naming the module is refused" "$TUNE" --isolate m.hlo -o m.hlo
finish
