"""The two exact level samplers of permute-and-flip: ``"cdf"`` (the default: a level from the
certified level probabilities by lazy refinement) and ``"algorithm5"`` (the Joint paper's
Appendix D race of MaxExpo draws).

- The ``"cdf"`` sampler is checked *exactly*: a scripted generator feeds it the binary
  expansion of a chosen rational ``u``, and the level returned must be the inverse CDF of
  ``u`` under the exact rational level probabilities (``probability_exact`` with a rational
  base), including ``u`` within ``2**-200`` of a boundary (many refinements).  This is the
  whole law of the sampler: it is a deterministic function of the uniform.
- Both samplers are compared with the certified level probabilities and with each other
  by chi-square tests at false-alarm probability ``ALPHA = 1e-7`` each (five such tests in
  this file, so below ``5e-7`` together).
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

import exactdp
from exactdp.core.levels import Level, LevelTable
from exactdp.core.scale import Scale
from exactdp.errors import InvalidParameterError
from exactdp.rules import permute_and_flip as pnf_module
from exactdp.rules.permute_and_flip import PermuteAndFlip

from twins import ALPHA, NoFloatRandom, chi2_quantile, chi2_stat

CDF = PermuteAndFlip()
RACE = PermuteAndFlip(sampler="algorithm5")


def table_of(levels, base):
    return LevelTable([Level(u, m) for u, m in levels], Scale(base=Fraction(base)))


class ScriptedRandom(random.Random):
    """``getrandbits`` returns the next bits of the binary expansion of a rational
    ``u`` in ``[0, 1)``; nothing else may be called."""

    def __init__(self, u: Fraction):
        super().__init__(0)
        self.u = u
        self.used = 0

    def getrandbits(self, k):
        # bits used+1 .. used+k of u's expansion: floor(u * 2**(used+k)) mod 2**k
        self.used += k
        return (self.u.numerator << self.used) // self.u.denominator & ((1 << k) - 1)

    def random(self):  # pragma: no cover - must not be called
        raise AssertionError("rng.random() called")


def exact_level_law(table):
    """Exact rational level probabilities ``m_a P_a`` (rational base, integral gaps)."""
    out = []
    for a, m in enumerate(table.multiplicities):
        e = CDF.output_probability_exact(table, a)
        out.append(m * Fraction(int(e.p), int(e.q)))
    assert sum(out) == 1
    return out


def inverse_cdf(law, u):
    acc = Fraction(0)
    for a, p in enumerate(law):
        acc += p
        if u < acc:
            return a
    raise AssertionError("u >= 1")  # pragma: no cover


TABLES = [
    [(0, 1), (-1, 2)],
    [(0, 1), (-4, 2), (-5, 3), (-9, 6)],
    [(0, 2), (-1, 1), (-2, 5), (-3, 1), (-7, 40), (-8, 3)],
    [(0, 1), (-60, 3), (-61, 2)],  # levels of probability about 2**-60
]


@pytest.mark.parametrize("levels", TABLES)
@pytest.mark.parametrize("base", ["1/2", "2/3"])
def test_cdf_sampler_is_the_exact_inverse_cdf(levels, base):
    """For rational ``u`` at random and within ``2**-200`` of every boundary, the level
    drawn equals the exact inverse CDF of ``u``: the sampler's law is exactly the level
    distribution (this is the whole law: the draw is a function of the uniform)."""
    t = table_of(levels, base)
    law = exact_level_law(t)
    rng = random.Random(11)
    us = [Fraction(rng.getrandbits(64), 1 << 64) for _ in range(30)]
    acc = Fraction(0)
    for p in law[:-1]:
        acc += p
        # (not acc itself: a uniform exactly on a boundary has probability 0 and is
        # never decided, as its expansion never leaves the boundary's neighbourhood)
        us += [acc - Fraction(1, 1 << 200), acc + Fraction(1, 1 << 200)]
    for u in us:
        if not 0 <= u < 1:
            continue
        assert CDF.sample_level(t, ScriptedRandom(u)) == inverse_cdf(law, u), (levels, base, u)


def test_cdf_sampler_refines_precision_near_a_boundary():
    """A uniform within ``2**-300`` of a boundary needs more than the first precision: the
    sampler asks for (and keeps) a higher one, at most ``PNF_SAMPLER_PRECISIONS + 1`` kept."""
    t = table_of(TABLES[1], "1/2")
    law = exact_level_law(t)
    u = law[0] - Fraction(1, 1 << 300)
    rng = ScriptedRandom(u)
    assert CDF.sample_level(t, rng) == 0
    assert rng.used > 300
    kept = pnf_module._state_cache[t]
    assert 1 <= len(kept) <= pnf_module.PNF_SAMPLER_PRECISIONS + 1
    assert max(p for _, p in kept) > 300


def test_cdf_sampler_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(pnf_module, "PNF_SAMPLER_PRECISIONS", 1)
    t = table_of(TABLES[2], "1/2")
    law = exact_level_law(t)
    for shift in (100, 400, 900):
        u = law[0] + Fraction(1, 1 << shift)
        assert CDF.sample_level(t, ScriptedRandom(u)) == 1
        assert len(pnf_module._state_cache[t]) <= 2


def test_cdf_sampler_reuses_level_probability_enclosures():
    """After ``level_probabilities`` the sampler reads the table's enclosures (no new
    quadrature pass) when their precision is enough."""
    t = table_of([(-i, 1 + i % 3) for i in range(30)], "9/10")
    CDF.level_probabilities(t, 30)
    calls = []
    original = pnf_module.PnfLevels

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    pnf_module.PnfLevels = spy
    try:
        CDF.sample_level(t, random.Random(1))
    finally:
        pnf_module.PnfLevels = original
    assert calls == []
    pnf_module._state_cache.pop(t)  # negative control: with nothing kept, one pass is made
    pnf_module.PnfLevels = spy
    try:
        CDF.sample_level(t, random.Random(1))
    finally:
        pnf_module.PnfLevels = original
    assert len(calls) == 1


def _binned(table, n_bins=8):
    """Level bins of roughly equal probability (certified to 20 digits)."""
    probs = [float(p) for p in CDF.level_probabilities(table, 20)]
    edges, acc = [], 0.0
    for a, p in enumerate(probs):
        acc += p
        if acc >= (len(edges) + 1) / n_bins and len(edges) < n_bins - 1:
            edges.append(a)
    edges.append(len(probs) - 1)
    bin_of, ps, lo = {}, [], 0
    for e in edges:
        for a in range(lo, e + 1):
            bin_of[a] = len(ps)
        ps.append(sum(probs[lo : e + 1]))
        lo = e + 1
    return bin_of, ps


def _counts(draws, bin_of, n_bins):
    c = [0] * n_bins
    for a in draws:
        c[bin_of[a]] += 1
    return c


@pytest.mark.slow
def test_both_samplers_fit_the_level_law_and_each_other():
    """A medium table (60 levels, acceptance probabilities from 1 down to 0.9**59, with
    multiplicities 1..4): 4,000 draws of each sampler, 8 bins of about equal probability;
    each fits the certified level law and the two fit each other (two-sample chi-square),
    each at false-alarm probability ALPHA = 1e-7."""
    t = table_of([(-i, 1 + i % 4) for i in range(60)], "9/10")
    bin_of, ps = _binned(t)
    B = len(ps)
    n = 4000
    rng = NoFloatRandom(2026)
    cdf = _counts([CDF.sample_level(t, rng) for _ in range(n)], bin_of, B)
    race = _counts([RACE.sample_level(t, rng) for _ in range(n)], bin_of, B)
    threshold = chi2_quantile(B - 1, ALPHA)
    assert chi2_stat(cdf, ps, n) < threshold
    assert chi2_stat(race, ps, n) < threshold
    # two-sample homogeneity: pooled proportions, 2 x B table, B - 1 degrees of freedom
    stat = 0.0
    for x, y in zip(cdf, race):
        e = (x + y) / 2
        if e:
            stat += (x - e) ** 2 / e + (y - e) ** 2 / e
    assert stat < threshold


def test_pnf_joint_sampler_option():
    counts, k = [10, 5, 1, 1, 0], 2
    m = exactdp.PNFJoint(counts, k, epsilon=1, sampler="algorithm5")
    assert m.rule.sampler == "algorithm5"
    assert "sampler='algorithm5'" in repr(m)
    assert exactdp.PNFJoint(counts, k, epsilon=1).rule.sampler == "cdf"
    assert "sampler" not in repr(exactdp.PNFJoint(counts, k, epsilon=1))
    # the same draws from the same seed as the rule's Algorithm 5 on the same table
    gen_a, gen_b = NoFloatRandom(5), NoFloatRandom(5)
    levels = [m.table.index_of(m.utility(m.sample(gen_a))) for _ in range(20)]
    direct = []
    for _ in range(20):
        a = RACE.sample_level(m.table, gen_b)
        gen_b.randrange(m.table.multiplicities[a])
        direct.append(a)
    assert levels == direct
    with pytest.raises(InvalidParameterError, match="sampler"):
        exactdp.PNFJoint(counts, k, epsilon=1, sampler="race")
    with pytest.raises(InvalidParameterError, match="sampler"):
        PermuteAndFlip(sampler="fast")
    assert repr(RACE) == "PermuteAndFlip(sampler='algorithm5')"
    assert repr(PermuteAndFlip("acb", "algorithm5")) == "PermuteAndFlip(method='acb', sampler='algorithm5')"


def test_pnf_joint_samples_fit_with_both_samplers():
    """PNFJoint([10, 5, 1, 1, 0], 2) (20 sequences, 5 levels): 3,000 draws with each sampler
    fit the exact level law (base 1/2), false-alarm probability ALPHA = 1e-7 each."""
    counts, k = [10, 5, 1, 1, 0], 2
    for sampler in ("cdf", "algorithm5"):
        m = exactdp.PNFJoint(counts, k, base=Fraction(1, 2), sampler=sampler)
        law = exact_level_law(m.table)
        n = 3000
        draws = m.samples(n, rng=NoFloatRandom(7))
        c = [0] * len(law)
        for o in draws:
            c[m.table.index_of(m.utility(o))] += 1
        assert chi2_stat(c, [float(p) for p in law], n) < chi2_quantile(len(law) - 1, ALPHA)


@pytest.mark.parametrize(
    "levels, kwargs",
    [
        ([(0, 1), (-(10**400), 1)], dict(epsilon=1)),
        ([(0, 1), (-1, 1), (-3, 1)], dict(epsilon=10**400)),
        ([(0, 1), (-1, 2), (-3, 1)], dict(base=Fraction(1, 10**400))),
        ([(0, 10**1000), (-3322, 10**1000 * 2**3322 // 3), (-10**6, 10**1500)], dict(base=Fraction(1, 2))),
    ],
)
def test_both_samplers_on_extreme_tables(levels, kwargs):
    """Gaps of 10**400, epsilon or 1/base of 10**400, multiplicities of 10**1500: both
    samplers return the top level whenever every other level has probability below
    10**-100 (here all but the last table), and a valid level otherwise."""
    scale = Scale(base=kwargs["base"]) if "base" in kwargs else Scale(epsilon=Fraction(kwargs["epsilon"]), divisor=Fraction(1))
    t = LevelTable([Level(u, m) for u, m in levels], scale)
    probs = CDF.level_probabilities(t, 20)
    top_sure = all(p < 10**-100 for p in probs[1:])
    for rule in (CDF, RACE):
        for seed in range(3):
            level = rule.sample_level(t, NoFloatRandom(seed))
            assert level in range(len(t))
            if top_sure:
                assert level == 0


def test_kept_levels_are_freed_with_their_table():
    """The sampler's kept PnfLevels hold their table: kept in a weak-keyed mapping they
    would keep it alive forever; kept on the table, both go when the mechanism goes."""
    import gc
    import weakref

    from exactdp import PNFJoint

    refs = []
    for _ in range(3):
        m = PNFJoint([5, 3, 2, 1, 0], 2, epsilon=1)
        m.sample(rng=1)
        assert pnf_module._state_cache.get(m.table) is not None
        refs.append(weakref.ref(m.table))
        del m
    gc.collect()
    assert all(r() is None for r in refs)
