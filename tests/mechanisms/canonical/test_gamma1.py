"""Tests of exactdp.CanonicalGamma1 (exactdp/mechanisms/canonical/gamma1.py; docs/definitions.md §2.4 and §3) against brute force.

The reference never calls the code under test: every k-subset is enumerated and its class
``(h, t)`` read off its 1-based ranks; ``P(t)`` comes from the number of subsets with lowest
rank ``t`` (counted), ``P(h|t)`` from counted class sizes, then ``/ size``
(``twins.canon_gamma1_exact``).
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp.mechanisms.canonical.mechanism import NotSingleRuleError

from twins import (
    CANONICAL_CASES,
    CANONICAL_RHOS,
    all_k,
    as_fraction,
    assert_fits,
    canon_class,
    canon_gamma1_exact,
    k_subsets,
    rel_close,
    relabel,
    sorted_counts,
)

ALPHA = 1e-6  # false-alarm probability of the goodness-of-fit test


def test_gamma1_with_rho_1_is_canonical_gumbel():
    """With rho = 1 the loss is x_(k) - x_(t) and stage 2 is uniform: gamma1 is exactly the
    gumbel canonical mechanism (Section 3.2 of the paper: one loss value per tail t)."""
    for counts in CANONICAL_CASES:
        d = len(counts)
        for k in all_k(d):
            g = exactdp.CanonicalGamma1(counts, k, base=Fraction(1, 3), rho=1)
            c = exactdp.Canonical(counts, k, base=Fraction(1, 3), rho=1)
            for S in k_subsets(d, k):
                assert g.probability_exact(S) == c.probability_exact(S)


def test_gamma1_depends_on_the_tie_rule_when_rho_below_1():
    """A property of the two-stage definition (reported, not a bug of this code):
    with ties and rho < 1 the stage-2 normaliser Z2(t) = sum_h C(t-h-2, k-h-1) w_h differs
    between tied tails, so relabelling tied items changes the distribution over item ids.
    counts (2, 2, 1, 1, 0), k = 3, rho = 1/2, base 1/4: the set {0, 1, 2} (the top-k under
    the tie rule) has probability 1/7, its twin {2, 3, 4} after reversing the ids 3/14."""
    counts = (2, 2, 1, 1, 0)
    relabelled, perm = relabel(counts)
    a = exactdp.CanonicalGamma1(counts, 3, base=Fraction(1, 4), rho=Fraction(1, 2))
    b = exactdp.CanonicalGamma1(relabelled, 3, base=Fraction(1, 4), rho=Fraction(1, 2))
    S = frozenset({0, 1, 2})
    assert a.probability_exact(S) == sympy.Rational(1, 7)
    assert b.probability_exact(frozenset(perm[i] for i in S)) == sympy.Rational(3, 14)
    # both are what the brute-force two-stage definition gives
    assert canon_gamma1_exact(counts, 3, Fraction(1, 2))[S] == Fraction(1, 7)
    assert canon_gamma1_exact(relabelled, 3, Fraction(1, 2))[frozenset({2, 3, 4})] == Fraction(3, 14)


# --------------------------------------------------------------------------------------
# CanonicalGamma1
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", CANONICAL_CASES)
@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_gamma1_exact_probabilities(counts, rho):
    d = len(counts)
    base = Fraction(1, 2 ** rho.denominator)
    for k in all_k(d):
        g = exactdp.CanonicalGamma1(counts, k, base=base, rho=rho)
        want = canon_gamma1_exact(counts, k, rho)
        assert sum(want.values()) == 1
        got = {S: as_fraction(g.probability_exact(S)) for S in want}
        assert got == want, (counts, k, rho)
        for h, t, p in g.class_probabilities():
            w = sum(want[S] for S in g.class_members(h, t))
            assert rel_close(p, w)
            assert rel_close(g.class_probability(h, t), w)
        for S, p in g.distribution():
            assert rel_close(p, want[S])
        assert g.support_size() == math.comb(d, k) == len(list(g.outputs()))


@pytest.mark.parametrize("rho", CANONICAL_RHOS)
def test_gamma1_certified_and_log(rho):
    counts = (7, 4, 4, 4, 2, 1)
    k, eps = 3, Fraction(3, 4)
    g = exactdp.CanonicalGamma1(counts, k, epsilon=eps, rho=rho)
    x = sorted_counts(counts)
    with mpmath.workdps(50):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        r = mpmath.mpf(rho.numerator) / rho.denominator
        members = {}
        for S in k_subsets(len(counts), k):
            members.setdefault(canon_class(counts, k, S), []).append(S)
        tails = Counter()
        for (h, t), ms in members.items():
            tails[t] += len(ms)
        w1 = {t: n * mpmath.exp(e * r * x[t - 1]) for t, n in tails.items()}
        z1 = mpmath.fsum(w1.values())
        for (h, t), ms in members.items():
            p = w1[t] / z1
            if t != k:
                w2 = {hh: len(members[(hh, t)]) * mpmath.exp(-e * (1 - r) * x[hh]) for hh in range(k)}
                p *= w2[h] / mpmath.fsum(w2.values())
            p /= len(ms)
            for S in ms:
                got = g.probability(S, dps=30)
                assert abs(got - p) <= mpmath.mpf(10) ** -30 * p
                lg = g.log_probability(S, dps=30)
                assert abs(lg - mpmath.log(p)) <= mpmath.mpf(10) ** -30 * abs(mpmath.log(p))
        tp = g.tail_probabilities()
        assert [t for t, _ in tp] == list(range(k, len(counts) + 1))
        for t, p in tp:
            assert abs(p - w1[t] / z1) <= mpmath.mpf(10) ** -30 * p


def test_gamma1_group_output_probabilities_one_stage2_sum_per_tail(monkeypatch):
    """group_output_probabilities formed every class's stage-2 sum afresh (O(k) terms per
    class, O(k^2 d) in all: 134 s at d = 10,000, k = 50); each tail's sum is now formed
    once, with the same values as probability() of one member of each class."""
    counts, k = (9, 7, 7, 4, 3, 3, 1, 0), 3
    g = exactdp.CanonicalGamma1(counts, k, epsilon=Fraction(1, 3))
    calls = Counter()
    real = g._stage2_terms

    def counted(t):
        calls[t] += 1
        return real(t)

    monkeypatch.setattr(g, "_stage2_terms", counted)
    pairs = g.group_output_probabilities(dps=30)
    assert calls and max(calls.values()) == 1
    assert sorted(calls) == list(range(k + 1, len(counts) + 1))
    assert len(pairs) == len(g.groups()) == 1 + k * (len(counts) - k)
    for a, (group, p) in enumerate(pairs):
        member = next(iter(g.class_members(*group.utility)))
        assert g.group_index(member) == a
        assert abs(p - g.probability(member, dps=30)) <= mpmath.mpf(10) ** -29 * p


def test_gamma1_has_no_levels():
    g = exactdp.CanonicalGamma1([10, 5, 1, 1], 2, epsilon=1)
    for call in (g.levels, g.level_probabilities):
        with pytest.raises(NotSingleRuleError, match="classes"):
            call()
    with pytest.raises(NotImplementedError):
        g.levels()
    with pytest.raises(ValueError):
        g.levels()
    with pytest.raises(exactdp.errors.NotSingleRuleError):  # with every other error class, in exactdp.errors
        g.iter_levels()
    assert NotSingleRuleError is exactdp.errors.NotSingleRuleError
    assert g.utility({2, 3}) == Fraction(-9, 2)
    assert g.loss({2, 3}) == Fraction(9, 2)


def test_gamma1_sampler_goodness_of_fit():
    g = exactdp.CanonicalGamma1((3, 2, 2, 1, 0), 2, epsilon=Fraction(1, 2), rho=Fraction(1, 3))
    draws = g.samples(4000, rng=7)
    assert_fits(draws, dict(g.distribution()), ALPHA)


def test_gamma1_groups_refused_past_the_limit_outputs_streamed(monkeypatch):
    """groups() holds one Level per class, 1 + k(d-k) of them: at d = 166,000, k = 200
    (33 million) it ended in MemoryError after minutes.  Past GAMMA1_GROUPS_LIMIT it is
    refused at once, naming the limit; outputs() streams the classes and is unchanged."""
    from exactdp.errors import TooManyOutputsError
    from exactdp.mechanisms.canonical import gamma1 as canonical_gamma1

    m = exactdp.CanonicalGamma1([7, 5, 5, 3, 1, 0], 3, epsilon=1)
    every = list(m.outputs())
    groups = m.groups()
    assert len(groups) == 1 + 3 * 3 and len(every) == math.comb(6, 3) == len(set(every))
    assert [m.group_index(o) for o in every] == sorted(m.group_index(o) for o in every)
    monkeypatch.setattr(canonical_gamma1, "GAMMA1_GROUPS_LIMIT", 9)
    for call in (m.groups, lambda: m.group_output_probabilities(20)):
        with pytest.raises(TooManyOutputsError, match="GAMMA1_GROUPS_LIMIT = 9"):
            call()
    assert list(m.outputs()) == every
    monkeypatch.setattr(canonical_gamma1, "GAMMA1_GROUPS_LIMIT", 10)
    assert m.groups() == groups
