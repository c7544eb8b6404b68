"""Adversarial tests of the sampler test's verdict: wrong samplers that hide inside the bins
never get PASS, a failing sampler with many bins gets its p-value (not a crash), and the
verdict counts the draws outside the support, not the distinct ones."""

from __future__ import annotations

import random

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import certify
from exactdp.certify import chi2


def _first_of_each_level(m, draws, utilities=None):
    """A wrong sampler with the right level frequencies: every draw (of a level with one of
    ``utilities``; default all) replaced by the first output (in ``outputs()`` order) of its
    level, so that level's uniformity is broken."""
    first = {}
    for o in m.outputs():
        first.setdefault(m.utility(o), o)
    return [first[m.utility(o)] if utilities is None or m.utility(o) in utilities else o for o in draws]


def test_a_deviation_hidden_in_untested_levels_is_not_a_pass():
    # Joint([3, 3, 3, 0, 0], 2): most of the mass is in levels of several sequences.  With
    # within=False their uniformity is untested, so a sampler that always returns the first
    # sequence of its level is invisible: it used to PASS with "power 1 at TV 0.05"
    m = exactdp.Joint([3, 3, 3, 0, 0], 2, epsilon=1)
    good = m.samples(20_000, rng=random.Random(1))
    bad = _first_of_each_level(m, good)
    tv = 0.5 * sum(abs(float(p) - bad.count(o) / len(bad)) for o, p in m.distribution())
    assert tv > 0.5  # far from the exact law
    fit = certify.goodness_of_fit(bad, m, within=False)
    assert not fit.rejected  # the test cannot see it ...
    assert fit.verdict == "inconclusive"  # ... so it must not say PASS
    assert fit.plan.blind > 0.5 and fit.power() == pytest.approx(fit.alpha)
    assert fit.detectable_delta() > fit.plan.blind
    assert "invisible to these bins: deviations of TV up to" in fit.verdict_line()
    assert fit.samples_needed() is None  # no n helps while the uniformity is untested, and it says so
    assert "n needed for TV 0.05: none: deviations of TV up to" in fit.verdict_line()
    # the full test sees it and fails it
    assert certify.goodness_of_fit(bad, m).verdict == "fail"
    # and a correct sampler with every output in its own bin still passes: nothing is blind
    full = certify.goodness_of_fit(good, m)
    assert full.plan.blind == 0 and full.verdict == "pass"


def test_a_deviation_hidden_in_skipped_levels_is_not_a_pass():
    # levels whose uniformity needs the support listed are skipped past max_enumerate: the
    # sampler above hides there unless the skipped mass is below delta
    m = exactdp.Joint([8, 8, 3] + [0] * 30, 2, epsilon=1)  # a level of 1,050 sequences holds 0.89
    good = m.samples(5000, rng=random.Random(3))
    big = {m.levels()[2].utility}
    skip = certify.goodness_of_fit(_first_of_each_level(m, good, big), m, max_enumerate=100)
    assert skip.skipped and not skip.rejected and skip.verdict == "inconclusive"  # was PASS
    assert "max_enumerate" in next(iter(skip.skipped.values())) and skip.plan.blind > 0.85
    assert certify.goodness_of_fit(_first_of_each_level(m, good, big), m).verdict == "fail"


def _invisible_alternative(m, design, n):
    """The deviation the plan calls blind, built output by output: each pooled bin's mass
    onto its lightest level (uniformly), or each untested level's mass onto its first output
    and each group's mass onto its first output, whichever moves more."""
    plan = design.plan(n)
    probs = [float(p) for p in design.probs]
    lv = exactdp._oracle.groups.Groups(m, 30)
    members = {}
    for o in m.outputs():
        members.setdefault(lv.index(o), []).append(o)
    exact = {o: float(p) for o, p in m.distribution()}

    def inside(a):  # level a with its own uniformity broken as far as its bins allow
        q, lp, outs = {}, plan.within.get(a), members[a]
        if len(outs) < 2 or (lp is not None and lp.mode == "outputs"):
            return {o: exact[o] for o in outs}
        if lp is None or lp.mode == "skip":
            return {o: probs[a] if i == 0 else 0.0 for i, o in enumerate(outs)}
        for g in range(lp.groups):
            size = certify.design._group_size(lp, len(outs), g)
            for i, o in enumerate(outs[g * lp.size:g * lp.size + size]):
                q[o] = probs[a] * size / len(outs) if i == 0 else 0.0
        return q

    q = {}
    for g in plan.level_bins + ([list(plan.rare)] if plan.rare else []):  # the rare tail: one more pooled bin
        within = {}
        for a in g:
            within.update(inside(a))
        light = min(g, key=lambda a: probs[a])
        total = sum(probs[a] for a in g)
        moved = {o: (total / len(members[a]) if a == light else 0.0) for a in g for o in members[a]}
        tv = lambda d: 0.5 * sum(abs(d[o] - exact[o]) for o in d)
        q.update(moved if len(g) > 1 and tv(moved) > tv(within) else within)
    return q


@pytest.mark.parametrize("n", [50, 400, 3000, 100_000])
def test_the_blind_deviation_is_real_and_invisible(n):
    # twin of BinPlan.blind: the deviation built output by output has exactly that total
    # variation, and the test's noncentrality against it is 0 (it cannot see it)
    m = exactdp.Joint([5, 3, 3, 1, 0, 0], 3, epsilon=1)
    design = certify.design._Design(exactdp._oracle.groups.Groups(m, 30), 5, True, 10**6)
    shape = design.shape(n)
    q = _invisible_alternative(m, design, n)
    tv = 0.5 * sum(abs(q[o] - float(p)) for o, p in m.distribution())
    assert tv == pytest.approx(shape.blind, abs=1e-12)
    assert (shape.blind == 0) == (shape.within_grouped == 0 and shape.untested_outputs == 0
                                  and shape.pooled_levels == 0)
    if shape.df > 0:
        assert certify.power(m, q, n).noncentrality == pytest.approx(0, abs=1e-9)
        # and the least favourable power at a delta the blind part covers is alpha
        if shape.blind > 0 and not shape.tail_levels:
            assert chi2._lf_power(shape, shape.blind, 1e-3)[0] == 1e-3
        elif shape.blind > 0:  # the two-part bound: at most the tail test's false-alarm rate
            assert chi2._lf_power(shape, shape.blind, 1e-3)[0] <= 1e-3


@pytest.mark.parametrize("df", [33_333, 100_001, 1_000_001])
def test_chi2_sf_with_many_odd_degrees_of_freedom(df):
    # mpmath's gammainc gives up (NoConvergence) here: a failing sampler tested with many
    # bins crashed instead of getting its tiny p-value
    for factor in (1.0, 1.01, 1.5, 2.0):
        p = chi2.chi2_sf(df * factor, df)
        # between the neighbouring even df, where mpmath converges (Q is monotone in df)
        assert chi2.chi2_sf(df * factor, df - 1) <= p <= chi2.chi2_sf(df * factor, df + 1)
    assert chi2.chi2_sf(df, df) == pytest.approx(0.5, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4000), st.floats(0.05, 4))
def test_incomplete_gamma_expansions_against_mpmath(twice_s, ratio):
    # the fallback (continued fraction or series) against mpmath where mpmath converges
    s = mpmath.mpf(twice_s) / 2
    y = s * ratio
    with mpmath.workdps(30):
        exact = mpmath.gammainc(s, y, mpmath.inf, regularized=True)
        fallback = chi2._upper_q_expansions(s, y)
        assert abs(fallback - exact) <= mpmath.mpf(10) ** -20 * max(exact, mpmath.mpf(10) ** -5) + abs(exact) * 1e-20


def test_the_verdict_counts_draws_outside_the_support():
    m = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    draws = [(0,)] * 50 + [(0, 9)] * 30 + [(0, 1)] * 20  # 80 draws outside the support, 2 distinct
    fit = certify.goodness_of_fit(draws, m)
    assert fit.outside == 80 and fit.verdict == "fail"
    assert fit.verdict_line().startswith("FAIL: 80 draws outside the support; n = 100")
    assert len(fit.invalid) == 80  # one entry per draw, as the summary counts them
