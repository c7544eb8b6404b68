"""Tests of Peeling's prefix weight trees (exactdp.mechanisms.peeling.tree.PrefixTree, built by
Peeling._tree past exactdp.mechanisms.peeling.mechanism._FULL_TREE distinct counts): the counts a tree
does not cover are held as one enclosure ``[0, N e_cover]``, and every result is the one of
the tree over all counts.

Twins: the tree over all counts (``_FULL_TREE`` raised past the number of counts: the
previous construction) for the same draws under the same integer randomness, and the
explicit-rounds exact Fractions of tests/twins/peeling.py (``peel_exact``) for the
probabilities, exhaustively over {0..3}^d, d <= 4, every k.  The goodness-of-fit test rejects
with probability ALPHA = 1e-6 when the law is right (6 tests in this file: a false alarm
anywhere in it has probability below 6e-6).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
import exactdp.mechanisms.peeling.mechanism as peeling
from exactdp.core.precision import flint_workprec
from exactdp.mechanisms.peeling.tree import PrefixTree, WeightTree

from twins import NoFloatRandom, chi2_statistic, chi2_threshold, peel_exact, rel_close

ALPHA = 1e-6

#: instances where a tree at the sampler's precision covers only part of the counts
#: (rate lam = epsilon/k: the counts more than about 110 bits / lam below the top are enclosed)
LARGE = {
    "spread": (list(range(0, 6000, 2)), 20, Fraction(1)),               # cover ~ 900 of 3000
    "ties": ([5000] * 40 + [2 * (i // 3) for i in range(9000)], 10, Fraction(1)),
    "heavy": ([2**40 // r for r in range(1, 3001)], 30, Fraction(1, 2)),  # the top picked in turn
    "random": (random.Random(5).sample(range(30000), 3000), 50, Fraction(3)),
}


def full(monkeypatch):
    monkeypatch.setattr(peeling, "_FULL_TREE", 10**9)


def prefix(monkeypatch):
    monkeypatch.setattr(peeling, "_FULL_TREE", 0)


@pytest.mark.parametrize("name", list(LARGE))
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_prefix_tree_draws_equal_full_tree_draws(name, noise, monkeypatch):
    """Same seed, same draws: the prefix trees against the tree over all counts, and the
    prefix trees really leave counts out (else the test would compare a thing with itself)."""
    counts, k, eps = LARGE[name]
    prefix(monkeypatch)
    m = exactdp.Peeling(counts, k, epsilon=eps, noise=noise)
    got = m.samples(40, rng=NoFloatRandom(11))
    n = len(m.ranking.values)
    assert m._trees and all(t.cover < n for t in m._trees.values()), [t.cover for t in m._trees.values()]
    full(monkeypatch)
    ref = exactdp.Peeling(counts, k, epsilon=eps, noise=noise)
    assert ref.samples(40, rng=NoFloatRandom(11)) == got
    assert all(t.complete for t in ref._trees.values())


@pytest.mark.parametrize("name", list(LARGE))
def test_prefix_tree_probabilities_equal_full_tree(name, monkeypatch):
    """Certified probabilities and log-probabilities of sampled sequences and of the worst
    one (the k smallest counts: the tree then covers them all) agree to the digits asked."""
    counts, k, eps = LARGE[name]
    prefix(monkeypatch)
    m = exactdp.Peeling(counts, k, epsilon=eps)
    outs = m.samples(3, rng=2) + [tuple(m.ranking.order[-k:][::-1])]
    got = [(m.probability(o, dps=30), m.log_probability(o, dps=30)) for o in outs]
    full(monkeypatch)
    ref = exactdp.Peeling(counts, k, epsilon=eps)
    for o, (p, lp) in zip(outs, got):
        assert rel_close(p, ref.probability(o, dps=40), 30)
        assert rel_close(lp, ref.log_probability(o, dps=40), 30)


def small_vectors():
    for d in range(1, 5):
        yield from itertools.product(range(4), repeat=d)


#: base 2**-200: a count 2 below another weighs 2**-400 of it, so the trees at the
#: working precision leave the lower counts out even among 0..3
TINY = Fraction(1, 2**200)


@pytest.mark.slow
def test_exhaustive_small_probabilities_against_enumeration(monkeypatch):
    """Every vector of {0..3}^d, d <= 4, every k (ties, k = 1, k = d, d = 1), every sequence:
    the certified probability through prefix trees against the exact rounds (Fractions),
    with base 2**-200 (trees that enclose counts) and 2/3 (trees over all counts)."""
    prefix(monkeypatch)
    enclosed = 0
    for counts in small_vectors():
        for k in range(1, len(counts) + 1):
            for base in (TINY, Fraction(2, 3)):
                m = exactdp.Peeling(counts, k, base=base)
                for seq, w in peel_exact(counts, k, base, "gumbel").items():
                    assert rel_close(m.probability(seq, dps=20), w, 20), (counts, k, base, seq)
                    enclosed += any(not t.complete for t in m._trees.values())
    assert enclosed >= 20  # the enclosure was exercised (a tree, once complete, stays so)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 12), min_size=1, max_size=6), st.integers(1, 6), st.integers(0, 2**32 - 1),
       st.sampled_from(["gumbel", "exponential"]), st.sampled_from([TINY, Fraction(1, 2**40), Fraction(1, 3)]))
def test_random_small_instances_prefix_equals_full(counts, k, seed, noise, base):
    """Random small instances: the same draws through prefix trees and through the tree
    over all counts, probabilities within the certified digits of the exact rounds."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _random_small(counts, min(k, len(counts)), seed, noise, base, monkeypatch)


def _random_small(counts, k, seed, noise, base, monkeypatch):
    prefix(monkeypatch)
    m = exactdp.Peeling(counts, k, base=base, noise=noise)
    got = m.samples(5, rng=NoFloatRandom(seed))
    full(monkeypatch)
    ref = exactdp.Peeling(counts, k, base=base, noise=noise)
    assert ref.samples(5, rng=NoFloatRandom(seed)) == got
    if noise == "gumbel" and len(counts) <= 5:
        prefix(monkeypatch)
        exact = peel_exact(tuple(counts), k, base, "gumbel")
        for seq in set(got):
            assert rel_close(m.probability(seq, dps=20), exact[seq], 20)


@pytest.mark.parametrize("noise", ["gumbel", pytest.param("exponential", marks=pytest.mark.slow)])
def test_prefix_tree_first_round_goodness_of_fit(noise, monkeypatch):
    """The first pick of 4,000 draws through prefix trees against the mechanism's certified
    first-round distribution (per-round tables, not the trees)."""
    prefix(monkeypatch)
    counts = list(range(0, 9000, 3))  # 3,000 distinct counts, lam = 1/5: cover ~ 200
    m = exactdp.Peeling(counts, 5, epsilon=1, noise=noise)
    n = 4000
    first = Counter(s[0] for s in m.samples(n, rng=NoFloatRandom(7)))
    assert all(t.cover < 3000 for t in m._trees.values())
    expected = {i: float(p) * n for i, p in m.round_distribution((), dps=20)}
    stat, df = chi2_statistic(first, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


@pytest.mark.parametrize("broken", [False, True])
def test_least_cover_fits_and_a_dropped_tail_is_caught(broken, monkeypatch):
    """Trees covering only the count they must (the least cover: every walk that reaches
    the tail covers more) keep the law; the control, the same trees with the tail's
    enclosure replaced by 0, never picks a count left out, and the fit test rejects it."""
    prefix(monkeypatch)
    monkeypatch.setattr(peeling.Peeling, "_prefix", lambda self, prec, need: need + 1)
    if broken:
        def zero_tail(weights, mult, zero, n, tail=None, prec=0):
            return PrefixTree(weights, mult, zero, n, None if tail is None else zero, prec)

        monkeypatch.setattr(peeling, "PrefixTree", zero_tail)
    counts, n = [10, 10, 9, 9, 8, 8, 6], 3000
    m = exactdp.Peeling(counts, 2, base=Fraction(1, 2))
    draws = Counter(m.samples(n, rng=NoFloatRandom(3)))
    expected = {o: float(p) * n for o, p in peel_exact(tuple(counts), 2, Fraction(1, 2), "gumbel").items()}
    stat, df = chi2_statistic(draws, expected)
    assert (stat < chi2_threshold(df, ALPHA)) is not broken, (stat, df)


@pytest.mark.slow
def test_thinning_coin_at_another_precision_covers_its_count(monkeypatch):
    """A thinning coin decided at a precision whose tree was built for the tail's first
    count only (the least cover there) still reads the weight of the count it thins, not
    the tail's enclosure: the law of the rounds through the tail (Poisson thinning forced)."""
    import exactdp.mechanisms.peeling.sampling as ps

    prefix(monkeypatch)
    real_prefix = peeling.Peeling._prefix
    monkeypatch.setattr(peeling.Peeling, "_prefix",
                        lambda self, prec, need: real_prefix(self, prec, need) if prec < 300 else need + 1)
    real_coin = ps.lazy_coin
    monkeypatch.setattr(ps, "lazy_coin", lambda prob, gen, prec: real_coin(prob, gen, 4 * prec))
    monkeypatch.setattr(ps, "_pnf_round", ps._pnf_round_by_split)  # the race's twin
    monkeypatch.setattr(ps, "_plan_head", lambda state: state.top + 1)
    counts, k, base, n = (6, 5, 5, 4, 2, 1, 0), 2, Fraction(2, 3), 3000
    m = exactdp.Peeling(counts, k, base=base, noise="exponential")
    draws = Counter(m.samples(n, rng=NoFloatRandom(5)))
    expected = {o: float(p) * n for o, p in peel_exact(counts, k, base, "exponential").items()}
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_race_coin_on_a_short_tree_covers_more(monkeypatch):
    """The race's thinning coin, first tried at a precision where it cannot decide (forced),
    then on trees that cover only the top count (the tail's enclosure in ``W``): it covers
    the count it thins and more until it decides, and the rounds keep their law."""
    import exactdp.mechanisms.peeling.sampling as ps

    prefix(monkeypatch)
    real_prefix = peeling.Peeling._prefix
    monkeypatch.setattr(peeling.Peeling, "_prefix",
                        lambda self, prec, need: real_prefix(self, prec, need) if prec < 300 else need + 1)
    real_decide = ps._race_decide
    covered = Counter()

    def decide(state, a, times, y, ny, prec):
        if prec < 300:
            return 4 * prec  # undecided at the first precision: more bits, at 4 times the precision
        assert prec < 5000, "the coin raised the precision instead of covering more counts"
        out = real_decide(state, a, times, y, ny, prec)
        covered[out is None] += 1
        return out

    monkeypatch.setattr(ps, "_race_decide", decide)
    counts, k, base, n = (6, 5, 5, 4, 2, 1, 0), 2, Fraction(2, 3), 3000
    m = exactdp.Peeling(counts, k, base=base, noise="exponential")
    draws = Counter(m.samples(n, rng=NoFloatRandom(5)))
    assert covered[True] > 0  # some coins covered more before deciding
    expected = {o: float(p) * n for o, p in peel_exact(counts, k, base, "exponential").items()}
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_prefix_tree_nodes_enclose_the_true_sums():
    """Every node of a prefix tree (after removals, and after they are undone) encloses
    the exact sum of its leaves' true values, the tail leaf the exact tail sum."""
    from flint import arb

    weights = [Fraction(1, 2**j) for j in range(12)]
    mult = [1, 3, 2, 1, 1, 4, 2, 1, 1, 1, 5, 2]
    with flint_workprec(80):
        balls = [arb(w.numerator) / w.denominator for w in weights]
        cover = 5
        tail_bound = balls[cover] * sum(mult[cover:])
        tree = PrefixTree(balls[:cover], mult, arb(0), len(weights), arb(0).union(tail_bound), 80)
        log = []
        tree.set_count(1, 1, log)
        tree.set_count(7, 0, log)  # not covered: the tail's enclosure still holds
        now = list(mult)
        now[1], now[7] = 1, 0
        leaves = [weights[a] * now[a] for a in range(cover)] + [sum(weights[a] * now[a] for a in range(cover, 12))]
        size = tree.size
        exact = [Fraction(0)] * (2 * size)
        for i, x in enumerate(leaves):
            exact[size + i] = x
        for j in range(size - 1, 0, -1):
            exact[j] = exact[2 * j] + exact[2 * j + 1]
        for j in range(1, 2 * size):
            assert tree.nodes[j].contains(arb(exact[j].numerator) / exact[j].denominator), j
        tree.restore(log)
        fresh = WeightTree(list(balls[:cover]) + [tree.weights[cover]], mult[:cover] + [1], arb(0))
        assert [(x.mid(), x.rad()) for x in tree.nodes] == [(x.mid(), x.rad()) for x in fresh.nodes]
