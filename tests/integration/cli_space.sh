#!/bin/sh
# tune --space and --list-defects: the candidate list reads back as configs,
# the default comes first, and the defect catalog is complete.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
softmax="$TUNE_SRCDIR/datasets/softmax.hlo"

expect_status 0 "--space on the bundled softmax" "$TUNE" --space "$softmax"
cp "$TMPD/out" "$TMPD/space"
if head -n 1 "$TMPD/space" | grep -q '^default tile='; then ok "first line is the default"; else
  not_ok "first line is not 'default CONFIG'"; head -n 1 "$TMPD/space" | sed 's/^/  # /'; fi
n=$(sed 1d "$TMPD/space" | wc -l)
if [ "$n" -ge 2 ] && [ "$n" -le 256 ]; then ok "between 2 and 256 candidates ($n)"; else not_ok "$n candidates"; fi
if [ "$(sed -n 1p "$TMPD/space" | cut -d' ' -f2-)" = "$(sed -n 2p "$TMPD/space")" ]; then
  ok "the default is also the first candidate"; else not_ok "the default is not the first candidate"; fi
dups=$(sed 1d "$TMPD/space" | sort | uniq -d | wc -l)
if [ "$dups" -eq 0 ]; then ok "every candidate is printed once"; else not_ok "$dups duplicate candidates"; fi
# Every line has the canonical fields in order (dev_config.h).
canon='^tile=[0-9][0-9x]* k=[0-9]* buf=[1-4] order=[0-9k-]* pack=[124] prec=\(default\|high\|highest\) flags=[a-z,-]*$'
bad=$(sed 1d "$TMPD/space" | grep -cv "$canon")
if [ "$bad" -eq 0 ]; then ok "every candidate is canonical config text"; else
  not_ok "$bad lines are not canonical"; sed 1d "$TMPD/space" | grep -v "$canon" | head -n 3 | sed 's/^/  # /'; fi
# softmax reduces a 256-long row: every candidate has a k chunk, k innermost somewhere.
if sed 1d "$TMPD/space" | grep -q ' k=0 '; then not_ok "a reduction candidate without k"; else ok "every candidate chunks the reduction"; fi

# Deterministic, and the same through stdin and -o.
expect_status 0 "--space again" "$TUNE" --space "$softmax"
if cmp -s "$TMPD/out" "$TMPD/space"; then ok "same fusion, same list"; else not_ok "two runs differ"; fi
expect_status 0 "--space - reads stdin" sh -c "\"$TUNE\" --space - < \"$softmax\""
if cmp -s "$TMPD/out" "$TMPD/space"; then ok "stdin gives the same list"; else not_ok "stdin list differs"; fi
expect_status 0 "--space -o FILE" "$TUNE" --space "$softmax" -o "$TMPD/space2"
if cmp -s "$TMPD/space2" "$TMPD/space"; then ok "-o writes the same list"; else not_ok "-o list differs"; fi
expect_status 0 "explicit --machine tpu-v5e is the default" "$TUNE" --space "$softmax" --machine tpu-v5e
if cmp -s "$TMPD/out" "$TMPD/space"; then ok "tpu-v5e is the default machine"; else not_ok "default machine is not tpu-v5e"; fi
expect_status 0 "--machine tpu-v4" "$TUNE" --space "$softmax" --machine tpu-v4
expect_grep "tpu-v4" "$TMPD/err" "the summary names the machine"

# Every bundled fusion has a space whose first line is its default.
if [ -d "$TUNE_SRCDIR/datasets" ]; then
  failed=0; count=0
  for f in "$TUNE_SRCDIR"/datasets/*.hlo; do
    count=$((count + 1))
    if ! "$TUNE" -q --space "$f" >"$TMPD/d" 2>"$TMPD/e" || ! head -n 1 "$TMPD/d" | grep -q '^default tile='; then
      failed=$((failed + 1)); echo "  # $f: $(head -n 1 "$TMPD/e")"
    fi
  done
  if [ "$failed" -eq 0 ]; then ok "--space on all $count datasets"; else not_ok "--space failed on $failed of $count datasets"; fi
fi

# Bad input: exit 2 with the reason.
expect_status 2 "unknown machine is bad usage" "$TUNE" --space "$softmax" --machine tpu-v99
expect_grep "tpu-v99" "$TMPD/err" "the unknown machine is named"
expect_status 2 "missing file is bad input" "$TUNE" --space "$TMPD/nope.hlo"
expect_grep "nope.hlo" "$TMPD/err" "missing file named"
printf 'HloModule broken\nENTRY main {\n  ROOT x = f32[2] add(y, y)\n}\n' >"$TMPD/broken.hlo"
expect_status 2 "unverifiable module is bad input" "$TUNE" --space "$TMPD/broken.hlo"
expect_grep "broken.hlo:[0-9]*:[0-9]*: error:" "$TMPD/err" "error has FILE:LINE:COL"

# The defect catalog: 12 defects, name first, names as in dev_defect.h.
expect_status 0 "--list-defects" "$TUNE" --list-defects
cp "$TMPD/out" "$TMPD/defects"
n=$(wc -l <"$TMPD/defects")
if [ "$n" -eq 12 ]; then ok "12 defects listed"; else not_ok "$n defects listed"; fi
bad=$(grep -cv "$(printf '^[a-z0-9-]*\ttrigger: .*\tsymptom: .*$')" "$TMPD/defects")
if [ "$bad" -eq 0 ]; then ok "each line is NAME<TAB>trigger: ...<TAB>symptom: ..."; else not_ok "$bad malformed lines"; fi
header="$TUNE_SRCDIR/tuner/device/dev_defect.h"
missing=
cut -f1 "$TMPD/defects" >"$TMPD/names"
sed -n 's/^ *X([A-Z0-9_]*, "\([a-z0-9-]*\)",.*/\1/p' "$header" >"$TMPD/header_names"
if cmp -s "$TMPD/names" "$TMPD/header_names"; then ok "names match dev_defect.h, in order"; else
  not_ok "names differ from dev_defect.h"; diff "$TMPD/names" "$TMPD/header_names" | sed 's/^/  # /' | head; fi
for d in revisit-no-reinit packed-reduce-init0 scatter-s8-iota-wrap sort-lane-index elide-convert \
  ragged-store-mask ragged-chunk-pad dma-race int8-dot-f32-acc dynslice-clamp-lost unsigned-cmp-signed \
  fft-tile-twiddle; do
  grep -q "^$d	" "$TMPD/defects" || missing="$missing $d"
done
if [ -z "$missing" ]; then ok "the twelve catalog names are all present"; else not_ok "missing:$missing"; fi
finish
