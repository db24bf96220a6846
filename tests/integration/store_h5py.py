#!/usr/bin/env python3
"""store_h5py.py FILE — reads a `tune --check -o FILE` results file with h5py
and numpy alone (no code of tune's) and checks it against the schema that
README "HDF5 results schema" documents.

Prints one line per check, "ok - ..." or "not ok - ...", which store.sh
counts; exits 1 when a check failed.  Each check covers every run and
fusion in the file and names the first offender.
"""
import re
import sys

import h5py
import numpy as np

VERDICTS = {"match", "benign", "mismatch-candidate", "mismatch-default", "mismatch-both",
            "compile-error", "runtime-error", "timeout", "nondeterministic"}
DIVERGENT = {"mismatch-candidate", "mismatch-default", "mismatch-both", "runtime-error",
             "nondeterministic"}
STATUSES = {"ok", "compile-error", "runtime-error", "timeout"}
METRICS = ["count", "excluded", "mismatches", "max_abs", "max_rel", "max_ulp", "rms",
           "nan_mismatches", "inf_mismatches", "peak_index", "rank", "peak", "bbox_lo",
           "bbox_hi", "hist", "a_min", "a_max", "a_mean", "a_std", "b_min", "b_max", "b_mean",
           "b_std"]
HEAD = ["id", "config", "fingerprint", "tile", "tile_rank", "k", "buf", "order", "pack", "prec",
        "flags", "status", "verdict", "message", "sim_time", "wall_time", "speedup", "atol",
        "rtol", "leaf"]
COLUMNS = HEAD + ["d_" + m for m in METRICS] + ["has_ref"] + ["r_" + m for m in METRICS]
REFERENCE = ["ran", "ok", "atol", "rtol"] + METRICS
RUN_ATTRS = ["started", "finished", "status", "command", "machine", "compiler", "compiler_profile",
             "defects", "seed", "host"]
FUSION_ATTRS = ["name", "source", "hero", "seed", "default_config", "best_config",
                "best_speedup", "default_vs_reference_ok", "ncandidates"]

failed = 0


def report(good, what, why=""):
    global failed
    if good:
        print("ok - h5py: " + what)
    else:
        failed += 1
        print("not ok - h5py: " + what + (" (" + why + ")" if why else ""))


def text(x):
    """Attribute or cell as str, whatever h5py handed back."""
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, np.ndarray) and x.shape == ():
        return text(x[()])
    return str(x)


def check_file(path):
    f = h5py.File(path, "r")
    report(text(f.attrs.get("schema", "")) == "tune-results", "schema attribute is tune-results")
    report(int(f.attrs.get("schema_version", 0)) == 2, "schema_version is 2")
    report(len(text(f.attrs.get("tool_version", ""))) > 0, "tool_version is set")

    runs = f.get("runs")
    report(isinstance(runs, h5py.Group) and len(runs) > 0, "/runs holds at least one run")
    if not isinstance(runs, h5py.Group):
        return

    problems = {}

    def problem(kind, msg):
        problems.setdefault(kind, msg)

    nfusions = 0
    nmaps = 0
    for rid, run in runs.items():
        for a in RUN_ATTRS:
            if a not in run.attrs:
                problem("run attrs", "%s lacks %s" % (rid, a))
        # Schema 2 (issue 18): every other attribute has a row of
        # `attributes` saying what it is; defects is a list.
        docs = run.attrs.get("attributes")
        described = {} if docs is None else {text(d["name"]): text(d["what"]) for d in docs}
        for a in run.attrs:
            if a != "attributes" and len(described.get(a, "")) < 8:
                problem("run docs", "%s: attribute %s is not described" % (rid, a))
        if "defects" in run.attrs and not (isinstance(run.attrs["defects"], np.ndarray)
                                           and run.attrs["defects"].ndim == 1):
            problem("run docs", "%s: defects is not a list" % rid)
        if text(run.attrs.get("started", "")) and not re.match(
                r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", text(run.attrs["started"])):
            problem("run attrs", "%s: started is not ISO 8601 UTC" % rid)
        for fp, fu in run["fusions"].items():
            nfusions += 1
            where = "%s/%s" % (rid, fp)
            if not re.match(r"^[0-9a-f]{16}(-[0-9]+)?$", fp):
                problem("names", "%s is not a 16-hex-digit fingerprint" % where)
            for a in FUSION_ATTRS:
                if a not in fu.attrs:
                    problem("fusion attrs", "%s lacks %s" % (where, a))
            if "hlo" not in fu or "HloModule" not in text(fu["hlo"][()]):
                problem("hlo", "%s: no module text" % where)

            cands = fu["candidates"][()]
            if not (isinstance(cands, np.ndarray) and cands.dtype.names is not None):
                problem("structured", "%s: candidates is not a structured array" % where)
                continue
            if list(cands.dtype.names) != COLUMNS:
                missing = [c for c in COLUMNS if c not in cands.dtype.names]
                extra = [c for c in cands.dtype.names if c not in COLUMNS]
                problem("columns", "%s: missing %s, extra %s" % (where, missing, extra))
                continue
            n = len(cands)
            if n != int(fu.attrs.get("ncandidates", -1)) or n < 1:
                problem("rows", "%s: %d rows for %s candidates" % (where, n,
                                                                     fu.attrs.get("ncandidates")))
                continue
            if not np.array_equal(cands["id"], np.arange(n)):
                problem("ids", "%s: ids are not 0..%d in order" % (where, n - 1))
            configs = [text(c) for c in cands["config"]]
            if configs[0] != text(fu.attrs["default_config"]):
                problem("default", "%s: row 0 is not the default config" % where)
            if len(set(configs)) != n:
                problem("rows", "%s: a config appears twice" % where)
            verdicts = [text(v) for v in cands["verdict"]]
            bad = [v for v in verdicts if v not in VERDICTS]
            if bad:
                problem("verdicts", "%s: unknown verdict %r" % (where, bad[0]))
            statuses = [text(s) for s in cands["status"]]
            if any(s not in STATUSES for s in statuses):
                problem("statuses", "%s: unknown status" % where)
            for v in VERDICTS:
                name = "count_" + v.replace("-", "_")
                if int(fu.attrs.get(name, -1)) != verdicts.count(v):
                    problem("counts", "%s: %s is not the number of %s rows" % (where, name, v))
            if statuses[0] == "ok" and cands["speedup"][0] != 1.0:
                problem("speedup", "%s: row 0 speedup is %r" % (where, cands["speedup"][0]))
            best = text(fu.attrs["best_config"])
            if best and (best not in configs or verdicts[configs.index(best)] in DIVERGENT):
                problem("best", "%s: best_config %r is not a non-divergent row" % (where, best))
            if cands["d_hist"].shape != (n, 17) or cands["d_peak"].shape[0] != n:
                problem("arrays", "%s: metric arrays have shape %s" % (where, cands["d_hist"].shape))
            if cands["tile"].shape != (n, 8):
                problem("arrays", "%s: tile has shape %s" % (where, cands["tile"].shape))

            ref = fu["reference"][()]
            if ref.dtype.names is None or list(ref.dtype.names) != REFERENCE or len(ref) != 1:
                problem("reference", "%s: reference is not one row of %s" % (where, REFERENCE))

            for cid, em in fu["errors"].items():
                nmaps += 1
                if em.dtype != np.float32:
                    problem("errors", "%s/errors/%s is %s" % (where, cid, em.dtype))
                if em.size > 0 and em.ndim > 0 and (em.compression != "gzip" or em.chunks is None):
                    problem("errors", "%s/errors/%s is not chunked and gzip-compressed" % (where, cid))
                row = int(cid)
                if row >= n or text(em.attrs.get("candidate", "")) != configs[row]:
                    problem("errors", "%s/errors/%s: candidate attribute is not row %s's config"
                            % (where, cid, cid))
                if row < n and verdicts[row] not in DIVERGENT:
                    problem("errors", "%s/errors/%s belongs to a %s candidate" % (where, cid,
                                                                                verdicts[row]))

    report(nfusions > 0, "%d fusion groups found" % nfusions)
    checks = [("run attrs", "every run has its attributes"),
              ("run docs", "every run attribute is described, and defects is a list"),
              ("names", "fusion groups are named by fingerprint"),
              ("fusion attrs", "every fusion has its attributes"),
              ("hlo", "every fusion stores its HLO text"),
              ("structured", "candidates reads as a numpy structured array"),
              ("columns", "candidates has exactly the documented columns, in order"),
              ("rows", "one row per candidate"),
              ("ids", "ids run 0..n-1"),
              ("default", "row 0 is the default config"),
              ("verdicts", "every verdict is a known name"),
              ("statuses", "every status is a known name"),
              ("counts", "count_* attributes match the table"),
              ("speedup", "the default's speedup is 1.0"),
              ("best", "best_config is a non-divergent candidate"),
              ("arrays", "array columns have their documented shapes"),
              ("reference", "reference is one row of the documented columns"),
              ("errors", "%d error maps are f32, chunked, gzip'd and name their candidate" % nmaps)]
    for kind, what in checks:
        report(kind not in problems, what, problems.get(kind, ""))
    f.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: store_h5py.py FILE.h5")
    try:
        check_file(sys.argv[1])
    except Exception as e:  # a file h5py cannot read at all is a failure too
        report(False, "reading " + sys.argv[1], "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if failed else 0)
