"""PNFJoint's streamed level probabilities and exact sampler against the in-memory ones.

The streamed side is a PNFJoint whose level table is cut into the smallest blocks
(``BLOCK_EVENTS = 1``) and keeps nothing (``memory_budget=1``: every block recomputed on
each read); the in-memory side is the default PNFJoint (one block, kept) and the rule over
an in-memory :class:`~exactdp.core.levels.LevelTable` of the same levels.  Both routes run:
the polynomial route of small supports, and the quadrature route (forced on small
instances by lowering ``PNF_POLY_SUPPORT_LIMIT``), which is the one that streams.  Values
must have the same certified digits (``mpmath.nstr`` at ``dps``), and lie within
``10**-dps`` of the exact rationals (base 1/2); draws for one seed must be equal; a
chi-square goodness-of-fit test at false-alarm probability ``ALPHA = 1e-7`` (with a
negative control that must be rejected) checks the streamed sampler's law.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core.levels import LevelTable
from exactdp.core.precision import mp_workdps
from exactdp.errors import MemoryBudgetError
from exactdp.mechanisms.joint import blocks as joint_blocks
from exactdp.rules import pnf_levels
from exactdp.rules.permute_and_flip import PermuteAndFlip

from twins import ALPHA, NoFloatRandom, chi2_quantile, chi2_stat, rel_err

HALF = Fraction(1, 2)


@pytest.fixture(params=["poly", "quadrature"])
def route(request, monkeypatch):
    if request.param == "quadrature":
        monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    return request.param


def _pair(monkeypatch, counts, k, **kw):
    """``(in memory, streamed)`` PNFJoint on the same counts."""
    full = exactdp.PNFJoint(counts, k, **kw)
    full.table  # planned with the default blocks
    with monkeypatch.context() as patch:
        patch.setattr(joint_blocks, "BLOCK_EVENTS", 1)
        small = exactdp.PNFJoint(counts, k, memory_budget=1, **kw)
        small.table
    return full, small


def _digits(pairs, dps):
    return [mpmath.nstr(p, dps) for _, p in pairs]


def _check_same_digits(monkeypatch, counts, k, dps_list, **kw):
    full, small = _pair(monkeypatch, counts, k, **kw)
    twin = LevelTable(full.levels(), full.scale)
    for dps in dps_list:
        want = _digits(full.iter_level_probabilities(dps), dps)
        assert _digits(small.iter_level_probabilities(dps), dps) == want, (counts, k, dps)
        assert [mpmath.nstr(p, dps) for p in PermuteAndFlip().level_probabilities(twin, dps)] == want
    return full, small


def _small_instances(max_d=4, top=3):
    for d in range(1, max_d + 1):
        for counts in itertools.product(range(top), repeat=d):
            for k in range(1, d + 1):
                yield list(counts), k


@pytest.mark.slow
def test_streamed_equals_in_memory_exhaustive(monkeypatch, route):
    """Every count vector in {0,1,2}^d, d <= 4, every k: the same digits at 15, 30, 60."""
    for counts, k in _small_instances():
        _check_same_digits(monkeypatch, counts, k, (15, 30, 60), epsilon=1)


@pytest.mark.slow
def test_streamed_equals_exact_rationals(monkeypatch, route):
    """Base 1/2: each level probability within 10**-dps of the exact rational (the twin of
    the certified value), and each output's probability too, on the streamed table."""
    for counts, k in _small_instances(max_d=3):
        _, small = _pair(monkeypatch, counts, k, base=HALF)
        twin = LevelTable(list(small.iter_levels()), small.scale)
        rule = PermuteAndFlip()
        for dps in (15, 30):
            for a, (level, p) in enumerate(small.iter_level_probabilities(dps)):
                exact = rule.output_probability_exact(twin, a)
                one = small.rule.output_probability(small.table, a, dps)
                with mp_workdps(dps + 20):
                    tol = mpmath.mpf(10) ** -dps
                    assert rel_err(p, mpmath.mpf(level.multiplicity * int(exact.p)) / int(exact.q)) <= tol
                    assert rel_err(one, mpmath.mpf(int(exact.p)) / int(exact.q)) <= tol


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 40), min_size=1, max_size=9), st.data())
def test_streamed_equals_in_memory_random(monkeypatch, counts, data):
    """Random counts (up to 9 items, so up to 362,880 outputs: the quadrature route)."""
    k = data.draw(st.integers(1, len(counts)))
    eps = data.draw(st.sampled_from([Fraction(1, 3), 1, 4]))
    _check_same_digits(monkeypatch, counts, k, (20,), epsilon=eps)


@pytest.mark.parametrize("counts, k", [([2, 1, 1, 0], 2), ([2, 2, 0, 1], 3), ([9, 7, 7, 4, 2, 1, 0], 3),
                                       ([30, 12, 11, 11, 5, 3, 2, 0], 4)])
def test_streamed_sampler_draws_what_the_in_memory_one_draws(monkeypatch, route, counts, k):
    """The same seed gives the same output: the level is the inverse CDF of the same uniform
    (the enclosures differ at most in their last bits), then the same uniform rank."""
    full, small = _pair(monkeypatch, counts, k, epsilon=1)
    for seed in range(40):
        assert small.sample(rng=seed) == full.sample(rng=seed)
    assert small.samples(30, rng=5) == full.samples(30, rng=5)


def _level_bins(law, n_bins=6):
    """Consecutive levels grouped into bins of roughly equal probability."""
    bins, acc, of = [], Fraction(0), {}
    for a, p in enumerate(law):
        of[a] = len(bins)
        acc += p
        if acc >= Fraction(len(bins) + 1, n_bins) and len(bins) < n_bins - 1:
            bins.append(None)
    B = max(of.values()) + 1
    return of, [float(sum(p for a, p in enumerate(law) if of[a] == b)) for b in range(B)]


@pytest.mark.slow
def test_streamed_sampler_fits_the_exact_law(monkeypatch):
    """4,000 draws of the streamed sampler (quadrature route, one level per block, nothing
    kept) fit the exact level law (base 9/10) at false-alarm probability ALPHA; negative
    control: the same draws are rejected against the law of base 1/2."""
    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    counts, k = [9, 7, 7, 4, 2, 1, 0], 3
    _, small = _pair(monkeypatch, counts, k, base=Fraction(9, 10))
    table = small.table
    rule = small.rule
    twin = LevelTable(list(small.iter_levels()), small.scale)
    law = [m * Fraction(int(x.p), int(x.q)) for m, x in
           ((lv.multiplicity, rule.output_probability_exact(twin, a)) for a, lv in enumerate(twin.levels))]
    assert sum(law) == 1
    of, ps = _level_bins(law)
    rng = NoFloatRandom(2026)
    n = 4000
    counted = [0] * len(ps)
    for _ in range(n):
        counted[of[rule.sample_level(table, rng)]] += 1
    threshold = chi2_quantile(len(ps) - 1, ALPHA)
    assert chi2_stat(counted, ps, n) < threshold
    other = exactdp.PNFJoint(counts, k, base=HALF)
    wrong_law = [lv.multiplicity * Fraction(int(x.p), int(x.q)) for lv, x in
                 ((lv, other.rule.output_probability_exact(other.table, a)) for a, lv in enumerate(other.levels()))]
    wrong = [float(sum(p for a, p in enumerate(wrong_law) if of[a] == b)) for b in range(len(ps))]
    assert chi2_stat(counted, wrong, n) > threshold


def test_streams_past_the_budget_and_refuses_only_the_lists():
    """Within a budget far below the levels' size: streamed probabilities, one output's
    probability and exact draws work; the lists at once and Algorithm 5's race over every
    level are refused with the budget named."""
    counts, k = [9, 7, 7, 4, 2, 1, 0], 3
    m = exactdp.PNFJoint(counts, k, memory_budget=500)
    full = exactdp.PNFJoint(counts, k)
    assert _digits(m.iter_level_probabilities(20), 20) == _digits(full.level_probabilities(20), 20)
    assert mpmath.nstr(m.probability((0, 1, 2), dps=20), 20) == mpmath.nstr(full.probability((0, 1, 2), dps=20), 20)
    assert m.sample(rng=3) == full.sample(rng=3)
    with pytest.raises(MemoryBudgetError, match=r"memory_budget = 500 bytes.*iter_level_probabilities"):
        m.level_probabilities(20)
    race = exactdp.PNFJoint(counts, k, sampler="algorithm5", memory_budget=500)
    with pytest.raises(MemoryBudgetError, match=r"Algorithm 5 sampler .* memory_budget = 500"):
        race.sample(rng=3)
    assert exactdp.PNFJoint(counts, k, sampler="algorithm5").sample(rng=3) in full.outputs()


def test_log_probability_streams_too(monkeypatch, route):
    """``log_probability`` sums the other levels block by block: the same digits."""
    full, small = _pair(monkeypatch, [9, 7, 7, 4, 2, 1, 0], 3, epsilon=1)
    for out in [(0, 1, 2), (6, 5, 4), (1, 2, 0)]:
        assert mpmath.nstr(small.log_probability(out, dps=25), 25) == mpmath.nstr(full.log_probability(out, dps=25), 25)


def test_heavy_tail_stops_the_shared_pass_early(monkeypatch):
    """Fast-decaying weights: the block table's running sum stops after a few blocks, and
    so does the quadrature's shared pass (the rest is bounded by the running sum's tail);
    the values still have the digits of the in-memory twin, which sums every level."""
    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    full, small = _pair(monkeypatch, [400, 200, 100, 50, 0], 2, epsilon=2)
    rule = small.rule
    levels = rule._levels(small.table, 120)
    assert levels.quad is not None and levels.quad.tail is not None  # stopped early
    twin = LevelTable(full.levels(), full.scale)
    for dps in (15, 30):
        want = [mpmath.nstr(p, dps) for p in PermuteAndFlip().level_probabilities(twin, dps)]
        assert _digits(small.iter_level_probabilities(dps), dps) == want
    assert [small.sample(rng=s) for s in range(20)] == [full.sample(rng=s) for s in range(20)]
