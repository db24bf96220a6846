#!/bin/sh
# isolate_tolerance.sh — `tune --isolate` derives a unit's tolerance only
# where a comparison needs it (isolate.h), and skipping it changes nothing
# else: every verdict, metric and derived tolerance is the one
# `--all-tolerances`, which derives every unit's, prints and stores.
#
# Why the clean transformer block's units need none: each default config
# is one tile over the whole output with pack=1 and k ascending (printed
# on each unit's line), which is the reference's own order of every sum,
# so each fused and unfused output is the reference's bit for bit, as the
# unit lines say ("identical").  pack=2 on q_proj gives its dot two
# interleaved accumulators instead: a different rounding of the same sum,
# so q_proj is within its tolerance but not identical, and the device's
# program is no longer the reference's.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/transformer_block.hlo" ]; then echo "skip: no multi-fusion datasets"; exit 77; fi
cd "$TMPD" || exit 1
tb="$ds/transformer_block.hlo"

# ---- every unit bit for bit: no tolerance derived ----
expect_status 0 "clean transformer block: no culprit" "$TUNE" --isolate "$tb" -o lazy.h5
cp "$TMPD/out" lazy.out
n=$(grep -c "^  [a-z_]*: ok; fused vs unfused identical; fused vs reference identical; unfused vs reference identical;" lazy.out)
if [ "$n" -eq 14 ]; then ok "all 14 units ok and identical three ways"; else not_ok "$n of 14 units identical"; fi
expect_grep "vs reference: within (max rel 0), bit for bit; tolerance not derived" lazy.out \
  "the program line says no tolerance was derived"
expect_status 0 "--all-tolerances: no culprit" "$TUNE" --isolate "$tb" --all-tolerances -o all.h5
cp "$TMPD/out" all.out
expect_grep "vs reference: within (max rel 0), tolerance atol [0-9]" all.out \
  "--all-tolerances: the program line gives the tolerance"
grep "^  " lazy.out >lazy.units
grep "^  " all.out >all.units
if cmp -s lazy.units all.units; then ok "the unit lines are the same either way"; else
  not_ok "the unit lines differ"; diff lazy.units all.units | head -n 6 | sed 's/^/  # /'; fi

# ---- one unit not identical: its tolerance, then every unit's ----
expect_status 1 "q_proj with pack=2: a finding" "$TUNE" --isolate "$tb" --config 'q_proj=pack=2' -o pack.h5
cp "$TMPD/out" pack.out
expect_grep "^  q_proj: ok; fused vs unfused within; fused vs reference within; unfused vs reference identical;" \
  pack.out "q_proj: within, not identical"
expect_grep "vs reference: differs (.*), tolerance atol [0-9]" pack.out \
  "the program run compares under a derived tolerance"
expect_status 1 "the same with --all-tolerances" "$TUNE" --isolate "$tb" --config 'q_proj=pack=2' --all-tolerances
if cmp -s pack.out "$TMPD/out"; then ok "pack=2: the whole output is the same either way"; else
  not_ok "pack=2: the outputs differ"; diff pack.out "$TMPD/out" | head -n 6 | sed 's/^/  # /'; fi

# ---- a culprit: the same either way ----
expect_status 1 "train_step, elide-convert: a culprit" "$TUNE" --isolate "$ds/train_step.hlo" --defect elide-convert \
  --config 'qat_residual=flags=fuse-converts'
cp "$TMPD/out" bug.out
expect_grep "^  1\. qat_residual: fusion-bug" bug.out "the culprit is named"
expect_status 1 "the same with --all-tolerances" "$TUNE" --isolate "$ds/train_step.hlo" --defect elide-convert \
  --config 'qat_residual=flags=fuse-converts' --all-tolerances
if cmp -s bug.out "$TMPD/out"; then ok "the culprit's output is the same either way"; else
  not_ok "the culprit's outputs differ"; diff bug.out "$TMPD/out" | head -n 6 | sed 's/^/  # /'; fi

# ---- what is stored ----
PY=${PYTHON3:-python3}
if ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then echo "# no h5py: stored tolerances not checked"; finish; exit $?; fi
if "$PY" - lazy.h5 all.h5 pack.h5 >py.out 2>&1 <<'PY'
import sys, math, h5py
def iso(path):
    f = h5py.File(path, "r")
    runs = [r for r in f["runs"].values() if "isolation" in r]
    assert len(runs) == 1, path
    g = runs[0]["isolation"]
    return g["units"][:], dict(g.attrs)
lazy, lattrs = iso(sys.argv[1])
full, fattrs = iso(sys.argv[2])
pack, pattrs = iso(sys.argv[3])
assert len(lazy) == len(full) == len(pack) == 14
for a, b in zip(lazy, full):
    # not derived: NaN; derived: a finite tolerance, nonzero for a unit with a dot
    assert math.isnan(a["atol"]) and math.isnan(a["rtol"]), (a["name"], a["atol"])
    assert math.isfinite(b["atol"]) and math.isfinite(b["rtol"]), (b["name"], b["atol"])
    assert a["cls"] == b["cls"] and a["max_rel"] == b["max_rel"], a["name"]
dots = {b"q_proj", b"k_proj", b"v_proj", b"scores", b"attn_v", b"o_proj_residual", b"mlp_up_gelu",
        b"mlp_down_residual"}
for b in full:
    if b["name"] in dots:
        assert b["atol"] > 0, (b["name"], b["atol"])
assert math.isnan(lattrs["program_atol"]) and math.isfinite(fattrs["program_atol"])
# pack=2: every tolerance derived, each the one --all-tolerances derives
for a, b in zip(pack, full):
    assert a["atol"] == b["atol"] and a["rtol"] == b["rtol"], (a["name"], a["atol"], b["atol"])
print("h5py: all checks passed")
PY
then ok "h5py: NaN where not derived, the --all-tolerances values where derived"; else
  not_ok "h5py"; sed 's/^/  # /' py.out | tail -n 5; fi
finish
