# findings.sh — sourced by sweep_datasets.sh and tests/sweep_report.sh:
# compare the findings of a stored sweep with a hand-made expectation file
# (datasets/EXPECTED-nightly), checking each divergent config against the
# trigger of a defect the file expects, in the words of
# tuner/device/dev_defect.h.  Nothing here asks tune which defect fired: the
# only input from the code under test is the list of divergent configs.
#
# tn_findings TUNE RESULTS.h5 [RUN]
#   One line per checked fusion, "FILE<TAB>-<TAB>-", and one per divergent
#   candidate, "FILE<TAB>CONFIG<TAB>VERDICT" (FILE: the corpus file's base
#   name), from `tune --report --format json`.  Divergent verdicts are those
#   README calls divergent: mismatch-candidate, mismatch-default,
#   mismatch-both, runtime-error and nondeterministic.
#
# tn_check_expected EXPECTED FINDINGS [MODE]
#   MODE "nightly" (default): the set of files with findings must equal the
#   files EXPECTED gives defects for (among the files checked); every
#   divergent config must meet the trigger of one of its file's expected
#   defects; and every expected defect must be met by at least one
#   divergent config.  MODE "stable": no finding at all.  Prints one
#   "FILE: N findings (defects)" line per checked file and one "error: ..."
#   line per violation; exit status 1 when there is any.  The multi-fusion
#   modules (column 5 "module" of the MANIFEST beside EXPECTED) are not in
#   EXPECTED, as MANIFEST says: under "stable" they must have no finding
#   like every file, under "nightly" their findings are counted, not
#   judged.
#
# Triggers, from the config line (tile, k, pack, flags) and the file's
# columns in EXPECTED (output dims, reduction length):
#   packed-reduce-init0   pack > 1, no split-reduction flag, and more than
#                         one output window (product of ceil(dim / tile))
#   ragged-chunk-pad      k does not divide the reduction length
#   elide-convert         flag fuse-converts
#   unsigned-cmp-signed   flag fuse-converts
#   scatter-s8-iota-wrap  flag vec-scatter
#   sort-lane-index       flag two-stage-sort
# The fusion-side half of each trigger (a narrowing convert converted back,
# an unsigned compare, an s8/u8 scatter index that wraps, an unstable sort
# along a major axis) is what makes EXPECTED list the defect for the file.

tn_findings() {
  "$1" --report "$2" ${3:+--run "$3"} --format json | awk '
    /^      "source": "/ { f = $0; sub(/^[^:]*: "/, "", f); sub(/".*/, "", f); sub(/.*\//, "", f); print f "\t-\t-" }
    /^          "config": "/ { c = $0; sub(/^[^:]*: "/, "", c); sub(/".*/, "", c) }
    /^          "verdict": "/ {
      v = $0; sub(/^[^:]*: "/, "", v); sub(/".*/, "", v)
      if (v ~ /^(mismatch-candidate|mismatch-default|mismatch-both|runtime-error|nondeterministic)$/)
        print f "\t" c "\t" v
    }'
}

tn_check_expected() {
  _modules=$(awk -F'\t' '$5 == "module" { printf "%s,", $1 }' "$(dirname "$1")/MANIFEST" 2>/dev/null)
  awk -F'\t' -v mode="${3:-nightly}" -v modules=",$_modules" '
    function field(cfg, key,   s) {
      s = " " cfg " "
      if (!match(s, " " key "=[^ ]*")) return ""
      return substr(s, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
    }
    function windows(tile, dims,   t, d, n, i, w) {
      n = split(tile, t, "x")
      if (split(dims, d, "x") != n) return -1
      w = 1
      for (i = 1; i <= n; i++) w *= int((d[i] + t[i] - 1) / t[i])
      return w
    }
    function meets(defect, cfg, dims, len,   flags, k) {
      flags = "," field(cfg, "flags") ","
      if (defect == "packed-reduce-init0")
        return field(cfg, "pack") + 0 > 1 && flags !~ /,split-reduction,/ && windows(field(cfg, "tile"), dims) > 1
      if (defect == "ragged-chunk-pad") {
        k = field(cfg, "k") + 0
        return k > 0 && len > 0 && len % k != 0
      }
      if (defect == "elide-convert" || defect == "unsigned-cmp-signed") return flags ~ /,fuse-converts,/
      if (defect == "scatter-s8-iota-wrap") return flags ~ /,vec-scatter,/
      if (defect == "sort-lane-index") return flags ~ /,two-stage-sort,/
      return 0
    }
    FNR == NR {
      if ($0 ~ /^#/ || NF < 2) next
      exp_def[$1] = $2; exp_dims[$1] = $3; exp_len[$1] = $4 + 0; listed[$1] = 1
      next
    }
    function is_module(f) { return index(modules, "," f ",") > 0 }
    $2 == "-" {
      nfus++
      if (!($1 in checked)) { order[++nfiles] = $1; nfind[$1] = 0 }
      checked[$1] = 1
      next
    }
    {
      nfind[$1]++
      if (mode == "stable") { errors[++nerr] = $1 ": a finding with the stable compiler: " $3 " " $2; next }
      if (is_module($1)) next
      if (!($1 in exp_def) || exp_def[$1] == "-") {
        errors[++nerr] = $1 ": unexpected finding (none expected): " $3 " " $2
        next
      }
      n = split(exp_def[$1], ds, ",")
      hit = 0
      for (i = 1; i <= n; i++)
        if (meets(ds[i], $2, exp_dims[$1], exp_len[$1])) { hit = 1; met[$1 SUBSEP ds[i]] = 1 }
      if (!hit) errors[++nerr] = $1 ": " $3 " " $2 " meets the trigger of none of its expected defects (" exp_def[$1] ")"
    }
    END {
      total = 0
      for (j = 1; j <= nfiles; j++) {
        f = order[j]
        if (!(f in listed) && !is_module(f)) errors[++nerr] = f ": not listed in the expectation file"
        total += nfind[f]
        line = sprintf("%-36s %4d findings", f, nfind[f])
        if (is_module(f) && mode != "stable") line = line "  (a module: not in EXPECTED-nightly, see MANIFEST)"
        if (mode != "stable" && exp_def[f] != "-" && exp_def[f] != "") {
          line = line "  expected: " exp_def[f]
          n = split(exp_def[f], ds, ",")
          for (i = 1; i <= n; i++)
            if (!((f SUBSEP ds[i]) in met)) errors[++nerr] = f ": no divergent config meets the trigger of " ds[i]
        }
        print line
      }
      print "total: " total " findings in " nfus " fusions of " nfiles " files"
      for (i = 1; i <= nerr; i++) print "error: " errors[i]
      exit nerr > 0
    }' "$1" "$2"
}
