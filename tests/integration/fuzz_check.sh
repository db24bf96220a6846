#!/bin/sh
# fuzz_check.sh — `tune --fuzz` (issue 19 item 2): generated fusions are
# checked on the clean compiler without a finding, the run is the same
# whatever the thread count, an injected defect is found, minimized and
# stored so that --reproduce rebuilds it, and bad usage is exit status 2.
# (The generator's 1,000-draw verifier and print round trip test is the
# unit test tests/unit/test_fuzz_gen.)
. "$TUNE_SRCDIR/tests/integration/lib.sh"
cd "$TMPD" || exit 1

# Timing fields aside, the summary is a function of the seed.
strip() { sed 's/ in [0-9.]* s ([0-9.]* fusions\/s)//; s/ and [0-9.]* s,/,/' "$1" | grep -v '^results:'; }

expect_status 0 "30 generated fusions on the clean compiler: no finding (1 thread)" \
  "$TUNE" --fuzz --count 30 --seed 5 --threads 1 -o t1.h5
cp "$TMPD/out" one.out
expect_grep "^fuzz: seed 5, machine tpu-v5e, compiler stable: 30 fusions generated, 0 rejected by the verifier, 0 failed the print round trip, 0 not checkable, [0-9]* candidates checked, 0 findings" \
  one.out "the summary counts 30 fusions, none rejected, none uncheckable, 0 findings"
expect_status 0 "the same 30 on 2 threads" "$TUNE" --fuzz --count 30 --seed 5 --threads 2 -o t2.h5
cp "$TMPD/out" two.out
strip one.out >one.s
strip two.out >two.s
if cmp -s one.s two.s; then ok "the same summary with 1 and 2 threads"; else
  not_ok "the run depends on the thread count"; diff one.s two.s | sed 's/^/  # /' | head -5; fi

# Convolutions (strides, padding, dilations, groups, NHWC and NCHW): the
# device's own convolution agrees with the reference on every candidate,
# and a store-mask defect on its ragged output tiles is seen.
expect_status 0 "25 generated convolutions on the clean compiler: no finding" \
  "$TUNE" --fuzz --count 25 --seed 5 --template conv
expect_grep "25 fusions generated, 0 rejected by the verifier, 0 failed the print round trip, 0 not checkable, [0-9]* candidates checked, 0 findings" \
  "$TMPD/out" "the convolutions are all checkable and none is a finding"
expect_status 1 "--defect ragged-store-mask --template conv: a finding, exit 1" \
  "$TUNE" --fuzz --count 100 --seed 5 --template conv --defect ragged-store-mask --stop-on-mismatch
expect_grep "^finding 1: draw [0-9]* (conv, fuzz_[0-9]*): mismatch-candidate" "$TMPD/out" \
  "the finding is a convolution draw"

# packed-reduce-init0 on reductions: found, minimized, stored.
expect_status 1 "--defect packed-reduce-init0 --template reduce: a finding, exit 1" \
  "$TUNE" --fuzz --count 200 --seed 5 --template reduce --defect packed-reduce-init0 --stop-on-mismatch \
  --threads 2 -o f.h5
cp "$TMPD/out" f.out
expect_grep "^finding 1: draw [0-9]* (reduce, fuzz_[0-9]*): mismatch-candidate with .*pack=[24]" f.out \
  "the finding names its draw, template and a pack>1 candidate"
expect_grep "^first finding: after [0-9]* fusions" f.out "the first finding's draw count is reported"
if h5ls -r f.h5 | grep -q "fusions/"; then ok "the finding is in the results file"; else not_ok "no fusion stored"; fi
fus=$(sed -n 's/^  reproduce: tune --reproduce f.h5 --fusion \([^ ]*\) --candidate \([0-9]*\) .*/\1/p' f.out)
cid=$(sed -n 's/^  reproduce: tune --reproduce f.h5 --fusion \([^ ]*\) --candidate \([0-9]*\) .*/\2/p' f.out)
expect_status 0 "--reproduce rebuilds the finding $fus candidate $cid" \
  "$TUNE" --reproduce f.h5 --fusion "$fus" --candidate "$cid" -o bundle
if [ -x bundle/run.sh ]; then
  (cd bundle && TUNE="$TUNE" PATH="$(dirname "$TUNE"):$PATH" ./run.sh >/dev/null 2>&1)
  rc=$?
  if [ "$rc" -eq 1 ]; then ok "the bundle's run.sh reproduces the divergence (exit 1)"; else
    not_ok "run.sh exited $rc"; fi
else
  not_ok "no bundle/run.sh"
fi

expect_status 2 "--fuzz without --count or --seconds is bad usage" "$TUNE" --fuzz
expect_grep "needs --count N or --seconds S" "$TMPD/err" "the error says what is missing"
expect_status 2 "--count and --seconds together are bad usage" "$TUNE" --fuzz --count 1 --seconds 1
expect_status 2 "an unknown template is bad usage" "$TUNE" --fuzz --count 1 --template nope
expect_grep "unknown template 'nope' (elementwise, reduce" "$TMPD/err" "the error lists the templates"

finish
