"""Tests of Peeling's weight tree (the gumbel fast path of exactdp.mechanisms.peeling) against
the per-round route and the explicit-rounds twins of tests/twins/peeling.py.

The references never call the code under test: ``peel_exact`` forms every sequence's
probability as the product over rounds of ``w_j / sum_{remaining} w`` with
``w_j = base**(-c_j)`` (exact Fractions).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from itertools import permutations

import mpmath
import pytest
import sympy
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import exactdp

from twins import (
    PEELING_CASES,
    chi2_statistic,
    chi2_threshold,
    counts_and_k,
    peel_exact,
    rel_close,
    run_python,
)

ALPHA = 1e-6  # false-alarm probability of the goodness-of-fit test


def all_small_cases():
    cases = PEELING_CASES + [(7,), (0, 0), (3, 3, 3, 3, 1)]
    for counts in cases:
        for k in range(1, len(counts) + 1):  # k = 1 .. d (d = 1 included)
            yield counts, k


@pytest.mark.parametrize("counts, k", list(all_small_cases()))
def test_tree_exact_equals_rounds_and_brute_force(counts, k):
    """Exhaustive: the weight tree in exact rationals == per-round exact tables == explicit
    rounds over items, for every sequence (ties, k = 1, k = d, d = 1)."""
    base = Fraction(2, 3)
    m = exactdp.Peeling(counts, k, base=base)
    want = peel_exact(counts, k, base, "gumbel")
    for seq, w in want.items():
        tree = m._values_probability_tree_exact(m.utility(seq))
        assert tree == w, (seq, tree, w)
        assert m.probability_exact(seq) == sympy.Rational(w.numerator, w.denominator)


@pytest.mark.parametrize("counts, k", list(all_small_cases()))
def test_tree_certified_equals_rounds_route(counts, k):
    """The certified tree (probability and log) against the per-round route (the rule on
    per-round tables), both to 30 digits, and against exact rationals."""
    eps = Fraction(3, 2)
    m = exactdp.Peeling(counts, k, epsilon=eps)
    for seq in permutations(range(len(counts)), k):
        values = m.utility(seq)
        for log in (False, True):
            fast = m._tree_probability(values, 30, log)
            slow = m._values_probability_rounds(values, 30, log)
            if log and slow == 0:
                assert fast == 0
            else:
                assert rel_close(fast, slow, 29), (seq, log, fast, slow)
    half = exactdp.Peeling(counts, k, base=Fraction(1, 2))
    for seq, w in peel_exact(counts, k, Fraction(1, 2), "gumbel").items():
        assert rel_close(half.probability(seq, dps=30), w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=6, max_sequences=200, values=st.integers(-20, 20)),
       st.fractions(min_value=Fraction(1, 10), max_value=Fraction(9, 10)), st.randoms(use_true_random=False))
@example(([-17, 20], 1), Fraction(1, 10), random.Random(0))
@example(([-17, 20], 1), Fraction(1, 10), random.Random(1))
def test_tree_random_instances(ck, base, rnd):
    counts, k = ck
    m = exactdp.Peeling(counts, k, base=base)
    seq = tuple(rnd.sample(range(len(counts)), k))
    want = peel_exact(counts, k, base, "gumbel")[seq] if math.perm(len(counts), k) <= 200 else None
    tree = m._values_probability_tree_exact(m.utility(seq))
    assert tree == want
    assert rel_close(m.probability(seq, dps=25), want, 25)
    with mpmath.workdps(60):
        # near 1, log1p of the exact difference from 1: log of a number within 10^-37 of 1
        # keeps only about 23 relative digits at 60 (Peeling([-17, 20], 1), base 1/10)
        lw = (mpmath.log1p(mpmath.mpf(want.numerator - want.denominator) / want.denominator) if want > Fraction(1, 2)
              else mpmath.log(mpmath.mpf(want.numerator) / want.denominator))
        got = m.log_probability(seq, dps=25)
        assert (got == 0 and want == 1) or abs(got - lw) <= mpmath.mpf(10) ** -25 * abs(lw)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 5)), min_size=1, max_size=12), st.data())
def test_weight_tree_sums(leaves, data):
    """The tree's total, suffix and leave-one-out sums equal direct sums after updates, and
    restoring the original counts restores every node (the sampler's undo)."""
    from exactdp.mechanisms.peeling.tree import WeightTree

    weights = [Fraction(w + 1, 7) for w, _ in leaves]
    original = [m for _, m in leaves]
    mult = list(original)
    tree = WeightTree(weights, mult, Fraction(0))
    before = list(tree.nodes)
    for _ in range(data.draw(st.integers(0, 5))):
        a = data.draw(st.integers(0, len(leaves) - 1))
        mult[a] = data.draw(st.integers(0, 5))
        tree.set_count(a, mult[a])
    vals = [w * m for w, m in zip(weights, mult)]
    assert tree.total() == sum(vals)
    for a in range(len(vals)):
        assert tree.suffix(a) == sum(vals[a:])
        assert tree.others(a) == sum(vals) - vals[a]
    for a, m in enumerate(original):
        tree.set_count(a, m)
    assert tree.nodes == before


def test_large_d_certified_to_requested_digits():
    """d = 2000 distinct counts, k = 25: tree probability and log-probability against a
    60-digit per-round reference, to the requested 30 digits (relative)."""
    counts = [3 * r + (r % 7) for r in range(2000, 0, -1)]
    k, eps = 25, Fraction(1, 2)
    m = exactdp.Peeling(counts, k, epsilon=eps)
    seq = (0, 2, 1, 5, 3) + tuple(range(6, 26))
    with mpmath.workdps(60):
        lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
        w = [mpmath.exp(lam * (c - counts[0])) for c in counts]
        total = mpmath.fsum(w)
        logp = mpmath.mpf(0)
        for j in seq:
            logp += mpmath.log(w[j] / total)
            total -= w[j]
        p = m.probability(seq, dps=30)
        lp = m.log_probability(seq, dps=30)
        assert abs(p - mpmath.exp(logp)) <= mpmath.mpf(10) ** -30 * mpmath.exp(logp)
        assert abs(lp - logp) <= mpmath.mpf(10) ** -30 * abs(logp)


@pytest.mark.slow
def test_large_d_memory_bounded():
    """d = 100,000 distinct counts, k = 200: probability, log-probability and a sample in a
    child process limited to 1.5 GiB of address space (per-round tables needed ~10 GB)."""
    proc = run_python("""
        import exactdp, mpmath
        m = exactdp.Peeling(list(range(100000, 0, -1)), 200, epsilon=1)
        best = tuple(range(200))
        p = m.probability(best, dps=30)
        lp = m.log_probability(best, dps=30)
        s = m.sample(rng=1)
        assert len(set(s)) == 200
        print(mpmath.nstr(p, 40), mpmath.nstr(lp, 40))
    """, timeout=300, limit_bytes=3 << 29)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    with mpmath.workdps(40):
        p, lp = (mpmath.mpf(x) for x in proc.stdout.split())
        assert abs(mpmath.log(p) - lp) < mpmath.mpf(10) ** -28 * abs(lp)


@pytest.mark.parametrize("counts, k", [((2, 2, 1, 0), 4), ((5, 5, 5), 2), ((9,), 1)])
def test_tree_sampler_goodness_of_fit_ties_and_full_k(counts, k):
    m = exactdp.Peeling(counts, k, epsilon=Fraction(3, 2))
    n = 3000
    draws = Counter(m.samples(n, rng=2024))
    expected = {o: float(p) * n for o, p in m.distribution()}
    assert set(draws) <= set(expected)
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)
