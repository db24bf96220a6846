#!/usr/bin/env python3
"""bench_eval_numpy.py -- the three bench_eval cases done by numpy (float32).

Usage: bench_eval_numpy.py [REPS]     (timed runs per case, default 5)

The peer for tests/bench/bench_eval.c: same shapes, same operations, same
accounting (bytes read + written, or 2*n^3 flops), best of REPS after one
warm-up run.  Lines are key=value like bench_eval's, so run.sh can pair them:
  numpy a time_s=... rate=GB/s
  numpy b time_s=... rate=GB/s
  numpy c time_s=... rate=GFLOP/s
For (a) numpy works in place with out= (one result buffer, no temporaries),
which is the fastest way to write the chain in numpy and so the stronger
peer; the naive expression with temporaries is printed too, for context.
"""
import sys
import time

import numpy as np


def best_of(fn, reps):
    fn()  # warm-up: page faults, BLAS thread start
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def inputs(shape, seed):
    # Uniform in [-1, 1) like chk_inputs' NAIVE profile; the values do not
    # change the speed of any of these operations.
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(np.float32)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    f = np.float32

    n = 16777216
    x = inputs(n, 0)

    def chain_in_place():
        y = np.multiply(x, f(1.0001))
        np.add(y, f(0.5), out=y)
        np.maximum(y, f(-0.75), out=y)
        np.subtract(y, f(0.25), out=y)
        np.multiply(y, f(0.999), out=y)
        np.add(y, f(0.125), out=y)
        np.minimum(y, f(2.0), out=y)
        np.multiply(y, f(0.5), out=y)
        return y

    def chain_naive():
        return np.minimum((np.maximum(x * f(1.0001) + f(0.5), f(-0.75)) - f(0.25)) * f(0.999) + f(0.125),
                          f(2.0)) * f(0.5)

    ta = best_of(chain_in_place, reps)
    ta_naive = best_of(chain_naive, reps)
    print("numpy a time_s=%.6f rate=%.2f GB/s  (in place with out=; naive expression %.6f s)"
          % (ta, 2 * 4 * n / ta / 1e9, ta_naive))

    m = inputs((4096, 4096), 1)
    tb = best_of(lambda: m.sum(axis=1, dtype=np.float32), reps)
    print("numpy b time_s=%.6f rate=%.2f GB/s  (row sum f32[4096,4096] -> [4096])"
          % (tb, 4 * (4096 * 4096 + 4096) / tb / 1e9))

    a = inputs((1024, 1024), 2)
    b = inputs((1024, 1024), 3)
    tc = best_of(lambda: a @ b, reps)
    print("numpy c time_s=%.6f rate=%.2f GFLOP/s  (matmul f32[1024,1024], numpy %s)"
          % (tc, 2 * 1024.0 ** 3 / tc / 1e9, np.__version__))


if __name__ == "__main__":
    main()
