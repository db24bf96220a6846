#!/bin/sh
# sweep_rotation.sh — a sweep file may list several input profiles, taken
# one a UTC day in turn, and "what changed" compares a run only with the
# previous run of its own profile (issue 19: the daily sweep with the
# constrained profile alone could never see dynslice-clamp-lost).
#
# dynamic_update_slice_kv_cache writes a [16,128] update into f32[1024,128]
# at an s32 row position; with dynslice-clamp-lost, a config whose row
# tile is smaller than the 16-row update loses the clamp of a start past
# the last valid one, 1008 (MANIFEST).  constrained draws only valid
# starts; oob-indices always draws an invalid scalar start (README, input
# profiles), so:
#   run 1, oob-indices:  divergences, all new (no previous run);
#   run 2, constrained:  none; its previous run is none of the oob runs,
#                        so nothing is "fixed";
#   run 3, oob-indices:  the same divergences, compared with run 1: still
#                        open, none new, none fixed.
# A sweep listing [ "constrained", "oob-indices" ] records the profile of
# the day it started, (days since 1970-01-01, UTC) mod 2, and the list.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
PYTHON3=${PYTHON3:-python3}
if ! "$PYTHON3" -c "import h5py" 2>/dev/null; then echo "skip: h5py not available"; exit 77; fi
cd "$TMPD" || exit 1

cat >cc.cfg <<'EOF'
compiler: { name = "nightly"; defects = [ "dynslice-clamp-lost" ]; };
EOF
# sweep CFG INPUTS RUN_ID
sweep() {
  cat >"$1" <<EOF2
sweep: {
  corpus = [ "$ds/dynamic_update_slice_kv_cache.hlo" ];
  machines = [ "tpu-v5e" ];
  compiler = "$TMPD/cc.cfg";
  inputs = $2;
  budget = 16;
  threads = 2;
  output = "R.h5";
  run_id = "$3";
};
EOF2
}
# get RUN [changes] NAME: an attribute of runs/RUN (or of its changes group)
get() {
  "$PYTHON3" - R.h5 "$@" <<'EOF2'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f["runs/" + sys.argv[2]]
if len(sys.argv) > 4:
    g = g[sys.argv[3]]
v = g.attrs[sys.argv[-1]]
print(v.decode() if isinstance(v, bytes) else v)
EOF2
}

sweep a.cfg '"oob-indices"' r1
sweep b.cfg '"constrained"' r2
sweep c.cfg '"oob-indices"' r3
"$TUNE" --sweep a.cfg >a.out 2>a.err
st=$?
if [ "$st" -eq 1 ]; then ok "run 1 (oob-indices) finds dynslice-clamp-lost (exit 1)"; else
  not_ok "run 1 exited $st"; tail -n 3 a.err | sed 's/^/  # /'; fi
n1=$(get r1-tpu-v5e changes count_new)
"$TUNE" --sweep b.cfg >b.out 2>b.err
st=$?
if [ "$st" -eq 0 ]; then ok "run 2 (constrained) finds nothing (exit 0)"; else not_ok "run 2 exited $st"; fi
if [ "$(get r2-tpu-v5e changes previous_run)" = "" ] && [ "$(get r2-tpu-v5e changes count_fixed)" = 0 ]; then
  ok "run 2 has no previous run of its profile, so nothing is fixed"
else
  not_ok "run 2 compared with '$(get r2-tpu-v5e changes previous_run)', $(get r2-tpu-v5e changes count_fixed) fixed"
fi
"$TUNE" --sweep c.cfg >c.out 2>c.err
st=$?
prev=$(get r3-tpu-v5e changes previous_run)
if [ "$prev" = r1-tpu-v5e ]; then ok "run 3 compares with run 1, the previous oob-indices run"; else
  not_ok "run 3's previous run is '$prev'"; fi
new3=$(get r3-tpu-v5e changes count_new)
open3=$(get r3-tpu-v5e changes count_open)
if [ "$st" -eq 0 ] && [ "$new3" = 0 ] && [ "$n1" -gt 0 ] 2>/dev/null && [ "$open3" = "$n1" ]; then
  ok "run 3: the $n1 findings of run 1 are still open, none new (exit 0)"
else not_ok "run 3: exit $st, $new3 new, $open3 open, run 1 had $n1"; fi
if [ "$(get r1-tpu-v5e inputs)" = oob-indices ] && [ "$(get r2-tpu-v5e inputs)" = constrained ]; then
  ok "each run records its profile"; else not_ok "inputs attributes: $(get r1-tpu-v5e inputs) $(get r2-tpu-v5e inputs)"; fi

# A list: the day's profile.  Both ends of the run are tried, for a run
# that crosses midnight.
sweep d.cfg '[ "constrained", "oob-indices" ]' r4
d0=$(( $(date -u +%s) / 86400 % 2 ))
"$TUNE" --sweep d.cfg >d.out 2>d.err
d1=$(( $(date -u +%s) / 86400 % 2 ))
got=$(get r4-tpu-v5e inputs)
want0=$([ "$d0" = 0 ] && echo constrained || echo oob-indices)
want1=$([ "$d1" = 0 ] && echo constrained || echo oob-indices)
if [ "$got" = "$want0" ] || [ "$got" = "$want1" ]; then ok "a list takes the profile of the UTC day ($got)"; else
  not_ok "the list's run used '$got', the day says '$want0'"; fi
if [ "$(get r4-tpu-v5e inputs_rotation)" = "constrained,oob-indices" ]; then ok "the run records the rotation"; else
  not_ok "inputs_rotation '$(get r4-tpu-v5e inputs_rotation)'"; fi
expect_grep "inputs $got" d.err "the log names the day's profile"

sweep e.cfg '[ "constrained", "wild" ]' r5
expect_status 2 "an unknown profile in the list is refused" "$TUNE" --sweep e.cfg
expect_grep "e.cfg:[0-9]*: 'sweep.inputs' must be an input profile .*not 'wild'" "$TMPD/err" \
  "the error names the file, the line and the profile"
finish
