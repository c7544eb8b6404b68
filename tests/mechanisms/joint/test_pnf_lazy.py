"""Permute-and-flip over a lazy level table (Canonical with ``noise="exponential"``).

The lazy side is a fresh Canonical whose level table finds its blocks (of 1 to 8 levels)
only as far as an operation reads; its twins are the same mechanism after every block was
found first (bit-for-bit the same values and draws), the rule over the levels computed all
at once in an in-memory :class:`~exactdp.core.levels.LevelTable` (certified digits), and
the exact probabilities of that twin (``probability_exact``: a rational base).  The
quadrature route, the one that stops early, is forced on small instances by lowering
``PNF_POLY_SUPPORT_LIMIT``.  A draw whose uniform lands past the blocks the shared values
read must read more blocks (the all-ones generator: the last level), and the sampler's law
is checked by a chi-square test at false-alarm probability ``ALPHA`` with a negative control.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core import level_stream
from exactdp.core.levels import LevelTable
from exactdp.rules import pnf_levels

from twins import ALPHA, NoFloatRandom, chi2_quantile, chi2_stat, run_operations

HALF = Fraction(1, 2)


@pytest.fixture(autouse=True)
def _small_blocks():
    size, first = level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK
    level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK = 2, 1
    yield
    level_stream.STREAM_BLOCK_LEVELS, level_stream.STREAM_FIRST_BLOCK = size, first


@pytest.fixture(params=["poly", "quadrature"])
def route(request, monkeypatch):
    if request.param == "quadrature":
        monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    return request.param


def _make(counts, k, **kw):
    kw.setdefault("base", HALF)
    return exactdp.Canonical(counts, k, noise="exponential", **kw)


def _complete(counts, k, **kw):
    """The control: the same mechanism after every block was found."""
    m = _make(counts, k, **kw)
    list(m.table.iter_levels())
    assert m.table._complete
    return m


def _twin(m):
    return LevelTable(m._compute_levels(), m.scale)


def _close(p, exact, dps):
    """A value certified to ``10**-dps`` against an exact sympy value."""
    with mpmath.workdps(dps + 30):
        q = mpmath.mpf(exact.evalf(dps + 30))
        return abs(p - q) <= mpmath.mpf(10) ** -dps * abs(q)


class Ones(random.Random):
    """Every random bit is 1: the uniform tends to 1, so the draw is the last level."""

    def getrandbits(self, k):
        return (1 << k) - 1


def _stops_early(m):
    levels = m.rule._levels(m.table, m.table.sampling_prec)
    return levels.tail is not None


# -- exhaustive small instances and their twins ---------------------------------------

def _instances():
    """Counts from {0, 1, 2} (every weight matters) and {0, 300, 600} (the shared values
    stop after a few blocks), d <= 4, every k: ties, k = 1, k = d, d = 1."""
    for values in ((0, 1, 2), (0, 300, 600)):
        for d in range(1, 5):
            for counts in itertools.product(values, repeat=d):
                for k in range(1, d + 1):
                    yield list(counts), k


@pytest.mark.slow
def test_lazy_equals_complete_and_exact_exhaustive(route):
    level_stream.STREAM_BLOCK_LEVELS = 1
    stopped = 0
    for counts, k in _instances():
        full = _complete(counts, k)
        twin = _twin(full)
        outputs = list(full.outputs())
        m = _make(counts, k)
        stopped += route == "quadrature" and _stops_early(m)
        assert m.samples(4, rng=7) == full.samples(4, rng=7), (counts, k)
        for out in outputs:
            a = full.table.index_of(full.utility(out))
            p = m.probability(out, dps=20)
            assert p == full.rule.output_probability(full.table, a, 20), (counts, k, out)
            assert _close(p, full.rule.output_probability_exact(twin, a), 20), (counts, k, out)
        fresh = _make(counts, k)
        logs = [fresh.log_probability(out, dps=20) for out in outputs]
        assert logs == [full.log_probability(out, dps=20) for out in outputs]
        assert [fresh.sample(rng=s) for s in range(3)] == [full.sample(rng=s) for s in range(3)]
    if route == "quadrature":
        assert stopped > 20  # the lazy path was exercised (the control: it can stop early)


def test_a_draw_in_the_unread_tail_reads_more_blocks(route):
    """The all-ones uniform lies past every running sum but the last: the draw must find
    the last level (beyond the blocks the shared values read), as the in-memory twin does."""
    counts = [900, 750, 600, 450, 300, 150, 0]
    for k in (1, 2, 3):
        m = _make(counts, k)
        if route == "quadrature":
            assert _stops_early(m) and not m.table._complete
        a = m.rule.sample_level(m.table, Ones())
        twin = _twin(m)
        assert a == len(twin) - 1 == m.rule.sample_level(twin, Ones())
        assert m.table._complete


# -- heavy-tailed counts: a few blocks read -------------------------------------------

def _heavy(d):
    return [10**12 // r**2 for r in range(1, d + 1)]


def _count_levels_read(monkeypatch, m):
    read = []
    original = m._levels_from

    def counted_from(utility):
        for level in original(utility):
            read.append(level)
            yield level

    monkeypatch.setattr(m, "_levels_from", counted_from)
    return read


def test_a_sample_and_its_probability_read_a_few_blocks(monkeypatch):
    level_stream.STREAM_BLOCK_LEVELS = 8
    counts, k = _heavy(40), 3
    full = _complete(counts, k, base=None, epsilon=1)
    law = list(full.iter_level_probabilities(20))
    assert len(law) > 10 * 8  # many blocks
    reference = (full.samples(20, rng=3), full.sample(rng=4), full.probability(full.sample(rng=5), dps=25))
    m = _make(counts, k, base=None, epsilon=1)
    read = _count_levels_read(monkeypatch, m)
    got = (m.samples(20, rng=3), m.sample(rng=4), m.probability(m.sample(rng=5), dps=25))
    assert got == reference
    assert not m.table._complete and len(read) <= 4 * 8, len(read)
    # the worst output: its probability by utility, no block of its own found
    worst = sorted(range(40), key=lambda i: counts[i])[:k]
    a = full.table.index_of(full.utility(worst))
    assert a == len(law) - 1  # the control: the last level
    p = m.probability(worst, dps=25)
    assert p == full.rule.output_probability(full.table, a, 25) and not m.table._complete
    logp = m.log_probability(worst, dps=25)
    assert logp == full.log_probability(worst, dps=25) and not m.table._complete
    with mpmath.workdps(60):
        assert abs(mpmath.log(p) - logp) <= mpmath.mpf(10) ** -24 * abs(logp)
    # the whole law afterwards: what the complete table gives
    assert list(m.iter_level_probabilities(20)) == law and m.table._complete


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 7).flatmap(lambda d: st.tuples(
    st.lists(st.sampled_from([0, 1, 3, 60, 200, 500]), min_size=d, max_size=d), st.integers(1, d))),
    st.permutations(range(4)), st.integers(0, 2**32), st.booleans())
def test_no_value_depends_on_the_order_of_operations(inst, order, seed, quadrature):
    """Samples, one output's probability and log-probability and the streamed law, in
    any order on a fresh lazy table (blocks of 1-4, nothing kept or everything kept):
    bit for bit what the complete table gives."""
    counts, k = inst
    level_stream.STREAM_BLOCK_LEVELS = 1 + seed % 4
    level_stream.STREAM_FIRST_BLOCK = 1 + seed % 3
    probe = tuple(random.Random(seed).sample(range(len(counts)), k))
    limit = pnf_levels.PNF_POLY_SUPPORT_LIMIT
    pnf_levels.PNF_POLY_SUPPORT_LIMIT = 0 if quadrature else limit
    try:
        def run(m, steps):
            return run_operations(m, steps, seed, probe, lists=False)

        expected = run(_complete(counts, k), range(4))
        m = _make(counts, k, memory_budget=1 if seed % 2 else 1 << 30)
        assert run(m, order) == expected
    finally:
        pnf_levels.PNF_POLY_SUPPORT_LIMIT = limit


# -- the sampler's law ------------------------------------------------------------------

def _bins(law, n_bins=6):
    """Consecutive levels in bins of roughly equal probability (level -> bin, bin masses)."""
    of, acc, b = {}, 0.0, 0
    for a, p in enumerate(law):
        of[a] = b
        acc += p
        if acc >= (b + 1) / n_bins and b < n_bins - 1:
            b += 1
    B = max(of.values()) + 1
    return of, [sum(p for a, p in enumerate(law) if of[a] == c) for c in range(B)]


GOF_CASES = [
    # every level matters; the negative control: base 1/2
    ([19, 14, 14, 8, 4, 2, 0], 2, Fraction(9, 10), HALF),
    # five levels share the mass, then a gap of 2**-299: the shared values stop before the
    # last levels (quadrature route); the negative control: base 1/4
    ([600, 599, 598, 597, 596, 2, 1, 0], 1, HALF, Fraction(1, 4)),
]


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, base, wrong_base", GOF_CASES)
def test_lazy_sampler_fits_the_exact_law(route, counts, k, base, wrong_base):
    """4,000 draws of the lazy sampler (blocks of one level; on the quadrature route
    nothing kept) fit the exact level law at false-alarm probability ALPHA; negative
    control: the same draws are rejected against the law of another base."""
    level_stream.STREAM_BLOCK_LEVELS = 1
    twin = _twin(_make(counts, k, base=base))
    law = [float(lv.multiplicity * twin_rule_exact(twin, a)) for a, lv in enumerate(twin.levels)]
    assert abs(sum(law) - 1) < 1e-12
    of, ps = _bins(law)
    assert len(ps) >= 3
    m = _make(counts, k, base=base, memory_budget=1 if route == "quadrature" else 1 << 30)
    if route == "quadrature" and base == HALF:
        assert _stops_early(m)
    rng = NoFloatRandom(2027)
    n = 4000
    counted = [0] * len(ps)
    for _ in range(n):
        counted[of[m.rule.sample_level(m.table, rng)]] += 1
    threshold = chi2_quantile(len(ps) - 1, ALPHA)
    assert chi2_stat(counted, ps, n) < threshold
    other = _twin(_make(counts, k, base=wrong_base))
    wrong = [float(lv.multiplicity * twin_rule_exact(other, a)) for a, lv in enumerate(other.levels)]
    wrong_ps = [sum(p for a, p in enumerate(wrong) if of[a] == c) for c in range(len(ps))]
    assert chi2_stat(counted, wrong_ps, n) > threshold


def twin_rule_exact(table, a):
    from exactdp.rules.permute_and_flip import PermuteAndFlip

    return PermuteAndFlip().output_probability_exact(table, a)
