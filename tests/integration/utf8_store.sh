#!/bin/sh
# utf8_store.sh — strings the store declares UTF-8 hold valid UTF-8, even
# when the module does not: tests/hlo/nonutf8_meta.hlo has the bytes
# FF C0 80 ED A0 80 in an op_name.  h5py's .asstr() decodes every such
# dataset and attribute (it raised UnicodeDecodeError on the module text),
# and the bad bytes come back as U+FFFD.  Also: `--check --json` of a file
# whose name is not UTF-8 is JSON Python reads (its own JSON writer once
# copied the name's bytes through).  Skipped without h5py.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
if [ -z "${PYTHON3:-}" ] || ! "$PYTHON3" -c 'import h5py' 2>/dev/null; then
  echo "# skip: no Python with h5py"
  exit 77
fi
hlo="$TUNE_SRCDIR/tests/hlo/nonutf8_meta.hlo"

expect_status 0 "--check -o of a module with non-UTF-8 metadata" "$TUNE" --check "$hlo" -q -o "$TMPD/r.h5"
expect_status 0 "--eval -o of the same module" "$TUNE" --eval "$hlo" -o "$TMPD/e.h5"

# Prints one line per UTF-8 string that does not decode, and, for results
# files, whether the module text shows the six replacement characters.
cat >"$TMPD/utf8.py" <<'PY'
import sys
import h5py

bad = []

def check(name, obj):
    for key in obj.attrs:
        t = obj.attrs.get_id(key).get_type()
        if isinstance(t, h5py.h5t.TypeStringID) and t.get_cset() == h5py.h5t.CSET_UTF8:
            try:
                obj.attrs[key]
            except UnicodeDecodeError as e:
                bad.append("%s@%s: %s" % (name, key, e))
    if isinstance(obj, h5py.Dataset) and h5py.check_string_dtype(obj.dtype) is not None:
        if h5py.check_string_dtype(obj.dtype).encoding == "utf-8":
            try:
                obj.asstr()[()]
            except UnicodeDecodeError as e:
                bad.append("%s: %s" % (name, e))

with h5py.File(sys.argv[1], "r") as f:
    check("/", f)
    f.visititems(check)
    if "runs" in f:
        texts = [g["hlo"].asstr()[()] for r in f["runs"].values() for g in r["fusions"].values()]
        print("replaced" if any('op_name="' + "\ufffd" * 6 + '"' in t for t in texts) else "not replaced")
for b in bad:
    print("bad " + b)
PY
for x in r e; do
  if "$PYTHON3" "$TMPD/utf8.py" "$TMPD/$x.h5" >"$TMPD/py.$x" 2>&1; then
    if grep -q '^bad\|Error' "$TMPD/py.$x"; then not_ok "$x.h5: a UTF-8 string does not decode"; sed 's/^/  # /' "$TMPD/py.$x" | head -n 5
    else ok "$x.h5: every UTF-8 string decodes"; fi
  else
    not_ok "$x.h5: h5py could not read it"; sed 's/^/  # /' "$TMPD/py.$x" | head -n 5
  fi
done
expect_grep '^replaced' "$TMPD/py.r" "r.h5: the six bad bytes are stored as six U+FFFD"

# The name's byte FF comes out of --check --json as '?', so the output is
# UTF-8 and parses.
bad_name="$TMPD/$(printf 'fused\377name').hlo"
cp "$hlo" "$bad_name"
"$TUNE" --check "$bad_name" --budget 1 --json -q >"$TMPD/c.json" 2>"$TMPD/c.err"
st=$?
if [ "$st" -eq 0 ] && "$PYTHON3" -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))
sys.exit(0 if d and d[0]["file"].endswith("fused?name.hlo") else 1)' "$TMPD/c.json" 2>"$TMPD/c.py"; then
  ok "--check --json of a non-UTF-8 file name is valid JSON, the byte written as '?'"
else
  not_ok "--check --json of a non-UTF-8 file name (exit $st)"; sed 's/^/  # /' "$TMPD/c.py" "$TMPD/c.err" | head -n 5
fi

finish
