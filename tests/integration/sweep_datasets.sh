#!/bin/sh
# sweep_datasets.sh — issue 7's "done when": a sweep over datasets/ with the
# nightly compiler profile finds exactly the expected findings, and the same
# sweep with stable finds none.
#
# The expectation is datasets/EXPECTED-nightly, written by hand from
# datasets/MANIFEST (which defects each fusion can expose), nightly.cfg
# (which defects are on) and the triggers of tuner/device/dev_defect.h;
# tests/integration/findings.sh checks every divergent config against
# those triggers.  The sweep uses configs/daily.cfg's settings (tpu-v5e,
# constrained inputs, seed 0, 64 candidates per fusion).  To keep `make
# check` short it sweeps the cheap fusions: one or more for each nightly
# defect, and clean ones, among them every file where EXPECTED-nightly says
# MANIFEST's defect stays hidden.  tests/sweep_report.sh runs the whole of
# datasets/ the same way.
. "$TUNE_SRCDIR/tests/integration/lib.sh"
. "$TUNE_SRCDIR/tests/integration/findings.sh"
ds="$TUNE_SRCDIR/datasets"
if [ ! -f "$ds/MANIFEST" ]; then echo "skip: no datasets"; exit 77; fi
cd "$TMPD" || exit 1
exp="$ds/EXPECTED-nightly"

# The hand-made file against its sources: every dataset listed once, and
# every defect it expects is one MANIFEST gives the file and nightly.cfg
# enables.  Multi-fusion modules (MANIFEST column 5 "module") are
# isolated by tests/integration/isolate.sh, not listed here.
nightly=$(awk '/defects *=/, /\]/' "$TUNE_SRCDIR/configs/compilers/nightly.cfg" | grep -o '"[a-z0-9-]*"' | tr -d '"' | tr '\n' ' ')
bad=$(awk -F'\t' -v nightly=" $nightly " '
  FNR == NR { if ($0 !~ /^#/ && NF >= 3 && $5 != "module") manifest[$1] = "," $3 ","; next }
  /^#/ || NF < 2 { next }
  { seen[$1]++
    if (!($1 in manifest)) { print $1 ": not in MANIFEST"; next }
    n = split($2, d, ",")
    for (i = 1; i <= n; i++) if (d[i] != "-") {
      if (index(manifest[$1], "," d[i] ",") == 0) print $1 ": " d[i] " is not in its MANIFEST defects"
      if (index(nightly, " " d[i] " ") == 0) print $1 ": " d[i] " is not enabled by nightly.cfg"
    } }
  END { for (f in manifest) if (seen[f] != 1) print f ": listed " seen[f] + 0 " times" }' "$ds/MANIFEST" "$exp")
if [ -z "$bad" ] && [ -n "$nightly" ]; then ok "EXPECTED-nightly lists every dataset once, with MANIFEST's and nightly.cfg's defects only"
else not_ok "EXPECTED-nightly disagrees with its sources"; echo "$bad" | head -n 5 | sed 's/^/  # /'; fi

files="softmax row_sum_sq_ragged row_sum_long column_max bf16_row_mean_f32acc l2_normalize cross_entropy_loss
  qat_residual_f16 qat_residual_bf16 topk_sort_axis0_bug3 scatter_u8_set_slot u8_threshold_mask
  bf16_row_sum conv_relu_global_pool scatter_s8_set_bug2 argmax_variadic batchnorm_stats cumsum_cast_bug4
  complex_tan_tanh_bug1_const embedding_gather transpose_heads pad_negative_interior dynamic_slice_sliding_window"
corpus=$(for f in $files; do printf '"%s/%s.hlo", ' "$ds" "$f"; done | sed 's/, $//')
nfiles=$(echo $files | wc -w)

for c in nightly stable; do
  cat >$c.cfg <<EOF2
sweep: {
  corpus = [ $corpus ];
  machines = [ "tpu-v5e" ];
  compiler = "$TUNE_SRCDIR/configs/compilers/$c.cfg";
  inputs = "constrained";
  budget = 64;
  threads = 2;
  seed = 0;
  output = "$c.h5";
};
EOF2
  "$TUNE" --sweep $c.cfg >$c.out 2>$c.err
  echo $? >$c.status
  tn_findings "$TUNE" $c.h5 >$c.findings
done

st=$(cat nightly.status)
if [ "$st" -eq 1 ]; then ok "the nightly sweep exits 1 (new divergences)"; else not_ok "the nightly sweep exited $st"; tail -n 3 nightly.err | sed 's/^/  # /'; fi
n=$(grep -c '	-	-$' nightly.findings)
if [ "$n" -eq "$nfiles" ]; then ok "it checked all $nfiles fusions"; else not_ok "it checked $n of $nfiles fusions"; fi
if tn_check_expected "$exp" nightly.findings nightly >nightly.check; then
  ok "nightly: exactly the expected fusions have findings, each meeting a trigger of an expected defect ($(tail -n 1 nightly.check))"
else
  not_ok "nightly findings differ from EXPECTED-nightly"; grep '^error' nightly.check | head -n 8 | sed 's/^/  # /'
fi
sed 's/^/# /' nightly.check | grep -v '# error'

st=$(cat stable.status)
if [ "$st" -eq 0 ]; then ok "the stable sweep exits 0"; else not_ok "the stable sweep exited $st"; tail -n 3 stable.err | sed 's/^/  # /'; fi
n=$(grep -c '	-	-$' stable.findings)
if [ "$n" -eq "$nfiles" ]; then ok "it checked all $nfiles fusions"; else not_ok "it checked $n of $nfiles fusions"; fi
if tn_check_expected "$exp" stable.findings stable >stable.check; then
  ok "stable: no divergent candidate ($(tail -n 1 stable.check))"
else
  not_ok "stable has findings"; grep '^error' stable.check | head -n 8 | sed 's/^/  # /'
fi
finish
