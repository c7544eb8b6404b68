"""exactdp.certify.least_favourable: the power against the least favourable alternative at a
total variation distance (attained, a lower bound, consistent with the fit), and the n needed."""

from __future__ import annotations

import pytest

import exactdp
from exactdp import certify
from exactdp._oracle.groups import Groups
from exactdp.certify import chi2, design as certify_design, least_favourable, tail
from exactdp.certify import least_favourable


EXAMPLE = ([4, 3, 3, 1, 0], 2)  # the instance of the float example (20 sequences, 5 levels)


SMALL_K1 = ([3, 1, 0], 1)


def _least_favourable(m, n, delta):
    """The explicit alternative of the docstring: move delta of mass into the heaviest level bin
    (or, failing a bin with p >= 1/2, into bins making up half the mass), proportionally."""
    plan = certify_design.Design(Groups(m, 30), certify_design.MIN_EXPECTED, True, 10**6).plan(n)
    probs = [float(p) for p in Groups(m, 30).group_probabilities()]
    p_bins = [sum(probs[a] for a in g) for g in plan.level_bins]
    top = max(range(len(p_bins)), key=p_bins.__getitem__)
    assert p_bins[top] >= 0.5
    factor = {}
    for b, g in enumerate(plan.level_bins):
        f = (1 + delta / p_bins[b]) if b == top else (1 - delta / (1 - p_bins[top]))
        for a in g:
            factor[a] = f
    lv = Groups(m, 30)
    return {o: float(p) * factor[a] for a, (o, p) in zip(
        (a for a, lvl in enumerate(lv.groups) for _ in range(lvl.multiplicity)), m.distribution())}


def test_least_favourable_alternative_attains_the_noncentrality():
    m = exactdp.Joint(*SMALL_K1, epsilon=1)  # one bin holds p >= 1/2: the bound is attained
    n, delta = 4000, 0.05
    alt = _least_favourable(m, n, delta)
    assert sum(alt.values()) == pytest.approx(1, abs=1e-12)
    assert sum(abs(alt[o] - float(p)) for o, p in m.distribution()) / 2 == pytest.approx(delta, rel=1e-9)
    sens = certify.sensitivity(m, n, delta=delta)
    explicit = certify.power(m, alt, n)
    assert explicit.noncentrality == pytest.approx(sens.noncentrality, rel=1e-9)
    assert explicit.power == pytest.approx(sens.power, rel=1e-9) and explicit.df == sens.plan.df
    # and the approximation is honest: simulated rejection rate of the real test
    mc = certify.power(m, alt, n, method="monte-carlo", trials=400, seed=3)
    assert mc.interval[0] - 0.05 <= sens.power <= mc.interval[1] + 0.05


def test_sensitivity_matches_the_fit():
    m = exactdp.Joint(*EXAMPLE, epsilon=1)
    n = 6000
    fit = certify.goodness_of_fit(m.samples(n, rng=8), m)
    sens = certify.sensitivity(m, n)
    assert sens.plan == fit.plan and sens.power == fit.power() and sens.n_needed == fit.samples_needed()
    assert sens.detectable_delta == fit.detectable_delta() and not sens.conclusive
    assert "n needed for TV 0.05: " in str(sens)
    # the n found is where the power crosses min_power (to within 1%)
    at = certify.sensitivity(m, sens.n_needed)
    assert at.power >= 0.99 and at.conclusive
    assert certify.sensitivity(m, int(sens.n_needed * 0.98)).power < 0.99


def test_the_least_favourable_power_is_a_lower_bound():
    # the branch and bound returns a value no larger than the exact minimum on a fine grid
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    shape = certify_design.Design(Groups(m, 30), 5, True, 10**6).shape(5000)
    low = least_favourable.lf_power(shape, 0.05, 1e-6)[0]
    c = tail.critical_count(shape.n, shape.tail_exact, 5e-7)
    grid = []
    for i in range(401):
        tau = 0.05 * i / 400
        g = tail.binomial_sf_float(c, shape.n, float(shape.tail_probability) + tau)
        seen = 0.05 - tau - float(shape.tail_probability) - shape.chi_blind
        f = chi2.ncx2_sf_fast(chi2.critical(5e-7, shape.df), shape.df, (shape.n - c + 1) * seen ** 2 / shape.spread) if seen > 0 else 0
        grid.append(g + (1 - g) * f)
    assert low <= min(grid) and low >= min(grid) - 2e-3


@pytest.mark.parametrize("counts, k, n", [([3, 1, 0], 1, 2000), ([4, 3, 3, 1, 0], 2, 6000), ([5, 5, 4, 4, 0], 1, 5000)])
def test_lf_delta_is_where_lf_power_reaches_the_target(counts, k, n):
    # the detectable deviation and the power agree (the rare tail's case by bisection included)
    m = exactdp.Joint(counts, k, epsilon=4 if counts[0] == 5 else 1)
    shape = certify_design.Design(Groups(m, 30), 5, True, 10**6).shape(n)
    d = least_favourable.lf_delta(shape, 1e-6, 0.99)
    assert 0 < d < 1
    assert least_favourable.lf_power(shape, d, 1e-6)[0] >= 0.99 - 1e-6
    assert least_favourable.lf_power(shape, d * (1 - 1e-3), 1e-6)[0] < 0.99


def test_n_needed_is_none_at_once_when_no_n_can_see_delta(monkeypatch):
    # within=False leaves the uniformity of Joint([3, 3, 3, 0, 0], 2)'s levels untested: no search
    m = exactdp.Joint([3, 3, 3, 0, 0], 2, epsilon=1)
    design = certify_design.Design(Groups(m, 30), 5, False, 10**6)
    calls = []
    monkeypatch.setattr(least_favourable, "lf_power", lambda *a, **kw: calls.append(a) or (0.0, 0.0))
    assert least_favourable.n_needed(design, 0.05, 1e-6, 0.99, 10**9) is None and calls == []
    full = certify_design.Design(Groups(m, 30), 5, True, 10**6)
    monkeypatch.undo()
    n = least_favourable.n_needed(full, 0.05, 1e-6, 0.99, 10**9)
    assert least_favourable.lf_power(full.shape(n), 0.05, 1e-6)[0] >= 0.99
    assert least_favourable.lf_power(full.shape(n - max(1, n // 100) - 1), 0.05, 1e-6)[0] < 0.99
