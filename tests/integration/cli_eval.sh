#!/bin/sh
# tune --eval: the HDF5 file it writes, read back by other tools (h5ls,
# h5dump, and h5py + numpy as an independent client when present); inputs
# fed in from h5py; bad usage and failures leave any existing output alone.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
softmax="$TUNE_SRCDIR/datasets/softmax.hlo"
X="$TMPD/X.h5"

expect_status 0 "--eval softmax -o X.h5" "$TUNE" --eval "$softmax" -o "$X"
if [ -s "$X" ]; then ok "X.h5 written"; else not_ok "X.h5 missing"; fi
if ls "$TMPD" | grep -q '\.tmp\.'; then not_ok "temporary file left behind"; else ok "no temporary file left"; fi

if command -v h5ls >/dev/null 2>&1; then
  h5ls -r "$X" > "$TMPD/ls" 2>&1
  expect_grep '^/inputs/0 *Dataset {128, 256}' "$TMPD/ls" "h5ls: /inputs/0 is f32[128,256]"
  expect_grep '^/outputs/0 *Dataset {128, 256}' "$TMPD/ls" "h5ls: /outputs/0 is f32[128,256]"
fi
if command -v h5dump >/dev/null 2>&1; then
  h5dump -A "$X" > "$TMPD/dump" 2>&1
  expect_grep 'ATTRIBUTE "dtype"' "$TMPD/dump" "h5dump: datasets carry a dtype attribute"
  expect_grep '"f32"' "$TMPD/dump" "h5dump: dtype is f32"
  expect_grep 'ATTRIBUTE "tool"' "$TMPD/dump" "h5dump: root attribute tool"
  expect_grep 'H5T_IEEE_F32LE' "$TMPD/dump" "h5dump: f32 stored as IEEE little endian"
fi

# Same seed, same bytes, whatever the thread count; another seed differs.
if command -v h5dump >/dev/null 2>&1; then
  OMP_NUM_THREADS=1 "$TUNE" --eval "$softmax" --seed 9 -o "$TMPD/s9a.h5" 2>/dev/null
  OMP_NUM_THREADS=4 "$TUNE" --eval "$softmax" --seed 9 -o "$TMPD/s9b.h5" 2>/dev/null
  "$TUNE" --eval "$softmax" --seed 10 -o "$TMPD/s10.h5" 2>/dev/null
  h5dump -d /inputs/0 -d /outputs/0 "$TMPD/s9a.h5" | tail -n +2 > "$TMPD/d9a"
  h5dump -d /inputs/0 -d /outputs/0 "$TMPD/s9b.h5" | tail -n +2 > "$TMPD/d9b"
  h5dump -d /inputs/0 "$TMPD/s10.h5" | tail -n +2 > "$TMPD/d10"
  h5dump -d /inputs/0 "$TMPD/s9a.h5" | tail -n +2 > "$TMPD/d9i"
  if [ -s "$TMPD/d9a" ] && cmp -s "$TMPD/d9a" "$TMPD/d9b"; then ok "--seed 9 gives the same inputs and outputs on 1 and 4 threads"
  else not_ok "--seed 9 differs between thread counts"; fi
  if cmp -s "$TMPD/d9i" "$TMPD/d10"; then not_ok "--seed 10 gives the same inputs as --seed 9"
  else ok "--seed 10 gives other inputs"; fi
fi

# --replicas: replica 0 at /outputs, every replica under /replicas/<r>.
expect_status 0 "--eval --replicas 3" "$TUNE" --eval "$softmax" --replicas 3 -o "$TMPD/rep.h5"
if command -v h5ls >/dev/null 2>&1; then
  h5ls -r "$TMPD/rep.h5" > "$TMPD/ls" 2>&1
  expect_grep '^/replicas/2/outputs/0 *Dataset' "$TMPD/ls" "h5ls: /replicas/2/outputs/0 exists"
  expect_grep '^/outputs/0 *Dataset' "$TMPD/ls" "h5ls: /outputs/0 exists with replicas"
fi

# Without --replicas the module's replica_count header is used.
cat > "$TMPD/rid.hlo" <<'EOF'
HloModule rid, replica_count=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[4] parameter(0)
  id = u32[] replica-id()
  ar = f32[4] all-reduce(p), replica_groups={}, to_apply=add
  ROOT t = (f32[4], u32[]) tuple(ar, id)
}
EOF
expect_status 0 "--eval a replica_count=2 module" "$TUNE" --eval "$TMPD/rid.hlo" -o "$TMPD/rid.h5"
if command -v h5ls >/dev/null 2>&1; then
  h5ls -r "$TMPD/rid.h5" > "$TMPD/ls" 2>&1
  expect_grep '^/replicas/1/outputs/1 *Dataset {SCALAR}' "$TMPD/ls" "replica_count=2: replica 1's scalar replica-id stored with shape ()"
fi

cat > "$TMPD/bfmix.hlo" <<'EOF'
HloModule bfmix
ENTRY main {
  x = bf16[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  s = f32[] parameter(2)
  xf = f32[2,3] convert(x)
  m = f32[2,3] multiply(xf, y)
  sb = f32[2,3] broadcast(s), dimensions={}
  a = f32[2,3] add(m, sb)
  h = f16[2,3] convert(a)
  ROOT t = (f32[2,3], f16[2,3]) tuple(a, h)
}
EOF

if [ -n "${PYTHON3:-}" ] && "$PYTHON3" -c 'import h5py, numpy' 2>/dev/null; then
  # softmax recomputed by numpy (float64) from the stored inputs.
  if "$PYTHON3" - "$X" > "$TMPD/py" 2>&1 <<'EOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
x, y = f["/inputs/0"][()], f["/outputs/0"][()]
assert x.dtype == np.float32 and x.shape == (128, 256), (x.dtype, x.shape)
assert y.dtype == np.float32 and y.shape == (128, 256), (y.dtype, y.shape)
assert f["/inputs/0"].attrs["dtype"] == "f32" and f["/outputs/0"].attrs["dtype"] == "f32"
assert f.attrs["tool"] == "tune" and f.attrs["module"] == "softmax_f32"
assert int(f.attrs["seed"]) == 0 and int(f.attrs["replicas"]) == 1
assert (x >= -1).all() and (x < 1).all() and len(np.unique(x)) > 30000
x64 = x.astype(np.float64)
e = np.exp(x64 - x64.max(axis=1, keepdims=True))
ref = e / e.sum(axis=1, keepdims=True)
rel = np.max(np.abs(y - ref) / np.abs(ref))
print("max relative error", rel)
assert rel <= 1e-6, rel
EOF
  then ok "h5py: /outputs/0 is numpy's softmax of /inputs/0 within 1e-6"; else not_ok "h5py softmax check"; sed 's/^/  # /' "$TMPD/py"; fi

  if "$PYTHON3" - "$TMPD/rid.h5" > "$TMPD/py" 2>&1 <<'EOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
x = f["inputs/0"][()]
assert int(f.attrs["replicas"]) == 2
for r in (0, 1):
    assert np.array_equal(f["replicas/%d/outputs/0" % r][()], x + x)   # all-reduce over 2 replicas
    assert f["replicas/%d/outputs/1" % r][()] == r                      # replica-id
assert np.array_equal(f["outputs/0"][()], x + x) and f["outputs/1"][()] == 0
EOF
  then ok "h5py: all-reduce sums the two replicas, replica-id differs per replica"
  else not_ok "h5py replica check"; sed 's/^/  # /' "$TMPD/py"; fi

  # Inputs written by h5py: bf16 as bit patterns with a dtype attribute,
  # f32 and a scalar as plain numpy arrays.
  "$PYTHON3" - "$TMPD/in.h5" <<'EOF'
import sys, h5py, numpy as np
x = np.array([[1.0, -2.5, 0.15625], [3.0e38, 1e-40, -0.0]], dtype=np.float32)
bits = (x.view(np.uint32) >> 16).astype(np.uint16)   # truncation: exact for these
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("inputs/0", data=bits)
    d.attrs["dtype"] = "bf16"
    f.create_dataset("inputs/1", data=np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)
    f.create_dataset("inputs/2", data=np.float32(0.5))
EOF
  expect_status 0 "--inputs from h5py (bf16 bits, f32, scalar)" "$TUNE" --eval "$TMPD/bfmix.hlo" --inputs "$TMPD/in.h5" -o "$TMPD/bf.h5"
  if "$PYTHON3" - "$TMPD/in.h5" "$TMPD/bf.h5" > "$TMPD/py" 2>&1 <<'EOF'
import sys, h5py, numpy as np
i, o = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
bits = i["inputs/0"][()]
xf = (bits.astype(np.uint32) << 16).view(np.float32)
want = xf * i["inputs/1"][()] + i["inputs/2"][()]
got = o["outputs/0"][()]
assert got.dtype == np.float32 and np.array_equal(got, want), (got, want)
h = o["outputs/1"][()]
assert h.dtype == np.float16 and o["outputs/1"].attrs["dtype"] == "f16", h.dtype
assert np.array_equal(h, want.astype(np.float16)), (h, want.astype(np.float16))
b = o["inputs/0"]
assert b.dtype == np.uint16 and b.attrs["dtype"] == "bf16" and np.array_equal(b[()], bits)
s = o["inputs/2"]
assert s.shape == () and s.attrs["dtype"] == "f32"
assert o.attrs["inputs"] == sys.argv[1] and "seed" not in o.attrs
EOF
  then ok "h5py: bf16/f32/scalar inputs evaluated as numpy computes them, f16 output is float16"
  else not_ok "h5py bf16 check"; sed 's/^/  # /' "$TMPD/py"; fi

  # Wrong shape in a foreign inputs file: named dataset, parameter and shape.
  "$PYTHON3" - "$TMPD/bad_in.h5" <<'EOF'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("inputs/0", data=np.zeros((2, 3), np.uint16)); d.attrs["dtype"] = "bf16"
    f.create_dataset("inputs/1", data=np.zeros((3, 2), np.float32))
    f.create_dataset("inputs/2", data=np.float32(0))
EOF
  expect_status 2 "--inputs with a wrong shape" "$TUNE" --eval "$TMPD/bfmix.hlo" --inputs "$TMPD/bad_in.h5" -o "$TMPD/never.h5"
  expect_grep "bad_in.h5: /inputs/1: shape \[3,2\] does not match parameter 1 f32\[2,3\]" "$TMPD/err" "wrong shape named"
  if [ -e "$TMPD/never.h5" ]; then not_ok "output written despite bad inputs"; else ok "no output on bad inputs"; fi
else
  echo "# python3 with h5py and numpy not found: skipping the h5py cross-checks"
fi

# ---- bad usage and failures -------------------------------------------------
expect_status 2 "--eval without -o" "$TUNE" --eval "$softmax"
expect_grep "needs -o" "$TMPD/err" "--eval without -o says so"
expect_status 2 "bad --seed" "$TUNE" --eval "$softmax" --seed 12x -o "$TMPD/y.h5"
expect_grep "\-\-seed: '12x' is not a number" "$TMPD/err" "bad --seed named"
expect_status 2 "negative --seed" "$TUNE" --eval "$softmax" --seed -1 -o "$TMPD/y.h5"
expect_status 2 "--seed overflow" "$TUNE" --eval "$softmax" --seed 18446744073709551616 -o "$TMPD/y.h5"
expect_status 2 "--replicas 0" "$TUNE" --eval "$softmax" --replicas 0 -o "$TMPD/y.h5"
expect_status 2 "--seed with --inputs" "$TUNE" --eval "$softmax" --seed 1 --inputs "$X" -o "$TMPD/y.h5"
expect_status 2 "missing --inputs file" "$TUNE" --eval "$softmax" --inputs "$TMPD/nope.h5" -o "$TMPD/y.h5"
expect_grep "nope.h5: No such file" "$TMPD/err" "missing --inputs file named"
expect_status 2 "--inputs that is not HDF5" "$TUNE" --eval "$softmax" --inputs "$softmax" -o "$TMPD/y.h5"
expect_grep "not an HDF5 file" "$TMPD/err" "non-HDF5 --inputs said so"
expect_status 2 "--inputs of another module" "$TUNE" --eval "$TMPD/bfmix.hlo" --inputs "$X" -o "$TMPD/y.h5"
expect_grep "X.h5: /inputs/0: .*parameter 0 bf16\[2,3\]" "$TMPD/err" "mismatched --inputs named"
expect_status 2 "missing module" "$TUNE" --eval "$TMPD/nope.hlo" -o "$TMPD/y.h5"
if [ -e "$TMPD/y.h5" ]; then not_ok "y.h5 created by failing runs"; else ok "failing runs create no output"; fi

cat > "$TMPD/cc.hlo" <<'EOF'
HloModule cc
ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[4] custom-call(p), custom_call_target="my_kernel"
}
EOF
cp "$X" "$TMPD/keep.h5"
expect_status 2 "unsupported op (custom-call)" "$TUNE" --eval "$TMPD/cc.hlo" -o "$TMPD/keep.h5"
expect_grep "cc.hlo:4:[0-9]*: error: .*custom-call" "$TMPD/err" "unsupported op named with its position"
expect_grep "with target \"my_kernel\" is not supported" "$TMPD/err" "an unknown custom-call is refused by its target"
if cmp -s "$X" "$TMPD/keep.h5"; then ok "existing OUT.h5 left intact by a failed run"; else not_ok "existing OUT.h5 changed"; fi

# Without --replicas, a module whose replica groups name replica 1 runs
# on 2 replicas (as --check does), not 1 (which its all-reduce cannot run on).
cat > "$TMPD/groups.hlo" <<'EOF'
HloModule groups
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}
EOF
expect_status 0 "replicas default to those the replica groups name" "$TUNE" --eval "$TMPD/groups.hlo" -o "$TMPD/groups.h5"
if command -v h5ls >/dev/null 2>&1; then
  h5ls -r "$TMPD/groups.h5" >"$TMPD/ls" 2>&1
  expect_grep "/replicas/1/outputs" "$TMPD/ls" "both replicas' outputs are stored"
fi
# The same when the all-reduce sits in a while body.
cat > "$TMPD/loop.hlo" <<'EOF'
HloModule loop
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
body {
  t = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  x = f32[4] get-tuple-element(t), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[4] all-reduce(x), replica_groups={{0,1}}, to_apply=add
  ROOT u = (s32[], f32[4]) tuple(j, y)
}
cond {
  t = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  two = s32[] constant(2)
  ROOT c = pred[] compare(i, two), direction=LT
}
ENTRY main {
  p = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, p)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
EOF
expect_status 0 "replicas counted inside a while body" "$TUNE" --eval "$TMPD/loop.hlo" -o "$TMPD/loop.h5"

# Without replica_count or replica groups, a reduce-scatter over every
# replica from u16[2] to u16[1] implies 2 replicas (as --check infers).
# Replica r holds [10 + r, 15 + r]; the sum over both is [21, 31], and
# replica 0 keeps [21], replica 1 [31].
cat > "$TMPD/implied.hlo" <<'EOF'
HloModule implied
sum {
  a = u16[] parameter(0)
  b = u16[] parameter(1)
  ROOT s = u16[] add(a, b)
}
ENTRY main {
  id32 = u32[] replica-id()
  id = u16[] convert(id32)
  id2 = u16[2] broadcast(id), dimensions={}
  a0 = u16[2] constant({10, 15})
  a1 = u16[2] add(id2, a0)
  ROOT rs = u16[1] reduce-scatter(a1), dimensions={0}, replica_groups={}, to_apply=sum
}
EOF
expect_status 0 "replicas implied by a reduce-scatter's shapes" "$TUNE" --eval "$TMPD/implied.hlo" -o "$TMPD/implied.h5"
if command -v h5dump >/dev/null 2>&1; then
  h5dump -d /outputs/0 "$TMPD/implied.h5" >"$TMPD/d0" 2>&1
  h5dump -d /replicas/1/outputs/0 "$TMPD/implied.h5" >"$TMPD/d1" 2>&1
  expect_grep '(0): 21$' "$TMPD/d0" "replica 0 keeps the first half of the sum (21)"
  expect_grep '(0): 31$' "$TMPD/d1" "replica 1 keeps the second half of the sum (31)"
fi

# A token holds no data: a token parameter and a token in the root tuple
# get no dataset, and the file replays through --inputs.
cat > "$TMPD/token.hlo" <<'EOF'
HloModule tok
ENTRY main {
  p = f32[2] parameter(0)
  t = token[] parameter(1)
  s = f32[2] add(p, p)
  ROOT r = (f32[2], token[]) tuple(s, t)
}
EOF
expect_status 0 "--eval a module with a token parameter and result" "$TUNE" --eval "$TMPD/token.hlo" -o "$TMPD/token.h5"
expect_status 0 "--inputs replays a file without the token's dataset" \
  "$TUNE" --eval "$TMPD/token.hlo" --inputs "$TMPD/token.h5" -o "$TMPD/token2.h5"
if command -v h5ls >/dev/null 2>&1; then
  h5ls -r "$TMPD/token.h5" >"$TMPD/ls" 2>&1
  expect_grep '^/inputs/0 *Dataset {2}' "$TMPD/ls" "the f32 parameter is /inputs/0"
  expect_grep '^/outputs/0 *Dataset {2}' "$TMPD/ls" "the f32 result is /outputs/0"
  if grep -q -e '^/inputs/1' -e '^/outputs/1' "$TMPD/ls"; then not_ok "a token got a dataset"; else ok "no dataset for a token"; fi
fi

# A failure inside evaluation (elided constant data) also keeps OUT.
cat > "$TMPD/elided.hlo" <<'EOF'
HloModule el
ENTRY main {
  p = f32[4] parameter(0)
  c = f32[4] constant({...})
  ROOT r = f32[4] add(p, c)
}
EOF
expect_status 2 "evaluation error (elided constant)" "$TUNE" --eval "$TMPD/elided.hlo" -o "$TMPD/keep.h5"
expect_grep "elided.hlo:[0-9]*:[0-9]*: error: " "$TMPD/err" "evaluation error positioned"
if cmp -s "$X" "$TMPD/keep.h5"; then ok "existing OUT.h5 left intact by an evaluation error"; else not_ok "existing OUT.h5 changed"; fi
if ls "$TMPD" | grep -q '\.tmp\.'; then not_ok "temporary file left behind"; else ok "no temporary file left after failures"; fi

# An unwritable output directory: clear error, exit 2.
expect_status 2 "output in a missing directory" "$TUNE" --eval "$softmax" -o "$TMPD/no/such/dir/out.h5"
expect_grep "out.h5" "$TMPD/err" "unwritable output named"
finish
