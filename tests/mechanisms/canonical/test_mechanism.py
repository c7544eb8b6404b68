"""Tests of exactdp.Canonical (docs/definitions.md §2.4 and §3) against brute force.

The references (tests/twins/canonical.py) never call the code under test: every
k-subset is enumerated, its class ``(h, t)`` read off its 1-based ranks (leading run of top
ranks, lowest rank), its loss computed from the formula of docs/definitions.md §2.4, and
probabilities formed directly:

- gumbel: ``P(S) = w(S) / sum_S' w(S')`` with ``w = base**loss`` (exact Fractions, with
  ``base = 2**-q`` so that ``base**loss = 2**-(q*loss)`` is rational for ``rho = p/q``) or
  ``exp(-eps*loss)`` in mpmath at 50 digits;
- exponential (permute-and-flip over subsets, the formula of docs/definitions.md §2.2 with one factor per
  *subset*, not per level): ``P(S) = p_S ∫_0^1 prod_{S' != S} (1 - t p_S') dt`` by exact
  polynomial integration over Fractions.

CanonicalGamma1 has its own module, tests/mechanisms/canonical/test_gamma1.py.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp import errors
from exactdp.mechanisms.canonical.mechanism import UtilityClass
from exactdp.core.levels import Level

from twins import (
    CANONICAL_CASES,
    CANONICAL_RHOS,
    all_k,
    as_fraction,
    assert_fits,
    canon_class,
    canon_em_exact,
    canon_em_mp,
    canon_loss,
    canon_weights,
    k_subsets,
    pnf_by_integral,
    rel_close,
    relabel,
    sorted_counts,
)

ALPHA = 1e-6  # false-alarm probability of every goodness-of-fit test

# --------------------------------------------------------------------------------------
# classes: exhaustive partition, sizes, losses, members
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", range(1, 8))
def test_classes_partition_all_subsets(d):
    counts_list = [tuple(range(d, 0, -1)), tuple((3 * i) % 4 for i in range(d)), tuple([2] * d)]
    for counts in counts_list:
        for k in all_k(d):
            for rho in (Fraction(1, 2), Fraction(1, 3)):
                m = exactdp.Canonical(counts, k, rho=rho)
                cls = m.classes()
                assert len(cls) == 1 + k * (d - k)
                assert cls[0] == UtilityClass(k - 1, k, 1, 0)
                assert sum(c.size for c in cls) == math.comb(d, k)
                # every subset in exactly one class: counted members equal the sizes
                seen = Counter(canon_class(counts, k, S) for S in k_subsets(d, k))
                assert dict(seen) == {(c.h, c.t): c.size for c in cls}
                for c in cls:
                    assert c.size == (1 if c.t == k else math.comb(c.t - c.h - 2, c.k if False else k - c.h - 1))
                    assert type(c.size) is int
                    assert m.class_size(c.h, c.t) == c.size
                    members = list(m.class_members(c.h, c.t))
                    assert len(members) == len(set(members)) == c.size
                    want_loss = canon_loss(counts, k, rho, members[0])
                    assert c.loss == want_loss == m.class_loss(c.h, c.t)
                    assert type(c.loss) in (int, Fraction)
                    for S in members:
                        assert canon_class(counts, k, S) == (c.h, c.t) == m.class_of(S)
                        assert m.loss(S) == want_loss == canon_loss(counts, k, rho, S)
                        assert m.utility(S) == -want_loss


@pytest.mark.parametrize("counts", CANONICAL_CASES)
@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_levels_match_brute_force(counts, rho):
    d = len(counts)
    for k in all_k(d):
        m = exactdp.Canonical(counts, k, rho=rho)
        tally = Counter(-canon_loss(counts, k, rho, S) for S in k_subsets(d, k))
        want = sorted(tally.items(), reverse=True)
        got = m.levels()
        assert [(lv.utility, lv.multiplicity) for lv in got] == want
        assert all(isinstance(lv, Level) and type(lv.multiplicity) is int for lv in got)
        assert all(type(lv.utility) is int or lv.utility.denominator > 1 for lv in got)
        assert m.support_size() == math.comb(d, k) == sum(lv.multiplicity for lv in got)
        # outputs(): every subset once, level by level
        outs = list(m.outputs())
        assert sorted(map(sorted, outs)) == sorted(map(sorted, k_subsets(d, k)))
        utils = [m.utility(o) for o in outs]
        expected = [lv.utility for lv in got for _ in range(lv.multiplicity)]
        assert utils == expected


# --------------------------------------------------------------------------------------
# probabilities against brute force
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", CANONICAL_CASES)
@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_gumbel_exact_probabilities(counts, rho):
    d = len(counts)
    base = Fraction(1, 2 ** rho.denominator)  # base**loss = 2**-(q*loss): rational
    for k in all_k(d):
        m = exactdp.Canonical(counts, k, base=base, rho=rho)
        want = canon_em_exact(counts, k, rho)
        got = {S: as_fraction(m.probability_exact(S)) for S in want}
        assert got == want
        assert sum(got.values()) == 1
        # classes: class probability = sum over members (exact via the certified value)
        for c in m.classes():
            p_class = sum(want[S] for S in m.class_members(c.h, c.t))
            assert rel_close(m.class_probability(c.h, c.t, dps=30), p_class)


@pytest.mark.parametrize("counts", [(5, 3, 1, 0), (2, 2, 1, 1, 0), (7, 4, 4, 4, 2, 1)])
@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_gumbel_certified_probabilities(counts, rho):
    d = len(counts)
    eps = Fraction(7, 10)
    tol = mpmath.mpf(10) ** -30
    for k in all_k(d):
        m = exactdp.Canonical(counts, k, epsilon=eps, rho=rho)
        want = canon_em_mp(counts, k, rho, eps)
        with mpmath.workdps(50):
            for S, w in want.items():
                p = m.probability(S, dps=30)
                assert abs(p - w) <= tol * w, (S, p, w)
                lp = m.log_probability(S, dps=30)
                lw = mpmath.log(w)
                assert abs(lp - lw) <= tol * abs(lw) + mpmath.mpf(10) ** -45
            dist = m.distribution(dps=30)
            assert len(dist) == math.comb(d, k)
            assert abs(mpmath.fsum(p for _, p in dist) - 1) < mpmath.mpf(10) ** -28
            cp = m.class_probabilities(dps=30)
            assert [(h, t) for h, t, _ in cp] == [(c.h, c.t) for c in m.classes()]
            for h, t, p in cp:
                members = list(m.class_members(h, t))
                w = mpmath.fsum(want[S] for S in members)
                assert abs(p - w) <= tol * w
            assert abs(mpmath.fsum(p for _, _, p in cp) - 1) < mpmath.mpf(10) ** -28


@pytest.mark.parametrize("counts", [(5, 3, 1, 0), (2, 2, 1, 1, 0), (3, 3, 3, 1, 0, 0)])
@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_exponential_exact_probabilities(counts, rho):
    """Permute-and-flip over subsets, by exact polynomial integration per subset."""
    d = len(counts)
    q = rho.denominator
    base = Fraction(1, 2**q)
    for k in all_k(d):
        m = exactdp.Canonical(counts, k, base=base, rho=rho, noise="exponential")
        want = pnf_by_integral(canon_weights(counts, k, rho))
        assert sum(want.values()) == 1
        got = {S: as_fraction(m.probability_exact(S)) for S in want}
        assert got == want, (counts, k, rho)
        for c in m.classes():
            p_class = sum(want[S] for S in m.class_members(c.h, c.t))
            assert rel_close(m.class_probability(c.h, c.t), p_class)
        for h, t, p in m.class_probabilities():
            assert rel_close(p, sum(want[S] for S in m.class_members(h, t)))


def test_paper_instance_both_noises():
    """counts (10, 5, 1, 1), k = 2, eps = 1, rho = 1/2 (docs/canonical.md)."""
    g = exactdp.Canonical([10, 5, 1, 1], 2, epsilon=1)
    assert [(lv.utility, lv.multiplicity) for lv in g.levels()] == [(0, 1), (-2, 2), (Fraction(-9, 2), 3)]
    e2, e92 = sympy.exp(-2), sympy.exp(sympy.Rational(-9, 2))
    assert sympy.simplify(g.probability_exact({0, 1}) - 1 / (1 + 2 * e2 + 3 * e92)) == 0
    e = exactdp.Canonical([10, 5, 1, 1], 2, epsilon=1, noise="exponential")
    assert e.probability({0, 1}) > g.probability({0, 1})  # permute-and-flip favours the best



# --------------------------------------------------------------------------------------
# tie rule independence
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", [(2, 2, 1, 1, 0), (3, 3, 3, 1, 0, 0), (1, 1, 1, 1, 1)])
def test_distribution_does_not_depend_on_tie_rule(counts):
    d = len(counts)
    relabelled, perm = relabel(counts)
    for k in (2, 3):
        cases = [(exactdp.Canonical, rho, {"noise": noise}) for rho in CANONICAL_RHOS for noise in ("gumbel", "exponential")]
        cases.append((exactdp.CanonicalGamma1, Fraction(1), {}))  # gamma1: only rho = 1, see below
        for cls, rho, kw in cases:
            a = cls(counts, k, base=Fraction(1, 2 ** rho.denominator), rho=rho, **kw)
            b = cls(relabelled, k, base=Fraction(1, 2 ** rho.denominator), rho=rho, **kw)
            for S in k_subsets(d, k):
                T = frozenset(perm[i] for i in S)
                assert a.probability_exact(S) == b.probability_exact(T), (cls, rho, kw, S)
                assert a.utility(S) == b.utility(T)


# --------------------------------------------------------------------------------------
# larger instances: levels by class sums, unranking, class probabilities
# --------------------------------------------------------------------------------------
def zipfish(d):
    return [1000 // r for r in range(1, d + 1)]  # long runs of ties in the tail


@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_levels_by_class_sum_larger(rho):
    counts = zipfish(300)
    random.Random(5).shuffle(counts)
    k = 7
    m = exactdp.Canonical(counts, k, rho=rho)
    x = sorted_counts(counts)
    tally = Counter({Fraction(0): 1})
    for h in range(k):
        for t in range(k + 1, len(counts) + 1):
            loss = (1 - rho) * (x[h] - x[k - 1]) + rho * (x[k - 1] - x[t - 1])
            tally[loss] += math.comb(t - h - 2, k - h - 1)
    want = sorted(((-loss, n) for loss, n in tally.items()), reverse=True)
    assert [(lv.utility, lv.multiplicity) for lv in m.levels()] == want


def test_unrank_is_a_bijection_larger():
    counts = zipfish(18)
    k = 4
    for rho in (Fraction(1, 2), Fraction(0)):
        m = exactdp.Canonical(counts, k, rho=rho)
        outs = list(m.outputs())
        assert len(outs) == len(set(outs)) == math.comb(18, k)
        for a, lv in enumerate(m.levels()):
            for r in range(lv.multiplicity):
                assert m.utility(m._unrank(a, r)) == lv.utility


@pytest.mark.slow
def test_class_probabilities_larger_instance():
    counts = zipfish(1000)
    k, eps, rho = 10, Fraction(1, 20), Fraction(1, 3)
    m = exactdp.Canonical(counts, k, epsilon=eps, rho=rho)
    cp = m.class_probabilities(dps=30)
    with mpmath.workdps(45):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        terms = []
        for c in m.classes():
            terms.append(c.size * mpmath.exp(-e * mpmath.mpf(Fraction(c.loss).numerator) / Fraction(c.loss).denominator))
        z = mpmath.fsum(terms)
        for (h, t, p), w in zip(cp, terms):
            assert abs(p - w / z) <= mpmath.mpf(10) ** -30 * (w / z)


# --------------------------------------------------------------------------------------
# samplers: goodness of fit (false-alarm probability 1e-6 each), reproducibility
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_sampler_goodness_of_fit(noise):
    m = exactdp.Canonical((3, 2, 2, 1, 0), 2, epsilon=Fraction(1, 2), rho=Fraction(1, 3), noise=noise)
    draws = m.samples(4000, rng=2026)
    assert_fits(draws, dict(m.distribution()), ALPHA)


@pytest.mark.parametrize("which", ["gumbel", "gamma1"])
def test_sampler_goodness_of_fit_by_class_larger(which):
    counts = zipfish(40)
    k = 4
    if which == "gamma1":
        m = exactdp.CanonicalGamma1(counts, k, epsilon=Fraction(1, 10), rho=Fraction(1, 2))
    else:
        m = exactdp.Canonical(counts, k, epsilon=Fraction(1, 10), rho=Fraction(1, 2))
    rng = random.Random(99)
    draws = [m.class_of(m.sample(rng)) for _ in range(3000)]
    assert_fits(draws, {(h, t): p for h, t, p in m.class_probabilities()}, ALPHA)


def test_samplers_reproducible():
    for m in (exactdp.Canonical([4, 3, 3, 1, 0], 2, epsilon=1),
              exactdp.Canonical([4, 3, 3, 1, 0], 2, epsilon=1, noise="exponential"),
              exactdp.CanonicalGamma1([4, 3, 3, 1, 0], 2, epsilon=1)):
        a = m.samples(50, rng=11)
        b = m.samples(50, rng=random.Random(11))
        c = [m.sample(rng) for rng in [random.Random(11)] for _ in range(50)]
        assert a == b == c
        assert all(isinstance(s, frozenset) and len(s) == 2 for s in a)
        assert m.samples(50, rng=12) != a


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [exactdp.Canonical, exactdp.CanonicalGamma1])
@pytest.mark.parametrize(
    "kwargs, error, argument",
    [
        ({"rho": 2}, errors.InvalidParameterError, "rho"),
        ({"rho": Fraction(-1, 2)}, errors.InvalidParameterError, "rho"),
        ({"rho": "abc"}, errors.InvalidParameterError, "rho"),
        ({"rho": None}, errors.ArgumentTypeError, "rho"),
        ({"rho": float("nan")}, errors.InvalidParameterError, "rho"),
        ({"epsilon": 0}, errors.InvalidParameterError, "epsilon"),
        ({"epsilon": 1, "base": Fraction(1, 2)}, errors.InvalidParameterError, "base"),
        ({"base": 2}, errors.InvalidParameterError, "base"),
    ],
)
def test_bad_parameters(cls, kwargs, error, argument):
    with pytest.raises(error) as info:
        cls([3, 2, 1], 2, **kwargs)
    assert info.value.argument == argument
    assert argument in str(info.value)


def test_bad_noise_and_classes():
    with pytest.raises(errors.InvalidParameterError, match="noise='foo'"):
        exactdp.Canonical([3, 2, 1], 2, noise="foo")
    with pytest.raises(errors.ArgumentTypeError, match="noise"):
        exactdp.Canonical([3, 2, 1], 2, noise=1)
    with pytest.raises(errors.InvalidParameterError, match="k=4"):
        exactdp.Canonical([3, 2, 1], 4)
    m = exactdp.Canonical([3, 2, 1, 0], 2)
    for h, t in [(0, 2), (2, 3), (-1, 3), (0, 5), (1, 1)]:
        with pytest.raises(errors.InvalidParameterError) as info:
            m.class_probability(h, t)
        assert info.value.argument == "(h, t)"
    with pytest.raises(errors.ArgumentTypeError):
        m.class_size(0.0, 3)
    for bad in [(0,), (0, 0), (0, 9), "01"]:
        with pytest.raises((errors.InvalidOutputError, errors.ArgumentTypeError)):
            m.probability(bad)
    with pytest.raises(errors.TooManyOutputsError):
        list(m.outputs(max_outputs=3))
    g = exactdp.CanonicalGamma1([3, 2, 1, 0], 2)
    with pytest.raises(errors.TooManyOutputsError):
        g.distribution(max_outputs=5)
    with pytest.raises(errors.InvalidOutputError):
        g.probability({0, 1, 2})


def test_no_closed_form_limits():
    g = exactdp.CanonicalGamma1(list(range(20000)), 2)
    with pytest.raises(errors.NoClosedFormError, match="SYMBOLIC_LEVELS_LIMIT"):
        g.probability_exact({0, 1})
    assert 0 < g.probability({19999, 19998}) < 1


def test_mpmath_precision_untouched():
    before = mpmath.mp.prec
    m = exactdp.Canonical([5, 3, 1, 0], 2, epsilon=1, noise="exponential")
    m.class_probabilities(dps=50)
    exactdp.CanonicalGamma1([5, 3, 1, 0], 2).distribution(dps=40)
    assert mpmath.mp.prec == before


# --------------------------------------------------------------------------------------
# edges: closed-form size limit, extreme scales with permute-and-flip
# --------------------------------------------------------------------------------------
from exactdp.mechanisms.canonical import mechanism as canonical_module


@pytest.mark.parametrize("base", [Fraction(1, 4), Fraction(1, 3)])
@pytest.mark.parametrize("gap", [10**8, 10**12])
def test_probability_exact_fractional_losses_limit(base, gap):
    """Fractional losses (rho = 1/2) with a base: the closed form holds base**(loss) with
    a non-integral exponent; past CANONICAL_SYMBOLIC_BITS_LIMIT it is refused at once
    (it used to run for minutes and end in MemoryError)."""
    for m in (exactdp.Canonical([0, gap, 5], 2, base=base),
              exactdp.Canonical([0, gap, 5], 2, base=base, noise="exponential"),
              exactdp.CanonicalGamma1([0, gap, 5], 2, base=base)):
        for out in ({1, 2}, {0, 1}):
            with pytest.raises(errors.NoClosedFormError) as info:
                m.probability_exact(out)
            assert "PNF_SYMBOLIC" in str(info.value) or "CANONICAL_SYMBOLIC_BITS_LIMIT" in str(info.value)


def test_probability_exact_fractional_losses_below_limit(monkeypatch):
    """Below the limit the closed form is built and equals the certified probability; the
    limit is read at call time (lowering it makes the same call fail)."""
    m = exactdp.Canonical([0, 10**4, 5], 2, base=Fraction(1, 3))
    g = exactdp.CanonicalGamma1([0, 10**4, 5], 2, base=Fraction(1, 3))
    for mech in (m, g):
        for out in ({1, 2}, {0, 2}):
            exact = mech.probability_exact(out)
            p = mech.probability(out, dps=30)
            with mpmath.workdps(60):
                ref = mpmath.mpf(str(sympy.N(exact, 60)))
                assert abs(p - ref) <= mpmath.mpf(10) ** -29 * ref
    monkeypatch.setattr(canonical_module, "CANONICAL_SYMBOLIC_BITS_LIMIT", 100)
    for mech in (m, g):
        with pytest.raises(errors.NoClosedFormError, match="CANONICAL_SYMBOLIC_BITS_LIMIT"):
            mech.probability_exact({0, 2})
    # integral losses (rho = 1) are not affected by this limit
    assert exactdp.Canonical([0, 10**4, 5], 2, base=Fraction(1, 3), rho=1).probability_exact({1, 2}) > 0


def test_exponential_noise_extreme_scales():
    """Canonical with permute-and-flip at huge counts, epsilon and tiny base: no raw
    OverflowError / math domain error; values against closed forms."""
    # losses 0, 5/2 and astronomically large: P({0,1}) = 1 - e^{-5/2}/2 up to e^{-huge}
    m = exactdp.Canonical([10**400, 5, 0], 2, epsilon=1, noise="exponential")
    with mpmath.workdps(40):
        ref = 1 - mpmath.exp(mpmath.mpf(-5) / 2) / 2
        assert abs(m.probability({0, 1}, dps=30) - ref) <= mpmath.mpf(10) ** -29
    assert m.sample(rng=1) == frozenset({0, 1})
    m2 = exactdp.Canonical([3, 2, 0], 2, epsilon=10**400, noise="exponential")
    assert m2.probability({0, 1}, dps=20) == 1 or abs(m2.probability({0, 1}, dps=20) - 1) < mpmath.mpf(10) ** -20
    assert m2.log_probability({1, 2}, dps=20) < -(mpmath.mpf(10) ** 399)
    m3 = exactdp.Canonical([3, 2, 0], 2, base=Fraction(1, 10**400), noise="exponential")
    probs = [p for _, p in m3.level_probabilities(dps=20)]
    with mpmath.workdps(40):
        assert abs(sum(probs) - 1) <= mpmath.mpf(10) ** -19
    assert m3.sample(rng=2) == frozenset({0, 1})
    for mech in (exactdp.CanonicalGamma1([10**400, 5, 0], 2, epsilon=1),
                 exactdp.CanonicalGamma1([3, 2, 0], 2, epsilon=10**400),
                 exactdp.CanonicalGamma1([3, 2, 0], 2, base=Fraction(1, 10**400))):
        assert 0 < mech.probability({0, 1}, dps=20) <= 1
        assert mech.log_probability({1, 2}, dps=20) < 0
        assert mech.sample(rng=3) in [frozenset(s) for s in ({0, 1}, {0, 2}, {1, 2})]


@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_memory_budget_is_a_constructor_argument_as_for_joint(noise):
    """``Canonical(..., memory_budget=B)`` streams the same levels within ``B`` bytes and
    refuses the whole list past it, naming the argument (before: a bare TypeError)."""
    counts, k = [9, 7, 7, 4, 2, 1, 0], 3
    small = exactdp.Canonical(counts, k, base=Fraction(1, 4), noise=noise, memory_budget=300)
    whole = exactdp.Canonical(counts, k, base=Fraction(1, 4), noise=noise)
    assert list(small.iter_levels()) == list(whole.levels())
    streamed = list(small.iter_level_probabilities(dps=25))
    assert [lv for lv, _ in streamed] == [lv for lv, _ in whole.level_probabilities(dps=25)]
    assert all(abs(p - q) <= mpmath.mpf(10) ** -24 * q
               for (_, p), (_, q) in zip(streamed, whole.level_probabilities(dps=25)))
    with pytest.raises(errors.MemoryBudgetError, match="memory_budget=300"):
        small.levels()
    assert "memory_budget=300" in repr(small) and "memory_budget" not in repr(whole)
    with pytest.raises(errors.InvalidParameterError, match="memory_budget=0"):
        exactdp.Canonical(counts, k, memory_budget=0)


def test_class_coordinates_accept_numpy_integers_and_refuse_bools():
    import numpy as np

    m = exactdp.Canonical([10, 5, 3, 1, 1], 2, epsilon=1)
    assert m.class_probability(np.int64(0), np.int32(3)) == m.class_probability(0, 3)
    for h, t in ((True, 3), (0, 3.0), (0, "3")):
        with pytest.raises(errors.ArgumentTypeError):
            m.class_probability(h, t)
