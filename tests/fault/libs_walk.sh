#!/bin/sh
# libs_walk.sh — targeted malloc-failure walks (make check), first over
# the allocations that HDF5 and libconfig make: HDF5 1.10 and
# libconfig crash when one of their own allocations fails, and tune must
# turn that into exit 2 with an out-of-memory message, the results file
# left as it was and no temporary beside it (tuner/store/libguard.h).
# Every allocation of libconfig (the machine and compiler profiles'
# parse: libconfig ignores a failed strdup and keeps a key with no name,
# on which tune once crashed, at 2 of its 95 allocations; the walk took
# every 4th and missed both) and about 16 of HDF5's, spread evenly over
# the run: walk.sh judges each point.
# Then every 3rd of the last 90 that HDF5 makes for `--eval -o`, where
# tune closes the file: a failure there once made tune take the file for
# one not in memory and exit 0 with an empty out.h5.
: "${TUNE_SRCDIR:?}"
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in libhdf5 --last 90 --step 3 eval || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in libconfig --step 1 check || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in libhdf5 --samples 16 check || exit 1
# Every 4th of the last 100 allocations tune itself makes for --check -o
# (inputs, the reference's values, the device's buffers): the old code
# said "could not be run by the host" without "out of memory", or took an
# input it could not allocate for an unsupported unit (exit 3).
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in tune --last 100 --step 4 check || exit 1
# Every one of the first 100 allocations tune itself makes for --check -o
# (options, the machine and compiler profiles, the module, the fusion's
# setup): fopen's failing to allocate when looking for the machine's file
# once said "unknown machine 'tpu-v5e' (did you mean 'tpu-v5e'?)", and the
# same for the compiler profile; the module's text failing to print was
# stored as no text with fingerprint 0, and tune exited 0.
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in tune --step 1 --range 1-100 check || exit 1
# Every one of the first 20 allocations tune itself makes for --sweep (the
# sweep file, the corpus glob): glob() out of memory once said "corpus
# glob 'small.hlo': cannot expand it".
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in tune --step 1 --range 1-20 sweep || exit 1
# The tolerance map of a summing fusion (sum.hlo, an add-reduce; small.hlo
# has none): every allocation chk_accums_leaf_map makes for --check of two
# candidates, failed once and failed from there on (a host that can give
# the map nothing while smaller blocks still come).  A map that was not
# there once meant comparing exactly: a single failure made the default's
# check against the reference exact (stored with atol 0; it passed only
# because the default equals the reference bit for bit), and a persisting
# one reported the candidate, a legitimate reordering, as
# mismatch-candidate with exit 1.
# It must be exit 2 saying out of memory, or the clean result.  Then about
# 10 of tune's own allocations for the same --check, spread evenly.
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --hlo sum.hlo --budget 2 --func chk_accums_leaf_map --step 1 check || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --hlo sum.hlo --budget 2 --func chk_accums_leaf_map --persist --step 1 check || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in tune --hlo sum.hlo --budget 2 --samples 10 check || exit 1
# The device's collectives, run for every replica in lockstep
# (dev_collective.h): every allocation made while collective.hlo's kernel
# is materialised (replica-id, each replica's values, the all-reduce),
# failed in turn.  The device once said "r: out of memory" and "ar: out of
# memory", which the sweep did not recognise as the host's failure: it
# stored a runtime-error candidate and exited 1, a finding.  And every
# allocation of the device's scatter (its operand copied tile by tile,
# its update chunks: dev_stage.h).
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --hlo collective.hlo --budget 2 --under dev_elem_materialize --step 1 check || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --hlo scatter.hlo --budget 2 --under dev_scatter_run --step 1 check || exit 1
# The readers of a results file, sampled (walk.sh --under: only what
# happens while the function is on the stack, HDF5's allocations
# included): a look-up HDF5 could not answer for want of memory was taken
# for "absent", and a second sweep said "no previous run" into a file
# holding one; the tool version, a fusion's error maps and a bf16
# dataset's dtype fell the same way (test_lookup_fail has each).  (Until
# 2026-12-03 these two lines stood after an `exec` and never ran.)
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --under tn_results_list_runs --samples 30 report || exit 1
sh "$TUNE_SRCDIR/tests/fault/walk.sh" --under tn_results_read_run --samples 30 report || exit 1
# Not a library's: every 4th of the last 100 allocations tune itself makes
# for --sweep, which include the simulated device's buffers.  A candidate
# that could not get them was stored as tool-error while the sweep exited
# 0; it must fail the run (exit 2), as with --check.
exec sh "$TUNE_SRCDIR/tests/fault/walk.sh" --in tune --last 100 --step 4 sweep
