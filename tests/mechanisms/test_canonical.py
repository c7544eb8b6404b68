"""Tests of exactdp.Canonical and exactdp.CanonicalGamma1 (docs/definitions.md §2.4 and §3) against brute force.

The references here never call the code under test: every k-subset is enumerated, its
class ``(h, t)`` read off its 1-based ranks (leading run of top ranks, lowest rank), its
loss computed from the formula of docs/definitions.md §2.4, and probabilities formed directly:

- gumbel: ``P(S) = w(S) / sum_S' w(S')`` with ``w = base**loss`` (exact Fractions, with
  ``base = 2**-q`` so that ``base**loss = 2**-(q*loss)`` is rational for ``rho = p/q``) or
  ``exp(-eps*loss)`` in mpmath at 50 digits;
- exponential (permute-and-flip over subsets, the formula of docs/definitions.md §2.2 with one factor per
  *subset*, not per level): ``P(S) = p_S ∫_0^1 prod_{S' != S} (1 - t p_S') dt`` by exact
  polynomial integration over Fractions;
- gamma1: ``P(t)`` from the number of subsets with lowest rank ``t`` (counted), ``P(h|t)``
  from counted class sizes, then ``/ size``.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp import errors
from exactdp.mechanisms.canonical import NotSingleRuleError, UtilityClass
from exactdp.core.levels import Level

from twins import chi2_statistic, chi2_threshold, ranks_of, sorted_counts

RHOS = [Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)]
ALPHA = 1e-6  # false-alarm probability of every goodness-of-fit test


# --------------------------------------------------------------------------------------
# brute force from docs/definitions.md §2.4
# --------------------------------------------------------------------------------------
def brute_class(counts, k, subset):
    _, rank = ranks_of(counts)
    rs = sorted(rank[i] + 1 for i in subset)
    h = 0
    while h < k and rs[h] == h + 1:
        h += 1
    if h == k:
        return (k - 1, k)
    return (h, rs[-1])


def brute_loss(counts, k, rho, subset):
    h, t = brute_class(counts, k, subset)
    if (h, t) == (k - 1, k):
        return Fraction(0)
    x = sorted_counts(counts)  # x[i] = x_(i+1)
    return (1 - rho) * (x[h] - x[k - 1]) + rho * (x[k - 1] - x[t - 1])


def subsets(d, k):
    return [frozenset(c) for c in itertools.combinations(range(d), k)]


def em_exact(counts, k, rho):
    """Gumbel: exact Fractions with base 2**-q: weight 2**-(q*loss)."""
    q = rho.denominator
    w = {S: Fraction(1, 2 ** int(q * brute_loss(counts, k, rho, S))) for S in subsets(len(counts), k)}
    z = sum(w.values())
    return {S: v / z for S, v in w.items()}


def em_mp(counts, k, rho, eps, dps=50):
    with mpmath.workdps(dps):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        w = {}
        for S in subsets(len(counts), k):
            L = brute_loss(counts, k, rho, S)
            w[S] = mpmath.exp(-e * mpmath.mpf(L.numerator) / L.denominator)
        z = mpmath.fsum(w.values())
        return {S: v / z for S, v in w.items()}


def poly_mul_linear(poly, a):
    """``poly(t) * (1 - a t)`` (coefficient lists, constant first)."""
    out = poly + [Fraction(0)]
    for i in range(len(poly)):
        out[i + 1] -= a * poly[i]
    return out


def poly_div_linear(poly, a):
    """``poly(t) / (1 - a t)`` (exact: the factor divides ``poly``)."""
    n = len(poly) - 1
    quot = [Fraction(0)] * n
    rem = list(poly)
    # divide from the top: (c_n t^n + ...) / (-a t + 1)
    for i in range(n, 0, -1):
        c = rem[i] / (-a)
        quot[i - 1] = c
        rem[i] -= c * (-a)
        rem[i - 1] -= c
    assert rem[0] == 0 and all(r == 0 for r in rem[1:])
    return quot


def pnf_exact(weights):
    """Permute-and-flip over outputs with exact acceptance probabilities
    ``p_o = weights[o] / max(weights)``: ``P(o) = p_o ∫_0^1 prod_{o' != o} (1 - t p_o') dt``."""
    top = max(weights.values())
    p = {o: Fraction(w) / top for o, w in weights.items()}
    full = [Fraction(1)]
    for v in p.values():
        full = poly_mul_linear(full, v)
    out = {}
    for o, v in p.items():
        q = poly_div_linear(full, v)
        out[o] = v * sum(c / (i + 1) for i, c in enumerate(q))
    return out


def gamma1_exact(counts, k, rho):
    """Two-stage gamma1 with base 2**-q (weights exp(eps*u) -> 2**(q*u)), from counted
    class sizes; returns ``{S: P(S)}`` as Fractions."""
    d = len(counts)
    x = sorted_counts(counts)
    p, q = rho.numerator, rho.denominator
    members = {}
    for S in subsets(d, k):
        members.setdefault(brute_class(counts, k, S), []).append(S)
    n_tail = Counter()
    for (h, t), ms in members.items():
        n_tail[t] += len(ms)
    # stage 1: C(t-1,k-1) * exp(eps*rho*x_(t)) -> 2**(p * x_(t)); shift by x_(k) (cancels)
    w1 = {t: n * Fraction(2) ** (p * (x[t - 1] - x[k - 1])) for t, n in n_tail.items()}
    z1 = sum(w1.values())
    out = {}
    for (h, t), ms in members.items():
        pt = w1[t] / z1
        if t == k:
            ph = Fraction(1)
        else:
            w2 = {hh: len(members[(hh, t)]) * Fraction(2) ** (-(q - p) * (x[hh] - x[k - 1]))
                  for hh in range(k) if (hh, t) in members}
            ph = w2[h] / sum(w2.values())
        for S in ms:
            out[S] = pt * ph / len(ms)
    return out


def rel_close(num, exact, digits=30):
    """``|num - exact| <= 10**-digits * |exact|``, compared at 60 digits."""
    with mpmath.workdps(60):
        w = mpmath.mpf(exact.numerator) / exact.denominator if isinstance(exact, Fraction) else mpmath.mpf(exact)
        return abs(num - w) <= mpmath.mpf(10) ** -digits * abs(w)


def as_fraction(x):
    x = sympy.nsimplify(x) if not isinstance(x, sympy.Rational) else x
    assert isinstance(x, sympy.Rational), x
    return Fraction(int(x.p), int(x.q))


COUNT_CASES = [
    (5, 3, 1, 0),
    (2, 2, 1, 1, 0),  # ties
    (3, 3, 3, 1, 0, 0),  # three-way tie at the top
    (7, 4, 4, 4, 2, 1),
    (1, 1, 1, 1, 1),  # all equal
    (9, 6, 6, 3, 3, 0, -2),  # d = 7, negative count
]


def ks(d):
    return range(1, d + 1)


# --------------------------------------------------------------------------------------
# classes: exhaustive partition, sizes, losses, members
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", range(1, 8))
def test_classes_partition_all_subsets(d):
    counts_list = [tuple(range(d, 0, -1)), tuple((3 * i) % 4 for i in range(d)), tuple([2] * d)]
    for counts in counts_list:
        for k in ks(d):
            for rho in (Fraction(1, 2), Fraction(1, 3)):
                m = exactdp.Canonical(counts, k, rho=rho)
                cls = m.classes()
                assert len(cls) == 1 + k * (d - k)
                assert cls[0] == UtilityClass(k - 1, k, 1, 0)
                assert sum(c.size for c in cls) == math.comb(d, k)
                # every subset in exactly one class: counted members equal the sizes
                seen = Counter(brute_class(counts, k, S) for S in subsets(d, k))
                assert dict(seen) == {(c.h, c.t): c.size for c in cls}
                for c in cls:
                    assert c.size == (1 if c.t == k else math.comb(c.t - c.h - 2, c.k if False else k - c.h - 1))
                    assert type(c.size) is int
                    assert m.class_size(c.h, c.t) == c.size
                    members = list(m.class_members(c.h, c.t))
                    assert len(members) == len(set(members)) == c.size
                    want_loss = brute_loss(counts, k, rho, members[0])
                    assert c.loss == want_loss == m.class_loss(c.h, c.t)
                    assert type(c.loss) in (int, Fraction)
                    for S in members:
                        assert brute_class(counts, k, S) == (c.h, c.t) == m.class_of(S)
                        assert m.loss(S) == want_loss == brute_loss(counts, k, rho, S)
                        assert m.utility(S) == -want_loss


@pytest.mark.parametrize("counts", COUNT_CASES)
@pytest.mark.parametrize("rho", RHOS)
def test_levels_match_brute_force(counts, rho):
    d = len(counts)
    for k in ks(d):
        m = exactdp.Canonical(counts, k, rho=rho)
        tally = Counter(-brute_loss(counts, k, rho, S) for S in subsets(d, k))
        want = sorted(tally.items(), reverse=True)
        got = m.levels()
        assert [(lv.utility, lv.multiplicity) for lv in got] == want
        assert all(isinstance(lv, Level) and type(lv.multiplicity) is int for lv in got)
        assert all(type(lv.utility) is int or lv.utility.denominator > 1 for lv in got)
        assert m.support_size() == math.comb(d, k) == sum(lv.multiplicity for lv in got)
        # outputs(): every subset once, level by level
        outs = list(m.outputs())
        assert sorted(map(sorted, outs)) == sorted(map(sorted, subsets(d, k)))
        utils = [m.utility(o) for o in outs]
        expected = [lv.utility for lv in got for _ in range(lv.multiplicity)]
        assert utils == expected


# --------------------------------------------------------------------------------------
# probabilities against brute force
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", COUNT_CASES)
@pytest.mark.parametrize("rho", RHOS)
def test_gumbel_exact_probabilities(counts, rho):
    d = len(counts)
    base = Fraction(1, 2 ** rho.denominator)  # base**loss = 2**-(q*loss): rational
    for k in ks(d):
        m = exactdp.Canonical(counts, k, base=base, rho=rho)
        want = em_exact(counts, k, rho)
        got = {S: as_fraction(m.probability_exact(S)) for S in want}
        assert got == want
        assert sum(got.values()) == 1
        # classes: class probability = sum over members (exact via the certified value)
        for c in m.classes():
            p_class = sum(want[S] for S in m.class_members(c.h, c.t))
            assert rel_close(m.class_probability(c.h, c.t, dps=30), p_class)


@pytest.mark.parametrize("counts", [(5, 3, 1, 0), (2, 2, 1, 1, 0), (7, 4, 4, 4, 2, 1)])
@pytest.mark.parametrize("rho", RHOS)
def test_gumbel_certified_probabilities(counts, rho):
    d = len(counts)
    eps = Fraction(7, 10)
    tol = mpmath.mpf(10) ** -30
    for k in ks(d):
        m = exactdp.Canonical(counts, k, epsilon=eps, rho=rho)
        want = em_mp(counts, k, rho, eps)
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
@pytest.mark.parametrize("rho", RHOS)
def test_exponential_exact_probabilities(counts, rho):
    """Permute-and-flip over subsets, by exact polynomial integration per subset."""
    d = len(counts)
    q = rho.denominator
    base = Fraction(1, 2**q)
    for k in ks(d):
        m = exactdp.Canonical(counts, k, base=base, rho=rho, noise="exponential")
        weights = {S: Fraction(1, 2 ** int(q * brute_loss(counts, k, rho, S))) for S in subsets(d, k)}
        want = pnf_exact(weights)
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
    e2, e92 = sympy.exp(-2), sympy.exp(Rational(-9, 2))
    assert sympy.simplify(g.probability_exact({0, 1}) - 1 / (1 + 2 * e2 + 3 * e92)) == 0
    e = exactdp.Canonical([10, 5, 1, 1], 2, epsilon=1, noise="exponential")
    assert e.probability({0, 1}) > g.probability({0, 1})  # permute-and-flip favours the best


Rational = sympy.Rational


# --------------------------------------------------------------------------------------
# tie rule independence
# --------------------------------------------------------------------------------------
def relabel(counts):
    """Counts with item ids reversed, and the map old id -> new id (tie order flips)."""
    d = len(counts)
    perm = list(range(d))[::-1]
    relabelled = [0] * d
    for i, c in enumerate(counts):
        relabelled[perm[i]] = c
    return relabelled, perm


@pytest.mark.parametrize("counts", [(2, 2, 1, 1, 0), (3, 3, 3, 1, 0, 0), (1, 1, 1, 1, 1)])
def test_distribution_does_not_depend_on_tie_rule(counts):
    d = len(counts)
    relabelled, perm = relabel(counts)
    for k in (2, 3):
        cases = [(exactdp.Canonical, rho, {"noise": noise}) for rho in RHOS for noise in ("gumbel", "exponential")]
        cases.append((exactdp.CanonicalGamma1, Fraction(1), {}))  # gamma1: only rho = 1, see below
        for cls, rho, kw in cases:
            a = cls(counts, k, base=Fraction(1, 2 ** rho.denominator), rho=rho, **kw)
            b = cls(relabelled, k, base=Fraction(1, 2 ** rho.denominator), rho=rho, **kw)
            for S in subsets(d, k):
                T = frozenset(perm[i] for i in S)
                assert a.probability_exact(S) == b.probability_exact(T), (cls, rho, kw, S)
                assert a.utility(S) == b.utility(T)


def test_gamma1_with_rho_1_is_canonical_gumbel():
    """With rho = 1 the loss is x_(k) - x_(t) and stage 2 is uniform: gamma1 is exactly the
    gumbel canonical mechanism (Section 3.2 of the paper: one loss value per tail t)."""
    for counts in COUNT_CASES:
        d = len(counts)
        for k in ks(d):
            g = exactdp.CanonicalGamma1(counts, k, base=Fraction(1, 3), rho=1)
            c = exactdp.Canonical(counts, k, base=Fraction(1, 3), rho=1)
            for S in subsets(d, k):
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
    assert a.probability_exact(S) == Rational(1, 7)
    assert b.probability_exact(frozenset(perm[i] for i in S)) == Rational(3, 14)
    # both are what the brute-force two-stage definition gives
    assert gamma1_exact(counts, 3, Fraction(1, 2))[S] == Fraction(1, 7)
    assert gamma1_exact(relabelled, 3, Fraction(1, 2))[frozenset({2, 3, 4})] == Fraction(3, 14)


# --------------------------------------------------------------------------------------
# CanonicalGamma1
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", COUNT_CASES)
@pytest.mark.parametrize("rho", RHOS)
def test_gamma1_exact_probabilities(counts, rho):
    d = len(counts)
    base = Fraction(1, 2 ** rho.denominator)
    for k in ks(d):
        g = exactdp.CanonicalGamma1(counts, k, base=base, rho=rho)
        want = gamma1_exact(counts, k, rho)
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


@pytest.mark.parametrize("rho", RHOS)
def test_gamma1_certified_and_log(rho):
    counts = (7, 4, 4, 4, 2, 1)
    k, eps = 3, Fraction(3, 4)
    g = exactdp.CanonicalGamma1(counts, k, epsilon=eps, rho=rho)
    x = sorted_counts(counts)
    with mpmath.workdps(50):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        r = mpmath.mpf(rho.numerator) / rho.denominator
        members = {}
        for S in subsets(len(counts), k):
            members.setdefault(brute_class(counts, k, S), []).append(S)
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


def test_gamma1_has_no_levels():
    g = exactdp.CanonicalGamma1([10, 5, 1, 1], 2, epsilon=1)
    for call in (g.levels, g.level_probabilities):
        with pytest.raises(NotSingleRuleError, match="classes"):
            call()
    with pytest.raises(NotImplementedError):
        g.levels()
    with pytest.raises(ValueError):
        g.levels()
    assert g.utility({2, 3}) == Fraction(-9, 2)
    assert g.loss({2, 3}) == Fraction(9, 2)


# --------------------------------------------------------------------------------------
# larger instances: levels by class sums, unranking, class probabilities
# --------------------------------------------------------------------------------------
def zipfish(d):
    return [1000 // r for r in range(1, d + 1)]  # long runs of ties in the tail


@pytest.mark.parametrize("rho", RHOS)
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
def assert_fits(draws, expected_probs):
    n = len(draws)
    observed = Counter(draws)
    expected = {o: float(p) * n for o, p in expected_probs.items()}
    stat, df = chi2_statistic(observed, expected)
    assert df >= 1
    threshold = chi2_threshold(df, ALPHA)
    assert stat < threshold, (stat, threshold, df)


@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_sampler_goodness_of_fit(noise):
    m = exactdp.Canonical((3, 2, 2, 1, 0), 2, epsilon=Fraction(1, 2), rho=Fraction(1, 3), noise=noise)
    draws = m.samples(4000, rng=2026)
    assert_fits(draws, dict(m.distribution()))


def test_gamma1_sampler_goodness_of_fit():
    g = exactdp.CanonicalGamma1((3, 2, 2, 1, 0), 2, epsilon=Fraction(1, 2), rho=Fraction(1, 3))
    draws = g.samples(4000, rng=7)
    assert_fits(draws, dict(g.distribution()))


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
    assert_fits(draws, {(h, t): p for h, t, p in m.class_probabilities()})


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
from exactdp.mechanisms import canonical as canonical_module


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
