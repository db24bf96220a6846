#!/usr/bin/env python3
# Independent route for the lane sums of tests/unit/test_accum.c (run it
# with python3; no numpy): exact products with
# Fraction, f32 rounding by struct (round to nearest even), index logic
# written from the HLO dot definition.
import struct, itertools
from fractions import Fraction as F

def f32(x):
    d = float(x)
    assert F(d) == F(x), "double not exact"
    return struct.unpack('f', struct.pack('f', d))[0]

def add32(a, b):  # one f32 add, the exact sum rounded once
    return f32(F(a) + F(b))

# (exact sum, [sequential, 2 lanes, 4 lanes, 8 lanes]): lane p of P takes
# the products whose contraction index k has k % P == p, and the lanes are
# added in order p = 0..P-1, every add in f32.
def sums(prods):
    seq = 0.0
    for p in prods: seq = add32(seq, p)
    out = [seq]
    for P in (2, 4, 8):
        lanes = [0.0] * P
        for k, p in enumerate(prods): lanes[k % P] = add32(lanes[k % P], p)
        s = 0.0
        for l in lanes: s = add32(s, l)
        out.append(s)
    return float(sum(F(p) for p in prods)), out

# Case 1: one element, K = 16, rhs all 1 (products = lhs).
lhs = [3, 2**24, -2**24, 1, -2**24, 5, -2**23, 5, 1, 2**24, 1, 2, 2**24, -3, -1, 5]
print("case1", sums(lhs))
# wrong assignments must differ
def other(prods, lane_of, reverse=False):
    out = []
    for P in (2, 4, 8):
        lanes = [0.0] * P
        for k, p in enumerate(prods):
            l = lane_of(k, P, len(prods)); lanes[l] = add32(lanes[l], p)
        s = 0.0
        for l in (lanes[::-1] if reverse else lanes): s = add32(s, l)
        out.append(s)
    return out
print("case1 blocked", other(lhs, lambda k, P, K: k // (K // P)),
      "shifted", other(lhs, lambda k, P, K: (k + 1) % P),
      "lanes combined in reverse", other(lhs, lambda k, P, K: k % P, True))

# Case 2: lhs f32[2,3,2,4] (batch 0, contracting {3,1}, free 2),
# rhs f32[2,4,3,2] (batch 0, contracting {1,2}, free 3):
# k = i3 * 3 + i1 (lhs_contracting_dims={3,1} is the row-major order).
big = [2**24, -2**24, 2**23]
def L(b, i1, f, i3): 
    n = ((b * 3 + i1) * 2 + f) * 4 + i3
    return big[n % 3] if n % 5 == 0 else (n % 7) + 1
def R(b, r1, r2, g):  # r1 pairs with i3, r2 with i1
    n = ((b * 4 + r1) * 3 + r2) * 2 + g
    return 1 if n % 3 else 2
lvals = [L(b, i1, f, i3) for b in range(2) for i1 in range(3) for f in range(2) for i3 in range(4)]
rvals = [R(b, r1, r2, g) for b in range(2) for r1 in range(4) for r2 in range(3) for g in range(2)]
print("lhs", lvals)
print("rhs", rvals)
for b, f, g in itertools.product(range(2), range(2), range(2)):
    prods = [F(L(b, i1, f, i3)) * R(b, i3, i1, g) for i3 in range(4) for i1 in range(3)]
    wrong = [F(L(b, i1, f, i3)) * R(b, i3, i1, g) for i1 in range(3) for i3 in range(4)]
    e, s = sums(prods)
    print("case2", (b, f, g), e, s, "ascending-dims order:", sums(wrong)[1])
