#!/bin/sh
# datasets.sh — the fusion corpus: MANIFEST and datasets/*.hlo agree, every
# modelled defect can show itself in some fusion, every fusion parses and
# verifies, every fusion evaluates, and the paper's bug4 cumsum is [1,2,3,4].
. "$TUNE_SRCDIR/tests/integration/lib.sh"
ds="$TUNE_SRCDIR/datasets"
manifest="$ds/MANIFEST"

if [ -f "$manifest" ]; then ok "datasets/MANIFEST exists"; else not_ok "datasets/MANIFEST is missing"; finish; exit; fi

# Entries: non-comment, non-blank lines.  Tabs separate the columns.
grep -v '^#' "$manifest" | grep -v '^[[:space:]]*$' >"$TMPD/entries"
if head -n 1 "$manifest" | grep -q '^#'; then ok "MANIFEST starts with a # header line"; else
  not_ok "MANIFEST has no # header line"; fi

bad=$(awk -F'\t' 'NF < 4 || NF > 5 || $1 == "" || $2 == "" || $3 == "" || $4 !~ /^[1-9][0-9]*$/ ||
                  (NF == 5 && $5 != "unsupported" && $5 != "module") { print NR": "$0 }' "$TMPD/entries")
if [ -z "$bad" ]; then ok "every MANIFEST entry has file, what, defects, replicas"; else
  not_ok "malformed MANIFEST entries"; echo "$bad" | sed 's/^/  # /' | head -n 5; fi

n=$(wc -l <"$TMPD/entries" | tr -d ' ')
if [ "$n" -ge 40 ]; then ok "MANIFEST lists $n fusions (at least 40)"; else not_ok "MANIFEST lists only $n fusions (want 40)"; fi

# Both directions: every listed file exists, every .hlo file is listed, no duplicates.
cut -f1 "$TMPD/entries" | sort >"$TMPD/listed"
(cd "$ds" && ls -1 -- *.hlo) | sort >"$TMPD/present"
dups=$(uniq -d "$TMPD/listed")
if [ -z "$dups" ]; then ok "no file is listed twice"; else not_ok "listed twice: $(echo $dups)"; fi
missing=$(comm -23 "$TMPD/listed" "$TMPD/present")
if [ -z "$missing" ]; then ok "every MANIFEST entry names a file in datasets/"; else
  not_ok "listed but absent: $(echo $missing)"; fi
unlisted=$(comm -13 "$TMPD/listed" "$TMPD/present")
if [ -z "$unlisted" ]; then ok "every datasets/*.hlo is in MANIFEST"; else
  not_ok "present but not listed: $(echo $unlisted)"; fi

# Defect names: from the binary when it can list them, else from the catalog.
if "$TUNE" --list-defects >"$TMPD/defects.out" 2>/dev/null; then
  awk '{print $1}' "$TMPD/defects.out" | sort -u >"$TMPD/defects"
  src="tune --list-defects"
else
  grep -o 'X([A-Z0-9_]*, *"[a-z0-9-]*"' "$TUNE_SRCDIR/tuner/device/dev_defect.h" |
    sed 's/.*"\(.*\)"/\1/' | sort -u >"$TMPD/defects"
  src="dev_defect.h"
fi
nd=$(wc -l <"$TMPD/defects" | tr -d ' ')
if [ "$nd" -ge 1 ]; then ok "$nd defect names from $src"; else not_ok "no defect names found ($src)"; fi
cut -f3 "$TMPD/entries" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -v '^-$' | grep -v '^$' |
  sort -u >"$TMPD/covered"
uncovered=$(comm -23 "$TMPD/defects" "$TMPD/covered")
if [ -z "$uncovered" ]; then ok "every defect can be exposed by some fusion"; else
  not_ok "defects no fusion exposes: $(echo $uncovered)"; fi
unknown=$(comm -13 "$TMPD/defects" "$TMPD/covered")
if [ -z "$unknown" ]; then ok "MANIFEST names only known defects"; else not_ok "unknown defect names: $(echo $unknown)"; fi

# Parse and verify every file.
pfail=""
while IFS= read -r f; do
  "$TUNE" --print "$ds/$f" >/dev/null 2>"$TMPD/err" || { pfail="$pfail $f"; sed "s|^|  # |" "$TMPD/err" | head -n 3; }
done <"$TMPD/present"
if [ -z "$pfail" ]; then ok "every fusion passes tune --print"; else not_ok "tune --print fails on:$pfail"; fi

# Evaluate every supported file with its replica count (once --eval exists).
if "$TUNE" --help 2>/dev/null | grep -q -e '--eval'; then
  efail=""
  ne=0
  while IFS="$(printf '\t')" read -r f what defects reps extra; do
    [ "$extra" = unsupported ] && continue
    ne=$((ne + 1))
    "$TUNE" --eval "$ds/$f" -o "$TMPD/out.h5" --replicas "$reps" >/dev/null 2>"$TMPD/err" ||
      { efail="$efail $f"; sed "s|^|  # |" "$TMPD/err" | head -n 3; }
  done <"$TMPD/entries"
  if [ -z "$efail" ]; then ok "all $ne supported fusions evaluate"; else not_ok "tune --eval fails on:$efail"; fi

  # Paper Listing 1 bug4: cumsum(f32(s32(1.75 broadcast to [4]))) is [1,2,3,4].
  b4="$ds/cumsum_cast_bug4.hlo"
  if "$TUNE" --eval "$b4" -o "$TMPD/b4.h5" >/dev/null 2>"$TMPD/err"; then
    got=""
    if command -v h5dump >/dev/null 2>&1; then
      h5dump -y -w 0 -o "$TMPD/b4.txt" -d /outputs/0 "$TMPD/b4.h5" >/dev/null 2>&1 &&
        got=$(tr -d ' \n' <"$TMPD/b4.txt")
    elif command -v python3 >/dev/null 2>&1 && python3 -c 'import h5py' 2>/dev/null; then
      got=$(python3 -c 'import sys, h5py; print(",".join("%g" % x for x in h5py.File(sys.argv[1], "r")["/outputs/0"][()]))' \
        "$TMPD/b4.h5")
    fi
    if [ -z "$got" ]; then
      echo "# skipped: bug4 value check needs h5dump or python3 with h5py"
    elif [ "$got" = "1,2,3,4" ]; then ok "bug4 cumsum of convert(1.75 -> s32 -> f32) is [1,2,3,4]"; else
      not_ok "bug4 cumsum is [$got], wanted [1,2,3,4]"; fi
  else
    not_ok "bug4 cumsum does not evaluate"; sed 's/^/  # /' "$TMPD/err" | head -n 3
  fi
else
  echo "# skipped: tune has no --eval mode yet"
fi
finish
