"""Concurrent calls from threads: same values as sequential calls, global precision untouched.

Regression: flint's and mpmath's working precision are process-wide; before every
precision section went through one lock (exactdp.core.precision.PRECISION_LOCK), four threads
calling ``probability`` left ``flint.ctx.prec`` changed and some runs hung for minutes.
"""

from __future__ import annotations

import concurrent.futures as cf
from fractions import Fraction

import mpmath
from flint import ctx

import exactdp


def _work(i: int) -> list[str]:
    mechanisms = [
        exactdp.Joint([10, 5, 3, 1, 1, 0], 3, epsilon=Fraction(1, 3) + i % 3),
        exactdp.PNFJoint([10, 5, 3, 1, 1, 0], 2, epsilon=1 + i % 2),
        exactdp.Peeling([9, 4, 4, 1], 2, epsilon=1),
        exactdp.Canonical([9, 4, 4, 1, 0], 2, epsilon=1),
        exactdp.JointSet([9, 4, 4, 1], 2, epsilon=1),
    ]
    out = []
    for m in mechanisms:
        o = next(iter(m.outputs()))
        for dps in (15, 40, 90):
            out.append(mpmath.nstr(m.probability(o, dps=dps), dps))
            out.append(mpmath.nstr(m.log_probability(o, dps=dps), dps))
        out.append(repr(m.samples(5, rng=i)))
        out.append(repr([mpmath.nstr(p, 20) for _, p in m.level_probabilities(dps=20)]))
    return out


def test_thread_pool_matches_sequential_and_leaves_precision_alone():
    flint_prec, mp_prec = ctx.prec, mpmath.mp.prec
    sequential = [_work(i) for i in range(8)]
    with cf.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(_work, i) for i in range(8)]
        # a deadlock or a pathological slowdown fails here instead of hanging the suite
        concurrent = [f.result(timeout=120) for f in futures]
    assert concurrent == sequential
    assert ctx.prec == flint_prec
    assert mpmath.mp.prec == mp_prec
