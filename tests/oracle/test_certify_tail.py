"""The rare tail of the sampler test: levels too rare for the chi-square are pooled only with
each other, and what is left is tested by an exact binomial test with its Bonferroni share
of alpha, instead of hiding in a heavy level's bin (where mass moved onto the rare level was
invisible and PASS unreachable for ordinary instances)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp._oracle.groups import Groups
from exactdp.certify import design, tail
from exactdp.errors import InvalidParameterError


def _binomial_sf_fractions(t, n, p):
    """Brute force: sum over j >= t of C(n, j) p**j (1 - p)**(n - j), in Fractions."""
    return sum((Fraction(math.comb(n, j)) * p ** j * (1 - p) ** (n - j) for j in range(t, n + 1)), Fraction(0))


def _close(value, exact, digits):
    exact = mpmath.mpf(exact.numerator) / exact.denominator if isinstance(exact, Fraction) else exact
    return abs(value - exact) <= abs(exact) * mpmath.mpf(10) ** -digits


# -------------------------------------------------------------------------------------
# the exact tail test against brute force


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 60), st.data())
def test_binomial_sf_against_a_brute_force_sum_in_fractions(n, data):
    t = data.draw(st.integers(0, n + 2))
    den = data.draw(st.integers(1, 10**6))
    p = Fraction(data.draw(st.integers(0, den)), den)
    exact = _binomial_sf_fractions(t, n, p) if t <= n else Fraction(0)
    with mpmath.workdps(50):
        assert _close(tail.binomial_sf(t, n, p, dps=30), exact, 28), (t, n, p)


@pytest.mark.parametrize("t, n, p", [(0, 5, Fraction(1, 3)), (1, 1, Fraction(1, 2)), (3, 3, Fraction(1)),
                                     (2, 3, Fraction(0)), (5, 10**6, Fraction(1, 10**6)),
                                     (40, 10**6, Fraction(3, 10**6)), (4, 200, Fraction(1, 50))])
def test_binomial_sf_edges_and_tiny_tails(t, n, p):
    # the far tail (P ~ 1e-47 for t = 40) keeps its relative digits: no 1 - (1 - tiny)
    exact = _binomial_sf_fractions(t, n, p) if n <= 200 or p in (0, 1) else None
    got = tail.binomial_sf(t, n, p)
    if exact is None:  # large n: mpmath's regularised incomplete beta, I_p(t, n - t + 1), at 60 digits
        with mpmath.workdps(60):
            q = mpmath.mpf(p.numerator) / p.denominator
            exact = mpmath.betainc(t, n - t + 1, 0, q, regularized=True)
    with mpmath.workdps(50):
        assert _close(got, exact, 27)


def test_binomial_sf_rejects_bad_arguments():
    for args, name in (((-1, 5, 0.5), "t"), ((1, -5, 0.5), "n"), ((1, 5, 1.5), "p"), ((1, 5, "x"), "p"),
                       ((1.0, 5, 0.5), "t"), ((True, 5, 0.5), "t")):
        with pytest.raises(InvalidParameterError, match=name):
            tail.binomial_sf(*args)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 50), st.sampled_from([0.5, 0.1, 1e-2, 1e-6]))
def test_critical_count_is_the_exact_rejection_threshold(n, den, a):
    # the tail test rejects exactly when T >= c: P(T >= c) < a <= P(T >= c - 1), in Fractions
    # of the very p it is given: mpf(1)/den is 1/den rounded to 53 bits, and exact 1/10 against
    # a = 0.1 (the float, above 1/10) is a different case from the rounded p equal to a
    p_mpf = mpmath.mpf(1) / den
    p = Fraction(int(p_mpf.man)) * Fraction(2) ** int(p_mpf.exp)
    c = tail._critical_count(n, p_mpf, a)
    if c <= n:
        assert _binomial_sf_fractions(c, n, p) < Fraction(a)
    # one below, the tail is at least a, or within the certified error band below it (a tie
    # such as P(T >= 16) = 1/2 for n = 31, p = 1/2 is not a rejection at a = 1/2)
    assert c == 1 or _binomial_sf_fractions(c - 1, n, p) >= Fraction(a) * (1 - Fraction(1, 10**25))


def test_the_upper_bound_covers_the_error_of_p():
    # p certified to 8 digits: the bound is above the tail at every p in that band
    for t, n, p in ((3, 50, Fraction(1, 30)), (12, 200, Fraction(1, 80)), (1, 7, Fraction(2, 7))):
        with mpmath.workdps(8):
            p8 = mpmath.mpf(p.numerator) / p.denominator
        band = Fraction(1, 10**8)
        bound = tail.binomial_sf_upper(t, n, p8, dps=8)
        for q in (p * (1 - band), p, p * (1 + band)):
            with mpmath.workdps(40):
                assert bound >= mpmath.mpf(_binomial_sf_fractions(t, n, q).numerator) / _binomial_sf_fractions(t, n, q).denominator


def test_binomial_sf_float_for_powers():
    for c, n, q in ((1, 10, 0.1), (5, 6000, 0.002), (3, 10**9, 1e-9), (7, 10**6, 3e-6)):
        with mpmath.workdps(40):
            want = float(mpmath.betainc(c, n - c + 1, 0, q, regularized=True))
        assert tail._binomial_sf_float(c, n, q) == pytest.approx(want, abs=1e-12)


# -------------------------------------------------------------------------------------
# the bins: rare levels only with each other


def _old_pool(expected, min_expected):
    """The pooling before the rare tail: the short run at the end merged into the last bin."""
    bins, cur, acc = [], [], 0.0
    for a, e in enumerate(expected):
        cur.append(a)
        acc += e
        if acc >= min_expected:
            bins.append(cur)
            cur, acc = [], 0.0
    if cur:
        if bins:
            bins[-1].extend(cur)
        else:
            bins.append(cur)
    return bins


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 40), min_size=1, max_size=12), st.sampled_from([1.0, 5.0, 10.0]))
def test_rare_levels_never_share_a_bin_with_a_heavy_level(expected, min_expected):
    bins, rare = design._pool_levels(expected, min_expected)
    levels = sorted([a for g in bins for a in g] + rare)
    assert levels == list(range(len(expected)))  # every level once
    for g in bins:
        if math.fsum(expected[a] for a in g) < min_expected:  # no bin reachable: one bin of everything, 0 df
            assert bins == [list(range(len(expected)))] and not rare
        heavy = [a for a in g if expected[a] >= min_expected]
        assert not heavy or g == heavy  # a heavy level is a bin of its own
    assert all(expected[a] < min_expected for a in rare)
    assert not rare or math.fsum(expected[a] for a in rare) < min_expected  # else they would be one more bin
    # the twin: without rare levels next to heavy ones, the bins are those of before
    if not rare and all(len(g) == 1 or all(expected[a] < min_expected for a in g) for g in _old_pool(expected, min_expected)):
        assert bins == _old_pool(expected, min_expected)


def test_the_rare_last_level_is_the_tail_not_part_of_the_heavy_bin():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    d = design._Design(Groups(m, 30), 5, True, 10**6)
    plan = d.plan(5000)
    assert plan.level_bins == [[0], [1]] and plan.rare == (2,) and plan.tail_share == 0.5
    assert _old_pool([float(5000 * p) for p in d.probs], 5) == [[0], [1, 2]]  # before: hidden in level 1's bin
    shape = d.shape(5000)
    assert shape.tail_levels == 1 and shape.blind == 0 and shape.pooled_levels == 0
    assert "and 1 in the rare tail (exact binomial test, 0.1 draws expected)" in shape.describe()


# -------------------------------------------------------------------------------------
# draws needed, power, verdicts


@pytest.mark.parametrize("counts, needed", [([5, 5, 4, 4], 5248), ([5, 5, 4, 4, 0], 5504), ([5, 5, 4, 4, -3], 5440)])
def test_samples_needed_is_sane_with_a_rare_last_level(counts, needed):
    # was 5,248, 251,904 and 101,187,584: the rare last level hid in the heavy bin before it
    m = exactdp.Joint(counts, 1, epsilon=4)
    assert certify.samples_needed(m) == needed


def _draws(m, n, seed, q=None):
    """n draws from m's distribution (or the alternative q), with numpy (float probabilities)."""
    outs = [o for o, _ in m.distribution()]
    ps = np.array([float(p) for _, p in m.distribution()] if q is None else [q[o] for o in outs])
    idx = np.random.default_rng(seed).choice(len(outs), size=n, p=ps / ps.sum())
    return [outs[i] for i in idx]


def test_a_correct_sampler_passes_at_the_n_needed():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=3), m)
    assert fit.tail is not None and fit.tail.levels == (2,)
    assert fit.power() >= 0.99 and fit.verdict == "pass"  # unreachable before at this n (power 1e-6)
    assert "and rare tail" in fit.verdict_line() and "rare tail:    level 2" in fit.summary()


@pytest.mark.slow
def test_false_alarm_rate_of_a_correct_sampler_stays_below_alpha():
    # Joint([3, 1, 0], 1) with 30 draws: level 2 (4.2 draws expected) is the rare tail.
    # 1,000 seeded runs at alpha = 0.2: a test of level 0.2 rejects at most Binomial(1000, 0.2)
    # times; this check fails a correct test with probability at most 1e-4, and the tail test
    # alone (exact) rejects at most its share, 0.1.
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    runs, alpha, rejected, tail_rejected = 1000, 0.2, 0, 0
    for seed in range(runs):
        fit = certify.goodness_of_fit(_draws(m, 30, seed), m, alpha=alpha)
        assert fit.tail is not None and fit.tail.levels == (2,) and fit.tail.share == 0.5
        rejected += fit.rejected
        tail_rejected += fit.tail.p_value < alpha * fit.tail.share
    for count, level in ((rejected, alpha), (tail_rejected, alpha / 2)):
        tail_prob = float(tail.binomial_sf(count, runs, Fraction(level).limit_denominator()))
        assert tail_prob >= 1e-4, (count, level)
    assert tail_rejected > 0  # the tail test is not vacuous here


@pytest.mark.slow
def test_a_sampler_moving_mass_onto_the_rare_level_fails_with_the_claimed_power():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    exact = {o: float(p) for o, p in m.distribution()}
    bad = dict(exact)
    bad[(4,)] += 0.002  # the rare item gets 0.2% more, taken from level 1 (items 2 and 3)
    bad[(2,)] -= 0.001
    bad[(3,)] -= 0.001
    n = 6000
    claimed = certify.power(m, bad, n)
    assert claimed.tail_critical == 5 and claimed.power >= 0.99
    # before, this deviation sat inside the bin of levels 1-2: noncentrality ~0.18, power ~alpha
    assert claimed.noncentrality < 0.2
    runs, fails = 60, 0
    for seed in range(runs):
        fails += certify.goodness_of_fit(_draws(m, n, 10_000 + seed, bad), m).verdict == "fail"
    # the claimed power is not overstated: at least that rate, up to a 1e-4 false alarm
    p = Fraction(claimed.power).limit_denominator(10**9)
    assert 1 - tail.binomial_sf(fails + 1, runs, p) >= 1e-4, fails
    # and the power is a lower bound: the Monte Carlo estimate of the two-part test agrees
    mc = certify.power(m, bad, n, method="monte-carlo", trials=400, seed=1)
    assert mc.interval[1] >= claimed.power - 1e-9
    assert certify.samples_needed(m, bad) <= n


def test_the_least_favourable_power_is_a_lower_bound():
    # the branch and bound returns a value no larger than the exact minimum on a fine grid
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    shape = design._Design(Groups(m, 30), 5, True, 10**6).shape(5000)
    low = certify.chi2._lf_power(shape, 0.05, 1e-6)[0]
    c = tail._critical_count(shape.n, shape.tail_exact, 5e-7)
    from exactdp.certify.chi2 import _critical, _ncx2_sf_fast
    grid = []
    for i in range(401):
        tau = 0.05 * i / 400
        g = tail._binomial_sf_float(c, shape.n, float(shape.tail_probability) + tau)
        seen = 0.05 - tau - float(shape.tail_probability) - shape.chi_blind
        f = _ncx2_sf_fast(_critical(5e-7, shape.df), shape.df, (shape.n - c + 1) * seen ** 2 / shape.spread) if seen > 0 else 0
        grid.append(g + (1 - g) * f)
    assert low <= min(grid) and low >= min(grid) - 2e-3
